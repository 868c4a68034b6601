-- ---------------------------------------------------------------------
-- Privileges (SPEC §11).  PUBLIC gets nothing.  adk_user runs apps and
-- reads sessions; adk_admin also defines models, tools, agents, apps and
-- secrets.  Writes to the store go through the adk_* functions.
-- ---------------------------------------------------------------------

GRANT adk_user TO adk_admin;

REVOKE ALL ON SCHEMA adk FROM PUBLIC;
GRANT USAGE ON SCHEMA adk TO adk_user;

GRANT SELECT ON adk.sessions, adk.events, adk.app_states, adk.user_states,
                adk.adk_internal_metadata, adk.event_log
   TO adk_user;

-- Definitions: adk_user reads models; adk_admin defines them.  Secrets
-- are adk_admin's alone.  The ledger is readable by adk_user.
GRANT SELECT ON adk.models, adk.model_calls TO adk_user;
GRANT INSERT, UPDATE, DELETE ON adk.models TO adk_admin;
GRANT SELECT, INSERT, UPDATE, DELETE ON adk.secrets TO adk_admin;
GRANT DELETE ON adk.model_calls TO adk_admin;
GRANT SELECT ON adk.tools, adk.agents, adk.apps, adk.plugins TO adk_user;
GRANT INSERT, UPDATE, DELETE ON adk.tools, adk.agents, adk.apps, adk.plugins TO adk_admin;

-- Functions are executable by PUBLIC by default: take that back from every
-- function of the extension, then grant the API to adk_user.
DO $grants$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN
        SELECT p.oid::regprocedure
          FROM pg_catalog.pg_proc p
          JOIN pg_catalog.pg_depend d
            ON d.classid = 'pg_catalog.pg_proc'::regclass AND d.objid = p.oid
           AND d.refclassid = 'pg_catalog.pg_extension'::regclass AND d.deptype = 'e'
          JOIN pg_catalog.pg_extension x ON x.oid = d.refobjid
         WHERE x.extname = 'adk_runner'
    LOOP
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', f);
        IF f::text ~ '^(adk_define_|adk_set_secret|adk_stat_reset)' THEN
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO adk_admin', f);
        ELSE
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO adk_user', f);
        END IF;
    END LOOP;
END
$grants$;
