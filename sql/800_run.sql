-- adk_run: the runner, the LLM flow, SQL tools, plugins, transfer and
-- workflow agents, against the local model server.
SELECT adk_define_model('local', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'test-key');
SELECT adk_define_model('broken', 'openai', current_setting('adk_test.model_url') || '/v1', 'fault-500',
                        api_key_secret => 'test-key', options => '{"retries": 0}');

CREATE FUNCTION get_weather(city text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('city', city, 'forecast', 'sunny', 'temperature_c', 25) $$;
COMMENT ON FUNCTION get_weather(text) IS 'Current weather for a city.';
SELECT adk_define_tool('get_weather(text)'::regprocedure);
SELECT adk_define_agent('weather_agent', model => 'local', instruction => 'You answer weather questions.',
                        tools => ARRAY['get_weather']);
SELECT adk_define_app('weather_app', 'weather_agent');

-- The seeds' E0-E3 walkthrough: user message, function call, function
-- response, answer -- four stored events, one invocation.  The user event
-- is stored but not returned (no yield_user_message).
CREATE TEMP TABLE r1 AS
SELECT * FROM adk_run('weather_app', 'user-1', 'run-1', 'What is the weather in Hangzhou?');
SELECT seq, event_data ->> 'author' AS author, event_data #>> '{content,role}' AS role, partial,
       regexp_replace((event_data -> 'content' -> 'parts')::text, 'call_[A-Za-z0-9]+', 'call_<id>', 'g') AS parts
  FROM r1 ORDER BY seq;
SELECT seq, author, role, text, function_calls, function_responses, error
  FROM adk.event_log WHERE app_name = 'weather_app' AND session_id = 'run-1' ORDER BY seq;
-- one invocation id on every event; the call id equals the response id
SELECT count(DISTINCT invocation_id) AS invocations,
       bool_and(invocation_id LIKE 'e-%') AS id_shape FROM adk.events WHERE session_id = 'run-1';
SELECT (SELECT event_data #>> '{content,parts,0,function_call,id}' FROM adk.events WHERE session_id = 'run-1' AND seq = 2)
     = (SELECT event_data #>> '{content,parts,0,function_response,id}' FROM adk.events WHERE session_id = 'run-1' AND seq = 3)
       AS call_id_matches;
-- the rows returned are the rows stored
SELECT count(*) AS returned, bool_and(r.event_data = e.event_data) AS same
  FROM r1 r JOIN adk.events e USING (id, seq);
SELECT agent, status, model_calls, input_tokens > 0 AS tokens, ended_at >= started_at AS timed, error_code
  FROM adk.invocations WHERE session_id = 'run-1';
-- the second model request carried the first call and its response
SELECT jsonb_array_length(request -> 'messages') AS messages,
       request #>> '{messages,0,role}' AS first_role, request #>> '{messages,2,role}' AS third_role,
       request #>> '{messages,3,role}' AS fourth_role
  FROM adk.model_calls WHERE invocation_id = (SELECT invocation_id FROM adk.events WHERE session_id = 'run-1' LIMIT 1)
 ORDER BY id;

-- yield_user_message returns the user event too; state_delta goes on it
SELECT seq, event_data ->> 'author' AS author, event_data #> '{actions,state_delta}' AS delta
  FROM adk_run('weather_app', 'user-1', 'run-2', 'hello', '{"mood": "curious", "user:tz": "UTC"}',
               '{"yield_user_message": true}') ORDER BY seq;
SELECT adk_get_session('weather_app', 'user-1', 'run-2') -> 'state' AS state;

-- streaming: partial rows come back, are not stored
SELECT partial, seq IS NULL AS no_seq, event_data #>> '{content,parts,0,text}' AS text
  FROM adk_run('weather_app', 'user-1', 'run-3', 'stream this please', NULL, '{"stream": true}');
SELECT count(*) AS stored FROM adk.events WHERE session_id = 'run-3';

-- rows come out as the run makes them: through a cursor, the first FETCH
-- returns the model's call while the second model call has not been made
BEGIN;
DECLARE run_cursor NO SCROLL CURSOR FOR
  SELECT (r).seq, (r).event_data ->> 'author' AS author, (r).event_data #>> '{content,parts,0,text}' AS text
    FROM (SELECT adk_run('weather_app', 'user-1', 'run-4', 'What is the weather in Paris?') AS r) s;
FETCH 1 FROM run_cursor;
SELECT count(*) AS model_calls_so_far FROM adk.model_calls
 WHERE invocation_id = (SELECT invocation_id FROM adk.events WHERE session_id = 'run-4' ORDER BY seq LIMIT 1);
FETCH ALL FROM run_cursor;
SELECT count(*) AS model_calls_at_the_end FROM adk.model_calls
 WHERE invocation_id = (SELECT invocation_id FROM adk.events WHERE session_id = 'run-4' ORDER BY seq LIMIT 1);
COMMIT;
-- a caller that stops reading stops the run: the invocation ends cancelled;
-- it stopped after the model's call event, so the tool never ran (2 events:
-- the user's and the call)
SELECT (adk_run('weather_app', 'user-1', 'run-5', 'What is the weather in Rome?')).seq LIMIT 1;
SELECT status, model_calls, error_code FROM adk.invocations WHERE session_id = 'run-5';
SELECT count(*) AS stored FROM adk.events WHERE session_id = 'run-5';

-- bad input raises
SELECT expect_error($q$SELECT * FROM adk_run('nope', 'u', 's', 'hi')$q$);
SELECT expect_error($q$SELECT * FROM adk_run('weather_app', '', 's', 'hi')$q$);
SELECT expect_error($q$SELECT * FROM adk_run('weather_app', 'u', 's', NULL::text)$q$);
SELECT expect_error($q$SELECT * FROM adk_run('weather_app', 'u', 's', '{"parts": []}'::jsonb)$q$);
SELECT expect_error($q$SELECT * FROM adk_run('weather_app', 'u', 's', 'hi', '[1]')$q$);
SELECT expect_error($q$SELECT * FROM adk_run('weather_app', 'u', 's', 'hi', NULL, '{"strem": true}')$q$);
SELECT adk_define_app('strict_app', 'weather_agent', auto_create_session => false);
SELECT expect_error($q$SELECT * FROM adk_run('strict_app', 'u', 'no-such-session', 'hi')$q$);

-- A helper for the rest of the tests: run, then show the stored history
-- of that session (a later statement, so it sees the run's rows).
CREATE FUNCTION run_log(app text, u text, s text, msg text)
RETURNS TABLE (seq bigint, author text, function_calls text, function_responses text, text text, error text)
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM count(*) FROM adk_run(app, u, s, msg);
  RETURN QUERY SELECT l.seq, l.author, l.function_calls, l.function_responses, l.text, l.error
                 FROM adk.event_log l WHERE l.app_name = app AND l.user_id = u AND l.session_id = s
                ORDER BY l.seq;
END $$;

-- Tools that fail: the error goes back to the model as the function
-- response, only that tool is rolled back, the run goes on.
CREATE TABLE tool_log (msg text);
CREATE FUNCTION failing_tool(note text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO tool_log VALUES (note);
  RAISE EXCEPTION 'the ticket system is down';
END $$;
CREATE FUNCTION add_numbers(a integer, b integer DEFAULT 10) RETURNS integer LANGUAGE sql AS $$ SELECT a + b $$;
CREATE FUNCTION secret_tool(x text) RETURNS text LANGUAGE sql AS $$ SELECT 'classified' $$;
SELECT adk_define_tool('failing_tool(text)'::regprocedure);
SELECT adk_define_tool('add_numbers(integer,integer)'::regprocedure);
SELECT adk_define_tool('secret_tool(text)'::regprocedure);
SELECT adk_define_agent('tool_agent', model => 'local',
                        tools => ARRAY['failing_tool', 'add_numbers', 'secret_tool']);
SELECT adk_define_app('tool_app', 'tool_agent');
SELECT seq, function_calls, function_responses, text FROM run_log('tool_app', 'u', 't1', 'call failing_tool({"note": "hello"})');
SELECT count(*) AS tool_rows_kept FROM tool_log;
-- a wrong argument type, a default, an unknown argument
SELECT seq, function_responses FROM run_log('tool_app', 'u', 't2', 'call add_numbers({"a": "seven"})') WHERE function_responses IS NOT NULL;
SELECT seq, function_responses FROM run_log('tool_app', 'u', 't3', 'call add_numbers({"a": 5})') WHERE function_responses IS NOT NULL;
SELECT seq, function_responses FROM run_log('tool_app', 'u', 't4', 'call add_numbers({"a": 5, "c": 1})') WHERE function_responses IS NOT NULL;
-- a tool the model made up
SELECT seq, function_calls, function_responses FROM run_log('tool_app', 'u', 't5', 'call! made_up_tool({"x": 1})') WHERE function_responses IS NOT NULL;
-- a tool the role may not execute: tools run as the invoking role
CREATE ROLE regress_adk_runner2 IN ROLE adk_user;
GRANT EXECUTE ON FUNCTION get_weather(text), add_numbers(integer, integer) TO regress_adk_runner2;
REVOKE EXECUTE ON FUNCTION secret_tool(text) FROM PUBLIC;
SET ROLE regress_adk_runner2;
SELECT seq, function_responses FROM run_log('tool_app', 'u', 't6', 'call secret_tool({"x": "y"})') WHERE function_responses IS NOT NULL;
RESET ROLE;
SELECT DISTINCT role_name = 'regress_adk_runner2' AS ran_as_invoker FROM adk.invocations WHERE session_id = 't6';
REVOKE ALL ON FUNCTION get_weather(text), add_numbers(integer, integer) FROM regress_adk_runner2;
DROP ROLE regress_adk_runner2;
