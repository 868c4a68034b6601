-- adk_run hardening: a cursor over a run kept open while other
-- statements run in the same backend; the app's max_llm_calls is a ceiling;
-- options are checked; tool results and model output that cannot be stored
-- become error responses / error events; plugins that return a non-object;
-- set-returning SQL functions as tools.
SELECT adk_define_model('h86_m1', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'test-key');
SELECT adk_define_model('h86_m2', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-other',
                        api_key_secret => 'test-key');
SELECT adk_define_agent('h86_agent1', model => 'h86_m1', instruction => 'You answer weather questions.',
                        tools => ARRAY['get_weather']);
SELECT adk_define_agent('h86_agent2', model => 'h86_m2', instruction => 'ANSWER_IN_CAPS');
SELECT adk_define_app('h86_app1', 'h86_agent1');
SELECT adk_define_app('h86_app2', 'h86_agent2');

-- 1. A cursor over a run: FETCH 1, other runs, a definition change, a big
-- allocation, FETCH ALL, COMMIT.  The run keeps the definitions it started
-- with: app1's agent and model, though app2's were redefined (and read) in
-- between.
BEGIN;
DECLARE c86 NO SCROLL CURSOR FOR
  SELECT (r).seq, (r).event_data ->> 'author' AS author, (r).event_data #>> '{content,parts,0,text}' AS text
    FROM (SELECT adk_run('h86_app1', 'u', 'cur-1', 'What is the weather in Paris?') AS r) s;
