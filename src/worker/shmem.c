/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  The background workers' settings, their shared memory, the launcher's
 *	  registration, waking the launcher at commit, and the registry of the
 *	  runs each backend executes.
 *
 * Everything in shared memory is guarded by one LWLock (tranche
 * "adk_runner").  It is held only for a few loads and stores, and while
 * adk_cancel signals a backend, so that a run cannot end between the check
 * and the signal.
 *
 * Waking at commit (pg_net's design): a transaction that queues a job
 * registers a transaction callback once per backend; at
 * XACT_EVENT_COMMIT it sets the launcher's latch.  A rolled-back queueing
 * wakes nobody, and the job is gone with the transaction.
 *
 * IDENTIFICATION
 *	  src/worker/shmem.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "access/xact.h"
#include "commands/dbcommands.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "postmaster/postmaster.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "adk_runner.h"
#include "worker/worker.h"

#if PG_VERSION_NUM >= 170000
#define MY_ENTRY_INDEX	MyProcNumber
#else
#define MY_ENTRY_INDEX	(MyBackendId - 1)
#endif

char	   *adk_database = NULL;
int			adk_max_workers = 4;
int			adk_worker_idle_timeout_s = 60;
int			adk_job_retention_s = 7 * 24 * 3600;
int			adk_worker_concurrency = 64;
int			adk_session_wait_timeout_ms = 60000;

/* adk.notify_events and adk.notify_payload live in store/notify.c */
static const struct config_enum_entry notify_payload_options[] = {
	{"opaque", ADK_NOTIFY_OPAQUE, false},
	{"full", ADK_NOTIFY_FULL, false},
	{NULL, 0, false}
};

AdkWorkerShmem *adk_workers = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static bool wake_callback_registered = false;
static bool wake_at_commit = false;

static void define_gucs(void);
static void register_launcher(void);
static Size workers_shmem_size(void);
static void workers_shmem_request(void);
static void workers_shmem_startup(void);
static void wake_xact_callback(XactEvent event, void *arg);
static void clear_entry_at_exit(int code, Datum arg);

/*
 * Called from _PG_init: the settings (adk.database only when preloaded);
 * shared memory and the launcher only while shared_preload_libraries is
 * processed.
 */
void
adk_workers_init(void)
{
	define_gucs();
	if (!process_shared_preload_libraries_in_progress)
		return;

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = workers_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = workers_shmem_startup;
	register_launcher();
}

static void
define_gucs(void)
{
	/* PGC_POSTMASTER settings can only be made while preloading */
	if (process_shared_preload_libraries_in_progress)
		DefineCustomStringVariable("adk.database",
								   gettext_noop("Database whose queued runs the background workers run."),
								   gettext_noop("The database must exist when the server starts."),
								   &adk_database,
								   "postgres",
								   PGC_POSTMASTER,
								   0,
								   NULL, NULL, NULL);

	DefineCustomIntVariable("adk.max_workers",
							gettext_noop("Largest number of job workers running queued runs at once."),
							gettext_noop("Job workers are background workers: max_worker_processes must leave room for them and the launcher."),
							&adk_max_workers,
							4,
							0,
							MAX_BACKENDS,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("adk.worker_concurrency",
							gettext_noop("Largest number of runs one job worker holds at once."),
							gettext_noop("While one run waits for its model, the worker advances another."),
							&adk_worker_concurrency,
							64,
							1,
							ADK_MAX_WORKER_CONCURRENCY,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("adk.session_wait_timeout",
							gettext_noop("How long adk_run waits for a queued run that holds its session."),
							gettext_noop("0 waits without a limit (a query cancel still stops the wait)."),
							&adk_session_wait_timeout_ms,
							60000,
							0,
							INT_MAX,
							PGC_USERSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("adk.worker_idle_timeout",
							gettext_noop("How long a job worker with nothing to run waits before it exits."),
							NULL,
							&adk_worker_idle_timeout_s,
							60,
							0,
							INT_MAX / 1000,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomIntVariable("adk.job_retention",
							gettext_noop("How long finished rows of adk.jobs are kept."),
							gettext_noop("-1 keeps them forever."),
							&adk_job_retention_s,
							7 * 24 * 3600,
							-1,
							INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("adk.notify_events",
							 gettext_noop("Whether every stored event sends NOTIFY adk_events."),
							 gettext_noop("A transaction that has sent a notification cannot be prepared (two-phase commit)."),
							 &adk_notify_events,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("adk.notify_payload",
							 gettext_noop("What NOTIFY adk_events and adk_jobs carry: opaque row ids, or the full ids."),
							 gettext_noop("Any role may LISTEN, whatever its privileges: \"opaque\" sends only the event's or the job's id, which a listener looks up in adk.events or adk.jobs with its own privileges; \"full\" also sends the app, user, session and invocation ids."),
							 &adk_notify_payload,
							 ADK_NOTIFY_OPAQUE,
							 notify_payload_options,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
}

static void
register_launcher(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 10;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "adk_runner");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "adk_launcher_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "adk_runner launcher");
	snprintf(worker.bgw_type, BGW_MAXLEN, "adk_runner launcher");
	RegisterBackgroundWorker(&worker);
}

static Size
workers_shmem_size(void)
{
	Size		size = MAXALIGN(sizeof(AdkWorkerShmem));

	size = add_size(size, MAXALIGN(mul_size(max_worker_processes, sizeof(AdkWorkerSlot))));
	size = add_size(size, MAXALIGN(mul_size(MaxBackends, sizeof(AdkRunEntry))));
	size = add_size(size, mul_size(mul_size(max_worker_processes, ADK_MAX_WORKER_CONCURRENCY),
								   sizeof(AdkJobRunEntry)));
	return size;
}

static void
workers_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(workers_shmem_size());
	RequestNamedLWLockTranche("adk_runner", 1);
}

static void
workers_shmem_startup(void)
{
	bool		found;
	char	   *base;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	base = ShmemInitStruct("adk_runner workers", workers_shmem_size(), &found);
	adk_workers = (AdkWorkerShmem *) base;
	if (!found)
	{
		memset(base, 0, workers_shmem_size());
		adk_workers->lock = &(GetNamedLWLockTranche("adk_runner"))->lock;
		adk_workers->nslots = max_worker_processes;
		adk_workers->nentries = MaxBackends;
		adk_workers->slots = (AdkWorkerSlot *) (base + MAXALIGN(sizeof(AdkWorkerShmem)));
		adk_workers->entries = (AdkRunEntry *)
			(base + MAXALIGN(sizeof(AdkWorkerShmem)) +
			 MAXALIGN(mul_size(max_worker_processes, sizeof(AdkWorkerSlot))));
		adk_workers->job_runs = (AdkJobRunEntry *)
			((char *) adk_workers->entries +
			 MAXALIGN(mul_size(MaxBackends, sizeof(AdkRunEntry))));
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * Raise unless background workers serve this database: queued runs would
 * wait forever otherwise.
 */
void
adk_workers_require(void)
{
	char	   *dbname;

	if (adk_workers == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("no background workers run queued runs"),
				 errhint("Add adk_runner to shared_preload_libraries and restart the server.")));
	dbname = get_database_name(MyDatabaseId);
	if (dbname == NULL || strcmp(dbname, adk_database) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("background workers serve database \"%s\", not \"%s\"",
						adk_database, dbname ? dbname : "?"),
				 errhint("Queue runs in database \"%s\", or set adk.database and restart the server.",
						 adk_database)));
}

/*
 * Set the launcher's latch when the current transaction commits.
 */
void
adk_workers_wake_at_commit(void)
{
	if (adk_workers == NULL)
		return;
	if (!wake_callback_registered)
	{
		RegisterXactCallback(wake_xact_callback, NULL);
		wake_callback_registered = true;
	}
	wake_at_commit = true;
}

static void
wake_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			if (wake_at_commit && adk_workers != NULL)
			{
				Latch	   *latch;

				LWLockAcquire(adk_workers->lock, LW_SHARED);
				latch = adk_workers->launcher_latch;
				LWLockRelease(adk_workers->lock);
				if (latch)
					SetLatch(latch);
			}
			wake_at_commit = false;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			/* a prepared job is found by the launcher's periodic look */
			wake_at_commit = false;
			break;
		default:
			break;
	}
}

/*
 * Wake the backends waiting in adk_wait for invocation_id.
 */
void
adk_workers_wake_waiters(const char *invocation_id)
{
	uint64		hash = adk_invocation_hash(invocation_id);
	int			i;

	if (adk_workers == NULL)
		return;
	LWLockAcquire(adk_workers->lock, LW_SHARED);
	for (i = 0; i < adk_workers->nentries; i++)
	{
		AdkRunEntry *e = &adk_workers->entries[i];

		if (e->wait_hash == hash && e->latch != NULL)
			SetLatch(e->latch);
	}
	LWLockRelease(adk_workers->lock);
}

uint64
adk_session_hash(const char *app, const char *user, const char *session)
{
	uint64		h;

	/* the lengths keep ("ab", "c") apart from ("a", "bc") */
	h = hash_bytes_extended((const unsigned char *) app, strlen(app), strlen(app));
	h = hash_bytes_extended((const unsigned char *) user, strlen(user), h + strlen(user));
	h = hash_bytes_extended((const unsigned char *) session, strlen(session),
							h + strlen(session));
	return h ? h : 1;
}

uint64
adk_invocation_hash(const char *invocation_id)
{
	uint64		h = hash_bytes_extended((const unsigned char *) invocation_id,
										strlen(invocation_id), 0x61646b);

	return h ? h : 1;
}

/*
 * This backend's registry entry, or NULL (not preloaded).
 */
AdkRunEntry *
adk_my_run_entry(void)
{
	static bool exit_callback = false;
	int			i = MY_ENTRY_INDEX;

	if (adk_workers == NULL || i < 0 || i >= adk_workers->nentries)
		return NULL;
	if (!exit_callback)
	{
		on_shmem_exit(clear_entry_at_exit, (Datum) 0);
		exit_callback = true;
	}
	return &adk_workers->entries[i];
}

static void
clear_entry_at_exit(int code, Datum arg)
{
	int			i = MY_ENTRY_INDEX;

	if (adk_workers == NULL || i < 0 || i >= adk_workers->nentries)
		return;
	LWLockAcquire(adk_workers->lock, LW_EXCLUSIVE);
	memset(&adk_workers->entries[i], 0, sizeof(AdkRunEntry));
	LWLockRelease(adk_workers->lock);
}

/*
 * The run registry.  A run enters when it starts (new_run in run.c) and
 * leaves when it ends (finish_run, or stop_run when its query stops
 * early); the first stored event of the run notes its invocation id.
 * adk_cancel / adk_interrupt look runs up here.
 *
 * Entering saves the entry on a backend-local stack and leaving puts it
 * back, so a run inside a run (adk_run in a tool) leaves the outer one
 * registered; entering again for the same session keeps what the entry
 * knows (invocation id, a cancel request), which is how a job worker's own
 * entry, made at the claim, and the runner's agree.  A run that raises
 * does not leave: the entries made in an aborted subtransaction are popped
 * when it aborts, and all are cleared at the end of the transaction --
 * except in a job worker, whose runs span transactions (it commits after
 * every event) and which clears the registry itself after each job.
 */
#define REGISTRY_DEPTH	16

typedef struct RegistryFrame
{
	AdkRunInfo	saved;			/* the entry before this run entered */
	int			level;			/* transaction nest level at entry */
} RegistryFrame;

static RegistryFrame frames[REGISTRY_DEPTH];
static int	nframes = 0;
static bool spans_transactions = false;
static bool registry_callbacks = false;

static void registry_xact_callback(XactEvent event, void *arg);
static void registry_subxact_callback(SubXactEvent event,
									  SubTransactionId mySubid,
									  SubTransactionId parentSubid,
									  void *arg);

/*
 * Run entry i of worker slot "slot".
 */
AdkJobRunEntry *
adk_job_run_entry(int slot, int i)
{
	return &adk_workers->job_runs[slot * ADK_MAX_WORKER_CONCURRENCY + i];
}

void
adk_run_registry_enter(const char *app, const char *user, const char *session)
{
	AdkRunEntry *e = adk_my_run_entry();
	Oid			role = GetUserId();
	bool		is_superuser;
	uint64		hash;

	if (e == NULL || spans_transactions)
		return;
	if (!registry_callbacks)
	{
		RegisterXactCallback(registry_xact_callback, NULL);
		RegisterSubXactCallback(registry_subxact_callback, NULL);
		registry_callbacks = true;
	}
	is_superuser = superuser_arg(role);
	hash = adk_session_hash(app, user, session);
	LWLockAcquire(adk_workers->lock, LW_EXCLUSIVE);
	if (nframes < REGISTRY_DEPTH)
	{
		frames[nframes].saved = e->run;
		frames[nframes].level = GetCurrentTransactionNestLevel();
	}
	nframes++;
	if (e->run.pid != MyProcPid || e->run.session_hash != hash)
	{
		e->run.invocation_hash = 0;
		e->run.cancel_requested = false;
	}
	e->run.pid = MyProcPid;
	e->run.role = role;
	e->run.superuser = is_superuser;
	e->run.session_hash = hash;
	LWLockRelease(adk_workers->lock);
}

void
adk_run_registry_note(const char *invocation_id)
{
	AdkRunEntry *e = adk_my_run_entry();
	uint64		hash;

	if (e == NULL || spans_transactions || e->run.pid == 0 || invocation_id == NULL)
		return;
	hash = adk_invocation_hash(invocation_id);
	if (e->run.invocation_hash == hash)
		return;
	LWLockAcquire(adk_workers->lock, LW_EXCLUSIVE);
	e->run.invocation_hash = hash;
	LWLockRelease(adk_workers->lock);
}

void
adk_run_registry_leave(void)
{
	AdkRunEntry *e = adk_my_run_entry();

	if (e == NULL || spans_transactions || nframes == 0)
		return;
	nframes--;
	if (nframes >= REGISTRY_DEPTH)
		return;					/* too deep to have been saved: keep */
	LWLockAcquire(adk_workers->lock, LW_EXCLUSIVE);
	e->run = frames[nframes].saved;
	LWLockRelease(adk_workers->lock);
}

void
adk_run_registry_clear(void)
{
	AdkRunEntry *e = adk_my_run_entry();

	nframes = 0;
	if (e == NULL || e->run.pid == 0)
		return;
	LWLockAcquire(adk_workers->lock, LW_EXCLUSIVE);
	memset(&e->run, 0, sizeof(e->run));
	LWLockRelease(adk_workers->lock);
}

/*
 * For job workers: their runs span transactions, and one worker holds
 * many; it keeps an entry per run (adk_job_run_entry) itself, and the
 * backend's own entry is not used.
 */
void
adk_run_registry_spans_transactions(void)
{
	spans_transactions = true;
}

static void
registry_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
			if (!spans_transactions && nframes > 0)
				adk_run_registry_clear();
			break;
		default:
			break;
	}
}

static void
registry_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						  SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();

	if (event != SUBXACT_EVENT_ABORT_SUB)
		return;
	while (nframes > 0 && nframes <= REGISTRY_DEPTH &&
		   frames[nframes - 1].level >= level)
		adk_run_registry_leave();
}

bool
adk_run_registry_cancel_requested(void)
{
	AdkRunEntry *e = adk_my_run_entry();
	bool		result;

	if (e == NULL || spans_transactions)
		return false;
	LWLockAcquire(adk_workers->lock, LW_SHARED);
	result = e->run.pid != 0 && e->run.cancel_requested;
	LWLockRelease(adk_workers->lock);
	return result;
}
