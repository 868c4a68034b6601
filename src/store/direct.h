/*-------------------------------------------------------------------------
 *
 * direct.h
 *	  An append's two writes without UPDATE and INSERT statements.
 *
 * IDENTIFICATION
 *	  src/store/direct.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_DIRECT_H
#define ADK_DIRECT_H

#include "datatype/timestamp.h"
#include "utils/jsonb.h"

/* id, app_name, user_id, session_id, invocation_id, timestamp, event_data, seq */
#define ADK_EVENT_ROW_COLUMNS 8

extern bool adk_event_row_insert(const Datum *values);
extern bool adk_session_row_bump(const Datum *ids, TimestampTz proposed,
								 Jsonb *delta, int64 *seq, TimestampTz *ts,
								 bool *found);

#endif							/* ADK_DIRECT_H */
