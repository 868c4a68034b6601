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
