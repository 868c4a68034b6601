/*-------------------------------------------------------------------------
 *
 * registry.h
 *	  The run registry: which run each backend executes (adk_cancel and
 *	  adk_interrupt find it here), the runs job workers hold, and the
 *	  backends waiting in adk_wait for a run to end.
 *
 * IDENTIFICATION
 *	  src/shared/registry.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_SHARED_REGISTRY_H
#define ADK_SHARED_REGISTRY_H

#include "shared/shared.h"

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
extern bool adk_run_registry_open(void);
extern AdkJobRunEntry *adk_job_run_entry(int slot, int i);

#endif							/* ADK_SHARED_REGISTRY_H */
