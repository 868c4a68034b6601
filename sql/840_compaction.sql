-- Compaction (docs/compaction.md): config validation, the sliding window, tail
-- retention, ranges that never split a call from its response, the
-- lock-checked append, and adk_prompt, against the local model server.
SELECT adk_set_secret('comp-key', 'sk-comp-0123456789', ARRAY['127.0.0.1']);
SELECT adk_define_model('comp_local', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'comp-key');
-- the summarizer: answers are cut at 4 x 30 characters
SELECT adk_define_model('comp_summ', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-summ',
                        api_key_secret => 'comp-key', options => '{"max_output_tokens": 30}');
SELECT adk_define_model('comp_broken', 'openai', current_setting('adk_test.model_url') || '/v1', 'fault-500',
                        api_key_secret => 'comp-key', options => '{"retries": 0}');
SELECT adk_define_agent('comp_agent', model => 'comp_local', instruction => 'Be brief.');
SELECT adk_define_agent('comp_inner', model => 'comp_local');
SELECT adk_define_agent('comp_seq', kind => 'sequential', sub_agents => ARRAY['comp_inner']);

-- Config validation (000 §四.4.6.1): each case a clear 22023.
SELECT c, expect_error(format('SELECT adk_define_app(%L, %L, compaction => %L)', 'comp_bad', 'comp_agent', c))
  FROM unnest(ARRAY[
    '[1]',
    '{}',
    '{"summarizer_model": "comp_summ"}',
    '{"compaction_interval": -1}',
    '{"compaction_interval": 2, "overlap_size": -1}',
    '{"token_threshold": -5, "event_retention_size": 2}',
    '{"overlap_size": 1}',
    '{"compaction_interval": 0, "overlap_size": 2}',
    '{"token_threshold": 1000}',
    '{"token_threshold": 1000, "event_retention_size": 0}',
    '{"event_retention_size": 3}',
    '{"compaction_interval": "2"}',
    '{"compaction_interval": 1.5}',
    '{"compaction_interval": null}',
    '{"compaction_interval": 2, "summarizer_model": 7}',
    '{"compaction_interval": 2, "summarizer_model": "no_such_model"}',
    '{"compaction_interval": 2, "compaction_intervall": 2}'
  ]::jsonb[]) c;
-- a workflow root needs its own summarizer
SELECT expect_error($q$SELECT adk_define_app('comp_bad', 'comp_seq', compaction => '{"compaction_interval": 2}')$q$);
SELECT adk_define_app('comp_wf', 'comp_seq', compaction => '{"compaction_interval": 2, "summarizer_model": "comp_summ"}');
-- the same rules for plain INSERT and UPDATE
SELECT expect_error($q$INSERT INTO adk.apps (name, root_agent, compaction) VALUES ('comp_bad', 'comp_agent', '{"overlap_size": 1}')$q$);
SELECT expect_error($q$UPDATE adk.apps SET compaction = '{"event_retention_size": 1}' WHERE name = 'comp_wf'$q$);
SELECT expect_error($q$UPDATE adk.apps SET compaction = '{"compaction_interval": 2}' WHERE name = 'comp_wf'$q$);
-- valid: either strategy, or both
SELECT adk_define_app('comp_ok1', 'comp_agent', compaction => '{"compaction_interval": 3}');
SELECT adk_define_app('comp_ok2', 'comp_agent', compaction => '{"token_threshold": 100, "event_retention_size": 2}');
SELECT adk_define_app('comp_ok3', 'comp_agent', compaction => '{"compaction_interval": 3, "overlap_size": 1, "token_threshold": 100, "event_retention_size": 2, "summarizer_model": "comp_summ"}');
SELECT count(*) AS bad_apps FROM adk.apps WHERE name = 'comp_bad';

-- Helpers: run one turn; the compactions of a session; its prompt's
-- messages, shortened.
CREATE FUNCTION comp_turn(app text, s text, msg text) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM adk_run(app, 'u', s, msg) $$;
CREATE FUNCTION comp_ranges(app text, s text)
RETURNS TABLE (seq bigint, kind text, from_seq bigint, to_seq bigint, seen_seq bigint, covered_to bigint)
LANGUAGE sql AS $$
  SELECT c.seq, c.kind, c.from_seq, c.to_seq, c.seen_seq, c.covered_to FROM adk.compactions c
   WHERE c.app_name = app AND c.session_id = s ORDER BY c.seq $$;
