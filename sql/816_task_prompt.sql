-- adk_prompt on a session whose task is open (docs/agent-modes.md): the
-- next model call goes to the task agent, in its isolation scope, so the
-- request adk_prompt shows is that one -- the task's input, then its
-- scope's events, ADK-Go's finish_task instruction and tool -- never the
-- coordinator's conversation or its delegation call
SELECT adk_define_agent('tp_booker', model => 'local', mode => 'task', description => 'Books a room.',
                        instruction => 'Book it.');
SELECT adk_define_agent('tp_coord', model => 'local', instruction => 'Coordinate.',
                        sub_agents => ARRAY['tp_booker']);
SELECT adk_define_app('tp_app', 'tp_coord');
SELECT count(*) AS rows FROM adk_run('tp_app', 'u', 'tp-1', 'call tp_booker({"request": "Which city?"})');
SELECT agent FROM adk.active_tasks WHERE app_name = 'tp_app' AND session_id = 'tp-1';
-- the request the task agent's next turn sends
SELECT m ->> 'role' AS role, coalesce(m ->> 'content', '') AS content
  FROM jsonb_array_elements(adk_prompt('tp_app', 'u', 'tp-1') -> 'messages') m;
SELECT jsonb_path_query_array(adk_prompt('tp_app', 'u', 'tp-1'), '$.tools[*].function.name') AS tools;
-- the same, naming the agent
SELECT adk_prompt('tp_app', 'u', 'tp-1', 'tp_booker') = adk_prompt('tp_app', 'u', 'tp-1') AS same;
-- a function response for the delegating call is refused (22023): the
-- task answers it, once, with its finish_task's output; nothing is stored
SELECT regexp_replace(expect_error(format($q$SELECT adk_run('tp_app', 'u', 'tp-1', adk_function_response(%L, 'tp_booker', '{"result": "Rome"}'))$q$,
                           (SELECT event_data #>> '{content,parts,0,function_call,id}' FROM adk.events
                             WHERE app_name = 'tp_app' AND session_id = 'tp-1' AND seq = 2))),
                      'call_[A-Za-z0-9]+', '<call id>') AS refused;
SELECT count(*) AS events FROM adk.events WHERE app_name = 'tp_app' AND session_id = 'tp-1';
-- once the task finished, the next request is the coordinator's again
SELECT count(*) AS rows FROM adk_run('tp_app', 'u', 'tp-1', 'call finish_task({"result": "Paris"})');
SELECT m ->> 'role' AS role, left(coalesce(m ->> 'content', m -> 'tool_calls' -> 0 -> 'function' ->> 'name'), 40) AS content
  FROM jsonb_array_elements(adk_prompt('tp_app', 'u', 'tp-1') -> 'messages') m;

DELETE FROM adk.apps WHERE name = 'tp_app';
DELETE FROM adk.sessions WHERE app_name = 'tp_app';
DELETE FROM adk.agents WHERE name = 'tp_coord';
DELETE FROM adk.agents WHERE name = 'tp_booker';
