/*-------------------------------------------------------------------------
 *
 * route.c
 *	  Which agent handles an input (SPEC §5 step 2, 000 §四.4.1), from
 *	  what the store reads of the session.
 *
 * A function response goes to the agent that made the matching call;
 * otherwise the author of the latest non-user event, if it and every agent
 * above it is an LLM agent that allows transfer to its parent; otherwise
 * the root.  (The search looks at the newest 200 events.)  Below the
 * agents' stepper and the flow: it looks agents up in the tree (defs.c)
 * and asks the store for the session's reads (store/session_read.c),
 * nothing else.
 *
 * IDENTIFICATION
 *	  src/runner/route.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/jsonb_util.h"
#include "runner/runner.h"
#include "store/session_read.h"

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
	List	   *authors;
	ListCell   *lc;

	/* a function response goes to the agent that made the call */
	if (response_id && adk_find_call_event(run, response_id, &author, NULL))
	{
		AdkAgent   *a = adk_find_agent(run, author);

		if (a && in_main_tree(run, a))
			return a;
	}

	/* the newest author that may answer again (store/session_read.c) */
	authors = adk_session_recent_authors(run->app, run->user, run->session);
	foreach(lc, authors)
	{
		char	   *name = (char *) lfirst(lc);
		AdkAgent   *a;

		if (strcmp(name, "user") == 0)
			continue;
		if (strcmp(name, run->root->name) == 0)
			return run->root;
		a = adk_find_agent(run, name);
		if (a && in_main_tree(run, a) && transferable_across_tree(a))
			return a;
	}
	return run->root;
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
	return adk_session_call_event(run->app, run->user, run->session, call_id,
								  author, invocation_id);
}
