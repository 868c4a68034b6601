-- Agent modes (docs/agent-modes.md): adk.agents.mode, input_schema and
-- output_schema; the row checks, the placement rules (a root is chat; a
-- task agent is never a static node of a workflow agent) and the runner's
-- refusal of modes it cannot run yet.

-- an agent defined as before has no mode (chat); the three modes are kept
SELECT adk_define_agent('modes_helper', model => 'local', description => 'Helps.');
SELECT adk_define_agent('modes_task', model => 'local', mode => 'task',
                        description => 'Books a trip.',
                        input_schema => '{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}',
                        output_schema => '{"type": "object", "properties": {"booking": {"type": "string"}}}');
SELECT adk_define_agent('modes_once', model => 'local', mode => 'single_turn',
                        output_schema => '{"type": "string"}');
SELECT adk_define_agent('modes_chat', model => 'local', mode => 'chat');
SELECT name, mode, input_schema ->> 'required' AS input_required, output_schema ->> 'type' AS output_type
  FROM adk.agents WHERE name LIKE 'modes%' ORDER BY name;
-- defining it again replaces the mode and the schemas
SELECT adk_define_agent('modes_once', model => 'local', mode => 'single_turn');
SELECT mode, output_schema FROM adk.agents WHERE name = 'modes_once';

-- row checks: 22023
SELECT expect_error($$SELECT adk_define_agent('modes_bad', model => 'local', mode => 'worker')$$);
SELECT expect_error($$SELECT adk_define_agent('modes_bad', model => 'local', mode => 'Task')$$);
SELECT expect_error($$SELECT adk_define_agent('modes_bad', kind => 'sequential', sub_agents => ARRAY['modes_helper'], mode => 'chat')$$);
SELECT expect_error($$SELECT adk_define_agent('modes_bad', kind => 'loop', sub_agents => ARRAY['modes_helper'], output_schema => '{}')$$);
SELECT expect_error($$SELECT adk_define_agent('modes_bad', model => 'local', mode => 'task', input_schema => '["city"]')$$);
SELECT expect_error($$SELECT adk_define_agent('modes_bad', model => 'local', mode => 'task', output_schema => '"string"')$$);
SELECT expect_error($$SELECT adk_define_agent('modes_bad', model => 'local', mode => 'task', output_schema => '{"type": "thing"}')$$);
SELECT expect_error($$SELECT adk_define_agent('modes_bad', model => 'local', mode => 'task', output_schema => '{"type": ["string", "null"]}')$$);
-- input_schema shapes delegation to task and single_turn agents: a chat
-- agent (NULL or chat) has none (its output_schema is structured output:
-- 692_structured_output)
SELECT expect_error($$SELECT adk_define_agent('modes_bad', model => 'local', input_schema => '{"type": "object"}')$$);
SELECT expect_error($$SELECT adk_define_agent('modes_bad', model => 'local', mode => 'chat', input_schema => '{"type": "object"}')$$);
-- plain writes meet the same rules
SELECT expect_error($$INSERT INTO adk.agents (name, model, mode) VALUES ('modes_bad', 'local', 'single-turn')$$);
SELECT expect_error($$UPDATE adk.agents SET input_schema = '{"type": "object"}' WHERE name = 'modes_chat'$$);
SELECT count(*) AS bad_agents FROM adk.agents WHERE name = 'modes_bad';

-- a task agent is never a static node of a workflow agent (ADK-Go's
-- validateNoTaskModeGraphNodes), whichever row is written last: 42P17
SELECT expect_error($$SELECT adk_define_agent('modes_seq', kind => 'sequential', sub_agents => ARRAY['modes_helper', 'modes_task'])$$);
SELECT expect_error($$SELECT adk_define_agent('modes_par', kind => 'parallel', sub_agents => ARRAY['modes_task'])$$);
SELECT expect_error($$SELECT adk_define_agent('modes_loop', kind => 'loop', sub_agents => ARRAY['modes_task'], max_iterations => 2)$$);
SELECT adk_define_agent('modes_worker', model => 'local');
SELECT adk_define_agent('modes_seq', kind => 'sequential', sub_agents => ARRAY['modes_worker']);
SELECT expect_error($$SELECT adk_define_agent('modes_worker', model => 'local', mode => 'task')$$);
SELECT expect_error($$UPDATE adk.agents SET mode = 'task' WHERE name = 'modes_worker'$$);
-- one statement writing both rows is checked once it is done
SELECT expect_error($$INSERT INTO adk.agents (name, kind, sub_agents, model, mode)
                      VALUES ('modes_par', 'parallel', ARRAY['modes_late'], NULL, NULL),
                             ('modes_late', 'llm', '{}', 'local', 'task')$$);
-- single_turn and chat agents may be workflow nodes; an llm agent may
-- have task sub-agents
SELECT adk_define_agent('modes_worker', model => 'local', mode => 'single_turn');
SELECT adk_define_agent('modes_worker', model => 'local', mode => 'chat');
SELECT adk_define_agent('modes_coord', model => 'local', sub_agents => ARRAY['modes_task']);
SELECT name, mode FROM adk.agents WHERE name IN ('modes_worker', 'modes_coord') ORDER BY name;

-- the root agent of an app is chat (NULL is chat): 42P17
SELECT expect_error($$SELECT adk_define_app('modes_app', 'modes_task')$$);
SELECT expect_error($$SELECT adk_define_app('modes_app', 'modes_once')$$);
SELECT adk_define_app('modes_app', 'modes_chat');
SELECT expect_error($$SELECT adk_define_agent('modes_chat', model => 'local', mode => 'task')$$);
SELECT expect_error($$UPDATE adk.agents SET mode = 'single_turn' WHERE name = 'modes_chat'$$);
SELECT mode FROM adk.agents WHERE name = 'modes_chat';
-- an explicit chat root runs as an agent without a mode does
SELECT seq, event_data ->> 'author' AS author, event_data #>> '{content,parts,0,text}' AS text
  FROM adk_run('modes_app', 'u', 'modes-1', 'hello') ORDER BY seq;

-- a task or single_turn agent runs as a sub-agent of a chat llm
-- coordinator (812_single_turn, 814_task_mode); the runner does not run
-- one otherwise: an app whose tree reaches one as an agent used as a tool
-- (or under a workflow agent) is refused when defined, and a run refuses
-- it if it got there later: 0A000, nothing stored
SELECT adk_define_app('modes_app2', 'modes_coord');
SELECT adk_define_agent('modes_caller2', model => 'local', tools => ARRAY['modes_task']);
SELECT expect_error($$SELECT adk_define_app('modes_app3', 'modes_caller2')$$);
SELECT adk_define_agent('modes_caller', model => 'local', tools => ARRAY['modes_once']);
SELECT expect_error($$SELECT adk_define_app('modes_app2', 'modes_caller')$$);
SELECT adk_define_agent('modes_tool', model => 'local');
SELECT adk_define_agent('modes_chat', model => 'local', mode => 'chat', tools => ARRAY['modes_tool']);
UPDATE adk.agents SET mode = 'single_turn' WHERE name = 'modes_tool';
SELECT expect_error($$SELECT * FROM adk_run('modes_app', 'u', 'modes-1', 'again')$$);
SELECT count(*) AS events FROM adk.events WHERE session_id = 'modes-1';

-- clean up
DELETE FROM adk.apps WHERE name IN ('modes_app', 'modes_app2');
DELETE FROM adk.sessions WHERE app_name = 'modes_app';
DELETE FROM adk.agents WHERE name LIKE 'modes%';
