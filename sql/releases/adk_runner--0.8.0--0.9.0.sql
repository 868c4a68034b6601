-- adk_runner 0.8.0 -> 0.9.0: ALTER EXTENSION adk_runner UPDATE TO '0.9.0'.
-- Every change to the SQL surface since release 0.8.0, in the order the
-- full install script (sql/install/) makes it.  test/t/024_upgrade.pl
-- checks that a 0.8.0 schema updated with this script equals a fresh
-- 0.9.0 install (docs/releasing.md).

\echo Use "ALTER EXTENSION adk_runner UPDATE" to load this file. \quit

-- A graph workflow's failure also cancels the nodes waiting for human input
-- (an item of a parallel worker may wait now), and finds the parallel
-- worker of a failed item on the item's sub-branch (89_workflows.sql).
CREATE OR REPLACE FUNCTION adk._workflow_stopped(p_app text, p_user text, p_session text,
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

-- the node-settings and agent-pause changes to adk._workflow_refusal, merged
CREATE OR REPLACE FUNCTION adk._workflow_refusal(wf text) RETURNS text
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

-- adk_append_event's statement: the same, but only while no queued run
-- holds the session -- no job of it 'running' in another process (live
-- or not: which workers are still there is asked of the process array,
-- src/store/session_read.c).  The UPDATE takes the session row lock only
-- when it writes, so when a job is there no row comes back, nothing is
-- locked, and adk_store_append waits for the job as adk_run does
-- (adk_session_lock_unheld) before it appends with the statement above.
-- Without a job on the session this is one statement: no subtransaction
-- and no lock statement of its own, whose lock the UPDATE would then turn
-- into a multixact (docs/workers.md, "One run per session at a time").
CREATE FUNCTION adk._append_event_unheld(text, text, text, timestamptz, jsonb, text, text, jsonb,
                                         OUT r_seq bigint, OUT r_timestamp timestamptz,
                                         OUT r_event_data jsonb)
RETURNS SETOF record
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
WITH s AS (
  UPDATE adk.sessions_p0 AS s
     SET last_seq = s.last_seq OPERATOR(pg_catalog.+) 1,
         last_event_time = adk._next_event_time(s.last_event_time, $4),
         update_time = GREATEST(s.update_time,
             adk._next_event_time(s.last_event_time, $4)),
         state = CASE WHEN $5 IS NULL THEN s.state
                      ELSE s.state OPERATOR(pg_catalog.||) $5 END
   WHERE s.app_name OPERATOR(pg_catalog.=) $1
     AND s.user_id OPERATOR(pg_catalog.=) $2
     AND s.id OPERATOR(pg_catalog.=) $3
     AND NOT EXISTS (SELECT FROM adk.jobs j
                      WHERE j.app_name OPERATOR(pg_catalog.=) $1
                        AND j.user_id OPERATOR(pg_catalog.=) $2
                        AND j.session_id OPERATOR(pg_catalog.=) $3
                        AND j.status OPERATOR(pg_catalog.=) 'running'
                        AND j.worker_pid OPERATOR(pg_catalog.<>) pg_catalog.pg_backend_pid())
  RETURNING s.last_seq, s.last_event_time)
INSERT INTO adk.events_p0
       (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data, seq)
SELECT $6, $1, $2, $3, $7, s.last_event_time,
       adk._event_at($8, s.last_event_time), s.last_seq FROM s
RETURNING seq, "timestamp", event_data
$$;
REVOKE ALL ON FUNCTION adk._append_event_unheld(text, text, text, timestamptz, jsonb, text, text, jsonb) FROM PUBLIC;

-- The rewind trigger's update (src/store/rewound_trigger.c): the rewound
-- seqs of session ($1, $2, $3) computed again (12_rewound.sql), after a
-- rewind event was inserted into it.  Run as the writer of that event.
CREATE FUNCTION adk._session_rewound_set(text, text, text)
RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
UPDATE adk.sessions s
   SET rewound = adk._rewound($1, $2, $3)
 WHERE s.app_name OPERATOR(pg_catalog.=) $1
   AND s.user_id OPERATOR(pg_catalog.=) $2
   AND s.id OPERATOR(pg_catalog.=) $3
$$;
REVOKE ALL ON FUNCTION adk._session_rewound_set(text, text, text) FROM PUBLIC;

-- A rewind event, from any writer, recomputes its session's rewound
-- seqs (adk._session_rewound_set, 88_turn_statements.sql, run as the
-- writer of the row).  Which rows are rewind events the function decides
-- (src/store/rewound_trigger.c): a WHEN clause here was read from its
-- stored text and prepared again by every INSERT into adk.events.
CREATE OR REPLACE FUNCTION adk._events_after_rewind() RETURNS trigger
    AS 'MODULE_PATHNAME', 'adk_events_after_rewind' LANGUAGE C;
DROP TRIGGER adk_events_after_rewind ON adk.events;
CREATE TRIGGER adk_events_after_rewind
    AFTER INSERT ON adk.events
    FOR EACH ROW EXECUTE FUNCTION adk._events_after_rewind();

-- The session row's lock, taken only while no queued run holds the
-- session -- no job of it 'running' in another process, live or not (as
-- adk._append_event_unheld): one row, none when such a job is there (and
-- nothing locked then) or without the session.  adk_session_lock_unheld
-- tries it first; it takes the lock in the caller's own transaction, so
-- the UPDATEs that follow make no multixact of a subtransaction's lock.
CREATE FUNCTION adk._session_lock_unheld(text, text, text)
RETURNS SETOF integer
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
SELECT 1 FROM adk.sessions s
 WHERE s.app_name OPERATOR(pg_catalog.=) $1
   AND s.user_id OPERATOR(pg_catalog.=) $2
   AND s.id OPERATOR(pg_catalog.=) $3
   AND NOT EXISTS (SELECT FROM adk.jobs j
                    WHERE j.app_name OPERATOR(pg_catalog.=) $1
                      AND j.user_id OPERATOR(pg_catalog.=) $2
                      AND j.session_id OPERATOR(pg_catalog.=) $3
                      AND j.status OPERATOR(pg_catalog.=) 'running'
                      AND j.worker_pid OPERATOR(pg_catalog.<>) pg_catalog.pg_backend_pid())
   FOR UPDATE OF s
$$;
REVOKE ALL ON FUNCTION adk._session_lock_unheld(text, text, text) FROM PUBLIC;

-- 70_workers.sql: session-affine claiming (docs/workers.md, "Order"): a
-- job is held for the live worker that ran its session's last job, for
-- adk.worker_affinity_delay; the end of a job says whether its session
-- has a next one queued.  New arguments and results: the functions are
-- made again.
DROP FUNCTION adk._claim_jobs(integer, integer);
DROP FUNCTION adk._claim_job(integer);
DROP FUNCTION adk._job_finished(bigint, text);
CREATE FUNCTION adk._claim_job(worker_pid integer, affinity_ms integer DEFAULT 0,
                               live_workers integer[] DEFAULT NULL)
RETURNS SETOF adk.jobs
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    fair_role oid;
    fair_app text;
    next_id bigint;
    me integer := _claim_job.worker_pid;
    affine boolean := _claim_job.affinity_ms OPERATOR(pg_catalog.>) 0
                      AND _claim_job.live_workers IS NOT NULL;
    held_since timestamptz := pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-)
                              pg_catalog.make_interval(secs => _claim_job.affinity_ms / 1000.0);
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
       AND NOT (affine AND EXISTS (
               SELECT 1 FROM (SELECT p.worker_pid, p.finished_at FROM adk.jobs p
                               WHERE p.app_name OPERATOR(pg_catalog.=) j.app_name
                                 AND p.user_id OPERATOR(pg_catalog.=) j.user_id
                                 AND p.session_id OPERATOR(pg_catalog.=) j.session_id
                                 AND p.id OPERATOR(pg_catalog.<) j.id
                                 AND p.worker_pid IS NOT NULL
                               ORDER BY p.id DESC LIMIT 1) prev
                WHERE prev.worker_pid OPERATOR(pg_catalog.<>) me
                  AND prev.worker_pid OPERATOR(pg_catalog.=) ANY (_claim_job.live_workers)
                  AND GREATEST(j.submitted_at, prev.finished_at)
                      OPERATOR(pg_catalog.>) held_since))
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
           AND NOT (affine AND EXISTS (
                   SELECT 1 FROM (SELECT p.worker_pid, p.finished_at FROM adk.jobs p
                                   WHERE p.app_name OPERATOR(pg_catalog.=) j.app_name
                                     AND p.user_id OPERATOR(pg_catalog.=) j.user_id
                                     AND p.session_id OPERATOR(pg_catalog.=) j.session_id
                                     AND p.id OPERATOR(pg_catalog.<) j.id
                                     AND p.worker_pid IS NOT NULL
                                   ORDER BY p.id DESC LIMIT 1) prev
                    WHERE prev.worker_pid OPERATOR(pg_catalog.<>) me
                      AND prev.worker_pid OPERATOR(pg_catalog.=) ANY (_claim_job.live_workers)
                      AND GREATEST(j.submitted_at, prev.finished_at)
                          OPERATOR(pg_catalog.>) held_since))
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
COMMENT ON FUNCTION adk._claim_job(integer, integer, integer[]) IS
    'The job workers'' claim: mark the next claimable job running and return it (no row: nothing to claim); a job is held for affinity_ms for the live worker that ran its session''s last job.';

