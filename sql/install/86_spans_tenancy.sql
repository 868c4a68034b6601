-- ---------------------------------------------------------------------
-- Row-level security on adk.spans (after 85_tenancy.sql, which defines
-- adk._tenant_visible): a span is its run's app and user's, like the
-- events and the model calls of the run.  The runner writes spans as the
-- owner; the exporter reads them as the bootstrap superuser.
-- ---------------------------------------------------------------------
ALTER TABLE adk.spans ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.spans
    USING (adk._tenant_visible(app_name, user_id)) WITH CHECK (adk._tenant_visible(app_name, user_id));
