/*-------------------------------------------------------------------------
 *
 * prompt.c
 *	  Prompt assembly: the contents of a request, what the model sees of
 *	  the session history, and the pairing of function calls and responses.
 *
 * The rules are ADK Python's flows/llm_flows/contents.py:
 *	- events without content, partial events, events of other branches
 *	  (an event's branch must be a prefix of the current one) and the
 *	  internal adk_request_confirmation / adk_request_credential calls are
 *	  skipped;
 *	- events written by other agents reach this agent as user-role context:
 *	  "For context:", "[agent] said: ...", "[agent] called tool `x` with
 *	  parameters: ...", "[agent] `x` tool returned result: ...";
 *	- a function response always directly follows its function call: a
 *	  late (long-running) response is moved up next to its call, several
 *	  responses to one call event are merged into one content, and of two
 *	  responses to one call id the later wins; when the newest event is a
 *	  late response, the events between its call and it are left out;
 *	- ids the runner generated for calls ("adk-...") are removed;
 *	- the request is always valid, whatever the history holds: a function
 *	  call is sent only with its response (except a pending long-running
 *	  call, which ADK sends as it is), a response only with its call.  So
 *	  a turn another runtime is still writing (ADK-JS appends its call and
 *	  its response as two events, each under its own lock) is left out
 *	  until its response is in: a run never waits for another runtime;
 *	- include_contents = 'none' keeps only the current turn: from the
 *	  latest user (or other agent's) event on -- from the call it answers
 *	  when that event is a function response.
 * The history is read by the store (store/session_read.c), in seq order
 * through the (app, user, session, seq) index, or by adk._prompt_events
 * (sql/install/65_compaction.sql) once the session is compacted:
 * compaction summaries stand in for the events they cover, and only the
 * events after the covered prefix are read.  What a run keeps of it
 * between requests, and where the next request resumes, is
 * prompt_memo.c's; the system instruction is prompt_instruction.c's.
 *
 * IDENTIFICATION
 *	  src/runner/prompt.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "common/hashfn.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "common/json_writer.h"
#include "common/jsonb_util.h"
#include "model/generate.h"
#include "runner/builtin_tools.h"
#include "runner/prompt_history.h"
#include "runner/runner.h"

/* The contents of a request, as the containers of its pieces */
typedef struct ContentsOut
{
	JsonbValue *elems;
	int			n;
	int			cap;
} ContentsOut;

/*
 * The call and response ids of a request, built once per request so that
 * pairing costs O(parts), not O(history) per call (a tool loop sends the
 * whole history with every model call):
 * sent_call / sent_response, whether the request sends a call / response
 * with the id (the user's and this agent's events from the start of the
 * request on, not left out), so that no call goes without its response
 * nor a response without its call; resp, the events of the whole history
 * that are responses only, answer the id and are not left out by the cut
 * to the latest response (cut_to_latest_response), in order.  A response
 * the cut leaves out does not replace an earlier one (it did, and the
 * call then went without any response).
 */
typedef struct IdEntry
{
	struct IdEntry *next;
	const char *id;
	uint32		hash;
	bool		sent_call;
	bool		sent_response;
	int			nresp;
	int			cap;
	int		   *resp;
} IdEntry;

typedef struct IdIndex
{
	IdEntry   **buckets;
	uint32		mask;
} IdIndex;

static Jsonb *build_from(AdkRun *run, AdkAgent *agent, HistCache *cache,
						 List *fresh, int from);
static void write_own_content(JsonWriter *w, HistEvent *e, IdIndex *ix);
static void build_index(List *history, int start, const char *agent,
						IdIndex *ix);
static IdEntry *index_get(IdIndex *ix, const char *id, uint32 hash);
static bool part_is_paired(HistEvent *e, int k, IdIndex *ix);
static void write_other_agent_content(JsonWriter *w, HistEvent *e);
static void write_part(JsonWriter *w, JsonbValue *part);
static void write_members(JsonWriter *w, JsonbContainer *c, const char *skip,
						  const char *drop);
static Jsonb *responses_piece(List *history, int at, HistEvent *call_event,
							  AdkAgent *agent, IdIndex *ix);
static List *part_ids(HistEvent *e, char kind);
static bool answers(HistEvent *e, char kind, List *ids);
static bool answered_later(IdIndex *ix, int after, PartInfo *p);
static int	cut_to_latest_response(List *history, int start);
static Jsonb *event_piece(HistEvent *e, bool other, IdIndex *ix);
static void add_piece(ContentsOut *out, Jsonb *piece);

