/*-------------------------------------------------------------------------
 *
 * compaction.c
 *	  Context compaction (000 §四.4.6): summaries that stand in
 *	  for older events in prompts.  The SQL functions that read, append
 *	  and compact are in compaction_sql.c.
 *
 *	- Tail retention, before a model call (flow.c): when the request's
 *	  estimated tokens (the newest model response's prompt_token_count
 *	  since the last compaction, else the request's characters / 4) exceed
 *	  token_threshold, everything but the last event_retention_size events
 *	  becomes one rolling summary, seeded with the previous one.  The
 *	  invocation then skips the sliding window.
 *	- Sliding window, after an invocation that did not fail (run.c): every
 *	  compaction_interval invocations since the last compaction, those
 *	  invocations plus overlap_size earlier ones.
 *
 * Each compaction has three steps.  Read (adk._compaction_read, no lock
 * taken by us): choose the range -- never splitting a function call from
 * its response, never covering an unanswered call or confirmation -- and
 * note what was read.  Summarize: one model call, outside any lock of
 * ours.  Append: adk._compaction_check takes the session row lock (the
 * lock every append takes, held to commit) and refuses the summary when
 * the events read changed or a compaction appended after the read covers
 * part of the range; otherwise the compaction event is appended and its
 * range recorded in adk.compactions under that same lock.  Inside adk_run
 * the transaction already holds the session row, so the race is with
 * adk_compaction_append, adk_compact and background workers that commit
 * per event; the check is the same for all of them.
 *
 * A run's compaction waits for its summarizer as the run waits for any
 * model call, without blocking: the read and the summarizer's start are one
 * step (adk_compaction_before_model / adk_compaction_after_run, in a
 * subtransaction), the run returns ADK_STEP_WAIT while the summarizer's
 * request is in flight -- a job worker steps its other runs meanwhile --
 * and the step after its answer came consumes it and appends the summary
 * (adk_compaction_finish: the answer, then the append, each in a
 * subtransaction of its own).  Each summarizer call of a run is a model
 * span of its own (spans.c), with adk.compaction.kind: tail retention's
 * under the agent span of the frame whose round it precedes, the sliding
 * window's under the run's root; its ledger row names it.  The wait
 * (AdkCompactionWait) lives in memory under its owner's: the round's for
 * tail retention (flow.c starts the agent's model call after it), the
 * run's for the sliding window (run.c's end of the run); deleting that
 * memory (adk_round_abandon, adk_run_abandon: a cancel, an ERROR, a
 * caller that stopped reading) stops the summarizer's transfer, and
 * nothing of it is recorded.  In a job worker the read and the append are
 * in two transactions; the check above is what keeps that safe.
 * adk_compact() (compaction_sql.c) uses the same start and finish, and
 * waits inside its own call.
 *
 * A compaction failure never fails the run: it is logged and recorded in
 * adk.invocations.compaction_error, and the model sees the uncompacted
 * history.
 *
 * IDENTIFICATION
 *	  src/runner/compaction.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "common/json_writer.h"
#include "common/jsonb_util.h"
#include "common/spi_plans.h"
#include "model/generate.h"
#include "model/http.h"
#include "runner/budget.h"
#include "runner/compaction.h"
#include "runner/runner.h"
#include "runner/spans.h"
#include "store/append.h"
#include "common/owner.h"
#include "store/session_read.h"

/* ADK Python's LlmEventSummarizer prompt */
#define SUMMARY_PROMPT \
	"The following is a conversation history between a user and an AI agent. " \
	"Please summarize the conversation, focusing on key information and decisions made, " \
	"as well as any unresolved questions or tasks. The summary should be concise and " \
	"capture the essence of the interaction.\n\n"

/*
 * One summarizer call: taken from the budgets, started, then consumed.  A
 * run's has a span (spans.c), a child of parent_span; adk_compact's
 * (run NULL) is outside any run and trace.
 */
typedef struct Summarizer
{
	const char *app;
	const char *user;
	const char *model;
	TimestampTz taken_at;		/* the budgets' take (budget.c) */
	AdkModelCall *call;			/* in flight; NULL once consumed */
	AdkRun	   *run;			/* a run's compaction, or NULL */
	const char *kind;			/* its adk.compaction.kind */
	AdkSpanId	parent_span;
	AdkSpanId	span;			/* open while the call is; else 0 */
} Summarizer;

