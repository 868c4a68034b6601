-- Spans of compaction's summarizer: each
-- summarizer call is a model span of its own ("chat {model}", with
-- adk.compaction.kind), tail retention's a child of the agent whose round
-- it precedes, the sliding window's a child of the run's root; its ledger
-- row names it; a failing summarizer ends its span ERROR with error.type;
-- a summarizer given up while in flight ends its span as abandoned work
-- does.  Each agent span's usage stays the sum of the model spans below
-- it, the summarizer's included.
SELECT adk_define_model('m99_local', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'test-key');
SELECT adk_define_model('m99_summ', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-summ',
                        api_key_secret => 'test-key', options => '{"max_output_tokens": 30}');
SELECT adk_define_model('m99_slow_summ', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'gpt-summ-latency-1000', api_key_secret => 'test-key');
SELECT adk_define_model('m99_once', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'test-key', options => '{"retries": 0}');
SELECT adk_define_model('m99_broken', 'openai', current_setting('adk_test.model_url') || '/v1', 'fault-500',
                        api_key_secret => 'test-key', options => '{"retries": 0}');
SELECT adk_define_agent('a99', model => 'm99_local', instruction => 'You are a99.');
SELECT adk_define_agent('s99', kind => 'sequential', sub_agents => ARRAY['a99']);
SELECT adk_define_app('t99_app', 's99',
                      compaction => '{"token_threshold": 1, "event_retention_size": 1, "summarizer_model": "m99_summ"}');
SELECT adk_define_app('w99_app', 's99',
                      compaction => '{"compaction_interval": 2, "summarizer_model": "m99_summ"}');
SELECT adk_define_app('tf99_app', 's99',
                      compaction => '{"token_threshold": 1, "event_retention_size": 1, "summarizer_model": "m99_broken"}');
SELECT adk_define_app('wf99_app', 's99',
                      compaction => '{"compaction_interval": 2, "summarizer_model": "m99_broken"}');
-- a parallel agent: one lane waits for tail retention's (slow) summarizer
-- while the other lane's model call fails and ends the run
SELECT adk_define_agent('pa99', model => 'm99_once', instruction => 'You are pa99.');
SELECT adk_define_agent('pb99', model => 'm99_once', instruction => 'You are pb99.');
SELECT adk_define_agent('p99', kind => 'parallel', sub_agents => ARRAY['pa99', 'pb99']);
SELECT adk_define_app('p99_app', 'p99',
                      compaction => '{"token_threshold": 1, "event_retention_size": 1, "summarizer_model": "m99_slow_summ"}');

-- The invariants, over every invocation of a session.
CREATE FUNCTION c99_checks(sess text)
RETURNS TABLE (n int, what text, ok boolean) LANGUAGE sql AS $$
  WITH s AS (SELECT * FROM adk.spans WHERE session_id = sess),
  m AS (SELECT * FROM adk.model_calls
         WHERE invocation_id IN (SELECT invocation_id FROM adk.invocations WHERE session_id = sess)),
  sp AS (SELECT c.*, p.start_time AS pstart, p.end_time AS pend, p.name AS pname
           FROM s c LEFT JOIN s p ON p.span_id = c.parent_span_id AND p.trace_id = c.trace_id)
  SELECT 1, 'each ledger row names exactly one span, a model span',
         count(*) > 0 AND bool_and((SELECT count(*) FROM s WHERE s.trace_id = m.trace_id AND s.span_id = m.span_id) = 1
                                   AND (SELECT s.kind FROM s WHERE s.trace_id = m.trace_id AND s.span_id = m.span_id) = 'CLIENT')
    FROM m
  UNION ALL
  SELECT 2, 'no model span is named by two ledger rows',
         coalesce(bool_and((SELECT count(*) FROM m WHERE m.trace_id = s.trace_id AND m.span_id = s.span_id) <= 1), true)
    FROM s WHERE kind = 'CLIENT'
  UNION ALL
  SELECT 3, 'every model span is a child of an invoke_agent span',
         bool_and(pname LIKE 'invoke_agent %') FROM sp WHERE kind = 'CLIENT'
  UNION ALL
  SELECT 4, 'no span lies outside its parent''s interval',
         coalesce(bool_and(start_time >= pstart AND end_time <= pend AND end_time >= start_time), true)
    FROM sp WHERE pname IS NOT NULL
  UNION ALL
  SELECT 5, 'an agent span''s usage is the sum of the model spans below it',
         bool_and(coalesce((a.attributes ->> 'gen_ai.usage.input_tokens')::bigint, -1) =
                  (WITH RECURSIVE d AS (SELECT a.span_id
                                        UNION ALL
                                        SELECT c.span_id FROM s c JOIN d ON c.parent_span_id = d.span_id)
                   SELECT coalesce(sum((x.attributes ->> 'gen_ai.usage.input_tokens')::bigint), 0)
                     FROM s x JOIN d ON d.span_id = x.span_id WHERE x.kind = 'CLIENT')
                  AND coalesce((a.attributes ->> 'gen_ai.usage.output_tokens')::bigint, -1) =
                  (WITH RECURSIVE d AS (SELECT a.span_id
                                        UNION ALL
                                        SELECT c.span_id FROM s c JOIN d ON c.parent_span_id = d.span_id)
                   SELECT coalesce(sum((x.attributes ->> 'gen_ai.usage.output_tokens')::bigint), 0)
                     FROM s x JOIN d ON d.span_id = x.span_id WHERE x.kind = 'CLIENT'))
    FROM s a WHERE a.name LIKE 'invoke_agent %'
  ORDER BY 1
