/*-------------------------------------------------------------------------
 *
 * notify.h
 *	  NOTIFY adk_events for every stored event, NOTIFY adk_jobs for every
 *	  job that ends.
 *
 * IDENTIFICATION
 *	  src/store/notify.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_STORE_NOTIFY_H
#define ADK_STORE_NOTIFY_H

#include "utils/jsonb.h"

/* GUC adk.notify_events */
extern bool adk_notify_events;

extern void adk_notify_event(const char *app, const char *user,
							 const char *session, int64 seq,
							 const char *invocation_id, Jsonb *event);
extern void adk_notify_job(const char *invocation_id, const char *status);

#endif							/* ADK_STORE_NOTIFY_H */
