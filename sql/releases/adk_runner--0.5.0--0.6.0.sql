-- adk_runner 0.5.0 -> 0.6.0: ALTER EXTENSION adk_runner UPDATE TO '0.6.0'.
-- Every change to the SQL surface since release 0.5.0, in the order the
-- full install script (sql/install/) makes it.  test/t/024_upgrade.pl
-- checks that a 0.5.0 schema updated with this script equals a fresh
-- 0.6.0 install (docs/releasing.md).

\echo Use "ALTER EXTENSION adk_runner UPDATE" to load this file. \quit

-- 87_runner_statements.sql: a task's delegating call, by its id
-- The task agent a call delegated to, when that call's id is an isolation
-- scope of the session (task_mode.c): a user's function response for it
-- is refused, the task's finish_task answers it.  NULL: no task.
CREATE FUNCTION adk._task_of_call(p_app text, p_user text, p_session text, p_call text)
RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN (SELECT e.event_data ->> 'author'
              FROM adk.live_events e
             WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
               AND (e.event_data ->> 'isolation_scope') <> ''
               AND e.event_data ->> 'isolation_scope' = p_call
               AND e.event_data ->> 'author' <> 'user'
             ORDER BY e.seq LIMIT 1);
END
$$;
REVOKE ALL ON FUNCTION adk._task_of_call(text, text, text, text) FROM PUBLIC;
