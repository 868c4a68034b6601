/*-------------------------------------------------------------------------
 *
 * tenancy.c
 *	  Tenancy per app (README "Tenancy"): which ADK user ids a
 *	  role may name, and the end user a gateway asserts.
 *
 * adk.apps.tenancy says, per app:
 *	  'shared'	every adk_user member may name any user id (the default);
 *	  'role'	the user id is the calling role's name;
 *	  'claim'	the caller is a member of adk_gateway and names the user it
 *				asserted with adk_set_user() in this transaction.
 * Members of adk_admin, the owner of schema adk (the role that created the
 * extension, which ADK-JS and ADK Python connect as) and superusers see and
 * run everything.  Every public entry point that names a session calls
 * adk_tenancy_check; the row-level security policies of the tables that
 * hold a user's data call adk._tenant_visible (sql/install/85_tenancy.sql).
 *
 * The asserted user lives for the transaction that asserted it (a pooled
 * connection never hands it to the next client): commit, rollback, or a
 * ROLLBACK TO SAVEPOINT that undoes the adk_set_user call clears it.  It
 * cannot be changed while a run is active in the backend -- a tool or
 * plugin runs inside a step, where adk_running_invocation() is set, and
 * between the steps of an open run (a cursor over adk_run between
 * FETCHes) the run registry still holds the run -- nor in a job worker,
 * which pins the user the job was queued for.
 *
 * IDENTIFICATION
 *	  src/store/tenancy.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "common/ids.h"
#include "common/owner.h"
#include "common/schema_version.h"
#include "common/trace_context.h"
#include "shared/registry.h"
#include "store/tenancy.h"

PG_FUNCTION_INFO_V1(adk_set_user);
PG_FUNCTION_INFO_V1(adk_asserted_user);
PG_FUNCTION_INFO_V1(adk_tenancy_check_sql);
PG_FUNCTION_INFO_V1(adk_tenant_visible);
PG_FUNCTION_INFO_V1(adk_role_visible);
PG_FUNCTION_INFO_V1(adk_create_session_sql);
PG_FUNCTION_INFO_V1(adk_delete_session_sql);
PG_FUNCTION_INFO_V1(adk_save_artifact_sql);
PG_FUNCTION_INFO_V1(adk_delete_artifact_sql);
PG_FUNCTION_INFO_V1(adk_add_session_to_memory_sql);
PG_FUNCTION_INFO_V1(adk_rebuild_run_states_sql);

/* the asserted end user, and the subtransaction that asserted it */
static char *asserted_user = NULL;
static SubTransactionId asserted_subid = InvalidSubTransactionId;
/* a job worker's user, for the whole job */
static char *pinned_user = NULL;
static bool callbacks_registered = false;

/* app -> mode, for one statement (RLS asks once per row) */
#define MODE_CACHE_SIZE 8
typedef struct ModeEntry
{
	char		app[ADK_MAX_ID_CHARS * 4 + 1];
	AdkTenancy	mode;
} ModeEntry;
static ModeEntry mode_cache[MODE_CACHE_SIZE];
static int	mode_cache_used = 0;
static TimestampTz mode_cache_stmt = 0;

static void register_callbacks(void);
static void xact_callback(XactEvent event, void *arg);
static void subxact_callback(SubXactEvent event, SubTransactionId mySubid,
							 SubTransactionId parentSubid, void *arg);
static Oid	role_oid(const char *name);
static bool is_gateway(void);
static const char *claimed_user(void);
static Datum owner_call(const char *sql, FunctionCallInfo fcinfo, int nargs,
						Oid *types, bool *isnull);

static void
register_callbacks(void)
{
	if (callbacks_registered)
		return;
	RegisterXactCallback(xact_callback, NULL);
	RegisterSubXactCallback(subxact_callback, NULL);
	callbacks_registered = true;
}

static void
clear_asserted(void)
{
	if (asserted_user)
		pfree(asserted_user);
	asserted_user = NULL;
	asserted_subid = InvalidSubTransactionId;
}

static void
xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			clear_asserted();
			mode_cache_used = 0;
			break;
		default:
			break;
	}
}

static void
subxact_callback(SubXactEvent event, SubTransactionId mySubid,
				 SubTransactionId parentSubid, void *arg)
{
	if (asserted_user == NULL || mySubid != asserted_subid)
		return;
	if (event == SUBXACT_EVENT_ABORT_SUB)
		clear_asserted();
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
		asserted_subid = parentSubid;
}

