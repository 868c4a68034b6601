-- Session retention: per-app idle TTL on the last activity (not on
-- creation), a maximum of sessions per user, what expiry does; the view of
-- what is due; the sweep's batches; a session a run holds or that waits on
-- a person (a paused invocation, an open interrupt, a running invocation,
-- a queued job) is never deleted.
SELECT adk_set_secret('lc-key', 'sk-lc', ARRAY['127.0.0.1']);
SELECT adk_define_model('lc_model', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'lc-key');
CREATE FUNCTION lc_hold(item text) RETURNS jsonb LANGUAGE sql AS $$ SELECT jsonb_build_object('status', 'pending') $$;
SELECT adk_define_tool('lc_hold(text)'::regprocedure, long_running => true);
SELECT adk_define_agent('lc_agent', model => 'lc_model', tools => ARRAY['lc_hold']);
SELECT adk_define_app('lc_app', 'lc_agent');
SELECT adk_define_app('lc_keep', 'lc_agent');

-- the settings, and their errors
SELECT name, session_idle_ttl, max_sessions_per_user, session_expiry FROM adk.apps
 WHERE name LIKE 'lc\_%' ORDER BY name;
SELECT expect_error($$SELECT adk_define_app_retention('lc_app', idle_ttl => '-1 day')$$);
SELECT expect_error($$SELECT adk_define_app_retention('lc_app', max_sessions_per_user => 0)$$);
SELECT expect_error($$SELECT adk_define_app_retention('lc_app', on_expiry => 'archive')$$);
SELECT expect_error($$SELECT adk_define_app_retention('lc_nope', idle_ttl => '1 day')$$);
SELECT adk_define_app_retention('lc_app', idle_ttl => '1 day');
SELECT name, session_idle_ttl, max_sessions_per_user, session_expiry FROM adk.apps
 WHERE name LIKE 'lc\_%' ORDER BY name;
-- redefining the app keeps its retention
SELECT adk_define_app('lc_app', 'lc_agent');
SELECT session_idle_ttl FROM adk.apps WHERE name = 'lc_app';

-- Sessions with a past, as a restore would bring them (created and last
-- active days ago): the owner inserts the rows.
CREATE FUNCTION lc_old_session(app text, uid text, sid text, created interval, active interval)
RETURNS void LANGUAGE sql AS $$
    INSERT INTO adk.sessions (id, app_name, user_id, state, create_time, update_time)
    VALUES (sid, app, uid, '{}', now() - created, now() - active)
$$;
SELECT lc_old_session('lc_app', 'u1', 'idle', '10 days', '2 days');
SELECT lc_old_session('lc_app', 'u1', 'fresh', '1 hour', '1 hour');
-- created long ago, active now: an event moves its last activity
SELECT lc_old_session('lc_app', 'u1', 'old_but_active', '30 days', '30 days');
SELECT adk_append_event('lc_app', 'u1', 'old_but_active',
                        '{"author": "user", "content": {"role": "user", "parts": [{"text": "still here"}]}}') IS NOT NULL AS appended;
-- the same age in an app without retention
SELECT lc_old_session('lc_keep', 'u1', 'idle', '10 days', '2 days');
-- an idle session with a running invocation, one with a queued job
SELECT lc_old_session('lc_app', 'u1', 'idle_running', '10 days', '3 days');
INSERT INTO adk.invocations (invocation_id, app_name, user_id, session_id, agent, status, role_name)
VALUES ('lc-inv-running', 'lc_app', 'u1', 'idle_running', 'lc_agent', 'running', current_user);
SELECT lc_old_session('lc_app', 'u1', 'idle_queued', '10 days', '4 days');
INSERT INTO adk.jobs (invocation_id, app_name, user_id, session_id, message, role_oid, role_name, source)
VALUES ('lc-inv-queued', 'lc_app', 'u1', 'idle_queued', '{"role": "user", "parts": [{"text": "later"}]}',
        'adk_user'::regrole, 'adk_user', 'test');
-- an idle session with an artifact: it goes with the session
SELECT adk_save_artifact('lc_app', 'u1', 'idle', 'notes.txt', 'bytes', 'text/plain');

SELECT session_id, user_id, reason, action, waiting, last_activity < now() - interval '1 day' AS idle_a_day
  FROM adk.sessions_due WHERE app_name = 'lc_app' ORDER BY session_id;

