-- ---------------------------------------------------------------------
-- Backup and restore (docs/operations.md).
--
-- pg_dump dumps the rows of an extension's table only when the table is
-- marked with pg_extension_config_dump, and a sequence's position only
-- when the sequence is.  The session store and the definitions are
-- marked where they are created; the runs' history is marked here: the
-- invocations, the workflow run states, the job queue with its history,
-- and the model-call ledger (its bodies are stored redacted).  The
-- events trigger keeps restored events as they were (store/event_trigger.c).
-- ---------------------------------------------------------------------

SELECT pg_catalog.pg_extension_config_dump('adk.invocations', '');
SELECT pg_catalog.pg_extension_config_dump('adk.run_states', '');
SELECT pg_catalog.pg_extension_config_dump('adk.jobs', '');
SELECT pg_catalog.pg_extension_config_dump('adk.jobs_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('adk.model_calls', '');
SELECT pg_catalog.pg_extension_config_dump('adk.model_calls_id_seq', '');

-- A job runs as role_oid.  Role OIDs are not kept by a dump (another
-- cluster gives the same role another OID, or gives that OID to another
-- role), names are: a job's role is found by its role_name whenever a row
-- arrives.  A job whose role does not exist gets no role (OID 0), and its
-- worker fails it ("role ... no longer exists") instead of running it.
CREATE FUNCTION adk._jobs_role_by_name() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    NEW.role_oid := coalesce((SELECT r.oid FROM pg_catalog.pg_roles r
                               WHERE r.rolname OPERATOR(pg_catalog.=) NEW.role_name), 0);
    RETURN NEW;
END
$$;
CREATE TRIGGER adk_jobs_role_by_name
    BEFORE INSERT ON adk.jobs
    FOR EACH ROW EXECUTE FUNCTION adk._jobs_role_by_name();
