-- The statements every turn runs live in sql/install/88_turn_statements.sql
-- as LANGUAGE sql functions, whose bodies the C code runs as kept plans
-- (adk_spi_call, docs/internals/statements.md): not a call, so what a
-- call's SET clause and EXECUTE check would give is checked here and by
-- the helper.  (521_search_path runs every path below with a hostile
-- search_path; 953_turn_cost shows that no function is called for them.)
CREATE TEMP TABLE turn_statements (name name);
INSERT INTO turn_statements VALUES
  ('_append_event_row'), ('_append_event_unheld'), ('_place_event_bump'), ('_place_event_bump_shard'),
  ('_session_lock'), ('_session_lock_unheld'), ('_session_lock_holders'), ('_session_history'),
  ('_session_recent_authors'), ('_session_compacted'), ('_model_call_insert'),
  ('_model_calls_purge'), ('_merge_app_state'), ('_merge_user_state'), ('_budget_any');
-- The other statements of more than a line the C code ran (none every
-- turn) are plpgsql functions it calls.
INSERT INTO turn_statements VALUES
  ('_extension_schema'), ('_run_status'), ('_model_call_restore'), ('_events_shard'),
  ('_otlp_secret'), ('_span_exports_dequeue'), ('_sliding_window_bounds'),
  ('_summarizer_model'), ('_compaction_error_set');
-- each: LANGUAGE sql (run from its body) or plpgsql (called), not
-- SECURITY DEFINER, search_path pinned and nothing else set, and no one's
-- to call but the owner's -- but adk_wait's look at a run, which runs as
-- its caller
SELECT t.name, l.lanname, p.prosecdef, p.proconfig,
       EXISTS (SELECT FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
                WHERE a.grantee = 0) AS public_may,
       has_function_privilege('adk_user', p.oid, 'EXECUTE') AS user_may,
       has_function_privilege('adk_admin', p.oid, 'EXECUTE') AS admin_may
  FROM turn_statements t
  LEFT JOIN pg_proc p ON p.proname = t.name AND p.pronamespace = 'adk'::regnamespace
  LEFT JOIN pg_language l ON l.oid = p.prolang
 ORDER BY 1;

-- the ledger row handed over on a rollback has every column but the bodies
BEGIN;
SELECT (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(r::jsonb) k)
       = (SELECT array_agg(a.attname::text ORDER BY a.attname::text) FROM pg_attribute a
           WHERE a.attrelid = 'adk.model_calls'::regclass AND a.attnum > 0 AND NOT a.attisdropped
             AND a.attname NOT IN ('request', 'response', 'response_body')) AS every_column_but_bodies
  FROM adk._model_call_insert('m', 'openai', 'http://x', NULL, false, 200, 1, 1.5, 1, 2, 'stop',
                              NULL, NULL, '{}', '{}', 'body', current_user, NULL, NULL, NULL,
                              NULL, NULL, NULL, 0, NULL, NULL, NULL) r;
ROLLBACK;

SELECT adk_set_secret('ts-key', 'sk-ts-0123456789', ARRAY['127.0.0.1']);
SELECT adk_define_model('ts_model', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'ts-key');
SELECT adk_define_agent('ts_helper', model => 'ts_model', description => 'Helps.');
SELECT adk_define_agent('ts_agent', model => 'ts_model', instruction => 'Be brief.',
                        sub_agents => ARRAY['ts_helper']);
SELECT adk_define_app('ts_app', 'ts_agent');
SELECT adk_create_session('ts_app', 'u', 's1') ->> 'id' AS created;

