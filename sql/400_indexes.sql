-- The real reads are index scans, whatever else is in the table.
-- 500 sessions of 50 users, 10 events each
SELECT count(adk_create_session('big', 'u' || (i % 50), 's' || i))
  FROM generate_series(1, 500) i;
SELECT count(adk_append_event('big', 'u' || (i % 50), 's' || i, '{"author": "user"}'))
  FROM generate_series(1, 500) i, generate_series(1, 10) j;
ANALYZE adk.sessions_p0, adk.events_p0, adk.sessions, adk.events;

-- the statements adk_get_session and adk_list_sessions run
PREPARE one_session(text, text, text) AS
  SELECT event_data FROM adk.events
   WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND seq > 0
   ORDER BY seq DESC;
PREPARE latest_n(text, text, text, int) AS
  SELECT event_data FROM adk.events
   WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND seq > 0
   ORDER BY seq DESC LIMIT $4;
PREPARE after_seq(text, text, text, bigint) AS
  SELECT event_data FROM adk.events
   WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND seq > $4
   ORDER BY seq DESC;
PREPARE user_sessions(text, text) AS
  SELECT id FROM adk.sessions WHERE app_name = $1 AND user_id = $2
   ORDER BY update_time DESC;
PREPARE session_row(text, text, text) AS
  SELECT * FROM adk.sessions WHERE app_name = $1 AND user_id = $2 AND id = $3;

SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE one_session('big', 'u1', 's1');
EXPLAIN (COSTS OFF) EXECUTE latest_n('big', 'u1', 's1', 5);
EXPLAIN (COSTS OFF) EXECUTE after_seq('big', 'u1', 's1', 8);
EXPLAIN (COSTS OFF) EXECUTE user_sessions('big', 'u1');
EXPLAIN (COSTS OFF) EXECUTE session_row('big', 'u1', 's1');
RESET plan_cache_mode;
EXPLAIN (COSTS OFF) EXECUTE latest_n('big', 'u1', 's1', 5);
EXPLAIN (COSTS OFF) EXECUTE user_sessions('big', 'u1');

-- the append's UPDATE of the session row finds it by its full key
EXPLAIN (COSTS OFF) UPDATE adk.sessions SET last_seq = last_seq + 1
 WHERE app_name = 'big' AND user_id = 'u1' AND id = 's1';
