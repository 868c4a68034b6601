/*-------------------------------------------------------------------------
 *
 * builtin_tools.h
 *	  The artifact and memory built-ins of the runner: load_artifacts,
 *	  load_memory, preload_memory, input blobs saved as artifacts, and
 *	  adding completed invocations to memory.  builtin_tools.c is what the
 *	  flow and the prompt see of them (declarations, dispatch, the
 *	  instruction); each kind's own work is in artifact_tools.h and
 *	  memory_tools.h, included here for the files that use it.
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
#include "runner/artifact_tools.h"
#include "runner/memory_tools.h"
#include "runner/runner.h"

/* tools.c: the declaration of load_artifacts / load_memory; false if not ours */
extern bool adk_builtin_declare(JsonWriter *w, const char *name);

/* flow.c: the response to a call of one of ours the agent lists, or NULL */
extern Jsonb *adk_builtin_call(AdkRun *run, AdkAgent *agent,
							   const char *name, Jsonb *args);

/* prompt.c: what the built-ins add to the system instruction */
extern void adk_builtin_instruction(AdkRun *run, AdkAgent *agent,
									StringInfo out);

#endif							/* ADK_BUILTIN_TOOLS_H */
