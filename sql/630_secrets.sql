-- API keys: where they may come from, where they may go, and that they
-- are never stored or shown.
SELECT adk_set_secret('other-host-key', 'sk-other-host-999', ARRAY['api.openai.com']);
SELECT adk_define_model('leaky', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'other-host-key');
-- a key bound to another host is not sent here: an error, no request
SELECT count(*) AS calls_before FROM adk.model_calls \gset
SELECT regexp_replace(expect_error($q$SELECT adk_generate('leaky', '[{"role": "user", "parts": [{"text": "hi"}]}]')$q$),
                      ':[0-9]+"', ':PORT"') AS error;
SELECT count(*) = :calls_before AS nothing_sent FROM adk.model_calls;
-- bound by host:port works too; '*' is any host
SELECT adk_set_secret('other-host-key', 'sk-other-host-999',
                      ARRAY[regexp_replace(current_setting('adk_test.model_url'), '^http://', '')]);
SELECT adk_generate('leaky', '[{"role": "user", "parts": [{"text": "hi"}]}]') ->> 'error_code' AS error_code;
SELECT adk_set_secret('other-host-key', 'sk-other-host-999', ARRAY['*']);
SELECT adk_generate('leaky', '[{"role": "user", "parts": [{"text": "hi"}]}]') ->> 'error_code' AS error_code;

