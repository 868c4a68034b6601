-- An agent item of a parallel worker whose agent pauses for human input
-- (docs/workflows.md "Parallel workers", "Human input"): its
-- long-running call holds that item -- its row waiting on the call,
-- adk.pending_interrupts showing it -- while the other items go on (the
-- next held one takes its place); the invocation pauses once nothing can
-- run.  An answer (a function response with the call's id) resumes
-- that item's agent in its lane, on the item's branch: the model gets the answer as the tool's result, and the
-- item completes with the agent's final answer.  The parallel worker
-- completes once every item has, outputs in item order; items finished
-- before do not run again.  Two items paused at once are answered in two
-- turns; one message answering both is refused.  (A plain text answers
-- only a request_input, not a tool's call: docs/workflows.md.)  An item
-- that fails still fails the worker.  adk_rebuild_run_states derives the same rows.
SELECT adk_define_model('w868_model', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'gpt-test', api_key_secret => 'test-key');
CREATE TABLE w868_tickets (item text);
CREATE FUNCTION w868_request(item text) RETURNS jsonb LANGUAGE sql AS $$
  INSERT INTO w868_tickets VALUES (item) RETURNING jsonb_build_object('status', 'pending', 'item', item) $$;
COMMENT ON FUNCTION w868_request(text) IS 'File a request; a person answers it later.';
SELECT adk_define_tool('w868_request(text)'::regprocedure, long_running => true);
-- the list a parallel worker takes: the user's text, split on '|'
CREATE FUNCTION w868_split(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', to_jsonb(string_to_array(input #>> '{parts,0,text}', '|')))
$$;
-- a step after the worker, counting its runs
CREATE TABLE w868_wrapped (input jsonb);
CREATE FUNCTION w868_wrap(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    INSERT INTO w868_wrapped VALUES (input);
    SELECT jsonb_build_object('output', input)
$$;
CREATE FUNCTION w868_text(t text) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_build_object('role', 'user', 'parts', jsonb_build_array(jsonb_build_object('text', t))) $$;
CREATE FUNCTION w868_mask(t text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT regexp_replace(t, 'call_[A-Za-z0-9]{24}', 'call_<id>', 'g') $$;
CREATE FUNCTION w868_run(app text, sid text, msg jsonb)
RETURNS TABLE (path text, branch text, parts text, output jsonb, pauses boolean)
LANGUAGE sql AS $$
    SELECT r.event_data #>> '{node_info,path}', r.event_data ->> 'branch',
           w868_mask(r.event_data #>> '{content,parts}'), r.event_data -> 'output',
           r.event_data ->> 'long_running_tool_ids' <> '[]'
      FROM adk_run(app, 'u', sid, msg) r
     ORDER BY r.event_data #>> '{node_info,path}' NULLS FIRST, r.seq
$$;
CREATE FUNCTION w868_rows(sid text)
RETURNS TABLE (node_path text, status text, pending integer, answered integer, branch text,
               triggered_by text, output jsonb)
LANGUAGE sql AS $$
    SELECT node_path, status, cardinality(interrupt_ids), cardinality(answered_ids), branch,
           triggered_by, output
      FROM adk.run_states WHERE session_id = sid ORDER BY node_path COLLATE "C"
$$;
CREATE FUNCTION w868_call(sid text, item text) RETURNS text LANGUAGE sql AS $$
    SELECT call_id FROM adk.pending_interrupts WHERE session_id = sid AND args ->> 'item' = item
$$;
-- the model calls of a session's runs on each branch
CREATE FUNCTION w868_calls(sid text) RETURNS TABLE (branch text, calls bigint) LANGUAGE sql AS $$
    SELECT e.event_data ->> 'branch', count(*)
      FROM adk.events e
     WHERE e.session_id = sid AND e.event_data ->> 'author' = 'w868_filer'
       AND e.event_data -> 'content' ->> 'role' = 'model'
     GROUP BY 1 ORDER BY 1
$$;
-- the rows a rebuild derives from the events, against the live ones;
-- the live rows are put back.  A running parallel worker's row is left
-- out: no event of its own gives it until it ends (a rebuild does not
-- derive it, for a function item's request_input as for an agent item).
CREATE FUNCTION w868_rebuilt_differ(app text, sid text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    CREATE TEMP TABLE w868_live ON COMMIT DROP AS
        SELECT * FROM adk.run_states WHERE app_name = app AND session_id = sid;
    DELETE FROM adk.run_states WHERE app_name = app AND session_id = sid;
    PERFORM adk_rebuild_run_states(app, 'u', sid);
    SELECT count(*) INTO n FROM (
        (SELECT app_name, user_id, session_id, invocation_id, node_path, status, interrupt_ids,
                answered_ids, agent, updated_at, output, attempt, triggered_by, branch, graph_hash
           FROM w868_live WHERE NOT (node_path ~ '/each@[0-9]+$' AND status = 'running')
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
           FROM w868_live)) x;
    DELETE FROM adk.run_states WHERE app_name = app AND session_id = sid;
    INSERT INTO adk.run_states SELECT * FROM w868_live;
    DROP TABLE w868_live;
    RETURN n;
END
$$;

-- 1. split -> each (a parallel worker of the agent node w868_filer, two
-- items at once) -> wrap.  Items 1 and 3 call the long-running tool;
-- item 2 answers at once.  Item 1's pause lets item 3 run.
SELECT adk_define_agent('w868_filer', model => 'w868_model', instruction => 'You file requests.',
                        tools => ARRAY['w868_request']);
SELECT adk_define_workflow('w868_flow',
    '[{"name": "split", "function": "public.w868_split(jsonb,jsonb)"},
      {"name": "each", "kind": "parallel_worker", "worker": "w868_filer", "max_concurrency": 2},
      {"agent": "w868_filer"},
      {"name": "wrap", "function": "public.w868_wrap(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "split"}, {"from": "split", "to": "each"}, {"from": "each", "to": "wrap"}]');
SELECT adk_define_app('w868_app', 'w868_flow');
SELECT path, branch, pauses
  FROM w868_run('w868_app', 'w868-1',
                w868_text('call w868_request({"item": "desk"})|plain chair|call w868_request({"item": "lamp"})'));
SELECT * FROM w868_tickets ORDER BY item;
SELECT count(*) AS wrapped FROM w868_wrapped;
SELECT status FROM adk.invocations WHERE session_id = 'w868-1';
SELECT * FROM w868_rows('w868-1');
SELECT tool, args, agent FROM adk.pending_interrupts WHERE session_id = 'w868-1' ORDER BY args ->> 'item';
SELECT w868_rebuilt_differ('w868_app', 'w868-1') AS rebuilt_rows_differ;
-- one message answering both items' calls is refused, nothing stored
SELECT expect_error($$SELECT count(*) FROM adk_run('w868_app', 'u', 'w868-1',
    jsonb_build_object('role', 'user', 'parts', jsonb_build_array(
        adk_function_response(w868_call('w868-1', 'desk'), 'w868_request', '{"ok": 1}') -> 'parts' -> 0,
        adk_function_response(w868_call('w868-1', 'lamp'), 'w868_request', '{"ok": 3}') -> 'parts' -> 0)))$$);
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE session_id = 'w868-1';
-- item 3 answered by id: its agent goes on in its lane and completes the
-- item; the worker still waits for item 1
SELECT path, branch, parts, output
  FROM w868_run('w868_app', 'w868-1',
                adk_function_response(w868_call('w868-1', 'lamp'), 'w868_request', '{"ok": 3}'));
SELECT status FROM adk.invocations WHERE session_id = 'w868-1';
SELECT * FROM w868_rows('w868-1');
SELECT count(*) AS wrapped FROM w868_wrapped;
SELECT w868_rebuilt_differ('w868_app', 'w868-1') AS rebuilt_rows_differ;
-- item 1 answered by id: the worker completes with the three outputs in
-- item order, wrap runs once; items 2 and 3 do not run again
SELECT path, branch, parts, output
  FROM w868_run('w868_app', 'w868-1',
                adk_function_response(w868_call('w868-1', 'desk'), 'w868_request', '{"ok": 1}'));
SELECT status FROM adk.invocations WHERE session_id = 'w868-1';
SELECT * FROM w868_rows('w868-1');
SELECT input FROM w868_wrapped;
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE session_id = 'w868-1';
SELECT * FROM w868_tickets ORDER BY item;
-- each item's lane ran its own model calls; item 2's ran once
SELECT * FROM w868_calls('w868-1');
-- the answer reached item 1's model as its call's result
SELECT count(*) AS answered_in_request
  FROM adk.model_calls
 WHERE invocation_id IN (SELECT invocation_id FROM adk.invocations WHERE session_id = 'w868-1')
   AND strpos(request::text, 'ok\":1') > 0 AND strpos(request::text, 'desk') > 0
   AND strpos(request::text, 'ok\":3') = 0 AND strpos(request::text, 'lamp') = 0;
SELECT w868_rebuilt_differ('w868_app', 'w868-1') AS rebuilt_rows_differ;

-- 2. Fail-fast: one item at a time; item 1 pauses, item 2 (released
-- then) fails -- the worker fails, the invocation ends failed, item 1 is
-- cancelled and nothing waits.
SELECT adk_define_workflow('w868_one_flow',
    '[{"name": "split", "function": "public.w868_split(jsonb,jsonb)"},
      {"name": "each", "kind": "parallel_worker", "worker": "w868_filer", "max_concurrency": 1},
      {"agent": "w868_filer"},
      {"name": "wrap", "function": "public.w868_wrap(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "split"}, {"from": "split", "to": "each"}, {"from": "each", "to": "wrap"}]');
SELECT adk_define_app('w868_one_app', 'w868_one_flow');
SELECT path, branch, pauses, parts
  FROM w868_run('w868_one_app', 'w868-2',
                w868_text('call w868_request({"item": "pen"})|broken [[fault:400]]'));
SELECT status FROM adk.invocations WHERE session_id = 'w868-2';
SELECT node_path, status FROM w868_rows('w868-2');
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE session_id = 'w868-2';
SELECT count(*) AS wrapped FROM w868_wrapped;
SELECT w868_rebuilt_differ('w868_one_app', 'w868-2') AS rebuilt_rows_differ;

DELETE FROM adk.sessions WHERE app_name IN ('w868_app', 'w868_one_app');
DELETE FROM adk.apps WHERE name IN ('w868_app', 'w868_one_app');
