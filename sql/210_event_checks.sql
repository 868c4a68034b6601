-- What an appended or inserted event may carry: timestamps ADK can read
-- back, a bounded nesting depth, ids without control characters, partial,
-- branch and scoped state keys of the right shape.  A rejected event
-- leaves the session usable.
\set VERBOSITY default
-- in one transaction, rolled back at the end: later files see none of it
BEGIN;
SELECT adk_set_secret('t21-key', 'sk-t21-0123456789', ARRAY['127.0.0.1']);
SELECT adk_define_model('t21_model', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 't21-key');
SELECT adk_define_agent('t21_agent', model => 't21_model', instruction => 'You answer.');
SELECT adk_define_app('t21_app', 't21_agent');
SELECT adk_create_session('t21_app', 'u', 'ts') IS NOT NULL AS created;

-- Timestamps: epoch milliseconds within years 1..9999 UTC (what ADK Python's
-- datetime can hold), checked before any arithmetic
SELECT expect_error($q$SELECT adk_append_event('t21_app', 'u', 'ts', '{"author": "user", "timestamp": -9222426057709552}')$q$);
SELECT expect_error($q$SELECT adk_append_event('t21_app', 'u', 'ts', '{"author": "user", "timestamp": 1e30}')$q$);
SELECT expect_error($q$SELECT adk_append_event('t21_app', 'u', 'ts', '{"author": "user", "timestamp": 253402300800000}')$q$);
SELECT expect_error($q$SELECT adk_append_event('t21_app', 'u', 'ts', '{"author": "user", "timestamp": -62135596800001}')$q$);
-- the bounds themselves are accepted
SELECT adk_append_event('t21_app', 'u', 'ts', '{"author": "user", "timestamp": -62135596800000}') ->> 'timestamp' AS at_min;
SELECT adk_create_session('t21_app', 'u', 'ts_max') IS NOT NULL AS created;
SELECT adk_append_event('t21_app', 'u', 'ts_max', '{"author": "user", "timestamp": 253402300799999}') ->> 'timestamp' AS at_max;
-- no room after the last millisecond of 9999: the next event is refused,
-- and the session is unchanged
SELECT expect_error($q$SELECT adk_append_event('t21_app', 'u', 'ts_max', '{"author": "user"}')$q$);
SELECT last_seq, last_event_time FROM adk.sessions WHERE id = 'ts_max';
-- the same through the insert trigger (other runtimes' plain INSERTs)
SELECT expect_error($q$INSERT INTO adk.events (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data)
VALUES ('t21-x1', 't21_app', 'u', 'ts', '', '294276-12-31 23:59:59+00', '{"author": "user"}')$q$);
SELECT expect_error($q$INSERT INTO adk.events (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data)
VALUES ('t21-x2', 't21_app', 'u', 'ts', '', '-infinity', '{"author": "user"}')$q$);
-- the session works on, and its times stay in range
SELECT (adk_append_event('t21_app', 'u', 'ts', '{"author": "user"}') ->> 'timestamp')::bigint
       BETWEEN extract(epoch FROM now() - interval '1 day') * 1000
           AND extract(epoch FROM now() + interval '1 day') * 1000 AS now_ish;
SELECT last_seq, (adk_get_session('t21_app', 'u', 'ts') ->> 'last_update_time')::numeric > 0 AS readable
  FROM adk.sessions WHERE id = 'ts';

-- Nesting: at most 64 levels (the event's own object is level 1)
SELECT adk_create_session('t21_app', 'u', 'deep') IS NOT NULL AS created;
CREATE FUNCTION t21_deep_event(levels int) RETURNS jsonb LANGUAGE sql AS $$
  SELECT ('{"author": "user", "content": {"role": "user", "parts": [{"function_response": {"id": "c1", "name": "f", "response": {"a": '
          || repeat('[', levels - 6) || repeat(']', levels - 6) || '}}}]}}')::jsonb $$;
SELECT expect_error($q$SELECT adk_append_event('t21_app', 'u', 'deep', t21_deep_event(100))$q$);
SELECT expect_error($q$SELECT adk_append_event('t21_app', 'u', 'deep', t21_deep_event(65))$q$);
SELECT expect_error($q$INSERT INTO adk.events (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data)
VALUES ('t21-d1', 't21_app', 'u', 'deep', '', now(), t21_deep_event(100))$q$);
SELECT count(*) AS stored FROM adk.events WHERE session_id = 'deep';
-- the session still runs; so does one holding an event of exactly 64 levels
SELECT count(*) > 0 AS ran, count(event_data -> 'error_code') AS errors
  FROM adk_run('t21_app', 'u', 'deep', 'Hello?');
SELECT adk_create_session('t21_app', 'u', 'deep64') IS NOT NULL AS created;
SELECT adk_append_event('t21_app', 'u', 'deep64', '{"author": "t21_agent", "content": {"role": "model", "parts": [{"function_call": {"id": "c1", "name": "f", "args": {}}}]}}') ->> 'author' AS author;
SELECT adk_append_event('t21_app', 'u', 'deep64', t21_deep_event(64)) ->> 'author' AS author;
SELECT count(*) > 0 AS ran, count(event_data -> 'error_code') AS errors
  FROM adk_run('t21_app', 'u', 'deep64', 'Hello?');

-- Ids: no control characters (they would reach log lines and NOTIFY payloads)
SELECT expect_error($q$SELECT adk_create_session(E't21_app\n', 'u', 'c1')$q$);
SELECT expect_error($q$SELECT adk_create_session('t21_app', E'u\r\nLOG:  forged', 'c1')$q$);
SELECT expect_error($q$SELECT adk_create_session('t21_app', 'u', E'c\t1')$q$);
SELECT expect_error($q$SELECT adk_append_event('t21_app', 'u', E'ts\x01', '{"author": "user"}')$q$);
SELECT expect_error($q$SELECT adk_get_session(E't21_app\x7f', 'u', 'ts')$q$);
SELECT expect_error($q$SELECT adk_append_event('t21_app', 'u', 'ts', '{"author": "user", "invocation_id": "inv\n1"}')$q$);
SELECT expect_error($q$SELECT adk_append_event('t21_app', 'u', 'ts', '{"author": "user", "id": "e\u001b[31m"}')$q$);
SELECT expect_error($q$SELECT adk_append_event('t21_app', 'u', 'ts', '{"author": "us\ner"}')$q$);
SELECT expect_error($q$SELECT * FROM adk_run('t21_app', 'u', E'run\n1', 'Hello?')$q$);
SELECT expect_error($q$SELECT * FROM adk_wait(E'e-1\nLOG:  forged')$q$);
SELECT expect_error($q$SELECT adk_cancel(E'e-1\r')$q$);
-- printable non-ASCII is fine
SELECT adk_create_session('t21_app', 'ü', 'sessão-1') ->> 'id' AS unicode_id;

-- partial: a boolean
SELECT expect_error($q$SELECT adk_append_event('t21_app', 'u', 'ts', '{"author": "user", "partial": "yes"}')$q$);
SELECT expect_error($q$SELECT adk_append_event('t21_app', 'u', 'ts', '{"author": "user", "partial": 1}')$q$);
SELECT adk_append_event('t21_app', 'u', 'ts', '{"author": "user", "partial": false}') ->> 'partial' AS stored_partial;
SELECT expect_error($q$INSERT INTO adk.events (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data)
VALUES ('t21-p1', 't21_app', 'u', 'ts', '', now(), '{"author": "user", "partial": "true"}')$q$);
-- branch: agent names joined by dots
SELECT expect_error($q$SELECT adk_append_event('t21_app', 'u', 'ts', '{"author": "user", "branch": 7}')$q$);
SELECT expect_error($q$SELECT adk_append_event('t21_app', 'u', 'ts', '{"author": "user", "branch": ""}')$q$);
SELECT expect_error($q$SELECT adk_append_event('t21_app', 'u', 'ts', '{"author": "user", "branch": "root..child"}')$q$);
SELECT expect_error($q$SELECT adk_append_event('t21_app', 'u', 'ts', '{"author": "user", "branch": "root.child "}')$q$);
SELECT expect_error($q$SELECT adk_append_event('t21_app', 'u', 'ts', '{"author": "user", "branch": "root\nchild"}')$q$);
SELECT expect_error($q$INSERT INTO adk.events (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data)
VALUES ('t21-b1', 't21_app', 'u', 'ts', '', now(), '{"author": "user", "branch": ".root"}')$q$);
SELECT adk_append_event('t21_app', 'u', 'ts', '{"author": "user", "branch": "root_agent.sub-agent_2"}') ->> 'branch' AS branch;
-- a name may end in "@" and a node's key (ADK-Go's node branches), once
SELECT adk_append_event('t21_app', 'u', 'ts', '{"author": "user", "branch": "translator@1"}') ->> 'branch' AS branch;
SELECT adk_append_event('t21_app', 'u', 'ts', '{"author": "user", "branch": "coord.task@call_X-1"}') ->> 'branch' AS branch;
SELECT expect_error($q$SELECT adk_append_event('t21_app', 'u', 'ts', '{"author": "user", "branch": "translator@"}')$q$);
SELECT expect_error($q$SELECT adk_append_event('t21_app', 'u', 'ts', '{"author": "user", "branch": "@1"}')$q$);
SELECT expect_error($q$SELECT adk_append_event('t21_app', 'u', 'ts', '{"author": "user", "branch": "a@1@2"}')$q$);
-- scoped state keys need a name after the prefix
SELECT expect_error($q$SELECT adk_append_event('t21_app', 'u', 'ts', '{"author": "user", "actions": {"state_delta": {"app:": 1}}}')$q$);
SELECT expect_error($q$SELECT adk_append_event('t21_app', 'u', 'ts', '{"author": "user", "actions": {"state_delta": {"user:": 1}}}')$q$);
SELECT expect_error($q$INSERT INTO adk.events (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data)
VALUES ('t21-s1', 't21_app', 'u', 'ts', '', now(), '{"author": "user", "actions": {"state_delta": {"app:": 1}}}')$q$);
SELECT expect_error($q$SELECT adk_create_session('t21_app', 'u', 'st1', '{"user:": 1}')$q$);
SELECT count(*) AS no_empty_scoped_keys FROM adk.app_states WHERE state ? '';
SELECT count(*) AS no_empty_scoped_keys FROM adk.user_states WHERE state ? '';
-- after all of that the session is whole: dense seq, increasing times
SELECT count(*) = max(seq) AS dense,
       bool_and(ok) AS increasing
  FROM (SELECT seq, "timestamp" > lag("timestamp") OVER (ORDER BY seq) IS NOT FALSE AS ok
          FROM adk.events WHERE session_id = 'ts') e;

-- A row that carries its seq, inserted by the table's owner (pg_restore,
-- pg_dump | psql), is kept as it is, before its session is restored
INSERT INTO adk.events (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data, seq)
VALUES ('t21-r1', 't21_app', 'u', 'restored', '', '2020-01-01 00:00:00.123+00',
        '{"id": "t21-r1", "author": "user", "timestamp": 1577836800123}', 7);
