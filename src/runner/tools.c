/*-------------------------------------------------------------------------
 *
 * tools.c
 *	  Tools are SQL functions.  Declarations for the model, and calls.
 *
 * A call binds the model's arguments as one jsonb parameter and casts each
 * argument to its declared type in the statement -- ($1 ->> 'city')::text --
 * so no value the model sends is ever spliced into SQL text; only names
 * and types from the catalog are (quoted).  Arguments the model leaves out
 * take the function's defaults (named notation).  The call runs in its own
 * subtransaction as the invoking role, so grants and row-level security
 * apply and an error -- a raised exception, a value of the wrong type, a
 * missing privilege -- rolls back that tool only and becomes the
 * {"error": ...} the model sees.
 *
 * The statement text depends only on the function and on which arguments
 * the model gave, so its plan is kept (up to TOOL_PLANS of them, the oldest
 * freed first) and found again by that text.  A kept plan is still checked
 * at every call: the plan cache replans after DDL on the function or its
 * types, EXECUTE privilege is checked at executor start for the current
 * role, and row security makes the cache replan for another role.
 *
 * IDENTIFICATION
 *	  src/runner/tools.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/syscache.h"
#include "utils/timeout.h"

#include "common/json_writer.h"
#include "common/jsonb_util.h"
#include "common/spi_plans.h"
#include "runner/builtin_tools.h"
#include "runner/runner.h"
#include "runner/settings.h"
#include "runner/spans.h"
#include "common/owner.h"

#define LONG_RUNNING_NOTE \
	"NOTE: This is a long-running operation. Do not call this tool again if it has already returned some intermediate or pending status."

typedef struct ToolCall
{
	AdkTool    *tool;
	Jsonb	   *args;
	Jsonb	   *result;
} ToolCall;

/* kept tool-call plans, by statement text; a ring, oldest replaced */
#define TOOL_PLANS 32

typedef struct ToolPlan
{
	char	   *sql;
	SPIPlanPtr	plan;
} ToolPlan;

int			adk_tool_timeout_ms = 0;
static TimeoutId tool_timeout_id = MAX_TIMEOUTS;
static volatile sig_atomic_t tool_timed_out = false;

static Jsonb *call_sql_tool(AdkRun *run, AdkAgent *agent, const char *branch,
							AdkTool *tool, const char *call_id, Jsonb *args);
static void tool_timeout_handler(void);
static ToolPlan tool_plans[TOOL_PLANS];
static int	next_tool_plan = 0;

static void call_tool(void *arg);
static SPIPlanPtr tool_plan(const char *sql);
static char *build_call_sql(AdkTool *tool, Jsonb *args);
static void write_builtin(JsonWriter *w, const char *name,
						  const char *description, const char *param,
						  const char *param_description);

/* The tool of that name among tools (AdkTool *), or NULL */
AdkTool *
adk_find_tool(List *tools, const char *name)
{
	ListCell   *lc;

	foreach(lc, tools)
	{
		AdkTool    *t = (AdkTool *) lfirst(lc);

		if (strcmp(t->name, name) == 0)
			return t;
	}
	return NULL;
}

/*
 * The function declarations the model gets: the agent's tools in order,
 * built-ins, agents used as tools, and transfer_to_agent when the agent
 * has somewhere to transfer to.  NULL when there are none.
 */
