-- Rewind and edit: adk_rewind appends ADK Python's rewind event (state and
-- session artifacts restored, nothing deleted) and every reader of the
-- history skips the rewound events -- event_log, prompts, compaction,
-- routing, run states, memory; a foreign rewind event is honoured;
-- adk_edit_message; errors; tenancy.
SELECT adk_set_secret('rw-key', 'sk-rw', ARRAY['127.0.0.1']);
SELECT adk_define_model('rw_model', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'rw-key');
SELECT adk_define_agent('rw_helper', model => 'rw_model', description => 'Helps.');
SELECT adk_define_agent('rw_root', model => 'rw_model', sub_agents => ARRAY['rw_helper']);
SELECT adk_define_app('rw_app', 'rw_root');
CREATE FUNCTION rw_ev(sid text, inv text, author text, txt text, delta jsonb DEFAULT '{}',
                      art jsonb DEFAULT '{}') RETURNS boolean
LANGUAGE sql AS $$
    SELECT adk_append_event('rw_app', 'u', sid, jsonb_build_object(
        'invocation_id', inv, 'author', author,
        'content', jsonb_build_object('role', CASE author WHEN 'user' THEN 'user' ELSE 'model' END,
                                      'parts', jsonb_build_array(jsonb_build_object('text', txt))),
        'actions', jsonb_build_object('state_delta', delta, 'artifact_delta', art))) IS NOT NULL
$$;
CREATE FUNCTION rw_live(sid text) RETURNS TABLE (seq bigint, invocation_id text, author text, text text)
LANGUAGE sql AS $$
    SELECT seq, invocation_id, author, text FROM adk.event_log
     WHERE app_name = 'rw_app' AND user_id = 'u' AND session_id = sid ORDER BY seq $$;
CREATE FUNCTION rw_state(sid text) RETURNS jsonb LANGUAGE sql AS $$
    SELECT state FROM adk.sessions WHERE app_name = 'rw_app' AND user_id = 'u' AND id = sid $$;
CREATE FUNCTION rw_art(sid text, f text) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(convert_from(adk_load_artifact('rw_app', 'u', sid, f), 'UTF8'), '<none>') $$;

-- 1. ADK Python's test_rewind_async_with_state_and_artifacts: three
-- invocations setting state and saving artifacts; rewind before the second.
SELECT adk_create_session('rw_app', 'u', 'py1') IS NOT NULL AS created;
SELECT adk_save_artifact('rw_app', 'u', 'py1', 'f1', convert_to('f1v0', 'UTF8'));
SELECT rw_ev('py1', 'invocation1', 'agent', 'event1', '{"k1": "v1"}', '{"f1": 0}');
SELECT adk_save_artifact('rw_app', 'u', 'py1', 'f1', convert_to('f1v1', 'UTF8')),
       adk_save_artifact('rw_app', 'u', 'py1', 'f2', convert_to('f2v0', 'UTF8'));
SELECT rw_ev('py1', 'invocation2', 'agent', 'event2', '{"k1": "v2", "k2": "v2"}', '{"f1": 1, "f2": 0}');
SELECT rw_ev('py1', 'invocation3', 'agent', 'event3', '{"k2": "v3"}');
SELECT rw_state('py1') AS state, rw_art('py1', 'f1') AS f1, rw_art('py1', 'f2') AS f2;
SELECT e ->> 'author' AS author, e ->> 'invocation_id' LIKE 'e-%' AS new_invocation,
       e -> 'actions' AS actions
  FROM adk_rewind('rw_app', 'u', 'py1', 'invocation2') e;
-- k1 back to v1, k2 null (it did not exist then); f1 back to f1v0 as a new
-- version, f2 an empty new version (ADK: "inaccessible")
SELECT rw_state('py1') AS state, rw_art('py1', 'f1') AS f1, rw_art('py1', 'f2') AS f2,
       (SELECT max(version) FROM adk.artifacts WHERE app_name = 'rw_app' AND session_id = 'py1' AND filename = 'f1') AS f1_version,
       (SELECT size FROM adk.artifacts WHERE app_name = 'rw_app' AND session_id = 'py1' AND filename = 'f2' ORDER BY version DESC LIMIT 1) AS f2_size;
