/*-------------------------------------------------------------------------
 *
 * flow.c
 *	  The LLM flow of one agent (step 6 of run.c's order of work): build
 *	  the request from the session, call the model, store the model event,
 *	  run the function calls, store their responses, and again -- until a
 *	  final answer, a transfer, an escalation, a failure or max_llm_calls.
 *
 * Each round reads the history again, so the second request sees the
 * first round's call and response (000 §三.7: Flow yields, Runner stores,
 * Flow reads the session).  Plugins wrap the model call (before_model,
 * after_model, on_model_error) and each tool call (before_tool,
 * after_tool, on_tool_error).  A model failure is a stored error event and
 * ends the invocation as failed; a tool failure is an {"error": ...}
 * function response the model sees.
 *
 * A round is driven in steps (agents.c): the first starts the model call
 * (adk_llm_round_start: the request, before_model, the HTTP request put in
 * flight) and returns ROUND_WAIT; the run waits without blocking its
 * process; the step after the answer came stores the model event
 * (adk_llm_round_finish: on_model_error, after_model); the next runs the
 * calls (adk_llm_calls_start): built-ins and SQL tools one after another
 * in call order (they share the run's transaction), agents used as tools
 * all started at once -- and when any was, ROUND_WAIT again until their
 * answers are in (adk_llm_calls_finish).  The function responses go into
 * one event in the order the model gave the calls (seed 003,
 * ToolExecutionStrategy: results reassembled in the original order; a
 * failing call is an error response and the batch goes on).
 *
 * When tail retention is due (compaction.c), the first step of a round
 * starts the summarizer instead of the model (the round waits for it,
 * ROUND_WAIT), and the step after its answer appends the summary, builds
 * the request again from the compacted history and starts the model call
 * (adk_llm_round_finish returns ROUND_WAIT once more).  preload_memory's
 * embedding of the user's message (builtin_tools.c) is started in that
 * first step too, and waited for likewise; a load_memory call's query
 * embedding waits in the calls round like an agent-tool's model call, its
 * search made when the answer is in.
 *
 * Each half of a round works in a memory context of its own (AdkRound,
 * under the run's), deleted when it ends: the history read for the prompt,
 * the request, the response and the tool results of one round are gone
 * before the next, so a run's memory is bounded by its current round, not
 * by how many it made.  Deleting it also stops its model calls if they are
 * still in flight.  What outlives a round lives in the run's context: the
 * calls for the next step (copied out here), the tool declarations of the
 * agent's frame, returned rows (run.c copies them), error codes, HITL and
 * compaction state.  The rest of a step -- outside its rounds -- works in
 * the step's memory, emptied when the step returns (runner.h).
 *
 * What a tool returned that the store would refuse -- larger than
 * adk.max_event_size, or nested deeper than ADK_MAX_JSON_DEPTH once it sits
 * in its event -- becomes an {"error": ...} function response too; model
 * output the store would refuse becomes a stored error event (run.c's
 * adk_emit).
 *
 * IDENTIFICATION
 *	  src/runner/flow.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/numeric.h"

#include "common/json_writer.h"
#include "common/jsonb_util.h"
#include "model/generate.h"
#include "runner/budget.h"
#include "runner/builtin_tools.h"
#include "runner/compaction.h"
#include "runner/runner.h"
#include "runner/spans.h"
#include "store/append.h"

typedef struct PartialCtx
{
	AdkRun	   *run;
	AdkAgent   *agent;
	const char *branch;
} PartialCtx;

/* One function call of a model response (runner.h) */
typedef AdkCall Call;

/*
 * Half a round in flight: its memory (a context of its own under the
 * run's, deleted when the half ends -- so a run's memory is bounded by its
 * current step), and the model calls it waits for.
 */
struct AdkRound
{
	MemoryContext cxt;
	PartialCtx	pctx;
	/* the model half */
	AdkCompactionWait *compaction;	/* tail retention's summary, first */
	AdkMemoryWait *memory;		/* ... preload_memory's query embedding */
	Jsonb	   *contents;		/* ... and the request made before them */
	Jsonb	   *decls;
	AdkModelCall *call;			/* NULL: answered without a call */
	AdkSpanId	span;			/* its span (spans.c) */
	Jsonb	   *request;		/* for on_model_error */
	Jsonb	   *response;		/* before_model's answer, or NULL */
	Jsonb	   *thoughts;		/* what adk.store_thoughts off took out of
								 * the model's answer (thoughts.c), or NULL */
	TimestampTz taken_at;		/* the budget's take (budget.c) */
	/* the calls half */
	int			ncalls;
	Jsonb	  **results;		/* per call, in call order */
	AdkModelCall **agent_calls; /* per call: an agent-tool's model call */
	AdkMemoryWait **memory_calls;	/* per call: load_memory's embedding */
	AdkAgent  **agent_tools;
	AdkSpanId  *agent_spans;	/* per call: the agent-tool's invoke_agent */
	AdkSpanId  *model_spans;	/* ... and its model call's span */
	AdkAgent   *transfer;
	bool		escalate;
	List	   *saved;			/* artifacts the tools saved (builtin_tools.c) */
};

static void emit_partial(Jsonb *partial, void *arg);
static bool start_model(AdkRun *run, AdkAgent *agent, const char *branch,
						AdkRound *round, Jsonb *contents, Jsonb *decls,
						Jsonb *config);
static Jsonb *model_response(AdkRun *run, AdkAgent *agent, const char *branch,
							 AdkRound *round);
static List *response_calls(Jsonb *response);
static char *response_text(Jsonb *response);
static Jsonb *model_event(AdkRun *run, AdkAgent *agent, const char *branch,
						  Jsonb *response, List *calls, List *tools,
						  bool answer);
static AdkRoundResult output_check(AdkRun *run, AdkAgent *agent,
								   const char *branch, List *tools,
								   Jsonb *decls, Jsonb *response, Jsonb *thoughts);
static void emit_model_event(AdkRun *run, Jsonb *event, Jsonb *thoughts);
static Jsonb *run_call(AdkRun *run, AdkAgent *agent, const char *branch,
					   Call *call, List *tools, AdkAgent **transfer,
					   bool *escalate, AdkAgent **agent_tool,
					   AdkMemoryWait **memory);
