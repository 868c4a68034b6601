/*-------------------------------------------------------------------------
 *
 * event_trigger.c
 *	  BEFORE INSERT trigger on adk.events: the one place where an event
 *	  gets its place in its session.
 *
 * Every writer goes through here -- adk_append_event, the runner, and
 * other ADK runtimes (ADK-JS, ADK Python) pointed at our schema.  For each
 * new row the trigger
 *
 *	- locks the session row by updating it (the same lock ADK-JS takes with
 *	  SELECT ... FOR UPDATE), which serialises appends to one session;
 *	- assigns seq = last_seq + 1, so seq is dense and unique per session;
 *	- moves the timestamp to at least 1 ms past the session's last event,
 *	  truncated to whole milliseconds, and writes the same value, as epoch
 *	  milliseconds, into event_data.timestamp (ADK-JS orders by the column
 *	  in SQL and by the JSON value in memory; both must agree with seq);
 *	- advances sessions.update_time to the event time, never backwards;
 *	- applies actions.state_delta by scope with jsonb merges under the row
 *	  locks: unprefixed keys to the session, "app:" to adk.app_states,
 *	  "user:" to adk.user_states; "temp:" keys are removed from the stored
 *	  event.  Merging is idempotent, so writers that also apply the delta
 *	  themselves (ADK-JS) end in the same state;
 *	- derives what the event changes beyond its session row
 *	  (adk_event_derive): the run states of the interrupts it makes or
 *	  answers (adk._event_appended: a pending call is answered by a later
 *	  user response with its id, whoever wrote it, in any invocation), and
 *	  the range of a compaction event in adk.compactions
 *	  (adk._compaction_note), so every writer's appends count at once.
 *
 * It also refuses what would poison the session: a time outside years
 * 1..9999, an event nested deeper than ADK_MAX_JSON_DEPTH, a malformed
 * "partial" or "branch", an "app:" or "user:" state key with no name.
 *
 * A row that already carries its seq, inserted by the owner of the table
 * (or a superuser), is a restored one (pg_restore, pg_dump | psql): it is
 * stored exactly as it comes, with its seq, time and event_data, and moves
 * no session -- the sessions and the scoped states are restored from their
 * own tables.  Events are restored before sessions (pg_dump orders the
 * tables by name), so such a row does not need its session yet.  The
 * owner could disable the trigger anyway; any other writer's seq is
 * replaced as always.
 *
 * All SQL is prepared once per backend, uses schema-qualified operators and
 * runs with search_path pinned to pg_catalog, pg_temp (common/owner.c), so
 * the caller's search_path cannot change what it means.
 *
 * IDENTIFICATION
 *	  src/store/event_trigger.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "common/compat.h"
#include "common/jsonb_build.h"
#include "common/jsonb_util.h"
#include "common/owner.h"
#include "common/spi_plans.h"
#include "store/event.h"
#include "store/event_time.h"
#include "store/place.h"

PG_FUNCTION_INFO_V1(adk_events_before_insert);
PG_FUNCTION_INFO_V1(adk_next_event_time);
PG_FUNCTION_INFO_V1(adk_event_at);

/* Column numbers of adk.events (or one of its partitions), per relation. */
typedef struct EventCols
{
	Oid			relid;
	int			app_name;
	int			user_id;
	int			session_id;
	int			timestamp;
	int			event_data;
	int			seq;
	int			id;
	int			invocation_id;
	bool		on_shard;		/* a Citus shard of adk.events_p0 */
} EventCols;

static EventCols cols;
static SPIPlanPtr appended_plan = NULL;
static SPIPlanPtr compaction_plan = NULL;

static void lookup_cols(Relation rel);
static bool is_citus_shard(Relation rel);
static void bump_by_update(Datum *ids, TimestampTz proposed,
						   AdkStateDelta *split, int64 *seq, TimestampTz *ts,
						   bool on_shard);
pg_noreturn static void no_session(Datum *ids);
static Jsonb *event_at(Jsonb *event, TimestampTz ts);
static Jsonb *with_top_field(Jsonb *event, const char *key, int64 v);
static void check_scoped_keys(JsonbContainer *delta);
static Datum get_required(HeapTuple tuple, TupleDesc desc, int attnum);
static SPIPlanPtr prepare_plan(const char *sql, int nargs, Oid *types);
static void merge_scope_state(const char *function, int nkeys, Datum *keys,
							  Jsonb *delta, TimestampTz ts);
