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

/* run.c: at the end of a completed invocation */
extern void adk_builtin_after_run(AdkRun *run);

#endif							/* ADK_BUILTIN_TOOLS_H */
