-- task sub-agents (docs/agent-modes.md): a chat coordinator delegates with
-- a tool named as the agent; the task agent works in the isolation scope
-- of the delegating call until a successful finish_task, across the
-- user's turns; its output is then the call's function response (author
-- user) and the coordinator goes on.  ADK-Go's delegation cases
-- (agent/llmagent/llmagent_delegation_test.go) through the local model
-- server.

CREATE FUNCTION tk_store(items text) RETURNS jsonb LANGUAGE sql AS $$ SELECT jsonb_build_object('stored', items) $$;
SELECT adk_define_tool('tk_store(text)'::regprocedure);
-- a task agent's own tool: it finds the items, then says to finish
CREATE FUNCTION tk_lookup(what text) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('items', what || ': apple, banana',
                              'call_next', format('call finish_task(%s)', jsonb_build_object('result', 'found ' || what)))
$$;
SELECT adk_define_tool('tk_lookup(text)'::regprocedure);
SELECT adk_define_agent('tk_fetcher', model => 'local', mode => 'task',
                        description => 'Fetches items.', tools => ARRAY['tk_lookup']);
SELECT adk_define_agent('tk_booker', model => 'local', mode => 'task',
                        description => 'Books a room.',
                        output_schema => '{"type": "object", "properties": {"city": {"type": "string"}, "nights": {"type": "integer"}}, "required": ["city"]}');
SELECT adk_define_agent('tk_coord', model => 'local', instruction => 'Coordinate.',
                        tools => ARRAY['tk_store'], sub_agents => ARRAY['tk_fetcher', 'tk_booker']);
SELECT adk_define_app('tk_app', 'tk_coord');

CREATE FUNCTION tk_events(s text, after bigint DEFAULT 0)
RETURNS TABLE (seq bigint, author text, scope text, part text, output jsonb)
LANGUAGE sql AS $$
    SELECT e.seq, e.event_data ->> 'author', e.event_data ->> 'isolation_scope' IS NOT NULL AND
               e.event_data ->> 'isolation_scope' = (SELECT p2 -> 'function_call' ->> 'id'
                                                        FROM adk.events c, jsonb_array_elements(c.event_data -> 'content' -> 'parts') p2
                                                       WHERE c.session_id = s AND c.app_name = 'tk_app'
                                                         AND p2 -> 'function_call' ->> 'name' LIKE 'tk\_%'
                                                         AND p2 -> 'function_call' ->> 'id' = e.event_data ->> 'isolation_scope')
               AS scope,
           coalesce(p -> 'function_call' ->> 'name', '') ||
           coalesce('(' || (p -> 'function_call' -> 'args')::text || ')', '') ||
           coalesce(p -> 'function_response' ->> 'name', '') ||
           coalesce(' -> ' || (p -> 'function_response' -> 'response')::text, '') ||
           coalesce(p ->> 'text', ''),
           e.event_data -> 'output'
      FROM adk.events e, jsonb_array_elements(e.event_data -> 'content' -> 'parts') p
     WHERE e.app_name = 'tk_app' AND e.session_id = s AND e.seq > after
     ORDER BY e.seq
$$;

-- chat -> task -> tool (TestDelegation_01): the task finishes at once;
-- its events carry the delegating call's id as isolation_scope (scope: t);
-- finish_task's response carries the output; the coordinator's call gets
-- the output object as its response, author user; the coordinator goes
-- on in the same invocation (its model answers the response)
SELECT count(*) AS rows
  FROM adk_run('tk_app', 'u', 'tk-1', 'call tk_fetcher({"request": "call finish_task({\"result\": \"apple, banana\"})"})');
