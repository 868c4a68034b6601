-- Tenancy per app ('shared', 'role', 'claim') and row-level security: a
-- role matrix (alice, bob, a gateway, an admin, a role without adk
-- grants) x the public functions and the tables and views.
SELECT adk_set_secret('ten-key', 'sk-ten', ARRAY['127.0.0.1']);
SELECT adk_define_model('ten_model', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'ten-key');
CREATE FUNCTION ten_switch(user_id text) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    PERFORM adk_set_user(user_id);
    RETURN jsonb_build_object('now', adk_asserted_user());
END $$;
SELECT adk_define_tool('ten_switch(text)'::regprocedure);
CREATE FUNCTION ten_hold(item text) RETURNS jsonb LANGUAGE sql AS $$ SELECT jsonb_build_object('status', 'pending') $$;
SELECT adk_define_tool('ten_hold(text)'::regprocedure, long_running => true);
SELECT adk_define_agent('ten_agent', model => 'ten_model', tools => ARRAY['ten_switch', 'ten_hold']);
SELECT adk_define_app('ten_shared', 'ten_agent');
SELECT adk_define_app('ten_role', 'ten_agent', tenancy => 'role');
SELECT adk_define_app('ten_claim', 'ten_agent', tenancy => 'claim');
SELECT name, tenancy FROM adk.apps WHERE name LIKE 'ten\_%' ORDER BY name;
-- only the three modes
\set VERBOSITY terse
SELECT adk_define_app('ten_bad', 'ten_agent', tenancy => 'open');
\set VERBOSITY default

CREATE ROLE ten_alice IN ROLE adk_user;
CREATE ROLE ten_bob IN ROLE adk_user;
CREATE ROLE ten_gw IN ROLE adk_gateway;
CREATE ROLE ten_admin IN ROLE adk_admin;
CREATE ROLE ten_nobody;

