-- Node settings on parallel worker nodes (docs/workflows.md "Node
-- settings"), as ADK-Go's ParallelWorker takes them
-- (workflow/parallel_worker.go): input and output schemas and a timeout
-- on the parallel worker node, and its retry applied to each item on its
-- own (the worker node has none).  Ports parallel_worker_test.go's Retry
-- and CancelDuringExecution cases.
SELECT adk_define_model('w889_fast', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'gpt-test', api_key_secret => 'test-key', options => '{"retries": 0}');
SELECT adk_define_model('w889_slow', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'gpt-latency-3000', api_key_secret => 'test-key', options => '{"retries": 0}');
SELECT adk_define_agent('w889_echo', model => 'w889_fast', mode => 'single_turn', instruction => 'Echo.');
SELECT adk_define_agent('w889_sleeper', model => 'w889_slow', mode => 'single_turn', instruction => 'Think.');
-- The user's text as a list: '["a", "b"]' -> ["a", "b"]
CREATE FUNCTION w889_list(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', (input #>> '{parts,0,text}')::jsonb) $$;
-- "<item>:<node>"
CREATE FUNCTION w889_tag(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', (input #>> '{}') || ':' || (ctx ->> 'node')) $$;
-- ADK-Go's retry_node: counts its calls per item (a sequence each, not
-- rolled back with a failed call); item "b" fails on its first
-- w889_cfg.fails calls
CREATE TABLE w889_cfg (fails integer);
INSERT INTO w889_cfg VALUES (2);
CREATE SEQUENCE w889_calls_a;
CREATE SEQUENCE w889_calls_b;
CREATE FUNCTION w889_calls(item text) RETURNS bigint LANGUAGE sql AS $$
    SELECT coalesce(last_value, 0) FROM pg_sequences WHERE sequencename = 'w889_calls_' || item $$;
CREATE FUNCTION w889_reset() RETURNS void LANGUAGE sql AS $$
    SELECT setval('w889_calls_a', 1, false), setval('w889_calls_b', 1, false) $$;
CREATE FUNCTION w889_retry_node(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    n bigint := nextval('w889_calls_' || (input #>> '{}'));
BEGIN
    IF input #>> '{}' = 'b' AND n <= (SELECT fails FROM w889_cfg) THEN
        RAISE EXCEPTION 'temporary failure %', n;
    END IF;
    RETURN jsonb_build_object('output', input);
END $$;
-- The events of a run, one line each
CREATE FUNCTION w889_events(app text, sid text, msg text)
RETURNS TABLE (path text, output jsonb, error text)
LANGUAGE sql AS $$
    SELECT r.event_data #>> '{node_info,path}', r.event_data -> 'output',
           coalesce(r.event_data ->> 'error_code', '') || coalesce(': ' || (r.event_data ->> 'error_message'), '')
      FROM adk_run(app, 'u', sid, msg) r
     WHERE r.event_data ->> 'author' = (SELECT root_agent FROM adk.apps WHERE name = app)
     ORDER BY r.seq
$$;
CREATE FUNCTION w889_rows(sid text)
RETURNS TABLE (node_path text, status text, attempt integer)
LANGUAGE sql AS $$
    SELECT r.node_path, r.status, r.attempt FROM adk.run_states r
     WHERE r.session_id = sid AND r.node_path LIKE '%@%' ORDER BY r.node_path
$$;
CREATE TEMP TABLE w889_clock AS SELECT clock_timestamp() AS t0;

-- 1. Schemas on the parallel worker: its input list is checked before any
-- item runs, its output list before its event
SELECT adk_define_workflow('w889_schemas',
    '[{"name": "list", "function": "public.w889_list(jsonb,jsonb)"},
      {"name": "each", "kind": "parallel_worker", "worker": "tag",
       "input_schema": {"type": "array", "items": {"type": "string"}},
       "output_schema": {"type": "array", "items": {"enum": ["a:tag", "b:tag"]}}},
      {"name": "tag", "function": "public.w889_tag(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "list"}, {"from": "list", "to": "each"}]');
SELECT adk_define_app('w889_schemas_app', 'w889_schemas');
SELECT * FROM w889_events('w889_schemas_app', 'w889-s1', '["a", "b"]');
-- an item that is not a string: no item runs
SELECT * FROM w889_events('w889_schemas_app', 'w889-s2', '["a", 2]');
SELECT * FROM w889_rows('w889-s2');
-- the items' outputs do not match the output schema: the node fails
SELECT * FROM w889_events('w889_schemas_app', 'w889-s3', '["a", "c"]');
SELECT * FROM w889_rows('w889-s3');

-- 2. Retry (ADK-Go TestParallelWorker_Retry): the parallel worker's retry
-- runs each failed item again on its own: "a" once, "b" three times (it
-- fails twice); the output in item order
SELECT adk_define_workflow('w889_retry',
    '[{"name": "list", "function": "public.w889_list(jsonb,jsonb)"},
      {"name": "each", "kind": "parallel_worker", "worker": "retry_node",
       "retry": {"max_attempts": 3, "initial_delay": 0, "max_delay": 0, "jitter": 0}},
      {"name": "retry_node", "function": "public.w889_retry_node(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "list"}, {"from": "list", "to": "each"}]');
SELECT adk_define_app('w889_retry_app', 'w889_retry');
SELECT w889_reset();
SELECT * FROM w889_events('w889_retry_app', 'w889-r1', '["a", "b"]');
SELECT w889_calls('a') AS calls_a, w889_calls('b') AS calls_b;
SELECT * FROM w889_rows('w889-r1');
-- "b" failing on every attempt fails the node after max_attempts calls of
-- it (ADK-Go: "a" once, "b" max_attempts times)
UPDATE w889_cfg SET fails = 100;
SELECT w889_reset();
SELECT * FROM w889_events('w889_retry_app', 'w889-r2', '["a", "b"]');
SELECT w889_calls('a') AS calls_a, w889_calls('b') AS calls_b;
SELECT * FROM w889_rows('w889-r2');
-- without a retry the first failure fails the node
UPDATE adk.workflow_nodes SET retry = NULL WHERE workflow = 'w889_retry' AND name = 'each';
SELECT w889_reset();
SELECT * FROM w889_events('w889_retry_app', 'w889-r3', '["a", "b"]');
SELECT w889_calls('b') AS calls_b;
-- the worker node itself takes no retry (ADK-Go's NewParallelWorker)
SELECT expect_error($$UPDATE adk.workflow_nodes SET retry = '{"max_attempts": 2}'
                       WHERE workflow = 'w889_retry' AND name = 'retry_node'; SET CONSTRAINTS ALL IMMEDIATE$$);

-- 3. Agent items retried on their own: a model error (a 429, the model
-- making no retries of its own here) on one item's first call; that item
-- runs again in a fresh lane, the other item once
SELECT adk_define_workflow('w889_agents',
    '[{"name": "list", "function": "public.w889_list(jsonb,jsonb)"},
      {"name": "each", "kind": "parallel_worker", "worker": "w889_echo",
       "retry": {"max_attempts": 2, "initial_delay": 0.01, "jitter": 0}},
      {"agent": "w889_echo"}]',
    '[{"from": "START", "to": "list"}, {"from": "list", "to": "each"}]');
SELECT adk_define_app('w889_agents_app', 'w889_agents');
SELECT path, output, error FROM w889_events('w889_agents_app', 'w889-a1', '["tea [[fault:429]]", "milk"]')
 WHERE path NOT LIKE '%w889_echo%';
SELECT * FROM w889_rows('w889-a1');
SELECT count(*) AS model_calls FROM adk.model_calls
 WHERE invocation_id IN (SELECT invocation_id FROM adk.invocations WHERE session_id = 'w889-a1');

-- 4. A timeout on the parallel worker bounds it whole: its slow items'
-- model calls (3 s) are cancelled at 0.5 s, the node fails with the
-- timeout error event, its items cancelled
SELECT adk_define_workflow('w889_slow',
    '[{"name": "list", "function": "public.w889_list(jsonb,jsonb)"},
      {"name": "each", "kind": "parallel_worker", "worker": "w889_sleeper", "timeout": 0.5},
      {"agent": "w889_sleeper"}]',
    '[{"from": "START", "to": "list"}, {"from": "list", "to": "each"}]');
SELECT adk_define_app('w889_slow_app', 'w889_slow');
UPDATE w889_clock SET t0 = clock_timestamp();
SELECT * FROM w889_events('w889_slow_app', 'w889-t1', '["x", "y"]');
SELECT clock_timestamp() - t0 < interval '2500 ms' AS stopped_early FROM w889_clock;
SELECT * FROM w889_rows('w889-t1');
SELECT status, error_code FROM adk.invocations WHERE session_id = 'w889-t1';

-- 5. Cancel during execution (ADK-Go TestParallelWorker_CancelDuringExecution):
-- a statement_timeout while the items run cancels the whole run -- not
-- the node's timeout (30 s here) -- and no output is stored
UPDATE adk.workflow_nodes SET timeout = '30 s' WHERE workflow = 'w889_slow' AND name = 'each';
SET statement_timeout = '1s';
SELECT expect_error($$SELECT * FROM adk_run('w889_slow_app', 'u', 'w889-c1', '["x", "y"]')$$);
RESET statement_timeout;
SELECT count(*) AS stored FROM adk.events WHERE session_id = 'w889-c1';

-- later files read every run of adk.workflow_runs: these runs go
DELETE FROM adk.sessions WHERE app_name LIKE 'w889%';
