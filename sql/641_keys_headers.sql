-- What a call may send (per-call headers, timeouts, retries: the rules of
-- adk.models.options) and what a provider that echoes the key back may
-- not expose: anything returned, stored or logged shows [REDACTED].
SELECT adk_set_secret('echo-key', 'sk-echo-64-SECRET-0123456789', ARRAY['127.0.0.1']);
SELECT adk_define_model('echo-' || p, p, current_setting('adk_test.model_url') || CASE p WHEN 'openai' THEN '/v1' ELSE '' END,
                        p || '-test', api_key_secret => 'echo-key', options => '{"retries": 0}')
  FROM unnest(ARRAY['openai', 'gemini', 'anthropic']) p;

-- what the server saw last (GET /_last), as jsonb
CREATE TEMP TABLE last_lines (line text);
CREATE FUNCTION pg_temp.last_request() RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    j jsonb;
BEGIN
    TRUNCATE last_lines;
    EXECUTE format($c$COPY last_lines FROM PROGRAM %L WITH (FORMAT csv, QUOTE E'\x01', DELIMITER E'\x02')$c$,
                   'curl -s ' || current_setting('adk_test.model_url') || '/_last');
    SELECT string_agg(line, E'\n')::jsonb INTO j FROM last_lines;
    RETURN j;
END
$$;

-- ---------------------------------------------------------------------
-- per-call headers: refused before anything is sent
-- ---------------------------------------------------------------------
SELECT count(*) AS calls_before FROM adk.model_calls \gset
SELECT f, h, expect_error(format($q$SELECT * FROM %s('echo-openai', '[{"role": "user", "parts": [{"text": "hi"}]}]', NULL, %L)$q$,
                                 f, jsonb_build_object('headers', h::jsonb))) AS error
  FROM unnest(ARRAY['adk_generate', 'adk_generate_stream']) f,
       unnest(ARRAY['{"X-Ok": "a\r\nX-Evil: 1"}', '{"X-Ok": "a\nb"}', '{"X-Ok": "a\rb"}',
                    '{"Host": "api.openai.com"}', '{"Content-Length": "0"}', '{"authorization": "Bearer other"}',
                    '{"X-Api-Key": "k"}', '{"x-goog-api-key": "k"}', '{"Transfer-Encoding": "chunked"}',
                    '{"X-Trace": "1", "x-trace": "2"}', '{"Bad Name": "x"}', '{"X-Num": 5}', '["X-A: 1"]']) h
 ORDER BY f, h;
