/*-------------------------------------------------------------------------
 *
 * spent.c
 *	  What a model call spent survives the rollback of the transaction that
 *	  made it: its budget charges and its adk.model_calls row.
 *
 * The charges (adk._budget_take, adk._budget_charge) and the ledger row
 * are written in the caller's transaction, as the events and the state
 * are.  This file keeps, for the transaction, what those writes added:
 * adk._budget_spent notes each budget charge, ledger.c each ledger row
 * (as JSON, without the request and response bodies).  When the
 * transaction commits the notes are dropped; when it, or the
 * subtransaction that made them, aborts -- a ROLLBACK, a ROLLBACK TO
 * SAVEPOINT, an error, a backend terminated mid-run -- the abort callback
 * hands them to shared memory, and the launcher writes them in a
 * transaction of its own (adk_spent_write): the charges added to
 * adk.budget_spend, the rows inserted with rolled_back = true.
 *
 * Exactness: the charges of a rolled-back transaction are "pending" from
 * its abort (before its row locks are released) until the launcher's
 * transaction that writes them commits.  adk._budget_take adds them
 * (adk._budget_pending) to what it reads under the usage row's lock.  The
 * launcher moves a slot's pending amounts to "applying" under its
 * transaction id before it updates the row; a reader counts "applying"
 * until that id has committed -- by then the row it locked holds them.
 * A launcher that dies while applying leaves an aborted id: the next
 * round counts those amounts as pending again.
 *
 * Bounds: charges are summed per budget and period in a fixed number of
 * slots (SPENT_SLOTS).  A transaction reserves the slot before its call
 * (adk._budget_pending, which refuses the call when none is free) and
 * holds it until it ends, so the abort callback always has a slot and a
 * charge is never dropped.  Ledger rows queue in SPENT_QUEUE_BYTES; a row
 * that does not fit is logged (model, invocation) instead.  Shared memory
 * is lost in a crash: charges not written yet are lost with it (the
 * server log has the crash).  Without shared_preload_libraries nothing
 * survives a rollback; a WARNING says so when a charge is lost.
 *
 * Locking: spent->lock guards the slots and the queue, held for loads and
 * stores only.
 *
 * IDENTIFICATION
 *	  src/shared/spent.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "common/owner.h"
#include "shared/shared.h"
#include "shared/spent.h"

#define SPENT_SLOTS			1024
#define SPENT_QUEUE_BYTES	(1024 * 1024)

/* the charges of one budget and period */
typedef struct SpentSlot
{
	Oid			dbid;			/* InvalidOid: free */
	int64		budget_id;
	TimestampTz period_start;
	int32		refs;			/* open transactions holding it */
	int64		calls;			/* pending: rolled back, not written yet */
	int64		tokens;
	int64		applying_calls; /* being written by applying_xid */
	int64		applying_tokens;
	TransactionId applying_xid;
} SpentSlot;

/* a queued ledger row: header, then len bytes of JSON, MAXALIGNed */
typedef struct SpentRow
{
	Oid			dbid;
	uint32		len;
} SpentRow;

typedef struct SpentShmem
{
	LWLock	   *lock;
	Size		queue_used;
	SpentSlot	slots[SPENT_SLOTS];
	char		queue[SPENT_QUEUE_BYTES];
} SpentShmem;

/* what this transaction wrote, per subtransaction */
typedef struct SpentNote
{
	SubTransactionId subid;
	int			slot;			/* budget charge: its slot; -1: no shared
								 * memory; -2: a ledger row */
	int64		calls;
	int64		tokens;
	char	   *row;			/* ledger row JSON */
} SpentNote;

static SpentShmem *spent = NULL;

/* in TopTransactionContext: the notes live as long as the transaction */
static SpentNote *notes = NULL;
static int	nnotes = 0;
static int	maxnotes = 0;
static bool callbacks_registered = false;

static void add_note(int slot, int64 calls, int64 tokens, char *row);
static int	find_slot(int64 budget_id, TimestampTz period_start, bool create);
static void release_slot(SpentSlot *s);
static void hand_over(SubTransactionId subid, bool all);
static bool queue_row(const char *row);
static void spent_xact_callback(XactEvent event, void *arg);
static void spent_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
								   SubTransactionId parentSubid, void *arg);
static void write_rows(List *rows);
static bool apply_charge(SpentSlot *s, int64 calls, int64 tokens);

