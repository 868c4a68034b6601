-- ---------------------------------------------------------------------
-- Traces (docs/observability.md): OpenTelemetry spans as rows, the OTLP export queue,
-- counters per model and per tool.
-- ---------------------------------------------------------------------

-- One row per span, written by the runner in the run's own transaction
-- (runner/spans.c): a rolled-back turn leaves none.  The columns of the
-- ADK SQL span exporters (trace_id, span_id, parent_span_id as lowercase
-- hex, name, start and end, attributes) plus the OpenTelemetry span's
-- kind, status and events, and the session keys.
-- The row check is one C function over the columns (what it requires is
-- in src/common/trace_context.c, adk_span_row_ok): the executor reads
-- every CHECK of a table from its stored node tree at the start of each
-- INSERT, and seven expressions with regex and array constants cost more
-- than the rest of the insert.
CREATE FUNCTION adk._span_row_ok(trace_id text, span_id text, parent_span_id text, kind text,
                                 status_code text, attributes jsonb, events jsonb) RETURNS boolean
    AS 'MODULE_PATHNAME', 'adk_span_row_ok' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION adk._span_row_ok(text, text, text, text, text, jsonb, jsonb) IS
    'CHECK of adk.spans: trace_id 32 and span_id 16 lower-case hex digits, not all zeros; parent_span_id 16 lower-case hex digits; kind an OpenTelemetry span kind (INTERNAL, SERVER, CLIENT, PRODUCER, CONSUMER); status_code UNSET, OK or ERROR; attributes an object; events an array';
CREATE TABLE adk.spans (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    trace_id       text NOT NULL,
    span_id        text NOT NULL,
    parent_span_id text,
    name           text NOT NULL,
    kind           text NOT NULL,
    start_time     timestamptz NOT NULL,
    end_time       timestamptz NOT NULL,
    status_code    text NOT NULL DEFAULT 'UNSET',
    status_message text,
    attributes     jsonb NOT NULL DEFAULT '{}',
    events         jsonb NOT NULL DEFAULT '[]',
    app_name       text,
    user_id        text,
    session_id     text,
    invocation_id  text,
    role_name      name NOT NULL DEFAULT current_user,
    created_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT spans_row_check CHECK (adk._span_row_ok(trace_id, span_id, parent_span_id, kind, status_code,
                                                       attributes, events))
);
CREATE INDEX spans_trace_idx ON adk.spans (trace_id, span_id);
CREATE INDEX spans_session_idx ON adk.spans (app_name, user_id, session_id);
CREATE INDEX spans_invocation_idx ON adk.spans (invocation_id);
CREATE INDEX spans_created_at_idx ON adk.spans (created_at);
COMMENT ON TABLE adk.spans IS 'OpenTelemetry GenAI spans of the runs (invoke_agent, {operation} {model}, execute_tool), written in the run''s transaction; rows older than adk.spans_retention are removed as new ones are written.';

-- The ledger row of a model request names its span; first_chunk_ms is the
-- time to the first body chunk of a streamed call.
ALTER TABLE adk.model_calls
    ADD COLUMN first_chunk_ms double precision,
    ADD COLUMN cached_tokens  bigint,
    ADD COLUMN trace_id       text,
    ADD COLUMN span_id        text;

-- Spans committed and not yet delivered to adk.otlp_endpoint.  The writer
-- adds a row in the span's own transaction (only while an endpoint is
-- set), so a row here is visible exactly when its span is committed; the
-- exporter deletes rows only after the endpoint answered 2xx for them.
-- Unlike a high-water mark on adk.spans.id, this cannot skip a span whose
-- lower id commits after a higher one.
CREATE TABLE adk.span_exports (
    span_ref bigint PRIMARY KEY
);
COMMENT ON TABLE adk.span_exports IS 'The OTLP exporter''s queue: committed spans not yet accepted by adk.otlp_endpoint.';

-- The exporter's progress, for people (one row).
CREATE TABLE adk.otlp_export_state (
    id             integer PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    exported       bigint NOT NULL DEFAULT 0,
    batches        bigint NOT NULL DEFAULT 0,
    failures       bigint NOT NULL DEFAULT 0,
    last_export_at timestamptz,
    last_error     text,
    last_error_at  timestamptz
);
INSERT INTO adk.otlp_export_state DEFAULT VALUES;
COMMENT ON TABLE adk.otlp_export_state IS 'What the OTLP exporter has delivered, and its last failure.';

