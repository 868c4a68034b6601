-- Traces (docs/observability.md): adk.spans, one row per OpenTelemetry span, written in
-- the run's own transaction; GenAI names and attributes; trace context in
-- (options.traceparent) and out (the traceparent header providers get,
-- adk_current_trace() for tools); counters per model and per tool.
SELECT adk_define_model('sp_local', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'test-key');
SELECT adk_define_model('sp_broken', 'openai', current_setting('adk_test.model_url') || '/v1', 'fault-500',
                        api_key_secret => 'test-key', options => '{"retries": 0}');
CREATE TABLE sp_tagged (city text, trace_id text, span_id text);
CREATE FUNCTION sp_weather(city text) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
  -- a tool tags its own writes with the trace it runs in
  INSERT INTO sp_tagged SELECT city, t.trace_id, t.span_id FROM adk_current_trace() t;
  RETURN jsonb_build_object('city', city, 'forecast', 'sunny', 'temperature_c', 25);
END $$;
COMMENT ON FUNCTION sp_weather(text) IS 'Current weather for a city.';
SELECT adk_define_tool('sp_weather(text)'::regprocedure, name => 'get_weather');
SELECT adk_define_agent('sp_agent', model => 'sp_local', instruction => 'You answer weather questions.',
                        tools => ARRAY['get_weather']);
SELECT adk_define_app('sp_app', 'sp_agent');
SELECT adk_define_agent('sp_bad', model => 'sp_broken');
SELECT adk_define_app('sp_bad_app', 'sp_bad');
SELECT adk_define_agent('sp_seq', kind => 'sequential', sub_agents => ARRAY['sp_agent']);
SELECT adk_define_app('sp_seq_app', 'sp_seq');

-- outside a run there is no current trace
SELECT * FROM adk_current_trace();

-- ---------------------------------------------------------------------
-- the weather turn: one invoke_agent (the root), two model requests and
-- one tool call, its children, all in one trace
-- ---------------------------------------------------------------------
SELECT count(*) AS events FROM adk_run('sp_app', 'u', 'sp-1', 'What is the weather in Hangzhou?');
SELECT s.name, s.kind, s.status_code, p.name AS parent,
       s.trace_id ~ '^[0-9a-f]{32}$' AS trace_hex, s.span_id ~ '^[0-9a-f]{16}$' AS span_hex,
       s.end_time >= s.start_time AS timed
  FROM adk.spans s LEFT JOIN adk.spans p ON p.span_id = s.parent_span_id
 WHERE s.session_id = 'sp-1' ORDER BY s.start_time, s.id;
SELECT count(DISTINCT trace_id) AS traces, count(*) FILTER (WHERE parent_span_id IS NULL) AS roots,
       count(DISTINCT span_id) AS distinct_spans, count(*) AS spans,
       bool_and(app_name = 'sp_app' AND user_id = 'u') AS keyed,
       count(DISTINCT invocation_id) AS invocations
  FROM adk.spans WHERE session_id = 'sp-1';
-- the invocation id is the run's
SELECT (SELECT DISTINCT invocation_id FROM adk.spans WHERE session_id = 'sp-1')
     = (SELECT invocation_id FROM adk.invocations WHERE session_id = 'sp-1') AS same_invocation;
-- invoke_agent: the agent, the conversation (= session), usage summed
SELECT attributes ->> 'gen_ai.operation.name' AS op, attributes ->> 'gen_ai.agent.name' AS agent,
       attributes ->> 'gen_ai.conversation.id' AS conversation,
       (attributes ->> 'gen_ai.usage.input_tokens')::int > 0 AS input_tokens,
       (attributes ->> 'gen_ai.usage.output_tokens')::int > 0 AS output_tokens,
       attributes ? 'gen_ai.usage.cache_read.input_tokens' AS cached_tokens,
       (attributes ->> 'adk.store.duration_ms')::float8 >= 0 AS store_time,
       attributes ->> 'adk.invocation.status' AS status
  FROM adk.spans WHERE session_id = 'sp-1' AND parent_span_id IS NULL;