PG_FUNCTION_INFO_V1(adk_budget_pending);
PG_FUNCTION_INFO_V1(adk_budget_spent);

Size
adk_spent_shmem_size(void)
{
	return MAXALIGN(sizeof(SpentShmem));
}

/* Called under AddinShmemInitLock by shared/shmem.c's startup hook. */
void
adk_spent_shmem_startup(void)
{
	bool		found;

	spent = ShmemInitStruct("adk_runner spent", adk_spent_shmem_size(), &found);
	if (!found)
	{
		memset(spent, 0, adk_spent_shmem_size());
		spent->lock = &(GetNamedLWLockTranche("adk_runner spent"))->lock;
	}
}

/*
 * Append a note to this transaction's list (TopTransactionContext).
 */
static void
add_note(int slot, int64 calls, int64 tokens, char *row)
{
	if (!callbacks_registered)
	{
		RegisterXactCallback(spent_xact_callback, NULL);
		RegisterSubXactCallback(spent_subxact_callback, NULL);
		callbacks_registered = true;
	}
	if (nnotes == maxnotes)
	{
		maxnotes = Max(16, maxnotes * 2);
		notes = notes == NULL ?
			MemoryContextAlloc(TopTransactionContext, sizeof(SpentNote) * maxnotes) :
			repalloc(notes, sizeof(SpentNote) * maxnotes);
	}
	notes[nnotes].subid = GetCurrentSubTransactionId();
	notes[nnotes].slot = slot;
	notes[nnotes].calls = calls;
	notes[nnotes].tokens = tokens;
	notes[nnotes].row = row;
	nnotes++;
}

/*
 * The slot of a budget's period in this database, with a reference taken;
 * -1 when there is none (and create is false, or every slot is taken).
 * Caller holds spent->lock exclusively.
 */
static int
find_slot(int64 budget_id, TimestampTz period_start, bool create)
{
	int			unused = -1;
	int			i;

	for (i = 0; i < SPENT_SLOTS; i++)
	{
		SpentSlot  *s = &spent->slots[i];

		if (s->dbid == MyDatabaseId && s->budget_id == budget_id &&
			s->period_start == period_start)
		{
			s->refs++;
			return i;
		}
		if (s->dbid == InvalidOid && unused < 0)
			unused = i;
	}
	if (!create || unused < 0)
		return -1;
	memset(&spent->slots[unused], 0, sizeof(SpentSlot));
	spent->slots[unused].dbid = MyDatabaseId;
	spent->slots[unused].budget_id = budget_id;
	spent->slots[unused].period_start = period_start;
	spent->slots[unused].refs = 1;
	return unused;
}

/*
 * Free a slot nobody holds and nothing is pending in.  Caller holds
 * spent->lock exclusively.
 */
static void
release_slot(SpentSlot *s)
{
	if (s->refs == 0 && s->calls == 0 && s->tokens == 0 &&
		!TransactionIdIsValid(s->applying_xid))
		s->dbid = InvalidOid;
}

/*
 * adk._budget_pending(budget_id, period_start) -> bigint[]: the model
 * calls and tokens that rolled-back transactions charged to this budget's
 * period and the launcher has not written yet, {calls, tokens}.  The
 * budget's slot is held until this transaction ends, so what it charges
 * can be handed over if it rolls back.  NULL: no slot is free, the call
 * must not be made.  Called by adk._budget_take under the usage row's
 * lock.
 */
