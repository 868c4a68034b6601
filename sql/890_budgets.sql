-- Token budgets (adk.budgets, adk.budget_usage) and costs (adk.models.price,
-- adk.costs).
SELECT adk_set_secret('bud-key', 'sk-bud', ARRAY['127.0.0.1']);
SELECT adk_define_model('bud_model', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'bud-key');
CREATE FUNCTION bud_echo(x text) RETURNS jsonb LANGUAGE sql AS $$ SELECT jsonb_build_object('x', x) $$;
SELECT adk_define_tool('bud_echo(text)'::regprocedure);
SELECT adk_define_agent('bud_agent', model => 'bud_model', tools => ARRAY['bud_echo']);
SELECT adk_define_app('bud_app', 'bud_agent');
CREATE ROLE bud_alice IN ROLE adk_user;
CREATE ROLE bud_admin IN ROLE adk_admin;

CREATE FUNCTION bud_log(u text, s text) RETURNS TABLE (seq bigint, author text, calls text, responses text, error text)
LANGUAGE sql AS $$
  SELECT seq, author, regexp_replace(function_calls, 'call_[A-Za-z0-9]+', 'call_<id>', 'g'), function_responses,
         regexp_replace(error, 'budget [0-9]+', 'budget <id>')
    FROM adk.event_log WHERE app_name = 'bud_app' AND user_id = u AND session_id = s ORDER BY seq $$;
CREATE FUNCTION bud_calls() RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM adk.model_calls c JOIN adk.invocations i USING (invocation_id)
   WHERE i.app_name = 'bud_app' $$;

-- Definitions are checked.
\set VERBOSITY terse
INSERT INTO adk.budgets (app_name, period, max_tokens) VALUES ('bud_app', 'week', 10);
INSERT INTO adk.budgets (app_name, period, max_tokens) VALUES ('bud_app', 'day', -1);
INSERT INTO adk.budgets (app_name, period, max_tokens) VALUES ('no_such_app', 'day', 10);
INSERT INTO adk.budgets (app_name, period, max_model_calls) VALUES ('bud_app', 'total', 3);
-- one budget per scope and period
INSERT INTO adk.budgets (app_name, period, max_model_calls) VALUES ('bud_app', 'total', 5);
-- adk_user reads budgets; adk_admin defines them
SET ROLE bud_alice;
INSERT INTO adk.budgets (app_name, period, max_model_calls) VALUES ('bud_app', 'day', 100);
SELECT app_name, user_id, role_name, period, max_tokens, max_model_calls FROM adk.budgets;
SET ROLE bud_admin;
\set VERBOSITY default
INSERT INTO adk.budgets (app_name, period, max_model_calls) VALUES ('bud_app', 'month', 100);
DELETE FROM adk.budgets WHERE period = 'month';
RESET ROLE;

-- 1. A budget of 3 model calls for the whole app.  A run with a tool takes
-- two (the call, then the answer).  The next run gets its first call and
-- is stopped before its second: BUDGET_EXCEEDED, the invocation failed,
-- the tool's work kept.  The run after that makes no model call at all.
SELECT count(*) FROM adk_run('bud_app', 'u1', 's1', 'call bud_echo({"x": "one"})');
SELECT count(*) FROM adk_run('bud_app', 'u1', 's2', 'call bud_echo({"x": "two"})');
SELECT * FROM bud_log('u1', 's2');
SELECT status, model_calls, error_code FROM adk.invocations
 WHERE app_name = 'bud_app' AND session_id = 's2';
SELECT bud_calls() AS model_calls_before;
SELECT count(*) FROM adk_run('bud_app', 'u2', 's3', 'hello');
SELECT * FROM bud_log('u2', 's3');
SELECT bud_calls() AS model_calls_after;
SELECT period, tokens > 0 AS tokens, max_tokens, model_calls, max_model_calls, spent FROM adk.budget_usage;
-- raising the limit lets runs go on
UPDATE adk.budgets SET max_model_calls = 4;
SELECT count(*) FROM adk_run('bud_app', 'u2', 's3', 'hello again');
SELECT status FROM adk.invocations WHERE app_name = 'bud_app' AND session_id = 's3' ORDER BY started_at;
DELETE FROM adk.budgets;

