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
