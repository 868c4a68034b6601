-- ---------------------------------------------------------------------
-- Structured output (docs/models.md, "Structured output").  A chat or
-- single_turn agent's output_schema is the shape of its answer: asked for
-- natively where the model can (runner/output_schema.c), through ADK's
-- set_model_response tool where adk.models.capabilities says it cannot
-- combine a schema with tools.  adk_json_schema derives such a schema
-- from a composite type, so that the answer goes into a table with
-- jsonb_populate_record.
-- ---------------------------------------------------------------------

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