/*
 * A run's compaction waiting for its summarizer: everything in cxt (under
 * the memory of the step that waits for it), which deleting stops the
 * summarizer's transfer with.
 */
struct AdkCompactionWait
{
	MemoryContext cxt;
	AdkRun	   *run;
	Summarizer	sum;
	Jsonb	   *plan;			/* what adk._compaction_read read */
	const char *kind;			/* tail_retention, sliding_window */
	const char *what;			/* names the compaction in compaction_error */
	char	   *summary;		/* the summarizer's answer */
	bool		done;			/* a summary was appended */
};

/* What the guarded pieces below get */
typedef struct Step
{
	AdkCompactionWait *w;
	AdkAgent   *agent;
	Jsonb	   *contents;
} Step;

static AdkCompaction *load_config(AdkRun *run);
static AdkCompactionWait *new_wait(AdkRun *run, MemoryContext parent,
								   const char *kind, const char *what);
static AdkCompactionWait *start_guarded(AdkCompactionWait *w,
										AdkGuardedFn fn, Step *s);
static void tail_start(void *arg);
static void sliding_start(void *arg);
static void start_summary(AdkCompactionWait *w, AdkCompaction *cfg,
						  Jsonb *plan);
static void answer_step(void *arg);
static void append_step(void *arg);
static void summary_span_failed(Summarizer *s, const char *error);
static bool summary_start(Summarizer *s, Jsonb *config, Jsonb *plan,
						  char **error);
static char *summary_finish(Summarizer *s, char **error);
static int64 estimate_tokens(AdkRun *run, AdkAgent *agent, Jsonb *contents);
static void record_problem(AdkRun *run, const char *what, const char *message);
static char *plan_text(Jsonb *plan, const char *key);

/*
 * Tail retention, before each model call: when the request is
 * over the threshold, read the range and start the summarizer.  The
 * compaction waiting for it, in memory under parent (the round's), or
 * NULL when there is nothing to wait for: no compaction due, or it failed
 * (recorded on the invocation).  While one waits, the run's other rounds
 * (a parallel agent's lanes) go on without tail retention.
 */
AdkCompactionWait *
adk_compaction_before_model(AdkRun *run, AdkAgent *agent, const char *branch,
							Jsonb *contents, MemoryContext parent)
{
	Step		s;
	AdkCompaction *cfg;
	AdkCompactionWait *w;

	(void) branch;
	if (run->waits.compacted || run->waits.compacting)
		return NULL;
	/* no subtransaction when the app does not use tail retention */
	cfg = load_config(run);
	if (!cfg->enabled || cfg->threshold <= 0)
		return NULL;
	w = new_wait(run, parent, "tail_retention", "tail retention");
	/* the step works for the frame whose round this is: its agent span */
	w->sum.parent_span = adk_span_step(run);
	memset(&s, 0, sizeof(s));
	s.w = w;
	s.agent = agent;
	s.contents = contents;
	w = start_guarded(w, tail_start, &s);
	if (w != NULL)
		run->waits.compacting = true;
	return w;
}

/*
 * The sliding window, after an invocation that did not fail and
 * did not run tail retention: read the range and start the summarizer.
 * As adk_compaction_before_model; parent: the run's memory.
 */
AdkCompactionWait *
adk_compaction_after_run(AdkRun *run, MemoryContext parent)
{
	Step		s;
	AdkCompaction *cfg;

	if (run->out.failed || run->waits.compacted)
		return NULL;
	cfg = load_config(run);
	if (!cfg->enabled || cfg->interval <= 0)
		return NULL;
	memset(&s, 0, sizeof(s));
	s.w = new_wait(run, parent, "sliding_window", "sliding window compaction");
	/* part of the run's end, outside its agents: under the root */
	s.w->sum.parent_span = adk_span_root(run);
	return start_guarded(s.w, sliding_start, &s);
}

/*
 * Whether the summarizer's answer (or its failure) is in.
 */
bool
adk_compaction_ready(const AdkCompactionWait *w)
{
	return w->sum.call == NULL || adk_model_call_ready(w->sum.call);
}

