/*-------------------------------------------------------------------------
 *
 * append.h
 *	  Appending an event to a session, for C callers (the runner).
 *
 * IDENTIFICATION
 *	  src/store/append.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_APPEND_H
#define ADK_APPEND_H

#include "datatype/timestamp.h"
#include "utils/jsonb.h"

typedef struct AdkStoredEvent
{
	Jsonb	   *event;			/* event_data as stored */
	char	   *id;
	char	   *invocation_id;
	int64		seq;			/* 0: partial, not stored */
	TimestampTz time;
} AdkStoredEvent;

/* GUC adk.max_event_size: largest event_data accepted by an append, in kB */
extern int	adk_max_event_size_kb;

extern void adk_store_append(const char *app, const char *user,
							 const char *session, Jsonb *event,
							 AdkStoredEvent *stored);
extern void adk_store_append_unheld(const char *app, const char *user,
									const char *session, Jsonb *event,
									AdkStoredEvent *stored);

#endif							/* ADK_APPEND_H */
