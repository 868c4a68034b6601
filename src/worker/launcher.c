/*-------------------------------------------------------------------------
 *
 * launcher.c
 *	  The "adk_runner launcher" background worker: keeps up to
 *	  adk.max_workers job workers busy for the database adk.database.
 *
 * Each round, in one short transaction: recover jobs left 'running' by a
 * worker that is gone (failed, or queued again while attempts remain),
 * purge finished jobs older than adk.job_retention (once a minute, or
 * once per retention period if shorter), delete a batch of expired
 * sessions (sweep_sessions), write what rolled-back
 * transactions spent on model calls (shared/spent.c; other databases' by
 * a spent writer, worker/spent_writer.c), and
 * count the jobs that can be claimed now.  Then, outside the transaction,
 * wake idle workers and start new ones (dynamic background workers that
 * notify the launcher when they stop) until each claimable job has a
 * worker or adk.max_workers run (with adk.worker_affinity_delay, every
 * idle worker: a job may be held for any one of them, and while jobs are
 * claimable the next round comes once that delay has passed, so a held job
 * whose worker does not take it goes to another).  Between rounds the
 * launcher sleeps on its latch, which is set at the commit of every
 * transaction that queues a job, at the abort of one that spent on model
 * calls, when a worker stops, and on SIGHUP; a timeout (10 s) is the safety
 * net for jobs queued by prepared transactions.
 *
 * Locking: adk_workers->lock for the slots; row locks on adk.jobs for the
 * recovery (an UPDATE that re-checks status and attempts, so a job a live
 * worker has since finished or claimed again is left alone).
 *
 * IDENTIFICATION
 *	  src/worker/launcher.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "common/json_writer.h"
#include "common/owner.h"
#include "common/schema_version.h"
#include "common/subxact_abort.h"
#include "shared/spent.h"
#include "store/append.h"
#include "store/event.h"
#include "worker/worker.h"

#define NAPTIME_MS		10000	/* the safety net */
#define RETRY_MS		1000	/* a worker could not be started */
#define PURGE_EVERY_MS	60000	/* also the session retention sweep's */
#define SWEEP_BATCH		100		/* sessions deleted per transaction */
#define STARTING_GRACE_MS 60000 /* a STARTING slot without a handle */

/* launcher-local: the handles of the workers it started, per slot */
static BackgroundWorkerHandle **handles = NULL;
static TimestampTz last_purge = 0;
static TimestampTz last_sweep = 0;
static bool first_round = true;

static void launcher_detach(int code, Datum arg);
static void reap_workers(void);
static int	database_round(bool *spent_left);
static bool extension_ready(void);
static void recover_jobs(void);
static void lost_turn_closed(const char *invocation_id, const char *app,
							 const char *user, const char *session,
							 const char *agent, const char *reason);
static void purge_jobs(void);
static void sweep_sessions(void);
static int	count_claimable(void);
static bool dispatch(int claimable);
static bool start_worker(int slotno);

void
adk_launcher_main(Datum arg)
{
	MemoryContext round_cxt;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(adk_database, NULL, 0);
	pgstat_report_appname("adk_runner launcher");

	handles = MemoryContextAllocZero(TopMemoryContext,
									 sizeof(BackgroundWorkerHandle *) * adk_workers->nslots);
	round_cxt = AllocSetContextCreate(TopMemoryContext, "adk_runner launcher round",
									  ALLOCSET_DEFAULT_SIZES);

	LWLockAcquire(adk_workers->lock, LW_EXCLUSIVE);
	adk_workers->launcher_pid = MyProcPid;
	adk_workers->launcher_latch = MyLatch;
	LWLockRelease(adk_workers->lock);
	on_shmem_exit(launcher_detach, (Datum) 0);

	ereport(LOG,
			(errmsg("adk_runner launcher started for database \"%s\"", adk_database)));

	for (;;)
	{
		int			claimable;
		bool		spent_left = false;
		long		timeout = NAPTIME_MS;

		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		MemoryContextReset(round_cxt);
		MemoryContextSwitchTo(round_cxt);
		reap_workers();
		claimable = database_round(&spent_left);
		if ((claimable > 0 && !dispatch(claimable)) || spent_left)
			timeout = RETRY_MS;

		/*
		 * A claimable job may be held for the worker that ran its session's
		 * last job (adk.worker_affinity_delay): if that worker does not take
		 * it, the next round, once the delay is over, wakes the others.
		 */
		if (claimable > 0 && adk_worker_affinity_delay_ms > 0)
			timeout = Min(timeout, adk_worker_affinity_delay_ms);
		pgstat_report_stat(false);
		pgstat_report_activity(STATE_IDLE, NULL);

		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 timeout, PG_WAIT_EXTENSION);
	}
}

