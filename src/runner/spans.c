/*-------------------------------------------------------------------------
 *
 * spans.c
 *	  The spans of a run (SPEC §12), after the OpenTelemetry GenAI semantic
 *	  conventions, as rows of adk.spans.
 *
 * A run is one trace (or a part of the caller's, with options.traceparent
 * or adk.traceparent).  Its root is "invoke_agent {agent}" for the agent
 * the run starts with; every other agent run -- a workflow agent, its
 * sub-agents, the agent a transfer hands over to -- is an invoke_agent
 * span of its own under the agent that ran it.  Each model request is a
 * CLIENT span "{operation} {model}" (chat; generate_content for Gemini)
 * with the provider's answer (response model, finish reasons, tokens with
 * the cached ones, server.address/port, error.type); each SQL tool call
 * is "execute_tool {tool}".  Plugin callbacks are span events with their
 * duration; an agent span carries the time its events took to store.
 * Message content (prompts, answers, tool arguments and results) is kept
 * only with adk.capture_message_content on; what is kept has passed the
 * model layer's key redaction, and no header ever is.
 *
 * A span is written when it ends, by INSERT in the current transaction as
 * the owner of schema adk: with the events of the run, so a rolled-back
 * turn leaves none.  While adk.otlp_endpoint is set, the same statement
 * queues the span for the exporter (worker/otlp.c).  The state lives in
 * the run's memory context (the flow's rounds are freed as they end).
 *
 * IDENTIFICATION
 *	  src/runner/spans.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "access/htup_details.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "common/jsonb_util.h"
#include "common/spi_plans.h"
#include "common/trace_context.h"
#include "model/ledger.h"
#include "runner/runner.h"
#include "runner/spans.h"
#include "store/owner.h"

#define RETENTION_EVERY 100

bool		adk_spans_enabled = true;
bool		adk_capture_message_content = false;
int			adk_spans_retention_s = 7 * 24 * 3600;
char	   *adk_traceparent_setting = NULL;
char	   *adk_otlp_endpoint = NULL;	/* defined by worker/otlp.c */

typedef enum SpanType
{
	SPAN_AGENT,
	SPAN_MODEL,
	SPAN_TOOL
} SpanType;

typedef struct Span
{
	SpanType	type;
	char		span_id[ADK_SPAN_ID_HEX + 1];
	char		parent_id[ADK_SPAN_ID_HEX + 1]; /* "": a root */
	char	   *name;
	const char *kind;
	TimestampTz start;
	instr_time	t0;
	double		store_ms0;		/* run->store_ms when it started */
	double		plugin_ms;		/* plugin callbacks in it */
	int64		input_tokens;	/* agents: their model calls' */
	int64		output_tokens;
	int64		cached_tokens;
	bool		has_cached;
	bool		claimed;		/* the root: its agent's frame is on */
	StringInfoData attrs;		/* JSON members: "key": value, ... */
	StringInfoData events;		/* JSON array elements */
	const char *status;			/* UNSET, OK, ERROR */
	char	   *status_message;
} Span;

typedef struct AdkTrace
{
	char		trace_id[ADK_TRACE_ID_HEX + 1];
	char		parent_id[ADK_SPAN_ID_HEX + 1]; /* the caller's span, or "" */
	unsigned char flags;
	MemoryContext cxt;			/* the run's */
	List	   *stack;			/* Span *, innermost last */
	instr_time	plugin_t0;
} AdkTrace;

static uint64 writes = 0;

static Span *push_span(AdkRun *run, SpanType type, const char *name,
					   const char *kind);
static void end_span(AdkRun *run, Span *s);
static void write_span(AdkRun *run, Span *s, TimestampTz end);
static void set_current(AdkRun *run);
static void attr_key(Span *s, const char *key);
static void attr_str(Span *s, const char *key, const char *value);
static void attr_int(Span *s, const char *key, int64 value);
static void attr_float(Span *s, const char *key, double value);
static void attr_jsonb(Span *s, const char *key, JsonbValue *v);
static double elapsed_ms(instr_time t0);
static char *jsonb_str(JsonbContainer *c, const char *key);
static bool jsonb_int(JsonbContainer *c, const char *key, int64 *out);
static bool traceparent_setting_check(char **newval, void **extra,
									  GucSource source);

