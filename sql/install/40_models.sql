-- ---------------------------------------------------------------------
-- Models, secrets and the model-call ledger (docs/models.md,
-- docs/observability.md, docs/security.md).
-- ---------------------------------------------------------------------

-- API keys kept in the database.  Readable by adk_admin only; a key is
-- only ever sent to one of its allowed hosts ('*' = any host, said
-- explicitly), so pointing a model at another endpoint cannot leak it.
CREATE TABLE adk.secrets (
    name          text PRIMARY KEY CHECK (name <> ''),
    value         text NOT NULL CHECK (value <> ''),
    allowed_hosts text[] NOT NULL
                  CHECK (cardinality(allowed_hosts) > 0 AND array_position(allowed_hosts, NULL) IS NULL),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE adk.secrets IS 'API keys; each may be sent only to its allowed_hosts. Readable by adk_admin only.';

CREATE TABLE adk.models (
    name           text PRIMARY KEY CHECK (name <> ''),
    provider       text NOT NULL CHECK (provider IN ('openai', 'gemini', 'anthropic')),
    endpoint       text NOT NULL CHECK (endpoint ~* '^https?://[^/?#@[:space:]]+(/[^?#[:space:]]*)?$'),
    model          text NOT NULL CHECK (model <> ''),
    api_key_env    text CHECK (api_key_env ~ '^[A-Za-z_][A-Za-z0-9_]*$'),
    api_key_secret text REFERENCES adk.secrets (name) ON UPDATE CASCADE,
    options        jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(options) = 'object'),
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    CHECK (api_key_env IS NULL OR api_key_secret IS NULL)
);
COMMENT ON TABLE adk.models IS 'Model definitions: provider (openai | gemini | anthropic), base endpoint as the provider SDK takes it, provider model id, where the key comes from, options';

-- The transport options a model or a call may set: header names and
-- values, timeouts and retries within bounds (model/guard.c).
CREATE FUNCTION adk._check_call_options(options jsonb) RETURNS void
    AS 'MODULE_PATHNAME', 'adk_check_call_options_sql' LANGUAGE C STRICT STABLE;

-- The "thinking" setting of a model's options or an agent's
-- generate_config (model/llm_thinking.c, docs/models.md "Thinking"); what
-- names where it is set in the error.
CREATE FUNCTION adk._check_thinking(thinking jsonb, what text) RETURNS void
    AS 'MODULE_PATHNAME', 'adk_check_thinking_sql' LANGUAGE C STRICT STABLE;

-- An endpoint as libcurl reads it, and a host a key may be bound to
-- (model/endpoint.c): NULL when valid, else what is wrong.
CREATE FUNCTION adk._endpoint_problem(url text) RETURNS text
    AS 'MODULE_PATHNAME', 'adk_endpoint_problem_sql' LANGUAGE C STRICT STABLE;
CREATE FUNCTION adk._host_entry_problem(entry text) RETURNS text
    AS 'MODULE_PATHNAME', 'adk_host_entry_problem_sql' LANGUAGE C STRICT STABLE;

