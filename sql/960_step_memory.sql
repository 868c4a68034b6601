-- A run's memory is bounded by its current step: each step
-- of a run works in a context that is reset when the step returns, so
-- what a step allocates by the way -- plugin calls, SPI results, JSON
-- temporaries, emitted events -- is gone before the next step.
--
-- mem96 records this backend's memory from inside the run (the sum over
-- pg_backend_memory_contexts), and apart the part of it that is the
-- history a run keeps for its prompts (the context "adk_runner history").
CREATE TABLE mem96 (run text, bytes bigint, hist bigint);
CREATE FUNCTION mem96_record() RETURNS void LANGUAGE sql AS $$
  INSERT INTO mem96 SELECT current_setting('adk_test.mem96_run'), sum(total_bytes),
                           coalesce(sum(total_bytes) FILTER (WHERE name = 'adk_runner history'), 0)
    FROM pg_backend_memory_contexts $$;
SELECT adk_define_model('mem96_m', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'test-key');

-- 1. A tool loop of 300 model calls uses about what one of 3 does: an
-- after_model plugin turns every answer into a call of mem96_probe, which
-- records the memory; max_llm_calls ends the loop.
CREATE FUNCTION mem96_probe() RETURNS jsonb LANGUAGE sql AS $$
  SELECT mem96_record(); SELECT '{}'::jsonb $$;
SELECT adk_define_tool('mem96_probe()'::regprocedure);
CREATE FUNCTION mem96_call(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('content', jsonb_build_object('role', 'model', 'parts',
         jsonb_build_array(jsonb_build_object('function_call',
                                              jsonb_build_object('name', 'mem96_probe', 'args', '{}'::jsonb))))) $$;
SELECT adk_define_plugin('mem96_call', after_model => 'mem96_call(jsonb)');
SELECT adk_define_agent('mem96_tooler', model => 'mem96_m', tools => ARRAY['mem96_probe']);
SELECT adk_define_app('mem96_tools', 'mem96_tooler', plugins => ARRAY['mem96_call'], max_llm_calls => 1000);
SET adk_test.mem96_run = 'calls-3';
-- (adk_run in the select list: in FROM, PostgreSQL would keep every row
-- returned in a tuplestore until the end, which is the query's memory)
SELECT count(*) FROM (SELECT adk_run('mem96_tools', 'u', 'm96-3', 'go', NULL, '{"max_llm_calls": 3}')) r;
SET adk_test.mem96_run = 'calls-300';
SELECT count(*) FROM (SELECT adk_run('mem96_tools', 'u', 'm96-300', 'go', NULL, '{"max_llm_calls": 300}')) r;

-- 2. Steps that make no model call: a loop agent of 1,000 iterations whose
-- sub-agent is answered by before_agent (a plugin call, an event stored and
-- returned per iteration, no round) uses about what 10 iterations do.
CREATE FUNCTION mem96_answer(ctx jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
  IF ctx ->> 'agent' NOT LIKE 'mem96_leaf%' THEN
    RETURN NULL;
  END IF;
  PERFORM mem96_record();
  RETURN jsonb_build_object('role', 'model', 'parts',
                            jsonb_build_array(jsonb_build_object('text', repeat('x', 2000))));
END $$;
SELECT adk_define_plugin('mem96_answer', before_agent => 'mem96_answer(jsonb)');
SELECT adk_define_agent('mem96_leaf10', model => 'mem96_m');
SELECT adk_define_agent('mem96_leaf1000', model => 'mem96_m');
SELECT adk_define_agent('mem96_loop10', kind => 'loop', sub_agents => ARRAY['mem96_leaf10'], max_iterations => 10);
SELECT adk_define_agent('mem96_loop1000', kind => 'loop', sub_agents => ARRAY['mem96_leaf1000'], max_iterations => 1000);
SELECT adk_define_app('mem96_wf10', 'mem96_loop10', plugins => ARRAY['mem96_answer']);
SELECT adk_define_app('mem96_wf1000', 'mem96_loop1000', plugins => ARRAY['mem96_answer']);
SET adk_test.mem96_run = 'loop-10';
SELECT count(*) FROM (SELECT adk_run('mem96_wf10', 'u', 'm96-l10', 'go')) r;
SET adk_test.mem96_run = 'loop-1000';
SELECT count(*) FROM (SELECT adk_run('mem96_wf1000', 'u', 'm96-l1000', 'go')) r;
RESET adk_test.mem96_run;

SELECT run, count(*) AS probes FROM mem96 GROUP BY run ORDER BY run;
-- a hundred times the model calls, about the same peak but for the
-- history the run keeps for its prompts: within 2 MB.  What else grows is
-- what the run sends -- the request memo holds the last request and its
-- pieces (64 kB at 300 calls; run.c's blocks of at most 64 kB keep the
-- context about what it uses) -- and the transaction's bookkeeping of 600
-- inserted events: measured, 0.55 MB on PostgreSQL 15, 0.97 MB on 18.
SELECT (SELECT max(bytes - hist) FROM mem96 WHERE run = 'calls-300') -
       (SELECT max(bytes - hist) FROM mem96 WHERE run = 'calls-3') < 2 * 1024 * 1024 AS tool_loop_bounded;
-- The history grows with the events, two per call, and only with them
-- (prompt_memo.c): each event's jsonb (rounded up to a power of two by the
-- allocator), what it adds to a request, its parts' ids.  Measured, 4.3
-- times the events' jsonb at 300 calls (1.3 MB for 602 events).
SELECT (SELECT max(hist) FROM mem96 WHERE run = 'calls-300') <
       5 * (SELECT sum(pg_column_size(e))
              FROM jsonb_array_elements(adk_get_session('mem96_tools', 'u', 'm96-300') -> 'events') e)
       AS history_as_the_events;
-- a hundred times the steps, about the same peak: within 2 MB (before the
-- step context, each iteration kept its plugin call, its event and its
-- function cache in the run's memory: about 60 MB at 1,000).  What does
-- grow is the transaction's own bookkeeping of 1,000 inserted events
-- (pending notifications, combo command ids), which a job worker's
-- per-step commits release.
SELECT (SELECT max(bytes) FROM mem96 WHERE run = 'loop-1000') -
       (SELECT max(bytes) FROM mem96 WHERE run = 'loop-10') < 2 * 1024 * 1024 AS step_loop_bounded;
