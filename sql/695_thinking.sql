-- Thinking (docs/models.md, "Thinking"): generate_config "thinking"
-- ({"budget_tokens": N} or {"effort": ...}, with "include_thoughts") is
-- checked where it is defined -- an agent's generate_config, a model's
-- options, a call's config -- and mapped to each provider's own, as the
-- local model server received it: Gemini's thinkingConfig, Anthropic's
-- thinking (max_tokens raised above the budget) and OpenAI's
-- reasoning_effort.  Thoughts come back as thought parts with their
-- signatures, streamed or not.
SELECT adk_set_secret('thk-key', 'sk-th', ARRAY['127.0.0.1']);
SELECT adk_define_model(n, p, current_setting('adk_test.model_url') || CASE p WHEN 'openai' THEN '/v1' ELSE '' END,
                        m, api_key_secret => 'thk-key', options => '{"retries": 0}')
  FROM (VALUES ('thk_claude', 'anthropic', 'claude-think'), ('thk_gpt', 'openai', 'gpt-think'),
               ('thk_gemini', 'gemini', 'gemini-think')) AS d(n, p, m);

-- what the server received last (GET /_last), as jsonb
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

-- ---------------------------------------------------------------------
-- 1. Checked where it is set: 22023 on anything else, nothing sent
-- ---------------------------------------------------------------------
SELECT count(*) AS calls_before FROM adk.model_calls \gset
SELECT t, expect_error(format('SELECT adk_define_agent(%L, model => %L, generate_config => %L)',
                              'thk_bad', 'thk_claude', format('{"thinking": %s}', t)))
  FROM unnest(ARRAY['[]', '"high"', '{}', '{"include_thoughts": true}',
                    '{"budget_tokens": 1024, "effort": "low"}', '{"effort": "extreme"}',
                    '{"effort": "LOW"}', '{"effort": 1}', '{"budget_tokens": -1}',
                    '{"budget_tokens": 1.5}', '{"budget_tokens": "1024"}',
                    '{"budget_tokens": 1000001}', '{"effort": "low", "include_thoughts": "yes"}',
                    '{"effort": "low", "level": "low"}']) AS t;
SELECT expect_error($q$SELECT adk_define_model('thk_x', 'openai', 'http://127.0.0.1/v1', 'm',
                                                options => '{"thinking": {"effort": "max"}}')$q$);
SELECT expect_error($q$UPDATE adk.models SET options = '{"thinking": {"budget_tokens": 1024, "extra": 1}}'
                        WHERE name = 'thk_gpt'$q$);
SELECT expect_error($q$SELECT adk_generate('thk_gpt', '[{"role": "user", "parts": [{"text": "Hi"}]}]',
                                            config => '{"thinking": {"budget_tokens": "many"}}')$q$);
SELECT expect_error($q$SELECT adk_generate_stream('thk_claude', '[{"role": "user", "parts": [{"text": "Hi"}]}]',
                                                   config => '{"thinking": {"effort": "low", "x": 1}}')$q$);
SELECT count(*) - :calls_before AS calls_sent FROM adk.model_calls;
SELECT count(*) AS bad_agents FROM adk.agents WHERE name = 'thk_bad';
-- the good ones are taken, in an agent, a model and a call
SELECT adk_define_agent('thk_ok', model => 'thk_claude',
                        generate_config => '{"thinking": {"budget_tokens": 0, "include_thoughts": false}}');
SELECT adk_define_model('thk_x', 'openai', 'http://127.0.0.1/v1', 'm', options => '{"thinking": {"effort": "low"}}');
SELECT options FROM adk.models WHERE name = 'thk_x';

-- ---------------------------------------------------------------------
-- 2. Mapped per provider, as the server received it
-- ---------------------------------------------------------------------
CREATE FUNCTION pg_temp.sent(model text, thinking jsonb, max_out int DEFAULT NULL) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
    b jsonb;