static void
launcher_detach(int code, Datum arg)
{
	LWLockAcquire(adk_workers->lock, LW_EXCLUSIVE);
	if (adk_workers->launcher_pid == MyProcPid)
	{
		adk_workers->launcher_pid = 0;
		adk_workers->launcher_latch = NULL;
	}
	LWLockRelease(adk_workers->lock);
}

/*
 * Free the slots of workers that stopped (a worker frees its own slot as it
 * exits; this covers a worker that never started), and of workers started
 * by an earlier launcher that never attached.
 */
static void
reap_workers(void)
{
	TimestampTz now = GetCurrentTimestamp();
	int			i;

	for (i = 0; i < adk_workers->nslots; i++)
	{
		AdkWorkerSlot *slot = &adk_workers->slots[i];
		pid_t		pid;
		bool		stopped = false;

		if (handles[i] != NULL)
		{
			if (GetBackgroundWorkerPid(handles[i], &pid) == BGWH_STOPPED)
			{
				pfree(handles[i]);
				handles[i] = NULL;
				stopped = true;
			}
		}
		LWLockAcquire(adk_workers->lock, LW_EXCLUSIVE);
		if (slot->state != ADK_SLOT_FREE &&
			(stopped ||
			 (handles[i] == NULL && slot->state == ADK_SLOT_STARTING &&
			  TimestampDifferenceExceeds(slot->since, now, STARTING_GRACE_MS))))
		{
			slot->state = ADK_SLOT_FREE;
			slot->pid = 0;
			slot->latch = NULL;
			slot->job_id = 0;
			slot->nruns = 0;
			slot->stepping = -1;
			/* the runs it held: recovery finds their jobs without a worker */
			memset(adk_job_run_entry(i, 0), 0,
				   sizeof(AdkJobRunEntry) * ADK_MAX_WORKER_CONCURRENCY);
		}
		LWLockRelease(adk_workers->lock);
	}
}

/*
 * One transaction against adk.database: recovery, purge, what rolled-back
 * transactions spent on model calls (shared/spent.c; *spent_left: some of
 * it waits for a locked budget row), and how many jobs could be claimed
 * now (at most adk.max_workers).
 */
static int
database_round(bool *spent_left)
{
	int			claimable = 0;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (extension_ready())
	{
		pgstat_report_activity(STATE_RUNNING, "adk_runner launcher: looking for queued runs");
		recover_jobs();
		purge_jobs();
		sweep_sessions();
		*spent_left = adk_spent_write();
		claimable = count_claimable();
		first_round = false;
	}
	/* other databases' charges: a writer connected to each in turn */
	*spent_left = adk_spent_writer_start() || *spent_left;
	PopActiveSnapshot();
	CommitTransactionCommand();
	return claimable;
}

/*
 * Whether the extension is installed in this database (and not being
 * dropped right now) at the library's version.
 */
static bool
extension_ready(void)
{
	Oid			nsp = get_namespace_oid("adk", true);

	return OidIsValid(nsp) && OidIsValid(get_relname_relid("jobs", nsp)) &&
		adk_schema_ready();
}

/*
 * Jobs left 'running' whose worker is gone.  The rows are read first and
 * the live workers' jobs after, so a job claimed in between is seen as
 * live; the UPDATE re-checks status and attempts on the newest row
 * version, so a job finished (or claimed again) meanwhile is left alone.
 * A job with attempts left is queued again (its next attempt continues
 * the invocation: run.c, retry.c).  One without fails, and when its run
 * had stored events, an error event WORKER_LOST closes its turn, so that
 * whoever reads the session sees the run ended (lost_turn_closed).  Its
 * session must be free for that: a job whose session another transaction
 * holds is left for a later round.
 */
