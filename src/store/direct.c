/*-------------------------------------------------------------------------
 *
 * direct.c
 *	  Our three hottest writes -- bump the session row and insert the event
 *	  row of every append, insert the ledger row of every model call --
 *	  done through the table and index access methods instead of UPDATE
 *	  and INSERT statements.
 *
 * For one row, the statements cost more than the work: executor start-up
 * and shutdown, a call of our own trigger (which for our rows does
 * nothing), the hash-partition check on a partition that takes every row.
 * So while a table carries nothing else a statement would have to run, we
 * write its heap tuple and index entries ourselves, as logical
 * replication's apply worker does (executor/execReplication.c):
 *
 *	- no trigger for the operation other than our own, no rule;
 *	- no CHECK constraint, no generated column, no row security;
 *	- the columns we fill have the types we fill them with; every other
 *	  column gets its default (identity, now(), ...) evaluated as an INSERT
 *	  would, or NULL, and NOT NULL is enforced;
 *	- a partition (sessions, events) is the one partition of its table,
 *	  WITH (MODULUS 1, REMAINDER 0); the ledger is a plain table.
 *
 * If someone adds a trigger or a constraint, or changes a column's type,
 * the table is no longer eligible and the caller falls back to the
 * statement, so whatever was added still runs.  In a read-only
 * transaction, in parallel mode and during recovery the statement runs
 * too, and raises what it must.  Whether a table is eligible is cached, and
 * forgotten at any relcache invalidation of it (CREATE TRIGGER, ALTER
 * TABLE and ATTACH PARTITION all send one).
 *
 * The session bump keeps the statement's concurrency behaviour: it finds
 * the row with the statement's snapshot, locks it (waiting for a writer
 * that holds it), and at READ COMMITTED moves on to the newest version as
 * an UPDATE's EvalPlanQual would; at REPEATABLE READ and above a row
 * updated since the snapshot is a serialization failure (40001).  The new
 * values are computed from the locked version, so seq stays dense.
 *
 * Column types need no coercion: ids are checked against the columns'
 * varchar limits before they get here (common/ids.c).
 *
 * IDENTIFICATION
 *	  src/store/direct.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "nodes/parsenodes.h"
#include "optimizer/optimizer.h"
#include "parser/parse_func.h"
#include "rewrite/rewriteHandler.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "adk_runner.h"
#include "common/compat.h"
#include "store/direct.h"

#define ONE_MS	INT64CONST(1000)

/* The columns of adk.events_p0 we fill, in the order of the values. */
static const char *const event_columns[ADK_EVENT_ROW_COLUMNS] = {
	"id", "app_name", "user_id", "session_id", "invocation_id",
	"timestamp", "event_data", "seq"
};
static const Oid event_types[ADK_EVENT_ROW_COLUMNS] = {
	VARCHAROID, VARCHAROID, VARCHAROID, VARCHAROID, VARCHAROID,
	TIMESTAMPTZOID, JSONBOID, INT8OID
};

/* The columns of adk.model_calls we fill, in the order of the values. */
static const char *const ledger_columns[ADK_LEDGER_ROW_COLUMNS] = {
	"model", "provider", "url", "invocation_id", "stream", "http_status",
	"attempts", "latency_ms", "input_tokens", "output_tokens",
	"finish_reason", "error_code", "error_message", "request", "response",
	"response_body", "role_name"
};
static const Oid ledger_types[ADK_LEDGER_ROW_COLUMNS] = {
	TEXTOID, TEXTOID, TEXTOID, TEXTOID, BOOLOID, INT4OID,
	INT4OID, FLOAT8OID, INT4OID, INT4OID,
	TEXTOID, TEXTOID, TEXTOID, JSONBOID, JSONBOID,
	TEXTOID, NAMEOID
};

/* The columns of adk.sessions_p0 a bump reads or writes. */
enum
{
	S_LAST_SEQ, S_LAST_EVENT_TIME, S_UPDATE_TIME, S_STATE, S_NCOLS
};
static const char *const session_columns[S_NCOLS] = {
	"last_seq", "last_event_time", "update_time", "state"
};
static const Oid session_types[S_NCOLS] = {
	INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID, JSONBOID
};

#define MAX_COLUMNS ADK_LEDGER_ROW_COLUMNS

