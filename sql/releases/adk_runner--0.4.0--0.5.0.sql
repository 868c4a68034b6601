-- adk_runner 0.4.0 -> 0.5.0: ALTER EXTENSION adk_runner UPDATE TO '0.5.0'.
-- Every change to the SQL surface since release 0.4.0, in the order the
-- full install script (sql/install/) makes it.  test/t/024_upgrade.pl
-- checks that a 0.4.0 schema updated with this script equals a fresh
-- 0.5.0 install (docs/releasing.md).

\echo Use "ALTER EXTENSION adk_runner UPDATE" to load this file. \quit

-- sql/install/12_rewound.sql: which events a rewind rewound
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
REVOKE ALL ON FUNCTION adk._rewound(text, text, text, bigint), adk._events_after_rewind() FROM PUBLIC;
GRANT SELECT ON adk.live_events TO adk_user;

-- sql/install/80_artifacts.sql: a fork's artifacts are references to the
-- rows that hold their bytes (adk.artifacts.source_session_id)
ALTER TABLE adk.artifacts ADD COLUMN source_session_id text;
COMMENT ON COLUMN adk.artifacts.source_session_id IS 'a fork''s reference: the session whose row of this filename and version holds the bytes (data is then empty); NULL: the row holds its bytes';
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
REVOKE ALL ON FUNCTION adk._artifact_unshare(text, text, text, text) FROM PUBLIC;
CREATE OR REPLACE FUNCTION adk_load_artifact(app_name text, user_id text, session_id text,
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
CREATE OR REPLACE FUNCTION adk._delete_artifact(app_name text, user_id text, session_id text, filename text)
RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
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
CREATE OR REPLACE FUNCTION adk._sessions_delete_artifacts() RETURNS trigger
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
CREATE OR REPLACE FUNCTION adk._artifact_latest(p_app text, p_user text, p_session text, p_filename text)
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
REVOKE ALL ON FUNCTION adk._without_calls(jsonb, text[]),
                       adk._fork_session(text, text, text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION adk_fork_session(text, text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION adk_fork_session(text, text, text, text, text) TO adk_user;

-- sql/install/88_session_mermaid.sql: a session as a Mermaid sequence diagram
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
-- run as the caller (90_privileges.sql's user_internals)
REVOKE ALL ON FUNCTION adk._mermaid_text(text, integer), adk._mermaid_who(jsonb, text[], text),
                       adk_session_mermaid(text, text, text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION adk._mermaid_text(text, integer), adk._mermaid_who(jsonb, text[], text),
                          adk_session_mermaid(text, text, text, bigint) TO adk_user;

-- the readers of a history skip rewound events (adk.live_events)
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
  FROM adk.live_events e;
COMMENT ON VIEW adk.event_log IS
    'Events flattened for reading (not the rewound ones): seq, time, author, role, text, function calls and responses, errors, the event id.';

CREATE OR REPLACE FUNCTION adk._derive_run_states(p_app text, p_user text, p_session text,
                                       p_invocation text DEFAULT NULL,
                                       p_new jsonb DEFAULT NULL)
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
               coalesce(p_new #>> '{event_data,author}', '') AS author
         WHERE p_new IS NOT NULL
           AND p_new #> '{event_data,custom_metadata,adk_appended_by}' IS NULL
           AND NOT EXISTS (SELECT 1 FROM adk.events e
                            WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
                              AND e.seq = (p_new ->> 'seq')::bigint)
    ), ev AS (
        SELECT e.seq, e.invocation_id::text AS invocation_id, e."timestamp" AS ts,
               e.event_data AS d, coalesce(e.event_data ->> 'author', '') AS author
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
        SELECT ev.invocation_id, ev.author AS agent, ev.seq, lr.ord, lr.id
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
        SELECT c.invocation_id, c.agent, c.seq, c.ord, c.id,
               (SELECT a.ts FROM answers a
                 WHERE a.id = c.id AND a.seq > c.seq
                 ORDER BY a.seq LIMIT 1) AS answered_at
          FROM calls c
    ), nodes AS (
        SELECT i.invocation_id, i.agent,
               coalesce(array_agg(i.id ORDER BY i.seq, i.ord) FILTER (WHERE i.answered_at IS NULL),
                        '{}') AS pending,
               coalesce(array_agg(i.id ORDER BY i.seq, i.ord) FILTER (WHERE i.answered_at IS NOT NULL),
                        '{}') AS answered,
               max(i.answered_at) AS last_answer
          FROM interrupts i
         GROUP BY i.invocation_id, i.agent
    )
    SELECT p_app, p_user, p_session::varchar(191), n.invocation_id, p_app || '/' || n.agent,
           CASE WHEN cardinality(n.pending) > 0 THEN 'waiting'
                WHEN last.d ->> 'error_code' = 'CANCELLED' THEN 'cancelled'
                WHEN last.d ->> 'error_code' IS NOT NULL THEN 'failed'
                ELSE 'completed' END,
           n.pending, n.answered, n.agent,
           greatest(last.ts, n.last_answer)
      FROM nodes n
     CROSS JOIN LATERAL (SELECT ev.d, ev.ts FROM ev
                          WHERE ev.invocation_id = n.invocation_id AND ev.author = n.agent
                          ORDER BY ev.seq DESC LIMIT 1) last;
END
$$;

CREATE OR REPLACE FUNCTION adk._repeated_confirmation(p_app text, p_user text, p_session text, p_ids text[])
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

CREATE OR REPLACE FUNCTION adk._sliding_window_range(p_app text, p_user text, p_session text,
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

CREATE OR REPLACE FUNCTION adk._tail_retention_end(p_app text, p_user text, p_session text, keep integer)
RETURNS bigint
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN (SELECT e.seq FROM adk.live_events e
             WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
               AND NOT coalesce(e.event_data -> 'actions' ? 'compaction', false)
             ORDER BY e.seq DESC OFFSET keep LIMIT 1);
END
$$;

CREATE OR REPLACE FUNCTION adk._root_compaction(p_app text, p_user text, p_session text,
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

CREATE OR REPLACE FUNCTION adk._compaction_parts(p_app text, p_user text, p_session text, lo bigint, hi bigint)
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

CREATE OR REPLACE FUNCTION adk._compaction_read(p_app text, p_user text, p_session text,
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

CREATE OR REPLACE FUNCTION adk._compaction_check(p_app text, p_user text, p_session text, plan jsonb)
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

CREATE OR REPLACE FUNCTION adk._prompt_events(p_app text, p_user text, p_session text)
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

CREATE OR REPLACE FUNCTION adk._memory_pending(app_name text, user_id text, session_id text,
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

-- sql/install/89_rewind.sql: adk_rewind and adk_edit_message
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
REVOKE ALL ON FUNCTION adk._rewind(text, text, text, text),
                       adk_rewind(text, text, text, text),
                       adk_edit_message(text, text, text, text, text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION adk_rewind(text, text, text, text),
                          adk_edit_message(text, text, text, text, text, jsonb) TO adk_user;

-- sql/install/95_citus.sql: adk_distribute copies rewind events without
-- their trigger too
CREATE OR REPLACE FUNCTION adk_distribute() RETURNS void
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


-- Fallback models and the circuit breaker (sql/install/88_fallbacks.sql):
-- the fallback_on model option and the fallbacks' checks in the models'
-- triggers, adk.models.fallbacks, the ledger's fallback_attempt and
-- fallback_from, adk_define_fallbacks, adk.model_breakers.
CREATE OR REPLACE FUNCTION adk._models_check_options() RETURNS trigger
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
        ELSIF k = 'headers' THEN
            NULL;   -- checked below, by the rules every call's config is held to
        ELSIF k = 'system_instruction' THEN
            IF jsonb_typeof(v) <> 'string' THEN
                RAISE EXCEPTION 'model option "system_instruction" must be a string' USING ERRCODE = '22023';
            END IF;
        ELSE
            RAISE EXCEPTION 'unknown model option "%"', k USING ERRCODE = '22023',
                HINT = 'Known options: temperature, max_output_tokens, top_p, top_k, stop_sequences, presence_penalty, frequency_penalty, seed, system_instruction, timeout_ms, connect_timeout_ms, retries, max_request_bytes, headers, fallback_on.';
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
CREATE OR REPLACE FUNCTION adk._models_before_delete() RETURNS trigger
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

-- as 90_privileges.sql grants them in a fresh install
REVOKE ALL ON FUNCTION adk._model_breakers() FROM PUBLIC;
REVOKE ALL ON FUNCTION adk_define_fallbacks(text, text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION adk_define_fallbacks(text, text[]) TO adk_admin;
GRANT SELECT (fallbacks) ON adk.models TO adk_user;
CREATE OR REPLACE VIEW adk.model_definitions AS
SELECT m.name, m.provider, m.endpoint, m.model, m.api_key_env, m.api_key_secret,
       CASE WHEN m.options OPERATOR(pg_catalog.?) 'headers'
            THEN m.options OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('headers',
                 (SELECT COALESCE(pg_catalog.jsonb_object_agg(h.key, pg_catalog.to_jsonb('[REDACTED]'::text)), '{}'::jsonb)
                    FROM pg_catalog.jsonb_each(m.options OPERATOR(pg_catalog.->) 'headers') h))
            ELSE m.options END AS options,
       m.price, m.created_at, m.updated_at, m.fallbacks
  FROM adk.models m;

-- The store's and the workers' statements as functions (sql/install/88_store_statements.sql).
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
REVOKE ALL ON FUNCTION adk._insert_event_row(text, text, text, text, text, timestamptz, jsonb, bigint),
                       adk._insert_distributed_event(text, text, text, text, text, timestamptz, jsonb),
                       adk._citus_events_layout(),
                       adk._session_exists(text, text, text),
                       adk._session_state(text, text, text),
                       adk._session_call_event(text, text, text, jsonb),
                       adk._session_prompt_tokens(text, text, text),
                       adk._job_insert(text, text, text, text, jsonb, jsonb, jsonb, oid, name, text, integer),
                       adk._otlp_record_export(bigint, text)
    FROM PUBLIC;

-- The model layer's and the workers' other statements as functions (sql/install/88_store_statements.sql).
-- A model's definition as the model layer loads it (src/model/model_def.c):
-- its row and, when it names one, its secret's value and allowed hosts;
-- its fallbacks last.
-- No row: no such model.
CREATE FUNCTION adk._model_definition(p_name text)
RETURNS TABLE (r_provider text, r_endpoint text, r_model text, r_options jsonb,
               r_api_key_env text, r_api_key_secret text, r_secret_value text,
               r_allowed_hosts text[], r_fallbacks text[])
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT m.provider, m.endpoint, m.model, m.options, m.api_key_env,
           m.api_key_secret, s.value, s.allowed_hosts, m.fallbacks
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
REVOKE ALL ON FUNCTION adk._model_definition(text),
                       adk._jobs_cancel_queued(bigint[]),
                       adk._session_try_lock(text, text, text),
                       adk._jobs_running(),
                       adk._invocation_has_events(text, text, text, text),
                       adk._jobs_purge(integer)
    FROM PUBLIC;

-- Agent modes (docs/agent-modes.md): adk.agents.mode, input_schema and
-- output_schema, their row checks, the placement and root rules, and
-- adk_define_agent taking them.
ALTER TABLE adk.agents
    ADD COLUMN mode text CHECK (mode IN ('chat', 'task', 'single_turn')),
    ADD COLUMN input_schema jsonb CHECK (jsonb_typeof(input_schema) = 'object'),
    ADD COLUMN output_schema jsonb CHECK (jsonb_typeof(output_schema) = 'object');
COMMENT ON TABLE adk.agents IS 'Agents: kind (llm | sequential | parallel | loop), model (NULL: the nearest ancestor''s), instruction, tools (tools, built-ins or agents used as tools), sub_agents (in order), transfer and generation settings, mode (chat | task | single_turn; NULL = chat) with input_schema and output_schema (docs/agent-modes.md)';

CREATE OR REPLACE FUNCTION adk._agents_before_write() RETURNS trigger
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
    IF NEW.kind IS NULL OR NEW.kind NOT IN ('llm', 'sequential', 'parallel', 'loop') THEN
        RAISE EXCEPTION 'unknown agent kind "%"', NEW.kind USING ERRCODE = '22023',
            HINT = 'Use llm, sequential, parallel or loop.';
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
                      DETAIL = 'Only llm agents call a model; sequential, parallel and loop agents run their sub-agents.';
        END IF;
        IF cardinality(NEW.sub_agents) = 0 THEN
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

    -- modes (docs/agent-modes.md): the schemas shape how a coordinator
    -- calls a task or single_turn agent and what it hands back
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
        IF coalesce(NEW.mode, 'chat') = 'chat' THEN
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
        ELSE
            RAISE EXCEPTION 'unknown generate_config key "%" for agent "%"', k, NEW.name USING ERRCODE = '22023',
                HINT = 'Known keys: temperature, max_output_tokens, top_p, top_k, stop_sequences, presence_penalty, frequency_penalty, seed.';
        END IF;
    END LOOP;
    IF TG_OP = 'UPDATE' THEN
        NEW.updated_at := now();
    END IF;
    RETURN NEW;
END
$$;

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

REVOKE ALL ON FUNCTION adk._check_task_placement(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION adk._check_task_placement(text) TO adk_admin;
REVOKE ALL ON FUNCTION adk._check_root_mode(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION adk._check_root_mode(text, text) TO adk_admin;

CREATE OR REPLACE FUNCTION adk._agents_after_write() RETURNS trigger
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

DROP FUNCTION adk_define_agent(text, text, text, text, text, text[], text[], text, boolean, boolean, integer, text, jsonb);
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
    'Create or replace an agent: kind llm | sequential | parallel | loop; tools are tools, built-ins or other agents (AgentTool); sub_agents are children in order (one parent each, no cycles); mode chat | task | single_turn (NULL = chat) with input_schema and output_schema for task and single_turn agents.';
REVOKE ALL ON FUNCTION adk_define_agent(text, text, text, text, text, text[], text[], text, boolean, boolean, integer, text, jsonb, text, jsonb, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION adk_define_agent(text, text, text, text, text, text[], text[], text, boolean, boolean, integer, text, jsonb, text, jsonb, jsonb) TO adk_admin;

CREATE OR REPLACE FUNCTION adk._check_agent_tree(root text) RETURNS void
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
        IF r.kind <> 'llm' AND cardinality(r.sub_agents) = 0 THEN
            RAISE EXCEPTION '% agent "%" needs at least one sub-agent', r.kind, r.name USING ERRCODE = '22023';
        END IF;
        PERFORM adk._check_task_placement(r.name);
        -- the runner does not delegate to task and single_turn agents yet
        -- (docs/agent-modes.md, "What runs today")
        IF r.mode IN ('task', 'single_turn') THEN
            RAISE EXCEPTION 'agent "%" has mode %, which adk_runner cannot run yet', r.name, r.mode
                USING ERRCODE = '0A000',
                      DETAIL = format('It is under root agent "%s". Task and single_turn agents can be defined and are checked, but no coordinator delegates to them yet.', root),
                      HINT = 'Leave its mode NULL (chat) for now: a chat sub-agent is reached by transfer_to_agent.';
        END IF;
    END LOOP;
END
$$;
COMMENT ON FUNCTION adk._check_agent_tree(text) IS
    'Raise if the agents under root (sub_agents and agents used as tools) break a rule: a missing agent, tool or model, an agent with two parents, a cycle, a root that is not chat, a task agent under a workflow agent, a mode the runner cannot run yet.';

-- single_turn sub-agents run (docs/agent-modes.md): the runner reads each
-- agent's mode and schemas (87_runner_statements.sql; a new result type,
-- so the function is made again, as 90_privileges.sql's loop leaves it),
-- and the tree check refuses only what does not run yet
-- (50_definitions.sql)
DROP FUNCTION adk._agent_definitions(text);
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
REVOKE ALL ON FUNCTION adk._agent_definitions(text) FROM PUBLIC;
CREATE OR REPLACE FUNCTION adk._check_agent_tree(root text) RETURNS void
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
        IF r.kind <> 'llm' AND cardinality(r.sub_agents) = 0 THEN
            RAISE EXCEPTION '% agent "%" needs at least one sub-agent', r.kind, r.name USING ERRCODE = '22023';
        END IF;
        PERFORM adk._check_task_placement(r.name);
        -- what the runner does not run yet (docs/agent-modes.md, "What runs
        -- today"): task agents; a single_turn agent other than a sub-agent
        -- of an llm coordinator (under a workflow agent, or used as a tool)
        IF r.mode = 'task' THEN
            RAISE EXCEPTION 'agent "%" has mode %, which adk_runner cannot run yet', r.name, r.mode
                USING ERRCODE = '0A000',
                      DETAIL = format('It is under root agent "%s". Task agents can be defined and are checked, but no coordinator delegates to them yet.', root),
                      HINT = 'Leave its mode NULL (chat) for now: a chat sub-agent is reached by transfer_to_agent.';
        END IF;
        IF r.mode = 'single_turn'
           AND (NOT EXISTS (SELECT 1 FROM adk.agents p WHERE r.name = ANY (p.sub_agents) AND p.kind = 'llm')
                OR EXISTS (SELECT 1 FROM adk.agents p WHERE r.name = ANY (p.tools))) THEN
            RAISE EXCEPTION 'agent "%" has mode %, which adk_runner runs only as a sub-agent of an llm agent', r.name, r.mode
                USING ERRCODE = '0A000',
                      DETAIL = format('It is under root agent "%s". A single_turn agent is run by the tool its llm coordinator gets for it; adk_runner does not run one as a node of a sequential, parallel or loop agent, nor as an agent used as a tool, yet.', root),
                      HINT = 'Make it a sub-agent of an llm agent, or leave its mode NULL (chat).';
        END IF;
    END LOOP;
END
$$;
COMMENT ON FUNCTION adk._check_agent_tree(text) IS
    'Raise if the agents under root (sub_agents and agents used as tools) break a rule: a missing agent, tool or model, an agent with two parents, a cycle, a root that is not chat, a task agent under a workflow agent, a mode the runner cannot run yet (task; single_turn other than under an llm agent).';

-- Isolation scopes (docs/agent-modes.md): a session's scoped events
-- through a partial index (10_session_tables.sql), and adk.active_tasks,
-- the open scopes (30_event_log.sql), read as the querying role
-- (85_tenancy.sql) by adk_user (90_privileges.sql)
CREATE INDEX events_p0_isolation_scope_idx
    ON adk.events_p0 (app_name, user_id, session_id, seq)
    WHERE (event_data ->> 'isolation_scope') <> '';
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
ALTER VIEW adk.active_tasks SET (security_invoker = true);
GRANT SELECT ON adk.active_tasks TO adk_user;

-- Task agents run (task_mode.c): the session's open task, and the request
-- of a task resumed in a later invocation (87_runner_statements.sql), as
-- 90_privileges.sql's loop leaves them; the tree check no longer refuses
-- task agents (50_definitions.sql)

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
REVOKE ALL ON FUNCTION adk._active_task(text, text, text),
    adk._task_request(text, text, text, text) FROM PUBLIC;
CREATE OR REPLACE FUNCTION adk._check_agent_tree(root text) RETURNS void
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
        IF r.kind <> 'llm' AND cardinality(r.sub_agents) = 0 THEN
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

-- ---------------------------------------------------------------------
-- sql/install/88_prompt_cache.sql: prompt caching, and adk._app_definition
-- (87_runner_statements.sql) with the app's context_cache.
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

DROP FUNCTION adk._app_definition(text);
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

-- as 90_privileges.sql grants them in a fresh install
REVOKE ALL ON FUNCTION adk._app_definition(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION adk._apps_check_context_cache() FROM PUBLIC;
REVOKE ALL ON FUNCTION adk_define_app(text, text, boolean, text[], integer, jsonb, boolean, text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION adk_define_app(text, text, boolean, text[], integer, jsonb, boolean, text, jsonb) TO adk_admin;
