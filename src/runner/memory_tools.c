/*-------------------------------------------------------------------------
 *
 * memory_tools.c
 *	  The memory built-ins, as ADK Python has them:
 *
 *	- load_memory (LoadMemoryTool): the instruction says memory exists; the
 *	  call answers {"memories": [{content, author, timestamp}, ...]};
 *	- preload_memory (PreloadMemoryTool): no declaration; before each model
 *	  call the memories that match the user's message are added to the
 *	  system instruction in a <PAST_CONVERSATIONS> block;
 *	- adk.apps.add_to_memory: a completed invocation's events are added to
 *	  memory.
 * Memory searches run as the invoking role, through the SQL API; adding to
 * memory runs as the owner.  Model arguments are bound as parameters.
 *
 * Memory's embeddings (an app with memory_embedding_model) wait in the
 * run's steps, as its model calls do: an AdkMemoryWait holds the requests
 * started in one step (embed.c), the run waits until adk_memory_ready,
 * and adk_memory_finish consumes them in a later step -- the entries added
 * with their embeddings (run.c, at the end of the run), or the search made
 * with the query's (flow.c: preload_memory in the round's first step,
 * load_memory and an agent-tool's preload_memory in the calls round).
 * Outside a run's steps (adk_prompt) a search embeds its query in
 * adk._memory_search, waiting in the call.
 *
 * IDENTIFICATION
 *	  src/runner/memory_tools.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/memutils.h"

#include "common/compat.h"
#include "common/json_writer.h"
#include "common/jsonb_util.h"
#include "common/spi_plans.h"
#include "model/embed.h"
#include "runner/memory_tools.h"
#include "common/owner.h"

#define MEMORY_RESULTS 10
#define EMBED_BATCH 100			/* texts per embedding request */

typedef struct Memory
{
	char	   *text;
	char	   *author;
	char	   *timestamp;
} Memory;

typedef enum MemoryWaitKind
{
	MW_ADD,						/* a completed invocation added to memory */
	MW_PRELOAD,					/* preload_memory's search */
	MW_LOAD						/* a load_memory call's search */
} MemoryWaitKind;

/*
 * Memory waiting for its embeddings: everything in cxt (under the memory
 * of the step owner that waits for it), which deleting stops the requests
 * with.
 */
struct AdkMemoryWait
{
	MemoryContext cxt;
	AdkRun	   *run;
	MemoryWaitKind kind;
	char	   *model;			/* the app's embedding model; NULL: none */
	int			ncalls;
	AdkEmbedCall **calls;		/* one per EMBED_BATCH texts (a search: one) */
	/* adding */
	int			n;
	char	  **event_ids;
	char	  **texts;
	/* searching */
	char	   *query;
	char	   *error;			/* the embedding failed */
	ArrayType  *vector;			/* ... else the query's */
};

static List *search_memory(AdkRun *run, const char *query, bool known,
						   ArrayType *vector);
static Jsonb *memories_response(List *memories);
static AdkMemoryWait *new_wait(AdkRun *run, MemoryContext parent,
							   MemoryWaitKind kind);
static char *embedding_model(AdkRun *run, const char *query);
static AdkMemoryWait *search_wait(AdkRun *run, MemoryContext parent,
								  MemoryWaitKind kind, const char *query);
static void search_start(void *arg);
static void search_finish(void *arg);
static void insert_entries(AdkRun *run, char **event_ids, int n,
						   ArrayType *embeddings);
static char *user_text(Jsonb *content);

/*
 * A call of load_memory: the function response, the user's memories that
 * match its query.
 */
Jsonb *
adk_memory_load_call(AdkRun *run, Jsonb *args)
{
	JsonbValue *query = adk_jsonb_get(&args->root, "query");

	if (query == NULL || query->type != jbvString)
		return adk_error_object("load_memory needs \"query\": a string");
	return memories_response(search_memory(run, pnstrdup(query->val.string.val,
														  query->val.string.len),
										   false, NULL));
}

/*
 * load_memory's and preload_memory's part of the system instruction,
 * appended to out: that memory exists, and the memories that match the
 * user's message.
 */