static void
recover_jobs(void)
{
	AdkOwnerSave save;
	uint64		n;
	uint64		i;
	int64	   *ids;
	int32	   *attempts;
	int32	   *pids;
	bool	   *last_attempt;
	char	  **apps;
	char	  **users;
	char	  **sessions;
	int64	   *live;
	int			nlive = 0;
	int			s;

	adk_owner_spi_begin(&save);
	if (SPI_execute("SELECT * FROM adk._jobs_running()", false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read adk.jobs");
	n = SPI_processed;
	if (n == 0)
	{
		adk_owner_spi_end(&save);
		return;
	}
	ids = palloc(sizeof(int64) * n);
	attempts = palloc(sizeof(int32) * n);
	pids = palloc(sizeof(int32) * n);
	last_attempt = palloc(sizeof(bool) * n);
	apps = palloc(sizeof(char *) * n);
	users = palloc(sizeof(char *) * n);
	sessions = palloc(sizeof(char *) * n);
	for (i = 0; i < n; i++)
	{
		bool		isnull;
		HeapTuple	row = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;

		ids[i] = DatumGetInt64(SPI_getbinval(row, desc, 1, &isnull));
		attempts[i] = DatumGetInt32(SPI_getbinval(row, desc, 2, &isnull));
		pids[i] = DatumGetInt32(SPI_getbinval(row, desc, 3, &isnull));
		if (isnull)
			pids[i] = 0;
		last_attempt[i] = DatumGetBool(SPI_getbinval(row, desc, 4, &isnull));
		apps[i] = SPI_getvalue(row, desc, 5);
		users[i] = SPI_getvalue(row, desc, 6);
		sessions[i] = SPI_getvalue(row, desc, 7);
	}

	live = palloc(sizeof(int64) * adk_workers->nslots * (ADK_MAX_WORKER_CONCURRENCY + 1));
	LWLockAcquire(adk_workers->lock, LW_SHARED);
	for (s = 0; s < adk_workers->nslots; s++)
	{
		int			r;

		if (adk_workers->slots[s].state == ADK_SLOT_FREE)
			continue;
		/* the job being claimed, and every run the worker holds */
		if (adk_workers->slots[s].job_id != 0)
			live[nlive++] = adk_workers->slots[s].job_id;
		for (r = 0; r < ADK_MAX_WORKER_CONCURRENCY; r++)
		{
			AdkJobRunEntry *e = adk_job_run_entry(s, r);

			if (e->run.pid != 0 && e->job_id != 0)
				live[nlive++] = e->job_id;
		}
	}
	LWLockRelease(adk_workers->lock);

	for (i = 0; i < n; i++)
	{
		Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
		Oid			lost_types[3] = {INT8OID, INT4OID, TEXTOID};
		Datum		args[3];
		bool		alive = false;
		bool		isnull;
		char	   *reason;

		for (s = 0; s < nlive; s++)
			alive = alive || live[s] == ids[i];
		if (alive)
			continue;
		args[0] = CStringGetTextDatum(apps[i]);
		args[1] = CStringGetTextDatum(users[i]);
		args[2] = CStringGetTextDatum(sessions[i]);
		if (last_attempt[i])
		{
			if (SPI_execute_with_args("SELECT adk._session_try_lock($1, $2, $3)",
									  3, types, args, NULL, false, 1) != SPI_OK_SELECT ||
				SPI_processed != 1)
				elog(ERROR, "could not lock the session");
			if (!DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
											SPI_tuptable->tupdesc, 1, &isnull)))
				continue;		/* its session is busy: a later round */
		}
		if (first_round)
			reason = psprintf("the server restarted while the job was running (worker pid %d)", pids[i]);
		else
			reason = psprintf("the worker running the job (pid %d) stopped before the job ended", pids[i]);
		args[0] = Int64GetDatum(ids[i]);
		args[1] = Int32GetDatum(attempts[i]);
		args[2] = CStringGetTextDatum(reason);
		if (SPI_execute_with_args("SELECT * FROM adk._job_lost($1, $2, $3)",
								  3, lost_types, args, NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not recover adk.jobs");
		if (SPI_processed == 1 &&
			strcmp(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1), "failed") == 0)
		{
			HeapTuple	row = SPI_tuptable->vals[0];
			TupleDesc	desc = SPI_tuptable->tupdesc;

			lost_turn_closed(SPI_getvalue(row, desc, 2), SPI_getvalue(row, desc, 3),
							 SPI_getvalue(row, desc, 4), SPI_getvalue(row, desc, 5),
							 SPI_getvalue(row, desc, 6), reason);
		}
		ereport(LOG,
				(errmsg("adk_runner: job %lld recovered: %s", (long long) ids[i], reason)));
	}
	adk_owner_spi_end(&save);
}

/*
 * The turn of a run whose worker died, not to be retried, ends with an
 * error event (ADK's error_code and error_message) authored by the agent
 * it started with -- when the run had stored its user event (an attempt
 * that committed nothing left nothing to close).  Written as the events
 * of runs are (store/append.c), in the recovery's transaction, with its
 * invocation's adk.run_states rows brought to what the events say (the
 * run that would have ended them is gone); an event
 * that cannot be written (the session deleted meanwhile) is a WARNING, and
 * the job's end is recorded all the same.
 */
static void
lost_turn_closed(const char *invocation_id, const char *app, const char *user,
				 const char *session, const char *agent, const char *reason)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	Oid			types[4] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		args[4];
	bool		isnull;

	args[0] = CStringGetTextDatum(app);
	args[1] = CStringGetTextDatum(user);
	args[2] = CStringGetTextDatum(session);
	args[3] = CStringGetTextDatum(invocation_id);
	if (SPI_execute_with_args("SELECT adk._invocation_has_events($1, $2, $3, $4)",
							  4, types, args, NULL, true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1 ||
		!DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
									1, &isnull)))
		return;

	BeginInternalSubTransaction(NULL);
	PG_TRY();
	{
		JsonWriter	w;
		AdkStoredEvent stored;

		MemoryContextSwitchTo(cxt);
		jw_init(&w);
		jw_begin_object(&w);
		jw_key(&w, "invocation_id");
		jw_string(&w, invocation_id);
		jw_key(&w, "author");
		jw_string(&w, agent);
		jw_key(&w, "error_code");
		jw_string(&w, "WORKER_LOST");
		jw_key(&w, "error_message");
		jw_string(&w, reason);
		jw_end_object(&w);
		adk_store_append(app, user, session, jw_finish(&w), &stored);
		/* its nodes' run_states rows end as the events now say */
		if (SPI_execute_with_args("SELECT adk._refresh_run_states($1, $2, $3, $4)",
								  4, types, args, NULL, false, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not update adk.run_states");
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		edata = adk_subxact_abort(cxt, owner);
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("could not close the turn of invocation \"%s\": %s",
						invocation_id, edata->message)));
		FreeErrorData(edata);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
}

