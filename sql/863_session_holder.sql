-- Who holds a session (src/store/session_read.c, adk_session_lock_unheld):
-- a job 'running' in another process that is still there.  adk_append_event
-- and a foreground adk_run wait for it, up to adk.session_wait_timeout; a
-- job 'running' whose worker is gone, or that runs in this very process (a
-- job's own tool appending to its session), holds nothing.  The session's
-- row lock and its jobs are read in one statement; the worker's liveness
-- comes from the process array.
SELECT adk_define_model('sh_m', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'test-key');
SELECT adk_define_agent('sh_agent', model => 'sh_m');
SELECT adk_define_app('sh_app', 'sh_agent');
SELECT adk_create_session('sh_app', 'u', 'held') IS NOT NULL AS created;
CREATE FUNCTION sh_job(label text, worker integer) RETURNS void LANGUAGE sql AS $$
  INSERT INTO adk.jobs (invocation_id, app_name, user_id, session_id, message, role_oid, role_name,
                        source, status, worker_pid)
  VALUES ('sh-' || label, 'sh_app', 'u', 'held', '{}', 10, current_user,
          'test', 'running', worker) $$;
SET adk.session_wait_timeout = '200ms';
CREATE FUNCTION sh_append(what text) RETURNS text LANGUAGE sql AS $$
  SELECT adk_append_event('sh_app', 'u', 'held',
                          jsonb_build_object('author', 'user', 'content',
                                             jsonb_build_object('role', 'user', 'parts',
                                                                jsonb_build_array(jsonb_build_object('text', what)))))
         ->> 'author' $$;

-- no job: appended
SELECT sh_append('free');
-- a running job without a worker, or in a worker that is gone: appended
SELECT sh_job('none', NULL);
SELECT sh_append('no worker');
SELECT sh_job('gone', 2147483646);
SELECT sh_append('worker gone');
-- a running job in this process: appended (it would wait for itself)
SELECT sh_job('own', pg_backend_pid());
SELECT sh_append('own process');
-- a running job in another live process (here the logical replication
-- launcher stands in for a job worker): busy, for appends and runs alike
SELECT sh_job('live', pid) FROM pg_stat_activity WHERE backend_type = 'logical replication launcher';
SELECT expect_error($$SELECT sh_append('held')$$);
SELECT expect_error($$SELECT count(*) FROM adk_run('sh_app', 'u', 'held', 'hi')$$);
-- the job ends: free again
UPDATE adk.jobs SET status = 'completed' WHERE session_id = 'held' AND status = 'running';
SELECT sh_append('after');
SELECT seq, author, text FROM adk.event_log WHERE app_name = 'sh_app' AND session_id = 'held' ORDER BY seq;
DELETE FROM adk.jobs WHERE session_id = 'held';
RESET adk.session_wait_timeout;
