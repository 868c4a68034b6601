-- What one weather turn costs in function calls and rows (the
-- runner's own time per turn, test/bench/README.md).  Every write still goes
-- through the executor (pgstat counts it per table), but nothing runs
-- that the turn does not need: with no budget defined for the app, only
-- the check that none applies is read (adk._budget_any's body, a
-- statement on the view adk._budget_limits run by adk_spi_call: no
-- function call); with one,
-- _budget_take and _budget_charge are called, once per model call, and each
-- notes what it charged for the budget (_budget_spent: kept if the
-- transaction rolls back) after _budget_take has counted the charges of
-- rolled-back calls (_budget_pending).  The runner's own statements are
-- adk._ functions too (sql/install/87_runner_statements.sql): the
-- invocation's row; a span is an INSERT into the view adk._span_rows (no
-- function call: written rows only); the app's built-in tool settings are
-- read with its definitions (by the warm-up turn).  Each event's insert
-- calls the events' two trigger functions (C): _events_before_insert, and
-- _events_after_rewind, which returns at once for an event that is no
-- rewind (a WHEN clause cost more: src/store/rewound_trigger.c).
SELECT adk_set_secret('tc-key', 'sk-tc', ARRAY['127.0.0.1']);
SELECT adk_define_model('tc_model', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'tc-key');
CREATE FUNCTION tc_weather(city text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('city', city, 'forecast', 'sunny', 'temperature_c', 25) $$;
SELECT adk_define_tool('tc_weather(text)'::regprocedure, name => 'get_weather');
SELECT adk_define_agent('tc_agent', model => 'tc_model', instruction => 'You answer weather questions.',
                        tools => ARRAY['get_weather']);
SELECT adk_define_app('tc_app', 'tc_agent');
SELECT adk_create_session('tc_app', 'u', 's1') IS NOT NULL AS created;
SELECT adk_create_session('tc_app', 'u', 's2') IS NOT NULL AS created;
SELECT adk_create_session('tc_app', 'u', 's3') IS NOT NULL AS created;
SET track_functions = 'all';

-- what the current transaction has called and written so far (pending
-- statistics: deterministic inside one transaction)
-- (but adk._budget_period_start, an IMMUTABLE helper the budget charge's
-- UPDATE calls in its join condition: how often depends on the join plan
-- the planner picks for the table sizes the other tests left, 4 or 6)
CREATE FUNCTION tc_counts() RETURNS TABLE (what text, name text, n bigint) LANGUAGE sql AS $$
  SELECT 'calls', funcname::text, calls FROM pg_stat_xact_user_functions
   WHERE schemaname = 'adk' AND funcname <> '_budget_period_start'
  UNION ALL
  SELECT 'rows written', relname::text, n_tup_ins + n_tup_upd + n_tup_del FROM pg_stat_xact_user_tables
   WHERE schemaname = 'adk' $$;
CREATE TEMP TABLE tc_before (what text, name text, n bigint);
CREATE FUNCTION tc_turn(session text) RETURNS TABLE (what text, name text, n bigint) LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM tc_before;
  INSERT INTO tc_before SELECT * FROM tc_counts();
  PERFORM count(*) FROM adk_run('tc_app', 'u', session, 'What is the weather in Hangzhou?');
  RETURN QUERY
    SELECT a.what, a.name, a.n - coalesce(b.n, 0) FROM tc_counts() a
      LEFT JOIN tc_before b ON b.what = a.what AND b.name = a.name
     WHERE a.n - coalesce(b.n, 0) > 0
     ORDER BY 1, 2;
END $$;

-- a warm-up turn (definitions, plans), then the turn we count
SELECT count(*) FROM adk_run('tc_app', 'u', 's1', 'What is the weather in Hangzhou?');
SELECT * FROM tc_turn('s2');
SELECT author, function_calls IS NOT NULL AS call, function_responses IS NOT NULL AS response
  FROM adk.event_log WHERE app_name = 'tc_app' AND session_id = 's2' ORDER BY seq;

-- with a budget the app's model calls are taken and charged
INSERT INTO adk.budgets (app_name, period, max_tokens) VALUES ('tc_app', 'day', 1000000);
SELECT * FROM tc_turn('s3');
SELECT model_calls, tokens > 0 AS charged FROM adk.budget_spend s JOIN adk.budgets b ON b.id = s.budget_id
 WHERE b.app_name = 'tc_app';
DELETE FROM adk.budgets WHERE app_name = 'tc_app';
-- budgets that do not cover the turn: one without a limit, one of another
-- user, one of another role: nothing is taken or charged
SELECT adk_create_session('tc_app', 'u', 's4') IS NOT NULL AS created;
INSERT INTO adk.budgets (app_name, period) VALUES ('tc_app', 'day');
INSERT INTO adk.budgets (app_name, user_id, period, max_tokens) VALUES ('tc_app', 'someone_else', 'day', 10);
INSERT INTO adk.budgets (app_name, role_name, period, max_model_calls) VALUES ('tc_app', 'no_such_role', 'day', 1);
SELECT * FROM tc_turn('s4') WHERE name LIKE '\_budget%';
SELECT count(*) AS spent FROM adk.budget_spend s JOIN adk.budgets b ON b.id = s.budget_id
 WHERE b.app_name = 'tc_app';
DELETE FROM adk.budgets WHERE app_name = 'tc_app';
RESET track_functions;

-- adk.spans keeps its row rules in one C check (fewer expressions for the
-- executor to read at every insert): ids lower-case hex of their length,
-- trace and span id not all zeros, a known kind and status code,
-- attributes an object, events an array; NULL where the column allows it.
SELECT t, s, p, k, c, a::text, e::text, adk._span_row_ok(t, s, p, k, c, a, e) AS ok
  FROM (VALUES
    ('0123456789abcdef0123456789abcdef', '0123456789abcdef', NULL, 'INTERNAL', 'OK', '{}'::jsonb, '[]'::jsonb),
    ('0123456789abcdef0123456789abcdef', '0123456789abcdef', '0000000000000000', 'CLIENT', 'UNSET', '{"a": 1}', '[{}]'),
    ('0123456789abcdef0123456789abcdeF', '0123456789abcdef', NULL, 'INTERNAL', 'OK', '{}', '[]'),
    ('0123456789abcdef0123456789abcde', '0123456789abcdef', NULL, 'INTERNAL', 'OK', '{}', '[]'),
    ('00000000000000000000000000000000', '0123456789abcdef', NULL, 'INTERNAL', 'OK', '{}', '[]'),
    ('0123456789abcdef0123456789abcdef', '0000000000000000', NULL, 'INTERNAL', 'OK', '{}', '[]'),
    ('0123456789abcdef0123456789abcdef', '0123456789abcdef', '0123456789abcdeg', 'INTERNAL', 'OK', '{}', '[]'),
    ('0123456789abcdef0123456789abcdef', '0123456789abcdef', NULL, 'internal', 'OK', '{}', '[]'),
    ('0123456789abcdef0123456789abcdef', '0123456789abcdef', NULL, 'SERVER', 'FAILED', '{}', '[]'),
    ('0123456789abcdef0123456789abcdef', '0123456789abcdef', NULL, 'PRODUCER', 'ERROR', '[]', '[]'),
    ('0123456789abcdef0123456789abcdef', '0123456789abcdef', NULL, 'CONSUMER', 'ERROR', '{}', '{}'),
    ('0123456789abcdef0123456789abcdef', '0123456789abcdef', NULL, 'CONSUMER', 'ERROR', '{}', '"x"'),
    (NULL, NULL, NULL, NULL, NULL, NULL, NULL)) v(t, s, p, k, c, a, e);
\set VERBOSITY terse
INSERT INTO adk.spans (trace_id, span_id, name, kind, start_time, end_time)
VALUES ('0123456789abcdef0123456789abcdef', '0123456789abcdef', 'x', 'LOCAL', now(), now());
\set VERBOSITY default

-- An appended event is built with the time it is likely to get (1 ms after
-- the last event this backend placed in the session); whatever comes in
-- between -- a rolled-back append, another session's event, an event
-- written straight into adk.events, a time of its own -- every stored
-- event's "timestamp" is its row's time, 1 ms or more after the previous.
SELECT adk_create_session('tc_app', 'u', 't1') IS NOT NULL AS created;
SELECT adk_create_session('tc_app', 'u', 't2') IS NOT NULL AS created;
BEGIN;
SELECT count(*) FROM (SELECT adk_append_event('tc_app', 'u', 't1', '{"author": "user"}') FROM generate_series(1, 5)) x;
ROLLBACK;
SELECT count(*) FROM (SELECT adk_append_event('tc_app', 'u', 't1', '{"author": "user"}') FROM generate_series(1, 3)) x;
SELECT adk_append_event('tc_app', 'u', 't2', '{"author": "user"}') IS NOT NULL AS appended;
SELECT adk_append_event('tc_app', 'u', 't1', '{"author": "user", "timestamp": 1000}') IS NOT NULL AS appended;
INSERT INTO adk.events (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data)
VALUES ('tc-direct', 'tc_app', 'u', 't1', '', now(), '{"author": "user"}');
SELECT adk_append_event('tc_app', 'u', 't1', '{"author": "user"}') IS NOT NULL AS appended;
SELECT adk_append_event('tc_app', 'u', 't1', '{"author": "user", "timestamp": 253402300799000}') -> 'timestamp' AS far;
SELECT session_id, count(*) AS events,
       bool_and((event_data ->> 'timestamp')::bigint = (extract(epoch FROM "timestamp") * 1000)::bigint) AS same_time,
       bool_and(gap IS NULL OR gap >= interval '1 ms') AS ordered
  FROM (SELECT *, "timestamp" - lag("timestamp") OVER (PARTITION BY session_id ORDER BY seq) AS gap
          FROM adk.events WHERE app_name = 'tc_app' AND session_id IN ('t1', 't2')) e
 GROUP BY 1 ORDER BY 1;
