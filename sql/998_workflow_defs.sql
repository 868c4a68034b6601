-- Graph workflow definitions (docs/workflows.md): tables, adk_define_workflow,
-- the graph rules checked at commit -- ADK-Go's graph-validation cases
-- (workflow/validation_test.go, workflow/validation_taskmode_test.go), one
-- by one, named as there -- the graph hash, a workflow as an app's root,
-- and who may define.
CREATE FUNCTION wf_step(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT input $$;
-- Dummy nodes as ADK-Go's tests use them: function nodes, and a join for
-- each name starting with J.
CREATE FUNCTION wf_nodes(VARIADIC names text[]) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_agg(CASE WHEN n LIKE 'J%' THEN jsonb_build_object('name', n, 'kind', 'join')
                          ELSE jsonb_build_object('name', n, 'function', 'public.wf_step(jsonb,jsonb)') END)
      FROM unnest(names) n $$;
-- Define a workflow, check it as a commit would (SET CONSTRAINTS ALL
-- IMMEDIATE runs the deferred checks), and undo it: 'ok' or the error.
CREATE FUNCTION wf_try(nodes jsonb, edges jsonb, wf text DEFAULT 'wf_t') RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    st text; msg text; det text; hnt text;
BEGIN
    PERFORM adk_define_workflow(wf, nodes, edges);
    SET CONSTRAINTS ALL IMMEDIATE;
    RAISE EXCEPTION 'ok' USING ERRCODE = 'WF000';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT,
                            det = PG_EXCEPTION_DETAIL, hnt = PG_EXCEPTION_HINT;
    IF st = 'WF000' THEN
        RETURN 'ok';
    END IF;
    RETURN st || ': ' || msg
        || CASE WHEN det <> '' THEN E'\nDETAIL: ' || det ELSE '' END
        || CASE WHEN hnt <> '' THEN E'\nHINT: ' || hnt ELSE '' END;
END
$$;

-- TestUniqueNames
-- "unique names"
SELECT wf_try(wf_nodes('A', 'B', 'C'),
              '[{"from": "START", "to": "A"}, {"from": "A", "to": "B"}, {"from": "B", "to": "C"}]');
-- "duplicate node names in From" / "duplicate node names in To": here a
-- second node of the same name, in a list or by a second INSERT
SELECT wf_try(wf_nodes('A', 'A', 'C'),
              '[{"from": "START", "to": "A"}, {"from": "A", "to": "C"}]');
BEGIN;
SELECT adk_define_workflow('wf_dup', wf_nodes('A'), '[{"from": "START", "to": "A"}]');
SELECT expect_error($$INSERT INTO adk.workflow_nodes (workflow, name, kind) VALUES ('wf_dup', 'A', 'join')$$);
ROLLBACK;

-- TestStartNodePresent
-- "with start node"
SELECT wf_try(wf_nodes('A', 'B'), '[{"from": "START", "to": "A"}, {"from": "A", "to": "B"}]');
-- "no start node"
SELECT wf_try(wf_nodes('A', 'B'), '[{"from": "A", "to": "B"}]');

-- TestStartNodeNoIncomingEdges
-- "start node with no incoming edges"
SELECT wf_try(wf_nodes('A', 'B'), '[{"from": "START", "to": "A"}, {"from": "A", "to": "B"}]');
-- "start node has incoming edges"
SELECT wf_try(wf_nodes('A', 'B'), '[{"from": "A", "to": "START"}, {"from": "START", "to": "B"}]');

-- TestDuplicateEdges (each graph also gets its START edge: the rules run
-- together here, as in workflow.New)
-- "no duplicate edges"
SELECT wf_try(wf_nodes('A', 'B'), '[{"from": "START", "to": "A"}, {"from": "A", "to": "B"}]');
-- "duplicate edges"
SELECT wf_try(wf_nodes('A', 'B'),
              '[{"from": "START", "to": "A"}, {"from": "A", "to": "B"}, {"from": "A", "to": "B"}]');
-- "duplicate edges with different routes"
SELECT wf_try(wf_nodes('A', 'B'),
              '[{"from": "START", "to": "A"}, {"from": "A", "to": "B", "route": "test1"}, {"from": "A", "to": "B", "route": "test2"}]');
-- "duplicate edges one without route"
SELECT wf_try(wf_nodes('A', 'B'),
              '[{"from": "START", "to": "A"}, {"from": "A", "to": "B", "route": "test1"}, {"from": "A", "to": "B"}]');
-- ... and the way to give one edge two routes (ADK-Go's MultiRoute)
SELECT wf_try(wf_nodes('A', 'B'),
              '[{"from": "START", "to": "A"}, {"from": "A", "to": "B", "route": ["test1", "test2"]}]');
-- "empty edges": workflow.New refuses an empty graph (no start node)
SELECT wf_try(wf_nodes('A'), '[]');

-- TestDefaultRoute
-- "single default route"
SELECT wf_try(wf_nodes('A', 'B'), '[{"from": "START", "to": "A"}, {"from": "A", "to": "B", "default": true}]');
-- "multiple default routes"
SELECT wf_try(wf_nodes('A', 'B', 'C'),
              '[{"from": "START", "to": "A"}, {"from": "A", "to": "B", "default": true}, {"from": "A", "to": "C", "default": true}]');

-- TestConnectivity
-- "all nodes connected"
SELECT wf_try(wf_nodes('A', 'B', 'C'),
              '[{"from": "START", "to": "A"}, {"from": "A", "to": "B"}, {"from": "B", "to": "C"}]');
-- "disconnected nodes"
SELECT wf_try(wf_nodes('A', 'B', 'C'), '[{"from": "START", "to": "A"}, {"from": "B", "to": "C"}]');
-- a node on no edge at all is unreachable too
SELECT wf_try(wf_nodes('A', 'B'), '[{"from": "START", "to": "A"}]');

-- TestValidateCycles
-- "no cycles"
SELECT wf_try(wf_nodes('A', 'B'), '[{"from": "START", "to": "A"}, {"from": "A", "to": "B"}]');
-- "no cycles diamond graph" (D a join: workflow.New also refuses a fan-in
-- into anything else, see TestValidateFanIn)
SELECT wf_try(wf_nodes('A', 'B', 'C', 'JD'),
              '[{"from": "START", "to": "A"}, {"from": "A", "to": "B"}, {"from": "A", "to": "C"},
                {"from": "B", "to": "JD"}, {"from": "C", "to": "JD"}]');
-- "only conditional cycle"
SELECT wf_try(wf_nodes('A', 'B'),
              '[{"from": "START", "to": "A"}, {"from": "A", "to": "B"}, {"from": "B", "to": "A", "route": "back"}]');
-- "both conditional and unconditional cycles"
SELECT wf_try(wf_nodes('A', 'B', 'C', 'D'),
              '[{"from": "START", "to": "A"}, {"from": "A", "to": "B"}, {"from": "B", "to": "A", "route": "back"},
                {"from": "START", "to": "C"}, {"from": "C", "to": "D"}, {"from": "D", "to": "C"}]');
-- "cycle with default route"
SELECT wf_try(wf_nodes('A', 'B'),
              '[{"from": "START", "to": "A"}, {"from": "A", "to": "B"}, {"from": "B", "to": "A", "default": true}]');
-- "empty graph": see "empty edges"

-- TestValidateFanIn, TestNew_NonJoinFanIn_Rejected
-- "non-Join diamond fan-in rejected"
SELECT wf_try(wf_nodes('A', 'B', 'C', 'D'),
              '[{"from": "START", "to": "A"}, {"from": "A", "to": "B"}, {"from": "A", "to": "C"},
                {"from": "B", "to": "D"}, {"from": "C", "to": "D"}]');
-- "JoinNode diamond fan-in allowed"
SELECT wf_try(wf_nodes('A', 'B', 'C', 'J'),
              '[{"from": "START", "to": "A"}, {"from": "A", "to": "B"}, {"from": "A", "to": "C"},
                {"from": "B", "to": "J"}, {"from": "C", "to": "J"}]');
-- "conditional loop-back not rejected"
SELECT wf_try(wf_nodes('A', 'B'),
              '[{"from": "START", "to": "A"}, {"from": "A", "to": "B"}, {"from": "B", "to": "A", "route": "retry"}]');
-- "conditional fan-in not rejected"
SELECT wf_try(wf_nodes('A', 'B', 'C', 'D'),
              '[{"from": "START", "to": "A"}, {"from": "A", "to": "B"}, {"from": "A", "to": "C"},
                {"from": "B", "to": "D", "route": "x"}, {"from": "C", "to": "D", "route": "y"}]');
-- a routed edge into a join: the join would wait for it forever (not
-- checked by ADK-Go; refused here)
SELECT wf_try(wf_nodes('A', 'B', 'C', 'J'),
              '[{"from": "START", "to": "A"}, {"from": "A", "to": "B"}, {"from": "A", "to": "C"},
                {"from": "B", "to": "J", "route": "x"}, {"from": "C", "to": "J"}]');
SELECT wf_try(wf_nodes('A', 'B', 'J'),
              '[{"from": "START", "to": "A"}, {"from": "A", "to": "B"}, {"from": "A", "to": "J", "default": true}, {"from": "B", "to": "J"}]');

-- TestValidateSubWorkflowNames
SELECT adk_define_workflow('wf_inner', wf_nodes('A'), '[{"from": "START", "to": "A"}]');
-- "no collision"
SELECT wf_try('[{"name": "nested_node", "workflow": "wf_inner"}]', '[{"from": "START", "to": "nested_node"}]', 'wf_outer');
-- "collision with sub-workflow name": a workflow running itself, directly
SELECT wf_try('[{"name": "nested_node", "workflow": "wf_inner"}]', '[{"from": "START", "to": "nested_node"}]', 'wf_inner');
-- ... or through another
BEGIN;
SELECT adk_define_workflow('wf_outer', '[{"name": "nested_node", "workflow": "wf_inner"}]',
                           '[{"from": "START", "to": "nested_node"}]');
SELECT wf_try('[{"name": "back", "workflow": "wf_outer"}]', '[{"from": "START", "to": "back"}]', 'wf_inner');
ROLLBACK;

-- TestValidateNoTaskModeGraphNodes
SELECT adk_define_agent('wf_doer', mode => 'task');
SELECT adk_define_agent('wf_chatter', mode => 'chat');
SELECT adk_define_agent('wf_responder', mode => 'single_turn');
SELECT adk_define_agent('wf_default');
SELECT adk_define_agent('wf_first', mode => 'single_turn');
SELECT adk_define_agent('wf_second', mode => 'single_turn');
-- "rejects task-mode agent as the only graph node"
SELECT wf_try('[{"agent": "wf_doer"}]', '[{"from": "START", "to": "wf_doer"}]');
-- "rejects task-mode agent deeper in the graph"
SELECT wf_try('[{"agent": "wf_chatter"}, {"agent": "wf_doer"}]',
              '[{"from": "START", "to": "wf_chatter"}, {"from": "wf_chatter", "to": "wf_doer"}]');
-- "accepts chat-mode agent as static node"
SELECT wf_try('[{"agent": "wf_chatter"}]', '[{"from": "START", "to": "wf_chatter"}]');
-- "accepts single_turn-mode agent as static node"
SELECT wf_try('[{"agent": "wf_responder"}]', '[{"from": "START", "to": "wf_responder"}]');
-- "accepts mode-unset (chat) agent as static node"
SELECT wf_try('[{"agent": "wf_default"}]', '[{"from": "START", "to": "wf_default"}]');

-- TestValidateChatModeWiring
-- "rejects chat-mode agent following a non-Start node"
SELECT wf_try('[{"agent": "wf_responder"}, {"agent": "wf_chatter"}]',
              '[{"from": "START", "to": "wf_responder"}, {"from": "wf_responder", "to": "wf_chatter"}]');
-- "rejects chat-mode agent with a Start edge plus a non-Start edge"
SELECT wf_try('[{"agent": "wf_responder"}, {"agent": "wf_chatter"}]',
              '[{"from": "START", "to": "wf_chatter"}, {"from": "START", "to": "wf_responder"},
                {"from": "wf_responder", "to": "wf_chatter", "route": "ask"}]');
-- "accepts chat-mode agent directly after Start"
SELECT wf_try('[{"agent": "wf_chatter"}]', '[{"from": "START", "to": "wf_chatter"}]');
-- "allows single_turn agent following a non-Start node"
SELECT wf_try('[{"agent": "wf_first"}, {"agent": "wf_second"}]',
              '[{"from": "START", "to": "wf_first"}, {"from": "wf_first", "to": "wf_second"}]');
-- mode unset is single_turn in a graph (ADK-Go's NewAgentNode): it may follow a node
SELECT wf_try('[{"agent": "wf_first"}, {"agent": "wf_default"}]',
              '[{"from": "START", "to": "wf_first"}, {"from": "wf_first", "to": "wf_default"}]');
-- an agent that becomes a task agent after it became a node: refused at commit
BEGIN;
SELECT adk_define_workflow('wf_modes', '[{"agent": "wf_responder"}]', '[{"from": "START", "to": "wf_responder"}]');
SET CONSTRAINTS ALL IMMEDIATE;
SELECT expect_error($$UPDATE adk.agents SET mode = 'task' WHERE name = 'wf_responder'; SET CONSTRAINTS ALL IMMEDIATE$$);
ROLLBACK;

-- TestStaticSchemaValidation
-- "same Go type -> success"
SELECT wf_try('[{"name": "A", "function": "public.wf_step(jsonb,jsonb)", "output_schema": {"type": "object", "properties": {"x": {"type": "integer"}}}},
                {"name": "B", "function": "public.wf_step(jsonb,jsonb)", "input_schema": {"type": "object", "properties": {"x": {"type": "integer"}}}}]',
              '[{"from": "START", "to": "A"}, {"from": "A", "to": "B"}]');
-- "different Go types -> error"
SELECT wf_try('[{"name": "A", "function": "public.wf_step(jsonb,jsonb)", "output_schema": {"type": "object", "properties": {"x": {"type": "integer"}}}},
                {"name": "B", "function": "public.wf_step(jsonb,jsonb)", "input_schema": {"type": "object", "properties": {"x": {"type": "string"}}}}]',
              '[{"from": "START", "to": "A"}, {"from": "A", "to": "B"}]');
-- "only one endpoint has schema -> success"
SELECT wf_try('[{"name": "A", "function": "public.wf_step(jsonb,jsonb)", "output_schema": {"type": "string"}},
                {"name": "B", "function": "public.wf_step(jsonb,jsonb)"}]',
              '[{"from": "START", "to": "A"}, {"from": "A", "to": "B"}]');
