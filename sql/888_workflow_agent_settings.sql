-- Node settings on agent and nested workflow nodes (docs/workflows.md
-- "Node settings"): an agent node's output_schema and wait_for_output,
-- and a timeout and a retry on agent and nested workflow nodes -- a
-- deadline on the node's lane, a new attempt a fresh lane -- with ADK-Go's
-- RetryConfig rules (a model error is retried, a schema mismatch never).
SELECT adk_define_model('w888_fast', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'gpt-test', api_key_secret => 'test-key', options => '{"retries": 0}');
SELECT adk_define_model('w888_slow', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'gpt-latency-3000', api_key_secret => 'test-key', options => '{"retries": 0}');
SELECT adk_define_model('w888_bad', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'fault-400', api_key_secret => 'test-key', options => '{"retries": 0}');
SELECT adk_define_agent('w888_writer', model => 'w888_fast', mode => 'single_turn', instruction => 'Write.');
SELECT adk_define_agent('w888_sleeper', model => 'w888_slow', mode => 'single_turn', instruction => 'Think.');
SELECT adk_define_agent('w888_broken', model => 'w888_bad', mode => 'single_turn', instruction => 'Fail.');
-- "<input>:<node>"
CREATE FUNCTION w888_tag(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', coalesce(input #>> '{parts,0,text}', input #>> '{}') || ':' || (ctx ->> 'node')) $$;
-- Fails on its first call of each reset (a sequence counts the calls: it
-- is not rolled back with the failed call)
CREATE SEQUENCE w888_calls;
CREATE FUNCTION w888_flaky(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    IF nextval('w888_calls') = 1 THEN
        RAISE EXCEPTION 'flaky first call';
    END IF;
    RETURN jsonb_build_object('output', 'steady:' || (ctx ->> 'node'));
END $$;
-- The events of a run, one line each
CREATE FUNCTION w888_events(app text, sid text, msg text)
RETURNS TABLE (author text, path text, output jsonb, output_for jsonb, error text)
LANGUAGE sql AS $$
    SELECT r.event_data ->> 'author', r.event_data #>> '{node_info,path}', r.event_data -> 'output',
           r.event_data #> '{node_info,output_for}',
           coalesce(r.event_data ->> 'error_code', '') || coalesce(': ' || (r.event_data ->> 'error_message'), '')
      FROM adk_run(app, 'u', sid, msg) r
     WHERE r.event_data ->> 'author' <> 'user'
     ORDER BY r.seq
$$;
CREATE FUNCTION w888_rows(sid text)
RETURNS TABLE (node_path text, status text, attempt integer, output jsonb)
LANGUAGE sql AS $$
    SELECT r.node_path, r.status, r.attempt, r.output FROM adk.run_states r
     WHERE r.session_id = sid AND r.node_path LIKE '%@%' ORDER BY r.node_path
$$;
CREATE TEMP TABLE w888_clock AS SELECT clock_timestamp() AS t0;

-- 1. output_schema on an agent node: the agent's answer is checked before
-- the node completes.  A JSON text that matches is the node's output (as a
-- value); the agent's own event does not finish the node, the workflow's
-- event does.
SELECT adk_define_workflow('w888_out',
    '[{"agent": "w888_writer", "output_schema": {"type": "object", "required": ["ok"]},
       "retry": {"max_attempts": 3, "initial_delay": 0.01, "jitter": 0}},
      {"name": "after", "function": "public.w888_tag(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "w888_writer"}, {"from": "w888_writer", "to": "after"}]');
SELECT adk_define_app('w888_out_app', 'w888_out');
SELECT * FROM w888_events('w888_out_app', 'w888-o1', '[[say:{"ok": true}]]');
SELECT * FROM w888_rows('w888-o1');
-- a mismatch fails the node: its row failed, never completed, and it is
-- not retried (one model call), though the node has a retry
SELECT * FROM w888_events('w888_out_app', 'w888-o2', 'plain words');
SELECT * FROM w888_rows('w888-o2');
SELECT count(*) AS model_calls FROM adk.model_calls
 WHERE invocation_id IN (SELECT invocation_id FROM adk.invocations WHERE session_id = 'w888-o2');
SELECT status, error_code FROM adk.invocations WHERE session_id = 'w888-o2';
-- adk_rebuild_run_states derives the same from the events
SELECT adk_rebuild_run_states('w888_out_app', 'u', 'w888-o2') > 0 AS rebuilt;
SELECT * FROM w888_rows('w888-o2');

-- 2. wait_for_output on an agent node: an agent that gives no answer of
-- its own (a before_agent callback answers for it) has no output; the node
-- does not complete -- its row stays running, the workflow's event does
-- not finish it -- and its successor does not run
CREATE FUNCTION w888_hush(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT CASE WHEN ctx ->> 'agent' = 'w888_mute'
                THEN '{"role": "model", "parts": [{"text": "(skipped)"}]}'::jsonb END $$;
SELECT adk_define_plugin('w888_hush', before_agent => 'w888_hush(jsonb)');
SELECT adk_define_agent('w888_mute', model => 'w888_fast', mode => 'single_turn', instruction => 'Say nothing.');
SELECT adk_define_workflow('w888_wait',
    '[{"agent": "w888_mute", "wait_for_output": true},
      {"name": "after", "function": "public.w888_tag(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "w888_mute"}, {"from": "w888_mute", "to": "after"}]');
SELECT adk_define_app('w888_wait_app', 'w888_wait', plugins => ARRAY['w888_hush']);
SELECT author, path, output, output_for, error FROM w888_events('w888_wait_app', 'w888-w1', 'hello');
SELECT * FROM w888_rows('w888-w1');
-- without wait_for_output the same node completes with no output
UPDATE adk.workflow_nodes SET wait_for_output = false WHERE workflow = 'w888_wait' AND name = 'w888_mute';
SELECT author, path, output, output_for, error FROM w888_events('w888_wait_app', 'w888-w2', 'hello');
SELECT * FROM w888_rows('w888-w2');

-- 3. timeout on an agent node: its model call (3 s) is cancelled when the
-- deadline (0.5 s) passes; the node fails with the timeout error event,
-- its row failed; the branch beside it had completed
SELECT adk_define_workflow('w888_slow',
    '[{"agent": "w888_sleeper", "timeout": 0.5},
      {"name": "side", "function": "public.w888_tag(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "w888_sleeper"}, {"from": "START", "to": "side"}]');
SELECT adk_define_app('w888_slow_app', 'w888_slow');
UPDATE w888_clock SET t0 = clock_timestamp();
SELECT * FROM w888_events('w888_slow_app', 'w888-t1', 'ponder');
SELECT clock_timestamp() - t0 < interval '2500 ms' AS stopped_early FROM w888_clock;
SELECT * FROM w888_rows('w888-t1');
SELECT status, error_code FROM adk.invocations WHERE session_id = 'w888-t1';
-- the call was cancelled, not waited for: no answer was recorded
SELECT count(*) AS model_calls FROM adk.model_calls
 WHERE invocation_id IN (SELECT invocation_id FROM adk.invocations WHERE session_id = 'w888-t1');
-- a user's statement_timeout during the node still cancels the whole run
-- (the node's timeout is 30 s)
UPDATE adk.workflow_nodes SET timeout = '30 s' WHERE workflow = 'w888_slow' AND name = 'w888_sleeper';
SET statement_timeout = '1s';
SELECT expect_error($$SELECT * FROM adk_run('w888_slow_app', 'u', 'w888-t2', 'ponder')$$);
RESET statement_timeout;
SELECT count(*) AS stored FROM adk.events WHERE session_id = 'w888-t2';

-- 4. retry on an agent node: a model call that hangs once is cancelled by
-- the timeout, and the next attempt -- a fresh lane, the same row, its
-- attempt counted -- answers.  The failed attempt leaves no event.
SELECT adk_define_workflow('w888_hang',
    '[{"agent": "w888_writer", "timeout": 1.5, "retry": {"max_attempts": 3, "initial_delay": 0.05, "jitter": 0}},
      {"name": "after", "function": "public.w888_tag(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "w888_writer"}, {"from": "w888_writer", "to": "after"}]');
SELECT adk_define_app('w888_hang_app', 'w888_hang');
SELECT * FROM w888_events('w888_hang_app', 'w888-r1', 'tea [[fault:hang-once]]');
SELECT * FROM w888_rows('w888-r1');
SELECT status, error_code FROM adk.invocations WHERE session_id = 'w888-r1';
-- a model error is retried the same way: a 429 on the first request (the
-- model makes no retries of its own here), its answer on the second
SELECT * FROM w888_events('w888_hang_app', 'w888-r2', 'coffee [[fault:429]]');
SELECT * FROM w888_rows('w888-r2');
SELECT count(*) AS model_calls FROM adk.model_calls
 WHERE invocation_id IN (SELECT invocation_id FROM adk.invocations WHERE session_id = 'w888-r2');
-- the last attempt's model error is the run's usual error event: the node
-- fails after max_attempts model calls, its row failed with 2 attempts
SELECT adk_define_workflow('w888_broke',
    '[{"agent": "w888_broken", "retry": {"max_attempts": 2, "initial_delay": 0.01, "jitter": 0}},
      {"name": "after", "function": "public.w888_tag(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "w888_broken"}, {"from": "w888_broken", "to": "after"}]');
SELECT adk_define_app('w888_broke_app', 'w888_broke');
SELECT author, path, output, error FROM w888_events('w888_broke_app', 'w888-r3', 'hi');
SELECT * FROM w888_rows('w888-r3');
SELECT count(*) AS model_calls FROM adk.model_calls
 WHERE invocation_id IN (SELECT invocation_id FROM adk.invocations WHERE session_id = 'w888-r3');
-- a timeout on every attempt: the node fails saying how many were made
SELECT adk_define_workflow('w888_always',
    '[{"agent": "w888_sleeper", "timeout": 0.3, "retry": {"max_attempts": 2, "initial_delay": 0.01, "jitter": 0}}]',
    '[{"from": "START", "to": "w888_sleeper"}]');
SELECT adk_define_app('w888_always_app', 'w888_always');
SELECT * FROM w888_events('w888_always_app', 'w888-r4', 'ponder');
SELECT * FROM w888_rows('w888-r4');

-- 5. a retried agent node beside another branch: the other branch goes
-- on, and the join gets the retried node's answer
SELECT adk_define_workflow('w888_beside',
    '[{"agent": "w888_writer", "timeout": 1.5, "retry": {"max_attempts": 2, "initial_delay": 0.5, "jitter": 0}},
      {"name": "side", "function": "public.w888_tag(jsonb,jsonb)"}, {"name": "both", "kind": "join"}]',
    '[{"from": "START", "to": "w888_writer"}, {"from": "START", "to": "side"},
      {"from": "w888_writer", "to": "both"}, {"from": "side", "to": "both"}]');
SELECT adk_define_app('w888_beside_app', 'w888_beside');
SELECT author, path, output, error FROM w888_events('w888_beside_app', 'w888-b1', 'x [[fault:hang-once]]');
SELECT * FROM w888_rows('w888-b1');

-- 6. nested workflow nodes: a timeout stops the nested workflow (its
-- agent's model call cancelled, its rows cancelled), and a retry runs it
-- again from its START when a node of it failed
SELECT adk_define_workflow('w888_inner_slow',
    '[{"agent": "w888_sleeper"}]', '[{"from": "START", "to": "w888_sleeper"}]');
SELECT adk_define_workflow('w888_outer_slow',
    '[{"name": "inner", "workflow": "w888_inner_slow", "timeout": 0.5}]',
    '[{"from": "START", "to": "inner"}]');
SELECT adk_define_app('w888_outer_slow_app', 'w888_outer_slow');
UPDATE w888_clock SET t0 = clock_timestamp();
SELECT * FROM w888_events('w888_outer_slow_app', 'w888-n1', 'ponder');
SELECT clock_timestamp() - t0 < interval '2500 ms' AS stopped_early FROM w888_clock;
SELECT * FROM w888_rows('w888-n1');
SELECT adk_define_workflow('w888_inner_flaky',
    '[{"name": "step", "function": "public.w888_flaky(jsonb,jsonb)"}]', '[{"from": "START", "to": "step"}]');
SELECT adk_define_workflow('w888_outer_flaky',
    '[{"name": "inner", "workflow": "w888_inner_flaky", "retry": {"max_attempts": 2, "initial_delay": 0.01, "jitter": 0}},
      {"name": "after", "function": "public.w888_tag(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "inner"}, {"from": "inner", "to": "after"}]');
SELECT adk_define_app('w888_outer_flaky_app', 'w888_outer_flaky');
SELECT setval('w888_calls', 1, false);
SELECT * FROM w888_events('w888_outer_flaky_app', 'w888-n2', 'go');
SELECT * FROM w888_rows('w888-n2');
SELECT last_value AS calls FROM w888_calls;
-- without the retry the inner failure fails the node
UPDATE adk.workflow_nodes SET retry = NULL WHERE workflow = 'w888_outer_flaky' AND name = 'inner';
SELECT setval('w888_calls', 1, false);
SELECT * FROM w888_events('w888_outer_flaky_app', 'w888-n3', 'go');
SELECT * FROM w888_rows('w888-n3');

-- a retry inside a retried nested workflow comes first: the inner agent
-- node's 429 is retried by its own retry (attempt 2), the nested workflow
-- node runs once (attempt 1)
SELECT adk_define_workflow('w888_inner_agent',
    '[{"agent": "w888_writer", "retry": {"max_attempts": 2, "initial_delay": 0.01, "jitter": 0}}]',
    '[{"from": "START", "to": "w888_writer"}]');
SELECT adk_define_workflow('w888_outer_agent',
    '[{"name": "inner", "workflow": "w888_inner_agent", "retry": {"max_attempts": 2, "initial_delay": 0.01, "jitter": 0}}]',
    '[{"from": "START", "to": "inner"}]');
SELECT adk_define_app('w888_outer_agent_app', 'w888_outer_agent');
SELECT author, path, output, error FROM w888_events('w888_outer_agent_app', 'w888-n4', 'nested [[fault:429]]');
SELECT node_path, status, attempt FROM w888_rows('w888-n4');

-- later files read every run of adk.workflow_runs: these runs go
DELETE FROM adk.sessions WHERE app_name LIKE 'w888%';
