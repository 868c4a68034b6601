-- Tenancy of artifacts and memory (issues 14 and 15): a role matrix
-- (alice, bob, a gateway with asserted users, an admin, a role with no
-- adk grants) x every artifact and memory function and plain SELECTs on
-- adk.artifacts / adk.memory, for 'role' and 'claim' apps; 'shared' as
-- before.  Inside a run the built-in tools and a SQL tool's
-- adk_save_artifact act only for the run's own user.
SELECT adk_set_secret('tam-key', 'sk-tam', ARRAY['127.0.0.1']);
SELECT adk_define_model('tam_model', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'tam-key');
-- a SQL tool that saves an artifact for the user it is given, and one
-- that saves for the run calling it
CREATE FUNCTION tam_steal(app text, victim text) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    RETURN jsonb_build_object('version',
        adk_save_artifact(app, victim, 's1', 'stolen.txt', convert_to('planted', 'UTF8'), 'text/plain'));
END $$;
CREATE FUNCTION tam_save(name text) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('version', adk_save_artifact(name, convert_to('mine', 'UTF8'), 'text/plain'))
$$;
SELECT adk_define_tool('tam_steal(text, text)'::regprocedure);
SELECT adk_define_tool('tam_save(text)'::regprocedure);
SELECT adk_define_agent('tam_agent', model => 'tam_model',
                        tools => ARRAY['load_artifacts', 'load_memory', 'tam_steal', 'tam_save']);
SELECT adk_define_agent('tam_pre_agent', model => 'tam_model', tools => ARRAY['preload_memory']);
SELECT adk_define_app('tam_shared', 'tam_agent');
SELECT adk_define_app('tam_role', 'tam_agent', tenancy => 'role');
SELECT adk_define_app('tam_claim', 'tam_agent', tenancy => 'claim');
SELECT adk_define_app('tam_pre', 'tam_pre_agent', tenancy => 'role');

CREATE ROLE tam_alice IN ROLE adk_user;
CREATE ROLE tam_bob IN ROLE adk_user;
CREATE ROLE tam_gw IN ROLE adk_gateway;
CREATE ROLE tam_admin IN ROLE adk_admin;
CREATE ROLE tam_nobody;

