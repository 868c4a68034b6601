/*-------------------------------------------------------------------------
 *
 * memory_tools.h
 *	  The memory built-ins (memory_tools.c): load_memory, preload_memory,
 *	  and adding completed invocations to memory.
 *
 * IDENTIFICATION
 *	  src/runner/memory_tools.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_MEMORY_TOOLS_H
#define ADK_MEMORY_TOOLS_H

#include "lib/stringinfo.h"
#include "runner/runner.h"

/* the built-ins' names, as an agent lists them among its tools */
#define ADK_LOAD_MEMORY "load_memory"
#define ADK_PRELOAD_MEMORY "preload_memory"

/* builtin_tools.c: load_memory's call, and the memory tools' instruction */
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

#endif							/* ADK_MEMORY_TOOLS_H */