-- timeouts and retries are bounded (the model's options too)
SELECT c, expect_error(format($q$SELECT adk_generate('echo-gemini', '[{"role": "user", "parts": [{"text": "hi"}]}]', NULL, %L)$q$, c)) AS error
  FROM unnest(ARRAY['{"retries": 1000}', '{"retries": -1}', '{"retries": 2.5}', '{"retries": "3"}',
                    '{"timeout_ms": 0}', '{"timeout_ms": 99999999}', '{"connect_timeout_ms": 0}',
                    '{"connect_timeout_ms": 3600000}']) c
 ORDER BY c;
SELECT count(*) = :calls_before AS nothing_sent FROM adk.model_calls;
SELECT expect_error($q$SELECT adk_define_model('x', 'openai', 'http://127.0.0.1/v1', 'm', options => '{"retries": 1000}')$q$);
SELECT expect_error($q$SELECT adk_define_model('x', 'openai', 'http://127.0.0.1/v1', 'm', options => '{"timeout_ms": 7200000}')$q$);
SELECT expect_error($q$SELECT adk_define_model('x', 'openai', 'http://127.0.0.1/v1', 'm', options => '{"headers": {"X-A": "1", "x-a": "2"}}')$q$);
SELECT expect_error($q$SELECT adk_define_model('x', 'openai', 'http://127.0.0.1/v1', 'm', options => '{"headers": {"Host": "evil.example"}}')$q$);
SELECT expect_error($q$SELECT adk_define_model('x', 'anthropic', 'http://127.0.0.1', 'm', options => '{"headers": {"Anthropic-Version": "2020-01-01"}}')$q$);

-- allowed headers reach the server once, with the key header unchanged
SELECT adk_generate('echo-anthropic', '[{"role": "user", "parts": [{"text": "hi"}]}]', NULL,
                    '{"headers": {"X-Trace-Id": "t-64\tok", "anthropic-beta": "tools-2024"}, "retries": 10, "timeout_ms": 3600000}')
       #>> '{content,parts,0,text}' AS answer;
SELECT h.key, h.value
  FROM jsonb_each_text(pg_temp.last_request() -> 'headers') h
 WHERE lower(h.key) NOT IN ('host', 'content-length', 'user-agent')
 ORDER BY lower(h.key);
SELECT adk_generate('echo-openai', '[{"role": "user", "parts": [{"text": "hi"}]}]', NULL,
                    '{"headers": {"OpenAI-Organization": "org-64"}}') #>> '{content,parts,0,text}' AS answer;
SELECT pg_temp.last_request() #>> '{headers,OpenAI-Organization}' AS org,
       pg_temp.last_request() #>> '{headers,Authorization}' AS auth;

-- ---------------------------------------------------------------------
-- the model's headers and a call's are merged; on a name both set (any
-- case) the model's, set by an admin, is sent
-- ---------------------------------------------------------------------
SELECT adk_define_model('echo-merge', 'openai', current_setting('adk_test.model_url') || '/v1', 'openai-test',
                        api_key_secret => 'echo-key',
                        options => '{"retries": 0, "headers": {"X-Gateway-Token": "gw-admin", "X-Team": "model"}}');
CREATE FUNCTION pg_temp.sent_x_headers() RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(lower(h.key) || '=' || h.value, ', ' ORDER BY lower(h.key))
      FROM jsonb_each_text(pg_temp.last_request() -> 'headers') h WHERE lower(h.key) LIKE 'x-%' $$;
CREATE FUNCTION pg_temp.merge_call(config jsonb) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM adk_generate('echo-merge', '[{"role": "user", "parts": [{"text": "hi"}]}]', NULL, config);
    RETURN pg_temp.sent_x_headers();
END
$$;
SELECT c AS config, pg_temp.merge_call(c::jsonb) AS sent
  FROM unnest(ARRAY['{"headers": {"x-gateway-token": "from-call", "X-Extra": "call"}}',
                    '{"headers": {"X-TEAM": "call"}}',
                    '{"headers": {}}',
                    '{"temperature": 0}']) WITH ORDINALITY u(c, i)
 ORDER BY i;
-- streamed alike (the runner's calls take the same path, with the model's
-- headers only: an agent's generate_config has no headers)
SELECT count(*) > 0 AS streamed
  FROM adk_generate_stream('echo-merge', '[{"role": "user", "parts": [{"text": "hi"}]}]', NULL,
                           '{"headers": {"X-Gateway-Token": "from-call"}}');
SELECT pg_temp.sent_x_headers() AS sent;
DELETE FROM adk.models WHERE name = 'echo-merge';

-- ---------------------------------------------------------------------
-- a provider that echoes the key
-- ---------------------------------------------------------------------
CREATE TEMP TABLE lookup_tools AS
SELECT '[{"name": "lookup", "description": "Look something up.",
          "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}]'::jsonb AS tools;
CREATE TEMP TABLE echoed (p text, how text, r jsonb);
-- text, function-call arguments (names and values), an error message
INSERT INTO echoed
SELECT p, how, adk_generate('echo-' || p, jsonb_build_array(jsonb_build_object('role', 'user',
              'parts', jsonb_build_array(jsonb_build_object('text', t)))), tools)
  FROM unnest(ARRAY['openai', 'gemini', 'anthropic']) p, lookup_tools,
       (VALUES ('text', 'repeat after me: [[echo-key]] and again [[echo-key]]'),
               ('call', 'call lookup({"q": "[[echo-key]]", "[[echo-key]]": ["x [[echo-key]] y"]})'),
               ('error', 'who am I? [[fault:key-error]]')) v(how, t);
-- the same, streamed: every partial and the final response
INSERT INTO echoed
SELECT p, how || ' streamed', r
  FROM unnest(ARRAY['openai', 'gemini', 'anthropic']) p, lookup_tools,
       (VALUES ('text', 'repeat after me: [[echo-key]] and again [[echo-key]]'),
               ('call', 'call lookup({"q": "[[echo-key]]", "[[echo-key]]": ["x [[echo-key]] y"]})'),
               ('error', 'who am I? [[fault:key-error]]')) v(how, t),
       adk_generate_stream('echo-' || p, jsonb_build_array(jsonb_build_object('role', 'user',
              'parts', jsonb_build_array(jsonb_build_object('text', t)))), tools) r;
SELECT p, how, count(*) FILTER (WHERE r::text LIKE '%SECRET%') AS with_key,
       max(CASE WHEN r->>'partial' IS NULL THEN coalesce(r #>> '{content,parts,0,text}', r ->> 'error_message',
                                                         (r #> '{content,parts,0,function_call,args}')::text) END) AS final
  FROM echoed GROUP BY p, how ORDER BY p, how;
-- the partials, put together, do not spell the key either
SELECT p, string_agg(r #>> '{content,parts,0,text}', '' ORDER BY ord) AS streamed_text
  FROM (SELECT p, r, row_number() OVER () AS ord FROM echoed WHERE how = 'text streamed' AND r->>'partial' = 'true') s
 GROUP BY p ORDER BY p;

-- through the runner: events, the event log, tool arguments, the run's error
CREATE TABLE lookup_args (q text, args jsonb);
CREATE FUNCTION lookup(q text) RETURNS jsonb LANGUAGE sql AS $$
  INSERT INTO lookup_args VALUES (q, NULL) RETURNING jsonb_build_object('found', q) $$;
COMMENT ON FUNCTION lookup(text) IS 'Look something up.';
SELECT adk_define_tool('lookup(text)'::regprocedure);
SELECT adk_define_agent('echo_agent_' || p, model => 'echo-' || p, instruction => 'Repeat.', tools => ARRAY['lookup'])
  FROM unnest(ARRAY['openai', 'gemini', 'anthropic']) p;
SELECT adk_define_app('echo_app_' || p, 'echo_agent_' || p) FROM unnest(ARRAY['openai', 'gemini', 'anthropic']) p;
CREATE TEMP TABLE run_rows AS
SELECT p, s, r.*
  FROM unnest(ARRAY['openai', 'gemini', 'anthropic']) p,
       unnest(ARRAY['false', 'true']) st,
       (VALUES ('t', 'repeat after me: [[echo-key]]'), ('c', 'call lookup({"q": "[[echo-key]]"})'),
               ('e', 'who am I? [[fault:key-error]]')) v(s0, t),
       LATERAL (SELECT v.s0 || '-' || st AS s) ss,
       adk_run('echo_app_' || p, 'u64', ss.s, t, NULL, jsonb_build_object('stream', st::boolean)) r;
SELECT count(*) > 0 AS rows_returned, count(*) FILTER (WHERE event_data::text LIKE '%SECRET%') AS returned_with_key
  FROM run_rows;
SELECT p, session_id, seq, author, text,
       regexp_replace(function_calls::text, '"id": "[^"]*"', '"id": "<id>"', 'g') AS function_calls, error
  FROM adk.event_log l JOIN (SELECT DISTINCT p FROM run_rows) pp ON l.app_name = 'echo_app_' || pp.p
 ORDER BY p, session_id, seq;
SELECT q FROM lookup_args ORDER BY q;
SELECT app_name, session_id, status, error_code, error_message
  FROM adk.invocations WHERE app_name LIKE 'echo_app_%' ORDER BY app_name, session_id;

-- no key in anything stored
SELECT count(*) AS rows_with_key
  FROM (SELECT c::text FROM adk.model_calls c
        UNION ALL SELECT e::text FROM adk.events e
        UNION ALL SELECT l::text FROM adk.event_log l
        UNION ALL SELECT s::text FROM adk.sessions s
        UNION ALL SELECT i::text FROM adk.invocations i
        UNION ALL SELECT a::text FROM lookup_args a) AS stored(row_text)
 WHERE row_text LIKE '%SECRET%';
SELECT count(*) > 0 AS redacted_rows FROM adk.model_calls WHERE response::text LIKE '%[REDACTED]%';

-- ---------------------------------------------------------------------
-- environment keys are bound to hosts, as secrets are
-- ---------------------------------------------------------------------
SHOW adk.env_key_hosts;
CREATE TEMP TABLE server_env (line text);
COPY server_env FROM PROGRAM 'printenv PATH' WITH (FORMAT csv, QUOTE E'\x01', DELIMITER E'\x02');
SET adk.allowed_key_env = 'PATH';
SELECT adk_define_model('env-path', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_env => 'PATH', options => '{"retries": 0}');
SELECT count(*) AS calls_before FROM adk.model_calls \gset
-- not bound (the default binds only the providers' own variables and hosts)
SELECT regexp_replace(expect_error($q$SELECT adk_generate('env-path', '[{"role": "user", "parts": [{"text": "hi"}]}]')$q$),
                      ':[0-9]+"', ':PORT"', 'g') AS error;
-- bound to another host
SET adk.env_key_hosts = 'PATH=api.openai.com, OPENAI_API_KEY=127.0.0.1';
SELECT regexp_replace(expect_error($q$SELECT adk_generate('env-path', '[{"role": "user", "parts": [{"text": "hi"}]}]')$q$),
                      ':[0-9]+"', ':PORT"', 'g') AS error;
SELECT count(*) = :calls_before AS nothing_sent FROM adk.model_calls;
-- bound to this host (by name, by host:port, or '*'); an echo of it is redacted too
SET adk.env_key_hosts = 'PATH=api.openai.com, PATH=127.0.0.1';
SELECT r #>> '{content,parts,0,text}' AS answer, strpos(r::text, (SELECT line FROM server_env)) AS key_at
  FROM adk_generate('env-path', '[{"role": "user", "parts": [{"text": "say [[echo-key]]"}]}]') r;
SELECT set_config('adk.env_key_hosts', 'PATH=' || regexp_replace(current_setting('adk_test.model_url'), '^http://', ''), false) IS NOT NULL AS set;
SELECT adk_generate('env-path', '[{"role": "user", "parts": [{"text": "hi"}]}]') #>> '{content,parts,0,text}' AS answer;
SET adk.env_key_hosts = 'PATH=*';
SELECT adk_generate('env-path', '[{"role": "user", "parts": [{"text": "hi"}]}]') #>> '{content,parts,0,text}' AS answer;
SELECT count(*) AS rows_with_env_key
  FROM adk.model_calls c WHERE strpos(c::text, (SELECT line FROM server_env)) > 0;
-- malformed entries are refused; only a superuser may change the binding
SELECT expect_error($q$SET adk.env_key_hosts = 'PATH'$q$);
SELECT expect_error($q$SET adk.env_key_hosts = 'PATH=, X=y'$q$);
SELECT expect_error($q$SET adk.env_key_hosts = '=api.openai.com'$q$);
SELECT expect_error($q$SET adk.env_key_hosts = 'PATH=127.0.0.1:1:2'$q$);
SELECT expect_error($q$SET adk.env_key_hosts = 'PATH=api.openai.com/v1'$q$);
-- bound by scheme: the model's endpoint is http, not https
SET adk.env_key_hosts = 'PATH=https://127.0.0.1';
SELECT regexp_replace(expect_error($q$SELECT adk_generate('env-path', '[{"role": "user", "parts": [{"text": "hi"}]}]')$q$),
                      ':[0-9]+"', ':PORT"', 'g') AS error;
SELECT set_config('adk.env_key_hosts', 'PATH=' || current_setting('adk_test.model_url'), false) IS NOT NULL AS set;
SELECT adk_generate('env-path', '[{"role": "user", "parts": [{"text": "hi"}]}]') #>> '{content,parts,0,text}' AS answer;
CREATE ROLE regress_env64;
GRANT adk_user TO regress_env64;
SET ROLE regress_env64;
SELECT expect_error($q$SET adk.env_key_hosts = 'PATH=evil.example'$q$);
RESET ROLE;
DROP ROLE regress_env64;
RESET adk.env_key_hosts;
RESET adk.allowed_key_env;

-- clean up what later files list
DELETE FROM adk.apps WHERE name LIKE 'echo_app_%';
DELETE FROM adk.agents WHERE name LIKE 'echo_agent_%';
DELETE FROM adk.tools WHERE name = 'lookup';
DROP FUNCTION lookup(text);
DROP TABLE lookup_args;