/*
 * The contents array of the next request for "agent" on "branch".
 *
 * A run's requests extend each other (prompt_memo.c): the contents the
 * events before "from" gave last time are copied as they are, and only
 * the events from there on are paired and placed (adk_hist_resume_at says
 * where that is).  So a request costs O(new events) plus a copy of its
 * bytes, not O(history).
 *
 * In a run, the result is the branch's prompt memo's (in the run's
 * memory): read-only, and valid until the branch's next request is built
 * (a model call's rounds on a branch follow one another).  Otherwise it is
 * in the current memory context.
 */
Jsonb *
adk_build_contents(AdkRun *run, AdkAgent *agent, const char *branch)
{
	HistCache *cache;
	List	   *fresh = adk_hist_read(run, branch, &cache);
	int			from = 0;
	Jsonb	   *result;

	if (cache != NULL && (cache->bytes > adk_request_memo_max() ||
						  cache->event_bytes > 2 * adk_request_memo_max()))
	{
		/*
		 * What the run keeps for its next requests (a piece per event, the
		 * last request) holds the history twice more: only for requests up
		 * to adk_request_memo_max (the events' contents, about what they
		 * give a request), of events of at most twice that (their ids,
		 * times and actions besides).  A larger history is built whole
		 * every time.
		 */
		adk_hist_forget_pieces(cache);
		result = build_from(run, agent, NULL, adk_hist_copies(cache, 0, false), 0);

		/*
		 * And the history read goes now that its contents are made: a
		 * request in flight holds its contents and its text, not the
		 * history a third time.  The next request reads it again.
		 */
		adk_hist_forget_events(cache);
		return result;
	}
	if (cache != NULL && !agent->include_contents_none)
		from = adk_hist_resume_at(cache, agent);
	result = build_from(run, agent, cache, fresh, from);
	if (adk_verify_incremental && cache != NULL && (from > 0 || cache->carried))
	{
		/*
		 * The same request made from the whole history (tests): of the
		 * events this run read, or, when an earlier run read them
		 * (prompt_carry.c), of the history read again from the store.
		 */
		Jsonb	   *full = build_from(run, agent, NULL,
									  cache->carried ? adk_hist_read_whole(run, branch) :
									  adk_hist_copies(cache, 0, true), 0);

		if (VARSIZE(full) != VARSIZE(result) ||
			memcmp(full, result, VARSIZE(full)) != 0)
			elog(ERROR, "incremental prompt differs from the prompt built from the whole history (resumed at event %d%s)",
				 from, cache->carried ? ", of an earlier run's history" : "");
		pfree(full);
	}
	return result;
}

/*
 * The request of "history" (events "from" on of cache's; with no cache,
 * fresh, the whole history).  With a cache whose memo was made for this
 * agent, the contents of the events before "from" are the memo's; the
 * memo then takes the new request.
 */