/*
 * The summarizer has answered: take its answer (the ledger row, the
 * budgets' charge, its span), then append the summary under the check
 * (adk._compaction_check), each in a subtransaction of its own -- an
 * append that fails takes neither the ledger row nor the span with it; a
 * failure or a refused summary is recorded on the invocation.  w is gone
 * afterwards.  true when a summary was appended (tail retention: build
 * the contents again).
 */
bool
adk_compaction_finish(AdkCompactionWait *w)
{
	AdkRun	   *run = w->run;
	MemoryContext old = MemoryContextSwitchTo(w->cxt);
	Step		s;
	char	   *error;
	bool		done;

	Assert(adk_compaction_ready(w));
	memset(&s, 0, sizeof(s));
	s.w = w;
	if (!adk_run_guarded(answer_step, &s, &error))
	{
		summary_span_failed(&w->sum, error);
		record_problem(run, psprintf("%s failed", w->what), error);
	}
	else if (w->summary != NULL && !adk_run_guarded(append_step, &s, &error))
		record_problem(run, psprintf("%s failed", w->what), error);
	MemoryContextSwitchTo(old);
	done = w->done;
	if (strcmp(w->kind, "tail_retention") == 0)
	{
		run->waits.compacting = false;
		run->waits.compacted = done;
	}
	MemoryContextDelete(w->cxt);
	return done;
}

/*
 * The run ended while its compaction waited: the summarizer's transfer
 * stops, nothing is recorded (no ledger row, no budget charge).  Its span
 * stays open and ends, abandoned, with the span it is in (spans.c), as an
 * abandoned round's model span does.
 */
void
adk_compaction_abandon(AdkCompactionWait *w)
{
	MemoryContextDelete(w->cxt);
}

static AdkCompactionWait *
new_wait(AdkRun *run, MemoryContext parent, const char *kind, const char *what)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "adk_runner compaction",
											  ALLOCSET_SMALL_SIZES);
	AdkCompactionWait *w = MemoryContextAllocZero(cxt, sizeof(AdkCompactionWait));

	w->cxt = cxt;
	w->run = run;
	w->kind = kind;
	w->what = what;
	w->sum.run = run;
	w->sum.kind = kind;
	return w;
}

/*
 * Run fn (tail_start or sliding_start) in a subtransaction, in w's memory:
 * w when its summarizer is in flight, else NULL (w is gone; a failure is
 * recorded).
 */
static AdkCompactionWait *
start_guarded(AdkCompactionWait *w, AdkGuardedFn fn, Step *s)
{
	MemoryContext old = MemoryContextSwitchTo(w->cxt);
	char	   *error;

	if (!adk_run_guarded(fn, s, &error))
	{
		summary_span_failed(&w->sum, error);
		record_problem(w->run, psprintf("%s failed", w->what), error);
	}
	MemoryContextSwitchTo(old);
	if (w->sum.call != NULL)
		return w;
	MemoryContextDelete(w->cxt);
	return NULL;
}

static void
tail_start(void *arg)
{
	Step	   *s = (Step *) arg;
	AdkRun	   *run = s->w->run;
	AdkCompaction *cfg = load_config(run);
	Oid			types[4] = {TEXTOID, TEXTOID, TEXTOID, INT4OID};
	Datum		args[4];
	bool		isnull;
	Datum		d;
	Jsonb	   *plan;

	if (!cfg->enabled || cfg->threshold <= 0)
		return;
	if (estimate_tokens(run, s->agent, s->contents) <= cfg->threshold)
		return;
	args[0] = CStringGetTextDatum(run->app);
	args[1] = CStringGetTextDatum(run->user);
	args[2] = CStringGetTextDatum(run->session);
	args[3] = Int32GetDatum(cfg->retention);
	d = adk_compaction_owner_query("SELECT adk._tail_retention_end($1, $2, $3, $4)",
								   4, types, args, NULL, 1, &isnull);
	if (isnull)
		return;
	plan = adk_compaction_read_plan(run->app, run->user, run->session, 1,
									DatumGetInt64(d), true);
	if (plan == NULL)
		return;
	start_summary(s->w, cfg, plan);
}