$$;

-- The spans of a session's latest invocation, each as its path from the
-- root, with what it says about compaction and how it ended.
CREATE FUNCTION c99_latest(sess text) RETURNS text LANGUAGE sql AS $$
  SELECT invocation_id FROM adk.invocations WHERE session_id = sess ORDER BY started_at DESC LIMIT 1
$$;
CREATE FUNCTION c99_tree(sess text)
RETURNS TABLE (span text, model text, compaction text, status_code text, error_type text)
LANGUAGE sql AS $$
  WITH RECURSIVE s AS (SELECT * FROM adk.spans WHERE session_id = sess AND invocation_id = c99_latest(sess)),
  t AS (SELECT span_id, name::text AS path FROM s WHERE parent_span_id IS NULL
        UNION ALL
        SELECT c.span_id, t.path || ' / ' || c.name
          FROM s c JOIN t ON c.parent_span_id = t.span_id)
  SELECT t.path, s.attributes ->> 'adk.model.name', s.attributes ->> 'adk.compaction.kind',
         s.status_code, s.attributes ->> 'error.type'
    FROM t JOIN s USING (span_id) ORDER BY t.path, s.start_time
$$;
-- The summarizer's span of the latest invocation, and where it lies.
CREATE FUNCTION c99_summarizer(sess text)
RETURNS TABLE (name text, op text, provider text, request_model text, model text, kind text,
               parent text, tokens boolean, status_code text, error_type text, described boolean,
               ledger_row text)
LANGUAGE sql AS $$
  SELECT c.name, c.attributes ->> 'gen_ai.operation.name', c.attributes ->> 'gen_ai.provider.name',
         c.attributes ->> 'gen_ai.request.model', c.attributes ->> 'adk.model.name',
         c.attributes ->> 'adk.compaction.kind', p.name,
         (c.attributes ->> 'gen_ai.usage.input_tokens')::int > 0 AND (c.attributes ->> 'gen_ai.usage.output_tokens')::int > 0,
         c.status_code, c.attributes ->> 'error.type', c.status_message IS NOT NULL,
         (SELECT string_agg(m.model, ', ') FROM adk.model_calls m WHERE m.trace_id = c.trace_id AND m.span_id = c.span_id)
    FROM adk.spans c JOIN adk.spans p ON p.span_id = c.parent_span_id AND p.trace_id = c.trace_id
   WHERE c.session_id = sess AND c.invocation_id = c99_latest(sess) AND c.attributes ? 'adk.compaction.kind'
$$;

-- ---------------------------------------------------------------------
-- tail retention: before a99's model call in the second turn, a child of
-- a99's agent span (not of the workflow root), ending before that model
-- call starts
-- ---------------------------------------------------------------------
SELECT count(*) AS events FROM adk_run('t99_app', 'u', 's99-tail', 'hello one');
SELECT count(*) AS events FROM adk_run('t99_app', 'u', 's99-tail', 'hello two');
SELECT kind, from_seq, to_seq FROM adk.compactions WHERE session_id = 's99-tail';
SELECT * FROM c99_tree('s99-tail');
SELECT * FROM c99_summarizer('s99-tail');
SELECT (SELECT end_time FROM adk.spans WHERE session_id = 's99-tail' AND invocation_id = c99_latest('s99-tail')
           AND attributes ->> 'adk.compaction.kind' = 'tail_retention')
    <= (SELECT start_time FROM adk.spans WHERE session_id = 's99-tail' AND invocation_id = c99_latest('s99-tail')
           AND kind = 'CLIENT' AND NOT attributes ? 'adk.compaction.kind') AS before_the_model_call;
SELECT * FROM c99_checks('s99-tail');
-- every ledger row of the session, by the span it names
SELECT m.model, s.name, s.attributes ->> 'adk.compaction.kind' AS compaction
  FROM adk.model_calls m JOIN adk.spans s ON s.trace_id = m.trace_id AND s.span_id = m.span_id
 WHERE s.session_id = 's99-tail' ORDER BY m.id;