static Jsonb *rewrite_event_data(Jsonb *event, TimestampTz ts,
								 bool strip_temp);

/*
 * The session bump (sql/install/88_turn_statements.sql, run from its body
 * by adk_spi_call as the writer of the row): BUMP_LOCAL uses built-in
 * operators only, so a writer with table privileges (ADK-JS's role) needs
 * no EXECUTE on ours; BUMP_SHARD, on a Citus shard, uses the IMMUTABLE
 * adk._next_event_time instead of timestamptz + interval, which Citus
 * refuses on a column in an UPDATE.  They compute the same.
 */
#define BUMP_LOCAL "adk._place_event_bump"
#define BUMP_SHARD "adk._place_event_bump_shard"

/* The scoped states' merges (sql/install/88_turn_statements.sql) */
#define APP_MERGE "adk._merge_app_state"
#define USER_MERGE "adk._merge_user_state"

/* Set by adk_store_append for the one row it has placed itself. */
static const char *placed_event_id = NULL;

/*
 * adk_store_append has given this row its seq and time already (and built
 * its event_data in one pass): the trigger lets exactly that row through.
 */
void
adk_mark_placed(const char *event_id)
{
	placed_event_id = event_id;
}

Datum
adk_events_before_insert(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Relation	rel;
	TupleDesc	desc;
	HeapTuple	tuple;
	Datum		ids[3];
	bool		ts_null;
	bool		seq_null;
	Datum		given_seq;
	TimestampTz proposed;
	Jsonb	   *event;
	AdkStateDelta split;
	int64		seq;
	TimestampTz ts;
	int			attnums[3];
	Datum		values[3];
	bool		newnulls[3] = {false, false, false};
	int			guc_level;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		elog(ERROR, "adk_events_before_insert must be a BEFORE INSERT row trigger");

	rel = trigdata->tg_relation;
	desc = RelationGetDescr(rel);
	tuple = trigdata->tg_trigtuple;
	lookup_cols(rel);

	if (placed_event_id != NULL)
	{
		const char *placed = placed_event_id;
		bool		isnull;
		Datum		id;

		placed_event_id = NULL;
		id = heap_getattr(tuple, SPI_fnumber(desc, "id"), desc, &isnull);
		(void) heap_getattr(tuple, cols.seq, desc, &ts_null);
		if (!isnull && !ts_null && strcmp(TextDatumGetCString(id), placed) == 0)
			return PointerGetDatum(tuple);
	}

	/* a restored row keeps its place (see the file header) */
	given_seq = heap_getattr(tuple, cols.seq, desc, &seq_null);
	if (!seq_null && adk_class_ownercheck(RelationGetRelid(rel), GetUserId()))
	{
		if (DatumGetInt64(given_seq) < 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("seq of an ADK event must be positive")));
		return PointerGetDatum(tuple);
	}

	ids[0] = get_required(tuple, desc, cols.app_name);
	ids[1] = get_required(tuple, desc, cols.user_id);
	ids[2] = get_required(tuple, desc, cols.session_id);
	event = DatumGetJsonbP(get_required(tuple, desc, cols.event_data));
	if (!adk_jsonb_is_object(&event->root))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("event_data must be a JSON object")));
	adk_event_check_fields(event);

	proposed = DatumGetTimestampTz(heap_getattr(tuple, cols.timestamp, desc,
												&ts_null));
	if (ts_null)
		proposed = GetCurrentTimestamp();
	adk_check_event_time(proposed);

	adk_event_state_delta(event, &split);

	/*
	 * Whoever writes the row (another runtime, perhaps a privileged role),
	 * the trigger's SQL runs with search_path pinned, as the owner's does.
	 */
	guc_level = adk_pin_search_path();
	if (cols.on_shard)
	{
		/*
		 * On a Citus shard the session bump is routed to the colocated
		 * session shard (Citus lets a shard's trigger reach colocated
		 * shards); the app: and user: scopes live in reference tables,
		 * which only the coordinator writes (adk_store_append does; other
		 * runtimes merge them themselves).
		 */
		bump_by_update(ids, proposed, &split, &seq, &ts, true);
	}
	else
		adk_place_event(ids, proposed, &split, &seq, &ts);
	adk_unpin_search_path(guc_level);

	attnums[0] = cols.seq;
	attnums[1] = cols.timestamp;
	attnums[2] = cols.event_data;
	values[0] = Int64GetDatum(seq);
	values[1] = TimestampTzGetDatum(ts);
	event = rewrite_event_data(event, ts, split.had_temp);
	values[2] = JsonbPGetDatum(event);
	if (!cols.on_shard)
	{
		/*
		 * On a Citus shard the derived tables are not at hand: what
		 * adk_store_append appends is derived on the coordinator.
		 */
		bool		isnull;
		Datum		inv = heap_getattr(tuple, cols.invocation_id, desc, &isnull);

		adk_event_derive(ids, seq, ts, get_required(tuple, desc, cols.id),
						 isnull ? (Datum) 0 : inv, event);
	}

	return PointerGetDatum(heap_modify_tuple_by_cols(tuple, desc, 3, attnums,
													 values, newnulls));
}

