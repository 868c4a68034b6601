/*-------------------------------------------------------------------------
 *
 * thoughts.c
 *	  The thoughts a run received and did not store (adk.store_thoughts
 *	  off, docs/models.md "Thinking"), sent back within the run.
 *
 * With the setting off, the model layer takes the thought text out of an
 * answer before anything stores or returns it (model/guard.c), and hands
 * what it took to the run that made the call.  The run keeps it in its
 * own memory, with the seq of the model event stored of that answer
 * (adk_thoughts_keep), and puts it back into that event wherever the run
 * reads the event again to build its next requests (adk_thoughts_restore,
 * from prompt_memo.c): so within the run a tool loop sends a provider its
 * thoughts exactly as they came -- Anthropic refuses the next request of
 * a tool loop whose last assistant message lacks its signed thinking
 * blocks.  Nothing of it is stored: the events hold the answer without
 * the text, the ledger's copy of a request has it emptied (model/
 * ledger.c), and so has the request a span keeps
 * (adk_contents_without_thoughts).  Another run (a paused tool loop
 * resumed, the next turn) reads the events as stored.
 *
 * IDENTIFICATION
 *	  src/runner/thoughts.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include <json-c/json.h>

#include "common/json_bridge.h"
#include "model/guard.h"
#include "model/llm.h"
#include "runner/runner.h"

/* What was taken out of the answer stored as the event of seq */
typedef struct KeptThoughts
{
	int64		seq;
	Jsonb	   *taken;			/* [{"at", "emptied", "part"}], by "at" */
} KeptThoughts;

static Jsonb *restored_event(Jsonb *event, Jsonb *taken);
static struct json_object *restored_parts(struct json_object *parts,
										  struct json_object *taken);
static Jsonb *emptied_contents(Jsonb *contents);

/*
 * Keep taken (adk_model_finish_thoughts' thoughts) for the event of seq,
 * in the run's memory.
 */
void
adk_thoughts_keep(AdkRun *run, int64 seq, Jsonb *taken)
{
	MemoryContext old = MemoryContextSwitchTo(run->run_cxt);
	KeptThoughts *k = palloc(sizeof(KeptThoughts));

	k->seq = seq;
	k->taken = DatumGetJsonbPCopy(JsonbPGetDatum(taken));
	run->thoughts = lappend(run->thoughts, k);
	MemoryContextSwitchTo(old);
}

/*
 * The event of seq as the run received it: with the thoughts taken out of
 * it put back in their places.  event itself when the run kept none for
 * it, or when its parts are not the ones they were taken from (a plugin
 * replaced them); otherwise a new jsonb in the current memory context.
 */
Jsonb *
adk_thoughts_restore(AdkRun *run, int64 seq, Jsonb *event)
{
	ListCell   *lc;

	foreach(lc, run->thoughts)
	{
		KeptThoughts *k = (KeptThoughts *) lfirst(lc);

		if (k->seq == seq)
			return restored_event(event, k->taken);
	}
	return event;
}

/* adk_thoughts_restore's work, for the thoughts taken of event */
static Jsonb *
restored_event(Jsonb *event, Jsonb *taken_jb)
{
	struct json_object *volatile ev;
	struct json_object *volatile taken = NULL;
	Jsonb	   *volatile result = event;

	ev = adk_jsonb_to_jsonc(event, "event");
	PG_TRY();
	{
		struct json_object *content;
		struct json_object *parts;

		taken = adk_jsonb_to_jsonc(taken_jb, "thoughts");
		if (json_object_object_get_ex(ev, "content", &content) &&
			json_object_object_get_ex(content, "parts", &parts) &&
			(parts = restored_parts(parts, taken)) != NULL)
		{
			json_object_object_add(content, "parts", parts);
			result = adk_jsonc_to_jsonb(ev);
		}
	}
	PG_FINALLY();
	{
		json_object_put(ev);
		if (taken != NULL)
			json_object_put(taken);
	}
	PG_END_TRY();
	return result;
}

/*
 * parts (as stored) with the parts taken put back: a new array, or NULL
 * when they do not fit (a part left out is not there, one emptied is not
 * an empty thought).
 */
static struct json_object *
restored_parts(struct json_object *parts, struct json_object *taken)
{
	struct json_object *out;
	size_t		n;
	size_t		ntaken;
	size_t		i;
	size_t		j = 0;
	size_t		k = 0;

	if (!json_object_is_type(parts, json_type_array) ||
		!json_object_is_type(taken, json_type_array))
		return NULL;
	n = json_object_array_length(parts);
	ntaken = json_object_array_length(taken);
	if ((out = json_object_new_array()) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	for (i = 0; j < n || k < ntaken; i++)
	{
		struct json_object *t = k < ntaken ? json_object_array_get_idx(taken, k) : NULL;
		struct json_object *v;

		if (t != NULL && json_object_object_get_ex(t, "at", &v) &&
			json_object_get_int64(v) == (int64_t) i)
		{
			bool		emptied = json_object_object_get_ex(t, "emptied", &v) &&
				json_object_get_boolean(v);

			if (emptied)
			{
				/* in its place: an empty thought */
				struct json_object *p = j < n ? json_object_array_get_idx(parts, j) : NULL;

				if (p == NULL || !json_object_object_get_ex(p, "thought", &v) ||
					!json_object_get_boolean(v) ||
					!json_object_object_get_ex(p, "text", &v) ||
					json_object_get_string_len(v) != 0)
					break;
				j++;
			}
			json_object_object_get_ex(t, "part", &v);
			json_object_array_add(out, json_object_get(v));
			k++;
			continue;
		}
		if (j >= n)
			break;
		json_object_array_add(out, json_object_get(json_object_array_get_idx(parts, j)));
		j++;
	}
	if (j < n || k < ntaken)
	{
		json_object_put(out);
		return NULL;
	}
	return out;
}

/*
 * contents (ADK contents, as a span keeps a request) with the text of
 * their thoughts emptied when adk.store_thoughts is off: a new jsonb when
 * there was any, else contents itself.
 */
Jsonb *
adk_contents_without_thoughts(Jsonb *contents)
{
	if (adk_store_thoughts || contents == NULL)
		return contents;
	return emptied_contents(contents);
}

/* adk_contents_without_thoughts' work */
static Jsonb *
emptied_contents(Jsonb *contents)
{
	struct json_object *volatile wrap;
	Jsonb	   *volatile result = contents;

	/* as a request of Gemini's shape: {"contents": [{"parts"}]} */
	if ((wrap = json_object_new_object()) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	PG_TRY();
	{
		int			n;

		json_object_object_add(wrap, "contents",
							   adk_jsonb_to_jsonc(contents, "contents"));
		if ((n = llm_request_empty_thoughts(wrap)) < 0)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory")));
		if (n > 0)
			result = adk_jsonc_to_jsonb(json_object_object_get(wrap, "contents"));
	}
	PG_FINALLY();
	{
		json_object_put(wrap);
	}
	PG_END_TRY();
	return result;
}
