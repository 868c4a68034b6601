-- The caller's search_path never reaches the extension's own SQL (issue
-- 11 §1): a member of adk_user with a schema of her own shadows the
-- operators and functions the extension's SQL uses, then calls every
-- public function with that schema first in search_path.  Each shadow
-- records (and tries to make her superuser) when it runs as any role but
-- hers: it must never do so.  Tools still run as her, with her own
-- search_path.  (Workers and trigger-fired jobs: test/t/007.)
-- every SQL and PL/pgSQL function of the extension (SECURITY DEFINER or
-- not) sets search_path itself
SELECT p.oid::regprocedure AS unpinned, p.prosecdef
  FROM pg_proc p
  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension x ON x.oid = d.refobjid AND x.extname = 'adk_runner'
  JOIN pg_language l ON l.oid = p.prolang
 WHERE (l.lanname IN ('sql', 'plpgsql') OR p.prosecdef)
   AND NOT coalesce('search_path=pg_catalog, pg_temp' = ANY (p.proconfig), false);
CREATE ROLE regress_alice LOGIN IN ROLE adk_user;
CREATE SCHEMA regress_alice AUTHORIZATION regress_alice;
CREATE TABLE public.shadow_log (what text, who text, context text);
GRANT INSERT ON public.shadow_log TO PUBLIC;

