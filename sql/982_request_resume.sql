-- A run builds each request of an agent from its previous one
-- (model/generate.c's request memo): the contents the two share are
-- not converted again, their messages are taken as they were, and the
-- adapter resumes at a content boundary (OpenAI, Gemini: any; Anthropic:
-- where no message is pending).  adk.verify_incremental (on in the test
-- clusters) builds every resumed request from scratch too and raises when
-- the two differ, so each run below checks its resumed requests; the
-- queries show what the requests held.
SHOW adk.verify_incremental;
SELECT adk_set_secret('rr98-key', 'sk-rr98', ARRAY['127.0.0.1']);
SELECT adk_define_model('rr98_openai', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'rr98-key');
SELECT adk_define_model('rr98_anthropic', 'anthropic', current_setting('adk_test.model_url'), 'claude-test',
                        api_key_secret => 'rr98-key');
SELECT adk_define_model('rr98_gemini', 'gemini', current_setting('adk_test.model_url'), 'gemini-test',
                        api_key_secret => 'rr98-key');
CREATE FUNCTION rr98_probe(n integer) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('probed', n) $$;
COMMENT ON FUNCTION rr98_probe(integer) IS 'Probe.';
SELECT adk_define_tool('rr98_probe(integer)'::regprocedure);

-- A foreign writer inside the run: step 1 stores a call of the agent made
-- by another runtime, its response not yet stored (the prompt leaves the
-- call out), step 2 its response (now both are sent, where the call was
-- stored: contents in the middle of the previous request change).  Its id
-- is an "adk-" one, which is not sent: the call and its response look like
-- the run's own, of the same length as the run's next ones, so only their
-- bytes tell them apart.  Every step sets state key "mood", which the
-- agents' instruction shows.
CREATE FUNCTION rr98_foreign(app text, s text, agent text, step integer) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  id text := 'adk-00000000-0000-4000-8000-0000000000e1';
BEGIN
  IF step = 1 THEN
    PERFORM adk_append_event(app, 'u', s, jsonb_build_object('author', agent,
      'content', jsonb_build_object('role', 'model', 'parts', jsonb_build_array(
        jsonb_build_object('text', 'Call 99.'),
        jsonb_build_object('function_call', jsonb_build_object('id', id, 'name', 'rr98_foreign',
          'args', jsonb_build_object('app', app, 's', s, 'agent', agent, 'step', 9)))))));
  ELSIF step = 2 THEN
    PERFORM adk_append_event(app, 'u', s, jsonb_build_object('author', agent,
      'content', jsonb_build_object('role', 'user', 'parts', jsonb_build_array(
        jsonb_build_object('function_response', jsonb_build_object('id', id, 'name', 'rr98_foreign',
          'response', '{"step": 9}'::jsonb))))));
  END IF;
  PERFORM adk_append_event(app, 'u', s, jsonb_build_object('author', 'user',
    'actions', jsonb_build_object('state_delta', jsonb_build_object('mood', 'step ' || step))));
  RETURN jsonb_build_object('step', step);
END $$;
COMMENT ON FUNCTION rr98_foreign(text, text, text, integer) IS 'Write as another runtime.';
SELECT adk_define_tool('rr98_foreign(text,text,text,integer)'::regprocedure);

-- Redefine model rr98_switch mid-run: one agent's next request goes to
-- another provider (the same model id), so its request memo holds a
-- request of the wrong wire format
CREATE FUNCTION rr98_switch(provider text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT adk_define_model('rr98_switch', provider,
                          current_setting('adk_test.model_url') || CASE provider WHEN 'openai' THEN '/v1' ELSE '' END,
                          'm-test', api_key_secret => 'rr98-key');
  SELECT jsonb_build_object('now', provider) $$;
COMMENT ON FUNCTION rr98_switch(text) IS 'Switch the provider.';
SELECT adk_define_tool('rr98_switch(text)'::regprocedure);
SELECT rr98_switch('openai');

-- The model's answers (after_model): a call without an id (the runner
-- gives it an "adk-" id, which is not sent: OpenAI and Anthropic get
-- "call_<n>" counted over the request) -- of rr98_foreign for the rr98_mid
-- agents, of rr98_probe for the others; rr98_root transfers to rr98_sub
-- (another provider) after two calls.
CREATE FUNCTION rr98_loop(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('content', jsonb_build_object('role', 'model', 'parts', jsonb_build_array(
           jsonb_build_object('text', 'Call ' || n || '.'),
           jsonb_build_object('function_call', CASE
             WHEN ctx ->> 'agent' LIKE 'rr98_mid%' THEN
               jsonb_build_object('name', 'rr98_foreign', 'args', jsonb_build_object(
                 'app', ctx ->> 'app_name', 's', ctx ->> 'session_id', 'agent', ctx ->> 'agent',
                 'step', mine / 2 + 1))
             WHEN ctx ->> 'agent' = 'rr98_sw' THEN
               jsonb_build_object('name', 'rr98_switch', 'args', jsonb_build_object(
                 'provider', (ARRAY['anthropic', 'gemini', 'openai'])[mine / 2 % 3 + 1]))
             WHEN ctx ->> 'agent' = 'rr98_root' AND mine >= 4 THEN
               jsonb_build_object('name', 'transfer_to_agent', 'args', '{"agent_name": "rr98_sub"}'::jsonb)
             ELSE jsonb_build_object('name', 'rr98_probe', 'args', jsonb_build_object('n', n)) END))))
    FROM (SELECT count(*)::integer AS n,
                 (count(*) FILTER (WHERE author = ctx ->> 'agent'
                                     AND invocation_id = ctx ->> 'invocation_id'))::integer AS mine
            FROM adk.event_log
           WHERE app_name = ctx ->> 'app_name' AND session_id = ctx ->> 'session_id') e $$;
SELECT adk_define_plugin('rr98_loop', after_model => 'rr98_loop(jsonb)');

SELECT adk_define_agent('rr98_oai', model => 'rr98_openai', instruction => 'You probe.',
                        tools => ARRAY['rr98_probe']);
SELECT adk_define_agent('rr98_ant', model => 'rr98_anthropic', instruction => 'You probe.',
                        tools => ARRAY['rr98_probe']);
SELECT adk_define_agent('rr98_gem', model => 'rr98_gemini', instruction => 'You probe.',
                        tools => ARRAY['rr98_probe']);
SELECT adk_define_agent('rr98_mid_oai', model => 'rr98_openai', instruction => 'Mood: {mood?}.',
                        tools => ARRAY['rr98_foreign']);
SELECT adk_define_agent('rr98_mid_ant', model => 'rr98_anthropic', instruction => 'Mood: {mood?}.',
                        tools => ARRAY['rr98_foreign']);
SELECT adk_define_agent('rr98_sub', model => 'rr98_anthropic', instruction => 'You probe too.',
                        description => 'Probes with Anthropic.', tools => ARRAY['rr98_probe']);
SELECT adk_define_agent('rr98_root', model => 'rr98_openai', instruction => 'You probe, then hand over.',
                        tools => ARRAY['rr98_probe'], sub_agents => ARRAY['rr98_sub']);
SELECT adk_define_agent('rr98_sw', model => 'rr98_switch', instruction => 'You switch.',
                        tools => ARRAY['rr98_switch']);
SELECT adk_define_app(a || '_app', a, plugins => ARRAY['rr98_loop'])
  FROM unnest(ARRAY['rr98_oai', 'rr98_ant', 'rr98_gem', 'rr98_mid_oai', 'rr98_mid_ant', 'rr98_root',
                    'rr98_sw']) a;

-- a history to start from: text, calls with and without ids and their
-- responses, another agent's turn (a user content "For context" next to
-- the user's own: Anthropic merges them into one message)
CREATE FUNCTION rr98_session(app text, agent text, s text) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE e jsonb; n integer := 0;
BEGIN
  PERFORM adk_create_session(app, 'u', s);
  FOR e IN SELECT v.e FROM (VALUES
      (1, jsonb_build_object('author', 'user', 'content',
            '{"role": "user", "parts": [{"text": "Probe twice."}]}'::jsonb)),
      (2, jsonb_build_object('author', agent, 'content',
            '{"role": "model", "parts": [{"function_call": {"name": "rr98_probe", "args": {"n": 1}}}]}'::jsonb)),
      (3, jsonb_build_object('author', agent, 'content',
            '{"role": "user", "parts": [{"function_response": {"name": "rr98_probe",
               "response": {"probed": 1}}}]}'::jsonb)),
      (4, jsonb_build_object('author', agent, 'content',
            '{"role": "model", "parts": [{"function_call": {"id": "toolu_h2", "name": "rr98_probe",
               "args": {"n": 2}}}]}'::jsonb)),
      (5, jsonb_build_object('author', agent, 'content',
            '{"role": "user", "parts": [{"function_response": {"id": "toolu_h2", "name": "rr98_probe",
               "response": {"probed": 2}}}]}'::jsonb)),
      (6, jsonb_build_object('author', 'rr98_other', 'content',
            '{"role": "model", "parts": [{"text": "I probe too."}]}'::jsonb)),
      (7, jsonb_build_object('author', 'user', 'content',
            '{"role": "user", "parts": [{"text": "And now?"}]}'::jsonb)),
      (8, jsonb_build_object('author', agent, 'content',
            '{"role": "model", "parts": [{"text": "Done."}]}'::jsonb))) v(o, e) ORDER BY o
  LOOP
    PERFORM adk_append_event(app, 'u', s, e);
    n := n + 1;
  END LOOP;
  RETURN n;
