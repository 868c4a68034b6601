-- Node settings of graph workflows (docs/workflows.md "Node settings"),
-- ADK-Go's NodeConfig and node schemas, with its cases ported
-- (workflow/scheduler_test.go, retry_loop_test.go, run_node_test.go,
-- hitl_test.go): input and output schemas, retry, timeout,
-- wait_for_output.

-- Every call of a node's function draws a number: a sequence is not
-- rolled back with a failed attempt, so it counts the attempts.
CREATE SEQUENCE w864_calls;
CREATE TABLE w864_cfg (fails integer);
INSERT INTO w864_cfg VALUES (0);
CREATE TABLE w864_log (t text);
CREATE FUNCTION w864_reset(fails integer) RETURNS void LANGUAGE sql AS $$
    SELECT setval('w864_calls', 1, false);
    UPDATE w864_cfg SET fails = $1;
$$;
CREATE FUNCTION w864_calls() RETURNS bigint LANGUAGE sql AS $$
    SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM w864_calls $$;
-- The user's text as output
CREATE FUNCTION w864_text(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', input #>> '{parts,0,text}') $$;
-- Its input, and that input's JSON type, as output
CREATE FUNCTION w864_echo(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', jsonb_build_object('got', input, 'type', jsonb_typeof(input)),
                              'n', nextval('w864_calls')) - 'n' $$;
-- Fails (after writing a row) until w864_cfg.fails calls have failed,
-- then gives "<input>:<node>" (ADK-Go's retryTestNode)
CREATE FUNCTION w864_flaky(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    n bigint := nextval('w864_calls');
BEGIN
    INSERT INTO w864_log VALUES ('attempt ' || n);
    IF n <= (SELECT fails FROM w864_cfg) THEN
        RAISE EXCEPTION 'fail attempt %', n;
    END IF;
    RETURN jsonb_build_object('output', coalesce(input #>> '{parts,0,text}', input #>> '{}') || ':' || (ctx ->> 'node'));
END $$;
-- "<input>:<node>" (ADK-Go's recordingNode)
CREATE FUNCTION w864_tag(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', coalesce(input #>> '{parts,0,text}', input #>> '{}') || ':' || (ctx ->> 'node')) $$;
-- Gives the value of the user's text as JSON
CREATE FUNCTION w864_give(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', (input #>> '{parts,0,text}')::jsonb) $$;
-- Sleeps (after writing a row) as long as the user's text says, on the
-- first call only
CREATE FUNCTION w864_slow(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO w864_log VALUES ('slow');
    IF nextval('w864_calls') = 1 THEN
        PERFORM pg_sleep(coalesce(input #>> '{parts,0,text}', input #>> '{}')::double precision);
    END IF;
    RETURN '{"output": "woke"}';
END $$;
-- The events of a run, one line each
CREATE FUNCTION w864_events(app text, sid text, msg text)
RETURNS TABLE (path text, output jsonb, output_for jsonb, error text)
LANGUAGE sql AS $$
    SELECT r.event_data #>> '{node_info,path}', r.event_data -> 'output',
           r.event_data #> '{node_info,output_for}',
           coalesce(r.event_data ->> 'error_code', '') || coalesce(': ' || (r.event_data ->> 'error_message'), '')
      FROM adk_run(app, 'u', sid, msg) r
     WHERE r.event_data ->> 'author' <> 'user'
     ORDER BY r.seq
$$;
CREATE FUNCTION w864_rows(app text)
RETURNS TABLE (node_path text, status text, attempt integer)
LANGUAGE sql AS $$
    SELECT r.node_path, r.status, r.attempt FROM adk.run_states r
     WHERE r.app_name = app AND r.node_path LIKE '%@%' ORDER BY r.session_id, r.node_path
$$;

-- 1. Input schema (ADK-Go TestScheduler_InputValidationSuccess, ...Failure)

-- The user's "123" reaches a node whose input_schema is an integer: a
-- string the schema does not take as a string is read as JSON, and the
-- node gets the number
SELECT adk_define_workflow('w864_in',
    '[{"name": "text", "function": "public.w864_text(jsonb,jsonb)"},
      {"name": "val", "function": "public.w864_echo(jsonb,jsonb)", "input_schema": {"type": "integer"},
       "retry": {"max_attempts": 3, "initial_delay": 0.001, "jitter": 0}}]',
    '[{"from": "START", "to": "text"}, {"from": "text", "to": "val"}]');
SELECT adk_define_app('w864_in_app', 'w864_in');
SELECT w864_reset(0);
SELECT path, output, error FROM w864_events('w864_in_app', 'i1', '123');
-- "not-an-integer" fails the node before its function runs, never
-- retried (the input is the same on every attempt); the node before it
-- keeps its event and completed row, the statement succeeds
SELECT path, output, error FROM w864_events('w864_in_app', 'i2', 'not-an-integer');
SELECT w864_calls() AS calls;
SELECT * FROM w864_rows('w864_in_app');
-- an enum of strings takes the string as it is
UPDATE adk.workflow_nodes SET input_schema = '{"enum": ["yes", "no"]}' WHERE workflow = 'w864_in' AND name = 'val';
SELECT path, output, error FROM w864_events('w864_in_app', 'i3', 'yes');
SELECT path, output, error FROM w864_events('w864_in_app', 'i4', 'maybe');

-- A join's input_schema applies to each predecessor's output (ADK-Go's
-- JoinNode.ValidateInput); a null output is not checked
CREATE FUNCTION w864_null(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT '{}'::jsonb $$;
CREATE FUNCTION w864_obj(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', jsonb_build_object('n', length(ctx ->> 'node'))) $$;
CREATE FUNCTION w864_bad(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT '{"output": {"m": 1}}'::jsonb $$;
SELECT adk_define_workflow('w864_join',
    '[{"name": "a", "function": "public.w864_obj(jsonb,jsonb)"},
      {"name": "bb", "function": "public.w864_obj(jsonb,jsonb)"},
      {"name": "c", "function": "public.w864_null(jsonb,jsonb)"},
      {"name": "j", "kind": "join", "input_schema": {"type": "object", "required": ["n"]}}]',
    '[{"from": "START", "to": "a"}, {"from": "START", "to": "bb"}, {"from": "START", "to": "c"},
      {"from": "a", "to": "j"}, {"from": "bb", "to": "j"}, {"from": "c", "to": "j"}]');
SELECT adk_define_app('w864_join_app', 'w864_join');
SELECT path, output, error FROM w864_events('w864_join_app', 'j1', 'go');
UPDATE adk.workflow_nodes SET function = 'w864_bad(jsonb,jsonb)' WHERE workflow = 'w864_join' AND name = 'bb';
SELECT path, output, error FROM w864_events('w864_join_app', 'j2', 'go');

-- 2. Output schema (ADK-Go TestScheduler_ValidateOutput_ValidPasses,
-- ...InvalidEndsActivation): checked before the event is stored; a
-- mismatch fails the node and is not retried
SELECT adk_define_workflow('w864_out',
    '[{"name": "n", "function": "public.w864_give(jsonb,jsonb)",
       "output_schema": {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]},
       "retry": {"max_attempts": 3, "initial_delay": 0.001, "jitter": 0}},
      {"name": "after", "function": "public.w864_echo(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "n"}, {"from": "n", "to": "after"}]');
SELECT adk_define_app('w864_out_app', 'w864_out');
SELECT path, output, error FROM w864_events('w864_out_app', 'o1', '{"value": "hello"}');
SELECT path, output, error FROM w864_events('w864_out_app', 'o2', '{"value": 123}');
SELECT path, output, error FROM w864_events('w864_out_app', 'o3', '{"other": "x"}');
-- a string holding JSON that matches is stored as that value
SELECT path, output, error FROM w864_events('w864_out_app', 'o4', '"{\"value\": \"text\"}"');
-- no output is not checked
SELECT path, output, error FROM w864_events('w864_out_app', 'o5', 'null');
SELECT * FROM w864_rows('w864_out_app');

-- 3. Retry (ADK-Go TestScheduler_RetryInChain, ...RetryNodeExhausted)

-- START -> a -> b -> c, b failing twice: a failed attempt leaves
-- nothing -- its subtransaction rolled back, no event (ADK-Go yields
-- none) --, b's row counts 3 attempts, c gets b's output
SELECT adk_define_workflow('w864_chain',
    '[{"name": "a", "function": "public.w864_tag(jsonb,jsonb)"},
      {"name": "b", "function": "public.w864_flaky(jsonb,jsonb)",
       "retry": {"max_attempts": 3, "initial_delay": 0.001, "backoff_factor": 1, "jitter": 0}},
      {"name": "c", "function": "public.w864_tag(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "a"}, {"from": "a", "to": "b"}, {"from": "b", "to": "c"}]');
SELECT adk_define_app('w864_chain_app', 'w864_chain');
SELECT w864_reset(2);
SELECT path, output, error FROM w864_events('w864_chain_app', 'c1', 'seed');
SELECT w864_calls() AS calls, (SELECT array_agg(t) FROM w864_log) AS kept;
SELECT * FROM w864_rows('w864_chain_app');

-- Every attempt fails: after max_attempts the last error fails the
-- node; the events before it stay, c never runs
SELECT w864_reset(10);
SELECT path, output, error FROM w864_events('w864_chain_app', 'c2', 'seed');
SELECT w864_calls() AS calls;
SELECT * FROM w864_rows('w864_chain_app');

-- max_attempts 1 is no retry, as no retry config is
UPDATE adk.workflow_nodes SET retry = '{"max_attempts": 1}' WHERE workflow = 'w864_chain' AND name = 'b';
SELECT w864_reset(1);
SELECT error FROM w864_events('w864_chain_app', 'c3', 'seed') WHERE error <> '';
SELECT w864_calls() AS calls;
UPDATE adk.workflow_nodes SET retry = NULL WHERE workflow = 'w864_chain' AND name = 'b';
SELECT w864_reset(1);
SELECT error FROM w864_events('w864_chain_app', 'c4', 'seed') WHERE error <> '';
SELECT w864_calls() AS calls;

-- A loop (ADK-Go TestScheduler_RetryLoop): each activation of A fails
-- twice, then succeeds; each activation gets all its attempts again
CREATE FUNCTION w864_loop(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    n bigint := nextval('w864_calls');
BEGIN
    IF n % 3 <> 0 THEN
        RAISE EXCEPTION 'fail attempt %', n;
    END IF;
    RETURN jsonb_build_object('output', coalesce(input #>> '{parts,0,text}', input #>> '{}') || ':A',
                              'route', CASE WHEN n >= 6 THEN 'finish' ELSE 'loop' END);
END $$;
SELECT adk_define_workflow('w864_loop',
    '[{"name": "A", "function": "public.w864_loop(jsonb,jsonb)",
       "retry": {"max_attempts": 3, "initial_delay": 0, "jitter": 0}},
      {"name": "Finish", "function": "public.w864_tag(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "A"}, {"from": "A", "to": "A", "route": "loop"},
      {"from": "A", "to": "Finish", "route": "finish"}]');
SELECT adk_define_app('w864_loop_app', 'w864_loop');
SELECT w864_reset(0);
SELECT path, output, error FROM w864_events('w864_loop_app', 'l1', 'seed');
SELECT w864_calls() AS calls;
SELECT * FROM w864_rows('w864_loop_app');

-- A tool node is retried the same way
CREATE FUNCTION w864_tool(city text) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    IF nextval('w864_calls') <= (SELECT fails FROM w864_cfg) THEN
        RAISE EXCEPTION 'no forecast for % yet', city;
    END IF;
    RETURN jsonb_build_object('city', upper(city));
END $$;
SELECT adk_define_tool('w864_tool(text)'::regprocedure);
CREATE FUNCTION w864_args(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', jsonb_build_object('city', input #>> '{parts,0,text}')) $$;
SELECT adk_define_workflow('w864_tools',
    '[{"name": "args", "function": "public.w864_args(jsonb,jsonb)"},
      {"tool": "w864_tool", "retry": {"max_attempts": 2, "initial_delay": 0.001, "jitter": 0}}]',
    '[{"from": "START", "to": "args"}, {"from": "args", "to": "w864_tool"}]');
SELECT adk_define_app('w864_tools_app', 'w864_tools');
SELECT w864_reset(1);
SELECT path, output, error FROM w864_events('w864_tools_app', 't1', 'oslo');
SELECT w864_reset(5);
SELECT path, output, error FROM w864_events('w864_tools_app', 't2', 'oslo');
SELECT * FROM w864_rows('w864_tools_app');

-- The waits between attempts (ADK-Go TestCalculateDelay): initial_delay
-- 0.2 s doubling waits 0.2 + 0.4 s before the third attempt; a max_delay
-- of 0.25 s caps the second wait
UPDATE adk.workflow_nodes SET retry = '{"max_attempts": 3, "initial_delay": 0.2, "backoff_factor": 2, "jitter": 0}'
 WHERE workflow = 'w864_chain' AND name = 'b';
SELECT w864_reset(2);
CREATE TEMP TABLE w864_t AS SELECT clock_timestamp() AS t0;
SELECT count(*) AS events FROM w864_events('w864_chain_app', 'c5', 'seed');
SELECT extract(epoch FROM clock_timestamp() - t0) BETWEEN 0.6 AND 5 AS waited_backoff FROM w864_t;
UPDATE adk.workflow_nodes SET retry = '{"max_attempts": 3, "initial_delay": 0.2, "backoff_factor": 10, "max_delay": 0.25, "jitter": 0}'
 WHERE workflow = 'w864_chain' AND name = 'b';
SELECT w864_reset(2);
UPDATE w864_t SET t0 = clock_timestamp();
SELECT count(*) AS events FROM w864_events('w864_chain_app', 'c6', 'seed');
SELECT extract(epoch FROM clock_timestamp() - t0) BETWEEN 0.45 AND 1.9 AS waited_capped FROM w864_t;

-- 4. Timeout (ADK-Go TestScheduler_NodeTimeout): a function that runs
-- past its node's timeout is stopped, its work rolled back, the node
-- failed with a clear message; the node before it keeps its event
TRUNCATE w864_log;
SELECT adk_define_workflow('w864_slow',
    '[{"name": "first", "function": "public.w864_text(jsonb,jsonb)"},
      {"name": "slow", "function": "public.w864_slow(jsonb,jsonb)", "timeout": 0.1}]',
    '[{"from": "START", "to": "first"}, {"from": "first", "to": "slow"}]');
SELECT adk_define_app('w864_slow_app', 'w864_slow');
SELECT w864_reset(0);
UPDATE w864_t SET t0 = clock_timestamp();
SELECT path, output, error FROM w864_events('w864_slow_app', 's1', '30');
SELECT extract(epoch FROM clock_timestamp() - t0) < 10 AS stopped_early FROM w864_t;
SELECT count(*) AS logged FROM w864_log;
SELECT * FROM w864_rows('w864_slow_app');
-- the timer is disarmed: this statement outlives the node's timeout
SELECT 'slept' AS not_cancelled FROM pg_sleep(0.3);
-- a node that ends within its timeout completes
SELECT w864_reset(0);
SELECT path, output, error FROM w864_events('w864_slow_app', 's2', '0.01');
SELECT 'slept' AS not_cancelled FROM pg_sleep(0.3);

-- Retry and timeout together (ADK-Go: a timed-out attempt is retried):
-- the first attempt sleeps past the timeout, the second completes
UPDATE adk.workflow_nodes SET retry = '{"max_attempts": 2, "initial_delay": 0.001, "jitter": 0}'
 WHERE workflow = 'w864_slow' AND name = 'slow';
SELECT w864_reset(0);
SELECT path, output, error FROM w864_events('w864_slow_app', 's3', '30');
SELECT * FROM w864_rows('w864_slow_app') WHERE node_path LIKE '%slow@%' AND status = 'completed';

-- A tool node's call runs under both its node's timeout and
-- adk.tool_timeout: whichever fires first stops it, with its own message
CREATE FUNCTION w864_nap(secs double precision) RETURNS jsonb LANGUAGE sql AS $$
    SELECT '{"woke": true}'::jsonb FROM pg_sleep(secs) $$;
SELECT adk_define_tool('w864_nap(double precision)'::regprocedure);
CREATE FUNCTION w864_secs(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', jsonb_build_object('secs', (input #>> '{parts,0,text}')::float8)) $$;
SELECT adk_define_workflow('w864_naps',
    '[{"name": "secs", "function": "public.w864_secs(jsonb,jsonb)"},
      {"tool": "w864_nap", "timeout": 0.1}]',
    '[{"from": "START", "to": "secs"}, {"from": "secs", "to": "w864_nap"}]');
SELECT adk_define_app('w864_naps_app', 'w864_naps');
SET adk.tool_timeout = 5000;
SELECT path, output, error FROM w864_events('w864_naps_app', 'n1', '30');
SET adk.tool_timeout = 50;
SELECT path, output, error FROM w864_events('w864_naps_app', 'n2', '30');
RESET adk.tool_timeout;
SELECT path, output, error FROM w864_events('w864_naps_app', 'n3', '0');

-- Hostile: a real cancel is never taken for the node's timeout -- a
-- statement_timeout shorter than the node's timeout cancels the whole
-- run (nothing of it is stored) ...
UPDATE adk.workflow_nodes SET timeout = '20 s' WHERE workflow = 'w864_slow' AND name = 'slow';
SELECT w864_reset(0);
SET statement_timeout = '300ms';
SELECT expect_error($$SELECT * FROM adk_run('w864_slow_app', 'u', 's4', '30')$$);
RESET statement_timeout;
SELECT count(*) AS stored FROM adk.events WHERE app_name = 'w864_slow_app' AND session_id = 's4';
-- ... and so does one during a wait between attempts
UPDATE adk.workflow_nodes SET retry = '{"max_attempts": 5, "initial_delay": 30, "jitter": 0}'
 WHERE workflow = 'w864_chain' AND name = 'b';
SELECT w864_reset(10);
UPDATE w864_t SET t0 = clock_timestamp();
SET statement_timeout = '300ms';
SELECT expect_error($$SELECT * FROM adk_run('w864_chain_app', 'u', 'c7', 'seed')$$);
RESET statement_timeout;
SELECT extract(epoch FROM clock_timestamp() - t0) < 10 AS cancelled_in_wait, w864_calls() AS calls FROM w864_t;
SELECT count(*) AS stored FROM adk.events WHERE app_name = 'w864_chain_app' AND session_id = 'c7';

-- 5. wait_for_output (ADK-Go TestScheduler_WaitForOutputPause_SuspendsWorkflow,
-- TestRunNode_WaitForOutputChildWithOutput_Completes, ...NoWaitForOutput...):
-- an activation that ends without output does not complete -- its event
-- (its state delta) is stored without output_for, its row stays running,
-- downstream does not run
CREATE FUNCTION w864_maybe(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT CASE WHEN input #>> '{parts,0,text}' = 'none' OR input = '"seed:src"'
                THEN '{"state_delta": {"w864_seen": true}}'::jsonb
                ELSE jsonb_build_object('output', 'done') END $$;
SELECT adk_define_workflow('w864_wait',
    '[{"name": "waiter", "function": "public.w864_maybe(jsonb,jsonb)", "wait_for_output": true},
      {"name": "downstream", "function": "public.w864_tag(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "waiter"}, {"from": "waiter", "to": "downstream"}]');
SELECT adk_define_app('w864_wait_app', 'w864_wait');
SELECT path, output, output_for, error FROM w864_events('w864_wait_app', 'w1', 'none');
SELECT * FROM w864_rows('w864_wait_app');
SELECT state ->> 'w864_seen' AS seen FROM adk.sessions WHERE app_name = 'w864_wait_app' AND id = 'w1';
-- with output it completes
SELECT path, output, output_for, error FROM w864_events('w864_wait_app', 'w2', 'go');
-- without wait_for_output, no output completes it, downstream gets no input
UPDATE adk.workflow_nodes SET wait_for_output = false WHERE workflow = 'w864_wait' AND name = 'waiter';
SELECT path, output, output_for, error FROM w864_events('w864_wait_app', 'w3', 'none');
-- a waiting node triggered again runs again: src loops once, its first
-- output leaves waiter waiting, its second one completes it
CREATE FUNCTION w864_src(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', CASE WHEN input ? 'parts' THEN 'seed:src' ELSE 'again:src' END,
                              'route', CASE WHEN input ? 'parts' THEN 'again' ELSE 'stop' END) $$;
SELECT adk_define_workflow('w864_rewait',
    '[{"name": "src", "function": "public.w864_src(jsonb,jsonb)"},
      {"name": "waiter", "function": "public.w864_maybe(jsonb,jsonb)", "wait_for_output": true},
      {"name": "downstream", "function": "public.w864_tag(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "src"}, {"from": "src", "to": "src", "route": "again"},
      {"from": "src", "to": "waiter"}, {"from": "waiter", "to": "downstream"}]');
SELECT adk_define_app('w864_rewait_app', 'w864_rewait');
SELECT path, output, output_for, error FROM w864_events('w864_rewait_app', 'r1', 'go');
SELECT * FROM w864_rows('w864_rewait_app');

-- 6. What is still refused: a retry or a timeout on a join (it makes no
-- call), and the other node kinds
SELECT adk_define_workflow('w864_joinretry',
    '[{"name": "a", "function": "public.w864_tag(jsonb,jsonb)"},
      {"name": "j", "kind": "join", "retry": {}}]',
    '[{"from": "START", "to": "a"}, {"from": "a", "to": "j"}]');
SELECT adk_define_app('w864_joinretry_app', 'w864_joinretry');
SELECT expect_error($$SELECT * FROM adk_run('w864_joinretry_app', 'u', 'x1', 'go')$$);
UPDATE adk.workflow_nodes SET retry = NULL, timeout = '1 s' WHERE workflow = 'w864_joinretry' AND name = 'j';
SELECT expect_error($$SELECT * FROM adk_run('w864_joinretry_app', 'u', 'x2', 'go')$$);

-- 7. A wait between attempts stalls nothing else: the retrying node's
-- activation waits for its time while the other branch runs.  START ->
-- a (fails once, then waits 1 s) and START -> b -> c: b and c run, and
-- their events come, within the wait, before a's second attempt
CREATE TABLE w864_when (node text, at timestamptz);
CREATE FUNCTION w864_stamp(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    INSERT INTO w864_when VALUES (ctx ->> 'node', clock_timestamp());
    SELECT w864_tag(ctx, input) $$;
SELECT adk_define_workflow('w864_side',
    '[{"name": "a", "function": "public.w864_flaky(jsonb,jsonb)",
       "retry": {"max_attempts": 2, "initial_delay": 1, "jitter": 0}},
      {"name": "b", "function": "public.w864_stamp(jsonb,jsonb)"},
      {"name": "c", "function": "public.w864_stamp(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "a"}, {"from": "START", "to": "b"}, {"from": "b", "to": "c"}]');
SELECT adk_define_app('w864_side_app', 'w864_side');
SELECT w864_reset(1);
UPDATE w864_t SET t0 = clock_timestamp();
SELECT path, output, error FROM w864_events('w864_side_app', 's1', 'go');
SELECT node, extract(epoch FROM at - t0) < 0.5 AS within_the_wait FROM w864_when, w864_t ORDER BY at;
SELECT extract(epoch FROM clock_timestamp() - t0) BETWEEN 1 AND 5 AS a_waited FROM w864_t;
SELECT * FROM w864_rows('w864_side_app');

-- later files read every run of adk.workflow_runs: these runs go
DELETE FROM adk.sessions WHERE app_name LIKE 'w864%';
