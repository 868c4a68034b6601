-- adk_runner 0.3.0 -> 0.4.0: ALTER EXTENSION adk_runner UPDATE TO '0.4.0'.
-- Every change to the SQL surface since release 0.3.0, in the order the
-- full install script (sql/install/) makes it.  test/t/024_upgrade.pl
-- checks that a 0.3.0 schema updated with this script equals a fresh
-- 0.4.0 install (docs/releasing.md).

\echo Use "ALTER EXTENSION adk_runner UPDATE" to load this file. \quit

-- adk.models.options.max_request_bytes: a model's own bound on its
-- requests (sql/install/40_models.sql)
CREATE OR REPLACE FUNCTION adk._models_check_options() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    k text;
    v jsonb;
    problem text;
BEGIN
    IF NEW.name IS NULL OR NEW.name = '' THEN
        RAISE EXCEPTION 'model name must not be empty' USING ERRCODE = '22023';
    END IF;
    IF NEW.provider IS NULL OR NEW.provider NOT IN ('openai', 'gemini', 'anthropic') THEN
        RAISE EXCEPTION 'unknown model provider "%"', NEW.provider USING ERRCODE = '22023',
            HINT = 'Use openai (any OpenAI-compatible Chat Completions server), gemini or anthropic.';
    END IF;
    IF NEW.endpoint IS NULL OR NEW.endpoint !~* '^https?://[^/?#@[:space:]]+(/[^?#[:space:]]*)?$' THEN
        RAISE EXCEPTION 'invalid endpoint "%" for model "%"', NEW.endpoint, NEW.name USING ERRCODE = '22023',
            HINT = 'Give the base URL as the provider''s SDK takes it, e.g. https://api.openai.com/v1, without credentials, query or fragment.';
    END IF;
    -- read as libcurl will read it when it connects: a port that is not a
    -- number ("http://127.0.0.1:56102:56103") is refused here
    problem := adk._endpoint_problem(NEW.endpoint);
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION 'invalid endpoint "%" for model "%"', NEW.endpoint, NEW.name USING ERRCODE = '22023',
            DETAIL = problem || '.',
            HINT = 'Give the base URL as the provider''s SDK takes it, e.g. https://api.openai.com/v1, without credentials, query or fragment.';
    END IF;
    IF NEW.model IS NULL OR NEW.model = '' THEN
        RAISE EXCEPTION 'model "%" needs the provider''s model id', NEW.name USING ERRCODE = '22023';
    END IF;
    IF NEW.api_key_env IS NOT NULL AND NEW.api_key_secret IS NOT NULL THEN
        RAISE EXCEPTION 'model "%" takes its key from an environment variable or a secret, not both', NEW.name
            USING ERRCODE = '22023';
    END IF;
    IF NEW.api_key_env !~ '^[A-Za-z_][A-Za-z0-9_]*$' THEN
        RAISE EXCEPTION 'invalid environment variable name "%"', NEW.api_key_env USING ERRCODE = '22023';
    END IF;
    IF NEW.api_key_secret IS NOT NULL AND NOT EXISTS (SELECT 1 FROM adk.secrets s WHERE s.name = NEW.api_key_secret) THEN
        RAISE EXCEPTION 'secret "%" does not exist', NEW.api_key_secret USING ERRCODE = '42704',
            HINT = 'Store it first with adk_set_secret().';
    END IF;
    IF NEW.options IS NULL OR jsonb_typeof(NEW.options) <> 'object' THEN
        RAISE EXCEPTION 'model options must be a JSON object' USING ERRCODE = '22023';
    END IF;
    FOR k, v IN SELECT * FROM jsonb_each(NEW.options) LOOP
        IF k IN ('temperature', 'top_p', 'presence_penalty', 'frequency_penalty') THEN
            IF jsonb_typeof(v) <> 'number' THEN
                RAISE EXCEPTION 'model option "%" must be a number', k USING ERRCODE = '22023';
            END IF;
        ELSIF k IN ('max_output_tokens', 'top_k', 'seed', 'timeout_ms', 'connect_timeout_ms', 'retries') THEN
            IF jsonb_typeof(v) <> 'number' OR v::numeric <> trunc(v::numeric) OR v::numeric < 0 THEN
                RAISE EXCEPTION 'model option "%" must be a non-negative integer', k USING ERRCODE = '22023';
            END IF;
        ELSIF k = 'stop_sequences' THEN
            IF jsonb_typeof(v) <> 'array' OR EXISTS (SELECT 1 FROM jsonb_array_elements(v) e WHERE jsonb_typeof(e) <> 'string') THEN
                RAISE EXCEPTION 'model option "stop_sequences" must be an array of strings' USING ERRCODE = '22023';
            END IF;
        ELSIF k = 'max_request_bytes' THEN
            -- the model's own bound on a request; adk.max_request_bytes
            -- still holds (the smaller of the two applies)
            IF jsonb_typeof(v) <> 'number' OR v::numeric <> trunc(v::numeric)
               OR v::numeric < 1 OR v::numeric > 2147483647 THEN
                RAISE EXCEPTION 'model option "max_request_bytes" must be an integer between 1 and 2147483647'
                    USING ERRCODE = '22023',
                    HINT = 'Give the largest request body in bytes the model may be sent; adk.max_request_bytes still applies when it is smaller.';
            END IF;
        ELSIF k = 'headers' THEN
            NULL;   -- checked below, by the rules every call's config is held to
        ELSIF k = 'system_instruction' THEN
            IF jsonb_typeof(v) <> 'string' THEN
                RAISE EXCEPTION 'model option "system_instruction" must be a string' USING ERRCODE = '22023';
            END IF;
        ELSE
            RAISE EXCEPTION 'unknown model option "%"', k USING ERRCODE = '22023',
                HINT = 'Known options: temperature, max_output_tokens, top_p, top_k, stop_sequences, presence_penalty, frequency_penalty, seed, system_instruction, timeout_ms, connect_timeout_ms, retries, max_request_bytes, headers.';
        END IF;
    END LOOP;
    -- headers, timeout_ms, connect_timeout_ms, retries (model/guard.c)
    PERFORM adk._check_call_options(NEW.options);
    -- an INSERT keeps the updated_at it carries (a restored row its own)
    IF TG_OP = 'UPDATE' THEN
        NEW.updated_at := now();
    END IF;
    RETURN NEW;
END
$$;