static void
sliding_start(void *arg)
{
	Step	   *s = (Step *) arg;
	AdkRun	   *run = s->w->run;
	AdkCompaction *cfg = load_config(run);
	Oid			types[5] = {TEXTOID, TEXTOID, TEXTOID, INT4OID, INT4OID};
	Datum		args[5];
	bool		isnull;
	Datum		d;
	Datum	   *range;
	int			n;
	Jsonb	   *plan;

	if (!cfg->enabled || cfg->interval <= 0)
		return;
	args[0] = CStringGetTextDatum(run->app);
	args[1] = CStringGetTextDatum(run->user);
	args[2] = CStringGetTextDatum(run->session);
	args[3] = Int32GetDatum(cfg->interval);
	args[4] = Int32GetDatum(cfg->overlap);
	/* [from_seq, to_seq], NULL if it is not time (65_compaction.sql) */
	d = adk_compaction_owner_query("SELECT adk._sliding_window_bounds($1, $2, $3, $4, $5)",
								   5, types, args, NULL, 1, &isnull);
	if (isnull)
		return;
	deconstruct_array(DatumGetArrayTypeP(d), INT8OID, sizeof(int64), true,
					  TYPALIGN_DOUBLE, &range, NULL, &n);
	Assert(n == 2);
	plan = adk_compaction_read_plan(run->app, run->user, run->session,
									DatumGetInt64(range[0]),
									DatumGetInt64(range[1]), false);
	if (plan == NULL)
		return;
	start_summary(s->w, cfg, plan);
}

/*
 * Start the summarizer on the events of plan (w->sum.call is set when it
 * is in flight); a call that cannot be made (a spent budget) is recorded
 * on the invocation.
 */
static void
start_summary(AdkCompactionWait *w, AdkCompaction *cfg, Jsonb *plan)
{
	AdkRun	   *run = w->run;
	char	   *error;

	w->plan = plan;
	w->sum.app = run->app;
	w->sum.user = run->user;
	w->sum.model = cfg->summarizer;
	if (!summary_start(&w->sum, cfg->own_summarizer ? NULL :
					   run->defs.root->generate_config, plan, &error))
		record_problem(run, psprintf("%s failed", w->what), error);
}

/*
 * The summarizer's answer (w->summary); a failure is recorded on the
 * invocation.
 */
static void
answer_step(void *arg)
{
	AdkCompactionWait *w = ((Step *) arg)->w;
	char	   *error;

	w->summary = summary_finish(&w->sum, &error);
	if (w->summary == NULL)
		record_problem(w->run, psprintf("%s failed", w->what), error);
}

/*
 * The summary appended as a compaction of w's kind; a refused append is
 * recorded on the invocation.
 */
static void
append_step(void *arg)
{
	AdkCompactionWait *w = ((Step *) arg)->w;
	AdkRun	   *run = w->run;
	char	   *refused;

	if (adk_compaction_append_summary(run->app, run->user, run->session,
									  w->plan, w->summary, w->kind,
									  run->invocation_id, &refused) == 0)
	{
		record_problem(run, psprintf("%s summary refused", w->what), refused);
		return;
	}
	w->done = true;
}

/*
 * The app's compaction settings (adk.apps.compaction, validated on write),
 * read once per invocation.
 */
static AdkCompaction *
load_config(AdkRun *run)
{
	AdkCompaction *cfg;
	Oid			types[1] = {TEXTOID};
	Datum		args[1];
	AdkOwnerSave save;
	MemoryContext caller;

	if (run->defs.compaction)
		return run->defs.compaction;
	/* kept for the whole run: not in the memory of the round that asks */
	caller = MemoryContextSwitchTo(GetMemoryChunkContext(run));
	cfg = palloc0(sizeof(AdkCompaction));
	if (!run->defs.compaction_configured)
	{
		/* the cached app row says compaction is off: nothing to read */
		MemoryContextSwitchTo(caller);
		run->defs.compaction = cfg;
		return cfg;
	}
	args[0] = CStringGetTextDatum(run->app);
	adk_owner_spi_begin(&save);
	if (adk_spi_exec("SELECT * FROM adk._compaction_settings($1)",
					 1, types, args, NULL, 1) == SPI_OK_SELECT && SPI_processed == 1)
	{
		HeapTuple	row = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		char	   *model;

		cfg->enabled = true;
		cfg->interval = DatumGetInt32(SPI_getbinval(row, desc, 1, &isnull));
		cfg->overlap = DatumGetInt32(SPI_getbinval(row, desc, 2, &isnull));
		cfg->threshold = DatumGetInt64(SPI_getbinval(row, desc, 3, &isnull));
		cfg->retention = DatumGetInt32(SPI_getbinval(row, desc, 4, &isnull));
		cfg->own_summarizer = DatumGetBool(SPI_getbinval(row, desc, 6, &isnull));
		model = SPI_getvalue(row, desc, 5);
		cfg->summarizer = model ?
			MemoryContextStrdup(GetMemoryChunkContext(run), model) : NULL;
	}
	adk_owner_spi_end(&save);
	MemoryContextSwitchTo(caller);
	if (cfg->enabled && cfg->summarizer == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("app \"%s\" has no summarizer model", run->app),
				 errhint("Set summarizer_model in the app's compaction.")));
	run->defs.compaction = cfg;
	return cfg;
}

