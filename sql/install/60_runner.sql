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
