/*-------------------------------------------------------------------------
 *
 * submit.c
 *	  adk_submit: queue a run for the background workers; adk_wait: wait
 *	  for a queued run to end and return its events.
 *
 * A job is a row of adk.jobs, inserted as the owner of schema adk in the
 * caller's transaction, with the caller's current role as the role it will
 * run as.  The launcher is woken when that transaction commits; if it
 * rolls back, there is no job.  options.retries (a non-negative integer)
 * becomes max_attempts = 1 + retries; the other options are adk_run's and
 * are checked when the job runs.
 *
 * adk_wait polls the job's status (each poll a new snapshot: wait in READ
 * COMMITTED) and sleeps on its latch in between; the worker that ends the
 * job sets that latch, and a 100 ms timeout covers runs ended elsewhere.
 *
 * IDENTIFICATION
 *	  src/worker/submit.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>
#include <math.h>

#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "common/ids.h"
#include "common/jsonb_util.h"
#include "common/owner.h"
#include "runner/runner.h"
#include "store/tenancy.h"
#include "worker/worker.h"

#define MAX_RETRIES		100
#define WAIT_POLL_MS	100
#define WAIT_POLL_NO_WORKERS_MS 50

PG_FUNCTION_INFO_V1(adk_submit_text);
PG_FUNCTION_INFO_V1(adk_submit_content);
PG_FUNCTION_INFO_V1(adk_wait);

static Datum submit_entry(FunctionCallInfo fcinfo, Jsonb *message);
static Jsonb *take_retries(Jsonb *options, int *retries);
static bool run_ended(const char *invocation_id, char **status, char **app,
					  char **user, char **session);
static void return_events(ReturnSetInfo *rsinfo, const char *invocation_id,
						  const char *app, const char *user,
						  const char *session);
static void clear_wait(void);
struct RunInfo;
static void wait_for_end(const char *invocation_id, Interval *timeout,
						 bool woken, struct RunInfo *info);

/* sql/install/88_store_statements.sql */
#define INSERT_SQL \
	"SELECT adk._job_insert($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"

static SPIPlanPtr insert_plan = NULL;

/*
 * adk_submit(app, user_id, session_id, message text, state_delta, options)
 */
Datum
adk_submit_text(PG_FUNCTION_ARGS)
{
	return submit_entry(fcinfo, adk_message_arg(fcinfo, 3, true));
}

/*
 * adk_submit(app, user_id, session_id, message jsonb, state_delta, options):
 * message is a whole Content.
 */
Datum
adk_submit_content(PG_FUNCTION_ARGS)
{
	return submit_entry(fcinfo, adk_message_arg(fcinfo, 3, false));
}

static Datum
submit_entry(FunctionCallInfo fcinfo, Jsonb *message)
{
	char	   *app = adk_check_id("app name", PG_ARGISNULL(0) ? NULL : PG_GETARG_TEXT_PP(0), ADK_MAX_ID_CHARS);
	char	   *user = adk_check_id("user id", PG_ARGISNULL(1) ? NULL : PG_GETARG_TEXT_PP(1), ADK_MAX_ID_CHARS);
	char	   *session = adk_check_id("session id", PG_ARGISNULL(2) ? NULL : PG_GETARG_TEXT_PP(2), ADK_MAX_ID_CHARS);
	Jsonb	   *state_delta = PG_ARGISNULL(4) ? NULL : PG_GETARG_JSONB_P(4);
	Jsonb	   *options = PG_ARGISNULL(5) ? NULL : PG_GETARG_JSONB_P(5);
	int			retries;

	/* bad options are the caller's error now, not a failed job later */
	adk_check_run_options(take_retries(options, &retries));
	adk_tenancy_check(app, user);
	adk_tenancy_check_app_state(app, state_delta);
	adk_workers_require();
	if (state_delta && !adk_jsonb_is_object(&state_delta->root))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("state_delta must be a JSON object")));
	adk_check_app(app);
	PG_RETURN_TEXT_P(cstring_to_text(adk_job_insert(app, user, session, message,
													state_delta, options,
													GetUserId(), "adk_submit")));
}

/*
 * Raise unless app is defined.
 */
void
adk_check_app(const char *app)
{
	AdkOwnerSave save;
	Oid			type = TEXTOID;
	Datum		arg = CStringGetTextDatum(app);
	bool		found;

	adk_owner_spi_begin(&save);
	found = SPI_execute_with_args("SELECT 1 FROM adk.apps WHERE name OPERATOR(pg_catalog.=) $1",
								  1, &type, &arg, NULL, true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1;
	adk_owner_spi_end(&save);
	if (!found)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("app \"%s\" does not exist", app),
				 errhint("Define it with adk_define_app().")));
}

