-- Human in the loop (docs/runs.md): a long-running tool pauses the invocation,
-- an answer to a pending interrupt resumes the same invocation, anything
-- else is plain input; several interrupts answered one per turn; tool
-- confirmation; adk.run_states derived from the events; the view of what
-- every session waits on.
SELECT adk_set_secret('hitl-key', 'sk-hitl', ARRAY['127.0.0.1']);
SELECT adk_define_model('hitl_model', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'gpt-test', api_key_secret => 'hitl-key');

-- a long-running tool files a ticket and returns at once; a person
-- answers later.  A tool that needs confirmation pays.
CREATE TABLE hitl_tickets (item text);
CREATE FUNCTION request_approval(item text) RETURNS jsonb LANGUAGE sql AS $$
  INSERT INTO hitl_tickets VALUES (item) RETURNING jsonb_build_object('status', 'pending', 'item', item) $$;
COMMENT ON FUNCTION request_approval(text) IS 'File an approval request; a person answers it later.';
CREATE TABLE hitl_payments (amount integer, to_account text);
CREATE FUNCTION send_payment(amount integer, to_account text) RETURNS jsonb LANGUAGE sql AS $$
  INSERT INTO hitl_payments VALUES (amount, to_account)
  RETURNING jsonb_build_object('paid', amount, 'to', to_account) $$;
COMMENT ON FUNCTION send_payment(integer, text) IS 'Send a payment.';
SELECT adk_define_tool('request_approval(text)'::regprocedure, long_running => true);
SELECT adk_define_tool('send_payment(integer,text)'::regprocedure, require_confirmation => true);
SELECT adk_define_agent('hitl_agent', model => 'hitl_model', instruction => 'You file requests and send payments.',
                        tools => ARRAY['request_approval', 'send_payment']);
SELECT adk_define_app('hitl_app', 'hitl_agent');

