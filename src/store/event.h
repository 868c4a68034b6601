/*-------------------------------------------------------------------------
 *
 * event.h
 *	  The ADK event as stored in adk.events.event_data.
 *
 * IDENTIFICATION
 *	  src/store/event.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_EVENT_H
#define ADK_EVENT_H

#include "datatype/timestamp.h"
#include "utils/jsonb.h"

/* What an append needs from a normalized event besides its body. */
typedef struct AdkEventKeys
{
	char	   *id;				/* event id (given or generated) */
	char	   *invocation_id;	/* "" when the event has none */
	TimestampTz proposed_time;	/* from "timestamp" (epoch ms), else now */
	bool		partial;		/* "partial": true -- never stored */
} AdkEventKeys;

extern Jsonb *adk_event_normalize(Jsonb *event, AdkEventKeys *keys);

#endif							/* ADK_EVENT_H */
