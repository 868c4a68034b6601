/*-------------------------------------------------------------------------
 *
 * task_mode.c
 *	  Task sub-agents (docs/agent-modes.md): a chat coordinator delegates
 *	  to one with a tool named as it (ADK-Go's TaskAgentTool); the task
 *	  agent works in an isolation scope -- the delegating call's id -- until
 *	  it calls finish_task (ADK-Go's FinishTaskTool), across as many of the
 *	  user's turns as it needs; its output is then the delegating call's
 *	  function response, and the coordinator goes on.
 *
 * A task agent's events carry isolation_scope (emit.c writes the stepped
 * frame's, run->scope); its prompt is its input -- the delegating call's
 * request, or its arguments as JSON with an input_schema -- and then the
 * events of its scope alone (hist_event.c), so it never sees its
 * coordinator's delegation call.  A turn that ends without a successful
 * finish_task leaves the scope open: the user's next message inherits it
 * (route.c asks adk._active_task, one indexed query on adk.active_tasks)
 * and goes to the task agent.  A successful finish_task closes it: its
 * response event carries the output, and the coordinator's call gets the
 * output as its response -- an event of author "user", once, in the
 * transaction of that turn -- after which the coordinator runs again, in
 * the same invocation.
 *
 * IDENTIFICATION
 *	  src/runner/task_mode.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type_d.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "common/json_bridge.h"
#include "common/json_writer.h"
#include "common/jsonb_util.h"
#include "common/owner.h"
#include "common/spi_plans.h"
#include "runner/runner.h"
#include "store/append.h"

/* ADK-Go's strings (internal/workflowinternal) */
#define TASK_TOOL_NOTE "\nIMPORTANT: This tool delegates execution to a specialized agent. Do NOT call this tool in parallel with any other tools."
#define TASK_REQUEST_DESCRIPTION "Detailed instructions or context for the task sub-agent."
#define FINISH_TASK "finish_task"
#define FINISH_DESCRIPTION "Signal that this agent has completed its delegated task. Call this when you have finished your delegated task."
#define FINISH_SCHEMA_NOTE " Pass the required output data in the parameters."
#define FINISH_RESULT_DESCRIPTION "A brief summary of what the agent accomplished."
#define FINISH_SUCCESS "Task completed."
#define FINISH_INSTRUCTION \
	"Do NOT call 'finish_task' prematurely. Use your available tools to\n" \
	"fully complete every aspect of the delegated task first. If the\n" \
	"task is unclear, ask the user for clarification before proceeding.\n" \
	"Once the task is fully complete, call 'finish_task' by itself with\n" \
	"no accompanying text output."

/* One task of the invocation (AdkRun.tasks) */
typedef struct AdkTask
{
	char	   *scope;			/* the delegating call's id */
	AdkAgent   *agent;
	Jsonb	   *input;			/* the user content its prompt starts with */
	Jsonb	   *error;			/* the delegation's arguments did not fit */
	Jsonb	   *output;			/* finish_task's, once it succeeded */
	bool		finished;
	bool		output_written; /* on finish_task's response event */
	bool		ended;			/* its frame is done */
} AdkTask;

static AdkTask *find_task(AdkRun *run, const char *scope, bool create);
static AdkAgent *task_sub_agent(AdkAgent *coordinator, const char *name);
static AdkAgent *go_on(AdkRun *run, const char *scope, const char *name);
static bool is_object_schema(Jsonb *schema);
static Jsonb *finish_schema(AdkAgent *agent);
static Jsonb *task_input(AdkAgent *agent, Jsonb *args);
static void write_request_schema(JsonWriter *w, const char *description);

bool
adk_is_task(AdkAgent *agent)
{
	return agent->mode != NULL && strcmp(agent->mode, "task") == 0;
}

static AdkAgent *
task_sub_agent(AdkAgent *coordinator, const char *name)
{
	ListCell   *lc;

	if (strcmp(coordinator->kind, "llm") != 0 || !adk_agent_is_chat(coordinator))
		return NULL;
	foreach(lc, coordinator->sub_agents)
	{
		AdkAgent   *a = (AdkAgent *) lfirst(lc);

		if (adk_is_task(a) && strcmp(a->name, name) == 0)
			return a;
	}
	return NULL;
}

