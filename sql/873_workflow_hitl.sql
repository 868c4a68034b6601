-- Human input in graph workflows (docs/workflows.md "Human input"): a
-- function node's request_input pauses its node -- ADK's adk_request_input
-- call in long_running_tool_ids, in adk.pending_interrupts -- and the
-- answer resumes that node, as ADK-Go's workflow/hitl_test.go and
-- reentry_test.go do: pause and forward (the answer becomes the output),
-- several requests parked, concurrent branches pause only when none can
-- run, re-entry (rerun_on_resume: the original input, the answers
-- accumulate), a changed graph refuses to resume, and ADK bugs: a resume
-- mixing earlier invocations (adk-python #6497), a re-run node getting the
-- human's reply as its input (#733).

-- Asks once, unless the answer for its interrupt is in ctx.resume_inputs
CREATE FUNCTION w88_ask(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT CASE WHEN ctx -> 'resume_inputs' ? (ctx ->> 'node')
                THEN jsonb_build_object('output', jsonb_build_object('input', input,
                                        'answers', ctx -> 'resume_inputs'))
                ELSE jsonb_build_object('request_input', jsonb_build_object(
                         'interrupt_id', ctx ->> 'node', 'message', 'Approve ' || (ctx ->> 'node') || '?',
                         'payload', input, 'response_schema', '{"type": "object"}'::jsonb)) END
$$;
-- Always asks, with a new id (a handoff node: its answer is its output)
CREATE FUNCTION w88_ask_new(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('request_input', jsonb_build_object('message', 'Approve?', 'payload', input)) $$;
CREATE FUNCTION w88_tag(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', jsonb_build_object('by', ctx ->> 'node', 'got', input)) $$;
-- Re-entry: asks "first", then "second", then finishes with both answers
CREATE FUNCTION w88_twice(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT CASE WHEN NOT ctx -> 'resume_inputs' ? 'first'
                THEN '{"request_input": {"interrupt_id": "first", "message": "First?"}}'::jsonb
                WHEN NOT ctx -> 'resume_inputs' ? 'second'
                THEN '{"request_input": {"interrupt_id": "second", "message": "Second?"}}'::jsonb
                ELSE jsonb_build_object('output', jsonb_build_object('input', input,
                                        'answers', ctx -> 'resume_inputs')) END
$$;
CREATE FUNCTION w88_events(app text, sid text, msg jsonb)
RETURNS TABLE (path text, output jsonb, call jsonb, long_running jsonb, error text)
LANGUAGE sql AS $$
    SELECT r.event_data #>> '{node_info,path}', r.event_data -> 'output',
           (r.event_data #> '{content,parts,0,function_call}') - 'id'::text,
           r.event_data -> 'long_running_tool_ids', r.event_data ->> 'error_message'
      FROM adk_run(app, 'u', sid, msg) r
     WHERE r.event_data ->> 'author' <> 'user'
     ORDER BY r.seq
$$;
CREATE FUNCTION w88_text(t text) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('role', 'user', 'parts', jsonb_build_array(jsonb_build_object('text', t))) $$;
CREATE FUNCTION w88_answer(sid text, call_id text, answer jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT adk_function_response(call_id, 'adk_request_input', answer) $$;
CREATE FUNCTION w88_rows(app text)
RETURNS TABLE (node text, run_id text, status text, waiting_on text, input jsonb, output jsonb)
LANGUAGE sql AS $$
    SELECT node, run_id, status, regexp_replace(waiting_on::text, 'adk-[0-9a-f-]+', 'adk-<new id>', 'g'),
           input, output FROM adk.workflow_runs
     WHERE app_name = app ORDER BY invocation_id, node, run_id $$;

-- Pause and forward (hitl_test.go): START -> ask -> after; ask's answer is
-- its output (a handoff), after gets it
SELECT adk_define_workflow('w88_fwd',
    '[{"name": "ask", "function": "public.w88_ask_new(jsonb,jsonb)"},
      {"name": "after", "function": "public.w88_tag(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "ask"}, {"from": "ask", "to": "after"}]');
SELECT adk_define_app('w88_fwd_app', 'w88_fwd');
SELECT path, call - 'args' AS call, jsonb_array_length(long_running) AS ids
  FROM w88_events('w88_fwd_app', 'f1', w88_text('go'));
SELECT tool, args ->> 'message' AS message, args -> 'payload' AS payload, agent
  FROM adk.pending_interrupts WHERE app_name = 'w88_fwd_app';
SELECT status FROM adk.invocations WHERE app_name = 'w88_fwd_app';
SELECT * FROM w88_rows('w88_fwd_app');
SELECT call_id FROM adk.pending_interrupts WHERE app_name = 'w88_fwd_app' \gset
SELECT path, output FROM w88_events('w88_fwd_app', 'f1', w88_answer('f1', :'call_id', '{"ok": true}'));
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE app_name = 'w88_fwd_app';
SELECT count(DISTINCT invocation_id) AS invocations, max(status) AS status
  FROM adk.invocations WHERE app_name = 'w88_fwd_app';
SELECT * FROM w88_rows('w88_fwd_app');
-- the same answer again: nothing is pending, so it is plain input -- a new
-- run from START, which asks again (the first run resumed once)
SELECT path, output FROM w88_events('w88_fwd_app', 'f1', w88_answer('f1', :'call_id', '{"ok": true}'));
SELECT count(DISTINCT invocation_id) AS invocations FROM adk.invocations WHERE app_name = 'w88_fwd_app';

-- Several requests parked, concurrent branches (hitl_test.go): START fans
-- out to two asking nodes and a working branch; the work runs while both
-- wait, the join after the asks waits for both answers; the invocation
-- pauses only when no branch can run
SELECT adk_define_workflow('w88_par',
    '[{"name": "a", "function": "public.w88_ask(jsonb,jsonb)", "rerun_on_resume": true},
      {"name": "b", "function": "public.w88_ask(jsonb,jsonb)", "rerun_on_resume": true},
      {"name": "work", "function": "public.w88_tag(jsonb,jsonb)"},
      {"name": "J", "kind": "join"},
      {"name": "done", "function": "public.w88_tag(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "a"}, {"from": "START", "to": "b"}, {"from": "START", "to": "work"},
      {"from": "a", "to": "J"}, {"from": "b", "to": "J"}, {"from": "J", "to": "done"}]');
SELECT adk_define_app('w88_par_app', 'w88_par');
SELECT path, call ->> 'name' AS call, call #>> '{args,interruptId}' AS interrupt, output
  FROM w88_events('w88_par_app', 'p1', w88_text('go'));
SELECT call_id, args ->> 'message' AS message FROM adk.pending_interrupts
 WHERE app_name = 'w88_par_app' ORDER BY call_id;
-- b's answer: b completes, the join still waits for a; still paused
SELECT path, output FROM w88_events('w88_par_app', 'p1', w88_answer('p1', 'b', '{"yes": "b"}'));
SELECT status FROM adk.invocations WHERE app_name = 'w88_par_app';
SELECT node, status, waiting_on FROM w88_rows('w88_par_app');
-- a's answer: a completes, the join gets both outputs, done runs
SELECT path, output FROM w88_events('w88_par_app', 'p1', w88_answer('p1', 'a', '{"yes": "a"}'));
SELECT count(DISTINCT invocation_id) AS invocations, max(status) AS status
  FROM adk.invocations WHERE app_name = 'w88_par_app';

-- Re-entry (reentry_test.go): a rerun_on_resume node runs again at the
-- same activation with its ORIGINAL input -- not the human's reply
-- (adk-python #733) -- and the answers so far; a second request in the
-- re-run parks it again
SELECT adk_define_workflow('w88_re',
    '[{"name": "prep", "function": "public.w88_tag(jsonb,jsonb)"},
      {"name": "twice", "function": "public.w88_twice(jsonb,jsonb)", "rerun_on_resume": true},
      {"name": "after", "function": "public.w88_tag(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "prep"}, {"from": "prep", "to": "twice"}, {"from": "twice", "to": "after"}]');
SELECT adk_define_app('w88_re_app', 'w88_re');
SELECT path, call #>> '{args,interruptId}' AS interrupt FROM w88_events('w88_re_app', 'r1', w88_text('go'));
SELECT path, call #>> '{args,interruptId}' AS interrupt, output
  FROM w88_events('w88_re_app', 'r1', w88_answer('r1', 'first', '{"n": 1}'));
SELECT node, run_id, status, waiting_on FROM w88_rows('w88_re_app') WHERE node = 'twice';
SELECT path, jsonb_pretty(output) AS output
  FROM w88_events('w88_re_app', 'r1', w88_answer('r1', 'second', '{"n": 2}'));
SELECT node, run_id, status, input, output IS NOT NULL AS has_output FROM w88_rows('w88_re_app');

-- A resume reads its own invocation only (adk-python #6497): two paused
-- invocations of one session; answering the first leaves the second's
-- node waiting, and the first's resume sees none of the second's rows.
-- (The second message is not plain text alone -- it has a data part --
-- or it would be the answer to the one pending request: 879.)
SELECT path FROM w88_events('w88_fwd_app', 'm1', w88_text('one'));
SELECT call_id AS first_call FROM adk.pending_interrupts WHERE session_id = 'm1' \gset
SELECT path FROM w88_events('w88_fwd_app', 'm1',
    '{"role": "user", "parts": [{"text": "two"}, {"inline_data": {"mime_type": "text/plain", "data": "dHdv"}}]}');
SELECT count(*) AS pending, count(DISTINCT invocation_id) AS invocations
  FROM adk.pending_interrupts WHERE session_id = 'm1';
SELECT path, output FROM w88_events('w88_fwd_app', 'm1', w88_answer('m1', :'first_call', '{"which": "first"}'));
SELECT i.status, count(r.*) FILTER (WHERE r.status = 'completed') AS completed_nodes
  FROM adk.invocations i JOIN adk.run_states r USING (app_name, user_id, session_id, invocation_id)
 WHERE i.session_id = 'm1' AND r.node_path LIKE '%@%'
 GROUP BY i.invocation_id, i.status ORDER BY i.status;

-- A graph changed since the run paused refuses to resume, with nothing
-- stored; restored, the same answer resumes it
SELECT path FROM w88_events('w88_fwd_app', 'g1', w88_text('go'));
SELECT call_id AS g_call FROM adk.pending_interrupts WHERE session_id = 'g1' \gset
SELECT adk_define_workflow('w88_fwd', max_concurrency => 2);
SELECT expect_error(format($$SELECT * FROM adk_run('w88_fwd_app', 'u', 'g1', %L::jsonb)$$,
                           w88_answer('g1', :'g_call', '{"ok": 1}')));
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE session_id = 'g1';
SELECT adk_define_workflow('w88_fwd', max_concurrency => 0);
SELECT path, output FROM w88_events('w88_fwd_app', 'g1', w88_answer('g1', :'g_call', '{"ok": 1}'));

-- request_input errors fail the node; a workflow below another agent
-- takes no human input yet
CREATE FUNCTION w88_badreq(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT CASE input #>> '{parts,0,text}' WHEN 'list' THEN '{"request_input": [1]}'::jsonb
           ELSE '{"request_input": {"interrupt_id": 7}}'::jsonb END $$;
SELECT adk_define_workflow('w88_bad', '[{"name": "bad", "function": "public.w88_badreq(jsonb,jsonb)"}]',
                           '[{"from": "START", "to": "bad"}]');
SELECT adk_define_app('w88_bad_app', 'w88_bad');
SELECT error FROM w88_events('w88_bad_app', 'b1', w88_text('list'));
SELECT error FROM w88_events('w88_bad_app', 'b2', w88_text('id'));
SELECT adk_define_agent('w88_outer', kind => 'sequential', sub_agents => ARRAY['w88_fwd']);
SELECT adk_define_app('w88_outer_app', 'w88_outer');
SELECT path, error FROM w88_events('w88_outer_app', 'o1', w88_text('go'));

-- later files read every run of adk.workflow_runs: these runs go
DELETE FROM adk.sessions WHERE app_name LIKE 'w88%';
