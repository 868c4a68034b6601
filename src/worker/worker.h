/*-------------------------------------------------------------------------
 *
 * worker.h
 *	  Background workers: the launcher, the job workers, queued runs
 *	  (adk.jobs), triggers that queue runs, cancellation and the event
 *	  notifications (SPEC §8).
 *
 * Shared memory (only with shared_preload_libraries = 'adk_runner'):
 *	- the launcher's latch, set at the commit of every transaction that
 *	  queued a job;
 *	- one slot per job worker the launcher may start;
 *	- one entry per backend saying which run it is executing, if any, so
 *	  adk_cancel and adk_interrupt can find and signal it, and which run it
 *	  waits for (adk_wait), so the worker that ends that run can wake it.
 * One LWLock guards all of it.
 *
 * IDENTIFICATION
 *	  src/worker/worker.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_WORKER_H
#define ADK_WORKER_H

#include "datatype/timestamp.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "utils/jsonb.h"

/* GUCs */
extern char *adk_database;
extern int	adk_max_workers;
extern int	adk_worker_idle_timeout_s;
extern int	adk_job_retention_s;
extern int	adk_worker_concurrency;
extern int	adk_session_wait_timeout_ms;

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
extern void adk_workers_init(void);
extern void adk_workers_require(void);
extern void adk_workers_wake_at_commit(void);
extern void adk_workers_wake_waiters(const char *invocation_id);
extern uint64 adk_session_hash(const char *app, const char *user,
							   const char *session);
extern uint64 adk_invocation_hash(const char *invocation_id);
extern AdkRunEntry *adk_my_run_entry(void);
extern void adk_run_registry_enter(const char *app, const char *user,
								   const char *session);
extern void adk_run_registry_note(const char *invocation_id);
extern void adk_run_registry_leave(void);
extern void adk_run_registry_clear(void);
extern void adk_run_registry_spans_transactions(void);
extern bool adk_run_registry_cancel_requested(void);
extern AdkJobRunEntry *adk_job_run_entry(int slot, int i);

/* launcher.c */
extern PGDLLEXPORT void adk_launcher_main(Datum arg);

/* job.c */
extern PGDLLEXPORT void adk_job_worker_main(Datum arg);

/* submit.c */
extern void adk_check_app(const char *app);
extern char *adk_job_insert(const char *app, const char *user,
							const char *session, Jsonb *message,
							Jsonb *state_delta, Jsonb *options, Oid role,
							const char *source);

/* notify.c is the store's (store/notify.h) */
#include "store/notify.h"

/* cancel.c */
extern bool adk_may_cancel(Oid role, bool role_is_superuser);

#endif							/* ADK_WORKER_H */
