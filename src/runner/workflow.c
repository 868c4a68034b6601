/*-------------------------------------------------------------------------
 *
 * workflow.c
 *	  Running a graph workflow (docs/workflows.md "What runs"): ADK-Go's
 *	  scheduler (workflow/scheduler.go) over the rows of
 *	  adk.workflow_nodes and adk.workflow_edges.
 *
 * START's successors get the user's content as their input; each
 * activation of a node runs, stores one event -- its output, its routes,
 * its state delta -- and then its successors are found by ADK-Go's
 * findSuccessors rules (adk._workflow_successors): unconditional edges
 * always fire, routed edges on a matching route, the default edge only
 * when no routed edge matched, each target once; a node whose routed
 * edges all missed ends its path silently.  A join runs once every one
 * of its predecessors has completed, with their outputs as a map.  On a
 * fan-out to several successors each (but a join) runs on a sub-branch
 * "<branch>.<node>@1", a join on the common prefix of its predecessors'
 * branches, as ADK-Go derives them.
 *
 * What runs: function nodes -- a SQL function (ctx jsonb, input jsonb)
 * RETURNS jsonb, called with the caller's privileges in a subtransaction,
 * as tools are --, tool nodes -- a tool of adk.tools called with the
 * node's input as its arguments, its response the output --, joins,
 * agent nodes and nested workflow nodes.  The workflow is stepped by its
 * frame (agents.c), one activation a step, in the order they became
 * ready: a function's, a tool's or a join's work is done within the step
 * that starts it; an agent or nested workflow node is handed back to
 * agents.c, which runs it in a lane of its own (as a parallel agent's
 * sub-agents) and completes it here when the lane ends -- so ready agent
 * nodes' model calls are in flight together, at most max_concurrency of
 * them.  The scheduler's state lives in a memory context of the frame's,
 * deleted with it.  Settings a kind cannot honour yet are refused
 * before the run starts (defs.c, adk._workflow_refusal).
 *
 * A node's settings (workflow_node.c) act through hooks: its input is
 * checked against its input_schema before it runs, a function's or a
 * tool's call is made under its timeout and retried as its retry says,
 * its output is checked against its output_schema before its event, and
 * with wait_for_output an activation without output does not complete.
 * An agent or nested workflow node's timeout is a deadline on its lane,
 * and its retry a fresh lane per attempt (arm_attempt: with a retry left,
 * an error below the node ends the attempt, not the invocation -- emit.c
 * -- and agents.c stops the lane); a parallel worker's timeout bounds it
 * whole, and its retry retries each item on its own (ADK-Go's
 * ParallelWorker).
 *
 * Human input (docs/workflows.md "Human input"): a function's
 * request_input parks its node -- ADK's adk_request_input call, with the
 * graph hash it paused under -- while the other branches go on; the
 * invocation pauses (hitl.c) once none can run.  An answer resumes it:
 * hitl.c locks and marks the row, and resume() reads the scheduler's
 * state back from the invocation's rows and goes on from the answered
 * node -- a handoff (the answer is its output) or, with rerun_on_resume,
 * a re-run with its original input and the answers so far.  A nested
 * workflow's request holds the node that runs it (no output, no
 * successor; the caller pauses too once nothing else runs), and an answer
 * to it re-enters that node, whose workflow resumes where it asked.
 *
 * Each activation is a node of the invocation: its event's node_info
 * path is "<workflow>/<node>@<n>", n counting the node's activations in
 * the invocation from 1 (below the path of the agent that runs the
 * workflow when it is not the run's root agent), and its adk.run_states row is written as it
 * starts, with its input (run_states.c); the event that finishes it names
 * it in node_info.output_for, which completes the row.  A node that
 * raises, or returns what is not a result object, stores an error event
 * (WORKFLOW_NODE_FAILED) that ends the invocation; what the earlier
 * nodes stored stays.
 *
 * IDENTIFICATION
 *	  src/runner/workflow.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "common/json_writer.h"
#include "common/jsonb_util.h"
#include "common/owner.h"
#include "common/spi_plans.h"
#include "runner/runner.h"
#include "runner/workflow_node.h"

/* A node of the graph, and where it stands in this invocation */
typedef struct WfNode
{
	char	   *name;
	char	   *kind;			/* function | tool | join | agent | workflow */
	char	   *call;			/* function: its qualified name; tool: the
								 * tool; agent: the agent; workflow: the
								 * nested workflow */
	List	   *preds;			/* char *: its predecessors (START too) */
	int			max_items;		/* parallel_worker: items at once; 0: all */
	int			runs;			/* activations so far */
	bool		completed;		/* its latest activation completed */
	Jsonb	   *output;			/* ... with this output (NULL: none) */
	char	   *branch;			/* ... on this branch (NULL: the root's) */
	bool		rerun_on_resume;
	AdkWfNodeSettings *settings;	/* NULL: none (workflow_node.c) */
} WfNode;

/* A ready activation (ADK-Go's pendingActivation) */
typedef struct WfActivation
{
	WfNode	   *node;
	Jsonb	   *input;
	char	   *triggered_by;
	char	   *branch;
	int			run_no;			/* 0: a new activation; else the one resumed */
	int			number;			/* <n> of its path, once it runs */
	Jsonb	   *answers;		/* a re-run: {"<interrupt id>": answer} */
	Jsonb	   *output;			/* a handoff: the latest answer */
	bool		nested_resume;	/* a nested workflow the answer resumes */
	char	   *path;			/* <base>/<node>@<n>, once it runs */
	/* an item of a parallel worker: that activation, and its place */
	struct WfActivation *parent;
	int			index;
	/* a parallel worker: its items' outputs, in item order */
	int			items;
	int			remaining;		/* ... not completed yet */
	Jsonb	  **outputs;
	List	   *held;			/* ... items beyond max_concurrency */
	/* a node's retry (workflow_node.c) */
	int			failed;			/* its attempts that failed */
	TimestampTz due;			/* set aside: its next attempt's time */
	AdkWfNodeSettings *settings;	/* an item's attempts: its worker's, with
									 * the parallel worker's retry; NULL: its
									 * node's */
	TimestampTz deadline;		/* a parallel worker's timeout; 0: none */
} WfActivation;

/*
 * The scheduler's state, in cxt: the memory context the workflow's frame
 * gives it (agents.c), which goes with the frame.  What a step allocates
 * by the way stays in the step's memory; what outlives the step -- the
 * nodes, their outputs and branches, the ready activations, the agent
 * nodes in flight -- is allocated in cxt.
 */
struct AdkWorkflow
{
	AdkRun	   *run;
	AdkAgent   *agent;
	MemoryContext cxt;
	List	   *nodes;			/* WfNode * */
	List	   *ready;			/* WfActivation *, first in first out */
	List	   *retrying;		/* WfActivation *, each waiting for its due
								 * time to be run again */
	List	   *deadlines;		/* WfActivation *: parallel workers running
								 * under a timeout */
	int			in_flight;		/* agent nodes handed to their lanes */
	int			max_concurrency;	/* of agent nodes in flight; 0: any */
	char	   *base;			/* its nodes' paths start with this */
	char	   *graph_hash;		/* adk.workflows.graph_hash */
	bool		paused;			/* a node asked for human input */
	AdkWfAgentNode *caller;		/* a nested workflow: its node in the
								 * workflow that runs it */
	Jsonb	   *last_output;	/* the latest output an activation gave */
};
typedef struct AdkWorkflow Workflow;

/*
 * On resume: a row of an item of a parallel worker (resume_items), with
 * the activation the answer goes on with, if any
 */
typedef struct WfItemRow
{
	int			run_no;
	bool		completed;
	Jsonb	   *output;
	char	   *branch;
	char	   *triggered_by;
	WfActivation *act;
} WfItemRow;

/* A function node's call, run guarded (subxact.c) */
typedef struct FnCall
{
	const char *call;
	Jsonb	   *ctx;
	Jsonb	   *input;
	Jsonb	   *result;			/* NULL: SQL NULL */
} FnCall;

/* A tool node's call */
typedef struct ToolCallArgs
{
	AdkTool    *tool;
	Jsonb	   *input;
	Jsonb	   *response;		/* NULL: it failed */
} ToolCallArgs;

static void load_plan(Workflow *wf);
static WfNode *find_node(Workflow *wf, const char *name);
static void schedule_successors(Workflow *wf, const char *from,
								Datum routes, bool has_routes,
								Jsonb *output, const char *branch);
static AdkWfStep run_activation(Workflow *wf, WfActivation *act,
								AdkWfAgentNode **agent_node);
static void run_function(Workflow *wf, WfActivation *act, const char *path);
static void call_function(void *arg);
static bool attempt_function(void *arg, char **error);
static bool attempt_tool(void *arg, char **error);
static void run_tool(Workflow *wf, WfActivation *act);
static AdkWfAgentNode *hand_agent(Workflow *wf, WfActivation *act,
								  const char *path);
static void run_parallel(Workflow *wf, WfActivation *act);
static void item_done(Workflow *wf, WfActivation *item, Jsonb *output);
static void release_held(Workflow *wf, WfActivation *pw);
static char *node_branch_parent(const char *branch, const char *node);
static int	node_branch_index(const char *branch, const char *node);
static char *item_branch(Workflow *wf, WfNode *n, int run_no,
						 const char *branch);
static void resume_items(Workflow *wf, List *workers, List *items,
						 List **resumed);
static void finish(Workflow *wf, WfActivation *act, Jsonb *output,
				   JsonbValue *routes, JsonbValue *state_delta);
