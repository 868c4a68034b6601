-- adk.store_thoughts off (docs/models.md, "Thinking"): no thought text is
-- stored -- events, the ledger's request and response, spans -- yet
-- within the run that received them, Anthropic's thinking blocks go back
-- exactly (text and signature) on the tool loop's next requests, which
-- the API (and the local model server) refuses otherwise.  Gemini's
-- thoughts likewise.  Across runs (a paused tool loop resumed) the text
-- is gone: that request goes without thinking, which the API allows.
SELECT adk_set_secret('tu-key', 'sk-tu', ARRAY['127.0.0.1']);
SELECT adk_define_model(n, p, current_setting('adk_test.model_url'), m, api_key_secret => 'tu-key',
                        options => '{"retries": 0}')
  FROM (VALUES ('tu_claude', 'anthropic', 'claude-think'), ('tu_gemini', 'gemini', 'gemini-think')) AS d(n, p, m);
CREATE TEMP TABLE last_lines (line text);
-- the request the server received last (GET /_last)
CREATE FUNCTION pg_temp.server_log() RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    j jsonb;
BEGIN
    TRUNCATE last_lines;
    EXECUTE format($c$COPY last_lines FROM PROGRAM %L WITH (FORMAT csv, QUOTE E'\x01', DELIMITER E'\x02')$c$,
                   'curl -s ' || current_setting('adk_test.model_url') || '/_last');
    SELECT string_agg(line, E'\n')::jsonb INTO j FROM last_lines;
    RETURN j -> 'body';
