-- Output a person reads in psql: adk.event_log carries the event id;
-- adk.stat_models, adk.stat_tools and adk.costs round their times (to a
-- tenth of a millisecond) and costs (to millionths); adk_run_summary
-- shows a run as one short line per event.
SELECT adk_set_secret('ro-key', 'sk-ro', ARRAY['127.0.0.1']);
SELECT adk_define_model('ro_model', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'ro-key');
UPDATE adk.models SET price = '{"input": 0.3, "output": 1.7}' WHERE name = 'ro_model';
CREATE FUNCTION ro_weather(city text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('city', city, 'forecast', 'sunny', 'temperature_c', 25) $$;
COMMENT ON FUNCTION ro_weather(text) IS 'Current weather for a city.';
SELECT adk_define_tool('ro_weather(text)'::regprocedure, name => 'get_weather');
SELECT adk_define_agent('ro_agent', model => 'ro_model', instruction => 'You answer weather questions.',
                        tools => ARRAY['get_weather']);
SELECT adk_define_app('ro_app', 'ro_agent');
SELECT count(*) AS events FROM adk_run('ro_app', 'u1', 's1', 'What is the weather in Hangzhou?');
SELECT count(*) AS events FROM adk_run('ro_app', 'u1', 's1', 'Thanks!');

-- the event id, as the view's last column: the stored event's id
SELECT l.seq, l.event_id = e.id AS same_id
  FROM adk.event_log l JOIN adk.events e USING (app_name, user_id, session_id, seq)
 WHERE l.app_name = 'ro_app' ORDER BY l.seq;
SELECT attname FROM pg_attribute
 WHERE attrelid = 'adk.event_log'::regclass AND attnum > 0 ORDER BY attnum DESC LIMIT 1;

-- what the run did: the session's newest run, then the first one by its id
SELECT * FROM adk_run_summary('ro_app', 'u1', 's1');
SELECT regexp_replace(event, 'call_[A-Za-z0-9]+', 'call_<id>', 'g') AS event
  FROM adk_run_summary('ro_app', 'u1', 's1',
                       (SELECT invocation_id FROM adk.events WHERE app_name = 'ro_app' AND seq = 1));
-- a long line is cut to 100 characters
SELECT count(*) FROM adk_run('ro_app', 'u1', 's2', repeat('long words ', 30));
SELECT seq, length(event), right(event, 1) AS last FROM adk_run_summary('ro_app', 'u1', 's2');
-- an unknown invocation: no rows; an unknown session: the session error
SELECT * FROM adk_run_summary('ro_app', 'u1', 's1', 'e-nope');
SELECT * FROM adk_run_summary('ro_app', 'u1', 'nope');

-- rounded: times to a tenth of a millisecond, costs to millionths
SELECT model, calls, scale(total_time_ms) AS total_scale, scale(mean_time_ms) AS mean_scale
  FROM adk.stat_models WHERE model = 'ro_model';
SELECT tool, calls >= 1 AS called, scale(total_time_ms) AS total_scale, scale(mean_time_ms) AS mean_scale
  FROM adk.stat_tools WHERE tool = 'get_weather';
SELECT model, model_calls, scale(cost) AS cost_scale,
       cost = round((input_tokens * 0.3 + output_tokens * 1.7) / 1e6, 6) AS cost_rounded
  FROM adk.costs WHERE app_name = 'ro_app';