/*
 * Column "col" of the first row of a query run as the owner of schema
 * adk, copied into the caller's memory; *isnull when there is no row.
 */
Datum
adk_compaction_owner_query(const char *sql, int nargs, Oid *types,
						   Datum *args, const char *nulls, int col,
						   bool *isnull)
{
	AdkOwnerSave save;
	Datum		result = (Datum) 0;

	*isnull = true;
	adk_owner_spi_begin(&save);
	if (adk_spi_exec(sql, nargs, types, args, nulls, 1) < 0)
		elog(ERROR, "could not run \"%s\"", sql);
	if (SPI_tuptable != NULL && SPI_processed == 1)
	{
		int16		len;
		bool		byval;

		get_typlenbyval(SPI_gettypeid(SPI_tuptable->tupdesc, col), &len, &byval);
		result = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
							   col, isnull);
		if (!*isnull && !byval)
			result = SPI_datumTransfer(result, false, len);
	}
	adk_owner_spi_end(&save);
	return result;
}

Jsonb *
adk_compaction_read_plan(const char *app, const char *user,
						 const char *session, int64 from, int64 to,
						 bool rolling)
{
	Oid			types[6] = {TEXTOID, TEXTOID, TEXTOID, INT8OID, INT8OID, BOOLOID};
	Datum		args[6];
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};
	bool		isnull;
	Datum		d;

	args[0] = CStringGetTextDatum(app);
	args[1] = CStringGetTextDatum(user);
	args[2] = CStringGetTextDatum(session);
	args[3] = Int64GetDatum(from);
	args[4] = Int64GetDatum(to);
	args[5] = BoolGetDatum(rolling);
	if (from <= 0)
		nulls[3] = 'n';
	if (to <= 0)
		nulls[4] = 'n';
	d = adk_compaction_owner_query("SELECT adk._compaction_read($1, $2, $3, $4, $5, $6)",
								   6, types, args, nulls, 1, &isnull);
	return isnull ? NULL : DatumGetJsonbP(d);
}

static char *
plan_text(Jsonb *plan, const char *key)
{
	JsonbValue *v = adk_jsonb_get(&plan->root, key);

	if (v == NULL || v->type != jbvString)
		return NULL;
	return pnstrdup(v->val.string.val, v->val.string.len);
}

/*
 * The summary of the plan's events (and of the summary it rolls on), or
 * NULL with *error: the summarizer started, then waited for in this call
 * -- for adk_compact(), a plain SQL function outside any run (a run's
 * compaction waits in its steps instead).
 */
char *
adk_compaction_summarize(const char *app, const char *user, const char *model,
						 Jsonb *config, Jsonb *plan, char **error)
{
	Summarizer	s;

	memset(&s, 0, sizeof(s));
	s.app = app;
	s.user = user;
	s.model = model;
	if (!summary_start(&s, config, plan, error))
		return NULL;
	while (!adk_model_call_ready(s.call))
	{
		CHECK_FOR_INTERRUPTS();
		adk_http_drive(ADK_HTTP_POLL_MS);
	}
	return summary_finish(&s, error);
}

/*
 * Take the call from the budgets of app and user like every model call,
 * and start it (s->call) in the current memory context.  false with
 * *error when no call may be made (a spent budget).
 */
