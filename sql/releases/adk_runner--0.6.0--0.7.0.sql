-- adk_runner 0.6.0 -> 0.7.0: ALTER EXTENSION adk_runner UPDATE TO '0.7.0'.
-- Every change to the SQL surface since release 0.6.0, in the order the
-- full install script (sql/install/) makes it.  test/t/024_upgrade.pl
-- checks that a 0.6.0 schema updated with this script equals a fresh
-- 0.7.0 install (docs/releasing.md).

\echo Use "ALTER EXTENSION adk_runner UPDATE" to load this file. \quit

-- #25 part 5: adk.run_states holds a row per node activation of every
-- invocation (not only those that paused), with the node's attempt; a
-- single_turn node's row carries its input (sql/install/62_hitl.sql,
-- 87_runner_statements.sql).
ALTER TABLE adk.run_states ADD COLUMN attempt integer NOT NULL DEFAULT 1;
COMMENT ON TABLE adk.run_states IS
    'Workflow RunState per node activation of every invocation: status, pending interrupt_ids, answered_ids, input, output, attempt; derived from adk.events but attempt (adk_rebuild_run_states)';
COMMENT ON COLUMN adk.run_states.input IS 'the node''s input: the root''s user message content, a task''s or a single_turn node''s delegating call arguments';
COMMENT ON COLUMN adk.run_states.attempt IS 'how many times this node activation was started: 1, plus one for each retry of its queued run that ran the node again; a resume after a human''s answer is not a new attempt';

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
REVOKE ALL ON FUNCTION adk._node_input(text, text, text, text, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION adk._derive_run_states(p_app text, p_user text, p_session text,
                                       p_invocation text DEFAULT NULL,
                                       p_new jsonb DEFAULT NULL)
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
        SELECT ev.invocation_id, ev.path, ev.seq, lr.ord, lr.id
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
        SELECT c.invocation_id, c.path, c.seq, c.ord, c.id,
               (SELECT a.ts FROM answers a
                 WHERE a.id = c.id AND a.seq > c.seq
                 ORDER BY a.seq LIMIT 1) AS answered_at
          FROM calls c
    ), nodes AS (
        -- every node activation
        SELECT DISTINCT ev.invocation_id, ev.path
          FROM ev
         WHERE ev.path IS NOT NULL
    ), held AS (
        -- the interrupts of a node and of the nodes below it
        SELECT n.invocation_id, n.path,
               coalesce(array_agg(i.id ORDER BY i.seq, i.ord)
                        FILTER (WHERE i.id IS NOT NULL AND i.answered_at IS NULL), '{}') AS pending,
               coalesce(array_agg(i.id ORDER BY i.seq, i.ord) FILTER (WHERE i.answered_at IS NOT NULL),
                        '{}') AS answered,
               max(i.answered_at) AS last_answer
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
           n.pending, n.answered, last.author,
           greatest(last.ts, n.last_answer),
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
           1
      FROM held n
     CROSS JOIN LATERAL (SELECT ev.d, ev.ts, ev.author FROM ev
                          WHERE ev.invocation_id = n.invocation_id AND ev.path = n.path
                            AND ev.author <> 'user'
                          ORDER BY ev.seq DESC LIMIT 1) last
      LEFT JOIN LATERAL (SELECT ev.d FROM ev
                          WHERE ev.invocation_id = n.invocation_id
                            AND ev.d #> '{node_info,output_for}' ? n.path
                          ORDER BY ev.seq DESC LIMIT 1) fin ON true;
END
$$;

CREATE OR REPLACE FUNCTION adk._refresh_run_states(p_app text, p_user text, p_session text,
                                        p_invocation text DEFAULT NULL,
                                        p_new jsonb DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    -- statements Citus can route to the session's shard: the derived rows
    -- are read once, then the table is brought to them
    d adk.run_states[] := ARRAY(SELECT x FROM adk._derive_run_states(p_app, p_user, p_session,
                                                                     p_invocation, p_new) x);
    x adk.run_states;
BEGIN
    DELETE FROM adk.run_states r
     WHERE r.app_name = p_app AND r.user_id = p_user AND r.session_id = p_session
       AND (p_invocation IS NULL OR r.invocation_id = p_invocation)
       AND NOT EXISTS (SELECT 1 FROM unnest(d) k
                        WHERE k.invocation_id = r.invocation_id AND k.node_path = r.node_path);
    FOREACH x IN ARRAY d LOOP
        INSERT INTO adk.run_states AS r
        VALUES (x.app_name, x.user_id, x.session_id, x.invocation_id, x.node_path, x.status,
                x.interrupt_ids, x.answered_ids, x.agent, x.updated_at, x.input, x.output, x.attempt)
        ON CONFLICT (app_name, user_id, session_id, invocation_id, node_path) DO UPDATE
           SET status = EXCLUDED.status, interrupt_ids = EXCLUDED.interrupt_ids,
               answered_ids = EXCLUDED.answered_ids, agent = EXCLUDED.agent,
               updated_at = EXCLUDED.updated_at, input = EXCLUDED.input, output = EXCLUDED.output
         WHERE (r.status, r.interrupt_ids, r.answered_ids, r.agent, r.updated_at, r.input, r.output)
               IS DISTINCT FROM
               (EXCLUDED.status, EXCLUDED.interrupt_ids, EXCLUDED.answered_ids, EXCLUDED.agent,
                EXCLUDED.updated_at, EXCLUDED.input, EXCLUDED.output);
    END LOOP;
    RETURN coalesce((SELECT sum(cardinality(k.interrupt_ids)) FROM unnest(d) k), 0)::integer;
END
$$;

CREATE FUNCTION adk._node_start(p_app text, p_user text, p_session text, p_invocation text,
                                p_path text, p_agent text, p_input jsonb, p_retry boolean)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    INSERT INTO adk.run_states AS r
           (app_name, user_id, session_id, invocation_id, node_path, status, agent, input)
    VALUES (p_app, p_user, p_session, p_invocation, p_path, 'running', p_agent,
            CASE WHEN strpos(p_path, '@') = 0 THEN p_input
                 ELSE adk._node_input(p_app, p_user, p_session, p_invocation, p_path) END)
    ON CONFLICT (app_name, user_id, session_id, invocation_id, node_path) DO UPDATE
       SET status = 'running', attempt = r.attempt + 1, updated_at = EXCLUDED.updated_at
     WHERE p_retry;
END
$$;
REVOKE ALL ON FUNCTION adk._node_start(text, text, text, text, text, text, jsonb, boolean) FROM PUBLIC;

CREATE OR REPLACE FUNCTION adk._rebuild_run_states(app_name text, user_id text, session_id text)
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

DROP FUNCTION adk._invocation_end(text, text, integer, bigint, bigint, text, text, double precision);
CREATE FUNCTION adk._invocation_end(p_invocation text, p_status text, p_model_calls integer,
                                    p_input_tokens bigint, p_output_tokens bigint,
                                    p_error_code text, p_error_message text,
                                    p_store_ms double precision,
                                    p_paths text[], p_agents text[], p_times timestamptz[],
                                    p_errors text[], p_input jsonb, p_fresh boolean)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_paths IS NULL THEN
        UPDATE adk.invocations i
           SET status = p_status, ended_at = clock_timestamp(),
               model_calls = i.model_calls + p_model_calls,
               input_tokens = i.input_tokens + p_input_tokens,
               output_tokens = i.output_tokens + p_output_tokens,
               error_code = p_error_code, error_message = p_error_message,
               store_ms = i.store_ms + p_store_ms
         WHERE i.invocation_id = p_invocation;
        UPDATE adk.jobs j
           SET status = p_status,
               finished_at = CASE WHEN p_status = 'waiting' THEN NULL ELSE clock_timestamp() END,
               error = CASE WHEN p_status = 'failed' THEN concat_ws(': ', p_error_code, p_error_message) END
         WHERE j.invocation_id = p_invocation AND j.status = 'waiting';
    ELSIF p_fresh AND cardinality(p_paths) = 1 THEN
        -- one statement: the invocation's row, and its node's new row
        -- (a plain turn: no array to unnest)
        WITH i AS (
            UPDATE adk.invocations i
               SET status = p_status, ended_at = clock_timestamp(),
                   model_calls = i.model_calls + p_model_calls,
                   input_tokens = i.input_tokens + p_input_tokens,
                   output_tokens = i.output_tokens + p_output_tokens,
                   error_code = p_error_code, error_message = p_error_message,
                   store_ms = i.store_ms + p_store_ms
             WHERE i.invocation_id = p_invocation
            RETURNING i.app_name, i.user_id, i.session_id
        )
        INSERT INTO adk.run_states
               (app_name, user_id, session_id, invocation_id, node_path, status, agent, updated_at, input)
        SELECT i.app_name, i.user_id, i.session_id, p_invocation, p_paths[1],
               CASE WHEN p_errors[1] = 'CANCELLED' THEN 'cancelled'
                    WHEN p_errors[1] <> '' THEN 'failed'
                    WHEN strpos(p_paths[1], '/') > 0 THEN 'running'
                    ELSE 'completed' END,
               p_agents[1], p_times[1], CASE WHEN strpos(p_paths[1], '@') = 0 THEN p_input END
          FROM i;
    ELSIF p_fresh THEN
        WITH i AS (
            UPDATE adk.invocations i
               SET status = p_status, ended_at = clock_timestamp(),
                   model_calls = i.model_calls + p_model_calls,
                   input_tokens = i.input_tokens + p_input_tokens,
                   output_tokens = i.output_tokens + p_output_tokens,
                   error_code = p_error_code, error_message = p_error_message,
                   store_ms = i.store_ms + p_store_ms
             WHERE i.invocation_id = p_invocation
            RETURNING i.app_name, i.user_id, i.session_id
        )
        INSERT INTO adk.run_states
               (app_name, user_id, session_id, invocation_id, node_path, status, agent, updated_at, input)
        SELECT i.app_name, i.user_id, i.session_id, p_invocation, x.path,
               CASE WHEN x.err = 'CANCELLED' THEN 'cancelled'
                    WHEN x.err <> '' THEN 'failed'
                    WHEN strpos(x.path, '/') > 0 THEN 'running'
                    ELSE 'completed' END,
               x.agent, x.ts, CASE WHEN strpos(x.path, '@') = 0 THEN p_input END
          FROM i CROSS JOIN unnest(p_paths, p_agents, p_times, p_errors) AS x(path, agent, ts, err);
    ELSE
        WITH i AS (
            UPDATE adk.invocations i
               SET status = p_status, ended_at = clock_timestamp(),
                   model_calls = i.model_calls + p_model_calls,
                   input_tokens = i.input_tokens + p_input_tokens,
                   output_tokens = i.output_tokens + p_output_tokens,
                   error_code = p_error_code, error_message = p_error_message,
                   store_ms = i.store_ms + p_store_ms
             WHERE i.invocation_id = p_invocation
            RETURNING i.app_name, i.user_id, i.session_id
        )
        INSERT INTO adk.run_states AS r
               (app_name, user_id, session_id, invocation_id, node_path, status, agent, updated_at, input)
        SELECT i.app_name, i.user_id, i.session_id, p_invocation, x.path,
               CASE WHEN x.err = 'CANCELLED' THEN 'cancelled'
                    WHEN x.err <> '' THEN 'failed'
                    WHEN strpos(x.path, '/') > 0 THEN 'running'
                    ELSE 'completed' END,
               x.agent, x.ts, CASE WHEN strpos(x.path, '@') = 0 THEN p_input END
          FROM i CROSS JOIN unnest(p_paths, p_agents, p_times, p_errors) AS x(path, agent, ts, err)
        ON CONFLICT (app_name, user_id, session_id, invocation_id, node_path) DO UPDATE
           SET status = CASE WHEN r.status = 'waiting' THEN r.status
                             WHEN r.output IS NOT NULL
                                  OR (r.status = 'completed' AND strpos(r.node_path, '/') > 0)
                             THEN 'completed'
                             ELSE EXCLUDED.status END,
               agent = EXCLUDED.agent, updated_at = EXCLUDED.updated_at,
               input = coalesce(r.input, EXCLUDED.input);
    END IF;
END
$$;
REVOKE ALL ON FUNCTION adk._invocation_end(text, text, integer, bigint, bigint, text, text, double precision, text[], text[], timestamp with time zone[], text[], jsonb, boolean) FROM PUBLIC;

CREATE OR REPLACE FUNCTION adk._job_failed(job_id bigint, new_status text, failure text, code text)
RETURNS void
LANGUAGE sql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
    WITH j AS (
        UPDATE adk.jobs
           SET status = new_status, error = failure,
               finished_at = CASE WHEN new_status OPERATOR(pg_catalog.=) 'queued' THEN NULL
                                  ELSE pg_catalog.clock_timestamp() END,
               worker_pid = CASE WHEN new_status OPERATOR(pg_catalog.=) 'queued' THEN NULL
                                 ELSE worker_pid END
         WHERE id OPERATOR(pg_catalog.=) job_id
        RETURNING invocation_id, app_name, user_id, session_id),
    -- the run's nodes still running end with it, unless it is queued
    -- again (its retry starts them again: 62_hitl.sql, attempt)
    r AS (
        UPDATE adk.run_states s
           SET status = CASE WHEN new_status OPERATOR(pg_catalog.=) 'cancelled' THEN 'cancelled'
                             ELSE 'failed' END
          FROM j
         WHERE new_status OPERATOR(pg_catalog.<>) 'queued'
           AND s.app_name OPERATOR(pg_catalog.=) j.app_name
           AND s.user_id OPERATOR(pg_catalog.=) j.user_id
           AND s.session_id OPERATOR(pg_catalog.=) j.session_id
           AND s.invocation_id OPERATOR(pg_catalog.=) j.invocation_id
           AND s.status OPERATOR(pg_catalog.=) 'running')
    UPDATE adk.invocations i
       SET status = CASE WHEN new_status OPERATOR(pg_catalog.=) 'cancelled' THEN 'cancelled'
                         ELSE 'failed' END,
           ended_at = pg_catalog.clock_timestamp(),
           error_code = code, error_message = failure
      FROM j
     WHERE i.invocation_id OPERATOR(pg_catalog.=) j.invocation_id
       AND i.status OPERATOR(pg_catalog.=) 'running'
$$;
COMMENT ON FUNCTION adk._job_failed(bigint, text, text, text) IS
    'A job worker''s record of a run that raised or was cancelled: the job queued again or ended, its running invocation and its running nodes'' run_states rows failed or cancelled.';

