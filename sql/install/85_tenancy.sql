-- ---------------------------------------------------------------------
-- Tenancy and row-level security (SPEC §11).
-- See README "Tenancy" and src/store/tenancy.c.
--
-- adk.apps.tenancy: 'shared' (default; every adk_user member may name any
-- user id), 'role' (the user id is the calling role's name), 'claim' (a
-- member of adk_gateway names the end user it asserted with
-- adk_set_user() in this transaction).  adk_admin members, the owner of
-- schema adk and superusers see and run everything.
-- ---------------------------------------------------------------------

DO $roles$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) 'adk_gateway') THEN
        CREATE ROLE adk_gateway NOLOGIN;
    END IF;
END
$roles$;
-- a gateway runs apps like any adk_user member
GRANT adk_user TO adk_gateway;

ALTER TABLE adk.apps ADD COLUMN tenancy text NOT NULL DEFAULT 'shared'
    CHECK (tenancy OPERATOR(pg_catalog.=) ANY (ARRAY['shared', 'role', 'claim']));
COMMENT ON COLUMN adk.apps.tenancy IS
    '''shared'' (any adk_user member names any user id), ''role'' (user id = the calling role), ''claim'' (an adk_gateway member names the user it asserted with adk_set_user())';

DROP FUNCTION adk_define_app(text, text, boolean, text[], integer, jsonb, boolean);
CREATE FUNCTION adk_define_app(name text, root_agent text,
                               auto_create_session boolean DEFAULT true,
                               plugins text[] DEFAULT '{}',
                               max_llm_calls integer DEFAULT 500,
                               compaction jsonb DEFAULT NULL,
                               save_input_blobs_as_artifacts boolean DEFAULT false,
                               tenancy text DEFAULT 'shared')
RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO adk.apps AS a (name, root_agent, auto_create_session, plugins, max_llm_calls,
                               compaction, save_input_blobs_as_artifacts, tenancy)
    VALUES ($1, $2, coalesce($3, true), coalesce($4, '{}'),
            coalesce($5, 500), $6, coalesce($7, false),
            coalesce($8, 'shared'))
    ON CONFLICT ON CONSTRAINT apps_pkey DO UPDATE
       SET root_agent = EXCLUDED.root_agent, auto_create_session = EXCLUDED.auto_create_session,
           plugins = EXCLUDED.plugins, max_llm_calls = EXCLUDED.max_llm_calls,
           compaction = EXCLUDED.compaction,
           save_input_blobs_as_artifacts = EXCLUDED.save_input_blobs_as_artifacts,
           tenancy = EXCLUDED.tenancy
$$;
COMMENT ON FUNCTION adk_define_app(text, text, boolean, text[], integer, jsonb, boolean, text) IS
    'Create or replace an app: its root agent (the whole tree under it is checked), auto_create_session, plugins in call order, max_llm_calls per run, compaction (NULL = off), save_input_blobs_as_artifacts, tenancy (''shared'', ''role'' or ''claim'').';

CREATE FUNCTION adk_set_user(user_id text) RETURNS void
    AS 'MODULE_PATHNAME', 'adk_set_user' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_set_user(text) IS
    'adk_gateway members: assert the end user for the rest of the transaction (NULL: none); apps with tenancy ''claim'' then accept only that user id.  Refused while a run is active.';

CREATE FUNCTION adk_asserted_user() RETURNS text
    AS 'MODULE_PATHNAME', 'adk_asserted_user' LANGUAGE C STABLE;
COMMENT ON FUNCTION adk_asserted_user() IS
    'The end user asserted with adk_set_user() in this transaction, or NULL.';

CREATE FUNCTION adk._tenancy_check(app_name text, user_id text) RETURNS void
    AS 'MODULE_PATHNAME', 'adk_tenancy_check_sql' LANGUAGE C STABLE;
CREATE FUNCTION adk._tenant_visible(app_name text, user_id text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'adk_tenant_visible' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION adk._tenant_visible(text, text) IS
    'Row-level security: may the current role see rows of this app and user id?';

-- adk_create_session / adk_delete_session check the tenancy as the caller
-- (a SECURITY DEFINER function cannot see its caller), then run their SQL
-- bodies, now plain functions in schema adk, as the owner of schema adk.
-- Called directly, a body runs as the caller, who may not write the store.
ALTER FUNCTION adk_create_session(text, text, text, jsonb) RENAME TO _create_session;
ALTER FUNCTION _create_session(text, text, text, jsonb) SET SCHEMA adk;
ALTER FUNCTION adk._create_session(text, text, text, jsonb) SECURITY INVOKER;
ALTER FUNCTION adk_delete_session(text, text, text) RENAME TO _delete_session;
ALTER FUNCTION _delete_session(text, text, text) SET SCHEMA adk;
ALTER FUNCTION adk._delete_session(text, text, text) SECURITY INVOKER;

CREATE FUNCTION adk_create_session(app_name text, user_id text,
                                   session_id text DEFAULT NULL,
                                   state jsonb DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'adk_create_session_sql' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_create_session(text, text, text, jsonb) IS
    'Create a session (id generated when NULL); state keys app:/user: go to their scope, temp: are dropped. Returns the session as ADK''s Session JSON. A second create of the same id fails with 23505.';

CREATE FUNCTION adk_delete_session(app_name text, user_id text, session_id text)
RETURNS void
AS 'MODULE_PATHNAME', 'adk_delete_session_sql' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_delete_session(text, text, text) IS
    'Delete a session with its events; app and user state stay.';

-- ---------------------------------------------------------------------
-- Row-level security.  The owner of the tables (the role that created the
-- extension; ADK-JS and ADK Python connect as it) and superusers bypass
-- it; adk_admin members pass adk._tenant_visible.  The policies cover
-- every command, so adk_admin's DELETE on adk.model_calls still works.
-- ---------------------------------------------------------------------

ALTER TABLE adk.sessions ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.sessions
    USING (adk._tenant_visible(app_name, user_id)) WITH CHECK (adk._tenant_visible(app_name, user_id));
ALTER TABLE adk.events ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.events
    USING (adk._tenant_visible(app_name, user_id)) WITH CHECK (adk._tenant_visible(app_name, user_id));
ALTER TABLE adk.user_states ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.user_states
    USING (adk._tenant_visible(app_name, user_id)) WITH CHECK (adk._tenant_visible(app_name, user_id));
ALTER TABLE adk.run_states ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.run_states
    USING (adk._tenant_visible(app_name, user_id)) WITH CHECK (adk._tenant_visible(app_name, user_id));
ALTER TABLE adk.invocations ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.invocations
    USING (adk._tenant_visible(app_name, user_id)) WITH CHECK (adk._tenant_visible(app_name, user_id));
ALTER TABLE adk.jobs ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.jobs
    USING (adk._tenant_visible(app_name, user_id)) WITH CHECK (adk._tenant_visible(app_name, user_id));
ALTER TABLE adk.compactions ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.compactions
    USING (adk._tenant_visible(app_name, user_id)) WITH CHECK (adk._tenant_visible(app_name, user_id));
-- A model call belongs to its invocation's user.  One made outside any
-- invocation (adk_generate) names no app: it is shared, as before.
ALTER TABLE adk.model_calls ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.model_calls
    USING (invocation_id IS NULL
           OR EXISTS (SELECT 1 FROM adk.invocations i
                       WHERE i.invocation_id OPERATOR(pg_catalog.=) model_calls.invocation_id
                         AND adk._tenant_visible(i.app_name, i.user_id)));

-- Views read the tables as the querying role, so the policies apply.
ALTER VIEW adk.event_log SET (security_invoker = true);
ALTER VIEW adk.pending_interrupts SET (security_invoker = true);

-- safe to read now that row-level security filters it
GRANT SELECT ON adk.compactions TO adk_user;
