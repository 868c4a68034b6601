-- The demo: a weather agent, run inside the database.
\set QUIET on
\o /dev/null
CREATE EXTENSION adk_runner;

-- a tool is a SQL function; its JSON schema comes from the signature and
-- its description from the comment
CREATE FUNCTION get_weather(city text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('city', city, 'forecast', 'sunny', 'temperature_c', 25)
$$;
COMMENT ON FUNCTION get_weather(text) IS 'Current weather for a city.';

-- the model: the bundled local model server, or a real provider when the
-- demo script found a key in the environment (see demo.sh)
-- (the local server wants a key too; a secret bound to 127.0.0.1 carries it)
SELECT adk_set_secret('local-key', 'sk-local-demo', ARRAY['127.0.0.1']) WHERE :'key_env' = '';
SELECT adk_define_model('demo-model', :'provider', :'endpoint', :'model',
                        api_key_env => nullif(:'key_env', ''),
                        api_key_secret => CASE WHEN :'key_env' = '' THEN 'local-key' END);
SELECT adk_define_tool('get_weather(text)'::regprocedure);
SELECT adk_define_agent('weather_agent', model => 'demo-model',
                        instruction => 'You answer questions about the weather. Use get_weather.',
                        tools => ARRAY['get_weather']);
SELECT adk_define_app('weather_app', 'weather_agent');
\o
\set QUIET off

\echo
\echo == SELECT * FROM adk_run('weather_app', 'user-1', 'session-1', 'What is the weather in Hangzhou?')
SELECT seq, event_data ->> 'author' AS author, event_data #>> '{content,role}' AS role,
       event_data #> '{content,parts,0}' AS first_part
  FROM adk_run('weather_app', 'user-1', 'session-1', 'What is the weather in Hangzhou?');

\echo
\echo == the session history, from SQL: SELECT ... FROM adk.event_log WHERE session_id = 'session-1'
SELECT seq, author, role, text, function_calls, function_responses
  FROM adk.event_log WHERE session_id = 'session-1' ORDER BY seq;

\echo == the invocation and its model calls
SELECT agent, status, model_calls, input_tokens, output_tokens,
       round(extract(epoch FROM ended_at - started_at) * 1000) AS ms
  FROM adk.invocations;
SELECT model, provider, http_status, round(latency_ms) AS ms, input_tokens, output_tokens
  FROM adk.model_calls ORDER BY id;