-- each model request: "{operation} {model}" with the provider's answer
SELECT name, attributes ->> 'gen_ai.operation.name' AS op, attributes ->> 'gen_ai.provider.name' AS provider,
       attributes ->> 'gen_ai.request.model' AS request_model, attributes ->> 'gen_ai.response.model' AS response_model,
       attributes -> 'gen_ai.response.finish_reasons' AS finish_reasons,
       attributes ->> 'server.address' AS address, (attributes ->> 'server.port')::int > 0 AS port,
       (attributes ->> 'gen_ai.usage.input_tokens')::int > 0 AS input_tokens,
       (attributes ->> 'gen_ai.usage.cache_read.input_tokens')::int AS cached,
       (attributes ->> 'http.response.status_code')::int AS status,
       attributes ? 'error.type' AS error
  FROM adk.spans WHERE session_id = 'sp-1' AND kind = 'CLIENT' ORDER BY start_time;
-- the tool: its name and the model's call id
SELECT s.attributes ->> 'gen_ai.tool.name' AS tool, s.attributes ->> 'gen_ai.operation.name' AS op,
       s.attributes ->> 'gen_ai.tool.call.id' = (e.event_data #>> '{content,parts,0,function_call,id}') AS call_id,
       (s.attributes ->> 'adk.tool.duration_ms')::float8 >= 0 AS duration
  FROM adk.spans s, adk.events e
 WHERE s.session_id = 'sp-1' AND s.name = 'execute_tool get_weather' AND e.session_id = 'sp-1' AND e.seq = 2;
-- the tool's own write carries the trace and the tool's span
SELECT t.city, t.trace_id = s.trace_id AS same_trace, t.span_id = s.span_id AS tool_span
  FROM sp_tagged t, adk.spans s WHERE s.session_id = 'sp-1' AND s.name = 'execute_tool get_weather';
-- the ledger knows the span of each request
SELECT count(*) AS joined FROM adk.model_calls m JOIN adk.spans s ON s.span_id = m.span_id AND s.trace_id = m.trace_id
 WHERE s.session_id = 'sp-1';
-- message content is off by default: no prompt, no answer, no tool arguments
SELECT count(*) AS with_content FROM adk.spans
 WHERE session_id = 'sp-1' AND (attributes ? 'gen_ai.input.messages' OR attributes ? 'gen_ai.output.messages'
       OR attributes ? 'gen_ai.tool.call.arguments' OR attributes ? 'gen_ai.tool.call.result');
-- no key anywhere in a span
SELECT count(*) AS key_in_spans FROM adk.spans WHERE attributes::text LIKE '%sk-regress%' OR events::text LIKE '%sk-regress%';

-- with adk.capture_message_content on, the content is there
SET adk.capture_message_content = on;
SELECT count(*) AS events FROM adk_run('sp_app', 'u', 'sp-c', 'What is the weather in Paris?');
RESET adk.capture_message_content;
SELECT name, attributes ? 'gen_ai.input.messages' AS input, attributes ? 'gen_ai.output.messages' AS output,
       attributes ->> 'gen_ai.tool.call.arguments' AS args
  FROM adk.spans WHERE session_id = 'sp-c' AND parent_span_id IS NOT NULL ORDER BY start_time;

-- streamed: time to the first chunk, in the span and in the ledger
SELECT count(*) > 0 AS rows FROM adk_run('sp_app', 'u', 'sp-s', 'stream this please', NULL, '{"stream": true}');
SELECT (attributes ->> 'gen_ai.response.time_to_first_chunk')::float8 > 0 AS ttfc_span,
       (SELECT m.first_chunk_ms > 0 AND m.first_chunk_ms <= m.latency_ms FROM adk.model_calls m WHERE m.span_id = s.span_id) AS ttfc_ledger
  FROM adk.spans s WHERE session_id = 'sp-s' AND kind = 'CLIENT';
-- not streamed: none
SELECT count(*) AS ttfc_unstreamed FROM adk.spans
 WHERE session_id = 'sp-1' AND attributes ? 'gen_ai.response.time_to_first_chunk';

-- a workflow agent is a span of its own, the LLM agent its child
SELECT count(*) AS events FROM adk_run('sp_seq_app', 'u', 'sp-w', 'hello');
SELECT s.name, s.attributes ->> 'gen_ai.operation.name' AS op, p.name AS parent
  FROM adk.spans s LEFT JOIN adk.spans p ON p.span_id = s.parent_span_id
 WHERE s.session_id = 'sp-w' ORDER BY s.start_time, s.id;

-- plugin callbacks: an event of the span they ran in, with their duration
CREATE FUNCTION sp_noop(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT NULL::jsonb $$;
SELECT adk_define_plugin('sp_timer', before_model => 'sp_noop(jsonb)', before_tool => 'sp_noop(jsonb)');
SELECT adk_define_app('sp_plugged_app', 'sp_agent', plugins => ARRAY['sp_timer']);
SELECT count(*) AS events FROM adk_run('sp_plugged_app', 'u', 'sp-p', 'What is the weather in Lima?');
SELECT s.name, e ->> 'name' AS event, e #>> '{attributes,adk.plugin.name}' AS plugin,
       e #>> '{attributes,adk.plugin.callback}' AS callback,
       (e #>> '{attributes,adk.plugin.duration_ms}')::float8 >= 0 AS timed,
       (e ->> 'time_unix_nano')::numeric > 0 AS stamped,
       (s.attributes ->> 'adk.plugins.duration_ms')::float8 > 0 AS summed
  FROM adk.spans s, jsonb_array_elements(s.events) e
 WHERE s.session_id = 'sp-p' ORDER BY s.start_time, e ->> 'time_unix_nano';

-- ---------------------------------------------------------------------
-- a rolled-back turn leaves no spans (nor ledger rows)
-- ---------------------------------------------------------------------
BEGIN;
SELECT count(*) AS events FROM adk_run('sp_app', 'u', 'sp-2', 'What is the weather in Oslo?');
SELECT count(*) > 0 AS spans_inside FROM adk.spans WHERE session_id = 'sp-2';
ROLLBACK;
SELECT count(*) AS spans_after_rollback FROM adk.spans WHERE session_id = 'sp-2';

-- ---------------------------------------------------------------------
-- a failing model call: error.type on the model span, both spans ERROR
-- ---------------------------------------------------------------------
SELECT count(*) AS events FROM adk_run('sp_bad_app', 'u', 'sp-3', 'hi');
SELECT name, status_code, attributes ->> 'error.type' AS error_type, status_message IS NOT NULL AS described,
       (attributes ->> 'http.response.status_code')::int AS status,
       attributes ->> 'adk.invocation.status' AS invocation
  FROM adk.spans WHERE session_id = 'sp-3' ORDER BY start_time;
-- a caller that stops reading: the root says the run was cancelled
SELECT (adk_run('sp_app', 'u', 'sp-3c', 'What is the weather in Rome?')).seq LIMIT 1;
SELECT name, status_code, attributes ->> 'error.type' AS error_type, attributes ->> 'adk.invocation.status' AS invocation
  FROM adk.spans WHERE session_id = 'sp-3c' ORDER BY start_time;

-- ---------------------------------------------------------------------
-- trace context: options.traceparent makes the run a child of the
-- caller's trace; the provider gets a traceparent naming the model span
-- ---------------------------------------------------------------------
CREATE TEMP TABLE last_lines (line text);
CREATE FUNCTION pg_temp.last_request() RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    j jsonb;
BEGIN
    TRUNCATE last_lines;
    EXECUTE format($c$COPY last_lines FROM PROGRAM %L WITH (FORMAT csv, QUOTE E'\x01', DELIMITER E'\x02')$c$,
                   'curl -s ' || current_setting('adk_test.model_url') || '/_last');
    SELECT string_agg(line, E'\n')::jsonb INTO j FROM last_lines;
    RETURN j;
END
$$;
SELECT count(*) AS events FROM adk_run('sp_app', 'u', 'sp-4', 'hello',
       NULL, '{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}');
SELECT name, trace_id, parent_span_id FROM adk.spans WHERE session_id = 'sp-4' AND kind = 'INTERNAL';
SELECT (SELECT h.value FROM jsonb_each_text(pg_temp.last_request() -> 'headers') h WHERE lower(h.key) = 'traceparent')
     = '00-4bf92f3577b34da6a3ce929d0e0e4736-' || s.span_id || '-01' AS provider_got_traceparent
  FROM adk.spans s WHERE s.session_id = 'sp-4' AND s.kind = 'CLIENT';
-- without one, each run is a trace of its own and the provider still gets its span
SELECT count(*) AS events FROM adk_run('sp_app', 'u', 'sp-5', 'hello');
SELECT (SELECT h.value FROM jsonb_each_text(pg_temp.last_request() -> 'headers') h WHERE lower(h.key) = 'traceparent')
     = '00-' || s.trace_id || '-' || s.span_id || '-01' AS provider_got_traceparent
  FROM adk.spans s WHERE s.session_id = 'sp-5' AND s.kind = 'CLIENT';
-- the setting does the same for every run of the session
SET adk.traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00';
SELECT count(*) AS events FROM adk_run('sp_app', 'u', 'sp-6', 'hello');
RESET adk.traceparent;
SELECT trace_id, parent_span_id FROM adk.spans WHERE session_id = 'sp-6' AND kind = 'INTERNAL';
-- a bad traceparent is refused, as an option and as a setting
SELECT expect_error($q$SELECT * FROM adk_run('sp_app', 'u', 'sp-7', 'hi', NULL, '{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"}')$q$);
SELECT expect_error($q$SELECT * FROM adk_run('sp_app', 'u', 'sp-7', 'hi', NULL, '{"traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-01"}')$q$);
SELECT expect_error($q$SELECT * FROM adk_run('sp_app', 'u', 'sp-7', 'hi', NULL, '{"traceparent": "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"}')$q$);
SELECT expect_error($q$SELECT * FROM adk_run('sp_app', 'u', 'sp-7', 'hi', NULL, '{"traceparent": "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}')$q$);
SELECT expect_error($q$SELECT * FROM adk_run('sp_app', 'u', 'sp-7', 'hi', NULL, '{"traceparent": 1}')$q$);
SELECT expect_error($q$SELECT adk_submit('sp_app', 'u', 'sp-7', 'hi', NULL, '{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"}')$q$);
SELECT expect_error($q$SET adk.traceparent = 'nonsense'$q$);
SELECT count(*) AS nothing_stored FROM adk.spans WHERE session_id = 'sp-7';

-- ---------------------------------------------------------------------
-- counters per model and per tool, and their reset
-- ---------------------------------------------------------------------
-- (from a reset on, so other files' calls do not count)
SELECT adk_stat_reset() <= clock_timestamp() AS reset;
SELECT count(*) AS after_reset FROM adk.stat_models;
SELECT count(*) AS events FROM adk_run('sp_app', 'u', 'sp-8', 'What is the weather in Lima?');
SELECT count(*) AS events FROM adk_run('sp_bad_app', 'u', 'sp-8b', 'hi');
SELECT model, provider, calls, errors, input_tokens > 0 AS tokens, output_tokens > 0 AS out_tokens,
       cached_tokens, total_time_ms > 0 AS timed, mean_first_chunk_ms
  FROM adk.stat_models ORDER BY model;
SELECT tool, calls, errors, total_time_ms >= 0 AS timed FROM adk.stat_tools;
SELECT adk_stat_reset() <= clock_timestamp() AS reset;
SELECT (SELECT count(*) FROM adk.stat_models) AS models, (SELECT count(*) FROM adk.stat_tools) AS tools;
-- resetting is adk_admin's
SELECT has_function_privilege('adk_user', 'adk_stat_reset()', 'EXECUTE') AS user_resets,
       has_function_privilege('adk_admin', 'adk_stat_reset()', 'EXECUTE') AS admin_resets;

-- spans go where the ledger goes: readable by adk_user, kept like it
SELECT has_table_privilege('adk_user', 'adk.spans', 'SELECT') AS user_reads,
       has_table_privilege('adk_user', 'adk.spans', 'INSERT') AS user_writes,
       has_table_privilege('adk_admin', 'adk.spans', 'DELETE') AS admin_deletes;
SHOW adk.spans_retention;
SHOW adk.capture_message_content;
-- row-level security as on the ledger (85_tenancy.sql): a tenant's own spans
SELECT relrowsecurity AS rls, (SELECT count(*) FROM pg_policy WHERE polrelid = 'adk.spans'::regclass) AS policies
  FROM pg_class WHERE oid = 'adk.spans'::regclass;