PG_FUNCTION_INFO_V1(adk_current_trace);

void
adk_spans_define_gucs(void)
{
	DefineCustomBoolVariable("adk.spans",
							 gettext_noop("Whether runs write their OpenTelemetry spans to adk.spans."),
							 NULL,
							 &adk_spans_enabled,
							 true,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("adk.capture_message_content",
							 gettext_noop("Whether spans keep message content: prompts, answers, tool arguments and results."),
							 gettext_noop("As OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT; off by default."),
							 &adk_capture_message_content,
							 false,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("adk.spans_retention",
							gettext_noop("How long rows of adk.spans are kept."),
							gettext_noop("-1 keeps them forever."),
							&adk_spans_retention_s,
							7 * 24 * 3600,
							-1,
							INT_MAX,
							PGC_SUSET,
							GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomStringVariable("adk.traceparent",
							   gettext_noop("W3C traceparent whose trace the runs of this session join."),
							   gettext_noop("options.traceparent of adk_run and adk_submit takes precedence."),
							   &adk_traceparent_setting,
							   "",
							   PGC_USERSET,
							   0,
							   traceparent_setting_check, NULL, NULL);
}

static bool
traceparent_setting_check(char **newval, void **extra, GucSource source)
{
	if (*newval == NULL || **newval == '\0' ||
		adk_traceparent_parse(*newval, NULL, NULL, NULL))
		return true;
	GUC_check_errcode(ERRCODE_INVALID_PARAMETER_VALUE);
	GUC_check_errdetail("A traceparent is version-trace_id-parent_id-flags in lower-case hex, e.g. 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01.");
	return false;
}

/*
 * options.traceparent: a valid traceparent string, palloc'd.
 */
char *
adk_span_traceparent_option(JsonbValue *v)
{
	char	   *s;

	if (v->type != jbvString)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"traceparent\" must be a string")));
	s = pnstrdup(v->val.string.val, v->val.string.len);
	adk_traceparent_check(s, "option \"traceparent\"");
	return s;
}

/*
 * The run's trace and its root span, "invoke_agent {first agent}".
 */
void
adk_span_run_begin(AdkRun *run)
{
	MemoryContext cxt = GetMemoryChunkContext(run);
	AdkTrace   *t;
	const char *tp = run->traceparent;
	Span	   *root;

	if (!adk_spans_enabled)
		return;
	t = MemoryContextAllocZero(cxt, sizeof(AdkTrace));
	t->cxt = cxt;
	t->flags = 1;				/* sampled: every span is recorded */
	if (tp == NULL && adk_traceparent_setting && adk_traceparent_setting[0])
		tp = adk_traceparent_setting;
	if (tp == NULL || !adk_traceparent_parse(tp, t->trace_id, t->parent_id, &t->flags))
	{
		adk_random_hex_id(t->trace_id, ADK_TRACE_ID_HEX / 2);
		t->parent_id[0] = '\0';
	}
	run->trace = t;
	root = push_span(run, SPAN_AGENT,
					 psprintf("invoke_agent %s", run->first_agent->name), "INTERNAL");
	strlcpy(root->parent_id, t->parent_id, sizeof(root->parent_id));
	attr_str(root, "gen_ai.operation.name",
			 strcmp(run->first_agent->kind, "llm") == 0 ? "invoke_agent" : "invoke_workflow");
	attr_str(root, "gen_ai.agent.name", run->first_agent->name);
	attr_str(root, "adk.agent.kind", run->first_agent->kind);
	set_current(run);
}

/*
 * Every span still open ends; the root says how the run ended (waiting:
 * paused for a human, HITL).
 */
