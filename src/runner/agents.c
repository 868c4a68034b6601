/*-------------------------------------------------------------------------
 *
 * agents.c
 *	  The agent tree of an app, which agent runs, and the workflow agents:
 *	  sequential, parallel, loop.
 *
 * The tree is read once per invocation from adk.agents (checked against
 * the tree rules first: rows may have changed since the app was defined).
 * Which agent answers (000 §四.4.1): a function response goes to the agent
 * that made the matching call; otherwise the author of the latest non-user
 * event, if it and every agent above it is an LLM agent that allows
 * transfer to its parent; otherwise the root.  (The search looks at the
 * newest 200 events.)
 *
 * Workflow agents: sequential runs its sub-agents in order on the same
 * branch; parallel gives each sub-agent a branch of its own
 * ("parent.child") and runs them at once (their model calls in flight
 * together, their events stored as each arrives); loop
 * repeats its sub-agents until one escalates (exit_loop) or max_iterations.
 * All of it is driven one step at a time (adk_agent_step, at the end).
 *
 * IDENTIFICATION
 *	  src/runner/agents.c
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

static void load_tree(AdkRun *run, const char *root, bool main_tree);
static bool transferable_across_tree(AdkAgent *agent);
static char *text_array_get(ArrayType *a, List **out);

#define TREE_SQL \
	"SELECT t.name, t.parent, a.kind, adk._agent_model(a.name), a.instruction," \
	"       a.description, a.tools, a.output_key, a.disallow_transfer_to_parent," \
	"       a.disallow_transfer_to_peers, a.max_iterations," \
	"       a.include_contents OPERATOR(pg_catalog.=) 'none', a.generate_config" \
	"  FROM adk._agent_tree($1) t JOIN adk.agents a ON a.name OPERATOR(pg_catalog.=) t.name"

/*
 * Read the tree under root_name (and the agents its agents use as tools).
 */
void
adk_load_agents(AdkRun *run, const char *root_name)
{
	ListCell   *lc;
	List	   *tool_agents = NIL;

	load_tree(run, root_name, true);
	run->root = adk_find_agent(run, root_name);
	if (run->root == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("root agent \"%s\" of app \"%s\" does not exist",
						root_name, run->app)));

	/* agents used as tools that are not in the tree */
	foreach(lc, run->agents)
	{
		AdkAgent   *a = (AdkAgent *) lfirst(lc);
		ListCell   *t;

		foreach(t, a->tools)
			tool_agents = lappend(tool_agents, lfirst(t));
	}
	foreach(lc, tool_agents)
	{
		char	   *name = (char *) lfirst(lc);
		AdkOwnerSave save;
		Datum		arg = CStringGetTextDatum(name);
		Oid			type = TEXTOID;
		bool		is_agent;

		if (adk_find_agent(run, name) != NULL)
			continue;
		adk_become_owner(&save);
		SPI_connect();
		is_agent = adk_spi_exec("SELECT 1 FROM adk.agents WHERE name OPERATOR(pg_catalog.=) $1",
								1, &type, &arg, NULL, 1) == SPI_OK_SELECT &&
			SPI_processed == 1;
		SPI_finish();
		adk_restore_user(&save);
		if (is_agent)
			load_tree(run, name, false);
	}
}

