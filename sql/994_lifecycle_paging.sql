-- Paging: adk_list_sessions(app, user, page_size, page_token) and
-- adk_list_events(app, user, session, page_size, page_token), keyset over
-- (update_time, id) and seq: default 20, an error above 100, every row
-- carrying next_page_token (NULL on the last page), ADK Python's offset
-- token accepted; tenancy.
SELECT adk_define_app('pa_app', 'lc_agent');
SELECT adk_define_app('pa_role', 'lc_agent', tenancy => 'role');
-- 45 sessions of u1, one second apart (s01 the oldest), 3 of u2
INSERT INTO adk.sessions (id, app_name, user_id, state, create_time, update_time)
SELECT format('s%s', lpad(i::text, 2, '0')), 'pa_app', 'u1', '{}',
       timestamptz '2026-01-01 00:00:00+00' + i * interval '1 second',
       timestamptz '2026-01-01 00:00:00+00' + i * interval '1 second'
  FROM generate_series(1, 45) i;
INSERT INTO adk.sessions (id, app_name, user_id, state, create_time, update_time)
SELECT format('s%s', lpad(i::text, 2, '0')), 'pa_app', 'u2', '{}',
       timestamptz '2026-01-01 00:00:00+00' + i * interval '1 second',
       timestamptz '2026-01-01 00:00:00+00' + i * interval '1 second'
  FROM generate_series(1, 3) i;

-- the default page: 20, newest first, the same token on every row
SELECT count(*) AS rows, min(session_id), max(session_id), count(DISTINCT next_page_token) AS tokens,
       bool_and(next_page_token IS NOT NULL) AS has_next
  FROM adk_list_sessions('pa_app', 'u1', NULL);
-- walk every page: each session exactly once, in order, and the last page
-- says there is no next one
CREATE TEMP TABLE pa_walk (page int, session_id text, next_page_token text);
DO $$
DECLARE
    tok text := NULL;
    p int := 0;
BEGIN
    LOOP
        p := p + 1;
        INSERT INTO pa_walk SELECT p, l.session_id, l.next_page_token
          FROM adk_list_sessions('pa_app', 'u1', 20, tok) l;
        SELECT max(w.next_page_token) INTO tok FROM pa_walk w WHERE w.page = p;
        EXIT WHEN tok IS NULL OR p > 10;
    END LOOP;
END $$;
SELECT page, count(*), min(session_id), max(session_id), bool_and(next_page_token IS NULL) AS last
  FROM pa_walk GROUP BY page ORDER BY page;
SELECT count(DISTINCT session_id) AS distinct_sessions FROM pa_walk;
-- the order is the unpaged adk_list_sessions' order
SELECT array_agg(session_id ORDER BY page, ord) = (SELECT array_agg(session_id) FROM adk_list_sessions('pa_app', 'u1'))
       AS same_order
  FROM (SELECT *, row_number() OVER () AS ord FROM pa_walk) w;

-- New sessions after the first page was read do not move the next page
-- (they are newer: they come before it).  An offset would show s25 again.
CREATE TEMP TABLE pa_first AS SELECT * FROM adk_list_sessions('pa_app', 'u1', 20);
SELECT adk_create_session('pa_app', 'u1', 'new' || i) IS NOT NULL FROM generate_series(1, 3) i;
SELECT string_agg(session_id, ' ') AS second_page
  FROM adk_list_sessions('pa_app', 'u1', 5, (SELECT max(next_page_token) FROM pa_first));
-- ADK Python's token: base64 of the offset, into the same order (now
-- three newer sessions shift it)
SELECT encode(convert_to('20', 'UTF8'), 'base64') AS python_token;
SELECT string_agg(session_id, ' ') AS from_offset_20, max(next_page_token) IS NOT NULL AS has_next
  FROM adk_list_sessions('pa_app', 'u1', 5, 'MjA=');
-- whose next token is ours, and continues after it
SELECT string_agg(session_id, ' ') AS after_offset_page
  FROM adk_list_sessions('pa_app', 'u1', 5,
                         (SELECT max(next_page_token) FROM adk_list_sessions('pa_app', 'u1', 5, 'MjA=')));