static Oid
role_oid(const char *name)
{
	return get_role_oid(name, true);
}

/*
 * The app's mode, read as the owner of schema adk once per statement.
 */
AdkTenancy
adk_app_tenancy(const char *app)
{
	TimestampTz stmt = GetCurrentStatementStartTimestamp();
	AdkOwnerSave save;
	Oid			type = TEXTOID;
	Datum		arg;
	AdkTenancy	mode = ADK_TENANCY_SHARED;
	int			i;

	if (stmt != mode_cache_stmt)
	{
		mode_cache_used = 0;
		mode_cache_stmt = stmt;
	}
	for (i = 0; i < mode_cache_used; i++)
	{
		if (strcmp(mode_cache[i].app, app) == 0)
			return mode_cache[i].mode;
	}

	arg = CStringGetTextDatum(app);
	adk_owner_spi_begin(&save);
	if (SPI_execute_with_args("SELECT a.tenancy FROM adk.apps a WHERE a.name OPERATOR(pg_catalog.=) $1",
							  1, &type, &arg, NULL, true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
	{
		char	   *t = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		if (t && strcmp(t, "role") == 0)
			mode = ADK_TENANCY_ROLE;
		else if (t && strcmp(t, "claim") == 0)
			mode = ADK_TENANCY_CLAIM;
	}
	adk_owner_spi_end(&save);

	register_callbacks();
	if (strlen(app) < sizeof(mode_cache[0].app))
	{
		i = mode_cache_used < MODE_CACHE_SIZE ? mode_cache_used++ : MODE_CACHE_SIZE - 1;
		strlcpy(mode_cache[i].app, app, sizeof(mode_cache[i].app));
		mode_cache[i].mode = mode;
	}
	return mode;
}

bool
adk_tenancy_sees_all(void)
{
	Oid			me = GetUserId();
	Oid			admin = role_oid("adk_admin");

	if (superuser_arg(me))
		return true;
	if (OidIsValid(admin) && has_privs_of_role(me, admin))
		return true;
	return has_privs_of_role(me, adk_schema_owner());
}

static bool
is_gateway(void)
{
	Oid			gateway = role_oid("adk_gateway");

	return OidIsValid(gateway) && has_privs_of_role(GetUserId(), gateway);
}

static const char *
claimed_user(void)
{
	return pinned_user ? pinned_user : asserted_user;
}

void
adk_tenancy_check(const char *app, const char *user)
{
	AdkTenancy	mode;
	const char *me;
	const char *claimed;

	/* every entry point naming an app and user comes here first */
	adk_require_schema();
	if (adk_tenancy_sees_all())
		return;
	mode = adk_app_tenancy(app);
	if (mode == ADK_TENANCY_SHARED)
		return;
	me = GetUserNameFromId(GetUserId(), false);
	if (mode == ADK_TENANCY_ROLE)
	{
		if (strcmp(me, user) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied for user \"%s\" of app \"%s\"", user, app),
					 errdetail("App \"%s\" has tenancy 'role': role \"%s\" may name only user id \"%s\".",
							   app, me, me)));
		return;
	}
	if (!is_gateway())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for user \"%s\" of app \"%s\"", user, app),
				 errdetail("App \"%s\" has tenancy 'claim': only members of adk_gateway may name its users.",
						   app)));
	claimed = claimed_user();
	if (claimed == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for user \"%s\" of app \"%s\"", user, app),
				 errdetail("App \"%s\" has tenancy 'claim', and no end user is asserted in this transaction.",
						   app),
				 errhint("Call adk_set_user() first, in the same transaction.")));
	if (strcmp(claimed, user) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for user \"%s\" of app \"%s\"", user, app),
				 errdetail("App \"%s\" has tenancy 'claim', and the asserted end user is \"%s\".",
						   app, claimed)));
}

/*
 * The "app:" keys of an app's state are shared by all its users: every
 * session of the app reads them, and instructions fill {app:...} from
 * them.  In a 'role' or 'claim' app, where users are kept apart, a user
 * writing them would write into every other user's sessions, so only the
 * roles that see everything (adk_admin, the owner of schema adk,
 * superusers) write them there -- through adk_append_event,
 * adk_create_session or a run's state_delta like anyone, or through an
 * agent's output_key, which an admin defined.  A 'shared' app's users
 * share everything, its app state included.
 */