void
adk_memory_instruction(AdkRun *run, AdkAgent *agent, StringInfo out)
{
	if (adk_agent_lists(agent, ADK_LOAD_MEMORY))
	{
		if (out->len > 0)
			appendStringInfoString(out, "\n\n");
		appendStringInfoString(out,
							   "You have memory. You can use it to answer questions. If any questions need you to look up the memory, you should call load_memory function with a query.");
	}
	if (adk_agent_lists(agent, ADK_PRELOAD_MEMORY))
	{
		char	   *query = run->input.user_content ? user_text(run->input.user_content) : NULL;
		List	   *memories;
		ListCell   *lc;

		/* the query's embedding: made in the round's steps, else here */
		memories = query ? search_memory(run, query, run->waits.preload_known,
										 run->waits.preload_vector) : NIL;

		if (memories != NIL)
		{
			if (out->len > 0)
				appendStringInfoString(out, "\n\n");
			appendStringInfoString(out,
								   "The following content is from your previous conversations with the user.\n"
								   "They may be useful for answering the user's current query.\n"
								   "<PAST_CONVERSATIONS>\n");
			foreach(lc, memories)
			{
				Memory	   *m = (Memory *) lfirst(lc);

				appendStringInfo(out, "Time: %s\n", m->timestamp);
				if (m->author)
					appendStringInfo(out, "%s: %s\n", m->author, m->text);
				else
					appendStringInfo(out, "%s\n", m->text);
			}
			appendStringInfoString(out, "</PAST_CONVERSATIONS>\n");
		}
	}
}

/* load_memory's answer: {"memories": [{content, author, timestamp}, ...]} */
static Jsonb *
memories_response(List *memories)
{
	JsonWriter	w;
	ListCell   *lc;

	jw_init(&w);
	jw_begin_object(&w);
	jw_key(&w, "memories");
	jw_begin_array(&w);
	foreach(lc, memories)
	{
		Memory	   *m = (Memory *) lfirst(lc);

		jw_begin_object(&w);
		jw_key(&w, "content");
		adk_jw_text_content(&w, m->author && strcmp(m->author, "user") == 0 ?
							"user" : "model", m->text);
		jw_key(&w, "author");
		if (m->author)
			jw_string(&w, m->author);
		else
			jw_null(&w);
		jw_key(&w, "timestamp");
		jw_string(&w, m->timestamp);
		jw_end_object(&w);
	}
	jw_end_array(&w);
	jw_end_object(&w);
	return jw_finish(&w);
}

/*
 * A completed invocation's events go to memory when the app says so: the
 * entries are added now when the app has no embedding model; else their
 * embeddings are started here and the entries added with them by
 * adk_memory_finish, once they are in -- so an embedding failure raises
 * there and adds nothing, as adk_add_session_to_memory does, and a run
 * stopped while it waits adds nothing either.  The texts are read now;
 * events added to memory meanwhile (adk_add_session_to_memory) are
 * skipped when the entries are added.
 */