SELECT seq, "timestamp" = '2020-01-01 00:00:00.123+00' AS same_time, event_data ->> 'timestamp' AS json_time
  FROM adk.events WHERE id = 't21-r1';
SELECT expect_error($q$INSERT INTO adk.events (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data, seq)
VALUES ('t21-r2', 't21_app', 'u', 'restored', '', now(), '{"author": "user"}', 0)$q$);
-- any other writer's seq is assigned as always
CREATE ROLE t21_writer;
GRANT USAGE ON SCHEMA adk TO t21_writer;
GRANT SELECT, INSERT ON adk.events, adk.events_p0 TO t21_writer;
GRANT SELECT, UPDATE ON adk.sessions, adk.sessions_p0 TO t21_writer;
GRANT EXECUTE ON FUNCTION adk._tenant_visible(text, text) TO t21_writer;
SELECT last_seq AS ts_last_seq FROM adk.sessions WHERE id = 'ts' \gset
SET ROLE t21_writer;
INSERT INTO adk.events (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data, seq)
VALUES ('t21-w1', 't21_app', 'u', 'ts', '', now(), '{"author": "user"}', 1000);
SELECT expect_error($q$INSERT INTO adk.events (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data, seq)
VALUES ('t21-w2', 't21_app', 'u', 'nope', '', now(), '{"author": "user"}', 1)$q$);
RESET ROLE;
SELECT seq = :ts_last_seq + 1 AS assigned FROM adk.events WHERE id = 't21-w1';
ROLLBACK;
SELECT count(*) AS left_behind FROM adk.model_calls WHERE model = 't21_model';