void
adk_tenancy_check_app_state(const char *app, Jsonb *state)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	AdkTenancy	mode;

	if (state == NULL || !JB_ROOT_IS_OBJECT(state) || JB_ROOT_COUNT(state) == 0)
		return;
	if (adk_tenancy_sees_all())
		return;
	mode = adk_app_tenancy(app);
	if (mode == ADK_TENANCY_SHARED)
		return;
	it = JsonbIteratorInit(&state->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok != WJB_KEY)
			continue;
		if (v.val.string.len >= 4 && memcmp(v.val.string.val, "app:", 4) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to write the app state of app \"%s\"", app),
					 errdetail("App \"%s\" has tenancy '%s': every user of it reads its \"app:\" state keys, and only members of adk_admin write them; the state has key \"%.*s\".",
							   app, mode == ADK_TENANCY_ROLE ? "role" : "claim",
							   Min(v.val.string.len, 200), v.val.string.val),
					 errhint("Keep what belongs to one user under a \"user:\" key or in the session's own state.")));
	}
}

/*
 * An event appended through adk_append_event counts as history another
 * role acts on (a pending call, a compaction record) only when it comes
 * from the session's own user -- in a 'role' or 'claim' app, where
 * adk_tenancy_check made sure of that -- or from a role that sees
 * everything.  In a 'shared' app any adk_user member may append to any
 * session, so such an event is marked (custom_metadata.adk_appended_by)
 * and never counts.
 */
bool
adk_tenancy_trusted_append(const char *app)
{
	if (adk_tenancy_sees_all())
		return true;
	return adk_app_tenancy(app) != ADK_TENANCY_SHARED;
}

void
adk_tenancy_pin_user(const char *user)
{
	if (pinned_user)
		pfree(pinned_user);
	pinned_user = user ? MemoryContextStrdup(TopMemoryContext, user) : NULL;
}

/* ---------------------------------------------------------------------
 * SQL functions
 * ---------------------------------------------------------------------
 */

/*
 * adk_set_user(user_id text): assert the end user for the rest of the
 * transaction (NULL: none).
 */
Datum
adk_set_user(PG_FUNCTION_ARGS)
{
	char	   *user = NULL;

	if (!is_gateway())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to assert an end user"),
				 errdetail("Only members of adk_gateway may call adk_set_user().")));
	if (adk_running_invocation() != NULL || pinned_user != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot change the asserted end user while a run is active"),
				 errdetail("A tool, plugin or queued run cannot change the user it runs for.")));
	/* between the FETCHes of a cursor over adk_run no step is running */
	if (adk_run_registry_open())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot change the asserted end user while a run is active"),
				 errdetail("A run of this connection has not ended yet."),
				 errhint("Read the run to its end, or close its cursor, first.")));
	if (!IsTransactionBlock())
		ereport(WARNING,
				(errmsg("the end user asserted outside a transaction block lasts only until the end of this statement"),
				 errhint("The asserted user lasts until the end of the transaction: call adk_set_user() after BEGIN.")));
	if (!PG_ARGISNULL(0))
		user = adk_check_id("user id", PG_GETARG_TEXT_PP(0), ADK_MAX_ID_CHARS);

	register_callbacks();
	clear_asserted();
	if (user)
	{
		asserted_user = MemoryContextStrdup(TopMemoryContext, user);
		asserted_subid = GetCurrentSubTransactionId();
	}
	PG_RETURN_VOID();
}

/*
 * adk_asserted_user(): the end user asserted in this transaction, or NULL.
 */
Datum
adk_asserted_user(PG_FUNCTION_ARGS)
{
	const char *u = claimed_user();

	if (u == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(u));
}

/*
 * adk._tenancy_check(app, user_id): for the plpgsql entry points.
 */
Datum
adk_tenancy_check_sql(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		PG_RETURN_VOID();
	adk_tenancy_check(text_to_cstring(PG_GETARG_TEXT_PP(0)),
					  text_to_cstring(PG_GETARG_TEXT_PP(1)));
	PG_RETURN_VOID();
}

/*
 * adk._tenant_visible(app, user_id): the row-level security test.
 */
