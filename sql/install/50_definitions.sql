-- ---------------------------------------------------------------------
-- Definitions: tools, agents, apps and plugins (docs/agents.md).
--
-- Each definition is a row.  The adk_define_* functions upsert; plain
-- INSERT / UPDATE / DELETE go through the same triggers, so every writer
-- meets the same rules:
--
--   * values (names, kinds, JSON shapes) are checked row by row in BEFORE
--     triggers: SQLSTATE 22023;
--   * references between definitions (an agent's tools and sub-agents, an
--     app's plugins) are checked in AFTER row triggers, which run once the
--     whole statement is done, so one multi-row INSERT may list its rows in
--     any order: unknown names are 42704;
--   * the agent graph (one parent per agent, no cycles through sub_agents
--     or agents used as tools) is checked in the same AFTER triggers: 42P17;
--   * a definition still in use cannot be deleted or renamed: 23503.
--
-- Writers of definitions are serialized by one transaction-scoped advisory
-- lock (adk._lock_definitions), so two concurrent transactions cannot each
-- pass the graph checks and together break them (READ COMMITTED: the checks
-- read what the other one committed).  adk._check_agent_tree() repeats the
-- graph checks when a run starts, whatever happened to the rows since.
--
-- With check_function_bodies = off (set by pg_dump's output, as for
-- function bodies) references to other definitions, and the definer's
-- EXECUTE privilege on tool and plugin functions, are not checked on write:
-- pg_dump loads adk.agents before adk.tools, adk.apps before adk.plugins,
-- and each table's rows in any order, and grants come after the data.
-- Values and the graph rules are still checked.
-- ---------------------------------------------------------------------

-- Tool names a model may see that adk_runner itself provides, and those
-- an agent may list (transfer_to_agent is added by the runner when an agent
-- has sub-agents; adk_request_confirmation is the runner's confirmation
-- call).  No tool and no agent may take one of these names.
CREATE FUNCTION adk._reserved_tool_names() RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT ARRAY['transfer_to_agent', 'exit_loop', 'adk_request_confirmation',
                 'load_artifacts', 'load_memory', 'preload_memory']
$$;
CREATE FUNCTION adk._builtin_tools() RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT ARRAY['exit_loop', 'load_artifacts', 'load_memory', 'preload_memory']
$$;

-- Serializes writers of tools, agents, apps and plugins until commit.  The
-- two-key form keeps it apart from applications' single-key advisory locks.
CREATE FUNCTION adk._lock_definitions() RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    SELECT pg_catalog.pg_advisory_xact_lock(1633971039, 1684366963)  -- 'adk_', 'defs'
$$;

-- 'agent "a"' or 'agents "a", "b"' (sorted, without duplicates) for an
-- error message; NULL for no names.
CREATE FUNCTION adk._name_list(singular text, plural text, names text[]) RETURNS text
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE WHEN count(*) = 1 THEN singular ELSE plural END || ' '
           || string_agg(format('"%s"', n), ', ' ORDER BY n)
      FROM (SELECT DISTINCT n FROM unnest(names) AS n) AS d
    HAVING count(*) > 0
$$;

-- Are references between definitions checked?  Not while a dump is being
-- restored (check_function_bodies = off).
CREATE FUNCTION adk._check_references() RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT pg_catalog.current_setting('check_function_bodies')::boolean
$$;

-- ---------------------------------------------------------------------
-- Tools: SQL functions the model may call.
-- ---------------------------------------------------------------------

CREATE TABLE adk.tools (
    name                 text PRIMARY KEY CHECK (name ~ '^[A-Za-z_][A-Za-z0-9_-]{0,63}$'),
    function             regprocedure NOT NULL,
    description          text,
    parameters           jsonb CHECK (jsonb_typeof(parameters) = 'object'),
    long_running         boolean NOT NULL DEFAULT false,
    require_confirmation boolean NOT NULL DEFAULT false,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE adk.tools IS 'Tools: a SQL function, its description and JSON Schema parameters (derived from the function when NULL), long_running, require_confirmation';

-- The JSON Schema of one SQL type, as a model should supply it; NULL for a
-- pseudo-type (anyelement, internal, record, ...), which no model can give.
CREATE FUNCTION adk._type_schema(typ oid) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    t pg_catalog.pg_type;
BEGIN
    SELECT * INTO t FROM pg_catalog.pg_type WHERE oid = typ;
    IF NOT FOUND OR t.typtype = 'p' THEN
        RETURN NULL;
    ELSIF t.typtype = 'd' THEN
        RETURN adk._type_schema(t.typbasetype);
    ELSIF t.typtype = 'e' THEN
        RETURN pg_catalog.jsonb_build_object('type', 'string', 'enum',
            (SELECT pg_catalog.jsonb_agg(e.enumlabel ORDER BY e.enumsortorder)
               FROM pg_catalog.pg_enum e WHERE e.enumtypid = typ));
    ELSIF t.typcategory = 'A' AND t.typelem <> 0 THEN
        RETURN pg_catalog.jsonb_build_object('type', 'array', 'items', adk._type_schema(t.typelem));
    ELSIF typ IN ('pg_catalog.int2'::pg_catalog.regtype, 'pg_catalog.int4'::pg_catalog.regtype,
                  'pg_catalog.int8'::pg_catalog.regtype) THEN
        RETURN '{"type": "integer"}';
    ELSIF typ IN ('pg_catalog.numeric'::pg_catalog.regtype, 'pg_catalog.float4'::pg_catalog.regtype,
                  'pg_catalog.float8'::pg_catalog.regtype) THEN
        RETURN '{"type": "number"}';
    ELSIF typ = 'pg_catalog.bool'::pg_catalog.regtype THEN
        RETURN '{"type": "boolean"}';
    ELSIF typ IN ('pg_catalog.json'::pg_catalog.regtype, 'pg_catalog.jsonb'::pg_catalog.regtype) THEN
        RETURN '{"type": "object"}';
    ELSIF typ = 'pg_catalog.uuid'::pg_catalog.regtype THEN
        RETURN '{"type": "string", "format": "uuid"}';
    ELSIF typ = 'pg_catalog.date'::pg_catalog.regtype THEN
        RETURN '{"type": "string", "format": "date"}';
    ELSIF typ IN ('pg_catalog.timestamp'::pg_catalog.regtype, 'pg_catalog.timestamptz'::pg_catalog.regtype) THEN
        RETURN '{"type": "string", "format": "date-time"}';
    ELSE
        -- text, varchar, bpchar, name, "char", and anything else given as its
        -- text form
        RETURN '{"type": "string"}';
    END IF;
END
$$;

-- The input arguments of a function: position among the inputs, name,
-- type, mode (i, b = INOUT, v = VARIADIC) and whether it has a default.
CREATE FUNCTION adk._function_inputs(fn oid)
RETURNS TABLE (pos integer, arg_name text, arg_type oid, arg_mode "char", has_default boolean)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT i.pos, i.nm, i.typ, i.mode, i.pos > p.pronargs - p.pronargdefaults
      FROM pg_catalog.pg_proc p,
           LATERAL (SELECT pg_catalog.row_number() OVER (ORDER BY a.ord)::integer AS pos,
                           NULLIF(a.nm, '') AS nm, a.typ,
                           coalesce(a.mode, 'i') AS mode
                      FROM unnest(coalesce(p.proallargtypes, p.proargtypes::oid[]),
                                  p.proargmodes, p.proargnames)
                           WITH ORDINALITY AS a(typ, mode, nm, ord)
                     WHERE coalesce(a.mode, 'i') IN ('i', 'b', 'v')) i
     WHERE p.oid = fn
     ORDER BY i.pos
$$;

-- Can this function be a tool?  Raises naming the function when not.
CREATE FUNCTION adk._check_tool_function(fn regprocedure) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    p pg_catalog.pg_proc;
    a record;
BEGIN
    SELECT * INTO p FROM pg_catalog.pg_proc WHERE oid = fn;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'function with OID % does not exist', fn::oid USING ERRCODE = '42883';
    END IF;
    IF p.prokind <> 'f' THEN
        RAISE EXCEPTION '% is not a plain function', fn USING ERRCODE = '22023',
            DETAIL = format('It is %s.', CASE p.prokind WHEN 'p' THEN 'a procedure'
                                                        WHEN 'a' THEN 'an aggregate function'
                                                        WHEN 'w' THEN 'a window function'
                                                        ELSE 'not a plain function' END),
            HINT = 'A tool is a function the model''s arguments are passed to; wrap it in a plain function.';
    END IF;
    IF p.provariadic <> 0 THEN
        RAISE EXCEPTION 'function % has a VARIADIC argument', fn USING ERRCODE = '22023',
            HINT = 'Take an array argument instead: the model passes arguments by name.';
    END IF;
    IF (SELECT t.typtype = 'p' AND p.prorettype NOT IN ('pg_catalog.void'::pg_catalog.regtype,
                                                        'pg_catalog.record'::pg_catalog.regtype)
          FROM pg_catalog.pg_type t WHERE t.oid = p.prorettype) THEN
        RAISE EXCEPTION 'function % returns %, which a tool cannot return', fn, p.prorettype::regtype
            USING ERRCODE = '22023';
    END IF;
    FOR a IN SELECT * FROM adk._function_inputs(fn) LOOP
        IF a.arg_name IS NULL THEN
            RAISE EXCEPTION 'argument % of function % has no name', a.pos, fn USING ERRCODE = '22023',
                HINT = 'Name every argument: the names are the properties of the tool''s JSON Schema.';
        END IF;
        IF adk._type_schema(a.arg_type) IS NULL THEN
            RAISE EXCEPTION 'argument "%" of function % has type %, which a model cannot supply',
                a.arg_name, fn, a.arg_type::regtype USING ERRCODE = '22023',
                HINT = 'Use a concrete type: polymorphic and other pseudo-types cannot be given as JSON.';
        END IF;
    END LOOP;
END
$$;

CREATE FUNCTION adk._tool_schema(fn regprocedure) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF fn IS NULL THEN
        RETURN NULL;
    END IF;
    PERFORM adk._check_tool_function(fn);
    RETURN (SELECT pg_catalog.jsonb_build_object(
                'type', 'object',
                'properties', coalesce(pg_catalog.jsonb_object_agg(i.arg_name, adk._type_schema(i.arg_type)), '{}'),
                'required', coalesce(pg_catalog.jsonb_agg(i.arg_name ORDER BY i.pos)
                                         FILTER (WHERE NOT i.has_default), '[]'))
              FROM adk._function_inputs(fn) i);
END
$$;

CREATE FUNCTION adk_tool_schema(function regprocedure) RETURNS jsonb
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT adk._tool_schema($1)
$$;
COMMENT ON FUNCTION adk_tool_schema(regprocedure) IS
    'The JSON Schema of a function''s arguments as a tool: {"type": "object", "properties": {...}, "required": [...]}; arguments with defaults are optional ("required" may be []).';

-- Does a given "parameters" schema fit the function?  Its properties must
-- be arguments of the function, and every argument without a default must
-- be among them (the model could never supply it otherwise).
CREATE FUNCTION adk._check_tool_parameters(tool text, fn regprocedure, params jsonb) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    props jsonb := params -> 'properties';
    missing text;
    extra text;
BEGIN
    IF jsonb_typeof(params) IS DISTINCT FROM 'object' OR params -> 'type' IS DISTINCT FROM '"object"' THEN
        RAISE EXCEPTION 'parameters of tool "%" must be a JSON Schema object with "type": "object"', tool
            USING ERRCODE = '22023',
                  HINT = 'Leave parameters NULL to derive them from the function''s arguments.';
    END IF;
    IF props IS NOT NULL AND jsonb_typeof(props) <> 'object' THEN
        RAISE EXCEPTION '"properties" in the parameters of tool "%" must be an object', tool USING ERRCODE = '22023';
    END IF;
    IF params ? 'required' AND (jsonb_typeof(params -> 'required') <> 'array'
            OR EXISTS (SELECT 1 FROM jsonb_array_elements(params -> 'required') r
                        WHERE jsonb_typeof(r) <> 'string' OR NOT coalesce(props ? (r #>> '{}'), false))) THEN
        RAISE EXCEPTION '"required" in the parameters of tool "%" must list names of its properties', tool
            USING ERRCODE = '22023';
    END IF;
    SELECT string_agg(format('"%s"', k), ', ' ORDER BY k) INTO extra
      FROM jsonb_object_keys(coalesce(props, '{}')) k
     WHERE NOT EXISTS (SELECT 1 FROM adk._function_inputs(fn) i WHERE i.arg_name = k);
    IF extra IS NOT NULL THEN
        RAISE EXCEPTION 'parameters of tool "%" name properties that are not arguments of %: %', tool, fn, extra
            USING ERRCODE = '22023',
                  HINT = 'Property names are the function''s argument names.';
    END IF;
    SELECT string_agg(format('"%s"', i.arg_name), ', ' ORDER BY i.pos) INTO missing
      FROM adk._function_inputs(fn) i
     WHERE NOT i.has_default AND NOT coalesce(props ? i.arg_name, false);
    IF missing IS NOT NULL THEN
        RAISE EXCEPTION 'parameters of tool "%" leave out arguments of % that have no default: %', tool, fn, missing
            USING ERRCODE = '22023';
    END IF;
END
$$;

CREATE FUNCTION adk._tools_before_write() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    fn_changed boolean := TG_OP = 'INSERT' OR NEW.function IS DISTINCT FROM OLD.function;
BEGIN
    PERFORM adk._lock_definitions();
    IF NEW.name IS NULL THEN
        RAISE EXCEPTION 'tool name must not be null' USING ERRCODE = '22004';
    END IF;
    IF NEW.name !~ '^[A-Za-z_][A-Za-z0-9_-]{0,63}$' THEN
        RAISE EXCEPTION 'invalid tool name "%"', NEW.name USING ERRCODE = '22023',
            HINT = 'A tool name starts with a letter or underscore, followed by at most 63 letters, digits, underscores or hyphens.';
    END IF;
    IF NEW.name = ANY (adk._reserved_tool_names()) THEN
        RAISE EXCEPTION 'tool name "%" is reserved', NEW.name USING ERRCODE = '22023',
            DETAIL = 'transfer_to_agent, exit_loop, adk_request_confirmation, load_artifacts, load_memory and preload_memory are built into adk_runner.';
    END IF;
    IF EXISTS (SELECT 1 FROM adk.agents a WHERE a.name = NEW.name) THEN
        RAISE EXCEPTION 'tool name "%" is already used by an agent', NEW.name USING ERRCODE = '42710',
            DETAIL = 'An agent can be listed as a tool, so tools and agents share one set of names.';
    END IF;
    IF NEW.function IS NULL THEN
        RAISE EXCEPTION 'tool "%" needs a function', NEW.name USING ERRCODE = '22023';
    END IF;
    IF fn_changed THEN
        PERFORM adk._check_tool_function(NEW.function);
        IF adk._check_references() AND NOT has_function_privilege(current_user, NEW.function::oid, 'EXECUTE') THEN
            RAISE EXCEPTION 'permission denied for function %', NEW.function USING ERRCODE = '42501',
                DETAIL = format('Defining tool "%s" requires EXECUTE on its function.', NEW.name);
        END IF;
    END IF;
    IF NEW.description IS NULL THEN
        NEW.description := obj_description(NEW.function::oid, 'pg_proc');
    END IF;
    IF NEW.parameters IS NULL THEN
        NEW.parameters := adk._tool_schema(NEW.function);
    ELSIF fn_changed OR NEW.parameters IS DISTINCT FROM OLD.parameters THEN
        PERFORM adk._check_tool_parameters(NEW.name, NEW.function, NEW.parameters);
    END IF;
    NEW.long_running := coalesce(NEW.long_running, false);
    NEW.require_confirmation := coalesce(NEW.require_confirmation, false);
    IF TG_OP = 'UPDATE' THEN
        NEW.updated_at := now();
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER adk_tools_before_write
    BEFORE INSERT OR UPDATE ON adk.tools
    FOR EACH ROW EXECUTE FUNCTION adk._tools_before_write();

-- A definition still listed by another cannot be deleted or renamed (a
-- tool by an agent, a plugin by an app).  Arguments: what it is, what
-- lists it, the table and array column that list it, e.g.
-- ('tool', 'agent', 'agents', 'tools').
CREATE FUNCTION adk._still_used() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    users text;
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.name = OLD.name THEN
        RETURN NULL;
    END IF;
    EXECUTE format('SELECT adk._name_list(%L, %L, ARRAY(SELECT u.name FROM adk.%I u WHERE $1 = ANY (u.%I)))',
                   TG_ARGV[1], TG_ARGV[2], TG_ARGV[2], TG_ARGV[3])
       INTO users USING OLD.name;
    IF users IS NOT NULL THEN
        RAISE EXCEPTION '% "%" is still used by %', TG_ARGV[0], OLD.name, users USING ERRCODE = '23503',
            HINT = format('Remove it from the %s'' %s first.', TG_ARGV[2], TG_ARGV[3]);
    END IF;
    RETURN NULL;
END
$$;
CREATE FUNCTION adk._definitions_lock_trigger() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM adk._lock_definitions();
    RETURN OLD;
END
$$;
CREATE TRIGGER adk_tools_before_delete
    BEFORE DELETE ON adk.tools
    FOR EACH ROW EXECUTE FUNCTION adk._definitions_lock_trigger();
CREATE TRIGGER adk_tools_still_used
    AFTER DELETE OR UPDATE OF name ON adk.tools
    FOR EACH ROW EXECUTE FUNCTION adk._still_used('tool', 'agent', 'agents', 'tools');

CREATE FUNCTION adk_define_tool(function regprocedure, name text DEFAULT NULL,
                                description text DEFAULT NULL, parameters jsonb DEFAULT NULL,
                                long_running boolean DEFAULT false,
                                require_confirmation boolean DEFAULT false)
RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    tool_name text := $2;
BEGIN
    IF $1 IS NULL THEN
        RAISE EXCEPTION 'tool function must not be null' USING ERRCODE = '22004';
    END IF;
    IF tool_name IS NULL THEN
        SELECT p.proname INTO tool_name FROM pg_catalog.pg_proc p WHERE p.oid = $1;
        IF tool_name !~ '^[A-Za-z_][A-Za-z0-9_-]{0,63}$' THEN
            RAISE EXCEPTION 'function name "%" is not a valid tool name', tool_name USING ERRCODE = '22023',
                HINT = 'Give the tool a name: adk_define_tool(function, name => ...). A tool name starts with a letter or underscore, followed by at most 63 letters, digits, underscores or hyphens.';
        END IF;
    END IF;
    INSERT INTO adk.tools AS t (name, function, description, parameters, long_running, require_confirmation)
    VALUES (tool_name, $1, $3, $4, coalesce($5, false), coalesce($6, false))
    ON CONFLICT ON CONSTRAINT tools_pkey DO UPDATE
       SET function = EXCLUDED.function, description = EXCLUDED.description,
           parameters = EXCLUDED.parameters, long_running = EXCLUDED.long_running,
           require_confirmation = EXCLUDED.require_confirmation;
    RETURN tool_name;
END
$$;
COMMENT ON FUNCTION adk_define_tool(regprocedure, text, text, jsonb, boolean, boolean) IS
    'Create or replace a tool: a SQL function (name defaults to the function''s name; description to COMMENT ON FUNCTION; parameters to adk_tool_schema(function)). Returns the tool''s name.';

-- ---------------------------------------------------------------------
-- Agents.
-- ---------------------------------------------------------------------

CREATE TABLE adk.agents (
    name                        text PRIMARY KEY
                                CHECK (name ~ '^[A-Za-z_][A-Za-z0-9_]*$' AND length(name) <= 128 AND name <> 'user'),
    kind                        text NOT NULL DEFAULT 'llm'
                                CHECK (kind IN ('llm', 'sequential', 'parallel', 'loop', 'workflow')),
    model                       text REFERENCES adk.models (name) ON UPDATE CASCADE,
    instruction                 text,
    description                 text,
    tools                       text[] NOT NULL DEFAULT '{}',
    sub_agents                  text[] NOT NULL DEFAULT '{}',
    output_key                  text,
    disallow_transfer_to_parent boolean NOT NULL DEFAULT false,
    disallow_transfer_to_peers  boolean NOT NULL DEFAULT false,
    max_iterations              integer CHECK (max_iterations > 0),
    include_contents            text NOT NULL DEFAULT 'default' CHECK (include_contents IN ('default', 'none')),
    generate_config             jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(generate_config) = 'object'),
    created_at                  timestamptz NOT NULL DEFAULT now(),
    updated_at                  timestamptz NOT NULL DEFAULT now(),
    mode                        text CHECK (mode IN ('chat', 'task', 'single_turn')),
    input_schema                jsonb CHECK (jsonb_typeof(input_schema) = 'object'),
    output_schema               jsonb CHECK (jsonb_typeof(output_schema) = 'object')
);
COMMENT ON TABLE adk.agents IS 'Agents: kind (llm | sequential | parallel | loop | workflow: a graph workflow of adk.workflows, docs/workflows.md), model (NULL: the nearest ancestor''s), instruction, tools (tools, built-ins or agents used as tools), sub_agents (in order), transfer and generation settings, mode (chat | task | single_turn; NULL = chat) with input_schema and output_schema (docs/agent-modes.md)';

-- Row rules: names, kinds, what each kind may have, the shape of lists and
-- of generate_config.  References are checked after the statement.
CREATE FUNCTION adk._agents_before_write() RETURNS trigger
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
    IF NEW.kind IS NULL OR NEW.kind NOT IN ('llm', 'sequential', 'parallel', 'loop', 'workflow') THEN
        RAISE EXCEPTION 'unknown agent kind "%"', NEW.kind USING ERRCODE = '22023',
            HINT = 'Use llm, sequential, parallel or loop (workflow agents are made by adk_define_workflow).';
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
                      DETAIL = 'Only llm agents call a model; sequential, parallel and loop agents run their sub-agents, workflow agents their graph.';
        END IF;
        IF NEW.kind = 'workflow' AND cardinality(NEW.sub_agents) > 0 THEN
            RAISE EXCEPTION 'workflow agent "%" cannot have sub_agents', NEW.name USING ERRCODE = '22023',
                DETAIL = 'A workflow agent runs the graph of adk.workflows with its name; its nodes are rows of adk.workflow_nodes (docs/workflows.md).';
        ELSIF NEW.kind <> 'workflow' AND cardinality(NEW.sub_agents) = 0 THEN
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
CREATE TRIGGER adk_agents_before_write
    BEFORE INSERT OR UPDATE ON adk.agents
    FOR EACH ROW EXECUTE FUNCTION adk._agents_before_write();

-- The agents an agent points to: its sub-agents, then the agents it uses
-- as tools.
CREATE FUNCTION adk._agent_edges(agent text) RETURNS text[]
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT a.sub_agents || ARRAY(SELECT t FROM unnest(a.tools) WITH ORDINALITY AS x(t, i)
                                  WHERE EXISTS (SELECT 1 FROM adk.agents b WHERE b.name = x.t)
                                  ORDER BY x.i)
      FROM adk.agents a WHERE a.name = agent
$$;

-- A cycle reachable from start through sub_agents and agents used as
-- tools, as the path that closes it (first element = last), or NULL.
-- Depth-first, each agent expanded once.
CREATE FUNCTION adk._agent_cycle(start text) RETURNS text[]
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    path text[] := ARRAY[start];   -- the agents on the current path
    next integer[] := ARRAY[0];    -- for each, the last edge followed
    done text[] := '{}';           -- agents whose every edge was followed
    edges text[];
    child text;
    n integer;
BEGIN
    WHILE cardinality(path) > 0 LOOP
        n := cardinality(path);
        edges := coalesce(adk._agent_edges(path[n]), '{}');
        next[n] := next[n] + 1;
        IF next[n] > cardinality(edges) THEN
            done := done || path[n];
            path := path[1:n - 1];
            next := next[1:n - 1];
            CONTINUE;
        END IF;
        child := edges[next[n]];
        IF child = ANY (path) THEN
            RETURN path[array_position(path, child):] || child;
        ELSIF NOT child = ANY (done) THEN
            path := path || child;
            next := next || 0;
        END IF;
    END LOOP;
    RETURN NULL;
END
$$;

CREATE FUNCTION adk._format_cycle(cycle text[]) RETURNS text
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT string_agg(format('"%s"', a), ' -> ' ORDER BY i) FROM unnest(cycle) WITH ORDINALITY AS x(a, i)
$$;

-- Each sub-agent of an agent has one parent (it); raises naming the
-- agent and its parents when not.
CREATE FUNCTION adk._check_one_parent(agent text) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    parents text;
BEGIN
    SELECT string_agg(format('"%s"', a.name), ' and ' ORDER BY a.name) INTO parents
      FROM adk.agents a, unnest(a.sub_agents) s
     WHERE s = agent
    HAVING count(*) > 1;
    IF parents IS NOT NULL THEN
        RAISE EXCEPTION 'agent "%" cannot have two parents', agent USING ERRCODE = '42P17',
            DETAIL = format('It is a sub-agent of %s.', parents),
            HINT = 'An agent is the sub-agent of one agent at most; use it as a tool (AgentTool) elsewhere, or define a copy under another name.';
    END IF;
END
$$;

-- A task agent is never a static node of a workflow agent (ADK-Go's
-- validateNoTaskModeGraphNodes): it works across turns in its own
-- isolation scope until it calls finish_task, and only an llm coordinator
-- delegates to it (docs/agent-modes.md).  Raises when agent is a workflow
-- agent with a task sub-agent, or a task agent under a workflow agent.
CREATE FUNCTION adk._check_task_placement(agent text) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r record;
BEGIN
    SELECT c.name AS child, p.name AS parent, p.kind INTO r
      FROM adk.agents p, unnest(p.sub_agents) WITH ORDINALITY AS s(n, i), adk.agents c
     WHERE c.name = s.n AND c.mode = 'task' AND p.kind <> 'llm'
       AND (p.name = agent OR c.name = agent)
     ORDER BY p.name, s.i LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'task agent "%" cannot be a sub-agent of % agent "%"', r.child, r.kind, r.parent
            USING ERRCODE = '42P17',
                  DETAIL = 'A task agent works across turns in its own isolation scope until it calls finish_task; a workflow agent runs its sub-agents as static nodes, and only an llm agent delegates to a task agent.',
                  HINT = 'Make it a sub-agent of an llm agent (its coordinator), or give it another mode.';
    END IF;
END
$$;

-- A root agent talks with the user: an llm root's mode must be chat (NULL
-- is chat).  Raises naming the app when one is given.
CREATE FUNCTION adk._check_root_mode(agent text, app text) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    m text;
BEGIN
    SELECT a.mode INTO m FROM adk.agents a WHERE a.name = agent;
    IF m IS NOT NULL AND m <> 'chat' THEN
        RAISE EXCEPTION 'root agent "%" of % must be a chat agent', agent,
            CASE WHEN app IS NULL THEN 'an app' ELSE format('app "%s"', app) END
            USING ERRCODE = '42P17', DETAIL = format('Its mode is %s.', m),
                  HINT = 'Leave the root''s mode NULL or set it to chat; task and single_turn agents are sub-agents of a chat coordinator.';
    END IF;
END
$$;

-- After the statement: references, one parent, no cycle; and an agent in
-- use cannot be renamed or deleted.
CREATE FUNCTION adk._agents_after_write() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    x text;
    users text;
    cycle text[];
BEGIN
    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND NEW.name <> OLD.name) THEN
        SELECT string_agg(format('"%s"', a.name), ', ' ORDER BY a.name) INTO users
          FROM adk.agents a WHERE OLD.name = ANY (a.sub_agents);
        IF users IS NOT NULL THEN
            RAISE EXCEPTION 'agent "%" is still a sub-agent of agent %', OLD.name, users USING ERRCODE = '23503',
                HINT = 'Remove it from the parent''s sub_agents first.';
        END IF;
        users := adk._name_list('agent', 'agents',
                                ARRAY(SELECT a.name FROM adk.agents a WHERE OLD.name = ANY (a.tools)));
        IF users IS NOT NULL THEN
            RAISE EXCEPTION 'agent "%" is still used as a tool by %', OLD.name, users USING ERRCODE = '23503',
                HINT = 'Remove it from those agents'' tools first.';
        END IF;
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN NULL;
    END IF;

    IF adk._check_references() THEN
        FOREACH x IN ARRAY NEW.sub_agents LOOP
            IF NOT EXISTS (SELECT 1 FROM adk.agents a WHERE a.name = x) THEN
                RAISE EXCEPTION 'sub-agent "%" of agent "%" does not exist', x, NEW.name USING ERRCODE = '42704',
                    HINT = 'Define the sub-agents first.';
            END IF;
        END LOOP;
        FOREACH x IN ARRAY NEW.tools LOOP
            IF NOT (x = ANY (adk._builtin_tools())
                    OR EXISTS (SELECT 1 FROM adk.tools t WHERE t.name = x)
                    OR EXISTS (SELECT 1 FROM adk.agents a WHERE a.name = x)) THEN
                RAISE EXCEPTION 'tool "%" of agent "%" does not exist', x, NEW.name USING ERRCODE = '42704',
                    HINT = 'List a tool defined with adk_define_tool(), an agent, or a built-in tool: exit_loop, load_artifacts, load_memory, preload_memory.';
            END IF;
            IF length(x) > 64 THEN
                RAISE EXCEPTION 'agent "%" cannot be used as a tool: its name is longer than 64 characters', x
                    USING ERRCODE = '22023', DETAIL = format('Agent "%s" lists it in its tools.', NEW.name);
            END IF;
        END LOOP;
    END IF;

    FOREACH x IN ARRAY NEW.sub_agents LOOP
        PERFORM adk._check_one_parent(x);
    END LOOP;
    PERFORM adk._check_task_placement(NEW.name);
    FOR x IN SELECT a.name FROM adk.apps a WHERE a.root_agent = NEW.name ORDER BY a.name LOOP
        PERFORM adk._check_root_mode(NEW.name, x);
    END LOOP;
    cycle := adk._agent_cycle(NEW.name);
    IF cycle IS NOT NULL THEN
        RAISE EXCEPTION 'agents form a cycle: %', adk._format_cycle(cycle) USING ERRCODE = '42P17',
            DETAIL = 'An agent cannot be its own ancestor, through sub_agents or through agents used as tools.';
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER adk_agents_after_write
    AFTER INSERT OR UPDATE OR DELETE ON adk.agents
    FOR EACH ROW EXECUTE FUNCTION adk._agents_after_write();

-- The root of an app cannot be deleted (checked before the foreign key,
-- for a clearer message).
CREATE FUNCTION adk._agents_before_delete() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    apps text;
BEGIN
    PERFORM adk._lock_definitions();
    SELECT string_agg(format('"%s"', a.name), ', ' ORDER BY a.name) INTO apps
      FROM adk.apps a WHERE a.root_agent = OLD.name;
    IF apps IS NOT NULL THEN
        RAISE EXCEPTION 'agent "%" is the root agent of app %', OLD.name, apps USING ERRCODE = '23503',
            HINT = 'Delete the app, or give it another root agent, first.';
    END IF;
    RETURN OLD;
END
$$;
CREATE TRIGGER adk_agents_before_delete
    BEFORE DELETE ON adk.agents
    FOR EACH ROW EXECUTE FUNCTION adk._agents_before_delete();

CREATE FUNCTION adk_define_agent(name text, kind text DEFAULT 'llm', model text DEFAULT NULL,
                                 instruction text DEFAULT NULL, description text DEFAULT NULL,
                                 tools text[] DEFAULT '{}', sub_agents text[] DEFAULT '{}',
                                 output_key text DEFAULT NULL,
                                 disallow_transfer_to_parent boolean DEFAULT false,
                                 disallow_transfer_to_peers boolean DEFAULT false,
                                 max_iterations integer DEFAULT NULL,
                                 include_contents text DEFAULT 'default',
                                 generate_config jsonb DEFAULT '{}',
                                 mode text DEFAULT NULL,
                                 input_schema jsonb DEFAULT NULL,
                                 output_schema jsonb DEFAULT NULL)
RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO adk.agents AS a (name, kind, model, instruction, description, tools, sub_agents,
                                 output_key, disallow_transfer_to_parent, disallow_transfer_to_peers,
                                 max_iterations, include_contents, generate_config,
                                 mode, input_schema, output_schema)
    VALUES ($1, coalesce($2, 'llm'), $3, $4, $5, coalesce($6, '{}'), coalesce($7, '{}'), $8,
            coalesce($9, false), coalesce($10, false), $11, coalesce($12, 'default'), coalesce($13, '{}'),
            $14, $15, $16)
    ON CONFLICT ON CONSTRAINT agents_pkey DO UPDATE
       SET kind = EXCLUDED.kind, model = EXCLUDED.model, instruction = EXCLUDED.instruction,
           description = EXCLUDED.description, tools = EXCLUDED.tools, sub_agents = EXCLUDED.sub_agents,
           output_key = EXCLUDED.output_key,
           disallow_transfer_to_parent = EXCLUDED.disallow_transfer_to_parent,
           disallow_transfer_to_peers = EXCLUDED.disallow_transfer_to_peers,
           max_iterations = EXCLUDED.max_iterations, include_contents = EXCLUDED.include_contents,
           generate_config = EXCLUDED.generate_config, mode = EXCLUDED.mode,
           input_schema = EXCLUDED.input_schema, output_schema = EXCLUDED.output_schema
$$;
COMMENT ON FUNCTION adk_define_agent(text, text, text, text, text, text[], text[], text, boolean, boolean, integer, text, jsonb, text, jsonb, jsonb) IS
    'Create or replace an agent: kind llm | sequential | parallel | loop; tools are tools, built-ins or other agents (AgentTool); sub_agents are children in order (one parent each, no cycles); mode chat | task | single_turn (NULL = chat); input_schema for task and single_turn agents; output_schema the shape of a chat or single_turn agent''s answer (structured output) or a task agent''s finish_task parameters.';

-- ---------------------------------------------------------------------
-- The agent tree, for the runner.
-- ---------------------------------------------------------------------

-- The tree under root through sub_agents: root first (depth 0), then
-- depth-first in sub_agents order.  Names that are not agents are left
-- out; an agent already on the path is not expanded again.
CREATE FUNCTION adk._agent_tree(root text)
RETURNS TABLE (name text, parent text, depth integer, kind text)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    WITH RECURSIVE tree (name, parent, depth, kind, sub_agents, path, ord) AS (
        SELECT a.name, NULL::text, 0, a.kind, a.sub_agents, ARRAY[a.name], '{}'::bigint[]
          FROM adk.agents a WHERE a.name = root
        UNION ALL
        SELECT c.name, t.name, t.depth + 1, c.kind, c.sub_agents, t.path || c.name, t.ord || s.i
          FROM tree t
         CROSS JOIN LATERAL unnest(t.sub_agents) WITH ORDINALITY AS s(child, i)
          JOIN adk.agents c ON c.name = s.child
         WHERE NOT c.name = ANY (t.path)
    )
    SELECT tree.name, tree.parent, tree.depth, tree.kind FROM tree ORDER BY tree.ord
$$;
COMMENT ON FUNCTION adk._agent_tree(text) IS
    'The agents under root through sub_agents, root first, depth-first in sub_agents order.';

-- Raises when the definitions under root (through sub_agents and agents
-- used as tools) break a rule.  The runner calls it when a run starts.
CREATE FUNCTION adk._check_agent_tree(root text) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    cycle text[];
    r record;
BEGIN
    IF root IS NULL OR NOT EXISTS (SELECT 1 FROM adk.agents a WHERE a.name = root) THEN
        RAISE EXCEPTION 'agent "%" does not exist', root USING ERRCODE = '42704';
    END IF;
    PERFORM adk._check_root_mode(root, NULL);
    cycle := adk._agent_cycle(root);
    IF cycle IS NOT NULL THEN
        RAISE EXCEPTION 'agents form a cycle: %', adk._format_cycle(cycle) USING ERRCODE = '42P17',
            DETAIL = CASE WHEN cycle[1] = root
                          THEN format('Agent "%s" lists the root agent "%s".', cycle[cardinality(cycle) - 1], root)
                          ELSE 'An agent cannot be its own ancestor, through sub_agents or through agents used as tools.' END;
    END IF;
    FOR r IN
        WITH RECURSIVE reach (name) AS (
            SELECT root
            UNION
            SELECT e FROM reach, unnest(adk._agent_edges(reach.name)) e
        )
        SELECT a.* FROM reach JOIN adk.agents a ON a.name = reach.name ORDER BY a.name
    LOOP
        PERFORM 1 FROM unnest(r.sub_agents) s WHERE NOT EXISTS (SELECT 1 FROM adk.agents a WHERE a.name = s);
        IF FOUND THEN
            RAISE EXCEPTION 'sub-agent "%" of agent "%" does not exist',
                (SELECT s FROM unnest(r.sub_agents) s WHERE NOT EXISTS (SELECT 1 FROM adk.agents a WHERE a.name = s) LIMIT 1),
                r.name USING ERRCODE = '42704';
        END IF;
        PERFORM 1 FROM unnest(r.tools) t
         WHERE NOT (t = ANY (adk._builtin_tools())
                    OR EXISTS (SELECT 1 FROM adk.tools x WHERE x.name = t)
                    OR EXISTS (SELECT 1 FROM adk.agents a WHERE a.name = t));
        IF FOUND THEN
            RAISE EXCEPTION 'tool "%" of agent "%" does not exist',
                (SELECT t FROM unnest(r.tools) t
                  WHERE NOT (t = ANY (adk._builtin_tools())
                             OR EXISTS (SELECT 1 FROM adk.tools x WHERE x.name = t)
                             OR EXISTS (SELECT 1 FROM adk.agents a WHERE a.name = t)) LIMIT 1),
                r.name USING ERRCODE = '42704';
        END IF;
        IF r.model IS NOT NULL AND NOT EXISTS (SELECT 1 FROM adk.models m WHERE m.name = r.model) THEN
            RAISE EXCEPTION 'model "%" of agent "%" does not exist', r.model, r.name USING ERRCODE = '42704';
        END IF;
        PERFORM adk._check_one_parent(r.name);
        IF r.kind NOT IN ('llm', 'workflow') AND cardinality(r.sub_agents) = 0 THEN
            RAISE EXCEPTION '% agent "%" needs at least one sub-agent', r.kind, r.name USING ERRCODE = '22023';
        END IF;
        PERFORM adk._check_task_placement(r.name);
        -- what the runner does not run yet (docs/agent-modes.md, "What runs
        -- today"): a task or single_turn agent other than a sub-agent of a
        -- chat llm coordinator (used as a tool, or under a task agent)
        IF r.mode IN ('task', 'single_turn')
           AND (NOT EXISTS (SELECT 1 FROM adk.agents p
                             WHERE r.name = ANY (p.sub_agents) AND p.kind = 'llm'
                               AND coalesce(p.mode, 'chat') = 'chat')
                OR EXISTS (SELECT 1 FROM adk.agents p WHERE r.name = ANY (p.tools))) THEN
            RAISE EXCEPTION 'agent "%" has mode %, which adk_runner runs only as a sub-agent of a chat llm agent', r.name, r.mode
                USING ERRCODE = '0A000',
                      DETAIL = format('It is under root agent "%s". A %s agent is run by the tool its chat coordinator gets for it; adk_runner does not run one as a node of a sequential, parallel or loop agent, under a task or single_turn agent, nor as an agent used as a tool, yet.', root, r.mode),
                      HINT = 'Make it a sub-agent of a chat llm agent, or leave its mode NULL (chat).';
        END IF;
    END LOOP;
END
$$;
COMMENT ON FUNCTION adk._check_agent_tree(text) IS
    'Raise if the agents under root (sub_agents and agents used as tools) break a rule: a missing agent, tool or model, an agent with two parents, a cycle, a root that is not chat, a task agent under a workflow agent, a task or single_turn agent other than a sub-agent of a chat llm agent, which the runner does not run yet.';

-- The agent's model, else the nearest ancestor's (through sub_agents),
-- else NULL.
CREATE FUNCTION adk._agent_model(agent text) RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    m text;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM adk.agents a WHERE a.name = agent) THEN
        RAISE EXCEPTION 'agent "%" does not exist', agent USING ERRCODE = '42704';
    END IF;
    WITH RECURSIVE up (name, model, depth, path) AS (
        SELECT a.name, a.model, 0, ARRAY[a.name] FROM adk.agents a WHERE a.name = agent
        UNION ALL
        SELECT p.name, p.model, up.depth + 1, up.path || p.name
          FROM up JOIN adk.agents p ON up.name = ANY (p.sub_agents)
         WHERE up.model IS NULL AND NOT p.name = ANY (up.path)
    )
    SELECT up.model INTO m FROM up WHERE up.model IS NOT NULL ORDER BY up.depth, up.name LIMIT 1;
    RETURN m;
END
$$;
COMMENT ON FUNCTION adk._agent_model(text) IS
    'The model an agent uses: its own, else the nearest ancestor''s through sub_agents, else NULL.';

-- ---------------------------------------------------------------------
-- Plugins: SQL callbacks around runs, agents, models and tools.
-- ---------------------------------------------------------------------

CREATE TABLE adk.plugins (
    name            text PRIMARY KEY CHECK (name <> ''),
    on_user_message regprocedure,
    before_run      regprocedure,
    on_event        regprocedure,
    after_run       regprocedure,
    before_agent    regprocedure,
    after_agent     regprocedure,
    before_model    regprocedure,
    after_model     regprocedure,
    before_tool     regprocedure,
    after_tool      regprocedure,
    on_model_error  regprocedure,
    on_tool_error   regprocedure,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE adk.plugins IS 'Plugins: for each callback, a function taking one jsonb argument and returning jsonb (or NULL when the plugin has none)';

CREATE FUNCTION adk._plugins_before_write() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    names text[] := ARRAY['on_user_message', 'before_run', 'on_event', 'after_run',
                          'before_agent', 'after_agent', 'before_model', 'after_model',
                          'before_tool', 'after_tool', 'on_model_error', 'on_tool_error'];
    fns oid[] := ARRAY[NEW.on_user_message, NEW.before_run, NEW.on_event, NEW.after_run,
                       NEW.before_agent, NEW.after_agent, NEW.before_model, NEW.after_model,
                       NEW.before_tool, NEW.after_tool, NEW.on_model_error, NEW.on_tool_error];
    old_fns oid[];
    p pg_catalog.pg_proc;
    i integer;
BEGIN
    PERFORM adk._lock_definitions();
    IF NEW.name IS NULL THEN
        RAISE EXCEPTION 'plugin name must not be null' USING ERRCODE = '22004';
    END IF;
    IF NEW.name = '' THEN
        RAISE EXCEPTION 'plugin name must not be empty' USING ERRCODE = '22023';
    END IF;
    IF TG_OP = 'UPDATE' THEN
        old_fns := ARRAY[OLD.on_user_message, OLD.before_run, OLD.on_event, OLD.after_run,
                         OLD.before_agent, OLD.after_agent, OLD.before_model, OLD.after_model,
                         OLD.before_tool, OLD.after_tool, OLD.on_model_error, OLD.on_tool_error];
    END IF;
    IF array_remove(fns, NULL) = '{}' THEN
        RAISE EXCEPTION 'plugin "%" has no callback', NEW.name USING ERRCODE = '22023',
            HINT = 'Set at least one of on_user_message, before_run, on_event, after_run, before_agent, after_agent, before_model, after_model, before_tool, after_tool, on_model_error, on_tool_error.';
    END IF;
    FOR i IN 1 .. cardinality(names) LOOP
        CONTINUE WHEN fns[i] IS NULL OR fns[i] IS NOT DISTINCT FROM old_fns[i];
        SELECT * INTO p FROM pg_catalog.pg_proc WHERE oid = fns[i];
        IF NOT FOUND THEN
            RAISE EXCEPTION 'function with OID % does not exist', fns[i] USING ERRCODE = '42883',
                DETAIL = format('It is callback %s of plugin "%s".', names[i], NEW.name);
        END IF;
        IF p.prokind <> 'f' OR p.pronargs <> 1 OR p.proargtypes[0] <> 'pg_catalog.jsonb'::pg_catalog.regtype
           OR p.provariadic <> 0 OR p.proretset OR p.prorettype <> 'pg_catalog.jsonb'::pg_catalog.regtype THEN
            RAISE EXCEPTION 'callback % of plugin "%" must be a function taking one jsonb argument and returning jsonb',
                names[i], NEW.name USING ERRCODE = '22023',
                DETAIL = format('%s %s.', fns[i]::regprocedure,
                                CASE WHEN p.prokind <> 'f' THEN 'is not a plain function'
                                     ELSE CASE WHEN p.provariadic <> 0 THEN 'is variadic and '
                                               WHEN p.pronargs <> 1 THEN format('takes %s arguments and ', p.pronargs)
                                               WHEN p.proargtypes[0] <> 'pg_catalog.jsonb'::pg_catalog.regtype
                                                    THEN format('takes %s and ', format_type(p.proargtypes[0], NULL))
                                               ELSE '' END
                                          || 'returns ' || CASE WHEN p.proretset THEN 'setof ' ELSE '' END
                                          || format_type(p.prorettype, NULL) END);
        END IF;
        IF adk._check_references() AND NOT has_function_privilege(current_user, fns[i], 'EXECUTE') THEN
            RAISE EXCEPTION 'permission denied for function %', fns[i]::regprocedure USING ERRCODE = '42501',
                DETAIL = format('Defining plugin "%s" requires EXECUTE on its callbacks.', NEW.name);
        END IF;
    END LOOP;
    IF TG_OP = 'UPDATE' THEN
        NEW.updated_at := now();
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER adk_plugins_before_write
    BEFORE INSERT OR UPDATE ON adk.plugins
    FOR EACH ROW EXECUTE FUNCTION adk._plugins_before_write();

CREATE TRIGGER adk_plugins_before_delete
    BEFORE DELETE ON adk.plugins
    FOR EACH ROW EXECUTE FUNCTION adk._definitions_lock_trigger();
CREATE TRIGGER adk_plugins_still_used
    AFTER DELETE OR UPDATE OF name ON adk.plugins
    FOR EACH ROW EXECUTE FUNCTION adk._still_used('plugin', 'app', 'apps', 'plugins');

CREATE FUNCTION adk_define_plugin(name text,
                                  on_user_message regprocedure DEFAULT NULL,
                                  before_run regprocedure DEFAULT NULL,
                                  on_event regprocedure DEFAULT NULL,
                                  after_run regprocedure DEFAULT NULL,
                                  before_agent regprocedure DEFAULT NULL,
                                  after_agent regprocedure DEFAULT NULL,
                                  before_model regprocedure DEFAULT NULL,
                                  after_model regprocedure DEFAULT NULL,
                                  before_tool regprocedure DEFAULT NULL,
                                  after_tool regprocedure DEFAULT NULL,
                                  on_model_error regprocedure DEFAULT NULL,
                                  on_tool_error regprocedure DEFAULT NULL)
RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO adk.plugins AS p (name, on_user_message, before_run, on_event, after_run,
                                  before_agent, after_agent, before_model, after_model,
                                  before_tool, after_tool, on_model_error, on_tool_error)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
    ON CONFLICT ON CONSTRAINT plugins_pkey DO UPDATE
       SET on_user_message = EXCLUDED.on_user_message, before_run = EXCLUDED.before_run,
           on_event = EXCLUDED.on_event, after_run = EXCLUDED.after_run,
           before_agent = EXCLUDED.before_agent, after_agent = EXCLUDED.after_agent,
           before_model = EXCLUDED.before_model, after_model = EXCLUDED.after_model,
           before_tool = EXCLUDED.before_tool, after_tool = EXCLUDED.after_tool,
           on_model_error = EXCLUDED.on_model_error, on_tool_error = EXCLUDED.on_tool_error
$$;
COMMENT ON FUNCTION adk_define_plugin(text, regprocedure, regprocedure, regprocedure, regprocedure, regprocedure, regprocedure, regprocedure, regprocedure, regprocedure, regprocedure, regprocedure, regprocedure) IS
    'Create or replace a plugin: each callback a function(jsonb) returning jsonb; callbacks left NULL are not called.';

-- ---------------------------------------------------------------------
-- Apps: a root agent and how it runs.
-- ---------------------------------------------------------------------

CREATE TABLE adk.apps (
    name                          text PRIMARY KEY CHECK (name <> '' AND length(name) <= 191),
    root_agent                    text NOT NULL REFERENCES adk.agents (name),
    auto_create_session           boolean NOT NULL DEFAULT true,
    compaction                    jsonb CHECK (jsonb_typeof(compaction) = 'object'),
    plugins                       text[] NOT NULL DEFAULT '{}',
    save_input_blobs_as_artifacts boolean NOT NULL DEFAULT false,
    max_llm_calls                 integer NOT NULL DEFAULT 500 CHECK (max_llm_calls > 0),
    created_at                    timestamptz NOT NULL DEFAULT now(),
    updated_at                    timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE adk.apps IS 'Apps: the root agent, auto_create_session, compaction (NULL = off), plugins in call order, save_input_blobs_as_artifacts, max_llm_calls per run';

CREATE FUNCTION adk._apps_before_write() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    dup text;
BEGIN
    PERFORM adk._lock_definitions();
    PERFORM adk._check_id('app name', NEW.name);
    IF NEW.root_agent IS NULL THEN
        RAISE EXCEPTION 'app "%" needs a root agent', NEW.name USING ERRCODE = '22023';
    END IF;
    IF NEW.compaction IS NOT NULL AND jsonb_typeof(NEW.compaction) <> 'object' THEN
        RAISE EXCEPTION 'compaction of app "%" must be a JSON object, or NULL for none', NEW.name
            USING ERRCODE = '22023';
    END IF;
    IF NEW.max_llm_calls IS NULL OR NEW.max_llm_calls <= 0 THEN
        RAISE EXCEPTION 'max_llm_calls of app "%" must be positive', NEW.name USING ERRCODE = '22023';
    END IF;
    NEW.plugins := coalesce(NEW.plugins, '{}');
    NEW.auto_create_session := coalesce(NEW.auto_create_session, true);
    NEW.save_input_blobs_as_artifacts := coalesce(NEW.save_input_blobs_as_artifacts, false);
    IF array_ndims(NEW.plugins) > 1 OR array_position(NEW.plugins, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'plugins of app "%" must be a list of names', NEW.name USING ERRCODE = '22023';
    END IF;
    SELECT x INTO dup FROM unnest(NEW.plugins) x GROUP BY x HAVING count(*) > 1 ORDER BY x LIMIT 1;
    IF dup IS NOT NULL THEN
        RAISE EXCEPTION 'app "%" lists plugin "%" twice', NEW.name, dup USING ERRCODE = '22023';
    END IF;
    IF adk._check_references() THEN
        IF NOT EXISTS (SELECT 1 FROM adk.agents a WHERE a.name = NEW.root_agent) THEN
            RAISE EXCEPTION 'root agent "%" of app "%" does not exist', NEW.root_agent, NEW.name
                USING ERRCODE = '42704', HINT = 'Define it first with adk_define_agent().';
        END IF;
        SELECT x INTO dup FROM unnest(NEW.plugins) x
         WHERE NOT EXISTS (SELECT 1 FROM adk.plugins p WHERE p.name = x) LIMIT 1;
        IF dup IS NOT NULL THEN
            RAISE EXCEPTION 'plugin "%" of app "%" does not exist', dup, NEW.name USING ERRCODE = '42704',
                HINT = 'Define it first with adk_define_plugin().';
        END IF;
        PERFORM adk._check_agent_tree(NEW.root_agent);
    END IF;
    IF TG_OP = 'UPDATE' THEN
        NEW.updated_at := now();
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER adk_apps_before_write
    BEFORE INSERT OR UPDATE ON adk.apps
    FOR EACH ROW EXECUTE FUNCTION adk._apps_before_write();

CREATE FUNCTION adk_define_app(name text, root_agent text,
                               auto_create_session boolean DEFAULT true,
                               plugins text[] DEFAULT '{}',
                               max_llm_calls integer DEFAULT 500,
                               compaction jsonb DEFAULT NULL,
                               save_input_blobs_as_artifacts boolean DEFAULT false)
RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO adk.apps AS a (name, root_agent, auto_create_session, plugins, max_llm_calls,
                               compaction, save_input_blobs_as_artifacts)
    VALUES ($1, $2, coalesce($3, true), coalesce($4, '{}'), coalesce($5, 500), $6, coalesce($7, false))
    ON CONFLICT ON CONSTRAINT apps_pkey DO UPDATE
       SET root_agent = EXCLUDED.root_agent, auto_create_session = EXCLUDED.auto_create_session,
           plugins = EXCLUDED.plugins, max_llm_calls = EXCLUDED.max_llm_calls,
           compaction = EXCLUDED.compaction,
           save_input_blobs_as_artifacts = EXCLUDED.save_input_blobs_as_artifacts
$$;
COMMENT ON FUNCTION adk_define_app(text, text, boolean, text[], integer, jsonb, boolean) IS
    'Create or replace an app: its root agent (the whole tree under it is checked), auto_create_session, plugins in call order, max_llm_calls per run, compaction (NULL = off), save_input_blobs_as_artifacts.';

-- TRUNCATE skips row triggers: refuse to empty tools or plugins that are
-- still listed.  (adk.agents and adk.models are protected by the foreign
-- keys of adk.apps and adk.agents.)
CREATE FUNCTION adk._definitions_after_truncate() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    users text;
BEGIN
    IF TG_TABLE_NAME = 'tools' THEN
        users := adk._name_list('agent', 'agents',
                                ARRAY(SELECT a.name FROM adk.agents a, unnest(a.tools) t
                                       WHERE NOT t = ANY (adk._builtin_tools())
                                         AND NOT EXISTS (SELECT 1 FROM adk.agents b WHERE b.name = t)));
        IF users IS NOT NULL THEN
            RAISE EXCEPTION 'cannot truncate adk.tools: tools are still used by %', users
                USING ERRCODE = '23503';
        END IF;
    ELSE
        users := adk._name_list('app', 'apps',
                                ARRAY(SELECT a.name FROM adk.apps a WHERE cardinality(a.plugins) > 0));
        IF users IS NOT NULL THEN
            RAISE EXCEPTION 'cannot truncate adk.plugins: plugins are still used by %', users
                USING ERRCODE = '23503';
        END IF;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER adk_tools_after_truncate
    AFTER TRUNCATE ON adk.tools
    FOR EACH STATEMENT EXECUTE FUNCTION adk._definitions_after_truncate();
CREATE TRIGGER adk_plugins_after_truncate
    AFTER TRUNCATE ON adk.plugins
    FOR EACH STATEMENT EXECUTE FUNCTION adk._definitions_after_truncate();

-- definitions survive pg_dump
-- A model still named by agents cannot be deleted (the foreign key would
-- refuse too; this says which agents, as for tools and plugins), nor one
-- another model falls back to.
CREATE FUNCTION adk._models_before_delete() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    users text;
BEGIN
    users := adk._name_list('agent', 'agents',
                            ARRAY(SELECT a.name FROM adk.agents a WHERE a.model = OLD.name));
    IF users IS NOT NULL THEN
        RAISE EXCEPTION 'model "%" is still used by %', OLD.name, users USING ERRCODE = '23503',
            HINT = 'Give those agents another model first.';
    END IF;
    -- nor by other models, as a fallback (88_fallbacks.sql)
    PERFORM adk._lock_definitions();
    users := adk._name_list('model', 'models',
                            ARRAY(SELECT m.name FROM adk.models m
                                   WHERE OLD.name = ANY (m.fallbacks) AND m.name <> OLD.name));
    IF users IS NOT NULL THEN
        RAISE EXCEPTION 'model "%" is a fallback of %', OLD.name, users USING ERRCODE = '23503',
            HINT = 'Remove it from their fallbacks first (adk_define_fallbacks).';
    END IF;
    RETURN OLD;
END
$$;
CREATE TRIGGER adk_models_before_delete
    BEFORE DELETE ON adk.models
    FOR EACH ROW EXECUTE FUNCTION adk._models_before_delete();

SELECT pg_catalog.pg_extension_config_dump('adk.tools', '');
SELECT pg_catalog.pg_extension_config_dump('adk.agents', '');
SELECT pg_catalog.pg_extension_config_dump('adk.plugins', '');
SELECT pg_catalog.pg_extension_config_dump('adk.apps', '');