-- "differ only in PropertyOrder -> success"
SELECT wf_try('[{"name": "A", "function": "public.wf_step(jsonb,jsonb)", "output_schema": {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "string"}}}},
                {"name": "B", "function": "public.wf_step(jsonb,jsonb)", "input_schema": {"properties": {"y": {"type": "string"}, "x": {"type": "integer"}}, "type": "object"}}]',
              '[{"from": "START", "to": "A"}, {"from": "A", "to": "B"}]');

-- The order of the rules is ADK-Go's: a graph breaking several reports
-- the first (no START edge before the duplicate edge and the cycle).
SELECT wf_try(wf_nodes('A', 'B'), '[{"from": "A", "to": "B"}, {"from": "A", "to": "B"}, {"from": "B", "to": "A"}]');

-- What the tables add: edges name nodes; a parallel worker's node.
SELECT wf_try(wf_nodes('A'), '[{"from": "START", "to": "A"}, {"from": "A", "to": "nowhere"}]');
SELECT wf_try('[{"name": "each", "worker": "W"}, {"name": "W", "function": "public.wf_step(jsonb,jsonb)"}]',
              '[{"from": "START", "to": "each"}]');
SELECT wf_try('[{"name": "each", "worker": "W", "retry": {}}, {"name": "W", "function": "public.wf_step(jsonb,jsonb)", "retry": {}}]',
              '[{"from": "START", "to": "each"}]');
