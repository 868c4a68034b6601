/*-------------------------------------------------------------------------
 *
 * prompt_sql.c
 *	  adk_prompt(app, user_id, session_id, agent): the request body the
 *	  next model call of a session would send, built as a run builds it
 *	  (prompt.c, tools.c) but not sent.
 *
 * IDENTIFICATION
 *	  src/runner/prompt_sql.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#define json_object pg_json_object_sqlfn
#include "utils/builtins.h"
#undef json_object
#include "fmgr.h"

#include <json-c/json.h>

#include "common/ids.h"
#include "common/json_bridge.h"
#include "common/jsonb_util.h"
#include "model/llm.h"
#include "model/model_def.h"
#include "runner/runner.h"
#include "store/session_read.h"
#include "store/tenancy.h"

PG_FUNCTION_INFO_V1(adk_prompt);

static Jsonb *agent_config(AdkRun *run, AdkAgent *agent, Jsonb *decls);
static Jsonb *request_body(const char *model, Jsonb *contents, Jsonb *tools,
						   Jsonb *config);

/*
 * The generation config of a request of "agent" with its declarations
 * decls, as flow.c builds it (its output schema's too: output_schema.c).
 */
static Jsonb *
agent_config(AdkRun *run, AdkAgent *agent, Jsonb *decls)
{
	char	   *instruction = adk_task_instruction(agent, adk_build_instruction(run, agent));

	if (run->instruction_error != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("the instruction of agent \"%s\" cannot be built", agent->name),
				 errdetail("%s", run->instruction_error)));

	return adk_output_config(agent, decls,
							 adk_request_config(agent,
												adk_output_instruction(agent, decls,
																	   instruction)));
}

/*
 * adk_prompt(app, user_id, session_id, agent): the body the next model
 * call would send.
 */
Datum
adk_prompt(PG_FUNCTION_ARGS)
{
	AdkRun	   *run = palloc0(sizeof(AdkRun));
	AdkAgent   *agent;
	bool		auto_create;
	List	   *tools;
	Jsonb	   *decls;

	run->app = adk_arg_id(fcinfo, 0, "app name");
	run->user = adk_arg_id(fcinfo, 1, "user id");
	run->session = adk_arg_id(fcinfo, 2, "session id");
	run->max_llm_calls = -1;
	run->invocation_id = "";
	run->run_cxt = CurrentMemoryContext;	/* the open task's, if any */
	adk_load_definitions(run, &auto_create);
	if (!adk_session_exists(run->app, run->user, run->session))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("session \"%s\" does not exist for app \"%s\" and user \"%s\"",
						run->session, run->app, run->user)));
	if (!PG_ARGISNULL(3))
	{
		char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(3));

		agent = adk_find_agent(run, name);
		if (agent == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("agent \"%s\" is not part of app \"%s\"", name, run->app)));
	}
	else
		agent = adk_agent_to_run(run, adk_text_content(""));
	/* a workflow agent starts with its first sub-agent */
	while (strcmp(agent->kind, "llm") != 0 && agent->sub_agents != NIL)
		agent = (AdkAgent *) linitial(agent->sub_agents);
	if (strcmp(agent->kind, "llm") != 0 || agent->model == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("agent \"%s\" makes no model calls", agent->name)));

	/*
	 * A task agent whose task is open: the prompt of its next turn, in its
	 * isolation scope -- its input, then its scope's events
	 * (docs/agent-modes.md)
	 */
	if (adk_is_task(agent) && adk_task_active(run) == agent)
		run->scope = run->first_scope;
	tools = agent->tools_loaded ? agent->tool_defs : adk_load_tools(agent);
	decls = adk_tool_declarations(run, agent, tools);
	PG_RETURN_JSONB_P(request_body(agent->model,
								   adk_task_contents(run, adk_build_contents(run, agent, NULL)),
								   decls, agent_config(run, agent, decls)));
}

/*
 * The provider request body for a call, built as generate.c builds it but
 * not sent; the model's key is redacted wherever it appears.
 */
static Jsonb *
request_body(const char *model, Jsonb *contents, Jsonb *tools, Jsonb *config)
{
	AdkModelDef def;
	Jsonb	   *options;
	struct json_object *volatile jcontents = NULL;
	struct json_object *volatile jtools = NULL;
	struct json_object *volatile jconfig = NULL;
	char	   *volatile body = NULL;
	char	   *volatile err = NULL;
	StringInfoData out;

	adk_load_model(model, &def);
	options = config ? adk_jsonb_concat(def.options, config) : def.options;
	PG_TRY();
	{
		LlmRequestSpec spec;
		struct json_object *si;

		jcontents = adk_jsonb_to_jsonc(contents, "contents");
		jtools = tools ? adk_jsonb_to_jsonc(tools, "tools") : NULL;
		jconfig = adk_jsonb_to_jsonc(options, "config");
		memset(&spec, 0, sizeof(spec));
		spec.provider = def.provider;
		spec.model = def.model;
		spec.contents = jcontents;
		spec.tools = jtools;
		spec.config = jconfig;
		spec.stream = false;
		if (json_object_object_get_ex(jconfig, "system_instruction", &si) &&
			json_object_is_type(si, json_type_string))
			spec.system_instruction = json_object_get_string(si);
		{
			char	   *e = NULL;

			body = llm_build_request(&spec, &e);
			err = e;
		}
	}
	PG_FINALLY();
	{
		if (jcontents)
			json_object_put(jcontents);
		if (jtools)
			json_object_put(jtools);
		if (jconfig)
			json_object_put(jconfig);
	}
	PG_END_TRY();
	if (body == NULL)
	{
		char	   *msg = pstrdup(err ? err : "invalid request");

		free(err);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid model request: %s", msg)));
	}
	initStringInfo(&out);
	appendStringInfoString(&out, body);
	free(body);
	if (def.api_key && def.api_key[0] != '\0')
	{
		char	   *p;
		StringInfoData clean;
		size_t		klen = strlen(def.api_key);
		char	   *s = out.data;

		initStringInfo(&clean);
		while ((p = strstr(s, def.api_key)) != NULL)
		{
			appendBinaryStringInfo(&clean, s, p - s);
			appendStringInfoString(&clean, "[REDACTED]");
			s = p + klen;
		}
		appendStringInfoString(&clean, s);
		out = clean;
	}
	return adk_cstring_to_jsonb(out.data);
}
