/*-------------------------------------------------------------------------
 *
 * lifecycle.c
 *	  The session lifecycle's writers that name a user: adk_purge_user,
 *	  adk_fork_session and adk_rewind.
 *
 * The bodies are SQL (adk._purge_user and adk._fork_session in
 * sql/install/87_lifecycle.sql, adk._rewind in 89_rewind.sql) and write
 * tables only the owner of schema adk writes.  As for adk_create_session
 * (tenancy.c), the identities and the tenancy are checked here as the
 * caller -- a SECURITY DEFINER function could not see who called it -- and
 * the body then runs as the owner, with search_path pinned.  Called
 * directly, a body runs as the caller, who may not write the store.
 *
 * IDENTIFICATION
 *	  src/store/lifecycle.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/datum.h"

#include "common/ids.h"
#include "common/owner.h"
#include "store/tenancy.h"

PG_FUNCTION_INFO_V1(adk_purge_user_sql);
PG_FUNCTION_INFO_V1(adk_fork_session_sql);
PG_FUNCTION_INFO_V1(adk_rewind_sql);

/*
 * Check the app and user id (arguments 0 and 1) and the caller's tenancy
 * for them, then run sql, a SELECT of one value of a variable-length type,
 * with the function's first nargs arguments as the owner of schema adk.
 * The value is copied into the caller's memory context (the function
 * call's); NULL comes back as *isnull.
 */
static Datum
checked_owner_select(FunctionCallInfo fcinfo, const char *sql, int nargs,
					 Oid *types, bool *isnull)
{
	Datum		args[5];
	char		nulls[5];
	Datum		result = (Datum) 0;
	AdkOwnerSave save;
	MemoryContext caller = CurrentMemoryContext;
	char	   *app;
	char	   *user;
	int			i;

	Assert(nargs <= lengthof(args));
	app = adk_check_id("app name", PG_ARGISNULL(0) ? NULL : PG_GETARG_TEXT_PP(0),
					   ADK_MAX_ID_CHARS);
	user = adk_check_id("user id", PG_ARGISNULL(1) ? NULL : PG_GETARG_TEXT_PP(1),
						ADK_MAX_ID_CHARS);
	adk_tenancy_check(app, user);

	for (i = 0; i < nargs; i++)
	{
		args[i] = PG_GETARG_DATUM(i);
		nulls[i] = PG_ARGISNULL(i) ? 'n' : ' ';
	}
	adk_owner_spi_begin(&save);
	if (SPI_execute_with_args(sql, nargs, types, args, nulls, false, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not run \"%s\"", sql);
	result = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, isnull);
	if (!*isnull)
	{
		MemoryContext spi = MemoryContextSwitchTo(caller);

		result = datumCopy(result, false, -1);
		MemoryContextSwitchTo(spi);
	}
	adk_owner_spi_end(&save);
	return result;
}

/*
 * adk_purge_user(app, user_id) RETURNS jsonb
 */
Datum
adk_purge_user_sql(PG_FUNCTION_ARGS)
{
	Oid			types[2] = {TEXTOID, TEXTOID};
	bool		isnull;
	Datum		d;

	d = checked_owner_select(fcinfo, "SELECT adk._purge_user($1, $2)", 2, types, &isnull);
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(d);
}

/*
 * adk_fork_session(app, user_id, source_session_id, before_invocation_id,
 * new_session_id) RETURNS text
 */
Datum
adk_fork_session_sql(PG_FUNCTION_ARGS)
{
	Oid			types[5] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	bool		isnull;
	Datum		d;

	d = checked_owner_select(fcinfo, "SELECT adk._fork_session($1, $2, $3, $4, $5)", 5, types,
							 &isnull);
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(d);
}

/*
 * adk_rewind(app, user_id, session_id, before_invocation_id) RETURNS jsonb
 * (sql/install/89_rewind.sql)
 */
Datum
adk_rewind_sql(PG_FUNCTION_ARGS)
{
	Oid			types[4] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	bool		isnull;
	Datum		d;

	d = checked_owner_select(fcinfo, "SELECT adk._rewind($1, $2, $3, $4)", 4, types, &isnull);
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(d);
}
