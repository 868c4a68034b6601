-- adk_runner 0.8.0 -> 0.9.0: ALTER EXTENSION adk_runner UPDATE TO '0.9.0'.
-- Every change to the SQL surface since release 0.8.0, in the order the
-- full install script (sql/install/) makes it.  test/t/024_upgrade.pl
-- checks that a 0.8.0 schema updated with this script equals a fresh
-- 0.9.0 install (docs/releasing.md).

\echo Use "ALTER EXTENSION adk_runner UPDATE" to load this file. \quit

-- What the runner does not run yet in a workflow: NULL when every node has
-- only settings its kind honours (a join makes no call a retry or a
-- timeout could act on; every other kind takes every setting:
-- docs/workflows.md "Node settings") and calls no tool that pauses; else
-- the first other node, as a sentence.
CREATE OR REPLACE FUNCTION adk._workflow_refusal(wf text) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT format('node "%s" of workflow "%s" %s', n.name, wf,
                  CASE WHEN n.kind = 'join' AND n.retry IS NOT NULL THEN 'is a join with a retry'
                       WHEN n.kind = 'join' AND n.timeout IS NOT NULL THEN 'is a join with a timeout'
                       ELSE format('runs tool "%s" (long-running or requiring confirmation)', n.tool) END)
      FROM adk.workflow_nodes n
     WHERE n.workflow = wf
       AND ((n.kind = 'join' AND (n.retry IS NOT NULL OR n.timeout IS NOT NULL))
            OR EXISTS (SELECT 1 FROM adk.tools t
                        WHERE t.name = n.tool AND (t.require_confirmation OR t.long_running)))
     ORDER BY n.name COLLATE "C"
     LIMIT 1
$$;
