/*-------------------------------------------------------------------------
 *
 * prompt_memo.c
 *	  What a run keeps of its session's history between model calls, and
 *	  where its next request stops being the previous one.
 *
 * Within a run, what was read of a branch's history is kept (HistCache):
 * the next request reads only the events after the last seq read, so a
 * tool loop of 50 calls reads the history once.  With the events go the
 * ids of their parts (the first event with each) and the run's previous
 * request (PromptMemo): the next request is made from the first event
 * that could give other contents than last time (adk_hist_resume_at), the
 * contents of the events before are the previous request's.  A history
 * larger than adk_request_memo_max is not kept: it is read for each
 * request and let go of once its contents are made (prompt.c).
 *
 * IDENTIFICATION
 *	  src/runner/prompt_memo.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "runner/prompt_history.h"
#include "store/session_read.h"

static HistCache *hist_cache(AdkRun *run, const char *branch, bool create);
static FirstId *first_id(HistCache *cache, const char *id, uint32 hash);
static void note_ids(HistCache *cache, HistEvent *h, int at);
static List *hist_events(AdkRun *run, const char *branch, List *rows,
						 HistCache *cache);

/*
 * The run's cache for branch; when it has none, a new one (create) or
 * NULL.
 */
static HistCache *
hist_cache(AdkRun *run, const char *branch, bool create)
{
	ListCell   *lc;
	HistCache  *c;
	MemoryContext old;

	foreach(lc, run->history)
	{
		c = (HistCache *) lfirst(lc);
		if (((c->branch == NULL && branch == NULL) ||
			 (c->branch != NULL && branch != NULL && strcmp(c->branch, branch) == 0)) &&
			((c->scope == NULL && run->scope == NULL) ||
			 (c->scope != NULL && run->scope != NULL && strcmp(c->scope, run->scope) == 0)))
			return c;
	}
	if (!create)
		return NULL;
	old = MemoryContextSwitchTo(adk_hist_cxt(run));
	c = palloc0(sizeof(HistCache));
	/*
	 * blocks of at most 64 kB, as the run's own (run.c): what it holds
	 * follows what it uses, a run's history growing two events a call
	 */
	c->cxt = AllocSetContextCreate(CurrentMemoryContext, "adk_runner history",
								   ALLOCSET_DEFAULT_MINSIZE,
								   ALLOCSET_DEFAULT_INITSIZE, 64 * 1024);
	c->branch = branch ? pstrdup(branch) : NULL;
	c->scope = run->scope ? pstrdup(run->scope) : NULL;
	run->history = lappend(run->history, c);
	MemoryContextSwitchTo(old);
	return c;
}

/*
 * Read what is new of the history for branch.  A run keeps what it read
 * (HistCache): *cache is set, and the result is NIL (adk_hist_copies gives
 * the events).  Otherwise (adk_prompt has no run; a compacted session is
 * read whole every time) *cache is NULL and the result is the events.
 */
List *
adk_hist_read(AdkRun *run, const char *branch, HistCache **cachep)
{
	/* a run object keeps what it read (adk_prompt's has none) */
	HistCache  *cache = run->run_cxt ? hist_cache(run, branch, false) : NULL;
	AdkHistoryMark none = {0};
	List	   *rows;
	bool		compacted;
	bool		stale;

	/*
	 * Summaries in place of the events they cover (compaction.c); a session
	 * that was never compacted is read directly, from where this run's read
	 * of the branch stopped (store/session_read.c) -- or from the start when
	 * that no longer holds.
	 */
	rows = adk_session_history(run->app, run->user, run->session,
							   cache ? &cache->mark : &none,
							   cache ? cache->cxt : CurrentMemoryContext,
							   &compacted, &stale);
	if (stale)
	{
		adk_hist_forget_events(cache);
		rows = adk_session_history(run->app, run->user, run->session,
								   &cache->mark, cache->cxt, &compacted,
								   &stale);
	}
	if (compacted)
	{
		list_free(run->history);	/* its contents go with the run's memory */
		run->history = NIL;
		cache = NULL;
	}
	else if (run->run_cxt && cache == NULL)
	{
		/* the branch's first read: the cache starts where it stopped */
		cache = hist_cache(run, branch, true);
		cache->mark = none;
		if (none.id != NULL)
			cache->mark.id = MemoryContextStrdup(cache->cxt, none.id);
	}
	*cachep = cache;
	return hist_events(run, branch, rows, cache);
}

/*
 * The whole history of branch read again, as adk_hist_read reads it
 * without a cache: what a resumed request is checked against
 * (adk.verify_incremental).
 */
