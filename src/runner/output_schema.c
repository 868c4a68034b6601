/*-------------------------------------------------------------------------
 *
 * output_schema.c
 *	  Structured output (docs/models.md, "Structured output"): the answer
 *	  of a chat or single_turn agent with an output_schema is a JSON value
 *	  of that schema.  (A task agent's output_schema is finish_task's
 *	  parameters instead: task_mode.c.)
 *
 * The schema is asked for natively -- the request config's
 * response_schema, which the OpenAI adapter sends as a strict json_schema
 * response format and the Gemini adapter as responseSchema with the JSON
 * MIME type -- unless the model cannot combine it with the agent's tools
 * (adk.models.capabilities' output_schema_with_tools, model_def.c) or its
 * provider has no native form (Anthropic).  Then the agent gets ADK's
 * set_model_response tool (ADK Python's SetModelResponseTool and
 * _output_schema_processor): its parameters are the schema (an object
 * schema) or {response: schema}, and a valid call's arguments become the
 * agent's final event, a model event whose text is the value as JSON.
 *
 * Every answer is checked here against the whole schema (schema_check.c).
 * An invalid one goes back to the model -- as the tool's error response,
 * or, for a text answer, as a user-role correction event after the model
 * event (which keeps the text) -- at most ADK_OUTPUT_SCHEMA_RETRIES
 * times in an invocation; the next invalid answer is the error event
 * OUTPUT_SCHEMA_INVALID.  An invalid answer is never the agent's output:
 * only a valid one is written to output_key (as jsonb) or handed back by
 * a single_turn node.
 *
 * An agent with an output schema used as a tool by another (AgentTool,
 * flow.c's agent_tool_start) makes one model call that declares no tools:
 * the schema goes natively for OpenAI and Gemini, and into the system
 * instruction for Anthropic (a set_model_response call would need a
 * forced tool choice, which Anthropic refuses with extended thinking).
 * Its answer is checked the same way: a valid one is the tool's result as
 * ADK Python's AgentTool shapes it (the parsed object, null-valued
 * properties dropped); an invalid one is the function response's error --
 * no second call: the calling model sees the error and may ask again.
 *
 * IDENTIFICATION
 *	  src/runner/output_schema.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/memutils.h"

#include "common/json_writer.h"
#include "common/jsonb_util.h"
#include "model/model_def.h"
#include "runner/runner.h"

#define SET_MODEL_RESPONSE "set_model_response"

/* ADK Python's SetModelResponseTool: its function's docstring */
#define SET_MODEL_RESPONSE_DESCRIPTION \
	"Set your final response using the required output schema. " \
	"Use this tool to provide your final structured answer instead of outputting text directly."

/* ... and the instructions _output_schema_processor adds */
#define TOOL_INSTRUCTION_OBJECT \
	"After completing any needed tool calls, provide your final response " \
	"by calling set_model_response with the required fields."
#define TOOL_INSTRUCTION_OTHER \
	"IMPORTANT: After using any needed tools, you MUST call set_model_response " \
	"to provide your final answer. This is required to complete the task."

static bool by_tool(AdkAgent *agent, bool has_tools);
static bool native_form(AdkAgent *agent);
static Jsonb *as_response(Jsonb *value);
static bool is_object_schema(Jsonb *schema);
static bool decls_have(Jsonb *decls, const char *name);

/*
 * Whether agent's output_schema shapes its answers: a chat or single_turn
 * agent's does.
 */
bool
adk_output_schema_applies(AdkAgent *agent)
{
	return agent->output_schema != NULL && !adk_is_task(agent);
}

/*
 * tools.c: set_model_response's declaration, when the schema goes through
 * it (has_tools: the agent declares other tools).  How many were written.
 */
