-- ---------------------------------------------------------------------
-- Background workers (docs/workers.md): queued runs, triggers that queue runs,
-- waiting, cancellation.  The launcher and the job workers need
-- shared_preload_libraries = 'adk_runner'; see docs/workers.md.
-- ---------------------------------------------------------------------

CREATE TABLE adk.jobs (
    id            bigserial PRIMARY KEY,
    invocation_id text NOT NULL UNIQUE,
    app_name      text NOT NULL,
    user_id       text NOT NULL,
    session_id    text NOT NULL,
    message       jsonb NOT NULL,           -- a Content
    state_delta   jsonb,
    options       jsonb,                    -- adk_run's options (retries taken out)
    role_oid      oid NOT NULL,             -- the job runs as this role
    role_name     name NOT NULL,
    source        text NOT NULL,            -- adk_submit, or the trigger that queued it
    status        text NOT NULL DEFAULT 'queued'
                  CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled', 'waiting')),
    attempts      integer NOT NULL DEFAULT 0,
    max_attempts  integer NOT NULL DEFAULT 1 CHECK (max_attempts >= 1),
    submitted_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    started_at    timestamptz,
    finished_at   timestamptz,
    worker_pid    integer,
    error         text
);
-- claiming (status = 'queued' in id order) and recovery (status = 'running')
CREATE INDEX jobs_status_idx ON adk.jobs (status, id);
-- the fair claim: the roles with queued jobs, their apps, each one's in id order
CREATE INDEX jobs_queued_role_idx ON adk.jobs (role_oid, app_name, id) WHERE status = 'queued';
-- the claim's count of the jobs running now per role and per app: these
-- entries only, not every job the app ever ran (jobs_session_idx)
CREATE INDEX jobs_running_idx ON adk.jobs (role_oid, app_name) WHERE status = 'running';
-- the jobs of one session, in submit order
CREATE INDEX jobs_session_idx ON adk.jobs (app_name, user_id, session_id, id);
-- retention
CREATE INDEX jobs_finished_idx ON adk.jobs (finished_at) WHERE finished_at IS NOT NULL;
COMMENT ON TABLE adk.jobs IS 'Queued runs for the background workers: one row per adk_submit or trigger firing; finished rows are kept for adk.job_retention';
COMMENT ON COLUMN adk.jobs.max_attempts IS '1 + options.retries: how often a job is started again after its worker died or the run raised';

GRANT SELECT ON adk.jobs TO adk_user;
-- Marked for pg_dump in 80_backup.sql, with the role looked up by name on
-- insert (docs/operations.md).

-- The claim, in one place: the job workers run exactly this, and so does
-- the isolation test.  A queued job that no earlier queued or running job
-- of its session holds back: first the oldest such job of the role with
-- the fewest jobs running now and, of that role's apps, the app with the
-- fewest running now -- so one role's (or one app's) thousands of queued
-- jobs never starve another role's or app's job: it is the next one
-- claimed.  If that role and app have none claimable, the oldest of any.
-- The roles and apps with queued jobs are found by a skip scan of
-- jobs_queued_role_idx, and each lookup walks the queue in id order and
-- stops at the first match.  A job is claimable when it is the oldest
-- queued or running job of its session: a subquery per candidate, by
-- jobs_session_idx on the candidate's session (as a NOT EXISTS it was
-- planned as an anti join that read every job of the app per candidate,
-- once PL/pgSQL kept a generic plan).  SKIP LOCKED passes over a job
-- another worker is claiming right now.  Runs as the owner of schema adk
-- (a worker switches to it); nobody else may update adk.jobs.
--
-- Session affinity (docs/workers.md, "Order"): with affinity_ms > 0, a job
-- whose session's last job ran in another worker that is still alive (its
-- pid in live_workers, the job workers' slots) is held for that worker,
-- which kept the session's history (src/runner/prompt_carry.c), for
-- affinity_ms after it became claimable (its submit, or the end of that
-- last job, whichever is later); other claims pass over it until then.  A
-- worker that died is not in live_workers: its sessions are anybody's at
-- once.  The order and the fairness among the jobs a worker may take are
-- the same as without it.
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

