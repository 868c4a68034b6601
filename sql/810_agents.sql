-- Agent transfer and workflow agents.
-- transfer: the root hands over to a sub-agent; the next turn goes back to
-- the sub-agent (the latest non-user author) without the root
SELECT adk_define_agent('billing', model => 'local', description => 'Handles billing questions.');
SELECT adk_define_agent('support', model => 'local', description => 'Handles technical support.',
                        disallow_transfer_to_parent => true, disallow_transfer_to_peers => true);
SELECT adk_define_agent('front_desk', model => 'local', instruction => 'Route the user.',
                        sub_agents => ARRAY['billing', 'support']);
SELECT adk_define_app('desk_app', 'front_desk');

SELECT seq, event_data ->> 'author' AS author,
       jsonb_path_query_first(event_data, '$.content.parts[*].function_call.name') AS call,
       event_data #> '{actions,transfer_to_agent}' AS transfer,
       event_data #>> '{content,parts,0,text}' AS text
  FROM adk_run('desk_app', 'u', 'd1', 'transfer to billing') ORDER BY seq;
-- the transfer declaration and instruction reached the model
SELECT request #> '{tools,0,function,name}' AS tool,
       request #>> '{messages,0,content}' LIKE '%Agent name: billing%' AS lists_billing
  FROM adk.model_calls WHERE invocation_id = (SELECT invocation_id FROM adk.events WHERE session_id = 'd1' LIMIT 1)
 ORDER BY id LIMIT 1;
-- next turn: billing answers directly
SELECT seq, event_data ->> 'author' AS author, event_data #>> '{content,parts,0,text}' AS text
  FROM adk_run('desk_app', 'u', 'd1', 'and my invoice?') ORDER BY seq;
-- billing saw the front desk's call and its result as context
SELECT jsonb_path_query_array(request, '$.messages[*].role') AS roles,
       request #>> '{messages,2,content}' AS context
  FROM adk.model_calls ORDER BY id DESC LIMIT 1;

-- disallow_transfer_to_parent: after support answered, the next turn goes
-- back to the root
SELECT count(*) AS events FROM adk_run('desk_app', 'u', 'd2', 'transfer to support');
SELECT DISTINCT event_data ->> 'author' AS author
  FROM adk_run('desk_app', 'u', 'd2', 'thanks');
-- support may not transfer to its parent (nor has sub-agents or peers it
-- may reach), so its request has no transfer tool
SELECT c.request ? 'tools' AS support_has_tools
  FROM adk.model_calls c
 WHERE c.id = (SELECT max(id) FROM adk.model_calls
                WHERE invocation_id = (SELECT invocation_id FROM adk.events
                                        WHERE session_id = 'd2' ORDER BY seq LIMIT 1));

-- sequential: each sub-agent in order; output_key writes the answer to state
SELECT adk_define_agent('step_one', model => 'local', instruction => 'First step.', output_key => 'first');
SELECT adk_define_agent('step_two', model => 'local', instruction => 'Second step after {first}.');
SELECT adk_define_agent('pipeline', kind => 'sequential', sub_agents => ARRAY['step_one', 'step_two']);
SELECT adk_define_app('pipeline_app', 'pipeline');
SELECT seq, event_data ->> 'author' AS author, event_data #>> '{content,parts,0,text}' AS text,
       event_data #> '{actions,state_delta}' AS delta
  FROM adk_run('pipeline_app', 'u', 'p1', 'go') ORDER BY seq;
-- step_two's instruction had {first} filled from state
SELECT request #>> '{messages,0,content}' AS system
  FROM adk.model_calls ORDER BY id DESC LIMIT 1;

-- parallel: each sub-agent on its own branch (their answers are stored as
-- each arrives: in either order)
SELECT adk_define_agent('fan_a', model => 'local');
SELECT adk_define_agent('fan_b', model => 'local');
SELECT adk_define_agent('fan_out', kind => 'parallel', sub_agents => ARRAY['fan_a', 'fan_b']);
SELECT adk_define_app('fan_app', 'fan_out');
SELECT event_data ->> 'author' AS author, event_data ->> 'branch' AS branch
  FROM adk_run('fan_app', 'u', 'f1', 'both of you') ORDER BY author;

-- loop: until exit_loop escalates, or max_iterations
SELECT adk_define_agent('looper', model => 'local', tools => ARRAY['exit_loop']);
SELECT adk_define_agent('loop3', kind => 'loop', sub_agents => ARRAY['looper'], max_iterations => 3);
SELECT adk_define_app('loop_app', 'loop3');
SELECT count(*) AS events, count(*) FILTER (WHERE event_data ->> 'author' = 'looper') AS by_looper
  FROM adk_run('loop_app', 'u', 'l1', 'keep going');
SELECT seq, event_data ->> 'author' AS author,
       jsonb_path_query_first(event_data, '$.content.parts[*].function_call.name') AS call,
       event_data #> '{actions,escalate}' AS escalate
  FROM adk_run('loop_app', 'u', 'l2', 'call exit_loop({})') ORDER BY seq;

-- max_llm_calls: the run stops with an error event
SELECT seq, event_data ->> 'error_code' AS error_code
  FROM adk_run('loop_app', 'u', 'l3', 'keep going', NULL, '{"max_llm_calls": 2}') ORDER BY seq;
SELECT status, model_calls, error_code FROM adk.invocations WHERE session_id = 'l3';

-- a model fault mid-run: earlier events kept, an error event stored, the
-- invocation failed, adk_run returns normally
SELECT adk_define_agent('fails', model => 'broken');
SELECT adk_define_agent('answers_first', model => 'local');
SELECT adk_define_agent('half_done', kind => 'sequential', sub_agents => ARRAY['answers_first', 'fails']);
SELECT adk_define_app('fault_app', 'half_done');
SELECT seq, event_data ->> 'author' AS author, event_data ->> 'error_code' AS error_code,
       event_data #>> '{content,parts,0,text}' AS text
  FROM adk_run('fault_app', 'u', 'x1', 'try') ORDER BY seq;
SELECT status, error_code FROM adk.invocations WHERE session_id = 'x1';
SELECT count(*) AS stored FROM adk.events WHERE session_id = 'x1';

-- an agent used as a tool (AgentTool): it answers the request; its answer
-- is the result; the exchange is not stored in the session
SELECT adk_define_agent('shouter_agent', model => 'local', description => 'Shouts text back.',
                        instruction => 'ANSWER_IN_CAPS');
SELECT adk_define_agent('writer', model => 'local', tools => ARRAY['shouter_agent']);
SELECT adk_define_app('writer_app', 'writer');
SELECT seq, event_data ->> 'author' AS author,
       jsonb_path_query_first(event_data, '$.content.parts[*].function_call.name') AS call,
       event_data #> '{content,parts,0,function_response,response}' AS result,
       event_data #>> '{content,parts,0,text}' AS text
  FROM adk_run('writer_app', 'u', 'w1', 'call shouter_agent({"request": "hello world"})') ORDER BY seq;

-- include_contents = 'none': the model sees only the current turn
SELECT adk_define_agent('forgetful', model => 'local', include_contents => 'none');
SELECT adk_define_app('forgetful_app', 'forgetful');
SELECT count(*) FROM adk_run('forgetful_app', 'u', 'n1', 'first turn');
SELECT count(*) FROM adk_run('forgetful_app', 'u', 'n1', 'second turn');
SELECT jsonb_path_query_array(request, '$.messages[*].content') AS sent
  FROM adk.model_calls ORDER BY id DESC LIMIT 1;