END $$;

-- the requests of a session's model calls, in order
CREATE FUNCTION rr98_requests(app text, s text) RETURNS SETOF jsonb LANGUAGE sql AS $$
  SELECT c.request
    FROM adk.model_calls c JOIN adk.invocations i USING (invocation_id)
   WHERE i.app_name = app AND i.session_id = s ORDER BY c.id $$;
CREATE FUNCTION rr98_run(app text, s text, calls integer) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM adk_run(app, 'u', s, 'Go on.', NULL, jsonb_build_object('max_llm_calls', calls)) $$;

-- Tool turns with synthesized ids: OpenAI's call_<n>, Anthropic's id-less
-- calls, Gemini's none; six calls per run, each request the previous one
-- and a call and its response more.
SELECT rr98_session(a || '_app', a, 's1') AS appended
  FROM unnest(ARRAY['rr98_oai', 'rr98_ant', 'rr98_gem']) a;
SELECT rr98_run('rr98_oai_app', 's1', 6) AS oai_events, rr98_run('rr98_ant_app', 's1', 6) AS ant_events,
       rr98_run('rr98_gem_app', 's1', 6) AS gem_events;
-- OpenAI: the ids of each request, calls and tool messages
SELECT ord, jsonb_array_length(r -> 'messages') AS messages,
       jsonb_path_query_array(r, '$.messages[*].tool_calls[*].id') AS call_ids,
       jsonb_path_query_array(r, '$.messages[*] ? (@.role == "tool").tool_call_id') AS answered
  FROM rr98_requests('rr98_oai_app', 's1') WITH ORDINALITY x(r, ord) ORDER BY ord;
