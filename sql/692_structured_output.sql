-- Structured output (docs/models.md, "Structured output"): a chat or
-- single_turn agent's output_schema is the shape of its answer.  It is
-- sent natively where the model can (OpenAI's json_schema response
-- format, Gemini's response schema with the JSON MIME type), through
-- ADK's set_model_response tool where adk.models.capabilities says the
-- model cannot combine it with tools, and always for Anthropic.  Each
-- answer is checked in C; an invalid one goes back to the model (a
-- user-role correction, or the tool's error) at most twice in an
-- invocation, then is the error OUTPUT_SCHEMA_INVALID -- never the output.
-- The request bodies are read as the local model server received them.
SELECT adk_set_secret('so-key', 'sk-so', ARRAY['127.0.0.1']);
SELECT adk_define_model(n, p, current_setting('adk_test.model_url') || CASE p WHEN 'openai' THEN '/v1' ELSE '' END,
                        m, api_key_secret => 'so-key', options => '{"retries": 0}')
  FROM (VALUES ('so_gpt', 'openai', 'gpt-so'), ('so_gemini', 'gemini', 'gemini-so'),
               ('so_claude', 'anthropic', 'claude-so')) AS d(n, p, m);

-- what the server saw: the last n requests' bodies, oldest first
CREATE TEMP TABLE so_lines (line text);
CREATE FUNCTION pg_temp.requests(n integer) RETURNS SETOF jsonb LANGUAGE plpgsql AS $$
DECLARE
    j jsonb;
BEGIN
    TRUNCATE so_lines;
    EXECUTE format($c$COPY so_lines FROM PROGRAM %L WITH (FORMAT csv, QUOTE E'\x01', DELIMITER E'\x02')$c$,
                   'curl -s ' || current_setting('adk_test.model_url') || '/_requests');
    SELECT string_agg(line, E'\n')::jsonb INTO j FROM so_lines;
    RETURN QUERY SELECT r -> 'body' FROM jsonb_array_elements(j) WITH ORDINALITY AS x(r, i)
                  WHERE i > jsonb_array_length(j) - n ORDER BY i;
END
$$;
CREATE FUNCTION pg_temp.last_body() RETURNS jsonb LANGUAGE sql AS $$ SELECT pg_temp.requests(1) $$;
-- the names of a request's tools, whichever the provider
CREATE FUNCTION pg_temp.tool_names(b jsonb) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg(coalesce(t -> 'function' ->> 'name', t ->> 'name', d ->> 'name'), ', '), '-')
      FROM jsonb_array_elements(coalesce(b -> 'tools', '[]')) t
      LEFT JOIN LATERAL jsonb_array_elements(coalesce(t -> 'functionDeclarations', '[]')) d ON true
     WHERE coalesce(t -> 'function' ->> 'name', t ->> 'name', d ->> 'name') IS NOT NULL
$$;
-- the session's events, one line per part
CREATE FUNCTION pg_temp.events(a text, s text) RETURNS TABLE (author text, role text, part text)
LANGUAGE sql AS $$
    SELECT e.event_data ->> 'author', e.event_data -> 'content' ->> 'role',
           coalesce(e.event_data ->> 'error_code' || ': ' || (e.event_data ->> 'error_message'),
                    p -> 'function_call' ->> 'name' || (p -> 'function_call' -> 'args')::text,
                    p -> 'function_response' ->> 'name' || ' -> ' || (p -> 'function_response' -> 'response')::text,
                    p ->> 'text')
      FROM adk.events e
      LEFT JOIN LATERAL jsonb_array_elements(e.event_data -> 'content' -> 'parts') p ON true
     WHERE e.app_name = a AND e.session_id = s
     ORDER BY e.seq
$$;

-- ---------------------------------------------------------------------
-- 1. adk_json_schema: a composite type's schema; what it cannot map
-- ---------------------------------------------------------------------
CREATE SCHEMA so_app;
CREATE TYPE so_app.priority AS ENUM ('low', 'high');
CREATE DOMAIN so_app.hours AS numeric CHECK (VALUE >= 0);
CREATE TYPE so_app.contact AS (name text, email varchar(80));
CREATE TYPE so_app.ticket AS (title text, priority so_app.priority, estimate so_app.hours,
                              tags text[], urgent boolean, reporter so_app.contact, due date,
                              seats int4);
CREATE TABLE so_app.tickets OF so_app.ticket;
SELECT jsonb_pretty(adk_json_schema('so_app.ticket'::regtype));
SELECT adk_json_schema('int8'::regtype) AS int8, adk_json_schema('text[]'::regtype) AS text_array,
       adk_json_schema('jsonb'::regtype) AS jsonb;
CREATE TYPE so_app.bad AS (title text, place point);
SELECT expect_error($$SELECT adk_json_schema('so_app.bad'::regtype)$$);
SELECT expect_error($$SELECT adk_json_schema('bytea[]'::regtype)$$);
SELECT expect_error($$SELECT adk_json_schema('record'::regtype)$$);
CREATE TYPE so_app.empty AS ();
SELECT expect_error($$SELECT adk_json_schema('so_app.empty'::regtype)$$);

-- ---------------------------------------------------------------------
-- 2. adk.models.capabilities: set by adk_define_capabilities, checked
-- ---------------------------------------------------------------------
SELECT name, capabilities FROM adk.models WHERE name LIKE 'so\_%' ORDER BY name;
SELECT expect_error($$SELECT adk_define_capabilities('so_gpt', '{"output_schema_with_tool": false}')$$);
SELECT expect_error($$SELECT adk_define_capabilities('so_gpt', '{"output_schema_with_tools": "no"}')$$);
SELECT expect_error($$SELECT adk_define_capabilities('so_gpt', '[]')$$);
SELECT expect_error($$SELECT adk_define_capabilities('so_nope', '{}')$$);
SELECT expect_error($$UPDATE adk.models SET capabilities = '{"x": 1}' WHERE name = 'so_gpt'$$);
SELECT adk_define_model('so_gpt_no_mix', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-so',
                        api_key_secret => 'so-key', options => '{"retries": 0}');
SELECT adk_define_capabilities('so_gpt_no_mix', '{"output_schema_with_tools": false}');
SELECT adk_define_model('so_gemini_tools', 'gemini', current_setting('adk_test.model_url'), 'gemini-so',
                        api_key_secret => 'so-key', options => '{"retries": 0}');
SELECT adk_define_capabilities('so_gemini_tools', '{"output_schema_with_tools": true}');
SELECT name, capabilities FROM adk.model_definitions WHERE name LIKE 'so\_%' ORDER BY name;
-- adk_define_model leaves them as they are
SELECT adk_define_model('so_gpt_no_mix', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-so',
                        api_key_secret => 'so-key', options => '{"retries": 0}');
SELECT capabilities FROM adk.models WHERE name = 'so_gpt_no_mix';

-- ---------------------------------------------------------------------
-- 3. a chat agent may have an output_schema (not an input_schema)
-- ---------------------------------------------------------------------
CREATE FUNCTION so_lookup(q text) RETURNS jsonb LANGUAGE sql AS $$ SELECT jsonb_build_object('found', q) $$;
SELECT adk_define_tool('so_lookup(text)'::regprocedure);
SELECT adk_define_agent('so_plain', model => 'so_gpt', output_key => 'ticket',
                        output_schema => adk_json_schema('so_app.ticket'::regtype));
SELECT expect_error($$SELECT adk_define_agent('so_bad', model => 'so_gpt', input_schema => '{"type": "object"}')$$);
SELECT mode, output_schema -> 'required' AS required FROM adk.agents WHERE name = 'so_plain';

-- ---------------------------------------------------------------------
-- 4. native or set_model_response, by provider and capability
-- ---------------------------------------------------------------------
CREATE TEMP TABLE so_answer AS
SELECT '{"title": "Printer jam", "priority": "high", "estimate": 1.5, "tags": ["printer", "office"], "urgent": true, "reporter": {"name": "Ann", "email": "ann@example.com"}, "due": "2026-12-24", "seats": 2}'::text AS a;
CREATE TEMP TABLE so_cases (app text, model text, tools text[]);
INSERT INTO so_cases VALUES
    ('so_gpt_plain', 'so_gpt', '{}'), ('so_gpt_tools', 'so_gpt', '{so_lookup}'),
    ('so_gpt_no_mix_tools', 'so_gpt_no_mix', '{so_lookup}'), ('so_gpt_no_mix_plain', 'so_gpt_no_mix', '{}'),
    ('so_gemini_plain', 'so_gemini', '{}'), ('so_gemini_tools', 'so_gemini', '{so_lookup}'),
    ('so_gemini_cap_tools', 'so_gemini_tools', '{so_lookup}'),
    ('so_claude_plain', 'so_claude', '{}'), ('so_claude_tools', 'so_claude', '{so_lookup}');
SELECT adk_define_agent(app || '_agent', model => model, tools => tools, output_key => 'ticket',
                        output_schema => adk_json_schema('so_app.ticket'::regtype))
  FROM so_cases;
SELECT adk_define_app(app, app || '_agent') FROM so_cases;
-- each app asked once: what its request carried
CREATE TEMP TABLE so_seen (app text, body jsonb);
DO $$
DECLARE
    c record;
BEGIN
    FOR c IN SELECT * FROM so_cases LOOP
        PERFORM count(*) FROM adk_run(c.app, 'u', 's1', 'hello');
        INSERT INTO so_seen SELECT c.app, pg_temp.last_body();
    END LOOP;
END
$$;
SELECT app,
       coalesce(body #>> '{response_format,type}', '-') AS openai_format,
       coalesce(body #>> '{response_format,json_schema,name}', '-') AS schema_name,
       coalesce(body #>> '{response_format,json_schema,strict}', '-') AS strict,
       coalesce(body #>> '{generationConfig,responseMimeType}', '-') AS gemini_mime,
       coalesce((SELECT string_agg(k, ',') FROM jsonb_object_keys(body -> 'generationConfig') k
                  WHERE k LIKE 'response%Schema'), '-') AS gemini_schema,
       pg_temp.tool_names(body) AS tools
  FROM so_seen ORDER BY app;
-- the schema sent is the agent's, whole
SELECT app FROM so_seen
 WHERE coalesce(body #> '{response_format,json_schema,schema}', body #> '{generationConfig,responseJsonSchema}')
       IS DISTINCT FROM adk_json_schema('so_app.ticket'::regtype)
   AND (body ? 'response_format' OR body ? 'generationConfig');
-- set_model_response: ADK's declaration (the schema as its parameters)
-- and ADK's instruction
SELECT t ->> 'name' AS name, t ->> 'description' AS description,
       t -> 'input_schema' = adk_json_schema('so_app.ticket'::regtype) AS schema_is_parameters
  FROM so_seen, jsonb_array_elements(body -> 'tools') t
 WHERE app = 'so_claude_tools' AND t ->> 'name' = 'set_model_response';
SELECT right(body ->> 'system', 120) AS system_end FROM so_seen WHERE app = 'so_claude_tools';
SELECT (SELECT coalesce(d -> 'parameters', d -> 'parametersJsonSchema') = adk_json_schema('so_app.ticket'::regtype)
          FROM jsonb_array_elements(body #> '{tools,0,functionDeclarations}') d
         WHERE d ->> 'name' = 'set_model_response') AS gemini_parameters
  FROM so_seen WHERE app = 'so_gemini_tools';
-- adk_prompt shows the request as a run makes it
SELECT adk_prompt('so_gpt_plain', 'u', 's1') #> '{response_format,json_schema,strict}' AS gpt_strict,
       pg_temp.tool_names(adk_prompt('so_claude_tools', 'u', 's1')) AS claude_tools;
-- the server answers a response format with a value of its schema: the
-- natively asked answers were taken (output_key holds a jsonb object);
-- the others were texts, each corrected twice, then OUTPUT_SCHEMA_INVALID
SELECT c.app, jsonb_typeof(s.state -> 'ticket') AS ticket,
       (SELECT count(*) FROM pg_temp.events(c.app, 's1') x WHERE x.author <> 'user' AND x.role = 'user') AS corrections,
       i.status, i.error_code
  FROM so_cases c JOIN adk.sessions s ON s.app_name = c.app AND s.id = 's1'
  JOIN adk.invocations i ON i.app_name = c.app AND i.session_id = 's1'
 ORDER BY c.app;
-- with set_model_response, a text answer is asked to call it
SELECT DISTINCT part AS correction FROM pg_temp.events('so_claude_plain', 's1')
 WHERE author <> 'user' AND role = 'user';

-- ---------------------------------------------------------------------
-- 5. an answer that fits: the event keeps the text, output_key the value
-- ---------------------------------------------------------------------
SELECT count(*) FROM so_answer, adk_run('so_gpt_plain', 'u', 's2', '[[say:' || a || ']]');
SELECT author, role, part FROM pg_temp.events('so_gpt_plain', 's2');
SELECT jsonb_typeof(state -> 'ticket') AS type, state -> 'ticket' -> 'reporter' AS reporter
  FROM adk.sessions WHERE app_name = 'so_gpt_plain' AND id = 's2';
-- ... and goes into a table as a row
INSERT INTO so_app.tickets
SELECT (jsonb_populate_record(NULL::so_app.ticket, state -> 'ticket')).*
  FROM adk.sessions WHERE app_name = 'so_gpt_plain' AND id = 's2';
SELECT title, priority, estimate, tags, urgent, (reporter).email, due, seats FROM so_app.tickets;

-- ---------------------------------------------------------------------
-- 6. an invalid answer fed back, then accepted
-- ---------------------------------------------------------------------
-- natively: the model event keeps the wrong text, a user-role correction
-- follows it, and the next request carries both
SELECT count(*) FROM so_answer,
       adk_run('so_gemini_plain', 'u', 's3', '[[script:{"title": "Jam"}||' || a || ']]');
SELECT author, role, left(part, 150) AS part FROM pg_temp.events('so_gemini_plain', 's3');
SELECT jsonb_path_query_array(b, '$.contents[*].role') AS roles,
       b #>> '{contents,2,parts,0,text}' AS correction
  FROM pg_temp.requests(1) b;
SELECT state -> 'ticket' ->> 'title' AS title FROM adk.sessions WHERE app_name = 'so_gemini_plain' AND id = 's3';
SELECT event_data -> 'custom_metadata' AS custom_metadata
  FROM adk.events WHERE app_name = 'so_gemini_plain' AND session_id = 's3'
   AND event_data -> 'content' ->> 'role' = 'user' AND event_data ->> 'author' <> 'user';
-- through set_model_response: the tool's error response, then the call
-- that fits, its response, and the final event with the value as JSON
SELECT count(*) FROM so_answer,
       adk_run('so_claude_tools', 'u', 's3',
               '[[script:call set_model_response({"title": "Jam", "urgent": "yes"})||call set_model_response(' || a || ')]]');
SELECT author, role, left(part, 120) AS part FROM pg_temp.events('so_claude_tools', 's3');
SELECT jsonb_typeof(state -> 'ticket') AS type, state -> 'ticket' ->> 'priority' AS priority
  FROM adk.sessions WHERE app_name = 'so_claude_tools' AND id = 's3';
-- the second request carried the error as the tool's result
SELECT m ->> 'role' AS role, c ->> 'type' AS type, c ->> 'is_error' AS is_error, left(c ->> 'content', 110) AS content
  FROM pg_temp.requests(2) WITH ORDINALITY AS r(b, i), jsonb_array_elements(b -> 'messages') m,
       jsonb_array_elements(CASE jsonb_typeof(m -> 'content') WHEN 'array' THEN m -> 'content' END) c
 WHERE i = 2 AND c ->> 'type' = 'tool_result';

-- ---------------------------------------------------------------------
-- 7. the retry limit: three wrong answers, the third an error event; no
--    output, no state
-- ---------------------------------------------------------------------
SELECT count(*) FROM adk_run('so_gpt_plain', 'u', 's4', '[[script:not json at all]]');
SELECT author, role, left(part, 150) AS part FROM pg_temp.events('so_gpt_plain', 's4');
SELECT state ? 'ticket' AS has_ticket FROM adk.sessions WHERE app_name = 'so_gpt_plain' AND id = 's4';
SELECT status, error_code FROM adk.invocations WHERE app_name = 'so_gpt_plain' AND session_id = 's4';
-- through the tool: the third wrong call ends the invocation
SELECT count(*) FROM adk_run('so_claude_tools', 'u', 's4', '[[script:call set_model_response({"title": 1})]]');
SELECT author, role, left(part, 150) AS part FROM pg_temp.events('so_claude_tools', 's4');
SELECT state ? 'ticket' AS has_ticket FROM adk.sessions WHERE app_name = 'so_claude_tools' AND id = 's4';
-- the count starts again with each invocation; nested values are
-- checked, and a closed object takes no other property
SELECT count(*) FROM so_answer,
       adk_run('so_gpt_plain', 'u', 's4', '[[script:' || (a::jsonb || '{"reporter": {"name": "Ann", "email": 7}}')::text ||
                                          '||' || (a::jsonb || '{"colour": "red"}')::text || '||' || a || ']]');
SELECT author, role, left(part, 120) AS part FROM pg_temp.events('so_gpt_plain', 's4') OFFSET 8;
SELECT jsonb_typeof(state -> 'ticket') AS ticket FROM adk.sessions WHERE app_name = 'so_gpt_plain' AND id = 's4';

-- ---------------------------------------------------------------------
-- 8. a tool round first, then the structured answer (native with tools)
-- ---------------------------------------------------------------------
SELECT count(*) FROM so_answer,
       adk_run('so_gpt_tools', 'u', 's5', '[[script:call so_lookup({"q": "jam"})||' || a || ']]');
SELECT author, role, left(part, 80) AS part FROM pg_temp.events('so_gpt_tools', 's5');
SELECT b ? 'response_format' AS format, pg_temp.tool_names(b) AS tools FROM pg_temp.requests(2) b;
SELECT state -> 'ticket' ->> 'title' AS title FROM adk.sessions WHERE app_name = 'so_gpt_tools' AND id = 's5';

-- ---------------------------------------------------------------------
-- 9. a schema that is not an object: set_model_response takes
--    {response: value}; the response is {"result": value}
-- ---------------------------------------------------------------------
SELECT adk_define_agent('so_list_agent', model => 'so_claude', output_key => 'tags',
                        output_schema => '{"type": "array", "items": {"type": "string"}}');
SELECT adk_define_app('so_list', 'so_list_agent');
SELECT count(*) FROM adk_run('so_list', 'u', 's1', '[[script:call set_model_response({"response": ["a", "b"]})]]');
SELECT author, role, part FROM pg_temp.events('so_list', 's1');
SELECT state -> 'tags' AS tags FROM adk.sessions WHERE app_name = 'so_list' AND id = 's1';
SELECT t -> 'input_schema' AS parameters FROM pg_temp.requests(1) b, jsonb_array_elements(b -> 'tools') t;

-- ---------------------------------------------------------------------
-- 10. OpenAI's strict mode only for a schema it takes: a hand-written
--     schema with an optional property goes non-strict
-- ---------------------------------------------------------------------
SELECT adk_define_agent('so_loose_agent', model => 'so_gpt', output_key => 'loose',
                        output_schema => '{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string", "enum": ["x", "y"]}}, "required": ["a"]}');
SELECT adk_define_app('so_loose', 'so_loose_agent');
SELECT count(*) FROM adk_run('so_loose', 'u', 's1', '[[script:{"a": 1, "b": "z"}||{"a": 1.5}||{"a": 2, "b": "y", "c": true}]]');
SELECT author, role, left(part, 120) AS part FROM pg_temp.events('so_loose', 's1');
SELECT b #> '{response_format,json_schema,strict}' AS strict FROM pg_temp.requests(1) b;
SELECT state -> 'loose' AS loose FROM adk.sessions WHERE app_name = 'so_loose' AND id = 's1';

-- ---------------------------------------------------------------------
-- 11. a single_turn sub-agent: corrected on its node's branch; its
--     output (the coordinator's {"result": ...}) only the value that fits
-- ---------------------------------------------------------------------
SELECT adk_define_agent('so_extract', model => 'so_gpt', mode => 'single_turn',
                        description => 'Extracts a ticket.', output_key => 'extracted',
                        output_schema => adk_json_schema('so_app.contact'::regtype));
SELECT adk_define_agent('so_coord', model => 'so_gpt', instruction => 'Coordinate.',
                        sub_agents => ARRAY['so_extract']);
SELECT adk_define_app('so_nodes', 'so_coord');
SELECT count(*) FROM adk_run('so_nodes', 'u', 's1',
    'call so_extract({"request": "[[script:{\"name\": \"Bo\"}||{\"name\": \"Bo\", \"email\": \"bo@example.com\"}]]"})');
SELECT event_data ->> 'branch' AS branch, event_data ->> 'author' AS author,
       event_data -> 'content' ->> 'role' AS role,
       left(coalesce(event_data #>> '{content,parts,0,text}',
                     'call ' || (event_data #>> '{content,parts,0,function_call,name}'),
                     'response ' || (event_data #> '{content,parts,0,function_response,response}')::text), 110) AS part
  FROM adk.events WHERE app_name = 'so_nodes' AND session_id = 's1' ORDER BY seq;
SELECT state -> 'extracted' AS extracted FROM adk.sessions WHERE app_name = 'so_nodes' AND id = 's1';

-- ---------------------------------------------------------------------
-- 12. thought parts are not the answer: a model (here a before_model
--     plugin in its place) that thinks aloud, then answers
-- ---------------------------------------------------------------------
CREATE FUNCTION so_thinker(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT '{"content": {"role": "model", "parts": [{"text": "Let me see: {\"name\": ", "thought": true},
                                                {"text": "{\"name\": \"Cy\", \"email\": \"cy@example.com\"}"}]}}'::jsonb $$;
SELECT adk_define_plugin('so_thinker', before_model => 'so_thinker(jsonb)');
SELECT adk_define_agent('so_thinking', model => 'so_gpt', output_key => 'contact',
                        output_schema => adk_json_schema('so_app.contact'::regtype));
SELECT adk_define_app('so_think', 'so_thinking', plugins => ARRAY['so_thinker']);
SELECT count(*) FROM adk_run('so_think', 'u', 's1', 'hi');
SELECT jsonb_array_length(event_data #> '{content,parts}') AS parts, event_data ? 'error_code' AS error
  FROM adk.events WHERE app_name = 'so_think' AND session_id = 's1' AND event_data ->> 'author' = 'so_thinking';
SELECT state -> 'contact' AS contact FROM adk.sessions WHERE app_name = 'so_think' AND id = 's1';

-- later files list every definition: take this file's away
DELETE FROM adk.apps WHERE name LIKE 'so\_%';
DELETE FROM adk.agents WHERE name LIKE 'so\_%';
DELETE FROM adk.tools WHERE name = 'so_lookup';
DELETE FROM adk.models WHERE name LIKE 'so\_%';
DELETE FROM adk.plugins WHERE name = 'so_thinker';
DROP FUNCTION so_lookup(text);
DROP FUNCTION so_thinker(jsonb);
