-- adk_runner 0.6.0 -> 0.7.0: ALTER EXTENSION adk_runner UPDATE TO '0.7.0'.
-- Every change to the SQL surface since release 0.6.0, in the order the
-- full install script (sql/install/) makes it.  test/t/024_upgrade.pl
-- checks that a 0.6.0 schema updated with this script equals a fresh
-- 0.7.0 install (docs/releasing.md).

\echo Use "ALTER EXTENSION adk_runner UPDATE" to load this file. \quit

-- ---------------------------------------------------------------------
-- Graph workflow definitions (docs/workflows.md): agents of kind
-- workflow (50_definitions.sql), then the piece 89_workflows.sql whole,
-- then its grants (90_privileges.sql).
-- ---------------------------------------------------------------------

ALTER TABLE adk.agents DROP CONSTRAINT agents_kind_check;
ALTER TABLE adk.agents ADD CONSTRAINT agents_kind_check
    CHECK (kind IN ('llm', 'sequential', 'parallel', 'loop', 'workflow'));
COMMENT ON TABLE adk.agents IS 'Agents: kind (llm | sequential | parallel | loop | workflow: a graph workflow of adk.workflows, docs/workflows.md), model (NULL: the nearest ancestor''s), instruction, tools (tools, built-ins or agents used as tools), sub_agents (in order), transfer and generation settings, mode (chat | task | single_turn; NULL = chat) with input_schema and output_schema (docs/agent-modes.md)';

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

