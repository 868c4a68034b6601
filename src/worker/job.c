/*-------------------------------------------------------------------------
 *
 * job.c
 *	  The "adk_runner job worker" background worker: claims queued jobs one
 *	  at a time and runs each as the role that queued it, committing after
 *	  every stored event.
 *
 * A job's life in a worker:
 *	1. claim (adk._claim_job: FOR UPDATE SKIP LOCKED; never a job whose
 *	   session has an earlier job queued or running), register the run
 *	   (slot and run registry, before the claim commits, so whoever sees
 *	   the job 'running' also finds the worker), commit;
 *	2. clear what a previous job may have left in the session (settings,
 *	   temporary tables, prepared statements, cursors, advisory locks), and
 *	   switch to the job's role (SetUserIdAndSecContext with
 *	   SECURITY_LOCAL_USERID_CHANGE: tools run with that role's privileges,
 *	   and cannot SET ROLE or SET SESSION AUTHORIZATION back to the
 *	   worker's own user);
 *	3. adk_execute_run with a sink that commits after each stored event and
 *	   starts the next transaction (new snapshot; the session row locked
 *	   again), so every event is durable and visible -- and NOTIFYed -- at
 *	   once.  The runner's memory is a per-job context under
 *	   TopMemoryContext, which commits leave alone;
 *	4. the job ends as its invocation did (completed, failed, waiting), in
 *	   the run's last transaction.
 * An ERROR aborts the transaction; the job is then 'cancelled' (query
 * cancel: adk_cancel, adk_interrupt, pg_cancel_backend), queued again
 * (attempts left) or 'failed', with the message.  Events committed before
 * stay.  A worker that dies leaves its job to the launcher's recovery.
 *
 * The worker exits after adk.worker_idle_timeout without work, or when
 * terminated.
 *
 * IDENTIFICATION
 *	  src/worker/job.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "commands/prepare.h"
#include "commands/sequence.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/portal.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "model/ledger.h"
#include "runner/runner.h"
#include "store/owner.h"
#include "store/tenancy.h"
#include "worker/worker.h"

/* A claimed job, copied into the job's memory context */
typedef struct AdkJob
{
	int64		id;
	char	   *invocation_id;
	char	   *app;
	char	   *user;
	char	   *session;
	Jsonb	   *message;
	Jsonb	   *state_delta;
	Jsonb	   *options;
	Oid			role;
	int			attempts;
	int			max_attempts;
	char	   *extschema;
} AdkJob;

static int	my_slot = -1;
static MemoryContext job_cxt = NULL;
static Oid	worker_user = InvalidOid;
static int	worker_sec_context = 0;

static void worker_detach(int code, Datum arg);
static void set_slot(AdkSlotState state, int64 job_id);
static bool wait_for_work(void);
static bool surplus_worker(void);
static bool run_next_job(void);
static AdkJob *claim_job_guarded(void);
static AdkJob *claim_job(void);
static AdkJob *job_from_row(HeapTuple row, TupleDesc desc);
static void execute_job(AdkJob *job);
static void job_sink(AdkRun *run, Jsonb *event, int64 seq, TimestampTz time,
					 bool partial, void *arg);
static void lock_session(AdkJob *job);
static Jsonb *sink_every_event(Jsonb *options);
static void finish_job(AdkJob *job);
static void job_error(AdkJob *job, ErrorData *edata);
static void reset_session(void);
static void start_xact(void);
static void commit_xact(void);
static char *extension_schema(void);
static Jsonb *jsonb_or_null(HeapTuple row, TupleDesc desc, const char *col);