static void
purge_jobs(void)
{
	TimestampTz now = GetCurrentTimestamp();
	AdkOwnerSave save;
	Oid			type = INT4OID;
	Datum		arg;
	int64		purged;
	bool		isnull;
	long		every = Min(PURGE_EVERY_MS, Max(1000, adk_job_retention_s * 1000L));

	if (adk_job_retention_s < 0 ||
		(last_purge != 0 && !TimestampDifferenceExceeds(last_purge, now, every)))
		return;
	last_purge = now;
	arg = Int32GetDatum(adk_job_retention_s);
	adk_owner_spi_begin(&save);
	if (SPI_execute_with_args("SELECT adk._jobs_purge($1)",
							  1, &type, &arg, NULL, false, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not purge adk.jobs");
	purged = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
										 1, &isnull));
	if (purged > 0)
		elog(DEBUG1, "adk_runner: purged %lld finished jobs", (long long) purged);
	adk_owner_spi_end(&save);
}

/*
 * Session retention (sql/install/87_lifecycle.sql): one batch of due
 * sessions, once a minute -- or again in the next round while a batch
 * comes back full, so a backlog goes in small transactions.
 */
static void
sweep_sessions(void)
{
	TimestampTz now = GetCurrentTimestamp();
	AdkOwnerSave save;
	bool		isnull;
	int			deleted;

	if (last_sweep != 0 && !TimestampDifferenceExceeds(last_sweep, now, PURGE_EVERY_MS))
		return;
	adk_become_owner(&save);
	SPI_connect();
	if (SPI_execute("SELECT adk._retention_sweep(" CppAsString2(SWEEP_BATCH) ")", false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not sweep adk.sessions");
	deleted = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	adk_restore_user(&save);
	if (deleted > 0)
		elog(DEBUG1, "adk_runner: retention deleted %d sessions", deleted);
	if (deleted < SWEEP_BATCH)
		last_sweep = now;
}

/*
 * Queued jobs that no earlier job of their session holds back: one per
 * session at most, which is what a worker can claim now.
 */
static int
count_claimable(void)
{
	AdkOwnerSave save;
	Oid			type = INT4OID;
	Datum		arg = Int32GetDatum(Max(adk_max_workers, 1) * adk_worker_concurrency);
	bool		isnull;
	int			n;

	adk_owner_spi_begin(&save);
	if (SPI_execute_with_args("SELECT adk._claimable_jobs($1)",
							  1, &type, &arg, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not count queued jobs");
	n = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	adk_owner_spi_end(&save);
	return n;
}

/*
 * Give each claimable job a worker: wake idle ones first (all of them with
 * adk.worker_affinity_delay), then start new ones up to adk.max_workers.  false: a worker should have been started
 * but could not be (no free background worker slot); retry soon.
 */
static bool
dispatch(int claimable)
{
	int			need = claimable;
	int			alive = 0;
	int			active = 0;
	int			i;
	int			max = Min(adk_max_workers, adk_workers->nslots);
	bool		ok = true;

	LWLockAcquire(adk_workers->lock, LW_EXCLUSIVE);
	for (i = 0; i < adk_workers->nslots; i++)
	{
		AdkWorkerSlot *slot = &adk_workers->slots[i];

		if (slot->state == ADK_SLOT_FREE)
			continue;
		alive++;
		if (slot->state != ADK_SLOT_IDLE)
			active++;
		if (slot->state == ADK_SLOT_STARTING)
			need--;
	}
	/*
	 * With adk.worker_affinity_delay, every idle worker: a job may be held
	 * for any one of them (the one that ran its session's last job), and
	 * the others pass over it.
	 */
	for (i = 0; i < adk_workers->nslots && active < max &&
		 (need > 0 || adk_worker_affinity_delay_ms > 0); i++)
	{
		AdkWorkerSlot *slot = &adk_workers->slots[i];

		if (slot->state == ADK_SLOT_IDLE)
		{
			slot->state = ADK_SLOT_BUSY;
			slot->since = GetCurrentTimestamp();
			SetLatch(slot->latch);
			need--;
			active++;
		}
	}
	/*
	 * Busy workers with room for more runs claim them too.  Workers are
	 * still started up to adk.max_workers while jobs wait (one per job, as
	 * before multiplexing): several processes use several cores when the
	 * model answers fast.
	 */
	for (i = 0; i < adk_workers->nslots && need > 0; i++)
	{
		AdkWorkerSlot *slot = &adk_workers->slots[i];

		if (slot->state == ADK_SLOT_BUSY && slot->latch != NULL &&
			slot->nruns < adk_worker_concurrency)
			SetLatch(slot->latch);
	}
	LWLockRelease(adk_workers->lock);

	for (i = 0; i < adk_workers->nslots && need > 0 && alive < max; i++)
	{
		AdkWorkerSlot *slot = &adk_workers->slots[i];
		bool		mine = false;

		LWLockAcquire(adk_workers->lock, LW_EXCLUSIVE);
		if (slot->state == ADK_SLOT_FREE && handles[i] == NULL)
		{
			slot->state = ADK_SLOT_STARTING;
			slot->since = GetCurrentTimestamp();
			slot->pid = 0;
			slot->latch = NULL;
			slot->job_id = 0;
			mine = true;
		}
		LWLockRelease(adk_workers->lock);
		if (!mine)
			continue;
		if (!start_worker(i))
		{
			LWLockAcquire(adk_workers->lock, LW_EXCLUSIVE);
			slot->state = ADK_SLOT_FREE;
			LWLockRelease(adk_workers->lock);
			ok = false;
			break;
		}
		alive++;
		need--;
	}
	return ok;
}

static bool
start_worker(int slotno)
{
	BackgroundWorker worker;
	static TimestampTz last_warning = 0;
	MemoryContext old;
	bool		ok;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "adk_runner");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "adk_job_worker_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "adk_runner job worker %d", slotno);
	snprintf(worker.bgw_type, BGW_MAXLEN, "adk_runner job worker");
	worker.bgw_main_arg = Int32GetDatum(slotno);
	memcpy(worker.bgw_extra, &MyDatabaseId, sizeof(Oid));
	worker.bgw_notify_pid = MyProcPid;

	/* the handle lives as long as the launcher, not the round */
	old = MemoryContextSwitchTo(TopMemoryContext);
	ok = RegisterDynamicBackgroundWorker(&worker, &handles[slotno]);
	MemoryContextSwitchTo(old);
	if (!ok)
	{
		TimestampTz now = GetCurrentTimestamp();

		handles[slotno] = NULL;
		if (TimestampDifferenceExceeds(last_warning, now, 60000))
		{
			ereport(WARNING,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("could not start an adk_runner job worker"),
					 errhint("Raise max_worker_processes: it must leave room for adk.max_workers job workers and the launcher.")));
			last_warning = now;
		}
		return false;
	}
	return true;
}
