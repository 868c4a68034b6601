-- A new run goes on from what the backend's last run on the session
-- assembled (src/runner/prompt_carry.c): the events it read, what they
-- gave its last request, that request's messages.  Every file here runs in
-- one backend, so each run below on the session of the run before it
-- starts from that run's kept history.  Nothing of it is trusted: another
-- writer's events, a rolled-back run, a compaction, a rewind, a session
-- deleted and made again, an isolation scope, thoughts not stored.
-- adk.verify_incremental (on in the test clusters) builds every request
-- made from a kept history again from the history read from the store and
-- raises when the two differ; the queries show the requests the model
-- server received.
SHOW adk.verify_incremental;
SELECT adk_define_model('pc_model', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'test-key');
SELECT adk_define_agent('pc_agent', model => 'pc_model', instruction => 'You answer.');
SELECT adk_define_app('pc_app', 'pc_agent', compaction => '{"compaction_interval": 100, "overlap_size": 0}');
SELECT adk_create_session('pc_app', 'u', s) IS NOT NULL AS created
  FROM unnest(ARRAY['writer', 'rollback', 'compact', 'rewind', 'again']) s;

CREATE TEMP TABLE pc_lines (line text);
-- the request the model server received last: its messages, one a line
CREATE FUNCTION pg_temp.last_messages() RETURNS TABLE (n bigint, role text, content text)
LANGUAGE plpgsql AS $$
DECLARE
    j jsonb;
