-- Model and secret definitions: validation, upsert, privileges.
SELECT current_setting('adk_test.model_url') ~ '^http://127\.0\.0\.1:[0-9]+$' AS model_server_configured;

SELECT adk_set_secret('test-key', 'sk-regress-0123456789', ARRAY['127.0.0.1']);
SELECT adk_define_model('gpt', 'openai', current_setting('adk_test.model_url') || '/v1/', 'gpt-test',
                        api_key_secret => 'test-key', options => '{"temperature": 0.2}');
-- the trailing slash is dropped, options are kept
SELECT name, provider, endpoint ~ '/v1$' AS endpoint_ok, model, api_key_secret, options FROM adk.models;
-- defining again replaces
SELECT adk_define_model('gpt', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test-2',
                        api_key_secret => 'test-key');
SELECT name, model, options FROM adk.models;

-- validation, for the helper and for plain INSERT / UPDATE alike
SELECT expect_error($q$SELECT adk_define_model('x', 'mistral', 'http://127.0.0.1/v1', 'm')$q$);
SELECT expect_error($q$SELECT adk_define_model('x', 'openai', 'ftp://127.0.0.1/v1', 'm')$q$);
SELECT expect_error($q$SELECT adk_define_model('x', 'openai', 'http://user:pw@127.0.0.1/v1', 'm')$q$);
SELECT expect_error($q$SELECT adk_define_model('x', 'openai', 'http://127.0.0.1/v1', '')$q$);
SELECT expect_error($q$SELECT adk_define_model('x', 'openai', 'http://127.0.0.1/v1', 'm', api_key_secret => 'nope')$q$);
SELECT expect_error($q$SELECT adk_define_model('x', 'openai', 'http://127.0.0.1/v1', 'm', api_key_env => 'A', api_key_secret => 'test-key')$q$);
SELECT expect_error($q$SELECT adk_define_model('x', 'openai', 'http://127.0.0.1/v1', 'm', api_key_env => 'BAD NAME')$q$);
SELECT expect_error($q$SELECT adk_define_model('x', 'openai', 'http://127.0.0.1/v1', 'm', options => '{"temprature": 1}')$q$);
SELECT expect_error($q$SELECT adk_define_model('x', 'openai', 'http://127.0.0.1/v1', 'm', options => '{"retries": -1}')$q$);
SELECT expect_error($q$SELECT adk_define_model('x', 'openai', 'http://127.0.0.1/v1', 'm', options => '{"timeout_ms": 1.5}')$q$);
SELECT expect_error($q$SELECT adk_define_model('x', 'openai', 'http://127.0.0.1/v1', 'm', options => '{"headers": {"Authorization": "Bearer x"}}')$q$);
SELECT expect_error($q$SELECT adk_define_model('x', 'openai', 'http://127.0.0.1/v1', 'm', options => '{"headers": {"X-Ok": "a\r\nX-Evil: 1"}}')$q$);
SELECT expect_error($q$SELECT adk_define_model('x', 'openai', 'http://127.0.0.1/v1', 'm', options => '[]')$q$);
SELECT expect_error($q$UPDATE adk.models SET options = '{"stop_sequences": "x"}' WHERE name = 'gpt'$q$);
SELECT expect_error($q$INSERT INTO adk.models (name, provider, endpoint, model) VALUES ('y', 'openai', 'not a url', 'm')$q$);
SELECT expect_error($q$SELECT adk_set_secret('s', 'v', ARRAY[]::text[])$q$);
SELECT expect_error($q$SELECT adk_set_secret('s', '', ARRAY['x'])$q$);
SELECT count(*) AS models FROM adk.models;

-- definitions survive pg_dump
SELECT c.relname FROM pg_extension x, unnest(x.extconfig) t(oid) JOIN pg_class c ON c.oid = t.oid
 WHERE x.extname = 'adk_runner' ORDER BY 1;

-- adk_user reads models but not secrets, and defines nothing;
-- adk_admin defines models and secrets
CREATE ROLE regress_adk_runner LOGIN IN ROLE adk_user;
CREATE ROLE regress_adk_definer LOGIN IN ROLE adk_admin;
SET ROLE regress_adk_runner;
SELECT name, api_key_secret FROM adk.models;
SELECT expect_error($q$SELECT * FROM adk.secrets$q$);
SELECT expect_error($q$SELECT adk_set_secret('mine', 'v', ARRAY['*'])$q$);
SELECT expect_error($q$SELECT adk_define_model('mine', 'openai', 'http://127.0.0.1/v1', 'm')$q$);
SELECT expect_error($q$UPDATE adk.models SET endpoint = 'http://evil.example/v1'$q$);
RESET ROLE;
SET ROLE regress_adk_definer;
SELECT adk_set_secret('admin-key', 'sk-admin', ARRAY['api.example.com']);
SELECT adk_define_model('admin-model', 'anthropic', 'https://api.example.com', 'claude-x', api_key_secret => 'admin-key');
SELECT count(*) FROM adk.secrets;
RESET ROLE;
DELETE FROM adk.models WHERE name = 'admin-model';
DELETE FROM adk.secrets WHERE name = 'admin-key';
DROP ROLE regress_adk_definer;
