-- Forks: adk_fork_session copies the live events before the fork point
-- (seq dense from 1, timestamps as they were: monotonic), the session state
-- as it was there, never an open call as pending, lineage in adk.sessions,
-- session artifacts as references (no byte copied until their holder
-- goes); a fork is an ordinary session; errors; tenancy.
SELECT adk_define_app('fk_app', 'lc_agent');
SELECT adk_define_app('fk_role', 'lc_agent', tenancy => 'role');

-- The source: created with state, two invocations that set state (one of
-- them a user: key), then a run that pauses on a long-running call, and a
-- session artifact.
SELECT adk_create_session('fk_app', 'u', 'src', '{"init": 1, "topic": "none"}') IS NOT NULL;
CREATE FUNCTION fk_event(sid text, inv text, author text, txt text, delta jsonb DEFAULT NULL)
RETURNS boolean LANGUAGE sql AS $$
    SELECT adk_append_event('fk_app', 'u', sid, jsonb_build_object(
        'invocation_id', inv, 'author', author,
        'content', jsonb_build_object('role', CASE author WHEN 'user' THEN 'user' ELSE 'model' END,
                                      'parts', jsonb_build_array(jsonb_build_object('text', txt))),
        'actions', jsonb_build_object('state_delta', coalesce(delta, '{}'::jsonb)))) IS NOT NULL
$$;
SELECT fk_event('src', 'inv-1', 'user', 'hi', '{"topic": "cats"}'),
       fk_event('src', 'inv-1', 'lc_agent', 'hello'),
       fk_event('src', 'inv-2', 'user', 'more', '{"topic": "dogs", "mood": "ok", "user:lang": "fr"}'),
       fk_event('src', 'inv-2', 'lc_agent', 'sure');
SELECT count(*) FROM adk_run('fk_app', 'u', 'src', 'call lc_hold({"item": "x"})');
SELECT count(*) AS pending_in_source FROM adk.pending_interrupts WHERE session_id = 'src';
SELECT adk_save_artifact('fk_app', 'u', 'src', 'big.bin', decode(repeat('ab', 50000), 'hex'), 'application/octet-stream');
SELECT state FROM adk.sessions WHERE id = 'src';
CREATE TEMP TABLE fk_artifact_bytes AS SELECT sum(octet_length(data)) AS bytes FROM adk.artifacts;

