-- adk_runner — the full install script of the version in development
-- (the Makefile's EXTVERSION), assembled at build time from
-- sql/install/*.sql in file-name order.  Edit the pieces, not the result;
-- and put every change to the SQL surface into the upgrade script from
-- the last release as well (sql/releases/, see docs/releasing.md).

\echo Use "CREATE EXTENSION adk_runner" to load this file. \quit

-- Tables and views (the nouns) live in schema adk; functions (the verbs)
-- live in the extension's schema, public by default.
CREATE SCHEMA adk;
COMMENT ON SCHEMA adk IS 'adk_runner: sessions, events, state and the rest of the ADK store';

-- Roles (docs/security.md).  Roles are cluster-wide: another database may have
-- created them already.
DO $roles$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'adk_user') THEN
        CREATE ROLE adk_user NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'adk_admin') THEN
        CREATE ROLE adk_admin NOLOGIN;
    END IF;
END
$roles$;