SELECT wf_try('[{"name": "each", "worker": "W"}, {"name": "W", "function": "public.wf_step(jsonb,jsonb)"}]',
              '[{"from": "START", "to": "each"}, {"from": "each", "to": "W"}]');
SELECT wf_try('[{"name": "each", "worker": "missing"}]', '[{"from": "START", "to": "each"}]');
SELECT wf_try('[{"name": "each", "worker": "J"}, {"name": "J", "kind": "join"}]', '[{"from": "START", "to": "each"}]');

-- Values, row by row (at the statement).
SELECT wf_try('[{"name": "START", "kind": "join"}]', '[]');
SELECT wf_try('[{"name": "a/b", "kind": "join"}]', '[]');
SELECT wf_try('[{"name": "A", "kind": "loop"}]', '[]');
SELECT wf_try('[{"name": "A"}]', '[]');
SELECT wf_try('[{"name": "A", "kind": "agent"}]', '[]');
SELECT wf_try('[{"name": "A", "kind": "join", "agent": "wf_first"}]', '[]');
SELECT wf_try('[{"name": "A", "agent": "wf_nobody"}]', '[]');
SELECT wf_try('[{"name": "A", "agent": "wf_inner"}]', '[]');
SELECT wf_try('[{"name": "A", "tool": "wf_no_tool"}]', '[]');
SELECT wf_try('[{"name": "A", "workflow": "wf_no_workflow"}]', '[]');
SELECT wf_try('[{"name": "A", "function": "wf_nodes(text[])"}]', '[]');
SELECT wf_try('[{"name": "A", "function": "public.wf_missing(jsonb,jsonb)"}]', '[]');
-- the function is found by its schema, not the caller's search_path ...
SELECT wf_try('[{"name": "A", "function": "wf_step(jsonb,jsonb)"}]', '[]');
-- ... or given by OID, resolved in the caller's own statement
SELECT wf_try(jsonb_build_array(jsonb_build_object('name', 'A', 'function', 'wf_step(jsonb,jsonb)'::regprocedure::oid)),
              '[{"from": "START", "to": "A"}]');
