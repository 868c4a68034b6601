/*-------------------------------------------------------------------------
 *
 * append.c
 *	  adk_append_event(app_name, user_id, session_id, event jsonb): store
 *	  one event in a session and return it as stored.
 *
 * The function validates the identities and the event, fills in what ADK
 * would (store/event.c), and inserts one row into adk.events.  Locking the
 * session row, seq, the timestamp and the state delta are the events
 * trigger's job (store/event_trigger.c), so every writer gets the same
 * rules.  A partial event is returned without being stored, as ADK's
 * session services do.
 *
 * IDENTIFICATION
 *	  src/store/append.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "adk_runner.h"
#include "common/ids.h"
#include "common/jsonb_util.h"
#include "model/ledger.h"
#include "store/append.h"
#include "store/event.h"
#include "store/owner.h"
#include "store/place.h"
#include "store/direct.h"
#include "store/tenancy.h"
#include "worker/worker.h"

PG_FUNCTION_INFO_V1(adk_append_event);

static SPIPlanPtr insert_plan = NULL;

static Jsonb *mark_appended_by(Jsonb *event);

#define INSERT_SQL \
	"INSERT INTO adk.events_p0" \
	" (id, app_name, user_id, session_id, invocation_id, \"timestamp\", event_data, seq)" \
	" VALUES ($1, $2, $3, $4, $5, $6, $7, $8)" \
	""

Datum
adk_append_event(PG_FUNCTION_ARGS)
{
	char	   *app = adk_check_id("app name", PG_ARGISNULL(0) ? NULL : PG_GETARG_TEXT_PP(0), ADK_MAX_ID_CHARS);
	char	   *user = adk_check_id("user id", PG_ARGISNULL(1) ? NULL : PG_GETARG_TEXT_PP(1), ADK_MAX_ID_CHARS);
	char	   *session = adk_check_id("session id", PG_ARGISNULL(2) ? NULL : PG_GETARG_TEXT_PP(2), ADK_MAX_ID_CHARS);
	Jsonb	   *event;
	AdkStoredEvent stored;

	if (PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("event must not be null")));
	event = PG_GETARG_JSONB_P(3);
	adk_tenancy_check(app, user);
	if (!adk_tenancy_trusted_append(app))
		event = mark_appended_by(event);
	adk_store_append(app, user, session, event, &stored);
	PG_RETURN_JSONB_P(stored.event);
}

/*
 * The event with custom_metadata.adk_appended_by = the current role: an
 * event that never counts as a pending call or a compaction record
 * (tenancy.c, adk_tenancy_trusted_append).  Anything the caller put there
 * under that key is replaced.  A non-object is left to adk_event_check.
 */
static Jsonb *
mark_appended_by(Jsonb *event)
{
	StringInfoData buf;
	Jsonb	   *mark;
	Jsonb	   *meta;
	JsonbValue *cm;
	Datum		key = CStringGetTextDatum("custom_metadata");
	ArrayType  *path;

	if (!JB_ROOT_IS_OBJECT(event))
		return event;
	initStringInfo(&buf);
	appendStringInfoString(&buf, "{\"adk_appended_by\": ");
	escape_json(&buf, GetUserNameFromId(GetUserId(), false));
	appendStringInfoChar(&buf, '}');
	mark = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data)));
	cm = adk_jsonb_get(&event->root, "custom_metadata");
	if (cm != NULL && cm->type == jbvBinary && JsonContainerIsObject(cm->val.binary.data))
		meta = adk_jsonb_concat(JsonbValueToJsonb(cm), mark);
	else
		meta = mark;
	path = construct_array(&key, 1, TEXTOID, -1, false, TYPALIGN_INT);
	return DatumGetJsonbP(DirectFunctionCall4(jsonb_set, JsonbPGetDatum(event),
											  PointerGetDatum(path), JsonbPGetDatum(meta),
											  BoolGetDatum(true)));
}

/*
 * INSERT the row whose place adk_place_event gave already: the events
 * trigger lets exactly this row through (and forgets it on any error).
 */
static void
insert_placed(Datum *args, const char *event_id)
{
	adk_mark_placed(event_id);
	PG_TRY();
	{
		if (SPI_execute_plan(insert_plan, args, NULL, false, 0) != SPI_OK_INSERT ||
			SPI_processed != 1)
			elog(ERROR, "could not insert into adk.events");
	}
	PG_CATCH();
	{
		adk_mark_placed(NULL);
		PG_RE_THROW();
	}
	PG_END_TRY();
	adk_mark_placed(NULL);
}

/*
 * Append "event" to a session (the identities already checked): validate
 * and normalize it, insert it as the owner of schema adk, and fill
 * "stored" with the event as stored, its seq and time.  A partial event is
 * not stored: stored->seq is 0.
 */
void
adk_store_append(const char *app, const char *user, const char *session,
				 Jsonb *event, AdkStoredEvent *stored)
{
	AdkEventKeys keys;
	AdkOwnerSave save;
	Datum		args[8];
	Datum		ids[3];
	AdkStateDelta split;
	int64		seq;
	TimestampTz ts;
	MemoryContext caller = CurrentMemoryContext;

	if (VARSIZE(event) > (Size) adk_max_event_size_kb * 1024)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("event is too large"),
				 errdetail("The event takes %zu bytes; \"adk.max_event_size\" allows %d kB.",
						   (Size) VARSIZE(event), adk_max_event_size_kb)));

	adk_event_check(event, &keys);
	memset(stored, 0, sizeof(*stored));
	if (keys.partial)
	{
		stored->event = adk_event_finish(event, &keys, 0, false);
		return;
	}

	ids[0] = CStringGetTextDatum(app);
	ids[1] = CStringGetTextDatum(user);
	ids[2] = CStringGetTextDatum(session);
	adk_event_state_delta(event, &split);

	adk_become_owner(&save);

	/* its place first, then the event built once with its final time */
	adk_place_event(ids, keys.proposed_time, &split, &seq, &ts);
	event = adk_event_finish(event, &keys, ts, split.had_temp);

	args[0] = CStringGetTextDatum(keys.id);
	args[1] = ids[0];
	args[2] = ids[1];
	args[3] = ids[2];
	args[4] = CStringGetTextDatum(keys.invocation_id);
	args[5] = TimestampTzGetDatum(ts);
	args[6] = JsonbPGetDatum(event);
	args[7] = Int64GetDatum(seq);

	/* straight into the partition, or by INSERT if it carries more */
	if (!adk_event_row_insert(args))
	{
		SPI_connect();
		if (insert_plan == NULL)
		{
			Oid			types[8] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID,
			TIMESTAMPTZOID, JSONBOID, INT8OID};

			insert_plan = SPI_prepare(INSERT_SQL, 8, types);
			if (insert_plan == NULL)
				elog(ERROR, "SPI_prepare failed: %s",
					 SPI_result_code_string(SPI_result));
			SPI_keepplan(insert_plan);
		}
		insert_placed(args, keys.id);
		SPI_finish();
	}
	stored->seq = seq;
	stored->time = ts;
	stored->event = event;
	adk_restore_user(&save);
	MemoryContextSwitchTo(caller);
	stored->id = pstrdup(keys.id);
	stored->invocation_id = pstrdup(keys.invocation_id);

	/* LISTEN adk_events sees it at commit; adk_cancel can find the run */
	adk_notify_event(app, user, session, stored->seq, stored->invocation_id,
					 stored->event);
	if (adk_current_invocation_id != NULL)
		adk_run_registry_note(adk_current_invocation_id);
}