BEGIN
    PERFORM adk_generate(model, '[{"role": "user", "parts": [{"text": "Why is the sky blue?"}]}]',
                         config => jsonb_strip_nulls(jsonb_build_object('thinking', thinking,
                                                                        'max_output_tokens', max_out)));
    b := pg_temp.last_request();
    RETURN CASE WHEN b ? 'messages' AND b ? 'max_tokens' AND NOT b ? 'stream_options' AND b ->> 'model' LIKE 'claude%'
                THEN jsonb_build_object('thinking', b -> 'thinking', 'max_tokens', b -> 'max_tokens')
                WHEN b ? 'contents' THEN coalesce(b #> '{generationConfig,thinkingConfig}', 'null')
                ELSE jsonb_build_object('reasoning_effort', b -> 'reasoning_effort') END;
END
$$;
SELECT m, t, x, pg_temp.sent(m, t::jsonb, x) AS received
  FROM (VALUES ('thk_claude', '{"budget_tokens": 2048}', 1024),
               ('thk_claude', '{"budget_tokens": 2048}', 8000),
               ('thk_claude', '{"budget_tokens": 100}', NULL),
               ('thk_claude', '{"budget_tokens": 0}', NULL),
               ('thk_claude', '{"effort": "low"}', NULL),
               ('thk_claude', '{"effort": "medium", "include_thoughts": false}', NULL),
               ('thk_claude', '{"effort": "high"}', NULL),
               ('thk_gemini', '{"budget_tokens": 2048, "include_thoughts": true}', NULL),
               ('thk_gemini', '{"budget_tokens": 0}', NULL),
               ('thk_gemini', '{"effort": "low"}', NULL),
               ('thk_gemini', '{"effort": "high", "include_thoughts": false}', NULL),
               ('thk_gpt', '{"effort": "medium"}', NULL),
               ('thk_gpt', '{"budget_tokens": 0}', NULL),
               ('thk_gpt', '{"budget_tokens": 2048}', NULL),
               ('thk_gpt', '{"budget_tokens": 4096}', NULL),
               ('thk_gpt', '{"budget_tokens": 16384, "include_thoughts": true}', NULL)) AS v(m, t, x);
-- a model's options set it for every call; a call's config wins
SELECT adk_define_model('thk_gpt_high', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-think',
                        api_key_secret => 'thk-key', options => '{"thinking": {"effort": "high"}}');
SELECT adk_generate('thk_gpt_high', '[{"role": "user", "parts": [{"text": "Hi"}]}]') IS NOT NULL AS answered,
       pg_temp.last_request() -> 'reasoning_effort' AS from_options;
SELECT adk_generate('thk_gpt_high', '[{"role": "user", "parts": [{"text": "Hi"}]}]',
                    config => '{"thinking": {"effort": "low"}}') IS NOT NULL AS answered,
       pg_temp.last_request() -> 'reasoning_effort' AS from_config;
-- null: none, over a model's options too
SELECT adk_generate('thk_gpt_high', '[{"role": "user", "parts": [{"text": "Hi"}]}]',
                    config => '{"thinking": null}') IS NOT NULL AS answered,
       pg_temp.last_request() ? 'reasoning_effort' AS reasoning_effort_sent;
SELECT adk_define_agent('thk_ok', model => 'thk_gpt_high', generate_config => '{"thinking": null}');
-- no setting, nothing sent
SELECT adk_generate('thk_claude', '[{"role": "user", "parts": [{"text": "Hi"}]}]') IS NOT NULL AS answered,
       pg_temp.last_request() ? 'thinking' AS anthropic_thinking;

-- ---------------------------------------------------------------------
-- 3. Thoughts come back as thought parts, with their signatures;
--    reasoning tokens in usage_metadata
-- ---------------------------------------------------------------------
SELECT jsonb_pretty(r -> 'content') AS content, r #> '{usage_metadata,thoughts_token_count}' AS thoughts,
       r #> '{usage_metadata,candidates_token_count}' AS candidates
  FROM adk_generate('thk_claude', '[{"role": "user", "parts": [{"text": "Hi [[redacted]]"}]}]',
                    config => '{"thinking": {"budget_tokens": 2048}}') AS r;
-- streamed: thinking_delta pieces and the signature_delta make the same part
SELECT r ->> 'partial' AS partial, jsonb_pretty(r -> 'content') AS content
  FROM adk_generate_stream('thk_claude', '[{"role": "user", "parts": [{"text": "Hi [[redacted]]"}]}]',
                           config => '{"thinking": {"budget_tokens": 2048}}') AS r
 WHERE r ->> 'partial' IS NULL;
SELECT count(*) FILTER (WHERE r #>> '{content,parts,0,thought}' = 'true') AS thought_partials,
       count(*) FILTER (WHERE r #>> '{content,parts,0,thought}' IS NULL) AS answer_partials
  FROM adk_generate_stream('thk_claude', '[{"role": "user", "parts": [{"text": "Hi"}]}]',
                           config => '{"thinking": {"budget_tokens": 2048}}') AS r
 WHERE r ->> 'partial' = 'true';
SELECT jsonb_pretty(r -> 'content') AS content, r #> '{usage_metadata,thoughts_token_count}' AS thoughts,
       r #> '{usage_metadata,candidates_token_count}' AS candidates
  FROM adk_generate('thk_gemini', '[{"role": "user", "parts": [{"text": "Hi"}]}]',
                    config => '{"thinking": {"budget_tokens": 1024, "include_thoughts": true}}') AS r;
SELECT r ->> 'partial' AS partial, jsonb_pretty(r -> 'content') AS content
  FROM adk_generate_stream('thk_gemini', '[{"role": "user", "parts": [{"text": "Hi"}]}]',
                           config => '{"thinking": {"effort": "low", "include_thoughts": true}}') AS r;
-- OpenAI: reasoning tokens only; candidates are the answer's alone
SELECT r #> '{usage_metadata,thoughts_token_count}' AS thoughts,
       r #> '{usage_metadata,candidates_token_count}' AS candidates,
       r #> '{usage_metadata,total_token_count}' AS total
  FROM adk_generate('thk_gpt', '[{"role": "user", "parts": [{"text": "Hi"}]}]',
                    config => '{"thinking": {"effort": "high"}}') AS r;
SELECT r #> '{usage_metadata,thoughts_token_count}' AS thoughts,
       r #> '{usage_metadata,candidates_token_count}' AS candidates
  FROM adk_generate_stream('thk_gpt', '[{"role": "user", "parts": [{"text": "Hi"}]}]',
                           config => '{"thinking": {"effort": "high"}}') AS r
 WHERE r ->> 'partial' IS NULL;
-- the ledger: reasoning is part of output_tokens
SELECT model, stream, output_tokens, reasoning_tokens
  FROM adk.model_calls ORDER BY id DESC LIMIT 6;
