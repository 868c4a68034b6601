-- Structured output of an agent used as a tool (docs/models.md,
-- "Structured output"): the agent-tool's one model call declares no
-- tools, so its output_schema goes natively for OpenAI (response_format)
-- and Gemini (responseSchema), and into the system instruction for
-- Anthropic.  A valid answer is the function response as ADK Python's
-- AgentTool makes it -- the parsed object, null-valued properties dropped,
-- a value that is not an object as {"result": value}; an invalid one is
-- the function response's error, never a result; thought parts are not
-- the answer.  The request bodies are read as the local model server
-- received them.
SELECT adk_set_secret('sat-key', 'sk-sat', ARRAY['127.0.0.1']);
SELECT adk_define_model(n, p, current_setting('adk_test.model_url') || CASE p WHEN 'openai' THEN '/v1' ELSE '' END,
                        m, api_key_secret => 'sat-key', options => '{"retries": 0}')
  FROM (VALUES ('sat_gpt', 'openai', 'gpt-sat'), ('sat_gemini', 'gemini', 'gemini-sat'),
               ('sat_claude', 'anthropic', 'claude-sat')) AS d(n, p, m);

-- what the server saw: the last n requests' bodies, oldest first
CREATE TEMP TABLE sat_lines (line text);
CREATE FUNCTION pg_temp.requests(n integer) RETURNS SETOF jsonb LANGUAGE plpgsql AS $$
DECLARE
    j jsonb;
BEGIN
    TRUNCATE sat_lines;
    EXECUTE format($c$COPY sat_lines FROM PROGRAM %L WITH (FORMAT csv, QUOTE E'\x01', DELIMITER E'\x02')$c$,
                   'curl -s ' || current_setting('adk_test.model_url') || '/_requests');
    SELECT string_agg(line, E'\n')::jsonb INTO j FROM sat_lines;
    RETURN QUERY SELECT r -> 'body' FROM jsonb_array_elements(j) WITH ORDINALITY AS x(r, i)
                  WHERE i > jsonb_array_length(j) - n ORDER BY i;
END
$$;
-- the names of a request's tools, whichever the provider
CREATE FUNCTION pg_temp.tool_names(b jsonb) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg(coalesce(t -> 'function' ->> 'name', t ->> 'name', d ->> 'name'), ', '), '-')
      FROM jsonb_array_elements(coalesce(b -> 'tools', '[]')) t
      LEFT JOIN LATERAL jsonb_array_elements(coalesce(t -> 'functionDeclarations', '[]')) d ON true
     WHERE coalesce(t -> 'function' ->> 'name', t ->> 'name', d ->> 'name') IS NOT NULL
$$;
-- the function responses of a session, in order
CREATE FUNCTION pg_temp.responses(a text, s text) RETURNS TABLE (name text, response jsonb)
LANGUAGE sql AS $$
    SELECT p -> 'function_response' ->> 'name', p -> 'function_response' -> 'response'
      FROM adk.events e, jsonb_array_elements(e.event_data -> 'content' -> 'parts') p
     WHERE e.app_name = a AND e.session_id = s AND p ? 'function_response'
     ORDER BY e.seq
$$;

CREATE TYPE sat_contact AS (name text, email text);
-- one desk per provider, each used as a tool by a caller of its own
CREATE TEMP TABLE sat_cases (p text, model text);
INSERT INTO sat_cases VALUES ('gpt', 'sat_gpt'), ('gemini', 'sat_gemini'), ('claude', 'sat_claude');
SELECT adk_define_agent('sat_desk_' || p, model => model, instruction => 'Extract the contact.',
                        description => 'Extracts a contact.',
                        output_schema => adk_json_schema('sat_contact'::regtype))
  FROM sat_cases;
SELECT adk_define_agent('sat_caller_' || p, model => model, instruction => 'Use the desk.',
                        tools => ARRAY['sat_desk_' || p])
  FROM sat_cases;
SELECT adk_define_app('sat_' || p, 'sat_caller_' || p) FROM sat_cases;

-- ---------------------------------------------------------------------
-- 1. the agent-tool's request: the schema natively (OpenAI, Gemini), in
--    the system instruction (Anthropic); no tools declared
-- ---------------------------------------------------------------------
CREATE TEMP TABLE sat_seen (p text, body jsonb);
DO $$
DECLARE
    c record;
