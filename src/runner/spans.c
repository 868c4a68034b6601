/*-------------------------------------------------------------------------
 *
 * spans.c
 *	  The spans of a run (README "Traces"), after the OpenTelemetry GenAI
 *	  semantic conventions, as rows of adk.spans.
 *
 * A run is one trace (or a part of the caller's, with options.traceparent
 * or adk.traceparent).  Its root is "invoke_agent {agent}" for the agent
 * the run starts with; every other agent run -- a workflow agent, its
 * sub-agents, the agent a transfer hands over to -- is an invoke_agent
 * span of its own under the agent that ran it.  Each model request is a
 * CLIENT span "{operation} {model}" (chat; generate_content for Gemini)
 * with the provider's answer (response model, finish reasons, tokens with
 * the cached ones, server.address/port, error.type), a child of the
 * agent that made it; each SQL tool call is "execute_tool {tool}", a child
 * of the agent whose model asked for it, and so is an agent used as a tool
 * ("execute_tool {agent}"), with that agent's own invoke_agent span in it
 * and its model request in that.  A compaction's summarizer call is a
 * model span too, with adk.compaction.kind: under the agent whose model
 * call tail retention precedes, under the root for the sliding window
 * (adk_span_compaction_begin).  Plugin callbacks are span events, with
 * their duration, of the span their work runs in (a tool's, else the agent
 * the step runs for); an agent span carries the time its events took to
 * store.  Message content (prompts, answers, tool arguments and results) is
 * kept only with adk.capture_message_content on; what is kept has passed
 * the model layer's key redaction, and no header ever is.
 *
 * A run is concurrent inside -- a parallel agent's lanes, the agents used
 * as tools of one model response, each with a model call in flight -- so
 * its open spans are a tree, not a stack: each span knows its parent, and
 * the work it describes holds its handle (spans.h) and ends it.  The run's
 * open spans are kept in begin order (t->open), so that a span ends after
 * every span still open below it; those were abandoned (a lane's failure
 * ended the run, the caller stopped, a pause) and end with status ERROR,
 * error.type CANCELLED.  The run's end ends whatever is left.  A child's
 * interval thus always lies in its parent's.  An abandoned model request's
 * span has no answer to be named after: it is "unknown", with its
 * adk.model.name.
 *
 * A span is written when it ends, by INSERT in the current transaction as
 * the owner of schema adk: with the events of the run, so a rolled-back
 * turn leaves none.  While adk.otlp_endpoint is set, the same statement
 * queues the span for the exporter (worker/otlp.c).  The state lives in
 * the run's memory context (the flow's rounds are freed as they end; they
 * hold only handles), and each span's memory is freed when it is written.
 *
 * A job's run (worker/job.c) commits step by step, and a step's
 * transaction can roll back -- a cancel in a SQL tool, an ERROR -- taking
 * the spans it wrote with it.  So a job keeps each span it wrote until its
 * transaction commits (adk_span_keep_written, adk_span_committed), and a
 * run that ends early writes them again, in the transaction that records
 * the job's end, with the spans still open ended as abandoned and the root
 * saying why (adk_span_run_abort): the attempt's trace is whole.
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
#include "common/owner.h"

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
	AdkSpanId	id;				/* the handle: unique in the run */
	struct Span *parent;		/* NULL: the root; open while this is */
	char		span_id[ADK_SPAN_ID_HEX + 1];
	char		parent_id[ADK_SPAN_ID_HEX + 1]; /* "": a root */
	char	   *name;
	const char *kind;
	TimestampTz start;
	TimestampTz end;			/* when it ended: set as it is written */
	instr_time	t0;
	double		store_ms0;		/* run->out.store_ms when it started */
	double		plugin_ms;		/* plugin callbacks in it */
	int64		input_tokens;	/* agents: their model calls' */
	int64		output_tokens;
	int64		cached_tokens;
	bool		has_cached;
	bool		claimed;		/* the root: its agent's frame is on */
	bool		model_failed;	/* agents: a model call of its own failed */
	bool		compaction;		/* models: a compaction's summarizer */
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
	List	   *open;			/* Span *, in begin order: the root first */
	AdkSpanId	next_id;
	AdkSpanId	step;			/* the agent span the current step works for */
	AdkSpanId	current;		/* the span work runs in now: plugin events */
	instr_time	plugin_t0;
	bool		keep;			/* a job's: keep what is written (unsaved) */
	List	   *unsaved;		/* Span *, written in the current transaction */
} AdkTrace;

