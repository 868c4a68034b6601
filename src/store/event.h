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
	bool		id_given;
	char	   *invocation_id;	/* "" when the event has none */
	bool		invocation_id_given;
	TimestampTz proposed_time;	/* from "timestamp" (epoch ms), else now */
	bool		partial;		/* "partial": true -- never stored */
} AdkEventKeys;

extern void adk_event_check(Jsonb *event, AdkEventKeys *keys);
extern void adk_event_check_fields(Jsonb *event);
extern Jsonb *adk_event_finish(Jsonb *event, AdkEventKeys *keys,
							   TimestampTz time, bool strip_temp);

#endif							/* ADK_EVENT_H */
