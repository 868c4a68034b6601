-- ---------------------------------------------------------------------
-- Privileges (docs/security.md).  PUBLIC gets nothing.  adk_user runs apps and
-- reads sessions; adk_admin also defines models, tools, agents, apps and
-- secrets.  Writes to the store go through the adk_* functions.
-- ---------------------------------------------------------------------

GRANT adk_user TO adk_admin;

REVOKE ALL ON SCHEMA adk FROM PUBLIC;
GRANT USAGE ON SCHEMA adk TO adk_user;

GRANT SELECT ON adk.sessions, adk.events, adk.app_states, adk.user_states,
                adk.adk_internal_metadata, adk.event_log, adk.live_events, adk.active_tasks
   TO adk_user;

-- Definitions: adk_user reads models; adk_admin defines them.  Secrets
-- are adk_admin's alone.  The ledger is readable by adk_user.
-- adk.models.options may carry headers an admin set (a gateway's token,
-- an organisation id): adk_user reads every column but options, and the
-- options without header values in adk.model_definitions; adk_admin reads
-- the table whole.
GRANT SELECT ON adk.model_calls TO adk_user;
GRANT SELECT (name, provider, endpoint, model, api_key_env, api_key_secret,
              created_at, updated_at, price, fallbacks, capabilities)
   ON adk.models TO adk_user;
GRANT SELECT, INSERT, UPDATE, DELETE ON adk.models TO adk_admin;
CREATE VIEW adk.model_definitions AS
SELECT m.name, m.provider, m.endpoint, m.model, m.api_key_env, m.api_key_secret,
       CASE WHEN m.options OPERATOR(pg_catalog.?) 'headers'
            THEN m.options OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('headers',
                 (SELECT COALESCE(pg_catalog.jsonb_object_agg(h.key, pg_catalog.to_jsonb('[REDACTED]'::text)), '{}'::jsonb)
                    FROM pg_catalog.jsonb_each(m.options OPERATOR(pg_catalog.->) 'headers') h))
            ELSE m.options END AS options,
       m.price, m.created_at, m.updated_at, m.fallbacks, m.capabilities
  FROM adk.models m;
COMMENT ON VIEW adk.model_definitions IS
    'adk.models with the values of options.headers shown as [REDACTED] (adk_user may not read adk.models.options; adk_admin reads the table).';
GRANT SELECT ON adk.model_definitions TO adk_user;
GRANT SELECT, INSERT, UPDATE, DELETE ON adk.secrets TO adk_admin;
GRANT DELETE ON adk.model_calls TO adk_admin;
GRANT SELECT ON adk.tools, adk.agents, adk.apps, adk.plugins TO adk_user;
GRANT INSERT, UPDATE, DELETE ON adk.tools, adk.agents, adk.apps, adk.plugins TO adk_admin;

-- Functions are executable by PUBLIC by default: take that back from every
-- function of the extension, then grant the API (adk_*) to adk_user, the
-- definition API to adk_admin.  The internals (adk._*) are granted only
-- where a caller's own statement runs them: the SECURITY INVOKER API and
-- the views adk_user may read (adk_user), the triggers on the definition
-- tables adk_admin writes (adk_admin), and adk._job_trigger, which CREATE
-- TRIGGER in adk_create_trigger checks -- and adk._agent_tree, a read of
-- adk.agents an adk_user may make anyway.  Every other internal runs only
-- inside the extension, as the owner of schema adk, and nobody else may
-- call it with arguments of their own (docs/security.md, "Security").
-- A new internal that a SECURITY INVOKER function, a view or a trigger on
-- a definition table calls must be added to one of the lists below
-- (95_tenancy_grants.sql adds what row-level security's policies run).
DO $grants$
DECLARE
    f regprocedure;
    n name;
    user_internals name[] := ARRAY['_check_id', '_session_json', '_session_not_found',
        '_prefixed', '_parts', '_tool_schema', '_function_inputs', '_type_schema',
        '_check_tool_function', '_job_trigger', '_agent_tree',
        '_artifact_run_session', '_artifact_scope', '_check_filename',
        '_memory_search', '_memory_search_vec', '_any_word_query', '_cosine', '_embed',
        '_memory_config', '_artifact_names', '_artifact_latest',
        '_page_size', '_page_token', '_page_token_read', '_mermaid_text', '_mermaid_who',
        '_json_schema', '_mermaid_label', '_wait_events', '_job_triggers', '_run_status'];
    admin_internals name[] := ARRAY['_agent_cycle', '_agent_edges', '_agent_model',
        '_builtin_tools', '_check_agent_tree', '_check_call_options', '_check_compaction', '_check_thinking',
        '_check_one_parent', '_check_references', '_check_root_mode', '_check_task_placement',
        '_check_tool_parameters', '_format_cycle',
        '_endpoint_problem', '_host_entry_problem',
        '_lock_definitions', '_name_list', '_reserved_tool_names',
        '_check_workflow', '_workflow_hash', '_workflow_retry_defaults',
        '_workflow_node_rows', '_workflow_edge_rows'];
BEGIN
    FOR f, n IN
        SELECT p.oid::regprocedure, p.proname
          FROM pg_catalog.pg_proc p
          JOIN pg_catalog.pg_depend d
            ON d.classid = 'pg_catalog.pg_proc'::regclass AND d.objid = p.oid
           AND d.refclassid = 'pg_catalog.pg_extension'::regclass AND d.deptype = 'e'
          JOIN pg_catalog.pg_extension x ON x.oid = d.refobjid
         WHERE x.extname = 'adk_runner'
    LOOP
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', f);
        IF n ~ '^(adk_define_|adk_set_secret|adk_stat_reset)' OR n = ANY (admin_internals) THEN
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO adk_admin', f);
        ELSIF n !~ '^_' OR n = ANY (user_internals) THEN
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO adk_user', f);
        END IF;
    END LOOP;
END
$grants$;
