-- RunState per node (docs/agent-modes.md "A pause inside a task", ADK-Go's
-- RunState per node activation, 000 §四.4.3): an invocation (here, one
-- that paused; sql/818_run_states_nodes.sql: every kind) has one
-- adk.run_states row per node activation, its path as node_info
-- writes it -- the root coordinator's too -- with status, input, output
-- and interrupts.  A pause inside a task waits on the task's row and holds
-- the coordinator's; the task's finish_task marks its row completed in the
-- transaction that appends the coordinator's function response; the
-- resume finds the calls by the row's node; adk_rebuild_run_states derives
-- the same rows from events another runtime wrote with node_info.

CREATE FUNCTION rs_charge(amount integer) RETURNS jsonb LANGUAGE sql
    AS $$ SELECT jsonb_build_object('charged', amount, 'call_next', 'call finish_task({"result": "paid"})') $$;
SELECT adk_define_tool('rs_charge(integer)'::regprocedure, require_confirmation => true);
SELECT adk_define_agent('rs_cashier', model => 'local', mode => 'task', description => 'Takes payments.',
                        tools => ARRAY['rs_charge']);
SELECT adk_define_agent('rs_packer', model => 'local', mode => 'task', description => 'Packs parcels.');
SELECT adk_define_agent('rs_till', model => 'local', sub_agents => ARRAY['rs_cashier', 'rs_packer']);
SELECT adk_define_app('rsn_app', 'rs_till');
CREATE FUNCTION rs_rows(s text)
RETURNS TABLE (node_path text, status text, agent text, pending int, answered int, input jsonb, output jsonb)
LANGUAGE sql AS $$
    SELECT regexp_replace(r.node_path, 'call_[A-Za-z0-9]+', '<call id>'), r.status, r.agent,
           cardinality(r.interrupt_ids), cardinality(r.answered_ids), r.input, r.output
      FROM adk.run_states r WHERE r.app_name = 'rsn_app' AND r.session_id = s ORDER BY r.node_path
$$;

-- 1. The pause inside the task: two rows, both waiting on the same call
SELECT count(*) AS events
  FROM adk_run('rsn_app', 'u', 'p1', 'call rs_cashier({"request": "call rs_charge({\"amount\": 30})"})');
SELECT * FROM rs_rows('p1');
SELECT count(DISTINCT interrupt_ids) AS same_ids FROM adk.run_states WHERE app_name = 'rsn_app' AND session_id = 'p1';
-- the task's path is node_info's, its call id the isolation scope
SELECT r.node_path = 'rs_till/rs_cashier@' || t.scope AS task_path
  FROM adk.run_states r, adk.active_tasks t
 WHERE r.app_name = 'rsn_app' AND r.session_id = 'p1' AND r.agent = 'rs_cashier'
   AND t.app_name = 'rsn_app' AND t.session_id = 'p1';
-- what waits is listed once, by the agent that asked
SELECT tool, agent FROM adk.pending_interrupts WHERE app_name = 'rsn_app' AND session_id = 'p1';

-- 2. The answer resumes the task in the original invocation; its
-- finish_task completes the task's row, with its output, in the
-- transaction of the coordinator's function response
SELECT count(*) AS events
  FROM adk_run('rsn_app', 'u', 'p1',
               adk_function_response((SELECT call_id FROM adk.pending_interrupts
                                       WHERE app_name = 'rsn_app' AND session_id = 'p1'),
                                     'adk_request_confirmation', '{"confirmed": true}'));
SELECT * FROM rs_rows('p1');
SELECT count(DISTINCT invocation_id) AS invocations FROM adk.events WHERE app_name = 'rsn_app' AND session_id = 'p1';
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE app_name = 'rsn_app' AND session_id = 'p1';
SELECT r.xmin = e.xmin AS same_transaction
  FROM adk.run_states r, adk.events e
 WHERE r.app_name = 'rsn_app' AND r.session_id = 'p1' AND r.agent = 'rs_cashier'
   AND e.app_name = 'rsn_app' AND e.session_id = 'p1' AND e.event_data ->> 'author' = 'user'
   AND e.event_data #>> '{content,parts,0,function_response,name}' = 'rs_cashier';

