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
