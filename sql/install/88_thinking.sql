-- ---------------------------------------------------------------------
-- Thinking (docs/models.md, "Thinking").  A model's options or an
-- agent's generate_config may set "thinking" (checked by
-- adk._check_thinking, 40_models.sql); the adapters map it to each
-- provider's own (model/llm_thinking.c).  The ledger keeps the tokens a
-- call spent reasoning (reasoning_tokens, part of output_tokens), and
-- adk.costs prices them as output unless the model's price sets
-- "reasoning".
-- ---------------------------------------------------------------------

ALTER TABLE adk.model_calls ADD COLUMN reasoning_tokens bigint;
COMMENT ON COLUMN adk.model_calls.reasoning_tokens IS
    'Output tokens the model spent reasoning (OpenAI''s completion_tokens_details.reasoning_tokens, Gemini''s thoughtsTokenCount; part of output_tokens); NULL: none reported (Anthropic counts thinking in output_tokens only)';

-- Prices: reasoning, per million reasoning tokens (output when not set)
CREATE OR REPLACE FUNCTION adk._check_price(price jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT price IS NULL
        OR (pg_catalog.jsonb_typeof(price) OPERATOR(pg_catalog.=) 'object'
            AND NOT EXISTS (SELECT 1 FROM pg_catalog.jsonb_each(price) e
                             WHERE e.key OPERATOR(pg_catalog.<>) ALL (ARRAY['input', 'output', 'cached_input', 'cache_write', 'reasoning'])
                                OR pg_catalog.jsonb_typeof(e.value) OPERATOR(pg_catalog.<>) 'number'
                                OR (e.value)::text::numeric OPERATOR(pg_catalog.<) 0))
$$;
COMMENT ON COLUMN adk.models.price IS
    'Optional prices per million tokens: {"input", "output", "cached_input", "cache_write", "reasoning"} (non-negative numbers; cached_input and cache_write default to input, reasoning to output)';

CREATE OR REPLACE VIEW adk.costs WITH (security_invoker = true) AS
SELECT c.app_name, c.user_id, i.agent, c.model,
       (pg_catalog.timezone('UTC', c.created_at))::date AS day,
       pg_catalog.count(*) AS model_calls,
       pg_catalog.sum(coalesce(c.input_tokens, 0)) AS input_tokens,
       pg_catalog.sum(coalesce(c.output_tokens, 0)) AS output_tokens,
       pg_catalog.sum(x.cached) AS cached_input_tokens,
       -- OPERATOR() forms share one precedence: every product is bracketed;
       -- the cost is rounded to millionths of the currency (a person reads
       -- 0.000125, not 24 decimals)
       pg_catalog.round(pg_catalog.sum(((coalesce(c.input_tokens, 0) OPERATOR(pg_catalog.-) x.cached
                                         OPERATOR(pg_catalog.-) x.written)
                       OPERATOR(pg_catalog.*) (m.price ->> 'input')::numeric)
                      OPERATOR(pg_catalog.+)
                      (x.cached OPERATOR(pg_catalog.*)
                       coalesce(m.price ->> 'cached_input', m.price ->> 'input')::numeric)
                      OPERATOR(pg_catalog.+)
                      (x.written OPERATOR(pg_catalog.*)
                       coalesce(m.price ->> 'cache_write', m.price ->> 'input')::numeric)
                      OPERATOR(pg_catalog.+)
                      ((coalesce(c.output_tokens, 0) OPERATOR(pg_catalog.-) x.reasoning)
                       OPERATOR(pg_catalog.*) (m.price ->> 'output')::numeric)
                      OPERATOR(pg_catalog.+)
                      (x.reasoning OPERATOR(pg_catalog.*)
                       coalesce(m.price ->> 'reasoning', m.price ->> 'output')::numeric))
           OPERATOR(pg_catalog./) 1000000, 6) AS cost,
       pg_catalog.sum(x.written) AS cache_creation_tokens,
       pg_catalog.sum(x.reasoning) AS reasoning_tokens
  FROM adk.model_calls c
  LEFT JOIN adk.invocations i ON i.invocation_id OPERATOR(pg_catalog.=) c.invocation_id
  LEFT JOIN adk.models m ON m.name OPERATOR(pg_catalog.=) c.model
 CROSS JOIN LATERAL (SELECT coalesce(c.cached_tokens,
                                     (c.response #>> '{usage_metadata,cached_content_token_count}')::bigint, 0)
                            AS cached,
                            coalesce(c.cache_creation_tokens, 0) AS written,
                            coalesce(c.reasoning_tokens, 0) AS reasoning) x
 GROUP BY 1, 2, 3, 4, 5;
COMMENT ON VIEW adk.costs IS
    'Model calls, tokens and cost (from adk.models.price; NULL without a price) per app and user (the session''s the call was made for; NULL for adk_generate), agent (the invocation''s), model and UTC day; of the input tokens, cached_input_tokens were read from the prompt cache and cache_creation_tokens written to it; of the output tokens, reasoning_tokens were spent reasoning (priced at "reasoning", else "output")';
