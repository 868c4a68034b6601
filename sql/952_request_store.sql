-- The request stored in adk.model_calls is put together from the bytes of
-- its parts (model/request_jsonb.c): the jsonb of each message kept for
-- later requests, the body's members.  It must be the jsonb that
-- converting the whole body would give: every key found by lookup (keys
-- sorted as jsonb sorts them), every element by index (offsets), equal to
-- its own text read back, with scalars of every kind at every level.
SELECT adk_set_secret('rs-key', 'sk-rs', ARRAY['127.0.0.1']);
SELECT adk_define_model('rs_model', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'rs-key');
CREATE FUNCTION rs_probe(n int) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('n', n, 'pi', 3.14159, 'big', 123456789012345678901234567890,
                            'ok', true, 'none', null, 'list', jsonb_build_array(1, 'two', false)) $$;
SELECT adk_define_tool('rs_probe(integer)'::regprocedure, name => 'probe');
-- every answer is a call of probe: a tool loop until max_llm_calls
CREATE FUNCTION rs_loop(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT '{"content": {"role": "model", "parts": [{"function_call": {"name": "probe", "args": {"n": 7}}}]}}'::jsonb $$;
SELECT adk_define_plugin('rs_loop', after_model => 'rs_loop(jsonb)');
SELECT adk_define_agent('rs_agent', model => 'rs_model', instruction => 'You probe.', tools => ARRAY['probe'],
                        generate_config => '{"temperature": 0.25, "max_output_tokens": 64, "stop_sequences": ["END", "STOP"]}');
SELECT adk_define_app('rs_app', 'rs_agent', plugins => ARRAY['rs_loop']);
SELECT adk_create_session('rs_app', 'u', 'h') IS NOT NULL AS created;
-- a history of text: every content of it is kept after the first request
SELECT count(*) AS appended FROM (
  SELECT adk_append_event('rs_app', 'u', 'h',
           jsonb_build_object('author', CASE WHEN i % 2 = 1 THEN 'user' ELSE 'rs_agent' END,
                              'content', jsonb_build_object('role', CASE WHEN i % 2 = 1 THEN 'user' ELSE 'model' END,
                                'parts', jsonb_build_array(jsonb_build_object('text',
                                  'Line ' || i || repeat(' ünïcödé "quoted" \ back', i % 5))))))
    FROM generate_series(1, 40) i) a;
-- three runs in this backend, the last two streamed: the later requests
-- copy the kept messages' jsonb
SELECT count(*) > 0 AS ran FROM adk_run('rs_app', 'u', 'h', 'go', NULL, '{"max_llm_calls": 3}');
SELECT count(*) > 0 AS ran FROM adk_run('rs_app', 'u', 'h', 'again', NULL, '{"max_llm_calls": 3, "stream": true}');
SELECT count(*) > 0 AS ran FROM adk_run('rs_app', 'u', 'h', 'more', NULL, '{"max_llm_calls": 3, "stream": true}');

CREATE TEMP VIEW rs_requests AS
  SELECT c.id, c.request FROM adk.model_calls c JOIN adk.invocations i USING (invocation_id)
   WHERE i.app_name = 'rs_app';
SELECT count(*) AS requests,
       count(*) FILTER (WHERE request ? 'stream') AS streamed,
       min(jsonb_array_length(request -> 'messages')) AS fewest_messages,
       max(jsonb_array_length(request -> 'messages')) AS most_messages
  FROM rs_requests;
-- equal to its text read back, and that text unchanged by a round trip
SELECT bool_and(request = request::text::jsonb) AS equals_reparsed,
       bool_and(request::text = request::text::jsonb::text) AS same_text
  FROM rs_requests;
-- every key of the body and of its object members found by lookup
SELECT bool_and(r.request -> k.key = k.value) AS body_keys_found
  FROM rs_requests r, jsonb_each(r.request) k;
SELECT bool_and(r.request -> k.key -> m.key = m.value) AS member_keys_found
  FROM rs_requests r, jsonb_each(r.request) k, jsonb_each(k.value) m
 WHERE jsonb_typeof(k.value) = 'object';
-- every message found by index, and its keys by lookup
SELECT bool_and(r.request -> 'messages' -> (m.i - 1)::int = m.msg) AS messages_by_index,
       bool_and(m.msg -> 'role' IS NOT NULL) AS roles_found,
       count(*) FILTER (WHERE strpos(m.msg ->> 'content', 'ünïcödé "quoted" \ back') > 0) > 0 AS text_kept
  FROM rs_requests r, jsonb_array_elements(r.request -> 'messages') WITH ORDINALITY m(msg, i);
-- scalars of every kind at the body's levels: numbers, booleans, strings
SELECT DISTINCT request -> 'temperature' AS temperature, request -> 'max_tokens' AS max_tokens,
       request -> 'stop' AS stop, request -> 'stream' AS stream, request -> 'stream_options' AS stream_options
  FROM rs_requests ORDER BY 4 NULLS FIRST;
-- containment and paths go through the same binary search
SELECT count(*) FILTER (WHERE request @> '{"messages": [{"role": "system"}, {"role": "tool"}]}') AS with_system_and_tool,
       count(*) FILTER (WHERE request #>> '{messages,1,role}' = 'user') AS second_is_user
  FROM rs_requests;

-- Tool turns: a content with calls or responses is given its ids over the
-- request ("call_<n>" for a call without one), so its messages are kept
-- per content and ids (msg_cache.c).  The same call of probe stands in
-- many places, each with other ids; responses answer by name.  The
-- requests are the same with the cache as without it (adk.request_cache_size
-- = 0), in a backend that already made them once and in one that did not.
SELECT adk_create_session('rs_app', 'u', 'tools-' || k) IS NOT NULL AS created
  FROM generate_series(1, 2) k;
CREATE FUNCTION rs_tool_turns(s text) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(adk_append_event('rs_app', 'u', s,
           CASE i % 4
             WHEN 1 THEN jsonb_build_object('author', 'user', 'content', jsonb_build_object('role', 'user',
                           'parts', jsonb_build_array(jsonb_build_object('text', 'Question ' || (i / 4)))))
             WHEN 2 THEN jsonb_build_object('author', 'rs_agent', 'content', jsonb_build_object('role', 'model',
                           'parts', jsonb_build_array(jsonb_build_object('function_call',
                             jsonb_build_object('id', 'adk-' || md5(i::text), 'name', 'probe', 'args', '{"n": 7}'::jsonb)))))
             WHEN 3 THEN jsonb_build_object('author', 'rs_agent', 'content', jsonb_build_object('role', 'user',
                           'parts', jsonb_build_array(jsonb_build_object('function_response',
                             jsonb_build_object('id', 'adk-' || md5((i - 1)::text), 'name', 'probe',
                                                'response', '{"n": 7}'::jsonb)))))
             ELSE jsonb_build_object('author', 'rs_agent', 'content', jsonb_build_object('role', 'model',
                    'parts', jsonb_build_array(jsonb_build_object('text', 'Answer ' || (i / 4)))))
           END))
    FROM generate_series(1, 24) i $$;
SELECT rs_tool_turns('tools-1') AS appended, rs_tool_turns('tools-2') AS appended;
SELECT count(*) > 0 AS ran FROM adk_run('rs_app', 'u', 'tools-1', 'go', NULL, '{"max_llm_calls": 4}');
SET adk.request_cache_size = 0;
SELECT count(*) > 0 AS ran FROM adk_run('rs_app', 'u', 'tools-2', 'go', NULL, '{"max_llm_calls": 4}');
RESET adk.request_cache_size;
CREATE TEMP VIEW rs_tool_requests AS
  SELECT i.session_id, row_number() OVER (PARTITION BY i.session_id ORDER BY c.id) AS n, c.request
    FROM adk.model_calls c JOIN adk.invocations i USING (invocation_id)
   WHERE i.app_name = 'rs_app' AND i.session_id LIKE 'tools-%';
SELECT a.n AS request, a.request = b.request AS same_without_cache,
       jsonb_array_length(a.request -> 'messages') AS messages,
       (SELECT count(DISTINCT m ->> 'tool_call_id') FROM jsonb_array_elements(a.request -> 'messages') m
         WHERE m ->> 'role' = 'tool') AS tool_ids
  FROM rs_tool_requests a JOIN rs_tool_requests b ON b.session_id = 'tools-2' AND b.n = a.n
 WHERE a.session_id = 'tools-1' ORDER BY 1;