static uint64 writes = 0;

static Span *begin_span(AdkRun *run, Span *parent, SpanType type,
						const char *name, const char *kind);
static Span *find_span(AdkTrace *t, AdkSpanId id);
static Span *agent_begin(AdkRun *run, Span *parent, AdkAgent *agent);
static void end_span(AdkRun *run, Span *s, bool abandoned);
static void tool_result(AdkTrace *t, Span *s, Jsonb *result);
static void write_span(AdkRun *run, Span *s, TimestampTz end);
static void free_span(Span *s);
static void set_current(AdkRun *run, Span *s);
static void point_trace(AdkRun *run, Span *s);
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
	const char *tp = run->trace.traceparent;
	Span	   *root;

	if (!adk_spans_enabled)
		return;
	t = MemoryContextAllocZero(cxt, sizeof(AdkTrace));
	t->cxt = cxt;
	t->flags = 1;				/* sampled: every span is recorded */
	t->next_id = 1;
	if (tp == NULL && adk_traceparent_setting && adk_traceparent_setting[0])
		tp = adk_traceparent_setting;
	if (tp == NULL || !adk_traceparent_parse(tp, t->trace_id, t->parent_id, &t->flags))
	{
		adk_random_hex_id(t->trace_id, ADK_TRACE_ID_HEX / 2);
		t->parent_id[0] = '\0';
	}
	run->trace.current = t;
	root = agent_begin(run, NULL, run->defs.first_agent);
	strlcpy(root->parent_id, t->parent_id, sizeof(root->parent_id));
	t->step = root->id;
	set_current(run, root);
}

/*
 * Every span still open ends, those below the root as abandoned (a run
 * that failed or was stopped with work in flight); the root says how the
 * run ended (waiting: paused for a human, HITL).
 */
void
adk_span_run_end(AdkRun *run, bool waiting)
{
	AdkTrace   *t = run->trace.current;
	Span	   *root;

	if (t == NULL)
		return;
	root = (Span *) linitial(t->open);
	Assert(root->parent == NULL);
	if (run->out.failed)
	{
		root->status = "ERROR";
		root->status_message = run->out.error_message;
		attr_str(root, "error.type", run->out.error_code ? run->out.error_code : "_OTHER");
	}
	else if (run->out.stopped)
	{
		root->status = "ERROR";
		root->status_message = "the caller stopped reading adk_run's rows before the run ended";
		attr_str(root, "error.type", "CANCELLED");
	}
	attr_str(root, "adk.invocation.status",
			 run->out.failed ? "failed" : run->out.stopped ? "cancelled" :
			 waiting ? "waiting" : "completed");
	end_span(run, root, false);
	run->trace.current = NULL;
	adk_trace_set_current(NULL, NULL, NULL, 0);
}

/*
 * The run's transactions may roll back after its spans were written (a
 * job's steps, each committed on its own): every span written from now on
 * is kept until adk_span_committed, so that adk_span_run_abort can write it
 * again.
 */
void
adk_span_keep_written(AdkRun *run)
{
	if (run->trace.current == NULL)
		return;
	run->trace.current->keep = true;
	run->trace.kept_trace = run->trace.current;
}

/*
 * The transaction that wrote the kept spans committed: they are durable.
 */
void
adk_span_committed(AdkRun *run)
{
	AdkTrace   *t = run->trace.kept_trace;
	ListCell   *lc;

	if (t == NULL)
		return;
	foreach(lc, t->unsaved)
		free_span((Span *) lfirst(lc));
	list_free(t->unsaved);
	t->unsaved = NIL;
}

/*
 * A job's run ends before its steps did (worker/job.c: a cancel, an ERROR
 * that rolled its step back), in the transaction that records the end:
 * the spans the rolled-back transaction had written are written again,
 * every span still open ends as abandoned, and the root with status ERROR,
 * error.type error_type (CANCELLED, or the ERROR's SQLSTATE) and message.
 * The run is not stepped again.
 */