static void node_failed(Workflow *wf, WfActivation *act, const char *message);
static char *common_branch(List *branches);
static bool resume(Workflow *wf, const char *resumed_path);
static char *activation_branch(Workflow *wf, WfActivation *act,
							   const char *lane);
static void set_node_meta(Workflow *wf, WfActivation *act, const char *path);
static void request_input(Workflow *wf, WfActivation *act, JsonbValue *req);
static bool attempted(Workflow *wf, WfActivation *act, AdkWfAttempt a,
					  long wait_ms, const char *error);
static WfActivation *retry_due(Workflow *wf);
static void run_attempt(Workflow *wf, WfActivation *act, const char *path);
static AdkWfNodeSettings *act_settings(WfActivation *act);
static WfActivation *deadline_passed(Workflow *wf);
static bool in_lane(WfNode *n);
static void arm_attempt(Workflow *wf, WfActivation *act, AdkWfAgentNode *an);

/*
 * The graph workflow agent on branch (NULL: the root's) begins, its
 * state in cxt: resumed at the node a human's answer resumes, else from
 * START, whose successors become ready with the user's content -- or,
 * for a workflow nested as a node of another (caller), with that node's
 * input (ADK-Go's WorkflowNode runs its workflow with its input).
 */
AdkWorkflow *
adk_workflow_begin(AdkRun *run, AdkAgent *agent, const char *branch,
				   AdkWfAgentNode *caller, MemoryContext cxt)
{
	Workflow   *wf = MemoryContextAllocZero(cxt, sizeof(Workflow));
	char	   *saved_path = run->node_path;
	const char *resumed_agent = NULL;

	wf->run = run;
	wf->agent = agent;
	wf->cxt = cxt;
	wf->caller = caller;
	/* the workflow's node: the run's root, or a node below another agent's */
	if (saved_path == NULL || strcmp(saved_path, agent->name) == 0)
		wf->base = MemoryContextStrdup(cxt, agent->name);
	else
		wf->base = MemoryContextStrdup(cxt, psprintf("%s/%s", saved_path,
													 agent->name));
	load_plan(wf);
	if (!resume(wf, adk_hitl_resumed_node(run, &resumed_agent)))
	{
		MemoryContext old = MemoryContextSwitchTo(cxt);

		/* START's successors get the user's content (ADK-Go: the seed input) */
		schedule_successors(wf, "START", (Datum) 0, false,
							caller ? caller->content : run->input.user_content,
							branch ? pstrdup(branch) : NULL);
		MemoryContextSwitchTo(old);
	}
	run->node_path = saved_path;
	return wf;
}

/*
 * Whether the next ready activation may start: an attempt of a retried
 * node is due, or there is a ready one and it is not an agent node beyond
 * max_concurrency.  Touches nothing (a job worker asks it outside a
 * transaction).
 */
bool
adk_workflow_ready(AdkWorkflow *wf)
{
	WfActivation *act;

	if (retry_due(wf) != NULL || deadline_passed(wf) != NULL)
		return true;
	if (wf->ready == NIL)
		return false;
	act = (WfActivation *) linitial(wf->ready);
	return !(strcmp(act->node->kind, "agent") == 0 &&
			 wf->max_concurrency > 0 && wf->in_flight >= wf->max_concurrency);
}

/*
 * One step of the workflow: its next ready activation, in the order they
 * became ready.  A function, tool or join node runs now (WF_RAN); an agent
 * node's row is written and it is handed back (WF_AGENT, *node) to run in
 * a lane of its own, so that ready agent nodes' model calls are in flight
 * together.  An attempt of a retried function or tool node that is due
 * runs first.  WF_IDLE: nothing may start now.
 */
AdkWfStep
adk_workflow_step(AdkWorkflow *wf, AdkWfAgentNode **node)
{
	AdkRun	   *run = wf->run;
	char	   *saved_path = run->node_path;
	WfActivation *act;
	AdkWfStep	r;

	*node = NULL;
	if (run->out.end_invocation || !adk_workflow_ready(wf))
		return WF_IDLE;
	act = deadline_passed(wf);
	if (act != NULL)
	{
		/*
		 * A parallel worker ran past its timeout: it fails, and with it the
		 * invocation, its items still in flight stopping (their model calls
		 * too: agents.c), as ADK-Go's scheduler cancels the node
		 */
		wf->deadlines = list_delete_ptr(wf->deadlines, act);
		run->node_path = act->path;
		set_node_meta(wf, act, act->path);
		node_failed(wf, act,
					psprintf("it ran longer than its timeout (%d ms) and was stopped",
							 act->node->settings->timeout_ms));
		run->node_path = saved_path;
		return WF_RAN;
	}
	act = retry_due(wf);
	if (act != NULL)
	{
		/* a retried node's next attempt, its row counting it */
		wf->retrying = list_delete_ptr(wf->retrying, act);
		run->node_path = act->path;
		set_node_meta(wf, act, act->path);
		adk_wfnode_retrying(run, act->path);
		if (in_lane(act->node))
		{
			/* an agent or nested workflow node: a fresh lane (agents.c) */
			*node = hand_agent(wf, act, act->path);
			run->node_path = saved_path;
			return WF_AGENT;
		}
		run_attempt(wf, act, act->path);
		run->node_path = saved_path;
		return WF_RAN;
	}
	act = (WfActivation *) linitial(wf->ready);
	wf->ready = list_delete_first(wf->ready);
	r = run_activation(wf, act, node);
	run->node_path = saved_path;
	return r;
}

/*
 * Whether a node waits to be retried (its attempt not due yet): the
 * workflow is not over, and its run waits as for a model call in flight.
 */
bool
adk_workflow_retrying(AdkWorkflow *wf)
{
	return wf->retrying != NIL;
}

/*
 * The first activation set aside for a retry whose next attempt is due;
 * NULL: none.  Touches nothing.
 */
static WfActivation *
retry_due(Workflow *wf)
{
	TimestampTz now;
	ListCell   *lc;

	if (wf->retrying == NIL)
		return NULL;
	now = GetCurrentTimestamp();
	foreach(lc, wf->retrying)
	{
		WfActivation *act = (WfActivation *) lfirst(lc);

		if (act->due <= now)
			return act;
	}
	return NULL;
}

/*
 * A parallel worker whose timeout has passed; NULL: none.  Touches
 * nothing.
 */
static WfActivation *
deadline_passed(Workflow *wf)
{
	TimestampTz now;
	ListCell   *lc;

	if (wf->deadlines == NIL)
		return NULL;
	now = GetCurrentTimestamp();
	foreach(lc, wf->deadlines)
	{
		WfActivation *act = (WfActivation *) lfirst(lc);

		if (act->deadline <= now)
			return act;
	}
	return NULL;
}

/* Whether the node runs in a lane of its own: an agent, a nested workflow */
static bool
in_lane(WfNode *n)
{
	return strcmp(n->kind, "agent") == 0 || strcmp(n->kind, "workflow") == 0;
}

/*
 * The settings an attempt of act runs under: an item's own (its worker's
 * with the parallel worker's retry), else its node's.
 */
static AdkWfNodeSettings *
act_settings(WfActivation *act)
{
	return act->settings ? act->settings : act->node->settings;
}

/*
 * Whether an agent or nested workflow node's lane is to stop (agents.c):
 * an error ended its attempt (emit.c noted it on the node's meta), or its
 * timeout has passed while it still runs (a lane that has finished ended
 * in time).  Touches nothing (a job worker asks it outside a transaction).
 */
bool
adk_workflow_lane_stopped(AdkWorkflow *wf, AdkWfAgentNode *node,
						  bool finished)
{
	AdkWfNodeMeta *meta = adk_node_meta(wf->run, node->path);

	if (meta != NULL && meta->attempt_error != NULL)
		return true;
	return !finished && node->deadline != 0 &&
		GetCurrentTimestamp() >= node->deadline;
}

/*
 * An agent or nested workflow node's lane was stopped (agents.c has
 * dropped it, its model calls in flight cancelled): the attempt failed --
 * an error ended it, or its timeout passed (docs/workflows.md "Node
 * settings").  With a retry left, the activation is set aside until its
 * next attempt is due, a fresh lane then (the other branches go on
 * meanwhile); else the node fails, as any node does.
 */
void
adk_workflow_agent_failed(AdkWorkflow *wf, AdkWfAgentNode *node)
{
	AdkRun	   *run = wf->run;
	WfActivation *act = (WfActivation *) node->activation;
	AdkWfNodeMeta *meta = adk_node_meta(run, node->path);
	char	   *saved_path = run->node_path;
	char	   *error;
	long		wait_ms = 0;
	AdkWfAttempt a;

	wf->in_flight--;
	if (meta != NULL && meta->attempt_error != NULL)
		error = pstrdup(meta->attempt_error);
	else
		error = psprintf("it ran longer than its timeout (%d ms) and was stopped",
						 node->timeout_ms);
	if (meta != NULL)
	{
		meta->attempt_scope = false;
		meta->attempt_error = NULL;
	}
	if (run->out.end_invocation)
		return;
	run->node_path = (char *) node->path;
	set_node_meta(wf, act, node->path);
	a = adk_wfnode_failed(act_settings(act), &act->failed, &error, &wait_ms);
	(void) attempted(wf, act, a, wait_ms, error);
	run->node_path = saved_path;
}

/*
 * An attempt of act's function or tool has ended (a): completed (true:
 * go on with its result), failed for good (the node fails), or failed
 * with a retry left -- then act is set aside until wait_ms from now (in
 * the workflow's memory, as its input), and the step ends, so that the
 * other branches, and a job worker's other runs, go on meanwhile
 * (docs/workflows.md "Node settings").
 */
