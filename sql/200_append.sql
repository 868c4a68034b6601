-- Appending events: shape, seq, timestamps, state deltas, errors.
\set VERBOSITY default
SELECT adk_create_session('app', 'u', 'a1', '{"n": 0}') IS NOT NULL AS created;

-- a minimal event gets ADK's full shape: id, invocation_id, the four empty
-- action maps, long_running_tool_ids, timestamp in epoch milliseconds
SELECT jsonb_object_keys(adk_append_event('app', 'u', 'a1', '{"author": "user"}')) ORDER BY 1;
SELECT event_data -> 'actions' AS actions, event_data -> 'long_running_tool_ids' AS lrt,
       event_data ->> 'invocation_id' = '' AS empty_invocation, seq
  FROM adk.events WHERE session_id = 'a1';

-- the caller's fields are kept as given
SELECT adk_append_event('app', 'u', 'a1', '{
  "id": "e-2", "invocation_id": "inv-1", "author": "weather_agent", "branch": "weather_agent",
  "content": {"role": "model", "parts": [{"function_call": {"id": "call-1", "name": "get_weather", "args": {"city": "Hangzhou"}}}]},
  "actions": {"skip_summarization": true}}') - 'timestamp';

-- seq is dense; the column and event_data.timestamp agree to the
-- millisecond and strictly increase, even when a writer's clock lags
-- (timestamp 0 = 1970) or runs ahead (year 2100, then back to now)
SELECT adk_append_event('app', 'u', 'a1', '{"author": "user", "timestamp": 0}') IS NOT NULL;
SELECT adk_append_event('app', 'u', 'a1', '{"author": "user", "timestamp": 4102444800000}') IS NOT NULL;
SELECT adk_append_event('app', 'u', 'a1', '{"author": "user"}') IS NOT NULL;
SELECT adk_append_event('app', 'u', 'a1', '{"author": "user"}') IS NOT NULL;
SELECT seq,
       (event_data ->> 'timestamp')::bigint = (extract(epoch FROM "timestamp") * 1000)::bigint AS json_equals_column,
       "timestamp" = date_trunc('milliseconds', "timestamp") AS whole_ms,
       "timestamp" > lag("timestamp") OVER (ORDER BY seq) AS increasing,
       -- (seq 2 depends on the clock: left out)
       CASE WHEN seq <> 2 THEN ("timestamp" - lag("timestamp") OVER (ORDER BY seq)) = interval '1 ms' END AS bumped
  FROM adk.events WHERE session_id = 'a1' ORDER BY seq;
SELECT last_seq, last_event_time = (SELECT max("timestamp") FROM adk.events WHERE session_id = 'a1') AS last_time_ok,
       update_time >= last_event_time AS update_time_ok
  FROM adk.sessions WHERE id = 'a1';

-- state delta by scope, merged (not replaced), temp: stripped from the
-- stored event
SELECT adk_append_event('app', 'u', 'a1', '{"author": "agent", "actions": {"state_delta":
  {"n": 1, "k": "v", "app:count": 1, "user:name": "Ann", "temp:tmp": true}}}') #> '{actions,state_delta}';
SELECT adk_append_event('app', 'u', 'a1', '{"author": "agent", "actions": {"state_delta":
  {"n": 2, "app:other": 2}}}') #> '{actions,state_delta}';
SELECT state FROM adk.sessions WHERE id = 'a1';
SELECT state FROM adk.app_states WHERE app_name = 'app';
SELECT state FROM adk.user_states WHERE app_name = 'app' AND user_id = 'u';
SELECT adk_get_session('app', 'u', 'a1') -> 'state';
-- a state_delta with only temp: keys changes nothing but the event
SELECT adk_append_event('app', 'u', 'a1', '{"author": "agent", "actions": {"state_delta": {"temp:x": 1}}}') #> '{actions,state_delta}';

-- a partial (streaming) event is returned, not stored
SELECT adk_append_event('app', 'u', 'a1', '{"author": "agent", "partial": true}') ->> 'partial';
SELECT last_seq FROM adk.sessions WHERE id = 'a1';

-- reads: the newest N, after a seq, both
SELECT jsonb_path_query_array(adk_get_session('app', 'u', 'a1', 2) -> 'events', '$[*].author');
SELECT jsonb_array_length(adk_get_session('app', 'u', 'a1') -> 'events') AS all_events,
       jsonb_array_length(adk_get_session('app', 'u', 'a1', NULL, 7) -> 'events') AS after_7,
       jsonb_array_length(adk_get_session('app', 'u', 'a1', 1, 3) -> 'events') AS last_1_after_3,
       jsonb_array_length(adk_get_session('app', 'u', 'a1', 0) -> 'events') AS none;
