-- ---------------------------------------------------------------------
-- Rewind and edit (docs/sessions-lifecycle.md, "Rewind and edit"): the
-- writers.  What a rewind event does to the history: 12_rewound.sql.
-- ---------------------------------------------------------------------
-- adk_rewind(app, user, session, before_invocation_id) checks the ids and
-- the caller's tenancy as the caller, then runs adk._rewind as the owner
-- of schema adk (src/store/lifecycle.c), which: locks the session row;
-- refuses while a run of the session is running; makes a state delta
-- that sets each session key (not app:, user: or temp:) back to its value
-- before the invocation's first event (null for a key that did not exist
-- then); and an artifact delta that gives each session artifact changed
-- since then a new version equal to the old one (an empty one when it did
-- not exist then), as ADK Python does; appends the rewind event; and
-- cancels a run paused in the rewound range.  Returns the rewind event as
-- stored.
-- ---------------------------------------------------------------------
CREATE FUNCTION adk._rewind(p_app text, p_user text, p_session text, p_before text)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    cur jsonb;
    at_point jsonb := '{}';
    delta jsonb := '{}';
    versions_then jsonb := '{}';
    versions_now jsonb := '{}';
    art_delta jsonb := '{}';
    first_seq bigint;
    r record;
    k text;
    v jsonb;
    old_version integer;
    new_version integer;
    rewind_id text := 'e-' OPERATOR(pg_catalog.||) pg_catalog.gen_random_uuid()::text;
    stored jsonb;
BEGIN
    PERFORM adk._check_id('session id', p_session);
    IF p_before IS NULL THEN
        RAISE EXCEPTION 'before_invocation_id must not be null' USING ERRCODE = '22004';
    END IF;
    SELECT s.state INTO cur FROM adk.sessions s
     WHERE s.app_name OPERATOR(pg_catalog.=) $1 AND s.user_id OPERATOR(pg_catalog.=) $2
       AND s.id OPERATOR(pg_catalog.=) $3
       FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM adk._session_not_found($1, $2, $3);
    END IF;
    IF EXISTS (SELECT 1 FROM adk.invocations i
                WHERE i.app_name OPERATOR(pg_catalog.=) $1 AND i.user_id OPERATOR(pg_catalog.=) $2
                  AND i.session_id OPERATOR(pg_catalog.=) $3
                  AND i.status OPERATOR(pg_catalog.=) 'running') THEN
        RAISE EXCEPTION 'session "%" has a running invocation', $3 USING ERRCODE = '55006',
            HINT = 'Rewind after the run ends (adk_wait), or cancel it (adk_cancel).';
    END IF;
    -- the first event of the invocation (ADK: the first event with that
    -- invocation id, rewound or not -- so a rewind can be rewound)
    SELECT min(e.seq) INTO first_seq FROM adk.events e
     WHERE e.app_name OPERATOR(pg_catalog.=) $1 AND e.user_id OPERATOR(pg_catalog.=) $2
       AND e.session_id OPERATOR(pg_catalog.=) $3
       AND e.invocation_id OPERATOR(pg_catalog.=) $4;
    IF first_seq IS NULL THEN
        RAISE EXCEPTION 'invocation "%" is not in session "%"', $4, $3 USING ERRCODE = '42704',
            HINT = 'adk.event_log lists the session''s invocations.';
    END IF;

    -- the state and the artifact versions before that event, and now
    FOR r IN SELECT e.seq, e.event_data -> 'actions' AS a FROM adk.events e
              WHERE e.app_name OPERATOR(pg_catalog.=) $1 AND e.user_id OPERATOR(pg_catalog.=) $2
                AND e.session_id OPERATOR(pg_catalog.=) $3
              ORDER BY e.seq
    LOOP
        IF r.seq OPERATOR(pg_catalog.<) first_seq THEN
            FOR k, v IN SELECT * FROM pg_catalog.jsonb_each(coalesce(r.a -> 'state_delta', '{}')) LOOP
                CONTINUE WHEN k ^@ 'app:' OR k ^@ 'user:' OR k ^@ 'temp:';
                IF v OPERATOR(pg_catalog.=) 'null'::jsonb THEN
                    at_point := at_point OPERATOR(pg_catalog.-) k;
                ELSE
                    at_point := at_point OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object(k, v);
                END IF;
            END LOOP;
            versions_then := versions_then OPERATOR(pg_catalog.||) coalesce(r.a -> 'artifact_delta', '{}');
        END IF;
        versions_now := versions_now OPERATOR(pg_catalog.||) coalesce(r.a -> 'artifact_delta', '{}');
    END LOOP;
    cur := coalesce(cur, '{}');
    FOR k, v IN SELECT * FROM pg_catalog.jsonb_each(at_point) LOOP
        IF cur -> k IS DISTINCT FROM v THEN
            delta := delta OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object(k, v);
        END IF;
    END LOOP;
    FOR k IN SELECT pg_catalog.jsonb_object_keys(cur) LOOP
        CONTINUE WHEN k ^@ 'app:' OR k ^@ 'user:' OR k ^@ 'temp:' OR at_point ? k;
        IF cur -> k OPERATOR(pg_catalog.<>) 'null'::jsonb THEN
            delta := delta OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object(k, NULL::jsonb);
        END IF;
    END LOOP;
    FOR k, v IN SELECT * FROM pg_catalog.jsonb_each(versions_now) LOOP
        CONTINUE WHEN k ^@ 'user:' OR versions_then -> k IS NOT DISTINCT FROM v;
        old_version := (versions_then ->> k)::integer;
        IF old_version IS NULL THEN
            new_version := @extschema@.adk_save_artifact($1, $2, $3, k, '\x'::bytea, 'application/octet-stream');
        ELSE
            SELECT @extschema@.adk_save_artifact($1, $2, $3, k, coalesce(h.data, a.data), a.mime_type)
              INTO new_version
              FROM adk.artifacts a
              LEFT JOIN adk.artifacts h      -- a fork's reference: the holder's bytes
                ON h.app_name OPERATOR(pg_catalog.=) a.app_name AND h.user_id OPERATOR(pg_catalog.=) a.user_id
               AND h.session_id OPERATOR(pg_catalog.=) a.source_session_id
               AND h.filename OPERATOR(pg_catalog.=) a.filename AND h.version OPERATOR(pg_catalog.=) a.version
             WHERE a.app_name OPERATOR(pg_catalog.=) $1 AND a.user_id OPERATOR(pg_catalog.=) $2
               AND a.session_id OPERATOR(pg_catalog.=) $3 AND a.filename OPERATOR(pg_catalog.=) k
               AND a.version OPERATOR(pg_catalog.=) old_version;
            IF new_version IS NULL THEN
                new_version := @extschema@.adk_save_artifact($1, $2, $3, k, '\x'::bytea, 'application/octet-stream');
            END IF;
        END IF;
        art_delta := art_delta OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object(k, new_version);
    END LOOP;

    stored := @extschema@.adk_append_event($1, $2, $3, pg_catalog.jsonb_build_object(
        'invocation_id', rewind_id,
        'author', 'user',
        'actions', pg_catalog.jsonb_build_object(
            'rewind_before_invocation_id', $4,
            'state_delta', delta,
            'artifact_delta', art_delta)));

    -- a run paused in the rewound range waits no more
    UPDATE adk.run_states rs
       SET status = 'cancelled', interrupt_ids = '{}', updated_at = pg_catalog.clock_timestamp()
     WHERE rs.app_name OPERATOR(pg_catalog.=) $1 AND rs.user_id OPERATOR(pg_catalog.=) $2
       AND rs.session_id OPERATOR(pg_catalog.=) $3 AND rs.status OPERATOR(pg_catalog.=) 'waiting'
       AND rs.invocation_id IN (SELECT e.invocation_id FROM adk.events e
                                 WHERE e.app_name OPERATOR(pg_catalog.=) $1
                                   AND e.user_id OPERATOR(pg_catalog.=) $2
                                   AND e.session_id OPERATOR(pg_catalog.=) $3
                                   AND e.seq OPERATOR(pg_catalog.>=) first_seq);
    UPDATE adk.invocations i SET status = 'cancelled', ended_at = pg_catalog.clock_timestamp()
     WHERE i.app_name OPERATOR(pg_catalog.=) $1 AND i.user_id OPERATOR(pg_catalog.=) $2
       AND i.session_id OPERATOR(pg_catalog.=) $3 AND i.status OPERATOR(pg_catalog.=) 'waiting'
       AND i.invocation_id IN (SELECT e.invocation_id FROM adk.events e
                                WHERE e.app_name OPERATOR(pg_catalog.=) $1
                                  AND e.user_id OPERATOR(pg_catalog.=) $2
                                  AND e.session_id OPERATOR(pg_catalog.=) $3
                                  AND e.seq OPERATOR(pg_catalog.>=) first_seq);
    RETURN stored;