CREATE FUNCTION comp_prompt(app text, s text)
RETURNS TABLE (n bigint, role text, content text)
LANGUAGE sql AS $$
  SELECT m.n, m.msg ->> 'role', left(m.msg ->> 'content', 48)
    FROM jsonb_array_elements(adk_prompt(app, 'u', s) -> 'messages') WITH ORDINALITY AS m(msg, n)
   ORDER BY m.n $$;

-- Sliding window: every 2 invocations, with 1 earlier one as overlap.
SELECT adk_define_app('comp_sw', 'comp_agent',
                      compaction => '{"compaction_interval": 2, "overlap_size": 1, "summarizer_model": "comp_summ"}');
SELECT comp_turn('comp_sw', 'sw', 'hello one');
SELECT * FROM comp_ranges('comp_sw', 'sw');
SELECT * FROM comp_prompt('comp_sw', 'sw');
SELECT comp_turn('comp_sw', 'sw', 'hello two');
-- after the 2nd invocation: seq 1..4 (invocations 1-2), event at seq 5
SELECT * FROM comp_ranges('comp_sw', 'sw');
SELECT seq, event_data ->> 'author' AS author, event_data -> 'content' AS content,
       jsonb_object_keys(event_data #> '{actions,compaction}') AS compaction_keys
  FROM adk.events WHERE app_name = 'comp_sw' AND session_id = 'sw' AND seq = 5;
-- ADK's record: timestamps (epoch ms) of the first and last covered events
SELECT (c.event_data #> '{actions,compaction,start_timestamp}') = (f.event_data -> 'timestamp') AS start_ok,
       (c.event_data #> '{actions,compaction,end_timestamp}') = (t.event_data -> 'timestamp') AS end_ok,
       c.event_data #>> '{actions,compaction,compacted_content,role}' AS summary_role,
       left(c.event_data #>> '{actions,compaction,compacted_content,parts,0,text}', 60) AS summary
  FROM adk.events c, adk.events f, adk.events t
 WHERE c.session_id = 'sw' AND c.seq = 5 AND f.session_id = 'sw' AND f.seq = 1
   AND t.session_id = 'sw' AND t.seq = 4 AND c.app_name = 'comp_sw' AND f.app_name = 'comp_sw' AND t.app_name = 'comp_sw';
-- the summarizer saw the transcript of seq 1..4
SELECT request #>> '{messages,0,content}' LIKE '%user: hello one%comp_agent: echo: hello two%' AS transcript
  FROM adk.model_calls WHERE model = 'comp_summ' ORDER BY id DESC LIMIT 1;
SELECT * FROM comp_prompt('comp_sw', 'sw');
SELECT comp_turn('comp_sw', 'sw', 'hello three');
SELECT * FROM comp_ranges('comp_sw', 'sw');
SELECT comp_turn('comp_sw', 'sw', 'hello four');
-- after the 4th: invocations 3-4 plus invocation 2 as overlap, seq 3..9
SELECT * FROM comp_ranges('comp_sw', 'sw');
SELECT * FROM comp_prompt('comp_sw', 'sw');
SELECT comp_turn('comp_sw', 'sw', 'hello five');
SELECT * FROM comp_prompt('comp_sw', 'sw');
-- a rolling summary of everything: the earlier ones, wholly inside it,
-- are dropped from the prompt
SELECT adk_compact('comp_sw', 'u', 'sw') AS compaction_seq;
SELECT * FROM comp_ranges('comp_sw', 'sw');
SELECT * FROM comp_prompt('comp_sw', 'sw');
SELECT count(*) FILTER (WHERE compaction_error IS NOT NULL) AS compaction_errors
  FROM adk.invocations WHERE app_name = 'comp_sw';

-- Tail retention: over 60 tokens, everything but the last 2 events goes
-- into a rolling summary before the model call; that invocation skips
-- the sliding window (every 3 invocations here).
SELECT adk_define_app('comp_tail', 'comp_agent',
                      compaction => '{"compaction_interval": 3, "token_threshold": 60, "event_retention_size": 2, "summarizer_model": "comp_summ"}');
SELECT i, comp_turn('comp_tail', 'tail', format('turn %s: %s', i, repeat('words ', 12)))
  FROM generate_series(1, 7) i;
SELECT * FROM comp_ranges('comp_tail', 'tail');
-- every rolling summary after the first of this session was seeded with
-- the previous one
SELECT count(*) AS seeded FROM adk.model_calls
 WHERE model = 'comp_summ' AND request #>> '{messages,0,content}' LIKE '%Summary of the conversation before this part:%'
   AND invocation_id IN (SELECT invocation_id FROM adk.invocations WHERE app_name = 'comp_tail' AND session_id = 'tail');
SELECT count(*) AS tail_summaries FROM adk.compactions
 WHERE app_name = 'comp_tail' AND session_id = 'tail' AND kind = 'tail_retention';
SELECT * FROM comp_prompt('comp_tail', 'tail');
SELECT count(*) FILTER (WHERE compaction_error IS NOT NULL) AS compaction_errors
  FROM adk.invocations WHERE app_name = 'comp_tail';

-- A failed invocation is not compacted.
SELECT adk_define_agent('comp_failing', model => 'comp_broken');
SELECT adk_define_app('comp_fail', 'comp_failing', compaction => '{"compaction_interval": 1, "summarizer_model": "comp_summ"}');
SELECT comp_turn('comp_fail', 'f', 'hello');
SELECT status, compaction_error FROM adk.invocations WHERE app_name = 'comp_fail';
SELECT count(*) AS compactions FROM adk.compactions WHERE app_name = 'comp_fail';

-- A failing summarizer does not fail the run: recorded on the invocation.
SELECT adk_define_app('comp_badsumm', 'comp_agent', compaction => '{"compaction_interval": 1, "summarizer_model": "comp_broken"}');
SELECT comp_turn('comp_badsumm', 'b', 'hello');
SELECT status, compaction_error FROM adk.invocations WHERE app_name = 'comp_badsumm';
SELECT count(*) AS compactions FROM adk.compactions WHERE app_name = 'comp_badsumm';

-- A pending long-running call is never covered, nor split from its
-- response: the range stops before it until the user answers it.
CREATE FUNCTION comp_approve(amount integer) RETURNS jsonb LANGUAGE sql
  AS $$ SELECT jsonb_build_object('status', 'pending', 'amount', amount) $$;
SELECT adk_define_tool('comp_approve(integer)'::regprocedure, long_running => true);
SELECT adk_define_agent('comp_lr_agent', model => 'comp_local', tools => ARRAY['comp_approve']);
SELECT adk_define_app('comp_lr', 'comp_lr_agent', compaction => '{"compaction_interval": 1, "summarizer_model": "comp_summ"}');
SELECT comp_turn('comp_lr', 'lr', 'please call comp_approve({"amount": 5})');
SELECT seq, author, function_calls, function_responses, text FROM adk.event_log
 WHERE app_name = 'comp_lr' AND session_id = 'lr' ORDER BY seq;
SELECT * FROM comp_ranges('comp_lr', 'lr');
-- by hand: a call with no response at all
SELECT adk_create_session('comp_lr', 'u', 'hand') IS NOT NULL AS created;
SELECT adk_append_event('comp_lr', 'u', 'hand', '{"author": "user", "content": {"role": "user", "parts": [{"text": "pay"}]}}') IS NOT NULL AS appended;
SELECT adk_append_event('comp_lr', 'u', 'hand', '{"author": "comp_lr_agent", "long_running_tool_ids": ["c-1"], "content": {"role": "model", "parts": [{"function_call": {"id": "c-1", "name": "comp_approve", "args": {"amount": 1}}}]}}') IS NOT NULL AS appended;
SELECT adk_append_event('comp_lr', 'u', 'hand', '{"author": "comp_lr_agent", "content": {"role": "model", "parts": [{"text": "waiting"}]}}') IS NOT NULL AS appended;
SELECT p ->> 'from_seq' AS from_seq, p ->> 'to_seq' AS to_seq FROM adk_compaction_read('comp_lr', 'u', 'hand', 1, 3) p;
-- answered by the user: now it may be covered
SELECT adk_append_event('comp_lr', 'u', 'hand', '{"author": "user", "content": {"role": "user", "parts": [{"function_response": {"id": "c-1", "name": "comp_approve", "response": {"ok": true}}}]}}') IS NOT NULL AS appended;
SELECT p ->> 'from_seq' AS from_seq, p ->> 'to_seq' AS to_seq FROM adk_compaction_read('comp_lr', 'u', 'hand', 1, 4) p;
-- a range may not start between a call and its response
SELECT p ->> 'from_seq' AS from_seq, p ->> 'to_seq' AS to_seq FROM adk_compaction_read('comp_lr', 'u', 'hand', 3, 4) p;

-- The lock-checked append: a plan read before another compaction was
-- appended over part of its range is refused, with a warning.
SELECT adk_create_session('comp_sw', 'u', 'race') IS NOT NULL AS created;
SELECT count(*) FROM (SELECT adk_append_event('comp_sw', 'u', 'race',
         jsonb_build_object('author', 'user', 'content', jsonb_build_object('role', 'user', 'parts', jsonb_build_array(jsonb_build_object('text', 'm' || i)))))
       FROM generate_series(1, 4) i) x;
CREATE TEMP TABLE plans AS
SELECT 'a' AS who, adk_compaction_read('comp_sw', 'u', 'race', 1, 2) AS plan
UNION ALL SELECT 'b', adk_compaction_read('comp_sw', 'u', 'race', 2, 3)
UNION ALL SELECT 'c', adk_compaction_read('comp_sw', 'u', 'race', 4, 4);
SELECT adk_compaction_append('comp_sw', 'u', 'race', plan, 'summary a') AS seq FROM plans WHERE who = 'a';
SELECT adk_compaction_append('comp_sw', 'u', 'race', plan, 'summary b') AS seq FROM plans WHERE who = 'b';
SELECT adk_compaction_append('comp_sw', 'u', 'race', plan, 'summary c') AS seq FROM plans WHERE who = 'c';
SELECT * FROM comp_ranges('comp_sw', 'race');
-- planned overlap: a plan read after "a" was appended may overlap it
SELECT adk_compaction_append('comp_sw', 'u', 'race', adk_compaction_read('comp_sw', 'u', 'race', 2, 3), 'summary d') AS seq;
SELECT * FROM comp_ranges('comp_sw', 'race');
SELECT expect_error($q$SELECT adk_compaction_append('comp_sw', 'u', 'race', '{"from_seq": 3}', 'x')$q$);
SELECT expect_error($q$SELECT adk_compaction_append('comp_sw', 'u', 'race', adk_compaction_read('comp_sw', 'u', 'race', 1, 1), '')$q$);

-- adk_prompt: the exact request body, key never in it
SELECT adk_prompt('comp_sw', 'u', 'race') ->> 'model' AS model,
       adk_prompt('comp_sw', 'u', 'race')::text LIKE '%sk-comp%' AS has_key,
       jsonb_array_length(adk_prompt('comp_sw', 'u', 'race') -> 'messages') AS messages;
SELECT expect_error($q$SELECT adk_prompt('comp_sw', 'u', 'no-such-session')$q$);
SELECT expect_error($q$SELECT adk_prompt('comp_sw', 'u', 'race', 'nobody')$q$);
-- the body adk_prompt shows is the body the next call sends (plus the
-- new message)
SELECT adk_create_session('comp_ok1', 'u', 'same') IS NOT NULL AS created;
SELECT adk_append_event('comp_ok1', 'u', 'same', '{"author": "user", "content": {"role": "user", "parts": [{"text": "first"}]}}') IS NOT NULL AS appended;
CREATE TEMP TABLE before_call AS SELECT adk_prompt('comp_ok1', 'u', 'same') AS body;
SELECT comp_turn('comp_ok1', 'same', 'second');
SELECT c.request - 'messages' = b.body - 'messages' AS same_fields,
       c.request -> 'messages' = (b.body -> 'messages') || '[{"role": "user", "content": "second"}]' AS same_messages
  FROM before_call b, (SELECT request FROM adk.model_calls WHERE model = 'comp_local' ORDER BY id DESC LIMIT 1) c;
