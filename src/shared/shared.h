/*-------------------------------------------------------------------------
 *
 * shared.h
 *	  The extension's shared memory (only with shared_preload_libraries =
 *	  'adk_runner'):
 *	- the launcher's latch, set at the commit of every transaction that
 *	  queued a job;
 *	- one slot per job worker the launcher may start;
 *	- one entry per backend saying which run it is executing, if any, so
 *	  adk_cancel and adk_interrupt can find and signal it, and which run it
 *	  waits for (adk_wait), so the worker that ends that run can wake it;
 *	- one entry per run a job worker holds.
 * One LWLock guards all of it.
 *
 * IDENTIFICATION
 *	  src/shared/shared.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_SHARED_H
#define ADK_SHARED_H

#include "datatype/timestamp.h"
#include "storage/latch.h"
#include "storage/lwlock.h"

/* the most runs one job worker may hold (adk.worker_concurrency's maximum) */
#define ADK_MAX_WORKER_CONCURRENCY	256

typedef enum AdkSlotState
{
	ADK_SLOT_FREE = 0,
	ADK_SLOT_STARTING,			/* registered by the launcher, not attached */
	ADK_SLOT_BUSY,				/* looking for a job, or running one */
	ADK_SLOT_IDLE				/* waiting on its latch for work */
} AdkSlotState;

typedef struct AdkWorkerSlot
{
	AdkSlotState state;
	pid_t		pid;
	Latch	   *latch;
	int64		job_id;			/* the job it claimed last, 0: none */
	TimestampTz since;			/* last state change */
	int			nruns;			/* runs it holds */
	int			stepping;		/* the run entry it steps now, -1: none */
} AdkWorkerSlot;

/* The run a backend executes, identified by hashes of its identities */
typedef struct AdkRunInfo
{
	pid_t		pid;			/* 0: executes no run */
	Oid			role;			/* the role the run runs as */
	bool		superuser;		/* ... and whether that role is one */
	uint64		session_hash;
	uint64		invocation_hash;	/* 0: not known yet */
	bool		cancel_requested;
} AdkRunInfo;

/* One per backend (indexed by backend number) */
typedef struct AdkRunEntry
{
	AdkRunInfo	run;
	uint64		wait_hash;		/* adk_wait: the invocation it waits for */
	Latch	   *latch;
} AdkRunEntry;

/*
 * A run a job worker holds: ADK_MAX_WORKER_CONCURRENCY of them per slot.
 * adk_cancel sets cancel_requested and the worker's latch; only the run
 * the worker is stepping at that moment gets SIGINT.
 */
typedef struct AdkJobRunEntry
{
	AdkRunInfo	run;			/* pid 0: free */
	int64		job_id;
} AdkJobRunEntry;

typedef struct AdkWorkerShmem
{
	LWLock	   *lock;
	pid_t		launcher_pid;
	Latch	   *launcher_latch;
	int			nslots;
	int			nentries;
	AdkWorkerSlot *slots;		/* nslots */
	AdkRunEntry *entries;		/* nentries */
	AdkJobRunEntry *job_runs;	/* nslots * ADK_MAX_WORKER_CONCURRENCY */
} AdkWorkerShmem;

/* NULL unless preloaded */
extern AdkWorkerShmem *adk_workers;

/* shmem.c */
extern void adk_shmem_init(void);

#endif							/* ADK_SHARED_H */