-- events come back in seq order
SELECT (SELECT array_agg(e ->> 'id') FROM jsonb_array_elements(adk_get_session('app', 'u', 'a1') -> 'events') e)
     = (SELECT array_agg(id::text ORDER BY seq) FROM adk.events WHERE session_id = 'a1') AS in_order;

-- bad input: each a clear error, and nothing half-written
SELECT last_seq AS seq_before FROM adk.sessions WHERE id = 'a1' \gset
SELECT expect_error($q$SELECT adk_append_event('app', 'u', 'a1', NULL)$q$);
SELECT expect_error($q$SELECT adk_append_event('app', 'u', 'a1', '[]')$q$);
SELECT expect_error($q$SELECT adk_append_event('app', 'u', 'a1', '"text"')$q$);
SELECT expect_error($q$SELECT adk_append_event('app', 'u', 'a1', '{"content": {"role": "user"}}')$q$);
SELECT expect_error($q$SELECT adk_append_event('app', 'u', 'a1', '{"author": 7}')$q$);
SELECT expect_error($q$SELECT adk_append_event('app', 'u', 'a1', '{"author": ""}')$q$);
SELECT expect_error($q$SELECT adk_append_event('app', 'u', 'a1', '{"author": "user", "id": ""}')$q$);
SELECT expect_error($q$SELECT adk_append_event('app', 'u', 'a1', format('{"author": "user", "id": "%s"}', repeat('i', 192))::jsonb)$q$);
SELECT expect_error($q$SELECT adk_append_event('app', 'u', 'a1', format('{"author": "user", "invocation_id": "%s"}', repeat('i', 256))::jsonb)$q$);
SELECT expect_error($q$SELECT adk_append_event('app', 'u', 'a1', '{"author": "user", "content": "hi"}')$q$);
SELECT expect_error($q$SELECT adk_append_event('app', 'u', 'a1', '{"author": "user", "content": {"parts": {"text": "hi"}}}')$q$);
SELECT expect_error($q$SELECT adk_append_event('app', 'u', 'a1', '{"author": "user", "actions": []}')$q$);
SELECT expect_error($q$SELECT adk_append_event('app', 'u', 'a1', '{"author": "user", "actions": {"state_delta": [1]}}')$q$);
SELECT expect_error($q$SELECT adk_append_event('app', 'u', 'a1', '{"author": "user", "long_running_tool_ids": "x"}')$q$);
SELECT expect_error($q$SELECT adk_append_event('app', 'u', 'a1', '{"author": "user", "timestamp": "yesterday"}')$q$);
SELECT expect_error($q$SELECT adk_append_event('app', 'u', 'a1', '{"author": "user", "content": ')$q$);
SELECT expect_error($q$SELECT adk_append_event('app', 'u', 'missing', '{"author": "user"}')$q$);
SELECT expect_error($q$SELECT adk_append_event('app', NULL, 'a1', '{"author": "user"}')$q$);
SELECT expect_error($q$SELECT adk_append_event('app', 'u', 'a1', '{"author": "user", "id": "e-2"}')$q$);
SET adk.max_event_size = '1kB';
SELECT expect_error($q$SELECT adk_append_event('app', 'u', 'a1', jsonb_build_object('author', 'user', 'content',
       jsonb_build_object('parts', jsonb_build_array(jsonb_build_object('text', repeat('x', 2000))))))$q$);
RESET adk.max_event_size;
-- deep nesting is refused by PostgreSQL's own parser limits
SELECT expect_error($q$SELECT adk_append_event('app', 'u', 'a1', (repeat('[', 100000) || repeat(']', 100000))::jsonb)$q$);
SELECT last_seq = :seq_before AS nothing_written,
       (SELECT count(*) FROM adk.events WHERE session_id = 'a1') = :seq_before AS no_event_rows
  FROM adk.sessions WHERE id = 'a1';

-- a failed append inside a transaction rolls back with it; the next one
-- reuses the seq
BEGIN;
SELECT adk_append_event('app', 'u', 'a1', '{"author": "user"}') IS NOT NULL;
ROLLBACK;
SELECT adk_append_event('app', 'u', 'a1', '{"author": "user", "id": "after-rollback"}') IS NOT NULL;
SELECT seq = :seq_before + 1 AS dense FROM adk.events WHERE id = 'after-rollback';