SELECT * FROM tk_events('tk-1');
SELECT count(*) AS open_tasks FROM adk.active_tasks WHERE app_name = 'tk_app' AND session_id = 'tk-1';
-- the tools: the task tool (description + ADK-Go's note, {request}
-- described), and the task agent's finish_task ({result: string})
SELECT t -> 'function' ->> 'name' AS tool, t -> 'function' ->> 'description' AS description,
       t -> 'function' -> 'parameters' AS parameters
  FROM (SELECT request FROM adk.model_calls
         WHERE invocation_id = (SELECT invocation_id FROM adk.events WHERE session_id = 'tk-1' AND seq = 1)
         ORDER BY id LIMIT 2) c,
       jsonb_array_elements(c.request -> 'tools') t
 WHERE t -> 'function' ->> 'name' IN ('tk_fetcher', 'tk_booker', 'finish_task');
-- the task agent's request: its input and ADK-Go's finish_task
-- instruction; never the coordinator's delegation call (adk-python
-- #6509 / #6457)
SELECT jsonb_array_length(request -> 'messages') AS messages,
       request #>> '{messages,1,content}' AS input,
       request #>> '{messages,0,content}' LIKE '%Do NOT call ''finish_task'' prematurely.%' AS instruction,
       request::text LIKE '%tool_calls%' AS sees_a_call
  FROM adk.model_calls
 WHERE invocation_id = (SELECT invocation_id FROM adk.events WHERE session_id = 'tk-1' AND seq = 1)
 ORDER BY id OFFSET 1 LIMIT 1;

-- a task across turns: it asks the user (a text, no finish_task); the
-- invocation ends there, the scope stays open; the user's next message
-- inherits the scope and goes to the task agent, whose prompt holds its
-- input and its scope's events only; finish_task with arguments that do
-- not fit its output_schema is a successful response telling the model
-- what was wrong (TestDelegation_07), and the task goes on; a valid one
-- ends it, the coordinator's call gets the output, the coordinator goes on
SELECT count(*) AS rows FROM adk_run('tk_app', 'u', 'tk-2', 'call tk_booker({"request": "Which city?"})');
SELECT * FROM tk_events('tk-2');
SELECT agent, since_seq, last_seq FROM adk.active_tasks WHERE app_name = 'tk_app' AND session_id = 'tk-2';
SELECT count(*) AS rows FROM adk_run('tk_app', 'u', 'tk-2', 'call finish_task({"town": "Paris"})');
SELECT * FROM tk_events('tk-2', 3);
SELECT count(*) AS rows FROM adk_run('tk_app', 'u', 'tk-2', 'call finish_task({"city": "Paris", "nights": 2})');
SELECT * FROM tk_events('tk-2', 6);
SELECT count(*) AS open_tasks FROM adk.active_tasks WHERE app_name = 'tk_app' AND session_id = 'tk-2';
-- the task's requests in that last turn: its input first, its scope's
-- events, no coordinator call, no unscoped event
SELECT jsonb_array_length(request -> 'messages') AS messages,
       request #>> '{messages,1,content}' AS input,
       jsonb_path_exists(request, '$.messages[*].tool_calls[*].function ? (@.name == "tk_booker")') AS sees_delegation,
       request::text LIKE '%call tk_booker%' AS sees_unscoped
  FROM adk.model_calls
 WHERE invocation_id = (SELECT invocation_id FROM adk.events WHERE session_id = 'tk-2' AND seq = 8)
   AND request::text LIKE '%finish_task%' AND request #>> '{messages,0,content}' NOT LIKE 'Coordinate.%'
 ORDER BY id;
-- the next message goes to the coordinator again
SELECT count(*) AS rows FROM adk_run('tk_app', 'u', 'tk-2', 'thanks');
SELECT * FROM tk_events('tk-2', 11);

-- task plus function tool (TestDelegation_08): the task agent's own tool
-- runs in its scope, and the task finishes after it
SELECT count(*) AS rows FROM adk_run('tk_app', 'u', 'tk-4', 'call tk_fetcher({"request": "call tk_lookup({\"what\": \"fruit\"})"})');
SELECT * FROM tk_events('tk-4');

