/*-------------------------------------------------------------------------
 *
 * plugins.c
 *	  Plugins are SQL functions: each callback takes one jsonb context and
 *	  returns jsonb, or NULL for "no change".
 *
 * The app's plugins run in the order adk.apps.plugins lists them; the first
 * that returns a non-NULL value decides (ADK's PluginManager short-circuit).
 * Each call runs in its own subtransaction as the invoking role: a plugin
 * that raises rolls back its own work only, and the runner turns the error
 * into a stored error event.
 *
 * IDENTIFICATION
 *	  src/runner/plugins.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "common/compat.h"
#include "common/json_writer.h"
#include "common/jsonb_util.h"
#include "common/spi_plans.h"
#include "runner/runner.h"
#include "runner/spans.h"
#include "common/owner.h"

static const char *const callback_names[CB_COUNT] = {
	"on_user_message", "before_run", "on_event", "after_run",
	"before_agent", "after_agent", "before_model", "after_model",
	"before_tool", "after_tool", "on_model_error", "on_tool_error"
};

/* the callbacks in AdkCallback order */
#define PLUGIN_SQL "SELECT * FROM adk._plugin_definition($1)"

typedef struct PluginCall
{
	Oid			fn;
	Jsonb	   *context;
	Jsonb	   *result;
} PluginCall;

static void call_one(void *arg);
static bool is_false(Jsonb *j);

/*
 * The plugins named in an app's plugins array, in order.
 */
List *
adk_load_plugins(ArrayType *names)
{
	List	   *result = NIL;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			i;
	AdkOwnerSave save;
	MemoryContext caller = CurrentMemoryContext;

	deconstruct_array(names, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	if (n == 0)
		return NIL;

	adk_owner_spi_begin(&save);
	for (i = 0; i < n; i++)
	{
		Datum		arg = elems[i];
		Oid			argtype = TEXTOID;
		AdkPlugin  *p;
		int			c;

		if (adk_spi_exec(PLUGIN_SQL, 1, &argtype, &arg, NULL, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not read adk.plugins");
		if (SPI_processed == 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("plugin \"%s\" does not exist", TextDatumGetCString(arg))));
		p = MemoryContextAllocZero(caller, sizeof(AdkPlugin));
		p->name = MemoryContextStrdup(caller, TextDatumGetCString(arg));
		for (c = 0; c < CB_COUNT; c++)
		{
			bool		isnull;
			Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
										  c + 2, &isnull);

			p->callbacks[c] = isnull ? InvalidOid : DatumGetObjectId(d);
		}
		{
			/* the list lives in the caller's context, not SPI's */
			MemoryContext spi = MemoryContextSwitchTo(caller);

			result = lappend(result, p);
			MemoryContextSwitchTo(spi);
		}
	}
	adk_owner_spi_end(&save);
	return result;
}

/*
 * {"callback": ..., "app_name", "user_id", "session_id", "invocation_id",
 * "agent", key1: value1, key2: value2}
 */
Jsonb *
adk_plugin_context(AdkRun *run, AdkCallback cb, const char *agent,
				   const char *key1, Jsonb *value1,
				   const char *key2, Jsonb *value2)
{
	JsonWriter	w;

	if (!adk_plugins_have(run, cb))
		return NULL;			/* nobody listens: build nothing */
	jw_init(&w);
	jw_begin_object(&w);
	jw_key(&w, "callback");
	jw_string(&w, callback_names[cb]);
	jw_key(&w, "app_name");
	jw_string(&w, run->app);
	jw_key(&w, "user_id");
	jw_string(&w, run->user);
	jw_key(&w, "session_id");
	jw_string(&w, run->session);
	jw_key(&w, "invocation_id");
	jw_string(&w, run->invocation_id);
	if (agent)
	{
		jw_key(&w, "agent");
		jw_string(&w, agent);
	}
	if (key1)
	{
		jw_key(&w, key1);
		jw_jsonb(&w, value1);
	}
	if (key2)
	{
		jw_key(&w, key2);
		jw_jsonb(&w, value2);
	}
	jw_end_object(&w);
	return jw_finish(&w);
}

/*
 * Call callback cb of every plugin in order until one returns non-NULL;
 * that value, or NULL.  A plugin that raises: NULL, and *error says which
 * plugin and why.
 */
bool
adk_plugins_have(AdkRun *run, AdkCallback cb)
{
	ListCell   *lc;

	foreach(lc, run->defs.plugins)
	{
		if (OidIsValid(((AdkPlugin *) lfirst(lc))->callbacks[cb]))
			return true;
	}
	return false;
}

Jsonb *
adk_plugins_call(AdkRun *run, AdkCallback cb, Jsonb *context, char **error)
{
	ListCell   *lc;

	*error = NULL;
	if (context == NULL)
		return NULL;
	foreach(lc, run->defs.plugins)
	{
		AdkPlugin  *p = (AdkPlugin *) lfirst(lc);
		PluginCall	call;
		char	   *err;
		bool		ok;

		if (!OidIsValid(p->callbacks[cb]))
			continue;
		call.fn = p->callbacks[cb];
		call.context = context;
		call.result = NULL;
		adk_span_plugin_begin(run);
		ok = adk_run_guarded(call_one, &call, &err);
		adk_span_plugin_end(run, p->name, callback_names[cb], ok);
		if (!ok)
		{
			*error = psprintf("plugin \"%s\" failed in %s: %s", p->name,
							  callback_names[cb], err);
			return NULL;
		}
		if (call.result != NULL && !adk_jsonb_is_object(&call.result->root) &&
			!(cb == CB_ON_EVENT && is_false(call.result)))
		{
			/*
			 * Every replacement is an object (a content, a response, a tool
			 * result, an event); on_event may also reject with false.
			 * Anything else is the plugin's failure, not the caller's.
			 */
			*error = psprintf("plugin \"%s\" failed in %s: it returned %s, not a JSON object%s",
							  p->name, callback_names[cb],
							  JB_ROOT_IS_SCALAR(call.result) ? "a scalar" : "an array",
							  cb == CB_ON_EVENT ? " or false" : "");
			return NULL;
		}
		if (call.result != NULL)
			return call.result;
	}
	return NULL;
}

static bool
is_false(Jsonb *j)
{
	JsonbValue *v;

	if (!JB_ROOT_IS_SCALAR(j))
		return false;
	v = getIthJsonbValueFromContainer(&j->root, 0);
	return v->type == jbvBool && !v->val.boolean;
}

/*
 * One callback, as the invoking role (it needs EXECUTE on the function).
 */
static void
call_one(void *arg)
{
	PluginCall *call = (PluginCall *) arg;
	LOCAL_FCINFO(fcinfo, 1);
	FmgrInfo	flinfo;
	Datum		result;
	AclResult	aclresult;

	aclresult = adk_proc_aclcheck(call->fn);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_FUNCTION, get_func_name(call->fn));

	fmgr_info(call->fn, &flinfo);
	InitFunctionCallInfoData(*fcinfo, &flinfo, 1, InvalidOid, NULL, NULL);
	fcinfo->args[0].value = JsonbPGetDatum(call->context);
	fcinfo->args[0].isnull = false;
	if (flinfo.fn_strict && call->context == NULL)
		return;
	result = FunctionCallInvoke(fcinfo);
	if (!fcinfo->isnull)
		call->result = DatumGetJsonbPCopy(result);
}
