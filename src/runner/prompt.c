/*-------------------------------------------------------------------------
 *
 * prompt.c
 *	  Prompt assembly: what the model sees of the session history, and the
 *	  system instruction.
 *
 * The rules are ADK Python's flows/llm_flows/contents.py (SPEC §5):
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
 * events after the covered prefix are read.
 *
 * IDENTIFICATION
 *	  src/runner/prompt.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "common/json_writer.h"
#include "common/jsonb_util.h"
#include "runner/builtin_tools.h"
#include "runner/runner.h"
#include "store/session_read.h"

/* One event of the history, as prompt assembly sees it. */
typedef struct HistEvent
{
	Jsonb	   *event;
	char	   *author;
	JsonbContainer *parts;		/* content.parts, NULL when none */
	char	   *role;
	bool		has_calls;
	bool		only_responses; /* every part a function_response */
	bool		has_responses;
	bool		consumed;		/* already placed after its call */

	/*
	 * What the event itself adds to a request (a jsonb array of 0 or 1
	 * contents), kept with the event for the run's next requests when it
	 * depends on nothing but the event: another agent's event (as
	 * context), or one without function calls and responses (whose pairing
	 * depends on the rest of the history).  piece_other: made as another
	 * agent's event.  The history cache's rules (compaction, other
	 * writers, branches) decide which events there are; a piece lives and
	 * goes with its event.
	 */
	Jsonb	   *piece;
	bool		piece_other;
	struct HistEvent *kept;		/* the run's event this is a copy of, or NULL */
} HistEvent;

/* The contents of a request, as the containers of its pieces */
typedef struct ContentsOut
{
	JsonbValue *elems;
	int			n;
	int			cap;
} ContentsOut;

/*
 * The call ids and response ids of the events a request sends, so that no
 * call goes without its response nor a response without its call.
 */
#define PAIR_ID_LEN 256
typedef struct PairIds
{
	HTAB	   *calls;
	HTAB	   *responses;
} PairIds;

static List *read_history(AdkRun *run, AdkAgent *agent, const char *branch);
static bool belongs_to_branch(Jsonb *event, const char *branch);
static bool is_internal_request(JsonbContainer *parts);
static char *jstr(JsonbContainer *c, const char *key);
static void write_own_content(JsonWriter *w, HistEvent *e, PairIds *pairs);
static void collect_pairs(List *history, int start, const char *agent,
						  PairIds *pairs);
static bool part_is_paired(JsonbValue *part, HistEvent *e, PairIds *pairs);
static void write_other_agent_content(JsonWriter *w, HistEvent *e);
static void write_part(JsonWriter *w, JsonbValue *part);
static void write_responses_for(JsonWriter *w, List *history, int from,
								HistEvent *call_event, AdkAgent *agent);
static bool part_call_id(JsonbValue *part, const char *kind, char **id);
static bool answers(HistEvent *e, const char *kind, List *ids);
static bool answered_later(List *history, int after, const char *id);
static void cut_to_latest_response(List *history, int start);
static Jsonb *event_piece(HistEvent *e, bool other, PairIds *pairs);
static void add_piece(ContentsOut *out, Jsonb *piece);

/*
 * The contents array of the next request for "agent" on "branch".
 */
