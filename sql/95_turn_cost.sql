-- What one weather turn costs in function calls and rows (issue 12,
-- Benchmark: the runner's own time per turn).  Every write still goes
-- through the executor (pgstat counts it per table), but nothing runs
-- that the turn does not need: with no budget defined for the app, the
-- budget functions are not called at all; with one, both are, once per
-- model call.
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
CREATE FUNCTION tc_counts() RETURNS TABLE (what text, name text, n bigint) LANGUAGE sql AS $$
  SELECT 'calls', funcname::text, calls FROM pg_stat_xact_user_functions
   WHERE schemaname = 'adk'
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
RESET track_functions;