AdkMemoryWait *
adk_builtin_after_run(AdkRun *run, MemoryContext parent)
{
	Oid			types[4] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		args[4];
	AdkOwnerSave save;
	char	   *model;
	AdkMemoryWait *w;
	MemoryContext old;
	uint64		i;
	int			b;

	if (!adk_app_builtin_options(run).add_to_memory)
		return NULL;
	model = embedding_model(run, NULL);
	w = new_wait(run, parent, MW_ADD);
	old = MemoryContextSwitchTo(w->cxt);
	w->model = model ? pstrdup(model) : NULL;
	args[0] = CStringGetTextDatum(run->app);
	args[1] = CStringGetTextDatum(run->user);
	args[2] = CStringGetTextDatum(run->session);
	args[3] = CStringGetTextDatum(run->invocation_id);
	adk_owner_spi_begin(&save);
	if (adk_spi_exec("SELECT p.event_id, p.text FROM adk._memory_pending($1, $2, $3, $4) p",
					 4, types, args, NULL, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the invocation's events for memory");
	w->n = (int) SPI_processed;
	w->event_ids = MemoryContextAlloc(w->cxt, sizeof(char *) * (w->n + 1));
	w->texts = MemoryContextAlloc(w->cxt, sizeof(char *) * (w->n + 1));
	for (i = 0; i < SPI_processed; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];

		w->event_ids[i] = MemoryContextStrdup(w->cxt, SPI_getvalue(row, SPI_tuptable->tupdesc, 1));
		w->texts[i] = MemoryContextStrdup(w->cxt, SPI_getvalue(row, SPI_tuptable->tupdesc, 2));
	}
	adk_owner_spi_end(&save);
	MemoryContextSwitchTo(w->cxt);

	if (w->n > 0 && w->model != NULL)
	{
		/* every batch in flight at once */
		w->ncalls = (w->n + EMBED_BATCH - 1) / EMBED_BATCH;
		w->calls = palloc0(sizeof(AdkEmbedCall *) * w->ncalls);
		for (b = 0; b < w->ncalls; b++)
			w->calls[b] = adk_embed_start(w->model,
										  Min(EMBED_BATCH, w->n - b * EMBED_BATCH),
										  w->texts + b * EMBED_BATCH);
		MemoryContextSwitchTo(old);
		return w;
	}
	if (w->n > 0)
		insert_entries(run, w->event_ids, w->n, NULL);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(w->cxt);
	return NULL;
}

/*
 * Before a model call of an agent with preload_memory: the user's message
 * embedded for the search, in the round's steps.  NULL when there is
 * nothing to wait for: the agent does not preload, the embedding was made
 * in an earlier round of the invocation (its message does not change), or
 * there is nothing to embed (no embedding model, no text).  A failed
 * embedding is tried again in the next round, as before every model call
 * without the stepper.
 */
AdkMemoryWait *
adk_builtin_preload_start(AdkRun *run, AdkAgent *agent, MemoryContext parent)
{
	char	   *query;
	AdkMemoryWait *w;

	if (!adk_agent_lists(agent, ADK_PRELOAD_MEMORY) ||
		(run->waits.preload_known && run->waits.preload_vector != NULL))
		return NULL;
	query = run->input.user_content ? user_text(run->input.user_content) : NULL;
	if (query == NULL)
		return NULL;

	/*
	 * Until the answer is in, an instruction built meanwhile (tail
	 * retention's token estimate) searches with full text alone, never
	 * waiting for an embedding of its own.
	 */
	run->waits.preload_known = true;
	run->waits.preload_vector = NULL;
	w = search_wait(run, parent, MW_PRELOAD, query);
	if (w->ncalls == 0 && w->error == NULL)
	{
		/* no embedding model: full-text search alone */
		MemoryContextDelete(w->cxt);
		return NULL;
	}
	return w;
}

/*
 * A call of load_memory by an agent that lists it: its query's embedding
 * started, the search made by adk_memory_finish.  NULL when it is not one
 * (or its arguments are wrong: adk_builtin_call says so).
 */
AdkMemoryWait *
adk_builtin_load_memory_start(AdkRun *run, AdkAgent *agent, const char *name,
							  Jsonb *args, MemoryContext parent)
{
	JsonbValue *query;

	if (strcmp(name, ADK_LOAD_MEMORY) != 0 || !adk_agent_lists(agent, ADK_LOAD_MEMORY) ||
		(query = adk_jsonb_get(&args->root, "query")) == NULL ||
		query->type != jbvString)
		return NULL;
	return search_wait(run, parent, MW_LOAD,
					   pnstrdup(query->val.string.val, query->val.string.len));
}

bool
adk_memory_ready(const AdkMemoryWait *w)
{
	int			i;

	for (i = 0; i < w->ncalls; i++)
		if (w->calls[i] != NULL && !adk_embed_ready(w->calls[i]))
			return false;
	return true;
}

/*
 * The embeddings are in: the entries added with them (an embedding failure
 * raises, as adk_add_session_to_memory does), or the search made with the
 * query's (a failure: a warning, and full-text search alone, as
 * adk_search_memory does).  load_memory's function response is returned,
 * in the caller's memory; NULL otherwise.  w is gone afterwards.
 */
Jsonb *
adk_memory_finish(AdkMemoryWait *w)
{
	MemoryContext caller = CurrentMemoryContext;
	AdkRun	   *run = w->run;
	Jsonb	   *result = NULL;

	Assert(adk_memory_ready(w));
	MemoryContextSwitchTo(w->cxt);
	if (w->kind == MW_ADD)
	{
		Datum	   *values = NULL;
		int			dims[2] = {w->n, 0};
		int			lbs[2] = {1, 1};
		int			b;
		int			i;
		int			k = 0;

		for (b = 0; b < w->ncalls; b++)
		{
			int			nb = Min(EMBED_BATCH, w->n - b * EMBED_BATCH);
			ArrayType **v = adk_embed_finish(w->calls[b]);

			for (i = 0; i < nb; i++)
			{
				int			d = ArrayGetNItems(ARR_NDIM(v[i]), ARR_DIMS(v[i]));
				Datum	   *elems;
				int			j;
				int			ne;

				if (values == NULL)
				{
					dims[1] = d;
					values = palloc(sizeof(Datum) * w->n * d);
				}
				else if (d != dims[1])
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("embedding model \"%s\" answered vectors of different lengths",
									w->model)));
				deconstruct_array(v[i], FLOAT4OID, sizeof(float4), true, TYPALIGN_INT,
								  &elems, NULL, &ne);
				for (j = 0; j < ne; j++)
					values[k++] = elems[j];
			}
		}
		insert_entries(run, w->event_ids, w->n,
					   construct_md_array(values, NULL, 2, dims, lbs, FLOAT4OID,
										  sizeof(float4), true, TYPALIGN_INT));
	}
	else
	{
		char	   *error;

		if (w->ncalls > 0 && !adk_run_guarded(search_finish, w, &error))
			w->error = error;
		if (w->error != NULL)
			ereport(WARNING,
					(errmsg("memory search without embeddings: %s", w->error)));
		MemoryContextSwitchTo(caller);
		if (w->kind == MW_PRELOAD)
		{
			/* for this round's instruction, and the invocation's next ones */
			run->waits.preload_known = true;
			run->waits.preload_vector = NULL;
			if (w->vector != NULL)
			{
				run->waits.preload_vector = MemoryContextAlloc(run->run_cxt, VARSIZE(w->vector));
				memcpy(run->waits.preload_vector, w->vector, VARSIZE(w->vector));
			}
		}
		else
			result = memories_response(search_memory(run, w->query, true, w->vector));
	}
	MemoryContextSwitchTo(caller);
	MemoryContextDelete(w->cxt);
	return result;
}

