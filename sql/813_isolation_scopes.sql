-- Isolation scopes (docs/agent-modes.md): events carry isolation_scope,
-- the id of the call that delegated a task (ADK's field, whoever wrote
-- them); adk.active_tasks shows each session's open scopes, a scope
-- closing with a successful finish_task response; a prompt holds only the
-- events of its own scope, so a chat agent never sees a task's events.
-- The events are written as another runtime (ADK-Go) writes them.

SELECT adk_define_agent('sc_coord', model => 'local', instruction => 'Coordinate.');
SELECT adk_define_app('sc_app', 'sc_coord');

CREATE FUNCTION sc_event(scope text, author text, kind text, name text, id text, response jsonb DEFAULT NULL)
RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object(
        'author', author, 'isolation_scope', scope,
        'content', CASE kind
            WHEN 'call' THEN jsonb_build_object('role', 'model', 'parts',
                 jsonb_build_array(jsonb_build_object('function_call', jsonb_build_object('name', name, 'id', id, 'args', '{}'::jsonb))))
            WHEN 'response' THEN jsonb_build_object('role', 'user', 'parts',
                 jsonb_build_array(jsonb_build_object('function_response', jsonb_build_object('name', name, 'id', id, 'response', response))))
            ELSE jsonb_build_object('role', CASE WHEN author = 'user' THEN 'user' ELSE 'model' END,
                                    'parts', jsonb_build_array(jsonb_build_object('text', name))) END))
$$;
CREATE FUNCTION sc_active(s text) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce((SELECT scope FROM adk.active_tasks
                      WHERE app_name = 'sc_app' AND user_id = 'u' AND session_id = s
                      ORDER BY last_seq DESC LIMIT 1), '')
$$;

-- ADK-Go's TestFindActiveTaskIsolationScope, case by case
-- empty_session
SELECT adk_create_session('sc_app', 'u', 'empty_session') IS NOT NULL AS created;
-- no_scoped_events: pre-delegation, only unscoped events
SELECT adk_create_session('sc_app', 'u', 'no_scoped_events') IS NOT NULL AS created;
SELECT count(*) FROM (VALUES (adk_append_event('sc_app', 'u', 'no_scoped_events', sc_event(NULL, 'user', 'text', 'hi', NULL))),
                             (adk_append_event('sc_app', 'u', 'no_scoped_events', sc_event(NULL, 'sc_coord', 'text', 'hello', NULL)))) v;
-- single_open_scope: one open scope, not yet closed
SELECT adk_create_session('sc_app', 'u', 'single_open_scope') IS NOT NULL AS created;
SELECT count(*) FROM (VALUES (adk_append_event('sc_app', 'u', 'single_open_scope', sc_event(NULL, 'user', 'text', 'hi', NULL))),
                             (adk_append_event('sc_app', 'u', 'single_open_scope', sc_event('adk-task-A', 'task_agent', 'call', 'confirmation', 'fc-A')))) v;
-- scope_closed_by_finish_task_success
SELECT adk_create_session('sc_app', 'u', 'scope_closed_by_finish_task_success') IS NOT NULL AS created;
SELECT count(*) FROM (VALUES (adk_append_event('sc_app', 'u', 'scope_closed_by_finish_task_success', sc_event('adk-task-A', 'task_agent', 'call', 'finish_task', 'ft-A'))),
                             (adk_append_event('sc_app', 'u', 'scope_closed_by_finish_task_success', sc_event('adk-task-A', 'user', 'response', 'finish_task', 'ft-A', '{"result": "Task completed."}')))) v;
-- error_finish_task_fr_keeps_scope_open: the task retries
SELECT adk_create_session('sc_app', 'u', 'error_finish_task_fr_keeps_scope_open') IS NOT NULL AS created;
SELECT count(*) FROM (VALUES (adk_append_event('sc_app', 'u', 'error_finish_task_fr_keeps_scope_open', sc_event('adk-task-A', 'task_agent', 'call', 'finish_task', 'ft-A'))),
                             (adk_append_event('sc_app', 'u', 'error_finish_task_fr_keeps_scope_open', sc_event('adk-task-A', 'user', 'response', 'finish_task', 'ft-A', '{"error": "validation failed: ..."}')))) v;
-- newer_open_older_closed
SELECT adk_create_session('sc_app', 'u', 'newer_open_older_closed') IS NOT NULL AS created;
SELECT count(*) FROM (VALUES (adk_append_event('sc_app', 'u', 'newer_open_older_closed', sc_event('adk-task-A', 'task_agent', 'call', 'finish_task', 'ft-A'))),
                             (adk_append_event('sc_app', 'u', 'newer_open_older_closed', sc_event('adk-task-A', 'user', 'response', 'finish_task', 'ft-A', '{"result": "Task completed."}'))),
                             (adk_append_event('sc_app', 'u', 'newer_open_older_closed', sc_event('adk-task-B', 'task_agent', 'call', 'confirmation', 'fc-B')))) v;