-- nothing deleted: four events stored, one live; the rewound seqs
SELECT count(*) AS stored FROM adk.events WHERE app_name = 'rw_app' AND session_id = 'py1';
SELECT * FROM rw_live('py1');
SELECT rewound FROM adk.sessions WHERE app_name = 'rw_app' AND id = 'py1';

-- 2. test_rewind_async_not_first_invocation: rewind before the third.
SELECT adk_create_session('rw_app', 'u', 'py2') IS NOT NULL AS created;
SELECT adk_save_artifact('rw_app', 'u', 'py2', 'f1', convert_to('f1v0', 'UTF8'));
SELECT rw_ev('py2', 'invocation1', 'agent', 'event1', '{"k1": "v1"}', '{"f1": 0}');
SELECT adk_save_artifact('rw_app', 'u', 'py2', 'f1', convert_to('f1v1', 'UTF8')),
       adk_save_artifact('rw_app', 'u', 'py2', 'f2', convert_to('f2v0', 'UTF8'));
SELECT rw_ev('py2', 'invocation2', 'agent', 'event2', '{"k1": "v2", "k2": "v2"}', '{"f1": 1, "f2": 0}');
SELECT rw_ev('py2', 'invocation3', 'agent', 'event3', '{"k2": "v3"}');
SELECT adk_rewind('rw_app', 'u', 'py2', 'invocation3') #> '{actions}' AS actions;
SELECT rw_state('py2') AS state, rw_art('py2', 'f1') AS f1, rw_art('py2', 'f2') AS f2;

-- 3. Before the first invocation: every key of the session goes (null);
-- app: and user: keys are untouched.
SELECT adk_create_session('rw_app', 'u', 'first') IS NOT NULL AS created;
SELECT rw_ev('first', 'i1', 'user', 'hello', '{"a": 1, "app:shared": 1, "user:pref": "x"}');
SELECT rw_ev('first', 'i2', 'user', 'again', '{"b": 2}');
SELECT adk_rewind('rw_app', 'u', 'first', 'i1') #> '{actions,state_delta}' AS delta;
SELECT rw_state('first') AS state,
       (SELECT state FROM adk.app_states WHERE app_name = 'rw_app') AS app_state,
       (SELECT state FROM adk.user_states WHERE app_name = 'rw_app' AND user_id = 'u') AS user_state;
SELECT count(*) AS live FROM rw_live('first');

