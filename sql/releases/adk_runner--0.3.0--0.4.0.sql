-- adk_runner 0.3.0 -> 0.4.0: ALTER EXTENSION adk_runner UPDATE TO '0.4.0'.
-- Every change to the SQL surface since release 0.3.0, in the order the
-- full install script (sql/install/) makes it.  test/t/024_upgrade.pl
-- checks that a 0.3.0 schema updated with this script equals a fresh
-- 0.4.0 install (docs/releasing.md).

\echo Use "ALTER EXTENSION adk_runner UPDATE" to load this file. \quit

-- Event log (30_event_log.sql): the event's id, as the view's last column.
-- CREATE OR REPLACE VIEW replaces the view's options too: security_invoker
-- (85_tenancy.sql) is given again.
CREATE OR REPLACE VIEW adk.event_log WITH (security_invoker = true) AS
SELECT e.app_name,
       e.user_id,
       e.session_id,
       e.seq,
       e."timestamp" AS time,
       e.invocation_id,
       e.event_data ->> 'author' AS author,
       e.event_data #>> '{content,role}' AS role,
       (SELECT string_agg(p ->> 'text', '')
          FROM adk._parts(e.event_data -> 'content') p
         WHERE p ? 'text') AS text,
       (SELECT string_agg(format('%s(%s)', p #>> '{function_call,name}',
                                 coalesce(p #> '{function_call,args}', '{}'::jsonb)), '; ')
          FROM adk._parts(e.event_data -> 'content') p
         WHERE p ? 'function_call') AS function_calls,
       (SELECT string_agg(format('%s -> %s', p #>> '{function_response,name}',
                                 p #> '{function_response,response}'), '; ')
          FROM adk._parts(e.event_data -> 'content') p
         WHERE p ? 'function_response') AS function_responses,
       nullif(concat_ws(': ', e.event_data ->> 'error_code',
                        e.event_data ->> 'error_message'), '') AS error,
       nullif(e.event_data #> '{actions,state_delta}', '{}'::jsonb) AS state_delta,
       e.event_data ->> 'branch' AS branch,
       e.event_data -> 'long_running_tool_ids' AS long_running_tool_ids,
       e.id AS event_id
  FROM adk.events e;
COMMENT ON VIEW adk.event_log IS
    'Events flattened for reading: seq, time, author, role, text, function calls and responses, errors, the event id.';

-- Statistics (84_spans.sql): times in milliseconds rounded to a tenth.
-- The columns change type (double precision to numeric), which CREATE OR
-- REPLACE VIEW cannot do: the views are made again, with their grant.
DROP VIEW adk.stat_models;
DROP VIEW adk.stat_tools;
CREATE VIEW adk.stat_models WITH (security_invoker = true) AS
SELECT m.model, m.provider,
       pg_catalog.count(*) AS calls,
       pg_catalog.count(*) FILTER (WHERE m.error_code IS NOT NULL) AS errors,
       coalesce(pg_catalog.sum(m.input_tokens), 0)::bigint AS input_tokens,
       coalesce(pg_catalog.sum(m.output_tokens), 0)::bigint AS output_tokens,
       coalesce(pg_catalog.sum(m.cached_tokens), 0)::bigint AS cached_tokens,
       pg_catalog.round(pg_catalog.sum(m.latency_ms)::numeric, 1) AS total_time_ms,
       pg_catalog.round(pg_catalog.avg(m.latency_ms)::numeric, 1) AS mean_time_ms,
       pg_catalog.round(pg_catalog.avg(m.first_chunk_ms)::numeric, 1) AS mean_first_chunk_ms,
       (SELECT r.reset_at FROM adk.stat_reset r) AS stats_reset
  FROM adk.model_calls m
 WHERE m.created_at OPERATOR(pg_catalog.>=) (SELECT r.reset_at FROM adk.stat_reset r)
 GROUP BY m.model, m.provider;
COMMENT ON VIEW adk.stat_models IS 'Per model: calls, errors, tokens (input, output, cached) and time since adk_stat_reset(), from adk.model_calls.';

CREATE VIEW adk.stat_tools WITH (security_invoker = true) AS
SELECT s.attributes OPERATOR(pg_catalog.->>) 'gen_ai.tool.name' AS tool,
       pg_catalog.count(*) AS calls,
       pg_catalog.count(*) FILTER (WHERE s.status_code OPERATOR(pg_catalog.=) 'ERROR') AS errors,
       pg_catalog.round(pg_catalog.sum((s.attributes OPERATOR(pg_catalog.->>) 'adk.tool.duration_ms')::numeric), 1) AS total_time_ms,
       pg_catalog.round(pg_catalog.avg((s.attributes OPERATOR(pg_catalog.->>) 'adk.tool.duration_ms')::numeric), 1) AS mean_time_ms,
       (SELECT r.reset_at FROM adk.stat_reset r) AS stats_reset
  FROM adk.spans s
 WHERE s.attributes OPERATOR(pg_catalog.->>) 'gen_ai.operation.name' OPERATOR(pg_catalog.=) 'execute_tool'
   AND s.created_at OPERATOR(pg_catalog.>=) (SELECT r.reset_at FROM adk.stat_reset r)
 GROUP BY 1;
COMMENT ON VIEW adk.stat_tools IS 'Per tool: calls, errors and time since adk_stat_reset(), from the execute_tool spans.';
GRANT SELECT ON adk.stat_models, adk.stat_tools TO adk_user;

-- Costs (85_tenancy.sql): the cost rounded to millionths.
CREATE OR REPLACE VIEW adk.costs WITH (security_invoker = true) AS
SELECT c.app_name, c.user_id, i.agent, c.model,
       (pg_catalog.timezone('UTC', c.created_at))::date AS day,
       pg_catalog.count(*) AS model_calls,
       pg_catalog.sum(coalesce(c.input_tokens, 0)) AS input_tokens,
       pg_catalog.sum(coalesce(c.output_tokens, 0)) AS output_tokens,
       pg_catalog.sum(x.cached) AS cached_input_tokens,
       -- OPERATOR() forms share one precedence: every product is bracketed;
       -- the cost is rounded to millionths of the currency (a person reads
       -- 0.000125, not 24 decimals)
       pg_catalog.round(pg_catalog.sum(((coalesce(c.input_tokens, 0) OPERATOR(pg_catalog.-) x.cached)
                       OPERATOR(pg_catalog.*) (m.price ->> 'input')::numeric)
                      OPERATOR(pg_catalog.+)
                      (x.cached OPERATOR(pg_catalog.*)
                       coalesce(m.price ->> 'cached_input', m.price ->> 'input')::numeric)
                      OPERATOR(pg_catalog.+)
                      (coalesce(c.output_tokens, 0) OPERATOR(pg_catalog.*) (m.price ->> 'output')::numeric))
           OPERATOR(pg_catalog./) 1000000, 6) AS cost
  FROM adk.model_calls c
  LEFT JOIN adk.invocations i ON i.invocation_id OPERATOR(pg_catalog.=) c.invocation_id
  LEFT JOIN adk.models m ON m.name OPERATOR(pg_catalog.=) c.model
 CROSS JOIN LATERAL (SELECT coalesce((c.response #>> '{usage_metadata,cached_content_token_count}')::bigint, 0)
                            AS cached) x
 GROUP BY 1, 2, 3, 4, 5;

-- Runner (60_runner.sql): adk_run_summary, granted as 90_privileges.sql's
-- loop grants the API.
-- ---------------------------------------------------------------------
-- adk_run_summary: what a run did, one short line per event, for the
-- common "what did my agent just do" question without \x:
--   SELECT * FROM adk_run_summary('weather_app', 'user-1', 'session-1');
-- The run is the given invocation, or else the one of the session's
-- newest event that has an invocation id.  Each line is the event's text,
-- calls, responses and error (as adk.event_log shows them), joined by
-- " | " and cut to 100 characters.  It reads as the caller: row-level
-- security applies, and a session the caller cannot see does not exist.
-- ---------------------------------------------------------------------
CREATE FUNCTION adk_run_summary(app_name text, user_id text, session_id text,
                                invocation_id text DEFAULT NULL)
RETURNS TABLE (seq bigint, author text, event text)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT adk._session_not_found($1, $2, $3)
     WHERE NOT EXISTS (SELECT 1 FROM adk.sessions s
                        WHERE s.app_name OPERATOR(pg_catalog.=) $1
                          AND s.user_id OPERATOR(pg_catalog.=) $2
                          AND s.id OPERATOR(pg_catalog.=) $3);
    SELECT l.seq, l.author,
           CASE WHEN pg_catalog.length(x.line) OPERATOR(pg_catalog.>) 100
                THEN pg_catalog.left(x.line, 99) OPERATOR(pg_catalog.||) '…'
                ELSE x.line END
      FROM adk.event_log l
     CROSS JOIN LATERAL (
           SELECT pg_catalog.concat_ws(' | ', l.text,
                                       'call ' OPERATOR(pg_catalog.||) l.function_calls,
                                       'response ' OPERATOR(pg_catalog.||) l.function_responses,
                                       'error ' OPERATOR(pg_catalog.||) l.error) AS line) x
     WHERE l.app_name OPERATOR(pg_catalog.=) $1
       AND l.user_id OPERATOR(pg_catalog.=) $2
       AND l.session_id OPERATOR(pg_catalog.=) $3
       AND l.invocation_id OPERATOR(pg_catalog.=) coalesce($4,
               (SELECT e.invocation_id FROM adk.events e
                 WHERE e.app_name OPERATOR(pg_catalog.=) $1
                   AND e.user_id OPERATOR(pg_catalog.=) $2
                   AND e.session_id OPERATOR(pg_catalog.=) $3
                   AND e.invocation_id OPERATOR(pg_catalog.<>) ''
                 ORDER BY e.seq DESC LIMIT 1))
     ORDER BY l.seq
$$;
COMMENT ON FUNCTION adk_run_summary(text, text, text, text) IS
    'One line per event of a run (the given invocation, or the session''s newest): seq, author, and its text, calls, responses and error.';
REVOKE ALL ON FUNCTION adk_run_summary(text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION adk_run_summary(text, text, text, text) TO adk_user;