static Jsonb *agent_tool_start(AdkRun *run, AdkAgent *tool_agent, Call *tool_call,
							   AdkModelCall **call, AdkSpanId *agent_span,
							   AdkSpanId *model_span);
static Jsonb *agent_tool_finish(AdkRun *run, AdkAgent *tool_agent,
								AdkModelCall *call, AdkSpanId agent_span,
								AdkSpanId model_span);
static void count_tokens(AdkRun *run, Jsonb *response);
static AdkRoundResult assemble_calls(AdkRun *run, AdkAgent *agent,
									 const char *branch, List *calls,
									 AdkRound *round, AdkAgent **transfer_to);
static Jsonb *fit_result(Call *call, Jsonb *result, Size *room);
static List *copy_calls(List *calls);
static AdkRound *new_round(AdkRun *run);
static AdkRoundResult request_start(AdkRun *run, AdkAgent *agent,
									const char *branch, Jsonb *decls,
									AdkRound *round, Jsonb *contents,
									AdkRound **round_out);

/*
 * Levels a tool's result object sits below its event's own: content,
 * parts, the part, function_response (the result is the "response").
 */
#define RESULT_DEPTH_IN_EVENT	5

/*
 * Before the first round: the agent's tools, and HITL's resumed calls.
 * false: the flow has nothing more to do.  *tools and *decls are kept by
 * the agent's frame for its later steps: in the run's memory (*decls is
 * the frame's to free).
 */
bool
adk_llm_begin(AdkRun *run, AdkAgent *agent, const char *branch,
			  List **tools, Jsonb **decls)
{
	MemoryContext caller = MemoryContextSwitchTo(run->run_cxt);
	Jsonb	   *d;

	*tools = agent->tools_loaded ? agent->tool_defs : adk_load_tools(agent);
	MemoryContextSwitchTo(caller);
	d = adk_tool_declarations(run, agent, *tools);
	*decls = NULL;
	if (d != NULL)
	{
		*decls = MemoryContextAlloc(run->run_cxt, VARSIZE(d));
		memcpy(*decls, d, VARSIZE(d));
	}

	/* HITL (hitl.c): a resumed confirmation runs the confirmed calls first */
	return adk_hitl_resume_flow(run, agent, branch, *tools);
}

/*
 * The memory of half a round, under the run's.  Not the sizes PostgreSQL
 * keeps freed contexts of for reuse (a minContextSize of 0 with the
 * default initial block would be: deleted, it would keep its first 8 kB
 * for the next context), and the smallest first block: deleting it
 * returns nearly all of its memory to malloc, so under valgrind anything
 * kept past the round shows up as a use after free.
 */
static AdkRound *
new_round(AdkRun *run)
{
	MemoryContext cxt = AllocSetContextCreate(run->run_cxt, "adk_runner round",
											  1024, ALLOCSET_DEFAULT_INITSIZE,
											  ALLOCSET_DEFAULT_MAXSIZE);
	AdkRound   *round = MemoryContextAllocZero(cxt, sizeof(AdkRound));

	round->cxt = cxt;
	return round;
}

/*
 * Whether what the half round waits for (its model call, its agent-tools'
 * calls) has arrived.
 */
bool
adk_round_ready(const AdkRound *round)
{
	int			i;

	if (round->compaction != NULL && !adk_compaction_ready(round->compaction))
		return false;
	if (round->memory != NULL && !adk_memory_ready(round->memory))
		return false;
	if (round->call != NULL && !adk_model_call_ready(round->call))
		return false;
	for (i = 0; i < round->ncalls; i++)
	{
		if (round->agent_calls[i] != NULL &&
			!adk_model_call_ready(round->agent_calls[i]))
			return false;
		if (round->memory_calls[i] != NULL &&
			!adk_memory_ready(round->memory_calls[i]))
			return false;
	}
	return true;
}

/*
 * The run ended while the half round waited: its transfers stop (a
 * summarizer's too: its compaction lives in the round's memory).
 */
void
adk_round_abandon(AdkRound *round)
{
	MemoryContextDelete(round->cxt);
}

/*
 * The first half of a round, first step: build the request and start the
 * model call -- or, when tail retention is due (compaction.c), start its
 * summarizer first, and the model call in the step after its answer came
 * (adk_llm_round_finish).  ROUND_WAIT (with *round) when a call is in
 * flight -- the run waits until adk_round_ready(), then
 * adk_llm_round_finish(); ROUND_DONE when the round ended here (an error
 * event is stored).
 */
AdkRoundResult
adk_llm_round_start(AdkRun *run, AdkAgent *agent, const char *branch,
					List *tools, Jsonb *decls, AdkRound **round_out)
{
	MemoryContext caller = CurrentMemoryContext;
	AdkRound   *round;
	Jsonb	   *contents;

	*round_out = NULL;
	if (run->out.end_invocation)
		return ROUND_DONE;
	if (agent->model == NULL)
	{
		adk_emit_error(run, agent->name, branch, "NO_MODEL",
					   psprintf("agent \"%s\" has no model, and neither has any agent above it",
								agent->name));
		return ROUND_DONE;
	}
	if (run->out.llm_calls >= run->max_llm_calls)
	{
		adk_emit_error(run, agent->name, branch, "MAX_LLM_CALLS_EXCEEDED",
					   psprintf("Max number of llm calls limit of %d exceeded",
								run->max_llm_calls));
		return ROUND_DONE;
	}

	round = new_round(run);
	MemoryContextSwitchTo(round->cxt);
	contents = adk_task_contents(run, adk_node_contents(run, branch,
														adk_build_contents(run, agent, branch)));
	/* preload_memory's embedding (builtin_tools.c), tail retention's too */
	round->memory = adk_builtin_preload_start(run, agent, round->cxt);
	round->compaction = adk_compaction_before_model(run, agent, branch,
													contents, round->cxt);
	MemoryContextSwitchTo(caller);
	if (round->compaction != NULL || round->memory != NULL)
	{
		round->contents = contents;
		round->decls = decls;
		*round_out = round;
		return ROUND_WAIT;
	}
	return request_start(run, agent, branch, decls, round, contents,
						 round_out);
}

/*
 * The request of the round (contents built in its memory), before_model,
 * and the model call started: as adk_llm_round_start.
 */
