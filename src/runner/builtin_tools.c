/*-------------------------------------------------------------------------
 *
 * builtin_tools.c
 *	  The built-in tools of the runner, as ADK Python has them, seen from
 *	  the flow and the prompt: which of them an agent lists, their
 *	  declarations, a call dispatched to its file, and what they add to the
 *	  system instruction.  The artifact tools are in artifact_tools.c, the
 *	  memory tools in memory_tools.c.
 *
 *	- load_artifacts (LoadArtifactsTool) and load_memory (LoadMemoryTool)
 *	  are declared to the model;
 *	- preload_memory (PreloadMemoryTool) declares nothing: the model never
 *	  calls it.
 *
 * IDENTIFICATION
 *	  src/runner/builtin_tools.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "common/jsonb_util.h"
#include "common/spi_plans.h"
#include "runner/builtin_tools.h"
#include "common/owner.h"

/*
 * The declarations of load_artifacts and load_memory (ADK Python's); true
 * when one was written.  preload_memory declares nothing: the model never
 * calls it.
 */
bool
adk_builtin_declare(JsonWriter *w, const char *name)
{
	const char *param;
	const char *param_type;
	const char *description;

	if (strcmp(name, ADK_LOAD_ARTIFACTS) == 0)
	{
		description = "Loads the artifacts and adds them to the session.";
		param = "artifact_names";
		param_type = "array";
	}
	else if (strcmp(name, ADK_LOAD_MEMORY) == 0)
	{
		description = "Loads the memory for the current user.";
		param = "query";
		param_type = "string";
	}
	else
		return false;

	jw_begin_object(w);
	jw_key(w, "name");
	jw_string(w, name);
	jw_key(w, "description");
	jw_string(w, description);
	jw_key(w, "parameters");
	jw_begin_object(w);
	jw_key(w, "type");
	jw_string(w, "object");
	jw_key(w, "properties");
	jw_begin_object(w);
	jw_key(w, param);
	jw_begin_object(w);
	jw_key(w, "type");
	jw_string(w, param_type);
	if (strcmp(param_type, "array") == 0)
	{
		jw_key(w, "items");
		jw_begin_object(w);
		jw_key(w, "type");
		jw_string(w, "string");
		jw_end_object(w);
	}
	jw_end_object(w);
	jw_end_object(w);
	jw_key(w, "required");
	jw_begin_array(w);
	jw_string(w, param);
	jw_end_array(w);
	jw_end_object(w);
	jw_end_object(w);
	return true;
}

/*
 * A call of load_artifacts or load_memory by an agent that lists it: the
 * function response.  NULL when the name is not one of ours.
 */
Jsonb *
adk_builtin_call(AdkRun *run, AdkAgent *agent, const char *name, Jsonb *args)
{
	if (strcmp(name, ADK_LOAD_ARTIFACTS) == 0 && adk_agent_lists(agent, ADK_LOAD_ARTIFACTS))
		return adk_artifacts_load_call(args);
	if (strcmp(name, ADK_LOAD_MEMORY) == 0 && adk_agent_lists(agent, ADK_LOAD_MEMORY))
		return adk_memory_load_call(run, args);
	return NULL;
}


/*
 * The built-ins' part of the system instruction, appended to out.
 */
void
adk_builtin_instruction(AdkRun *run, AdkAgent *agent, StringInfo out)
{
	adk_artifacts_instruction(run, agent, out);
	adk_memory_instruction(run, agent, out);
}