List *
adk_hist_read_whole(AdkRun *run, const char *branch)
{
	AdkHistoryMark none = {0};
	bool		compacted;
	bool		stale;
	List	   *rows = adk_session_history(run->app, run->user, run->session,
										   &none, CurrentMemoryContext,
										   &compacted, &stale);

	return hist_events(run, branch, rows, NULL);
}

/*
 * The events of rows (store/session_read.c) as prompt assembly sees them:
 * into cache, or (no cache) returned.
 */
static List *
hist_events(AdkRun *run, const char *branch, List *rows, HistCache *cache)
{
	List	   *result = NIL;
	MemoryContext caller = CurrentMemoryContext;
	ListCell   *lc;

	foreach(lc, rows)
	{
		AdkSessionEvent *row = (AdkSessionEvent *) lfirst(lc);
		HistEvent  *h;
		/* the run's own answer, with the thoughts it did not store */
		Jsonb	   *ev = adk_thoughts_restore(run, row->seq, row->event);

		MemoryContextSwitchTo(cache ? cache->cxt : caller);
		h = adk_hist_event(ev, branch, run->scope);
		/* a node's prompt: this invocation's events (single_turn.c) */
		if (h != NULL && !adk_node_event_visible(run, branch, row->event))
			h = NULL;
		if (cache)
		{
			if (h)
			{
				note_ids(cache, h, list_length(cache->events));
				cache->events = lappend(cache->events, h);
				cache->bytes += h->content_len;
				cache->event_bytes += VARSIZE(h->event);
			}
		}
		else if (h)
			result = lappend(result, h);
		MemoryContextSwitchTo(caller);
		/* adk_hist_event kept a copy of what it needs */
		if (ev != row->event)
			pfree(ev);
		pfree(row->event);
		pfree(row);
	}
	list_free(rows);
	return result;
}

/*
 * Copies of cache's events from index "from" on, which the caller marks
 * consumed (kept: the cached one, when keep; else their pieces are not
 * kept with them).
 */
List *
adk_hist_copies(HistCache *cache, int from, bool keep)
{
	List	   *result = NIL;
	int			n = list_length(cache->events);
	int			i;

	for (i = from; i < n; i++)
	{
		HistEvent  *orig = list_nth(cache->events, i);
		HistEvent  *h = palloc(sizeof(HistEvent));

		*h = *orig;
		h->consumed = false;
		h->kept = keep ? orig : NULL;
		result = lappend(result, h);
	}
	return result;
}

/*
 * Let go of the pieces kept with cache's events and of its last request
 * (PromptMemo): the next request is built whole.
 */
void
adk_hist_forget_pieces(HistCache *cache)
{
	PromptMemo *m = &cache->memo;
	ListCell   *lc;

	foreach(lc, cache->events)
	{
		HistEvent  *h = (HistEvent *) lfirst(lc);

		if (h->piece != NULL)
			pfree(h->piece);
		if (h->resp_piece != NULL)
		{
			pfree(h->resp_piece);
			pfree(h->resp_steps);
		}
		h->piece = NULL;
		h->resp_piece = NULL;
		h->resp_steps = NULL;
		h->resp_nsteps = 0;
	}
	if (m->contents != NULL)
		pfree(m->contents);
	if (m->agent != NULL)
		pfree(m->agent);
	m->contents = NULL;
	m->agent = NULL;
	m->nevents = 0;
}

/*
 * Let go of what cache read (the events, their pieces, the ids; the last
 * request too): the next request reads the branch's history again from
 * the start.
 */
void
adk_hist_forget_events(HistCache *cache)
{
	adk_hist_forget_pieces(cache);
	MemoryContextReset(cache->cxt);
	memset(&cache->mark, 0, sizeof(cache->mark));
	cache->carried = false;
	cache->events = NIL;
	cache->bytes = 0;
	cache->event_bytes = 0;
	cache->ids = NULL;
	cache->ids_mask = 0;
	cache->nids = 0;
}

/* The entry of id in cache's ids, or NULL */
static FirstId *
first_id(HistCache *cache, const char *id, uint32 hash)
{
	FirstId    *f;

	if (cache->ids == NULL)
		return NULL;
	for (f = cache->ids[hash & cache->ids_mask]; f != NULL; f = f->next)
		if (f->hash == hash && strcmp(f->id, id) == 0)
			return f;
	return NULL;
}

/*
 * Enter the ids of h, the event at index "at" of cache, into its table (in
 * the current memory context, the cache's).
 */
