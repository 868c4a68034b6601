/*-------------------------------------------------------------------------
 *
 * runner.h
 *	  The runner: one invocation of an app's agents for one input, as
 *	  adk_run() runs it.
 *
 * Data flows one way, top to bottom, no file calling one above it:
 * run.c (the order of work; run_entry.c's adk_run and the job worker drive
 * its stepper) -> agents.c (the frame stepper, workflow agents, transfer)
 * -> flow.c (one LLM round: prompt, model call started and consumed, tool
 * calls) -> hitl.c / compaction.c (policy; a summarizer call is started
 * and consumed in steps too: the round waits for tail retention's, the
 * run's end for the sliding window's) -> tools.c / prompt.c / route.c
 * -> emit.c (the one place events leave the runner) -> plugins.c -> defs.c
 * (definitions: loaders and lookups) -> the model layer and the store.
 * The runner reads its session only through the store
 * (store/session_read.c: the row lock and its holder, whether it exists,
 * the history after a seq, the state, the event that made a call, the
 * recent authors, the last reported prompt size) and
 * writes it only through the store (store/append.c, from emit.c); nothing
 * in store/ calls or includes the runner.  A run's memory is its run
 * object's contexts (below); the event in event_data shape is what every
 * step speaks.
 *
 * IDENTIFICATION
 *	  src/runner/runner.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_RUNNER_RUNNER_H
#define ADK_RUNNER_RUNNER_H

#include "access/tupdesc.h"
#include "nodes/pg_list.h"
#include "utils/array.h"
#include "utils/jsonb.h"
#include "datatype/timestamp.h"
#include "utils/tuplestore.h"

/* Plugin callbacks, in adk.plugins column order */
typedef enum AdkCallback
{
	CB_ON_USER_MESSAGE,
	CB_BEFORE_RUN,
	CB_ON_EVENT,
	CB_AFTER_RUN,
	CB_BEFORE_AGENT,
	CB_AFTER_AGENT,
	CB_BEFORE_MODEL,
	CB_AFTER_MODEL,
	CB_BEFORE_TOOL,
	CB_AFTER_TOOL,
	CB_ON_MODEL_ERROR,
	CB_ON_TOOL_ERROR,
	CB_COUNT
} AdkCallback;

typedef struct AdkPlugin
{
	char	   *name;
	Oid			callbacks[CB_COUNT];	/* InvalidOid: not set */
} AdkPlugin;

typedef struct AdkAgent
{
	char	   *name;
	char	   *kind;			/* llm, sequential, parallel, loop */
	char	   *model;			/* own or inherited; NULL: none */
	char	   *instruction;
	char	   *description;
	List	   *tools;			/* char * names */
	List	   *sub_agents;		/* AdkAgent * */
	struct AdkAgent *parent;
	char	   *output_key;
	bool		disallow_transfer_to_parent;
	bool		disallow_transfer_to_peers;
	int			max_iterations; /* 0: unbounded */
	bool		include_contents_none;
	Jsonb	   *generate_config;
	List	   *tool_defs;		/* AdkTool *, once loaded */
	bool		tools_loaded;
	char	   *mode;			/* chat, task, single_turn; NULL: chat */
	Jsonb	   *input_schema;	/* task and single_turn: their tool's
								 * parameters; NULL: {request: string} */
	Jsonb	   *output_schema;	/* ... and the shape of their output */
} AdkAgent;

typedef struct AdkTool
{
	char	   *name;
	Oid			function;
	char	   *description;
	Jsonb	   *parameters;
	bool		long_running;
	bool		require_confirmation;
} AdkTool;

/* One function call of a model response (flow.c) */
typedef struct AdkCall
{
	char	   *id;
	char	   *name;
	Jsonb	   *args;
} AdkCall;

/* A function_response part of the user's message (input.c) */
typedef struct AdkInputResponse
{
	char	   *id;
	Jsonb	   *response;		/* NULL: not an object */
} AdkInputResponse;

/*
 * The user's message of a run, decoded once as the run starts (input.c);
 * route.c, hitl.c and retry.c read it from here, and the content stored
 * for it.
 */
