-- Nested workflow nodes (docs/workflows.md "What runs"): a node of kind
-- workflow runs its workflow in a lane of its own, stepped as any
-- workflow, with the node's input as its START input; the node's output
-- is the latest output of the nested workflow's nodes (ADK-Go's
-- WorkflowNode).  A nested node that asks for human input holds its
-- caller: the workflow that runs it does not go past that node until the
-- answer (adk-js #734 cannot happen here), while its other branches run.
SELECT adk_define_model('slow876', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'gpt-latency-300', api_key_secret => 'test-key');
CREATE FUNCTION w876_wrap(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', jsonb_build_object('node', ctx ->> 'node', 'got', input))
$$;
CREATE FUNCTION w876_ask(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('request_input', jsonb_build_object('interrupt_id', 'ask-' || (ctx ->> 'session_id'),
                                                                 'message', 'Go on?', 'payload', input))
$$;
CREATE FUNCTION w876_events(app text, sid text, msg text)
RETURNS TABLE (author text, path text, branch text, output jsonb, call text)
LANGUAGE sql AS $$
    SELECT r.event_data ->> 'author', r.event_data #>> '{node_info,path}', r.event_data ->> 'branch',
           r.event_data -> 'output', r.event_data #>> '{content,parts,0,function_call,name}'
      FROM adk_run(app, 'u', sid, msg) r
     WHERE r.event_data ->> 'author' <> 'user'
     ORDER BY r.seq
$$;
-- ... for an answer: a function response
CREATE FUNCTION w876_answer(app text, sid text, msg jsonb)
RETURNS TABLE (author text, path text, branch text, output jsonb, call text)
LANGUAGE sql AS $$
    SELECT r.event_data ->> 'author', r.event_data #>> '{node_info,path}', r.event_data ->> 'branch',
           r.event_data -> 'output', r.event_data #>> '{content,parts,0,function_call,name}'
      FROM adk_run(app, 'u', sid, msg) r
     WHERE r.event_data ->> 'author' <> 'user'
     ORDER BY r.seq
$$;

-- START -> prep -> inner (a workflow: START -> i1 -> i2) -> after: the
-- inner workflow's START gets prep's output; inner's output is i2's
SELECT adk_define_workflow('w876_inner',
    '[{"name": "i1", "function": "public.w876_wrap(jsonb,jsonb)"}, {"name": "i2", "function": "public.w876_wrap(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "i1"}, {"from": "i1", "to": "i2"}]');
SELECT adk_define_workflow('w876_outer',
    '[{"name": "prep", "function": "public.w876_wrap(jsonb,jsonb)"}, {"name": "inner", "workflow": "w876_inner"},
      {"name": "after", "function": "public.w876_wrap(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "prep"}, {"from": "prep", "to": "inner"}, {"from": "inner", "to": "after"}]');
SELECT adk_define_app('w876_app', 'w876_outer');
SELECT * FROM w876_events('w876_app', 'w876-n1', 'go');
SELECT node_path, status FROM adk.run_states WHERE session_id = 'w876-n1' ORDER BY node_path;
SELECT workflow, node, status FROM adk.workflow_runs WHERE session_id = 'w876-n1' ORDER BY workflow, node;

-- An agent node of the outer workflow and one of a nested workflow, both
-- after START: their model calls are in flight together (about one
-- latency of 300 ms, not two)
SELECT adk_define_agent('w876_a', model => 'slow876', instruction => 'A.');
SELECT adk_define_agent('w876_b', model => 'slow876', instruction => 'B.');
SELECT adk_define_workflow('w876_inner_agent', '[{"agent": "w876_b"}]', '[{"from": "START", "to": "w876_b"}]');
SELECT adk_define_workflow('w876_par',
    '[{"agent": "w876_a"}, {"name": "inner", "workflow": "w876_inner_agent"}, {"name": "both", "kind": "join"}]',
    '[{"from": "START", "to": "w876_a"}, {"from": "START", "to": "inner"},
      {"from": "w876_a", "to": "both"}, {"from": "inner", "to": "both"}]');
SELECT adk_define_app('w876_par_app', 'w876_par');
CREATE TEMP TABLE clock876 AS SELECT clock_timestamp() AS t0;
SELECT author, path, branch, output FROM w876_events('w876_par_app', 'w876-p1', 'two views')
 ORDER BY path, author = 'w876_par';
SELECT clock_timestamp() - t0 < interval '550 ms' AS about_one_latency FROM clock876;

-- adk-js #734: a nested workflow's pending request holds its caller.
-- START -> inner_ask (START -> ask -> done) -> after, and START -> side.
-- The first run: ask requests input; side runs; after does not; the
-- invocation waits, the outer node inner_ask waiting with it.
SELECT adk_define_workflow('w876_inner_ask',
    '[{"name": "ask", "function": "public.w876_ask(jsonb,jsonb)"}, {"name": "done", "function": "public.w876_wrap(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "ask"}, {"from": "ask", "to": "done"}]');
SELECT adk_define_workflow('w876_hold',
    '[{"name": "inner_ask", "workflow": "w876_inner_ask"}, {"name": "after", "function": "public.w876_wrap(jsonb,jsonb)"},
      {"name": "side", "function": "public.w876_wrap(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "inner_ask"}, {"from": "inner_ask", "to": "after"}, {"from": "START", "to": "side"}]');
SELECT adk_define_app('w876_hold_app', 'w876_hold');
SELECT * FROM w876_events('w876_hold_app', 'w876-h1', 'go');
SELECT status FROM adk.invocations WHERE session_id = 'w876-h1';
SELECT call_id, tool, args -> 'payload' AS payload FROM adk.pending_interrupts WHERE session_id = 'w876-h1';
SELECT node_path, status, interrupt_ids FROM adk.run_states WHERE session_id = 'w876-h1' ORDER BY node_path;
-- the nested node has a row of its own, waiting on its workflow's request
-- (docs/workflows.md "Statuses"): adk.workflow_runs and the Mermaid
-- picture show where the invocation waits; the request is pending once;
-- rebuilt from the events, the rows are the live ones
SELECT workflow, node, run_id, status, waiting_on, triggered_by, branch
  FROM adk.workflow_runs WHERE session_id = 'w876-h1' ORDER BY node_path;
SELECT line FROM regexp_split_to_table(adk_workflow_mermaid('w876_hold',
           (SELECT invocation_id FROM adk.invocations WHERE session_id = 'w876-h1')), E'\n') line
 WHERE line LIKE '%inner_ask%' OR line LIKE '%class%';
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE session_id = 'w876-h1';
CREATE TEMP TABLE w876_live AS SELECT * FROM adk.run_states WHERE session_id = 'w876-h1';
SELECT adk_rebuild_run_states('w876_hold_app', 'u', 'w876-h1') AS rebuilt;
SELECT (SELECT count(*) FROM (SELECT * FROM w876_live EXCEPT SELECT * FROM adk.run_states) x) AS missing,
       (SELECT count(*) FROM (SELECT * FROM adk.run_states WHERE session_id = 'w876-h1'
                              EXCEPT SELECT * FROM w876_live) x) AS extra;
-- the answer resumes the nested node's request; the nested workflow ends
-- (done), its output is inner_ask's, and only then after runs -- once;
-- the nested node's event keeps its branch (inner_ask@1: the fan-out's),
-- and after, its only successor, runs on it
SELECT * FROM w876_answer('w876_hold_app', 'w876-h1',
                          adk_function_response('ask-w876-h1', 'adk_request_input', '{"ok": true}'));
SELECT node_path, status, output FROM adk.run_states
 WHERE session_id = 'w876-h1' AND invocation_id = (SELECT invocation_id FROM adk.invocations
                                               WHERE session_id = 'w876-h1' ORDER BY started_at LIMIT 1)
 ORDER BY node_path;
SELECT status FROM adk.invocations WHERE session_id = 'w876-h1' ORDER BY started_at;
-- answering again: the request is answered, the message is a new run
SELECT count(*) FILTER (WHERE path = 'w876_hold/after@1') AS after_ran_again
  FROM w876_answer('w876_hold_app', 'w876-h1', adk_function_response('ask-w876-h1', 'adk_request_input', '{"ok": true}'))
 WHERE author = 'w876_hold' AND output -> 'got' ? 'ok';

DELETE FROM adk.sessions WHERE app_name LIKE 'w876%';