-- OTLP/HTTP JSON (opentelemetry-proto's JSON mapping): one attribute
-- value.  Strings, booleans, integers (int64 as a JSON string) and doubles
-- as such; an array of scalars as an arrayValue; anything nested as its
-- JSON text.
CREATE FUNCTION adk._otlp_value(v jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE pg_catalog.jsonb_typeof(v)
        WHEN 'string' THEN pg_catalog.jsonb_build_object('stringValue', v OPERATOR(pg_catalog.#>>) '{}')
        WHEN 'boolean' THEN pg_catalog.jsonb_build_object('boolValue', v)
        WHEN 'number' THEN
            CASE WHEN (v OPERATOR(pg_catalog.#>>) '{}') OPERATOR(pg_catalog.~) '^-?[0-9]{1,18}$'
                 THEN pg_catalog.jsonb_build_object('intValue', v OPERATOR(pg_catalog.#>>) '{}')
                 ELSE pg_catalog.jsonb_build_object('doubleValue', v) END
        WHEN 'array' THEN
            CASE WHEN NOT EXISTS (SELECT 1 FROM pg_catalog.jsonb_array_elements(v) e
                                   WHERE pg_catalog.jsonb_typeof(e) OPERATOR(pg_catalog.=) ANY (ARRAY['object', 'array', 'null']))
                 THEN pg_catalog.jsonb_build_object('arrayValue', pg_catalog.jsonb_build_object('values',
                          (SELECT coalesce(pg_catalog.jsonb_agg(adk._otlp_value(e)), '[]')
                             FROM pg_catalog.jsonb_array_elements(v) e)))
                 ELSE pg_catalog.jsonb_build_object('stringValue', v::text) END
        WHEN 'object' THEN pg_catalog.jsonb_build_object('stringValue', v::text)
    END
$$;

CREATE FUNCTION adk._otlp_attributes(a jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('key', e.key, 'value', adk._otlp_value(e.value))
                                                    ORDER BY e.key), '[]')
      FROM pg_catalog.jsonb_each(a) e
     WHERE pg_catalog.jsonb_typeof(e.value) OPERATOR(pg_catalog.<>) 'null'
$$;

CREATE FUNCTION adk._otlp_nanos(t timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT ((EXTRACT(epoch FROM t) OPERATOR(pg_catalog.*) 1000000)::bigint)::text OPERATOR(pg_catalog.||) '000'
$$;

-- The next batch for the exporter (worker/otlp.c): up to n queued spans in
-- queue order, as one ExportTraceServiceRequest, and their queue refs.
-- Queue rows whose span retention removed are dropped first.
CREATE FUNCTION adk._otlp_batch(n integer, service_name text, OUT refs bigint[], OUT payload text)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    DELETE FROM adk.span_exports q
     WHERE NOT EXISTS (SELECT 1 FROM adk.spans s WHERE s.id OPERATOR(pg_catalog.=) q.span_ref);
    WITH b AS (
        SELECT s.* FROM adk.span_exports q JOIN adk.spans s ON s.id OPERATOR(pg_catalog.=) q.span_ref
         ORDER BY q.span_ref LIMIT n
    )
    SELECT pg_catalog.array_agg(b.id ORDER BY b.id),
           pg_catalog.jsonb_build_object('resourceSpans', pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
               'resource', pg_catalog.jsonb_build_object('attributes', adk._otlp_attributes(pg_catalog.jsonb_build_object(
                   'service.name', service_name,
                   'telemetry.sdk.name', 'adk_runner', 'telemetry.sdk.language', 'c',
                   'telemetry.sdk.version', (SELECT x.extversion FROM pg_catalog.pg_extension x
                                              WHERE x.extname OPERATOR(pg_catalog.=) 'adk_runner')))),
               'scopeSpans', pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
                   'scope', pg_catalog.jsonb_build_object('name', 'adk_runner'),
                   'spans', pg_catalog.jsonb_agg(pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
                       'traceId', b.trace_id,
                       'spanId', b.span_id,
                       'parentSpanId', b.parent_span_id,
                       'name', b.name,
                       'kind', pg_catalog.array_position(ARRAY['INTERNAL', 'SERVER', 'CLIENT', 'PRODUCER', 'CONSUMER'], b.kind),
                       'startTimeUnixNano', adk._otlp_nanos(b.start_time),
                       'endTimeUnixNano', adk._otlp_nanos(b.end_time),
                       'attributes', adk._otlp_attributes(b.attributes OPERATOR(pg_catalog.||) pg_catalog.jsonb_strip_nulls(
                           pg_catalog.jsonb_build_object('adk.app.name', b.app_name, 'adk.user.id', b.user_id,
                                                         'adk.invocation.id', b.invocation_id))),
                       'events', (SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                                          'timeUnixNano', e OPERATOR(pg_catalog.->>) 'time_unix_nano',
                                          'name', e OPERATOR(pg_catalog.->>) 'name',
                                          'attributes', adk._otlp_attributes(coalesce(e OPERATOR(pg_catalog.->) 'attributes', '{}')))), '[]')
                                    FROM pg_catalog.jsonb_array_elements(b.events) e),
                       'status', pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
                           'code', pg_catalog.array_position(ARRAY['UNSET', 'OK', 'ERROR'], b.status_code) OPERATOR(pg_catalog.-) 1,
                           'message', b.status_message))))
                       ORDER BY b.id))))))::text
      INTO refs, payload
      FROM b;
