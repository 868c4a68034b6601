/*-------------------------------------------------------------------------
 *
 * job.c
 *	  The "adk_runner job worker" background worker: holds up to
 *	  adk.worker_concurrency queued runs at once and advances whichever can
 *	  go on -- while run A waits for its model, the worker steps run B.
 *
 * A job's life in a worker:
 *	1. claim (adk._claim_job: FOR UPDATE SKIP LOCKED; never a job whose
 *	   session has an earlier job queued or running; the role, then the
 *	   app, with the fewest running jobs first, so one role's queue does
 *	   not starve another's; a job whose session's last job another live
 *	   worker ran is left to that worker for adk.worker_affinity_delay,
 *	   since it kept the session's history, runner/prompt_carry.c, and a
 *	   worker that ends a job whose session has a next one queued claims
 *	   again at once), register the run (a run entry of this
 *	   worker's, before the claim commits, so whoever sees the job
 *	   'running' also finds it), commit -- up to CLAIM_BATCH jobs in one
 *	   claim transaction (adk._claim_jobs), one commit for them all;
 *	2. then step by step (runner.h: adk_run_begin, adk_run_step), each
 *	   stretch of steps up to the next wait for the model (at most
 *	   STEPS_PER_TRANSACTION) in a transaction of its own: the session row locked (SKIP LOCKED: a
 *	   session a foreground adk_run holds makes the run wait for a later
 *	   round, never the worker), what any previous step may have left in
 *	   the session cleared (settings, temporary tables, prepared
 *	   statements, cursors, advisory locks), the job's role switched to
 *	   (SetUserIdAndSecContext with SECURITY_LOCAL_USERID_CHANGE: tools run
 *	   with that role's privileges, and cannot SET ROLE or SET SESSION
 *	   AUTHORIZATION back to the worker's own user), one step, commit -- so
 *	   every stored event is durable and visible (and NOTIFYed) at the end
 *	   of its step.  A step that started model calls leaves the run parked:
 *	   no transaction, no lock is held while it waits; the worker drives
 *	   every transfer in flight (http.c) and steps the run again once its
 *	   answers are in.  A job's memory is a context of its own under
 *	   TopMemoryContext, which commits leave alone;
 *	3. the job ends as its invocation did (completed, failed, waiting), in
 *	   the run's last step's transaction.
 * An ERROR in a step aborts that step's transaction; the job is then
 * 'cancelled' (adk_cancel, adk_interrupt, a query cancel), queued again
 * (attempts left) or 'failed', with the message -- the worker's other runs
 * go on.  Events committed before stay, and a later attempt goes on from
 * them (adk_run_retry: no second user event, model call or tool call for
 * what is stored).  A worker that dies leaves its jobs to the launcher's
 * recovery.  Each early end ends the run's trace
 * too (abort_spans; terminated: spans_at_exit).
 *
 * Cancel: adk_cancel sets the run entry's flag and the worker's latch; the
 * worker ends that run before its next step or within ADK_HTTP_POLL_MS of
 * waiting (its model calls stop).  A SQL tool running in the step being
 * executed gets SIGINT (cancel.c), and adk.tool_timeout bounds it: while
 * one step runs, the worker's other runs wait.
 *
 * Streaming: nobody reads a job's partial events, so a job asks the model
 * for whole responses.
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
#include "storage/pmsignal.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/array.h"
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

#include "common/owner.h"
#include "common/schema_version.h"
#include "common/subxact_abort.h"
#include "common/trace_context.h"
#include "model/http.h"
#include "runner/runner.h"
#include "runner/spans.h"
#include "store/tenancy.h"
#include "worker/worker.h"

/* A claimed job, in its own memory context */
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
	MemoryContext cxt;			/* this struct, its run */
	AdkRun	   *run;			/* NULL until its first step */
	int			entry;			/* its run entry (adk_job_run_entry) */
	bool		waiting;		/* its last step returned ADK_STEP_WAIT */
	TimestampTz not_before;		/* its session was busy: step again then */
} AdkJob;

