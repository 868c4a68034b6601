-- Definitions: tools, agents, plugins and apps, and the agent-tree helpers
-- the runner calls.  The models gpt, openai, gemini and anthropic exist
-- (60_models, 61_generate).

-- ---------------------------------------------------------------------
-- Tools
-- ---------------------------------------------------------------------
CREATE TYPE regress_mood AS ENUM ('calm', 'stormy', 'sunny');
CREATE DOMAIN regress_percent AS integer CHECK (VALUE BETWEEN 0 AND 100);

CREATE FUNCTION regress_get_weather(city text) RETURNS jsonb
    LANGUAGE sql AS $$ SELECT jsonb_build_object('city', city, 'forecast', 'sunny') $$;
COMMENT ON FUNCTION regress_get_weather(text) IS 'Weather for a city.';

-- every type mapping; an OUT argument in the middle (ignored), an INOUT
-- argument (an input), and optional arguments at the end
CREATE FUNCTION regress_every_type(
    t text, v varchar(10), c char(3), n name, ch "char", u uuid, d date,
    ts timestamp, tz timestamptz, i2 smallint, i4 integer, i8 bigint,
    num numeric(10, 2), f4 real, f8 double precision, b boolean, j json, jb jsonb,
    tags text[], grid integer[][], mood regress_mood, moods regress_mood[],
    pct regress_percent, pcts regress_percent[], iv interval,
    OUT result text,
    INOUT counter integer DEFAULT 0, opt text DEFAULT 'x')
    LANGUAGE sql AS $$ SELECT 'ok'::text, counter + 1 $$;
COMMENT ON FUNCTION regress_every_type IS 'Takes one of everything.';

SELECT jsonb_pretty(adk_tool_schema('regress_every_type'::regproc));
SELECT adk_tool_schema('regress_get_weather(text)');
CREATE FUNCTION regress_no_args() RETURNS text LANGUAGE sql AS $$ SELECT 'none' $$;
SELECT adk_tool_schema('regress_no_args()');
SELECT adk_tool_schema(NULL);

-- adk_define_tool: name from the function, description from its comment,
-- parameters from its signature; returns the tool's name
SELECT adk_define_tool('regress_get_weather(text)');
SELECT adk_define_tool('regress_get_weather(text)', 'get_weather');
SELECT adk_define_tool('regress_every_type'::regproc, 'every_type');
SELECT adk_define_tool('regress_no_args()', 'no-args', 'Nothing to give.');
SELECT name, function::regproc, description, parameters = adk_tool_schema(function) AS derived,
       long_running, require_confirmation
  FROM adk.tools ORDER BY name;
SELECT parameters FROM adk.tools WHERE name = 'get_weather';

-- given parameters and flags are kept; defining again replaces
SELECT adk_define_tool('regress_get_weather(text)', 'weather_now', 'Current weather.',
                       '{"type": "object", "properties": {"city": {"type": "string", "description": "City name"}}, "required": ["city"]}',
                       long_running => true, require_confirmation => true);
SELECT name, description, parameters, long_running, require_confirmation FROM adk.tools WHERE name = 'weather_now';
SELECT adk_define_tool('regress_get_weather(text)', 'weather_now', long_running => false);
SELECT name, description, parameters, long_running, require_confirmation FROM adk.tools WHERE name = 'weather_now';

-- tool names: the providers' rule, and the runner's own names are reserved
SELECT expect_error($q$SELECT adk_define_tool('regress_get_weather(text)', 'get weather')$q$);
SELECT expect_error($q$SELECT adk_define_tool('regress_get_weather(text)', '1weather')$q$);
SELECT expect_error($q$SELECT adk_define_tool('regress_get_weather(text)', repeat('w', 65))$q$);
SELECT length(adk_define_tool('regress_get_weather(text)', repeat('w', 64))) AS longest_name;
SELECT expect_error($q$SELECT adk_define_tool('regress_get_weather(text)', 'exit_loop')$q$);
SELECT expect_error($q$SELECT adk_define_tool('regress_get_weather(text)', 'transfer_to_agent')$q$);
SELECT expect_error($q$SELECT adk_define_tool('regress_get_weather(text)', 'adk_request_confirmation')$q$);
SELECT expect_error($q$SELECT adk_define_tool(NULL)$q$);
CREATE FUNCTION "regress weather"(city text) RETURNS text LANGUAGE sql AS $$ SELECT city $$;
SELECT expect_error($q$SELECT adk_define_tool('"regress weather"(text)')$q$);

