/*-------------------------------------------------------------------------
 *
 * route.c
 *	  Which agent handles an input (step 2 of run.c's order of work,
 *	  000 §四.4.1), from what the store reads of the session.
 *
 * A function response goes to the agent that made the matching call;
 * otherwise the author of the latest non-user event, if it and every agent
 * above it is an LLM agent that allows transfer to its parent; otherwise
 * the root.  (The search looks at the newest 200 events.)  Only chat
 * agents answer the user: a task or single_turn agent is run by its
 * coordinator's call (docs/agent-modes.md).  Below the
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

#include "runner/runner.h"
#include "store/session_read.h"

static bool transferable_across_tree(AdkAgent *agent);

static bool
in_main_tree(AdkRun *run, AdkAgent *a)
{
	while (a->parent)
		a = a->parent;
	return a == run->defs.root;
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
 * Which agent handles the run's input, decoded already (input.c): the
 * order of work's step 2.
 */
AdkAgent *
adk_agent_for_input(AdkRun *run)
{
	List	   *authors;
	ListCell   *lc;

	/* a function response goes to the agent that made the call (input.c) */
	if (run->input.call_author != NULL)
	{
		AdkAgent   *a = adk_find_agent(run, run->input.call_author);

		if (a && in_main_tree(run, a) && adk_agent_is_chat(a))
			return a;
	}

	/*
	 * A resumed task goes on where its run_states row says (hitl.c); else
	 * the session's open task: its agent goes on in its scope (task_mode.c)
	 */
	{
		const char *resumed_agent = NULL;
		const char *resumed_path = adk_hitl_resumed_node(run, &resumed_agent);
		AdkAgent   *task = adk_task_resumed(run, resumed_path, resumed_agent);

		if (task == NULL)
			task = adk_task_active(run);
		if (task != NULL && in_main_tree(run, task))
			return task;
	}

	/*
	 * An agent with no sub-agents is its tree's only agent: whoever wrote
	 * the history, it is the one that answers, so the history need not be
	 * read for it (the loop below could only return it).
	 */
	if (run->defs.root->sub_agents == NIL)
		return run->defs.root;

	/* the newest author that may answer again (store/session_read.c) */
	authors = adk_session_recent_authors(run->app, run->user, run->session);
	foreach(lc, authors)
	{
		char	   *name = (char *) lfirst(lc);
		AdkAgent   *a;

		if (strcmp(name, "user") == 0)
			continue;
		if (strcmp(name, run->defs.root->name) == 0)
			return run->defs.root;
		a = adk_find_agent(run, name);
		if (a && in_main_tree(run, a) && adk_agent_is_chat(a) &&
			transferable_across_tree(a))
			return a;
	}
	return run->defs.root;
}

/*
 * Which agent would handle message, for a run object that has decoded no
 * input of its own (adk_prompt): message becomes its input.
 */
AdkAgent *
adk_agent_to_run(AdkRun *run, Jsonb *message)
{
	adk_input_decode(&run->input, message);
	adk_input_find_call(run);
	return adk_agent_for_input(run);
}