typedef struct AdkInput
{
	Jsonb	   *content;		/* the message, a Content */
	int			nparts;			/* how many parts it has */
	List	   *responses;		/* AdkInputResponse *, with a string id */
	char	   *call_author;	/* the event that made the call the first
								 * response answers: its author ... */
	char	   *call_invocation;	/* ... and invocation; NULL: none */
	Jsonb	   *user_content;	/* the content as stored in the user event
								 * (plugins and input blobs applied) */
} AdkInput;

/*
 * One invocation: the run object.  Its memory, and who owns what:
 *
 * run_cxt, made when the run starts (under the caller's context: adk_run's
 * per-query memory, a job's context in a worker) and deleted with the run
 * (adk_run_free), owns this struct and everything it points to: the
 * definitions' pin (defs.c; the definitions themselves are the cache's),
 * the frames and lanes (agents.c: a frame, and its tool declarations, are
 * freed when it is popped), the model's calls a frame runs next step
 * (flow.c), HITL's, compaction's and the spans' state (each allocates in
 * GetMemoryChunkContext(run)), the error code, and the history read so
 * far (prompt.c's cache, O(what it read), the one part that grows with
 * the session).  adk_run_begin works in run_cxt: what it does happens
 * once per run.
 *
 * step_cxt, a child of run_cxt, is the current memory of every
 * adk_run_step: a step allocates "by the way" there -- the session reads,
 * plugin calls and their function caches, SPI results copied out, JSON
 * temporaries, events built, stored and handed to the sink (the sink
 * copies what it keeps) -- and it is emptied when the step returns (made
 * anew: all of its memory goes back to malloc, so under valgrind a pointer
 * kept past its step is a use after free).  So a run's memory is bounded
 * by its current step, not by how many it made.  Nothing that outlives a
 * step may point into it: what a step hands to a later one is allocated
 * in run_cxt explicitly.
 *
 * What waits for the network has a context of its own under run_cxt,
 * since it outlives the step that started it: half a round in flight
 * (flow.c's AdkRound, with tail retention's summarizer in it), and the
 * sliding window's summarizer at the run's end (compaction.c's
 * AdkCompactionWait, run->waits.ending).  Each goes when the step that
 * consumes its answer is done with it, or when the run is abandoned or
 * freed.
 */
/* an app's settings for the built-in tools */
typedef struct AdkAppOptions
{
	bool		save_input_blobs;	/* adk.apps.save_input_blobs_as_artifacts */
	bool		add_to_memory;	/* adk.apps.add_to_memory */
} AdkAppOptions;

/* What the run runs: the app's definitions (defs.c) */
typedef struct AdkRunDefs
{
	AdkAgent   *root;
	List	   *agents;			/* every AdkAgent of the tree */
	List	   *plugins;		/* AdkPlugin *, in call order */
	AdkAgent   *first_agent;	/* the agent the run started with */
	bool		compaction_configured;	/* adk.apps.compaction is set */
	bool		context_cache;	/* adk.apps.context_cache is enabled */
	AdkAppOptions builtin;		/* the app's settings for the built-in tools */
	int64		version;		/* the definitions' (defs.c) */
	struct AdkCompaction *compaction;	/* the app's settings, once read
										 * (compaction.c) */
} AdkRunDefs;

/* How the invocation goes, and how it ends (its adk.invocations row) */
typedef struct AdkRunOutcome
{
	int			llm_calls;
	bool		failed;
	bool		end_invocation; /* stop everything (failure, early exit) */
	bool		escalated;		/* exit_loop / escalate seen */
	bool		stopped;		/* stopped from outside (run_entry.c) */
	char	   *error_code;
	char	   *error_message;
	int64		input_tokens;
	int64		output_tokens;
	double		store_ms;		/* time spent appending events */
	int			stored_events;
} AdkRunOutcome;

/* What the run's steps wait for, and what those waits left behind */
typedef struct AdkRunWaits
{
	struct AdkCompactionWait *ending;	/* run.c: the end waits for the
										 * sliding window's summary */
	struct AdkMemoryWait *memory_ending;	/* run.c: the end waits for the
											 * new entries' embeddings */
	bool		compacted;		/* tail retention ran: no sliding window */
	bool		compacting;		/* a round waits for tail retention's summary */
	bool		preload_known;	/* instructions search with preload_vector
								 * (else they embed the message themselves) */
	ArrayType  *preload_vector; /* the user's message embedded (NULL:
								 * full-text search alone) */
	struct AdkHitl *hitl;		/* hitl.c: the human's pause / resume
								 * state, or NULL */
	bool		ignored;		/* hitl.c: a repeated answer; nothing runs */
} AdkRunWaits;

