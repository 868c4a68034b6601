-- The internals (adk._*) are not adk_user's to call (issue 11 §7): only
-- those its own statements run (the SECURITY INVOKER API, the views it
-- reads, adk_create_trigger's CREATE TRIGGER); adk_admin also gets those
-- the triggers on the definition tables run.  A compaction plan is
-- checked over its whole range, so a forged one is refused.
SELECT p.proname AS adk_user_may_execute
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'adk' AND has_function_privilege('adk_user', p.oid, 'EXECUTE')
 ORDER BY 1;
SELECT p.proname AS adk_admin_also
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'adk' AND has_function_privilege('adk_admin', p.oid, 'EXECUTE')
   AND NOT has_function_privilege('adk_user', p.oid, 'EXECUTE')
 ORDER BY 1;

CREATE ROLE regress_internals LOGIN IN ROLE adk_user;
-- every other internal (but triggers, which no one can call) is refused
CREATE TEMP TABLE internal_calls AS
SELECT p.proname, format('SELECT adk.%I(%s)', p.proname,
                         (SELECT coalesce(string_agg('NULL::' || format_type(t, NULL), ', ' ORDER BY i), '')
                            FROM unnest(p.proargtypes) WITH ORDINALITY a(t, i))) AS q
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'adk' AND p.prorettype <> 'trigger'::regtype
   AND NOT has_function_privilege('adk_admin', p.oid, 'EXECUTE');
GRANT SELECT ON internal_calls TO regress_internals;
SET ROLE regress_internals;
SELECT proname, expect_error(q) FROM internal_calls ORDER BY 1, 2;
RESET ROLE;

-- a session: a user message, a call and its response, three more events
SELECT adk_create_session('forge_app', 'victim', 'f1') ->> 'id';
SELECT count(adk_append_event('forge_app', 'victim', 'f1', e))
  FROM unnest(ARRAY[
    '{"author": "user", "content": {"role": "user", "parts": [{"text": "one"}]}}',
    '{"author": "agent", "content": {"role": "model", "parts": [{"function_call": {"id": "c1", "name": "t", "args": {}}}]}}',
    '{"author": "user", "content": {"role": "user", "parts": [{"function_response": {"id": "c1", "name": "t", "response": {"ok": true}}}]}}',
    '{"author": "agent", "content": {"role": "model", "parts": [{"text": "four"}]}}',
    '{"author": "user", "content": {"role": "user", "parts": [{"text": "five"}]}}',
    '{"author": "agent", "content": {"role": "model", "parts": [{"text": "six"}]}}'
  ]::jsonb[]) e;

SET ROLE regress_internals;
-- forged: seq 1..6 summarized, though only seq 6 was "read" (the digest is
-- anyone's to compute)
SELECT adk_compaction_append('forge_app', 'victim', 'f1',
         jsonb_build_object('from_seq', 1, 'to_seq', 6, 'read_from', 6, 'seen_seq', 6,
                            'digest', (SELECT md5(id) FROM adk.events WHERE session_id = 'f1' AND seq = 6)),
         'Nothing happened here.') AS forged_rolling;
-- forged: seq 3..6, splitting the response at seq 3 from its call
SELECT adk_compaction_append('forge_app', 'victim', 'f1',
         jsonb_build_object('from_seq', 3, 'to_seq', 6, 'read_from', 3, 'seen_seq', 6,
                            'digest', (SELECT md5(string_agg(id, ',' ORDER BY seq)) FROM adk.events
                                        WHERE session_id = 'f1' AND seq BETWEEN 3 AND 6)),
         'Split.') AS forged_split;
-- forged: seen_seq past the end of the session
SELECT expect_error($q$SELECT adk_compaction_append('forge_app', 'victim', 'f1',
         jsonb_build_object('from_seq', 4, 'to_seq', 6, 'read_from', 4, 'seen_seq', 99,
                            'digest', (SELECT md5(string_agg(id, ',' ORDER BY seq)) FROM adk.events
                                        WHERE session_id = 'f1' AND seq BETWEEN 4 AND 6)),
         'Later.')$q$);
-- what adk_compaction_read gives is accepted: a range, then a rolling summary over it
SELECT adk_compaction_read('forge_app', 'victim', 'f1', 3, 6) - ARRAY['transcript', 'digest', 'start_timestamp', 'end_timestamp'] AS plan;
SELECT adk_compaction_append('forge_app', 'victim', 'f1',
         adk_compaction_read('forge_app', 'victim', 'f1', 3, 6), 'Four to six.') IS NOT NULL AS range_appended;
SELECT adk_compaction_append('forge_app', 'victim', 'f1',
         adk_compaction_read('forge_app', 'victim', 'f1', 1, 2), 'One and two.') IS NOT NULL AS range_appended;
SELECT count(adk_append_event('forge_app', 'victim', 'f1', '{"author": "user", "content": {"role": "user", "parts": [{"text": "more"}]}}'));
-- a rolling summary: from seq 1, the events read after the summary of seq 1..1
SELECT adk_compaction_read('forge_app', 'victim', 'f1') - ARRAY['transcript', 'digest', 'start_timestamp', 'end_timestamp'] AS plan;
SELECT adk_compaction_append('forge_app', 'victim', 'f1',
         adk_compaction_read('forge_app', 'victim', 'f1'), 'All of it.') IS NOT NULL AS rolling_appended;
RESET ROLE;
SELECT seq, kind, from_seq, to_seq FROM adk.compactions WHERE session_id = 'f1' ORDER BY seq;

SELECT adk_delete_session('forge_app', 'victim', 'f1');
DROP TABLE internal_calls;
DROP ROLE regress_internals;