/*
 * adk._next_event_time(last, proposed): the time an event gets -- the
 * proposed time truncated to whole milliseconds, but at least 1 ms after
 * the session's last event (last NULL: no event yet).  Plain microsecond
 * arithmetic, no time zone: IMMUTABLE, where "+ interval" is only STABLE,
 * so Citus can evaluate it on a shard with a column argument.
 */
Datum
adk_next_event_time(PG_FUNCTION_ARGS)
{
	TimestampTz result;

	if (PG_ARGISNULL(1) && PG_ARGISNULL(0))
		PG_RETURN_NULL();
	result = PG_ARGISNULL(1) ? DT_NOBEGIN :
		adk_truncate_to_ms(PG_GETARG_TIMESTAMPTZ(1));
	if (!PG_ARGISNULL(0) && !TIMESTAMP_NOT_FINITE(PG_GETARG_TIMESTAMPTZ(0)) &&
		PG_GETARG_TIMESTAMPTZ(0) + 1000 > result)
		result = PG_GETARG_TIMESTAMPTZ(0) + 1000;
	PG_RETURN_TIMESTAMPTZ(result);
}

/*
 * adk._event_at(event_data, time): event_data with "timestamp" set to
 * time in epoch milliseconds, as ADK writes it.
 */
Datum
adk_event_at(PG_FUNCTION_ARGS)
{
	PG_RETURN_JSONB_P(event_at(PG_GETARG_JSONB_P(0), PG_GETARG_TIMESTAMPTZ(1)));
}

/*
 * event with "timestamp" set to ts in epoch milliseconds.  adk_store_append
 * builds the event with the time it proposes, which is the time it gets
 * unless the session's last event is as late: then the event is returned
 * as it is, not rebuilt.  "As it is" means the same bytes a rebuild would
 * give (an integer numeric of the same digits, no scale).
 */
static Jsonb *
event_at(Jsonb *event, TimestampTz ts)
{
	int64		ms = adk_timestamp_to_epoch_ms(ts);
	JsonbValue *cur = adk_jsonb_get(&event->root, "timestamp");

	if (cur != NULL && cur->type == jbvNumeric)
	{
		Numeric		want = int64_to_numeric(ms);

		if (VARSIZE_ANY(cur->val.numeric) == VARSIZE_ANY(want) &&
			memcmp(VARDATA_ANY(cur->val.numeric), VARDATA_ANY(want),
				   VARSIZE_ANY_EXHDR(want)) == 0)
			return event;
	}
	return with_top_field(event, "timestamp", ms);
}

/*
 * event (an object) with the top-level field key set to the integer v:
 * the same jsonb as event || {key: v}, built from the top-level fields
 * with the nested values' bytes copied (common/jsonb_build.c) instead of
 * decoding and encoding all of them.
 */
static Jsonb *
with_top_field(Jsonb *event, const char *key, int64 v)
{
	AdkJsonbField *f;
	int			n = 0;
	JsonbIterator *it;
	JsonbIteratorToken tok;
	JsonbValue	k;
	JsonbValue	val;

	if (!JB_ROOT_IS_OBJECT(event))
		return adk_jsonb_concat(event, adk_jsonb_one_int(key, v));
	f = palloc((JB_ROOT_COUNT(event) + 1) * sizeof(AdkJsonbField));
	it = JsonbIteratorInit(&event->root);
	while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE)
	{
		if (tok != WJB_KEY)
			continue;
		(void) JsonbIteratorNext(&it, &val, true);
		f[n].key = k.val.string.val;
		f[n].keylen = k.val.string.len;
		f[n].value = val;
		n++;
	}
	/* the last of equal keys wins */
	f[n].key = key;
	f[n].keylen = strlen(key);
	f[n].value.type = jbvNumeric;
	f[n].value.val.numeric = int64_to_numeric(v);
	n++;
	return adk_jsonb_build_object(f, n);
}