-- ---------------------------------------------------------------------
-- Graph workflows as data (docs/workflows.md): ADK 2.x's workflow graph --
-- nodes, and edges from START or a node to a node, with routes -- as rows
-- of adk.workflows, adk.workflow_nodes and adk.workflow_edges.
--
-- A workflow is an agent: its name is the name of an adk.agents row of
-- kind 'workflow' (made with it, as ADK-Go's configurable workflow wraps
-- a workflow in an agent of the same name), so an app's root_agent, an
-- agent's sub_agents, and a "workflow" node of another workflow name it
-- the way they name any agent, and nothing else in adk.apps or the agent
-- tree changes.  Deleting that agent deletes the workflow.
--
-- Who may define: as for agents, adk_admin writes the three tables
-- (directly or through adk_define_workflow) and adk_user reads them;
-- definitions are shared, not per tenant.  The runs of a workflow are
-- rows of adk.run_states, under its row-level security.
--
-- Checks, as for the other definitions (50_definitions.sql):
--   * values row by row in BEFORE triggers (22023), unknown names 42704,
--     a second node of the same name 42710;
--   * the graph rules of ADK-Go's workflow.New (workflow/validation.go),
--     in its order, when the transaction commits: a deferred constraint
--     trigger on adk.workflows (whose row each statement writing nodes or
--     edges touches) and one on adk.agents (whose mode decides where an
--     agent node may stand) run adk._check_workflow, so a graph may be
--     built in several statements of one transaction.
--     The same triggers store graph_hash, the sha256 of the graph's
--     canonical text (adk._workflow_hash), once the graph passed.
-- With check_function_bodies = off (pg_dump's output) references and the
-- graph rules are not checked, as for agents: tables load in any order.
--
-- Running a workflow is not built yet: the runner refuses an agent tree
-- with a workflow agent in it (src/runner/defs.c).  adk.run_states rows
-- whose node_path is '<workflow>/<node>@<run id>' are the RunState of a
-- workflow's node activations; adk.workflow_runs and
-- adk_workflow_mermaid() read them.
-- ---------------------------------------------------------------------

CREATE TABLE adk.workflows (
    name            text PRIMARY KEY REFERENCES adk.agents (name) ON DELETE CASCADE,
    description     text,
    max_concurrency integer NOT NULL DEFAULT 0 CHECK (max_concurrency >= 0),
    graph_hash      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE adk.workflows IS
    'Graph workflows (docs/workflows.md): one row per workflow, named as its agent of kind workflow; its nodes in adk.workflow_nodes, its edges in adk.workflow_edges';
COMMENT ON COLUMN adk.workflows.max_concurrency IS
    'at most this many graph nodes of one run at the same time; 0 = no limit (ADK-Go WithMaxConcurrency)';
COMMENT ON COLUMN adk.workflows.graph_hash IS
    'sha256 (hex) of the canonical text of max_concurrency, the nodes and the edges (adk._workflow_hash), set when a change commits; a paused run records it and resumes only under the same hash';

CREATE TABLE adk.workflow_nodes (
    workflow        text NOT NULL REFERENCES adk.workflows (name) ON DELETE CASCADE,
    name            text NOT NULL CHECK (name ~ '^[A-Za-z_][A-Za-z0-9_-]{0,127}$' AND name <> 'START'),
    kind            text NOT NULL
                    CHECK (kind IN ('agent', 'function', 'tool', 'join', 'parallel_worker', 'workflow')),
    agent           text REFERENCES adk.agents (name),
    function        regprocedure,
    tool            text,
    sub_workflow    text REFERENCES adk.workflows (name),
    worker          text,
    description     text,
    rerun_on_resume boolean NOT NULL DEFAULT false,
    wait_for_output boolean NOT NULL DEFAULT false,
    retry           jsonb CHECK (jsonb_typeof(retry) = 'object'),
    timeout         interval CHECK (timeout > '0'),
    max_concurrency integer NOT NULL DEFAULT 0 CHECK (max_concurrency >= 0),
    input_schema    jsonb CHECK (jsonb_typeof(input_schema) = 'object'),
    output_schema   jsonb CHECK (jsonb_typeof(output_schema) = 'object'),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT workflow_nodes_pkey PRIMARY KEY (workflow, name),
    CONSTRAINT workflow_nodes_target CHECK (
        (agent IS NOT NULL) = (kind = 'agent') AND (function IS NOT NULL) = (kind = 'function')
        AND (tool IS NOT NULL) = (kind = 'tool') AND (sub_workflow IS NOT NULL) = (kind = 'workflow')
        AND (worker IS NOT NULL) = (kind = 'parallel_worker'))
);
CREATE INDEX workflow_nodes_agent ON adk.workflow_nodes (agent) WHERE agent IS NOT NULL;
CREATE INDEX workflow_nodes_sub_workflow ON adk.workflow_nodes (sub_workflow) WHERE sub_workflow IS NOT NULL;
COMMENT ON TABLE adk.workflow_nodes IS
    'Nodes of graph workflows: kind agent | function | tool | join | parallel_worker | workflow, its target in the column of that name, and ADK-Go''s NodeConfig (docs/workflows.md)';
COMMENT ON COLUMN adk.workflow_nodes.name IS 'unique in its workflow; START is the entry, not a node';
COMMENT ON COLUMN adk.workflow_nodes.agent IS 'kind agent: the agent it runs, in its mode (NULL mode = single_turn here, as ADK-Go''s NewAgentNode); a chat agent only directly after START, a task agent never';
COMMENT ON COLUMN adk.workflow_nodes.function IS 'kind function: a function (ctx jsonb, input jsonb) RETURNS jsonb, run with the caller''s privileges';
COMMENT ON COLUMN adk.workflow_nodes.tool IS 'kind tool: a tool of adk.tools, called with the node''s input as its arguments';
COMMENT ON COLUMN adk.workflow_nodes.sub_workflow IS 'kind workflow: the nested workflow it runs (never itself, directly or through others)';
COMMENT ON COLUMN adk.workflow_nodes.worker IS 'kind parallel_worker: the node of the same workflow it runs once per item of its list input; that node is on no edge and has no retry';
COMMENT ON COLUMN adk.workflow_nodes.rerun_on_resume IS 'on resume after human input: true re-runs the node with its original input and the answers (re-entry), false hands the answer on as its output (handoff; ADK-Go''s default)';
COMMENT ON COLUMN adk.workflow_nodes.wait_for_output IS 'a node that finished without output parks its parent instead of completing it (ADK-Go WaitForOutput)';
COMMENT ON COLUMN adk.workflow_nodes.retry IS 'NULL = no retries; else ADK-Go''s RetryConfig, completed with its defaults: max_attempts 5, initial_delay 1 (seconds), max_delay 60, backoff_factor 2, jitter 1';
COMMENT ON COLUMN adk.workflow_nodes.timeout IS 'bound on one activation; NULL = none';
COMMENT ON COLUMN adk.workflow_nodes.max_concurrency IS 'kind parallel_worker: at most this many items at once; 0 = no limit';
COMMENT ON COLUMN adk.workflow_nodes.input_schema IS 'JSON Schema the node''s input must match (a join: each predecessor''s output)';
COMMENT ON COLUMN adk.workflow_nodes.output_schema IS 'JSON Schema of the node''s output; where both ends of an edge have one, they must be equal';

CREATE TABLE adk.workflow_edges (
    workflow   text NOT NULL REFERENCES adk.workflows (name) ON DELETE CASCADE,
    from_node  text NOT NULL,
    to_node    text NOT NULL,
    route      text[] CHECK (cardinality(route) > 0 AND array_position(route, NULL) IS NULL),
    is_default boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT workflow_edges_route_or_default CHECK (NOT (is_default AND route IS NOT NULL))
);
CREATE INDEX workflow_edges_from ON adk.workflow_edges (workflow, from_node);
COMMENT ON TABLE adk.workflow_edges IS
    'Edges of graph workflows: from START or a node to a node; route NULL and not is_default = unconditional (always fires), route = fires when the node''s routing event lists one of the values, is_default = fires when no routed edge of the node matched (ADK-Go findSuccessors)';
COMMENT ON COLUMN adk.workflow_edges.from_node IS 'START or a node of the workflow';
COMMENT ON COLUMN adk.workflow_edges.route IS 'the route values (ADK-Go StringRoute, MultiRoute; an int or bool route as its text); NULL = unconditional or default';
COMMENT ON COLUMN adk.workflow_edges.is_default IS 'ADK-Go''s workflow.Default: fires only when no routed edge of from_node matched; at most one per node';

-- ---------------------------------------------------------------------
-- Row rules.
-- ---------------------------------------------------------------------

-- ADK-Go's RetryConfig defaults (workflow/config.go defaultRetryConfig),
-- delays in seconds.
CREATE FUNCTION adk._workflow_retry_defaults() RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT '{"max_attempts": 5, "initial_delay": 1, "max_delay": 60, "backoff_factor": 2, "jitter": 1}'::jsonb
$$;

-- A workflow row makes (or describes) its agent of kind workflow.
CREATE FUNCTION adk._workflows_before_write() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    k text;
BEGIN
    PERFORM adk._lock_definitions();
    IF NEW.name IS NULL THEN
        RAISE EXCEPTION 'workflow name must not be null' USING ERRCODE = '22004';
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.name <> OLD.name THEN
        RAISE EXCEPTION 'a workflow cannot be renamed' USING ERRCODE = '0A000',
            HINT = 'Define a new workflow and delete the old one''s agent.';
    END IF;
    IF NEW.max_concurrency IS NULL OR NEW.max_concurrency < 0 THEN
        RAISE EXCEPTION 'max_concurrency of workflow "%" must be 0 (no limit) or more', NEW.name
            USING ERRCODE = '22023';
    END IF;
    SELECT a.kind INTO k FROM adk.agents a WHERE a.name = NEW.name;
    IF NOT FOUND THEN
        INSERT INTO adk.agents (name, kind, description) VALUES (NEW.name, 'workflow', NEW.description);
    ELSIF k <> 'workflow' THEN
        RAISE EXCEPTION 'workflow name "%" is already used by an agent', NEW.name USING ERRCODE = '42710',
            DETAIL = format('A workflow is an agent of kind workflow; "%s" is an agent of kind %s.', NEW.name, k);
    ELSIF TG_OP = 'INSERT' OR NEW.description IS DISTINCT FROM OLD.description THEN
        UPDATE adk.agents a SET description = NEW.description
         WHERE a.name = NEW.name AND a.description IS DISTINCT FROM NEW.description;
    END IF;
    IF TG_OP = 'UPDATE' THEN
        NEW.updated_at := now();
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER adk_workflows_before_write
    BEFORE INSERT OR UPDATE ON adk.workflows
    FOR EACH ROW EXECUTE FUNCTION adk._workflows_before_write();

CREATE FUNCTION adk._workflow_nodes_before_write() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    p pg_catalog.pg_proc;
    k text;
    extra text;
BEGIN
    PERFORM adk._lock_definitions();
    IF NEW.name IS NULL THEN
        RAISE EXCEPTION 'node name must not be null' USING ERRCODE = '22004';
    END IF;
    IF NEW.name = 'START' THEN
        RAISE EXCEPTION 'node name "START" is reserved' USING ERRCODE = '22023',
            DETAIL = 'START is where every workflow begins; edges from it are written from_node = ''START''.';
    END IF;
    IF NEW.name !~ '^[A-Za-z_][A-Za-z0-9_-]{0,127}$' THEN
        RAISE EXCEPTION 'invalid node name "%"', NEW.name USING ERRCODE = '22023',
            HINT = 'A node name starts with a letter or underscore, followed by at most 127 letters, digits, underscores or hyphens.';
    END IF;
    -- ADK-Go's first rule (validateUniqueNames): one node per name
    IF (TG_OP = 'INSERT' OR NEW.name <> OLD.name OR NEW.workflow <> OLD.workflow)
       AND EXISTS (SELECT 1 FROM adk.workflow_nodes n WHERE n.workflow = NEW.workflow AND n.name = NEW.name) THEN
        RAISE EXCEPTION 'duplicate node name "%" in workflow "%"', NEW.name, NEW.workflow USING ERRCODE = '42710';
    END IF;
    IF NEW.kind IS NULL OR NEW.kind NOT IN ('agent', 'function', 'tool', 'join', 'parallel_worker', 'workflow') THEN
        RAISE EXCEPTION 'unknown kind "%" for node "%"', NEW.kind, NEW.name USING ERRCODE = '22023',
            HINT = 'Use agent, function, tool, join, parallel_worker or workflow.';
    END IF;
    -- the one target of the kind, and nothing of another kind
    SELECT string_agg(c, ', ') INTO extra FROM unnest(ARRAY[
        CASE WHEN NEW.agent IS NOT NULL AND NEW.kind <> 'agent' THEN 'agent' END,
        CASE WHEN NEW.function IS NOT NULL AND NEW.kind <> 'function' THEN 'function' END,
        CASE WHEN NEW.tool IS NOT NULL AND NEW.kind <> 'tool' THEN 'tool' END,
        CASE WHEN NEW.sub_workflow IS NOT NULL AND NEW.kind <> 'workflow' THEN 'workflow' END,
        CASE WHEN NEW.worker IS NOT NULL AND NEW.kind <> 'parallel_worker' THEN 'worker' END,
        CASE WHEN coalesce(NEW.max_concurrency, 0) <> 0 AND NEW.kind <> 'parallel_worker' THEN 'max_concurrency' END]) c;
    IF extra IS NOT NULL THEN
        RAISE EXCEPTION '% node "%" cannot have %', NEW.kind, NEW.name, extra USING ERRCODE = '22023';
    END IF;
    IF NEW.kind <> 'join' AND num_nonnulls(NEW.agent, NEW.function, NEW.tool, NEW.sub_workflow, NEW.worker) = 0 THEN
        RAISE EXCEPTION '% node "%" needs its %', NEW.kind, NEW.name,
            CASE NEW.kind WHEN 'workflow' THEN 'workflow' WHEN 'parallel_worker' THEN 'worker' ELSE NEW.kind END
            USING ERRCODE = '22023';
    END IF;
    NEW.rerun_on_resume := coalesce(NEW.rerun_on_resume, false);
    NEW.wait_for_output := coalesce(NEW.wait_for_output, false);
    NEW.max_concurrency := coalesce(NEW.max_concurrency, 0);
    IF NEW.max_concurrency < 0 THEN
        RAISE EXCEPTION 'max_concurrency of node "%" must be 0 (no limit) or more', NEW.name USING ERRCODE = '22023';
    END IF;
    IF NEW.timeout IS NOT NULL AND NEW.timeout <= '0' THEN
        RAISE EXCEPTION 'timeout of node "%" must be positive', NEW.name USING ERRCODE = '22023',
            HINT = 'Leave it NULL for none.';
    END IF;
    IF NEW.retry IS NOT NULL THEN
        IF jsonb_typeof(NEW.retry) <> 'object' THEN
            RAISE EXCEPTION 'retry of node "%" must be a JSON object', NEW.name USING ERRCODE = '22023',
                HINT = 'For example {"max_attempts": 3}; unset keys take ADK''s defaults, NULL is no retry.';
        END IF;
        SELECT string_agg(format('"%s"', k2), ', ' ORDER BY k2) INTO extra
          FROM jsonb_object_keys(NEW.retry) k2
         WHERE NOT adk._workflow_retry_defaults() ? k2;
        IF extra IS NOT NULL THEN
            RAISE EXCEPTION 'retry of node "%" has unknown keys: %', NEW.name, extra USING ERRCODE = '22023',
                HINT = 'The keys are max_attempts, initial_delay, max_delay (seconds), backoff_factor and jitter.';
        END IF;
        NEW.retry := adk._workflow_retry_defaults() || NEW.retry;
        IF EXISTS (SELECT 1 FROM jsonb_each(NEW.retry) e
                    WHERE jsonb_typeof(e.value) <> 'number' OR (e.value)::numeric < 0
                       OR (e.key = 'max_attempts' AND (e.value)::numeric <> trunc((e.value)::numeric))) THEN
            RAISE EXCEPTION 'retry of node "%" must have numbers of 0 or more', NEW.name USING ERRCODE = '22023',
                DETAIL = format('It is %s; max_attempts is a whole number.', NEW.retry);
        END IF;
    END IF;
    IF jsonb_typeof(NEW.input_schema) <> 'object' OR jsonb_typeof(NEW.output_schema) <> 'object' THEN
        RAISE EXCEPTION '% of node "%" must be a JSON Schema object',
            CASE WHEN jsonb_typeof(NEW.input_schema) <> 'object' THEN 'input_schema' ELSE 'output_schema' END,
            NEW.name USING ERRCODE = '22023';
    END IF;

    IF NEW.kind = 'function' AND (TG_OP = 'INSERT' OR NEW.function IS DISTINCT FROM OLD.function) THEN
        SELECT * INTO p FROM pg_catalog.pg_proc WHERE oid = NEW.function;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'function with OID % does not exist', NEW.function::oid USING ERRCODE = '42883';
        END IF;
        IF p.prokind <> 'f' OR p.pronargs <> 2 OR p.proargtypes[0] <> 'pg_catalog.jsonb'::pg_catalog.regtype
           OR p.proargtypes[1] <> 'pg_catalog.jsonb'::pg_catalog.regtype OR p.provariadic <> 0
           OR p.proretset OR p.prorettype <> 'pg_catalog.jsonb'::pg_catalog.regtype THEN
            RAISE EXCEPTION 'function % of node "%" must take (ctx jsonb, input jsonb) and return jsonb',
                NEW.function, NEW.name USING ERRCODE = '22023',
                HINT = 'It gets the run''s context and the node''s input and returns {"output": ..., "route": ..., "state_delta": ...} (docs/workflows.md).';
        END IF;
        IF adk._check_references() AND NOT has_function_privilege(current_user, NEW.function::oid, 'EXECUTE') THEN
            RAISE EXCEPTION 'permission denied for function %', NEW.function USING ERRCODE = '42501',
                DETAIL = format('Defining node "%s" requires EXECUTE on its function.', NEW.name);
        END IF;
    END IF;
    -- before the foreign keys' own checks, for a clearer message
    IF adk._check_references() THEN
        IF NEW.kind = 'agent' THEN
            SELECT a.kind INTO k FROM adk.agents a WHERE a.name = NEW.agent;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'agent "%" of node "%" does not exist', NEW.agent, NEW.name USING ERRCODE = '42704',
                    HINT = 'Define it first with adk_define_agent().';
            ELSIF k = 'workflow' THEN
                RAISE EXCEPTION 'agent "%" of node "%" is a workflow', NEW.agent, NEW.name USING ERRCODE = '22023',
                    HINT = 'Make it a node of kind workflow.';
            END IF;
        ELSIF NEW.kind = 'tool' AND NOT EXISTS (SELECT 1 FROM adk.tools t WHERE t.name = NEW.tool) THEN
            RAISE EXCEPTION 'tool "%" of node "%" does not exist', NEW.tool, NEW.name USING ERRCODE = '42704',
                HINT = 'Define it first with adk_define_tool().';
        ELSIF NEW.kind = 'workflow' AND NOT EXISTS (SELECT 1 FROM adk.workflows w WHERE w.name = NEW.sub_workflow) THEN
            RAISE EXCEPTION 'workflow "%" of node "%" does not exist', NEW.sub_workflow, NEW.name USING ERRCODE = '42704',
                HINT = 'Define it first with adk_define_workflow().';
        END IF;
    END IF;
    IF TG_OP = 'UPDATE' THEN
        NEW.updated_at := now();
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER adk_workflow_nodes_before_write
    BEFORE INSERT OR UPDATE ON adk.workflow_nodes
    FOR EACH ROW EXECUTE FUNCTION adk._workflow_nodes_before_write();

CREATE FUNCTION adk._workflow_edges_before_write() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM adk._lock_definitions();
    IF NEW.from_node IS NULL OR NEW.to_node IS NULL THEN
        RAISE EXCEPTION 'an edge needs from_node and to_node' USING ERRCODE = '22004';
    END IF;
    NEW.is_default := coalesce(NEW.is_default, false);
    IF NEW.route IS NOT NULL AND (cardinality(NEW.route) = 0 OR array_ndims(NEW.route) > 1
                                  OR array_position(NEW.route, NULL) IS NOT NULL) THEN
        RAISE EXCEPTION 'route of the edge from "%" to "%" must be a list of values', NEW.from_node, NEW.to_node
            USING ERRCODE = '22023', HINT = 'Leave it NULL for an unconditional edge.';
    END IF;
    IF NEW.is_default AND NEW.route IS NOT NULL THEN
        RAISE EXCEPTION 'the edge from "%" to "%" cannot be both a default edge and have a route',
            NEW.from_node, NEW.to_node USING ERRCODE = '22023',
            DETAIL = 'A default edge fires when none of the node''s routed edges matched.';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER adk_workflow_edges_before_write
    BEFORE INSERT OR UPDATE ON adk.workflow_edges
    FOR EACH ROW EXECUTE FUNCTION adk._workflow_edges_before_write();

CREATE TRIGGER adk_workflows_lock_delete
    BEFORE DELETE ON adk.workflows
    FOR EACH ROW EXECUTE FUNCTION adk._definitions_lock_trigger();
CREATE TRIGGER adk_workflow_nodes_lock_delete
    BEFORE DELETE ON adk.workflow_nodes
    FOR EACH ROW EXECUTE FUNCTION adk._definitions_lock_trigger();
CREATE TRIGGER adk_workflow_edges_lock_delete
    BEFORE DELETE ON adk.workflow_edges
    FOR EACH ROW EXECUTE FUNCTION adk._definitions_lock_trigger();

-- A tool a node runs cannot be deleted, renamed or truncated away (a
-- trigger rather than a foreign key, so TRUNCATE adk.tools stays as
-- 50_definitions.sql has it).
CREATE FUNCTION adk._tools_used_by_workflows() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    users text;
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.name = OLD.name THEN
        RETURN NULL;
    END IF;
    SELECT string_agg(format('"%s" of workflow "%s"', n.name, n.workflow), ', ' ORDER BY n.workflow, n.name)
      INTO users
      FROM adk.workflow_nodes n
     WHERE n.tool IS NOT NULL AND (TG_OP = 'TRUNCATE' OR n.tool = OLD.name);
    IF users IS NOT NULL THEN
        RAISE EXCEPTION '% still used by workflow nodes %',
            CASE WHEN TG_OP = 'TRUNCATE' THEN 'tools are' ELSE format('tool "%s" is', OLD.name) END, users
            USING ERRCODE = '23503', HINT = 'Remove those nodes first.';
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER adk_tools_used_by_workflows
    AFTER DELETE OR UPDATE OF name ON adk.tools
    FOR EACH ROW EXECUTE FUNCTION adk._tools_used_by_workflows();
CREATE TRIGGER adk_tools_truncate_workflows
    AFTER TRUNCATE ON adk.tools
    FOR EACH STATEMENT EXECUTE FUNCTION adk._tools_used_by_workflows();

-- A backend's cached definitions (src/runner/defs.c) are dropped when a
-- workflow changes, as when an agent does.
CREATE TRIGGER adk_definitions_version AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON adk.workflows FOR EACH STATEMENT EXECUTE FUNCTION adk._bump_definitions_version();
CREATE TRIGGER adk_definitions_version AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON adk.workflow_nodes FOR EACH STATEMENT EXECUTE FUNCTION adk._bump_definitions_version();
CREATE TRIGGER adk_definitions_version AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON adk.workflow_edges FOR EACH STATEMENT EXECUTE FUNCTION adk._bump_definitions_version();

-- ---------------------------------------------------------------------
-- The graph rules and the hash.
-- ---------------------------------------------------------------------

-- sha256 of the canonical text of a workflow: max_concurrency, its nodes
-- by name and its edges by (from, to), every setting that changes how it
-- runs (descriptions do not).  jsonb's text form is canonical (keys in one
-- order, no insignificant white space).  NULL for no workflow.
CREATE FUNCTION adk._workflow_hash(wf text) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT encode(sha256(convert_to(jsonb_build_object(
               'max_concurrency', w.max_concurrency,
               'nodes', (SELECT coalesce(jsonb_agg(jsonb_build_object(
                                    'name', n.name, 'kind', n.kind, 'agent', n.agent,
                                    'function', n.function::text, 'tool', n.tool,
                                    'workflow', n.sub_workflow, 'worker', n.worker,
                                    'rerun_on_resume', n.rerun_on_resume,
                                    'wait_for_output', n.wait_for_output, 'retry', n.retry,
                                    'timeout', extract(epoch FROM n.timeout),
                                    'max_concurrency', n.max_concurrency,
                                    'input_schema', n.input_schema, 'output_schema', n.output_schema)
                                ORDER BY n.name COLLATE "C"), '[]')
                           FROM adk.workflow_nodes n WHERE n.workflow = w.name),
               'edges', (SELECT coalesce(jsonb_agg(jsonb_build_object(
                                    'from', e.from_node, 'to', e.to_node, 'route', e.route,
                                    'default', e.is_default)
                                ORDER BY e.from_node COLLATE "C", e.to_node COLLATE "C",
                                         e.route::text COLLATE "C", e.is_default), '[]')
                           FROM adk.workflow_edges e WHERE e.workflow = w.name))::text, 'UTF8')), 'hex')
      FROM adk.workflows w WHERE w.name = wf
$$;

-- Raises when workflow wf breaks a rule; the rules and their order are
-- ADK-Go's workflow.New (workflow/validation.go: validateNodes, then
-- validateSubWorkflowNames, then validateWorkflow), after what a table
-- adds (edges naming nodes that exist, a parallel worker's node).  A
-- routed edge into a join is refused too: a join waits for every
-- predecessor, and a routed edge may never fire.
CREATE FUNCTION adk._check_workflow(wf text) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r record;
    names text;
    cycle text[];
BEGIN
    IF NOT EXISTS (SELECT 1 FROM adk.workflows w WHERE w.name = wf) THEN
        RAISE EXCEPTION 'workflow "%" does not exist', wf USING ERRCODE = '42704';
    END IF;

    -- what the tables add: edges name nodes of the workflow
    SELECT e.from_node, e.to_node, x.missing INTO r
      FROM adk.workflow_edges e,
           LATERAL (SELECT m FROM unnest(ARRAY[e.from_node, e.to_node]) m
                     WHERE m <> 'START'
                       AND NOT EXISTS (SELECT 1 FROM adk.workflow_nodes n WHERE n.workflow = wf AND n.name = m)
                     LIMIT 1) x(missing)
     WHERE e.workflow = wf
     ORDER BY e.from_node, e.to_node LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'edge from "%" to "%" of workflow "%" names node "%", which does not exist',
            r.from_node, r.to_node, wf, r.missing USING ERRCODE = '42704',
            HINT = 'Define the node in adk.workflow_nodes; START is the only other name an edge may use.';
    END IF;
    -- a parallel worker's node: in the workflow, on no edge, no join or
    -- worker itself, without retry (ADK-Go NewParallelWorker), one worker's
    SELECT p.name, p.worker, w.name AS found, w.kind, w.retry INTO r
      FROM adk.workflow_nodes p
      LEFT JOIN adk.workflow_nodes w ON w.workflow = wf AND w.name = p.worker
     WHERE p.workflow = wf AND p.kind = 'parallel_worker'
       AND (w.name IS NULL OR w.kind IN ('join', 'parallel_worker') OR w.retry IS NOT NULL
            OR EXISTS (SELECT 1 FROM adk.workflow_edges e
                        WHERE e.workflow = wf AND p.worker IN (e.from_node, e.to_node))
            OR EXISTS (SELECT 1 FROM adk.workflow_nodes q
                        WHERE q.workflow = wf AND q.worker = p.worker AND q.name <> p.name))
     ORDER BY p.name LIMIT 1;
    IF FOUND THEN
        IF r.found IS NULL THEN
            RAISE EXCEPTION 'worker "%" of parallel worker "%" is not a node of workflow "%"', r.worker, r.name, wf
                USING ERRCODE = '42704';
        ELSIF r.kind IN ('join', 'parallel_worker') THEN
            RAISE EXCEPTION 'worker "%" of parallel worker "%" cannot be a % node', r.worker, r.name, r.kind
                USING ERRCODE = '42P17';
        ELSIF r.retry IS NOT NULL THEN
            RAISE EXCEPTION 'worker "%" of parallel worker "%" cannot have retry', r.worker, r.name
                USING ERRCODE = '42P17',
                      HINT = 'Give the parallel worker the retry: it retries each item on its own.';
        ELSE
            RAISE EXCEPTION 'worker "%" of parallel worker "%" cannot be on an edge or the worker of another node', r.worker, r.name
                USING ERRCODE = '42P17',
                      DETAIL = 'The parallel worker runs it once per item of its input; the graph reaches the parallel worker, not its node.';
        END IF;
    END IF;

    -- validateStartNodePresent
    IF NOT EXISTS (SELECT 1 FROM adk.workflow_edges e WHERE e.workflow = wf AND e.from_node = 'START') THEN
        RAISE EXCEPTION 'workflow "%" has no edge from START', wf USING ERRCODE = '42P17',
            HINT = 'Add an edge from_node = ''START'' to the first node.';
    END IF;
    -- validateStartNodeNoIncoming
    SELECT e.from_node INTO r FROM adk.workflow_edges e
     WHERE e.workflow = wf AND e.to_node = 'START' ORDER BY e.from_node LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'node "%" of workflow "%" points to START', r.from_node, wf USING ERRCODE = '42P17',
            DETAIL = 'START is where the workflow begins; no edge may lead into it.';
    END IF;
    -- validateNoTaskModeGraphNodes
    SELECT n.name, n.agent INTO r FROM adk.workflow_nodes n JOIN adk.agents a ON a.name = n.agent
     WHERE n.workflow = wf AND a.kind = 'llm' AND a.mode = 'task'
       AND (EXISTS (SELECT 1 FROM adk.workflow_edges e WHERE e.workflow = wf AND n.name IN (e.from_node, e.to_node))
            OR EXISTS (SELECT 1 FROM adk.workflow_nodes p WHERE p.workflow = wf AND p.worker = n.name))
     ORDER BY n.name LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'agent "%" has mode task and cannot be a node of workflow "%"', r.agent, wf
            USING ERRCODE = '42P17',
                  DETAIL = 'A task agent works across turns and needs its task brief on every turn; a graph node gets the latest input.',
                  HINT = 'Use a chat coordinator with task sub-agents as the node, or give the agent mode single_turn.';
    END IF;
    -- validateChatModeWiring: a chat agent (mode chat; NULL is single_turn
    -- in a graph, as ADK-Go's NewAgentNode makes it) only directly after START
    SELECT e.from_node, e.to_node, n.agent INTO r
      FROM adk.workflow_edges e
      JOIN adk.workflow_nodes n ON n.workflow = wf AND n.name = e.to_node
      JOIN adk.agents a ON a.name = n.agent
     WHERE e.workflow = wf AND e.from_node <> 'START' AND a.kind = 'llm' AND a.mode = 'chat'
     ORDER BY e.to_node, e.from_node LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'agent "%" has mode chat and cannot follow node "%" in workflow "%"', r.agent, r.from_node, wf
            USING ERRCODE = '42P17',
                  DETAIL = 'A chat agent builds its prompt from the conversation and ignores the input an edge hands it.',
                  HINT = 'Give the agent mode single_turn (or leave it NULL), or reach it directly from START.';
    END IF;
    -- validateSubWorkflowNames, for nesting through any depth: no workflow
    -- contains itself
    WITH RECURSIVE nest (name, path) AS (
        SELECT n.sub_workflow, ARRAY[wf, n.sub_workflow]
          FROM adk.workflow_nodes n WHERE n.workflow = wf AND n.kind = 'workflow'
        UNION ALL
        SELECT n.sub_workflow, nest.path || n.sub_workflow
          FROM nest JOIN adk.workflow_nodes n ON n.workflow = nest.name AND n.kind = 'workflow'
         WHERE NOT nest.name = ANY (nest.path[1:cardinality(nest.path) - 1])
    )
    SELECT nest.path INTO cycle FROM nest WHERE nest.name = wf ORDER BY cardinality(nest.path) LIMIT 1;
    IF cycle IS NOT NULL THEN
        RAISE EXCEPTION 'workflow "%" contains itself: %', wf, array_to_string(cycle, ' -> ')
            USING ERRCODE = '42P17', DETAIL = 'A workflow node cannot run the workflow it is in, directly or through nested workflows.';
    END IF;
    -- validateUniqueEdges: one edge per (from, to), whatever its route
    SELECT e.from_node, e.to_node INTO r FROM adk.workflow_edges e
     WHERE e.workflow = wf GROUP BY e.from_node, e.to_node HAVING count(*) > 1
     ORDER BY e.from_node, e.to_node LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'duplicate edge from "%" to "%" in workflow "%"', r.from_node, r.to_node, wf
            USING ERRCODE = '42710',
                  HINT = 'List every route value of that edge in its one route array.';
    END IF;
    -- validateDefaultRoute
    SELECT e.from_node INTO r FROM adk.workflow_edges e
     WHERE e.workflow = wf AND e.is_default GROUP BY e.from_node HAVING count(*) > 1
     ORDER BY e.from_node LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'node "%" of workflow "%" has more than one default edge', r.from_node, wf
            USING ERRCODE = '42P17';
    END IF;
    -- validateConnectivity
    WITH RECURSIVE reach (name) AS (
        SELECT 'START'::text
        UNION
        SELECT e.to_node FROM reach JOIN adk.workflow_edges e ON e.workflow = wf AND e.from_node = reach.name
    )
    SELECT string_agg(format('"%s"', n.name), ', ' ORDER BY n.name) INTO names
      FROM adk.workflow_nodes n
     WHERE n.workflow = wf AND NOT EXISTS (SELECT 1 FROM reach WHERE reach.name = n.name)
       AND NOT EXISTS (SELECT 1 FROM adk.workflow_nodes p WHERE p.workflow = wf AND p.worker = n.name);
    IF names IS NOT NULL THEN
        RAISE EXCEPTION 'nodes of workflow "%" not reachable from START: %', wf, names USING ERRCODE = '42P17';
    END IF;
    -- validateCycles: a cycle of unconditional edges (a routed or a default
    -- edge breaks it)
    WITH RECURSIVE u AS (
        SELECT e.from_node, e.to_node FROM adk.workflow_edges e
         WHERE e.workflow = wf AND e.route IS NULL AND NOT e.is_default
    ), reach (origin, name) AS (
        SELECT u.from_node, u.to_node FROM u
        UNION
        SELECT reach.origin, u.to_node FROM reach JOIN u ON u.from_node = reach.name
    )
    SELECT string_agg(format('"%s"', reach.name), ', ' ORDER BY reach.name) INTO names
      FROM reach WHERE reach.origin = reach.name;
    IF names IS NOT NULL THEN
        RAISE EXCEPTION 'unconditional cycle in workflow "%" through %', wf, names USING ERRCODE = '42P17',
            HINT = 'Give one edge of the loop a route, or make it the default edge, so the loop can end.';
    END IF;
    -- validateFanIn: two unconditional edges into a node need a join
    SELECT e.to_node, count(*) AS n INTO r FROM adk.workflow_edges e
      JOIN adk.workflow_nodes t ON t.workflow = wf AND t.name = e.to_node
     WHERE e.workflow = wf AND e.route IS NULL AND NOT e.is_default AND t.kind <> 'join'
     GROUP BY e.to_node HAVING count(*) > 1
     ORDER BY e.to_node LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'node "%" of workflow "%" has % unconditional incoming edges', r.to_node, wf, r.n
            USING ERRCODE = '42P17',
                  DETAIL = 'It would run once for each predecessor that finishes.',
                  HINT = 'Converge the branches in a node of kind join.';
    END IF;
    -- a join waits for every predecessor: each edge into it must fire
    SELECT e.from_node, e.to_node INTO r FROM adk.workflow_edges e
      JOIN adk.workflow_nodes t ON t.workflow = wf AND t.name = e.to_node
     WHERE e.workflow = wf AND t.kind = 'join' AND (e.route IS NOT NULL OR e.is_default)
     ORDER BY e.to_node, e.from_node LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'the edge from "%" into join "%" of workflow "%" has a route', r.from_node, r.to_node, wf
            USING ERRCODE = '42P17',
                  DETAIL = 'A join waits for every predecessor; a routed or default edge may never fire, and the join would wait forever.',
                  HINT = 'Route into a node before the join, and join with unconditional edges.';
    END IF;
    -- validateStaticSchemas: where both ends of an edge declare a schema,
    -- they are the same schema
    SELECT e.from_node, e.to_node INTO r FROM adk.workflow_edges e
      JOIN adk.workflow_nodes f ON f.workflow = wf AND f.name = e.from_node
      JOIN adk.workflow_nodes t ON t.workflow = wf AND t.name = e.to_node
     WHERE e.workflow = wf AND f.output_schema IS NOT NULL AND t.input_schema IS NOT NULL
       AND f.output_schema <> t.input_schema
     ORDER BY e.from_node, e.to_node LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'schema mismatch on the edge from "%" to "%" of workflow "%"', r.from_node, r.to_node, wf
            USING ERRCODE = '42P17',
                  DETAIL = 'The output_schema of the first node and the input_schema of the second differ.';
    END IF;
END
$$;
COMMENT ON FUNCTION adk._check_workflow(text) IS
    'Raise if a workflow breaks a graph rule (docs/workflows.md, "Validation"), in ADK-Go''s order.';

-- Check a changed workflow, and store its hash, when the transaction
-- commits (deferred; a change of its nodes or edges touches its row, see
-- adk._workflow_rows_changed).  Also run for the workflows that use a
-- changed agent as a node, and keeps an agent of kind workflow from
-- outliving its workflow.
CREATE FUNCTION adk._workflows_deferred_check() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    wfs text[];
    wf text;
    h text;
BEGIN
    IF NOT adk._check_references() THEN
        RETURN NULL;
    END IF;
    IF TG_TABLE_NAME = 'agents' THEN
        IF NEW.kind = 'workflow' AND NOT EXISTS (SELECT 1 FROM adk.workflows w WHERE w.name = NEW.name)
           AND EXISTS (SELECT 1 FROM adk.agents a WHERE a.name = NEW.name AND a.kind = 'workflow') THEN
            RAISE EXCEPTION 'workflow agent "%" has no workflow', NEW.name USING ERRCODE = '23503',
                HINT = 'Define it with adk_define_workflow().';
        END IF;
        wfs := ARRAY(SELECT DISTINCT n.workflow FROM adk.workflow_nodes n WHERE n.agent = NEW.name);
    ELSIF TG_TABLE_NAME = 'workflows' THEN
        IF TG_OP = 'DELETE' THEN
            IF EXISTS (SELECT 1 FROM adk.agents a WHERE a.name = OLD.name AND a.kind = 'workflow')
               AND NOT EXISTS (SELECT 1 FROM adk.workflows w WHERE w.name = OLD.name) THEN
                RAISE EXCEPTION 'workflow agent "%" has no workflow', OLD.name USING ERRCODE = '23503',
                    HINT = 'Delete the agent (DELETE FROM adk.agents), which deletes its workflow, or define the workflow again.';
            END IF;
            RETURN NULL;
        END IF;
        wfs := ARRAY[NEW.name];
    END IF;
    FOREACH wf IN ARRAY wfs LOOP
        CONTINUE WHEN NOT EXISTS (SELECT 1 FROM adk.workflows w WHERE w.name = wf);
        PERFORM adk._check_workflow(wf);
        h := adk._workflow_hash(wf);
        UPDATE adk.workflows w SET graph_hash = h
         WHERE w.name = wf AND w.graph_hash IS DISTINCT FROM h;
    END LOOP;
    RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER adk_workflows_check
    AFTER INSERT OR UPDATE OR DELETE ON adk.workflows DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION adk._workflows_deferred_check();

-- A statement that writes nodes or edges touches the row of each workflow
-- it changed, once: that row's deferred check then runs at commit (one
-- check per statement and workflow, not per node).
CREATE FUNCTION adk._workflow_rows_changed() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NOT adk._check_references() THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        UPDATE adk.workflows w SET updated_at = now() WHERE w.name IN (SELECT n.workflow FROM new_rows n);
    ELSIF TG_OP = 'UPDATE' THEN
        UPDATE adk.workflows w SET updated_at = now()
         WHERE w.name IN (SELECT n.workflow FROM new_rows n UNION SELECT o.workflow FROM old_rows o);
    ELSE
        UPDATE adk.workflows w SET updated_at = now() WHERE w.name IN (SELECT o.workflow FROM old_rows o);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER adk_workflow_nodes_inserted AFTER INSERT ON adk.workflow_nodes
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION adk._workflow_rows_changed();
CREATE TRIGGER adk_workflow_nodes_updated AFTER UPDATE ON adk.workflow_nodes
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION adk._workflow_rows_changed();
CREATE TRIGGER adk_workflow_nodes_deleted AFTER DELETE ON adk.workflow_nodes
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION adk._workflow_rows_changed();
CREATE TRIGGER adk_workflow_edges_inserted AFTER INSERT ON adk.workflow_edges
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION adk._workflow_rows_changed();
CREATE TRIGGER adk_workflow_edges_updated AFTER UPDATE ON adk.workflow_edges
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION adk._workflow_rows_changed();
CREATE TRIGGER adk_workflow_edges_deleted AFTER DELETE ON adk.workflow_edges
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION adk._workflow_rows_changed();
CREATE CONSTRAINT TRIGGER adk_agents_workflows_check
    AFTER INSERT OR UPDATE ON adk.agents DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION adk._workflows_deferred_check();

-- ---------------------------------------------------------------------
-- Defining a workflow in one call.
-- ---------------------------------------------------------------------

-- The rows of a JSON list of nodes, for workflow wf: each an object with
-- "name", "kind" and the kind's target ("agent", "function", "tool",
-- "workflow", "worker"), and optionally the node's settings.  kind may be
-- left out when one target is given; name defaults to the agent, tool or
-- workflow named.
CREATE FUNCTION adk._workflow_node_rows(wf text, nodes jsonb) RETURNS SETOF adk.workflow_nodes
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    keys text[] := ARRAY['name', 'kind', 'agent', 'function', 'tool', 'workflow', 'worker', 'description',
                         'rerun_on_resume', 'wait_for_output', 'retry', 'timeout', 'max_concurrency',
                         'input_schema', 'output_schema'];
    o jsonb;
    i bigint;
    extra text;
    row adk.workflow_nodes;
