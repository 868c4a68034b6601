-- A run keeps what each event adds to a request (prompt.c): an event with
-- calls or responses keeps its piece only for the pairing it was made
-- with.  Here a tool writes another runtime's turn into the session in
-- two halves while the run goes on: first a call without its response,
-- which the next request must leave out; then the response, which lands
-- between the run's own call and its response, so the request after it
-- leaves both out too (ADK: when the newest event is a response, the
-- events between its call and it are left out); the request after that
-- sends both, the call in its place and the response right after it.
-- Later a second response to that call comes the same way: once it is
-- sent, it replaces the first (ADK: of two responses to one call id the
-- later wins).
SELECT adk_set_secret('pp-key', 'sk-pp', ARRAY['127.0.0.1']);
SELECT adk_define_model('pp_model', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'pp-key');
CREATE SEQUENCE pp_calls;
CREATE FUNCTION pp_tool() RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE n bigint := nextval('pp_calls');
BEGIN
  IF n = 1 THEN
    PERFORM adk_append_event('pp_app', 'u', 's',
      '{"author": "pp_agent", "content": {"role": "model", "parts": [{"function_call": {"id": "late-1", "name": "slow", "args": {"q": 1}}}]}}');
  ELSIF n = 2 THEN
    PERFORM adk_append_event('pp_app', 'u', 's',
      '{"author": "pp_agent", "content": {"role": "user", "parts": [{"function_response": {"id": "late-1", "name": "slow", "response": {"done": true}}}]}}');
  ELSIF n = 4 THEN
    PERFORM adk_append_event('pp_app', 'u', 's',
      '{"author": "pp_agent", "content": {"role": "user", "parts": [{"function_response": {"id": "late-1", "name": "slow", "response": {"done": "again"}}}]}}');
  END IF;
  RETURN jsonb_build_object('n', n);
END $$;
SELECT adk_define_tool('pp_tool()'::regprocedure, name => 'step');
-- every answer is a call of step: a tool loop until max_llm_calls
CREATE FUNCTION pp_loop(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT '{"content": {"role": "model", "parts": [{"function_call": {"name": "step", "args": {}}}]}}'::jsonb $$;
SELECT adk_define_plugin('pp_loop', after_model => 'pp_loop(jsonb)');
SELECT adk_define_agent('pp_agent', model => 'pp_model', instruction => 'You step.', tools => ARRAY['step']);
SELECT adk_define_app('pp_app', 'pp_agent', plugins => ARRAY['pp_loop']);
SELECT adk_create_session('pp_app', 'u', 's') IS NOT NULL AS created;
SELECT count(*) > 0 AS ran FROM adk_run('pp_app', 'u', 's', 'go', NULL, '{"max_llm_calls": 6}');

-- per request: where the late call and its response are, and whether
-- each of the run's own step calls is directly followed by its response
SELECT row_number() OVER (ORDER BY c.id) AS request,
       (SELECT min(m.i) FROM jsonb_array_elements(c.request -> 'messages') WITH ORDINALITY m(msg, i)
         WHERE m.msg -> 'tool_calls' @> '[{"id": "late-1"}]') AS late_call_at,
       (SELECT min(m.i) FROM jsonb_array_elements(c.request -> 'messages') WITH ORDINALITY m(msg, i)
         WHERE m.msg ->> 'tool_call_id' = 'late-1') AS late_response_at,
       (SELECT string_agg(m.msg ->> 'content', ', ') FROM jsonb_array_elements(c.request -> 'messages') m(msg)
         WHERE m.msg ->> 'tool_call_id' = 'late-1') AS late_response,
       (SELECT count(*) FROM jsonb_array_elements(c.request -> 'messages') WITH ORDINALITY m(msg, i)
         WHERE m.msg -> 'tool_calls' -> 0 -> 'function' ->> 'name' = 'step'
           AND c.request -> 'messages' -> (m.i::int) ->> 'tool_call_id' =
               m.msg -> 'tool_calls' -> 0 ->> 'id') AS step_pairs,
       jsonb_array_length(c.request -> 'messages') AS messages
  FROM adk.model_calls c JOIN adk.invocations i USING (invocation_id)
 WHERE i.app_name = 'pp_app'
 ORDER BY c.id;