-- A job worker claims up to "most" jobs in one transaction: one claim after
-- another, each seeing the ones before it running (so the order and
-- fairness are _claim_job's), with one commit for them all.
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

-- The job workers' and the launcher's own statements (run as the owner of
-- schema adk, through adk_owner_spi_begin in C): what ends a job, what a
-- lost worker leaves, how many jobs a worker could claim now.  Their
-- parameters are named apart from the columns of adk.jobs and
-- adk.invocations: in an SQL function a column of the same name wins.

-- A job ends as its invocation did.  A paused one ('waiting') has not
-- finished: its finished_at is set when the adk_run that answers it ends
-- the invocation.  Returns the job's status (NULL: no such job) and
-- whether a later job of its session is queued (the worker then claims
-- at once: that job is held for it, _claim_job).  In PL/pgSQL, whose
-- plans a worker keeps, where an SQL function's would be made again at
-- every job's end.
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
        RETURNING invocation_id, app_name, user_id, session_id),
    -- the run's nodes still running end with it, unless it is queued
    -- again (its retry starts them again: 62_hitl.sql, attempt)
    r AS (
        UPDATE adk.run_states s
           SET status = CASE WHEN new_status OPERATOR(pg_catalog.=) 'cancelled' THEN 'cancelled'
                             ELSE 'failed' END
          FROM j
         WHERE new_status OPERATOR(pg_catalog.<>) 'queued'
           AND s.app_name OPERATOR(pg_catalog.=) j.app_name
           AND s.user_id OPERATOR(pg_catalog.=) j.user_id
           AND s.session_id OPERATOR(pg_catalog.=) j.session_id
           AND s.invocation_id OPERATOR(pg_catalog.=) j.invocation_id
           AND s.status OPERATOR(pg_catalog.=) 'running')
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
    'A job worker''s record of a run that raised or was cancelled: the job queued again or ended, its running invocation and its running nodes'' run_states rows failed or cancelled.';

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

