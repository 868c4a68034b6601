/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  The background workers' settings, the launcher's registration and
 *	  waking the launcher at commit.  The shared memory itself is
 *	  shared/shmem.c's, the run registry shared/registry.c's.
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
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "postmaster/postmaster.h"
#include "storage/latch.h"
#include "utils/guc.h"

#include "worker/otlp.h"
#include "worker/worker.h"

char	   *adk_database = NULL;
int			adk_max_workers = 4;
int			adk_worker_idle_timeout_s = 60;
int			adk_job_retention_s = 7 * 24 * 3600;
int			adk_worker_concurrency = 64;
int			adk_worker_affinity_delay_ms = 150;

static bool wake_callback_registered = false;
static bool wake_at_commit = false;

static void define_gucs(void);
static void register_launcher(void);
static void wake_xact_callback(XactEvent event, void *arg);

/*
 * Called from _PG_init: the settings (adk.database only when preloaded);
 * shared memory and the launcher only while shared_preload_libraries is
 * processed; then the OTLP exporter's settings and, with preload, its
 * worker.
 */
void
adk_worker_init(void)
{
	define_gucs();
	if (process_shared_preload_libraries_in_progress)
	{
		adk_shmem_init();
		register_launcher();
	}
	adk_otlp_init();
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

	DefineCustomIntVariable("adk.worker_affinity_delay",
							gettext_noop("How long a queued run waits for the job worker that ran its session's last run."),
							gettext_noop("That worker kept the session's history; other workers take the run after this long, at once if that worker is gone. 0 turns it off."),
							&adk_worker_affinity_delay_ms,
							150,
							0,
							60 * 1000,
							PGC_SIGHUP,
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

