-- adk_session_mermaid: a session as a Mermaid sequence diagram -- a tool
-- turn, a transfer, a confirmation pause and its answer, an error, a
-- compaction note; model latency and tokens from the ledger; text
-- flattened, cut and escaped; from_seq; tenancy.  Latencies vary: shown
-- as N ms.
CREATE FUNCTION mm(app text, u text, s text, from_seq bigint DEFAULT NULL) RETURNS SETOF text
LANGUAGE sql AS $$
    SELECT regexp_replace(l, '\d+ ms', 'N ms')
      FROM regexp_split_to_table(adk_session_mermaid(app, u, s, from_seq), E'\n') l $$;
SELECT adk_define_model('mm_model', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'lc-key');
CREATE OR REPLACE FUNCTION get_weather(city text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('city', city, 'forecast', 'sunny') $$;
COMMENT ON FUNCTION get_weather(text) IS 'Current weather for a city.';
SELECT adk_define_tool('get_weather(text)'::regprocedure);
CREATE FUNCTION pay(amount integer) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('paid', amount) $$;
COMMENT ON FUNCTION pay(integer) IS 'Pays.';
SELECT adk_define_tool('pay(integer)'::regprocedure, require_confirmation => true);
SELECT adk_define_agent('mm_helper', model => 'mm_model', tools => ARRAY['get_weather', 'pay'],
                        description => 'Answers weather questions and pays.');
SELECT adk_define_agent('mm_root', model => 'mm_model', sub_agents => ARRAY['mm_helper']);
SELECT adk_define_app('mm_app', 'mm_root');

-- 1. A transfer, then a tool turn in the sub-agent.
SELECT count(*) FROM adk_run('mm_app', 'u', 's1', 'transfer to mm_helper');
SELECT count(*) FROM adk_run('mm_app', 'u', 's1', 'What is the weather in Hangzhou?');
SELECT * FROM mm('mm_app', 'u', 's1');

-- 2. A pause on a confirmation, its answer; text with Mermaid's special
-- characters, a line break and more than 60 characters; an error event.
SELECT count(*) FROM adk_run('mm_app', 'u', 's2', 'transfer to mm_helper');
SELECT count(*) FROM adk_run('mm_app', 'u', 's2', 'call pay({"amount": 5})');
SELECT count(*) FROM adk_run('mm_app', 'u', 's2', adk_function_response(
         (SELECT event_data #>> '{content,parts,0,function_call,id}' FROM adk.events
           WHERE session_id = 's2' AND event_data::text LIKE '%adk_request_confirmation%' ORDER BY seq DESC LIMIT 1),
         'adk_request_confirmation', '{"confirmed": true}'));
SELECT count(*) FROM adk_run('mm_app', 'u', 's2', E'a;b #c <d> 50%\nand a very long tail that goes on and on past sixty characters');
SELECT adk_append_event('mm_app', 'u', 's2', '{"author": "mm_helper", "invocation_id": "inv-err",
         "error_code": "TOOL_ERROR", "error_message": "the tool failed"}') IS NOT NULL AS appended;
SELECT * FROM mm('mm_app', 'u', 's2');
-- from_seq: the last two events only
SELECT * FROM mm('mm_app', 'u', 's2', (SELECT max(seq) - 1 FROM adk.events WHERE session_id = 's2'));

-- 3. A compaction event (as ADK writes it) is a note.
SELECT adk_create_session('mm_app', 'u', 's3') IS NOT NULL AS created;
SELECT adk_append_event('mm_app', 'u', 's3', '{"author": "user", "invocation_id": "i1",
         "content": {"role": "user", "parts": [{"text": "hello"}]}}') IS NOT NULL AS appended;
SELECT adk_append_event('mm_app', 'u', 's3', '{"author": "mm_root", "invocation_id": "i1",
         "content": {"role": "model", "parts": [{"text": "hi"}, {"text": "hidden", "thought": true}]}}') IS NOT NULL AS appended;
SELECT adk_append_event('mm_app', 'u', 's3', '{"author": "user", "invocation_id": "i2",
         "actions": {"compaction": {"start_timestamp": 1, "end_timestamp": 2,
           "compacted_content": {"role": "model", "parts": [{"text": "The user said hello."}]}}}}') IS NOT NULL AS appended;
SELECT * FROM mm('mm_app', 'u', 's3');

-- 4. Errors: no such session; tenancy -- another tenant's session does
-- not exist for the caller.
SELECT expect_error($$SELECT adk_session_mermaid('mm_app', 'u', 'nope')$$);
SELECT adk_define_app('mm_role', 'mm_root', tenancy => 'role');
CREATE ROLE mm_alice IN ROLE adk_user;
CREATE ROLE mm_mallory IN ROLE adk_user;
SET ROLE mm_alice;
SELECT count(*) FROM adk_run('mm_role', 'mm_alice', 'secret', 'my secret is 42');
SELECT count(*) > 2 AS alice_sees FROM mm('mm_role', 'mm_alice', 'secret');
SET ROLE mm_mallory;
SELECT expect_error($$SELECT adk_session_mermaid('mm_role', 'mm_alice', 'secret')$$);
RESET ROLE;
DROP OWNED BY mm_alice, mm_mallory;
DROP ROLE mm_alice, mm_mallory;