static AdkRoundResult
request_start(AdkRun *run, AdkAgent *agent, const char *branch, Jsonb *decls,
			  AdkRound *round, Jsonb *contents, AdkRound **round_out)
{
	MemoryContext caller = MemoryContextSwitchTo(round->cxt);
	Jsonb	   *config;
	char	   *instruction;
	bool		started;

	*round_out = NULL;
	instruction = adk_task_instruction(agent, adk_build_instruction(run, agent));
	if (run->instruction_error == NULL)
		instruction = adk_output_instruction(agent, decls, instruction);
	if (run->instruction_error != NULL)
	{
		/* ADK raises before the model call; here the run fails with it */
		adk_emit_error(run, agent->name, branch, "INSTRUCTION_ERROR",
					   run->instruction_error);
		run->instruction_error = NULL;
		MemoryContextSwitchTo(caller);
		MemoryContextDelete(round->cxt);
		return ROUND_DONE;
	}
	config = adk_output_config(agent, decls, adk_request_config(agent, instruction));
	round->decls = decls;		/* the frame's: output_check reads them */

	started = start_model(run, agent, branch, round, contents, decls, config);
	MemoryContextSwitchTo(caller);
	if (!started)
	{
		MemoryContextDelete(round->cxt);
		return ROUND_DONE;		/* an error event was stored */
	}
	*round_out = round;
	return ROUND_WAIT;
}

/*
 * The first half of a round, second step (the answer is in): the model
 * event.  ROUND_CALLS (with *calls, in the run's memory) when the model
 * asked for function calls, which adk_llm_calls_start runs in the next
 * step -- after the caller has had the model's event, as ADK yields it
 * before running the tools (a caller that stops reading there runs no
 * tool); ROUND_AGAIN when a final answer did not fit the agent's output
 * schema and the model is asked again (output_check); ROUND_DONE
 * otherwise (a final answer, a failure).  The round is
 * gone afterwards -- except when the answer was tail retention's summary:
 * it is appended and the model call started now, on the compacted
 * history, and the round waits again (ROUND_WAIT; or ROUND_DONE as
 * adk_llm_round_start).
 */
AdkRoundResult
adk_llm_round_finish(AdkRun *run, AdkAgent *agent, const char *branch,
					 List *tools, AdkRound *round, List **calls)
{
	MemoryContext caller = CurrentMemoryContext;
	AdkRoundResult result = ROUND_DONE;
	Jsonb	   *response;
	List	   *round_calls = NIL;

	*calls = NIL;
	if (run->out.end_invocation)
	{
		MemoryContextDelete(round->cxt);
		return ROUND_DONE;
	}
	MemoryContextSwitchTo(round->cxt);
	if (round->compaction != NULL || round->memory != NULL)
	{
		AdkCompactionWait *compaction = round->compaction;
		AdkMemoryWait *memory = round->memory;
		Jsonb	   *contents = round->contents;
		AdkRound   *again;

		round->compaction = NULL;
		round->memory = NULL;
		if (memory != NULL)
			(void) adk_memory_finish(memory);
		if (compaction != NULL && adk_compaction_finish(compaction))
			contents = adk_task_contents(run,
										 adk_node_contents(run, branch,
														   adk_build_contents(run, agent, branch)));
		MemoryContextSwitchTo(caller);
		return request_start(run, agent, branch, round->decls, round,
							 contents, &again) == ROUND_WAIT ?
			ROUND_WAIT : ROUND_DONE;
	}
	response = model_response(run, agent, branch, round);
	if (response != NULL)
	{
		round_calls = response_calls(response);
		if (round_calls == NIL && adk_output_schema_applies(agent))
			result = output_check(run, agent, branch, tools, round->decls,
								  response, round->thoughts);
		else
		{
			emit_model_event(run, model_event(run, agent, branch, response,
											  round_calls, tools, true),
							 round->thoughts);
			if (round_calls != NIL && !run->out.end_invocation)
				result = ROUND_CALLS;
		}
	}
	/* the frame runs them in its next step: in the run's memory */
	MemoryContextSwitchTo(run->run_cxt);
	if (result == ROUND_CALLS)
		*calls = copy_calls(round_calls);
	MemoryContextSwitchTo(caller);
	MemoryContextDelete(round->cxt);
	return result;
}

/*
 * A final answer of an agent whose output schema applies (output_schema.c):
 * its model event, which keeps the text -- the agent's output (output_key,
 * a node's answer) only when the text is a value of the schema.  Else the
 * model is told what is wrong and asked again (ROUND_AGAIN), while the
 * invocation has tries left; then the answer is the error event
 * OUTPUT_SCHEMA_INVALID (ROUND_DONE).
 */
static AdkRoundResult
output_check(AdkRun *run, AdkAgent *agent, const char *branch, List *tools,
			 Jsonb *decls, Jsonb *response, Jsonb *thoughts)
{
	char	   *problem = adk_output_problem(agent, response_text(response));

	emit_model_event(run, model_event(run, agent, branch, response, NIL, tools,
									  problem == NULL),
					 thoughts);
	if (run->out.end_invocation)
		return ROUND_DONE;
	if (problem == NULL)
	{
		run->output_retries = 0;
		return ROUND_DONE;
	}
	return adk_output_retry(run, agent, branch, problem, true,
							adk_output_by_tool(agent, decls)) ?
		ROUND_AGAIN : ROUND_DONE;
}

/*
 * The second half of a round, first step: run the model's function calls
 * in call order -- SQL tools and built-ins now, one after another (they
 * share the transaction); agents used as tools have their model calls
 * started, all at once.  ROUND_WAIT (with *round) while those are in
 * flight: adk_llm_calls_finish when adk_round_ready().  Otherwise the
 * calls are done and their event stored here: ROUND_AGAIN when the model
 * must be called again, ROUND_TRANSFER (with *transfer_to) when control
 * passes to another agent, ROUND_DONE otherwise (an escalation, a pause, a
 * failure).
 */
