-- Prompt assembly shared with other ADK runtimes: compaction
-- events written by anyone (actions.compaction, planted here through
-- adk_append_event as ADK-JS / ADK Python write them), a foreign turn
-- half-written (a call whose response is not there yet), prompt parity
-- (identity line, long-running note, a missing {key}), and compaction
-- never covering a call that waits for confirmation.
SELECT adk_set_secret('p67-key', 'sk-p67', ARRAY['127.0.0.1']);
SELECT adk_define_model('p67_openai', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'p67-key');
SELECT adk_define_model('p67_gemini', 'gemini', current_setting('adk_test.model_url'), 'gemini-test',
                        api_key_secret => 'p67-key');
SELECT adk_define_model('p67_anthropic', 'anthropic', current_setting('adk_test.model_url'), 'claude-test',
                        api_key_secret => 'p67-key');
CREATE FUNCTION p67_lookup(q text) RETURNS jsonb LANGUAGE sql AS $$ SELECT jsonb_build_object('q', q) $$;
COMMENT ON FUNCTION p67_lookup(text) IS 'Look something up.';
CREATE FUNCTION p67_ticket(item text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('status', 'pending', 'item', item) $$;
COMMENT ON FUNCTION p67_ticket(text) IS 'File a ticket.';
CREATE FUNCTION p67_pay(amount integer) RETURNS jsonb LANGUAGE sql AS $$ SELECT jsonb_build_object('paid', amount) $$;
COMMENT ON FUNCTION p67_pay(integer) IS 'Pay.';
SELECT adk_define_tool('p67_lookup(text)'::regprocedure);
SELECT adk_define_tool('p67_ticket(text)'::regprocedure, long_running => true);
SELECT adk_define_tool('p67_pay(integer)'::regprocedure, require_confirmation => true);
SELECT adk_define_agent('p67_agent', model => 'p67_openai', instruction => 'Be brief.',
                        description => 'Answers questions.',
                        tools => ARRAY['p67_lookup', 'p67_ticket', 'p67_pay']);
SELECT adk_define_agent('p67_gem', model => 'p67_gemini', instruction => 'Be brief.',
                        tools => ARRAY['p67_lookup']);
SELECT adk_define_agent('p67_ant', model => 'p67_anthropic', instruction => 'Be brief.',
                        tools => ARRAY['p67_lookup']);
SELECT adk_define_app('p67_app', 'p67_agent');
SELECT adk_define_app('p67_gapp', 'p67_gem');
SELECT adk_define_app('p67_aapp', 'p67_ant');

-- plant(session, event): adk_append_event for p67_app; ts(session, seq):
-- an event's time as ADK writes it in a compaction record (epoch ms)
CREATE FUNCTION plant(app text, s text, ev jsonb) RETURNS bigint LANGUAGE sql AS $$
  SELECT (adk_append_event(app, 'u', s, ev) ->> 'timestamp')::bigint $$;
CREATE FUNCTION ts(app text, s text, n bigint) RETURNS bigint LANGUAGE sql AS $$
  SELECT (event_data ->> 'timestamp')::bigint FROM adk.events
   WHERE app_name = app AND user_id = 'u' AND session_id = s AND seq = n $$;
CREATE FUNCTION say(who text, t text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('author', who, 'content',
           jsonb_build_object('role', CASE WHEN who = 'user' THEN 'user' ELSE 'model' END,
                              'parts', jsonb_build_array(jsonb_build_object('text', t)))) $$;
CREATE FUNCTION compaction(f bigint, t bigint, summary text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('author', 'user', 'actions', jsonb_build_object('compaction',
           jsonb_build_object('start_timestamp', f, 'end_timestamp', t, 'compacted_content',
             CASE WHEN summary IS NULL THEN NULL
                  ELSE jsonb_build_object('role', 'model', 'parts', jsonb_build_array(jsonb_build_object('text', summary)))
             END)))
       - CASE WHEN summary IS NULL THEN 'x' ELSE 'y' END $$;
-- the texts the next OpenAI request sends, in order
CREATE FUNCTION texts(app text, s text) RETURNS TABLE (n bigint, role text, content text)
LANGUAGE sql AS $$
  SELECT m.n, m.msg ->> 'role',
         coalesce(m.msg ->> 'content', '') ||
         coalesce(' calls ' || (SELECT string_agg(c #>> '{function,name}', ',') FROM jsonb_array_elements(m.msg -> 'tool_calls') c), '') ||
         coalesce(' answers ' || (m.msg ->> 'tool_call_id'), '')
    FROM jsonb_array_elements(adk_prompt(app, 'u', s) -> 'messages') WITH ORDINALITY AS m(msg, n)
   WHERE m.msg ->> 'role' <> 'system' ORDER BY m.n $$;

-- 1. Compaction events another runtime wrote.  Six events e1..e6; a
-- summary of e2..e3 stands where its range starts, e1 and e4.. stay raw
-- and in place.
SELECT adk_create_session('p67_app', 'u', 'k1') IS NOT NULL AS created;
SELECT plant('p67_app', 'k1', say(CASE WHEN i % 2 = 1 THEN 'user' ELSE 'p67_agent' END, 'e' || i)) > 0 AS planted
  FROM generate_series(1, 6) i;
SELECT plant('p67_app', 'k1', compaction(ts('p67_app', 'k1', 2), ts('p67_app', 'k1', 3), 'S23')) > 0 AS planted;
SELECT * FROM texts('p67_app', 'k1');
-- a record inside a wider one is dropped with its summary, whichever came
-- first: S2..5 covers S23, then S4 (inside S2..5) is written later
SELECT plant('p67_app', 'k1', compaction(ts('p67_app', 'k1', 2), ts('p67_app', 'k1', 5), 'S2345')) > 0 AS planted;
SELECT plant('p67_app', 'k1', compaction(ts('p67_app', 'k1', 4), ts('p67_app', 'k1', 4), 'S4')) > 0 AS planted;
SELECT * FROM texts('p67_app', 'k1');
-- an inverted record, and one without compacted_content, hide nothing
SELECT adk_create_session('p67_app', 'u', 'k2') IS NOT NULL AS created;
SELECT plant('p67_app', 'k2', say(CASE WHEN i % 2 = 1 THEN 'user' ELSE 'p67_agent' END, 'e' || i)) > 0 AS planted
  FROM generate_series(1, 4) i;
SELECT plant('p67_app', 'k2', compaction(ts('p67_app', 'k2', 3), ts('p67_app', 'k2', 1), 'INVERTED')) > 0 AS planted;
SELECT plant('p67_app', 'k2', compaction(ts('p67_app', 'k2', 1), ts('p67_app', 'k2', 3), NULL)) > 0 AS planted;
SELECT * FROM texts('p67_app', 'k2');
-- ADK Python writes seconds (a float): the same record in its unit
SELECT plant('p67_app', 'k2', jsonb_set(compaction(0, 0, 'PY12'), '{actions,compaction}',
         jsonb_build_object('start_timestamp', ts('p67_app', 'k2', 1) / 1000.0,
                            'end_timestamp', ts('p67_app', 'k2', 2) / 1000.0,
                            'compacted_content', '{"role": "model", "parts": [{"text": "PY12"}]}'::jsonb))) > 0 AS planted;
SELECT * FROM texts('p67_app', 'k2');
-- ADK-JS 2.0 writes its own shape: is_compacted, start_time, end_time
-- (epoch ms), the summary as the event's content (author "system")
SELECT adk_create_session('p67_app', 'u', 'k3') IS NOT NULL AS created;
SELECT plant('p67_app', 'k3', say(CASE WHEN i % 2 = 1 THEN 'user' ELSE 'p67_agent' END, 'e' || i)) > 0 AS planted
  FROM generate_series(1, 4) i;
SELECT plant('p67_app', 'k3', jsonb_build_object('author', 'system', 'is_compacted', true,
         'start_time', ts('p67_app', 'k3', 1), 'end_time', ts('p67_app', 'k3', 3), 'compacted_content', 'JS123',
         'content', '{"role": "model", "parts": [{"text": "JS123"}]}'::jsonb)) > 0 AS planted;
SELECT * FROM texts('p67_app', 'k3');
-- every record is in adk.compactions, our compactor's and theirs alike
SELECT session_id, kind, from_seq, to_seq FROM adk.compactions
 WHERE app_name = 'p67_app' ORDER BY session_id, seq;

-- 2. Another runtime's turn half-written: its call is stored, its
-- response not yet.  The request leaves the open call out (and a
-- response whose call is not in the history), for every provider; a
-- pending long-running call stays, as ADK sends it.
SELECT adk_create_session(a, 'u', 'h1') IS NOT NULL AS created FROM unnest(ARRAY['p67_app', 'p67_gapp', 'p67_aapp']) a;
SELECT plant(a, 'h1', say('user', 'look up x')) > 0
   AND plant(a, 'h1', jsonb_build_object('author', ag, 'content', jsonb_build_object('role', 'model', 'parts',
         '[{"function_call": {"id": "js-call-1", "name": "p67_lookup", "args": {"q": "x"}}}]'::jsonb))) > 0
   AND plant(a, 'h1', jsonb_build_object('author', 'user', 'content', jsonb_build_object('role', 'user', 'parts',
         '[{"function_response": {"id": "nobody-called", "name": "p67_lookup", "response": {"q": "?"}}}]'::jsonb))) > 0
   AND plant(a, 'h1', say('user', 'and now?')) > 0 AS planted
  FROM (VALUES ('p67_app', 'p67_agent'), ('p67_gapp', 'p67_gem'), ('p67_aapp', 'p67_ant')) v(a, ag);
SELECT * FROM texts('p67_app', 'h1');
SELECT jsonb_path_query_array(adk_prompt('p67_gapp', 'u', 'h1') -> 'contents', '$[*].parts[*]') AS gemini_parts;
SELECT jsonb_path_query_array(adk_prompt('p67_aapp', 'u', 'h1') -> 'messages', '$[*].content') AS anthropic_content;
-- once the response arrives, call and response are both sent, together
SELECT plant(a, 'h1', jsonb_build_object('author', ag, 'content', jsonb_build_object('role', 'user', 'parts',
         '[{"function_response": {"id": "js-call-1", "name": "p67_lookup", "response": {"q": "x"}}}]'::jsonb))) > 0 AS planted
  FROM (VALUES ('p67_app', 'p67_agent'), ('p67_gapp', 'p67_gem'), ('p67_aapp', 'p67_ant')) v(a, ag);
SELECT * FROM texts('p67_app', 'h1');
SELECT jsonb_path_query_array(adk_prompt('p67_gapp', 'u', 'h1') -> 'contents', '$[*].parts[*]') AS gemini_parts;
SELECT jsonb_path_query_array(adk_prompt('p67_aapp', 'u', 'h1') -> 'messages', '$[*].content') AS anthropic_content;
-- a pending long-running call is sent as ADK sends it
SELECT adk_create_session('p67_app', 'u', 'h2') IS NOT NULL AS created;
SELECT plant('p67_app', 'h2', say('user', 'file it')) > 0
   AND plant('p67_app', 'h2', '{"author": "p67_agent", "long_running_tool_ids": ["js-lr-1"], "content": {"role": "model", "parts": [{"function_call": {"id": "js-lr-1", "name": "p67_ticket", "args": {"item": "x"}}}]}}') > 0
   AND plant('p67_app', 'h2', say('user', 'and now?')) > 0 AS planted;
SELECT * FROM texts('p67_app', 'h2');

-- another agent's call reaches this agent as text: a user's response to
-- it is not sent as a function response without its call
SELECT adk_create_session('p67_app', 'u', 'h3') IS NOT NULL AS created;
SELECT plant('p67_app', 'h3', say('user', 'ask the other one')) > 0
   AND plant('p67_app', 'h3', '{"author": "someone_else", "long_running_tool_ids": ["o-1"], "content": {"role": "model", "parts": [{"function_call": {"id": "o-1", "name": "approve", "args": {}}}]}}') > 0
   AND plant('p67_app', 'h3', '{"author": "user", "content": {"role": "user", "parts": [{"function_response": {"id": "o-1", "name": "approve", "response": {"ok": true}}}]}}') > 0
   AND plant('p67_app', 'h3', say('user', 'thanks')) > 0 AS planted;
SELECT * FROM texts('p67_app', 'h3');

-- 3. Prompt parity with ADK: the identity line always (not only when the
-- agent can transfer), the long-running note on a long-running tool's
-- description.
SELECT adk_prompt('p67_app', 'u', 'k1') #>> '{messages,0,content}' AS system;
SELECT t #>> '{function,name}' AS tool, t #>> '{function,description}' AS description
  FROM jsonb_array_elements(adk_prompt('p67_app', 'u', 'k1') -> 'tools') t;
SELECT adk_prompt('p67_gapp', 'u', 'h1') #>> '{systemInstruction,parts,0,text}' AS gemini_system;
-- a {key} with no value in the state: ADK's error, as an error event;
-- {key?} is optional, and what is not a state name stays as written
SELECT adk_define_agent('p67_keys', model => 'p67_openai',
                        instruction => 'Hello {name}. {nick?}Format: {"a": 1} and {not a key}.');
SELECT adk_define_app('p67_kapp', 'p67_keys', auto_create_session => true);
SELECT event_data ->> 'author' AS author, event_data ->> 'error_code' AS error_code,
       event_data ->> 'error_message' AS error_message
  FROM adk_run('p67_kapp', 'u', 's1', 'hi');
SELECT status, error_code FROM adk.invocations WHERE session_id = 's1' AND app_name = 'p67_kapp';
SELECT count(*) AS model_calls FROM adk.model_calls c JOIN adk.invocations i USING (invocation_id)
 WHERE i.app_name = 'p67_kapp';
SELECT adk_create_session('p67_kapp', 'u', 's2', '{"name": "Ann"}') IS NOT NULL AS created;
SELECT adk_prompt('p67_kapp', 'u', 's2') #>> '{messages,0,content}' AS system;

-- 4. Compaction never covers a call that waits for confirmation: neither
-- the call, its placeholder response nor the adk_request_confirmation
-- call, until the answer comes.
SELECT count(*) FROM adk_run('p67_app', 'u', 'c1', 'hello');
SELECT count(*) FROM adk_run('p67_app', 'u', 'c1', 'call p67_pay({"amount": 5})');
SELECT seq, event_data ->> 'author' AS author,
       coalesce(event_data #>> '{content,parts,0,function_call,name}',
                event_data #>> '{content,parts,0,function_response,name}',
                event_data #>> '{content,parts,0,text}') AS what
  FROM adk.events WHERE app_name = 'p67_app' AND session_id = 'c1' ORDER BY seq;
SELECT adk_compaction_read('p67_app', 'u', 'c1') ->> 'from_seq' AS from_seq,
       adk_compaction_read('p67_app', 'u', 'c1') ->> 'to_seq' AS to_seq;
SELECT count(*) FROM adk_run('p67_app', 'u', 'c1',
    adk_function_response((SELECT call_id FROM adk.pending_interrupts WHERE app_name = 'p67_app' AND session_id = 'c1'),
                          'adk_request_confirmation', '{"confirmed": true}'));
SELECT adk_compaction_read('p67_app', 'u', 'c1') ->> 'from_seq' AS from_seq,
       adk_compaction_read('p67_app', 'u', 'c1') ->> 'to_seq' AS to_seq;

-- clean up what later files might count
SELECT count(*) FROM (SELECT adk_delete_session(app_name, user_id, id) FROM adk.sessions
                       WHERE app_name LIKE 'p67%') d;
DELETE FROM adk.apps WHERE name LIKE 'p67%';
DELETE FROM adk.agents WHERE name LIKE 'p67%';
DELETE FROM adk.tools WHERE name LIKE 'p67%';
DELETE FROM adk.models WHERE name LIKE 'p67%';
DELETE FROM adk.secrets WHERE name = 'p67-key';
DROP FUNCTION plant(text, text, jsonb), ts(text, text, bigint), say(text, text), compaction(bigint, bigint, text),
              texts(text, text), p67_lookup(text), p67_ticket(text), p67_pay(integer);