-- Call ids come from the model server (call_...) or the runner (adk-...):
-- masked in the output.  hitl_log shows a session's history with its
-- invocations numbered in order.
CREATE FUNCTION hitl_mask(t text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT regexp_replace(regexp_replace(t, 'call_[A-Za-z0-9]{24}', 'call_<id>', 'g'),
                        'adk-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}', 'adk-<id>', 'g') $$;
CREATE FUNCTION hitl_log(s text)
RETURNS TABLE (seq bigint, inv bigint, author text, function_calls text, function_responses text,
               text text, long_running text)
LANGUAGE sql AS $$
  SELECT l.seq, dense_rank() OVER (ORDER BY i.first_seq), l.author, hitl_mask(l.function_calls),
         hitl_mask(l.function_responses), l.text, hitl_mask(nullif(l.long_running_tool_ids, '[]')::text)
    FROM adk.event_log l
    JOIN (SELECT e.invocation_id, min(e.seq) AS first_seq FROM adk.events e
           WHERE e.app_name = 'hitl_app' AND e.user_id = 'u' AND e.session_id = s
           GROUP BY e.invocation_id) i USING (invocation_id)
   WHERE l.app_name = 'hitl_app' AND l.user_id = 'u' AND l.session_id = s
   ORDER BY l.seq $$;
CREATE FUNCTION hitl_invocations(s text)
RETURNS TABLE (inv bigint, status text, resumed integer, model_calls integer)
LANGUAGE sql AS $$
  SELECT dense_rank() OVER (ORDER BY i.first_seq), v.status, v.resumed, v.model_calls
    FROM adk.invocations v
    JOIN (SELECT e.invocation_id, min(e.seq) AS first_seq FROM adk.events e
           WHERE e.app_name = 'hitl_app' AND e.user_id = 'u' AND e.session_id = s
           GROUP BY e.invocation_id) i USING (invocation_id)
   ORDER BY 1 $$;

-- 1. Pause.  The tool runs (one ticket), its call id is in the model
-- event's long_running_tool_ids, and after the function response the
-- flow stops: no model answer.  adk_run returns the two events.
SELECT seq, event_data ->> 'author' AS author,
       hitl_mask(event_data #>> '{content,parts}') AS parts,
       hitl_mask(event_data ->> 'long_running_tool_ids') AS long_running
  FROM adk_run('hitl_app', 'u', 'h1', 'call request_approval({"item": "laptop"})') ORDER BY seq;
SELECT count(*) AS tickets FROM hitl_tickets;
-- the invocation ends waiting; its RunState row waits on that call id
SELECT * FROM hitl_invocations('h1');
SELECT app_name, user_id, session_id, node_path, status, hitl_mask(interrupt_ids::text) AS interrupt_ids,
       answered_ids, agent,
       interrupt_ids = ARRAY[(SELECT event_data #>> '{long_running_tool_ids,0}' FROM adk.events
                               WHERE session_id = 'h1' AND seq = 2)] AS the_call,
       invocation_id = (SELECT invocation_id FROM adk.events WHERE session_id = 'h1' AND seq = 2) AS its_invocation,
       updated_at = (SELECT "timestamp" FROM adk.events WHERE session_id = 'h1' AND seq = 3) AS updated_at_last_event
  FROM adk.run_states WHERE session_id = 'h1';
-- what a session waits on, for an approval UI
SELECT app_name, user_id, session_id, hitl_mask(call_id) AS call_id, tool, args, agent,
       since = (SELECT "timestamp" FROM adk.events WHERE session_id = 'h1' AND seq = 2) AS since_the_call,
       invocation_id = (SELECT invocation_id FROM adk.events WHERE session_id = 'h1' AND seq = 2) AS its_invocation
  FROM adk.pending_interrupts WHERE session_id = 'h1';

-- 2. Resume.  The answer reuses the invocation id, the flow of the agent
-- that made the call runs again, and the model sees its call and the
-- answer (moved up next to the call) and answers.  The tool does not run
-- again.
CREATE TEMP TABLE h1_call AS SELECT call_id FROM adk.pending_interrupts WHERE session_id = 'h1';
SELECT seq, event_data ->> 'author' AS author, hitl_mask(event_data #>> '{content,parts}') AS parts
  FROM adk_run('hitl_app', 'u', 'h1',
               adk_function_response((SELECT call_id FROM h1_call), 'request_approval', '{"approved": true}'),
               NULL, '{"yield_user_message": true}') ORDER BY seq;
SELECT * FROM hitl_log('h1');
SELECT count(DISTINCT invocation_id) AS invocations FROM adk.events WHERE session_id = 'h1';
SELECT * FROM hitl_invocations('h1');
SELECT count(*) AS tickets FROM hitl_tickets;
SELECT node_path, status, interrupt_ids, answered_ids = ARRAY[(SELECT call_id FROM h1_call)] AS answered,
       updated_at = (SELECT max("timestamp") FROM adk.events WHERE session_id = 'h1') AS updated_at_last_event
  FROM adk.run_states WHERE session_id = 'h1';
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE session_id = 'h1';
-- the resumed request: the call, then only the person's answer (of two
-- responses to one call id the later replaces the tool's own, as in ADK)
SELECT m ->> 'role' AS role, hitl_mask(m ->> 'content') AS content,
       hitl_mask(m #>> '{tool_calls,0,id}') AS call_id, hitl_mask(m ->> 'tool_call_id') AS tool_call_id
  FROM adk.model_calls c, jsonb_array_elements(c.request -> 'messages') WITH ORDINALITY AS x(m, n)
 WHERE c.id = (SELECT max(id) FROM adk.model_calls
                WHERE invocation_id = (SELECT DISTINCT invocation_id FROM adk.events WHERE session_id = 'h1'))
 ORDER BY n;

-- 3. A response that matches no pending id is plain input: a new
-- invocation, and the waiting one goes on waiting.
SELECT count(*) FROM adk_run('hitl_app', 'u', 'h2', 'call request_approval({"item": "chair"})');
SELECT count(*) FROM adk_run('hitl_app', 'u', 'h2',
    adk_function_response('call-nope', 'request_approval', '{"approved": true}'));
SELECT seq, inv, author, function_responses, text FROM hitl_log('h2') WHERE seq > 3;
SELECT * FROM hitl_invocations('h2');
SELECT status, cardinality(interrupt_ids) AS pending FROM adk.run_states WHERE session_id = 'h2';
SELECT tool, args FROM adk.pending_interrupts WHERE session_id = 'h2';

-- 4. Two long-running calls in one response, answered in two turns.  The
-- first answer is stored and marked, and the invocation goes on waiting
-- without a model call; the second resumes the flow, and the model gets
-- both answers next to its calls in one request.
SELECT count(*) FROM adk_run('hitl_app', 'u', 'h3',
    'call request_approval({"item": "desk"}) call request_approval({"item": "lamp"})');
SELECT count(DISTINCT call_id) AS distinct_ids, string_agg(args ->> 'item', ', ' ORDER BY args ->> 'item') AS items
  FROM adk.pending_interrupts WHERE session_id = 'h3';
SELECT status, cardinality(interrupt_ids) AS pending, cardinality(answered_ids) AS answered
  FROM adk.run_states WHERE session_id = 'h3';
SELECT seq, event_data ->> 'author' AS author, hitl_mask(event_data #>> '{content,parts}') AS parts
  FROM adk_run('hitl_app', 'u', 'h3',
               adk_function_response((SELECT call_id FROM adk.pending_interrupts
                                       WHERE session_id = 'h3' AND args ->> 'item' = 'desk'),
                                     'request_approval', '{"approved": true}'),
               NULL, '{"yield_user_message": true}');
SELECT status, cardinality(interrupt_ids) AS pending, cardinality(answered_ids) AS answered
  FROM adk.run_states WHERE session_id = 'h3';
SELECT tool, args FROM adk.pending_interrupts WHERE session_id = 'h3';
SELECT * FROM hitl_invocations('h3');
SELECT count(*) FROM adk_run('hitl_app', 'u', 'h3',
    adk_function_response((SELECT call_id FROM adk.pending_interrupts WHERE session_id = 'h3'),
                          'request_approval', '{"approved": false, "reason": "no budget"}'));
SELECT seq, inv, author, function_calls, function_responses, text, long_running FROM hitl_log('h3');
SELECT * FROM hitl_invocations('h3');
SELECT status, cardinality(interrupt_ids) AS pending, cardinality(answered_ids) AS answered
  FROM adk.run_states WHERE session_id = 'h3';
SELECT count(*) AS tickets FROM hitl_tickets;

-- 5. Confirmation, yes.  The tool does not run; it answers with ADK's
-- placeholder, the response event carries requested_tool_confirmations,
-- and the agent asks with ADK's adk_request_confirmation call, which has
-- an id of its own and is the long-running one.
SELECT seq, event_data ->> 'author' AS author, event_data #>> '{content,role}' AS role,
       event_data #>> '{content,parts,0,function_call,name}' AS calls,
       event_data #> '{content,parts,0,function_response,response}' AS response,
       hitl_mask(event_data ->> 'long_running_tool_ids') AS long_running
  FROM adk_run('hitl_app', 'u', 'c1', 'call send_payment({"amount": 100, "to_account": "ACME"})') ORDER BY seq;
SELECT count(*) AS payments FROM hitl_payments;
SELECT hitl_mask(event_data #>> '{actions,requested_tool_confirmations}') AS requested_tool_confirmations
  FROM adk.events WHERE session_id = 'c1' AND seq = 3;
SELECT hitl_mask(event_data #>> '{content,parts,0,function_call,args,originalFunctionCall}') AS original,
       event_data #> '{content,parts,0,function_call,args,toolConfirmation}' AS tool_confirmation
  FROM adk.events WHERE session_id = 'c1' AND seq = 4;
SELECT (SELECT event_data #>> '{content,parts,0,function_call,id}' FROM adk.events WHERE session_id = 'c1' AND seq = 2)
     = (SELECT event_data #>> '{content,parts,0,function_call,args,originalFunctionCall,id}'
          FROM adk.events WHERE session_id = 'c1' AND seq = 4) AS asks_about_the_call,
       (SELECT event_data #> '{long_running_tool_ids}'
          FROM adk.events WHERE session_id = 'c1' AND seq = 4)
     = (SELECT jsonb_build_array(event_data #> '{content,parts,0,function_call,id}')
          FROM adk.events WHERE session_id = 'c1' AND seq = 4) AS its_own_id_waits;
SELECT hitl_mask(call_id) AS call_id, tool, args #>> '{originalFunctionCall,name}' AS asks_about, agent
  FROM adk.pending_interrupts WHERE session_id = 'c1';
SELECT * FROM hitl_invocations('c1');
-- the answer runs the tool and gives its result, under the ORIGINAL call
-- id, to the model
SELECT seq, event_data ->> 'author' AS author, hitl_mask(event_data #>> '{content,parts}') AS parts
  FROM adk_run('hitl_app', 'u', 'c1',
               adk_function_response((SELECT call_id FROM adk.pending_interrupts WHERE session_id = 'c1'),
                                     'adk_request_confirmation', '{"confirmed": true}')) ORDER BY seq;
SELECT (SELECT event_data #>> '{content,parts,0,function_call,id}' FROM adk.events WHERE session_id = 'c1' AND seq = 2)
     = (SELECT event_data #>> '{content,parts,0,function_response,id}' FROM adk.events WHERE session_id = 'c1' AND seq = 6)
       AS original_id;
SELECT * FROM hitl_payments;
SELECT * FROM hitl_invocations('c1');
SELECT status, cardinality(interrupt_ids) AS pending, cardinality(answered_ids) AS answered
  FROM adk.run_states WHERE session_id = 'c1';
-- the confirmation request and its answer never reach the model
SELECT count(*) AS confirmation_in_request
  FROM adk.model_calls c
 WHERE c.invocation_id = (SELECT DISTINCT invocation_id FROM adk.events WHERE session_id = 'c1')
   AND c.request::text LIKE '%adk_request_confirmation%';

-- 6. Confirmation, no: the model hears ADK's rejection; nothing is paid.
SELECT count(*) FROM adk_run('hitl_app', 'u', 'c2', 'call send_payment({"amount": 5000, "to_account": "EVIL"})');
SELECT seq, event_data ->> 'author' AS author, hitl_mask(event_data #>> '{content,parts}') AS parts
  FROM adk_run('hitl_app', 'u', 'c2',
               adk_function_response((SELECT call_id FROM adk.pending_interrupts WHERE session_id = 'c2'),
                                     'adk_request_confirmation', '{"confirmed": false}')) ORDER BY seq;
SELECT count(*) AS payments FROM hitl_payments;
SELECT * FROM hitl_invocations('c2');
-- ADK clients wrap the ToolConfirmation as JSON text under "response";
-- a payload that is not a ToolConfirmation is a no
SELECT count(*) FROM adk_run('hitl_app', 'u', 'c3', 'call send_payment({"amount": 7, "to_account": "BOB"})');
SELECT count(*) FROM adk_run('hitl_app', 'u', 'c3',
    adk_function_response((SELECT call_id FROM adk.pending_interrupts WHERE session_id = 'c3'),
                          'adk_request_confirmation', jsonb_build_object('response', '{"confirmed": true}')));
SELECT count(*) FROM adk_run('hitl_app', 'u', 'c4', 'call send_payment({"amount": 8, "to_account": "EVE"})');
SELECT count(*) FROM adk_run('hitl_app', 'u', 'c4',
    adk_function_response((SELECT call_id FROM adk.pending_interrupts WHERE session_id = 'c4'),
                          'adk_request_confirmation', '"yes"'));
SELECT session_id, function_responses FROM adk.event_log
 WHERE app_name = 'hitl_app' AND session_id IN ('c3', 'c4') AND seq = 6 ORDER BY 1;
SELECT * FROM hitl_payments ORDER BY amount;

-- A resumed continuation that fails: the answer is kept (the run returns
-- normally), the invocation and its RunState end failed.
SELECT adk_define_model('hitl_broken', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'fault-500', api_key_secret => 'hitl-key', options => '{"retries": 0}');
SELECT count(*) FROM adk_run('hitl_app', 'u', 'f1', 'call request_approval({"item": "car"})');
SELECT adk_define_agent('hitl_agent', model => 'hitl_broken', instruction => 'You file requests and send payments.',
                        tools => ARRAY['request_approval', 'send_payment']);
SELECT event_data ->> 'author' AS author, event_data ->> 'error_code' AS error_code
  FROM adk_run('hitl_app', 'u', 'f1',
               adk_function_response((SELECT call_id FROM adk.pending_interrupts WHERE session_id = 'f1'),
                                     'request_approval', '{"approved": true}'));
SELECT adk_define_agent('hitl_agent', model => 'hitl_model', instruction => 'You file requests and send payments.',
                        tools => ARRAY['request_approval', 'send_payment']);
SELECT * FROM hitl_invocations('f1');
SELECT status, cardinality(interrupt_ids) AS pending, cardinality(answered_ids) AS answered
  FROM adk.run_states WHERE app_name = 'hitl_app' AND session_id = 'f1';

-- 7. adk.run_states is derived from the events: delete it, rebuild it,
-- and it is the same, row for row.  (Earlier files' events that other
-- writers appended and that neither paused, answered nor finished a node
-- get their rows from a rebuild alone, docs/runs.md: a first rebuild
-- writes them.)
SELECT adk_rebuild_run_states() > 0 AS rebuilt;
SELECT count(*) AS rows, count(*) FILTER (WHERE status = 'waiting') AS waiting
  FROM adk.run_states WHERE app_name = 'hitl_app';
CREATE TEMP TABLE rs_before AS SELECT * FROM adk.run_states;
DELETE FROM adk.run_states;
SELECT adk_rebuild_run_states() = (SELECT count(*) FROM rs_before) AS same_count;
SELECT (SELECT count(*) FROM (SELECT * FROM rs_before EXCEPT SELECT * FROM adk.run_states) x) AS missing,
       (SELECT count(*) FROM (SELECT * FROM adk.run_states EXCEPT SELECT * FROM rs_before) x) AS extra;
-- one session
DELETE FROM adk.run_states WHERE session_id = 'h3';
SELECT adk_rebuild_run_states('hitl_app', 'u', 'h3');
SELECT (SELECT count(*) FROM (SELECT * FROM rs_before EXCEPT SELECT * FROM adk.run_states) x) AS missing,
       (SELECT count(*) FROM (SELECT * FROM adk.run_states EXCEPT SELECT * FROM rs_before) x) AS extra;
-- a row that does not derive from the events goes; a damaged one is repaired
INSERT INTO adk.run_states (app_name, user_id, session_id, invocation_id, node_path, status, agent)
VALUES ('hitl_app', 'u', 'h1', 'e-bogus', 'hitl_app/hitl_agent', 'completed', 'hitl_agent');
UPDATE adk.run_states SET status = 'completed', interrupt_ids = '{}' WHERE session_id = 'h2';
SELECT adk_rebuild_run_states('hitl_app');
SELECT (SELECT count(*) FROM (SELECT * FROM rs_before EXCEPT SELECT * FROM adk.run_states) x) AS missing,
       (SELECT count(*) FROM (SELECT * FROM adk.run_states EXCEPT SELECT * FROM rs_before) x) AS extra;
SELECT expect_error($q$SELECT adk_rebuild_run_states(NULL, NULL, 'h1')$q$);
SELECT expect_error($q$SELECT adk_rebuild_run_states(NULL, 'u')$q$);

-- 8. A resume does not depend on the rows being there: with them gone, it
-- derives the invocation's interrupts from the events again and resumes.
SELECT count(*) FROM adk_run('hitl_app', 'u', 'h4', 'call request_approval({"item": "phone"})');
CREATE TEMP TABLE h4_call AS SELECT call_id FROM adk.pending_interrupts WHERE session_id = 'h4';
DELETE FROM adk.run_states WHERE session_id = 'h4';
SELECT count(*) FROM adk_run('hitl_app', 'u', 'h4',
    adk_function_response((SELECT call_id FROM h4_call), 'request_approval', '{"approved": true}'));
SELECT seq, inv, author, function_responses, text FROM hitl_log('h4') WHERE seq > 3;
SELECT * FROM hitl_invocations('h4');
SELECT status, cardinality(interrupt_ids) AS pending, cardinality(answered_ids) AS answered
  FROM adk.run_states WHERE session_id = 'h4';

-- 9. Deleting a session deletes its run states; adk_user reads them.
SELECT adk_delete_session('hitl_app', 'u', 'h2');
SELECT count(*) AS run_states FROM adk.run_states WHERE session_id = 'h2';
SELECT has_table_privilege('adk_user', 'adk.run_states', 'SELECT') AS read_states,
       has_table_privilege('adk_user', 'adk.pending_interrupts', 'SELECT') AS read_pending,
       has_table_privilege('adk_user', 'adk.run_states', 'UPDATE') AS write_states;
SELECT count(*) AS waiting_sessions FROM adk.pending_interrupts WHERE app_name = 'hitl_app';
