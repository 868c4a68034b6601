-- RunState rows of graph workflows and the rest of human input
-- (docs/workflows.md "Human input", "RunState"): each node's row has the
-- node that triggered it, its branch and the graph hash it ran under,
-- which a rebuild derives from the events and a resume reads; a plain
-- text answers the one pending request for input (as ADK-JS routes it)
-- and is refused when several are pending; an answer that does not match
-- its request's response schema is refused and nothing is stored; a
-- node that asks again with a new interrupt id every turn is not wedged
-- (ADK PR #635); another tenant cannot answer someone else's request.

-- Asks until it has two answers (a new id each time), then gives them
CREATE FUNCTION w89_again(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT CASE WHEN (SELECT count(*) FROM jsonb_object_keys(ctx -> 'resume_inputs')) >= 2
                THEN jsonb_build_object('output', jsonb_build_object('input', input,
                                        'answers', (SELECT jsonb_agg(v ORDER BY v::text)
                                                      FROM jsonb_each(ctx -> 'resume_inputs') x(k, v))))
                ELSE jsonb_build_object('request_input', jsonb_build_object(
                         'message', 'Once more?', 'payload', ctx -> 'resume_inputs')) END
$$;
-- Asks once, with a response schema; the answer (a handoff) is its output
CREATE FUNCTION w89_ask(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('request_input', jsonb_build_object(
               'message', 'Approve ' || (ctx ->> 'node') || '?',
               'response_schema', '{"type": "object", "required": ["ok"],
                                    "properties": {"ok": {"type": "boolean"}}}'::jsonb)) $$;
CREATE FUNCTION w89_tag(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', jsonb_build_object('by', ctx ->> 'node', 'got', input)) $$;
CREATE FUNCTION w89_text(t text) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('role', 'user', 'parts', jsonb_build_array(jsonb_build_object('text', t))) $$;
CREATE FUNCTION w89_events(app text, sid text, msg jsonb, usr text DEFAULT 'u')
RETURNS TABLE (path text, output jsonb, call text)
LANGUAGE sql AS $$
    SELECT r.event_data #>> '{node_info,path}', r.event_data -> 'output',
           r.event_data #>> '{content,parts,0,function_call,name}'
      FROM adk_run(app, usr, sid, msg) r
     WHERE r.event_data ->> 'author' <> 'user'
     ORDER BY r.seq
$$;
CREATE FUNCTION w89_rows(sid text)
RETURNS TABLE (node text, run_id text, status text, triggered_by text, branch text,
               same_hash boolean, output jsonb)
LANGUAGE sql AS $$
    SELECT r.node, r.run_id, r.status, r.triggered_by, r.branch,
           r.graph_hash = (SELECT w.graph_hash FROM adk.workflows w WHERE w.name = r.workflow),
           r.output
      FROM adk.workflow_runs r WHERE r.app_name LIKE 'w89%' AND r.session_id = sid ORDER BY r.node, r.run_id $$;
-- the session's user events as stored, call ids masked
CREATE FUNCTION w89_user_events(sid text) RETURNS SETOF jsonb LANGUAGE sql AS $$
    SELECT regexp_replace((e.event_data -> 'content')::text, 'adk-[0-9a-f-]+', 'adk-<id>', 'g')::jsonb
      FROM adk.events e WHERE e.app_name LIKE 'w89%' AND e.session_id = sid AND e.event_data ->> 'author' = 'user' ORDER BY e.seq $$;

-- 1. A fan-out: START -> prep -> (left, right) -> done; left asks.  Each
-- row has what triggered it, its branch and the graph hash, as the
-- workflow's view shows them
SELECT adk_define_workflow('w89_fan',
    '[{"name": "prep", "function": "public.w89_tag(jsonb,jsonb)"},
      {"name": "left", "function": "public.w89_ask(jsonb,jsonb)"},
      {"name": "right", "function": "public.w89_tag(jsonb,jsonb)"},
      {"name": "done", "kind": "join"}]',
    '[{"from": "START", "to": "prep"}, {"from": "prep", "to": "left"}, {"from": "prep", "to": "right"},
      {"from": "left", "to": "done"}, {"from": "right", "to": "done"}]');
SELECT adk_define_app('w89_fan_app', 'w89_fan');
SELECT path, call FROM w89_events('w89_fan_app', 'f1', w89_text('go'));
SELECT node, run_id, status, triggered_by, branch, same_hash FROM w89_rows('f1');
-- the events carry them too (custom_metadata; the branch is ADK's)
SELECT e.event_data #>> '{node_info,path}' AS path, e.event_data ->> 'branch' AS branch,
       e.event_data #>> '{custom_metadata,adk_triggered_by}' AS triggered_by,
       e.event_data #>> '{custom_metadata,adk_graph_hash}' = w.graph_hash AS same_hash
  FROM adk.events e, adk.workflows w
 WHERE e.app_name = 'w89_fan_app' AND e.session_id = 'f1' AND e.event_data ->> 'author' = 'w89_fan' AND w.name = 'w89_fan'
 ORDER BY e.seq;

-- 2. The response schema: an answer that does not match is refused
-- (22023), nothing is stored and the request stays pending; the
-- invocation is still waiting (call ids masked)
CREATE FUNCTION w89_error(q text) RETURNS text LANGUAGE sql AS $$
    SELECT regexp_replace(expect_error(q), 'adk-[0-9a-f-]+', 'adk-<id>', 'g') $$;
SELECT call_id FROM adk.pending_interrupts WHERE app_name LIKE 'w89%' AND session_id = 'f1' \gset
SELECT count(*) AS events_before FROM adk.events WHERE app_name = 'w89_fan_app' AND session_id = 'f1';
SELECT w89_error(format($q$SELECT * FROM adk_run('w89_fan_app', 'u', 'f1',
                             adk_function_response(%L, 'adk_request_input', '{"ok": "yes"}'))$q$, :'call_id'));
SELECT w89_error(format($q$SELECT * FROM adk_run('w89_fan_app', 'u', 'f1',
                             adk_function_response(%L, 'adk_request_input', '{"okay": true}'))$q$, :'call_id'));
SELECT w89_error(format($q$SELECT * FROM adk_run('w89_fan_app', 'u', 'f1',
                             adk_function_response(%L, 'adk_request_input', '{"result": 7}'))$q$, :'call_id'));
SELECT count(*) AS events_after FROM adk.events WHERE app_name = 'w89_fan_app' AND session_id = 'f1';
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE app_name LIKE 'w89%' AND session_id = 'f1';
SELECT status FROM adk.invocations WHERE app_name = 'w89_fan_app' AND session_id = 'f1';
-- a matching answer, bare ({"result": value}) or not, resumes: the join
-- runs on the root's branch
SELECT path, output FROM w89_events('w89_fan_app', 'f1',
       adk_function_response(:'call_id', 'adk_request_input', '{"result": {"ok": true}}'));
SELECT node, run_id, status, triggered_by, branch, same_hash FROM w89_rows('f1');

-- 3. Rebuilt from the events, the rows are the live ones, every column
-- but input (a workflow node's input is not in its events: the rebuild
-- keeps a row's own)
CREATE TEMP TABLE w89_live AS SELECT * FROM adk.run_states WHERE app_name = 'w89_fan_app' AND session_id = 'f1';
SELECT adk_rebuild_run_states('w89_fan_app', 'u', 'f1') AS rebuilt;
SELECT (SELECT count(*) FROM (SELECT * FROM w89_live EXCEPT SELECT * FROM adk.run_states) x) AS missing,
       (SELECT count(*) FROM (SELECT * FROM adk.run_states WHERE app_name = 'w89_fan_app' AND session_id = 'f1'
                              EXCEPT SELECT * FROM w89_live) x) AS extra;
DELETE FROM adk.run_states WHERE app_name = 'w89_fan_app' AND session_id = 'f1';
SELECT adk_rebuild_run_states('w89_fan_app', 'u', 'f1') AS rebuilt;
SELECT (SELECT count(*) FROM (SELECT app_name, user_id, session_id, invocation_id, node_path, status,
                                     interrupt_ids, answered_ids, agent, updated_at, output, attempt,
                                     triggered_by, branch, graph_hash FROM w89_live
                              EXCEPT
                              SELECT app_name, user_id, session_id, invocation_id, node_path, status,
                                     interrupt_ids, answered_ids, agent, updated_at, output, attempt,
                                     triggered_by, branch, graph_hash FROM adk.run_states) x) AS differ,
       (SELECT count(*) FROM adk.run_states WHERE app_name = 'w89_fan_app' AND session_id = 'f1' AND input IS NULL) AS without_input;

-- 4. A resume reads the branch and the graph hash from the row: a row
-- whose hash is not the workflow's refuses the answer (55000), whatever
-- the events say
SELECT path, call FROM w89_events('w89_fan_app', 'f2', w89_text('go'));
SELECT call_id AS call_f2 FROM adk.pending_interrupts WHERE app_name LIKE 'w89%' AND session_id = 'f2' \gset
UPDATE adk.run_states SET graph_hash = 'not-the-hash' WHERE app_name = 'w89_fan_app' AND session_id = 'f2' AND node_path = 'w89_fan/prep@1';
SELECT expect_error(format($q$SELECT * FROM adk_run('w89_fan_app', 'u', 'f2',
                             adk_function_response(%L, 'adk_request_input', '{"ok": true}'))$q$, :'call_f2'));
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE app_name LIKE 'w89%' AND session_id = 'f2';

-- 5. Plain text: with exactly one request for input pending it is the
-- answer -- stored as ADK's function response, {"result": "<text>"} --
-- and a bare value is not checked against the schema (ADK-JS takes plain
-- text as it is)
UPDATE adk.run_states r SET graph_hash = w.graph_hash FROM adk.workflows w
 WHERE r.app_name = 'w89_fan_app' AND r.session_id = 'f2' AND w.name = 'w89_fan';
SELECT path, output FROM w89_events('w89_fan_app', 'f2', w89_text('Looks fine.'));
SELECT * FROM w89_user_events('f2');
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE app_name LIKE 'w89%' AND session_id = 'f2';
SELECT count(DISTINCT invocation_id) AS invocations, max(status) AS status
  FROM adk.invocations WHERE app_name = 'w89_fan_app' AND session_id = 'f2';
-- with nothing pending, plain text is a new run, as before
SELECT path, call FROM w89_events('w89_fan_app', 'f2', w89_text('Again.'));
SELECT count(DISTINCT invocation_id) AS invocations
  FROM adk.invocations WHERE app_name = 'w89_fan_app' AND session_id = 'f2';

-- 6. Plain text with several requests pending: refused (55000, its hint
-- names adk.pending_interrupts), nothing stored, both still pending
SELECT adk_define_workflow('w89_two',
    '[{"name": "p", "function": "public.w89_ask(jsonb,jsonb)"},
      {"name": "q", "function": "public.w89_ask(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "p"}, {"from": "START", "to": "q"}]');
SELECT adk_define_app('w89_two_app', 'w89_two');
SELECT path, call FROM w89_events('w89_two_app', 't1', w89_text('go'));
SELECT count(*) AS events_before FROM adk.events WHERE app_name = 'w89_two_app' AND session_id = 't1';
SELECT expect_error($q$SELECT * FROM adk_run('w89_two_app', 'u', 't1', 'Yes.')$q$);
SELECT count(*) AS events_after FROM adk.events WHERE app_name = 'w89_two_app' AND session_id = 't1';
SELECT count(*) AS pending FROM adk.pending_interrupts WHERE app_name LIKE 'w89%' AND session_id = 't1';
-- a message that is not plain text alone (an answer by id) still answers
-- one of them, and then plain text answers the other
SELECT call_id AS call_p FROM adk.pending_interrupts WHERE app_name LIKE 'w89%' AND session_id = 't1' AND args ->> 'message' = 'Approve p?' \gset
SELECT path, output FROM w89_events('w89_two_app', 't1',
       adk_function_response(:'call_p', 'adk_request_input', '{"ok": false}'));
SELECT path, output FROM w89_events('w89_two_app', 't1', w89_text('Fine by me.'));
SELECT count(DISTINCT invocation_id) AS invocations, max(status) AS status
  FROM adk.invocations WHERE app_name = 'w89_two_app' AND session_id = 't1';

-- 7. ADK PR #635: a re-run node that asks again with a new interrupt id
-- every turn is not wedged -- each answer resumes it, the answers
-- accumulate, and it completes with both
SELECT adk_define_workflow('w89_again',
    '[{"name": "again", "function": "public.w89_again(jsonb,jsonb)", "rerun_on_resume": true},
      {"name": "after", "function": "public.w89_tag(jsonb,jsonb)"}]',
    '[{"from": "START", "to": "again"}, {"from": "again", "to": "after"}]');
SELECT adk_define_app('w89_again_app', 'w89_again');
SELECT path, call FROM w89_events('w89_again_app', 'a1', w89_text('go'));
SELECT call_id AS first_id FROM adk.pending_interrupts WHERE app_name LIKE 'w89%' AND session_id = 'a1' \gset
SELECT path, call FROM w89_events('w89_again_app', 'a1',
       adk_function_response(:'first_id', 'adk_request_input', '{"n": 1}'));
SELECT call_id AS second_id FROM adk.pending_interrupts WHERE app_name LIKE 'w89%' AND session_id = 'a1' \gset
SELECT :'first_id' <> :'second_id' AS new_id;
SELECT node, run_id, status FROM w89_rows('a1');
SELECT path, output FROM w89_events('w89_again_app', 'a1',
       adk_function_response(:'second_id', 'adk_request_input', '{"n": 2}'));
SELECT node, run_id, status, triggered_by, output FROM w89_rows('a1');
SELECT count(DISTINCT invocation_id) AS invocations, max(status) AS status,
       (SELECT count(*) FROM adk.pending_interrupts WHERE app_name LIKE 'w89%' AND session_id = 'a1') AS pending
  FROM adk.invocations WHERE app_name = 'w89_again_app' AND session_id = 'a1';

-- 8. Tenancy 'role': bob can neither answer alice's request by id nor by
-- plain text; it stays pending, and alice answers it
CREATE ROLE w89_alice IN ROLE adk_user;
CREATE ROLE w89_bob IN ROLE adk_user;
SELECT adk_define_app('w89_ten_app', 'w89_fan', tenancy => 'role');
SET ROLE w89_alice;
SELECT path, call FROM w89_events('w89_ten_app', 'r1', w89_text('go'), 'w89_alice');
SELECT call_id AS alice_call FROM adk.pending_interrupts WHERE app_name LIKE 'w89%' AND session_id = 'r1' \gset
SET ROLE w89_bob;
SELECT count(*) AS bob_sees FROM adk.pending_interrupts WHERE app_name LIKE 'w89%' AND session_id = 'r1';
SELECT expect_error(format($q$SELECT * FROM adk_run('w89_ten_app', 'w89_alice', 'r1',
                             adk_function_response(%L, 'adk_request_input', '{"ok": true}'))$q$, :'alice_call'));
SELECT expect_error($q$SELECT * FROM adk_run('w89_ten_app', 'w89_alice', 'r1', 'Yes.')$q$);
-- his own session of the same id has nothing pending: his text is a new run
SELECT path, call FROM w89_events('w89_ten_app', 'r1', w89_text('Yes.'), 'w89_bob');
RESET ROLE;
SELECT user_id, count(*) AS pending FROM adk.pending_interrupts WHERE app_name = 'w89_ten_app'
 GROUP BY user_id ORDER BY user_id;
SET ROLE w89_alice;
SELECT path, output FROM w89_events('w89_ten_app', 'r1', w89_text('Go ahead.'), 'w89_alice');
RESET ROLE;
SELECT user_id, count(*) AS pending FROM adk.pending_interrupts WHERE app_name = 'w89_ten_app'
 GROUP BY user_id ORDER BY user_id;

-- later files read every run of adk.workflow_runs: these runs go
DELETE FROM adk.sessions WHERE app_name LIKE 'w89%';
DELETE FROM adk.apps WHERE name LIKE 'w89%';
DROP ROLE w89_alice;
DROP ROLE w89_bob;
