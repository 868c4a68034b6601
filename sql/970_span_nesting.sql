-- Spans of a run that is concurrent inside: a
-- parallel agent's lanes have their model calls in flight at once, and so
-- do the agents used as tools of one model response.  Each span must still
-- hang under the agent whose work it describes, lie within its parent's
-- interval, carry that agent's usage, and the tree must be the one the
-- sequential equivalent gives.  The lanes' models answer after different
-- latencies (300, 100, 200 ms), so the calls end in another order than the
-- one they started in.
SELECT adk_define_model('m97_300', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'gpt-latency-300', api_key_secret => 'test-key');
SELECT adk_define_model('m97_100', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'gpt-latency-100', api_key_secret => 'test-key');
SELECT adk_define_model('m97_200', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'gpt-latency-200', api_key_secret => 'test-key');
SELECT adk_define_model('m97_fast', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'gpt-test', api_key_secret => 'test-key');
CREATE TABLE t97_tagged (k text, trace_id text, span_id text);
CREATE FUNCTION t97_note(k text) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO t97_tagged SELECT k, t.trace_id, t.span_id FROM adk_current_trace() t;
  RETURN jsonb_build_object('noted', k);
END $$;
SELECT adk_define_tool('t97_note(text)'::regprocedure);

-- (a) a parallel agent with three LLM sub-agents, and its sequential twin
SELECT adk_define_agent('p97_a', model => 'm97_300', instruction => 'You are p97_a.');
SELECT adk_define_agent('p97_b', model => 'm97_100', instruction => 'You are p97_b.');
SELECT adk_define_agent('p97_c', model => 'm97_200', instruction => 'You are p97_c.');
SELECT adk_define_agent('p97', kind => 'parallel', sub_agents => ARRAY['p97_a', 'p97_b', 'p97_c']);
SELECT adk_define_app('p97_app', 'p97');
SELECT adk_define_agent('q97_a', model => 'm97_300', instruction => 'You are q97_a.');
SELECT adk_define_agent('q97_b', model => 'm97_100', instruction => 'You are q97_b.');
SELECT adk_define_agent('q97_c', model => 'm97_200', instruction => 'You are q97_c.');
SELECT adk_define_agent('q97', kind => 'sequential', sub_agents => ARRAY['q97_a', 'q97_b', 'q97_c']);
SELECT adk_define_app('q97_app', 'q97');

-- (b) one model response with three calls to agents used as tools (and a
-- SQL tool among them), and its sequential twin: one call per response
SELECT adk_define_agent('x97', model => 'm97_300', instruction => 'You are x97.', description => 'Tool agent X.');
SELECT adk_define_agent('y97', model => 'm97_100', instruction => 'You are y97.', description => 'Tool agent Y.');
SELECT adk_define_agent('z97', model => 'm97_200', instruction => 'You are z97.', description => 'Tool agent Z.');
SELECT adk_define_agent('boss97', model => 'm97_fast', instruction => 'You are boss97.',
                        tools => ARRAY['x97', 'y97', 't97_note', 'z97']);
SELECT adk_define_app('boss97_app', 'boss97');

