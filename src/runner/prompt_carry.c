/*-------------------------------------------------------------------------
 *
 * prompt_carry.c
 *	  What a run kept of its session's history and of its requests, handed
 *	  to the backend's next run on the same session.
 *
 * A run keeps, per branch, the events it read and what they gave its last
 * request (prompt_memo.c's HistCache), and per agent and branch its last
 * request whole (flow.c's request memos, model/request_memo.h): the next
 * request reads only the events after the last seq read and is made from
 * the first content that changed (test/bench/README.md, "How a request is
 * made without redoing the history").  All of it lives in one memory
 * context, hist_cxt.  When a run ends, that context is not deleted with
 * the run but kept by the backend, for that session; a new run on that
 * session takes it, and its first request goes on from the last request
 * of the turn before instead of reading and assembling the whole history
 * again.  A backend keeps several sessions' (a job worker runs many
 * sessions' jobs interleaved: docs/workers.md), the last run's first, up
 * to adk.history_carry_size in all; past it, the sessions run longest ago
 * go.  A run that takes one logs it at DEBUG1.
 *
 * Nothing of it is trusted: every read of the history checks where the
 * kept read stopped (store/session_read.c: the event of the last seq read
 * still there, live, with its id) and reads the branch again from the
 * start when that no longer holds (a rolled-back run, a deleted and
 * re-created session, a rewind of anything up to there); a compacted
 * session is read whole every time and keeps nothing (prompt_memo.c);
 * another writer's events are the next ones read; the isolation scope is
 * part of what a HistCache is for; and a request memo finds the first
 * content that differs by comparing contents, so a request never rests on
 * what it did not check.  What the kept state cannot show is not kept: a
 * run that put unstored thoughts back into its events (thoughts.c: only
 * that run may send them) or that ran nodes (single_turn.c: a node's
 * prompt holds its own invocation's events) leaves nothing behind, nor
 * does a run stopped from outside (its model calls may still hold its
 * request memos).  With adk.verify_incremental on, a request made from a
 * kept history is also made from the history read again from the store,
 * and must be the same bytes (prompt.c).
 *
 * Memory: at most adk.history_carry_size, or the last run's session's
 * alone when that is larger (bounded as a run's is: a history above
 * adk_request_memo_max keeps no pieces or memo), held by an idle backend
 * until its next runs.
 *
 * IDENTIFICATION
 *	  src/runner/prompt_carry.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "runner/prompt_history.h"
#include "runner/runner.h"
#include "runner/settings.h"

/* GUC adk.history_carry_size, in kB */
int			adk_history_carry_kb = 8 * 1024;

/* What the backend's last run on one session kept */
typedef struct HistCarry
{
	MemoryContext cxt;			/* the run's hist_cxt, now the backend's;
								 * holds this struct */
	Size		size;			/* bytes cxt held when kept */
	char	   *app;			/* in cxt */
	char	   *user;
	char	   *session;
	List	   *history;		/* as AdkRun.history */
	List	   *request_memos;	/* as AdkRun.request_memos */
} HistCarry;

/* The sessions kept, the last run's first (cells in TopMemoryContext) */
static List *carries = NIL;

static bool carry_is(HistCarry *carry, const char *app, const char *user,
					 const char *session);

/*
 * The run's memory for what it keeps of its history and requests: made
 * the first time, under the run's.
 */
MemoryContext
adk_hist_cxt(AdkRun *run)
{
	if (run->hist_cxt == NULL)
		run->hist_cxt = AllocSetContextCreate(run->run_cxt,
											  "adk_runner history kept",
											  ALLOCSET_DEFAULT_SIZES);
	return run->hist_cxt;
}

static bool
carry_is(HistCarry *carry, const char *app, const char *user,
		 const char *session)
{
	return strcmp(carry->app, app) == 0 &&
		strcmp(carry->user, user) == 0 &&
		strcmp(carry->session, session) == 0;
}

/*
 * A new run: it takes what the backend's last run on the same session kept
 * (before anything of its history is read); what was kept of other
 * sessions stays.
 */
void
adk_hist_carry_take(AdkRun *run)
{
	ListCell   *lc;
	HistCarry  *carry = NULL;

	if (run->hist_cxt != NULL)
		return;
	foreach(lc, carries)
	{
		if (carry_is((HistCarry *) lfirst(lc), run->app, run->user, run->session))
		{
			carry = (HistCarry *) lfirst(lc);
			carries = foreach_delete_current(carries, lc);
			break;
		}
	}
	if (carry == NULL)
		return;
	ereport(DEBUG1,
			(errmsg_internal("adk_runner: the run on session \"%s\" goes on from the history the backend kept of it (%zu bytes; %d other sessions kept)",
							 run->session, carry->size, list_length(carries))));
	MemoryContextSetParent(carry->cxt, run->run_cxt);
	run->hist_cxt = carry->cxt;
	run->history = carry->history;
	run->request_memos = carry->request_memos;
	foreach(lc, run->history)
		((HistCache *) lfirst(lc))->carried = true;
}

/*
 * The run has ended: what it kept of its history and requests stays with
 * the backend for its next run on the session, unless that could not be
 * checked (above).  It is put first; the sessions kept longest go while
 * all of them hold more than adk.history_carry_size (the last run's stays
 * whatever its size).
 */
void
adk_hist_carry_keep(AdkRun *run)
{
	MemoryContext old;
	HistCarry  *carry;
	ListCell   *lc;
	Size		total = 0;
	Size		limit = (Size) adk_history_carry_kb * 1024;

	if (run->hist_cxt == NULL || run->history == NIL ||
		run->thoughts != NIL || run->nodes != NIL || run->out.stopped)
		return;
	/* an older one of the same session (none, as the run took it) */
	foreach(lc, carries)
	{
		carry = (HistCarry *) lfirst(lc);
		if (carry_is(carry, run->app, run->user, run->session))
		{
			carries = foreach_delete_current(carries, lc);
			MemoryContextDelete(carry->cxt);
		}
	}
	MemoryContextSetParent(run->hist_cxt, TopMemoryContext);
	old = MemoryContextSwitchTo(run->hist_cxt);
	carry = palloc0(sizeof(HistCarry));
	carry->cxt = run->hist_cxt;
	carry->app = pstrdup(run->app);
	carry->user = pstrdup(run->user);
	carry->session = pstrdup(run->session);
	carry->history = run->history;
	carry->request_memos = run->request_memos;
	carry->size = MemoryContextMemAllocated(carry->cxt, true);
	MemoryContextSwitchTo(TopMemoryContext);
	carries = lcons(carry, carries);
	MemoryContextSwitchTo(old);
	run->hist_cxt = NULL;
	run->history = NIL;
	run->request_memos = NIL;
	/* the sessions kept longest go past the size */
	foreach(lc, carries)
	{
		HistCarry  *c = (HistCarry *) lfirst(lc);

		total += c->size;
		if (foreach_current_index(lc) > 0 && total > limit)
		{
			carries = foreach_delete_current(carries, lc);
			MemoryContextDelete(c->cxt);
		}
	}
}
