-- ---------------------------------------------------------------------
-- Prompt caching (docs/models.md, "Prompt caching").  An app whose
-- context_cache is {"enabled": true} has its agents' requests cached:
-- Anthropic's cache_control breakpoints, OpenAI's prompt_cache_key, and
-- Gemini's implicit caching counted (model/prompt_cache.c).  The ledger
-- keeps the tokens read from the cache (cached_tokens, 84_spans.sql) and
-- written to it (cache_creation_tokens); adk.costs prices them
-- (cached_input, cache_write) and adk.stat_cache shows the hit rate per
-- app.
-- ---------------------------------------------------------------------

ALTER TABLE adk.apps ADD COLUMN context_cache jsonb;
COMMENT ON COLUMN adk.apps.context_cache IS
    'Prompt caching: {"enabled": true} caches the prompts of the app''s agents; NULL or {"enabled": false}: off';

-- Checked when the app is defined: an object of known keys
CREATE FUNCTION adk._apps_check_context_cache() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    bad text;
BEGIN
    IF NEW.context_cache IS NULL THEN
        RETURN NEW;
    END IF;
    IF jsonb_typeof(NEW.context_cache) <> 'object' THEN
        RAISE EXCEPTION 'context_cache of app "%" must be a JSON object, or NULL for none', NEW.name
            USING ERRCODE = '22023', HINT = 'Use {"enabled": true}.';
    END IF;
    SELECT k INTO bad FROM jsonb_object_keys(NEW.context_cache) k
     WHERE k <> ALL (ARRAY['enabled']) ORDER BY k LIMIT 1;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'context_cache of app "%" has an unknown key "%"', NEW.name, bad
            USING ERRCODE = '22023', HINT = 'The only key is "enabled".';
    END IF;
    IF jsonb_typeof(NEW.context_cache -> 'enabled') IS DISTINCT FROM 'boolean' THEN
        RAISE EXCEPTION 'context_cache of app "%" needs "enabled": true or false', NEW.name
            USING ERRCODE = '22023';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER adk_apps_check_context_cache
    BEFORE INSERT OR UPDATE OF context_cache ON adk.apps
    FOR EACH ROW EXECUTE FUNCTION adk._apps_check_context_cache();

DROP FUNCTION adk_define_app(text, text, boolean, text[], integer, jsonb, boolean, text);
CREATE FUNCTION adk_define_app(name text, root_agent text,
                               auto_create_session boolean DEFAULT true,
                               plugins text[] DEFAULT '{}',
                               max_llm_calls integer DEFAULT 500,
                               compaction jsonb DEFAULT NULL,
                               save_input_blobs_as_artifacts boolean DEFAULT false,
                               tenancy text DEFAULT 'shared',
                               context_cache jsonb DEFAULT NULL)
RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO adk.apps AS a (name, root_agent, auto_create_session, plugins, max_llm_calls,
                               compaction, save_input_blobs_as_artifacts, tenancy, context_cache)
    VALUES ($1, $2, coalesce($3, true), coalesce($4, '{}'),
            coalesce($5, 500), $6, coalesce($7, false),
            coalesce($8, 'shared'), $9)
    ON CONFLICT ON CONSTRAINT apps_pkey DO UPDATE
       SET root_agent = EXCLUDED.root_agent, auto_create_session = EXCLUDED.auto_create_session,
           plugins = EXCLUDED.plugins, max_llm_calls = EXCLUDED.max_llm_calls,
           compaction = EXCLUDED.compaction,
           save_input_blobs_as_artifacts = EXCLUDED.save_input_blobs_as_artifacts,
           tenancy = EXCLUDED.tenancy,
           context_cache = EXCLUDED.context_cache
$$;
COMMENT ON FUNCTION adk_define_app(text, text, boolean, text[], integer, jsonb, boolean, text, jsonb) IS
    'Create or replace an app: its root agent (the whole tree under it is checked), auto_create_session, plugins in call order, max_llm_calls per run, compaction (NULL = off), save_input_blobs_as_artifacts, tenancy (''shared'', ''role'' or ''claim''), context_cache (prompt caching: {"enabled": true}; NULL = off).';