END
$$;

-- The trace and span a tool runs in (NULL outside a run), so it can tag
-- its own writes.
CREATE FUNCTION adk_current_trace(OUT trace_id text, OUT span_id text, OUT traceparent text)
    AS 'MODULE_PATHNAME', 'adk_current_trace' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION adk_current_trace() IS
    'The trace id and span id of the span running now (a tool sees its execute_tool span), and the W3C traceparent naming it; NULLs outside a run.';

-- ---------------------------------------------------------------------
-- Counters in the pg_stat_* style, for postgres_exporter and friends:
-- views over the ledger (models) and the spans (tools) since the last
-- adk_stat_reset().  Views, not shared memory: they need no preload, count
-- what committed (the same rows people query), and cost nothing on the
-- hot path; they cover what adk.model_calls_retention / adk.spans_retention
-- keep.  They read as the querying role, so row-level security applies:
-- a tenant counts its own calls (86_spans_tenancy.sql).  Times are in
-- milliseconds rounded to a tenth: what a person reads (the rows in
-- adk.model_calls and adk.spans keep them whole).
-- ---------------------------------------------------------------------
CREATE TABLE adk.stat_reset (
    id       integer PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    reset_at timestamptz NOT NULL DEFAULT '-infinity'
);
INSERT INTO adk.stat_reset DEFAULT VALUES;

CREATE VIEW adk.stat_models WITH (security_invoker = true) AS
SELECT m.model, m.provider,
       pg_catalog.count(*) AS calls,
       pg_catalog.count(*) FILTER (WHERE m.error_code IS NOT NULL) AS errors,
       coalesce(pg_catalog.sum(m.input_tokens), 0)::bigint AS input_tokens,
       coalesce(pg_catalog.sum(m.output_tokens), 0)::bigint AS output_tokens,
       coalesce(pg_catalog.sum(m.cached_tokens), 0)::bigint AS cached_tokens,
       pg_catalog.round(pg_catalog.sum(m.latency_ms)::numeric, 1) AS total_time_ms,
       pg_catalog.round(pg_catalog.avg(m.latency_ms)::numeric, 1) AS mean_time_ms,
       pg_catalog.round(pg_catalog.avg(m.first_chunk_ms)::numeric, 1) AS mean_first_chunk_ms,
       (SELECT r.reset_at FROM adk.stat_reset r) AS stats_reset
  FROM adk.model_calls m
 WHERE m.created_at OPERATOR(pg_catalog.>=) (SELECT r.reset_at FROM adk.stat_reset r)
 GROUP BY m.model, m.provider;
COMMENT ON VIEW adk.stat_models IS 'Per model: calls, errors, tokens (input, output, cached) and time since adk_stat_reset(), from adk.model_calls.';

CREATE VIEW adk.stat_tools WITH (security_invoker = true) AS
SELECT s.attributes OPERATOR(pg_catalog.->>) 'gen_ai.tool.name' AS tool,
       pg_catalog.count(*) AS calls,
       pg_catalog.count(*) FILTER (WHERE s.status_code OPERATOR(pg_catalog.=) 'ERROR') AS errors,
       pg_catalog.round(pg_catalog.sum((s.attributes OPERATOR(pg_catalog.->>) 'adk.tool.duration_ms')::numeric), 1) AS total_time_ms,
       pg_catalog.round(pg_catalog.avg((s.attributes OPERATOR(pg_catalog.->>) 'adk.tool.duration_ms')::numeric), 1) AS mean_time_ms,
       (SELECT r.reset_at FROM adk.stat_reset r) AS stats_reset
  FROM adk.spans s
 WHERE s.attributes OPERATOR(pg_catalog.->>) 'gen_ai.operation.name' OPERATOR(pg_catalog.=) 'execute_tool'
   AND s.created_at OPERATOR(pg_catalog.>=) (SELECT r.reset_at FROM adk.stat_reset r)
 GROUP BY 1;
COMMENT ON VIEW adk.stat_tools IS 'Per tool: calls, errors and time since adk_stat_reset(), from the execute_tool spans.';

CREATE FUNCTION adk_stat_reset() RETURNS timestamptz
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    UPDATE adk.stat_reset SET reset_at = pg_catalog.clock_timestamp() RETURNING reset_at
$$;
COMMENT ON FUNCTION adk_stat_reset() IS 'Start adk.stat_models and adk.stat_tools counting from now (adk_admin).';

-- the views read adk.stat_reset as the querying role
GRANT SELECT ON adk.spans, adk.otlp_export_state, adk.stat_models, adk.stat_tools, adk.stat_reset
   TO adk_user;
GRANT DELETE ON adk.spans TO adk_admin;

SELECT pg_catalog.pg_extension_config_dump('adk.spans', '');
SELECT pg_catalog.pg_extension_config_dump('adk.spans_id_seq', '');
