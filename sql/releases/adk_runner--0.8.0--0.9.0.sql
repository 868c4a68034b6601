-- adk_runner 0.8.0 -> 0.9.0: ALTER EXTENSION adk_runner UPDATE TO '0.9.0'.
-- Every change to the SQL surface since release 0.8.0, in the order the
-- full install script (sql/install/) makes it.  test/t/024_upgrade.pl
-- checks that a 0.8.0 schema updated with this script equals a fresh
-- 0.9.0 install (docs/releasing.md).

\echo Use "ALTER EXTENSION adk_runner UPDATE" to load this file. \quit

-- Graph workflows: an agent node's own agent may pause for human input
-- (a long-running or confirmation tool), its answer resuming the agent
-- in its lane (src/runner/workflow.c, docs/workflows.md "Human input");
-- a tool node's long-running tool runs as ADK-Go's tool node runs it.
CREATE OR REPLACE FUNCTION adk._workflow_refusal(wf text) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT format('node "%s" of workflow "%s" %s', n.name, wf,
                  CASE WHEN n.kind = 'join' AND n.retry IS NOT NULL THEN 'is a join with a retry'
                       WHEN n.kind = 'join' AND n.timeout IS NOT NULL THEN 'is a join with a timeout'
                       WHEN n.kind IN ('agent', 'parallel_worker', 'workflow') AND n.retry IS NOT NULL
                            THEN format('is of kind %s with a retry', n.kind)
                       WHEN n.kind IN ('agent', 'parallel_worker', 'workflow') AND n.timeout IS NOT NULL
                            THEN format('is of kind %s with a timeout', n.kind)
                       WHEN n.kind IN ('agent', 'parallel_worker') AND n.wait_for_output
                            THEN format('is of kind %s with wait_for_output', n.kind)
                       WHEN n.kind = 'agent' AND n.output_schema IS NOT NULL
                            THEN 'is of kind agent with an output schema'
                       WHEN n.kind = 'parallel_worker'
                            AND (n.input_schema IS NOT NULL OR n.output_schema IS NOT NULL)
                            THEN format('is of kind %s with an input or output schema', n.kind)
                       ELSE format('runs tool "%s", a tool requiring confirmation', n.tool) END)
      FROM adk.workflow_nodes n
     WHERE n.workflow = wf
       AND ((n.kind IN ('join', 'agent', 'workflow', 'parallel_worker')
             AND (n.retry IS NOT NULL OR n.timeout IS NOT NULL))
            OR (n.kind IN ('agent', 'parallel_worker') AND (n.wait_for_output OR n.output_schema IS NOT NULL))
            OR (n.kind = 'parallel_worker' AND n.input_schema IS NOT NULL)
            OR EXISTS (SELECT 1 FROM adk.tools t
                        WHERE t.name = n.tool AND t.require_confirmation))
     ORDER BY n.name COLLATE "C"
     LIMIT 1
$$;

CREATE OR REPLACE FUNCTION adk._workflow_pause_refusal(wf text) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE WHEN pw.name IS NOT NULL
                THEN format('node "%s" of workflow "%s" is the worker of parallel worker node "%s" and agent "%s" has tool "%s" (long-running or requiring confirmation)',
                            n.name, wf, pw.name, a.name, t.name)
                ELSE format('node "%s" of workflow "%s" is of kind agent and agent "%s", below its agent "%s", has tool "%s" (long-running or requiring confirmation)',
                            n.name, wf, a.name, n.agent, t.name) END
      FROM adk.workflow_nodes n
      LEFT JOIN LATERAL (SELECT p.name FROM adk.workflow_nodes p
                          WHERE p.workflow = n.workflow AND p.kind = 'parallel_worker'
                            AND p.worker = n.name
                          ORDER BY p.name COLLATE "C" LIMIT 1) pw ON true
     CROSS JOIN LATERAL adk._agent_tree(n.agent) a
      JOIN adk.agents g ON g.name = a.name
     CROSS JOIN LATERAL unnest(g.tools) WITH ORDINALITY AS u(tool, i)
      JOIN adk.tools t ON t.name = u.tool AND (t.long_running OR t.require_confirmation)
     WHERE n.workflow = wf AND n.kind = 'agent' AND (pw.name IS NOT NULL OR a.depth > 0)
     ORDER BY n.name COLLATE "C", a.depth, a.name COLLATE "C", u.i
     LIMIT 1
$$;

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
REVOKE ALL ON FUNCTION adk._workflow_pause_below_refusal(text, text) FROM PUBLIC;

-- The lanes of the agent nodes a message's answers resume: its user
-- event goes on that branch (src/runner/hitl.c).
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
