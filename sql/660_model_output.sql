-- Whatever a model sends becomes a stored response or a stored error event
-- with its ledger row, never an ERROR out of adk_run or adk_generate, and
-- never something that breaks the session's later turns.  All three
-- providers, unary and streamed, against the local model server
-- (test/model_server: "@@raw:...@@" sends a bare number, fault-* models).
SELECT adk_define_model('mo_' || p || coalesce('_' || replace(f, '-', '_'), ''), p,
                        current_setting('adk_test.model_url') || CASE p WHEN 'openai' THEN '/v1' ELSE '' END,
                        coalesce('fault-' || f, 'mo-plain'), api_key_secret => 'test-key',
                        options => '{"retries": 0}')
  FROM unnest(ARRAY['openai', 'gemini', 'anthropic']) p,
       unnest(ARRAY[NULL, 'huge-usage', 'redirect', '500', 'empty-finish', 'stream-error-empty']) f;

CREATE FUNCTION mo_take(x jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT jsonb_build_object('got', x) $$;
COMMENT ON FUNCTION mo_take(jsonb) IS 'Returns what it got.';
CREATE FUNCTION mo_deep(x jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT '{"ok": true}'::jsonb $$;
COMMENT ON FUNCTION mo_deep(jsonb) IS 'Takes anything.';
SELECT adk_define_tool('mo_take(jsonb)'::regprocedure), adk_define_tool('mo_deep(jsonb)'::regprocedure);
SELECT adk_define_agent('mo_agent_' || p || f, model => 'mo_' || p || f, tools => ARRAY['mo_take', 'mo_deep']),
       adk_define_app('mo_app_' || p || f, 'mo_agent_' || p || f)
  FROM unnest(ARRAY['openai', 'gemini', 'anthropic']) p, unnest(ARRAY['', '_huge_usage']) f;

CREATE TEMP TABLE mo_modes AS
SELECT p, st FROM unnest(ARRAY['openai', 'gemini', 'anthropic']) p, unnest(ARRAY[false, true]) st;

-- 1. Numbers PostgreSQL's numeric cannot hold (valid JSON): an error event,
-- a ledger row, and the caller's transaction goes on
BEGIN;
CREATE TEMP TABLE mo_business AS SELECT 1 AS kept;
SELECT p, st, r.event_data ->> 'error_code' AS error_code,
       r.event_data ->> 'error_message' AS error_message
  FROM mo_modes, adk_run('mo_app_' || p, 'u', 'num-' || p || st, 'call mo_take({"x": "@@raw:1e-20000@@"})',
                         NULL, jsonb_build_object('stream', st)) r
 WHERE NOT r.partial ORDER BY p, st, r.seq;
SELECT kept FROM mo_business;
COMMIT;
SELECT e.session_id, e.event_data ->> 'error_code' AS stored_error
  FROM adk.events e WHERE e.app_name LIKE 'mo\_app\_%' AND e.session_id LIKE 'num-%'
   AND e.event_data ? 'error_code' ORDER BY e.session_id;
SELECT model, stream, error_code FROM adk.model_calls
 WHERE invocation_id IN (SELECT invocation_id FROM adk.invocations WHERE session_id LIKE 'num-%')
 ORDER BY model, stream;
SELECT count(*) AS invocations, bool_and(error_code IS NOT NULL) AS all_failed_cleanly
  FROM adk.invocations WHERE session_id LIKE 'num-%';
-- the session goes on (Anthropic merges the two user turns, so the model
-- repeats the call and fails the same way)
SELECT p, st, r.event_data #>> '{content,parts,0,text}' AS text, r.event_data ->> 'error_code' AS error_code
  FROM mo_modes, adk_run('mo_app_' || p, 'u', 'num-' || p || st, 'hello', NULL, jsonb_build_object('stream', st)) r
 WHERE NOT r.partial ORDER BY p, st, r.seq;

-- ... and numbers it can hold keep their exact digits: in the stored call,
-- in the tool's argument and in what is sent back to the model
SELECT p, st, r.event_data #>> '{content,parts,0,function_call,args,x,big}' AS big,
       r.event_data #>> '{content,parts,0,function_call,args,x,neg}' AS neg,
       length(r.event_data #>> '{content,parts,0,function_call,args,x,e999}') AS e999_digits,
       r.event_data #>> '{content,parts,0,function_response,response,got,big}' AS tool_got,
       left(r.event_data #>> '{content,parts,0,text}', 70) AS model_answer
  FROM mo_modes,
       adk_run('mo_app_' || p, 'u', 'big-' || p || st,
               'call mo_take({"x": {"big": 123456789012345678901234567890, "e999": "@@raw:1e999@@", "neg": -98765432109876543210}})',
               NULL, jsonb_build_object('stream', st)) r
 WHERE NOT r.partial ORDER BY p, st, r.seq;

-- 2. Nesting: an event holds ADK_MAX_JSON_DEPTH (64) levels, and a model
-- event wraps a call's arguments in five (event, content, parts, part,
-- function_call).  Arguments of 59 levels are stored and the session goes on;
-- 60 are an error event.
CREATE FUNCTION mo_nested(depth int) RETURNS text LANGUAGE sql AS $$
  SELECT repeat('{"a":', depth - 1) || '{}' || repeat('}', depth - 1) $$;
SELECT p, st, r.event_data ->> 'error_code' AS error_code,
       r.event_data #>> '{content,parts,0,function_call,name}' AS call,
       r.event_data #>> '{content,parts,0,function_response,response,ok}' AS tool_ok,
       left(r.event_data #>> '{content,parts,0,text}', 30) AS text
  FROM mo_modes,
       adk_run('mo_app_' || p, 'u', 'deep59-' || p || st, 'call mo_deep({"x": ' || mo_nested(58) || '})',
               NULL, jsonb_build_object('stream', st)) r
 WHERE NOT r.partial ORDER BY p, st, r.seq;
SELECT p, st, r.event_data #>> '{content,parts,0,text}' AS text
  FROM mo_modes, adk_run('mo_app_' || p, 'u', 'deep59-' || p || st, 'hello again', NULL, jsonb_build_object('stream', st)) r
 WHERE NOT r.partial ORDER BY p, st, r.seq;
SELECT p, st, r.event_data ->> 'error_code' AS error_code, r.event_data ->> 'error_message' AS error_message
  FROM mo_modes,
       adk_run('mo_app_' || p, 'u', 'deep60-' || p || st, 'call mo_deep({"x": ' || mo_nested(59) || '})',
               NULL, jsonb_build_object('stream', st)) r
 WHERE NOT r.partial ORDER BY p, st, r.seq;
SELECT p, st, r.event_data #>> '{content,parts,0,text}' AS text, r.event_data ->> 'error_code' AS error_code
  FROM mo_modes, adk_run('mo_app_' || p, 'u', 'deep60-' || p || st, 'hello again', NULL, jsonb_build_object('stream', st)) r
 WHERE NOT r.partial ORDER BY p, st, r.seq;

-- 3. Token counts beyond int64: saturated at 10^12, stored as bigint in the
-- ledger and summed into the invocation
SELECT p, st, r.event_data #>> '{content,parts,0,text}' AS text,
       r.event_data -> 'usage_metadata' ->> 'prompt_token_count' AS prompt_tokens,
       r.event_data -> 'usage_metadata' ->> 'candidates_token_count' AS candidates_tokens
  FROM mo_modes, adk_run('mo_app_' || p || '_huge_usage', 'u', 'huge-' || p || st, 'hi', NULL, jsonb_build_object('stream', st)) r
 WHERE NOT r.partial ORDER BY p, st, r.seq;
SELECT model, stream, input_tokens, output_tokens, pg_typeof(input_tokens) AS type
  FROM adk.model_calls WHERE model LIKE 'mo\_%\_huge\_usage' ORDER BY model, stream;
SELECT session_id, status, input_tokens, output_tokens FROM adk.invocations
 WHERE session_id LIKE 'huge-%' ORDER BY session_id;

-- 4. Error responses: a streamed HTTP error is the provider's own; empty
-- finish reasons and error types never give an empty code; a redirect is
-- reported as one, with its target but not its query (it may hold a key)
CREATE TEMP TABLE mo_q AS SELECT '[{"role": "user", "parts": [{"text": "hi"}]}]'::jsonb AS c;
CREATE FUNCTION mo_final(m text, st boolean) RETURNS jsonb LANGUAGE sql AS $$
  SELECT CASE WHEN st THEN (SELECT r FROM mo_q, adk_generate_stream(m, c) r
                             WHERE NOT coalesce((r ->> 'partial')::boolean, false))
              ELSE (SELECT adk_generate(m, c) FROM mo_q) END $$;
SELECT f, p, st, r ->> 'error_code' AS error_code, left(r ->> 'error_message', 60) AS error_message
  FROM unnest(ARRAY['500', 'empty-finish', 'stream-error-empty']) f, mo_modes, mo_final('mo_' || p || '_' || replace(f, '-', '_'), st) r
 ORDER BY f, p, st;
SELECT p, st, r ->> 'error_code' AS error_code, r ->> 'error_message' AS error_message
  FROM mo_modes, mo_final('mo_' || p || '_redirect', st) r ORDER BY p, st;
-- the ledger has each of them, with the same code and the HTTP status
SELECT model, stream, http_status, error_code, error_message NOT LIKE '%secret-in-location%' AS no_query
  FROM adk.model_calls
 WHERE model ~ '^mo_[a-z]+_(500|empty_finish|stream_error_empty|redirect)$' ORDER BY model, stream;
SELECT count(*) AS empty_codes FROM adk.model_calls WHERE model LIKE 'mo\_%' AND error_code = '';

-- clean up what later files would see
DELETE FROM adk.apps WHERE name LIKE 'mo\_app\_%';
DELETE FROM adk.agents WHERE name LIKE 'mo\_agent\_%';
DELETE FROM adk.tools WHERE name IN ('mo_take', 'mo_deep');
DELETE FROM adk.model_calls WHERE model LIKE 'mo\_%';
DELETE FROM adk.models WHERE name LIKE 'mo\_%';
DROP FUNCTION mo_take(jsonb), mo_deep(jsonb), mo_nested(int), mo_final(text, boolean);
