-- Tenancy holes, attacked by two users of a 'role' app (th_alice and
-- th_bob), a gateway and an admin: one section per hole, each shown
-- closed.
SELECT adk_set_secret('th-key', 'sk-th', ARRAY['127.0.0.1']);
SELECT adk_define_model('th_model', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'th-key');
CREATE FUNCTION th_hold(item text) RETURNS jsonb LANGUAGE sql AS $$ SELECT jsonb_build_object('status', 'pending') $$;
SELECT adk_define_tool('th_hold(text)'::regprocedure, long_running => true);
CREATE FUNCTION th_echo(item text) RETURNS jsonb LANGUAGE sql AS $$ SELECT jsonb_build_object('echo', item) $$;
SELECT adk_define_tool('th_echo(text)'::regprocedure);
-- a tool that tries to write the app's state through another session of
-- the user it runs for
CREATE FUNCTION th_motto(motto text) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    PERFORM adk_append_event('th_role', current_user, 'side',
                             jsonb_build_object('author', 'user',
                                                'actions', jsonb_build_object('state_delta',
                                                    jsonb_build_object('app:motto', motto))));
    RETURN jsonb_build_object('written', true);
END $$;
SELECT adk_define_tool('th_motto(text)'::regprocedure);
SELECT adk_define_agent('th_agent', model => 'th_model', tools => ARRAY['th_hold', 'th_echo', 'th_motto'],
                        instruction => 'Motto: {app:motto?}');
SELECT adk_define_app('th_role', 'th_agent', tenancy => 'role',
                      compaction => '{"compaction_interval": 100, "summarizer_model": "th_model"}');
SELECT adk_define_app('th_claim', 'th_agent', tenancy => 'claim');
SELECT adk_define_app('th_shared', 'th_agent');

CREATE ROLE th_alice IN ROLE adk_user;
CREATE ROLE th_bob IN ROLE adk_user;
CREATE ROLE th_gw IN ROLE adk_gateway;
CREATE ROLE th_admin IN ROLE adk_admin;

-- ---------------------------------------------------------------------
-- 1. Ledger rows made on a session's behalf outside a run carry the
-- session's owner; a call of no session is its role's.
-- ---------------------------------------------------------------------
SET ROLE th_bob;
SELECT count(*) FROM adk_run('th_role', 'th_bob', 'b1', 'bob''s secret plan: sell at dawn');
SELECT adk_compact('th_role', 'th_bob', 'b1') > 0 AS compacted;
SELECT count(*) FROM adk_run('th_role', 'th_bob', 'b-hold', 'call th_hold({"item": "x"})');
SELECT adk_generate('th_model', '[{"role": "user", "parts": [{"text": "bob alone"}]}]') IS NOT NULL AS generated;
RESET ROLE;
SELECT app_name, user_id, role_name, invocation_id IS NULL AS outside_run, count(*)
  FROM adk.model_calls WHERE model = 'th_model'
 GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4;
-- a budget of bob's role alone
INSERT INTO adk.budgets (app_name, role_name, period, max_tokens) VALUES ('th_role', 'th_bob', 'day', 1000000);
SET ROLE th_alice;
-- alice reads nothing of bob's: not his history, not the summary, not his
-- role's budget, not his bare call
SELECT count(*) AS bobs_calls_alice_sees FROM adk.model_calls
 WHERE request::text LIKE '%sell at dawn%' OR request::text LIKE '%bob alone%';
SELECT count(*) AS rows_alice_sees FROM adk.model_calls WHERE model = 'th_model';
SELECT count(*) AS cost_rows_alice_sees FROM adk.costs WHERE model = 'th_model';
SELECT count(*) AS budgets_alice_sees FROM adk.budgets WHERE app_name = 'th_role';
SELECT count(*) AS budget_usage_alice_sees FROM adk.budget_usage WHERE app_name = 'th_role';
-- her own bare call is hers
SELECT adk_generate('th_model', '[{"role": "user", "parts": [{"text": "alice alone"}]}]') IS NOT NULL AS generated;
SELECT app_name, user_id, role_name FROM adk.model_calls WHERE model = 'th_model';
SET ROLE th_bob;
SELECT app_name, user_id, role_name, invocation_id IS NULL AS outside_run, count(*)
  FROM adk.model_calls WHERE model = 'th_model'
 GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4;
SELECT app_name, user_id, agent, model_calls FROM adk.costs WHERE model = 'th_model' ORDER BY 1, 2, 3;
SELECT count(*) AS budgets_bob_sees FROM adk.budgets WHERE app_name = 'th_role';
SET ROLE th_admin;
SELECT count(*) AS rows_admin_sees FROM adk.model_calls WHERE model = 'th_model';
RESET ROLE;

