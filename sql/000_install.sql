-- Installation: the extension, its schema, the shape ADK's runtimes need,
-- roles and privileges.
CREATE EXTENSION adk_runner;

-- Test helper used by every file: run a statement and show the SQLSTATE,
-- message, detail and hint of the error it raises.
CREATE FUNCTION public.expect_error(q text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    st text; msg text; det text; hnt text;
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS OR query_canceled THEN
    GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT,
                            det = PG_EXCEPTION_DETAIL, hnt = PG_EXCEPTION_HINT;
    RETURN st || ': ' || msg
        || CASE WHEN det <> '' THEN E'\nDETAIL: ' || det ELSE '' END
        || CASE WHEN hnt <> '' THEN E'\nHINT: ' || hnt ELSE '' END;
END
$$;

SELECT extname, extversion FROM pg_extension WHERE extname = 'adk_runner';

-- The five shared tables: ADK's columns, exact types, NOT NULL, no defaults
-- on ADK's columns (our own columns may have them).
SELECT c.relname, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod) AS type,
       a.attnotnull AS not_null, pg_get_expr(d.adbin, d.adrelid) AS default
  FROM pg_attribute a
  JOIN pg_class c ON c.oid = a.attrelid
  JOIN pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE n.nspname = 'adk'
   AND c.relname IN ('adk_internal_metadata', 'app_states', 'user_states', 'sessions', 'events')
   AND a.attnum > 0 AND NOT a.attisdropped
 ORDER BY c.relname, a.attnum;

-- Primary keys in ADK-JS's order and naming, and nothing else on the five
-- tables: no other index, foreign key or check.  (PostgreSQL 18 also
-- lists NOT NULL as constraints, contype 'n'; they are the not_null above.)
SELECT c.relname, con.conname, con.contype, pg_get_constraintdef(con.oid)
  FROM pg_constraint con
  JOIN pg_class c ON c.oid = con.conrelid
  JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'adk'
   AND c.relname IN ('adk_internal_metadata', 'app_states', 'user_states', 'sessions', 'events')
   AND con.contype <> 'n'
 ORDER BY 1, 2;
SELECT c.relname AS table, i.relname AS index
  FROM pg_index x
  JOIN pg_class c ON c.oid = x.indrelid
  JOIN pg_class i ON i.oid = x.indexrelid
  JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'adk'
   AND c.relname IN ('adk_internal_metadata', 'app_states', 'user_states', 'sessions', 'events')
 ORDER BY 1, 2;

-- Our indexes live on the single partitions; our rules are triggers.
SELECT pg_get_indexdef(indexrelid) FROM pg_index
 WHERE indrelid IN ('adk.sessions_p0'::regclass, 'adk.events_p0'::regclass)
 ORDER BY 1;
SELECT tgrelid::regclass, tgname FROM pg_trigger
 WHERE tgrelid IN ('adk.sessions'::regclass, 'adk.events'::regclass) AND NOT tgisinternal
 ORDER BY 1, 2;

SELECT * FROM adk.adk_internal_metadata;

-- Roles, and PUBLIC gets nothing.
SELECT rolname, rolcanlogin FROM pg_roles WHERE rolname IN ('adk_admin', 'adk_user') ORDER BY 1;
SELECT pg_has_role('adk_admin', 'adk_user', 'MEMBER') AS admin_is_user;
SELECT count(*) AS public_executable
  FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension x ON x.oid = d.refobjid AND x.extname = 'adk_runner'
 WHERE has_function_privilege('public', p.oid, 'EXECUTE') IS TRUE
   AND EXISTS (SELECT 1 FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
                WHERE a.grantee = 0);
SELECT has_schema_privilege('public', 'adk', 'USAGE') AS public_usage;
SELECT has_function_privilege('adk_user', 'adk_append_event(text,text,text,jsonb)', 'EXECUTE') AS user_can_append,
       has_table_privilege('adk_user', 'adk.events', 'SELECT') AS user_can_read,
       has_table_privilege('adk_user', 'adk.events', 'INSERT') AS user_can_insert;

-- The library reserves the adk. prefix for its settings.
SELECT adk_create_session('load', 'load', 'load') IS NOT NULL AS loaded;
SELECT adk_append_event('load', 'load', 'load', '{"author": "user"}') IS NOT NULL AS loaded;
SHOW adk.max_event_size;
SET adk.no_such_setting = 1;