void
adk_span_run_abort(AdkRun *run, bool cancelled, const char *error_type,
				   const char *message)
{
	AdkTrace   *t = run->trace.kept_trace;
	ListCell   *lc;
	Span	   *root;

	if (t == NULL)
		return;
	/* written as they were (write_span reads the trace from the run) */
	run->trace.current = t;
	foreach(lc, t->unsaved)
	{
		Span	   *s = (Span *) lfirst(lc);

		write_span(run, s, s->end);
	}
	if (t->open != NIL)
	{
		root = (Span *) linitial(t->open);
		Assert(root->parent == NULL);
		root->status = "ERROR";
		root->status_message = MemoryContextStrdup(t->cxt, message);
		attr_str(root, "error.type", error_type);
		attr_str(root, "adk.invocation.status", cancelled ? "cancelled" : "failed");
		end_span(run, root, false);
	}
	adk_span_committed(run);	/* nothing left to write again */
	t->keep = false;
	run->trace.current = NULL;
	run->trace.kept_trace = NULL;
	adk_trace_set_current(NULL, NULL, NULL, 0);
}

/*
 * The stepper (agents.c): the coming step works for the frame whose agent
 * span this is.  What begins in it hangs under that span.
 */
void
adk_span_step_begin(AdkRun *run, AdkSpanId span)
{
	AdkTrace   *t = run->trace.current;
	Span	   *s;

	if (t == NULL || (s = find_span(t, span)) == NULL)
		return;
	t->step = span;
	set_current(run, s);
}

/*
 * The agent span of the frame being stepped: the parent of what a step
 * starts and ends (a SQL tool call).  The root outside any frame.
 */
AdkSpanId
adk_span_step(AdkRun *run)
{
	AdkTrace   *t = run->trace.current;
	Span	   *s;

	if (t == NULL)
		return 0;
	s = find_span(t, t->step);
	return s ? s->id : ((Span *) linitial(t->open))->id;
}

/*
 * The run's root span, "invoke_agent {first agent}": the parent of what
 * the run does outside its agents (the sliding window's summarizer).
 */
AdkSpanId
adk_span_root(AdkRun *run)
{
	AdkTrace   *t = run->trace.current;

	if (t == NULL)
		return 0;
	return ((Span *) linitial(t->open))->id;
}

/*
 * A frame for agent is pushed, by the agent that runs it (parent; 0 for
 * the run's first frame, which is the root's).  Its handle.
 */
AdkSpanId
adk_span_agent_begin(AdkRun *run, AdkSpanId parent, AdkAgent *agent)
{
	AdkTrace   *t = run->trace.current;
	Span	   *root;
	Span	   *p;

	if (t == NULL)
		return 0;
	root = (Span *) linitial(t->open);
	if (parent == 0 && agent == run->defs.first_agent && !root->claimed)
	{
		root->claimed = true;
		return root->id;
	}
	p = find_span(t, parent);
	return agent_begin(run, p ? p : root, agent)->id;
}

/*
 * The frame is popped: its agent span ends, after what is still open below
 * it (the root ends with the run).
 */
void
adk_span_agent_end(AdkRun *run, AdkSpanId span)
{
	AdkTrace   *t = run->trace.current;
	Span	   *s;

	if (t == NULL || (s = find_span(t, span)) == NULL || s->parent == NULL)
		return;
	if (run->out.failed)
		s->status = "ERROR";
	end_span(run, s, false);
}

/*
 * A model request, a child of parent: its handle, which the work waiting
 * for the answer keeps.  The request about to be started is sent with
 * this span as its traceparent.
 */
AdkSpanId
adk_span_model_begin(AdkRun *run, AdkSpanId parent, const char *model,
					 Jsonb *contents)
{
	AdkTrace   *t = run->trace.current;
	Span	   *p;
	Span	   *s;

	if (t == NULL || (p = find_span(t, parent)) == NULL)
		return 0;
	/* named when the request is known (model_end) */
	s = begin_span(run, p, SPAN_MODEL, NULL, "CLIENT");
	attr_str(s, "adk.model.name", model);
	if (adk_capture_message_content && contents)
	{
		JsonbValue	v;

		/* thoughts a run sends back but does not store: not kept here */
		contents = adk_contents_without_thoughts(contents);
		v.type = jbvBinary;
		v.val.binary.data = &contents->root;
		v.val.binary.len = VARSIZE(contents);
		attr_jsonb(s, "gen_ai.input.messages", &v);
	}
	/* the request's traceparent header; work goes on where it was */
	point_trace(run, s);
	return s->id;
}

