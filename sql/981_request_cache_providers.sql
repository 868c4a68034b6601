-- Gemini and Anthropic requests reuse what each history content made
-- (src/model/msg_cache.c, LlmRequestSpec.reuse): the
-- requests stored in adk.model_calls are the same with the cache off
-- (adk.request_cache_size = 0), on, and warm (made by another run in flight
-- in the backend), over histories of text, calls with and without ids,
-- their responses, thoughts, inline data and another agent's events.
SELECT adk_set_secret('rc98-key', 'sk-rc98', ARRAY['127.0.0.1']);
SELECT adk_define_model('rc98_gemini', 'gemini', current_setting('adk_test.model_url'), 'gemini-test',
                        api_key_secret => 'rc98-key');
SELECT adk_define_model('rc98_anthropic', 'anthropic', current_setting('adk_test.model_url'), 'claude-test',
                        api_key_secret => 'rc98-key');
CREATE FUNCTION rc98_probe(n integer) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('probed', n) $$;
COMMENT ON FUNCTION rc98_probe(integer) IS 'Probe.';
SELECT adk_define_tool('rc98_probe(integer)'::regprocedure);
-- every answer becomes a call of rc98_probe (a tool loop until
-- max_llm_calls): with an id at every other call (the session's events
-- come in pairs of call and response), else without (the runner then gives it an "adk-" id, which is not
-- sent)
CREATE FUNCTION rc98_loop(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('content', jsonb_build_object('role', 'model', 'parts', jsonb_build_array(
           jsonb_build_object('text', 'Probing ' || n || '.'),
           jsonb_build_object('function_call',
             jsonb_build_object('name', 'rc98_probe', 'args', jsonb_build_object('n', n))
             || CASE WHEN n / 2 % 2 = 0 THEN jsonb_build_object('id', 'toolu_rc98_' || n) ELSE '{}' END))))
    FROM (SELECT count(*)::integer AS n FROM adk.event_log
           WHERE app_name = ctx ->> 'app_name' AND session_id = ctx ->> 'session_id') e $$;
SELECT adk_define_plugin('rc98_loop', after_model => 'rc98_loop(jsonb)');
SELECT adk_define_agent('rc98_gem', model => 'rc98_gemini', instruction => 'You probe.',
                        tools => ARRAY['rc98_probe']);
SELECT adk_define_agent('rc98_ant', model => 'rc98_anthropic', instruction => 'You probe.',
                        tools => ARRAY['rc98_probe']);
SELECT adk_define_app('rc98_gem_app', 'rc98_gem', plugins => ARRAY['rc98_loop']);
SELECT adk_define_app('rc98_ant_app', 'rc98_ant', plugins => ARRAY['rc98_loop']);

-- a session with a history of every kind of content
CREATE FUNCTION rc98_session(app text, agent text, s text) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE e jsonb; n integer := 0;
BEGIN
  PERFORM adk_create_session(app, 'u', s);
  FOR e IN SELECT v.e FROM (VALUES
      (1, jsonb_build_object('author', 'user', 'content',
            '{"role": "user", "parts": [{"text": "Probe twice."}]}'::jsonb)),
      (2, jsonb_build_object('author', agent, 'content',
            '{"role": "model", "parts": [{"text": "Thinking.", "thought": true},
               {"text": "Probing."},
               {"function_call": {"id": "toolu_h1", "name": "rc98_probe", "args": {"n": 1}},
                "thought_signature": "c2lnMQ=="}]}'::jsonb)),
      (3, jsonb_build_object('author', agent, 'content',
            '{"role": "user", "parts": [{"function_response": {"id": "toolu_h1", "name": "rc98_probe",
               "response": {"probed": 1}}}]}'::jsonb)),
      (4, jsonb_build_object('author', agent, 'content',
            '{"role": "model", "parts": [{"function_call": {"name": "rc98_probe", "args": {"n": 2}}}]}'::jsonb)),
      (5, jsonb_build_object('author', agent, 'content',
            '{"role": "user", "parts": [{"function_response": {"name": "rc98_probe",
               "response": {"probed": 2}}}]}'::jsonb)),
      (6, jsonb_build_object('author', 'rc98_other', 'content',
            '{"role": "model", "parts": [{"text": "I probe too."},
               {"function_call": {"id": "toolu_o1", "name": "rc98_probe", "args": {"n": 3}}}]}'::jsonb)),
      (7, jsonb_build_object('author', 'rc98_other', 'content',
            '{"role": "user", "parts": [{"function_response": {"id": "toolu_o1", "name": "rc98_probe",
               "response": {"probed": 3}}}]}'::jsonb)),
      (8, jsonb_build_object('author', 'user', 'content',
            '{"role": "user", "parts": [{"text": "And this one:"},
               {"inline_data": {"mime_type": "image/png", "data": "iVBORw0KGgo="}}]}'::jsonb)),
      (9, jsonb_build_object('author', agent, 'content',
            '{"role": "model", "parts": [{"text": "Done."}]}'::jsonb))) v(o, e) ORDER BY o
  LOOP
    PERFORM adk_append_event(app, 'u', s, e);
    n := n + 1;
  END LOOP;
  RETURN n;
