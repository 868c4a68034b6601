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