-- 1. The whole session: every event but the open call (its call and the
-- tool's pending response), the state as it is, no pending interrupt.
SELECT adk_fork_session('fk_app', 'u', 'src', new_session_id => 'whole');
-- (the run's invocation id is generated: shown as "run")
SELECT e.seq, e.event_data ->> 'author' AS author,
       CASE WHEN e.invocation_id LIKE 'inv-%' THEN e.invocation_id ELSE 'run' END AS invocation,
       coalesce(e.event_data #>> '{content,parts,0,text}', e.event_data #>> '{content,parts,0,function_call,name}',
                e.event_data #>> '{content,parts,0,function_response,name}') AS what
  FROM adk.events e WHERE e.session_id = 'src' ORDER BY e.seq;
SELECT e.seq, e.event_data ->> 'author' AS author,
       CASE WHEN e.invocation_id LIKE 'inv-%' THEN e.invocation_id ELSE 'run' END AS invocation,
       e.event_data #>> '{content,parts,0,text}' AS text
  FROM adk.events e WHERE e.session_id = 'whole' ORDER BY e.seq;
-- ids, invocation ids and times are the source's, seq is dense and the
-- times increase with it
SELECT bool_and(f."timestamp" = s."timestamp" AND f.invocation_id = s.invocation_id
                AND (f.event_data ->> 'timestamp') = (s.event_data ->> 'timestamp')) AS same_times,
       array_agg(f.seq ORDER BY f.seq) AS seqs,
       bool_and(f."timestamp" > coalesce(p."timestamp", '-infinity')) AS increasing
  FROM adk.events f
  JOIN adk.events s ON s.session_id = 'src' AND s.id = f.id
  LEFT JOIN adk.events p ON p.session_id = 'whole' AND p.seq = f.seq - 1
 WHERE f.session_id = 'whole';
SELECT id, state, last_seq, forked_from, forked_at_seq,
       last_event_time = (SELECT max("timestamp") FROM adk.events WHERE session_id = 'whole') AS last_event_time_ok,
       update_time >= last_event_time AS update_time_ok
  FROM adk.sessions WHERE id = 'whole';
SELECT count(*) AS pending_in_fork FROM adk.pending_interrupts WHERE session_id = 'whole';
SELECT count(*) AS run_states_in_fork FROM adk.run_states WHERE session_id = 'whole';
SELECT count(*) AS long_running_ids_in_fork FROM adk.events
 WHERE session_id = 'whole' AND jsonb_array_length(coalesce(event_data -> 'long_running_tool_ids', '[]')) > 0;
-- the session's artifact comes as a reference: the fork loads the same
-- bytes, and no byte is stored twice
SELECT filename, version, source_session_id, octet_length(data) AS own_bytes, size
  FROM adk.artifacts WHERE app_name = 'fk_app' AND session_id = 'whole';
SELECT adk_load_artifact('fk_app', 'u', 'whole', 'big.bin') = adk_load_artifact('fk_app', 'u', 'src', 'big.bin')
       AS same_bytes;
SELECT (SELECT bytes FROM fk_artifact_bytes) = sum(octet_length(data)) AS no_byte_copied FROM adk.artifacts;

-- 2. Before an invocation: the events before its first one, and the state
-- as it was there (the creation's keys, then inv-1's delta); the user's
-- state is not set back.
SELECT adk_fork_session('fk_app', 'u', 'src', 'inv-2', 'before2');
SELECT seq, invocation_id, event_data #>> '{content,parts,0,text}' AS text FROM adk.events
 WHERE session_id = 'before2' ORDER BY seq;
SELECT state, last_seq, forked_from, forked_at_seq FROM adk.sessions WHERE id = 'before2';
SELECT state FROM adk.user_states WHERE app_name = 'fk_app' AND user_id = 'u';
SELECT adk_get_session('fk_app', 'u', 'before2') -> 'state' AS merged_state;
-- before the first invocation: an empty session with the creation's state
SELECT adk_fork_session('fk_app', 'u', 'src', 'inv-1', 'before1');
SELECT state, last_seq, forked_at_seq FROM adk.sessions WHERE id = 'before1';

-- 3. A fork is an ordinary session: a run appends after its copies (seq
-- and time go on), it can be forked, listed, deleted.
SELECT count(*) FROM adk_run('fk_app', 'u', 'before2', 'and now?');
SELECT seq, event_data ->> 'author' AS author,
       "timestamp" > (SELECT max("timestamp") FROM adk.events WHERE session_id = 'src' AND invocation_id = 'inv-1') AS later
  FROM adk.events WHERE session_id = 'before2' ORDER BY seq;
SELECT adk_fork_session('fk_app', 'u', 'before2', new_session_id => 'grandchild');
SELECT id, forked_from, forked_at_seq, last_seq FROM adk.sessions
 WHERE app_name = 'fk_app' AND forked_from IS NOT NULL ORDER BY id;

-- 4. Once the person answered, the call is no longer open: a fork takes it
-- with its answer.
SELECT count(*) FROM adk_run('fk_app', 'u', 'src',
    adk_function_response((SELECT call_id FROM adk.pending_interrupts WHERE session_id = 'src'),
                          'lc_hold', '{"approved": true}'));
SELECT adk_fork_session('fk_app', 'u', 'src', new_session_id => 'answered');
SELECT (SELECT last_seq FROM adk.sessions WHERE id = 'src') AS source_events,
       (SELECT last_seq FROM adk.sessions WHERE id = 'answered') AS fork_events;

-- 5. A rewind event another runtime wrote (ADK Python's
-- actions.rewind_before_invocation_id) hides inv-2 and itself.
SELECT adk_create_session('fk_app', 'u', 'rw', '{}') IS NOT NULL;
SELECT fk_event('rw', 'inv-1', 'user', 'one', '{"k": 1}'), fk_event('rw', 'inv-2', 'user', 'two', '{"k": 2}');
SELECT adk_append_event('fk_app', 'u', 'rw', '{"invocation_id": "inv-r", "author": "user",
        "actions": {"state_delta": {"k": 1}, "rewind_before_invocation_id": "inv-2"}}') IS NOT NULL AS rewind_appended;
SELECT fk_event('rw', 'inv-3', 'user', 'three');
SELECT adk_fork_session('fk_app', 'u', 'rw', new_session_id => 'rw_whole');
SELECT seq, invocation_id, event_data #>> '{content,parts,0,text}' AS text FROM adk.events
 WHERE session_id = 'rw_whole' ORDER BY seq;
SELECT adk_fork_session('fk_app', 'u', 'rw', 'inv-3', 'rw_before3');
SELECT state, last_seq, forked_at_seq FROM adk.sessions WHERE id = 'rw_before3';

-- errors
SELECT expect_error($$SELECT adk_fork_session('fk_app', 'u', 'nope')$$);
SELECT expect_error($$SELECT adk_fork_session('fk_app', 'u', 'src', 'inv-nope')$$);
SELECT expect_error($$SELECT adk_fork_session('fk_app', 'u', 'src', NULL, 'whole')$$);
SELECT expect_error($$SELECT adk_fork_session('fk_app', 'u', 'src', NULL, '')$$);
SELECT expect_error($$SELECT adk_fork_session('fk_app', 'u', NULL)$$);
-- a generated id
SELECT length(adk_fork_session('fk_app', 'u', 'src')) AS generated_id_length;

-- Artifacts: a fork before the artifact was saved has none; a fork of a
-- fork references the row that holds the bytes; when that row goes (its
-- artifact or session deleted), each reference gets its own copy first.
SELECT count(*) AS artifacts_before2 FROM adk.artifacts WHERE app_name = 'fk_app' AND session_id = 'before2';
SELECT adk_fork_session('fk_app', 'u', 'whole', new_session_id => 'whole2');
SELECT session_id, source_session_id, octet_length(data) AS own_bytes
  FROM adk.artifacts WHERE app_name = 'fk_app' AND filename = 'big.bin' AND length(session_id) < 20 ORDER BY session_id;
SELECT adk_delete_artifact('fk_app', 'u', 'src', 'big.bin') AS deleted;
SELECT session_id, source_session_id, octet_length(data) = size AS own_bytes
  FROM adk.artifacts WHERE app_name = 'fk_app' AND filename = 'big.bin' AND length(session_id) < 20 ORDER BY session_id;
SELECT adk_load_artifact('fk_app', 'u', 'whole2', 'big.bin') = decode(repeat('ab', 50000), 'hex') AS still_loads;
SELECT adk_fork_session('fk_app', 'u', 'whole2', new_session_id => 'whole3');
SELECT adk_delete_session('fk_app', 'u', 'whole2');
SELECT session_id, source_session_id, octet_length(data) = size AS own_bytes
  FROM adk.artifacts WHERE app_name = 'fk_app' AND filename = 'big.bin' AND length(session_id) < 20 ORDER BY session_id;
SELECT adk_load_artifact('fk_app', 'u', 'whole3', 'big.bin') = decode(repeat('ab', 50000), 'hex') AS still_loads;

-- Tenancy: a role forks only its own sessions (into its own), and nobody
-- calls the body directly.
CREATE ROLE fk_alice IN ROLE adk_user;
CREATE ROLE fk_mallory IN ROLE adk_user;
SELECT adk_create_session('fk_role', 'fk_alice', 'diary') IS NOT NULL;
SELECT adk_append_event('fk_role', 'fk_alice', 'diary',
                        '{"author": "user", "content": {"role": "user", "parts": [{"text": "secret"}]}}') IS NOT NULL;
SET ROLE fk_mallory;
SELECT expect_error($$SELECT adk_fork_session('fk_role', 'fk_alice', 'diary')$$);
SELECT expect_error($$SELECT adk_fork_session('fk_role', 'fk_mallory', 'diary')$$);
SELECT expect_error($$SELECT adk._fork_session('fk_role', 'fk_alice', 'diary', NULL, 'stolen')$$);
RESET ROLE;
SET ROLE fk_alice;
SELECT adk_fork_session('fk_role', 'fk_alice', 'diary', new_session_id => 'diary2');
SELECT seq, event_data #>> '{content,parts,0,text}' AS text FROM adk.events WHERE session_id = 'diary2';
RESET ROLE;
SELECT app_name, user_id, id FROM adk.sessions WHERE app_name = 'fk_role' ORDER BY id;
SELECT adk_purge_user('fk_role', 'fk_alice') ->> 'sessions' AS purged;
DROP ROLE fk_alice, fk_mallory;
