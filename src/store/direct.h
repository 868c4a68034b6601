/*-------------------------------------------------------------------------
 *
 * direct.h
 *	  Our hottest writes without UPDATE and INSERT statements.
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
/* model, provider, url, invocation_id, stream, http_status, attempts,
 * latency_ms, input_tokens, output_tokens, finish_reason, error_code,
 * error_message, request, response, response_body, role_name */
#define ADK_LEDGER_ROW_COLUMNS 17

extern bool adk_event_row_insert(const Datum *values);
extern bool adk_ledger_row_insert(const Datum *values, const bool *nulls);
extern bool adk_session_row_bump(const Datum *ids, TimestampTz proposed,
								 Jsonb *delta, int64 *seq, TimestampTz *ts,
								 bool *found);

#endif							/* ADK_DIRECT_H */
