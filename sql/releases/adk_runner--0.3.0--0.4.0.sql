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
-- ---------------------------------------------------------------------
-- The runner's statements (src/runner/*.c): what a run reads and writes
-- of the extension's tables, each a function the C code calls through
-- SPI in one line.  In plpgsql, which keeps each statement's plan for the
-- session (an SQL-language function would plan its body at every call).
-- All but the artifact reads run as the owner of schema adk, and nobody
-- else may call them (90_privileges.sql); the artifact reads run as the
-- invoking role, as the artifact API does.
-- ---------------------------------------------------------------------

-- An invocation starts (or resumes): its row in adk.invocations, running.
CREATE FUNCTION adk._invocation_start(p_invocation text, p_app text, p_user text, p_session text,
                                      p_agent text, p_role text)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    INSERT INTO adk.invocations AS i
           (invocation_id, app_name, user_id, session_id, agent, status, role_name, backend_pid)
    VALUES (p_invocation, p_app, p_user, p_session, p_agent, 'running', p_role, pg_backend_pid())
    ON CONFLICT (invocation_id) DO UPDATE
       SET status = 'running', agent = EXCLUDED.agent, resumed = i.resumed + 1,
           ended_at = NULL, backend_pid = EXCLUDED.backend_pid, role_name = EXCLUDED.role_name;
END
$$;

-- An invocation ends: its row gets its status, counts and error.  A queued
-- run that paused (its job 'waiting') and is resumed by adk_run: its job
-- follows the invocation, and has finished only now (retention counts
-- from here).
CREATE FUNCTION adk._invocation_end(p_invocation text, p_status text, p_model_calls integer,
                                    p_input_tokens bigint, p_output_tokens bigint,
                                    p_error_code text, p_error_message text,
                                    p_store_ms double precision)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE adk.invocations i
       SET status = p_status, ended_at = clock_timestamp(),
           model_calls = i.model_calls + p_model_calls,
           input_tokens = i.input_tokens + p_input_tokens,
           output_tokens = i.output_tokens + p_output_tokens,
           error_code = p_error_code, error_message = p_error_message,
           store_ms = i.store_ms + p_store_ms
     WHERE i.invocation_id = p_invocation;
    UPDATE adk.jobs j
       SET status = p_status,
           finished_at = CASE WHEN p_status = 'waiting' THEN NULL ELSE clock_timestamp() END,
           error = CASE WHEN p_status = 'failed' THEN concat_ws(': ', p_error_code, p_error_message) END
     WHERE j.invocation_id = p_invocation AND j.status = 'waiting';
END
$$;

