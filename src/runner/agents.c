/*-------------------------------------------------------------------------
 *
 * agents.c
 *	  The run's stepper: a stack of frames per lane, one unit of work per
 *	  step; LLM agents' rounds (flow.c) and the workflow agents:
 *	  sequential, parallel, loop.
 *
 * The tree is loaded and looked up in defs.c; which agent an input goes to
 * is route.c's.  Workflow agents: sequential runs its sub-agents in order on the same
 * branch; parallel gives each sub-agent a branch of its own
 * ("parent.child") and runs them at once (their model calls in flight
 * together, their events stored as each arrives); loop
 * repeats its sub-agents until one escalates (exit_loop) or max_iterations.
 * A graph workflow (workflow.c) is stepped one activation at a time, its
 * agent and nested workflow nodes each in a lane, as a parallel agent's.
 * All of it is driven one step at a time (adk_agent_step, at the end).
 *
 * IDENTIFICATION
 *	  src/runner/agents.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "common/json_writer.h"
#include "common/jsonb_util.h"
#include "runner/runner.h"
#include "runner/spans.h"

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
	F_NODE,						/* ... a single_turn sub-agent runs first */
	F_WORKFLOW,
	F_PARALLEL,					/* the lanes of a parallel agent */
	F_GRAPH,					/* a graph workflow: its steps, its agent
								 * nodes' lanes */
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
	List	   *stored_calls;	/* llm: a retry's calls whose model event
								 * is stored and whose responses are not:
								 * run them before any model call */
	AdkRound   *round;			/* llm: half a round in flight */
	char	   *scope;			/* a task agent's isolation scope */
	char	   *path;			/* its node path: its events' node_info */
	bool		resumed;		/* ... a task the user's message went to */
	List	   *lanes;			/* parallel, graph: List ** frame stacks */
	List	   *lane_nodes;		/* graph: each lane's AdkWfAgentNode * */
	AdkWorkflow *graph;			/* graph: the scheduler (workflow.c) ... */
	MemoryContext graph_cxt;	/* ... whose state goes with the frame */
	AdkWfAgentNode *caller;		/* graph: a nested workflow's node in the
								 * workflow that runs it */
	AdkSpanId	span;			/* its invoke_agent span (spans.c) */
} Frame;

static void step_start(AdkRun *run, Frame *f);
static void step_workflow(AdkRun *run, Frame *f);
static AdkStepResult step_parallel(AdkRun *run, Frame *f);
static AdkStepResult step_graph(AdkRun *run, Frame *f);
static void step_after(AdkRun *run, Frame *f);
static void emit_content(AdkRun *run, Frame *f, Jsonb *content);
static AdkStepResult step_stack(AdkRun *run, List **stack);
static void calls_result(AdkRun *run, Frame *f, AdkRoundResult rr,
						 AdkAgent *transfer);
static void abandon_stack(List *stack);
static void push_frame(AdkRun *run, AdkAgent *agent, const char *branch,
					   AdkSpanId parent);
static void node_path(AdkRun *run, Frame *parent, List *stack,
					  const char *name);
static void first_frame_scope(AdkRun *run, AdkAgent *agent);
static void drop_lane(AdkRun *run, List **lane);

/*
 * The run's first agent (run.c): its span is the trace's root.
 */
void
adk_push_agent(AdkRun *run, AdkAgent *agent, const char *branch)
{
	push_frame(run, agent, branch, 0);
	first_frame_scope(run, agent);
	adk_node_start(run, ((Frame *) llast(run->frames))->path, agent->name, true);
}

/*
 * The run's first frame, of agent: in the open task's scope when agent is
 * the task agent the user's message -- or a retried job -- goes on with
 * (route.c, task_mode.c).
 */
static void
first_frame_scope(AdkRun *run, AdkAgent *agent)
{
	Frame	   *f;

	if (run->first_scope != NULL && adk_is_task(agent))
	{
		f = (Frame *) llast(run->frames);
		f->scope = run->first_scope;
		f->resumed = true;
		/* under its coordinator, as when it was delegated to */
		pfree(f->path);
		f->path = MemoryContextStrdup(run->run_cxt,
									  psprintf("%s/%s@%s", agent->parent->name,
											   agent->name, f->scope));
	}
}

/*
 * A retried job's agent (run.c, retry.c) whose model event with calls was
 * stored by an earlier attempt but whose responses were not: the frame
 * runs those calls (in the run's memory, the frame's from here) once the
 * agent has begun, instead of calling the model for them again.
 */
void
adk_push_agent_at_calls(AdkRun *run, AdkAgent *agent, const char *branch,
						List *calls)
{
	Frame	   *f;

	push_frame(run, agent, branch, 0);
	first_frame_scope(run, agent);
	f = (Frame *) llast(run->frames);
	f->stored_calls = calls;
	adk_node_start(run, f->path, agent->name, true);
}

