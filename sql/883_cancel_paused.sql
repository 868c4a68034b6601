-- adk_cancel of a paused run (docs/runs.md "Cancelling a paused run"):
-- a workflow waiting for a person's answer, an agent waiting for a
-- long-running tool or for a confirmation.  The invocation ends
-- 'cancelled', its rows too, nothing of it is pending or answerable (an
-- answer by id is refused, nothing stored), the error event it leaves
-- makes a rebuild of adk.run_states give the same rows, and a plain text
-- starts a new run -- also in a session whose paused run's graph changed,
-- which the cancel unwedges.  Only the run's role (or an admin) may
-- cancel it.

SELECT adk_define_model('w83_local', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'test-key');
CREATE FUNCTION w83_ask(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT CASE WHEN ctx -> 'resume_inputs' ? 'boss'
                THEN jsonb_build_object('output', ctx #> '{resume_inputs,boss}')
                ELSE jsonb_build_object('request_input', jsonb_build_object(
                         'interrupt_id', 'boss', 'message', 'Go ahead?')) END $$;
CREATE FUNCTION w83_tag(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', jsonb_build_object('by', ctx ->> 'node')) $$;
-- START -> (ask, side): side goes on while ask waits
SELECT adk_define_workflow('w83_flow',
    '[{"name": "ask", "function": "public.w83_ask(jsonb,jsonb)", "rerun_on_resume": true},
      {"name": "side", "function": "public.w83_tag(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "ask"}, {"from": "START", "to": "side"}]');
SELECT adk_define_app('w83_app', 'w83_flow');

CREATE FUNCTION w83_ticket(what text) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('status', 'filed', 'what', what) $$;
CREATE FUNCTION w83_pay(amount integer) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('paid', amount) $$;
SELECT adk_define_tool('w83_ticket(text)'::regprocedure, long_running => true);
SELECT adk_define_tool('w83_pay(integer)'::regprocedure, require_confirmation => true);
SELECT adk_define_agent('w83_agent', model => 'w83_local', instruction => 'You file tickets and pay.',
                        tools => ARRAY['w83_ticket', 'w83_pay']);
SELECT adk_define_app('w83_llm', 'w83_agent');

CREATE ROLE w83_owner LOGIN;
CREATE ROLE w83_other LOGIN;
CREATE ROLE w83_boss LOGIN;
GRANT adk_user TO w83_owner, w83_other;
GRANT adk_admin TO w83_boss;
GRANT EXECUTE ON FUNCTION w83_ask(jsonb, jsonb), w83_tag(jsonb, jsonb),
                          w83_ticket(text), w83_pay(integer) TO w83_owner;

-- a session's rows and events, ids masked
CREATE FUNCTION w83_rows(sid text)
RETURNS TABLE (inv bigint, node text, status text, pending text[], answered text[])
LANGUAGE sql AS $$
    SELECT dense_rank() OVER (ORDER BY i.started_at), r.node_path, r.status,
           regexp_replace(r.interrupt_ids::text, '(call_[A-Za-z0-9]+|adk-[0-9a-f-]+)', '<id>', 'g')::text[],
           regexp_replace(r.answered_ids::text, '(call_[A-Za-z0-9]+|adk-[0-9a-f-]+)', '<id>', 'g')::text[]
      FROM adk.run_states r JOIN adk.invocations i USING (invocation_id)
     WHERE r.session_id = sid ORDER BY i.started_at, r.node_path $$;
CREATE FUNCTION w83_invocations(sid text) RETURNS TABLE (status text, error_code text, error_message text)
LANGUAGE sql AS $$
    SELECT status, error_code, error_message FROM adk.invocations WHERE session_id = sid ORDER BY started_at $$;
CREATE FUNCTION w83_events(sid text) RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM adk.events WHERE session_id = sid $$;
CREATE FUNCTION w83_inv(sid text) RETURNS text LANGUAGE sql AS $$
    SELECT invocation_id FROM adk.invocations WHERE session_id = sid ORDER BY started_at LIMIT 1 $$;
-- the rows as they are, then as adk_rebuild_run_states derives them: equal
CREATE FUNCTION w83_rebuild_agrees(app text, usr text, sid text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    before jsonb;
    after jsonb;
BEGIN
    SELECT jsonb_agg(to_jsonb(r) - 'updated_at' ORDER BY r.invocation_id, r.node_path) INTO before
      FROM adk.run_states r WHERE r.app_name = app AND r.user_id = usr AND r.session_id = sid;
    PERFORM adk_rebuild_run_states(app, usr, sid);
    SELECT jsonb_agg(to_jsonb(r) - 'updated_at' ORDER BY r.invocation_id, r.node_path) INTO after
      FROM adk.run_states r WHERE r.app_name = app AND r.user_id = usr AND r.session_id = sid;
    RETURN before = after;
END $$;

-- 1. A paused workflow: ask waits, side has run
SET ROLE w83_owner;
SELECT count(*) AS events FROM adk_run('w83_app', 'u', 'w83-1', 'Start');
SELECT * FROM w83_rows('w83-1');
SELECT call_id, tool FROM adk.pending_interrupts WHERE session_id = 'w83-1';
RESET ROLE;

-- 2. Another role may not cancel it (hostile): refused, nothing changes
SET ROLE w83_other;
SELECT replace(expect_error(format('SELECT adk_cancel(%L)', w83_inv('w83-1'))), w83_inv('w83-1'), '<inv>') AS refused;
RESET ROLE;
SELECT * FROM w83_invocations('w83-1');

-- 3. Its role cancels it: the invocation and its waiting rows cancelled,
-- nothing pending, one error event per waiting node, in ADK's format
SET ROLE w83_owner;
SELECT adk_cancel(w83_inv('w83-1')) AS cancelled;
RESET ROLE;
SELECT * FROM w83_invocations('w83-1');
SELECT * FROM w83_rows('w83-1');
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE session_id = 'w83-1';
SELECT event_data ->> 'author' AS author, event_data #>> '{node_info,path}' AS node,
       event_data ->> 'error_code' AS error_code, event_data ->> 'error_message' AS error_message,
       event_data -> 'custom_metadata' ? 'adk_graph_hash' AS has_hash
  FROM adk.events WHERE session_id = 'w83-1' AND event_data ? 'error_code' ORDER BY seq;
-- a rebuild gives the same rows
SELECT w83_rebuild_agrees('w83_app', 'u', 'w83-1') AS rebuild_agrees;
-- cancelling it again: nothing to cancel
SELECT adk_cancel(w83_inv('w83-1')) AS cancelled;

-- 4. An answer by id afterwards is refused, nothing stored
SELECT w83_events('w83-1') AS events_before;
SELECT replace(expect_error($$SELECT * FROM adk_run('w83_app', 'u', 'w83-1',
                       adk_function_response('boss', 'adk_request_input', '{"ok": true}'))$$),
               w83_inv('w83-1'), '<inv>') AS refused;
SELECT w83_events('w83-1') AS events_after;

-- 5. A plain text starts a new run (which asks again)
SELECT count(*) AS events FROM adk_run('w83_app', 'u', 'w83-1', 'Again');
SELECT * FROM w83_rows('w83-1');
SELECT * FROM w83_invocations('w83-1');

-- 6. A changed graph wedges the session: every plain text is routed to
-- the pending request and refused; adk_cancel is the way out
SELECT count(*) AS events FROM adk_run('w83_app', 'u', 'w83-2', 'Start');
SELECT adk_define_workflow('w83_flow', max_concurrency => 1);
SELECT expect_error($$SELECT * FROM adk_run('w83_app', 'u', 'w83-2', 'Hello?')$$);
SELECT adk_cancel(w83_inv('w83-2')) AS cancelled;
SELECT count(*) AS events FROM adk_run('w83_app', 'u', 'w83-2', 'Hello?');
SELECT * FROM w83_invocations('w83-2');
SELECT w83_rebuild_agrees('w83_app', 'u', 'w83-2') AS rebuild_agrees;

-- 7. An agent waiting for a long-running tool: cancelled by an admin;
-- the tool's result by id is refused afterwards
SET ROLE w83_owner;
SELECT count(*) AS events FROM adk_run('w83_llm', 'u', 'w83-3', 'call w83_ticket({"what": "a laptop"})');
RESET ROLE;
SELECT * FROM w83_rows('w83-3');
SET ROLE w83_boss;
SELECT adk_cancel(w83_inv('w83-3')) AS cancelled;
RESET ROLE;
SELECT * FROM w83_rows('w83-3');
SELECT * FROM w83_invocations('w83-3');
SELECT w83_rebuild_agrees('w83_llm', 'u', 'w83-3') AS rebuild_agrees;
SELECT regexp_replace(expect_error(format(
           $$SELECT * FROM adk_run('w83_llm', 'u', 'w83-3', adk_function_response(%L, 'w83_ticket', '{"status": "done"}'))$$,
           (SELECT e.event_data #>> '{long_running_tool_ids,0}' FROM adk.events e
             WHERE e.session_id = 'w83-3' AND jsonb_array_length(e.event_data -> 'long_running_tool_ids') > 0))),
       '"(call_[A-Za-z0-9]+|e-[0-9a-f-]+)"', '"<id>"', 'g') AS refused;
SELECT w83_events('w83-3') AS events;

-- 8. An agent waiting for a confirmation: cancelled; the confirmation is
-- refused afterwards and the tool never runs
SELECT count(*) AS events FROM adk_run('w83_llm', 'u', 'w83-4', 'call w83_pay({"amount": 30})');
SELECT tool FROM adk.pending_interrupts WHERE session_id = 'w83-4';
SELECT adk_cancel(w83_inv('w83-4')) AS cancelled;
SELECT * FROM w83_rows('w83-4');
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE session_id = 'w83-4';
SELECT regexp_replace(expect_error(format(
           $$SELECT * FROM adk_run('w83_llm', 'u', 'w83-4', adk_function_response(%L, 'adk_request_confirmation', '{"confirmed": true}'))$$,
           (SELECT e.event_data #>> '{long_running_tool_ids,0}' FROM adk.events e
             WHERE e.session_id = 'w83-4' AND jsonb_array_length(e.event_data -> 'long_running_tool_ids') > 0))),
       '"(adk-[0-9a-f-]+|e-[0-9a-f-]+)"', '"<id>"', 'g') AS refused;
SELECT count(*) AS paid FROM adk.events
 WHERE session_id = 'w83-4' AND event_data::text LIKE '%"paid"%';
SELECT w83_rebuild_agrees('w83_llm', 'u', 'w83-4') AS rebuild_agrees;

-- 9. An agent node whose agent has a long-running tool or one requiring
-- confirmation runs: its call holds the node (886, 887).  Such a tool on
-- an agent below the node's agent is refused with 0A000 before anything
-- is stored (docs/workflows.md "Not run yet")
SELECT adk_define_agent('w83_node_agent', model => 'w83_local', mode => 'single_turn',
                        tools => ARRAY['w83_ticket']);
SELECT adk_define_agent('w83_node_top', model => 'w83_local', mode => 'single_turn',
                        sub_agents => ARRAY['w83_node_agent']);
SELECT adk_define_agent('w83_node_payer', model => 'w83_local', mode => 'single_turn',
                        tools => ARRAY['w83_pay']);
SELECT adk_define_workflow('w83_agents',
    '[{"agent": "w83_node_top"}, {"name": "side", "function": "public.w83_tag(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "w83_node_top"}, {"from": "START", "to": "side"}]');
SELECT adk_define_app('w83_agents_app', 'w83_agents');
SELECT expect_error($$SELECT * FROM adk_run('w83_agents_app', 'u', 'w83-9', 'call w83_ticket({"what": "x"})')$$);
SELECT adk_define_workflow('w83_agents',
    '[{"agent": "w83_node_payer"}, {"name": "side", "function": "public.w83_tag(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "w83_node_payer"}, {"from": "START", "to": "side"}]');
SELECT count(*) > 0 AS ran FROM adk_run('w83_agents_app', 'u', 'w83-9p', 'call w83_pay({"amount": 3})');
SELECT status FROM adk.invocations WHERE session_id = 'w83-9p';
SELECT node, status FROM adk.workflow_runs WHERE session_id = 'w83-9p' ORDER BY node;
DELETE FROM adk.sessions WHERE id = 'w83-9p';
SELECT count(*) AS events FROM adk.events WHERE session_id = 'w83-9';
SELECT count(*) AS invocations FROM adk.invocations WHERE session_id = 'w83-9';
-- without such a tool it runs
SELECT adk_define_agent('w83_node_payer', model => 'w83_local', mode => 'single_turn');
SELECT count(*) > 0 AS ran FROM adk_run('w83_agents_app', 'u', 'w83-9', 'Hello');

DROP OWNED BY w83_owner, w83_other, w83_boss;
DROP ROLE w83_owner, w83_other, w83_boss;