END
$$;
CREATE FUNCTION adk_rewind(app_name text, user_id text, session_id text,
                           before_invocation_id text)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'adk_rewind_sql' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_rewind(text, text, text, text) IS
    'Rewind a session to before an invocation, as ADK Python does: appends a rewind event restoring session state and session artifacts; the rewound events stay stored and every reader of the history skips them. Refused while a run of the session is running.';

-- adk_edit_message: rewind before the invocation, then run the new message
-- in its place.
CREATE FUNCTION adk_edit_message(app_name text, user_id text, session_id text,
                                 invocation_id text, new_message text,
                                 options jsonb DEFAULT NULL)
RETURNS SETOF adk.run_event
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM adk.events e
                    WHERE e.app_name OPERATOR(pg_catalog.=) $1 AND e.user_id OPERATOR(pg_catalog.=) $2
                      AND e.session_id OPERATOR(pg_catalog.=) $3
                      AND e.invocation_id OPERATOR(pg_catalog.=) $4) THEN
        PERFORM @extschema@.adk_rewind($1, $2, $3, $4);      -- its error: not found
    END IF;
    IF NOT EXISTS (SELECT 1 FROM adk.events e
                    WHERE e.app_name OPERATOR(pg_catalog.=) $1 AND e.user_id OPERATOR(pg_catalog.=) $2
                      AND e.session_id OPERATOR(pg_catalog.=) $3
                      AND e.invocation_id OPERATOR(pg_catalog.=) $4
                      AND (e.event_data OPERATOR(pg_catalog.->>) 'author') OPERATOR(pg_catalog.=) 'user'
                      AND (e.event_data #> '{content,parts}') IS NOT NULL) THEN
        RAISE EXCEPTION 'invocation "%" has no user message to edit', $4 USING ERRCODE = '22023',
            HINT = 'Edit an invocation that a user message started; adk_rewind rewinds any.';
    END IF;
    PERFORM @extschema@.adk_rewind($1, $2, $3, $4);
    RETURN QUERY SELECT * FROM @extschema@.adk_run($1, $2, $3, $5, NULL::jsonb, $6);
END
$$;
COMMENT ON FUNCTION adk_edit_message(text, text, text, text, text, jsonb) IS
    'Edit a user message: rewind the session to before its invocation, then run new_message; returns adk_run''s rows.';