static void
note_ids(HistCache *cache, HistEvent *h, int at)
{
	int			k;

	for (k = 0; k < h->npinfo; k++)
	{
		PartInfo   *p = &h->pinfo[k];
		FirstId    *f;

		if (p->kind == 0 || p->id == NULL)
			continue;
		if ((f = first_id(cache, p->id, p->hash)) == NULL)
		{
			if (cache->ids == NULL || cache->nids >= (int) cache->ids_mask)
			{
				/* twice as many buckets, or 64 to start */
				uint32		nb = cache->ids ? (cache->ids_mask + 1) * 2 : 64;
				FirstId   **b = palloc0(sizeof(FirstId *) * nb);
				uint32		j;

				for (j = 0; cache->ids != NULL && j <= cache->ids_mask; j++)
				{
					FirstId    *next;

					for (f = cache->ids[j]; f != NULL; f = next)
					{
						next = f->next;
						f->next = b[f->hash & (nb - 1)];
						b[f->hash & (nb - 1)] = f;
					}
				}
				if (cache->ids != NULL)
					pfree(cache->ids);
				cache->ids = b;
				cache->ids_mask = nb - 1;
			}
			f = palloc(sizeof(FirstId));
			f->id = p->id;
			f->hash = p->hash;
			f->first = at;
			f->next = cache->ids[p->hash & cache->ids_mask];
			cache->ids[p->hash & cache->ids_mask] = f;
			cache->nids++;
		}
	}
}

/*
 * Where the next request of cache's events for agent stops being the
 * previous one (its memo): the events before the index returned give the
 * same contents as they did then, and are not looked at again.  0 when
 * there is no memo for agent.
 *
 * What an event gives depends on the event, the agent, whether it is left
 * out by the cut to the latest response, and on the events that share an
 * id with its calls or responses (pairing; the responses moved up after a
 * call; of two responses the later wins) -- nothing else.  So the events
 * from "from" on are made again, where from is at most
 *	- the first new event, and the previous request's cut (the events it
 *	  left out may be sent now);
 *	- the first event with an id that an event from "from" on has, down to
 *	  a fixpoint: no id is then shared between the events before "from"
 *	  and those after, so what is paired before is paired as it was.
 * The cut this request makes is covered by the second: the newest event
 * is new or was the newest then, and the call event it answers has its
 * id.  An id is usually new or recent, so "from" stays near the end.
 */
int
adk_hist_resume_at(HistCache *cache, AdkAgent *agent)
{
	PromptMemo *m = &cache->memo;
	int			n = list_length(cache->events);
	int			from;
	int			i;
	int			k;

	if (m->agent == NULL || strcmp(m->agent, agent->name) != 0 ||
		m->nevents > n)
		return 0;
	from = Min(m->nevents, m->cut_from);
	for (i = n - 1; i >= from; i--)
	{
		HistEvent  *e = list_nth(cache->events, i);

		for (k = 0; k < e->npinfo; k++)
		{
			PartInfo   *p = &e->pinfo[k];
			FirstId    *f;

			if (p->kind == 0 || p->id == NULL)
				continue;
			f = first_id(cache, p->id, p->hash);
			Assert(f != NULL);
			if (f != NULL && f->first < from)
				from = f->first;
		}
	}
	return from;
}

/*
 * The request just made of cache's events (result; its events from "from"
 * on: len of them, ev_elem as for PromptMemo but counted from nkeep, the
 * contents kept from the memo; cut_from as for PromptMemo) becomes the
 * memo, in what the run keeps of its history (adk_hist_cxt; result
 * itself, made there: the memo takes it).
 */
void
adk_hist_memo_keep(AdkRun *run, HistCache *cache, AdkAgent *agent, int from,
				   int len, const int *ev_elem, int nkeep, int cut_from,
				   Jsonb *result)
{
	PromptMemo *m = &cache->memo;
	int			n = from + len;
	int			j;

	if (m->agent == NULL || strcmp(m->agent, agent->name) != 0)
	{
		if (m->agent != NULL)
			pfree(m->agent);
		m->agent = MemoryContextStrdup(adk_hist_cxt(run), agent->name);
	}
	if (m->cap < n + 1)
	{
		int			cap = Max(n + 1, m->cap * 2);

		m->ev_elem = m->ev_elem ? repalloc(m->ev_elem, sizeof(int) * cap) :
			MemoryContextAlloc(adk_hist_cxt(run), sizeof(int) * cap);
		m->cap = cap;
	}
	for (j = 0; j <= len; j++)
		m->ev_elem[from + j] = nkeep + ev_elem[j];
	m->nevents = n;
	m->cut_from = cut_from;
	if (m->contents != NULL)
		pfree(m->contents);
	m->contents = result;
}
