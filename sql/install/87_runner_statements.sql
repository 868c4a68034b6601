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

-- An invocation ends: its row gets its status, counts and error, and its
-- nodes' adk.run_states rows end as their last events say (p_paths, and
-- each one's last event's author, time, error_code, '' for none, and
-- branch, NULL for none -- p_branches NULL when none has one:
-- src/runner/run_states.c), as adk._derive_run_states (62_hitl.sql) reads
-- them from the events: status by that event ('failed' for an error,
-- 'cancelled' for CANCELLED, 'running' for a task or single_turn node,
-- 'completed' for the root) unless the row waits or a node output
-- finished it.  A root row adk_run did not write as it started (its
-- transaction is the turn's) is written here, its input p_input; p_fresh:
-- no row of the invocation can exist yet (a plain INSERT).
-- NULL p_paths: the runner refreshed the rows from the events -- a resume
-- (HITL) or a queued run's retry.  Only then can the invocation be a
-- queued run's that paused (its job 'waiting') and is resumed by adk_run:
-- its job follows the invocation, and has finished only now (retention
-- counts from here).
CREATE FUNCTION adk._invocation_end(p_invocation text, p_status text, p_model_calls integer,
                                    p_input_tokens bigint, p_output_tokens bigint,
                                    p_error_code text, p_error_message text,
                                    p_store_ms double precision,
                                    p_paths text[], p_agents text[], p_times timestamptz[],
                                    p_errors text[], p_input jsonb, p_fresh boolean,
                                    p_branches text[])
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_paths IS NULL THEN
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
    ELSIF p_fresh AND cardinality(p_paths) = 1 AND p_branches IS NULL THEN
        -- one statement: the invocation's row, and its node's new row
        -- (a plain turn: no array to unnest, no branch)
        WITH i AS (
            UPDATE adk.invocations i
               SET status = p_status, ended_at = clock_timestamp(),
                   model_calls = i.model_calls + p_model_calls,
                   input_tokens = i.input_tokens + p_input_tokens,
                   output_tokens = i.output_tokens + p_output_tokens,
                   error_code = p_error_code, error_message = p_error_message,
                   store_ms = i.store_ms + p_store_ms
             WHERE i.invocation_id = p_invocation
            RETURNING i.app_name, i.user_id, i.session_id
        )
        INSERT INTO adk.run_states
               (app_name, user_id, session_id, invocation_id, node_path, status, agent, updated_at, input)
        SELECT i.app_name, i.user_id, i.session_id, p_invocation, p_paths[1],
               CASE WHEN p_errors[1] = 'CANCELLED' THEN 'cancelled'
                    WHEN p_errors[1] <> '' THEN 'failed'
                    WHEN strpos(p_paths[1], '/') > 0 THEN 'running'
                    ELSE 'completed' END,
               p_agents[1], p_times[1], CASE WHEN strpos(p_paths[1], '@') = 0 THEN p_input END
          FROM i;
    ELSIF p_fresh THEN
        WITH i AS (
            UPDATE adk.invocations i
               SET status = p_status, ended_at = clock_timestamp(),
                   model_calls = i.model_calls + p_model_calls,
                   input_tokens = i.input_tokens + p_input_tokens,
                   output_tokens = i.output_tokens + p_output_tokens,
                   error_code = p_error_code, error_message = p_error_message,
                   store_ms = i.store_ms + p_store_ms
             WHERE i.invocation_id = p_invocation
            RETURNING i.app_name, i.user_id, i.session_id
        )
        INSERT INTO adk.run_states
               (app_name, user_id, session_id, invocation_id, node_path, status, agent, updated_at, input,
                branch)
        SELECT i.app_name, i.user_id, i.session_id, p_invocation, x.path,
               CASE WHEN x.err = 'CANCELLED' THEN 'cancelled'
                    WHEN x.err <> '' THEN 'failed'
                    WHEN strpos(x.path, '/') > 0 THEN 'running'
                    ELSE 'completed' END,
               x.agent, x.ts, CASE WHEN strpos(x.path, '@') = 0 THEN p_input END, x.branch
          FROM i CROSS JOIN unnest(p_paths, p_agents, p_times, p_errors, p_branches)
                            AS x(path, agent, ts, err, branch);
    ELSE
        WITH i AS (
            UPDATE adk.invocations i
               SET status = p_status, ended_at = clock_timestamp(),
                   model_calls = i.model_calls + p_model_calls,
                   input_tokens = i.input_tokens + p_input_tokens,
                   output_tokens = i.output_tokens + p_output_tokens,
                   error_code = p_error_code, error_message = p_error_message,
                   store_ms = i.store_ms + p_store_ms
             WHERE i.invocation_id = p_invocation
            RETURNING i.app_name, i.user_id, i.session_id
        )
        INSERT INTO adk.run_states AS r
               (app_name, user_id, session_id, invocation_id, node_path, status, agent, updated_at, input,
                branch)
        SELECT i.app_name, i.user_id, i.session_id, p_invocation, x.path,
               CASE WHEN x.err = 'CANCELLED' THEN 'cancelled'
                    WHEN x.err <> '' THEN 'failed'
                    WHEN strpos(x.path, '/') > 0 THEN 'running'
                    ELSE 'completed' END,
               x.agent, x.ts, CASE WHEN strpos(x.path, '@') = 0 THEN p_input END, x.branch
          FROM i CROSS JOIN unnest(p_paths, p_agents, p_times, p_errors, p_branches)
                            AS x(path, agent, ts, err, branch)
        ON CONFLICT (app_name, user_id, session_id, invocation_id, node_path) DO UPDATE
           SET status = CASE WHEN r.status = 'waiting' THEN r.status
                             WHEN r.output IS NOT NULL
                                  OR (r.status = 'completed' AND strpos(r.node_path, '/') > 0)
                             THEN 'completed'
                             ELSE EXCLUDED.status END,
               agent = EXCLUDED.agent, updated_at = EXCLUDED.updated_at,
               input = coalesce(r.input, EXCLUDED.input), branch = EXCLUDED.branch;
    END IF;
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
-- max_llm_calls, whether compaction is set and whether prompts are cached
-- (88_prompt_cache.sql).  No row: no such app.
CREATE FUNCTION adk._app_definition(p_app text)
RETURNS TABLE (r_root_agent text, r_auto_create_session boolean, r_plugins text[],
               r_max_llm_calls integer, r_compaction boolean, r_context_cache boolean)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT a.root_agent, a.auto_create_session, a.plugins, a.max_llm_calls, a.compaction IS NOT NULL,
           coalesce((a.context_cache ->> 'enabled')::boolean, false)
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
               r_generate_config jsonb, r_mode text, r_input_schema jsonb,
               r_output_schema jsonb)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT t.name, t.parent, a.kind, adk._agent_model(a.name), a.instruction,
           a.description, a.tools, a.output_key, a.disallow_transfer_to_parent,
           a.disallow_transfer_to_peers, a.max_iterations,
           a.include_contents = 'none', a.generate_config, a.mode,
           a.input_schema, a.output_schema
      FROM adk._agent_tree(p_root) t JOIN adk.agents a ON a.name = t.name;
