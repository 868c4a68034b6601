-- History reads in O(new events): a run keeps what it read of
-- its session and reads only the events after the last seq it saw, so a
-- tool loop of 20 model calls over a history of 1,000 events reads the
-- history once, not 20 times.  Counted with pg_stat_xact_user_tables: the
-- rows of adk.events this transaction fetched.
SELECT adk_define_model('h87_m', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'gpt-test', api_key_secret => 'test-key');
CREATE FUNCTION h87_probe() RETURNS jsonb LANGUAGE sql AS $$ SELECT '{"probed": true}'::jsonb $$;
SELECT adk_define_tool('h87_probe()'::regprocedure);
-- every answer becomes a call of h87_probe: a tool loop until max_llm_calls
CREATE FUNCTION h87_loop(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('content', jsonb_build_object('role', 'model', 'parts',
         jsonb_build_array(jsonb_build_object('function_call',
                                              jsonb_build_object('name', 'h87_probe', 'args', '{}'::jsonb))))) $$;
SELECT adk_define_plugin('h87_loop', after_model => 'h87_loop(jsonb)');
SELECT adk_define_agent('h87_agent', model => 'h87_m', tools => ARRAY['h87_probe']);
SELECT adk_define_app('h87_app', 'h87_agent', plugins => ARRAY['h87_loop']);
SELECT adk_create_session('h87_app', 'u', 'h1') IS NOT NULL AS created;
SELECT count(adk_append_event('h87_app', 'u', 'h1',
             jsonb_build_object('author', 'user',
                                'content', jsonb_build_object('role', 'user',
                                                              'parts', jsonb_build_array(jsonb_build_object('text', 'old turn ' || i))))))
  FROM generate_series(1, 1000) i;

BEGIN;
SELECT count(*) AS events FROM adk_run('h87_app', 'u', 'h1', 'go', NULL, '{"max_llm_calls": 20}');
SELECT model_calls, error_code FROM adk.invocations WHERE app_name = 'h87_app' AND session_id = 'h1';
-- 20 calls re-reading 1,000+ events would fetch more than 20,000 rows
-- (adk.events is partitioned: its partitions' counts)
SELECT sum(coalesce(idx_tup_fetch, 0) + coalesce(seq_tup_read, 0)) BETWEEN 1000 AND 2500 AS read_about_once
  FROM pg_stat_xact_user_tables WHERE schemaname = 'adk' AND relname LIKE 'events\_p%';
COMMIT;
-- every request still carried the whole history: the last one too
SELECT jsonb_array_length(request -> 'messages') > 1000 AS whole_history
  FROM adk.model_calls WHERE model = 'h87_m' ORDER BY id DESC LIMIT 1;
-- what the run assembled from its cache is what a fresh read gives: the
-- next request (adk_prompt reads the whole session) is the run's last one
-- plus its last call and that call's response
SELECT jsonb_array_length(adk_prompt('h87_app', 'u', 'h1') -> 'messages')
       - jsonb_array_length(request -> 'messages') AS new_messages,
       (adk_prompt('h87_app', 'u', 'h1') -> 'messages') - (-1) - (-1)
       = request -> 'messages' AS same_prefix
  FROM adk.model_calls WHERE model = 'h87_m' ORDER BY id DESC LIMIT 1;
-- a second run on the session reads it again (a new run object)
SELECT count(*) AS events FROM adk_run('h87_app', 'u', 'h1', 'again', NULL, '{"max_llm_calls": 2}');
SELECT jsonb_array_length(request -> 'messages') AS messages
  FROM adk.model_calls WHERE model = 'h87_m' ORDER BY id DESC LIMIT 1;