-- The checks, for one session's spans.  A span's "lane" is the agent it
-- belongs to: its own for an invoke_agent span, else its parent's.
CREATE FUNCTION s97_checks(sess text)
RETURNS TABLE (n int, what text, ok boolean) LANGUAGE sql AS $$
  WITH s AS (SELECT * FROM adk.spans WHERE session_id = sess),
  sp AS (SELECT c.*, p.name AS pname, p.attributes AS pattrs, p.start_time AS pstart,
                p.end_time AS pend
           FROM s c LEFT JOIN s p ON p.span_id = c.parent_span_id AND p.trace_id = c.trace_id)
  SELECT 1, 'one trace and one root per invocation, every parent in its trace',
         count(DISTINCT trace_id) = count(DISTINCT invocation_id)
         AND count(*) FILTER (WHERE parent_span_id IS NULL) = count(DISTINCT invocation_id)
         AND count(*) FILTER (WHERE parent_span_id IS NOT NULL AND pname IS NULL) = 0
    FROM sp
  UNION ALL
  SELECT 2, 'every model span is a child of an invoke_agent span',
         bool_and(pname LIKE 'invoke_agent %') FROM sp WHERE kind = 'CLIENT'
  UNION ALL
  -- the request the ledger keeps for the span was the parent agent's
  SELECT 3, 'every model span''s request is its parent agent''s',
         count(*) = (SELECT count(*) FROM s WHERE kind = 'CLIENT')
         AND bool_and(split_part(m.request #>> '{messages,0,content}', E'\n', 1)
                      = 'You are ' || (sp.pattrs ->> 'gen_ai.agent.name') || '.')
    FROM sp JOIN adk.model_calls m ON m.span_id = sp.span_id AND m.trace_id = sp.trace_id
   WHERE sp.kind = 'CLIENT'
  UNION ALL
  SELECT 4, 'every model span names the model of its parent agent',
         bool_and(sp.attributes ->> 'adk.model.name' = a.model)
    FROM sp JOIN adk.agents a ON a.name = sp.pattrs ->> 'gen_ai.agent.name'
   WHERE sp.kind = 'CLIENT'
  UNION ALL
  SELECT 5, 'every tool span is a child of an invoke_agent span',
         coalesce(bool_and(pname LIKE 'invoke_agent %'), true)
    FROM sp WHERE name LIKE 'execute_tool %'
  UNION ALL
  SELECT 6, 'every agent span but the root is a child of an agent or a tool span',
         coalesce(bool_and(pname LIKE 'invoke_agent %' OR pname LIKE 'execute_tool %'), true)
    FROM sp WHERE name LIKE 'invoke_agent %' AND parent_span_id IS NOT NULL
  UNION ALL
  SELECT 7, 'no span lies outside its parent''s interval',
         coalesce(bool_and(start_time >= pstart AND end_time <= pend AND end_time >= start_time), true)
    FROM sp WHERE pname IS NOT NULL
  UNION ALL
  SELECT 8, 'an agent span''s usage is the sum of the model spans below it',
         bool_and(coalesce((a.attributes ->> 'gen_ai.usage.input_tokens')::bigint, -1) =
                  (WITH RECURSIVE d AS (SELECT a.span_id
                                        UNION ALL
                                        SELECT c.span_id FROM s c JOIN d ON c.parent_span_id = d.span_id)
                   SELECT coalesce(sum((m.attributes ->> 'gen_ai.usage.input_tokens')::bigint), 0)
                     FROM s m JOIN d ON d.span_id = m.span_id WHERE m.kind = 'CLIENT'))
    FROM s a WHERE a.name LIKE 'invoke_agent %'
  UNION ALL
  SELECT 9, 'the ledger names each model span once',
         (SELECT count(*) FROM adk.model_calls m JOIN s ON s.span_id = m.span_id)
         = (SELECT count(*) FROM s WHERE kind = 'CLIENT')
         AND (SELECT count(DISTINCT m.span_id) FROM adk.model_calls m JOIN s ON s.span_id = m.span_id)
         = (SELECT count(*) FROM s WHERE kind = 'CLIENT')
  UNION ALL
  SELECT 10, 'every span ended well',
         bool_and(status_code <> 'ERROR') FROM s
  ORDER BY 1
$$;

-- The tree's shape: each span as the path of its operations from the
-- root (model spans by their model), whatever the agents are called.
CREATE FUNCTION s97_shape(sess text) RETURNS TABLE (path text) LANGUAGE sql AS $$
  WITH RECURSIVE s AS (SELECT * FROM adk.spans WHERE session_id = sess),
  t AS (SELECT span_id, (attributes ->> 'gen_ai.operation.name')::text AS path
          FROM s WHERE parent_span_id IS NULL
        UNION ALL
        SELECT c.span_id, t.path || ' / ' ||
               CASE WHEN c.kind = 'CLIENT' THEN 'chat ' || (c.attributes ->> 'gen_ai.request.model')
                    WHEN c.name LIKE 'execute_tool %' THEN c.name
                    ELSE c.attributes ->> 'gen_ai.operation.name' END
          FROM s c JOIN t ON c.parent_span_id = t.span_id)
  SELECT t.path FROM t
$$;

-- The tree with the agents' names, each span under its parent.
CREATE FUNCTION s97_tree(sess text) RETURNS TABLE (span text) LANGUAGE sql AS $$
  WITH RECURSIVE s AS (SELECT * FROM adk.spans WHERE session_id = sess),
  t AS (SELECT span_id, name::text AS path FROM s WHERE parent_span_id IS NULL
        UNION ALL
        SELECT c.span_id, t.path || ' / ' || c.name
          FROM s c JOIN t ON c.parent_span_id = t.span_id)
  SELECT t.path FROM t ORDER BY t.path
$$;

-- ---------------------------------------------------------------------
-- (a) the parallel agent: its lanes at once, each lane's spans its own
-- ---------------------------------------------------------------------
SELECT count(*) AS events FROM adk_run('p97_app', 'u', 's97-par', 'all three, please');
SELECT count(*) AS events FROM adk_run('q97_app', 'u', 's97-seq', 'all three, please');
SELECT * FROM s97_tree('s97-par');
SELECT * FROM s97_checks('s97-par');
SELECT * FROM s97_checks('s97-seq');
-- the lanes' model calls overlapped: each began before any of them ended
SELECT max(start_time) < min(end_time) AS overlapped
  FROM adk.spans WHERE session_id = 's97-par' AND kind = 'CLIENT';
-- each lane's agent span: its agent, the branch's conversation, its usage
SELECT attributes ->> 'gen_ai.agent.name' AS agent, attributes ->> 'gen_ai.operation.name' AS op,
       attributes ->> 'gen_ai.conversation.id' AS conversation,
       (attributes ->> 'gen_ai.usage.input_tokens')::int > 0 AS tokens
  FROM adk.spans WHERE session_id = 's97-par' AND name LIKE 'invoke_agent %' ORDER BY 1;
-- the same tree as the sequential twin's
SELECT (SELECT count(*) FROM (SELECT * FROM s97_shape('s97-par') EXCEPT ALL
                              SELECT * FROM s97_shape('s97-seq')) d) AS only_parallel,
       (SELECT count(*) FROM (SELECT * FROM s97_shape('s97-seq') EXCEPT ALL
                              SELECT * FROM s97_shape('s97-par')) d) AS only_sequential,
       (SELECT count(*) FROM s97_shape('s97-par')) AS spans;

-- plugin callbacks are events of the span of the agent they ran for,
-- whichever lane stepped before them
CREATE FUNCTION s97_noop(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT NULL::jsonb $$;
SELECT adk_define_plugin('s97_timer', before_agent => 's97_noop(jsonb)', before_model => 's97_noop(jsonb)',
                         after_model => 's97_noop(jsonb)', before_tool => 's97_noop(jsonb)');
SELECT adk_define_app('p97_plugged_app', 'p97', plugins => ARRAY['s97_timer']);
SELECT count(*) AS events FROM adk_run('p97_plugged_app', 'u', 's97-plug', 'all three, please');
SELECT s.name, e #>> '{attributes,adk.plugin.callback}' AS callback, count(*)
  FROM adk.spans s, jsonb_array_elements(s.events) e
 WHERE s.session_id = 's97-plug' GROUP BY 1, 2 ORDER BY 1, 2;
SELECT * FROM s97_checks('s97-plug');

-- ---------------------------------------------------------------------
-- (b) three agents used as tools in one model response, at once: each an
-- execute_tool span of the calling agent with the tool agent's own
-- invoke_agent span in it, and that agent's model call in that
-- ---------------------------------------------------------------------
SELECT count(*) AS events
  FROM adk_run('boss97_app', 'u', 's97-tools',
               'call x97({"request": "one"}) call y97({"request": "two"}) call t97_note({"k": "mid"}) call z97({"request": "three"})');
-- the sequential twin: one call per model response
SELECT count(*) AS events FROM adk_run('boss97_app', 'u', 's97-tools-seq', 'call x97({"request": "one"})');
SELECT count(*) AS events FROM adk_run('boss97_app', 'u', 's97-tools-seq', 'call y97({"request": "two"})');
SELECT * FROM s97_tree('s97-tools');
SELECT * FROM s97_checks('s97-tools');
SELECT max(start_time) < min(end_time) AS overlapped
  FROM adk.spans WHERE session_id = 's97-tools' AND kind = 'CLIENT' AND parent_span_id IN
       (SELECT span_id FROM adk.spans WHERE session_id = 's97-tools' AND name <> 'invoke_agent boss97');
-- each agent-tool: its call id on the execute_tool span, which lasts as
-- long as the agent's run
SELECT t.attributes ->> 'gen_ai.tool.name' AS tool,
       t.attributes ->> 'gen_ai.tool.call.id' = r.id AS call_id,
       a.attributes ->> 'gen_ai.agent.name' AS agent,
       t.status_code, a.status_code AS agent_status
  FROM adk.spans t
  JOIN adk.spans a ON a.parent_span_id = t.span_id AND a.name LIKE 'invoke_agent %'
  JOIN (SELECT p #>> '{function_call,name}' AS name, p #>> '{function_call,id}' AS id
          FROM adk.events e, jsonb_array_elements(e.event_data #> '{content,parts}') p
         WHERE e.session_id = 's97-tools' AND p ? 'function_call') r
    ON r.name = t.attributes ->> 'gen_ai.tool.name'
 WHERE t.session_id = 's97-tools' AND t.name LIKE 'execute_tool %'
 ORDER BY 1;
-- the SQL tool between them ran in its own span
SELECT g.k, g.span_id = s.span_id AS tool_span, p.name AS parent
  FROM t97_tagged g JOIN adk.spans s ON s.trace_id = g.trace_id AND s.name = 'execute_tool t97_note'
  JOIN adk.spans p ON p.span_id = s.parent_span_id
 WHERE s.session_id = 's97-tools';
-- the same shape as one agent-tool call per response: each agent-tool's
-- subtree is the same
SELECT (SELECT count(*) FROM (SELECT * FROM s97_shape('s97-tools') WHERE path LIKE '%execute_tool x97%'
                                                                      OR path LIKE '%execute_tool y97%'
                              EXCEPT ALL
                              SELECT * FROM s97_shape('s97-tools-seq') WHERE path LIKE '%execute_tool%') d) AS only_concurrent,
       (SELECT count(*) FROM (SELECT * FROM s97_shape('s97-tools-seq') WHERE path LIKE '%execute_tool%'
                              EXCEPT ALL
                              SELECT * FROM s97_shape('s97-tools') WHERE path LIKE '%execute_tool x97%'
                                                                      OR path LIKE '%execute_tool y97%') d) AS only_sequential,
       (SELECT count(*) FROM s97_shape('s97-tools-seq') WHERE path LIKE '%execute_tool%') AS compared;
SELECT * FROM s97_checks('s97-tools-seq');
-- with plugins: before_tool is an event of the SQL tool's span, the
-- model callbacks of the calling agent's (an agent-tool's call runs no
-- model plugins)
SELECT adk_define_app('boss97_plugged_app', 'boss97', plugins => ARRAY['s97_timer']);
SELECT count(*) AS events
  FROM adk_run('boss97_plugged_app', 'u', 's97-tools-plug',
               'call x97({"request": "one"}) call t97_note({"k": "plugged"}) call z97({"request": "three"})');
SELECT s.name, e #>> '{attributes,adk.plugin.callback}' AS callback, count(*)
  FROM adk.spans s, jsonb_array_elements(s.events) e
 WHERE s.session_id = 's97-tools-plug' GROUP BY 1, 2 ORDER BY 1, 2;

-- ---------------------------------------------------------------------
-- work abandoned while in flight: each of its spans ends, ERROR
-- (CANCELLED), inside its parent's interval, before its parent
-- ---------------------------------------------------------------------
SELECT adk_define_model('m97_broken', 'openai', current_setting('adk_test.model_url') || '/v1',
                        'fault-500', api_key_secret => 'test-key', options => '{"retries": 0}');
SELECT adk_define_agent('f97_a', model => 'm97_300', instruction => 'You are f97_a.');
SELECT adk_define_agent('f97_bad', model => 'm97_broken', instruction => 'You are f97_bad.');
SELECT adk_define_agent('f97_c', model => 'm97_200', instruction => 'You are f97_c.');
SELECT adk_define_agent('f97', kind => 'parallel', sub_agents => ARRAY['f97_a', 'f97_bad', 'f97_c']);
SELECT adk_define_app('f97_app', 'f97');
CREATE FUNCTION s97_ended(sess text)
RETURNS TABLE (span text, model text, status_code text, error_type text, invocation text,
               parent text, inside boolean) LANGUAGE sql AS $$
  SELECT CASE WHEN c.kind = 'CLIENT' THEN 'chat' ELSE c.name END, c.attributes ->> 'adk.model.name',
         c.status_code, c.attributes ->> 'error.type', c.attributes ->> 'adk.invocation.status',
         p.name, p.span_id IS NULL OR (c.start_time >= p.start_time AND c.end_time <= p.end_time)
    FROM adk.spans c LEFT JOIN adk.spans p ON p.span_id = c.parent_span_id
   WHERE c.session_id = sess ORDER BY 1, 2
$$;
-- an agent used as a tool whose model fails: an error response for the
-- calling agent, and ERROR from the model span up to the execute_tool span
SELECT adk_define_agent('w97', model => 'm97_broken', instruction => 'You are w97.', description => 'Tool agent W.');
SELECT adk_define_agent('boss97w', model => 'm97_fast', instruction => 'You are boss97w.', tools => ARRAY['w97', 'x97']);
SELECT adk_define_app('boss97w_app', 'boss97w');
SELECT count(*) AS events FROM adk_run('boss97w_app', 'u', 's97-toolfail',
                                       'call w97({"request": "one"}) call x97({"request": "two"})');
SELECT * FROM s97_ended('s97-toolfail');
-- one lane fails: the run fails, the other lanes' model calls are given up
SELECT count(*) AS events FROM adk_run('f97_app', 'u', 's97-fail', 'all three, please');
SELECT * FROM s97_ended('s97-fail');
-- the caller stops reading after the first lane's answer: the others are
-- given up
SELECT (adk_run('p97_app', 'u', 's97-stop', 'all three, please')).seq > 0 AS first_row LIMIT 1;
SELECT CASE WHEN c.kind = 'CLIENT' THEN 'chat' ELSE 'invoke_agent' END AS span,
       c.parent_span_id IS NULL AS root, c.status_code, c.attributes ->> 'error.type' AS error_type,
       c.attributes ->> 'adk.invocation.status' AS invocation, count(*),
       bool_and(p.span_id IS NULL OR (c.start_time >= p.start_time AND c.end_time <= p.end_time)) AS inside
  FROM adk.spans c LEFT JOIN adk.spans p ON p.span_id = c.parent_span_id
 WHERE c.session_id = 's97-stop' GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3;
-- the model call that answered is the lane whose event was stored
SELECT e.event_data ->> 'author' = p.attributes ->> 'gen_ai.agent.name' AS answered_lane
  FROM adk.spans c JOIN adk.spans p ON p.span_id = c.parent_span_id,
       adk.events e
 WHERE c.session_id = 's97-stop' AND c.kind = 'CLIENT' AND c.status_code = 'UNSET'
   AND e.session_id = 's97-stop' AND e.event_data ->> 'author' <> 'user';