-- Other writers (ADK-JS, ADK Python) insert rows directly: the trigger
-- gives them seq and time too, and applies their state delta.
INSERT INTO adk.events (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data)
VALUES ('foreign-1', 'app', 'u', 'a1', 'inv-x', '2001-01-01 00:00:00+00',
        '{"id": "foreign-1", "author": "user", "timestamp": 978307200000, "actions": {"state_delta": {"via": "js", "temp:t": 1}}}');
SELECT seq = :seq_before + 2 AS dense,
       "timestamp" > '2001-01-02' AS bumped_past_last,
       (event_data ->> 'timestamp')::bigint = (extract(epoch FROM "timestamp") * 1000)::bigint AS json_equals_column,
       event_data #> '{actions,state_delta}' AS stored_delta
  FROM adk.events WHERE id = 'foreign-1';
SELECT state -> 'via' AS via FROM adk.sessions WHERE id = 'a1';
-- an insert for a session that does not exist is refused
SELECT expect_error($q$INSERT INTO adk.events (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data)
VALUES ('foreign-2', 'app', 'u', 'nope', '', now(), '{"author": "user"}')$q$);

-- A writer that sets update_time back (ADK-JS sets its own) cannot move
-- it backwards or behind the last event.
SELECT update_time AS ut_before FROM adk.sessions WHERE id = 'a1' \gset
UPDATE adk.sessions SET update_time = '2000-01-01' WHERE id = 'a1';
SELECT update_time = :'ut_before' AS unchanged FROM adk.sessions WHERE id = 'a1';
UPDATE adk.sessions SET update_time = :'ut_before'::timestamptz + interval '1 hour' WHERE id = 'a1';
SELECT update_time = :'ut_before'::timestamptz + interval '1 hour' AS moved_forward FROM adk.sessions WHERE id = 'a1';

-- ADK-JS re-appending a stored event id UPDATEs the row with its own
-- clock: the event keeps its seq and time.
SELECT seq AS f_seq, "timestamp" AS f_ts FROM adk.events WHERE id = 'foreign-1' \gset
UPDATE adk.events SET "timestamp" = '2001-01-01', seq = 1,
       event_data = event_data || '{"timestamp": 978307200000, "author": "again"}'
 WHERE id = 'foreign-1';
SELECT seq = :f_seq AS same_seq, "timestamp" = :'f_ts' AS same_time,
       (event_data ->> 'timestamp')::bigint = (extract(epoch FROM "timestamp") * 1000)::bigint AS json_equals_column,
       event_data ->> 'author' AS author
  FROM adk.events WHERE id = 'foreign-1';

-- The stored event is rebuilt at the top level only, nested values copied
-- as stored (common/jsonb_build.c).  A wide event -- more top-level keys
-- than jsonb's offset stride of 32, every JSON type, multibyte text --
-- reads back whole, and every key is found by lookup, which needs jsonb's
-- key order.
SELECT adk_append_event('app', 'u', 'a1',
         (SELECT jsonb_object_agg('k' || i, CASE i % 6
                    WHEN 0 THEN to_jsonb(i) WHEN 1 THEN to_jsonb(i * 1.5)
                    WHEN 2 THEN to_jsonb(i % 4 = 0) WHEN 3 THEN 'null'::jsonb
                    WHEN 4 THEN jsonb_build_array(i, 'x', jsonb_build_object('n', i))
                    ELSE to_jsonb(repeat('é', i)) END)
            FROM generate_series(1, 70) i)
         || '{"author": "wide", "id": "wide-1", "timestamp": 1,
              "actions": {"custom": [1, 2], "state_delta": {"temp:t": 1, "w": 2}}}') ->> 'id' AS stored;
SELECT count(*) AS keys, bool_and(e.event_data -> j.key = j.value) AS all_found,
       e.event_data = e.event_data::text::jsonb AS reparses_equal
  FROM adk.events e, jsonb_each(e.event_data) j WHERE e.id = 'wide-1' GROUP BY e.event_data;
SELECT event_data -> 'actions' AS actions, event_data -> 'k1' AS k1, event_data -> 'k4' AS k4,
       event_data -> 'k8' AS k8, event_data -> 'k9' AS k9, length(event_data ->> 'k65') AS k65_chars,
       (event_data ->> 'timestamp')::bigint = (extract(epoch FROM "timestamp") * 1000)::bigint AS json_equals_column
  FROM adk.events WHERE id = 'wide-1';
SELECT (SELECT count(*) FROM jsonb_object_keys(event_data) k WHERE k ~ '^k[0-9]+$') AS sent_keys
  FROM adk.events WHERE id = 'wide-1';

