-- ---------------------------------------------------------------------
-- Grants that row-level security and the security_invoker views need,
-- after the general ones of 90_privileges.sql (whatever those take away
-- from adk_user on the adk._* internals): a policy's functions, and a
-- security_invoker view's, run as the querying role, and a CHECK
-- constraint's function as the role that writes the row.
-- ---------------------------------------------------------------------

GRANT EXECUTE ON FUNCTION adk._tenant_visible(text, text), adk._role_visible(name),
                          adk._tenancy_check(text, text), adk._parts(jsonb)
   TO adk_user;
GRANT EXECUTE ON FUNCTION adk._check_price(jsonb) TO adk_admin;
GRANT EXECUTE ON FUNCTION adk._budget_period_start(text, timestamptz) TO adk_user;

-- PUBLIC gets nothing, this predicate included: a role outside adk_user
-- that the owner grants the tables to directly (another ADK runtime's own
-- login role) needs EXECUTE on adk._tenant_visible(text, text) too, since
-- the policies call it as that role (docs/security.md, "Tenancy"), and on
-- adk._role_visible(name) for adk.model_calls and adk.budgets.