void
adk_job_worker_main(Datum arg)
{
	Oid			dboid;

	my_slot = DatumGetInt32(arg);
	memcpy(&dboid, MyBgworkerEntry->bgw_extra, sizeof(Oid));

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	pgstat_report_appname("adk_runner job worker");
	GetUserIdAndSecContext(&worker_user, &worker_sec_context);
	adk_run_registry_spans_transactions();

	job_cxt = AllocSetContextCreate(TopMemoryContext, "adk_runner job",
									ALLOCSET_DEFAULT_SIZES);
	on_shmem_exit(worker_detach, (Datum) 0);
	LWLockAcquire(adk_workers->lock, LW_EXCLUSIVE);
	adk_workers->slots[my_slot].pid = MyProcPid;
	adk_workers->slots[my_slot].latch = MyLatch;
	adk_workers->slots[my_slot].state = ADK_SLOT_BUSY;
	adk_workers->slots[my_slot].job_id = 0;
	adk_workers->slots[my_slot].since = GetCurrentTimestamp();
	LWLockRelease(adk_workers->lock);

	for (;;)
	{
		ResetLatch(MyLatch);
		/* a cancel that arrived after the last job ended is for nobody */
		QueryCancelPending = false;
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (surplus_worker())
			break;
		if (run_next_job())
			continue;
		if (!wait_for_work())
			break;
	}
	proc_exit(0);
}

static void
worker_detach(int code, Datum arg)
{
	LWLockAcquire(adk_workers->lock, LW_EXCLUSIVE);
	if (adk_workers->slots[my_slot].pid == MyProcPid)
	{
		adk_workers->slots[my_slot].state = ADK_SLOT_FREE;
		adk_workers->slots[my_slot].pid = 0;
		adk_workers->slots[my_slot].latch = NULL;
		adk_workers->slots[my_slot].job_id = 0;
	}
	LWLockRelease(adk_workers->lock);
	/* the launcher looks at the jobs again (bgw_notify_pid does too) */
}

static void
set_slot(AdkSlotState state, int64 job_id)
{
	AdkWorkerSlot *slot = &adk_workers->slots[my_slot];

	LWLockAcquire(adk_workers->lock, LW_EXCLUSIVE);
	slot->state = state;
	slot->job_id = job_id;
	slot->since = GetCurrentTimestamp();
	LWLockRelease(adk_workers->lock);
}

/*
 * Whether adk.max_workers (lowered since this worker started) leaves no
 * room for it: the workers in the lowest slots stay.
 */
static bool
surplus_worker(void)
{
	int			below = 0;
	int			i;

	LWLockAcquire(adk_workers->lock, LW_SHARED);
	for (i = 0; i < my_slot; i++)
	{
		if (adk_workers->slots[i].state != ADK_SLOT_FREE)
			below++;
	}
	LWLockRelease(adk_workers->lock);
	return below >= adk_max_workers;
}

/*
 * Nothing to claim: sleep until the launcher wakes us (it marks the slot
 * busy before it sets the latch) or the idle timeout.  false: exit.
 * true: woken, or a job was run meanwhile.
 */
static bool
wait_for_work(void)
{
	AdkWorkerSlot *slot = &adk_workers->slots[my_slot];
	int			rc;
	bool		woken;

	set_slot(ADK_SLOT_IDLE, 0);

	/*
	 * Look once more now that the launcher counts this worker as idle: a job
	 * committed after our last look, while the launcher saw us busy, would
	 * otherwise wait for the launcher's next round.
	 */
	if (run_next_job())
		return true;
	pgstat_report_activity(STATE_IDLE, NULL);
	pgstat_report_stat(true);
	rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
				   adk_worker_idle_timeout_s * 1000L, PG_WAIT_EXTENSION);

	LWLockAcquire(adk_workers->lock, LW_EXCLUSIVE);
	woken = slot->state == ADK_SLOT_BUSY;
	if (!woken && (rc & WL_TIMEOUT))
	{
		/* leaving: the launcher must not count on this worker any more */
		slot->state = ADK_SLOT_FREE;
		slot->pid = 0;
		slot->latch = NULL;
		LWLockRelease(adk_workers->lock);
		return false;
	}
	slot->state = ADK_SLOT_BUSY;
	slot->since = GetCurrentTimestamp();
	LWLockRelease(adk_workers->lock);
	return true;
}