/* a run whose session another transaction holds looks again after this */
#define BUSY_SESSION_RETRY_MS	10
/* at most this many steps of one run in one transaction */
#define STEPS_PER_TRANSACTION	16
/* with runs held, the worker looks for more jobs at least this often */
#define CLAIM_EVERY_MS			200
/* at most this many jobs claimed in one transaction */
#define CLAIM_BATCH				16

static int	my_slot = -1;
static MemoryContext worker_cxt = NULL;
static List *held = NIL;		/* AdkJob *, in claim order */
/* a job that ended has a next job of its session queued: held for us */
static bool claim_soon = false;
static List *claiming = NIL;	/* AdkJob *, of the claim in progress */

/* the worker's own statements, planned once (worker_plan) */
static SPIPlanPtr claim_plan = NULL;
static SPIPlanPtr lock_plan = NULL;
static SPIPlanPtr finished_plan = NULL;

/*
 * false when the last claim found no extension at this library's version
 * (dropped, or waiting for ALTER EXTENSION UPDATE): the worker then exits
 * as soon as it holds no run, and the launcher starts none until it is
 * back.
 */
static bool schema_ready = true;
static Oid	worker_user = InvalidOid;
static int	worker_sec_context = 0;

static void worker_detach(int code, Datum arg);
static void spans_at_exit(int code, Datum arg);
static void set_slot(AdkSlotState state, int64 job_id);
static void set_stepping(int entry);
static bool wait_for_work(void);
static bool surplus_worker(void);
static bool claim_jobs(void);
static List *claim_batch_guarded(int most);
static void release_claiming(void);
static List *claim_batch(int most);
static SPIPlanPtr worker_plan(SPIPlanPtr *plan, const char *sql, int nargs, Oid *types);
static Datum live_workers(void);
static int	take_entry(AdkJob *job);
static AdkJob *job_from_row(HeapTuple row, TupleDesc desc);
static bool step_jobs(void);
static void step_job(AdkJob *job);
static void end_job(AdkJob *job);
static bool cancel_requested(AdkJob *job);
static void cancel_jobs(void);
static void wait_for_progress(void);
static void drive(int timeout_ms);
static void job_sink(AdkRun *run, Jsonb *event, int64 seq, TimestampTz time,
					 bool partial, void *arg);
static bool lock_session(AdkJob *job);
static Jsonb *sink_every_event(Jsonb *options);
static void finish_job(AdkJob *job);
static void job_error(AdkJob *job, ErrorData *edata, bool cancelled);
static void abort_spans(AdkJob *job, bool cancelled, const char *error_type,
						const char *message);
static void reset_session(void);
static void start_xact(void);
static void commit_xact(void);
static char *extension_schema(MemoryContext cxt);
static Jsonb *jsonb_or_null(HeapTuple row, TupleDesc desc, const char *col);