/* What we know of one table; relid InvalidOid: nothing (yet, or any more). */
typedef struct DirectTable
{
	const char *relname;		/* in schema adk */
	Oid			relid;
	bool		eligible;
	Oid			index;			/* sessions: the (app, user, id) index */
	AttrNumber	attnums[MAX_COLUMNS];	/* of the columns we fill */
	/* inserts: the other columns' defaults, planned, in cxt */
	MemoryContext cxt;
	int			ndefaults;
	AttrNumber *default_attnums;
	Expr	  **defaults;
} DirectTable;

static DirectTable events_table = {"events_p0"};
static DirectTable sessions_table = {"sessions_p0"};
static DirectTable ledger_table = {"model_calls"};
static bool callback_registered = false;
static MemoryContext bump_cxt = NULL;

static Relation open_table(DirectTable *t);
static bool check_table(Relation rel, DirectTable *t);
static bool check_sessions(Relation rel, DirectTable *t);
static bool plain_relation(Relation rel);
static bool only_our_triggers(Relation rel, bool for_insert,
							  const char *ours);
static bool find_columns(Relation rel, const char *const *names,
						 const Oid *types, int n, AttrNumber *attnums);
static void find_defaults(Relation rel, DirectTable *t, int ncols);
static void insert_row(Relation rel, DirectTable *t, int ncols,
					   const Datum *values, const bool *nulls);
static bool lock_session_row(Relation rel, Relation idx, const Datum *ids,
							 Snapshot snap, TupleTableSlot *slot);
static void update_session_row(Relation rel, TupleTableSlot *oldslot,
							   Snapshot snap, TimestampTz proposed,
							   Jsonb *delta, int64 *seq, TimestampTz *ts);
static void forget_relation(Datum arg, Oid relid);

/*
 * Insert the row "values" (in the order of event_columns) into
 * adk.events_p0 without an INSERT statement.  Returns false, having written
 * nothing, when the table carries something an INSERT must run: the caller
 * then uses one.
 */
bool
adk_event_row_insert(const Datum *values)
{
	static const bool nulls[ADK_EVENT_ROW_COLUMNS] = {false};
	Relation	rel = open_table(&events_table);

	if (rel == NULL)
		return false;
	insert_row(rel, &events_table, ADK_EVENT_ROW_COLUMNS, values, nulls);
	return true;
}

/*
 * The same for a row of adk.model_calls (values and nulls in the order of
 * ledger_columns).
 */
bool
adk_ledger_row_insert(const Datum *values, const bool *nulls)
{
	Relation	rel = open_table(&ledger_table);

	if (rel == NULL)
		return false;
	insert_row(rel, &ledger_table, ADK_LEDGER_ROW_COLUMNS, values, nulls);
	return true;
}

/*
 * Write one row: the ncols columns we fill, the others' defaults; then its
 * index entries.  rel is open with RowExclusiveLock; closed here.
 */
static void
insert_row(Relation rel, DirectTable *t, int ncols, const Datum *values,
		   const bool *nulls)
{
	TupleDesc	desc = RelationGetDescr(rel);
	EState	   *estate = CreateExecutorState();
	MemoryContext caller = MemoryContextSwitchTo(estate->es_query_cxt);
	ResultRelInfo *rri = makeNode(ResultRelInfo);
	TupleTableSlot *slot;
	List	   *recheck = NIL;
	int			i;

	InitResultRelInfo(rri, rel, 1, NULL, 0);
	ExecOpenIndices(rri, false);

	slot = ExecInitExtraTupleSlot(estate, desc, table_slot_callbacks(rel));
	ExecClearTuple(slot);
	for (i = 0; i < desc->natts; i++)
		slot->tts_isnull[i] = true;
	for (i = 0; i < ncols; i++)
	{
		slot->tts_values[t->attnums[i] - 1] = values[i];
		slot->tts_isnull[t->attnums[i] - 1] = nulls[i];
	}
	for (i = 0; i < t->ndefaults; i++)
	{
		ExprState  *es = ExecInitExpr(t->defaults[i], NULL);
		AttrNumber	att = t->default_attnums[i];

		slot->tts_values[att - 1] =
			ExecEvalExprSwitchContext(es, GetPerTupleExprContext(estate),
									  &slot->tts_isnull[att - 1]);
	}
	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attnotnull && slot->tts_isnull[i] && !att->attisdropped)
			ereport(ERROR,
					(errcode(ERRCODE_NOT_NULL_VIOLATION),
					 errmsg("null value in column \"%s\" of relation \"%s\" violates not-null constraint",
							NameStr(att->attname), RelationGetRelationName(rel))));
	}
	ExecStoreVirtualTuple(slot);

	table_tuple_insert(rel, slot, GetCurrentCommandId(true), 0, NULL);
	if (rri->ri_NumIndices > 0)
		recheck = adk_exec_insert_index_tuples(rri, slot, estate, false, false);
	/* only deferrable constraints ask for a recheck, and they need a trigger */
	Assert(recheck == NIL);
	list_free(recheck);

	ExecCloseIndices(rri);
	ExecResetTupleTable(estate->es_tupleTable, false);
	MemoryContextSwitchTo(caller);
	FreeExecutorState(estate);
	table_close(rel, NoLock);

	/* later commands of this transaction see the row, as after an INSERT */
	CommandCounterIncrement();
}

