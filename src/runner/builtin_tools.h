/*-------------------------------------------------------------------------
 *
 * builtin_tools.h
 *	  The artifact and memory built-ins of the runner: load_artifacts,
 *	  load_memory, preload_memory, input blobs saved as artifacts, and
 *	  adding completed invocations to memory (builtin_tools.c: what the
 *	  flow and the prompt see; artifact_tools.c and memory_tools.c: each
 *	  kind's own work).
 *
 * IDENTIFICATION
 *	  src/runner/builtin_tools.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_BUILTIN_TOOLS_H
#define ADK_BUILTIN_TOOLS_H

#include "lib/stringinfo.h"
#include "common/json_writer.h"
#include "runner/runner.h"

/* The built-ins' names, as an agent lists them among its tools */
#define ADK_LOAD_ARTIFACTS "load_artifacts"
#define ADK_LOAD_MEMORY "load_memory"
#define ADK_PRELOAD_MEMORY "preload_memory"

/* tools.c: the declaration of load_artifacts / load_memory; false if not ours */
extern bool adk_builtin_declare(JsonWriter *w, const char *name);

/* flow.c: the response to a call of one of ours the agent lists, or NULL */
extern Jsonb *adk_builtin_call(AdkRun *run, AdkAgent *agent,
							   const char *name, Jsonb *args);

/* flow.c, run.c: the run scope of artifact saves, and its delta */
extern void adk_builtin_saves_begin(AdkRun *run);
extern List *adk_builtin_saves_end(void);
extern void adk_jw_artifact_delta(JsonWriter *w, List *delta);

/* prompt.c: what the built-ins add to the system instruction */
extern void adk_builtin_instruction(AdkRun *run, AdkAgent *agent,
									StringInfo out);

/* prompt.c: artifacts loaded by the last event, as contents */
extern void adk_builtin_contents(AdkRun *run, AdkAgent *agent, JsonWriter *w,
								 Jsonb *last_event);

/* run.c: the user's content with its input blobs saved as artifacts */
extern Jsonb *adk_builtin_input_blobs(AdkRun *run, Jsonb *content,
									  List **delta);

/* builtin_tools.c, for artifact_tools.c and memory_tools.c */
typedef struct AdkAppOptions
{
	bool		save_input_blobs;	/* adk.apps.save_input_blobs_as_artifacts */
	bool		add_to_memory;	/* adk.apps.add_to_memory */
} AdkAppOptions;

extern bool adk_builtin_lists(AdkAgent *agent, const char *name);
extern AdkAppOptions adk_builtin_app_options(AdkRun *run);

/* artifact_tools.c, for builtin_tools.c: load_artifacts' call, instruction */
extern Jsonb *adk_artifacts_load_call(Jsonb *args);
extern void adk_artifacts_instruction(AdkRun *run, AdkAgent *agent,
									  StringInfo out);

/* memory_tools.c, for builtin_tools.c: load_memory's call, instructions */
extern Jsonb *adk_memory_load_call(AdkRun *run, Jsonb *args);
extern void adk_memory_instruction(AdkRun *run, AdkAgent *agent,
								   StringInfo out);

/*
 * Memory's embeddings inside a run wait in its steps: one
 * step starts the embedding requests, the run waits (ADK_STEP_WAIT) until
 * adk_memory_ready, and a later step consumes them (adk_memory_finish).
 * The wait lives in its own memory under parent (the step owner's: the
 * run's for adding to memory, the round's for the searches); deleting that
 * stops its requests.
 */
typedef struct AdkMemoryWait AdkMemoryWait;

/*
 * run.c: at the end of a completed invocation, its events added to memory
 * (adk.apps.add_to_memory) -- at once when there are no embeddings to
 * make (NULL), else once they are in.
 */
extern AdkMemoryWait *adk_builtin_after_run(AdkRun *run, MemoryContext parent);

/*
 * flow.c: before a model call of an agent with preload_memory, the user's
 * message embedded for its search (NULL: nothing to wait for).
 */
extern AdkMemoryWait *adk_builtin_preload_start(AdkRun *run, AdkAgent *agent,
												MemoryContext parent);

/*
 * flow.c: a call of load_memory by an agent that lists it, its query being
 * embedded; NULL when it is not one (adk_builtin_call answers it).
 */
extern AdkMemoryWait *adk_builtin_load_memory_start(AdkRun *run,
													AdkAgent *agent,
													const char *name,
													Jsonb *args,
													MemoryContext parent);

extern bool adk_memory_ready(const AdkMemoryWait *w);

/* The wait's work done (load_memory: its response, else NULL); w is gone */
extern Jsonb *adk_memory_finish(AdkMemoryWait *w);
extern void adk_memory_abandon(AdkMemoryWait *w);

#endif							/* ADK_BUILTIN_TOOLS_H */
