/*-------------------------------------------------------------------------
 *
 * place.h
 *	  Giving an event its place in a session (event_trigger.c).
 *
 * IDENTIFICATION
 *	  src/store/place.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_PLACE_H
#define ADK_PLACE_H

#include "datatype/timestamp.h"
#include "utils/jsonb.h"

#include "common/jsonb_util.h"

extern void adk_event_state_delta(Jsonb *event, AdkStateDelta *split);
extern void adk_place_event(Datum *ids, TimestampTz proposed,
							AdkStateDelta *split, int64 *seq, TimestampTz *ts);
extern void adk_check_placed_time(TimestampTz ts);
extern void adk_merge_scope_states(Datum *ids, AdkStateDelta *split,
								   TimestampTz ts);
extern void adk_mark_placed(const char *event_id);
extern void adk_event_derive(Datum *ids, int64 seq, TimestampTz ts,
							 Datum event_id, Datum invocation_id, Jsonb *event);

#endif							/* ADK_PLACE_H */