/*
 * actions.state_delta of an event, split by scope.
 */
void
adk_event_state_delta(Jsonb *event, AdkStateDelta *split)
{
	JsonbValue *actions = adk_jsonb_get(&event->root, "actions");
	JsonbValue *delta = (actions && actions->type == jbvBinary) ?
		adk_jsonb_get(actions->val.binary.data, "state_delta") : NULL;

	if (delta && delta->type == jbvBinary)
	{
		check_scoped_keys(delta->val.binary.data);
		adk_split_state_delta(delta->val.binary.data, split);
	}
	else
		memset(split, 0, sizeof(*split));
}

/*
 * An "app:" or "user:" key must name something after its prefix.
 */
static void
check_scoped_keys(JsonbContainer *delta)
{
	JsonbIterator *it;
	JsonbIteratorToken tok;
	JsonbValue	k;

	if (!JsonContainerIsObject(delta))
		return;
	it = JsonbIteratorInit(delta);
	while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE)
	{
		if (tok != WJB_KEY)
			continue;
		if ((k.val.string.len == 4 && memcmp(k.val.string.val, "app:", 4) == 0) ||
			(k.val.string.len == 5 && memcmp(k.val.string.val, "user:", 5) == 0))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("state key \"%.*s\" has no name after its prefix",
							k.val.string.len, k.val.string.val)));
	}
}

/*
 * Give an event its place in the session ids = (app, user, session):
 * lock and bump the session row (seq, time at least 1 ms past the last
 * event, update_time, the session-scope state), merge the app: and user:
 * scopes.  Fills *seq and *ts.
 */
void
adk_place_event(Datum *ids, TimestampTz proposed, AdkStateDelta *split,
				int64 *seq, TimestampTz *ts)
{
	bump_by_update(ids, proposed, split, seq, ts, false);
	adk_merge_scope_states(ids, split, *ts);
}

/*
 * 1 ms past the last event may be past the last time an event may have.
 */
void
adk_check_placed_time(TimestampTz ts)
{
	if (!adk_event_time_in_range(ts))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("event time is out of range"),
				 errdetail("An event is placed at least 1 ms after the session's last event, and no event may be later than 9999-12-31 23:59:59.999 UTC.")));
}

/*
 * Merge the app: and user: scopes of a delta into adk.app_states and
 * adk.user_states, at time ts (under the session row lock).
 */
void
adk_merge_scope_states(Datum *ids, AdkStateDelta *split, TimestampTz ts)
{
	if (split->app || split->user)
	{
		SPI_connect();
		if (split->app)
			merge_scope_state(APP_MERGE, 1, ids, split->app, ts);
		if (split->user)
			merge_scope_state(USER_MERGE, 2, ids, split->user, ts);
		SPI_finish();
	}
}

#define APPENDED_SQL \
	"SELECT adk._event_appended($1, $2, $3, pg_catalog.jsonb_build_object('seq', $4, 'id', $5, 'invocation_id', $6, 'timestamp', $7, 'event_data', $8))"
#define COMPACTION_NOTE_SQL \
	"SELECT adk._compaction_note($1, $2, $3, pg_catalog.jsonb_build_object('seq', $4, 'id', $5, 'invocation_id', $6, 'timestamp', $7, 'event_data', $8))"

/*
 * Whether an event makes or answers an interrupt: an agent's event with
 * long_running_tool_ids, or a user's event with a function response; or
 * finishes a node (node_info.output_for), whose run_states row an
 * invocation that paused has (sql/install/62_hitl.sql).
 */
