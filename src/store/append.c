/*-------------------------------------------------------------------------
 *
 * append.c
 *	  adk_append_event(app_name, user_id, session_id, event jsonb): store
 *	  one event in a session and return it as stored.
 *
 * The function validates the identities and the event, fills in what ADK
 * would (store/event.c), and stores it with one statement that bumps the
 * session row and inserts the event row (adk._append_event_unheld, in
 * sql/install/88_turn_statements.sql: only while no queued run holds the
 * session; otherwise it waits for the run as adk_run does, and then
 * adk._append_event_row, which the runner uses too), by the same rules
 * the events trigger (store/event_trigger.c) applies to every other
 * writer: the trigger lets exactly this row through, so the event is
 * placed once.  A partial event is returned without being stored, as
 * ADK's session services do.
 *
 * IDENTIFICATION
 *	  src/store/append.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "tcop/utility.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "common/ids.h"
#include "common/jsonb_util.h"
#include "common/owner.h"
#include "common/spi_plans.h"
#include "store/append.h"
#include "store/event.h"
#include "store/event_time.h"
#include "store/notify.h"
#include "store/place.h"
#include "store/session_read.h"
#include "store/tenancy.h"

PG_FUNCTION_INFO_V1(adk_append_event);

/* GUC adk.max_event_size (settings.c), in kB */
int			adk_max_event_size_kb = 10 * 1024;

static SPIPlanPtr insert_plan = NULL;
static SPIPlanPtr distributed_plan = NULL;
static SPIPlanPtr layout_plan = NULL;

static Jsonb *mark_appended_by(Jsonb *event);
static TimestampTz predicted_time(const char *app, const char *user,
								  const char *session, TimestampTz proposed);
static void remember_placed(const char *app, const char *user,
							const char *session, TimestampTz ts);
static void store_append(const char *app, const char *user,
						 const char *session, Jsonb *event,
						 AdkStoredEvent *stored, bool unheld);

/*
 * The session this backend last placed an event in, and that event's time.
 * The next event appended to it is built with the time it will get (1 ms
 * later, unless it proposes a later one), so adk._event_at finds nothing to
 * change in it.  Only a guess: when another writer's event came in between
 * (or the transaction rolled back), adk._event_at sets the time the event
 * does get, as it would without a guess.
 */
static struct
{
	char	   *app;
	char	   *user;
	char	   *session;
	TimestampTz time;
}			last_placed;

/*
 * How an event is stored (all three are statements the executor runs):
 *
 *	- ONE_STATEMENT: adk._append_event_row bumps the session row and inserts
 *	  the event row in one statement.
 *	- TWO_STATEMENTS: the session bump (adk_place_event), then INSERT_SQL;
 *	  for when adk.events_p0 has a rule, which a statement with WITH cannot
 *	  be rewritten by.
 *	- DISTRIBUTED: Citus manages adk.events.  DISTRIBUTED_SQL inserts the
 *	  row without a seq; the events trigger on the shard places it in the
 *	  colocated session shard, once; the app: and user: scopes are merged
 *	  here, on the coordinator (a shard's trigger cannot write reference
 *	  tables).
 *
 * In the first two the events trigger lets exactly this row through
 * (adk_mark_placed): it has its place already.
 */
typedef enum AppendPath
{
	ONE_STATEMENT,
	TWO_STATEMENTS,
	DISTRIBUTED
} AppendPath;

/*
 * The one statement (sql/install/88_turn_statements.sql, run from its body
 * by adk_spi_call): $1-$3 app, user, session; $4 the proposed time; $5
 * the session-scope delta or NULL; $6 event id; $7 invocation id; $8
 * event_data without its final timestamp.
 */
#define APPEND_FUNCTION "adk._append_event_row"

/*
 * adk_append_event's: the same, but it writes nothing (and locks nothing)
 * while a queued run holds the session (a job of it 'running' in another
 * process).
 */
#define APPEND_UNHELD_FUNCTION "adk._append_event_unheld"

/*
 * The other two paths' statements and the layout check are functions
 * (sql/install/88_store_statements.sql).  Each returns the stored row's
 * seq, time and event_data, no row without the session.  $1-$3 app, user,
 * session; INSERT_SQL: $4 id, $5 invocation id, $6 time, $7 event, $8 seq;
 * DISTRIBUTED_SQL: $4 id, $5 invocation id, $6 proposed time, $7 event.
 */
#define INSERT_SQL \
	"SELECT * FROM adk._insert_event_row($1, $2, $3, $4, $5, $6, $7, $8)"
#define DISTRIBUTED_SQL \
	"SELECT * FROM adk._insert_distributed_event($1, $2, $3, $4, $5, $6, $7)"

/* Citus manages adk.sessions or adk.events; and in the layout we support */
#define LAYOUT_SQL "SELECT * FROM adk._citus_events_layout()"