/*
 * Lock and bump the session row ids = (app, user, session) as the UPDATE
 * in event_trigger.c would: last_seq + 1; last_event_time = the later of
 * "proposed" and 1 ms past the last event; update_time never backwards;
 * the session-scope state merged with "delta" (NULL: none).  Fills *seq
 * and *ts.  Returns false when no session row matches (*found = false) or,
 * having written nothing, when the table carries something an UPDATE must
 * run (*found = true): the caller then uses the statement.
 */
bool
adk_session_row_bump(const Datum *ids, TimestampTz proposed, Jsonb *delta,
					 int64 *seq, TimestampTz *ts, bool *found)
{
	Relation	rel = open_table(&sessions_table);
	Relation	idx;
	Snapshot	snap;
	TupleTableSlot *oldslot;
	MemoryContext caller;

	*found = true;
	if (rel == NULL)
		return false;

	/* what a bump allocates (the merged state, slots) goes with it */
	if (bump_cxt == NULL)
		bump_cxt = AllocSetContextCreate(TopMemoryContext, "adk session bump",
										 ALLOCSET_DEFAULT_SIZES);
	MemoryContextReset(bump_cxt);
	caller = MemoryContextSwitchTo(bump_cxt);
	idx = index_open(sessions_table.index, RowExclusiveLock);

	/* as a statement would: its own snapshot, after what came before */
	PushActiveSnapshot(GetTransactionSnapshot());
	CommandCounterIncrement();
	UpdateActiveSnapshotCommandId();
	snap = GetActiveSnapshot();

	oldslot = table_slot_create(rel, NULL);
	*found = lock_session_row(rel, idx, ids, snap, oldslot);
	if (*found)
		update_session_row(rel, oldslot, snap, proposed, delta, seq, ts);

	ExecDropSingleTupleTableSlot(oldslot);
	PopActiveSnapshot();
	index_close(idx, NoLock);
	table_close(rel, NoLock);
	MemoryContextSwitchTo(caller);
	MemoryContextReset(bump_cxt);
	if (*found)
		CommandCounterIncrement();
	return *found;
}

/*
 * Find the session row ids = (app, user, session) with snap and lock it
 * into slot, as an UPDATE would; false when there is none (or it was
 * deleted while we waited, at READ COMMITTED).
 */
static bool
lock_session_row(Relation rel, Relation idx, const Datum *ids, Snapshot snap,
				 TupleTableSlot *slot)
{
	ScanKeyData skey[3];
	IndexScanDesc scan;
	TM_FailureData tmfd;
	TM_Result	res;
	bool		found;
	int			i;

	for (i = 0; i < 3; i++)
	{
		ScanKeyInit(&skey[i], i + 1, BTEqualStrategyNumber, F_TEXTEQ, ids[i]);
		skey[i].sk_collation = idx->rd_indcollation[i];
	}
	scan = index_beginscan(rel, idx, snap, 3, 0);
	index_rescan(scan, skey, 3, NULL, 0);
	found = index_getnext_slot(scan, ForwardScanDirection, slot);
	index_endscan(scan);
	if (!found)
		return false;

	res = table_tuple_lock(rel, &slot->tts_tid, snap, slot,
						   GetCurrentCommandId(false), LockTupleNoKeyExclusive,
						   LockWaitBlock,
						   IsolationUsesXactSnapshot() ? 0 :
						   TUPLE_LOCK_FLAG_FIND_LAST_VERSION,
						   &tmfd);
	switch (res)
	{
		case TM_Ok:
			return true;
		case TM_Updated:
			/* only without FIND_LAST_VERSION, i.e. REPEATABLE READ and up */
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("could not serialize access due to concurrent update")));
			break;
		case TM_Deleted:
			if (IsolationUsesXactSnapshot())
				ereport(ERROR,
						(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
						 errmsg("could not serialize access due to concurrent delete")));
			/* deleted under us: as if it had never been there */
			return false;
		default:
			elog(ERROR, "unexpected result %d locking a session row", (int) res);
	}
	return false;				/* keep the compiler quiet */
}