CREATE FUNCTION adk._claim_jobs(worker_pid integer, most integer,
                                affinity_ms integer DEFAULT 0,
                                live_workers integer[] DEFAULT NULL)
RETURNS SETOF adk.jobs
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    claimed adk.jobs;
BEGIN
    FOR i IN 1..most LOOP
        SELECT * INTO claimed
          FROM adk._claim_job(_claim_jobs.worker_pid, _claim_jobs.affinity_ms,
                              _claim_jobs.live_workers);
        IF NOT FOUND THEN
            RETURN;
        END IF;
        RETURN NEXT claimed;
    END LOOP;
END
$$;
COMMENT ON FUNCTION adk._claim_jobs(integer, integer, integer, integer[]) IS
    'The job workers'' claim of up to most jobs at once: adk._claim_job repeated until it finds none.';

CREATE FUNCTION adk._job_finished(job_id bigint, job_invocation text,
                                  OUT ended_as text, OUT next_queued boolean)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    s_app text;
    s_user text;
    s_session text;
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
    RETURNING j.status, j.app_name, j.user_id, j.session_id
         INTO ended_as, s_app, s_user, s_session;
    next_queued := EXISTS (
        SELECT 1 FROM adk.jobs n
         WHERE n.app_name OPERATOR(pg_catalog.=) s_app
           AND n.user_id OPERATOR(pg_catalog.=) s_user
           AND n.session_id OPERATOR(pg_catalog.=) s_session
           AND n.id OPERATOR(pg_catalog.>) _job_finished.job_id
           AND n.status OPERATOR(pg_catalog.=) 'queued');
