-- Artifacts (docs/artifacts.md): the SQL API, its errors, scopes, limits; the
-- load_artifacts built-in, SQL tools saving artifacts (artifact_delta),
-- and input blobs saved as artifacts, against the local model server.
SELECT adk_create_session('art', 'ann', 's1') IS NOT NULL AS created;
SELECT adk_create_session('art', 'ann', 's2') IS NOT NULL AS created;

-- versions 0, 1, 2 per filename; user: names are shared by the user's sessions
SELECT adk_save_artifact('art', 'ann', 's1', 'notes.txt', convert_to('first', 'UTF8'), 'text/plain') AS v;
SELECT adk_save_artifact('art', 'ann', 's1', 'notes.txt', convert_to('second', 'UTF8'), 'text/plain') AS v;
SELECT adk_save_artifact('art', 'ann', 's1', 'notes.txt', convert_to('third', 'UTF8'), 'text/plain') AS v;
SELECT adk_save_artifact('art', 'ann', 's1', 'user:profile.json', convert_to('{"a": 1}', 'UTF8'), 'application/json') AS v;
SELECT adk_save_artifact('art', 'ann', 's2', 'user:profile.json', convert_to('{"a": 2}', 'UTF8'), 'application/json') AS v;
SELECT adk_save_artifact('art', 'ann', 's2', 'other.bin', '\x000102') AS v;
SELECT convert_from(adk_load_artifact('art', 'ann', 's1', 'notes.txt'), 'UTF8') AS latest,
       convert_from(adk_load_artifact('art', 'ann', 's1', 'notes.txt', 0), 'UTF8') AS v0,
       convert_from(adk_load_artifact('art', 'ann', 's1', 'notes.txt', 1), 'UTF8') AS v1,
       adk_load_artifact('art', 'ann', 's1', 'notes.txt', 7) IS NULL AS v7_absent,
       adk_load_artifact('art', 'ann', 's2', 'notes.txt') IS NULL AS other_session_absent,
       adk_load_artifact('art', 'ann', 'no-such-session', 'nope') IS NULL AS unknown_absent;
SELECT convert_from(adk_load_artifact('art', 'ann', 's1', 'user:profile.json'), 'UTF8') AS from_s1,
       convert_from(adk_load_artifact('art', 'ann', 's2', 'user:profile.json', 0), 'UTF8') AS v0_from_s2;
SELECT * FROM adk_list_artifacts('art', 'ann', 's1');
SELECT * FROM adk_list_artifacts('art', 'ann', 's2');
SELECT * FROM adk_list_artifact_versions('art', 'ann', 's1', 'notes.txt');
SELECT * FROM adk_list_artifact_versions('art', 'ann', 's2', 'user:profile.json');
SELECT count(*) AS none FROM adk_list_artifact_versions('art', 'ann', 's1', 'missing');
-- what a row keeps: mime type, size, sha256, time; no invocation outside a run
SELECT session_id, filename, version, mime_type, size, sha256 = sha256(data) AS sha_ok,
       created_at <= clock_timestamp() AS timed, invocation_id
  FROM adk.artifacts WHERE app_name = 'art' ORDER BY session_id, filename, version;
-- default MIME type, and lz4 (TOAST) for a large value
SELECT adk_save_artifact('art', 'ann', 's1', 'big.txt', convert_to(repeat('compress me ', 100000), 'UTF8'), 'text/plain') AS v;
SELECT size, pg_column_size(data) < size / 10 AS compressed, pg_column_compression(data) AS method
  FROM adk.artifacts WHERE filename = 'big.txt';
SELECT mime_type FROM adk.artifacts WHERE filename = 'other.bin';

-- delete: all versions; a missing one is no error
SELECT adk_delete_artifact('art', 'ann', 's1', 'notes.txt') AS deleted;
SELECT adk_delete_artifact('art', 'ann', 's1', 'notes.txt') AS deleted;
SELECT * FROM adk_list_artifacts('art', 'ann', 's1');
-- deleting a session deletes its own artifacts, not the user's
SELECT adk_delete_session('art', 'ann', 's2');
SELECT session_id, filename, version FROM adk.artifacts WHERE app_name = 'art' ORDER BY 1, 2, 3;

