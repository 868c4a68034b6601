-- adk_runner 0.6.0 -> 0.7.0: ALTER EXTENSION adk_runner UPDATE TO '0.7.0'.
-- Every change to the SQL surface since release 0.6.0, in the order the
-- full install script (sql/install/) makes it.  test/t/024_upgrade.pl
-- checks that a 0.6.0 schema updated with this script equals a fresh
-- 0.7.0 install (docs/releasing.md).

\echo Use "ALTER EXTENSION adk_runner UPDATE" to load this file. \quit

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