-- 4. Rewinding a rewind brings back what it had rewound (ADK's rule).
SELECT adk_create_session('rw_app', 'u', 'twice') IS NOT NULL AS created;
SELECT rw_ev('twice', 'i1', 'user', 'one', '{"n": 1}'), rw_ev('twice', 'i2', 'user', 'two', '{"n": 2}');
SELECT adk_rewind('rw_app', 'u', 'twice', 'i2') ->> 'invocation_id' AS r1 \gset
SELECT rw_state('twice') AS state, (SELECT count(*) FROM rw_live('twice')) AS live;
SELECT adk_rewind('rw_app', 'u', 'twice', :'r1') #> '{actions,state_delta}' AS delta;
SELECT rw_state('twice') AS state;
SELECT seq, text FROM rw_live('twice');
SELECT rewound FROM adk.sessions WHERE app_name = 'rw_app' AND id = 'twice';

-- 5. A foreign writer's rewind event (as ADK Python appends it) is
-- honoured on insert.
SELECT adk_create_session('rw_app', 'u', 'foreign') IS NOT NULL AS created;
SELECT rw_ev('foreign', 'i1', 'user', 'keep me'), rw_ev('foreign', 'i2', 'user', 'drop me');
SELECT adk_append_event('rw_app', 'u', 'foreign', '{"invocation_id": "e-python", "author": "user",
         "actions": {"rewind_before_invocation_id": "i2", "state_delta": {}, "artifact_delta": {}}}') IS NOT NULL AS appended;
SELECT seq, text FROM rw_live('foreign');
-- a writer that stores every field of ADK's EventActions writes
-- rewind_before_invocation_id null on other events: no rewind
SELECT adk_append_event('rw_app', 'u', 'foreign', '{"invocation_id": "i3", "author": "user",
         "content": {"role": "user", "parts": [{"text": "still here"}]},
         "actions": {"rewind_before_invocation_id": null}}') IS NOT NULL AS appended;
SELECT seq, text FROM rw_live('foreign');

-- 6. Prompts skip rewound events: after rewinding the second message, the
-- next request carries the first and not the second.
SELECT count(*) FROM adk_run('rw_app', 'u', 'prompt', 'my word is apple');
SELECT count(*) FROM adk_run('rw_app', 'u', 'prompt', 'my word is banana');
SELECT adk_rewind('rw_app', 'u', 'prompt',
                  (SELECT invocation_id FROM adk.event_log WHERE app_name = 'rw_app' AND session_id = 'prompt' AND text = 'my word is banana'))
       IS NOT NULL AS rewound;
SELECT count(*) FROM adk_run('rw_app', 'u', 'prompt', 'what is my word?');
SELECT request::text LIKE '%apple%' AS has_apple, request::text LIKE '%banana%' AS has_banana
  FROM adk.model_calls WHERE user_id = 'u' AND app_name = 'rw_app' ORDER BY id DESC LIMIT 1;

-- 7. Routing: a transfer to rw_helper, rewound, no longer routes the next
-- message to it.
SELECT count(*) FROM adk_run('rw_app', 'u', 'route', 'transfer to rw_helper');
SELECT author FROM adk.event_log WHERE app_name = 'rw_app' AND session_id = 'route' ORDER BY seq DESC LIMIT 1;
SELECT adk_rewind('rw_app', 'u', 'route', (SELECT invocation_id FROM adk.events WHERE app_name = 'rw_app' AND session_id = 'route' LIMIT 1))
       IS NOT NULL AS rewound;
SELECT event_data ->> 'author' AS answered_by FROM adk_run('rw_app', 'u', 'route', 'hello');

-- 8. Compaction does not summarize rewound events.
SELECT adk_create_session('rw_app', 'u', 'compact') IS NOT NULL AS created;
SELECT rw_ev('compact', 'i1', 'user', 'kept words'), rw_ev('compact', 'i2', 'user', 'rewound words'),
       rw_ev('compact', 'i3', 'user', 'later words');
SELECT adk_rewind('rw_app', 'u', 'compact', 'i2') IS NOT NULL AS rewound;
SELECT rw_ev('compact', 'i4', 'user', 'after the rewind');
SELECT plan ->> 'transcript' AS transcript
  FROM adk_compaction_read('rw_app', 'u', 'compact') plan;

-- 9. Memory takes only live events.
SELECT adk_add_session_to_memory('rw_app', 'u', 'compact') AS added;
SELECT text FROM adk.memory WHERE app_name = 'rw_app' AND session_id = 'compact' ORDER BY "timestamp";

-- 10. A paused run in the rewound range is cancelled; its call is no
-- longer pending.
CREATE FUNCTION rw_wait(topic text) RETURNS jsonb LANGUAGE sql AS $$ SELECT '{"status": "pending"}'::jsonb $$;
COMMENT ON FUNCTION rw_wait(text) IS 'Starts a long task.';
SELECT adk_define_tool('rw_wait(text)'::regprocedure, long_running => true);
SELECT adk_define_agent('rw_waiter', model => 'rw_model', tools => ARRAY['rw_wait']);
SELECT adk_define_app('rw_wait_app', 'rw_waiter');
SELECT count(*) FROM adk_run('rw_wait_app', 'u', 'paused', 'call rw_wait({"topic": "x"})');
SELECT status FROM adk.run_states WHERE app_name = 'rw_wait_app' AND session_id = 'paused';
SELECT adk_rewind('rw_wait_app', 'u', 'paused', (SELECT invocation_id FROM adk.events WHERE app_name = 'rw_wait_app' AND session_id = 'paused' LIMIT 1))
       IS NOT NULL AS rewound;
SELECT r.status AS run_state, i.status AS invocation
  FROM adk.run_states r JOIN adk.invocations i USING (invocation_id) WHERE r.app_name = 'rw_wait_app' AND r.session_id = 'paused';
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE app_name = 'rw_wait_app' AND session_id = 'paused';
-- an answer to the rewound call resumes nothing: like any response to a
-- call the live history does not hold, it starts a new invocation
SELECT count(*) FROM adk_run('rw_wait_app', 'u', 'paused',
                             adk_function_response((SELECT p #>> '{function_call,id}' FROM adk.events e,
                                                            jsonb_array_elements(e.event_data #> '{content,parts}') p
                                                     WHERE e.app_name = 'rw_wait_app' AND e.session_id = 'paused' AND p ? 'function_call'),
                                                   'rw_wait', '{"status": "done"}'));
SELECT status, resumed FROM adk.invocations WHERE app_name = 'rw_wait_app' AND session_id = 'paused' ORDER BY started_at;

-- 11. adk_edit_message: the invocation's message replaced by a new one.
SELECT count(*) FROM adk_run('rw_app', 'u', 'edit', 'first message');
SELECT count(*) FROM adk_run('rw_app', 'u', 'edit', 'second mesage');
SELECT event_data ->> 'author' AS author, event_data #>> '{content,parts,0,text}' AS text
  FROM adk_edit_message('rw_app', 'u', 'edit',
                        (SELECT invocation_id FROM adk.event_log WHERE app_name = 'rw_app' AND session_id = 'edit' AND text = 'second mesage'),
                        'second message');
SELECT author, text FROM adk.event_log WHERE app_name = 'rw_app' AND session_id = 'edit' ORDER BY seq;
SELECT expect_error($$SELECT * FROM adk_edit_message('rw_app', 'u', 'edit', 'no-such-invocation', 'x')$$);
SELECT rw_ev('edit', 'agent-only', 'rw_root', 'an agent speaking on its own');
SELECT expect_error($$SELECT * FROM adk_edit_message('rw_app', 'u', 'edit', 'agent-only', 'x')$$);

-- 12. Errors: unknown session and invocation, a null invocation, a
-- running invocation.  (A rewound invocation may be named, as in ADK:
-- the rewind then reaches back to its first event.)
SELECT expect_error($$SELECT adk_rewind('rw_app', 'u', 'nope', 'i1')$$);
SELECT expect_error($$SELECT adk_rewind('rw_app', 'u', 'py1', 'nope')$$);
SELECT expect_error($$SELECT adk_rewind('rw_app', 'u', 'py1', NULL)$$);
INSERT INTO adk.invocations (invocation_id, app_name, user_id, session_id, agent, status, role_name)
VALUES ('e-running', 'rw_app', 'u', 'py2', 'rw_root', 'running', current_user);
SELECT expect_error($$SELECT adk_rewind('rw_app', 'u', 'py2', 'invocation1')$$);
DELETE FROM adk.invocations WHERE invocation_id = 'e-running';

-- 13. Tenancy: another role cannot rewind a session it may not see.
SELECT adk_define_app('rw_role', 'rw_root', tenancy => 'role');
CREATE ROLE rw_alice IN ROLE adk_user;
CREATE ROLE rw_mallory IN ROLE adk_user;
SET ROLE rw_alice;
SELECT count(*) FROM adk_run('rw_role', 'rw_alice', 'mine', 'hello');
SET ROLE rw_mallory;
SELECT expect_error($$SELECT adk_rewind('rw_role', 'rw_alice', 'mine',
                      (SELECT invocation_id FROM adk.events WHERE app_name = 'rw_role' AND session_id = 'mine' LIMIT 1))$$);
SELECT expect_error($$SELECT adk_rewind('rw_role', 'rw_alice', 'mine', 'e-guess')$$);
SET ROLE rw_alice;
SELECT adk_rewind('rw_role', 'rw_alice', 'mine',
                  (SELECT invocation_id FROM adk.events WHERE app_name = 'rw_role' AND session_id = 'mine' LIMIT 1)) ->> 'author' AS author;
RESET ROLE;
DROP OWNED BY rw_alice, rw_mallory;
DROP ROLE rw_alice, rw_mallory;