/* The run's trace (spans.c) */
typedef struct AdkRunTrace
{
	struct AdkTrace *current;	/* the run's trace, or NULL */
	struct AdkTrace *kept_trace;	/* a job's (adk_span_keep_written) */
	char	   *traceparent;	/* options.traceparent */
} AdkRunTrace;

typedef struct AdkRun
{
	MemoryContext run_cxt;		/* owns this struct and all it points to */
	MemoryContextCallback live_cb;	/* run.c: counts the backend's runs */
	MemoryContext step_cxt;		/* the current step's; emptied after it */

	/* who runs what, and its options */
	char	   *app;
	char	   *user;
	char	   *session;
	char	   *invocation_id;
	int			max_llm_calls;
	bool		stream;
	bool		yield_user_message;
	bool		retried;		/* a queued run's second or later attempt */
	bool		queued;			/* a queued run: each step commits */
	bool		node_rows;		/* run_states.c: it wrote a node's row */

	AdkInput	input;			/* the user's message */
	AdkRunDefs	defs;			/* the definitions it runs */
	AdkRunOutcome out;			/* how it goes and ends */
	AdkRunWaits waits;			/* what its steps wait for */
	AdkRunTrace trace;			/* its spans */

	/* the agents being run, innermost last (agents.c) */
	List	   *frames;
	List	   *nodes;			/* single_turn.c: the sub-agents run as
								 * nodes of this invocation */
	List	   *tasks;			/* task_mode.c: the tasks it ran */
	List	   *node_ends;		/* run_states.c: each node's last event */
	char	   *scope;			/* the isolation scope of the frame being
								 * stepped: its events carry it */
	char	   *node_path;		/* the node path of the frame being stepped:
								 * its events' node_info (emit.c) */
	List	   *wf_nodes;		/* workflow.c: the graph nodes it ran, each
								 * one's path, the node whose edge started
								 * it and its graph's hash: custom_metadata
								 * of its events (emit.c), AdkWfNodeMeta * */
	char	   *first_scope;	/* route.c: the open task the user's
								 * message went to, or NULL */
	List	  **stack;			/* agents.c: the frame stack being stepped */
	List	   *request_memos;	/* flow.c: a request memo per agent and
								 * branch (model/generate.h), in hist_cxt */
	MemoryContext hist_cxt;		/* prompt_carry.c: what it keeps of its
								 * history and requests (history,
								 * request_memos), for the backend's next
								 * run on the session too; NULL: none yet */

	/* prompt.c's */
	Jsonb	   *temp_state;		/* temp: keys of this invocation */
	List	   *history;		/* what it read of its session, in hist_cxt */
	char	   *instruction_error;	/* the instruction cannot be built */

	/* thoughts.c's: the thoughts taken out of its stored events */
	List	   *thoughts;
	int64		last_seq;		/* emit.c: the seq of the last event stored */

	/* output_schema.c's */
	int			output_retries; /* invalid answers sent back so far */
	Jsonb	   *output_value;	/* a valid set_model_response value */

	/* output: every stored (or partial) event goes to the sink */
	void		(*sink) (struct AdkRun *run, Jsonb *event, int64 seq,
						 TimestampTz time, bool partial, void *arg);
	void	   *sink_arg;
} AdkRun;

/*
 * Receives each event of a run as it is stored (seq > 0) or streamed
 * (partial, seq 0).  A background worker commits here.
 */
typedef void (*AdkEventSink) (AdkRun *run, Jsonb *event, int64 seq,
							  TimestampTz time, bool partial, void *arg);

/* What one step of a run did */
typedef enum AdkStepResult
{
	ADK_STEP_RAN,				/* did some work; step again */
	ADK_STEP_WAIT,				/* waits for model calls (a summarizer's
								 * too): adk_http_drive() */
	ADK_STEP_DONE				/* nothing left to run */
} AdkStepResult;

/* run.c: one invocation's steps, for adk_run and for background workers */
extern AdkRun *adk_run_begin(const char *app, const char *user,
							 const char *session, Jsonb *message,
							 Jsonb *state_delta, Jsonb *options,
							 const char *invocation_id, const char *extschema,
							 AdkEventSink sink, void *sink_arg);
