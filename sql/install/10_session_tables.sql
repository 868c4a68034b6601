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
