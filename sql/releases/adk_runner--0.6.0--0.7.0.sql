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

CREATE OR REPLACE FUNCTION adk._claim_job(worker_pid integer)
RETURNS SETOF adk.jobs
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    fair_role oid;
    fair_app text;
    next_id bigint;
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

-- the body of adk_create_session, renamed adk._create_session and made
-- SECURITY INVOKER by 85_tenancy.sql
CREATE OR REPLACE FUNCTION adk._create_session(app_name text, user_id text,
                                   session_id text DEFAULT NULL,
                                   state jsonb DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    now_ms timestamptz := date_trunc('milliseconds', clock_timestamp());
    app_delta jsonb;
    user_delta jsonb;
    created adk.sessions;
BEGIN
    PERFORM adk._check_id('app name', app_name);
    PERFORM adk._check_id('user id', user_id);
    IF session_id IS NULL THEN
        session_id := gen_random_uuid()::text;
    ELSE
        PERFORM adk._check_id('session id', session_id);
    END IF;
    IF state IS NOT NULL AND jsonb_typeof(state) <> 'object' THEN
        RAISE EXCEPTION 'session state must be a JSON object' USING ERRCODE = '22023';
    END IF;
    IF state ?| ARRAY['app:', 'user:'] THEN
        RAISE EXCEPTION 'state key "%" has no name after its prefix',
            CASE WHEN state ? 'app:' THEN 'app:' ELSE 'user:' END USING ERRCODE = '22023';
    END IF;

    INSERT INTO adk.sessions AS s (id, app_name, user_id, state, create_time, update_time)
    VALUES (session_id, app_name, user_id, adk._scope_state(state, NULL), now_ms, now_ms)
    ON CONFLICT DO NOTHING
    RETURNING s.* INTO created;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'session "%" already exists for app "%" and user "%"',
            session_id, app_name, user_id USING ERRCODE = '23505';
    END IF;

    -- app: and user: keys merge into their scope's row (created if missing,
    -- as ADK does on session creation).  Without such keys the row is only
    -- created if missing, not locked: ON CONFLICT DO UPDATE locks the row
    -- it finds even when its WHERE then updates nothing, and every session
    -- of the app (every job worker creating one) would wait for the others'
    -- commits.
    app_delta := adk._scope_state(state, 'app:');
    user_delta := adk._scope_state(state, 'user:');
    IF app_delta <> '{}'::jsonb THEN
        INSERT INTO adk.app_states AS a (app_name, state, update_time)
        VALUES (app_name, app_delta, now_ms)
        ON CONFLICT ON CONSTRAINT app_states_pkey DO UPDATE
            SET state = a.state || EXCLUDED.state,
                update_time = GREATEST(a.update_time, EXCLUDED.update_time);
    ELSE
        INSERT INTO adk.app_states AS a (app_name, state, update_time)
        VALUES (app_name, app_delta, now_ms)
        ON CONFLICT ON CONSTRAINT app_states_pkey DO NOTHING;
    END IF;
    IF user_delta <> '{}'::jsonb THEN
        INSERT INTO adk.user_states AS u (app_name, user_id, state, update_time)
        VALUES (app_name, user_id, user_delta, now_ms)
        ON CONFLICT ON CONSTRAINT user_states_pkey DO UPDATE
            SET state = u.state || EXCLUDED.state,
                update_time = GREATEST(u.update_time, EXCLUDED.update_time);
    ELSE
        INSERT INTO adk.user_states AS u (app_name, user_id, state, update_time)
        VALUES (app_name, user_id, user_delta, now_ms)
        ON CONFLICT ON CONSTRAINT user_states_pkey DO NOTHING;
    END IF;

    RETURN adk._session_json(created.id, created.app_name, created.user_id, created.state,
                             created.update_time, '[]'::jsonb);
END
$$;
