-- adk_runner 0.8.0 — the full install script of release 0.8.0, frozen.
-- Never edit it: changes go into the upgrade script to the next release.
-- (It was assembled from sql/install/*.sql as they were at that release.)

\echo Use "CREATE EXTENSION adk_runner" to load this file. \quit

-- Tables and views (the nouns) live in schema adk; functions (the verbs)
-- live in the extension's schema, public by default.
CREATE SCHEMA adk;
COMMENT ON SCHEMA adk IS 'adk_runner: sessions, events, state and the rest of the ADK store';

-- Roles (docs/security.md).  Roles are cluster-wide: another database may have
-- created them already.
DO $roles$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'adk_user') THEN
        CREATE ROLE adk_user NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'adk_admin') THEN
        CREATE ROLE adk_admin NOLOGIN;
    END IF;
END
$roles$;
-- ---------------------------------------------------------------------
-- The session store (docs/sessions.md).
--
-- The five tables below are shared with Google's own ADK runtimes: ADK-JS
-- 2.0's DatabaseSessionService (pointed at this schema with ?schema=adk)
-- and ADK Python's v1 DatabaseSessionService can read and continue the
-- sessions adk_run writes.  ADK-JS rewrites anything it does not know on
-- these five tables at every start, so they carry exactly ADK's columns,
-- types, NOT NULL without defaults and primary keys in ADK-JS's order --
-- and none of our indexes, foreign keys or checks.  Ours live on the single
-- hash partition of each partitioned table, and in triggers, which ADK-JS never looks at.
-- Our own extra columns (seq, last_seq, last_event_time) survive its sync.
-- See ../shared/ADK_SCHEMA.md in the project notes.
-- ---------------------------------------------------------------------

CREATE TABLE adk.adk_internal_metadata (
    key   varchar(255) NOT NULL,
    value varchar(255) NOT NULL,
    CONSTRAINT adk_internal_metadata_pkey PRIMARY KEY (key)
);
INSERT INTO adk.adk_internal_metadata (key, value) VALUES ('schema_version', '1');

CREATE TABLE adk.app_states (
    app_name    varchar(191) NOT NULL,
    state       jsonb NOT NULL,
    update_time timestamptz NOT NULL,
    CONSTRAINT app_states_pkey PRIMARY KEY (app_name)
);

CREATE TABLE adk.user_states (
    app_name    varchar(191) NOT NULL,
    user_id     varchar(191) NOT NULL,
    state       jsonb NOT NULL,
    update_time timestamptz NOT NULL,
    CONSTRAINT user_states_pkey PRIMARY KEY (app_name, user_id)
);

CREATE TABLE adk.sessions (
    id              varchar(191) NOT NULL,
    app_name        varchar(191) NOT NULL,
    user_id         varchar(191) NOT NULL,
    state           jsonb NOT NULL,
    create_time     timestamptz NOT NULL,
    update_time     timestamptz NOT NULL,
    -- ours: seq of the newest event, and that event's time
    last_seq        bigint NOT NULL DEFAULT 0,
    last_event_time timestamptz,
    CONSTRAINT sessions_pkey PRIMARY KEY (id, app_name, user_id)
) PARTITION BY HASH (app_name);

CREATE TABLE adk.sessions_p0 PARTITION OF adk.sessions
    FOR VALUES WITH (MODULUS 1, REMAINDER 0);
-- a user's sessions (adk_list_sessions), and one session by its key in
-- app-first order.  Deliberately not on update_time: every append moves
-- update_time, and an index on it would make every session update a
-- non-HOT one (and, with stale statistics, tempt the planner to find a
-- session through a user's whole list).  Both unique indexes here find one
-- session exactly, whichever the planner picks.
CREATE UNIQUE INDEX sessions_p0_user_idx
    ON adk.sessions_p0 (app_name, user_id, id);

CREATE TABLE adk.events (
    id            varchar(191) NOT NULL,
    app_name      varchar(191) NOT NULL,
    user_id       varchar(191) NOT NULL,
    session_id    varchar(191) NOT NULL,
    invocation_id varchar(255) NOT NULL,
    "timestamp"   timestamptz NOT NULL,
    event_data    jsonb NOT NULL,
    -- ours: dense position in the session, assigned by the trigger below
    seq           bigint NOT NULL,
    CONSTRAINT events_pkey PRIMARY KEY (id, app_name, user_id, session_id)
) PARTITION BY HASH (session_id);

CREATE TABLE adk.events_p0 PARTITION OF adk.events
    FOR VALUES WITH (MODULUS 1, REMAINDER 0);
-- one session's events in order, the latest N, and those after a seq;
-- unique, so no two events of a session can share a seq
CREATE UNIQUE INDEX events_p0_session_seq_idx
    ON adk.events_p0 (app_name, user_id, session_id, seq);
-- a session's events in an isolation scope (a task's: adk.active_tasks,
-- 30_event_log.sql), in order; the others are not in it
CREATE INDEX events_p0_isolation_scope_idx
    ON adk.events_p0 (app_name, user_id, session_id, seq)
    WHERE (event_data ->> 'isolation_scope') <> '';
-- No foreign key to sessions: the insert trigger below already finds and
-- locks the session row of every new event (so an event can never outlive
-- a concurrent delete of its session), and a foreign key's own check would
-- lock that row a second time -- it measured as the largest single cost of
-- an append.  Deleting a session deletes its events by trigger instead.

-- Comments go on the partitions and on our own columns only: ADK-JS's
-- schema sync clears comments on its five tables and on their columns.
COMMENT ON TABLE adk.sessions_p0 IS 'ADK sessions (shared with ADK-JS / ADK Python v1): the one partition of adk.sessions';
COMMENT ON TABLE adk.events_p0 IS 'ADK events, event_data in ADK''s snake_case JSON: the one partition of adk.events';
COMMENT ON COLUMN adk.events.seq IS 'position of the event in its session: 1, 2, 3, ... (assigned on insert)';
COMMENT ON COLUMN adk.sessions.last_seq IS 'seq of the newest event of the session';

-- The time an event gets: the proposed time truncated to whole
-- milliseconds, at least 1 ms after the session's last event.  IMMUTABLE
-- (where timestamptz + interval is only STABLE), so that Citus can run the
-- session bump on a shard.
CREATE FUNCTION adk._next_event_time(last timestamptz, proposed timestamptz)
RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'adk_next_event_time' LANGUAGE C IMMUTABLE PARALLEL SAFE;
-- event_data with "timestamp" set to time (epoch milliseconds).
CREATE FUNCTION adk._event_at(event_data jsonb, "time" timestamptz) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'adk_event_at' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Every insert into adk.events, from any writer, gets its seq and time here.
CREATE FUNCTION adk._events_before_insert() RETURNS trigger
    AS 'MODULE_PATHNAME', 'adk_events_before_insert' LANGUAGE C;
CREATE TRIGGER adk_events_before_insert
    BEFORE INSERT ON adk.events
    FOR EACH ROW EXECUTE FUNCTION adk._events_before_insert();

-- An event keeps its place once stored.  ADK-JS re-appending an event id it
-- has already stored UPDATEs the row with its own clock's timestamp; keep
-- seq and time (and event_data.timestamp) as first assigned.
CREATE FUNCTION adk._events_keep_place() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    NEW.seq := OLD.seq;
    NEW."timestamp" := OLD."timestamp";
    NEW.event_data := jsonb_set(NEW.event_data, '{timestamp}',
                                to_jsonb((extract(epoch FROM OLD."timestamp") * 1000)::bigint));
    RETURN NEW;
END
$$;
CREATE TRIGGER adk_events_keep_place
    BEFORE UPDATE ON adk.events
    FOR EACH ROW
    WHEN (NEW.seq IS DISTINCT FROM OLD.seq
          OR NEW."timestamp" IS DISTINCT FROM OLD."timestamp"
          OR NEW.event_data -> 'timestamp' IS DISTINCT FROM OLD.event_data -> 'timestamp')
    EXECUTE FUNCTION adk._events_keep_place();

-- A session's events go with it, whoever deletes it.
CREATE FUNCTION adk._sessions_delete_events() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    DELETE FROM adk.events e
     WHERE e.app_name = OLD.app_name AND e.user_id = OLD.user_id AND e.session_id = OLD.id;
    RETURN OLD;
END
$$;
CREATE TRIGGER adk_sessions_delete_events
    AFTER DELETE ON adk.sessions
    FOR EACH ROW EXECUTE FUNCTION adk._sessions_delete_events();

-- sessions.update_time never moves backwards and never falls behind the
-- newest event, whatever another writer sets it to.
CREATE FUNCTION adk._sessions_before_update() RETURNS trigger
    AS 'MODULE_PATHNAME', 'adk_sessions_before_update' LANGUAGE C;
CREATE TRIGGER adk_sessions_before_update
    BEFORE UPDATE ON adk.sessions
    FOR EACH ROW EXECUTE FUNCTION adk._sessions_before_update();

-- pg_dump keeps the session store's rows.  Events keep their seq only when
-- restored with triggers disabled (pg_restore --disable-triggers).
SELECT pg_catalog.pg_extension_config_dump('adk.app_states', '');
SELECT pg_catalog.pg_extension_config_dump('adk.user_states', '');
SELECT pg_catalog.pg_extension_config_dump('adk.sessions_p0', '');
SELECT pg_catalog.pg_extension_config_dump('adk.events_p0', '');
-- ---------------------------------------------------------------------
-- Rewind (docs/sessions-lifecycle.md, "Rewind and edit"), as ADK Python's
-- Runner.rewind_async writes it: a rewind event -- author "user", a new
-- invocation id, actions.rewind_before_invocation_id, a state delta that
-- restores the session's own keys, an artifact delta that restores its
-- artifacts -- and nothing deleted.  The events from the first event of
-- the rewound invocation up to the rewind event are then "rewound": every
-- reader of the history skips them.
--
-- Which events are rewound (of those before p_before_seq, for a fork) is
-- ADK's rule (its _apply_rewinds): walk the
-- session back from the newest event; a rewind event jumps the walk to
-- the first event of the invocation it names (to itself alone when there
-- is none before it), and everything it jumped over is rewound -- also
-- rewind events, so rewinding a rewind brings back what it had rewound.
-- (A rewind event is one whose rewind_before_invocation_id is a string:
-- writers that store every field of ADK's EventActions store it as null
-- on every other event.)  The result is kept on the session row, adk.sessions.rewound (the seqs
-- of rewound events as one multirange), recomputed by a trigger whenever
-- a rewind event is inserted, by whichever writer: ADK Python's rewind
-- events are honoured as ours are.  Readers use adk.live_events.  (Here,
-- before the readers; adk_rewind itself is in 89_rewind.sql.)
-- ---------------------------------------------------------------------
ALTER TABLE adk.sessions ADD COLUMN rewound int8multirange NOT NULL DEFAULT '{}';
COMMENT ON COLUMN adk.sessions.rewound IS
    'the seqs of the session''s rewound events (rewind events included), which every reader of its history skips';

CREATE FUNCTION adk._rewound(p_app text, p_user text, p_session text,
                             p_before_seq bigint DEFAULT NULL) RETURNS int8multirange
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r record;
    result int8multirange := '{}';
    floor bigint := 9223372036854775807;
    first_seq bigint;
BEGIN
    FOR r IN SELECT e.seq, e.event_data #>> '{actions,rewind_before_invocation_id}' AS target
               FROM adk.events e
              WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
                AND (e.event_data #>> '{actions,rewind_before_invocation_id}') IS NOT NULL
                AND e.seq < coalesce(p_before_seq, 9223372036854775807)
              ORDER BY e.seq DESC
    LOOP
        CONTINUE WHEN r.seq >= floor;    -- inside a range already jumped over
        SELECT min(e.seq) INTO first_seq FROM adk.events e
         WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
           AND e.invocation_id = r.target AND e.seq < r.seq;
        first_seq := coalesce(first_seq, r.seq);
        result := result + int8multirange(int8range(first_seq, r.seq, '[]'));
        floor := first_seq;
    END LOOP;
    RETURN result;
END
$$;

CREATE FUNCTION adk._events_after_rewind() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE adk.sessions s
       SET rewound = adk._rewound(NEW.app_name, NEW.user_id, NEW.session_id)
     WHERE s.app_name = NEW.app_name AND s.user_id = NEW.user_id AND s.id = NEW.session_id;
    RETURN NULL;
END
$$;
CREATE TRIGGER adk_events_after_rewind
    AFTER INSERT ON adk.events
    FOR EACH ROW
    WHEN ((NEW.event_data #>> '{actions,rewind_before_invocation_id}') IS NOT NULL)
    EXECUTE FUNCTION adk._events_after_rewind();

-- The events every reader of a history reads: not the rewound ones.
-- (Queried for one session, the planner reads its session row once.)
CREATE VIEW adk.live_events WITH (security_invoker = true) AS
SELECT e.*
  FROM adk.events e
  JOIN adk.sessions s
    ON s.app_name OPERATOR(pg_catalog.=) e.app_name
   AND s.user_id OPERATOR(pg_catalog.=) e.user_id
   AND s.id OPERATOR(pg_catalog.=) e.session_id
 WHERE NOT (s.rewound OPERATOR(pg_catalog.@>) e.seq);
COMMENT ON VIEW adk.live_events IS
    'adk.events without the rewound events (adk.sessions.rewound): the history as prompts, compaction, routing and memory read it';
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
-- ---------------------------------------------------------------------
-- adk.event_log: events flattened for people.
--   SELECT seq, author, role, text, function_calls, function_responses, error
--     FROM adk.event_log WHERE session_id = 'session-1' ORDER BY seq;
-- reads like the conversation.  event_id (the event's id, last because
-- a view only grows at its end) finds the stored event again.
-- ---------------------------------------------------------------------

CREATE FUNCTION adk._parts(content jsonb) RETURNS SETOF jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT p FROM jsonb_array_elements(
        CASE WHEN jsonb_typeof(content -> 'parts') = 'array'
             THEN content -> 'parts' ELSE '[]'::jsonb END) AS p
$$;

CREATE VIEW adk.event_log AS
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
  FROM adk.live_events e;

COMMENT ON VIEW adk.event_log IS
    'Events flattened for reading (not the rewound ones): seq, time, author, role, text, function calls and responses, errors, the event id.';

-- ---------------------------------------------------------------------
-- adk.active_tasks: the open isolation scopes of each session
-- (docs/agent-modes.md).  A task agent's events carry isolation_scope,
-- the id of the call that delegated to it (ADK's field, whoever wrote
-- them); its scope is open until a successful finish_task response (one
-- without "error") is its newest event -- ADK-Go's
-- findActiveTaskIsolationScope: walking back, the first scoped event not
-- closed by such a response (rewound events do not count: adk.live_events).
-- agent is the scope's first author other
-- than the user; since_seq its first event, last_seq its newest.  The
-- session's active task is the open scope with the newest last_seq.
-- ---------------------------------------------------------------------
CREATE VIEW adk.active_tasks AS
SELECT t.app_name, t.user_id, t.session_id, t.scope, t.agent, t.since_seq, t.last_seq
  FROM (SELECT e.app_name, e.user_id, e.session_id,
               e.event_data ->> 'isolation_scope' AS scope,
               min(e.seq) AS since_seq,
               max(e.seq) AS last_seq,
               (array_agg(e.event_data ->> 'author' ORDER BY e.seq)
                  FILTER (WHERE e.event_data ->> 'author' IS DISTINCT FROM 'user'))[1] AS agent,
               (array_agg(jsonb_path_exists(e.event_data,
                   '$.content.parts[*].function_response ? (@.name == "finish_task" && !exists(@.response.error))')
                  ORDER BY e.seq DESC))[1] AS closed
          FROM adk.live_events e
         WHERE (e.event_data ->> 'isolation_scope') <> ''
         GROUP BY e.app_name, e.user_id, e.session_id, e.event_data ->> 'isolation_scope') t
 WHERE NOT t.closed;

COMMENT ON VIEW adk.active_tasks IS
    'Open isolation scopes (tasks) per session: scope (the delegating call id), agent, since_seq and last_seq; a scope closes with a successful finish_task response.';
-- ---------------------------------------------------------------------
-- Models, secrets and the model-call ledger (docs/models.md,
-- docs/observability.md, docs/security.md).
-- ---------------------------------------------------------------------

-- API keys kept in the database.  Readable by adk_admin only; a key is
-- only ever sent to one of its allowed hosts ('*' = any host, said
-- explicitly), so pointing a model at another endpoint cannot leak it.
CREATE TABLE adk.secrets (
    name          text PRIMARY KEY CHECK (name <> ''),
    value         text NOT NULL CHECK (value <> ''),
    allowed_hosts text[] NOT NULL
                  CHECK (cardinality(allowed_hosts) > 0 AND array_position(allowed_hosts, NULL) IS NULL),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE adk.secrets IS 'API keys; each may be sent only to its allowed_hosts. Readable by adk_admin only.';

CREATE TABLE adk.models (
    name           text PRIMARY KEY CHECK (name <> ''),
    provider       text NOT NULL CHECK (provider IN ('openai', 'gemini', 'anthropic')),
    endpoint       text NOT NULL CHECK (endpoint ~* '^https?://[^/?#@[:space:]]+(/[^?#[:space:]]*)?$'),
    model          text NOT NULL CHECK (model <> ''),
    api_key_env    text CHECK (api_key_env ~ '^[A-Za-z_][A-Za-z0-9_]*$'),
    api_key_secret text REFERENCES adk.secrets (name) ON UPDATE CASCADE,
    options        jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(options) = 'object'),
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    CHECK (api_key_env IS NULL OR api_key_secret IS NULL)
);
COMMENT ON TABLE adk.models IS 'Model definitions: provider (openai | gemini | anthropic), base endpoint as the provider SDK takes it, provider model id, where the key comes from, options';

-- The transport options a model or a call may set: header names and
-- values, timeouts and retries within bounds (model/guard.c).
CREATE FUNCTION adk._check_call_options(options jsonb) RETURNS void
    AS 'MODULE_PATHNAME', 'adk_check_call_options_sql' LANGUAGE C STRICT STABLE;

-- The "thinking" setting of a model's options or an agent's
-- generate_config (model/llm_thinking.c, docs/models.md "Thinking"); what
-- names where it is set in the error.
CREATE FUNCTION adk._check_thinking(thinking jsonb, what text) RETURNS void
    AS 'MODULE_PATHNAME', 'adk_check_thinking_sql' LANGUAGE C STRICT STABLE;

-- An endpoint as libcurl reads it, and a host a key may be bound to
-- (model/endpoint.c): NULL when valid, else what is wrong.
CREATE FUNCTION adk._endpoint_problem(url text) RETURNS text
    AS 'MODULE_PATHNAME', 'adk_endpoint_problem_sql' LANGUAGE C STRICT STABLE;
CREATE FUNCTION adk._host_entry_problem(entry text) RETURNS text
    AS 'MODULE_PATHNAME', 'adk_host_entry_problem_sql' LANGUAGE C STRICT STABLE;

-- Every INSERT/UPDATE is checked here, whoever writes it, with messages a
-- person can act on (the CHECK constraints above are the backstop).
CREATE FUNCTION adk._models_check_options() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    k text;
    v jsonb;
    problem text;
    f text;
    users text;
    cycle text[];
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
        ELSIF k = 'fallback_on' THEN
            -- which failures of this model go on to its fallbacks
            -- (model/fallback.c): HTTP statuses, status classes, error codes
            IF jsonb_typeof(v) <> 'array' OR EXISTS (
                   SELECT 1 FROM jsonb_array_elements(v) e
                    WHERE jsonb_typeof(e) <> 'string'
                       OR e #>> '{}' !~ '^([1-5][0-9][0-9]|[1-5]xx|[A-Z][A-Z0-9_]*)$') THEN
                RAISE EXCEPTION 'model option "fallback_on" must be an array of HTTP statuses, status classes or error codes'
                    USING ERRCODE = '22023',
                    HINT = 'For example ["429", "5xx", "TIMEOUT"] (the default), or [] to never fall back.';
            END IF;
        ELSIF k = 'thinking' THEN
            PERFORM adk._check_thinking(v, 'model option');
        ELSIF k = 'headers' THEN
            NULL;   -- checked below, by the rules every call's config is held to
        ELSIF k = 'system_instruction' THEN
            IF jsonb_typeof(v) <> 'string' THEN
                RAISE EXCEPTION 'model option "system_instruction" must be a string' USING ERRCODE = '22023';
            END IF;
        ELSE
            RAISE EXCEPTION 'unknown model option "%"', k USING ERRCODE = '22023',
                HINT = 'Known options: temperature, max_output_tokens, top_p, top_k, stop_sequences, presence_penalty, frequency_penalty, seed, thinking, system_instruction, timeout_ms, connect_timeout_ms, retries, max_request_bytes, headers, fallback_on.';
        END IF;
    END LOOP;
    -- headers, timeout_ms, connect_timeout_ms, retries (model/guard.c)
    PERFORM adk._check_call_options(NEW.options);
    -- fallbacks (88_fallbacks.sql): models that exist, never the model
    -- itself or one twice, no cycle; a model another one falls back to
    -- keeps its name.  Under the definitions lock, as the agent graph's
    -- checks (50_definitions.sql); while a dump is restored only existence
    -- is not checked.
    IF TG_OP = 'UPDATE' AND NEW.name IS DISTINCT FROM OLD.name THEN
        PERFORM adk._lock_definitions();
        users := adk._name_list('model', 'models',
                                ARRAY(SELECT m.name FROM adk.models m
                                       WHERE OLD.name = ANY (m.fallbacks) AND m.name <> OLD.name));
        IF users IS NOT NULL THEN
            RAISE EXCEPTION 'model "%" is a fallback of %', OLD.name, users USING ERRCODE = '23503',
                HINT = 'Remove it from their fallbacks first (adk_define_fallbacks).';
        END IF;
    END IF;
    IF cardinality(NEW.fallbacks) > 0 THEN
        PERFORM adk._lock_definitions();
        IF array_ndims(NEW.fallbacks) <> 1 OR array_lower(NEW.fallbacks, 1) <> 1 THEN
            RAISE EXCEPTION 'fallbacks of model "%" must be a one-dimensional array', NEW.name USING ERRCODE = '22023';
        END IF;
        FOREACH f IN ARRAY NEW.fallbacks LOOP
            IF f IS NULL OR f = '' THEN
                RAISE EXCEPTION 'fallbacks of model "%" must not contain null or empty names', NEW.name
                    USING ERRCODE = '22023';
            END IF;
            IF f = NEW.name THEN
                RAISE EXCEPTION 'model "%" cannot fall back to itself', NEW.name USING ERRCODE = '22023';
            END IF;
            IF cardinality(array_positions(NEW.fallbacks, f)) > 1 THEN
                RAISE EXCEPTION 'model "%" lists fallback "%" twice', NEW.name, f USING ERRCODE = '22023';
            END IF;
            IF adk._check_references() AND NOT EXISTS (SELECT 1 FROM adk.models m WHERE m.name = f) THEN
                RAISE EXCEPTION 'fallback model "%" of model "%" does not exist', f, NEW.name
                    USING ERRCODE = '42704', HINT = 'Define it first with adk_define_model().';
            END IF;
        END LOOP;
        -- a path from one of the fallbacks back to this model is a cycle
        WITH RECURSIVE walk(name, path) AS (
            SELECT x.f, ARRAY[NEW.name, x.f] FROM unnest(NEW.fallbacks) AS x(f)
            UNION ALL
            SELECT x.f, w.path || x.f
              FROM walk w
              JOIN adk.models m ON m.name = w.name AND w.name <> NEW.name
             CROSS JOIN LATERAL unnest(m.fallbacks) AS x(f)
             WHERE NOT (x.f = ANY (w.path[2:]))
        )
        SELECT w.path INTO cycle FROM walk w WHERE w.name = NEW.name LIMIT 1;
        IF cycle IS NOT NULL THEN
            RAISE EXCEPTION 'fallbacks of model "%" would make a cycle: %', NEW.name,
                array_to_string(cycle, ' -> ') USING ERRCODE = '22023',
                HINT = 'A model''s fallbacks are followed depth first; no model may lead back to one before it.';
        END IF;
    END IF;
    -- an INSERT keeps the updated_at it carries (a restored row its own)
    IF TG_OP = 'UPDATE' THEN
        NEW.updated_at := now();
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER adk_models_check_options
    BEFORE INSERT OR UPDATE ON adk.models
    FOR EACH ROW EXECUTE FUNCTION adk._models_check_options();

-- Backends keep the model definitions they have read (model/model_def.c);
-- any change to these two tables empties every backend's copy.
CREATE FUNCTION adk._definitions_changed() RETURNS trigger
    AS 'MODULE_PATHNAME', 'adk_definitions_changed' LANGUAGE C;
CREATE TRIGGER adk_models_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON adk.models
    FOR EACH STATEMENT EXECUTE FUNCTION adk._definitions_changed();
CREATE TRIGGER adk_secrets_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON adk.secrets
    FOR EACH STATEMENT EXECUTE FUNCTION adk._definitions_changed();

CREATE FUNCTION adk_define_model(name text, provider text, endpoint text, model text,
                                 api_key_env text DEFAULT NULL,
                                 api_key_secret text DEFAULT NULL,
                                 options jsonb DEFAULT '{}')
RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO adk.models AS m (name, provider, endpoint, model, api_key_env, api_key_secret, options)
    VALUES ($1, $2, rtrim($3, '/'), $4, $5, $6, coalesce($7, '{}'))
    ON CONFLICT ON CONSTRAINT models_pkey DO UPDATE
       SET provider = EXCLUDED.provider, endpoint = EXCLUDED.endpoint, model = EXCLUDED.model,
           api_key_env = EXCLUDED.api_key_env, api_key_secret = EXCLUDED.api_key_secret,
           options = EXCLUDED.options
$$;
COMMENT ON FUNCTION adk_define_model(text, text, text, text, text, text, jsonb) IS
    'Create or replace a model: provider openai | gemini | anthropic, endpoint as the provider SDK''s base URL, the provider''s model id, the key from a server environment variable or from adk.secrets, options (generation config, timeout_ms, retries, headers).';

CREATE FUNCTION adk_set_secret(name text, value text, allowed_hosts text[])
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    entry text;
    problem text;
BEGIN
    IF name IS NULL OR name = '' THEN
        RAISE EXCEPTION 'secret name must not be empty' USING ERRCODE = '22023';
    END IF;
    IF value IS NULL OR value = '' THEN
        -- the value itself is never shown
        RAISE EXCEPTION 'secret "%" must have a value', name USING ERRCODE = '22023';
    END IF;
    IF cardinality(allowed_hosts) IS DISTINCT FROM array_length(allowed_hosts, 1)
       OR coalesce(cardinality(allowed_hosts), 0) = 0
       OR array_position(allowed_hosts, NULL) IS NOT NULL
       OR array_position(allowed_hosts, '') IS NOT NULL THEN
        RAISE EXCEPTION 'secret "%" needs the hosts it may be sent to', name USING ERRCODE = '22023',
            HINT = 'Give host names or host:port, e.g. ARRAY[''api.openai.com''], or ARRAY[''*''] for any host.';
    END IF;
    -- each entry as the endpoint check will read it (model/endpoint.c)
    FOREACH entry IN ARRAY allowed_hosts LOOP
        problem := adk._host_entry_problem(lower(entry));
        IF problem IS NOT NULL THEN
            RAISE EXCEPTION 'invalid host "%" for secret "%"', entry, name USING ERRCODE = '22023',
                DETAIL = problem || '.',
                HINT = 'Give a host, host:port or scheme://host:port, e.g. api.openai.com, 127.0.0.1:8080 or https://api.openai.com; ''*'' is any host.';
        END IF;
    END LOOP;
    INSERT INTO adk.secrets AS s (name, value, allowed_hosts)
    VALUES (name, value, (SELECT array_agg(lower(h)) FROM unnest(allowed_hosts) h))
    ON CONFLICT ON CONSTRAINT secrets_pkey DO UPDATE
       SET value = EXCLUDED.value, allowed_hosts = EXCLUDED.allowed_hosts, updated_at = now();
END
$$;
COMMENT ON FUNCTION adk_set_secret(text, text, text[]) IS
    'Store an API key, bound to the hosts it may be sent to (host, host:port or scheme://host[:port]; ''*'' for any).';

-- One row per model request.
CREATE TABLE adk.model_calls (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    created_at    timestamptz NOT NULL DEFAULT now(),
    model         text NOT NULL,
    provider      text NOT NULL,
    url           text NOT NULL,
    invocation_id text,
    stream        boolean NOT NULL,
    http_status   integer,
    attempts      integer NOT NULL,
    latency_ms    double precision NOT NULL,
    input_tokens  bigint,
    output_tokens bigint,
    finish_reason text,
    error_code    text,
    error_message text,
    request       jsonb,   -- the provider request as sent
    response      jsonb,   -- the response as returned (ADK's LlmResponse shape)
    response_body text,    -- the provider's raw body (NULL when streamed, or not text)
    role_name     name NOT NULL DEFAULT current_user
);
-- Bodies are compressed with lz4 where the server has it: the ledger is
-- written on every model call, and pglz took longer than the row's insert.
DO $$
BEGIN
    IF 'lz4' = ANY ((SELECT enumvals FROM pg_catalog.pg_settings
                      WHERE name = 'default_toast_compression')::text[]) THEN
        ALTER TABLE adk.model_calls
            ALTER COLUMN request SET COMPRESSION lz4,
            ALTER COLUMN response SET COMPRESSION lz4,
            ALTER COLUMN response_body SET COMPRESSION lz4;
    END IF;
END
$$;
CREATE INDEX model_calls_created_at_idx ON adk.model_calls (created_at);
CREATE INDEX model_calls_invocation_idx ON adk.model_calls (invocation_id) WHERE invocation_id IS NOT NULL;
COMMENT ON TABLE adk.model_calls IS 'The model-call ledger: one row per request, bodies with secrets redacted; rows older than adk.model_calls_retention are removed as new ones are written.';

CREATE FUNCTION adk_generate(model text, contents jsonb, tools jsonb DEFAULT NULL, config jsonb DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'adk_generate' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_generate(text, jsonb, jsonb, jsonb) IS
    'One model call: contents = array of ADK contents, tools = array of {name, description, parameters}, config = generation config (+ system_instruction). Returns one LLM response (content, usage_metadata, finish_reason, or error_code/error_message).';

CREATE FUNCTION adk_generate_stream(model text, contents jsonb, tools jsonb DEFAULT NULL, config jsonb DEFAULT NULL)
RETURNS SETOF jsonb
AS 'MODULE_PATHNAME', 'adk_generate_stream' LANGUAGE C VOLATILE ROWS 20;
COMMENT ON FUNCTION adk_generate_stream(text, jsonb, jsonb, jsonb) IS
    'adk_generate with streaming: the partial responses ("partial": true), then the aggregated final response.';

-- definitions survive pg_dump (the ledger is a log, and is not dumped)
SELECT pg_catalog.pg_extension_config_dump('adk.secrets', '');
SELECT pg_catalog.pg_extension_config_dump('adk.models', '');
-- ---------------------------------------------------------------------
-- Definitions: tools, agents, apps and plugins (docs/agents.md).
--
-- Each definition is a row.  The adk_define_* functions upsert; plain
-- INSERT / UPDATE / DELETE go through the same triggers, so every writer
-- meets the same rules:
--
--   * values (names, kinds, JSON shapes) are checked row by row in BEFORE
--     triggers: SQLSTATE 22023;
--   * references between definitions (an agent's tools and sub-agents, an
--     app's plugins) are checked in AFTER row triggers, which run once the
--     whole statement is done, so one multi-row INSERT may list its rows in
--     any order: unknown names are 42704;
--   * the agent graph (one parent per agent, no cycles through sub_agents
--     or agents used as tools) is checked in the same AFTER triggers: 42P17;
--   * a definition still in use cannot be deleted or renamed: 23503.
--
-- Writers of definitions are serialized by one transaction-scoped advisory
-- lock (adk._lock_definitions), so two concurrent transactions cannot each
-- pass the graph checks and together break them (READ COMMITTED: the checks
-- read what the other one committed).  adk._check_agent_tree() repeats the
-- graph checks when a run starts, whatever happened to the rows since.
--
-- With check_function_bodies = off (set by pg_dump's output, as for
-- function bodies) references to other definitions, and the definer's
-- EXECUTE privilege on tool and plugin functions, are not checked on write:
-- pg_dump loads adk.agents before adk.tools, adk.apps before adk.plugins,
-- and each table's rows in any order, and grants come after the data.
-- Values and the graph rules are still checked.
-- ---------------------------------------------------------------------

-- Tool names a model may see that adk_runner itself provides, and those
-- an agent may list (transfer_to_agent is added by the runner when an agent
-- has sub-agents; adk_request_confirmation is the runner's confirmation
-- call).  No tool and no agent may take one of these names.
CREATE FUNCTION adk._reserved_tool_names() RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT ARRAY['transfer_to_agent', 'exit_loop', 'adk_request_confirmation',
                 'load_artifacts', 'load_memory', 'preload_memory']
$$;
CREATE FUNCTION adk._builtin_tools() RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT ARRAY['exit_loop', 'load_artifacts', 'load_memory', 'preload_memory']
$$;

-- Serializes writers of tools, agents, apps and plugins until commit.  The
-- two-key form keeps it apart from applications' single-key advisory locks.
CREATE FUNCTION adk._lock_definitions() RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    SELECT pg_catalog.pg_advisory_xact_lock(1633971039, 1684366963)  -- 'adk_', 'defs'
$$;

-- 'agent "a"' or 'agents "a", "b"' (sorted, without duplicates) for an
-- error message; NULL for no names.
CREATE FUNCTION adk._name_list(singular text, plural text, names text[]) RETURNS text
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE WHEN count(*) = 1 THEN singular ELSE plural END || ' '
           || string_agg(format('"%s"', n), ', ' ORDER BY n)
      FROM (SELECT DISTINCT n FROM unnest(names) AS n) AS d
    HAVING count(*) > 0
$$;

-- Are references between definitions checked?  Not while a dump is being
-- restored (check_function_bodies = off).
CREATE FUNCTION adk._check_references() RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT pg_catalog.current_setting('check_function_bodies')::boolean
$$;

-- ---------------------------------------------------------------------
-- Tools: SQL functions the model may call.
-- ---------------------------------------------------------------------

CREATE TABLE adk.tools (
    name                 text PRIMARY KEY CHECK (name ~ '^[A-Za-z_][A-Za-z0-9_-]{0,63}$'),
    function             regprocedure NOT NULL,
    description          text,
    parameters           jsonb CHECK (jsonb_typeof(parameters) = 'object'),
    long_running         boolean NOT NULL DEFAULT false,
    require_confirmation boolean NOT NULL DEFAULT false,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE adk.tools IS 'Tools: a SQL function, its description and JSON Schema parameters (derived from the function when NULL), long_running, require_confirmation';

-- The JSON Schema of one SQL type, as a model should supply it; NULL for a
-- pseudo-type (anyelement, internal, record, ...), which no model can give.
CREATE FUNCTION adk._type_schema(typ oid) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    t pg_catalog.pg_type;
BEGIN
    SELECT * INTO t FROM pg_catalog.pg_type WHERE oid = typ;
    IF NOT FOUND OR t.typtype = 'p' THEN
        RETURN NULL;
    ELSIF t.typtype = 'd' THEN
        RETURN adk._type_schema(t.typbasetype);
    ELSIF t.typtype = 'e' THEN
        RETURN pg_catalog.jsonb_build_object('type', 'string', 'enum',
            (SELECT pg_catalog.jsonb_agg(e.enumlabel ORDER BY e.enumsortorder)
               FROM pg_catalog.pg_enum e WHERE e.enumtypid = typ));
    ELSIF t.typcategory = 'A' AND t.typelem <> 0 THEN
        RETURN pg_catalog.jsonb_build_object('type', 'array', 'items', adk._type_schema(t.typelem));
    ELSIF typ IN ('pg_catalog.int2'::pg_catalog.regtype, 'pg_catalog.int4'::pg_catalog.regtype,
                  'pg_catalog.int8'::pg_catalog.regtype) THEN
        RETURN '{"type": "integer"}';
    ELSIF typ IN ('pg_catalog.numeric'::pg_catalog.regtype, 'pg_catalog.float4'::pg_catalog.regtype,
                  'pg_catalog.float8'::pg_catalog.regtype) THEN
        RETURN '{"type": "number"}';
    ELSIF typ = 'pg_catalog.bool'::pg_catalog.regtype THEN
        RETURN '{"type": "boolean"}';
    ELSIF typ IN ('pg_catalog.json'::pg_catalog.regtype, 'pg_catalog.jsonb'::pg_catalog.regtype) THEN
        RETURN '{"type": "object"}';
    ELSIF typ = 'pg_catalog.uuid'::pg_catalog.regtype THEN
        RETURN '{"type": "string", "format": "uuid"}';
    ELSIF typ = 'pg_catalog.date'::pg_catalog.regtype THEN
        RETURN '{"type": "string", "format": "date"}';
    ELSIF typ IN ('pg_catalog.timestamp'::pg_catalog.regtype, 'pg_catalog.timestamptz'::pg_catalog.regtype) THEN
        RETURN '{"type": "string", "format": "date-time"}';
    ELSE
        -- text, varchar, bpchar, name, "char", and anything else given as its
        -- text form
        RETURN '{"type": "string"}';
    END IF;
END
$$;

-- The input arguments of a function: position among the inputs, name,
-- type, mode (i, b = INOUT, v = VARIADIC) and whether it has a default.
CREATE FUNCTION adk._function_inputs(fn oid)
RETURNS TABLE (pos integer, arg_name text, arg_type oid, arg_mode "char", has_default boolean)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT i.pos, i.nm, i.typ, i.mode, i.pos > p.pronargs - p.pronargdefaults
      FROM pg_catalog.pg_proc p,
           LATERAL (SELECT pg_catalog.row_number() OVER (ORDER BY a.ord)::integer AS pos,
                           NULLIF(a.nm, '') AS nm, a.typ,
                           coalesce(a.mode, 'i') AS mode
                      FROM unnest(coalesce(p.proallargtypes, p.proargtypes::oid[]),
                                  p.proargmodes, p.proargnames)
                           WITH ORDINALITY AS a(typ, mode, nm, ord)
                     WHERE coalesce(a.mode, 'i') IN ('i', 'b', 'v')) i
     WHERE p.oid = fn
     ORDER BY i.pos
$$;

-- Can this function be a tool?  Raises naming the function when not.
CREATE FUNCTION adk._check_tool_function(fn regprocedure) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    p pg_catalog.pg_proc;
    a record;
BEGIN
    SELECT * INTO p FROM pg_catalog.pg_proc WHERE oid = fn;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'function with OID % does not exist', fn::oid USING ERRCODE = '42883';
    END IF;
    IF p.prokind <> 'f' THEN
        RAISE EXCEPTION '% is not a plain function', fn USING ERRCODE = '22023',
            DETAIL = format('It is %s.', CASE p.prokind WHEN 'p' THEN 'a procedure'
                                                        WHEN 'a' THEN 'an aggregate function'
                                                        WHEN 'w' THEN 'a window function'
                                                        ELSE 'not a plain function' END),
            HINT = 'A tool is a function the model''s arguments are passed to; wrap it in a plain function.';
    END IF;
    IF p.provariadic <> 0 THEN
        RAISE EXCEPTION 'function % has a VARIADIC argument', fn USING ERRCODE = '22023',
            HINT = 'Take an array argument instead: the model passes arguments by name.';
    END IF;
    IF (SELECT t.typtype = 'p' AND p.prorettype NOT IN ('pg_catalog.void'::pg_catalog.regtype,
                                                        'pg_catalog.record'::pg_catalog.regtype)
          FROM pg_catalog.pg_type t WHERE t.oid = p.prorettype) THEN
        RAISE EXCEPTION 'function % returns %, which a tool cannot return', fn, p.prorettype::regtype
            USING ERRCODE = '22023';
    END IF;
    FOR a IN SELECT * FROM adk._function_inputs(fn) LOOP
        IF a.arg_name IS NULL THEN
            RAISE EXCEPTION 'argument % of function % has no name', a.pos, fn USING ERRCODE = '22023',
                HINT = 'Name every argument: the names are the properties of the tool''s JSON Schema.';
        END IF;
        IF adk._type_schema(a.arg_type) IS NULL THEN
            RAISE EXCEPTION 'argument "%" of function % has type %, which a model cannot supply',
                a.arg_name, fn, a.arg_type::regtype USING ERRCODE = '22023',
                HINT = 'Use a concrete type: polymorphic and other pseudo-types cannot be given as JSON.';
        END IF;
    END LOOP;
END
$$;

CREATE FUNCTION adk._tool_schema(fn regprocedure) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF fn IS NULL THEN
        RETURN NULL;
    END IF;
    PERFORM adk._check_tool_function(fn);
    RETURN (SELECT pg_catalog.jsonb_build_object(
                'type', 'object',
                'properties', coalesce(pg_catalog.jsonb_object_agg(i.arg_name, adk._type_schema(i.arg_type)), '{}'),
                'required', coalesce(pg_catalog.jsonb_agg(i.arg_name ORDER BY i.pos)
                                         FILTER (WHERE NOT i.has_default), '[]'))
              FROM adk._function_inputs(fn) i);
END
$$;

CREATE FUNCTION adk_tool_schema(function regprocedure) RETURNS jsonb
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT adk._tool_schema($1)
$$;
COMMENT ON FUNCTION adk_tool_schema(regprocedure) IS
    'The JSON Schema of a function''s arguments as a tool: {"type": "object", "properties": {...}, "required": [...]}; arguments with defaults are optional ("required" may be []).';

-- Does a given "parameters" schema fit the function?  Its properties must
-- be arguments of the function, and every argument without a default must
-- be among them (the model could never supply it otherwise).
CREATE FUNCTION adk._check_tool_parameters(tool text, fn regprocedure, params jsonb) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    props jsonb := params -> 'properties';
    missing text;
    extra text;
BEGIN
    IF jsonb_typeof(params) IS DISTINCT FROM 'object' OR params -> 'type' IS DISTINCT FROM '"object"' THEN
        RAISE EXCEPTION 'parameters of tool "%" must be a JSON Schema object with "type": "object"', tool
            USING ERRCODE = '22023',
                  HINT = 'Leave parameters NULL to derive them from the function''s arguments.';
    END IF;
    IF props IS NOT NULL AND jsonb_typeof(props) <> 'object' THEN
        RAISE EXCEPTION '"properties" in the parameters of tool "%" must be an object', tool USING ERRCODE = '22023';
    END IF;
    IF params ? 'required' AND (jsonb_typeof(params -> 'required') <> 'array'
            OR EXISTS (SELECT 1 FROM jsonb_array_elements(params -> 'required') r
                        WHERE jsonb_typeof(r) <> 'string' OR NOT coalesce(props ? (r #>> '{}'), false))) THEN
        RAISE EXCEPTION '"required" in the parameters of tool "%" must list names of its properties', tool
            USING ERRCODE = '22023';
    END IF;
    SELECT string_agg(format('"%s"', k), ', ' ORDER BY k) INTO extra
      FROM jsonb_object_keys(coalesce(props, '{}')) k
     WHERE NOT EXISTS (SELECT 1 FROM adk._function_inputs(fn) i WHERE i.arg_name = k);
    IF extra IS NOT NULL THEN
        RAISE EXCEPTION 'parameters of tool "%" name properties that are not arguments of %: %', tool, fn, extra
            USING ERRCODE = '22023',
                  HINT = 'Property names are the function''s argument names.';
    END IF;
    SELECT string_agg(format('"%s"', i.arg_name), ', ' ORDER BY i.pos) INTO missing
      FROM adk._function_inputs(fn) i
     WHERE NOT i.has_default AND NOT coalesce(props ? i.arg_name, false);
    IF missing IS NOT NULL THEN
        RAISE EXCEPTION 'parameters of tool "%" leave out arguments of % that have no default: %', tool, fn, missing
            USING ERRCODE = '22023';
    END IF;
END
$$;

CREATE FUNCTION adk._tools_before_write() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    fn_changed boolean := TG_OP = 'INSERT' OR NEW.function IS DISTINCT FROM OLD.function;
BEGIN
    PERFORM adk._lock_definitions();
    IF NEW.name IS NULL THEN
        RAISE EXCEPTION 'tool name must not be null' USING ERRCODE = '22004';
    END IF;
    IF NEW.name !~ '^[A-Za-z_][A-Za-z0-9_-]{0,63}$' THEN
        RAISE EXCEPTION 'invalid tool name "%"', NEW.name USING ERRCODE = '22023',
            HINT = 'A tool name starts with a letter or underscore, followed by at most 63 letters, digits, underscores or hyphens.';
    END IF;
    IF NEW.name = ANY (adk._reserved_tool_names()) THEN
        RAISE EXCEPTION 'tool name "%" is reserved', NEW.name USING ERRCODE = '22023',
            DETAIL = 'transfer_to_agent, exit_loop, adk_request_confirmation, load_artifacts, load_memory and preload_memory are built into adk_runner.';
    END IF;
    IF EXISTS (SELECT 1 FROM adk.agents a WHERE a.name = NEW.name) THEN
        RAISE EXCEPTION 'tool name "%" is already used by an agent', NEW.name USING ERRCODE = '42710',
            DETAIL = 'An agent can be listed as a tool, so tools and agents share one set of names.';
    END IF;
    IF NEW.function IS NULL THEN
        RAISE EXCEPTION 'tool "%" needs a function', NEW.name USING ERRCODE = '22023';
    END IF;
    IF fn_changed THEN
        PERFORM adk._check_tool_function(NEW.function);
        IF adk._check_references() AND NOT has_function_privilege(current_user, NEW.function::oid, 'EXECUTE') THEN
            RAISE EXCEPTION 'permission denied for function %', NEW.function USING ERRCODE = '42501',
                DETAIL = format('Defining tool "%s" requires EXECUTE on its function.', NEW.name);
        END IF;
    END IF;
    IF NEW.description IS NULL THEN
        NEW.description := obj_description(NEW.function::oid, 'pg_proc');
    END IF;
    IF NEW.parameters IS NULL THEN
        NEW.parameters := adk._tool_schema(NEW.function);
    ELSIF fn_changed OR NEW.parameters IS DISTINCT FROM OLD.parameters THEN
        PERFORM adk._check_tool_parameters(NEW.name, NEW.function, NEW.parameters);
    END IF;
    NEW.long_running := coalesce(NEW.long_running, false);
    NEW.require_confirmation := coalesce(NEW.require_confirmation, false);
    IF TG_OP = 'UPDATE' THEN
        NEW.updated_at := now();
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER adk_tools_before_write
    BEFORE INSERT OR UPDATE ON adk.tools
    FOR EACH ROW EXECUTE FUNCTION adk._tools_before_write();

-- A definition still listed by another cannot be deleted or renamed (a
-- tool by an agent, a plugin by an app).  Arguments: what it is, what
-- lists it, the table and array column that list it, e.g.
-- ('tool', 'agent', 'agents', 'tools').
CREATE FUNCTION adk._still_used() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    users text;
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.name = OLD.name THEN
        RETURN NULL;
    END IF;
    EXECUTE format('SELECT adk._name_list(%L, %L, ARRAY(SELECT u.name FROM adk.%I u WHERE $1 = ANY (u.%I)))',
                   TG_ARGV[1], TG_ARGV[2], TG_ARGV[2], TG_ARGV[3])
       INTO users USING OLD.name;
    IF users IS NOT NULL THEN
        RAISE EXCEPTION '% "%" is still used by %', TG_ARGV[0], OLD.name, users USING ERRCODE = '23503',
            HINT = format('Remove it from the %s'' %s first.', TG_ARGV[2], TG_ARGV[3]);
    END IF;
    RETURN NULL;
END
$$;
CREATE FUNCTION adk._definitions_lock_trigger() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM adk._lock_definitions();
    RETURN OLD;
END
$$;
CREATE TRIGGER adk_tools_before_delete
    BEFORE DELETE ON adk.tools
    FOR EACH ROW EXECUTE FUNCTION adk._definitions_lock_trigger();
CREATE TRIGGER adk_tools_still_used
    AFTER DELETE OR UPDATE OF name ON adk.tools
    FOR EACH ROW EXECUTE FUNCTION adk._still_used('tool', 'agent', 'agents', 'tools');

CREATE FUNCTION adk_define_tool(function regprocedure, name text DEFAULT NULL,
                                description text DEFAULT NULL, parameters jsonb DEFAULT NULL,
                                long_running boolean DEFAULT false,
                                require_confirmation boolean DEFAULT false)
RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    tool_name text := $2;
BEGIN
    IF $1 IS NULL THEN
        RAISE EXCEPTION 'tool function must not be null' USING ERRCODE = '22004';
    END IF;
    IF tool_name IS NULL THEN
        SELECT p.proname INTO tool_name FROM pg_catalog.pg_proc p WHERE p.oid = $1;
        IF tool_name !~ '^[A-Za-z_][A-Za-z0-9_-]{0,63}$' THEN
            RAISE EXCEPTION 'function name "%" is not a valid tool name', tool_name USING ERRCODE = '22023',
                HINT = 'Give the tool a name: adk_define_tool(function, name => ...). A tool name starts with a letter or underscore, followed by at most 63 letters, digits, underscores or hyphens.';
        END IF;
    END IF;
    INSERT INTO adk.tools AS t (name, function, description, parameters, long_running, require_confirmation)
    VALUES (tool_name, $1, $3, $4, coalesce($5, false), coalesce($6, false))
    ON CONFLICT ON CONSTRAINT tools_pkey DO UPDATE
       SET function = EXCLUDED.function, description = EXCLUDED.description,
           parameters = EXCLUDED.parameters, long_running = EXCLUDED.long_running,
           require_confirmation = EXCLUDED.require_confirmation;
    RETURN tool_name;
END
$$;
COMMENT ON FUNCTION adk_define_tool(regprocedure, text, text, jsonb, boolean, boolean) IS
    'Create or replace a tool: a SQL function (name defaults to the function''s name; description to COMMENT ON FUNCTION; parameters to adk_tool_schema(function)). Returns the tool''s name.';

-- ---------------------------------------------------------------------
-- Agents.
-- ---------------------------------------------------------------------

CREATE TABLE adk.agents (
    name                        text PRIMARY KEY
                                CHECK (name ~ '^[A-Za-z_][A-Za-z0-9_]*$' AND length(name) <= 128 AND name <> 'user'),
    kind                        text NOT NULL DEFAULT 'llm'
                                CHECK (kind IN ('llm', 'sequential', 'parallel', 'loop', 'workflow')),
    model                       text REFERENCES adk.models (name) ON UPDATE CASCADE,
    instruction                 text,
    description                 text,
    tools                       text[] NOT NULL DEFAULT '{}',
    sub_agents                  text[] NOT NULL DEFAULT '{}',
    output_key                  text,
    disallow_transfer_to_parent boolean NOT NULL DEFAULT false,
    disallow_transfer_to_peers  boolean NOT NULL DEFAULT false,
    max_iterations              integer CHECK (max_iterations > 0),
    include_contents            text NOT NULL DEFAULT 'default' CHECK (include_contents IN ('default', 'none')),
    generate_config             jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(generate_config) = 'object'),
    created_at                  timestamptz NOT NULL DEFAULT now(),
    updated_at                  timestamptz NOT NULL DEFAULT now(),
    mode                        text CHECK (mode IN ('chat', 'task', 'single_turn')),
    input_schema                jsonb CHECK (jsonb_typeof(input_schema) = 'object'),
    output_schema               jsonb CHECK (jsonb_typeof(output_schema) = 'object')
);
COMMENT ON TABLE adk.agents IS 'Agents: kind (llm | sequential | parallel | loop | workflow: a graph workflow of adk.workflows, docs/workflows.md), model (NULL: the nearest ancestor''s), instruction, tools (tools, built-ins or agents used as tools), sub_agents (in order), transfer and generation settings, mode (chat | task | single_turn; NULL = chat) with input_schema and output_schema (docs/agent-modes.md)';

-- Row rules: names, kinds, what each kind may have, the shape of lists and
-- of generate_config.  References are checked after the statement.
CREATE FUNCTION adk._agents_before_write() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    k text;
    v jsonb;
    extra text[];
    dup text;
BEGIN
    PERFORM adk._lock_definitions();
    IF NEW.name IS NULL THEN
        RAISE EXCEPTION 'agent name must not be null' USING ERRCODE = '22004';
    END IF;
    IF NEW.name !~ '^[A-Za-z_][A-Za-z0-9_]*$' OR length(NEW.name) > 128 THEN
        RAISE EXCEPTION 'invalid agent name "%"', NEW.name USING ERRCODE = '22023',
            HINT = 'An agent name starts with a letter or underscore, followed by letters, digits or underscores; at most 128 characters.';
    END IF;
    IF NEW.name = 'user' THEN
        RAISE EXCEPTION 'agent name "user" is reserved' USING ERRCODE = '22023',
            DETAIL = 'Events written by the user have the author "user".';
    END IF;
    IF NEW.name = ANY (adk._reserved_tool_names()) THEN
        RAISE EXCEPTION 'agent name "%" is reserved', NEW.name USING ERRCODE = '22023',
            DETAIL = 'An agent can be used as a tool, and this is the name of a tool built into adk_runner.';
    END IF;
    IF (TG_OP = 'INSERT' OR NEW.name <> OLD.name)
       AND EXISTS (SELECT 1 FROM adk.tools t WHERE t.name = NEW.name) THEN
        RAISE EXCEPTION 'agent name "%" is already used by a tool', NEW.name USING ERRCODE = '42710',
            DETAIL = 'An agent can be listed as a tool, so tools and agents share one set of names.';
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.name <> OLD.name THEN
        SELECT string_agg(format('"%s"', a.name), ', ' ORDER BY a.name) INTO dup
          FROM adk.apps a WHERE a.root_agent = OLD.name;
        IF dup IS NOT NULL THEN
            RAISE EXCEPTION 'agent "%" is the root agent of app %', OLD.name, dup USING ERRCODE = '23503',
                HINT = 'Give the app another root agent first.';
        END IF;
    END IF;
    IF NEW.kind IS NULL OR NEW.kind NOT IN ('llm', 'sequential', 'parallel', 'loop', 'workflow') THEN
        RAISE EXCEPTION 'unknown agent kind "%"', NEW.kind USING ERRCODE = '22023',
            HINT = 'Use llm, sequential, parallel or loop (workflow agents are made by adk_define_workflow).';
    END IF;
    IF NEW.include_contents IS NULL OR NEW.include_contents NOT IN ('default', 'none') THEN
        RAISE EXCEPTION 'invalid include_contents "%" for agent "%"', NEW.include_contents, NEW.name
            USING ERRCODE = '22023', HINT = 'Use default or none.';
    END IF;
    IF NEW.mode IS NOT NULL AND NEW.mode NOT IN ('chat', 'task', 'single_turn') THEN
        RAISE EXCEPTION 'unknown mode "%" for agent "%"', NEW.mode, NEW.name USING ERRCODE = '22023',
            HINT = 'Use chat, task or single_turn, or leave it NULL for chat.';
    END IF;
    NEW.tools := coalesce(NEW.tools, '{}');
    NEW.sub_agents := coalesce(NEW.sub_agents, '{}');
    NEW.generate_config := coalesce(NEW.generate_config, '{}');
    NEW.disallow_transfer_to_parent := coalesce(NEW.disallow_transfer_to_parent, false);
    NEW.disallow_transfer_to_peers := coalesce(NEW.disallow_transfer_to_peers, false);

    -- the lists: one dimension, no NULL, no duplicate, not the agent itself
    IF array_ndims(NEW.tools) > 1 OR array_position(NEW.tools, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'tools of agent "%" must be a list of names', NEW.name USING ERRCODE = '22023';
    END IF;
    IF array_ndims(NEW.sub_agents) > 1 OR array_position(NEW.sub_agents, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'sub_agents of agent "%" must be a list of names', NEW.name USING ERRCODE = '22023';
    END IF;
    SELECT t INTO dup FROM unnest(NEW.tools) t GROUP BY t HAVING count(*) > 1 ORDER BY t LIMIT 1;
    IF dup IS NOT NULL THEN
        RAISE EXCEPTION 'agent "%" lists tool "%" twice', NEW.name, dup USING ERRCODE = '22023';
    END IF;
    SELECT s INTO dup FROM unnest(NEW.sub_agents) s GROUP BY s HAVING count(*) > 1 ORDER BY s LIMIT 1;
    IF dup IS NOT NULL THEN
        RAISE EXCEPTION 'agent "%" lists sub-agent "%" twice', NEW.name, dup USING ERRCODE = '22023';
    END IF;
    IF NEW.name = ANY (NEW.tools) THEN
        RAISE EXCEPTION 'agent "%" cannot use itself as a tool', NEW.name USING ERRCODE = '42P17';
    END IF;
    IF NEW.name = ANY (NEW.sub_agents) THEN
        RAISE EXCEPTION 'agent "%" cannot be its own sub-agent', NEW.name USING ERRCODE = '42P17';
    END IF;
    IF 'transfer_to_agent' = ANY (NEW.tools) THEN
        RAISE EXCEPTION 'agent "%" cannot list tool "transfer_to_agent"', NEW.name USING ERRCODE = '22023',
            DETAIL = 'The runner adds it to every agent that has sub-agents.',
            HINT = 'List the agents it may transfer to in sub_agents.';
    END IF;
    IF 'adk_request_confirmation' = ANY (NEW.tools) THEN
        RAISE EXCEPTION 'agent "%" cannot list tool "adk_request_confirmation"', NEW.name USING ERRCODE = '22023',
            HINT = 'Mark the tools that need confirmation with require_confirmation.';
    END IF;

    -- what each kind may have
    IF NEW.kind <> 'llm' THEN
        extra := array_remove(ARRAY[
            CASE WHEN NEW.model IS NOT NULL THEN 'model' END,
            CASE WHEN NEW.instruction IS NOT NULL THEN 'instruction' END,
            CASE WHEN cardinality(NEW.tools) > 0 THEN 'tools' END,
            CASE WHEN NEW.output_key IS NOT NULL THEN 'output_key' END,
            CASE WHEN NEW.generate_config <> '{}' THEN 'generate_config' END,
            CASE WHEN NEW.mode IS NOT NULL THEN 'mode' END,
            CASE WHEN NEW.input_schema IS NOT NULL THEN 'input_schema' END,
            CASE WHEN NEW.output_schema IS NOT NULL THEN 'output_schema' END], NULL);
        IF cardinality(extra) > 0 THEN
            RAISE EXCEPTION '% agent "%" cannot have %', NEW.kind, NEW.name, array_to_string(extra, ', ')
                USING ERRCODE = '22023',
                      DETAIL = 'Only llm agents call a model; sequential, parallel and loop agents run their sub-agents, workflow agents their graph.';
        END IF;
        IF NEW.kind = 'workflow' AND cardinality(NEW.sub_agents) > 0 THEN
            RAISE EXCEPTION 'workflow agent "%" cannot have sub_agents', NEW.name USING ERRCODE = '22023',
                DETAIL = 'A workflow agent runs the graph of adk.workflows with its name; its nodes are rows of adk.workflow_nodes (docs/workflows.md).';
        ELSIF NEW.kind <> 'workflow' AND cardinality(NEW.sub_agents) = 0 THEN
            RAISE EXCEPTION '% agent "%" needs at least one sub-agent', NEW.kind, NEW.name USING ERRCODE = '22023';
        END IF;
    END IF;
    IF NEW.max_iterations IS NOT NULL AND NEW.kind <> 'loop' THEN
        RAISE EXCEPTION '% agent "%" cannot have max_iterations', NEW.kind, NEW.name USING ERRCODE = '22023',
            HINT = 'max_iterations applies to loop agents only.';
    END IF;
    IF NEW.max_iterations <= 0 THEN
        RAISE EXCEPTION 'max_iterations of agent "%" must be positive', NEW.name USING ERRCODE = '22023',
            HINT = 'Leave it NULL to loop until a sub-agent escalates (exit_loop).';
    END IF;
    IF NEW.output_key = '' THEN
        RAISE EXCEPTION 'output_key of agent "%" must not be empty', NEW.name USING ERRCODE = '22023';
    END IF;

    -- modes (docs/agent-modes.md): input_schema shapes how a coordinator
    -- calls a task or single_turn agent, output_schema its answer (models.md)
    FOR k, v IN SELECT * FROM (VALUES ('input_schema', NEW.input_schema),
                                      ('output_schema', NEW.output_schema)) AS x(k, v)
                 WHERE x.v IS NOT NULL LOOP
        IF jsonb_typeof(v) <> 'object' THEN
            RAISE EXCEPTION '% of agent "%" must be a JSON Schema object', k, NEW.name USING ERRCODE = '22023',
                HINT = 'For example {"type": "object", "properties": {"city": {"type": "string"}}}.';
        END IF;
        IF v ? 'type' AND (jsonb_typeof(v -> 'type') <> 'string'
                           OR lower(v ->> 'type') NOT IN ('object', 'string', 'number', 'integer', 'boolean', 'array')) THEN
            RAISE EXCEPTION '% of agent "%" has an invalid "type"', k, NEW.name USING ERRCODE = '22023',
                DETAIL = format('It is %s.', v -> 'type'),
                HINT = 'Use one of object, string, number, integer, boolean or array.';
        END IF;
        IF coalesce(NEW.mode, 'chat') = 'chat' AND k = 'input_schema' THEN
            RAISE EXCEPTION 'chat agent "%" cannot have %', NEW.name, k USING ERRCODE = '22023',
                DETAIL = 'input_schema is the parameters of the tool a coordinator calls a task or single_turn agent with; output_schema shapes the result that agent hands back.',
                HINT = 'Set mode to task or single_turn, or leave the schema NULL.';
        END IF;
    END LOOP;
    -- before the foreign key's own check, for a clearer message
    IF NEW.model IS NOT NULL AND adk._check_references()
       AND NOT EXISTS (SELECT 1 FROM adk.models m WHERE m.name = NEW.model) THEN
        RAISE EXCEPTION 'model "%" of agent "%" does not exist', NEW.model, NEW.name USING ERRCODE = '42704',
            HINT = 'Define it first with adk_define_model().';
    END IF;

    -- generation settings: the generation keys of model options
    IF jsonb_typeof(NEW.generate_config) <> 'object' THEN
        RAISE EXCEPTION 'generate_config of agent "%" must be a JSON object', NEW.name USING ERRCODE = '22023';
    END IF;
    FOR k, v IN SELECT * FROM jsonb_each(NEW.generate_config) LOOP
        IF k IN ('temperature', 'top_p', 'presence_penalty', 'frequency_penalty') THEN
            IF jsonb_typeof(v) <> 'number' THEN
                RAISE EXCEPTION 'generate_config "%" of agent "%" must be a number', k, NEW.name USING ERRCODE = '22023';
            END IF;
        ELSIF k IN ('max_output_tokens', 'top_k', 'seed') THEN
            IF jsonb_typeof(v) <> 'number' OR v::numeric <> trunc(v::numeric) OR v::numeric < 0 THEN
                RAISE EXCEPTION 'generate_config "%" of agent "%" must be a non-negative integer', k, NEW.name
                    USING ERRCODE = '22023';
            END IF;
        ELSIF k = 'stop_sequences' THEN
            IF jsonb_typeof(v) <> 'array' OR EXISTS (SELECT 1 FROM jsonb_array_elements(v) e WHERE jsonb_typeof(e) <> 'string') THEN
                RAISE EXCEPTION 'generate_config "stop_sequences" of agent "%" must be an array of strings', NEW.name
                    USING ERRCODE = '22023';
            END IF;
        ELSIF k = 'thinking' THEN
            PERFORM adk._check_thinking(v, format('generate_config of agent "%s":', NEW.name));
        ELSE
            RAISE EXCEPTION 'unknown generate_config key "%" for agent "%"', k, NEW.name USING ERRCODE = '22023',
                HINT = 'Known keys: temperature, max_output_tokens, top_p, top_k, stop_sequences, presence_penalty, frequency_penalty, seed, thinking.';
        END IF;
    END LOOP;
    IF TG_OP = 'UPDATE' THEN
        NEW.updated_at := now();
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER adk_agents_before_write
    BEFORE INSERT OR UPDATE ON adk.agents
    FOR EACH ROW EXECUTE FUNCTION adk._agents_before_write();

-- The agents an agent points to: its sub-agents, then the agents it uses
-- as tools.
CREATE FUNCTION adk._agent_edges(agent text) RETURNS text[]
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT a.sub_agents || ARRAY(SELECT t FROM unnest(a.tools) WITH ORDINALITY AS x(t, i)
                                  WHERE EXISTS (SELECT 1 FROM adk.agents b WHERE b.name = x.t)
                                  ORDER BY x.i)
      FROM adk.agents a WHERE a.name = agent
$$;

-- A cycle reachable from start through sub_agents and agents used as
-- tools, as the path that closes it (first element = last), or NULL.
-- Depth-first, each agent expanded once.
CREATE FUNCTION adk._agent_cycle(start text) RETURNS text[]
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    path text[] := ARRAY[start];   -- the agents on the current path
    next integer[] := ARRAY[0];    -- for each, the last edge followed
    done text[] := '{}';           -- agents whose every edge was followed
    edges text[];
    child text;
    n integer;
BEGIN
    WHILE cardinality(path) > 0 LOOP
        n := cardinality(path);
        edges := coalesce(adk._agent_edges(path[n]), '{}');
        next[n] := next[n] + 1;
        IF next[n] > cardinality(edges) THEN
            done := done || path[n];
            path := path[1:n - 1];
            next := next[1:n - 1];
            CONTINUE;
        END IF;
        child := edges[next[n]];
        IF child = ANY (path) THEN
            RETURN path[array_position(path, child):] || child;
        ELSIF NOT child = ANY (done) THEN
            path := path || child;
            next := next || 0;
        END IF;
    END LOOP;
    RETURN NULL;
END
$$;

CREATE FUNCTION adk._format_cycle(cycle text[]) RETURNS text
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT string_agg(format('"%s"', a), ' -> ' ORDER BY i) FROM unnest(cycle) WITH ORDINALITY AS x(a, i)
$$;

-- Each sub-agent of an agent has one parent (it); raises naming the
-- agent and its parents when not.
CREATE FUNCTION adk._check_one_parent(agent text) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    parents text;
BEGIN
    SELECT string_agg(format('"%s"', a.name), ' and ' ORDER BY a.name) INTO parents
      FROM adk.agents a, unnest(a.sub_agents) s
     WHERE s = agent
    HAVING count(*) > 1;
    IF parents IS NOT NULL THEN
        RAISE EXCEPTION 'agent "%" cannot have two parents', agent USING ERRCODE = '42P17',
            DETAIL = format('It is a sub-agent of %s.', parents),
            HINT = 'An agent is the sub-agent of one agent at most; use it as a tool (AgentTool) elsewhere, or define a copy under another name.';
    END IF;
END
$$;

-- A task agent is never a static node of a workflow agent (ADK-Go's
-- validateNoTaskModeGraphNodes): it works across turns in its own
-- isolation scope until it calls finish_task, and only an llm coordinator
-- delegates to it (docs/agent-modes.md).  Raises when agent is a workflow
-- agent with a task sub-agent, or a task agent under a workflow agent.
CREATE FUNCTION adk._check_task_placement(agent text) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r record;
BEGIN
    SELECT c.name AS child, p.name AS parent, p.kind INTO r
      FROM adk.agents p, unnest(p.sub_agents) WITH ORDINALITY AS s(n, i), adk.agents c
     WHERE c.name = s.n AND c.mode = 'task' AND p.kind <> 'llm'
       AND (p.name = agent OR c.name = agent)
     ORDER BY p.name, s.i LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'task agent "%" cannot be a sub-agent of % agent "%"', r.child, r.kind, r.parent
            USING ERRCODE = '42P17',
                  DETAIL = 'A task agent works across turns in its own isolation scope until it calls finish_task; a workflow agent runs its sub-agents as static nodes, and only an llm agent delegates to a task agent.',
                  HINT = 'Make it a sub-agent of an llm agent (its coordinator), or give it another mode.';
    END IF;
END
$$;

-- A root agent talks with the user: an llm root's mode must be chat (NULL
-- is chat).  Raises naming the app when one is given.
CREATE FUNCTION adk._check_root_mode(agent text, app text) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    m text;
BEGIN
    SELECT a.mode INTO m FROM adk.agents a WHERE a.name = agent;
    IF m IS NOT NULL AND m <> 'chat' THEN
        RAISE EXCEPTION 'root agent "%" of % must be a chat agent', agent,
            CASE WHEN app IS NULL THEN 'an app' ELSE format('app "%s"', app) END
            USING ERRCODE = '42P17', DETAIL = format('Its mode is %s.', m),
                  HINT = 'Leave the root''s mode NULL or set it to chat; task and single_turn agents are sub-agents of a chat coordinator.';
    END IF;
END
$$;

-- After the statement: references, one parent, no cycle; and an agent in
-- use cannot be renamed or deleted.
CREATE FUNCTION adk._agents_after_write() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    x text;
    users text;
    cycle text[];
BEGIN
    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND NEW.name <> OLD.name) THEN
        SELECT string_agg(format('"%s"', a.name), ', ' ORDER BY a.name) INTO users
          FROM adk.agents a WHERE OLD.name = ANY (a.sub_agents);
        IF users IS NOT NULL THEN
            RAISE EXCEPTION 'agent "%" is still a sub-agent of agent %', OLD.name, users USING ERRCODE = '23503',
                HINT = 'Remove it from the parent''s sub_agents first.';
        END IF;
        users := adk._name_list('agent', 'agents',
                                ARRAY(SELECT a.name FROM adk.agents a WHERE OLD.name = ANY (a.tools)));
        IF users IS NOT NULL THEN
            RAISE EXCEPTION 'agent "%" is still used as a tool by %', OLD.name, users USING ERRCODE = '23503',
                HINT = 'Remove it from those agents'' tools first.';
        END IF;
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN NULL;
    END IF;

    IF adk._check_references() THEN
        FOREACH x IN ARRAY NEW.sub_agents LOOP
            IF NOT EXISTS (SELECT 1 FROM adk.agents a WHERE a.name = x) THEN
                RAISE EXCEPTION 'sub-agent "%" of agent "%" does not exist', x, NEW.name USING ERRCODE = '42704',
                    HINT = 'Define the sub-agents first.';
            END IF;
        END LOOP;
        FOREACH x IN ARRAY NEW.tools LOOP
            IF NOT (x = ANY (adk._builtin_tools())
                    OR EXISTS (SELECT 1 FROM adk.tools t WHERE t.name = x)
                    OR EXISTS (SELECT 1 FROM adk.agents a WHERE a.name = x)) THEN
                RAISE EXCEPTION 'tool "%" of agent "%" does not exist', x, NEW.name USING ERRCODE = '42704',
                    HINT = 'List a tool defined with adk_define_tool(), an agent, or a built-in tool: exit_loop, load_artifacts, load_memory, preload_memory.';
            END IF;
            IF length(x) > 64 THEN
                RAISE EXCEPTION 'agent "%" cannot be used as a tool: its name is longer than 64 characters', x
                    USING ERRCODE = '22023', DETAIL = format('Agent "%s" lists it in its tools.', NEW.name);
            END IF;
        END LOOP;
    END IF;

    FOREACH x IN ARRAY NEW.sub_agents LOOP
        PERFORM adk._check_one_parent(x);
    END LOOP;
    PERFORM adk._check_task_placement(NEW.name);
    FOR x IN SELECT a.name FROM adk.apps a WHERE a.root_agent = NEW.name ORDER BY a.name LOOP
        PERFORM adk._check_root_mode(NEW.name, x);
    END LOOP;
    cycle := adk._agent_cycle(NEW.name);
    IF cycle IS NOT NULL THEN
        RAISE EXCEPTION 'agents form a cycle: %', adk._format_cycle(cycle) USING ERRCODE = '42P17',
            DETAIL = 'An agent cannot be its own ancestor, through sub_agents or through agents used as tools.';
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER adk_agents_after_write
    AFTER INSERT OR UPDATE OR DELETE ON adk.agents
    FOR EACH ROW EXECUTE FUNCTION adk._agents_after_write();

-- The root of an app cannot be deleted (checked before the foreign key,
-- for a clearer message).
CREATE FUNCTION adk._agents_before_delete() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    apps text;
BEGIN
    PERFORM adk._lock_definitions();
    SELECT string_agg(format('"%s"', a.name), ', ' ORDER BY a.name) INTO apps
      FROM adk.apps a WHERE a.root_agent = OLD.name;
    IF apps IS NOT NULL THEN
        RAISE EXCEPTION 'agent "%" is the root agent of app %', OLD.name, apps USING ERRCODE = '23503',
            HINT = 'Delete the app, or give it another root agent, first.';
    END IF;
    RETURN OLD;
END
$$;
CREATE TRIGGER adk_agents_before_delete
    BEFORE DELETE ON adk.agents
    FOR EACH ROW EXECUTE FUNCTION adk._agents_before_delete();

CREATE FUNCTION adk_define_agent(name text, kind text DEFAULT 'llm', model text DEFAULT NULL,
                                 instruction text DEFAULT NULL, description text DEFAULT NULL,
                                 tools text[] DEFAULT '{}', sub_agents text[] DEFAULT '{}',
                                 output_key text DEFAULT NULL,
                                 disallow_transfer_to_parent boolean DEFAULT false,
                                 disallow_transfer_to_peers boolean DEFAULT false,
                                 max_iterations integer DEFAULT NULL,
                                 include_contents text DEFAULT 'default',
                                 generate_config jsonb DEFAULT '{}',
                                 mode text DEFAULT NULL,
                                 input_schema jsonb DEFAULT NULL,
                                 output_schema jsonb DEFAULT NULL)
RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO adk.agents AS a (name, kind, model, instruction, description, tools, sub_agents,
                                 output_key, disallow_transfer_to_parent, disallow_transfer_to_peers,
                                 max_iterations, include_contents, generate_config,
                                 mode, input_schema, output_schema)
    VALUES ($1, coalesce($2, 'llm'), $3, $4, $5, coalesce($6, '{}'), coalesce($7, '{}'), $8,
            coalesce($9, false), coalesce($10, false), $11, coalesce($12, 'default'), coalesce($13, '{}'),
            $14, $15, $16)
    ON CONFLICT ON CONSTRAINT agents_pkey DO UPDATE
       SET kind = EXCLUDED.kind, model = EXCLUDED.model, instruction = EXCLUDED.instruction,
           description = EXCLUDED.description, tools = EXCLUDED.tools, sub_agents = EXCLUDED.sub_agents,
           output_key = EXCLUDED.output_key,
           disallow_transfer_to_parent = EXCLUDED.disallow_transfer_to_parent,
           disallow_transfer_to_peers = EXCLUDED.disallow_transfer_to_peers,
           max_iterations = EXCLUDED.max_iterations, include_contents = EXCLUDED.include_contents,
           generate_config = EXCLUDED.generate_config, mode = EXCLUDED.mode,
           input_schema = EXCLUDED.input_schema, output_schema = EXCLUDED.output_schema
$$;
COMMENT ON FUNCTION adk_define_agent(text, text, text, text, text, text[], text[], text, boolean, boolean, integer, text, jsonb, text, jsonb, jsonb) IS
    'Create or replace an agent: kind llm | sequential | parallel | loop; tools are tools, built-ins or other agents (AgentTool); sub_agents are children in order (one parent each, no cycles); mode chat | task | single_turn (NULL = chat); input_schema for task and single_turn agents; output_schema the shape of a chat or single_turn agent''s answer (structured output) or a task agent''s finish_task parameters.';

-- ---------------------------------------------------------------------
-- The agent tree, for the runner.
-- ---------------------------------------------------------------------

-- The tree under root through sub_agents: root first (depth 0), then
-- depth-first in sub_agents order.  Names that are not agents are left
-- out; an agent already on the path is not expanded again.
CREATE FUNCTION adk._agent_tree(root text)
RETURNS TABLE (name text, parent text, depth integer, kind text)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    WITH RECURSIVE tree (name, parent, depth, kind, sub_agents, path, ord) AS (
        SELECT a.name, NULL::text, 0, a.kind, a.sub_agents, ARRAY[a.name], '{}'::bigint[]
          FROM adk.agents a WHERE a.name = root
        UNION ALL
        SELECT c.name, t.name, t.depth + 1, c.kind, c.sub_agents, t.path || c.name, t.ord || s.i
          FROM tree t
         CROSS JOIN LATERAL unnest(t.sub_agents) WITH ORDINALITY AS s(child, i)
          JOIN adk.agents c ON c.name = s.child
         WHERE NOT c.name = ANY (t.path)
    )
    SELECT tree.name, tree.parent, tree.depth, tree.kind FROM tree ORDER BY tree.ord
$$;
COMMENT ON FUNCTION adk._agent_tree(text) IS
    'The agents under root through sub_agents, root first, depth-first in sub_agents order.';

-- Raises when the definitions under root (through sub_agents and agents
-- used as tools) break a rule.  The runner calls it when a run starts.
CREATE FUNCTION adk._check_agent_tree(root text) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    cycle text[];
    r record;
BEGIN
    IF root IS NULL OR NOT EXISTS (SELECT 1 FROM adk.agents a WHERE a.name = root) THEN
        RAISE EXCEPTION 'agent "%" does not exist', root USING ERRCODE = '42704';
    END IF;
    PERFORM adk._check_root_mode(root, NULL);
    cycle := adk._agent_cycle(root);
    IF cycle IS NOT NULL THEN
        RAISE EXCEPTION 'agents form a cycle: %', adk._format_cycle(cycle) USING ERRCODE = '42P17',
            DETAIL = CASE WHEN cycle[1] = root
                          THEN format('Agent "%s" lists the root agent "%s".', cycle[cardinality(cycle) - 1], root)
                          ELSE 'An agent cannot be its own ancestor, through sub_agents or through agents used as tools.' END;
    END IF;
    FOR r IN
        WITH RECURSIVE reach (name) AS (
            SELECT root
            UNION
            SELECT e FROM reach, unnest(adk._agent_edges(reach.name)) e
        )
        SELECT a.* FROM reach JOIN adk.agents a ON a.name = reach.name ORDER BY a.name
    LOOP
        PERFORM 1 FROM unnest(r.sub_agents) s WHERE NOT EXISTS (SELECT 1 FROM adk.agents a WHERE a.name = s);
        IF FOUND THEN
            RAISE EXCEPTION 'sub-agent "%" of agent "%" does not exist',
                (SELECT s FROM unnest(r.sub_agents) s WHERE NOT EXISTS (SELECT 1 FROM adk.agents a WHERE a.name = s) LIMIT 1),
                r.name USING ERRCODE = '42704';
        END IF;
        PERFORM 1 FROM unnest(r.tools) t
         WHERE NOT (t = ANY (adk._builtin_tools())
                    OR EXISTS (SELECT 1 FROM adk.tools x WHERE x.name = t)
                    OR EXISTS (SELECT 1 FROM adk.agents a WHERE a.name = t));
        IF FOUND THEN
            RAISE EXCEPTION 'tool "%" of agent "%" does not exist',
                (SELECT t FROM unnest(r.tools) t
                  WHERE NOT (t = ANY (adk._builtin_tools())
                             OR EXISTS (SELECT 1 FROM adk.tools x WHERE x.name = t)
                             OR EXISTS (SELECT 1 FROM adk.agents a WHERE a.name = t)) LIMIT 1),
                r.name USING ERRCODE = '42704';
        END IF;
        IF r.model IS NOT NULL AND NOT EXISTS (SELECT 1 FROM adk.models m WHERE m.name = r.model) THEN
            RAISE EXCEPTION 'model "%" of agent "%" does not exist', r.model, r.name USING ERRCODE = '42704';
        END IF;
        PERFORM adk._check_one_parent(r.name);
        IF r.kind NOT IN ('llm', 'workflow') AND cardinality(r.sub_agents) = 0 THEN
            RAISE EXCEPTION '% agent "%" needs at least one sub-agent', r.kind, r.name USING ERRCODE = '22023';
        END IF;
        PERFORM adk._check_task_placement(r.name);
        -- what the runner does not run yet (docs/agent-modes.md, "What runs
        -- today"): a task or single_turn agent other than a sub-agent of a
        -- chat llm coordinator (used as a tool, or under a task agent)
        IF r.mode IN ('task', 'single_turn')
           AND (NOT EXISTS (SELECT 1 FROM adk.agents p
                             WHERE r.name = ANY (p.sub_agents) AND p.kind = 'llm'
                               AND coalesce(p.mode, 'chat') = 'chat')
                OR EXISTS (SELECT 1 FROM adk.agents p WHERE r.name = ANY (p.tools))) THEN
            RAISE EXCEPTION 'agent "%" has mode %, which adk_runner runs only as a sub-agent of a chat llm agent', r.name, r.mode
                USING ERRCODE = '0A000',
                      DETAIL = format('It is under root agent "%s". A %s agent is run by the tool its chat coordinator gets for it; adk_runner does not run one as a node of a sequential, parallel or loop agent, under a task or single_turn agent, nor as an agent used as a tool, yet.', root, r.mode),
                      HINT = 'Make it a sub-agent of a chat llm agent, or leave its mode NULL (chat).';
        END IF;
    END LOOP;
END
$$;
COMMENT ON FUNCTION adk._check_agent_tree(text) IS
    'Raise if the agents under root (sub_agents and agents used as tools) break a rule: a missing agent, tool or model, an agent with two parents, a cycle, a root that is not chat, a task agent under a workflow agent, a task or single_turn agent other than a sub-agent of a chat llm agent, which the runner does not run yet.';

-- The agent's model, else the nearest ancestor's (through sub_agents),
-- else NULL.
CREATE FUNCTION adk._agent_model(agent text) RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    m text;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM adk.agents a WHERE a.name = agent) THEN
        RAISE EXCEPTION 'agent "%" does not exist', agent USING ERRCODE = '42704';
    END IF;
    WITH RECURSIVE up (name, model, depth, path) AS (
        SELECT a.name, a.model, 0, ARRAY[a.name] FROM adk.agents a WHERE a.name = agent
        UNION ALL
        SELECT p.name, p.model, up.depth + 1, up.path || p.name
          FROM up JOIN adk.agents p ON up.name = ANY (p.sub_agents)
         WHERE up.model IS NULL AND NOT p.name = ANY (up.path)
    )
    SELECT up.model INTO m FROM up WHERE up.model IS NOT NULL ORDER BY up.depth, up.name LIMIT 1;
    RETURN m;
END
$$;
COMMENT ON FUNCTION adk._agent_model(text) IS
    'The model an agent uses: its own, else the nearest ancestor''s through sub_agents, else NULL.';

-- ---------------------------------------------------------------------
-- Plugins: SQL callbacks around runs, agents, models and tools.
-- ---------------------------------------------------------------------

CREATE TABLE adk.plugins (
    name            text PRIMARY KEY CHECK (name <> ''),
    on_user_message regprocedure,
    before_run      regprocedure,
    on_event        regprocedure,
    after_run       regprocedure,
    before_agent    regprocedure,
    after_agent     regprocedure,
    before_model    regprocedure,
    after_model     regprocedure,
    before_tool     regprocedure,
    after_tool      regprocedure,
    on_model_error  regprocedure,
    on_tool_error   regprocedure,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE adk.plugins IS 'Plugins: for each callback, a function taking one jsonb argument and returning jsonb (or NULL when the plugin has none)';

CREATE FUNCTION adk._plugins_before_write() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    names text[] := ARRAY['on_user_message', 'before_run', 'on_event', 'after_run',
                          'before_agent', 'after_agent', 'before_model', 'after_model',
                          'before_tool', 'after_tool', 'on_model_error', 'on_tool_error'];
    fns oid[] := ARRAY[NEW.on_user_message, NEW.before_run, NEW.on_event, NEW.after_run,
                       NEW.before_agent, NEW.after_agent, NEW.before_model, NEW.after_model,
                       NEW.before_tool, NEW.after_tool, NEW.on_model_error, NEW.on_tool_error];
    old_fns oid[];
    p pg_catalog.pg_proc;
    i integer;
BEGIN
    PERFORM adk._lock_definitions();
    IF NEW.name IS NULL THEN
        RAISE EXCEPTION 'plugin name must not be null' USING ERRCODE = '22004';
    END IF;
    IF NEW.name = '' THEN
        RAISE EXCEPTION 'plugin name must not be empty' USING ERRCODE = '22023';
    END IF;
    IF TG_OP = 'UPDATE' THEN
        old_fns := ARRAY[OLD.on_user_message, OLD.before_run, OLD.on_event, OLD.after_run,
                         OLD.before_agent, OLD.after_agent, OLD.before_model, OLD.after_model,
                         OLD.before_tool, OLD.after_tool, OLD.on_model_error, OLD.on_tool_error];
    END IF;
    IF array_remove(fns, NULL) = '{}' THEN
        RAISE EXCEPTION 'plugin "%" has no callback', NEW.name USING ERRCODE = '22023',
            HINT = 'Set at least one of on_user_message, before_run, on_event, after_run, before_agent, after_agent, before_model, after_model, before_tool, after_tool, on_model_error, on_tool_error.';
    END IF;
    FOR i IN 1 .. cardinality(names) LOOP
        CONTINUE WHEN fns[i] IS NULL OR fns[i] IS NOT DISTINCT FROM old_fns[i];
        SELECT * INTO p FROM pg_catalog.pg_proc WHERE oid = fns[i];
        IF NOT FOUND THEN
            RAISE EXCEPTION 'function with OID % does not exist', fns[i] USING ERRCODE = '42883',
                DETAIL = format('It is callback %s of plugin "%s".', names[i], NEW.name);
        END IF;
        IF p.prokind <> 'f' OR p.pronargs <> 1 OR p.proargtypes[0] <> 'pg_catalog.jsonb'::pg_catalog.regtype
           OR p.provariadic <> 0 OR p.proretset OR p.prorettype <> 'pg_catalog.jsonb'::pg_catalog.regtype THEN
            RAISE EXCEPTION 'callback % of plugin "%" must be a function taking one jsonb argument and returning jsonb',
                names[i], NEW.name USING ERRCODE = '22023',
                DETAIL = format('%s %s.', fns[i]::regprocedure,
                                CASE WHEN p.prokind <> 'f' THEN 'is not a plain function'
                                     ELSE CASE WHEN p.provariadic <> 0 THEN 'is variadic and '
                                               WHEN p.pronargs <> 1 THEN format('takes %s arguments and ', p.pronargs)
                                               WHEN p.proargtypes[0] <> 'pg_catalog.jsonb'::pg_catalog.regtype
                                                    THEN format('takes %s and ', format_type(p.proargtypes[0], NULL))
                                               ELSE '' END
                                          || 'returns ' || CASE WHEN p.proretset THEN 'setof ' ELSE '' END
                                          || format_type(p.prorettype, NULL) END);
        END IF;
        IF adk._check_references() AND NOT has_function_privilege(current_user, fns[i], 'EXECUTE') THEN
            RAISE EXCEPTION 'permission denied for function %', fns[i]::regprocedure USING ERRCODE = '42501',
                DETAIL = format('Defining plugin "%s" requires EXECUTE on its callbacks.', NEW.name);
        END IF;
    END LOOP;
    IF TG_OP = 'UPDATE' THEN
        NEW.updated_at := now();
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER adk_plugins_before_write
    BEFORE INSERT OR UPDATE ON adk.plugins
    FOR EACH ROW EXECUTE FUNCTION adk._plugins_before_write();

CREATE TRIGGER adk_plugins_before_delete
    BEFORE DELETE ON adk.plugins
    FOR EACH ROW EXECUTE FUNCTION adk._definitions_lock_trigger();
CREATE TRIGGER adk_plugins_still_used
    AFTER DELETE OR UPDATE OF name ON adk.plugins
    FOR EACH ROW EXECUTE FUNCTION adk._still_used('plugin', 'app', 'apps', 'plugins');

CREATE FUNCTION adk_define_plugin(name text,
                                  on_user_message regprocedure DEFAULT NULL,
                                  before_run regprocedure DEFAULT NULL,
                                  on_event regprocedure DEFAULT NULL,
                                  after_run regprocedure DEFAULT NULL,
                                  before_agent regprocedure DEFAULT NULL,
                                  after_agent regprocedure DEFAULT NULL,
                                  before_model regprocedure DEFAULT NULL,
                                  after_model regprocedure DEFAULT NULL,
                                  before_tool regprocedure DEFAULT NULL,
                                  after_tool regprocedure DEFAULT NULL,
                                  on_model_error regprocedure DEFAULT NULL,
                                  on_tool_error regprocedure DEFAULT NULL)
RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO adk.plugins AS p (name, on_user_message, before_run, on_event, after_run,
                                  before_agent, after_agent, before_model, after_model,
                                  before_tool, after_tool, on_model_error, on_tool_error)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
    ON CONFLICT ON CONSTRAINT plugins_pkey DO UPDATE
       SET on_user_message = EXCLUDED.on_user_message, before_run = EXCLUDED.before_run,
           on_event = EXCLUDED.on_event, after_run = EXCLUDED.after_run,
           before_agent = EXCLUDED.before_agent, after_agent = EXCLUDED.after_agent,
           before_model = EXCLUDED.before_model, after_model = EXCLUDED.after_model,
           before_tool = EXCLUDED.before_tool, after_tool = EXCLUDED.after_tool,
           on_model_error = EXCLUDED.on_model_error, on_tool_error = EXCLUDED.on_tool_error
$$;
COMMENT ON FUNCTION adk_define_plugin(text, regprocedure, regprocedure, regprocedure, regprocedure, regprocedure, regprocedure, regprocedure, regprocedure, regprocedure, regprocedure, regprocedure, regprocedure) IS
    'Create or replace a plugin: each callback a function(jsonb) returning jsonb; callbacks left NULL are not called.';

-- ---------------------------------------------------------------------
-- Apps: a root agent and how it runs.
-- ---------------------------------------------------------------------

CREATE TABLE adk.apps (
    name                          text PRIMARY KEY CHECK (name <> '' AND length(name) <= 191),
    root_agent                    text NOT NULL REFERENCES adk.agents (name),
    auto_create_session           boolean NOT NULL DEFAULT true,
    compaction                    jsonb CHECK (jsonb_typeof(compaction) = 'object'),
    plugins                       text[] NOT NULL DEFAULT '{}',
    save_input_blobs_as_artifacts boolean NOT NULL DEFAULT false,
    max_llm_calls                 integer NOT NULL DEFAULT 500 CHECK (max_llm_calls > 0),
    created_at                    timestamptz NOT NULL DEFAULT now(),
    updated_at                    timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE adk.apps IS 'Apps: the root agent, auto_create_session, compaction (NULL = off), plugins in call order, save_input_blobs_as_artifacts, max_llm_calls per run';

CREATE FUNCTION adk._apps_before_write() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    dup text;
BEGIN
    PERFORM adk._lock_definitions();
    PERFORM adk._check_id('app name', NEW.name);
    IF NEW.root_agent IS NULL THEN
        RAISE EXCEPTION 'app "%" needs a root agent', NEW.name USING ERRCODE = '22023';
    END IF;
    IF NEW.compaction IS NOT NULL AND jsonb_typeof(NEW.compaction) <> 'object' THEN
        RAISE EXCEPTION 'compaction of app "%" must be a JSON object, or NULL for none', NEW.name
            USING ERRCODE = '22023';
    END IF;
    IF NEW.max_llm_calls IS NULL OR NEW.max_llm_calls <= 0 THEN
        RAISE EXCEPTION 'max_llm_calls of app "%" must be positive', NEW.name USING ERRCODE = '22023';
    END IF;
    NEW.plugins := coalesce(NEW.plugins, '{}');
    NEW.auto_create_session := coalesce(NEW.auto_create_session, true);
    NEW.save_input_blobs_as_artifacts := coalesce(NEW.save_input_blobs_as_artifacts, false);
    IF array_ndims(NEW.plugins) > 1 OR array_position(NEW.plugins, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'plugins of app "%" must be a list of names', NEW.name USING ERRCODE = '22023';
    END IF;
    SELECT x INTO dup FROM unnest(NEW.plugins) x GROUP BY x HAVING count(*) > 1 ORDER BY x LIMIT 1;
    IF dup IS NOT NULL THEN
        RAISE EXCEPTION 'app "%" lists plugin "%" twice', NEW.name, dup USING ERRCODE = '22023';
    END IF;
    IF adk._check_references() THEN
        IF NOT EXISTS (SELECT 1 FROM adk.agents a WHERE a.name = NEW.root_agent) THEN
            RAISE EXCEPTION 'root agent "%" of app "%" does not exist', NEW.root_agent, NEW.name
                USING ERRCODE = '42704', HINT = 'Define it first with adk_define_agent().';
        END IF;
        SELECT x INTO dup FROM unnest(NEW.plugins) x
         WHERE NOT EXISTS (SELECT 1 FROM adk.plugins p WHERE p.name = x) LIMIT 1;
        IF dup IS NOT NULL THEN
            RAISE EXCEPTION 'plugin "%" of app "%" does not exist', dup, NEW.name USING ERRCODE = '42704',
                HINT = 'Define it first with adk_define_plugin().';
        END IF;
        PERFORM adk._check_agent_tree(NEW.root_agent);
    END IF;
    IF TG_OP = 'UPDATE' THEN
        NEW.updated_at := now();
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER adk_apps_before_write
    BEFORE INSERT OR UPDATE ON adk.apps
    FOR EACH ROW EXECUTE FUNCTION adk._apps_before_write();

CREATE FUNCTION adk_define_app(name text, root_agent text,
                               auto_create_session boolean DEFAULT true,
                               plugins text[] DEFAULT '{}',
                               max_llm_calls integer DEFAULT 500,
                               compaction jsonb DEFAULT NULL,
                               save_input_blobs_as_artifacts boolean DEFAULT false)
RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO adk.apps AS a (name, root_agent, auto_create_session, plugins, max_llm_calls,
                               compaction, save_input_blobs_as_artifacts)
    VALUES ($1, $2, coalesce($3, true), coalesce($4, '{}'), coalesce($5, 500), $6, coalesce($7, false))
    ON CONFLICT ON CONSTRAINT apps_pkey DO UPDATE
       SET root_agent = EXCLUDED.root_agent, auto_create_session = EXCLUDED.auto_create_session,
           plugins = EXCLUDED.plugins, max_llm_calls = EXCLUDED.max_llm_calls,
           compaction = EXCLUDED.compaction,
           save_input_blobs_as_artifacts = EXCLUDED.save_input_blobs_as_artifacts
$$;
COMMENT ON FUNCTION adk_define_app(text, text, boolean, text[], integer, jsonb, boolean) IS
    'Create or replace an app: its root agent (the whole tree under it is checked), auto_create_session, plugins in call order, max_llm_calls per run, compaction (NULL = off), save_input_blobs_as_artifacts.';

-- TRUNCATE skips row triggers: refuse to empty tools or plugins that are
-- still listed.  (adk.agents and adk.models are protected by the foreign
-- keys of adk.apps and adk.agents.)
CREATE FUNCTION adk._definitions_after_truncate() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    users text;
BEGIN
    IF TG_TABLE_NAME = 'tools' THEN
        users := adk._name_list('agent', 'agents',
                                ARRAY(SELECT a.name FROM adk.agents a, unnest(a.tools) t
                                       WHERE NOT t = ANY (adk._builtin_tools())
                                         AND NOT EXISTS (SELECT 1 FROM adk.agents b WHERE b.name = t)));
        IF users IS NOT NULL THEN
            RAISE EXCEPTION 'cannot truncate adk.tools: tools are still used by %', users
                USING ERRCODE = '23503';
        END IF;
    ELSE
        users := adk._name_list('app', 'apps',
                                ARRAY(SELECT a.name FROM adk.apps a WHERE cardinality(a.plugins) > 0));
        IF users IS NOT NULL THEN
            RAISE EXCEPTION 'cannot truncate adk.plugins: plugins are still used by %', users
                USING ERRCODE = '23503';
        END IF;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER adk_tools_after_truncate
    AFTER TRUNCATE ON adk.tools
    FOR EACH STATEMENT EXECUTE FUNCTION adk._definitions_after_truncate();
CREATE TRIGGER adk_plugins_after_truncate
    AFTER TRUNCATE ON adk.plugins
    FOR EACH STATEMENT EXECUTE FUNCTION adk._definitions_after_truncate();

-- definitions survive pg_dump
-- A model still named by agents cannot be deleted (the foreign key would
-- refuse too; this says which agents, as for tools and plugins), nor one
-- another model falls back to.
CREATE FUNCTION adk._models_before_delete() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    users text;
BEGIN
    users := adk._name_list('agent', 'agents',
                            ARRAY(SELECT a.name FROM adk.agents a WHERE a.model = OLD.name));
    IF users IS NOT NULL THEN
        RAISE EXCEPTION 'model "%" is still used by %', OLD.name, users USING ERRCODE = '23503',
            HINT = 'Give those agents another model first.';
    END IF;
    -- nor by other models, as a fallback (88_fallbacks.sql)
    PERFORM adk._lock_definitions();
    users := adk._name_list('model', 'models',
                            ARRAY(SELECT m.name FROM adk.models m
                                   WHERE OLD.name = ANY (m.fallbacks) AND m.name <> OLD.name));
    IF users IS NOT NULL THEN
        RAISE EXCEPTION 'model "%" is a fallback of %', OLD.name, users USING ERRCODE = '23503',
            HINT = 'Remove it from their fallbacks first (adk_define_fallbacks).';
    END IF;
    RETURN OLD;
END
$$;
CREATE TRIGGER adk_models_before_delete
    BEFORE DELETE ON adk.models
    FOR EACH ROW EXECUTE FUNCTION adk._models_before_delete();

SELECT pg_catalog.pg_extension_config_dump('adk.tools', '');
SELECT pg_catalog.pg_extension_config_dump('adk.agents', '');
SELECT pg_catalog.pg_extension_config_dump('adk.plugins', '');
SELECT pg_catalog.pg_extension_config_dump('adk.apps', '');
-- ---------------------------------------------------------------------
-- Running: adk_run and the invocations it records (docs/runs.md).
-- ---------------------------------------------------------------------

CREATE TABLE adk.invocations (
    invocation_id text PRIMARY KEY,
    app_name      text NOT NULL,
    user_id       text NOT NULL,
    session_id    text NOT NULL,
    agent         text NOT NULL,
    status        text NOT NULL CHECK (status IN ('running', 'waiting', 'completed', 'failed', 'cancelled')),
    started_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    ended_at      timestamptz,
    resumed       integer NOT NULL DEFAULT 0,
    model_calls   integer NOT NULL DEFAULT 0,
    input_tokens  bigint NOT NULL DEFAULT 0,
    output_tokens bigint NOT NULL DEFAULT 0,
    store_ms      double precision NOT NULL DEFAULT 0,  -- time spent storing events
    error_code    text,
    error_message text,
    role_name     name NOT NULL,
    backend_pid   integer
);
CREATE INDEX invocations_session_idx ON adk.invocations (app_name, user_id, session_id, started_at);
COMMENT ON TABLE adk.invocations IS 'One row per adk_run invocation: status, agent, timings, model calls, tokens, error';

-- adk_run's rows: the adk.events columns, and whether the event is a
-- partial (streamed, never stored) one
CREATE TYPE adk.run_event AS (
    id            text,
    app_name      text,
    user_id       text,
    session_id    text,
    invocation_id text,
    "timestamp"   timestamptz,
    event_data    jsonb,
    seq           bigint,
    partial       boolean
);

CREATE FUNCTION adk_run(app_name text, user_id text, session_id text, message text,
                        state_delta jsonb DEFAULT NULL, options jsonb DEFAULT NULL)
RETURNS SETOF adk.run_event
AS 'MODULE_PATHNAME', 'adk_run_text' LANGUAGE C VOLATILE ROWS 8;
COMMENT ON FUNCTION adk_run(text, text, text, text, jsonb, jsonb) IS
    'Run the app''s agents on a user message; returns the stored events (and, with {"stream": true}, the partial ones). Options: yield_user_message, stream, max_llm_calls.';

CREATE FUNCTION adk_run(app_name text, user_id text, session_id text, message jsonb,
                        state_delta jsonb DEFAULT NULL, options jsonb DEFAULT NULL)
RETURNS SETOF adk.run_event
AS 'MODULE_PATHNAME', 'adk_run_content' LANGUAGE C VOLATILE ROWS 8;
COMMENT ON FUNCTION adk_run(text, text, text, jsonb, jsonb, jsonb) IS
    'adk_run with a whole Content as the message, e.g. function responses built with adk_function_response().';

-- A response without the call id it answers, or the tool's name, would
-- answer nothing: both are required (a NULL response is the tool's
-- result null, {"result": null}).
CREATE FUNCTION adk_function_response(call_id text, name text, response jsonb)
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF call_id IS NULL OR name IS NULL THEN
        RAISE EXCEPTION '% must not be null', CASE WHEN call_id IS NULL THEN 'call id' ELSE 'tool name' END
            USING ERRCODE = '22004',
                  DETAIL = 'A function response answers the function call with this id, of the tool with this name.';
    END IF;
    RETURN jsonb_build_object('role', 'user', 'parts', jsonb_build_array(
        jsonb_build_object('function_response', jsonb_build_object(
            'id', call_id, 'name', name,
            'response', CASE WHEN jsonb_typeof(response) = 'object' THEN response
                             ELSE jsonb_build_object('result', response) END))));
END
$$;
COMMENT ON FUNCTION adk_function_response(text, text, jsonb) IS
    'The user content answering function call call_id of tool name, to pass to adk_run.';

GRANT SELECT ON adk.invocations TO adk_user;

-- Definitions change rarely; a backend keeps what it read of them (agent
-- trees, tools, plugins) until this row changes.  Every statement that
-- writes a definition bumps it.
CREATE TABLE adk.definitions_version (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    version  bigint NOT NULL
);
INSERT INTO adk.definitions_version VALUES (true, 1);

CREATE FUNCTION adk._bump_definitions_version() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE adk.definitions_version SET version = version + 1;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION adk._bump_definitions_version() FROM PUBLIC;
CREATE TRIGGER adk_definitions_version AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON adk.agents FOR EACH STATEMENT EXECUTE FUNCTION adk._bump_definitions_version();
CREATE TRIGGER adk_definitions_version AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON adk.tools FOR EACH STATEMENT EXECUTE FUNCTION adk._bump_definitions_version();
CREATE TRIGGER adk_definitions_version AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON adk.apps FOR EACH STATEMENT EXECUTE FUNCTION adk._bump_definitions_version();
CREATE TRIGGER adk_definitions_version AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON adk.plugins FOR EACH STATEMENT EXECUTE FUNCTION adk._bump_definitions_version();
GRANT SELECT ON adk.definitions_version TO adk_user;

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
-- ---------------------------------------------------------------------
-- Human in the loop and RunState (docs/runs.md; seed 000 §四.4.3-§四.4.4).
--
-- A call to a long_running tool, or the adk_request_confirmation call a
-- require_confirmation tool makes first, is an interrupt: its id is in the
-- long_running_tool_ids of the event that made it, and it stays pending
-- until a later user event carries a function_response with that id --
-- in any invocation, from any writer (ADK-JS and ADK Python answer in a
-- new invocation of their own, and decide "answered" by the call id, as
-- we do).
--
-- adk.run_states holds one row per node activation of every invocation
-- (ADK-Go's RunState per node, 000 §四.4.3): node_path is the node's path
-- as node_info writes it (docs/agent-modes.md "Node info": "coordinator",
-- "coordinator/booker@<call id>" for a task, "coordinator/translator@<n>"
-- for a single_turn node; the author for an event another runtime wrote
-- without node_info), so the root coordinator is a node too.
-- interrupt_ids are the pending ids of the calls made in the node or in a
-- node below it (a pause inside a task waits on the task's row and holds
-- its coordinator's: both are 'waiting' with the same ids), answered_ids
-- the answered ones; status 'waiting' while anything is pending,
-- 'completed' once an event names the node in node_info.output_for (a
-- task's finish_task response, a single_turn node's answer), else what
-- the node's last event says ('failed' for an error event, 'cancelled'
-- for error_code CANCELLED), 'running' for a task or single_turn node no
-- output finished yet (a task still open), 'completed' for the root.
-- input is the node's input (the root's: the content of the invocation's
-- first user event; a task's or a single_turn node's: its delegating
-- call's arguments, adk._node_input), output the output that finished it.
--
-- Who writes them, at what cost per turn (docs/runs.md "Where the run
-- stands"): the runner inserts a node's row, 'running', as the node
-- starts (adk._node_start, one INSERT ... ON CONFLICT), and brings the
-- rows of the nodes it ran to what the events say as the invocation ends
-- (adk._invocation_end; a paused or resumed run: adk._refresh_run_states
-- for those rows and the rows above them); in between, the events
-- trigger (src/store/event_trigger.c), which every writer passes,
-- refreshes the rows an event changes (adk._event_appended) in the
-- transaction of the event -- a pause, an answer, a node's output (a
-- task's finish_task response, which marks its row completed in the
-- transaction that appends its coordinator's function response; a graph
-- workflow node's output event).  A refresh names the rows it derives,
-- so its cost is that of those rows, not of every node of the
-- invocation: resuming a paused workflow of 50 nodes costs what one of 2
-- does (test/bench/workflow.sh).  'running' is also what a resume sets,
-- inside its transaction, between the answer and the end of the
-- invocation.
--
-- Every column but attempt derives from adk.events alone
-- (adk._derive_run_states), and adk_rebuild_run_states() writes the same
-- rows again from the events -- a graph workflow node's input excepted,
-- which its start writes and its events do not hold (a rebuild keeps a
-- row's own).  triggered_by, branch and graph_hash are those of the
-- node's latest event: its branch (ADK's Event.branch, which ADK Python
-- and JS write too) and, for a graph workflow's node, the node that
-- triggered it and the graph hash in its custom_metadata.  attempt counts the starts of the node
-- activation: a queued run's retry (its job re-claimed after its worker
-- died or its run raised) that runs the node again adds one in
-- adk._node_start; a resume after a human's answer is not a new attempt.
-- A failed attempt's events rolled back with it, so the events cannot
-- tell: a rebuild keeps the attempt of a row it updates, and a row it
-- creates has 1.  A resume reads its invocation's rows to know
-- where it is -- which node made the call, a task's agent and scope --
-- and does not replay the history (ADK-Go reconstructs the RunState
-- every turn, 000 §四.4.4); only an invocation with no rows at all gets
-- them derived first.
--
-- Resume and exactly-once: see src/runner/hitl.c.  adk_run holds the
-- session row from its start; adk._resume_interrupts also locks the
-- run_states row (SELECT ... FOR UPDATE) and re-checks it, so a second
-- resume of the same interrupt -- under READ COMMITTED, the default --
-- finds it answered and runs as plain input.  (Under REPEATABLE READ or
-- SERIALIZABLE the second one may get a serialization failure instead;
-- retried, it runs as plain input.)
-- ---------------------------------------------------------------------

CREATE TABLE adk.run_states (
    app_name      text NOT NULL,
    user_id       text NOT NULL,
    -- the type of adk.sessions.id, so Citus can colocate the two
    session_id    varchar(191) NOT NULL,
    invocation_id text NOT NULL,
    node_path     text NOT NULL,
    status        text NOT NULL
                  CHECK (status IN ('running', 'waiting', 'completed', 'failed', 'cancelled')),
    interrupt_ids text[] NOT NULL DEFAULT '{}',
    answered_ids  text[] NOT NULL DEFAULT '{}',
    agent         text NOT NULL,
    updated_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    input         jsonb,
    output        jsonb,
    attempt       integer NOT NULL DEFAULT 1,
    triggered_by  text,
    branch        text,
    graph_hash    text,
    CONSTRAINT run_states_pkey PRIMARY KEY (app_name, user_id, session_id, invocation_id, node_path),
    CONSTRAINT run_states_waiting_has_ids
        CHECK (status <> 'waiting' OR cardinality(interrupt_ids) > 0)
);
COMMENT ON TABLE adk.run_states IS
    'Workflow RunState per node activation of every invocation: status, pending interrupt_ids, answered_ids, input, output, attempt; derived from adk.events but attempt (adk_rebuild_run_states)';
COMMENT ON COLUMN adk.run_states.node_path IS 'the node''s path as node_info writes it (coordinator, coordinator/booker@<call id>); the author for an event without node_info';
COMMENT ON COLUMN adk.run_states.interrupt_ids IS 'pending long-running / confirmation call ids of the node and the nodes below it, in call order';
COMMENT ON COLUMN adk.run_states.answered_ids IS 'interrupt ids of the node and the nodes below it the user has answered (in any invocation), in call order';
COMMENT ON COLUMN adk.run_states.input IS 'the node''s input: the root''s user message content, a task''s or a single_turn node''s delegating call arguments';
COMMENT ON COLUMN adk.run_states.output IS 'the output that finished the node (node_info.output_for)';
COMMENT ON COLUMN adk.run_states.attempt IS 'how many times this node activation was started: 1, plus one for each retry of its queued run that ran the node again; a resume after a human''s answer is not a new attempt';
COMMENT ON COLUMN adk.run_states.triggered_by IS 'a graph workflow''s node: the node, or START, whose edge started it (custom_metadata.adk_triggered_by of its events); NULL for other nodes';
COMMENT ON COLUMN adk.run_states.branch IS 'the branch of the node''s latest event (ADK''s Event.branch); NULL for the root''s';
COMMENT ON COLUMN adk.run_states.graph_hash IS 'a graph workflow''s node: the graph hash of its workflow when it ran (custom_metadata.adk_graph_hash of its events), which a resume must find unchanged';

-- The node an event belongs to: node_info's path (a string), else the
-- agent that wrote it (another runtime's event without node_info); NULL
-- for a user's event outside any node.
CREATE FUNCTION adk._node_path(d jsonb)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(CASE WHEN jsonb_typeof(d #> '{node_info,path}') = 'string'
                         THEN d #>> '{node_info,path}' END,
                    nullif(nullif(d ->> 'author', ''), 'user'))
$$;

-- The input of a node below the root (a path with "@"): a task's node
-- "<path>/<agent>@<call id>" ran with its delegating call's arguments; a
-- single_turn node "<path>/<agent>@<n>" with the arguments of the n-th
-- call of <agent> that <path> made in the invocation (its branch counts
-- them from 1: src/runner/single_turn.c), as ADK-Go's node input.  NULL
-- when no such call is stored.
CREATE FUNCTION adk._node_input(p_app text, p_user text, p_session text,
                                p_invocation text, p_path text)
RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    node text := substring(p_path from '[^/]*$');
    tail text := substring(node from '@([^@]*)$');
    found jsonb;
BEGIN
    IF tail IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT p -> 'function_call' -> 'args' INTO found
      FROM adk.live_events e
     CROSS JOIN LATERAL adk._parts(e.event_data -> 'content') p
     WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
       AND e.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
       AND coalesce(e.event_data ->> 'author', 'user') <> 'user'
       AND p #>> '{function_call,id}' = tail
     ORDER BY e.seq LIMIT 1;
    IF found IS NOT NULL OR tail !~ '^[1-9][0-9]{0,8}$' OR strpos(p_path, '/') = 0 THEN
        RETURN found;
    END IF;
    SELECT c.part -> 'function_call' -> 'args' INTO found
      FROM (SELECT p.part, row_number() OVER (ORDER BY e.seq, p.ord) AS n
              FROM adk.live_events e
             CROSS JOIN LATERAL adk._parts(e.event_data -> 'content') WITH ORDINALITY AS p(part, ord)
             WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
               AND e.invocation_id = p_invocation
               AND e.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
               AND coalesce(e.event_data ->> 'author', 'user') <> 'user'
               AND adk._node_path(e.event_data) = left(p_path, length(p_path) - length(node) - 1)
               AND p.part #>> '{function_call,name}' = left(node, length(node) - length(tail) - 1)) c
     WHERE c.n = tail::integer;
    RETURN found;
END
$$;

-- The rows of one invocation (or of every invocation of the session when
-- p_invocation is NULL), computed from the session's live events (not
-- the rewound ones: 12_rewound.sql); p_paths: only the rows of those
-- node paths (what one event changes: adk._refresh_run_states).
-- triggered_by, branch and graph_hash are what the node's latest event
-- says: its branch (ADK's Event.branch), and for a graph workflow's node
-- custom_metadata.adk_triggered_by and adk_graph_hash (workflow.c writes
-- them on each event of the node).
CREATE FUNCTION adk._derive_run_states(p_app text, p_user text, p_session text,
                                       p_invocation text DEFAULT NULL,
                                       p_new jsonb DEFAULT NULL,
                                       p_paths text[] DEFAULT NULL)
RETURNS SETOF adk.run_states
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- PL/pgSQL, not SQL: Citus plans its statements (one session: one shard)
    RETURN QUERY
    -- p_new: {seq, invocation_id, timestamp, event_data} of an event being
    -- inserted (the events trigger runs before its row is visible)
    WITH incoming AS (
        SELECT (p_new ->> 'seq')::bigint AS seq, p_new ->> 'invocation_id' AS invocation_id,
               (p_new ->> 'timestamp')::timestamptz AS ts, p_new -> 'event_data' AS d,
               coalesce(p_new #>> '{event_data,author}', '') AS author,
               adk._node_path(p_new -> 'event_data') AS path
         WHERE p_new IS NOT NULL
           AND p_new #> '{event_data,custom_metadata,adk_appended_by}' IS NULL
           AND NOT EXISTS (SELECT 1 FROM adk.events e
                            WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
                              AND e.seq = (p_new ->> 'seq')::bigint)
    ), ev AS (
        SELECT e.seq, e.invocation_id::text AS invocation_id, e."timestamp" AS ts,
               e.event_data AS d, coalesce(e.event_data ->> 'author', '') AS author,
               adk._node_path(e.event_data) AS path
          FROM adk.live_events e
         WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
           AND (p_invocation IS NULL OR e.invocation_id = p_invocation)
           -- an event a caller appended where it may not speak for the
           -- session (85_tenancy.sql) is never an interrupt or an answer
           AND e.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
        UNION ALL
        SELECT * FROM incoming
         WHERE p_invocation IS NULL OR incoming.invocation_id = p_invocation
    ), calls AS (
        -- every interrupt: an id in long_running_tool_ids of an agent's event
        SELECT ev.invocation_id, ev.path, ev.seq, ev.ts, lr.ord, lr.id
          FROM ev
         CROSS JOIN LATERAL jsonb_array_elements_text(ev.d -> 'long_running_tool_ids')
               WITH ORDINALITY AS lr(id, ord)
         WHERE ev.author <> 'user'
           AND jsonb_typeof(ev.d -> 'long_running_tool_ids') = 'array'
    ), answers AS (
        -- function responses the user sent, in any invocation
        SELECT a.seq, a.ts, p #>> '{function_response,id}' AS id
          FROM (SELECT e.seq, e."timestamp" AS ts, e.event_data AS d
                  FROM adk.live_events e
                 WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
                   AND e.event_data ->> 'author' = 'user'
                   AND e.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
                UNION ALL
                SELECT incoming.seq, incoming.ts, incoming.d FROM incoming
                 WHERE incoming.author = 'user') a
         CROSS JOIN LATERAL adk._parts(a.d -> 'content') p
         WHERE p ? 'function_response'
    ), interrupts AS (
        -- a call no answer came for before an error event CANCELLED of
        -- its invocation (adk_cancel of a paused run, 63_cancel_waiting.sql)
        -- is no longer pending
        SELECT c.invocation_id, c.path, c.seq, c.ts, c.ord, c.id, a.answered_at,
               a.answered_at IS NULL
               AND EXISTS (SELECT 1 FROM ev k
                            WHERE k.invocation_id = c.invocation_id AND k.seq > c.seq
                              AND k.author <> 'user' AND k.d ->> 'error_code' = 'CANCELLED') AS cancelled
          FROM calls c
         CROSS JOIN LATERAL (SELECT (SELECT a.ts FROM answers a
                                      WHERE a.id = c.id AND a.seq > c.seq
                                      ORDER BY a.seq LIMIT 1) AS answered_at) a
    ), nodes AS (
        -- every node activation: each path of an event, and each node
        -- above an interrupt's ("<...>/<node>@<n>/..."): a nested graph
        -- workflow's node waits while a node of its workflow does, with
        -- no event of its own until it ends (docs/workflows.md "Statuses")
        SELECT DISTINCT x.invocation_id, x.path
          FROM (SELECT ev.invocation_id, ev.path FROM ev
                 WHERE ev.path IS NOT NULL
                UNION ALL
                SELECT i.invocation_id, array_to_string((string_to_array(i.path, '/'))[1:k.k], '/')
                  FROM interrupts i
                 CROSS JOIN LATERAL generate_series(1, cardinality(string_to_array(i.path, '/')) - 1) k(k)
                 WHERE (string_to_array(i.path, '/'))[k.k] ~ '@[0-9]+$') x
         WHERE p_paths IS NULL OR x.path = ANY (p_paths)
    ), held AS (
        -- the interrupts of a node and of the nodes below it
        SELECT n.invocation_id, n.path,
               coalesce(array_agg(i.id ORDER BY i.seq, i.ord)
                        FILTER (WHERE i.id IS NOT NULL AND i.answered_at IS NULL
                                AND NOT i.cancelled), '{}') AS pending,
               coalesce(array_agg(i.id ORDER BY i.seq, i.ord) FILTER (WHERE i.answered_at IS NOT NULL),
                        '{}') AS answered,
               max(i.answered_at) AS last_answer, max(i.ts) AS last_call
          FROM nodes n
          LEFT JOIN interrupts i
                 ON i.invocation_id = n.invocation_id
                AND (i.path = n.path OR starts_with(i.path, n.path || '/'))
         GROUP BY n.invocation_id, n.path
    )
    SELECT p_app, p_user, p_session::varchar(191), n.invocation_id, n.path,
           CASE WHEN cardinality(n.pending) > 0 THEN 'waiting'
                WHEN fin.d IS NOT NULL THEN 'completed'
                WHEN last.d ->> 'error_code' = 'CANCELLED' THEN 'cancelled'
                WHEN last.d ->> 'error_code' IS NOT NULL THEN 'failed'
                WHEN strpos(n.path, '/') > 0 THEN 'running'
                ELSE 'completed' END,
           n.pending, n.answered,
           -- a node with no event of its own: its workflow's, as it started
           coalesce(last.author, substring(n.path from '([^/]*)/[^/]*$')),
           coalesce(greatest(last.ts, n.last_answer), greatest(n.last_call, n.last_answer)),
           CASE WHEN strpos(n.path, '@') = 0 THEN
                (SELECT ev.d -> 'content' FROM ev
                  WHERE ev.invocation_id = n.invocation_id AND ev.author = 'user'
                  ORDER BY ev.seq LIMIT 1)
           ELSE
                -- a task's or a single_turn node's delegating call
                adk._node_input(p_app, p_user, p_session, n.invocation_id, n.path)
           END,
           CASE WHEN fin.d #>> '{node_info,message_as_output}' = 'true' THEN fin.d -> 'content'
                ELSE fin.d -> 'output' END,
           -- not in the events: adk._refresh_run_states keeps a row's own
           1,
           last.d #>> '{custom_metadata,adk_triggered_by}',
           last.d ->> 'branch',
           last.d #>> '{custom_metadata,adk_graph_hash}'
      FROM held n
      LEFT JOIN LATERAL (SELECT ev.d, ev.ts, ev.author FROM ev
                          WHERE ev.invocation_id = n.invocation_id AND ev.path = n.path
                            AND ev.author <> 'user'
                          ORDER BY ev.seq DESC LIMIT 1) last ON true
      LEFT JOIN LATERAL (SELECT ev.d FROM ev
                          WHERE ev.invocation_id = n.invocation_id
                            AND ev.d #> '{node_info,output_for}' ? n.path
                          ORDER BY ev.seq DESC LIMIT 1) fin ON true;
END
$$;

-- Make adk.run_states say what the events say, for one invocation (or the
-- whole session when p_invocation is NULL): rows that changed are updated
-- in place (so a concurrent SELECT ... FOR UPDATE re-checks the new
-- version) and keep their attempt, rows that no longer derive are
-- deleted; a row's input the events do not give (a graph workflow's
-- node: its start wrote it) is kept.  p_paths: only the rows of those
-- node paths and of the nodes above them (each "/"-prefix), which is what
-- one event, or one resumed run, changes; a graph workflow node's row
-- above them that derives from no event of its own stays (a nested
-- workflow node running, whose events are its nodes' until it ends:
-- docs/workflows.md "Statuses") --
-- the cost of a refresh is then
-- that of the rows it names, not of every node the invocation ran
-- (test/bench/workflow.sh).  Returns the number of interrupts still
-- pending in that scope (with p_paths: in the invocation's rows).
CREATE FUNCTION adk._refresh_run_states(p_app text, p_user text, p_session text,
                                        p_invocation text DEFAULT NULL,
                                        p_new jsonb DEFAULT NULL,
                                        p_paths text[] DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    -- each path and the paths above it: "a/b@1/c@2" -> a, a/b@1, a/b@1/c@2
    paths text[] := CASE WHEN p_paths IS NOT NULL THEN
        ARRAY(SELECT DISTINCT array_to_string((string_to_array(p.path, '/'))[1:k.k], '/')
                FROM unnest(p_paths) p(path)
               CROSS JOIN LATERAL generate_series(1, cardinality(string_to_array(p.path, '/'))) k(k)
               WHERE p.path IS NOT NULL) END;
    -- statements Citus can route to the session's shard: the derived rows
    -- are read once, then the table is brought to them
    d adk.run_states[] := ARRAY(SELECT x FROM adk._derive_run_states(p_app, p_user, p_session,
                                                                     p_invocation, p_new, paths) x);
    x adk.run_states;
BEGIN
    DELETE FROM adk.run_states r
     WHERE r.app_name = p_app AND r.user_id = p_user AND r.session_id = p_session
       AND (p_invocation IS NULL OR r.invocation_id = p_invocation)
       AND (paths IS NULL OR r.node_path = ANY (p_paths)
            OR (r.node_path = ANY (paths) AND r.graph_hash IS NULL))
       AND NOT EXISTS (SELECT 1 FROM unnest(d) k
                        WHERE k.invocation_id = r.invocation_id AND k.node_path = r.node_path);
    FOREACH x IN ARRAY d LOOP
        INSERT INTO adk.run_states AS r
        VALUES (x.app_name, x.user_id, x.session_id, x.invocation_id, x.node_path, x.status,
                x.interrupt_ids, x.answered_ids, x.agent, x.updated_at, x.input, x.output, x.attempt,
                x.triggered_by, x.branch, x.graph_hash)
        -- a graph workflow's node the events name only from below (a
        -- nested workflow node waiting) keeps the triggered_by, branch and
        -- graph hash its start wrote
        ON CONFLICT (app_name, user_id, session_id, invocation_id, node_path) DO UPDATE
           SET status = EXCLUDED.status, interrupt_ids = EXCLUDED.interrupt_ids,
               answered_ids = EXCLUDED.answered_ids, agent = EXCLUDED.agent,
               updated_at = EXCLUDED.updated_at, input = coalesce(EXCLUDED.input, r.input),
               output = EXCLUDED.output,
               triggered_by = CASE WHEN EXCLUDED.graph_hash IS NULL AND r.graph_hash IS NOT NULL THEN r.triggered_by ELSE EXCLUDED.triggered_by END,
               branch = CASE WHEN EXCLUDED.graph_hash IS NULL AND r.graph_hash IS NOT NULL THEN r.branch ELSE EXCLUDED.branch END,
               graph_hash = CASE WHEN EXCLUDED.graph_hash IS NULL AND r.graph_hash IS NOT NULL THEN r.graph_hash ELSE EXCLUDED.graph_hash END
         WHERE (r.status, r.interrupt_ids, r.answered_ids, r.agent, r.updated_at, r.input, r.output,
                r.triggered_by, r.branch, r.graph_hash)
               IS DISTINCT FROM
               (EXCLUDED.status, EXCLUDED.interrupt_ids, EXCLUDED.answered_ids, EXCLUDED.agent,
                EXCLUDED.updated_at, coalesce(EXCLUDED.input, r.input), EXCLUDED.output,
                CASE WHEN EXCLUDED.graph_hash IS NULL AND r.graph_hash IS NOT NULL THEN r.triggered_by ELSE EXCLUDED.triggered_by END,
                CASE WHEN EXCLUDED.graph_hash IS NULL AND r.graph_hash IS NOT NULL THEN r.branch ELSE EXCLUDED.branch END,
                CASE WHEN EXCLUDED.graph_hash IS NULL AND r.graph_hash IS NOT NULL THEN r.graph_hash ELSE EXCLUDED.graph_hash END);
    END LOOP;
    IF paths IS NOT NULL THEN
        RETURN coalesce((SELECT sum(cardinality(r.interrupt_ids)) FROM adk.run_states r
                          WHERE r.app_name = p_app AND r.user_id = p_user AND r.session_id = p_session
                            AND (p_invocation IS NULL OR r.invocation_id = p_invocation)), 0)::integer;
    END IF;
    RETURN coalesce((SELECT sum(cardinality(k.interrupt_ids)) FROM unnest(d) k), 0)::integer;
END
$$;

-- A node starts (src/runner/run_states.c): its row, 'running', with its
-- input -- p_input when given (a graph workflow's node: workflow.c), else
-- the root's is the user's message the runner holds, a task's or
-- a single_turn node's is its delegating call's arguments (stored just
-- before, in this transaction).  The row is there already when the node
-- goes on: a resume after a human's answer leaves it as it is (the same
-- attempt: _resume_interrupts has set its status), a queued run's retry
-- (p_retry) starts it again -- one more attempt, running.  A graph
-- workflow's node also gets its triggered_by, branch and graph hash
-- (workflow.c), which its events carry too.  One statement per node: this
-- is paid on every turn.
CREATE FUNCTION adk._node_start(p_app text, p_user text, p_session text, p_invocation text,
                                p_path text, p_agent text, p_input jsonb, p_retry boolean,
                                p_triggered_by text DEFAULT NULL, p_branch text DEFAULT NULL,
                                p_graph_hash text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    INSERT INTO adk.run_states AS r
           (app_name, user_id, session_id, invocation_id, node_path, status, agent, input,
            triggered_by, branch, graph_hash)
    VALUES (p_app, p_user, p_session, p_invocation, p_path, 'running', p_agent,
            CASE WHEN p_input IS NOT NULL OR strpos(p_path, '@') = 0 THEN p_input
                 ELSE adk._node_input(p_app, p_user, p_session, p_invocation, p_path) END,
            p_triggered_by, p_branch, p_graph_hash)
    ON CONFLICT (app_name, user_id, session_id, invocation_id, node_path) DO UPDATE
       SET status = 'running', attempt = r.attempt + 1, updated_at = EXCLUDED.updated_at
     WHERE p_retry;
END
$$;

-- The resume check of adk_run (000 §四.4.4 buildResumeResponses), for a
-- message holding function responses p_ids and the invocation that made
-- the calls: lock the invocation's rows that have any of p_ids pending
-- (SELECT ... FOR UPDATE: a second resume of the same interrupt waits
-- here, then finds it answered), mark those ids answered and return them
-- with the call each answers (name, args, the agent that made it), the
-- number of ids that node still waits for, the node's path (where the
-- run resumes: a task's row names its agent and scope), and, for an
-- adk_request_confirmation call, the original function call it asks about
-- as found in the history.  No rows: nothing pending matched, the
-- message is plain input.  The rows are read as the append path keeps
-- them; only an invocation that has none (its rows deleted, or written
-- before there were any) gets them derived from its events first.
CREATE FUNCTION adk._resume_interrupts(p_app text, p_user text, p_session text,
                                       p_invocation text, p_ids text[])
RETURNS TABLE (r_call_id text, r_tool text, r_args jsonb, r_agent text, r_original jsonb,
               r_left integer, r_path text)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    st record;
    answered text[];
    remaining text[];
    -- a value, not clock_timestamp() in the UPDATE: Citus refuses
    -- volatile functions in UPDATEs of distributed tables
    now_ts timestamptz := clock_timestamp();
BEGIN
    IF NOT EXISTS (SELECT 1 FROM adk.run_states s
                    WHERE s.app_name = p_app AND s.user_id = p_user AND s.session_id = p_session
                      AND s.invocation_id = p_invocation) THEN
        PERFORM adk._refresh_run_states(p_app, p_user, p_session, p_invocation);
    END IF;
    FOR st IN
        SELECT s.node_path, s.agent, s.interrupt_ids
          FROM adk.run_states s
         WHERE s.app_name = p_app AND s.user_id = p_user AND s.session_id = p_session
           AND s.invocation_id = p_invocation AND s.interrupt_ids && p_ids
         ORDER BY s.node_path
           FOR UPDATE
    LOOP
        answered := ARRAY(SELECT u.id FROM unnest(st.interrupt_ids) WITH ORDINALITY AS u(id, n)
                           WHERE u.id = ANY (p_ids) ORDER BY u.n);
        remaining := ARRAY(SELECT u.id FROM unnest(st.interrupt_ids) WITH ORDINALITY AS u(id, n)
                            WHERE u.id <> ALL (p_ids) ORDER BY u.n);
        UPDATE adk.run_states s
           SET status = CASE WHEN cardinality(remaining) > 0 THEN 'waiting' ELSE 'running' END,
               interrupt_ids = remaining,
               answered_ids = s.answered_ids || answered,
               updated_at = now_ts
         WHERE s.app_name = p_app AND s.user_id = p_user AND s.session_id = p_session
           AND s.invocation_id = p_invocation AND s.node_path = st.node_path;
        RETURN QUERY
        SELECT c.call ->> 'id', c.call ->> 'name', c.call -> 'args', c.author, o.original,
               cardinality(remaining), st.node_path
          FROM (SELECT DISTINCT ON (p #>> '{function_call,id}') p -> 'function_call' AS call,
                       e.event_data ->> 'author' AS author
                  FROM adk.events e
                 CROSS JOIN LATERAL adk._parts(e.event_data -> 'content') p
                 WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
                   AND e.invocation_id = p_invocation
                   -- the calls made in this node (a coordinator's row, which
                   -- holds its task's, finds none: the task's row returns them)
                   AND adk._node_path(e.event_data) = st.node_path
                   AND e.event_data ->> 'author' <> 'user'
                   AND e.event_data -> 'long_running_tool_ids' ?| answered
                   AND e.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
                   AND p #>> '{function_call,id}' = ANY (answered)
                 ORDER BY p #>> '{function_call,id}', e.seq DESC) c
          LEFT JOIN LATERAL (
                SELECT p2 -> 'function_call' AS original
                  FROM adk.events e2
                 CROSS JOIN LATERAL adk._parts(e2.event_data -> 'content') p2
                 WHERE c.call ->> 'name' = 'adk_request_confirmation'
                   AND e2.app_name = p_app AND e2.user_id = p_user AND e2.session_id = p_session
                   AND e2.invocation_id = p_invocation
                   AND e2.event_data ->> 'author' = c.author
                   AND p2 #>> '{function_call,id}' = c.call #>> '{args,originalFunctionCall,id}'
                   AND p2 #>> '{function_call,name}' <> 'adk_request_confirmation'
                   AND e2.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
                 ORDER BY e2.seq DESC LIMIT 1) o ON true
         ORDER BY array_position(answered, c.call ->> 'id');
    END LOOP;
END
$$;

-- The append path (src/store/event_trigger.c, for every writer): the run
-- states an event changes, refreshed in its transaction.  p_new is
-- {seq, invocation_id, timestamp, event_data} of the event, which the
-- trigger may call this for before the row is visible.  An agent's event
-- with long_running_tool_ids: its node's row and the rows above it, which
-- hold its interrupts.  A user's function responses: the rows of every
-- invocation that waits on one of those ids.  An event that finishes a
-- node (node_info.output_for) in an invocation that has rows: the rows of
-- the nodes it names and of its own node (and the rows above them), not
-- every row of the invocation -- a workflow of 50 nodes pays for one node
-- per event, as one of 2 does (test/bench/workflow.sh).
CREATE FUNCTION adk._event_appended(p_app text, p_user text, p_session text, p_new jsonb)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    d jsonb := p_new -> 'event_data';
    ids text[];
    inv text;
BEGIN
    IF d #> '{node_info,output_for}' IS NOT NULL
       AND EXISTS (SELECT 1 FROM adk.run_states r
                    WHERE r.app_name OPERATOR(pg_catalog.=) p_app
                      AND r.user_id OPERATOR(pg_catalog.=) p_user
                      AND r.session_id OPERATOR(pg_catalog.=) p_session
                      AND r.invocation_id OPERATOR(pg_catalog.=) (p_new ->> 'invocation_id')) THEN
        PERFORM adk._refresh_run_states(p_app, p_user, p_session, p_new ->> 'invocation_id', p_new,
                    ARRAY(SELECT f FROM pg_catalog.jsonb_array_elements_text(
                                          CASE WHEN pg_catalog.jsonb_typeof(d #> '{node_info,output_for}')
                                                    OPERATOR(pg_catalog.=) 'array'
                                               THEN d #> '{node_info,output_for}' ELSE '[]' END) f)
                    OPERATOR(pg_catalog.||) adk._node_path(d));
    END IF;
    IF coalesce(d ->> 'author', '') OPERATOR(pg_catalog.<>) 'user'
       AND pg_catalog.jsonb_typeof(d -> 'long_running_tool_ids') OPERATOR(pg_catalog.=) 'array'
       AND pg_catalog.jsonb_array_length(d -> 'long_running_tool_ids') OPERATOR(pg_catalog.>) 0 THEN
        PERFORM adk._refresh_run_states(p_app, p_user, p_session, p_new ->> 'invocation_id', p_new,
                                        ARRAY[adk._node_path(d)]);
    END IF;
    IF d ->> 'author' OPERATOR(pg_catalog.=) 'user' THEN
        ids := ARRAY(SELECT p #>> '{function_response,id}' FROM adk._parts(d -> 'content') p
                      WHERE p #>> '{function_response,id}' IS NOT NULL);
        IF pg_catalog.cardinality(ids) OPERATOR(pg_catalog.>) 0 THEN
            FOR inv IN
                SELECT DISTINCT r.invocation_id FROM adk.run_states r
                 WHERE r.app_name OPERATOR(pg_catalog.=) p_app AND r.user_id OPERATOR(pg_catalog.=) p_user
                   AND r.session_id OPERATOR(pg_catalog.=) p_session
                   AND r.interrupt_ids OPERATOR(pg_catalog.&&) ids
            LOOP
                -- answered from outside that invocation (another runtime's
                -- own invocation): it no longer waits
                IF adk._refresh_run_states(p_app, p_user, p_session, inv, p_new) OPERATOR(pg_catalog.=) 0
                   AND inv IS DISTINCT FROM p_new ->> 'invocation_id' THEN
                    UPDATE adk.invocations i SET status = 'completed'
                     WHERE i.invocation_id OPERATOR(pg_catalog.=) inv
                       AND i.status OPERATOR(pg_catalog.=) 'waiting';
                END IF;
            END LOOP;
        END IF;
    END IF;
END
$$;

-- A message that only repeats answers to confirmations already answered
-- (two clients approving at once, or one approving twice): true when every
-- id in p_ids is an adk_request_confirmation call of the session that a
-- user's response answered already.  adk_run then runs nothing.
CREATE FUNCTION adk._repeated_confirmation(p_app text, p_user text, p_session text, p_ids text[])
RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT pg_catalog.cardinality(p_ids) OPERATOR(pg_catalog.>) 0
       AND NOT EXISTS (
           SELECT 1 FROM pg_catalog.unnest(p_ids) u(id)
            WHERE NOT EXISTS (
                  SELECT 1 FROM adk.live_events e
                   CROSS JOIN LATERAL adk._parts(e.event_data -> 'content') p
                   WHERE e.app_name OPERATOR(pg_catalog.=) p_app AND e.user_id OPERATOR(pg_catalog.=) p_user
                     AND e.session_id OPERATOR(pg_catalog.=) p_session
                     AND e.event_data -> 'long_running_tool_ids' OPERATOR(pg_catalog.?) u.id
                     AND e.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
                     AND p #>> '{function_call,id}' OPERATOR(pg_catalog.=) u.id
                     AND p #>> '{function_call,name}' OPERATOR(pg_catalog.=) 'adk_request_confirmation'
                     AND EXISTS (
                         SELECT 1 FROM adk.live_events a
                          CROSS JOIN LATERAL adk._parts(a.event_data -> 'content') q
                          WHERE a.app_name OPERATOR(pg_catalog.=) p_app AND a.user_id OPERATOR(pg_catalog.=) p_user
                            AND a.session_id OPERATOR(pg_catalog.=) p_session
                            AND a.seq OPERATOR(pg_catalog.>) e.seq
                            AND a.event_data ->> 'author' OPERATOR(pg_catalog.=) 'user'
                            AND a.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
                            AND q #>> '{function_response,id}' OPERATOR(pg_catalog.=) u.id)))
$$;

-- adk_rebuild_run_states(): adk.run_states again from adk.events alone, for
-- one session, one user's or one app's sessions, or all of them.  Each
-- session's row is locked first (as adk_run does), so a rebuild never
-- interleaves with a run of that session.  Returns the number of rows the
-- scope has afterwards.  The body, adk._rebuild_run_states, runs as the
-- owner of schema adk once adk_rebuild_run_states (85_tenancy.sql) has
-- checked the scope against the caller's tenancy; called directly it runs
-- as the caller, who may not write the store.
CREATE FUNCTION adk._rebuild_run_states(app_name text, user_id text, session_id text)
RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    s record;
    n bigint := 0;
BEGIN
    FOR s IN
        SELECT x.app_name, x.user_id, x.session_id
          FROM (SELECT e.app_name::text, e.user_id::text, e.session_id::text
                  FROM adk.events e
                 WHERE ($1 IS NULL OR e.app_name = $1)
                   AND ($2 IS NULL OR e.user_id = $2)
                   AND ($3 IS NULL OR e.session_id = $3)
                UNION
                SELECT r.app_name, r.user_id, r.session_id
                  FROM adk.run_states r
                 WHERE ($1 IS NULL OR r.app_name = $1)
                   AND ($2 IS NULL OR r.user_id = $2)
                   AND ($3 IS NULL OR r.session_id = $3)) x
         ORDER BY 1, 2, 3
    LOOP
        PERFORM 1 FROM adk.sessions ss
         WHERE ss.app_name = s.app_name AND ss.user_id = s.user_id AND ss.id = s.session_id
           FOR UPDATE;
        PERFORM adk._refresh_run_states(s.app_name, s.user_id, s.session_id, NULL);
        n := n + (SELECT count(*) FROM adk.run_states r
                   WHERE r.app_name = s.app_name AND r.user_id = s.user_id
                     AND r.session_id = s.session_id);
    END LOOP;
    RETURN n;
END
$$;

-- What every session is waiting on: one row per pending interrupt, with
-- the call (tool, args) and when it was made -- an approval UI is one
-- SELECT.  For a tool that asks for confirmation the call is
-- adk_request_confirmation and args.originalFunctionCall is the call that
-- waits for the answer.
CREATE VIEW adk.pending_interrupts AS
SELECT r.app_name, r.user_id, r.session_id, r.invocation_id, i.call_id,
       c.call ->> 'name' AS tool, c.call -> 'args' AS args, c.since, r.agent
  FROM adk.run_states r
 CROSS JOIN LATERAL unnest(r.interrupt_ids) WITH ORDINALITY AS i(call_id, ord)
  LEFT JOIN LATERAL (
        SELECT p -> 'function_call' AS call, e."timestamp" AS since
          FROM adk.events e
         CROSS JOIN LATERAL adk._parts(e.event_data -> 'content') p
         WHERE e.app_name = r.app_name AND e.user_id = r.user_id AND e.session_id = r.session_id
           AND e.invocation_id = r.invocation_id
           AND e.event_data -> 'long_running_tool_ids' ? i.call_id
           AND e.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
           AND p #>> '{function_call,id}' = i.call_id
         ORDER BY e.seq DESC LIMIT 1) c ON true
 -- once, from the node that made the call: not from a coordinator that
 -- holds it for its task
 WHERE NOT EXISTS (
       SELECT 1 FROM adk.run_states b
        WHERE b.app_name = r.app_name AND b.user_id = r.user_id AND b.session_id = r.session_id
          AND b.invocation_id = r.invocation_id AND starts_with(b.node_path, r.node_path || '/')
          AND i.call_id = ANY (b.interrupt_ids));
COMMENT ON VIEW adk.pending_interrupts IS
    'Pending interrupts of every session: the call (tool, args) each waits on, since when, by which agent and invocation.';

-- The requests for input (adk_request_input: a graph workflow's node
-- asking a person, docs/workflows.md "Human input") the session waits on:
-- how many, and the call id of one of them.  A plain-text message is the
-- answer when there is exactly one (src/runner/hitl.c).
CREATE FUNCTION adk._pending_input_requests(p_app text, p_user text, p_session text)
RETURNS TABLE (r_call_id text, r_count integer)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT min(p.call_id), count(*)::integer
      FROM adk.pending_interrupts p
     WHERE p.app_name = p_app AND p.user_id = p_user AND p.session_id = p_session
       AND p.tool = 'adk_request_input';
END
$$;

-- A session's run states go with it, whoever deletes it.
CREATE FUNCTION adk._sessions_delete_run_states() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    DELETE FROM adk.run_states r
     WHERE r.app_name = OLD.app_name AND r.user_id = OLD.user_id AND r.session_id = OLD.id;
    RETURN OLD;
END
$$;
CREATE TRIGGER adk_sessions_delete_run_states
    AFTER DELETE ON adk.sessions
    FOR EACH ROW EXECUTE FUNCTION adk._sessions_delete_run_states();

GRANT SELECT ON adk.run_states, adk.pending_interrupts TO adk_user;
-- Not marked for pg_dump: the rows derive from adk.events, which is.
-- After a restore, SELECT adk_rebuild_run_states(); as an admin (a resume derives the
-- rows of its own invocation anyway).
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
-- ---------------------------------------------------------------------
-- Compaction (docs/compaction.md; seed 000 §四.4.6): summaries that stand in for older
-- events in prompts.
--
-- A compaction is an ordinary event (author "user", no content) whose
-- actions.compaction = {start_timestamp, end_timestamp, compacted_content}
-- is ADK's record, so ADK-JS and ADK Python read it.  Timestamps there are
-- integer epoch milliseconds, the unit of event_data.timestamp in our
-- store (docs/sessions.md), so a reader comparing them with event timestamps gets
-- the same answer.  Because one session's timestamps strictly increase
-- with seq, the range is also an exact seq range; we keep it in our own
-- table adk.compactions (not in columns of the shared adk.events), with
-- the seq the summarizer saw last (seen_seq) and the end of the
-- contiguously covered prefix of the session (covered_to).
--
-- The summary is computed outside any lock (adk._compaction_read reads the
-- events, the model call happens in C).  adk._compaction_check takes the
-- session row lock -- the lock every append takes -- and refuses a range
-- whose events changed since they were read, or that a compaction appended
-- after the read (seq > seen_seq) covers in part.  Earlier summaries may
-- overlap on purpose (overlap_size, rolling summaries); a summary wholly
-- inside a wider one is dropped from prompts.  Events appended while the
-- summarizer ran have seq > to_seq and are never covered.
--
-- Every compaction event counts, whoever wrote it (ADK-JS and ADK Python
-- write them too, and anyone may append one with adk_append_event): the
-- append path (src/store/event_trigger.c, adk._compaction_note) records
-- its range in adk.compactions, found from its timestamps (epoch ms, or
-- ADK Python's seconds), with kind 'external'.  ADK-JS 2.0 writes its own
-- shape -- is_compacted, start_time, end_time, the summary as the event's
-- content -- which counts the same way.  Our own compactor's record
-- is the same row, which it then marks with its kind.  A record with no
-- compacted_content (an object with parts), an inverted range, or a range
-- that holds no event hides nothing: no row.
-- ---------------------------------------------------------------------

CREATE TABLE adk.compactions (
    app_name      text NOT NULL,
    user_id       text NOT NULL,
    -- the type of adk.sessions.id, so Citus can colocate the two
    session_id    varchar(191) NOT NULL,
    seq           bigint NOT NULL,      -- seq of the compaction event
    event_id      text NOT NULL,
    kind          text NOT NULL CHECK (kind IN ('sliding_window', 'tail_retention', 'manual', 'external')),
    from_seq      bigint NOT NULL,
    to_seq        bigint NOT NULL,
    seen_seq      bigint NOT NULL,      -- the session's last seq when the events were read
    covered_to    bigint NOT NULL,      -- every seq up to this one is covered after this row
    invocation_id text,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT compactions_pkey PRIMARY KEY (app_name, user_id, session_id, seq),
    CHECK (from_seq >= 1 AND from_seq <= to_seq AND to_seq <= seen_seq AND seen_seq < seq)
);
CREATE INDEX compactions_to_seq_idx ON adk.compactions (app_name, user_id, session_id, to_seq);
COMMENT ON TABLE adk.compactions IS 'Compaction events of sessions and the exact seq range each one covers';
COMMENT ON COLUMN adk.compactions.kind IS 'sliding_window, tail_retention or manual for ours; external for a compaction event another writer appended';
SELECT pg_catalog.pg_extension_config_dump('adk.compactions', '');

ALTER TABLE adk.invocations ADD COLUMN compaction_error text;
COMMENT ON COLUMN adk.invocations.compaction_error IS 'Why a compaction of this invocation failed or was refused (the run itself went on)';

-- A session's compactions go with it.
CREATE FUNCTION adk._sessions_delete_compactions() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    DELETE FROM adk.compactions c
     WHERE c.app_name = OLD.app_name AND c.user_id = OLD.user_id AND c.session_id = OLD.id;
    RETURN OLD;
END
$$;
CREATE TRIGGER adk_sessions_delete_compactions
    AFTER DELETE ON adk.sessions
    FOR EACH ROW EXECUTE FUNCTION adk._sessions_delete_compactions();

-- ---------------------------------------------------------------------
-- Configuration: adk.apps.compaction, checked as 000 §四.4.6.1 lists.
-- ---------------------------------------------------------------------

CREATE FUNCTION adk._check_compaction(app text, root text, c jsonb) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    k text;
    v jsonb;
    n numeric;
    interval_ bigint := 0;
    overlap bigint := 0;
    threshold bigint := 0;
    retention bigint := 0;
    root_kind text;
BEGIN
    IF c IS NULL THEN
        RETURN;
    END IF;
    IF jsonb_typeof(c) <> 'object' THEN
        RAISE EXCEPTION 'compaction of app "%" must be a JSON object, or NULL for none', app
            USING ERRCODE = '22023';
    END IF;
    FOR k, v IN SELECT * FROM jsonb_each(c) LOOP
        IF k IN ('compaction_interval', 'overlap_size', 'token_threshold', 'event_retention_size') THEN
            IF jsonb_typeof(v) <> 'number' OR (v #>> '{}')::numeric <> trunc((v #>> '{}')::numeric)
               OR abs((v #>> '{}')::numeric) > 2147483647 THEN
                RAISE EXCEPTION '"%" in the compaction of app "%" must be an integer', k, app
                    USING ERRCODE = '22023', DETAIL = format('It is %s.', v);
            END IF;
            n := (v #>> '{}')::numeric;
            IF n < 0 THEN
                RAISE EXCEPTION '"%" in the compaction of app "%" must not be negative', k, app
                    USING ERRCODE = '22023', DETAIL = format('It is %s.', v);
            END IF;
            CASE k
                WHEN 'compaction_interval' THEN interval_ := n;
                WHEN 'overlap_size' THEN overlap := n;
                WHEN 'token_threshold' THEN threshold := n;
                ELSE retention := n;
            END CASE;
        ELSIF k = 'summarizer_model' THEN
            IF jsonb_typeof(v) <> 'string' OR v #>> '{}' = '' THEN
                RAISE EXCEPTION '"summarizer_model" in the compaction of app "%" must be the name of a model', app
                    USING ERRCODE = '22023', DETAIL = format('It is %s.', v);
            END IF;
            IF adk._check_references() AND NOT EXISTS (SELECT 1 FROM adk.models m WHERE m.name = v #>> '{}') THEN
                RAISE EXCEPTION 'summarizer model "%" of app "%" does not exist', v #>> '{}', app
                    USING ERRCODE = '42704', HINT = 'Define it first with adk_define_model().';
            END IF;
        ELSE
            RAISE EXCEPTION 'unknown key "%" in the compaction of app "%"', k, app
                USING ERRCODE = '22023',
                      HINT = 'The keys are compaction_interval, overlap_size, token_threshold, event_retention_size and summarizer_model.';
        END IF;
    END LOOP;
    IF overlap > 0 AND interval_ = 0 THEN
        RAISE EXCEPTION 'compaction of app "%" sets overlap_size without compaction_interval', app
            USING ERRCODE = '22023', HINT = 'overlap_size only applies to the sliding window, which compaction_interval enables.';
    END IF;
    IF threshold > 0 AND retention = 0 THEN
        RAISE EXCEPTION 'compaction of app "%" sets token_threshold without event_retention_size', app
            USING ERRCODE = '22023', HINT = 'Tail retention needs both: the threshold that starts it and the number of recent events it keeps.';
    END IF;
    IF retention > 0 AND threshold = 0 THEN
        RAISE EXCEPTION 'compaction of app "%" sets event_retention_size without token_threshold', app
            USING ERRCODE = '22023', HINT = 'Tail retention needs both: the threshold that starts it and the number of recent events it keeps.';
    END IF;
    IF interval_ = 0 AND threshold = 0 THEN
        RAISE EXCEPTION 'compaction of app "%" enables nothing', app
            USING ERRCODE = '22023',
                  HINT = 'Set compaction_interval (sliding window), or token_threshold and event_retention_size (tail retention); NULL turns compaction off.';
    END IF;
    IF NOT c ? 'summarizer_model' AND adk._check_references() THEN
        SELECT a.kind INTO root_kind FROM adk.agents a WHERE a.name = root;
        IF root_kind IS DISTINCT FROM 'llm' THEN
            RAISE EXCEPTION 'compaction of app "%" needs a summarizer_model: its root agent "%" is a % agent', app, root, root_kind
                USING ERRCODE = '22023', HINT = 'Without summarizer_model the root LLM agent''s model summarizes.';
        END IF;
        IF adk._agent_model(root) IS NULL THEN
            RAISE EXCEPTION 'compaction of app "%" needs a summarizer_model: its root agent "%" has no model', app, root
                USING ERRCODE = '22023';
        END IF;
    END IF;
END
$$;

CREATE FUNCTION adk._apps_check_compaction() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM adk._check_compaction(NEW.name, NEW.root_agent, NEW.compaction);
    RETURN NEW;
END
$$;
-- after adk_apps_before_write (triggers fire in name order)
CREATE TRIGGER adk_apps_check_compaction
    BEFORE INSERT OR UPDATE ON adk.apps
    FOR EACH ROW EXECUTE FUNCTION adk._apps_check_compaction();

-- ---------------------------------------------------------------------
-- Choosing a range.
-- ---------------------------------------------------------------------

-- Sliding window: when at least "every" invocations began after the newest
-- compaction's range, those invocations plus "overlap" earlier ones, up to
-- the last event.  NULLs when it is not time.  Walks the events backwards
-- from the end and stops as soon as it has what it needs.
CREATE FUNCTION adk._sliding_window_range(p_app text, p_user text, p_session text,
                                          every integer, overlap integer,
                                          OUT from_seq bigint, OUT to_seq bigint)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    last_to bigint;
    r record;
    ids text[] := '{}';
    new_count integer := 0;
    last_seq bigint;
    lo bigint;
BEGIN
    SELECT c.to_seq INTO last_to FROM adk.compactions c
     WHERE c.app_name = p_app AND c.user_id = p_user AND c.session_id = p_session
     ORDER BY c.to_seq DESC LIMIT 1;
    last_to := coalesce(last_to, 0);
    FOR r IN SELECT e.seq, e.invocation_id FROM adk.live_events e
              WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
                AND NOT coalesce(e.event_data -> 'actions' ? 'compaction', false)
              ORDER BY e.seq DESC
    LOOP
        last_seq := coalesce(last_seq, r.seq);
        IF NOT r.invocation_id = ANY (ids) THEN
            IF r.seq > last_to THEN
                new_count := new_count + 1;
            ELSIF new_count < every OR cardinality(ids) >= new_count + overlap THEN
                EXIT;
            END IF;
            ids := ids || r.invocation_id;
        END IF;
        lo := r.seq;
    END LOOP;
    IF new_count >= every AND every > 0 THEN
        from_seq := lo;
        to_seq := last_seq;
    END IF;
END
$$;

-- Tail retention: everything but the last "keep" events (compaction
-- events do not count); NULL when there is nothing else.
-- (These helpers are PL/pgSQL, not SQL: Citus plans their statements.)
CREATE FUNCTION adk._tail_retention_end(p_app text, p_user text, p_session text, keep integer)
RETURNS bigint
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN (SELECT e.seq FROM adk.live_events e
             WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
               AND NOT coalesce(e.event_data -> 'actions' ? 'compaction', false)
             ORDER BY e.seq DESC OFFSET keep LIMIT 1);
END
$$;

-- The newest rolling summary: the widest one that starts at the session's
-- first event.  Every event up to its to_seq is in it.
CREATE FUNCTION adk._root_compaction(p_app text, p_user text, p_session text,
                                     OUT seq bigint, OUT to_seq bigint)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
BEGIN
    SELECT c.seq, c.to_seq INTO seq, to_seq FROM adk.compactions c
     WHERE c.app_name = p_app AND c.user_id = p_user AND c.session_id = p_session AND c.from_seq = 1
       AND NOT EXISTS (SELECT 1 FROM adk.sessions r
                        WHERE r.app_name = p_app AND r.user_id = p_user AND r.id = p_session
                          AND r.rewound @> c.seq)
     ORDER BY c.to_seq DESC LIMIT 1;
END
$$;

-- The function calls and responses of events lo..hi, one row per part.
-- placeholder: a response that only says the call waits for confirmation
-- (its event's actions.requested_tool_confirmations names the call), which
-- leaves the call open.
CREATE FUNCTION adk._compaction_parts(p_app text, p_user text, p_session text, lo bigint, hi bigint)
RETURNS TABLE (seq bigint, author text, is_call boolean, call_id text, long_running boolean,
               placeholder boolean)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT e.seq, e.event_data ->> 'author', p ? 'function_call',
           coalesce(p #>> '{function_call,id}', p #>> '{function_response,id}'),
           p ? 'function_call' AND (coalesce(e.event_data -> 'long_running_tool_ids', '[]') ? (p #>> '{function_call,id}')
                                    OR p #>> '{function_call,name}' = 'adk_request_confirmation'),
           p ? 'function_response'
             AND jsonb_typeof(e.event_data #> '{actions,requested_tool_confirmations}') = 'object'
             AND (e.event_data #> '{actions,requested_tool_confirmations}') ? (p #>> '{function_response,id}')
      FROM adk.live_events e,
           LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(e.event_data #> '{content,parts}') = 'array'
                                             THEN e.event_data #> '{content,parts}' ELSE '[]' END) p
     WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
       AND e.seq BETWEEN lo AND hi
       AND (p ? 'function_call' OR p ? 'function_response');
END
$$;

-- Read events p_from..p_to for a summary, the range narrowed so that it
-- never splits a function call from its response and never covers a call
-- without one (a long-running call or a confirmation is answered only by
-- the user's response; a call waiting for confirmation has only ADK's
-- placeholder response, which answers nothing).  Rolling (tail retention): the range starts at the
-- first event, and the newest rolling summary stands in for the events it
-- covers.  NULL when nothing is left to summarize.  The result is what
-- adk._compaction_check compares against later: seen_seq, read_from and a
-- digest of the ids read.
CREATE FUNCTION adk._compaction_read(p_app text, p_user text, p_session text,
                                     p_from bigint, p_to bigint, p_rolling boolean)
RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    seen bigint;
    f bigint := greatest(coalesce(p_from, 1), 1);
    t bigint;
    lo bigint;
    root_to bigint := 0;
    root_seq bigint;
    prior text;
    x bigint;
    parts record;
    result jsonb;
BEGIN
    SELECT s.last_seq INTO seen FROM adk.sessions s
     WHERE s.app_name = p_app AND s.user_id = p_user AND s.id = p_session;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'session "%" does not exist for app "%" and user "%"', p_session, p_app, p_user
            USING ERRCODE = '42704';
    END IF;
    t := least(coalesce(p_to, seen), seen);
    IF p_rolling THEN
        f := 1;
        SELECT r.seq, r.to_seq INTO root_seq, root_to FROM adk._root_compaction(p_app, p_user, p_session) r;
        root_to := coalesce(root_to, 0);
        IF root_seq IS NOT NULL THEN
            SELECT string_agg(p ->> 'text', E'\n') INTO prior
              FROM adk.events e,
                   LATERAL jsonb_array_elements(e.event_data #> '{actions,compaction,compacted_content,parts}') p
             WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
               AND e.seq = root_seq AND p ? 'text';
        END IF;
    END IF;
    lo := greatest(f, root_to + 1);

    LOOP
        EXIT WHEN t < lo;
        -- the first call in the range not answered inside it: stop before it
        SELECT min(c.seq) INTO x FROM adk._compaction_parts(p_app, p_user, p_session, lo, t) c
         WHERE c.is_call AND NOT EXISTS (
               SELECT 1 FROM adk._compaction_parts(p_app, p_user, p_session, c.seq + 1, t) r
                WHERE NOT r.is_call AND r.call_id = c.call_id AND NOT r.placeholder
                  AND (NOT c.long_running OR r.author = 'user'));
        IF x IS NOT NULL THEN
            t := x - 1;
            CONTINUE;
        END IF;
        -- the last response in the range whose call is before it: start after it
        SELECT max(r.seq) INTO x FROM adk._compaction_parts(p_app, p_user, p_session, lo, t) r
         WHERE NOT r.is_call AND NOT EXISTS (
               SELECT 1 FROM adk._compaction_parts(p_app, p_user, p_session, lo, r.seq) c
                WHERE c.is_call AND c.call_id = r.call_id AND c.seq < r.seq);
        IF x IS NOT NULL AND NOT p_rolling THEN
            f := x + 1;
            lo := greatest(lo, f);
            CONTINUE;
        END IF;
        EXIT;
    END LOOP;
    IF t < lo THEN
        RETURN NULL;
    END IF;

    SELECT jsonb_build_object(
               'from_seq', f, 'to_seq', t, 'read_from', lo, 'seen_seq', seen,
               'digest', md5(string_agg(e.id, ',' ORDER BY e.seq)),
               'prior_summary', prior,
               'transcript', string_agg(adk._transcript_line(e.event_data), '' ORDER BY e.seq))
      INTO result
      FROM adk.live_events e
     WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
       AND e.seq BETWEEN lo AND t;
    SELECT result || jsonb_build_object('start_timestamp', (e.event_data -> 'timestamp'))
      INTO result FROM adk.events e
     WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session AND e.seq = f;
    SELECT result || jsonb_build_object('end_timestamp', (e.event_data -> 'timestamp'))
      INTO result FROM adk.events e
     WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session AND e.seq = t;
    RETURN result;
END
$$;

-- One event as lines of the summarizer's transcript ("" when it says
-- nothing: compaction events, partials, thoughts).
CREATE FUNCTION adk._transcript_line(ev jsonb) RETURNS text
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(string_agg(
               CASE WHEN p ? 'text' THEN format(E'%s: %s\n', ev ->> 'author', p ->> 'text')
                    WHEN p ? 'function_call' THEN format(E'%s called tool `%s` with parameters: %s\n', ev ->> 'author',
                                                        p #>> '{function_call,name}', coalesce(p #> '{function_call,args}', '{}'))
                    ELSE format(E'%s: tool `%s` returned: %s\n', ev ->> 'author',
                                p #>> '{function_response,name}', coalesce(p #> '{function_response,response}', '{}'))
               END, ''), '')
      FROM jsonb_array_elements(CASE WHEN jsonb_typeof(ev #> '{content,parts}') = 'array'
                                     THEN ev #> '{content,parts}' ELSE '[]' END) p
     WHERE (p ? 'text' AND NOT coalesce((p ->> 'thought')::boolean, false))
        OR p ? 'function_call' OR p ? 'function_response'
$$;

-- ---------------------------------------------------------------------
-- Appending: the check under the session row lock, and the record.
-- ---------------------------------------------------------------------

-- Takes the session row lock (held until commit) and says why the summary
-- of "plan" (adk._compaction_read's result) may not be appended, or NULL.
CREATE FUNCTION adk._compaction_check(p_app text, p_user text, p_session text, plan jsonb)
RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    f bigint := (plan ->> 'from_seq')::bigint;
    t bigint := (plan ->> 'to_seq')::bigint;
    lo bigint := (plan ->> 'read_from')::bigint;
    seen bigint := (plan ->> 'seen_seq')::bigint;
    d text;
    c record;
    last bigint;
    again jsonb;
BEGIN
    IF f IS NULL OR t IS NULL OR lo IS NULL OR seen IS NULL OR plan ->> 'digest' IS NULL
       OR f < 1 OR f > t OR lo < f OR lo > t OR t > seen OR (lo > f AND f <> 1) THEN
        RAISE EXCEPTION 'invalid compaction plan' USING ERRCODE = '22023',
            HINT = 'Pass the result of adk_compaction_read() unchanged.';
    END IF;
    SELECT s.last_seq INTO last FROM adk.sessions s
      WHERE s.app_name = p_app AND s.user_id = p_user AND s.id = p_session FOR UPDATE;
    IF NOT FOUND THEN
        RETURN 'the session no longer exists';
    END IF;
    IF seen > last THEN
        RAISE EXCEPTION 'invalid compaction plan' USING ERRCODE = '22023',
            DETAIL = format('The plan has seen seq %s; the session ends at seq %s.', seen, last),
            HINT = 'Pass the result of adk_compaction_read() unchanged.';
    END IF;
    SELECT md5(string_agg(e.id, ',' ORDER BY e.seq)) INTO d FROM adk.live_events e
     WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
       AND e.seq BETWEEN lo AND t;
    IF d IS DISTINCT FROM plan ->> 'digest' THEN
        RETURN format('the events of seq %s..%s changed after they were summarized', lo, t);
    END IF;
    SELECT x.seq, x.from_seq, x.to_seq INTO c FROM adk.compactions x
     WHERE x.app_name = p_app AND x.user_id = p_user AND x.session_id = p_session
       AND x.seq > seen AND x.from_seq <= t AND x.to_seq >= f
     ORDER BY x.seq LIMIT 1;
    IF FOUND THEN
        RETURN format('seq %s..%s overlaps the compaction at seq %s (seq %s..%s), appended after the summarizer read its events',
                      f, t, c.seq, c.from_seq, c.to_seq);
    END IF;
    -- The whole range, not only the events read: the digest is no secret
    -- (anyone who may read the events can compute it), so the plan must be
    -- what adk._compaction_read gives for its range now -- the same seq
    -- f..t, never splitting a call from its response, and seq f..lo-1
    -- covered by the compaction a rolling summary starts from.
    IF lo = f THEN
        again := adk._compaction_read(p_app, p_user, p_session, f, t, false);
    END IF;
    IF f = 1 AND (again IS NULL OR (again ->> 'from_seq')::bigint <> f
                  OR (again ->> 'read_from')::bigint <> lo) THEN
        again := adk._compaction_read(p_app, p_user, p_session, NULL, t, true);
    END IF;
    IF again IS NULL OR (again ->> 'from_seq')::bigint <> f OR (again ->> 'to_seq')::bigint <> t
       OR (again ->> 'read_from')::bigint <> lo OR again ->> 'digest' <> plan ->> 'digest' THEN
        RETURN format('seq %s..%s (events read from seq %s) is not a range adk_compaction_read() gives',
                      f, t, lo);
    END IF;
    RETURN NULL;
END
$$;

-- The row of a compaction event at p_seq covering f..t: covered_to is
-- the end of the contiguously covered prefix of the session after it.
-- The event's row comes first from the append path (kind 'external');
-- our compactor then marks it as its own (adk._compaction_record).
CREATE FUNCTION adk._compaction_insert(p_app text, p_user text, p_session text, p_seq bigint,
                                       p_event_id text, f bigint, t bigint, p_seen bigint,
                                       p_kind text, p_invocation text)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    covered bigint;
    further bigint;
BEGIN
    SELECT c.covered_to INTO covered FROM adk.compactions c
     WHERE c.app_name OPERATOR(pg_catalog.=) p_app AND c.user_id OPERATOR(pg_catalog.=) p_user
       AND c.session_id OPERATOR(pg_catalog.=) p_session
       AND c.seq OPERATOR(pg_catalog.<) p_seq
     ORDER BY c.seq DESC LIMIT 1;
    covered := coalesce(covered, 0);
    IF f OPERATOR(pg_catalog.<=) (covered OPERATOR(pg_catalog.+) 1) THEN
        covered := GREATEST(covered, t);
        -- summaries appended earlier may now join the covered prefix
        LOOP
            SELECT pg_catalog.max(c.to_seq) INTO further FROM adk.compactions c
             WHERE c.app_name OPERATOR(pg_catalog.=) p_app AND c.user_id OPERATOR(pg_catalog.=) p_user
               AND c.session_id OPERATOR(pg_catalog.=) p_session
               AND c.to_seq OPERATOR(pg_catalog.>) covered
               AND c.from_seq OPERATOR(pg_catalog.<=) (covered OPERATOR(pg_catalog.+) 1);
            EXIT WHEN further IS NULL;
            covered := further;
        END LOOP;
    END IF;
    INSERT INTO adk.compactions AS c (app_name, user_id, session_id, seq, event_id, kind, from_seq, to_seq,
                                      seen_seq, covered_to, invocation_id)
    VALUES (p_app, p_user, p_session, p_seq, p_event_id, p_kind, f, t, p_seen, covered, p_invocation)
    ON CONFLICT (app_name, user_id, session_id, seq) DO UPDATE
       SET kind = EXCLUDED.kind, seen_seq = EXCLUDED.seen_seq, invocation_id = EXCLUDED.invocation_id;
END
$$;

-- Records the compaction event at "seq" (appended under the lock that
-- adk._compaction_check took) as ours: its kind, what the summarizer saw.
CREATE FUNCTION adk._compaction_record(p_app text, p_user text, p_session text, p_seq bigint,
                                       p_event_id text, plan jsonb, p_kind text, p_invocation text)
RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    SELECT adk._compaction_insert(p_app, p_user, p_session, p_seq, p_event_id,
                                  (plan ->> 'from_seq')::bigint, (plan ->> 'to_seq')::bigint,
                                  (plan ->> 'seen_seq')::bigint, p_kind, p_invocation)
$$;

-- The append path (src/store/event_trigger.c): an event carrying ADK's
-- actions.compaction, from any writer.  Its range is found from its
-- timestamps among the session's earlier events: epoch milliseconds, as
-- ADK-JS and we write them, or seconds, as ADK Python does (a value below
-- 1e11 -- a time before 1973 in milliseconds -- is seconds), truncated to
-- whole milliseconds as event times are stored.
CREATE FUNCTION adk._compaction_note(p_app text, p_user text, p_session text, p_new jsonb)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    c jsonb := p_new #> '{event_data,actions,compaction}';
    d jsonb := p_new -> 'event_data';
    this_seq bigint := (p_new ->> 'seq')::bigint;
    lo numeric;
    hi numeric;
    f bigint;
    t bigint;
BEGIN
    IF c IS NULL AND d -> 'is_compacted' OPERATOR(pg_catalog.=) 'true'::jsonb
       AND d -> 'is_scratchpad' IS DISTINCT FROM 'true'::jsonb THEN
        -- ADK-JS 2.0's compacted event: the summary is its content
        c := pg_catalog.jsonb_build_object('start_timestamp', d -> 'start_time',
                                           'end_timestamp', d -> 'end_time',
                                           'compacted_content', d -> 'content');
    END IF;
    IF pg_catalog.jsonb_typeof(c) IS DISTINCT FROM 'object'
       -- an event a caller appended where it may not speak for the
       -- session (85_tenancy.sql) is no compaction record
       OR p_new #> '{event_data,custom_metadata,adk_appended_by}' IS NOT NULL
       OR pg_catalog.jsonb_typeof(c -> 'start_timestamp') IS DISTINCT FROM 'number'
       OR pg_catalog.jsonb_typeof(c -> 'end_timestamp') IS DISTINCT FROM 'number'
       OR pg_catalog.jsonb_typeof(c #> '{compacted_content,parts}') IS DISTINCT FROM 'array'
       OR pg_catalog.jsonb_array_length(c #> '{compacted_content,parts}') OPERATOR(pg_catalog.=) 0 THEN
        RETURN;
    END IF;
    lo := (c ->> 'start_timestamp')::numeric;
    hi := (c ->> 'end_timestamp')::numeric;
    IF lo OPERATOR(pg_catalog.<) 1e11 THEN lo := lo OPERATOR(pg_catalog.*) 1000; END IF;
    IF hi OPERATOR(pg_catalog.<) 1e11 THEN hi := hi OPERATOR(pg_catalog.*) 1000; END IF;
    lo := pg_catalog.floor(lo);
    hi := pg_catalog.floor(hi);
    IF lo OPERATOR(pg_catalog.>) hi OR lo OPERATOR(pg_catalog.<) 0 OR hi OPERATOR(pg_catalog.>) 253402300799999 THEN
        RETURN;
    END IF;
    SELECT e.seq INTO f FROM adk.events e
     WHERE e.app_name OPERATOR(pg_catalog.=) p_app AND e.user_id OPERATOR(pg_catalog.=) p_user
       AND e.session_id OPERATOR(pg_catalog.=) p_session AND e.seq OPERATOR(pg_catalog.<) this_seq
       AND e."timestamp" OPERATOR(pg_catalog.>=) pg_catalog.to_timestamp((lo OPERATOR(pg_catalog./) 1000)::double precision)
     ORDER BY e.seq LIMIT 1;
    SELECT e.seq INTO t FROM adk.events e
     WHERE e.app_name OPERATOR(pg_catalog.=) p_app AND e.user_id OPERATOR(pg_catalog.=) p_user
       AND e.session_id OPERATOR(pg_catalog.=) p_session AND e.seq OPERATOR(pg_catalog.<) this_seq
       AND e."timestamp" OPERATOR(pg_catalog.<=) pg_catalog.to_timestamp((hi OPERATOR(pg_catalog./) 1000)::double precision)
     ORDER BY e.seq DESC LIMIT 1;
    IF f IS NULL OR t IS NULL OR f OPERATOR(pg_catalog.>) t THEN
        RETURN;
    END IF;
    PERFORM adk._compaction_insert(p_app, p_user, p_session, this_seq, p_new ->> 'id', f, t,
                                   this_seq OPERATOR(pg_catalog.-) 1, 'external', p_new ->> 'invocation_id');
END
$$;

-- ---------------------------------------------------------------------
-- Prompts: the history a model sees, summaries in place of the events
-- they cover, each at the position of the first event it covers.  Reads
-- the summaries that reach past the newest rolling summary and the events
-- after the covered prefix, by index range scans, not the whole history.
-- Rewound events (adk.live_events) and the summaries a rewind rewound are
-- left out; so are they from what a summary is made of.
-- ---------------------------------------------------------------------

CREATE FUNCTION adk._prompt_events(p_app text, p_user text, p_session text)
RETURNS TABLE (event_data jsonb)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    root_to bigint;
    base bigint;
    rw int8multirange;
BEGIN
    SELECT s.rewound INTO rw FROM adk.sessions s
     WHERE s.app_name = p_app AND s.user_id = p_user AND s.id = p_session;
    SELECT r.to_seq INTO root_to FROM adk._root_compaction(p_app, p_user, p_session) r;
    SELECT c.covered_to INTO base FROM adk.compactions c
     WHERE c.app_name = p_app AND c.user_id = p_user AND c.session_id = p_session
       AND NOT coalesce(rw @> c.seq, false)
     ORDER BY c.seq DESC LIMIT 1;
    IF base IS NULL THEN
        RETURN QUERY SELECT e.event_data FROM adk.live_events e
                      WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
                      ORDER BY e.seq;
        RETURN;
    END IF;
    RETURN QUERY
    WITH s AS (
        SELECT c.seq, c.from_seq, c.to_seq FROM adk.compactions c
         WHERE c.app_name = p_app AND c.user_id = p_user AND c.session_id = p_session
           AND c.to_seq >= coalesce(root_to, 0)
           AND NOT coalesce(rw @> c.seq, false)
    ), kept AS (
        SELECT s.* FROM s
         WHERE NOT EXISTS (SELECT 1 FROM s o
                            WHERE o.from_seq <= s.from_seq AND o.to_seq >= s.to_seq
                              AND (o.from_seq < s.from_seq OR o.to_seq > s.to_seq OR o.seq > s.seq))
    )
    SELECT x.event_data FROM (
        -- one index lookup per summary (a scalar subquery: never a join
        -- that could scan the session's events)
        SELECT k.from_seq AS pos, 0 AS ord, k.seq AS tie,
               (SELECT jsonb_build_object('id', e.id, 'invocation_id', e.invocation_id, 'author', 'user',
                                          'timestamp', e.event_data -> 'timestamp',
                                          'content', coalesce(e.event_data #> '{actions,compaction,compacted_content}',
                                                              e.event_data -> 'content'))
                  FROM adk.events e
                 WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
                   AND e.seq = k.seq) AS event_data
          FROM kept k
        UNION ALL
        SELECT e.seq, 1, e.seq, e.event_data FROM adk.live_events e
         WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
           AND e.seq > base
           AND NOT EXISTS (SELECT 1 FROM kept k WHERE e.seq BETWEEN k.from_seq AND k.to_seq)
           -- a compaction event with content of its own (ADK-JS's) is its summary
           AND NOT EXISTS (SELECT 1 FROM adk.compactions c
                            WHERE c.app_name = p_app AND c.user_id = p_user
                              AND c.session_id = p_session AND c.seq = e.seq)
    ) x
    ORDER BY x.pos, x.ord, x.tie;
END
$$;

-- ---------------------------------------------------------------------
-- The API.
-- ---------------------------------------------------------------------

CREATE FUNCTION adk_compaction_read(app_name text, user_id text, session_id text,
                                    from_seq bigint DEFAULT NULL, to_seq bigint DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'adk_compaction_read_sql' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_compaction_read(text, text, text, bigint, bigint) IS
    'Read a session''s events from_seq..to_seq (default: all) for a summary, without locking: the range narrowed so no function call is split from its response or left unanswered, the transcript, and what adk_compaction_append checks; NULL when nothing can be summarized.';

CREATE FUNCTION adk_compaction_append(app_name text, user_id text, session_id text,
                                      plan jsonb, summary text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'adk_compaction_append_sql' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_compaction_append(text, text, text, jsonb, text) IS
    'Append a compaction event with this summary for the range of plan (from adk_compaction_read) under the session row lock; returns its seq, or NULL (with a warning) when the events changed or a compaction appended since the read covers part of the range.';

CREATE FUNCTION adk_compact(app_name text, user_id text, session_id text,
                            from_seq bigint DEFAULT NULL, to_seq bigint DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'adk_compact' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_compact(text, text, text, bigint, bigint) IS
    'Summarize a session''s events from_seq..to_seq with the app''s summarizer and append the compaction (as adk_compaction_read + adk_compaction_append); returns its seq or NULL.  Without a range: a rolling summary of the whole history.';

CREATE FUNCTION adk_prompt(app_name text, user_id text, session_id text, agent text DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'adk_prompt' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_prompt(text, text, text, text) IS
    'The exact request body (provider wire format, secrets redacted) the next model call for this session would send: of the agent named, else of the agent the next message would go to.';

-- The sliding window's range as ARRAY[from_seq, to_seq], NULL when it is
-- not time (src/runner/compaction.c).
CREATE FUNCTION adk._sliding_window_bounds(p_app text, p_user text, p_session text,
                                           p_every integer, p_overlap integer)
RETURNS bigint[]
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r record;
BEGIN
    SELECT w.from_seq, w.to_seq INTO r
      FROM adk._sliding_window_range(p_app, p_user, p_session, p_every, p_overlap) w;
    IF r.from_seq IS NULL OR r.to_seq IS NULL THEN
        RETURN NULL;
    END IF;
    RETURN ARRAY[r.from_seq, r.to_seq];
END
$$;

-- The model that summarizes app p_app's sessions: its compaction's
-- summarizer_model, or its root agent's model; NULL for no such app
-- (adk_compact, src/runner/compaction_sql.c).
CREATE FUNCTION adk._summarizer_model(p_app text)
RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN (SELECT coalesce(a.compaction ->> 'summarizer_model', adk._agent_model(a.root_agent))
              FROM adk.apps a
             WHERE a.name = p_app);
END
$$;

-- Why a compaction of invocation p_invocation failed or was refused, kept
-- on the invocation (the run goes on).
CREATE FUNCTION adk._compaction_error_set(p_invocation text, p_error text)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE adk.invocations i
       SET compaction_error = p_error
     WHERE i.invocation_id = p_invocation;
END
$$;
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
CREATE FUNCTION adk._claim_job(worker_pid integer)
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
COMMENT ON FUNCTION adk._claim_job(integer) IS
    'The job workers'' claim: mark the next claimable job running and return it (no row: nothing to claim).';

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

-- The job workers' and the launcher's own statements (run as the owner of
-- schema adk, through adk_owner_spi_begin in C): what ends a job, what a
-- lost worker leaves, how many jobs a worker could claim now.  Their
-- parameters are named apart from the columns of adk.jobs and
-- adk.invocations: in an SQL function a column of the same name wins.

-- A job ends as its invocation did.  A paused one ('waiting') has not
-- finished: its finished_at is set when the adk_run that answers it ends
-- the invocation.  Returns the job's status (NULL: no such job).  In
-- PL/pgSQL, whose plans a worker keeps, where an SQL function's would be
-- made again at every job's end.
CREATE FUNCTION adk._job_finished(job_id bigint, job_invocation text) RETURNS text
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
-- ---------------------------------------------------------------------
-- Artifacts (docs/artifacts.md): ADK's ArtifactService as a table.
--
-- Versioned blobs per (app, user, session, filename): versions are 0, 1,
-- 2, ... per filename.  A filename starting with "user:" is scoped to the
-- user and shared by all the user's sessions (stored with session_id '',
-- which no session id can be).  The data is bytea, TOASTed with lz4 where
-- the server has it.  Saving needs the named session to exist (42704
-- otherwise), as every session API function does; loading and listing an
-- unknown session simply finds nothing (NULL, no rows).  Deleting a
-- session deletes its session-scoped artifacts; user: ones stay.
-- Writes run as the owner of schema adk; adk_user reads the table, its
-- own rows only where the app's tenancy says so (row-level security and
-- the tenancy checks: 85_tenancy.sql).
-- ---------------------------------------------------------------------

CREATE TABLE adk.artifacts (
    app_name      text NOT NULL,
    user_id       text NOT NULL,
    session_id    text NOT NULL,	-- '' for user: artifacts
    filename      text NOT NULL,
    version       integer NOT NULL CHECK (version >= 0),
    data          bytea NOT NULL,
    mime_type     text NOT NULL,
    size          bigint NOT NULL,
    sha256        bytea NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    invocation_id text,
    -- a fork's reference (87_lifecycle.sql): the bytes are those of this
    -- filename and version in that session of the same app and user
    source_session_id text,
    CONSTRAINT artifacts_pkey PRIMARY KEY (app_name, user_id, session_id, filename, version),
    CONSTRAINT artifacts_scope CHECK ((session_id = '') = starts_with(filename, 'user:'))
);
COMMENT ON TABLE adk.artifacts IS 'ADK artifacts: versioned blobs per (app, user, session, filename); user: filenames are per user (session_id '''')';
COMMENT ON COLUMN adk.artifacts.invocation_id IS 'the invocation that saved this version (NULL when saved outside a run)';
COMMENT ON COLUMN adk.artifacts.source_session_id IS 'a fork''s reference: the session whose row of this filename and version holds the bytes (data is then empty); NULL: the row holds its bytes';

-- lz4 when the server was built with it (Debian's is); pglz otherwise.
DO $lz4$
BEGIN
    ALTER TABLE adk.artifacts ALTER COLUMN data SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    NULL;
END
$lz4$;

-- C helpers: adk.max_artifact_size in bytes; the running invocation when
-- the save is for its session (NULL otherwise); noting a saved version
-- for the run's actions.artifact_delta (src/store/artifacts.c).
CREATE FUNCTION adk._max_artifact_size() RETURNS bigint
    AS 'MODULE_PATHNAME', 'adk_max_artifact_size_sql' LANGUAGE C STABLE;
CREATE FUNCTION adk._artifact_run_invocation(app_name text, user_id text, session_id text)
RETURNS text
    AS 'MODULE_PATHNAME', 'adk_artifact_run_invocation_sql' LANGUAGE C STABLE;
CREATE FUNCTION adk._artifact_note(app_name text, user_id text, session_id text,
                                   filename text, version integer) RETURNS void
    AS 'MODULE_PATHNAME', 'adk_artifact_note_sql' LANGUAGE C VOLATILE;
CREATE FUNCTION adk._artifact_run_session() RETURNS text[]
    AS 'MODULE_PATHNAME', 'adk_artifact_run_session_sql' LANGUAGE C STABLE;

-- The session_id an artifact is stored under.
CREATE FUNCTION adk._artifact_scope(session_id text, filename text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE WHEN pg_catalog.starts_with(filename, 'user:') THEN '' ELSE session_id END
$$;

CREATE FUNCTION adk._check_filename(filename text) RETURNS void
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF filename IS NULL THEN
        RAISE EXCEPTION 'artifact filename must not be null' USING ERRCODE = '22004';
    END IF;
    IF filename OPERATOR(pg_catalog.=) '' OR filename OPERATOR(pg_catalog.=) 'user:' THEN
        RAISE EXCEPTION 'artifact filename must not be empty' USING ERRCODE = '22023';
    END IF;
    IF pg_catalog.length(filename) OPERATOR(pg_catalog.>) 1024 THEN
        RAISE EXCEPTION 'artifact filename is too long' USING ERRCODE = '22023',
            DETAIL = 'An artifact filename has at most 1024 characters.';
    END IF;
END
$$;

CREATE FUNCTION adk_save_artifact(app_name text, user_id text, session_id text,
                                  filename text, data bytea,
                                  mime_type text DEFAULT 'application/octet-stream')
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    scope text;
    v integer;
    inv text;
    attempt integer := 0;
    max_size bigint := adk._max_artifact_size();
BEGIN
    PERFORM adk._check_id('app name', app_name);
    PERFORM adk._check_id('user id', user_id);
    PERFORM adk._check_id('session id', session_id);
    PERFORM adk._check_filename(filename);
    IF data IS NULL THEN
        RAISE EXCEPTION 'artifact data must not be null' USING ERRCODE = '22004';
    END IF;
    mime_type := coalesce(mime_type, 'application/octet-stream');
    IF mime_type OPERATOR(pg_catalog.!~) '^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*(;.*)?$' THEN
        RAISE EXCEPTION 'invalid MIME type "%"', mime_type USING ERRCODE = '22023',
            HINT = 'Give a type/subtype such as image/png or text/plain.';
    END IF;
    IF pg_catalog.length(data) OPERATOR(pg_catalog.>) max_size THEN
        RAISE EXCEPTION 'artifact "%" is too large', filename USING ERRCODE = '54000',
            DETAIL = pg_catalog.format('It has %s bytes; adk.max_artifact_size allows %s.',
                                       pg_catalog.length(data), max_size);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM adk.sessions s
                    WHERE s.app_name OPERATOR(pg_catalog.=) $1
                      AND s.user_id OPERATOR(pg_catalog.=) $2
                      AND s.id OPERATOR(pg_catalog.=) $3) THEN
        PERFORM adk._session_not_found(app_name, user_id, session_id);
    END IF;

    scope := adk._artifact_scope(session_id, filename);
    inv := adk._artifact_run_invocation(app_name, user_id, session_id);
    -- the next version; two concurrent saves of one filename: the second
    -- waits for the first, then takes the version after it
    LOOP
        BEGIN
            INSERT INTO adk.artifacts AS a (app_name, user_id, session_id, filename, version,
                                            data, mime_type, size, sha256, invocation_id)
            SELECT $1, $2, scope, $4,
                   coalesce(pg_catalog.max(x.version) OPERATOR(pg_catalog.+) 1, 0),
                   $5, $6, pg_catalog.length($5), pg_catalog.sha256($5), inv
              FROM adk.artifacts x
             WHERE x.app_name OPERATOR(pg_catalog.=) $1 AND x.user_id OPERATOR(pg_catalog.=) $2
               AND x.session_id OPERATOR(pg_catalog.=) scope AND x.filename OPERATOR(pg_catalog.=) $4
            RETURNING a.version INTO v;
            EXIT;
        EXCEPTION WHEN unique_violation THEN
            attempt := attempt OPERATOR(pg_catalog.+) 1;
            IF attempt OPERATOR(pg_catalog.>=) 3 THEN
                RAISE EXCEPTION 'could not save artifact "%": a concurrent save took its version', filename
                    USING ERRCODE = '40001', HINT = 'Retry the transaction.';
            END IF;
        END;
    END LOOP;
    PERFORM adk._artifact_note(app_name, user_id, session_id, filename, v);
    RETURN v;
END
$$;
COMMENT ON FUNCTION adk_save_artifact(text, text, text, text, bytea, text) IS
    'Save a new version of an artifact (0, 1, ...; user: filenames are shared by the user''s sessions) and return it. Inside a run, for the run''s session, the version goes into the event''s actions.artifact_delta.';

-- For SQL tools: save into the session of the run that called the tool.
CREATE FUNCTION adk_save_artifact(filename text, data bytea,
                                  mime_type text DEFAULT 'application/octet-stream')
RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    s text[] := adk._artifact_run_session();
BEGIN
    IF s IS NULL THEN
        RAISE EXCEPTION 'no run is calling a tool'
            USING ERRCODE = '55000',
                  HINT = 'adk_save_artifact(filename, data, mime_type) saves for the run that called the tool; outside a run name the session: adk_save_artifact(app_name, user_id, session_id, filename, data, mime_type).';
    END IF;
    RETURN @extschema@.adk_save_artifact(s[1], s[2], s[3], filename, data, mime_type);
END
$$;
COMMENT ON FUNCTION adk_save_artifact(text, bytea, text) IS
    'From a SQL tool: save an artifact in the session of the run calling the tool; recorded in the tool response event''s actions.artifact_delta.';

CREATE FUNCTION adk_load_artifact(app_name text, user_id text, session_id text,
                                  filename text, version integer DEFAULT NULL)
RETURNS bytea
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    result bytea;
BEGIN
    PERFORM adk._check_id('app name', app_name);
    PERFORM adk._check_id('user id', user_id);
    PERFORM adk._check_id('session id', session_id);
    PERFORM adk._tenancy_check(app_name, user_id);
    PERFORM adk._check_filename(filename);
    IF version OPERATOR(pg_catalog.<) 0 THEN
        RAISE EXCEPTION 'artifact version must not be negative' USING ERRCODE = '22023';
    END IF;
    SELECT coalesce(h.data, a.data) INTO result
      FROM adk.artifacts a
      LEFT JOIN adk.artifacts h      -- a fork's reference: the holder's bytes
        ON h.app_name OPERATOR(pg_catalog.=) a.app_name AND h.user_id OPERATOR(pg_catalog.=) a.user_id
       AND h.session_id OPERATOR(pg_catalog.=) a.source_session_id
       AND h.filename OPERATOR(pg_catalog.=) a.filename AND h.version OPERATOR(pg_catalog.=) a.version
     WHERE a.app_name OPERATOR(pg_catalog.=) $1 AND a.user_id OPERATOR(pg_catalog.=) $2
       AND a.session_id OPERATOR(pg_catalog.=) adk._artifact_scope($3, $4)
       AND a.filename OPERATOR(pg_catalog.=) $4
       AND ($5 IS NULL OR a.version OPERATOR(pg_catalog.=) $5)
     ORDER BY a.version DESC LIMIT 1;
    RETURN result;
END
$$;
COMMENT ON FUNCTION adk_load_artifact(text, text, text, text, integer) IS
    'An artifact''s data: the given version, or the latest when NULL; NULL when there is none.';

CREATE FUNCTION adk_list_artifacts(app_name text, user_id text, session_id text)
RETURNS SETOF text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM adk._check_id('app name', app_name);
    PERFORM adk._check_id('user id', user_id);
    PERFORM adk._check_id('session id', session_id);
    PERFORM adk._tenancy_check(app_name, user_id);
    RETURN QUERY
        SELECT DISTINCT a.filename FROM adk.artifacts a
         WHERE a.app_name OPERATOR(pg_catalog.=) $1 AND a.user_id OPERATOR(pg_catalog.=) $2
           AND (a.session_id OPERATOR(pg_catalog.=) $3 OR a.session_id OPERATOR(pg_catalog.=) '')
         ORDER BY 1;
END
$$;
COMMENT ON FUNCTION adk_list_artifacts(text, text, text) IS
    'The artifact filenames of a session and its user''s user: artifacts, sorted.';

CREATE FUNCTION adk_list_artifact_versions(app_name text, user_id text, session_id text,
                                           filename text)
RETURNS SETOF integer
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM adk._check_id('app name', app_name);
    PERFORM adk._check_id('user id', user_id);
    PERFORM adk._check_id('session id', session_id);
    PERFORM adk._tenancy_check(app_name, user_id);
    PERFORM adk._check_filename(filename);
    RETURN QUERY
        SELECT a.version FROM adk.artifacts a
         WHERE a.app_name OPERATOR(pg_catalog.=) $1 AND a.user_id OPERATOR(pg_catalog.=) $2
           AND a.session_id OPERATOR(pg_catalog.=) adk._artifact_scope($3, $4)
           AND a.filename OPERATOR(pg_catalog.=) $4
         ORDER BY 1;
END
$$;
COMMENT ON FUNCTION adk_list_artifact_versions(text, text, text, text) IS
    'The versions of an artifact, ascending (none when it does not exist).';

-- Before a session's artifacts (of one filename, or all when p_filename is
-- NULL) are deleted: the forks' references to them get their own copy of
-- the bytes -- the only time a fork's artifact is copied.
CREATE FUNCTION adk._artifact_unshare(p_app text, p_user text, p_session text, p_filename text)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE adk.artifacts r
       SET data = h.data, source_session_id = NULL
      FROM adk.artifacts h
     WHERE h.app_name = p_app AND h.user_id = p_user AND h.session_id = p_session
       AND (p_filename IS NULL OR h.filename = p_filename)
       AND r.app_name = h.app_name AND r.user_id = h.user_id AND r.source_session_id = h.session_id
       AND r.filename = h.filename AND r.version = h.version;
END
$$;

CREATE FUNCTION adk_delete_artifact(app_name text, user_id text, session_id text, filename text)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    n integer;
BEGIN
    PERFORM adk._check_id('app name', app_name);
    PERFORM adk._check_id('user id', user_id);
    PERFORM adk._check_id('session id', session_id);
    PERFORM adk._check_filename(filename);
    PERFORM adk._artifact_unshare($1, $2, adk._artifact_scope($3, $4), $4);
    DELETE FROM adk.artifacts a
     WHERE a.app_name OPERATOR(pg_catalog.=) $1 AND a.user_id OPERATOR(pg_catalog.=) $2
       AND a.session_id OPERATOR(pg_catalog.=) adk._artifact_scope($3, $4)
       AND a.filename OPERATOR(pg_catalog.=) $4;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
COMMENT ON FUNCTION adk_delete_artifact(text, text, text, text) IS
    'Delete every version of an artifact; returns how many versions were deleted (0 when none: like ADK, deleting a missing artifact is no error).';

-- A session's own artifacts go with it, whoever deletes it.
CREATE FUNCTION adk._sessions_delete_artifacts() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM adk._artifact_unshare(OLD.app_name, OLD.user_id, OLD.id, NULL);
    DELETE FROM adk.artifacts a
     WHERE a.app_name OPERATOR(pg_catalog.=) OLD.app_name
       AND a.user_id OPERATOR(pg_catalog.=) OLD.user_id
       AND a.session_id OPERATOR(pg_catalog.=) OLD.id;
    RETURN OLD;
END
$$;
CREATE TRIGGER adk_sessions_delete_artifacts
    AFTER DELETE ON adk.sessions
    FOR EACH ROW EXECUTE FUNCTION adk._sessions_delete_artifacts();

GRANT SELECT ON adk.artifacts TO adk_user;
SELECT pg_catalog.pg_extension_config_dump('adk.artifacts', '');
-- ---------------------------------------------------------------------
-- Backup and restore (docs/operations.md).
--
-- pg_dump dumps the rows of an extension's table only when the table is
-- marked with pg_extension_config_dump, and a sequence's position only
-- when the sequence is.  The session store and the definitions are
-- marked where they are created; the runs' history is marked here: the
-- invocations, the workflow run states, the job queue with its history,
-- and the model-call ledger (its bodies are stored redacted).  The
-- events trigger keeps restored events as they were (store/event_trigger.c).
-- ---------------------------------------------------------------------

SELECT pg_catalog.pg_extension_config_dump('adk.invocations', '');
SELECT pg_catalog.pg_extension_config_dump('adk.run_states', '');
SELECT pg_catalog.pg_extension_config_dump('adk.jobs', '');
SELECT pg_catalog.pg_extension_config_dump('adk.jobs_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('adk.model_calls', '');
SELECT pg_catalog.pg_extension_config_dump('adk.model_calls_id_seq', '');

-- A job runs as role_oid.  Role OIDs are not kept by a dump (another
-- cluster gives the same role another OID, or gives that OID to another
-- role), names are: a job's role is found by its role_name whenever a row
-- arrives.  A job whose role does not exist gets no role (OID 0), and its
-- worker fails it ("role ... no longer exists") instead of running it.
CREATE FUNCTION adk._jobs_role_by_name() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    NEW.role_oid := coalesce((SELECT r.oid FROM pg_catalog.pg_roles r
                               WHERE r.rolname OPERATOR(pg_catalog.=) NEW.role_name), 0);
    RETURN NEW;
END
$$;
CREATE TRIGGER adk_jobs_role_by_name
    BEFORE INSERT ON adk.jobs
    FOR EACH ROW EXECUTE FUNCTION adk._jobs_role_by_name();
-- ---------------------------------------------------------------------
-- Memory (docs/memory.md): ADK's MemoryService as a table.
--
-- Entries per (app, user): the text of one event, its author and time,
-- the session and event it came from.  The tsvector is computed by the
-- extension (a generated column) with the app's text search configuration
-- at the time the entry was added; adk_search_memory parses the query
-- with the app's current one.  An entry matches when it shares any word
-- (lexeme) of the query, as ADK's in-memory service matches any word;
-- ts_rank_cd orders them.  A search only ever reads the given user's
-- entries.  Memory outlives the session it came from (it is long-term
-- memory): deleting a session keeps its entries.
--
-- Semantic search (optional): an app with an embedding model embeds its
-- entries as they are added (real[], batches of 100) and each query; the
-- full-text ranking and the cosine ranking (entries at least
-- memory_min_similarity alike) are fused by reciprocal rank fusion,
-- 1 / (60 + rank) summed over both.  Embeddings are ranked in C
-- (adk._cosine) over the user's entries: pgvector is not packaged for
-- Debian 12's PostgreSQL.  A query whose embedding fails falls back to
-- full-text search alone, with a warning.  Inside a run the embeddings are
-- requested in one of its steps and consumed in a later one, so the run
-- waits for them without holding its process (src/runner/builtin_tools.c:
-- adk._memory_pending, then adk._memory_insert; adk._memory_search_vec);
-- called from SQL, these functions wait inside their own call.
-- ---------------------------------------------------------------------

-- App options: the text search configuration of its memory, and whether
-- every completed invocation is added to memory (off: ADK's Runner never
-- adds implicitly).
ALTER TABLE adk.apps
    ADD COLUMN memory_search_config regconfig NOT NULL DEFAULT 'pg_catalog.simple',
    ADD COLUMN add_to_memory boolean NOT NULL DEFAULT false,
    ADD COLUMN memory_embedding_model text REFERENCES adk.models (name),
    ADD COLUMN memory_min_similarity real NOT NULL DEFAULT 0.3
        CHECK (memory_min_similarity BETWEEN -1 AND 1);
COMMENT ON COLUMN adk.apps.memory_search_config IS 'text search configuration of the app''s memory (adk_search_memory), e.g. simple or english';
COMMENT ON COLUMN adk.apps.add_to_memory IS 'add every completed invocation''s events to memory (off by default, as in ADK)';
COMMENT ON COLUMN adk.apps.memory_embedding_model IS 'model that embeds memory entries and queries for semantic search (NULL: full-text search only)';
COMMENT ON COLUMN adk.apps.memory_min_similarity IS 'least cosine similarity for an entry to be a semantic match';

-- Embeddings (src/model/embed.c): one real[] per text, in order; the
-- cosine similarity of two (NULL when lengths differ or one is zero).
CREATE FUNCTION adk._embed(model text, texts text[]) RETURNS SETOF real[]
    AS 'MODULE_PATHNAME', 'adk_embed_sql' LANGUAGE C VOLATILE;
CREATE FUNCTION adk._cosine(a real[], b real[]) RETURNS real
    AS 'MODULE_PATHNAME', 'adk_cosine_sql' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE SEQUENCE adk.memory_id_seq;
CREATE TABLE adk.memory (
    id            bigint NOT NULL DEFAULT pg_catalog.nextval('adk.memory_id_seq') PRIMARY KEY,
    app_name      text NOT NULL,
    user_id       text NOT NULL,
    session_id    text NOT NULL,
    event_id      text NOT NULL,
    author        text,
    "timestamp"   timestamptz NOT NULL,
    text          text NOT NULL,
    search_config regconfig NOT NULL,
    search        tsvector NOT NULL GENERATED ALWAYS AS (pg_catalog.to_tsvector(search_config, pg_catalog.left(text, 100000))) STORED,
    embedding     real[],
    created_at    timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    CONSTRAINT memory_source_key UNIQUE (app_name, user_id, session_id, event_id)
);
ALTER SEQUENCE adk.memory_id_seq OWNED BY adk.memory.id;
CREATE INDEX memory_search_idx ON adk.memory USING gin (search);
COMMENT ON TABLE adk.memory IS 'ADK memory: the text of past events per (app, user), with its source session and event, full-text searchable';
COMMENT ON COLUMN adk.memory.search IS 'to_tsvector(search_config, text), kept by the extension (the first 100000 characters of the text are searchable)';

-- The app's search configuration ('simple' for an app not defined).
CREATE FUNCTION adk._memory_config(app_name text) RETURNS regconfig
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce((SELECT a.memory_search_config FROM adk.apps a
                                 WHERE a.name OPERATOR(pg_catalog.=) $1),
                               'pg_catalog.simple'::pg_catalog.regconfig)
$$;

-- The text of an event: its text parts (not thoughts), one per line;
-- NULL when it has none.
CREATE FUNCTION adk._event_text(event_data jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT pg_catalog.string_agg(p.part OPERATOR(pg_catalog.->>) 'text', E'\n' ORDER BY p.n)
      FROM pg_catalog.jsonb_array_elements(
               CASE WHEN pg_catalog.jsonb_typeof(event_data OPERATOR(pg_catalog.#>) '{content,parts}')
                         OPERATOR(pg_catalog.=) 'array'
                    THEN event_data OPERATOR(pg_catalog.#>) '{content,parts}' ELSE '[]' END)
           WITH ORDINALITY AS p(part, n)
     WHERE pg_catalog.jsonb_typeof(p.part OPERATOR(pg_catalog.->) 'text') OPERATOR(pg_catalog.=) 'string'
       AND p.part OPERATOR(pg_catalog.->>) 'text' OPERATOR(pg_catalog.<>) ''
       AND coalesce(p.part OPERATOR(pg_catalog.->) 'thought', 'false') OPERATOR(pg_catalog.<>) 'true'
$$;

-- The live events with text of a session (of one invocation when given)
-- that are not in memory yet, in order: what adding them adds.
CREATE FUNCTION adk._memory_pending(app_name text, user_id text, session_id text,
                                    invocation_id text DEFAULT NULL)
RETURNS TABLE (event_id text, text text)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT e.id, t.text
      FROM adk.live_events e
     CROSS JOIN LATERAL (SELECT adk._event_text(e.event_data) AS text) t
     WHERE e.app_name OPERATOR(pg_catalog.=) $1 AND e.user_id OPERATOR(pg_catalog.=) $2
       AND e.session_id OPERATOR(pg_catalog.=) $3
       AND ($4 IS NULL OR e.invocation_id OPERATOR(pg_catalog.=) $4)
       AND t.text IS NOT NULL
       AND coalesce(e.event_data OPERATOR(pg_catalog.->) 'partial', 'false') OPERATOR(pg_catalog.<>) 'true'
       AND NOT EXISTS (SELECT 1 FROM adk.memory m
                        WHERE m.app_name OPERATOR(pg_catalog.=) $1 AND m.user_id OPERATOR(pg_catalog.=) $2
                          AND m.session_id OPERATOR(pg_catalog.=) $3 AND m.event_id OPERATOR(pg_catalog.=) e.id)
     ORDER BY e.seq
$$;

-- Add those events of a session to memory, in the order of event_ids;
-- embeddings: NULL, or one row per event (a two-dimensional real[], row i
-- the embedding of event_ids[i]).  Entries added meanwhile are skipped;
-- returns how many were added.
CREATE FUNCTION adk._memory_insert(app_name text, user_id text, session_id text,
                                   event_ids text[], embeddings real[])
RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    cfg regconfig := adk._memory_config(app_name);
    n integer;
BEGIN
    IF embeddings IS NOT NULL AND (pg_catalog.array_ndims(embeddings) OPERATOR(pg_catalog.<>) 2
            OR pg_catalog.array_length(embeddings, 1) OPERATOR(pg_catalog.<>) pg_catalog.cardinality(event_ids)) THEN
        RAISE EXCEPTION 'memory embeddings must be one row per event' USING ERRCODE = '22023';
    END IF;
    INSERT INTO adk.memory AS m (app_name, user_id, session_id, event_id, author,
                                 "timestamp", text, search_config, embedding)
    SELECT e.app_name, e.user_id, e.session_id, e.id, e.event_data OPERATOR(pg_catalog.->>) 'author',
           e."timestamp", t.text, cfg,
           CASE WHEN embeddings IS NOT NULL
                THEN ARRAY(SELECT pg_catalog.unnest(embeddings[p.i:p.i])) END
      FROM pg_catalog.unnest(event_ids) WITH ORDINALITY AS p(event_id, i)
      JOIN adk.events e
        ON e.app_name OPERATOR(pg_catalog.=) $1 AND e.user_id OPERATOR(pg_catalog.=) $2
       AND e.session_id OPERATOR(pg_catalog.=) $3 AND e.id OPERATOR(pg_catalog.=) p.event_id
     CROSS JOIN LATERAL (SELECT adk._event_text(e.event_data) AS text) t
     WHERE t.text IS NOT NULL
     ORDER BY p.i
    ON CONFLICT ON CONSTRAINT memory_source_key DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

-- Add the events with text of a session (of one invocation when given)
-- that are not in memory yet, with their embeddings when the app has an
-- embedding model (100 texts a request, waited for here: a run starts
-- them in one step and adds the entries in a later one, builtin_tools.c);
-- returns how many were added.  An embedding failure raises: nothing is
-- added.
CREATE FUNCTION adk._memory_add(app_name text, user_id text, session_id text,
                                invocation_id text DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    model text := (SELECT a.memory_embedding_model FROM adk.apps a
                    WHERE a.name OPERATOR(pg_catalog.=) $1);
    ids text[];
    texts text[];
    embeddings real[];
    n integer;
    b integer;
BEGIN
    SELECT pg_catalog.array_agg(p.event_id ORDER BY p.n), pg_catalog.array_agg(p.text ORDER BY p.n)
      INTO ids, texts
      FROM adk._memory_pending($1, $2, $3, $4) WITH ORDINALITY AS p(event_id, text, n);
    n := coalesce(pg_catalog.cardinality(ids), 0);
    IF n OPERATOR(pg_catalog.=) 0 THEN
        RETURN 0;
    END IF;
    IF model IS NOT NULL THEN
        FOR b IN 0 .. (n OPERATOR(pg_catalog.-) 1) OPERATOR(pg_catalog./) 100 LOOP
            embeddings := embeddings OPERATOR(pg_catalog.||) ARRAY(
                SELECT v FROM adk._embed(model, texts[b OPERATOR(pg_catalog.*) 100 OPERATOR(pg_catalog.+) 1
                                                     : b OPERATOR(pg_catalog.*) 100 OPERATOR(pg_catalog.+) 100])
                       WITH ORDINALITY AS x(v, i) ORDER BY x.i);
        END LOOP;
    END IF;
    RETURN adk._memory_insert($1, $2, $3, ids, embeddings);
END
$$;

CREATE FUNCTION adk_add_session_to_memory(app_name text, user_id text, session_id text)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM adk._check_id('app name', app_name);
    PERFORM adk._check_id('user id', user_id);
    PERFORM adk._check_id('session id', session_id);
    IF NOT EXISTS (SELECT 1 FROM adk.sessions s
                    WHERE s.app_name OPERATOR(pg_catalog.=) $1
                      AND s.user_id OPERATOR(pg_catalog.=) $2
                      AND s.id OPERATOR(pg_catalog.=) $3) THEN
        PERFORM adk._session_not_found(app_name, user_id, session_id);
    END IF;
    RETURN adk._memory_add(app_name, user_id, session_id);
END
$$;
COMMENT ON FUNCTION adk_add_session_to_memory(text, text, text) IS
    'Add the events with text of a session to its user''s memory; idempotent: events already added are skipped. Returns how many entries were added.';

CREATE TYPE adk.memory_match AS (
    text text, author text, "timestamp" timestamptz,
    session_id text, event_id text, rank real);

-- The query's lexemes joined with OR, as the configuration parses them
-- (to_tsvector: a query of stop words only gives NULL, which matches
-- nothing, without plainto_tsquery's notice).  Each lexeme is quoted for
-- tsquery input, backslashes and quotes escaped, so it is read back as is.
CREATE FUNCTION adk._any_word_query(config regconfig, query text) RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT pg_catalog.string_agg(
               '''' OPERATOR(pg_catalog.||)
               pg_catalog.replace(pg_catalog.replace(l.lexeme, E'\\', E'\\\\'), '''', '''''')
               OPERATOR(pg_catalog.||) '''', ' | ')::pg_catalog.tsquery
      FROM pg_catalog.unnest(pg_catalog.tsvector_to_array(pg_catalog.to_tsvector(config, query))) AS l(lexeme)
$$;

-- The query's embedding (NULL: search without, with a warning when the
-- embedding failed); a run computes it in its steps instead
-- (builtin_tools.c) and calls adk._memory_search_vec itself.
CREATE FUNCTION adk._memory_search(app_name text, user_id text, query text, max_results integer)
RETURNS SETOF adk.memory_match
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    model text;
    qv real[];
    msg text;
BEGIN
    SELECT a.memory_embedding_model INTO model
      FROM adk.apps a WHERE a.name OPERATOR(pg_catalog.=) $1;
    IF model IS NOT NULL AND query OPERATOR(pg_catalog.~) '[[:alnum:]]' THEN
        BEGIN
            SELECT v INTO qv FROM adk._embed(model, ARRAY[query]) v;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT;
            RAISE WARNING 'memory search without embeddings: %', msg;
            qv := NULL;
        END;
    END IF;
    RETURN QUERY SELECT * FROM adk._memory_search_vec($1, $2, $3, $4, qv);
END
$$;

-- The search itself, given the query's embedding qv (NULL: full-text
-- only).  The query is parsed once, before the scan (a variable, so the
-- planner can use the GIN index and never re-parses it per row).
CREATE FUNCTION adk._memory_search_vec(app_name text, user_id text, query text,
                                       max_results integer, qv real[])
RETURNS SETOF adk.memory_match
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    q tsquery := adk._any_word_query(adk._memory_config(app_name), query);
    min_similarity real;
    k integer := GREATEST(max_results, 20) OPERATOR(pg_catalog.*) 3;
BEGIN
    SELECT a.memory_min_similarity INTO min_similarity
      FROM adk.apps a WHERE a.name OPERATOR(pg_catalog.=) $1;
    IF qv IS NULL THEN
        IF q IS NULL THEN
            RETURN;
        END IF;
        RETURN QUERY
            SELECT m.text, m.author, m."timestamp", m.session_id, m.event_id,
                   pg_catalog.ts_rank_cd(m.search, q) AS rank
              FROM adk.memory m
             WHERE m.app_name OPERATOR(pg_catalog.=) $1 AND m.user_id OPERATOR(pg_catalog.=) $2
               AND m.search OPERATOR(pg_catalog.@@) q
             ORDER BY rank DESC, m."timestamp" DESC, m.id DESC
             LIMIT $4;
        RETURN;
    END IF;
    -- reciprocal rank fusion of the full-text and the semantic ranking
    RETURN QUERY
        WITH fts AS (
            SELECT m.id, pg_catalog.row_number() OVER (ORDER BY pg_catalog.ts_rank_cd(m.search, q) DESC,
                                                       m."timestamp" DESC, m.id DESC) AS r
              FROM adk.memory m
             WHERE q IS NOT NULL
               AND m.app_name OPERATOR(pg_catalog.=) $1 AND m.user_id OPERATOR(pg_catalog.=) $2
               AND m.search OPERATOR(pg_catalog.@@) q
             ORDER BY r LIMIT k),
        sem AS (
            SELECT s.id, pg_catalog.row_number() OVER (ORDER BY s.sim DESC, s.id DESC) AS r
              FROM (SELECT m.id, adk._cosine(m.embedding, qv) AS sim
                      FROM adk.memory m
                     WHERE m.app_name OPERATOR(pg_catalog.=) $1 AND m.user_id OPERATOR(pg_catalog.=) $2
                       AND m.embedding IS NOT NULL) s
             WHERE s.sim OPERATOR(pg_catalog.>=) min_similarity
             ORDER BY r LIMIT k),
        fused AS (
            SELECT x.id, pg_catalog.sum(1.0 OPERATOR(pg_catalog./) (60 OPERATOR(pg_catalog.+) x.r)) AS score
              FROM (SELECT * FROM fts UNION ALL SELECT * FROM sem) x
             GROUP BY x.id)
        SELECT m.text, m.author, m."timestamp", m.session_id, m.event_id, f.score::real AS rank
          FROM fused f JOIN adk.memory m ON m.id OPERATOR(pg_catalog.=) f.id
         ORDER BY f.score DESC, m."timestamp" DESC, m.id DESC
         LIMIT $4;
END
$$;

CREATE FUNCTION adk_search_memory(app_name text, user_id text, query text,
                                  max_results integer DEFAULT 10)
RETURNS SETOF adk.memory_match
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM adk._check_id('app name', app_name);
    PERFORM adk._check_id('user id', user_id);
    PERFORM adk._tenancy_check(app_name, user_id);
    IF query IS NULL THEN
        RAISE EXCEPTION 'memory query must not be null' USING ERRCODE = '22004';
    END IF;
    IF max_results IS NULL OR max_results OPERATOR(pg_catalog.<=) 0 THEN
        RAISE EXCEPTION 'max_results must be positive' USING ERRCODE = '22023';
    END IF;
    RETURN QUERY SELECT * FROM adk._memory_search(app_name, user_id, query, max_results);
END
$$;
COMMENT ON FUNCTION adk_search_memory(text, text, text, integer) IS
    'The user''s memory entries that share any word of the query, best first (ts_rank_cd with the app''s text search configuration), at most max_results.';

CREATE FUNCTION adk_define_app_memory(app_name text,
                                      search_config regconfig DEFAULT 'pg_catalog.simple',
                                      add_to_memory boolean DEFAULT false,
                                      embedding_model text DEFAULT NULL,
                                      min_similarity real DEFAULT 0.3)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF embedding_model IS NOT NULL AND NOT EXISTS (
           SELECT 1 FROM adk.models m WHERE m.name OPERATOR(pg_catalog.=) $4
              AND m.provider OPERATOR(pg_catalog.=) ANY (ARRAY['openai', 'gemini'])) THEN
        RAISE EXCEPTION 'embedding model "%" is not an OpenAI-compatible or Gemini model', embedding_model
            USING ERRCODE = '42704',
                  HINT = 'Define it with adk_define_model(); its endpoint must serve /embeddings (OpenAI) or :batchEmbedContents (Gemini).';
    END IF;
    IF min_similarity IS NOT NULL AND NOT min_similarity BETWEEN -1 AND 1 THEN
        RAISE EXCEPTION 'min_similarity must be between -1 and 1' USING ERRCODE = '22023';
    END IF;
    UPDATE adk.apps a
       SET memory_search_config = coalesce($2, 'pg_catalog.simple'::pg_catalog.regconfig),
           add_to_memory = coalesce($3, false),
           memory_embedding_model = $4,
           memory_min_similarity = coalesce($5, 0.3)
     WHERE a.name OPERATOR(pg_catalog.=) $1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'app "%" does not exist', app_name USING ERRCODE = '42704',
            HINT = 'Define it first with adk_define_app().';
    END IF;
END
$$;
COMMENT ON FUNCTION adk_define_app_memory(text, regconfig, boolean, text, real) IS
    'Set an app''s memory options: the text search configuration of adk_search_memory (simple, english, ...), whether every completed invocation is added to memory, and an embedding model (with the least cosine similarity of a semantic match) for semantic search fused with full-text search.';

GRANT SELECT ON adk.memory TO adk_user;
SELECT pg_catalog.pg_extension_config_dump('adk.memory', '');
SELECT pg_catalog.pg_extension_config_dump('adk.memory_id_seq', '');
-- ---------------------------------------------------------------------
-- Traces (docs/observability.md): OpenTelemetry spans as rows, the OTLP export queue,
-- counters per model and per tool.
-- ---------------------------------------------------------------------

-- One row per span, written by the runner in the run's own transaction
-- (runner/spans.c): a rolled-back turn leaves none.  The columns of the
-- ADK SQL span exporters (trace_id, span_id, parent_span_id as lowercase
-- hex, name, start and end, attributes) plus the OpenTelemetry span's
-- kind, status and events, and the session keys.
-- The row check is one C function over the columns (what it requires is
-- in src/common/trace_context.c, adk_span_row_ok): the executor reads
-- every CHECK of a table from its stored node tree at the start of each
-- INSERT, and seven expressions with regex and array constants cost more
-- than the rest of the insert.
CREATE FUNCTION adk._span_row_ok(trace_id text, span_id text, parent_span_id text, kind text,
                                 status_code text, attributes jsonb, events jsonb) RETURNS boolean
    AS 'MODULE_PATHNAME', 'adk_span_row_ok' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION adk._span_row_ok(text, text, text, text, text, jsonb, jsonb) IS
    'CHECK of adk.spans: trace_id 32 and span_id 16 lower-case hex digits, not all zeros; parent_span_id 16 lower-case hex digits; kind an OpenTelemetry span kind (INTERNAL, SERVER, CLIENT, PRODUCER, CONSUMER); status_code UNSET, OK or ERROR; attributes an object; events an array';
CREATE TABLE adk.spans (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    trace_id       text NOT NULL,
    span_id        text NOT NULL,
    parent_span_id text,
    name           text NOT NULL,
    kind           text NOT NULL,
    start_time     timestamptz NOT NULL,
    end_time       timestamptz NOT NULL,
    status_code    text NOT NULL DEFAULT 'UNSET',
    status_message text,
    attributes     jsonb NOT NULL DEFAULT '{}',
    events         jsonb NOT NULL DEFAULT '[]',
    app_name       text,
    user_id        text,
    session_id     text,
    invocation_id  text,
    role_name      name NOT NULL DEFAULT current_user,
    created_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT spans_row_check CHECK (adk._span_row_ok(trace_id, span_id, parent_span_id, kind, status_code,
                                                       attributes, events))
);
CREATE INDEX spans_trace_idx ON adk.spans (trace_id, span_id);
CREATE INDEX spans_session_idx ON adk.spans (app_name, user_id, session_id);
CREATE INDEX spans_invocation_idx ON adk.spans (invocation_id);
CREATE INDEX spans_created_at_idx ON adk.spans (created_at);
COMMENT ON TABLE adk.spans IS 'OpenTelemetry GenAI spans of the runs (invoke_agent, {operation} {model}, execute_tool), written in the run''s transaction; rows older than adk.spans_retention are removed as new ones are written.';

-- The ledger row of a model request names its span; first_chunk_ms is the
-- time to the first body chunk of a streamed call.
ALTER TABLE adk.model_calls
    ADD COLUMN first_chunk_ms double precision,
    ADD COLUMN cached_tokens  bigint,
    ADD COLUMN trace_id       text,
    ADD COLUMN span_id        text;

-- Spans committed and not yet delivered to adk.otlp_endpoint.  The writer
-- adds a row in the span's own transaction (only while an endpoint is
-- set), so a row here is visible exactly when its span is committed; the
-- exporter deletes rows only after the endpoint answered 2xx for them.
-- Unlike a high-water mark on adk.spans.id, this cannot skip a span whose
-- lower id commits after a higher one.
CREATE TABLE adk.span_exports (
    span_ref bigint PRIMARY KEY
);
COMMENT ON TABLE adk.span_exports IS 'The OTLP exporter''s queue: committed spans not yet accepted by adk.otlp_endpoint.';

-- The exporter's progress, for people (one row).
CREATE TABLE adk.otlp_export_state (
    id             integer PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    exported       bigint NOT NULL DEFAULT 0,
    batches        bigint NOT NULL DEFAULT 0,
    failures       bigint NOT NULL DEFAULT 0,
    last_export_at timestamptz,
    last_error     text,
    last_error_at  timestamptz
);
INSERT INTO adk.otlp_export_state DEFAULT VALUES;
COMMENT ON TABLE adk.otlp_export_state IS 'What the OTLP exporter has delivered, and its last failure.';

-- OTLP/HTTP JSON (opentelemetry-proto's JSON mapping): one attribute
-- value.  Strings, booleans, integers (int64 as a JSON string) and doubles
-- as such; an array of scalars as an arrayValue; anything nested as its
-- JSON text.
CREATE FUNCTION adk._otlp_value(v jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE pg_catalog.jsonb_typeof(v)
        WHEN 'string' THEN pg_catalog.jsonb_build_object('stringValue', v OPERATOR(pg_catalog.#>>) '{}')
        WHEN 'boolean' THEN pg_catalog.jsonb_build_object('boolValue', v)
        WHEN 'number' THEN
            CASE WHEN (v OPERATOR(pg_catalog.#>>) '{}') OPERATOR(pg_catalog.~) '^-?[0-9]{1,18}$'
                 THEN pg_catalog.jsonb_build_object('intValue', v OPERATOR(pg_catalog.#>>) '{}')
                 ELSE pg_catalog.jsonb_build_object('doubleValue', v) END
        WHEN 'array' THEN
            CASE WHEN NOT EXISTS (SELECT 1 FROM pg_catalog.jsonb_array_elements(v) e
                                   WHERE pg_catalog.jsonb_typeof(e) OPERATOR(pg_catalog.=) ANY (ARRAY['object', 'array', 'null']))
                 THEN pg_catalog.jsonb_build_object('arrayValue', pg_catalog.jsonb_build_object('values',
                          (SELECT coalesce(pg_catalog.jsonb_agg(adk._otlp_value(e)), '[]')
                             FROM pg_catalog.jsonb_array_elements(v) e)))
                 ELSE pg_catalog.jsonb_build_object('stringValue', v::text) END
        WHEN 'object' THEN pg_catalog.jsonb_build_object('stringValue', v::text)
    END
$$;

CREATE FUNCTION adk._otlp_attributes(a jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('key', e.key, 'value', adk._otlp_value(e.value))
                                                    ORDER BY e.key), '[]')
      FROM pg_catalog.jsonb_each(a) e
     WHERE pg_catalog.jsonb_typeof(e.value) OPERATOR(pg_catalog.<>) 'null'
$$;

CREATE FUNCTION adk._otlp_nanos(t timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT ((EXTRACT(epoch FROM t) OPERATOR(pg_catalog.*) 1000000)::bigint)::text OPERATOR(pg_catalog.||) '000'
$$;

-- The next batch for the exporter (worker/otlp.c): up to n queued spans in
-- queue order, as one ExportTraceServiceRequest, and their queue refs.
-- Queue rows whose span retention removed are dropped first.
CREATE FUNCTION adk._otlp_batch(n integer, service_name text, OUT refs bigint[], OUT payload text)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    DELETE FROM adk.span_exports q
     WHERE NOT EXISTS (SELECT 1 FROM adk.spans s WHERE s.id OPERATOR(pg_catalog.=) q.span_ref);
    WITH b AS (
        SELECT s.* FROM adk.span_exports q JOIN adk.spans s ON s.id OPERATOR(pg_catalog.=) q.span_ref
         ORDER BY q.span_ref LIMIT n
    )
    SELECT pg_catalog.array_agg(b.id ORDER BY b.id),
           pg_catalog.jsonb_build_object('resourceSpans', pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
               'resource', pg_catalog.jsonb_build_object('attributes', adk._otlp_attributes(pg_catalog.jsonb_build_object(
                   'service.name', service_name,
                   'telemetry.sdk.name', 'adk_runner', 'telemetry.sdk.language', 'c',
                   'telemetry.sdk.version', (SELECT x.extversion FROM pg_catalog.pg_extension x
                                              WHERE x.extname OPERATOR(pg_catalog.=) 'adk_runner')))),
               'scopeSpans', pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
                   'scope', pg_catalog.jsonb_build_object('name', 'adk_runner'),
                   'spans', pg_catalog.jsonb_agg(pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
                       'traceId', b.trace_id,
                       'spanId', b.span_id,
                       'parentSpanId', b.parent_span_id,
                       'name', b.name,
                       'kind', pg_catalog.array_position(ARRAY['INTERNAL', 'SERVER', 'CLIENT', 'PRODUCER', 'CONSUMER'], b.kind),
                       'startTimeUnixNano', adk._otlp_nanos(b.start_time),
                       'endTimeUnixNano', adk._otlp_nanos(b.end_time),
                       'attributes', adk._otlp_attributes(b.attributes OPERATOR(pg_catalog.||) pg_catalog.jsonb_strip_nulls(
                           pg_catalog.jsonb_build_object('adk.app.name', b.app_name, 'adk.user.id', b.user_id,
                                                         'adk.invocation.id', b.invocation_id))),
                       'events', (SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                                          'timeUnixNano', e OPERATOR(pg_catalog.->>) 'time_unix_nano',
                                          'name', e OPERATOR(pg_catalog.->>) 'name',
                                          'attributes', adk._otlp_attributes(coalesce(e OPERATOR(pg_catalog.->) 'attributes', '{}')))), '[]')
                                    FROM pg_catalog.jsonb_array_elements(b.events) e),
                       'status', pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
                           'code', pg_catalog.array_position(ARRAY['UNSET', 'OK', 'ERROR'], b.status_code) OPERATOR(pg_catalog.-) 1,
                           'message', b.status_message))))
                       ORDER BY b.id))))))::text
      INTO refs, payload
      FROM b;
END
$$;

-- The trace and span a tool runs in (NULL outside a run), so it can tag
-- its own writes.
CREATE FUNCTION adk_current_trace(OUT trace_id text, OUT span_id text, OUT traceparent text)
    AS 'MODULE_PATHNAME', 'adk_current_trace' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION adk_current_trace() IS
    'The trace id and span id of the span running now (a tool sees its execute_tool span), and the W3C traceparent naming it; NULLs outside a run.';

-- ---------------------------------------------------------------------
-- Counters in the pg_stat_* style, for postgres_exporter and friends:
-- views over the ledger (models) and the spans (tools) since the last
-- adk_stat_reset().  Views, not shared memory: they need no preload, count
-- what committed (the same rows people query), and cost nothing on the
-- hot path; they cover what adk.model_calls_retention / adk.spans_retention
-- keep.  They read as the querying role, so row-level security applies:
-- a tenant counts its own calls (86_spans_tenancy.sql).  Times are in
-- milliseconds rounded to a tenth: what a person reads (the rows in
-- adk.model_calls and adk.spans keep them whole).
-- ---------------------------------------------------------------------
CREATE TABLE adk.stat_reset (
    id       integer PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    reset_at timestamptz NOT NULL DEFAULT '-infinity'
);
INSERT INTO adk.stat_reset DEFAULT VALUES;

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

CREATE FUNCTION adk_stat_reset() RETURNS timestamptz
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    UPDATE adk.stat_reset SET reset_at = pg_catalog.clock_timestamp() RETURNING reset_at
$$;
COMMENT ON FUNCTION adk_stat_reset() IS 'Start adk.stat_models and adk.stat_tools counting from now (adk_admin).';

-- the views read adk.stat_reset as the querying role
GRANT SELECT ON adk.spans, adk.otlp_export_state, adk.stat_models, adk.stat_tools, adk.stat_reset
   TO adk_user;
GRANT DELETE ON adk.spans TO adk_admin;

SELECT pg_catalog.pg_extension_config_dump('adk.spans', '');
SELECT pg_catalog.pg_extension_config_dump('adk.spans_id_seq', '');
-- ---------------------------------------------------------------------
-- Tenancy, row-level security, token budgets and costs.
-- See docs/security.md ("Tenancy") and docs/budgets.md, and src/store/tenancy.c.
--
-- adk.apps.tenancy: 'shared' (default; every adk_user member may name any
-- user id), 'role' (the user id is the calling role's name), 'claim' (a
-- member of adk_gateway names the end user it asserted with
-- adk_set_user() in this transaction).  adk_admin members, the owner of
-- schema adk and superusers see and run everything.
-- ---------------------------------------------------------------------

DO $roles$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) 'adk_gateway') THEN
        CREATE ROLE adk_gateway NOLOGIN;
    END IF;
END
$roles$;
-- a gateway runs apps like any adk_user member
GRANT adk_user TO adk_gateway;

ALTER TABLE adk.apps ADD COLUMN tenancy text NOT NULL DEFAULT 'shared'
    CHECK (tenancy OPERATOR(pg_catalog.=) ANY (ARRAY['shared', 'role', 'claim']));
COMMENT ON COLUMN adk.apps.tenancy IS
    '''shared'' (any adk_user member names any user id), ''role'' (user id = the calling role), ''claim'' (an adk_gateway member names the user it asserted with adk_set_user())';

DROP FUNCTION adk_define_app(text, text, boolean, text[], integer, jsonb, boolean);
CREATE FUNCTION adk_define_app(name text, root_agent text,
                               auto_create_session boolean DEFAULT true,
                               plugins text[] DEFAULT '{}',
                               max_llm_calls integer DEFAULT 500,
                               compaction jsonb DEFAULT NULL,
                               save_input_blobs_as_artifacts boolean DEFAULT false,
                               tenancy text DEFAULT 'shared')
RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO adk.apps AS a (name, root_agent, auto_create_session, plugins, max_llm_calls,
                               compaction, save_input_blobs_as_artifacts, tenancy)
    VALUES ($1, $2, coalesce($3, true), coalesce($4, '{}'),
            coalesce($5, 500), $6, coalesce($7, false),
            coalesce($8, 'shared'))
    ON CONFLICT ON CONSTRAINT apps_pkey DO UPDATE
       SET root_agent = EXCLUDED.root_agent, auto_create_session = EXCLUDED.auto_create_session,
           plugins = EXCLUDED.plugins, max_llm_calls = EXCLUDED.max_llm_calls,
           compaction = EXCLUDED.compaction,
           save_input_blobs_as_artifacts = EXCLUDED.save_input_blobs_as_artifacts,
           tenancy = EXCLUDED.tenancy
$$;
COMMENT ON FUNCTION adk_define_app(text, text, boolean, text[], integer, jsonb, boolean, text) IS
    'Create or replace an app: its root agent (the whole tree under it is checked), auto_create_session, plugins in call order, max_llm_calls per run, compaction (NULL = off), save_input_blobs_as_artifacts, tenancy (''shared'', ''role'' or ''claim'').';

CREATE FUNCTION adk_set_user(user_id text) RETURNS void
    AS 'MODULE_PATHNAME', 'adk_set_user' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_set_user(text) IS
    'adk_gateway members: assert the end user for the rest of the transaction (NULL: none); apps with tenancy ''claim'' then accept only that user id.  Refused while a run is active.';

CREATE FUNCTION adk_asserted_user() RETURNS text
    AS 'MODULE_PATHNAME', 'adk_asserted_user' LANGUAGE C STABLE;
COMMENT ON FUNCTION adk_asserted_user() IS
    'The end user asserted with adk_set_user() in this transaction, or NULL.';

CREATE FUNCTION adk._tenancy_check(app_name text, user_id text) RETURNS void
    AS 'MODULE_PATHNAME', 'adk_tenancy_check_sql' LANGUAGE C STABLE;
CREATE FUNCTION adk._tenant_visible(app_name text, user_id text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'adk_tenant_visible' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION adk._tenant_visible(text, text) IS
    'Row-level security: may the current role see rows of this app and user id?';
CREATE FUNCTION adk._role_visible(role_name name) RETURNS boolean
    AS 'MODULE_PATHNAME', 'adk_role_visible' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION adk._role_visible(name) IS
    'Row-level security: may the current role see rows of this role (it has its privileges, or sees everything)?';

-- adk_create_session / adk_delete_session check the tenancy as the caller
-- (a SECURITY DEFINER function cannot see its caller), then run their SQL
-- bodies, now plain functions in schema adk, as the owner of schema adk.
-- Called directly, a body runs as the caller, who may not write the store.
ALTER FUNCTION adk_create_session(text, text, text, jsonb) RENAME TO _create_session;
ALTER FUNCTION _create_session(text, text, text, jsonb) SET SCHEMA adk;
ALTER FUNCTION adk._create_session(text, text, text, jsonb) SECURITY INVOKER;
ALTER FUNCTION adk_delete_session(text, text, text) RENAME TO _delete_session;
ALTER FUNCTION _delete_session(text, text, text) SET SCHEMA adk;
ALTER FUNCTION adk._delete_session(text, text, text) SECURITY INVOKER;

CREATE FUNCTION adk_create_session(app_name text, user_id text,
                                   session_id text DEFAULT NULL,
                                   state jsonb DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'adk_create_session_sql' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_create_session(text, text, text, jsonb) IS
    'Create a session (id generated when NULL); state keys app:/user: go to their scope, temp: are dropped. Returns the session as ADK''s Session JSON. A second create of the same id fails with 23505.';

CREATE FUNCTION adk_delete_session(app_name text, user_id text, session_id text)
RETURNS void
AS 'MODULE_PATHNAME', 'adk_delete_session_sql' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_delete_session(text, text, text) IS
    'Delete a session with its events; app and user state stay.';

-- adk_rebuild_run_states (62_hitl.sql) the same way: a scope of one user
-- is checked like any entry point that names a user; a scope of one app
-- is, for a role that may name only one user id of it ('role', 'claim'),
-- that user's sessions; no scope at all is an admin's.  So the sessions
-- it locks are always ones the caller may see.
CREATE FUNCTION adk_rebuild_run_states(app_name text DEFAULT NULL, user_id text DEFAULT NULL,
                                       session_id text DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'adk_rebuild_run_states_sql' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_rebuild_run_states(text, text, text) IS
    'Rebuild adk.run_states from adk.events alone, for one session (app, user, session), one user, the sessions of one app the caller may see, or everything (adk_admin); returns the rows the scope has.';

-- The same for the artifact and memory writers (80_artifacts.sql,
-- 82_memory.sql).  Their readers (adk_load_artifact, adk_list_artifacts,
-- adk_list_artifact_versions, adk_search_memory) run as the caller: they
-- call adk._tenancy_check, and row-level security filters what they read.
-- Inside a run every one of them is called as the role running the step,
-- so a SQL tool that names another user than the run's is refused the
-- same way (adk_save_artifact(filename, data, mime_type) names the run's).
ALTER FUNCTION adk_save_artifact(text, text, text, text, bytea, text) RENAME TO _save_artifact;
ALTER FUNCTION _save_artifact(text, text, text, text, bytea, text) SET SCHEMA adk;
ALTER FUNCTION adk._save_artifact(text, text, text, text, bytea, text) SECURITY INVOKER;
ALTER FUNCTION adk_delete_artifact(text, text, text, text) RENAME TO _delete_artifact;
ALTER FUNCTION _delete_artifact(text, text, text, text) SET SCHEMA adk;
ALTER FUNCTION adk._delete_artifact(text, text, text, text) SECURITY INVOKER;
ALTER FUNCTION adk_add_session_to_memory(text, text, text) RENAME TO _add_session_to_memory;
ALTER FUNCTION _add_session_to_memory(text, text, text) SET SCHEMA adk;
ALTER FUNCTION adk._add_session_to_memory(text, text, text) SECURITY INVOKER;

CREATE FUNCTION adk_save_artifact(app_name text, user_id text, session_id text,
                                  filename text, data bytea,
                                  mime_type text DEFAULT 'application/octet-stream')
RETURNS integer
AS 'MODULE_PATHNAME', 'adk_save_artifact_sql' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_save_artifact(text, text, text, text, bytea, text) IS
    'Save a new version of an artifact (0, 1, ...; user: filenames are shared by the user''s sessions) and return it. Inside a run, for the run''s session, the version goes into the event''s actions.artifact_delta.';

CREATE FUNCTION adk_delete_artifact(app_name text, user_id text, session_id text, filename text)
RETURNS integer
AS 'MODULE_PATHNAME', 'adk_delete_artifact_sql' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_delete_artifact(text, text, text, text) IS
    'Delete every version of an artifact; returns how many versions were deleted (0 when none: like ADK, deleting a missing artifact is no error).';

CREATE FUNCTION adk_add_session_to_memory(app_name text, user_id text, session_id text)
RETURNS integer
AS 'MODULE_PATHNAME', 'adk_add_session_to_memory_sql' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_add_session_to_memory(text, text, text) IS
    'Add the events with text of a session to its user''s memory; idempotent: events already added are skipped. Returns how many entries were added.';

-- ---------------------------------------------------------------------
-- Row-level security.  The owner of the tables (the role that created the
-- extension; ADK-JS and ADK Python connect as it) and superusers bypass
-- it; adk_admin members pass adk._tenant_visible.  The policies cover
-- every command, so adk_admin's DELETE on adk.model_calls still works.
-- ---------------------------------------------------------------------

ALTER TABLE adk.sessions ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.sessions
    USING (adk._tenant_visible(app_name, user_id)) WITH CHECK (adk._tenant_visible(app_name, user_id));
ALTER TABLE adk.events ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.events
    USING (adk._tenant_visible(app_name, user_id)) WITH CHECK (adk._tenant_visible(app_name, user_id));
ALTER TABLE adk.user_states ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.user_states
    USING (adk._tenant_visible(app_name, user_id)) WITH CHECK (adk._tenant_visible(app_name, user_id));
ALTER TABLE adk.run_states ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.run_states
    USING (adk._tenant_visible(app_name, user_id)) WITH CHECK (adk._tenant_visible(app_name, user_id));
ALTER TABLE adk.invocations ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.invocations
    USING (adk._tenant_visible(app_name, user_id)) WITH CHECK (adk._tenant_visible(app_name, user_id));
ALTER TABLE adk.jobs ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.jobs
    USING (adk._tenant_visible(app_name, user_id)) WITH CHECK (adk._tenant_visible(app_name, user_id));
ALTER TABLE adk.compactions ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.compactions
    USING (adk._tenant_visible(app_name, user_id)) WITH CHECK (adk._tenant_visible(app_name, user_id));
-- A model call belongs to the session it was made for, and its writer
-- says whose that is: a run's calls are its user's, and so is a
-- summarizer's, inside a run or outside one (adk_compact).  A call made for
-- no session (adk_generate) is the role's that made it.  "No invocation"
-- is never "anyone's".
ALTER TABLE adk.model_calls ADD COLUMN app_name text, ADD COLUMN user_id text;
COMMENT ON COLUMN adk.model_calls.app_name IS
    'The app of the session the call was made for (a run''s, or a summarizer''s); NULL: none (adk_generate)';
COMMENT ON COLUMN adk.model_calls.user_id IS
    'The user id of the session the call was made for; NULL: none (adk_generate)';
ALTER TABLE adk.model_calls ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.model_calls
    USING (CASE WHEN app_name IS NULL
                THEN adk._role_visible(role_name)
                ELSE adk._tenant_visible(app_name, user_id) END);

-- Artifacts and memory (80_artifacts.sql, 82_memory.sql).  For a role
-- under these policies a memory search reads the user's entries through
-- the (app, user) index and filters them by the query: @@ is not
-- leakproof, so it is not used below the policy as a GIN index condition.
ALTER TABLE adk.artifacts ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.artifacts
    USING (adk._tenant_visible(app_name, user_id)) WITH CHECK (adk._tenant_visible(app_name, user_id));
ALTER TABLE adk.memory ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.memory
    USING (adk._tenant_visible(app_name, user_id)) WITH CHECK (adk._tenant_visible(app_name, user_id));

-- Views read the tables as the querying role, so the policies apply.
ALTER VIEW adk.event_log SET (security_invoker = true);
ALTER VIEW adk.pending_interrupts SET (security_invoker = true);
ALTER VIEW adk.active_tasks SET (security_invoker = true);

-- ---------------------------------------------------------------------
-- Token budgets.  A budget covers the model calls of one app, of one user
-- id (NULL: all users together) and one role (NULL: all roles together),
-- per UTC day, UTC month or in total.  Before every model call of a run
-- adk._budget_take locks the usage row of every budget that applies
-- (SELECT ... FOR UPDATE, in budget id order) and refuses the call when
-- any of them is spent: tokens used >= max_tokens or calls >= max_model_calls.
-- Otherwise it counts the call; after the call adk._budget_charge adds its
-- input + output tokens to the same rows.  See docs/budgets.md
-- for what that makes exact.
-- ---------------------------------------------------------------------

CREATE TABLE adk.budgets (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app_name        text NOT NULL REFERENCES adk.apps (name) ON DELETE CASCADE,
    user_id         text,
    role_name       name,
    period          text NOT NULL CHECK (period OPERATOR(pg_catalog.=) ANY (ARRAY['day', 'month', 'total'])),
    max_tokens      bigint CHECK (max_tokens OPERATOR(pg_catalog.>=) 0),
    max_model_calls integer CHECK (max_model_calls OPERATOR(pg_catalog.>=) 0),
    created_at      timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT budgets_scope_key UNIQUE NULLS NOT DISTINCT (app_name, user_id, role_name, period)
);
COMMENT ON TABLE adk.budgets IS
    'Token budgets: max_tokens (input + output) and max_model_calls (NULL: no limit) per app, user id (NULL: all) and role (NULL: all), per day, month (UTC) or in total';
CREATE INDEX budgets_app_idx ON adk.budgets (app_name);
SELECT pg_catalog.pg_extension_config_dump('adk.budgets', '');

CREATE TABLE adk.budget_spend (
    budget_id    bigint NOT NULL REFERENCES adk.budgets (id) ON DELETE CASCADE,
    period_start timestamptz NOT NULL,
    tokens       bigint NOT NULL DEFAULT 0,
    model_calls  integer NOT NULL DEFAULT 0,
    CONSTRAINT budget_spend_pkey PRIMARY KEY (budget_id, period_start)
);
COMMENT ON TABLE adk.budget_spend IS 'What each budget has spent per period (written under its row lock)';
SELECT pg_catalog.pg_extension_config_dump('adk.budget_spend', '');

CREATE FUNCTION adk._budget_period_start(period text, at timestamptz) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE period
           WHEN 'total' THEN '-infinity'::pg_catalog.timestamptz
           ELSE pg_catalog.timezone('UTC', pg_catalog.date_trunc(period, pg_catalog.timezone('UTC', at)))
           END
$$;

-- Take a model call from every budget that applies: NULL when the call may
-- go ahead (it is counted), else why not.  Runs as the owner of schema adk.
CREATE FUNCTION adk._budget_take(p_app text, p_user text, p_role name)
RETURNS text
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    b record;
    s adk.budget_spend;
    ps timestamptz;
    taken bigint[] := '{}';
    starts timestamptz[] := '{}';
    pending bigint[];
BEGIN
    FOR b IN
        SELECT x.* FROM adk.budgets x
         WHERE x.app_name OPERATOR(pg_catalog.=) p_app
           AND (x.user_id IS NULL OR x.user_id OPERATOR(pg_catalog.=) p_user)
           AND (x.role_name IS NULL OR x.role_name OPERATOR(pg_catalog.=) p_role)
           AND (x.max_tokens IS NOT NULL OR x.max_model_calls IS NOT NULL)
         ORDER BY x.id
    LOOP
        ps := adk._budget_period_start(b.period, pg_catalog.clock_timestamp());
        INSERT INTO adk.budget_spend AS t (budget_id, period_start) VALUES (b.id, ps)
        ON CONFLICT ON CONSTRAINT budget_spend_pkey DO NOTHING;
        SELECT t.* INTO STRICT s FROM adk.budget_spend t
         WHERE t.budget_id OPERATOR(pg_catalog.=) b.id AND t.period_start OPERATOR(pg_catalog.=) ps
           FOR UPDATE;
        -- what rolled-back transactions charged, not written yet
        pending := adk._budget_pending(b.id, ps);
        IF pending IS NULL THEN
            RETURN pg_catalog.format('budget %s of app "%s" cannot be checked: too many budgets are in use at once',
                                     b.id, p_app);
        END IF;
        s.tokens := s.tokens OPERATOR(pg_catalog.+) pending[2];
        s.model_calls := s.model_calls OPERATOR(pg_catalog.+) pending[1];
        IF b.max_tokens IS NOT NULL AND s.tokens OPERATOR(pg_catalog.>=) b.max_tokens THEN
            RETURN pg_catalog.format('token budget %s of app "%s" is spent: %s of %s tokens used (%s)',
                                     b.id, p_app, s.tokens, b.max_tokens, b.period);
        END IF;
        IF b.max_model_calls IS NOT NULL AND s.model_calls OPERATOR(pg_catalog.>=) b.max_model_calls THEN
            RETURN pg_catalog.format('budget %s of app "%s" is spent: %s of %s model calls made (%s)',
                                     b.id, p_app, s.model_calls, b.max_model_calls, b.period);
        END IF;
        taken := taken OPERATOR(pg_catalog.||) b.id;
        starts := starts OPERATOR(pg_catalog.||) ps;
    END LOOP;
    UPDATE adk.budget_spend t SET model_calls = t.model_calls OPERATOR(pg_catalog.+) 1
      FROM ROWS FROM (pg_catalog.unnest(taken), pg_catalog.unnest(starts)) AS k(id, ps)
     WHERE t.budget_id OPERATOR(pg_catalog.=) k.id AND t.period_start OPERATOR(pg_catalog.=) k.ps;
    PERFORM adk._budget_spent(k.id, k.ps, 1, 0)
       FROM ROWS FROM (pg_catalog.unnest(taken), pg_catalog.unnest(starts)) AS k(id, ps);
    RETURN NULL;
END
$$;

-- Charge a finished call's tokens to the budgets that took it: the rows
-- whose lock this transaction holds from adk._budget_take (same period
-- starts: the call counts in the period it was taken in).
CREATE FUNCTION adk._budget_charge(p_app text, p_user text, p_role name, p_taken_at timestamptz,
                                   p_tokens bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    c record;
BEGIN
    FOR c IN
        UPDATE adk.budget_spend t SET tokens = t.tokens OPERATOR(pg_catalog.+) p_tokens
          FROM adk.budgets b
         WHERE b.app_name OPERATOR(pg_catalog.=) p_app
           AND (b.user_id IS NULL OR b.user_id OPERATOR(pg_catalog.=) p_user)
           AND (b.role_name IS NULL OR b.role_name OPERATOR(pg_catalog.=) p_role)
           AND (b.max_tokens IS NOT NULL OR b.max_model_calls IS NOT NULL)
           AND t.budget_id OPERATOR(pg_catalog.=) b.id
           AND t.period_start OPERATOR(pg_catalog.=) adk._budget_period_start(b.period, p_taken_at)
        RETURNING t.budget_id, t.period_start
    LOOP
        PERFORM adk._budget_spent(c.budget_id, c.period_start, 0, p_tokens);
    END LOOP;
END
$$;

-- ---------------------------------------------------------------------
-- A rolled-back call is not free (src/shared/spent.c, docs/budgets.md).
-- What _budget_take and _budget_charge add to adk.budget_spend is noted
-- for the transaction (_budget_spent); if it rolls back, the
-- notes go to shared memory, _budget_take counts them as pending
-- (_budget_pending), and the launcher adds them to adk.budget_spend in a
-- transaction of its own (_budget_apply).  Ledger rows of rolled-back
-- calls are written again by the launcher with rolled_back = true.
-- ---------------------------------------------------------------------

CREATE FUNCTION adk._budget_pending(budget_id bigint, period_start timestamptz) RETURNS bigint[]
    AS 'MODULE_PATHNAME', 'adk_budget_pending' LANGUAGE C VOLATILE STRICT;
CREATE FUNCTION adk._budget_spent(budget_id bigint, period_start timestamptz, calls bigint, tokens bigint)
RETURNS void
    AS 'MODULE_PATHNAME', 'adk_budget_spent' LANGUAGE C VOLATILE STRICT;

-- The launcher: add what a rolled-back transaction charged.  false: the
-- usage row is locked by a running transaction (it waits 100 ms at most,
-- so one busy budget never holds up the launcher); the launcher tries
-- again in its next round.  A budget deleted since takes nothing.
CREATE FUNCTION adk._budget_apply(p_budget bigint, p_start timestamptz, p_calls bigint, p_tokens bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp SET lock_timeout = '100ms' AS $$
BEGIN
    INSERT INTO adk.budget_spend AS t (budget_id, period_start)
    SELECT b.id, p_start FROM adk.budgets b WHERE b.id OPERATOR(pg_catalog.=) p_budget
    ON CONFLICT ON CONSTRAINT budget_spend_pkey DO NOTHING;
    UPDATE adk.budget_spend t
       SET model_calls = t.model_calls OPERATOR(pg_catalog.+) p_calls::integer,
           tokens = t.tokens OPERATOR(pg_catalog.+) p_tokens
     WHERE t.budget_id OPERATOR(pg_catalog.=) p_budget
       AND t.period_start OPERATOR(pg_catalog.=) p_start;
    RETURN true;
EXCEPTION WHEN lock_not_available THEN
    RETURN false;
END
$$;

ALTER TABLE adk.model_calls ADD COLUMN rolled_back boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN adk.model_calls.rolled_back IS
    'The transaction that made the call rolled back: the row was written again by the launcher, without request, response and response_body';

-- A budget of one user is that user's data: the tenancy rules apply.  A
-- budget of one role (and all users) is that role's: its members see it.
-- An app-wide budget (no user, no role) is visible to everyone.
ALTER TABLE adk.budgets ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.budgets
    USING (CASE WHEN user_id IS NOT NULL THEN adk._tenant_visible(app_name, user_id)
                WHEN role_name IS NOT NULL THEN adk._role_visible(role_name)
                ELSE true END)
    WITH CHECK (CASE WHEN user_id IS NOT NULL THEN adk._tenant_visible(app_name, user_id)
                     WHEN role_name IS NOT NULL THEN adk._role_visible(role_name)
                     ELSE true END);
ALTER TABLE adk.budget_spend ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.budget_spend
    USING (EXISTS (SELECT 1 FROM adk.budgets b WHERE b.id OPERATOR(pg_catalog.=) budget_spend.budget_id));

CREATE VIEW adk.budget_usage WITH (security_invoker = true) AS
SELECT b.id AS budget_id, b.app_name, b.user_id, b.role_name, b.period,
       adk._budget_period_start(b.period, pg_catalog.now()) AS period_start,
       coalesce(s.tokens, 0) AS tokens, b.max_tokens,
       coalesce(s.model_calls, 0) AS model_calls, b.max_model_calls,
       (b.max_tokens IS NOT NULL AND coalesce(s.tokens, 0) OPERATOR(pg_catalog.>=) b.max_tokens)
       OR (b.max_model_calls IS NOT NULL
           AND coalesce(s.model_calls, 0) OPERATOR(pg_catalog.>=) b.max_model_calls) AS spent
  FROM adk.budgets b
  LEFT JOIN adk.budget_spend s
    ON s.budget_id OPERATOR(pg_catalog.=) b.id
   AND s.period_start OPERATOR(pg_catalog.=) adk._budget_period_start(b.period, pg_catalog.now());
COMMENT ON VIEW adk.budget_usage IS 'Each budget in its current period: tokens and model calls spent against the limits';

-- ---------------------------------------------------------------------
-- Costs: optional prices per model, USD (or any one currency) per million
-- tokens: {"input": 2.5, "output": 10, "cached_input": 1.25}.  Cached input
-- tokens (usage_metadata.cached_content_token_count) cost cached_input,
-- else input.
-- ---------------------------------------------------------------------

CREATE FUNCTION adk._check_price(price jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT price IS NULL
        OR (pg_catalog.jsonb_typeof(price) OPERATOR(pg_catalog.=) 'object'
            AND NOT EXISTS (SELECT 1 FROM pg_catalog.jsonb_each(price) e
                             WHERE e.key OPERATOR(pg_catalog.<>) ALL (ARRAY['input', 'output', 'cached_input'])
                                OR pg_catalog.jsonb_typeof(e.value) OPERATOR(pg_catalog.<>) 'number'
                                OR (e.value)::text::numeric OPERATOR(pg_catalog.<) 0))
$$;
ALTER TABLE adk.models ADD COLUMN price jsonb
    CONSTRAINT models_price_check CHECK (adk._check_price(price));
COMMENT ON COLUMN adk.models.price IS
    'Optional prices per million tokens: {"input", "output", "cached_input"} (non-negative numbers)';

CREATE VIEW adk.costs WITH (security_invoker = true) AS
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
COMMENT ON VIEW adk.costs IS
    'Model calls, tokens and cost (from adk.models.price; NULL without a price) per app and user (the session''s the call was made for; NULL for adk_generate), agent (the invocation''s), model and UTC day';

-- safe to read now that row-level security filters it
GRANT SELECT ON adk.compactions TO adk_user;
GRANT SELECT ON adk.budgets, adk.budget_spend, adk.budget_usage, adk.costs TO adk_user;
GRANT INSERT, UPDATE, DELETE ON adk.budgets TO adk_admin;
-- ---------------------------------------------------------------------
-- Row-level security on adk.spans (after 85_tenancy.sql, which defines
-- adk._tenant_visible): a span is its run's app and user's, like the
-- events and the model calls of the run.  The runner writes spans as the
-- owner; the exporter reads them as the bootstrap superuser.
-- ---------------------------------------------------------------------
ALTER TABLE adk.spans ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.spans
    USING (adk._tenant_visible(app_name, user_id)) WITH CHECK (adk._tenant_visible(app_name, user_id));
-- ---------------------------------------------------------------------
-- Session lifecycle: retention and erasure.  See docs/sessions-lifecycle.md.
--
-- Per app, adk.apps.session_idle_ttl (time since a session's last
-- activity, sessions.update_time, which every append moves) and
-- adk.apps.max_sessions_per_user (the newest N sessions of each user stay)
-- make sessions due; adk.apps.session_expiry says what expiry does
-- ('delete', or 'memory': add the session to the user's memory, then
-- delete it).  adk.sessions_due lists what is due; the launcher deletes it
-- in small batches (adk._retention_sweep), and never a session that a run
-- holds or that waits: a running or waiting invocation, a waiting run
-- state (an open interrupt), a queued or running job.
--
-- adk_purge_user erases one user of one app everywhere and returns what
-- it deleted, per table.
-- ---------------------------------------------------------------------

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

-- The paged readers run as the caller: these helpers are in 90_privileges.sql's
-- user_internals.
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
-- rewind event before the fork point rewinds (adk._rewound, ADK's rule:
-- 89_rewind.sql), whichever runtime wrote it.  Calls open at the fork point -- a function call no live
-- event answers, or a long-running call no user answered -- are left out
-- (their call and response parts; an event with nothing left goes), so
-- the fork never starts with a pending interrupt.  The copies keep their
-- ids, invocation ids, times and contents and get seq 1, 2, ...; they are
-- inserted with their seq, as a restore is, so the events trigger applies
-- no state delta again (the user's and the app's state are where they
-- are).  The state is the source's (no fork point), or its unprefixed
-- keys that no event ever set plus the last value each live event before
-- the fork point set.  The compactions of the copied range come along,
-- renumbered.  The session artifacts saved before the fork point come
-- as references (adk.artifacts.source_session_id), no byte copied; user:
-- artifacts are the user's and shared anyway.
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

    -- the live events before the fork point (89_rewind.sql: adk._rewound)
    SELECT coalesce(pg_catalog.array_agg(e.seq ORDER BY e.seq), '{}') INTO live
      FROM adk.events e
     WHERE e.app_name OPERATOR(pg_catalog.=) p_app AND e.user_id OPERATOR(pg_catalog.=) p_user
       AND e.session_id OPERATOR(pg_catalog.=) p_source AND e.seq OPERATOR(pg_catalog.<) cut
       AND NOT (adk._rewound(p_app, p_user, p_source, cut) OPERATOR(pg_catalog.@>) e.seq);

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

    -- the session artifacts as they were at the fork point (the versions
    -- saved before its first event; all of them without one), as
    -- references to the rows that hold their bytes: nothing is copied
    INSERT INTO adk.artifacts (app_name, user_id, session_id, filename, version, data, mime_type,
                               size, sha256, created_at, invocation_id, source_session_id)
    SELECT a.app_name, a.user_id, new_id, a.filename, a.version, '\x'::bytea, a.mime_type,
           a.size, a.sha256, a.created_at, a.invocation_id, coalesce(a.source_session_id, a.session_id)
      FROM adk.artifacts a
     WHERE a.app_name OPERATOR(pg_catalog.=) p_app AND a.user_id OPERATOR(pg_catalog.=) p_user
       AND a.session_id OPERATOR(pg_catalog.=) p_source
       AND (p_before IS NULL
            OR a.created_at OPERATOR(pg_catalog.<)
               (SELECT e."timestamp" FROM adk.events e
                 WHERE e.app_name OPERATOR(pg_catalog.=) p_app AND e.user_id OPERATOR(pg_catalog.=) p_user
                   AND e.session_id OPERATOR(pg_catalog.=) p_source AND e.seq OPERATOR(pg_catalog.=) cut));

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
-- ---------------------------------------------------------------------
-- Fallback models and the circuit breaker (docs/models.md, "Fallback
-- models").  A model's fallbacks are tried, in order, when its answer is
-- a failure its fallback_on option lists (429, 5xx and timeouts by
-- default), after its own retries; each attempt is a row of
-- adk.model_calls.  The breaker (shared memory, shared/breaker.c) skips a
-- model that failed adk.breaker_failures times within adk.breaker_window
-- for adk.breaker_cooldown.
-- ---------------------------------------------------------------------

-- Checked by the models' triggers (40_models.sql, 50_definitions.sql).
-- NULL, not an empty array, when there are none: no default to keep in
-- every backend's relation cache.
ALTER TABLE adk.models ADD COLUMN fallbacks text[];
COMMENT ON COLUMN adk.models.fallbacks IS
    'Models tried in order when this one fails with a failure its fallback_on option lists (default 429, 5xx, TIMEOUT); each fallback''s own fallbacks follow it (depth first, each model once); NULL: none';

ALTER TABLE adk.model_calls
    ADD COLUMN fallback_attempt integer NOT NULL DEFAULT 0,
    ADD COLUMN fallback_from    text;
COMMENT ON COLUMN adk.model_calls.fallback_attempt IS
    'Which model of the request''s fallback chain this row is: 0 the first one tried (the model called, unless its circuit breaker was open), 1 the next, ...';
COMMENT ON COLUMN adk.model_calls.fallback_from IS
    'The model this attempt fell back from (it failed, or its circuit breaker was open); NULL for the first attempt';

CREATE FUNCTION adk_define_fallbacks(model text, fallbacks text[])
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE adk.models m SET fallbacks = CASE WHEN cardinality($2) > 0 THEN $2 END WHERE m.name = $1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'model "%" does not exist', $1 USING ERRCODE = '42704',
            HINT = 'Define it first with adk_define_model().';
    END IF;
END
$$;
COMMENT ON FUNCTION adk_define_fallbacks(text, text[]) IS
    'Set the models a model falls back to, in order (an empty array: none); adk_admin.';

-- The circuit breakers of the models, from shared memory (only with
-- shared_preload_libraries = 'adk_runner').
CREATE FUNCTION adk._model_breakers(OUT model text, OUT state text, OUT failures integer,
                                    OUT window_start timestamptz, OUT open_until timestamptz,
                                    OUT times_opened bigint, OUT last_failure timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'adk_model_breakers' LANGUAGE C STRICT VOLATILE;
CREATE VIEW adk.model_breakers AS
SELECT b.model, b.state, b.failures, b.window_start, b.open_until, b.times_opened, b.last_failure
  FROM adk._model_breakers() b;
COMMENT ON VIEW adk.model_breakers IS
    'Per model its circuit breaker (shared by every backend and worker): closed, open (skipped until open_until) or half_open (the next request tries it); failures counted in the current window of adk.breaker_window';
GRANT SELECT ON adk.model_breakers TO adk_user;
-- ---------------------------------------------------------------------
-- Prompt caching (docs/models.md, "Prompt caching").  An app whose
-- context_cache is {"enabled": true} has its agents' requests cached:
-- Anthropic's cache_control breakpoints, OpenAI's prompt_cache_key, and
-- Gemini's implicit caching counted (model/prompt_cache.c).  The ledger
-- keeps the tokens read from the cache (cached_tokens, 84_spans.sql) and
-- written to it (cache_creation_tokens); adk.costs prices them
-- (cached_input, cache_write) and adk.stat_cache shows the hit rate per
-- app.
-- ---------------------------------------------------------------------

ALTER TABLE adk.apps ADD COLUMN context_cache jsonb;
COMMENT ON COLUMN adk.apps.context_cache IS
    'Prompt caching: {"enabled": true} caches the prompts of the app''s agents; NULL or {"enabled": false}: off';

-- Checked when the app is defined: an object of known keys
CREATE FUNCTION adk._apps_check_context_cache() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    bad text;
BEGIN
    IF NEW.context_cache IS NULL THEN
        RETURN NEW;
    END IF;
    IF jsonb_typeof(NEW.context_cache) <> 'object' THEN
        RAISE EXCEPTION 'context_cache of app "%" must be a JSON object, or NULL for none', NEW.name
            USING ERRCODE = '22023', HINT = 'Use {"enabled": true}.';
    END IF;
    SELECT k INTO bad FROM jsonb_object_keys(NEW.context_cache) k
     WHERE k <> ALL (ARRAY['enabled']) ORDER BY k LIMIT 1;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'context_cache of app "%" has an unknown key "%"', NEW.name, bad
            USING ERRCODE = '22023', HINT = 'The only key is "enabled".';
    END IF;
    IF jsonb_typeof(NEW.context_cache -> 'enabled') IS DISTINCT FROM 'boolean' THEN
        RAISE EXCEPTION 'context_cache of app "%" needs "enabled": true or false', NEW.name
            USING ERRCODE = '22023';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER adk_apps_check_context_cache
    BEFORE INSERT OR UPDATE OF context_cache ON adk.apps
    FOR EACH ROW EXECUTE FUNCTION adk._apps_check_context_cache();

DROP FUNCTION adk_define_app(text, text, boolean, text[], integer, jsonb, boolean, text);
CREATE FUNCTION adk_define_app(name text, root_agent text,
                               auto_create_session boolean DEFAULT true,
                               plugins text[] DEFAULT '{}',
                               max_llm_calls integer DEFAULT 500,
                               compaction jsonb DEFAULT NULL,
                               save_input_blobs_as_artifacts boolean DEFAULT false,
                               tenancy text DEFAULT 'shared',
                               context_cache jsonb DEFAULT NULL)
RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO adk.apps AS a (name, root_agent, auto_create_session, plugins, max_llm_calls,
                               compaction, save_input_blobs_as_artifacts, tenancy, context_cache)
    VALUES ($1, $2, coalesce($3, true), coalesce($4, '{}'),
            coalesce($5, 500), $6, coalesce($7, false),
            coalesce($8, 'shared'), $9)
    ON CONFLICT ON CONSTRAINT apps_pkey DO UPDATE
       SET root_agent = EXCLUDED.root_agent, auto_create_session = EXCLUDED.auto_create_session,
           plugins = EXCLUDED.plugins, max_llm_calls = EXCLUDED.max_llm_calls,
           compaction = EXCLUDED.compaction,
           save_input_blobs_as_artifacts = EXCLUDED.save_input_blobs_as_artifacts,
           tenancy = EXCLUDED.tenancy,
           context_cache = EXCLUDED.context_cache
$$;
COMMENT ON FUNCTION adk_define_app(text, text, boolean, text[], integer, jsonb, boolean, text, jsonb) IS
    'Create or replace an app: its root agent (the whole tree under it is checked), auto_create_session, plugins in call order, max_llm_calls per run, compaction (NULL = off), save_input_blobs_as_artifacts, tenancy (''shared'', ''role'' or ''claim''), context_cache (prompt caching: {"enabled": true}; NULL = off).';

ALTER TABLE adk.model_calls ADD COLUMN cache_creation_tokens bigint;
COMMENT ON COLUMN adk.model_calls.cache_creation_tokens IS
    'Input tokens the provider wrote to its prompt cache (Anthropic''s cache_creation_input_tokens; part of input_tokens); NULL: none reported';

-- Prices (85_tenancy.sql): cache_write, per million tokens written to the
-- cache; of the input tokens, those read from the cache cost cached_input
-- and those written cache_write (each input when not set).
CREATE OR REPLACE FUNCTION adk._check_price(price jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT price IS NULL
        OR (pg_catalog.jsonb_typeof(price) OPERATOR(pg_catalog.=) 'object'
            AND NOT EXISTS (SELECT 1 FROM pg_catalog.jsonb_each(price) e
                             WHERE e.key OPERATOR(pg_catalog.<>) ALL (ARRAY['input', 'output', 'cached_input', 'cache_write'])
                                OR pg_catalog.jsonb_typeof(e.value) OPERATOR(pg_catalog.<>) 'number'
                                OR (e.value)::text::numeric OPERATOR(pg_catalog.<) 0))
$$;
COMMENT ON COLUMN adk.models.price IS
    'Optional prices per million tokens: {"input", "output", "cached_input", "cache_write"} (non-negative numbers; cached_input and cache_write default to input)';

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
       pg_catalog.round(pg_catalog.sum(((coalesce(c.input_tokens, 0) OPERATOR(pg_catalog.-) x.cached
                                         OPERATOR(pg_catalog.-) x.written)
                       OPERATOR(pg_catalog.*) (m.price ->> 'input')::numeric)
                      OPERATOR(pg_catalog.+)
                      (x.cached OPERATOR(pg_catalog.*)
                       coalesce(m.price ->> 'cached_input', m.price ->> 'input')::numeric)
                      OPERATOR(pg_catalog.+)
                      (x.written OPERATOR(pg_catalog.*)
                       coalesce(m.price ->> 'cache_write', m.price ->> 'input')::numeric)
                      OPERATOR(pg_catalog.+)
                      (coalesce(c.output_tokens, 0) OPERATOR(pg_catalog.*) (m.price ->> 'output')::numeric))
           OPERATOR(pg_catalog./) 1000000, 6) AS cost,
       pg_catalog.sum(x.written) AS cache_creation_tokens
  FROM adk.model_calls c
  LEFT JOIN adk.invocations i ON i.invocation_id OPERATOR(pg_catalog.=) c.invocation_id
  LEFT JOIN adk.models m ON m.name OPERATOR(pg_catalog.=) c.model
 CROSS JOIN LATERAL (SELECT coalesce(c.cached_tokens,
                                     (c.response #>> '{usage_metadata,cached_content_token_count}')::bigint, 0)
                            AS cached,
                            coalesce(c.cache_creation_tokens, 0) AS written) x
 GROUP BY 1, 2, 3, 4, 5;
COMMENT ON VIEW adk.costs IS
    'Model calls, tokens and cost (from adk.models.price; NULL without a price) per app and user (the session''s the call was made for; NULL for adk_generate), agent (the invocation''s), model and UTC day; of the input tokens, cached_input_tokens were read from the prompt cache and cache_creation_tokens written to it';

-- The hit rate per app, as adk.stat_models counts (84_spans.sql): since
-- adk_stat_reset(), the calling role's rows (row-level security).
CREATE VIEW adk.stat_cache WITH (security_invoker = true) AS
SELECT m.app_name,
       pg_catalog.count(*) AS calls,
       pg_catalog.count(*) FILTER (WHERE m.cached_tokens OPERATOR(pg_catalog.>) 0) AS cached_calls,
       coalesce(pg_catalog.sum(m.input_tokens), 0)::bigint AS input_tokens,
       coalesce(pg_catalog.sum(m.cached_tokens), 0)::bigint AS cached_tokens,
       coalesce(pg_catalog.sum(m.cache_creation_tokens), 0)::bigint AS cache_creation_tokens,
       pg_catalog.round(coalesce(pg_catalog.sum(m.cached_tokens), 0)::numeric
                        OPERATOR(pg_catalog./)
                        NULLIF(coalesce(pg_catalog.sum(m.input_tokens), 0), 0), 4) AS hit_rate,
       (SELECT r.reset_at FROM adk.stat_reset r) AS stats_reset
  FROM adk.model_calls m
 WHERE m.created_at OPERATOR(pg_catalog.>=) (SELECT r.reset_at FROM adk.stat_reset r)
 GROUP BY m.app_name;
COMMENT ON VIEW adk.stat_cache IS 'Per app (NULL: adk_generate): calls, input tokens, those read from the prompt cache (cached_tokens) and written to it, and the hit rate (cached_tokens / input_tokens) since adk_stat_reset(), from adk.model_calls.';
GRANT SELECT ON adk.stat_cache TO adk_user;
COMMENT ON FUNCTION adk_stat_reset() IS 'Start adk.stat_models, adk.stat_tools and adk.stat_cache counting from now (adk_admin).';
-- ---------------------------------------------------------------------
-- adk_session_mermaid: a session as a Mermaid sequence diagram
-- (docs/sessions-lifecycle.md, "A session as a picture").
--
-- The user, the agents (events' authors) and the tools they call are the
-- participants, in the order they first appear.  Each event becomes
-- arrows and notes: a message, a call, a response, a transfer, a pause
-- (a long-running call or a confirmation asked), an answer, an error, a
-- compaction, a rewind.  A model's answer gets a note with its model,
-- latency and tokens from the ledger (adk.model_calls): the row of the
-- same invocation whose response carried the same content, in order --
-- an answer a plugin rewrote has no note.  Text is flattened to one line,
-- cut to 60 characters, and has Mermaid's special characters written as
-- entity codes.  It reads as the caller: row-level security applies to
-- the events and the ledger, and a session the caller cannot see does not
-- exist.
-- ---------------------------------------------------------------------
CREATE FUNCTION adk._mermaid_text(t text, max_chars integer DEFAULT 60)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(pg_catalog.string_agg(CASE c WHEN '#' THEN '#35;' WHEN ';' THEN '#59;'
                                                 WHEN '<' THEN '#60;' WHEN '>' THEN '#62;'
                                                 WHEN '%' THEN '#37;' ELSE c END, '' ORDER BY i), '')
      FROM (SELECT pg_catalog.btrim(pg_catalog.regexp_replace(coalesce(t, ''), '\s+', ' ', 'g')) AS flat) x,
           LATERAL pg_catalog.regexp_split_to_table(
               CASE WHEN pg_catalog.length(x.flat) OPERATOR(pg_catalog.>) max_chars
                    THEN pg_catalog.left(x.flat, max_chars OPERATOR(pg_catalog.-) 1) OPERATOR(pg_catalog.||) '…'
                    ELSE x.flat END, '') WITH ORDINALITY AS ch(c, i)
$$;

-- A participant: its alias in alias (u for the user, p1, p2, ... for the
-- rest, in order), its declaration added to decl the first time.
CREATE FUNCTION adk._mermaid_who(INOUT alias jsonb, INOUT decl text[], who text)
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NOT alias ? who THEN
        alias := alias OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object(who,
                     CASE WHEN who OPERATOR(pg_catalog.=) 'user' THEN 'u'
                          ELSE 'p' OPERATOR(pg_catalog.||) pg_catalog.cardinality(decl) END);
        decl := decl OPERATOR(pg_catalog.||)
                pg_catalog.format('participant %s as %s', alias ->> who, adk._mermaid_text(who));
    END IF;
END
$$;

CREATE FUNCTION adk_session_mermaid(app_name text, user_id text, session_id text,
                                    from_seq bigint DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    ev record;
    p jsonb;
    alias jsonb := '{}';          -- participant -> its alias (adk._mermaid_who)
    decl text[] := '{}';          -- the participant lines, in order
    body text[] := '{}';
    agent text;                   -- the agent a user event speaks to
    last_agent text;
    who text;
    target text;
    paused jsonb;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM adk.sessions s
                    WHERE s.app_name OPERATOR(pg_catalog.=) $1
                      AND s.user_id OPERATOR(pg_catalog.=) $2
                      AND s.id OPERATOR(pg_catalog.=) $3) THEN
        PERFORM adk._session_not_found($1, $2, $3);
    END IF;
    FOR ev IN
        SELECT e.seq, e.invocation_id, e.event_data AS d, e.event_data ->> 'author' AS author,
               e.next_author AS next_agent,
               c.model, c.latency_ms, c.input_tokens, c.output_tokens
          FROM (SELECT x.*, pg_catalog.row_number() OVER (
                              PARTITION BY x.invocation_id, x.event_data -> 'content' ORDER BY x.seq) AS nth,
                       -- who speaks next in the invocation (a user event's addressee)
                       pg_catalog.lead(x.event_data ->> 'author') OVER (
                              PARTITION BY x.invocation_id ORDER BY x.seq) AS next_author
                  FROM adk.events x
                 WHERE x.app_name OPERATOR(pg_catalog.=) $1
                   AND x.user_id OPERATOR(pg_catalog.=) $2
                   AND x.session_id OPERATOR(pg_catalog.=) $3) e
          LEFT JOIN (SELECT m.*, pg_catalog.row_number() OVER (
                              PARTITION BY m.invocation_id, m.response -> 'content' ORDER BY m.id) AS nth
                       FROM adk.model_calls m
                      WHERE m.app_name OPERATOR(pg_catalog.=) $1
                        AND m.user_id OPERATOR(pg_catalog.=) $2
                        AND m.error_code IS NULL
                        AND m.response ? 'content') c
            ON (e.event_data ->> 'author') OPERATOR(pg_catalog.<>) 'user'
           AND c.invocation_id OPERATOR(pg_catalog.=) e.invocation_id
           AND (c.response -> 'content') OPERATOR(pg_catalog.=) (e.event_data -> 'content')
           AND c.nth OPERATOR(pg_catalog.=) e.nth
         WHERE e.seq OPERATOR(pg_catalog.>=) coalesce($4, 0)
         ORDER BY e.seq
    LOOP
        -- the speakers: the user, then agents and tools as they appear
        SELECT * INTO alias, decl FROM adk._mermaid_who(alias, decl, 'user');
        IF ev.author OPERATOR(pg_catalog.<>) 'user' THEN
            last_agent := ev.author;
        END IF;
        agent := coalesce(CASE WHEN ev.author OPERATOR(pg_catalog.<>) 'user' THEN ev.author END,
                          nullif(ev.next_agent, 'user'), last_agent, 'agent');
        SELECT * INTO alias, decl FROM adk._mermaid_who(alias, decl, agent);
        paused := coalesce(ev.d -> 'long_running_tool_ids', '[]');

        IF ev.d -> 'actions' ? 'compaction' THEN
            body := body OPERATOR(pg_catalog.||) pg_catalog.format('Note over u,%s: compaction: %s', alias ->> agent,
                        adk._mermaid_text(ev.d #>> '{actions,compaction,compacted_content,parts,0,text}'));
        END IF;
        IF (ev.d #>> '{actions,rewind_before_invocation_id}') IS NOT NULL THEN
            body := body OPERATOR(pg_catalog.||) pg_catalog.format('Note over u,%s: rewind before invocation %s', alias ->> agent,
                        adk._mermaid_text(ev.d #>> '{actions,rewind_before_invocation_id}'));
        END IF;

        FOR p IN SELECT x FROM adk._parts(ev.d -> 'content') x LOOP
            IF p ? 'text' AND NOT coalesce((p ->> 'thought')::boolean, false) THEN
                IF ev.author OPERATOR(pg_catalog.=) 'user' THEN
                    body := body OPERATOR(pg_catalog.||) pg_catalog.format('u->>%s: %s', alias ->> agent, adk._mermaid_text(p ->> 'text'));
                ELSE
                    body := body OPERATOR(pg_catalog.||) pg_catalog.format('%s->>u: %s', alias ->> agent, adk._mermaid_text(p ->> 'text'));
                END IF;
            ELSIF p ? 'function_call' THEN
                who := p #>> '{function_call,name}';
                IF who OPERATOR(pg_catalog.=) 'transfer_to_agent' THEN
                    target := p #>> '{function_call,args,agent_name}';
                    SELECT * INTO alias, decl FROM adk._mermaid_who(alias, decl, target);
                    body := body OPERATOR(pg_catalog.||) pg_catalog.format('%s->>%s: transfer', alias ->> agent, alias ->> target);
                ELSIF who OPERATOR(pg_catalog.=) ANY (ARRAY['adk_request_confirmation', 'adk_request_credential']) THEN
                    body := body OPERATOR(pg_catalog.||) pg_catalog.format('%s->>u: %s %s', alias ->> agent,
                                CASE who WHEN 'adk_request_confirmation' THEN 'asks to confirm' ELSE 'asks for a credential for' END,
                                adk._mermaid_text(p #>> '{function_call,args,originalFunctionCall,name}'));
                    body := body OPERATOR(pg_catalog.||) pg_catalog.format('Note over %s: paused', alias ->> agent);
                ELSE
                    SELECT * INTO alias, decl FROM adk._mermaid_who(alias, decl, 'tool ' OPERATOR(pg_catalog.||) who);
                    body := body OPERATOR(pg_catalog.||) pg_catalog.format('%s->>%s: %s', alias ->> agent,
                                alias ->> ('tool ' OPERATOR(pg_catalog.||) who),
                                adk._mermaid_text(pg_catalog.format('%s(%s)', who, coalesce(p #> '{function_call,args}', '{}'))));
                    IF paused ? (p #>> '{function_call,id}') THEN
                        body := body OPERATOR(pg_catalog.||) pg_catalog.format('Note over %s: paused: %s runs long', alias ->> agent, adk._mermaid_text(who));
                    END IF;
                END IF;
            ELSIF p ? 'function_response' THEN
                who := p #>> '{function_response,name}';
                IF who OPERATOR(pg_catalog.=) 'transfer_to_agent' THEN
                    CONTINUE;
                ELSIF ev.author OPERATOR(pg_catalog.=) 'user' THEN
                    body := body OPERATOR(pg_catalog.||) pg_catalog.format('u-->>%s: answers %s: %s', alias ->> agent, adk._mermaid_text(who),
                                adk._mermaid_text(coalesce(p #> '{function_response,response}', '{}')::text));
                ELSE
                    SELECT * INTO alias, decl FROM adk._mermaid_who(alias, decl, 'tool ' OPERATOR(pg_catalog.||) who);
                    body := body OPERATOR(pg_catalog.||) pg_catalog.format('%s-->>%s: %s', alias ->> ('tool ' OPERATOR(pg_catalog.||) who),
                                alias ->> agent, adk._mermaid_text(coalesce(p #> '{function_response,response}', '{}')::text));
                END IF;
            END IF;
        END LOOP;
        IF ev.d ? 'error_code' OR ev.d ? 'error_message' THEN
            body := body OPERATOR(pg_catalog.||) pg_catalog.format('Note over %s: error %s', alias ->> agent,
                        adk._mermaid_text(pg_catalog.concat_ws(': ', ev.d ->> 'error_code', ev.d ->> 'error_message')));
        END IF;
        IF ev.model IS NOT NULL THEN
            body := body OPERATOR(pg_catalog.||) pg_catalog.format('Note right of %s: %s, %s ms, %s in, %s out', alias ->> agent,
                        adk._mermaid_text(ev.model), pg_catalog.round(ev.latency_ms::numeric),
                        coalesce(ev.input_tokens::text, '?'), coalesce(ev.output_tokens::text, '?'));
        END IF;
    END LOOP;
    RETURN pg_catalog.array_to_string(ARRAY['sequenceDiagram'] OPERATOR(pg_catalog.||)
               (SELECT pg_catalog.array_agg('    ' OPERATOR(pg_catalog.||) l) FROM pg_catalog.unnest(decl OPERATOR(pg_catalog.||) body) l),
           E'\n');
END
$$;
COMMENT ON FUNCTION adk_session_mermaid(text, text, text, bigint) IS
    'The session (from seq from_seq on) as a Mermaid sequence diagram: participants user, agents and tools; messages, calls, responses, transfers, pauses, answers, errors, compactions and rewinds; model latency and tokens from the ledger.';
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
-- ---------------------------------------------------------------------
-- Structured output (docs/models.md, "Structured output").  A chat or
-- single_turn agent's output_schema is the shape of its answer: asked for
-- natively where the model can (runner/output_schema.c), through ADK's
-- set_model_response tool where adk.models.capabilities says it cannot
-- combine a schema with tools.  adk_json_schema derives such a schema
-- from a composite type, so that the answer goes into a table with
-- jsonb_populate_record.
-- ---------------------------------------------------------------------

-- What a model can do, where it differs from its provider's default
-- (model/model_def.c).  Unset keys take the default.
ALTER TABLE adk.models ADD COLUMN capabilities jsonb NOT NULL DEFAULT '{}'
    CHECK (jsonb_typeof(capabilities) = 'object');
COMMENT ON COLUMN adk.models.capabilities IS
    'What the model can do where it differs from its provider''s default: output_schema_with_tools (boolean; default true for openai, false for gemini and anthropic) -- whether a structured output schema is sent natively to an agent with tools, or through set_model_response';

-- Every INSERT/UPDATE of capabilities is checked here, whoever writes it.
CREATE FUNCTION adk._models_check_capabilities() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    k text;
    v jsonb;
BEGIN
    IF NEW.capabilities IS NULL OR jsonb_typeof(NEW.capabilities) <> 'object' THEN
        RAISE EXCEPTION 'capabilities of model "%" must be a JSON object', NEW.name USING ERRCODE = '22023',
            HINT = 'For example {"output_schema_with_tools": false}.';
    END IF;
    FOR k, v IN SELECT * FROM jsonb_each(NEW.capabilities) LOOP
        IF k <> 'output_schema_with_tools' THEN
            RAISE EXCEPTION 'unknown capability "%" of model "%"', k, NEW.name USING ERRCODE = '22023',
                HINT = 'The capability a model can set is output_schema_with_tools.';
        END IF;
        IF jsonb_typeof(v) <> 'boolean' THEN
            RAISE EXCEPTION 'capability "%" of model "%" must be true or false', k, NEW.name USING ERRCODE = '22023',
                DETAIL = format('It is %s.', v);
        END IF;
    END LOOP;
    RETURN NEW;
END
$$;
CREATE TRIGGER adk_models_check_capabilities
    BEFORE INSERT OR UPDATE OF capabilities ON adk.models
    FOR EACH ROW EXECUTE FUNCTION adk._models_check_capabilities();

CREATE FUNCTION adk_define_capabilities(model text, capabilities jsonb)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE adk.models m SET capabilities = coalesce($2, '{}') WHERE m.name = $1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'model "%" does not exist', $1 USING ERRCODE = '42704',
            HINT = 'Define it first with adk_define_model().';
    END IF;
END
$$;
COMMENT ON FUNCTION adk_define_capabilities(text, jsonb) IS
    'Set what a model can do where it differs from its provider''s default, e.g. {"output_schema_with_tools": false} (NULL or {}: the defaults); adk_admin.';

-- A JSON Schema of a composite type's rows, as an agent's output_schema:
-- every attribute a required property, no others (OpenAI's strict
-- structured outputs ask for both), of a type jsonb_populate_record reads
-- back.  Types it cannot map are refused.
CREATE FUNCTION adk._json_schema(type regtype) RETURNS jsonb
LANGUAGE plpgsql STABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    t pg_catalog.pg_type;
    props jsonb := '{}';
    names text[] := '{}';
    a record;
BEGIN
    SELECT * INTO t FROM pg_catalog.pg_type WHERE oid = type;
    WHILE t.typtype = 'd' LOOP
        SELECT * INTO t FROM pg_catalog.pg_type WHERE oid = t.typbasetype;
    END LOOP;
    IF t.typtype = 'c' THEN
        FOR a IN SELECT at.attname::text AS name, at.atttypid
                   FROM pg_catalog.pg_attribute at
                  WHERE at.attrelid = t.typrelid AND at.attnum > 0 AND NOT at.attisdropped
                  ORDER BY at.attnum LOOP
            props := props || jsonb_build_object(a.name, adk._json_schema(a.atttypid::regtype));
            names := names || a.name;
        END LOOP;
        IF cardinality(names) = 0 THEN
            RAISE EXCEPTION 'composite type % has no attributes', type USING ERRCODE = '22023';
        END IF;
        RETURN jsonb_build_object('type', 'object', 'properties', props,
                                  'required', to_jsonb(names), 'additionalProperties', false);
    ELSIF t.typtype = 'e' THEN
        RETURN jsonb_build_object('type', 'string', 'enum',
            (SELECT jsonb_agg(e.enumlabel ORDER BY e.enumsortorder)
               FROM pg_catalog.pg_enum e WHERE e.enumtypid = t.oid));
    ELSIF t.typcategory = 'A' AND t.typelem <> 0 THEN
        RETURN jsonb_build_object('type', 'array', 'items', adk._json_schema(t.typelem::regtype));
    ELSIF t.oid IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype) THEN
        RETURN '{"type": "integer"}';
    ELSIF t.oid IN ('numeric'::regtype, 'float4'::regtype, 'float8'::regtype) THEN
        RETURN '{"type": "number"}';
    ELSIF t.oid = 'bool'::regtype THEN
        RETURN '{"type": "boolean"}';
    ELSIF t.oid IN ('text'::regtype, 'varchar'::regtype, 'bpchar'::regtype, 'name'::regtype) THEN
        RETURN '{"type": "string"}';
    ELSIF t.oid IN ('json'::regtype, 'jsonb'::regtype) THEN
        RETURN '{"type": "object"}';
    ELSIF t.oid = 'uuid'::regtype THEN
        RETURN '{"type": "string", "format": "uuid"}';
    ELSIF t.oid = 'date'::regtype THEN
        RETURN '{"type": "string", "format": "date"}';
    ELSIF t.oid IN ('timestamp'::regtype, 'timestamptz'::regtype) THEN
        RETURN '{"type": "string", "format": "date-time"}';
    ELSIF t.oid IS NULL OR t.typtype = 'p' THEN
        RAISE EXCEPTION 'type % cannot be an output schema', type USING ERRCODE = '22023',
            HINT = 'Give a composite type, e.g. ''app.ticket''::regtype made with CREATE TYPE app.ticket AS (...).';
    ELSE
        RAISE EXCEPTION 'type % has no JSON Schema', type::text USING ERRCODE = '0A000',
            DETAIL = 'adk_json_schema maps text, varchar, char, name, integer, numeric and floating-point types, boolean, json, jsonb, uuid, date, timestamp, enums, domains over these, arrays and composite types.',
            HINT = 'Use one of those types for the attribute, or write the JSON Schema yourself.';
    END IF;
END
$$;
CREATE FUNCTION adk_json_schema(type regtype) RETURNS jsonb
LANGUAGE sql STABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
    SELECT adk._json_schema($1)
$$;
COMMENT ON FUNCTION adk_json_schema(regtype) IS
    'The JSON Schema of a type''s values (a composite type: an object with every attribute a required property, no others), for output_schema: the answer then goes into a table with jsonb_populate_record.';
-- ---------------------------------------------------------------------
-- Thinking (docs/models.md, "Thinking").  A model's options or an
-- agent's generate_config may set "thinking" (checked by
-- adk._check_thinking, 40_models.sql); the adapters map it to each
-- provider's own (model/llm_thinking.c).  The ledger keeps the tokens a
-- call spent reasoning (reasoning_tokens, part of output_tokens), and
-- adk.costs prices them as output unless the model's price sets
-- "reasoning".
-- ---------------------------------------------------------------------

ALTER TABLE adk.model_calls ADD COLUMN reasoning_tokens bigint;
COMMENT ON COLUMN adk.model_calls.reasoning_tokens IS
    'Output tokens the model spent reasoning (OpenAI''s completion_tokens_details.reasoning_tokens, Gemini''s thoughtsTokenCount; part of output_tokens); NULL: none reported (Anthropic counts thinking in output_tokens only)';

-- Prices: reasoning, per million reasoning tokens (output when not set)
CREATE OR REPLACE FUNCTION adk._check_price(price jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT price IS NULL
        OR (pg_catalog.jsonb_typeof(price) OPERATOR(pg_catalog.=) 'object'
            AND NOT EXISTS (SELECT 1 FROM pg_catalog.jsonb_each(price) e
                             WHERE e.key OPERATOR(pg_catalog.<>) ALL (ARRAY['input', 'output', 'cached_input', 'cache_write', 'reasoning'])
                                OR pg_catalog.jsonb_typeof(e.value) OPERATOR(pg_catalog.<>) 'number'
                                OR (e.value)::text::numeric OPERATOR(pg_catalog.<) 0))
$$;
COMMENT ON COLUMN adk.models.price IS
    'Optional prices per million tokens: {"input", "output", "cached_input", "cache_write", "reasoning"} (non-negative numbers; cached_input and cache_write default to input, reasoning to output)';

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
       pg_catalog.round(pg_catalog.sum(((coalesce(c.input_tokens, 0) OPERATOR(pg_catalog.-) x.cached
                                         OPERATOR(pg_catalog.-) x.written)
                       OPERATOR(pg_catalog.*) (m.price ->> 'input')::numeric)
                      OPERATOR(pg_catalog.+)
                      (x.cached OPERATOR(pg_catalog.*)
                       coalesce(m.price ->> 'cached_input', m.price ->> 'input')::numeric)
                      OPERATOR(pg_catalog.+)
                      (x.written OPERATOR(pg_catalog.*)
                       coalesce(m.price ->> 'cache_write', m.price ->> 'input')::numeric)
                      OPERATOR(pg_catalog.+)
                      ((coalesce(c.output_tokens, 0) OPERATOR(pg_catalog.-) x.reasoning)
                       OPERATOR(pg_catalog.*) (m.price ->> 'output')::numeric)
                      OPERATOR(pg_catalog.+)
                      (x.reasoning OPERATOR(pg_catalog.*)
                       coalesce(m.price ->> 'reasoning', m.price ->> 'output')::numeric))
           OPERATOR(pg_catalog./) 1000000, 6) AS cost,
       pg_catalog.sum(x.written) AS cache_creation_tokens,
       pg_catalog.sum(x.reasoning) AS reasoning_tokens
  FROM adk.model_calls c
  LEFT JOIN adk.invocations i ON i.invocation_id OPERATOR(pg_catalog.=) c.invocation_id
  LEFT JOIN adk.models m ON m.name OPERATOR(pg_catalog.=) c.model
 CROSS JOIN LATERAL (SELECT coalesce(c.cached_tokens,
                                     (c.response #>> '{usage_metadata,cached_content_token_count}')::bigint, 0)
                            AS cached,
                            coalesce(c.cache_creation_tokens, 0) AS written,
                            coalesce(c.reasoning_tokens, 0) AS reasoning) x
 GROUP BY 1, 2, 3, 4, 5;
COMMENT ON VIEW adk.costs IS
    'Model calls, tokens and cost (from adk.models.price; NULL without a price) per app and user (the session''s the call was made for; NULL for adk_generate), agent (the invocation''s), model and UTC day; of the input tokens, cached_input_tokens were read from the prompt cache and cache_creation_tokens written to it; of the output tokens, reasoning_tokens were spent reasoning (priced at "reasoning", else "output")';
-- ---------------------------------------------------------------------
-- The statements every turn runs (src/store/append.c, event_trigger.c,
-- session_read.c, src/model/ledger.c): an event's append and its place
-- in the session (with its app: and user: states), the session's row
-- lock and the queued run holding it,
-- its history and its recent authors, and the model-call ledger's row.
--
-- Each is a LANGUAGE sql function of one statement that refers to its
-- arguments as $1, $2, ...  The C code does not call it: the helper in
-- src/common/spi_plans.c (adk_spi_call) prepares the function's body once
-- per backend as a kept plan, with the function's argument types, and
-- runs that plan -- as the statement used to be run from a string in C.
-- A call of the function would cost a GUC nest level and a search_path
-- computation for its SET clause, and on PostgreSQL 15 a parse and a plan
-- of its body at every execution of the statement that calls it
-- (docs/internals/statements.md has the figures).  What the SET clause
-- gives a call the helper checks instead: it takes only a LANGUAGE sql
-- function that is not SECURITY DEFINER and whose only setting is
-- search_path = pg_catalog, pg_temp, and runs its body only while that is
-- the search_path in effect (the owner's bracket, common/owner.c, or the
-- events trigger's pin).  A replaced or altered function is prepared
-- again.  Every name and operator is schema-qualified all the same.
--
-- Nobody but the owner of schema adk may call them (90_privileges.sql); a
-- call by the owner runs the same statement, with its own SET clause.
-- ---------------------------------------------------------------------

-- adk_append_event's statement: bump the session row (seq, time at least
-- 1 ms past its last event, update_time, the session-scope delta $5) and
-- insert the event row there, with event_data's "timestamp" the time it
-- got.  $1-$3 app, user, session; $4 the proposed time; $6 event id; $7
-- invocation id; $8 event_data.  No row without the session.  The events
-- trigger lets exactly this row through (adk_store_append marks it; the
-- owner's own call is a restored row to it); the app: and user: scopes and
-- what the event derives are adk_store_append's.
CREATE FUNCTION adk._append_event_row(text, text, text, timestamptz, jsonb, text, text, jsonb,
                                      OUT r_seq bigint, OUT r_timestamp timestamptz,
                                      OUT r_event_data jsonb)
RETURNS SETOF record
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
WITH s AS (
  UPDATE adk.sessions_p0 AS s
     SET last_seq = s.last_seq OPERATOR(pg_catalog.+) 1,
         last_event_time = adk._next_event_time(s.last_event_time, $4),
         update_time = GREATEST(s.update_time,
             adk._next_event_time(s.last_event_time, $4)),
         state = CASE WHEN $5 IS NULL THEN s.state
                      ELSE s.state OPERATOR(pg_catalog.||) $5 END
   WHERE s.app_name OPERATOR(pg_catalog.=) $1
     AND s.user_id OPERATOR(pg_catalog.=) $2
     AND s.id OPERATOR(pg_catalog.=) $3
  RETURNING s.last_seq, s.last_event_time)
INSERT INTO adk.events_p0
       (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data, seq)
SELECT $6, $1, $2, $3, $7, s.last_event_time,
       adk._event_at($8, s.last_event_time), s.last_seq FROM s
RETURNING seq, "timestamp", event_data
$$;

-- The events trigger's session bump, for any other writer's row: lock and
-- bump the session row; returns the event's seq and time.  $1-$3 app,
-- user, session; $4 the proposed time, truncated to whole milliseconds;
-- $5 the session-scope delta or NULL.  Built-in operators only, so a
-- writer with the tables' privileges (ADK-JS's role) needs no EXECUTE on
-- ours; the trigger runs it as that writer.
CREATE FUNCTION adk._place_event_bump(text, text, text, timestamptz, jsonb,
                                      OUT r_seq bigint, OUT r_timestamp timestamptz)
RETURNS SETOF record
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
UPDATE adk.sessions_p0 AS s
   SET last_seq = s.last_seq OPERATOR(pg_catalog.+) 1,
       last_event_time = GREATEST($4, s.last_event_time
           OPERATOR(pg_catalog.+) '1 ms'::pg_catalog.interval),
       update_time = GREATEST(s.update_time, $4, s.last_event_time
           OPERATOR(pg_catalog.+) '1 ms'::pg_catalog.interval),
       state = CASE WHEN $5 IS NULL THEN s.state
                    ELSE s.state OPERATOR(pg_catalog.||) $5 END
 WHERE s.app_name OPERATOR(pg_catalog.=) $1
   AND s.user_id OPERATOR(pg_catalog.=) $2
   AND s.id OPERATOR(pg_catalog.=) $3
RETURNING s.last_seq, s.last_event_time
$$;

-- The same on a Citus shard of adk.events: with the IMMUTABLE
-- adk._next_event_time instead of timestamptz + interval, which Citus
-- refuses on a column in an UPDATE.  They compute the same.
CREATE FUNCTION adk._place_event_bump_shard(text, text, text, timestamptz, jsonb,
                                            OUT r_seq bigint, OUT r_timestamp timestamptz)
RETURNS SETOF record
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
UPDATE adk.sessions_p0 AS s
   SET last_seq = s.last_seq OPERATOR(pg_catalog.+) 1,
       last_event_time = adk._next_event_time(s.last_event_time, $4),
       update_time = GREATEST(s.update_time, adk._next_event_time(s.last_event_time, $4)),
       state = CASE WHEN $5 IS NULL THEN s.state
                    ELSE s.state OPERATOR(pg_catalog.||) $5 END
 WHERE s.app_name OPERATOR(pg_catalog.=) $1
   AND s.user_id OPERATOR(pg_catalog.=) $2
   AND s.id OPERATOR(pg_catalog.=) $3
RETURNING s.last_seq, s.last_event_time
$$;

-- An event's "app:" delta $2 merged into adk.app_states for app $1 at time
-- $3 (under the session row lock; the events trigger and
-- adk_store_append).
CREATE FUNCTION adk._merge_app_state(text, jsonb, timestamptz)
RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
INSERT INTO adk.app_states AS a (app_name, state, update_time)
VALUES ($1, $2, $3)
ON CONFLICT (app_name) DO UPDATE
   SET state = a.state OPERATOR(pg_catalog.||) EXCLUDED.state,
       update_time = GREATEST(a.update_time, EXCLUDED.update_time)
$$;

-- An event's "user:" delta $3 merged into adk.user_states for app $1 and
-- user $2 at time $4.
CREATE FUNCTION adk._merge_user_state(text, text, jsonb, timestamptz)
RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
INSERT INTO adk.user_states AS u (app_name, user_id, state, update_time)
VALUES ($1, $2, $3, $4)
ON CONFLICT (app_name, user_id) DO UPDATE
   SET state = u.state OPERATOR(pg_catalog.||) EXCLUDED.state,
       update_time = GREATEST(u.update_time, EXCLUDED.update_time)
$$;

-- The session row's lock (FOR UPDATE: until the transaction, or the
-- subtransaction the caller opened, ends): one row, none without the
-- session.
CREATE FUNCTION adk._session_lock(text, text, text)
RETURNS SETOF integer
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
SELECT 1 FROM adk.sessions s
 WHERE s.app_name OPERATOR(pg_catalog.=) $1
   AND s.user_id OPERATOR(pg_catalog.=) $2
   AND s.id OPERATOR(pg_catalog.=) $3 FOR UPDATE
$$;

-- The session row's lock, and the jobs 'running' on the session in
-- another process: one row per such job (NULLs when none), no row without
-- the session.  Whether each job's worker is still there is asked of the
-- process array (src/store/session_read.c), not of pg_stat_activity,
-- whose view the planner joined on every call.
CREATE FUNCTION adk._session_lock_holders(text, text, text,
                                          OUT r_invocation_id text, OUT r_worker_pid integer)
RETURNS SETOF record
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
SELECT j.invocation_id, j.worker_pid FROM adk.sessions s
  LEFT JOIN adk.jobs j
    ON j.app_name OPERATOR(pg_catalog.=) s.app_name
   AND j.user_id OPERATOR(pg_catalog.=) s.user_id
   AND j.session_id OPERATOR(pg_catalog.=) s.id
   AND j.status OPERATOR(pg_catalog.=) 'running'
   AND j.worker_pid OPERATOR(pg_catalog.<>) pg_catalog.pg_backend_pid()
 WHERE s.app_name OPERATOR(pg_catalog.=) $1
   AND s.user_id OPERATOR(pg_catalog.=) $2
   AND s.id OPERATOR(pg_catalog.=) $3 FOR UPDATE OF s
$$;

-- The session's live events from seq $4 on, in seq order, through the
-- (app, user, session, seq) index; rewound ones left out as
-- adk.live_events does, with the session's rewound seqs read once per
-- statement (an InitPlan) instead of the view's join for every row.
CREATE FUNCTION adk._session_history(text, text, text, bigint,
                                     OUT r_event_data jsonb, OUT r_seq bigint, OUT r_id text)
RETURNS SETOF record
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
SELECT e.event_data, e.seq, e.id FROM adk.events e
 WHERE e.app_name OPERATOR(pg_catalog.=) $1
   AND e.user_id OPERATOR(pg_catalog.=) $2
   AND e.session_id OPERATOR(pg_catalog.=) $3
   AND e.seq OPERATOR(pg_catalog.>=) $4
   AND NOT ((SELECT s.rewound FROM adk.sessions s
              WHERE s.app_name OPERATOR(pg_catalog.=) $1
                AND s.user_id OPERATOR(pg_catalog.=) $2
                AND s.id OPERATOR(pg_catalog.=) $3) OPERATOR(pg_catalog.@>) e.seq)
 ORDER BY e.seq
$$;

-- The authors of the session's newest 200 live events, newest first
-- (NULL for an event without one).
CREATE FUNCTION adk._session_recent_authors(text, text, text)
RETURNS SETOF text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
SELECT e.event_data OPERATOR(pg_catalog.->>) 'author' FROM adk.events e
 WHERE e.app_name OPERATOR(pg_catalog.=) $1
   AND e.user_id OPERATOR(pg_catalog.=) $2
   AND e.session_id OPERATOR(pg_catalog.=) $3
   AND NOT ((SELECT s.rewound FROM adk.sessions s
              WHERE s.app_name OPERATOR(pg_catalog.=) $1
                AND s.user_id OPERATOR(pg_catalog.=) $2
                AND s.id OPERATOR(pg_catalog.=) $3) OPERATOR(pg_catalog.@>) e.seq)
 ORDER BY e.seq DESC LIMIT 200
$$;

-- Whether the session has been compacted (its prompt is read through
-- adk._prompt_events then).
CREATE FUNCTION adk._session_compacted(text, text, text)
RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
SELECT EXISTS (SELECT FROM adk.compactions c
                WHERE c.app_name OPERATOR(pg_catalog.=) $1
                  AND c.user_id OPERATOR(pg_catalog.=) $2
                  AND c.session_id OPERATOR(pg_catalog.=) $3)
$$;

-- A model call's row in adk.model_calls; returns the row without its
-- bodies (request, response, response_body) as JSON text, which
-- src/shared/spent.c hands to the launcher to write again, marked
-- rolled_back, if the transaction rolls back.  Every column but the
-- bodies (sql/522_turn_statements.sql checks it): one object built of
-- the columns, not to_jsonb of a subquery for the executor to start at
-- each insert.
CREATE FUNCTION adk._model_call_insert(text, text, text, text, boolean, integer, integer,
                                       double precision, bigint, bigint, text, text, text,
                                       jsonb, jsonb, text, name, double precision, bigint,
                                       text, text, text, text, integer, text, bigint, bigint)
RETURNS text
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
INSERT INTO adk.model_calls AS c (model, provider, url, invocation_id, stream,
       http_status, attempts, latency_ms, input_tokens, output_tokens,
       finish_reason, error_code, error_message, request, response, response_body,
       role_name, first_chunk_ms, cached_tokens, trace_id, span_id, app_name, user_id,
       fallback_attempt, fallback_from, cache_creation_tokens, reasoning_tokens)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
        $18, $19, $20, $21, $22, $23, $24, $25, $26, $27)
RETURNING pg_catalog.jsonb_build_object(
    'id', c.id, 'created_at', c.created_at, 'model', c.model, 'provider', c.provider,
    'url', c.url, 'invocation_id', c.invocation_id, 'stream', c.stream,
    'http_status', c.http_status, 'attempts', c.attempts, 'latency_ms', c.latency_ms,
    'input_tokens', c.input_tokens, 'output_tokens', c.output_tokens,
    'finish_reason', c.finish_reason, 'error_code', c.error_code,
    'error_message', c.error_message, 'role_name', c.role_name,
    'first_chunk_ms', c.first_chunk_ms, 'cached_tokens', c.cached_tokens,
    'trace_id', c.trace_id, 'span_id', c.span_id, 'app_name', c.app_name,
    'user_id', c.user_id, 'rolled_back', c.rolled_back,
    'fallback_attempt', c.fallback_attempt, 'fallback_from', c.fallback_from,
    'cache_creation_tokens', c.cache_creation_tokens,
    'reasoning_tokens', c.reasoning_tokens)::pg_catalog.text
$$;

-- Delete the model calls older than $1 seconds (adk.model_calls_retention).
CREATE FUNCTION adk._model_calls_purge(double precision)
RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
DELETE FROM adk.model_calls c
 WHERE c.created_at OPERATOR(pg_catalog.<)
       (pg_catalog.now() OPERATOR(pg_catalog.-) pg_catalog.make_interval(secs => $1))
$$;

-- Whether a budget with a limit covers a model call in app $1 by user $2
-- as role $3 (src/runner/budget.c; if none does, the call takes nothing
-- from adk._budget_take).  Every model call runs it.
CREATE FUNCTION adk._budget_any(text, text, name)
RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
SELECT EXISTS (SELECT FROM adk._budget_limits x
                WHERE x.app_name OPERATOR(pg_catalog.=) $1
                  AND (x.user_id IS NULL OR x.user_id OPERATOR(pg_catalog.=) $2)
                  AND (x.role_name IS NULL OR x.role_name OPERATOR(pg_catalog.=) $3))
$$;
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
-- ---------------------------------------------------------------------
-- Graph workflows as data (docs/workflows.md): ADK 2.x's workflow graph --
-- nodes, and edges from START or a node to a node, with routes -- as rows
-- of adk.workflows, adk.workflow_nodes and adk.workflow_edges.
--
-- A workflow is an agent: its name is the name of an adk.agents row of
-- kind 'workflow' (made with it, as ADK-Go's configurable workflow wraps
-- a workflow in an agent of the same name), so an app's root_agent, an
-- agent's sub_agents, and a "workflow" node of another workflow name it
-- the way they name any agent, and nothing else in adk.apps or the agent
-- tree changes.  Deleting that agent deletes the workflow.
--
-- Who may define: as for agents, adk_admin writes the three tables
-- (directly or through adk_define_workflow) and adk_user reads them;
-- definitions are shared, not per tenant.  The runs of a workflow are
-- rows of adk.run_states, under its row-level security.
--
-- Checks, as for the other definitions (50_definitions.sql):
--   * values row by row in BEFORE triggers (22023), unknown names 42704,
--     a second node of the same name 42710;
--   * the graph rules of ADK-Go's workflow.New (workflow/validation.go),
--     in its order, when the transaction commits: a deferred constraint
--     trigger on adk.workflows (whose row each statement writing nodes or
--     edges touches) and one on adk.agents (whose mode decides where an
--     agent node may stand) run adk._check_workflow, so a graph may be
--     built in several statements of one transaction.
--     The same triggers store graph_hash, the sha256 of the graph's
--     canonical text (adk._workflow_hash), once the graph passed.
-- With check_function_bodies = off (pg_dump's output) references and the
-- graph rules are not checked, as for agents: tables load in any order.
--
-- Running a workflow of function, tool, join, agent, nested workflow and
-- parallel worker nodes: src/runner/workflow.c,
-- with adk._workflow_plan and adk._workflow_successors below; a tree with
-- a workflow of other nodes is refused (adk._workflow_refusal, called by
-- src/runner/defs.c).  adk.run_states rows
-- whose node_path is '<workflow>/<node>@<run id>' are the RunState of a
-- workflow's node activations; adk.workflow_runs and
-- adk_workflow_mermaid() read them.
-- ---------------------------------------------------------------------

CREATE TABLE adk.workflows (
    name            text PRIMARY KEY REFERENCES adk.agents (name) ON DELETE CASCADE,
    description     text,
    max_concurrency integer NOT NULL DEFAULT 0 CHECK (max_concurrency >= 0),
    graph_hash      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE adk.workflows IS
    'Graph workflows (docs/workflows.md): one row per workflow, named as its agent of kind workflow; its nodes in adk.workflow_nodes, its edges in adk.workflow_edges';
COMMENT ON COLUMN adk.workflows.max_concurrency IS
    'at most this many graph nodes of one run at the same time; 0 = no limit (ADK-Go WithMaxConcurrency)';
COMMENT ON COLUMN adk.workflows.graph_hash IS
    'sha256 (hex) of the canonical text of max_concurrency, the nodes and the edges (adk._workflow_hash), set when a change commits; a paused run records it and resumes only under the same hash';

CREATE TABLE adk.workflow_nodes (
    workflow        text NOT NULL REFERENCES adk.workflows (name) ON DELETE CASCADE,
    name            text NOT NULL CHECK (name ~ '^[A-Za-z_][A-Za-z0-9_-]{0,127}$' AND name <> 'START'),
    kind            text NOT NULL
                    CHECK (kind IN ('agent', 'function', 'tool', 'join', 'parallel_worker', 'workflow')),
    agent           text REFERENCES adk.agents (name),
    function        regprocedure,
    tool            text,
    sub_workflow    text REFERENCES adk.workflows (name),
    worker          text,
    description     text,
    rerun_on_resume boolean NOT NULL DEFAULT false,
    wait_for_output boolean NOT NULL DEFAULT false,
    retry           jsonb CHECK (jsonb_typeof(retry) = 'object'),
    timeout         interval CHECK (timeout > '0'),
    max_concurrency integer NOT NULL DEFAULT 0 CHECK (max_concurrency >= 0),
    input_schema    jsonb CHECK (jsonb_typeof(input_schema) = 'object'),
    output_schema   jsonb CHECK (jsonb_typeof(output_schema) = 'object'),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT workflow_nodes_pkey PRIMARY KEY (workflow, name),
    CONSTRAINT workflow_nodes_target CHECK (
        (agent IS NOT NULL) = (kind = 'agent') AND (function IS NOT NULL) = (kind = 'function')
        AND (tool IS NOT NULL) = (kind = 'tool') AND (sub_workflow IS NOT NULL) = (kind = 'workflow')
        AND (worker IS NOT NULL) = (kind = 'parallel_worker'))
);
CREATE INDEX workflow_nodes_agent ON adk.workflow_nodes (agent) WHERE agent IS NOT NULL;
CREATE INDEX workflow_nodes_sub_workflow ON adk.workflow_nodes (sub_workflow) WHERE sub_workflow IS NOT NULL;
COMMENT ON TABLE adk.workflow_nodes IS
    'Nodes of graph workflows: kind agent | function | tool | join | parallel_worker | workflow, its target in the column of that name, and ADK-Go''s NodeConfig (docs/workflows.md)';
COMMENT ON COLUMN adk.workflow_nodes.name IS 'unique in its workflow; START is the entry, not a node';
COMMENT ON COLUMN adk.workflow_nodes.agent IS 'kind agent: the agent it runs, in its mode (NULL mode = single_turn here, as ADK-Go''s NewAgentNode); a chat agent only directly after START, a task agent never';
COMMENT ON COLUMN adk.workflow_nodes.function IS 'kind function: a function (ctx jsonb, input jsonb) RETURNS jsonb, run with the caller''s privileges';
COMMENT ON COLUMN adk.workflow_nodes.tool IS 'kind tool: a tool of adk.tools, called with the node''s input as its arguments';
COMMENT ON COLUMN adk.workflow_nodes.sub_workflow IS 'kind workflow: the nested workflow it runs (never itself, directly or through others)';
COMMENT ON COLUMN adk.workflow_nodes.worker IS 'kind parallel_worker: the node of the same workflow it runs once per item of its list input; that node is on no edge and has no retry';
COMMENT ON COLUMN adk.workflow_nodes.rerun_on_resume IS 'on resume after human input: true re-runs the node with its original input and the answers (re-entry), false hands the answer on as its output (handoff; ADK-Go''s default)';
COMMENT ON COLUMN adk.workflow_nodes.wait_for_output IS 'an activation that ends without output does not complete: its successors do not run (ADK-Go WaitForOutput)';
COMMENT ON COLUMN adk.workflow_nodes.retry IS 'NULL = no retries; else ADK-Go''s RetryConfig, completed with its defaults: max_attempts 5, initial_delay 1 (seconds), max_delay 60, backoff_factor 2, jitter 1';
COMMENT ON COLUMN adk.workflow_nodes.timeout IS 'bound on one attempt of a function or tool node: its call is cancelled and the attempt fails (retried when the node has a retry); NULL = none';
COMMENT ON COLUMN adk.workflow_nodes.max_concurrency IS 'kind parallel_worker: at most this many items at once; 0 = no limit';
COMMENT ON COLUMN adk.workflow_nodes.input_schema IS 'JSON Schema the node''s input must match (a join: each predecessor''s output)';
COMMENT ON COLUMN adk.workflow_nodes.output_schema IS 'JSON Schema of the node''s output; where both ends of an edge have one, they must be equal';

CREATE TABLE adk.workflow_edges (
    workflow   text NOT NULL REFERENCES adk.workflows (name) ON DELETE CASCADE,
    from_node  text NOT NULL,
    to_node    text NOT NULL,
    route      text[] CHECK (cardinality(route) > 0 AND array_position(route, NULL) IS NULL),
    is_default boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT workflow_edges_route_or_default CHECK (NOT (is_default AND route IS NOT NULL))
);
CREATE INDEX workflow_edges_from ON adk.workflow_edges (workflow, from_node);
COMMENT ON TABLE adk.workflow_edges IS
    'Edges of graph workflows: from START or a node to a node; route NULL and not is_default = unconditional (always fires), route = fires when the node''s routing event lists one of the values, is_default = fires when no routed edge of the node matched (ADK-Go findSuccessors)';
COMMENT ON COLUMN adk.workflow_edges.from_node IS 'START or a node of the workflow';
COMMENT ON COLUMN adk.workflow_edges.route IS 'the route values (ADK-Go StringRoute, MultiRoute; an int or bool route as its text); NULL = unconditional or default';
COMMENT ON COLUMN adk.workflow_edges.is_default IS 'ADK-Go''s workflow.Default: fires only when no routed edge of from_node matched; at most one per node';

-- ---------------------------------------------------------------------
-- Row rules.
-- ---------------------------------------------------------------------

-- ADK-Go's RetryConfig defaults (workflow/config.go defaultRetryConfig),
-- delays in seconds.
CREATE FUNCTION adk._workflow_retry_defaults() RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT '{"max_attempts": 5, "initial_delay": 1, "max_delay": 60, "backoff_factor": 2, "jitter": 1}'::jsonb
$$;

-- A workflow row makes (or describes) its agent of kind workflow.
CREATE FUNCTION adk._workflows_before_write() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    k text;
BEGIN
    PERFORM adk._lock_definitions();
    IF NEW.name IS NULL THEN
        RAISE EXCEPTION 'workflow name must not be null' USING ERRCODE = '22004';
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.name <> OLD.name THEN
        RAISE EXCEPTION 'a workflow cannot be renamed' USING ERRCODE = '0A000',
            HINT = 'Define a new workflow and delete the old one''s agent.';
    END IF;
    IF NEW.max_concurrency IS NULL OR NEW.max_concurrency < 0 THEN
        RAISE EXCEPTION 'max_concurrency of workflow "%" must be 0 (no limit) or more', NEW.name
            USING ERRCODE = '22023';
    END IF;
    SELECT a.kind INTO k FROM adk.agents a WHERE a.name = NEW.name;
    IF NOT FOUND THEN
        INSERT INTO adk.agents (name, kind, description) VALUES (NEW.name, 'workflow', NEW.description);
    ELSIF k <> 'workflow' THEN
        RAISE EXCEPTION 'workflow name "%" is already used by an agent', NEW.name USING ERRCODE = '42710',
            DETAIL = format('A workflow is an agent of kind workflow; "%s" is an agent of kind %s.', NEW.name, k);
    ELSIF TG_OP = 'INSERT' OR NEW.description IS DISTINCT FROM OLD.description THEN
        UPDATE adk.agents a SET description = NEW.description
         WHERE a.name = NEW.name AND a.description IS DISTINCT FROM NEW.description;
    END IF;
    IF TG_OP = 'UPDATE' THEN
        NEW.updated_at := now();
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER adk_workflows_before_write
    BEFORE INSERT OR UPDATE ON adk.workflows
    FOR EACH ROW EXECUTE FUNCTION adk._workflows_before_write();

CREATE FUNCTION adk._workflow_nodes_before_write() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    p pg_catalog.pg_proc;
    k text;
    extra text;
BEGIN
    PERFORM adk._lock_definitions();
    IF NEW.name IS NULL THEN
        RAISE EXCEPTION 'node name must not be null' USING ERRCODE = '22004';
    END IF;
    IF NEW.name = 'START' THEN
        RAISE EXCEPTION 'node name "START" is reserved' USING ERRCODE = '22023',
            DETAIL = 'START is where every workflow begins; edges from it are written from_node = ''START''.';
    END IF;
    IF NEW.name !~ '^[A-Za-z_][A-Za-z0-9_-]{0,127}$' THEN
        RAISE EXCEPTION 'invalid node name "%"', NEW.name USING ERRCODE = '22023',
            HINT = 'A node name starts with a letter or underscore, followed by at most 127 letters, digits, underscores or hyphens.';
    END IF;
    -- ADK-Go's first rule (validateUniqueNames): one node per name
    IF (TG_OP = 'INSERT' OR NEW.name <> OLD.name OR NEW.workflow <> OLD.workflow)
       AND EXISTS (SELECT 1 FROM adk.workflow_nodes n WHERE n.workflow = NEW.workflow AND n.name = NEW.name) THEN
        RAISE EXCEPTION 'duplicate node name "%" in workflow "%"', NEW.name, NEW.workflow USING ERRCODE = '42710';
    END IF;
    IF NEW.kind IS NULL OR NEW.kind NOT IN ('agent', 'function', 'tool', 'join', 'parallel_worker', 'workflow') THEN
        RAISE EXCEPTION 'unknown kind "%" for node "%"', NEW.kind, NEW.name USING ERRCODE = '22023',
            HINT = 'Use agent, function, tool, join, parallel_worker or workflow.';
    END IF;
    -- the one target of the kind, and nothing of another kind
    SELECT string_agg(c, ', ') INTO extra FROM unnest(ARRAY[
        CASE WHEN NEW.agent IS NOT NULL AND NEW.kind <> 'agent' THEN 'agent' END,
        CASE WHEN NEW.function IS NOT NULL AND NEW.kind <> 'function' THEN 'function' END,
        CASE WHEN NEW.tool IS NOT NULL AND NEW.kind <> 'tool' THEN 'tool' END,
        CASE WHEN NEW.sub_workflow IS NOT NULL AND NEW.kind <> 'workflow' THEN 'workflow' END,
        CASE WHEN NEW.worker IS NOT NULL AND NEW.kind <> 'parallel_worker' THEN 'worker' END,
        CASE WHEN coalesce(NEW.max_concurrency, 0) <> 0 AND NEW.kind <> 'parallel_worker' THEN 'max_concurrency' END]) c;
    IF extra IS NOT NULL THEN
        RAISE EXCEPTION '% node "%" cannot have %', NEW.kind, NEW.name, extra USING ERRCODE = '22023';
    END IF;
    IF NEW.kind <> 'join' AND num_nonnulls(NEW.agent, NEW.function, NEW.tool, NEW.sub_workflow, NEW.worker) = 0 THEN
        RAISE EXCEPTION '% node "%" needs its %', NEW.kind, NEW.name,
            CASE NEW.kind WHEN 'workflow' THEN 'workflow' WHEN 'parallel_worker' THEN 'worker' ELSE NEW.kind END
            USING ERRCODE = '22023';
    END IF;
    NEW.rerun_on_resume := coalesce(NEW.rerun_on_resume, false);
    NEW.wait_for_output := coalesce(NEW.wait_for_output, false);
    NEW.max_concurrency := coalesce(NEW.max_concurrency, 0);
    IF NEW.max_concurrency < 0 THEN
        RAISE EXCEPTION 'max_concurrency of node "%" must be 0 (no limit) or more', NEW.name USING ERRCODE = '22023';
    END IF;
    IF NEW.timeout IS NOT NULL AND NEW.timeout <= '0' THEN
        RAISE EXCEPTION 'timeout of node "%" must be positive', NEW.name USING ERRCODE = '22023',
            HINT = 'Leave it NULL for none.';
    END IF;
    IF NEW.retry IS NOT NULL THEN
        IF jsonb_typeof(NEW.retry) <> 'object' THEN
            RAISE EXCEPTION 'retry of node "%" must be a JSON object', NEW.name USING ERRCODE = '22023',
                HINT = 'For example {"max_attempts": 3}; unset keys take ADK''s defaults, NULL is no retry.';
        END IF;
        SELECT string_agg(format('"%s"', k2), ', ' ORDER BY k2) INTO extra
          FROM jsonb_object_keys(NEW.retry) k2
         WHERE NOT adk._workflow_retry_defaults() ? k2;
        IF extra IS NOT NULL THEN
            RAISE EXCEPTION 'retry of node "%" has unknown keys: %', NEW.name, extra USING ERRCODE = '22023',
                HINT = 'The keys are max_attempts, initial_delay, max_delay (seconds), backoff_factor and jitter.';
        END IF;
        NEW.retry := adk._workflow_retry_defaults() || NEW.retry;
        IF EXISTS (SELECT 1 FROM jsonb_each(NEW.retry) e
                    WHERE jsonb_typeof(e.value) <> 'number' OR (e.value)::numeric < 0
                       OR (e.key = 'max_attempts' AND (e.value)::numeric <> trunc((e.value)::numeric))) THEN
            RAISE EXCEPTION 'retry of node "%" must have numbers of 0 or more', NEW.name USING ERRCODE = '22023',
                DETAIL = format('It is %s; max_attempts is a whole number.', NEW.retry);
        END IF;
    END IF;
    IF jsonb_typeof(NEW.input_schema) <> 'object' OR jsonb_typeof(NEW.output_schema) <> 'object' THEN
        RAISE EXCEPTION '% of node "%" must be a JSON Schema object',
            CASE WHEN jsonb_typeof(NEW.input_schema) <> 'object' THEN 'input_schema' ELSE 'output_schema' END,
            NEW.name USING ERRCODE = '22023';
    END IF;

    IF NEW.kind = 'function' AND (TG_OP = 'INSERT' OR NEW.function IS DISTINCT FROM OLD.function) THEN
        SELECT * INTO p FROM pg_catalog.pg_proc WHERE oid = NEW.function;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'function with OID % does not exist', NEW.function::oid USING ERRCODE = '42883';
        END IF;
        IF p.prokind <> 'f' OR p.pronargs <> 2 OR p.proargtypes[0] <> 'pg_catalog.jsonb'::pg_catalog.regtype
           OR p.proargtypes[1] <> 'pg_catalog.jsonb'::pg_catalog.regtype OR p.provariadic <> 0
           OR p.proretset OR p.prorettype <> 'pg_catalog.jsonb'::pg_catalog.regtype THEN
            RAISE EXCEPTION 'function % of node "%" must take (ctx jsonb, input jsonb) and return jsonb',
                NEW.function, NEW.name USING ERRCODE = '22023',
                HINT = 'It gets the run''s context and the node''s input and returns {"output": ..., "route": ..., "state_delta": ...} (docs/workflows.md).';
        END IF;
        IF adk._check_references() AND NOT has_function_privilege(current_user, NEW.function::oid, 'EXECUTE') THEN
            RAISE EXCEPTION 'permission denied for function %', NEW.function USING ERRCODE = '42501',
                DETAIL = format('Defining node "%s" requires EXECUTE on its function.', NEW.name);
        END IF;
    END IF;
    -- before the foreign keys' own checks, for a clearer message
    IF adk._check_references() THEN
        IF NEW.kind = 'agent' THEN
            SELECT a.kind INTO k FROM adk.agents a WHERE a.name = NEW.agent;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'agent "%" of node "%" does not exist', NEW.agent, NEW.name USING ERRCODE = '42704',
                    HINT = 'Define it first with adk_define_agent().';
            ELSIF k = 'workflow' THEN
                RAISE EXCEPTION 'agent "%" of node "%" is a workflow', NEW.agent, NEW.name USING ERRCODE = '22023',
                    HINT = 'Make it a node of kind workflow.';
            END IF;
        ELSIF NEW.kind = 'tool' AND NOT EXISTS (SELECT 1 FROM adk.tools t WHERE t.name = NEW.tool) THEN
            RAISE EXCEPTION 'tool "%" of node "%" does not exist', NEW.tool, NEW.name USING ERRCODE = '42704',
                HINT = 'Define it first with adk_define_tool().';
        ELSIF NEW.kind = 'workflow' AND NOT EXISTS (SELECT 1 FROM adk.workflows w WHERE w.name = NEW.sub_workflow) THEN
            RAISE EXCEPTION 'workflow "%" of node "%" does not exist', NEW.sub_workflow, NEW.name USING ERRCODE = '42704',
                HINT = 'Define it first with adk_define_workflow().';
        END IF;
    END IF;
    IF TG_OP = 'UPDATE' THEN
        NEW.updated_at := now();
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER adk_workflow_nodes_before_write
    BEFORE INSERT OR UPDATE ON adk.workflow_nodes
    FOR EACH ROW EXECUTE FUNCTION adk._workflow_nodes_before_write();

CREATE FUNCTION adk._workflow_edges_before_write() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM adk._lock_definitions();
    IF NEW.from_node IS NULL OR NEW.to_node IS NULL THEN
        RAISE EXCEPTION 'an edge needs from_node and to_node' USING ERRCODE = '22004';
    END IF;
    NEW.is_default := coalesce(NEW.is_default, false);
    IF NEW.route IS NOT NULL AND (cardinality(NEW.route) = 0 OR array_ndims(NEW.route) > 1
                                  OR array_position(NEW.route, NULL) IS NOT NULL) THEN
        RAISE EXCEPTION 'route of the edge from "%" to "%" must be a list of values', NEW.from_node, NEW.to_node
            USING ERRCODE = '22023', HINT = 'Leave it NULL for an unconditional edge.';
    END IF;
    IF NEW.is_default AND NEW.route IS NOT NULL THEN
        RAISE EXCEPTION 'the edge from "%" to "%" cannot be both a default edge and have a route',
            NEW.from_node, NEW.to_node USING ERRCODE = '22023',
            DETAIL = 'A default edge fires when none of the node''s routed edges matched.';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER adk_workflow_edges_before_write
    BEFORE INSERT OR UPDATE ON adk.workflow_edges
    FOR EACH ROW EXECUTE FUNCTION adk._workflow_edges_before_write();

CREATE TRIGGER adk_workflows_lock_delete
    BEFORE DELETE ON adk.workflows
    FOR EACH ROW EXECUTE FUNCTION adk._definitions_lock_trigger();
CREATE TRIGGER adk_workflow_nodes_lock_delete
    BEFORE DELETE ON adk.workflow_nodes
    FOR EACH ROW EXECUTE FUNCTION adk._definitions_lock_trigger();
CREATE TRIGGER adk_workflow_edges_lock_delete
    BEFORE DELETE ON adk.workflow_edges
    FOR EACH ROW EXECUTE FUNCTION adk._definitions_lock_trigger();

-- A tool a node runs cannot be deleted, renamed or truncated away (a
-- trigger rather than a foreign key, so TRUNCATE adk.tools stays as
-- 50_definitions.sql has it).
CREATE FUNCTION adk._tools_used_by_workflows() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    users text;
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.name = OLD.name THEN
        RETURN NULL;
    END IF;
    SELECT string_agg(format('"%s" of workflow "%s"', n.name, n.workflow), ', ' ORDER BY n.workflow, n.name)
      INTO users
      FROM adk.workflow_nodes n
     WHERE n.tool IS NOT NULL AND (TG_OP = 'TRUNCATE' OR n.tool = OLD.name);
    IF users IS NOT NULL THEN
        RAISE EXCEPTION '% still used by workflow nodes %',
            CASE WHEN TG_OP = 'TRUNCATE' THEN 'tools are' ELSE format('tool "%s" is', OLD.name) END, users
            USING ERRCODE = '23503', HINT = 'Remove those nodes first.';
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER adk_tools_used_by_workflows
    AFTER DELETE OR UPDATE OF name ON adk.tools
    FOR EACH ROW EXECUTE FUNCTION adk._tools_used_by_workflows();
CREATE TRIGGER adk_tools_truncate_workflows
    AFTER TRUNCATE ON adk.tools
    FOR EACH STATEMENT EXECUTE FUNCTION adk._tools_used_by_workflows();

-- A backend's cached definitions (src/runner/defs.c) are dropped when a
-- workflow changes, as when an agent does.
CREATE TRIGGER adk_definitions_version AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON adk.workflows FOR EACH STATEMENT EXECUTE FUNCTION adk._bump_definitions_version();
CREATE TRIGGER adk_definitions_version AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON adk.workflow_nodes FOR EACH STATEMENT EXECUTE FUNCTION adk._bump_definitions_version();
CREATE TRIGGER adk_definitions_version AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON adk.workflow_edges FOR EACH STATEMENT EXECUTE FUNCTION adk._bump_definitions_version();

-- ---------------------------------------------------------------------
-- The graph rules and the hash.
-- ---------------------------------------------------------------------

-- sha256 of the canonical text of a workflow: max_concurrency, its nodes
-- by name and its edges by (from, to), every setting that changes how it
-- runs (descriptions do not).  jsonb's text form is canonical (keys in one
-- order, no insignificant white space).  NULL for no workflow.
CREATE FUNCTION adk._workflow_hash(wf text) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT encode(sha256(convert_to(jsonb_build_object(
               'max_concurrency', w.max_concurrency,
               'nodes', (SELECT coalesce(jsonb_agg(jsonb_build_object(
                                    'name', n.name, 'kind', n.kind, 'agent', n.agent,
                                    'function', n.function::text, 'tool', n.tool,
                                    'workflow', n.sub_workflow, 'worker', n.worker,
                                    'rerun_on_resume', n.rerun_on_resume,
                                    'wait_for_output', n.wait_for_output, 'retry', n.retry,
                                    'timeout', extract(epoch FROM n.timeout),
                                    'max_concurrency', n.max_concurrency,
                                    'input_schema', n.input_schema, 'output_schema', n.output_schema)
                                ORDER BY n.name COLLATE "C"), '[]')
                           FROM adk.workflow_nodes n WHERE n.workflow = w.name),
               'edges', (SELECT coalesce(jsonb_agg(jsonb_build_object(
                                    'from', e.from_node, 'to', e.to_node, 'route', e.route,
                                    'default', e.is_default)
                                ORDER BY e.from_node COLLATE "C", e.to_node COLLATE "C",
                                         e.route::text COLLATE "C", e.is_default), '[]')
                           FROM adk.workflow_edges e WHERE e.workflow = w.name))::text, 'UTF8')), 'hex')
      FROM adk.workflows w WHERE w.name = wf
$$;

-- Raises when workflow wf breaks a rule; the rules and their order are
-- ADK-Go's workflow.New (workflow/validation.go: validateNodes, then
-- validateSubWorkflowNames, then validateWorkflow), after what a table
-- adds (edges naming nodes that exist, a parallel worker's node).  A
-- routed edge into a join is refused too: a join waits for every
-- predecessor, and a routed edge may never fire.
CREATE FUNCTION adk._check_workflow(wf text) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r record;
    names text;
    cycle text[];
BEGIN
    IF NOT EXISTS (SELECT 1 FROM adk.workflows w WHERE w.name = wf) THEN
        RAISE EXCEPTION 'workflow "%" does not exist', wf USING ERRCODE = '42704';
    END IF;

    -- what the tables add: edges name nodes of the workflow
    SELECT e.from_node, e.to_node, x.missing INTO r
      FROM adk.workflow_edges e,
           LATERAL (SELECT m FROM unnest(ARRAY[e.from_node, e.to_node]) m
                     WHERE m <> 'START'
                       AND NOT EXISTS (SELECT 1 FROM adk.workflow_nodes n WHERE n.workflow = wf AND n.name = m)
                     LIMIT 1) x(missing)
     WHERE e.workflow = wf
     ORDER BY e.from_node, e.to_node LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'edge from "%" to "%" of workflow "%" names node "%", which does not exist',
            r.from_node, r.to_node, wf, r.missing USING ERRCODE = '42704',
            HINT = 'Define the node in adk.workflow_nodes; START is the only other name an edge may use.';
    END IF;
    -- a parallel worker's node: in the workflow, on no edge, no join or
    -- worker itself, without retry (ADK-Go NewParallelWorker), one worker's
    SELECT p.name, p.worker, w.name AS found, w.kind, w.retry INTO r
      FROM adk.workflow_nodes p
      LEFT JOIN adk.workflow_nodes w ON w.workflow = wf AND w.name = p.worker
     WHERE p.workflow = wf AND p.kind = 'parallel_worker'
       AND (w.name IS NULL OR w.kind IN ('join', 'parallel_worker') OR w.retry IS NOT NULL
            OR EXISTS (SELECT 1 FROM adk.workflow_edges e
                        WHERE e.workflow = wf AND p.worker IN (e.from_node, e.to_node))
            OR EXISTS (SELECT 1 FROM adk.workflow_nodes q
                        WHERE q.workflow = wf AND q.worker = p.worker AND q.name <> p.name))
     ORDER BY p.name LIMIT 1;
    IF FOUND THEN
        IF r.found IS NULL THEN
            RAISE EXCEPTION 'worker "%" of parallel worker "%" is not a node of workflow "%"', r.worker, r.name, wf
                USING ERRCODE = '42704';
        ELSIF r.kind IN ('join', 'parallel_worker') THEN
            RAISE EXCEPTION 'worker "%" of parallel worker "%" cannot be a % node', r.worker, r.name, r.kind
                USING ERRCODE = '42P17';
        ELSIF r.retry IS NOT NULL THEN
            RAISE EXCEPTION 'worker "%" of parallel worker "%" cannot have retry', r.worker, r.name
                USING ERRCODE = '42P17',
                      HINT = 'Give the parallel worker the retry: it retries each item on its own.';
        ELSE
            RAISE EXCEPTION 'worker "%" of parallel worker "%" cannot be on an edge or the worker of another node', r.worker, r.name
                USING ERRCODE = '42P17',
                      DETAIL = 'The parallel worker runs it once per item of its input; the graph reaches the parallel worker, not its node.';
        END IF;
    END IF;

    -- validateStartNodePresent
    IF NOT EXISTS (SELECT 1 FROM adk.workflow_edges e WHERE e.workflow = wf AND e.from_node = 'START') THEN
        RAISE EXCEPTION 'workflow "%" has no edge from START', wf USING ERRCODE = '42P17',
            HINT = 'Add an edge from_node = ''START'' to the first node.';
    END IF;
    -- validateStartNodeNoIncoming
    SELECT e.from_node INTO r FROM adk.workflow_edges e
     WHERE e.workflow = wf AND e.to_node = 'START' ORDER BY e.from_node LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'node "%" of workflow "%" points to START', r.from_node, wf USING ERRCODE = '42P17',
            DETAIL = 'START is where the workflow begins; no edge may lead into it.';
    END IF;
    -- validateNoTaskModeGraphNodes
    SELECT n.name, n.agent INTO r FROM adk.workflow_nodes n JOIN adk.agents a ON a.name = n.agent
     WHERE n.workflow = wf AND a.kind = 'llm' AND a.mode = 'task'
       AND (EXISTS (SELECT 1 FROM adk.workflow_edges e WHERE e.workflow = wf AND n.name IN (e.from_node, e.to_node))
            OR EXISTS (SELECT 1 FROM adk.workflow_nodes p WHERE p.workflow = wf AND p.worker = n.name))
     ORDER BY n.name LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'agent "%" has mode task and cannot be a node of workflow "%"', r.agent, wf
            USING ERRCODE = '42P17',
                  DETAIL = 'A task agent works across turns and needs its task brief on every turn; a graph node gets the latest input.',
                  HINT = 'Use a chat coordinator with task sub-agents as the node, or give the agent mode single_turn.';
    END IF;
    -- validateChatModeWiring: a chat agent (mode chat; NULL is single_turn
    -- in a graph, as ADK-Go's NewAgentNode makes it) only directly after START
    SELECT e.from_node, e.to_node, n.agent INTO r
      FROM adk.workflow_edges e
      JOIN adk.workflow_nodes n ON n.workflow = wf AND n.name = e.to_node
      JOIN adk.agents a ON a.name = n.agent
     WHERE e.workflow = wf AND e.from_node <> 'START' AND a.kind = 'llm' AND a.mode = 'chat'
     ORDER BY e.to_node, e.from_node LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'agent "%" has mode chat and cannot follow node "%" in workflow "%"', r.agent, r.from_node, wf
            USING ERRCODE = '42P17',
                  DETAIL = 'A chat agent builds its prompt from the conversation and ignores the input an edge hands it.',
                  HINT = 'Give the agent mode single_turn (or leave it NULL), or reach it directly from START.';
    END IF;
    -- validateSubWorkflowNames, for nesting through any depth: no workflow
    -- contains itself
    WITH RECURSIVE nest (name, path) AS (
        SELECT n.sub_workflow, ARRAY[wf, n.sub_workflow]
          FROM adk.workflow_nodes n WHERE n.workflow = wf AND n.kind = 'workflow'
        UNION ALL
        SELECT n.sub_workflow, nest.path || n.sub_workflow
          FROM nest JOIN adk.workflow_nodes n ON n.workflow = nest.name AND n.kind = 'workflow'
         WHERE NOT nest.name = ANY (nest.path[1:cardinality(nest.path) - 1])
    )
    SELECT nest.path INTO cycle FROM nest WHERE nest.name = wf ORDER BY cardinality(nest.path) LIMIT 1;
    IF cycle IS NOT NULL THEN
        RAISE EXCEPTION 'workflow "%" contains itself: %', wf, array_to_string(cycle, ' -> ')
            USING ERRCODE = '42P17', DETAIL = 'A workflow node cannot run the workflow it is in, directly or through nested workflows.';
    END IF;
    -- validateUniqueEdges: one edge per (from, to), whatever its route
    SELECT e.from_node, e.to_node INTO r FROM adk.workflow_edges e
     WHERE e.workflow = wf GROUP BY e.from_node, e.to_node HAVING count(*) > 1
     ORDER BY e.from_node, e.to_node LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'duplicate edge from "%" to "%" in workflow "%"', r.from_node, r.to_node, wf
            USING ERRCODE = '42710',
                  HINT = 'List every route value of that edge in its one route array.';
    END IF;
    -- validateDefaultRoute
    SELECT e.from_node INTO r FROM adk.workflow_edges e
     WHERE e.workflow = wf AND e.is_default GROUP BY e.from_node HAVING count(*) > 1
     ORDER BY e.from_node LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'node "%" of workflow "%" has more than one default edge', r.from_node, wf
            USING ERRCODE = '42P17';
    END IF;
    -- validateConnectivity
    WITH RECURSIVE reach (name) AS (
        SELECT 'START'::text
        UNION
        SELECT e.to_node FROM reach JOIN adk.workflow_edges e ON e.workflow = wf AND e.from_node = reach.name
    )
    SELECT string_agg(format('"%s"', n.name), ', ' ORDER BY n.name) INTO names
      FROM adk.workflow_nodes n
     WHERE n.workflow = wf AND NOT EXISTS (SELECT 1 FROM reach WHERE reach.name = n.name)
       AND NOT EXISTS (SELECT 1 FROM adk.workflow_nodes p WHERE p.workflow = wf AND p.worker = n.name);
    IF names IS NOT NULL THEN
        RAISE EXCEPTION 'nodes of workflow "%" not reachable from START: %', wf, names USING ERRCODE = '42P17';
    END IF;
    -- validateCycles: a cycle of unconditional edges (a routed or a default
    -- edge breaks it)
    WITH RECURSIVE u AS (
        SELECT e.from_node, e.to_node FROM adk.workflow_edges e
         WHERE e.workflow = wf AND e.route IS NULL AND NOT e.is_default
    ), reach (origin, name) AS (
        SELECT u.from_node, u.to_node FROM u
        UNION
        SELECT reach.origin, u.to_node FROM reach JOIN u ON u.from_node = reach.name
    )
    SELECT string_agg(format('"%s"', reach.name), ', ' ORDER BY reach.name) INTO names
      FROM reach WHERE reach.origin = reach.name;
    IF names IS NOT NULL THEN
        RAISE EXCEPTION 'unconditional cycle in workflow "%" through %', wf, names USING ERRCODE = '42P17',
            HINT = 'Give one edge of the loop a route, or make it the default edge, so the loop can end.';
    END IF;
    -- validateFanIn: two unconditional edges into a node need a join
    SELECT e.to_node, count(*) AS n INTO r FROM adk.workflow_edges e
      JOIN adk.workflow_nodes t ON t.workflow = wf AND t.name = e.to_node
     WHERE e.workflow = wf AND e.route IS NULL AND NOT e.is_default AND t.kind <> 'join'
     GROUP BY e.to_node HAVING count(*) > 1
     ORDER BY e.to_node LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'node "%" of workflow "%" has % unconditional incoming edges', r.to_node, wf, r.n
            USING ERRCODE = '42P17',
                  DETAIL = 'It would run once for each predecessor that finishes.',
                  HINT = 'Converge the branches in a node of kind join.';
    END IF;
    -- a join waits for every predecessor: each edge into it must fire
    SELECT e.from_node, e.to_node INTO r FROM adk.workflow_edges e
      JOIN adk.workflow_nodes t ON t.workflow = wf AND t.name = e.to_node
     WHERE e.workflow = wf AND t.kind = 'join' AND (e.route IS NOT NULL OR e.is_default)
     ORDER BY e.to_node, e.from_node LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'the edge from "%" into join "%" of workflow "%" has a route', r.from_node, r.to_node, wf
            USING ERRCODE = '42P17',
                  DETAIL = 'A join waits for every predecessor; a routed or default edge may never fire, and the join would wait forever.',
                  HINT = 'Route into a node before the join, and join with unconditional edges.';
    END IF;
    -- validateStaticSchemas: where both ends of an edge declare a schema,
    -- they are the same schema
    SELECT e.from_node, e.to_node INTO r FROM adk.workflow_edges e
      JOIN adk.workflow_nodes f ON f.workflow = wf AND f.name = e.from_node
      JOIN adk.workflow_nodes t ON t.workflow = wf AND t.name = e.to_node
     WHERE e.workflow = wf AND f.output_schema IS NOT NULL AND t.input_schema IS NOT NULL
       AND f.output_schema <> t.input_schema
     ORDER BY e.from_node, e.to_node LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'schema mismatch on the edge from "%" to "%" of workflow "%"', r.from_node, r.to_node, wf
            USING ERRCODE = '42P17',
                  DETAIL = 'The output_schema of the first node and the input_schema of the second differ.';
    END IF;
END
$$;
COMMENT ON FUNCTION adk._check_workflow(text) IS
    'Raise if a workflow breaks a graph rule (docs/workflows.md, "Validation"), in ADK-Go''s order.';

-- Check a changed workflow, and store its hash, when the transaction
-- commits (deferred; a change of its nodes or edges touches its row, see
-- adk._workflow_rows_changed).  Also run for the workflows that use a
-- changed agent as a node, and keeps an agent of kind workflow from
-- outliving its workflow.
CREATE FUNCTION adk._workflows_deferred_check() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    wfs text[];
    wf text;
    h text;
BEGIN
    IF NOT adk._check_references() THEN
        RETURN NULL;
    END IF;
    IF TG_TABLE_NAME = 'agents' THEN
        IF NEW.kind = 'workflow' AND NOT EXISTS (SELECT 1 FROM adk.workflows w WHERE w.name = NEW.name)
           AND EXISTS (SELECT 1 FROM adk.agents a WHERE a.name = NEW.name AND a.kind = 'workflow') THEN
            RAISE EXCEPTION 'workflow agent "%" has no workflow', NEW.name USING ERRCODE = '23503',
                HINT = 'Define it with adk_define_workflow().';
        END IF;
        wfs := ARRAY(SELECT DISTINCT n.workflow FROM adk.workflow_nodes n WHERE n.agent = NEW.name);
    ELSIF TG_TABLE_NAME = 'workflows' THEN
        IF TG_OP = 'DELETE' THEN
            IF EXISTS (SELECT 1 FROM adk.agents a WHERE a.name = OLD.name AND a.kind = 'workflow')
               AND NOT EXISTS (SELECT 1 FROM adk.workflows w WHERE w.name = OLD.name) THEN
                RAISE EXCEPTION 'workflow agent "%" has no workflow', OLD.name USING ERRCODE = '23503',
                    HINT = 'Delete the agent (DELETE FROM adk.agents), which deletes its workflow, or define the workflow again.';
            END IF;
            RETURN NULL;
        END IF;
        wfs := ARRAY[NEW.name];
    END IF;
    FOREACH wf IN ARRAY wfs LOOP
        CONTINUE WHEN NOT EXISTS (SELECT 1 FROM adk.workflows w WHERE w.name = wf);
        PERFORM adk._check_workflow(wf);
        h := adk._workflow_hash(wf);
        UPDATE adk.workflows w SET graph_hash = h
         WHERE w.name = wf AND w.graph_hash IS DISTINCT FROM h;
    END LOOP;
    RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER adk_workflows_check
    AFTER INSERT OR UPDATE OR DELETE ON adk.workflows DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION adk._workflows_deferred_check();

-- A statement that writes nodes or edges touches the row of each workflow
-- it changed, once: that row's deferred check then runs at commit (one
-- check per statement and workflow, not per node).
CREATE FUNCTION adk._workflow_rows_changed() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NOT adk._check_references() THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        UPDATE adk.workflows w SET updated_at = now() WHERE w.name IN (SELECT n.workflow FROM new_rows n);
    ELSIF TG_OP = 'UPDATE' THEN
        UPDATE adk.workflows w SET updated_at = now()
         WHERE w.name IN (SELECT n.workflow FROM new_rows n UNION SELECT o.workflow FROM old_rows o);
    ELSE
        UPDATE adk.workflows w SET updated_at = now() WHERE w.name IN (SELECT o.workflow FROM old_rows o);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER adk_workflow_nodes_inserted AFTER INSERT ON adk.workflow_nodes
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION adk._workflow_rows_changed();
CREATE TRIGGER adk_workflow_nodes_updated AFTER UPDATE ON adk.workflow_nodes
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION adk._workflow_rows_changed();
CREATE TRIGGER adk_workflow_nodes_deleted AFTER DELETE ON adk.workflow_nodes
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION adk._workflow_rows_changed();
CREATE TRIGGER adk_workflow_edges_inserted AFTER INSERT ON adk.workflow_edges
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION adk._workflow_rows_changed();
CREATE TRIGGER adk_workflow_edges_updated AFTER UPDATE ON adk.workflow_edges
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION adk._workflow_rows_changed();
CREATE TRIGGER adk_workflow_edges_deleted AFTER DELETE ON adk.workflow_edges
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION adk._workflow_rows_changed();
CREATE CONSTRAINT TRIGGER adk_agents_workflows_check
    AFTER INSERT OR UPDATE ON adk.agents DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION adk._workflows_deferred_check();

-- ---------------------------------------------------------------------
-- Defining a workflow in one call.
-- ---------------------------------------------------------------------

-- The rows of a JSON list of nodes, for workflow wf: each an object with
-- "name", "kind" and the kind's target ("agent", "function", "tool",
-- "workflow", "worker"), and optionally the node's settings.  kind may be
-- left out when one target is given; name defaults to the agent, tool or
-- workflow named.
CREATE FUNCTION adk._workflow_node_rows(wf text, nodes jsonb) RETURNS SETOF adk.workflow_nodes
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    keys text[] := ARRAY['name', 'kind', 'agent', 'function', 'tool', 'workflow', 'worker', 'description',
                         'rerun_on_resume', 'wait_for_output', 'retry', 'timeout', 'max_concurrency',
                         'input_schema', 'output_schema'];
    o jsonb;
    i bigint;
    extra text;
    row adk.workflow_nodes;
BEGIN
    IF jsonb_typeof(nodes) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'nodes of workflow "%" must be a JSON array of objects', wf USING ERRCODE = '22023';
    END IF;
    FOR o, i IN SELECT x.value, x.ordinality FROM jsonb_array_elements(nodes) WITH ORDINALITY x LOOP
        IF jsonb_typeof(o) <> 'object' THEN
            RAISE EXCEPTION 'node % of workflow "%" must be a JSON object', i, wf USING ERRCODE = '22023';
        END IF;
        SELECT string_agg(format('"%s"', k), ', ' ORDER BY k) INTO extra
          FROM jsonb_object_keys(o) k WHERE NOT k = ANY (keys);
        IF extra IS NOT NULL THEN
            RAISE EXCEPTION 'node % of workflow "%" has unknown keys: %', i, wf, extra USING ERRCODE = '22023',
                HINT = format('The keys are %s.', array_to_string(keys, ', '));
        END IF;
        IF EXISTS (SELECT 1 FROM jsonb_each(o) e
                    WHERE e.key IN ('name', 'kind', 'agent', 'tool', 'workflow', 'worker', 'description')
                      AND jsonb_typeof(e.value) NOT IN ('string', 'null')) THEN
            RAISE EXCEPTION 'node % of workflow "%" has a name, kind or target that is not a string', i, wf
                USING ERRCODE = '22023';
        END IF;
        row := NULL;
        row.workflow := wf;
        row.agent := o ->> 'agent';
        -- a function: its OID (a regprocedure cast to oid in the caller's
        -- statement), or its signature with its schema (this function
        -- cannot see the caller's search_path)
        IF jsonb_typeof(o -> 'function') = 'number' OR o ->> 'function' ~ '^[0-9]+$' THEN
            SELECT p.oid INTO row.function FROM pg_catalog.pg_proc p WHERE p.oid = (o ->> 'function')::oid;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'function with OID % does not exist', o ->> 'function' USING ERRCODE = '42883';
            END IF;
        ELSIF jsonb_typeof(o -> 'function') = 'string' THEN
            row.function := to_regprocedure(o ->> 'function');
            IF row.function IS NULL THEN
                RAISE EXCEPTION 'function % of node % of workflow "%" does not exist', o ->> 'function', i, wf
                    USING ERRCODE = '42883',
                          HINT = 'Write its schema and argument types, as in "public.my_step(jsonb,jsonb)", or give its OID: ''my_step(jsonb,jsonb)''::regprocedure::oid.';
            END IF;
        ELSIF jsonb_typeof(o -> 'function') <> 'null' THEN
            RAISE EXCEPTION 'function of node % of workflow "%" must be a signature or an OID', i, wf
                USING ERRCODE = '22023';
        END IF;
        row.tool := o ->> 'tool';
        row.sub_workflow := o ->> 'workflow';
        row.worker := o ->> 'worker';
        row.kind := coalesce(o ->> 'kind',
                             CASE WHEN num_nonnulls(row.agent, row.function, row.tool, row.sub_workflow, row.worker) = 1
                                  THEN CASE WHEN row.agent IS NOT NULL THEN 'agent'
                                            WHEN row.function IS NOT NULL THEN 'function'
                                            WHEN row.tool IS NOT NULL THEN 'tool'
                                            WHEN row.sub_workflow IS NOT NULL THEN 'workflow'
                                            ELSE 'parallel_worker' END END);
        IF row.kind IS NULL THEN
            RAISE EXCEPTION 'node % of workflow "%" needs a kind', i, wf USING ERRCODE = '22023',
                HINT = 'Give "kind", or exactly one of "agent", "function", "tool", "workflow", "worker".';
        END IF;
        row.name := coalesce(o ->> 'name', row.agent, row.tool, row.sub_workflow);
        row.description := o ->> 'description';
        row.rerun_on_resume := (o ->> 'rerun_on_resume')::boolean;
        row.wait_for_output := (o ->> 'wait_for_output')::boolean;
        row.retry := CASE WHEN jsonb_typeof(o -> 'retry') <> 'null' THEN o -> 'retry' END;
        IF jsonb_typeof(o -> 'timeout') NOT IN ('number', 'string', 'null') THEN
            RAISE EXCEPTION 'timeout of node % of workflow "%" must be seconds or an interval', i, wf
                USING ERRCODE = '22023', HINT = 'For example 30 or "2 minutes".';
        END IF;
        row.timeout := CASE jsonb_typeof(o -> 'timeout')
                            WHEN 'number' THEN make_interval(secs => (o ->> 'timeout')::double precision)
                            WHEN 'string' THEN (o ->> 'timeout')::interval END;
        row.max_concurrency := (o ->> 'max_concurrency')::integer;
        row.input_schema := CASE WHEN jsonb_typeof(o -> 'input_schema') <> 'null' THEN o -> 'input_schema' END;
        row.output_schema := CASE WHEN jsonb_typeof(o -> 'output_schema') <> 'null' THEN o -> 'output_schema' END;
        row.created_at := now();
        row.updated_at := now();
        RETURN NEXT row;
    END LOOP;
END
$$;

-- The rows of a JSON list of edges: {"from", "to"} and optionally "route"
-- (a value or a list of values; numbers and booleans as their text, as
-- ADK-Go compares IntRoute and BoolRoute) or "default": true.
CREATE FUNCTION adk._workflow_edge_rows(wf text, edges jsonb) RETURNS SETOF adk.workflow_edges
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    o jsonb;
    i bigint;
    extra text;
    row adk.workflow_edges;
BEGIN
    IF jsonb_typeof(edges) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'edges of workflow "%" must be a JSON array of objects', wf USING ERRCODE = '22023';
    END IF;
    FOR o, i IN SELECT x.value, x.ordinality FROM jsonb_array_elements(edges) WITH ORDINALITY x LOOP
        IF jsonb_typeof(o) <> 'object' THEN
            RAISE EXCEPTION 'edge % of workflow "%" must be a JSON object', i, wf USING ERRCODE = '22023';
        END IF;
        SELECT string_agg(format('"%s"', k), ', ' ORDER BY k) INTO extra
          FROM jsonb_object_keys(o) k WHERE NOT k IN ('from', 'to', 'route', 'default');
        IF extra IS NOT NULL THEN
            RAISE EXCEPTION 'edge % of workflow "%" has unknown keys: %', i, wf, extra USING ERRCODE = '22023',
                HINT = 'The keys are from, to, route and default.';
        END IF;
        IF jsonb_typeof(o -> 'from') IS DISTINCT FROM 'string' OR jsonb_typeof(o -> 'to') IS DISTINCT FROM 'string' THEN
            RAISE EXCEPTION 'edge % of workflow "%" needs "from" and "to" node names', i, wf USING ERRCODE = '22023';
        END IF;
        IF jsonb_typeof(o -> 'route') IN ('object')
           OR (jsonb_typeof(o -> 'route') = 'array'
               AND EXISTS (SELECT 1 FROM jsonb_array_elements(o -> 'route') v
                            WHERE jsonb_typeof(v) NOT IN ('string', 'number', 'boolean'))) THEN
            RAISE EXCEPTION 'route of edge % of workflow "%" must be a string, number, boolean or a list of them', i, wf
                USING ERRCODE = '22023';
        END IF;
        row := NULL;
        row.workflow := wf;
        row.from_node := o ->> 'from';
        row.to_node := o ->> 'to';
        row.route := CASE WHEN coalesce(jsonb_typeof(o -> 'route'), 'null') = 'null' THEN NULL
                          WHEN jsonb_typeof(o -> 'route') = 'array'
                          THEN ARRAY(SELECT v #>> '{}' FROM jsonb_array_elements(o -> 'route') v)
                          ELSE ARRAY[o ->> 'route'] END;
        row.is_default := coalesce((o ->> 'default')::boolean, false);
        row.created_at := now();
        RETURN NEXT row;
    END LOOP;
END
$$;

CREATE FUNCTION adk_define_workflow(name text, nodes jsonb DEFAULT NULL, edges jsonb DEFAULT NULL,
                                    description text DEFAULT NULL, max_concurrency integer DEFAULT 0)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF $1 IS NULL THEN
        RAISE EXCEPTION 'workflow name must not be null' USING ERRCODE = '22004';
    END IF;
    INSERT INTO adk.workflows AS w (name, description, max_concurrency)
    VALUES ($1, $4, coalesce($5, 0))
    ON CONFLICT ON CONSTRAINT workflows_pkey DO UPDATE
       SET description = EXCLUDED.description, max_concurrency = EXCLUDED.max_concurrency;
    IF $2 IS NOT NULL THEN
        PERFORM adk._workflow_node_rows($1, $2);   -- its errors before anything is deleted
        DELETE FROM adk.workflow_nodes n WHERE n.workflow = $1;
        INSERT INTO adk.workflow_nodes SELECT * FROM adk._workflow_node_rows($1, $2);
    END IF;
    IF $3 IS NOT NULL THEN
        PERFORM adk._workflow_edge_rows($1, $3);
        DELETE FROM adk.workflow_edges e WHERE e.workflow = $1;
        INSERT INTO adk.workflow_edges SELECT * FROM adk._workflow_edge_rows($1, $3);
    END IF;
END
$$;
COMMENT ON FUNCTION adk_define_workflow(text, jsonb, jsonb, text, integer) IS
    'Create or replace a graph workflow (and its agent of kind workflow): nodes and edges as JSON lists replace the old ones (NULL keeps them); the graph is checked when the transaction commits (docs/workflows.md).';

-- ---------------------------------------------------------------------
-- Seeing it: the runs of workflows, and the graph as a Mermaid flowchart.
-- ---------------------------------------------------------------------

-- Each node activation of a workflow: the adk.run_states rows whose
-- node_path ends in '<workflow>/<node>@<run id>' for a node of that
-- workflow (a nested workflow's nodes under their parent's path).
-- Reads as the caller: a user sees the rows row-level security lets them.
CREATE VIEW adk.workflow_runs WITH (security_invoker = true) AS
SELECT r.app_name, r.user_id, r.session_id, r.invocation_id, p.workflow, p.node, p.run_id,
       r.node_path, r.status,
       CASE WHEN r.status = 'waiting' THEN r.interrupt_ids END AS waiting_on,
       r.input, r.output, r.updated_at, r.triggered_by, r.branch, r.graph_hash
  FROM adk.run_states r
 CROSS JOIN LATERAL regexp_match(r.node_path, '(?:^|/)([A-Za-z_][A-Za-z0-9_]*)/([A-Za-z_][A-Za-z0-9_-]*)@([^/@]+)$') m
 CROSS JOIN LATERAL (SELECT m[1] AS workflow, m[2] AS node, m[3] AS run_id) p
 WHERE m IS NOT NULL
   AND EXISTS (SELECT 1 FROM adk.workflow_nodes n WHERE n.workflow = p.workflow AND n.name = p.node);
COMMENT ON VIEW adk.workflow_runs IS
    'Node activations of graph workflows (adk.run_states rows with node_path <workflow>/<node>@<run id>): status, the interrupt ids a waiting node waits on, the node (or START) that triggered it, its branch and the graph hash it ran under.';

-- A label in a Mermaid flowchart: adk._mermaid_text's escaping, and a
-- double quote as its entity code (labels are written in quotes).
CREATE FUNCTION adk._mermaid_label(t text, max_chars integer DEFAULT 60) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT replace(adk._mermaid_text(t, max_chars), '"', '#quot;')
$$;

CREATE FUNCTION adk_workflow_mermaid(workflow text, invocation_id text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r record;
    ids jsonb := '{"START": "start"}';
    lines text[] := ARRAY['flowchart TD', '    start(["START"])'];
    statuses jsonb := '{}';
    i integer := 0;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM adk.workflows w WHERE w.name = $1) THEN
        RAISE EXCEPTION 'workflow "%" does not exist', $1 USING ERRCODE = '42704';
    END IF;
    -- each node's latest activation in the invocation, read once
    IF $2 IS NOT NULL THEN
        SELECT coalesce(jsonb_object_agg(s.node, s.status), '{}') INTO statuses
          FROM (SELECT DISTINCT ON (x.node) x.node, x.status
                  FROM adk.workflow_runs x
                 WHERE x.invocation_id = $2 AND x.workflow = $1
                 ORDER BY x.node, x.updated_at DESC, x.run_id DESC) s;
    END IF;
    FOR r IN
        SELECT n.name, n.kind,
               coalesce(n.agent, n.function::text, n.tool, n.sub_workflow, n.worker) AS target,
               statuses ->> n.name AS status
          FROM adk.workflow_nodes n
         WHERE n.workflow = $1
         ORDER BY n.name COLLATE "C"
    LOOP
        i := i + 1;
        ids := ids || jsonb_build_object(r.name, 'n' || i);
        lines := lines || format('    n%s%s"%s<br/>%s%s"%s', i,
                                 CASE r.kind WHEN 'join' THEN '{{' WHEN 'function' THEN '(' WHEN 'tool' THEN '[/'
                                             WHEN 'workflow' THEN '[[' WHEN 'parallel_worker' THEN '[\' ELSE '[' END,
                                 adk._mermaid_label(r.name),
                                 r.kind,
                                 CASE WHEN r.target IS NOT NULL AND r.target <> r.name
                                      THEN ' ' || adk._mermaid_label(r.target) ELSE '' END,
                                 CASE r.kind WHEN 'join' THEN '}}' WHEN 'function' THEN ')' WHEN 'tool' THEN '/]'
                                             WHEN 'workflow' THEN ']]' WHEN 'parallel_worker' THEN '\]' ELSE ']' END);
        IF r.status IS NOT NULL THEN
            lines := lines || format('    class n%s %s', i, r.status);
        END IF;
    END LOOP;
    FOR r IN
        SELECT e.from_node, e.to_node, e.route, e.is_default
          FROM adk.workflow_edges e WHERE e.workflow = $1
         ORDER BY e.from_node = 'START' DESC, e.from_node COLLATE "C", e.to_node COLLATE "C"
    LOOP
        lines := lines || format('    %s %s %s', ids ->> r.from_node,
                                 CASE WHEN r.is_default THEN '-.->|"default"|'
                                      WHEN r.route IS NOT NULL THEN format('-->|"%s"|', adk._mermaid_label(array_to_string(r.route, ', ')))
                                      ELSE '-->' END,
                                 ids ->> r.to_node);
    END LOOP;
    FOR r IN
        SELECT n.name, n.worker FROM adk.workflow_nodes n
         WHERE n.workflow = $1 AND n.kind = 'parallel_worker' ORDER BY n.name COLLATE "C"
    LOOP
        lines := lines || format('    %s -.-|"each item"| %s', ids ->> r.name, ids ->> r.worker);
    END LOOP;
    IF $2 IS NOT NULL THEN
        lines := lines || ARRAY['    classDef running fill:#dbeafe,stroke:#2563eb',
                                '    classDef waiting fill:#fef3c7,stroke:#d97706',
                                '    classDef completed fill:#dcfce7,stroke:#16a34a',
                                '    classDef failed fill:#fee2e2,stroke:#dc2626',
                                '    classDef cancelled fill:#e5e7eb,stroke:#6b7280'];
    END IF;
    RETURN array_to_string(lines, E'\n');
END
$$;
COMMENT ON FUNCTION adk_workflow_mermaid(text, text) IS
    'The workflow as a Mermaid flowchart (nodes with kind and target, edges with routes; default edges dotted); with an invocation id, each node''s latest status in it as a class (running, waiting, completed, failed, cancelled), from the adk.run_states rows the caller may see.';

GRANT SELECT ON adk.workflows, adk.workflow_nodes, adk.workflow_edges, adk.workflow_runs TO adk_user;
GRANT INSERT, UPDATE, DELETE ON adk.workflows, adk.workflow_nodes, adk.workflow_edges TO adk_admin;

SELECT pg_catalog.pg_extension_config_dump('adk.workflows', '');
SELECT pg_catalog.pg_extension_config_dump('adk.workflow_nodes', '');
SELECT pg_catalog.pg_extension_config_dump('adk.workflow_edges', '');

-- ---------------------------------------------------------------------
-- Running a workflow (src/runner/workflow.c, docs/workflows.md "What
-- runs"): the runner reads the graph through these, as the owner.
-- ---------------------------------------------------------------------

-- What the runner does not run yet in a workflow: NULL when every node has
-- only settings its kind honours (a join makes no call a retry or a
-- timeout could act on; an agent node takes input_schema only -- its
-- answer's event already completes its row --, a nested workflow node the
-- schemas and wait_for_output, neither a retry or a timeout yet; parallel
-- worker nodes take no settings yet) and calls no tool that pauses; else
-- the first other node, as a sentence.
CREATE FUNCTION adk._workflow_refusal(wf text) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT format('node "%s" of workflow "%s" %s', n.name, wf,
                  CASE WHEN n.kind = 'join' AND n.retry IS NOT NULL THEN 'is a join with a retry'
                       WHEN n.kind = 'join' AND n.timeout IS NOT NULL THEN 'is a join with a timeout'
                       WHEN n.kind IN ('agent', 'parallel_worker', 'workflow') AND n.retry IS NOT NULL
                            THEN format('is of kind %s with a retry', n.kind)
                       WHEN n.kind IN ('agent', 'parallel_worker', 'workflow') AND n.timeout IS NOT NULL
                            THEN format('is of kind %s with a timeout', n.kind)
                       WHEN n.kind IN ('agent', 'parallel_worker') AND n.wait_for_output
                            THEN format('is of kind %s with wait_for_output', n.kind)
                       WHEN n.kind = 'agent' AND n.output_schema IS NOT NULL
                            THEN 'is of kind agent with an output schema'
                       WHEN n.kind = 'parallel_worker'
                            AND (n.input_schema IS NOT NULL OR n.output_schema IS NOT NULL)
                            THEN format('is of kind %s with an input or output schema', n.kind)
                       ELSE format('runs tool "%s" (long-running or requiring confirmation)', n.tool) END)
      FROM adk.workflow_nodes n
     WHERE n.workflow = wf
       AND ((n.kind IN ('join', 'agent', 'workflow', 'parallel_worker')
             AND (n.retry IS NOT NULL OR n.timeout IS NOT NULL))
            OR (n.kind IN ('agent', 'parallel_worker') AND (n.wait_for_output OR n.output_schema IS NOT NULL))
            OR (n.kind = 'parallel_worker' AND n.input_schema IS NOT NULL)
            OR EXISTS (SELECT 1 FROM adk.tools t
                        WHERE t.name = n.tool AND (t.require_confirmation OR t.long_running)))
     ORDER BY n.name COLLATE "C"
     LIMIT 1
$$;

-- An agent node whose agent, or an agent below it, has a tool that is
-- long-running or requires confirmation (docs/workflows.md "Not run
-- yet"): its pause would hold the node, but the answer would not resume
-- the agent in its lane -- it would become the node's output, the tool's
-- result never seen by the model, a confirmed tool never run -- so the
-- run is refused before anything is stored.  NULL: no such node.
CREATE FUNCTION adk._workflow_pause_refusal(wf text) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT format('node "%s" of workflow "%s" is of kind agent and agent "%s" has tool "%s" (long-running or requiring confirmation)',
                  n.name, wf, a.name, t.name)
      FROM adk.workflow_nodes n
     CROSS JOIN LATERAL adk._agent_tree(n.agent) a
      JOIN adk.agents g ON g.name = a.name
     CROSS JOIN LATERAL unnest(g.tools) WITH ORDINALITY AS u(tool, i)
      JOIN adk.tools t ON t.name = u.tool AND (t.long_running OR t.require_confirmation)
     WHERE n.workflow = wf AND n.kind = 'agent'
     ORDER BY n.name COLLATE "C", a.depth, a.name COLLATE "C", u.i
     LIMIT 1
$$;

-- The nodes of a workflow as the scheduler needs them: kind, a function
-- node's function as a qualified name to call (a tool node's: its tool's
-- name in adk.tools; an agent node's: its agent; a nested workflow's: its
-- name; a parallel worker's: its worker node), each node's predecessors
-- (what a join waits for), rerun_on_resume, in name order.
CREATE FUNCTION adk._workflow_plan(wf text)
RETURNS TABLE (name text, kind text, call text, predecessors text[], rerun_on_resume boolean)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT n.name, n.kind,
           coalesce((SELECT format('%I.%I', ns.nspname, p.proname)
                       FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace ns ON ns.oid = p.pronamespace
                      WHERE p.oid = n.function::oid), n.tool, n.agent, n.sub_workflow, n.worker),
           ARRAY(SELECT e.from_node FROM adk.workflow_edges e
                  WHERE e.workflow = wf AND e.to_node = n.name
                  ORDER BY e.from_node COLLATE "C"),
           n.rerun_on_resume
      FROM adk.workflow_nodes n
     WHERE n.workflow = wf
     ORDER BY n.name COLLATE "C"
$$;

-- ADK-Go's findSuccessors (workflow/scheduler.go) for a completed
-- activation of node (or START) that gave routes: an unconditional edge
-- always fires and does not keep the default from firing; a routed edge
-- fires when one of its values is among routes; the default edge fires
-- when no routed edge did; each target once.  No rows: an all-routed dead
-- end, which stops that path silently.  In target name order.
CREATE FUNCTION adk._workflow_successors(wf text, node text, routes text[])
RETURNS TABLE (to_node text)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    WITH e AS (
        SELECT e.to_node, e.route, e.is_default,
               coalesce(e.route && routes, false) AS matched
          FROM adk.workflow_edges e
         WHERE e.workflow = wf AND e.from_node = node
    )
    SELECT DISTINCT e.to_node COLLATE "C"
      FROM e
     WHERE (e.route IS NULL AND NOT e.is_default)
        OR e.matched
        OR (e.is_default AND NOT EXISTS (SELECT 1 FROM e m WHERE m.matched))
     ORDER BY 1
$$;

REVOKE ALL ON FUNCTION adk._workflow_refusal(text), adk._workflow_plan(text),
                       adk._workflow_successors(text, text, text[])
   FROM PUBLIC;

-- Where a paused run of a workflow stands (src/runner/workflow.c, on
-- resume): each node activation's row of the invocation directly under
-- p_base (the workflow's node path), with its node and activation number,
-- status, input and output, its branch, the graph hash it ran under and
-- what triggered it (columns of the row, written as it started), and the
-- answers the user gave to its interrupts, {"<interrupt id>": response},
-- with the latest one (a response {"result": value} is the value, as ADK
-- unwraps it).  Read from the rows _resume_interrupts locked, and the
-- answers only for rows that have some, so a resume does not cost more
-- per node the paused workflow has (test/bench/workflow.sh).
CREATE FUNCTION adk._workflow_resume_rows(p_app text, p_user text, p_session text,
                                          p_invocation text, p_base text)
RETURNS TABLE (node text, run_no integer, status text, input jsonb, output jsonb,
               branch text, graph_hash text, answers jsonb, last_answer jsonb,
               triggered_by text)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT m[1], m[2]::integer, r.status, r.input, r.output, r.branch, r.graph_hash,
           coalesce(a.answers, '{}'), a.last_answer, r.triggered_by
      FROM adk.run_states r
     CROSS JOIN LATERAL regexp_match(substr(r.node_path, length(p_base) + 2),
                                     '^([A-Za-z_][A-Za-z0-9_-]*)@([0-9]+)$') m
      LEFT JOIN LATERAL (SELECT jsonb_object_agg(x.id, x.response) AS answers,
                                (array_agg(x.response ORDER BY x.seq DESC))[1] AS last_answer
                           FROM (SELECT DISTINCT ON (p #>> '{function_response,id}')
                                        p #>> '{function_response,id}' AS id,
                                        -- {"result": value} is a bare value (ADK unwraps it)
                                        CASE WHEN jsonb_typeof(p #> '{function_response,response}') = 'object'
                                                  AND p #> '{function_response,response}' ? 'result'
                                                  AND (SELECT count(*) FROM jsonb_object_keys(p #> '{function_response,response}')) = 1
                                             THEN p #> '{function_response,response,result}'
                                             ELSE coalesce(p #> '{function_response,response}', '{}') END AS response,
                                        e.seq
                                   FROM adk.events e
                                  CROSS JOIN LATERAL adk._parts(e.event_data -> 'content') p
                                  WHERE cardinality(r.answered_ids) > 0
                                    AND e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
                                    AND e.event_data ->> 'author' = 'user'
                                    AND e.event_data #> '{custom_metadata,adk_appended_by}' IS NULL
                                    AND p #>> '{function_response,id}' = ANY (r.answered_ids)
                                  ORDER BY p #>> '{function_response,id}', e.seq DESC) x) a ON true
     WHERE r.app_name = p_app AND r.user_id = p_user AND r.session_id = p_session
       AND r.invocation_id = p_invocation
       AND starts_with(r.node_path, p_base || '/')
       AND m IS NOT NULL
     ORDER BY m[1], m[2]::integer;
END
$$;

REVOKE ALL ON FUNCTION adk._workflow_resume_rows(text, text, text, text, text) FROM PUBLIC;

-- The settings of a workflow's nodes that act on their activations
-- (src/runner/workflow_node.c, docs/workflows.md "Node settings"): retry
-- (completed with ADK-Go's defaults when the node was written), timeout in
-- whole milliseconds (at least 1), input and output schemas,
-- wait_for_output.  Only the nodes that have any, in name order.
CREATE FUNCTION adk._workflow_node_settings(wf text)
RETURNS TABLE (name text, retry jsonb, timeout_ms integer, input_schema jsonb,
               output_schema jsonb, wait_for_output boolean)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT n.name, n.retry,
           greatest(1, least(ceil(extract(epoch FROM n.timeout) * 1000), 2147483647))::integer,
           n.input_schema, n.output_schema, n.wait_for_output
      FROM adk.workflow_nodes n
     WHERE n.workflow = wf
       AND (n.retry IS NOT NULL OR n.timeout IS NOT NULL OR n.input_schema IS NOT NULL
            OR n.output_schema IS NOT NULL OR n.wait_for_output)
     ORDER BY n.name COLLATE "C"
$$;

-- A node activation's retry starts another attempt (workflow_node.c): its
-- adk.run_states row counts it.
CREATE FUNCTION adk._workflow_node_attempt(p_app text, p_user text, p_session text,
                                           p_invocation text, p_path text)
RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    UPDATE adk.run_states r SET attempt = r.attempt + 1
     WHERE r.app_name = p_app AND r.user_id = p_user AND r.session_id = p_session
       AND r.invocation_id = p_invocation AND r.node_path = p_path
$$;

REVOKE ALL ON FUNCTION adk._workflow_node_settings(text),
                       adk._workflow_node_attempt(text, text, text, text, text)
   FROM PUBLIC;

-- A graph workflow's invocation failed (src/runner/workflow.c,
-- docs/workflows.md "Statuses"): its node activations still running
-- below p_base (the outermost workflow's node path) that no error event
-- of their own ended, each with what its stop event carries -- its
-- branch, what triggered it, its graph hash.  failed: it fails with the
-- node that failed -- a nested workflow node the failure is below, the
-- parallel worker of a failed item, and so on up; the others the failure
-- stops (ADK-Go cancels them).
CREATE FUNCTION adk._workflow_stopped(p_app text, p_user text, p_session text,
                                      p_invocation text, p_base text)
RETURNS TABLE (node_path text, branch text, triggered_by text, graph_hash text,
               failed boolean)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    WITH RECURSIVE errors AS (
        SELECT DISTINCT adk._node_path(e.event_data) AS path
          FROM adk.events e
         WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
           AND e.invocation_id = p_invocation
           AND e.event_data ->> 'error_code' IS NOT NULL
           AND e.event_data ->> 'author' <> 'user'
           AND starts_with(adk._node_path(e.event_data), p_base || '/')
    ), rows AS (
        SELECT r.node_path, r.status, r.branch, r.triggered_by, r.graph_hash,
               substring(r.node_path from '^(.*)/[^/]*$') AS dir,
               substring(r.node_path from '/([^/@]*)@[0-9]+$') AS node
          FROM adk.run_states r
         WHERE r.app_name = p_app AND r.user_id = p_user AND r.session_id = p_session
           AND r.invocation_id = p_invocation
           AND starts_with(r.node_path, p_base || '/')
    ), live AS (
        SELECT x.*, EXISTS (SELECT 1 FROM adk.workflow_nodes n
                             WHERE n.workflow = substring(x.dir from '[^/]*$') AND n.name = x.node
                               AND n.kind = 'parallel_worker') AS worker
          FROM rows x
         WHERE x.status = 'running' AND x.graph_hash IS NOT NULL
           AND x.node_path NOT IN (SELECT errors.path FROM errors)
    ), bad AS (
        SELECT errors.path, x.dir, x.branch, x.triggered_by
          FROM errors LEFT JOIN rows x ON x.node_path = errors.path
        UNION
        SELECT l.node_path, l.dir, l.branch, l.triggered_by
          FROM live l JOIN bad b
            ON starts_with(b.path, l.node_path || '/')
            OR (l.worker AND b.dir = l.dir AND b.triggered_by = l.node
                AND b.branch IS NOT DISTINCT FROM l.branch)
    )
    SELECT l.node_path, l.branch, l.triggered_by, l.graph_hash,
           l.node_path IN (SELECT bad.path FROM bad)
      FROM live l
     ORDER BY 5 DESC, l.node_path COLLATE "C"
$$;

REVOKE ALL ON FUNCTION adk._workflow_stopped(text, text, text, text, text) FROM PUBLIC;
-- ---------------------------------------------------------------------
-- Privileges (docs/security.md).  PUBLIC gets nothing.  adk_user runs apps and
-- reads sessions; adk_admin also defines models, tools, agents, apps and
-- secrets.  Writes to the store go through the adk_* functions.
-- ---------------------------------------------------------------------

GRANT adk_user TO adk_admin;

REVOKE ALL ON SCHEMA adk FROM PUBLIC;
GRANT USAGE ON SCHEMA adk TO adk_user;

GRANT SELECT ON adk.sessions, adk.events, adk.app_states, adk.user_states,
                adk.adk_internal_metadata, adk.event_log, adk.live_events, adk.active_tasks
   TO adk_user;

-- Definitions: adk_user reads models; adk_admin defines them.  Secrets
-- are adk_admin's alone.  The ledger is readable by adk_user.
-- adk.models.options may carry headers an admin set (a gateway's token,
-- an organisation id): adk_user reads every column but options, and the
-- options without header values in adk.model_definitions; adk_admin reads
-- the table whole.
GRANT SELECT ON adk.model_calls TO adk_user;
GRANT SELECT (name, provider, endpoint, model, api_key_env, api_key_secret,
              created_at, updated_at, price, fallbacks, capabilities)
   ON adk.models TO adk_user;
GRANT SELECT, INSERT, UPDATE, DELETE ON adk.models TO adk_admin;
CREATE VIEW adk.model_definitions AS
SELECT m.name, m.provider, m.endpoint, m.model, m.api_key_env, m.api_key_secret,
       CASE WHEN m.options OPERATOR(pg_catalog.?) 'headers'
            THEN m.options OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('headers',
                 (SELECT COALESCE(pg_catalog.jsonb_object_agg(h.key, pg_catalog.to_jsonb('[REDACTED]'::text)), '{}'::jsonb)
                    FROM pg_catalog.jsonb_each(m.options OPERATOR(pg_catalog.->) 'headers') h))
            ELSE m.options END AS options,
       m.price, m.created_at, m.updated_at, m.fallbacks, m.capabilities
  FROM adk.models m;
COMMENT ON VIEW adk.model_definitions IS
    'adk.models with the values of options.headers shown as [REDACTED] (adk_user may not read adk.models.options; adk_admin reads the table).';
GRANT SELECT ON adk.model_definitions TO adk_user;
GRANT SELECT, INSERT, UPDATE, DELETE ON adk.secrets TO adk_admin;
GRANT DELETE ON adk.model_calls TO adk_admin;
GRANT SELECT ON adk.tools, adk.agents, adk.apps, adk.plugins TO adk_user;
GRANT INSERT, UPDATE, DELETE ON adk.tools, adk.agents, adk.apps, adk.plugins TO adk_admin;

-- Functions are executable by PUBLIC by default: take that back from every
-- function of the extension, then grant the API (adk_*) to adk_user, the
-- definition API to adk_admin.  The internals (adk._*) are granted only
-- where a caller's own statement runs them: the SECURITY INVOKER API and
-- the views adk_user may read (adk_user), the triggers on the definition
-- tables adk_admin writes (adk_admin), and adk._job_trigger, which CREATE
-- TRIGGER in adk_create_trigger checks -- and adk._agent_tree, a read of
-- adk.agents an adk_user may make anyway.  Every other internal runs only
-- inside the extension, as the owner of schema adk, and nobody else may
-- call it with arguments of their own (docs/security.md, "Security").
-- A new internal that a SECURITY INVOKER function, a view or a trigger on
-- a definition table calls must be added to one of the lists below
-- (95_tenancy_grants.sql adds what row-level security's policies run).
DO $grants$
DECLARE
    f regprocedure;
    n name;
    user_internals name[] := ARRAY['_check_id', '_session_json', '_session_not_found',
        '_prefixed', '_parts', '_tool_schema', '_function_inputs', '_type_schema',
        '_check_tool_function', '_job_trigger', '_agent_tree',
        '_artifact_run_session', '_artifact_scope', '_check_filename',
        '_memory_search', '_memory_search_vec', '_any_word_query', '_cosine', '_embed',
        '_memory_config', '_artifact_names', '_artifact_latest',
        '_page_size', '_page_token', '_page_token_read', '_mermaid_text', '_mermaid_who',
        '_json_schema', '_mermaid_label', '_wait_events', '_job_triggers', '_run_status'];
    admin_internals name[] := ARRAY['_agent_cycle', '_agent_edges', '_agent_model',
        '_builtin_tools', '_check_agent_tree', '_check_call_options', '_check_compaction', '_check_thinking',
        '_check_one_parent', '_check_references', '_check_root_mode', '_check_task_placement',
        '_check_tool_parameters', '_format_cycle',
        '_endpoint_problem', '_host_entry_problem',
        '_lock_definitions', '_name_list', '_reserved_tool_names',
        '_check_workflow', '_workflow_hash', '_workflow_retry_defaults',
        '_workflow_node_rows', '_workflow_edge_rows'];
BEGIN
    FOR f, n IN
        SELECT p.oid::regprocedure, p.proname
          FROM pg_catalog.pg_proc p
          JOIN pg_catalog.pg_depend d
            ON d.classid = 'pg_catalog.pg_proc'::regclass AND d.objid = p.oid
           AND d.refclassid = 'pg_catalog.pg_extension'::regclass AND d.deptype = 'e'
          JOIN pg_catalog.pg_extension x ON x.oid = d.refobjid
         WHERE x.extname = 'adk_runner'
    LOOP
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', f);
        IF n ~ '^(adk_define_|adk_set_secret|adk_stat_reset)' OR n = ANY (admin_internals) THEN
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO adk_admin', f);
        ELSIF n !~ '^_' OR n = ANY (user_internals) THEN
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO adk_user', f);
        END IF;
    END LOOP;
END
$grants$;
-- ---------------------------------------------------------------------
-- Scale-out on Citus (docs/operations.md).
--
-- adk_distribute() lays the store out the one way the extension supports:
--
--   adk.sessions                     distributed by id
--   adk.events                       distributed by session_id, colocated
--   adk.run_states, adk.compactions  distributed by session_id, colocated
--   adk.app_states, adk.user_states,
--   adk.adk_internal_metadata        reference tables
--   everything else (definitions, secrets, invocations, model calls,
--   jobs)                            on the coordinator, where runs execute
--
-- A session, its events and its side rows are then on one shard: every
-- statement about one session is routed to one worker, and the triggers on
-- those shards reach only colocated shards (the events trigger bumps the
-- session row of its own shard).  adk_undistribute() turns every table back
-- into a plain local table.  Anything of ours that Citus manages in another
-- layout is refused, by these functions and by every append (which would
-- otherwise write where no read looks).
-- ---------------------------------------------------------------------

-- The layout: relation, how Citus should hold it, by which column.
CREATE FUNCTION adk._citus_layout(OUT rel regclass, OUT kind text, OUT dist_column text)
RETURNS SETOF record
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    VALUES ('adk.sessions'::pg_catalog.regclass, 'distributed', 'id'),
           ('adk.events'::pg_catalog.regclass, 'distributed', 'session_id'),
           ('adk.run_states'::pg_catalog.regclass, 'distributed', 'session_id'),
           ('adk.compactions'::pg_catalog.regclass, 'distributed', 'session_id'),
           ('adk.app_states'::pg_catalog.regclass, 'reference', NULL),
           ('adk.user_states'::pg_catalog.regclass, 'reference', NULL),
           ('adk.adk_internal_metadata'::pg_catalog.regclass, 'reference', NULL)
$$;

-- Our tables Citus manages, and whether each is where the layout wants it
-- (the partitions of adk.sessions and adk.events follow their parents).
CREATE FUNCTION adk._citus_tables(OUT rel regclass, OUT supported boolean)
RETURNS SETOF record
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension x WHERE x.extname OPERATOR(pg_catalog.=) 'citus') THEN
        RETURN;
    END IF;
    RETURN QUERY EXECUTE $q$
        SELECT p.logicalrelid::pg_catalog.regclass,
               coalesce(CASE l.kind
                   WHEN 'reference' THEN p.partmethod OPERATOR(pg_catalog.=) 'n'
                                     AND p.repmodel OPERATOR(pg_catalog.=) 't'
                   ELSE p.partmethod OPERATOR(pg_catalog.=) 'h'
                    AND pg_catalog.column_to_column_name(p.logicalrelid, p.partkey)
                        OPERATOR(pg_catalog.=) l.dist_column
                    AND p.colocationid OPERATOR(pg_catalog.=)
                        (SELECT s.colocationid FROM pg_catalog.pg_dist_partition s
                          WHERE s.logicalrelid OPERATOR(pg_catalog.=) 'adk.sessions'::pg_catalog.regclass)
                   END, false)
          FROM pg_catalog.pg_dist_partition p
          JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) p.logicalrelid
          LEFT JOIN pg_catalog.pg_inherits i ON i.inhrelid OPERATOR(pg_catalog.=) c.oid
          LEFT JOIN adk._citus_layout() l
            ON l.rel OPERATOR(pg_catalog.=) coalesce(i.inhparent, c.oid)
         WHERE c.relnamespace OPERATOR(pg_catalog.=) 'adk'::pg_catalog.regnamespace
         ORDER BY p.logicalrelid::pg_catalog.regclass::pg_catalog.text
    $q$;
END
$$;

CREATE FUNCTION adk_distribute() RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l record;
    bad text;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension x WHERE x.extname OPERATOR(pg_catalog.=) 'citus') THEN
        RAISE EXCEPTION 'Citus is not installed in this database'
            USING ERRCODE = '0A000',
                  HINT = 'CREATE EXTENSION citus, add the worker nodes, then SELECT adk_distribute().';
    END IF;
    SELECT pg_catalog.string_agg(t.rel::pg_catalog.text, ', ') INTO bad
      FROM adk._citus_tables() t WHERE NOT t.supported;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'Citus manages % in a layout adk_runner does not support', bad
            USING ERRCODE = '0A000',
                  DETAIL = 'Sessions must be distributed by id, events, run states and compactions by session_id colocated with them, app and user state as reference tables, everything else kept on the coordinator.',
                  HINT = 'SELECT adk_undistribute(), then SELECT adk_distribute().';
    END IF;
    -- our triggers run on the shards; each reaches only its own colocated
    -- shards (citus.enable_unsafe_triggers is what allows that)
    PERFORM pg_catalog.set_config('citus.enable_unsafe_triggers', 'on', true);
    -- events already stored are copied into the shards as they are: the
    -- triggers that place new events and apply rewinds are off while they
    -- are (adk.sessions.rewound is copied with the sessions; the lock this
    -- takes holds off other writers until commit)
    ALTER TABLE adk.events DISABLE TRIGGER adk_events_before_insert;
    ALTER TABLE adk.events DISABLE TRIGGER adk_events_after_rewind;
    FOR l IN SELECT * FROM adk._citus_layout() LOOP
        CONTINUE WHEN EXISTS (SELECT FROM adk._citus_tables() t WHERE t.rel OPERATOR(pg_catalog.=) l.rel);
        IF l.kind OPERATOR(pg_catalog.=) 'reference' THEN
            EXECUTE 'SELECT pg_catalog.create_reference_table($1)' USING l.rel;
        ELSIF l.rel OPERATOR(pg_catalog.=) 'adk.sessions'::pg_catalog.regclass THEN
            EXECUTE 'SELECT pg_catalog.create_distributed_table($1, $2, colocate_with => ''none'')'
                USING l.rel, l.dist_column;
        ELSE
            EXECUTE 'SELECT pg_catalog.create_distributed_table($1, $2, colocate_with => ''adk.sessions'')'
                USING l.rel, l.dist_column;
        END IF;
        -- the rows are in the shards now: empty the coordinator's own copy
        -- (adk_undistribute() puts them back from the shards)
        EXECUTE 'SELECT pg_catalog.truncate_local_data_after_distributing_table($1)' USING l.rel;
    END LOOP;
    ALTER TABLE adk.events ENABLE TRIGGER adk_events_before_insert;
    ALTER TABLE adk.events ENABLE TRIGGER adk_events_after_rewind;
END
$$;
COMMENT ON FUNCTION adk_distribute() IS
    'On Citus: distribute sessions by id with events, run states and compactions colocated by session_id, app/user state as reference tables; the rest stays on the coordinator. Refuses any other layout.';

-- Citus's undistribute_table() cannot take a table that belongs to an
-- extension (it rebuilds the table under a new name), so each of ours is
-- taken back in place, the way DROP TABLE takes a distributed table apart:
-- its rows are kept aside, its partition detached (Citus cannot take a
-- partition's metadata apart alone), its shards and metadata removed, then
-- the partition attached again and the rows put back as they were --
-- triggers off (session_replication_role = replica), so events keep their
-- seq and time, as with pg_restore --disable-triggers.
CREATE FUNCTION adk_undistribute() RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    t record;
    part regclass;
    rels regclass[];
    r regclass;
    tg name;
    n integer := 0;
BEGIN
    IF NOT EXISTS (SELECT FROM adk._citus_tables()) THEN
        RETURN;
    END IF;
    PERFORM pg_catalog.set_config('citus.enable_unsafe_triggers', 'on', true);
    FOR t IN SELECT c.rel FROM adk._citus_tables() c
              WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_inherits i
                                 WHERE i.inhrelid OPERATOR(pg_catalog.=) c.rel)
    LOOP
        n := n OPERATOR(pg_catalog.+) 1;
        EXECUTE pg_catalog.format('CREATE TEMP TABLE adk_undistribute_%s ON COMMIT DROP AS SELECT * FROM %s',
                                  n, t.rel);
        SELECT i.inhrelid::pg_catalog.regclass INTO part FROM pg_catalog.pg_inherits i
         WHERE i.inhparent OPERATOR(pg_catalog.=) t.rel;
        rels := ARRAY[t.rel];
        IF part IS NOT NULL THEN
            -- on the coordinator only: the workers' own copies stay as
            -- they are, the shards go with their parent's
            PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'off', true);
            EXECUTE pg_catalog.format('ALTER TABLE %s DETACH PARTITION %s', t.rel, part);
            PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'on', true);
            rels := rels OPERATOR(pg_catalog.||) part;
        END IF;
        FOREACH r IN ARRAY rels LOOP
            -- (the workers take a partition's metadata apart with its parent's)
            PERFORM pg_catalog.master_remove_distributed_table_metadata_from_workers(
                        r, n.nspname, c.relname)
               FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
              WHERE c.oid OPERATOR(pg_catalog.=) r AND r IS DISTINCT FROM part;
            PERFORM pg_catalog.citus_drop_all_shards(r, n.nspname, c.relname,
                                                     r IS NOT DISTINCT FROM part)
               FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
              WHERE c.oid OPERATOR(pg_catalog.=) r;
            PERFORM pg_catalog.master_remove_partition_metadata(r, n.nspname, c.relname)
               FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
              WHERE c.oid OPERATOR(pg_catalog.=) r;
            -- what Citus left on the coordinator's own table: its TRUNCATE
            -- trigger, and the rows it held before it was distributed
            FOR tg IN SELECT g.tgname FROM pg_catalog.pg_trigger g
                       WHERE g.tgrelid OPERATOR(pg_catalog.=) r
                         AND g.tgfoid OPERATOR(pg_catalog.=) 'pg_catalog.citus_truncate_trigger'::pg_catalog.regproc
            LOOP
                EXECUTE pg_catalog.format('DROP TRIGGER %I ON %s', tg, r);
            END LOOP;
            EXECUTE pg_catalog.format('TRUNCATE %s', r);
        END LOOP;
        IF part IS NOT NULL THEN
            PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'off', true);
            EXECUTE pg_catalog.format('ALTER TABLE %s ATTACH PARTITION %s FOR VALUES WITH (MODULUS 1, REMAINDER 0)',
                                      t.rel, part);
            PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'on', true);
        END IF;
        PERFORM pg_catalog.set_config('session_replication_role', 'replica', true);
        EXECUTE pg_catalog.format('INSERT INTO %s SELECT * FROM adk_undistribute_%s', t.rel, n);
        PERFORM pg_catalog.set_config('session_replication_role', 'origin', true);
    END LOOP;
END
$$;
COMMENT ON FUNCTION adk_undistribute() IS
    'On Citus: turn every table of adk_runner that Citus manages back into a local table on the coordinator.';

-- DROP EXTENSION adk_runner with our tables on Citus: take them back
-- first (Citus cannot drop an extension's distributed partitioned tables:
-- it drops the workers' copies with the extension before the shards).  At
-- ddl_command_start the extension being dropped is known only from the
-- statement's text.
CREATE FUNCTION adk._drop_extension_undistribute() RETURNS event_trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    nsp name;
BEGIN
    IF pg_catalog.current_query() OPERATOR(pg_catalog.~*) '\madk_runner\M'
       AND EXISTS (SELECT FROM adk._citus_tables()) THEN
        SELECT n.nspname INTO nsp
          FROM pg_catalog.pg_extension x
          JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) x.extnamespace
         WHERE x.extname OPERATOR(pg_catalog.=) 'adk_runner';
        EXECUTE pg_catalog.format('SELECT %I.adk_undistribute()', nsp);
    END IF;
END
$$;
CREATE EVENT TRIGGER adk_drop_extension_undistribute ON ddl_command_start
    WHEN TAG IN ('DROP EXTENSION')
    EXECUTE FUNCTION adk._drop_extension_undistribute();

REVOKE ALL ON FUNCTION adk_distribute(), adk_undistribute() FROM PUBLIC;
REVOKE ALL ON FUNCTION adk._citus_layout(), adk._citus_tables(), adk._drop_extension_undistribute()
    FROM PUBLIC;
-- ---------------------------------------------------------------------
-- Grants that row-level security and the security_invoker views need,
-- after the general ones of 90_privileges.sql (whatever those take away
-- from adk_user on the adk._* internals): a policy's functions, and a
-- security_invoker view's, run as the querying role, and a CHECK
-- constraint's function as the role that writes the row.
-- ---------------------------------------------------------------------

GRANT EXECUTE ON FUNCTION adk._tenant_visible(text, text), adk._role_visible(name),
                          adk._tenancy_check(text, text), adk._parts(jsonb)
   TO adk_user;
GRANT EXECUTE ON FUNCTION adk._check_price(jsonb) TO adk_admin;
GRANT EXECUTE ON FUNCTION adk._budget_period_start(text, timestamptz) TO adk_user;

-- PUBLIC gets nothing, this predicate included: a role outside adk_user
-- that the owner grants the tables to directly (another ADK runtime's own
-- login role) needs EXECUTE on adk._tenant_visible(text, text) too, since
-- the policies call it as that role (docs/security.md, "Tenancy"), and on
-- adk._role_visible(name) for adk.model_calls and adk.budgets.