void
adk_job_worker_main(Datum arg)
{
	Oid			dboid;
	bool		claim_wanted = true;
	bool		queue_more = false;
	TimestampTz last_claim = 0;

	my_slot = DatumGetInt32(arg);
	memcpy(&dboid, MyBgworkerEntry->bgw_extra, sizeof(Oid));

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	pgstat_report_appname("adk_runner job worker");
	GetUserIdAndSecContext(&worker_user, &worker_sec_context);
	adk_run_registry_spans_transactions();
	/* after the connection's own callbacks: run before them */
	before_shmem_exit(spans_at_exit, (Datum) 0);

	worker_cxt = AllocSetContextCreate(TopMemoryContext, "adk_runner job worker",
									   ALLOCSET_DEFAULT_SIZES);
	on_shmem_exit(worker_detach, (Datum) 0);
	LWLockAcquire(adk_workers->lock, LW_EXCLUSIVE);
	adk_workers->slots[my_slot].pid = MyProcPid;
	adk_workers->slots[my_slot].latch = MyLatch;
	adk_workers->slots[my_slot].state = ADK_SLOT_BUSY;
	adk_workers->slots[my_slot].job_id = 0;
	adk_workers->slots[my_slot].nruns = 0;
	adk_workers->slots[my_slot].stepping = -1;
	adk_workers->slots[my_slot].since = GetCurrentTimestamp();
	memset(adk_job_run_entry(my_slot, 0), 0,
		   sizeof(AdkJobRunEntry) * ADK_MAX_WORKER_CONCURRENCY);
	LWLockRelease(adk_workers->lock);

	for (;;)
	{
		bool		progressed;
		TimestampTz now;
		int			room;

		if (MyLatch->is_set || claim_soon)
			claim_wanted = true;	/* the launcher has work, or a cancel */
		claim_soon = false;
		ResetLatch(MyLatch);
		/* a cancel meant for a run is found by its flag */
		QueryCancelPending = false;
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (held == NIL && surplus_worker())
			break;

		/*
		 * Claim when woken, every CLAIM_EVERY_MS, and while the queue may
		 * hold more (the last claim stopped because the worker was full) once
		 * the runs that ended leave room for a batch: a claim transaction for
		 * several jobs, not one per run that ends.  A claim that finds nothing
		 * walks the whole queue: it is not tried again before one of these.
		 */
		now = GetCurrentTimestamp();
		room = adk_worker_concurrency - list_length(held);
		if (held != NIL && TimestampDifferenceExceeds(last_claim, now, CLAIM_EVERY_MS))
			claim_wanted = true;
		if (room > 0 &&
			(claim_wanted ||
			 (queue_more && room >= Max(1, Min(CLAIM_BATCH, adk_worker_concurrency / 4)))) &&
			!surplus_worker())
		{
			last_claim = now;
			claim_wanted = false;
			queue_more = claim_jobs();
		}

		cancel_jobs();
		progressed = step_jobs();

		if (held == NIL)
		{
			if (!schema_ready || !wait_for_work())
				break;
			claim_wanted = true;
			continue;
		}
		if (!progressed)
			wait_for_progress();
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
		adk_workers->slots[my_slot].nruns = 0;
		adk_workers->slots[my_slot].stepping = -1;
		memset(adk_job_run_entry(my_slot, 0), 0,
			   sizeof(AdkJobRunEntry) * ADK_MAX_WORKER_CONCURRENCY);
	}
	LWLockRelease(adk_workers->lock);
	/* the launcher looks at the jobs again (bgw_notify_pid does too) */
}

/*
 * The worker leaves with runs held (terminated: pg_terminate_backend, a
 * fast shutdown): the launcher's recovery records their jobs' end
 * (WORKER_LOST, or queued again), and their traces end here as a failed
 * step's do (abort_spans), with error.type WORKER_LOST, in one transaction
 * before the backend's own exit callbacks abort it (as namespace.c's
 * RemoveTempRelationsCallback does).  A crash (SIGKILL, a server restart,
 * the postmaster's death) leaves them as their steps committed them.
 */
static void
spans_at_exit(int code, Datum arg)
{
	ListCell   *lc;
	char	   *message;

	/* no postmaster: nothing is to be written any more */
	if (held == NIL || !PostmasterIsAlive())
		return;
	HOLD_INTERRUPTS();
	AbortOutOfAnyTransaction();
	MemoryContextSwitchTo(worker_cxt);
	SetUserIdAndSecContext(worker_user, worker_sec_context);
	adk_tenancy_pin_user(NULL);
	message = psprintf("the worker running the job (pid %d) stopped before the job ended",
					   MyProcPid);
	start_xact();
	foreach(lc, held)
	{
		AdkJob	   *job = (AdkJob *) lfirst(lc);

		if (job->run)
			abort_spans(job, false, "WORKER_LOST", message);
	}
	commit_xact();
	RESUME_INTERRUPTS();
}

static void
set_slot(AdkSlotState state, int64 job_id)
{
	AdkWorkerSlot *slot = &adk_workers->slots[my_slot];

	LWLockAcquire(adk_workers->lock, LW_EXCLUSIVE);
	slot->state = state;
	slot->job_id = job_id;
	slot->nruns = list_length(held);
	slot->since = GetCurrentTimestamp();
	LWLockRelease(adk_workers->lock);
}

/*
 * Which run entry the worker is stepping (-1: none): adk_cancel sends
 * SIGINT only while that run's step runs.
 */