static AdkTask *
find_task(AdkRun *run, const char *scope, bool create)
{
	ListCell   *lc;
	AdkTask    *t;
	MemoryContext old;

	foreach(lc, run->tasks)
	{
		t = (AdkTask *) lfirst(lc);
		if (strcmp(t->scope, scope) == 0)
			return t;
	}
	if (!create)
		return NULL;
	old = MemoryContextSwitchTo(run->run_cxt);
	t = palloc0(sizeof(AdkTask));
	t->scope = pstrdup(scope);
	run->tasks = lappend(run->tasks, t);
	MemoryContextSwitchTo(old);
	return t;
}

/* {"type": "object", "properties": {"request": ...}, "required": ["request"]} */
static void
write_request_schema(JsonWriter *w, const char *description)
{
	jw_begin_object(w);
	jw_key(w, "type");
	jw_string(w, "object");
	jw_key(w, "properties");
	jw_begin_object(w);
	jw_key(w, "request");
	jw_begin_object(w);
	jw_key(w, "type");
	jw_string(w, "string");
	if (description)
	{
		jw_key(w, "description");
		jw_string(w, description);
	}
	jw_end_object(w);
	jw_end_object(w);
	jw_key(w, "required");
	jw_begin_array(w);
	jw_string(w, "request");
	jw_end_array(w);
	jw_end_object(w);
}

/* ADK-Go's isObjectSchema: its type is object (any case) */
static bool
is_object_schema(Jsonb *schema)
{
	char	   *type = schema ? adk_jstr(&schema->root, "type") : NULL;

	return type != NULL && pg_strcasecmp(type, "object") == 0;
}

/*
 * finish_task's parameters: the output_schema when it is an object, else
 * that schema under "result" (required); without one, {result: string}.
 */
static Jsonb *
finish_schema(AdkAgent *agent)
{
	JsonWriter	w;

	if (is_object_schema(agent->output_schema))
		return agent->output_schema;
	jw_init(&w);
	jw_begin_object(&w);
	jw_key(&w, "type");
	jw_string(&w, "object");
	jw_key(&w, "properties");
	jw_begin_object(&w);
	jw_key(&w, "result");
	if (agent->output_schema)
		jw_jsonb(&w, agent->output_schema);
	else
	{
		jw_begin_object(&w);
		jw_key(&w, "type");
		jw_string(&w, "string");
		jw_key(&w, "description");
		jw_string(&w, FINISH_RESULT_DESCRIPTION);
		jw_end_object(&w);
	}
	jw_end_object(&w);
	jw_key(&w, "required");
	jw_begin_array(&w);
	jw_string(&w, "result");
	jw_end_array(&w);
	jw_end_object(&w);
	return jw_finish(&w);
}

/*
 * The declarations task mode adds to agent's tools: a coordinator's, one
 * per task sub-agent (ADK-Go's createTaskAgentFuncDeclaration); a task
 * agent's, finish_task.  How many it wrote.
 */
int
adk_task_declare(JsonWriter *w, AdkAgent *agent)
{
	ListCell   *lc;
	int			n = 0;

	if (strcmp(agent->kind, "llm") != 0)
		return 0;
	if (adk_is_task(agent))
	{
		jw_begin_object(w);
		jw_key(w, "name");
		jw_string(w, FINISH_TASK);
		jw_key(w, "description");
		jw_string(w, agent->output_schema ? FINISH_DESCRIPTION FINISH_SCHEMA_NOTE :
				  FINISH_DESCRIPTION);
		jw_key(w, "parameters");
		jw_jsonb(w, finish_schema(agent));
		jw_end_object(w);
		return 1;
	}
	if (!adk_agent_is_chat(agent))
		return 0;
	foreach(lc, agent->sub_agents)
	{
		AdkAgent   *a = (AdkAgent *) lfirst(lc);
		char	   *description;

		if (!adk_is_task(a))
			continue;
		/* the description and the note, trimmed (strings.TrimSpace) */
		description = psprintf("%s" TASK_TOOL_NOTE, a->description ? a->description : "");
		while (*description == '\n' || *description == ' ' || *description == '\t')
			description++;
		jw_begin_object(w);
		jw_key(w, "name");
		jw_string(w, a->name);
		jw_key(w, "description");
		jw_string(w, description);
		jw_key(w, "parameters");
		if (a->input_schema)
			jw_jsonb(w, a->input_schema);
		else
			write_request_schema(w, TASK_REQUEST_DESCRIPTION);
		jw_end_object(w);
		n++;
	}
	return n;
}

/* The user content a task's prompt starts with */
static Jsonb *
task_input(AdkAgent *agent, Jsonb *args)
{
	char	   *text = agent->input_schema ? NULL : adk_jstr(&args->root, "request");

	if (text == NULL)
		text = JsonbToCString(NULL, &args->root, VARSIZE(args));
	return adk_text_content(text);
}

