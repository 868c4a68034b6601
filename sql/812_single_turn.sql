-- single_turn sub-agents (docs/agent-modes.md): a chat coordinator gets a
-- tool per single_turn sub-agent, named as it; calling it runs the
-- sub-agent once, from its input alone, in a tool loop of its own, its
-- events on branch <agent>@<n>; the call's response is {"result": output}.
-- ADK-Go's delegation cases (agent/llmagent/llmagent_delegation_test.go)
-- through the local model server.

CREATE FUNCTION st_tool_one() RETURNS jsonb LANGUAGE sql AS $$
    SELECT '{"token": "alpha-42", "call_next": "call st_tool_two({\"token\": \"alpha-42\"})"}'::jsonb
$$;
CREATE FUNCTION st_tool_two(token text) RETURNS text LANGUAGE sql AS $$ SELECT 'got ' || token $$;
SELECT adk_define_tool('st_tool_one()'::regprocedure);
SELECT adk_define_tool('st_tool_two(text)'::regprocedure);
SELECT adk_define_agent('st_translator', model => 'local', mode => 'single_turn',
                        description => 'Translates a word.', output_key => 'st_last');
SELECT adk_define_agent('st_json', model => 'local', mode => 'single_turn',
                        description => 'Answers in JSON.', output_key => 'st_json_out',
                        output_schema => '{"type": "object", "properties": {"translation": {"type": "string"}}}');
SELECT adk_define_agent('st_booker', model => 'local', mode => 'single_turn',
                        description => 'Books a room.',
                        input_schema => '{"type": "object", "properties": {"city": {"type": "string"}, "nights": {"type": "integer"}}, "required": ["city"]}');
SELECT adk_define_agent('st_sub', model => 'local', mode => 'single_turn',
                        description => 'Runs the chained tools.',
                        tools => ARRAY['st_tool_one', 'st_tool_two']);
SELECT adk_define_agent('st_peer', model => 'local', description => 'A chat peer.');
SELECT adk_define_agent('st_coord', model => 'local', instruction => 'Coordinate.',
                        sub_agents => ARRAY['st_translator', 'st_json', 'st_booker', 'st_sub', 'st_peer']);
SELECT adk_define_app('st_app', 'st_coord');

CREATE FUNCTION st_events(s text) RETURNS TABLE (seq bigint, author text, branch text, part text)
LANGUAGE sql AS $$
    SELECT e.seq, e.event_data ->> 'author', e.event_data ->> 'branch',
           coalesce(p -> 'function_call' ->> 'name', '') ||
           coalesce('(' || (p -> 'function_call' -> 'args')::text || ')', '') ||
           coalesce(p -> 'function_response' ->> 'name', '') ||
           coalesce(' -> ' || (p -> 'function_response' -> 'response')::text, '') ||
           coalesce(p ->> 'text', '')
      FROM adk.events e, jsonb_array_elements(e.event_data -> 'content' -> 'parts') p
     WHERE e.app_name = 'st_app' AND e.session_id = s
     ORDER BY e.seq
$$;

-- chat -> single_turn (TestDelegation_03_ChatToSingleTurn): the node's
-- model event is stored on branch st_translator@1; it saw its request
-- alone ("echo: hola", not the directive); the coordinator's call gets
-- {"result": output} (author: the coordinator); output_key writes it
SELECT count(*) AS rows FROM adk_run('st_app', 'u', 'st-1', 'call st_translator({"request": "hola"})');
SELECT * FROM st_events('st-1');
SELECT state -> 'st_last' AS st_last FROM adk.sessions WHERE app_name = 'st_app' AND id = 'st-1';
-- the coordinator's tools: one per single_turn sub-agent, named as it, its
-- description, {request: string} or the input_schema; transfer_to_agent
-- only for the chat peer
SELECT t -> 'function' ->> 'name' AS tool, t -> 'function' ->> 'description' AS description,
       t -> 'function' -> 'parameters' AS parameters
  FROM (SELECT request FROM adk.model_calls
         WHERE invocation_id = (SELECT invocation_id FROM adk.events WHERE session_id = 'st-1' AND seq = 1)
         ORDER BY id LIMIT 1) c,
       jsonb_array_elements(c.request -> 'tools') t;
-- the node's request: its system instruction and one user message, its
-- input; no tools (it has none, and no transfer)
SELECT jsonb_array_length(request -> 'messages') AS messages,
       request #>> '{messages,1,content}' AS input, request -> 'tools' AS tools
  FROM adk.model_calls
 WHERE invocation_id = (SELECT invocation_id FROM adk.events WHERE session_id = 'st-1' AND seq = 1)
   AND request::text LIKE '%"content": "hola"%';