AdkRoundResult
adk_llm_calls_start(AdkRun *run, AdkAgent *agent, const char *branch,
					List *tools, List *calls, AdkRound **round_out,
					AdkAgent **transfer_to)
{
	MemoryContext caller = CurrentMemoryContext;
	AdkRound   *round;
	ListCell   *lc;
	bool		waiting = false;
	int			i = 0;

	*round_out = NULL;
	if (run->out.end_invocation)
		return ROUND_DONE;
	round = new_round(run);
	MemoryContextSwitchTo(round->cxt);
	round->ncalls = list_length(calls);
	round->results = palloc0(sizeof(Jsonb *) * (round->ncalls + 1));
	round->agent_calls = palloc0(sizeof(AdkModelCall *) * (round->ncalls + 1));
	round->memory_calls = palloc0(sizeof(AdkMemoryWait *) * (round->ncalls + 1));
	round->agent_tools = palloc0(sizeof(AdkAgent *) * (round->ncalls + 1));
	round->agent_spans = palloc0(sizeof(AdkSpanId) * (round->ncalls + 1));
	round->model_spans = palloc0(sizeof(AdkSpanId) * (round->ncalls + 1));
	adk_builtin_saves_begin(run);	/* artifacts the tools save */
	foreach(lc, calls)
	{
		Call	   *call = (Call *) lfirst(lc);
		AdkAgent   *as_tool = NULL;

		round->results[i] = run_call(run, agent, branch, call, tools,
									 &round->transfer, &round->escalate,
									 &as_tool, &round->memory_calls[i]);
		if (run->out.end_invocation)
			break;
		if (round->memory_calls[i] != NULL &&
			!adk_memory_ready(round->memory_calls[i]))
			waiting = true;
		if (as_tool != NULL)
		{
			round->agent_tools[i] = as_tool;

			/*
			 * An agent-tool with preload_memory: its model call is started
			 * once the user's message is embedded (adk_llm_calls_finish)
			 */
			round->memory_calls[i] = adk_builtin_preload_start(run, as_tool,
															   round->cxt);
			if (round->memory_calls[i] != NULL)
				waiting = true;
			else
			{
				round->results[i] = agent_tool_start(run, as_tool, call,
													 &round->agent_calls[i],
													 &round->agent_spans[i],
													 &round->model_spans[i]);
				if (round->agent_calls[i] != NULL)
					waiting = true;
			}
		}
		i++;
	}
	round->saved = adk_builtin_saves_end();
	MemoryContextSwitchTo(caller);
	if (run->out.end_invocation)
	{
		MemoryContextDelete(round->cxt);
		return ROUND_DONE;
	}
	if (!waiting)
	{
		AdkRoundResult rr = adk_llm_calls_finish(run, agent, branch, tools,
												 calls, round, transfer_to);

		if (rr != ROUND_WAIT)
			return rr;			/* the round is gone */
	}
	*round_out = round;
	return ROUND_WAIT;
}

/*
 * The second half of a round, last step: the agent-tools' answers and
 * load_memory's searches, then one event with every response in call
 * order.  As adk_llm_calls_start; the round is gone afterwards -- unless
 * an agent-tool's model call was started now, after the embedding its
 * preload_memory waited for (ROUND_WAIT: the round waits again).
 */
AdkRoundResult
adk_llm_calls_finish(AdkRun *run, AdkAgent *agent, const char *branch,
					 List *tools, List *calls, AdkRound *round,
					 AdkAgent **transfer_to)
{
	MemoryContext caller = CurrentMemoryContext;
	AdkRoundResult result = ROUND_DONE;
	bool		started = false;
	int			i;

	(void) tools;
	if (!run->out.end_invocation)
	{
		MemoryContextSwitchTo(round->cxt);
		for (i = 0; i < round->ncalls; i++)
		{
			if (round->memory_calls[i] != NULL && round->agent_tools[i] != NULL)
			{
				AdkMemoryWait *m = round->memory_calls[i];

				/* the agent-tool's preload_memory has its embedding */
				round->memory_calls[i] = NULL;
				(void) adk_memory_finish(m);
				round->results[i] = agent_tool_start(run, round->agent_tools[i],
													 (Call *) list_nth(calls, i),
													 &round->agent_calls[i],
													 &round->agent_spans[i],
													 &round->model_spans[i]);
				if (round->agent_calls[i] != NULL)
					started = true;
			}
			else if (round->agent_calls[i] != NULL)
			{
				AdkModelCall *c = round->agent_calls[i];

				round->agent_calls[i] = NULL;
				round->results[i] = agent_tool_finish(run, round->agent_tools[i], c,
													  round->agent_spans[i],
													  round->model_spans[i]);
			}
			if (round->memory_calls[i] != NULL)
			{
				AdkMemoryWait *m = round->memory_calls[i];

				round->memory_calls[i] = NULL;
				round->results[i] = adk_memory_finish(m);
			}
		}
		if (started)
		{
			MemoryContextSwitchTo(caller);
			return ROUND_WAIT;
		}
		result = assemble_calls(run, agent, branch, calls, round, transfer_to);
		MemoryContextSwitchTo(caller);
	}
	MemoryContextDelete(round->cxt);
	return result;
}

/*
 * One event with all the calls' responses, in call order; what comes
 * next.  In the round's memory.
 */
static AdkRoundResult
assemble_calls(AdkRun *run, AdkAgent *agent, const char *branch, List *calls,
			   AdkRound *round, AdkAgent **transfer_to)
{
	ListCell   *lc;
	JsonWriter	w;
	AdkAgent   *transfer = round->transfer;
	bool		escalate = round->escalate;
	Jsonb	   *confirmations;
	List	   *saved;
	Size		room = (Size) adk_max_event_size_kb * 1024;
	Jsonb	   *task_output;
	int			i = 0;

	/* the event's own fields, the content's, the actions' */
	room = room > 4096 ? room - 4096 : 0;

	/*
	 * a successful finish_task's event carries the output and, in its
	 * node_info, the task's path as output_for (task_mode.c)
	 */
	task_output = adk_task_output(run);
	adk_event_start_node(&w, run, agent->name, branch, task_output != NULL);
	jw_key(&w, "content");
	jw_begin_object(&w);
	jw_key(&w, "role");
	jw_string(&w, "user");
	jw_key(&w, "parts");
	jw_begin_array(&w);
	foreach(lc, calls)
	{
		Call	   *call = (Call *) lfirst(lc);
		Jsonb	   *result = fit_result(call, round->results[i++], &room);

		adk_jw_function_response(&w, call->id, call->name, result);
	}
	saved = round->saved;
	jw_end_array(&w);
	jw_end_object(&w);
	if (task_output != NULL)
	{
		jw_key(&w, "output");
		jw_jsonb(&w, task_output);
	}
	confirmations = adk_hitl_requested_confirmations(run);	/* HITL */
	if (transfer || escalate || confirmations || saved)
	{
		jw_key(&w, "actions");
		jw_begin_object(&w);
		if (saved)
		{
			jw_key(&w, "artifact_delta");
			adk_jw_artifact_delta(&w, saved);
		}
		if (confirmations)
		{
			jw_key(&w, "requested_tool_confirmations");
			jw_jsonb(&w, confirmations);
		}
		if (transfer)
		{
			jw_key(&w, "transfer_to_agent");
			jw_string(&w, transfer->name);
		}
		if (escalate)
		{
			jw_key(&w, "escalate");
			jw_bool(&w, true);
			jw_key(&w, "skip_summarization");
			jw_bool(&w, true);
		}
		jw_end_object(&w);
	}
	jw_end_object(&w);
	adk_emit(run, jw_finish(&w));
	if (run->out.end_invocation || task_output != NULL)
		return ROUND_DONE;		/* ... or the task is done */
	/* set_model_response's value is the final answer (output_schema.c) */
	if (adk_output_final(run, agent, branch))
		return ROUND_DONE;
	/* HITL (hitl.c): a long-running call or a confirmation request pauses */
	if (adk_hitl_pause(run, agent, branch))
		return ROUND_DONE;

	if (transfer)
	{
		*transfer_to = transfer;
		return ROUND_TRANSFER;
	}
	if (escalate)
	{
		run->out.escalated = true;
		return ROUND_DONE;
	}
	return ROUND_AGAIN;
}