int
adk_output_declare(JsonWriter *w, AdkAgent *agent, bool has_tools)
{
	if (!adk_output_schema_applies(agent) || !by_tool(agent, has_tools))
		return 0;
	jw_begin_object(w);
	jw_key(w, "name");
	jw_string(w, SET_MODEL_RESPONSE);
	jw_key(w, "description");
	jw_string(w, SET_MODEL_RESPONSE_DESCRIPTION);
	jw_key(w, "parameters");
	if (is_object_schema(agent->output_schema))
		jw_jsonb(w, agent->output_schema);
	else
	{
		/* ADK: a schema that is not a model's fields is one "response" */
		jw_begin_object(w);
		jw_key(w, "type");
		jw_string(w, "object");
		jw_key(w, "properties");
		jw_begin_object(w);
		jw_key(w, "response");
		jw_jsonb(w, agent->output_schema);
		jw_end_object(w);
		jw_key(w, "required");
		jw_begin_array(w);
		jw_string(w, "response");
		jw_end_array(w);
		jw_end_object(w);
	}
	jw_end_object(w);
	return 1;
}

/*
 * The agent's model takes the schema through set_model_response: always
 * for a provider without a native form (Anthropic, whose adapter has
 * none), and when the agent has tools the model cannot combine with a
 * response schema.
 */
static bool
by_tool(AdkAgent *agent, bool has_tools)
{
	AdkModelDef def;

	if (agent->model == NULL)
		return false;			/* the round fails with NO_MODEL */
	adk_load_model(agent->model, &def);
	if (def.provider == LLM_ANTHROPIC)
		return true;
	return has_tools && !def.schema_with_tools;
}

/*
 * Whether the agent's model has a native form of a response schema: not
 * Anthropic's adapter.
 */
static bool
native_form(AdkAgent *agent)
{
	AdkModelDef def;

	if (agent->model == NULL)
		return false;
	adk_load_model(agent->model, &def);
	return def.provider != LLM_ANTHROPIC;
}

/*
 * The request config of a round: with the schema as response_schema (and
 * ADK's JSON MIME type) when it is asked for natively -- when the agent's
 * declarations (decls) have no set_model_response and its provider has a
 * native form.  An agent used as a tool declares none (decls NULL).
 */
Jsonb *
adk_output_config(AdkAgent *agent, Jsonb *decls, Jsonb *config)
{
	JsonWriter	w;

	if (!adk_output_schema_applies(agent) || decls_have(decls, SET_MODEL_RESPONSE) ||
		!native_form(agent))
		return config;
	jw_init(&w);
	jw_begin_object(&w);
	jw_key(&w, "response_mime_type");
	jw_string(&w, "application/json");
	jw_key(&w, "response_schema");
	jw_jsonb(&w, agent->output_schema);
	jw_end_object(&w);
	return adk_jsonb_concat(config, jw_finish(&w));
}

/*
 * The system instruction of a round: ADK's note on set_model_response
 * appended when the agent has the tool.
 */
char *
adk_output_instruction(AdkAgent *agent, Jsonb *decls, char *instruction)
{
	const char *note;

	if (!adk_output_schema_applies(agent) || !decls_have(decls, SET_MODEL_RESPONSE))
		return instruction;
	note = is_object_schema(agent->output_schema) ? TOOL_INSTRUCTION_OBJECT :
		TOOL_INSTRUCTION_OTHER;
	return instruction ? psprintf("%s\n\n%s", instruction, note) : pstrdup(note);
}

/*
 * flow.c's run_call: a set_model_response call of an agent with an output
 * schema -- its response (the value, or {"result": value} when it is not
 * an object, as ADK wraps it) when the value fits; the error response the
 * model sees when it does not.  NULL for any other call.  A valid value
 * is kept for adk_output_final.
 */
