-- Confirmation and several calls in an agent node (docs/workflows.md
-- "Human input"): a tool that requires confirmation holds the node on
-- ADK's adk_request_confirmation call; a yes runs the tool in the
-- agent's lane and its model gets the result, a no gives the model ADK's
-- rejection, as a plain agent (hitl.c); either way the node completes
-- with the agent's final answer.  An agent that waits on two calls goes
-- on once both are answered (one answer: the node still waits, no model
-- call).  A tool node runs a long-running tool as ADK-Go's tool node does
-- (its response is the output, no pause); what does not run yet is
-- refused with 0A000 before anything is stored.
SELECT adk_define_model('w887_model', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'gpt-test', api_key_secret => 'test-key');
CREATE TABLE w887_payments (amount integer, to_account text);
CREATE FUNCTION w887_pay(amount integer, to_account text) RETURNS jsonb LANGUAGE sql AS $$
  INSERT INTO w887_payments VALUES (amount, to_account)
  RETURNING jsonb_build_object('paid', amount, 'to', to_account) $$;
COMMENT ON FUNCTION w887_pay(integer, text) IS 'Send a payment.';
CREATE TABLE w887_tickets (item text);
CREATE FUNCTION w887_request(item text) RETURNS jsonb LANGUAGE sql AS $$
  INSERT INTO w887_tickets VALUES (item) RETURNING jsonb_build_object('status', 'pending', 'item', item) $$;