static bool
touches_interrupts(Jsonb *event)
{
	JsonbValue *author = adk_jsonb_get(&event->root, "author");
	bool		user = author != NULL && author->type == jbvString &&
		author->val.string.len == 4 && memcmp(author->val.string.val, "user", 4) == 0;
	JsonbValue *v;

	v = adk_jsonb_get(&event->root, "node_info");
	if (v != NULL && v->type == jbvBinary &&
		adk_jsonb_get(v->val.binary.data, "output_for") != NULL)
		return true;
	if (!user)
	{
		v = adk_jsonb_get(&event->root, "long_running_tool_ids");
		return v != NULL && v->type == jbvBinary &&
			JsonContainerIsArray(v->val.binary.data) &&
			JsonContainerSize(v->val.binary.data) > 0;
	}
	v = adk_jsonb_get(&event->root, "content");
	if (v == NULL || v->type != jbvBinary ||
		(v = adk_jsonb_get(v->val.binary.data, "parts")) == NULL ||
		v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
		return false;
	{
		JsonbIterator *it = JsonbIteratorInit(v->val.binary.data);
		JsonbValue	part;
		JsonbIteratorToken tok;

		while ((tok = JsonbIteratorNext(&it, &part, true)) != WJB_DONE)
			if (tok == WJB_ELEM && part.type == jbvBinary &&
				adk_jsonb_get(part.val.binary.data, "function_response") != NULL)
				return true;
	}
	return false;
}

/*
 * What an event changes beyond its session row, derived as it is
 * appended, whoever appends it (the trigger, or adk_store_append for the
 * rows it places itself): the run states of the interrupts it makes or
 * answers, and the range of a compaction event.  Runs as the owner of
 * schema adk; a cheap look at the event first, so most appends run no
 * statement here.
 */
void
adk_event_derive(Datum *ids, int64 seq, TimestampTz ts, Datum event_id,
				 Datum invocation_id, Jsonb *event)
{
	JsonbValue *actions = adk_jsonb_get(&event->root, "actions");
	JsonbValue *compacted = adk_jsonb_get(&event->root, "is_compacted");
	bool		compaction = (actions != NULL && actions->type == jbvBinary &&
							  adk_jsonb_get(actions->val.binary.data, "compaction") != NULL) ||
		(compacted != NULL && compacted->type == jbvBool && compacted->val.boolean);
	bool		interrupts = touches_interrupts(event);
	Oid			types[8] = {TEXTOID, TEXTOID, TEXTOID, INT8OID, TEXTOID, TEXTOID,
	TIMESTAMPTZOID, JSONBOID};
	Datum		args[8];
	char		nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	AdkOwnerSave save;

	if (!compaction && !interrupts)
		return;
	args[0] = ids[0];
	args[1] = ids[1];
	args[2] = ids[2];
	args[3] = Int64GetDatum(seq);
	args[4] = event_id;
	args[5] = invocation_id;
	if (invocation_id == (Datum) 0)
		nulls[5] = 'n';
	args[6] = TimestampTzGetDatum(ts);
	args[7] = JsonbPGetDatum(event);

	adk_owner_spi_begin(&save);
	if (interrupts)
	{
		if (appended_plan == NULL)
			appended_plan = prepare_plan(APPENDED_SQL, 8, types);
		if (SPI_execute_plan(appended_plan, args, nulls, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not update adk.run_states");
	}
	if (compaction)
	{
		if (compaction_plan == NULL)
			compaction_plan = prepare_plan(COMPACTION_NOTE_SQL, 8, types);
		if (SPI_execute_plan(compaction_plan, args, nulls, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not record the compaction");
	}
	adk_owner_spi_end(&save);
}

/*
 * The session bump: one UPDATE ... RETURNING, prepared once per backend.
 */
static void
bump_by_update(Datum *ids, TimestampTz proposed, AdkStateDelta *split,
			   int64 *seq, TimestampTz *ts, bool on_shard)
{
	Datum		args[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};
	bool		isnull;

	SPI_connect();
	args[0] = ids[0];
	args[1] = ids[1];
	args[2] = ids[2];
	args[3] = TimestampTzGetDatum(adk_truncate_to_ms(proposed));
	args[4] = split->session ? JsonbPGetDatum(split->session) : (Datum) 0;
	if (split->session == NULL)
		nulls[4] = 'n';
	if (adk_spi_call(on_shard ? BUMP_SHARD : BUMP_LOCAL, 5, args, nulls, 0) !=
		SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not update adk.sessions");
	if (SPI_processed != 1)
		no_session(ids);
	*seq = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
									   SPI_tuptable->tupdesc, 1, &isnull));
	*ts = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0],
											SPI_tuptable->tupdesc, 2, &isnull));
	SPI_finish();
	adk_check_placed_time(*ts);
}

static void
no_session(Datum *ids)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("session \"%s\" does not exist for app \"%s\" and user \"%s\"",
					TextDatumGetCString(ids[2]),
					TextDatumGetCString(ids[0]),
					TextDatumGetCString(ids[1]))));
}

/*
 * Find the columns we read and write, once per relation.
 */
