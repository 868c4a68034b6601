-- ADK-Go's delegation cases (agent/llmagent/llmagent_delegation_test.go)
-- replayed through the local model server, and the events we store
-- compared with ADK-Go's golden event streams
-- (testdata/TestDelegation_NN_*.events.yaml), field by field: author,
-- role, branch, isolation_scope, parts (texts; calls' names, ids and
-- args; responses' names, ids and bodies), output, node_info (path,
-- output_for, message_as_output) and actions.transfer_to_agent.  The
-- golden streams below are written from reading those files, with call
-- ids numbered in order of appearance (#1, #2, ...) as ours are; each
-- agent's model turns are the golden ones, scripted with the server's
-- [[replay:...]] instruction (test/model_server/README.md).  A query
-- lists every field where we differ: none, where ADK runtimes differ
-- adk_runner writes what ADK-Go writes (docs/agent-modes.md "Where we
-- differ from ADK-Go").  Case 04 has no golden stream.

CREATE TABLE gd_golden (case_name text, n int, ev jsonb, PRIMARY KEY (case_name, n));

-- our stored events in the golden form: ids numbered, empty args dropped
CREATE FUNCTION gd_ids(p_app text, p_session text) RETURNS jsonb
LANGUAGE sql AS $$
    SELECT coalesce(jsonb_object_agg(id, '#' || k), '{}')
      FROM (SELECT id, row_number() OVER (ORDER BY first) AS k
              FROM (SELECT p -> 'function_call' ->> 'id' AS id, min(e.seq * 1000 + o) AS first
                      FROM adk.events e,
                           jsonb_array_elements(e.event_data -> 'content' -> 'parts') WITH ORDINALITY AS x(p, o)
                     WHERE e.app_name = p_app AND e.session_id = p_session AND p ? 'function_call'
                     GROUP BY 1) f) m
$$;
CREATE FUNCTION gd_map(t text, ids jsonb) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    k text;
BEGIN
    IF t IS NULL THEN
        RETURN NULL;
    END IF;
    FOR k IN SELECT jsonb_object_keys(ids) LOOP
        t := replace(t, k, ids ->> k);
    END LOOP;
    RETURN t;
END
$$;
-- (names: our agents' names that other tests' agents hold, mapped to
-- ADK-Go's, e.g. {"gd_writer": "writer"})
CREATE FUNCTION gd_stream(p_app text, p_session text, names jsonb) RETURNS TABLE (n bigint, ev jsonb)
LANGUAGE sql AS $$
    WITH ids AS (SELECT gd_ids(p_app, p_session) AS m)
    SELECT row_number() OVER (ORDER BY e.seq),
           gd_map(jsonb_strip_nulls(jsonb_build_object(
               'author', e.event_data ->> 'author',
               'role', e.event_data -> 'content' ->> 'role',
               'branch', e.event_data ->> 'branch',
               'isolation_scope', gd_map(e.event_data ->> 'isolation_scope', ids.m),
               'parts', (SELECT jsonb_agg(CASE
                          WHEN p ? 'function_call' THEN jsonb_build_object('function_call',
                              jsonb_strip_nulls(jsonb_build_object(
                                  'name', p -> 'function_call' ->> 'name',
                                  'id', gd_map(p -> 'function_call' ->> 'id', ids.m),
                                  'args', nullif(gd_map(p -> 'function_call' ->> 'args', ids.m)::jsonb, '{}'))))
                          WHEN p ? 'function_response' THEN jsonb_build_object('function_response',
                              jsonb_strip_nulls(jsonb_build_object(
                                  'name', p -> 'function_response' ->> 'name',
                                  'id', gd_map(p -> 'function_response' ->> 'id', ids.m),
                                  'response', p -> 'function_response' -> 'response')))
                          ELSE p END ORDER BY o)
                          FROM jsonb_array_elements(e.event_data -> 'content' -> 'parts') WITH ORDINALITY AS x(p, o)),
               'output', e.event_data -> 'output',
               'node_info', gd_map(e.event_data ->> 'node_info', ids.m)::jsonb,
               'transfer_to_agent', e.event_data -> 'actions' -> 'transfer_to_agent'))::text, names)::jsonb
      FROM adk.events e, ids
     WHERE e.app_name = p_app AND e.session_id = p_session
     ORDER BY e.seq
$$;
-- every field where our stream differs from the golden one (a null is
-- an absent field on both sides)
CREATE FUNCTION gd_diff(p_case text, p_app text, p_session text, names jsonb DEFAULT '{}')
RETURNS TABLE (n bigint, field text, golden jsonb, ours jsonb)
LANGUAGE sql AS $$
    SELECT coalesce(g.n, o.n), k, g.ev -> k, o.ev -> k
      FROM (SELECT n, jsonb_strip_nulls(ev) AS ev FROM gd_golden WHERE case_name = p_case) g
      FULL JOIN gd_stream(p_app, p_session, names) o ON o.n = g.n,
           LATERAL (SELECT jsonb_object_keys(coalesce(g.ev, '{}') || coalesce(o.ev, '{}'))) ks(k)
     WHERE (g.ev -> k) IS DISTINCT FROM (o.ev -> k)
     ORDER BY 1, 2
$$;

-- the agents' turns: [[replay:...]] answers an agent's k-th model turn
-- after the last user text, from the first entry whose "when" is in it
CREATE FUNCTION gd_replay(entries jsonb) RETURNS text
LANGUAGE sql AS $$ SELECT '[[replay:' || entries::text || ']]' $$;

CREATE FUNCTION store_report(items text[]) RETURNS jsonb LANGUAGE sql
    AS $$ SELECT jsonb_build_object('stored', cardinality(items)) $$;
CREATE FUNCTION summarize(items text[]) RETURNS jsonb LANGUAGE sql
    AS $$ SELECT jsonb_build_object('summary', 'items: ' || array_to_string(items, ', ')) $$;
CREATE FUNCTION tool_one() RETURNS jsonb LANGUAGE sql AS $$ SELECT '{"token": "alpha-42"}'::jsonb $$;
CREATE FUNCTION tool_two(token text) RETURNS text LANGUAGE sql AS $$ SELECT 'got ' || token $$;
SELECT adk_define_tool('store_report(text[])'::regprocedure);
SELECT adk_define_tool('summarize(text[])'::regprocedure);
SELECT adk_define_tool('tool_one()'::regprocedure);
SELECT adk_define_tool('tool_two(text)'::regprocedure);

-- TestDelegation_01_ChatToTaskToTool: chat -> task -> the coordinator's tool
SELECT adk_define_agent('data_fetcher', model => 'local', mode => 'task',
                        description => 'Fetches items.',
                        output_schema => '{"type": "object", "properties": {"items": {"type": "array", "items": {"type": "string"}}}, "required": ["items"]}',
                        instruction => gd_replay('[{"answers": [{"calls": [{"name": "finish_task", "args": {"items": ["apple", "banana", "cherry"]}}]}]}]'));
SELECT adk_define_agent('coordinator', model => 'local', tools => ARRAY['store_report'],
                        sub_agents => ARRAY['data_fetcher'],
                        instruction => gd_replay('[{"when": "What items", "answers": ["You asked me to store apple, banana, and cherry."]},
                                                   {"answers": [{"calls": [{"name": "data_fetcher", "args": {"request": "Fetch the following items: apple, banana, cherry."}}]},
                                                                {"calls": [{"name": "store_report", "args": {"items": ["apple", "banana", "cherry"]}}]},
                                                                "I have successfully stored the 3 items."]}]'));
SELECT adk_define_app('gd_01', 'coordinator');
SELECT count(*) AS rows FROM adk_run('gd_01', 'u', 's', 'Fetch and store the following items: apple, banana, cherry.');
SELECT count(*) AS rows FROM adk_run('gd_01', 'u', 's', 'What items did I just ask you to store?');
INSERT INTO gd_golden VALUES
 ('01', 1, '{"author": "user", "role": "user", "parts": [{"text": "Fetch and store the following items: apple, banana, cherry."}]}'),
 ('01', 2, '{"author": "coordinator", "role": "model", "parts": [{"function_call": {"name": "data_fetcher", "id": "#1", "args": {"request": "Fetch the following items: apple, banana, cherry."}}}], "node_info": {"path": "coordinator"}}'),
 ('01', 3, '{"author": "data_fetcher", "isolation_scope": "#1", "role": "model", "parts": [{"function_call": {"name": "finish_task", "id": "#2", "args": {"items": ["apple", "banana", "cherry"]}}}], "node_info": {"path": "coordinator/data_fetcher@#1"}}'),
 ('01', 4, '{"author": "data_fetcher", "isolation_scope": "#1", "role": "user", "parts": [{"function_response": {"name": "finish_task", "id": "#2", "response": {"result": "Task completed."}}}], "output": {"items": ["apple", "banana", "cherry"]}, "node_info": {"path": "coordinator/data_fetcher@#1", "output_for": ["coordinator/data_fetcher@#1"]}}'),
 ('01', 5, '{"author": "user", "role": "user", "parts": [{"function_response": {"name": "data_fetcher", "id": "#1", "response": {"items": ["apple", "banana", "cherry"]}}}], "node_info": {"path": "coordinator"}}'),
 ('01', 6, '{"author": "coordinator", "role": "model", "parts": [{"function_call": {"name": "store_report", "id": "#3", "args": {"items": ["apple", "banana", "cherry"]}}}], "node_info": {"path": "coordinator"}}'),
 ('01', 7, '{"author": "coordinator", "role": "user", "parts": [{"function_response": {"name": "store_report", "id": "#3", "response": {"stored": 3}}}], "node_info": {"path": "coordinator"}}'),
 ('01', 8, '{"author": "coordinator", "role": "model", "parts": [{"text": "I have successfully stored the 3 items."}], "node_info": {"path": "coordinator"}}'),
 ('01', 9, '{"author": "user", "role": "user", "parts": [{"text": "What items did I just ask you to store?"}]}'),
 ('01', 10, '{"author": "coordinator", "role": "model", "parts": [{"text": "You asked me to store apple, banana, and cherry."}], "node_info": {"path": "coordinator"}}');
SELECT * FROM gd_diff('01', 'gd_01', 's');

-- TestDelegation_02_ChatToTwoTaskSequential: two tasks, one after the other
SELECT adk_define_agent('order_collector', model => 'local', mode => 'task',
                        description => 'Collects the order.',
                        output_schema => '{"type": "object", "properties": {"item": {"type": "string"}, "quantity": {"type": "integer"}}, "required": ["item", "quantity"]}',
                        instruction => gd_replay('[{"answers": [{"calls": [{"name": "finish_task", "args": {"item": "pizza", "quantity": 2}}]}]}]'));
SELECT adk_define_agent('payment_collector', model => 'local', mode => 'task',
                        description => 'Collects the payment details.',
                        output_schema => '{"type": "object", "properties": {"credit_card_number": {"type": "string"}, "cvv": {"type": "string"}}, "required": ["credit_card_number", "cvv"]}',
                        instruction => gd_replay('[{"answers": [{"calls": [{"name": "finish_task", "args": {"credit_card_number": "4111111111111111", "cvv": "123"}}]}]}]'));
SELECT adk_define_agent('coordinator', model => 'local', tools => NULL,
                        sub_agents => ARRAY['order_collector', 'payment_collector'],
                        instruction => gd_replay('[{"when": "What did I order", "answers": ["You ordered 2 pizzas, and you are paying with your credit card ending in 1111."]},
                                                   {"answers": [{"calls": [{"name": "order_collector", "args": {"request": "Collect the order for 2 pizzas."}}]},
                                                                {"calls": [{"name": "payment_collector", "args": {"request": "Collect payment details for card 4111111111111111 with CVV 123."}}]},
                                                                "Your order for 2 pizzas has been successfully processed using the credit card ending in 1111."]}]'));
SELECT adk_define_app('gd_02', 'coordinator');
SELECT count(*) AS rows FROM adk_run('gd_02', 'u', 's', 'Order 2 pizzas. Pay with card 4111111111111111, cvv 123.');
SELECT count(*) AS rows FROM adk_run('gd_02', 'u', 's', 'What did I order, and how am I paying?');
INSERT INTO gd_golden VALUES
 ('02', 1, '{"author": "user", "role": "user", "parts": [{"text": "Order 2 pizzas. Pay with card 4111111111111111, cvv 123."}]}'),
 ('02', 2, '{"author": "coordinator", "role": "model", "parts": [{"function_call": {"name": "order_collector", "id": "#1", "args": {"request": "Collect the order for 2 pizzas."}}}], "node_info": {"path": "coordinator"}}'),
 ('02', 3, '{"author": "order_collector", "isolation_scope": "#1", "role": "model", "parts": [{"function_call": {"name": "finish_task", "id": "#2", "args": {"item": "pizza", "quantity": 2}}}], "node_info": {"path": "coordinator/order_collector@#1"}}'),
 ('02', 4, '{"author": "order_collector", "isolation_scope": "#1", "role": "user", "parts": [{"function_response": {"name": "finish_task", "id": "#2", "response": {"result": "Task completed."}}}], "output": {"item": "pizza", "quantity": 2}, "node_info": {"path": "coordinator/order_collector@#1", "output_for": ["coordinator/order_collector@#1"]}}'),
 ('02', 5, '{"author": "user", "role": "user", "parts": [{"function_response": {"name": "order_collector", "id": "#1", "response": {"item": "pizza", "quantity": 2}}}], "node_info": {"path": "coordinator"}}'),
 ('02', 6, '{"author": "coordinator", "role": "model", "parts": [{"function_call": {"name": "payment_collector", "id": "#3", "args": {"request": "Collect payment details for card 4111111111111111 with CVV 123."}}}], "node_info": {"path": "coordinator"}}'),
 ('02', 7, '{"author": "payment_collector", "isolation_scope": "#3", "role": "model", "parts": [{"function_call": {"name": "finish_task", "id": "#4", "args": {"credit_card_number": "4111111111111111", "cvv": "123"}}}], "node_info": {"path": "coordinator/payment_collector@#3"}}'),
 ('02', 8, '{"author": "payment_collector", "isolation_scope": "#3", "role": "user", "parts": [{"function_response": {"name": "finish_task", "id": "#4", "response": {"result": "Task completed."}}}], "output": {"credit_card_number": "4111111111111111", "cvv": "123"}, "node_info": {"path": "coordinator/payment_collector@#3", "output_for": ["coordinator/payment_collector@#3"]}}'),
 ('02', 9, '{"author": "user", "role": "user", "parts": [{"function_response": {"name": "payment_collector", "id": "#3", "response": {"credit_card_number": "4111111111111111", "cvv": "123"}}}], "node_info": {"path": "coordinator"}}'),
 ('02', 10, '{"author": "coordinator", "role": "model", "parts": [{"text": "Your order for 2 pizzas has been successfully processed using the credit card ending in 1111."}], "node_info": {"path": "coordinator"}}'),
 ('02', 11, '{"author": "user", "role": "user", "parts": [{"text": "What did I order, and how am I paying?"}]}'),
 ('02', 12, '{"author": "coordinator", "role": "model", "parts": [{"text": "You ordered 2 pizzas, and you are paying with your credit card ending in 1111."}], "node_info": {"path": "coordinator"}}');
SELECT * FROM gd_diff('02', 'gd_02', 's');

-- TestDelegation_03_ChatToSingleTurn: a single_turn agent, twice; its
-- answer is its output (message_as_output), parsed by its output_schema
SELECT adk_define_agent('translator', model => 'local', mode => 'single_turn',
                        description => 'Translates a word.',
                        output_schema => '{"type": "object", "properties": {"translation": {"type": "string"}}}',
                        instruction => gd_replay('[{"when": "Spanish", "answers": ["{\n  \"translation\": \"hola\"\n}"]},
                                                   {"when": "French", "answers": ["{\n  \"translation\": \"bonjour\"\n} "]}]'));
SELECT adk_define_agent('coordinator', model => 'local', sub_agents => ARRAY['translator'],
                        instruction => gd_replay('[{"when": "Spanish", "answers": [{"calls": [{"name": "translator", "args": {"request": "Translate ''hello'' to Spanish"}}]},
                                                                                    "The translation of \"hello\" into Spanish is \"hola\"."]},
                                                   {"when": "French", "answers": [{"calls": [{"name": "translator", "args": {"request": "Translate ''hello'' to French"}}]},
                                                                                   "The translation of \"hello\" into French is \"bonjour\"."]}]'));
SELECT adk_define_app('gd_03', 'coordinator');
SELECT count(*) AS rows FROM adk_run('gd_03', 'u', 's', 'Translate ''hello'' to Spanish.');
SELECT count(*) AS rows FROM adk_run('gd_03', 'u', 's', 'Now translate the same word to French.');
INSERT INTO gd_golden VALUES
 ('03', 1, '{"author": "user", "role": "user", "parts": [{"text": "Translate ''hello'' to Spanish."}]}'),
 ('03', 2, '{"author": "coordinator", "role": "model", "parts": [{"function_call": {"name": "translator", "id": "#1", "args": {"request": "Translate ''hello'' to Spanish"}}}], "node_info": {"path": "coordinator"}}'),
 ('03', 3, '{"author": "translator", "branch": "translator@1", "role": "model", "parts": [{"text": "{\n  \"translation\": \"hola\"\n}"}], "node_info": {"path": "coordinator/translator@1", "message_as_output": true, "output_for": ["coordinator/translator@1"]}}'),
 ('03', 4, '{"author": "coordinator", "role": "user", "parts": [{"function_response": {"name": "translator", "id": "#1", "response": {"result": {"translation": "hola"}}}}], "node_info": {"path": "coordinator"}}'),
 ('03', 5, '{"author": "coordinator", "role": "model", "parts": [{"text": "The translation of \"hello\" into Spanish is \"hola\"."}], "node_info": {"path": "coordinator"}}'),
 ('03', 6, '{"author": "user", "role": "user", "parts": [{"text": "Now translate the same word to French."}]}'),
 ('03', 7, '{"author": "coordinator", "role": "model", "parts": [{"function_call": {"name": "translator", "id": "#2", "args": {"request": "Translate ''hello'' to French"}}}], "node_info": {"path": "coordinator"}}'),
 ('03', 8, '{"author": "translator", "branch": "translator@1", "role": "model", "parts": [{"text": "{\n  \"translation\": \"bonjour\"\n} "}], "node_info": {"path": "coordinator/translator@1", "message_as_output": true, "output_for": ["coordinator/translator@1"]}}'),
 ('03', 9, '{"author": "coordinator", "role": "user", "parts": [{"function_response": {"name": "translator", "id": "#2", "response": {"result": {"translation": "bonjour"}}}}], "node_info": {"path": "coordinator"}}'),
 ('03', 10, '{"author": "coordinator", "role": "model", "parts": [{"text": "The translation of \"hello\" into French is \"bonjour\"."}], "node_info": {"path": "coordinator"}}');
SELECT * FROM gd_diff('03', 'gd_03', 's');

-- (writer is another test's agent: ours is gd_writer, named writer in the
-- comparison)
-- TestDelegation_05_ChatChainedThroughChatToTask: the root transfers to a
-- chat sub-agent, which delegates to its task agent; the invocation's node
-- is the root's ("root"), whichever agent of it speaks; the next
-- invocation starts at the agent transferred to ("writer")
SELECT adk_define_agent('editor', model => 'local', mode => 'task', description => 'Edits a draft.',
                        output_schema => '{"type": "object", "properties": {"edited": {"type": "string"}}, "required": ["edited"]}',
                        instruction => gd_replay('[{"when": "yesterdy", "answers": [{"calls": [{"name": "finish_task", "args": {"edited": "He and I went to the store yesterday."}}]}]},
                                                   {"when": "they was", "answers": [{"calls": [{"name": "finish_task", "args": {"edited": "They were eating lunch quickly."}}]}]}]'));
SELECT adk_define_agent('gd_writer', model => 'local', description => 'Writes and edits texts.',
                        sub_agents => ARRAY['editor'],
                        instruction => gd_replay('[{"when": "they was", "answers": [{"calls": [{"name": "editor", "args": {"request": "Please edit this draft for clarity and grammatical correctness: \"they was eatin lunch quick\""}}]},
                                                                                     "Here is the polished version of your draft: \"They were eating lunch quickly.\""]},
                                                   {"answers": [{"calls": [{"name": "editor", "args": {"request": "Please edit this draft for clarity and grammatical correctness: \"me and him goes to the store yesterdy\""}}]},
                                                                "Here is the edited text: \"He and I went to the store yesterday.\""]}]'));
SELECT adk_define_agent('root', model => 'local', sub_agents => ARRAY['gd_writer'],
                        instruction => gd_replay('[{"answers": [{"calls": [{"name": "transfer_to_agent", "args": {"agent_name": "gd_writer"}}]}]}]'));
SELECT adk_define_app('gd_05', 'root');
SELECT count(*) AS rows FROM adk_run('gd_05', 'u', 's', 'Please edit this draft: ''me and him goes to the store yesterdy''.');
SELECT count(*) AS rows FROM adk_run('gd_05', 'u', 's', 'Now polish this draft: ''they was eatin lunch quick''.');
INSERT INTO gd_golden VALUES
 ('05', 1, '{"author": "user", "role": "user", "parts": [{"text": "Please edit this draft: ''me and him goes to the store yesterdy''."}]}'),
 ('05', 2, '{"author": "root", "role": "model", "parts": [{"function_call": {"name": "transfer_to_agent", "id": "#1", "args": {"agent_name": "writer"}}}], "node_info": {"path": "root"}}'),
 ('05', 3, '{"author": "root", "role": "user", "parts": [{"function_response": {"name": "transfer_to_agent", "id": "#1"}}], "node_info": {"path": "root"}, "transfer_to_agent": "writer"}'),
 ('05', 4, '{"author": "writer", "role": "model", "parts": [{"function_call": {"name": "editor", "id": "#2", "args": {"request": "Please edit this draft for clarity and grammatical correctness: \"me and him goes to the store yesterdy\""}}}], "node_info": {"path": "root"}}'),
 ('05', 5, '{"author": "editor", "isolation_scope": "#2", "role": "model", "parts": [{"function_call": {"name": "finish_task", "id": "#3", "args": {"edited": "He and I went to the store yesterday."}}}], "node_info": {"path": "root/editor@#2"}}'),
 ('05', 6, '{"author": "editor", "isolation_scope": "#2", "role": "user", "parts": [{"function_response": {"name": "finish_task", "id": "#3", "response": {"result": "Task completed."}}}], "output": {"edited": "He and I went to the store yesterday."}, "node_info": {"path": "root/editor@#2", "output_for": ["root/editor@#2"]}}'),
 ('05', 7, '{"author": "user", "role": "user", "parts": [{"function_response": {"name": "editor", "id": "#2", "response": {"edited": "He and I went to the store yesterday."}}}], "node_info": {"path": "root"}}'),
 ('05', 8, '{"author": "writer", "role": "model", "parts": [{"text": "Here is the edited text: \"He and I went to the store yesterday.\""}], "node_info": {"path": "root"}}'),
 ('05', 9, '{"author": "user", "role": "user", "parts": [{"text": "Now polish this draft: ''they was eatin lunch quick''."}]}'),
 ('05', 10, '{"author": "writer", "role": "model", "parts": [{"function_call": {"name": "editor", "id": "#4", "args": {"request": "Please edit this draft for clarity and grammatical correctness: \"they was eatin lunch quick\""}}}], "node_info": {"path": "writer"}}'),
 ('05', 11, '{"author": "editor", "isolation_scope": "#4", "role": "model", "parts": [{"function_call": {"name": "finish_task", "id": "#5", "args": {"edited": "They were eating lunch quickly."}}}], "node_info": {"path": "writer/editor@#4"}}'),
 ('05', 12, '{"author": "editor", "isolation_scope": "#4", "role": "user", "parts": [{"function_response": {"name": "finish_task", "id": "#5", "response": {"result": "Task completed."}}}], "output": {"edited": "They were eating lunch quickly."}, "node_info": {"path": "writer/editor@#4", "output_for": ["writer/editor@#4"]}}'),
 ('05', 13, '{"author": "user", "role": "user", "parts": [{"function_response": {"name": "editor", "id": "#4", "response": {"edited": "They were eating lunch quickly."}}}], "node_info": {"path": "writer"}}'),
 ('05', 14, '{"author": "writer", "role": "model", "parts": [{"text": "Here is the polished version of your draft: \"They were eating lunch quickly.\""}], "node_info": {"path": "writer"}}');
-- transfer_to_agent's empty response is left out, as ADK-Go writes it
SELECT * FROM gd_diff('05', 'gd_05', 's', '{"gd_writer": "writer"}');

-- TestDelegation_06_ChatToTaskHITLResume: the task agent's tool asks for
-- confirmation; the invocation pauses inside the task; the user's answer
-- (in the task's scope) resumes the task in the original invocation, the
-- tool runs, the task finishes, and the coordinator gets its output once
-- and goes on in that same invocation
CREATE FUNCTION confirm() RETURNS jsonb LANGUAGE sql AS $$ SELECT '{"result": "Approved. Proceeding."}'::jsonb $$;
SELECT adk_define_tool('confirm()'::regprocedure, require_confirmation => true);
SELECT adk_define_agent('executor', model => 'local', mode => 'task', description => 'Performs actions.',
                        tools => ARRAY['confirm'],
                        output_schema => '{"type": "object", "properties": {"done": {"type": "boolean"}}, "required": ["done"]}',
                        instruction => gd_replay('[{"answers": [{"calls": [{"name": "confirm", "args": {}}]},
                                                                {"calls": [{"name": "finish_task", "args": {"done": true}}]}]}]'));
SELECT adk_define_agent('coordinator', model => 'local', tools => NULL, sub_agents => ARRAY['executor'],
                        instruction => gd_replay('[{"when": "Did the action", "answers": ["Yes, the action completed successfully."]},
                                                   {"answers": [{"calls": [{"name": "executor", "args": {"request": "Perform the irreversible action as requested by the user."}}]},
                                                                "I have successfully completed the requested irreversible action."]}]'));
SELECT adk_define_app('gd_06', 'coordinator');
SELECT count(*) AS rows FROM adk_run('gd_06', 'u', 's', 'Please perform the irreversible action.');
SELECT status, agent, cardinality(interrupt_ids) AS pending FROM adk.run_states WHERE app_name = 'gd_06' ORDER BY node_path;
SELECT count(*) AS rows
  FROM adk_run('gd_06', 'u', 's',
               adk_function_response((SELECT event_data #>> '{content,parts,0,function_call,id}' FROM adk.events
                                       WHERE app_name = 'gd_06' AND session_id = 's'
                                         AND event_data #>> '{content,parts,0,function_call,name}' = 'adk_request_confirmation'),
                                     'adk_request_confirmation', '{"confirmed": true}'));
-- resumed in the invocation that paused
SELECT count(DISTINCT invocation_id) AS invocations FROM adk.events WHERE app_name = 'gd_06' AND session_id = 's';
SELECT count(*) AS rows FROM adk_run('gd_06', 'u', 's', 'Did the action complete successfully?');
INSERT INTO gd_golden VALUES
 ('06', 1, '{"author": "user", "role": "user", "parts": [{"text": "Please perform the irreversible action."}]}'),
 ('06', 2, '{"author": "coordinator", "role": "model", "parts": [{"function_call": {"name": "executor", "id": "#1", "args": {"request": "Perform the irreversible action as requested by the user."}}}], "node_info": {"path": "coordinator"}}'),
 ('06', 3, '{"author": "executor", "isolation_scope": "#1", "role": "model", "parts": [{"function_call": {"name": "confirm", "id": "#2"}}], "node_info": {"path": "coordinator/executor@#1"}}'),
 ('06', 4, '{"author": "executor", "isolation_scope": "#1", "role": "user", "parts": [{"function_response": {"name": "confirm", "id": "#2", "response": {"error": "error tool \"confirm\" requires confirmation, please approve or reject"}}}], "node_info": {"path": "coordinator/executor@#1"}}'),
 ('06', 5, '{"author": "executor", "isolation_scope": "#1", "role": "model", "parts": [{"function_call": {"name": "adk_request_confirmation", "id": "#3", "args": {"originalFunctionCall": {"id": "#2", "args": {}, "name": "confirm"}, "toolConfirmation": {"hint": "Please approve or reject the tool call confirm() by responding with a FunctionResponse with an expected ToolConfirmation payload.", "confirmed": false, "payload": null}}}}], "node_info": {"path": "coordinator/executor@#1"}}'),
 ('06', 6, '{"author": "user", "isolation_scope": "#1", "role": "user", "parts": [{"function_response": {"name": "adk_request_confirmation", "id": "#3", "response": {"confirmed": true}}}]}'),
 ('06', 7, '{"author": "executor", "isolation_scope": "#1", "role": "user", "parts": [{"function_response": {"name": "confirm", "id": "#2", "response": {"result": "Approved. Proceeding."}}}], "node_info": {"path": "coordinator/executor@#1"}}'),
 ('06', 8, '{"author": "executor", "isolation_scope": "#1", "role": "model", "parts": [{"function_call": {"name": "finish_task", "id": "#4", "args": {"done": true}}}], "node_info": {"path": "coordinator/executor@#1"}}'),
 ('06', 9, '{"author": "executor", "isolation_scope": "#1", "role": "user", "parts": [{"function_response": {"name": "finish_task", "id": "#4", "response": {"result": "Task completed."}}}], "output": {"done": true}, "node_info": {"path": "coordinator/executor@#1", "output_for": ["coordinator/executor@#1"]}}'),
 ('06', 10, '{"author": "user", "role": "user", "parts": [{"function_response": {"name": "executor", "id": "#1", "response": {"done": true}}}], "node_info": {"path": "coordinator"}}'),
 ('06', 11, '{"author": "coordinator", "role": "model", "parts": [{"text": "I have successfully completed the requested irreversible action."}], "node_info": {"path": "coordinator"}}'),
 ('06', 12, '{"author": "user", "role": "user", "parts": [{"text": "Did the action complete successfully?"}]}'),
 ('06', 13, '{"author": "coordinator", "role": "model", "parts": [{"text": "Yes, the action completed successfully."}], "node_info": {"path": "coordinator"}}');
-- the placeholder response of a call that waits for its confirmation is
-- ADK-Go's; the golden originalFunctionCall above leaves out what
-- ADK-Go's stream also shows, its Go struct's empty "partialargs": [] and
-- "willcontinue": null -- ADK-Go's reader of the call (OriginalCallFrom)
-- fills them in when absent, so adk_runner does not write them
SELECT * FROM gd_diff('06', 'gd_06', 's');

-- TestDelegation_07_ChatToTaskValidationRetry: finish_task's arguments do
-- not fit the output_schema: a successful response saying why, and the
-- task retries
SELECT adk_define_agent('solver', model => 'local', mode => 'task', description => 'Solves arithmetic.',
                        output_schema => '{"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}',
                        instruction => gd_replay('[{"answers": [{"calls": [{"name": "finish_task", "args": {"wrong_field": 42}}]},
                                                                {"calls": [{"name": "finish_task", "args": {"answer": 42}}]}]}]'));
SELECT adk_define_agent('coordinator', model => 'local', sub_agents => ARRAY['solver'],
                        instruction => gd_replay('[{"when": "previous question", "answers": ["The answer to the previous question was 42."]},
                                                   {"answers": [{"calls": [{"name": "solver", "args": {"request": "What is 21 plus 21?"}}]},
                                                                "21 plus 21 is 42."]}]'));
SELECT adk_define_app('gd_07', 'coordinator');
SELECT count(*) AS rows FROM adk_run('gd_07', 'u', 's', 'What is 21 plus 21?');
SELECT count(*) AS rows FROM adk_run('gd_07', 'u', 's', 'What was the answer to the previous question?');
INSERT INTO gd_golden VALUES
 ('07', 1, '{"author": "user", "role": "user", "parts": [{"text": "What is 21 plus 21?"}]}'),
 ('07', 2, '{"author": "coordinator", "role": "model", "parts": [{"function_call": {"name": "solver", "id": "#1", "args": {"request": "What is 21 plus 21?"}}}], "node_info": {"path": "coordinator"}}'),
 ('07', 3, '{"author": "solver", "isolation_scope": "#1", "role": "model", "parts": [{"function_call": {"name": "finish_task", "id": "#2", "args": {"wrong_field": 42}}}], "node_info": {"path": "coordinator/solver@#1"}}'),
 ('07', 4, '{"author": "solver", "isolation_scope": "#1", "role": "user", "parts": [{"function_response": {"name": "finish_task", "id": "#2", "response": {"error": "Invoking `finish_task()` failed due to validation errors:\noutput arg: ''\"wrong_field\"'' does not exist in schema properties\nYou could retry calling this tool, but it is IMPORTANT for you to provide all the mandatory parameters with correct types."}}}], "node_info": {"path": "coordinator/solver@#1"}}'),
 ('07', 5, '{"author": "solver", "isolation_scope": "#1", "role": "model", "parts": [{"function_call": {"name": "finish_task", "id": "#3", "args": {"answer": 42}}}], "node_info": {"path": "coordinator/solver@#1"}}'),
 ('07', 6, '{"author": "solver", "isolation_scope": "#1", "role": "user", "parts": [{"function_response": {"name": "finish_task", "id": "#3", "response": {"result": "Task completed."}}}], "output": {"answer": 42}, "node_info": {"path": "coordinator/solver@#1", "output_for": ["coordinator/solver@#1"]}}'),
 ('07', 7, '{"author": "user", "role": "user", "parts": [{"function_response": {"name": "solver", "id": "#1", "response": {"answer": 42}}}], "node_info": {"path": "coordinator"}}'),
 ('07', 8, '{"author": "coordinator", "role": "model", "parts": [{"text": "21 plus 21 is 42."}], "node_info": {"path": "coordinator"}}'),
 ('07', 9, '{"author": "user", "role": "user", "parts": [{"text": "What was the answer to the previous question?"}]}'),
 ('07', 10, '{"author": "coordinator", "role": "model", "parts": [{"text": "The answer to the previous question was 42."}], "node_info": {"path": "coordinator"}}');
-- the validation error is ADK-Go's: an argument the schema does not name
-- is refused before the required ones are looked for
SELECT * FROM gd_diff('07', 'gd_07', 's');

-- beyond case 07, ADK-Go's ValidateMapOnSchema checks in this order and
-- words: each argument (unknown, then its type: a whole number for an
-- integer, objects entered, every array item), then the required ones;
-- values printed as Go prints them; a fitting call finishes the task
SELECT adk_define_agent('gd_checker', model => 'local', mode => 'task', description => 'Checks outputs.',
                        output_schema => '{"type": "object", "required": ["answer", "tags"],
                                           "properties": {"answer": {"type": "integer"},
                                                          "tags": {"type": "array", "items": {"type": "string"}},
                                                          "meta": {"type": "object", "properties": {"n": {"type": "number"}, "ok": {"type": "boolean"}}},
                                                          "note": {"description": "no type: not checked"}}}',
                        instruction => gd_replay('[{"answers": [{"calls": [{"name": "finish_task", "args": {"answer": "forty-two", "tags": []}}]},
                                                                {"calls": [{"name": "finish_task", "args": {"answer": 42.5, "tags": []}}]},
                                                                {"calls": [{"name": "finish_task", "args": {"answer": null, "tags": []}}]},
                                                                {"calls": [{"name": "finish_task", "args": {"answer": 1, "tags": ["a", 1234567.25, {"k": [true]}]}}]},
                                                                {"calls": [{"name": "finish_task", "args": {"answer": 1, "meta": {"n": 0.00001, "x\"y": 1}}}]},
                                                                {"calls": [{"name": "finish_task", "args": {"answer": 1, "meta": {"ok": "yes"}}}]},
                                                                {"calls": [{"name": "finish_task", "args": {"answer": 2}}]},
                                                                {"calls": [{"name": "finish_task", "args": {"answer": 42.0, "tags": ["x"], "meta": {"n": 1e-7, "ok": false}, "note": [null]}}]}]}]'));
SELECT adk_define_agent('coordinator', model => 'local', sub_agents => ARRAY['gd_checker'],
                        instruction => gd_replay('[{"answers": [{"calls": [{"name": "gd_checker", "args": {"request": "Check."}}]}, "Checked."]}]'));
SELECT adk_define_app('gd_07v', 'coordinator');
SELECT count(*) AS rows FROM adk_run('gd_07v', 'u', 's', 'Check it.');
SELECT e.seq, p #>> '{function_response,response,error}' AS error, p #> '{function_response,response,result}' AS result
  FROM adk.events e, jsonb_array_elements(e.event_data -> 'content' -> 'parts') p
 WHERE e.app_name = 'gd_07v' AND p #>> '{function_response,name}' = 'finish_task'
 ORDER BY e.seq;
SELECT event_data -> 'output' AS output FROM adk.events
 WHERE app_name = 'gd_07v' AND event_data ? 'output';

-- TestDelegation_08_ChatToTaskPlusFunctionTool: a task, then the
-- coordinator's own tool on its output
SELECT adk_define_agent('extractor', model => 'local', mode => 'task', description => 'Extracts grocery items.',
                        output_schema => '{"type": "object", "properties": {"items": {"type": "array", "items": {"type": "string"}}}, "required": ["items"]}',
                        instruction => gd_replay('[{"answers": [{"calls": [{"name": "finish_task", "args": {"items": ["apples", "bread", "eggs"]}}]}]}]'));
SELECT adk_define_agent('coordinator', model => 'local', tools => ARRAY['summarize'], sub_agents => ARRAY['extractor'],
                        instruction => gd_replay('[{"when": "How many", "answers": ["You asked me to summarise 3 items (apples, bread, and eggs)."]},
                                                   {"answers": [{"calls": [{"name": "extractor", "args": {"request": "Extract the list of grocery items mentioned by the user: apples, bread, eggs."}}]},
                                                                {"calls": [{"name": "summarize", "args": {"items": ["apples", "bread,", "eggs"]}}]},
                                                                "Here is the summary of the items: items: apples, bread,, eggs."]}]'));
SELECT adk_define_app('gd_08', 'coordinator');
SELECT count(*) AS rows FROM adk_run('gd_08', 'u', 's', 'Extract and summarise: apples, bread, eggs.');
SELECT count(*) AS rows FROM adk_run('gd_08', 'u', 's', 'How many items did I ask you to summarise?');
INSERT INTO gd_golden VALUES
 ('08', 1, '{"author": "user", "role": "user", "parts": [{"text": "Extract and summarise: apples, bread, eggs."}]}'),
 ('08', 2, '{"author": "coordinator", "role": "model", "parts": [{"function_call": {"name": "extractor", "id": "#1", "args": {"request": "Extract the list of grocery items mentioned by the user: apples, bread, eggs."}}}], "node_info": {"path": "coordinator"}}'),
 ('08', 3, '{"author": "extractor", "isolation_scope": "#1", "role": "model", "parts": [{"function_call": {"name": "finish_task", "id": "#2", "args": {"items": ["apples", "bread", "eggs"]}}}], "node_info": {"path": "coordinator/extractor@#1"}}'),
 ('08', 4, '{"author": "extractor", "isolation_scope": "#1", "role": "user", "parts": [{"function_response": {"name": "finish_task", "id": "#2", "response": {"result": "Task completed."}}}], "output": {"items": ["apples", "bread", "eggs"]}, "node_info": {"path": "coordinator/extractor@#1", "output_for": ["coordinator/extractor@#1"]}}'),
 ('08', 5, '{"author": "user", "role": "user", "parts": [{"function_response": {"name": "extractor", "id": "#1", "response": {"items": ["apples", "bread", "eggs"]}}}], "node_info": {"path": "coordinator"}}'),
 ('08', 6, '{"author": "coordinator", "role": "model", "parts": [{"function_call": {"name": "summarize", "id": "#3", "args": {"items": ["apples", "bread,", "eggs"]}}}], "node_info": {"path": "coordinator"}}'),
 ('08', 7, '{"author": "coordinator", "role": "user", "parts": [{"function_response": {"name": "summarize", "id": "#3", "response": {"summary": "items: apples, bread,, eggs"}}}], "node_info": {"path": "coordinator"}}'),
 ('08', 8, '{"author": "coordinator", "role": "model", "parts": [{"text": "Here is the summary of the items: items: apples, bread,, eggs."}], "node_info": {"path": "coordinator"}}'),
 ('08', 9, '{"author": "user", "role": "user", "parts": [{"text": "How many items did I ask you to summarise?"}]}'),
 ('08', 10, '{"author": "coordinator", "role": "model", "parts": [{"text": "You asked me to summarise 3 items (apples, bread, and eggs)."}], "node_info": {"path": "coordinator"}}');
SELECT * FROM gd_diff('08', 'gd_08', 's');

-- TestDelegation_09_ChatPeerTransferAcrossSiblings: chat agents transfer
-- to each other; each invocation's node is the agent it started at
-- (billing and support are another test's agents: ours are gd_billing and
-- gd_support, named as ADK-Go's in the comparison)
SELECT adk_define_agent('gd_billing', model => 'local', description => 'Answers billing questions.',
                        instruction => gd_replay('[{"when": "resetting my password", "answers": [{"calls": [{"name": "transfer_to_agent", "args": {"agent_name": "gd_support"}}]}]},
                                                   {"when": "[gd_support]", "answers": ["To help you with that, could you please provide your account number or the email address associated with your account?"]},
                                                   {"answers": ["I can help you with your invoice. What is your question?"]}]'));
SELECT adk_define_agent('gd_support', model => 'local', description => 'Helps with accounts and passwords.',
                        instruction => gd_replay('[{"when": "latest charge", "answers": [{"calls": [{"name": "transfer_to_agent", "args": {"agent_name": "gd_billing"}}]}]},
                                                   {"answers": ["To reset your password, go to the login page and click \"Forgot Password\"."]}]'));
SELECT adk_define_agent('root', model => 'local', sub_agents => ARRAY['gd_billing', 'gd_support'],
                        instruction => gd_replay('[{"answers": [{"calls": [{"name": "transfer_to_agent", "args": {"agent_name": "gd_billing"}}]}]}]'));
SELECT adk_define_app('gd_09', 'root');
SELECT count(*) AS rows FROM adk_run('gd_09', 'u', 's', 'I have a question about my invoice.');
SELECT count(*) AS rows FROM adk_run('gd_09', 'u', 's', 'Actually I need help resetting my password.');
SELECT count(*) AS rows FROM adk_run('gd_09', 'u', 's', 'Actually, back to my invoice — what''s the latest charge?');
INSERT INTO gd_golden VALUES
 ('09', 1, '{"author": "user", "role": "user", "parts": [{"text": "I have a question about my invoice."}]}'),
 ('09', 2, '{"author": "root", "role": "model", "parts": [{"function_call": {"name": "transfer_to_agent", "id": "#1", "args": {"agent_name": "billing"}}}], "node_info": {"path": "root"}}'),
 ('09', 3, '{"author": "root", "role": "user", "parts": [{"function_response": {"name": "transfer_to_agent", "id": "#1"}}], "node_info": {"path": "root"}, "transfer_to_agent": "billing"}'),
 ('09', 4, '{"author": "billing", "role": "model", "parts": [{"text": "I can help you with your invoice. What is your question?"}], "node_info": {"path": "root"}}'),
 ('09', 5, '{"author": "user", "role": "user", "parts": [{"text": "Actually I need help resetting my password."}]}'),
 ('09', 6, '{"author": "billing", "role": "model", "parts": [{"function_call": {"name": "transfer_to_agent", "id": "#2", "args": {"agent_name": "support"}}}], "node_info": {"path": "billing"}}'),
 ('09', 7, '{"author": "billing", "role": "user", "parts": [{"function_response": {"name": "transfer_to_agent", "id": "#2"}}], "node_info": {"path": "billing"}, "transfer_to_agent": "support"}'),
 ('09', 8, '{"author": "support", "role": "model", "parts": [{"text": "To reset your password, go to the login page and click \"Forgot Password\"."}], "node_info": {"path": "billing"}}'),
 ('09', 9, '{"author": "user", "role": "user", "parts": [{"text": "Actually, back to my invoice — what''s the latest charge?"}]}'),
 ('09', 10, '{"author": "support", "role": "model", "parts": [{"function_call": {"name": "transfer_to_agent", "id": "#3", "args": {"agent_name": "billing"}}}], "node_info": {"path": "support"}}'),
 ('09', 11, '{"author": "support", "role": "user", "parts": [{"function_response": {"name": "transfer_to_agent", "id": "#3"}}], "node_info": {"path": "support"}, "transfer_to_agent": "billing"}'),
 ('09', 12, '{"author": "billing", "role": "model", "parts": [{"text": "To help you with that, could you please provide your account number or the email address associated with your account?"}], "node_info": {"path": "support"}}');
-- transfer_to_agent's empty response left out, as in case 05
SELECT * FROM gd_diff('09', 'gd_09', 's', '{"gd_billing": "billing", "gd_support": "support"}');

-- TestDelegation_11_ChatToSingleTurnChainedTools: a single_turn agent's
-- own tools, one after the other, inside its node; its last answer is
-- its output
SELECT adk_define_agent('sub', model => 'local', mode => 'single_turn', description => 'Runs the chained tools.',
                        tools => ARRAY['tool_one', 'tool_two'],
                        instruction => gd_replay('[{"answers": [{"calls": [{"name": "tool_one", "args": {}}]},
                                                                {"calls": [{"name": "tool_two", "args": {"token": "alpha-42"}}]},
                                                                "The execution of the chained tools is complete. The result string returned by tool_two is: \"got alpha-42\"."]}]'));
SELECT adk_define_agent('coordinator', model => 'local', tools => NULL, sub_agents => ARRAY['sub'],
                        instruction => gd_replay('[{"answers": [{"calls": [{"name": "sub", "args": {"request": "Execute the chained tools."}}]},
                                                                "The sub agent successfully executed the chained tools, returning the final result \"got alpha-42\"."]}]'));
SELECT adk_define_app('gd_11', 'coordinator');
SELECT count(*) AS rows FROM adk_run('gd_11', 'u', 's', 'Run the chained tools.');
INSERT INTO gd_golden VALUES
 ('11', 1, '{"author": "user", "role": "user", "parts": [{"text": "Run the chained tools."}]}'),
 ('11', 2, '{"author": "coordinator", "role": "model", "parts": [{"function_call": {"name": "sub", "id": "#1", "args": {"request": "Execute the chained tools."}}}], "node_info": {"path": "coordinator"}}'),
 ('11', 3, '{"author": "sub", "branch": "sub@1", "role": "model", "parts": [{"function_call": {"name": "tool_one", "id": "#2"}}], "node_info": {"path": "coordinator/sub@1"}}'),
 ('11', 4, '{"author": "sub", "branch": "sub@1", "role": "user", "parts": [{"function_response": {"name": "tool_one", "id": "#2", "response": {"token": "alpha-42"}}}], "node_info": {"path": "coordinator/sub@1"}}'),
 ('11', 5, '{"author": "sub", "branch": "sub@1", "role": "model", "parts": [{"function_call": {"name": "tool_two", "id": "#3", "args": {"token": "alpha-42"}}}], "node_info": {"path": "coordinator/sub@1"}}'),
 ('11', 6, '{"author": "sub", "branch": "sub@1", "role": "user", "parts": [{"function_response": {"name": "tool_two", "id": "#3", "response": {"result": "got alpha-42"}}}], "node_info": {"path": "coordinator/sub@1"}}'),
 ('11', 7, '{"author": "sub", "branch": "sub@1", "role": "model", "parts": [{"text": "The execution of the chained tools is complete. The result string returned by tool_two is: \"got alpha-42\"."}], "node_info": {"path": "coordinator/sub@1", "message_as_output": true, "output_for": ["coordinator/sub@1"]}}'),
 ('11', 8, '{"author": "coordinator", "role": "user", "parts": [{"function_response": {"name": "sub", "id": "#1", "response": {"result": "The execution of the chained tools is complete. The result string returned by tool_two is: \"got alpha-42\"."}}}], "node_info": {"path": "coordinator"}}'),
 ('11', 9, '{"author": "coordinator", "role": "model", "parts": [{"text": "The sub agent successfully executed the chained tools, returning the final result \"got alpha-42\"."}], "node_info": {"path": "coordinator"}}');
SELECT * FROM gd_diff('11', 'gd_11', 's');

-- clean up
DELETE FROM adk.apps WHERE name LIKE 'gd\_%';
DELETE FROM adk.sessions WHERE app_name LIKE 'gd\_%';
DELETE FROM adk.agents WHERE name IN ('coordinator', 'root');
DELETE FROM adk.agents WHERE name = 'gd_writer';
DELETE FROM adk.agents WHERE name IN ('data_fetcher', 'order_collector', 'payment_collector', 'translator',
                                      'editor', 'solver', 'extractor', 'gd_billing', 'gd_support', 'sub', 'executor',
                                      'gd_checker');
DELETE FROM adk.tools WHERE name IN ('store_report', 'summarize', 'tool_one', 'tool_two', 'confirm');
DROP FUNCTION gd_diff(text, text, text, jsonb), gd_stream(text, text, jsonb), gd_map(text, jsonb), gd_ids(text, text),
              gd_replay(jsonb), store_report(text[]), summarize(text[]), tool_one(), tool_two(text), confirm();
DROP TABLE gd_golden;
