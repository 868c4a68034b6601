/*-------------------------------------------------------------------------
 *
 * compaction.c
 *	  Context compaction (SPEC §7, 000 §四.4.6): summaries that stand in
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

#include "utils/builtins.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "adk_runner.h"
#include "common/json_writer.h"
#include "common/jsonb_util.h"
#include "common/spi_plans.h"
#include "model/generate.h"
#include "runner/budget.h"
#include "runner/compaction.h"
#include "runner/runner.h"
#include "store/append.h"
#include "store/owner.h"


/* ADK Python's LlmEventSummarizer prompt */
#define SUMMARY_PROMPT \
	"The following is a conversation history between a user and an AI agent. " \
	"Please summarize the conversation, focusing on key information and decisions made, " \
	"as well as any unresolved questions or tasks. The summary should be concise and " \
	"capture the essence of the interaction.\n\n"

typedef struct Step
{
	AdkRun	   *run;
	AdkAgent   *agent;
	const char *branch;
	Jsonb	   *contents;
	bool		done;			/* a summary was appended */
} Step;

static AdkCompaction *load_config(AdkRun *run);
static bool summarize_and_append(AdkRun *run, AdkCompaction *cfg, Jsonb *plan,
								 const char *kind, const char *what);
static void tail_step(void *arg);
static void sliding_step(void *arg);
static int64 estimate_tokens(AdkRun *run, AdkAgent *agent, Jsonb *contents);
static void record_problem(AdkRun *run, const char *what, const char *message);
static char *plan_text(Jsonb *plan, const char *key);

/*
 * Tail retention (SPEC §7), before each model call.
 */
bool
adk_compaction_before_model(AdkRun *run, AdkAgent *agent, const char *branch,
							Jsonb *contents)
{
	Step		s;
	char	   *error;

	AdkCompaction *cfg;

	if (run->compacted)
		return false;
	/* no subtransaction when the app does not use tail retention */
	cfg = load_config(run);
	if (!cfg->enabled || cfg->threshold <= 0)
		return false;
	memset(&s, 0, sizeof(s));
	s.run = run;
	s.agent = agent;
	s.branch = branch;
	s.contents = contents;
	if (!adk_run_guarded(tail_step, &s, &error))
	{
		record_problem(run, "tail retention failed", error);
		return false;
	}
	return s.done;
}

/*
 * The sliding window (SPEC §7), after an invocation that did not fail and
 * did not run tail retention.
 */
void
adk_compaction_after_run(AdkRun *run)
{
	Step		s;
	char	   *error;

	AdkCompaction *cfg;

	if (run->failed || run->compacted)
		return;
	cfg = load_config(run);
	if (!cfg->enabled || cfg->interval <= 0)
		return;
	memset(&s, 0, sizeof(s));
	s.run = run;
	if (!adk_run_guarded(sliding_step, &s, &error))
		record_problem(run, "sliding window compaction failed", error);
}

static void
tail_step(void *arg)
{
	Step	   *s = (Step *) arg;
	AdkRun	   *run = s->run;
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
	if (!summarize_and_append(run, cfg, plan, "tail_retention", "tail retention"))
		return;
	run->compacted = true;
	s->done = true;
}

