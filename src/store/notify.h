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

/* GUCs adk.notify_events, adk.notify_payload (defined in settings.c) */
extern bool adk_notify_events;
extern int	adk_notify_payload;

/* adk.notify_payload */
typedef enum AdkNotifyPayload
{
	ADK_NOTIFY_OPAQUE = 0,		/* row ids a listener looks up */
	ADK_NOTIFY_FULL				/* app, user, session, invocation ids */
} AdkNotifyPayload;

extern void adk_notify_event(const char *app, const char *user,
							 const char *session, int64 seq,
							 const char *invocation_id, Jsonb *event);
extern void adk_notify_job(int64 job_id, const char *invocation_id,
						   const char *status);

#endif							/* ADK_STORE_NOTIFY_H */