END
$$;
CREATE FUNCTION pg_temp.kinds(e jsonb) RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(CASE WHEN p ? 'function_call' THEN 'call'
                           WHEN p ? 'function_response' THEN 'response'
                           WHEN p ->> 'thought' = 'true' AND p ->> 'text' = '' THEN 'thought(no text)'
                           WHEN p ->> 'thought' = 'true' THEN 'thought'
                           ELSE 'text' END
                      || CASE WHEN p ? 'thought_signature' THEN '+signature' ELSE '' END, ', ' ORDER BY n)
      FROM jsonb_array_elements(e #> '{content,parts}') WITH ORDINALITY AS x(p, n)
$$;
CREATE FUNCTION tu_lookup(x text) RETURNS jsonb LANGUAGE sql AS $$ SELECT jsonb_build_object('x', x, 'found', true) $$;
SELECT adk_define_tool('tu_lookup(text)'::regprocedure);
SELECT adk_define_agent('tu_claude_agent', model => 'tu_claude', instruction => 'Think first.',
                        tools => ARRAY['tu_lookup'],
                        generate_config => '{"thinking": {"budget_tokens": 2048}, "max_output_tokens": 1024}');
SELECT adk_define_app('tu_claude_app', 'tu_claude_agent');
SELECT adk_define_agent('tu_gemini_agent', model => 'tu_gemini', instruction => 'Think first.',
                        tools => ARRAY['tu_lookup'],
                        generate_config => '{"thinking": {"budget_tokens": 1024, "include_thoughts": true}}');
SELECT adk_define_app('tu_gemini_app', 'tu_gemini_agent');

SET adk.store_thoughts = off;
SET adk.capture_message_content = on;

-- ---------------------------------------------------------------------
-- 1. Anthropic: a tool loop, streamed or not
-- ---------------------------------------------------------------------
SELECT event_data ->> 'author' AS author, pg_temp.kinds(event_data) AS parts,
       event_data #>> '{error_code}' AS error
  FROM adk_run('tu_claude_app', 'u1', 'tu-s1', 'call tu_lookup({"x": "a"})');
-- the last request as the server received it: the assistant message
-- begins with the first answer's thinking block, its text and signature,
-- then its tool_use
SELECT b ->> 'type' AS type, b ->> 'thinking' AS thinking, b ? 'signature' AS signed
  FROM jsonb_array_elements(pg_temp.server_log() #> '{messages,1,content}') b;
SELECT event_data ->> 'author' AS author, pg_temp.kinds(event_data) AS parts,
       event_data #>> '{error_code}' AS error
  FROM adk_run('tu_claude_app', 'u1', 'tu-s2', 'call tu_lookup({"x": "s"}) [[redacted]]', options => '{"stream": true}')
 WHERE NOT partial;
-- the thinking block, then the redacted one (kept: nothing readable)
SELECT b ->> 'type' AS type, b ->> 'thinking' AS thinking, b ? 'signature' AS signed, b ? 'data' AS data
  FROM jsonb_array_elements(pg_temp.server_log() #> '{messages,1,content}') b;
-- a next turn: the earlier turn's thinking is not sent (its text is
-- gone), which the API allows outside the last assistant turn
SELECT event_data ->> 'author' AS author, pg_temp.kinds(event_data) AS parts,
       event_data #>> '{error_code}' AS error
  FROM adk_run('tu_claude_app', 'u1', 'tu-s1', 'Thanks');
SELECT jsonb_path_query_array(pg_temp.server_log(), '$.messages[*].content[*].type') AS blocks;

-- ---------------------------------------------------------------------
-- 2. Gemini: the thought's text and signature back within the run
-- ---------------------------------------------------------------------
SELECT event_data ->> 'author' AS author, pg_temp.kinds(event_data) AS parts,
       event_data #>> '{error_code}' AS error
  FROM adk_run('tu_gemini_app', 'u1', 'tu-s1', 'call tu_lookup({"x": "b"})');
SELECT p ->> 'text' AS text, p ->> 'thought' AS thought, p ? 'thoughtSignature' AS signed,
       p ? 'functionCall' AS call
  FROM jsonb_array_elements(pg_temp.server_log() #> '{contents,1,parts}') p;

-- ---------------------------------------------------------------------
-- 3. Nothing stored holds a thought's text: events, the ledger's
--    requests and responses (and raw bodies), spans
-- ---------------------------------------------------------------------
SELECT count(*) AS events, count(*) FILTER (WHERE event_data::text LIKE '%Thinking about%') AS with_thought_text
  FROM adk.events WHERE app_name LIKE 'tu\_%';
SELECT model, count(*) AS calls,
       count(*) FILTER (WHERE request::text LIKE '%Thinking about%') AS requests_with_thought_text,
       count(*) FILTER (WHERE response::text LIKE '%Thinking about%') AS responses_with_thought_text,
       count(*) FILTER (WHERE response_body LIKE '%Thinking about%') AS bodies_with_thought_text
  FROM adk.model_calls WHERE app_name LIKE 'tu\_%' GROUP BY model ORDER BY model;
-- the ledger's copy of the second request keeps the block's place and signature
SELECT jsonb_path_query_array(request, '$.messages[1].content[*].type') AS blocks,
       request #>> '{messages,1,content,0,thinking}' AS thinking,
       request #> '{messages,1,content,0}' ? 'signature' AS signed
  FROM adk.model_calls
 WHERE invocation_id = (SELECT invocation_id FROM adk.invocations
                         WHERE app_name = 'tu_claude_app' AND session_id = 'tu-s1' ORDER BY started_at LIMIT 1)
 ORDER BY id DESC LIMIT 1;
-- nor what a plugin's before_model is given (it could store it)
CREATE TABLE tu_seen (callback text, with_thought_text boolean);
CREATE FUNCTION tu_watch(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$
  INSERT INTO tu_seen VALUES (ctx ->> 'callback', ctx::text LIKE '%Thinking about%') RETURNING NULL::jsonb $$;
SELECT adk_define_plugin('tu_watch', before_model => 'tu_watch(jsonb)');
SELECT adk_define_app('tu_watched_app', 'tu_claude_agent', plugins => ARRAY['tu_watch']);
SELECT event_data ->> 'author' AS author, pg_temp.kinds(event_data) AS parts,
       event_data #>> '{error_code}' AS error
  FROM adk_run('tu_watched_app', 'u1', 'tu-w1', 'call tu_lookup({"x": "w"})');
SELECT callback, count(*) AS calls, count(*) FILTER (WHERE with_thought_text) AS with_thought_text
  FROM tu_seen GROUP BY callback;
SELECT count(*) > 0 AS model_spans_with_messages,
       count(*) FILTER (WHERE attributes::text LIKE '%Thinking about%') AS with_thought_text
  FROM adk.spans WHERE app_name LIKE 'tu\_%' AND attributes ? 'gen_ai.input.messages';

-- ---------------------------------------------------------------------
-- 4. Across runs: a tool loop paused (a long-running tool) and resumed
--    by another run, which has no thought text to send back: the
--    resumed request is sent without thinking (else refused)
-- ---------------------------------------------------------------------
CREATE FUNCTION tu_approve(item text) RETURNS jsonb LANGUAGE sql AS $$ SELECT jsonb_build_object('status', 'pending') $$;
SELECT adk_define_tool('tu_approve(text)'::regprocedure, long_running => true);
SELECT adk_define_agent('tu_hitl_agent', model => 'tu_claude', instruction => 'Think first.',
                        tools => ARRAY['tu_approve'],
                        generate_config => '{"thinking": {"budget_tokens": 2048}, "max_output_tokens": 1024}');
SELECT adk_define_app('tu_hitl_app', 'tu_hitl_agent');
SELECT event_data ->> 'author' AS author, pg_temp.kinds(event_data) AS parts,
       event_data #>> '{error_code}' AS error
  FROM adk_run('tu_hitl_app', 'u1', 'tu-h1', 'call tu_approve({"item": "laptop"})');
SELECT event_data ->> 'author' AS author, pg_temp.kinds(event_data) AS parts,
       event_data #>> '{error_code}' AS error
  FROM adk_run('tu_hitl_app', 'u1', 'tu-h1',
               adk_function_response((SELECT call_id FROM adk.pending_interrupts WHERE app_name = 'tu_hitl_app'),
                                     'tu_approve', '{"approved": true}'));
SELECT pg_temp.server_log() -> 'thinking' AS thinking,
       jsonb_path_query_array(pg_temp.server_log(), '$.messages[*].content[*].type') AS blocks;

RESET adk.capture_message_content;
RESET adk.store_thoughts;

-- later files count sessions' run states and list every definition:
-- take this file's away
SELECT count(*) AS deleted FROM (SELECT adk_delete_session(app_name, user_id, id) FROM adk.sessions
                                  WHERE app_name LIKE 'tu\_%') d;
DELETE FROM adk.apps WHERE name LIKE 'tu\_%';
DELETE FROM adk.agents WHERE name LIKE 'tu\_%';
DELETE FROM adk.tools WHERE name IN ('tu_lookup', 'tu_approve');
DELETE FROM adk.models WHERE name LIKE 'tu\_%';
DELETE FROM adk.secrets WHERE name = 'tu-key';
DROP FUNCTION tu_lookup(text);
DROP FUNCTION tu_approve(text);
DELETE FROM adk.plugins WHERE name = 'tu_watch';
DROP FUNCTION tu_watch(jsonb);
DROP TABLE tu_seen;