void
adk_memory_abandon(AdkMemoryWait *w)
{
	MemoryContextDelete(w->cxt);
}

static AdkMemoryWait *
new_wait(AdkRun *run, MemoryContext parent, MemoryWaitKind kind)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "adk_runner memory",
											  ALLOCSET_SMALL_SIZES);
	AdkMemoryWait *w = MemoryContextAllocZero(cxt, sizeof(AdkMemoryWait));

	w->cxt = cxt;
	w->run = run;
	w->kind = kind;
	return w;
}

/*
 * The app's embedding model, when it has one and there is something to
 * embed (query NULL: adding; else a query with a letter or digit, as
 * adk._memory_search has it); NULL otherwise.
 */
static char *
embedding_model(AdkRun *run, const char *query)
{
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		args[2];
	char		nulls[2] = {' ', query ? ' ' : 'n'};
	char	   *result = NULL;
	MemoryContext caller = CurrentMemoryContext;
	AdkOwnerSave save;

	args[0] = CStringGetTextDatum(run->app);
	args[1] = query ? CStringGetTextDatum(query) : (Datum) 0;
	adk_owner_spi_begin(&save);
	if (adk_spi_exec("SELECT adk._memory_embedding_model($1, $2)",
					 2, types, args, nulls, 1) == SPI_OK_SELECT && SPI_processed == 1)
	{
		char	   *model = SPI_getvalue(SPI_tuptable->vals[0],
										 SPI_tuptable->tupdesc, 1);

		if (model != NULL)
			result = MemoryContextStrdup(caller, model);
	}
	adk_owner_spi_end(&save);
	return result;
}

/*
 * A search's wait: the query's embedding started when the app has an
 * embedding model (ncalls 1); a failure to start it is kept in error (the
 * search then warns and goes on without, as adk._memory_search does).
 */
static AdkMemoryWait *
search_wait(AdkRun *run, MemoryContext parent, MemoryWaitKind kind,
			const char *query)
{
	AdkMemoryWait *w = new_wait(run, parent, kind);
	MemoryContext old = MemoryContextSwitchTo(w->cxt);
	char	   *model = embedding_model(run, query);
	char	   *error;

	w->query = pstrdup(query);
	if (model != NULL)
	{
		w->model = model;
		w->ncalls = 1;
		w->calls = palloc0(sizeof(AdkEmbedCall *));
		if (!adk_run_guarded(search_start, w, &error))
		{
			w->error = error;
			w->ncalls = 0;
		}
	}
	MemoryContextSwitchTo(old);
	return w;
}

/* In a subtransaction, in w's memory */
static void
search_start(void *arg)
{
	AdkMemoryWait *w = (AdkMemoryWait *) arg;

	w->calls[0] = adk_embed_start(w->model, 1, &w->query);
}