-- functions that cannot be tools
CREATE FUNCTION regress_unnamed(text, n integer) RETURNS text LANGUAGE sql AS $$ SELECT $1 $$;
CREATE FUNCTION regress_variadic(VARIADIC xs text[]) RETURNS text LANGUAGE sql AS $$ SELECT xs[1] $$;
CREATE FUNCTION regress_poly(x anyelement) RETURNS text LANGUAGE sql AS $$ SELECT x::text $$;
CREATE FUNCTION regress_trig() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE PROCEDURE regress_proc(x integer) LANGUAGE sql AS $$ SELECT x $$;
SELECT expect_error($q$SELECT adk_define_tool('regress_unnamed(text, integer)')$q$);
SELECT expect_error($q$SELECT adk_define_tool('regress_variadic(text[])')$q$);
SELECT expect_error($q$SELECT adk_define_tool('regress_poly(anyelement)')$q$);
SELECT expect_error($q$SELECT adk_define_tool('regress_trig()')$q$);
SELECT expect_error($q$SELECT adk_define_tool('regress_proc(integer)')$q$);
SELECT expect_error($q$SELECT adk_define_tool('pg_catalog.max(integer)', 'max_tool')$q$);
SELECT expect_error($q$SELECT adk_define_tool('pg_catalog.row_number()', 'row_tool')$q$);
SELECT expect_error($q$SELECT adk_tool_schema('regress_unnamed(text, integer)')$q$);
SELECT expect_error($q$INSERT INTO adk.tools (name, function) VALUES ('ghost', 4294967295)$q$);