END
$$;

-- The session's open task (task_mode.c): the scope of adk.active_tasks
-- with the newest event, and its agent.  No row: none.
CREATE FUNCTION adk._active_task(p_app text, p_user text, p_session text)
RETURNS TABLE (r_scope text, r_agent text)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT t.scope, t.agent FROM adk.active_tasks t
     WHERE t.app_name = p_app AND t.user_id = p_user AND t.session_id = p_session
     ORDER BY t.last_seq DESC LIMIT 1;
END
$$;

-- The arguments of the call that delegated a task (its id: the task's
-- isolation scope), for a task resumed in a later invocation.
CREATE FUNCTION adk._task_request(p_app text, p_user text, p_session text, p_call text)
RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN (SELECT p -> 'function_call' -> 'args'
              FROM adk.events e, jsonb_array_elements(e.event_data -> 'content' -> 'parts') p
             WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
               AND e.event_data @> jsonb_build_object('content', jsonb_build_object('parts',
                       jsonb_build_array(jsonb_build_object('function_call', jsonb_build_object('id', p_call)))))
               AND p -> 'function_call' ->> 'id' = p_call
             ORDER BY e.seq DESC LIMIT 1);
END
$$;

-- The task agent a call delegated to, when that call's id is an isolation
-- scope of the session (task_mode.c): a user's function response for it
-- is refused, the task's finish_task answers it.  NULL: no task.
CREATE FUNCTION adk._task_of_call(p_app text, p_user text, p_session text, p_call text)
RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN (SELECT e.event_data ->> 'author'
              FROM adk.live_events e
             WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
               AND (e.event_data ->> 'isolation_scope') <> ''
               AND e.event_data ->> 'isolation_scope' = p_call
               AND e.event_data ->> 'author' <> 'user'
             ORDER BY e.seq LIMIT 1);
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