Jsonb *
adk_build_contents(AdkRun *run, AdkAgent *agent, const char *branch)
{
	List	   *history = read_history(run, agent, branch);
	JsonWriter	w;
	PairIds		pairs;
	ContentsOut out;
	int			start = 0;
	int			i;

	if (agent->include_contents_none)
	{
		for (i = list_length(history) - 1; i >= 0; i--)
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
		List	   *ids = NIL;
		JsonbIterator *it = JsonbIteratorInit(((HistEvent *) list_nth(history, start))->parts);
		JsonbValue	v;
		JsonbIteratorToken tok;

		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		{
			char	   *id;

			if (tok == WJB_ELEM && part_call_id(&v, "function_response", &id) && id)
				ids = lappend(ids, id);
		}
		for (i = start - 1; i >= 0 && ids != NIL; i--)
		{
			HistEvent  *e = list_nth(history, i);

			if (e->has_calls && answers(e, "function_call", ids))
			{
				start = i;
				break;
			}
		}
	}

	cut_to_latest_response(history, start);
	collect_pairs(history, start, agent->name, &pairs);

	/*
	 * The request is its pieces, in order: each event's own (kept with the
	 * event when it can be), the responses moved up to a call, and the
	 * loaded artifacts.  The array is made of their bytes, so an event
	 * whose piece is kept costs a copy, not a rewrite.
	 */
	memset(&out, 0, sizeof(out));
	for (i = start; i < list_length(history); i++)
	{
		HistEvent  *e = list_nth(history, i);

		bool		other = strcmp(e->author, "user") != 0 &&
			strcmp(e->author, agent->name) != 0;

		if (e->consumed)
			continue;
		add_piece(&out, event_piece(e, other, &pairs));
		if (e->has_calls)
		{
			jw_init(&w);
			jw_begin_array(&w);
			write_responses_for(&w, history, i + 1, e, agent);
			jw_end_array(&w);
			add_piece(&out, jw_finish(&w));
		}
	}
	/* load_artifacts (builtin_tools.c): the artifacts it loaded */
	jw_init(&w);
	jw_begin_array(&w);
	adk_builtin_contents(run, agent, &w, history != NIL ?
						 ((HistEvent *) llast(history))->event : NULL);
	jw_end_array(&w);
	add_piece(&out, jw_finish(&w));
	hash_destroy(pairs.calls);
	hash_destroy(pairs.responses);
	return adk_jsonb_array_of(out.elems, out.n);
}

/*
 * The piece of the request e makes (see HistEvent), kept or made.
 */
static Jsonb *
event_piece(HistEvent *e, bool other, PairIds *pairs)
{
	/* only a run's events outlive the request (adk_prompt has no run) */
	bool		keep = e->kept != NULL &&
		(other || (!e->has_calls && !e->has_responses));
	HistEvent  *owner = e->kept;
	JsonWriter	w;
	Jsonb	   *piece;

	if (keep && owner->piece != NULL && owner->piece_other == other)
		return owner->piece;
	jw_init(&w);
	jw_begin_array(&w);
	if (other)
		write_other_agent_content(&w, e);
	else
		write_own_content(&w, e, pairs);
	jw_end_array(&w);
	piece = jw_finish(&w);
	if (keep)
	{
		/* in the event's memory: it goes with the event */
		if (owner->piece != NULL)
			pfree(owner->piece);	/* made for another agent's view */
		owner->piece = MemoryContextAlloc(GetMemoryChunkContext(owner),
										  VARSIZE(piece));
		memcpy(owner->piece, piece, VARSIZE(piece));
		owner->piece_other = other;
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
 * What a run has read of its session for one branch, kept between model
 * calls (issue 12 §7): the events that pass the branch filter, and the
 * last seq read.  The next call reads only the events after it, so prompt
 * assembly costs O(new events) in reads, not O(history) -- a tool loop of
 * 50 calls reads the history once.  Events are append-only and a session's
 * seq only grows (appends take the session row lock), so a foreign writer's
 * events (ADK-JS) are simply the next ones read.  A compacted session is
 * read through adk._prompt_events every time (summaries stand in for the
 * events they cover), and its cache dropped.
 */
typedef struct HistCache
{
	char	   *branch;			/* NULL: the root branch */
	int64		last_seq;
	List	   *events;			/* HistEvent *, in the run's memory */
} HistCache;

static HistEvent *hist_event(Jsonb *ev, const char *branch);

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
		if ((c->branch == NULL && branch == NULL) ||
			(c->branch != NULL && branch != NULL && strcmp(c->branch, branch) == 0))
			return c;
	}
	if (!create)
		return NULL;
	old = MemoryContextSwitchTo(run->run_cxt);
	c = palloc0(sizeof(HistCache));
	c->branch = branch ? pstrdup(branch) : NULL;
	run->history = lappend(run->history, c);
	MemoryContextSwitchTo(old);
	return c;
}

static void
add_pair_id(HTAB *set, const char *id)
{
	char		key[PAIR_ID_LEN];

	if (strlen(id) >= PAIR_ID_LEN)
		return;					/* such ids are never left out */
	memset(key, 0, sizeof(key));
	strcpy(key, id);
	(void) hash_search(set, key, HASH_ENTER, NULL);
}