SELECT adk_set_secret('sp-key', 'sk-sp-0123456789', ARRAY['127.0.0.1']);
SELECT adk_define_model('sp_model', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'sp-key');
CREATE FUNCTION public.sp_whoami(note text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_catalog.jsonb_build_object('user', current_user::text,
                                       'path', pg_catalog.current_setting('search_path')) $$;
GRANT EXECUTE ON FUNCTION public.sp_whoami(text) TO regress_alice;
SELECT adk_define_tool('public.sp_whoami(text)'::regprocedure, description => 'Who runs me.');
CREATE FUNCTION public.sp_pay(amount integer) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_catalog.jsonb_build_object('paid', amount) $$;
GRANT EXECUTE ON FUNCTION public.sp_pay(integer) TO regress_alice;
SELECT adk_define_tool('public.sp_pay(integer)'::regprocedure, description => 'Pay.',
                       require_confirmation => true);
-- a plugin: notes who runs it, with which search_path
CREATE TABLE public.plugin_seen (who text, path text);
GRANT INSERT ON public.plugin_seen TO PUBLIC;
CREATE FUNCTION public.sp_plugin(ctx jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.plugin_seen VALUES (current_user, pg_catalog.current_setting('search_path'));
  RETURN NULL;
END $$;
GRANT EXECUTE ON FUNCTION public.sp_plugin(jsonb) TO regress_alice;
SELECT adk_define_plugin('sp_plug', on_event => 'public.sp_plugin(jsonb)');
SELECT adk_define_agent('sp_agent', model => 'sp_model', instruction => 'Be brief.',
                        tools => ARRAY['sp_whoami', 'sp_pay']);
SELECT adk_define_app('sp_app', 'sp_agent', compaction => '{"compaction_interval": 2}',
                      plugins => ARRAY['sp_plug'], tenancy => 'role');

SET ROLE regress_alice;
-- the shadows: each records a run as another role, and tries to escalate
-- (test/t/007 runs the same, from here to "shadows end")
CREATE FUNCTION regress_alice.hit(what text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  stack text;
BEGIN
  IF current_user OPERATOR(pg_catalog.<>) 'regress_alice'::pg_catalog.name THEN
    RAISE WARNING 'shadow % ran as %', what, current_user;
    GET DIAGNOSTICS stack = PG_CONTEXT;
    INSERT INTO public.shadow_log VALUES (what, current_user, stack);
    BEGIN
      EXECUTE 'ALTER ROLE regress_alice SUPERUSER';
    EXCEPTION WHEN OTHERS THEN NULL;
    END;
  END IF;
END $$;
DO $shadows$
DECLARE
  o record;
  f record;
  i integer := 0;
BEGIN
  -- operators: left type, operator, right type, result type
  FOR o IN SELECT * FROM (VALUES
      ('jsonb', '->>', 'text', 'text'), ('jsonb', '->>', 'integer', 'text'),
      ('jsonb', '->', 'text', 'jsonb'), ('jsonb', '->', 'integer', 'jsonb'),
      ('jsonb', '#>>', 'text[]', 'text'), ('jsonb', '#>', 'text[]', 'jsonb'),
      ('jsonb', '?', 'text', 'boolean'), ('jsonb', '?|', 'text[]', 'boolean'),
      ('jsonb', '?&', 'text[]', 'boolean'), ('jsonb', '@>', 'jsonb', 'boolean'),
      ('jsonb', '||', 'jsonb', 'jsonb'), ('text', '||', 'text', 'text'),
      ('jsonb', '-', 'text', 'jsonb'),
      ('text', '=', 'text', 'boolean'), ('text', '<>', 'text', 'boolean'),
      ('jsonb', '=', 'jsonb', 'boolean'),
      ('bigint', '=', 'bigint', 'boolean'), ('integer', '=', 'integer', 'boolean'),
      ('bigint', '=', 'integer', 'boolean'), ('integer', '=', 'bigint', 'boolean'),
      ('bigint', '<', 'bigint', 'boolean'), ('bigint', '<=', 'bigint', 'boolean'),
      ('bigint', '>', 'bigint', 'boolean'), ('bigint', '>=', 'bigint', 'boolean'),
      ('bigint', '<>', 'bigint', 'boolean'),
      ('integer', '<', 'integer', 'boolean'), ('integer', '>', 'integer', 'boolean'),
      ('bigint', '+', 'bigint', 'bigint'), ('bigint', '-', 'bigint', 'bigint'),
      ('bigint', '+', 'integer', 'bigint'), ('bigint', '-', 'integer', 'bigint'),
      ('integer', '+', 'integer', 'integer'), ('integer', '-', 'integer', 'integer'),
      ('text', '~~', 'text', 'boolean'), ('text', '~', 'text', 'boolean'),
      ('timestamptz', '-', 'timestamptz', 'interval'),
      ('timestamptz', '<', 'timestamptz', 'boolean')
    ) v(l, op, r, res)
  LOOP
    i := i + 1;
    EXECUTE format('CREATE FUNCTION regress_alice.op_%s(a %s, b %s) RETURNS %s LANGUAGE plpgsql AS %L',
                   i, o.l, o.r, o.res,
                   format('BEGIN PERFORM regress_alice.hit(%L); RETURN a OPERATOR(pg_catalog.%s) b; END',
                          o.l || ' ' || o.op || ' ' || o.r, o.op));
    EXECUTE format('CREATE OPERATOR regress_alice.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = regress_alice.op_%s)',
                   o.op, o.l, o.r, i);
  END LOOP;
  -- functions: name, argument types, result type
  FOR f IN SELECT * FROM (VALUES
      ('now', '', 'timestamptz'), ('clock_timestamp', '', 'timestamptz'),
      ('statement_timestamp', '', 'timestamptz'), ('gen_random_uuid', '', 'uuid'),
      ('jsonb_build_object', 'text, text', 'jsonb'), ('jsonb_build_object', 'text, jsonb', 'jsonb'),
      ('jsonb_build_object', 'text, bigint', 'jsonb'), ('jsonb_build_object', 'text, integer', 'jsonb'),
      ('jsonb_build_object', 'text, text, text, text', 'jsonb'),
      ('jsonb_build_object', 'text, jsonb, text, jsonb', 'jsonb'),
      ('jsonb_build_array', 'jsonb', 'jsonb'),
      ('jsonb_typeof', 'jsonb', 'text'), ('jsonb_array_length', 'jsonb', 'integer'),
      ('jsonb_set', 'jsonb, text[], jsonb', 'jsonb'), ('jsonb_strip_nulls', 'jsonb', 'jsonb'),
      ('to_jsonb', 'text', 'jsonb'), ('to_jsonb', 'bigint', 'jsonb'), ('to_jsonb', 'integer', 'jsonb'),
      ('length', 'text', 'integer'), ('lower', 'text', 'text'), ('upper', 'text', 'text'),
      ('md5', 'text', 'text'), ('left', 'text, integer', 'text'), ('substr', 'text, integer, integer', 'text'),
      ('replace', 'text, text, text', 'text'), ('position', 'text, text', 'integer'),
      ('greatest', 'bigint, bigint', 'bigint'), ('current_setting', 'text', 'text'),
      ('pg_backend_pid', '', 'integer'), ('pg_notify', 'text, text', 'void')
    ) v(name, args, res)
  LOOP
    i := i + 1;
    EXECUTE format('CREATE FUNCTION regress_alice.%I(%s) RETURNS %s LANGUAGE plpgsql AS %L',
                   f.name,
                   (SELECT coalesce(string_agg(format('a%s %s', n, t), ', '), '')
                      FROM unnest(string_to_array(nullif(f.args, ''), ', ')) WITH ORDINALITY u(t, n)),
                   f.res,
                   format('BEGIN PERFORM regress_alice.hit(%L); %s pg_catalog.%I(%s); END',
                          f.name || '(' || f.args || ')',
                          CASE WHEN f.res = 'void' THEN 'PERFORM' ELSE 'RETURN' END, f.name,
                          (SELECT coalesce(string_agg(format('a%s', n), ', '), '')
                             FROM unnest(string_to_array(nullif(f.args, ''), ', ')) WITH ORDINALITY u(t, n))));
  END LOOP;
  -- set-returning functions and aggregates
  CREATE FUNCTION regress_alice.jsonb_array_elements(a jsonb) RETURNS SETOF jsonb LANGUAGE plpgsql AS $f$
  BEGIN PERFORM regress_alice.hit('jsonb_array_elements'); RETURN QUERY SELECT pg_catalog.jsonb_array_elements(a); END $f$;
  CREATE FUNCTION regress_alice.jsonb_each(a jsonb, OUT key text, OUT value jsonb) RETURNS SETOF record LANGUAGE plpgsql AS $f$
  BEGIN PERFORM regress_alice.hit('jsonb_each'); RETURN QUERY SELECT * FROM pg_catalog.jsonb_each(a); END $f$;
  CREATE FUNCTION regress_alice.max_step(s bigint, v bigint) RETURNS bigint LANGUAGE plpgsql AS $f$
  BEGIN PERFORM regress_alice.hit('max/min/sum(bigint)');
        RETURN CASE WHEN s IS NULL OR v OPERATOR(pg_catalog.>) s THEN v ELSE s END; END $f$;
  CREATE AGGREGATE regress_alice.max(bigint) (SFUNC = regress_alice.max_step, STYPE = bigint);
  CREATE AGGREGATE regress_alice.min(bigint) (SFUNC = regress_alice.max_step, STYPE = bigint);
  CREATE AGGREGATE regress_alice.sum(bigint) (SFUNC = regress_alice.max_step, STYPE = bigint);
  CREATE FUNCTION regress_alice.max_step(s integer, v integer) RETURNS integer LANGUAGE plpgsql AS $f$
  BEGIN PERFORM regress_alice.hit('max(integer)');
        RETURN CASE WHEN s IS NULL OR v OPERATOR(pg_catalog.>) s THEN v ELSE s END; END $f$;
  CREATE AGGREGATE regress_alice.max(integer) (SFUNC = regress_alice.max_step, STYPE = integer);
  CREATE FUNCTION regress_alice.count_step(s bigint) RETURNS bigint LANGUAGE plpgsql AS $f$
  BEGIN PERFORM regress_alice.hit('count(*)'); RETURN s OPERATOR(pg_catalog.+) 1; END $f$;
  CREATE AGGREGATE regress_alice.count(*) (SFUNC = regress_alice.count_step, STYPE = bigint, INITCOND = '0');
  CREATE FUNCTION regress_alice.agg_step(s jsonb, v jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
  BEGIN PERFORM regress_alice.hit('jsonb_agg(jsonb)');
        RETURN pg_catalog.jsonb_insert(s, '{-1}', v, true); END $f$;
  CREATE AGGREGATE regress_alice.jsonb_agg(jsonb) (SFUNC = regress_alice.agg_step, STYPE = jsonb, INITCOND = '[]');
  CREATE FUNCTION regress_alice.obj_step(s jsonb, k text, v jsonb) RETURNS jsonb LANGUAGE plpgsql AS $f$
  BEGIN PERFORM regress_alice.hit('jsonb_object_agg(text, jsonb)');
        RETURN s OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object(k, v); END $f$;
  CREATE AGGREGATE regress_alice.jsonb_object_agg(text, jsonb) (SFUNC = regress_alice.obj_step, STYPE = jsonb, INITCOND = '{}');
END
$shadows$;
-- shadows end
SELECT count(*) > 60 AS shadows FROM pg_catalog.pg_proc WHERE pronamespace = 'regress_alice'::regnamespace;

-- every public function, with her schema first
SET search_path = regress_alice, public, pg_catalog;
SELECT adk_create_session('sp_app', 'regress_alice', 's1', '{"k": 1}') ->> 'id' AS created;
SELECT adk_append_event('sp_app', 'regress_alice', 's1',
       '{"author": "user", "content": {"role": "user", "parts": [{"text": "hello"}]}, "actions": {"state_delta": {"n": 2, "user:u": 3}}}') ->> 'author' AS appended;
-- "app:" keys of a 'role' app are an admin's to write (the "user:" merge
-- above is the same code as theirs)
SELECT expect_error($q$SELECT adk_append_event('sp_app', 'regress_alice', 's1',
       '{"author": "user", "actions": {"state_delta": {"app:a": 4}}}')$q$);
SELECT adk_get_session('sp_app', 'regress_alice', 's1') -> 'state' AS state;
SELECT count(*) AS listed FROM adk_list_sessions('sp_app', 'regress_alice');
SELECT count(*) AS run_rows FROM adk_run('sp_app', 'regress_alice', 's1', 'call sp_whoami({"note": "x"})');
SELECT count(*) AS run_rows FROM adk_run('sp_app', 'regress_alice', 's1', 'What is new?');
SELECT count(*) AS run_rows FROM adk_run('sp_app', 'regress_alice', 's1',
       adk_function_response('call-x', 'sp_whoami', '{"ok": true}'));
-- a tool that needs confirmation: the run waits, the answer runs the tool
SELECT count(*) AS run_rows FROM adk_run('sp_app', 'regress_alice', 's1', 'call sp_pay({"amount": 5})');
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE session_id = 's1';
SELECT count(*) AS run_rows FROM adk_run('sp_app', 'regress_alice', 's1',
       adk_function_response((SELECT call_id FROM adk.pending_interrupts WHERE session_id = 's1'),
                             'adk_request_confirmation', '{"confirmed": true}'));
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE session_id = 's1';
-- streamed
SELECT count(*) > 1 AS streamed FROM adk_run('sp_app', 'regress_alice', 's1', 'Stream it.', NULL,
                                             '{"stream": true}');
SELECT adk_compact('sp_app', 'regress_alice', 's1') IS NOT NULL AS compacted;
SELECT adk_compaction_read('sp_app', 'regress_alice', 's1') IS NOT NULL AS read_plan;
SELECT adk_compaction_append('sp_app', 'regress_alice', 's1',
       adk_compaction_read('sp_app', 'regress_alice', 's1', 1, 2), 'a summary') IS NOT NULL AS appended_summary;
SELECT adk_prompt('sp_app', 'regress_alice', 's1') ? 'messages' AS prompt;
SELECT adk_generate('sp_model', '[{"role": "user", "parts": [{"text": "hi"}]}]') ? 'content' AS generated;
SELECT count(*) AS chunks FROM adk_generate_stream('sp_model', '[{"role": "user", "parts": [{"text": "hi"}]}]');
SELECT adk_rebuild_run_states('sp_app', 'regress_alice', 's1') >= 0 AS rebuilt;
SELECT adk_tool_schema('public.sp_whoami(text)'::regprocedure) ? 'properties' AS tool_schema;
-- an error while the owner's privileges are in effect restores her role
-- and her search_path, in a subtransaction as at top level
SELECT expect_error($q$SELECT adk_append_event('sp_app', 'regress_alice', 'nope', '{"author": "user"}')$q$);
SELECT current_user AS role_after_error, pg_catalog.current_setting('search_path') AS path_after_error;
BEGIN;
SAVEPOINT sp;
SELECT adk_compact('sp_app', 'regress_alice', 'nope');
ROLLBACK TO SAVEPOINT sp;
SELECT current_user AS role_after_error, pg_catalog.current_setting('search_path') AS path_after_error;
COMMIT;
SELECT adk_compact('sp_app', 'regress_alice', 'nope');
SELECT current_user AS role_after_error, pg_catalog.current_setting('search_path') AS path_after_error;
-- adk_submit, adk_wait, adk_cancel, adk_interrupt and adk_create_trigger
-- need the workers: test/t/007_search_path_worker.pl
SELECT adk_create_session('sp_app', 'regress_alice', 's2') ->> 'id' AS created;
SELECT adk_delete_session('sp_app', 'regress_alice', 's2') AS deleted;
RESET search_path;
RESET ROLE;

-- no shadow ran as another role, and she did not become superuser
SELECT what, who, context FROM public.shadow_log ORDER BY 1, 2;
SELECT rolsuper AS alice_superuser FROM pg_roles WHERE rolname = 'regress_alice';
-- the calls above did their work: the tool ran as her, with her search_path
SELECT e.event_data #> '{content,parts,0,function_response,response}' AS tool_saw
  FROM adk.events e
 WHERE e.app_name = 'sp_app' AND e.session_id = 's1'
   AND e.event_data #> '{content,parts,0,function_response,name}' = '"sp_whoami"'
   AND e.event_data #>> '{content,parts,0,function_response,id}' <> 'call-x';
SELECT count(*) AS compactions FROM adk.compactions WHERE app_name = 'sp_app' AND session_id = 's1';
SELECT e.event_data #> '{content,parts,0,function_response,response}' AS paid
  FROM adk.events e
 WHERE e.app_name = 'sp_app' AND e.session_id = 's1'
   AND e.event_data #>> '{content,parts,0,function_response,name}' = 'sp_pay'
 ORDER BY e.seq;
-- the plugin, too, ran as her with her search_path
SELECT DISTINCT who, path FROM public.plugin_seen;

-- clean up
SELECT adk_delete_session('sp_app', 'regress_alice', 's1');
DELETE FROM adk.model_calls WHERE invocation_id IS NULL OR invocation_id IN (SELECT invocation_id FROM adk.invocations WHERE app_name = 'sp_app');
DELETE FROM adk.invocations WHERE app_name = 'sp_app';
DELETE FROM adk.apps WHERE name = 'sp_app';
DELETE FROM adk.plugins WHERE name = 'sp_plug';
DELETE FROM adk.agents WHERE name = 'sp_agent';
DELETE FROM adk.tools WHERE name IN ('sp_whoami', 'sp_pay');
DELETE FROM adk.models WHERE name = 'sp_model';
DELETE FROM adk.secrets WHERE name = 'sp-key';
DROP FUNCTION public.sp_whoami(text), public.sp_pay(integer), public.sp_plugin(jsonb);
DROP TABLE public.plugin_seen;
DROP TABLE public.shadow_log;
SET client_min_messages = warning;
DROP SCHEMA regress_alice CASCADE;
RESET client_min_messages;
DROP ROLE regress_alice;
