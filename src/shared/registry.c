/*-------------------------------------------------------------------------
 *
 * registry.c
 *	  The registry of the runs each backend executes, the runs job workers
 *	  hold, and the backends waiting in adk_wait for a run to end.
 *
 * adk_cancel and adk_interrupt look runs up here; the worker that ends a
 * queued run wakes its waiters here.  The entries live in the shared
 * struct of shared/shmem.c, under its LWLock.
 *
 * IDENTIFICATION
 *	  src/shared/registry.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"

#include "shared/registry.h"

#if PG_VERSION_NUM >= 170000
#define MY_ENTRY_INDEX	MyProcNumber
#else
#define MY_ENTRY_INDEX	(MyBackendId - 1)
#endif

static void clear_entry_at_exit(int code, Datum arg);

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

	if (spans_transactions)
		return;
	if (!registry_callbacks)
	{
		RegisterXactCallback(registry_xact_callback, NULL);
		RegisterSubXactCallback(registry_subxact_callback, NULL);
		registry_callbacks = true;
	}
	/* the stack is kept without shared memory too (adk_run_registry_open) */
	if (e == NULL)
	{
		if (nframes < REGISTRY_DEPTH)
			frames[nframes].level = GetCurrentTransactionNestLevel();
		nframes++;
		return;
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

	if (spans_transactions || nframes == 0)
		return;
	nframes--;
	if (e == NULL || nframes >= REGISTRY_DEPTH)
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

/*
 * Is a run of this backend open -- begun and not ended, whether or not one
 * of its steps is running now (a cursor over adk_run between FETCHes)?
 */
bool
adk_run_registry_open(void)
{
	return nframes > 0;
}
