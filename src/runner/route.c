/*-------------------------------------------------------------------------
 *
 * route.c
 *	  Which agent handles an input (SPEC §5 step 2, 000 §四.4.1), and the
 *	  session reads that decide it.
 *
 * A function response goes to the agent that made the matching call;
 * otherwise the author of the latest non-user event, if it and every agent
 * above it is an LLM agent that allows transfer to its parent; otherwise
 * the root.  (The search looks at the newest 200 events.)  Below the
 * agents' stepper and the flow: it looks agents up in the tree (defs.c)
 * and reads the session, nothing else.
 *
 * IDENTIFICATION
 *	  src/runner/route.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "common/json_writer.h"
#include "common/jsonb_util.h"
#include "common/spi_plans.h"
#include "runner/runner.h"
#include "store/owner.h"

static bool transferable_across_tree(AdkAgent *agent);

static bool
in_main_tree(AdkRun *run, AdkAgent *a)
{
	while (a->parent)
		a = a->parent;
	return a == run->root;
}

/*
 * ADK's _is_transferable_across_agent_tree: the agent and every agent
 * above it are LLM agents that allow transfer to their parent.
 */
static bool
transferable_across_tree(AdkAgent *agent)
{
	for (; agent != NULL; agent = agent->parent)
	{
		if (strcmp(agent->kind, "llm") != 0 || agent->disallow_transfer_to_parent)
			return false;
	}
	return true;
}

/*
 * Which agent handles this input (SPEC §5 step 2).
 */
AdkAgent *
adk_agent_to_run(AdkRun *run, Jsonb *message)
{
	char	   *response_id = adk_first_response_id(message);
	char	   *author = NULL;
	AdkOwnerSave save;
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		args[3];
	AdkAgent   *found = NULL;
	uint64		i;

	/* a function response goes to the agent that made the call */
	if (response_id && adk_find_call_event(run, response_id, &author, NULL))
	{
		AdkAgent   *a = adk_find_agent(run, author);

		if (a && in_main_tree(run, a))
			return a;
	}

	args[0] = CStringGetTextDatum(run->app);
	args[1] = CStringGetTextDatum(run->user);
	args[2] = CStringGetTextDatum(run->session);
	adk_become_owner(&save);
	SPI_connect();
	if (adk_spi_exec("SELECT event_data OPERATOR(pg_catalog.->>) 'author' FROM adk.events"
					 " WHERE app_name OPERATOR(pg_catalog.=) $1"
					 "   AND user_id OPERATOR(pg_catalog.=) $2"
					 "   AND session_id OPERATOR(pg_catalog.=) $3"
					 " ORDER BY seq DESC LIMIT 200",
					 3, types, args, NULL, 0) == SPI_OK_SELECT)
	{
		for (i = 0; i < SPI_processed && found == NULL; i++)
		{
			char	   *name = SPI_getvalue(SPI_tuptable->vals[i],
											SPI_tuptable->tupdesc, 1);
			AdkAgent   *a;

			if (name == NULL || strcmp(name, "user") == 0)
				continue;
			if (strcmp(name, run->root->name) == 0)
			{
				found = run->root;
				break;
			}
			a = adk_find_agent(run, name);
			if (a && in_main_tree(run, a) && transferable_across_tree(a))
				found = a;
		}
	}
	SPI_finish();
	adk_restore_user(&save);
	return found ? found : run->root;
}

/*
 * The id of the first function response in a content, or NULL.
 */
char *
adk_first_response_id(Jsonb *content)
{
	JsonbValue *parts = adk_jsonb_get(&content->root, "parts");
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	if (parts == NULL || parts->type != jbvBinary)
		return NULL;
	it = JsonbIteratorInit(parts->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		JsonbValue *f;
		JsonbValue *id;

		if (tok == WJB_ELEM && v.type == jbvBinary &&
			(f = adk_jsonb_get(v.val.binary.data, "function_response")) != NULL &&
			f->type == jbvBinary &&
			(id = adk_jsonb_get(f->val.binary.data, "id")) != NULL &&
			id->type == jbvString)
			return pnstrdup(id->val.string.val, id->val.string.len);
	}
	return NULL;
}

/*
 * The newest event of the session that made function call call_id: its
 * author and invocation id (either out-pointer may be NULL).  false when
 * there is none.
 */
bool
adk_find_call_event(AdkRun *run, const char *call_id, char **author,
					char **invocation_id)
{
	AdkOwnerSave save;
	Oid			types[4] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		args[4];
	JsonWriter	w;
	MemoryContext caller = CurrentMemoryContext;
	bool		found = false;

	/* {"content": {"parts": [{"function_call": {"id": call_id}}]}} */
	jw_init(&w);
	jw_begin_object(&w);
	jw_key(&w, "content");
	jw_begin_object(&w);
	jw_key(&w, "parts");
	jw_begin_array(&w);
	jw_begin_object(&w);
	jw_key(&w, "function_call");
	jw_begin_object(&w);
	jw_key(&w, "id");
	jw_string(&w, call_id);
	jw_end_object(&w);
	jw_end_object(&w);
	jw_end_array(&w);
	jw_end_object(&w);
	jw_end_object(&w);
	args[0] = CStringGetTextDatum(run->app);
	args[1] = CStringGetTextDatum(run->user);
	args[2] = CStringGetTextDatum(run->session);
	args[3] = CStringGetTextDatum(jw_finish_text(&w));
	adk_become_owner(&save);
	SPI_connect();
	if (adk_spi_exec("SELECT event_data OPERATOR(pg_catalog.->>) 'author', invocation_id"
					 "  FROM adk.events"
					 " WHERE app_name OPERATOR(pg_catalog.=) $1"
					 "   AND user_id OPERATOR(pg_catalog.=) $2"
					 "   AND session_id OPERATOR(pg_catalog.=) $3"
					 "   AND event_data OPERATOR(pg_catalog.@>) $4::pg_catalog.jsonb"
					 "   AND (event_data OPERATOR(pg_catalog.#>)"
					 "        '{custom_metadata,adk_appended_by}'::pg_catalog.text[]) IS NULL"
					 " ORDER BY seq DESC LIMIT 1",
					 4, types, args, NULL, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
	{
		MemoryContext spi = MemoryContextSwitchTo(caller);

		if (author)
			*author = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		if (invocation_id)
			*invocation_id = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
		MemoryContextSwitchTo(spi);
		found = true;
	}
	SPI_finish();
	adk_restore_user(&save);
	return found;
}