-- 3. A second answer to the same confirmation runs nothing
SELECT count(*) AS events
  FROM adk_run('rsn_app', 'u', 'p1',
               adk_function_response((SELECT answered_ids[1] FROM adk.run_states
                                       WHERE app_name = 'rsn_app' AND session_id = 'p1' AND agent = 'rs_cashier'),
                                     'adk_request_confirmation', '{"confirmed": true}'));
SELECT * FROM rs_rows('p1');

-- 4. The resume reads where it is from the rows: another writer opened a
-- newer task scope meanwhile (the newest open scope of adk.active_tasks
-- is the packer's), the answer still resumes the cashier, in its scope,
-- in its invocation
SELECT count(*) AS events
  FROM adk_run('rsn_app', 'u', 'p2', 'call rs_cashier({"request": "call rs_charge({\"amount\": 5})"})');
SELECT count(*) AS appended FROM (VALUES (adk_append_event('rsn_app', 'u', 'p2',
    '{"author": "rs_packer", "isolation_scope": "other-scope",
      "content": {"role": "model", "parts": [{"text": "Packing."}]}}'))) v;
SELECT agent, scope FROM adk.active_tasks WHERE app_name = 'rsn_app' AND session_id = 'p2'
 ORDER BY last_seq DESC LIMIT 1;
CREATE TEMP TABLE rs_p2 AS
SELECT r.node_path, r.invocation_id, substring(r.node_path from '@(.*)$') AS scope
  FROM adk.run_states r WHERE r.app_name = 'rsn_app' AND r.session_id = 'p2' AND r.agent = 'rs_cashier';
SELECT event_data ->> 'author' AS author,
       event_data ->> 'isolation_scope' = (SELECT scope FROM rs_p2) AS cashier_scope,
       invocation_id = (SELECT invocation_id FROM rs_p2) AS paused_invocation,
       coalesce(event_data #>> '{content,parts,0,text}',
                'call ' || (event_data #>> '{content,parts,0,function_call,name}'),
                'response ' || (event_data #>> '{content,parts,0,function_response,name}')) AS part
  FROM adk_run('rsn_app', 'u', 'p2',
               adk_function_response((SELECT call_id FROM adk.pending_interrupts
                                       WHERE app_name = 'rsn_app' AND session_id = 'p2'),
                                     'adk_request_confirmation', '{"confirmed": true}'))
 ORDER BY seq;
SELECT * FROM rs_rows('p2');

-- 5. The rows are derived: deleted and rebuilt, they are the same -- and
-- one more, the node of the event the other writer appended in step 4
-- (such an event gets its row from the rebuild: docs/runs.md)
CREATE TEMP TABLE rs_before AS SELECT * FROM adk.run_states WHERE app_name = 'rsn_app';
DELETE FROM adk.run_states WHERE app_name = 'rsn_app';
SELECT adk_rebuild_run_states('rsn_app') AS rows;
SELECT (SELECT count(*) FROM (SELECT * FROM rs_before EXCEPT SELECT * FROM adk.run_states) x) AS missing,
       (SELECT count(*) FROM (SELECT * FROM adk.run_states WHERE app_name = 'rsn_app'
                              EXCEPT SELECT * FROM rs_before) x) AS extra;
SELECT session_id, node_path, status, agent, input FROM (SELECT * FROM adk.run_states WHERE app_name = 'rsn_app'
                                         EXCEPT SELECT * FROM rs_before) x;

-- 6. A session another runtime wrote (ADK-Go's case 06 shape, node_info
-- on each event): adk_rebuild_run_states derives its nodes from node_info
CREATE FUNCTION rs_ev(author text, path text, scope text, parts jsonb, extra jsonb DEFAULT '{}')
RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object(
        'invocation_id', 'go-inv-1', 'author', author, 'isolation_scope', scope,
        'content', jsonb_build_object('role', CASE WHEN author = 'user' OR parts -> 0 ? 'function_response'
                                                   THEN 'user' ELSE 'model' END, 'parts', parts),
        'node_info', CASE WHEN path IS NOT NULL THEN jsonb_build_object('path', path) END)) || extra
$$;
SELECT adk_create_session('rsn_app', 'u', 'go-1') IS NOT NULL AS created;
SELECT count(*) AS appended FROM (VALUES
  (adk_append_event('rsn_app', 'u', 'go-1', rs_ev('user', NULL, NULL, '[{"text": "Pay 30."}]'))),
  (adk_append_event('rsn_app', 'u', 'go-1', rs_ev('rs_till', 'rs_till', NULL,
        '[{"function_call": {"name": "rs_cashier", "id": "go-1", "args": {"request": "Charge 30."}}}]'))),
  (adk_append_event('rsn_app', 'u', 'go-1', rs_ev('rs_cashier', 'rs_till/rs_cashier@go-1', 'go-1',
        '[{"function_call": {"name": "adk_request_confirmation", "id": "go-2", "args": {}}}]',
        '{"long_running_tool_ids": ["go-2"]}')))) v;
SELECT * FROM rs_rows('go-1');
SELECT call_id, tool, agent FROM adk.pending_interrupts WHERE app_name = 'rsn_app' AND session_id = 'go-1';
-- the other runtime answers and finishes the task: the rows follow as
-- each event is appended
SELECT count(*) AS appended FROM (VALUES
  (adk_append_event('rsn_app', 'u', 'go-1', rs_ev('user', NULL, 'go-1',
        '[{"function_response": {"name": "adk_request_confirmation", "id": "go-2", "response": {"confirmed": true}}}]')))) v;
SELECT * FROM rs_rows('go-1');
SELECT count(*) AS appended FROM (VALUES
  (adk_append_event('rsn_app', 'u', 'go-1', rs_ev('rs_cashier', 'rs_till/rs_cashier@go-1', 'go-1',
        '[{"function_response": {"name": "finish_task", "id": "go-3", "response": {"result": "Task completed."}}}]',
        '{"output": {"result": "paid"}, "node_info": {"path": "rs_till/rs_cashier@go-1", "output_for": ["rs_till/rs_cashier@go-1"]}}')))) v;
SELECT * FROM rs_rows('go-1');
CREATE TEMP TABLE rs_go AS SELECT * FROM adk.run_states WHERE session_id = 'go-1';
DELETE FROM adk.run_states WHERE session_id = 'go-1';
SELECT adk_rebuild_run_states('rsn_app', 'u', 'go-1') AS rows;
SELECT (SELECT count(*) FROM (SELECT * FROM rs_go EXCEPT SELECT * FROM adk.run_states) x) AS missing,
       (SELECT count(*) FROM (SELECT * FROM adk.run_states WHERE session_id = 'go-1'
                              EXCEPT SELECT * FROM rs_go) x) AS extra;

-- 7. Hostile node_info: a path that is not text, an output_for naming a
-- node that never ran, an event without node_info (ADK Python's) -- each
-- node is what the events say, nothing fails
SELECT adk_create_session('rsn_app', 'u', 'odd-1') IS NOT NULL AS created;
SELECT count(*) AS appended FROM (VALUES
  (adk_append_event('rsn_app', 'u', 'odd-1', rs_ev('user', NULL, NULL, '[{"text": "Hi."}]'))),
  (adk_append_event('rsn_app', 'u', 'odd-1', rs_ev('rs_till', NULL, NULL,
        '[{"function_call": {"name": "adk_request_confirmation", "id": "odd-a", "args": {}}}]',
        '{"long_running_tool_ids": ["odd-a"], "node_info": {"path": {"not": "text"}}}'))),
  (adk_append_event('rsn_app', 'u', 'odd-1', rs_ev('rs_cashier', NULL, NULL,
        '[{"function_call": {"name": "adk_request_confirmation", "id": "odd-b", "args": {}}}]',
        '{"long_running_tool_ids": ["odd-b"]}'))),
  (adk_append_event('rsn_app', 'u', 'odd-1', rs_ev('rs_cashier', 'nowhere', NULL, '[{"text": "done"}]',
        '{"output": 1, "node_info": {"path": "nowhere", "output_for": ["rs_till/ghost@x"]}}')))) v;
SELECT * FROM rs_rows('odd-1');

DELETE FROM adk.apps WHERE name = 'rsn_app';
DELETE FROM adk.sessions WHERE app_name = 'rsn_app';
DELETE FROM adk.agents WHERE name = 'rs_till';
DELETE FROM adk.agents WHERE name IN ('rs_cashier', 'rs_packer');
SELECT count(*) AS run_states_left FROM adk.run_states WHERE app_name = 'rsn_app';