Jsonb *
adk_output_call(AdkRun *run, AdkAgent *agent, const char *branch,
				const char *name, Jsonb *args)
{
	Jsonb	   *value = args;
	char	   *problem;
	MemoryContext old;

	if (strcmp(name, SET_MODEL_RESPONSE) != 0 || !adk_output_schema_applies(agent))
		return NULL;
	if (!is_object_schema(agent->output_schema))
	{
		JsonbValue *v = adk_jsonb_get(&args->root, "response");

		if (v == NULL)
			problem = pstrdup("the arguments miss required property \"response\"");
		else
		{
			value = JsonbValueToJsonb(v);
			problem = adk_schema_problem(agent->output_schema, value);
		}
	}
	else
		problem = adk_schema_problem(agent->output_schema, value);
	if (problem != NULL)
	{
		(void) adk_output_retry(run, agent, branch, problem, false, true);
		return adk_error_object(psprintf("the response does not match the output schema: %s",
										 problem));
	}
	old = MemoryContextSwitchTo(run->run_cxt);
	if (run->output_value != NULL)
		pfree(run->output_value);
	run->output_value = DatumGetJsonbPCopy(JsonbPGetDatum(value));
	MemoryContextSwitchTo(old);
	return as_response(value);
}

/*
 * A value as a function response: an object as it is, anything else as
 * {"result": value} (ADK wraps a tool's result that is not a dict so).
 */
static Jsonb *
as_response(Jsonb *value)
{
	JsonbValue	wrapped;

	if (JB_ROOT_IS_OBJECT(value))
		return value;
	if (JB_ROOT_IS_SCALAR(value))
		(void) JsonbExtractScalar(&value->root, &wrapped);
	else
	{
		wrapped.type = jbvBinary;
		wrapped.val.binary.data = &value->root;
		wrapped.val.binary.len = VARSIZE(value) - VARHDRSZ;
	}
	return adk_jsonb_one_value("result", &wrapped);
}

/*
 * flow.c's agent_tool_start: the system instruction of an agent used as a
 * tool.  Without a native form (Anthropic) the schema is in it, so the
 * model knows what to answer; with one, it is as it was.
 */
char *
adk_output_tool_instruction(AdkAgent *agent, char *instruction)
{
	char	   *note;

	if (!adk_output_schema_applies(agent) || native_form(agent))
		return instruction;
	note = psprintf("Answer with only a JSON value, and no other text, that matches this JSON Schema: %s",
					JsonbToCString(NULL, &agent->output_schema->root,
								   VARSIZE(agent->output_schema)));
	return instruction ? psprintf("%s\n\n%s", instruction, note) : note;
}

/*
 * flow.c's agent_tool_finish: the function response of an agent used as a
 * tool, from its answer's text (thought parts excluded; NULL: none), when
 * its output schema applies.  A value of the schema is the result as ADK
 * Python's AgentTool makes it (output_schema.model_validate_json(text)
 * .model_dump(exclude_none=True)): the object without its null-valued
 * properties (jsonb_strip_nulls), a value that is not an object as
 * {"result": value}.  Anything else is the error the calling model sees.
 */
Jsonb *
adk_output_tool_result(AdkAgent *agent, const char *text)
{
	Jsonb	   *value = NULL;
	char	   *problem;

	if (text == NULL)
		problem = pstrdup("the answer has no text");
	else
	{
		value = adk_agent_output_value(agent, text);
		problem = adk_schema_problem(agent->output_schema, value);
	}
	if (problem != NULL)
		return adk_error_object(psprintf("agent \"%s\" answered without matching its output schema: %s",
										 agent->name, problem));
	/* the second argument is PostgreSQL 18's strip_in_arrays; before, unread */
	if (JB_ROOT_IS_OBJECT(value))
		value = DatumGetJsonbP(DirectFunctionCall2(jsonb_strip_nulls,
												   JsonbPGetDatum(value),
												   BoolGetDatum(false)));
	return as_response(value);
}

/*
 * flow.c's assemble_calls, after the calls' responses were stored: a
 * valid set_model_response value becomes the agent's final event (ADK's
 * create_final_model_response_event: a model event with the value's
 * JSON as its text), with output_key's state delta.  false when there is
 * none.
 */