-- ---------------------------------------------------------------------
-- the sliding window: after the second turn's agents, a child of the
-- run's root, inside its interval, after every other agent span ended
-- ---------------------------------------------------------------------
SELECT count(*) AS events FROM adk_run('w99_app', 'u', 's99-win', 'hello one');
SELECT count(*) AS events FROM adk_run('w99_app', 'u', 's99-win', 'hello two');
SELECT kind, from_seq, to_seq FROM adk.compactions WHERE session_id = 's99-win';
SELECT * FROM c99_tree('s99-win');
SELECT * FROM c99_summarizer('s99-win');
SELECT (SELECT start_time FROM adk.spans WHERE session_id = 's99-win' AND invocation_id = c99_latest('s99-win')
           AND attributes ->> 'adk.compaction.kind' = 'sliding_window')
    >= (SELECT max(end_time) FROM adk.spans WHERE session_id = 's99-win' AND invocation_id = c99_latest('s99-win')
           AND name = 'invoke_agent a99') AS after_the_agents;
SELECT * FROM c99_checks('s99-win');
-- the summarizer's request (the run's last) was sent with its span as
-- traceparent
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
SELECT (SELECT h.value FROM jsonb_each_text(pg_temp.last_request() -> 'headers') h WHERE lower(h.key) = 'traceparent')
     = '00-' || s.trace_id || '-' || s.span_id || '-01' AS provider_got_traceparent
  FROM adk.spans s WHERE s.session_id = 's99-win' AND s.invocation_id = c99_latest('s99-win')
   AND s.attributes ->> 'adk.compaction.kind' = 'sliding_window';

-- ---------------------------------------------------------------------
-- a failing summarizer: its span ERROR with the provider's error type;
-- the agent and the run go on unharmed (a compaction never fails a run)
-- ---------------------------------------------------------------------
SELECT count(*) AS events FROM adk_run('tf99_app', 'u', 's99-tail-fail', 'hello one');
SELECT count(*) AS events FROM adk_run('tf99_app', 'u', 's99-tail-fail', 'hello two');
SELECT * FROM c99_tree('s99-tail-fail');
SELECT * FROM c99_summarizer('s99-tail-fail');
SELECT status, compaction_error IS NOT NULL AS compaction_error
  FROM adk.invocations WHERE invocation_id = c99_latest('s99-tail-fail');
SELECT * FROM c99_checks('s99-tail-fail');
SELECT count(*) AS events FROM adk_run('wf99_app', 'u', 's99-win-fail', 'hello one');
SELECT count(*) AS events FROM adk_run('wf99_app', 'u', 's99-win-fail', 'hello two');
SELECT * FROM c99_tree('s99-win-fail');
SELECT * FROM c99_summarizer('s99-win-fail');
SELECT status, compaction_error IS NOT NULL AS compaction_error
  FROM adk.invocations WHERE invocation_id = c99_latest('s99-win-fail');
SELECT * FROM c99_checks('s99-win-fail');
-- a summarizer whose call cannot even be made (its model was dropped):
-- its span ends ERROR, _OTHER, with the reason
SELECT adk_define_model('m99_gone', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-summ',
                        api_key_secret => 'test-key');
SELECT adk_define_app('wg99_app', 's99',
                      compaction => '{"compaction_interval": 2, "summarizer_model": "m99_gone"}');
SELECT count(*) AS events FROM adk_run('wg99_app', 'u', 's99-win-gone', 'hello one');
DELETE FROM adk.models WHERE name = 'm99_gone';
SELECT count(*) AS events FROM adk_run('wg99_app', 'u', 's99-win-gone', 'hello two');
SELECT * FROM c99_tree('s99-win-gone');
SELECT name, model, kind, parent, status_code, error_type, described, ledger_row
  FROM c99_summarizer('s99-win-gone');
SELECT status, compaction_error IS NOT NULL AS compaction_error
  FROM adk.invocations WHERE invocation_id = c99_latest('s99-win-gone');
SELECT * FROM c99_checks('s99-win-gone');

-- ---------------------------------------------------------------------
-- given up in flight: lane pa99 waits for tail retention's summarizer,
-- lane pb99's model call fails and ends the run; the summarizer's span
-- ends abandoned (ERROR, CANCELLED), in pa99's, and no ledger row
-- ---------------------------------------------------------------------
SELECT count(*) AS events FROM adk_run('p99_app', 'u', 's99-par', 'hello one');
SELECT count(*) AS events FROM adk_run('p99_app', 'u', 's99-par', '[[fault:500]] hello two');
SELECT status, error_code FROM adk.invocations WHERE invocation_id = c99_latest('s99-par');
SELECT * FROM c99_tree('s99-par');
SELECT c.name, c.attributes ->> 'adk.model.name' AS model, c.attributes ->> 'adk.compaction.kind' AS kind,
       p.name AS parent, c.status_code, c.attributes ->> 'error.type' AS error_type,
       c.start_time >= p.start_time AND c.end_time <= p.end_time AS inside
  FROM adk.spans c JOIN adk.spans p ON p.span_id = c.parent_span_id
 WHERE c.session_id = 's99-par' AND c.invocation_id = c99_latest('s99-par')
   AND c.attributes ? 'adk.compaction.kind';
SELECT count(*) AS summarizer_ledger_rows FROM adk.model_calls
 WHERE model = 'm99_slow_summ' AND invocation_id = c99_latest('s99-par');
SELECT * FROM c99_checks('s99-par');