/*
 * result, or an {"error": ...} in its place when the event that holds it
 * could not be stored: nested too deeply, or too large for what is left of
 * the event's room (*room, which the result's size is taken from).
 */
static Jsonb *
fit_result(Call *call, Jsonb *result, Size *room)
{
	Size		size = VARSIZE(result) + strlen(call->id) + strlen(call->name) + 64;

	if (adk_jsonb_depth(&result->root, ADK_MAX_JSON_DEPTH) >
		ADK_MAX_JSON_DEPTH - RESULT_DEPTH_IN_EVENT)
		return adk_error_object(psprintf("tool \"%s\" returned JSON nested more than %d levels deep",
										 call->name, ADK_MAX_JSON_DEPTH - RESULT_DEPTH_IN_EVENT));
	if (size > *room)
		return adk_error_object(psprintf("tool \"%s\" returned %zu bytes, more than its event can hold (\"adk.max_event_size\" is %d kB)",
										 call->name, (Size) VARSIZE(result),
										 adk_max_event_size_kb));
	*room -= size;
	return result;
}

/*
 * A deep copy of a round's calls, in the current memory context.
 */
static List *
copy_calls(List *calls)
{
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, calls)
	{
		Call	   *c = (Call *) lfirst(lc);
		Call	   *copy = palloc(sizeof(Call));

		copy->id = pstrdup(c->id);
		copy->name = pstrdup(c->name);
		copy->args = DatumGetJsonbPCopy(JsonbPGetDatum(c->args));
		result = lappend(result, copy);
	}
	return result;
}

/*
 * The function calls of a stored model event, as adk_llm_round_finish
 * returns them (a retry runs them: retry.c), in the current memory
 * context.
 */
List *
adk_llm_event_calls(Jsonb *event)
{
	return response_calls(event);
}

/*
 * Free the calls adk_llm_round_finish returned, once they ran.
 */
void
adk_llm_free_calls(List *calls)
{
	ListCell   *lc;

	foreach(lc, calls)
	{
		Call	   *c = (Call *) lfirst(lc);

		pfree(c->id);
		pfree(c->name);
		pfree(c->args);
		pfree(c);
	}
	list_free(calls);
}

/* One agent's request memo on one branch (AdkRun.request_memos) */
typedef struct RequestMemoEntry
{
	char	   *agent;
	char	   *branch;
	AdkRequestMemo *memo;
} RequestMemoEntry;

/*
 * The request memo of an agent on a branch, made the first time in what
 * the run keeps of its history (adk_hist_cxt: the backend's next run on
 * the session goes on from it): its requests grow by a round at a time,
 * so each is built from the previous one (model/generate.c).  A run has a
 * few agents and branches: a list is searched.
 */
static AdkRequestMemo *
request_memo(AdkRun *run, const char *agent, const char *branch)
{
	ListCell   *lc;
	RequestMemoEntry *e;
	MemoryContext old;

	if (branch == NULL)
		branch = "";
	foreach(lc, run->request_memos)
	{
		e = (RequestMemoEntry *) lfirst(lc);
		if (strcmp(e->agent, agent) == 0 && strcmp(e->branch, branch) == 0)
			return e->memo;
	}
	old = MemoryContextSwitchTo(adk_hist_cxt(run));
	e = palloc(sizeof(RequestMemoEntry));
	e->agent = pstrdup(agent);
	e->branch = pstrdup(branch);
	e->memo = adk_request_memo_new(CurrentMemoryContext);
	run->request_memos = lappend(run->request_memos, e);
	MemoryContextSwitchTo(old);
	return e->memo;
}

/*
 * before_model, then the model call started (streamed partials go out as
 * rows while the run waits).  false when the round failed (an error event
 * is stored).  In the round's memory.
 */
static bool
start_model(AdkRun *run, AdkAgent *agent, const char *branch, AdkRound *round,
			Jsonb *contents, Jsonb *decls, Jsonb *config)
{
	JsonWriter	w;
	Jsonb	   *response;

	/*
	 * The request as plugins see it: only when one listens (it holds the
	 * whole history; nothing else reads it).
	 */
	round->request = NULL;
	if (adk_plugins_have(run, CB_BEFORE_MODEL) ||
		adk_plugins_have(run, CB_ON_MODEL_ERROR))
	{
		jw_init(&w);
		jw_begin_object(&w);
		jw_key(&w, "model");
		jw_string(&w, agent->model);
		jw_key(&w, "contents");
		/* thoughts a run sends back but does not store (thoughts.c) */
		jw_jsonb(&w, adk_contents_without_thoughts(contents));
		jw_key(&w, "tools");
		jw_jsonb(&w, decls);
		jw_key(&w, "config");
		jw_jsonb(&w, config);
		jw_end_object(&w);
		round->request = jw_finish(&w);
	}

	if (!adk_plugins_hook(run, CB_BEFORE_MODEL, agent->name, branch,
						  "request", round->request, NULL, NULL, &response))
		return false;
	if (response != NULL)
	{
		round->response = response;
		return true;
	}

	/* token budgets: refused before the call, charged after it */
	if (!adk_budget_take(run, agent->name, branch, &round->taken_at))
		return false;			/* BUDGET_EXCEEDED was stored */
	run->out.llm_calls++;
	round->pctx.run = run;
	round->pctx.agent = agent;
	round->pctx.branch = branch;
	round->span = adk_span_model_begin(run, adk_span_step(run), agent->model, contents);
	config = adk_prompt_cache_config(run, agent, config);
	round->call = adk_model_start(agent->model, contents, decls, config,
								  run->stream, emit_partial, &round->pctx,
								  request_memo(run, agent->name, branch),
								  &(AdkCallFor) {
									  run->app, run->user, run->invocation_id,
									  adk_trace_context_for(run->invocation_id)
								  });
	return true;
}