static bool
has_pair_id(HTAB *set, const char *id)
{
	char		key[PAIR_ID_LEN];

	if (strlen(id) >= PAIR_ID_LEN)
		return true;
	memset(key, 0, sizeof(key));
	strcpy(key, id);
	return hash_search(set, key, HASH_FIND, NULL) != NULL;
}

/*
 * The call and response ids of the events from start on that the request
 * sends as function calls and responses: the user's and this agent's, not
 * left out already (another agent's reach the model as text).
 */
static void
collect_pairs(List *history, int start, const char *agent, PairIds *pairs)
{
	HASHCTL		ctl;
	int			i;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = PAIR_ID_LEN;
	ctl.entrysize = PAIR_ID_LEN;
	ctl.hcxt = CurrentMemoryContext;
	pairs->calls = hash_create("adk prompt call ids", 64, &ctl,
							   HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	pairs->responses = hash_create("adk prompt response ids", 64, &ctl,
								   HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	for (i = start; i < list_length(history); i++)
	{
		HistEvent  *e = list_nth(history, i);
		JsonbIterator *it;
		JsonbValue	v;
		JsonbIteratorToken tok;

		if (e->consumed || (!e->has_calls && !e->has_responses) ||
			(strcmp(e->author, "user") != 0 && strcmp(e->author, agent) != 0))
			continue;
		it = JsonbIteratorInit(e->parts);
		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		{
			char	   *id;

			if (tok != WJB_ELEM)
				continue;
			if (part_call_id(&v, "function_call", &id) && id)
				add_pair_id(pairs->calls, id);
			else if (part_call_id(&v, "function_response", &id) && id)
				add_pair_id(pairs->responses, id);
		}
	}
}

/*
 * Whether a part of e may be sent: a function call only with its response
 * (or while it is a pending long-running call of e, which ADK sends as
 * it is), a function response only with its call.  What is left out is
 * another runtime's turn still being written (its call is stored, its
 * response not yet), or an answer to a call the history does not hold:
 * the request stays valid for every provider, and the open call is sent
 * once its response is in.
 */
static bool
part_is_paired(JsonbValue *part, HistEvent *e, PairIds *pairs)
{
	char	   *id;

	if (part_call_id(part, "function_call", &id))
	{
		JsonbValue *lr;

		if (id == NULL || has_pair_id(pairs->responses, id))
			return true;
		lr = adk_jsonb_get(&e->event->root, "long_running_tool_ids");
		if (lr != NULL && lr->type == jbvBinary)
		{
			JsonbValue	want;

			want.type = jbvString;
			want.val.string.val = id;
			want.val.string.len = strlen(id);
			if (findJsonbValueFromContainer(lr->val.binary.data, JB_FARRAY, &want))
				return true;
		}
		return false;
	}
	if (part_call_id(part, "function_response", &id))
		return id == NULL || has_pair_id(pairs->calls, id);
	return true;
}

static List *
read_history(AdkRun *run, AdkAgent *agent, const char *branch)
{
	List	   *result = NIL;
	MemoryContext caller = CurrentMemoryContext;
	/* a run object keeps what it read (adk_prompt's has none) */
	HistCache  *cache = run->run_cxt ? hist_cache(run, branch, false) : NULL;
	List	   *rows;
	bool		compacted;
	ListCell   *lc;

	/*
	 * Summaries in place of the events they cover (compaction.c); a session
	 * that was never compacted is read directly, from where this run's read
	 * of the branch stopped (store/session_read.c).
	 */
	rows = adk_session_history(run->app, run->user, run->session,
							   cache ? cache->last_seq : 0, &compacted);
	if (compacted)
	{
		list_free(run->history);	/* its contents go with the run's memory */
		run->history = NIL;
		cache = NULL;
	}
	else if (run->run_cxt)
		cache = hist_cache(run, branch, true);
	foreach(lc, rows)
	{
		AdkSessionEvent *row = (AdkSessionEvent *) lfirst(lc);
		HistEvent  *h;

		MemoryContextSwitchTo(cache ? run->run_cxt : caller);
		h = hist_event(row->event, branch);
		if (cache)
		{
			cache->last_seq = Max(cache->last_seq, row->seq);
			if (h)
				cache->events = lappend(cache->events, h);
		}
		else if (h)
			result = lappend(result, h);
		MemoryContextSwitchTo(caller);
		/* hist_event kept a copy of what it needs */
		pfree(row->event);
		pfree(row);
	}
	list_free(rows);
	if (cache == NULL)
		return result;

	/* the caller marks events consumed: copies of the cached ones */
	foreach(lc, cache->events)
	{
		HistEvent  *h = palloc(sizeof(HistEvent));

		*h = *(HistEvent *) lfirst(lc);
		h->consumed = false;
		h->kept = (HistEvent *) lfirst(lc);
		result = lappend(result, h);
	}
	return result;
}

/*
 * ev as prompt assembly sees it, copied into the current memory context;
 * NULL when it has no place in a prompt for branch (no content, partial,
 * another branch, an internal request).
 */
static HistEvent *
hist_event(Jsonb *ev, const char *branch)
{
	JsonbValue *content;
	JsonbValue *parts;
	HistEvent  *h;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	int			nparts = 0;
	int			nresponses = 0;

	content = adk_jsonb_get(&ev->root, "content");
	if (content == NULL || content->type != jbvBinary)
		return NULL;
	parts = adk_jsonb_get(content->val.binary.data, "parts");
	if (parts == NULL || parts->type != jbvBinary ||
		JsonContainerSize(parts->val.binary.data) == 0)
		return NULL;
	if ((content = adk_jsonb_get(&ev->root, "partial")) != NULL &&
		content->type == jbvBool && content->val.boolean)
		return NULL;
	if (!belongs_to_branch(ev, branch))
		return NULL;
	if (is_internal_request(parts->val.binary.data))
		return NULL;

	h = palloc0(sizeof(HistEvent));
	h->event = DatumGetJsonbPCopy(PointerGetDatum(ev));
	content = adk_jsonb_get(&h->event->root, "content");
	h->parts = adk_jsonb_get(content->val.binary.data, "parts")->val.binary.data;
	h->author = jstr(&h->event->root, "author");
	if (h->author == NULL)
		h->author = "user";
	h->role = jstr(content->val.binary.data, "role");
	it = JsonbIteratorInit(h->parts);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok != WJB_ELEM || v.type != jbvBinary)
			continue;
		nparts++;
		if (adk_jsonb_get(v.val.binary.data, "function_call"))
			h->has_calls = true;
		if (adk_jsonb_get(v.val.binary.data, "function_response"))
			nresponses++;
	}
	h->only_responses = nparts > 0 && nresponses == nparts;
	h->has_responses = nresponses > 0;
	return h;
}

