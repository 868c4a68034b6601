-- Fallback models (docs/models.md, "Fallback models"): adk.models.fallbacks
-- checked where they are defined; a call goes on to the next model on 429,
-- 5xx and timeouts (each model's fallback_on), never on 400; every attempt
-- is a ledger row; the answer carries ADK Python's fallback metadata; a
-- run's budget is charged once, for the model that answered; a stream
-- that failed after its partials were handed on does not go on; runs and
-- compaction's summarizer get the same.  (The
-- circuit breaker needs shared memory: test/t/069_model_breaker.pl.)
SELECT adk_set_secret('fb-key', 'sk-fb', ARRAY['127.0.0.1']);
SELECT adk_define_model(n, 'openai', current_setting('adk_test.model_url') || '/v1', m,
                        api_key_secret => 'fb-key', options => o::jsonb)
  FROM (VALUES ('fb_rate',    'fault-429-always', '{"retries": 1}'),
               ('fb_down',    'fault-overloaded', '{"retries": 0}'),
               ('fb_hang',    'fault-hang',       '{"retries": 0, "timeout_ms": 300}'),
               ('fb_bad',     'fault-400',        '{"retries": 0}'),
               ('fb_500only', 'fault-overloaded', '{"retries": 0, "fallback_on": ["500"]}'),
               ('fb_stall',   'fault-stall',      '{"retries": 0, "timeout_ms": 1500}'),
               ('fb_ok',      'gpt-fallback',     '{}'),
               ('fb_ok2',     'gpt-second',       '{}'),
               ('fb_claude',  'claude-fallback',  '{}')) AS d(n, m, o);
UPDATE adk.models SET provider = 'anthropic', endpoint = current_setting('adk_test.model_url')
 WHERE name = 'fb_claude';

-- 1. Definitions are checked.
SELECT adk_define_fallbacks('fb_rate', ARRAY['fb_ok']);
SELECT name, fallbacks FROM adk.model_definitions WHERE name LIKE 'fb\_%' ORDER BY name;
SELECT expect_error($$SELECT adk_define_fallbacks('fb_rate', ARRAY['fb_nope'])$$);
SELECT expect_error($$SELECT adk_define_fallbacks('fb_rate', ARRAY['fb_rate'])$$);
SELECT expect_error($$SELECT adk_define_fallbacks('fb_rate', ARRAY['fb_ok', 'fb_ok'])$$);
SELECT expect_error($$SELECT adk_define_fallbacks('fb_rate', ARRAY['fb_ok', NULL])$$);
SELECT expect_error($$SELECT adk_define_fallbacks('fb_nope', ARRAY['fb_ok'])$$);
-- a cycle, direct or through another model's fallbacks
SELECT expect_error($$SELECT adk_define_fallbacks('fb_ok', ARRAY['fb_rate'])$$);
SELECT adk_define_fallbacks('fb_ok', ARRAY['fb_ok2']);
SELECT expect_error($$SELECT adk_define_fallbacks('fb_ok2', ARRAY['fb_rate'])$$);
SELECT adk_define_fallbacks('fb_ok', '{}');
-- a model others fall back to is neither deleted nor renamed
SELECT expect_error($$DELETE FROM adk.models WHERE name = 'fb_ok'$$);
SELECT expect_error($$UPDATE adk.models SET name = 'fb_ok_renamed' WHERE name = 'fb_ok'$$);
-- redefining a model keeps its fallbacks
SELECT adk_define_model('fb_rate', 'openai', current_setting('adk_test.model_url') || '/v1', 'fault-429-always',
                        api_key_secret => 'fb-key', options => '{"retries": 1}');
SELECT fallbacks FROM adk.models WHERE name = 'fb_rate';
-- fallback_on
SELECT expect_error($$SELECT adk_define_model('fb_x', 'openai', 'http://127.0.0.1:1/v1', 'x',
                                               options => '{"fallback_on": "429"}')$$);
SELECT expect_error($$SELECT adk_define_model('fb_x', 'openai', 'http://127.0.0.1:1/v1', 'x',
                                               options => '{"fallback_on": ["4xy"]}')$$);
-- hostile: adk_user neither defines fallbacks nor writes adk.models (models
-- are not per tenant: adk_admin defines them all); it reads them
CREATE ROLE fb_alice IN ROLE adk_user;
SET ROLE fb_alice;
SELECT expect_error($$SELECT adk_define_fallbacks('fb_rate', ARRAY['fb_claude'])$$);
SELECT expect_error($$UPDATE adk.models SET fallbacks = '{fb_claude}' WHERE name = 'fb_rate'$$);
SELECT name, fallbacks FROM adk.models WHERE name = 'fb_rate';
RESET ROLE;