/*
 * Before the coordinator's calls run (agents.c): the next of its task
 * calls to run -- true with the task agent (*child) and its scope;
 * false when none is left.  A task that finished has had its response
 * appended (adk_task_end): its call leaves *calls.  A task that ended
 * without finishing waits for the user: the invocation ends here.
 * Arguments that do not fit the task's input_schema are the call's error
 * response (adk_task_call).  In the run's memory.
 */
bool
adk_task_next(AdkRun *run, AdkAgent *coordinator, List **calls,
			  AdkAgent **child, char **scope)
{
	MemoryContext old = MemoryContextSwitchTo(run->run_cxt);
	ListCell   *lc;
	bool		found = false;

	foreach(lc, *calls)
	{
		AdkCall    *call = (AdkCall *) lfirst(lc);
		AdkAgent   *a = task_sub_agent(coordinator, call->name);
		AdkTask    *t;

		if (a == NULL)
			continue;
		if ((t = find_task(run, call->id, false)) != NULL)
		{
			if (t->error != NULL || !t->ended)
				continue;
			if (t->finished)
			{
				*calls = foreach_delete_current(*calls, lc);
				continue;
			}
			run->out.end_invocation = true; /* the task asks the user */
			break;
		}
		t = find_task(run, call->id, true);
		t->agent = a;
		MemoryContextSwitchTo(old);
		t->error = adk_delegation_error(a, call->args, run->run_cxt);
		MemoryContextSwitchTo(run->run_cxt);
		if (t->error != NULL)
			continue;
		t->input = task_input(a, call->args);
		*child = a;
		*scope = t->scope;
		found = true;
		break;
	}
	MemoryContextSwitchTo(old);
	return found;
}

/*
 * A call task mode answers (flow.c's run_call), or NULL: a task agent's
 * finish_task -- arguments checked against its schema as ADK-Go checks
 * them (schema_check.c): what is wrong is a successful response that
 * tells the model, so it retries; else the
 * output is kept and ADK's {"result": "Task completed."} returned -- and a
 * coordinator's delegation whose arguments did not fit.
 */
Jsonb *
adk_task_call(AdkRun *run, AdkAgent *agent, const char *name, Jsonb *args)
{
	AdkTask    *t;
	char	   *problem;
	JsonbValue	v;
	MemoryContext old;

	if (adk_is_task(agent) && run->scope != NULL && strcmp(name, FINISH_TASK) == 0)
	{
		problem = adk_output_args_check(finish_schema(agent), args);
		if (problem != NULL)
			return adk_error_object(psprintf("Invoking `%s()` failed due to validation errors:\n%s\n"
											 "You could retry calling this tool, but it is IMPORTANT for you"
											 " to provide all the mandatory parameters with correct types.",
											 FINISH_TASK, problem));
		t = find_task(run, run->scope, true);
		t->agent = agent;
		old = MemoryContextSwitchTo(run->run_cxt);
		if (is_object_schema(agent->output_schema) || agent->output_schema == NULL)
			t->output = DatumGetJsonbPCopy(JsonbPGetDatum(args));
		else
		{
			/* a non-object schema's value, unwrapped */
			JsonbValue *r = adk_jsonb_get(&args->root, "result");

			t->output = adk_jsonb_value_to_jsonb(r);
		}
		t->finished = true;
		MemoryContextSwitchTo(old);
		v.type = jbvString;
		v.val.string.val = FINISH_SUCCESS;
		v.val.string.len = strlen(FINISH_SUCCESS);
		return adk_jsonb_one_value("result", &v);
	}
	if (task_sub_agent(agent, name) != NULL)
	{
		ListCell   *lc;

		foreach(lc, run->tasks)
		{
			t = (AdkTask *) lfirst(lc);
			if (t->error != NULL && t->agent != NULL && strcmp(t->agent->name, name) == 0)
			{
				Jsonb	   *e = t->error;

				t->error = NULL;
				run->tasks = foreach_delete_current(run->tasks, lc);
				return e;
			}
		}
		return adk_error_object(psprintf("agent \"%s\" did not run", name));
	}
	return NULL;
}

/*
 * The output of the task whose finish_task succeeded in the round being
 * assembled (flow.c writes it on that response event, as ADK-Go does),
 * once; NULL otherwise.
 */
Jsonb *
adk_task_output(AdkRun *run)
{
	AdkTask    *t;

	if (run->scope == NULL || (t = find_task(run, run->scope, false)) == NULL ||
		!t->finished || t->output_written)
		return NULL;
	t->output_written = true;
	return t->output;
}

