/*-------------------------------------------------------------------------
 *
 * worker.h
 *	  Background workers: the launcher, the job workers, queued runs
 *	  (adk.jobs), triggers that queue runs, cancellation and the event
 *	  notifications (README "Background runs, triggers, cancellation").
 *
 * The shared memory they use (the launcher's latch, the job workers'
 * slots, the run registry) is shared/shared.h's and shared/registry.h's.
 *
 * IDENTIFICATION
 *	  src/worker/worker.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_WORKER_H
#define ADK_WORKER_H

#include "utils/jsonb.h"

/* the shared struct and the run registry */
#include "shared/registry.h"

/* GUCs */
extern char *adk_database;
extern int	adk_max_workers;
extern int	adk_worker_idle_timeout_s;
extern int	adk_job_retention_s;
extern int	adk_worker_concurrency;
extern int	adk_worker_affinity_delay_ms;

/* shmem.c */
extern void adk_worker_init(void);
extern void adk_workers_require(void);
extern void adk_workers_wake_at_commit(void);

/* launcher.c */
extern PGDLLEXPORT void adk_launcher_main(Datum arg);

/* spent_writer.c */
extern bool adk_spent_writer_start(void);
extern PGDLLEXPORT void adk_spent_writer_main(Datum arg);

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