Jsonb *
adk_tool_declarations(AdkRun *run, AdkAgent *agent, List *tools)
{
	JsonWriter	w;
	ListCell   *lc;
	int			n = 0;

	jw_init(&w);
	jw_begin_array(&w);
	foreach(lc, agent->tools)
	{
		char	   *name = (char *) lfirst(lc);
		AdkTool    *t = adk_find_tool(tools, name);
		AdkAgent   *as_tool;

		if (t != NULL)
		{
			jw_begin_object(&w);
			jw_key(&w, "name");
			jw_string(&w, t->name);
			jw_key(&w, "description");
			if (t->long_running)
			{
				/* ADK's LongRunningFunctionTool note */
				jw_string(&w, t->description && t->description[0] != '\0' ?
						  psprintf("%s\n\n%s", t->description, LONG_RUNNING_NOTE) :
						  LONG_RUNNING_NOTE);
			}
			else
				jw_string(&w, t->description ? t->description : "");
			jw_key(&w, "parameters");
			jw_jsonb(&w, t->parameters);
			jw_end_object(&w);
			n++;
		}
		else if (strcmp(name, "exit_loop") == 0)
		{
			write_builtin(&w, "exit_loop",
						  "Exits the loop. Call this function only when you are instructed to do so.",
						  NULL, NULL);
			n++;
		}
		else if (adk_builtin_declare(&w, name))
			n++;				/* load_artifacts, load_memory */
		else if ((as_tool = adk_find_agent(run, name)) != NULL)
		{
			write_builtin(&w, name,
						  as_tool->description ? as_tool->description : "",
						  "request", "The request to send to the agent.");
			n++;
		}
	}
	/* a tool per single_turn sub-agent (single_turn.c) */
	n += adk_single_turn_declare(&w, agent);
	/* task delegation tools, or finish_task (task_mode.c) */
	n += adk_task_declare(&w, agent);
	if (adk_transfer_targets(agent) != NIL)
	{
		write_builtin(&w, "transfer_to_agent",
					  "Transfer the question to another agent. This tool hands off control to another agent when it's more suitable to answer the user's question according to the agent's description.",
					  "agent_name", "the agent name to transfer to.");
		n++;
	}
	/* set_model_response, for an output schema (output_schema.c) */
	n += adk_output_declare(&w, agent, n > 0);
	jw_end_array(&w);
	return n > 0 ? jw_finish(&w) : NULL;
}

static void
write_builtin(JsonWriter *w, const char *name, const char *description,
			  const char *param, const char *param_description)
{
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
	if (param)
	{
		jw_key(w, param);
		jw_begin_object(w);
		jw_key(w, "type");
		jw_string(w, "string");
		jw_key(w, "description");
		jw_string(w, param_description);
		jw_end_object(w);
	}
	jw_end_object(w);
	if (param)
	{
		jw_key(w, "required");
		jw_begin_array(w);
		jw_string(w, param);
		jw_end_array(w);
	}
	jw_end_object(w);
	jw_end_object(w);
}

/*
 * Call a SQL tool with the model's arguments.  The result as the function
 * response ADK expects (an object: the function's own object result, or
 * {"result": value}); NULL with *error set when the call failed.
 */
Jsonb *
adk_tool_call(AdkTool *tool, Jsonb *args, char **error)
{
	ToolCall	call;
	MemoryContext caller = CurrentMemoryContext;
	volatile bool ok = false;

	call.tool = tool;
	call.args = args;
	call.result = NULL;
	if (adk_tool_timeout_ms <= 0)
	{
		if (!adk_run_guarded(call_tool, &call, error))
			return NULL;
		return call.result;
	}

	/*
	 * adk.tool_timeout: a timer that cancels the tool's query when it fires;
	 * that cancel (and only that one) becomes the tool's error.  The tool's
	 * subtransaction is already rolled back when it reaches us.
	 */
	if (tool_timeout_id == MAX_TIMEOUTS)
		tool_timeout_id = RegisterTimeout(USER_TIMEOUT, tool_timeout_handler);
	tool_timed_out = false;
	enable_timeout_after(tool_timeout_id, adk_tool_timeout_ms);
	PG_TRY();
	{
		ok = adk_run_guarded(call_tool, &call, error);
	}
	PG_CATCH();
	{
		disable_timeout(tool_timeout_id, false);
		if (!tool_timed_out)
			PG_RE_THROW();
		MemoryContextSwitchTo(caller);
		FlushErrorState();
		QueryCancelPending = false;
		*error = psprintf("tool \"%s\" ran longer than \"adk.tool_timeout\" (%d ms) and was stopped",
						  tool->name, adk_tool_timeout_ms);
		tool_timed_out = false;
		return NULL;
	}
	PG_END_TRY();
	disable_timeout(tool_timeout_id, false);
	tool_timed_out = false;
	return ok ? call.result : NULL;
}

/*
 * adk.tool_timeout fired: cancel the tool's query, as statement_timeout
 * would.
 */
static void
tool_timeout_handler(void)
{
	tool_timed_out = true;
	QueryCancelPending = true;
	InterruptPending = true;
	SetLatch(MyLatch);
}