FETCH 1 FROM c86;
SELECT adk_define_agent('h86_agent2', model => 'h86_m2', instruction => 'ANSWER_IN_CAPS please');
SELECT count(*) AS app2_rows, max((r).event_data #>> '{content,parts,0,text}') AS app2_text
  FROM (SELECT adk_run('h86_app2', 'u', 'cur-2', 'hello there') AS r) s;
SELECT length(string_agg(repeat(md5(i::text), 1000), '')) AS big FROM generate_series(1, 2000) i;
FETCH ALL FROM c86;
COMMIT;
SELECT seq, author, text FROM adk.event_log WHERE app_name = 'h86_app1' AND session_id = 'cur-1' ORDER BY seq;
SELECT DISTINCT model FROM adk.model_calls
 WHERE invocation_id = (SELECT invocation_id FROM adk.invocations WHERE session_id = 'cur-1');
SELECT status, model_calls, error_code FROM adk.invocations WHERE session_id IN ('cur-1', 'cur-2') ORDER BY session_id;
-- a run read to its end, then its transaction ends; then one left half-read
-- when its transaction ends (the invocation is cancelled)
BEGIN;
DECLARE c86b NO SCROLL CURSOR FOR SELECT (adk_run('h86_app1', 'u', 'cur-3', 'hi')).seq;
FETCH ALL FROM c86b;
SELECT count(*) FROM adk_run('h86_app2', 'u', 'cur-4', 'again');
COMMIT;
BEGIN;
DECLARE c86c NO SCROLL CURSOR FOR SELECT (adk_run('h86_app1', 'u', 'cur-5', 'What is the weather in Rome?')).seq;
FETCH 1 FROM c86c;
SELECT count(*) FROM adk_run('h86_app1', 'u', 'cur-6', 'hello');
COMMIT;
SELECT session_id, status, error_code FROM adk.invocations WHERE session_id IN ('cur-3', 'cur-4', 'cur-5', 'cur-6')
 ORDER BY session_id;

-- 2. options.max_llm_calls may lower the app's cap, never raise it
SELECT adk_define_app('h86_capped', 'h86_agent1', max_llm_calls => 1);
SELECT count(*) FROM adk_run('h86_capped', 'u', 'cap-1', 'What is the weather in Oslo?', NULL, '{"max_llm_calls": 20}');
SELECT model_calls, error_code FROM adk.invocations WHERE session_id = 'cap-1';
SELECT count(*) FROM adk_run('h86_app1', 'u', 'cap-2', 'What is the weather in Oslo?', NULL, '{"max_llm_calls": 1}');
SELECT model_calls, error_code FROM adk.invocations WHERE session_id = 'cap-2';
-- options must be what they say
SELECT expect_error($q$SELECT * FROM adk_run('h86_app1', 'u', 'opt', 'hi', NULL, '{"max_llm_calls": 2.5}')$q$);
SELECT expect_error($q$SELECT * FROM adk_run('h86_app1', 'u', 'opt', 'hi', NULL, '{"max_llm_calls": "3"}')$q$);
SELECT expect_error($q$SELECT * FROM adk_run('h86_app1', 'u', 'opt', 'hi', NULL, '{"nope": 1}')$q$);
SELECT expect_error($q$SELECT adk_submit('h86_app1', 'u', 'opt', 'hi', NULL, '{"nope": 1}')$q$);
SELECT expect_error($q$SELECT adk_submit('h86_app1', 'u', 'opt', 'hi', NULL, '{"max_llm_calls": 2.5}')$q$);
SELECT expect_error($q$SELECT adk_submit('h86_app1', 'u', 'opt', 'hi', NULL, '{"stream": "yes"}')$q$);
SELECT count(*) AS no_jobs FROM adk.jobs WHERE session_id = 'opt';

-- 3. What a tool or the model produced but cannot be stored.  A tool
-- result over adk.max_event_size becomes an {"error": ...} function
-- response the model sees; of two parallel results that together are too
-- large, the one that does not fit does; too-large model output is a
-- stored error event.  Nesting deeper than the store allows is treated
-- the same way.  The session stays usable.
CREATE FUNCTION h86_big(n integer, c text DEFAULT 'x') RETURNS text LANGUAGE sql AS $$ SELECT repeat(c, n) $$;
CREATE FUNCTION h86_deep(n integer) RETURNS jsonb LANGUAGE sql AS $$
  SELECT (repeat('[', n) || repeat(']', n))::jsonb $$;
CREATE FUNCTION h86_echo(x jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT '{"ok": true}'::jsonb $$;
SELECT adk_define_tool('h86_big(integer, text)'::regprocedure);
SELECT adk_define_tool('h86_deep(integer)'::regprocedure);
SELECT adk_define_tool('h86_echo(jsonb)'::regprocedure);
SELECT adk_define_agent('h86_tools', model => 'h86_m1', tools => ARRAY['h86_big', 'h86_deep', 'h86_echo']);
SELECT adk_define_app('h86_tools_app', 'h86_tools');
SET adk.max_event_size = '50kB';
-- one result over the limit
SELECT count(*) FROM adk_run('h86_tools_app', 'u', 'big-1', 'call h86_big({"n": 60000})');
SELECT seq, author, left(coalesce(text, function_responses::text), 140) AS what, error
  FROM adk.event_log WHERE session_id = 'big-1' ORDER BY seq;
-- two parallel results of 30 kB each: the second does not fit any more
SELECT count(*) FROM adk_run('h86_tools_app', 'u', 'big-2', 'call h86_big({"n": 30000}) call h86_big({"n": 30001})');
SELECT seq, event_data ->> 'author' AS author,
       regexp_replace(regexp_replace((event_data -> 'content')::text, 'x{20,}', 'x…', 'g'),
                      'call_[A-Za-z0-9]+', 'call_<id>', 'g') AS content
  FROM adk.events WHERE session_id = 'big-2' ORDER BY seq;
-- the model's answer over the limit (it quotes a 30 kB result of quotes,
-- each escaped): an error event, the run ends failed, nothing raised
SELECT count(*) FROM adk_run('h86_tools_app', 'u', 'big-3', 'call h86_big({"n": 30000, "c": "\""})');
SELECT seq, author, split_part(error, ':', 1) AS error
  FROM adk.event_log WHERE session_id = 'big-3' ORDER BY seq;
SELECT status, error_code FROM adk.invocations WHERE session_id = 'big-3';
-- a tool result nested 70 deep
SELECT count(*) FROM adk_run('h86_tools_app', 'u', 'deep-1', 'call h86_deep({"n": 70})');
SELECT seq, author, left(coalesce(text, function_responses::text), 140) AS what
  FROM adk.event_log WHERE session_id = 'deep-1' ORDER BY seq;
-- tool-call arguments nested 62 deep: an error event (the model layer or
-- the runner refuses them), never a stored call
SELECT count(*) FROM adk_run('h86_tools_app', 'u', 'deep-2',
  'call h86_echo({"x": ' || repeat('{"a": ', 61) || '1' || repeat('}', 61) || '})');
SELECT seq, author, error IS NOT NULL AS is_error, function_calls IS NOT NULL AS has_calls
  FROM adk.event_log WHERE session_id = 'deep-2' ORDER BY seq;
RESET adk.max_event_size;
-- afterwards each of those sessions still runs
SELECT s, (SELECT count(*) FROM adk_run('h86_tools_app', 'u', s, 'hello again')) AS rows
  FROM unnest(ARRAY['big-1', 'big-2', 'big-3', 'deep-1', 'deep-2']) s;
SELECT session_id, count(*) FILTER (WHERE status = 'completed') AS completed
  FROM adk.invocations WHERE session_id IN ('big-1', 'big-2', 'big-3', 'deep-1', 'deep-2')
 GROUP BY session_id ORDER BY session_id;

-- 4. A plugin that returns something that is not an object (nor, from
-- on_event, false): a stored PLUGIN_ERROR event, adk_run returns normally
CREATE FUNCTION h86_number(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT '42'::jsonb $$;
CREATE FUNCTION h86_array(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT '[1, 2]'::jsonb $$;
SELECT adk_define_plugin('h86_bad_model', before_model => 'h86_number(jsonb)');
SELECT adk_define_plugin('h86_bad_event', on_event => 'h86_array(jsonb)');
SELECT adk_define_plugin('h86_bad_message', on_user_message => 'h86_number(jsonb)');
SELECT adk_define_plugin('h86_bad_tool', after_tool => 'h86_array(jsonb)');
SELECT adk_define_app('h86_p1', 'h86_agent1', plugins => ARRAY['h86_bad_model']);
SELECT adk_define_app('h86_p2', 'h86_agent1', plugins => ARRAY['h86_bad_event']);
SELECT adk_define_app('h86_p3', 'h86_agent1', plugins => ARRAY['h86_bad_message']);
SELECT adk_define_app('h86_p4', 'h86_agent1', plugins => ARRAY['h86_bad_tool']);
SELECT count(*) FROM adk_run('h86_p1', 'u', 'plug-1', 'What is the weather in Lima?');
SELECT count(*) FROM adk_run('h86_p2', 'u', 'plug-2', 'What is the weather in Lima?');
SELECT count(*) FROM adk_run('h86_p3', 'u', 'plug-3', 'What is the weather in Lima?');
SELECT count(*) FROM adk_run('h86_p4', 'u', 'plug-4', 'What is the weather in Lima?');
SELECT app_name, author, error
  FROM adk.event_log WHERE app_name LIKE 'h86_p_' AND error IS NOT NULL ORDER BY app_name, seq;
SELECT app_name, status, error_code FROM adk.invocations WHERE app_name LIKE 'h86_p_' ORDER BY app_name;
-- before_run content that its event could not hold: an error event
CREATE FUNCTION h86_deep_content(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('role', 'model', 'parts', jsonb_build_array(jsonb_build_object('text', 'x',
         'extra', (repeat('[', 62) || repeat(']', 62))::jsonb))) $$;
SELECT adk_define_plugin('h86_deep_run', before_run => 'h86_deep_content(jsonb)');
SELECT adk_define_app('h86_p5', 'h86_agent1', plugins => ARRAY['h86_deep_run']);
SELECT count(*) FROM adk_run('h86_p5', 'u', 'plug-5', 'hi');
SELECT author, error FROM adk.event_log WHERE session_id = 'plug-5' ORDER BY seq;

-- 5. Set-returning functions as tools: the rows as a JSON array
CREATE FUNCTION h86_cities(country text) RETURNS SETOF text LANGUAGE sql AS $$
  SELECT c FROM unnest(ARRAY['Paris', 'Lyon']) c WHERE country = 'FR' $$;
CREATE FUNCTION h86_rows(n integer) RETURNS TABLE (i integer, sq integer) LANGUAGE sql AS $$
  SELECT g, g * g FROM generate_series(1, n) g $$;
SELECT adk_define_tool('h86_cities(text)'::regprocedure);
SELECT adk_define_tool('h86_rows(integer)'::regprocedure);
SELECT adk_define_agent('h86_srf', model => 'h86_m1', tools => ARRAY['h86_cities', 'h86_rows']);
SELECT adk_define_app('h86_srf_app', 'h86_srf');
SELECT count(*) FROM adk_run('h86_srf_app', 'u', 'srf-1',
  'call h86_cities({"country": "FR"}) call h86_cities({"country": "XX"}) call h86_rows({"n": 2})');
SELECT seq, author, coalesce(text, function_responses::text) AS what
  FROM adk.event_log WHERE session_id = 'srf-1' AND author <> 'user' ORDER BY seq;
