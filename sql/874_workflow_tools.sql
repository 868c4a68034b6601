-- Tool nodes of graph workflows (docs/workflows.md "What runs"): the
-- node's input is the tool's arguments, its response the node's output;
-- the tool runs as the caller, in a subtransaction, so a tool that fails
-- stores a node failure event and rolls back only its own work; a tool
-- that needs confirmation or is long-running is refused before the run.

-- A step that wraps the user's text as a tool's arguments
CREATE FUNCTION w874_args(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', jsonb_build_object('city', input #>> '{parts,0,text}', 'days', 2))
$$;
CREATE FUNCTION w874_forecast(city text, days integer DEFAULT 1) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('city', upper(city), 'days', days)
$$;
CREATE FUNCTION w874_count(city text, days integer DEFAULT 1) RETURNS integer LANGUAGE sql AS $$
    SELECT length(city) * days $$;
CREATE TABLE w874_log (t text);
CREATE FUNCTION w874_boom(city text, days integer) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO w874_log VALUES ('should be rolled back');
    RAISE EXCEPTION 'no forecast for %', city;
END $$;
SELECT adk_define_tool('w874_forecast(text,integer)'::regprocedure);
SELECT adk_define_tool('w874_count(text,integer)'::regprocedure);
SELECT adk_define_tool('w874_boom(text,integer)'::regprocedure);
-- The events of a run, one line each
CREATE FUNCTION w874_events(app text, sid text, msg text)
RETURNS TABLE (path text, branch text, output jsonb, error text)
LANGUAGE sql AS $$
    SELECT r.event_data #>> '{node_info,path}', r.event_data ->> 'branch', r.event_data -> 'output',
           coalesce(r.event_data ->> 'error_code', '') || coalesce(': ' || (r.event_data ->> 'error_message'), '')
      FROM adk_run(app, 'u', sid, msg) r
     WHERE r.event_data ->> 'author' <> 'user'
     ORDER BY r.seq
$$;

-- START -> args -> forecast: the function's output is the tool's
-- arguments; the tool's object result is the node's output, given to
-- the next node as its arguments; a result that is not an object is
-- the output as {"result": value}, as a model's tool call gets it
SELECT adk_define_workflow('w874_wf',
    '[{"name": "args", "function": "public.w874_args(jsonb,jsonb)"},
      {"tool": "w874_forecast"},
      {"name": "count", "tool": "w874_count"}]',
    '[{"from": "START", "to": "args"}, {"from": "args", "to": "w874_forecast"},
      {"from": "w874_forecast", "to": "count"}]');
SELECT adk_define_app('w874_app', 'w874_wf');
SELECT * FROM w874_events('w874_app', 's1', 'paris');
-- each activation's row, with its input and output
SELECT node_path, status, input, output FROM adk.run_states
 WHERE app_name = 'w874_app' AND node_path LIKE '%@%' ORDER BY node_path;

-- A tool directly after START gets the user's content as its arguments:
-- an argument it does not declare fails the call -- a node failure
SELECT adk_define_workflow('w874_direct', '[{"tool": "w874_count"}]',
                           '[{"from": "START", "to": "w874_count"}]');
SELECT adk_define_app('w874_direct_app', 'w874_direct');
SELECT * FROM w874_events('w874_direct_app', 'd1', 'paris');

-- A node input that is not an object is not arguments: a node failure
CREATE FUNCTION w874_scalar(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT '{"output": "paris"}'::jsonb $$;
SELECT adk_define_workflow('w874_notobj',
    '[{"name": "s", "function": "public.w874_scalar(jsonb,jsonb)"}, {"tool": "w874_count"}]',
    '[{"from": "START", "to": "s"}, {"from": "s", "to": "w874_count"}]');
SELECT adk_define_app('w874_notobj_app', 'w874_notobj');
SELECT * FROM w874_events('w874_notobj_app', 'n1', 'paris');

-- A tool that raises: its work rolled back, a stored node failure event
-- ends the invocation, what the nodes before it stored stays, its row
-- is failed, and the statement succeeds
SELECT adk_define_workflow('w874_fail',
    '[{"name": "args", "function": "public.w874_args(jsonb,jsonb)"}, {"tool": "w874_boom"},
      {"name": "never", "tool": "w874_count"}]',
    '[{"from": "START", "to": "args"}, {"from": "args", "to": "w874_boom"}, {"from": "w874_boom", "to": "never"}]');
SELECT adk_define_app('w874_fail_app', 'w874_fail');
SELECT * FROM w874_events('w874_fail_app', 'f1', 'oslo');
SELECT count(*) AS logged FROM w874_log;
SELECT node_path, status FROM adk.run_states
 WHERE app_name = 'w874_fail_app' AND node_path LIKE '%@%' ORDER BY node_path;

-- The caller's privileges: a role without EXECUTE on the tool's function
-- gets a node failure, not the owner's rights; what ran before stays
CREATE ROLE regress_w874 IN ROLE adk_user;
REVOKE EXECUTE ON FUNCTION w874_count(text, integer) FROM PUBLIC;
SET ROLE regress_w874;
SELECT * FROM w874_events('w874_app', 'p1', 'rome');
RESET ROLE;
GRANT EXECUTE ON FUNCTION w874_count(text, integer) TO PUBLIC;
DROP ROLE regress_w874;

-- Fan-out to tool nodes and a join of their responses
SELECT adk_define_workflow('w874_fan',
    '[{"name": "args", "function": "public.w874_args(jsonb,jsonb)"},
      {"tool": "w874_forecast"}, {"tool": "w874_count"}, {"name": "j", "kind": "join"}]',
    '[{"from": "START", "to": "args"}, {"from": "args", "to": "w874_forecast"}, {"from": "args", "to": "w874_count"},
      {"from": "w874_forecast", "to": "j"}, {"from": "w874_count", "to": "j"}]');
SELECT adk_define_app('w874_fan_app', 'w874_fan');
SELECT * FROM w874_events('w874_fan_app', 'j1', 'lima');

-- Refused with 0A000 before anything is stored: a tool that requires
-- confirmation as a node (ADK-Go's tool node has no confirmation to give
-- it: it fails); a long-running one runs as any (887)
CREATE FUNCTION w874_pay(city text) RETURNS text LANGUAGE sql AS $$ SELECT city $$;
SELECT adk_define_tool('w874_pay(text)'::regprocedure, require_confirmation => true);
SELECT adk_define_workflow('w874_confirm', '[{"tool": "w874_pay"}]', '[{"from": "START", "to": "w874_pay"}]');
SELECT adk_define_app('w874_confirm_app', 'w874_confirm');
SELECT expect_error($$SELECT * FROM adk_run('w874_confirm_app', 'u', 'c1', 'go')$$);
SELECT count(*) AS sessions FROM adk.sessions WHERE app_name = 'w874_confirm_app';

-- later files read every run of adk.workflow_runs: these runs go
DELETE FROM adk.sessions WHERE app_name LIKE 'w874%';
