-- adk_runner 0.3.0 -> 0.4.0: ALTER EXTENSION adk_runner UPDATE TO '0.4.0'.
-- Every change to the SQL surface since release 0.3.0, in the order the
-- full install script (sql/install/) makes it.  test/t/024_upgrade.pl
-- checks that a 0.3.0 schema updated with this script equals a fresh
-- 0.4.0 install (docs/releasing.md).

\echo Use "ALTER EXTENSION adk_runner UPDATE" to load this file. \quit

-- adk.models.options.max_request_bytes: a model's own bound on its
-- requests (sql/install/40_models.sql)
CREATE OR REPLACE FUNCTION adk._models_check_options() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    k text;
    v jsonb;
    problem text;
BEGIN
    IF NEW.name IS NULL OR NEW.name = '' THEN
        RAISE EXCEPTION 'model name must not be empty' USING ERRCODE = '22023';
    END IF;
    IF NEW.provider IS NULL OR NEW.provider NOT IN ('openai', 'gemini', 'anthropic') THEN
        RAISE EXCEPTION 'unknown model provider "%"', NEW.provider USING ERRCODE = '22023',
            HINT = 'Use openai (any OpenAI-compatible Chat Completions server), gemini or anthropic.';
    END IF;
    IF NEW.endpoint IS NULL OR NEW.endpoint !~* '^https?://[^/?#@[:space:]]+(/[^?#[:space:]]*)?$' THEN
        RAISE EXCEPTION 'invalid endpoint "%" for model "%"', NEW.endpoint, NEW.name USING ERRCODE = '22023',
            HINT = 'Give the base URL as the provider''s SDK takes it, e.g. https://api.openai.com/v1, without credentials, query or fragment.';
    END IF;
    -- read as libcurl will read it when it connects: a port that is not a
    -- number ("http://127.0.0.1:56102:56103") is refused here
    problem := adk._endpoint_problem(NEW.endpoint);
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION 'invalid endpoint "%" for model "%"', NEW.endpoint, NEW.name USING ERRCODE = '22023',
            DETAIL = problem || '.',
            HINT = 'Give the base URL as the provider''s SDK takes it, e.g. https://api.openai.com/v1, without credentials, query or fragment.';
    END IF;
    IF NEW.model IS NULL OR NEW.model = '' THEN
        RAISE EXCEPTION 'model "%" needs the provider''s model id', NEW.name USING ERRCODE = '22023';
    END IF;
    IF NEW.api_key_env IS NOT NULL AND NEW.api_key_secret IS NOT NULL THEN
        RAISE EXCEPTION 'model "%" takes its key from an environment variable or a secret, not both', NEW.name
            USING ERRCODE = '22023';
    END IF;
    IF NEW.api_key_env !~ '^[A-Za-z_][A-Za-z0-9_]*$' THEN
        RAISE EXCEPTION 'invalid environment variable name "%"', NEW.api_key_env USING ERRCODE = '22023';
    END IF;
    IF NEW.api_key_secret IS NOT NULL AND NOT EXISTS (SELECT 1 FROM adk.secrets s WHERE s.name = NEW.api_key_secret) THEN
        RAISE EXCEPTION 'secret "%" does not exist', NEW.api_key_secret USING ERRCODE = '42704',
            HINT = 'Store it first with adk_set_secret().';
    END IF;
    IF NEW.options IS NULL OR jsonb_typeof(NEW.options) <> 'object' THEN
        RAISE EXCEPTION 'model options must be a JSON object' USING ERRCODE = '22023';
    END IF;
    FOR k, v IN SELECT * FROM jsonb_each(NEW.options) LOOP
        IF k IN ('temperature', 'top_p', 'presence_penalty', 'frequency_penalty') THEN
            IF jsonb_typeof(v) <> 'number' THEN
                RAISE EXCEPTION 'model option "%" must be a number', k USING ERRCODE = '22023';
            END IF;
        ELSIF k IN ('max_output_tokens', 'top_k', 'seed', 'timeout_ms', 'connect_timeout_ms', 'retries') THEN
            IF jsonb_typeof(v) <> 'number' OR v::numeric <> trunc(v::numeric) OR v::numeric < 0 THEN
                RAISE EXCEPTION 'model option "%" must be a non-negative integer', k USING ERRCODE = '22023';
            END IF;
        ELSIF k = 'stop_sequences' THEN
            IF jsonb_typeof(v) <> 'array' OR EXISTS (SELECT 1 FROM jsonb_array_elements(v) e WHERE jsonb_typeof(e) <> 'string') THEN
                RAISE EXCEPTION 'model option "stop_sequences" must be an array of strings' USING ERRCODE = '22023';
            END IF;
        ELSIF k = 'max_request_bytes' THEN
            -- the model's own bound on a request; adk.max_request_bytes
            -- still holds (the smaller of the two applies)
            IF jsonb_typeof(v) <> 'number' OR v::numeric <> trunc(v::numeric)
               OR v::numeric < 1 OR v::numeric > 2147483647 THEN
                RAISE EXCEPTION 'model option "max_request_bytes" must be an integer between 1 and 2147483647'
                    USING ERRCODE = '22023',
                    HINT = 'Give the largest request body in bytes the model may be sent; adk.max_request_bytes still applies when it is smaller.';
            END IF;
        ELSIF k = 'headers' THEN
            NULL;   -- checked below, by the rules every call's config is held to
        ELSIF k = 'system_instruction' THEN
            IF jsonb_typeof(v) <> 'string' THEN
                RAISE EXCEPTION 'model option "system_instruction" must be a string' USING ERRCODE = '22023';
            END IF;
        ELSE
            RAISE EXCEPTION 'unknown model option "%"', k USING ERRCODE = '22023',
                HINT = 'Known options: temperature, max_output_tokens, top_p, top_k, stop_sequences, presence_penalty, frequency_penalty, seed, system_instruction, timeout_ms, connect_timeout_ms, retries, max_request_bytes, headers.';
        END IF;
    END LOOP;
    -- headers, timeout_ms, connect_timeout_ms, retries (model/guard.c)
    PERFORM adk._check_call_options(NEW.options);
    -- an INSERT keeps the updated_at it carries (a restored row its own)
    IF TG_OP = 'UPDATE' THEN
        NEW.updated_at := now();
    END IF;
    RETURN NEW;
END
$$;
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