Datum
adk_budget_pending(PG_FUNCTION_ARGS)
{
	int64		budget_id = PG_GETARG_INT64(0);
	TimestampTz period_start = PG_GETARG_TIMESTAMPTZ(1);
	Datum		out[2] = {Int64GetDatum(0), Int64GetDatum(0)};
	int			i;

	if (spent != NULL)
	{
		SpentSlot  *s;
		int64		calls;
		int64		tokens;

		LWLockAcquire(spent->lock, LW_EXCLUSIVE);
		i = find_slot(budget_id, period_start, true);
		if (i < 0)
		{
			LWLockRelease(spent->lock);
			PG_RETURN_NULL();
		}
		s = &spent->slots[i];
		calls = s->calls;
		tokens = s->tokens;
		if (TransactionIdIsValid(s->applying_xid) &&
			!TransactionIdDidCommit(s->applying_xid))
		{
			calls += s->applying_calls;
			tokens += s->applying_tokens;
		}
		LWLockRelease(spent->lock);
		/* the reference is this note's until the transaction ends */
		add_note(i, 0, 0, NULL);
		out[0] = Int64GetDatum(calls);
		out[1] = Int64GetDatum(tokens);
	}
	PG_RETURN_ARRAYTYPE_P(construct_array(out, 2, INT8OID, sizeof(int64),
										  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

/*
 * adk._budget_spent(budget_id, period_start, calls, tokens): this
 * transaction has just added calls and tokens to the budget's usage row;
 * if it rolls back, they are handed to the launcher.  The slot was
 * reserved by adk._budget_pending in this transaction.
 */
Datum
adk_budget_spent(PG_FUNCTION_ARGS)
{
	int64		budget_id = PG_GETARG_INT64(0);
	TimestampTz period_start = PG_GETARG_TIMESTAMPTZ(1);
	int64		calls = PG_GETARG_INT64(2);
	int64		tokens = PG_GETARG_INT64(3);
	int			i = -1;

	if (spent != NULL)
	{
		LWLockAcquire(spent->lock, LW_EXCLUSIVE);
		i = find_slot(budget_id, period_start, true);
		LWLockRelease(spent->lock);
		if (i < 0)
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("too many budgets are in use at once"),
					 errdetail("Every one of the %d slots that keep the charges of rolled-back model calls is taken.",
							   SPENT_SLOTS)));
	}
	add_note(i, calls, tokens, NULL);
	PG_RETURN_VOID();
}

/*
 * The ledger row this transaction has just inserted, as JSON without its
 * bodies: if the transaction rolls back, the launcher inserts it again.
 */
void
adk_spent_ledger_row(const char *row_json)
{
	if (spent == NULL)
		return;
	add_note(-2, 0, 0, MemoryContextStrdup(TopTransactionContext, row_json));
}

/*
 * Hand the notes of subtransaction subid (all: of the whole transaction)
 * to shared memory, release their slots, and drop them.
 */
static void
hand_over(SubTransactionId subid, bool all)
{
	int64		lost = 0;
	int			dropped = 0;
	bool		wake = false;
	int			i;
	int			kept = 0;

	if (spent != NULL)
		LWLockAcquire(spent->lock, LW_EXCLUSIVE);
	for (i = 0; i < nnotes; i++)
	{
		SpentNote  *n = &notes[i];

		if (!all && n->subid != subid)
		{
			notes[kept++] = *n;
			continue;
		}
		if (n->slot >= 0)
		{
			SpentSlot  *s = &spent->slots[n->slot];

			s->calls += n->calls;
			s->tokens += n->tokens;
			s->refs--;
			wake = wake || n->calls != 0 || n->tokens != 0;
			release_slot(s);
		}
		else if (n->slot == -1)
			lost += n->calls;
		else if (queue_row(n->row))
			wake = true;
		else
			dropped++;
	}
	nnotes = kept;
	if (spent != NULL)
		LWLockRelease(spent->lock);

	if (wake && adk_workers != NULL)
	{
		LWLockAcquire(adk_workers->lock, LW_SHARED);
		if (adk_workers->launcher_latch != NULL)
			SetLatch(adk_workers->launcher_latch);
		LWLockRelease(adk_workers->lock);
	}
	if (lost > 0)
		ereport(WARNING,
				(errmsg_plural("the budget charge of %lld rolled-back model call is lost",
							   "the budget charges of %lld rolled-back model calls are lost",
							   lost, (long long) lost),
				 errdetail("Charges survive a rollback only when adk_runner is in shared_preload_libraries.")));
	if (dropped > 0)
		ereport(LOG,
				(errmsg("adk_runner: %d ledger rows of rolled-back model calls were not kept: the queue is full",
						dropped)));
}

/*
 * Append a ledger row to the queue; false when it does not fit.  Caller
 * holds spent->lock exclusively.
 */
static bool
queue_row(const char *row)
{
	size_t		len = strlen(row);
	Size		need = MAXALIGN(sizeof(SpentRow)) + MAXALIGN(len);
	SpentRow   *r;

	if (need > SPENT_QUEUE_BYTES - spent->queue_used)
		return false;
	r = (SpentRow *) (spent->queue + spent->queue_used);
	r->dbid = MyDatabaseId;
	r->len = (uint32) len;
	memcpy((char *) r + MAXALIGN(sizeof(SpentRow)), row, len);
	spent->queue_used += need;
	return true;
}

static void
spent_xact_callback(XactEvent event, void *arg)
{
	int			i;

	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			for (i = 0; i < nnotes; i++)
				if (notes[i].calls != 0 || notes[i].tokens != 0)
					ereport(ERROR,
							(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							 errmsg("cannot prepare a transaction that charged a budget for model calls")));
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PREPARE:
			/* the charges are the transaction's now: keep only the slots */
			for (i = 0; i < nnotes; i++)
			{
				notes[i].calls = notes[i].tokens = 0;
				if (notes[i].slot == -2)
					notes[i].slot = -3;
			}
			/* FALLTHROUGH */
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			if (nnotes > 0)
			{
				int			k = 0;

				/* committed ledger rows (-3) are simply dropped */
				for (i = 0; i < nnotes; i++)
					if (notes[i].slot != -3)
						notes[k++] = notes[i];
				nnotes = k;
				hand_over(InvalidSubTransactionId, true);
			}
			notes = NULL;
			nnotes = maxnotes = 0;
			break;
		default:
			break;
	}
}