static bool
attempted(Workflow *wf, WfActivation *act, AdkWfAttempt a, long wait_ms,
		  const char *error)
{
	MemoryContext old;

	if (a == WF_ATTEMPT_OK)
		return true;
	if (a == WF_ATTEMPT_FAILED)
	{
		node_failed(wf, act, error);
		return false;
	}
	old = MemoryContextSwitchTo(wf->cxt);
	act->due = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), wait_ms);
	wf->retrying = lappend(wf->retrying, act);
	MemoryContextSwitchTo(old);
	return false;
}

/* The work of a function or tool node's activation (one attempt) */
static void
run_attempt(Workflow *wf, WfActivation *act, const char *path)
{
	if (strcmp(act->node->kind, "tool") == 0)
		run_tool(wf, act);
	else
		run_function(wf, act, path);
}

/*
 * An agent node's lane has finished (agents.c): its last text answer
 * (NULL: none) is its output -- parsed as JSON when the agent has an
 * output_schema, as ADK-Go's agent node gives it -- and its successors
 * become ready.  A nested workflow's lane: its output is the latest
 * output of its nodes (ADK-Go's WorkflowNode); one that waits for human
 * input holds this node -- no output, no successor -- and this workflow
 * pauses too once nothing else can run.
 */
void
adk_workflow_agent_done(AdkWorkflow *wf, AdkWfAgentNode *node,
						const char *text)
{
	AdkRun	   *run = wf->run;
	char	   *saved_path = run->node_path;
	AdkWfNodeMeta *meta;

	wf->in_flight--;
	/* the attempt is over: an error from here on is the node's own */
	meta = adk_node_meta(run, node->path);
	if (meta != NULL)
		meta->attempt_scope = false;
	if (run->out.end_invocation)
		return;
	if (adk_is_graph(node->agent) && node->paused)
	{
		wf->paused = true;
		/* an item of a parallel worker waits: the next held one may run */
		if (((WfActivation *) node->activation)->parent != NULL)
			release_held(wf, ((WfActivation *) node->activation)->parent);
		return;
	}
	if (node->interrupted)
	{
		/*
		 * Its agent paused for human input (hitl.c): the node waits on the
		 * interrupt -- no output, no successor -- until an answer resumes
		 * its agent in a lane again (resume()); the other branches go on
		 */
		WfActivation *act = (WfActivation *) node->activation;

		run->node_path = (char *) node->path;
		if (wf->caller == NULL && strcmp(wf->base, wf->agent->name) != 0)
			node_failed(wf, act, "its agent paused for human input, which a workflow below another agent does not take yet");
		else
		{
			wf->paused = true;
			/* an item of a parallel worker waits: the next held one may run */
			if (act->parent != NULL)
				release_held(wf, act->parent);
		}
		run->node_path = saved_path;
		return;
	}
	run->node_path = (char *) node->path;
	finish(wf, (WfActivation *) node->activation,
		   adk_is_graph(node->agent) ? node->output :
		   text ? adk_agent_output_value(node->agent, text) : NULL,
		   NULL, NULL);
	run->node_path = saved_path;
}

/*
 * Every branch that could run has: a node that asked for input pauses
 * the invocation (hitl.c), its row waiting on the request's id.  A nested
 * workflow instead hands its caller's node its output, or that it waits.
 */
void
adk_workflow_end(AdkWorkflow *wf)
{
	if (wf->run->out.end_invocation)
		return;
	if (wf->caller != NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(wf->caller));

		wf->caller->paused = wf->paused;
		wf->caller->output = wf->last_output ?
			DatumGetJsonbPCopy(JsonbPGetDatum(wf->last_output)) : NULL;
		MemoryContextSwitchTo(old);
	}
	else if (wf->paused)
		adk_hitl_stop(wf->run);
}

/*
 * The nodes and each one's predecessors, read once as the owner.
 */
static void
load_plan(Workflow *wf)
{
	AdkOwnerSave save;
	Oid			type = TEXTOID;
	Datum		arg = CStringGetTextDatum(wf->agent->name);
	MemoryContext caller = wf->cxt;
	uint64		i;
	List	   *settings;
	ListCell   *lc;
	MemoryContext old;
	bool		mc_null;
	Datum		mc;

	adk_owner_spi_begin(&save);
	if (adk_spi_exec("SELECT graph_hash, max_concurrency FROM adk.workflows WHERE name = $1",
					 1, &type, &arg, NULL, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read workflow \"%s\"", wf->agent->name);
	wf->graph_hash = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	if (wf->graph_hash != NULL)
		wf->graph_hash = MemoryContextStrdup(caller, wf->graph_hash);
	mc = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &mc_null);
	wf->max_concurrency = mc_null ? 0 : DatumGetInt32(mc);
	if (adk_spi_exec("SELECT name, kind, call, predecessors, rerun_on_resume FROM adk._workflow_plan($1)",
					 1, &type, &arg, NULL, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read workflow \"%s\"", wf->agent->name);
	for (i = 0; i < SPI_processed; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		MemoryContext spi = MemoryContextSwitchTo(caller);
		WfNode	   *n = palloc0(sizeof(WfNode));
		bool		isnull;
		Datum		d;

		n->name = SPI_getvalue(row, desc, 1);
		n->kind = SPI_getvalue(row, desc, 2);
		n->call = SPI_getvalue(row, desc, 3);
		d = SPI_getbinval(row, desc, 4, &isnull);
		if (!isnull)
		{
			Datum	   *elems;
			int			nelems;
			int			k;

			deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false,
							  TYPALIGN_INT, &elems, NULL, &nelems);
			for (k = 0; k < nelems; k++)
				n->preds = lappend(n->preds, TextDatumGetCString(elems[k]));
		}
		n->rerun_on_resume = DatumGetBool(SPI_getbinval(row, desc, 5, &isnull));
		wf->nodes = lappend(wf->nodes, n);
		MemoryContextSwitchTo(spi);
	}
	/* a parallel worker's max_concurrency: its items at once */
	if (adk_spi_exec("SELECT name, max_concurrency FROM adk.workflow_nodes WHERE workflow OPERATOR(pg_catalog.=) $1 AND kind OPERATOR(pg_catalog.=) 'parallel_worker'",
					 1, &type, &arg, NULL, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read workflow \"%s\"", wf->agent->name);
	for (i = 0; i < SPI_processed; i++)
	{
		WfNode	   *n = find_node(wf, SPI_getvalue(SPI_tuptable->vals[i],
												   SPI_tuptable->tupdesc, 1));

		if (n != NULL)
			n->max_items = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i],
													   SPI_tuptable->tupdesc, 2, &mc_null));
	}
	adk_owner_spi_end(&save);
	/* the settings live as long as the scheduler's state (wf->cxt) */
	old = MemoryContextSwitchTo(caller);
	settings = adk_wfnode_load(wf->agent->name);
	MemoryContextSwitchTo(old);
	foreach(lc, wf->nodes)
	{
		WfNode	   *n = (WfNode *) lfirst(lc);

		n->settings = adk_wfnode_find(settings, n->name);
	}
}

static WfNode *
find_node(Workflow *wf, const char *name)
{
	ListCell   *lc;

	foreach(lc, wf->nodes)
	{
		if (strcmp(((WfNode *) lfirst(lc))->name, name) == 0)
			return (WfNode *) lfirst(lc);
	}
	return NULL;
}

/*
 * ADK-Go's findSuccessors and appendSuccessor for a completed activation
 * of from (START or a node) that gave output and routes on branch: the
 * edges that fire (adk._workflow_successors), a join only once all its
 * predecessors completed, then the sub-branches of a fan-out.  Appended
 * to the ready activations.
 */
static void
schedule_successors(Workflow *wf, const char *from, Datum routes,
					bool has_routes, Jsonb *output, const char *branch)
{
	AdkOwnerSave save;
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTARRAYOID};
	Datum		args[3];
	char		nulls[3] = {' ', ' ', has_routes ? ' ' : 'n'};
	MemoryContext caller = CurrentMemoryContext;
	List	   *targets = NIL;
	List	   *out = NIL;
	ListCell   *lc;
	uint64		i;

	args[0] = CStringGetTextDatum(wf->agent->name);
	args[1] = CStringGetTextDatum(from);
	args[2] = routes;
	adk_owner_spi_begin(&save);
	if (adk_spi_exec("SELECT to_node FROM adk._workflow_successors($1, $2, $3)",
					 3, types, args, nulls, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not find the successors of node \"%s\"", from);
	for (i = 0; i < SPI_processed; i++)
	{
		char	   *name = SPI_getvalue(SPI_tuptable->vals[i],
										SPI_tuptable->tupdesc, 1);
		MemoryContext spi = MemoryContextSwitchTo(caller);

		targets = lappend(targets, pstrdup(name));
		MemoryContextSwitchTo(spi);
	}
	adk_owner_spi_end(&save);

	foreach(lc, targets)
	{
		WfNode	   *n = find_node(wf, (char *) lfirst(lc));
		WfActivation *act;

		if (n == NULL)
			elog(ERROR, "node \"%s\" of workflow \"%s\" is gone",
				 (char *) lfirst(lc), wf->agent->name);
		act = palloc0(sizeof(WfActivation));
		act->node = n;
		act->triggered_by = pstrdup(from);
		act->branch = branch ? pstrdup(branch) : NULL;
		act->input = output;
		if (strcmp(n->kind, "join") == 0)
		{
			/* every predecessor completed: their outputs as a map */
			JsonWriter	w;
			List	   *branches = NIL;
			ListCell   *p;
			bool		all = true;

			jw_init(&w);
			jw_begin_object(&w);
			foreach(p, n->preds)
			{
				WfNode	   *pred = find_node(wf, (char *) lfirst(p));

				if (pred == NULL || !pred->completed)
				{
					all = false;
					break;
				}
				jw_key(&w, pred->name);
				if (pred->output)
					jw_jsonb(&w, pred->output);
				else
					jw_null(&w);
				branches = lappend(branches, pred->branch ? pred->branch : "");
			}
			jw_end_object(&w);
			if (!all)
				continue;
			act->input = jw_finish(&w);
			act->branch = common_branch(branches);
		}
		out = lappend(out, act);
	}

	/* a fan-out: each successor but a join on a sub-branch of its own */
	if (list_length(out) > 1)
	{
		foreach(lc, out)
		{
			WfActivation *act = (WfActivation *) lfirst(lc);

			if (strcmp(act->node->kind, "join") == 0)
				continue;
			act->branch = branch ? psprintf("%s.%s@1", branch, act->node->name) :
				psprintf("%s@1", act->node->name);
		}
	}
	wf->ready = list_concat(wf->ready, out);
}