bool
adk_output_final(AdkRun *run, AdkAgent *agent, const char *branch)
{
	JsonWriter	w;
	Jsonb	   *value = run->output_value;
	char	   *text;

	if (value == NULL)
		return false;
	run->output_value = NULL;
	run->output_retries = 0;
	text = JsonbToCString(NULL, &value->root, VARSIZE(value));
	adk_event_start(&w, run, agent->name, branch);
	jw_key(&w, "content");
	adk_jw_text_content(&w, "model", text);
	if (agent->output_key)
	{
		jw_key(&w, "actions");
		jw_begin_object(&w);
		jw_key(&w, "state_delta");
		jw_begin_object(&w);
		jw_key(&w, agent->output_key);
		jw_jsonb(&w, value);
		jw_end_object(&w);
		jw_end_object(&w);
	}
	jw_end_object(&w);
	/* a single_turn node's output is its last answer (single_turn.c) */
	adk_node_answer(run, agent, branch, text);
	adk_emit(run, jw_finish(&w));
	pfree(value);
	return true;
}

/*
 * What is wrong with a final text answer (thought parts excluded; NULL:
 * none) of an agent whose output schema applies; NULL when it fits.
 */
char *
adk_output_problem(AdkAgent *agent, const char *text)
{
	if (text == NULL)
		return pstrdup("the answer has no text");
	return adk_schema_problem(agent->output_schema,
							  adk_agent_output_value(agent, text));
}

/*
 * An answer of agent did not fit its output schema (problem says why):
 * true when the model gets another try -- and when correct, a user-role
 * correction event is stored for it to read (by_tool_now: asking for a
 * set_model_response call, else for JSON); false when the invocation's
 * tries are spent, and the error event OUTPUT_SCHEMA_INVALID is stored.
 */
bool
adk_output_retry(AdkRun *run, AdkAgent *agent, const char *branch,
				 const char *problem, bool correct, bool by_tool_now)
{
	JsonWriter	w;

	if (run->output_retries >= ADK_OUTPUT_SCHEMA_RETRIES)
	{
		adk_emit_error(run, agent->name, branch, "OUTPUT_SCHEMA_INVALID",
					   psprintf("agent \"%s\" answered %d times without matching its output schema: %s",
								agent->name, run->output_retries + 1, problem));
		return false;
	}
	run->output_retries++;
	if (!correct)
		return true;
	adk_event_start(&w, run, agent->name, branch);
	jw_key(&w, "content");
	adk_jw_text_content(&w, "user",
						psprintf("Your answer does not match the required output schema: %s. %s",
								 problem, by_tool_now ?
								 "Call set_model_response with your final answer." :
								 "Answer again with only a JSON value that matches the schema."));
	jw_key(&w, "custom_metadata");
	jw_begin_object(&w);
	jw_key(&w, "adk_output_schema_correction");
	jw_bool(&w, true);
	jw_end_object(&w);
	jw_end_object(&w);
	adk_emit(run, jw_finish(&w));
	return true;
}

/*
 * Whether the agent's declarations have set_model_response: the schema
 * then goes through the tool (adk_output_declare).
 */
bool
adk_output_by_tool(AdkAgent *agent, Jsonb *decls)
{
	return adk_output_schema_applies(agent) && decls_have(decls, SET_MODEL_RESPONSE);
}

static bool
is_object_schema(Jsonb *schema)
{
	char	   *type = adk_jstr(&schema->root, "type");

	return type != NULL && pg_strcasecmp(type, "object") == 0;
}

static bool
decls_have(Jsonb *decls, const char *name)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	if (decls == NULL)
		return false;
	it = JsonbIteratorInit(&decls->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		char	   *n;

		if (tok != WJB_ELEM || v.type != jbvBinary)
			continue;
		n = adk_jstr(v.val.binary.data, "name");
		if (n != NULL && strcmp(n, name) == 0)
			return true;
	}
	return false;
}
