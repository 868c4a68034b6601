-- Non-ASCII text end to end, for each provider, unary and streamed: model
-- answers, tool-call arguments and tool results, stored events and state.
-- The local model server sends UTF-8 as raw bytes, not \u escapes.  json-c
-- 0.18 (Debian 13, where PostgreSQL 17 comes from) refuses valid multi-byte
-- UTF-8 in a parse with both JSON_TOKENER_STRICT and
-- JSON_TOKENER_VALIDATE_UTF8, so this file runs on every supported server.
SELECT adk_set_secret('na98-key', 'sk-na98', ARRAY['127.0.0.1']);
SELECT adk_define_model('na98_' || p, p,
                        current_setting('adk_test.model_url') || CASE p WHEN 'openai' THEN '/v1' ELSE '' END,
                        p || '-test', api_key_secret => 'na98-key')
  FROM unnest(ARRAY['openai', 'gemini', 'anthropic']) p;

-- adk_generate: the seed's Chinese question comes back in the echo
SELECT p, r #>> '{content,parts,0,text}' AS answer, r ->> 'error_code' AS error
  FROM unnest(ARRAY['openai', 'gemini', 'anthropic']) p,
       adk_generate('na98_' || p, '[{"role": "user", "parts": [{"text": "杭州的天气怎么样？"}]}]') r;

-- a tool whose argument and result are not ASCII
CREATE FUNCTION na98_lookup(city text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('city', city, 'forecast', city || '：晴，19°C') $$;
COMMENT ON FUNCTION na98_lookup(text) IS 'Weather for a city, in Chinese.';
SELECT adk_define_tool('na98_lookup(text)'::regprocedure);
SELECT adk_define_agent('na98_' || p || '_agent', model => 'na98_' || p, instruction => '你是天气助手。',
                        tools => ARRAY['na98_lookup'])
  FROM unnest(ARRAY['openai', 'gemini', 'anthropic']) p;
SELECT adk_define_app('na98_' || p, 'na98_' || p || '_agent')
  FROM unnest(ARRAY['openai', 'gemini', 'anthropic']) p;

-- a run per provider, unary and streamed: the call's arguments, the tool's
-- result and the model's answer on it keep their characters
CREATE TEMP TABLE na98_runs AS
SELECT p, s AS stream, r.*
  FROM unnest(ARRAY['openai', 'gemini', 'anthropic']) p, unnest(ARRAY[false, true]) s,
       adk_run('na98_' || p, 'ü', '会话-' || p || '-' || s, 'call na98_lookup({"city": "杭州"})', NULL,
               jsonb_build_object('stream', s)) r
 WHERE NOT r.partial;
SELECT p, stream, seq, event_data ->> 'author' AS author,
       event_data #> '{content,parts,0,function_call,args}' AS args,
       event_data #> '{content,parts,0,function_response,response}' AS response,
       event_data #>> '{content,parts,0,text}' AS text,
       event_data ->> 'error_code' AS error
  FROM na98_runs ORDER BY p, stream, seq;

-- a streamed answer in Chinese: the pieces (8 characters each, cut inside
-- no character) and the stored whole
SELECT string_agg(event_data #>> '{content,parts,0,text}', '|' ORDER BY ordinality) AS pieces
  FROM adk_run('na98_anthropic', 'ü', '会话-stream', '杭州的天气怎么样？', NULL, '{"stream": true}')
       WITH ORDINALITY
 WHERE partial;
SELECT seq, author, text, error FROM adk.event_log
 WHERE app_name = 'na98_anthropic' AND session_id = '会话-stream' ORDER BY seq;

-- the ledger: every call succeeded, and the answers it kept are the same text
SELECT provider, stream, count(*) AS calls, count(error_code) AS errors,
       bool_and(response::text LIKE '%杭州%') AS kept
  FROM adk.model_calls WHERE model LIKE 'na98_%' GROUP BY provider, stream ORDER BY provider, stream;
SELECT status, count(*) FROM adk.invocations WHERE app_name LIKE 'na98_%' GROUP BY status;

-- events and state written through the API, read back
SELECT adk_create_session('na98_events', 'ü', '会话-1', '{"城市": "杭州"}') -> 'state' AS state;
SELECT adk_append_event('na98_events', 'ü', '会话-1', '{"author": "天气助手",
         "content": {"role": "model", "parts": [{"text": "杭州：晴，19°C。"}]},
         "actions": {"state_delta": {"天气": "晴", "user:语言": "中文", "app:单位": "°C"}}}')
       #> '{actions,state_delta}' AS delta;
SELECT s -> 'state' AS state, s #>> '{events,0,author}' AS author,
       s #>> '{events,0,content,parts,0,text}' AS text
  FROM adk_get_session('na98_events', 'ü', '会话-1') s;
SELECT seq, author, text FROM adk.event_log WHERE app_name = 'na98_events' ORDER BY seq;