void
adk_span_run_end(AdkRun *run, bool waiting)
{
	AdkTrace   *t = run->trace;

	if (t == NULL)
		return;
	while (t->stack != NIL)
	{
		Span	   *s = (Span *) llast(t->stack);

		if (list_length(t->stack) == 1)
		{
			if (run->failed)
			{
				s->status = "ERROR";
				s->status_message = run->error_message;
				attr_str(s, "error.type", run->error_code ? run->error_code : "_OTHER");
			}
			else if (run->stopped)
			{
				s->status = "ERROR";
				s->status_message = "the caller stopped reading adk_run's rows before the run ended";
				attr_str(s, "error.type", "CANCELLED");
			}
			attr_str(s, "adk.invocation.status",
					 run->failed ? "failed" : run->stopped ? "cancelled" :
					 waiting ? "waiting" : "completed");
		}
		end_span(run, s);
	}
	run->trace = NULL;
	adk_trace_set_current(NULL, NULL, NULL, 0);
}

/*
 * A frame for agent is pushed: the root when it is the first agent's
 * frame, else a child span of the innermost agent.
 */
void
adk_span_agent_begin(AdkRun *run, AdkAgent *agent)
{
	AdkTrace   *t = run->trace;
	Span	   *s;

	if (t == NULL)
		return;
	if (list_length(t->stack) == 1 && agent == run->first_agent &&
		!((Span *) linitial(t->stack))->claimed)
	{
		((Span *) linitial(t->stack))->claimed = true;
		return;
	}
	s = push_span(run, SPAN_AGENT, psprintf("invoke_agent %s", agent->name), "INTERNAL");
	attr_str(s, "gen_ai.operation.name",
			 strcmp(agent->kind, "llm") == 0 ? "invoke_agent" : "invoke_workflow");
	attr_str(s, "gen_ai.agent.name", agent->name);
	attr_str(s, "adk.agent.kind", agent->kind);
	set_current(run);
}

/*
 * The innermost frame is popped: its agent span ends (the root ends with
 * the run).
 */
void
adk_span_agent_end(AdkRun *run)
{
	AdkTrace   *t = run->trace;

	if (t == NULL)
		return;
	while (list_length(t->stack) > 1)
	{
		Span	   *s = (Span *) llast(t->stack);
		bool		agent = s->type == SPAN_AGENT;

		if (agent && run->failed)
			s->status = "ERROR";
		end_span(run, s);
		if (agent)
			break;
	}
	set_current(run);
}

void
adk_span_model_begin(AdkRun *run, const char *model, Jsonb *contents)
{
	Span	   *s;

	if (run->trace == NULL)
		return;
	/* named when the request is known (model_end) */
	s = push_span(run, SPAN_MODEL, NULL, "CLIENT");
	attr_str(s, "adk.model.name", model);
	if (adk_capture_message_content && contents)
	{
		JsonbValue	v;

		v.type = jbvBinary;
		v.val.binary.data = &contents->root;
		v.val.binary.len = VARSIZE(contents);
		attr_jsonb(s, "gen_ai.input.messages", &v);
	}
	adk_ledger_last.valid = false;
	set_current(run);
}

