-- adk_runner 0.5.0 -> 0.6.0: ALTER EXTENSION adk_runner UPDATE TO '0.6.0'.
-- Every change to the SQL surface since release 0.5.0, in the order the
-- full install script (sql/install/) makes it.  test/t/024_upgrade.pl
-- checks that a 0.5.0 schema updated with this script equals a fresh
-- 0.6.0 install (docs/releasing.md).

\echo Use "ALTER EXTENSION adk_runner UPDATE" to load this file. \quit

-- A span is stored through the view adk._span_rows (an INSERT planned once
-- per backend) instead of the plpgsql function adk._span_insert.
DROP FUNCTION adk._span_insert(text, text, text, text, text, timestamptz, timestamptz, text, text,
                               jsonb, jsonb, text, text, text, text, name, boolean);
CREATE VIEW adk._span_rows AS
SELECT s.trace_id, s.span_id, s.parent_span_id, s.name, s.kind, s.start_time, s.end_time,
       s.status_code, s.status_message, s.attributes, s.events, s.app_name, s.user_id,
       s.session_id, s.invocation_id, s.role_name, s.id
  FROM adk.spans s;
REVOKE ALL ON adk._span_rows FROM PUBLIC;
COMMENT ON VIEW adk._span_rows IS
    'Internal: adk.spans in the column order the runner inserts a span (src/runner/spans.c); the owner''s only.';
