-- ---------------------------------------------------------------------
-- Human in the loop and RunState (docs/runs.md; seed 000 §四.4.3-§四.4.4).
--
-- A call to a long_running tool, or the adk_request_confirmation call a
-- require_confirmation tool makes first, is an interrupt: its id is in the
-- long_running_tool_ids of the event that made it, and it stays pending
-- until a later user event carries a function_response with that id --
-- in any invocation, from any writer (ADK-JS and ADK Python answer in a
-- new invocation of their own, and decide "answered" by the call id, as
-- we do).
--
-- adk.run_states holds one row per node activation of every invocation
-- (ADK-Go's RunState per node, 000 §四.4.3): node_path is the node's path
-- as node_info writes it (docs/agent-modes.md "Node info": "coordinator",
-- "coordinator/booker@<call id>" for a task, "coordinator/translator@<n>"
-- for a single_turn node; the author for an event another runtime wrote
-- without node_info), so the root coordinator is a node too.
-- interrupt_ids are the pending ids of the calls made in the node or in a
-- node below it (a pause inside a task waits on the task's row and holds
-- its coordinator's: both are 'waiting' with the same ids), answered_ids
-- the answered ones; status 'waiting' while anything is pending,
-- 'completed' once an event names the node in node_info.output_for (a
-- task's finish_task response, a single_turn node's answer), else what
-- the node's last event says ('failed' for an error event, 'cancelled'
-- for error_code CANCELLED), 'running' for a task or single_turn node no
-- output finished yet (a task still open), 'completed' for the root.
-- input is the node's input (the root's: the content of the invocation's
-- first user event; a task's or a single_turn node's: its delegating
-- call's arguments, adk._node_input), output the output that finished it.
--
-- Who writes them, at what cost per turn (docs/runs.md "Where the run
-- stands"): the runner inserts a node's row, 'running', as the node
-- starts (adk._node_start, one INSERT ... ON CONFLICT), and brings the
-- rows of the nodes it ran to what the events say as the invocation ends
-- (adk._invocation_end; a paused or resumed run: adk._refresh_run_states
-- for those rows and the rows above them); in between, the events
-- trigger (src/store/event_trigger.c), which every writer passes,
-- refreshes the rows an event changes (adk._event_appended) in the
-- transaction of the event -- a pause, an answer, a node's output (a
-- task's finish_task response, which marks its row completed in the
-- transaction that appends its coordinator's function response; a graph
-- workflow node's output event).  A refresh names the rows it derives,
-- so its cost is that of those rows, not of every node of the
-- invocation: resuming a paused workflow of 50 nodes costs what one of 2
-- does (test/bench/workflow.sh).  'running' is also what a resume sets,
-- inside its transaction, between the answer and the end of the
-- invocation.
--
-- Every column but attempt derives from adk.events alone
-- (adk._derive_run_states), and adk_rebuild_run_states() writes the same
-- rows again from the events -- a graph workflow node's input excepted,
-- which its start writes and its events do not hold (a rebuild keeps a
-- row's own).  triggered_by, branch and graph_hash are those of the
-- node's latest event: its branch (ADK's Event.branch, which ADK Python
-- and JS write too) and, for a graph workflow's node, the node that
-- triggered it and the graph hash in its custom_metadata.  attempt counts the starts of the node
-- activation: a queued run's retry (its job re-claimed after its worker
-- died or its run raised) that runs the node again adds one in
-- adk._node_start; a resume after a human's answer is not a new attempt.
-- A failed attempt's events rolled back with it, so the events cannot
-- tell: a rebuild keeps the attempt of a row it updates, and a row it
-- creates has 1.  A resume reads its invocation's rows to know
-- where it is -- which node made the call, a task's agent and scope --
-- and does not replay the history (ADK-Go reconstructs the RunState
-- every turn, 000 §四.4.4); only an invocation with no rows at all gets
-- them derived first.
--
-- Resume and exactly-once: see src/runner/hitl.c.  adk_run holds the
-- session row from its start; adk._resume_interrupts also locks the
-- run_states row (SELECT ... FOR UPDATE) and re-checks it, so a second
-- resume of the same interrupt -- under READ COMMITTED, the default --
-- finds it answered and runs as plain input.  (Under REPEATABLE READ or
-- SERIALIZABLE the second one may get a serialization failure instead;
-- retried, it runs as plain input.)
-- ---------------------------------------------------------------------

CREATE TABLE adk.run_states (
    app_name      text NOT NULL,
    user_id       text NOT NULL,
    -- the type of adk.sessions.id, so Citus can colocate the two
    session_id    varchar(191) NOT NULL,
    invocation_id text NOT NULL,
    node_path     text NOT NULL,
    status        text NOT NULL
                  CHECK (status IN ('running', 'waiting', 'completed', 'failed', 'cancelled')),
    interrupt_ids text[] NOT NULL DEFAULT '{}',
    answered_ids  text[] NOT NULL DEFAULT '{}',
    agent         text NOT NULL,
    updated_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    input         jsonb,
    output        jsonb,
    attempt       integer NOT NULL DEFAULT 1,
    triggered_by  text,
    branch        text,
    graph_hash    text,
    CONSTRAINT run_states_pkey PRIMARY KEY (app_name, user_id, session_id, invocation_id, node_path),
    CONSTRAINT run_states_waiting_has_ids
        CHECK (status <> 'waiting' OR cardinality(interrupt_ids) > 0)
);
COMMENT ON TABLE adk.run_states IS
    'Workflow RunState per node activation of every invocation: status, pending interrupt_ids, answered_ids, input, output, attempt; derived from adk.events but attempt (adk_rebuild_run_states)';
COMMENT ON COLUMN adk.run_states.node_path IS 'the node''s path as node_info writes it (coordinator, coordinator/booker@<call id>); the author for an event without node_info';
COMMENT ON COLUMN adk.run_states.interrupt_ids IS 'pending long-running / confirmation call ids of the node and the nodes below it, in call order';
COMMENT ON COLUMN adk.run_states.answered_ids IS 'interrupt ids of the node and the nodes below it the user has answered (in any invocation), in call order';
COMMENT ON COLUMN adk.run_states.input IS 'the node''s input: the root''s user message content, a task''s or a single_turn node''s delegating call arguments';
COMMENT ON COLUMN adk.run_states.output IS 'the output that finished the node (node_info.output_for)';
COMMENT ON COLUMN adk.run_states.attempt IS 'how many times this node activation was started: 1, plus one for each retry of its queued run that ran the node again; a resume after a human''s answer is not a new attempt';
COMMENT ON COLUMN adk.run_states.triggered_by IS 'a graph workflow''s node: the node, or START, whose edge started it (custom_metadata.adk_triggered_by of its events); NULL for other nodes';
COMMENT ON COLUMN adk.run_states.branch IS 'the branch of the node''s latest event (ADK''s Event.branch); NULL for the root''s';
COMMENT ON COLUMN adk.run_states.graph_hash IS 'a graph workflow''s node: the graph hash of its workflow when it ran (custom_metadata.adk_graph_hash of its events), which a resume must find unchanged';

-- The node an event belongs to: node_info's path (a string), else the
-- agent that wrote it (another runtime's event without node_info); NULL
-- for a user's event outside any node.
CREATE FUNCTION adk._node_path(d jsonb)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(CASE WHEN jsonb_typeof(d #> '{node_info,path}') = 'string'
                         THEN d #>> '{node_info,path}' END,
                    nullif(nullif(d ->> 'author', ''), 'user'))
$$;

-- The input of a node below the root (a path with "@"): a task's node
-- "<path>/<agent>@<call id>" ran with its delegating call's arguments; a
-- single_turn node "<path>/<agent>@<n>" with the arguments of the n-th
-- call of <agent> that <path> made in the invocation (its branch counts
-- them from 1: src/runner/single_turn.c), as ADK-Go's node input.  NULL
-- when no such call is stored.
CREATE FUNCTION adk._node_input(p_app text, p_user text, p_session text,
                                p_invocation text, p_path text)
RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    node text := substring(p_path from '[^/]*$');
    tail text := substring(node from '@([^@]*)$');
    found jsonb;
BEGIN
    IF tail IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT p -> 'function_call' -> 'args' INTO found
      FROM adk.live_events e
     CROSS JOIN LATERAL adk._parts(e.event_data -> 'content') p
     WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
       AND e.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
       AND coalesce(e.event_data ->> 'author', 'user') <> 'user'
       AND p #>> '{function_call,id}' = tail
     ORDER BY e.seq LIMIT 1;
    IF found IS NOT NULL OR tail !~ '^[1-9][0-9]{0,8}$' OR strpos(p_path, '/') = 0 THEN
        RETURN found;
    END IF;
    SELECT c.part -> 'function_call' -> 'args' INTO found
      FROM (SELECT p.part, row_number() OVER (ORDER BY e.seq, p.ord) AS n
              FROM adk.live_events e
             CROSS JOIN LATERAL adk._parts(e.event_data -> 'content') WITH ORDINALITY AS p(part, ord)
             WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
               AND e.invocation_id = p_invocation
               AND e.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
               AND coalesce(e.event_data ->> 'author', 'user') <> 'user'
               AND adk._node_path(e.event_data) = left(p_path, length(p_path) - length(node) - 1)
               AND p.part #>> '{function_call,name}' = left(node, length(node) - length(tail) - 1)) c
     WHERE c.n = tail::integer;
    RETURN found;
END
$$;

-- The rows of one invocation (or of every invocation of the session when
-- p_invocation is NULL), computed from the session's live events (not
-- the rewound ones: 12_rewound.sql); p_paths: only the rows of those
-- node paths (what one event changes: adk._refresh_run_states).
-- triggered_by, branch and graph_hash are what the node's latest event
-- says: its branch (ADK's Event.branch), and for a graph workflow's node
-- custom_metadata.adk_triggered_by and adk_graph_hash (workflow.c writes
-- them on each event of the node).
CREATE FUNCTION adk._derive_run_states(p_app text, p_user text, p_session text,
                                       p_invocation text DEFAULT NULL,
                                       p_new jsonb DEFAULT NULL,
                                       p_paths text[] DEFAULT NULL)
RETURNS SETOF adk.run_states
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- PL/pgSQL, not SQL: Citus plans its statements (one session: one shard)
    RETURN QUERY
    -- p_new: {seq, invocation_id, timestamp, event_data} of an event being
    -- inserted (the events trigger runs before its row is visible)
    WITH incoming AS (
        SELECT (p_new ->> 'seq')::bigint AS seq, p_new ->> 'invocation_id' AS invocation_id,
               (p_new ->> 'timestamp')::timestamptz AS ts, p_new -> 'event_data' AS d,
               coalesce(p_new #>> '{event_data,author}', '') AS author,
               adk._node_path(p_new -> 'event_data') AS path
         WHERE p_new IS NOT NULL
           AND p_new #> '{event_data,custom_metadata,adk_appended_by}' IS NULL
           AND NOT EXISTS (SELECT 1 FROM adk.events e
                            WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
                              AND e.seq = (p_new ->> 'seq')::bigint)
    ), ev AS (
        SELECT e.seq, e.invocation_id::text AS invocation_id, e."timestamp" AS ts,
               e.event_data AS d, coalesce(e.event_data ->> 'author', '') AS author,
               adk._node_path(e.event_data) AS path
          FROM adk.live_events e
         WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
           AND (p_invocation IS NULL OR e.invocation_id = p_invocation)
           -- an event a caller appended where it may not speak for the
           -- session (85_tenancy.sql) is never an interrupt or an answer
           AND e.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
        UNION ALL
        SELECT * FROM incoming
         WHERE p_invocation IS NULL OR incoming.invocation_id = p_invocation
    ), calls AS (
        -- every interrupt: an id in long_running_tool_ids of an agent's event
        SELECT ev.invocation_id, ev.path, ev.seq, ev.ts, lr.ord, lr.id
          FROM ev
         CROSS JOIN LATERAL jsonb_array_elements_text(ev.d -> 'long_running_tool_ids')
               WITH ORDINALITY AS lr(id, ord)
         WHERE ev.author <> 'user'
           AND jsonb_typeof(ev.d -> 'long_running_tool_ids') = 'array'
    ), answers AS (
        -- function responses the user sent, in any invocation
        SELECT a.seq, a.ts, p #>> '{function_response,id}' AS id
          FROM (SELECT e.seq, e."timestamp" AS ts, e.event_data AS d
                  FROM adk.live_events e
                 WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
                   AND e.event_data ->> 'author' = 'user'
                   AND e.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
                UNION ALL
                SELECT incoming.seq, incoming.ts, incoming.d FROM incoming
                 WHERE incoming.author = 'user') a
         CROSS JOIN LATERAL adk._parts(a.d -> 'content') p
         WHERE p ? 'function_response'
    ), interrupts AS (
        -- a call no answer came for before an error event CANCELLED of
        -- its invocation (adk_cancel of a paused run, 63_cancel_waiting.sql)
        -- is no longer pending
        SELECT c.invocation_id, c.path, c.seq, c.ts, c.ord, c.id, a.answered_at,
               a.answered_at IS NULL
               AND EXISTS (SELECT 1 FROM ev k
                            WHERE k.invocation_id = c.invocation_id AND k.seq > c.seq
                              AND k.author <> 'user' AND k.d ->> 'error_code' = 'CANCELLED') AS cancelled
          FROM calls c
         CROSS JOIN LATERAL (SELECT (SELECT a.ts FROM answers a
                                      WHERE a.id = c.id AND a.seq > c.seq
                                      ORDER BY a.seq LIMIT 1) AS answered_at) a
    ), nodes AS (
        -- every node activation: each path of an event, and each node
        -- above an interrupt's ("<...>/<node>@<n>/..."): a nested graph
        -- workflow's node waits while a node of its workflow does, with
        -- no event of its own until it ends (docs/workflows.md "Statuses")
        SELECT DISTINCT x.invocation_id, x.path
          FROM (SELECT ev.invocation_id, ev.path FROM ev
                 WHERE ev.path IS NOT NULL
                UNION ALL
                SELECT i.invocation_id, array_to_string((string_to_array(i.path, '/'))[1:k.k], '/')
                  FROM interrupts i
                 CROSS JOIN LATERAL generate_series(1, cardinality(string_to_array(i.path, '/')) - 1) k(k)
                 WHERE (string_to_array(i.path, '/'))[k.k] ~ '@[0-9]+$') x
         WHERE p_paths IS NULL OR x.path = ANY (p_paths)
    ), held AS (
        -- the interrupts of a node and of the nodes below it
        SELECT n.invocation_id, n.path,
               coalesce(array_agg(i.id ORDER BY i.seq, i.ord)
                        FILTER (WHERE i.id IS NOT NULL AND i.answered_at IS NULL
                                AND NOT i.cancelled), '{}') AS pending,
               coalesce(array_agg(i.id ORDER BY i.seq, i.ord) FILTER (WHERE i.answered_at IS NOT NULL),
                        '{}') AS answered,
               max(i.answered_at) AS last_answer, max(i.ts) AS last_call
          FROM nodes n
          LEFT JOIN interrupts i
                 ON i.invocation_id = n.invocation_id
                AND (i.path = n.path OR starts_with(i.path, n.path || '/'))
         GROUP BY n.invocation_id, n.path
    )
    SELECT p_app, p_user, p_session::varchar(191), n.invocation_id, n.path,
           CASE WHEN cardinality(n.pending) > 0 THEN 'waiting'
                WHEN fin.d IS NOT NULL THEN 'completed'
                WHEN last.d ->> 'error_code' = 'CANCELLED' THEN 'cancelled'
                WHEN last.d ->> 'error_code' IS NOT NULL THEN 'failed'
                WHEN strpos(n.path, '/') > 0 THEN 'running'
                ELSE 'completed' END,
           n.pending, n.answered,
           -- a node with no event of its own: its workflow's, as it started
           coalesce(last.author, substring(n.path from '([^/]*)/[^/]*$')),
           coalesce(greatest(last.ts, n.last_answer), greatest(n.last_call, n.last_answer)),
           CASE WHEN strpos(n.path, '@') = 0 THEN
                (SELECT ev.d -> 'content' FROM ev
                  WHERE ev.invocation_id = n.invocation_id AND ev.author = 'user'
                  ORDER BY ev.seq LIMIT 1)
           ELSE
                -- a task's or a single_turn node's delegating call
                adk._node_input(p_app, p_user, p_session, n.invocation_id, n.path)
           END,
           CASE WHEN fin.d #>> '{node_info,message_as_output}' = 'true' THEN fin.d -> 'content'
                ELSE fin.d -> 'output' END,
           -- not in the events: adk._refresh_run_states keeps a row's own
           1,
           last.d #>> '{custom_metadata,adk_triggered_by}',
           last.d ->> 'branch',
           last.d #>> '{custom_metadata,adk_graph_hash}'
      FROM held n
      LEFT JOIN LATERAL (SELECT ev.d, ev.ts, ev.author FROM ev
                          WHERE ev.invocation_id = n.invocation_id AND ev.path = n.path
                            AND ev.author <> 'user'
                          ORDER BY ev.seq DESC LIMIT 1) last ON true
      LEFT JOIN LATERAL (SELECT ev.d FROM ev
                          WHERE ev.invocation_id = n.invocation_id
                            AND ev.d #> '{node_info,output_for}' ? n.path
                          ORDER BY ev.seq DESC LIMIT 1) fin ON true;
END
$$;

-- Make adk.run_states say what the events say, for one invocation (or the
-- whole session when p_invocation is NULL): rows that changed are updated
-- in place (so a concurrent SELECT ... FOR UPDATE re-checks the new
-- version) and keep their attempt, rows that no longer derive are
-- deleted; a row's input the events do not give (a graph workflow's
-- node: its start wrote it) is kept.  p_paths: only the rows of those
-- node paths and of the nodes above them (each "/"-prefix), which is what
-- one event, or one resumed run, changes; a graph workflow node's row
-- above them that derives from no event of its own stays (a nested
-- workflow node running, whose events are its nodes' until it ends:
-- docs/workflows.md "Statuses") --
-- the cost of a refresh is then
-- that of the rows it names, not of every node the invocation ran
-- (test/bench/workflow.sh).  Returns the number of interrupts still
-- pending in that scope (with p_paths: in the invocation's rows).
CREATE FUNCTION adk._refresh_run_states(p_app text, p_user text, p_session text,
                                        p_invocation text DEFAULT NULL,
                                        p_new jsonb DEFAULT NULL,
                                        p_paths text[] DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    -- each path and the paths above it: "a/b@1/c@2" -> a, a/b@1, a/b@1/c@2
    paths text[] := CASE WHEN p_paths IS NOT NULL THEN
        ARRAY(SELECT DISTINCT array_to_string((string_to_array(p.path, '/'))[1:k.k], '/')
                FROM unnest(p_paths) p(path)
               CROSS JOIN LATERAL generate_series(1, cardinality(string_to_array(p.path, '/'))) k(k)
               WHERE p.path IS NOT NULL) END;
    -- statements Citus can route to the session's shard: the derived rows
    -- are read once, then the table is brought to them
    d adk.run_states[] := ARRAY(SELECT x FROM adk._derive_run_states(p_app, p_user, p_session,
                                                                     p_invocation, p_new, paths) x);
    x adk.run_states;
BEGIN
    DELETE FROM adk.run_states r
     WHERE r.app_name = p_app AND r.user_id = p_user AND r.session_id = p_session
       AND (p_invocation IS NULL OR r.invocation_id = p_invocation)
       AND (paths IS NULL OR r.node_path = ANY (p_paths)
            OR (r.node_path = ANY (paths) AND r.graph_hash IS NULL))
       AND NOT EXISTS (SELECT 1 FROM unnest(d) k
                        WHERE k.invocation_id = r.invocation_id AND k.node_path = r.node_path)
       -- a graph workflow's node that has no event of its own until it ends
       -- -- a parallel worker whose items wait for human input -- keeps the
       -- row its start wrote while its invocation is paused: no event can
       -- give it again, and the answer completes it from that row
       -- (docs/workflows.md "Parallel workers")
       AND NOT (r.status = 'running' AND r.graph_hash IS NOT NULL
                AND EXISTS (SELECT 1 FROM adk.invocations i
                             WHERE i.app_name = r.app_name AND i.user_id = r.user_id
                               AND i.session_id = r.session_id
                               AND i.invocation_id = r.invocation_id AND i.status = 'waiting'));
    FOREACH x IN ARRAY d LOOP
        INSERT INTO adk.run_states AS r
        VALUES (x.app_name, x.user_id, x.session_id, x.invocation_id, x.node_path, x.status,
                x.interrupt_ids, x.answered_ids, x.agent, x.updated_at, x.input, x.output, x.attempt,
                x.triggered_by, x.branch, x.graph_hash)
        -- a graph workflow's node the events name only from below (a
        -- nested workflow node waiting) keeps the triggered_by, branch and
        -- graph hash its start wrote
        ON CONFLICT (app_name, user_id, session_id, invocation_id, node_path) DO UPDATE
           SET status = EXCLUDED.status, interrupt_ids = EXCLUDED.interrupt_ids,
               answered_ids = EXCLUDED.answered_ids, agent = EXCLUDED.agent,
               updated_at = EXCLUDED.updated_at, input = coalesce(EXCLUDED.input, r.input),
               output = EXCLUDED.output,
               triggered_by = CASE WHEN EXCLUDED.graph_hash IS NULL AND r.graph_hash IS NOT NULL THEN r.triggered_by ELSE EXCLUDED.triggered_by END,
               branch = CASE WHEN EXCLUDED.graph_hash IS NULL AND r.graph_hash IS NOT NULL THEN r.branch ELSE EXCLUDED.branch END,
               graph_hash = CASE WHEN EXCLUDED.graph_hash IS NULL AND r.graph_hash IS NOT NULL THEN r.graph_hash ELSE EXCLUDED.graph_hash END
         WHERE (r.status, r.interrupt_ids, r.answered_ids, r.agent, r.updated_at, r.input, r.output,
                r.triggered_by, r.branch, r.graph_hash)
               IS DISTINCT FROM
               (EXCLUDED.status, EXCLUDED.interrupt_ids, EXCLUDED.answered_ids, EXCLUDED.agent,
                EXCLUDED.updated_at, coalesce(EXCLUDED.input, r.input), EXCLUDED.output,
                CASE WHEN EXCLUDED.graph_hash IS NULL AND r.graph_hash IS NOT NULL THEN r.triggered_by ELSE EXCLUDED.triggered_by END,
                CASE WHEN EXCLUDED.graph_hash IS NULL AND r.graph_hash IS NOT NULL THEN r.branch ELSE EXCLUDED.branch END,
                CASE WHEN EXCLUDED.graph_hash IS NULL AND r.graph_hash IS NOT NULL THEN r.graph_hash ELSE EXCLUDED.graph_hash END);
    END LOOP;
    IF paths IS NOT NULL THEN
        RETURN coalesce((SELECT sum(cardinality(r.interrupt_ids)) FROM adk.run_states r
                          WHERE r.app_name = p_app AND r.user_id = p_user AND r.session_id = p_session
                            AND (p_invocation IS NULL OR r.invocation_id = p_invocation)), 0)::integer;
    END IF;
    RETURN coalesce((SELECT sum(cardinality(k.interrupt_ids)) FROM unnest(d) k), 0)::integer;
END
$$;

-- A node starts (src/runner/run_states.c): its row, 'running', with its
-- input -- p_input when given (a graph workflow's node: workflow.c), else
-- the root's is the user's message the runner holds, a task's or
-- a single_turn node's is its delegating call's arguments (stored just
-- before, in this transaction).  The row is there already when the node
-- goes on: a resume after a human's answer leaves it as it is (the same
-- attempt: _resume_interrupts has set its status), a queued run's retry
-- (p_retry) starts it again -- one more attempt, running.  A graph
-- workflow's node also gets its triggered_by, branch and graph hash
-- (workflow.c), which its events carry too.  One statement per node: this
-- is paid on every turn.
CREATE FUNCTION adk._node_start(p_app text, p_user text, p_session text, p_invocation text,
                                p_path text, p_agent text, p_input jsonb, p_retry boolean,
                                p_triggered_by text DEFAULT NULL, p_branch text DEFAULT NULL,
                                p_graph_hash text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    INSERT INTO adk.run_states AS r
           (app_name, user_id, session_id, invocation_id, node_path, status, agent, input,
            triggered_by, branch, graph_hash)
    VALUES (p_app, p_user, p_session, p_invocation, p_path, 'running', p_agent,
            CASE WHEN p_input IS NOT NULL OR strpos(p_path, '@') = 0 THEN p_input
                 ELSE adk._node_input(p_app, p_user, p_session, p_invocation, p_path) END,
            p_triggered_by, p_branch, p_graph_hash)
    ON CONFLICT (app_name, user_id, session_id, invocation_id, node_path) DO UPDATE
       SET status = 'running', attempt = r.attempt + 1, updated_at = EXCLUDED.updated_at
     WHERE p_retry;
END
$$;

-- The resume check of adk_run (000 §四.4.4 buildResumeResponses), for a
-- message holding function responses p_ids and the invocation that made
-- the calls: lock the invocation's rows that have any of p_ids pending
-- (SELECT ... FOR UPDATE: a second resume of the same interrupt waits
-- here, then finds it answered), mark those ids answered and return them
-- with the call each answers (name, args, the agent that made it), the
-- number of ids that node still waits for, the node's path (where the
-- run resumes: a task's row names its agent and scope), and, for an
-- adk_request_confirmation call, the original function call it asks about
-- as found in the history.  No rows: nothing pending matched, the
-- message is plain input.  The rows are read as the append path keeps
-- them; only an invocation that has none (its rows deleted, or written
-- before there were any) gets them derived from its events first.
CREATE FUNCTION adk._resume_interrupts(p_app text, p_user text, p_session text,
                                       p_invocation text, p_ids text[])
RETURNS TABLE (r_call_id text, r_tool text, r_args jsonb, r_agent text, r_original jsonb,
               r_left integer, r_path text)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    st record;
    answered text[];
    remaining text[];
    -- a value, not clock_timestamp() in the UPDATE: Citus refuses
    -- volatile functions in UPDATEs of distributed tables
    now_ts timestamptz := clock_timestamp();
BEGIN
    IF NOT EXISTS (SELECT 1 FROM adk.run_states s
                    WHERE s.app_name = p_app AND s.user_id = p_user AND s.session_id = p_session
                      AND s.invocation_id = p_invocation) THEN
        PERFORM adk._refresh_run_states(p_app, p_user, p_session, p_invocation);
    END IF;
    FOR st IN
        SELECT s.node_path, s.agent, s.interrupt_ids
          FROM adk.run_states s
         WHERE s.app_name = p_app AND s.user_id = p_user AND s.session_id = p_session
           AND s.invocation_id = p_invocation AND s.interrupt_ids && p_ids
         ORDER BY s.node_path
           FOR UPDATE
    LOOP
        answered := ARRAY(SELECT u.id FROM unnest(st.interrupt_ids) WITH ORDINALITY AS u(id, n)
                           WHERE u.id = ANY (p_ids) ORDER BY u.n);
        remaining := ARRAY(SELECT u.id FROM unnest(st.interrupt_ids) WITH ORDINALITY AS u(id, n)
                            WHERE u.id <> ALL (p_ids) ORDER BY u.n);
        UPDATE adk.run_states s
           SET status = CASE WHEN cardinality(remaining) > 0 THEN 'waiting' ELSE 'running' END,
               interrupt_ids = remaining,
               answered_ids = s.answered_ids || answered,
               updated_at = now_ts
         WHERE s.app_name = p_app AND s.user_id = p_user AND s.session_id = p_session
           AND s.invocation_id = p_invocation AND s.node_path = st.node_path;
        RETURN QUERY
        SELECT c.call ->> 'id', c.call ->> 'name', c.call -> 'args', c.author, o.original,
               cardinality(remaining), st.node_path
          FROM (SELECT DISTINCT ON (p #>> '{function_call,id}') p -> 'function_call' AS call,
                       e.event_data ->> 'author' AS author
                  FROM adk.events e
                 CROSS JOIN LATERAL adk._parts(e.event_data -> 'content') p
                 WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
                   AND e.invocation_id = p_invocation
                   -- the calls made in this node (a coordinator's row, which
                   -- holds its task's, finds none: the task's row returns them)
                   AND adk._node_path(e.event_data) = st.node_path
                   AND e.event_data ->> 'author' <> 'user'
                   AND e.event_data -> 'long_running_tool_ids' ?| answered
                   AND e.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
                   AND p #>> '{function_call,id}' = ANY (answered)
                 ORDER BY p #>> '{function_call,id}', e.seq DESC) c
          LEFT JOIN LATERAL (
                SELECT p2 -> 'function_call' AS original
                  FROM adk.events e2
                 CROSS JOIN LATERAL adk._parts(e2.event_data -> 'content') p2
                 WHERE c.call ->> 'name' = 'adk_request_confirmation'
                   AND e2.app_name = p_app AND e2.user_id = p_user AND e2.session_id = p_session
                   AND e2.invocation_id = p_invocation
                   AND e2.event_data ->> 'author' = c.author
                   AND p2 #>> '{function_call,id}' = c.call #>> '{args,originalFunctionCall,id}'
                   AND p2 #>> '{function_call,name}' <> 'adk_request_confirmation'
                   AND e2.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
                 ORDER BY e2.seq DESC LIMIT 1) o ON true
         ORDER BY array_position(answered, c.call ->> 'id');
    END LOOP;
END
$$;

-- The append path (src/store/event_trigger.c, for every writer): the run
-- states an event changes, refreshed in its transaction.  p_new is
-- {seq, invocation_id, timestamp, event_data} of the event, which the
-- trigger may call this for before the row is visible.  An agent's event
-- with long_running_tool_ids: its node's row and the rows above it, which
-- hold its interrupts.  A user's function responses: the rows of every
-- invocation that waits on one of those ids.  An event that finishes a
-- node (node_info.output_for) in an invocation that has rows: the rows of
-- the nodes it names and of its own node (and the rows above them), not
-- every row of the invocation -- a workflow of 50 nodes pays for one node
-- per event, as one of 2 does (test/bench/workflow.sh).
CREATE FUNCTION adk._event_appended(p_app text, p_user text, p_session text, p_new jsonb)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    d jsonb := p_new -> 'event_data';
    ids text[];
    inv text;
BEGIN
    IF d #> '{node_info,output_for}' IS NOT NULL
       AND EXISTS (SELECT 1 FROM adk.run_states r
                    WHERE r.app_name OPERATOR(pg_catalog.=) p_app
                      AND r.user_id OPERATOR(pg_catalog.=) p_user
                      AND r.session_id OPERATOR(pg_catalog.=) p_session
                      AND r.invocation_id OPERATOR(pg_catalog.=) (p_new ->> 'invocation_id')) THEN
        PERFORM adk._refresh_run_states(p_app, p_user, p_session, p_new ->> 'invocation_id', p_new,
                    ARRAY(SELECT f FROM pg_catalog.jsonb_array_elements_text(
                                          CASE WHEN pg_catalog.jsonb_typeof(d #> '{node_info,output_for}')
                                                    OPERATOR(pg_catalog.=) 'array'
                                               THEN d #> '{node_info,output_for}' ELSE '[]' END) f)
                    OPERATOR(pg_catalog.||) adk._node_path(d));
    END IF;
    IF coalesce(d ->> 'author', '') OPERATOR(pg_catalog.<>) 'user'
       AND pg_catalog.jsonb_typeof(d -> 'long_running_tool_ids') OPERATOR(pg_catalog.=) 'array'
       AND pg_catalog.jsonb_array_length(d -> 'long_running_tool_ids') OPERATOR(pg_catalog.>) 0 THEN
        PERFORM adk._refresh_run_states(p_app, p_user, p_session, p_new ->> 'invocation_id', p_new,
                                        ARRAY[adk._node_path(d)]);
    END IF;
    IF d ->> 'author' OPERATOR(pg_catalog.=) 'user' THEN
        ids := ARRAY(SELECT p #>> '{function_response,id}' FROM adk._parts(d -> 'content') p
                      WHERE p #>> '{function_response,id}' IS NOT NULL);
        IF pg_catalog.cardinality(ids) OPERATOR(pg_catalog.>) 0 THEN
            FOR inv IN
                SELECT DISTINCT r.invocation_id FROM adk.run_states r
                 WHERE r.app_name OPERATOR(pg_catalog.=) p_app AND r.user_id OPERATOR(pg_catalog.=) p_user
                   AND r.session_id OPERATOR(pg_catalog.=) p_session
                   AND r.interrupt_ids OPERATOR(pg_catalog.&&) ids
            LOOP
                -- answered from outside that invocation (another runtime's
                -- own invocation): it no longer waits
                IF adk._refresh_run_states(p_app, p_user, p_session, inv, p_new) OPERATOR(pg_catalog.=) 0
                   AND inv IS DISTINCT FROM p_new ->> 'invocation_id' THEN
                    UPDATE adk.invocations i SET status = 'completed'
                     WHERE i.invocation_id OPERATOR(pg_catalog.=) inv
                       AND i.status OPERATOR(pg_catalog.=) 'waiting';
                END IF;
            END LOOP;
        END IF;
    END IF;
END
$$;

-- A message that only repeats answers to confirmations already answered
-- (two clients approving at once, or one approving twice): true when every
-- id in p_ids is an adk_request_confirmation call of the session that a
-- user's response answered already.  adk_run then runs nothing.
CREATE FUNCTION adk._repeated_confirmation(p_app text, p_user text, p_session text, p_ids text[])
RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT pg_catalog.cardinality(p_ids) OPERATOR(pg_catalog.>) 0
       AND NOT EXISTS (
           SELECT 1 FROM pg_catalog.unnest(p_ids) u(id)
            WHERE NOT EXISTS (
                  SELECT 1 FROM adk.live_events e
                   CROSS JOIN LATERAL adk._parts(e.event_data -> 'content') p
                   WHERE e.app_name OPERATOR(pg_catalog.=) p_app AND e.user_id OPERATOR(pg_catalog.=) p_user
                     AND e.session_id OPERATOR(pg_catalog.=) p_session
                     AND e.event_data -> 'long_running_tool_ids' OPERATOR(pg_catalog.?) u.id
                     AND e.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
                     AND p #>> '{function_call,id}' OPERATOR(pg_catalog.=) u.id
                     AND p #>> '{function_call,name}' OPERATOR(pg_catalog.=) 'adk_request_confirmation'
                     AND EXISTS (
                         SELECT 1 FROM adk.live_events a
                          CROSS JOIN LATERAL adk._parts(a.event_data -> 'content') q
                          WHERE a.app_name OPERATOR(pg_catalog.=) p_app AND a.user_id OPERATOR(pg_catalog.=) p_user
                            AND a.session_id OPERATOR(pg_catalog.=) p_session
                            AND a.seq OPERATOR(pg_catalog.>) e.seq
                            AND a.event_data ->> 'author' OPERATOR(pg_catalog.=) 'user'
                            AND a.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
                            AND q #>> '{function_response,id}' OPERATOR(pg_catalog.=) u.id)))
$$;

-- adk_rebuild_run_states(): adk.run_states again from adk.events alone, for
-- one session, one user's or one app's sessions, or all of them.  Each
-- session's row is locked first (as adk_run does), so a rebuild never
-- interleaves with a run of that session.  Returns the number of rows the
-- scope has afterwards.  The body, adk._rebuild_run_states, runs as the
-- owner of schema adk once adk_rebuild_run_states (85_tenancy.sql) has
-- checked the scope against the caller's tenancy; called directly it runs
-- as the caller, who may not write the store.
CREATE FUNCTION adk._rebuild_run_states(app_name text, user_id text, session_id text)
RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    s record;
    n bigint := 0;
BEGIN
    FOR s IN
        SELECT x.app_name, x.user_id, x.session_id
          FROM (SELECT e.app_name::text, e.user_id::text, e.session_id::text
                  FROM adk.events e
                 WHERE ($1 IS NULL OR e.app_name = $1)
                   AND ($2 IS NULL OR e.user_id = $2)
                   AND ($3 IS NULL OR e.session_id = $3)
                UNION
                SELECT r.app_name, r.user_id, r.session_id
                  FROM adk.run_states r
                 WHERE ($1 IS NULL OR r.app_name = $1)
                   AND ($2 IS NULL OR r.user_id = $2)
                   AND ($3 IS NULL OR r.session_id = $3)) x
         ORDER BY 1, 2, 3
    LOOP
        PERFORM 1 FROM adk.sessions ss
         WHERE ss.app_name = s.app_name AND ss.user_id = s.user_id AND ss.id = s.session_id
           FOR UPDATE;
        PERFORM adk._refresh_run_states(s.app_name, s.user_id, s.session_id, NULL);
        n := n + (SELECT count(*) FROM adk.run_states r
                   WHERE r.app_name = s.app_name AND r.user_id = s.user_id
                     AND r.session_id = s.session_id);
    END LOOP;
    RETURN n;
END
$$;

-- What every session is waiting on: one row per pending interrupt, with
-- the call (tool, args) and when it was made -- an approval UI is one
-- SELECT.  For a tool that asks for confirmation the call is
-- adk_request_confirmation and args.originalFunctionCall is the call that
-- waits for the answer.
CREATE VIEW adk.pending_interrupts AS
SELECT r.app_name, r.user_id, r.session_id, r.invocation_id, i.call_id,
       c.call ->> 'name' AS tool, c.call -> 'args' AS args, c.since, r.agent
  FROM adk.run_states r
 CROSS JOIN LATERAL unnest(r.interrupt_ids) WITH ORDINALITY AS i(call_id, ord)
  LEFT JOIN LATERAL (
        SELECT p -> 'function_call' AS call, e."timestamp" AS since
          FROM adk.events e
         CROSS JOIN LATERAL adk._parts(e.event_data -> 'content') p
         WHERE e.app_name = r.app_name AND e.user_id = r.user_id AND e.session_id = r.session_id
           AND e.invocation_id = r.invocation_id
           AND e.event_data -> 'long_running_tool_ids' ? i.call_id
           AND e.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
           AND p #>> '{function_call,id}' = i.call_id
         ORDER BY e.seq DESC LIMIT 1) c ON true
 -- once, from the node that made the call: not from a coordinator that
 -- holds it for its task
 WHERE NOT EXISTS (
       SELECT 1 FROM adk.run_states b
        WHERE b.app_name = r.app_name AND b.user_id = r.user_id AND b.session_id = r.session_id
          AND b.invocation_id = r.invocation_id AND starts_with(b.node_path, r.node_path || '/')
          AND i.call_id = ANY (b.interrupt_ids));
COMMENT ON VIEW adk.pending_interrupts IS
    'Pending interrupts of every session: the call (tool, args) each waits on, since when, by which agent and invocation.';

-- The requests for input (adk_request_input: a graph workflow's node
-- asking a person, docs/workflows.md "Human input") the session waits on:
-- how many, and the call id of one of them.  A plain-text message is the
-- answer when there is exactly one (src/runner/hitl.c).
CREATE FUNCTION adk._pending_input_requests(p_app text, p_user text, p_session text)
RETURNS TABLE (r_call_id text, r_count integer)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT min(p.call_id), count(*)::integer
      FROM adk.pending_interrupts p
     WHERE p.app_name = p_app AND p.user_id = p_user AND p.session_id = p_session
       AND p.tool = 'adk_request_input';
END
$$;

-- A session's run states go with it, whoever deletes it.
CREATE FUNCTION adk._sessions_delete_run_states() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    DELETE FROM adk.run_states r
     WHERE r.app_name = OLD.app_name AND r.user_id = OLD.user_id AND r.session_id = OLD.id;
    RETURN OLD;
END
$$;
CREATE TRIGGER adk_sessions_delete_run_states
    AFTER DELETE ON adk.sessions
    FOR EACH ROW EXECUTE FUNCTION adk._sessions_delete_run_states();

GRANT SELECT ON adk.run_states, adk.pending_interrupts TO adk_user;
-- Not marked for pg_dump: the rows derive from adk.events, which is.
-- After a restore, SELECT adk_rebuild_run_states(); as an admin (a resume derives the
-- rows of its own invocation anyway).