/*
 * A compaction's summarizer call (compaction.c), a child of parent: the
 * agent span of the frame whose model call tail retention precedes, or
 * the root for the sliding window.  A model request like any other --
 * named "{operation} {model}" when it ends, its ledger row naming it (the
 * caller uses adk_span_model_finishing and adk_span_model_end), its tokens
 * in the usage of every agent span above it -- and adk.compaction.kind
 * (tail_retention, sliding_window: adk.compactions.kind) says what it is.
 * Its failure is the compaction's, never its agent's: a compaction never
 * fails the run.
 */
AdkSpanId
adk_span_compaction_begin(AdkRun *run, AdkSpanId parent, const char *kind,
						  const char *model, Jsonb *contents)
{
	AdkSpanId	id = adk_span_model_begin(run, parent, model, contents);
	Span	   *s;

	if ((s = find_span(run->trace.current, id)) == NULL)
		return 0;
	s->compaction = true;
	attr_str(s, "adk.compaction.kind", kind);
	return id;
}

/*
 * The request's answer is about to be taken (adk_model_finish): its
 * ledger row names this span, and what the ledger keeps for the span
 * (adk_ledger_last) is this request's.
 */
void
adk_span_model_finishing(AdkRun *run, AdkSpanId span)
{
	AdkTrace   *t = run->trace.current;
	Span	   *s;

	adk_ledger_last.valid = false;
	if (t == NULL || (s = find_span(t, span)) == NULL)
		return;
	point_trace(run, s);
}

/*
 * The answer (right after adk_model_finish, which left adk_ledger_last).
 */
void
adk_span_model_end(AdkRun *run, AdkSpanId span, Jsonb *response)
{
	AdkTrace   *t = run->trace.current;
	Span	   *s;
	Span	   *a;
	const char *provider = "";
	const char *op = "chat";
	const char *request_model = NULL;
	JsonbValue *usage;
	JsonbValue *v;
	char	   *str;

	if (t == NULL || (s = find_span(t, span)) == NULL || s->type != SPAN_MODEL)
		return;
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
		end_span(run, s, false);
		return;
	}
	if ((str = jsonb_str(&response->root, "model_version")) != NULL)
		attr_str(s, "gen_ai.response.model", str);
	if ((str = jsonb_str(&response->root, "finish_reason")) != NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(t->cxt);

		attr_key(s, "gen_ai.response.finish_reasons");
		appendStringInfoChar(&s->attrs, '[');
		escape_json(&s->attrs, str);
		appendStringInfoChar(&s->attrs, ']');
		MemoryContextSwitchTo(old);
	}
	usage = adk_jsonb_get(&response->root, "usage_metadata");
	if (usage && usage->type == jbvBinary)
	{
		int64		in = 0,
					out = 0,
					thoughts = 0,
					cached = 0;
		bool		has_cached = false;
		bool		has_out;

		if (jsonb_int(usage->val.binary.data, "prompt_token_count", &in))
			attr_int(s, "gen_ai.usage.input_tokens", in);
		/* reasoning is output too, as in the ledger */
		has_out = jsonb_int(usage->val.binary.data, "candidates_token_count", &out);
		if (jsonb_int(usage->val.binary.data, "thoughts_token_count", &thoughts))
		{
			out += thoughts;
			has_out = true;
		}
		if (has_out)
			attr_int(s, "gen_ai.usage.output_tokens", out);
		if ((has_cached = jsonb_int(usage->val.binary.data, "cached_content_token_count", &cached)))
			attr_int(s, "gen_ai.usage.cache_read.input_tokens", cached);
		/* every agent span above it sums its model calls */
		for (a = s->parent; a != NULL; a = a->parent)
		{
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
		if (!s->compaction)
			s->parent->model_failed = true;
		s->status_message = MemoryContextStrdup(t->cxt,
												(str = jsonb_str(&response->root, "error_message")) ? str : "");
	}
	else if (adk_capture_message_content &&
			 (v = adk_jsonb_get(&response->root, "content")) != NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(t->cxt);

		attr_key(s, "gen_ai.output.messages");
		appendStringInfoChar(&s->attrs, '[');
		if (v->type == jbvBinary)
			(void) JsonbToCString(&s->attrs, v->val.binary.data, v->val.binary.len);
		else
			appendStringInfoString(&s->attrs, "null");
		appendStringInfoChar(&s->attrs, ']');
		MemoryContextSwitchTo(old);
	}
	end_span(run, s, false);
}