-- 2. Tokens, per user and day.  A call is made while the user's budget has
-- tokens left; it is charged what it used (input + output, so it may end
-- above the limit) and the next call is refused.  Other users are not
-- touched.
INSERT INTO adk.budgets (app_name, user_id, period, max_tokens) VALUES ('bud_app', 'u5', 'day', 1);
SELECT count(*) FROM adk_run('bud_app', 'u5', 's1', 'hello');
SELECT count(*) FROM adk_run('bud_app', 'u5', 's1', 'hello again');
SELECT * FROM bud_log('u5', 's1');
SELECT count(*) FROM adk_run('bud_app', 'u6', 's1', 'hello');
SELECT * FROM bud_log('u6', 's1');
-- the usage is exactly what the ledger says the user's calls used
SELECT u.tokens = (SELECT sum(c.input_tokens + c.output_tokens) FROM adk.model_calls c
                     JOIN adk.invocations i USING (invocation_id)
                    WHERE i.app_name = 'bud_app' AND i.user_id = 'u5') AS tokens_exact,
       u.model_calls, u.spent, u.period_start = date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
       AS today
  FROM adk.budget_usage u;
DELETE FROM adk.budgets;

-- 3. Per role: alice's runs have no model calls left; the superuser's do.
INSERT INTO adk.budgets (app_name, role_name, period, max_model_calls) VALUES ('bud_app', 'bud_alice', 'month', 0);
SET ROLE bud_alice;
SELECT count(*) FROM adk_run('bud_app', 'bud_alice', 's1', 'hello');
SELECT error FROM bud_log('bud_alice', 's1');
RESET ROLE;
SELECT count(*) FROM adk_run('bud_app', 'bud_alice', 's2', 'hello');
SELECT error FROM bud_log('bud_alice', 's2');
DELETE FROM adk.budgets;

-- 4. A summarizer's call is a model call too: adk_compact takes it from
-- the budget of the session's user.
SELECT adk_define_app('bud_app', 'bud_agent',
                      compaction => '{"compaction_interval": 100, "summarizer_model": "bud_model"}');
INSERT INTO adk.budgets (app_name, user_id, period, max_model_calls) VALUES ('bud_app', 'u1', 'total', 0);
DO $$
DECLARE
    d text;
BEGIN
    PERFORM adk_compact('bud_app', 'u1', 's1');
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL;
    RAISE NOTICE '%: %', SQLERRM, regexp_replace(d, 'budget [0-9]+', 'budget <id>');
END $$;
UPDATE adk.budgets SET max_model_calls = 1;
SELECT adk_compact('bud_app', 'u1', 's1') > 0 AS compacted;
SELECT model_calls, tokens > 0 AS tokens, spent FROM adk.budget_usage;
DELETE FROM adk.budgets;

-- 5. Costs: prices per million tokens; cached input at its own price.
\set VERBOSITY terse
UPDATE adk.models SET price = '{"input": -1}' WHERE name = 'bud_model';
UPDATE adk.models SET price = '{"inputs": 1}' WHERE name = 'bud_model';
UPDATE adk.models SET price = '{"input": "1"}' WHERE name = 'bud_model';
\set VERBOSITY default
UPDATE adk.models SET price = '{"input": 2.5, "output": 10, "cached_input": 1.25}' WHERE name = 'bud_model';
SELECT c.app_name, c.user_id, c.agent, c.model, c.day = (now() AT TIME ZONE 'UTC')::date AS today,
       c.model_calls,
       c.cost = round(((c.input_tokens - c.cached_input_tokens) * 2.5 + c.cached_input_tokens * 1.25
                       + c.output_tokens * 10) / 1e6, 6) AS cost_exact,
       c.cost > 0 AS priced
  FROM adk.costs c WHERE c.app_name = 'bud_app' ORDER BY c.user_id;
-- without a price the cost is unknown, not zero
UPDATE adk.models SET price = NULL WHERE name = 'bud_model';
SELECT DISTINCT cost FROM adk.costs WHERE app_name = 'bud_app';
-- row-level security applies: a role sees the costs of the calls it may see
SET ROLE bud_alice;
SELECT count(*) > 0 AS sees_shared_app FROM adk.costs WHERE app_name = 'bud_app';
RESET ROLE;

-- clean up
DELETE FROM adk.sessions WHERE app_name = 'bud_app';
DELETE FROM adk.invocations WHERE app_name = 'bud_app';
DELETE FROM adk.user_states WHERE app_name = 'bud_app';
DELETE FROM adk.apps WHERE name = 'bud_app';
DROP ROLE bud_alice, bud_admin;
