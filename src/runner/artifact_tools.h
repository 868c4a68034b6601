/*-------------------------------------------------------------------------
 *
 * artifact_tools.h
 *	  The artifact built-ins (artifact_tools.c): load_artifacts, and input
 *	  blobs saved as artifacts.
 *
 * IDENTIFICATION
 *	  src/runner/artifact_tools.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_ARTIFACT_TOOLS_H
#define ADK_ARTIFACT_TOOLS_H

#include "lib/stringinfo.h"
#include "common/json_writer.h"
#include "runner/runner.h"

/* the built-in's name, as an agent lists it among its tools */
#define ADK_LOAD_ARTIFACTS "load_artifacts"

/* builtin_tools.c: load_artifacts' call, and its part of the instruction */
extern Jsonb *adk_artifacts_load_call(Jsonb *args);
extern void adk_artifacts_instruction(AdkRun *run, AdkAgent *agent,
									  StringInfo out);

/* flow.c, run.c: the run scope of artifact saves, and its delta */
extern void adk_builtin_saves_begin(AdkRun *run);
extern List *adk_builtin_saves_end(void);
extern void adk_jw_artifact_delta(JsonWriter *w, List *delta);

/* prompt.c: artifacts loaded by the last event, as contents */
extern void adk_builtin_contents(AdkRun *run, AdkAgent *agent, JsonWriter *w,
								 Jsonb *last_event);

/* run.c: the user's content with its input blobs saved as artifacts */
extern Jsonb *adk_builtin_input_blobs(AdkRun *run, Jsonb *content,
									  List **delta);

#endif							/* ADK_ARTIFACT_TOOLS_H */