-- Anthropic: roles (the merged user message) and ids
SELECT ord, jsonb_path_query_array(r, '$.messages[*].role') AS roles,
       jsonb_path_query_array(r, '$.messages[*].content[*] ? (@.type == "tool_use").id') AS call_ids,
       jsonb_path_query_array(r, '$.messages[*].content[*] ? (@.type == "tool_result").tool_use_id') AS result_ids
  FROM rr98_requests('rr98_ant_app', 's1') WITH ORDINALITY x(r, ord) ORDER BY ord;
SELECT ord, jsonb_array_length(r -> 'contents') AS contents,
       jsonb_array_length(jsonb_path_query_array(r, '$.contents[*].parts[*].functionCall')) AS calls,
       jsonb_array_length(jsonb_path_query_array(r, '$.contents[*].parts[*].functionResponse')) AS responses
  FROM rr98_requests('rr98_gem_app', 's1') WITH ORDINALITY x(r, ord) ORDER BY ord;

-- A content in the middle changes, and so does the system instruction:
-- the foreign call is left out while it has no response, then sent with
-- it where it was stored (between the run's earlier calls: the contents
-- differ from the previous request's in the middle); "mood" changes at
-- every call.
SELECT rr98_session(a || '_app', a, 'm1') AS appended
  FROM unnest(ARRAY['rr98_mid_oai', 'rr98_mid_ant']) a;
SELECT rr98_run('rr98_mid_oai_app', 'm1', 4) AS oai_events, rr98_run('rr98_mid_ant_app', 'm1', 4) AS ant_events;
SELECT ord, split_part(r #>> '{messages,0,content}', E'\n', 1) AS system,
       jsonb_path_query_array(r, '$.messages[*].tool_calls[*].id') AS call_ids,
       jsonb_path_query_array(r, '$.messages[*] ? (@.role == "tool").tool_call_id') AS answered
  FROM rr98_requests('rr98_mid_oai_app', 'm1') WITH ORDINALITY x(r, ord) ORDER BY ord;
-- the calls and responses of the last request: the foreign ones (step 9)
-- among the run's
SELECT jsonb_path_query_array(r, '$.messages[*] ? (@.role == "assistant").content') AS texts,
       jsonb_path_query_array(r, '$.messages[*] ? (@.role == "tool").content') AS responses
  FROM rr98_requests('rr98_mid_oai_app', 'm1') WITH ORDINALITY x(r, ord) ORDER BY ord DESC LIMIT 1;
SELECT ord, split_part(r ->> 'system', E'\n', 1) AS system, jsonb_path_query_array(r, '$.messages[*].role') AS roles,
       jsonb_path_query_array(r, '$.messages[*].content[*] ? (@.type == "tool_use").id') AS call_ids,
       jsonb_path_query_array(r, '$.messages[*].content[*] ? (@.type == "tool_result").tool_use_id') AS result_ids
  FROM rr98_requests('rr98_mid_ant_app', 'm1') WITH ORDINALITY x(r, ord) ORDER BY ord;

-- An agent transfer to an agent of another provider in one run: OpenAI's
-- requests, then Anthropic's (each agent resumes its own requests only).
SELECT rr98_session('rr98_root_app', 'rr98_root', 't1') AS appended;
SELECT rr98_run('rr98_root_app', 't1', 6) AS events;
SELECT ord, r ->> 'model' AS model, jsonb_array_length(r -> 'messages') AS messages,
       jsonb_path_query_array(r, '$.messages[*].tool_calls[*].function.name') AS oai_calls,
       jsonb_path_query_array(r, '$.messages[*].tool_calls[*].id') AS oai_ids,
       jsonb_path_query_array(r, '$.messages[*].content[*] ? (@.type == "tool_use").id') AS ant_ids,
       jsonb_path_query_array(r, '$.messages[*].content[*] ? (@.type == "tool_result").tool_use_id') AS ant_results
  FROM rr98_requests('rr98_root_app', 't1') WITH ORDINALITY x(r, ord) ORDER BY ord;

-- One agent whose model changes provider between its calls (a tool
-- redefines it): a request is resumed only from one of the same provider
-- and model.
SELECT rr98_session('rr98_sw_app', 'rr98_sw', 'p1') AS appended;
SELECT rr98_run('rr98_sw_app', 'p1', 5) AS events;
SELECT ord, c.provider, c.request ? 'messages' AS has_messages, c.request ? 'contents' AS has_contents,
       coalesce(jsonb_array_length(c.request -> 'messages'), jsonb_array_length(c.request -> 'contents')) AS items
  FROM (SELECT c.*, row_number() OVER (ORDER BY c.id) AS ord
          FROM adk.model_calls c JOIN adk.invocations i USING (invocation_id)
         WHERE i.app_name = 'rr98_sw_app' AND i.session_id = 'p1') c ORDER BY ord;