/*
 * Write the bumped version of the locked row in oldslot: seq, time,
 * update_time and state computed from it; index entries if not HOT.
 */
static void
update_session_row(Relation rel, TupleTableSlot *oldslot, Snapshot snap,
				   TimestampTz proposed, Jsonb *delta, int64 *seq,
				   TimestampTz *ts)
{
	TupleDesc	desc = RelationGetDescr(rel);
	AttrNumber *att = sessions_table.attnums;
	TupleTableSlot *newslot;
	TM_FailureData tmfd;
	TM_Result	res;
	LockTupleMode lockmode;
	AdkUpdateIndexes update_indexes;
	Datum		d;
	bool		isnull;
	TimestampTz update_time;

	slot_getallattrs(oldslot);
	newslot = table_slot_create(rel, NULL);
	ExecClearTuple(newslot);
	memcpy(newslot->tts_values, oldslot->tts_values,
		   desc->natts * sizeof(Datum));
	memcpy(newslot->tts_isnull, oldslot->tts_isnull,
		   desc->natts * sizeof(bool));

	*seq = DatumGetInt64(oldslot->tts_values[att[S_LAST_SEQ] - 1]) + 1;
	d = oldslot->tts_values[att[S_LAST_EVENT_TIME] - 1];
	isnull = oldslot->tts_isnull[att[S_LAST_EVENT_TIME] - 1];
	*ts = proposed;
	if (!isnull && DatumGetTimestampTz(d) + ONE_MS > *ts)
		*ts = DatumGetTimestampTz(d) + ONE_MS;
	update_time = DatumGetTimestampTz(oldslot->tts_values[att[S_UPDATE_TIME] - 1]);
	if (oldslot->tts_isnull[att[S_UPDATE_TIME] - 1] || update_time < *ts)
		update_time = *ts;

	newslot->tts_values[att[S_LAST_SEQ] - 1] = Int64GetDatum(*seq);
	newslot->tts_isnull[att[S_LAST_SEQ] - 1] = false;
	newslot->tts_values[att[S_LAST_EVENT_TIME] - 1] = TimestampTzGetDatum(*ts);
	newslot->tts_isnull[att[S_LAST_EVENT_TIME] - 1] = false;
	newslot->tts_values[att[S_UPDATE_TIME] - 1] = TimestampTzGetDatum(update_time);
	newslot->tts_isnull[att[S_UPDATE_TIME] - 1] = false;
	if (delta != NULL && !oldslot->tts_isnull[att[S_STATE] - 1])
		newslot->tts_values[att[S_STATE] - 1] =
			DirectFunctionCall2(jsonb_concat,
								oldslot->tts_values[att[S_STATE] - 1],
								JsonbPGetDatum(delta));
	ExecStoreVirtualTuple(newslot);
	/* copy out of the old version's buffer before heap_update locks it */
	ExecMaterializeSlot(newslot);

	res = table_tuple_update(rel, &oldslot->tts_tid, newslot,
							 GetCurrentCommandId(true), snap, InvalidSnapshot,
							 true, &tmfd, &lockmode, &update_indexes);
	if (res != TM_Ok)
		elog(ERROR, "could not update a locked session row: result %d",
			 (int) res);

	if (adk_update_needs_indexes(update_indexes))
	{
		EState	   *estate = CreateExecutorState();
		ResultRelInfo *rri = makeNode(ResultRelInfo);
		List	   *recheck;

		/*
		 * update = false: with true, the executor would look up the
		 * updated columns in a range table we do not have, only to pass
		 * btree the "unchanged key" hint for bottom-up deletion.
		 */
		InitResultRelInfo(rri, rel, 1, NULL, 0);
		ExecOpenIndices(rri, false);
		recheck = adk_exec_insert_index_tuples(rri, newslot, estate, false,
											   adk_update_summarizing_only(update_indexes));
		Assert(recheck == NIL);
		list_free(recheck);
		ExecCloseIndices(rri);
		FreeExecutorState(estate);
	}
	ExecDropSingleTupleTableSlot(newslot);
}

/*
 * Open adk.<t->relname> with RowExclusiveLock if it is eligible, else NULL.
 */
