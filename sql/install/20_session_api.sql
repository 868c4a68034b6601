-- ---------------------------------------------------------------------
-- Session service API (docs/sessions.md).
--
-- Identities are non-empty strings of at most 191 characters (ADK's key
-- width): NULL is SQLSTATE 22004, empty or too long 22023.  An unknown
-- session is 42704 for every function (a missing session is an error, as
-- with DROP without IF EXISTS).  Writes run as the owner of schema adk, so
-- adk_user needs no direct write grant on the store's tables.
-- ---------------------------------------------------------------------

CREATE FUNCTION adk._check_id(what text, value text) RETURNS text
    AS 'MODULE_PATHNAME', 'adk_check_id_sql' LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- Keys of obj that carry the given scope prefix, with the prefix removed
-- ('app:' / 'user:'), or the unprefixed keys (prefix NULL).  temp: keys
-- are never returned.
CREATE FUNCTION adk._scope_state(obj jsonb, prefix text) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(jsonb_object_agg(CASE WHEN prefix IS NULL THEN key
                                          ELSE substr(key, length(prefix) + 1) END,
                                     value), '{}'::jsonb)
      FROM jsonb_each(coalesce(obj, '{}'::jsonb))
     WHERE CASE WHEN prefix IS NULL
                THEN key NOT LIKE 'app:%' AND key NOT LIKE 'user:%' AND key NOT LIKE 'temp:%'
                ELSE starts_with(key, prefix) END
$$;

-- obj's keys with prefix added: the merged view of app: / user: state.
CREATE FUNCTION adk._prefixed(obj jsonb, prefix text) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(jsonb_object_agg(prefix || key, value), '{}'::jsonb)
      FROM jsonb_each(coalesce(obj, '{}'::jsonb))
$$;

-- A session as ADK's Session JSON, from its columns (not a row of
-- adk.sessions: Citus cannot pass a distributed table's row type to a
-- function).
CREATE FUNCTION adk._session_json(p_id text, p_app text, p_user text, p_state jsonb,
                                  p_update_time timestamptz, p_events jsonb)
RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    app_state jsonb;
    user_state jsonb;
BEGIN
    SELECT a.state INTO app_state FROM adk.app_states a WHERE a.app_name = p_app;
    SELECT u.state INTO user_state FROM adk.user_states u
     WHERE u.app_name = p_app AND u.user_id = p_user;
    RETURN jsonb_build_object(
        'id', p_id,
        'app_name', p_app,
        'user_id', p_user,
        'state', p_state || adk._prefixed(app_state, 'app:') || adk._prefixed(user_state, 'user:'),
        'events', p_events,
        'last_update_time', extract(epoch FROM p_update_time));
END
$$;

CREATE FUNCTION adk._session_not_found(app_name text, user_id text, session_id text)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RAISE EXCEPTION 'session "%" does not exist for app "%" and user "%"',
        session_id, app_name, user_id
        USING ERRCODE = '42704',
              HINT = 'Create it with adk_create_session(), or let adk_run() create it.';
END
$$;