SELECT wf_try('[{"name": "A", "function": 4294967295}]', '[]');
SELECT wf_try('[{"name": "A", "function": true}]', '[]');
SELECT wf_try('[{"name": "A", "kind": "join", "colour": "red"}]', '[]');
SELECT wf_try('[{"name": "A", "kind": "join", "retry": {"max_attempts": 2, "tries": 1}}]', '[]');
SELECT wf_try('[{"name": "A", "kind": "join", "retry": {"max_attempts": 2.5}}]', '[]');
SELECT wf_try('[{"name": "A", "kind": "join", "timeout": 0}]', '[]');
SELECT wf_try('[{"name": "A", "kind": "join", "timeout": true}]', '[]');
SELECT wf_try('[{"name": "A", "kind": "join", "max_concurrency": 2}]', '[]');
SELECT wf_try('[{"name": "A", "kind": "join", "input_schema": ["x"]}]', '[]');
SELECT wf_try('"A"', '[]');
SELECT wf_try(wf_nodes('A'), '[{"from": "START", "to": "A", "route": "x", "default": true}]');
SELECT wf_try(wf_nodes('A'), '[{"from": "START", "to": "A", "route": {"x": 1}}]');
SELECT wf_try(wf_nodes('A'), '[{"from": "START", "to": "A", "when": "x"}]');
SELECT wf_try(wf_nodes('A'), '[{"from": "START"}]');
-- a name an agent of another kind has
SELECT expect_error($$SELECT adk_define_workflow('wf_first', '[]', '[]')$$);

