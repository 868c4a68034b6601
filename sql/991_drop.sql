-- The extension drops cleanly, and installs again.
DROP EXTENSION adk_runner;
SELECT count(*) FROM pg_namespace WHERE nspname = 'adk';
CREATE EXTENSION adk_runner;
SELECT count(*) FROM adk.sessions;