-- The budgets with a limit, whose scopes src/runner/budget.c reads to see
-- whether one covers a model call (if none does, the call takes nothing
-- from adk._budget_take): the body of adk._budget_any
-- (88_turn_statements.sql), planned once per backend and run without a
-- function call around it (a plpgsql function with its SET clause cost
-- more than the read, test/bench/README.md).  The view's
-- names were resolved when it was made; only the owner of schema adk may
-- use it.
CREATE VIEW adk._budget_limits AS
SELECT x.app_name, x.user_id, x.role_name
  FROM adk.budgets x
 WHERE x.max_tokens IS NOT NULL OR x.max_model_calls IS NOT NULL;
REVOKE ALL ON adk._budget_limits FROM PUBLIC;
COMMENT ON VIEW adk._budget_limits IS
    'Internal: the scopes of the budgets with a limit (src/runner/budget.c); the owner''s only.';

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
    SELECT coalesce(h.data, a.data), a.mime_type
      FROM adk.artifacts a
      LEFT JOIN adk.artifacts h      -- a fork's reference: the holder's bytes
        ON h.app_name = a.app_name AND h.user_id = a.user_id AND h.session_id = a.source_session_id
       AND h.filename = a.filename AND h.version = a.version
     WHERE a.app_name = p_app AND a.user_id = p_user
       AND a.session_id = adk._artifact_scope(p_session, p_filename)
       AND a.filename = p_filename
     ORDER BY a.version DESC LIMIT 1;
END
$$;

-- A span of a run's trace, as src/runner/spans.c stores it: an INSERT
-- into this view (its columns in the order the C passes them, the row's
-- id last) is one into adk.spans, planned once per backend, without a
-- function call around it (a plpgsql function with its SET clause cost
-- more than the insert, test/bench/README.md).  The view's names were
-- resolved when it was made; only the owner of schema adk may use it.
CREATE VIEW adk._span_rows AS
SELECT s.trace_id, s.span_id, s.parent_span_id, s.name, s.kind, s.start_time, s.end_time,
       s.status_code, s.status_message, s.attributes, s.events, s.app_name, s.user_id,
       s.session_id, s.invocation_id, s.role_name, s.id
  FROM adk.spans s;
REVOKE ALL ON adk._span_rows FROM PUBLIC;
COMMENT ON VIEW adk._span_rows IS
    'Internal: adk.spans in the column order the runner inserts a span (src/runner/spans.c); the owner''s only.';

-- Spans older than p_secs seconds go (adk.span_retention).
CREATE FUNCTION adk._spans_purge(p_secs double precision)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    DELETE FROM adk.spans s WHERE s.created_at < now() - make_interval(secs => p_secs);
END
$$;
