-- adk_runner 0.4.0 -> 0.5.0: ALTER EXTENSION adk_runner UPDATE TO '0.5.0'.
-- Every change to the SQL surface since release 0.4.0, in the order the
-- full install script (sql/install/) makes it.  test/t/024_upgrade.pl
-- checks that a 0.4.0 schema updated with this script equals a fresh
-- 0.5.0 install (docs/releasing.md).

\echo Use "ALTER EXTENSION adk_runner UPDATE" to load this file. \quit

-- Agent modes (docs/agent-modes.md): adk.agents.mode, input_schema and
-- output_schema, their row checks, the placement and root rules, and
-- adk_define_agent taking them.
ALTER TABLE adk.agents
    ADD COLUMN mode text CHECK (mode IN ('chat', 'task', 'single_turn')),
    ADD COLUMN input_schema jsonb CHECK (jsonb_typeof(input_schema) = 'object'),
    ADD COLUMN output_schema jsonb CHECK (jsonb_typeof(output_schema) = 'object');
COMMENT ON TABLE adk.agents IS 'Agents: kind (llm | sequential | parallel | loop), model (NULL: the nearest ancestor''s), instruction, tools (tools, built-ins or agents used as tools), sub_agents (in order), transfer and generation settings, mode (chat | task | single_turn; NULL = chat) with input_schema and output_schema (docs/agent-modes.md)';

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

    -- modes (docs/agent-modes.md): the schemas shape how a coordinator
    -- calls a task or single_turn agent and what it hands back
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
        IF coalesce(NEW.mode, 'chat') = 'chat' THEN
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