static void
lookup_cols(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);

	if (cols.relid == RelationGetRelid(rel))
		return;

	cols.app_name = SPI_fnumber(desc, "app_name");
	cols.user_id = SPI_fnumber(desc, "user_id");
	cols.session_id = SPI_fnumber(desc, "session_id");
	cols.timestamp = SPI_fnumber(desc, "timestamp");
	cols.event_data = SPI_fnumber(desc, "event_data");
	cols.seq = SPI_fnumber(desc, "seq");
	cols.id = SPI_fnumber(desc, "id");
	cols.invocation_id = SPI_fnumber(desc, "invocation_id");
	if (cols.app_name <= 0 || cols.user_id <= 0 || cols.session_id <= 0 ||
		cols.timestamp <= 0 || cols.event_data <= 0 || cols.seq <= 0 ||
		cols.id <= 0 || cols.invocation_id <= 0)
		elog(ERROR, "relation \"%s\" does not have the columns of adk.events",
			 RelationGetRelationName(rel));
	cols.on_shard = is_citus_shard(rel);
	cols.relid = RelationGetRelid(rel);
}

/*
 * Whether rel is a shard of adk.events_p0 that Citus placed on this node:
 * named events_p0_<shard id> in schema adk, and listed in pg_dist_shard.
 */
static bool
is_citus_shard(Relation rel)
{
	const char *name = RelationGetRelationName(rel);
	const char *digits = name + strlen("events_p0_");
	bool		result = false;
	Oid			argtypes[1] = {INT8OID};
	Datum		args[1];
	AdkOwnerSave save;

	if (GetConfigOption("citus.version", true, false) == NULL ||
		!OidIsValid(get_relname_relid("pg_dist_shard", PG_CATALOG_NAMESPACE)) ||
		strncmp(name, "events_p0_", strlen("events_p0_")) != 0 ||
		*digits == '\0' || strspn(digits, "0123456789") != strlen(digits) ||
		strlen(digits) > 18)
		return false;
	args[0] = Int64GetDatum(strtoi64(digits, NULL, 10));
	adk_owner_spi_begin(&save);
	/* sql/install/88_store_statements.sql */
	if (adk_spi_exec("SELECT adk._events_shard($1)",
					 1, argtypes, args, NULL, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
	{
		bool		isnull;

		result = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
											SPI_tuptable->tupdesc, 1, &isnull));
	}
	adk_owner_spi_end(&save);
	return result;
}

static Datum
get_required(HeapTuple tuple, TupleDesc desc, int attnum)
{
	bool		isnull;
	Datum		d = heap_getattr(tuple, attnum, desc, &isnull);

	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("null value in column \"%s\" of an ADK event",
						NameStr(TupleDescAttr(desc, attnum - 1)->attname))));
	return d;
}

static SPIPlanPtr
prepare_plan(const char *sql, int nargs, Oid *types)
{
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, types);

	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	SPI_keepplan(plan);
	return plan;
}

/*
 * Merge an "app:" (nkeys = 1) or "user:" (nkeys = 2) delta into its table.
 */
static void
merge_scope_state(const char *function, int nkeys, Datum *keys, Jsonb *delta,
				  TimestampTz ts)
{
	Datum		args[4];
	int			i;

	for (i = 0; i < nkeys; i++)
		args[i] = keys[i];
	args[nkeys] = JsonbPGetDatum(delta);
	args[nkeys + 1] = TimestampTzGetDatum(ts);
	if (adk_spi_call(function, nkeys + 2, args, NULL, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not merge scoped state");
}

/*
 * event_data with "timestamp" set to the final time, and "temp:" keys
 * removed from actions.state_delta when there were any.
 */
static Jsonb *
rewrite_event_data(Jsonb *event, TimestampTz ts, bool strip_temp)
{
	Jsonb	   *result;

	result = event_at(event, ts);
	if (strip_temp)
	{
		JsonbValue *actions = adk_jsonb_get(&result->root, "actions");
		JsonbValue *delta = adk_jsonb_get(actions->val.binary.data,
										  "state_delta");
		Jsonb	   *clean = adk_jsonb_without_temp(delta->val.binary.data);
		JsonbValue	cv;
		Jsonb	   *new_actions;
		JsonbValue	av;

		cv.type = jbvBinary;
		cv.val.binary.data = &clean->root;
		cv.val.binary.len = VARSIZE(clean) - VARHDRSZ;
		new_actions = adk_jsonb_concat(JsonbValueToJsonb(actions),
									   adk_jsonb_one_value("state_delta", &cv));
		av.type = jbvBinary;
		av.val.binary.data = &new_actions->root;
		av.val.binary.len = VARSIZE(new_actions) - VARHDRSZ;
		result = adk_jsonb_concat(result, adk_jsonb_one_value("actions", &av));
	}
	return result;
}