-- errors
SELECT expect_error($q$SELECT adk_save_artifact('art', 'ann', 'nope', 'a.txt', '\x00', 'text/plain')$q$);
SELECT expect_error($q$SELECT adk_save_artifact('art', 'ann', 's1', '', '\x00', 'text/plain')$q$);
SELECT expect_error($q$SELECT adk_save_artifact('art', 'ann', 's1', 'user:', '\x00', 'text/plain')$q$);
SELECT expect_error($q$SELECT adk_save_artifact('art', 'ann', 's1', NULL, '\x00', 'text/plain')$q$);
SELECT expect_error($q$SELECT adk_save_artifact('art', 'ann', 's1', repeat('x', 1025), '\x00', 'text/plain')$q$);
SELECT expect_error($q$SELECT adk_save_artifact('art', 'ann', 's1', 'a.txt', NULL, 'text/plain')$q$);
SELECT expect_error($q$SELECT adk_save_artifact('art', 'ann', 's1', 'a.txt', '\x00', 'not a type')$q$);
SELECT expect_error($q$SELECT adk_save_artifact(NULL, 'ann', 's1', 'a.txt', '\x00', 'text/plain')$q$);
SELECT expect_error($q$SELECT adk_save_artifact('art', '', 's1', 'a.txt', '\x00', 'text/plain')$q$);
SELECT expect_error($q$SELECT adk_load_artifact('art', 'ann', 's1', 'a.txt', -1)$q$);
SELECT expect_error($q$SELECT adk_load_artifact('art', 'ann', 's1', '')$q$);
SELECT expect_error($q$SELECT * FROM adk_list_artifacts('art', 'ann', NULL)$q$);
SELECT expect_error($q$SELECT * FROM adk_list_artifact_versions('art', 'ann', 's1', NULL)$q$);
SELECT expect_error($q$SELECT adk_delete_artifact('art', 'ann', 's1', '')$q$);
-- adk.max_artifact_size
SHOW adk.max_artifact_size;
SET adk.max_artifact_size = '1kB';
SELECT expect_error($q$SELECT adk_save_artifact('art', 'ann', 's1', 'a.bin', decode(repeat('00', 1025), 'hex'))$q$);
SELECT adk_save_artifact('art', 'ann', 's1', 'a.bin', decode(repeat('00', 1024), 'hex')) AS fits;
RESET adk.max_artifact_size;
-- the tools' form needs a run
SELECT expect_error($q$SELECT adk_save_artifact('x.txt', '\x00', 'text/plain')$q$);

-- privileges: adk_user saves through the API, cannot write the table
CREATE ROLE regress_adk_art IN ROLE adk_user;
SET ROLE regress_adk_art;
SELECT adk_save_artifact('art', 'ann', 's1', 'by_user.txt', '\x41', 'text/plain') AS v;
SELECT count(*) AS readable FROM adk.artifacts WHERE filename = 'by_user.txt';
SELECT expect_error($q$INSERT INTO adk.artifacts VALUES ('art', 'ann', 's1', 'x', 0, '\x00', 'a/b', 1, '\x00', now(), NULL)$q$);
SELECT expect_error($q$DELETE FROM adk.artifacts$q$);
RESET ROLE;
DROP ROLE regress_adk_art;

-- load_artifacts: the instruction lists the names; the call answers with
-- the names; the next request carries the artifacts after the response
-- (text as text, an image as inline data for OpenAI)
SELECT adk_define_model('art_model', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'test-key');
SELECT adk_define_agent('art_agent', model => 'art_model', instruction => 'You help with files.',
                        tools => ARRAY['load_artifacts']);
