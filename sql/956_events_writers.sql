-- Rows another writer INSERTs into adk.events itself: another ADK
-- runtime's own login role, granted the tables (docs/security.md,
-- "Tenancy").  The events trigger places each row in its session (seq,
-- time, the session's last_seq); the rewind trigger
-- (src/store/rewound_trigger.c, no WHEN clause) recomputes the session's
-- rewound events for a rewind event only -- an event whose
-- actions.rewind_before_invocation_id is there and not null -- and does
-- so as that writer: with its privileges and row-level security, as the
-- plpgsql function it replaced did.
SELECT adk_define_model('t956_m', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'test-key');
SELECT adk_define_agent('t956_agent', model => 't956_m');
SELECT adk_define_app('t956_app', 't956_agent', tenancy => 'role');
CREATE ROLE t956_js;
GRANT USAGE ON SCHEMA adk TO t956_js;
-- (the session bump updates the one partition of adk.sessions by name)
GRANT SELECT, INSERT, UPDATE ON adk.events, adk.sessions, adk.sessions_p0 TO t956_js;
GRANT EXECUTE ON FUNCTION adk._tenant_visible(text, text) TO t956_js;
SELECT adk_create_session('t956_app', 't956_js', s) IS NOT NULL AS created
  FROM unnest(ARRAY['plain', 'rewind']) s;
SELECT adk_create_session('t956_app', 'someone_else', 'theirs') IS NOT NULL AS created;
CREATE FUNCTION t956_insert(sid text, id text, inv text, actions jsonb) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO adk.events (id, app_name, user_id, session_id, invocation_id, event_data)
    VALUES (id, 't956_app', 't956_js', sid, inv,
            jsonb_build_object('author', 'user', 'invocation_id', inv,
                               'content', jsonb_build_object('role', 'user', 'parts',
                                   jsonb_build_array(jsonb_build_object('text', id))),
                               'actions', actions));
    RETURN 'inserted';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
GRANT EXECUTE ON FUNCTION t956_insert(text, text, text, jsonb) TO t956_js;
CREATE FUNCTION t956_session(sid text) RETURNS TABLE (last_seq bigint, rewound int8multirange)
LANGUAGE sql AS $$
    SELECT last_seq, rewound FROM adk.sessions WHERE app_name = 't956_app' AND id = sid $$;

SET ROLE t956_js;
-- plain events, and events that only look like rewinds: each placed, none
-- rewinds anything (the role has no EXECUTE on adk._rewound, so a rewind
-- computed for any of them would have failed)
SELECT t956_insert('plain', 'p1', 'i1', '{"state_delta": {}}');
SELECT t956_insert('plain', 'p2', 'i2', '{"rewind_before_invocation_id": null}');
SELECT t956_insert('plain', 'p3', 'i3', '[{"rewind_before_invocation_id": "i1"}]');
SELECT t956_insert('plain', 'p4', 'i4', '{"state_delta": {"rewind_before_invocation_id": "i1"}}');
SELECT t956_insert('plain', 'p5', 'i5', NULL);
-- row-level security: not into another user's session of a 'role' app
SELECT t956_insert('theirs', 'x1', 'i1', '{}');
RESET ROLE;
SELECT id, seq FROM adk.events WHERE app_name = 't956_app' AND session_id = 'plain' ORDER BY seq;
SELECT * FROM t956_session('plain');
SELECT count(*) AS theirs FROM adk.events WHERE app_name = 't956_app' AND session_id = 'theirs';

-- a rewind event: the session's rewound seqs are computed again, as the
-- writer -- which needs EXECUTE on adk._rewound for that
SET ROLE t956_js;
SELECT t956_insert('rewind', 'r1', 'i1', '{}');
SELECT t956_insert('rewind', 'r2', 'i2', '{}');
SELECT t956_insert('rewind', 'r3', 'i3', '{"rewind_before_invocation_id": "i2"}');
RESET ROLE;
SELECT * FROM t956_session('rewind');
GRANT EXECUTE ON FUNCTION adk._rewound(text, text, text, bigint) TO t956_js;
SET ROLE t956_js;
SELECT t956_insert('rewind', 'r3', 'i3', '{"rewind_before_invocation_id": "i2"}');
RESET ROLE;
SELECT * FROM t956_session('rewind');
SELECT seq, text FROM adk.event_log WHERE app_name = 't956_app' AND session_id = 'rewind' ORDER BY seq;
-- the table owner's rewind event (as ADK Python, connected as the owner,
-- writes one): rewinding the rewind brings r2 back
INSERT INTO adk.events (id, app_name, user_id, session_id, invocation_id, event_data)
VALUES ('r4', 't956_app', 't956_js', 'rewind', 'i4',
        '{"author": "user", "invocation_id": "i4", "actions": {"rewind_before_invocation_id": "i3"}}');
SELECT * FROM t956_session('rewind');
SELECT seq, text FROM adk.event_log WHERE app_name = 't956_app' AND session_id = 'rewind' ORDER BY seq;

DROP FUNCTION t956_insert(text, text, text, jsonb), t956_session(text);
REVOKE ALL ON FUNCTION adk._rewound(text, text, text, bigint), adk._tenant_visible(text, text) FROM t956_js;
REVOKE ALL ON adk.events, adk.sessions, adk.sessions_p0 FROM t956_js;
REVOKE ALL ON SCHEMA adk FROM t956_js;
DROP ROLE t956_js;