static void
call_tool(void *arg)
{
	ToolCall   *call = (ToolCall *) arg;
	char	   *sql = build_call_sql(call->tool, call->args);
	Datum		value = JsonbPGetDatum(call->args);
	MemoryContext caller = CurrentMemoryContext;
	bool		isnull;
	Datum		d;
	Jsonb	   *r;

	SPI_connect();
	if (SPI_execute_plan(tool_plan(sql), &value, NULL, false, 0) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "tool call returned no row");
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	MemoryContextSwitchTo(caller);
	if (isnull)
	{
		JsonbValue	null_value;

		null_value.type = jbvNull;
		r = adk_jsonb_one_value("result", &null_value);
	}
	else
	{
		r = DatumGetJsonbPCopy(d);
		if (!adk_jsonb_is_object(&r->root))
		{
			JsonbValue	v;

			v.type = jbvBinary;
			v.val.binary.data = &r->root;
			v.val.binary.len = VARSIZE(r) - VARHDRSZ;
			if (JB_ROOT_IS_SCALAR(r))
			{
				JsonbValue *s = getIthJsonbValueFromContainer(&r->root, 0);

				r = adk_jsonb_one_value("result", s);
			}
			else
				r = adk_jsonb_one_value("result", &v);
		}
	}
	call->result = r;
	SPI_finish();
}

/*
 * The kept plan of a tool-call statement (its one parameter: jsonb),
 * prepared on first use.  The caller is connected to SPI.
 */
static SPIPlanPtr
tool_plan(const char *sql)
{
	Oid			argtype = JSONBOID;
	SPIPlanPtr	plan;
	ToolPlan   *slot;
	int			i;

	for (i = 0; i < TOOL_PLANS; i++)
		if (tool_plans[i].sql != NULL && strcmp(tool_plans[i].sql, sql) == 0)
			return tool_plans[i].plan;

	plan = SPI_prepare(sql, 1, &argtype);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	slot = &tool_plans[next_tool_plan];
	next_tool_plan = (next_tool_plan + 1) % TOOL_PLANS;
	if (slot->sql != NULL)
	{
		SPI_freeplan(slot->plan);
		pfree(slot->sql);
		slot->sql = NULL;
	}
	SPI_keepplan(plan);
	slot->sql = MemoryContextStrdup(TopMemoryContext, sql);
	slot->plan = plan;
	return plan;
}

/*
 * SELECT to_jsonb(schema.fn(a => ($1 ->> 'a')::type, ...)) for the
 * arguments the model gave; errors for unknown and missing arguments.
 */
static char *
build_call_sql(AdkTool *tool, Jsonb *args)
{
	HeapTuple	tup;
	Form_pg_proc proc;
	Oid		   *argtypes;
	char	  **argnames;
	char	   *argmodes;
	int			nargs;
	int			ndefaults;
	int			nin = 0;
	int			i;
	StringInfoData call;
	StringInfoData sql;
	bool		first = true;
	JsonbIterator *it;
	JsonbValue	k;
	JsonbIteratorToken tok;

	if (!adk_jsonb_is_object(&args->root))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the arguments of tool \"%s\" must be a JSON object", tool->name)));

	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(tool->function));
	if (!HeapTupleIsValid(tup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("the function of tool \"%s\" no longer exists", tool->name)));
	proc = (Form_pg_proc) GETSTRUCT(tup);
	nargs = get_func_arg_info(tup, &argtypes, &argnames, &argmodes);
	ndefaults = proc->pronargdefaults;

	/* every argument the model sent must be a named IN argument */
	it = JsonbIteratorInit(&args->root);
	while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE)
	{
		bool		found = false;
		char	   *key;

		if (tok != WJB_KEY)
			continue;
		key = pnstrdup(k.val.string.val, k.val.string.len);
		for (i = 0; i < nargs && !found; i++)
			found = argnames && argnames[i] && strcmp(argnames[i], key) == 0 &&
				(argmodes == NULL || argmodes[i] == PROARGMODE_IN ||
				 argmodes[i] == PROARGMODE_INOUT);
		if (!found)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("tool \"%s\" has no argument \"%s\"", tool->name, key)));
	}

	for (i = 0; i < nargs; i++)
		if (argmodes == NULL || argmodes[i] == PROARGMODE_IN ||
			argmodes[i] == PROARGMODE_INOUT)
			nin++;

	initStringInfo(&call);
	appendStringInfo(&call, "%s.%s(",
					 quote_identifier(get_namespace_name(proc->pronamespace)),
					 quote_identifier(NameStr(proc->proname)));
	for (i = 0; i < nargs; i++)
	{
		int			in_index;
		Oid			type = argtypes[i];
		char	   *tname;
		char	   *key;

		if (argmodes != NULL && argmodes[i] != PROARGMODE_IN &&
			argmodes[i] != PROARGMODE_INOUT)
			continue;
		in_index = i;
		if (argnames == NULL || argnames[i] == NULL || argnames[i][0] == '\0')
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_FUNCTION_DEFINITION),
					 errmsg("argument %d of the function of tool \"%s\" has no name",
							i + 1, tool->name)));
		if (adk_jsonb_get(&args->root, argnames[i]) == NULL)
		{
			if (in_index < nin - ndefaults)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("tool \"%s\" needs argument \"%s\"", tool->name, argnames[i])));
			continue;			/* the function's default applies */
		}
		tname = format_type_be_qualified(type);
		key = quote_literal_cstr(argnames[i]);
		if (!first)
			appendStringInfoString(&call, ", ");
		first = false;
		appendStringInfo(&call, "%s => ", quote_identifier(argnames[i]));
		if (type == JSONBOID || type == JSONOID)
			appendStringInfo(&call, "($1 OPERATOR(pg_catalog.->) %s)::%s", key, tname);
		else if (OidIsValid(get_element_type(type)))
			appendStringInfo(&call,
							 "ARRAY(SELECT pg_catalog.jsonb_array_elements_text($1 OPERATOR(pg_catalog.->) %s))::%s",
							 key, tname);
		else
			appendStringInfo(&call, "($1 OPERATOR(pg_catalog.->>) %s)::%s", key, tname);
	}
	appendStringInfoChar(&call, ')');

	initStringInfo(&sql);
	if (proc->proretset)
	{
		/*
		 * A set-returning function: its rows as a JSON array (a TABLE
		 * function's rows as objects), [] for none.  COALESCE is syntax,
		 * not a function: it cannot be schema-qualified, and needs none.
		 */
		appendStringInfo(&sql,
						 "SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.to_jsonb(s.x)), '[]'::pg_catalog.jsonb) FROM (SELECT %s AS x) s",
						 call.data);
	}
	else if (proc->prorettype == VOIDOID)
		appendStringInfo(&sql, "SELECT CASE WHEN %s IS NULL THEN NULL::pg_catalog.jsonb END",
						 call.data);
	else
		appendStringInfo(&sql, "SELECT pg_catalog.to_jsonb(%s)", call.data);
	ReleaseSysCache(tup);
	return sql.data;
}