/*
 * A frame for agent, run by the agent whose span is parent: a sub-agent, a
 * lane, the agent transferred to.  Its node path is that of the frame
 * being stepped -- ADK-Go's runner runs the invocation's first agent as
 * one node, and an agent transferred to or run as a workflow's sub-agent
 * inside it -- or, for the run's first agent, the agent's name; a task or
 * single_turn sub-agent's frame gets its own (node_path()).
 */
static void
push_frame(AdkRun *run, AdkAgent *agent, const char *branch, AdkSpanId parent)
{
	MemoryContext old = MemoryContextSwitchTo(run->run_cxt);
	Frame	   *f = palloc0(sizeof(Frame));
	List	  **stack = run->stack ? run->stack : &run->frames;

	f->agent = agent;
	f->branch = branch;
	f->path = pstrdup(run->node_path ? run->node_path : agent->name);
	f->phase = F_START;
	*stack = lappend(*stack, f);
	MemoryContextSwitchTo(old);
	f->span = adk_span_agent_begin(run, parent, agent);
}

/*
 * The node path of the frame just pushed on stack for a task or
 * single_turn sub-agent of parent: "<parent's path>/<name>", name
 * "<agent>@<call id>" for a task, the node's branch "<agent>@<n>" for a
 * single_turn agent (ADK-Go's event streams).  The node starts: its row
 * in adk.run_states (run_states.c).
 */
static void
node_path(AdkRun *run, Frame *parent, List *stack, const char *name)
{
	Frame	   *child = (Frame *) llast(stack);

	pfree(child->path);
	child->path = MemoryContextStrdup(run->run_cxt,
									  psprintf("%s/%s", parent->path, name));
	adk_node_start(run, child->path, child->agent->name, false);
}

/*
 * The innermost frame is done: it goes, with what it owns in the run's
 * memory (its tool declarations, its lanes' stacks; a run of many agents
 * keeps none it finished).
 */
static void
pop_frame(AdkRun *run)
{
	Frame	   *f = (Frame *) llast(*run->stack);

	*run->stack = list_delete_last(*run->stack);
	adk_span_agent_end(run, f->span);
	if (run->node_path == f->path)
		run->node_path = NULL;
	pfree(f->path);
	if (f->decls)
		pfree(f->decls);
	list_free_deep(f->lanes);
	list_free(f->lane_nodes);
	if (f->graph_cxt)
		MemoryContextDelete(f->graph_cxt);
	pfree(f);
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
	run->lane_node = NULL;
	run->scope = NULL;
	run->node_path = NULL;
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
		case F_GRAPH:
			foreach(lc, f->lanes)
			{
				if (stack_ready(*(List **) lfirst(lc)) ||
					adk_workflow_lane_stopped(f->graph,
											  list_nth(f->lane_nodes,
													   foreach_current_index(lc)),
											  false))
					return true;
			}
			/* no lane left: it ends, unless a node waits to be retried */
			return (f->lanes == NIL && !adk_workflow_retrying(f->graph)) ||
				adk_workflow_ready(f->graph);
		default:
			return true;
	}
}