/*
 * The longest common dot-separated prefix of branches ("" for the
 * root's); NULL when it is the root's.
 */
static char *
common_branch(List *branches)
{
	char	   *prefix = NULL;
	ListCell   *lc;

	foreach(lc, branches)
	{
		char	   *b = (char *) lfirst(lc);
		int			k = 0;
		int			cut = 0;

		if (prefix == NULL)
		{
			prefix = pstrdup(b);
			continue;
		}
		/* keep the whole segments both share */
		while (prefix[k] != '\0' && prefix[k] == b[k])
		{
			k++;
			if ((prefix[k] == '\0' || prefix[k] == '.') && (b[k] == '\0' || b[k] == '.'))
				cut = k;
		}
		prefix[cut] = '\0';
	}
	return (prefix == NULL || prefix[0] == '\0') ? NULL : prefix;
}

/*
 * One activation: its row, then the node, by its kind -- a join, a tool
 * or a function runs now; an agent is handed back to run in its lane.
 */
static AdkWfStep
run_activation(Workflow *wf, WfActivation *act, AdkWfAgentNode **agent_node)
{
	AdkRun	   *run = wf->run;
	WfNode	   *n = act->node;
	Jsonb	   *input = act->input;
	char	   *path;
	char	   *error;

	n->completed = false;
	if (act->run_no > 0)
		act->number = act->run_no;
	else
		act->number = ++n->runs;
	path = psprintf("%s/%s@%d", wf->base, n->name, act->number);
	act->path = MemoryContextStrdup(wf->cxt, path);
	/* a resumed activation's row is there, locked by the resume */
	adk_node_start_workflow(run, path, wf->agent->name, act->input,
							act->triggered_by, act->branch, wf->graph_hash);
	run->node_path = path;		/* its events' node_info (emit.c) */
	set_node_meta(wf, act, path);
	if (!adk_wfnode_input(n->settings, strcmp(n->kind, "join") == 0,
						  &act->input, &error))
	{
		node_failed(wf, act, error);
		return WF_RAN;
	}
	if (act->input != input)
	{
		/* a parsed input outlives the step (an agent node's lane, a retry) */
		MemoryContext old = MemoryContextSwitchTo(wf->cxt);

		act->input = DatumGetJsonbPCopy(JsonbPGetDatum(act->input));
		MemoryContextSwitchTo(old);
	}
	if (strcmp(n->kind, "join") == 0)
		finish(wf, act, act->input, NULL, NULL);
	else if (strcmp(n->kind, "agent") == 0 || strcmp(n->kind, "workflow") == 0)
	{
		*agent_node = hand_agent(wf, act, path);
		return WF_AGENT;
	}
	else if (strcmp(n->kind, "parallel_worker") == 0)
		run_parallel(wf, act);
	else
		run_attempt(wf, act, path);
	return WF_RAN;
}

/*
 * A parallel worker (ADK-Go's ParallelWorker): its input must be a list;
 * its worker node runs once per item -- each item an activation of that
 * node, with the item as its input, on the sub-branch
 * "<worker>@<index + 1>" below the node's (ADK-Go's), ready as any (agent
 * items in lanes, their model calls in flight together), at most
 * max_concurrency at once (0: all) -- and once every item has completed,
 * the worker's output is their outputs in item order.  An item may ask
 * for human input (an agent item: its agent pauses, as an agent node's
 * does): it waits, the others go on (the next held one takes its place),
 * and the node completes once the answered item has too.  An
 * empty list is an empty output at once; an item that fails fails the
 * node and ends the invocation (the items in flight stop, and the items
 * waiting are cancelled: ADK-Go's fail-fast).
 */
static void
run_parallel(Workflow *wf, WfActivation *act)
{
	WfNode	   *worker = find_node(wf, act->node->call);
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	MemoryContext old;
	AdkWfNodeSettings *items;
	int			k = 0;

	if (worker == NULL)
		elog(ERROR, "worker \"%s\" of node \"%s\" is gone", act->node->call,
			 act->node->name);
	if (act->input == NULL || !JB_ROOT_IS_ARRAY(act->input) || JB_ROOT_IS_SCALAR(act->input))
	{
		node_failed(wf, act, "its input is not a list");
		return;
	}
	act->items = JB_ROOT_COUNT(act->input);
	if (act->items == 0)
	{
		JsonWriter	w;

		jw_init(&w);
		jw_begin_array(&w);
		jw_end_array(&w);
		finish(wf, act, jw_finish(&w), NULL, NULL);
		return;
	}
	old = MemoryContextSwitchTo(wf->cxt);
	act->remaining = act->items;
	act->outputs = palloc0(sizeof(Jsonb *) * act->items);
	/* its timeout bounds it whole, its items included */
	if (act->node->settings != NULL && act->node->settings->timeout_ms > 0)
	{
		act->deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													act->node->settings->timeout_ms);
		wf->deadlines = lappend(wf->deadlines, act);
	}
	/* each item retried on its own by the parallel worker's retry */
	items = adk_wfnode_item_settings(worker->settings, act->node->settings);
	it = JsonbIteratorInit(&act->input->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		WfActivation *item;

		if (tok != WJB_ELEM)
			continue;
		item = palloc0(sizeof(WfActivation));
		item->node = worker;
		item->input = adk_jsonb_value_to_jsonb(&v);
		item->triggered_by = pstrdup(act->node->name);
		/* ADK-Go's per-item sub-branch "<branch>.<worker>@<index + 1>" */
		item->branch = act->branch ?
			psprintf("%s.%s@%d", act->branch, worker->name, k + 1) :
			psprintf("%s@%d", worker->name, k + 1);
		item->parent = act;
		item->index = k++;
		item->settings = items;
		if (act->node->max_items > 0 && k > act->node->max_items)
			act->held = lappend(act->held, item);
		else
			wf->ready = lappend(wf->ready, item);
	}
	MemoryContextSwitchTo(old);
}

/*
 * An item of a parallel worker completed with output: noted in its
 * place; the next held item becomes ready; once none is left, the
 * worker completes with the outputs in item order.
 */
static void
item_done(Workflow *wf, WfActivation *item, Jsonb *output)
{
	WfActivation *pw = item->parent;
	AdkRun	   *run = wf->run;
	char	   *saved_path = run->node_path;
	MemoryContext old = MemoryContextSwitchTo(wf->cxt);
	JsonWriter	w;
	int			k;

	pw->outputs[item->index] = output;
	pw->remaining--;
	MemoryContextSwitchTo(old);
	release_held(wf, pw);
	if (pw->remaining > 0)
		return;
	wf->deadlines = list_delete_ptr(wf->deadlines, pw);
	jw_init(&w);
	jw_begin_array(&w);
	for (k = 0; k < pw->items; k++)
	{
		if (pw->outputs[k])
			jw_jsonb(&w, pw->outputs[k]);
		else
			jw_null(&w);
	}
	jw_end_array(&w);
	run->node_path = pw->path;
	/* a resumed worker's event names what triggered it, as a fresh one's */
	set_node_meta(wf, pw, pw->path);
	finish(wf, pw, jw_finish(&w), NULL, NULL);
	run->node_path = saved_path;
}

/*
 * An item of parallel worker pw completed or waits for human input: the
 * next item beyond its max_concurrency, if any, becomes ready.
 */
static void
release_held(Workflow *wf, WfActivation *pw)
{
	MemoryContext old;

	if (pw->held == NIL)
		return;
	old = MemoryContextSwitchTo(wf->cxt);
	wf->ready = lappend(wf->ready, linitial(pw->held));
	pw->held = list_delete_first(pw->held);
	MemoryContextSwitchTo(old);
}

/*
 * branch without its last segment when that segment is "<node>@<k>" --
 * the sub-branch a fan-out (k = 1) or a parallel worker (k: the item's
 * place from 1) made for node --, else branch as it is; NULL for the
 * root's.
 */
static char *
node_branch_parent(const char *branch, const char *node)
{
	const char *dot;

	if (branch == NULL)
		return NULL;
	if (node_branch_index(branch, node) < 0)
		return pstrdup(branch);
	dot = strrchr(branch, '.');
	return dot ? pnstrdup(branch, dot - branch) : NULL;
}

/*
 * k - 1 when branch's last segment is "<node>@<k>" (k from 1), else -1.
 */