static void
set_stepping(int entry)
{
	LWLockAcquire(adk_workers->lock, LW_EXCLUSIVE);
	adk_workers->slots[my_slot].stepping = entry;
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
 * Nothing held and nothing to claim: sleep until the launcher wakes us (it
 * marks the slot busy before it sets the latch) or the idle timeout.
 * false: exit.  true: woken, or a job was claimed meanwhile.
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
	if (claim_jobs() || held != NIL)
	{
		set_slot(ADK_SLOT_BUSY, 0);
		return true;
	}
	if (!schema_ready)
		return false;			/* worker_detach frees the slot */
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
 * Claim jobs until the worker holds adk.worker_concurrency runs or nothing
 * is left to claim, up to CLAIM_BATCH of them in each transaction.  true:
 * the queue may hold more (the worker stopped claiming because it is
 * full), false: the last claim came back short.
 */
static bool
claim_jobs(void)
{
	bool		claimed = false;
	bool		more = false;

	while (list_length(held) < adk_worker_concurrency)
	{
		int			want = Min(adk_worker_concurrency - list_length(held), CLAIM_BATCH);
		List	   *jobs = claim_batch_guarded(want);
		int			got = list_length(jobs);

		held = list_concat(held, jobs);
		list_free(jobs);
		claimed |= got > 0;
		more = got == want;
		if (!more)
			break;
	}
	if (claimed)
		set_slot(ADK_SLOT_BUSY, 0);
	MemoryContextSwitchTo(TopMemoryContext);
	return more;
}

/*
 * claim_batch, where a query cancel that reaches the worker during the
 * claim (meant for a run) neither stops the claim nor is lost: runs are
 * cancelled by their flags, and the claim is tried again.  A claim that
 * raises leaves its jobs queued (its transaction rolls back): the run
 * entries it took are given back.
 */
static List *
claim_batch_guarded(int most)
{
	List	   *volatile jobs = NIL;
	volatile int tries = 0;

	for (;;)
	{
		PG_TRY();
		{
			jobs = claim_batch(most);
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			HOLD_INTERRUPTS();
			MemoryContextSwitchTo(worker_cxt);
			release_claiming();
			RESUME_INTERRUPTS();
			edata = CopyErrorData();
			if (edata->sqlerrcode != ERRCODE_QUERY_CANCELED || ++tries > 3)
				PG_RE_THROW();
			FlushErrorState();
			AbortCurrentTransaction();
			SetUserIdAndSecContext(worker_user, worker_sec_context);
			set_slot(ADK_SLOT_BUSY, 0);
			QueryCancelPending = false;
			continue;
		}
		PG_END_TRY();
		break;
	}
	QueryCancelPending = false;
	return jobs;
}

/*
 * The jobs of a claim that raised: their run entries free again, their
 * memory gone.
 */
static void
release_claiming(void)
{
	ListCell   *lc;

	foreach(lc, claiming)
	{
		AdkJob	   *job = (AdkJob *) lfirst(lc);

		if (job->entry >= 0)
		{
			LWLockAcquire(adk_workers->lock, LW_EXCLUSIVE);
			memset(adk_job_run_entry(my_slot, job->entry), 0, sizeof(AdkJobRunEntry));
			LWLockRelease(adk_workers->lock);
		}
		MemoryContextDelete(job->cxt);
	}
	list_free(claiming);
	claiming = NIL;
}

/*
 * The claim transaction: up to "most" jobs (adk._claim_jobs), each
 * registered (a run entry) before the claim commits.  NIL: nothing to
 * claim (or no extension).
 */
static List *
claim_batch(int most)
{
	List	   *jobs;
	AdkOwnerSave save;
	Oid			types[4] = {INT4OID, INT4OID, INT4OID, INT4ARRAYOID};
	Datum		args[4];
	Oid			nsp;

	Assert(claiming == NIL);
	args[0] = Int32GetDatum(MyProcPid);
	args[1] = Int32GetDatum(most);
	args[2] = Int32GetDatum(adk_worker_affinity_delay_ms);
	start_xact();
	/* the worker's own statements (as its superuser): pinned until commit */
	(void) adk_pin_search_path();
	nsp = get_namespace_oid("adk", true);
	schema_ready = OidIsValid(nsp) && OidIsValid(get_relname_relid("jobs", nsp)) &&
		adk_schema_ready();
	if (schema_ready)
	{
		char	   *extschema = NULL;
		SPITupleTable *rows;
		uint64		nrows;
		uint64		i;

		pgstat_report_activity(STATE_RUNNING, "adk_runner job worker: claiming jobs");
		args[3] = live_workers();
		adk_owner_spi_begin(&save);
		if (SPI_execute_plan(worker_plan(&claim_plan, "SELECT * FROM adk._claim_jobs($1, $2, $3, $4)",
										 4, types),
							 args, NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not claim a job");
		rows = SPI_tuptable;
		nrows = SPI_processed;
		if (nrows > 0)
			extschema = extension_schema(worker_cxt);
		for (i = 0; i < nrows; i++)
		{
			MemoryContext cxt = AllocSetContextCreate(worker_cxt, "adk_runner job",
													  ALLOCSET_DEFAULT_SIZES);
			MemoryContext spi = MemoryContextSwitchTo(cxt);
			AdkJob	   *job;

			job = job_from_row(rows->vals[i], rows->tupdesc);
			job->cxt = cxt;
			job->entry = -1;
			job->extschema = pstrdup(extschema);
			MemoryContextSwitchTo(worker_cxt);
			claiming = lappend(claiming, job);
			MemoryContextSwitchTo(spi);
			/* seen 'running' means found here: register before the commit */
			job->entry = take_entry(job);
		}
		if (extschema)
			pfree(extschema);
		adk_owner_spi_end(&save);
	}
	if (claiming != NIL)
		set_slot(ADK_SLOT_BUSY, ((AdkJob *) llast(claiming))->id);
	commit_xact();
	jobs = claiming;
	claiming = NIL;
	return jobs;
}

/*
 * The worker's own statement sql, planned once and kept for the worker's
 * life (the plan cache plans it again when what it uses changes); call
 * between adk_owner_spi_begin and adk_owner_spi_end.
 */
static SPIPlanPtr
worker_plan(SPIPlanPtr *plan, const char *sql, int nargs, Oid *types)
{
	if (*plan == NULL)
	{
		SPIPlanPtr	p = SPI_prepare(sql, nargs, types);

		if (p == NULL)
			elog(ERROR, "could not prepare \"%s\": %s", sql,
				 SPI_result_code_string(SPI_result));
		if (SPI_keepplan(p) != 0)
			elog(ERROR, "could not keep the plan of \"%s\"", sql);
		*plan = p;
	}
	return *plan;
}

/*
 * The pids of the job workers alive now (the slots'), as an int4[]: the
 * claim holds a job for the worker that ran its session's last job only
 * while that worker is among them.
 */
static Datum
live_workers(void)
{
	Datum	   *pids = palloc(sizeof(Datum) * Max(adk_workers->nslots, 1));
	int			n = 0;
	int			i;

	LWLockAcquire(adk_workers->lock, LW_SHARED);
	for (i = 0; i < adk_workers->nslots; i++)
	{
		AdkWorkerSlot *slot = &adk_workers->slots[i];

		if (slot->state != ADK_SLOT_FREE && slot->pid != 0)
			pids[n++] = Int32GetDatum(slot->pid);
	}
	LWLockRelease(adk_workers->lock);
	return PointerGetDatum(construct_array(pids, n, INT4OID, sizeof(int32), true,
										   TYPALIGN_INT));
}

/*
 * A free run entry of this worker for job, filled in (the role as the job
 * runs, for adk_cancel's check).
 */
static int
take_entry(AdkJob *job)
{
	bool		is_superuser = superuser_arg(job->role);
	int			i;

	LWLockAcquire(adk_workers->lock, LW_EXCLUSIVE);
	for (i = 0; i < ADK_MAX_WORKER_CONCURRENCY; i++)
	{
		AdkJobRunEntry *e = adk_job_run_entry(my_slot, i);

		if (e->run.pid != 0)
			continue;
		e->run.pid = MyProcPid;
		e->run.role = job->role;
		e->run.superuser = is_superuser;
		e->run.session_hash = adk_session_hash(job->app, job->user, job->session);
		e->run.invocation_hash = adk_invocation_hash(job->invocation_id);
		e->run.cancel_requested = false;
		e->job_id = job->id;
		break;
	}
	LWLockRelease(adk_workers->lock);
	if (i == ADK_MAX_WORKER_CONCURRENCY)
		elog(ERROR, "no free run entry in job worker %d", my_slot);
	return i;
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
extension_schema(MemoryContext cxt)
{
	char	   *schema;

	/* sql/install/88_store_statements.sql */
	if (SPI_execute("SELECT adk._extension_schema()", true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1 ||
		(schema = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1)) == NULL)
		elog(ERROR, "extension adk_runner is not installed");
	return MemoryContextStrdup(cxt, schema);
}

static bool
cancel_requested(AdkJob *job)
{
	bool		result;

	LWLockAcquire(adk_workers->lock, LW_SHARED);
	result = adk_job_run_entry(my_slot, job->entry)->run.cancel_requested;
	LWLockRelease(adk_workers->lock);
	return result;
}

/*
 * Runs adk_cancel asked to stop: each ends 'cancelled' (its model calls
 * stop with it) with the events it committed.
 */
static void
cancel_jobs(void)
{
	ListCell   *lc;
	List	   *cancelled = NIL;

	foreach(lc, held)
	{
		AdkJob	   *job = (AdkJob *) lfirst(lc);

		if (cancel_requested(job))
			cancelled = lappend(cancelled, job);
	}
	foreach(lc, cancelled)
	{
		AdkJob	   *job = (AdkJob *) lfirst(lc);
		ErrorData	edata;

		memset(&edata, 0, sizeof(edata));
		edata.sqlerrcode = ERRCODE_QUERY_CANCELED;
		edata.message = "canceling statement due to user request";
		if (job->run)
			adk_run_abandon(job->run);	/* its transfers stop now */
		job_error(job, &edata, true);
		end_job(job);
	}
	list_free(cancelled);
}

/*
 * One step of every run that can go on.  true: some run stepped.
 */
static bool
step_jobs(void)
{
	/* a copy: a step that ends its run removes the run from "held" */
	List	   *runs = list_copy(held);
	ListCell   *lc;
	bool		progressed = false;
	TimestampTz now = GetCurrentTimestamp();

	foreach(lc, runs)
	{
		AdkJob	   *job = (AdkJob *) lfirst(lc);

		if (job->not_before != 0 && now < job->not_before)
			continue;
		if (job->waiting && !adk_run_ready(job->run))
			continue;
		step_job(job);
		progressed = true;
		/* take in what arrived meanwhile, without waiting */
		drive(0);
	}
	list_free(runs);
	return progressed;
}

/*
 * Drive the transfers in flight between steps.  A query cancel that
 * arrives now is meant for some run (found by its flag): it must not raise
 * here, outside every run; termination is processed after.
 */
static void
drive(int timeout_ms)
{
	HOLD_INTERRUPTS();
	adk_http_drive(timeout_ms);
	RESUME_INTERRUPTS();
	QueryCancelPending = false;
	CHECK_FOR_INTERRUPTS();
}

/*
 * Nothing could step: wait for the network (answers, retries' deadlines),
 * a busy session's retry, or the latch (new work, a cancel).
 */
static void
wait_for_progress(void)
{
	pgstat_report_activity(STATE_IDLE, "adk_runner job worker: waiting for models");
	if (adk_http_in_flight() > 0)
		drive(ADK_HTTP_POLL_MS);
	else
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 BUSY_SESSION_RETRY_MS, PG_WAIT_EXTENSION);
	}
	/* a query cancel is only ever meant for a run: found by its flag */
	QueryCancelPending = false;
	CHECK_FOR_INTERRUPTS();
}

/*
 * One step of a job's run in a transaction of its own, as the job's role;
 * see the file header.  An ERROR ends the job (job_error) and only it.
 */
static void
step_job(AdkJob *job)
{
	PG_TRY();
	{
		AdkStepResult r;
		char	   *activity;
		int			n;

		start_xact();
		MemoryContextSwitchTo(job->cxt);
		if (!lock_session(job))
		{
			/* a foreground adk_run holds the session: later */
			commit_xact();
			job->not_before = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														  BUSY_SESSION_RETRY_MS);
			MemoryContextSwitchTo(TopMemoryContext);
			return;
		}
		job->not_before = 0;
		if (job->run == NULL &&
			!SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(job->role)))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("role %u that queued the job no longer exists", job->role)));
		reset_session();
		set_stepping(job->entry);
		QueryCancelPending = false;
		if (cancel_requested(job))
			ereport(ERROR,
					(errcode(ERRCODE_QUERY_CANCELED),
					 errmsg("canceling statement due to user request")));

		activity = psprintf("adk_runner job %lld: app \"%s\", user \"%s\", session \"%s\", invocation \"%s\"",
							(long long) job->id, job->app, job->user, job->session,
							job->invocation_id);
		pgstat_report_activity(STATE_RUNNING, activity);
		pfree(activity);

		/* the user checked when the job was queued, for the whole run */
		adk_tenancy_pin_user(job->user);
		SetUserIdAndSecContext(job->role, SECURITY_LOCAL_USERID_CHANGE);
		if (job->run == NULL)
		{
			/* a retry goes on from what the earlier attempts committed */
			job->run = (job->attempts > 1 ? adk_run_retry : adk_run_begin)
				(job->app, job->user, job->session, job->message,
				 job->state_delta, sink_every_event(job->options),
				 job->invocation_id, job->extschema, job_sink, job);
			/* nobody reads a job's partial events: whole responses */
			job->run->stream = false;
			/* a step's transaction may roll back: see abort_spans */
			adk_span_keep_written(job->run);
			r = ADK_STEP_RAN;
		}
		else
			r = adk_run_step(job->run);

		/*
		 * Steps that need no wait go on in the same transaction (a few at a
		 * time, so the worker's other runs get their turn): a transaction
		 * per wait, not per unit of work.
		 */
		for (n = 1; r == ADK_STEP_RAN && n < STEPS_PER_TRANSACTION; n++)
			r = adk_run_step(job->run);
		SetUserIdAndSecContext(worker_user, worker_sec_context);
		adk_tenancy_pin_user(NULL);

		HOLD_INTERRUPTS();
		set_stepping(-1);
		if (r == ADK_STEP_DONE)
			finish_job(job);
		commit_xact();
		adk_span_committed(job->run);
		RESUME_INTERRUPTS();
		job->waiting = r == ADK_STEP_WAIT;
		MemoryContextSwitchTo(TopMemoryContext);
		if (r == ADK_STEP_DONE)
			end_job(job);
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		bool		cancelled;

		HOLD_INTERRUPTS();
		MemoryContextSwitchTo(worker_cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		SetUserIdAndSecContext(worker_user, worker_sec_context);
		adk_running_invocation_set(NULL);
		adk_tenancy_pin_user(NULL);
		set_stepping(-1);
		cancelled = edata->sqlerrcode == ERRCODE_QUERY_CANCELED ||
			cancel_requested(job);
		job_error(job, edata, cancelled);
		FreeErrorData(edata);
		QueryCancelPending = false;
		RESUME_INTERRUPTS();
		MemoryContextSwitchTo(TopMemoryContext);
		end_job(job);
	}
	PG_END_TRY();
}

