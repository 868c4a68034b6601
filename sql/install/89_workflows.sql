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
-- Running a workflow of function, tool, join, agent, nested workflow and
-- parallel worker nodes: src/runner/workflow.c,
-- with adk._workflow_plan and adk._workflow_successors below; a tree with
-- a workflow of other nodes is refused (adk._workflow_refusal, called by
-- src/runner/defs.c).  adk.run_states rows
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
COMMENT ON COLUMN adk.workflow_nodes.wait_for_output IS 'an activation that ends without output does not complete: its successors do not run (ADK-Go WaitForOutput)';
COMMENT ON COLUMN adk.workflow_nodes.retry IS 'NULL = no retries; else ADK-Go''s RetryConfig, completed with its defaults: max_attempts 5, initial_delay 1 (seconds), max_delay 60, backoff_factor 2, jitter 1';
COMMENT ON COLUMN adk.workflow_nodes.timeout IS 'bound on one attempt of a function or tool node: its call is cancelled and the attempt fails (retried when the node has a retry); NULL = none';
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
       r.input, r.output, r.updated_at, r.triggered_by, r.branch, r.graph_hash
  FROM adk.run_states r
 CROSS JOIN LATERAL regexp_match(r.node_path, '(?:^|/)([A-Za-z_][A-Za-z0-9_]*)/([A-Za-z_][A-Za-z0-9_-]*)@([^/@]+)$') m
 CROSS JOIN LATERAL (SELECT m[1] AS workflow, m[2] AS node, m[3] AS run_id) p
 WHERE m IS NOT NULL
   AND EXISTS (SELECT 1 FROM adk.workflow_nodes n WHERE n.workflow = p.workflow AND n.name = p.node);
COMMENT ON VIEW adk.workflow_runs IS
    'Node activations of graph workflows (adk.run_states rows with node_path <workflow>/<node>@<run id>): status, the interrupt ids a waiting node waits on, the node (or START) that triggered it, its branch and the graph hash it ran under.';

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