extern AdkRun *adk_run_retry(const char *app, const char *user,
							 const char *session, Jsonb *message,
							 Jsonb *state_delta, Jsonb *options,
							 const char *invocation_id, const char *extschema,
							 AdkEventSink sink, void *sink_arg);
extern AdkStepResult adk_run_step(AdkRun *run);
extern bool adk_run_ready(AdkRun *run);
extern void adk_run_abandon(AdkRun *run);
extern void adk_run_free(AdkRun *run);
extern void adk_run_stop(AdkRun *run, const char *code, const char *message);
extern void adk_check_run_options(Jsonb *options);

/* args.c: the SQL entry points' arguments (adk_run, adk_submit, compaction) */
extern Jsonb *adk_message_arg(FunctionCallInfo fcinfo, int argno, bool is_text);
extern char *adk_arg_id(FunctionCallInfo fcinfo, int n, const char *what);

/* retry.c: where a retried queued run goes on */
typedef struct AdkRetryPoint
{
	Jsonb	   *user_content;	/* the stored user event's content */
	AdkAgent   *agent;			/* the agent that goes on; NULL: none */
	char	   *branch;			/* ... on its branch */
	List	   *calls;			/* ... running these calls first */
	char	   *scope;			/* ... in this task's isolation scope */
	char	   *error_code;		/* the turn ended with an error event */
	char	   *error_message;
} AdkRetryPoint;

extern bool adk_retry_point(AdkRun *run, AdkRetryPoint *p);

/* parts.c: reading the runner's JSON */
typedef struct AdkParts
{
	JsonbIterator *it;
} AdkParts;

extern char *adk_jstr(JsonbContainer *c, const char *key);
extern JsonbContainer *adk_content_parts(JsonbContainer *content);
extern JsonbContainer *adk_event_parts(JsonbContainer *event);
extern void adk_parts_begin(AdkParts *p, JsonbContainer *parts);
extern bool adk_parts_next(AdkParts *p, JsonbContainer **part);

/* input.c: the user's message, decoded once */
extern void adk_input_decode(AdkInput *in, Jsonb *message);
extern void adk_input_find_call(AdkRun *run);

/* route.c: which agent handles the input */
extern AdkAgent *adk_agent_for_input(AdkRun *run);
extern AdkAgent *adk_agent_to_run(AdkRun *run, Jsonb *message);

/* emit.c: the one place events leave the runner */
struct JsonWriter;
struct AdkStoredEvent;
extern void adk_jw_text_content(struct JsonWriter *w, const char *role,
								const char *text);
extern void adk_jw_function_response(struct JsonWriter *w, const char *id,
									 const char *name, Jsonb *response);
extern void adk_jw_node_info(struct JsonWriter *w, AdkRun *run,
							 bool output_for, bool message_as_output);
extern void adk_event_start_node(struct JsonWriter *w, AdkRun *run,
								 const char *author, const char *branch,
								 bool output_for);
extern void adk_event_start(struct JsonWriter *w, AdkRun *run,
							const char *author, const char *branch);
extern void adk_emit(AdkRun *run, Jsonb *event);
extern struct AdkWfNodeMeta *adk_node_meta(AdkRun *run, const char *path);
extern bool adk_emit_error(AdkRun *run, const char *author, const char *branch,
						   const char *code, const char *message);
extern char *adk_new_id(const char *prefix);
extern Jsonb *adk_text_content(const char *text);
extern Jsonb *adk_error_object(const char *message);
extern void adk_store_timed(AdkRun *run, Jsonb *event,
							struct AdkStoredEvent *stored);
extern void adk_put_row(AdkRun *run, struct AdkStoredEvent *stored,
						bool partial);
extern char *adk_event_unstorable(Jsonb *event, const char **code);

/* thoughts.c: thoughts not stored, sent back within the run */
extern void adk_thoughts_keep(AdkRun *run, int64 seq, Jsonb *taken);
extern Jsonb *adk_thoughts_restore(AdkRun *run, int64 seq, Jsonb *event);
extern Jsonb *adk_contents_without_thoughts(Jsonb *contents);
extern bool adk_plugins_hook(AdkRun *run, AdkCallback cb, const char *agent,
							 const char *branch, const char *key1,
							 Jsonb *value1, const char *key2, Jsonb *value2,
							 Jsonb **result);

