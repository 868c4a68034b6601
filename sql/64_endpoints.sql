-- Model endpoints and the headers models carry: header values an admin
-- set are not readable by adk_user.
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

-- clean up
DELETE FROM adk.model_calls WHERE model LIKE 'ep-%';
DELETE FROM adk.models WHERE name LIKE 'ep-%';
DELETE FROM adk.secrets WHERE name = 'ep-key';
DROP OWNED BY regress_ep_user, regress_ep_admin;
DROP ROLE regress_ep_user, regress_ep_admin;
