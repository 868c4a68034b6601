-- Tail retention estimates a request's size with the agent's instruction
-- before the request is built (compaction.c).  An instruction that cannot
-- be built fails the run with its own message, from the request; the
-- estimate, whose memory is gone by then, leaves nothing behind.
SELECT adk_set_secret('cmp94-key', 'sk-cmp94-0123456789', ARRAY['127.0.0.1']);
SELECT adk_define_model('cmp94_local', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'cmp94-key');
SELECT adk_define_agent('cmp94_agent', model => 'cmp94_local', instruction => 'Answer as {cmp94_missing}.');
SELECT adk_define_app('cmp94_app', 'cmp94_agent',
                      compaction => '{"token_threshold": 1, "event_retention_size": 1, "summarizer_model": "cmp94_local"}');
SELECT adk_define_app('cmp94_plain', 'cmp94_agent');
-- the same error event with and without tail retention
SELECT app, e.event_data ->> 'error_code' AS code, e.event_data ->> 'error_message' AS message
  FROM unnest(ARRAY['cmp94_plain', 'cmp94_app']) app,
       LATERAL (SELECT r.event_data FROM adk_run(app, 'u', 's', 'hello') r) e
 ORDER BY app;
SELECT app_name, status, error_code, compaction_error FROM adk.invocations
 WHERE app_name LIKE 'cmp94%' ORDER BY app_name;