void
adk_span_model_end(AdkRun *run, Jsonb *response)
{
	AdkTrace   *t = run->trace;
	Span	   *s;
	const char *provider = "";
	const char *op = "chat";
	const char *request_model = NULL;
	JsonbValue *usage;
	JsonbValue *v;
	char	   *str;
	ListCell   *lc;

	if (t == NULL || t->stack == NIL ||
		((Span *) llast(t->stack))->type != SPAN_MODEL)
		return;
	s = (Span *) llast(t->stack);
	if (adk_ledger_last.valid)
	{
		provider = adk_ledger_last.provider;
		request_model = adk_ledger_last.request_model;
		if (strcmp(provider, "gemini") == 0)
			op = "generate_content";
	}
	s->name = MemoryContextStrdup(t->cxt,
								  psprintf("%s %s", op, request_model && request_model[0] ?
										   request_model : "unknown"));
	attr_str(s, "gen_ai.operation.name", op);
	attr_str(s, "gen_ai.provider.name",
			 strcmp(provider, "gemini") == 0 ? "gcp.gemini" : provider);
	if (request_model && request_model[0])
		attr_str(s, "gen_ai.request.model", request_model);
	if (adk_ledger_last.valid)
	{
		if (adk_ledger_last.host[0])
		{
			attr_str(s, "server.address", adk_ledger_last.host);
			attr_int(s, "server.port", adk_ledger_last.port);
		}
		if (adk_ledger_last.http_status > 0)
			attr_int(s, "http.response.status_code", adk_ledger_last.http_status);
		attr_int(s, "adk.model.attempts", adk_ledger_last.attempts);
		attr_float(s, "adk.model.latency_ms", adk_ledger_last.latency_ms);
		if (adk_ledger_last.first_chunk_ms >= 0)
			attr_float(s, "gen_ai.response.time_to_first_chunk",
					   adk_ledger_last.first_chunk_ms / 1000.0);
	}
	if (response == NULL)
	{
		end_span(run, s);
		set_current(run);
		return;
	}
	if ((str = jsonb_str(&response->root, "model_version")) != NULL)
		attr_str(s, "gen_ai.response.model", str);
	if ((str = jsonb_str(&response->root, "finish_reason")) != NULL)
	{
		attr_key(s, "gen_ai.response.finish_reasons");
		appendStringInfoChar(&s->attrs, '[');
		escape_json(&s->attrs, str);
		appendStringInfoChar(&s->attrs, ']');
	}
	usage = adk_jsonb_get(&response->root, "usage_metadata");
	if (usage && usage->type == jbvBinary)
	{
		int64		in = 0,
					out = 0,
					cached = 0;
		bool		has_cached = false;

		if (jsonb_int(usage->val.binary.data, "prompt_token_count", &in))
			attr_int(s, "gen_ai.usage.input_tokens", in);
		if (jsonb_int(usage->val.binary.data, "candidates_token_count", &out))
			attr_int(s, "gen_ai.usage.output_tokens", out);
		if ((has_cached = jsonb_int(usage->val.binary.data, "cached_content_token_count", &cached)))
			attr_int(s, "gen_ai.usage.cache_read.input_tokens", cached);
		/* every enclosing agent span sums its model calls */
		foreach(lc, t->stack)
		{
			Span	   *a = (Span *) lfirst(lc);

			if (a->type != SPAN_AGENT)
				continue;
			a->input_tokens += in;
			a->output_tokens += out;
			a->cached_tokens += cached;
			a->has_cached |= has_cached;
		}
	}
	if ((str = jsonb_str(&response->root, "error_code")) != NULL)
	{
		s->status = "ERROR";
		attr_str(s, "error.type", str);
		s->status_message = MemoryContextStrdup(t->cxt,
												(str = jsonb_str(&response->root, "error_message")) ? str : "");
	}
	else if (adk_capture_message_content &&
			 (v = adk_jsonb_get(&response->root, "content")) != NULL)
	{
		attr_key(s, "gen_ai.output.messages");
		appendStringInfoChar(&s->attrs, '[');
		if (v->type == jbvBinary)
			(void) JsonbToCString(&s->attrs, v->val.binary.data, v->val.binary.len);
		else
			appendStringInfoString(&s->attrs, "null");
		appendStringInfoChar(&s->attrs, ']');
	}
	end_span(run, s);
	set_current(run);
}

void
adk_span_tool_begin(AdkRun *run, AdkTool *tool, const char *call_id, Jsonb *args)
{
	Span	   *s;

	if (run->trace == NULL)
		return;
	s = push_span(run, SPAN_TOOL, psprintf("execute_tool %s", tool->name), "INTERNAL");
	attr_str(s, "gen_ai.operation.name", "execute_tool");
	attr_str(s, "gen_ai.tool.name", tool->name);
	attr_str(s, "gen_ai.tool.type", "function");
	if (call_id)
		attr_str(s, "gen_ai.tool.call.id", call_id);
	if (tool->description)
		attr_str(s, "gen_ai.tool.description", tool->description);
	if (adk_capture_message_content && args)
		attr_str(s, "gen_ai.tool.call.arguments",
				 JsonbToCString(NULL, &args->root, VARSIZE(args)));
	set_current(run);
}