/*
 * Claim one job and run it.  false: nothing to claim.
 */
static bool
run_next_job(void)
{
	AdkJob	   *volatile job;

	MemoryContextReset(job_cxt);
	MemoryContextSwitchTo(job_cxt);

	job = claim_job_guarded();
	if (job == NULL)
		return false;

	PG_TRY();
	{
		execute_job(job);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		HOLD_INTERRUPTS();
		MemoryContextSwitchTo(job_cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		SetUserIdAndSecContext(worker_user, worker_sec_context);
		adk_current_invocation_id = NULL;
		adk_tenancy_pin_user(NULL);
		job_error(job, edata);
		QueryCancelPending = false;
		RESUME_INTERRUPTS();
	}
	PG_END_TRY();

	HOLD_INTERRUPTS();
	adk_run_registry_clear();
	set_slot(ADK_SLOT_BUSY, 0);
	adk_workers_wake_waiters(job->invocation_id);
	QueryCancelPending = false;
	RESUME_INTERRUPTS();
	MemoryContextSwitchTo(TopMemoryContext);
	return true;
}

/*
 * claim_job, where a query cancel meant for the previous job (still on its
 * way when that job ended) neither stops the claim nor reaches the next
 * job: the claim is tried again.  A cancel meant for the claimed job sets
 * its registry entry's flag (it is registered before the claim commits),
 * which execute_job checks.
 */
static AdkJob *
claim_job_guarded(void)
{
	AdkJob	   *volatile job = NULL;
	volatile int tries = 0;

	for (;;)
	{
		PG_TRY();
		{
			job = claim_job();
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(job_cxt);
			edata = CopyErrorData();
			if (edata->sqlerrcode != ERRCODE_QUERY_CANCELED || ++tries > 3)
				PG_RE_THROW();
			FlushErrorState();
			AbortCurrentTransaction();
			SetUserIdAndSecContext(worker_user, worker_sec_context);
			adk_run_registry_clear();
			set_slot(ADK_SLOT_BUSY, 0);
			QueryCancelPending = false;
			continue;
		}
		PG_END_TRY();
		break;
	}
	QueryCancelPending = false;
	return job;
}

/*
 * The claim transaction.  NULL: nothing to claim (or no extension).
 */
static AdkJob *
claim_job(void)
{
	AdkJob	   *job = NULL;
	AdkOwnerSave save;
	Oid			type = INT4OID;
	Datum		arg = Int32GetDatum(MyProcPid);
	Oid			nsp;

	start_xact();
	/* the worker's own statements (as its superuser): pinned until commit */
	(void) adk_pin_search_path();
	nsp = get_namespace_oid("adk", true);
	if (OidIsValid(nsp) && OidIsValid(get_relname_relid("jobs", nsp)))
	{
		pgstat_report_activity(STATE_RUNNING, "adk_runner job worker: claiming a job");
		adk_become_owner(&save);
		SPI_connect();
		if (SPI_execute_with_args("SELECT * FROM adk._claim_job($1)", 1, &type, &arg,
								  NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not claim a job");
		if (SPI_processed == 1)
		{
			MemoryContext spi = MemoryContextSwitchTo(job_cxt);

			job = job_from_row(SPI_tuptable->vals[0], SPI_tuptable->tupdesc);
			job->extschema = extension_schema();
			MemoryContextSwitchTo(spi);
		}
		SPI_finish();
		adk_restore_user(&save);
	}
	if (job)
	{
		/*
		 * Seen 'running' means found here: register before the commit, as
		 * the job's role (for adk_cancel's check).
		 */
		set_slot(ADK_SLOT_BUSY, job->id);
		SetUserIdAndSecContext(job->role, SECURITY_LOCAL_USERID_CHANGE);
		adk_run_registry_enter(job->app, job->user, job->session);
		SetUserIdAndSecContext(worker_user, worker_sec_context);
		adk_run_registry_note(job->invocation_id);
	}
	commit_xact();
	MemoryContextSwitchTo(job_cxt);
	return job;
}

static AdkJob *
job_from_row(HeapTuple row, TupleDesc desc)
{
	AdkJob	   *job = palloc0(sizeof(AdkJob));
	bool		isnull;

	job->id = DatumGetInt64(SPI_getbinval(row, desc, SPI_fnumber(desc, "id"), &isnull));
	job->invocation_id = SPI_getvalue(row, desc, SPI_fnumber(desc, "invocation_id"));
	job->app = SPI_getvalue(row, desc, SPI_fnumber(desc, "app_name"));
	job->user = SPI_getvalue(row, desc, SPI_fnumber(desc, "user_id"));
	job->session = SPI_getvalue(row, desc, SPI_fnumber(desc, "session_id"));
	job->message = jsonb_or_null(row, desc, "message");
	job->state_delta = jsonb_or_null(row, desc, "state_delta");
	job->options = jsonb_or_null(row, desc, "options");
	job->role = DatumGetObjectId(SPI_getbinval(row, desc, SPI_fnumber(desc, "role_oid"), &isnull));
	job->attempts = DatumGetInt32(SPI_getbinval(row, desc, SPI_fnumber(desc, "attempts"), &isnull));
	job->max_attempts = DatumGetInt32(SPI_getbinval(row, desc, SPI_fnumber(desc, "max_attempts"), &isnull));
	return job;
}

static Jsonb *
jsonb_or_null(HeapTuple row, TupleDesc desc, const char *col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(row, desc, SPI_fnumber(desc, col), &isnull);

	return isnull ? NULL : DatumGetJsonbPCopy(d);
}

/*
 * The schema of the adk_* functions (the runner calls adk_create_session).
 */
static char *
extension_schema(void)
{
	char	   *schema;

	if (SPI_execute("SELECT n.nspname FROM pg_catalog.pg_extension e"
					" JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace"
					" WHERE e.extname OPERATOR(pg_catalog.=) 'adk_runner'", true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "extension adk_runner is not installed");
	schema = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	return MemoryContextStrdup(job_cxt, schema);
}

/*
 * Run a claimed job as its role; see the file header.
 */
static void
execute_job(AdkJob *job)
{
	char	   *activity;

	start_xact();
	/* the runner's memory must outlive the transactions it commits */
	MemoryContextSwitchTo(job_cxt);
	if (!SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(job->role)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("role %u that queued the job no longer exists", job->role)));
	reset_session();
	if (adk_run_registry_cancel_requested())
		ereport(ERROR,
				(errcode(ERRCODE_QUERY_CANCELED),
				 errmsg("canceling statement due to user request")));

	activity = psprintf("adk_runner job %lld: app \"%s\", user \"%s\", session \"%s\", invocation \"%s\"",
						(long long) job->id, job->app, job->user, job->session,
						job->invocation_id);
	pgstat_report_activity(STATE_RUNNING, activity);

	/* the user checked when the job was queued, for the whole run */
	adk_tenancy_pin_user(job->user);
	SetUserIdAndSecContext(job->role, SECURITY_LOCAL_USERID_CHANGE);
	adk_execute_run(job->app, job->user, job->session, job->message,
					job->state_delta, sink_every_event(job->options),
					job->invocation_id, job->extschema, job_sink, job);
	SetUserIdAndSecContext(worker_user, worker_sec_context);
	adk_tenancy_pin_user(NULL);

	HOLD_INTERRUPTS();
	finish_job(job);
	commit_xact();
	RESUME_INTERRUPTS();
}

/*
 * After each stored event: commit it, start the next transaction, take the
 * session row lock again (as adk_run holds it for a whole run).  Partial
 * events are not stored: nothing to commit.  Called at the runner's top
 * level only -- never in a subtransaction, and with the job's memory
 * context current.
 */
static void
job_sink(AdkRun *run, Jsonb *event, int64 seq, TimestampTz time, bool partial,
		 void *arg)
{
	AdkJob	   *job = (AdkJob *) arg;
	MemoryContext cxt = CurrentMemoryContext;
	MemoryContext c;
	Oid			userid;
	int			sec_context;

	if (partial || seq <= 0)
		return;
	if (IsSubTransaction())
		return;					/* the next top-level event commits it */
	for (c = cxt; c != NULL; c = c->parent)
	{
		if (c == TopTransactionContext)
			elog(ERROR, "the runner called the event sink in a transaction's memory context");
	}

	GetUserIdAndSecContext(&userid, &sec_context);
	commit_xact();
	start_xact();
	SetUserIdAndSecContext(userid, sec_context);
	MemoryContextSwitchTo(cxt);
	/* the ledger's invocation id lived in the committed transaction */
	adk_current_invocation_id = MemoryContextStrdup(TopTransactionContext,
													run->invocation_id);
	lock_session(job);
}

/*
 * The job's options with "yield_user_message": true, so the user event
 * reaches the sink (and is committed) like every other event.  Nothing is
 * returned from a job, so the option changes nothing else.
 */
static Jsonb *
sink_every_event(Jsonb *options)
{
	Jsonb	   *yield = DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
														   CStringGetDatum("{\"yield_user_message\": true}")));

	if (options == NULL)
		return yield;
	return DatumGetJsonbP(DirectFunctionCall2(jsonb_concat, JsonbPGetDatum(options),
											  JsonbPGetDatum(yield)));
}

static void
lock_session(AdkJob *job)
{
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		args[3];
	AdkOwnerSave save;

	args[0] = CStringGetTextDatum(job->app);
	args[1] = CStringGetTextDatum(job->user);
	args[2] = CStringGetTextDatum(job->session);
	adk_become_owner(&save);
	SPI_connect();
	if (SPI_execute_with_args("SELECT 1 FROM adk.sessions"
							  " WHERE app_name OPERATOR(pg_catalog.=) $1"
							  "   AND user_id OPERATOR(pg_catalog.=) $2"
							  "   AND id OPERATOR(pg_catalog.=) $3 FOR UPDATE",
							  3, types, args, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not lock the session");
	SPI_finish();
	adk_restore_user(&save);
}

/*
 * The job ends as its invocation did.
 */
static void
finish_job(AdkJob *job)
{
	Oid			types[2] = {INT8OID, TEXTOID};
	Datum		args[2];
	AdkOwnerSave save;
	char	   *status = "completed";

	args[0] = Int64GetDatum(job->id);
	args[1] = CStringGetTextDatum(job->invocation_id);
	adk_become_owner(&save);
	SPI_connect();
	if (SPI_execute_with_args("UPDATE adk.jobs j SET"
							  "  status = CASE WHEN i.status OPERATOR(pg_catalog.=) 'failed' THEN 'failed'"
							  "   WHEN i.status OPERATOR(pg_catalog.=) 'waiting' THEN 'waiting'"
							  "   WHEN i.status OPERATOR(pg_catalog.=) 'cancelled' THEN 'cancelled'"
							  "   ELSE 'completed' END,"
							  "  finished_at = pg_catalog.clock_timestamp(),"
							  "  error = CASE WHEN i.status OPERATOR(pg_catalog.=) 'failed'"
							  "   THEN pg_catalog.concat_ws(': ', i.error_code, i.error_message) END"
							  " FROM (SELECT (SELECT status FROM adk.invocations"
							  "               WHERE invocation_id OPERATOR(pg_catalog.=) $2) AS status,"
							  "              (SELECT error_code FROM adk.invocations"
							  "               WHERE invocation_id OPERATOR(pg_catalog.=) $2) AS error_code,"
							  "              (SELECT error_message FROM adk.invocations"
							  "               WHERE invocation_id OPERATOR(pg_catalog.=) $2) AS error_message) i"
							  " WHERE j.id OPERATOR(pg_catalog.=) $1"
							  " RETURNING j.status",
							  2, types, args, NULL, false, 0) != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not record the end of job %lld", (long long) job->id);
	if (SPI_processed == 1)
		status = MemoryContextStrdup(job_cxt,
									 SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
	SPI_finish();
	adk_restore_user(&save);
	adk_notify_job(job->id, job->invocation_id, status);
}

/*
 * The run raised: record why, in a transaction of its own.
 */
static void
job_error(AdkJob *job, ErrorData *edata)
{
	bool		cancelled = edata->sqlerrcode == ERRCODE_QUERY_CANCELED;
	bool		retry = !cancelled && job->attempts < job->max_attempts;
	const char *status = cancelled ? "cancelled" : retry ? "queued" : "failed";
	char	   *message = edata->message ? edata->message : "unknown error";
	Oid			types[4] = {INT8OID, TEXTOID, TEXTOID, TEXTOID};
	Datum		args[4];
	AdkOwnerSave save;

	if (cancelled)
		ereport(LOG,
				(errmsg("adk_runner job %lld (invocation \"%s\") cancelled",
						(long long) job->id, job->invocation_id)));
	else
		ereport(LOG,
				(errmsg("adk_runner job %lld (invocation \"%s\") failed: %s",
						(long long) job->id, job->invocation_id, message),
				 retry ? errdetail("It is queued again (attempt %d of %d).",
								   job->attempts, job->max_attempts) : 0));

	args[0] = Int64GetDatum(job->id);
	args[1] = CStringGetTextDatum(status);
	args[2] = CStringGetTextDatum(cancelled ? "cancelled" : message);
	args[3] = CStringGetTextDatum(cancelled ? "CANCELLED" : unpack_sql_state(edata->sqlerrcode));
	start_xact();
	adk_become_owner(&save);
	SPI_connect();
	if (SPI_execute_with_args("WITH j AS ("
							  " UPDATE adk.jobs SET status = $2, error = $3,"
							  "  finished_at = CASE WHEN $2 OPERATOR(pg_catalog.=) 'queued' THEN NULL"
							  "                ELSE pg_catalog.clock_timestamp() END,"
							  "  worker_pid = CASE WHEN $2 OPERATOR(pg_catalog.=) 'queued' THEN NULL"
							  "               ELSE worker_pid END"
							  " WHERE id OPERATOR(pg_catalog.=) $1 RETURNING invocation_id)"
							  " UPDATE adk.invocations i SET"
							  "  status = CASE WHEN $2 OPERATOR(pg_catalog.=) 'cancelled' THEN 'cancelled'"
							  "           ELSE 'failed' END,"
							  "  ended_at = pg_catalog.clock_timestamp(),"
							  "  error_code = $4, error_message = $3"
							  " FROM j WHERE i.invocation_id OPERATOR(pg_catalog.=) j.invocation_id"
							  "   AND i.status OPERATOR(pg_catalog.=) 'running'",
							  4, types, args, NULL, false, 0) < 0)
		elog(ERROR, "could not record the end of job %lld", (long long) job->id);
	SPI_finish();
	adk_restore_user(&save);
	if (!retry)
		adk_notify_job(job->id, job->invocation_id, status);
	commit_xact();
}

/*
 * What DISCARD ALL would do (but the plan cache): a previous job's tools,
 * run as another role, may have left settings, temporary tables (which
 * would shadow this job's tables), prepared statements, held cursors,
 * session advisory locks or LISTENs in this worker's session.
 */
static void
reset_session(void)
{
	PortalHashTableDeleteAll();
	ResetAllOptions();
	DropAllPreparedStatements();
	Async_UnlistenAll();
	LockReleaseAll(USER_LOCKMETHOD, true);
	ResetTempTableNamespace();
	ResetSequenceCaches();
}

static void
start_xact(void)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
}

static void
commit_xact(void)
{
	if (ActiveSnapshotSet())
		PopActiveSnapshot();
	CommitTransactionCommand();
}