/*
 * The model's answer, through on_model_error and after_model.  NULL when
 * the round failed (an error event is stored).
 */
static Jsonb *
model_response(AdkRun *run, AdkAgent *agent, const char *branch,
			   AdkRound *round)
{
	Jsonb	   *response;
	Jsonb	   *replaced;
	JsonbValue *code;
	int64		tokens_before;

	if (round->call == NULL)
		return round->response; /* before_model answered */
	adk_span_model_finishing(run, round->span);
	response = adk_model_finish_thoughts(round->call, &round->thoughts);
	round->call = NULL;
	adk_span_model_end(run, round->span, response);
	tokens_before = run->out.input_tokens + run->out.output_tokens;
	count_tokens(run, response);
	adk_budget_charge(run, round->taken_at,
					  run->out.input_tokens + run->out.output_tokens - tokens_before);

	code = adk_jsonb_get(&response->root, "error_code");
	if (code != NULL && code->type == jbvString)
	{
		if (!adk_plugins_hook(run, CB_ON_MODEL_ERROR, agent->name, branch,
							  "request", round->request, "error", response, &replaced))
			return NULL;
		if (replaced == NULL)
		{
			adk_emit_error(run, agent->name, branch, adk_jstr(&response->root, "error_code"),
						   adk_jstr(&response->root, "error_message"));
			return NULL;
		}
		response = replaced;
		round->thoughts = NULL;
	}

	if (!adk_plugins_hook(run, CB_AFTER_MODEL, agent->name, branch,
						  "response", response, NULL, NULL, &replaced))
		return NULL;
	if (replaced != NULL)
	{
		/* not the model's answer: its thoughts are not this one's */
		round->thoughts = NULL;
		return replaced;
	}
	return response;
}

/*
 * Step 5 for the event of a model's answer; the thoughts adk.store_thoughts
 * off took out of that answer (NULL: none) are kept with it when it is
 * stored, for the run's next requests (thoughts.c).
 */
static void
emit_model_event(AdkRun *run, Jsonb *event, Jsonb *thoughts)
{
	int64		before = run->last_seq;

	adk_emit(run, event);
	if (thoughts != NULL && run->last_seq != before)
		adk_thoughts_keep(run, run->last_seq, thoughts);
}

static void
emit_partial(Jsonb *partial, void *arg)
{
	PartialCtx *p = (PartialCtx *) arg;
	JsonWriter	w;

	adk_event_start(&w, p->run, p->agent->name, p->branch);
	jw_key(&w, "content");
	jw_value(&w, adk_jsonb_get(&partial->root, "content"));
	jw_key(&w, "partial");
	jw_bool(&w, true);
	jw_end_object(&w);
	adk_emit(p->run, jw_finish(&w));
}

static void
count_tokens(AdkRun *run, Jsonb *response)
{
	JsonbValue *usage = adk_jsonb_get(&response->root, "usage_metadata");
	JsonbValue *v;

	if (usage == NULL || usage->type != jbvBinary)
		return;
	if ((v = adk_jsonb_get(usage->val.binary.data, "prompt_token_count")) != NULL &&
		v->type == jbvNumeric)
		run->out.input_tokens += DatumGetInt64(DirectFunctionCall1(numeric_int8,
															   NumericGetDatum(v->val.numeric)));
	if ((v = adk_jsonb_get(usage->val.binary.data, "candidates_token_count")) != NULL &&
		v->type == jbvNumeric)
		run->out.output_tokens += DatumGetInt64(DirectFunctionCall1(numeric_int8,
																NumericGetDatum(v->val.numeric)));
	/* reasoning is output too (docs/models.md, "Thinking") */
	if ((v = adk_jsonb_get(usage->val.binary.data, "thoughts_token_count")) != NULL &&
		v->type == jbvNumeric)
		run->out.output_tokens += DatumGetInt64(DirectFunctionCall1(numeric_int8,
																NumericGetDatum(v->val.numeric)));
}

/*
 * The function calls of a response, in order.
 */
static List *
response_calls(Jsonb *response)
{
	List	   *result = NIL;
	AdkParts	parts;
	JsonbContainer *part;

	adk_parts_begin(&parts, adk_event_parts(&response->root));
	while (adk_parts_next(&parts, &part))
	{
		JsonbValue *f;
		JsonbValue *a;
		Call	   *c;

		if ((f = adk_jsonb_get(part, "function_call")) == NULL ||
			f->type != jbvBinary)
			continue;
		c = palloc0(sizeof(Call));
		c->id = adk_jstr(f->val.binary.data, "id");
		if (c->id == NULL)
			c->id = adk_new_id("adk-");
		c->name = adk_jstr(f->val.binary.data, "name");
		if (c->name == NULL)
			c->name = "";
		a = adk_jsonb_get(f->val.binary.data, "args");
		c->args = (a && a->type == jbvBinary) ? JsonbValueToJsonb(a) :
			DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum("{}")));
		result = lappend(result, c);
	}
	return result;
}

/*
 * The text parts of a response, concatenated (no thoughts); NULL if none.
 */
static char *
response_text(Jsonb *response)
{
	AdkParts	parts;
	JsonbContainer *part;
	StringInfoData s;
	bool		any = false;

	initStringInfo(&s);
	adk_parts_begin(&parts, adk_event_parts(&response->root));
	while (adk_parts_next(&parts, &part))
	{
		JsonbValue *t;
		JsonbValue *thought = adk_jsonb_get(part, "thought");

		if (thought && thought->type == jbvBool && thought->val.boolean)
			continue;
		if ((t = adk_jsonb_get(part, "text")) != NULL && t->type == jbvString)
		{
			appendBinaryStringInfo(&s, t->val.string.val, t->val.string.len);
			any = true;
		}
	}
	return any ? s.data : NULL;
}

