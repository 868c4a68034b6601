-- adk_runner 0.8.0 -> 0.9.0: ALTER EXTENSION adk_runner UPDATE TO '0.9.0'.
-- Every change to the SQL surface since release 0.8.0, in the order the
-- full install script (sql/install/) makes it.  test/t/024_upgrade.pl
-- checks that a 0.8.0 schema updated with this script equals a fresh
-- 0.9.0 install (docs/releasing.md).

\echo Use "ALTER EXTENSION adk_runner UPDATE" to load this file. \quit