SELECT adk_define_app('art_app', 'art_agent');
SELECT adk_create_session('art_app', 'ann', 'r1') IS NOT NULL AS created;
SELECT adk_save_artifact('art_app', 'ann', 'r1', 'notes.txt', convert_to('Rex is a dog.', 'UTF8'), 'text/plain; charset=utf-8') AS v;
SELECT adk_save_artifact('art_app', 'ann', 'r1', 'pic.png', decode('89504e470d0a1a0a', 'hex'), 'image/png') AS v;
SELECT adk_save_artifact('art_app', 'ann', 'r1', 'user:blob.bin', '\x00ff', 'application/octet-stream') AS v;
SELECT count(*) AS events
  FROM adk_run('art_app', 'ann', 'r1', 'call load_artifacts({"artifact_names": ["notes.txt", "pic.png", "user:blob.bin", "gone.txt"]})');
SELECT seq, author, function_calls, function_responses, text
  FROM adk.event_log WHERE app_name = 'art_app' AND session_id = 'r1' ORDER BY seq;
-- first request: the names in the system instruction, the tool declared
SELECT request #>> '{messages,0,content}' AS system,
       request #> '{tools,0,function}' AS declaration
  FROM adk.model_calls WHERE invocation_id = (SELECT invocation_id FROM adk.events WHERE session_id = 'r1' LIMIT 1)
 ORDER BY id LIMIT 1;
-- second request: after the tool message, one user message per artifact
SELECT m.n, m.msg ->> 'role' AS role,
       regexp_replace((m.msg -> 'content')::text, 'call_[A-Za-z0-9]+', 'call_<id>', 'g') AS content
  FROM (SELECT request FROM adk.model_calls
         WHERE invocation_id = (SELECT invocation_id FROM adk.events WHERE session_id = 'r1' LIMIT 1)
         ORDER BY id OFFSET 1 LIMIT 1) r,
       jsonb_array_elements(r.request -> 'messages') WITH ORDINALITY m(msg, n)
 WHERE m.n > 2 ORDER BY m.n;
-- the third run sees the artifacts no more (only right after the call)
SELECT count(*) AS events FROM adk_run('art_app', 'ann', 'r1', 'thanks');
SELECT request::text LIKE '%Artifact notes.txt is:%' AS carried_again
  FROM adk.model_calls ORDER BY id DESC LIMIT 1;
-- Anthropic takes no application/octet-stream: a note instead; a PNG goes inline
SELECT adk_define_model('art_claude', 'anthropic', current_setting('adk_test.model_url'), 'claude-test',
                        api_key_secret => 'test-key');
SELECT adk_define_agent('art_agent2', model => 'art_claude', tools => ARRAY['load_artifacts']);
SELECT adk_define_app('art_app2', 'art_agent2');
SELECT adk_create_session('art_app2', 'ann', 'r2') IS NOT NULL AS created;
SELECT adk_save_artifact('art_app2', 'ann', 'r2', 'pic.png', decode('89504e470d0a1a0a', 'hex'), 'image/png') AS v;
SELECT adk_save_artifact('art_app2', 'ann', 'r2', 'raw.bin', '\x00ff', 'application/octet-stream') AS v;
SELECT count(*) AS events FROM adk_run('art_app2', 'ann', 'r2', 'call load_artifacts({"artifact_names": ["pic.png", "raw.bin"]})');
SELECT jsonb_path_query_array(request, '$.messages[*] ? (@.role == "user").content[*] ? (@.type != "tool_result")') AS user_blocks
  FROM adk.model_calls WHERE model = 'art_claude' ORDER BY id DESC LIMIT 1;
-- bad arguments: an error the model sees
SELECT count(*) AS events FROM adk_run('art_app', 'ann', 'r1', 'call load_artifacts({"artifact_names": "notes.txt"})');
SELECT function_responses FROM adk.event_log
 WHERE app_name = 'art_app' AND session_id = 'r1' AND function_responses IS NOT NULL ORDER BY seq DESC LIMIT 1;