/*
 * result: the response object the model sees, or NULL when a plugin
 * failed.
 */
void
adk_span_tool_end(AdkRun *run, Jsonb *result)
{
	AdkTrace   *t = run->trace;
	Span	   *s;
	JsonbValue *err;

	if (t == NULL || t->stack == NIL ||
		((Span *) llast(t->stack))->type != SPAN_TOOL)
		return;
	s = (Span *) llast(t->stack);
	attr_float(s, "adk.tool.duration_ms", elapsed_ms(s->t0));
	if (result == NULL)
	{
		s->status = "ERROR";
		s->status_message = "a plugin failed";
		attr_str(s, "error.type", "PLUGIN_ERROR");
	}
	else if ((err = adk_jsonb_get(&result->root, "error")) != NULL)
	{
		s->status = "ERROR";
		attr_str(s, "error.type", "tool_error");
		if (err->type == jbvString)
			s->status_message = MemoryContextStrdup(t->cxt,
													pnstrdup(err->val.string.val, err->val.string.len));
	}
	if (adk_capture_message_content && result)
		attr_str(s, "gen_ai.tool.call.result",
				 JsonbToCString(NULL, &result->root, VARSIZE(result)));
	end_span(run, s);
	set_current(run);
}

void
adk_span_plugin_begin(AdkRun *run)
{
	if (run->trace)
		INSTR_TIME_SET_CURRENT(run->trace->plugin_t0);
}

/*
 * One plugin callback: an event of the innermost span, with its duration.
 */
