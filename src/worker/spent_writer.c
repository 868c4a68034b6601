/*-------------------------------------------------------------------------
 *
 * spent_writer.c
 *	  The "adk_runner spent writer": a short-lived background worker that
 *	  writes what rolled-back transactions of another database than
 *	  adk.database spent on model calls (shared/spent.c).
 *
 * The launcher is connected to adk.database and writes that database's
 * charges itself.  For any other database with charges or ledger rows
 * waiting it starts one of these (one at a time), connected to that
 * database: one transaction, then it exits.  A database that was dropped,
 * or that no longer has the extension, has nothing its charges could be
 * written to: they are discarded.
 *
 * IDENTIFICATION
 *	  src/worker/spent_writer.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "tcop/tcopprot.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "common/schema_version.h"
#include "shared/spent.h"
#include "worker/worker.h"

#define START_EVERY_MS 1000	/* a budget row stays locked: not faster */

/* launcher-local: the writer running now, if any */
static BackgroundWorkerHandle *writer = NULL;
static TimestampTz last_start = 0;

/*
 * The launcher, in its round's transaction: start a writer for another
 * database with something waiting, unless one runs or one started less
 * than START_EVERY_MS ago.  true: something waits (look again soon).
 */
bool
adk_spent_writer_start(void)
{
	BackgroundWorker worker;
	MemoryContext old;
	pid_t		pid;
	Oid			db;
	TimestampTz now = GetCurrentTimestamp();

	if (writer != NULL)
	{
		if (GetBackgroundWorkerPid(writer, &pid) != BGWH_STOPPED)
			return true;
		pfree(writer);
		writer = NULL;
	}
	db = adk_spent_other_database();
	if (!OidIsValid(db))
		return false;
	if (!SearchSysCacheExists1(DATABASEOID, ObjectIdGetDatum(db)))
	{
		adk_spent_discard(db);
		return true;
	}
	if (!TimestampDifferenceExceeds(last_start, now, START_EVERY_MS))
		return true;
	last_start = now;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "adk_runner");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "adk_spent_writer_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "adk_runner spent writer");
	snprintf(worker.bgw_type, BGW_MAXLEN, "adk_runner spent writer");
	memcpy(worker.bgw_extra, &db, sizeof(Oid));
	worker.bgw_notify_pid = MyProcPid;

	/* the handle lives as long as the launcher, not the round */
	old = MemoryContextSwitchTo(TopMemoryContext);
	if (!RegisterDynamicBackgroundWorker(&worker, &writer))
		writer = NULL;			/* no free slot: the next round tries again */
	MemoryContextSwitchTo(old);
	return true;
}

void
adk_spent_writer_main(Datum arg)
{
	Oid			db;
	Oid			nsp;

	memcpy(&db, MyBgworkerEntry->bgw_extra, sizeof(Oid));
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(db, InvalidOid, 0);
	pgstat_report_appname("adk_runner spent writer");

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "adk_runner: writing the charges of rolled-back model calls");
	nsp = get_namespace_oid("adk", true);
	if (!OidIsValid(nsp) || !OidIsValid(get_relname_relid("budget_spend", nsp)))
		adk_spent_discard(MyDatabaseId);
	else if (adk_schema_state(NULL) == ADK_SCHEMA_MATCHES)
		(void) adk_spent_write();
	/* else at another version: the charges wait for ALTER EXTENSION UPDATE */
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_stat(true);
	pgstat_report_activity(STATE_IDLE, NULL);
	proc_exit(0);
}
