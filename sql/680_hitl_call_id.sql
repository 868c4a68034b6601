-- Human in the loop decided by call id (docs/runs.md, "Human in the loop"): a pending
-- call is answered by any later user response with its id, from any
-- writer, in any invocation (ADK-JS and ADK Python answer in a new
-- invocation of their own); adk.run_states / adk.pending_interrupts follow
-- every writer's appends at once; a second answer never runs the tool
-- again, and a repeated answer to a confirmation runs nothing at all.
-- Another runtime's appends are planted with adk_append_event, as ADK-JS
-- writes them.
SELECT adk_set_secret('h68-key', 'sk-h68', ARRAY['127.0.0.1']);
SELECT adk_define_model('h68_model', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'gpt-test', api_key_secret => 'h68-key');
CREATE TABLE h68_payments (amount integer);
CREATE FUNCTION h68_pay(amount integer) RETURNS jsonb LANGUAGE sql AS $$
  INSERT INTO h68_payments VALUES (amount) RETURNING jsonb_build_object('paid', amount) $$;
COMMENT ON FUNCTION h68_pay(integer) IS 'Send money.';
CREATE FUNCTION h68_ticket(item text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('status', 'pending', 'item', item) $$;
COMMENT ON FUNCTION h68_ticket(text) IS 'File a ticket.';
SELECT adk_define_tool('h68_pay(integer)'::regprocedure, require_confirmation => true);
SELECT adk_define_tool('h68_ticket(text)'::regprocedure, long_running => true);
SELECT adk_define_agent('h68_agent', model => 'h68_model', instruction => 'You pay.',
                        tools => ARRAY['h68_pay', 'h68_ticket']);
SELECT adk_define_app('h68_app', 'h68_agent', auto_create_session => true);
CREATE FUNCTION h68_calls(s text) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM adk.model_calls c JOIN adk.invocations i USING (invocation_id)
   WHERE i.app_name = 'h68_app' AND i.session_id = s $$;
CREATE FUNCTION h68_events(s text) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM adk.events WHERE app_name = 'h68_app' AND session_id = s $$;
CREATE FUNCTION h68_pending(s text) RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(string_agg(tool, ',' ORDER BY since), '-') FROM adk.pending_interrupts
   WHERE app_name = 'h68_app' AND session_id = s $$;
CREATE FUNCTION h68_state(s text) RETURNS TABLE (status text, pending integer, answered integer)
LANGUAGE sql AS $$
  SELECT status, cardinality(interrupt_ids), cardinality(answered_ids) FROM adk.run_states
   WHERE app_name = 'h68_app' AND session_id = s ORDER BY invocation_id $$;

-- 1. adk_run pauses on a confirmation; the user approves through another
-- runtime, which answers in an invocation of its own and runs the tool
-- there (its result under the original call id, as ADK-JS writes it).
SELECT count(*) FROM adk_run('h68_app', 'u', 'a', 'call h68_pay({"amount": 100})');
SELECT h68_pending('a') AS pending;
CREATE TEMP TABLE a_ids AS
SELECT call_id AS confirm_id, args #>> '{originalFunctionCall,id}' AS call_id
  FROM adk.pending_interrupts WHERE app_name = 'h68_app' AND session_id = 'a';
SELECT adk_append_event('h68_app', 'u', 'a', jsonb_build_object(
         'invocation_id', 'js-inv-1', 'author', 'user', 'content', jsonb_build_object('role', 'user', 'parts',
           jsonb_build_array(jsonb_build_object('function_response', jsonb_build_object(
             'id', confirm_id, 'name', 'adk_request_confirmation', 'response', '{"confirmed": true}'::jsonb))))))
         IS NOT NULL AS answered_elsewhere FROM a_ids;
-- at once, without adk_rebuild_run_states(): nothing pending any more
SELECT h68_pending('a') AS pending;
SELECT * FROM h68_state('a');
INSERT INTO h68_payments VALUES (100);  -- the other runtime ran the tool
SELECT adk_append_event('h68_app', 'u', 'a', jsonb_build_object(
         'invocation_id', 'js-inv-1', 'author', 'h68_agent', 'content', jsonb_build_object('role', 'user', 'parts',
           jsonb_build_array(jsonb_build_object('function_response', jsonb_build_object(
             'id', call_id, 'name', 'h68_pay', 'response', '{"paid": 100}'::jsonb))))))
         IS NOT NULL AS tool_result FROM a_ids;
-- the same answer sent to adk_run later: the tool does not run again, no
-- model round starts, nothing is stored, no rows
CREATE TEMP TABLE a_before AS SELECT h68_events('a') AS events, h68_calls('a') AS calls;
SELECT count(*) AS rows FROM a_ids, adk_run('h68_app', 'u', 'a',
    adk_function_response(confirm_id, 'adk_request_confirmation', '{"confirmed": true}'));
SELECT count(*) AS payments FROM h68_payments;
SELECT h68_events('a') - events AS new_events, h68_calls('a') - calls AS new_model_calls FROM a_before;
SELECT h68_pending('a') AS pending;

-- 2. adk_run answers first; a second approval (another client) runs
-- nothing either, and leaves no second pending confirmation.
TRUNCATE h68_payments;
SELECT count(*) FROM adk_run('h68_app', 'u', 'b', 'call h68_pay({"amount": 7})');
CREATE TEMP TABLE b_ids AS
SELECT call_id AS confirm_id FROM adk.pending_interrupts WHERE app_name = 'h68_app' AND session_id = 'b';
SELECT count(*) AS rows FROM b_ids, adk_run('h68_app', 'u', 'b',
    adk_function_response(confirm_id, 'adk_request_confirmation', '{"confirmed": true}'));
CREATE TEMP TABLE b_before AS SELECT h68_events('b') AS events, h68_calls('b') AS calls;
SELECT count(*) AS rows FROM b_ids, adk_run('h68_app', 'u', 'b',
    adk_function_response(confirm_id, 'adk_request_confirmation', '{"confirmed": true}'));
SELECT count(*) AS payments FROM h68_payments;
SELECT h68_events('b') - events AS new_events, h68_calls('b') - calls AS new_model_calls FROM b_before;
SELECT h68_pending('b') AS pending;
-- a message with more than the repeated answer is new input as always
SELECT count(*) > 0 AS ran FROM b_ids, adk_run('h68_app', 'u', 'b',
    jsonb_build_object('role', 'user', 'parts', jsonb_build_array(
      jsonb_build_object('function_response', jsonb_build_object('id', confirm_id,
        'name', 'adk_request_confirmation', 'response', '{"confirmed": true}'::jsonb)),
      jsonb_build_object('text', 'thanks'))));
SELECT count(*) AS payments FROM h68_payments;

-- 3. A pause another runtime wrote shows at once, and its answer (in yet
-- another invocation) clears it at once.
SELECT adk_create_session('h68_app', 'u', 'c') IS NOT NULL AS created;
SELECT adk_append_event('h68_app', 'u', 'c', '{"invocation_id": "js-1", "author": "user", "content": {"role": "user", "parts": [{"text": "file it"}]}}') IS NOT NULL AS appended;
SELECT adk_append_event('h68_app', 'u', 'c', '{"invocation_id": "js-1", "author": "h68_agent", "long_running_tool_ids": ["js-lr-1"], "content": {"role": "model", "parts": [{"function_call": {"id": "js-lr-1", "name": "h68_ticket", "args": {"item": "x"}}}]}}') IS NOT NULL AS appended;
SELECT h68_pending('c') AS pending;
SELECT * FROM h68_state('c');
SELECT adk_append_event('h68_app', 'u', 'c', '{"invocation_id": "js-2", "author": "user", "content": {"role": "user", "parts": [{"function_response": {"id": "js-lr-1", "name": "h68_ticket", "response": {"status": "done"}}}]}}') IS NOT NULL AS appended;
SELECT h68_pending('c') AS pending;
SELECT * FROM h68_state('c');
-- a response from an agent (the tool's own provisional one) answers nothing
SELECT adk_append_event('h68_app', 'u', 'c', '{"invocation_id": "js-3", "author": "h68_agent", "long_running_tool_ids": ["js-lr-2"], "content": {"role": "model", "parts": [{"function_call": {"id": "js-lr-2", "name": "h68_ticket", "args": {"item": "y"}}}]}}') IS NOT NULL AS appended;
SELECT adk_append_event('h68_app', 'u', 'c', '{"invocation_id": "js-3", "author": "h68_agent", "content": {"role": "user", "parts": [{"function_response": {"id": "js-lr-2", "name": "h68_ticket", "response": {"status": "pending"}}}]}}') IS NOT NULL AS appended;
SELECT h68_pending('c') AS pending;

-- 4. A long-running call paused by adk_run and answered by another
-- runtime: the answer sent again to adk_run is plain input (a new
-- invocation; a long-running tool may report again), never a resume.
SELECT count(*) FROM adk_run('h68_app', 'u', 'd', 'call h68_ticket({"item": "z"})');
CREATE TEMP TABLE d_ids AS
SELECT call_id, invocation_id FROM adk.pending_interrupts WHERE app_name = 'h68_app' AND session_id = 'd';
SELECT adk_append_event('h68_app', 'u', 'd', jsonb_build_object('invocation_id', 'js-d', 'author', 'user',
         'content', jsonb_build_object('role', 'user', 'parts', jsonb_build_array(jsonb_build_object(
           'function_response', jsonb_build_object('id', call_id, 'name', 'h68_ticket', 'response', '{"status": "done"}'::jsonb))))))
         IS NOT NULL AS answered_elsewhere FROM d_ids;
SELECT h68_pending('d') AS pending;
SELECT bool_and(e.invocation_id <> d.invocation_id) AS new_invocation
  FROM d_ids d, adk_run('h68_app', 'u', 'd',
         adk_function_response(d.call_id, 'h68_ticket', '{"status": "done again"}')) e;
SELECT status, resumed FROM adk.invocations i, d_ids d WHERE i.invocation_id = d.invocation_id;

-- 5. The rows the append path keeps are the rows a rebuild derives --
-- and one more: the node of the other runtime's plain event of step 1,
-- which neither paused, answered nor finished a node (such rows come from
-- a rebuild alone: docs/runs.md).
CREATE TEMP TABLE kept AS SELECT * FROM adk.run_states WHERE app_name = 'h68_app';
SELECT adk_rebuild_run_states('h68_app') > 0 AS rebuilt;
SELECT count(*) AS differences FROM (
  (SELECT app_name, user_id, session_id, invocation_id, node_path, status, interrupt_ids, answered_ids, agent
     FROM kept EXCEPT
   SELECT app_name, user_id, session_id, invocation_id, node_path, status, interrupt_ids, answered_ids, agent
     FROM adk.run_states WHERE app_name = 'h68_app')
  UNION ALL
  (SELECT app_name, user_id, session_id, invocation_id, node_path, status, interrupt_ids, answered_ids, agent
     FROM adk.run_states WHERE app_name = 'h68_app' EXCEPT
   SELECT app_name, user_id, session_id, invocation_id, node_path, status, interrupt_ids, answered_ids, agent
     FROM kept)) x;
SELECT session_id, invocation_id, node_path, status, agent
  FROM (SELECT session_id, invocation_id, node_path, status, agent FROM adk.run_states WHERE app_name = 'h68_app'
        EXCEPT SELECT session_id, invocation_id, node_path, status, agent FROM kept) x;

-- clean up what later files might count
SELECT count(*) FROM (SELECT adk_delete_session(app_name, user_id, id) FROM adk.sessions
                       WHERE app_name = 'h68_app') d;
DELETE FROM adk.apps WHERE name = 'h68_app';
DELETE FROM adk.agents WHERE name = 'h68_agent';
DELETE FROM adk.tools WHERE name LIKE 'h68%';
DELETE FROM adk.models WHERE name = 'h68_model';
DELETE FROM adk.secrets WHERE name = 'h68-key';
DROP FUNCTION h68_calls(text), h68_events(text), h68_pending(text), h68_state(text), h68_pay(integer), h68_ticket(text);
DROP TABLE h68_payments;