-- the sweep, in batches: one session per batch here, oldest activity first
SELECT adk._retention_sweep(1) AS deleted;
SELECT id FROM adk.sessions WHERE app_name = 'lc_app' ORDER BY id;
SELECT adk._retention_sweep() AS deleted;
SELECT adk._retention_sweep() AS deleted;
SELECT id FROM adk.sessions WHERE app_name = 'lc_app' ORDER BY id;
SELECT count(*) AS kept_without_retention FROM adk.sessions WHERE app_name = 'lc_keep';
SELECT count(*) AS artifacts_left FROM adk.artifacts WHERE app_name = 'lc_app' AND session_id = 'idle';
-- what held a session is gone: it is due again, and swept
UPDATE adk.invocations SET status = 'completed', ended_at = now() WHERE invocation_id = 'lc-inv-running';
UPDATE adk.jobs SET status = 'cancelled', finished_at = now() WHERE invocation_id = 'lc-inv-queued';
SELECT adk._retention_sweep() AS deleted;
SELECT id FROM adk.sessions WHERE app_name = 'lc_app' ORDER BY id;

-- A maximum of sessions per user: the most recently active stay.  A
-- session paused on a long-running call (an open interrupt) is over the
-- limit but waits on a person: it stays.
SELECT adk_define_app_retention('lc_app', max_sessions_per_user => 2);
SELECT count(*) FROM adk_run('lc_app', 'u2', 'paused', 'call lc_hold({"item": "a"})');
SELECT status FROM adk.invocations WHERE session_id = 'paused';
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE session_id = 'paused';
SELECT adk_create_session('lc_app', 'u2', 'm1') IS NOT NULL;
SELECT pg_sleep(0.01);
SELECT adk_create_session('lc_app', 'u2', 'm2') IS NOT NULL;
SELECT pg_sleep(0.01);
SELECT adk_create_session('lc_app', 'u2', 'm3') IS NOT NULL;
SELECT session_id, reason, waiting FROM adk.sessions_due WHERE user_id = 'u2' ORDER BY session_id;
SELECT adk._retention_sweep() AS deleted;
SELECT id FROM adk.sessions WHERE user_id = 'u2' ORDER BY id;
-- the paused session is answered: no longer waiting, it goes
SELECT count(*) FROM adk_run('lc_app', 'u2', 'paused',
    adk_function_response((SELECT call_id FROM adk.pending_interrupts WHERE session_id = 'paused'),
                          'lc_hold', '{"approved": true}'));
SELECT session_id, reason, waiting FROM adk.sessions_due WHERE user_id = 'u2' ORDER BY session_id;
SELECT adk._retention_sweep() AS deleted;
SELECT id FROM adk.sessions WHERE user_id = 'u2' ORDER BY id;

-- Expiry to memory: the session's text is added to the user's memory,
-- then the session is deleted.
SELECT adk_define_app_retention('lc_app', idle_ttl => '1 day', on_expiry => 'memory');
SELECT lc_old_session('lc_app', 'u3', 'remember', '10 days', '10 days');
INSERT INTO adk.events (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data, seq)
VALUES ('lc-ev-1', 'lc_app', 'u3', 'remember', 'lc-inv-old', now() - interval '10 days',
        '{"id": "lc-ev-1", "author": "user", "invocation_id": "lc-inv-old",
          "content": {"role": "user", "parts": [{"text": "my cat is called Miso"}]}}', 1);
UPDATE adk.sessions SET last_seq = 1 WHERE id = 'remember';
SELECT adk._retention_sweep() AS deleted;
SELECT count(*) AS sessions FROM adk.sessions WHERE user_id = 'u3';
SELECT text, session_id FROM adk_search_memory('lc_app', 'u3', 'cat');

-- Only the owner runs the sweep; adk_user reads what is due.
CREATE ROLE lc_user IN ROLE adk_user;
SET ROLE lc_user;
SELECT expect_error($$SELECT adk._retention_sweep()$$);
SELECT expect_error($$SELECT adk_define_app_retention('lc_app', idle_ttl => '1 hour')$$);
SELECT count(*) >= 0 AS readable FROM adk.sessions_due;
RESET ROLE;
DROP ROLE lc_user;