END
$$;
COMMENT ON FUNCTION adk._job_finished(bigint, text) IS
    'A job worker''s end of a job: its status as its invocation''s, returned, and whether a later job of its session is queued.';
-- internal: the job workers' and the launcher's only (90_privileges.sql)
REVOKE ALL ON FUNCTION adk._claim_job(integer, integer, integer[]),
                       adk._claim_jobs(integer, integer, integer, integer[]),
                       adk._job_finished(bigint, text) FROM PUBLIC;

-- An agent node that is a parallel worker's worker node may pause for
-- human input too: its item waits and the answer resumes its agent.
CREATE OR REPLACE FUNCTION adk._workflow_pause_refusal(wf text) RETURNS text
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

-- a rebuild keeps a paused invocation's running parallel worker row (62_hitl.sql)
CREATE OR REPLACE FUNCTION adk._refresh_run_states(p_app text, p_user text, p_session text,
                                        p_invocation text DEFAULT NULL,
                                        p_new jsonb DEFAULT NULL,
                                        p_paths text[] DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    -- each path and the paths above it: "a/b@1/c@2" -> a, a/b@1, a/b@1/c@2
    paths text[] := CASE WHEN p_paths IS NOT NULL THEN
        ARRAY(SELECT DISTINCT array_to_string((string_to_array(p.path, '/'))[1:k.k], '/')
                FROM unnest(p_paths) p(path)
               CROSS JOIN LATERAL generate_series(1, cardinality(string_to_array(p.path, '/'))) k(k)
               WHERE p.path IS NOT NULL) END;
    -- statements Citus can route to the session's shard: the derived rows
    -- are read once, then the table is brought to them
    d adk.run_states[] := ARRAY(SELECT x FROM adk._derive_run_states(p_app, p_user, p_session,
                                                                     p_invocation, p_new, paths) x);
    x adk.run_states;
BEGIN
    DELETE FROM adk.run_states r
     WHERE r.app_name = p_app AND r.user_id = p_user AND r.session_id = p_session
       AND (p_invocation IS NULL OR r.invocation_id = p_invocation)
       AND (paths IS NULL OR r.node_path = ANY (p_paths)
            OR (r.node_path = ANY (paths) AND r.graph_hash IS NULL))
       AND NOT EXISTS (SELECT 1 FROM unnest(d) k
                        WHERE k.invocation_id = r.invocation_id AND k.node_path = r.node_path)
       -- a graph workflow's node that has no event of its own until it ends
       -- -- a parallel worker whose items wait for human input -- keeps the
       -- row its start wrote while its invocation is paused: no event can
       -- give it again, and the answer completes it from that row
       -- (docs/workflows.md "Parallel workers")
       AND NOT (r.status = 'running' AND r.graph_hash IS NOT NULL
                AND EXISTS (SELECT 1 FROM adk.invocations i
                             WHERE i.app_name = r.app_name AND i.user_id = r.user_id
                               AND i.session_id = r.session_id
                               AND i.invocation_id = r.invocation_id AND i.status = 'waiting'));
    FOREACH x IN ARRAY d LOOP
        INSERT INTO adk.run_states AS r
        VALUES (x.app_name, x.user_id, x.session_id, x.invocation_id, x.node_path, x.status,
                x.interrupt_ids, x.answered_ids, x.agent, x.updated_at, x.input, x.output, x.attempt,
                x.triggered_by, x.branch, x.graph_hash)
        -- a graph workflow's node the events name only from below (a
        -- nested workflow node waiting) keeps the triggered_by, branch and
        -- graph hash its start wrote
        ON CONFLICT (app_name, user_id, session_id, invocation_id, node_path) DO UPDATE
           SET status = EXCLUDED.status, interrupt_ids = EXCLUDED.interrupt_ids,
               answered_ids = EXCLUDED.answered_ids, agent = EXCLUDED.agent,
               updated_at = EXCLUDED.updated_at, input = coalesce(EXCLUDED.input, r.input),
               output = EXCLUDED.output,
               triggered_by = CASE WHEN EXCLUDED.graph_hash IS NULL AND r.graph_hash IS NOT NULL THEN r.triggered_by ELSE EXCLUDED.triggered_by END,
               branch = CASE WHEN EXCLUDED.graph_hash IS NULL AND r.graph_hash IS NOT NULL THEN r.branch ELSE EXCLUDED.branch END,
               graph_hash = CASE WHEN EXCLUDED.graph_hash IS NULL AND r.graph_hash IS NOT NULL THEN r.graph_hash ELSE EXCLUDED.graph_hash END
         WHERE (r.status, r.interrupt_ids, r.answered_ids, r.agent, r.updated_at, r.input, r.output,
                r.triggered_by, r.branch, r.graph_hash)
               IS DISTINCT FROM
               (EXCLUDED.status, EXCLUDED.interrupt_ids, EXCLUDED.answered_ids, EXCLUDED.agent,
                EXCLUDED.updated_at, coalesce(EXCLUDED.input, r.input), EXCLUDED.output,
                CASE WHEN EXCLUDED.graph_hash IS NULL AND r.graph_hash IS NOT NULL THEN r.triggered_by ELSE EXCLUDED.triggered_by END,
                CASE WHEN EXCLUDED.graph_hash IS NULL AND r.graph_hash IS NOT NULL THEN r.branch ELSE EXCLUDED.branch END,
                CASE WHEN EXCLUDED.graph_hash IS NULL AND r.graph_hash IS NOT NULL THEN r.graph_hash ELSE EXCLUDED.graph_hash END);
    END LOOP;
    IF paths IS NOT NULL THEN
        RETURN coalesce((SELECT sum(cardinality(r.interrupt_ids)) FROM adk.run_states r
                          WHERE r.app_name = p_app AND r.user_id = p_user AND r.session_id = p_session
                            AND (p_invocation IS NULL OR r.invocation_id = p_invocation)), 0)::integer;
    END IF;
    RETURN coalesce((SELECT sum(cardinality(k.interrupt_ids)) FROM unnest(d) k), 0)::integer;
END
$$;