-- every user of the app (user_id NULL): two users' s01..s03 share ids
SELECT count(*) AS rows, count(DISTINCT (user_id, session_id)) AS distinct_sessions
  FROM (SELECT * FROM adk_list_sessions('pa_app', NULL, 46)) a;
SELECT user_id, session_id
  FROM adk_list_sessions('pa_app', NULL, 4,
                         (SELECT max(next_page_token) FROM adk_list_sessions('pa_app', NULL, 44)));

-- bad sizes and tokens: errors, never a silent truncation
SELECT expect_error($$SELECT * FROM adk_list_sessions('pa_app', 'u1', 101)$$);
SELECT expect_error($$SELECT * FROM adk_list_sessions('pa_app', 'u1', 0)$$);
SELECT expect_error($$SELECT * FROM adk_list_sessions('pa_app', 'u1', 10, 'not a token')$$);
SELECT expect_error($$SELECT * FROM adk_list_sessions('pa_app', 'u1', 10, 'e30')$$);
SELECT count(*) FROM adk_list_sessions('pa_app', 'u1', 100);

-- Events: 45 in a session, by seq
SELECT adk_create_session('pa_app', 'u1', 'ev') IS NOT NULL;
SELECT count(adk_append_event('pa_app', 'u1', 'ev',
           jsonb_build_object('author', 'user', 'content',
                              jsonb_build_object('role', 'user', 'parts', jsonb_build_array(jsonb_build_object('text', 'm' || i))))))
  FROM generate_series(1, 45) i;
SELECT count(*) AS rows, min(seq), max(seq), max(next_page_token) IS NOT NULL AS has_next
  FROM adk_list_events('pa_app', 'u1', 'ev');
SELECT min(seq), max(seq), count(*), max(next_page_token) IS NULL AS last
  FROM adk_list_events('pa_app', 'u1', 'ev', 30,
                       (SELECT max(next_page_token) FROM adk_list_events('pa_app', 'u1', 'ev')));
-- ADK Python's offset token
SELECT min(seq), max(seq) FROM adk_list_events('pa_app', 'u1', 'ev', 3, encode('40', 'base64'));
SELECT expect_error($$SELECT * FROM adk_list_events('pa_app', 'u1', 'ev', 1000)$$);
SELECT expect_error($$SELECT * FROM adk_list_events('pa_app', 'u1', 'nope')$$);

-- Tenancy: in a 'role' app a role pages only its own sessions; a token
-- holds a position, not a permission.
CREATE ROLE pa_alice IN ROLE adk_user;
CREATE ROLE pa_mallory IN ROLE adk_user;
SELECT adk_create_session('pa_role', 'pa_alice', 'a' || i) IS NOT NULL FROM generate_series(1, 3) i;
SELECT adk_append_event('pa_role', 'pa_alice', 'a1',
                        '{"author": "user", "content": {"role": "user", "parts": [{"text": "private"}]}}') IS NOT NULL;
SET ROLE pa_alice;
SELECT count(*) FROM adk_list_sessions('pa_role', 'pa_alice', 2);
CREATE TEMP TABLE pa_alice_token AS
    SELECT max(next_page_token) AS t FROM adk_list_sessions('pa_role', 'pa_alice', 2);
GRANT SELECT ON pa_alice_token TO pa_mallory;
RESET ROLE;
SET ROLE pa_mallory;
SELECT expect_error($$SELECT * FROM adk_list_sessions('pa_role', 'pa_alice', 2)$$);
SELECT expect_error(format('SELECT * FROM adk_list_sessions(%L, %L, 2, %L)', 'pa_role', 'pa_alice',
                           (SELECT t FROM pa_alice_token)));
SELECT expect_error($$SELECT * FROM adk_list_events('pa_role', 'pa_alice', 'a1')$$);
-- without a user id: only what row-level security shows (nothing here)
SELECT count(*) FROM adk_list_sessions('pa_role', NULL, 100);
RESET ROLE;
DROP TABLE pa_alice_token;
DROP ROLE pa_alice, pa_mallory;