/* defs.c: definitions, their loaders and lookups */
extern void adk_load_definitions(AdkRun *run, bool *auto_create);
extern void adk_load_agents(AdkRun *run, const char *root_name);
extern AdkAgent *adk_find_agent(AdkRun *run, const char *name);
extern List *adk_transfer_targets(AdkAgent *agent);
extern List *adk_load_tools(AdkAgent *agent);
extern bool adk_agent_lists(AdkAgent *agent, const char *name);

extern AdkAppOptions adk_app_builtin_options(AdkRun *run);

/* agents.c */
extern void adk_push_agent(AdkRun *run, AdkAgent *agent, const char *branch);
extern void adk_push_agent_at_calls(AdkRun *run, AdkAgent *agent,
									const char *branch, List *calls);

extern AdkStepResult adk_agent_step(AdkRun *run);
extern void adk_agent_abandon(AdkRun *run);
extern bool adk_agent_ready(AdkRun *run);

/* flow.c */
typedef enum AdkRoundResult
{
	ROUND_WAIT,					/* model calls in flight */
	ROUND_AGAIN,
	ROUND_CALLS,
	ROUND_TRANSFER,
	ROUND_DONE
} AdkRoundResult;

extern bool adk_llm_begin(AdkRun *run, AdkAgent *agent, const char *branch,
						  List **tools, Jsonb **decls);
typedef struct AdkRound AdkRound;	/* half a round in flight (flow.c) */

extern AdkRoundResult adk_llm_round_start(AdkRun *run, AdkAgent *agent,
										  const char *branch, List *tools,
										  Jsonb *decls, AdkRound **round);
extern AdkRoundResult adk_llm_round_finish(AdkRun *run, AdkAgent *agent,
										   const char *branch, List *tools,
										   AdkRound *round, List **calls);
extern AdkRoundResult adk_llm_calls_start(AdkRun *run, AdkAgent *agent,
										  const char *branch, List *tools,
										  List *calls, AdkRound **round,
										  AdkAgent **transfer_to);
extern AdkRoundResult adk_llm_calls_finish(AdkRun *run, AdkAgent *agent,
										   const char *branch, List *tools,
										   List *calls, AdkRound *round,
										   AdkAgent **transfer_to);
extern bool adk_round_ready(const AdkRound *round);
extern void adk_round_abandon(AdkRound *round);
extern void adk_llm_free_calls(List *calls);
extern List *adk_llm_event_calls(Jsonb *event);

/* prompt_carry.c */
extern MemoryContext adk_hist_cxt(AdkRun *run);
extern void adk_hist_carry_take(AdkRun *run);
extern void adk_hist_carry_keep(AdkRun *run);

/* prompt.c */
extern Jsonb *adk_build_contents(AdkRun *run, AdkAgent *agent,
								 const char *branch);

/* prompt_instruction.c */
extern char *adk_build_instruction(AdkRun *run, AdkAgent *agent);
extern Jsonb *adk_request_config(AdkAgent *agent, const char *instruction);
extern Jsonb *adk_prompt_cache_config(AdkRun *run, AdkAgent *agent,
									  Jsonb *config);

/* tools.c */
extern AdkTool *adk_load_tool(const char *name);
extern AdkTool *adk_find_tool(List *tools, const char *name);
extern Jsonb *adk_tool_declarations(AdkRun *run, AdkAgent *agent,
									List *tools);
extern Jsonb *adk_tool_call(AdkTool *tool, Jsonb *args, char **error);
extern Jsonb *adk_call_sql_tool(AdkRun *run, AdkAgent *agent, const char *branch,
								AdkTool *tool, const char *call_id, Jsonb *args);

/* plugins.c */
extern List *adk_load_plugins(ArrayType *names);
extern bool adk_plugins_have(AdkRun *run, AdkCallback cb);
extern Jsonb *adk_plugins_call(AdkRun *run, AdkCallback cb, Jsonb *context,
							   char **error);
extern Jsonb *adk_plugin_context(AdkRun *run, AdkCallback cb,
								 const char *agent, const char *key1,
								 Jsonb *value1, const char *key2,
								 Jsonb *value2);

/* run_states.c: a node's row in adk.run_states, as the node starts */
extern void adk_node_start(AdkRun *run, const char *path, const char *agent,
						   bool first);
