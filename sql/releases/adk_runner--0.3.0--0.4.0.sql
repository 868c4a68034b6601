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
