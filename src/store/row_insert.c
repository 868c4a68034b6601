/*-------------------------------------------------------------------------
 *
 * row_insert.c
 *	  Write an event row that adk_store_append has already placed straight
 *	  into adk.events_p0 through the table and index access methods.
 *
 * By the time adk_store_append writes a row, it has done everything the
 * events trigger would do (the session row is locked and bumped, the row
 * has its seq, time and final event_data).  An INSERT statement would add
 * only overhead on the hottest path we have: executor start-up, a call of
 * the trigger that then lets the row through, and the hash-partition check
 * on a partition that takes every row.  So when the partition carries
 * nothing else an INSERT would have to run, we write the heap tuple and its
 * index entries ourselves, as logical replication's apply worker does:
 *
 *	- no trigger on INSERT other than our own adk_events_before_insert;
 *	- no CHECK constraint, no generated column, no row security;
 *	- no column besides the eight we fill;
 *	- the one partition, WITH (MODULUS 1, REMAINDER 0).
 *
 * If someone adds a trigger, a constraint or a column to adk.events, the
 * relation is no longer eligible and adk_store_append falls back to a
 * plain INSERT, so whatever was added still runs.  Whether the relation is
 * eligible is cached, and forgotten at any relcache invalidation of it
 * (CREATE TRIGGER, ALTER TABLE and ATTACH PARTITION all send one).
 *
 * Column types need no coercion: the ids are checked against the columns'
 * varchar limits before they get here (common/ids.c).
 *
 * IDENTIFICATION
 *	  src/store/row_insert.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "nodes/parsenodes.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "common/compat.h"
#include "store/row_insert.h"

/* The columns we fill, in the order of adk_event_row_insert's values. */
static const char *const event_columns[ADK_EVENT_ROW_COLUMNS] = {
	"id", "app_name", "user_id", "session_id", "invocation_id",
	"timestamp", "event_data", "seq"
};

static Oid	checked_relid = InvalidOid; /* InvalidOid: nothing cached */
static bool eligible = false;
static AttrNumber attnums[ADK_EVENT_ROW_COLUMNS];
static bool callback_registered = false;

static bool check_eligible(Relation rel);
static void forget_relation(Datum arg, Oid relid);

/*
 * Insert the row "values" (in the order of event_columns) into
 * adk.events_p0 without an INSERT statement.  Returns false, having written
 * nothing, when the relation carries something an INSERT must run: the
 * caller then uses one.
 */
bool
adk_event_row_insert(const Datum *values)
{
	Oid			relid;
	Relation	rel;
	EState	   *estate;
	ResultRelInfo *rri;
	TupleTableSlot *slot;
	List	   *recheck = NIL;
	int			i;

	if (!callback_registered)
	{
		CacheRegisterRelcacheCallback(forget_relation, (Datum) 0);
		callback_registered = true;
	}

	relid = get_relname_relid("events_p0", get_namespace_oid("adk", false));
	if (!OidIsValid(relid))
		return false;

	/* the lock comes first: it processes pending invalidations */
	rel = table_open(relid, RowExclusiveLock);
	if (checked_relid != relid)
	{
		eligible = check_eligible(rel);
		checked_relid = relid;
	}
	if (!eligible)
	{
		table_close(rel, NoLock);
		return false;
	}

	estate = CreateExecutorState();
	rri = makeNode(ResultRelInfo);
	InitResultRelInfo(rri, rel, 1, NULL, 0);
	ExecOpenIndices(rri, false);

	slot = ExecInitExtraTupleSlot(estate, RelationGetDescr(rel),
								  table_slot_callbacks(rel));
	ExecClearTuple(slot);
	for (i = 0; i < slot->tts_tupleDescriptor->natts; i++)
		slot->tts_isnull[i] = true;
	for (i = 0; i < ADK_EVENT_ROW_COLUMNS; i++)
	{
		slot->tts_values[attnums[i] - 1] = values[i];
		slot->tts_isnull[attnums[i] - 1] = false;
	}
	ExecStoreVirtualTuple(slot);

	table_tuple_insert(rel, slot, GetCurrentCommandId(true), 0, NULL);
	if (rri->ri_NumIndices > 0)
		recheck = adk_exec_insert_index_tuples(rri, slot, estate);
	/* only deferrable constraints ask for a recheck, and they need a trigger */
	Assert(recheck == NIL);
	list_free(recheck);

	ExecCloseIndices(rri);
	ExecResetTupleTable(estate->es_tupleTable, false);
	FreeExecutorState(estate);
	table_close(rel, NoLock);

	/* later commands of this transaction see the row, as after an INSERT */
	CommandCounterIncrement();
	return true;
}

/*
 * Does "rel" carry nothing an INSERT statement would run but our own
 * trigger?  Fills attnums when it does.
 */
static bool
check_eligible(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	TriggerDesc *td = rel->trigdesc;
	HeapTuple	classtup;
	Datum		bound;
	bool		isnull;
	bool		ok = false;
	int			found = 0;
	int			i;

	if (rel->rd_rel->relrowsecurity || !rel->rd_rel->relispartition)
		return false;
	if (desc->constr &&
		(desc->constr->num_check > 0 || desc->constr->has_generated_stored))
		return false;

	if (td != NULL)
	{
		Oid			ours;
		Oid			noargs[1];

		if (td->trig_insert_after_row || td->trig_insert_instead_row ||
			td->trig_insert_before_statement ||
			td->trig_insert_after_statement || td->trig_insert_new_table)
			return false;
		ours = LookupFuncName(list_make2(makeString("adk"),
										 makeString("_events_before_insert")),
							  0, noargs, true);
		for (i = 0; i < td->numtriggers; i++)
		{
			Trigger    *trig = &td->triggers[i];

			if (TRIGGER_FOR_INSERT(trig->tgtype) && trig->tgfoid != ours)
				return false;
		}
	}

	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		int			c;

		if (att->attisdropped)
			continue;
		for (c = 0; c < ADK_EVENT_ROW_COLUMNS; c++)
			if (strcmp(NameStr(att->attname), event_columns[c]) == 0)
				break;
		if (c == ADK_EVENT_ROW_COLUMNS)
			return false;		/* a column we would leave NULL or default */
		attnums[c] = att->attnum;
		found++;
	}
	if (found != ADK_EVENT_ROW_COLUMNS)
		return false;

	/* every row belongs in the partition: hash, modulus 1 */
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

/* relcache invalidation: forget what we knew of that relation */
static void
forget_relation(Datum arg, Oid relid)
{
	if (!OidIsValid(relid) || relid == checked_relid)
		checked_relid = InvalidOid;
}