-- A whole definition, and what the rows hold: retry completed with
-- ADK-Go's defaults, int and bool routes as their text, the default edge.
SELECT adk_define_workflow('wf_review',
    nodes => '[{"agent": "wf_first", "rerun_on_resume": true, "timeout": 30},
               {"name": "check", "function": "public.wf_step(jsonb,jsonb)", "retry": {"max_attempts": 3}},
               {"agent": "wf_second", "wait_for_output": true, "timeout": "2 minutes"},
               {"name": "each", "worker": "fix", "max_concurrency": 4, "retry": {}},
               {"name": "fix", "function": "public.wf_step(jsonb,jsonb)"},
               {"name": "done", "kind": "join"}]',
    edges => '[{"from": "START", "to": "wf_first"},
               {"from": "wf_first", "to": "check"},
               {"from": "check", "to": "wf_second", "route": [1, true]},
               {"from": "check", "to": "each", "default": true},
               {"from": "wf_second", "to": "done"},
               {"from": "each", "to": "wf_first", "route": "again"},
               {"from": "each", "to": "done"}]',
    description => 'Drafts, checks, fixes.', max_concurrency => 2);
SELECT name, description, max_concurrency, length(graph_hash) AS hash_len FROM adk.workflows WHERE name = 'wf_review';
SELECT name, kind, description FROM adk.agents WHERE name = 'wf_review';
SELECT name, kind, coalesce(agent, function::text, tool, sub_workflow, worker) AS target,
       rerun_on_resume, wait_for_output, retry, timeout, max_concurrency
  FROM adk.workflow_nodes WHERE workflow = 'wf_review' ORDER BY name;
SELECT from_node, to_node, route, is_default FROM adk.workflow_edges WHERE workflow = 'wf_review'
 ORDER BY from_node, to_node;