/*
 * Queue a job (identities already checked) to run as role; returns its
 * invocation id.  source says who queued it, for adk.jobs.source.
 */
char *
adk_job_insert(const char *app, const char *user, const char *session,
			   Jsonb *message, Jsonb *state_delta, Jsonb *options, Oid role,
			   const char *source)
{
	char	   *invocation_id = adk_new_id("e-");
	int			retries = 0;
	Datum		args[11];
	char		nulls[11];
	AdkOwnerSave save;
	NameData	role_name;

	adk_tenancy_check(app, user);
	options = take_retries(options, &retries);
	adk_check_run_options(options);
	namestrcpy(&role_name, GetUserNameFromId(role, false));
	memset(nulls, ' ', sizeof(nulls));
	args[0] = CStringGetTextDatum(invocation_id);
	args[1] = CStringGetTextDatum(app);
	args[2] = CStringGetTextDatum(user);
	args[3] = CStringGetTextDatum(session);
	args[4] = JsonbPGetDatum(message);
	args[5] = state_delta ? JsonbPGetDatum(state_delta) : (Datum) 0;
	nulls[5] = state_delta ? ' ' : 'n';
	args[6] = options ? JsonbPGetDatum(options) : (Datum) 0;
	nulls[6] = options ? ' ' : 'n';
	args[7] = ObjectIdGetDatum(role);
	args[8] = NameGetDatum(&role_name);
	args[9] = CStringGetTextDatum(source);
	args[10] = Int32GetDatum(1 + retries);

	adk_owner_spi_begin(&save);
	if (insert_plan == NULL)
	{
		Oid			types[11] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID,
			JSONBOID, JSONBOID, OIDOID, NAMEOID, TEXTOID, INT4OID};

		insert_plan = SPI_prepare(INSERT_SQL, 11, types);
		if (insert_plan == NULL)
			elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
		SPI_keepplan(insert_plan);
	}
	if (SPI_execute_plan(insert_plan, args, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not insert into adk.jobs");
	adk_owner_spi_end(&save);

	adk_workers_wake_at_commit();
	return invocation_id;
}

/*
 * options without "retries"; *retries its value (0 when absent).
 */
static Jsonb *
take_retries(Jsonb *options, int *retries)
{
	JsonbValue *v;
	double		n = -1;

	*retries = 0;
	if (options == NULL)
		return NULL;
	if (!adk_jsonb_is_object(&options->root))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("options must be a JSON object")));
	v = adk_jsonb_get(&options->root, "retries");
	if (v == NULL)
		return options;
	if (v->type == jbvNumeric)
		n = DatumGetFloat8(DirectFunctionCall1(numeric_float8,
											   NumericGetDatum(v->val.numeric)));
	if (v->type != jbvNumeric || n < 0 || n > MAX_RETRIES || n != floor(n))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"retries\" must be an integer from 0 to %d", MAX_RETRIES)));
	*retries = (int) n;
	return DatumGetJsonbP(DirectFunctionCall2(jsonb_delete, JsonbPGetDatum(options),
											  CStringGetTextDatum("retries")));
}

/* what adk_wait found out about the run */
typedef struct RunInfo
{
	char	   *status;
	char	   *app;
	char	   *user;
	char	   *session;
} RunInfo;

/*
 * adk_wait(invocation_id, timeout interval DEFAULT NULL)
 */
Datum
adk_wait(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *invocation_id;
	Interval   *timeout = PG_ARGISNULL(1) ? NULL : PG_GETARG_INTERVAL_P(1);
	AdkRunEntry *entry = adk_my_run_entry();
	RunInfo		info;

	invocation_id = adk_check_id("invocation id",
								 PG_ARGISNULL(0) ? NULL : PG_GETARG_TEXT_PP(0),
								 ADK_MAX_INVOCATION_ID_CHARS);
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC | MAT_SRF_BLESS);

	if (entry)
	{
		/* before the first look, so the worker's wake-up cannot be missed */
		LWLockAcquire(adk_workers->lock, LW_EXCLUSIVE);
		entry->wait_hash = adk_invocation_hash(invocation_id);
		entry->latch = MyLatch;
		LWLockRelease(adk_workers->lock);
	}
	PG_TRY();
	{
		wait_for_end(invocation_id, timeout, entry != NULL, &info);
	}
	PG_FINALLY();
	{
		clear_wait();
	}
	PG_END_TRY();

	adk_tenancy_check(info.app, info.user);
	return_events(rsinfo, invocation_id, info.app, info.user, info.session);
	return (Datum) 0;
}

/*
 * Poll until the run has ended; raise after timeout (NULL: none).
 */