-- the next turn goes to the coordinator (never to the node's agent); the
-- node is st_translator@1 again, and sees nothing of the first turn; the
-- coordinator's prompt holds none of the first node's events
SELECT count(*) AS rows FROM adk_run('st_app', 'u', 'st-1', 'call st_translator({"request": "adios"})');
SELECT * FROM st_events('st-1') WHERE seq > 5;
SELECT jsonb_array_length(request -> 'messages') AS messages,
       request::text LIKE '%hola%' AS sees_first_turn,
       request::text LIKE '%For context%' AS sees_other_agents
  FROM adk.model_calls
 WHERE invocation_id = (SELECT invocation_id FROM adk.events WHERE session_id = 'st-1' AND seq = 6)
 ORDER BY id;

-- output_schema: the text is parsed as JSON, the result and output_key
-- hold the object
SELECT count(*) AS rows
  FROM adk_run('st_app', 'u', 'st-2', 'call st_json({"request": "[[say:{\"translation\": \"hola\"}]]"})');
SELECT * FROM st_events('st-2');
SELECT state -> 'st_json_out' AS st_json_out FROM adk.sessions WHERE app_name = 'st_app' AND id = 'st-2';
-- ... the schema is asked for natively: the local model server answers
-- in its shape (an answer that does not fit it is corrected on the
-- node's branch: 692_structured_output)
SELECT count(*) AS rows FROM adk_run('st_app', 'u', 'st-3', 'call st_json({"request": "not json"})');
SELECT state -> 'st_json_out' AS st_json_out FROM adk.sessions WHERE app_name = 'st_app' AND id = 'st-3';

-- two single-turn calls in one model turn (TestDelegation_04): both run,
-- st_translator@1 then @2, both responses in one event, in call order
SELECT count(*) AS rows
  FROM adk_run('st_app', 'u', 'st-4', 'call st_translator({"request": "one"}) call st_translator({"request": "two"})');
SELECT * FROM st_events('st-4');

-- single-turn chained tools (TestDelegation_11): the node's own tools run
-- in its own loop, on its branch, the second called with the first's token
SELECT count(*) AS rows FROM adk_run('st_app', 'u', 'st-5', 'call st_sub({"request": "call st_tool_one({})"})');
SELECT * FROM st_events('st-5');

-- input_schema: the arguments are the node's input, as JSON; arguments
-- that do not fit are the call's error response and no node runs
SELECT count(*) AS rows
  FROM adk_run('st_app', 'u', 'st-6', 'call st_booker({"city": "Paris", "nights": 2})');
SELECT * FROM st_events('st-6');
SELECT count(*) AS rows
  FROM adk_run('st_app', 'u', 'st-7', 'call st_booker({"town": "Paris"}) call st_booker({"city": "Rome", "nights": 1.5})');
SELECT * FROM st_events('st-7');

-- the node's model fails: a stored error event on its branch, and the
-- invocation fails as any model failure does; the next message goes to
-- the coordinator, whose unanswered call is left out of its prompt
UPDATE adk.agents SET model = 'broken' WHERE name = 'st_translator';
SELECT count(*) AS rows FROM adk_run('st_app', 'u', 'st-8', 'call st_translator({"request": "hola"})');
UPDATE adk.agents SET model = 'local' WHERE name = 'st_translator';
SELECT seq, event_data ->> 'author' AS author, event_data ->> 'branch' AS branch,
       event_data ->> 'error_code' AS error_code
  FROM adk.events WHERE app_name = 'st_app' AND session_id = 'st-8' ORDER BY seq;
SELECT status FROM adk.invocations
 WHERE invocation_id = (SELECT invocation_id FROM adk.events WHERE session_id = 'st-8' AND seq = 1);
SELECT count(*) AS rows FROM adk_run('st_app', 'u', 'st-8', 'hello again');
SELECT * FROM st_events('st-8') WHERE seq > 3;

-- what is not run yet is still refused (0A000): a single_turn agent used
-- as a tool, or under a workflow agent
SELECT adk_define_agent('st_tool_user', model => 'local', tools => ARRAY['st_translator']);
SELECT expect_error($$SELECT adk_define_app('st_app2', 'st_tool_user')$$);
SELECT adk_define_agent('st_once', model => 'local', mode => 'single_turn');
SELECT adk_define_agent('st_seq', kind => 'sequential', sub_agents => ARRAY['st_once']);
SELECT expect_error($$SELECT adk_define_app('st_app2', 'st_seq')$$);

-- clean up
DELETE FROM adk.apps WHERE name = 'st_app';
DELETE FROM adk.sessions WHERE app_name = 'st_app';
DELETE FROM adk.agents WHERE name IN ('st_coord', 'st_tool_user', 'st_seq');
DELETE FROM adk.agents WHERE name LIKE 'st\_%';
DELETE FROM adk.tools WHERE name LIKE 'st\_tool%';
DROP FUNCTION st_events(text), st_tool_one(), st_tool_two(text);
