-- RunState per node activation (docs/runs.md "Where the run stands",
-- docs/agent-modes.md "Node info"): every invocation has an
-- adk.run_states row for its root node and for each task and single_turn
-- node it runs, whether it paused or not -- status running -> completed,
-- failed, cancelled (waiting while paused), its input (a single_turn
-- node's too: its delegating call's arguments), its output and its
-- attempt.  The runner writes a row as its node starts (adk_run: the
-- root's with its end) and brings the invocation's rows to what the
-- events say as it ends; adk_rebuild_run_states derives the same rows
-- from the events.

CREATE FUNCTION rn_charge(amount integer) RETURNS jsonb LANGUAGE sql
    AS $$ SELECT jsonb_build_object('charged', amount, 'call_next', 'call finish_task({"result": "paid"})') $$;
SELECT adk_define_tool('rn_charge(integer)'::regprocedure, require_confirmation => true);
SELECT adk_define_agent('rn_echo', model => 'local', mode => 'single_turn', description => 'Echoes.');
SELECT adk_define_agent('rn_saver', model => 'local', mode => 'task', description => 'Saves.');
SELECT adk_define_agent('rn_cashier', model => 'local', mode => 'task', description => 'Takes payments.',
                        tools => ARRAY['rn_charge']);
SELECT adk_define_agent('rn_desk', model => 'local', sub_agents => ARRAY['rn_echo', 'rn_saver', 'rn_cashier']);
SELECT adk_define_app('rn_app', 'rn_desk');
-- the rows of a session, invocations numbered in order, call ids masked
CREATE FUNCTION rn_rows(s text)
RETURNS TABLE (inv bigint, node_path text, status text, agent text, attempt int, pending int,
               input jsonb, output jsonb)
LANGUAGE sql AS $$
    SELECT dense_rank() OVER (ORDER BY (SELECT min(e.seq) FROM adk.events e
                                         WHERE e.session_id = r.session_id
                                           AND e.invocation_id = r.invocation_id)),
           regexp_replace(r.node_path, 'call_[A-Za-z0-9]+', '<call id>'), r.status, r.agent,
           r.attempt, cardinality(r.interrupt_ids), r.input, r.output
      FROM adk.run_states r WHERE r.app_name = 'rn_app' AND r.session_id = s
     ORDER BY 1, 2
$$;

-- 1. A plain turn: the root's row, completed, its input the user's message
SELECT count(*) AS events FROM adk_run('rn_app', 'ann', 'n1', 'Hello there.');
SELECT * FROM rn_rows('n1');
-- the row carries the session's user (tenancy: 85_tenancy.sql)
SELECT user_id, count(*) FROM adk.run_states WHERE app_name = 'rn_app' GROUP BY user_id;

-- 2. A task that finishes in the turn: its row completed with its input
-- and output, its coordinator's completed
SELECT count(*) AS events
  FROM adk_run('rn_app', 'ann', 'n1', 'call rn_saver({"request": "call finish_task({\"result\": \"saved\"})"})');
SELECT * FROM rn_rows('n1') WHERE inv = 2;

-- 3. Two single_turn nodes in one model turn: a row each, its input the
-- arguments of its own delegating call, its output its answer
SELECT count(*) AS events
  FROM adk_run('rn_app', 'ann', 'n1', 'call rn_echo({"request": "uno"}) call rn_echo({"request": "dos"})');
SELECT * FROM rn_rows('n1') WHERE inv = 3;

-- 4. A pause inside a task: both rows waiting; the answer completes them,
-- in the same invocation, without a new attempt
SELECT count(*) AS events
  FROM adk_run('rn_app', 'ann', 'n1', 'call rn_cashier({"request": "call rn_charge({\"amount\": 7})"})');
SELECT * FROM rn_rows('n1') WHERE inv = 4;
SELECT count(*) AS events
  FROM adk_run('rn_app', 'ann', 'n1',
               adk_function_response((SELECT call_id FROM adk.pending_interrupts
                                       WHERE app_name = 'rn_app' AND session_id = 'n1'),
                                     'adk_request_confirmation', '{"confirmed": true}'));
SELECT * FROM rn_rows('n1') WHERE inv = 4;

-- 5. A model that fails: the root's row failed
SELECT count(*) AS events FROM adk_run('rn_app', 'ann', 'n1', 'Hello [[fault:400]]');
SELECT inv, node_path, status, attempt FROM rn_rows('n1') WHERE inv = 5;

-- 6. Rebuilt from the events, the session's rows are the live ones, every
-- column
SELECT count(*) AS live FROM adk.run_states WHERE app_name = 'rn_app' AND session_id = 'n1';
CREATE TEMP TABLE rn_live AS SELECT * FROM adk.run_states WHERE app_name = 'rn_app' AND session_id = 'n1';
DELETE FROM adk.run_states WHERE app_name = 'rn_app' AND session_id = 'n1';
SELECT adk_rebuild_run_states('rn_app', 'ann', 'n1') AS rebuilt;
SELECT (SELECT count(*) FROM (SELECT * FROM rn_live EXCEPT SELECT * FROM adk.run_states) x) AS missing,
       (SELECT count(*) FROM (SELECT * FROM adk.run_states WHERE app_name = 'rn_app' AND session_id = 'n1'
                              EXCEPT SELECT * FROM rn_live) x) AS extra;

-- 7. Another writer's events (no run of ours) that neither pause, answer
-- nor finish a node in an invocation with rows get their rows from
-- adk_rebuild_run_states (docs/runs.md): a single_turn node's input is
-- the n-th call of its agent that its parent made; hostile node paths (a
-- number past any call, not a number, nothing after '@', a number too
-- big, no parent) give a row with no input, and nothing fails
SELECT adk_create_session('rn_app', 'ann', 'w1') IS NOT NULL AS created;
SELECT count(*) AS appended FROM (VALUES
  (adk_append_event('rn_app', 'ann', 'w1', '{"author": "user", "invocation_id": "w-inv",
      "content": {"role": "user", "parts": [{"text": "Echo twice."}]}}')),
  (adk_append_event('rn_app', 'ann', 'w1', '{"author": "rn_desk", "invocation_id": "w-inv",
      "node_info": {"path": "rn_desk"},
      "content": {"role": "model", "parts": [{"function_call": {"name": "rn_echo", "id": "w-c1", "args": {"request": "a"}}},
                                             {"function_call": {"name": "rn_echo", "id": "w-c2", "args": {"request": "b"}}}]}}')),
  (adk_append_event('rn_app', 'ann', 'w1', '{"author": "rn_echo", "invocation_id": "w-inv", "branch": "rn_echo@2",
      "node_info": {"path": "rn_desk/rn_echo@2"},
      "content": {"role": "model", "parts": [{"text": "b"}]}}')),
  (adk_append_event('rn_app', 'ann', 'w1', '{"author": "rn_echo", "invocation_id": "w-inv", "branch": "rn_echo@1",
      "node_info": {"path": "rn_desk/rn_echo@1", "output_for": ["rn_desk/rn_echo@1"], "message_as_output": true},
      "content": {"role": "model", "parts": [{"text": "a"}]}}')),
  (adk_append_event('rn_app', 'ann', 'w1', '{"author": "rn_echo", "invocation_id": "w-inv",
      "node_info": {"path": "rn_desk/rn_echo@3"}, "content": {"role": "model", "parts": [{"text": "?"}]}}')),
  (adk_append_event('rn_app', 'ann', 'w1', '{"author": "rn_echo", "invocation_id": "w-inv",
      "node_info": {"path": "rn_desk/rn_echo@x"}, "content": {"role": "model", "parts": [{"text": "?"}]}}')),
  (adk_append_event('rn_app', 'ann', 'w1', '{"author": "rn_echo", "invocation_id": "w-inv",
      "node_info": {"path": "rn_desk/rn_echo@"}, "content": {"role": "model", "parts": [{"text": "?"}]}}')),
  (adk_append_event('rn_app', 'ann', 'w1', '{"author": "rn_echo", "invocation_id": "w-inv",
      "node_info": {"path": "rn_desk/rn_echo@99999999999999999999"}, "content": {"role": "model", "parts": [{"text": "?"}]}}')),
  (adk_append_event('rn_app', 'ann', 'w1', '{"author": "rn_echo", "invocation_id": "w-inv",
      "node_info": {"path": "@1"}, "content": {"role": "model", "parts": [{"text": "?"}]}}'))) v;
SELECT count(*) AS live FROM adk.run_states WHERE app_name = 'rn_app' AND session_id = 'w1';
SELECT adk_rebuild_run_states('rn_app', 'ann', 'w1') AS rebuilt;
SELECT * FROM rn_rows('w1');

-- 8. attempt is not in the events: a rebuild keeps a row's own, a row it
-- makes has 1
UPDATE adk.run_states SET attempt = 3 WHERE app_name = 'rn_app' AND session_id = 'w1' AND node_path = 'rn_desk';
SELECT adk_rebuild_run_states('rn_app', 'ann', 'w1') AS rebuilt;
SELECT node_path, attempt FROM adk.run_states WHERE app_name = 'rn_app' AND session_id = 'w1' AND node_path = 'rn_desk';

-- 9. A transfer inside the root's node, then a failure: one row, the
-- node's, failed, its agent the one that failed; rebuilt, the same
SELECT adk_define_model('rn_broken', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'fault-500', api_key_secret => 'test-key', options => '{"retries": 0}');
SELECT adk_define_agent('rn_peer', model => 'rn_broken', description => 'A peer that fails.');
SELECT adk_define_agent('rn_desk', model => 'local', sub_agents => ARRAY['rn_echo', 'rn_saver', 'rn_cashier', 'rn_peer']);
SELECT count(*) AS events FROM adk_run('rn_app', 'ann', 't1', 'transfer to rn_peer');
SELECT node_path, status, agent, attempt FROM adk.run_states WHERE app_name = 'rn_app' AND session_id = 't1';
CREATE TEMP TABLE rn_t1 AS SELECT * FROM adk.run_states WHERE app_name = 'rn_app' AND session_id = 't1';
DELETE FROM adk.run_states WHERE app_name = 'rn_app' AND session_id = 't1';
SELECT adk_rebuild_run_states('rn_app', 'ann', 't1') AS rebuilt;
SELECT (SELECT count(*) FROM (SELECT * FROM rn_t1 EXCEPT SELECT * FROM adk.run_states) x) AS missing,
       (SELECT count(*) FROM (SELECT * FROM adk.run_states WHERE app_name = 'rn_app' AND session_id = 't1'
                              EXCEPT SELECT * FROM rn_t1) x) AS extra;

-- 10. A graph workflow (docs/workflows.md "RunState"): a fan-out whose
-- branch pauses, then its answer -- each event refreshes only the rows it
-- changes, a resume only the rows it touched; rebuilt in place from the
-- events, the rows are the live ones, every column; deleted and rebuilt,
-- every column but input, which a workflow node's events do not hold
CREATE FUNCTION rn_step(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', jsonb_build_object('by', ctx ->> 'node')) $$;
CREATE FUNCTION rn_ask(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT '{"request_input": {"message": "Go on?"}}'::jsonb $$;
SELECT adk_define_workflow('rn_flow',
    '[{"name": "a", "function": "public.rn_step(jsonb,jsonb)"},
      {"name": "b", "function": "public.rn_ask(jsonb,jsonb)"},
      {"name": "c", "function": "public.rn_step(jsonb,jsonb)"},
      {"name": "d", "function": "public.rn_step(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "a"}, {"from": "a", "to": "b"}, {"from": "a", "to": "c"},
      {"from": "b", "to": "d"}]');
SELECT adk_define_app('rn_flow_app', 'rn_flow');
SELECT count(*) AS events FROM adk_run('rn_flow_app', 'ann', 'g1', 'Go.');
SELECT count(*) AS events
  FROM adk_run('rn_flow_app', 'ann', 'g1',
               adk_function_response((SELECT call_id FROM adk.pending_interrupts
                                       WHERE app_name = 'rn_flow_app' AND session_id = 'g1'),
                                     'adk_request_input', '{"ok": true}'));
SELECT node_path, status, cardinality(answered_ids) AS answered, output, triggered_by, branch,
       graph_hash = (SELECT graph_hash FROM adk.workflows WHERE name = 'rn_flow') AS same_hash
  FROM adk.run_states WHERE app_name = 'rn_flow_app' AND session_id = 'g1' ORDER BY node_path;
CREATE TEMP TABLE rn_g1 AS SELECT * FROM adk.run_states WHERE app_name = 'rn_flow_app' AND session_id = 'g1';
SELECT adk_rebuild_run_states('rn_flow_app', 'ann', 'g1') AS rebuilt;
SELECT (SELECT count(*) FROM (SELECT * FROM rn_g1 EXCEPT SELECT * FROM adk.run_states) x) AS missing,
       (SELECT count(*) FROM (SELECT * FROM adk.run_states WHERE app_name = 'rn_flow_app' AND session_id = 'g1'
                              EXCEPT SELECT * FROM rn_g1) x) AS extra;
DELETE FROM adk.run_states WHERE app_name = 'rn_flow_app' AND session_id = 'g1';
SELECT adk_rebuild_run_states('rn_flow_app', 'ann', 'g1') AS rebuilt;
SELECT (SELECT count(*) FROM (SELECT app_name, user_id, session_id, invocation_id, node_path, status,
                                     interrupt_ids, answered_ids, agent, updated_at, output, attempt,
                                     triggered_by, branch, graph_hash FROM rn_g1
                              EXCEPT
                              SELECT app_name, user_id, session_id, invocation_id, node_path, status,
                                     interrupt_ids, answered_ids, agent, updated_at, output, attempt,
                                     triggered_by, branch, graph_hash FROM adk.run_states) x) AS differ;
DELETE FROM adk.sessions WHERE app_name = 'rn_flow_app';
DELETE FROM adk.apps WHERE name = 'rn_flow_app';
DELETE FROM adk.agents WHERE name = 'rn_flow';

-- 11. A graph workflow's failure ends the invocation (docs/workflows.md
-- "Statuses"): the node that failed is failed, and so are the parallel
-- worker of a failed item and a nested workflow node the failure is
-- below; the nodes still running are cancelled (ADK-Go cancels them),
-- each with an event on its path -- none is left running.  Rebuilt in
-- place from the events, the rows are the live ones, every column;
-- deleted and rebuilt, every column but input.
CREATE FUNCTION rn_fail_b(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    IF input #>> '{}' = 'b' THEN
        RAISE EXCEPTION 'failed on b';
    END IF;
    RETURN jsonb_build_object('output', input);
END $$;
CREATE FUNCTION rn_split(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', to_jsonb(string_to_array(input #>> '{parts,0,text}', ','))) $$;
SELECT adk_define_model('rn_slow', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'gpt-latency-300', api_key_secret => 'test-key');
SELECT adk_define_agent('rn_slow_agent', model => 'rn_slow', instruction => 'Echo.');
SELECT adk_define_agent('rn_broken_agent', model => 'rn_broken', instruction => 'Fail.');
-- (a) a parallel worker's function item fails: the worker fails, the
-- item after it never starts
SELECT adk_define_workflow('rn_pw',
    '[{"name": "split", "function": "public.rn_split(jsonb,jsonb)"},
      {"name": "each", "kind": "parallel_worker", "worker": "worker"},
      {"name": "worker", "function": "public.rn_fail_b(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "split"}, {"from": "split", "to": "each"}]');
-- (b) a fan-out of two agent nodes: one's model fails while the other's
-- call is in flight
SELECT adk_define_workflow('rn_fan',
    '[{"name": "slow", "agent": "rn_slow_agent"}, {"name": "broken", "agent": "rn_broken_agent"}]',
    '[{"from": "START", "to": "slow"}, {"from": "START", "to": "broken"}]');
-- (c) a parallel worker of nested workflows (a check, then an agent):
-- item "b" fails inside its workflow, the others are in flight
SELECT adk_define_workflow('rn_inner',
    '[{"name": "check", "function": "public.rn_fail_b(jsonb,jsonb)"}, {"name": "echo", "agent": "rn_slow_agent"}]',
    '[{"from": "START", "to": "check"}, {"from": "check", "to": "echo"}]');
SELECT adk_define_workflow('rn_nest',
    '[{"name": "split", "function": "public.rn_split(jsonb,jsonb)"},
      {"name": "each", "kind": "parallel_worker", "worker": "worker"},
      {"name": "worker", "workflow": "rn_inner"}]',
    '[{"from": "START", "to": "split"}, {"from": "split", "to": "each"}]');
SELECT adk_define_app('rn_pw_app', 'rn_pw'), adk_define_app('rn_fan_app', 'rn_fan'),
       adk_define_app('rn_nest_app', 'rn_nest');
SELECT count(*) AS events FROM adk_run('rn_pw_app', 'ann', 'rn-f1', 'a,b,c');
SELECT count(*) AS events FROM adk_run('rn_fan_app', 'ann', 'rn-f2', 'Go.');
SELECT count(*) AS events FROM adk_run('rn_nest_app', 'ann', 'rn-f3', 'a,b,c');
-- (items on their sub-branches "worker@<place>", the broken agent's
-- error on the branch its fan-out made, "broken@1")
SELECT session_id, node_path, status, branch, triggered_by
  FROM adk.run_states WHERE session_id IN ('rn-f1', 'rn-f2', 'rn-f3') ORDER BY session_id, node_path COLLATE "C";
-- the stop events, in ADK's wire format: an error_code and the node's path
SELECT e.session_id, e.event_data #>> '{node_info,path}' AS path, e.event_data ->> 'author' AS author,
       e.event_data ->> 'error_code' AS code, e.event_data ->> 'error_message' AS message
  FROM adk.events e WHERE e.session_id IN ('rn-f1', 'rn-f2', 'rn-f3') AND e.event_data ? 'error_code'
 ORDER BY e.session_id, e.seq;
SELECT i.session_id, i.status, i.error_code FROM adk.invocations i
 WHERE i.session_id IN ('rn-f1', 'rn-f2', 'rn-f3') ORDER BY 1;
CREATE TEMP TABLE rn_f AS SELECT * FROM adk.run_states WHERE session_id IN ('rn-f1', 'rn-f2', 'rn-f3');
SELECT adk_rebuild_run_states(a, 'ann', s) AS rebuilt
  FROM (VALUES ('rn_pw_app', 'rn-f1'), ('rn_fan_app', 'rn-f2'), ('rn_nest_app', 'rn-f3')) v(a, s);
SELECT (SELECT count(*) FROM (SELECT * FROM rn_f EXCEPT SELECT * FROM adk.run_states) x) AS missing,
       (SELECT count(*) FROM (SELECT * FROM adk.run_states WHERE session_id IN ('rn-f1', 'rn-f2', 'rn-f3')
                              EXCEPT SELECT * FROM rn_f) x) AS extra;
DELETE FROM adk.run_states WHERE session_id IN ('rn-f1', 'rn-f2', 'rn-f3');
SELECT adk_rebuild_run_states(a, 'ann', s) AS rebuilt
  FROM (VALUES ('rn_pw_app', 'rn-f1'), ('rn_fan_app', 'rn-f2'), ('rn_nest_app', 'rn-f3')) v(a, s);
SELECT (SELECT count(*) FROM (SELECT app_name, user_id, session_id, invocation_id, node_path, status,
                                     interrupt_ids, answered_ids, agent, updated_at, output, attempt,
                                     triggered_by, branch, graph_hash FROM rn_f
                              EXCEPT
                              SELECT app_name, user_id, session_id, invocation_id, node_path, status,
                                     interrupt_ids, answered_ids, agent, updated_at, output, attempt,
                                     triggered_by, branch, graph_hash FROM adk.run_states) x) AS missing,
       (SELECT count(*) FROM (SELECT app_name, user_id, session_id, invocation_id, node_path, status,
                                     interrupt_ids, answered_ids, agent, updated_at, output, attempt,
                                     triggered_by, branch, graph_hash FROM adk.run_states
                               WHERE session_id IN ('rn-f1', 'rn-f2', 'rn-f3')
                              EXCEPT
                              SELECT app_name, user_id, session_id, invocation_id, node_path, status,
                                     interrupt_ids, answered_ids, agent, updated_at, output, attempt,
                                     triggered_by, branch, graph_hash FROM rn_f) x) AS extra;
DELETE FROM adk.sessions WHERE app_name IN ('rn_pw_app', 'rn_fan_app', 'rn_nest_app');
DELETE FROM adk.apps WHERE name IN ('rn_pw_app', 'rn_fan_app', 'rn_nest_app');
DELETE FROM adk.agents WHERE name IN ('rn_pw', 'rn_fan', 'rn_nest');
-- the workflow that names an agent goes first (deleting its agent deletes it)
DELETE FROM adk.agents WHERE name = 'rn_inner';
DELETE FROM adk.agents WHERE name IN ('rn_slow_agent', 'rn_broken_agent');
DELETE FROM adk.models WHERE name = 'rn_slow';

DELETE FROM adk.apps WHERE name = 'rn_app';
DELETE FROM adk.sessions WHERE app_name = 'rn_app';
DELETE FROM adk.agents WHERE name = 'rn_desk';
DELETE FROM adk.agents WHERE name IN ('rn_echo', 'rn_saver', 'rn_cashier', 'rn_peer');
DELETE FROM adk.models WHERE name = 'rn_broken';
SELECT count(*) AS run_states_left FROM adk.run_states WHERE app_name = 'rn_app';