-- given parameters must be an object schema that fits the function
SELECT expect_error($q$SELECT adk_define_tool('regress_get_weather(text)', 'w2', parameters => '[]')$q$);
SELECT expect_error($q$SELECT adk_define_tool('regress_get_weather(text)', 'w2', parameters => '{"type": "string"}')$q$);
SELECT expect_error($q$SELECT adk_define_tool('regress_get_weather(text)', 'w2', parameters => '{"type": "object", "properties": []}')$q$);
SELECT expect_error($q$SELECT adk_define_tool('regress_get_weather(text)', 'w2', parameters => '{"type": "object", "properties": {"city": {}, "town": {}}}')$q$);
SELECT expect_error($q$SELECT adk_define_tool('regress_get_weather(text)', 'w2', parameters => '{"type": "object", "properties": {}}')$q$);
SELECT expect_error($q$SELECT adk_define_tool('regress_get_weather(text)', 'w2', parameters => '{"type": "object", "properties": {"city": {}}, "required": ["town"]}')$q$);
-- arguments with defaults may be left out
SELECT adk_define_tool('regress_every_type'::regproc, 'every_type_short',
    parameters => (SELECT adk_tool_schema('regress_every_type'::regproc) #- '{properties,opt}' #- '{properties,counter}'));
SELECT parameters -> 'properties' ? 'opt' AS has_opt, parameters -> 'required' = adk_tool_schema('regress_every_type'::regproc) -> 'required' AS same_required
  FROM adk.tools WHERE name = 'every_type_short';

-- plain INSERT / UPDATE: the same rules and the same derivation
INSERT INTO adk.tools (name, function) VALUES ('plain_weather', 'regress_get_weather(text)');
SELECT name, description, parameters, long_running FROM adk.tools WHERE name = 'plain_weather';
UPDATE adk.tools SET description = 'Mine.', parameters = '{"type": "object", "properties": {"city": {"type": "string", "enum": ["Oslo"]}}}'
 WHERE name = 'plain_weather';
SELECT description, parameters FROM adk.tools WHERE name = 'plain_weather';
UPDATE adk.tools SET description = NULL, parameters = NULL WHERE name = 'plain_weather';
SELECT description, parameters FROM adk.tools WHERE name = 'plain_weather';
SELECT expect_error($q$INSERT INTO adk.tools (name, function) VALUES ('bad.name', 'regress_get_weather(text)')$q$);
SELECT expect_error($q$INSERT INTO adk.tools (name, function) VALUES ('load_memory', 'regress_get_weather(text)')$q$);
SELECT expect_error($q$INSERT INTO adk.tools (name) VALUES ('no_function')$q$);
SELECT expect_error($q$UPDATE adk.tools SET parameters = '{"type": "array"}' WHERE name = 'plain_weather'$q$);
SELECT expect_error($q$UPDATE adk.tools SET function = 'regress_variadic(text[])' WHERE name = 'plain_weather'$q$);
-- a new function must fit the kept parameters (NULL derives them again)
SELECT expect_error($q$UPDATE adk.tools SET function = 'regress_no_args()' WHERE name = 'plain_weather'$q$);
UPDATE adk.tools SET function = 'regress_no_args()', parameters = NULL, description = NULL WHERE name = 'plain_weather';
SELECT function, description, parameters FROM adk.tools WHERE name = 'plain_weather';

-- the definer must be able to execute the function
CREATE FUNCTION regress_secret_fn(x integer) RETURNS integer LANGUAGE sql AS $$ SELECT x $$;
REVOKE EXECUTE ON FUNCTION regress_secret_fn(integer) FROM PUBLIC;
CREATE ROLE regress_defs_admin LOGIN IN ROLE adk_admin;
CREATE ROLE regress_defs_user LOGIN IN ROLE adk_user;
SET ROLE regress_defs_admin;
SELECT expect_error($q$SELECT adk_define_tool('regress_secret_fn(integer)')$q$);
SELECT expect_error($q$INSERT INTO adk.tools (name, function) VALUES ('secret', 'regress_secret_fn(integer)')$q$);
SELECT adk_define_tool('regress_get_weather(text)', 'admin_weather');
RESET ROLE;

-- ---------------------------------------------------------------------
-- Agents
--
--   regress_root (llm, openai; tools get_weather, load_memory, regress_helper)
--     regress_planner (llm, no model: openai from regress_root)
--     regress_pipeline (sequential)
--       regress_drafter (llm, gemini)
--       regress_refiner (loop, at most 3 rounds)
--         regress_critic (llm, no model: openai; exit_loop)
--   regress_helper (llm, anthropic; used as a tool by regress_root)
-- ---------------------------------------------------------------------
SELECT adk_define_agent('regress_critic', instruction => 'Criticize; call exit_loop when good.', tools => ARRAY['exit_loop']);
SELECT adk_define_agent('regress_refiner', 'loop', sub_agents => ARRAY['regress_critic'], max_iterations => 3);
SELECT adk_define_agent('regress_drafter', model => 'gemini', instruction => 'Draft.', output_key => 'draft',
                        include_contents => 'none', generate_config => '{"temperature": 0.5, "max_output_tokens": 200, "stop_sequences": ["END"]}');
SELECT adk_define_agent('regress_pipeline', 'sequential', description => 'Draft, then refine.',
                        sub_agents => ARRAY['regress_drafter', 'regress_refiner']);
SELECT adk_define_agent('regress_planner', instruction => 'Plan.', disallow_transfer_to_peers => true);
SELECT adk_define_agent('regress_helper', model => 'anthropic', description => 'Answers one question.');
SELECT adk_define_agent('regress_root', model => 'openai', instruction => 'Route the request.',
                        tools => ARRAY['get_weather', 'load_memory', 'regress_helper'],
                        sub_agents => ARRAY['regress_planner', 'regress_pipeline']);
SELECT name, kind, model, tools, sub_agents, output_key, max_iterations, include_contents, generate_config
  FROM adk.agents ORDER BY name;
-- defining again replaces (omitted arguments take their defaults)
SELECT adk_define_agent('regress_planner', instruction => 'Plan carefully.');
SELECT name, instruction, disallow_transfer_to_peers FROM adk.agents WHERE name = 'regress_planner';

-- names
SELECT expect_error($q$SELECT adk_define_agent('bad-name')$q$);
SELECT expect_error($q$SELECT adk_define_agent('')$q$);
SELECT expect_error($q$SELECT adk_define_agent(NULL)$q$);
SELECT expect_error($q$SELECT adk_define_agent(repeat('a', 129))$q$);
SELECT expect_error($q$SELECT adk_define_agent('user')$q$);
SELECT expect_error($q$SELECT adk_define_agent('exit_loop')$q$);
SELECT expect_error($q$SELECT adk_define_agent('get_weather')$q$);
SELECT expect_error($q$SELECT adk_define_tool('regress_get_weather(text)', 'regress_helper')$q$);
-- values
SELECT expect_error($q$SELECT adk_define_agent('regress_x', 'graph')$q$);
SELECT expect_error($q$SELECT adk_define_agent('regress_x', include_contents => 'some')$q$);
SELECT expect_error($q$SELECT adk_define_agent('regress_x', model => 'no_such_model')$q$);
SELECT expect_error($q$SELECT adk_define_agent('regress_x', output_key => '')$q$);
SELECT expect_error($q$SELECT adk_define_agent('regress_x', generate_config => '[]')$q$);
SELECT expect_error($q$SELECT adk_define_agent('regress_x', generate_config => '{"temprature": 1}')$q$);
SELECT expect_error($q$SELECT adk_define_agent('regress_x', generate_config => '{"temperature": "hot"}')$q$);
SELECT expect_error($q$SELECT adk_define_agent('regress_x', generate_config => '{"max_output_tokens": -1}')$q$);
SELECT expect_error($q$SELECT adk_define_agent('regress_x', generate_config => '{"seed": 1.5}')$q$);
SELECT expect_error($q$SELECT adk_define_agent('regress_x', generate_config => '{"stop_sequences": [1]}')$q$);
-- tools
SELECT expect_error($q$SELECT adk_define_agent('regress_x', tools => ARRAY['no_such_tool'])$q$);
SELECT expect_error($q$SELECT adk_define_agent('regress_x', tools => ARRAY['get_weather', 'get_weather'])$q$);
SELECT expect_error($q$SELECT adk_define_agent('regress_x', tools => ARRAY['regress_x'])$q$);
SELECT expect_error($q$SELECT adk_define_agent('regress_x', tools => ARRAY['transfer_to_agent'])$q$);
SELECT expect_error($q$SELECT adk_define_agent('regress_x', tools => ARRAY['adk_request_confirmation'])$q$);
SELECT expect_error($q$SELECT adk_define_agent('regress_x', tools => ARRAY[NULL])$q$);
SELECT expect_error($q$SELECT adk_define_agent('regress_x', tools => ARRAY[['get_weather'], ['no-args']])$q$);
SELECT adk_define_agent('regress_x', tools => ARRAY['exit_loop', 'load_artifacts', 'load_memory', 'preload_memory', 'no-args']);
SELECT adk_define_agent(repeat('regress_long', 6));
SELECT expect_error(format($q$SELECT adk_define_agent('regress_y', tools => ARRAY[%L])$q$, repeat('regress_long', 6)));
-- sub-agents
SELECT expect_error($q$SELECT adk_define_agent('regress_y', sub_agents => ARRAY['regress_nobody'])$q$);
SELECT expect_error($q$SELECT adk_define_agent('regress_y', sub_agents => ARRAY['regress_x', 'regress_x'])$q$);
SELECT expect_error($q$SELECT adk_define_agent('regress_x', sub_agents => ARRAY['regress_x'])$q$);
-- one parent per agent
SELECT expect_error($q$SELECT adk_define_agent('regress_y', sub_agents => ARRAY['regress_x', 'regress_planner'])$q$);
-- no cycles, through sub-agents or agents used as tools
SELECT expect_error($q$SELECT adk_define_agent('regress_critic', sub_agents => ARRAY['regress_root'])$q$);
SELECT expect_error($q$SELECT adk_define_agent('regress_helper', model => 'anthropic', tools => ARRAY['regress_root'])$q$);
-- an agent used as a tool may have a parent too, and be a tool of several agents
SELECT adk_define_agent('regress_x', tools => ARRAY['regress_helper', 'regress_planner']);
-- workflow agents
SELECT expect_error($q$SELECT adk_define_agent('regress_y', 'sequential')$q$);
SELECT expect_error($q$SELECT adk_define_agent('regress_y', 'parallel', sub_agents => ARRAY['regress_x'], model => 'openai', instruction => 'x', tools => ARRAY['exit_loop'])$q$);
SELECT expect_error($q$SELECT adk_define_agent('regress_y', 'loop', sub_agents => ARRAY['regress_x'], output_key => 'k', generate_config => '{"seed": 1}')$q$);
SELECT expect_error($q$SELECT adk_define_agent('regress_y', max_iterations => 2)$q$);
SELECT expect_error($q$SELECT adk_define_agent('regress_y', 'loop', sub_agents => ARRAY['regress_x'], max_iterations => 0)$q$);
-- a workflow agent with sub-agents and no llm settings is accepted
SELECT adk_define_agent('regress_y', 'parallel', sub_agents => ARRAY['regress_x']);
SELECT count(*) AS agents FROM adk.agents;

-- plain INSERT / UPDATE: the same rules
SELECT expect_error($q$INSERT INTO adk.agents (name, kind) VALUES ('regress_z', 'sequential')$q$);
SELECT expect_error($q$INSERT INTO adk.agents (name, tools) VALUES ('regress_z', '{nope}')$q$);
SELECT expect_error($q$INSERT INTO adk.agents (name, kind, sub_agents) VALUES ('user', 'loop', '{regress_x}')$q$);
SELECT expect_error($q$UPDATE adk.agents SET sub_agents = '{regress_nobody}' WHERE name = 'regress_y'$q$);
SELECT expect_error($q$UPDATE adk.agents SET sub_agents = '{regress_planner}' WHERE name = 'regress_y'$q$);
SELECT expect_error($q$UPDATE adk.agents SET sub_agents = '{regress_root}' WHERE name = 'regress_critic'$q$);
SELECT expect_error($q$UPDATE adk.agents SET max_iterations = 5 WHERE name = 'regress_pipeline'$q$);
SELECT expect_error($q$UPDATE adk.agents SET kind = 'loop' WHERE name = 'regress_helper'$q$);
SELECT expect_error($q$UPDATE adk.agents SET generate_config = '{"top_k": "many"}' WHERE name = 'regress_helper'$q$);
-- references and the graph are checked once the statement is done: rows
-- may come in any order, and a child may move between parents at once
INSERT INTO adk.agents (name, kind, sub_agents) VALUES ('regress_p1', 'sequential', '{regress_c1}'), ('regress_c1', 'llm', '{}');
INSERT INTO adk.agents (name, tools) VALUES ('regress_p2', '{}');
UPDATE adk.agents SET sub_agents = CASE name WHEN 'regress_p1' THEN '{regress_p2}'::text[] ELSE '{regress_c1}' END
 WHERE name IN ('regress_p1', 'regress_p2');
SELECT name, sub_agents FROM adk.agents WHERE name LIKE 'regress\_p_' OR name LIKE 'regress\_c_' ORDER BY name;
SELECT expect_error($q$INSERT INTO adk.agents (name, sub_agents) VALUES ('regress_p3', '{regress_c3}'), ('regress_c3', '{regress_p3}')$q$);
-- a whole subtree can go in one statement
DELETE FROM adk.agents WHERE name IN ('regress_c1', 'regress_p1', 'regress_p2');

-- while a dump is restored (check_function_bodies = off) references are
-- not checked; the tree check at run start still is
SET check_function_bodies = off;
INSERT INTO adk.agents (name, tools, sub_agents) VALUES ('regress_restored', '{later_tool}', '{regress_later}');
RESET check_function_bodies;
SELECT expect_error($q$SELECT adk._check_agent_tree('regress_restored')$q$);
DELETE FROM adk.agents WHERE name = 'regress_restored';

-- ---------------------------------------------------------------------
-- Plugins
-- ---------------------------------------------------------------------
CREATE FUNCTION regress_cb(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT NULL::jsonb $$;
CREATE FUNCTION regress_cb_text(ctx text) RETURNS text LANGUAGE sql AS $$ SELECT ctx $$;
CREATE FUNCTION regress_cb_two(a jsonb, b jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT a $$;
CREATE FUNCTION regress_cb_set(ctx jsonb) RETURNS SETOF jsonb LANGUAGE sql AS $$ SELECT ctx $$;
CREATE FUNCTION regress_cb_secret(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT ctx $$;
REVOKE EXECUTE ON FUNCTION regress_cb_secret(jsonb) FROM PUBLIC;
CREATE PROCEDURE regress_cb_proc(ctx jsonb) LANGUAGE sql AS $$ SELECT ctx $$;

SELECT adk_define_plugin('regress_logger', before_model => 'regress_cb(jsonb)', on_event => 'regress_cb(jsonb)');
SELECT adk_define_plugin('regress_guard', before_tool => 'regress_cb(jsonb)');
SELECT name, on_user_message, on_event, before_model, before_tool FROM adk.plugins ORDER BY name;
-- defining again replaces
SELECT adk_define_plugin('regress_logger', on_user_message => 'regress_cb(jsonb)', after_run => 'regress_cb(jsonb)');
SELECT name, on_user_message, after_run, on_event, before_model FROM adk.plugins WHERE name = 'regress_logger';

SELECT expect_error($q$SELECT adk_define_plugin('regress_empty')$q$);
SELECT expect_error($q$SELECT adk_define_plugin('', before_run => 'regress_cb(jsonb)')$q$);
SELECT expect_error($q$SELECT adk_define_plugin('regress_bad', after_model => 'regress_cb_text(text)')$q$);
SELECT expect_error($q$SELECT adk_define_plugin('regress_bad', on_model_error => 'regress_cb_two(jsonb, jsonb)')$q$);
SELECT expect_error($q$SELECT adk_define_plugin('regress_bad', on_tool_error => 'regress_cb_set(jsonb)')$q$);
SELECT expect_error($q$SELECT adk_define_plugin('regress_bad', before_agent => 'regress_cb_proc(jsonb)')$q$);
SELECT expect_error($q$INSERT INTO adk.plugins (name) VALUES ('regress_bad')$q$);
SELECT expect_error($q$UPDATE adk.plugins SET after_agent = 'regress_cb_text(text)' WHERE name = 'regress_guard'$q$);
SELECT expect_error($q$UPDATE adk.plugins SET before_tool = NULL WHERE name = 'regress_guard'$q$);
SET ROLE regress_defs_admin;
SELECT expect_error($q$SELECT adk_define_plugin('regress_bad', after_tool => 'regress_cb_secret(jsonb)')$q$);
RESET ROLE;

-- ---------------------------------------------------------------------
-- Apps
-- ---------------------------------------------------------------------
SELECT adk_define_app('regress_app', 'regress_root', plugins => ARRAY['regress_logger', 'regress_guard']);
SELECT name, root_agent, auto_create_session, compaction, plugins, save_input_blobs_as_artifacts, max_llm_calls
  FROM adk.apps;
-- defining again replaces; plugins keep their order
SELECT adk_define_app('regress_app', 'regress_root', auto_create_session => false,
                      plugins => ARRAY['regress_guard', 'regress_logger'], max_llm_calls => 20,
                      compaction => '{"compaction_interval": 3, "overlap_size": 1}',
                      save_input_blobs_as_artifacts => true);
SELECT name, root_agent, auto_create_session, compaction, plugins, save_input_blobs_as_artifacts, max_llm_calls
  FROM adk.apps;
SELECT adk_define_app('regress_pipeline_app', 'regress_pipeline');

SELECT expect_error($q$SELECT adk_define_app('', 'regress_root')$q$);
SELECT expect_error($q$SELECT adk_define_app(repeat('a', 192), 'regress_root')$q$);
SELECT expect_error($q$SELECT adk_define_app('regress_app2', NULL)$q$);
SELECT expect_error($q$SELECT adk_define_app('regress_app2', 'regress_nobody')$q$);
SELECT expect_error($q$SELECT adk_define_app('regress_app2', 'regress_root', plugins => ARRAY['regress_nothing'])$q$);
SELECT expect_error($q$SELECT adk_define_app('regress_app2', 'regress_root', plugins => ARRAY['regress_guard', 'regress_guard'])$q$);
SELECT expect_error($q$SELECT adk_define_app('regress_app2', 'regress_root', compaction => '[]')$q$);
SELECT expect_error($q$SELECT adk_define_app('regress_app2', 'regress_root', max_llm_calls => 0)$q$);
SELECT expect_error($q$INSERT INTO adk.apps (name, root_agent) VALUES ('regress_app2', 'regress_nobody')$q$);
SELECT expect_error($q$UPDATE adk.apps SET plugins = '{regress_guard,regress_guard}' WHERE name = 'regress_app'$q$);
SELECT expect_error($q$UPDATE adk.apps SET max_llm_calls = -1 WHERE name = 'regress_app'$q$);
INSERT INTO adk.apps (name, root_agent) VALUES ('regress_app2', 'regress_x');
SELECT name, root_agent, auto_create_session, plugins, max_llm_calls FROM adk.apps WHERE name = 'regress_app2';

-- ---------------------------------------------------------------------
-- Definitions in use cannot be deleted or renamed
-- ---------------------------------------------------------------------
SELECT expect_error($q$DELETE FROM adk.agents WHERE name = 'regress_root'$q$);
SELECT expect_error($q$DELETE FROM adk.agents WHERE name = 'regress_critic'$q$);
SELECT expect_error($q$DELETE FROM adk.agents WHERE name = 'regress_planner'$q$);
SELECT expect_error($q$DELETE FROM adk.agents WHERE name = 'regress_helper'$q$);
SELECT expect_error($q$DELETE FROM adk.agents WHERE name = 'regress_x'$q$);
SELECT expect_error($q$UPDATE adk.agents SET name = 'regress_critic2' WHERE name = 'regress_critic'$q$);
SELECT expect_error($q$UPDATE adk.agents SET name = 'regress_root2' WHERE name = 'regress_root'$q$);
SELECT expect_error($q$DELETE FROM adk.tools WHERE name = 'get_weather'$q$);
SELECT expect_error($q$UPDATE adk.tools SET name = 'get_weather2' WHERE name = 'get_weather'$q$);
SELECT expect_error($q$TRUNCATE adk.tools$q$);
SELECT expect_error($q$DELETE FROM adk.plugins WHERE name = 'regress_guard'$q$);
SELECT expect_error($q$UPDATE adk.plugins SET name = 'regress_guard2' WHERE name = 'regress_guard'$q$);
SELECT expect_error($q$TRUNCATE adk.plugins$q$);
SELECT expect_error($q$DELETE FROM adk.models WHERE name = 'gemini'$q$);
-- renaming a model carries over to its agents
BEGIN;
UPDATE adk.models SET name = 'gemini_renamed' WHERE name = 'gemini';
SELECT name, model FROM adk.agents WHERE name = 'regress_drafter';
ROLLBACK;
-- unused ones can go, and be renamed
UPDATE adk.tools SET name = 'plain_weather2' WHERE name = 'plain_weather';
DELETE FROM adk.tools WHERE name = 'plain_weather2';
DELETE FROM adk.agents WHERE name = 'regress_y';

-- ---------------------------------------------------------------------
-- The tree helpers the runner calls
-- ---------------------------------------------------------------------
SELECT * FROM adk._agent_tree('regress_root');
SELECT * FROM adk._agent_tree('regress_pipeline');
SELECT * FROM adk._agent_tree('regress_nobody');
SELECT t.name, a.model, adk._agent_model(t.name) FROM adk._agent_tree('regress_root') t
  JOIN adk.agents a USING (name);
SELECT adk._agent_model('regress_helper') AS helper, adk._agent_model('regress_x') AS no_model;
SELECT expect_error($q$SELECT adk._agent_model('regress_nobody')$q$);
SELECT adk._check_agent_tree('regress_root');
SELECT expect_error($q$SELECT adk._check_agent_tree('regress_nobody')$q$);

-- rows changed behind the triggers' back: the check at run start finds it
SET session_replication_role = replica;
UPDATE adk.agents SET sub_agents = '{regress_root}' WHERE name = 'regress_critic';
RESET session_replication_role;
SELECT * FROM adk._agent_tree('regress_root');
SELECT expect_error($q$SELECT adk._check_agent_tree('regress_root')$q$);
SELECT expect_error($q$SELECT adk._check_agent_tree('regress_pipeline')$q$);
SELECT adk._agent_model('regress_critic');
SELECT expect_error($q$SELECT adk_define_app('regress_app', 'regress_root')$q$);
SELECT expect_error($q$UPDATE adk.apps SET max_llm_calls = 10 WHERE name = 'regress_app'$q$);
SET session_replication_role = replica;
UPDATE adk.agents SET sub_agents = '{}' WHERE name = 'regress_critic';
UPDATE adk.agents SET tools = tools || '{regress_root}'::text[] WHERE name = 'regress_helper';
RESET session_replication_role;
SELECT expect_error($q$SELECT adk._check_agent_tree('regress_root')$q$);
SET session_replication_role = replica;
UPDATE adk.agents SET tools = '{}', sub_agents = '{regress_planner}' WHERE name = 'regress_helper';
RESET session_replication_role;
SELECT expect_error($q$SELECT adk._check_agent_tree('regress_root')$q$);
SET session_replication_role = replica;
UPDATE adk.agents SET sub_agents = '{}' WHERE name = 'regress_helper';
UPDATE adk.agents SET sub_agents = '{regress_ghost}' WHERE name = 'regress_planner';
RESET session_replication_role;
SELECT expect_error($q$SELECT adk._check_agent_tree('regress_root')$q$);
SET session_replication_role = replica;
UPDATE adk.agents SET sub_agents = '{}', tools = '{ghost_tool}' WHERE name = 'regress_planner';
RESET session_replication_role;
SELECT expect_error($q$SELECT adk._check_agent_tree('regress_root')$q$);
SET session_replication_role = replica;
UPDATE adk.agents SET tools = '{}', model = 'ghost_model' WHERE name = 'regress_planner';
RESET session_replication_role;
SELECT expect_error($q$SELECT adk._check_agent_tree('regress_root')$q$);
SET session_replication_role = replica;
UPDATE adk.agents SET model = NULL WHERE name = 'regress_planner';
UPDATE adk.agents SET sub_agents = '{}' WHERE name = 'regress_refiner';
RESET session_replication_role;
SELECT expect_error($q$SELECT adk._check_agent_tree('regress_root')$q$);
SET session_replication_role = replica;
UPDATE adk.agents SET sub_agents = '{regress_critic}' WHERE name = 'regress_refiner';
RESET session_replication_role;
SELECT adk._check_agent_tree('regress_root');

-- ---------------------------------------------------------------------
-- pg_dump keeps the definitions; privileges
-- ---------------------------------------------------------------------
SELECT c.relname FROM pg_extension x, unnest(x.extconfig) t(oid) JOIN pg_class c ON c.oid = t.oid
 WHERE x.extname = 'adk_runner' ORDER BY 1;

SET ROLE regress_defs_user;
SELECT count(*) AS visible_agents FROM adk.agents WHERE name LIKE 'regress%';
SELECT count(*) > 0 AS visible_tools FROM adk.tools;
SELECT name, depth FROM adk._agent_tree('regress_pipeline');
SELECT expect_error($q$SELECT adk_define_agent('regress_mine')$q$);
SELECT expect_error($q$INSERT INTO adk.agents (name) VALUES ('regress_mine')$q$);
SELECT expect_error($q$DELETE FROM adk.apps$q$);
SELECT expect_error($q$SELECT adk_define_tool('regress_get_weather(text)', 'mine')$q$);
RESET ROLE;
SET ROLE regress_defs_admin;
SELECT adk_define_agent('regress_admin_agent', tools => ARRAY['admin_weather']);
SELECT adk_define_plugin('regress_admin_plugin', on_event => 'regress_cb(jsonb)');
SELECT adk_define_app('regress_admin_app', 'regress_admin_agent', plugins => ARRAY['regress_admin_plugin']);
DELETE FROM adk.apps WHERE name = 'regress_admin_app';
DELETE FROM adk.plugins WHERE name = 'regress_admin_plugin';
DELETE FROM adk.agents WHERE name = 'regress_admin_agent';
DELETE FROM adk.tools WHERE name = 'admin_weather';
RESET ROLE;

-- clean up
DELETE FROM adk.apps WHERE name LIKE 'regress%';
DELETE FROM adk.plugins WHERE name LIKE 'regress%';
DELETE FROM adk.agents WHERE name LIKE 'regress%';
DELETE FROM adk.tools;
SELECT (SELECT count(*) FROM adk.apps) AS apps, (SELECT count(*) FROM adk.agents) AS agents,
       (SELECT count(*) FROM adk.tools) AS tools, (SELECT count(*) FROM adk.plugins) AS plugins;
DROP FUNCTION regress_get_weather(text), regress_every_type, regress_no_args(), "regress weather"(text),
    regress_unnamed(text, integer), regress_variadic(text[]), regress_poly(anyelement), regress_trig(),
    regress_secret_fn(integer), regress_cb(jsonb), regress_cb_text(text), regress_cb_two(jsonb, jsonb),
    regress_cb_set(jsonb), regress_cb_secret(jsonb);
DROP PROCEDURE regress_proc(integer), regress_cb_proc(jsonb);
DROP TYPE regress_mood;
DROP DOMAIN regress_percent;
DROP ROLE regress_defs_admin;
DROP ROLE regress_defs_user;