/*
 * The job is over: its run entry is free, adk_wait's waiters are woken,
 * its run and memory go.
 */
static void
end_job(AdkJob *job)
{
	AdkJobRunEntry *e = adk_job_run_entry(my_slot, job->entry);

	HOLD_INTERRUPTS();
	held = list_delete_ptr(held, job);
	LWLockAcquire(adk_workers->lock, LW_EXCLUSIVE);
	memset(e, 0, sizeof(*e));
	adk_workers->slots[my_slot].nruns = list_length(held);
	LWLockRelease(adk_workers->lock);
	adk_workers_wake_waiters(job->invocation_id);
	if (job->run)
		adk_run_free(job->run);
	MemoryContextDelete(job->cxt);
	RESUME_INTERRUPTS();
}

/*
 * Events are committed with the step that stored them: the sink has
 * nothing to do.
 */
static void
job_sink(AdkRun *run, Jsonb *event, int64 seq, TimestampTz time, bool partial,
		 void *arg)
{
}

/*
 * The job's options with "yield_user_message": true, so the user event
 * reaches the sink like every other event.  Nothing is returned from a
 * job, so the option changes nothing else.
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

/*
 * The session row locked for this step, as adk_run holds it for a whole
 * run -- unless another transaction holds it (a foreground adk_run): then
 * false, and the run waits for a later round instead of the worker.  A
 * session that does not exist yet is for the run to create (true).
 */
