-- Erasure: adk_purge_user(app, user) deletes the user of the app from every
-- table of schema adk and returns the counts; other users and apps keep
-- everything; tenancy: a role erases only the users it may name.
SELECT adk_define_app('pg_app', 'lc_agent');
SELECT adk_define_app('pg_other', 'lc_agent');
SELECT adk_define_app('pg_role', 'lc_agent', tenancy => 'role');

-- Everything a user leaves behind: sessions and events from runs (model
-- calls, spans, invocations), a paused run (run states), artifacts of a
-- session and of the user, user state, memory, a queued job, a budget.
-- The same for a bystander of the same app and the same user id in
-- another app.
CREATE FUNCTION pu_fill(app text, uid text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM adk_create_session(app, uid, 's1', '{"user:lang": "fr", "topic": "cats"}');
    PERFORM count(*) FROM adk_run(app, uid, 's1', 'hello there');
    PERFORM count(*) FROM adk_run(app, uid, 's2', 'call lc_hold({"item": "x"})');
    PERFORM adk_save_artifact(app, uid, 's1', 'a.txt', 'session bytes', 'text/plain');
    PERFORM adk_save_artifact(app, uid, 's1', 'user:profile.txt', 'user bytes', 'text/plain');
    PERFORM adk_add_session_to_memory(app, uid, 's1');
    -- a queued job, as adk_submit leaves it
    INSERT INTO adk.jobs (invocation_id, app_name, user_id, session_id, message, role_oid, role_name, source)
    VALUES (gen_random_uuid()::text, app, uid, 's3', '{"role": "user", "parts": [{"text": "later"}]}',
            'adk_user'::regrole, 'adk_user', 'adk_submit');
END $$;
SELECT pu_fill('pg_app', 'pg-victim-7f3a'), pu_fill('pg_app', 'pg-bystander'),
       pu_fill('pg_other', 'pg-victim-7f3a');
INSERT INTO adk.budgets (app_name, user_id, period, max_tokens) VALUES ('pg_app', 'pg-victim-7f3a', 'day', 100000);

-- Rows that mention a user id anywhere (any column, as text), per table
-- of schema adk: the catalog lists the tables, so a table added later is
-- covered too.  Partitions are read through their parent.
CREATE FUNCTION pu_mentions(needle text, app text)
RETURNS TABLE (tbl text, n bigint) LANGUAGE plpgsql AS $$
DECLARE
    t regclass;
BEGIN
    FOR t IN
        SELECT c.oid::regclass FROM pg_class c
         WHERE c.relnamespace = 'adk'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
         ORDER BY c.relname
    LOOP
        tbl := t::text;
        EXECUTE format('SELECT count(*) FROM %s x WHERE x::text LIKE %L AND x::text LIKE %L',
                       t, '%' || needle || '%', '%' || app || '%') INTO n;
        IF n > 0 THEN
            RETURN NEXT;
        END IF;
    END LOOP;
END $$;
SELECT * FROM pu_mentions('pg-victim-7f3a', 'pg_app');
CREATE TABLE pu_before AS
    SELECT 'bystander' AS who, * FROM pu_mentions('pg-bystander', 'pg_app')
    UNION ALL SELECT 'other app', * FROM pu_mentions('pg-victim-7f3a', 'pg_other');

SELECT jsonb_pretty(adk_purge_user('pg_app', 'pg-victim-7f3a'));
-- nothing of the user is left but the operator's budget for the user id
SELECT * FROM pu_mentions('pg-victim-7f3a', 'pg_app');
-- the bystander and the same user id in another app keep everything
SELECT who, tbl, n FROM pu_before
EXCEPT
SELECT 'bystander', * FROM pu_mentions('pg-bystander', 'pg_app')
EXCEPT
SELECT 'other app', * FROM pu_mentions('pg-victim-7f3a', 'pg_other');
SELECT count(*) > 5 AS bystander_rows FROM pu_before;
-- a second purge finds nothing
SELECT adk_purge_user('pg_app', 'pg-victim-7f3a') = jsonb_build_object(
    'events', 0, 'run_states', 0, 'compactions', 0, 'artifacts', 0, 'sessions', 0, 'user_states', 0,
    'memory', 0, 'model_calls', 0, 'spans', 0, 'invocations', 0, 'jobs', 0) AS all_zero;

-- bad input
SELECT expect_error($$SELECT adk_purge_user(NULL, 'u')$$);
SELECT expect_error($$SELECT adk_purge_user('pg_app', '')$$);

-- Tenancy.  In a 'role' app a role erases itself, never another user; a
-- role outside adk_user may not call it; nobody calls the body directly.
CREATE ROLE pu_alice IN ROLE adk_user;
CREATE ROLE pu_mallory IN ROLE adk_user;
CREATE ROLE pu_nobody;
SELECT adk_create_session('pg_role', 'pu_alice', 'a1') IS NOT NULL;
SELECT adk_save_artifact('pg_role', 'pu_alice', 'a1', 'secret.txt', 'alice''s', 'text/plain');
SET ROLE pu_mallory;
SELECT expect_error($$SELECT adk_purge_user('pg_role', 'pu_alice')$$);
SELECT expect_error($$SELECT adk._purge_user('pg_role', 'pu_alice')$$);
RESET ROLE;
SET ROLE pu_nobody;
SELECT expect_error($$SELECT adk_purge_user('pg_role', 'pu_alice')$$);
RESET ROLE;
SELECT count(*) AS alice_sessions FROM adk.sessions WHERE user_id = 'pu_alice';
SELECT count(*) AS alice_artifacts FROM adk.artifacts WHERE user_id = 'pu_alice';
SET ROLE pu_alice;
SELECT adk_purge_user('pg_role', 'pu_alice') ->> 'sessions' AS alice_erased_sessions;
RESET ROLE;
SELECT count(*) AS alice_sessions FROM adk.sessions WHERE user_id = 'pu_alice';
DROP ROLE pu_alice, pu_mallory, pu_nobody;
