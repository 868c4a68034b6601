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
 * the run but kept by the backend, for one session (the last run's); a
 * new run on that session takes it, and its first request goes on from
 * the last request of the turn before instead of reading and assembling
 * the whole history again.  A run on another session lets it go.
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
 * Memory: at most one session's, what the run kept (bounded as a run's
 * is: a history above adk_request_memo_max keeps no pieces or memo), held
 * by an idle backend until its next run.
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

/* What the backend's last run on a session kept; cxt NULL: nothing */
typedef struct HistCarry
{
	MemoryContext cxt;			/* the run's hist_cxt, now the backend's */
	char	   *app;			/* in cxt */
	char	   *user;
	char	   *session;
	List	   *history;		/* as AdkRun.history */
	List	   *request_memos;	/* as AdkRun.request_memos */
} HistCarry;

static HistCarry carry;

static void carry_drop(void);

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

/* Let go of what the backend kept */
static void
carry_drop(void)
{
	MemoryContext cxt = carry.cxt;

	memset(&carry, 0, sizeof(carry));
	if (cxt != NULL)
		MemoryContextDelete(cxt);
}

/*
 * A new run: it takes what the backend's last run kept when that was on
 * the same session (before anything of its history is read); otherwise
 * that goes.
 */
void
adk_hist_carry_take(AdkRun *run)
{
	ListCell   *lc;

	if (carry.cxt == NULL)
		return;
	if (run->hist_cxt != NULL ||
		strcmp(carry.app, run->app) != 0 ||
		strcmp(carry.user, run->user) != 0 ||
		strcmp(carry.session, run->session) != 0)
	{
		carry_drop();
		return;
	}
	MemoryContextSetParent(carry.cxt, run->run_cxt);
	run->hist_cxt = carry.cxt;
	run->history = carry.history;
	run->request_memos = carry.request_memos;
	foreach(lc, run->history)
		((HistCache *) lfirst(lc))->carried = true;
	memset(&carry, 0, sizeof(carry));
}

/*
 * The run has ended: what it kept of its history and requests stays with
 * the backend for its next run on the session, unless that could not be
 * checked (above); what the backend kept before goes.
 */
void
adk_hist_carry_keep(AdkRun *run)
{
	MemoryContext old;

	if (run->hist_cxt == NULL || run->history == NIL ||
		run->thoughts != NIL || run->nodes != NIL || run->out.stopped)
		return;
	carry_drop();
	MemoryContextSetParent(run->hist_cxt, TopMemoryContext);
	carry.cxt = run->hist_cxt;
	old = MemoryContextSwitchTo(carry.cxt);
	carry.app = pstrdup(run->app);
	carry.user = pstrdup(run->user);
	carry.session = pstrdup(run->session);
	MemoryContextSwitchTo(old);
	carry.history = run->history;
	carry.request_memos = run->request_memos;
	run->hist_cxt = NULL;
	run->history = NIL;
	run->request_memos = NIL;
}