/*
 * A model request that raised before it had an answer (a compaction's
 * summarizer whose model cannot be loaded): ERROR with error_type and
 * message.  Like an abandoned request it has no answer to be named after:
 * "unknown", with its adk.model.name.
 */
void
adk_span_model_fail(AdkRun *run, AdkSpanId span, const char *error_type,
					const char *message)
{
	AdkTrace   *t = run->trace.current;
	Span	   *s;

	if (t == NULL || (s = find_span(t, span)) == NULL || s->type != SPAN_MODEL)
		return;
	s->status = "ERROR";
	s->status_message = MemoryContextStrdup(t->cxt, message ? message : "");
	attr_str(s, "error.type", error_type);
	end_span(run, s, false);
}

/*
 * A tool call, a child of parent: "execute_tool {tool}".  Work (the tool,
 * its plugins) runs in it until it ends.
 */
AdkSpanId
adk_span_tool_begin(AdkRun *run, AdkSpanId parent, const char *tool,
					const char *description, const char *call_id, Jsonb *args)
{
	AdkTrace   *t = run->trace.current;
	Span	   *p;
	Span	   *s;

	if (t == NULL || (p = find_span(t, parent)) == NULL)
		return 0;
	s = begin_span(run, p, SPAN_TOOL, psprintf("execute_tool %s", tool), "INTERNAL");
	attr_str(s, "gen_ai.operation.name", "execute_tool");
	attr_str(s, "gen_ai.tool.name", tool);
	attr_str(s, "gen_ai.tool.type", "function");
	if (call_id)
		attr_str(s, "gen_ai.tool.call.id", call_id);
	if (description)
		attr_str(s, "gen_ai.tool.description", description);
	if (adk_capture_message_content && args)
		attr_str(s, "gen_ai.tool.call.arguments",
				 JsonbToCString(NULL, &args->root, VARSIZE(args)));
	set_current(run, s);
	return s->id;
}

/*
 * result: the response object the model sees, or NULL when a plugin
 * failed.
 */
void
adk_span_tool_end(AdkRun *run, AdkSpanId span, Jsonb *result)
{
	AdkTrace   *t = run->trace.current;
	Span	   *s;

	if (t == NULL || (s = find_span(t, span)) == NULL || s->type != SPAN_TOOL)
		return;
	tool_result(t, s, result);
	end_span(run, s, false);
}

/*
 * An agent used as a tool (flow.c): "execute_tool {agent}", a child of
 * parent, and in it the agent's own "invoke_agent {agent}", whose handle
 * this is (the parent of the agent's model call).
 */
AdkSpanId
adk_span_agent_tool_begin(AdkRun *run, AdkSpanId parent, AdkAgent *agent,
						  const char *call_id, Jsonb *args)
{
	AdkTrace   *t = run->trace.current;
	Span	   *current;
	Span	   *tool;
	Span	   *s;

	if (t == NULL)
		return 0;
	current = find_span(t, t->current);
	tool = find_span(t, adk_span_tool_begin(run, parent, agent->name,
											agent->description, call_id, args));
	if (tool == NULL)
		return 0;
	s = agent_begin(run, tool, agent);
	/* the calling agent's work goes on while the agent's model call is out */
	set_current(run, current ? current : tool->parent);
	return s->id;
}

/*
 * The agent-tool's function response: its agent span ends, then the
 * execute_tool span around it.
 */
void
adk_span_agent_tool_end(AdkRun *run, AdkSpanId span, Jsonb *result)
{
	AdkTrace   *t = run->trace.current;
	Span	   *s;
	Span	   *tool;
	JsonbValue *err;

	if (t == NULL || (s = find_span(t, span)) == NULL || s->type != SPAN_AGENT ||
		(tool = s->parent) == NULL || tool->type != SPAN_TOOL)
		return;
	if (result && (err = adk_jsonb_get(&result->root, "error")) != NULL)
	{
		/* the agent failed (its model call, its instruction) */
		s->status = "ERROR";
		if (err->type == jbvString)
			s->status_message = MemoryContextStrdup(t->cxt,
													pnstrdup(err->val.string.val, err->val.string.len));
	}
	end_span(run, s, false);
	tool_result(t, tool, result);
	end_span(run, tool, false);
}

