-- adk_runner 0.8.0 -> 0.9.0: ALTER EXTENSION adk_runner UPDATE TO '0.9.0'.
-- Every change to the SQL surface since release 0.8.0, in the order the
-- full install script (sql/install/) makes it.  test/t/024_upgrade.pl
-- checks that a 0.8.0 schema updated with this script equals a fresh
-- 0.9.0 install (docs/releasing.md).

\echo Use "ALTER EXTENSION adk_runner UPDATE" to load this file. \quit

-- adk_append_event's statement: the same, but only while no queued run
-- holds the session -- no job of it 'running' in another process (live
-- or not: which workers are still there is asked of the process array,
-- src/store/session_read.c).  The UPDATE takes the session row lock only
-- when it writes, so when a job is there no row comes back, nothing is
-- locked, and adk_store_append waits for the job as adk_run does
-- (adk_session_lock_unheld) before it appends with the statement above.
-- Without a job on the session this is one statement: no subtransaction
-- and no lock statement of its own, whose lock the UPDATE would then turn
-- into a multixact (docs/workers.md, "One run per session at a time").
CREATE FUNCTION adk._append_event_unheld(text, text, text, timestamptz, jsonb, text, text, jsonb,
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
     AND NOT EXISTS (SELECT FROM adk.jobs j
                      WHERE j.app_name OPERATOR(pg_catalog.=) $1
                        AND j.user_id OPERATOR(pg_catalog.=) $2
                        AND j.session_id OPERATOR(pg_catalog.=) $3
                        AND j.status OPERATOR(pg_catalog.=) 'running'
                        AND j.worker_pid OPERATOR(pg_catalog.<>) pg_catalog.pg_backend_pid())
  RETURNING s.last_seq, s.last_event_time)
INSERT INTO adk.events_p0
       (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data, seq)
SELECT $6, $1, $2, $3, $7, s.last_event_time,
       adk._event_at($8, s.last_event_time), s.last_seq FROM s
RETURNING seq, "timestamp", event_data
$$;
REVOKE ALL ON FUNCTION adk._append_event_unheld(text, text, text, timestamptz, jsonb, text, text, jsonb) FROM PUBLIC;

-- The rewind trigger's update (src/store/rewound_trigger.c): the rewound
-- seqs of session ($1, $2, $3) computed again (12_rewound.sql), after a
-- rewind event was inserted into it.  Run as the writer of that event.
CREATE FUNCTION adk._session_rewound_set(text, text, text)
RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
UPDATE adk.sessions s
   SET rewound = adk._rewound($1, $2, $3)
 WHERE s.app_name OPERATOR(pg_catalog.=) $1
   AND s.user_id OPERATOR(pg_catalog.=) $2
   AND s.id OPERATOR(pg_catalog.=) $3
$$;
REVOKE ALL ON FUNCTION adk._session_rewound_set(text, text, text) FROM PUBLIC;

-- A rewind event, from any writer, recomputes its session's rewound
-- seqs (adk._session_rewound_set, 88_turn_statements.sql, run as the
-- writer of the row).  Which rows are rewind events the function decides
-- (src/store/rewound_trigger.c): a WHEN clause here was read from its
-- stored text and prepared again by every INSERT into adk.events.
CREATE OR REPLACE FUNCTION adk._events_after_rewind() RETURNS trigger
    AS 'MODULE_PATHNAME', 'adk_events_after_rewind' LANGUAGE C;
DROP TRIGGER adk_events_after_rewind ON adk.events;
CREATE TRIGGER adk_events_after_rewind
    AFTER INSERT ON adk.events
    FOR EACH ROW EXECUTE FUNCTION adk._events_after_rewind();

-- The session row's lock, taken only while no queued run holds the
-- session -- no job of it 'running' in another process, live or not (as
-- adk._append_event_unheld): one row, none when such a job is there (and
-- nothing locked then) or without the session.  adk_session_lock_unheld
-- tries it first; it takes the lock in the caller's own transaction, so
-- the UPDATEs that follow make no multixact of a subtransaction's lock.
CREATE FUNCTION adk._session_lock_unheld(text, text, text)
RETURNS SETOF integer
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
SELECT 1 FROM adk.sessions s
 WHERE s.app_name OPERATOR(pg_catalog.=) $1
   AND s.user_id OPERATOR(pg_catalog.=) $2
   AND s.id OPERATOR(pg_catalog.=) $3
   AND NOT EXISTS (SELECT FROM adk.jobs j
                    WHERE j.app_name OPERATOR(pg_catalog.=) $1
                      AND j.user_id OPERATOR(pg_catalog.=) $2
                      AND j.session_id OPERATOR(pg_catalog.=) $3
                      AND j.status OPERATOR(pg_catalog.=) 'running'
                      AND j.worker_pid OPERATOR(pg_catalog.<>) pg_catalog.pg_backend_pid())
   FOR UPDATE OF s
$$;
REVOKE ALL ON FUNCTION adk._session_lock_unheld(text, text, text) FROM PUBLIC;
