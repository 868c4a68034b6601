-- An agent node whose agent pauses for human input (docs/workflows.md
-- "Human input"): its long-running call holds the node -- its row
-- waiting on the call, adk.pending_interrupts showing it -- while the
-- other branches go on; the invocation pauses once nothing can run.  The
-- answer resumes that agent's flow in its lane, on the node's branch:
-- the model gets the answer as the tool's result, goes on, and the
-- node completes with the agent's final answer; its successors run once.
-- Two agent nodes paused on two branches, answered in two turns: each
-- resumes its own lane, and the join after them runs once with both
-- outputs.  In a nested workflow, and a chat agent node, too.
-- adk_rebuild_run_states derives the same rows.
SELECT adk_define_model('w886_model', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'gpt-test', api_key_secret => 'test-key');
CREATE TABLE w886_tickets (item text);
CREATE FUNCTION w886_request(item text) RETURNS jsonb LANGUAGE sql AS $$
  INSERT INTO w886_tickets VALUES (item) RETURNING jsonb_build_object('status', 'pending', 'item', item) $$;
COMMENT ON FUNCTION w886_request(text) IS 'File a request; a person answers it later.';
SELECT adk_define_tool('w886_request(text)'::regprocedure, long_running => true);
-- a step that wraps its input, counting its runs
CREATE TABLE w886_wrapped (node text, input jsonb);
CREATE FUNCTION w886_wrap(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    INSERT INTO w886_wrapped VALUES (ctx ->> 'node', input);
    SELECT jsonb_build_object('output', jsonb_build_object('node', ctx ->> 'node', 'got', input))
$$;
CREATE FUNCTION w886_text(t text) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_build_object('role', 'user', 'parts', jsonb_build_array(jsonb_build_object('text', t))) $$;
CREATE FUNCTION w886_mask(t text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT regexp_replace(t, 'call_[A-Za-z0-9]{24}', 'call_<id>', 'g') $$;
-- the events of a run, one line each
CREATE FUNCTION w886_run(app text, sid text, msg jsonb)
RETURNS TABLE (author text, path text, branch text, parts text, output jsonb, long_running text)
LANGUAGE sql AS $$
    SELECT r.event_data ->> 'author', r.event_data #>> '{node_info,path}', r.event_data ->> 'branch',
           w886_mask(r.event_data #>> '{content,parts}'), r.event_data -> 'output',
           w886_mask(r.event_data ->> 'long_running_tool_ids')
      FROM adk_run(app, 'u', sid, msg, NULL, '{"yield_user_message": true}') r
     ORDER BY r.seq
$$;
CREATE FUNCTION w886_rows(sid text)
RETURNS TABLE (node_path text, status text, pending integer, answered integer, branch text,
               triggered_by text, output jsonb)
LANGUAGE sql AS $$
    SELECT node_path, status, cardinality(interrupt_ids), cardinality(answered_ids), branch,
           triggered_by, output
      FROM adk.run_states WHERE session_id = sid ORDER BY node_path COLLATE "C"
$$;
CREATE FUNCTION w886_call(sid text, agent text) RETURNS text LANGUAGE sql AS $$
    SELECT call_id FROM adk.pending_interrupts WHERE session_id = sid AND agent = $2
$$;
-- the rows a rebuild derives from the events, against the live ones
CREATE FUNCTION w886_rebuilt_differ(app text, sid text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    CREATE TEMP TABLE w886_live ON COMMIT DROP AS
        SELECT * FROM adk.run_states WHERE app_name = app AND session_id = sid;
    DELETE FROM adk.run_states WHERE app_name = app AND session_id = sid;
    PERFORM adk_rebuild_run_states(app, 'u', sid);
    SELECT count(*) INTO n FROM (
        (SELECT app_name, user_id, session_id, invocation_id, node_path, status, interrupt_ids,
                answered_ids, agent, updated_at, output, attempt, triggered_by, branch, graph_hash
           FROM w886_live
         EXCEPT
         SELECT app_name, user_id, session_id, invocation_id, node_path, status, interrupt_ids,
                answered_ids, agent, updated_at, output, attempt, triggered_by, branch, graph_hash
           FROM adk.run_states WHERE app_name = app AND session_id = sid)
        UNION ALL
        (SELECT app_name, user_id, session_id, invocation_id, node_path, status, interrupt_ids,
                answered_ids, agent, updated_at, output, attempt, triggered_by, branch, graph_hash
           FROM adk.run_states WHERE app_name = app AND session_id = sid
         EXCEPT
         SELECT app_name, user_id, session_id, invocation_id, node_path, status, interrupt_ids,
                answered_ids, agent, updated_at, output, attempt, triggered_by, branch, graph_hash
           FROM w886_live)) x;
    -- the live rows back (a rebuilt row's input is what its start wrote)
    DELETE FROM adk.run_states WHERE app_name = app AND session_id = sid;
    INSERT INTO adk.run_states SELECT * FROM w886_live;
    DROP TABLE w886_live;
    RETURN n;
END
$$;

-- 1. START -> filer (an agent with a long-running tool) -> wrap; START ->
-- side (a function node): the filer's call holds its node, side runs.
SELECT adk_define_agent('w886_filer', model => 'w886_model', instruction => 'You file requests.',
                        tools => ARRAY['w886_request']);
SELECT adk_define_workflow('w886_one',
    '[{"agent": "w886_filer"}, {"name": "wrap", "function": "public.w886_wrap(jsonb,jsonb)"},
      {"name": "side", "function": "public.w886_wrap(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "w886_filer"}, {"from": "w886_filer", "to": "wrap"},
      {"from": "START", "to": "side"}]');
SELECT adk_define_app('w886_one_app', 'w886_one');
SELECT * FROM w886_run('w886_one_app', 'w886-1',
                       w886_text('call w886_request({"item": "laptop"})'));
SELECT count(*) AS tickets FROM w886_tickets;
SELECT node, count(*) AS runs FROM w886_wrapped GROUP BY node ORDER BY node;
SELECT status, resumed FROM adk.invocations WHERE session_id = 'w886-1';
SELECT * FROM w886_rows('w886-1');
SELECT w886_mask(call_id) AS call_id, tool, args, agent FROM adk.pending_interrupts
 WHERE session_id = 'w886-1';
SELECT node, run_id, status FROM adk.workflow_runs WHERE session_id = 'w886-1' ORDER BY node;
SELECT w886_rebuilt_differ('w886_one_app', 'w886-1') AS rebuilt_rows_differ;
-- the answer: stored on the node's branch; the filer's flow goes on in
-- its lane, its model gets the answer as the tool's result and answers;
-- that answer is the node's output, and wrap runs once, with it
CREATE TEMP TABLE w886_c1 AS SELECT w886_call('w886-1', 'w886_filer') AS id;
SELECT * FROM w886_run('w886_one_app', 'w886-1',
                       adk_function_response((SELECT id FROM w886_c1), 'w886_request',
                                             '{"approved": true}'));
SELECT count(*) AS tickets FROM w886_tickets;
SELECT node, count(*) AS runs FROM w886_wrapped GROUP BY node ORDER BY node;
SELECT input FROM w886_wrapped WHERE node = 'wrap';
SELECT count(DISTINCT invocation_id) AS invocations FROM adk.events WHERE session_id = 'w886-1';
SELECT status, resumed FROM adk.invocations WHERE session_id = 'w886-1';
SELECT * FROM w886_rows('w886-1');
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE session_id = 'w886-1';
-- the resumed request: the node's input, the call, the person's answer
-- as its result (not the tool's provisional one)
SELECT m ->> 'role' AS role, w886_mask(m ->> 'content') AS content,
       w886_mask(m #>> '{tool_calls,0,function,name}') AS call,
       m ->> 'tool_call_id' = (SELECT id FROM w886_c1) AS answers_the_call
  FROM adk.model_calls c, jsonb_array_elements(c.request -> 'messages') WITH ORDINALITY AS x(m, n)
 WHERE c.id = (SELECT max(id) FROM adk.model_calls
                WHERE invocation_id IN (SELECT invocation_id FROM adk.invocations WHERE session_id = 'w886-1'))
 ORDER BY x.n;
SELECT w886_rebuilt_differ('w886_one_app', 'w886-1') AS rebuilt_rows_differ;
-- answered again: no pending call -- plain input, a new invocation
SELECT count(*) > 0 AS ran FROM adk_run('w886_one_app', 'u', 'w886-1',
       adk_function_response((SELECT id FROM w886_c1), 'w886_request', '{"approved": false}'));
SELECT count(DISTINCT invocation_id) AS invocations FROM adk.events WHERE session_id = 'w886-1';

-- 2. Two agent nodes paused on two branches, a join after them: answered
-- in two turns, each resumes its own lane; the join runs once, with both.
SELECT adk_define_agent('w886_left', model => 'w886_model', instruction => 'You file on the left.',
                        tools => ARRAY['w886_request']);
SELECT adk_define_agent('w886_right', model => 'w886_model', instruction => 'You file on the right.',
                        tools => ARRAY['w886_request']);
SELECT adk_define_workflow('w886_two',
    '[{"agent": "w886_left"}, {"agent": "w886_right"}, {"name": "both", "kind": "join"},
      {"name": "wrap", "function": "public.w886_wrap(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "w886_left"}, {"from": "START", "to": "w886_right"},
      {"from": "w886_left", "to": "both"}, {"from": "w886_right", "to": "both"},
      {"from": "both", "to": "wrap"}]');
SELECT adk_define_app('w886_two_app', 'w886_two');
DELETE FROM w886_wrapped;
-- (the two lanes' events are stored as each model answer arrives: shown
-- by path)
SELECT r.event_data ->> 'author' AS author, r.event_data #>> '{node_info,path}' AS path,
       r.event_data ->> 'branch' AS branch, r.event_data ->> 'long_running_tool_ids' <> '[]' AS pauses
  FROM adk_run('w886_two_app', 'u', 'w886-2', w886_text('call w886_request({"item": "desk"})'), NULL,
               '{"yield_user_message": true}') r
 ORDER BY path NULLS FIRST, r.seq;
SELECT * FROM w886_rows('w886-2');
SELECT agent, tool FROM adk.pending_interrupts WHERE session_id = 'w886-2' ORDER BY agent;
-- one message answering both is refused: a user event has one branch
SELECT expect_error($$SELECT count(*) FROM adk_run('w886_two_app', 'u', 'w886-2',
    jsonb_build_object('role', 'user', 'parts', jsonb_build_array(
        adk_function_response(w886_call('w886-2', 'w886_left'), 'w886_request', '{"ok": 1}') -> 'parts' -> 0,
        adk_function_response(w886_call('w886-2', 'w886_right'), 'w886_request', '{"ok": 2}') -> 'parts' -> 0)))$$);
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE session_id = 'w886-2';
-- the right one first: it completes, the join waits for the left
SELECT author, path, branch, parts, output
  FROM w886_run('w886_two_app', 'w886-2',
                adk_function_response(w886_call('w886-2', 'w886_right'), 'w886_request', '{"ok": 2}'));
SELECT count(*) AS wrapped FROM w886_wrapped;
SELECT status FROM adk.invocations WHERE session_id = 'w886-2';
SELECT * FROM w886_rows('w886-2');
SELECT w886_rebuilt_differ('w886_two_app', 'w886-2') AS rebuilt_rows_differ;
-- then the left: the join runs once, with both outputs, then wrap
SELECT author, path, branch, parts, output
  FROM w886_run('w886_two_app', 'w886-2',
                adk_function_response(w886_call('w886-2', 'w886_left'), 'w886_request', '{"ok": 1}'));
SELECT node, input FROM w886_wrapped;
SELECT status FROM adk.invocations WHERE session_id = 'w886-2';
SELECT * FROM w886_rows('w886-2');
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE session_id = 'w886-2';
SELECT w886_rebuilt_differ('w886_two_app', 'w886-2') AS rebuilt_rows_differ;
-- each lane's model calls: its own branch's history only (each answer
-- in one request, never both in one)
SELECT count(*) AS model_calls,
       count(*) FILTER (WHERE strpos(request::text, 'ok\":1') > 0) AS with_left_answer,
       count(*) FILTER (WHERE strpos(request::text, 'ok\":2') > 0) AS with_right_answer,
       count(*) FILTER (WHERE strpos(request::text, 'ok\":1') > 0
                          AND strpos(request::text, 'ok\":2') > 0) AS mixed
  FROM adk.model_calls
 WHERE invocation_id IN (SELECT invocation_id FROM adk.invocations WHERE session_id = 'w886-2');

-- 3. In a nested workflow: the agent node's pause holds the node that
-- runs its workflow too; the answer resumes the agent in its lane below
-- it, and both complete.  A chat agent node (after START, on its
-- activation's branch, with the session's history) pauses and resumes
-- the same way.
SELECT adk_define_workflow('w886_inner', '[{"agent": "w886_filer"}]', '[{"from": "START", "to": "w886_filer"}]');
SELECT adk_define_workflow('w886_outer',
    '[{"name": "sub", "workflow": "w886_inner"}, {"name": "wrap", "function": "public.w886_wrap(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "sub"}, {"from": "sub", "to": "wrap"}]');
SELECT adk_define_app('w886_nest_app', 'w886_outer');
SELECT author, path, branch, long_running <> '[]' AS pauses
  FROM w886_run('w886_nest_app', 'w886-3', w886_text('call w886_request({"item": "box"})'));
SELECT * FROM w886_rows('w886-3');
SELECT author, path, branch, parts, output
  FROM w886_run('w886_nest_app', 'w886-3',
                adk_function_response(w886_call('w886-3', 'w886_filer'), 'w886_request', '{"ok": 3}'));
SELECT * FROM w886_rows('w886-3');
SELECT status FROM adk.invocations WHERE session_id = 'w886-3';
SELECT w886_rebuilt_differ('w886_nest_app', 'w886-3') AS rebuilt_rows_differ;
SELECT adk_define_agent('w886_chat', model => 'w886_model', mode => 'chat', instruction => 'You file requests.',
                        tools => ARRAY['w886_request']);
SELECT adk_define_workflow('w886_chatflow',
    '[{"agent": "w886_chat"}, {"name": "wrap", "function": "public.w886_wrap(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "w886_chat"}, {"from": "w886_chat", "to": "wrap"}]');
SELECT adk_define_app('w886_chat_app', 'w886_chatflow');
SELECT author, path, branch, long_running <> '[]' AS pauses
  FROM w886_run('w886_chat_app', 'w886-4', w886_text('call w886_request({"item": "pen"})'));
SELECT author, path, branch, parts, output
  FROM w886_run('w886_chat_app', 'w886-4',
                adk_function_response(w886_call('w886-4', 'w886_chat'), 'w886_request', '{"ok": 4}'));
SELECT * FROM w886_rows('w886-4');
SELECT w886_rebuilt_differ('w886_chat_app', 'w886-4') AS rebuilt_rows_differ;

DELETE FROM adk.sessions WHERE app_name IN ('w886_one_app', 'w886_two_app', 'w886_nest_app', 'w886_chat_app');
DELETE FROM adk.apps WHERE name IN ('w886_one_app', 'w886_two_app', 'w886_nest_app', 'w886_chat_app');