CREATE FUNCTION adk_create_session(app_name text, user_id text,
                                   session_id text DEFAULT NULL,
                                   state jsonb DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
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
COMMENT ON FUNCTION adk_create_session(text, text, text, jsonb) IS
    'Create a session (id generated when NULL); state keys app:/user: go to their scope, temp: are dropped. Returns the session as ADK''s Session JSON. A second create of the same id fails with 23505.';

CREATE FUNCTION adk_get_session(app_name text, user_id text, session_id text,
                                num_recent_events integer DEFAULT NULL,
                                after_seq bigint DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    s adk.sessions;
    evs jsonb;
BEGIN
    PERFORM adk._check_id('app name', app_name);
    PERFORM adk._check_id('user id', user_id);
    PERFORM adk._check_id('session id', session_id);
    PERFORM adk._tenancy_check(app_name, user_id);
    IF num_recent_events < 0 THEN
        RAISE EXCEPTION 'num_recent_events must not be negative' USING ERRCODE = '22023';
    END IF;

    SELECT * INTO s FROM adk.sessions x
     WHERE x.app_name = $1 AND x.user_id = $2 AND x.id = $3;
    IF NOT FOUND THEN
        PERFORM adk._session_not_found(app_name, user_id, session_id);
    END IF;

    -- newest first through the (app, user, session, seq) index, then put
    -- back in order
    SELECT coalesce(jsonb_agg(e.event_data ORDER BY e.seq), '[]'::jsonb) INTO evs
      FROM (SELECT x.event_data, x.seq FROM adk.events x
             WHERE x.app_name = $1 AND x.user_id = $2 AND x.session_id = $3
               AND x.seq > coalesce(after_seq, 0)
             ORDER BY x.seq DESC
             LIMIT num_recent_events) e;

    RETURN adk._session_json(s.id, s.app_name, s.user_id, s.state, s.update_time, evs);
END
$$;
COMMENT ON FUNCTION adk_get_session(text, text, text, integer, bigint) IS
    'A session as ADK''s Session JSON: id, app_name, user_id, merged state (app:/user: prefixed), events in order, last_update_time (epoch seconds). num_recent_events keeps the newest N; after_seq keeps events with a greater seq.';

CREATE TYPE adk.session_summary AS (
    session_id text, app_name text, user_id text, state jsonb,
    create_time timestamptz, update_time timestamptz, last_seq bigint);

CREATE FUNCTION adk_list_sessions(app_name text, user_id text DEFAULT NULL)
RETURNS SETOF adk.session_summary
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM adk._check_id('app name', $1);
    IF $2 IS NOT NULL THEN
        PERFORM adk._check_id('user id', $2);
        PERFORM adk._tenancy_check($1, $2);
    END IF;
    -- without a user id: every session the caller may see (row-level
    -- security).  The state is merged by joins, not by a function reading
    -- app_states per row: Citus runs this on the shards, where such a
    -- function cannot read.
    RETURN QUERY
        SELECT s.id::text, s.app_name::text, s.user_id::text,
               s.state || adk._prefixed(a.state, 'app:') || adk._prefixed(u.state, 'user:'),
               s.create_time, s.update_time, s.last_seq
          FROM adk.sessions s
          LEFT JOIN adk.app_states a ON a.app_name = s.app_name
          LEFT JOIN adk.user_states u ON u.app_name = s.app_name AND u.user_id = s.user_id
         WHERE s.app_name = $1 AND ($2 IS NULL OR s.user_id = $2)
         ORDER BY s.update_time DESC, s.id;
END
$$;
COMMENT ON FUNCTION adk_list_sessions(text, text) IS
    'Sessions of an app (optionally of one user), newest first, with merged state and without events.';

CREATE FUNCTION adk_delete_session(app_name text, user_id text, session_id text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM adk._check_id('app name', app_name);
    PERFORM adk._check_id('user id', user_id);
    PERFORM adk._check_id('session id', session_id);
    -- its events go with it (trigger adk_sessions_delete_events)
    DELETE FROM adk.sessions s
     WHERE s.app_name = $1 AND s.user_id = $2 AND s.id = $3;
    IF NOT FOUND THEN
        PERFORM adk._session_not_found(app_name, user_id, session_id);
    END IF;
END
$$;
COMMENT ON FUNCTION adk_delete_session(text, text, text) IS
    'Delete a session with its events; app and user state stay.';

CREATE FUNCTION adk_append_event(app_name text, user_id text, session_id text, event jsonb)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'adk_append_event' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_append_event(text, text, text, jsonb) IS
    'Append an event (ADK snake_case JSON) to a session under its row lock: assigns seq and a strictly increasing millisecond timestamp, applies actions.state_delta by scope. Returns the event as stored. A partial event is returned unstored.';