-- ---------------------------------------------------------------------
-- 3. adk_rebuild_run_states checks tenancy, and an unscoped call is an
-- admin's.
-- ---------------------------------------------------------------------
SET ROLE th_alice;
SELECT count(*) FROM adk_run('th_role', 'th_alice', 'a-hold', 'call th_hold({"item": "y"})');
-- bob's session, existing or not: the same refusal
SELECT expect_error($q$SELECT adk_rebuild_run_states('th_role', 'th_bob', 'b-hold')$q$);
SELECT expect_error($q$SELECT adk_rebuild_run_states('th_role', 'th_bob', 'no-such-session')$q$);
SELECT expect_error($q$SELECT adk_rebuild_run_states('th_role', 'th_bob')$q$);
SELECT expect_error($q$SELECT adk_rebuild_run_states()$q$);
-- her own, and the app's sessions she may see (hers)
SELECT adk_rebuild_run_states('th_role', 'th_alice', 'a-hold') AS own_session;
SELECT adk_rebuild_run_states('th_role') AS app_scope;
SET ROLE th_admin;
SELECT adk_rebuild_run_states('th_role') AS admin_app_scope;
SELECT adk_rebuild_run_states() >= 2 AS admin_unscoped;
RESET ROLE;

-- ---------------------------------------------------------------------
-- 4. "app:" state of a tenant-isolated app is written by admins only.
-- ---------------------------------------------------------------------
SET ROLE th_alice;
SELECT expect_error($q$SELECT adk_append_event('th_role', 'th_alice', 'a-hold',
    '{"author": "user", "actions": {"state_delta": {"app:motto": "alice rules"}}}')$q$);
SELECT expect_error($q$SELECT adk_create_session('th_role', 'th_alice', 'a-new', '{"app:motto": "alice rules"}')$q$);
SELECT expect_error($q$SELECT count(*) FROM adk_run('th_role', 'th_alice', 'a-run', 'hello',
                                                     state_delta => '{"app:motto": "alice rules"}')$q$);
SELECT expect_error($q$SELECT adk_submit('th_role', 'th_alice', 'a-run', 'later',
                                         state_delta => '{"app:motto": "alice rules"}')$q$);
-- user: and session keys are hers to write
SELECT (adk_append_event('th_role', 'th_alice', 'a-hold',
    '{"author": "user", "actions": {"state_delta": {"user:name": "Alice", "mood": "fine"}}}')
    -> 'actions' -> 'state_delta') AS own_delta;
-- a tool of hers tries: its response is the error, and the run goes on
SELECT count(*) FROM adk_create_session('th_role', 'th_alice', 'side');
SELECT count(*) FROM adk_run('th_role', 'th_alice', 'a-tool', 'call th_motto({"motto": "alice rules"})');
SELECT function_responses LIKE '%permission denied to write the app state of app%' AS tool_refused
  FROM adk.event_log WHERE app_name = 'th_role' AND session_id = 'a-tool' AND function_responses IS NOT NULL;
SELECT status FROM adk.invocations WHERE app_name = 'th_role' AND user_id = 'th_alice'
   AND invocation_id = (SELECT invocation_id FROM adk.events WHERE app_name = 'th_role'
                          AND session_id = 'a-tool' LIMIT 1);
SET ROLE th_bob;
SELECT adk_get_session('th_role', 'th_bob', 'b1') -> 'state' AS bobs_state;
-- an admin writes it, and everyone of the app reads it
SET ROLE th_admin;
SELECT adk_append_event('th_role', 'th_bob', 'b1',
    '{"author": "user", "actions": {"state_delta": {"app:motto": "be kind"}}}') IS NOT NULL AS admin_wrote;
SET ROLE th_bob;
SELECT adk_get_session('th_role', 'th_bob', 'b1') -> 'state' AS bobs_state;
-- a 'shared' app's users share everything, its app state included
SET ROLE th_alice;
SELECT adk_create_session('th_shared', 'th_alice', 'sh', '{"app:motto": "shared"}') -> 'state' AS shared_state;
RESET ROLE;
-- a gateway in a 'claim' app is a user too
BEGIN;
SET LOCAL ROLE th_gw;
SELECT adk_set_user('u1');
SELECT expect_error($q$SELECT adk_create_session('th_claim', 'u1', 'c0', '{"app:motto": "gw"}')$q$);
ROLLBACK;
SELECT app_name, state FROM adk.app_states WHERE app_name LIKE 'th\_%' ORDER BY 1;

