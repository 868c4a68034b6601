-- Thinking in runs (docs/models.md, "Thinking"), with 695_thinking's
-- models: thought parts are stored marked as thoughts; in a tool loop
-- they go back exactly as each provider requires -- Anthropic's thinking
-- and redacted_thinking blocks, signed, before the tool_use blocks;
-- Gemini's thoughtSignature on the functionCall part it came with (the
-- local model server refuses a request that lacks or alters them, as
-- the APIs do); they never reach output_key, memory or another agent's
-- prompt; reasoning tokens are in the ledger, the run's totals, budgets
-- and adk.costs; adk.store_thoughts off keeps no thought text.
CREATE TEMP TABLE last_lines (line text);
CREATE FUNCTION pg_temp.last_request() RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    j jsonb;
BEGIN
    TRUNCATE last_lines;
    EXECUTE format($c$COPY last_lines FROM PROGRAM %L WITH (FORMAT csv, QUOTE E'\x01', DELIMITER E'\x02')$c$,
                   'curl -s ' || current_setting('adk_test.model_url') || '/_last');
    SELECT string_agg(line, E'\n')::jsonb INTO j FROM last_lines;
    RETURN j -> 'body';
END
$$;
-- an event's parts, by kind
CREATE FUNCTION pg_temp.kinds(e jsonb) RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(CASE WHEN p ? 'function_call' THEN 'call'
                           WHEN p ? 'function_response' THEN 'response'
                           WHEN p ->> 'thought' = 'true' AND p ->> 'text' = '' THEN 'thought(no text)'
                           WHEN p ->> 'thought' = 'true' THEN 'thought'
                           ELSE 'text' END
                      || CASE WHEN p ? 'thought_signature' THEN '+signature' ELSE '' END, ', ' ORDER BY n)
      FROM jsonb_array_elements(e #> '{content,parts}') WITH ORDINALITY AS x(p, n)
$$;
CREATE FUNCTION thk_lookup(x text) RETURNS jsonb LANGUAGE sql AS $$ SELECT jsonb_build_object('x', x, 'found', true) $$;
SELECT adk_define_tool('thk_lookup(text)'::regprocedure);

-- ---------------------------------------------------------------------
-- 1. Anthropic: a tool loop sends the thinking blocks back, signed
-- ---------------------------------------------------------------------
SELECT adk_define_agent('thk_claude_agent', model => 'thk_claude', instruction => 'Think first.',
                        tools => ARRAY['thk_lookup'],
                        generate_config => '{"thinking": {"budget_tokens": 2048}, "max_output_tokens": 1024}');
SELECT adk_define_app('thk_claude_app', 'thk_claude_agent');
SELECT event_data ->> 'author' AS author, pg_temp.kinds(event_data) AS parts,
       event_data #>> '{error_code}' AS error
  FROM adk_run('thk_claude_app', 'u1', 's1', 'call thk_lookup({"x": "a"}) [[redacted]]');
-- the second request: the assistant message begins with the blocks the
-- first answer gave, unchanged, then its tool_use
SELECT jsonb_pretty((request #> '{messages,1,content}') #- '{2,id}') AS assistant, request -> 'thinking' AS thinking,
       request -> 'max_tokens' AS max_tokens
  FROM adk.model_calls WHERE app_name = 'thk_claude_app' ORDER BY id DESC LIMIT 1;
-- as stored: the first model event's thought parts
SELECT jsonb_pretty((event_data #> '{content,parts}') #- '{2,function_call,id}') AS parts
  FROM adk.events WHERE app_name = 'thk_claude_app' AND session_id = 's1' AND seq = 2;
-- the next turn sends the earlier turn's blocks too (the API ignores them there)
SELECT event_data ->> 'author' AS author, pg_temp.kinds(event_data) AS parts
  FROM adk_run('thk_claude_app', 'u1', 's1', 'Thanks');
SELECT jsonb_path_query_array(request, '$.messages[*].content[*].type') AS blocks
  FROM adk.model_calls WHERE app_name = 'thk_claude_app' ORDER BY id DESC LIMIT 1;
-- streamed, the same (signature_delta)
SELECT event_data ->> 'author' AS author, pg_temp.kinds(event_data) AS parts
  FROM adk_run('thk_claude_app', 'u1', 's2', 'call thk_lookup({"x": "s"})', options => '{"stream": true}')
 WHERE NOT partial;
SELECT jsonb_path_query_array(request, '$.messages[1].content[*].type') AS blocks
  FROM adk.model_calls WHERE app_name = 'thk_claude_app' ORDER BY id DESC LIMIT 1;
-- what the server refuses: the blocks left out (what adk_runner sent
-- before), and an altered signature
SELECT r ->> 'error_code' AS error_code, left(r ->> 'error_message', 90) AS error_message
  FROM (VALUES ('[{"role": "user", "parts": [{"text": "call thk_lookup({\"x\": \"a\"})"}]},
                  {"role": "model", "parts": [{"function_call": {"id": "toolu_1", "name": "thk_lookup", "args": {"x": "a"}}}]},
                  {"role": "user", "parts": [{"function_response": {"id": "toolu_1", "name": "thk_lookup", "response": {"found": true}}}]}]'),
               ('[{"role": "user", "parts": [{"text": "call thk_lookup({\"x\": \"a\"})"}]},
                  {"role": "model", "parts": [{"text": "Thinking about: call thk_lookup", "thought": true, "thought_signature": "sig-forged"},
                                              {"function_call": {"id": "toolu_1", "name": "thk_lookup", "args": {"x": "a"}}}]},
                  {"role": "user", "parts": [{"function_response": {"id": "toolu_1", "name": "thk_lookup", "response": {"found": true}}}]}]'))
       AS c(contents),
       LATERAL adk_generate('thk_claude', c.contents::jsonb,
                            tools => '[{"name": "thk_lookup", "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}]',
                            config => '{"thinking": {"budget_tokens": 2048}}') AS r;
-- a thought without a signature (another provider's) is not sent
SELECT adk_generate('thk_claude', '[{"role": "user", "parts": [{"text": "Hi"}]},
                                   {"role": "model", "parts": [{"text": "unsigned", "thought": true}, {"text": "Hello"}]},
                                   {"role": "user", "parts": [{"text": "Again"}]}]') ->> 'error_code' AS error,
       pg_temp.last_request() #> '{messages,1,content}' AS assistant;

-- ---------------------------------------------------------------------
-- 2. Gemini: thoughtSignature back on its functionCall part
-- ---------------------------------------------------------------------
SELECT adk_define_agent('thk_gemini_agent', model => 'thk_gemini', instruction => 'Think first.',
                        tools => ARRAY['thk_lookup'],
                        generate_config => '{"thinking": {"budget_tokens": 1024, "include_thoughts": true}}');
SELECT adk_define_app('thk_gemini_app', 'thk_gemini_agent');
SELECT event_data ->> 'author' AS author, pg_temp.kinds(event_data) AS parts,
       event_data #>> '{error_code}' AS error
  FROM adk_run('thk_gemini_app', 'u1', 's1', 'call thk_lookup({"x": "b"})');
SELECT jsonb_pretty(request #> '{contents,1}') AS model_content,
       request #> '{generationConfig,thinkingConfig}' AS thinking
  FROM adk.model_calls WHERE app_name = 'thk_gemini_app' ORDER BY id DESC LIMIT 1;
-- the signature as stored, on the call
SELECT event_data #> '{content,parts,1,thought_signature}' AS stored_signature
  FROM adk.events WHERE app_name = 'thk_gemini_app' AND session_id = 's1' AND seq = 2;
-- what the server refuses: a call without its signature, or another one
SELECT r ->> 'error_code' AS error_code, left(r ->> 'error_message', 60) AS error_message
  FROM (VALUES (NULL), ('"gsig-forged"')) AS s(sig),
       LATERAL adk_generate('thk_gemini',
                            jsonb_build_array('{"role": "user", "parts": [{"text": "call thk_lookup({\"x\": \"b\"})"}]}'::jsonb,
                                              jsonb_build_object('role', 'model', 'parts', jsonb_build_array(
                                                  jsonb_strip_nulls(jsonb_build_object(
                                                      'function_call', '{"name": "thk_lookup", "args": {"x": "b"}}'::jsonb,
                                                      'thought_signature', s.sig::jsonb)))),
                                              '{"role": "user", "parts": [{"function_response": {"name": "thk_lookup", "response": {"found": true}}}]}'::jsonb),
                            tools => '[{"name": "thk_lookup", "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}]',
                            config => '{"thinking": {"budget_tokens": 1024}}') AS r;

-- ---------------------------------------------------------------------
-- 3. Thoughts never reach output_key, memory, an agent-tool's result or
--    another agent's prompt
-- ---------------------------------------------------------------------
SELECT adk_define_agent('thk_first', model => 'thk_claude', output_key => 'answer',
                        generate_config => '{"thinking": {"effort": "low"}}');
SELECT adk_define_agent('thk_second', model => 'thk_gpt');
SELECT adk_define_agent('thk_seq', kind => 'sequential', sub_agents => ARRAY['thk_first', 'thk_second']);
SELECT adk_define_app('thk_seq_app', 'thk_seq');
SELECT adk_define_app_memory('thk_seq_app');
SELECT event_data ->> 'author' AS author, pg_temp.kinds(event_data) AS parts
  FROM adk_run('thk_seq_app', 'u1', 's1', 'Hello');
SELECT state -> 'answer' AS answer FROM adk.sessions WHERE app_name = 'thk_seq_app' AND id = 's1';
SELECT adk_add_session_to_memory('thk_seq_app', 'u1', 's1') AS added;
SELECT author, text FROM adk.memory WHERE app_name = 'thk_seq_app' ORDER BY id;
-- thk_second's request: thk_first's answer as context, not its thought
SELECT jsonb_pretty(request -> 'messages') AS messages,
       request::text LIKE '%Thinking about%' AS has_thought
  FROM adk.model_calls WHERE app_name = 'thk_seq_app' AND model = 'thk_gpt';
-- nor a compaction's transcript
SELECT adk_compaction_read('thk_seq_app', 'u1', 's1') ->> 'transcript' AS transcript;
-- thk_first used as a tool: its answer without its thought
SELECT adk_define_agent('thk_caller', model => 'thk_gpt', tools => ARRAY['thk_first']);
SELECT adk_define_app('thk_caller_app', 'thk_caller');
SELECT event_data ->> 'author' AS author, pg_temp.kinds(event_data) AS parts,
       event_data #> '{content,parts,0,function_response,response}' AS response
  FROM adk_run('thk_caller_app', 'u1', 's1', 'call thk_first({"request": "Hi"})');

-- ---------------------------------------------------------------------
-- 4. Reasoning tokens: the ledger, the run's totals, budgets, costs
-- ---------------------------------------------------------------------
INSERT INTO adk.budgets (app_name, period, max_tokens) VALUES ('thk_gemini_app', 'total', 1000000);
SELECT count(*) AS events FROM adk_run('thk_gemini_app', 'u1', 's2', 'call thk_lookup({"x": "c"})');
SELECT model, input_tokens, output_tokens, reasoning_tokens, response #> '{usage_metadata,candidates_token_count}' AS candidates
  FROM adk.model_calls WHERE app_name = 'thk_gemini_app' AND user_id = 'u1' ORDER BY id DESC LIMIT 2;
SELECT i.input_tokens, i.output_tokens,
       (SELECT sum(m.input_tokens + m.output_tokens) FROM adk.model_calls m
         WHERE m.invocation_id = i.invocation_id) AS ledger_tokens
  FROM adk.invocations i WHERE app_name = 'thk_gemini_app' AND session_id = 's2';
-- the budget, taken before the run, was charged the run's tokens, reasoning included
SELECT u.tokens AS budget_tokens,
       (SELECT sum(m.input_tokens + m.output_tokens) FROM adk.model_calls m
         WHERE m.invocation_id IN (SELECT i.invocation_id FROM adk.invocations i
                                    WHERE i.app_name = 'thk_gemini_app' AND i.session_id = 's2')) AS run_tokens
  FROM adk.budget_usage u WHERE u.app_name = 'thk_gemini_app';
UPDATE adk.models SET price = '{"input": 1, "output": 10}' WHERE name = 'thk_gemini';
-- reasoning priced as output: input * 1 + output * 10, per million
SELECT model, model_calls, input_tokens, output_tokens, reasoning_tokens, cost,
       (input_tokens * 1 + output_tokens * 10) / 1e6 = cost AS as_output
  FROM adk.costs WHERE app_name = 'thk_gemini_app';
-- a reasoning price of its own
SELECT adk._check_price('{"reasoning": 20}') AS a_number, adk._check_price('{"reasoning": "cheap"}') AS a_string,
       adk._check_price('{"reasoning": -1}') AS negative;
UPDATE adk.models SET price = '{"input": 1, "output": 10, "reasoning": 20}' WHERE name = 'thk_gemini';
SELECT model, model_calls, input_tokens, output_tokens, reasoning_tokens, cost,
       (input_tokens * 1 + (output_tokens - reasoning_tokens) * 10 + reasoning_tokens * 20) / 1e6 = cost AS priced
  FROM adk.costs WHERE app_name = 'thk_gemini_app';
UPDATE adk.models SET price = NULL WHERE name = 'thk_gemini';
DELETE FROM adk.budgets WHERE app_name = 'thk_gemini_app';

-- ---------------------------------------------------------------------
-- 5. adk.store_thoughts off: no thought text stored anywhere; what the
--    provider needs back still is (Gemini's signatures, Anthropic's
--    redacted blocks)
-- ---------------------------------------------------------------------
SET adk.store_thoughts = off;
SELECT event_data ->> 'author' AS author, pg_temp.kinds(event_data) AS parts,
       event_data #>> '{error_code}' AS error
  FROM adk_run('thk_gemini_app', 'u1', 'off1', 'call thk_lookup({"x": "d"})');
SELECT event_data ->> 'author' AS author, pg_temp.kinds(event_data) AS parts
  FROM adk_run('thk_seq_app', 'u1', 'off2', 'Hello [[redacted]]');
SELECT count(*) AS events_with_thought_text FROM adk.events
 WHERE session_id IN ('off1', 'off2') AND event_data::text LIKE '%Thinking about%';
-- the ledger: no thought text in the response, no raw body that held one;
-- the reasoning tokens counted all the same
SELECT model, count(*) AS calls, count(*) FILTER (WHERE response::text LIKE '%Thinking about%') AS with_thought_text,
       count(response_body) AS raw_bodies, sum(reasoning_tokens) AS reasoning_tokens
  FROM adk.model_calls
 WHERE invocation_id IN (SELECT invocation_id FROM adk.invocations WHERE session_id IN ('off1', 'off2'))
 GROUP BY model ORDER BY model;
-- adk_generate too, streamed or not: no thought partial, no thought text
SELECT r ->> 'partial' AS partial, pg_temp.kinds(r) AS parts
  FROM adk_generate_stream('thk_claude', '[{"role": "user", "parts": [{"text": "Hi"}]}]',
                           config => '{"thinking": {"budget_tokens": 2048}}') AS r;
SELECT pg_temp.kinds(adk_generate('thk_gemini', '[{"role": "user", "parts": [{"text": "Hi"}]}]',
                                  config => '{"thinking": {"budget_tokens": 1024, "include_thoughts": true}}')) AS parts;
RESET adk.store_thoughts;

-- later files list every definition: take these files' away
DELETE FROM adk.apps WHERE name LIKE 'thk\_%';
DELETE FROM adk.agents WHERE name LIKE 'thk\_%';
DELETE FROM adk.tools WHERE name = 'thk_lookup';
DELETE FROM adk.models WHERE name LIKE 'thk\_%';
DELETE FROM adk.secrets WHERE name = 'thk-key';
DROP FUNCTION thk_lookup(text);
