-- adk_runner 0.7.0 -> 0.8.0: ALTER EXTENSION adk_runner UPDATE TO '0.8.0'.
-- Every change to the SQL surface since release 0.7.0, in the order the
-- full install script (sql/install/) makes it.  test/t/024_upgrade.pl
-- checks that a 0.7.0 schema updated with this script equals a fresh
-- 0.8.0 install (docs/releasing.md).

\echo Use "ALTER EXTENSION adk_runner UPDATE" to load this file. \quit

-- sql/install/89_workflows.sql: agent, nested workflow and parallel worker
-- nodes run (src/runner/workflow.c)
CREATE OR REPLACE FUNCTION adk._workflow_refusal(wf text) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT format('node "%s" of workflow "%s" %s', n.name, wf,
                  CASE WHEN n.kind NOT IN ('agent', 'function', 'join', 'parallel_worker', 'tool', 'workflow') THEN format('is of kind %s', n.kind)
                       WHEN n.retry IS NOT NULL THEN 'has a retry'
                       WHEN n.timeout IS NOT NULL THEN 'has a timeout'
                       WHEN n.wait_for_output THEN 'has wait_for_output'
                       WHEN n.input_schema IS NOT NULL OR n.output_schema IS NOT NULL THEN 'has an input or output schema'
                       ELSE format('runs tool "%s" (long-running or requiring confirmation)', n.tool) END)
      FROM adk.workflow_nodes n
     WHERE n.workflow = wf
       AND (n.kind NOT IN ('agent', 'function', 'join', 'parallel_worker', 'tool', 'workflow') OR n.retry IS NOT NULL OR n.timeout IS NOT NULL
            OR n.wait_for_output OR n.input_schema IS NOT NULL OR n.output_schema IS NOT NULL
            OR EXISTS (SELECT 1 FROM adk.tools t
                        WHERE t.name = n.tool AND (t.require_confirmation OR t.long_running)))
     ORDER BY n.name COLLATE "C"
     LIMIT 1
$$;

-- The nodes of a workflow as the scheduler needs them: kind, a function
-- node's function as a qualified name to call (a tool node's: its tool's
-- name in adk.tools; an agent node's: its agent; a nested workflow's: its
-- name; a parallel worker's: its worker node), each node's predecessors
-- (what a join waits for), rerun_on_resume, in name order.
CREATE OR REPLACE FUNCTION adk._workflow_plan(wf text)
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

