-- adk_generate / adk_generate_stream against the local model server,
-- for each provider's real wire format.
SELECT adk_define_model(p, p, current_setting('adk_test.model_url') || CASE p WHEN 'openai' THEN '/v1' ELSE '' END,
                        p || '-test', api_key_secret => 'test-key')
  FROM unnest(ARRAY['openai', 'gemini', 'anthropic']) p;

CREATE TEMP TABLE weather_tools AS
SELECT '[{"name": "get_weather", "description": "Weather for a city.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]'::jsonb AS tools;

-- a plain answer: text, usage, finish reason, model version
SELECT p, r -> 'content' AS content, r ->> 'finish_reason' AS finish, r ->> 'model_version' AS version,
       r #> '{usage_metadata,prompt_token_count}' AS prompt_tokens,
       r #> '{usage_metadata,candidates_token_count}' AS output_tokens
  FROM unnest(ARRAY['openai', 'gemini', 'anthropic']) p,
       adk_generate(p, '[{"role": "user", "parts": [{"text": "hello there"}]}]') r;

-- a function call, always with an id (the provider's, or adk-<uuid>)
SELECT p, r #>> '{content,parts,0,function_call,name}' AS call,
       r #> '{content,parts,0,function_call,args}' AS args,
       r #>> '{content,parts,0,function_call,id}' ~ '^(call_|toolu_|adk-[0-9a-f-]{36}$)' AS has_id
  FROM unnest(ARRAY['openai', 'gemini', 'anthropic']) p, weather_tools,
       adk_generate(p, '[{"role": "user", "parts": [{"text": "What is the weather in Hangzhou?"}]}]', tools) r;

-- the function response reaches the model, which answers with it
SELECT p, r #>> '{content,parts,0,text}' AS answer
  FROM unnest(ARRAY['openai', 'gemini', 'anthropic']) p, weather_tools,
       adk_generate(p, '[
         {"role": "user", "parts": [{"text": "What is the weather in Hangzhou?"}]},
         {"role": "model", "parts": [{"function_call": {"id": "call-1", "name": "get_weather", "args": {"city": "Hangzhou"}}}]},
         {"role": "user", "parts": [{"function_response": {"id": "call-1", "name": "get_weather",
            "response": {"city": "Hangzhou", "forecast": "sunny", "temperature_c": 25}}}]}]', tools) r;

-- two calls in one answer
SELECT jsonb_path_query_array(adk_generate('anthropic',
         '[{"role": "user", "parts": [{"text": "call get_weather({\"city\": \"Oslo\"}) and call get_weather({\"city\": \"Rome\"})"}]}]',
         (SELECT tools FROM weather_tools)), '$.content.parts[*].function_call.args.city') AS cities;

-- system instruction and generation config reach the provider
SELECT p, adk_generate(p, '[{"role": "user", "parts": [{"text": "quiet please"}]}]', NULL,
                       '{"system_instruction": "ANSWER_IN_CAPS", "temperature": 0.5}') #>> '{content,parts,0,text}' AS answer
  FROM unnest(ARRAY['openai', 'gemini', 'anthropic']) p;
SELECT p, adk_generate(p, '[{"role": "user", "parts": [{"text": "a long story about many things"}]}]', NULL,
                       '{"max_output_tokens": 2}') - 'usage_metadata' - 'model_version' AS capped
  FROM unnest(ARRAY['openai', 'gemini', 'anthropic']) p;

-- streaming: partial responses, then the aggregated final one
SELECT p, ordinality AS n, r ->> 'partial' AS partial, r -> 'content' AS content,
       r ->> 'finish_reason' AS finish, r ->> 'turn_complete' AS turn_complete
  FROM unnest(ARRAY['openai', 'gemini', 'anthropic']) p,
       adk_generate_stream(p, '[{"role": "user", "parts": [{"text": "stream me"}]}]') WITH ORDINALITY r;
-- a streamed function call arrives whole in the final response
SELECT p, count(*) AS rows,
       jsonb_path_query_array(max(r::text) FILTER (WHERE r ->> 'turn_complete' = 'true')::jsonb,
                              '$.content.parts[*].function_call') #- '{0,id}' AS final_calls
  FROM unnest(ARRAY['openai', 'gemini', 'anthropic']) p, weather_tools,
       adk_generate_stream(p, '[{"role": "user", "parts": [{"text": "call get_weather({\"city\": \"Lima\"})"}]}]', tools) r
 GROUP BY p ORDER BY p;

-- the ledger: one row per request
SELECT model, stream, count(*) AS calls, bool_and(http_status = 200) AS all_200,
       bool_and(attempts = 1) AS one_attempt, bool_and(input_tokens > 0 AND output_tokens > 0) AS tokens,
       string_agg(DISTINCT finish_reason, ',') AS finish_reasons, count(error_code) AS errors,
       bool_and(request IS NOT NULL AND response IS NOT NULL) AS bodies,
       bool_and(latency_ms > 0) AS timed, bool_and(role_name = current_user) AS role_ok
  FROM adk.model_calls GROUP BY 1, 2 ORDER BY 1, 2;
-- the stored request is the provider's wire format; response is what the
-- caller got, response_body the provider's raw body (not kept for streams)
SELECT provider, stream, jsonb_path_query_first(request, '$.messages[0]') AS openai_message,
       request #> '{contents,0}' AS gemini_content, request -> 'max_tokens' AS anthropic_max_tokens,
       request -> 'stream' AS stream_flag, response ? 'content' AS response_ok,
       response_body IS NOT NULL AS raw_kept
  FROM adk.model_calls WHERE id IN (SELECT min(id) FROM adk.model_calls GROUP BY provider, stream)
 ORDER BY 1, 2;
-- the URL each provider was called at
SELECT DISTINCT provider, stream, regexp_replace(url, '^http://127\.0\.0\.1:[0-9]+', '') AS path
  FROM adk.model_calls ORDER BY 1, 2;

-- bad input raises, with nothing sent
SELECT count(*) AS calls_before FROM adk.model_calls \gset
SELECT expect_error($q$SELECT adk_generate('nope', '[]')$q$);
SELECT expect_error($q$SELECT adk_generate(NULL, '[]')$q$);
SELECT expect_error($q$SELECT adk_generate('openai', NULL)$q$);
SELECT expect_error($q$SELECT adk_generate('openai', '{"role": "user"}')$q$);
SELECT expect_error($q$SELECT adk_generate('openai', '[{"role": "user", "parts": [{"text": "x"}]}]', '{}')$q$);
SELECT expect_error($q$SELECT adk_generate('openai', '[{"role": "user", "parts": [{"text": "x"}]}]', NULL, '[]')$q$);
SELECT expect_error($q$SELECT adk_generate('openai', '[{"role": "robot", "parts": [{"text": "x"}]}]')$q$);
SELECT expect_error($q$SELECT adk_generate('openai', '[{"role": "user", "parts": [{"mystery": 1}]}]')$q$);
SELECT expect_error($q$SELECT adk_generate('openai', (repeat('[', 70) || repeat(']', 70))::jsonb)$q$);
SELECT count(*) = :calls_before AS nothing_sent FROM adk.model_calls;

-- The ledger row is written by an INSERT statement: its id comes from
-- the identity, created_at from its default.  A trigger or a changed
-- default a user adds takes effect, at once.
SELECT max(id) AS id_before FROM adk.model_calls \gset
BEGIN;
SELECT adk_generate('openai', '[{"role": "user", "parts": [{"text": "one"}]}]') ? 'content' AS answered;
SELECT id = :id_before + 1 AS next_id, created_at = now() AS created_now, role_name = current_user AS role_ok
  FROM adk.model_calls ORDER BY id DESC LIMIT 1;
COMMIT;
CREATE TABLE ledger_audit (call_id bigint, model text);
CREATE FUNCTION audit_call() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.ledger_audit VALUES (NEW.id, NEW.model);
    RETURN NEW;
END $$;
CREATE TRIGGER audit AFTER INSERT ON adk.model_calls FOR EACH ROW EXECUTE FUNCTION audit_call();
SELECT adk_generate('openai', '[{"role": "user", "parts": [{"text": "two"}]}]') ? 'content' AS answered;
DROP TRIGGER audit ON adk.model_calls;
ALTER TABLE adk.model_calls ALTER COLUMN created_at SET DEFAULT '2000-01-01';
SELECT adk_generate('openai', '[{"role": "user", "parts": [{"text": "three"}]}]') ? 'content' AS answered;
SELECT id = :id_before + 3 AS next_id, created_at AS new_default
  FROM adk.model_calls ORDER BY id DESC LIMIT 1;
ALTER TABLE adk.model_calls ALTER COLUMN created_at SET DEFAULT now();
BEGIN;
SELECT adk_generate('openai', '[{"role": "user", "parts": [{"text": "four"}]}]') ? 'content' AS answered;
SELECT id = :id_before + 4 AS next_id, created_at = now() AS created_now
  FROM adk.model_calls ORDER BY id DESC LIMIT 1;
COMMIT;
-- only the call made while the trigger was there was audited
SELECT call_id - :id_before AS audited_call, model FROM ledger_audit;
DROP TABLE ledger_audit;
DROP FUNCTION audit_call();
-- A NUL the provider sends ("\u0000") cannot be stored in jsonb: it comes
-- back as U+FFFD, streamed or not, for each provider
SELECT p, r #>> '{content,parts,0,text}' = 'nul:' || U&'\FFFD' || ':end' AS replaced
  FROM unnest(ARRAY['openai', 'gemini', 'anthropic']) p,
       adk_generate(p, '[{"role": "user", "parts": [{"text": "[[nul]]"}]}]') r ORDER BY p;
SELECT p, count(*) AS finals, bool_and(r #>> '{content,parts,0,text}' = 'nul:' || U&'\FFFD' || ':end') AS final_replaced
  FROM unnest(ARRAY['openai', 'gemini', 'anthropic']) p,
       adk_generate_stream(p, '[{"role": "user", "parts": [{"text": "[[nul]]"}]}]') r
 WHERE NOT coalesce((r ->> 'partial')::boolean, false) GROUP BY p ORDER BY p;

-- a read-only transaction cannot record a model call (25006)
BEGIN READ ONLY;
SELECT expect_error($q$SELECT adk_generate('openai', '[{"role": "user", "parts": [{"text": "ro"}]}]')$q$);
ROLLBACK;
DELETE FROM adk.model_calls WHERE id > :id_before;