static void
wait_for_end(const char *invocation_id, Interval *timeout, bool woken,
			 RunInfo *info)
{
	TimestampTz deadline = 0;

	if (timeout)
	{
		int64		usecs = timeout->time +
			(int64) timeout->day * USECS_PER_DAY +
			(int64) timeout->month * DAYS_PER_MONTH * USECS_PER_DAY;

		if (usecs < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("timeout must not be negative")));
		deadline = GetCurrentTimestamp() + usecs;
	}
	for (;;)
	{
		long		sleep_ms = woken ? WAIT_POLL_MS : WAIT_POLL_NO_WORKERS_MS;

		ResetLatch(MyLatch);
		if (run_ended(invocation_id, &info->status, &info->app, &info->user,
					  &info->session))
			return;
		if (IsolationUsesXactSnapshot())
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot wait for a run in a REPEATABLE READ or SERIALIZABLE transaction"),
					 errdetail("The run is %s, and its end would not be visible to this transaction's snapshot.",
							   info->status),
					 errhint("Call adk_wait in a READ COMMITTED transaction.")));
		if (timeout)
		{
			TimestampTz now = GetCurrentTimestamp();

			if (now >= deadline)
				ereport(ERROR,
						(errcode(ERRCODE_SQL_STATEMENT_NOT_YET_COMPLETE),
						 errmsg("run \"%s\" did not end within %s", invocation_id,
								DatumGetCString(DirectFunctionCall1(interval_out,
																	IntervalPGetDatum(timeout)))),
						 errdetail("The run is %s.", info->status),
						 errhint("The run goes on: call adk_wait again, or stop it with adk_cancel().")));
			sleep_ms = Min(sleep_ms, (deadline - now + 999) / 1000);
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 sleep_ms, PG_WAIT_EXTENSION);
		CHECK_FOR_INTERRUPTS();
	}
}

static void
clear_wait(void)
{
	AdkRunEntry *entry = adk_my_run_entry();

	if (entry == NULL)
		return;
	LWLockAcquire(adk_workers->lock, LW_EXCLUSIVE);
	entry->wait_hash = 0;
	entry->latch = NULL;
	LWLockRelease(adk_workers->lock);
}

/*
 * One look, with a new snapshot: has the run ended?  The job's status, or
 * (no job: a run of adk_run, or a job purged since) the invocation's.
 */
static bool
run_ended(const char *invocation_id, char **status, char **app, char **user,
		  char **session)
{
	Oid			type = TEXTOID;
	Datum		arg = CStringGetTextDatum(invocation_id);
	MemoryContext caller = CurrentMemoryContext;
	bool		found;
	bool		ended = false;
	bool		mine = false;
	bool		isnull;
	Datum		xmin;

	SPI_connect();
	/* sql/install/88_store_statements.sql */
	if (SPI_execute_with_args("SELECT * FROM adk._run_status($1)",
							  1, &type, &arg, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read adk.jobs");
	found = SPI_processed == 1;
	if (found)
	{
		HeapTuple	row = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;

		MemoryContextSwitchTo(caller);
		*status = SPI_getvalue(row, desc, 1);
		*app = SPI_getvalue(row, desc, 2);
		*user = SPI_getvalue(row, desc, 3);
		*session = SPI_getvalue(row, desc, 4);
		ended = strcmp(*status, "queued") != 0 && strcmp(*status, "running") != 0;
		xmin = SPI_getbinval(row, desc, 5, &isnull);
		mine = !ended && !isnull &&
			TransactionIdIsCurrentTransactionId(DatumGetTransactionId(xmin));
	}
	SPI_finish();
	if (!found)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("run \"%s\" does not exist", invocation_id),
				 errhint("adk_submit() returns the invocation id of the run it queues.")));
	if (mine)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot wait for a run queued in the same transaction"),
				 errdetail("A queued run starts after the transaction that queued it commits."),
				 errhint("Commit, then call adk_wait.")));
	return ended;
}

/*
 * The run's stored events, in order, as adk_run returns them.
 */
static void
return_events(ReturnSetInfo *rsinfo, const char *invocation_id, const char *app,
			  const char *user, const char *session)
{
	Oid			types[4] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		args[4];
	uint64		i;

	args[0] = CStringGetTextDatum(app);
	args[1] = CStringGetTextDatum(user);
	args[2] = CStringGetTextDatum(session);
	args[3] = CStringGetTextDatum(invocation_id);
	SPI_connect();
	if (SPI_execute_with_args("SELECT * FROM adk._wait_events($1, $2, $3, $4)",
							  4, types, args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read adk.events");
	for (i = 0; i < SPI_processed; i++)
		tuplestore_puttuple(rsinfo->setResult, SPI_tuptable->vals[i]);
	SPI_finish();
}
