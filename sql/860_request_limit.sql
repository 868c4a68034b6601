-- adk.max_request_bytes: a model request larger than it is not sent.  The
-- call fails with REQUEST_TOO_LARGE -- in a run an error event telling the
-- user to compact the session, the run ends without raising -- and the
-- ledger row says so (no request, no HTTP status, no attempt).  The local
-- model server counts the requests of each model id (GET /_stats): a
-- model id of its own shows that nothing reached it.
CREATE TEMP TABLE stats_lines (line text);
CREATE FUNCTION pg_temp.served(model text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    j jsonb;
BEGIN
    TRUNCATE stats_lines;
    EXECUTE format($c$COPY stats_lines FROM PROGRAM %L WITH (FORMAT csv, QUOTE E'\x01', DELIMITER E'\x02')$c$,
                   'curl -s ' || current_setting('adk_test.model_url') || '/_stats');
    SELECT string_agg(line, E'\n')::jsonb INTO j FROM stats_lines;
    RETURN coalesce((j -> 'models' ->> model)::int, 0);
END
$$;
SELECT adk_define_model('rl86_m', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-rl86',
                        api_key_secret => 'test-key');
SELECT adk_define_agent('rl86_agent', model => 'rl86_m', instruction => 'You answer briefly.');
SELECT adk_define_app('rl86_app', 'rl86_agent');
SELECT adk_create_session('rl86_app', 'u', 'rl86') IS NOT NULL AS created;
SELECT adk_append_event('rl86_app', 'u', 'rl86',
         jsonb_build_object('author', 'user', 'content',
                            jsonb_build_object('role', 'user', 'parts',
                                               jsonb_build_array(jsonb_build_object('text', repeat('history ', 1000))))))
       IS NOT NULL AS appended;

-- 1. the setting: 20MB by default, settable by superusers only
SHOW adk.max_request_bytes;
CREATE ROLE rl86_user;
SET ROLE rl86_user;
SET adk.max_request_bytes = '1MB';
RESET ROLE;
DROP ROLE rl86_user;

-- 2. a run whose request (8 kB of history) is over the limit: its one
-- event is the error; nothing raised, nothing sent, the run failed
SET adk.max_request_bytes = '4kB';
SELECT (r).event_data ->> 'author' AS author,
       (r).event_data ->> 'error_code' AS error_code,
       regexp_replace((r).event_data ->> 'error_message', 'of \d+ bytes', 'of N bytes') AS error_message
  FROM (SELECT adk_run('rl86_app', 'u', 'rl86', 'hi') AS r) s;
SELECT status, model_calls, error_code FROM adk.invocations WHERE session_id = 'rl86';
SELECT error_code, request IS NULL AS no_request, http_status, attempts,
       invocation_id = (SELECT invocation_id FROM adk.invocations WHERE session_id = 'rl86') AS of_the_run
  FROM adk.model_calls WHERE model = 'rl86_m';
SELECT pg_temp.served('gpt-rl86') AS served;

-- the request's bytes, not the history's: adk_generate with the same
-- contents is refused the same way
SELECT r ->> 'error_code' AS error_code
  FROM adk_generate('rl86_m', jsonb_build_array(jsonb_build_object('role', 'user', 'parts',
         jsonb_build_array(jsonb_build_object('text', repeat('x', 5000)))))) r;
SELECT pg_temp.served('gpt-rl86') AS served;

-- 3. under the limit, the same session is answered (one request sent)
SET adk.max_request_bytes = '64kB';
SELECT (r).event_data ->> 'author' AS author, (r).event_data ->> 'error_code' AS error_code
  FROM (SELECT adk_run('rl86_app', 'u', 'rl86', 'hi again') AS r) s;
SELECT pg_temp.served('gpt-rl86') AS served;
SELECT count(*) FILTER (WHERE error_code = 'REQUEST_TOO_LARGE') AS refused,
       count(*) FILTER (WHERE error_code IS NULL AND request IS NOT NULL) AS sent
  FROM adk.model_calls WHERE model = 'rl86_m';
RESET adk.max_request_bytes;

-- 4. a model's own bound, options.max_request_bytes: the smaller of it
-- and adk.max_request_bytes applies, so a model (or a call's config) can
-- lower the superuser's bound but never raise it.  The session's request
-- (over 8 kB) is under the setting's 20MB and over the model's 4000
-- bytes: refused, naming the model's bound; nothing sent
UPDATE adk.models SET options = options || '{"max_request_bytes": 4000}' WHERE name = 'rl86_m';
SELECT (r).event_data ->> 'error_code' AS error_code,
       regexp_replace((r).event_data ->> 'error_message', 'of \d+ bytes', 'of N bytes') AS error_message
  FROM (SELECT adk_run('rl86_app', 'u', 'rl86', 'and again') AS r) s;
SELECT pg_temp.served('gpt-rl86') AS served;
-- a call's config cannot raise it; it can lower it further
SELECT r ->> 'error_code' AS error_code, r ->> 'error_message' ~ 'model "rl86_m" \(4000 bytes\)' AS model_bound
  FROM adk_generate('rl86_m', jsonb_build_array(jsonb_build_object('role', 'user', 'parts',
         jsonb_build_array(jsonb_build_object('text', repeat('x', 5000))))),
         config => '{"max_request_bytes": 1000000}') r;
SELECT r ->> 'error_code' AS error_code,
       regexp_replace(r ->> 'error_message', 'of \d+ bytes', 'of N bytes') AS error_message
  FROM adk_generate('rl86_m', '[{"role": "user", "parts": [{"text": "hi"}]}]',
         config => '{"max_request_bytes": 10}') r;
-- a smaller setting still applies to a model with a larger bound
UPDATE adk.models SET options = options || '{"max_request_bytes": 1000000}' WHERE name = 'rl86_m';
SET adk.max_request_bytes = '4kB';
SELECT (r).event_data ->> 'error_code' AS error_code,
       regexp_replace((r).event_data ->> 'error_message', 'of \d+ bytes', 'of N bytes') AS error_message
  FROM (SELECT adk_run('rl86_app', 'u', 'rl86', 'once more') AS r) s;
RESET adk.max_request_bytes;
SELECT pg_temp.served('gpt-rl86') AS served;
-- bad values are refused, by the models' trigger and in a call's config
UPDATE adk.models SET options = options || '{"max_request_bytes": 0}' WHERE name = 'rl86_m';
UPDATE adk.models SET options = options || '{"max_request_bytes": "1MB"}' WHERE name = 'rl86_m';
UPDATE adk.models SET options = options || '{"max_request_bytes": 1.5}' WHERE name = 'rl86_m';
UPDATE adk.models SET options = options || '{"max_request_bytes": 3000000000}' WHERE name = 'rl86_m';
SELECT adk_generate('rl86_m', '[{"role": "user", "parts": [{"text": "hi"}]}]',
                    config => '{"max_request_bytes": -1}');
UPDATE adk.models SET options = options - 'max_request_bytes' WHERE name = 'rl86_m';
