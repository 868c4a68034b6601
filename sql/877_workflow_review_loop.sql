-- A review/revise loop with a human approval (the README's worked
-- workflow): an agent node drafts, a function node asks a person
-- (request_input, rerun_on_resume) and routes the answer -- "revise" back
-- to the agent with the feedback as its input, "approved" on to publish.
-- adk-python #7027 (a review loop deadlocking on its third resume) cannot
-- happen here: each round is a new activation with rows of its own, and
-- the answer resumes exactly the one that asked.
SELECT adk_define_model('fast877', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'gpt-test', api_key_secret => 'test-key');
CREATE FUNCTION w877_approval(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT CASE WHEN ctx -> 'resume_inputs' = '{}'
                THEN jsonb_build_object('request_input', jsonb_build_object('message', 'Approve this draft?',
                                                                          'payload', input))
                ELSE (SELECT jsonb_build_object('route', a ->> 'decision', 'output', coalesce(a -> 'feedback', input))
                        FROM jsonb_each(ctx -> 'resume_inputs') e(k, a) LIMIT 1)
           END
$$;
CREATE FUNCTION w877_publish(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', jsonb_build_object('published', input))
$$;
SELECT adk_define_agent('w877_writer', model => 'fast877', instruction => 'Draft or revise.');
SELECT adk_define_workflow('w877_loop',
    '[{"name": "writer", "agent": "w877_writer"},
      {"name": "approval", "function": "public.w877_approval(jsonb,jsonb)", "rerun_on_resume": true},
      {"name": "publish", "function": "public.w877_publish(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "writer"}, {"from": "writer", "to": "approval"},
      {"from": "approval", "to": "writer", "route": "revise"},
      {"from": "approval", "to": "publish", "route": "approved"}]');
SELECT adk_define_app('w877_app', 'w877_loop');
-- the events of one turn, and the answer to the one pending request
CREATE FUNCTION w877_turn(msg jsonb)
RETURNS TABLE (path text, output jsonb, asks text)
LANGUAGE sql AS $$
    SELECT r.event_data #>> '{node_info,path}', r.event_data -> 'output',
           r.event_data #>> '{content,parts,0,function_call,args,payload}'
      FROM adk_run('w877_app', 'u', 'w877-loop', msg) r
     WHERE r.event_data ->> 'author' = 'w877_loop'
     ORDER BY r.seq
$$;
CREATE FUNCTION w877_answer(answer jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT adk_function_response((SELECT call_id FROM adk.pending_interrupts WHERE session_id = 'w877-loop'),
                                 'adk_request_input', answer)
$$;

SELECT path, output, asks FROM adk_run('w877_app', 'u', 'w877-loop', 'Announce the tea festival.') r,
       LATERAL (SELECT r.event_data #>> '{node_info,path}' AS path, r.event_data -> 'output' AS output,
                       r.event_data #>> '{content,parts,0,function_call,args,payload}' AS asks) x
 WHERE r.event_data ->> 'author' = 'w877_loop' ORDER BY r.seq;
-- three resumes: revise, revise, approved
SELECT * FROM w877_turn(w877_answer('{"decision": "revise", "feedback": "Shorter."}'));
SELECT count(*) AS pending, min(status) AS status FROM adk.pending_interrupts p
  JOIN adk.invocations i USING (app_name, user_id, session_id, invocation_id) WHERE p.session_id = 'w877-loop';
SELECT * FROM w877_turn(w877_answer('{"decision": "revise", "feedback": "Add the date."}'));
SELECT * FROM w877_turn(w877_answer('{"decision": "approved"}'));
-- one invocation throughout, completed; nothing pending; one row per
-- activation, each completed
SELECT count(DISTINCT invocation_id) AS invocations, min(status) AS status
  FROM adk.invocations WHERE session_id = 'w877-loop';
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE session_id = 'w877-loop';
SELECT node, run_id, status FROM adk.workflow_runs WHERE session_id = 'w877-loop' ORDER BY updated_at, node, run_id;
-- each writer activation's prompt was its input alone
SELECT request #>> '{messages,1,content}' AS writer_input, jsonb_array_length(request -> 'messages') AS messages
  FROM adk.model_calls
 WHERE invocation_id = (SELECT invocation_id FROM adk.invocations WHERE session_id = 'w877-loop') ORDER BY id;
-- the picture: every node completed in that invocation
SELECT adk_workflow_mermaid('w877_loop', (SELECT invocation_id FROM adk.invocations WHERE session_id = 'w877-loop'));

DELETE FROM adk.sessions WHERE app_name = 'w877_app';