-- newer_closed_older_open: the most recent unclosed, not the most recent
SELECT adk_create_session('sc_app', 'u', 'newer_closed_older_open') IS NOT NULL AS created;
SELECT count(*) FROM (VALUES (adk_append_event('sc_app', 'u', 'newer_closed_older_open', sc_event('adk-task-A', 'task_agent', 'call', 'confirmation', 'fc-A'))),
                             (adk_append_event('sc_app', 'u', 'newer_closed_older_open', sc_event('adk-task-B', 'task_agent', 'call', 'finish_task', 'ft-B'))),
                             (adk_append_event('sc_app', 'u', 'newer_closed_older_open', sc_event('adk-task-B', 'user', 'response', 'finish_task', 'ft-B', '{"result": "Task completed."}')))) v;

SELECT s AS "case", sc_active(s) AS active_scope
  FROM unnest(ARRAY['empty_session', 'no_scoped_events', 'single_open_scope',
                    'scope_closed_by_finish_task_success', 'error_finish_task_fr_keeps_scope_open',
                    'newer_open_older_closed', 'newer_closed_older_open']) s;
SELECT session_id, scope, agent, since_seq, last_seq FROM adk.active_tasks
 WHERE app_name = 'sc_app' ORDER BY session_id, scope;

-- one indexed query: the session's scoped events through their partial
-- index, not a scan of its history
CREATE FUNCTION sc_plan_uses(index_name text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    plan json;
BEGIN
    EXECUTE $q$EXPLAIN (FORMAT JSON)
               SELECT scope FROM adk.active_tasks
                WHERE app_name = 'sc_app' AND user_id = 'u' AND session_id = 'newer_closed_older_open'
                ORDER BY last_seq DESC LIMIT 1$q$ INTO plan;
    RETURN plan::text LIKE '%"Index Name": "' || index_name || '"%';
END
$$;
SET enable_seqscan = off;
SELECT sc_plan_uses('events_p0_isolation_scope_idx') AS uses_scope_index;
RESET enable_seqscan;

-- a scope reopened after its success (walking back, the newest event is
-- not the closing response) is open again
SELECT adk_append_event('sc_app', 'u', 'scope_closed_by_finish_task_success',
                        sc_event('adk-task-A', 'task_agent', 'text', 'one more thing', NULL)) ->> 'isolation_scope' AS scope;
SELECT sc_active('scope_closed_by_finish_task_success') AS active_scope;

-- isolation_scope is a string, or the event is refused: 22023
SELECT expect_error($q$SELECT adk_append_event('sc_app', 'u', 'empty_session', '{"author": "user", "isolation_scope": 7}')$q$);

-- a prompt holds only its scope's events: the chat coordinator (unscoped)
-- sees the user and its own turns, not the task's (the adk-python
-- #6509 / #6457 confusion, from the other side)
SELECT adk_create_session('sc_app', 'u', 'prompt') IS NOT NULL AS created;
SELECT count(*) FROM (VALUES
    (adk_append_event('sc_app', 'u', 'prompt', sc_event(NULL, 'user', 'text', 'book me a trip', NULL))),
    (adk_append_event('sc_app', 'u', 'prompt', sc_event(NULL, 'sc_coord', 'call', 'booker', 'call-1'))),
    (adk_append_event('sc_app', 'u', 'prompt', sc_event('call-1', 'booker', 'text', 'Which city?', NULL))),
    (adk_append_event('sc_app', 'u', 'prompt', sc_event('call-1', 'user', 'text', 'Paris', NULL))),
    (adk_append_event('sc_app', 'u', 'prompt', sc_event('call-1', 'booker', 'call', 'finish_task', 'ft-1'))),
    (adk_append_event('sc_app', 'u', 'prompt', sc_event('call-1', 'user', 'response', 'finish_task', 'ft-1', '{"result": "Task completed."}'))),
    (adk_append_event('sc_app', 'u', 'prompt', sc_event(NULL, 'user', 'response', 'booker', 'call-1', '{"result": "booked Paris"}'))),
    (adk_append_event('sc_app', 'u', 'prompt', sc_event(NULL, 'sc_coord', 'text', 'Your trip is booked.', NULL)))) v;
SELECT m ->> 'role' AS role, coalesce(m ->> 'content', m #>> '{tool_calls,0,function,name}') AS content
  FROM jsonb_array_elements(adk_prompt('sc_app', 'u', 'prompt') -> 'messages') m;
SELECT sc_active('prompt') AS active_scope;

-- clean up
DELETE FROM adk.apps WHERE name = 'sc_app';
DELETE FROM adk.sessions WHERE app_name = 'sc_app';
DELETE FROM adk.agents WHERE name = 'sc_coord';
DROP FUNCTION sc_event(text, text, text, text, text, jsonb), sc_active(text), sc_plan_uses(text);