static SPIPlanPtr
keep_plan(SPIPlanPtr *plan, const char *sql, int nargs, Oid *types)
{
	if (*plan == NULL)
	{
		/* generic, as common/spi_plans.c's: the same plan for every row */
		SPIPlanPtr	p = SPI_prepare_cursor(sql, nargs, types,
										   CURSOR_OPT_GENERIC_PLAN);

		if (p == NULL)
			elog(ERROR, "SPI_prepare failed: %s",
				 SPI_result_code_string(SPI_result));
		SPI_keepplan(p);
		*plan = p;
	}
	return *plan;
}

/*
 * Whether Citus manages adk.events (in the layout of adk_distribute(); any
 * other is an error, never a write to where no read looks).  Without Citus
 * loaded in this backend (no "citus.version" setting) that is one lookup
 * of a setting; without the citus extension in this database, one of the
 * catalog cache.  SPI is connected.
 */
static bool
events_distributed(void)
{
	bool		isnull;

	if (GetConfigOption("citus.version", true, false) == NULL ||
		!OidIsValid(get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE)))
		return false;
	if (SPI_execute_plan(keep_plan(&layout_plan, LAYOUT_SQL, 0, NULL),
						 NULL, NULL, true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not read the Citus layout of adk.events");
	if (!DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
									SPI_tuptable->tupdesc, 1, &isnull)))
		return false;
	if (!DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
									SPI_tuptable->tupdesc, 2, &isnull)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("Citus manages adk.sessions or adk.events in a layout adk_runner does not support"),
				 errdetail("Events must be distributed by session_id, colocated with sessions distributed by id."),
				 errhint("SELECT adk_undistribute(), then SELECT adk_distribute().")));
	return true;
}

static AppendPath
append_path(void)
{
	Relation	rel;
	bool		has_rules;

	if (events_distributed())
		return DISTRIBUTED;
	/* the lock the INSERT takes anyway; relhasrules stays set after DROP RULE */
	rel = table_open(get_relname_relid("events_p0",
									   get_namespace_oid("adk", false)),
					 RowExclusiveLock);
	has_rules = (rel->rd_rules != NULL);
	table_close(rel, NoLock);
	return has_rules ? TWO_STATEMENTS : ONE_STATEMENT;
}

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
	/* before the session's wait and lock below, which would say less */
	PreventCommandIfReadOnly("adk_append_event");
	adk_tenancy_check(app, user);
	if (JB_ROOT_IS_OBJECT(event))
	{
		JsonbValue *actions = adk_jsonb_get(&event->root, "actions");
		JsonbValue *delta;

		if (actions != NULL && actions->type == jbvBinary &&
			JsonContainerIsObject(actions->val.binary.data) &&
			(delta = adk_jsonb_get(actions->val.binary.data, "state_delta")) != NULL &&
			delta->type == jbvBinary && JsonContainerIsObject(delta->val.binary.data))
			adk_tenancy_check_app_state(app, JsonbValueToJsonb(delta));
	}
	if (!adk_tenancy_trusted_append(app))
		event = mark_appended_by(event);
	/* a queued run's turn is not interrupted: wait for it, as adk_run does */
	adk_store_append_unheld(app, user, session, event, &stored);
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
 * Run a statement that stores event_id -- plan, or else the body of
 * function: the events trigger lets exactly this row through (and forgets
 * it on any error).
 */