COMMENT ON FUNCTION w887_request(text) IS 'File a request; a person answers it later.';
SELECT adk_define_tool('w887_pay(integer,text)'::regprocedure, require_confirmation => true);
SELECT adk_define_tool('w887_request(text)'::regprocedure, long_running => true);
CREATE FUNCTION w887_wrap(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', jsonb_build_object('node', ctx ->> 'node', 'got', input))
$$;
CREATE FUNCTION w887_text(t text) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_build_object('role', 'user', 'parts', jsonb_build_array(jsonb_build_object('text', t))) $$;
CREATE FUNCTION w887_mask(t text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT regexp_replace(regexp_replace(t, 'call_[A-Za-z0-9]{24}', 'call_<id>', 'g'),
                        'adk-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}', 'adk-<id>', 'g') $$;
CREATE FUNCTION w887_run(app text, sid text, msg jsonb)
RETURNS TABLE (author text, path text, branch text, parts text, output jsonb)
LANGUAGE sql AS $$
    SELECT r.event_data ->> 'author', r.event_data #>> '{node_info,path}', r.event_data ->> 'branch',
           w887_mask(r.event_data #>> '{content,parts}'), r.event_data -> 'output'
      FROM adk_run(app, 'u', sid, msg) r
     WHERE r.event_data ->> 'author' <> 'user'
     ORDER BY r.seq
$$;
CREATE FUNCTION w887_rows(sid text)
RETURNS TABLE (node_path text, status text, pending integer, answered integer, output jsonb)
LANGUAGE sql AS $$
    SELECT node_path, status, cardinality(interrupt_ids), cardinality(answered_ids), output
      FROM adk.run_states WHERE session_id = sid ORDER BY node_path COLLATE "C"
$$;
CREATE FUNCTION w887_rebuilt_differ(app text, sid text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    CREATE TEMP TABLE w887_live ON COMMIT DROP AS
        SELECT * FROM adk.run_states WHERE app_name = app AND session_id = sid;
    DELETE FROM adk.run_states WHERE app_name = app AND session_id = sid;
    PERFORM adk_rebuild_run_states(app, 'u', sid);
    SELECT count(*) INTO n FROM (
        (SELECT invocation_id, node_path, status, interrupt_ids, answered_ids, agent, updated_at,
                output, attempt, triggered_by, branch, graph_hash FROM w887_live
         EXCEPT
         SELECT invocation_id, node_path, status, interrupt_ids, answered_ids, agent, updated_at,
                output, attempt, triggered_by, branch, graph_hash
           FROM adk.run_states WHERE app_name = app AND session_id = sid)
        UNION ALL
        (SELECT invocation_id, node_path, status, interrupt_ids, answered_ids, agent, updated_at,
                output, attempt, triggered_by, branch, graph_hash
           FROM adk.run_states WHERE app_name = app AND session_id = sid
         EXCEPT
         SELECT invocation_id, node_path, status, interrupt_ids, answered_ids, agent, updated_at,
                output, attempt, triggered_by, branch, graph_hash FROM w887_live)) x;
    DELETE FROM adk.run_states WHERE app_name = app AND session_id = sid;
    INSERT INTO adk.run_states SELECT * FROM w887_live;
    DROP TABLE w887_live;
    RETURN n;
END
$$;

-- 1. START -> payer (a tool that requires confirmation) -> wrap.
SELECT adk_define_agent('w887_payer', model => 'w887_model', instruction => 'You send payments.',
                        tools => ARRAY['w887_pay', 'w887_request']);
SELECT adk_define_workflow('w887_pay_flow',
    '[{"agent": "w887_payer"}, {"name": "wrap", "function": "public.w887_wrap(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "w887_payer"}, {"from": "w887_payer", "to": "wrap"}]');
SELECT adk_define_app('w887_pay_app', 'w887_pay_flow');
-- the call does not run: ADK's placeholder, then the confirmation request
SELECT * FROM w887_run('w887_pay_app', 'w887-yes',
                       w887_text('call w887_pay({"amount": 100, "to_account": "ACME"})'));
SELECT count(*) AS payments FROM w887_payments;
SELECT * FROM w887_rows('w887-yes');
SELECT tool, args #>> '{originalFunctionCall,name}' AS asks_about, agent
  FROM adk.pending_interrupts WHERE session_id = 'w887-yes';
SELECT status FROM adk.invocations WHERE session_id = 'w887-yes';
-- yes: the tool runs under the original call id, in the node's lane; the
-- model gets its result and answers; the node completes, wrap runs
SELECT * FROM w887_run('w887_pay_app', 'w887-yes',
    adk_function_response((SELECT call_id FROM adk.pending_interrupts WHERE session_id = 'w887-yes'),
                          'adk_request_confirmation', '{"confirmed": true}'));
SELECT * FROM w887_payments;
SELECT * FROM w887_rows('w887-yes');
SELECT status FROM adk.invocations WHERE session_id = 'w887-yes';
SELECT w887_rebuilt_differ('w887_pay_app', 'w887-yes') AS rebuilt_rows_differ;
-- no: nothing is paid; the model hears ADK's rejection, and its answer
-- is the node's output
SELECT count(*) FROM adk_run('w887_pay_app', 'u', 'w887-no',
                             'call w887_pay({"amount": 5000, "to_account": "EVIL"})');
SELECT * FROM w887_run('w887_pay_app', 'w887-no',
    adk_function_response((SELECT call_id FROM adk.pending_interrupts WHERE session_id = 'w887-no'),
                          'adk_request_confirmation', '{"confirmed": false}'));
SELECT count(*) AS payments FROM w887_payments;
SELECT * FROM w887_rows('w887-no');
SELECT w887_rebuilt_differ('w887_pay_app', 'w887-no') AS rebuilt_rows_differ;

-- 2. Two long-running calls in one model turn: the first answer leaves
-- the node waiting (no model call); the second resumes the agent, whose
-- model gets both answers in one request.
SELECT count(*) FROM adk_run('w887_pay_app', 'u', 'w887-two',
    'call w887_request({"item": "desk"}) call w887_request({"item": "lamp"})');
SELECT * FROM w887_rows('w887-two');
CREATE TEMP TABLE w887_calls AS
SELECT call_id, args ->> 'item' AS item FROM adk.pending_interrupts WHERE session_id = 'w887-two';
SELECT count(*) AS model_calls FROM adk.model_calls
 WHERE invocation_id IN (SELECT invocation_id FROM adk.invocations WHERE session_id = 'w887-two');
SELECT * FROM w887_run('w887_pay_app', 'w887-two',
    adk_function_response((SELECT call_id FROM w887_calls WHERE item = 'desk'), 'w887_request', '{"ok": "desk"}'));
SELECT * FROM w887_rows('w887-two');
SELECT status FROM adk.invocations WHERE session_id = 'w887-two';
SELECT count(*) AS model_calls FROM adk.model_calls
 WHERE invocation_id IN (SELECT invocation_id FROM adk.invocations WHERE session_id = 'w887-two');
SELECT * FROM w887_run('w887_pay_app', 'w887-two',
    adk_function_response((SELECT call_id FROM w887_calls WHERE item = 'lamp'), 'w887_request', '{"ok": "lamp"}'));
SELECT * FROM w887_rows('w887-two');
SELECT status FROM adk.invocations WHERE session_id = 'w887-two';
SELECT w887_rebuilt_differ('w887_pay_app', 'w887-two') AS rebuilt_rows_differ;

-- A graph changed while an agent node waits: the answer is refused
-- (nothing stored, the call stays pending); the graph restored, it
-- resumes the node.
SELECT count(*) FROM adk_run('w887_pay_app', 'u', 'w887-hash', 'call w887_request({"item": "mat"})');
SELECT adk_define_workflow('w887_pay_flow',
    '[{"agent": "w887_payer"}, {"name": "wrap", "function": "public.w887_wrap(jsonb,jsonb)"},
      {"name": "extra", "function": "public.w887_wrap(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "w887_payer"}, {"from": "w887_payer", "to": "wrap"},
      {"from": "wrap", "to": "extra"}]');
SELECT expect_error($$SELECT * FROM adk_run('w887_pay_app', 'u', 'w887-hash',
    adk_function_response((SELECT call_id FROM adk.pending_interrupts WHERE session_id = 'w887-hash'),
                          'w887_request', '{"ok": "mat"}'))$$);
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE session_id = 'w887-hash';
SELECT adk_define_workflow('w887_pay_flow',
    '[{"agent": "w887_payer"}, {"name": "wrap", "function": "public.w887_wrap(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "w887_payer"}, {"from": "w887_payer", "to": "wrap"}]');
SELECT * FROM w887_run('w887_pay_app', 'w887-hash',
    adk_function_response((SELECT call_id FROM adk.pending_interrupts WHERE session_id = 'w887-hash'),
                          'w887_request', '{"ok": "mat"}'));

-- 3. A tool node whose tool is long-running: it runs, as ADK-Go's tool
-- node runs a tool (no pause); its response is the node's output.
CREATE FUNCTION w887_args(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', jsonb_build_object('item', input #>> '{parts,0,text}'))
$$;
SELECT adk_define_workflow('w887_tool_flow',
    '[{"name": "args", "function": "public.w887_args(jsonb,jsonb)"},
      {"name": "file", "tool": "w887_request"},
      {"name": "wrap", "function": "public.w887_wrap(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "args"}, {"from": "args", "to": "file"}, {"from": "file", "to": "wrap"}]');
SELECT adk_define_app('w887_tool_app', 'w887_tool_flow');
SELECT author, path, output FROM w887_run('w887_tool_app', 'w887-tool', w887_text('chair'));
SELECT * FROM w887_tickets ORDER BY item;
SELECT status FROM adk.invocations WHERE session_id = 'w887-tool';
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE session_id = 'w887-tool';

-- 4. Refused before anything is stored: a tool node whose tool requires
-- confirmation (ADK-Go's tool node gives it no confirmation: it fails).
-- A parallel worker whose worker agent has a tool that pauses runs (an
-- item whose agent pauses waits: 868_workflow_agent_item_pause).
SELECT adk_define_workflow('w887_tool_flow',
    '[{"name": "args", "function": "public.w887_args(jsonb,jsonb)"},
      {"name": "file", "tool": "w887_pay"},
      {"name": "wrap", "function": "public.w887_wrap(jsonb,jsonb)"}]', NULL);
SELECT expect_error($$SELECT * FROM adk_run('w887_tool_app', 'u', 'w887-tool-r', 'chair')$$);
CREATE FUNCTION w887_list(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', jsonb_build_array(
        'a', 'call w887_pay({"amount": 7, "to_account": "ITEM"})'))
$$;
SELECT adk_define_workflow('w887_pw_flow',
    '[{"name": "list", "function": "public.w887_list(jsonb,jsonb)"},
      {"name": "each", "kind": "parallel_worker", "worker": "w887_payer"},
      {"agent": "w887_payer"}]',
    '[{"from": "START", "to": "list"}, {"from": "list", "to": "each"}]');
SELECT adk_define_app('w887_pw_app', 'w887_pw_flow');
SELECT count(*) > 0 AS ran FROM adk_run('w887_pw_app', 'u', 'w887-pw', 'go');
-- item 2 waits on the confirmation of its call, item 1 completed
SELECT status FROM adk.invocations WHERE session_id = 'w887-pw';
SELECT node_path, status, cardinality(interrupt_ids) AS pending FROM adk.run_states
 WHERE session_id = 'w887-pw' ORDER BY node_path COLLATE "C";
SELECT tool FROM adk.pending_interrupts WHERE session_id = 'w887-pw';
-- the yes runs the tool in item 2's lane; the worker completes
SELECT r.event_data #>> '{node_info,path}' AS path, r.event_data -> 'output' AS output
  FROM adk_run('w887_pw_app', 'u', 'w887-pw',
    adk_function_response((SELECT call_id FROM adk.pending_interrupts WHERE session_id = 'w887-pw'),
                          'adk_request_confirmation', '{"confirmed": true}')) r
 WHERE r.event_data ? 'output' ORDER BY r.seq;
SELECT * FROM w887_payments WHERE to_account = 'ITEM';
SELECT status FROM adk.invocations WHERE session_id = 'w887-pw';
-- a workflow below an agent that is not a workflow (a sequential agent's
-- sub-agent) whose agent node's agent may pause: the pause could not
-- pause the invocation
SELECT adk_define_workflow('w887_below_flow', '[{"agent": "w887_payer"}]',
                           '[{"from": "START", "to": "w887_payer"}]');
SELECT adk_define_agent('w887_seq', kind => 'sequential', sub_agents => ARRAY['w887_below_flow']);
SELECT adk_define_app('w887_seq_app', 'w887_seq');
SELECT expect_error($$SELECT * FROM adk_run('w887_seq_app', 'u', 'w887-seq', 'call w887_request({"item": "cup"})')$$);
-- as an app's root it runs
SELECT adk_define_app('w887_below_app', 'w887_below_flow');
SELECT count(*) > 0 AS ran FROM adk_run('w887_below_app', 'u', 'w887-below', 'call w887_request({"item": "cup"})');
SELECT status FROM adk.invocations WHERE session_id = 'w887-below';
SELECT count(*) AS events_stored FROM adk.events WHERE session_id IN ('w887-tool-r', 'w887-seq');

DELETE FROM adk.sessions WHERE app_name LIKE 'w887%';
DELETE FROM adk.apps WHERE name LIKE 'w887%';