-- The invocation's own events, newest first (a retried queued run goes on
-- from them): not those another runtime appended under its id.
CREATE FUNCTION adk._invocation_events(p_app text, p_user text, p_session text, p_invocation text)
RETURNS SETOF jsonb
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT e.event_data FROM adk.events e
     WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
       AND e.invocation_id = p_invocation
       AND (e.event_data #> '{custom_metadata,adk_appended_by}'::text[]) IS NULL
     ORDER BY e.seq DESC;
END
$$;

-- An app's row as a run reads it: root agent, auto_create_session, plugins,
-- max_llm_calls and whether compaction is set.  No row: no such app.
CREATE FUNCTION adk._app_definition(p_app text)
RETURNS TABLE (r_root_agent text, r_auto_create_session boolean, r_plugins text[],
               r_max_llm_calls integer, r_compaction boolean)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT a.root_agent, a.auto_create_session, a.plugins, a.max_llm_calls, a.compaction IS NOT NULL
      FROM adk.apps a WHERE a.name = p_app;
END
$$;

-- The agents of the tree under p_root, in the tree's order, with what a
-- run needs of each (its model: its own or the nearest ancestor's).
CREATE FUNCTION adk._agent_definitions(p_root text)
RETURNS TABLE (r_name text, r_parent text, r_kind text, r_model text, r_instruction text,
               r_description text, r_tools text[], r_output_key text,
               r_disallow_transfer_to_parent boolean, r_disallow_transfer_to_peers boolean,
               r_max_iterations integer, r_include_contents_none boolean,
               r_generate_config jsonb)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT t.name, t.parent, a.kind, adk._agent_model(a.name), a.instruction,
           a.description, a.tools, a.output_key, a.disallow_transfer_to_parent,
           a.disallow_transfer_to_peers, a.max_iterations,
           a.include_contents = 'none', a.generate_config
      FROM adk._agent_tree(p_root) t JOIN adk.agents a ON a.name = t.name;
END
$$;

-- A tool's row as a run calls it.  No row: no such tool.
CREATE FUNCTION adk._tool_definition(p_name text)
RETURNS TABLE (r_function oid, r_description text, r_parameters jsonb, r_long_running boolean,
               r_require_confirmation boolean)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT t.function::oid, t.description, t.parameters, t.long_running, t.require_confirmation
      FROM adk.tools t WHERE t.name = p_name;
END
$$;

-- A plugin's callbacks, in the order of adk.plugins' columns (NULL: not
-- set).  No row: no such plugin.
CREATE FUNCTION adk._plugin_definition(p_name text)
RETURNS TABLE (r_name text, r_on_user_message oid, r_before_run oid, r_on_event oid,
               r_after_run oid, r_before_agent oid, r_after_agent oid, r_before_model oid,
               r_after_model oid, r_before_tool oid, r_after_tool oid, r_on_model_error oid,
               r_on_tool_error oid)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT p.name, p.on_user_message::oid, p.before_run::oid, p.on_event::oid, p.after_run::oid,
           p.before_agent::oid, p.after_agent::oid, p.before_model::oid, p.after_model::oid,
           p.before_tool::oid, p.after_tool::oid, p.on_model_error::oid, p.on_tool_error::oid
      FROM adk.plugins p WHERE p.name = p_name;
END
$$;

-- Whether a budget with a limit covers a model call of p_user in p_app
-- as p_role (if none does, the call takes nothing from adk._budget_take).
CREATE FUNCTION adk._budget_applies(p_app text, p_user text, p_role name)
RETURNS boolean
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN EXISTS (SELECT FROM adk.budgets x
                    WHERE x.app_name = p_app
                      AND (x.user_id IS NULL OR x.user_id = p_user)
                      AND (x.role_name IS NULL OR x.role_name = p_role)
                      AND (x.max_tokens IS NOT NULL OR x.max_model_calls IS NOT NULL));
END
$$;

-- An app's compaction settings as a run follows them (0 where a setting
-- is not given; the summarizer: its own, else the root agent's model),
-- and whether the app names its own summarizer.  No row: compaction off.
CREATE FUNCTION adk._compaction_settings(p_app text)
RETURNS TABLE (r_interval integer, r_overlap integer, r_token_threshold bigint,
               r_event_retention integer, r_summarizer text, r_own_summarizer boolean)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT coalesce((a.compaction ->> 'compaction_interval')::integer, 0),
           coalesce((a.compaction ->> 'overlap_size')::integer, 0),
           coalesce((a.compaction ->> 'token_threshold')::bigint, 0),
           coalesce((a.compaction ->> 'event_retention_size')::integer, 0),
           coalesce(a.compaction ->> 'summarizer_model', adk._agent_model(a.root_agent)),
           a.compaction ? 'summarizer_model'
      FROM adk.apps a
     WHERE a.name = p_app AND a.compaction IS NOT NULL;
END
$$;

-- The settings of an app that the built-in tools follow.  No row: no
-- such app.
CREATE FUNCTION adk._app_builtin_options(p_app text)
RETURNS TABLE (r_save_input_blobs boolean, r_add_to_memory boolean)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT a.save_input_blobs_as_artifacts, a.add_to_memory FROM adk.apps a WHERE a.name = p_app;
END
$$;

-- The app's memory embedding model, when it has one and the query (NULL:
-- none, adding entries) has a word to embed; else NULL.
CREATE FUNCTION adk._memory_embedding_model(p_app text, p_query text)
RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN (SELECT a.memory_embedding_model FROM adk.apps a
             WHERE a.name = p_app AND a.memory_embedding_model IS NOT NULL
               AND (p_query IS NULL OR p_query ~ '[[:alnum:]]'));
END
$$;

-- The artifact names of a session and of its user (user: ones), sorted.
-- As the invoking role.
CREATE FUNCTION adk._artifact_names(p_app text, p_user text, p_session text)
RETURNS SETOF text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT DISTINCT a.filename FROM adk.artifacts a
     WHERE a.app_name = p_app AND a.user_id = p_user
       AND (a.session_id = p_session OR a.session_id = '')
     ORDER BY 1;
END
$$;

-- The latest version of an artifact of a session (or of its user, for a
-- user: name): its data and MIME type.  No row: none.  As the invoking
-- role.
CREATE FUNCTION adk._artifact_latest(p_app text, p_user text, p_session text, p_filename text)
RETURNS TABLE (r_data bytea, r_mime_type text)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT a.data, a.mime_type FROM adk.artifacts a
     WHERE a.app_name = p_app AND a.user_id = p_user
       AND a.session_id = adk._artifact_scope(p_session, p_filename)
       AND a.filename = p_filename
     ORDER BY a.version DESC LIMIT 1;
END
$$;

-- A span of a run's trace stored; p_queued: also queued for the OTLP
-- exporter (adk.span_exports).
CREATE FUNCTION adk._span_insert(p_trace_id text, p_span_id text, p_parent_span_id text,
                                 p_name text, p_kind text, p_start_time timestamptz,
                                 p_end_time timestamptz, p_status_code text,
                                 p_status_message text, p_attributes jsonb, p_events jsonb,
                                 p_app text, p_user text, p_session text, p_invocation text,
                                 p_role name, p_queued boolean)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    ref bigint;
BEGIN
    INSERT INTO adk.spans (trace_id, span_id, parent_span_id, name, kind, start_time, end_time,
                           status_code, status_message, attributes, events, app_name, user_id,
                           session_id, invocation_id, role_name)
    VALUES (p_trace_id, p_span_id, p_parent_span_id, p_name, p_kind, p_start_time, p_end_time,
            p_status_code, p_status_message, p_attributes, p_events, p_app, p_user, p_session,
            p_invocation, p_role)
    RETURNING id INTO ref;
    IF p_queued THEN
        INSERT INTO adk.span_exports (span_ref) VALUES (ref);
    END IF;
END
$$;

-- Spans older than p_secs seconds go (adk.span_retention).
CREATE FUNCTION adk._spans_purge(p_secs double precision)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    DELETE FROM adk.spans s WHERE s.created_at < now() - make_interval(secs => p_secs);
END
$$;
-- the new functions as 90_privileges.sql's loop leaves them: PUBLIC's
-- EXECUTE taken back, the artifact reads granted to adk_user
REVOKE ALL ON FUNCTION adk._invocation_start(text, text, text, text, text, text),
    adk._invocation_end(text, text, integer, bigint, bigint, text, text, double precision),
    adk._invocation_events(text, text, text, text), adk._app_definition(text),
    adk._agent_definitions(text), adk._tool_definition(text), adk._plugin_definition(text),
    adk._budget_applies(text, text, name), adk._compaction_settings(text),
    adk._app_builtin_options(text),
    adk._memory_embedding_model(text, text), adk._artifact_names(text, text, text),
    adk._artifact_latest(text, text, text, text),
    adk._span_insert(text, text, text, text, text, timestamptz, timestamptz, text, text, jsonb,
                     jsonb, text, text, text, text, name, boolean),
    adk._spans_purge(double precision)
  FROM PUBLIC;
GRANT EXECUTE ON FUNCTION adk._artifact_names(text, text, text),
    adk._artifact_latest(text, text, text, text) TO adk_user;
-- Event log (30_event_log.sql): the event's id, as the view's last column.
-- CREATE OR REPLACE VIEW replaces the view's options too: security_invoker
-- (85_tenancy.sql) is given again.
CREATE OR REPLACE VIEW adk.event_log WITH (security_invoker = true) AS
SELECT e.app_name,
       e.user_id,
       e.session_id,
       e.seq,
       e."timestamp" AS time,
       e.invocation_id,
       e.event_data ->> 'author' AS author,
       e.event_data #>> '{content,role}' AS role,
       (SELECT string_agg(p ->> 'text', '')
          FROM adk._parts(e.event_data -> 'content') p
         WHERE p ? 'text') AS text,
       (SELECT string_agg(format('%s(%s)', p #>> '{function_call,name}',
                                 coalesce(p #> '{function_call,args}', '{}'::jsonb)), '; ')
          FROM adk._parts(e.event_data -> 'content') p
         WHERE p ? 'function_call') AS function_calls,
       (SELECT string_agg(format('%s -> %s', p #>> '{function_response,name}',
                                 p #> '{function_response,response}'), '; ')
          FROM adk._parts(e.event_data -> 'content') p
         WHERE p ? 'function_response') AS function_responses,
       nullif(concat_ws(': ', e.event_data ->> 'error_code',
                        e.event_data ->> 'error_message'), '') AS error,
       nullif(e.event_data #> '{actions,state_delta}', '{}'::jsonb) AS state_delta,
       e.event_data ->> 'branch' AS branch,
       e.event_data -> 'long_running_tool_ids' AS long_running_tool_ids,
       e.id AS event_id
  FROM adk.events e;
COMMENT ON VIEW adk.event_log IS
    'Events flattened for reading: seq, time, author, role, text, function calls and responses, errors, the event id.';

-- Statistics (84_spans.sql): times in milliseconds rounded to a tenth.
-- The columns change type (double precision to numeric), which CREATE OR
-- REPLACE VIEW cannot do: the views are made again, with their grant.
DROP VIEW adk.stat_models;
DROP VIEW adk.stat_tools;
CREATE VIEW adk.stat_models WITH (security_invoker = true) AS
SELECT m.model, m.provider,
       pg_catalog.count(*) AS calls,
       pg_catalog.count(*) FILTER (WHERE m.error_code IS NOT NULL) AS errors,
       coalesce(pg_catalog.sum(m.input_tokens), 0)::bigint AS input_tokens,
       coalesce(pg_catalog.sum(m.output_tokens), 0)::bigint AS output_tokens,
       coalesce(pg_catalog.sum(m.cached_tokens), 0)::bigint AS cached_tokens,
       pg_catalog.round(pg_catalog.sum(m.latency_ms)::numeric, 1) AS total_time_ms,
       pg_catalog.round(pg_catalog.avg(m.latency_ms)::numeric, 1) AS mean_time_ms,
       pg_catalog.round(pg_catalog.avg(m.first_chunk_ms)::numeric, 1) AS mean_first_chunk_ms,
       (SELECT r.reset_at FROM adk.stat_reset r) AS stats_reset
  FROM adk.model_calls m
 WHERE m.created_at OPERATOR(pg_catalog.>=) (SELECT r.reset_at FROM adk.stat_reset r)
 GROUP BY m.model, m.provider;
COMMENT ON VIEW adk.stat_models IS 'Per model: calls, errors, tokens (input, output, cached) and time since adk_stat_reset(), from adk.model_calls.';

CREATE VIEW adk.stat_tools WITH (security_invoker = true) AS
SELECT s.attributes OPERATOR(pg_catalog.->>) 'gen_ai.tool.name' AS tool,
       pg_catalog.count(*) AS calls,
       pg_catalog.count(*) FILTER (WHERE s.status_code OPERATOR(pg_catalog.=) 'ERROR') AS errors,
       pg_catalog.round(pg_catalog.sum((s.attributes OPERATOR(pg_catalog.->>) 'adk.tool.duration_ms')::numeric), 1) AS total_time_ms,
       pg_catalog.round(pg_catalog.avg((s.attributes OPERATOR(pg_catalog.->>) 'adk.tool.duration_ms')::numeric), 1) AS mean_time_ms,
       (SELECT r.reset_at FROM adk.stat_reset r) AS stats_reset
  FROM adk.spans s
 WHERE s.attributes OPERATOR(pg_catalog.->>) 'gen_ai.operation.name' OPERATOR(pg_catalog.=) 'execute_tool'
   AND s.created_at OPERATOR(pg_catalog.>=) (SELECT r.reset_at FROM adk.stat_reset r)
 GROUP BY 1;
COMMENT ON VIEW adk.stat_tools IS 'Per tool: calls, errors and time since adk_stat_reset(), from the execute_tool spans.';
GRANT SELECT ON adk.stat_models, adk.stat_tools TO adk_user;

-- Costs (85_tenancy.sql): the cost rounded to millionths.
CREATE OR REPLACE VIEW adk.costs WITH (security_invoker = true) AS
SELECT c.app_name, c.user_id, i.agent, c.model,
       (pg_catalog.timezone('UTC', c.created_at))::date AS day,
       pg_catalog.count(*) AS model_calls,
       pg_catalog.sum(coalesce(c.input_tokens, 0)) AS input_tokens,
       pg_catalog.sum(coalesce(c.output_tokens, 0)) AS output_tokens,
       pg_catalog.sum(x.cached) AS cached_input_tokens,
       -- OPERATOR() forms share one precedence: every product is bracketed;
       -- the cost is rounded to millionths of the currency (a person reads
       -- 0.000125, not 24 decimals)
       pg_catalog.round(pg_catalog.sum(((coalesce(c.input_tokens, 0) OPERATOR(pg_catalog.-) x.cached)
                       OPERATOR(pg_catalog.*) (m.price ->> 'input')::numeric)
                      OPERATOR(pg_catalog.+)
                      (x.cached OPERATOR(pg_catalog.*)
                       coalesce(m.price ->> 'cached_input', m.price ->> 'input')::numeric)
                      OPERATOR(pg_catalog.+)
                      (coalesce(c.output_tokens, 0) OPERATOR(pg_catalog.*) (m.price ->> 'output')::numeric))
           OPERATOR(pg_catalog./) 1000000, 6) AS cost
  FROM adk.model_calls c
  LEFT JOIN adk.invocations i ON i.invocation_id OPERATOR(pg_catalog.=) c.invocation_id
  LEFT JOIN adk.models m ON m.name OPERATOR(pg_catalog.=) c.model
 CROSS JOIN LATERAL (SELECT coalesce((c.response #>> '{usage_metadata,cached_content_token_count}')::bigint, 0)
                            AS cached) x
 GROUP BY 1, 2, 3, 4, 5;

-- Runner (60_runner.sql): adk_run_summary, granted as 90_privileges.sql's
-- loop grants the API.
-- ---------------------------------------------------------------------
-- adk_run_summary: what a run did, one short line per event, for the
-- common "what did my agent just do" question without \x:
--   SELECT * FROM adk_run_summary('weather_app', 'user-1', 'session-1');
-- The run is the given invocation, or else the one of the session's
-- newest event that has an invocation id.  Each line is the event's text,
-- calls, responses and error (as adk.event_log shows them), joined by
-- " | " and cut to 100 characters.  It reads as the caller: row-level
-- security applies, and a session the caller cannot see does not exist.
-- ---------------------------------------------------------------------
CREATE FUNCTION adk_run_summary(app_name text, user_id text, session_id text,
                                invocation_id text DEFAULT NULL)
RETURNS TABLE (seq bigint, author text, event text)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT adk._session_not_found($1, $2, $3)
     WHERE NOT EXISTS (SELECT 1 FROM adk.sessions s
                        WHERE s.app_name OPERATOR(pg_catalog.=) $1
                          AND s.user_id OPERATOR(pg_catalog.=) $2
                          AND s.id OPERATOR(pg_catalog.=) $3);
    SELECT l.seq, l.author,
           CASE WHEN pg_catalog.length(x.line) OPERATOR(pg_catalog.>) 100
                THEN pg_catalog.left(x.line, 99) OPERATOR(pg_catalog.||) '…'
                ELSE x.line END
      FROM adk.event_log l
     CROSS JOIN LATERAL (
           SELECT pg_catalog.concat_ws(' | ', l.text,
                                       'call ' OPERATOR(pg_catalog.||) l.function_calls,
                                       'response ' OPERATOR(pg_catalog.||) l.function_responses,
                                       'error ' OPERATOR(pg_catalog.||) l.error) AS line) x
     WHERE l.app_name OPERATOR(pg_catalog.=) $1
       AND l.user_id OPERATOR(pg_catalog.=) $2
       AND l.session_id OPERATOR(pg_catalog.=) $3
       AND l.invocation_id OPERATOR(pg_catalog.=) coalesce($4,
               (SELECT e.invocation_id FROM adk.events e
                 WHERE e.app_name OPERATOR(pg_catalog.=) $1
                   AND e.user_id OPERATOR(pg_catalog.=) $2
                   AND e.session_id OPERATOR(pg_catalog.=) $3
                   AND e.invocation_id OPERATOR(pg_catalog.<>) ''
                 ORDER BY e.seq DESC LIMIT 1))
     ORDER BY l.seq
$$;
COMMENT ON FUNCTION adk_run_summary(text, text, text, text) IS
    'One line per event of a run (the given invocation, or the session''s newest): seq, author, and its text, calls, responses and error.';
REVOKE ALL ON FUNCTION adk_run_summary(text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION adk_run_summary(text, text, text, text) TO adk_user;
-- sql/install/87_lifecycle.sql: session retention and erasure
ALTER TABLE adk.apps
    ADD COLUMN session_idle_ttl interval
        CHECK (session_idle_ttl OPERATOR(pg_catalog.>) '0'::interval),
    ADD COLUMN max_sessions_per_user integer
        CHECK (max_sessions_per_user OPERATOR(pg_catalog.>) 0),
    ADD COLUMN session_expiry text NOT NULL DEFAULT 'delete'
        CHECK (session_expiry OPERATOR(pg_catalog.=) ANY (ARRAY['delete', 'memory']));
COMMENT ON COLUMN adk.apps.session_idle_ttl IS
    'a session idle this long (no event, since sessions.update_time) is due for expiry; NULL: never';
COMMENT ON COLUMN adk.apps.max_sessions_per_user IS
    'each user keeps this many sessions, the most recently active; older ones are due for expiry; NULL: no limit';
COMMENT ON COLUMN adk.apps.session_expiry IS
    'what expiry does: ''delete'' the session, or add it to the user''s ''memory'' and then delete it';

CREATE FUNCTION adk_define_app_retention(app_name text,
                                         idle_ttl interval DEFAULT NULL,
                                         max_sessions_per_user integer DEFAULT NULL,
                                         on_expiry text DEFAULT 'delete')
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF idle_ttl OPERATOR(pg_catalog.<=) '0'::interval THEN
        RAISE EXCEPTION 'idle_ttl must be positive' USING ERRCODE = '22023',
            DETAIL = 'NULL keeps idle sessions forever.';
    END IF;
    IF max_sessions_per_user OPERATOR(pg_catalog.<=) 0 THEN
        RAISE EXCEPTION 'max_sessions_per_user must be positive' USING ERRCODE = '22023',
            DETAIL = 'NULL sets no limit.';
    END IF;
    IF on_expiry IS NULL OR on_expiry OPERATOR(pg_catalog.<>) ALL (ARRAY['delete', 'memory']) THEN
        RAISE EXCEPTION 'unknown expiry action "%"', on_expiry USING ERRCODE = '22023',
            HINT = 'Use ''delete'', or ''memory'' to add the session to memory before deleting it.';
    END IF;
    UPDATE adk.apps a
       SET session_idle_ttl = $2, max_sessions_per_user = $3, session_expiry = $4
     WHERE a.name OPERATOR(pg_catalog.=) $1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'app "%" does not exist', app_name USING ERRCODE = '42704',
            HINT = 'Define it first with adk_define_app().';
    END IF;
END
$$;
COMMENT ON FUNCTION adk_define_app_retention(text, interval, integer, text) IS
    'Set an app''s session retention: idle_ttl (since the last activity; NULL: never), max_sessions_per_user (the most recently active stay; NULL: no limit), on_expiry (''delete'' or ''memory''). The launcher deletes due sessions in batches.';

-- What is due, and whether something holds it (waiting: never deleted by
-- the sweep).  Read as the querying role: row-level security applies.
CREATE VIEW adk.sessions_due WITH (security_invoker = true) AS
SELECT s.app_name, s.user_id, s.id AS session_id, s.update_time AS last_activity,
       CASE WHEN s.session_idle_ttl IS NOT NULL
                 AND s.update_time OPERATOR(pg_catalog.<)
                     (pg_catalog.now() OPERATOR(pg_catalog.-) s.session_idle_ttl)
            THEN 'idle' ELSE 'over_limit' END AS reason,
       s.session_expiry AS action,
       (EXISTS (SELECT 1 FROM adk.invocations i
                 WHERE i.app_name OPERATOR(pg_catalog.=) s.app_name
                   AND i.user_id OPERATOR(pg_catalog.=) s.user_id
                   AND i.session_id OPERATOR(pg_catalog.=) s.id
                   AND i.status OPERATOR(pg_catalog.=) ANY (ARRAY['running', 'waiting']))
        OR EXISTS (SELECT 1 FROM adk.run_states r
                    WHERE r.app_name OPERATOR(pg_catalog.=) s.app_name
                      AND r.user_id OPERATOR(pg_catalog.=) s.user_id
                      AND r.session_id OPERATOR(pg_catalog.=) s.id
                      AND r.status OPERATOR(pg_catalog.=) ANY (ARRAY['running', 'waiting']))
        OR EXISTS (SELECT 1 FROM adk.jobs j
                    WHERE j.app_name OPERATOR(pg_catalog.=) s.app_name
                      AND j.user_id OPERATOR(pg_catalog.=) s.user_id
                      AND j.session_id OPERATOR(pg_catalog.=) s.id
                      AND j.status OPERATOR(pg_catalog.=) ANY (ARRAY['queued', 'running', 'waiting'])))
           AS waiting
  FROM (SELECT x.app_name, x.user_id, x.id, x.update_time,
               a.session_idle_ttl, a.max_sessions_per_user, a.session_expiry,
               pg_catalog.row_number() OVER (PARTITION BY x.app_name, x.user_id
                                             ORDER BY x.update_time DESC, x.id DESC) AS newest
          FROM adk.sessions x
          JOIN adk.apps a ON a.name OPERATOR(pg_catalog.=) x.app_name
         WHERE a.session_idle_ttl IS NOT NULL OR a.max_sessions_per_user IS NOT NULL) s
 WHERE (s.session_idle_ttl IS NOT NULL
        AND s.update_time OPERATOR(pg_catalog.<)
            (pg_catalog.now() OPERATOR(pg_catalog.-) s.session_idle_ttl))
    OR s.newest OPERATOR(pg_catalog.>) s.max_sessions_per_user;
COMMENT ON VIEW adk.sessions_due IS
    'Sessions due for expiry under their app''s retention (reason idle or over_limit) and what expiry does; waiting ones (a running or paused invocation, an open interrupt, a queued job) are not deleted.';
GRANT SELECT ON adk.sessions_due TO adk_user;

-- The expiry action of one session if it is due and nothing holds it now
-- (NULL otherwise): the test of adk.sessions_due for that session alone,
-- with the statement's own snapshot.
CREATE FUNCTION adk._session_expiry(p_app text, p_user text, p_session text)
RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT a.session_expiry
      FROM adk.sessions s
      JOIN adk.apps a ON a.name OPERATOR(pg_catalog.=) s.app_name
     WHERE s.app_name OPERATOR(pg_catalog.=) p_app AND s.user_id OPERATOR(pg_catalog.=) p_user
       AND s.id OPERATOR(pg_catalog.=) p_session
       AND ((a.session_idle_ttl IS NOT NULL
             AND s.update_time OPERATOR(pg_catalog.<)
                 (pg_catalog.now() OPERATOR(pg_catalog.-) a.session_idle_ttl))
            OR (SELECT pg_catalog.count(*) FROM adk.sessions o
                 WHERE o.app_name OPERATOR(pg_catalog.=) s.app_name
                   AND o.user_id OPERATOR(pg_catalog.=) s.user_id
                   AND (o.update_time OPERATOR(pg_catalog.>) s.update_time
                        OR (o.update_time OPERATOR(pg_catalog.=) s.update_time
                            AND o.id OPERATOR(pg_catalog.>) s.id)))
               OPERATOR(pg_catalog.>=) a.max_sessions_per_user)
       AND NOT EXISTS (SELECT 1 FROM adk.invocations i
                        WHERE i.app_name OPERATOR(pg_catalog.=) s.app_name
                          AND i.user_id OPERATOR(pg_catalog.=) s.user_id
                          AND i.session_id OPERATOR(pg_catalog.=) s.id
                          AND i.status OPERATOR(pg_catalog.=) ANY (ARRAY['running', 'waiting']))
       AND NOT EXISTS (SELECT 1 FROM adk.run_states r
                        WHERE r.app_name OPERATOR(pg_catalog.=) s.app_name
                          AND r.user_id OPERATOR(pg_catalog.=) s.user_id
                          AND r.session_id OPERATOR(pg_catalog.=) s.id
                          AND r.status OPERATOR(pg_catalog.=) ANY (ARRAY['running', 'waiting']))
       AND NOT EXISTS (SELECT 1 FROM adk.jobs j
                        WHERE j.app_name OPERATOR(pg_catalog.=) s.app_name
                          AND j.user_id OPERATOR(pg_catalog.=) s.user_id
                          AND j.session_id OPERATOR(pg_catalog.=) s.id
                          AND j.status OPERATOR(pg_catalog.=) ANY (ARRAY['queued', 'running', 'waiting']))
$$;

-- One batch of the sweep, run by the launcher as the owner of schema adk:
-- at most batch_size due sessions that nothing holds, oldest activity
-- first (adk.sessions_due, read once; twice as many candidates as the
-- batch, so that sessions passed over do not make a batch come back short
-- and the launcher think the backlog is gone), each locked with SKIP
-- LOCKED (a session a run holds is passed over, and nobody waits on the
-- sweep but a run starting on a session it is deleting), checked again
-- under the lock with a fresh snapshot (adk._session_expiry), then deleted
-- (its events, run states, compactions and artifacts go with it by
-- trigger).  Returns how many it deleted.  Adding a session to memory can
-- fail (an embedding model that is down): that session is kept, with a
-- warning, for a later sweep.
CREATE FUNCTION adk._retention_sweep(batch_size integer DEFAULT 100)
RETURNS integer
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r record;
    act text;
    n integer := 0;
BEGIN
    FOR r IN
        SELECT s.app_name, s.user_id, s.id
          FROM adk.sessions s
          JOIN (SELECT d.app_name, d.user_id, d.session_id
                  FROM adk.sessions_due d
                 WHERE NOT d.waiting
                 ORDER BY d.last_activity
                 LIMIT 2 OPERATOR(pg_catalog.*) batch_size) c
            ON s.app_name OPERATOR(pg_catalog.=) c.app_name
           AND s.user_id OPERATOR(pg_catalog.=) c.user_id
           AND s.id OPERATOR(pg_catalog.=) c.session_id
         ORDER BY s.update_time
           FOR UPDATE OF s SKIP LOCKED
    LOOP
        EXIT WHEN n OPERATOR(pg_catalog.>=) batch_size;
        act := adk._session_expiry(r.app_name, r.user_id, r.id);
        CONTINUE WHEN act IS NULL;
        IF act OPERATOR(pg_catalog.=) 'memory' THEN
            BEGIN
                PERFORM adk._memory_add(r.app_name, r.user_id, r.id);
            EXCEPTION WHEN OTHERS THEN
                RAISE WARNING 'session "%" of app "%" and user "%" is kept: adding it to memory failed: %',
                    r.id, r.app_name, r.user_id, SQLERRM;
                CONTINUE;
            END;
        END IF;
        DELETE FROM adk.sessions s
         WHERE s.app_name OPERATOR(pg_catalog.=) r.app_name
           AND s.user_id OPERATOR(pg_catalog.=) r.user_id
           AND s.id OPERATOR(pg_catalog.=) r.id;
        n := n OPERATOR(pg_catalog.+) 1;
    END LOOP;
    RETURN n;
END
$$;

-- The body of adk_purge_user, run as the owner of schema adk after the
-- caller's tenancy check (src/store/lifecycle.c).  The user's session
-- rows are locked first, so a run in flight on one of them ends before
-- anything is counted; then every table of schema adk that holds rows of
-- the user loses them.  Budgets stay: a budget that names a user id is the
-- operator's rule, not the user's data (docs/sessions-lifecycle.md).
CREATE FUNCTION adk._purge_user(p_app text, p_user text)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    counts jsonb := '{}'::jsonb;
    n bigint;
BEGIN
    PERFORM 1 FROM adk.sessions s
     WHERE s.app_name OPERATOR(pg_catalog.=) p_app AND s.user_id OPERATOR(pg_catalog.=) p_user
       FOR UPDATE;

    DELETE FROM adk.events e
     WHERE e.app_name OPERATOR(pg_catalog.=) p_app AND e.user_id OPERATOR(pg_catalog.=) p_user;
    GET DIAGNOSTICS n = ROW_COUNT;
    counts := counts OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('events', n);
    DELETE FROM adk.run_states r
     WHERE r.app_name OPERATOR(pg_catalog.=) p_app AND r.user_id OPERATOR(pg_catalog.=) p_user;
    GET DIAGNOSTICS n = ROW_COUNT;
    counts := counts OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('run_states', n);
    DELETE FROM adk.compactions c
     WHERE c.app_name OPERATOR(pg_catalog.=) p_app AND c.user_id OPERATOR(pg_catalog.=) p_user;
    GET DIAGNOSTICS n = ROW_COUNT;
    counts := counts OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('compactions', n);
    DELETE FROM adk.artifacts a
     WHERE a.app_name OPERATOR(pg_catalog.=) p_app AND a.user_id OPERATOR(pg_catalog.=) p_user;
    GET DIAGNOSTICS n = ROW_COUNT;
    counts := counts OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('artifacts', n);
    DELETE FROM adk.sessions s
     WHERE s.app_name OPERATOR(pg_catalog.=) p_app AND s.user_id OPERATOR(pg_catalog.=) p_user;
    GET DIAGNOSTICS n = ROW_COUNT;
    counts := counts OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('sessions', n);
    DELETE FROM adk.user_states u
     WHERE u.app_name OPERATOR(pg_catalog.=) p_app AND u.user_id OPERATOR(pg_catalog.=) p_user;
    GET DIAGNOSTICS n = ROW_COUNT;
    counts := counts OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('user_states', n);
    DELETE FROM adk.memory m
     WHERE m.app_name OPERATOR(pg_catalog.=) p_app AND m.user_id OPERATOR(pg_catalog.=) p_user;
    GET DIAGNOSTICS n = ROW_COUNT;
    counts := counts OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('memory', n);
    DELETE FROM adk.model_calls c
     WHERE c.app_name OPERATOR(pg_catalog.=) p_app AND c.user_id OPERATOR(pg_catalog.=) p_user;
    GET DIAGNOSTICS n = ROW_COUNT;
    counts := counts OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('model_calls', n);
    DELETE FROM adk.span_exports x
     USING adk.spans p
     WHERE x.span_ref OPERATOR(pg_catalog.=) p.id
       AND p.app_name OPERATOR(pg_catalog.=) p_app AND p.user_id OPERATOR(pg_catalog.=) p_user;
    DELETE FROM adk.spans p
     WHERE p.app_name OPERATOR(pg_catalog.=) p_app AND p.user_id OPERATOR(pg_catalog.=) p_user;
    GET DIAGNOSTICS n = ROW_COUNT;
    counts := counts OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('spans', n);
    DELETE FROM adk.invocations i
     WHERE i.app_name OPERATOR(pg_catalog.=) p_app AND i.user_id OPERATOR(pg_catalog.=) p_user;
    GET DIAGNOSTICS n = ROW_COUNT;
    counts := counts OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('invocations', n);
    DELETE FROM adk.jobs j
     WHERE j.app_name OPERATOR(pg_catalog.=) p_app AND j.user_id OPERATOR(pg_catalog.=) p_user;
    GET DIAGNOSTICS n = ROW_COUNT;
    counts := counts OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('jobs', n);
    RETURN counts;
END
$$;

CREATE FUNCTION adk_purge_user(app_name text, user_id text)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'adk_purge_user_sql' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_purge_user(text, text) IS
    'Erase a user of an app everywhere: sessions, events, run states, compactions, artifacts, user state, memory, model calls, spans, invocations and jobs. Returns the rows deleted per table. Waits for runs in flight on the user''s sessions.';

-- the grants 90_privileges.sql gives a fresh install
REVOKE ALL ON FUNCTION adk_define_app_retention(text, interval, integer, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION adk_define_app_retention(text, interval, integer, text) TO adk_admin;
REVOKE ALL ON FUNCTION adk._retention_sweep(integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION adk._session_expiry(text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION adk._purge_user(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION adk_purge_user(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION adk_purge_user(text, text) TO adk_user;

-- sql/install/87_lifecycle.sql: paging
-- ---------------------------------------------------------------------
-- Paging.  adk_list_sessions(app, user, page_size, page_token) and
-- adk_list_events(app, user, session, page_size, page_token) return one
-- page, each row carrying the page's next_page_token (NULL on the last
-- page).  A page holds 1 to 100 rows (default 20); a larger page_size is
-- an error, not a silent truncation.  The token is opaque: base64url of a
-- small JSON object holding the position after the page's last row --
-- (update_time, id, user_id) for sessions, newest first; seq for events
-- -- so a page does not move when rows are added before it (keyset, not
-- offset).  ADK Python's token (base64 of a decimal offset) is accepted
-- too, as an offset into the same order, for clients that hold one; the
-- next token is then ours.
-- ---------------------------------------------------------------------

CREATE FUNCTION adk._page_token(pos jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT pg_catalog.rtrim(pg_catalog.translate(
               pg_catalog.encode(pg_catalog.convert_to(pos::text, 'UTF8'), 'base64'),
               E'+/\n', '-_'), '=')
$$;

-- The position a token holds: our JSON object, or {"offset": n} for ADK
-- Python's token.  Anything else is an error.
CREATE FUNCTION adk._page_token_read(token text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    b64 text := pg_catalog.translate(token, '-_', '+/');
    raw text;
    pos jsonb;
BEGIN
    BEGIN
        raw := pg_catalog.convert_from(
                   pg_catalog.decode(b64 OPERATOR(pg_catalog.||)
                                     pg_catalog.repeat('=', (4 OPERATOR(pg_catalog.-)
                                                             (pg_catalog.length(b64) OPERATOR(pg_catalog.%) 4))
                                                            OPERATOR(pg_catalog.%) 4),
                                     'base64'),
                   'UTF8');
        IF raw OPERATOR(pg_catalog.~) '^[0-9]{1,18}$' THEN
            RETURN pg_catalog.jsonb_build_object('offset', raw::bigint);
        END IF;
        pos := raw::jsonb;
    EXCEPTION WHEN OTHERS THEN
        pos := NULL;
    END;
    IF pg_catalog.jsonb_typeof(pos) IS DISTINCT FROM 'object'
       OR (pos OPERATOR(pg_catalog.->>) 'v') IS DISTINCT FROM '1' THEN
        RAISE EXCEPTION 'invalid page token' USING ERRCODE = '22023',
            DETAIL = 'A page token is the next_page_token of the previous page, passed as it came.',
            HINT = 'Pass NULL for the first page.';
    END IF;
    RETURN pos;
END
$$;

CREATE FUNCTION adk._page_size(page_size integer) RETURNS integer
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF page_size OPERATOR(pg_catalog.<) 1 OR page_size OPERATOR(pg_catalog.>) 100 THEN
        RAISE EXCEPTION 'page size % is out of range', page_size USING ERRCODE = '22023',
            DETAIL = 'A page holds 1 to 100 rows.',
            HINT = 'Ask for at most 100 and follow next_page_token; NULL asks for 20.';
    END IF;
    RETURN coalesce(page_size, 20);
END
$$;

CREATE TYPE adk.session_page AS (
    session_id text, app_name text, user_id text, state jsonb,
    create_time timestamptz, update_time timestamptz, last_seq bigint,
    next_page_token text);

CREATE FUNCTION adk_list_sessions(app_name text, user_id text, page_size integer,
                                  page_token text DEFAULT NULL)
RETURNS SETOF adk.session_page
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    size integer;
    pos jsonb;
    skip bigint := 0;
    after_time timestamptz;
    after_id text;
    after_user text;
    page adk.session_page[] := '{}';
    r adk.session_page;
    more boolean := false;
    token text;
BEGIN
    PERFORM adk._check_id('app name', $1);
    IF $2 IS NOT NULL THEN
        PERFORM adk._check_id('user id', $2);
        PERFORM adk._tenancy_check($1, $2);
    END IF;
    size := adk._page_size(page_size);
    IF page_token IS NOT NULL THEN
        pos := adk._page_token_read(page_token);
        IF pos ? 'offset' THEN
            skip := (pos ->> 'offset')::bigint;
        ELSE
            after_time := 'epoch'::timestamptz + (pos ->> 't')::bigint * interval '1 microsecond';
            after_id := pos ->> 'id';
            after_user := pos ->> 'u';
        END IF;
    END IF;
    -- as the unpaged adk_list_sessions, in the same order, with user_id
    -- last (without a user id, two users may have a session of one id)
    FOR r IN
        SELECT s.id::text, s.app_name::text, s.user_id::text,
               s.state || adk._prefixed(a.state, 'app:') || adk._prefixed(u.state, 'user:'),
               s.create_time, s.update_time, s.last_seq, NULL::text
          FROM adk.sessions s
          LEFT JOIN adk.app_states a ON a.app_name = s.app_name
          LEFT JOIN adk.user_states u ON u.app_name = s.app_name AND u.user_id = s.user_id
         WHERE s.app_name = $1 AND ($2 IS NULL OR s.user_id = $2)
           AND (after_time IS NULL
                OR s.update_time < after_time
                OR (s.update_time = after_time
                    AND (s.id::text, s.user_id::text) > (after_id, after_user)))
         ORDER BY s.update_time DESC, s.id, s.user_id
        OFFSET skip
         LIMIT size + 1
    LOOP
        IF cardinality(page) = size THEN
            more := true;
            EXIT;
        END IF;
        page := page || r;
    END LOOP;
    IF more THEN
        r := page[size];
        token := adk._page_token(jsonb_build_object(
            'v', 1, 't', (extract(epoch FROM r.update_time) * 1000000)::bigint,
            'id', r.session_id, 'u', r.user_id));
    END IF;
    FOREACH r IN ARRAY page LOOP
        r.next_page_token := token;
        RETURN NEXT r;
    END LOOP;
END
$$;
COMMENT ON FUNCTION adk_list_sessions(text, text, integer, text) IS
    'One page of an app''s sessions (of one user, or of every user the caller may see when user_id is NULL), newest first: page_size 1 to 100 (NULL: 20), page_token the previous page''s next_page_token (or ADK Python''s). Every row carries the next page''s token, NULL on the last page.';

CREATE TYPE adk.event_page AS (
    seq bigint, id text, invocation_id text, "timestamp" timestamptz, event_data jsonb,
    next_page_token text);

CREATE FUNCTION adk_list_events(app_name text, user_id text, session_id text,
                                page_size integer DEFAULT NULL, page_token text DEFAULT NULL)
RETURNS SETOF adk.event_page
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    size integer;
    pos jsonb;
    skip bigint := 0;
    after_seq bigint := 0;
    page adk.event_page[] := '{}';
    r adk.event_page;
    more boolean := false;
    token text;
BEGIN
    PERFORM adk._check_id('app name', $1);
    PERFORM adk._check_id('user id', $2);
    PERFORM adk._check_id('session id', $3);
    PERFORM adk._tenancy_check($1, $2);
    size := adk._page_size(page_size);
    IF page_token IS NOT NULL THEN
        pos := adk._page_token_read(page_token);
        IF pos ? 'offset' THEN
            skip := (pos ->> 'offset')::bigint;
        ELSE
            after_seq := (pos ->> 'seq')::bigint;
        END IF;
    END IF;
    PERFORM 1 FROM adk.sessions s WHERE s.app_name = $1 AND s.user_id = $2 AND s.id = $3;
    IF NOT FOUND THEN
        PERFORM adk._session_not_found(app_name, user_id, session_id);
    END IF;
    FOR r IN
        SELECT e.seq, e.id::text, e.invocation_id::text, e."timestamp", e.event_data, NULL::text
          FROM adk.events e
         WHERE e.app_name = $1 AND e.user_id = $2 AND e.session_id = $3 AND e.seq > after_seq
         ORDER BY e.seq
        OFFSET skip
         LIMIT size + 1
    LOOP
        IF cardinality(page) = size THEN
            more := true;
            EXIT;
        END IF;
        page := page || r;
    END LOOP;
    IF more THEN
        token := adk._page_token(jsonb_build_object('v', 1, 'seq', page[size].seq));
    END IF;
    FOREACH r IN ARRAY page LOOP
        r.next_page_token := token;
        RETURN NEXT r;
    END LOOP;
END
$$;
COMMENT ON FUNCTION adk_list_events(text, text, text, integer, text) IS
    'One page of a session''s events in seq order: page_size 1 to 100 (NULL: 20), page_token the previous page''s next_page_token. Every row carries the next page''s token, NULL on the last page.';

-- the paged readers run as the caller (90_privileges.sql's user_internals)
GRANT EXECUTE ON FUNCTION adk._page_token(jsonb), adk._page_token_read(text), adk._page_size(integer)
   TO adk_user;
REVOKE ALL ON FUNCTION adk._page_token(jsonb), adk._page_token_read(text), adk._page_size(integer)
   FROM PUBLIC;
REVOKE ALL ON FUNCTION adk_list_sessions(text, text, integer, text),
                       adk_list_events(text, text, text, integer, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION adk_list_sessions(text, text, integer, text),
                          adk_list_events(text, text, text, integer, text) TO adk_user;

-- sql/install/87_lifecycle.sql: forks
-- ---------------------------------------------------------------------
-- Forks.  adk_fork_session(app, user, source, before_invocation_id,
-- new_session) makes a new session of the same app and user holding the
-- source's live events before the fork point (before the first event of
-- before_invocation_id; NULL: all of them), with the session state as it
-- was there, and returns its id.  Lineage is on the new session row
-- (forked_from, forked_at_seq); otherwise a fork is an ordinary session.
-- ---------------------------------------------------------------------

ALTER TABLE adk.sessions
    ADD COLUMN forked_from varchar(191),
    ADD COLUMN forked_at_seq bigint;
COMMENT ON COLUMN adk.sessions.forked_from IS
    'the session of the same app and user this one was forked from (adk_fork_session); NULL: not a fork';
COMMENT ON COLUMN adk.sessions.forked_at_seq IS
    'the seq, in forked_from, of the last event before the fork point';

-- An event without the parts of the given calls (their function_call and
-- every function_response to them) and without their ids in
-- long_running_tool_ids; NULL when no part is left of a content that had
-- some.
CREATE FUNCTION adk._without_calls(event_data jsonb, call_ids text[]) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE
           WHEN pg_catalog.cardinality(call_ids) OPERATOR(pg_catalog.=) 0
                OR pg_catalog.jsonb_typeof(event_data #> '{content,parts}') IS DISTINCT FROM 'array'
           THEN event_data
           WHEN k.parts OPERATOR(pg_catalog.=) '[]'::jsonb
                AND event_data #> '{content,parts}' OPERATOR(pg_catalog.<>) '[]'::jsonb
           THEN NULL
           ELSE pg_catalog.jsonb_set(
                    CASE WHEN pg_catalog.jsonb_typeof(event_data -> 'long_running_tool_ids') OPERATOR(pg_catalog.=) 'array'
                         THEN pg_catalog.jsonb_set(event_data, '{long_running_tool_ids}', k.lr)
                         ELSE event_data END,
                    '{content,parts}', k.parts)
           END
      FROM (SELECT (SELECT coalesce(pg_catalog.jsonb_agg(p ORDER BY n), '[]'::jsonb)
                      FROM pg_catalog.jsonb_array_elements(event_data #> '{content,parts}')
                           WITH ORDINALITY AS x(p, n)
                     WHERE NOT coalesce(p #>> '{function_call,id}', p #>> '{function_response,id}')
                               OPERATOR(pg_catalog.=) ANY (call_ids)
                        OR coalesce(p #>> '{function_call,id}', p #>> '{function_response,id}') IS NULL) AS parts,
                   (SELECT coalesce(pg_catalog.jsonb_agg(i ORDER BY n), '[]'::jsonb)
                      FROM pg_catalog.jsonb_array_elements(
                               CASE WHEN pg_catalog.jsonb_typeof(event_data -> 'long_running_tool_ids') OPERATOR(pg_catalog.=) 'array'
                                    THEN event_data -> 'long_running_tool_ids' ELSE '[]'::jsonb END)
                           WITH ORDINALITY AS y(i, n)
                     WHERE NOT (i OPERATOR(pg_catalog.#>>) '{}') OPERATOR(pg_catalog.=) ANY (call_ids)) AS lr) k
$$;

-- The body of adk_fork_session, run as the owner of schema adk after the
-- caller's tenancy check (src/store/lifecycle.c).
--
-- The source's row is locked FOR SHARE first: a run in flight on it holds
-- the row, so the fork waits for it to end and then copies all of it, and
-- a run starting meanwhile waits for the fork.  Live events are those no
-- rewind event before the fork point hides (an event with
-- actions.rewind_before_invocation_id hides every event from the first one
-- of that invocation up to itself, itself included), as another runtime
-- writes them.  Calls open at the fork point -- a function call no live
-- event answers, or a long-running call no user answered -- are left out
-- (their call and response parts; an event with nothing left goes), so
-- the fork never starts with a pending interrupt.  The copies keep their
-- ids, invocation ids, times and contents and get seq 1, 2, ...; they are
-- inserted with their seq, as a restore is, so the events trigger applies
-- no state delta again (the user's and the app's state are where they
-- are).  The state is the source's (no fork point), or its unprefixed
-- keys that no event ever set plus the last value each live event before
-- the fork point set.  The compactions of the copied range come along,
-- renumbered.  Artifacts are not copied: user: artifacts are the user's
-- and shared anyway; session artifacts stay with the source.
CREATE FUNCTION adk._fork_session(p_app text, p_user text, p_source text,
                                  p_before text, p_new text)
RETURNS text
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    src_state jsonb;
    src_last bigint;
    cut bigint;
    new_id text := p_new;
    now_ms timestamptz := pg_catalog.date_trunc('milliseconds', pg_catalog.clock_timestamp());
    live bigint[];
    open_ids text[];
    kept bigint[];
    st jsonb;
BEGIN
    PERFORM adk._check_id('session id', p_source);
    IF new_id IS NULL THEN
        new_id := pg_catalog.gen_random_uuid()::text;
    ELSE
        PERFORM adk._check_id('session id', new_id);
    END IF;

    SELECT s.state, s.last_seq INTO src_state, src_last
      FROM adk.sessions s
     WHERE s.app_name OPERATOR(pg_catalog.=) p_app AND s.user_id OPERATOR(pg_catalog.=) p_user
       AND s.id OPERATOR(pg_catalog.=) p_source
       FOR SHARE;
    IF NOT FOUND THEN
        PERFORM adk._session_not_found(p_app, p_user, p_source);
    END IF;

    IF p_before IS NULL THEN
        cut := src_last OPERATOR(pg_catalog.+) 1;
    ELSE
        SELECT pg_catalog.min(e.seq) INTO cut FROM adk.events e
         WHERE e.app_name OPERATOR(pg_catalog.=) p_app AND e.user_id OPERATOR(pg_catalog.=) p_user
           AND e.session_id OPERATOR(pg_catalog.=) p_source
           AND e.invocation_id OPERATOR(pg_catalog.=) p_before;
        IF cut IS NULL THEN
            RAISE EXCEPTION 'invocation "%" is not in session "%"', p_before, p_source
                USING ERRCODE = '42704',
                      HINT = 'Name the invocation_id of one of the session''s events, or NULL to fork the whole session.';
        END IF;
    END IF;

    -- the live events before the fork point
    WITH ev AS (
        SELECT e.seq, e.invocation_id, e.event_data #>> '{actions,rewind_before_invocation_id}' AS rewinds_to
          FROM adk.events e
         WHERE e.app_name OPERATOR(pg_catalog.=) p_app AND e.user_id OPERATOR(pg_catalog.=) p_user
           AND e.session_id OPERATOR(pg_catalog.=) p_source AND e.seq OPERATOR(pg_catalog.<) cut),
    hidden AS (
        SELECT r.seq AS upto,
               (SELECT pg_catalog.min(x.seq) FROM ev x
                 WHERE x.invocation_id OPERATOR(pg_catalog.=) r.rewinds_to) AS from_seq
          FROM ev r WHERE r.rewinds_to IS NOT NULL)
    SELECT coalesce(pg_catalog.array_agg(ev.seq ORDER BY ev.seq), '{}') INTO live
      FROM ev
     WHERE NOT EXISTS (SELECT 1 FROM hidden h
                        WHERE ev.seq OPERATOR(pg_catalog.<=) h.upto
                          AND ev.seq OPERATOR(pg_catalog.>=) coalesce(h.from_seq, h.upto));

    -- calls open at the fork point
    WITH parts AS (
        SELECT e.event_data OPERATOR(pg_catalog.->>) 'author' AS author, e.event_data, p
          FROM adk.events e
         CROSS JOIN LATERAL adk._parts(e.event_data OPERATOR(pg_catalog.->) 'content') p
         WHERE e.app_name OPERATOR(pg_catalog.=) p_app AND e.user_id OPERATOR(pg_catalog.=) p_user
           AND e.session_id OPERATOR(pg_catalog.=) p_source
           AND e.seq OPERATOR(pg_catalog.=) ANY (live)),
    calls AS (
        SELECT c.p #>> '{function_call,id}' AS id,
               coalesce(c.event_data OPERATOR(pg_catalog.->) 'long_running_tool_ids'
                            OPERATOR(pg_catalog.?) (c.p #>> '{function_call,id}'), false) AS long_running
          FROM parts c WHERE c.p #>> '{function_call,id}' IS NOT NULL)
    SELECT coalesce(pg_catalog.array_agg(DISTINCT c.id), '{}') INTO open_ids
      FROM calls c
     WHERE NOT EXISTS (SELECT 1 FROM parts r
                        WHERE r.p #>> '{function_response,id}' OPERATOR(pg_catalog.=) c.id
                          AND (NOT c.long_running OR r.author OPERATOR(pg_catalog.=) 'user'));

    SELECT coalesce(pg_catalog.array_agg(e.seq ORDER BY e.seq), '{}') INTO kept
      FROM adk.events e
     WHERE e.app_name OPERATOR(pg_catalog.=) p_app AND e.user_id OPERATOR(pg_catalog.=) p_user
       AND e.session_id OPERATOR(pg_catalog.=) p_source AND e.seq OPERATOR(pg_catalog.=) ANY (live)
       AND adk._without_calls(e.event_data, open_ids) IS NOT NULL;

    IF p_before IS NULL THEN
        st := src_state;
    ELSE
        SELECT coalesce(pg_catalog.jsonb_object_agg(b.key, b.value), '{}'::jsonb) INTO st
          FROM pg_catalog.jsonb_each(src_state) b
         WHERE NOT EXISTS (
                   SELECT 1 FROM adk.events e
                    WHERE e.app_name OPERATOR(pg_catalog.=) p_app AND e.user_id OPERATOR(pg_catalog.=) p_user
                      AND e.session_id OPERATOR(pg_catalog.=) p_source
                      AND e.event_data #> '{actions,state_delta}' OPERATOR(pg_catalog.?) b.key);
        st := st OPERATOR(pg_catalog.||) (
            SELECT coalesce(pg_catalog.jsonb_object_agg(d.key, d.value), '{}'::jsonb)
              FROM (SELECT DISTINCT ON (kv.key) kv.key, kv.value
                      FROM adk.events e
                     CROSS JOIN LATERAL pg_catalog.jsonb_each(
                               CASE WHEN pg_catalog.jsonb_typeof(e.event_data #> '{actions,state_delta}')
                                         OPERATOR(pg_catalog.=) 'object'
                                    THEN e.event_data #> '{actions,state_delta}' ELSE '{}'::jsonb END) kv
                     WHERE e.app_name OPERATOR(pg_catalog.=) p_app AND e.user_id OPERATOR(pg_catalog.=) p_user
                       AND e.session_id OPERATOR(pg_catalog.=) p_source
                       AND e.seq OPERATOR(pg_catalog.=) ANY (live)
                       AND NOT pg_catalog.starts_with(kv.key, 'app:')
                       AND NOT pg_catalog.starts_with(kv.key, 'user:')
                       AND NOT pg_catalog.starts_with(kv.key, 'temp:')
                     ORDER BY kv.key, e.seq DESC) d);
    END IF;

    INSERT INTO adk.sessions AS s (id, app_name, user_id, state, create_time, update_time,
                                   forked_from, forked_at_seq)
    VALUES (new_id, p_app, p_user, st, now_ms, now_ms, p_source, cut OPERATOR(pg_catalog.-) 1)
    ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'session "%" already exists for app "%" and user "%"', new_id, p_app, p_user
            USING ERRCODE = '23505';
    END IF;

    INSERT INTO adk.events (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data, seq)
    SELECT e.id, e.app_name, e.user_id, new_id, e.invocation_id, e."timestamp",
           adk._without_calls(e.event_data, open_ids), k.n
      FROM pg_catalog.unnest(kept) WITH ORDINALITY AS k(old, n)
      JOIN adk.events e
        ON e.app_name OPERATOR(pg_catalog.=) p_app AND e.user_id OPERATOR(pg_catalog.=) p_user
       AND e.session_id OPERATOR(pg_catalog.=) p_source AND e.seq OPERATOR(pg_catalog.=) k.old;

    INSERT INTO adk.compactions (app_name, user_id, session_id, seq, event_id, kind, from_seq, to_seq,
                                 seen_seq, covered_to, invocation_id, created_at)
    SELECT *
      FROM (SELECT p_app, p_user, new_id, m.n AS seq, c.event_id, c.kind,
                   (SELECT pg_catalog.min(k.n) FROM pg_catalog.unnest(kept) WITH ORDINALITY AS k(old, n)
                     WHERE k.old OPERATOR(pg_catalog.>=) c.from_seq) AS from_seq,
                   (SELECT pg_catalog.max(k.n) FROM pg_catalog.unnest(kept) WITH ORDINALITY AS k(old, n)
                     WHERE k.old OPERATOR(pg_catalog.<=) c.to_seq) AS to_seq,
                   (SELECT pg_catalog.max(k.n) FROM pg_catalog.unnest(kept) WITH ORDINALITY AS k(old, n)
                     WHERE k.old OPERATOR(pg_catalog.<=) c.seen_seq) AS seen_seq,
                   (SELECT pg_catalog.max(k.n) FROM pg_catalog.unnest(kept) WITH ORDINALITY AS k(old, n)
                     WHERE k.old OPERATOR(pg_catalog.<=) c.covered_to) AS covered_to,
                   c.invocation_id, c.created_at
              FROM adk.compactions c
              JOIN pg_catalog.unnest(kept) WITH ORDINALITY AS m(old, n)
                ON m.old OPERATOR(pg_catalog.=) c.seq
             WHERE c.app_name OPERATOR(pg_catalog.=) p_app AND c.user_id OPERATOR(pg_catalog.=) p_user
               AND c.session_id OPERATOR(pg_catalog.=) p_source) x
     WHERE x.from_seq OPERATOR(pg_catalog.<=) x.to_seq
       AND x.to_seq OPERATOR(pg_catalog.<=) x.seen_seq
       AND x.seen_seq OPERATOR(pg_catalog.<) x.seq;

    UPDATE adk.sessions s
       SET last_seq = pg_catalog.cardinality(kept),
           last_event_time = (SELECT pg_catalog.max(e."timestamp") FROM adk.events e
                               WHERE e.app_name OPERATOR(pg_catalog.=) p_app
                                 AND e.user_id OPERATOR(pg_catalog.=) p_user
                                 AND e.session_id OPERATOR(pg_catalog.=) new_id)
     WHERE s.app_name OPERATOR(pg_catalog.=) p_app AND s.user_id OPERATOR(pg_catalog.=) p_user
       AND s.id OPERATOR(pg_catalog.=) new_id;
    RETURN new_id;
END
$$;

CREATE FUNCTION adk_fork_session(app_name text, user_id text, source_session_id text,
                                 before_invocation_id text DEFAULT NULL,
                                 new_session_id text DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'adk_fork_session_sql' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_fork_session(text, text, text, text, text) IS
    'Fork a session: a new session of the same app and user (new_session_id, or a generated id) with the source''s live events before before_invocation_id (NULL: all), the state as it was there, and no open calls. Returns its id; adk.sessions.forked_from and forked_at_seq record where it came from.';
REVOKE ALL ON FUNCTION adk._without_calls(jsonb, text[]),
                       adk._fork_session(text, text, text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION adk_fork_session(text, text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION adk_fork_session(text, text, text, text, text) TO adk_user;
