-- Parallel worker nodes (docs/workflows.md "What runs"): the worker node
-- runs once per item of the list input, each item an activation of its
-- own, the outputs in item order; at most the node's max_concurrency at
-- once.  ADK-Go's workflow/parallel_worker_test.go cases: Success,
-- EmptyList, InvalidInput_NotSlice, WorkerError, FailFast, Concurrency,
-- WorkflowIntegration, and the order of outputs.
SELECT adk_define_model('slow878', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'gpt-latency-300', api_key_secret => 'test-key');
-- ADK-Go's upperNode; a node that fails on "b"; a splitter; a joiner
CREATE FUNCTION w878_upper(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', upper(input #>> '{}'))
$$;
CREATE FUNCTION w878_fail_b(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    IF input #>> '{}' = 'b' THEN
        RAISE EXCEPTION 'failed on b';
    END IF;
    RETURN jsonb_build_object('output', input);
END $$;
CREATE FUNCTION w878_split(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', CASE WHEN input #>> '{parts,0,text}' = 'not a list' THEN to_jsonb('not a list'::text)
                                             ELSE to_jsonb(string_to_array(input #>> '{parts,0,text}', ',')) END)
$$;
CREATE FUNCTION w878_join(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', (SELECT string_agg(x, ':' ORDER BY n)
                                           FROM jsonb_array_elements_text(input) WITH ORDINALITY e(x, n)))
$$;
CREATE FUNCTION w878_events(app text, sid text, msg text)
RETURNS TABLE (path text, branch text, output jsonb, error text)
LANGUAGE sql AS $$
    SELECT r.event_data #>> '{node_info,path}', r.event_data ->> 'branch', r.event_data -> 'output',
           r.event_data ->> 'error_message'
      FROM adk_run(app, 'u', sid, msg) r
     WHERE r.event_data ->> 'author' <> 'user'
     ORDER BY r.seq
$$;
-- START -> split -> each (parallel worker of <worker>) -> join
CREATE PROCEDURE w878_define(name text, worker jsonb, max_items int) LANGUAGE plpgsql AS $$
BEGIN
    PERFORM adk_define_workflow(name,
        jsonb_build_array(jsonb_build_object('name', 'split', 'function', 'public.w878_split(jsonb,jsonb)'),
                          jsonb_build_object('name', 'each', 'kind', 'parallel_worker', 'worker', 'worker',
                                             'max_concurrency', max_items),
                          worker || '{"name": "worker"}',
                          jsonb_build_object('name', 'join', 'function', 'public.w878_join(jsonb,jsonb)')),
        '[{"from": "START", "to": "split"}, {"from": "split", "to": "each"}, {"from": "each", "to": "join"}]');
    PERFORM adk_define_app(name || '_app', name);
END $$;

-- Success and WorkflowIntegration: "a,b,c" -> ["A", "B", "C"] -> "A:B:C";
-- each item an activation of the worker node, its own row, on its own
-- sub-branch "worker@<place>" (ADK-Go's PerItemSubBranch)
CALL w878_define('w878_upper', '{"function": "public.w878_upper(jsonb,jsonb)"}', 0);
SELECT * FROM w878_events('w878_upper_app', 'w878-1', 'a,b,c');
SELECT node, run_id, status, input, output FROM adk.workflow_runs
 WHERE session_id = 'w878-1' ORDER BY updated_at, node, run_id;
-- EmptyList: an empty output at once, and the path goes on
SELECT adk_define_workflow('w878_empty',
    '[{"name": "each", "kind": "parallel_worker", "worker": "worker"}, {"name": "worker", "function": "public.w878_upper(jsonb,jsonb)"},
      {"name": "list", "function": "public.w878_split(jsonb,jsonb)"}, {"name": "after", "function": "public.w878_join(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "list"}, {"from": "list", "to": "each"}, {"from": "each", "to": "after"}]');
CREATE OR REPLACE FUNCTION w878_split(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', CASE WHEN input #>> '{parts,0,text}' = 'not a list' THEN to_jsonb('not a list'::text)
                                             WHEN input #>> '{parts,0,text}' = 'none' THEN '[]'::jsonb
                                             ELSE to_jsonb(string_to_array(input #>> '{parts,0,text}', ',')) END)
$$;
SELECT adk_define_app('w878_empty_app', 'w878_empty');
SELECT * FROM w878_events('w878_empty_app', 'w878-2', 'none');
-- InvalidInput_NotSlice: the node fails, a stored error event
SELECT * FROM w878_events('w878_upper_app', 'w878-3', 'not a list');
SELECT node, status FROM adk.workflow_runs WHERE session_id = 'w878-3' ORDER BY node;
-- WorkerError: the item "b" fails the node and ends the invocation --
-- the worker's row failed too, by an event of its own (docs/workflows.md
-- "Statuses"); FailFast: item "c" does not run, join does not
CALL w878_define('w878_fail', '{"function": "public.w878_fail_b(jsonb,jsonb)"}', 0);
SELECT * FROM w878_events('w878_fail_app', 'w878-4', 'a,b,c');
SELECT node, run_id, status FROM adk.workflow_runs WHERE session_id = 'w878-4' ORDER BY node, run_id;
SELECT status FROM adk.invocations WHERE session_id = 'w878-4';

-- Agent items: their model calls in flight together (three items of
-- 300 ms: about one latency); the outputs in item order whatever order
-- the answers came in
SELECT adk_define_agent('w878_agent', model => 'slow878', instruction => 'Echo.');
CALL w878_define('w878_agents', '{"agent": "w878_agent"}', 0);
CREATE TEMP TABLE clock878 AS SELECT clock_timestamp() AS t0;
SELECT path, output FROM w878_events('w878_agents_app', 'w878-5', 'x,y,z') WHERE path LIKE '%each%' OR path LIKE '%join%';
SELECT clock_timestamp() - t0 < interval '650 ms' AS about_one_latency FROM clock878;
-- Concurrency: max_concurrency 2 of 4 items -- two latencies
CALL w878_define('w878_agents', '{"agent": "w878_agent"}', 2);
UPDATE clock878 SET t0 = clock_timestamp();
SELECT path, output FROM w878_events('w878_agents_app', 'w878-6', 'p,q,r,s') WHERE path LIKE '%join%';
SELECT clock_timestamp() - t0 BETWEEN interval '600 ms' AND interval '880 ms' AS two_latencies FROM clock878;
-- FailFast with nested workflow items (check, then the agent): the
-- failing item ends the invocation at once, its nested node and the
-- worker fail with it; the items in flight stop, cancelled (no answer of
-- theirs is stored)
CREATE OR REPLACE FUNCTION w878_split(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', to_jsonb(string_to_array(input #>> '{parts,0,text}', ',')))
$$;
SELECT adk_define_workflow('w878_inner',
    '[{"name": "check", "function": "public.w878_fail_b(jsonb,jsonb)"}, {"name": "w878_agent", "agent": "w878_agent"}]',
    '[{"from": "START", "to": "check"}, {"from": "check", "to": "w878_agent"}]');
SELECT adk_define_workflow('w878_mixed',
    '[{"name": "split", "function": "public.w878_split(jsonb,jsonb)"},
      {"name": "each", "kind": "parallel_worker", "worker": "worker"}, {"name": "worker", "workflow": "w878_inner"},
      {"name": "join", "function": "public.w878_join(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "split"}, {"from": "split", "to": "each"}, {"from": "each", "to": "join"}]');
SELECT adk_define_app('w878_mixed_app', 'w878_mixed');
SELECT path, error FROM w878_events('w878_mixed_app', 'w878-7', 'a,b,c') WHERE error IS NOT NULL OR path LIKE '%agent%';
SELECT count(*) AS agent_answers FROM adk.events
 WHERE session_id = 'w878-7' AND event_data ->> 'author' = 'w878_agent';

-- An item that asks for human input waits, each with its own request
-- (ADK-Go keeps a parallel item's answer, PR #708; the whole of it: 884)
CREATE FUNCTION w878_ask(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('request_input', jsonb_build_object('message', 'OK?'))
$$;
CALL w878_define('w878_ask', '{"function": "public.w878_ask(jsonb,jsonb)"}', 0);
SELECT path, branch, error FROM w878_events('w878_ask_app', 'w878-8', 'a,b');
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE session_id = 'w878-8';
SELECT status FROM adk.invocations WHERE session_id = 'w878-8';

DELETE FROM adk.sessions WHERE app_name LIKE 'w878%';