static void
spent_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					   SubTransactionId parentSubid, void *arg)
{
	int			i;

	if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		for (i = 0; i < nnotes; i++)
			if (notes[i].subid == mySubid)
				notes[i].subid = parentSubid;
	}
	else if (event == SUBXACT_EVENT_ABORT_SUB)
		hand_over(mySubid, false);
}

/*
 * The launcher's part, in its round's transaction: insert the queued
 * ledger rows of this database and add the pending charges to
 * adk.budget_spend.  See the file header for the "applying" protocol.
 */
bool
adk_spent_write(void)
{
	List	   *rows = NIL;
	List	   *slots = NIL;
	TransactionId xid;
	bool		remaining = false;
	Size		off = 0;
	Size		keep = 0;
	ListCell   *lc;
	int			i;

	if (spent == NULL)
		return false;
	/* an id only when there is something to write: most rounds have not */
	LWLockAcquire(spent->lock, LW_SHARED);
	for (i = 0; i < SPENT_SLOTS && !remaining; i++)
		remaining = spent->slots[i].dbid == MyDatabaseId &&
			(spent->slots[i].calls != 0 || spent->slots[i].tokens != 0 ||
			 TransactionIdIsValid(spent->slots[i].applying_xid));
	for (off = 0; off < spent->queue_used && !remaining;)
	{
		SpentRow   *r = (SpentRow *) (spent->queue + off);

		remaining = r->dbid == MyDatabaseId;
		off += MAXALIGN(sizeof(SpentRow)) + MAXALIGN(r->len);
	}
	LWLockRelease(spent->lock);
	if (!remaining)
		return false;
	remaining = false;
	off = 0;
	xid = GetCurrentTransactionId();
	LWLockAcquire(spent->lock, LW_EXCLUSIVE);
	while (off < spent->queue_used)
	{
		SpentRow   *r = (SpentRow *) (spent->queue + off);
		Size		size = MAXALIGN(sizeof(SpentRow)) + MAXALIGN(r->len);

		if (r->dbid == MyDatabaseId)
			rows = lappend(rows, pnstrdup((char *) r + MAXALIGN(sizeof(SpentRow)), r->len));
		else
		{
			memmove(spent->queue + keep, r, size);
			keep += size;
		}
		off += size;
	}
	spent->queue_used = keep;
	for (i = 0; i < SPENT_SLOTS; i++)
	{
		SpentSlot  *s = &spent->slots[i];

		if (s->dbid != MyDatabaseId)
			continue;
		if (TransactionIdIsValid(s->applying_xid))
		{
			if (TransactionIdIsInProgress(s->applying_xid))
				continue;
			if (!TransactionIdDidCommit(s->applying_xid))
			{
				/* a launcher that died while writing them */
				s->calls += s->applying_calls;
				s->tokens += s->applying_tokens;
			}
			s->applying_calls = s->applying_tokens = 0;
			s->applying_xid = InvalidTransactionId;
		}
		if (s->calls != 0 || s->tokens != 0)
		{
			s->applying_calls = s->calls;
			s->applying_tokens = s->tokens;
			s->calls = s->tokens = 0;
			s->applying_xid = xid;
			slots = lappend_int(slots, i);
		}
		release_slot(s);
	}
	LWLockRelease(spent->lock);

	write_rows(rows);
	foreach(lc, slots)
	{
		SpentSlot  *s = &spent->slots[lfirst_int(lc)];

		/* only this launcher changes applying_*: read without the lock */
		if (apply_charge(s, s->applying_calls, s->applying_tokens))
			continue;
		/* its row is locked: pending again, before this transaction ends */
		LWLockAcquire(spent->lock, LW_EXCLUSIVE);
		s->calls += s->applying_calls;
		s->tokens += s->applying_tokens;
		s->applying_calls = s->applying_tokens = 0;
		s->applying_xid = InvalidTransactionId;
		LWLockRelease(spent->lock);
		remaining = true;
	}
	return remaining;
}