-- What a call does: 'ok', or the SQLSTATE it raised.
CREATE FUNCTION ten_try(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE sql;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END $$;

-- Every public entry point that names a user, for one app and user id.
CREATE FUNCTION ten_matrix(app text, uid text)
RETURNS TABLE (fn text, result text) LANGUAGE sql AS $$
    SELECT f, ten_try(format(q, app, uid)) FROM (VALUES
        ('create_session', $q$SELECT adk_create_session(%L, %L, 'new-' || gen_random_uuid())$q$),
        ('get_session',    $q$SELECT adk_get_session(%L, %L, 's1')$q$),
        ('list_sessions',  $q$SELECT adk_list_sessions(%L, %L)$q$),
        ('append_event',   $q$SELECT adk_append_event(%L, %L, 's1', '{"author": "user", "content": {"role": "user", "parts": [{"text": "note"}]}}')$q$),
        ('run',            $q$SELECT count(*) FROM adk_run(%L, %L, 's1', 'hello again')$q$),
        ('prompt',         $q$SELECT adk_prompt(%L, %L, 's1')$q$),
        ('compaction_read', $q$SELECT adk_compaction_read(%L, %L, 's1')$q$),
        ('compact',        $q$SELECT adk_compact(%L, %L, 's1')$q$),
        ('submit',         $q$SELECT adk_submit(%L, %L, 's1', 'later')$q$),
        ('interrupt',      $q$SELECT adk_interrupt(%L, %L, 's1')$q$),
        ('delete_session', $q$SELECT adk_delete_session(%L, %L, 'no-such-session')$q$)
    ) AS m(f, q)
$$;
GRANT EXECUTE ON FUNCTION ten_try(text), ten_matrix(text, text) TO PUBLIC;

CREATE FUNCTION ten_invocation_owner(inv text) RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT i.app_name || '/' || i.user_id FROM adk.invocations i WHERE i.invocation_id = inv
$$;
GRANT EXECUTE ON FUNCTION ten_invocation_owner(text) TO PUBLIC;

-- Which (app/user) rows a plain SELECT returns, per table and view.
CREATE FUNCTION ten_seen() RETURNS TABLE (rel text, rows_of text) LANGUAGE plpgsql AS $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['adk.sessions', 'adk.events', 'adk.user_states', 'adk.invocations',
                             'adk.run_states', 'adk.jobs', 'adk.compactions', 'adk.event_log',
                             'adk.pending_interrupts', 'adk.budgets', 'adk.budget_usage']
    LOOP
        rel := r;
        BEGIN
            EXECUTE format($q$SELECT coalesce(string_agg(DISTINCT app_name || '/' || user_id, ' '
                                                          ORDER BY app_name || '/' || user_id), '-')
                               FROM %s WHERE app_name LIKE 'ten\_%%'$q$, r) INTO rows_of;
        EXCEPTION WHEN OTHERS THEN
            rows_of := SQLSTATE;
        END;
        RETURN NEXT;
    END LOOP;
    -- a model call's app and user are its invocation's (read here without
    -- row-level security, so only adk.model_calls' own policy filters)
    rel := 'adk.model_calls';
    BEGIN
        SELECT coalesce(string_agg(DISTINCT o, ' ' ORDER BY o), '-') INTO rows_of
          FROM (SELECT ten_invocation_owner(c.invocation_id) AS o FROM adk.model_calls c) x
         WHERE o LIKE 'ten\_%';
    EXCEPTION WHEN OTHERS THEN
        rows_of := SQLSTATE;
    END;
    RETURN NEXT;
END $$;
GRANT EXECUTE ON FUNCTION ten_seen() TO PUBLIC;

-- Data: one session per user in each app, written by its own user.
SET ROLE ten_alice;
SELECT count(*) FROM adk_run('ten_shared', 'ten_alice', 's1', 'ten-marker: call ten_hold({"item": "x"})');
SELECT count(*) FROM adk_run('ten_role', 'ten_alice', 's1', 'ten-marker: call ten_hold({"item": "x"})');
SET ROLE ten_bob;
SELECT count(*) FROM adk_run('ten_shared', 'ten_bob', 's1', 'ten-marker: call ten_hold({"item": "x"})');
SELECT count(*) FROM adk_run('ten_role', 'ten_bob', 's1', 'ten-marker: call ten_hold({"item": "x"})');
RESET ROLE;
BEGIN;
SET LOCAL ROLE ten_gw;
SELECT adk_set_user('u-alice');
SELECT adk_asserted_user();
SELECT count(*) FROM adk_run('ten_claim', 'u-alice', 's1', 'ten-marker: call ten_hold({"item": "x"})');
SELECT adk_set_user('u-bob');
SELECT count(*) FROM adk_run('ten_claim', 'u-bob', 's1', 'ten-marker: call ten_hold({"item": "x"})');
COMMIT;
SELECT adk_asserted_user() IS NULL AS cleared_at_commit;
SELECT app_name, user_id, role_name, status FROM adk.invocations WHERE app_name LIKE 'ten\_%'
 ORDER BY app_name, user_id;
-- queued runs and compactions of each user (written directly: no workers
-- and no summarizer here)
INSERT INTO adk.jobs (invocation_id, app_name, user_id, session_id, message, role_oid, role_name,
                      source, status)
SELECT 'e-ten-job-' || i.invocation_id, i.app_name, i.user_id, 'j1', '{"role": "user", "parts": []}',
       (SELECT oid FROM pg_roles WHERE rolname = i.role_name), i.role_name, 'test', 'completed'
  FROM adk.invocations i WHERE i.app_name LIKE 'ten\_%';
INSERT INTO adk.compactions (app_name, user_id, session_id, seq, event_id, kind, from_seq, to_seq,
                             seen_seq, covered_to)
SELECT i.app_name, i.user_id, 'c1', 3, 'ev-c1', 'manual', 1, 1, 2, 1
  FROM adk.invocations i WHERE i.app_name LIKE 'ten\_%';
-- a budget per user (their data too), and one per app (everyone's)
INSERT INTO adk.budgets (app_name, user_id, period, max_tokens)
SELECT i.app_name, i.user_id, 'day', 1000000 FROM adk.invocations i WHERE i.app_name LIKE 'ten\_%'
UNION ALL
SELECT a.name, NULL, 'day', 1000000 FROM adk.apps a WHERE a.name LIKE 'ten\_%';

-- 'shared': everyone with adk_user names anyone (today's behaviour)
SET ROLE ten_alice;
SELECT * FROM ten_matrix('ten_shared', 'ten_bob');
RESET ROLE;

-- 'role': alice may name only herself
SET ROLE ten_alice;
SELECT * FROM ten_matrix('ten_role', 'ten_alice');
SELECT * FROM ten_matrix('ten_role', 'ten_bob');
-- a list without a user id is hers only
SELECT app_name, user_id FROM adk_list_sessions('ten_role') ORDER BY user_id, session_id;
SELECT * FROM ten_seen();
SET ROLE ten_bob;
SELECT * FROM ten_matrix('ten_role', 'ten_alice');
SELECT * FROM ten_seen();
-- the gateway is just a role here
SET ROLE ten_gw;
SELECT * FROM ten_matrix('ten_role', 'ten_alice');
-- a role with no adk grants: nothing at all
SET ROLE ten_nobody;
SELECT * FROM ten_matrix('ten_role', 'ten_nobody');
SELECT * FROM ten_seen();
-- an admin: everything
SET ROLE ten_admin;
SELECT * FROM ten_matrix('ten_role', 'ten_bob');
SELECT * FROM ten_seen();
RESET ROLE;

-- 'claim': only a gateway, only for the user it asserted, only in that
-- transaction
SET ROLE ten_alice;
SELECT adk_set_user('u-alice');
SELECT * FROM ten_matrix('ten_claim', 'ten_alice');
SELECT * FROM ten_seen();
SET ROLE ten_gw;
-- nothing asserted yet (and outside a transaction block it would not last)
SELECT * FROM ten_matrix('ten_claim', 'u-alice');
SELECT * FROM ten_seen();
RESET ROLE;
BEGIN;
SET LOCAL ROLE ten_gw;
SELECT adk_set_user('u-alice');
SELECT * FROM ten_matrix('ten_claim', 'u-alice');
SELECT * FROM ten_matrix('ten_claim', 'u-bob');
SELECT * FROM ten_seen();
-- a ROLLBACK TO SAVEPOINT that undoes the assertion clears it
SAVEPOINT a;
SELECT adk_set_user('u-bob');
ROLLBACK TO SAVEPOINT a;
SELECT adk_asserted_user();
SELECT adk_set_user('u-alice');
-- a tool running inside the run cannot change the asserted user
SELECT count(*) FROM adk_run('ten_claim', 'u-alice', 's-tool', 'call ten_switch({"user_id": "u-bob"})');
SELECT function_responses LIKE '%cannot change the asserted end user while a run is active%' AS tool_refused
  FROM adk.event_log WHERE app_name = 'ten_claim' AND session_id = 's-tool' AND function_responses IS NOT NULL;
SELECT adk_asserted_user();
COMMIT;
SET ROLE ten_admin;
SELECT * FROM ten_matrix('ten_claim', 'u-bob');
RESET ROLE;

-- adk_wait names an invocation: its user must be the caller's
SET ROLE ten_alice;
SELECT ten_try(format('SELECT adk_wait(%L, ''0 s'')', (SELECT invocation_id FROM adk.invocations
                                                      WHERE app_name = 'ten_role' AND user_id = 'ten_alice' LIMIT 1)))
       AS own_wait;
RESET ROLE;
SELECT invocation_id AS bob_invocation FROM adk.invocations
 WHERE app_name = 'ten_role' AND user_id = 'ten_bob' LIMIT 1 \gset
SET ROLE ten_alice;
SELECT ten_try(format('SELECT adk_wait(%L, ''0 s'')', :'bob_invocation')) AS bobs_wait;
RESET ROLE;

-- the table owner (ADK-JS, ADK Python) and superusers bypass row-level
-- security: every row
SELECT * FROM ten_seen();
SELECT relname, relrowsecurity FROM pg_class
 WHERE oid IN ('adk.sessions'::regclass, 'adk.events'::regclass, 'adk.user_states'::regclass,
               'adk.run_states'::regclass, 'adk.invocations'::regclass, 'adk.model_calls'::regclass,
               'adk.jobs'::regclass, 'adk.compactions'::regclass)
 ORDER BY relname;
SELECT c.relname, c.reloptions FROM pg_class c
 WHERE c.oid IN ('adk.event_log'::regclass, 'adk.pending_interrupts'::regclass, 'adk.costs'::regclass)
 ORDER BY c.relname;

-- clean up
DELETE FROM adk.jobs WHERE app_name LIKE 'ten\_%';
DELETE FROM adk.compactions WHERE app_name LIKE 'ten\_%';
DELETE FROM adk.invocations WHERE app_name LIKE 'ten\_%';
DELETE FROM adk.sessions WHERE app_name LIKE 'ten\_%';
DELETE FROM adk.user_states WHERE app_name LIKE 'ten\_%';
DELETE FROM adk.apps WHERE name LIKE 'ten\_%';
DROP FUNCTION ten_matrix(text, text);
DROP FUNCTION ten_try(text);
DROP FUNCTION ten_seen();
DROP FUNCTION ten_invocation_owner(text);
DROP ROLE ten_alice, ten_bob, ten_gw, ten_admin, ten_nobody;
