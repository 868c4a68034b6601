-- ---------------------------------------------------------------------
-- The statements of the store, the model layer and the workers
-- (src/store/*.c, src/model/model_def.c, src/worker/*.c):
-- each a function the C code calls through SPI in one line, as the
-- runner's are (87_runner_statements.sql).  In plpgsql, which keeps each
-- statement's plan for the session.  They run as the owner of schema adk
-- (or in a background worker), and nobody else may call them
-- (90_privileges.sql).  The statements every turn runs -- an event's
-- append, the session's row lock, its history, its recent authors -- are
-- in 88_turn_statements.sql: through a plpgsql function a turn cost 5%
-- more, so the C code runs those functions' bodies instead
-- (docs/internals/statements.md).
-- ---------------------------------------------------------------------

-- The event row of adk_append_event at a place given already (the session
-- row bumped by its own statement: adk.events_p0 has a rule).
CREATE FUNCTION adk._insert_event_row(p_app text, p_user text, p_session text, p_id text,
                                      p_invocation text, p_timestamp timestamptz,
                                      p_event jsonb, p_seq bigint,
                                      OUT r_seq bigint, OUT r_timestamp timestamptz,
                                      OUT r_event_data jsonb)
RETURNS SETOF record
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    INSERT INTO adk.events_p0 AS e
           (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data, seq)
    VALUES (p_id, p_app, p_user, p_session, p_invocation, p_timestamp,
            adk._event_at(p_event, p_timestamp), p_seq)
    RETURNING e.seq, e."timestamp", e.event_data INTO r_seq, r_timestamp, r_event_data;
    IF FOUND THEN
        RETURN NEXT;
    END IF;
END
$$;

-- The event row of adk_append_event when Citus manages adk.events: without
-- a seq; the events trigger on the shard places it.
CREATE FUNCTION adk._insert_distributed_event(p_app text, p_user text, p_session text, p_id text,
                                              p_invocation text, p_proposed timestamptz,
                                              p_event jsonb,
                                              OUT r_seq bigint, OUT r_timestamp timestamptz,
                                              OUT r_event_data jsonb)
RETURNS SETOF record
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    INSERT INTO adk.events AS e
           (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data)
    VALUES (p_id, p_app, p_user, p_session, p_invocation, p_proposed, p_event)
    RETURNING e.seq, e."timestamp", e.event_data INTO r_seq, r_timestamp, r_event_data;
    IF FOUND THEN
        RETURN NEXT;
    END IF;
END
$$;

-- Whether Citus manages adk.sessions or adk.events, and whether in the
-- layout adk_distribute() makes (events by session_id, colocated with
-- sessions by id).  Called only where pg_dist_partition exists.
CREATE FUNCTION adk._citus_events_layout(OUT r_distributed boolean, OUT r_supported boolean)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    SELECT e.logicalrelid IS NOT NULL OR s.logicalrelid IS NOT NULL,
           coalesce(e.partmethod = 'h' AND s.partmethod = 'h'
                    AND e.colocationid = s.colocationid
                    AND column_to_column_name(e.logicalrelid, e.partkey) = 'session_id'
                    AND column_to_column_name(s.logicalrelid, s.partkey) = 'id', false)
      INTO r_distributed, r_supported
      FROM (SELECT) x
      LEFT JOIN pg_dist_partition e ON e.logicalrelid = to_regclass('adk.events')
      LEFT JOIN pg_dist_partition s ON s.logicalrelid = to_regclass('adk.sessions');
END
$$;

-- Whether the session exists (read, not locked).
CREATE FUNCTION adk._session_exists(p_app text, p_user text, p_session text)
RETURNS boolean
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN EXISTS (SELECT FROM adk.sessions s
                    WHERE s.app_name = p_app AND s.user_id = p_user AND s.id = p_session);
END
$$;

-- The state an instruction's {key} placeholders see: the session's, the
-- app's under "app:", the user's under "user:".  NULL: no such session.
CREATE FUNCTION adk._session_state(p_app text, p_user text, p_session text)
RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v jsonb;
BEGIN
    SELECT s.state || adk._prefixed(a.state, 'app:') || adk._prefixed(u.state, 'user:')
      INTO v
      FROM adk.sessions s
      LEFT JOIN adk.app_states a ON a.app_name = s.app_name
      LEFT JOIN adk.user_states u ON u.app_name = s.app_name AND u.user_id = s.user_id
     WHERE s.app_name = p_app AND s.user_id = p_user AND s.id = p_session;
    RETURN v;
END
$$;

-- The newest live event of the session containing p_call (a function
-- call by id), not one the store appended itself: its author and
-- invocation id.
CREATE FUNCTION adk._session_call_event(p_app text, p_user text, p_session text, p_call jsonb)
RETURNS TABLE (r_author text, r_invocation text)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT e.event_data ->> 'author', e.invocation_id::text FROM adk.live_events e
     WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
       AND e.event_data @> p_call
       AND (e.event_data #> '{custom_metadata,adk_appended_by}'::text[]) IS NULL
     ORDER BY e.seq DESC
     LIMIT 1;
END
$$;

-- The prompt_token_count of the newest live model response stored after
-- the session's last compaction; NULL when there is none.
CREATE FUNCTION adk._session_prompt_tokens(p_app text, p_user text, p_session text)
RETURNS bigint
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v bigint;
BEGIN
    SELECT (e.event_data #>> '{usage_metadata,prompt_token_count}')::bigint INTO v
      FROM adk.live_events e
     WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
       AND e.event_data ? 'usage_metadata'
       AND e.seq > coalesce((SELECT max(c.seq) FROM adk.compactions c
                              WHERE c.app_name = p_app AND c.user_id = p_user
                                AND c.session_id = p_session), 0)
     ORDER BY e.seq DESC
     LIMIT 1;
    RETURN v;
END
$$;

-- Queue a job (adk_submit, the row triggers: src/worker/submit.c).
CREATE FUNCTION adk._job_insert(p_invocation text, p_app text, p_user text, p_session text,
                                p_message jsonb, p_state_delta jsonb, p_options jsonb,
                                p_role_oid oid, p_role_name name, p_source text,
                                p_max_attempts integer)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    INSERT INTO adk.jobs (invocation_id, app_name, user_id, session_id, message,
                          state_delta, options, role_oid, role_name, source, max_attempts)
    VALUES (p_invocation, p_app, p_user, p_session, p_message,
            p_state_delta, p_options, p_role_oid, p_role_name, p_source, p_max_attempts);
END
$$;

-- The OTLP exporter's outcome of one round (src/worker/otlp.c): p_spans
-- delivered, or the error p_error (not NULL) and nothing delivered.
CREATE FUNCTION adk._otlp_record_export(p_spans bigint, p_error text)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_error IS NULL THEN
        UPDATE adk.otlp_export_state
           SET exported = exported + p_spans, batches = batches + 1, last_export_at = now();
    ELSE
        UPDATE adk.otlp_export_state
           SET failures = failures + 1, last_error = p_error, last_error_at = now();
    END IF;
END
$$;

-- A model's definition as the model layer loads it (src/model/model_def.c):
-- its row and, when it names one, its secret's value and allowed hosts;
-- its fallbacks last.
-- No row: no such model.
CREATE FUNCTION adk._model_definition(p_name text)
RETURNS TABLE (r_provider text, r_endpoint text, r_model text, r_options jsonb,
               r_api_key_env text, r_api_key_secret text, r_secret_value text,
               r_allowed_hosts text[], r_fallbacks text[], r_capabilities jsonb)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT m.provider, m.endpoint, m.model, m.options, m.api_key_env,
           m.api_key_secret, s.value, s.allowed_hosts, m.fallbacks, m.capabilities
      FROM adk.models m
      LEFT JOIN adk.secrets s ON s.name = m.api_key_secret
     WHERE m.name = p_name;
END
$$;

-- adk_cancel's queued jobs (src/worker/cancel.c): those of p_ids still
-- queued end 'cancelled'; a job claimed meanwhile is left alone.
CREATE FUNCTION adk._jobs_cancel_queued(p_ids bigint[])
RETURNS TABLE (r_invocation text, r_id bigint)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    UPDATE adk.jobs j
       SET status = 'cancelled', finished_at = clock_timestamp(),
           error = 'cancelled before it started'
     WHERE j.id = ANY (p_ids) AND j.status = 'queued'
    RETURNING j.invocation_id, j.id;
END
$$;

-- Lock a session's row for a job's step without waiting: true when it is
-- locked now, or does not exist (the run creates it); false when another
-- transaction holds it (src/worker/job.c, launcher.c).
CREATE FUNCTION adk._session_try_lock(p_app text, p_user text, p_session text)
RETURNS boolean
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM FROM adk.sessions s
      WHERE s.app_name = p_app AND s.user_id = p_user AND s.id = p_session
        FOR UPDATE SKIP LOCKED;
    IF FOUND THEN
        RETURN true;
    END IF;
    RETURN NOT EXISTS (SELECT FROM adk.sessions s
                        WHERE s.app_name = p_app AND s.user_id = p_user AND s.id = p_session);
END
$$;

-- The jobs marked running, for the launcher's recovery (src/worker/launcher.c).
CREATE FUNCTION adk._jobs_running()
RETURNS TABLE (r_id bigint, r_attempts integer, r_worker_pid integer, r_last_attempt boolean,
               r_app text, r_user text, r_session text)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT j.id, j.attempts, j.worker_pid, j.attempts >= j.max_attempts,
           j.app_name::text, j.user_id::text, j.session_id::text
      FROM adk.jobs j
     WHERE j.status = 'running';
END
$$;

-- Whether an invocation stored any event in the session.
CREATE FUNCTION adk._invocation_has_events(p_app text, p_user text, p_session text,
                                           p_invocation text)
RETURNS boolean
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN EXISTS (SELECT FROM adk.events e
                    WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
                      AND e.invocation_id = p_invocation);
END
$$;

-- Delete the jobs that finished more than p_retention_s seconds ago;
-- returns how many.
CREATE FUNCTION adk._jobs_purge(p_retention_s integer)
RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    n bigint;
BEGIN
    DELETE FROM adk.jobs j
     WHERE j.finished_at < clock_timestamp() - make_interval(secs => p_retention_s);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

-- The schema of the adk_* functions (the job worker calls
-- adk_create_session; the artifact tools adk_save_artifact), NULL when
-- adk_runner is not installed.
CREATE FUNCTION adk._extension_schema()
RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN (SELECT n.nspname::text
              FROM pg_catalog.pg_extension e
              JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
             WHERE e.extname = 'adk_runner');
END
$$;

-- A run's status and place for adk_wait (src/worker/submit.c), with a new
-- snapshot: its job's, or (no job: a run of adk_run, or a job purged
-- since) its invocation's; r_xmin, the job row's, tells a job queued in
-- the caller's own transaction.  Run as the caller.
CREATE FUNCTION adk._run_status(p_invocation text,
                                OUT r_status text, OUT r_app text, OUT r_user text,
                                OUT r_session text, OUT r_xmin xid)
RETURNS SETOF record
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT x.status, x.app_name, x.user_id, x.session_id, x.xmin
      FROM (SELECT j.status, j.app_name, j.user_id, j.session_id, 1 AS o, j.xmin
              FROM adk.jobs j
             WHERE j.invocation_id = p_invocation
            UNION ALL
            SELECT i.status, i.app_name, i.user_id, i.session_id, 2, NULL::xid
              FROM adk.invocations i
             WHERE i.invocation_id = p_invocation) x
     ORDER BY x.o
     LIMIT 1;
END
$$;

-- A ledger row of a model call whose transaction rolled back, marked
-- rolled_back (src/shared/spent.c: the launcher writes what the backend
-- handed over).
CREATE FUNCTION adk._model_call_restore(p_row jsonb)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    INSERT INTO adk.model_calls OVERRIDING SYSTEM VALUE
    SELECT r.*
      FROM pg_catalog.jsonb_populate_record(NULL::adk.model_calls,
                                            p_row || '{"rolled_back": true}') r;
END
$$;

-- Whether Citus lists shard p_shard as a shard of adk.events_p0 (the
-- events trigger on a shard; called only where pg_dist_shard exists).
CREATE FUNCTION adk._events_shard(p_shard bigint)
RETURNS boolean
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN EXISTS (SELECT FROM pg_catalog.pg_dist_shard s
                    WHERE s.shardid = p_shard
                      AND s.logicalrelid = 'adk.events_p0'::pg_catalog.regclass);
END
$$;

-- The OTLP exporter's secret p_name: its value and the hosts it may be
-- sent to (src/worker/otlp.c).
CREATE FUNCTION adk._otlp_secret(p_name text, OUT r_value text, OUT r_allowed_hosts text[])
RETURNS SETOF record
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT s.value, s.allowed_hosts
      FROM adk.secrets s
     WHERE s.name = p_name;
END
$$;

-- The spans p_refs the OTLP collector accepted, out of the exporter's
-- queue.
CREATE FUNCTION adk._span_exports_dequeue(p_refs bigint[])
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    DELETE FROM adk.span_exports x
     WHERE x.span_ref = ANY (p_refs);
END
$$;