static int
node_branch_index(const char *branch, const char *node)
{
	const char *seg;
	size_t		len = strlen(node);
	int			k = 0;

	if (branch == NULL)
		return -1;
	seg = strrchr(branch, '.') ? strrchr(branch, '.') + 1 : branch;
	if (strncmp(seg, node, len) != 0 || seg[len] != '@' || seg[len + 1] == '\0')
		return -1;
	for (seg += len + 1; *seg != '\0'; seg++)
	{
		if (*seg < '0' || *seg > '9' || k > 100000000)
			return -1;
		k = k * 10 + (*seg - '0');
	}
	return k > 0 ? k - 1 : -1;
}

/*
 * An agent node, to run in a lane of its own (ADK-Go's AgentNode): the
 * agent as the node's mode makes it -- a NULL mode is single_turn, as
 * NewAgentNode makes it -- with the node's input as its user content: a
 * content (START's successors get the user's) as it is, a string as its
 * text, any other value as its JSON text.  A single_turn agent runs on
 * the node's branch "<node>@<n>" below its activation's branch, if any
 * (so below a fan-out's "<node>@1" it is "<node>@1.<node>@<n>": the lane
 * is always one segment below the activation, which is how a resume tells
 * the activation's branch from its lane's -- activation_branch), its
 * prompt its input and then its own events; a chat agent (only directly
 * after START) on its activation's branch, with the session.
 * In the workflow's memory: it outlives this step.
 */
static AdkWfAgentNode *
hand_agent(Workflow *wf, WfActivation *act, const char *path)
{
	AdkAgent   *agent = adk_find_agent(wf->run, act->node->call);
	MemoryContext old;
	AdkWfAgentNode *an;
	char	   *at;
	Jsonb	   *content;
	JsonbValue	v;

	if (agent == NULL)
		elog(ERROR, "agent \"%s\" of workflow \"%s\" is not loaded",
			 act->node->call, wf->agent->name);
	if (adk_is_graph(agent))
	{
		/* a nested workflow: on its activation's branch, with its input */
		old = MemoryContextSwitchTo(wf->cxt);
		an = palloc0(sizeof(AdkWfAgentNode));
		an->agent = agent;
		an->path = pstrdup(path);
		an->branch = act->branch ? pstrdup(act->branch) : NULL;
		an->content = act->input;
		an->activation = act;
		MemoryContextSwitchTo(old);
		arm_attempt(wf, act, an);
		return an;
	}
	if (act->input == NULL)
		content = adk_text_content("null");
	else if (JsonbExtractScalar(&act->input->root, &v) && v.type == jbvString)
		content = adk_text_content(pnstrdup(v.val.string.val, v.val.string.len));
	else if (adk_jsonb_is_object(&act->input->root) &&
			 adk_jsonb_get(&act->input->root, "parts") != NULL)
		content = act->input;
	else
		content = adk_text_content(JsonbToCString(NULL, &act->input->root,
												  VARSIZE(act->input)));
	old = MemoryContextSwitchTo(wf->cxt);
	an = palloc0(sizeof(AdkWfAgentNode));
	an->agent = agent;
	an->path = pstrdup(path);
	an->chat = agent->mode != NULL && strcmp(agent->mode, "chat") == 0;
	at = psprintf("%s@%d", act->node->name, act->number);
	if (an->chat)
		an->branch = act->branch ? pstrdup(act->branch) : NULL;
	else
		an->branch = act->branch ? psprintf("%s.%s", act->branch, at) : at;
	an->content = DatumGetJsonbPCopy(JsonbPGetDatum(content));
	an->activation = act;
	/* its answer completes it once its settings have passed it (finish) */
	an->defer_output = act->node->settings != NULL &&
		(act->node->settings->output_schema != NULL ||
		 act->node->settings->wait_for_output);
	MemoryContextSwitchTo(old);
	arm_attempt(wf, act, an);
	return an;
}

/*
 * An attempt of an agent or nested workflow node begins in its lane
 * (docs/workflows.md "Node settings"): its timeout is a deadline on the
 * lane (agents.c stops the lane when it passes); with a retry left, an
 * error stored below the node ends this attempt instead of the invocation
 * (emit.c: its node meta is the attempt's scope).
 */
static void
arm_attempt(Workflow *wf, WfActivation *act, AdkWfAgentNode *an)
{
	AdkWfNodeSettings *s = act_settings(act);
	AdkWfNodeMeta *meta = adk_node_meta(wf->run, an->path);

	if (s != NULL && s->timeout_ms > 0)
	{
		an->timeout_ms = s->timeout_ms;
		an->deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
												   s->timeout_ms);
	}
	if (meta != NULL)
	{
		meta->attempt_scope = adk_wfnode_retries_left(s, act->failed + 1);
		meta->attempt_error = NULL;
	}
	wf->in_flight++;
}

/*
 * The node at path is being run: its events carry the node that
 * triggered it and the graph hash in custom_metadata (emit.c), from which
 * adk_rebuild_run_states derives its row's triggered_by and graph_hash --
 * an agent node's own events too, written in its lane while other nodes
 * run, so each node of the run is noted by its path.
 */
static void
set_node_meta(Workflow *wf, WfActivation *act, const char *path)
{
	AdkRun	   *run = wf->run;
	AdkWfNodeMeta *meta = adk_node_meta(run, path);
	MemoryContext old = MemoryContextSwitchTo(run->run_cxt);

	if (meta == NULL)
	{
		meta = palloc0(sizeof(AdkWfNodeMeta));
		meta->path = pstrdup(path);
		run->wf_nodes = lappend(run->wf_nodes, meta);
	}
	meta->triggered_by = act->triggered_by ? pstrdup(act->triggered_by) : NULL;
	meta->graph_hash = wf->graph_hash ? pstrdup(wf->graph_hash) : NULL;
	MemoryContextSwitchTo(old);
}

/*
 * A tool node: the tool of adk.tools its row names, called as the
 * runner calls a model's tool call (tools.c: the caller's privileges, a
 * subtransaction, adk.tool_timeout) with the node's input as its
 * arguments; the response -- the tool's object, or {"result": value} --
 * is the node's output.  An input that is not an object, or a call that
 * fails (each attempt its retry makes, under its timeout), is the node's
 * failure.
 */
static void
run_tool(Workflow *wf, WfActivation *act)
{
	AdkTool    *tool = adk_load_tool(act->node->call);
	ToolCallArgs call;
	char	   *error = NULL;
	long		wait_ms = 0;
	AdkWfAttempt a;

	if (tool == NULL)
		elog(ERROR, "tool \"%s\" of workflow \"%s\" is gone",
			 act->node->call, wf->agent->name);
	if (act->input == NULL || !adk_jsonb_is_object(&act->input->root))
	{
		node_failed(wf, act, "its input is not an object of the tool's arguments");
		return;
	}
	call.tool = tool;
	call.input = act->input;
	call.response = NULL;
	a = adk_wfnode_attempt(act_settings(act), &act->failed, attempt_tool,
						   &call, &error, &wait_ms);
	if (!attempted(wf, act, a, wait_ms, error))
		return;
	finish(wf, act, call.response, NULL, NULL);
}

/* One attempt of a tool node's call (tools.c: its own subtransaction) */
static bool
attempt_tool(void *arg, char **error)
{
	ToolCallArgs *call = (ToolCallArgs *) arg;

	call->response = adk_tool_call(call->tool, call->input, error);
	return call->response != NULL;
}

/*
 * A function node: the function with ctx and its input, then its result
 * object -- "output", "route" (a value or a list), "state_delta" -- as
 * its event.
 */
static void
run_function(Workflow *wf, WfActivation *act, const char *path)
{
	AdkRun	   *run = wf->run;
	JsonWriter	w;
	FnCall		call;
	char	   *error = NULL;
	long		wait_ms = 0;
	AdkWfAttempt a;
	JsonbValue *routes = NULL;
	JsonbValue *delta = NULL;
	JsonbValue *output = NULL;
	JsonbValue *req;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	jw_init(&w);
	jw_begin_object(&w);
	jw_key(&w, "app_name");
	jw_string(&w, run->app);
	jw_key(&w, "user_id");
	jw_string(&w, run->user);
	jw_key(&w, "session_id");
	jw_string(&w, run->session);
	jw_key(&w, "invocation_id");
	jw_string(&w, run->invocation_id);
	jw_key(&w, "workflow");
	jw_string(&w, wf->agent->name);
	jw_key(&w, "node");
	jw_string(&w, act->node->name);
	jw_key(&w, "path");
	jw_string(&w, path);
	jw_key(&w, "triggered_by");
	jw_string(&w, act->triggered_by);
	jw_key(&w, "branch");
	if (act->branch)
		jw_string(&w, act->branch);
	else
		jw_null(&w);
	/* a re-run after human input: the answers so far (ADK-Go ResumedInput) */
	jw_key(&w, "resume_inputs");
	if (act->answers)
		jw_jsonb(&w, act->answers);
	else
	{
		jw_begin_object(&w);
		jw_end_object(&w);
	}
	jw_end_object(&w);

	call.call = act->node->call;
	call.ctx = jw_finish(&w);
	call.input = act->input;
	call.result = NULL;
	a = adk_wfnode_attempt(act_settings(act), &act->failed,
						   attempt_function, &call, &error, &wait_ms);
	if (!attempted(wf, act, a, wait_ms, error))
		return;
	if (call.result == NULL)
	{
		finish(wf, act, NULL, NULL, NULL);
		return;
	}
	if (!adk_jsonb_is_object(&call.result->root))
	{
		node_failed(wf, act, "it returned a value that is not an object with \"output\", \"route\", \"state_delta\" or \"request_input\"");
		return;
	}
	it = JsonbIteratorInit(&call.result->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		char	   *key;

		if (tok != WJB_KEY)
			continue;
		key = pnstrdup(v.val.string.val, v.val.string.len);
		if (strcmp(key, "output") != 0 && strcmp(key, "route") != 0 &&
			strcmp(key, "state_delta") != 0 && strcmp(key, "request_input") != 0)
		{
			node_failed(wf, act,
						psprintf("its result has the unknown key \"%s\" (the keys are output, route, state_delta and request_input)", key));
			return;
		}
	}
	req = adk_jsonb_get(&call.result->root, "request_input");
	output = adk_jsonb_get(&call.result->root, "output");
	routes = adk_jsonb_get(&call.result->root, "route");
	delta = adk_jsonb_get(&call.result->root, "state_delta");
	if (routes != NULL && routes->type == jbvNull)
		routes = NULL;
	if (delta != NULL && delta->type == jbvNull)
		delta = NULL;
	if (delta != NULL && !(delta->type == jbvBinary &&
						   adk_jsonb_is_object(delta->val.binary.data)))
	{
		node_failed(wf, act, "its \"state_delta\" is not an object");
		return;
	}
	if (routes != NULL && routes->type == jbvBinary &&
		!JsonContainerIsArray(routes->val.binary.data))
	{
		node_failed(wf, act, "its \"route\" is not a value or a list of values");
		return;
	}

	/*
	 * A request for input with a result that fails the node: the failure
	 * wins, nothing is asked (ADK-Go's handleCompletion: a node that
	 * recorded a request and then failed is failed, not waiting)
	 */
	if (req != NULL && req->type != jbvNull)
	{
		request_input(wf, act, req);
		return;
	}
	finish(wf, act, output ? adk_jsonb_value_to_jsonb(output) : NULL,
		   routes, delta);
}

