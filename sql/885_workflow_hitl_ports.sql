-- Human input in graph workflows, the cases of ADK-Go's
-- workflow/hitl_test.go and runner/hitl_integration_test.go that 873 and
-- 879 do not hold (docs/workflows.md "Human input"): an interrupt id made
-- when the node gives none (unique, ADK's adk_request_input call id and
-- its args' interruptId) or the node's own, kept as it is; one explicit id
-- asked by two nodes of one run (ADK-Go's Resume gives the answer to every
-- node waiting on that id); a failure after a request (the failure wins:
-- nothing is asked); and the round trips through adk_run -- a handoff, a
-- re-entry, the answer routed to the workflow by the call's id, two whole
-- cycles in one session, an answer in plain text.

-- What each session's handler got, in order
CREATE TABLE w885_seen (sid text, n serial, input jsonb);
-- asks; no id unless ctx.node is "fixed" (then "stable-id-42") or "dup*"
-- (then "same"); on re-entry with its answer gives it as its output
CREATE FUNCTION w885_ask(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT CASE WHEN ctx -> 'resume_inputs' ? 'approval'
                THEN jsonb_build_object('output', ctx #> '{resume_inputs,approval}')
                ELSE jsonb_build_object('request_input', jsonb_strip_nulls(jsonb_build_object(
                         'interrupt_id', CASE WHEN ctx ->> 'node' = 'fixed' THEN 'stable-id-42'
                                              WHEN ctx ->> 'node' LIKE 'dup%' THEN 'same'
                                              WHEN ctx ->> 'node' = 'reenter' THEN 'approval' END,
                         'message', 'please decide', 'payload', input))) END
$$;
CREATE FUNCTION w885_handler(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO w885_seen (sid, input) VALUES (ctx ->> 'session_id', input);
    RETURN jsonb_build_object('output', 'handled:' || coalesce(input #>> '{}', 'null'));
END $$;
-- A request and a result the node fails on (ADK-Go: yield the request,
-- then an error)
CREATE FUNCTION w885_ask_then_fail(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('request_input', jsonb_build_object('interrupt_id', 'ignored'),
                              'state_delta', 'not an object') $$;
CREATE FUNCTION w885_events(app text, sid text, msg jsonb)
RETURNS TABLE (author text, path text, call_id text, call text, interrupt text, long_running jsonb,
               output jsonb, error text)
LANGUAGE sql AS $$
    SELECT r.event_data ->> 'author', r.event_data #>> '{node_info,path}',
           r.event_data #>> '{content,parts,0,function_call,id}',
           r.event_data #>> '{content,parts,0,function_call,name}',
           r.event_data #>> '{content,parts,0,function_call,args,interruptId}',
           r.event_data -> 'long_running_tool_ids', r.event_data -> 'output', r.event_data ->> 'error_message'
      FROM adk_run(app, 'u', sid, msg) r
     WHERE r.event_data ->> 'author' <> 'user'
     ORDER BY r.seq
$$;
CREATE FUNCTION w885_text(t text) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('role', 'user', 'parts', jsonb_build_array(jsonb_build_object('text', t))) $$;
-- START -> each of nodes (a fan-out when several) -> handler (through a
-- join when several)
CREATE PROCEDURE w885_define(name text, nodes text[], rerun boolean DEFAULT false) LANGUAGE plpgsql AS $$
BEGIN
    PERFORM adk_define_workflow(name,
        (SELECT jsonb_agg(jsonb_build_object('name', n, 'function', 'public.w885_ask(jsonb,jsonb)',
                                             'rerun_on_resume', rerun)) FROM unnest(nodes) n)
        || jsonb_build_array(jsonb_build_object('name', 'handler', 'function', 'public.w885_handler(jsonb,jsonb)'))
        || CASE WHEN cardinality(nodes) > 1 THEN '[{"name": "all", "kind": "join"}]'::jsonb ELSE '[]' END,
        (SELECT jsonb_agg(jsonb_build_object('from', 'START', 'to', n)) FROM unnest(nodes) n)
        || CASE WHEN cardinality(nodes) > 1
                THEN (SELECT jsonb_agg(jsonb_build_object('from', n, 'to', 'all')) FROM unnest(nodes) n)
                     || '[{"from": "all", "to": "handler"}]'::jsonb
                ELSE jsonb_build_array(jsonb_build_object('from', nodes[1], 'to', 'handler')) END);
    PERFORM adk_define_app(name || '_app', name);
END $$;

-- AutoGeneratesInterruptID: two nodes asking without an id each get a new
-- one -- not empty, different, the call's id and its args' interruptId,
-- in the event's long_running_tool_ids
CALL w885_define('w885_auto', ARRAY['one', 'two']);
CREATE TEMP TABLE w885_auto AS SELECT * FROM w885_events('w885_auto_app', 'w885-a1', w885_text('go'));
SELECT path, call, call_id ~ '^adk-[0-9a-f-]{36}$' AS made_id, call_id = interrupt AS same_in_args,
       long_running = jsonb_build_array(call_id) AS long_running
  FROM w885_auto WHERE call IS NOT NULL ORDER BY path;
SELECT count(DISTINCT call_id) AS distinct_ids FROM w885_auto WHERE call IS NOT NULL;
SELECT count(*) AS pending FROM adk.pending_interrupts p JOIN w885_auto a USING (call_id)
 WHERE p.session_id = 'w885-a1';

-- PreservesExplicitInterruptID: the node's id, unchanged
CALL w885_define('w885_fixed', ARRAY['fixed']);
SELECT path, call_id, interrupt, long_running FROM w885_events('w885_fixed_app', 'w885-x1', w885_text('go'))
 WHERE call IS NOT NULL;
SELECT call_id FROM adk.pending_interrupts WHERE session_id = 'w885-x1';

-- One explicit id asked by two nodes of a run: both wait on it, and one
-- answer resumes both (ADK-Go's Resume hands a response to every waiting
-- node whose request has its id); the join then runs once
CALL w885_define('w885_dup', ARRAY['dup_a', 'dup_b']);
SELECT path, call_id FROM w885_events('w885_dup_app', 'w885-d1', w885_text('go')) WHERE call IS NOT NULL;
SELECT node, status, waiting_on FROM adk.workflow_runs WHERE session_id = 'w885-d1' ORDER BY node;
SELECT path, output FROM w885_events('w885_dup_app', 'w885-d1',
    adk_function_response('same', 'adk_request_input', '{"result": "both"}'));
SELECT status FROM adk.invocations WHERE session_id = 'w885-d1';
SELECT input FROM w885_seen WHERE sid = 'w885-d1';

-- ErrorAfterRequestFails: a result that asks and is bad fails the node --
-- the failure wins, nothing is asked or pending, the invocation failed
SELECT adk_define_workflow('w885_bad', '[{"name": "asker", "function": "public.w885_ask_then_fail(jsonb,jsonb)"}]',
                           '[{"from": "START", "to": "asker"}]');
SELECT adk_define_app('w885_bad_app', 'w885_bad');
SELECT path, call, error FROM w885_events('w885_bad_app', 'w885-e1', w885_text('go'));
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE session_id = 'w885-e1';
SELECT status FROM adk.invocations WHERE session_id = 'w885-e1';
SELECT node, status FROM adk.workflow_runs WHERE session_id = 'w885-e1';

-- Roundtrip_Handoff and FunctionResponseRoutedByID: turn 1 pauses with
-- ADK's adk_request_input call, authored by the workflow (the agent an
-- answer by id is routed back to); the handler has not run.  Turn 2, a
-- function response with the call's id, resumes that invocation: the
-- answer is the asker's output and the handler's input, and no new
-- interrupt is made
CALL w885_define('w885_chain', ARRAY['asker']);
SELECT author, path, call, long_running IS NOT NULL AS long_running
  FROM w885_events('w885_chain_app', 'w885-c1', w885_text('draft'));
SELECT count(*) AS handler_ran FROM w885_seen WHERE sid = 'w885-c1';
SELECT call_id AS c1_call, invocation_id AS c1_inv FROM adk.pending_interrupts WHERE session_id = 'w885-c1' \gset
SELECT author, path, call, output FROM w885_events('w885_chain_app', 'w885-c1',
    adk_function_response(:'c1_call', 'adk_request_input', '{"result": "approve"}'));
SELECT input FROM w885_seen WHERE sid = 'w885-c1';
SELECT count(DISTINCT invocation_id) AS invocations, bool_and(invocation_id = :'c1_inv') AS resumed_it,
       max(status) AS status
  FROM adk.invocations WHERE session_id = 'w885-c1';

-- Roundtrip_ReEntry: the asker re-runs (rerun_on_resume) with its id
-- "approval" and gives the answer as its output, the handler's input
CALL w885_define('w885_re', ARRAY['reenter'], true);
SELECT path, call_id FROM w885_events('w885_re_app', 'w885-c2', w885_text('draft')) WHERE call IS NOT NULL;
SELECT path, output FROM w885_events('w885_re_app', 'w885-c2',
    adk_function_response('approval', 'adk_request_input', '{"result": "yes"}'));
SELECT input FROM w885_seen WHERE sid = 'w885-c2';

-- TwoFullCycles_SameSession: two whole pause/answer cycles in one
-- session, each pause with a new id, each answer reaching the handler
SELECT call_id AS cycle1 FROM w885_events('w885_chain_app', 'w885-c3', w885_text('draft')) WHERE call IS NOT NULL \gset
SELECT path, output FROM w885_events('w885_chain_app', 'w885-c3',
    adk_function_response(:'cycle1', 'adk_request_input', '{"result": "first"}')) WHERE path LIKE '%handler%';
SELECT call_id AS cycle2 FROM w885_events('w885_chain_app', 'w885-c3', w885_text('draft')) WHERE call IS NOT NULL \gset
SELECT :'cycle1' <> :'cycle2' AS new_id;
SELECT path, output FROM w885_events('w885_chain_app', 'w885-c3',
    adk_function_response(:'cycle2', 'adk_request_input', '{"result": "second"}')) WHERE path LIKE '%handler%';
SELECT input FROM w885_seen WHERE sid = 'w885-c3' ORDER BY n;
SELECT count(*) AS invocations, count(*) FILTER (WHERE status = 'completed') AS completed
  FROM adk.invocations WHERE session_id = 'w885-c3';

-- An answer in plain text (ADK-JS routes it to the one pending request):
-- the text is the answer, the handler's input
SELECT count(*) AS asked FROM w885_events('w885_chain_app', 'w885-c4', w885_text('draft')) WHERE call IS NOT NULL;
SELECT path, output FROM w885_events('w885_chain_app', 'w885-c4', w885_text('looks good'))
 WHERE path LIKE '%handler%';
SELECT input FROM w885_seen WHERE sid = 'w885-c4';

-- later files read every run of adk.workflow_runs: these runs go
DELETE FROM adk.sessions WHERE app_name LIKE 'w885%';