-- the endpoint is read as libcurl reads it, and compared with each entry
-- by scheme, host and port (the scheme's default port when none is given)
CREATE FUNCTION pg_temp.key_goes(endpoint text, hosts text[]) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    port text := regexp_replace(current_setting('adk_test.model_url'), '^.*:', '');
    err text;
BEGIN
    PERFORM adk_set_secret('bound-key', 'sk-bound-63', (SELECT array_agg(replace(h, 'PORT', port)) FROM unnest(hosts) h));
    PERFORM adk_define_model('bound', 'openai', replace(endpoint, 'PORT', port), 'gpt-test',
                             api_key_secret => 'bound-key', options => '{"retries": 0, "connect_timeout_ms": 1000}');
    err := expect_error($q$SELECT adk_generate('bound', '[{"role": "user", "parts": [{"text": "hi"}]}]')$q$);
    RETURN CASE WHEN err = 'no error' THEN 'sent' ELSE replace(split_part(err, E'\n', 1), ':' || port, ':PORT') END;
END
$$;
SELECT e AS endpoint, h AS allowed_hosts, pg_temp.key_goes(e, h) AS key
  FROM (VALUES ('http://127.0.0.1:PORT/v1', ARRAY['127.0.0.1']),
               ('http://127.0.0.1:PORT/v1', ARRAY['127.0.0.1:PORT']),
               ('http://127.0.0.1:PORT/v1', ARRAY['http://127.0.0.1:PORT']),
               ('http://127.0.0.1:PORT/v1', ARRAY['HTTP://127.0.0.1:PORT/']),
               ('http://127.0.0.1:PORT/v1', ARRAY['https://127.0.0.1:PORT']),
               ('http://127.0.0.1:PORT/v1', ARRAY['127.0.0.1:1']),
               ('http://127.0.0.1:PORT/v1', ARRAY['http://127.0.0.1']),
               ('http://127.0.0.1:PORT/v1', ARRAY['localhost', '127.0.0.2:PORT', '[::1]:PORT']),
               ('http://127.1:PORT/v1', ARRAY['127.0.0.1:PORT']),
               ('http://127.0.0.1/v1', ARRAY['127.0.0.1:443']),
               ('http://127.0.0.1/v1', ARRAY['127.0.0.1:80'])) v(e, h);
-- an endpoint libcurl cannot read is refused where it is defined (the
-- port here is "PORT:PORT", which a host check that cut at the last colon
-- took for the bound host:port)
SELECT regexp_replace(expect_error(format($q$SELECT adk_define_model('bound', 'openai', %L, 'gpt-test', api_key_secret => 'bound-key')$q$,
                                          current_setting('adk_test.model_url') || ':1/v1')),
                      ':[0-9]+:1', ':PORT:1', 'g') AS error;
SELECT regexp_replace(expect_error(format($q$UPDATE adk.models SET endpoint = %L WHERE name = 'bound'$q$,
                                          current_setting('adk_test.model_url') || ':1/v1')),
                      ':[0-9]+:1', ':PORT:1', 'g') AS error;
SELECT expect_error($q$SELECT adk_define_model('bound-x', 'openai', 'http://[::1/v1', 'm')$q$);
-- and refused at the call when it came in another way (a restored dump)
SELECT adk_set_secret('bound-key', 'sk-bound-63', ARRAY[regexp_replace(current_setting('adk_test.model_url'), '^http://', '')]);
ALTER TABLE adk.models DISABLE TRIGGER adk_models_check_options;
UPDATE adk.models SET endpoint = current_setting('adk_test.model_url') || ':1/v1' WHERE name = 'bound';
ALTER TABLE adk.models ENABLE TRIGGER adk_models_check_options;
SELECT regexp_replace(expect_error($q$SELECT adk_generate('bound', '[{"role": "user", "parts": [{"text": "hi"}]}]')$q$),
                      ':[0-9]+:1', ':PORT:1', 'g') AS error;
-- entries are checked as they are stored
SELECT h, expect_error(format($q$SELECT adk_set_secret('bound-key', 'v', %L)$q$, ARRAY[h])) AS error
  FROM unnest(ARRAY['127.0.0.1:1:2', 'api.example.com/v1', 'user@api.example.com', 'ftp://api.example.com',
                    'api.example.com:99999', '::1']) h;
DELETE FROM adk.models WHERE name = 'bound';
DELETE FROM adk.secrets WHERE name = 'bound-key';

-- keys from the environment: only names a superuser allowed
SELECT adk_define_model('env-model', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_env => 'PGDATA');
SELECT expect_error($q$SELECT adk_generate('env-model', '[{"role": "user", "parts": [{"text": "hi"}]}]')$q$);
SELECT adk_define_model('env-model', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_env => 'OPENAI_API_KEY');
SELECT expect_error($q$SELECT adk_generate('env-model', '[{"role": "user", "parts": [{"text": "hi"}]}]')$q$);
SHOW adk.allowed_key_env;

-- a role that is not adk_admin can run models but never read keys
SET ROLE regress_adk_runner;
SELECT adk_generate('gpt', '[{"role": "user", "parts": [{"text": "as a user"}]}]') #>> '{content,parts,0,text}' AS answer;
SELECT expect_error($q$SELECT value FROM adk.secrets$q$);
SELECT count(*) > 0 AS can_read_ledger FROM adk.model_calls;
RESET ROLE;

-- no key in any stored column of the ledger, nor anywhere in the store
SELECT count(*) AS rows_with_key
  FROM (SELECT c::text FROM adk.model_calls c
        UNION ALL SELECT m::text FROM adk.models m
        UNION ALL SELECT e::text FROM adk.events e
        UNION ALL SELECT s::text FROM adk.sessions s
        UNION ALL SELECT i::text FROM adk.invocations i) AS stored(row_text)
 WHERE row_text LIKE '%sk-regress-0123456789%' OR row_text LIKE '%sk-other-host-999%';
SELECT count(*) AS ledger_rows FROM adk.model_calls;

-- retention: old rows go as new ones are written
UPDATE adk.model_calls SET created_at = now() - interval '30 days';
SET adk.model_calls_retention = '1d';
DO $$ BEGIN FOR i IN 1..101 LOOP PERFORM adk_generate('openai', '[{"role": "user", "parts": [{"text": "again"}]}]'); END LOOP; END $$;
SELECT count(*) FILTER (WHERE created_at < now() - interval '1 day') AS old_rows, count(*) > 0 AS new_rows FROM adk.model_calls;
RESET adk.model_calls_retention;
-- bodies can be left out of the ledger
SET adk.model_calls_bodies = off;
SELECT adk_generate('openai', '[{"role": "user", "parts": [{"text": "no bodies"}]}]') IS NOT NULL;
SELECT request IS NULL AND response IS NULL AS no_bodies FROM adk.model_calls ORDER BY id DESC LIMIT 1;
RESET adk.model_calls_bodies;
DROP ROLE regress_adk_runner;