SELECT adk_define_fallbacks(p, f)
  FROM (VALUES ('fb_down', ARRAY['fb_claude']), ('fb_hang', ARRAY['fb_ok']),
               ('fb_bad', ARRAY['fb_ok']), ('fb_500only', ARRAY['fb_ok']),
               ('fb_stall', ARRAY['fb_ok'])) AS d(p, f);
CREATE TEMP TABLE q AS SELECT '[{"role": "user", "parts": [{"text": "hi"}]}]'::jsonb AS c;
CREATE FUNCTION fb_ledger(after bigint) RETURNS TABLE (model text, fallback_attempt integer, fallback_from text,
                                                      http_status integer, attempts integer, error_code text,
                                                      output_tokens bigint)
LANGUAGE sql AS $$
  SELECT model, fallback_attempt, fallback_from, http_status, attempts, error_code, output_tokens
    FROM adk.model_calls WHERE id > after ORDER BY id $$;

-- 2. 429 after the model's own retry: the fallback answers, with ADK
-- Python's FallbackPlugin keys; two ledger rows.
SELECT coalesce(max(id), 0) AS mark FROM adk.model_calls \gset
SELECT r #>> '{content,parts,0,text}' AS text, r -> 'custom_metadata' AS custom_metadata
  FROM q, adk_generate('fb_rate', c) r;
SELECT * FROM fb_ledger(:mark);

-- 3. 503 (no retries): another provider answers
SELECT coalesce(max(id), 0) AS mark FROM adk.model_calls \gset
SELECT r #>> '{content,parts,0,text}' AS text, r #>> '{custom_metadata,fallback_model}' AS fallback_model
  FROM q, adk_generate('fb_down', c) r;
SELECT * FROM fb_ledger(:mark);

-- 4. a timeout goes on too
SELECT coalesce(max(id), 0) AS mark FROM adk.model_calls \gset
SELECT r #>> '{content,parts,0,text}' AS text, r #>> '{custom_metadata,error_code}' AS error_code
  FROM q, adk_generate('fb_hang', c) r;
SELECT * FROM fb_ledger(:mark);

-- 5. a 400 does not (another model would refuse the request too), nor a
-- failure the model's fallback_on leaves out
SELECT coalesce(max(id), 0) AS mark FROM adk.model_calls \gset
SELECT r ->> 'error_code' AS error_code, r -> 'custom_metadata' AS custom_metadata
  FROM q, adk_generate('fb_bad', c) r;
SELECT r ->> 'error_code' AS error_code FROM q, adk_generate('fb_500only', c) r;
SELECT * FROM fb_ledger(:mark);

-- 6. a chain: each fallback's own fallbacks follow it
SELECT adk_define_fallbacks('fb_rate', ARRAY['fb_down']);
SELECT coalesce(max(id), 0) AS mark FROM adk.model_calls \gset
SELECT r #>> '{content,parts,0,text}' AS text, r -> 'custom_metadata' AS custom_metadata
  FROM q, adk_generate('fb_rate', c) r;
SELECT * FROM fb_ledger(:mark);
SELECT adk_define_fallbacks('fb_rate', ARRAY['fb_ok']);

-- 7. a stream that fails before its first partial goes on, and only the
-- fallback's partials come out; one that fails after them does not go on:
-- no partial comes twice
SELECT coalesce(max(id), 0) AS mark FROM adk.model_calls \gset
SELECT r ->> 'partial' AS partial, r #>> '{content,parts,0,text}' AS text, r ->> 'error_code' AS error_code
  FROM adk_generate_stream('fb_down', '[{"role": "user", "parts": [{"text": "Hello there"}]}]') r;
SELECT r ->> 'partial' AS partial, r #>> '{content,parts,0,text}' AS text, r ->> 'error_code' AS error_code
  FROM adk_generate_stream('fb_stall', '[{"role": "user", "parts": [{"text": "a longer message to stream"}]}]') r;
SELECT * FROM fb_ledger(:mark);

-- 8. In a run: the event carries the metadata, the function call's id is
-- the answering model's (the ledger's), the budget and adk.costs are
-- charged once, to the model that answered.
SELECT adk_define_model('fb_run', 'openai', current_setting('adk_test.model_url') || '/v1', 'fault-429-always',
                        api_key_secret => 'fb-key', options => '{"retries": 0}');