/*
 * One attempt of a function node's call, in a subtransaction of its own.
 */
static bool
attempt_function(void *arg, char **error)
{
	((FnCall *) arg)->result = NULL;
	return adk_run_guarded(call_function, arg, error);
}

/*
 * The call itself, as the caller: "SELECT schema.fn($1, $2)".
 */
static void
call_function(void *arg)
{
	FnCall	   *call = (FnCall *) arg;
	Oid			types[2] = {JSONBOID, JSONBOID};
	Datum		args[2];
	char		nulls[2] = {' ', ' '};
	MemoryContext caller = CurrentMemoryContext;
	bool		isnull;
	Datum		d;

	args[0] = JsonbPGetDatum(call->ctx);
	args[1] = call->input ? JsonbPGetDatum(call->input) : (Datum) 0;
	if (call->input == NULL)
		nulls[1] = 'n';
	SPI_connect();
	if (SPI_execute_with_args(psprintf("SELECT %s($1, $2)", call->call),
							  2, types, args, nulls, false, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "function node call returned no row");
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	MemoryContextSwitchTo(caller);
	call->result = isnull ? NULL : DatumGetJsonbPCopy(d);
	SPI_finish();
}

/*
 * The activation completed: its output checked (output_schema), its one
 * event (output, routes, state delta; node_info.output_for completes its
 * row), then its successors.  With wait_for_output, an activation without
 * output stores its event but does not complete: its row stays running,
 * its successors do not run.
 */
static void
finish(Workflow *wf, WfActivation *act, Jsonb *output, JsonbValue *routes,
	   JsonbValue *state_delta)
{
	AdkRun	   *run = wf->run;
	JsonWriter	w;
	Datum		route_array = (Datum) 0;
	WfNode	   *n = act->node;
	char	   *error;
	bool		waits;
	MemoryContext old;

	if (!adk_wfnode_output(n->settings, &output, &error))
	{
		node_failed(wf, act, error);
		return;
	}
	waits = adk_wfnode_waits(n->settings, output);

	/*
	 * A node that ran across steps (an agent, a nested workflow, a
	 * parallel worker) stored no event of its own until now: its row is
	 * written again with its input should a refresh of the invocation's
	 * rows have dropped it meanwhile (nothing happens when it is there)
	 */
	if (act->path != NULL && !run->retried &&
		(strcmp(n->kind, "agent") == 0 || strcmp(n->kind, "workflow") == 0 ||
		 strcmp(n->kind, "parallel_worker") == 0))
		adk_node_start_workflow(run, act->path, wf->agent->name, act->input,
								act->triggered_by, act->branch,
								wf->graph_hash);
	adk_event_start_node(&w, run, wf->agent->name, act->branch, !waits);
	if (output != NULL)
	{
		jw_key(&w, "output");
		jw_jsonb(&w, output);
	}
	if (routes != NULL)
	{
		/* each value as its text (ADK-Go compares Int and Bool routes so) */
		List	   *texts = NIL;
		Datum	   *elems;
		int			k = 0;
		ListCell   *lc;

		if (routes->type == jbvBinary)
		{
			JsonbIterator *it = JsonbIteratorInit(routes->val.binary.data);
			JsonbValue	v;
			JsonbIteratorToken tok;

			while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
			{
				if (tok != WJB_ELEM)
					continue;
				texts = lappend(texts, v.type == jbvString ?
								pnstrdup(v.val.string.val, v.val.string.len) :
								JsonbToCString(NULL, &adk_jsonb_value_to_jsonb(&v)->root, 0));
			}
		}
		else
			texts = list_make1(routes->type == jbvString ?
							   pnstrdup(routes->val.string.val, routes->val.string.len) :
							   JsonbToCString(NULL, &adk_jsonb_value_to_jsonb(routes)->root, 0));
		jw_key(&w, "routes");
		jw_begin_array(&w);
		elems = palloc(sizeof(Datum) * (list_length(texts) + 1));
		foreach(lc, texts)
		{
			jw_string(&w, (char *) lfirst(lc));
			elems[k++] = CStringGetTextDatum((char *) lfirst(lc));
		}
		jw_end_array(&w);
		route_array = PointerGetDatum(construct_array(elems, k, TEXTOID, -1,
													  false, TYPALIGN_INT));
	}
	if (state_delta != NULL)
	{
		jw_key(&w, "actions");
		jw_begin_object(&w);
		jw_key(&w, "state_delta");
		jw_value(&w, state_delta);
		jw_end_object(&w);
	}
	jw_end_object(&w);
	adk_emit(run, jw_finish(&w));
	if (run->out.end_invocation || waits)
		return;					/* a plugin refused the event; or it waits */
	old = MemoryContextSwitchTo(wf->cxt);
	n->completed = true;
	n->output = output ? DatumGetJsonbPCopy(JsonbPGetDatum(output)) : NULL;
	n->branch = act->branch;
	if (n->output != NULL)
		wf->last_output = n->output;
	MemoryContextSwitchTo(old);
	if (act->parent != NULL)
	{
		/* an item of a parallel worker: no edges of its own */
		item_done(wf, act, n->output);
		return;
	}
	old = MemoryContextSwitchTo(wf->cxt);
	schedule_successors(wf, n->name, route_array, routes != NULL, n->output,
						act->branch);
	MemoryContextSwitchTo(old);
}

/*
 * The node failed: a stored error event, which ends the invocation (the
 * events before it stay).
 */
static void
node_failed(Workflow *wf, WfActivation *act, const char *message)
{
	adk_emit_error(wf->run, wf->agent->name, act->branch, "WORKFLOW_NODE_FAILED",
				   psprintf("node \"%s\" of workflow \"%s\" failed: %s",
							act->node->name, wf->agent->name, message));
}

/*
 * The invocation failed (docs/workflows.md "Statuses"): a node of the
 * workflow, or one below it, stored an error event.  Every other node
 * activation of it still running stops, each with an event of its own on
 * its path, so that its row and the one adk_rebuild_run_states derives
 * say the same: a nested workflow node the failure is below and the
 * parallel worker of a failed item fail too (WORKFLOW_NODE_FAILED), the
 * others are cancelled (CANCELLED: ADK-Go cancels the nodes in flight
 * when one fails).  agents.c calls this for the outermost workflow frame
 * as it abandons it.
 */
void
adk_workflow_failed(AdkWorkflow *wf)
{
	AdkRun	   *run = wf->run;
	AdkOwnerSave save;
	Oid			types[5] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		args[5];
	char	   *saved_path = run->node_path;
	List	   *stops = NIL;
	ListCell   *lc;
	uint64		i;

	args[0] = CStringGetTextDatum(run->app);
	args[1] = CStringGetTextDatum(run->user);
	args[2] = CStringGetTextDatum(run->session);
	args[3] = CStringGetTextDatum(run->invocation_id);
	args[4] = CStringGetTextDatum(wf->base);
	adk_owner_spi_begin(&save);
	if (adk_spi_exec("SELECT * FROM adk._workflow_stopped($1, $2, $3, $4, $5)",
					 5, types, args, NULL, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the nodes the failure of workflow \"%s\" stops",
			 wf->agent->name);
	for (i = 0; i < SPI_processed; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		MemoryContext spi = MemoryContextSwitchTo(run->run_cxt);
		char	  **stop = palloc(sizeof(char *) * 5);
		int			k;

		for (k = 0; k < 5; k++)
			stop[k] = SPI_getvalue(row, desc, k + 1);
		stops = lappend(stops, stop);
		MemoryContextSwitchTo(spi);
	}
	adk_owner_spi_end(&save);
	foreach(lc, stops)
	{
		char	  **stop = (char **) lfirst(lc);
		bool		fails = stop[4] != NULL && strcmp(stop[4], "t") == 0;
		char	   *node = strrchr(stop[0], '/') + 1;
		char	   *flow = pnstrdup(stop[0], node - 1 - stop[0]);
		AdkWfNodeMeta *meta = adk_node_meta(run, stop[0]);

		/* "<...>/<workflow>/<node>@<n>": its workflow writes the event */
		if (strrchr(flow, '/') != NULL)
			flow = strrchr(flow, '/') + 1;
		/* its event's node_info path and custom_metadata (emit.c) */
		if (meta == NULL)
		{
			MemoryContext old = MemoryContextSwitchTo(run->run_cxt);

			meta = palloc0(sizeof(AdkWfNodeMeta));
			meta->path = stop[0];
			run->wf_nodes = lappend(run->wf_nodes, meta);
			MemoryContextSwitchTo(old);
		}
		meta->triggered_by = stop[2];
		meta->graph_hash = stop[3];
		run->node_path = stop[0];
		adk_emit_error(run, flow, stop[1],
					   fails ? "WORKFLOW_NODE_FAILED" : "CANCELLED",
					   psprintf(fails ? "node \"%.*s\" of workflow \"%s\" failed: a node it ran failed" :
								"node \"%.*s\" of workflow \"%s\" was cancelled: another node failed",
								(int) strcspn(node, "@"), node, flow));
	}
	run->node_path = saved_path;
}

/*
 * A function node asked for human input (ADK-Go NewRequestInputEvent):
 * its event holds ADK's adk_request_input call -- id the interrupt id
 * (the request's "interrupt_id", else a new one), args interruptId,
 * message, payload, responseSchema -- in long_running_tool_ids, and the
 * graph hash the run pauses under in custom_metadata.adk_graph_hash (as
 * every event of a node has it: set_node_meta).  The node waits (its row
 * lists the id); its successors do not run; the other branches go on, and
 * the invocation pauses once none can run.  An item of a parallel worker
 * waits the same way: its worker does not complete until it has.
 */
static void
request_input(Workflow *wf, WfActivation *act, JsonbValue *req)
{
	AdkRun	   *run = wf->run;
	JsonbContainer *r;
	JsonbValue *v;
	JsonWriter	w;
	char	   *id;

	if (req->type != jbvBinary || !adk_jsonb_is_object(req->val.binary.data))
	{
		node_failed(wf, act, "its \"request_input\" is not an object");
		return;
	}
	r = req->val.binary.data;
	if (wf->caller == NULL && strcmp(wf->base, wf->agent->name) != 0)
	{
		node_failed(wf, act, "it requested human input, which a workflow below another agent does not take yet");
		return;
	}
	v = adk_jsonb_get(r, "interrupt_id");
	if (v != NULL && v->type == jbvString && v->val.string.len > 0)
		id = pnstrdup(v->val.string.val, v->val.string.len);
	else if (v != NULL && v->type != jbvNull)
	{
		node_failed(wf, act, "its \"request_input\" has an \"interrupt_id\" that is not a string");
		return;
	}
	else
		id = adk_new_id("adk-");

	adk_event_start(&w, run, wf->agent->name, act->branch);
	jw_key(&w, "content");
	jw_begin_object(&w);
	jw_key(&w, "role");
	jw_string(&w, "model");
	jw_key(&w, "parts");
	jw_begin_array(&w);
	jw_begin_object(&w);
	jw_key(&w, "function_call");
	jw_begin_object(&w);
	jw_key(&w, "id");
	jw_string(&w, id);
	jw_key(&w, "name");
	jw_string(&w, "adk_request_input");
	jw_key(&w, "args");
	jw_begin_object(&w);
	jw_key(&w, "interruptId");
	jw_string(&w, id);
	jw_key(&w, "message");
	v = adk_jsonb_get(r, "message");
	if (v != NULL)
		jw_value(&w, v);
	else
		jw_string(&w, "");
	jw_key(&w, "payload");
	v = adk_jsonb_get(r, "payload");
	if (v != NULL)
		jw_value(&w, v);
	else
		jw_null(&w);
	v = adk_jsonb_get(r, "response_schema");
	if (v != NULL && v->type != jbvNull)
	{
		jw_key(&w, "responseSchema");
		jw_value(&w, v);
	}
	jw_end_object(&w);
	jw_end_object(&w);
	jw_end_object(&w);
	jw_end_array(&w);
	jw_end_object(&w);
	jw_key(&w, "long_running_tool_ids");
	jw_begin_array(&w);
	jw_string(&w, id);
	jw_end_array(&w);
	jw_end_object(&w);
	adk_emit(run, jw_finish(&w));
	wf->paused = true;
	/* should the run fail before it pauses, its rows end as its events say */
	adk_hitl_involve(run);
	/* an item of a parallel worker waits: the next held one may run */
	if (act->parent != NULL)
		release_held(wf, act->parent);
}

/*
 * The branch an agent node's activation ran on, from the branch of its
 * row -- its latest event's: its lane's, "<activation's>.<node>@<n>" or
 * "<node>@<n>" (hand_agent), a chat agent's the activation's own.  In the
 * workflow's memory.
 */
static char *
activation_branch(Workflow *wf, WfActivation *act, const char *lane)
{
	AdkAgent   *agent = adk_find_agent(wf->run, act->node->call);
	char	   *at = psprintf("%s@%d", act->node->name, act->run_no);
	size_t		ll;
	size_t		al = strlen(at);

	if (lane == NULL)
		return NULL;
	if (agent != NULL && agent->mode != NULL && strcmp(agent->mode, "chat") == 0)
		return pstrdup(lane);
	ll = strlen(lane);
	if (strcmp(lane, at) == 0)
		return NULL;
	if (ll > al + 1 && strcmp(lane + ll - al, at) == 0 && lane[ll - al - 1] == '.')
		return pnstrdup(lane, ll - al - 1);
	return pstrdup(lane);
}

/*
 * A resume after human input (hitl.c found the node whose row holds the
 * answered interrupt: resumed_path): the scheduler's state is read back
 * from the invocation's rows (adk._workflow_resume_rows) -- which node
 * activations completed, with what output, on what branch -- and each
 * activation the answer left running goes on: re-run with its original
 * input and the answers so far (rerun_on_resume), else completed with
 * the latest answer as its output.  Activations still waiting for other
 * answers stay as they are.  A graph changed since the run paused is
 * refused.  False: no resume of this workflow.
 */
static bool
resume(Workflow *wf, const char *resumed_path)
{
	AdkRun	   *run = wf->run;
	AdkOwnerSave save;
	Oid			types[5] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		args[5];
	MemoryContext caller = wf->cxt;
	List	   *resumed = NIL;
	List	   *workers = NIL;
	List	   *items = NIL;
	char	   *changed = NULL;
	WfActivation *nested = NULL;
	const char *rest;
	const char *slash;
	const char *at;
	ListCell   *lc;
	uint64		i;

	if (resumed_path == NULL || strncmp(resumed_path, wf->base, strlen(wf->base)) != 0 ||
		resumed_path[strlen(wf->base)] != '/')
		return false;

	/*
	 * The answer is for a node of a nested workflow ("<base>/<node>@<n>/
	 * ..."): that node goes on -- its workflow resumes there itself -- and
	 * is not done until it ends (its own row has no event yet: the path
	 * says which activation it is)
	 */
	rest = resumed_path + strlen(wf->base) + 1;
	if ((slash = strchr(rest, '/')) != NULL && (at = strchr(rest, '@')) != NULL && at < slash)
	{
		WfNode	   *n = find_node(wf, pnstrdup(rest, at - rest));

		if (n != NULL && strcmp(n->kind, "workflow") == 0)
		{
			MemoryContext old = MemoryContextSwitchTo(wf->cxt);

			nested = palloc0(sizeof(WfActivation));
			nested->node = n;
			nested->run_no = atoi(at + 1);
			nested->triggered_by = pstrdup("human input");
			nested->nested_resume = true;
			n->runs = Max(n->runs, nested->run_no);
			MemoryContextSwitchTo(old);
		}
	}
	args[0] = CStringGetTextDatum(run->app);
	args[1] = CStringGetTextDatum(run->user);
	args[2] = CStringGetTextDatum(run->session);
	args[3] = CStringGetTextDatum(run->invocation_id);
	args[4] = CStringGetTextDatum(wf->base);
	adk_owner_spi_begin(&save);
	if (adk_spi_exec("SELECT * FROM adk._workflow_resume_rows($1, $2, $3, $4, $5)",
					 5, types, args, NULL, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read where workflow \"%s\" stands", wf->agent->name);
	for (i = 0; i < SPI_processed; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		MemoryContext spi = MemoryContextSwitchTo(caller);
		char	   *name = SPI_getvalue(row, desc, 1);
		int			run_no = atoi(SPI_getvalue(row, desc, 2));
		char	   *status = SPI_getvalue(row, desc, 3);
		char	   *hash = SPI_getvalue(row, desc, 7);
		WfNode	   *n = find_node(wf, name);
		char	   *trigger = SPI_getvalue(row, desc, 10);
		WfNode	   *pw = trigger ? find_node(wf, trigger) : NULL;
		WfItemRow  *item = NULL;
		bool		isnull;
		Datum		d;

		if (n == NULL || (hash != NULL && (wf->graph_hash == NULL ||
											strcmp(hash, wf->graph_hash) != 0)))
		{
			if (changed == NULL)
				changed = n == NULL ? psprintf("node \"%s\" is no node of the workflow now", name) :
					psprintf("node \"%s\" paused under another graph hash", name);
			MemoryContextSwitchTo(spi);
			continue;
		}
		n->runs = Max(n->runs, run_no);
		n->branch = SPI_getvalue(row, desc, 6);
		d = SPI_getbinval(row, desc, 5, &isnull);
		n->output = isnull ? NULL : DatumGetJsonbPCopy(d);
		n->completed = strcmp(status, "completed") == 0;
		if (pw != NULL && strcmp(pw->kind, "parallel_worker") == 0 &&
			strcmp(pw->call, n->name) == 0)
		{
			/* an item of a parallel worker: its place is in its branch */
			item = palloc0(sizeof(WfItemRow));
			item->run_no = run_no;
			item->completed = n->completed;
			item->output = n->output;
			item->branch = n->completed ? n->branch :
				item_branch(wf, n, run_no, n->branch);
			item->triggered_by = trigger;
			items = lappend(items, item);
		}
		if (strcmp(n->kind, "parallel_worker") == 0 && strcmp(status, "running") == 0)
		{
			/* its items wait or were answered: its outputs are theirs */
			WfActivation *act = palloc0(sizeof(WfActivation));

			act->node = n;
			act->run_no = run_no;
			act->branch = n->branch;
			act->triggered_by = trigger;
			act->path = psprintf("%s/%s@%d", wf->base, n->name, run_no);
			d = SPI_getbinval(row, desc, 4, &isnull);
			act->input = isnull ? NULL : DatumGetJsonbPCopy(d);
			workers = lappend(workers, act);
		}
		else if (strcmp(n->kind, "workflow") == 0 && !n->completed)
		{
			/*
			 * A nested workflow that waits: the answer is for a node of it
			 * (below), or for another, and it still holds this workflow
			 */
			if (nested == NULL || nested->node != n || nested->run_no != run_no)
				wf->paused = true;
			else if (item != NULL)
			{
				/* an item: on its own branch, and its worker goes on */
				nested->branch = n->branch;
				item->act = nested;
			}
		}
		else if (strcmp(status, "waiting") == 0 && wf->caller != NULL &&
				 !(strcmp(n->kind, "agent") == 0 &&
				   adk_hitl_answered(run, psprintf("%s/%s@%d", wf->base, name, run_no))))
			wf->paused = true;	/* it still holds its caller's node */
		else if (strcmp(status, "running") == 0 ||
				 (strcmp(n->kind, "agent") == 0 && strcmp(status, "waiting") == 0 &&
				  adk_hitl_answered(run, psprintf("%s/%s@%d", wf->base, name, run_no))))
		{
			/*
			 * the answer left it running: it goes on (an agent node answered
			 * in part, too: its agent runs the confirmed calls and waits
			 * again, as hitl.c has a paused agent do)
			 */
			WfActivation *act = palloc0(sizeof(WfActivation));

			act->node = n;
			act->run_no = run_no;
			act->branch = n->branch;
			/* what started it (the answer only goes on with it) */
			act->triggered_by = SPI_getvalue(row, desc, 10);
			d = SPI_getbinval(row, desc, 4, &isnull);
			act->input = isnull ? NULL : DatumGetJsonbPCopy(d);
			d = SPI_getbinval(row, desc, 8, &isnull);
			act->answers = isnull ? NULL : DatumGetJsonbPCopy(d);
			d = SPI_getbinval(row, desc, 9, &isnull);
			/* a handoff's output: the latest answer */
			act->output = isnull ? NULL : DatumGetJsonbPCopy(d);
			if (item != NULL)
				item->act = act;
			else
				resumed = lappend(resumed, act);
		}
		MemoryContextSwitchTo(spi);
	}
	adk_owner_spi_end(&save);
	if (changed != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("workflow \"%s\" changed since the run paused",
						wf->agent->name),
				 errdetail("In the paused run, %s.", changed),
				 errhint("Restore the workflow and answer again, or cancel the paused run (adk_cancel with the invocation_id adk.pending_interrupts shows): a message then starts a new run.")));
	if (nested != NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(wf->cxt);

		/* its activation's branch: as its caller's (ADK-Go's WorkflowNode) */
		if (nested->branch == NULL)
			nested->branch = nested->node->branch;
		wf->ready = lappend(wf->ready, nested);
		MemoryContextSwitchTo(old);
	}
	resume_items(wf, workers, items, &resumed);
	foreach(lc, resumed)
	{
		WfActivation *act = (WfActivation *) lfirst(lc);

		if (strcmp(act->node->kind, "agent") == 0)
		{
			MemoryContext old = MemoryContextSwitchTo(wf->cxt);

			/*
			 * An agent node whose agent paused (hitl.c): its agent goes on
			 * in a lane again, on the node's branch, where its flow
			 * stopped -- the answers reach its model as the results of its
			 * calls, and its final answer is the node's output
			 * (docs/workflows.md "Human input")
			 */
			act->branch = activation_branch(wf, act, act->branch);
			act->triggered_by = act->triggered_by ? act->triggered_by :
				pstrdup("human input");
			wf->ready = lappend(wf->ready, act);
			MemoryContextSwitchTo(old);
		}
		else if (act->node->rerun_on_resume || act->nested_resume)
		{
			MemoryContext old = MemoryContextSwitchTo(wf->cxt);

			wf->ready = lappend(wf->ready, act);
			MemoryContextSwitchTo(old);
		}
		else
		{
			char	   *path = psprintf("%s/%s@%d", wf->base, act->node->name,
										act->run_no);

			/* handoff: the answer is its output (ADK-Go's default) */
			run->node_path = path;
			set_node_meta(wf, act, path);
			finish(wf, act, act->output, NULL, NULL);
		}
	}
	return true;
}

/*
 * On resume, the branch of an item's activation from the row of an item
 * that has not completed: an agent item whose agent paused has its
 * lane's, one segment below its item's "<worker>@<place>" (hand_agent);
 * any other item's row has its own.  In the workflow's memory.
 */
static char *
item_branch(Workflow *wf, WfNode *n, int run_no, const char *branch)
{
	WfActivation act;

	if (strcmp(n->kind, "agent") != 0)
		return branch ? MemoryContextStrdup(wf->cxt, branch) : NULL;
	memset(&act, 0, sizeof(act));
	act.node = n;
	act.run_no = run_no;
	return activation_branch(wf, &act, branch);
}

/*
 * On resume, the parallel workers whose items were waiting (workers: each
 * one's activation, its row running) get back where their items stand,
 * from the items' rows (items, each at the place its branch
 * "<worker>@<index + 1>" says, the latest activation's row at each place):
 * a completed item's output is kept in its place -- it does not run
 * again --; an answered item goes on with the answer as any node does
 * (added to *resumed; a nested workflow item is ready already; an agent
 * item's agent goes on in its lane), and once the last item has
 * completed its worker completes with the outputs in item order; an item
 * still waiting holds it.  An item with no row (none should be missing:
 * a run pauses only once every item has started) starts now.
 */
static void
resume_items(Workflow *wf, List *workers, List *items, List **resumed)
{
	MemoryContext old = MemoryContextSwitchTo(wf->cxt);
	ListCell   *lc;
	ListCell   *lc2;

	foreach(lc, workers)
	{
		WfActivation *pw = (WfActivation *) lfirst(lc);
		WfNode	   *worker = find_node(wf, pw->node->call);
		WfItemRow **at;
		int			k;

		if (worker == NULL || pw->input == NULL ||
			!JB_ROOT_IS_ARRAY(pw->input) || JB_ROOT_IS_SCALAR(pw->input))
			elog(ERROR, "parallel worker \"%s\" of workflow \"%s\" has no list input to resume",
				 pw->node->name, wf->agent->name);
		pw->items = JB_ROOT_COUNT(pw->input);
		pw->remaining = pw->items;
		pw->outputs = palloc0(sizeof(Jsonb *) * (pw->items + 1));
		at = palloc0(sizeof(WfItemRow *) * (pw->items + 1));
		foreach(lc2, items)
		{
			WfItemRow  *item = (WfItemRow *) lfirst(lc2);
			int			index = node_branch_index(item->branch, worker->name);
			char	   *above = node_branch_parent(item->branch, worker->name);

			if (strcmp(item->triggered_by, pw->node->name) != 0 || index < 0 ||
				index >= pw->items ||
				!((above == NULL && pw->branch == NULL) ||
				  (above != NULL && pw->branch != NULL && strcmp(above, pw->branch) == 0)))
				continue;
			if (at[index] == NULL || at[index]->run_no < item->run_no)
				at[index] = item;
		}
		for (k = 0; k < pw->items; k++)
		{
			if (at[k] == NULL)
			{
				WfActivation *item = palloc0(sizeof(WfActivation));
				JsonbValue *v = getIthJsonbValueFromContainer(&pw->input->root, k);

				item->node = worker;
				item->input = adk_jsonb_value_to_jsonb(v);
				item->triggered_by = pstrdup(pw->node->name);
				item->branch = pw->branch ?
					psprintf("%s.%s@%d", pw->branch, worker->name, k + 1) :
					psprintf("%s@%d", worker->name, k + 1);
				item->parent = pw;
				item->index = k;
				wf->ready = lappend(wf->ready, item);
			}
			else if (at[k]->completed)
			{
				pw->outputs[k] = at[k]->output;
				pw->remaining--;
			}
			else if (at[k]->act != NULL)
			{
				at[k]->act->parent = pw;
				at[k]->act->index = k;
			}
		}
	}
	/* the answered items (and any the answer resumed without a worker) */
	foreach(lc, items)
	{
		WfItemRow  *item = (WfItemRow *) lfirst(lc);

		if (item->act != NULL && !item->act->nested_resume)
			*resumed = lappend(*resumed, item->act);
	}
	MemoryContextSwitchTo(old);
}