Oid
adk_spent_other_database(void)
{
	Oid			db = InvalidOid;
	int			i;

	if (spent == NULL)
		return InvalidOid;
	LWLockAcquire(spent->lock, LW_SHARED);
	for (i = 0; i < SPENT_SLOTS && !OidIsValid(db); i++)
		if (OidIsValid(spent->slots[i].dbid) && spent->slots[i].dbid != MyDatabaseId &&
			(spent->slots[i].calls != 0 || spent->slots[i].tokens != 0 ||
			 TransactionIdIsValid(spent->slots[i].applying_xid)))
			db = spent->slots[i].dbid;
	if (!OidIsValid(db) && spent->queue_used > 0)
	{
		Size		off = 0;

		while (off < spent->queue_used && !OidIsValid(db))
		{
			SpentRow   *r = (SpentRow *) (spent->queue + off);

			if (r->dbid != MyDatabaseId)
				db = r->dbid;
			off += MAXALIGN(sizeof(SpentRow)) + MAXALIGN(r->len);
		}
	}
	LWLockRelease(spent->lock);
	return db;
}

void
adk_spent_discard(Oid dbid)
{
	Size		off = 0;
	Size		keep = 0;
	int			i;

	if (spent == NULL)
		return;
	LWLockAcquire(spent->lock, LW_EXCLUSIVE);
	for (i = 0; i < SPENT_SLOTS; i++)
	{
		SpentSlot  *s = &spent->slots[i];

		if (s->dbid != dbid)
			continue;
		s->calls = s->tokens = s->applying_calls = s->applying_tokens = 0;
		s->applying_xid = InvalidTransactionId;
		release_slot(s);
	}
	while (off < spent->queue_used)
	{
		SpentRow   *r = (SpentRow *) (spent->queue + off);
		Size		size = MAXALIGN(sizeof(SpentRow)) + MAXALIGN(r->len);

		if (r->dbid != dbid)
		{
			memmove(spent->queue + keep, r, size);
			keep += size;
		}
		off += size;
	}
	spent->queue_used = keep;
	LWLockRelease(spent->lock);
}

/*
 * Insert ledger rows of rolled-back calls, marked rolled_back.
 */
static void
write_rows(List *rows)
{
	AdkOwnerSave save;
	ListCell   *lc;

	if (rows == NIL)
		return;
	adk_owner_spi_begin(&save);
	foreach(lc, rows)
	{
		Oid			type = TEXTOID;
		Datum		arg = CStringGetTextDatum((char *) lfirst(lc));

		/* sql/install/88_store_statements.sql */
		if (SPI_execute_with_args("SELECT adk._model_call_restore($1::pg_catalog.jsonb)",
								  1, &type, &arg, NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not insert into adk.model_calls");
	}
	adk_owner_spi_end(&save);
}

/*
 * Add calls and tokens to a budget's usage row (adk._budget_apply);
 * false when the row is locked by a transaction still running.
 */
static bool
apply_charge(SpentSlot *s, int64 calls, int64 tokens)
{
	Oid			types[4] = {INT8OID, TIMESTAMPTZOID, INT8OID, INT8OID};
	Datum		args[4];
	AdkOwnerSave save;
	bool		isnull;
	bool		done;

	args[0] = Int64GetDatum(s->budget_id);
	args[1] = TimestampTzGetDatum(s->period_start);
	args[2] = Int64GetDatum(calls);
	args[3] = Int64GetDatum(tokens);
	adk_owner_spi_begin(&save);
	if (SPI_execute_with_args("SELECT adk._budget_apply($1, $2, $3, $4)", 4, types, args,
							  NULL, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not charge the token budgets");
	done = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	adk_owner_spi_end(&save);
	return done;
}
