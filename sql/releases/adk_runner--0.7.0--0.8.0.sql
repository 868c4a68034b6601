-- adk_runner 0.7.0 -> 0.8.0: ALTER EXTENSION adk_runner UPDATE TO '0.8.0'.
-- Every change to the SQL surface since release 0.7.0, in the order the
-- full install script (sql/install/) makes it.  test/t/024_upgrade.pl
-- checks that a 0.7.0 schema updated with this script equals a fresh
-- 0.8.0 install (docs/releasing.md).

\echo Use "ALTER EXTENSION adk_runner UPDATE" to load this file. \quit

-- adk.run_states: triggered_by, branch and graph_hash of a workflow's
-- node; a refresh of the rows one event changes, not of the invocation's
-- every row; a plain text answers the one pending request for input
-- (docs/workflows.md "Human input", "RunState").
ALTER TABLE adk.run_states ADD COLUMN triggered_by text;
ALTER TABLE adk.run_states ADD COLUMN branch text;
ALTER TABLE adk.run_states ADD COLUMN graph_hash text;
COMMENT ON COLUMN adk.run_states.triggered_by IS 'a graph workflow''s node: the node, or START, whose edge started it (custom_metadata.adk_triggered_by of its events); NULL for other nodes';
COMMENT ON COLUMN adk.run_states.branch IS 'the branch of the node''s latest event (ADK''s Event.branch); NULL for the root''s';
COMMENT ON COLUMN adk.run_states.graph_hash IS 'a graph workflow''s node: the graph hash of its workflow when it ran (custom_metadata.adk_graph_hash of its events), which a resume must find unchanged';

DROP FUNCTION adk._derive_run_states(text, text, text, text, jsonb);
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
           AND (p_paths IS NULL OR ev.path = ANY (p_paths))
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
           1,
           last.d #>> '{custom_metadata,adk_triggered_by}',
           last.d ->> 'branch',
           last.d #>> '{custom_metadata,adk_graph_hash}'
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

REVOKE ALL ON FUNCTION adk._derive_run_states(text, text, text, text, jsonb, text[]) FROM PUBLIC;

DROP FUNCTION adk._refresh_run_states(text, text, text, text, jsonb);
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
       AND (paths IS NULL OR r.node_path = ANY (paths))
       AND NOT EXISTS (SELECT 1 FROM unnest(d) k
                        WHERE k.invocation_id = r.invocation_id AND k.node_path = r.node_path);
    FOREACH x IN ARRAY d LOOP
        INSERT INTO adk.run_states AS r
        VALUES (x.app_name, x.user_id, x.session_id, x.invocation_id, x.node_path, x.status,
                x.interrupt_ids, x.answered_ids, x.agent, x.updated_at, x.input, x.output, x.attempt,
                x.triggered_by, x.branch, x.graph_hash)
        ON CONFLICT (app_name, user_id, session_id, invocation_id, node_path) DO UPDATE
           SET status = EXCLUDED.status, interrupt_ids = EXCLUDED.interrupt_ids,
               answered_ids = EXCLUDED.answered_ids, agent = EXCLUDED.agent,
               updated_at = EXCLUDED.updated_at, input = coalesce(EXCLUDED.input, r.input),
               output = EXCLUDED.output, triggered_by = EXCLUDED.triggered_by,
               branch = EXCLUDED.branch, graph_hash = EXCLUDED.graph_hash
         WHERE (r.status, r.interrupt_ids, r.answered_ids, r.agent, r.updated_at, r.input, r.output,
                r.triggered_by, r.branch, r.graph_hash)
               IS DISTINCT FROM
               (EXCLUDED.status, EXCLUDED.interrupt_ids, EXCLUDED.answered_ids, EXCLUDED.agent,
                EXCLUDED.updated_at, coalesce(EXCLUDED.input, r.input), EXCLUDED.output,
                EXCLUDED.triggered_by, EXCLUDED.branch, EXCLUDED.graph_hash);
    END LOOP;
    IF paths IS NOT NULL THEN
        RETURN coalesce((SELECT sum(cardinality(r.interrupt_ids)) FROM adk.run_states r
                          WHERE r.app_name = p_app AND r.user_id = p_user AND r.session_id = p_session
                            AND (p_invocation IS NULL OR r.invocation_id = p_invocation)), 0)::integer;
    END IF;
    RETURN coalesce((SELECT sum(cardinality(k.interrupt_ids)) FROM unnest(d) k), 0)::integer;
END
$$;

REVOKE ALL ON FUNCTION adk._refresh_run_states(text, text, text, text, jsonb, text[]) FROM PUBLIC;

DROP FUNCTION adk._node_start(text, text, text, text, text, text, jsonb, boolean);
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