-- adk_append_event writes its rows with UPDATE / INSERT statements the
-- executor runs, never through the table access method, so whatever a
-- user adds runs -- a trigger, a rule, a CHECK constraint -- and an added
-- column gets its default.  Each is seen at once, in this session.
-- (Such a trigger runs with search_path pinned to pg_catalog, pg_temp when
-- the extension writes -- docs/security.md -- so it names its table.)
CREATE TABLE event_audit (event_id text, seq bigint);
CREATE FUNCTION audit_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.event_audit VALUES (NEW.id, NEW.seq);
    RETURN NEW;
END $$;
SELECT adk_append_event('app', 'u', 'a1', '{"author": "user", "id": "fast-1"}') IS NOT NULL AS stored;
CREATE TRIGGER audit AFTER INSERT ON adk.events FOR EACH ROW EXECUTE FUNCTION audit_event();
SELECT adk_append_event('app', 'u', 'a1', '{"author": "user", "id": "audited-1"}') IS NOT NULL AS stored;
SELECT a.event_id, a.seq = e.seq AS same_seq
  FROM event_audit a JOIN adk.events e ON e.id = a.event_id;
DROP TRIGGER audit ON adk.events;
SELECT adk_append_event('app', 'u', 'a1', '{"author": "user", "id": "fast-2"}') IS NOT NULL AS stored;
SELECT count(*) AS audited FROM event_audit;

-- a rule, too (here: every event also noted in the audit table)
CREATE RULE note_event AS ON INSERT TO adk.events_p0
    DO ALSO INSERT INTO event_audit VALUES ('rule ' || NEW.id, NEW.seq);
SELECT adk_append_event('app', 'u', 'a1', '{"author": "user", "id": "ruled-1"}') IS NOT NULL AS stored;
DROP RULE note_event ON adk.events_p0;
SELECT event_id FROM event_audit WHERE event_id LIKE 'rule %';

ALTER TABLE adk.events_p0 ADD CONSTRAINT no_robots
    CHECK (event_data ->> 'author' IS DISTINCT FROM 'robot');
SELECT split_part(expect_error($q$SELECT adk_append_event('app', 'u', 'a1', '{"author": "robot"}')$q$), E'\n', 1) AS error;
ALTER TABLE adk.events_p0 DROP CONSTRAINT no_robots;

ALTER TABLE adk.events ADD COLUMN source text;
ALTER TABLE adk.events ALTER COLUMN source SET DEFAULT 'sql';
SELECT adk_append_event('app', 'u', 'a1', '{"author": "user", "id": "with-source"}') IS NOT NULL AS stored;
SELECT id, source FROM adk.events WHERE id IN ('fast-2', 'with-source') ORDER BY seq;
ALTER TABLE adk.events DROP COLUMN source;
SELECT adk_append_event('app', 'u', 'a1', '{"author": "user", "id": "fast-3"}') IS NOT NULL AS stored;
SELECT string_agg(id, ', ' ORDER BY seq) AS ids,
       max(seq) - min(seq) + 1 = count(*) AS dense
  FROM adk.events WHERE session_id = 'a1' AND seq > (SELECT seq FROM adk.events WHERE id = 'fast-1') - 1;
-- A read-only transaction cannot append (25006), as with any write.
BEGIN READ ONLY;
SELECT expect_error($q$SELECT adk_append_event('app', 'u', 'a1', '{"author": "user", "id": "ro-1"}')$q$);
ROLLBACK;
SELECT count(*) AS ro_stored FROM adk.events WHERE id = 'ro-1';

-- The same for the session row each append bumps.
CREATE FUNCTION audit_session() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.event_audit VALUES ('session ' || NEW.id, NEW.last_seq);
    RETURN NEW;
END $$;
CREATE TRIGGER audit AFTER UPDATE ON adk.sessions FOR EACH ROW EXECUTE FUNCTION audit_session();
SELECT adk_append_event('app', 'u', 'a1', '{"author": "user", "id": "bumped-1"}') IS NOT NULL AS stored;
SELECT a.event_id, a.seq = e.seq AS same_seq
  FROM event_audit a, adk.events e WHERE a.event_id = 'session a1' AND e.id = 'bumped-1';
DROP TRIGGER audit ON adk.sessions;
SELECT adk_append_event('app', 'u', 'a1', '{"author": "user", "id": "bumped-2"}') IS NOT NULL AS stored;
SELECT count(*) AS session_audits FROM event_audit WHERE event_id LIKE 'session %';
DROP TABLE event_audit;
DROP FUNCTION audit_event();
DROP FUNCTION audit_session();