static bool
lock_session(AdkJob *job)
{
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		args[3];
	AdkOwnerSave save;
	bool		ok;
	bool		isnull;

	args[0] = CStringGetTextDatum(job->app);
	args[1] = CStringGetTextDatum(job->user);
	args[2] = CStringGetTextDatum(job->session);
	adk_owner_spi_begin(&save);
	if (SPI_execute_plan(worker_plan(&lock_plan, "SELECT adk._session_try_lock($1, $2, $3)",
									 3, types),
						 args, NULL, false, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not lock the session");
	ok = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
									1, &isnull));
	adk_owner_spi_end(&save);
	return ok;
}

/*
 * The job ends as its invocation did.  A paused one ('waiting') has not
 * finished: its finished_at is set when the adk_run that answers it ends
 * the invocation (run.c), and retention counts from then.
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
	adk_owner_spi_begin(&save);
	if (SPI_execute_plan(worker_plan(&finished_plan,
									 "SELECT ended_as, next_queued FROM adk._job_finished($1, $2)",
									 2, types),
						 args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not record the end of job %lld", (long long) job->id);
	if (SPI_processed == 1)
	{
		char	   *s = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		bool		isnull;
		Datum		next = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
										 2, &isnull);

		if (s != NULL)
			status = MemoryContextStrdup(job->cxt, s);
		/* the session's next job is held for this worker: claim it soon */
		if (!isnull && DatumGetBool(next) && adk_worker_affinity_delay_ms > 0)
			claim_soon = true;
	}
	adk_owner_spi_end(&save);
	adk_notify_job(job->id, job->invocation_id, status);
}