static bool
summary_start(Summarizer *s, Jsonb *config, Jsonb *plan, char **error)
{
	StringInfoData prompt;
	char	   *prior = plan_text(plan, "prior_summary");
	char	   *transcript = plan_text(plan, "transcript");
	JsonWriter	w;
	Jsonb	   *contents;
	char	   *refused;
	const char *invocation_id;

	refused = adk_budget_try(s->app, s->user, &s->taken_at);
	if (refused != NULL)
	{
		*error = psprintf("BUDGET_EXCEEDED: %s", refused);
		return false;
	}
	initStringInfo(&prompt);
	appendStringInfoString(&prompt, SUMMARY_PROMPT);
	if (prior)
		appendStringInfo(&prompt, "Summary of the conversation before this part:\n%s\n\n", prior);
	appendStringInfoString(&prompt, transcript ? transcript : "");

	jw_init(&w);
	jw_begin_array(&w);
	jw_jsonb(&w, adk_text_content(prompt.data));
	jw_end_array(&w);
	contents = jw_finish(&w);
	/* begun first: the request is sent with its span as traceparent */
	if (s->run)
		s->span = adk_span_compaction_begin(s->run, s->parent_span, s->kind,
											s->model, contents);
	/*
	 * a summary's request is new each time: no request memo; the ledger
	 * row is the session's, run or no run
	 */
	invocation_id = s->run ? s->run->invocation_id : adk_running_invocation();
	s->call = adk_model_start(s->model, contents, NULL, config, false,
							  NULL, NULL, NULL,
							  &(AdkCallFor) {
								  s->app, s->user, invocation_id,
								  adk_trace_context_for(invocation_id)
							  });
	*error = NULL;
	return true;
}

/*
 * The summarizer call raised before its answer was taken (its model
 * cannot be loaded, its answer cannot be made): its span, if still open,
 * ends with the error (error.type _OTHER, OpenTelemetry's fallback).
 */
static void
summary_span_failed(Summarizer *s, const char *error)
{
	if (s->run == NULL || s->span == 0)
		return;
	adk_span_model_fail(s->run, s->span, "_OTHER", error ? error : "unknown error");
	s->span = 0;
}

/*
 * The answer of a summarizer call that is ready, charged to the budgets:
 * the summary, or NULL with *error.  The call is gone afterwards.
 */
static char *
summary_finish(Summarizer *s, char **error)
{
	AdkModelCall *call = s->call;
	Jsonb	   *response;
	JsonbValue *v;
	JsonbValue *parts;
	JsonbIterator *it;
	JsonbValue	p;
	JsonbIteratorToken tok;
	StringInfoData text;

	s->call = NULL;				/* adk_model_finish consumes it, or drops it */
	/* its ledger row names its span */
	if (s->run)
		adk_span_model_finishing(s->run, s->span);
	response = adk_model_finish(call);
	if (s->run)
		adk_span_model_end(s->run, s->span, response);
	s->span = 0;
	adk_budget_charge_to(s->app, s->user, s->taken_at,
						 adk_response_tokens(response));

	v = adk_jsonb_get(&response->root, "error_code");
	if (v != NULL && v->type == jbvString)
	{
		char	   *msg = plan_text(response, "error_message");

		*error = psprintf("the summarizer model \"%s\" failed: %.*s: %s", s->model,
						  v->val.string.len, v->val.string.val, msg ? msg : "");
		return NULL;
	}
	initStringInfo(&text);
	v = adk_jsonb_get(&response->root, "content");
	if (v != NULL && v->type == jbvBinary &&
		(parts = adk_jsonb_get(v->val.binary.data, "parts")) != NULL &&
		parts->type == jbvBinary)
	{
		it = JsonbIteratorInit(parts->val.binary.data);
		while ((tok = JsonbIteratorNext(&it, &p, true)) != WJB_DONE)
		{
			JsonbValue *t;
			JsonbValue *thought;

			if (tok != WJB_ELEM || p.type != jbvBinary)
				continue;
			thought = adk_jsonb_get(p.val.binary.data, "thought");
			if (thought && thought->type == jbvBool && thought->val.boolean)
				continue;
			if ((t = adk_jsonb_get(p.val.binary.data, "text")) != NULL && t->type == jbvString)
				appendBinaryStringInfo(&text, t->val.string.val, t->val.string.len);
		}
	}
	if (text.len == 0)
	{
		*error = psprintf("the summarizer model \"%s\" returned no text", s->model);
		return NULL;
	}
	*error = NULL;
	return text.data;
}

/*
 * Append the compaction event for plan under the session row lock, and
 * record its range.  Returns its seq, or 0 with *refused saying why the
 * check refused it.
 */
