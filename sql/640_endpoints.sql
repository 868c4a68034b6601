-- Model endpoints and the headers models carry: header values an admin
-- set are not readable by adk_user; endpoints on link-local addresses
-- (cloud metadata services) are refused.  No request of this file leaves
-- the loopback interface: a link-local address is refused before a socket
-- is opened for it.
CREATE ROLE regress_ep_user LOGIN IN ROLE adk_user;
CREATE ROLE regress_ep_admin LOGIN IN ROLE adk_admin;

-- ---------------------------------------------------------------------
-- header values are the admin's
-- ---------------------------------------------------------------------
SELECT adk_set_secret('ep-key', 'sk-ep-64-0123456789', ARRAY['127.0.0.1']);
SELECT adk_define_model('ep-gw', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'ep-key', options => '{"temperature": 0.5, "retries": 0, "headers": {"X-Gateway-Token": "gw-TOKEN-64", "X-Team": "ep"}}');
SELECT adk_generate('ep-gw', '[{"role": "user", "parts": [{"text": "hi"}]}]') #>> '{content,parts,0,text}' AS answer;

SET ROLE regress_ep_user;
-- the table without options; options with header values hidden in the view
SELECT expect_error($q$SELECT options FROM adk.models$q$);
SELECT expect_error($q$SELECT * FROM adk.models$q$);
SELECT expect_error($q$SELECT m FROM adk.models m$q$);
SELECT expect_error($q$SELECT 1 FROM adk.models WHERE options::text LIKE '%TOKEN%'$q$);
SELECT name, provider, model, api_key_secret FROM adk.models WHERE name = 'ep-gw';
SELECT name, options FROM adk.model_definitions WHERE name = 'ep-gw';
-- a user's call still sends them, and nothing the user reads shows them
SELECT adk_generate('ep-gw', '[{"role": "user", "parts": [{"text": "as a user"}]}]') #>> '{content,parts,0,text}' AS answer;
SELECT count(*) AS readable_with_token
  FROM (SELECT d::text FROM adk.model_definitions d
        UNION ALL SELECT c::text FROM adk.model_calls c
        UNION ALL SELECT e::text FROM adk.events e) AS readable(row_text)
 WHERE row_text LIKE '%TOKEN-64%';
-- nor an error about them
SELECT expect_error($q$SELECT adk_generate('ep-gw', '[]', NULL, '{"headers": {"X-Team": 5}}')$q$);
RESET ROLE;

-- adk_admin reads them
SET ROLE regress_ep_admin;
SELECT options -> 'headers' AS headers FROM adk.models WHERE name = 'ep-gw';
SELECT name, options FROM adk.model_definitions WHERE name = 'ep-gw';
RESET ROLE;

-- a model without headers shows its options as they are
SELECT adk_define_model('ep-plain', 'gemini', 'http://127.0.0.1:1', 'g', options => '{"top_k": 3}');
SELECT name, options FROM adk.model_definitions WHERE name LIKE 'ep-%' ORDER BY name;

-- ---------------------------------------------------------------------
-- link-local endpoints
-- ---------------------------------------------------------------------
SHOW adk.allow_link_local_endpoints;
SELECT count(*) AS calls_before FROM adk.model_calls \gset
-- the metadata address, as a literal, in other spellings libcurl reads the
-- same, and IPv6 link-local
CREATE FUNCTION pg_temp.call_at(endpoint text) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    PERFORM adk_define_model('ep-ll', 'openai', endpoint, 'gpt-test', options => '{"retries": 0, "connect_timeout_ms": 1000}');
    RETURN adk_generate('ep-ll', '[{"role": "user", "parts": [{"text": "hi"}]}]');
END
$$;
SELECT e, r ->> 'error_code' AS error_code, r ->> 'error_message' AS error_message
  FROM unnest(ARRAY['http://169.254.169.254/v1', 'http://2852039166/v1', 'http://169.254.43518/v1',
                    'http://[fe80::1]:8080/v1', 'http://[::ffff:169.254.169.254]/v1']) WITH ORDINALITY u(e, i),
       LATERAL pg_temp.call_at(e) r
 ORDER BY i;
-- each failure is in the ledger, with no answer
SELECT url, http_status, error_code, response_body
  FROM adk.model_calls WHERE model = 'ep-ll' ORDER BY id;
SELECT count(*) - :calls_before AS calls_recorded FROM adk.model_calls;

-- a run ends normally with the refusal as its error event
SELECT adk_define_model('ep-ll', 'openai', 'http://169.254.169.254/v1', 'gpt-test', options => '{"retries": 0}');
SELECT adk_define_agent('ep_agent', model => 'ep-ll', instruction => 'Answer.');
SELECT adk_define_app('ep_app', 'ep_agent');
SET ROLE regress_ep_user;
SELECT count(*) AS rows_returned FROM adk_run('ep_app', 'u64', 's1', 'where am I?');
SELECT seq, author, error FROM adk.event_log WHERE app_name = 'ep_app' ORDER BY seq;
SELECT status, error_code FROM adk.invocations WHERE app_name = 'ep_app';
RESET ROLE;

-- embeddings go through the same check
SELECT expect_error($q$SELECT adk._embed('ep-ll', ARRAY['x'])$q$);

-- only a superuser may allow them
SET ROLE regress_ep_admin;
SELECT expect_error($q$SET adk.allow_link_local_endpoints = on$q$);
RESET ROLE;
SET ROLE regress_ep_user;
SELECT expect_error($q$SET adk.allow_link_local_endpoints = on$q$);
RESET ROLE;

-- loopback stays allowed
SELECT adk_generate('ep-gw', '[{"role": "user", "parts": [{"text": "still here"}]}]') #>> '{content,parts,0,text}' AS answer;

-- clean up
DELETE FROM adk.apps WHERE name = 'ep_app';
DELETE FROM adk.agents WHERE name = 'ep_agent';
DELETE FROM adk.model_calls WHERE model LIKE 'ep-%';
DELETE FROM adk.models WHERE name LIKE 'ep-%';
DELETE FROM adk.secrets WHERE name = 'ep-key';
DROP OWNED BY regress_ep_user, regress_ep_admin;
DROP ROLE regress_ep_user, regress_ep_admin;
