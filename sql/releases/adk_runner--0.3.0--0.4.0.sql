-- adk_runner 0.3.0 -> 0.4.0: ALTER EXTENSION adk_runner UPDATE TO '0.4.0'.
-- Every change to the SQL surface since release 0.3.0, in the order the
-- full install script (sql/install/) makes it.  test/t/024_upgrade.pl
-- checks that a 0.3.0 schema updated with this script equals a fresh
-- 0.4.0 install (docs/releasing.md).

\echo Use "ALTER EXTENSION adk_runner UPDATE" to load this file. \quit

-- The job workers' and the launcher's own statements (run as the owner of
-- schema adk, through adk_owner_spi_begin in C): what ends a job, what a
-- lost worker leaves, how many jobs a worker could claim now.  Their
-- parameters are named apart from the columns of adk.jobs and
-- adk.invocations: in an SQL function a column of the same name wins.

-- A job ends as its invocation did.  A paused one ('waiting') has not
-- finished: its finished_at is set when the adk_run that answers it ends
-- the invocation.  Returns the job's status (NULL: no such job).
CREATE FUNCTION adk._job_finished(job_id bigint, job_invocation text) RETURNS text
LANGUAGE sql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
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
      LEFT JOIN adk.invocations i ON i.invocation_id OPERATOR(pg_catalog.=) job_invocation
     WHERE j.id OPERATOR(pg_catalog.=) job_id
    RETURNING j.status
$$;
COMMENT ON FUNCTION adk._job_finished(bigint, text) IS
    'A job worker''s end of a job: its status as its invocation''s, returned.';

-- The run of a job raised (new_status 'queued': it is retried, 'failed')
-- or was cancelled ('cancelled'): the job and its running invocation say
-- why.
CREATE FUNCTION adk._job_failed(job_id bigint, new_status text, failure text, code text)
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
        RETURNING invocation_id)
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
    'A job worker''s record of a run that raised or was cancelled: the job queued again or ended, its running invocation failed or cancelled.';

-- A running job whose worker is gone (the launcher's recovery): queued
-- again while attempts are left, failed otherwise; its running invocation
-- fails with WORKER_LOST.  Only the job at this attempt: a job another
-- worker has claimed again meanwhile is left alone.  Returns the job's new
-- status and its invocation's ids when the invocation was failed.
CREATE FUNCTION adk._job_lost(job_id bigint, at_attempt integer, reason text)
RETURNS TABLE (status text, invocation_id text, app_name text, user_id text,
               session_id text, agent text)
LANGUAGE sql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
    WITH j AS (
        UPDATE adk.jobs AS u
           SET status = CASE WHEN attempts OPERATOR(pg_catalog.<) max_attempts
                             THEN 'queued' ELSE 'failed' END,
               finished_at = CASE WHEN attempts OPERATOR(pg_catalog.<) max_attempts
                                  THEN NULL ELSE pg_catalog.clock_timestamp() END,
               worker_pid = NULL, error = reason
         WHERE u.id OPERATOR(pg_catalog.=) job_id
           AND u.status OPERATOR(pg_catalog.=) 'running'
           AND u.attempts OPERATOR(pg_catalog.=) at_attempt
        RETURNING u.invocation_id, u.status)
    UPDATE adk.invocations i
       SET status = 'failed', ended_at = pg_catalog.clock_timestamp(),
           error_code = 'WORKER_LOST', error_message = reason
      FROM j
     WHERE i.invocation_id OPERATOR(pg_catalog.=) j.invocation_id
       AND i.status OPERATOR(pg_catalog.=) 'running'
    RETURNING j.status, i.invocation_id, i.app_name, i.user_id, i.session_id, i.agent
$$;
COMMENT ON FUNCTION adk._job_lost(bigint, integer, text) IS
    'The launcher''s recovery of a running job whose worker is gone: queued again or failed, its invocation failed with WORKER_LOST.';

-- Queued jobs that no earlier job of their session holds back (one per
-- session at most: what workers can claim now), counted up to most.
CREATE FUNCTION adk._claimable_jobs(most integer) RETURNS integer
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT pg_catalog.count(*)::integer FROM (
        SELECT 1 FROM adk.jobs j
         WHERE j.status OPERATOR(pg_catalog.=) 'queued'
           AND NOT EXISTS (SELECT 1 FROM adk.jobs e
                            WHERE e.app_name OPERATOR(pg_catalog.=) j.app_name
                              AND e.user_id OPERATOR(pg_catalog.=) j.user_id
                              AND e.session_id OPERATOR(pg_catalog.=) j.session_id
                              AND e.id OPERATOR(pg_catalog.<) j.id
                              AND e.status OPERATOR(pg_catalog.=) ANY ('{queued,running}'))
         LIMIT most) c
$$;
COMMENT ON FUNCTION adk._claimable_jobs(integer) IS
    'The launcher''s count of the queued jobs workers could claim now (at most the given number).';
REVOKE ALL ON FUNCTION adk._job_finished(bigint, text), adk._job_failed(bigint, text, text, text),
    adk._job_lost(bigint, integer, text), adk._claimable_jobs(integer) FROM PUBLIC;
