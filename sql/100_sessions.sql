-- Sessions: create, get, list, delete; state scopes; identity errors.
\set VERBOSITY default

SELECT adk_create_session('app', 'alice', 's1',
       '{"topic": "weather", "app:theme": "dark", "user:lang": "en", "temp:scratch": 1}') - 'last_update_time';

-- scopes: session keys in sessions.state, app:/user: stripped in their
-- tables, temp: nowhere
SELECT state FROM adk.sessions WHERE id = 's1';
SELECT app_name, state FROM adk.app_states ORDER BY 1;
SELECT app_name, user_id, state FROM adk.user_states ORDER BY 1, 2;

-- a second session of the same user sees the shared scopes
SELECT adk_create_session('app', 'alice', 's2') -> 'state';
-- another user of the same app sees the app scope only
SELECT adk_create_session('app', 'bob', 's3', '{"user:lang": "fr"}') -> 'state';

-- generated id: a uuid
SELECT (adk_create_session('app', 'bob') ->> 'id') ~ '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$' AS uuid_id;

-- duplicate id: a clear unique violation, nothing changed
SELECT expect_error($q$SELECT adk_create_session('app', 'alice', 's1', '{"topic": "other"}')$q$);
SELECT state FROM adk.sessions WHERE id = 's1';
-- the same id for another user or app is another session
SELECT adk_create_session('app', 'bob', 's1') ->> 'id';
SELECT adk_create_session('app2', 'alice', 's1') ->> 'id';

-- get: ADK's Session shape
SELECT jsonb_object_keys(adk_get_session('app', 'alice', 's1')) ORDER BY 1;
SELECT adk_get_session('app', 'alice', 's1') -> 'state';
SELECT (adk_get_session('app', 'alice', 's1') ->> 'last_update_time')::numeric
       = extract(epoch FROM update_time) AS last_update_time_ok
  FROM adk.sessions WHERE id = 's1' AND user_id = 'alice' AND app_name = 'app';

-- list: newest first, merged state, no events
SELECT session_id, user_id, state, last_seq FROM adk_list_sessions('app', 'alice');
SELECT count(*) FROM adk_list_sessions('app');
SELECT count(*) FROM adk_list_sessions('nope');

-- identity errors: NULL, empty, too long (191 characters is the limit,
-- counted in characters)
SELECT expect_error($q$SELECT adk_create_session(NULL, 'u')$q$);
SELECT expect_error($q$SELECT adk_create_session('app', '')$q$);
SELECT expect_error($q$SELECT adk_create_session('app', 'u', repeat('x', 192))$q$);
SELECT expect_error($q$SELECT adk_create_session('app', 'u', repeat('é', 192))$q$);
SELECT length(adk_create_session('app', 'u', repeat('é', 191)) ->> 'id');
SELECT expect_error($q$SELECT adk_create_session('app', 'u', 's', '[1, 2]')$q$);
-- a NUL byte cannot even reach us: text and jsonb refuse it
SELECT adk_create_session('app', 'u', E'a\u0000b');
SELECT expect_error($q$SELECT adk_append_event('app', 'alice', 's1', '{"author": "a\u0000b"}')$q$);
SELECT expect_error($q$SELECT adk_get_session('app', 'alice', NULL)$q$);
SELECT expect_error($q$SELECT adk_get_session('app', 'alice', 'missing')$q$);
SELECT expect_error($q$SELECT adk_get_session('app', 'alice', 's1', -1)$q$);
SELECT expect_error($q$SELECT * FROM adk_list_sessions('')$q$);
SELECT expect_error($q$SELECT adk_delete_session('app', 'alice', 'missing')$q$);

-- delete: the session and its events go; app and user state stay
SELECT adk_append_event('app', 'alice', 's2', '{"author": "user"}') IS NOT NULL;
SELECT count(*) FROM adk.events WHERE session_id = 's2';
SELECT adk_delete_session('app', 'alice', 's2');
SELECT count(*) FROM adk.events WHERE session_id = 's2';
SELECT count(*) FROM adk.sessions WHERE id = 's2';
SELECT state FROM adk.user_states WHERE user_id = 'alice' AND app_name = 'app';
SELECT expect_error($q$SELECT adk_get_session('app', 'alice', 's2')$q$);