extern void adk_node_start_input(AdkRun *run, const char *path,
								 const char *agent, Jsonb *input);
extern void adk_node_start_workflow(AdkRun *run, const char *path,
									const char *agent, Jsonb *input,
									const char *triggered_by,
									const char *branch,
									const char *graph_hash);
extern void adk_node_event(AdkRun *run, Jsonb *event, TimestampTz time);
extern bool adk_node_ends(AdkRun *run, Datum *paths, Datum *agents,
						  Datum *times, Datum *errors, Datum *branches);
extern Datum adk_node_paths(AdkRun *run, List *more);

/* hitl.c: human in the loop -- long-running tools, confirmation, run_states */
extern Jsonb *adk_hitl_plain_text(AdkRun *run, Jsonb *message);
extern char *adk_hitl_begin(AdkRun *run, char *candidate, bool explicit_id);
extern const char *adk_hitl_resumed_node(AdkRun *run, const char **agent);
extern bool adk_hitl_resume_flow(AdkRun *run, AdkAgent *agent,
								 const char *branch, List *tools);
extern Jsonb *adk_hitl_before_tool(AdkRun *run, AdkAgent *agent, AdkTool *tool,
								   const char *call_id, Jsonb *args);
extern Jsonb *adk_hitl_requested_confirmations(AdkRun *run);
extern bool adk_hitl_pause(AdkRun *run, AdkAgent *agent, const char *branch);
extern void adk_hitl_stop(AdkRun *run);
extern void adk_hitl_involve(AdkRun *run);
extern bool adk_hitl_end(AdkRun *run, bool *refreshed);

/*
 * single_turn.c: single_turn sub-agents, run as a node of their
 * coordinator's call (docs/agent-modes.md)
 */
struct JsonWriter;
extern bool adk_agent_is_chat(AdkAgent *agent);
extern bool adk_is_single_turn(AdkAgent *coordinator, const char *name);
extern int	adk_single_turn_declare(struct JsonWriter *w, AdkAgent *coordinator);
/*
 * workflow.c: a graph workflow agent, stepped by its frame (agents.c).
 * Its scheduler's state lives in the memory context the frame gives it,
 * and goes with the frame.  A step runs one ready activation: a function,
 * tool or join node inline (WF_RAN), or an agent node handed back
 * (WF_AGENT) for agents.c to run in a lane of its own -- an agent node,
 * or a nested workflow node, whose lane is a workflow frame with the node
 * as its caller; adk_workflow_agent_done completes it with the agent's
 * last answer, or the nested workflow's output.  WF_IDLE: nothing ready
 * now -- and while adk_workflow_retrying, a node waits for its next
 * attempt's time: the frame waits (ADK_STEP_WAIT), it is not over.
 */
typedef struct AdkWorkflow AdkWorkflow;
/* A graph node's custom_metadata, by its node path (AdkRun.wf_nodes) */
typedef struct AdkWfNodeMeta
{
	char	   *path;
	char	   *triggered_by;	/* NULL: none */
	char	   *graph_hash;		/* NULL: none */
} AdkWfNodeMeta;
typedef struct AdkWfAgentNode
{
	AdkAgent   *agent;
	const char *path;			/* <workflow>/<node>@<n>: its node path */
	const char *branch;			/* its lane's branch */
	bool		chat;			/* a chat agent: no node branch, no input */
	Jsonb	   *content;		/* the user content it starts from; a
								 * nested workflow's: its input */
	void	   *activation;		/* workflow.c's */
	Jsonb	   *output;			/* a nested workflow's, as it ends */
	bool		paused;			/* ... it waits for human input */
} AdkWfAgentNode;
typedef enum AdkWfStep
{
	WF_RAN,
	WF_AGENT,
	WF_IDLE
} AdkWfStep;
extern AdkWorkflow *adk_workflow_begin(AdkRun *run, AdkAgent *agent,
									   const char *branch,
									   AdkWfAgentNode *caller,
									   MemoryContext cxt);
extern AdkWfStep adk_workflow_step(AdkWorkflow *wf, AdkWfAgentNode **node);
extern bool adk_workflow_ready(AdkWorkflow *wf);
extern bool adk_workflow_retrying(AdkWorkflow *wf);
extern void adk_workflow_agent_done(AdkWorkflow *wf, AdkWfAgentNode *node,
									const char *text);