void
adk_span_plugin_end(AdkRun *run, const char *plugin, const char *callback,
					bool ok)
{
	AdkTrace   *t = run->trace;
	Span	   *s;
	double		ms;
	MemoryContext old;
	TimestampTz now = GetCurrentTimestamp();

	if (t == NULL || t->stack == NIL)
		return;
	s = (Span *) llast(t->stack);
	ms = elapsed_ms(t->plugin_t0);
	s->plugin_ms += ms;
	old = MemoryContextSwitchTo(t->cxt);
	if (s->events.len > 0)
		appendStringInfoChar(&s->events, ',');
	appendStringInfo(&s->events,
					 "{\"name\": \"adk.plugin\", \"time_unix_nano\": \"" INT64_FORMAT "000\", \"attributes\": {\"adk.plugin.name\": ",
					 (int64) now + (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY);
	escape_json(&s->events, plugin);
	appendStringInfoString(&s->events, ", \"adk.plugin.callback\": ");
	escape_json(&s->events, callback);
	appendStringInfo(&s->events, ", \"adk.plugin.duration_ms\": %.3f, \"adk.plugin.ok\": %s}}",
					 ms, ok ? "true" : "false");
	MemoryContextSwitchTo(old);
}

/*
 * adk_current_trace(): the span running now, or NULLs.
 */
Datum
adk_current_trace(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[3];
	bool		nulls[3] = {true, true, true};

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (adk_trace_current_for(adk_current_invocation_id))
	{
		values[0] = CStringGetTextDatum(adk_trace_current.trace_id);
		values[1] = CStringGetTextDatum(adk_trace_current.span_id);
		values[2] = CStringGetTextDatum(adk_traceparent_format(adk_trace_current.trace_id,
															   adk_trace_current.span_id,
															   adk_trace_current.flags));
		nulls[0] = nulls[1] = nulls[2] = false;
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}

/* ---------------------------------------------------------------------
 * internals
 * ---------------------------------------------------------------------
 */

static Span *
push_span(AdkRun *run, SpanType type, const char *name, const char *kind)
{
	AdkTrace   *t = run->trace;
	MemoryContext old = MemoryContextSwitchTo(t->cxt);
	Span	   *s = palloc0(sizeof(Span));

	s->type = type;
	adk_random_hex_id(s->span_id, ADK_SPAN_ID_HEX / 2);
	if (t->stack != NIL)
		strlcpy(s->parent_id, ((Span *) llast(t->stack))->span_id, sizeof(s->parent_id));
	s->name = name ? pstrdup(name) : NULL;
	s->kind = kind;
	s->start = GetCurrentTimestamp();
	INSTR_TIME_SET_CURRENT(s->t0);
	s->store_ms0 = run->store_ms;
	s->status = "UNSET";
	initStringInfo(&s->attrs);
	initStringInfo(&s->events);
	t->stack = lappend(t->stack, s);
	MemoryContextSwitchTo(old);
	if (type == SPAN_AGENT)
		attr_str(s, "gen_ai.conversation.id", run->session);
	return s;
}

/*
 * Pop s (the innermost span), finish its attributes and write it.
 */
static void
end_span(AdkRun *run, Span *s)
{
	AdkTrace   *t = run->trace;
	TimestampTz end = GetCurrentTimestamp();

	Assert(llast(t->stack) == s);
	t->stack = list_delete_last(t->stack);
	if (s->type == SPAN_AGENT)
	{
		attr_int(s, "gen_ai.usage.input_tokens", s->input_tokens);
		attr_int(s, "gen_ai.usage.output_tokens", s->output_tokens);
		if (s->has_cached)
			attr_int(s, "gen_ai.usage.cache_read.input_tokens", s->cached_tokens);
		attr_float(s, "adk.store.duration_ms", run->store_ms - s->store_ms0);
	}
	if (s->plugin_ms > 0)
		attr_float(s, "adk.plugins.duration_ms", s->plugin_ms);
	write_span(run, s, end);
	pfree(s->attrs.data);
	pfree(s->events.data);
	pfree(s);
}

#define SPAN_COLUMNS \
	"INSERT INTO adk.spans (trace_id, span_id, parent_span_id, name, kind," \
	" start_time, end_time, status_code, status_message, attributes, events," \
	" app_name, user_id, session_id, invocation_id, role_name)" \
	" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)"
#define INSERT_SQL SPAN_COLUMNS
#define INSERT_QUEUED_SQL \
	"WITH s AS (" SPAN_COLUMNS " RETURNING id)" \
	" INSERT INTO adk.span_exports (span_ref) SELECT s.id FROM s"
#define PURGE_SQL \
	"DELETE FROM adk.spans WHERE created_at OPERATOR(pg_catalog.<)" \
	" (pg_catalog.now() OPERATOR(pg_catalog.-) pg_catalog.make_interval(secs => $1))"

static void
write_span(AdkRun *run, Span *s, TimestampTz end)
{
	AdkTrace   *t = run->trace;
	Oid			types[16] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID,
		TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID, TEXTOID, JSONBOID, JSONBOID,
	TEXTOID, TEXTOID, TEXTOID, TEXTOID, NAMEOID};
	Datum		args[16];
	char		nulls[16];
	StringInfoData buf;
	NameData	role;
	AdkOwnerSave save;
	bool		queued = adk_otlp_endpoint != NULL && adk_otlp_endpoint[0] != '\0';

	memset(nulls, ' ', sizeof(nulls));
	namestrcpy(&role, GetUserNameFromId(GetUserId(), false));
	args[0] = CStringGetTextDatum(t->trace_id);
	args[1] = CStringGetTextDatum(s->span_id);
	args[2] = s->parent_id[0] ? CStringGetTextDatum(s->parent_id) : (Datum) 0;
	nulls[2] = s->parent_id[0] ? ' ' : 'n';
	args[3] = CStringGetTextDatum(s->name ? s->name : "unknown");
	args[4] = CStringGetTextDatum(s->kind);
	args[5] = TimestampTzGetDatum(s->start);
	args[6] = TimestampTzGetDatum(end < s->start ? s->start : end);
	args[7] = CStringGetTextDatum(s->status);
	args[8] = s->status_message ? CStringGetTextDatum(s->status_message) : (Datum) 0;
	nulls[8] = s->status_message ? ' ' : 'n';
	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	appendBinaryStringInfo(&buf, s->attrs.data, s->attrs.len);
	appendStringInfoChar(&buf, '}');
	args[9] = DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data));
	resetStringInfo(&buf);
	appendStringInfoChar(&buf, '[');
	appendBinaryStringInfo(&buf, s->events.data, s->events.len);
	appendStringInfoChar(&buf, ']');
	args[10] = DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data));
	args[11] = CStringGetTextDatum(run->app);
	args[12] = CStringGetTextDatum(run->user);
	args[13] = CStringGetTextDatum(run->session);
	args[14] = run->invocation_id ? CStringGetTextDatum(run->invocation_id) : (Datum) 0;
	nulls[14] = run->invocation_id ? ' ' : 'n';
	args[15] = NameGetDatum(&role);

	adk_become_owner(&save);
	SPI_connect();
	if (adk_spi_exec(queued ? INSERT_QUEUED_SQL : INSERT_SQL, 16, types, args,
					 nulls, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not insert into adk.spans");
	if (adk_spans_retention_s >= 0 && writes++ % RETENTION_EVERY == 0)
	{
		Oid			ptype = FLOAT8OID;
		Datum		parg = Float8GetDatum((double) adk_spans_retention_s);

		if (adk_spi_exec(PURGE_SQL, 1, &ptype, &parg, NULL, 0) != SPI_OK_DELETE)
			elog(ERROR, "could not purge adk.spans");
	}
	SPI_finish();
	adk_restore_user(&save);
}

/*
 * adk_trace_current: the innermost span of the run.
 */
static void
set_current(AdkRun *run)
{
	AdkTrace   *t = run->trace;

	if (t == NULL || t->stack == NIL || run->invocation_id == NULL)
		adk_trace_set_current(NULL, NULL, NULL, 0);
	else
		adk_trace_set_current(run->invocation_id, t->trace_id,
							  ((Span *) llast(t->stack))->span_id, t->flags);
}

static void
attr_key(Span *s, const char *key)
{
	if (s->attrs.len > 0)
		appendStringInfoString(&s->attrs, ", ");
	escape_json(&s->attrs, key);
	appendStringInfoString(&s->attrs, ": ");
}

/*
 * The attributes live in the span's memory (the run's), whatever context
 * the caller is in.
 */
static void
attr_str(Span *s, const char *key, const char *value)
{
	MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(s));

	attr_key(s, key);
	escape_json(&s->attrs, value ? value : "");
	MemoryContextSwitchTo(old);
}