ALTER TABLE adk.model_calls ADD COLUMN cache_creation_tokens bigint;
COMMENT ON COLUMN adk.model_calls.cache_creation_tokens IS
    'Input tokens the provider wrote to its prompt cache (Anthropic''s cache_creation_input_tokens; part of input_tokens); NULL: none reported';

-- Prices (85_tenancy.sql): cache_write, per million tokens written to the
-- cache; of the input tokens, those read from the cache cost cached_input
-- and those written cache_write (each input when not set).
CREATE OR REPLACE FUNCTION adk._check_price(price jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT price IS NULL
        OR (pg_catalog.jsonb_typeof(price) OPERATOR(pg_catalog.=) 'object'
            AND NOT EXISTS (SELECT 1 FROM pg_catalog.jsonb_each(price) e
                             WHERE e.key OPERATOR(pg_catalog.<>) ALL (ARRAY['input', 'output', 'cached_input', 'cache_write'])
                                OR pg_catalog.jsonb_typeof(e.value) OPERATOR(pg_catalog.<>) 'number'
                                OR (e.value)::text::numeric OPERATOR(pg_catalog.<) 0))
$$;
COMMENT ON COLUMN adk.models.price IS
    'Optional prices per million tokens: {"input", "output", "cached_input", "cache_write"} (non-negative numbers; cached_input and cache_write default to input)';

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
                      (coalesce(c.output_tokens, 0) OPERATOR(pg_catalog.*) (m.price ->> 'output')::numeric))
           OPERATOR(pg_catalog./) 1000000, 6) AS cost,
       pg_catalog.sum(x.written) AS cache_creation_tokens
  FROM adk.model_calls c
  LEFT JOIN adk.invocations i ON i.invocation_id OPERATOR(pg_catalog.=) c.invocation_id
  LEFT JOIN adk.models m ON m.name OPERATOR(pg_catalog.=) c.model
 CROSS JOIN LATERAL (SELECT coalesce(c.cached_tokens,
                                     (c.response #>> '{usage_metadata,cached_content_token_count}')::bigint, 0)
                            AS cached,
                            coalesce(c.cache_creation_tokens, 0) AS written) x
 GROUP BY 1, 2, 3, 4, 5;
COMMENT ON VIEW adk.costs IS
    'Model calls, tokens and cost (from adk.models.price; NULL without a price) per app and user (the session''s the call was made for; NULL for adk_generate), agent (the invocation''s), model and UTC day; of the input tokens, cached_input_tokens were read from the prompt cache and cache_creation_tokens written to it';

-- The hit rate per app, as adk.stat_models counts (84_spans.sql): since
-- adk_stat_reset(), the calling role's rows (row-level security).
CREATE VIEW adk.stat_cache WITH (security_invoker = true) AS
SELECT m.app_name,
       pg_catalog.count(*) AS calls,
       pg_catalog.count(*) FILTER (WHERE m.cached_tokens OPERATOR(pg_catalog.>) 0) AS cached_calls,
       coalesce(pg_catalog.sum(m.input_tokens), 0)::bigint AS input_tokens,
       coalesce(pg_catalog.sum(m.cached_tokens), 0)::bigint AS cached_tokens,
       coalesce(pg_catalog.sum(m.cache_creation_tokens), 0)::bigint AS cache_creation_tokens,
       pg_catalog.round(coalesce(pg_catalog.sum(m.cached_tokens), 0)::numeric
                        OPERATOR(pg_catalog./)
                        NULLIF(coalesce(pg_catalog.sum(m.input_tokens), 0), 0), 4) AS hit_rate,
       (SELECT r.reset_at FROM adk.stat_reset r) AS stats_reset
  FROM adk.model_calls m
 WHERE m.created_at OPERATOR(pg_catalog.>=) (SELECT r.reset_at FROM adk.stat_reset r)
 GROUP BY m.app_name;
COMMENT ON VIEW adk.stat_cache IS 'Per app (NULL: adk_generate): calls, input tokens, those read from the prompt cache (cached_tokens) and written to it, and the hit rate (cached_tokens / input_tokens) since adk_stat_reset(), from adk.model_calls.';
GRANT SELECT ON adk.stat_cache TO adk_user;
COMMENT ON FUNCTION adk_stat_reset() IS 'Start adk.stat_models, adk.stat_tools and adk.stat_cache counting from now (adk_admin).';