/*
 * A task agent's frame is done (agents.c): when its finish_task
 * succeeded, the delegating call's function response -- author "user",
 * the output object, else {"output": value} -- is appended, outside the
 * scope.  Whether it finished.
 */
bool
adk_task_end(AdkRun *run, AdkAgent *agent, const char *scope)
{
	AdkTask    *t = find_task(run, scope, true);
	JsonWriter	w;
	Jsonb	   *response;
	char	   *kept = run->scope;
	char	   *kept_path = run->node_path;

	t->ended = true;
	if (!t->finished)
		return false;
	if (adk_jsonb_is_object(&t->output->root))
		response = t->output;
	else
	{
		JsonbValue	v;

		if (!JsonbExtractScalar(&t->output->root, &v))
		{
			v.type = jbvBinary;
			v.val.binary.data = &t->output->root;
			v.val.binary.len = VARSIZE(t->output) - VARHDRSZ;
		}
		response = adk_jsonb_one_value("output", &v);
	}
	run->scope = NULL;
	/* ADK-Go: the response is in the coordinator's node */
	if (kept_path != NULL && strrchr(kept_path, '/') != NULL)
		run->node_path = pnstrdup(kept_path, strrchr(kept_path, '/') - kept_path);
	adk_event_start(&w, run, "user", NULL);
	jw_key(&w, "content");
	jw_begin_object(&w);
	jw_key(&w, "role");
	jw_string(&w, "user");
	jw_key(&w, "parts");
	jw_begin_array(&w);
	adk_jw_function_response(&w, scope, agent->name, response);
	jw_end_array(&w);
	jw_end_object(&w);
	jw_end_object(&w);
	adk_emit(run, jw_finish(&w));
	run->scope = kept;
	run->node_path = kept_path;
	return true;
}

/* ADK-Go's FinishTaskTool.ProcessRequest: the instruction it adds */
char *
adk_task_instruction(AdkAgent *agent, char *instruction)
{
	if (!adk_is_task(agent))
		return instruction;
	if (instruction == NULL || instruction[0] == '\0')
		return pstrdup(FINISH_INSTRUCTION);
	return psprintf("%s\n\n%s", instruction, FINISH_INSTRUCTION);
}

/*
 * A task agent's request: its input, then what the events of its scope
 * give (contents).  A task resumed in a later invocation reads its input
 * from the delegating call (adk._task_request).
 */
Jsonb *
adk_task_contents(AdkRun *run, Jsonb *contents)
{
	AdkTask    *t;
	JsonWriter	w;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	if (run->scope == NULL || (t = find_task(run, run->scope, false)) == NULL ||
		t->agent == NULL)
		return contents;
	if (t->input == NULL)
	{
		Oid			types[4] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID};
		Datum		args[4];
		AdkOwnerSave save;
		Jsonb	   *call_args = NULL;
		MemoryContext caller = CurrentMemoryContext;

		args[0] = CStringGetTextDatum(run->app);
		args[1] = CStringGetTextDatum(run->user);
		args[2] = CStringGetTextDatum(run->session);
		args[3] = CStringGetTextDatum(t->scope);
		adk_owner_spi_begin(&save);
		if (adk_spi_exec("SELECT adk._task_request($1, $2, $3, $4)", 4, types, args,
						 NULL, 1) == SPI_OK_SELECT && SPI_processed == 1)
		{
			bool		isnull;
			Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

			if (!isnull)
			{
				MemoryContext spi = MemoryContextSwitchTo(run->run_cxt);

				call_args = DatumGetJsonbPCopy(d);
				MemoryContextSwitchTo(spi);
			}
		}
		adk_owner_spi_end(&save);
		MemoryContextSwitchTo(run->run_cxt);
		t->input = task_input(t->agent, call_args ? call_args :
							  adk_cstring_to_jsonb("{}"));
		MemoryContextSwitchTo(caller);
	}
	jw_init(&w);
	jw_begin_array(&w);
	jw_jsonb(&w, t->input);
	it = JsonbIteratorInit(&contents->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_ELEM)
			jw_value(&w, &v);
	}
	jw_end_array(&w);
	return jw_finish(&w);
}

/*
 * A retried job goes on with agent's task, of scope, where an earlier
 * attempt left it (run.c, retry.c): the run's first frame is in that
 * scope.  (A successful finish_task's response and the delegating call's
 * are stored in one transaction -- no model call waits between them -- so
 * an attempt never leaves one without the other.)
 */
