-- Concurrency inside one run: a parallel agent's sub-agents
-- have their model calls in flight at once, and the agents-as-tools of one
-- model response too; SQL tools of that response run one after another;
-- responses are stored in the order of the calls.  The model server
-- answers model "gpt-latency-300" after 300 ms: three calls one after
-- another take 900 ms or more, at once about 300.
SELECT adk_define_model('slow87', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'gpt-latency-300', api_key_secret => 'test-key');
SELECT adk_define_model('fast87', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'gpt-test', api_key_secret => 'test-key');
CREATE TABLE t87 (k text PRIMARY KEY, v timestamptz);
CREATE FUNCTION t87_note(k text) RETURNS jsonb LANGUAGE sql AS $$
  INSERT INTO t87 VALUES (k, clock_timestamp()) RETURNING jsonb_build_object('noted', k) $$;
SELECT adk_define_tool('t87_note(text)'::regprocedure);

-- a parallel agent with three sub-agents: one latency, not three
SELECT adk_define_agent('p87_a', model => 'slow87', instruction => 'You are A.');
SELECT adk_define_agent('p87_b', model => 'slow87', instruction => 'You are B.');
SELECT adk_define_agent('p87_c', model => 'slow87', instruction => 'You are C.');
SELECT adk_define_agent('p87', kind => 'parallel', sub_agents => ARRAY['p87_a', 'p87_b', 'p87_c']);
SELECT adk_define_app('p87_app', 'p87');
CREATE TEMP TABLE clock87 AS SELECT clock_timestamp() AS t0;
SELECT count(*) AS events FROM adk_run('p87_app', 'u', 'par1', 'all three, please');
SELECT clock_timestamp() - t0 < interval '750 ms' AS about_one_latency FROM clock87;
-- each sub-agent's answer on its own branch, each once
SELECT event_data ->> 'author' AS author, event_data ->> 'branch' AS branch, count(*)
  FROM adk.events WHERE session_id = 'par1' AND event_data ->> 'author' <> 'user'
 GROUP BY 1, 2 ORDER BY 1;
SELECT count(*) AS model_calls FROM adk.model_calls
 WHERE invocation_id = (SELECT invocation_id FROM adk.invocations WHERE session_id = 'par1');
-- the next turn: each sub-agent sees the user turns and its own branch
-- only (a branch matches when it is a prefix of the current one)
SELECT count(*) AS events FROM adk_run('p87_app', 'u', 'par1', 'again');
SELECT split_part(request #>> '{messages,0,content}', E'\n', 1) AS system,
       jsonb_array_length(request -> 'messages') AS messages,
       (SELECT count(*) FROM jsonb_array_elements(request -> 'messages') m
         WHERE m ->> 'content' LIKE '%For context%') AS others_seen
  FROM adk.model_calls
 WHERE invocation_id = (SELECT invocation_id FROM adk.invocations WHERE session_id = 'par1'
                         ORDER BY started_at DESC LIMIT 1)
 ORDER BY 1;

-- three agents used as tools in one model response: at once; their
-- responses in the order of the calls; a SQL tool between them runs in
-- the run's transaction
SELECT adk_define_agent('t87_x', model => 'slow87', description => 'Tool agent X.');
SELECT adk_define_agent('t87_y', model => 'slow87', description => 'Tool agent Y.');
SELECT adk_define_agent('t87_z', model => 'slow87', description => 'Tool agent Z.');
SELECT adk_define_agent('t87_boss', model => 'fast87',
                        tools => ARRAY['t87_x', 't87_y', 't87_note', 't87_z']);
SELECT adk_define_app('t87_app', 't87_boss');
TRUNCATE clock87;
INSERT INTO clock87 SELECT clock_timestamp();
SELECT count(*) AS events
  FROM adk_run('t87_app', 'u', 'tools1',
               'call t87_x({"request": "one"}) call t87_y({"request": "two"}) call t87_note({"k": "mid"}) call t87_z({"request": "three"})');
SELECT clock_timestamp() - t0 < interval '750 ms' AS about_one_latency FROM clock87;
SELECT jsonb_path_query_array(event_data, '$.content.parts[*].function_response.name') AS responses,
       jsonb_path_query_array(event_data, '$.content.parts[*].function_response.response.noted') AS noted
  FROM adk.events
 WHERE session_id = 'tools1' AND event_data @? '$.content.parts[*].function_response';
SELECT k FROM t87;
SELECT status, model_calls FROM adk.invocations WHERE session_id = 'tools1';