/*
 * The run raised, or was cancelled: record why, in a transaction of its
 * own.
 */
static void
job_error(AdkJob *job, ErrorData *edata, bool cancelled)
{
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

	start_xact();
	if (job->run)
		abort_spans(job, cancelled,
					cancelled ? "CANCELLED" : unpack_sql_state(edata->sqlerrcode),
					cancelled ? "cancelled" : message);
	args[0] = Int64GetDatum(job->id);
	args[1] = CStringGetTextDatum(status);
	args[2] = CStringGetTextDatum(cancelled ? "cancelled" : message);
	args[3] = CStringGetTextDatum(cancelled ? "CANCELLED" : unpack_sql_state(edata->sqlerrcode));
	adk_owner_spi_begin(&save);
	if (SPI_execute_with_args("SELECT adk._job_failed($1, $2, $3, $4)",
							  4, types, args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not record the end of job %lld", (long long) job->id);
	adk_owner_spi_end(&save);
	if (!retry)
		adk_notify_job(job->id, job->invocation_id, status);
	commit_xact();
}

/*
 * The run's trace, in job_error's transaction (spans.c: adk_span_run_abort):
 * what the rolled-back step had written, the spans still open as
 * abandoned, the root ERROR with error_type -- written as the job's role,
 * as its steps write them.  A retry is a new run, with a trace (or, under
 * a traceparent, a root) of its own.  Spans are observability: if they
 * cannot be written, the job's end is still recorded.
 */
static void
abort_spans(AdkJob *job, bool cancelled, const char *error_type,
			const char *message)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	bool		as_role = SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(job->role));

	BeginInternalSubTransaction(NULL);
	PG_TRY();
	{
		if (as_role)
		{
			adk_tenancy_pin_user(job->user);
			SetUserIdAndSecContext(job->role, SECURITY_LOCAL_USERID_CHANGE);
		}
		adk_span_run_abort(job->run, cancelled, error_type, message);
		SetUserIdAndSecContext(worker_user, worker_sec_context);
		adk_tenancy_pin_user(NULL);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		edata = adk_subxact_abort(cxt, owner);
		SetUserIdAndSecContext(worker_user, worker_sec_context);
		adk_tenancy_pin_user(NULL);
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("could not write the spans of adk_runner job %lld: %s",
						(long long) job->id, edata->message)));
		FreeErrorData(edata);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
}

/*
 * What DISCARD ALL would do (but the plan cache): a previous step's tools,
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
