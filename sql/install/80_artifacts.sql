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
