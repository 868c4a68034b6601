-- adk_runner 0.7.0 -> 0.8.0: ALTER EXTENSION adk_runner UPDATE TO '0.8.0'.
-- Every change to the SQL surface since release 0.7.0, in the order the
-- full install script (sql/install/) makes it.  test/t/024_upgrade.pl
-- checks that a 0.7.0 schema updated with this script equals a fresh
-- 0.8.0 install (docs/releasing.md).

\echo Use "ALTER EXTENSION adk_runner UPDATE" to load this file. \quit

-- Graph workflow node settings run (src/runner/workflow_node.c): function
-- and tool nodes take retry, timeout, schemas and wait_for_output; only
-- other kinds, and retry or timeout on a join, are refused.
COMMENT ON COLUMN adk.workflow_nodes.wait_for_output IS 'an activation that ends without output does not complete: its successors do not run (ADK-Go WaitForOutput)';
COMMENT ON COLUMN adk.workflow_nodes.timeout IS 'bound on one attempt of a function or tool node: its call is cancelled and the attempt fails (retried when the node has a retry); NULL = none';
CREATE OR REPLACE FUNCTION adk._workflow_refusal(wf text) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT format('node "%s" of workflow "%s" %s', n.name, wf,
                  CASE WHEN n.kind NOT IN ('function', 'join', 'tool') THEN format('is of kind %s', n.kind)
                       WHEN n.kind = 'join' AND n.retry IS NOT NULL THEN 'is a join with a retry'
                       WHEN n.kind = 'join' AND n.timeout IS NOT NULL THEN 'is a join with a timeout'
                       ELSE format('runs tool "%s" (long-running or requiring confirmation)', n.tool) END)
      FROM adk.workflow_nodes n
     WHERE n.workflow = wf
       AND (n.kind NOT IN ('function', 'join', 'tool')
            OR (n.kind = 'join' AND (n.retry IS NOT NULL OR n.timeout IS NOT NULL))
            OR EXISTS (SELECT 1 FROM adk.tools t
                        WHERE t.name = n.tool AND (t.require_confirmation OR t.long_running)))
     ORDER BY n.name COLLATE "C"
     LIMIT 1
$$;

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