-- The hash: the same graph has the same hash whatever the order of its
-- rows; a description does not change it; any setting does; it is
-- recomputed at every commit that changes the graph.
CREATE TEMP TABLE wf_hashes AS SELECT 'first' AS k, graph_hash AS h FROM adk.workflows WHERE name = 'wf_review';
SELECT adk_define_workflow('wf_review',
    nodes => (SELECT jsonb_agg(x ORDER BY x ->> 'name' DESC) FROM jsonb_array_elements(
               '[{"agent": "wf_first", "rerun_on_resume": true, "timeout": "30 seconds"},
                 {"name": "check", "function": "public.wf_step(jsonb,jsonb)", "retry": {"max_attempts": 3}},
                 {"agent": "wf_second", "wait_for_output": true, "timeout": 120},
                 {"name": "each", "worker": "fix", "max_concurrency": 4, "retry": {}},
                 {"name": "fix", "function": "public.wf_step(jsonb,jsonb)"},
                 {"name": "done", "kind": "join"}]') x),
    edges => '[{"from": "each", "to": "done"},
               {"from": "each", "to": "wf_first", "route": ["again"]},
               {"from": "wf_second", "to": "done"},
               {"from": "check", "to": "each", "default": true},
               {"from": "check", "to": "wf_second", "route": ["1", "true"]},
               {"from": "wf_first", "to": "check"},
               {"from": "START", "to": "wf_first"}]',
    description => 'Another description.', max_concurrency => 2);
INSERT INTO wf_hashes SELECT 'reordered', graph_hash FROM adk.workflows WHERE name = 'wf_review';
UPDATE adk.workflow_nodes SET retry = '{"max_attempts": 4}' WHERE workflow = 'wf_review' AND name = 'check';
INSERT INTO wf_hashes SELECT 'retry changed', graph_hash FROM adk.workflows WHERE name = 'wf_review';
UPDATE adk.workflow_nodes SET retry = '{"max_attempts": 3}' WHERE workflow = 'wf_review' AND name = 'check';
INSERT INTO wf_hashes SELECT 'retry back', graph_hash FROM adk.workflows WHERE name = 'wf_review';
UPDATE adk.workflow_edges SET route = '{again,retry}' WHERE workflow = 'wf_review' AND from_node = 'each' AND to_node = 'wf_first';
INSERT INTO wf_hashes SELECT 'route changed', graph_hash FROM adk.workflows WHERE name = 'wf_review';
UPDATE adk.workflows SET max_concurrency = 3 WHERE name = 'wf_review';
INSERT INTO wf_hashes SELECT 'max_concurrency changed', graph_hash FROM adk.workflows WHERE name = 'wf_review';
SELECT k, h = (SELECT h FROM wf_hashes WHERE k = 'first') AS same_as_first,
       h = adk._workflow_hash('wf_review') AS current
  FROM wf_hashes ORDER BY ctid;
-- a manual write of graph_hash does not stick
UPDATE adk.workflows SET graph_hash = 'forged' WHERE name = 'wf_review';
SELECT graph_hash = adk._workflow_hash('wf_review') AS recomputed FROM adk.workflows WHERE name = 'wf_review';

-- A graph built in several statements of one transaction is checked once
-- it is complete; a broken one fails the commit and leaves nothing.
BEGIN;
INSERT INTO adk.workflows (name) VALUES ('wf_steps');
INSERT INTO adk.workflow_nodes (workflow, name, kind, function) VALUES ('wf_steps', 'B', 'function', 'wf_step(jsonb,jsonb)');
INSERT INTO adk.workflow_edges (workflow, from_node, to_node) VALUES ('wf_steps', 'A', 'B');
INSERT INTO adk.workflow_nodes (workflow, name, kind, function) VALUES ('wf_steps', 'A', 'function', 'wf_step(jsonb,jsonb)');
INSERT INTO adk.workflow_edges (workflow, from_node, to_node) VALUES ('wf_steps', 'START', 'A');
COMMIT;
SELECT name, graph_hash = adk._workflow_hash(name) AS hashed FROM adk.workflows WHERE name = 'wf_steps';
BEGIN;
INSERT INTO adk.workflow_edges (workflow, from_node, to_node) VALUES ('wf_steps', 'B', 'A');
COMMIT;
SELECT from_node, to_node FROM adk.workflow_edges WHERE workflow = 'wf_steps' ORDER BY 1, 2;
-- deleting a node its edges still name fails too
SELECT expect_error($$DELETE FROM adk.workflow_nodes WHERE workflow = 'wf_steps' AND name = 'B'; SET CONSTRAINTS ALL IMMEDIATE$$);