static Relation
open_table(DirectTable *t)
{
	Oid			relid;
	Relation	rel;

	if (!callback_registered)
	{
		CacheRegisterRelcacheCallback(forget_relation, (Datum) 0);
		callback_registered = true;
	}

	/* the statement raises what it must in these (25006, ...) */
	if (XactReadOnly || IsInParallelMode() || RecoveryInProgress())
		return NULL;

	relid = get_relname_relid(t->relname, get_namespace_oid("adk", false));
	if (!OidIsValid(relid))
		return NULL;

	/* the lock comes first: taking it processes pending invalidations */
	rel = table_open(relid, RowExclusiveLock);
	if (t->relid != relid)
	{
		if (t->cxt == NULL)
			t->cxt = AllocSetContextCreate(CacheMemoryContext,
										   "adk direct writes",
										   ALLOCSET_SMALL_SIZES);
		MemoryContextReset(t->cxt);
		t->ndefaults = 0;
		t->eligible = false;
		t->eligible = (t == &sessions_table) ? check_sessions(rel, t) :
			check_table(rel, t);
		t->relid = relid;
	}
	if (!t->eligible)
	{
		table_close(rel, NoLock);
		return NULL;
	}
	return rel;
}

/*
 * adk.events_p0 or adk.model_calls: plain, no trigger for INSERT but our
 * own, the columns we fill of the types we fill them with.  Finds the
 * other columns' defaults.
 */
static bool
check_table(Relation rel, DirectTable *t)
{
	bool		events = (t == &events_table);
	int			ncols = events ? ADK_EVENT_ROW_COLUMNS : ADK_LEDGER_ROW_COLUMNS;

	if (!plain_relation(rel) ||
		rel->rd_rel->relispartition != events ||
		!only_our_triggers(rel, true, events ? "_events_before_insert" : NULL) ||
		!find_columns(rel, events ? event_columns : ledger_columns,
					  events ? event_types : ledger_types, ncols, t->attnums))
		return false;
	find_defaults(rel, t, ncols);
	return true;
}

static bool
check_sessions(Relation rel, DirectTable *t)
{
	static const char *const key_columns[3] = {"app_name", "user_id", "id"};
	static const Oid key_types[3] = {VARCHAROID, VARCHAROID, VARCHAROID};
	AttrNumber	key[3];
	Oid			index;
	Relation	idx;
	bool		ok;

	if (!plain_relation(rel) || !rel->rd_rel->relispartition ||
		!only_our_triggers(rel, false, "_sessions_before_update") ||
		!find_columns(rel, session_columns, session_types, S_NCOLS,
					  t->attnums) ||
		!find_columns(rel, key_columns, key_types, 3, key))
		return false;

	/* the unique (app_name, user_id, id) index finds the row */
	index = get_relname_relid("sessions_p0_user_idx", RelationGetNamespace(rel));
	if (!OidIsValid(index))
		return false;
	idx = index_open(index, AccessShareLock);
	ok = idx->rd_index->indrelid == RelationGetRelid(rel) &&
		idx->rd_index->indisunique && idx->rd_index->indisvalid &&
		idx->rd_index->indnkeyatts == 3 &&
		RelationGetIndexExpressions(idx) == NIL &&
		RelationGetIndexPredicate(idx) == NIL &&
		idx->rd_index->indkey.values[0] == key[0] &&
		idx->rd_index->indkey.values[1] == key[1] &&
		idx->rd_index->indkey.values[2] == key[2];
	index_close(idx, AccessShareLock);
	t->index = index;
	return ok;
}

/*
 * No row security, no rule, no CHECK, no generated column; and a partition
 * is the only partition of its table, hash with modulus 1 (every row
 * belongs).
 */
static bool
plain_relation(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	HeapTuple	classtup;
	Datum		bound;
	bool		isnull;
	bool		ok = false;

	if (rel->rd_rel->relkind != RELKIND_RELATION || rel->rd_rel->relrowsecurity ||
		rel->rd_rel->relhasrules)
		return false;
	if (desc->constr &&
		(desc->constr->num_check > 0 || desc->constr->has_generated_stored))
		return false;
	if (!rel->rd_rel->relispartition)
		return true;

	classtup = SearchSysCache1(RELOID, ObjectIdGetDatum(RelationGetRelid(rel)));
	if (!HeapTupleIsValid(classtup))
		return false;
	bound = SysCacheGetAttr(RELOID, classtup, Anum_pg_class_relpartbound,
							&isnull);
	if (!isnull)
	{
		PartitionBoundSpec *spec = (PartitionBoundSpec *)
			stringToNode(TextDatumGetCString(bound));

		ok = IsA(spec, PartitionBoundSpec) &&
			spec->strategy == PARTITION_STRATEGY_HASH &&
			spec->modulus == 1;
	}
	ReleaseSysCache(classtup);
	return ok;
}