-- two tasks in sequence (TestDelegation_02): the first task's output
-- leads the coordinator to delegate the second (its call_next), each in
-- its own scope; both calls answered once, both scopes closed.  (As in
-- ADK-Go, finish_task refuses an argument its schema does not name: here
-- the fetcher's output_schema names call_next.)
SELECT adk_define_agent('tk_fetcher', model => 'local', mode => 'task',
                        description => 'Fetches items.', tools => ARRAY['tk_lookup'],
                        output_schema => '{"type": "object", "properties": {"result": {"type": "string"}, "call_next": {"type": "string"}}, "required": ["result"]}');
SELECT count(*) AS rows
  FROM adk_run('tk_app', 'u', 'tk-5', 'call tk_fetcher({"request": "call finish_task({\"result\": \"apples\", \"call_next\": \"call tk_booker({\\\"request\\\": \\\"call finish_task({\\\\\\\"city\\\\\\\": \\\\\\\"Rome\\\\\\\"})\\\"})\"})"})');
SELECT * FROM tk_events('tk-5');
SELECT count(DISTINCT event_data ->> 'isolation_scope') AS scopes,
       (SELECT count(*) FROM adk.active_tasks WHERE app_name = 'tk_app' AND session_id = 'tk-5') AS open_tasks
  FROM adk.events WHERE app_name = 'tk_app' AND session_id = 'tk-5' AND event_data ? 'isolation_scope';
SELECT adk_define_agent('tk_fetcher', model => 'local', mode => 'task',
                        description => 'Fetches items.', tools => ARRAY['tk_lookup']);

-- chat chained through chat to task (TestDelegation_05): the root
-- transfers to a chat sub-agent, which delegates to its own task agent;
-- the task asks the user, the next message goes to it, and once it
-- finished its coordinator -- the chat sub-agent -- goes on
SELECT adk_define_agent('tk_ticket', model => 'local', mode => 'task', description => 'Opens a ticket.');
SELECT adk_define_agent('tk_support', model => 'local', description => 'Technical support.',
                        sub_agents => ARRAY['tk_ticket']);
SELECT adk_define_agent('tk_front', model => 'local', sub_agents => ARRAY['tk_support']);
SELECT adk_define_app('tk_app2', 'tk_front');
SELECT count(*) AS rows FROM adk_run('tk_app2', 'u', 'tk-6', 'transfer to tk_support');
SELECT count(*) AS rows FROM adk_run('tk_app2', 'u', 'tk-6', 'call tk_ticket({"request": "Which printer?"})');
SELECT count(*) AS rows FROM adk_run('tk_app2', 'u', 'tk-6', 'call finish_task({"result": "printer 7"})');
SELECT seq, event_data ->> 'author' AS author, event_data ? 'isolation_scope' AS scoped,
       coalesce(event_data #>> '{content,parts,0,text}',
                'call ' || (event_data #>> '{content,parts,0,function_call,name}'),
                'response ' || (event_data #>> '{content,parts,0,function_response,name}')) AS part
  FROM adk.events WHERE app_name = 'tk_app2' AND session_id = 'tk-6' ORDER BY seq;

-- arguments that do not fit the task's input parameters: the call's error
-- response, no task runs
SELECT count(*) AS rows FROM adk_run('tk_app', 'u', 'tk-3', 'call tk_fetcher({"what": "apples"})');
SELECT * FROM tk_events('tk-3');

-- clean up
DELETE FROM adk.apps WHERE name IN ('tk_app', 'tk_app2');
DELETE FROM adk.sessions WHERE app_name IN ('tk_app', 'tk_app2');
DELETE FROM adk.agents WHERE name IN ('tk_coord', 'tk_front');
DELETE FROM adk.agents WHERE name = 'tk_support';
DELETE FROM adk.agents WHERE name LIKE 'tk\_%';
DELETE FROM adk.tools WHERE name IN ('tk_store', 'tk_lookup');
DROP FUNCTION tk_events(text, bigint), tk_store(text), tk_lookup(text);