/* In a subtransaction, in w's memory */
static void
search_finish(void *arg)
{
	AdkMemoryWait *w = (AdkMemoryWait *) arg;

	w->vector = adk_embed_finish(w->calls[0])[0];
}

/*
 * adk._memory_insert as the owner: the events' entries, with their
 * embeddings (rows of a two-dimensional real[]) or without (NULL).
 */
static void
insert_entries(AdkRun *run, char **event_ids, int n, ArrayType *embeddings)
{
	Oid			types[5] = {TEXTOID, TEXTOID, TEXTOID, TEXTARRAYOID, FLOAT4ARRAYOID};
	Datum		args[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', embeddings ? ' ' : 'n'};
	Datum	   *ids = palloc(sizeof(Datum) * n);
	AdkOwnerSave save;
	int			i;

	for (i = 0; i < n; i++)
		ids[i] = CStringGetTextDatum(event_ids[i]);
	args[0] = CStringGetTextDatum(run->app);
	args[1] = CStringGetTextDatum(run->user);
	args[2] = CStringGetTextDatum(run->session);
	args[3] = PointerGetDatum(construct_array(ids, n, TEXTOID, -1, false, TYPALIGN_INT));
	args[4] = PointerGetDatum(embeddings);
	adk_owner_spi_begin(&save);
	if (adk_spi_exec("SELECT adk._memory_insert($1, $2, $3, $4, $5)",
					 5, types, args, nulls, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not add the invocation to memory");
	adk_owner_spi_end(&save);
}

/*
 * The user's memories matching query, best first: with the query's
 * embedding when known (vector; NULL: full-text search alone), else
 * adk._memory_search embeds it, waiting in the call (outside the steps of
 * a run: adk_prompt, an agent-tool's instruction).
 */
static List *
search_memory(AdkRun *run, const char *query, bool known, ArrayType *vector)
{
	List	   *result = NIL;
	Oid			types[5] = {TEXTOID, TEXTOID, TEXTOID, INT4OID, FLOAT4ARRAYOID};
	Datum		args[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', vector ? ' ' : 'n'};
	MemoryContext caller = CurrentMemoryContext;
	uint64		i;

	args[0] = CStringGetTextDatum(run->app);
	args[1] = CStringGetTextDatum(run->user);
	args[2] = CStringGetTextDatum(query);
	args[3] = Int32GetDatum(MEMORY_RESULTS);
	args[4] = PointerGetDatum(vector);
	SPI_connect();
	if (adk_spi_exec(known ?
					 "SELECT m.text, m.author, m.\"timestamp\" FROM adk._memory_search_vec($1, $2, $3, $4, $5) m" :
					 "SELECT m.text, m.author, m.\"timestamp\" FROM adk._memory_search($1, $2, $3, $4) m",
					 known ? 5 : 4, types, args, nulls, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not search memory");
	for (i = 0; i < SPI_processed; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		char	   *text = SPI_getvalue(row, desc, 1);
		char	   *author = SPI_getvalue(row, desc, 2);
		bool		isnull;
		Datum		ts = SPI_getbinval(row, desc, 3, &isnull);
		MemoryContext spi = MemoryContextSwitchTo(caller);
		Memory	   *m = palloc(sizeof(Memory));

		m->text = pstrdup(text);
		m->author = author ? pstrdup(author) : NULL;
		/* the timestamp as JSON writes it (to_jsonb's ISO 8601) */
		m->timestamp = JsonEncodeDateTime(NULL, ts, TIMESTAMPTZOID, NULL);
		result = lappend(result, m);
		MemoryContextSwitchTo(spi);
	}
	SPI_finish();
	return result;
}

/* The text parts of a content, joined with spaces; NULL when none */
static char *
user_text(Jsonb *content)
{
	JsonbContainer *all = adk_content_parts(&content->root);
	AdkParts	parts;
	JsonbContainer *part;
	StringInfoData s;

	if (all == NULL)
		return NULL;
	initStringInfo(&s);
	adk_parts_begin(&parts, all);
	while (adk_parts_next(&parts, &part))
	{
		JsonbValue *t = adk_jsonb_get(part, "text");

		if (t == NULL || t->type != jbvString)
			continue;
		if (s.len > 0)
			appendStringInfoChar(&s, ' ');
		appendBinaryStringInfo(&s, t->val.string.val, t->val.string.len);
	}
	return s.len > 0 ? s.data : NULL;
}