int64
adk_compaction_append_summary(const char *app, const char *user,
							  const char *session, Jsonb *plan,
							  const char *summary, const char *kind,
							  const char *invocation_id, char **refused)
{
	Oid			types[8] = {TEXTOID, TEXTOID, TEXTOID, JSONBOID, INT8OID, TEXTOID,
	TEXTOID, TEXTOID};
	Datum		args[8];
	bool		isnull;
	Datum		d;
	JsonWriter	w;
	AdkStoredEvent stored;

	args[0] = CStringGetTextDatum(app);
	args[1] = CStringGetTextDatum(user);
	args[2] = CStringGetTextDatum(session);
	args[3] = JsonbPGetDatum(plan);
	d = adk_compaction_owner_query("SELECT adk._compaction_check($1, $2, $3, $4)",
								   4, types, args, NULL, 1, &isnull);
	if (!isnull)
	{
		*refused = TextDatumGetCString(d);
		return 0;
	}
	*refused = NULL;

	/* ADK's record: actions.compaction, no content of its own */
	jw_init(&w);
	jw_begin_object(&w);
	jw_key(&w, "invocation_id");
	jw_string(&w, invocation_id);
	jw_key(&w, "author");
	jw_string(&w, "user");
	jw_key(&w, "actions");
	jw_begin_object(&w);
	jw_key(&w, "compaction");
	jw_begin_object(&w);
	jw_key(&w, "start_timestamp");
	jw_value(&w, adk_jsonb_get(&plan->root, "start_timestamp"));
	jw_key(&w, "end_timestamp");
	jw_value(&w, adk_jsonb_get(&plan->root, "end_timestamp"));
	jw_key(&w, "compacted_content");
	adk_jw_text_content(&w, "model", summary);
	jw_end_object(&w);
	jw_end_object(&w);
	jw_end_object(&w);
	adk_store_append(app, user, session, jw_finish(&w), &stored);

	args[3] = Int64GetDatum(stored.seq);
	args[4] = CStringGetTextDatum(stored.id);
	args[5] = JsonbPGetDatum(plan);
	args[6] = CStringGetTextDatum(kind);
	args[7] = CStringGetTextDatum(invocation_id);
	types[3] = INT8OID;
	types[4] = TEXTOID;
	types[5] = JSONBOID;
	(void) adk_compaction_owner_query("SELECT adk._compaction_record($1, $2, $3, $4, $5, $6, $7, $8)",
									  8, types, args, NULL, 1, &isnull);
	return stored.seq;
}

/*
 * The request's size in tokens: the newest model response's
 * prompt_token_count when one came after the last compaction, else the
 * request's characters / 4.
 */
static int64
estimate_tokens(AdkRun *run, AdkAgent *agent, Jsonb *contents)
{
	int64		tokens;
	char	   *instruction;
	char	   *had_error;
	int64		chars;

	/* store/session_read.c */
	if (adk_session_prompt_tokens(run->app, run->user, run->session, &tokens))
		return tokens;
	chars = strlen(JsonbToCString(NULL, &contents->root, VARSIZE(contents)));
	/*
	 * Only the instruction's length counts here.  An instruction that
	 * cannot be built is the request's error, reported when the request is
	 * built (flow.c): the message made now would live in this step's
	 * memory, gone by then.
	 */
	had_error = run->instruction_error;
	instruction = adk_build_instruction(run, agent);
	run->instruction_error = had_error;
	if (instruction)
		chars += strlen(instruction);
	return chars / 4;
}

/*
 * A compaction that failed or was refused: logged, and kept on the
 * invocation.  The run goes on.
 */
static void
record_problem(AdkRun *run, const char *what, const char *message)
{
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		args[2];
	AdkOwnerSave save;
	char	   *text = psprintf("%s: %s", what, message ? message : "unknown error");

	ereport(LOG,
			(errmsg("compaction of session \"%s\" (app \"%s\", invocation \"%s\"): %s",
					run->session, run->app, run->invocation_id, text)));
	args[0] = CStringGetTextDatum(run->invocation_id);
	args[1] = CStringGetTextDatum(text);
	adk_owner_spi_begin(&save);
	if (adk_spi_exec("SELECT adk._compaction_error_set($1, $2)",
					 2, types, args, NULL, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not record the compaction error");
	adk_owner_spi_end(&save);
}
