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