-- the C code runs each function's body: without the function, each path
-- stops with an error naming it (and the transaction's work goes with it)
CREATE FUNCTION pg_temp.without(fn name, q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    e text;
BEGIN
    EXECUTE format('ALTER FUNCTION adk.%I RENAME TO _moved', fn);
    e := expect_error(q);
    EXECUTE format('ALTER FUNCTION adk._moved RENAME TO %I', fn);
    RETURN e;
END $$;
-- the ledger's purge, which a backend's first model call runs
SELECT pg_temp.without('_model_calls_purge', $q$SELECT adk_generate('ts_model', '[{"role": "user", "parts": [{"text": "hi"}]}]')$q$);
SELECT pg_temp.without('_model_call_insert', $q$SELECT adk_generate('ts_model', '[{"role": "user", "parts": [{"text": "hi"}]}]')$q$);
-- adk_append_event's one statement (the session row lock taken only when
-- no queued run holds the session); adk_run's appends, in a session whose
-- row lock it holds
SELECT pg_temp.without('_append_event_unheld', $q$SELECT adk_append_event('ts_app', 'u', 's1', '{"author": "user"}')$q$);
SELECT pg_temp.without('_append_event_row', $q$SELECT count(*) FROM adk_run('ts_app', 'u', 's1', 'Hello.')$q$);
-- adk_run's session row lock while no job is 'running' on the session
SELECT pg_temp.without('_session_lock_unheld', $q$SELECT count(*) FROM adk_run('ts_app', 'u', 's1', 'Hello.')$q$);
-- and with one (whose worker is gone), the look at who holds it, in a
-- subtransaction of its own: an error there leaves that subtransaction
-- closed (the EXCEPTION block of expect_error rolls back its own, and
-- what follows runs at top level again)
INSERT INTO adk.jobs (invocation_id, app_name, user_id, session_id, message, role_oid, role_name,
                      source, status, worker_pid)
VALUES ('ts-gone', 'ts_app', 'u', 's1', '{}', 10, current_user, 'test', 'running', 2147483646);
SELECT pg_temp.without('_session_lock_holders', $q$SELECT count(*) FROM adk_run('ts_app', 'u', 's1', 'Hello.')$q$);
SELECT pg_temp.without('_session_lock_holders', $q$SELECT adk_append_event('ts_app', 'u', 's1', '{"author": "user"}')$q$);
DELETE FROM adk.jobs WHERE invocation_id = 'ts-gone';
-- the app: and user: states of an event (adk_store_append's merge)
SELECT pg_temp.without('_merge_app_state', $q$SELECT adk_append_event('ts_app', 'u', 's1', '{"author": "user", "actions": {"state_delta": {"app:a": 1}}}')$q$);
SELECT pg_temp.without('_merge_user_state', $q$SELECT adk_append_event('ts_app', 'u', 's1', '{"author": "user", "actions": {"state_delta": {"user:b": 2}}}')$q$);
-- any other writer's row: the events trigger's bump, and its merges
SELECT pg_temp.without('_merge_user_state', $q$INSERT INTO adk.events (id, app_name, user_id, session_id, invocation_id, event_data)
                      VALUES ('e-other', 'ts_app', 'u', 's1', 'e-inv', '{"author": "user", "actions": {"state_delta": {"user:b": 2}}}')$q$);
SELECT pg_temp.without('_place_event_bump', $q$INSERT INTO adk.events (id, app_name, user_id, session_id, invocation_id, event_data)
                      VALUES ('e-other', 'ts_app', 'u', 's1', 'e-inv', '{"author": "user"}')$q$);
SELECT pg_temp.without('_session_compacted', $q$SELECT adk_prompt('ts_app', 'u', 's1')$q$);
SELECT pg_temp.without('_session_history', $q$SELECT adk_prompt('ts_app', 'u', 's1')$q$);
-- a root agent with sub-agents reads who wrote last
SELECT pg_temp.without('_session_recent_authors', $q$SELECT count(*) FROM adk_run('ts_app', 'u', 's1', 'Hello.')$q$);
-- the row lock of a session adk_run has just made
SELECT pg_temp.without('_session_lock', $q$SELECT count(*) FROM adk_run('ts_app', 'u', 's-new', 'Hello.')$q$);
-- every model call's look for a budget that covers it
SELECT pg_temp.without('_budget_any', $q$SELECT count(*) FROM adk_run('ts_app', 'u', 's1', 'Hello.')$q$);
-- the called ones: adk_wait's look at the run, adk_compact's summarizer
SELECT pg_temp.without('_run_status', $q$SELECT count(*) FROM adk_wait('no-such-run')$q$);
SELECT pg_temp.without('_summarizer_model', $q$SELECT adk_compact('ts_app', 'u', 's1')$q$);
-- the sliding window's range: its error is kept on the invocation (by
-- adk._compaction_error_set) and the run goes on
SELECT adk_define_app('ts_comp', 'ts_helper',
                      compaction => '{"compaction_interval": 1, "overlap_size": 0, "summarizer_model": "ts_model"}');
ALTER FUNCTION adk._sliding_window_bounds RENAME TO _moved;
SELECT count(*) AS run_rows FROM adk_run('ts_comp', 'u', 'c1', 'Hello.');
ALTER FUNCTION adk._moved RENAME TO _sliding_window_bounds;
SELECT status, compaction_error FROM adk.invocations WHERE app_name = 'ts_comp';
-- and with neither, the error that keeps it stops the run
ALTER FUNCTION adk._sliding_window_bounds RENAME TO _moved_bounds;
SELECT pg_temp.without('_compaction_error_set', $q$SELECT count(*) FROM adk_run('ts_comp', 'u', 'c2', 'Hello.')$q$);
ALTER FUNCTION adk._moved_bounds RENAME TO _sliding_window_bounds;

-- with them, all of it works
SELECT adk_append_event('ts_app', 'u', 's1', '{"author": "user", "content": {"role": "user", "parts": [{"text": "one"}]}, "actions": {"state_delta": {"app:a": 1, "user:b": 2}}}') ->> 'author' AS appended;
INSERT INTO adk.events (id, app_name, user_id, session_id, invocation_id, event_data)
VALUES ('e-other', 'ts_app', 'u', 's1', 'e-inv', '{"author": "user", "content": {"role": "user", "parts": [{"text": "two"}]}, "actions": {"state_delta": {"user:c": 3}}}');
SELECT (SELECT state FROM adk.app_states WHERE app_name = 'ts_app') AS app_state,
       (SELECT state FROM adk.user_states WHERE app_name = 'ts_app' AND user_id = 'u') AS user_state;
SELECT count(*) AS run_rows FROM adk_run('ts_app', 'u', 's1', 'Hello.');
SELECT count(*) AS run_rows FROM adk_run('ts_app', 'u', 's-new', 'Hello.');
SELECT seq, event_data ->> 'author' AS author, event_data #>> '{content,parts,0,text}' AS text
  FROM adk.events WHERE app_name = 'ts_app' AND session_id = 's1' ORDER BY seq;
SELECT count(*) AS ledger_rows FROM adk.model_calls WHERE app_name = 'ts_app';
SELECT jsonb_array_length(adk_prompt('ts_app', 'u', 's1') -> 'messages') AS prompt_messages;
SELECT count(*) AS run_rows FROM adk_run('ts_comp', 'u', 'c1', 'Again.');
SELECT count(*) AS compactions FROM adk.compactions WHERE app_name = 'ts_comp' AND session_id = 'c1';
SELECT count(*) FILTER (WHERE compaction_error IS NOT NULL) AS compaction_errors
  FROM adk.invocations WHERE app_name = 'ts_comp' AND session_id = 'c1';

-- what a call's SET clause would give is required of the function: an
-- altered one is looked at again at its next use, and refused
CREATE FUNCTION pg_temp.altered(change text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    e text;
BEGIN
    EXECUTE 'ALTER FUNCTION adk._session_history ' || change;
    e := expect_error($q$SELECT adk_prompt('ts_app', 'u', 's1')$q$);
    RAISE EXCEPTION 'undone';
EXCEPTION WHEN raise_exception THEN
    RETURN e;
END $$;
SELECT change, pg_temp.altered(change) AS refused
  FROM (VALUES (1, 'SET search_path = public, pg_catalog'), (2, 'RESET search_path'),
               (3, 'SET work_mem = ''1MB'''), (4, 'SECURITY DEFINER')) v(i, change)
 ORDER BY i;
-- a replaced body is the one that runs, in the same backend
BEGIN;
CREATE OR REPLACE FUNCTION adk._session_history(text, text, text, bigint,
                                                OUT r_event_data jsonb, OUT r_seq bigint, OUT r_id text)
RETURNS SETOF record
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
SELECT e.event_data, e.seq, e.id FROM adk.events e WHERE false
$$;
SELECT jsonb_array_length(adk_prompt('ts_app', 'u', 's1') -> 'messages') AS prompt_messages_no_history;
ROLLBACK;
-- and after the rollback, the installed one again
SELECT jsonb_array_length(adk_prompt('ts_app', 'u', 's1') -> 'messages') AS prompt_messages;

-- clean up
SELECT adk_delete_session('ts_app', 'u', 's1');
SELECT adk_delete_session('ts_app', 'u', 's-new');
SELECT adk_delete_session('ts_comp', 'u', 'c1');
DELETE FROM adk.compactions WHERE app_name = 'ts_comp';
DELETE FROM adk.model_calls WHERE app_name IN ('ts_app', 'ts_comp');
DELETE FROM adk.invocations WHERE app_name IN ('ts_app', 'ts_comp');
DELETE FROM adk.app_states WHERE app_name = 'ts_app';
DELETE FROM adk.user_states WHERE app_name = 'ts_app';
DELETE FROM adk.apps WHERE name IN ('ts_app', 'ts_comp');
DELETE FROM adk.agents WHERE name IN ('ts_agent', 'ts_helper');
DELETE FROM adk.models WHERE name = 'ts_model';
DELETE FROM adk.secrets WHERE name = 'ts-key';