bool
adk_agent_ready(AdkRun *run)
{
	return run->out.end_invocation || stack_ready(run->frames);
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

/*
 * A lane stopped before its agent ended (a graph node's timeout, or an
 * error that ended its attempt): every model call in flight in it stops,
 * and its frames go, without after_agent (the agent did not end).
 */
static void
drop_lane(AdkRun *run, List **lane)
{
	List	  **stack = run->stack;
	char	   *path = run->node_path;
	ListCell   *lc;

	abandon_stack(*lane);
	/* a nested workflow's or a parallel agent's lanes first */
	foreach(lc, *lane)
	{
		Frame	   *f = (Frame *) lfirst(lc);
		ListCell   *l;

		foreach(l, f->lanes)
			drop_lane(run, (List **) lfirst(l));
		list_free(f->lanes);
		f->lanes = NIL;
	}
	run->stack = lane;
	while (*lane != NIL)
		pop_frame(run);
	run->stack = stack;
	run->node_path = path;
	pfree(lane);
}

static AdkStepResult
step_stack(AdkRun *run, List **stack)
{
	Frame	   *f;
	AdkAgent   *transfer = NULL;
	AdkAgent   *node = NULL;
	const char *node_branch = NULL;
	char	   *task_scope = NULL;
	AdkRoundResult rr;

	if (*stack == NIL)
		return ADK_STEP_DONE;
	run->stack = stack;
	f = (Frame *) llast(*stack);
	adk_span_step_begin(run, f->span);	/* the step works for f */
	run->scope = f->scope;		/* its events carry its scope (emit.c) */
	run->node_path = f->path;	/* ... and its node path */
	if (run->out.end_invocation)
	{
		/* a failure or an early end: no after_agent anywhere */
		if (f->graph != NULL && run->out.failed)
			adk_workflow_failed(f->graph);	/* its nodes still running stop */
		abandon_stack(list_make1(f));
		pop_frame(run);
		return ADK_STEP_RAN;
	}
	if (run->lane_node != NULL && run->lane_node->interrupted)
	{
		/*
		 * a graph agent node's agent paused for human input (hitl.c): its
		 * lane stops as a paused invocation does, no after_agent; the
		 * workflow holds the node (workflow.c)
		 */
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
			if (rr == ROUND_WAIT)
				break;			/* its model call, after tail retention */
			f->round = NULL;
			/* ROUND_AGAIN: an answer its output schema refused, asked again */
			f->phase = rr == ROUND_CALLS ? F_CALLS :
				rr == ROUND_AGAIN ? F_LLM : F_AFTER;
			break;
		case F_CALLS:
			/* single_turn sub-agents run first, each a node (single_turn.c) */
			if (adk_single_turn_next(run, f->agent, f->calls, &node,
									 &node_branch))
			{
				f->phase = F_NODE;
				push_frame(run, node, node_branch, f->span);
				node_path(run, f, *stack, node_branch);
				break;
			}
			/* a task sub-agent runs in its scope (task_mode.c) */
			if (adk_task_next(run, f->agent, &f->calls, &node, &task_scope))
			{
				f->phase = F_NODE;
				push_frame(run, node, f->branch, f->span);
				((Frame *) llast(*stack))->scope = task_scope;
				node_path(run, f, *stack, psprintf("%s@%s", node->name, task_scope));
				break;
			}
			if (run->out.end_invocation)
				break;			/* the task waits for the user */
			if (f->calls == NIL)
			{
				/* its only call was a task's, answered: the model again */
				f->phase = F_LLM;
				break;
			}
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
			if (rr == ROUND_WAIT)
				break;			/* agent-tools started after their embedding */
			f->round = NULL;
			calls_result(run, f, rr, transfer);
			break;
		case F_NODE:
			/* the node has finished: the next, or the calls */
			f->phase = F_CALLS;
			break;
		case F_WORKFLOW:
			step_workflow(run, f);
			break;
		case F_PARALLEL:
			return step_parallel(run, f);
		case F_GRAPH:
			return step_graph(run, f);
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
			push_frame(run, transfer, f->branch, f->span);
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
 * A graph workflow (workflow.c, docs/workflows.md "What runs"): one unit
 * of work a step, the first of -- an agent node whose lane has finished
 * completes with its last answer; the workflow's next ready activation (a
 * function, tool or join node runs in workflow.c; an agent node comes
 * back to be pushed in a lane of its own, on its branch, its frame's node
 * path the activation's; a nested workflow node likewise, its lane a
 * workflow frame stepped here in turn); the next lane that can go on, in
 * turn, as a parallel agent's.  So ready agent nodes all start before any
 * waits, and their model calls are in flight together.  A node waiting
 * for its next retry attempt's time is a wait as a model call in flight
 * is (ADK_STEP_WAIT).  A lane whose node's timeout has passed, or whose
 * attempt an error ended, is dropped first, and the workflow retries or
 * fails its node.  The workflow is done when nothing is ready, no lane is
 * left and no node waits to be retried.
 */
static AdkStepResult
step_graph(AdkRun *run, Frame *f)
{
	List	  **stack = run->stack;
	AdkWfAgentNode *lane_node = run->lane_node;
	AdkWfAgentNode *node;
	ListCell   *lc;
	int			n;
	int			i;
	bool		waiting = false;

	foreach(lc, f->lanes)
	{
		List	  **lane = (List **) lfirst(lc);
		int			k = foreach_current_index(lc);
		bool		stopped;

		node = (AdkWfAgentNode *) list_nth(f->lane_nodes, k);
		stopped = adk_workflow_lane_stopped(f->graph, node, *lane == NIL);
		if (*lane != NIL && !stopped)
			continue;
		f->lanes = list_delete_nth_cell(f->lanes, k);
		f->lane_nodes = list_delete_nth_cell(f->lane_nodes, k);
		if (stopped)
		{
			/*
			 * An error ended the node's attempt, or its timeout passed: its
			 * lane goes, its model calls in flight cancelled, and the
			 * workflow retries or fails the node (docs/workflows.md "Node
			 * settings")
			 */
			drop_lane(run, lane);
			adk_workflow_agent_failed(f->graph, node);
			return ADK_STEP_RAN;
		}
		pfree(lane);
		adk_workflow_agent_done(f->graph, node, adk_is_graph(node->agent) ? NULL :
								adk_node_output(run, node));
		return ADK_STEP_RAN;
	}
	switch (adk_workflow_step(f->graph, &node))
	{
		case WF_RAN:
			return ADK_STEP_RAN;
		case WF_AGENT:
			{
				MemoryContext old = MemoryContextSwitchTo(run->run_cxt);
				List	  **lane = palloc0(sizeof(List *));
				char	   *path = run->node_path;

				f->lanes = lappend(f->lanes, lane);
				f->lane_nodes = lappend(f->lane_nodes, node);
				MemoryContextSwitchTo(old);
				if (!adk_is_graph(node->agent))
					adk_node_open(run, node);
				run->stack = lane;
				run->node_path = (char *) node->path;
				push_frame(run, node->agent, node->branch, f->span);
				/* a nested workflow: its frame hands the node its output */
				((Frame *) llast(*lane))->caller = node;
				run->stack = stack;
				run->node_path = path;
				return ADK_STEP_RAN;
			}
		case WF_IDLE:
			break;
	}
	n = list_length(f->lanes);
	for (i = 0; i < n; i++)
	{
		int			k = (f->index + i) % n;
		AdkStepResult r;

		/* a pause for human input in the lane holds its node (hitl.c) */
		run->lane_node = (AdkWfAgentNode *) list_nth(f->lane_nodes, k);
		r = step_stack(run, (List **) list_nth(f->lanes, k));
		run->lane_node = lane_node;
		if (r == ADK_STEP_RAN)
		{
			f->index = (k + 1) % n;
			return ADK_STEP_RAN;
		}
		if (r == ADK_STEP_WAIT)
			waiting = true;
	}
	if (waiting)
		return ADK_STEP_WAIT;
	if (n > 0)
		return ADK_STEP_RAN;	/* a lane has just finished */
	if (adk_workflow_retrying(f->graph))
		return ADK_STEP_WAIT;	/* a node's next attempt is not due yet */
	adk_workflow_end(f->graph);
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
	else if (!adk_llm_begin(run, f->agent, f->branch, &f->tools, &f->decls))
		f->phase = F_AFTER;
	else if (f->stored_calls != NIL)
	{
		f->calls = f->stored_calls;
		f->stored_calls = NIL;
		f->phase = F_CALLS;
	}
	else
		f->phase = F_LLM;
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

	if (strcmp(agent->kind, "workflow") == 0)
	{
		/* a graph workflow: stepped by step_graph, its state the frame's */
		f->graph_cxt = AllocSetContextCreate(run->run_cxt, "adk workflow",
											 ALLOCSET_SMALL_SIZES);
		f->graph = adk_workflow_begin(run, agent, f->branch, f->caller,
									  f->graph_cxt);
		f->index = 0;
		f->phase = F_GRAPH;
		return;
	}
	if (strcmp(agent->kind, "loop") == 0)
	{
		if (run->out.escalated)
		{
			run->out.escalated = false;
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
	else if (run->out.escalated || f->index >= n)
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
			push_frame(run, child, child_branch, f->span);
			f->lanes = lappend(f->lanes, lane);
		}
		MemoryContextSwitchTo(old);
		run->stack = stack;
		f->index = 0;
		f->phase = F_PARALLEL;
		return;
	}
	child = (AdkAgent *) list_nth(agent->sub_agents, f->index++);
	push_frame(run, child, child_branch, f->span);
}

/*
 * after_agent: it may add an answer.
 */
static void
step_after(AdkRun *run, Frame *f)
{
	Jsonb	   *content;
	AdkAgent   *coordinator = NULL;
	char	   *coordinator_path = NULL;

	if (adk_plugins_hook(run, CB_AFTER_AGENT, f->agent->name, f->branch,
						 NULL, NULL, NULL, NULL, &content) &&
		content != NULL)
		emit_content(run, f, content);
	/*
	 * A task's end: its output answers the delegating call; a task the
	 * user's message went to hands back to its coordinator, which goes on
	 * (task_mode.c)
	 */
	if (f->scope != NULL && !run->out.end_invocation &&
		adk_task_end(run, f->agent, f->scope) && f->resumed)
	{
		coordinator = f->agent->parent;
		/* the node the task ran in: its path less the task's part */
		coordinator_path = strrchr(f->path, '/') ?
			pnstrdup(f->path, strrchr(f->path, '/') - f->path) : pstrdup(f->path);
	}
	pop_frame(run);
	if (coordinator != NULL)
	{
		run->scope = NULL;
		run->node_path = coordinator_path;
		push_frame(run, coordinator, NULL, 0);
	}
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
