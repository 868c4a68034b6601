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
 * ("parent.child") -- they run one after another, which ADK allows; loop
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
#include "runner/spans.h"
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
 * as it is stored.  A frame goes through: before_agent (which may answer
 * instead of the agent), the agent itself -- an LLM agent a model call
 * (and its event) per step, then its function calls in the next; a workflow agent pushes its sub-agents one by one; a transfer
 * pushes the agent transferred to -- and after_agent.
 */
typedef enum FramePhase
{
	F_START,
	F_LLM,						/* a model call and its event */
	F_CALLS,					/* the model's calls and their responses */
	F_WORKFLOW,
	F_TRANSFERRED,
	F_AFTER
} FramePhase;

typedef struct Frame
{
	AdkAgent   *agent;
	const char *branch;
	FramePhase	phase;
	int			index;			/* workflow: next sub-agent */
	int			iteration;		/* loop: passes completed */
	List	   *tools;			/* llm */
	Jsonb	   *decls;			/* llm */
	List	   *calls;			/* llm: the model's calls, run next step */
} Frame;

static void step_start(AdkRun *run, Frame *f);
static void step_workflow(AdkRun *run, Frame *f);
static void step_after(AdkRun *run, Frame *f);
static void emit_content(AdkRun *run, Frame *f, Jsonb *content);

void
adk_push_agent(AdkRun *run, AdkAgent *agent, const char *branch)
{
	Frame	   *f = palloc0(sizeof(Frame));

	f->agent = agent;
	f->branch = branch;
	f->phase = F_START;
	run->frames = lappend(run->frames, f);
	adk_span_agent_begin(run, agent);
}

static void
pop_frame(AdkRun *run)
{
	run->frames = list_delete_last(run->frames);
	adk_span_agent_end(run);
}

/*
 * One unit of work of the innermost agent.  false when no agent is left.
 */
bool
adk_agent_step(AdkRun *run)
{
	Frame	   *f;
	AdkAgent   *transfer = NULL;
	AdkRoundResult rr;

	if (run->frames == NIL)
		return false;
	f = (Frame *) llast(run->frames);
	if (run->end_invocation)
	{
		/* a failure or an early end: no after_agent anywhere */
		pop_frame(run);
		return true;
	}
	switch (f->phase)
	{
		case F_START:
			step_start(run, f);
			break;
		case F_LLM:
			if (adk_llm_round(run, f->agent, f->branch, f->tools, f->decls,
							  &f->calls) == ROUND_CALLS)
				f->phase = F_CALLS;
			else
				f->phase = F_AFTER;
			break;
		case F_CALLS:
			rr = adk_llm_run_calls(run, f->agent, f->branch, f->tools,
								   f->calls, &transfer);
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
				case ROUND_DONE:
					f->phase = F_AFTER;
					break;
			}
			break;
		case F_WORKFLOW:
			step_workflow(run, f);
			break;
		case F_TRANSFERRED:
			/* the agent transferred to has finished */
			f->phase = F_AFTER;
			break;
		case F_AFTER:
			step_after(run, f);
			break;
	}
	return true;
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
 * Workflow agents: the next sub-agent.  Sequential and parallel run each
 * once (parallel: on a branch of its own, "parent.child" -- one after
 * another, which ADK allows); loop repeats them until one escalates or
 * max_iterations passes are done.  An escalation stops a sequential agent
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

	child = (AdkAgent *) list_nth(agent->sub_agents, f->index++);
	if (strcmp(agent->kind, "parallel") == 0)
		child_branch = f->branch ? psprintf("%s.%s", f->branch, child->name) :
			psprintf("%s.%s", agent->name, child->name);
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
