/*-------------------------------------------------------------------------
 *
 * rewound_trigger.c
 *	  AFTER INSERT trigger on adk.events: a rewind event, from any writer,
 *	  has its session's rewound events computed again
 *	  (sql/install/12_rewound.sql, docs/sessions-lifecycle.md "Rewind and
 *	  edit").
 *
 * A rewind event is one whose actions.rewind_before_invocation_id is there
 * and not JSON null -- what event_data #>> '{actions,
 * rewind_before_invocation_id}' IS NOT NULL says; for every other row the
 * trigger returns at once.  The test is made here, not in a WHEN clause:
 * the executor reads a trigger's WHEN from its stored node tree and
 * prepares it again at every INSERT statement, which cost an append more
 * than this whole function does for a plain event (test/bench/README.md);
 * and a function in a WHEN would need EXECUTE of every role that inserts
 * events, where a trigger's function needs none.
 *
 * The session row is updated by adk._session_rewound_set
 * (sql/install/88_turn_statements.sql), run from its body by adk_spi_call
 * as the writer of the row -- as the plpgsql function this replaced ran
 * it -- with search_path pinned, as the events trigger's bump is.
 *
 * IDENTIFICATION
 *	  src/store/rewound_trigger.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "utils/jsonb.h"
#include "utils/rel.h"

#include "common/jsonb_util.h"
#include "common/owner.h"
#include "common/spi_plans.h"

PG_FUNCTION_INFO_V1(adk_events_after_rewind);

#define REWOUND_SET "adk._session_rewound_set"

/* Whether event_data #>> '{actions,rewind_before_invocation_id}' IS NOT NULL */
static bool
is_rewind(Jsonb *event)
{
	JsonbValue *actions = adk_jsonb_get(&event->root, "actions");
	JsonbValue *target;

	if (actions == NULL || actions->type != jbvBinary)
		return false;
	target = adk_jsonb_get(actions->val.binary.data, "rewind_before_invocation_id");
	return target != NULL && target->type != jbvNull;
}

Datum
adk_events_after_rewind(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	TupleDesc	desc;
	HeapTuple	tuple;
	Datum		args[3];
	bool		isnull;
	Datum		event;
	int			guc_level;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_AFTER(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		elog(ERROR, "adk_events_after_rewind must be an AFTER INSERT row trigger");

	desc = RelationGetDescr(trigdata->tg_relation);
	tuple = trigdata->tg_trigtuple;
	event = heap_getattr(tuple, SPI_fnumber(desc, "event_data"), desc, &isnull);
	if (isnull || !is_rewind(DatumGetJsonbP(event)))
		return PointerGetDatum(NULL);

	args[0] = heap_getattr(tuple, SPI_fnumber(desc, "app_name"), desc, &isnull);
	args[1] = heap_getattr(tuple, SPI_fnumber(desc, "user_id"), desc, &isnull);
	args[2] = heap_getattr(tuple, SPI_fnumber(desc, "session_id"), desc, &isnull);
	guc_level = adk_pin_search_path();
	SPI_connect();
	if (adk_spi_call(REWOUND_SET, 3, args, NULL, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update the session's rewound events");
	SPI_finish();
	adk_unpin_search_path(guc_level);
	return PointerGetDatum(NULL);
}
