/*-------------------------------------------------------------------------
 *
 * event_time.h
 *	  Event timestamps: whole milliseconds, as ADK writes them.
 *
 * IDENTIFICATION
 *	  src/store/event_time.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_EVENT_TIME_H
#define ADK_EVENT_TIME_H

#include "datatype/timestamp.h"

/* Microseconds between the Unix epoch and PostgreSQL's (2000-01-01). */
#define ADK_UNIX_EPOCH_OFFSET_US \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * USECS_PER_SEC)

/* Round down to a whole millisecond (towards minus infinity). */
static inline TimestampTz
adk_truncate_to_ms(TimestampTz ts)
{
	int64		rem = ts % 1000;

	if (rem < 0)
		rem += 1000;
	return ts - rem;
}

static inline int64
adk_timestamp_to_epoch_ms(TimestampTz ts)
{
	return (ts + ADK_UNIX_EPOCH_OFFSET_US) / 1000;
}

static inline TimestampTz
adk_epoch_ms_to_timestamp(int64 ms)
{
	return ms * 1000 - ADK_UNIX_EPOCH_OFFSET_US;
}

#endif							/* ADK_EVENT_TIME_H */