CREATE FUNCTION adk_submit(app_name text, user_id text, session_id text, message text,
                           state_delta jsonb DEFAULT NULL, options jsonb DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'adk_submit_text' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_submit(text, text, text, text, jsonb, jsonb) IS
    'Queue a run for the background workers; returns its invocation id.  It runs after commit, as the current role.  Options: adk_run''s, and retries.';

CREATE FUNCTION adk_submit(app_name text, user_id text, session_id text, message jsonb,
                           state_delta jsonb DEFAULT NULL, options jsonb DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'adk_submit_content' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_submit(text, text, text, jsonb, jsonb, jsonb) IS
    'adk_submit with a whole Content as the message.';

-- The stored events of one invocation, in order: adk_wait's rows
-- (src/worker/submit.c).  Run as the caller, so the tenancy policies
-- decide what it sees.
CREATE FUNCTION adk._wait_events(p_app text, p_user text, p_session text,
                                       p_invocation text)
RETURNS SETOF adk.run_event
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT e.id::text, e.app_name::text, e.user_id::text, e.session_id::text,
           e.invocation_id::text, e."timestamp", e.event_data, e.seq, false
      FROM adk.events e
     WHERE e.app_name OPERATOR(pg_catalog.=) p_app
       AND e.user_id OPERATOR(pg_catalog.=) p_user
       AND e.session_id OPERATOR(pg_catalog.=) p_session
       AND e.invocation_id OPERATOR(pg_catalog.=) p_invocation
     ORDER BY e.seq
$$;

CREATE FUNCTION adk_wait(invocation_id text, timeout interval DEFAULT NULL)
RETURNS SETOF adk.run_event
AS 'MODULE_PATHNAME', 'adk_wait' LANGUAGE C VOLATILE ROWS 8;
COMMENT ON FUNCTION adk_wait(text, interval) IS
    'Wait until a queued run ends (completed, failed, cancelled or waiting), then return its stored events; raises SQLSTATE 03000 after timeout.';

CREATE FUNCTION adk_cancel(invocation_id text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'adk_cancel' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION adk_cancel(text) IS
    'Cancel a run: a queued job never starts; a running one (in a worker or another backend) is stopped; a paused one (waiting for input) ends cancelled, its requests no longer answerable.  true: there was something to cancel.';

CREATE FUNCTION adk_interrupt(app_name text, user_id text, session_id text)
RETURNS integer
AS 'MODULE_PATHNAME', 'adk_interrupt' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION adk_interrupt(text, text, text) IS
    'Cancel every queued and running run of one session; returns how many.';

CREATE FUNCTION adk._job_trigger() RETURNS trigger
AS 'MODULE_PATHNAME', 'adk_job_trigger' LANGUAGE C;
COMMENT ON FUNCTION adk._job_trigger() IS
    'Row trigger made by adk_create_trigger: queues a run per row change.  Arguments: app, message template, user id column, session id column.';

CREATE FUNCTION adk_create_trigger(tbl regclass, app_name text, message_template text,
                                   user_id_column text, session_id_column text,
                                   events text[] DEFAULT '{INSERT}')
RETURNS text
AS 'MODULE_PATHNAME', 'adk_create_trigger' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_create_trigger(regclass, text, text, text, text, text[]) IS
    'Queue a run of an app for each row inserted, updated or deleted; the message is rendered from the row ({{column}}, {{row}}, {{op}}, {{table}}).  Returns the trigger''s name.';

-- The triggers adk_create_trigger made on a table (all, or the one named),
-- by name: adk_drop_trigger's list (src/worker/trigger.c).
CREATE FUNCTION adk._job_triggers(p_tbl oid, p_name text)
RETURNS SETOF text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT t.tgname::text
      FROM pg_catalog.pg_trigger t
      JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) t.tgfoid
      JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
     WHERE t.tgrelid OPERATOR(pg_catalog.=) p_tbl AND NOT t.tgisinternal
       AND n.nspname OPERATOR(pg_catalog.=) 'adk'
       AND p.proname OPERATOR(pg_catalog.=) '_job_trigger'
       AND (p_name IS NULL OR t.tgname OPERATOR(pg_catalog.=) p_name)
     ORDER BY 1
$$;

CREATE FUNCTION adk_drop_trigger(tbl regclass, name text DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'adk_drop_trigger' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_drop_trigger(regclass, text) IS
    'Drop a trigger made by adk_create_trigger (all of them on the table when name is NULL); returns how many.';

-- A trigger on adk._job_trigger made by hand (CREATE TRIGGER, a restore
-- of one) is checked as adk_create_trigger checks its arguments, when it
-- is created: an app that does not exist, or a column the table does not
-- have, is an error then, not at each row the table gets.  The event
-- trigger fires for every CREATE TRIGGER in the database, whoever runs
-- it, so its function runs as the owner of schema adk (the roles that
-- create triggers need no grant on schema adk for triggers of their own).
CREATE FUNCTION adk._job_trigger_check(tbl oid, trigger oid) RETURNS void
AS 'MODULE_PATHNAME', 'adk_job_trigger_check' LANGUAGE C VOLATILE STRICT;
CREATE FUNCTION adk._job_trigger_created() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    c record;
BEGIN
    FOR c IN
        SELECT t.tgrelid, t.oid
          FROM pg_catalog.pg_event_trigger_ddl_commands() d
          JOIN pg_catalog.pg_trigger t ON t.oid OPERATOR(pg_catalog.=) d.objid
         WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_trigger'::pg_catalog.regclass
           AND t.tgfoid OPERATOR(pg_catalog.=) 'adk._job_trigger()'::pg_catalog.regprocedure
    LOOP
        PERFORM adk._job_trigger_check(c.tgrelid, c.oid);
    END LOOP;
END
$$;
CREATE EVENT TRIGGER adk_job_trigger_check ON ddl_command_end
    WHEN TAG IN ('CREATE TRIGGER')
    EXECUTE FUNCTION adk._job_trigger_created();