void
adk_span_plugin_begin(AdkRun *run)
{
	if (run->trace.current)
		INSTR_TIME_SET_CURRENT(run->trace.current->plugin_t0);
}

/*
 * One plugin callback: an event of the span the work runs in.
 */
void
adk_span_plugin_end(AdkRun *run, const char *plugin, const char *callback,
					bool ok)
{
	AdkTrace   *t = run->trace.current;
	Span	   *s;
	double		ms;
	MemoryContext old;
	TimestampTz now = GetCurrentTimestamp();

	if (t == NULL)
		return;
	if ((s = find_span(t, t->current)) == NULL)
		s = (Span *) linitial(t->open);
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
	if (adk_trace_current_for(adk_running_invocation()))
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
begin_span(AdkRun *run, Span *parent, SpanType type, const char *name,
		   const char *kind)
{
	AdkTrace   *t = run->trace.current;
	MemoryContext old = MemoryContextSwitchTo(t->cxt);
	Span	   *s = palloc0(sizeof(Span));

	s->type = type;
	s->id = t->next_id++;
	s->parent = parent;
	adk_random_hex_id(s->span_id, ADK_SPAN_ID_HEX / 2);
	if (parent)
		strlcpy(s->parent_id, parent->span_id, sizeof(s->parent_id));
	s->name = name ? pstrdup(name) : NULL;
	s->kind = kind;
	s->start = GetCurrentTimestamp();
	INSTR_TIME_SET_CURRENT(s->t0);
	s->store_ms0 = run->out.store_ms;
	s->status = "UNSET";
	initStringInfo(&s->attrs);
	initStringInfo(&s->events);
	t->open = lappend(t->open, s);
	MemoryContextSwitchTo(old);
	if (type == SPAN_AGENT)
		attr_str(s, "gen_ai.conversation.id", run->session);
	return s;
}

static Span *
agent_begin(AdkRun *run, Span *parent, AdkAgent *agent)
{
	Span	   *s = begin_span(run, parent, SPAN_AGENT,
							   psprintf("invoke_agent %s", agent->name), "INTERNAL");

	attr_str(s, "gen_ai.operation.name",
			 strcmp(agent->kind, "llm") == 0 ? "invoke_agent" : "invoke_workflow");
	attr_str(s, "gen_ai.agent.name", agent->name);
	attr_str(s, "adk.agent.kind", agent->kind);
	return s;
}

/*
 * The open span with this handle, or NULL: 0, a span that has ended, or
 * no trace.  The open spans are few (the depth of the tree times what is
 * in flight).
 */
static Span *
find_span(AdkTrace *t, AdkSpanId id)
{
	ListCell   *lc;

	if (t == NULL || id == 0)
		return NULL;
	foreach(lc, t->open)
	{
		Span	   *s = (Span *) lfirst(lc);

		if (s->id == id)
			return s;
	}
	return NULL;
}

/*
 * A tool span's outcome from the response object the model sees (NULL: a
 * plugin failed).
 */
static void
tool_result(AdkTrace *t, Span *s, Jsonb *result)
{
	JsonbValue *err;

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
}

/*
 * s ends: first every span still open below it (the latest first), as
 * abandoned -- the run stopped or failed, or the agent above them ended,
 * before their work did; then s is written, and the work of its parent
 * runs again.  abandoned: s itself is such a span.
 */
static void
end_span(AdkRun *run, Span *s, bool abandoned)
{
	AdkTrace   *t = run->trace.current;
	TimestampTz end;

	for (;;)
	{
		Span	   *child = NULL;
		ListCell   *lc;

		foreach(lc, t->open)
		{
			if (((Span *) lfirst(lc))->parent == s)
				child = (Span *) lfirst(lc);
		}
		if (child == NULL)
			break;
		end_span(run, child, true);
	}
	end = GetCurrentTimestamp();
	t->open = list_delete_ptr(t->open, s);
	if (abandoned && s->type == SPAN_AGENT && s->model_failed && run->out.failed)
	{
		/* the agent whose failure ended the run (a parallel lane's) */
		s->status = "ERROR";
		s->status_message = run->out.error_message;
		attr_str(s, "error.type", run->out.error_code ? run->out.error_code : "_OTHER");
	}
	else if (abandoned && strcmp(s->status, "ERROR") != 0)
	{
		/* the work was given up: by a failure elsewhere, a stop, a pause */
		s->status = "ERROR";
		s->status_message = "abandoned: the run ended before this work did";
		attr_str(s, "error.type", "CANCELLED");
	}
	if (s->type == SPAN_AGENT)
	{
		attr_int(s, "gen_ai.usage.input_tokens", s->input_tokens);
		attr_int(s, "gen_ai.usage.output_tokens", s->output_tokens);
		if (s->has_cached)
			attr_int(s, "gen_ai.usage.cache_read.input_tokens", s->cached_tokens);
		attr_float(s, "adk.store.duration_ms", run->out.store_ms - s->store_ms0);
	}
	if (s->plugin_ms > 0)
		attr_float(s, "adk.plugins.duration_ms", s->plugin_ms);
	s->end = end;
	write_span(run, s, end);
	if (s->parent)
	{
		Span	   *c = find_span(t, t->current);

		if (t->step == s->id)
			t->step = s->parent->id;
		set_current(run, c ? c : s->parent);
	}
	if (t->keep)
	{
		/* until its transaction commits; its parent pointer is not used */
		MemoryContext old = MemoryContextSwitchTo(t->cxt);

		s->parent = NULL;
		t->unsaved = lappend(t->unsaved, s);
		MemoryContextSwitchTo(old);
	}
	else
		free_span(s);
}

static void
free_span(Span *s)
{
	if (s->name)
		pfree(s->name);
	pfree(s->attrs.data);
	pfree(s->events.data);
	pfree(s);
}

/*
 * The span's row through adk._span_rows (sql/install/87_runner_statements.sql:
 * adk.spans in the order of args below), and its place in the OTLP
 * exporter's queue when there is an exporter.
 */
#define INSERT_SQL \
	"INSERT INTO adk._span_rows VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) RETURNING id"
#define QUEUE_SQL "INSERT INTO adk.span_exports (span_ref) VALUES ($1)"
#define PURGE_SQL "SELECT adk._spans_purge($1)"

static void
write_span(AdkRun *run, Span *s, TimestampTz end)
{
	AdkTrace   *t = run->trace.current;
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

	adk_owner_spi_begin(&save);
	if (adk_spi_exec(INSERT_SQL, 16, types, args, nulls, 0) != SPI_OK_INSERT_RETURNING ||
		SPI_processed != 1)
		elog(ERROR, "could not insert into adk.spans");
	if (queued)
	{
		Oid			qtype = INT8OID;
		bool		isnull;
		Datum		ref = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
										1, &isnull);

		if (adk_spi_exec(QUEUE_SQL, 1, &qtype, &ref, NULL, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not queue a span for export");
	}
	if (adk_spans_retention_s >= 0 && writes++ % RETENTION_EVERY == 0)
	{
		Oid			ptype = FLOAT8OID;
		Datum		parg = Float8GetDatum((double) adk_spans_retention_s);

		if (adk_spi_exec(PURGE_SQL, 1, &ptype, &parg, NULL, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not purge adk.spans");
	}
	adk_owner_spi_end(&save);
}

/*
 * Work runs in s now: plugin events go to it, and adk_trace_current (the
 * traceparent a request is sent with, the span a ledger row names, what
 * adk_current_trace() tells a tool) is it.
 */
static void
set_current(AdkRun *run, Span *s)
{
	run->trace.current->current = s->id;
	point_trace(run, s);
}

/*
 * adk_trace_current alone: a model request is started or finished in s
 * while the work goes on in the span it was in.
 */
static void
point_trace(AdkRun *run, Span *s)
{
	AdkTrace   *t = run->trace.current;

	if (run->invocation_id == NULL)
		adk_trace_set_current(NULL, NULL, NULL, 0);
	else
		adk_trace_set_current(run->invocation_id, t->trace_id, s->span_id, t->flags);
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