SELECT adk_define_fallbacks('fb_run', ARRAY['fb_ok']);
UPDATE adk.models SET price = '{"input": 1, "output": 2}' WHERE name IN ('fb_run', 'fb_ok');
CREATE FUNCTION fb_echo(x text) RETURNS jsonb LANGUAGE sql AS $$ SELECT jsonb_build_object('x', x) $$;
SELECT adk_define_tool('fb_echo(text)'::regprocedure);
SELECT adk_define_agent('fb_agent', model => 'fb_run', tools => ARRAY['fb_echo']);
SELECT adk_define_app('fb_app', 'fb_agent');
INSERT INTO adk.budgets (app_name, period, max_tokens) VALUES ('fb_app', 'total', 100000);
SELECT count(*) AS events FROM adk_run('fb_app', 'u1', 's1', 'call fb_echo({"x": "one"})');
SELECT e.event_data -> 'custom_metadata' AS custom_metadata,
       e.event_data #>> '{content,parts,0,function_call,id}' =
         (SELECT c.response #>> '{content,parts,0,function_call,id}' FROM adk.model_calls c
           WHERE c.invocation_id = e.invocation_id AND c.model = 'fb_ok' ORDER BY c.id LIMIT 1) AS call_id_of_answer
  FROM adk.events e
 WHERE e.app_name = 'fb_app' AND e.event_data #> '{content,parts,0,function_call}' IS NOT NULL;
SELECT c.model, c.fallback_attempt, c.fallback_from, c.error_code, c.input_tokens + c.output_tokens AS tokens
  FROM adk.model_calls c JOIN adk.invocations i USING (invocation_id)
 WHERE i.app_name = 'fb_app' ORDER BY c.id;
SELECT u.tokens = (SELECT sum(c.input_tokens + c.output_tokens) FROM adk.model_calls c
                          JOIN adk.invocations i USING (invocation_id) WHERE i.app_name = 'fb_app') AS charged_once,
       u.model_calls
  FROM adk.budget_usage u WHERE u.app_name = 'fb_app';
SELECT model, model_calls, input_tokens > 0 AS has_tokens, cost > 0 AS charged
  FROM adk.costs WHERE app_name = 'fb_app' ORDER BY model;

-- 9. Streamed runs: the partial rows come once -- the fallback's, when
-- the model called failed before its first; the model's own, then the
-- error event, when it failed after them
SELECT adk_define_agent('fb_stream_agent', model => 'fb_down');
SELECT adk_define_app('fb_stream_app', 'fb_stream_agent');
SELECT adk_define_agent('fb_stall_agent', model => 'fb_stall');
SELECT adk_define_app('fb_stall_app', 'fb_stall_agent');
SELECT seq, partial, event_data #>> '{content,parts,0,text}' AS text, event_data ->> 'error_code' AS error_code,
       event_data #>> '{custom_metadata,fallback_model}' AS fallback_model
  FROM adk_run('fb_stream_app', 'u1', 's1', 'Hello there', options => '{"stream": true}');
SELECT seq, partial, event_data #>> '{content,parts,0,text}' AS text, event_data ->> 'error_code' AS error_code
  FROM adk_run('fb_stall_app', 'u1', 's1', 'a longer message to stream', options => '{"stream": true}');
SELECT c.model, c.fallback_attempt, c.error_code
  FROM adk.model_calls c JOIN adk.invocations i USING (invocation_id)
 WHERE i.app_name IN ('fb_stream_app', 'fb_stall_app') ORDER BY c.id;

-- 10. Compaction's summarizer falls back as well
SELECT adk_define_agent('fb_chat_agent', model => 'fb_ok');
SELECT adk_define_app('fb_chat_app', 'fb_chat_agent',
                      compaction => '{"compaction_interval": 100, "overlap_size": 0, "summarizer_model": "fb_down"}');
SELECT count(*) AS events FROM adk_run('fb_chat_app', 'u1', 's1', 'first');
SELECT count(*) AS events FROM adk_run('fb_chat_app', 'u1', 's1', 'second');
SELECT coalesce(max(id), 0) AS mark FROM adk.model_calls \gset
SELECT adk_compact('fb_chat_app', 'u1', 's1') IS NOT NULL AS compacted;
SELECT * FROM fb_ledger(:mark);

-- without shared memory no breaker opens, and the view is empty
SELECT count(*) AS breakers FROM adk.model_breakers;

-- later files list every definition and budget: take this file's away
DELETE FROM adk.budgets WHERE app_name = 'fb_app';
DELETE FROM adk.apps WHERE name LIKE 'fb\_%';
DELETE FROM adk.agents WHERE name LIKE 'fb\_%';
DELETE FROM adk.tools WHERE name = 'fb_echo';
UPDATE adk.models SET fallbacks = NULL WHERE name LIKE 'fb\_%';
DELETE FROM adk.models WHERE name LIKE 'fb\_%';
DROP FUNCTION fb_echo(text);
