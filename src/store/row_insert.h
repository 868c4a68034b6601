/*-------------------------------------------------------------------------
 *
 * row_insert.h
 *	  Writing a placed event row without an INSERT statement.
 *
 * IDENTIFICATION
 *	  src/store/row_insert.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_ROW_INSERT_H
#define ADK_ROW_INSERT_H

/* id, app_name, user_id, session_id, invocation_id, timestamp, event_data, seq */
#define ADK_EVENT_ROW_COLUMNS 8

extern bool adk_event_row_insert(const Datum *values);

#endif							/* ADK_ROW_INSERT_H */