REVOKE ALL ON FUNCTION adk._node_start(text, text, text, text, text, text, jsonb, boolean, text, text, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION adk._event_appended(p_app text, p_user text, p_session text, p_new jsonb)
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

REVOKE ALL ON FUNCTION adk._pending_input_requests(text, text, text) FROM PUBLIC;

DROP FUNCTION adk._invocation_end(text, text, integer, bigint, bigint, text, text, double precision,
                                  text[], text[], timestamptz[], text[], jsonb, boolean);
CREATE FUNCTION adk._invocation_end(p_invocation text, p_status text, p_model_calls integer,
                                    p_input_tokens bigint, p_output_tokens bigint,
                                    p_error_code text, p_error_message text,
                                    p_store_ms double precision,
                                    p_paths text[], p_agents text[], p_times timestamptz[],
                                    p_errors text[], p_input jsonb, p_fresh boolean,
                                    p_branches text[])
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
    ELSIF p_fresh AND cardinality(p_paths) = 1 AND p_branches IS NULL THEN
        -- one statement: the invocation's row, and its node's new row
        -- (a plain turn: no array to unnest, no branch)
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
               (app_name, user_id, session_id, invocation_id, node_path, status, agent, updated_at, input,
                branch)
        SELECT i.app_name, i.user_id, i.session_id, p_invocation, x.path,
               CASE WHEN x.err = 'CANCELLED' THEN 'cancelled'
                    WHEN x.err <> '' THEN 'failed'
                    WHEN strpos(x.path, '/') > 0 THEN 'running'
                    ELSE 'completed' END,
               x.agent, x.ts, CASE WHEN strpos(x.path, '@') = 0 THEN p_input END, x.branch
          FROM i CROSS JOIN unnest(p_paths, p_agents, p_times, p_errors, p_branches)
                            AS x(path, agent, ts, err, branch);
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
               (app_name, user_id, session_id, invocation_id, node_path, status, agent, updated_at, input,
                branch)
        SELECT i.app_name, i.user_id, i.session_id, p_invocation, x.path,
               CASE WHEN x.err = 'CANCELLED' THEN 'cancelled'
                    WHEN x.err <> '' THEN 'failed'
                    WHEN strpos(x.path, '/') > 0 THEN 'running'
                    ELSE 'completed' END,
               x.agent, x.ts, CASE WHEN strpos(x.path, '@') = 0 THEN p_input END, x.branch
          FROM i CROSS JOIN unnest(p_paths, p_agents, p_times, p_errors, p_branches)
                            AS x(path, agent, ts, err, branch)
        ON CONFLICT (app_name, user_id, session_id, invocation_id, node_path) DO UPDATE
           SET status = CASE WHEN r.status = 'waiting' THEN r.status
                             WHEN r.output IS NOT NULL
                                  OR (r.status = 'completed' AND strpos(r.node_path, '/') > 0)
                             THEN 'completed'
                             ELSE EXCLUDED.status END,
               agent = EXCLUDED.agent, updated_at = EXCLUDED.updated_at,
               input = coalesce(r.input, EXCLUDED.input), branch = EXCLUDED.branch;
    END IF;
END
$$;

REVOKE ALL ON FUNCTION adk._invocation_end(text, text, integer, bigint, bigint, text, text, double precision,
                                           text[], text[], timestamptz[], text[], jsonb, boolean, text[]) FROM PUBLIC;

CREATE OR REPLACE VIEW adk.workflow_runs WITH (security_invoker = true) AS
SELECT r.app_name, r.user_id, r.session_id, r.invocation_id, p.workflow, p.node, p.run_id,
       r.node_path, r.status,
       CASE WHEN r.status = 'waiting' THEN r.interrupt_ids END AS waiting_on,
       r.input, r.output, r.updated_at, r.triggered_by, r.branch, r.graph_hash
  FROM adk.run_states r
 CROSS JOIN LATERAL regexp_match(r.node_path, '(?:^|/)([A-Za-z_][A-Za-z0-9_]*)/([A-Za-z_][A-Za-z0-9_-]*)@([^/@]+)$') m
 CROSS JOIN LATERAL (SELECT m[1] AS workflow, m[2] AS node, m[3] AS run_id) p
 WHERE m IS NOT NULL
   AND EXISTS (SELECT 1 FROM adk.workflow_nodes n WHERE n.workflow = p.workflow AND n.name = p.node);
COMMENT ON VIEW adk.workflow_runs IS
    'Node activations of graph workflows (adk.run_states rows with node_path <workflow>/<node>@<run id>): status, the interrupt ids a waiting node waits on, the node (or START) that triggered it, its branch and the graph hash it ran under.';

DROP FUNCTION adk._workflow_resume_rows(text, text, text, text, text);
CREATE FUNCTION adk._workflow_resume_rows(p_app text, p_user text, p_session text,
                                          p_invocation text, p_base text)
RETURNS TABLE (node text, run_no integer, status text, input jsonb, output jsonb,
               branch text, graph_hash text, answers jsonb, last_answer jsonb,
               triggered_by text)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT m[1], m[2]::integer, r.status, r.input, r.output, r.branch, r.graph_hash,
           coalesce(a.answers, '{}'), a.last_answer, r.triggered_by
      FROM adk.run_states r
     CROSS JOIN LATERAL regexp_match(substr(r.node_path, length(p_base) + 2),
                                     '^([A-Za-z_][A-Za-z0-9_-]*)@([0-9]+)$') m
      LEFT JOIN LATERAL (SELECT jsonb_object_agg(x.id, x.response) AS answers,
                                (array_agg(x.response ORDER BY x.seq DESC))[1] AS last_answer
                           FROM (SELECT DISTINCT ON (p #>> '{function_response,id}')
                                        p #>> '{function_response,id}' AS id,
                                        -- {"result": value} is a bare value (ADK unwraps it)
                                        CASE WHEN jsonb_typeof(p #> '{function_response,response}') = 'object'
                                                  AND p #> '{function_response,response}' ? 'result'
                                                  AND (SELECT count(*) FROM jsonb_object_keys(p #> '{function_response,response}')) = 1
                                             THEN p #> '{function_response,response,result}'
                                             ELSE coalesce(p #> '{function_response,response}', '{}') END AS response,
                                        e.seq
                                   FROM adk.events e
                                  CROSS JOIN LATERAL adk._parts(e.event_data -> 'content') p
                                  WHERE cardinality(r.answered_ids) > 0
                                    AND e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
                                    AND e.event_data ->> 'author' = 'user'
                                    AND e.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
                                    AND p #>> '{function_response,id}' = ANY (r.answered_ids)
                                  ORDER BY p #>> '{function_response,id}', e.seq DESC) x) a ON true
     WHERE r.app_name = p_app AND r.user_id = p_user AND r.session_id = p_session
       AND r.invocation_id = p_invocation
       AND starts_with(r.node_path, p_base || '/')
       AND m IS NOT NULL
     ORDER BY m[1], m[2]::integer;
END
$$;

REVOKE ALL ON FUNCTION adk._workflow_resume_rows(text, text, text, text, text) FROM PUBLIC;

-- the new columns of the rows already there, as adk._derive_run_states
-- reads them (the node's latest event): a paused workflow resumes with
-- its branch and graph hash
UPDATE adk.run_states r
   SET branch = l.d ->> 'branch',
       triggered_by = l.d #>> '{custom_metadata,adk_triggered_by}',
       graph_hash = l.d #>> '{custom_metadata,adk_graph_hash}'
  FROM (SELECT DISTINCT ON (e.app_name, e.user_id, e.session_id, e.invocation_id, adk._node_path(e.event_data))
               e.app_name, e.user_id, e.session_id, e.invocation_id,
               adk._node_path(e.event_data) AS path, e.event_data AS d
          FROM adk.live_events e
         WHERE coalesce(e.event_data ->> 'author', 'user') <> 'user'
           AND e.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
         ORDER BY e.app_name, e.user_id, e.session_id, e.invocation_id, adk._node_path(e.event_data),
                  e.seq DESC) l
 WHERE l.app_name = r.app_name AND l.user_id = r.user_id AND l.session_id = r.session_id
   AND l.invocation_id = r.invocation_id AND l.path = r.node_path;

-- Graph workflow node settings run (src/runner/workflow_node.c): function
-- and tool nodes take retry, timeout, schemas and wait_for_output; only
-- other kinds, and retry or timeout on a join, are refused.
COMMENT ON COLUMN adk.workflow_nodes.wait_for_output IS 'an activation that ends without output does not complete: its successors do not run (ADK-Go WaitForOutput)';
COMMENT ON COLUMN adk.workflow_nodes.timeout IS 'bound on one attempt of a function or tool node: its call is cancelled and the attempt fails (retried when the node has a retry); NULL = none';
CREATE OR REPLACE FUNCTION adk._workflow_refusal(wf text) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT format('node "%s" of workflow "%s" %s', n.name, wf,
                  CASE WHEN n.kind NOT IN ('function', 'join', 'tool') THEN format('is of kind %s', n.kind)
                       WHEN n.kind = 'join' AND n.retry IS NOT NULL THEN 'is a join with a retry'
                       WHEN n.kind = 'join' AND n.timeout IS NOT NULL THEN 'is a join with a timeout'
                       ELSE format('runs tool "%s" (long-running or requiring confirmation)', n.tool) END)
      FROM adk.workflow_nodes n
     WHERE n.workflow = wf
       AND (n.kind NOT IN ('function', 'join', 'tool')
            OR (n.kind = 'join' AND (n.retry IS NOT NULL OR n.timeout IS NOT NULL))
            OR EXISTS (SELECT 1 FROM adk.tools t
                        WHERE t.name = n.tool AND (t.require_confirmation OR t.long_running)))
     ORDER BY n.name COLLATE "C"
     LIMIT 1
$$;

-- The settings of a workflow's nodes that act on their activations
-- (src/runner/workflow_node.c, docs/workflows.md "Node settings"): retry
-- (completed with ADK-Go's defaults when the node was written), timeout in
-- whole milliseconds (at least 1), input and output schemas,
-- wait_for_output.  Only the nodes that have any, in name order.
CREATE FUNCTION adk._workflow_node_settings(wf text)
RETURNS TABLE (name text, retry jsonb, timeout_ms integer, input_schema jsonb,
               output_schema jsonb, wait_for_output boolean)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT n.name, n.retry,
           greatest(1, least(ceil(extract(epoch FROM n.timeout) * 1000), 2147483647))::integer,
           n.input_schema, n.output_schema, n.wait_for_output
      FROM adk.workflow_nodes n
     WHERE n.workflow = wf
       AND (n.retry IS NOT NULL OR n.timeout IS NOT NULL OR n.input_schema IS NOT NULL
            OR n.output_schema IS NOT NULL OR n.wait_for_output)
     ORDER BY n.name COLLATE "C"
$$;

-- A node activation's retry starts another attempt (workflow_node.c): its
-- adk.run_states row counts it.
CREATE FUNCTION adk._workflow_node_attempt(p_app text, p_user text, p_session text,
                                           p_invocation text, p_path text)
RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    UPDATE adk.run_states r SET attempt = r.attempt + 1
     WHERE r.app_name = p_app AND r.user_id = p_user AND r.session_id = p_session
       AND r.invocation_id = p_invocation AND r.node_path = p_path
$$;

REVOKE ALL ON FUNCTION adk._workflow_node_settings(text),
                       adk._workflow_node_attempt(text, text, text, text, text)
   FROM PUBLIC;

-- sql/install/89_workflows.sql: agent, nested workflow and parallel worker
-- nodes run (src/runner/workflow.c)
CREATE OR REPLACE FUNCTION adk._workflow_refusal(wf text) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT format('node "%s" of workflow "%s" %s', n.name, wf,
                  CASE WHEN n.kind NOT IN ('agent', 'function', 'join', 'parallel_worker', 'tool', 'workflow') THEN format('is of kind %s', n.kind)
                       WHEN n.retry IS NOT NULL THEN 'has a retry'
                       WHEN n.timeout IS NOT NULL THEN 'has a timeout'
                       WHEN n.wait_for_output THEN 'has wait_for_output'
                       WHEN n.input_schema IS NOT NULL OR n.output_schema IS NOT NULL THEN 'has an input or output schema'
                       ELSE format('runs tool "%s" (long-running or requiring confirmation)', n.tool) END)
      FROM adk.workflow_nodes n
     WHERE n.workflow = wf
       AND (n.kind NOT IN ('agent', 'function', 'join', 'parallel_worker', 'tool', 'workflow') OR n.retry IS NOT NULL OR n.timeout IS NOT NULL
            OR n.wait_for_output OR n.input_schema IS NOT NULL OR n.output_schema IS NOT NULL
            OR EXISTS (SELECT 1 FROM adk.tools t
                        WHERE t.name = n.tool AND (t.require_confirmation OR t.long_running)))
     ORDER BY n.name COLLATE "C"
     LIMIT 1
$$;

-- The nodes of a workflow as the scheduler needs them: kind, a function
-- node's function as a qualified name to call (a tool node's: its tool's
-- name in adk.tools; an agent node's: its agent; a nested workflow's: its
-- name; a parallel worker's: its worker node), each node's predecessors
-- (what a join waits for), rerun_on_resume, in name order.
CREATE OR REPLACE FUNCTION adk._workflow_plan(wf text)
RETURNS TABLE (name text, kind text, call text, predecessors text[], rerun_on_resume boolean)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT n.name, n.kind,
           coalesce((SELECT format('%I.%I', ns.nspname, p.proname)
                       FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace ns ON ns.oid = p.pronamespace
                      WHERE p.oid = n.function::oid), n.tool, n.agent, n.sub_workflow, n.worker),
           ARRAY(SELECT e.from_node FROM adk.workflow_edges e
                  WHERE e.workflow = wf AND e.to_node = n.name
                  ORDER BY e.from_node COLLATE "C"),
           n.rerun_on_resume
      FROM adk.workflow_nodes n
     WHERE n.workflow = wf
     ORDER BY n.name COLLATE "C"
$$;


-- sql/install/89_workflows.sql: adk._workflow_refusal as both the node
-- settings and the agent, nested workflow and parallel worker nodes leave it
CREATE OR REPLACE FUNCTION adk._workflow_refusal(wf text) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT format('node "%s" of workflow "%s" %s', n.name, wf,
                  CASE WHEN n.kind = 'join' AND n.retry IS NOT NULL THEN 'is a join with a retry'
                       WHEN n.kind = 'join' AND n.timeout IS NOT NULL THEN 'is a join with a timeout'
                       WHEN n.kind IN ('agent', 'parallel_worker', 'workflow') AND n.retry IS NOT NULL
                            THEN format('is of kind %s with a retry', n.kind)
                       WHEN n.kind IN ('agent', 'parallel_worker', 'workflow') AND n.timeout IS NOT NULL
                            THEN format('is of kind %s with a timeout', n.kind)
                       WHEN n.kind IN ('agent', 'parallel_worker', 'workflow') AND n.wait_for_output
                            THEN format('is of kind %s with wait_for_output', n.kind)
                       WHEN n.kind IN ('agent', 'parallel_worker', 'workflow')
                            AND (n.input_schema IS NOT NULL OR n.output_schema IS NOT NULL)
                            THEN format('is of kind %s with an input or output schema', n.kind)
                       ELSE format('runs tool "%s" (long-running or requiring confirmation)', n.tool) END)
      FROM adk.workflow_nodes n
     WHERE n.workflow = wf
       AND ((n.kind = 'join' AND (n.retry IS NOT NULL OR n.timeout IS NOT NULL))
            OR (n.kind IN ('agent', 'parallel_worker', 'workflow')
                AND (n.retry IS NOT NULL OR n.timeout IS NOT NULL OR n.wait_for_output
                     OR n.input_schema IS NOT NULL OR n.output_schema IS NOT NULL))
            OR EXISTS (SELECT 1 FROM adk.tools t
                        WHERE t.name = n.tool AND (t.require_confirmation OR t.long_running)))
     ORDER BY n.name COLLATE "C"
     LIMIT 1
$$;

-- The statements every turn runs, as functions whose bodies the C code
-- runs (sql/install/88_turn_statements.sql).
-- adk_append_event's statement: bump the session row (seq, time at least
-- 1 ms past its last event, update_time, the session-scope delta $5) and
-- insert the event row there, with event_data's "timestamp" the time it
-- got.  $1-$3 app, user, session; $4 the proposed time; $6 event id; $7
-- invocation id; $8 event_data.  No row without the session.  The events
-- trigger lets exactly this row through (adk_store_append marks it; the
-- owner's own call is a restored row to it); the app: and user: scopes and
-- what the event derives are adk_store_append's.
CREATE FUNCTION adk._append_event_row(text, text, text, timestamptz, jsonb, text, text, jsonb,
                                      OUT r_seq bigint, OUT r_timestamp timestamptz,
                                      OUT r_event_data jsonb)
RETURNS SETOF record
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
WITH s AS (
  UPDATE adk.sessions_p0 AS s
     SET last_seq = s.last_seq OPERATOR(pg_catalog.+) 1,
         last_event_time = adk._next_event_time(s.last_event_time, $4),
         update_time = GREATEST(s.update_time,
             adk._next_event_time(s.last_event_time, $4)),
         state = CASE WHEN $5 IS NULL THEN s.state
                      ELSE s.state OPERATOR(pg_catalog.||) $5 END
   WHERE s.app_name OPERATOR(pg_catalog.=) $1
     AND s.user_id OPERATOR(pg_catalog.=) $2
     AND s.id OPERATOR(pg_catalog.=) $3
  RETURNING s.last_seq, s.last_event_time)
INSERT INTO adk.events_p0
       (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data, seq)
SELECT $6, $1, $2, $3, $7, s.last_event_time,
       adk._event_at($8, s.last_event_time), s.last_seq FROM s
RETURNING seq, "timestamp", event_data
$$;

-- The events trigger's session bump, for any other writer's row: lock and
-- bump the session row; returns the event's seq and time.  $1-$3 app,
-- user, session; $4 the proposed time, truncated to whole milliseconds;
-- $5 the session-scope delta or NULL.  Built-in operators only, so a
-- writer with the tables' privileges (ADK-JS's role) needs no EXECUTE on
-- ours; the trigger runs it as that writer.
CREATE FUNCTION adk._place_event_bump(text, text, text, timestamptz, jsonb,
                                      OUT r_seq bigint, OUT r_timestamp timestamptz)
RETURNS SETOF record
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
UPDATE adk.sessions_p0 AS s
   SET last_seq = s.last_seq OPERATOR(pg_catalog.+) 1,
       last_event_time = GREATEST($4, s.last_event_time
           OPERATOR(pg_catalog.+) '1 ms'::pg_catalog.interval),
       update_time = GREATEST(s.update_time, $4, s.last_event_time
           OPERATOR(pg_catalog.+) '1 ms'::pg_catalog.interval),
       state = CASE WHEN $5 IS NULL THEN s.state
                    ELSE s.state OPERATOR(pg_catalog.||) $5 END
 WHERE s.app_name OPERATOR(pg_catalog.=) $1
   AND s.user_id OPERATOR(pg_catalog.=) $2
   AND s.id OPERATOR(pg_catalog.=) $3
RETURNING s.last_seq, s.last_event_time
$$;

-- The same on a Citus shard of adk.events: with the IMMUTABLE
-- adk._next_event_time instead of timestamptz + interval, which Citus
-- refuses on a column in an UPDATE.  They compute the same.
CREATE FUNCTION adk._place_event_bump_shard(text, text, text, timestamptz, jsonb,
                                            OUT r_seq bigint, OUT r_timestamp timestamptz)
RETURNS SETOF record
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
UPDATE adk.sessions_p0 AS s
   SET last_seq = s.last_seq OPERATOR(pg_catalog.+) 1,
       last_event_time = adk._next_event_time(s.last_event_time, $4),
       update_time = GREATEST(s.update_time, adk._next_event_time(s.last_event_time, $4)),
       state = CASE WHEN $5 IS NULL THEN s.state
                    ELSE s.state OPERATOR(pg_catalog.||) $5 END
 WHERE s.app_name OPERATOR(pg_catalog.=) $1
   AND s.user_id OPERATOR(pg_catalog.=) $2
   AND s.id OPERATOR(pg_catalog.=) $3
RETURNING s.last_seq, s.last_event_time
$$;

-- The session row's lock (FOR UPDATE: until the transaction, or the
-- subtransaction the caller opened, ends): one row, none without the
-- session.
CREATE FUNCTION adk._session_lock(text, text, text)
RETURNS SETOF integer
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
SELECT 1 FROM adk.sessions s
 WHERE s.app_name OPERATOR(pg_catalog.=) $1
   AND s.user_id OPERATOR(pg_catalog.=) $2
   AND s.id OPERATOR(pg_catalog.=) $3 FOR UPDATE
$$;

-- The session row's lock, and the jobs 'running' on the session in
-- another process: one row per such job (NULLs when none), no row without
-- the session.  Whether each job's worker is still there is asked of the
-- process array (src/store/session_read.c), not of pg_stat_activity,
-- whose view the planner joined on every call.
CREATE FUNCTION adk._session_lock_holders(text, text, text,
                                          OUT r_invocation_id text, OUT r_worker_pid integer)
RETURNS SETOF record
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
SELECT j.invocation_id, j.worker_pid FROM adk.sessions s
  LEFT JOIN adk.jobs j
    ON j.app_name OPERATOR(pg_catalog.=) s.app_name
   AND j.user_id OPERATOR(pg_catalog.=) s.user_id
   AND j.session_id OPERATOR(pg_catalog.=) s.id
   AND j.status OPERATOR(pg_catalog.=) 'running'
   AND j.worker_pid OPERATOR(pg_catalog.<>) pg_catalog.pg_backend_pid()
 WHERE s.app_name OPERATOR(pg_catalog.=) $1
   AND s.user_id OPERATOR(pg_catalog.=) $2
   AND s.id OPERATOR(pg_catalog.=) $3 FOR UPDATE OF s
$$;

-- The session's live events from seq $4 on, in seq order, through the
-- (app, user, session, seq) index; rewound ones left out as
-- adk.live_events does, with the session's rewound seqs read once per
-- statement (an InitPlan) instead of the view's join for every row.
CREATE FUNCTION adk._session_history(text, text, text, bigint,
                                     OUT r_event_data jsonb, OUT r_seq bigint, OUT r_id text)
RETURNS SETOF record
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
SELECT e.event_data, e.seq, e.id FROM adk.events e
 WHERE e.app_name OPERATOR(pg_catalog.=) $1
   AND e.user_id OPERATOR(pg_catalog.=) $2
   AND e.session_id OPERATOR(pg_catalog.=) $3
   AND e.seq OPERATOR(pg_catalog.>=) $4
   AND NOT ((SELECT s.rewound FROM adk.sessions s
              WHERE s.app_name OPERATOR(pg_catalog.=) $1
                AND s.user_id OPERATOR(pg_catalog.=) $2
                AND s.id OPERATOR(pg_catalog.=) $3) OPERATOR(pg_catalog.@>) e.seq)
 ORDER BY e.seq
$$;

-- The authors of the session's newest 200 live events, newest first
-- (NULL for an event without one).
CREATE FUNCTION adk._session_recent_authors(text, text, text)
RETURNS SETOF text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
SELECT e.event_data OPERATOR(pg_catalog.->>) 'author' FROM adk.events e
 WHERE e.app_name OPERATOR(pg_catalog.=) $1
   AND e.user_id OPERATOR(pg_catalog.=) $2
   AND e.session_id OPERATOR(pg_catalog.=) $3
   AND NOT ((SELECT s.rewound FROM adk.sessions s
              WHERE s.app_name OPERATOR(pg_catalog.=) $1
                AND s.user_id OPERATOR(pg_catalog.=) $2
                AND s.id OPERATOR(pg_catalog.=) $3) OPERATOR(pg_catalog.@>) e.seq)
 ORDER BY e.seq DESC LIMIT 200
$$;

-- Whether the session has been compacted (its prompt is read through
-- adk._prompt_events then).
CREATE FUNCTION adk._session_compacted(text, text, text)
RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
SELECT EXISTS (SELECT FROM adk.compactions c
                WHERE c.app_name OPERATOR(pg_catalog.=) $1
                  AND c.user_id OPERATOR(pg_catalog.=) $2
                  AND c.session_id OPERATOR(pg_catalog.=) $3)
$$;

-- A model call's row in adk.model_calls; returns the row without its
-- bodies (request, response, response_body) as JSON text, which
-- src/shared/spent.c hands to the launcher to write again, marked
-- rolled_back, if the transaction rolls back.  Every column but the
-- bodies (sql/522_turn_statements.sql checks it): one object built of
-- the columns, not to_jsonb of a subquery for the executor to start at
-- each insert.
CREATE FUNCTION adk._model_call_insert(text, text, text, text, boolean, integer, integer,
                                       double precision, bigint, bigint, text, text, text,
                                       jsonb, jsonb, text, name, double precision, bigint,
                                       text, text, text, text, integer, text, bigint, bigint)
RETURNS text
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
INSERT INTO adk.model_calls AS c (model, provider, url, invocation_id, stream,
       http_status, attempts, latency_ms, input_tokens, output_tokens,
       finish_reason, error_code, error_message, request, response, response_body,
       role_name, first_chunk_ms, cached_tokens, trace_id, span_id, app_name, user_id,
       fallback_attempt, fallback_from, cache_creation_tokens, reasoning_tokens)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
        $18, $19, $20, $21, $22, $23, $24, $25, $26, $27)
RETURNING pg_catalog.jsonb_build_object(
    'id', c.id, 'created_at', c.created_at, 'model', c.model, 'provider', c.provider,
    'url', c.url, 'invocation_id', c.invocation_id, 'stream', c.stream,
    'http_status', c.http_status, 'attempts', c.attempts, 'latency_ms', c.latency_ms,
    'input_tokens', c.input_tokens, 'output_tokens', c.output_tokens,
    'finish_reason', c.finish_reason, 'error_code', c.error_code,
    'error_message', c.error_message, 'role_name', c.role_name,
    'first_chunk_ms', c.first_chunk_ms, 'cached_tokens', c.cached_tokens,
    'trace_id', c.trace_id, 'span_id', c.span_id, 'app_name', c.app_name,
    'user_id', c.user_id, 'rolled_back', c.rolled_back,
    'fallback_attempt', c.fallback_attempt, 'fallback_from', c.fallback_from,
    'cache_creation_tokens', c.cache_creation_tokens,
    'reasoning_tokens', c.reasoning_tokens)::pg_catalog.text
$$;

-- Delete the model calls older than $1 seconds (adk.model_calls_retention).
CREATE FUNCTION adk._model_calls_purge(double precision)
RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
DELETE FROM adk.model_calls c
 WHERE c.created_at OPERATOR(pg_catalog.<)
       (pg_catalog.now() OPERATOR(pg_catalog.-) pg_catalog.make_interval(secs => $1))
$$;
REVOKE ALL ON FUNCTION adk._append_event_row(text, text, text, timestamptz, jsonb, text, text, jsonb),
    adk._place_event_bump(text, text, text, timestamptz, jsonb),
    adk._place_event_bump_shard(text, text, text, timestamptz, jsonb),
    adk._session_lock(text, text, text), adk._session_lock_holders(text, text, text),
    adk._session_history(text, text, text, bigint), adk._session_recent_authors(text, text, text),
    adk._session_compacted(text, text, text),
    adk._model_call_insert(text, text, text, text, boolean, integer, integer,
                           double precision, bigint, bigint, text, text, text,
                           jsonb, jsonb, text, name, double precision, bigint,
                           text, text, text, text, integer, text, bigint, bigint),
    adk._model_calls_purge(double precision)
  FROM PUBLIC;

-- An event's "app:" delta $2 merged into adk.app_states for app $1 at time
-- $3 (under the session row lock; the events trigger and
-- adk_store_append).
CREATE FUNCTION adk._merge_app_state(text, jsonb, timestamptz)
RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
INSERT INTO adk.app_states AS a (app_name, state, update_time)
VALUES ($1, $2, $3)
ON CONFLICT (app_name) DO UPDATE
   SET state = a.state OPERATOR(pg_catalog.||) EXCLUDED.state,
       update_time = GREATEST(a.update_time, EXCLUDED.update_time)
$$;

-- An event's "user:" delta $3 merged into adk.user_states for app $1 and
-- user $2 at time $4.
CREATE FUNCTION adk._merge_user_state(text, text, jsonb, timestamptz)
RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
INSERT INTO adk.user_states AS u (app_name, user_id, state, update_time)
VALUES ($1, $2, $3, $4)
ON CONFLICT (app_name, user_id) DO UPDATE
   SET state = u.state OPERATOR(pg_catalog.||) EXCLUDED.state,
       update_time = GREATEST(u.update_time, EXCLUDED.update_time)
$$;
REVOKE ALL ON FUNCTION adk._merge_app_state(text, jsonb, timestamptz),
    adk._merge_user_state(text, text, jsonb, timestamptz) FROM PUBLIC;

-- adk_cancel of a paused run (sql/install/63_cancel_waiting.sql,
-- src/worker/cancel.c): a request made before an error event CANCELLED
-- of its invocation is no longer pending.
CREATE OR REPLACE FUNCTION adk._derive_run_states(p_app text, p_user text, p_session text,
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
        -- a call no answer came for before an error event CANCELLED of
        -- its invocation (adk_cancel of a paused run, 63_cancel_waiting.sql)
        -- is no longer pending
        SELECT c.invocation_id, c.path, c.seq, c.ord, c.id, a.answered_at,
               a.answered_at IS NULL
               AND EXISTS (SELECT 1 FROM ev k
                            WHERE k.invocation_id = c.invocation_id AND k.seq > c.seq
                              AND k.author <> 'user' AND k.d ->> 'error_code' = 'CANCELLED') AS cancelled
          FROM calls c
         CROSS JOIN LATERAL (SELECT (SELECT a.ts FROM answers a
                                      WHERE a.id = c.id AND a.seq > c.seq
                                      ORDER BY a.seq LIMIT 1) AS answered_at) a
    ), nodes AS (
        -- every node activation
        SELECT DISTINCT ev.invocation_id, ev.path
          FROM ev
         WHERE ev.path IS NOT NULL
           AND (p_paths IS NULL OR ev.path = ANY (p_paths))
    ), held AS (
        -- the interrupts of a node and of the nodes below it
        SELECT n.invocation_id, n.path,
               coalesce(array_agg(i.id ORDER BY i.seq, i.ord)
                        FILTER (WHERE i.id IS NOT NULL AND i.answered_at IS NULL
                                AND NOT i.cancelled), '{}') AS pending,
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
           1,
           last.d #>> '{custom_metadata,adk_triggered_by}',
           last.d ->> 'branch',
           last.d #>> '{custom_metadata,adk_graph_hash}'
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

-- The role the waiting invocation p_invocation runs as (adk_cancel checks
-- the caller may cancel its runs before anything is locked); NULL when
-- it is not waiting.
CREATE FUNCTION adk._waiting_invocation_role(p_invocation text)
RETURNS name
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT x.role_name FROM adk.invocations x
     WHERE x.invocation_id OPERATOR(pg_catalog.=) p_invocation
       AND x.status OPERATOR(pg_catalog.=) 'waiting'
$$;

-- Cancel the waiting invocation p_invocation that runs as p_role: its
-- session row locked (as adk_run locks it) and the invocation found
-- still waiting under that lock, an error event CANCELLED for each of
-- its waiting nodes, its run_states rows brought to what the events now
-- say (cancelled, nothing pending), the invocation and the job of a
-- queued run that paused 'cancelled'.  false: it is not waiting (any
-- more), or now runs as another role (adk_cancel checks again).
CREATE FUNCTION adk._cancel_waiting(p_invocation text, p_role name)
RETURNS boolean
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    i record;
    r record;
    msg text := 'adk_cancel cancelled the run while it waited for input';
BEGIN
    SELECT x.app_name, x.user_id, x.session_id INTO i
      FROM adk.invocations x
     WHERE x.invocation_id = p_invocation AND x.status = 'waiting';
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM 1 FROM adk.sessions s
      WHERE s.app_name = i.app_name AND s.user_id = i.user_id AND s.id = i.session_id
        FOR UPDATE;
    -- a new snapshot: what a resume that held the lock committed
    PERFORM 1 FROM adk.invocations x
      WHERE x.invocation_id = p_invocation AND x.status = 'waiting' AND x.role_name = p_role;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM adk.run_states s
                    WHERE s.app_name = i.app_name AND s.user_id = i.user_id
                      AND s.session_id = i.session_id AND s.invocation_id = p_invocation) THEN
        PERFORM adk._refresh_run_states(i.app_name, i.user_id, i.session_id, p_invocation);
    END IF;
    -- the rows a resume locks (adk._resume_interrupts), in its order
    FOR r IN
        SELECT s.node_path, s.agent, s.branch, s.triggered_by, s.graph_hash
          FROM adk.run_states s
         WHERE s.app_name = i.app_name AND s.user_id = i.user_id AND s.session_id = i.session_id
           AND s.invocation_id = p_invocation AND s.status = 'waiting'
         ORDER BY s.node_path
           FOR UPDATE
    LOOP
        INSERT INTO adk.events (id, app_name, user_id, session_id, invocation_id, "timestamp",
                                event_data)
        SELECT k.id, i.app_name, i.user_id, i.session_id, p_invocation, clock_timestamp(),
               jsonb_strip_nulls(jsonb_build_object(
                   'id', k.id, 'invocation_id', p_invocation, 'author', r.agent,
                   'branch', r.branch, 'error_code', 'CANCELLED', 'error_message', msg,
                   'actions', '{}'::jsonb,
                   'node_info', jsonb_build_object('path', r.node_path),
                   'custom_metadata', nullif(jsonb_strip_nulls(jsonb_build_object(
                       'adk_triggered_by', r.triggered_by, 'adk_graph_hash', r.graph_hash)),
                       '{}'::jsonb)))
          FROM (SELECT gen_random_uuid()::text AS id) k;
    END LOOP;
    PERFORM adk._refresh_run_states(i.app_name, i.user_id, i.session_id, p_invocation);
    UPDATE adk.invocations x
       SET status = 'cancelled', ended_at = clock_timestamp(),
           error_code = 'CANCELLED', error_message = msg
     WHERE x.invocation_id = p_invocation;
    UPDATE adk.jobs j
       SET status = 'cancelled', finished_at = clock_timestamp(), error = msg
     WHERE j.invocation_id = p_invocation AND j.status = 'waiting';
    RETURN true;
END
$$;

-- The first of p_ids (function responses' ids) that is a request of
-- p_invocation which adk_cancel cancelled while it was pending: an error
-- event CANCELLED of that invocation follows the call, and no user's
-- response answered it before.  NULL: none.  adk_run refuses such an
-- answer (src/runner/hitl.c).
CREATE FUNCTION adk._cancelled_request(p_app text, p_user text, p_session text,
                                       p_invocation text, p_ids text[])
RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN (
        SELECT u.id
          FROM unnest(p_ids) WITH ORDINALITY AS u(id, n)
          JOIN adk.live_events c
            ON c.app_name = p_app AND c.user_id = p_user AND c.session_id = p_session
           AND c.invocation_id = p_invocation
           AND coalesce(c.event_data ->> 'author', 'user') <> 'user'
           AND c.event_data -> 'long_running_tool_ids' ? u.id
           AND c.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
         WHERE EXISTS (SELECT 1 FROM adk.invocations x
                        WHERE x.invocation_id = p_invocation AND x.status = 'cancelled')
           AND EXISTS (
               SELECT 1 FROM adk.live_events k
                WHERE k.app_name = p_app AND k.user_id = p_user AND k.session_id = p_session
                  AND k.invocation_id = p_invocation AND k.seq > c.seq
                  AND coalesce(k.event_data ->> 'author', 'user') <> 'user'
                  AND k.event_data ->> 'error_code' = 'CANCELLED'
                  AND NOT EXISTS (
                      SELECT 1 FROM adk.live_events a
                       CROSS JOIN LATERAL adk._parts(a.event_data -> 'content') p
                       WHERE a.app_name = p_app AND a.user_id = p_user AND a.session_id = p_session
                         AND a.seq > c.seq AND a.seq < k.seq
                         AND a.event_data ->> 'author' = 'user'
                         AND a.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
                         AND p #>> '{function_response,id}' = u.id))
         ORDER BY u.n LIMIT 1);
END
$$;
REVOKE ALL ON FUNCTION adk._waiting_invocation_role(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION adk._cancel_waiting(text, name) FROM PUBLIC;
REVOKE ALL ON FUNCTION adk._cancelled_request(text, text, text, text, text[]) FROM PUBLIC;
COMMENT ON FUNCTION adk_cancel(text) IS
    'Cancel a run: a queued job never starts; a running one (in a worker or another backend) is stopped; a paused one (waiting for input) ends cancelled, its requests no longer answerable.  true: there was something to cancel.';

-- An agent node whose agent, or an agent below it, has a tool that is
-- long-running or requires confirmation (docs/workflows.md "Not run
-- yet"): its pause would hold the node, but the answer would not resume
-- the agent in its lane -- it would become the node's output, the tool's
-- result never seen by the model, a confirmed tool never run -- so the
-- run is refused before anything is stored.  NULL: no such node.
CREATE FUNCTION adk._workflow_pause_refusal(wf text) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT format('node "%s" of workflow "%s" is of kind agent and agent "%s" has tool "%s" (long-running or requiring confirmation)',
                  n.name, wf, a.name, t.name)
      FROM adk.workflow_nodes n
     CROSS JOIN LATERAL adk._agent_tree(n.agent) a
      JOIN adk.agents g ON g.name = a.name
     CROSS JOIN LATERAL unnest(g.tools) WITH ORDINALITY AS u(tool, i)
      JOIN adk.tools t ON t.name = u.tool AND (t.long_running OR t.require_confirmation)
     WHERE n.workflow = wf AND n.kind = 'agent'
     ORDER BY n.name COLLATE "C", a.depth, a.name COLLATE "C", u.i
     LIMIT 1
$$;
REVOKE ALL ON FUNCTION adk._workflow_pause_refusal(text) FROM PUBLIC;

-- Multi-line SQL strings of the C code as named functions
-- (88_store_statements.sql, 65_compaction.sql).

-- The schema of the adk_* functions (the job worker calls
-- adk_create_session; the artifact tools adk_save_artifact), NULL when
-- adk_runner is not installed.
CREATE FUNCTION adk._extension_schema()
RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN (SELECT n.nspname::text
              FROM pg_catalog.pg_extension e
              JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
             WHERE e.extname = 'adk_runner');
END
$$;

-- A run's status and place for adk_wait (src/worker/submit.c), with a new
-- snapshot: its job's, or (no job: a run of adk_run, or a job purged
-- since) its invocation's; r_xmin, the job row's, tells a job queued in
-- the caller's own transaction.  Run as the caller.
CREATE FUNCTION adk._run_status(p_invocation text,
                                OUT r_status text, OUT r_app text, OUT r_user text,
                                OUT r_session text, OUT r_xmin xid)
RETURNS SETOF record
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT x.status, x.app_name, x.user_id, x.session_id, x.xmin
      FROM (SELECT j.status, j.app_name, j.user_id, j.session_id, 1 AS o, j.xmin
              FROM adk.jobs j
             WHERE j.invocation_id = p_invocation
            UNION ALL
            SELECT i.status, i.app_name, i.user_id, i.session_id, 2, NULL::xid
              FROM adk.invocations i
             WHERE i.invocation_id = p_invocation) x
     ORDER BY x.o
     LIMIT 1;
END
$$;

-- A ledger row of a model call whose transaction rolled back, marked
-- rolled_back (src/shared/spent.c: the launcher writes what the backend
-- handed over).
CREATE FUNCTION adk._model_call_restore(p_row jsonb)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    INSERT INTO adk.model_calls OVERRIDING SYSTEM VALUE
    SELECT r.*
      FROM pg_catalog.jsonb_populate_record(NULL::adk.model_calls,
                                            p_row || '{"rolled_back": true}') r;
END
$$;

-- Whether Citus lists shard p_shard as a shard of adk.events_p0 (the
-- events trigger on a shard; called only where pg_dist_shard exists).
CREATE FUNCTION adk._events_shard(p_shard bigint)
RETURNS boolean
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN EXISTS (SELECT FROM pg_catalog.pg_dist_shard s
                    WHERE s.shardid = p_shard
                      AND s.logicalrelid = 'adk.events_p0'::pg_catalog.regclass);
END
$$;

-- The OTLP exporter's secret p_name: its value and the hosts it may be
-- sent to (src/worker/otlp.c).
CREATE FUNCTION adk._otlp_secret(p_name text, OUT r_value text, OUT r_allowed_hosts text[])
RETURNS SETOF record
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT s.value, s.allowed_hosts
      FROM adk.secrets s
     WHERE s.name = p_name;
END
$$;

-- The spans p_refs the OTLP collector accepted, out of the exporter's
-- queue.
CREATE FUNCTION adk._span_exports_dequeue(p_refs bigint[])
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    DELETE FROM adk.span_exports x
     WHERE x.span_ref = ANY (p_refs);
END
$$;

-- The sliding window's range as ARRAY[from_seq, to_seq], NULL when it is
-- not time (src/runner/compaction.c).
CREATE FUNCTION adk._sliding_window_bounds(p_app text, p_user text, p_session text,
                                           p_every integer, p_overlap integer)
RETURNS bigint[]
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r record;
BEGIN
    SELECT w.from_seq, w.to_seq INTO r
      FROM adk._sliding_window_range(p_app, p_user, p_session, p_every, p_overlap) w;
    IF r.from_seq IS NULL OR r.to_seq IS NULL THEN
        RETURN NULL;
    END IF;
    RETURN ARRAY[r.from_seq, r.to_seq];
END
$$;

-- The model that summarizes app p_app's sessions: its compaction's
-- summarizer_model, or its root agent's model; NULL for no such app
-- (adk_compact, src/runner/compaction_sql.c).
CREATE FUNCTION adk._summarizer_model(p_app text)
RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN (SELECT coalesce(a.compaction ->> 'summarizer_model', adk._agent_model(a.root_agent))
              FROM adk.apps a
             WHERE a.name = p_app);
END
$$;

-- Why a compaction of invocation p_invocation failed or was refused, kept
-- on the invocation (the run goes on).
CREATE FUNCTION adk._compaction_error_set(p_invocation text, p_error text)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE adk.invocations i
       SET compaction_error = p_error
     WHERE i.invocation_id = p_invocation;
END
$$;
REVOKE ALL ON FUNCTION adk._extension_schema(), adk._run_status(text),
    adk._model_call_restore(jsonb), adk._events_shard(bigint), adk._otlp_secret(text),
    adk._span_exports_dequeue(bigint[]),
    adk._sliding_window_bounds(text, text, text, integer, integer),
    adk._summarizer_model(text), adk._compaction_error_set(text, text)
  FROM PUBLIC;
GRANT EXECUTE ON FUNCTION adk._run_status(text) TO adk_user;

-- The budget check of every model call, run from its body (88_turn_statements.sql).

-- Whether a budget with a limit covers a model call in app $1 by user $2
-- as role $3 (src/runner/budget.c; if none does, the call takes nothing
-- from adk._budget_take).  Every model call runs it.
CREATE FUNCTION adk._budget_any(text, text, name)
RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
SELECT EXISTS (SELECT FROM adk._budget_limits x
                WHERE x.app_name OPERATOR(pg_catalog.=) $1
                  AND (x.user_id IS NULL OR x.user_id OPERATOR(pg_catalog.=) $2)
                  AND (x.role_name IS NULL OR x.role_name OPERATOR(pg_catalog.=) $3))
$$;
REVOKE ALL ON FUNCTION adk._budget_any(text, text, name) FROM PUBLIC;

-- sql/install/89_workflows.sql: an agent node takes input_schema, a nested
-- workflow node input_schema, output_schema and wait_for_output
CREATE OR REPLACE FUNCTION adk._workflow_refusal(wf text) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT format('node "%s" of workflow "%s" %s', n.name, wf,
                  CASE WHEN n.kind = 'join' AND n.retry IS NOT NULL THEN 'is a join with a retry'
                       WHEN n.kind = 'join' AND n.timeout IS NOT NULL THEN 'is a join with a timeout'
                       WHEN n.kind IN ('agent', 'parallel_worker', 'workflow') AND n.retry IS NOT NULL
                            THEN format('is of kind %s with a retry', n.kind)
                       WHEN n.kind IN ('agent', 'parallel_worker', 'workflow') AND n.timeout IS NOT NULL
                            THEN format('is of kind %s with a timeout', n.kind)
                       WHEN n.kind IN ('agent', 'parallel_worker') AND n.wait_for_output
                            THEN format('is of kind %s with wait_for_output', n.kind)
                       WHEN n.kind = 'agent' AND n.output_schema IS NOT NULL
                            THEN 'is of kind agent with an output schema'
                       WHEN n.kind = 'parallel_worker'
                            AND (n.input_schema IS NOT NULL OR n.output_schema IS NOT NULL)
                            THEN format('is of kind %s with an input or output schema', n.kind)
                       ELSE format('runs tool "%s" (long-running or requiring confirmation)', n.tool) END)
      FROM adk.workflow_nodes n
     WHERE n.workflow = wf
       AND ((n.kind IN ('join', 'agent', 'workflow', 'parallel_worker')
             AND (n.retry IS NOT NULL OR n.timeout IS NOT NULL))
            OR (n.kind IN ('agent', 'parallel_worker') AND (n.wait_for_output OR n.output_schema IS NOT NULL))
            OR (n.kind = 'parallel_worker' AND n.input_schema IS NOT NULL)
            OR EXISTS (SELECT 1 FROM adk.tools t
                        WHERE t.name = n.tool AND (t.require_confirmation OR t.long_running)))
     ORDER BY n.name COLLATE "C"
     LIMIT 1
$$;


-- A graph workflow's invocation failed (src/runner/workflow.c,
-- docs/workflows.md "Statuses"): its node activations still running
-- below p_base (the outermost workflow's node path) that no error event
-- of their own ended, each with what its stop event carries -- its
-- branch, what triggered it, its graph hash.  failed: it fails with the
-- node that failed -- a nested workflow node the failure is below, the
-- parallel worker of a failed item, and so on up; the others the failure
-- stops (ADK-Go cancels them).
CREATE FUNCTION adk._workflow_stopped(p_app text, p_user text, p_session text,
                                      p_invocation text, p_base text)
RETURNS TABLE (node_path text, branch text, triggered_by text, graph_hash text,
               failed boolean)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    WITH RECURSIVE errors AS (
        SELECT DISTINCT adk._node_path(e.event_data) AS path
          FROM adk.events e
         WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
           AND e.invocation_id = p_invocation
           AND e.event_data ->> 'error_code' IS NOT NULL
           AND e.event_data ->> 'author' <> 'user'
           AND starts_with(adk._node_path(e.event_data), p_base || '/')
    ), rows AS (
        SELECT r.node_path, r.status, r.branch, r.triggered_by, r.graph_hash,
               substring(r.node_path from '^(.*)/[^/]*$') AS dir,
               substring(r.node_path from '/([^/@]*)@[0-9]+$') AS node
          FROM adk.run_states r
         WHERE r.app_name = p_app AND r.user_id = p_user AND r.session_id = p_session
           AND r.invocation_id = p_invocation
           AND starts_with(r.node_path, p_base || '/')
    ), live AS (
        SELECT x.*, EXISTS (SELECT 1 FROM adk.workflow_nodes n
                             WHERE n.workflow = substring(x.dir from '[^/]*$') AND n.name = x.node
                               AND n.kind = 'parallel_worker') AS worker
          FROM rows x
         WHERE x.status = 'running' AND x.graph_hash IS NOT NULL
           AND x.node_path NOT IN (SELECT errors.path FROM errors)
    ), bad AS (
        SELECT errors.path, x.dir, x.branch, x.triggered_by
          FROM errors LEFT JOIN rows x ON x.node_path = errors.path
        UNION
        SELECT l.node_path, l.dir, l.branch, l.triggered_by
          FROM live l JOIN bad b
            ON starts_with(b.path, l.node_path || '/')
            OR (l.worker AND b.dir = l.dir AND b.triggered_by = l.node
                AND b.branch IS NOT DISTINCT FROM l.branch)
    )
    SELECT l.node_path, l.branch, l.triggered_by, l.graph_hash,
           l.node_path IN (SELECT bad.path FROM bad)
      FROM live l
     ORDER BY 5 DESC, l.node_path COLLATE "C"
$$;

REVOKE ALL ON FUNCTION adk._workflow_stopped(text, text, text, text, text) FROM PUBLIC;

-- The rows of one invocation (or of every invocation of the session when
-- p_invocation is NULL), computed from the session's live events (not
-- the rewound ones: 12_rewound.sql); p_paths: only the rows of those
-- node paths (what one event changes: adk._refresh_run_states).
-- triggered_by, branch and graph_hash are what the node's latest event
-- says: its branch (ADK's Event.branch), and for a graph workflow's node
-- custom_metadata.adk_triggered_by and adk_graph_hash (workflow.c writes
-- them on each event of the node).
CREATE OR REPLACE FUNCTION adk._derive_run_states(p_app text, p_user text, p_session text,
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
        SELECT c.invocation_id, c.path, c.seq, c.ts, c.ord, c.id,
               (SELECT a.ts FROM answers a
                 WHERE a.id = c.id AND a.seq > c.seq
                 ORDER BY a.seq LIMIT 1) AS answered_at
          FROM calls c
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
                        FILTER (WHERE i.id IS NOT NULL AND i.answered_at IS NULL), '{}') AS pending,
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
CREATE OR REPLACE FUNCTION adk._refresh_run_states(p_app text, p_user text, p_session text,
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
                        WHERE k.invocation_id = r.invocation_id AND k.node_path = r.node_path);
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

-- sql/install/62_hitl.sql: adk._derive_run_states as both the cancel of a
-- paused run and the rows of waiting nested nodes leave it
CREATE OR REPLACE FUNCTION adk._derive_run_states(p_app text, p_user text, p_session text,
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