static char *
jstr(JsonbContainer *c, const char *key)
{
	JsonbValue *v = adk_jsonb_get(c, key);

	if (v == NULL || v->type != jbvString)
		return NULL;
	return pnstrdup(v->val.string.val, v->val.string.len);
}

/*
 * ADK: an event without a branch, or whose branch is a prefix of ours.
 */
static bool
belongs_to_branch(Jsonb *event, const char *branch)
{
	JsonbValue *b = adk_jsonb_get(&event->root, "branch");

	if (branch == NULL || b == NULL || b->type != jbvString)
		return true;
	return strlen(branch) >= (size_t) b->val.string.len &&
		strncmp(branch, b->val.string.val, b->val.string.len) == 0;
}

/*
 * Calls to / responses of ADK's internal confirmation and credential
 * requests never reach the model.
 */
static bool
is_internal_request(JsonbContainer *parts)
{
	JsonbIterator *it = JsonbIteratorInit(parts);
	JsonbValue	v;
	JsonbIteratorToken tok;

	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		JsonbValue *f;
		char	   *name;

		if (tok != WJB_ELEM || v.type != jbvBinary)
			continue;
		f = adk_jsonb_get(v.val.binary.data, "function_call");
		if (f == NULL)
			f = adk_jsonb_get(v.val.binary.data, "function_response");
		if (f == NULL || f->type != jbvBinary)
			continue;
		name = jstr(f->val.binary.data, "name");
		if (name && (strcmp(name, "adk_request_confirmation") == 0 ||
					 strcmp(name, "adk_request_credential") == 0))
			return true;
	}
	return false;
}

static void
write_own_content(JsonWriter *w, HistEvent *e, PairIds *pairs)
{
	JsonbIterator *it = JsonbIteratorInit(e->parts);
	JsonbValue	v;
	JsonbIteratorToken tok;
	int			kept = 0;

	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		if (tok == WJB_ELEM && part_is_paired(&v, e, pairs))
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
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		if (tok == WJB_ELEM && part_is_paired(&v, e, pairs))
			write_part(w, &v);
	jw_end_array(w);
	jw_end_object(w);
}