BEGIN
    TRUNCATE pc_lines;
    EXECUTE format($c$COPY pc_lines FROM PROGRAM %L WITH (FORMAT csv, QUOTE E'\x01', DELIMITER E'\x02')$c$,
                   'curl -s ' || current_setting('adk_test.model_url') || '/_last');
    SELECT string_agg(line, E'\n')::jsonb INTO j FROM pc_lines;
    RETURN QUERY
        SELECT i, m ->> 'role',
               left(split_part(coalesce(m ->> 'content',
                                        'calls ' || (SELECT string_agg(c #>> '{function,name}', ', ')
                                                       FROM jsonb_array_elements(m -> 'tool_calls') c)),
                               E'\n', 1), 60)
          FROM jsonb_array_elements(j #> '{body,messages}') WITH ORDINALITY AS x(m, i);
END
$$;
CREATE FUNCTION pg_temp.say(s text, message text) RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM adk_run('pc_app', 'u', s, message) $$;

-- 1. Another writer between two runs: a turn of another agent and a user
-- message appended by hand come after what the first run read.
SELECT pg_temp.say('writer', 'first question');
SELECT adk_append_event('pc_app', 'u', 'writer', '{"author": "pc_other", "content":
         {"role": "model", "parts": [{"text": "another runtime answered"}]}}') IS NOT NULL AS appended,
       adk_append_event('pc_app', 'u', 'writer', '{"author": "user", "content":
         {"role": "user", "parts": [{"text": "written by hand"}]}}') IS NOT NULL AS appended;
SELECT pg_temp.say('writer', 'second question');
SELECT * FROM pg_temp.last_messages();

-- 2. A rolled-back run: the next run does not send what it stored (its
-- events are gone, and new ones take their seqs).
SELECT pg_temp.say('rollback', 'kept question');
BEGIN;
SELECT pg_temp.say('rollback', 'rolled back question');
ROLLBACK;
SELECT pg_temp.say('rollback', 'after the rollback');
SELECT * FROM pg_temp.last_messages();
-- the same in a subtransaction, the outer transaction committed
BEGIN;
SAVEPOINT s;
SELECT pg_temp.say('rollback', 'rolled back in a savepoint');
ROLLBACK TO SAVEPOINT s;
SELECT pg_temp.say('rollback', 'after the savepoint');
COMMIT;
SELECT * FROM pg_temp.last_messages();

-- 3. A compaction between two runs: its summary stands in for the events
-- it covers.
SELECT pg_temp.say('compact', 'old question');
SELECT adk_compaction_append('pc_app', 'u', 'compact', plan, 'The user asked an old question.') > 0 AS compacted
  FROM adk_compaction_read('pc_app', 'u', 'compact') plan;
SELECT pg_temp.say('compact', 'new question');
SELECT * FROM pg_temp.last_messages();

-- 4. A rewind between two runs: the rewound turn is not sent.
SELECT pg_temp.say('rewind', 'my word is apple');
SELECT pg_temp.say('rewind', 'my word is banana');
SELECT adk_rewind('pc_app', 'u', 'rewind',
                  (SELECT invocation_id FROM adk.event_log
                    WHERE app_name = 'pc_app' AND session_id = 'rewind' AND text = 'my word is banana'))
       IS NOT NULL AS rewound;
SELECT pg_temp.say('rewind', 'what is my word?');
SELECT * FROM pg_temp.last_messages();

-- rewinding the rewind brings the rewound turn back (and rewinds the
-- turn after the first rewind)
SELECT adk_rewind('pc_app', 'u', 'rewind',
                  (SELECT event_data ->> 'invocation_id' FROM adk.events
                    WHERE app_name = 'pc_app' AND session_id = 'rewind'
                      AND event_data #>> '{actions,rewind_before_invocation_id}' IS NOT NULL))
       IS NOT NULL AS rewound;
SELECT pg_temp.say('rewind', 'and now?');
SELECT * FROM pg_temp.last_messages();

-- 5. The session deleted and made again under the same id.
SELECT pg_temp.say('again', 'before the delete');
SELECT adk_delete_session('pc_app', 'u', 'again');
SELECT adk_create_session('pc_app', 'u', 'again') IS NOT NULL AS created;
SELECT pg_temp.say('again', 'after the delete');
SELECT * FROM pg_temp.last_messages();

-- 6. An isolation scope (docs/agent-modes.md): a task agent's request
-- holds its task's events only, the coordinator's everything but them.
SELECT adk_define_agent('pc_booker', model => 'pc_model', mode => 'task', description => 'Books a room.',
                        instruction => 'Book it.');
SELECT adk_define_agent('pc_coord', model => 'pc_model', instruction => 'Coordinate.',
                        sub_agents => ARRAY['pc_booker']);
SELECT adk_define_app('pc_task_app', 'pc_coord');
SELECT count(*) > 0 AS ran FROM adk_run('pc_task_app', 'u', 'task', 'call pc_booker({"request": "Which city?"})');
SELECT * FROM pg_temp.last_messages();
SELECT count(*) > 0 AS ran FROM adk_run('pc_task_app', 'u', 'task', 'Rome, please');
SELECT * FROM pg_temp.last_messages();
SELECT count(*) > 0 AS ran FROM adk_run('pc_task_app', 'u', 'task', 'call finish_task({"result": "Rome"})');
SELECT * FROM pg_temp.last_messages();
SELECT count(*) > 0 AS ran FROM adk_run('pc_task_app', 'u', 'task', 'Thanks');
SELECT * FROM pg_temp.last_messages();

-- 7. Thoughts not stored (adk.store_thoughts off, docs/models.md): a run
-- sends its own thinking back within its tool loop, but keeps nothing for
-- the next run, whose request has no thinking block (its text is gone).
SELECT adk_define_model('pc_think', 'anthropic', current_setting('adk_test.model_url'), 'claude-think',
                        api_key_secret => 'test-key', options => '{"retries": 0}');
CREATE FUNCTION pc_lookup(x text) RETURNS jsonb LANGUAGE sql AS $$ SELECT jsonb_build_object('x', x) $$;
SELECT adk_define_tool('pc_lookup(text)'::regprocedure);
SELECT adk_define_agent('pc_thinker', model => 'pc_think', instruction => 'Think first.',
                        tools => ARRAY['pc_lookup'],
                        generate_config => '{"thinking": {"budget_tokens": 2048}, "max_output_tokens": 1024}');
SELECT adk_define_app('pc_think_app', 'pc_thinker');
SET adk.store_thoughts = off;
SELECT count(*) > 0 AS ran FROM adk_run('pc_think_app', 'u', 'think', 'call pc_lookup({"x": "a"})');
CREATE FUNCTION pg_temp.last_blocks() RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    j jsonb;
BEGIN
    TRUNCATE pc_lines;
    EXECUTE format($c$COPY pc_lines FROM PROGRAM %L WITH (FORMAT csv, QUOTE E'\x01', DELIMITER E'\x02')$c$,
                   'curl -s ' || current_setting('adk_test.model_url') || '/_last');
    SELECT string_agg(line, E'\n')::jsonb INTO j FROM pc_lines;
    RETURN jsonb_path_query_array(j -> 'body', '$.messages[*].content[*].type');
END
$$;
SELECT pg_temp.last_blocks() AS blocks;
SELECT count(*) > 0 AS ran FROM adk_run('pc_think_app', 'u', 'think', 'Thanks');
SELECT pg_temp.last_blocks() AS blocks;
RESET adk.store_thoughts;

-- every run above ended well
SELECT count(*) FILTER (WHERE status <> 'completed') AS not_completed
  FROM adk.invocations WHERE app_name IN ('pc_app', 'pc_task_app', 'pc_think_app');

DELETE FROM adk.apps WHERE name IN ('pc_app', 'pc_task_app', 'pc_think_app');
DELETE FROM adk.sessions WHERE app_name IN ('pc_app', 'pc_task_app', 'pc_think_app');
DELETE FROM adk.agents WHERE name IN ('pc_coord', 'pc_booker', 'pc_agent', 'pc_thinker');
DELETE FROM adk.tools WHERE name = 'pc_lookup';
DELETE FROM adk.models WHERE name IN ('pc_model', 'pc_think');
