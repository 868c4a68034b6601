-- Seeing a graph workflow (docs/workflows.md, "Seeing it"):
-- adk_workflow_mermaid draws the graph -- node kinds, routes (escaped),
-- default edges, a parallel worker's node -- and, for an invocation, each
-- node's latest status from adk.run_states; adk.workflow_runs lists the
-- activations and what a waiting node waits on.  Under tenancy a user
-- sees only their own runs.  The engine that writes these run_states rows
-- is not built yet: the rows are written here as the owner.
CREATE FUNCTION wf_pick(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT input $$;
SELECT adk_define_agent('wf_writer', mode => 'single_turn', description => 'Writes a draft.');
SELECT adk_define_agent('wf_editor', mode => 'single_turn');
CREATE FUNCTION wf_publish(text_to_publish text) RETURNS jsonb LANGUAGE sql AS $$ SELECT jsonb_build_object('published', true) $$;
SELECT adk_define_tool('wf_publish(text)'::regprocedure);
SELECT adk_define_workflow('wf_sub', '[{"name": "polish", "function": "public.wf_pick(jsonb,jsonb)"}]',
                           '[{"from": "START", "to": "polish"}]');
SELECT adk_define_workflow('wf_pic',
    nodes => '[{"name": "draft", "agent": "wf_writer"},
               {"name": "review", "function": "public.wf_pick(jsonb,jsonb)", "rerun_on_resume": true},
               {"name": "edit", "agent": "wf_editor"},
               {"name": "each", "worker": "check"},
               {"name": "check", "function": "public.wf_pick(jsonb,jsonb)"},
               {"name": "finish", "workflow": "wf_sub"},
               {"name": "both", "kind": "join"},
               {"name": "publish", "tool": "wf_publish"}]',
    edges => '[{"from": "START", "to": "draft"},
               {"from": "draft", "to": "review"},
               {"from": "review", "to": "edit", "route": ["revise", "say \"no\" <now> #1; 50%"]},
               {"from": "review", "to": "each", "default": true},
               {"from": "review", "to": "finish", "route": "approve"},
               {"from": "edit", "to": "draft", "route": "again"},
               {"from": "each", "to": "both"},
               {"from": "finish", "to": "both"},
               {"from": "both", "to": "publish"}]');

-- a tool a node runs stays
SELECT expect_error($$DELETE FROM adk.tools WHERE name = 'wf_publish'$$);
SELECT expect_error($$UPDATE adk.tools SET name = 'wf_publish2' WHERE name = 'wf_publish'$$);

-- the graph alone
SELECT adk_workflow_mermaid('wf_pic');
SELECT adk_workflow_mermaid('wf_sub');
SELECT expect_error($$SELECT adk_workflow_mermaid('wf_nothing')$$);

-- runs of two users of an app with tenancy 'role' (the user id is the
-- role's name), written as the owner
CREATE ROLE wf_alice IN ROLE adk_user;
CREATE ROLE wf_bob IN ROLE adk_user;
SELECT adk_define_app('wf_pic_app', 'wf_pic', tenancy => 'role');
INSERT INTO adk.run_states (app_name, user_id, session_id, invocation_id, node_path, status,
                            interrupt_ids, agent, updated_at)
VALUES ('wf_pic_app', 'wf_alice', 's1', 'inv-a', 'wf_pic/draft@1', 'completed', '{}', 'wf_writer', '2026-01-01 10:00'),
       ('wf_pic_app', 'wf_alice', 's1', 'inv-a', 'wf_pic/review@1', 'completed', '{}', 'wf_pic', '2026-01-01 10:01'),
       ('wf_pic_app', 'wf_alice', 's1', 'inv-a', 'wf_pic/edit@1', 'completed', '{}', 'wf_editor', '2026-01-01 10:02'),
       ('wf_pic_app', 'wf_alice', 's1', 'inv-a', 'wf_pic/draft@2', 'completed', '{}', 'wf_writer', '2026-01-01 10:03'),
       ('wf_pic_app', 'wf_alice', 's1', 'inv-a', 'wf_pic/review@2', 'waiting', '{call-7}', 'wf_pic', '2026-01-01 10:04'),
       ('wf_pic_app', 'wf_alice', 's1', 'inv-a', 'wf_pic/finish@1/wf_sub/polish@1', 'failed', '{}', 'wf_sub', '2026-01-01 10:05'),
       ('wf_pic_app', 'wf_alice', 's1', 'inv-a', 'wf_writer', 'completed', '{}', 'wf_writer', '2026-01-01 10:05'),
       ('wf_pic_app', 'wf_bob', 's2', 'inv-b', 'wf_pic/draft@1', 'running', '{}', 'wf_writer', '2026-01-01 11:00');
-- as the owner: every run
SELECT invocation_id, workflow, node, run_id, status, waiting_on
  FROM adk.workflow_runs ORDER BY invocation_id, updated_at;
SELECT adk_workflow_mermaid('wf_pic', 'inv-a');
SELECT adk_workflow_mermaid('wf_sub', 'inv-a');
-- alice sees her invocation's statuses; bob sees the graph, not alice's run
SET ROLE wf_alice;
SELECT invocation_id, node, status, waiting_on FROM adk.workflow_runs ORDER BY updated_at;
SELECT line FROM regexp_split_to_table(adk_workflow_mermaid('wf_pic', 'inv-a'), E'\n') line WHERE line LIKE '%class %';
RESET ROLE;
SET ROLE wf_bob;
SELECT invocation_id, node, status FROM adk.workflow_runs ORDER BY updated_at;
SELECT count(*) AS alice_rows FROM adk.run_states WHERE invocation_id = 'inv-a';
SELECT line FROM regexp_split_to_table(adk_workflow_mermaid('wf_pic', 'inv-a'), E'\n') line WHERE line LIKE '%class %';
SELECT line FROM regexp_split_to_table(adk_workflow_mermaid('wf_pic', 'inv-b'), E'\n') line WHERE line LIKE '%class %';
RESET ROLE;
DELETE FROM adk.run_states WHERE app_name = 'wf_pic_app';