-- Every INSERT/UPDATE is checked here, whoever writes it, with messages a
-- person can act on (the CHECK constraints above are the backstop).
CREATE FUNCTION adk._models_check_options() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    k text;
    v jsonb;
    problem text;
    f text;
    users text;
    cycle text[];
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
        ELSIF k = 'fallback_on' THEN
            -- which failures of this model go on to its fallbacks
            -- (model/fallback.c): HTTP statuses, status classes, error codes
            IF jsonb_typeof(v) <> 'array' OR EXISTS (
                   SELECT 1 FROM jsonb_array_elements(v) e
                    WHERE jsonb_typeof(e) <> 'string'
                       OR e #>> '{}' !~ '^([1-5][0-9][0-9]|[1-5]xx|[A-Z][A-Z0-9_]*)$') THEN
                RAISE EXCEPTION 'model option "fallback_on" must be an array of HTTP statuses, status classes or error codes'
                    USING ERRCODE = '22023',
                    HINT = 'For example ["429", "5xx", "TIMEOUT"] (the default), or [] to never fall back.';
            END IF;
        ELSIF k = 'thinking' THEN
            PERFORM adk._check_thinking(v, 'model option');
        ELSIF k = 'headers' THEN
            NULL;   -- checked below, by the rules every call's config is held to
        ELSIF k = 'system_instruction' THEN
            IF jsonb_typeof(v) <> 'string' THEN
                RAISE EXCEPTION 'model option "system_instruction" must be a string' USING ERRCODE = '22023';
            END IF;
        ELSE
            RAISE EXCEPTION 'unknown model option "%"', k USING ERRCODE = '22023',
                HINT = 'Known options: temperature, max_output_tokens, top_p, top_k, stop_sequences, presence_penalty, frequency_penalty, seed, thinking, system_instruction, timeout_ms, connect_timeout_ms, retries, max_request_bytes, headers, fallback_on.';
        END IF;
    END LOOP;
    -- headers, timeout_ms, connect_timeout_ms, retries (model/guard.c)
    PERFORM adk._check_call_options(NEW.options);
    -- fallbacks (88_fallbacks.sql): models that exist, never the model
    -- itself or one twice, no cycle; a model another one falls back to
    -- keeps its name.  Under the definitions lock, as the agent graph's
    -- checks (50_definitions.sql); while a dump is restored only existence
    -- is not checked.
    IF TG_OP = 'UPDATE' AND NEW.name IS DISTINCT FROM OLD.name THEN
        PERFORM adk._lock_definitions();
        users := adk._name_list('model', 'models',
                                ARRAY(SELECT m.name FROM adk.models m
                                       WHERE OLD.name = ANY (m.fallbacks) AND m.name <> OLD.name));
        IF users IS NOT NULL THEN
            RAISE EXCEPTION 'model "%" is a fallback of %', OLD.name, users USING ERRCODE = '23503',
                HINT = 'Remove it from their fallbacks first (adk_define_fallbacks).';
        END IF;
    END IF;
    IF cardinality(NEW.fallbacks) > 0 THEN
        PERFORM adk._lock_definitions();
        IF array_ndims(NEW.fallbacks) <> 1 OR array_lower(NEW.fallbacks, 1) <> 1 THEN
            RAISE EXCEPTION 'fallbacks of model "%" must be a one-dimensional array', NEW.name USING ERRCODE = '22023';
        END IF;
        FOREACH f IN ARRAY NEW.fallbacks LOOP
            IF f IS NULL OR f = '' THEN
                RAISE EXCEPTION 'fallbacks of model "%" must not contain null or empty names', NEW.name
                    USING ERRCODE = '22023';
            END IF;
            IF f = NEW.name THEN
                RAISE EXCEPTION 'model "%" cannot fall back to itself', NEW.name USING ERRCODE = '22023';
            END IF;
            IF cardinality(array_positions(NEW.fallbacks, f)) > 1 THEN
                RAISE EXCEPTION 'model "%" lists fallback "%" twice', NEW.name, f USING ERRCODE = '22023';
            END IF;
            IF adk._check_references() AND NOT EXISTS (SELECT 1 FROM adk.models m WHERE m.name = f) THEN
                RAISE EXCEPTION 'fallback model "%" of model "%" does not exist', f, NEW.name
                    USING ERRCODE = '42704', HINT = 'Define it first with adk_define_model().';
            END IF;
        END LOOP;
        -- a path from one of the fallbacks back to this model is a cycle
        WITH RECURSIVE walk(name, path) AS (
            SELECT x.f, ARRAY[NEW.name, x.f] FROM unnest(NEW.fallbacks) AS x(f)
            UNION ALL
            SELECT x.f, w.path || x.f
              FROM walk w
              JOIN adk.models m ON m.name = w.name AND w.name <> NEW.name
             CROSS JOIN LATERAL unnest(m.fallbacks) AS x(f)
             WHERE NOT (x.f = ANY (w.path[2:]))
        )
        SELECT w.path INTO cycle FROM walk w WHERE w.name = NEW.name LIMIT 1;
        IF cycle IS NOT NULL THEN
            RAISE EXCEPTION 'fallbacks of model "%" would make a cycle: %', NEW.name,
                array_to_string(cycle, ' -> ') USING ERRCODE = '22023',
                HINT = 'A model''s fallbacks are followed depth first; no model may lead back to one before it.';
        END IF;
    END IF;
    -- an INSERT keeps the updated_at it carries (a restored row its own)
    IF TG_OP = 'UPDATE' THEN
        NEW.updated_at := now();
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER adk_models_check_options
    BEFORE INSERT OR UPDATE ON adk.models
    FOR EACH ROW EXECUTE FUNCTION adk._models_check_options();

-- Backends keep the model definitions they have read (model/model_def.c);
-- any change to these two tables empties every backend's copy.
CREATE FUNCTION adk._definitions_changed() RETURNS trigger
    AS 'MODULE_PATHNAME', 'adk_definitions_changed' LANGUAGE C;
CREATE TRIGGER adk_models_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON adk.models
    FOR EACH STATEMENT EXECUTE FUNCTION adk._definitions_changed();
CREATE TRIGGER adk_secrets_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON adk.secrets
    FOR EACH STATEMENT EXECUTE FUNCTION adk._definitions_changed();

CREATE FUNCTION adk_define_model(name text, provider text, endpoint text, model text,
                                 api_key_env text DEFAULT NULL,
                                 api_key_secret text DEFAULT NULL,
                                 options jsonb DEFAULT '{}')
RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO adk.models AS m (name, provider, endpoint, model, api_key_env, api_key_secret, options)
    VALUES ($1, $2, rtrim($3, '/'), $4, $5, $6, coalesce($7, '{}'))
    ON CONFLICT ON CONSTRAINT models_pkey DO UPDATE
       SET provider = EXCLUDED.provider, endpoint = EXCLUDED.endpoint, model = EXCLUDED.model,
           api_key_env = EXCLUDED.api_key_env, api_key_secret = EXCLUDED.api_key_secret,
           options = EXCLUDED.options
$$;
COMMENT ON FUNCTION adk_define_model(text, text, text, text, text, text, jsonb) IS
    'Create or replace a model: provider openai | gemini | anthropic, endpoint as the provider SDK''s base URL, the provider''s model id, the key from a server environment variable or from adk.secrets, options (generation config, timeout_ms, retries, headers).';

CREATE FUNCTION adk_set_secret(name text, value text, allowed_hosts text[])
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    entry text;
    problem text;
BEGIN
    IF name IS NULL OR name = '' THEN
        RAISE EXCEPTION 'secret name must not be empty' USING ERRCODE = '22023';
    END IF;
    IF value IS NULL OR value = '' THEN
        -- the value itself is never shown
        RAISE EXCEPTION 'secret "%" must have a value', name USING ERRCODE = '22023';
    END IF;
    IF cardinality(allowed_hosts) IS DISTINCT FROM array_length(allowed_hosts, 1)
       OR coalesce(cardinality(allowed_hosts), 0) = 0
       OR array_position(allowed_hosts, NULL) IS NOT NULL
       OR array_position(allowed_hosts, '') IS NOT NULL THEN
        RAISE EXCEPTION 'secret "%" needs the hosts it may be sent to', name USING ERRCODE = '22023',
            HINT = 'Give host names or host:port, e.g. ARRAY[''api.openai.com''], or ARRAY[''*''] for any host.';
    END IF;
    -- each entry as the endpoint check will read it (model/endpoint.c)
    FOREACH entry IN ARRAY allowed_hosts LOOP
        problem := adk._host_entry_problem(lower(entry));
        IF problem IS NOT NULL THEN
            RAISE EXCEPTION 'invalid host "%" for secret "%"', entry, name USING ERRCODE = '22023',
                DETAIL = problem || '.',
                HINT = 'Give a host, host:port or scheme://host:port, e.g. api.openai.com, 127.0.0.1:8080 or https://api.openai.com; ''*'' is any host.';
        END IF;
    END LOOP;
    INSERT INTO adk.secrets AS s (name, value, allowed_hosts)
    VALUES (name, value, (SELECT array_agg(lower(h)) FROM unnest(allowed_hosts) h))
    ON CONFLICT ON CONSTRAINT secrets_pkey DO UPDATE
       SET value = EXCLUDED.value, allowed_hosts = EXCLUDED.allowed_hosts, updated_at = now();
END
$$;
COMMENT ON FUNCTION adk_set_secret(text, text, text[]) IS
    'Store an API key, bound to the hosts it may be sent to (host, host:port or scheme://host[:port]; ''*'' for any).';

-- One row per model request.
CREATE TABLE adk.model_calls (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    created_at    timestamptz NOT NULL DEFAULT now(),
    model         text NOT NULL,
    provider      text NOT NULL,
    url           text NOT NULL,
    invocation_id text,
    stream        boolean NOT NULL,
    http_status   integer,
    attempts      integer NOT NULL,
    latency_ms    double precision NOT NULL,
    input_tokens  bigint,
    output_tokens bigint,
    finish_reason text,
    error_code    text,
    error_message text,
    request       jsonb,   -- the provider request as sent
    response      jsonb,   -- the response as returned (ADK's LlmResponse shape)
    response_body text,    -- the provider's raw body (NULL when streamed, or not text)
    role_name     name NOT NULL DEFAULT current_user
);
-- Bodies are compressed with lz4 where the server has it: the ledger is
-- written on every model call, and pglz took longer than the row's insert.
DO $$
BEGIN
    IF 'lz4' = ANY ((SELECT enumvals FROM pg_catalog.pg_settings
                      WHERE name = 'default_toast_compression')::text[]) THEN
        ALTER TABLE adk.model_calls
            ALTER COLUMN request SET COMPRESSION lz4,
            ALTER COLUMN response SET COMPRESSION lz4,
            ALTER COLUMN response_body SET COMPRESSION lz4;
    END IF;
END
$$;
CREATE INDEX model_calls_created_at_idx ON adk.model_calls (created_at);
CREATE INDEX model_calls_invocation_idx ON adk.model_calls (invocation_id) WHERE invocation_id IS NOT NULL;
COMMENT ON TABLE adk.model_calls IS 'The model-call ledger: one row per request, bodies with secrets redacted; rows older than adk.model_calls_retention are removed as new ones are written.';

CREATE FUNCTION adk_generate(model text, contents jsonb, tools jsonb DEFAULT NULL, config jsonb DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'adk_generate' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_generate(text, jsonb, jsonb, jsonb) IS
    'One model call: contents = array of ADK contents, tools = array of {name, description, parameters}, config = generation config (+ system_instruction). Returns one LLM response (content, usage_metadata, finish_reason, or error_code/error_message).';

CREATE FUNCTION adk_generate_stream(model text, contents jsonb, tools jsonb DEFAULT NULL, config jsonb DEFAULT NULL)
RETURNS SETOF jsonb
AS 'MODULE_PATHNAME', 'adk_generate_stream' LANGUAGE C VOLATILE ROWS 20;
COMMENT ON FUNCTION adk_generate_stream(text, jsonb, jsonb, jsonb) IS
    'adk_generate with streaming: the partial responses ("partial": true), then the aggregated final response.';

-- definitions survive pg_dump (the ledger is a log, and is not dumped)
SELECT pg_catalog.pg_extension_config_dump('adk.secrets', '');
SELECT pg_catalog.pg_extension_config_dump('adk.models', '');