static void
load_tree(AdkRun *run, const char *root, bool main_tree)
{
	AdkOwnerSave save;
	Datum		arg = CStringGetTextDatum(root);
	Oid			type = TEXTOID;
	MemoryContext caller = CurrentMemoryContext;
	uint64		i;

	adk_become_owner(&save);
	SPI_connect();
	if (main_tree &&
		adk_spi_exec("SELECT adk._check_agent_tree($1)", 1, &type, &arg,
					 NULL, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not check the agent tree");
	if (adk_spi_exec(TREE_SQL, 1, &type, &arg, NULL, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the agent tree");
	for (i = 0; i < SPI_processed; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		MemoryContext spi = MemoryContextSwitchTo(caller);
		AdkAgent   *a = palloc0(sizeof(AdkAgent));
		char	   *parent = SPI_getvalue(row, desc, 2);
		bool		isnull;
		Datum		d;

		a->name = SPI_getvalue(row, desc, 1);
		a->kind = SPI_getvalue(row, desc, 3);
		a->model = SPI_getvalue(row, desc, 4);
		a->instruction = SPI_getvalue(row, desc, 5);
		a->description = SPI_getvalue(row, desc, 6);
		d = SPI_getbinval(row, desc, 7, &isnull);
		if (!isnull)
			text_array_get(DatumGetArrayTypeP(d), &a->tools);
		a->output_key = SPI_getvalue(row, desc, 8);
		a->disallow_transfer_to_parent = DatumGetBool(SPI_getbinval(row, desc, 9, &isnull));
		a->disallow_transfer_to_peers = DatumGetBool(SPI_getbinval(row, desc, 10, &isnull));
		d = SPI_getbinval(row, desc, 11, &isnull);
		a->max_iterations = isnull ? 0 : DatumGetInt32(d);
		a->include_contents_none = DatumGetBool(SPI_getbinval(row, desc, 12, &isnull));
		d = SPI_getbinval(row, desc, 13, &isnull);
		a->generate_config = isnull ? NULL : DatumGetJsonbPCopy(d);
		if (parent != NULL && (!main_tree || i > 0))
		{
			a->parent = adk_find_agent(run, parent);
			if (a->parent)
				a->parent->sub_agents = lappend(a->parent->sub_agents, a);
		}
		if (i == 0)
			a->parent = NULL;
		run->agents = lappend(run->agents, a);
		MemoryContextSwitchTo(spi);
	}
	SPI_finish();
	adk_restore_user(&save);
}

static char *
text_array_get(ArrayType *a, List **out)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			i;

	deconstruct_array(a, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	for (i = 0; i < n; i++)
		if (!nulls[i])
			*out = lappend(*out, TextDatumGetCString(elems[i]));
	return NULL;
}

AdkAgent *
adk_find_agent(AdkRun *run, const char *name)
{
	ListCell   *lc;

	if (name == NULL)
		return NULL;
	foreach(lc, run->agents)
	{
		AdkAgent   *a = (AdkAgent *) lfirst(lc);

		if (strcmp(a->name, name) == 0)
			return a;
	}
	return NULL;
}

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
	args[3] = CStringGetTextDatum(w.buf.data);
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

/*
 * Where an LLM agent may transfer (ADK's _get_transfer_targets): its
 * sub-agents; its parent unless disallow_transfer_to_parent; its peers
 * unless disallow_transfer_to_peers -- the last two only under an LLM
 * parent.
 */
List *
adk_transfer_targets(AdkAgent *agent)
{
	List	   *result = NIL;
	ListCell   *lc;

	if (strcmp(agent->kind, "llm") != 0)
		return NIL;
	result = list_copy(agent->sub_agents);
	if (agent->parent && strcmp(agent->parent->kind, "llm") == 0)
	{
		if (!agent->disallow_transfer_to_parent)
			result = lappend(result, agent->parent);
		if (!agent->disallow_transfer_to_peers)
		{
			foreach(lc, agent->parent->sub_agents)
			{
				if (lfirst(lc) != agent)
					result = lappend(result, lfirst(lc));
			}
		}
	}
	return result;
}

/*
 * The agents of a run are driven as a stack of frames, one unit of work at
 * a time (adk_agent_step), so that adk_run can hand each event back as soon
 * as it is stored, and a run can wait for its model without blocking its
 * process.  A frame goes through: before_agent (which may answer instead
 * of the agent), the agent itself -- an LLM agent starts a model call in
 * one step and stores its event in a later one, once the answer is in,
 * then runs its function calls (agent-tools' model calls all in flight at
 * once); a sequential or loop agent pushes its sub-agents one by one; a
 * parallel agent gives each sub-agent a lane (a frame stack of its own) and
 * steps the lanes in turn, so their model calls are in flight together and
 * their events are stored as each arrives; a transfer pushes the agent
 * transferred to -- and after_agent.
 */
typedef enum FramePhase
{
	F_START,
	F_LLM,						/* start a model call */
	F_LLM_WAIT,					/* ... its answer: the model event */
	F_CALLS,					/* the model's calls */
	F_CALLS_WAIT,				/* ... agent-tools' answers: the responses */
	F_WORKFLOW,
	F_PARALLEL,					/* the lanes of a parallel agent */
	F_TRANSFERRED,
	F_AFTER
} FramePhase;

typedef struct Frame
{
	AdkAgent   *agent;
	const char *branch;
	FramePhase	phase;
	int			index;			/* workflow: next sub-agent; parallel: next
								 * lane to step */
	int			iteration;		/* loop: passes completed */
	List	   *tools;			/* llm */
	Jsonb	   *decls;			/* llm */
	List	   *calls;			/* llm: the model's calls, run next step */
	AdkRound   *round;			/* llm: half a round in flight */
	List	   *lanes;			/* parallel: List ** frame stacks */
} Frame;

static void step_start(AdkRun *run, Frame *f);
static void step_workflow(AdkRun *run, Frame *f);
static AdkStepResult step_parallel(AdkRun *run, Frame *f);
static void step_after(AdkRun *run, Frame *f);
static void emit_content(AdkRun *run, Frame *f, Jsonb *content);
static AdkStepResult step_stack(AdkRun *run, List **stack);
static void calls_result(AdkRun *run, Frame *f, AdkRoundResult rr,
						 AdkAgent *transfer);
static void abandon_stack(List *stack);

void
adk_push_agent(AdkRun *run, AdkAgent *agent, const char *branch)
{
	MemoryContext old = MemoryContextSwitchTo(run->run_cxt);
	Frame	   *f = palloc0(sizeof(Frame));
	List	  **stack = run->stack ? run->stack : &run->frames;

	f->agent = agent;
	f->branch = branch;
	f->phase = F_START;
	*stack = lappend(*stack, f);
	MemoryContextSwitchTo(old);
}

static void
pop_frame(AdkRun *run)
{
	*run->stack = list_delete_last(*run->stack);
}

/*
 * One unit of work of the run's agents: ADK_STEP_RAN, ADK_STEP_WAIT when
 * every agent that could go on waits for a model call (drive the HTTP
 * client, then step again), ADK_STEP_DONE when no agent is left.
 */
AdkStepResult
adk_agent_step(AdkRun *run)
{
	AdkStepResult r = step_stack(run, &run->frames);

	run->stack = NULL;
	return r;
}

/*
 * Whether a step of the run would do work now: false only when every
 * agent that could go on waits for model calls still in flight.  Asks,
 * touches nothing (no transaction needed): a job worker steps only the
 * runs that are ready.
 */
static bool
stack_ready(List *stack)
{
	Frame	   *f;
	ListCell   *lc;

	if (stack == NIL)
		return true;
	f = (Frame *) llast(stack);
	switch (f->phase)
	{
		case F_LLM_WAIT:
		case F_CALLS_WAIT:
			return adk_round_ready(f->round);
		case F_PARALLEL:
			foreach(lc, f->lanes)
			{
				if (stack_ready(*(List **) lfirst(lc)))
					return true;
			}
			return false;
		default:
			return true;
	}
}

bool
adk_agent_ready(AdkRun *run)
{
	return run->end_invocation || stack_ready(run->frames);
}

/*
 * The run ends without its agents (an ERROR, a cancel): every model call
 * in flight stops.
 */
void
adk_agent_abandon(AdkRun *run)
{
	abandon_stack(run->frames);
	run->frames = NIL;
}

static void
abandon_stack(List *stack)
{
	ListCell   *lc;

	foreach(lc, stack)
	{
		Frame	   *f = (Frame *) lfirst(lc);
		ListCell   *l;

		if (f->round)
			adk_round_abandon(f->round);
		f->round = NULL;
		foreach(l, f->lanes)
			abandon_stack(*(List **) lfirst(l));
	}
}

static AdkStepResult
step_stack(AdkRun *run, List **stack)
{
	Frame	   *f;
	AdkAgent   *transfer = NULL;
	AdkRoundResult rr;

	if (*stack == NIL)
		return ADK_STEP_DONE;
	run->stack = stack;
	f = (Frame *) llast(*stack);
	if (run->end_invocation)
	{
		/* a failure or an early end: no after_agent anywhere */
		abandon_stack(list_make1(f));
		pop_frame(run);
		return ADK_STEP_RAN;
	}
	switch (f->phase)
	{
		case F_START:
			step_start(run, f);
			break;
		case F_LLM:
			if (adk_llm_round_start(run, f->agent, f->branch, f->tools, f->decls,
									&f->round) == ROUND_WAIT)
				f->phase = F_LLM_WAIT;
			else
				f->phase = F_AFTER;
			break;
		case F_LLM_WAIT:
			if (!adk_round_ready(f->round))
				return ADK_STEP_WAIT;
			rr = adk_llm_round_finish(run, f->agent, f->branch, f->tools,
									  f->round, &f->calls);
			f->round = NULL;
			f->phase = rr == ROUND_CALLS ? F_CALLS : F_AFTER;
			break;
		case F_CALLS:
			rr = adk_llm_calls_start(run, f->agent, f->branch, f->tools,
									 f->calls, &f->round, &transfer);
			if (rr == ROUND_WAIT)
				f->phase = F_CALLS_WAIT;
			else
				calls_result(run, f, rr, transfer);
			break;
		case F_CALLS_WAIT:
			if (!adk_round_ready(f->round))
				return ADK_STEP_WAIT;
			rr = adk_llm_calls_finish(run, f->agent, f->branch, f->tools,
									  f->calls, f->round, &transfer);
			f->round = NULL;
			calls_result(run, f, rr, transfer);
			break;
		case F_WORKFLOW:
			step_workflow(run, f);
			break;
		case F_PARALLEL:
			return step_parallel(run, f);
		case F_TRANSFERRED:
			/* the agent transferred to has finished */
			f->phase = F_AFTER;
			break;
		case F_AFTER:
			step_after(run, f);
			break;
	}
	return ADK_STEP_RAN;
}

/*
 * After a round's calls: the model again, the agent transferred to, or
 * the end of this agent.
 */
static void
calls_result(AdkRun *run, Frame *f, AdkRoundResult rr, AdkAgent *transfer)
{
	/* a long run keeps no call it already ran */
	adk_llm_free_calls(f->calls);
	f->calls = NIL;
	switch (rr)
	{
		case ROUND_AGAIN:
		case ROUND_CALLS:
			f->phase = F_LLM;
			break;
		case ROUND_TRANSFER:
			f->phase = F_TRANSFERRED;
			adk_push_agent(run, transfer, f->branch);
			break;
		case ROUND_WAIT:
		case ROUND_DONE:
			f->phase = F_AFTER;
			break;
	}
}

/*
 * A parallel agent: step the next lane that can go on, in turn.  The agent
 * is done when every lane is.
 */
static AdkStepResult
step_parallel(AdkRun *run, Frame *f)
{
	int			n = list_length(f->lanes);
	int			i;
	bool		all_done = true;

	for (i = 0; i < n; i++)
	{
		int			k = (f->index + i) % n;
		List	  **lane = (List **) list_nth(f->lanes, k);
		AdkStepResult r = step_stack(run, lane);

		if (r == ADK_STEP_RAN)
		{
			f->index = (k + 1) % n;
			return ADK_STEP_RAN;
		}
		if (r == ADK_STEP_WAIT)
			all_done = false;
	}
	if (!all_done)
		return ADK_STEP_WAIT;
	f->phase = F_AFTER;
	return ADK_STEP_RAN;
}

/*
 * before_agent: it may answer instead of the agent.
 */
static void
step_start(AdkRun *run, Frame *f)
{
	Jsonb	   *content;

	if (!adk_plugins_hook(run, CB_BEFORE_AGENT, f->agent->name, f->branch,
						  NULL, NULL, NULL, NULL, &content))
	{
		pop_frame(run);
		return;
	}
	if (content != NULL)
	{
		emit_content(run, f, content);
		pop_frame(run);
		return;
	}
	if (strcmp(f->agent->kind, "llm") != 0)
		f->phase = F_WORKFLOW;
	else if (adk_llm_begin(run, f->agent, f->branch, &f->tools, &f->decls))
		f->phase = F_LLM;
	else
		f->phase = F_AFTER;
}

/*
 * Workflow agents: the next sub-agent.  Sequential runs each once; loop
 * repeats them until one escalates or max_iterations passes are done;
 * parallel starts them all at once, each in a lane on a branch of its own
 * ("parent.child").  An escalation stops a sequential agent
 * and passes up to the enclosing loop, which consumes it.
 */
static void
step_workflow(AdkRun *run, Frame *f)
{
	AdkAgent   *agent = f->agent;
	int			n = list_length(agent->sub_agents);
	AdkAgent   *child;
	const char *child_branch = f->branch;

	if (strcmp(agent->kind, "loop") == 0)
	{
		if (run->escalated)
		{
			run->escalated = false;
			f->phase = F_AFTER;
			return;
		}
		if (f->index >= n)
		{
			f->index = 0;
			f->iteration++;
		}
		if (agent->max_iterations > 0 && f->iteration >= agent->max_iterations)
		{
			f->phase = F_AFTER;
			return;
		}
	}
	else if (run->escalated || f->index >= n)
	{
		f->phase = F_AFTER;
		return;
	}

	if (strcmp(agent->kind, "parallel") == 0)
	{
		/* every sub-agent at once, each in a lane on a branch of its own */
		List	  **stack = run->stack;
		ListCell   *lc;
		MemoryContext old = MemoryContextSwitchTo(run->run_cxt);

		foreach(lc, agent->sub_agents)
		{
			List	  **lane = palloc0(sizeof(List *));

			child = (AdkAgent *) lfirst(lc);
			child_branch = f->branch ? psprintf("%s.%s", f->branch, child->name) :
				psprintf("%s.%s", agent->name, child->name);
			run->stack = lane;
			adk_push_agent(run, child, child_branch);
			f->lanes = lappend(f->lanes, lane);
		}
		MemoryContextSwitchTo(old);
		run->stack = stack;
		f->index = 0;
		f->phase = F_PARALLEL;
		return;
	}
	child = (AdkAgent *) list_nth(agent->sub_agents, f->index++);
	adk_push_agent(run, child, child_branch);
}

/*
 * after_agent: it may add an answer.
 */
static void
step_after(AdkRun *run, Frame *f)
{
	Jsonb	   *content;

	if (adk_plugins_hook(run, CB_AFTER_AGENT, f->agent->name, f->branch,
						 NULL, NULL, NULL, NULL, &content) &&
		content != NULL)
		emit_content(run, f, content);
	pop_frame(run);
}

static void
emit_content(AdkRun *run, Frame *f, Jsonb *content)
{
	JsonWriter	w;

	adk_event_start(&w, run, f->agent->name, f->branch);
	jw_key(&w, "content");
	jw_jsonb(&w, content);
	jw_end_object(&w);
	adk_emit(run, jw_finish(&w));
}