BEGIN
    FOR c IN SELECT * FROM sat_cases LOOP
        PERFORM count(*) FROM adk_run('sat_' || c.p, 'u', 's1',
            'call sat_desk_' || c.p || '({"request": "[[say:{\"name\": \"Ann\", \"email\": \"ann@example.com\"}]]"})');
        -- the caller's call, the desk's, the caller's answer: the second
        INSERT INTO sat_seen SELECT c.p, b FROM pg_temp.requests(3) WITH ORDINALITY AS r(b, i) WHERE i = 2;
    END LOOP;
END
$$;
SELECT p,
       coalesce(body #>> '{response_format,type}', '-') AS openai_format,
       coalesce(body #>> '{response_format,json_schema,strict}', '-') AS strict,
       coalesce(body #>> '{generationConfig,responseMimeType}', '-') AS gemini_mime,
       coalesce((SELECT string_agg(k, ',') FROM jsonb_object_keys(body -> 'generationConfig') k
                  WHERE k LIKE 'response%Schema'), '-') AS gemini_schema,
       pg_temp.tool_names(body) AS tools
  FROM sat_seen ORDER BY p;
-- the schema sent is the desk's, whole
SELECT p, coalesce(body #> '{response_format,json_schema,schema}',
                   body #> '{generationConfig,responseJsonSchema}',
                   body #> '{generationConfig,responseSchema}') = adk_json_schema('sat_contact'::regtype) AS whole
  FROM sat_seen WHERE p <> 'claude' ORDER BY p;
-- Anthropic: the desk's instruction, then the schema
SELECT body ->> 'system' AS system FROM sat_seen WHERE p = 'claude';
-- OpenAI, Gemini: the desk's instruction as it is
SELECT p, coalesce(body #>> '{systemInstruction,parts,0,text}', body #>> '{messages,0,content}') AS system
  FROM sat_seen WHERE p <> 'claude' ORDER BY p;

-- ---------------------------------------------------------------------
-- 2. a valid answer: the parsed object is the function response
-- ---------------------------------------------------------------------
SELECT c.p, r.name, r.response, jsonb_typeof(r.response -> 'name') AS name_type
  FROM sat_cases c, pg_temp.responses('sat_' || c.p, 's1') r ORDER BY c.p;
-- the calling model got the object as the tool's result
SELECT count(*) FROM adk_run('sat_gpt', 'u', 's2',
    'call sat_desk_gpt({"request": "[[say:{\"name\": \"Bo\", \"email\": \"bo@example.com\"}]]"})');
SELECT b -> 'messages' -> -1 ->> 'role' AS role, (b -> 'messages' -> -1 ->> 'content')::jsonb AS content
  FROM pg_temp.requests(1) b;
-- without an answer scripted, the server answers a value of the schema
-- it was sent: natively asked, it fits
SELECT count(*) FROM adk_run('sat_gemini', 'u', 's2', 'call sat_desk_gemini({"request": "Ann, ann@example.com"})');
SELECT name, response ? 'name' AND response ? 'email' AS fits, response ? 'error' AS error
  FROM pg_temp.responses('sat_gemini', 's2');

-- ---------------------------------------------------------------------
-- 3. an invalid answer: the function response's error, never a result;
--    the calling model sees it, and the run goes on
-- ---------------------------------------------------------------------
SELECT count(*) FROM adk_run('sat_gpt', 'u', 's3',
    'call sat_desk_gpt({"request": "[[say:{\"name\": \"Cy\"}]]"})');
SELECT name, response FROM pg_temp.responses('sat_gpt', 's3');
SELECT count(*) FROM adk_run('sat_claude', 'u', 's3', 'call sat_desk_claude({"request": "Cy, cy@example.com"})');
SELECT name, response FROM pg_temp.responses('sat_claude', 's3');
SELECT count(*) FROM adk_run('sat_gemini', 'u', 's3',
    'call sat_desk_gemini({"request": "[[say:{\"name\": \"Cy\", \"email\": 7}]]"})');
SELECT name, response FROM pg_temp.responses('sat_gemini', 's3');
-- the calling model (one request after the desk's) read the error
SELECT b -> 'contents' -> -1 -> 'parts' -> 0 -> 'functionResponse' -> 'response' AS response
  FROM pg_temp.requests(1) b;
-- an answer without text: the desk calls a tool it was not given (the
-- JSON escape keeps the directive the desk's alone)
SELECT count(*) FROM adk_run('sat_gpt', 'u', 's5', 'call sat_desk_gpt({"request": "call\u0021 sat_lookup({})"})');
SELECT name, response FROM pg_temp.responses('sat_gpt', 's5');
SELECT app_name, session_id, status, error_code FROM adk.invocations
 WHERE app_name LIKE 'sat\_%' AND session_id IN ('s3', 's5') ORDER BY app_name, session_id;
-- an agent-tool's invalid answer is not the agent's own retry: no
-- correction event, no second call of the desk
SELECT count(*) AS corrections FROM adk.events
 WHERE app_name LIKE 'sat\_%' AND event_data ? 'custom_metadata'
   AND event_data -> 'custom_metadata' ? 'adk_output_schema_correction';
SELECT i.app_name, count(*) FILTER (WHERE m.request ? 'tools') AS caller_calls,
       count(*) FILTER (WHERE NOT m.request ? 'tools') AS desk_calls
  FROM adk.model_calls m JOIN adk.invocations i USING (invocation_id)
 WHERE i.app_name LIKE 'sat\_%' AND i.session_id = 's3' GROUP BY i.app_name ORDER BY i.app_name;

-- ---------------------------------------------------------------------
-- 4. null-valued properties dropped (ADK's exclude_none); a schema that
--    is not an object: {"result": value}
-- ---------------------------------------------------------------------
SELECT adk_define_agent('sat_open', model => 'sat_gpt', description => 'Open answer.',
                        output_schema => '{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": ["string", "null"]}, "c": {"type": "object"}}, "required": ["a", "b"]}');
SELECT adk_define_agent('sat_list', model => 'sat_claude', description => 'Tags.',
                        output_schema => '{"type": "array", "items": {"type": "string"}}');
SELECT adk_define_agent('sat_caller_more', model => 'sat_gpt', tools => ARRAY['sat_open', 'sat_list']);
SELECT adk_define_app('sat_more', 'sat_caller_more');
SELECT count(*) FROM adk_run('sat_more', 'u', 's1',
    'call sat_open({"request": "[[say:{\"a\": 1, \"b\": null, \"c\": {\"d\": null, \"e\": [null, 2]}}]]"}) '
    'call sat_list({"request": "[[say:[\"x\", \"y\"] ]]"})');
SELECT name, response FROM pg_temp.responses('sat_more', 's1');
-- the list agent's request (Anthropic): its schema in the instruction
SELECT b ->> 'system' AS system FROM pg_temp.requests(3) WITH ORDINALITY AS r(b, i)
 WHERE b -> 'messages' -> 0 ->> 'content' LIKE '%"x", "y"%'
    OR b -> 'messages' -> 0 -> 'content' -> 0 ->> 'text' LIKE '%"x", "y"%';

-- ---------------------------------------------------------------------
-- 5. thought parts are not the answer: a thinking desk (Gemini with its
--    thoughts included, Anthropic's thinking blocks) answers after a
--    thought; only the answer is parsed
-- ---------------------------------------------------------------------
SELECT adk_define_agent('sat_desk_' || p, model => model, instruction => 'Extract the contact.',
                        description => 'Extracts a contact.',
                        generate_config => CASE p WHEN 'gemini' THEN '{"thinking": {"budget_tokens": 512, "include_thoughts": true}}'
                                                  ELSE '{"thinking": {"budget_tokens": 2048}}' END::jsonb,
                        output_schema => adk_json_schema('sat_contact'::regtype))
  FROM sat_cases WHERE p IN ('gemini', 'claude');
DO $$
DECLARE
    c record;
BEGIN
    FOR c IN SELECT * FROM sat_cases WHERE p IN ('gemini', 'claude') LOOP
        PERFORM count(*) FROM adk_run('sat_' || c.p, 'u', 's4',
            'call sat_desk_' || c.p || '({"request": "[[say:{\"name\": \"Di\", \"email\": \"di@example.com\"}]]"})');
    END LOOP;
END
$$;
SELECT c.p, r.name, r.response
  FROM sat_cases c, pg_temp.responses('sat_' || c.p, 's4') r WHERE c.p IN ('gemini', 'claude') ORDER BY c.p;
-- the desks' answers had a thought first
SELECT m.model, jsonb_path_query_array(m.response, '$.content.parts[*].thought') AS thought_flags
  FROM adk.model_calls m JOIN adk.invocations i USING (invocation_id)
 WHERE i.app_name IN ('sat_gemini', 'sat_claude') AND i.session_id = 's4' AND NOT m.request ? 'tools'
 ORDER BY m.model;

-- later files list every definition: take this file's away
DELETE FROM adk.apps WHERE name LIKE 'sat\_%';
DELETE FROM adk.agents WHERE name LIKE 'sat\_%';
DELETE FROM adk.models WHERE name LIKE 'sat\_%';
DROP TYPE sat_contact;