/*
 * A part, without a function call's / response's "adk-" id.
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
			id = jstr(f->val.binary.data, "id");
			if (id == NULL || strncmp(id, "adk-", 4) != 0)
				break;
			/* rebuild the part without the id */
			jw_begin_object(w);
			jw_key(w, kinds[k]);
			jw_begin_object(w);
			{
				JsonbIterator *it = JsonbIteratorInit(f->val.binary.data);
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
					if (strcmp(key, "id") == 0)
						continue;
					jw_key(w, key);
					jw_value(w, &vv);
				}
			}
			jw_end_object(w);
			jw_end_object(w);
			return;
		}
	}
	jw_value(w, part);
}

static bool
part_call_id(JsonbValue *part, const char *kind, char **id)
{
	JsonbValue *f;

	if (part->type != jbvBinary)
		return false;
	f = adk_jsonb_get(part->val.binary.data, kind);
	if (f == NULL || f->type != jbvBinary)
		return false;
	*id = jstr(f->val.binary.data, "id");
	return true;
}

/*
 * Does a part of e of the given kind ("function_call" or
 * "function_response") carry one of ids?
 */
static bool
answers(HistEvent *e, const char *kind, List *ids)
{
	JsonbIterator *it = JsonbIteratorInit(e->parts);
	JsonbValue	v;
	JsonbIteratorToken tok;

	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		char	   *id;
		ListCell   *lc;

		if (tok != WJB_ELEM || !part_call_id(&v, kind, &id) || !id)
			continue;
		foreach(lc, ids)
			if (strcmp((char *) lfirst(lc), id) == 0)
				return true;
	}
	return false;
}

static bool
answered_later(List *history, int after, const char *id)
{
	List	   *ids = list_make1((void *) id);
	int			i;

	for (i = after + 1; i < list_length(history); i++)
	{
		HistEvent  *e = list_nth(history, i);

		if (e->only_responses && answers(e, "function_response", ids))
			return true;
	}
	return false;
}

/*
 * ADK's _rearrange_events_for_latest_function_response: when the newest
 * event answers a call that is not the event just before it (a late,
 * long-running answer), the events in between are left out, except
 * responses to any call of that call event (an answer given in an earlier
 * turn to another call of the same event stays), so the request ends with
 * the call event and its answers.
 */
static void
cut_to_latest_response(List *history, int start)
{
	int			last = list_length(history) - 1;
	HistEvent  *resp;
	List	   *ids = NIL;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	int			c;
	int			i;

	if (last <= start)
		return;
	resp = list_nth(history, last);
	if (!resp->only_responses)
		return;
	it = JsonbIteratorInit(resp->parts);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		char	   *id;

		if (tok == WJB_ELEM && part_call_id(&v, "function_response", &id) && id)
			ids = lappend(ids, id);
	}
	for (c = last - 1; c >= start; c--)
	{
		HistEvent  *e = list_nth(history, c);

		if (e->has_calls && answers(e, "function_call", ids))
			break;
	}
	if (c < start || c == last - 1)
		return;

	/* every call of that event, not only those the newest event answers */
	ids = NIL;
	it = JsonbIteratorInit(((HistEvent *) list_nth(history, c))->parts);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		char	   *id;

		if (tok == WJB_ELEM && part_call_id(&v, "function_call", &id) && id)
			ids = lappend(ids, id);
	}
	for (i = c + 1; i < last; i++)
	{
		HistEvent  *e = list_nth(history, i);

		if (!(e->only_responses && answers(e, "function_response", ids)))
			e->consumed = true;
	}
}

/*
 * After a call event: the later response events that answer its calls,
 * merged into one user content (and marked so they are not repeated);
 * another agent's responses are presented as that agent's context.
 */