-- ---------------------------------------------------------------------
-- 6. Smaller holes.
-- ---------------------------------------------------------------------
-- the stat views, for a user and an admin
SET ROLE th_bob;
SELECT model, calls FROM adk.stat_models WHERE model = 'th_model';
SELECT tool, calls FROM adk.stat_tools WHERE tool LIKE 'th\_%' ORDER BY 1;
SET ROLE th_admin;
SELECT model, calls FROM adk.stat_models WHERE model = 'th_model';
SELECT tool, calls FROM adk.stat_tools WHERE tool LIKE 'th\_%' ORDER BY 1;
RESET ROLE;

-- adk_set_user between the FETCHes of a cursor over a run: after the
-- first row (the model's call) the run is open, its second model call
-- not made yet
BEGIN;
SET LOCAL ROLE th_gw;
SELECT adk_set_user('u1');
DECLARE th_c NO SCROLL CURSOR FOR
  SELECT (r).event_data ->> 'author' AS author
    FROM (SELECT adk_run('th_claim', 'u1', 'c1', 'call th_echo({"item": "z"})') AS r) s;
FETCH 1 FROM th_c;
SELECT expect_error($q$SELECT adk_set_user('u2')$q$);
FETCH ALL FROM th_c;
CLOSE th_c;
SELECT adk_set_user('u2');
SELECT adk_asserted_user();
COMMIT;

-- adk._job_trigger made by hand is checked as adk_create_trigger checks it
CREATE TABLE th_orders (uid text, sid text, item text);
SELECT expect_error($q$CREATE TRIGGER th_t1 AFTER INSERT ON th_orders FOR EACH ROW
    EXECUTE FUNCTION adk._job_trigger('no_such_app', 'order {{item}}', 'uid', 'sid')$q$);
SELECT expect_error($q$CREATE TRIGGER th_t2 AFTER INSERT ON th_orders FOR EACH ROW
    EXECUTE FUNCTION adk._job_trigger('th_shared', 'order {{no_such_column}}', 'uid', 'sid')$q$);
SELECT expect_error($q$CREATE TRIGGER th_t3 AFTER INSERT ON th_orders FOR EACH ROW
    EXECUTE FUNCTION adk._job_trigger('th_shared', 'order {{item}}', 'no_such_column', 'sid')$q$);
SELECT expect_error($q$CREATE TRIGGER th_t4 AFTER INSERT ON th_orders FOR EACH ROW
    EXECUTE FUNCTION adk._job_trigger('th_shared', 'order {{item}}')$q$);
CREATE TRIGGER th_t AFTER INSERT ON th_orders FOR EACH ROW
    EXECUTE FUNCTION adk._job_trigger('th_shared', 'order {{item}}', 'uid', 'sid');
SELECT tgname FROM pg_trigger WHERE tgrelid = 'th_orders'::regclass;
DROP TABLE th_orders;
-- the check fires for every CREATE TRIGGER: a role with no grant on schema
-- adk makes a trigger of its own as before
CREATE ROLE th_plain;
SET ROLE th_plain;
CREATE TEMP TABLE th_plain_t (a int);
CREATE TRIGGER th_plain_trg BEFORE UPDATE ON th_plain_t FOR EACH ROW
    EXECUTE FUNCTION suppress_redundant_updates_trigger();
RESET ROLE;
DROP TABLE th_plain_t;
DROP ROLE th_plain;

-- adk_function_response needs a call id and a tool name
SELECT expect_error($q$SELECT adk_function_response(NULL, 'th_hold', '{"ok": true}')$q$);
SELECT expect_error($q$SELECT adk_function_response('call_1', NULL, '{"ok": true}')$q$);
SELECT adk_function_response('call_1', 'th_hold', NULL);

-- clean up
DELETE FROM adk.jobs WHERE app_name LIKE 'th\_%';
DELETE FROM adk.compactions WHERE app_name LIKE 'th\_%';
DELETE FROM adk.invocations WHERE app_name LIKE 'th\_%';
DELETE FROM adk.sessions WHERE app_name LIKE 'th\_%';
DELETE FROM adk.user_states WHERE app_name LIKE 'th\_%';
DELETE FROM adk.app_states WHERE app_name LIKE 'th\_%';
DELETE FROM adk.model_calls WHERE model = 'th_model';
DELETE FROM adk.apps WHERE name LIKE 'th\_%';
DROP ROLE th_alice, th_bob, th_gw, th_admin;
