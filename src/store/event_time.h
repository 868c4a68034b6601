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

/*
 * The times an event may have: 0001-01-01 00:00:00.000 UTC through
 * 9999-12-31 23:59:59.999 UTC, as epoch milliseconds.  That is what ADK
 * Python's datetime can read back, it is far inside timestamptz's range
 * (so the arithmetic below cannot overflow), and a dump restores it.
 */
#define ADK_EVENT_MIN_MS	INT64CONST(-62135596800000)
#define ADK_EVENT_MAX_MS	INT64CONST(253402300799999)

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

/* Only for ms within ADK_EVENT_MIN_MS..ADK_EVENT_MAX_MS. */
static inline TimestampTz
adk_epoch_ms_to_timestamp(int64 ms)
{
	return ms * 1000 - ADK_UNIX_EPOCH_OFFSET_US;
}

/* Is ts (any timestamptz, infinities included) a time an event may have? */
static inline bool
adk_event_time_in_range(TimestampTz ts)
{
	return ts >= adk_epoch_ms_to_timestamp(ADK_EVENT_MIN_MS) &&
		ts <= adk_epoch_ms_to_timestamp(ADK_EVENT_MAX_MS) + 999;
}

extern void adk_check_event_time(TimestampTz ts);

#endif							/* ADK_EVENT_TIME_H */