Datum
adk_tenant_visible(PG_FUNCTION_ARGS)
{
	char	   *app;
	char	   *user;
	AdkTenancy	mode;
	const char *claimed;

	if (adk_tenancy_sees_all())
		PG_RETURN_BOOL(true);
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		PG_RETURN_BOOL(false);
	app = text_to_cstring(PG_GETARG_TEXT_PP(0));
	user = text_to_cstring(PG_GETARG_TEXT_PP(1));
	mode = adk_app_tenancy(app);
	if (mode == ADK_TENANCY_SHARED)
		PG_RETURN_BOOL(true);
	if (mode == ADK_TENANCY_ROLE)
		PG_RETURN_BOOL(strcmp(GetUserNameFromId(GetUserId(), false), user) == 0);
	claimed = claimed_user();
	PG_RETURN_BOOL(claimed != NULL && is_gateway() && strcmp(claimed, user) == 0);
}

/*
 * Run sql (a SELECT of one value) with this function's arguments, as the
 * owner of schema adk; the value, a jsonb or of a pass-by-value type, is
 * copied into the caller's context.
 */
static Datum
owner_call(const char *sql, FunctionCallInfo fcinfo, int nargs, Oid *types,
		   bool *isnull)
{
	Datum		args[6];
	char		nulls[6];
	Datum		result = (Datum) 0;
	AdkOwnerSave save;
	MemoryContext caller = CurrentMemoryContext;
	int			i;

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
	if (!*isnull && !TupleDescAttr(SPI_tuptable->tupdesc, 0)->attbyval)
	{
		MemoryContext spi = MemoryContextSwitchTo(caller);

		result = PointerGetDatum(DatumGetJsonbPCopy(result));
		MemoryContextSwitchTo(spi);
	}
	adk_owner_spi_end(&save);
	return result;
}

static void
check_identities(FunctionCallInfo fcinfo)
{
	char	   *app = adk_check_id("app name", PG_ARGISNULL(0) ? NULL : PG_GETARG_TEXT_PP(0), ADK_MAX_ID_CHARS);
	char	   *user = adk_check_id("user id", PG_ARGISNULL(1) ? NULL : PG_GETARG_TEXT_PP(1), ADK_MAX_ID_CHARS);

	adk_tenancy_check(app, user);
}

/*
 * adk._role_visible(role_name): the row-level security test of rows that
 * belong to a role rather than to a user of an app -- a model call made
 * for no session, a budget of one role.  Its members see them (they may
 * become it anyway), and whoever sees everything.
 */
Datum
adk_role_visible(PG_FUNCTION_ARGS)
{
	Oid			role;

	if (adk_tenancy_sees_all())
		PG_RETURN_BOOL(true);
	if (PG_ARGISNULL(0))
		PG_RETURN_BOOL(false);
	role = role_oid(NameStr(*PG_GETARG_NAME(0)));
	PG_RETURN_BOOL(OidIsValid(role) && has_privs_of_role(GetUserId(), role));
}

/*
 * adk_create_session(app, user_id, session_id, state): the tenancy check
 * as the caller, then adk._create_session as the owner of schema adk.
 */
Datum
adk_create_session_sql(PG_FUNCTION_ARGS)
{
	Oid			types[4] = {TEXTOID, TEXTOID, TEXTOID, JSONBOID};
	bool		isnull;
	Datum		d;

	check_identities(fcinfo);
	if (!PG_ARGISNULL(3))
		adk_tenancy_check_app_state(text_to_cstring(PG_GETARG_TEXT_PP(0)),
									PG_GETARG_JSONB_P(3));
	d = owner_call("SELECT adk._create_session($1, $2, $3, $4)", fcinfo, 4, types, &isnull);
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(d);
}

/*
 * adk_delete_session(app, user_id, session_id)
 */