static void
run_placed(SPIPlanPtr plan, const char *function, Datum *args, char *nulls,
		   const char *event_id)
{
	adk_mark_placed(event_id);
	PG_TRY();
	{
		int			rc = plan ? SPI_execute_plan(plan, args, nulls, false, 0) :
			adk_spi_call(function, 8, args, nulls, 0);

		if (rc != SPI_OK_INSERT_RETURNING && rc != SPI_OK_SELECT)
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
	store_append(app, user, session, event, stored, false);
}

/*
 * The same for a writer that does not hold the session row lock yet
 * (adk_append_event): a queued run's turn is not interrupted -- the
 * event waits for it, as adk_run does (adk_session_lock_unheld).  When no
 * job holds the session, the one statement that stores the event sees so
 * and takes the lock itself.
 */
void
adk_store_append_unheld(const char *app, const char *user,
						const char *session, Jsonb *event,
						AdkStoredEvent *stored)
{
	store_append(app, user, session, event, stored, true);
}

/*
 * Leave SPI and the owner's role, wait until no queued run holds the
 * session and take its row lock (adk_session_lock_unheld), and come back.
 */
static void
wait_unheld(const char *app, const char *user, const char *session,
			AdkOwnerSave *save)
{
	SPI_finish();
	adk_restore_user(save);
	(void) adk_session_lock_unheld(app, user, session);
	adk_become_owner(save);
	SPI_connect();
}

static void
store_append(const char *app, const char *user, const char *session,
			 Jsonb *event, AdkStoredEvent *stored, bool unheld)
{
	AdkEventKeys keys;
	AdkOwnerSave save;
	Datum		args[8];
	char		nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	AdkStateDelta split;
	int64		seq;
	TimestampTz ts;
	bool		isnull;
	AppendPath	path;
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

	adk_event_state_delta(event, &split);
	/*
	 * With the time it is likely to get (predicted_time): the statement
	 * sets the time it does get, and leaves the event as it is when that is
	 * the same (adk._event_at).
	 */
	event = adk_event_finish(event, &keys,
							 predicted_time(app, user, session, keys.proposed_time),
							 split.had_temp);

	args[0] = CStringGetTextDatum(app);
	args[1] = CStringGetTextDatum(user);
	args[2] = CStringGetTextDatum(session);
	args[3] = TimestampTzGetDatum(keys.proposed_time);
	args[4] = split.session ? JsonbPGetDatum(split.session) : (Datum) 0;
	if (split.session == NULL)
		nulls[4] = 'n';
	args[5] = CStringGetTextDatum(keys.id);
	args[6] = CStringGetTextDatum(keys.invocation_id);
	args[7] = JsonbPGetDatum(event);

	adk_become_owner(&save);
	SPI_connect();
	path = append_path();
	if (path == ONE_STATEMENT && unheld)
	{
		run_placed(NULL, APPEND_UNHELD_FUNCTION, args, nulls, keys.id);
		/* a queued run holds the session (or there is no session) */
		if (SPI_processed == 0)
		{
			wait_unheld(app, user, session, &save);
			run_placed(NULL, APPEND_FUNCTION, args, nulls, keys.id);
		}
	}
	else if (path == ONE_STATEMENT)
		run_placed(NULL, APPEND_FUNCTION, args, nulls, keys.id);
	else
	{
		Oid			types[8] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID,
		TIMESTAMPTZOID, JSONBOID, INT8OID};
		Datum		iargs[8];

		if (unheld)
			wait_unheld(app, user, session, &save);

		iargs[0] = args[0];
		iargs[1] = args[1];
		iargs[2] = args[2];
		iargs[3] = args[5];
		iargs[4] = args[6];
		iargs[6] = args[7];
		if (path == TWO_STATEMENTS)
		{
			adk_place_event(args, keys.proposed_time, &split, &seq, &ts);
			iargs[5] = TimestampTzGetDatum(ts);
			iargs[7] = Int64GetDatum(seq);
			run_placed(keep_plan(&insert_plan, INSERT_SQL, 8, types), NULL,
					   iargs, NULL, keys.id);
		}
		else
		{
			iargs[5] = TimestampTzGetDatum(keys.proposed_time);
			if (SPI_execute_plan(keep_plan(&distributed_plan, DISTRIBUTED_SQL,
										   7, types),
								 iargs, NULL, false, 0) != SPI_OK_SELECT)
				elog(ERROR, "could not insert into adk.events");
		}
	}
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("session \"%s\" does not exist for app \"%s\" and user \"%s\"",
						session, app, user)));
	seq = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
									  SPI_tuptable->tupdesc, 1, &isnull));
	ts = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 2, &isnull));
	event = DatumGetJsonbP(SPI_datumTransfer(SPI_getbinval(SPI_tuptable->vals[0],
														   SPI_tuptable->tupdesc,
														   3, &isnull),
											 false, -1));
	SPI_finish();
	adk_check_placed_time(ts);
	remember_placed(app, user, session, ts);
	/* adk_place_event merged them already */
	if (path != TWO_STATEMENTS)
		adk_merge_scope_states(args, &split, ts);

	stored->seq = seq;
	stored->time = ts;
	stored->event = event;
	/* run states, compaction ranges: as the trigger does for other rows */
	adk_event_derive(args, seq, ts, args[5], args[6], event);
	adk_restore_user(&save);
	MemoryContextSwitchTo(caller);
	stored->id = pstrdup(keys.id);
	stored->invocation_id = pstrdup(keys.invocation_id);

	/* LISTEN adk_events sees it at commit */
	adk_notify_event(app, user, session, stored->seq, stored->invocation_id,
					 stored->event);
}

/*
 * The time adk._next_event_time will give an event proposing "proposed",
 * if the session's last event is the one this backend placed last.
 */
static TimestampTz
predicted_time(const char *app, const char *user, const char *session,
			   TimestampTz proposed)
{
	TimestampTz t = adk_truncate_to_ms(proposed);

	if (last_placed.session != NULL &&
		strcmp(last_placed.session, session) == 0 &&
		strcmp(last_placed.user, user) == 0 &&
		strcmp(last_placed.app, app) == 0 &&
		last_placed.time + 1000 > t)
		t = last_placed.time + 1000;
	return t;
}

static void
remember_placed(const char *app, const char *user, const char *session,
				TimestampTz ts)
{
	if (last_placed.session == NULL ||
		strcmp(last_placed.session, session) != 0 ||
		strcmp(last_placed.user, user) != 0 ||
		strcmp(last_placed.app, app) != 0)
	{
		if (last_placed.session != NULL)
		{
			pfree(last_placed.app);
			pfree(last_placed.user);
			pfree(last_placed.session);
		}
		last_placed.app = MemoryContextStrdup(TopMemoryContext, app);
		last_placed.user = MemoryContextStrdup(TopMemoryContext, user);
		last_placed.session = MemoryContextStrdup(TopMemoryContext, session);
	}
	last_placed.time = ts;
}