static void
write_responses_for(JsonWriter *w, List *history, int from,
					HistEvent *call_event, AdkAgent *agent)
{
	List	   *ids = NIL;
	JsonbIterator *it = JsonbIteratorInit(call_event->parts);
	JsonbValue	v;
	JsonbIteratorToken tok;
	bool		opened = false;
	int			i;

	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		char	   *id;

		if (tok == WJB_ELEM && part_call_id(&v, "function_call", &id) && id)
			ids = lappend(ids, id);
	}
	if (ids == NIL)
		return;

	for (i = from; i < list_length(history); i++)
	{
		HistEvent  *e = list_nth(history, i);
		bool		matches = false;

		if (e->consumed || !e->only_responses)
			continue;
		it = JsonbIteratorInit(e->parts);
		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		{
			char	   *id;
			ListCell   *lc;

			if (tok != WJB_ELEM || !part_call_id(&v, "function_response", &id) || !id)
				continue;
			foreach(lc, ids)
				if (strcmp((char *) lfirst(lc), id) == 0)
					matches = true;
		}
		if (!matches)
			continue;
		if (strcmp(e->author, "user") != 0 && strcmp(e->author, agent->name) != 0)
		{
			/* another agent's responses stay that agent's words, in order */
			write_other_agent_content(w, e);
			e->consumed = true;
			continue;
		}
		if (strcmp(call_event->author, "user") != 0 &&
			strcmp(call_event->author, agent->name) != 0)
			continue;			/* that call went out as text: no response to it */
		if (!opened)
		{
			jw_begin_object(w);
			jw_key(w, "role");
			jw_string(w, "user");
			jw_key(w, "parts");
			jw_begin_array(w);
			opened = true;
		}
		it = JsonbIteratorInit(e->parts);
		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		{
			char	   *id;

			if (tok != WJB_ELEM)
				continue;
			/* a later response to the same call replaces this one (ADK) */
			if (part_call_id(&v, "function_response", &id) && id &&
				answered_later(history, i, id))
				continue;
			write_part(w, &v);
		}
		e->consumed = true;
	}
	if (opened)
	{
		jw_end_array(w);
		jw_end_object(w);
	}
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
							e->author, jstr(f->val.binary.data, "name"),
							a && a->type == jbvBinary ?
							JsonbToCString(NULL, a->val.binary.data, -1) : "{}");
		}
		else if ((f = adk_jsonb_get(v.val.binary.data, "function_response")) != NULL &&
				 f->type == jbvBinary)
		{
			JsonbValue *r = adk_jsonb_get(f->val.binary.data, "response");

			text = psprintf("[%s] `%s` tool returned result: %s",
							e->author, jstr(f->val.binary.data, "name"),
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

/*
 * ADK's _is_valid_state_name: an identifier, or "app:", "user:" or
 * "temp:" and an identifier.
 */
static bool
is_state_name(const char *key)
{
	const char *colon = strchr(key, ':');
	const char *p;

	if (colon != NULL)
	{
		size_t		n = colon - key;

		if (!((n == 3 && strncmp(key, "app", 3) == 0) ||
			  (n == 4 && strncmp(key, "user", 4) == 0) ||
			  (n == 4 && strncmp(key, "temp", 4) == 0)))
			return false;
		key = colon + 1;
	}
	if (!(isalpha((unsigned char) *key) || *key == '_'))
		return false;
	for (p = key + 1; *p; p++)
		if (!(isalnum((unsigned char) *p) || *p == '_'))
			return false;
	return true;
}

/*
 * The system instruction, as ADK builds it: the agent's instruction with
 * {key} / {key?} placeholders filled from the session state (ADK's
 * pattern and rules: a missing optional key becomes empty, what is not a
 * state name stays as written, and a missing required key is ADK's
 * "Context variable not found" -- left as written here and reported in
 * run->instruction_error, which the flow turns into an error event), then
 * ADK's identity instruction (always), then its transfer instruction when
 * the agent can transfer.
 */
char *
adk_build_instruction(AdkRun *run, AdkAgent *agent)
{
	StringInfoData out;
	List	   *targets = adk_transfer_targets(agent);
	Jsonb	   *state = NULL;
	const char *p;
	ListCell   *lc;

	initStringInfo(&out);
	if (agent->instruction && strchr(agent->instruction, '{') != NULL)
	{
		/* the session's state with app: and user: (store/session_read.c) */
		state = adk_session_state(run->app, run->user, run->session);
		if (state && run->temp_state)
			state = adk_jsonb_concat(state, run->temp_state);

		for (p = agent->instruction; *p; p++)
		{
			const char *open_end;
			const char *close;
			const char *end;
			char	   *key;
			bool		optional;
			JsonbValue *v;
			size_t		len;

			/* ADK's pattern: \{+[^{}]*\}+ */
			if (*p != '{')
			{
				appendStringInfoChar(&out, *p);
				continue;
			}
			for (open_end = p; *open_end == '{'; open_end++)
				;
			for (close = open_end; *close && *close != '{' && *close != '}'; close++)
				;
			if (*close != '}')
			{
				/* no match starts here: the braces before "{" stay as they are */
				appendBinaryStringInfo(&out, p, open_end - p);
				p = open_end - 1;
				continue;
			}
			for (end = close; end[1] == '}'; end++)
				;
			/* the key: the braces stripped, then blanks */
			while (open_end < close && isspace((unsigned char) *open_end))
				open_end++;
			len = close - open_end;
			while (len > 0 && isspace((unsigned char) open_end[len - 1]))
				len--;
			key = pnstrdup(open_end, len);
			optional = len > 0 && key[len - 1] == '?';
			if (optional)
				key[len - 1] = '\0';
			if (!is_state_name(key))
			{
				/* not a state key (JSON, an artifact, prose): as written */
				appendBinaryStringInfo(&out, p, end - p + 1);
				p = end;
				continue;
			}
			v = state ? adk_jsonb_get(&state->root, key) : NULL;
			if (v == NULL && !optional)
			{
				/* ADK-JS's and ADK Python's message */
				if (run->instruction_error == NULL)
					run->instruction_error =
						psprintf("Context variable not found: `%s`.", key);
				appendBinaryStringInfo(&out, p, end - p + 1);
				p = end;
				continue;
			}
			if (v != NULL && v->type == jbvString)
				appendBinaryStringInfo(&out, v->val.string.val, v->val.string.len);
			else if (v != NULL && v->type == jbvBinary)
				(void) JsonbToCString(&out, v->val.binary.data, -1);
			else if (v != NULL)
				(void) JsonbToCString(&out, &JsonbValueToJsonb(v)->root, -1);
			p = end;
		}
	}
	else if (agent->instruction)
		appendStringInfoString(&out, agent->instruction);

	/* ADK's identity instruction, for every LLM agent */
	if (out.len > 0)
		appendStringInfoString(&out, "\n\n");
	appendStringInfo(&out, "You are an agent. Your internal name is \"%s\".", agent->name);
	if (agent->description && agent->description[0] != '\0')
		appendStringInfo(&out, " The description about you is \"%s\".", agent->description);
	if (targets != NIL)
	{
		appendStringInfoString(&out, "\n\nYou have a list of other agents to transfer to:\n");
		foreach(lc, targets)
		{
			AdkAgent   *t = (AdkAgent *) lfirst(lc);

			appendStringInfo(&out, "\nAgent name: %s\nAgent description: %s\n",
							 t->name, t->description ? t->description : "");
		}
		appendStringInfoString(&out,
							   "\nIf you are the best to answer the question according to your description, you can answer it.\n\n"
							   "If another agent is better for answering the question according to its description, call `transfer_to_agent` function to transfer the question to that agent. When transferring, do not generate any text other than the function call.\n");
		if (agent->parent && !agent->disallow_transfer_to_parent)
			appendStringInfo(&out,
							 "\nYour parent agent is %s. If neither the other agents nor you are best for answering the question according to the descriptions, transfer to your parent agent.\n",
							 agent->parent->name);
	}
	/* load_artifacts, load_memory, preload_memory (builtin_tools.c) */
	adk_builtin_instruction(run, agent, &out);
	return out.len > 0 ? out.data : NULL;
}

/*
 * The generation config of a request of agent: its system instruction (or
 * none), under the agent's own generate_config.  flow.c's requests and
 * adk_prompt (prompt_sql.c) both build it here.
 */
Jsonb *
adk_request_config(AdkAgent *agent, const char *instruction)
{
	JsonWriter	w;
	Jsonb	   *config;

	jw_init(&w);
	jw_begin_object(&w);
	if (instruction)
	{
		jw_key(&w, "system_instruction");
		jw_string(&w, instruction);
	}
	jw_end_object(&w);
	config = jw_finish(&w);
	if (agent->generate_config)
		config = adk_jsonb_concat(agent->generate_config, config);
	return config;
}