extern void adk_workflow_end(AdkWorkflow *wf);
extern void adk_workflow_failed(AdkWorkflow *wf);
extern bool adk_is_graph(AdkAgent *agent);
extern void adk_node_open(AdkRun *run, AdkWfAgentNode *node);
extern char *adk_node_output(AdkRun *run, AdkWfAgentNode *node);

extern bool adk_single_turn_next(AdkRun *run, AdkAgent *coordinator,
								 List *calls, AdkAgent **child,
								 const char **branch);
extern Jsonb *adk_single_turn_result(AdkRun *run, AdkAgent *coordinator,
									 const char *call_id, const char *name);
extern bool adk_is_node_branch(const char *branch);
extern Jsonb *adk_node_contents(AdkRun *run, const char *branch,
								Jsonb *contents);
extern bool adk_node_event_visible(AdkRun *run, const char *branch,
								   Jsonb *event);
extern bool adk_node_answer(AdkRun *run, AdkAgent *agent, const char *branch,
							const char *text);
extern Jsonb *adk_agent_output_value(AdkAgent *agent, const char *text);

/* task_mode.c: task sub-agents, each in an isolation scope */
extern bool adk_is_task(AdkAgent *agent);
extern int	adk_task_declare(struct JsonWriter *w, AdkAgent *agent);
extern bool adk_task_next(AdkRun *run, AdkAgent *coordinator, List **calls,
						  AdkAgent **child, char **scope);
extern Jsonb *adk_task_call(AdkRun *run, AdkAgent *agent, const char *name,
							Jsonb *args);
extern Jsonb *adk_task_output(AdkRun *run);
extern bool adk_task_end(AdkRun *run, AdkAgent *agent, const char *scope);
extern char *adk_task_instruction(AdkAgent *agent, char *instruction);
extern Jsonb *adk_task_contents(AdkRun *run, Jsonb *contents);
extern AdkAgent *adk_task_active(AdkRun *run);
extern AdkAgent *adk_task_resumed(AdkRun *run, const char *path,
								  const char *agent);
extern void adk_task_retry(AdkRun *run, AdkAgent *agent, const char *scope);
extern void adk_task_check_answers(AdkRun *run);

/* schema_check.c: arguments against a task or single_turn agent's schema */
extern char *adk_schema_check(Jsonb *schema, Jsonb *args);
extern char *adk_schema_problem(Jsonb *schema, Jsonb *value);
extern char *adk_output_args_check(Jsonb *schema, Jsonb *args);

/*
 * output_schema.c: structured output of chat and single_turn agents.  How
 * many invalid answers of an invocation go back to the model before the
 * next one is the error OUTPUT_SCHEMA_INVALID (docs/models.md).
 */
#define ADK_OUTPUT_SCHEMA_RETRIES 2
extern bool adk_output_schema_applies(AdkAgent *agent);
extern int	adk_output_declare(struct JsonWriter *w, AdkAgent *agent,
							   bool has_tools);
extern Jsonb *adk_output_config(AdkAgent *agent, Jsonb *decls, Jsonb *config);
extern char *adk_output_instruction(AdkAgent *agent, Jsonb *decls,
									char *instruction);
extern Jsonb *adk_output_call(AdkRun *run, AdkAgent *agent, const char *branch,
							  const char *name, Jsonb *args);
extern bool adk_output_final(AdkRun *run, AdkAgent *agent, const char *branch);
extern char *adk_output_problem(AdkAgent *agent, const char *text);
extern bool adk_output_retry(AdkRun *run, AdkAgent *agent, const char *branch,
							 const char *problem, bool correct, bool by_tool_now);
extern bool adk_output_by_tool(AdkAgent *agent, Jsonb *decls);
extern char *adk_output_tool_instruction(AdkAgent *agent, char *instruction);
extern Jsonb *adk_output_tool_result(AdkAgent *agent, const char *text);
extern Jsonb *adk_delegation_error(AdkAgent *agent, Jsonb *args, MemoryContext keep);

/* subxact.c */
typedef void (*AdkGuardedFn) (void *arg);
extern bool adk_run_guarded(AdkGuardedFn fn, void *arg, char **error);

#endif							/* ADK_RUNNER_RUNNER_H */
