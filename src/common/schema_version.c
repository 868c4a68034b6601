/*-------------------------------------------------------------------------
 *
 * schema_version.c
 *	  Whether the installed schema is the one this library was built for.
 *
 * A package upgrade (or "make install") replaces the shared library at
 * once, but the schema of every database moves only with ALTER EXTENSION
 * adk_runner UPDATE.  Until then a new backend runs the new library
 * against the old schema, and a backend that loaded the old library
 * before the update runs it against the new one.  Neither may guess: the
 * C code that reads or writes the store calls adk_require_schema(), which
 * raises a clear error with the fix, and the background workers ask
 * adk_schema_state() and wait.  SQL-language functions of the installed
 * script need no check: they always match their own schema.
 *
 * The check reads pg_extension once per transaction (an index lookup),
 * so a long-lived pooled backend notices an update made elsewhere at its
 * next transaction.
 *
 * IDENTIFICATION
 *	  src/common/schema_version.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "common/schema_version.h"

static bool checked_in_xact = false;
static bool callback_registered = false;

static void
reset_check(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT || event == XACT_EVENT_PREPARE)
		checked_in_xact = false;
}

/*
 * Compare two versions "X.Y.Z" number by number (a missing part is 0).
 */
int
adk_version_cmp(const char *a, const char *b)
{
	while (*a || *b)
	{
		long		x = strtol(a, (char **) &a, 10);
		long		y = strtol(b, (char **) &b, 10);

		if (x != y)
			return x < y ? -1 : 1;
		if (*a == '.')
			a++;
		else if (*a)
			return strcmp(a, b);	/* not a number: compare the rest */
		if (*b == '.')
			b++;
		else if (*b)
			return strcmp(a, b);
	}
	return 0;
}

/*
 * The state of the adk_runner extension in the current database; when it
 * is installed and installed is not NULL, *installed is its version
 * (palloc'd in the current memory context).  Needs a transaction.
 */
AdkSchemaState
adk_schema_state(char **installed)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	AdkSchemaState state = ADK_SCHEMA_ABSENT;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber,
				F_NAMEEQ, CStringGetDatum("adk_runner"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, Anum_pg_extension_extversion,
									 RelationGetDescr(rel), &isnull);
		char	   *version = isnull ? pstrdup("") : TextDatumGetCString(d);

		state = strcmp(version, ADK_LIB_VERSION) == 0 ?
			ADK_SCHEMA_MATCHES : ADK_SCHEMA_OTHER;
		if (installed)
			*installed = version;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return state;
}

/*
 * Raise an error unless the installed schema is the library's version.
 * Inside CREATE EXTENSION or ALTER EXTENSION ... UPDATE the script's own
 * statements run at the version being installed: no check.
 */
void
adk_require_schema(void)
{
	char	   *installed = NULL;
	AdkSchemaState state;

	if (checked_in_xact || creating_extension)
		return;
	state = adk_schema_state(&installed);
	if (state == ADK_SCHEMA_ABSENT)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"adk_runner\" is not installed in this database")));
	if (state == ADK_SCHEMA_OTHER)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"adk_runner\" is installed at version %s, but its library is version %s",
						installed, ADK_LIB_VERSION),
				 adk_version_cmp(installed, ADK_LIB_VERSION) < 0 ?
				 errhint("Run ALTER EXTENSION adk_runner UPDATE in this database.") :
				 errhint("Install the library of version %s and restart the server: the running server loaded an older one.",
						 installed)));
	if (!callback_registered)
	{
		RegisterXactCallback(reset_check, NULL);
		callback_registered = true;
	}
	checked_in_xact = true;
}

/*
 * For the background workers: true when the schema matches the library.
 * When it is installed at another version they wait instead of failing
 * jobs: this logs that once per process and version, and returns false.
 */
bool
adk_schema_ready(void)
{
	static char *logged = NULL;
	char	   *installed = NULL;
	AdkSchemaState state = adk_schema_state(&installed);

	if (state != ADK_SCHEMA_OTHER)
		return state == ADK_SCHEMA_MATCHES;
	if (logged == NULL || strcmp(logged, installed) != 0)
	{
		ereport(LOG,
				(errmsg("adk_runner: extension \"adk_runner\" in database \"%s\" is at version %s, but the library is version %s: queued runs wait",
						get_database_name(MyDatabaseId), installed, ADK_LIB_VERSION),
				 adk_version_cmp(installed, ADK_LIB_VERSION) < 0 ?
				 errhint("Run ALTER EXTENSION adk_runner UPDATE in that database.") :
				 errhint("Install the library of version %s and restart the server.", installed)));
		if (logged)
			pfree(logged);
		logged = MemoryContextStrdup(TopMemoryContext, installed);
	}
	return false;
}