void
adk_task_retry(AdkRun *run, AdkAgent *agent, const char *scope)
{
	run->first_scope = MemoryContextStrdup(run->run_cxt, scope);
	find_task(run, scope, true)->agent = agent;
}

/*
 * The user's message answers no task's delegating call (run.c, under the
 * session's lock): that call is answered by its task, with the output of
 * its finish_task, exactly once -- a function response for it from
 * outside, while the task works or after it finished, would answer it a
 * second time.  Without a query when the app has no task agent.
 */
void
adk_task_check_answers(AdkRun *run)
{
	Oid			types[4] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		args[4];
	AdkOwnerSave save;
	ListCell   *lc;
	bool		any = false;

	if (run->input.responses == NIL)
		return;
	foreach(lc, run->defs.agents)
		any = any || adk_is_task((AdkAgent *) lfirst(lc));
	if (!any)
		return;
	args[0] = CStringGetTextDatum(run->app);
	args[1] = CStringGetTextDatum(run->user);
	args[2] = CStringGetTextDatum(run->session);
	foreach(lc, run->input.responses)
	{
		AdkInputResponse *r = (AdkInputResponse *) lfirst(lc);
		char	   *agent = NULL;

		args[3] = CStringGetTextDatum(r->id);
		adk_owner_spi_begin(&save);
		if (adk_spi_exec("SELECT adk._task_of_call($1, $2, $3, $4)", 4, types, args,
						 NULL, 1) == SPI_OK_SELECT && SPI_processed == 1)
		{
			char	   *v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

			if (v != NULL)
				agent = pstrdup(v);
		}
		adk_owner_spi_end(&save);
		if (agent != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a function response cannot answer the call that delegated a task to agent \"%s\"",
							agent),
					 errdetail("Call \"%s\" is answered by its task: its response is the task's output, stored once when the task calls finish_task.",
							   r->id),
					 errhint("Send the task agent a message instead: the session's open task receives it.")));
	}
}

/*
 * The session's open task (route.c): its agent, when it is a task agent
 * of this app under a chat coordinator; run->first_scope is its scope.
 * NULL when there is none -- without a query when the app has no task
 * agent.
 */
AdkAgent *
adk_task_active(AdkRun *run)
{
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		args[3];
	AdkOwnerSave save;
	char	   *scope = NULL;
	char	   *name = NULL;
	MemoryContext caller = CurrentMemoryContext;
	ListCell   *lc;
	bool		any = false;

	/* an app without task agents has no query to make */
	foreach(lc, run->defs.agents)
		any = any || adk_is_task((AdkAgent *) lfirst(lc));
	if (!any)
		return NULL;
	args[0] = CStringGetTextDatum(run->app);
	args[1] = CStringGetTextDatum(run->user);
	args[2] = CStringGetTextDatum(run->session);
	adk_owner_spi_begin(&save);
	if (adk_spi_exec("SELECT * FROM adk._active_task($1, $2, $3)", 3, types, args,
					 NULL, 1) == SPI_OK_SELECT && SPI_processed == 1)
	{
		MemoryContext spi = MemoryContextSwitchTo(caller);

		scope = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		name = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
		MemoryContextSwitchTo(spi);
	}
	adk_owner_spi_end(&save);
	MemoryContextSwitchTo(caller);
	return go_on(run, scope, name);
}

/*
 * The task a resume goes on in (route.c): path is the node its
 * adk.run_states row names (adk_hitl_resumed_node, hitl.c),
 * "<path>/<agent>@<scope>", agent the one that made the answered calls;
 * the task when that agent is a task agent of this app -- read from the
 * row, not found in the history.  NULL when the run resumes no task.
 */
AdkAgent *
adk_task_resumed(AdkRun *run, const char *path, const char *agent)
{
	const char *at;

	if (path == NULL || (at = strrchr(path, '@')) == NULL || at[1] == '\0' ||
		strchr(at, '/') != NULL)
		return NULL;
	return go_on(run, at + 1, agent);
}

/*
 * Task agent name goes on in scope (its delegating call's id), when it is
 * a task agent of this app under a chat coordinator: run->first_scope is
 * its scope.  NULL otherwise.
 */
static AdkAgent *
go_on(AdkRun *run, const char *scope, const char *name)
{
	AdkAgent   *a;

	if (scope == NULL || name == NULL || (a = adk_find_agent(run, name)) == NULL ||
		!adk_is_task(a) || a->parent == NULL || task_sub_agent(a->parent, a->name) == NULL)
		return NULL;
	run->first_scope = MemoryContextStrdup(run->run_cxt, scope);
	find_task(run, scope, true)->agent = a;
	return a;
}