BEGIN
    IF jsonb_typeof(nodes) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'nodes of workflow "%" must be a JSON array of objects', wf USING ERRCODE = '22023';
    END IF;
    FOR o, i IN SELECT x.value, x.ordinality FROM jsonb_array_elements(nodes) WITH ORDINALITY x LOOP
        IF jsonb_typeof(o) <> 'object' THEN
            RAISE EXCEPTION 'node % of workflow "%" must be a JSON object', i, wf USING ERRCODE = '22023';
        END IF;
        SELECT string_agg(format('"%s"', k), ', ' ORDER BY k) INTO extra
          FROM jsonb_object_keys(o) k WHERE NOT k = ANY (keys);
        IF extra IS NOT NULL THEN
            RAISE EXCEPTION 'node % of workflow "%" has unknown keys: %', i, wf, extra USING ERRCODE = '22023',
                HINT = format('The keys are %s.', array_to_string(keys, ', '));
        END IF;
        IF EXISTS (SELECT 1 FROM jsonb_each(o) e
                    WHERE e.key IN ('name', 'kind', 'agent', 'tool', 'workflow', 'worker', 'description')
                      AND jsonb_typeof(e.value) NOT IN ('string', 'null')) THEN
            RAISE EXCEPTION 'node % of workflow "%" has a name, kind or target that is not a string', i, wf
                USING ERRCODE = '22023';
        END IF;
        row := NULL;
        row.workflow := wf;
        row.agent := o ->> 'agent';
        -- a function: its OID (a regprocedure cast to oid in the caller's
        -- statement), or its signature with its schema (this function
        -- cannot see the caller's search_path)
        IF jsonb_typeof(o -> 'function') = 'number' OR o ->> 'function' ~ '^[0-9]+$' THEN
            SELECT p.oid INTO row.function FROM pg_catalog.pg_proc p WHERE p.oid = (o ->> 'function')::oid;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'function with OID % does not exist', o ->> 'function' USING ERRCODE = '42883';
            END IF;
        ELSIF jsonb_typeof(o -> 'function') = 'string' THEN
            row.function := to_regprocedure(o ->> 'function');
            IF row.function IS NULL THEN
                RAISE EXCEPTION 'function % of node % of workflow "%" does not exist', o ->> 'function', i, wf
                    USING ERRCODE = '42883',
                          HINT = 'Write its schema and argument types, as in "public.my_step(jsonb,jsonb)", or give its OID: ''my_step(jsonb,jsonb)''::regprocedure::oid.';
            END IF;
        ELSIF jsonb_typeof(o -> 'function') <> 'null' THEN
            RAISE EXCEPTION 'function of node % of workflow "%" must be a signature or an OID', i, wf
                USING ERRCODE = '22023';
        END IF;
        row.tool := o ->> 'tool';
        row.sub_workflow := o ->> 'workflow';
        row.worker := o ->> 'worker';
        row.kind := coalesce(o ->> 'kind',
                             CASE WHEN num_nonnulls(row.agent, row.function, row.tool, row.sub_workflow, row.worker) = 1
                                  THEN CASE WHEN row.agent IS NOT NULL THEN 'agent'
                                            WHEN row.function IS NOT NULL THEN 'function'
                                            WHEN row.tool IS NOT NULL THEN 'tool'
                                            WHEN row.sub_workflow IS NOT NULL THEN 'workflow'
                                            ELSE 'parallel_worker' END END);
        IF row.kind IS NULL THEN
            RAISE EXCEPTION 'node % of workflow "%" needs a kind', i, wf USING ERRCODE = '22023',
                HINT = 'Give "kind", or exactly one of "agent", "function", "tool", "workflow", "worker".';
        END IF;
        row.name := coalesce(o ->> 'name', row.agent, row.tool, row.sub_workflow);
        row.description := o ->> 'description';
        row.rerun_on_resume := (o ->> 'rerun_on_resume')::boolean;
        row.wait_for_output := (o ->> 'wait_for_output')::boolean;
        row.retry := CASE WHEN jsonb_typeof(o -> 'retry') <> 'null' THEN o -> 'retry' END;
        IF jsonb_typeof(o -> 'timeout') NOT IN ('number', 'string', 'null') THEN
            RAISE EXCEPTION 'timeout of node % of workflow "%" must be seconds or an interval', i, wf
                USING ERRCODE = '22023', HINT = 'For example 30 or "2 minutes".';
        END IF;
        row.timeout := CASE jsonb_typeof(o -> 'timeout')
                            WHEN 'number' THEN make_interval(secs => (o ->> 'timeout')::double precision)
                            WHEN 'string' THEN (o ->> 'timeout')::interval END;
        row.max_concurrency := (o ->> 'max_concurrency')::integer;
        row.input_schema := CASE WHEN jsonb_typeof(o -> 'input_schema') <> 'null' THEN o -> 'input_schema' END;
        row.output_schema := CASE WHEN jsonb_typeof(o -> 'output_schema') <> 'null' THEN o -> 'output_schema' END;
        row.created_at := now();
        row.updated_at := now();
        RETURN NEXT row;
    END LOOP;
END
$$;

-- The rows of a JSON list of edges: {"from", "to"} and optionally "route"
-- (a value or a list of values; numbers and booleans as their text, as
-- ADK-Go compares IntRoute and BoolRoute) or "default": true.
CREATE FUNCTION adk._workflow_edge_rows(wf text, edges jsonb) RETURNS SETOF adk.workflow_edges
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    o jsonb;
    i bigint;
    extra text;
    row adk.workflow_edges;
BEGIN
    IF jsonb_typeof(edges) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'edges of workflow "%" must be a JSON array of objects', wf USING ERRCODE = '22023';
    END IF;
    FOR o, i IN SELECT x.value, x.ordinality FROM jsonb_array_elements(edges) WITH ORDINALITY x LOOP
        IF jsonb_typeof(o) <> 'object' THEN
            RAISE EXCEPTION 'edge % of workflow "%" must be a JSON object', i, wf USING ERRCODE = '22023';
        END IF;
        SELECT string_agg(format('"%s"', k), ', ' ORDER BY k) INTO extra
          FROM jsonb_object_keys(o) k WHERE NOT k IN ('from', 'to', 'route', 'default');
        IF extra IS NOT NULL THEN
            RAISE EXCEPTION 'edge % of workflow "%" has unknown keys: %', i, wf, extra USING ERRCODE = '22023',
                HINT = 'The keys are from, to, route and default.';
        END IF;
        IF jsonb_typeof(o -> 'from') IS DISTINCT FROM 'string' OR jsonb_typeof(o -> 'to') IS DISTINCT FROM 'string' THEN
            RAISE EXCEPTION 'edge % of workflow "%" needs "from" and "to" node names', i, wf USING ERRCODE = '22023';
        END IF;
        IF jsonb_typeof(o -> 'route') IN ('object')
           OR (jsonb_typeof(o -> 'route') = 'array'
               AND EXISTS (SELECT 1 FROM jsonb_array_elements(o -> 'route') v
                            WHERE jsonb_typeof(v) NOT IN ('string', 'number', 'boolean'))) THEN
            RAISE EXCEPTION 'route of edge % of workflow "%" must be a string, number, boolean or a list of them', i, wf
                USING ERRCODE = '22023';
        END IF;
        row := NULL;
        row.workflow := wf;
        row.from_node := o ->> 'from';
        row.to_node := o ->> 'to';
        row.route := CASE WHEN coalesce(jsonb_typeof(o -> 'route'), 'null') = 'null' THEN NULL
                          WHEN jsonb_typeof(o -> 'route') = 'array'
                          THEN ARRAY(SELECT v #>> '{}' FROM jsonb_array_elements(o -> 'route') v)
                          ELSE ARRAY[o ->> 'route'] END;
        row.is_default := coalesce((o ->> 'default')::boolean, false);
        row.created_at := now();
        RETURN NEXT row;
    END LOOP;
END
$$;

CREATE FUNCTION adk_define_workflow(name text, nodes jsonb DEFAULT NULL, edges jsonb DEFAULT NULL,
                                    description text DEFAULT NULL, max_concurrency integer DEFAULT 0)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF $1 IS NULL THEN
        RAISE EXCEPTION 'workflow name must not be null' USING ERRCODE = '22004';
    END IF;
    INSERT INTO adk.workflows AS w (name, description, max_concurrency)
    VALUES ($1, $4, coalesce($5, 0))
    ON CONFLICT ON CONSTRAINT workflows_pkey DO UPDATE
       SET description = EXCLUDED.description, max_concurrency = EXCLUDED.max_concurrency;
    IF $2 IS NOT NULL THEN
        PERFORM adk._workflow_node_rows($1, $2);   -- its errors before anything is deleted
        DELETE FROM adk.workflow_nodes n WHERE n.workflow = $1;
        INSERT INTO adk.workflow_nodes SELECT * FROM adk._workflow_node_rows($1, $2);
    END IF;
    IF $3 IS NOT NULL THEN
        PERFORM adk._workflow_edge_rows($1, $3);
        DELETE FROM adk.workflow_edges e WHERE e.workflow = $1;
        INSERT INTO adk.workflow_edges SELECT * FROM adk._workflow_edge_rows($1, $3);
    END IF;
END
$$;
COMMENT ON FUNCTION adk_define_workflow(text, jsonb, jsonb, text, integer) IS
    'Create or replace a graph workflow (and its agent of kind workflow): nodes and edges as JSON lists replace the old ones (NULL keeps them); the graph is checked when the transaction commits (docs/workflows.md).';

-- ---------------------------------------------------------------------
-- Seeing it: the runs of workflows, and the graph as a Mermaid flowchart.
-- ---------------------------------------------------------------------

-- Each node activation of a workflow: the adk.run_states rows whose
-- node_path ends in '<workflow>/<node>@<run id>' for a node of that
-- workflow (a nested workflow's nodes under their parent's path).
-- Reads as the caller: a user sees the rows row-level security lets them.
CREATE VIEW adk.workflow_runs WITH (security_invoker = true) AS
SELECT r.app_name, r.user_id, r.session_id, r.invocation_id, p.workflow, p.node, p.run_id,
       r.node_path, r.status,
       CASE WHEN r.status = 'waiting' THEN r.interrupt_ids END AS waiting_on,
       r.input, r.output, r.updated_at
  FROM adk.run_states r
 CROSS JOIN LATERAL regexp_match(r.node_path, '(?:^|/)([A-Za-z_][A-Za-z0-9_]*)/([A-Za-z_][A-Za-z0-9_-]*)@([^/@]+)$') m
 CROSS JOIN LATERAL (SELECT m[1] AS workflow, m[2] AS node, m[3] AS run_id) p
 WHERE m IS NOT NULL
   AND EXISTS (SELECT 1 FROM adk.workflow_nodes n WHERE n.workflow = p.workflow AND n.name = p.node);
COMMENT ON VIEW adk.workflow_runs IS
    'Node activations of graph workflows (adk.run_states rows with node_path <workflow>/<node>@<run id>): status, and the interrupt ids a waiting node waits on.';

-- A label in a Mermaid flowchart: adk._mermaid_text's escaping, and a
-- double quote as its entity code (labels are written in quotes).
CREATE FUNCTION adk._mermaid_label(t text, max_chars integer DEFAULT 60) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT replace(adk._mermaid_text(t, max_chars), '"', '#quot;')
$$;

CREATE FUNCTION adk_workflow_mermaid(workflow text, invocation_id text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r record;
    ids jsonb := '{"START": "start"}';
    lines text[] := ARRAY['flowchart TD', '    start(["START"])'];
    statuses jsonb := '{}';
    i integer := 0;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM adk.workflows w WHERE w.name = $1) THEN
        RAISE EXCEPTION 'workflow "%" does not exist', $1 USING ERRCODE = '42704';
    END IF;
    -- each node's latest activation in the invocation, read once
    IF $2 IS NOT NULL THEN
        SELECT coalesce(jsonb_object_agg(s.node, s.status), '{}') INTO statuses
          FROM (SELECT DISTINCT ON (x.node) x.node, x.status
                  FROM adk.workflow_runs x
                 WHERE x.invocation_id = $2 AND x.workflow = $1
                 ORDER BY x.node, x.updated_at DESC, x.run_id DESC) s;
    END IF;
    FOR r IN
        SELECT n.name, n.kind,
               coalesce(n.agent, n.function::text, n.tool, n.sub_workflow, n.worker) AS target,
               statuses ->> n.name AS status
          FROM adk.workflow_nodes n
         WHERE n.workflow = $1
         ORDER BY n.name COLLATE "C"
    LOOP
        i := i + 1;
        ids := ids || jsonb_build_object(r.name, 'n' || i);
        lines := lines || format('    n%s%s"%s<br/>%s%s"%s', i,
                                 CASE r.kind WHEN 'join' THEN '{{' WHEN 'function' THEN '(' WHEN 'tool' THEN '[/'
                                             WHEN 'workflow' THEN '[[' WHEN 'parallel_worker' THEN '[\' ELSE '[' END,
                                 adk._mermaid_label(r.name),
                                 r.kind,
                                 CASE WHEN r.target IS NOT NULL AND r.target <> r.name
                                      THEN ' ' || adk._mermaid_label(r.target) ELSE '' END,
                                 CASE r.kind WHEN 'join' THEN '}}' WHEN 'function' THEN ')' WHEN 'tool' THEN '/]'
                                             WHEN 'workflow' THEN ']]' WHEN 'parallel_worker' THEN '\]' ELSE ']' END);
        IF r.status IS NOT NULL THEN
            lines := lines || format('    class n%s %s', i, r.status);
        END IF;
    END LOOP;
    FOR r IN
        SELECT e.from_node, e.to_node, e.route, e.is_default
          FROM adk.workflow_edges e WHERE e.workflow = $1
         ORDER BY e.from_node = 'START' DESC, e.from_node COLLATE "C", e.to_node COLLATE "C"
    LOOP
        lines := lines || format('    %s %s %s', ids ->> r.from_node,
                                 CASE WHEN r.is_default THEN '-.->|"default"|'
                                      WHEN r.route IS NOT NULL THEN format('-->|"%s"|', adk._mermaid_label(array_to_string(r.route, ', ')))
                                      ELSE '-->' END,
                                 ids ->> r.to_node);
    END LOOP;
    FOR r IN
        SELECT n.name, n.worker FROM adk.workflow_nodes n
         WHERE n.workflow = $1 AND n.kind = 'parallel_worker' ORDER BY n.name COLLATE "C"
    LOOP
        lines := lines || format('    %s -.-|"each item"| %s', ids ->> r.name, ids ->> r.worker);
    END LOOP;
    IF $2 IS NOT NULL THEN
        lines := lines || ARRAY['    classDef running fill:#dbeafe,stroke:#2563eb',
                                '    classDef waiting fill:#fef3c7,stroke:#d97706',
                                '    classDef completed fill:#dcfce7,stroke:#16a34a',
                                '    classDef failed fill:#fee2e2,stroke:#dc2626',
                                '    classDef cancelled fill:#e5e7eb,stroke:#6b7280'];
    END IF;
    RETURN array_to_string(lines, E'\n');
END
$$;
COMMENT ON FUNCTION adk_workflow_mermaid(text, text) IS
    'The workflow as a Mermaid flowchart (nodes with kind and target, edges with routes; default edges dotted); with an invocation id, each node''s latest status in it as a class (running, waiting, completed, failed, cancelled), from the adk.run_states rows the caller may see.';

GRANT SELECT ON adk.workflows, adk.workflow_nodes, adk.workflow_edges, adk.workflow_runs TO adk_user;
GRANT INSERT, UPDATE, DELETE ON adk.workflows, adk.workflow_nodes, adk.workflow_edges TO adk_admin;

SELECT pg_catalog.pg_extension_config_dump('adk.workflows', '');
SELECT pg_catalog.pg_extension_config_dump('adk.workflow_nodes', '');
SELECT pg_catalog.pg_extension_config_dump('adk.workflow_edges', '');

REVOKE ALL ON FUNCTION adk._workflow_retry_defaults(), adk._workflows_before_write(),
                       adk._workflow_nodes_before_write(), adk._workflow_edges_before_write(),
                       adk._workflow_hash(text), adk._check_workflow(text),
                       adk._workflows_deferred_check(), adk._workflow_node_rows(text, jsonb),
                       adk._workflow_edge_rows(text, jsonb), adk_define_workflow(text, jsonb, jsonb, text, integer),
                       adk._mermaid_label(text, integer), adk_workflow_mermaid(text, text),
                       adk._tools_used_by_workflows(), adk._workflow_rows_changed()
   FROM PUBLIC;
GRANT EXECUTE ON FUNCTION adk_define_workflow(text, jsonb, jsonb, text, integer),
                          adk._check_workflow(text), adk._workflow_hash(text), adk._workflow_retry_defaults(),
                          adk._workflow_node_rows(text, jsonb), adk._workflow_edge_rows(text, jsonb)
   TO adk_admin;
GRANT EXECUTE ON FUNCTION adk_workflow_mermaid(text, text), adk._mermaid_label(text, integer) TO adk_user;

-- The queue at its limit (docs/workers.md, "Queue"): the claim counts the
-- running jobs by an index of those alone; a worker claims several jobs
-- in one transaction (adk._claim_jobs); the end of a job in PL/pgSQL,
-- whose plans a worker keeps.
-- the claim's count of the jobs running now per role and per app: these
-- entries only, not every job the app ever ran (jobs_session_idx)
CREATE INDEX jobs_running_idx ON adk.jobs (role_oid, app_name) WHERE status = 'running';

CREATE OR REPLACE FUNCTION adk._job_finished(job_id bigint, job_invocation text) RETURNS text
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    new_status text;
BEGIN
    UPDATE adk.jobs j
       SET status = CASE WHEN i.status OPERATOR(pg_catalog.=) 'failed' THEN 'failed'
                         WHEN i.status OPERATOR(pg_catalog.=) 'waiting' THEN 'waiting'
                         WHEN i.status OPERATOR(pg_catalog.=) 'cancelled' THEN 'cancelled'
                         ELSE 'completed' END,
           finished_at = CASE WHEN i.status OPERATOR(pg_catalog.=) 'waiting' THEN NULL
                              ELSE pg_catalog.clock_timestamp() END,
           error = CASE WHEN i.status OPERATOR(pg_catalog.=) 'failed'
                        THEN pg_catalog.concat_ws(': ', i.error_code, i.error_message) END
      FROM (VALUES (1)) AS one (x)
      LEFT JOIN adk.invocations i
        ON i.invocation_id OPERATOR(pg_catalog.=) _job_finished.job_invocation
     WHERE j.id OPERATOR(pg_catalog.=) _job_finished.job_id
    RETURNING j.status INTO new_status;
    RETURN new_status;
END
$$;

-- A job worker claims up to "most" jobs in one transaction: one claim after
-- another, each seeing the ones before it running (so the order and
-- fairness are _claim_job's), with one commit for them all.
CREATE FUNCTION adk._claim_jobs(worker_pid integer, most integer)
RETURNS SETOF adk.jobs
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    claimed adk.jobs;
BEGIN
    FOR i IN 1..most LOOP
        SELECT * INTO claimed FROM adk._claim_job(_claim_jobs.worker_pid);
        IF NOT FOUND THEN
            RETURN;
        END IF;
        RETURN NEXT claimed;
    END LOOP;
END
$$;
COMMENT ON FUNCTION adk._claim_jobs(integer, integer) IS
    'The job workers'' claim of up to most jobs at once: adk._claim_job repeated until it finds none.';

REVOKE ALL ON FUNCTION adk._claim_jobs(integer, integer) FROM PUBLIC;

CREATE OR REPLACE FUNCTION adk._claim_job(worker_pid integer)
RETURNS SETOF adk.jobs
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    fair_role oid;
    fair_app text;
    next_id bigint;
BEGIN
    WITH RECURSIVE q AS (
        (SELECT j.role_oid FROM adk.jobs j
          WHERE j.status OPERATOR(pg_catalog.=) 'queued'
          ORDER BY j.role_oid LIMIT 1)
        UNION ALL
        SELECT (SELECT j.role_oid FROM adk.jobs j
                 WHERE j.status OPERATOR(pg_catalog.=) 'queued'
                   AND j.role_oid OPERATOR(pg_catalog.>) q.role_oid
                 ORDER BY j.role_oid LIMIT 1)
          FROM q WHERE q.role_oid IS NOT NULL)
    SELECT q.role_oid INTO fair_role
      FROM q
     WHERE q.role_oid IS NOT NULL
     ORDER BY (SELECT pg_catalog.count(*) FROM adk.jobs r
                WHERE r.status OPERATOR(pg_catalog.=) 'running'
                  AND r.role_oid OPERATOR(pg_catalog.=) q.role_oid), q.role_oid
     LIMIT 1;
    IF fair_role IS NULL THEN
        RETURN;
    END IF;
    WITH RECURSIVE a AS (
        (SELECT j.app_name FROM adk.jobs j
          WHERE j.status OPERATOR(pg_catalog.=) 'queued'
            AND j.role_oid OPERATOR(pg_catalog.=) fair_role
          ORDER BY j.app_name LIMIT 1)
        UNION ALL
        SELECT (SELECT j.app_name FROM adk.jobs j
                 WHERE j.status OPERATOR(pg_catalog.=) 'queued'
                   AND j.role_oid OPERATOR(pg_catalog.=) fair_role
                   AND j.app_name OPERATOR(pg_catalog.>) a.app_name
                 ORDER BY j.app_name LIMIT 1)
          FROM a WHERE a.app_name IS NOT NULL)
    SELECT a.app_name INTO fair_app
      FROM a
     WHERE a.app_name IS NOT NULL
     ORDER BY (SELECT pg_catalog.count(*) FROM adk.jobs r
                WHERE r.status OPERATOR(pg_catalog.=) 'running'
                  AND r.app_name OPERATOR(pg_catalog.=) a.app_name), a.app_name
     LIMIT 1;
    SELECT j.id INTO next_id FROM adk.jobs j
     WHERE j.status OPERATOR(pg_catalog.=) 'queued'
       AND j.role_oid OPERATOR(pg_catalog.=) fair_role
       AND j.app_name OPERATOR(pg_catalog.=) fair_app
       AND j.id OPERATOR(pg_catalog.=) (
               SELECT pg_catalog.min(e.id) FROM adk.jobs e
                WHERE e.app_name OPERATOR(pg_catalog.=) j.app_name
                  AND e.user_id OPERATOR(pg_catalog.=) j.user_id
                  AND e.session_id OPERATOR(pg_catalog.=) j.session_id
                  AND e.status OPERATOR(pg_catalog.=) ANY ('{queued,running}'))
     ORDER BY j.id
     LIMIT 1
       FOR UPDATE OF j SKIP LOCKED;
    IF next_id IS NULL THEN
        SELECT j.id INTO next_id FROM adk.jobs j
         WHERE j.status OPERATOR(pg_catalog.=) 'queued'
           AND j.id OPERATOR(pg_catalog.=) (
                   SELECT pg_catalog.min(e.id) FROM adk.jobs e
                    WHERE e.app_name OPERATOR(pg_catalog.=) j.app_name
                      AND e.user_id OPERATOR(pg_catalog.=) j.user_id
                      AND e.session_id OPERATOR(pg_catalog.=) j.session_id
                      AND e.status OPERATOR(pg_catalog.=) ANY ('{queued,running}'))
         ORDER BY j.id
         LIMIT 1
           FOR UPDATE OF j SKIP LOCKED;
    END IF;
    IF next_id IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY
    UPDATE adk.jobs j
       SET status = 'running', attempts = j.attempts OPERATOR(pg_catalog.+) 1,
           worker_pid = _claim_job.worker_pid,
           started_at = pg_catalog.clock_timestamp(), error = NULL
     WHERE j.id OPERATOR(pg_catalog.=) next_id
    RETURNING j.*;
END
$$;

-- the body of adk_create_session, renamed adk._create_session and made
-- SECURITY INVOKER by 85_tenancy.sql
CREATE OR REPLACE FUNCTION adk._create_session(app_name text, user_id text,
                                   session_id text DEFAULT NULL,
                                   state jsonb DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    now_ms timestamptz := date_trunc('milliseconds', clock_timestamp());
    app_delta jsonb;
    user_delta jsonb;
    created adk.sessions;
BEGIN
    PERFORM adk._check_id('app name', app_name);
    PERFORM adk._check_id('user id', user_id);
    IF session_id IS NULL THEN
        session_id := gen_random_uuid()::text;
    ELSE
        PERFORM adk._check_id('session id', session_id);
    END IF;
    IF state IS NOT NULL AND jsonb_typeof(state) <> 'object' THEN
        RAISE EXCEPTION 'session state must be a JSON object' USING ERRCODE = '22023';
    END IF;
    IF state ?| ARRAY['app:', 'user:'] THEN
        RAISE EXCEPTION 'state key "%" has no name after its prefix',
            CASE WHEN state ? 'app:' THEN 'app:' ELSE 'user:' END USING ERRCODE = '22023';
    END IF;

    INSERT INTO adk.sessions AS s (id, app_name, user_id, state, create_time, update_time)
    VALUES (session_id, app_name, user_id, adk._scope_state(state, NULL), now_ms, now_ms)
    ON CONFLICT DO NOTHING
    RETURNING s.* INTO created;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'session "%" already exists for app "%" and user "%"',
            session_id, app_name, user_id USING ERRCODE = '23505';
    END IF;

    -- app: and user: keys merge into their scope's row (created if missing,
    -- as ADK does on session creation).  Without such keys the row is only
    -- created if missing, not locked: ON CONFLICT DO UPDATE locks the row
    -- it finds even when its WHERE then updates nothing, and every session
    -- of the app (every job worker creating one) would wait for the others'
    -- commits.
    app_delta := adk._scope_state(state, 'app:');
    user_delta := adk._scope_state(state, 'user:');
    IF app_delta <> '{}'::jsonb THEN
        INSERT INTO adk.app_states AS a (app_name, state, update_time)
        VALUES (app_name, app_delta, now_ms)
        ON CONFLICT ON CONSTRAINT app_states_pkey DO UPDATE
            SET state = a.state || EXCLUDED.state,
                update_time = GREATEST(a.update_time, EXCLUDED.update_time);
    ELSE
        INSERT INTO adk.app_states AS a (app_name, state, update_time)
        VALUES (app_name, app_delta, now_ms)
        ON CONFLICT ON CONSTRAINT app_states_pkey DO NOTHING;
    END IF;
    IF user_delta <> '{}'::jsonb THEN
        INSERT INTO adk.user_states AS u (app_name, user_id, state, update_time)
        VALUES (app_name, user_id, user_delta, now_ms)
        ON CONFLICT ON CONSTRAINT user_states_pkey DO UPDATE
            SET state = u.state || EXCLUDED.state,
                update_time = GREATEST(u.update_time, EXCLUDED.update_time);
    ELSE
        INSERT INTO adk.user_states AS u (app_name, user_id, state, update_time)
        VALUES (app_name, user_id, user_delta, now_ms)
        ON CONFLICT ON CONSTRAINT user_states_pkey DO NOTHING;
    END IF;

    RETURN adk._session_json(created.id, created.app_name, created.user_id, created.state,
                             created.update_time, '[]'::jsonb);
END
$$;

-- #25 part 5: adk.run_states holds a row per node activation of every
-- invocation (not only those that paused), with the node's attempt; a
-- single_turn node's row carries its input (sql/install/62_hitl.sql,
-- 87_runner_statements.sql).
ALTER TABLE adk.run_states ADD COLUMN attempt integer NOT NULL DEFAULT 1;
COMMENT ON TABLE adk.run_states IS
    'Workflow RunState per node activation of every invocation: status, pending interrupt_ids, answered_ids, input, output, attempt; derived from adk.events but attempt (adk_rebuild_run_states)';
COMMENT ON COLUMN adk.run_states.input IS 'the node''s input: the root''s user message content, a task''s or a single_turn node''s delegating call arguments';
COMMENT ON COLUMN adk.run_states.attempt IS 'how many times this node activation was started: 1, plus one for each retry of its queued run that ran the node again; a resume after a human''s answer is not a new attempt';

CREATE FUNCTION adk._node_input(p_app text, p_user text, p_session text,
                                p_invocation text, p_path text)
RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    node text := substring(p_path from '[^/]*$');
    tail text := substring(node from '@([^@]*)$');
    found jsonb;
BEGIN
    IF tail IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT p -> 'function_call' -> 'args' INTO found
      FROM adk.live_events e
     CROSS JOIN LATERAL adk._parts(e.event_data -> 'content') p
     WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
       AND e.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
       AND coalesce(e.event_data ->> 'author', 'user') <> 'user'
       AND p #>> '{function_call,id}' = tail
     ORDER BY e.seq LIMIT 1;
    IF found IS NOT NULL OR tail !~ '^[1-9][0-9]{0,8}$' OR strpos(p_path, '/') = 0 THEN
        RETURN found;
    END IF;
    SELECT c.part -> 'function_call' -> 'args' INTO found
      FROM (SELECT p.part, row_number() OVER (ORDER BY e.seq, p.ord) AS n
              FROM adk.live_events e
             CROSS JOIN LATERAL adk._parts(e.event_data -> 'content') WITH ORDINALITY AS p(part, ord)
             WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
               AND e.invocation_id = p_invocation
               AND e.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
               AND coalesce(e.event_data ->> 'author', 'user') <> 'user'
               AND adk._node_path(e.event_data) = left(p_path, length(p_path) - length(node) - 1)
               AND p.part #>> '{function_call,name}' = left(node, length(node) - length(tail) - 1)) c
     WHERE c.n = tail::integer;
    RETURN found;
END
$$;
REVOKE ALL ON FUNCTION adk._node_input(text, text, text, text, text) FROM PUBLIC;

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
        -- every node activation
        SELECT DISTINCT ev.invocation_id, ev.path
          FROM ev
         WHERE ev.path IS NOT NULL
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
                -- a task's or a single_turn node's delegating call
                adk._node_input(p_app, p_user, p_session, n.invocation_id, n.path)
           END,
           CASE WHEN fin.d #>> '{node_info,message_as_output}' = 'true' THEN fin.d -> 'content'
                ELSE fin.d -> 'output' END,
           -- not in the events: adk._refresh_run_states keeps a row's own
           1
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
                x.interrupt_ids, x.answered_ids, x.agent, x.updated_at, x.input, x.output, x.attempt)
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

CREATE FUNCTION adk._node_start(p_app text, p_user text, p_session text, p_invocation text,
                                p_path text, p_agent text, p_input jsonb, p_retry boolean)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    INSERT INTO adk.run_states AS r
           (app_name, user_id, session_id, invocation_id, node_path, status, agent, input)
    VALUES (p_app, p_user, p_session, p_invocation, p_path, 'running', p_agent,
            CASE WHEN strpos(p_path, '@') = 0 THEN p_input
                 ELSE adk._node_input(p_app, p_user, p_session, p_invocation, p_path) END)
    ON CONFLICT (app_name, user_id, session_id, invocation_id, node_path) DO UPDATE
       SET status = 'running', attempt = r.attempt + 1, updated_at = EXCLUDED.updated_at
     WHERE p_retry;
END
$$;
REVOKE ALL ON FUNCTION adk._node_start(text, text, text, text, text, text, jsonb, boolean) FROM PUBLIC;

CREATE OR REPLACE FUNCTION adk._rebuild_run_states(app_name text, user_id text, session_id text)
RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    s record;
    n bigint := 0;
BEGIN
    FOR s IN
        SELECT x.app_name, x.user_id, x.session_id
          FROM (SELECT e.app_name::text, e.user_id::text, e.session_id::text
                  FROM adk.events e
                 WHERE ($1 IS NULL OR e.app_name = $1)
                   AND ($2 IS NULL OR e.user_id = $2)
                   AND ($3 IS NULL OR e.session_id = $3)
                UNION
                SELECT r.app_name, r.user_id, r.session_id
                  FROM adk.run_states r
                 WHERE ($1 IS NULL OR r.app_name = $1)
                   AND ($2 IS NULL OR r.user_id = $2)
                   AND ($3 IS NULL OR r.session_id = $3)) x
         ORDER BY 1, 2, 3
    LOOP
        PERFORM 1 FROM adk.sessions ss
         WHERE ss.app_name = s.app_name AND ss.user_id = s.user_id AND ss.id = s.session_id
           FOR UPDATE;
        PERFORM adk._refresh_run_states(s.app_name, s.user_id, s.session_id, NULL);
        n := n + (SELECT count(*) FROM adk.run_states r
                   WHERE r.app_name = s.app_name AND r.user_id = s.user_id
                     AND r.session_id = s.session_id);
    END LOOP;
    RETURN n;
END
$$;

DROP FUNCTION adk._invocation_end(text, text, integer, bigint, bigint, text, text, double precision);
CREATE FUNCTION adk._invocation_end(p_invocation text, p_status text, p_model_calls integer,
                                    p_input_tokens bigint, p_output_tokens bigint,
                                    p_error_code text, p_error_message text,
                                    p_store_ms double precision,
                                    p_paths text[], p_agents text[], p_times timestamptz[],
                                    p_errors text[], p_input jsonb, p_fresh boolean)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_paths IS NULL THEN
        UPDATE adk.invocations i
           SET status = p_status, ended_at = clock_timestamp(),
               model_calls = i.model_calls + p_model_calls,
               input_tokens = i.input_tokens + p_input_tokens,
               output_tokens = i.output_tokens + p_output_tokens,
               error_code = p_error_code, error_message = p_error_message,
               store_ms = i.store_ms + p_store_ms
         WHERE i.invocation_id = p_invocation;
        UPDATE adk.jobs j
           SET status = p_status,
               finished_at = CASE WHEN p_status = 'waiting' THEN NULL ELSE clock_timestamp() END,
               error = CASE WHEN p_status = 'failed' THEN concat_ws(': ', p_error_code, p_error_message) END
         WHERE j.invocation_id = p_invocation AND j.status = 'waiting';
    ELSIF p_fresh AND cardinality(p_paths) = 1 THEN
        -- one statement: the invocation's row, and its node's new row
        -- (a plain turn: no array to unnest)
        WITH i AS (
            UPDATE adk.invocations i
               SET status = p_status, ended_at = clock_timestamp(),
                   model_calls = i.model_calls + p_model_calls,
                   input_tokens = i.input_tokens + p_input_tokens,
                   output_tokens = i.output_tokens + p_output_tokens,
                   error_code = p_error_code, error_message = p_error_message,
                   store_ms = i.store_ms + p_store_ms
             WHERE i.invocation_id = p_invocation
            RETURNING i.app_name, i.user_id, i.session_id
        )
        INSERT INTO adk.run_states
               (app_name, user_id, session_id, invocation_id, node_path, status, agent, updated_at, input)
        SELECT i.app_name, i.user_id, i.session_id, p_invocation, p_paths[1],
               CASE WHEN p_errors[1] = 'CANCELLED' THEN 'cancelled'
                    WHEN p_errors[1] <> '' THEN 'failed'
                    WHEN strpos(p_paths[1], '/') > 0 THEN 'running'
                    ELSE 'completed' END,
               p_agents[1], p_times[1], CASE WHEN strpos(p_paths[1], '@') = 0 THEN p_input END
          FROM i;
    ELSIF p_fresh THEN
        WITH i AS (
            UPDATE adk.invocations i
               SET status = p_status, ended_at = clock_timestamp(),
                   model_calls = i.model_calls + p_model_calls,
                   input_tokens = i.input_tokens + p_input_tokens,
                   output_tokens = i.output_tokens + p_output_tokens,
                   error_code = p_error_code, error_message = p_error_message,
                   store_ms = i.store_ms + p_store_ms
             WHERE i.invocation_id = p_invocation
            RETURNING i.app_name, i.user_id, i.session_id
        )
        INSERT INTO adk.run_states
               (app_name, user_id, session_id, invocation_id, node_path, status, agent, updated_at, input)
        SELECT i.app_name, i.user_id, i.session_id, p_invocation, x.path,
               CASE WHEN x.err = 'CANCELLED' THEN 'cancelled'
                    WHEN x.err <> '' THEN 'failed'
                    WHEN strpos(x.path, '/') > 0 THEN 'running'
                    ELSE 'completed' END,
               x.agent, x.ts, CASE WHEN strpos(x.path, '@') = 0 THEN p_input END
          FROM i CROSS JOIN unnest(p_paths, p_agents, p_times, p_errors) AS x(path, agent, ts, err);
    ELSE
        WITH i AS (
            UPDATE adk.invocations i
               SET status = p_status, ended_at = clock_timestamp(),
                   model_calls = i.model_calls + p_model_calls,
                   input_tokens = i.input_tokens + p_input_tokens,
                   output_tokens = i.output_tokens + p_output_tokens,
                   error_code = p_error_code, error_message = p_error_message,
                   store_ms = i.store_ms + p_store_ms
             WHERE i.invocation_id = p_invocation
            RETURNING i.app_name, i.user_id, i.session_id
        )
        INSERT INTO adk.run_states AS r
               (app_name, user_id, session_id, invocation_id, node_path, status, agent, updated_at, input)
        SELECT i.app_name, i.user_id, i.session_id, p_invocation, x.path,
               CASE WHEN x.err = 'CANCELLED' THEN 'cancelled'
                    WHEN x.err <> '' THEN 'failed'
                    WHEN strpos(x.path, '/') > 0 THEN 'running'
                    ELSE 'completed' END,
               x.agent, x.ts, CASE WHEN strpos(x.path, '@') = 0 THEN p_input END
          FROM i CROSS JOIN unnest(p_paths, p_agents, p_times, p_errors) AS x(path, agent, ts, err)
        ON CONFLICT (app_name, user_id, session_id, invocation_id, node_path) DO UPDATE
           SET status = CASE WHEN r.status = 'waiting' THEN r.status
                             WHEN r.output IS NOT NULL
                                  OR (r.status = 'completed' AND strpos(r.node_path, '/') > 0)
                             THEN 'completed'
                             ELSE EXCLUDED.status END,
               agent = EXCLUDED.agent, updated_at = EXCLUDED.updated_at,
               input = coalesce(r.input, EXCLUDED.input);
    END IF;
END
$$;
REVOKE ALL ON FUNCTION adk._invocation_end(text, text, integer, bigint, bigint, text, text, double precision, text[], text[], timestamp with time zone[], text[], jsonb, boolean) FROM PUBLIC;

CREATE OR REPLACE FUNCTION adk._job_failed(job_id bigint, new_status text, failure text, code text)
RETURNS void
LANGUAGE sql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
    WITH j AS (
        UPDATE adk.jobs
           SET status = new_status, error = failure,
               finished_at = CASE WHEN new_status OPERATOR(pg_catalog.=) 'queued' THEN NULL
                                  ELSE pg_catalog.clock_timestamp() END,
               worker_pid = CASE WHEN new_status OPERATOR(pg_catalog.=) 'queued' THEN NULL
                                 ELSE worker_pid END
         WHERE id OPERATOR(pg_catalog.=) job_id
        RETURNING invocation_id, app_name, user_id, session_id),
    -- the run's nodes still running end with it, unless it is queued
    -- again (its retry starts them again: 62_hitl.sql, attempt)
    r AS (
        UPDATE adk.run_states s
           SET status = CASE WHEN new_status OPERATOR(pg_catalog.=) 'cancelled' THEN 'cancelled'
                             ELSE 'failed' END
          FROM j
         WHERE new_status OPERATOR(pg_catalog.<>) 'queued'
           AND s.app_name OPERATOR(pg_catalog.=) j.app_name
           AND s.user_id OPERATOR(pg_catalog.=) j.user_id
           AND s.session_id OPERATOR(pg_catalog.=) j.session_id
           AND s.invocation_id OPERATOR(pg_catalog.=) j.invocation_id
           AND s.status OPERATOR(pg_catalog.=) 'running')
    UPDATE adk.invocations i
       SET status = CASE WHEN new_status OPERATOR(pg_catalog.=) 'cancelled' THEN 'cancelled'
                         ELSE 'failed' END,
           ended_at = pg_catalog.clock_timestamp(),
           error_code = code, error_message = failure
      FROM j
     WHERE i.invocation_id OPERATOR(pg_catalog.=) j.invocation_id
       AND i.status OPERATOR(pg_catalog.=) 'running'
$$;
COMMENT ON FUNCTION adk._job_failed(bigint, text, text, text) IS
    'A job worker''s record of a run that raised or was cancelled: the job queued again or ended, its running invocation and its running nodes'' run_states rows failed or cancelled.';


-- Running graph workflows of function and join nodes (src/runner/workflow.c):
-- a node's start writes its input, which a refresh keeps; the scheduler
-- reads the graph, and a resume where the run stands, through these.
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
                x.interrupt_ids, x.answered_ids, x.agent, x.updated_at, x.input, x.output, x.attempt)
        ON CONFLICT (app_name, user_id, session_id, invocation_id, node_path) DO UPDATE
           SET status = EXCLUDED.status, interrupt_ids = EXCLUDED.interrupt_ids,
               answered_ids = EXCLUDED.answered_ids, agent = EXCLUDED.agent,
               updated_at = EXCLUDED.updated_at, input = coalesce(EXCLUDED.input, r.input),
               output = EXCLUDED.output
         WHERE (r.status, r.interrupt_ids, r.answered_ids, r.agent, r.updated_at, r.input, r.output)
               IS DISTINCT FROM
               (EXCLUDED.status, EXCLUDED.interrupt_ids, EXCLUDED.answered_ids, EXCLUDED.agent,
                EXCLUDED.updated_at, coalesce(EXCLUDED.input, r.input), EXCLUDED.output);
    END LOOP;
    RETURN coalesce((SELECT sum(cardinality(k.interrupt_ids)) FROM unnest(d) k), 0)::integer;
END
$$;

CREATE OR REPLACE FUNCTION adk._node_start(p_app text, p_user text, p_session text, p_invocation text,
                                p_path text, p_agent text, p_input jsonb, p_retry boolean)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    INSERT INTO adk.run_states AS r
           (app_name, user_id, session_id, invocation_id, node_path, status, agent, input)
    VALUES (p_app, p_user, p_session, p_invocation, p_path, 'running', p_agent,
            CASE WHEN p_input IS NOT NULL OR strpos(p_path, '@') = 0 THEN p_input
                 ELSE adk._node_input(p_app, p_user, p_session, p_invocation, p_path) END)
    ON CONFLICT (app_name, user_id, session_id, invocation_id, node_path) DO UPDATE
       SET status = 'running', attempt = r.attempt + 1, updated_at = EXCLUDED.updated_at
     WHERE p_retry;
END
$$;

-- ---------------------------------------------------------------------
-- Running a workflow (src/runner/workflow.c, docs/workflows.md "What
-- runs"): the runner reads the graph through these, as the owner.
-- ---------------------------------------------------------------------

-- What the runner does not run yet in a workflow: NULL when every node is
-- a function or a join without the settings those need (retry, timeout,
-- wait_for_output, schemas); else the first such node, as a sentence.
CREATE FUNCTION adk._workflow_refusal(wf text) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT format('node "%s" of workflow "%s" %s', n.name, wf,
                  CASE WHEN n.kind NOT IN ('function', 'join') THEN format('is of kind %s', n.kind)
                       WHEN n.retry IS NOT NULL THEN 'has a retry'
                       WHEN n.timeout IS NOT NULL THEN 'has a timeout'
                       WHEN n.wait_for_output THEN 'has wait_for_output'
                       ELSE 'has an input or output schema' END)
      FROM adk.workflow_nodes n
     WHERE n.workflow = wf
       AND (n.kind NOT IN ('function', 'join') OR n.retry IS NOT NULL OR n.timeout IS NOT NULL
            OR n.wait_for_output OR n.input_schema IS NOT NULL OR n.output_schema IS NOT NULL)
     ORDER BY n.name COLLATE "C"
     LIMIT 1
$$;

-- The nodes of a workflow as the scheduler needs them: kind, a function
-- node's function as a qualified name to call, each node's predecessors
-- (what a join waits for), rerun_on_resume, in name order.
CREATE FUNCTION adk._workflow_plan(wf text)
RETURNS TABLE (name text, kind text, call text, predecessors text[], rerun_on_resume boolean)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT n.name, n.kind,
           (SELECT format('%I.%I', ns.nspname, p.proname)
              FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace ns ON ns.oid = p.pronamespace
             WHERE p.oid = n.function::oid),
           ARRAY(SELECT e.from_node FROM adk.workflow_edges e
                  WHERE e.workflow = wf AND e.to_node = n.name
                  ORDER BY e.from_node COLLATE "C"),
           n.rerun_on_resume
      FROM adk.workflow_nodes n
     WHERE n.workflow = wf
     ORDER BY n.name COLLATE "C"
$$;

-- ADK-Go's findSuccessors (workflow/scheduler.go) for a completed
-- activation of node (or START) that gave routes: an unconditional edge
-- always fires and does not keep the default from firing; a routed edge
-- fires when one of its values is among routes; the default edge fires
-- when no routed edge did; each target once.  No rows: an all-routed dead
-- end, which stops that path silently.  In target name order.
CREATE FUNCTION adk._workflow_successors(wf text, node text, routes text[])
RETURNS TABLE (to_node text)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    WITH e AS (
        SELECT e.to_node, e.route, e.is_default,
               coalesce(e.route && routes, false) AS matched
          FROM adk.workflow_edges e
         WHERE e.workflow = wf AND e.from_node = node
    )
    SELECT DISTINCT e.to_node COLLATE "C"
      FROM e
     WHERE (e.route IS NULL AND NOT e.is_default)
        OR e.matched
        OR (e.is_default AND NOT EXISTS (SELECT 1 FROM e m WHERE m.matched))
     ORDER BY 1
$$;

REVOKE ALL ON FUNCTION adk._workflow_refusal(text), adk._workflow_plan(text),
                       adk._workflow_successors(text, text, text[])
   FROM PUBLIC;

-- Where a paused run of a workflow stands (src/runner/workflow.c, on
-- resume): each node activation's row of the invocation directly under
-- p_base (the workflow's node path), with its node and activation number,
-- status, input and output, the branch and graph hash of its latest event
-- (a request for input records the hash it paused under), and the answers
-- the user gave to its interrupts, {"<interrupt id>": response}, with the
-- latest one.  Read from the rows _resume_interrupts locked and the
-- events of that invocation only.
CREATE FUNCTION adk._workflow_resume_rows(p_app text, p_user text, p_session text,
                                          p_invocation text, p_base text)
RETURNS TABLE (node text, run_no integer, status text, input jsonb, output jsonb,
               branch text, graph_hash text, answers jsonb, last_answer jsonb)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT m[1], m[2]::integer, r.status, r.input, r.output, ev.d ->> 'branch',
           (SELECT e.event_data #>> '{custom_metadata,adk_graph_hash}' FROM adk.events e
             WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
               AND e.invocation_id = p_invocation
               AND e.event_data #>> '{node_info,path}' = r.node_path
               AND e.event_data #> '{custom_metadata,adk_graph_hash}' IS NOT NULL
             ORDER BY e.seq DESC LIMIT 1),
           coalesce(a.answers, '{}'), a.last_answer
      FROM adk.run_states r
     CROSS JOIN LATERAL regexp_match(substr(r.node_path, length(p_base) + 2),
                                     '^([A-Za-z_][A-Za-z0-9_-]*)@([0-9]+)$') m
      LEFT JOIN LATERAL (SELECT e.event_data AS d FROM adk.events e
                          WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
                            AND e.invocation_id = p_invocation
                            AND e.event_data #>> '{node_info,path}' = r.node_path
                          ORDER BY e.seq DESC LIMIT 1) ev ON true
      LEFT JOIN LATERAL (SELECT jsonb_object_agg(x.id, x.response) AS answers,
                                (array_agg(x.response ORDER BY x.seq DESC))[1] AS last_answer
                           FROM (SELECT DISTINCT ON (p #>> '{function_response,id}')
                                        p #>> '{function_response,id}' AS id,
                                        coalesce(p #> '{function_response,response}', '{}') AS response, e.seq
                                   FROM adk.events e
                                  CROSS JOIN LATERAL adk._parts(e.event_data -> 'content') p
                                  WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
                                    AND e.event_data ->> 'author' = 'user'
                                    AND e.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
                                    AND p #>> '{function_response,id}' = ANY (r.answered_ids)
                                  ORDER BY p #>> '{function_response,id}', e.seq DESC) x) a ON true
     WHERE r.app_name = p_app AND r.user_id = p_user AND r.session_id = p_session
       AND r.invocation_id = p_invocation
       AND starts_with(r.node_path, p_base || '/')
       AND m IS NOT NULL
     ORDER BY m[1], m[2]::integer;
END
$$;

REVOKE ALL ON FUNCTION adk._workflow_resume_rows(text, text, text, text, text) FROM PUBLIC;

-- adk_wait's and adk_drop_trigger's statements as functions
-- (70_workers.sql), granted as 90_privileges.sql grants them
-- The stored events of one invocation, in order: adk_wait's rows
-- (src/worker/submit.c).  Run as the caller, so the tenancy policies
-- decide what it sees.
CREATE FUNCTION adk._wait_events(p_app text, p_user text, p_session text,
                                       p_invocation text)
RETURNS SETOF adk.run_event
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT e.id::text, e.app_name::text, e.user_id::text, e.session_id::text,
           e.invocation_id::text, e."timestamp", e.event_data, e.seq, false
      FROM adk.events e
     WHERE e.app_name OPERATOR(pg_catalog.=) p_app
       AND e.user_id OPERATOR(pg_catalog.=) p_user
       AND e.session_id OPERATOR(pg_catalog.=) p_session
       AND e.invocation_id OPERATOR(pg_catalog.=) p_invocation
     ORDER BY e.seq
$$;

-- The triggers adk_create_trigger made on a table (all, or the one named),
-- by name: adk_drop_trigger's list (src/worker/trigger.c).
CREATE FUNCTION adk._job_triggers(p_tbl oid, p_name text)
RETURNS SETOF text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT t.tgname::text
      FROM pg_catalog.pg_trigger t
      JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) t.tgfoid
      JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
     WHERE t.tgrelid OPERATOR(pg_catalog.=) p_tbl AND NOT t.tgisinternal
       AND n.nspname OPERATOR(pg_catalog.=) 'adk'
       AND p.proname OPERATOR(pg_catalog.=) '_job_trigger'
       AND (p_name IS NULL OR t.tgname OPERATOR(pg_catalog.=) p_name)
     ORDER BY 1
$$;

REVOKE ALL ON FUNCTION adk._wait_events(text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION adk._wait_events(text, text, text, text) TO adk_user;
REVOKE ALL ON FUNCTION adk._job_triggers(oid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION adk._job_triggers(oid, text) TO adk_user;

-- Tool nodes run (docs/workflows.md "What runs"): the refusal lets them
-- through but for tools that require confirmation or are long-running;
-- the plan names a tool node's tool.
CREATE OR REPLACE FUNCTION adk._workflow_refusal(wf text) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT format('node "%s" of workflow "%s" %s', n.name, wf,
                  CASE WHEN n.kind NOT IN ('function', 'join', 'tool') THEN format('is of kind %s', n.kind)
                       WHEN n.retry IS NOT NULL THEN 'has a retry'
                       WHEN n.timeout IS NOT NULL THEN 'has a timeout'
                       WHEN n.wait_for_output THEN 'has wait_for_output'
                       WHEN n.input_schema IS NOT NULL OR n.output_schema IS NOT NULL THEN 'has an input or output schema'
                       ELSE format('runs tool "%s" (long-running or requiring confirmation)', n.tool) END)
      FROM adk.workflow_nodes n
     WHERE n.workflow = wf
       AND (n.kind NOT IN ('function', 'join', 'tool') OR n.retry IS NOT NULL OR n.timeout IS NOT NULL
            OR n.wait_for_output OR n.input_schema IS NOT NULL OR n.output_schema IS NOT NULL
            OR EXISTS (SELECT 1 FROM adk.tools t
                        WHERE t.name = n.tool AND (t.require_confirmation OR t.long_running)))
     ORDER BY n.name COLLATE "C"
     LIMIT 1
$$;

CREATE OR REPLACE FUNCTION adk._workflow_plan(wf text)
RETURNS TABLE (name text, kind text, call text, predecessors text[], rerun_on_resume boolean)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT n.name, n.kind,
           coalesce((SELECT format('%I.%I', ns.nspname, p.proname)
                       FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace ns ON ns.oid = p.pronamespace
                      WHERE p.oid = n.function::oid), n.tool),
           ARRAY(SELECT e.from_node FROM adk.workflow_edges e
                  WHERE e.workflow = wf AND e.to_node = n.name
                  ORDER BY e.from_node COLLATE "C"),
           n.rerun_on_resume
      FROM adk.workflow_nodes n
     WHERE n.workflow = wf
     ORDER BY n.name COLLATE "C"
$$;

-- A resume reads the invocation's events once, not once per node row
-- (test/bench/workflow.sh).
CREATE OR REPLACE FUNCTION adk._workflow_resume_rows(p_app text, p_user text, p_session text,
                                          p_invocation text, p_base text)
RETURNS TABLE (node text, run_no integer, status text, input jsonb, output jsonb,
               branch text, graph_hash text, answers jsonb, last_answer jsonb)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    WITH ev AS MATERIALIZED (
        SELECT e.seq, e.event_data #>> '{node_info,path}' AS path, e.event_data ->> 'branch' AS branch,
               e.event_data #>> '{custom_metadata,adk_graph_hash}' AS hash
          FROM adk.events e
         WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
           AND e.invocation_id = p_invocation
           AND starts_with(e.event_data #>> '{node_info,path}', p_base || '/')),
    last_ev AS (SELECT DISTINCT ON (ev.path) ev.path, ev.branch FROM ev ORDER BY ev.path, ev.seq DESC),
    last_hash AS (SELECT DISTINCT ON (ev.path) ev.path, ev.hash FROM ev
                   WHERE ev.hash IS NOT NULL ORDER BY ev.path, ev.seq DESC)
    SELECT m[1], m[2]::integer, r.status, r.input, r.output, le.branch, lh.hash,
           coalesce(a.answers, '{}'), a.last_answer
      FROM adk.run_states r
     CROSS JOIN LATERAL regexp_match(substr(r.node_path, length(p_base) + 2),
                                     '^([A-Za-z_][A-Za-z0-9_-]*)@([0-9]+)$') m
      LEFT JOIN last_ev le ON le.path = r.node_path
      LEFT JOIN last_hash lh ON lh.path = r.node_path
      LEFT JOIN LATERAL (SELECT jsonb_object_agg(x.id, x.response) AS answers,
                                (array_agg(x.response ORDER BY x.seq DESC))[1] AS last_answer
                           FROM (SELECT DISTINCT ON (p #>> '{function_response,id}')
                                        p #>> '{function_response,id}' AS id,
                                        coalesce(p #> '{function_response,response}', '{}') AS response, e.seq
                                   FROM adk.events e
                                  CROSS JOIN LATERAL adk._parts(e.event_data -> 'content') p
                                  WHERE cardinality(r.answered_ids) > 0
                                    AND e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
                                    AND e.event_data ->> 'author' = 'user'
                                    AND e.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
                                    AND p #>> '{function_response,id}' = ANY (r.answered_ids)
                                  ORDER BY p #>> '{function_response,id}', e.seq DESC) x) a ON true
     WHERE r.app_name = p_app AND r.user_id = p_user AND r.session_id = p_session
       AND r.invocation_id = p_invocation
       AND starts_with(r.node_path, p_base || '/')
       AND m IS NOT NULL
     ORDER BY m[1], m[2]::integer;
END
$$;
