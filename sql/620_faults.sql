-- Provider and transport faults: each one a clear error response (never a
-- lost transaction), recorded in the ledger, and the backend lives on.  A
-- call stopped by a query cancel or statement_timeout raises 57014 instead,
-- and its ledger row goes with the statement it was part of.
SELECT adk_define_model('fault-' || f, 'openai', current_setting('adk_test.model_url') || '/v1',
                        'fault-' || f, api_key_secret => 'test-key', options => '{"retries": 2}')
  FROM unnest(ARRAY['500', '429', '429-always', 'malformed', 'truncated', 'oversized', 'badutf8', 'hang']) f;
SELECT adk_define_model('fault-' || p || '-500', p, current_setting('adk_test.model_url') || CASE p WHEN 'openai' THEN '/v1' ELSE '' END,
                        'fault-500', api_key_secret => 'test-key', options => '{"retries": 0}')
  FROM unnest(ARRAY['gemini', 'anthropic']) p;

CREATE TEMP TABLE q AS SELECT '[{"role": "user", "parts": [{"text": "hi"}]}]'::jsonb AS c;

BEGIN;
SELECT adk_create_session('faults', 'u', 'kept') IS NOT NULL AS business_write;
-- 500: retried, then the provider's error in each provider's shape
SELECT f, r ->> 'error_code' AS error_code, left(r ->> 'error_message', 60) AS error_message
  FROM unnest(ARRAY['fault-500', 'fault-gemini-500', 'fault-anthropic-500']) f, q, adk_generate(f, c) r;
-- 429 with Retry-After: the retry succeeds
SELECT r #>> '{content,parts,0,text}' AS answer, r ->> 'error_code' AS error_code
  FROM q, adk_generate('fault-429', c) r;
-- 429 every time: retries exhausted
SELECT r ->> 'error_code' AS error_code FROM q, adk_generate('fault-429-always', c) r;
-- malformed JSON, invalid UTF-8, an oversized body
SELECT r ->> 'error_code' AS error_code, r ->> 'error_message' AS error_message
  FROM q, adk_generate('fault-malformed', c) r;
SELECT r ->> 'error_code' AS error_code, r ->> 'error_message' AS error_message
  FROM q, adk_generate('fault-badutf8', c) r;
SELECT r ->> 'error_code' AS error_code, r ->> 'error_message' AS error_message
  FROM q, adk_generate('fault-oversized', c) r;
-- a stream that breaks off: the partials that came, then the error
SELECT r ->> 'partial' AS partial, r ->> 'error_code' AS error_code
  FROM adk_generate_stream('fault-truncated', '[{"role": "user", "parts": [{"text": "a longer message to stream"}]}]') r;
-- a non-streamed body cut short
SELECT r ->> 'error_code' AS error_code FROM q, adk_generate('fault-truncated', c) r;
COMMIT;
-- the caller's transaction survived every fault
SELECT count(*) AS business_rows FROM adk.sessions WHERE app_name = 'faults';

-- the ledger has every attempt count and status, and the provider's raw
-- body when it is text (the invalid UTF-8 one is not)
SELECT model, http_status, attempts, error_code, response_body IS NOT NULL AS raw_kept
  FROM adk.model_calls WHERE model LIKE 'fault-%' ORDER BY id;
SELECT response_body::jsonb #>> '{error,type}' AS provider_error_type
  FROM adk.model_calls WHERE model = 'fault-500';

-- a timeout from the model's own timeout_ms
SELECT adk_define_model('fault-hang-short', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'fault-hang', api_key_secret => 'test-key', options => '{"timeout_ms": 300, "retries": 0}');
SELECT r ->> 'error_code' AS error_code FROM q, adk_generate('fault-hang-short', c) r;

-- a hang stopped by statement_timeout: SQLSTATE 57014, promptly
SET statement_timeout = '400ms';
SELECT clock_timestamp() AS t0 \gset
SELECT expect_error($q$SELECT adk_generate('fault-hang', '[{"role": "user", "parts": [{"text": "hi"}]}]')$q$);
RESET statement_timeout;
-- (the server would hang for 300 s: returning at all is the point)
SELECT clock_timestamp() - :'t0'::timestamptz < interval '60 s' AS did_not_wait_for_the_hang;
SELECT 'backend alive' AS status;
-- and it still works
SELECT r #>> '{content,parts,0,text}' AS answer FROM q, adk_generate('openai', c) r;

-- an unreachable endpoint
SELECT adk_define_model('nowhere', 'openai', 'http://127.0.0.1:1/v1', 'm', options => '{"retries": 0}');
SELECT r ->> 'error_code' AS error_code FROM q, adk_generate('nowhere', c) r;