static void
attr_int(Span *s, const char *key, int64 value)
{
	MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(s));

	attr_key(s, key);
	appendStringInfo(&s->attrs, INT64_FORMAT, value);
	MemoryContextSwitchTo(old);
}

static void
attr_float(Span *s, const char *key, double value)
{
	MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(s));

	attr_key(s, key);
	appendStringInfo(&s->attrs, "%.6f", value);
	MemoryContextSwitchTo(old);
}

static void
attr_jsonb(Span *s, const char *key, JsonbValue *v)
{
	char	   *text = JsonbToCString(NULL, v->val.binary.data, v->val.binary.len);
	MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(s));

	attr_key(s, key);
	appendStringInfoString(&s->attrs, text);
	MemoryContextSwitchTo(old);
}

static double
elapsed_ms(instr_time t0)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, t0);
	return INSTR_TIME_GET_MILLISEC(now);
}

static char *
jsonb_str(JsonbContainer *c, const char *key)
{
	JsonbValue *v = adk_jsonb_get(c, key);

	if (v == NULL || v->type != jbvString)
		return NULL;
	return pnstrdup(v->val.string.val, v->val.string.len);
}

static bool
jsonb_int(JsonbContainer *c, const char *key, int64 *out)
{
	JsonbValue *v = adk_jsonb_get(c, key);

	if (v == NULL || v->type != jbvNumeric)
		return false;
	*out = DatumGetInt64(DirectFunctionCall1(numeric_int8, NumericGetDatum(v->val.numeric)));
	return true;
}