-- A workflow is an agent: an app's root, or a sub-agent of another agent.
-- This one is given a node the runner does not run (a join with a
-- retry): the run is refused with a clear error (872_workflow_run runs
-- workflows).
SELECT adk_define_app('wf_app', 'wf_review');
SELECT adk_define_agent('wf_coordinator', sub_agents => ARRAY['wf_steps']);
UPDATE adk.workflow_nodes SET retry = '{}' WHERE workflow = 'wf_review' AND name = 'done';
SELECT expect_error($$SELECT * FROM adk_run('wf_app', 'u1', 's1', 'hello')$$);
-- in use: neither deleted nor renamed
SELECT expect_error($$DELETE FROM adk.agents WHERE name = 'wf_review'$$);
SELECT adk_define_workflow('wf_outer', '[{"name": "nested_node", "workflow": "wf_inner"}]',
                           '[{"from": "START", "to": "nested_node"}]');
SELECT expect_error($$DELETE FROM adk.agents WHERE name = 'wf_inner'$$);
SELECT expect_error($$UPDATE adk.workflows SET name = 'wf_renamed' WHERE name = 'wf_steps'$$);
SELECT expect_error($$DELETE FROM adk.agents WHERE name = 'wf_first'$$);
-- a workflow agent is made by adk_define_workflow, and has no sub-agents
SELECT expect_error($$SELECT adk_define_agent('wf_lonely', kind => 'workflow'); SET CONSTRAINTS ALL IMMEDIATE$$);
SELECT expect_error($$UPDATE adk.agents SET sub_agents = '{wf_first}' WHERE name = 'wf_steps'$$);
-- deleting the agent deletes the workflow with its nodes and edges
SELECT adk_define_agent('wf_coordinator', sub_agents => '{}');
DELETE FROM adk.agents WHERE name = 'wf_steps';
SELECT count(*) FROM adk.workflows WHERE name = 'wf_steps';
SELECT count(*) FROM adk.workflow_nodes WHERE workflow = 'wf_steps';
-- a workflow row without its agent cannot stay
SELECT expect_error($$DELETE FROM adk.workflows WHERE name = 'wf_review'; SET CONSTRAINTS ALL IMMEDIATE$$);

-- Who may define: adk_admin; an adk_user member reads the definitions
-- and cannot write a node into another's workflow, nor define one.
CREATE ROLE wf_admin IN ROLE adk_admin;
CREATE ROLE wf_user IN ROLE adk_user;
GRANT EXECUTE ON FUNCTION wf_step(jsonb, jsonb) TO wf_admin;
SET ROLE wf_admin;
SELECT adk_define_workflow('wf_admins', wf_nodes('A'), '[{"from": "START", "to": "A"}]');
RESET ROLE;
SET ROLE wf_user;
SELECT count(*) FROM adk.workflow_nodes WHERE workflow = 'wf_admins';
SELECT expect_error($$INSERT INTO adk.workflow_nodes (workflow, name, kind) VALUES ('wf_admins', 'B', 'join')$$);
SELECT expect_error($$INSERT INTO adk.workflow_edges (workflow, from_node, to_node) VALUES ('wf_admins', 'A', 'START')$$);
SELECT expect_error($$UPDATE adk.workflows SET max_concurrency = 1 WHERE name = 'wf_admins'$$);
SELECT expect_error($$SELECT adk_define_workflow('wf_admins', '[]', '[]')$$);
SELECT expect_error($$SELECT adk._check_workflow('wf_admins')$$);
RESET ROLE;
-- an admin needs EXECUTE on a function node's function
REVOKE EXECUTE ON FUNCTION wf_step(jsonb, jsonb) FROM wf_admin, PUBLIC;
SET ROLE wf_admin;
SELECT expect_error($$SELECT adk_define_workflow('wf_admins2', '[{"name": "A", "function": "public.wf_step(jsonb,jsonb)"}]', '[{"from": "START", "to": "A"}]')$$);
RESET ROLE;
GRANT EXECUTE ON FUNCTION wf_step(jsonb, jsonb) TO PUBLIC;
