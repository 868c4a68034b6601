/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  The extension's shared memory: its size, the request and startup
 *	  hooks, and the one LWLock that guards it.
 *
 * Everything in shared memory is guarded by one LWLock (tranche
 * "adk_runner"), except what rolled-back transactions spent (shared/spent.c,
 * its own struct and LWLock) and the models' circuit breakers
 * (shared/breaker.c, likewise).  It is held only for a few loads and stores, and while
 * adk_cancel signals a backend, so that a run cannot end between the check
 * and the signal.
 *
 * IDENTIFICATION
 *	  src/shared/shmem.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "shared/breaker.h"
#include "shared/shared.h"
#include "shared/spent.h"

AdkWorkerShmem *adk_workers = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static Size workers_shmem_size(void);
static void workers_shmem_request(void);
static void workers_shmem_startup(void);

/*
 * Install the hooks; called from adk_worker_init while
 * shared_preload_libraries is processed.
 */
void
adk_shmem_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = workers_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = workers_shmem_startup;
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
	RequestAddinShmemSpace(adk_spent_shmem_size());
	RequestNamedLWLockTranche("adk_runner spent", 1);
	RequestAddinShmemSpace(adk_breaker_shmem_size());
	RequestNamedLWLockTranche("adk_runner breakers", 1);
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
	adk_spent_shmem_startup();
	adk_breaker_shmem_startup();
	LWLockRelease(AddinShmemInitLock);
}
