/*-------------------------------------------------------------------------
 *
 * session_trigger.c
 *	  BEFORE UPDATE trigger on adk.sessions: update_time never moves
 *	  backwards, and never falls behind the session's newest event.
 *
 * Other ADK runtimes set update_time from their own clocks when they
 * append (ADK-JS detects a foreign write only when update_time moved).
 * This runs for every update of a session row, ours included, so it is a
 * C function with no WHEN clause: a WHEN clause is parsed again for every
 * statement that fires it, which cost more than the check itself.
 *
 * IDENTIFICATION
 *	  src/store/session_trigger.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(adk_sessions_before_update);

Datum
adk_sessions_before_update(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	TupleDesc	desc;
	HeapTuple	newtup;
	int			ut_col;
	int			let_col;
	bool		isnull;
	TimestampTz old_ut;
	TimestampTz new_ut;
	TimestampTz floor_ut;
	Datum		value;
	bool		newnull = false;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
		elog(ERROR, "adk_sessions_before_update must be a BEFORE UPDATE row trigger");

	desc = RelationGetDescr(trigdata->tg_relation);
	newtup = trigdata->tg_newtuple;
	ut_col = SPI_fnumber(desc, "update_time");
	let_col = SPI_fnumber(desc, "last_event_time");
	if (ut_col <= 0 || let_col <= 0)
		elog(ERROR, "relation \"%s\" does not have the columns of adk.sessions",
			 RelationGetRelationName(trigdata->tg_relation));

	old_ut = DatumGetTimestampTz(heap_getattr(trigdata->tg_trigtuple, ut_col,
											  desc, &isnull));
	floor_ut = isnull ? DT_NOBEGIN : old_ut;
	value = heap_getattr(newtup, let_col, desc, &isnull);
	if (!isnull && DatumGetTimestampTz(value) > floor_ut)
		floor_ut = DatumGetTimestampTz(value);
	value = heap_getattr(newtup, ut_col, desc, &isnull);
	new_ut = isnull ? DT_NOBEGIN : DatumGetTimestampTz(value);

	if (new_ut >= floor_ut)
		return PointerGetDatum(newtup);

	value = TimestampTzGetDatum(floor_ut);
	return PointerGetDatum(heap_modify_tuple_by_cols(newtup, desc, 1, &ut_col,
													 &value, &newnull));
}