/*
 * The model event: the response's fields (content, usage, finish reason,
 * model version...), the event's own, the long-running call ids, and the
 * output_key state delta on a final answer -- when it is the agent's
 * answer (not one its output schema refused).
 */
static Jsonb *
model_event(AdkRun *run, AdkAgent *agent, const char *branch, Jsonb *response,
			List *calls, List *tools, bool answer)
{
	JsonWriter	w;
	ListCell   *lc;
	char	   *text = NULL;
	bool		any_long = false;
	bool		as_output = false;
	JsonbIterator *it;
	JsonbValue	k;
	JsonbValue	v;
	JsonbIteratorToken tok;

	jw_init(&w);
	jw_begin_object(&w);
	it = JsonbIteratorInit(&response->root);
	while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE)
	{
		char	   *key;

		if (tok != WJB_KEY)
			continue;
		(void) JsonbIteratorNext(&it, &v, true);
		key = pnstrdup(k.val.string.val, k.val.string.len);
		if (strcmp(key, "partial") == 0 || strcmp(key, "id") == 0 ||
			strcmp(key, "author") == 0 || strcmp(key, "invocation_id") == 0 ||
			strcmp(key, "branch") == 0 || strcmp(key, "actions") == 0 ||
			strcmp(key, "long_running_tool_ids") == 0 || strcmp(key, "content") == 0)
			continue;
		jw_key(&w, key);
		jw_value(&w, &v);
	}
	jw_key(&w, "invocation_id");
	jw_string(&w, run->invocation_id);
	jw_key(&w, "author");
	jw_string(&w, agent->name);
	if (branch)
	{
		jw_key(&w, "branch");
		jw_string(&w, branch);
	}
	if (run->scope)
	{
		/* a task agent's: its isolation scope (task_mode.c) */
		jw_key(&w, "isolation_scope");
		jw_string(&w, run->scope);
	}
	jw_key(&w, "content");
	if (calls == NIL)
		jw_value(&w, adk_jsonb_get(&response->root, "content"));
	else
	{
		/* the parts as the model sent them, every call with its id */
		JsonbValue *content = adk_jsonb_get(&response->root, "content");
		JsonbValue *parts = adk_jsonb_get(content->val.binary.data, "parts");
		ListCell   *next = list_head(calls);

		jw_begin_object(&w);
		jw_key(&w, "role");
		jw_string(&w, "model");
		jw_key(&w, "parts");
		jw_begin_array(&w);
		it = JsonbIteratorInit(parts->val.binary.data);
		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		{
			Call	   *c;
			JsonbValue *sig;

			if (tok != WJB_ELEM)
				continue;
			if (v.type != jbvBinary || adk_jsonb_get(v.val.binary.data, "function_call") == NULL)
			{
				jw_value(&w, &v);
				continue;
			}
			c = (Call *) lfirst(next);
			next = lnext(calls, next);
			jw_begin_object(&w);
			jw_key(&w, "function_call");
			jw_begin_object(&w);
			jw_key(&w, "id");
			jw_string(&w, c->id);
			jw_key(&w, "name");
			jw_string(&w, c->name);
			jw_key(&w, "args");
			jw_jsonb(&w, c->args);
			jw_end_object(&w);
			/* Gemini's, sent back on this part (docs/models.md, "Thinking") */
			if ((sig = adk_jsonb_get(v.val.binary.data, "thought_signature")) != NULL)
			{
				jw_key(&w, "thought_signature");
				jw_value(&w, sig);
			}
			jw_end_object(&w);
		}
		jw_end_array(&w);
		jw_end_object(&w);
	}

	foreach(lc, calls)
	{
		AdkTool    *t = adk_find_tool(tools, ((Call *) lfirst(lc))->name);

		if (t && t->long_running)
			any_long = true;
	}
	if (any_long)
	{
		jw_key(&w, "long_running_tool_ids");
		jw_begin_array(&w);
		foreach(lc, calls)
		{
			Call	   *c = (Call *) lfirst(lc);
			AdkTool    *t = adk_find_tool(tools, c->name);

			if (t && t->long_running)
				jw_string(&w, c->id);
		}
		jw_end_array(&w);
	}

	if (calls == NIL && answer && (text = response_text(response)) != NULL)
	{
		/* a single_turn node's output is its last answer (single_turn.c) */
		as_output = adk_node_answer(run, agent, branch, text);
		if (agent->output_key)
		{
			jw_key(&w, "actions");
			jw_begin_object(&w);
			jw_key(&w, "state_delta");
			jw_begin_object(&w);
			jw_key(&w, agent->output_key);
			if (agent->output_schema != NULL)
				jw_jsonb(&w, adk_agent_output_value(agent, text));
			else
				jw_string(&w, text);
			jw_end_object(&w);
			jw_end_object(&w);
		}
	}
	adk_jw_node_info(&w, run, as_output, as_output);
	jw_end_object(&w);
	return jw_finish(&w);
}

/*
 * One function call: built-ins and SQL tools with their plugins; the
 * response object the model will see.  An agent used as a tool is not run
 * here: *agent_tool says which, and NULL is returned.
 */