-- ---------------------------------------------------------------------
-- Running a workflow (src/runner/workflow.c, docs/workflows.md "What
-- runs"): the runner reads the graph through these, as the owner.
-- ---------------------------------------------------------------------

-- What the runner does not run yet in a workflow: NULL when every node has
-- only settings its kind honours (a join makes no call a retry or a
-- timeout could act on; every other kind takes every setting:
-- docs/workflows.md "Node settings") and calls no tool that needs
-- confirmation -- ADK-Go's tool node calls its tool with no confirmation
-- to give, which fails it; a long-running tool runs, its first response
-- the output --; else the first other node, as a sentence.
CREATE FUNCTION adk._workflow_refusal(wf text) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT format('node "%s" of workflow "%s" %s', n.name, wf,
                  CASE WHEN n.kind = 'join' AND n.retry IS NOT NULL THEN 'is a join with a retry'
                       WHEN n.kind = 'join' AND n.timeout IS NOT NULL THEN 'is a join with a timeout'
                       ELSE format('runs tool "%s", a tool requiring confirmation', n.tool) END)
      FROM adk.workflow_nodes n
     WHERE n.workflow = wf
       AND ((n.kind = 'join' AND (n.retry IS NOT NULL OR n.timeout IS NOT NULL))
            OR EXISTS (SELECT 1 FROM adk.tools t
                        WHERE t.name = n.tool AND t.require_confirmation))
     ORDER BY n.name COLLATE "C"
     LIMIT 1
$$;

-- An agent node whose agent pauses for human input (a tool of its own
-- that is long-running or requires confirmation) holds its node -- an
-- item of a parallel worker its item -- and resumes its agent in its lane
-- (src/runner/workflow.c, docs/workflows.md "Human input").  Still
-- refused before anything is stored: such a tool on an agent below the
-- node's agent (a sub-agent, whose pause the lane does not resume yet).
-- NULL: no such node.
CREATE FUNCTION adk._workflow_pause_refusal(wf text) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT format('node "%s" of workflow "%s" is of kind agent and agent "%s", below its agent "%s", has tool "%s" (long-running or requiring confirmation)',
                  n.name, wf, a.name, n.agent, t.name)
      FROM adk.workflow_nodes n
     CROSS JOIN LATERAL adk._agent_tree(n.agent) a
      JOIN adk.agents g ON g.name = a.name
     CROSS JOIN LATERAL unnest(g.tools) WITH ORDINALITY AS u(tool, i)
      JOIN adk.tools t ON t.name = u.tool AND (t.long_running OR t.require_confirmation)
     WHERE n.workflow = wf AND n.kind = 'agent' AND a.depth > 0
     ORDER BY n.name COLLATE "C", a.depth, a.name COLLATE "C", u.i
     LIMIT 1
$$;

-- A workflow that runs as the sub-agent of parent, an agent that is not a
-- workflow (src/runner/defs.c, which knows the tree): a pause in it could
-- not pause the invocation (docs/workflows.md "Not run yet"), so an agent
-- node whose own agent has a tool that is long-running or requires
-- confirmation is refused before anything is stored.  NULL: no such node,
-- or no parent.
CREATE FUNCTION adk._workflow_pause_below_refusal(wf text, parent text) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT format('node "%s" of workflow "%s" is of kind agent and agent "%s" has tool "%s" (long-running or requiring confirmation), and the workflow runs below agent "%s", which is not a workflow',
                  n.name, wf, n.agent, t.name, parent)
      FROM adk.workflow_nodes n
      JOIN adk.agents g ON g.name = n.agent
     CROSS JOIN LATERAL unnest(g.tools) WITH ORDINALITY AS u(tool, i)
      JOIN adk.tools t ON t.name = u.tool AND (t.long_running OR t.require_confirmation)
     WHERE parent IS NOT NULL AND n.workflow = wf AND n.kind = 'agent'
     ORDER BY n.name COLLATE "C", u.i
     LIMIT 1
$$;

-- The nodes of a workflow as the scheduler needs them: kind, a function
-- node's function as a qualified name to call (a tool node's: its tool's
-- name in adk.tools; an agent node's: its agent; a nested workflow's: its
-- name; a parallel worker's: its worker node), each node's predecessors
-- (what a join waits for), rerun_on_resume, in name order.
CREATE FUNCTION adk._workflow_plan(wf text)
RETURNS TABLE (name text, kind text, call text, predecessors text[], rerun_on_resume boolean)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT n.name, n.kind,
           coalesce((SELECT format('%I.%I', ns.nspname, p.proname)
                       FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace ns ON ns.oid = p.pronamespace
                      WHERE p.oid = n.function::oid), n.tool, n.agent, n.sub_workflow, n.worker),
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
-- status, input and output, its branch, the graph hash it ran under and
-- what triggered it (columns of the row, written as it started), and the
-- answers the user gave to its interrupts, {"<interrupt id>": response},
-- with the latest one (a response {"result": value} is the value, as ADK
-- unwraps it).  Read from the rows _resume_interrupts locked, and the
-- answers only for rows that have some, so a resume does not cost more
-- per node the paused workflow has (test/bench/workflow.sh).
CREATE FUNCTION adk._workflow_resume_rows(p_app text, p_user text, p_session text,
                                          p_invocation text, p_base text)
RETURNS TABLE (node text, run_no integer, status text, input jsonb, output jsonb,
               branch text, graph_hash text, answers jsonb, last_answer jsonb,
               triggered_by text)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT m[1], m[2]::integer, r.status, r.input, r.output, r.branch, r.graph_hash,
           coalesce(a.answers, '{}'), a.last_answer, r.triggered_by
      FROM adk.run_states r
     CROSS JOIN LATERAL regexp_match(substr(r.node_path, length(p_base) + 2),
                                     '^([A-Za-z_][A-Za-z0-9_-]*)@([0-9]+)$') m
      LEFT JOIN LATERAL (SELECT jsonb_object_agg(x.id, x.response) AS answers,
                                (array_agg(x.response ORDER BY x.seq DESC))[1] AS last_answer
                           FROM (SELECT DISTINCT ON (p #>> '{function_response,id}')
                                        p #>> '{function_response,id}' AS id,
                                        -- {"result": value} is a bare value (ADK unwraps it)
                                        CASE WHEN jsonb_typeof(p #> '{function_response,response}') = 'object'
                                                  AND p #> '{function_response,response}' ? 'result'
                                                  AND (SELECT count(*) FROM jsonb_object_keys(p #> '{function_response,response}')) = 1
                                             THEN p #> '{function_response,response,result}'
                                             ELSE coalesce(p #> '{function_response,response}', '{}') END AS response,
                                        e.seq
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

REVOKE ALL ON FUNCTION adk._workflow_resume_rows(text, text, text, text, text) FROM PUBLIC;

-- The graph workflow agent nodes among the run_states rows at p_paths
-- whose calls a message answers (src/runner/hitl.c): the branches of
-- their lanes, which the rows hold (their latest event's, on the lane) --
-- a row of a graph node (a graph hash) whose calls an agent made, not a
-- function node's request for input.  The user event of the answers goes
-- on that branch, where the agent sees it; one row per branch.
CREATE FUNCTION adk._answered_agent_nodes(p_app text, p_user text, p_session text,
                                          p_invocation text, p_paths text[])
RETURNS TABLE (branch text)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT DISTINCT r.branch
      FROM adk.run_states r
      JOIN adk.agents a ON a.name = r.agent AND a.kind <> 'workflow'
     WHERE r.app_name = p_app AND r.user_id = p_user AND r.session_id = p_session
       AND r.invocation_id = p_invocation
       AND r.node_path = ANY (p_paths)
       AND r.graph_hash IS NOT NULL
$$;

REVOKE ALL ON FUNCTION adk._answered_agent_nodes(text, text, text, text, text[]) FROM PUBLIC;

-- The settings of a workflow's nodes that act on their activations
-- (src/runner/workflow_node.c, docs/workflows.md "Node settings"): retry
-- (completed with ADK-Go's defaults when the node was written), timeout in
-- whole milliseconds (at least 1), input and output schemas,
-- wait_for_output.  Only the nodes that have any, in name order.
CREATE FUNCTION adk._workflow_node_settings(wf text)
RETURNS TABLE (name text, retry jsonb, timeout_ms integer, input_schema jsonb,
               output_schema jsonb, wait_for_output boolean)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT n.name, n.retry,
           greatest(1, least(ceil(extract(epoch FROM n.timeout) * 1000), 2147483647))::integer,
           n.input_schema, n.output_schema, n.wait_for_output
      FROM adk.workflow_nodes n
     WHERE n.workflow = wf
       AND (n.retry IS NOT NULL OR n.timeout IS NOT NULL OR n.input_schema IS NOT NULL
            OR n.output_schema IS NOT NULL OR n.wait_for_output)
     ORDER BY n.name COLLATE "C"
$$;

-- A node activation's retry starts another attempt (workflow_node.c): its
-- adk.run_states row counts it.
CREATE FUNCTION adk._workflow_node_attempt(p_app text, p_user text, p_session text,
                                           p_invocation text, p_path text)
RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    UPDATE adk.run_states r SET attempt = r.attempt + 1
     WHERE r.app_name = p_app AND r.user_id = p_user AND r.session_id = p_session
       AND r.invocation_id = p_invocation AND r.node_path = p_path
$$;

REVOKE ALL ON FUNCTION adk._workflow_node_settings(text),
                       adk._workflow_node_attempt(text, text, text, text, text)
   FROM PUBLIC;

-- A graph workflow's invocation failed (src/runner/workflow.c,
-- docs/workflows.md "Statuses"): its node activations still running, or
-- waiting for human input, below p_base (the outermost workflow's node
-- path) that no error event of their own ended, each with what its stop
-- event carries -- its branch, what triggered it, its graph hash.
-- failed: it fails with the node that failed -- a nested workflow node the
-- failure is below, the parallel worker of a failed item (an item runs on
-- the sub-branch "<worker>@<k>" of its worker's branch), and so on up; the
-- others the failure stops (ADK-Go cancels them), a waiting node's request
-- with it.
CREATE FUNCTION adk._workflow_stopped(p_app text, p_user text, p_session text,
                                      p_invocation text, p_base text)
RETURNS TABLE (node_path text, branch text, triggered_by text, graph_hash text,
               failed boolean)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    WITH RECURSIVE errors AS (
        SELECT DISTINCT adk._node_path(e.event_data) AS path
          FROM adk.events e
         WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
           AND e.invocation_id = p_invocation
           AND e.event_data ->> 'error_code' IS NOT NULL
           AND e.event_data ->> 'author' <> 'user'
           AND starts_with(adk._node_path(e.event_data), p_base || '/')
    ), rows AS (
        SELECT r.node_path, r.status, r.branch, r.triggered_by, r.graph_hash,
               substring(r.node_path from '^(.*)/[^/]*$') AS dir,
               substring(r.node_path from '/([^/@]*)@[0-9]+$') AS node
          FROM adk.run_states r
         WHERE r.app_name = p_app AND r.user_id = p_user AND r.session_id = p_session
           AND r.invocation_id = p_invocation
           AND starts_with(r.node_path, p_base || '/')
    ), live AS (
        SELECT x.*, EXISTS (SELECT 1 FROM adk.workflow_nodes n
                             WHERE n.workflow = substring(x.dir from '[^/]*$') AND n.name = x.node
                               AND n.kind = 'parallel_worker') AS worker
          FROM rows x
         WHERE x.status IN ('running', 'waiting') AND x.graph_hash IS NOT NULL
           AND x.node_path NOT IN (SELECT errors.path FROM errors)
    ), bad AS (
        SELECT errors.path, x.dir, x.branch, x.triggered_by
          FROM errors LEFT JOIN rows x ON x.node_path = errors.path
        UNION
        SELECT l.node_path, l.dir, l.branch, l.triggered_by
          FROM live l JOIN bad b
            ON starts_with(b.path, l.node_path || '/')
            OR (l.worker AND b.dir = l.dir AND b.triggered_by = l.node
                AND b.branch = concat_ws('.', l.branch, substring(b.branch from '[^.]*$')))
    )
    SELECT l.node_path, l.branch, l.triggered_by, l.graph_hash,
           l.node_path IN (SELECT bad.path FROM bad)
      FROM live l
     ORDER BY 5 DESC, l.node_path COLLATE "C"
$$;

REVOKE ALL ON FUNCTION adk._workflow_stopped(text, text, text, text, text) FROM PUBLIC;
