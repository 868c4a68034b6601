-- Node settings of graph workflows (docs/workflows.md "Node settings"),
-- ADK-Go's NodeConfig and node schemas, with its cases ported
-- (workflow/scheduler_test.go, retry_loop_test.go, run_node_test.go,
-- hitl_test.go): input and output schemas, retry, timeout,
-- wait_for_output.

-- Every call of a node's function draws a number: a sequence is not
-- rolled back with a failed attempt, so it counts the attempts.
CREATE SEQUENCE w875_calls;
CREATE TABLE w875_cfg (fails integer);
INSERT INTO w875_cfg VALUES (0);
CREATE TABLE w875_log (t text);
CREATE FUNCTION w875_reset(fails integer) RETURNS void LANGUAGE sql AS $$
    SELECT setval('w875_calls', 1, false);
    UPDATE w875_cfg SET fails = $1;
$$;
CREATE FUNCTION w875_calls() RETURNS bigint LANGUAGE sql AS $$
    SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM w875_calls $$;
-- The user's text as output
CREATE FUNCTION w875_text(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', input #>> '{parts,0,text}') $$;
-- Its input, and that input's JSON type, as output
CREATE FUNCTION w875_echo(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', jsonb_build_object('got', input, 'type', jsonb_typeof(input)),
                              'n', nextval('w875_calls')) - 'n' $$;
-- Fails (after writing a row) until w875_cfg.fails calls have failed,
-- then gives "<input>:<node>" (ADK-Go's retryTestNode)
CREATE FUNCTION w875_flaky(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    n bigint := nextval('w875_calls');
BEGIN
    INSERT INTO w875_log VALUES ('attempt ' || n);
    IF n <= (SELECT fails FROM w875_cfg) THEN
        RAISE EXCEPTION 'fail attempt %', n;
    END IF;
    RETURN jsonb_build_object('output', coalesce(input #>> '{parts,0,text}', input #>> '{}') || ':' || (ctx ->> 'node'));
END $$;
-- "<input>:<node>" (ADK-Go's recordingNode)
CREATE FUNCTION w875_tag(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', coalesce(input #>> '{parts,0,text}', input #>> '{}') || ':' || (ctx ->> 'node')) $$;
-- Gives the value of the user's text as JSON
CREATE FUNCTION w875_give(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', (input #>> '{parts,0,text}')::jsonb) $$;
-- Sleeps (after writing a row) as long as the user's text says, on the
-- first call only
CREATE FUNCTION w875_slow(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO w875_log VALUES ('slow');
    IF nextval('w875_calls') = 1 THEN
        PERFORM pg_sleep(coalesce(input #>> '{parts,0,text}', input #>> '{}')::double precision);
    END IF;
    RETURN '{"output": "woke"}';
END $$;
-- The events of a run, one line each
CREATE FUNCTION w875_events(app text, sid text, msg text)
RETURNS TABLE (path text, output jsonb, output_for jsonb, error text)
LANGUAGE sql AS $$
    SELECT r.event_data #>> '{node_info,path}', r.event_data -> 'output',
           r.event_data #> '{node_info,output_for}',
           coalesce(r.event_data ->> 'error_code', '') || coalesce(': ' || (r.event_data ->> 'error_message'), '')
      FROM adk_run(app, 'u', sid, msg) r
     WHERE r.event_data ->> 'author' <> 'user'
     ORDER BY r.seq
$$;
CREATE FUNCTION w875_rows(app text)
RETURNS TABLE (node_path text, status text, attempt integer)
LANGUAGE sql AS $$
    SELECT r.node_path, r.status, r.attempt FROM adk.run_states r
     WHERE r.app_name = app AND r.node_path LIKE '%@%' ORDER BY r.session_id, r.node_path
$$;

-- 1. Input schema (ADK-Go TestScheduler_InputValidationSuccess, ...Failure)

-- The user's "123" reaches a node whose input_schema is an integer: a
-- string the schema does not take as a string is read as JSON, and the
-- node gets the number
SELECT adk_define_workflow('w875_in',
    '[{"name": "text", "function": "public.w875_text(jsonb,jsonb)"},
      {"name": "val", "function": "public.w875_echo(jsonb,jsonb)", "input_schema": {"type": "integer"},
       "retry": {"max_attempts": 3, "initial_delay": 0.001, "jitter": 0}}]',
    '[{"from": "START", "to": "text"}, {"from": "text", "to": "val"}]');
SELECT adk_define_app('w875_in_app', 'w875_in');
SELECT w875_reset(0);
SELECT path, output, error FROM w875_events('w875_in_app', 'i1', '123');
-- "not-an-integer" fails the node before its function runs, never
-- retried (the input is the same on every attempt); the node before it
-- keeps its event and completed row, the statement succeeds
SELECT path, output, error FROM w875_events('w875_in_app', 'i2', 'not-an-integer');
SELECT w875_calls() AS calls;
SELECT * FROM w875_rows('w875_in_app');
-- an enum of strings takes the string as it is
UPDATE adk.workflow_nodes SET input_schema = '{"enum": ["yes", "no"]}' WHERE workflow = 'w875_in' AND name = 'val';
SELECT path, output, error FROM w875_events('w875_in_app', 'i3', 'yes');
SELECT path, output, error FROM w875_events('w875_in_app', 'i4', 'maybe');

-- A join's input_schema applies to each predecessor's output (ADK-Go's
-- JoinNode.ValidateInput); a null output is not checked
CREATE FUNCTION w875_null(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT '{}'::jsonb $$;
CREATE FUNCTION w875_obj(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', jsonb_build_object('n', length(ctx ->> 'node'))) $$;
CREATE FUNCTION w875_bad(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT '{"output": {"m": 1}}'::jsonb $$;
SELECT adk_define_workflow('w875_join',
    '[{"name": "a", "function": "public.w875_obj(jsonb,jsonb)"},
      {"name": "bb", "function": "public.w875_obj(jsonb,jsonb)"},
      {"name": "c", "function": "public.w875_null(jsonb,jsonb)"},
      {"name": "j", "kind": "join", "input_schema": {"type": "object", "required": ["n"]}}]',
    '[{"from": "START", "to": "a"}, {"from": "START", "to": "bb"}, {"from": "START", "to": "c"},
      {"from": "a", "to": "j"}, {"from": "bb", "to": "j"}, {"from": "c", "to": "j"}]');
SELECT adk_define_app('w875_join_app', 'w875_join');
SELECT path, output, error FROM w875_events('w875_join_app', 'j1', 'go');
UPDATE adk.workflow_nodes SET function = 'w875_bad(jsonb,jsonb)' WHERE workflow = 'w875_join' AND name = 'bb';
SELECT path, output, error FROM w875_events('w875_join_app', 'j2', 'go');

-- 2. Output schema (ADK-Go TestScheduler_ValidateOutput_ValidPasses,
-- ...InvalidEndsActivation): checked before the event is stored; a
-- mismatch fails the node and is not retried
SELECT adk_define_workflow('w875_out',
    '[{"name": "n", "function": "public.w875_give(jsonb,jsonb)",
       "output_schema": {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]},
       "retry": {"max_attempts": 3, "initial_delay": 0.001, "jitter": 0}},
      {"name": "after", "function": "public.w875_echo(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "n"}, {"from": "n", "to": "after"}]');
SELECT adk_define_app('w875_out_app', 'w875_out');
SELECT path, output, error FROM w875_events('w875_out_app', 'o1', '{"value": "hello"}');
SELECT path, output, error FROM w875_events('w875_out_app', 'o2', '{"value": 123}');
SELECT path, output, error FROM w875_events('w875_out_app', 'o3', '{"other": "x"}');
-- a string holding JSON that matches is stored as that value
SELECT path, output, error FROM w875_events('w875_out_app', 'o4', '"{\"value\": \"text\"}"');
-- no output is not checked
SELECT path, output, error FROM w875_events('w875_out_app', 'o5', 'null');
SELECT * FROM w875_rows('w875_out_app');

-- 3. Retry (ADK-Go TestScheduler_RetryInChain, ...RetryNodeExhausted)

-- START -> a -> b -> c, b failing twice: a failed attempt leaves
-- nothing -- its subtransaction rolled back, no event (ADK-Go yields
-- none) --, b's row counts 3 attempts, c gets b's output
SELECT adk_define_workflow('w875_chain',
    '[{"name": "a", "function": "public.w875_tag(jsonb,jsonb)"},
      {"name": "b", "function": "public.w875_flaky(jsonb,jsonb)",
       "retry": {"max_attempts": 3, "initial_delay": 0.001, "backoff_factor": 1, "jitter": 0}},
      {"name": "c", "function": "public.w875_tag(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "a"}, {"from": "a", "to": "b"}, {"from": "b", "to": "c"}]');
SELECT adk_define_app('w875_chain_app', 'w875_chain');
SELECT w875_reset(2);
SELECT path, output, error FROM w875_events('w875_chain_app', 'c1', 'seed');
SELECT w875_calls() AS calls, (SELECT array_agg(t) FROM w875_log) AS kept;
SELECT * FROM w875_rows('w875_chain_app');

-- Every attempt fails: after max_attempts the last error fails the
-- node; the events before it stay, c never runs
SELECT w875_reset(10);
SELECT path, output, error FROM w875_events('w875_chain_app', 'c2', 'seed');
SELECT w875_calls() AS calls;
SELECT * FROM w875_rows('w875_chain_app');

-- max_attempts 1 is no retry, as no retry config is
UPDATE adk.workflow_nodes SET retry = '{"max_attempts": 1}' WHERE workflow = 'w875_chain' AND name = 'b';
SELECT w875_reset(1);
SELECT error FROM w875_events('w875_chain_app', 'c3', 'seed') WHERE error <> '';
SELECT w875_calls() AS calls;
UPDATE adk.workflow_nodes SET retry = NULL WHERE workflow = 'w875_chain' AND name = 'b';
SELECT w875_reset(1);
SELECT error FROM w875_events('w875_chain_app', 'c4', 'seed') WHERE error <> '';
SELECT w875_calls() AS calls;

-- A loop (ADK-Go TestScheduler_RetryLoop): each activation of A fails
-- twice, then succeeds; each activation gets all its attempts again
CREATE FUNCTION w875_loop(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    n bigint := nextval('w875_calls');
BEGIN
    IF n % 3 <> 0 THEN
        RAISE EXCEPTION 'fail attempt %', n;
    END IF;
    RETURN jsonb_build_object('output', coalesce(input #>> '{parts,0,text}', input #>> '{}') || ':A',
                              'route', CASE WHEN n >= 6 THEN 'finish' ELSE 'loop' END);
END $$;
SELECT adk_define_workflow('w875_loop',
    '[{"name": "A", "function": "public.w875_loop(jsonb,jsonb)",
       "retry": {"max_attempts": 3, "initial_delay": 0, "jitter": 0}},
      {"name": "Finish", "function": "public.w875_tag(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "A"}, {"from": "A", "to": "A", "route": "loop"},
      {"from": "A", "to": "Finish", "route": "finish"}]');
SELECT adk_define_app('w875_loop_app', 'w875_loop');
SELECT w875_reset(0);
SELECT path, output, error FROM w875_events('w875_loop_app', 'l1', 'seed');
SELECT w875_calls() AS calls;
SELECT * FROM w875_rows('w875_loop_app');

-- A tool node is retried the same way
CREATE FUNCTION w875_tool(city text) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    IF nextval('w875_calls') <= (SELECT fails FROM w875_cfg) THEN
        RAISE EXCEPTION 'no forecast for % yet', city;
    END IF;
    RETURN jsonb_build_object('city', upper(city));
END $$;
SELECT adk_define_tool('w875_tool(text)'::regprocedure);
CREATE FUNCTION w875_args(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', jsonb_build_object('city', input #>> '{parts,0,text}')) $$;
SELECT adk_define_workflow('w875_tools',
    '[{"name": "args", "function": "public.w875_args(jsonb,jsonb)"},
      {"tool": "w875_tool", "retry": {"max_attempts": 2, "initial_delay": 0.001, "jitter": 0}}]',
    '[{"from": "START", "to": "args"}, {"from": "args", "to": "w875_tool"}]');
SELECT adk_define_app('w875_tools_app', 'w875_tools');
SELECT w875_reset(1);
SELECT path, output, error FROM w875_events('w875_tools_app', 't1', 'oslo');
SELECT w875_reset(5);
SELECT path, output, error FROM w875_events('w875_tools_app', 't2', 'oslo');
SELECT * FROM w875_rows('w875_tools_app');

-- The waits between attempts (ADK-Go TestCalculateDelay): initial_delay
-- 0.2 s doubling waits 0.2 + 0.4 s before the third attempt; a max_delay
-- of 0.25 s caps the second wait
UPDATE adk.workflow_nodes SET retry = '{"max_attempts": 3, "initial_delay": 0.2, "backoff_factor": 2, "jitter": 0}'
 WHERE workflow = 'w875_chain' AND name = 'b';
SELECT w875_reset(2);
CREATE TEMP TABLE w875_t AS SELECT clock_timestamp() AS t0;
SELECT count(*) AS events FROM w875_events('w875_chain_app', 'c5', 'seed');
SELECT extract(epoch FROM clock_timestamp() - t0) BETWEEN 0.6 AND 5 AS waited_backoff FROM w875_t;
UPDATE adk.workflow_nodes SET retry = '{"max_attempts": 3, "initial_delay": 0.2, "backoff_factor": 10, "max_delay": 0.25, "jitter": 0}'
 WHERE workflow = 'w875_chain' AND name = 'b';
SELECT w875_reset(2);
UPDATE w875_t SET t0 = clock_timestamp();
SELECT count(*) AS events FROM w875_events('w875_chain_app', 'c6', 'seed');
SELECT extract(epoch FROM clock_timestamp() - t0) BETWEEN 0.45 AND 1.9 AS waited_capped FROM w875_t;

-- 4. Timeout (ADK-Go TestScheduler_NodeTimeout): a function that runs
-- past its node's timeout is stopped, its work rolled back, the node
-- failed with a clear message; the node before it keeps its event
TRUNCATE w875_log;
SELECT adk_define_workflow('w875_slow',
    '[{"name": "first", "function": "public.w875_text(jsonb,jsonb)"},
      {"name": "slow", "function": "public.w875_slow(jsonb,jsonb)", "timeout": 0.1}]',
    '[{"from": "START", "to": "first"}, {"from": "first", "to": "slow"}]');
SELECT adk_define_app('w875_slow_app', 'w875_slow');
SELECT w875_reset(0);
UPDATE w875_t SET t0 = clock_timestamp();
SELECT path, output, error FROM w875_events('w875_slow_app', 's1', '30');
SELECT extract(epoch FROM clock_timestamp() - t0) < 10 AS stopped_early FROM w875_t;
SELECT count(*) AS logged FROM w875_log;
SELECT * FROM w875_rows('w875_slow_app');
-- the timer is disarmed: this statement outlives the node's timeout
SELECT 'slept' AS not_cancelled FROM pg_sleep(0.3);
-- a node that ends within its timeout completes
SELECT w875_reset(0);
SELECT path, output, error FROM w875_events('w875_slow_app', 's2', '0.01');
SELECT 'slept' AS not_cancelled FROM pg_sleep(0.3);

-- Retry and timeout together (ADK-Go: a timed-out attempt is retried):
-- the first attempt sleeps past the timeout, the second completes
UPDATE adk.workflow_nodes SET retry = '{"max_attempts": 2, "initial_delay": 0.001, "jitter": 0}'
 WHERE workflow = 'w875_slow' AND name = 'slow';
SELECT w875_reset(0);
SELECT path, output, error FROM w875_events('w875_slow_app', 's3', '30');
SELECT * FROM w875_rows('w875_slow_app') WHERE node_path LIKE '%slow@%' AND status = 'completed';

-- A tool node's call runs under both its node's timeout and
-- adk.tool_timeout: whichever fires first stops it, with its own message
CREATE FUNCTION w875_nap(secs double precision) RETURNS jsonb LANGUAGE sql AS $$
    SELECT '{"woke": true}'::jsonb FROM pg_sleep(secs) $$;
SELECT adk_define_tool('w875_nap(double precision)'::regprocedure);
CREATE FUNCTION w875_secs(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', jsonb_build_object('secs', (input #>> '{parts,0,text}')::float8)) $$;
SELECT adk_define_workflow('w875_naps',
    '[{"name": "secs", "function": "public.w875_secs(jsonb,jsonb)"},
      {"tool": "w875_nap", "timeout": 0.1}]',
    '[{"from": "START", "to": "secs"}, {"from": "secs", "to": "w875_nap"}]');
SELECT adk_define_app('w875_naps_app', 'w875_naps');
SET adk.tool_timeout = 5000;
SELECT path, output, error FROM w875_events('w875_naps_app', 'n1', '30');
SET adk.tool_timeout = 50;
SELECT path, output, error FROM w875_events('w875_naps_app', 'n2', '30');
RESET adk.tool_timeout;
SELECT path, output, error FROM w875_events('w875_naps_app', 'n3', '0');

-- Hostile: a real cancel is never taken for the node's timeout -- a
-- statement_timeout shorter than the node's timeout cancels the whole
-- run (nothing of it is stored) ...
UPDATE adk.workflow_nodes SET timeout = '20 s' WHERE workflow = 'w875_slow' AND name = 'slow';
SELECT w875_reset(0);
SET statement_timeout = '300ms';
SELECT expect_error($$SELECT * FROM adk_run('w875_slow_app', 'u', 's4', '30')$$);
RESET statement_timeout;
SELECT count(*) AS stored FROM adk.events WHERE app_name = 'w875_slow_app' AND session_id = 's4';
-- ... and so does one during a wait between attempts
UPDATE adk.workflow_nodes SET retry = '{"max_attempts": 5, "initial_delay": 30, "jitter": 0}'
 WHERE workflow = 'w875_chain' AND name = 'b';
SELECT w875_reset(10);
UPDATE w875_t SET t0 = clock_timestamp();
SET statement_timeout = '300ms';
SELECT expect_error($$SELECT * FROM adk_run('w875_chain_app', 'u', 'c7', 'seed')$$);
RESET statement_timeout;
SELECT extract(epoch FROM clock_timestamp() - t0) < 10 AS cancelled_in_wait, w875_calls() AS calls FROM w875_t;
SELECT count(*) AS stored FROM adk.events WHERE app_name = 'w875_chain_app' AND session_id = 'c7';

-- 5. wait_for_output (ADK-Go TestScheduler_WaitForOutputPause_SuspendsWorkflow,
-- TestRunNode_WaitForOutputChildWithOutput_Completes, ...NoWaitForOutput...):
-- an activation that ends without output does not complete -- its event
-- (its state delta) is stored without output_for, its row stays running,
-- downstream does not run
CREATE FUNCTION w875_maybe(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT CASE WHEN input #>> '{parts,0,text}' = 'none' OR input = '"seed:src"'
                THEN '{"state_delta": {"w875_seen": true}}'::jsonb
                ELSE jsonb_build_object('output', 'done') END $$;
SELECT adk_define_workflow('w875_wait',
    '[{"name": "waiter", "function": "public.w875_maybe(jsonb,jsonb)", "wait_for_output": true},
      {"name": "downstream", "function": "public.w875_tag(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "waiter"}, {"from": "waiter", "to": "downstream"}]');
SELECT adk_define_app('w875_wait_app', 'w875_wait');
SELECT path, output, output_for, error FROM w875_events('w875_wait_app', 'w1', 'none');
SELECT * FROM w875_rows('w875_wait_app');
SELECT state ->> 'w875_seen' AS seen FROM adk.sessions WHERE app_name = 'w875_wait_app' AND id = 'w1';
-- with output it completes
SELECT path, output, output_for, error FROM w875_events('w875_wait_app', 'w2', 'go');
-- without wait_for_output, no output completes it, downstream gets no input
UPDATE adk.workflow_nodes SET wait_for_output = false WHERE workflow = 'w875_wait' AND name = 'waiter';
SELECT path, output, output_for, error FROM w875_events('w875_wait_app', 'w3', 'none');
-- a waiting node triggered again runs again: src loops once, its first
-- output leaves waiter waiting, its second one completes it
CREATE FUNCTION w875_src(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', CASE WHEN input ? 'parts' THEN 'seed:src' ELSE 'again:src' END,
                              'route', CASE WHEN input ? 'parts' THEN 'again' ELSE 'stop' END) $$;
SELECT adk_define_workflow('w875_rewait',
    '[{"name": "src", "function": "public.w875_src(jsonb,jsonb)"},
      {"name": "waiter", "function": "public.w875_maybe(jsonb,jsonb)", "wait_for_output": true},
      {"name": "downstream", "function": "public.w875_tag(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "src"}, {"from": "src", "to": "src", "route": "again"},
      {"from": "src", "to": "waiter"}, {"from": "waiter", "to": "downstream"}]');
SELECT adk_define_app('w875_rewait_app', 'w875_rewait');
SELECT path, output, output_for, error FROM w875_events('w875_rewait_app', 'r1', 'go');
SELECT * FROM w875_rows('w875_rewait_app');

-- 6. What is still refused: a retry or a timeout on a join (it makes no
-- call), and the other node kinds
SELECT adk_define_workflow('w875_joinretry',
    '[{"name": "a", "function": "public.w875_tag(jsonb,jsonb)"},
      {"name": "j", "kind": "join", "retry": {}}]',
    '[{"from": "START", "to": "a"}, {"from": "a", "to": "j"}]');
SELECT adk_define_app('w875_joinretry_app', 'w875_joinretry');
SELECT expect_error($$SELECT * FROM adk_run('w875_joinretry_app', 'u', 'x1', 'go')$$);
UPDATE adk.workflow_nodes SET retry = NULL, timeout = '1 s' WHERE workflow = 'w875_joinretry' AND name = 'j';
SELECT expect_error($$SELECT * FROM adk_run('w875_joinretry_app', 'u', 'x2', 'go')$$);

-- later files read every run of adk.workflow_runs: these runs go
DELETE FROM adk.sessions WHERE app_name LIKE 'w875%';
