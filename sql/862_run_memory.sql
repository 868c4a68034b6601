-- A run's memory is bounded by its current round, not by how many rounds
-- it made: a tool loop of 300 model calls uses about what
-- one of 30 does.  An after_model plugin turns every answer into a call of
-- mem86_probe, a tool that records this backend's memory (the sum over
-- pg_backend_memory_contexts) while the run is in the middle of its work;
-- max_llm_calls ends the loop.
CREATE TABLE mem86 (run text, bytes bigint);
CREATE FUNCTION mem86_probe() RETURNS jsonb LANGUAGE sql AS $$
  INSERT INTO mem86 SELECT current_setting('adk_test.mem86_run'), sum(total_bytes) FROM pg_backend_memory_contexts;
  SELECT '{}'::jsonb $$;
SELECT adk_define_tool('mem86_probe()'::regprocedure);
CREATE FUNCTION mem86_loop(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('content', jsonb_build_object('role', 'model', 'parts',
         jsonb_build_array(jsonb_build_object('function_call',
                                              jsonb_build_object('name', 'mem86_probe', 'args', '{}'::jsonb))))) $$;
SELECT adk_define_plugin('mem86_loop', after_model => 'mem86_loop(jsonb)');
SELECT adk_define_model('mem86_m', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'test-key');
SELECT adk_define_agent('mem86_agent', model => 'mem86_m', tools => ARRAY['mem86_probe']);
SELECT adk_define_app('mem86_app', 'mem86_agent', plugins => ARRAY['mem86_loop'], max_llm_calls => 1000);

SET adk_test.mem86_run = 'short';
SELECT count(*) FROM adk_run('mem86_app', 'u', 'mem-30', 'go', NULL, '{"max_llm_calls": 30}');
SET adk_test.mem86_run = 'long';
SELECT count(*) FROM adk_run('mem86_app', 'u', 'mem-300', 'go', NULL, '{"max_llm_calls": 300}');
RESET adk_test.mem86_run;
SELECT session_id, model_calls, error_code FROM adk.invocations
 WHERE session_id IN ('mem-30', 'mem-300') ORDER BY model_calls;
SELECT run, count(*) AS probes FROM mem86 GROUP BY run ORDER BY run DESC;
-- ten times the rounds, about the same peak: within 3 MB
SELECT (SELECT max(bytes) FROM mem86 WHERE run = 'long') - (SELECT max(bytes) FROM mem86 WHERE run = 'short')
       < 3 * 1024 * 1024 AS bounded;