static Jsonb *
build_from(AdkRun *run, AdkAgent *agent, HistCache *cache, List *fresh,
		   int from)
{
	List	   *history = cache ? adk_hist_copies(cache, from, true) : fresh;
	int			len = list_length(history);
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext pieces;
	JsonWriter	w;
	IdIndex		ix;
	ContentsOut out;
	int		   *ev_elem = palloc(sizeof(int) * (len + 1));
	int			start = 0;
	int			cut;
	int			nkeep = 0;
	List	   *last;
	Jsonb	   *result;
	int			i;

	if (agent->include_contents_none)
	{
		for (i = len - 1; i >= 0; i--)
		{
			HistEvent  *e = list_nth(history, i);

			if (strcmp(e->author, "user") == 0 ||
				strcmp(e->author, agent->name) != 0)
			{
				start = i;
				break;
			}
		}
	}

	if (start > 0 && ((HistEvent *) list_nth(history, start))->only_responses)
	{
		/*
		 * The current turn is an answer to an earlier call (a long-running
		 * one, say): it starts at that call, so the answer is not sent
		 * without it.
		 */
		List	   *ids = part_ids(list_nth(history, start), 'r');

		for (i = start - 1; i >= 0 && ids != NIL; i--)
		{
			HistEvent  *e = list_nth(history, i);

			if (e->has_calls && answers(e, 'c', ids))
			{
				start = i;
				break;
			}
		}
	}

	/*
	 * The pieces not kept with their events, the index and the writers'
	 * values go once the request is made of them
	 */
	pieces = AllocSetContextCreate(caller, "adk_runner prompt pieces",
								   ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(pieces);
	cut = cut_to_latest_response(history, start);
	build_index(history, start, agent->name, &ix);

	/*
	 * The request is its pieces, in order: each event's own (kept with the
	 * event when it can be), the responses moved up to a call, and the
	 * loaded artifacts.  The array is made of their bytes, so an event
	 * whose piece is kept costs a copy, not a rewrite.
	 */
	memset(&out, 0, sizeof(out));
	for (i = 0; i < len; i++)
	{
		HistEvent  *e = list_nth(history, i);
		bool		other;

		ev_elem[i] = out.n;
		if (i < start || e->consumed)
			continue;
		other = strcmp(e->author, "user") != 0 &&
			strcmp(e->author, agent->name) != 0;
		add_piece(&out, event_piece(e, other, &ix));
		if (e->has_calls)
		{
			Jsonb	   *resp = responses_piece(history, i, e, agent, &ix);

			if (resp != NULL)
				add_piece(&out, resp);
		}
	}
	ev_elem[len] = out.n;
	/* load_artifacts (builtin_tools.c): the artifacts it loaded */
	jw_init(&w);
	jw_begin_array(&w);
	last = cache ? cache->events : history;
	adk_builtin_contents(run, agent, &w, last != NIL ?
						 ((HistEvent *) llast(last))->event : NULL);
	jw_end_array(&w);
	add_piece(&out, jw_finish(&w));
	MemoryContextSwitchTo(caller);

	if (cache == NULL || agent->include_contents_none)
	{
		result = adk_jsonb_array_of(out.elems, out.n);
		MemoryContextDelete(pieces);
		return result;
	}
	nkeep = from > 0 ? cache->memo.ev_elem[from] : 0;
	/* the memo's own: one copy of the request's contents, not two */
	MemoryContextSwitchTo(adk_hist_cxt(run));
	result = nkeep > 0 ?
		adk_jsonb_array_extend(cache->memo.contents, nkeep, out.elems, out.n) :
		adk_jsonb_array_of(out.elems, out.n);
	MemoryContextSwitchTo(caller);
	adk_hist_memo_keep(run, cache, agent, from, len, ev_elem, nkeep,
			  cut >= 0 ? from + cut : INT_MAX, result);
	MemoryContextDelete(pieces);
	pfree(ev_elem);
	return result;
}

/*
 * The piece of the request e makes (see HistEvent), kept or made.
 */
static Jsonb *
event_piece(HistEvent *e, bool other, IdIndex *ix)
{
	bool		pairs = !other && (e->has_calls || e->has_responses);
	uint64		sig = 0;
	/* only a run's events outlive the request (adk_prompt has no run) */
	bool		keep = e->kept != NULL && (!pairs || e->npinfo <= 64);
	HistEvent  *owner = e->kept;
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext tmp;
	JsonWriter	w;
	Jsonb	   *piece;
	Jsonb	   *made;
	int			k;

	if (pairs && keep)
		for (k = 0; k < e->npinfo; k++)
			if (part_is_paired(e, k, ix))
				sig |= UINT64CONST(1) << k;
	if (keep && owner->piece != NULL && owner->piece_other == other &&
		owner->piece_sig == sig)
		return owner->piece;

	/*
	 * Written in a context of its own: the writer's values (a copy of the
	 * event's) go as soon as the piece is copied out, once, to where it
	 * lives -- the event's memory when it is kept with the event, else the
	 * caller's.
	 */
	tmp = AllocSetContextCreate(caller, "adk_runner prompt piece",
								ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(tmp);
	jw_init(&w);
	jw_begin_array(&w);
	if (other)
		write_other_agent_content(&w, e);
	else
		write_own_content(&w, e, ix);
	jw_end_array(&w);
	made = jw_finish(&w);
	MemoryContextSwitchTo(caller);
	piece = MemoryContextAlloc(keep ? GetMemoryChunkContext(owner) : caller,
							   VARSIZE(made));
	memcpy(piece, made, VARSIZE(made));
	MemoryContextDelete(tmp);
	if (keep)
	{
		/* in the event's memory: it goes with the event */
		if (owner->piece != NULL)
			pfree(owner->piece);	/* made for another view or pairing */
		owner->piece = piece;
		owner->piece_other = other;
		owner->piece_sig = sig;
	}
	return piece;
}

/*
 * Add the contents of piece (an array of contents) to out.
 */
static void
add_piece(ContentsOut *out, Jsonb *piece)
{
	uint32		n = JB_ROOT_COUNT(piece);
	uint32		i;

	for (i = 0; i < n; i++)
	{
		JsonbValue *v = getIthJsonbValueFromContainer(&piece->root, i);

		if (out->n == out->cap)
		{
			out->cap = out->cap ? out->cap * 2 : 64;
			out->elems = out->elems ?
				repalloc(out->elems, sizeof(JsonbValue) * out->cap) :
				palloc(sizeof(JsonbValue) * out->cap);
		}
		out->elems[out->n++] = *v;
		pfree(v);
	}
}

/*
 * The entry of id (hash: its hash) in ix; NULL when none.
 */
static IdEntry *
index_get(IdIndex *ix, const char *id, uint32 hash)
{
	IdEntry    *e;

	for (e = ix->buckets[hash & ix->mask]; e != NULL; e = e->next)
		if (e->hash == hash && strcmp(e->id, id) == 0)
			return e;
	return NULL;
}

static IdEntry *
index_add(IdIndex *ix, const char *id, uint32 hash)
{
	IdEntry    *e = index_get(ix, id, hash);

	if (e == NULL)
	{
		e = palloc0(sizeof(IdEntry));
		e->id = id;
		e->hash = hash;
		e->next = ix->buckets[hash & ix->mask];
		ix->buckets[hash & ix->mask] = e;
	}
	return e;
}

/*
 * The request's ids (IdIndex), from the history after the turn is cut
 * (the events left out are marked consumed).
 */
static void
build_index(List *history, int start, const char *agent, IdIndex *ix)
{
	int			nids = 0;
	uint32		nb = 16;
	int			i;
	int			k;

	for (i = 0; i < list_length(history); i++)
		nids += ((HistEvent *) list_nth(history, i))->npinfo;
	while (nb < (uint32) nids * 2 && nb < (1U << 30))
		nb <<= 1;
	ix->buckets = palloc0(sizeof(IdEntry *) * nb);
	ix->mask = nb - 1;
	for (i = 0; i < list_length(history); i++)
	{
		HistEvent  *e = list_nth(history, i);
		bool		sent = i >= start && !e->consumed &&
			(strcmp(e->author, "user") == 0 || strcmp(e->author, agent) == 0);

		for (k = 0; k < e->npinfo; k++)
		{
			PartInfo   *p = &e->pinfo[k];
			IdEntry    *ent;

			if (p->id == NULL || p->kind == 0)
				continue;
			ent = index_add(ix, p->id, p->hash);
			if (sent && p->kind == 'c')
				ent->sent_call = true;
			else if (sent)
				ent->sent_response = true;
			if (p->kind == 'r' && e->only_responses && !e->consumed &&
				(ent->nresp == 0 || ent->resp[ent->nresp - 1] != i))
			{
				if (ent->nresp == ent->cap)
				{
					ent->cap = ent->cap ? ent->cap * 2 : 2;
					ent->resp = ent->resp ?
						repalloc(ent->resp, sizeof(int) * ent->cap) :
						palloc(sizeof(int) * ent->cap);
				}
				ent->resp[ent->nresp++] = i;
			}
		}
	}
}

/*
 * Whether part k of e may be sent: a function call only with its response
 * (or while it is a pending long-running call of e, which ADK sends as
 * it is), a function response only with its call.  What is left out is
 * another runtime's turn still being written (its call is stored, its
 * response not yet), or an answer to a call the history does not hold:
 * the request stays valid for every provider, and the open call is sent
 * once its response is in.
 */
static bool
part_is_paired(HistEvent *e, int k, IdIndex *ix)
{
	PartInfo   *p = k < e->npinfo ? &e->pinfo[k] : NULL;
	IdEntry    *ent;

	if (p == NULL || p->kind == 0 || p->id == NULL)
		return true;
	ent = index_get(ix, p->id, p->hash);
	if (p->kind == 'c')
		return (ent != NULL && ent->sent_response) || p->long_running;
	return ent != NULL && ent->sent_call;
}

static void
write_own_content(JsonWriter *w, HistEvent *e, IdIndex *ix)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	int			kept = 0;
	int			k;

	for (k = 0; k < (int) JsonContainerSize(e->parts); k++)
		if (part_is_paired(e, k, ix))
			kept++;
	if (kept == 0)
		return;
	it = JsonbIteratorInit(e->parts);
	jw_begin_object(w);
	jw_key(w, "role");
	jw_string(w, e->role ? e->role :
			  (strcmp(e->author, "user") == 0 ? "user" : "model"));
	jw_key(w, "parts");
	jw_begin_array(w);
	k = 0;
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		if (tok == WJB_ELEM && part_is_paired(e, k++, ix))
			write_part(w, &v);
	jw_end_array(w);
	jw_end_object(w);
}

/*
 * A part, without a function call's / response's "adk-" id; its other
 * members (a thought_signature, docs/models.md "Thinking") as they are.
 */
static void
write_part(JsonWriter *w, JsonbValue *part)
{
	const char *kinds[2] = {"function_call", "function_response"};
	int			k;

	if (part->type == jbvBinary)
	{
		for (k = 0; k < 2; k++)
		{
			JsonbValue *f = adk_jsonb_get(part->val.binary.data, kinds[k]);
			char	   *id;

			if (f == NULL || f->type != jbvBinary)
				continue;
			id = adk_jstr(f->val.binary.data, "id");
			if (id == NULL || strncmp(id, "adk-", 4) != 0)
				break;
			/* rebuild the part without the id */
			jw_begin_object(w);
			write_members(w, part->val.binary.data, kinds[k], NULL);
			jw_key(w, kinds[k]);
			jw_begin_object(w);
			write_members(w, f->val.binary.data, NULL, "id");
			jw_end_object(w);
			jw_end_object(w);
			return;
		}
	}
	jw_value(w, part);
}

/*
 * The members of object c but the one named skip (NULL: none) and the
 * one named drop (NULL: none).
 */
static void
write_members(JsonWriter *w, JsonbContainer *c, const char *skip,
			  const char *drop)
{
	JsonbIterator *it = JsonbIteratorInit(c);
	JsonbValue	kv;
	JsonbValue	vv;
	JsonbIteratorToken tok;

	while ((tok = JsonbIteratorNext(&it, &kv, true)) != WJB_DONE)
	{
		char	   *key;

		if (tok != WJB_KEY)
			continue;
		(void) JsonbIteratorNext(&it, &vv, true);
		key = pnstrdup(kv.val.string.val, kv.val.string.len);
		if ((skip != NULL && strcmp(key, skip) == 0) ||
			(drop != NULL && strcmp(key, drop) == 0))
			continue;
		jw_key(w, key);
		jw_value(w, &vv);
	}
}

/*
 * Does a part of e of the given kind ("function_call" or
 * "function_response") carry one of ids?
 */
/*
 * The ids of e's parts of kind ('c' calls, 'r' responses), in order.
 */
static List *
part_ids(HistEvent *e, char kind)
{
	List	   *ids = NIL;
	int			k;

	for (k = 0; k < e->npinfo; k++)
		if (e->pinfo[k].kind == kind && e->pinfo[k].id != NULL)
			ids = lappend(ids, e->pinfo[k].id);
	return ids;
}

/*
 * Whether a part of e of kind has one of ids.
 */
static bool
answers(HistEvent *e, char kind, List *ids)
{
	int			k;
	ListCell   *lc;

	for (k = 0; k < e->npinfo; k++)
	{
		if (e->pinfo[k].kind != kind || e->pinfo[k].id == NULL)
			continue;
		foreach(lc, ids)
			if (strcmp((char *) lfirst(lc), e->pinfo[k].id) == 0)
				return true;
	}
	return false;
}

/*
 * Whether an event after "after" that is responses only answers p's id.
 */
static bool
answered_later(IdIndex *ix, int after, PartInfo *p)
{
	IdEntry    *ent = p->id ? index_get(ix, p->id, p->hash) : NULL;

	return ent != NULL && ent->nresp > 0 && ent->resp[ent->nresp - 1] > after;
}

/*
 * ADK's _rearrange_events_for_latest_function_response: when the newest
 * event answers a call that is not the event just before it (a late,
 * long-running answer), the events in between are left out, except
 * responses to any call of that call event (an answer given in an earlier
 * turn to another call of the same event stays), so the request ends with
 * the call event and its answers.  Returns the index of that call event,
 * or -1 when nothing is left out.
 */
static int
cut_to_latest_response(List *history, int start)
{
	int			last = list_length(history) - 1;
	HistEvent  *resp;
	List	   *ids;
	int			c;
	int			i;

	if (last <= start)
		return -1;
	resp = list_nth(history, last);
	if (!resp->only_responses)
		return -1;
	ids = part_ids(resp, 'r');
	for (c = last - 1; c >= start; c--)
	{
		HistEvent  *e = list_nth(history, c);

		if (e->has_calls && answers(e, 'c', ids))
			break;
	}
	if (c < start || c == last - 1)
		return -1;

	/* every call of that event, not only those the newest event answers */
	ids = part_ids(list_nth(history, c), 'c');
	for (i = c + 1; i < last; i++)
	{
		HistEvent  *e = list_nth(history, i);

		if (!(e->only_responses && answers(e, 'r', ids)))
			e->consumed = true;
	}
	return c;
}

static int
int_cmp(const void *a, const void *b)
{
	int			x = *(const int *) a;
	int			y = *(const int *) b;

	return x < y ? -1 : x > y;
}

/*
 * After the call event at index "at": the later response events that
 * answer its calls, merged into one user content (and marked so they are
 * not repeated); another agent's responses are presented as that agent's
 * context.  A response answered again later is left out (the later one
 * wins).  As a piece (an array of contents), or NULL when there is none;
 * kept with the call event (HistEvent.resp_piece) and reused while the
 * same events answer it in the same way.
 */
static Jsonb *
responses_piece(List *history, int at, HistEvent *call_event,
				AdkAgent *agent, IdIndex *ix)
{
	HistEvent  *owner = call_event->kept;
	bool		call_other = strcmp(call_event->author, "user") != 0 &&
		strcmp(call_event->author, agent->name) != 0;
	bool		keep = owner != NULL;
	int		   *cand = NULL;
	int			ncand = 0;
	RespStep   *steps;
	int			nsteps = 0;
	JsonWriter	w;
	bool		opened = false;
	Jsonb	   *piece;
	int			k;
	int			c;

	/* the events that answer a call of it, in order, each once */
	for (k = 0; k < call_event->npinfo; k++)
	{
		PartInfo   *p = &call_event->pinfo[k];
		IdEntry    *ent;
		int			r;

		if (p->kind != 'c' || p->id == NULL ||
			(ent = index_get(ix, p->id, p->hash)) == NULL)
			continue;
		for (r = 0; r < ent->nresp; r++)
		{
			if (ent->resp[r] <= at)
				continue;
			cand = cand ? repalloc(cand, sizeof(int) * (ncand + 1)) :
				palloc(sizeof(int));
			cand[ncand++] = ent->resp[r];
		}
	}
	if (ncand == 0)
		return NULL;
	qsort(cand, ncand, sizeof(int), int_cmp);

	steps = palloc(sizeof(RespStep) * ncand);
	for (c = 0; c < ncand; c++)
	{
		HistEvent  *e;
		RespStep   *st;

		if (c > 0 && cand[c] == cand[c - 1])
			continue;
		e = list_nth(history, cand[c]);
		if (e->consumed || !e->only_responses)
			continue;
		st = &steps[nsteps];
		st->at = cand[c];
		st->src = e->kept;
		st->skip = 0;
		st->other = strcmp(e->author, "user") != 0 &&
			strcmp(e->author, agent->name) != 0;
		if (!st->other && call_other)
			continue;			/* that call went out as text: no response to it */
		if (!st->other)
		{
			if (e->npinfo > 64)
				keep = false;
			for (k = 0; k < e->npinfo && k < 64; k++)
				if (e->pinfo[k].kind == 'r' && e->pinfo[k].id != NULL &&
					answered_later(ix, cand[c], &e->pinfo[k]))
					st->skip |= UINT64CONST(1) << k;
		}
		if (st->src == NULL)
			keep = false;
		e->consumed = true;
		nsteps++;
	}
	if (nsteps == 0)
		return NULL;

	if (keep && owner->resp_piece != NULL && owner->resp_nsteps == nsteps)
	{
		for (c = 0; c < nsteps; c++)
			if (owner->resp_steps[c].src != steps[c].src ||
				owner->resp_steps[c].other != steps[c].other ||
				owner->resp_steps[c].skip != steps[c].skip)
				break;
		if (c == nsteps)
			return owner->resp_piece;
	}

	jw_init(&w);
	jw_begin_array(&w);
	for (c = 0; c < nsteps; c++)
	{
		HistEvent  *e = list_nth(history, steps[c].at);
		JsonbIterator *it;
		JsonbValue	v;
		JsonbIteratorToken tok;

		if (steps[c].other)
		{
			/* another agent's responses stay that agent's words, in order */
			write_other_agent_content(&w, e);
			continue;
		}
		if (!opened)
		{
			jw_begin_object(&w);
			jw_key(&w, "role");
			jw_string(&w, "user");
			jw_key(&w, "parts");
			jw_begin_array(&w);
			opened = true;
		}
		it = JsonbIteratorInit(e->parts);
		k = 0;
		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		{
			PartInfo   *p;

			if (tok != WJB_ELEM)
				continue;
			p = &e->pinfo[k++];
			if (p->kind == 'r' && p->id != NULL &&
				answered_later(ix, steps[c].at, p))
				continue;
			write_part(&w, &v);
		}
	}
	if (opened)
	{
		jw_end_array(&w);
		jw_end_object(&w);
	}
	jw_end_array(&w);
	piece = jw_finish(&w);
	if (keep)
	{
		MemoryContext cxt = GetMemoryChunkContext(owner);

		if (owner->resp_piece != NULL)
		{
			pfree(owner->resp_piece);
			pfree(owner->resp_steps);
		}
		owner->resp_piece = MemoryContextAlloc(cxt, VARSIZE(piece));
		memcpy(owner->resp_piece, piece, VARSIZE(piece));
		owner->resp_steps = MemoryContextAlloc(cxt, sizeof(RespStep) * nsteps);
		memcpy(owner->resp_steps, steps, sizeof(RespStep) * nsteps);
		owner->resp_nsteps = nsteps;
	}
	return piece;
}

/*
 * Another agent's event, as user-role context (ADK's
 * _present_other_agent_message).
 */
static void
write_other_agent_content(JsonWriter *w, HistEvent *e)
{
	JsonbIterator *it = JsonbIteratorInit(e->parts);
	JsonbValue	v;
	JsonbIteratorToken tok;

	jw_begin_object(w);
	jw_key(w, "role");
	jw_string(w, "user");
	jw_key(w, "parts");
	jw_begin_array(w);
	jw_begin_object(w);
	jw_key(w, "text");
	jw_string(w, "For context:");
	jw_end_object(w);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		JsonbValue *t;
		JsonbValue *f;
		char	   *text = NULL;

		if (tok != WJB_ELEM || v.type != jbvBinary)
			continue;
		if ((t = adk_jsonb_get(v.val.binary.data, "thought")) != NULL &&
			t->type == jbvBool && t->val.boolean)
			continue;
		if ((t = adk_jsonb_get(v.val.binary.data, "text")) != NULL &&
			t->type == jbvString)
			text = psprintf("[%s] said: %.*s", e->author,
							t->val.string.len, t->val.string.val);
		else if ((f = adk_jsonb_get(v.val.binary.data, "function_call")) != NULL &&
				 f->type == jbvBinary)
		{
			JsonbValue *a = adk_jsonb_get(f->val.binary.data, "args");

			text = psprintf("[%s] called tool `%s` with parameters: %s",
							e->author, adk_jstr(f->val.binary.data, "name"),
							a && a->type == jbvBinary ?
							JsonbToCString(NULL, a->val.binary.data, -1) : "{}");
		}
		else if ((f = adk_jsonb_get(v.val.binary.data, "function_response")) != NULL &&
				 f->type == jbvBinary)
		{
			JsonbValue *r = adk_jsonb_get(f->val.binary.data, "response");

			text = psprintf("[%s] `%s` tool returned result: %s",
							e->author, adk_jstr(f->val.binary.data, "name"),
							r && r->type == jbvBinary ?
							JsonbToCString(NULL, r->val.binary.data, -1) : "{}");
		}
		if (text == NULL)
			continue;
		jw_begin_object(w);
		jw_key(w, "text");
		jw_string(w, text);
		jw_end_object(w);
	}
	jw_end_array(w);
	jw_end_object(w);
}
