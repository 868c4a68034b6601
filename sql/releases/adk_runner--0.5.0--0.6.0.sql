-- adk_runner 0.5.0 -> 0.6.0: ALTER EXTENSION adk_runner UPDATE TO '0.6.0'.
-- Every change to the SQL surface since release 0.5.0, in the order the
-- full install script (sql/install/) makes it.  test/t/024_upgrade.pl
-- checks that a 0.5.0 schema updated with this script equals a fresh
-- 0.6.0 install (docs/releasing.md).

\echo Use "ALTER EXTENSION adk_runner UPDATE" to load this file. \quit

-- Structured output (docs/models.md): a chat agent may have an
-- output_schema (50_definitions.sql)
CREATE OR REPLACE FUNCTION adk._agents_before_write() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    k text;
    v jsonb;
    extra text[];
    dup text;
BEGIN
    PERFORM adk._lock_definitions();
    IF NEW.name IS NULL THEN
        RAISE EXCEPTION 'agent name must not be null' USING ERRCODE = '22004';
    END IF;
    IF NEW.name !~ '^[A-Za-z_][A-Za-z0-9_]*$' OR length(NEW.name) > 128 THEN
        RAISE EXCEPTION 'invalid agent name "%"', NEW.name USING ERRCODE = '22023',
            HINT = 'An agent name starts with a letter or underscore, followed by letters, digits or underscores; at most 128 characters.';
    END IF;
    IF NEW.name = 'user' THEN
        RAISE EXCEPTION 'agent name "user" is reserved' USING ERRCODE = '22023',
            DETAIL = 'Events written by the user have the author "user".';
    END IF;
    IF NEW.name = ANY (adk._reserved_tool_names()) THEN
        RAISE EXCEPTION 'agent name "%" is reserved', NEW.name USING ERRCODE = '22023',
            DETAIL = 'An agent can be used as a tool, and this is the name of a tool built into adk_runner.';
    END IF;
    IF (TG_OP = 'INSERT' OR NEW.name <> OLD.name)
       AND EXISTS (SELECT 1 FROM adk.tools t WHERE t.name = NEW.name) THEN
        RAISE EXCEPTION 'agent name "%" is already used by a tool', NEW.name USING ERRCODE = '42710',
            DETAIL = 'An agent can be listed as a tool, so tools and agents share one set of names.';
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.name <> OLD.name THEN
        SELECT string_agg(format('"%s"', a.name), ', ' ORDER BY a.name) INTO dup
          FROM adk.apps a WHERE a.root_agent = OLD.name;
        IF dup IS NOT NULL THEN
            RAISE EXCEPTION 'agent "%" is the root agent of app %', OLD.name, dup USING ERRCODE = '23503',
                HINT = 'Give the app another root agent first.';
        END IF;
    END IF;
    IF NEW.kind IS NULL OR NEW.kind NOT IN ('llm', 'sequential', 'parallel', 'loop') THEN
        RAISE EXCEPTION 'unknown agent kind "%"', NEW.kind USING ERRCODE = '22023',
            HINT = 'Use llm, sequential, parallel or loop.';
    END IF;
    IF NEW.include_contents IS NULL OR NEW.include_contents NOT IN ('default', 'none') THEN
        RAISE EXCEPTION 'invalid include_contents "%" for agent "%"', NEW.include_contents, NEW.name
            USING ERRCODE = '22023', HINT = 'Use default or none.';
    END IF;
    IF NEW.mode IS NOT NULL AND NEW.mode NOT IN ('chat', 'task', 'single_turn') THEN
        RAISE EXCEPTION 'unknown mode "%" for agent "%"', NEW.mode, NEW.name USING ERRCODE = '22023',
            HINT = 'Use chat, task or single_turn, or leave it NULL for chat.';
    END IF;
    NEW.tools := coalesce(NEW.tools, '{}');
    NEW.sub_agents := coalesce(NEW.sub_agents, '{}');
    NEW.generate_config := coalesce(NEW.generate_config, '{}');
    NEW.disallow_transfer_to_parent := coalesce(NEW.disallow_transfer_to_parent, false);
    NEW.disallow_transfer_to_peers := coalesce(NEW.disallow_transfer_to_peers, false);

    -- the lists: one dimension, no NULL, no duplicate, not the agent itself
    IF array_ndims(NEW.tools) > 1 OR array_position(NEW.tools, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'tools of agent "%" must be a list of names', NEW.name USING ERRCODE = '22023';
    END IF;
    IF array_ndims(NEW.sub_agents) > 1 OR array_position(NEW.sub_agents, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'sub_agents of agent "%" must be a list of names', NEW.name USING ERRCODE = '22023';
    END IF;
    SELECT t INTO dup FROM unnest(NEW.tools) t GROUP BY t HAVING count(*) > 1 ORDER BY t LIMIT 1;
    IF dup IS NOT NULL THEN
        RAISE EXCEPTION 'agent "%" lists tool "%" twice', NEW.name, dup USING ERRCODE = '22023';
    END IF;
    SELECT s INTO dup FROM unnest(NEW.sub_agents) s GROUP BY s HAVING count(*) > 1 ORDER BY s LIMIT 1;
    IF dup IS NOT NULL THEN
        RAISE EXCEPTION 'agent "%" lists sub-agent "%" twice', NEW.name, dup USING ERRCODE = '22023';
    END IF;
    IF NEW.name = ANY (NEW.tools) THEN
        RAISE EXCEPTION 'agent "%" cannot use itself as a tool', NEW.name USING ERRCODE = '42P17';
    END IF;
    IF NEW.name = ANY (NEW.sub_agents) THEN
        RAISE EXCEPTION 'agent "%" cannot be its own sub-agent', NEW.name USING ERRCODE = '42P17';
    END IF;
    IF 'transfer_to_agent' = ANY (NEW.tools) THEN
        RAISE EXCEPTION 'agent "%" cannot list tool "transfer_to_agent"', NEW.name USING ERRCODE = '22023',
            DETAIL = 'The runner adds it to every agent that has sub-agents.',
            HINT = 'List the agents it may transfer to in sub_agents.';
    END IF;
    IF 'adk_request_confirmation' = ANY (NEW.tools) THEN
        RAISE EXCEPTION 'agent "%" cannot list tool "adk_request_confirmation"', NEW.name USING ERRCODE = '22023',
            HINT = 'Mark the tools that need confirmation with require_confirmation.';
    END IF;

    -- what each kind may have
    IF NEW.kind <> 'llm' THEN
        extra := array_remove(ARRAY[
            CASE WHEN NEW.model IS NOT NULL THEN 'model' END,
            CASE WHEN NEW.instruction IS NOT NULL THEN 'instruction' END,
            CASE WHEN cardinality(NEW.tools) > 0 THEN 'tools' END,
            CASE WHEN NEW.output_key IS NOT NULL THEN 'output_key' END,
            CASE WHEN NEW.generate_config <> '{}' THEN 'generate_config' END,
            CASE WHEN NEW.mode IS NOT NULL THEN 'mode' END,
            CASE WHEN NEW.input_schema IS NOT NULL THEN 'input_schema' END,
            CASE WHEN NEW.output_schema IS NOT NULL THEN 'output_schema' END], NULL);
        IF cardinality(extra) > 0 THEN
            RAISE EXCEPTION '% agent "%" cannot have %', NEW.kind, NEW.name, array_to_string(extra, ', ')
                USING ERRCODE = '22023',
                      DETAIL = 'Only llm agents call a model; sequential, parallel and loop agents run their sub-agents.';
        END IF;
        IF cardinality(NEW.sub_agents) = 0 THEN
            RAISE EXCEPTION '% agent "%" needs at least one sub-agent', NEW.kind, NEW.name USING ERRCODE = '22023';
        END IF;
    END IF;
    IF NEW.max_iterations IS NOT NULL AND NEW.kind <> 'loop' THEN
        RAISE EXCEPTION '% agent "%" cannot have max_iterations', NEW.kind, NEW.name USING ERRCODE = '22023',
            HINT = 'max_iterations applies to loop agents only.';
    END IF;
    IF NEW.max_iterations <= 0 THEN
        RAISE EXCEPTION 'max_iterations of agent "%" must be positive', NEW.name USING ERRCODE = '22023',
            HINT = 'Leave it NULL to loop until a sub-agent escalates (exit_loop).';
    END IF;
    IF NEW.output_key = '' THEN
        RAISE EXCEPTION 'output_key of agent "%" must not be empty', NEW.name USING ERRCODE = '22023';
    END IF;

    -- modes (docs/agent-modes.md): input_schema shapes how a coordinator
    -- calls a task or single_turn agent, output_schema its answer (models.md)
    FOR k, v IN SELECT * FROM (VALUES ('input_schema', NEW.input_schema),
                                      ('output_schema', NEW.output_schema)) AS x(k, v)
                 WHERE x.v IS NOT NULL LOOP
        IF jsonb_typeof(v) <> 'object' THEN
            RAISE EXCEPTION '% of agent "%" must be a JSON Schema object', k, NEW.name USING ERRCODE = '22023',
                HINT = 'For example {"type": "object", "properties": {"city": {"type": "string"}}}.';
        END IF;
        IF v ? 'type' AND (jsonb_typeof(v -> 'type') <> 'string'
                           OR lower(v ->> 'type') NOT IN ('object', 'string', 'number', 'integer', 'boolean', 'array')) THEN
            RAISE EXCEPTION '% of agent "%" has an invalid "type"', k, NEW.name USING ERRCODE = '22023',
                DETAIL = format('It is %s.', v -> 'type'),
                HINT = 'Use one of object, string, number, integer, boolean or array.';
        END IF;
        IF coalesce(NEW.mode, 'chat') = 'chat' AND k = 'input_schema' THEN
            RAISE EXCEPTION 'chat agent "%" cannot have %', NEW.name, k USING ERRCODE = '22023',
                DETAIL = 'input_schema is the parameters of the tool a coordinator calls a task or single_turn agent with; output_schema shapes the result that agent hands back.',
                HINT = 'Set mode to task or single_turn, or leave the schema NULL.';
        END IF;
    END LOOP;
    -- before the foreign key's own check, for a clearer message
    IF NEW.model IS NOT NULL AND adk._check_references()
       AND NOT EXISTS (SELECT 1 FROM adk.models m WHERE m.name = NEW.model) THEN
        RAISE EXCEPTION 'model "%" of agent "%" does not exist', NEW.model, NEW.name USING ERRCODE = '42704',
            HINT = 'Define it first with adk_define_model().';
    END IF;

    -- generation settings: the generation keys of model options
    IF jsonb_typeof(NEW.generate_config) <> 'object' THEN
        RAISE EXCEPTION 'generate_config of agent "%" must be a JSON object', NEW.name USING ERRCODE = '22023';
    END IF;
    FOR k, v IN SELECT * FROM jsonb_each(NEW.generate_config) LOOP
        IF k IN ('temperature', 'top_p', 'presence_penalty', 'frequency_penalty') THEN
            IF jsonb_typeof(v) <> 'number' THEN
                RAISE EXCEPTION 'generate_config "%" of agent "%" must be a number', k, NEW.name USING ERRCODE = '22023';
            END IF;
        ELSIF k IN ('max_output_tokens', 'top_k', 'seed') THEN
            IF jsonb_typeof(v) <> 'number' OR v::numeric <> trunc(v::numeric) OR v::numeric < 0 THEN
                RAISE EXCEPTION 'generate_config "%" of agent "%" must be a non-negative integer', k, NEW.name
                    USING ERRCODE = '22023';
            END IF;
        ELSIF k = 'stop_sequences' THEN
            IF jsonb_typeof(v) <> 'array' OR EXISTS (SELECT 1 FROM jsonb_array_elements(v) e WHERE jsonb_typeof(e) <> 'string') THEN
                RAISE EXCEPTION 'generate_config "stop_sequences" of agent "%" must be an array of strings', NEW.name
                    USING ERRCODE = '22023';
            END IF;
        ELSE
            RAISE EXCEPTION 'unknown generate_config key "%" for agent "%"', k, NEW.name USING ERRCODE = '22023',
                HINT = 'Known keys: temperature, max_output_tokens, top_p, top_k, stop_sequences, presence_penalty, frequency_penalty, seed.';
        END IF;
    END LOOP;
    IF TG_OP = 'UPDATE' THEN
        NEW.updated_at := now();
    END IF;
    RETURN NEW;
END
$$;

-- the model's capabilities read with its definition (88_store_statements.sql)
DROP FUNCTION adk._model_definition(text);
CREATE FUNCTION adk._model_definition(p_name text)
RETURNS TABLE (r_provider text, r_endpoint text, r_model text, r_options jsonb,
               r_api_key_env text, r_api_key_secret text, r_secret_value text,
               r_allowed_hosts text[], r_fallbacks text[], r_capabilities jsonb)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT m.provider, m.endpoint, m.model, m.options, m.api_key_env,
           m.api_key_secret, s.value, s.allowed_hosts, m.fallbacks, m.capabilities
      FROM adk.models m
      LEFT JOIN adk.secrets s ON s.name = m.api_key_secret
     WHERE m.name = p_name;
END
$$;
REVOKE ALL ON FUNCTION adk._model_definition(text) FROM PUBLIC;

-- adk.models.capabilities, adk_define_capabilities, adk_json_schema
-- (88_structured_output.sql)
-- What a model can do, where it differs from its provider's default
-- (model/model_def.c).  Unset keys take the default.
ALTER TABLE adk.models ADD COLUMN capabilities jsonb NOT NULL DEFAULT '{}'
    CHECK (jsonb_typeof(capabilities) = 'object');
COMMENT ON COLUMN adk.models.capabilities IS
    'What the model can do where it differs from its provider''s default: output_schema_with_tools (boolean; default true for openai, false for gemini and anthropic) -- whether a structured output schema is sent natively to an agent with tools, or through set_model_response';

-- Every INSERT/UPDATE of capabilities is checked here, whoever writes it.
CREATE FUNCTION adk._models_check_capabilities() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    k text;
    v jsonb;
BEGIN
    IF NEW.capabilities IS NULL OR jsonb_typeof(NEW.capabilities) <> 'object' THEN
        RAISE EXCEPTION 'capabilities of model "%" must be a JSON object', NEW.name USING ERRCODE = '22023',
            HINT = 'For example {"output_schema_with_tools": false}.';
    END IF;
    FOR k, v IN SELECT * FROM jsonb_each(NEW.capabilities) LOOP
        IF k <> 'output_schema_with_tools' THEN
            RAISE EXCEPTION 'unknown capability "%" of model "%"', k, NEW.name USING ERRCODE = '22023',
                HINT = 'The capability a model can set is output_schema_with_tools.';
        END IF;
        IF jsonb_typeof(v) <> 'boolean' THEN
            RAISE EXCEPTION 'capability "%" of model "%" must be true or false', k, NEW.name USING ERRCODE = '22023',
                DETAIL = format('It is %s.', v);
        END IF;
    END LOOP;
    RETURN NEW;
END
$$;
CREATE TRIGGER adk_models_check_capabilities
    BEFORE INSERT OR UPDATE OF capabilities ON adk.models
    FOR EACH ROW EXECUTE FUNCTION adk._models_check_capabilities();

CREATE FUNCTION adk_define_capabilities(model text, capabilities jsonb)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE adk.models m SET capabilities = coalesce($2, '{}') WHERE m.name = $1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'model "%" does not exist', $1 USING ERRCODE = '42704',
            HINT = 'Define it first with adk_define_model().';
    END IF;
END
$$;
COMMENT ON FUNCTION adk_define_capabilities(text, jsonb) IS
    'Set what a model can do where it differs from its provider''s default, e.g. {"output_schema_with_tools": false} (NULL or {}: the defaults); adk_admin.';

-- A JSON Schema of a composite type's rows, as an agent's output_schema:
-- every attribute a required property, no others (OpenAI's strict
-- structured outputs ask for both), of a type jsonb_populate_record reads
-- back.  Types it cannot map are refused.
CREATE FUNCTION adk._json_schema(type regtype) RETURNS jsonb
LANGUAGE plpgsql STABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    t pg_catalog.pg_type;
    props jsonb := '{}';
    names text[] := '{}';
    a record;
BEGIN
    SELECT * INTO t FROM pg_catalog.pg_type WHERE oid = type;
    WHILE t.typtype = 'd' LOOP
        SELECT * INTO t FROM pg_catalog.pg_type WHERE oid = t.typbasetype;
    END LOOP;
    IF t.typtype = 'c' THEN
        FOR a IN SELECT at.attname::text AS name, at.atttypid
                   FROM pg_catalog.pg_attribute at
                  WHERE at.attrelid = t.typrelid AND at.attnum > 0 AND NOT at.attisdropped
                  ORDER BY at.attnum LOOP
            props := props || jsonb_build_object(a.name, adk._json_schema(a.atttypid::regtype));
            names := names || a.name;
        END LOOP;
        IF cardinality(names) = 0 THEN
            RAISE EXCEPTION 'composite type % has no attributes', type USING ERRCODE = '22023';
        END IF;
        RETURN jsonb_build_object('type', 'object', 'properties', props,
                                  'required', to_jsonb(names), 'additionalProperties', false);
    ELSIF t.typtype = 'e' THEN
        RETURN jsonb_build_object('type', 'string', 'enum',
            (SELECT jsonb_agg(e.enumlabel ORDER BY e.enumsortorder)
               FROM pg_catalog.pg_enum e WHERE e.enumtypid = t.oid));
    ELSIF t.typcategory = 'A' AND t.typelem <> 0 THEN
        RETURN jsonb_build_object('type', 'array', 'items', adk._json_schema(t.typelem::regtype));
    ELSIF t.oid IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype) THEN
        RETURN '{"type": "integer"}';
    ELSIF t.oid IN ('numeric'::regtype, 'float4'::regtype, 'float8'::regtype) THEN
        RETURN '{"type": "number"}';
    ELSIF t.oid = 'bool'::regtype THEN
        RETURN '{"type": "boolean"}';
    ELSIF t.oid IN ('text'::regtype, 'varchar'::regtype, 'bpchar'::regtype, 'name'::regtype) THEN
        RETURN '{"type": "string"}';
    ELSIF t.oid IN ('json'::regtype, 'jsonb'::regtype) THEN
        RETURN '{"type": "object"}';
    ELSIF t.oid = 'uuid'::regtype THEN
        RETURN '{"type": "string", "format": "uuid"}';
    ELSIF t.oid = 'date'::regtype THEN
        RETURN '{"type": "string", "format": "date"}';
    ELSIF t.oid IN ('timestamp'::regtype, 'timestamptz'::regtype) THEN
        RETURN '{"type": "string", "format": "date-time"}';
    ELSIF t.oid IS NULL OR t.typtype = 'p' THEN
        RAISE EXCEPTION 'type % cannot be an output schema', type USING ERRCODE = '22023',
            HINT = 'Give a composite type, e.g. ''app.ticket''::regtype made with CREATE TYPE app.ticket AS (...).';
    ELSE
        RAISE EXCEPTION 'type % has no JSON Schema', type::text USING ERRCODE = '0A000',
            DETAIL = 'adk_json_schema maps text, varchar, char, name, integer, numeric and floating-point types, boolean, json, jsonb, uuid, date, timestamp, enums, domains over these, arrays and composite types.',
            HINT = 'Use one of those types for the attribute, or write the JSON Schema yourself.';
    END IF;
END
$$;
CREATE FUNCTION adk_json_schema(type regtype) RETURNS jsonb
LANGUAGE sql STABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
    SELECT adk._json_schema($1)
$$;
COMMENT ON FUNCTION adk_json_schema(regtype) IS
    'The JSON Schema of a type''s values (a composite type: an object with every attribute a required property, no others), for output_schema: the answer then goes into a table with jsonb_populate_record.';

-- their grants (90_privileges.sql)
REVOKE ALL ON FUNCTION adk._models_check_capabilities() FROM PUBLIC;
REVOKE ALL ON FUNCTION adk_define_capabilities(text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION adk_define_capabilities(text, jsonb) TO adk_admin;
REVOKE ALL ON FUNCTION adk._json_schema(regtype) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION adk._json_schema(regtype) TO adk_user;
REVOKE ALL ON FUNCTION adk_json_schema(regtype) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION adk_json_schema(regtype) TO adk_user;

-- adk_user reads the capabilities, in the table and the view (90_privileges.sql)
GRANT SELECT (capabilities) ON adk.models TO adk_user;
CREATE OR REPLACE VIEW adk.model_definitions AS
SELECT m.name, m.provider, m.endpoint, m.model, m.api_key_env, m.api_key_secret,
       CASE WHEN m.options OPERATOR(pg_catalog.?) 'headers'
            THEN m.options OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('headers',
                 (SELECT COALESCE(pg_catalog.jsonb_object_agg(h.key, pg_catalog.to_jsonb('[REDACTED]'::text)), '{}'::jsonb)
                    FROM pg_catalog.jsonb_each(m.options OPERATOR(pg_catalog.->) 'headers') h))
            ELSE m.options END AS options,
       m.price, m.created_at, m.updated_at, m.fallbacks, m.capabilities
  FROM adk.models m;

-- Thinking (docs/models.md, "Thinking"): the "thinking" setting checked
-- in model options and agents' generate_config (40_models.sql,
-- 50_definitions.sql), reasoning tokens in the ledger, priced in
-- adk.costs (88_thinking.sql).
CREATE FUNCTION adk._check_thinking(thinking jsonb, what text) RETURNS void
    AS 'MODULE_PATHNAME', 'adk_check_thinking_sql' LANGUAGE C STRICT STABLE;
REVOKE ALL ON FUNCTION adk._check_thinking(jsonb, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION adk._check_thinking(jsonb, text) TO adk_admin;

CREATE OR REPLACE FUNCTION adk._models_check_options() RETURNS trigger
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

CREATE OR REPLACE FUNCTION adk._agents_before_write() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    k text;
    v jsonb;
    extra text[];
    dup text;
BEGIN
    PERFORM adk._lock_definitions();
    IF NEW.name IS NULL THEN
        RAISE EXCEPTION 'agent name must not be null' USING ERRCODE = '22004';
    END IF;
    IF NEW.name !~ '^[A-Za-z_][A-Za-z0-9_]*$' OR length(NEW.name) > 128 THEN
        RAISE EXCEPTION 'invalid agent name "%"', NEW.name USING ERRCODE = '22023',
            HINT = 'An agent name starts with a letter or underscore, followed by letters, digits or underscores; at most 128 characters.';
    END IF;
    IF NEW.name = 'user' THEN
        RAISE EXCEPTION 'agent name "user" is reserved' USING ERRCODE = '22023',
            DETAIL = 'Events written by the user have the author "user".';
    END IF;
    IF NEW.name = ANY (adk._reserved_tool_names()) THEN
        RAISE EXCEPTION 'agent name "%" is reserved', NEW.name USING ERRCODE = '22023',
            DETAIL = 'An agent can be used as a tool, and this is the name of a tool built into adk_runner.';
    END IF;
    IF (TG_OP = 'INSERT' OR NEW.name <> OLD.name)
       AND EXISTS (SELECT 1 FROM adk.tools t WHERE t.name = NEW.name) THEN
        RAISE EXCEPTION 'agent name "%" is already used by a tool', NEW.name USING ERRCODE = '42710',
            DETAIL = 'An agent can be listed as a tool, so tools and agents share one set of names.';
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.name <> OLD.name THEN
        SELECT string_agg(format('"%s"', a.name), ', ' ORDER BY a.name) INTO dup
          FROM adk.apps a WHERE a.root_agent = OLD.name;
        IF dup IS NOT NULL THEN
            RAISE EXCEPTION 'agent "%" is the root agent of app %', OLD.name, dup USING ERRCODE = '23503',
                HINT = 'Give the app another root agent first.';
        END IF;
    END IF;
    IF NEW.kind IS NULL OR NEW.kind NOT IN ('llm', 'sequential', 'parallel', 'loop') THEN
        RAISE EXCEPTION 'unknown agent kind "%"', NEW.kind USING ERRCODE = '22023',
            HINT = 'Use llm, sequential, parallel or loop.';
    END IF;
    IF NEW.include_contents IS NULL OR NEW.include_contents NOT IN ('default', 'none') THEN
        RAISE EXCEPTION 'invalid include_contents "%" for agent "%"', NEW.include_contents, NEW.name
            USING ERRCODE = '22023', HINT = 'Use default or none.';
    END IF;
    IF NEW.mode IS NOT NULL AND NEW.mode NOT IN ('chat', 'task', 'single_turn') THEN
        RAISE EXCEPTION 'unknown mode "%" for agent "%"', NEW.mode, NEW.name USING ERRCODE = '22023',
            HINT = 'Use chat, task or single_turn, or leave it NULL for chat.';
    END IF;
    NEW.tools := coalesce(NEW.tools, '{}');
    NEW.sub_agents := coalesce(NEW.sub_agents, '{}');
    NEW.generate_config := coalesce(NEW.generate_config, '{}');
    NEW.disallow_transfer_to_parent := coalesce(NEW.disallow_transfer_to_parent, false);
    NEW.disallow_transfer_to_peers := coalesce(NEW.disallow_transfer_to_peers, false);

    -- the lists: one dimension, no NULL, no duplicate, not the agent itself
    IF array_ndims(NEW.tools) > 1 OR array_position(NEW.tools, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'tools of agent "%" must be a list of names', NEW.name USING ERRCODE = '22023';
    END IF;
    IF array_ndims(NEW.sub_agents) > 1 OR array_position(NEW.sub_agents, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'sub_agents of agent "%" must be a list of names', NEW.name USING ERRCODE = '22023';
    END IF;
    SELECT t INTO dup FROM unnest(NEW.tools) t GROUP BY t HAVING count(*) > 1 ORDER BY t LIMIT 1;
    IF dup IS NOT NULL THEN
        RAISE EXCEPTION 'agent "%" lists tool "%" twice', NEW.name, dup USING ERRCODE = '22023';
    END IF;
    SELECT s INTO dup FROM unnest(NEW.sub_agents) s GROUP BY s HAVING count(*) > 1 ORDER BY s LIMIT 1;
    IF dup IS NOT NULL THEN
        RAISE EXCEPTION 'agent "%" lists sub-agent "%" twice', NEW.name, dup USING ERRCODE = '22023';
    END IF;
    IF NEW.name = ANY (NEW.tools) THEN
        RAISE EXCEPTION 'agent "%" cannot use itself as a tool', NEW.name USING ERRCODE = '42P17';
    END IF;
    IF NEW.name = ANY (NEW.sub_agents) THEN
        RAISE EXCEPTION 'agent "%" cannot be its own sub-agent', NEW.name USING ERRCODE = '42P17';
    END IF;
    IF 'transfer_to_agent' = ANY (NEW.tools) THEN
        RAISE EXCEPTION 'agent "%" cannot list tool "transfer_to_agent"', NEW.name USING ERRCODE = '22023',
            DETAIL = 'The runner adds it to every agent that has sub-agents.',
            HINT = 'List the agents it may transfer to in sub_agents.';
    END IF;
    IF 'adk_request_confirmation' = ANY (NEW.tools) THEN
        RAISE EXCEPTION 'agent "%" cannot list tool "adk_request_confirmation"', NEW.name USING ERRCODE = '22023',
            HINT = 'Mark the tools that need confirmation with require_confirmation.';
    END IF;

    -- what each kind may have
    IF NEW.kind <> 'llm' THEN
        extra := array_remove(ARRAY[
            CASE WHEN NEW.model IS NOT NULL THEN 'model' END,
            CASE WHEN NEW.instruction IS NOT NULL THEN 'instruction' END,
            CASE WHEN cardinality(NEW.tools) > 0 THEN 'tools' END,
            CASE WHEN NEW.output_key IS NOT NULL THEN 'output_key' END,
            CASE WHEN NEW.generate_config <> '{}' THEN 'generate_config' END,
            CASE WHEN NEW.mode IS NOT NULL THEN 'mode' END,
            CASE WHEN NEW.input_schema IS NOT NULL THEN 'input_schema' END,
            CASE WHEN NEW.output_schema IS NOT NULL THEN 'output_schema' END], NULL);
        IF cardinality(extra) > 0 THEN
            RAISE EXCEPTION '% agent "%" cannot have %', NEW.kind, NEW.name, array_to_string(extra, ', ')
                USING ERRCODE = '22023',
                      DETAIL = 'Only llm agents call a model; sequential, parallel and loop agents run their sub-agents.';
        END IF;
        IF cardinality(NEW.sub_agents) = 0 THEN
            RAISE EXCEPTION '% agent "%" needs at least one sub-agent', NEW.kind, NEW.name USING ERRCODE = '22023';
        END IF;
    END IF;
    IF NEW.max_iterations IS NOT NULL AND NEW.kind <> 'loop' THEN
        RAISE EXCEPTION '% agent "%" cannot have max_iterations', NEW.kind, NEW.name USING ERRCODE = '22023',
            HINT = 'max_iterations applies to loop agents only.';
    END IF;
    IF NEW.max_iterations <= 0 THEN
        RAISE EXCEPTION 'max_iterations of agent "%" must be positive', NEW.name USING ERRCODE = '22023',
            HINT = 'Leave it NULL to loop until a sub-agent escalates (exit_loop).';
    END IF;
    IF NEW.output_key = '' THEN
        RAISE EXCEPTION 'output_key of agent "%" must not be empty', NEW.name USING ERRCODE = '22023';
    END IF;

    -- modes (docs/agent-modes.md): input_schema shapes how a coordinator
    -- calls a task or single_turn agent, output_schema its answer (models.md)
    FOR k, v IN SELECT * FROM (VALUES ('input_schema', NEW.input_schema),
                                      ('output_schema', NEW.output_schema)) AS x(k, v)
                 WHERE x.v IS NOT NULL LOOP
        IF jsonb_typeof(v) <> 'object' THEN
            RAISE EXCEPTION '% of agent "%" must be a JSON Schema object', k, NEW.name USING ERRCODE = '22023',
                HINT = 'For example {"type": "object", "properties": {"city": {"type": "string"}}}.';
        END IF;
        IF v ? 'type' AND (jsonb_typeof(v -> 'type') <> 'string'
                           OR lower(v ->> 'type') NOT IN ('object', 'string', 'number', 'integer', 'boolean', 'array')) THEN
            RAISE EXCEPTION '% of agent "%" has an invalid "type"', k, NEW.name USING ERRCODE = '22023',
                DETAIL = format('It is %s.', v -> 'type'),
                HINT = 'Use one of object, string, number, integer, boolean or array.';
        END IF;
        IF coalesce(NEW.mode, 'chat') = 'chat' AND k = 'input_schema' THEN
            RAISE EXCEPTION 'chat agent "%" cannot have %', NEW.name, k USING ERRCODE = '22023',
                DETAIL = 'input_schema is the parameters of the tool a coordinator calls a task or single_turn agent with; output_schema shapes the result that agent hands back.',
                HINT = 'Set mode to task or single_turn, or leave the schema NULL.';
        END IF;
    END LOOP;
    -- before the foreign key's own check, for a clearer message
    IF NEW.model IS NOT NULL AND adk._check_references()
       AND NOT EXISTS (SELECT 1 FROM adk.models m WHERE m.name = NEW.model) THEN
        RAISE EXCEPTION 'model "%" of agent "%" does not exist', NEW.model, NEW.name USING ERRCODE = '42704',
            HINT = 'Define it first with adk_define_model().';
    END IF;

    -- generation settings: the generation keys of model options
    IF jsonb_typeof(NEW.generate_config) <> 'object' THEN
        RAISE EXCEPTION 'generate_config of agent "%" must be a JSON object', NEW.name USING ERRCODE = '22023';
    END IF;
    FOR k, v IN SELECT * FROM jsonb_each(NEW.generate_config) LOOP
        IF k IN ('temperature', 'top_p', 'presence_penalty', 'frequency_penalty') THEN
            IF jsonb_typeof(v) <> 'number' THEN
                RAISE EXCEPTION 'generate_config "%" of agent "%" must be a number', k, NEW.name USING ERRCODE = '22023';
            END IF;
        ELSIF k IN ('max_output_tokens', 'top_k', 'seed') THEN
            IF jsonb_typeof(v) <> 'number' OR v::numeric <> trunc(v::numeric) OR v::numeric < 0 THEN
                RAISE EXCEPTION 'generate_config "%" of agent "%" must be a non-negative integer', k, NEW.name
                    USING ERRCODE = '22023';
            END IF;
        ELSIF k = 'stop_sequences' THEN
            IF jsonb_typeof(v) <> 'array' OR EXISTS (SELECT 1 FROM jsonb_array_elements(v) e WHERE jsonb_typeof(e) <> 'string') THEN
                RAISE EXCEPTION 'generate_config "stop_sequences" of agent "%" must be an array of strings', NEW.name
                    USING ERRCODE = '22023';
            END IF;
        ELSIF k = 'thinking' THEN
            PERFORM adk._check_thinking(v, format('generate_config of agent "%s":', NEW.name));
        ELSE
            RAISE EXCEPTION 'unknown generate_config key "%" for agent "%"', k, NEW.name USING ERRCODE = '22023',
                HINT = 'Known keys: temperature, max_output_tokens, top_p, top_k, stop_sequences, presence_penalty, frequency_penalty, seed, thinking.';
        END IF;
    END LOOP;
    IF TG_OP = 'UPDATE' THEN
        NEW.updated_at := now();
    END IF;
    RETURN NEW;
END
$$;

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

-- A span is stored through the view adk._span_rows (an INSERT planned once
-- per backend) instead of the plpgsql function adk._span_insert.
DROP FUNCTION adk._span_insert(text, text, text, text, text, timestamptz, timestamptz, text, text,
                               jsonb, jsonb, text, text, text, text, name, boolean);
CREATE VIEW adk._span_rows AS
SELECT s.trace_id, s.span_id, s.parent_span_id, s.name, s.kind, s.start_time, s.end_time,
       s.status_code, s.status_message, s.attributes, s.events, s.app_name, s.user_id,
       s.session_id, s.invocation_id, s.role_name, s.id
  FROM adk.spans s;
REVOKE ALL ON adk._span_rows FROM PUBLIC;
COMMENT ON VIEW adk._span_rows IS
    'Internal: adk.spans in the column order the runner inserts a span (src/runner/spans.c); the owner''s only.';

-- 87_runner_statements.sql: a task's delegating call, by its id
-- The task agent a call delegated to, when that call's id is an isolation
-- scope of the session (task_mode.c): a user's function response for it
-- is refused, the task's finish_task answers it.  NULL: no task.
CREATE FUNCTION adk._task_of_call(p_app text, p_user text, p_session text, p_call text)
RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN (SELECT e.event_data ->> 'author'
              FROM adk.live_events e
             WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
               AND (e.event_data ->> 'isolation_scope') <> ''
               AND e.event_data ->> 'isolation_scope' = p_call
               AND e.event_data ->> 'author' <> 'user'
             ORDER BY e.seq LIMIT 1);
END
$$;
REVOKE ALL ON FUNCTION adk._task_of_call(text, text, text, text) FROM PUBLIC;

-- adk_define_agent's comment: output_schema is also a chat agent's
-- (structured output, docs/models.md)
COMMENT ON FUNCTION adk_define_agent(text, text, text, text, text, text[], text[], text, boolean, boolean, integer, text, jsonb, text, jsonb, jsonb) IS
    'Create or replace an agent: kind llm | sequential | parallel | loop; tools are tools, built-ins or other agents (AgentTool); sub_agents are children in order (one parent each, no cycles); mode chat | task | single_turn (NULL = chat); input_schema for task and single_turn agents; output_schema the shape of a chat or single_turn agent''s answer (structured output) or a task agent''s finish_task parameters.';

-- 87_runner_statements.sql: whether a budget covers a model call is read
-- through the view adk._budget_limits (a statement planned once per
-- backend) instead of the plpgsql function adk._budget_applies.
DROP FUNCTION adk._budget_applies(text, text, name);
-- The budgets with a limit, whose scopes src/runner/budget.c reads to see
-- whether one covers a model call (if none does, the call takes nothing
-- from adk._budget_take): a statement on this view, planned once per
-- backend, without a function call around it (a plpgsql function with its
-- SET clause cost more than the read, test/bench/README.md).  The view's
-- names were resolved when it was made; only the owner of schema adk may
-- use it.
CREATE VIEW adk._budget_limits AS
SELECT x.app_name, x.user_id, x.role_name
  FROM adk.budgets x
 WHERE x.max_tokens IS NOT NULL OR x.max_model_calls IS NOT NULL;
REVOKE ALL ON adk._budget_limits FROM PUBLIC;
COMMENT ON VIEW adk._budget_limits IS
    'Internal: the scopes of the budgets with a limit (src/runner/budget.c); the owner''s only.';

-- 62_hitl.sql: adk.run_states holds one row per node activation (path as
-- node_info writes it), with the node's input and output; a coordinator's
-- row holds the interrupts of its task; a resume reads the rows and says
-- which node it resumes
ALTER TABLE adk.run_states ADD COLUMN input jsonb, ADD COLUMN output jsonb;
COMMENT ON TABLE adk.run_states IS
    'Workflow RunState per node activation of an invocation that paused: status, pending interrupt_ids, answered_ids, input, output; derived from adk.events (adk_rebuild_run_states)';
COMMENT ON COLUMN adk.run_states.node_path IS 'the node''s path as node_info writes it (coordinator, coordinator/booker@<call id>); the author for an event without node_info';
COMMENT ON COLUMN adk.run_states.interrupt_ids IS 'pending long-running / confirmation call ids of the node and the nodes below it, in call order';
COMMENT ON COLUMN adk.run_states.answered_ids IS 'interrupt ids of the node and the nodes below it the user has answered (in any invocation), in call order';
COMMENT ON COLUMN adk.run_states.input IS 'the node''s input: the root''s user message content, a task''s delegating call arguments';
COMMENT ON COLUMN adk.run_states.output IS 'the output that finished the node (node_info.output_for)';

-- The node an event belongs to: node_info's path (a string), else the
-- agent that wrote it (another runtime's event without node_info); NULL
-- for a user's event outside any node.
CREATE FUNCTION adk._node_path(d jsonb)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(CASE WHEN jsonb_typeof(d #> '{node_info,path}') = 'string'
                         THEN d #>> '{node_info,path}' END,
                    nullif(nullif(d ->> 'author', ''), 'user'))
$$;
REVOKE ALL ON FUNCTION adk._node_path(jsonb) FROM PUBLIC;

-- The rows of one invocation (or of every invocation of the session when
-- p_invocation is NULL), computed from the session's live events (not
-- the rewound ones: 12_rewound.sql).
CREATE OR REPLACE FUNCTION adk._derive_run_states(p_app text, p_user text, p_session text,
                                       p_invocation text DEFAULT NULL,
                                       p_new jsonb DEFAULT NULL)
RETURNS SETOF adk.run_states
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- PL/pgSQL, not SQL: Citus plans its statements (one session: one shard)
    RETURN QUERY
    -- p_new: {seq, invocation_id, timestamp, event_data} of an event being
    -- inserted (the events trigger runs before its row is visible)
    WITH incoming AS (
        SELECT (p_new ->> 'seq')::bigint AS seq, p_new ->> 'invocation_id' AS invocation_id,
               (p_new ->> 'timestamp')::timestamptz AS ts, p_new -> 'event_data' AS d,
               coalesce(p_new #>> '{event_data,author}', '') AS author,
               adk._node_path(p_new -> 'event_data') AS path
         WHERE p_new IS NOT NULL
           AND p_new #> '{event_data,custom_metadata,adk_appended_by}' IS NULL
           AND NOT EXISTS (SELECT 1 FROM adk.events e
                            WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
                              AND e.seq = (p_new ->> 'seq')::bigint)
    ), ev AS (
        SELECT e.seq, e.invocation_id::text AS invocation_id, e."timestamp" AS ts,
               e.event_data AS d, coalesce(e.event_data ->> 'author', '') AS author,
               adk._node_path(e.event_data) AS path
          FROM adk.live_events e
         WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
           AND (p_invocation IS NULL OR e.invocation_id = p_invocation)
           -- an event a caller appended where it may not speak for the
           -- session (85_tenancy.sql) is never an interrupt or an answer
           AND e.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
        UNION ALL
        SELECT * FROM incoming
         WHERE p_invocation IS NULL OR incoming.invocation_id = p_invocation
    ), calls AS (
        -- every interrupt: an id in long_running_tool_ids of an agent's event
        SELECT ev.invocation_id, ev.path, ev.seq, lr.ord, lr.id
          FROM ev
         CROSS JOIN LATERAL jsonb_array_elements_text(ev.d -> 'long_running_tool_ids')
               WITH ORDINALITY AS lr(id, ord)
         WHERE ev.author <> 'user'
           AND jsonb_typeof(ev.d -> 'long_running_tool_ids') = 'array'
    ), answers AS (
        -- function responses the user sent, in any invocation
        SELECT a.seq, a.ts, p #>> '{function_response,id}' AS id
          FROM (SELECT e.seq, e."timestamp" AS ts, e.event_data AS d
                  FROM adk.live_events e
                 WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
                   AND e.event_data ->> 'author' = 'user'
                   AND e.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
                UNION ALL
                SELECT incoming.seq, incoming.ts, incoming.d FROM incoming
                 WHERE incoming.author = 'user') a
         CROSS JOIN LATERAL adk._parts(a.d -> 'content') p
         WHERE p ? 'function_response'
    ), interrupts AS (
        SELECT c.invocation_id, c.path, c.seq, c.ord, c.id,
               (SELECT a.ts FROM answers a
                 WHERE a.id = c.id AND a.seq > c.seq
                 ORDER BY a.seq LIMIT 1) AS answered_at
          FROM calls c
    ), nodes AS (
        -- every node activation of an invocation that made an interrupt
        SELECT DISTINCT ev.invocation_id, ev.path
          FROM ev
         WHERE ev.path IS NOT NULL
           AND ev.invocation_id IN (SELECT c.invocation_id FROM calls c)
    ), held AS (
        -- the interrupts of a node and of the nodes below it
        SELECT n.invocation_id, n.path,
               coalesce(array_agg(i.id ORDER BY i.seq, i.ord)
                        FILTER (WHERE i.id IS NOT NULL AND i.answered_at IS NULL), '{}') AS pending,
               coalesce(array_agg(i.id ORDER BY i.seq, i.ord) FILTER (WHERE i.answered_at IS NOT NULL),
                        '{}') AS answered,
               max(i.answered_at) AS last_answer
          FROM nodes n
          LEFT JOIN interrupts i
                 ON i.invocation_id = n.invocation_id
                AND (i.path = n.path OR starts_with(i.path, n.path || '/'))
         GROUP BY n.invocation_id, n.path
    )
    SELECT p_app, p_user, p_session::varchar(191), n.invocation_id, n.path,
           CASE WHEN cardinality(n.pending) > 0 THEN 'waiting'
                WHEN fin.d IS NOT NULL THEN 'completed'
                WHEN last.d ->> 'error_code' = 'CANCELLED' THEN 'cancelled'
                WHEN last.d ->> 'error_code' IS NOT NULL THEN 'failed'
                WHEN strpos(n.path, '/') > 0 THEN 'running'
                ELSE 'completed' END,
           n.pending, n.answered, last.author,
           greatest(last.ts, n.last_answer),
           CASE WHEN strpos(n.path, '@') = 0 THEN
                (SELECT ev.d -> 'content' FROM ev
                  WHERE ev.invocation_id = n.invocation_id AND ev.author = 'user'
                  ORDER BY ev.seq LIMIT 1)
           ELSE
                -- a task's delegating call: its id is after the '@'
                (SELECT p -> 'function_call' -> 'args'
                   FROM adk.live_events e
                  CROSS JOIN LATERAL adk._parts(e.event_data -> 'content') p
                  WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
                    AND e.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
                    AND coalesce(e.event_data ->> 'author', 'user') <> 'user'
                    AND p #>> '{function_call,id}' = substring(n.path from '@([^@/]*)$')
                  ORDER BY e.seq LIMIT 1)
           END,
           CASE WHEN fin.d #>> '{node_info,message_as_output}' = 'true' THEN fin.d -> 'content'
                ELSE fin.d -> 'output' END
      FROM held n
     CROSS JOIN LATERAL (SELECT ev.d, ev.ts, ev.author FROM ev
                          WHERE ev.invocation_id = n.invocation_id AND ev.path = n.path
                            AND ev.author <> 'user'
                          ORDER BY ev.seq DESC LIMIT 1) last
      LEFT JOIN LATERAL (SELECT ev.d FROM ev
                          WHERE ev.invocation_id = n.invocation_id
                            AND ev.d #> '{node_info,output_for}' ? n.path
                          ORDER BY ev.seq DESC LIMIT 1) fin ON true;
END
$$;

-- Make adk.run_states say what the events say, for one invocation (or the
-- whole session when p_invocation is NULL): rows that changed are updated
-- in place (so a concurrent SELECT ... FOR UPDATE re-checks the new
-- version), rows that no longer derive are deleted.  Returns the number of
-- interrupts still pending in that scope.
CREATE OR REPLACE FUNCTION adk._refresh_run_states(p_app text, p_user text, p_session text,
                                        p_invocation text DEFAULT NULL,
                                        p_new jsonb DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    -- statements Citus can route to the session's shard: the derived rows
    -- are read once, then the table is brought to them
    d adk.run_states[] := ARRAY(SELECT x FROM adk._derive_run_states(p_app, p_user, p_session,
                                                                     p_invocation, p_new) x);
    x adk.run_states;
BEGIN
    DELETE FROM adk.run_states r
     WHERE r.app_name = p_app AND r.user_id = p_user AND r.session_id = p_session
       AND (p_invocation IS NULL OR r.invocation_id = p_invocation)
       AND NOT EXISTS (SELECT 1 FROM unnest(d) k
                        WHERE k.invocation_id = r.invocation_id AND k.node_path = r.node_path);
    FOREACH x IN ARRAY d LOOP
        INSERT INTO adk.run_states AS r
        VALUES (x.app_name, x.user_id, x.session_id, x.invocation_id, x.node_path, x.status,
                x.interrupt_ids, x.answered_ids, x.agent, x.updated_at, x.input, x.output)
        ON CONFLICT (app_name, user_id, session_id, invocation_id, node_path) DO UPDATE
           SET status = EXCLUDED.status, interrupt_ids = EXCLUDED.interrupt_ids,
               answered_ids = EXCLUDED.answered_ids, agent = EXCLUDED.agent,
               updated_at = EXCLUDED.updated_at, input = EXCLUDED.input, output = EXCLUDED.output
         WHERE (r.status, r.interrupt_ids, r.answered_ids, r.agent, r.updated_at, r.input, r.output)
               IS DISTINCT FROM
               (EXCLUDED.status, EXCLUDED.interrupt_ids, EXCLUDED.answered_ids, EXCLUDED.agent,
                EXCLUDED.updated_at, EXCLUDED.input, EXCLUDED.output);
    END LOOP;
    RETURN coalesce((SELECT sum(cardinality(k.interrupt_ids)) FROM unnest(d) k), 0)::integer;
END
$$;

-- a new column, r_path: dropped and created again
DROP FUNCTION adk._resume_interrupts(text, text, text, text, text[]);
-- The resume check of adk_run (000 §四.4.4 buildResumeResponses), for a
-- message holding function responses p_ids and the invocation that made
-- the calls: lock the invocation's rows that have any of p_ids pending
-- (SELECT ... FOR UPDATE: a second resume of the same interrupt waits
-- here, then finds it answered), mark those ids answered and return them
-- with the call each answers (name, args, the agent that made it), the
-- number of ids that node still waits for, the node's path (where the
-- run resumes: a task's row names its agent and scope), and, for an
-- adk_request_confirmation call, the original function call it asks about
-- as found in the history.  No rows: nothing pending matched, the
-- message is plain input.  The rows are read as the append path keeps
-- them; only an invocation that has none (its rows deleted, or written
-- before there were any) gets them derived from its events first.
CREATE FUNCTION adk._resume_interrupts(p_app text, p_user text, p_session text,
                                       p_invocation text, p_ids text[])
RETURNS TABLE (r_call_id text, r_tool text, r_args jsonb, r_agent text, r_original jsonb,
               r_left integer, r_path text)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    st record;
    answered text[];
    remaining text[];
    -- a value, not clock_timestamp() in the UPDATE: Citus refuses
    -- volatile functions in UPDATEs of distributed tables
    now_ts timestamptz := clock_timestamp();
BEGIN
    IF NOT EXISTS (SELECT 1 FROM adk.run_states s
                    WHERE s.app_name = p_app AND s.user_id = p_user AND s.session_id = p_session
                      AND s.invocation_id = p_invocation) THEN
        PERFORM adk._refresh_run_states(p_app, p_user, p_session, p_invocation);
    END IF;
    FOR st IN
        SELECT s.node_path, s.agent, s.interrupt_ids
          FROM adk.run_states s
         WHERE s.app_name = p_app AND s.user_id = p_user AND s.session_id = p_session
           AND s.invocation_id = p_invocation AND s.interrupt_ids && p_ids
         ORDER BY s.node_path
           FOR UPDATE
    LOOP
        answered := ARRAY(SELECT u.id FROM unnest(st.interrupt_ids) WITH ORDINALITY AS u(id, n)
                           WHERE u.id = ANY (p_ids) ORDER BY u.n);
        remaining := ARRAY(SELECT u.id FROM unnest(st.interrupt_ids) WITH ORDINALITY AS u(id, n)
                            WHERE u.id <> ALL (p_ids) ORDER BY u.n);
        UPDATE adk.run_states s
           SET status = CASE WHEN cardinality(remaining) > 0 THEN 'waiting' ELSE 'running' END,
               interrupt_ids = remaining,
               answered_ids = s.answered_ids || answered,
               updated_at = now_ts
         WHERE s.app_name = p_app AND s.user_id = p_user AND s.session_id = p_session
           AND s.invocation_id = p_invocation AND s.node_path = st.node_path;
        RETURN QUERY
        SELECT c.call ->> 'id', c.call ->> 'name', c.call -> 'args', c.author, o.original,
               cardinality(remaining), st.node_path
          FROM (SELECT DISTINCT ON (p #>> '{function_call,id}') p -> 'function_call' AS call,
                       e.event_data ->> 'author' AS author
                  FROM adk.events e
                 CROSS JOIN LATERAL adk._parts(e.event_data -> 'content') p
                 WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
                   AND e.invocation_id = p_invocation
                   -- the calls made in this node (a coordinator's row, which
                   -- holds its task's, finds none: the task's row returns them)
                   AND adk._node_path(e.event_data) = st.node_path
                   AND e.event_data ->> 'author' <> 'user'
                   AND e.event_data -> 'long_running_tool_ids' ?| answered
                   AND e.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
                   AND p #>> '{function_call,id}' = ANY (answered)
                 ORDER BY p #>> '{function_call,id}', e.seq DESC) c
          LEFT JOIN LATERAL (
                SELECT p2 -> 'function_call' AS original
                  FROM adk.events e2
                 CROSS JOIN LATERAL adk._parts(e2.event_data -> 'content') p2
                 WHERE c.call ->> 'name' = 'adk_request_confirmation'
                   AND e2.app_name = p_app AND e2.user_id = p_user AND e2.session_id = p_session
                   AND e2.invocation_id = p_invocation
                   AND e2.event_data ->> 'author' = c.author
                   AND p2 #>> '{function_call,id}' = c.call #>> '{args,originalFunctionCall,id}'
                   AND p2 #>> '{function_call,name}' <> 'adk_request_confirmation'
                   AND e2.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
                 ORDER BY e2.seq DESC LIMIT 1) o ON true
         ORDER BY array_position(answered, c.call ->> 'id');
    END LOOP;
END
$$;
REVOKE ALL ON FUNCTION adk._resume_interrupts(text, text, text, text, text[]) FROM PUBLIC;

-- The append path (src/store/event_trigger.c, for every writer): the run
-- states an event changes, refreshed in its transaction.  p_new is
-- {seq, invocation_id, timestamp, event_data} of the event, which the
-- trigger may call this for before the row is visible.  An agent's event
-- with long_running_tool_ids: its invocation's rows.  A user's function
-- responses: the rows of every invocation that waits on one of those ids.
-- An event that finishes a node (node_info.output_for) in an invocation
-- that has rows: that invocation's rows (the node completed).
CREATE OR REPLACE FUNCTION adk._event_appended(p_app text, p_user text, p_session text, p_new jsonb)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    d jsonb := p_new -> 'event_data';
    ids text[];
    inv text;
BEGIN
    IF d #> '{node_info,output_for}' IS NOT NULL
       AND EXISTS (SELECT 1 FROM adk.run_states r
                    WHERE r.app_name OPERATOR(pg_catalog.=) p_app
                      AND r.user_id OPERATOR(pg_catalog.=) p_user
                      AND r.session_id OPERATOR(pg_catalog.=) p_session
                      AND r.invocation_id OPERATOR(pg_catalog.=) (p_new ->> 'invocation_id')) THEN
        PERFORM adk._refresh_run_states(p_app, p_user, p_session, p_new ->> 'invocation_id', p_new);
    END IF;
    IF coalesce(d ->> 'author', '') OPERATOR(pg_catalog.<>) 'user'
       AND pg_catalog.jsonb_typeof(d -> 'long_running_tool_ids') OPERATOR(pg_catalog.=) 'array'
       AND pg_catalog.jsonb_array_length(d -> 'long_running_tool_ids') OPERATOR(pg_catalog.>) 0 THEN
        PERFORM adk._refresh_run_states(p_app, p_user, p_session, p_new ->> 'invocation_id', p_new);
    END IF;
    IF d ->> 'author' OPERATOR(pg_catalog.=) 'user' THEN
        ids := ARRAY(SELECT p #>> '{function_response,id}' FROM adk._parts(d -> 'content') p
                      WHERE p #>> '{function_response,id}' IS NOT NULL);
        IF pg_catalog.cardinality(ids) OPERATOR(pg_catalog.>) 0 THEN
            FOR inv IN
                SELECT DISTINCT r.invocation_id FROM adk.run_states r
                 WHERE r.app_name OPERATOR(pg_catalog.=) p_app AND r.user_id OPERATOR(pg_catalog.=) p_user
                   AND r.session_id OPERATOR(pg_catalog.=) p_session
                   AND r.interrupt_ids OPERATOR(pg_catalog.&&) ids
            LOOP
                -- answered from outside that invocation (another runtime's
                -- own invocation): it no longer waits
                IF adk._refresh_run_states(p_app, p_user, p_session, inv, p_new) OPERATOR(pg_catalog.=) 0
                   AND inv IS DISTINCT FROM p_new ->> 'invocation_id' THEN
                    UPDATE adk.invocations i SET status = 'completed'
                     WHERE i.invocation_id OPERATOR(pg_catalog.=) inv
                       AND i.status OPERATOR(pg_catalog.=) 'waiting';
                END IF;
            END LOOP;
        END IF;
    END IF;
END
$$;

-- What every session is waiting on: one row per pending interrupt, with
-- the call (tool, args) and when it was made -- an approval UI is one
-- SELECT.  For a tool that asks for confirmation the call is
-- adk_request_confirmation and args.originalFunctionCall is the call that
-- waits for the answer.
CREATE OR REPLACE VIEW adk.pending_interrupts AS
SELECT r.app_name, r.user_id, r.session_id, r.invocation_id, i.call_id,
       c.call ->> 'name' AS tool, c.call -> 'args' AS args, c.since, r.agent
  FROM adk.run_states r
 CROSS JOIN LATERAL unnest(r.interrupt_ids) WITH ORDINALITY AS i(call_id, ord)
  LEFT JOIN LATERAL (
        SELECT p -> 'function_call' AS call, e."timestamp" AS since
          FROM adk.events e
         CROSS JOIN LATERAL adk._parts(e.event_data -> 'content') p
         WHERE e.app_name = r.app_name AND e.user_id = r.user_id AND e.session_id = r.session_id
           AND e.invocation_id = r.invocation_id
           AND e.event_data -> 'long_running_tool_ids' ? i.call_id
           AND e.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
           AND p #>> '{function_call,id}' = i.call_id
         ORDER BY e.seq DESC LIMIT 1) c ON true
 -- once, from the node that made the call: not from a coordinator that
 -- holds it for its task
 WHERE NOT EXISTS (
       SELECT 1 FROM adk.run_states b
        WHERE b.app_name = r.app_name AND b.user_id = r.user_id AND b.session_id = r.session_id
          AND b.invocation_id = r.invocation_id AND starts_with(b.node_path, r.node_path || '/')
          AND i.call_id = ANY (b.interrupt_ids));
-- CREATE OR REPLACE VIEW resets its options (85_tenancy.sql)
ALTER VIEW adk.pending_interrupts SET (security_invoker = true);
-- the rows of the sessions that paused, again, in the new shape
SELECT adk._rebuild_run_states(NULL, NULL, NULL);