/*
 * Does nothing but our own row trigger adk.<ours>() (NULL: none) fire for
 * an INSERT (for_insert) or an UPDATE of rel?
 */
static bool
only_our_triggers(Relation rel, bool for_insert, const char *ours)
{
	TriggerDesc *td = rel->trigdesc;
	Oid			fn;
	Oid			noargs[1];
	int			i;

	if (td == NULL)
		return true;
	if (for_insert ?
		(td->trig_insert_after_row || td->trig_insert_instead_row ||
		 td->trig_insert_before_statement ||
		 td->trig_insert_after_statement || td->trig_insert_new_table) :
		(td->trig_update_after_row || td->trig_update_instead_row ||
		 td->trig_update_before_statement ||
		 td->trig_update_after_statement || td->trig_update_old_table ||
		 td->trig_update_new_table))
		return false;

	fn = ours == NULL ? InvalidOid :
		LookupFuncName(list_make2(makeString("adk"), makeString((char *) ours)),
					   0, noargs, true);
	for (i = 0; i < td->numtriggers; i++)
	{
		Trigger    *trig = &td->triggers[i];
		bool		fires = for_insert ? TRIGGER_FOR_INSERT(trig->tgtype) :
			TRIGGER_FOR_UPDATE(trig->tgtype);

		if (fires && trig->tgfoid != fn)
			return false;
	}
	return true;
}

/*
 * Attribute numbers of the named columns; false if one is missing or not
 * of its type.  VARCHAROID stands for our ids: varchar wide enough for
 * what common/ids.c lets through, or text.
 */
static bool
find_columns(Relation rel, const char *const *names, const Oid *types, int n,
			 AttrNumber *attnums)
{
	TupleDesc	desc = RelationGetDescr(rel);
	int			c;

	for (c = 0; c < n; c++)
	{
		int			i;

		attnums[c] = InvalidAttrNumber;
		for (i = 0; i < desc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, i);
			bool		type_ok;

			if (att->attisdropped || strcmp(NameStr(att->attname), names[c]) != 0)
				continue;
			if (types[c] == VARCHAROID)
				type_ok = att->atttypid == TEXTOID ||
					(att->atttypid == VARCHAROID &&
					 (att->atttypmod < 0 ||
					  att->atttypmod - VARHDRSZ >=
					  (strcmp(names[c], "invocation_id") == 0 ?
					   ADK_MAX_INVOCATION_ID_CHARS : ADK_MAX_ID_CHARS)));
			else
				type_ok = att->atttypid == types[c];
			if (type_ok)
				attnums[c] = att->attnum;
		}
		if (attnums[c] == InvalidAttrNumber)
			return false;
	}
	return true;
}

/*
 * The defaults of the columns we do not fill, planned once (in t->cxt) as
 * an INSERT would plan them: identity columns' nextval, now(), ...
 */
static void
find_defaults(Relation rel, DirectTable *t, int ncols)
{
	TupleDesc	desc = RelationGetDescr(rel);
	MemoryContext old = MemoryContextSwitchTo(t->cxt);
	int			i;

	t->ndefaults = 0;
	t->default_attnums = palloc(desc->natts * sizeof(AttrNumber));
	t->defaults = palloc(desc->natts * sizeof(Expr *));
	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		Node	   *expr;
		int			c;

		if (att->attisdropped)
			continue;
		for (c = 0; c < ncols; c++)
			if (t->attnums[c] == att->attnum)
				break;
		if (c < ncols)
			continue;
		expr = build_column_default(rel, att->attnum);
		if (expr == NULL)
			continue;
		t->default_attnums[t->ndefaults] = att->attnum;
		t->defaults[t->ndefaults] = expression_planner((Expr *) expr);
		t->ndefaults++;
	}
	MemoryContextSwitchTo(old);
}

/* relcache invalidation: forget what we knew of that relation */
static void
forget_relation(Datum arg, Oid relid)
{
	/* only marked: memory is freed at the next check, never while in use */
	if (!OidIsValid(relid) || relid == events_table.relid)
		events_table.relid = InvalidOid;
	if (!OidIsValid(relid) || relid == sessions_table.relid)
		sessions_table.relid = InvalidOid;
	if (!OidIsValid(relid) || relid == ledger_table.relid)
		ledger_table.relid = InvalidOid;
}
