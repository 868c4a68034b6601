-- A run's requests extend each other (prompt.c, memo_resume_at): the
-- contents of the events before the first new one are copied from the
-- previous request, unless a new event shares an id with them.  With
-- adk.verify_incremental every request is also built from the whole
-- history and compared (an error when they differ).  Here the history
-- holds, far back, another runtime's call with no response (old-1, left
-- out), and the run's tool writes into the session while the run goes
-- on: the response to old-1 (so the call far back is sent again, with
-- its response moved up after it), a second response to it (the later
-- wins), an unrelated call and response of another agent (context), and
-- an event of another branch (sent: a run at the root branch sees every
-- branch, as in ADK).
SET adk.verify_incremental = on;
SELECT adk_set_secret('pi-key', 'sk-pi', ARRAY['127.0.0.1']);
SELECT adk_define_model('pi_model', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'pi-key');
CREATE SEQUENCE pi_calls;
CREATE FUNCTION pi_tool() RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE n bigint := nextval('pi_calls');
BEGIN
  IF n = 1 THEN
    PERFORM adk_append_event('pi_app', 'u', 's',
      '{"author": "pi_agent", "content": {"role": "user", "parts": [{"function_response": {"id": "old-1", "name": "slow", "response": {"done": 1}}}]}}');
  ELSIF n = 3 THEN
    PERFORM adk_append_event('pi_app', 'u', 's',
      '{"author": "pi_agent", "content": {"role": "user", "parts": [{"function_response": {"id": "old-1", "name": "slow", "response": {"done": 2}}}]}}');
  ELSIF n = 4 THEN
    PERFORM adk_append_event('pi_app', 'u', 's',
      '{"author": "helper", "content": {"role": "model", "parts": [{"function_call": {"id": "h-1", "name": "look", "args": {}}}]}}');
    PERFORM adk_append_event('pi_app', 'u', 's',
      '{"author": "helper", "content": {"role": "user", "parts": [{"function_response": {"id": "h-1", "name": "look", "response": {"saw": "x"}}}]}}');
    PERFORM adk_append_event('pi_app', 'u', 's',
      '{"author": "pi_agent", "branch": "elsewhere", "content": {"role": "model", "parts": [{"text": "not for us"}]}}');
  END IF;
  RETURN jsonb_build_object('n', n);
END $$;
SELECT adk_define_tool('pi_tool()'::regprocedure, name => 'step');
CREATE FUNCTION pi_loop(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT '{"content": {"role": "model", "parts": [{"function_call": {"name": "step", "args": {}}}]}}'::jsonb $$;
SELECT adk_define_plugin('pi_loop', after_model => 'pi_loop(jsonb)');
SELECT adk_define_agent('pi_agent', model => 'pi_model', instruction => 'You step.', tools => ARRAY['step']);
SELECT adk_define_app('pi_app', 'pi_agent', plugins => ARRAY['pi_loop']);
SELECT adk_create_session('pi_app', 'u', 's') IS NOT NULL AS created;
-- the history: a question, the call old-1 (its response never came), and
-- 30 turns of text after it
SELECT adk_append_event('pi_app', 'u', 's',
  '{"author": "user", "content": {"role": "user", "parts": [{"text": "start slow"}]}}') IS NOT NULL AS q;
SELECT adk_append_event('pi_app', 'u', 's',
  '{"author": "pi_agent", "content": {"role": "model", "parts": [{"function_call": {"id": "old-1", "name": "slow", "args": {}}}]}}') IS NOT NULL AS call;
SELECT count(adk_append_event('pi_app', 'u', 's', jsonb_build_object(
         'author', CASE WHEN i % 2 = 0 THEN 'user' ELSE 'pi_agent' END,
         'content', jsonb_build_object('role', CASE WHEN i % 2 = 0 THEN 'user' ELSE 'model' END,
                                       'parts', jsonb_build_array(jsonb_build_object('text', 'turn ' || i))))))
  FROM generate_series(0, 29) i;
SELECT count(*) > 0 AS ran FROM adk_run('pi_app', 'u', 's', 'go', NULL, '{"max_llm_calls": 7}');

-- per request: where old-1's call and its response are (message index),
-- which response is sent, how many of the run's step calls are directly
-- followed by their response, the helper's context, the other branch's
-- event
SELECT row_number() OVER (ORDER BY c.id) AS request,
       (SELECT min(m.i) FROM jsonb_array_elements(c.request -> 'messages') WITH ORDINALITY m(msg, i)
         WHERE m.msg -> 'tool_calls' @> '[{"id": "old-1"}]') AS old_call_at,
       (SELECT min(m.i) FROM jsonb_array_elements(c.request -> 'messages') WITH ORDINALITY m(msg, i)
         WHERE m.msg ->> 'tool_call_id' = 'old-1') AS old_response_at,
       (SELECT string_agg(m.msg ->> 'content', ', ') FROM jsonb_array_elements(c.request -> 'messages') m(msg)
         WHERE m.msg ->> 'tool_call_id' = 'old-1') AS old_response,
       (SELECT count(*) FROM jsonb_array_elements(c.request -> 'messages') WITH ORDINALITY m(msg, i)
         WHERE m.msg -> 'tool_calls' -> 0 -> 'function' ->> 'name' = 'step'
           AND c.request -> 'messages' -> (m.i::int) ->> 'tool_call_id' =
               m.msg -> 'tool_calls' -> 0 ->> 'id') AS step_pairs,
       (SELECT count(*) FROM jsonb_array_elements(c.request -> 'messages') m(msg)
         WHERE m.msg ->> 'content' LIKE '%[helper]%') AS helper_context,
       (SELECT count(*) FROM jsonb_array_elements(c.request -> 'messages') m(msg)
         WHERE m.msg ->> 'content' = 'not for us') AS other_branch,
       jsonb_array_length(c.request -> 'messages') AS messages
  FROM adk.model_calls c JOIN adk.invocations i USING (invocation_id)
 WHERE i.app_name = 'pi_app'
 ORDER BY c.id;

-- every request sends each call with its response right after it, and
-- every response right after its call (OpenAI's rule)
SELECT count(*) AS unpaired
  FROM adk.model_calls c JOIN adk.invocations i USING (invocation_id),
       jsonb_array_elements(c.request -> 'messages') WITH ORDINALITY m(msg, i)
 WHERE i.app_name = 'pi_app'
   AND ((m.msg ? 'tool_calls' AND
         c.request -> 'messages' -> (m.i::int) ->> 'tool_call_id' IS DISTINCT FROM m.msg -> 'tool_calls' -> 0 ->> 'id')
     OR (m.msg ? 'tool_call_id' AND
         c.request -> 'messages' -> (m.i::int - 2) -> 'tool_calls' -> 0 ->> 'id' IS DISTINCT FROM m.msg ->> 'tool_call_id'));

-- a second run on the session starts from the whole history: its first
-- request is what the first run's last one led to, plus its question
SELECT count(*) > 0 AS ran FROM adk_run('pi_app', 'u', 's', 'again', NULL, '{"max_llm_calls": 2}');
SELECT (SELECT string_agg(m.msg ->> 'content', ', ') FROM jsonb_array_elements(c.request -> 'messages') m(msg)
         WHERE m.msg ->> 'tool_call_id' = 'old-1') AS old_response,
       jsonb_array_length(c.request -> 'messages') AS messages
  FROM adk.model_calls c JOIN adk.invocations i USING (invocation_id)
 WHERE i.app_name = 'pi_app'
 ORDER BY c.id DESC LIMIT 2;
RESET adk.verify_incremental;