REVOKE ALL ON FUNCTION adk._check_task_placement(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION adk._check_task_placement(text) TO adk_admin;
REVOKE ALL ON FUNCTION adk._check_root_mode(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION adk._check_root_mode(text, text) TO adk_admin;

CREATE OR REPLACE FUNCTION adk._agents_after_write() RETURNS trigger
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

DROP FUNCTION adk_define_agent(text, text, text, text, text, text[], text[], text, boolean, boolean, integer, text, jsonb);
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
    'Create or replace an agent: kind llm | sequential | parallel | loop; tools are tools, built-ins or other agents (AgentTool); sub_agents are children in order (one parent each, no cycles); mode chat | task | single_turn (NULL = chat) with input_schema and output_schema for task and single_turn agents.';
REVOKE ALL ON FUNCTION adk_define_agent(text, text, text, text, text, text[], text[], text, boolean, boolean, integer, text, jsonb, text, jsonb, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION adk_define_agent(text, text, text, text, text, text[], text[], text, boolean, boolean, integer, text, jsonb, text, jsonb, jsonb) TO adk_admin;

CREATE OR REPLACE FUNCTION adk._check_agent_tree(root text) RETURNS void
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
        IF r.kind <> 'llm' AND cardinality(r.sub_agents) = 0 THEN
            RAISE EXCEPTION '% agent "%" needs at least one sub-agent', r.kind, r.name USING ERRCODE = '22023';
        END IF;
        PERFORM adk._check_task_placement(r.name);
        -- the runner does not delegate to task and single_turn agents yet
        -- (docs/agent-modes.md, "What runs today")
        IF r.mode IN ('task', 'single_turn') THEN
            RAISE EXCEPTION 'agent "%" has mode %, which adk_runner cannot run yet', r.name, r.mode
                USING ERRCODE = '0A000',
                      DETAIL = format('It is under root agent "%s". Task and single_turn agents can be defined and are checked, but no coordinator delegates to them yet.', root),
                      HINT = 'Leave its mode NULL (chat) for now: a chat sub-agent is reached by transfer_to_agent.';
        END IF;
    END LOOP;
END
$$;
COMMENT ON FUNCTION adk._check_agent_tree(text) IS
    'Raise if the agents under root (sub_agents and agents used as tools) break a rule: a missing agent, tool or model, an agent with two parents, a cycle, a root that is not chat, a task agent under a workflow agent, a mode the runner cannot run yet.';

-- single_turn sub-agents run (docs/agent-modes.md): the runner reads each
-- agent's mode and schemas (87_runner_statements.sql; a new result type,
-- so the function is made again, as 90_privileges.sql's loop leaves it),
-- and the tree check refuses only what does not run yet
-- (50_definitions.sql)
DROP FUNCTION adk._agent_definitions(text);
CREATE FUNCTION adk._agent_definitions(p_root text)
RETURNS TABLE (r_name text, r_parent text, r_kind text, r_model text, r_instruction text,
               r_description text, r_tools text[], r_output_key text,
               r_disallow_transfer_to_parent boolean, r_disallow_transfer_to_peers boolean,
               r_max_iterations integer, r_include_contents_none boolean,
               r_generate_config jsonb, r_mode text, r_input_schema jsonb,
               r_output_schema jsonb)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT t.name, t.parent, a.kind, adk._agent_model(a.name), a.instruction,
           a.description, a.tools, a.output_key, a.disallow_transfer_to_parent,
           a.disallow_transfer_to_peers, a.max_iterations,
           a.include_contents = 'none', a.generate_config, a.mode,
           a.input_schema, a.output_schema
      FROM adk._agent_tree(p_root) t JOIN adk.agents a ON a.name = t.name;
END
$$;
REVOKE ALL ON FUNCTION adk._agent_definitions(text) FROM PUBLIC;
CREATE OR REPLACE FUNCTION adk._check_agent_tree(root text) RETURNS void
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
        IF r.kind <> 'llm' AND cardinality(r.sub_agents) = 0 THEN
            RAISE EXCEPTION '% agent "%" needs at least one sub-agent', r.kind, r.name USING ERRCODE = '22023';
        END IF;
        PERFORM adk._check_task_placement(r.name);
        -- what the runner does not run yet (docs/agent-modes.md, "What runs
        -- today"): task agents; a single_turn agent other than a sub-agent
        -- of an llm coordinator (under a workflow agent, or used as a tool)
        IF r.mode = 'task' THEN
            RAISE EXCEPTION 'agent "%" has mode %, which adk_runner cannot run yet', r.name, r.mode
                USING ERRCODE = '0A000',
                      DETAIL = format('It is under root agent "%s". Task agents can be defined and are checked, but no coordinator delegates to them yet.', root),
                      HINT = 'Leave its mode NULL (chat) for now: a chat sub-agent is reached by transfer_to_agent.';
        END IF;
        IF r.mode = 'single_turn'
           AND (NOT EXISTS (SELECT 1 FROM adk.agents p WHERE r.name = ANY (p.sub_agents) AND p.kind = 'llm')
                OR EXISTS (SELECT 1 FROM adk.agents p WHERE r.name = ANY (p.tools))) THEN
            RAISE EXCEPTION 'agent "%" has mode %, which adk_runner runs only as a sub-agent of an llm agent', r.name, r.mode
                USING ERRCODE = '0A000',
                      DETAIL = format('It is under root agent "%s". A single_turn agent is run by the tool its llm coordinator gets for it; adk_runner does not run one as a node of a sequential, parallel or loop agent, nor as an agent used as a tool, yet.', root),
                      HINT = 'Make it a sub-agent of an llm agent, or leave its mode NULL (chat).';
        END IF;
    END LOOP;
END
$$;
COMMENT ON FUNCTION adk._check_agent_tree(text) IS
    'Raise if the agents under root (sub_agents and agents used as tools) break a rule: a missing agent, tool or model, an agent with two parents, a cycle, a root that is not chat, a task agent under a workflow agent, a mode the runner cannot run yet (task; single_turn other than under an llm agent).';

-- Isolation scopes (docs/agent-modes.md): a session's scoped events
-- through a partial index (10_session_tables.sql), and adk.active_tasks,
-- the open scopes (30_event_log.sql), read as the querying role
-- (85_tenancy.sql) by adk_user (90_privileges.sql)
CREATE INDEX events_p0_isolation_scope_idx
    ON adk.events_p0 (app_name, user_id, session_id, seq)
    WHERE (event_data ->> 'isolation_scope') <> '';
CREATE VIEW adk.active_tasks AS
SELECT t.app_name, t.user_id, t.session_id, t.scope, t.agent, t.since_seq, t.last_seq
  FROM (SELECT e.app_name, e.user_id, e.session_id,
               e.event_data ->> 'isolation_scope' AS scope,
               min(e.seq) AS since_seq,
               max(e.seq) AS last_seq,
               (array_agg(e.event_data ->> 'author' ORDER BY e.seq)
                  FILTER (WHERE e.event_data ->> 'author' IS DISTINCT FROM 'user'))[1] AS agent,
               (array_agg(jsonb_path_exists(e.event_data,
                   '$.content.parts[*].function_response ? (@.name == "finish_task" && !exists(@.response.error))')
                  ORDER BY e.seq DESC))[1] AS closed
          FROM adk.events e
         WHERE (e.event_data ->> 'isolation_scope') <> ''
         GROUP BY e.app_name, e.user_id, e.session_id, e.event_data ->> 'isolation_scope') t
 WHERE NOT t.closed;

COMMENT ON VIEW adk.active_tasks IS
    'Open isolation scopes (tasks) per session: scope (the delegating call id), agent, since_seq and last_seq; a scope closes with a successful finish_task response.';
ALTER VIEW adk.active_tasks SET (security_invoker = true);
GRANT SELECT ON adk.active_tasks TO adk_user;

-- Task agents run (task_mode.c): the session's open task, and the request
-- of a task resumed in a later invocation (87_runner_statements.sql), as
-- 90_privileges.sql's loop leaves them; the tree check no longer refuses
-- task agents (50_definitions.sql)

-- The session's open task (task_mode.c): the scope of adk.active_tasks
-- with the newest event, and its agent.  No row: none.
CREATE FUNCTION adk._active_task(p_app text, p_user text, p_session text)
RETURNS TABLE (r_scope text, r_agent text)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT t.scope, t.agent FROM adk.active_tasks t
     WHERE t.app_name = p_app AND t.user_id = p_user AND t.session_id = p_session
     ORDER BY t.last_seq DESC LIMIT 1;
END
$$;

-- The arguments of the call that delegated a task (its id: the task's
-- isolation scope), for a task resumed in a later invocation.
CREATE FUNCTION adk._task_request(p_app text, p_user text, p_session text, p_call text)
RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN (SELECT p -> 'function_call' -> 'args'
              FROM adk.events e, jsonb_array_elements(e.event_data -> 'content' -> 'parts') p
             WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
               AND e.event_data @> jsonb_build_object('content', jsonb_build_object('parts',
                       jsonb_build_array(jsonb_build_object('function_call', jsonb_build_object('id', p_call)))))
               AND p -> 'function_call' ->> 'id' = p_call
             ORDER BY e.seq DESC LIMIT 1);
END
$$;
REVOKE ALL ON FUNCTION adk._active_task(text, text, text),
    adk._task_request(text, text, text, text) FROM PUBLIC;
CREATE OR REPLACE FUNCTION adk._check_agent_tree(root text) RETURNS void
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
        IF r.kind <> 'llm' AND cardinality(r.sub_agents) = 0 THEN
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