END $$;

-- the requests of a session's model calls, in order
CREATE FUNCTION rc98_requests(app text, s text) RETURNS jsonb[] LANGUAGE sql AS $$
  SELECT array_agg(c.request ORDER BY c.id)
    FROM adk.model_calls c JOIN adk.invocations i USING (invocation_id)
   WHERE i.app_name = app AND i.session_id = s $$;

CREATE FUNCTION rc98_run(app text, s text) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM adk_run(app, 'u', s, 'Go on.', NULL, '{"max_llm_calls": 6}') $$;

SELECT rc98_session('rc98_gem_app', 'rc98_gem', s), rc98_session('rc98_ant_app', 'rc98_ant', s)
  FROM unnest(ARRAY['off', 'on', 'w1', 'w2']) s;

-- without the cache
SET adk.request_cache_size = 0;
SELECT rc98_run('rc98_gem_app', 'off') AS gem_events, rc98_run('rc98_ant_app', 'off') AS ant_events;
RESET adk.request_cache_size;
-- with it: each call reuses what the run's earlier calls made
SELECT rc98_run('rc98_gem_app', 'on') AS gem_events, rc98_run('rc98_ant_app', 'on') AS ant_events;
-- warm: w2 runs while w1 is in flight in this backend, so its first
-- request already finds what w1's requests made of the same history
BEGIN;
DECLARE g CURSOR FOR SELECT adk_run('rc98_gem_app', 'u', 'w1', 'Go on.', NULL, '{"max_llm_calls": 6}');
DECLARE a CURSOR FOR SELECT adk_run('rc98_ant_app', 'u', 'w1', 'Go on.', NULL, '{"max_llm_calls": 6}');
MOVE 5 IN g;
MOVE 5 IN a;
SELECT rc98_run('rc98_gem_app', 'w2') AS gem_events, rc98_run('rc98_ant_app', 'w2') AS ant_events;
MOVE ALL IN g;
MOVE ALL IN a;
COMMIT;

-- every run made 6 calls, each carrying the whole history
SELECT app, s, cardinality(rc98_requests(app, s)) AS calls,
       rc98_requests(app, s) = rc98_requests(app, 'off') AS same_as_without_cache
  FROM unnest(ARRAY['rc98_gem_app', 'rc98_ant_app']) app, unnest(ARRAY['off', 'on', 'w1', 'w2']) s
 ORDER BY 1 DESC, 2;

-- what the last request held: the mix is there
SELECT jsonb_array_length(r -> 'contents') AS contents,
       jsonb_path_query_array(r, '$.contents[*].role') AS roles,
       jsonb_path_query_array(r, '$.contents[*].parts[*].functionCall.id') AS call_ids,
       jsonb_array_length(jsonb_path_query_array(r, '$.contents[*].parts[*].functionCall')) AS calls,
       jsonb_array_length(jsonb_path_query_array(r, '$.contents[*].parts[*].functionResponse')) AS responses,
       jsonb_path_query_array(r, '$.contents[*].parts[*] ? (@.thought == true).text') AS thoughts,
       jsonb_path_query_array(r, '$.contents[*].parts[*].thoughtSignature') AS signatures,
       jsonb_path_query_array(r, '$.contents[*].parts[*].inlineData.mimeType') AS inline,
       jsonb_path_query_array(r, '$.contents[*].parts[*].text ? (@ starts with "For context")') AS context
  FROM (SELECT (rc98_requests('rc98_gem_app', 'off'))[6] AS r) x;
SELECT jsonb_array_length(r -> 'messages') AS messages,
       jsonb_path_query_array(r, '$.messages[*].role') AS roles,
       jsonb_path_query_array(r, '$.messages[*].content[*] ? (@.type == "tool_use").id') AS call_ids,
       jsonb_path_query_array(r, '$.messages[*].content[*] ? (@.type == "tool_result").tool_use_id') AS result_ids,
       jsonb_path_query_array(r, '$.messages[*].content[*] ? (@.type == "image").source.media_type') AS images,
       jsonb_path_query_array(r, '$.messages[*].content[*].text ? (@ starts with "For context")') AS context
  FROM (SELECT (rc98_requests('rc98_ant_app', 'off'))[6] AS r) x;