Datum
adk_delete_session_sql(PG_FUNCTION_ARGS)
{
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		args[3];
	char		nulls[3];
	AdkOwnerSave save;
	int			i;

	check_identities(fcinfo);
	for (i = 0; i < 3; i++)
	{
		args[i] = PG_GETARG_DATUM(i);
		nulls[i] = PG_ARGISNULL(i) ? 'n' : ' ';
	}
	adk_owner_spi_begin(&save);
	if (SPI_execute_with_args("SELECT adk._delete_session($1, $2, $3)", 3, types, args, nulls,
							  false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not delete the session");
	adk_owner_spi_end(&save);
	PG_RETURN_VOID();
}

/*
 * The artifact and memory writers: the tenancy check as the caller, then
 * their bodies (adk._save_artifact, adk._delete_artifact,
 * adk._add_session_to_memory) as the owner of schema adk, as for
 * adk_create_session.  Each returns an integer.
 */
static Datum
checked_owner_int4(FunctionCallInfo fcinfo, const char *sql, int nargs,
				   Oid *types)
{
	bool		isnull;
	Datum		d;

	check_identities(fcinfo);
	d = owner_call(sql, fcinfo, nargs, types, &isnull);
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(d);
}

/*
 * adk_save_artifact(app, user_id, session_id, filename, data, mime_type)
 */
Datum
adk_save_artifact_sql(PG_FUNCTION_ARGS)
{
	Oid			types[6] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, BYTEAOID, TEXTOID};

	return checked_owner_int4(fcinfo, "SELECT adk._save_artifact($1, $2, $3, $4, $5, $6)",
							  6, types);
}

/*
 * adk_delete_artifact(app, user_id, session_id, filename)
 */
Datum
adk_delete_artifact_sql(PG_FUNCTION_ARGS)
{
	Oid			types[4] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID};

	return checked_owner_int4(fcinfo, "SELECT adk._delete_artifact($1, $2, $3, $4)",
							  4, types);
}

/*
 * adk_add_session_to_memory(app, user_id, session_id)
 */
Datum
adk_add_session_to_memory_sql(PG_FUNCTION_ARGS)
{
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};

	return checked_owner_int4(fcinfo, "SELECT adk._add_session_to_memory($1, $2, $3)",
							  3, types);
}

/*
 * adk_rebuild_run_states(app, user_id, session_id): the scope checked as
 * the caller, then adk._rebuild_run_states as the owner of schema adk.
 * One user's scope (with or without a session) is checked as any entry
 * point that names a user -- the refusal does not depend on whether the
 * session exists.  One app's scope is, for a role that may name a single
 * user id of the app, that user's sessions (none in a 'claim' app with no
 * user asserted).  No scope, every app's sessions, is for roles that see
 * everything.  So a rebuild locks only sessions the caller may see.
 */
Datum
adk_rebuild_run_states_sql(PG_FUNCTION_ARGS)
{
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		args[3];
	char		nulls[3] = {'n', 'n', 'n'};
	char	   *app = NULL;
	char	   *user = NULL;
	char	   *session = NULL;
	AdkOwnerSave save;
	bool		isnull;
	int64		n;

	if (!PG_ARGISNULL(0))
		app = adk_check_id("app name", PG_GETARG_TEXT_PP(0), ADK_MAX_ID_CHARS);
	if (!PG_ARGISNULL(1))
		user = adk_check_id("user id", PG_GETARG_TEXT_PP(1), ADK_MAX_ID_CHARS);
	if (!PG_ARGISNULL(2))
		session = adk_check_id("session id", PG_GETARG_TEXT_PP(2), ADK_MAX_ID_CHARS);
	if ((session != NULL && (app == NULL || user == NULL)) ||
		(user != NULL && app == NULL))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a session id needs its app name and user id, and a user id its app name")));

	if (app == NULL)
	{
		if (!adk_tenancy_sees_all())
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to rebuild the run states of every app"),
					 errdetail("Only members of adk_admin rebuild the run states of all apps at once."),
					 errhint("Name the app, and the user id, whose run states to rebuild.")));
	}
	else if (user != NULL)
		adk_tenancy_check(app, user);
	else if (!adk_tenancy_sees_all())
	{
		AdkTenancy	mode = adk_app_tenancy(app);

		if (mode == ADK_TENANCY_ROLE)
			user = pstrdup(GetUserNameFromId(GetUserId(), false));
		else if (mode == ADK_TENANCY_CLAIM)
		{
			const char *claimed = is_gateway() ? claimed_user() : NULL;

			if (claimed == NULL)
				PG_RETURN_INT64(0);
			user = pstrdup(claimed);
		}
	}

	if (app)
	{
		args[0] = CStringGetTextDatum(app);
		nulls[0] = ' ';
	}
	if (user)
	{
		args[1] = CStringGetTextDatum(user);
		nulls[1] = ' ';
	}
	if (session)
	{
		args[2] = CStringGetTextDatum(session);
		nulls[2] = ' ';
	}
	adk_owner_spi_begin(&save);
	if (SPI_execute_with_args("SELECT adk._rebuild_run_states($1, $2, $3)", 3, types, args,
							  nulls, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not rebuild the run states");
	n = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	adk_owner_spi_end(&save);
	PG_RETURN_INT64(isnull ? 0 : n);
}
