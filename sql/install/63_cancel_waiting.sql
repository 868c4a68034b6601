-- ---------------------------------------------------------------------
-- Cancelling a paused invocation (adk_cancel, src/worker/cancel.c;
-- docs/runs.md "Cancelling a paused run").  A run waiting for input
-- runs nowhere: there is nothing to signal, so adk_cancel ends it here,
-- in its caller's transaction and under the session row lock adk_run
-- holds while it resumes (so an answer and a cancel at the same time are
-- one before the other: the second finds the invocation no longer
-- waiting, or its request cancelled).
--
-- What stays in the session is an event in ADK's wire format per waiting
-- node, as a run stopped by adk_cancel leaves one: error_code CANCELLED,
-- node_info.path the node.  adk._derive_run_states (62_hitl.sql) reads a
-- request made before such an event of its invocation as no longer
-- pending, so adk_rebuild_run_states gives the same rows: 'cancelled',
-- nothing pending.
-- ---------------------------------------------------------------------

-- The role the waiting invocation p_invocation runs as (adk_cancel checks
-- the caller may cancel its runs before anything is locked); NULL when
-- it is not waiting.
CREATE FUNCTION adk._waiting_invocation_role(p_invocation text)
RETURNS name
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT x.role_name FROM adk.invocations x
     WHERE x.invocation_id OPERATOR(pg_catalog.=) p_invocation
       AND x.status OPERATOR(pg_catalog.=) 'waiting'
$$;

-- Cancel the waiting invocation p_invocation that runs as p_role: its
-- session row locked (as adk_run locks it) and the invocation found
-- still waiting under that lock, an error event CANCELLED for each of
-- its waiting nodes, its run_states rows brought to what the events now
-- say (cancelled, nothing pending), the invocation and the job of a
-- queued run that paused 'cancelled'.  false: it is not waiting (any
-- more), or now runs as another role (adk_cancel checks again).
CREATE FUNCTION adk._cancel_waiting(p_invocation text, p_role name)
RETURNS boolean
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    i record;
    r record;
    msg text := 'adk_cancel cancelled the run while it waited for input';
BEGIN
    SELECT x.app_name, x.user_id, x.session_id INTO i
      FROM adk.invocations x
     WHERE x.invocation_id = p_invocation AND x.status = 'waiting';
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM 1 FROM adk.sessions s
      WHERE s.app_name = i.app_name AND s.user_id = i.user_id AND s.id = i.session_id
        FOR UPDATE;
    -- a new snapshot: what a resume that held the lock committed
    PERFORM 1 FROM adk.invocations x
      WHERE x.invocation_id = p_invocation AND x.status = 'waiting' AND x.role_name = p_role;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM adk.run_states s
                    WHERE s.app_name = i.app_name AND s.user_id = i.user_id
                      AND s.session_id = i.session_id AND s.invocation_id = p_invocation) THEN
        PERFORM adk._refresh_run_states(i.app_name, i.user_id, i.session_id, p_invocation);
    END IF;
    -- the rows a resume locks (adk._resume_interrupts), in its order
    FOR r IN
        SELECT s.node_path, s.agent, s.branch, s.triggered_by, s.graph_hash
          FROM adk.run_states s
         WHERE s.app_name = i.app_name AND s.user_id = i.user_id AND s.session_id = i.session_id
           AND s.invocation_id = p_invocation AND s.status = 'waiting'
         ORDER BY s.node_path
           FOR UPDATE
    LOOP
        INSERT INTO adk.events (id, app_name, user_id, session_id, invocation_id, "timestamp",
                                event_data)
        SELECT k.id, i.app_name, i.user_id, i.session_id, p_invocation, clock_timestamp(),
               jsonb_strip_nulls(jsonb_build_object(
                   'id', k.id, 'invocation_id', p_invocation, 'author', r.agent,
                   'branch', r.branch, 'error_code', 'CANCELLED', 'error_message', msg,
                   'actions', '{}'::jsonb,
                   'node_info', jsonb_build_object('path', r.node_path),
                   'custom_metadata', nullif(jsonb_strip_nulls(jsonb_build_object(
                       'adk_triggered_by', r.triggered_by, 'adk_graph_hash', r.graph_hash)),
                       '{}'::jsonb)))
          FROM (SELECT gen_random_uuid()::text AS id) k;
    END LOOP;
    PERFORM adk._refresh_run_states(i.app_name, i.user_id, i.session_id, p_invocation);
    UPDATE adk.invocations x
       SET status = 'cancelled', ended_at = clock_timestamp(),
           error_code = 'CANCELLED', error_message = msg
     WHERE x.invocation_id = p_invocation;
    UPDATE adk.jobs j
       SET status = 'cancelled', finished_at = clock_timestamp(), error = msg
     WHERE j.invocation_id = p_invocation AND j.status = 'waiting';
    RETURN true;
END
$$;

-- The first of p_ids (function responses' ids) that is a request of
-- p_invocation which adk_cancel cancelled while it was pending: an error
-- event CANCELLED of that invocation follows the call, and no user's
-- response answered it before.  NULL: none.  adk_run refuses such an
-- answer (src/runner/hitl.c).
CREATE FUNCTION adk._cancelled_request(p_app text, p_user text, p_session text,
                                       p_invocation text, p_ids text[])
RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN (
        SELECT u.id
          FROM unnest(p_ids) WITH ORDINALITY AS u(id, n)
          JOIN adk.live_events c
            ON c.app_name = p_app AND c.user_id = p_user AND c.session_id = p_session
           AND c.invocation_id = p_invocation
           AND coalesce(c.event_data ->> 'author', 'user') <> 'user'
           AND c.event_data -> 'long_running_tool_ids' ? u.id
           AND c.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
         WHERE EXISTS (SELECT 1 FROM adk.invocations x
                        WHERE x.invocation_id = p_invocation AND x.status = 'cancelled')
           AND EXISTS (
               SELECT 1 FROM adk.live_events k
                WHERE k.app_name = p_app AND k.user_id = p_user AND k.session_id = p_session
                  AND k.invocation_id = p_invocation AND k.seq > c.seq
                  AND coalesce(k.event_data ->> 'author', 'user') <> 'user'
                  AND k.event_data ->> 'error_code' = 'CANCELLED'
                  AND NOT EXISTS (
                      SELECT 1 FROM adk.live_events a
                       CROSS JOIN LATERAL adk._parts(a.event_data -> 'content') p
                       WHERE a.app_name = p_app AND a.user_id = p_user AND a.session_id = p_session
                         AND a.seq > c.seq AND a.seq < k.seq
                         AND a.event_data ->> 'author' = 'user'
                         AND a.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
                         AND p #>> '{function_response,id}' = u.id))
         ORDER BY u.n LIMIT 1);
END
$$;
