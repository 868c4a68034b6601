/*-------------------------------------------------------------------------
 *
 * runner.h
 *	  The runner: one invocation of an app's agents for one input, as
 *	  adk_run() runs it.
 *
 * Data flows one way: run.c (order of work, SPEC §5) -> agents.c (which
 * agent, workflow agents, transfer) -> flow.c (the LLM flow: prompt, model
 * call, tool calls) -> prompt.c / tools.c / plugins.c -> the model layer
 * and the session store.  Everything is palloc'd in the invocation's
 * memory context; the event in event_data shape is what every step speaks.
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

/* One invocation */
typedef struct AdkRun
{
	char	   *app;
	char	   *user;
	char	   *session;
	char	   *invocation_id;
	AdkAgent   *root;
	List	   *agents;			/* every AdkAgent of the tree */
	List	   *plugins;		/* AdkPlugin *, in call order */
	int			max_llm_calls;
	int			llm_calls;
	bool		stream;
	bool		yield_user_message;
	Jsonb	   *user_content;
	Jsonb	   *temp_state;		/* temp: keys of this invocation */
	struct AdkHitl *hitl;		/* hitl.c: pause / resume state, or NULL */
	bool		ignored;		/* hitl.c: a repeated answer; nothing runs */
	char	   *instruction_error;	/* prompt.c: the instruction cannot be built */

	/* outcome */
	bool		failed;
	bool		end_invocation; /* stop everything (failure, early exit) */
	bool		escalated;		/* exit_loop / escalate seen */
	bool		stopped;		/* the caller stopped reading (adk_run) */
	char	   *error_code;
	char	   *error_message;
	int64		input_tokens;
	int64		output_tokens;
	double		store_ms;		/* time spent appending events */
	int			stored_events;

	/* compaction.c */
	bool		compaction_configured;	/* adk.apps.compaction is set */
	struct AdkCompaction *compaction;	/* the app's settings, once read */
	bool		compacted;		/* tail retention ran: no sliding window */

	/* the agents being run, innermost last (agents.c) */
	List	   *frames;
	AdkAgent   *first_agent;	/* the agent the run started with */

	/* spans.c: the run's trace, or NULL; options.traceparent */
	struct AdkTrace *trace;
	char	   *traceparent;

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

/* run.c: one invocation, for adk_run and for background workers */
extern void adk_execute_run(const char *app, const char *user,
							const char *session, Jsonb *message,
							Jsonb *state_delta, Jsonb *options,
							const char *invocation_id, const char *extschema,
							AdkEventSink sink, void *sink_arg);
extern Jsonb *adk_text_content(const char *text);
extern Jsonb *adk_message_arg(FunctionCallInfo fcinfo, int argno, bool is_text);

/* run.c */
struct JsonWriter;
extern void adk_jw_function_response(struct JsonWriter *w, const char *id,
									 const char *name, Jsonb *response);
extern void adk_event_start(struct JsonWriter *w, AdkRun *run,
							const char *author, const char *branch);
extern void adk_emit(AdkRun *run, Jsonb *event);
extern bool adk_emit_error(AdkRun *run, const char *author, const char *branch,
						   const char *code, const char *message);
extern char *adk_new_id(const char *prefix);
extern char *adk_event_unstorable(Jsonb *event, const char **code);
extern void adk_check_run_options(Jsonb *options);

/* defs.c */
extern void adk_load_definitions(AdkRun *run, bool *auto_create);

/* agents.c */
extern void adk_load_agents(AdkRun *run, const char *root_name);
extern AdkAgent *adk_find_agent(AdkRun *run, const char *name);
extern AdkAgent *adk_agent_to_run(AdkRun *run, Jsonb *message);
extern char *adk_first_response_id(Jsonb *content);
extern bool adk_find_call_event(AdkRun *run, const char *call_id,
								char **author, char **invocation_id);
extern void adk_push_agent(AdkRun *run, AdkAgent *agent, const char *branch);
extern bool adk_agent_step(AdkRun *run);
extern List *adk_transfer_targets(AdkAgent *agent);

/* flow.c */
typedef enum AdkRoundResult
{
	ROUND_AGAIN,
	ROUND_CALLS,
	ROUND_TRANSFER,
	ROUND_DONE
} AdkRoundResult;

extern bool adk_llm_begin(AdkRun *run, AdkAgent *agent, const char *branch,
						  List **tools, Jsonb **decls);
extern AdkRoundResult adk_llm_round(AdkRun *run, AdkAgent *agent,
									const char *branch, List *tools,
									Jsonb *decls, List **calls);
extern AdkRoundResult adk_llm_run_calls(AdkRun *run, AdkAgent *agent,
										const char *branch, List *tools,
										List *calls, AdkAgent **transfer_to);
extern void adk_llm_free_calls(List *calls);
extern Jsonb *adk_call_sql_tool(AdkRun *run, AdkAgent *agent, const char *branch,
								AdkTool *tool, const char *call_id, Jsonb *args);

/* prompt.c */
extern Jsonb *adk_build_contents(AdkRun *run, AdkAgent *agent,
								 const char *branch);
extern char *adk_build_instruction(AdkRun *run, AdkAgent *agent);

/* tools.c */
extern List *adk_load_tools(AdkAgent *agent);
extern Jsonb *adk_tool_declarations(AdkRun *run, AdkAgent *agent,
									List *tools);
extern Jsonb *adk_tool_call(AdkTool *tool, Jsonb *args, char **error);

/* plugins.c */
extern List *adk_load_plugins(ArrayType *names);
extern bool adk_plugins_have(AdkRun *run, AdkCallback cb);
extern Jsonb *adk_plugins_call(AdkRun *run, AdkCallback cb, Jsonb *context,
							   char **error);
extern bool adk_plugins_hook(AdkRun *run, AdkCallback cb, const char *agent,
							 const char *branch, const char *key1,
							 Jsonb *value1, const char *key2, Jsonb *value2,
							 Jsonb **result);
extern Jsonb *adk_plugin_context(AdkRun *run, AdkCallback cb,
								 const char *agent, const char *key1,
								 Jsonb *value1, const char *key2,
								 Jsonb *value2);

/* hitl.c: human in the loop -- long-running tools, confirmation, run_states */
extern char *adk_hitl_begin(AdkRun *run, Jsonb *message, char *candidate,
							bool explicit_id);
extern bool adk_hitl_resume_flow(AdkRun *run, AdkAgent *agent,
								 const char *branch, List *tools);
extern Jsonb *adk_hitl_before_tool(AdkRun *run, AdkAgent *agent, AdkTool *tool,
								   const char *call_id, Jsonb *args);
extern Jsonb *adk_hitl_requested_confirmations(AdkRun *run);
extern bool adk_hitl_pause(AdkRun *run, AdkAgent *agent, const char *branch);
extern bool adk_hitl_end(AdkRun *run);

/* subxact.c */
typedef void (*AdkGuardedFn) (void *arg);
extern bool adk_run_guarded(AdkGuardedFn fn, void *arg, char **error);

#endif							/* ADK_RUNNER_RUNNER_H */