/*
 * A SQL tool call wrapped in its plugins: before_tool (may answer instead),
 * the call, on_tool_error (may replace the error), after_tool (may replace
 * the result).  The response object the model sees; NULL when a plugin
 * failed (an error event is stored and the invocation ends).
 */
Jsonb *
adk_call_sql_tool(AdkRun *run, AdkAgent *agent, const char *branch,
				  AdkTool *tool, const char *call_id, Jsonb *args)
{
	Jsonb	   *result;
	AdkSpanId	span;

	/* a child of the agent span of the frame being stepped */
	span = adk_span_tool_begin(run, adk_span_step(run), tool->name,
							   tool->description, call_id, args);
	result = call_sql_tool(run, agent, branch, tool, call_id, args);
	adk_span_tool_end(run, span, result);
	return result;
}

static Jsonb *
call_sql_tool(AdkRun *run, AdkAgent *agent, const char *branch,
			  AdkTool *tool, const char *call_id, Jsonb *args)
{
	JsonWriter	w;
	Jsonb	   *tool_info;
	Jsonb	   *result;
	Jsonb	   *replaced;
	char	   *error;

	jw_init(&w);
	jw_begin_object(&w);
	jw_key(&w, "name");
	jw_string(&w, tool->name);
	jw_key(&w, "id");
	jw_string(&w, call_id);
	jw_key(&w, "args");
	jw_jsonb(&w, args);
	jw_end_object(&w);
	tool_info = jw_finish(&w);

	if (!adk_plugins_hook(run, CB_BEFORE_TOOL, agent->name, branch,
						  "tool", tool_info, NULL, NULL, &result))
		return NULL;
	if (result != NULL)
		return result;

	result = adk_tool_call(tool, args, &error);
	if (result == NULL)
	{
		Jsonb	   *err = adk_error_object(error);

		if (!adk_plugins_hook(run, CB_ON_TOOL_ERROR, agent->name, branch,
							  "tool", tool_info, "error", err, &replaced))
			return NULL;
		return replaced ? replaced : err;
	}
	if (!adk_plugins_hook(run, CB_AFTER_TOOL, agent->name, branch,
						  "tool", tool_info, "result", result, &replaced))
		return NULL;
	return replaced ? replaced : result;
}