static void
sliding_step(void *arg)
{
	Step	   *s = (Step *) arg;
	AdkRun	   *run = s->run;
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
	/* one call of the range function: [from_seq, to_seq], no row if none */
	d = adk_compaction_owner_query("SELECT ARRAY[r.from_seq, r.to_seq]"
								   "  FROM adk._sliding_window_range($1, $2, $3, $4, $5) r"
								   " WHERE r.from_seq IS NOT NULL AND r.to_seq IS NOT NULL",
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
	(void) summarize_and_append(run, cfg, plan, "sliding_window",
								"sliding window compaction");
}

/*
 * Summarize the events of plan and append the summary as a compaction of
 * the given kind; a failure or a refused append is recorded on the
 * invocation (what names the compaction in that record).
 */
static bool
summarize_and_append(AdkRun *run, AdkCompaction *cfg, Jsonb *plan,
					 const char *kind, const char *what)
{
	char	   *summary;
	char	   *error;
	char	   *refused;

	summary = adk_compaction_summarize(run->app, run->user, cfg->summarizer,
									   cfg->own_summarizer ? NULL :
									   run->root->generate_config,
									   plan, &error);
	if (summary == NULL)
	{
		record_problem(run, psprintf("%s failed", what), error);
		return false;
	}
	if (adk_compaction_append_summary(run->app, run->user, run->session,
									  plan, summary, kind,
									  run->invocation_id, &refused) == 0)
	{
		record_problem(run, psprintf("%s summary refused", what), refused);
		return false;
	}
	return true;
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

	if (run->compaction)
		return run->compaction;
	/* kept for the whole run: not in the memory of the round that asks */
	caller = MemoryContextSwitchTo(GetMemoryChunkContext(run));
	cfg = palloc0(sizeof(AdkCompaction));
	if (!run->compaction_configured)
	{
		/* the cached app row says compaction is off: nothing to read */
		MemoryContextSwitchTo(caller);
		run->compaction = cfg;
		return cfg;
	}
	args[0] = CStringGetTextDatum(run->app);
	adk_become_owner(&save);
	SPI_connect();
	if (adk_spi_exec("SELECT coalesce((a.compaction OPERATOR(pg_catalog.->>) 'compaction_interval')::integer, 0),"
					 "       coalesce((a.compaction OPERATOR(pg_catalog.->>) 'overlap_size')::integer, 0),"
					 "       coalesce((a.compaction OPERATOR(pg_catalog.->>) 'token_threshold')::bigint, 0),"
					 "       coalesce((a.compaction OPERATOR(pg_catalog.->>) 'event_retention_size')::integer, 0),"
					 "       coalesce(a.compaction OPERATOR(pg_catalog.->>) 'summarizer_model', adk._agent_model(a.root_agent)),"
					 "       a.compaction OPERATOR(pg_catalog.?) 'summarizer_model'"
					 "  FROM adk.apps a"
					 " WHERE a.name OPERATOR(pg_catalog.=) $1 AND a.compaction IS NOT NULL",
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
	SPI_finish();
	adk_restore_user(&save);
	MemoryContextSwitchTo(caller);
	if (cfg->enabled && cfg->summarizer == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("app \"%s\" has no summarizer model", run->app),
				 errhint("Set summarizer_model in the app's compaction.")));
	run->compaction = cfg;
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
	adk_become_owner(&save);
	SPI_connect();
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
	SPI_finish();
	adk_restore_user(&save);
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
 * NULL with *error.  The call is taken from and charged to the budgets of
 * app and user like every model call (a spent budget: no call, *error).
 */
char *
adk_compaction_summarize(const char *app, const char *user, const char *model,
						 Jsonb *config, Jsonb *plan, char **error)
{
	StringInfoData prompt;
	char	   *prior = plan_text(plan, "prior_summary");
	char	   *transcript = plan_text(plan, "transcript");
	Jsonb	   *response;
	JsonbValue *v;
	JsonbValue *parts;
	JsonbIterator *it;
	JsonbValue	p;
	JsonbIteratorToken tok;
	StringInfoData text;
	JsonWriter	w;
	TimestampTz taken_at;
	char	   *refused;

	refused = adk_budget_try(app, user, &taken_at);
	if (refused != NULL)
	{
		*error = psprintf("BUDGET_EXCEEDED: %s", refused);
		return NULL;
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
	response = adk_model_call(model, jw_finish(&w), NULL, config, false, NULL, NULL);
	adk_budget_charge_to(app, user, taken_at, adk_response_tokens(response));

	v = adk_jsonb_get(&response->root, "error_code");
	if (v != NULL && v->type == jbvString)
	{
		char	   *msg = plan_text(response, "error_message");

		*error = psprintf("the summarizer model \"%s\" failed: %.*s: %s", model,
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
		*error = psprintf("the summarizer model \"%s\" returned no text", model);
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
	jw_begin_object(&w);
	jw_key(&w, "role");
	jw_string(&w, "model");
	jw_key(&w, "parts");
	jw_begin_array(&w);
	jw_begin_object(&w);
	jw_key(&w, "text");
	jw_string(&w, summary);
	jw_end_object(&w);
	jw_end_array(&w);
	jw_end_object(&w);
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
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		args[3];
	bool		isnull;
	Datum		d;
	char	   *instruction;
	int64		chars;

	args[0] = CStringGetTextDatum(run->app);
	args[1] = CStringGetTextDatum(run->user);
	args[2] = CStringGetTextDatum(run->session);
	d = adk_compaction_owner_query("SELECT (e.event_data OPERATOR(pg_catalog.#>>) '{usage_metadata,prompt_token_count}')::pg_catalog.int8"
								   "  FROM adk.events e"
								   " WHERE e.app_name OPERATOR(pg_catalog.=) $1"
								   "   AND e.user_id OPERATOR(pg_catalog.=) $2"
								   "   AND e.session_id OPERATOR(pg_catalog.=) $3"
								   "   AND e.event_data OPERATOR(pg_catalog.?) 'usage_metadata'"
								   "   AND e.seq OPERATOR(pg_catalog.>) coalesce((SELECT pg_catalog.max(c.seq) FROM adk.compactions c"
								   "        WHERE c.app_name OPERATOR(pg_catalog.=) $1"
								   "          AND c.user_id OPERATOR(pg_catalog.=) $2"
								   "          AND c.session_id OPERATOR(pg_catalog.=) $3), 0)"
								   " ORDER BY e.seq DESC LIMIT 1",
								   3, types, args, NULL, 1, &isnull);
	if (!isnull)
		return DatumGetInt64(d);
	chars = strlen(JsonbToCString(NULL, &contents->root, VARSIZE(contents)));
	instruction = adk_build_instruction(run, agent);
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
	adk_become_owner(&save);
	SPI_connect();
	if (adk_spi_exec("UPDATE adk.invocations SET compaction_error = $2"
					 " WHERE invocation_id OPERATOR(pg_catalog.=) $1",
					 2, types, args, NULL, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not record the compaction error");
	SPI_finish();
	adk_restore_user(&save);
}