static Jsonb *
run_call(AdkRun *run, AdkAgent *agent, const char *branch, Call *call,
		 List *tools, AdkAgent **transfer, bool *escalate,
		 AdkAgent **agent_tool, AdkMemoryWait **memory)
{
	AdkTool    *tool;
	AdkAgent   *as_tool;
	Jsonb	   *result;
	JsonWriter	w;

	if (strcmp(call->name, "transfer_to_agent") == 0 &&
		adk_transfer_targets(agent) != NIL)
	{
		char	   *target = adk_jstr(&call->args->root, "agent_name");
		ListCell   *lc;

		foreach(lc, adk_transfer_targets(agent))
		{
			AdkAgent   *t = (AdkAgent *) lfirst(lc);

			if (target && strcmp(t->name, target) == 0)
				*transfer = t;
		}
		if (*transfer == NULL)
			return adk_error_object(psprintf("agent \"%s\" cannot transfer to \"%s\"",
											 agent->name, target ? target : ""));
		/* ADK-Go's empty answer, left out of the event (emit.c) */
		jw_init(&w);
		jw_begin_object(&w);
		jw_end_object(&w);
		return jw_finish(&w);
	}
	if (strcmp(call->name, "exit_loop") == 0 && adk_agent_lists(agent, "exit_loop"))
	{
		*escalate = true;
		jw_init(&w);
		jw_begin_object(&w);
		jw_end_object(&w);
		return jw_finish(&w);
	}
	/* finish_task, a task delegation refused (task_mode.c) */
	if ((result = adk_task_call(run, agent, call->name, call->args)) != NULL)
		return result;
	/* set_model_response (output_schema.c) */
	if ((result = adk_output_call(run, agent, branch, call->name, call->args)) != NULL)
		return result;
	/* a single_turn sub-agent has run as a node (single_turn.c) */
	if ((result = adk_single_turn_result(run, agent, call->id, call->name)) != NULL)
		return result;
	if ((as_tool = adk_find_agent(run, call->name)) != NULL &&
		adk_agent_lists(agent, call->name))
	{
		/* the caller starts its model call with the others' */
		*agent_tool = as_tool;
		return NULL;
	}
	/* load_memory: its query's embedding started, the search waits for it */
	if ((*memory = adk_builtin_load_memory_start(run, agent, call->name, call->args,
												 CurrentMemoryContext)) != NULL)
		return NULL;
	/* load_artifacts, a load_memory without a query (builtin_tools.c) */
	if ((result = adk_builtin_call(run, agent, call->name, call->args)) != NULL)
		return result;

	tool = adk_find_tool(tools, call->name);
	if (tool == NULL)
		return adk_error_object(psprintf("tool \"%s\" is not available to agent \"%s\"",
										 call->name, agent->name));
	/* HITL (hitl.c): note a long-running call; a confirmation asks first */
	if ((tool->long_running || tool->require_confirmation) &&
		(result = adk_hitl_before_tool(run, agent, tool, call->id, call->args)) != NULL)
		return result;

	return adk_call_sql_tool(run, agent, NULL, tool, call->id, call->args);
}

/*
 * An agent used as a tool (AgentTool): one model call of that agent with
 * the request as the only user content; its text is the result -- or, when
 * it has an output schema, the value its text parses to, the schema asked
 * for in the request (output_schema.c).  The exchange is not stored in the
 * session (ADK runs it in a session of its own).  Starts the call (*call)
 * and returns NULL, or returns the error response when there is nothing to
 * call.
 */
static Jsonb *
agent_tool_start(AdkRun *run, AdkAgent *tool_agent, Call *tool_call,
				 AdkModelCall **call, AdkSpanId *agent_span,
				 AdkSpanId *model_span)
{
	Jsonb	   *args = tool_call->args;
	char	   *request = adk_jstr(&args->root, "request");
	JsonWriter	w;
	Jsonb	   *contents;
	Jsonb	   *config;
	char	   *instruction;
	Jsonb	   *error = NULL;

	*call = NULL;
	/* "execute_tool {agent}" of the caller, the agent's own span in it */
	*agent_span = adk_span_agent_tool_begin(run, adk_span_step(run), tool_agent,
											tool_call->id, args);
	if (tool_agent->model == NULL)
		error = adk_error_object(psprintf("agent \"%s\" has no model", tool_agent->name));
	else if (run->out.llm_calls >= run->max_llm_calls)
		error = adk_error_object("max_llm_calls reached");
	if (error != NULL)
	{
		adk_span_agent_tool_end(run, *agent_span, error);
		return error;
	}

	jw_init(&w);
	jw_begin_array(&w);
	adk_jw_text_content(&w, "user",
						request ? request : JsonbToCString(NULL, &args->root, VARSIZE(args)));
	jw_end_array(&w);
	contents = jw_finish(&w);

	instruction = adk_build_instruction(run, tool_agent);
	if (run->instruction_error != NULL)
	{
		char	   *message = run->instruction_error;

		run->instruction_error = NULL;
		error = adk_error_object(psprintf("agent \"%s\" failed: %s", tool_agent->name, message));
		adk_span_agent_tool_end(run, *agent_span, error);
		return error;
	}
	instruction = adk_output_tool_instruction(tool_agent, instruction);
	config = adk_output_config(tool_agent, NULL,
							   adk_request_config(tool_agent, instruction));
	config = adk_prompt_cache_config(run, tool_agent, config);

	run->out.llm_calls++;
	*model_span = adk_span_model_begin(run, *agent_span, tool_agent->model, contents);
	/*
	 * No request memo: an agent-tool's request is one new content, its
	 * request, every time (nothing before it to take as it was).
	 */
	*call = adk_model_start(tool_agent->model, contents, NULL, config, false,
							NULL, NULL, NULL,
							&(AdkCallFor) {
								run->app, run->user, run->invocation_id,
								adk_trace_context_for(run->invocation_id)
							});
	return NULL;
}

/*
 * The agent-tool's answer as its function response: {"result": text}, or,
 * when its output schema applies, the value that fits it or the error
 * (output_schema.c).  Thought parts are not the answer.
 */
static Jsonb *
agent_tool_finish(AdkRun *run, AdkAgent *tool_agent, AdkModelCall *call,
				  AdkSpanId agent_span, AdkSpanId model_span)
{
	Jsonb	   *response;
	JsonbValue *code;
	char	   *text;
	JsonWriter	w;
	Jsonb	   *result;

	adk_span_model_finishing(run, model_span);
	response = adk_model_finish(call);
	adk_span_model_end(run, model_span, response);
	count_tokens(run, response);
	code = adk_jsonb_get(&response->root, "error_code");
	if (code && code->type == jbvString)
		result = adk_error_object(psprintf("agent \"%s\" failed: %s", tool_agent->name,
										   adk_jstr(&response->root, "error_message")));
	else if (adk_output_schema_applies(tool_agent))
		result = adk_output_tool_result(tool_agent, response_text(response));
	else
	{
		text = response_text(response);
		jw_init(&w);
		jw_begin_object(&w);
		jw_key(&w, "result");
		jw_string(&w, text ? text : "");
		jw_end_object(&w);
		result = jw_finish(&w);
	}
	adk_span_agent_tool_end(run, agent_span, result);
	return result;
}
