/*-------------------------------------------------------------------------
 *
 * builtin_tools.h
 *	  The artifact and memory built-ins of the runner: load_artifacts,
 *	  load_memory, preload_memory, input blobs saved as artifacts, and
 *	  adding completed invocations to memory.
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

/*
 * Memory's embeddings inside a run wait in its steps (issue 12 §2): one
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
