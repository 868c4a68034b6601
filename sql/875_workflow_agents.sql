-- Agent nodes in graph workflows (docs/workflows.md "What runs"): an
-- agent node runs its agent in a lane of its own, through the local model
-- server; its output is its last answer (parsed JSON with an
-- output_schema); its user content is the node's input (ADK-Go's
-- AgentNode: a content as it is, a string as its text, any other value as
-- JSON text).  Ready agent nodes' model calls are in flight together.
SELECT adk_define_model('fast875', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'gpt-test', api_key_secret => 'test-key');
SELECT adk_define_model('slow875', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'gpt-latency-300', api_key_secret => 'test-key');
SELECT adk_define_model('bad875', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'fault-400', api_key_secret => 'test-key', options => '{"retries": 0}');
-- A step that wraps its input: {"output": {"got": input, "node": name}}
CREATE FUNCTION w875_wrap(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', jsonb_build_object('node', ctx ->> 'node', 'got', input))
$$;
-- A router on an agent's output text: "yes" when it says yes
CREATE FUNCTION w875_route(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', input,
                              'route', CASE WHEN input #>> '{}' LIKE '%yes%' THEN 'yes' ELSE 'no' END)
$$;
-- The events of a run, one line each
CREATE FUNCTION w875_events(app text, sid text, msg text)
RETURNS TABLE (author text, path text, branch text, text text, output jsonb, error text)
LANGUAGE sql AS $$
    SELECT r.event_data ->> 'author', r.event_data #>> '{node_info,path}', r.event_data ->> 'branch',
           r.event_data #>> '{content,parts,0,text}', r.event_data -> 'output', r.event_data ->> 'error_code'
      FROM adk_run(app, 'u', sid, msg) r
     WHERE r.event_data ->> 'author' <> 'user'
     ORDER BY r.seq
$$;

-- Sequential: START -> writer (mode NULL: single_turn in a graph) -> wrap.
-- The writer's prompt is the user's content; its answer is the node's
-- output, the next node's input; its model event is on the node's branch
-- with the node's path.
SELECT adk_define_agent('w875_writer', model => 'fast875', instruction => 'Write.');
SELECT adk_define_workflow('w875_seq',
    '[{"agent": "w875_writer"}, {"name": "wrap", "function": "public.w875_wrap(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "w875_writer"}, {"from": "w875_writer", "to": "wrap"}]');
SELECT adk_define_app('w875_seq_app', 'w875_seq');
SELECT * FROM w875_events('w875_seq_app', 'w875-s1', 'a poem about tea');
SELECT node, run_id, status, input, output FROM adk.workflow_runs
 WHERE app_name = 'w875_seq_app' ORDER BY updated_at, node;
-- a second turn: a new invocation, the node's prompt holds nothing of the
-- first: each prompt is the system instruction and the node's input
SELECT * FROM w875_events('w875_seq_app', 'w875-s1', 'now coffee');
SELECT jsonb_array_length(request -> 'messages') AS messages, request #>> '{messages,1,content}' AS user_text
  FROM adk.model_calls
 WHERE invocation_id IN (SELECT invocation_id FROM adk.invocations WHERE session_id = 'w875-s1') ORDER BY id;

-- An object input is the agent's user content as JSON text; a string as
-- its text
SELECT adk_define_workflow('w875_json',
    '[{"name": "wrap", "function": "public.w875_wrap(jsonb,jsonb)"}, {"agent": "w875_writer"}]',
    '[{"from": "START", "to": "wrap"}, {"from": "wrap", "to": "w875_writer"}]');
SELECT adk_define_app('w875_json_app', 'w875_json');
SELECT author, path, output FROM w875_events('w875_json_app', 'w875-j1', 'hi');

-- Fan-out of three agents and a join: their model calls in flight
-- together (300 ms each: about one latency, not three); the join gets
-- their outputs as a map; each agent on the branch the fan-out made for
-- its node ("<node>@1", its activation's), not that segment twice.
SELECT adk_define_agent('w875_a', model => 'slow875', instruction => 'You are A.');
SELECT adk_define_agent('w875_b', model => 'slow875', instruction => 'You are B.');
SELECT adk_define_agent('w875_c', model => 'slow875', instruction => 'You are C.');
SELECT adk_define_workflow('w875_fan',
    '[{"agent": "w875_a"}, {"agent": "w875_b"}, {"agent": "w875_c"},
      {"name": "all", "kind": "join"}, {"name": "wrap", "function": "public.w875_wrap(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "w875_a"}, {"from": "START", "to": "w875_b"}, {"from": "START", "to": "w875_c"},
      {"from": "w875_a", "to": "all"}, {"from": "w875_b", "to": "all"}, {"from": "w875_c", "to": "all"},
      {"from": "all", "to": "wrap"}]');
SELECT adk_define_app('w875_fan_app', 'w875_fan');
CREATE TEMP TABLE clock875 AS SELECT clock_timestamp() AS t0;
-- (the agents' events are stored as each answer arrives: shown by path)
SELECT author, path, branch, text, output FROM w875_events('w875_fan_app', 'w875-f1', 'three views')
 ORDER BY path, author = 'w875_fan';
SELECT clock_timestamp() - t0 < interval '750 ms' AS about_one_latency FROM clock875;
SELECT count(*) AS calls FROM adk.model_calls
 WHERE invocation_id IN (SELECT invocation_id FROM adk.invocations WHERE session_id = 'w875-f1');
SELECT node, status FROM adk.workflow_runs WHERE app_name = 'w875_fan_app' ORDER BY node;

-- max_concurrency 1: the agents one at a time (three latencies)
SELECT adk_define_workflow('w875_fan', max_concurrency => 1);
UPDATE clock875 SET t0 = clock_timestamp();
SELECT count(*) AS events FROM w875_events('w875_fan_app', 'w875-f2', 'three views');
SELECT clock_timestamp() - t0 >= interval '900 ms' AS three_latencies FROM clock875;

-- A route chosen from an agent's output: an agent node gives no routes
-- (ADK-Go's agent node emits its events, not a route); a function node
-- after it routes on its output.
SELECT adk_define_workflow('w875_route',
    '[{"agent": "w875_writer"}, {"name": "router", "function": "public.w875_route(jsonb,jsonb)"},
      {"name": "yes", "function": "public.w875_wrap(jsonb,jsonb)"},
      {"name": "no", "function": "public.w875_wrap(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "w875_writer"}, {"from": "w875_writer", "to": "router"},
      {"from": "router", "to": "yes", "route": "yes"}, {"from": "router", "to": "no", "route": "no"}]');
SELECT adk_define_app('w875_route_app', 'w875_route');
SELECT path, output FROM w875_events('w875_route_app', 'w875-r1', 'say yes') WHERE author = 'w875_route';
SELECT path, output FROM w875_events('w875_route_app', 'w875-r2', 'say nothing') WHERE author = 'w875_route';

-- An agent with an output_schema: its output is the parsed JSON
SELECT adk_define_agent('w875_scorer', model => 'fast875', instruction => 'Score.',
                        output_schema => '{"type": "object", "properties": {"score": {"type": "integer"}}}');
SELECT adk_define_workflow('w875_schema',
    '[{"agent": "w875_scorer"}, {"name": "wrap", "function": "public.w875_wrap(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "w875_scorer"}, {"from": "w875_scorer", "to": "wrap"}]');
SELECT adk_define_app('w875_schema_app', 'w875_schema');
SELECT path, output FROM w875_events('w875_schema_app', 'w875-o1', '[[say:{"score": 7}]]') WHERE author = 'w875_schema';

-- A chat agent directly after START: it sees the session (the user's
-- message, earlier turns), on the activation's branch; its answer is the
-- node's output.
SELECT adk_define_agent('w875_chat', model => 'fast875', mode => 'chat', instruction => 'Chat.');
SELECT adk_define_workflow('w875_chatwf',
    '[{"agent": "w875_chat"}, {"name": "wrap", "function": "public.w875_wrap(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "w875_chat"}, {"from": "w875_chat", "to": "wrap"}]');
SELECT adk_define_app('w875_chat_app', 'w875_chatwf');
SELECT * FROM w875_events('w875_chat_app', 'w875-c1', 'hello');
SELECT * FROM w875_events('w875_chat_app', 'w875-c1', 'hello again');
-- the second turn's prompt holds the first turn
SELECT jsonb_array_length(request -> 'messages') AS messages
  FROM adk.model_calls
 WHERE invocation_id IN (SELECT invocation_id FROM adk.invocations WHERE session_id = 'w875-c1') ORDER BY id;

-- An agent node whose model fails: the run's stored error event, on the
-- node's path and on the node's branch "<node>@1"; its row failed;
-- nothing after it runs; what came before stays.  In a fan-out, the
-- failure ends the invocation too, its error event on the branch the
-- fan-out made for the node ("<node>@1", not "<node>@1.<node>@1": the
-- agent's branch replaces that segment rather than doubling it).
SELECT adk_define_agent('w875_bad', model => 'bad875', instruction => 'Fail.');
SELECT adk_define_workflow('w875_fail',
    '[{"name": "wrap", "function": "public.w875_wrap(jsonb,jsonb)"}, {"agent": "w875_bad"},
      {"name": "after", "function": "public.w875_wrap(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "wrap"}, {"from": "wrap", "to": "w875_bad"}, {"from": "w875_bad", "to": "after"}]');
SELECT adk_define_app('w875_fail_app', 'w875_fail');
SELECT author, path, branch, error FROM w875_events('w875_fail_app', 'w875-x1', 'go');
SELECT node, status FROM adk.workflow_runs WHERE app_name = 'w875_fail_app' ORDER BY node;
SELECT status FROM adk.invocations WHERE session_id = 'w875-x1';
-- in a fan-out: the other agent's call in flight stops, its node
-- cancelled by an event of its own (docs/workflows.md "Statuses"); the
-- join never runs
SELECT adk_define_workflow('w875_fail2',
    '[{"agent": "w875_bad"}, {"agent": "w875_a"}, {"name": "all", "kind": "join"}]',
    '[{"from": "START", "to": "w875_bad"}, {"from": "START", "to": "w875_a"},
      {"from": "w875_bad", "to": "all"}, {"from": "w875_a", "to": "all"}]');
SELECT adk_define_app('w875_fail2_app', 'w875_fail2');
SELECT author, path, branch, error FROM w875_events('w875_fail2_app', 'w875-x2', 'go');
SELECT node, status FROM adk.workflow_runs WHERE app_name = 'w875_fail2_app' ORDER BY node;

-- Node settings on agent and nested workflow nodes (docs/workflows.md
-- "Node settings"), as ADK-Go's nodes take them from their NodeConfig:
-- input_schema is checked before the node is handed to its lane (a
-- mismatch fails it, no model call made); a nested workflow's output is
-- checked against output_schema, and with wait_for_output a nested
-- workflow that gave no output holds the node's successors.
CREATE FUNCTION w875_set_events(app text, sid text, msg text)
RETURNS TABLE (path text, output jsonb, error text)
LANGUAGE sql AS $$
    SELECT r.event_data #>> '{node_info,path}', r.event_data -> 'output',
           coalesce(r.event_data ->> 'error_code', '') || coalesce(': ' || (r.event_data ->> 'error_message'), '')
      FROM adk_run(app, 'u', sid, msg) r
     WHERE r.event_data ->> 'author' NOT IN ('user', 'w875_writer')
     ORDER BY r.seq
$$;
CREATE FUNCTION w875_calls(sid text) RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM adk.model_calls
     WHERE invocation_id IN (SELECT invocation_id FROM adk.invocations
                              WHERE app_name = 'w875_in_app' AND session_id = sid) $$;
-- START -> wrap (an object) -> writer (input_schema: a string) -> after:
-- the writer fails on its input, its model never called, after never runs
SELECT adk_define_workflow('w875_in',
    '[{"name": "wrap", "function": "public.w875_wrap(jsonb,jsonb)"},
      {"agent": "w875_writer", "input_schema": {"type": "string"}},
      {"name": "after", "function": "public.w875_wrap(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "wrap"}, {"from": "wrap", "to": "w875_writer"}, {"from": "w875_writer", "to": "after"}]');
SELECT adk_define_app('w875_in_app', 'w875_in');
SELECT * FROM w875_set_events('w875_in_app', 'w875-set-i1', 'go');
SELECT w875_calls('w875-set-i1') AS model_calls;
SELECT node, status FROM adk.workflow_runs WHERE app_name = 'w875_in_app' AND session_id = 'w875-set-i1' ORDER BY node;
-- an input that matches: the writer runs on it
UPDATE adk.workflow_nodes SET input_schema = '{"type": "object", "required": ["node", "got"]}'
 WHERE workflow = 'w875_in' AND name = 'w875_writer';
SELECT * FROM w875_set_events('w875_in_app', 'w875-set-i2', 'go');
SELECT w875_calls('w875-set-i2') AS model_calls;
SELECT node, status FROM adk.workflow_runs WHERE app_name = 'w875_in_app' AND session_id = 'w875-set-i2' ORDER BY node;

-- A nested workflow node: START -> inner (START -> q, no output) -> after.
-- With wait_for_output, after does not run and inner's row stays
-- running; without it, after runs on no input
CREATE FUNCTION w875_quiet(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT '{}'::jsonb $$;
SELECT adk_define_workflow('w875_quiet_inner',
    '[{"name": "q", "function": "public.w875_quiet(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "q"}]');
SELECT adk_define_workflow('w875_wait',
    '[{"name": "inner", "workflow": "w875_quiet_inner", "wait_for_output": true},
      {"name": "after", "function": "public.w875_wrap(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "inner"}, {"from": "inner", "to": "after"}]');
SELECT adk_define_app('w875_wait_app', 'w875_wait');
SELECT * FROM w875_set_events('w875_wait_app', 'w875-set-w1', 'go');
SELECT node_path, status FROM adk.run_states WHERE app_name = 'w875_wait_app' AND session_id = 'w875-set-w1' ORDER BY node_path;
UPDATE adk.workflow_nodes SET wait_for_output = false WHERE workflow = 'w875_wait' AND name = 'inner';
SELECT * FROM w875_set_events('w875_wait_app', 'w875-set-w2', 'go');
-- the nested workflow's output against output_schema: inner (START ->
-- wrap) gives an object; a string schema fails the node (after never
-- runs, inner's row failed), an object schema takes it
SELECT adk_define_workflow('w875_wrap_inner',
    '[{"name": "wrap", "function": "public.w875_wrap(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "wrap"}]');
UPDATE adk.workflow_nodes SET sub_workflow = 'w875_wrap_inner', output_schema = '{"type": "string"}'
 WHERE workflow = 'w875_wait' AND name = 'inner';
SELECT * FROM w875_set_events('w875_wait_app', 'w875-set-o1', 'go');
SELECT node_path, status FROM adk.run_states WHERE app_name = 'w875_wait_app' AND session_id = 'w875-set-o1' ORDER BY node_path;
UPDATE adk.workflow_nodes SET output_schema = '{"type": "object", "required": ["node"]}'
 WHERE workflow = 'w875_wait' AND name = 'inner';
SELECT * FROM w875_set_events('w875_wait_app', 'w875-set-o2', 'go');

-- what stays refused on an agent node: output_schema and wait_for_output
-- (its answer's event completes its row), a retry, a timeout (a parallel
-- worker's settings: 998_workflow_defs)
UPDATE adk.workflow_nodes SET input_schema = NULL, output_schema = '{"type": "string"}'
 WHERE workflow = 'w875_in' AND name = 'w875_writer';
SELECT expect_error($$SELECT * FROM adk_run('w875_in_app', 'u', 'w875-set-r1', 'go')$$);
UPDATE adk.workflow_nodes SET output_schema = NULL, wait_for_output = true
 WHERE workflow = 'w875_in' AND name = 'w875_writer';
SELECT expect_error($$SELECT * FROM adk_run('w875_in_app', 'u', 'w875-set-r2', 'go')$$);
UPDATE adk.workflow_nodes SET wait_for_output = false, timeout = '5 s'
 WHERE workflow = 'w875_in' AND name = 'w875_writer';
SELECT expect_error($$SELECT * FROM adk_run('w875_in_app', 'u', 'w875-set-r3', 'go')$$);

-- later files read every run of adk.workflow_runs: these runs go
DELETE FROM adk.sessions WHERE app_name LIKE 'w875%';