-- What a call gives: 'ok' and its value, or the SQLSTATE it raised.
CREATE FUNCTION tam_try(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v text;
BEGIN
    EXECUTE sql INTO v;
    RETURN 'ok ' || coalesce(v, '-');
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END $$;

-- Every artifact and memory entry point that names a user, for one app
-- and user id (session s1; the save is undone by the delete after it).
CREATE FUNCTION tam_matrix(app text, uid text)
RETURNS TABLE (fn text, result text) LANGUAGE sql AS $$
    SELECT f, tam_try(format(q, app, uid)) FROM (VALUES
        (1, 'save_artifact',  $q$SELECT adk_save_artifact(%L, %L, 's1', 'm.txt', '\x01', 'text/plain')$q$),
        (2, 'delete_artifact', $q$SELECT adk_delete_artifact(%L, %L, 's1', 'm.txt')$q$),
        (3, 'load_artifact',  $q$SELECT convert_from(adk_load_artifact(%L, %L, 's1', 'notes.txt'), 'UTF8')$q$),
        (4, 'load_user_artifact', $q$SELECT convert_from(adk_load_artifact(%L, %L, 'other', 'user:profile.txt', 0), 'UTF8')$q$),
        (5, 'list_artifacts', $q$SELECT string_agg(f, ',' ORDER BY f) FROM adk_list_artifacts(%L, %L, 's1') f$q$),
        (6, 'list_versions',  $q$SELECT string_agg(v::text, ',' ORDER BY v) FROM adk_list_artifact_versions(%L, %L, 's1', 'notes.txt') v$q$),
        (7, 'add_to_memory',  $q$SELECT adk_add_session_to_memory(%L, %L, 's1')$q$),
        (8, 'search_memory',  $q$SELECT string_agg(m.text, ' | ' ORDER BY m.text) FROM adk_search_memory(%L, %L, 'tamsecret') m$q$)
    ) AS m(n, f, q)
    ORDER BY n
$$;
GRANT EXECUTE ON FUNCTION tam_try(text), tam_matrix(text, text) TO PUBLIC;

-- Which (app/user) rows a plain SELECT returns.
CREATE FUNCTION tam_seen() RETURNS TABLE (rel text, rows_of text) LANGUAGE plpgsql AS $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['adk.artifacts', 'adk.memory']
    LOOP
        rel := r;
        BEGIN
            EXECUTE format($q$SELECT coalesce(string_agg(DISTINCT app_name || '/' || user_id, ' '
                                                          ORDER BY app_name || '/' || user_id), '-')
                               FROM %s WHERE app_name LIKE 'tam\_%%'$q$, r) INTO rows_of;
        EXCEPTION WHEN OTHERS THEN
            rows_of := SQLSTATE;
        END;
        RETURN NEXT;
    END LOOP;
END $$;
GRANT EXECUTE ON FUNCTION tam_seen() TO PUBLIC;

-- Data, written by the owner: a session s1 per user in each app with one
-- event, in memory, a session artifact and a user: artifact.
DO $$
DECLARE
    a text;
    u text;
BEGIN
    FOR a, u IN VALUES ('tam_shared', 'tam_alice'), ('tam_shared', 'tam_bob'),
                       ('tam_role', 'tam_alice'), ('tam_role', 'tam_bob'),
                       ('tam_claim', 'u-alice'), ('tam_claim', 'u-bob'),
                       ('tam_pre', 'tam_alice'), ('tam_pre', 'tam_bob')
    LOOP
        PERFORM adk_create_session(a, u, 's1');
        PERFORM adk_append_event(a, u, 's1', jsonb_build_object('author', 'user',
            'content', jsonb_build_object('role', 'user', 'parts',
                jsonb_build_array(jsonb_build_object('text', 'tamsecret of ' || u)))));
        PERFORM adk_add_session_to_memory(a, u, 's1');
        PERFORM adk_save_artifact(a, u, 's1', 'notes.txt', convert_to('notes of ' || u, 'UTF8'), 'text/plain');
        PERFORM adk_save_artifact(a, u, 's1', 'user:profile.txt', convert_to('profile of ' || u, 'UTF8'), 'text/plain');
    END LOOP;
END $$;
SELECT * FROM tam_seen();

-- 'shared': everyone with adk_user names anyone (as before)
SET ROLE tam_alice;
SELECT * FROM tam_matrix('tam_shared', 'tam_bob');
RESET ROLE;

-- 'role': alice may name only herself
SET ROLE tam_alice;
SELECT * FROM tam_matrix('tam_role', 'tam_alice');
SELECT * FROM tam_matrix('tam_role', 'tam_bob');
SELECT * FROM tam_seen();
SELECT user_id, filename, convert_from(data, 'UTF8') AS data FROM adk.artifacts
 WHERE app_name = 'tam_role' ORDER BY user_id, filename;
SELECT user_id, text FROM adk.memory WHERE app_name = 'tam_role' ORDER BY user_id;
SET ROLE tam_bob;
SELECT * FROM tam_matrix('tam_role', 'tam_alice');
SELECT * FROM tam_seen();
-- the gateway is just a role here
SET ROLE tam_gw;
SELECT * FROM tam_matrix('tam_role', 'tam_alice');
-- a role with no adk grants: nothing at all
SET ROLE tam_nobody;
SELECT * FROM tam_matrix('tam_role', 'tam_nobody');
SELECT * FROM tam_seen();
-- an admin: everything
SET ROLE tam_admin;
SELECT * FROM tam_matrix('tam_role', 'tam_bob');
SELECT * FROM tam_seen();
RESET ROLE;

-- 'claim': only a gateway, only for the user it asserted
SET ROLE tam_alice;
SELECT * FROM tam_matrix('tam_claim', 'u-alice');
SET ROLE tam_gw;
-- nothing asserted
SELECT * FROM tam_matrix('tam_claim', 'u-alice');
SELECT * FROM tam_seen();
RESET ROLE;
BEGIN;
SET LOCAL ROLE tam_gw;
SELECT adk_set_user('u-alice');
SELECT * FROM tam_matrix('tam_claim', 'u-alice');
SELECT * FROM tam_matrix('tam_claim', 'u-bob');
SELECT * FROM tam_seen();
COMMIT;
SET ROLE tam_admin;
SELECT * FROM tam_matrix('tam_claim', 'u-bob');
RESET ROLE;

-- Inside a run: the built-ins read the run's own user's artifacts and
-- memory; a SQL tool saving for another user is refused, saving for its
-- run works.
SET ROLE tam_alice;
SELECT count(*) AS events FROM adk_run('tam_role', 'tam_alice', 's1',
    'call load_artifacts({"artifact_names": ["notes.txt", "user:profile.txt"]})');
SELECT count(*) AS events FROM adk_run('tam_role', 'tam_alice', 's1', 'call load_memory({"query": "tamsecret"})');
SELECT count(*) AS events FROM adk_run('tam_role', 'tam_alice', 's1',
    'call tam_steal({"app": "tam_role", "victim": "tam_bob"})');
SELECT count(*) AS events FROM adk_run('tam_role', 'tam_alice', 's1', 'call tam_save({"name": "own.txt"})');
SELECT count(*) AS events FROM adk_run('tam_pre', 'tam_alice', 'p1', 'tell me the tamsecret');
RESET ROLE;
SELECT app_name, session_id, author, function_calls,
       regexp_replace(function_responses, '"timestamp": "[^"]*"', '"timestamp": "-"', 'g') AS function_responses,
       regexp_replace(text, '"timestamp":"[^"]*"', '"timestamp":"-"', 'g') AS text
  FROM adk.event_log
 WHERE app_name IN ('tam_role', 'tam_pre') AND user_id = 'tam_alice' AND session_id IN ('s1', 'p1')
 ORDER BY app_name, session_id, seq;
-- what the model was sent (memories, artifacts) and what the tools answered
SELECT c.request::text LIKE '%notes of tam_alice%' AS alice_notes,
       c.request::text LIKE '%profile of tam_alice%' AS alice_profile,
       c.request::text LIKE '%tamsecret of tam_alice%' AS alice_memory,
       c.request::text LIKE '%of tam_bob%' AS anything_of_bob
  FROM adk.model_calls c JOIN adk.invocations i USING (invocation_id)
 WHERE i.app_name IN ('tam_role', 'tam_pre') AND i.session_id IN ('s1', 'p1')
 ORDER BY c.created_at, c.id;
SELECT l.function_responses LIKE '%permission denied for user \\"tam_bob\\" of app \\"tam_role\\"%' AS steal_refused
  FROM adk.event_log l
 WHERE l.app_name = 'tam_role' AND l.session_id = 's1' AND l.function_responses LIKE '%tam_steal%';
SELECT user_id, session_id, filename, convert_from(data, 'UTF8') AS data FROM adk.artifacts
 WHERE app_name = 'tam_role' AND filename IN ('stolen.txt', 'own.txt') ORDER BY user_id, filename;
-- the same from a gateway for u-alice
BEGIN;
SET LOCAL ROLE tam_gw;
SELECT adk_set_user('u-alice');
SELECT count(*) AS events FROM adk_run('tam_claim', 'u-alice', 's1',
    'call tam_steal({"app": "tam_claim", "victim": "u-bob"})');
SELECT count(*) AS events FROM adk_run('tam_claim', 'u-alice', 's1', 'call tam_save({"name": "own.txt"})');
COMMIT;
SELECT author, function_responses FROM adk.event_log
 WHERE app_name = 'tam_claim' AND user_id = 'u-alice' AND session_id = 's1' AND function_responses IS NOT NULL ORDER BY seq;
-- and in a 'shared' app the tool saves for anyone, as before
SET ROLE tam_alice;
SELECT count(*) AS events FROM adk_run('tam_shared', 'tam_alice', 'r1',
    'call tam_steal({"app": "tam_shared", "victim": "tam_bob"})');
RESET ROLE;
SELECT app_name, user_id, session_id, filename, convert_from(data, 'UTF8') AS data FROM adk.artifacts
 WHERE app_name IN ('tam_claim', 'tam_shared') AND filename IN ('stolen.txt', 'own.txt')
 ORDER BY app_name, user_id, filename;

-- row-level security is on; the internal bodies, called directly, cannot
-- write the store
SELECT relname, relrowsecurity FROM pg_class
 WHERE oid IN ('adk.artifacts'::regclass, 'adk.memory'::regclass) ORDER BY relname;
SET ROLE tam_alice;
SELECT tam_try($q$SELECT adk._save_artifact('tam_role', 'tam_alice', 's1', 'x.txt', '\x01', 'text/plain')$q$) AS direct_save;
SELECT tam_try($q$SELECT adk._delete_artifact('tam_role', 'tam_alice', 's1', 'notes.txt')$q$) AS direct_delete;
SELECT tam_try($q$SELECT adk._add_session_to_memory('tam_role', 'tam_alice', 's1')$q$) AS direct_add;
RESET ROLE;
-- the owner sees every row
SELECT * FROM tam_seen();

-- clean up
DELETE FROM adk.invocations WHERE app_name LIKE 'tam\_%';
DELETE FROM adk.sessions WHERE app_name LIKE 'tam\_%';
DELETE FROM adk.artifacts WHERE app_name LIKE 'tam\_%';
DELETE FROM adk.memory WHERE app_name LIKE 'tam\_%';
DELETE FROM adk.apps WHERE name LIKE 'tam\_%';
DROP FUNCTION tam_matrix(text, text);
DROP FUNCTION tam_try(text);
DROP FUNCTION tam_seen();
DROP ROLE tam_alice, tam_bob, tam_gw, tam_admin, tam_nobody;
