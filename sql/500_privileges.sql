-- adk_user runs the session API and reads the tables; it cannot write the
-- tables directly; a role without adk_user can do nothing.
CREATE ROLE regress_adk_alice LOGIN IN ROLE adk_user;
CREATE ROLE regress_adk_nobody LOGIN;

SET ROLE regress_adk_alice;
SELECT adk_create_session('priv', 'alice', 'p1', '{"app:x": 1}') ->> 'id';
SELECT adk_append_event('priv', 'alice', 'p1', '{"author": "user", "actions": {"state_delta": {"user:y": 2}}}') ->> 'author';
SELECT adk_get_session('priv', 'alice', 'p1') -> 'state';
SELECT count(*) FROM adk.events WHERE app_name = 'priv';
SELECT count(*) FROM adk.event_log WHERE app_name = 'priv';
SELECT expect_error($q$INSERT INTO adk.events (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data)
VALUES ('x', 'priv', 'alice', 'p1', '', now(), '{"author": "user"}')$q$);
SELECT expect_error($q$UPDATE adk.sessions SET state = '{}'$q$);
SELECT expect_error($q$DELETE FROM adk.events$q$);
SELECT expect_error($q$SELECT adk_delete_session('priv', 'alice', 'p1')$q$);
RESET ROLE;

-- a malicious search_path cannot change what the store's SQL means
CREATE SCHEMA regress_evil;
CREATE FUNCTION regress_evil.concat_evil(jsonb, jsonb) RETURNS jsonb
    LANGUAGE sql AS $$ SELECT '{"pwned": true}'::jsonb $$;
CREATE OPERATOR regress_evil.|| (LEFTARG = jsonb, RIGHTARG = jsonb, FUNCTION = regress_evil.concat_evil);
SET search_path = regress_evil, public, pg_catalog;
SELECT adk_create_session('priv', 'alice', 'p2') ->> 'id';
SELECT adk_append_event('priv', 'alice', 'p2', '{"author": "user", "actions": {"state_delta": {"a": 1, "app:b": 2}}}') ->> 'author';
SELECT adk_get_session('priv', 'alice', 'p2') -> 'state';
RESET search_path;
DROP SCHEMA regress_evil CASCADE;

SET ROLE regress_adk_nobody;
SELECT expect_error($q$SELECT adk_create_session('priv', 'nobody', 'n1')$q$);
SELECT expect_error($q$SELECT adk_get_session('priv', 'alice', 'p1')$q$);
SELECT expect_error($q$SELECT count(*) FROM adk.events$q$);
RESET ROLE;

DROP ROLE regress_adk_alice;
DROP ROLE regress_adk_nobody;
