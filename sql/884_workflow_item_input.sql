-- An item of a parallel worker asks for human input (docs/workflows.md
-- "Human input", "Parallel workers"; ADK PR #708): the item's activation
-- waits -- its row, its request in adk.pending_interrupts -- while the
-- other items go on and finish, their outputs kept in their rows; the
-- parallel worker does not complete and the invocation pauses once
-- nothing can run.  The answer resumes that item only (a handoff: the
-- answer is its output; rerun_on_resume: it runs again with its original
-- input and the answers), and once every item is done the worker
-- completes with the outputs in item order -- the answered item's too,
-- which PR #708 lost.  Items finished before the pause do not run again
-- (a counter shows it); several items asking are answered one by one,
-- the worker completing after the last; an item that fails after another
-- paused still fails the worker (fail-fast), the waiting item cancelled.

-- How many times each item of each session ran
CREATE TABLE w884_calls (sid text, item text, n integer NOT NULL, PRIMARY KEY (sid, item));
-- An item: "?x" asks (interrupt id "q-x") until it has its answer, "x"
-- fails, any other is upper-cased
CREATE FUNCTION w884_item(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    it text := input #>> '{}';
    ask text := 'q-' || ltrim(it, '?');
BEGIN
    INSERT INTO w884_calls AS c VALUES (ctx ->> 'session_id', it, 1)
        ON CONFLICT (sid, item) DO UPDATE SET n = c.n + 1;
    IF it = 'x' THEN
        RAISE EXCEPTION 'item x fails';
    END IF;
    IF left(it, 1) <> '?' THEN
        RETURN jsonb_build_object('output', upper(it));
    END IF;
    IF ctx -> 'resume_inputs' ? ask THEN
        RETURN jsonb_build_object('output', jsonb_build_object('item', it, 'input', input,
                                                               'answer', ctx #> ARRAY['resume_inputs', ask]));
    END IF;
    RETURN jsonb_build_object('request_input', jsonb_build_object(
               'interrupt_id', ask, 'message', 'Is ' || it || ' right?', 'payload', input));
END $$;
CREATE FUNCTION w884_split(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', to_jsonb(string_to_array(input #>> '{parts,0,text}', ',')))
$$;
CREATE FUNCTION w884_after(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', jsonb_build_object('after', input))
$$;
-- START -> split -> each (a parallel worker of "worker") -> after
CREATE PROCEDURE w884_define(name text, rerun boolean, max_items integer) LANGUAGE plpgsql AS $$
BEGIN
    PERFORM adk_define_workflow(name,
        jsonb_build_array(jsonb_build_object('name', 'split', 'function', 'public.w884_split(jsonb,jsonb)'),
                          jsonb_build_object('name', 'each', 'kind', 'parallel_worker', 'worker', 'worker',
                                             'max_concurrency', max_items),
                          jsonb_build_object('name', 'worker', 'function', 'public.w884_item(jsonb,jsonb)',
                                             'rerun_on_resume', rerun),
                          jsonb_build_object('name', 'after', 'function', 'public.w884_after(jsonb,jsonb)')),
        '[{"from": "START", "to": "split"}, {"from": "split", "to": "each"}, {"from": "each", "to": "after"}]');
    PERFORM adk_define_app(name || '_app', name);
END $$;
CREATE FUNCTION w884_events(app text, sid text, msg jsonb)
RETURNS TABLE (path text, branch text, output jsonb, asks text, error text)
LANGUAGE sql AS $$
    SELECT r.event_data #>> '{node_info,path}', r.event_data ->> 'branch', r.event_data -> 'output',
           r.event_data #>> '{content,parts,0,function_call,id}', r.event_data ->> 'error_message'
      FROM adk_run(app, 'u', sid, msg) r
     WHERE r.event_data ->> 'author' <> 'user'
     ORDER BY r.seq
$$;
CREATE FUNCTION w884_text(t text) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('role', 'user', 'parts', jsonb_build_array(jsonb_build_object('text', t))) $$;
CREATE FUNCTION w884_answer(call_id text, answer jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT adk_function_response(call_id, 'adk_request_input', answer) $$;
CREATE FUNCTION w884_rows(sid text)
RETURNS TABLE (node text, run_id text, status text, branch text, waiting_on text[], output jsonb)
LANGUAGE sql AS $$
    SELECT node, run_id, status, branch, waiting_on, output FROM adk.workflow_runs
     WHERE session_id = sid ORDER BY node, run_id::integer, status $$;
CREATE FUNCTION w884_counts(sid text) RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(item || '=' || n, ' ' ORDER BY item) FROM w884_calls WHERE w884_calls.sid = $1 $$;

-- Handoff (rerun_on_resume false): "?b" asks; "a" and "c" finish, each on
-- its own sub-branch "worker@<place>" (ADK-Go's); the worker and "after"
-- wait; the invocation pauses with one request, made by worker@2
CALL w884_define('w884_hand', false, 0);
SELECT * FROM w884_events('w884_hand_app', 'w884-h1', w884_text('a,?b,c'));
SELECT call_id, args ->> 'message' AS message, args -> 'payload' AS payload
  FROM adk.pending_interrupts WHERE session_id = 'w884-h1';
SELECT status FROM adk.invocations WHERE session_id = 'w884-h1';
SELECT * FROM w884_rows('w884-h1');
SELECT w884_counts('w884-h1') AS runs;
-- a rebuild while it waits keeps the parallel worker's running row (it
-- has no event of its own until it ends, so the events alone cannot give
-- it: its start wrote it), and the answer below still completes it
SELECT adk_rebuild_run_states('w884_hand_app', 'u', 'w884-h1') AS rows;
SELECT node, run_id, status FROM w884_rows('w884-h1');
-- the answer is worker@2's output; the worker completes with the outputs
-- in item order, the answered item's in its place; "after" runs; "a" and
-- "c" did not run again
SELECT * FROM w884_events('w884_hand_app', 'w884-h1', w884_answer('q-b', '{"ok": true}'));
SELECT w884_counts('w884-h1') AS runs;
SELECT count(DISTINCT invocation_id) AS invocations, max(status) AS status
  FROM adk.invocations WHERE session_id = 'w884-h1';
SELECT * FROM w884_rows('w884-h1');
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE session_id = 'w884-h1';
-- answered again: nothing is pending, so it is plain input, a new run
-- (the paused run resumed once)
SELECT path FROM w884_events('w884_hand_app', 'w884-h1', w884_answer('q-b', '{"ok": true}'))
 WHERE path LIKE '%split%';
SELECT count(DISTINCT invocation_id) AS invocations FROM adk.invocations WHERE session_id = 'w884-h1';

-- Re-run (rerun_on_resume): two items ask at once; each answer re-runs
-- its item only, with its original input and the answer; the worker
-- completes after the last answer, the outputs in item order whatever
-- order the answers came in
CALL w884_define('w884_rerun', true, 0);
SELECT path, branch, output, asks FROM w884_events('w884_rerun_app', 'w884-r1', w884_text('a,?b,c,?d'));
SELECT call_id FROM adk.pending_interrupts WHERE session_id = 'w884-r1' ORDER BY call_id;
-- d's answer first: worker@4 runs again and completes; b still waits
SELECT * FROM w884_events('w884_rerun_app', 'w884-r1', w884_answer('q-d', '"yes, d"'));
SELECT status FROM adk.invocations WHERE session_id = 'w884-r1';
SELECT node, run_id, status, waiting_on FROM w884_rows('w884-r1');
-- the plain text answers the one request left (b's)
SELECT path, jsonb_pretty(output) AS output FROM w884_events('w884_rerun_app', 'w884-r1', w884_text('yes, b'));
SELECT w884_counts('w884-r1') AS runs;
SELECT count(DISTINCT invocation_id) AS invocations, max(status) AS status
  FROM adk.invocations WHERE session_id = 'w884-r1';
SELECT node, run_id, status FROM w884_rows('w884-r1');

-- max_concurrency 1: the item that asks frees its place, the held ones run
CALL w884_define('w884_one', false, 1);
SELECT path, output, asks FROM w884_events('w884_one_app', 'w884-o1', w884_text('?p,q,r'));
SELECT path, output FROM w884_events('w884_one_app', 'w884-o1', w884_answer('q-p', '"P!"'));
SELECT w884_counts('w884-o1') AS runs;

-- Fail-fast after a pause: "?b" waits, then "x" fails -- the worker fails,
-- the waiting item is cancelled by an event of its own, its request is
-- no longer pending, the invocation failed, "c" never ran
SELECT path, asks, error FROM w884_events('w884_hand_app', 'w884-f1', w884_text('?b,x,c'));
SELECT node, run_id, status, waiting_on FROM w884_rows('w884-f1');
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE session_id = 'w884-f1';
SELECT status FROM adk.invocations WHERE session_id = 'w884-f1';
SELECT w884_counts('w884-f1') AS runs;
-- ... and when an answered item's re-run fails: two items wait; the
-- answer to one makes its re-run raise -- the worker fails, the other
-- item, still waiting, is cancelled and its request no longer pending
CREATE FUNCTION w884_item2(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    IF ctx -> 'resume_inputs' ? 'q-bad' THEN
        RAISE EXCEPTION 'the answer was refused';
    END IF;
    RETURN jsonb_build_object('request_input', jsonb_build_object('interrupt_id', 'q-' || (input #>> '{}')));
END $$;
SELECT adk_define_workflow('w884_rerun',
    '[{"name": "split", "function": "public.w884_split(jsonb,jsonb)"},
      {"name": "each", "kind": "parallel_worker", "worker": "worker"},
      {"name": "worker", "function": "public.w884_item2(jsonb,jsonb)", "rerun_on_resume": true},
      {"name": "after", "function": "public.w884_after(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "split"}, {"from": "split", "to": "each"}, {"from": "each", "to": "after"}]');
SELECT path, asks FROM w884_events('w884_rerun_app', 'w884-f2', w884_text('good,bad'));
SELECT path, error FROM w884_events('w884_rerun_app', 'w884-f2', w884_answer('q-bad', '"no"'));
SELECT node, run_id, status FROM w884_rows('w884-f2');
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE session_id = 'w884-f2';
SELECT status FROM adk.invocations WHERE session_id = 'w884-f2' ORDER BY started_at;

-- Nested workflow items (max_concurrency 1): item "?n" asks inside its
-- workflow, which holds the item; the next item takes its place; the
-- answer resumes the nested workflow, the item completes with its output,
-- then the worker, in item order
SELECT adk_define_workflow('w884_inner', '[{"name": "ask", "function": "public.w884_item(jsonb,jsonb)"}]',
                           '[{"from": "START", "to": "ask"}]');
SELECT adk_define_workflow('w884_nest',
    '[{"name": "split", "function": "public.w884_split(jsonb,jsonb)"},
      {"name": "each", "kind": "parallel_worker", "worker": "worker", "max_concurrency": 1},
      {"name": "worker", "workflow": "w884_inner"}]',
    '[{"from": "START", "to": "split"}, {"from": "split", "to": "each"}]');
SELECT adk_define_app('w884_nest_app', 'w884_nest');
SELECT path, branch, output, asks FROM w884_events('w884_nest_app', 'w884-n1', w884_text('m,?n,o'));
SELECT node_path, status, branch, interrupt_ids FROM adk.run_states
 WHERE session_id = 'w884-n1' ORDER BY node_path COLLATE "C";
SELECT path, branch, output FROM w884_events('w884_nest_app', 'w884-n1', w884_answer('q-n', '"N!"'));
SELECT status FROM adk.invocations WHERE session_id = 'w884-n1';
SELECT w884_counts('w884-n1') AS runs;

-- A rebuild of adk.run_states from the events gives the same rows
CREATE TEMP TABLE w884_before AS
SELECT invocation_id, node_path, status, interrupt_ids, output, branch FROM adk.run_states
 WHERE session_id IN ('w884-h1', 'w884-r1', 'w884-o1', 'w884-f1', 'w884-f2', 'w884-n1');
SELECT adk_rebuild_run_states(app_name, 'u', id) FROM adk.sessions
 WHERE id IN ('w884-h1', 'w884-r1', 'w884-o1', 'w884-f1', 'w884-f2', 'w884-n1') ORDER BY id;
SELECT count(*) AS differ FROM (
    (SELECT invocation_id, node_path, status, interrupt_ids, output, branch FROM adk.run_states
      WHERE session_id IN ('w884-h1', 'w884-r1', 'w884-o1', 'w884-f1', 'w884-f2', 'w884-n1')
     EXCEPT SELECT * FROM w884_before)
    UNION ALL
    (SELECT * FROM w884_before
     EXCEPT SELECT invocation_id, node_path, status, interrupt_ids, output, branch FROM adk.run_states
      WHERE session_id IN ('w884-h1', 'w884-r1', 'w884-o1', 'w884-f1', 'w884-f2', 'w884-n1'))) d;

-- later files read every run of adk.workflow_runs: these runs go
DELETE FROM adk.sessions WHERE app_name LIKE 'w884%';