-- A SQL tool saves an artifact for its run: adk_save_artifact(filename,
-- data, mime_type) saves into the run's session; the tool response event
-- records it in actions.artifact_delta, the row has the invocation.  A tool
-- that fails after saving leaves neither.
CREATE FUNCTION make_report(title text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  PERFORM adk_save_artifact('report.txt', convert_to('Report: ' || title, 'UTF8'), 'text/plain');
  PERFORM adk_save_artifact('report.txt', convert_to('Report v2: ' || title, 'UTF8'), 'text/plain');
  PERFORM adk_save_artifact('user:last_report.txt', convert_to(title, 'UTF8'), 'text/plain');
  RETURN 'saved';
END $$;
CREATE FUNCTION broken_report(title text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  PERFORM adk_save_artifact('broken.txt', convert_to(title, 'UTF8'), 'text/plain');
  RAISE EXCEPTION 'printer on fire';
END $$;
SELECT adk_define_tool('make_report(text)'::regprocedure);
SELECT adk_define_tool('broken_report(text)'::regprocedure);
SELECT adk_define_agent('report_agent', model => 'art_model', tools => ARRAY['make_report', 'broken_report', 'load_artifacts']);
SELECT adk_define_app('report_app', 'report_agent');
SELECT count(*) AS events FROM adk_run('report_app', 'ann', 'r3', 'call make_report({"title": "Q3"}) call broken_report({"title": "Q4"})');
SELECT seq, event_data ->> 'author' AS author, event_data #> '{actions,artifact_delta}' AS artifact_delta
  FROM adk.events WHERE app_name = 'report_app' AND session_id = 'r3' ORDER BY seq;
SELECT filename, version, convert_from(data, 'UTF8') AS data,
       invocation_id = (SELECT invocation_id FROM adk.events WHERE session_id = 'r3' LIMIT 1) AS run_invocation
  FROM adk.artifacts WHERE app_name = 'report_app' ORDER BY filename, version;
-- a tool that needs confirmation saves when it is confirmed, in a later
-- run: that run's response event records it
CREATE FUNCTION signed_report(title text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  PERFORM adk_save_artifact('signed.txt', convert_to(title, 'UTF8'), 'text/plain');
  RETURN 'signed';
END $$;
SELECT adk_define_tool('signed_report(text)'::regprocedure, require_confirmation => true);
SELECT adk_define_agent('signer', model => 'art_model', tools => ARRAY['signed_report']);
SELECT adk_define_app('sign_app', 'signer');
SELECT count(*) AS events FROM adk_run('sign_app', 'ann', 'c1', 'call signed_report({"title": "deal"})');
SELECT count(*) AS saved_before_confirmation FROM adk.artifacts WHERE app_name = 'sign_app';
SELECT count(*) AS events
  FROM adk_run('sign_app', 'ann', 'c1',
               adk_function_response((SELECT call_id FROM adk.pending_interrupts WHERE session_id = 'c1'),
                                     'adk_request_confirmation', '{"confirmed": true}'));
SELECT event_data #> '{actions,artifact_delta}' AS artifact_delta,
       event_data #> '{content,parts,0,function_response,response}' AS response
  FROM adk.events WHERE app_name = 'sign_app' AND session_id = 'c1'
   AND event_data::text LIKE '%"signed"%';
SELECT filename, version, invocation_id IS NOT NULL AS has_invocation
  FROM adk.artifacts WHERE app_name = 'sign_app';
-- after the run, the tools' form has no run again
SELECT expect_error($q$SELECT adk_save_artifact('x.txt', '\x00', 'text/plain')$q$);

-- Input blobs: with save_input_blobs_as_artifacts each inline_data part is
-- saved (display_name, else artifact_<invocation>_<i>) and replaced by a
-- placeholder: no base64 in adk.events, the artifact stored, the
-- placeholder in the prompt, the user event's artifact_delta.
SELECT adk_define_app('blob_app', 'art_agent', save_input_blobs_as_artifacts => true);
SELECT count(*) AS events FROM adk_run('blob_app', 'ann', 'b1',
  '{"role": "user", "parts": [{"text": "what is in these?"},
     {"inline_data": {"mime_type": "image/png", "data": "iVBORw0KGgo=", "display_name": "cat.png"}},
     {"inline_data": {"mime_type": "application/pdf", "data": "JVBERi0xLjQ"}}]}'::jsonb);
SELECT count(*) AS events_with_base64 FROM adk.events
 WHERE app_name = 'blob_app' AND (event_data::text LIKE '%iVBORw0KGgo%' OR event_data::text LIKE '%JVBERi0xLjQ%'
                                  OR event_data::text LIKE '%inline_data%');
SELECT regexp_replace((event_data #> '{content,parts}')::text, 'e-[0-9a-f-]+', 'e-<id>', 'g') AS parts,
       regexp_replace((event_data #> '{actions,artifact_delta}')::text, 'e-[0-9a-f-]+', 'e-<id>', 'g') AS artifact_delta
  FROM adk.events WHERE app_name = 'blob_app' AND session_id = 'b1' AND seq = 1;
SELECT regexp_replace(filename, 'e-[0-9a-f-]+', 'e-<id>') AS filename, version, mime_type, encode(data, 'hex') AS data,
       filename LIKE 'artifact_' || invocation_id || '_2' OR filename = 'cat.png' AS named_by_invocation
  FROM adk.artifacts WHERE app_name = 'blob_app' ORDER BY filename;
SELECT regexp_replace((request #> '{messages,1,content}')::text, 'e-[0-9a-f-]+', 'e-<id>', 'g') AS prompt_user_message
  FROM adk.model_calls WHERE invocation_id = (SELECT invocation_id FROM adk.events WHERE session_id = 'b1' LIMIT 1);
-- bad base64 is refused
SELECT expect_error($q$SELECT count(*) FROM adk_run('blob_app', 'ann', 'b2',
  '{"role": "user", "parts": [{"inline_data": {"mime_type": "image/png", "data": "!!!"}}]}'::jsonb)$q$);
-- without the option input blobs stay inline, as before
SELECT count(*) AS events FROM adk_run('art_app', 'ann', 'b3',
  '{"role": "user", "parts": [{"text": "look"}, {"inline_data": {"mime_type": "image/png", "data": "iVBORw0KGgo="}}]}'::jsonb);
SELECT event_data #>> '{content,parts,1,inline_data,data}' AS kept_inline
  FROM adk.events WHERE app_name = 'art_app' AND session_id = 'b3' AND seq = 1;
SELECT count(*) AS saved FROM adk.artifacts WHERE app_name = 'art_app' AND session_id = 'b3';

-- a tool that runs another app: each run records its own saves
CREATE FUNCTION nested_tool(title text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  PERFORM adk_save_artifact('outer_before.txt', convert_to(title, 'UTF8'), 'text/plain');
  PERFORM count(*) FROM adk_run('report_app', 'ann', 'inner-1', 'call make_report({"title": "inner"})');
  PERFORM adk_save_artifact('outer_after.txt', convert_to(title, 'UTF8'), 'text/plain');
  RETURN 'nested';
END $$;
SELECT adk_define_tool('nested_tool(text)'::regprocedure);
SELECT adk_define_agent('outer_agent', model => 'art_model', tools => ARRAY['nested_tool']);
SELECT adk_define_app('outer_app', 'outer_agent');
SELECT count(*) AS events FROM adk_run('outer_app', 'ann', 'outer-1', 'call nested_tool({"title": "outer"})');
SELECT app_name, session_id, event_data #> '{actions,artifact_delta}' AS artifact_delta
  FROM adk.events WHERE session_id IN ('outer-1', 'inner-1')
   AND event_data #> '{actions,artifact_delta}' <> '{}' ORDER BY app_name;
