-- The internals (adk._*) are not adk_user's to call: only
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
-- (NULLs from subqueries: a strict function of constant NULLs would be
-- folded away before the privilege check)
CREATE TEMP TABLE internal_calls AS
SELECT p.proname, format('SELECT adk.%I(%s)', p.proname,
                         (SELECT coalesce(string_agg('(SELECT NULL::' || format_type(t, NULL) || ')', ', ' ORDER BY i), '')
                            FROM unnest(p.proargtypes) WITH ORDINALITY a(t, i))) AS q
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'adk' AND p.prorettype <> 'trigger'::regtype
   AND NOT has_function_privilege('adk_admin', p.oid, 'EXECUTE');
GRANT SELECT ON internal_calls TO regress_internals;
SET ROLE regress_internals;
CREATE TEMP TABLE internal_refused AS SELECT proname, expect_error(q) AS e FROM internal_calls;
SELECT count(*) >= 20 AS refused_internals FROM internal_refused;
SELECT proname, e AS not_refused FROM internal_refused WHERE e NOT LIKE '42501: permission denied for function %' ORDER BY 1;
RESET ROLE;

-- her own session of an app with tenancy 'role' (so she may append
-- compactions): a user message, a call and its response, three more events
SELECT adk_set_secret('ig-key', 'sk-ig-0123456789', ARRAY['127.0.0.1']);
SELECT adk_define_model('forge_model', 'openai', 'http://127.0.0.1:1/v1', 'gpt-test', api_key_secret => 'ig-key');
SELECT adk_define_agent('forge_agent', model => 'forge_model');
SELECT adk_define_app('forge_app', 'forge_agent', tenancy => 'role');
SELECT adk_create_session('forge_app', 'regress_internals', 'f1') ->> 'id';
SELECT count(adk_append_event('forge_app', 'regress_internals', 'f1', e))
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
SELECT adk_compaction_append('forge_app', 'regress_internals', 'f1',
         jsonb_build_object('from_seq', 1, 'to_seq', 6, 'read_from', 6, 'seen_seq', 6,
                            'digest', (SELECT md5(id) FROM adk.events WHERE session_id = 'f1' AND seq = 6)),
         'Nothing happened here.') AS forged_rolling;
-- forged: seq 3..6, splitting the response at seq 3 from its call
SELECT adk_compaction_append('forge_app', 'regress_internals', 'f1',
         jsonb_build_object('from_seq', 3, 'to_seq', 6, 'read_from', 3, 'seen_seq', 6,
                            'digest', (SELECT md5(string_agg(id, ',' ORDER BY seq)) FROM adk.events
                                        WHERE session_id = 'f1' AND seq BETWEEN 3 AND 6)),
         'Split.') AS forged_split;
-- forged: seen_seq past the end of the session
SELECT expect_error($q$SELECT adk_compaction_append('forge_app', 'regress_internals', 'f1',
         jsonb_build_object('from_seq', 4, 'to_seq', 6, 'read_from', 4, 'seen_seq', 99,
                            'digest', (SELECT md5(string_agg(id, ',' ORDER BY seq)) FROM adk.events
                                        WHERE session_id = 'f1' AND seq BETWEEN 4 AND 6)),
         'Later.')$q$);
-- what adk_compaction_read gives is accepted: a range, then a rolling summary over it
SELECT adk_compaction_read('forge_app', 'regress_internals', 'f1', 3, 6) - ARRAY['transcript', 'digest', 'start_timestamp', 'end_timestamp'] AS plan;
SELECT adk_compaction_append('forge_app', 'regress_internals', 'f1',
         adk_compaction_read('forge_app', 'regress_internals', 'f1', 3, 6), 'Four to six.') IS NOT NULL AS range_appended;
SELECT adk_compaction_append('forge_app', 'regress_internals', 'f1',
         adk_compaction_read('forge_app', 'regress_internals', 'f1', 1, 2), 'One and two.') IS NOT NULL AS range_appended;
SELECT count(adk_append_event('forge_app', 'regress_internals', 'f1', '{"author": "user", "content": {"role": "user", "parts": [{"text": "more"}]}}'));
-- a rolling summary: from seq 1, the events read after the summary of seq 1..1
SELECT adk_compaction_read('forge_app', 'regress_internals', 'f1') - ARRAY['transcript', 'digest', 'start_timestamp', 'end_timestamp'] AS plan;
SELECT adk_compaction_append('forge_app', 'regress_internals', 'f1',
         adk_compaction_read('forge_app', 'regress_internals', 'f1'), 'All of it.') IS NOT NULL AS rolling_appended;
RESET ROLE;
SELECT seq, kind, from_seq, to_seq FROM adk.compactions WHERE session_id = 'f1' ORDER BY seq;

-- adk_admin members (not superusers) still define everything: the
-- triggers on the definition tables run the internals granted to them
CREATE ROLE regress_internals_admin IN ROLE adk_admin;
CREATE FUNCTION public.ig_tool(x text) RETURNS text LANGUAGE sql AS $$ SELECT x $$;
CREATE FUNCTION public.ig_plugin(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT NULL::jsonb $$;
SET ROLE regress_internals_admin;
SELECT adk_set_secret('ig-key2', 'sk-ig-0123456789', ARRAY['127.0.0.1']);
SELECT adk_define_model('ig_model', 'openai', 'http://127.0.0.1:1/v1', 'gpt-test', api_key_secret => 'ig-key2',
                        options => '{"timeout_ms": 5000, "retries": 1, "headers": {"X-Team": "a"}}');
SELECT adk_define_tool('public.ig_tool(text)'::regprocedure, description => 'Echo.');
SELECT adk_define_agent('ig_inner', model => 'ig_model', tools => ARRAY['ig_tool']);
SELECT adk_define_agent('ig_root', kind => 'sequential', sub_agents => ARRAY['ig_inner']);
SELECT adk_define_plugin('ig_plug', on_event => 'public.ig_plugin(jsonb)');
SELECT adk_define_app('ig_app', 'ig_root', plugins => ARRAY['ig_plug'],
                      compaction => '{"compaction_interval": 2, "summarizer_model": "ig_model"}');
SELECT expect_error($q$SELECT adk_define_agent('ig_inner', model => 'ig_model', sub_agents => ARRAY['ig_root'])$q$);
DELETE FROM adk.apps WHERE name = 'ig_app';
DELETE FROM adk.plugins WHERE name = 'ig_plug';
DELETE FROM adk.agents WHERE name IN ('ig_root', 'ig_inner');
DELETE FROM adk.tools WHERE name = 'ig_tool';
DELETE FROM adk.models WHERE name = 'ig_model';
DELETE FROM adk.secrets WHERE name = 'ig-key2';
RESET ROLE;
DROP FUNCTION public.ig_tool(text), public.ig_plugin(jsonb);
DROP ROLE regress_internals_admin;

SELECT adk_delete_session('forge_app', 'regress_internals', 'f1');
DELETE FROM adk.apps WHERE name = 'forge_app';
DELETE FROM adk.agents WHERE name = 'forge_agent';
DELETE FROM adk.models WHERE name = 'forge_model';
DELETE FROM adk.secrets WHERE name = 'ig-key';
DROP TABLE internal_calls, internal_refused;
DROP ROLE regress_internals;
