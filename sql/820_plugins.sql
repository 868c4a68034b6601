-- Plugins: SQL functions taking and returning jsonb; NULL = no change.
CREATE TABLE plugin_log (callback text, agent text);
CREATE FUNCTION log_all(ctx jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO plugin_log VALUES (ctx ->> 'callback', ctx ->> 'agent');
  RETURN NULL;
END $$;
SELECT adk_define_plugin('logger', on_user_message => 'log_all(jsonb)', before_run => 'log_all(jsonb)',
                         on_event => 'log_all(jsonb)', after_run => 'log_all(jsonb)',
                         before_agent => 'log_all(jsonb)', after_agent => 'log_all(jsonb)',
                         before_model => 'log_all(jsonb)', after_model => 'log_all(jsonb)',
                         before_tool => 'log_all(jsonb)', after_tool => 'log_all(jsonb)');
SELECT adk_define_app('logged_app', 'weather_agent', plugins => ARRAY['logger']);
SELECT count(*) FROM adk_run('logged_app', 'u', 'g1', 'What is the weather in Paris?');
-- every callback, in the order of work
SELECT string_agg(callback, ' > ' ORDER BY ctid) AS calls FROM plugin_log;

-- on_user_message replaces the message
CREATE FUNCTION shout(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('role', 'user', 'parts',
         jsonb_build_array(jsonb_build_object('text', upper(ctx #>> '{user_content,parts,0,text}')))) $$;
SELECT adk_define_plugin('shouter', on_user_message => 'shout(jsonb)');
SELECT adk_define_app('shout_app', 'weather_agent', plugins => ARRAY['shouter']);
SELECT event_data #>> '{content,parts,0,text}' AS text
  FROM adk_run('shout_app', 'u', 'g2', 'quiet words', NULL, '{"yield_user_message": true}') ORDER BY seq;

-- on_event replaces one event and rejects another
CREATE FUNCTION censor(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT CASE
    WHEN ctx #>> '{event,content,parts,0,text}' LIKE 'echo: secret%' THEN 'false'::jsonb
    WHEN ctx #>> '{event,content,parts,0,text}' LIKE 'echo:%'
      THEN jsonb_set(ctx -> 'event', '{content,parts,0,text}', '"[edited]"')
  END $$;
SELECT adk_define_plugin('censor', on_event => 'censor(jsonb)');
SELECT adk_define_app('censor_app', 'weather_agent', plugins => ARRAY['censor']);
SELECT event_data #>> '{content,parts,0,text}' AS returned FROM adk_run('censor_app', 'u', 'g3', 'hello');
SELECT text AS stored FROM adk.event_log WHERE session_id = 'g3' ORDER BY seq;
SELECT count(*) AS returned FROM adk_run('censor_app', 'u', 'g4', 'secret plans');
SELECT author, text AS stored FROM adk.event_log WHERE session_id = 'g4' ORDER BY seq;

-- before_run ends the run early with its own content
CREATE FUNCTION closed(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT '{"role": "model", "parts": [{"text": "We are closed today."}]}'::jsonb $$;
SELECT adk_define_plugin('closed', before_run => 'closed(jsonb)');
SELECT adk_define_app('closed_app', 'weather_agent', plugins => ARRAY['closed']);
SELECT event_data ->> 'author' AS author, event_data #>> '{content,parts,0,text}' AS text
  FROM adk_run('closed_app', 'u', 'g5', 'What is the weather in Rome?');
SELECT count(*) AS model_calls FROM adk.model_calls
 WHERE invocation_id = (SELECT invocation_id FROM adk.events WHERE session_id = 'g5' LIMIT 1);

-- before_model answers instead of the model; before_tool instead of the tool
CREATE FUNCTION canned(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT '{"content": {"role": "model", "parts": [{"text": "canned answer"}]}}'::jsonb $$;
SELECT adk_define_plugin('canned', before_model => 'canned(jsonb)');
SELECT adk_define_app('canned_app', 'weather_agent', plugins => ARRAY['canned']);
SELECT event_data #>> '{content,parts,0,text}' AS text FROM adk_run('canned_app', 'u', 'g6', 'hi');
CREATE FUNCTION fake_weather(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT CASE WHEN ctx #>> '{tool,name}' = 'get_weather'
              THEN '{"city": "Oslo", "forecast": "snow", "temperature_c": -3}'::jsonb END $$;
SELECT adk_define_plugin('fake_weather', before_tool => 'fake_weather(jsonb)');
SELECT adk_define_app('fake_app', 'weather_agent', plugins => ARRAY['fake_weather']);
SELECT seq, function_responses, text FROM run_log('fake_app', 'u', 'g7', 'What is the weather in Oslo?');

-- on_model_error turns a failure into an answer
CREATE FUNCTION recover(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('content', jsonb_build_object('role', 'model', 'parts',
         jsonb_build_array(jsonb_build_object('text', 'fallback after ' || (ctx #>> '{error,error_code}'))))) $$;
SELECT adk_define_plugin('recover', on_model_error => 'recover(jsonb)');
SELECT adk_define_agent('fragile', model => 'broken');
SELECT adk_define_app('recover_app', 'fragile', plugins => ARRAY['recover']);
SELECT event_data #>> '{content,parts,0,text}' AS text FROM adk_run('recover_app', 'u', 'g8', 'hi');

-- a plugin that raises: its event is not stored, an error event is, the
-- invocation fails, adk_run returns normally
CREATE FUNCTION explode(ctx jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'plugin bug';
END $$;
SELECT adk_define_plugin('exploding', after_model => 'explode(jsonb)');
SELECT adk_define_app('explode_app', 'weather_agent', plugins => ARRAY['exploding']);
SELECT seq, event_data ->> 'error_code' AS error_code, event_data ->> 'error_message' AS error_message
  FROM adk_run('explode_app', 'u', 'g9', 'hi');
SELECT author, error FROM adk.event_log WHERE session_id = 'g9' ORDER BY seq;
SELECT status, error_code FROM adk.invocations WHERE session_id = 'g9';

-- a before_run plugin that raises: the user event and the error event are
-- stored, the agent never runs (no model call)
SELECT adk_define_plugin('exploding_early', before_run => 'explode(jsonb)');
SELECT adk_define_app('explode_early_app', 'weather_agent', plugins => ARRAY['exploding_early']);
SELECT count(*) FROM adk_run('explode_early_app', 'u', 'g10', 'hi');
SELECT author, error FROM adk.event_log WHERE session_id = 'g10' ORDER BY seq;
SELECT i.status, i.error_code, i.model_calls FROM adk.invocations i WHERE i.session_id = 'g10';
