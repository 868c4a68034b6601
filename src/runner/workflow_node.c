/*-------------------------------------------------------------------------
 *
 * workflow_node.c
 *	  What a graph workflow node's settings do to one of its activations
 *	  (docs/workflows.md "Node settings"): ADK-Go's NodeConfig and node
 *	  schemas (workflow/config.go, retry.go, base_node.go, scheduler.go).
 *	  The scheduler (workflow.c) calls these hooks for a node of any kind;
 *	  defs.c refuses a join's retry and timeout, which have no call to act
 *	  on.
 *
 * Input schema: before an activation runs, its input is checked against
 * input_schema -- a join's each predecessor's output, as ADK-Go's
 * JoinNode.ValidateInput does; no input (NULL, JSON null) is not checked;
 * a string input the schema does not take as a string is tried as JSON
 * text first (ADK-Go's defaultValidateInput), and the parsed value is
 * then the input.  A mismatch fails the node, never retried (ADK-Go's
 * default ShouldRetry: the input is the same on every attempt).
 *
 * Output schema: an output is checked against output_schema before its
 * event is stored (ADK-Go's validateAndStampOutput), a string tried as
 * JSON text as for the input; a mismatch fails the node, not retried.
 *
 * Retry (ADK-Go's RetryConfig, completed with its defaults when the node
 * was written): an attempt that fails -- the function or tool raised, or
 * ran past its timeout -- is run again after CalculateDelay's wait
 * (initial_delay * backoff_factor^(failed - 1), at most max_delay, then
 * +- jitter * delay at random) until max_attempts attempts failed.  Each
 * attempt is its own subtransaction (the caller's fn: subxact.c, tools.c),
 * so a failed attempt leaves nothing behind, no event either (ADK-Go
 * yields none for it); the activation's adk.run_states row counts each
 * new attempt in its attempt column.  The wait is no wait inside a step:
 * the activation is set aside with the time its next attempt is due
 * (workflow.c), the workflow's other branches -- and a job worker's other
 * runs -- go on meanwhile, and the run waits as for a model call in
 * flight (ADK_STEP_WAIT) when nothing else can; a cancel (adk_cancel, a
 * query cancel, statement_timeout) during it cancels the whole run.
 *
 * Timeout: a timer (PostgreSQL's timeout.c, as adk.tool_timeout's in
 * tools.c) armed around one attempt; when it fires it cancels the query
 * running in the attempt as statement_timeout would, and that cancel --
 * only that one: a user's cancel is re-thrown -- becomes the attempt's
 * failure, which retry may run again.  Disarmed on every way out.
 *
 * wait_for_output: an activation that ended without output (ADK-Go's
 * WaitForOutput) does not complete: its successors do not run.
 *
 * IDENTIFICATION
 *	  src/runner/workflow_node.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "common/pg_prng.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/latch.h"
/* json-c names a type json_object, as fmgrprotos.h a function */
#define json_object pg_json_object_sqlfn
#include "utils/builtins.h"
#undef json_object
#include "utils/numeric.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include <json-c/json.h>

#include "common/json_bridge.h"
#include "common/json_limits.h"
#include "common/json_writer.h"
#include "common/jsonb_util.h"
#include "common/owner.h"
#include "common/spi_plans.h"
#include "runner/workflow_node.h"

static TimeoutId node_timeout_id = MAX_TIMEOUTS;
static volatile sig_atomic_t node_timed_out = false;

static void node_timeout_handler(void);
static bool attempt(AdkWfNodeSettings *s, AdkWfAttemptFn fn, void *arg,
					char **error);
static char *check_value(Jsonb *schema, Jsonb **value);
static Jsonb *parse_json_text(const char *text);
static bool schema_takes_string(Jsonb *schema);
static bool is_json_null(Jsonb *value);
static double retry_number(Jsonb *retry, const char *key, double dflt);

/*
 * The settings of the workflow's nodes that have any, read once as the
 * owner (in the current memory context).
 */
List *
adk_wfnode_load(const char *workflow)
{
	AdkOwnerSave save;
	Oid			type = TEXTOID;
	Datum		arg = CStringGetTextDatum(workflow);
	MemoryContext caller = CurrentMemoryContext;
	List	   *all = NIL;
	uint64		i;

	adk_owner_spi_begin(&save);
	if (adk_spi_exec("SELECT * FROM adk._workflow_node_settings($1)",
					 1, &type, &arg, NULL, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the node settings of workflow \"%s\"",
			 workflow);
	for (i = 0; i < SPI_processed; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		MemoryContext spi = MemoryContextSwitchTo(caller);
		AdkWfNodeSettings *s = palloc0(sizeof(AdkWfNodeSettings));
		bool		isnull;
		Datum		d;

		s->name = SPI_getvalue(row, desc, 1);
		d = SPI_getbinval(row, desc, 2, &isnull);
		if (!isnull)
		{
			Jsonb	   *retry = DatumGetJsonbP(d);

			s->retry = true;
			s->max_attempts = (int) retry_number(retry, "max_attempts", 5);
			s->initial_delay = retry_number(retry, "initial_delay", 1);
			s->max_delay = retry_number(retry, "max_delay", 60);
			s->backoff_factor = retry_number(retry, "backoff_factor", 2);
			s->jitter = retry_number(retry, "jitter", 1);
		}
		d = SPI_getbinval(row, desc, 3, &isnull);
		if (!isnull)
			s->timeout_ms = DatumGetInt32(d);
		d = SPI_getbinval(row, desc, 4, &isnull);
		s->input_schema = isnull ? NULL : DatumGetJsonbPCopy(d);
		d = SPI_getbinval(row, desc, 5, &isnull);
		s->output_schema = isnull ? NULL : DatumGetJsonbPCopy(d);
		s->wait_for_output = DatumGetBool(SPI_getbinval(row, desc, 6, &isnull));
		all = lappend(all, s);
		MemoryContextSwitchTo(spi);
	}
	adk_owner_spi_end(&save);
	return all;
}

/* A number of a retry config; the default when absent */
static double
retry_number(Jsonb *retry, const char *key, double dflt)
{
	JsonbValue *v = adk_jsonb_get(&retry->root, key);

	if (v == NULL || v->type != jbvNumeric)
		return dflt;
	return DatumGetFloat8(DirectFunctionCall1(numeric_float8,
											  NumericGetDatum(v->val.numeric)));
}

/* The node's settings, NULL when it has none */
AdkWfNodeSettings *
adk_wfnode_find(List *settings, const char *node)
{
	ListCell   *lc;

	foreach(lc, settings)
	{
		AdkWfNodeSettings *s = (AdkWfNodeSettings *) lfirst(lc);

		if (strcmp(s->name, node) == 0)
			return s;
	}
	return NULL;
}

/*
 * Before an activation runs: its input against input_schema (see the file
 * header); *input may be replaced by the value a string parsed to.  false
 * with *error when it does not match.
 */
bool
adk_wfnode_input(AdkWfNodeSettings *s, bool join, Jsonb **input, char **error)
{
	char	   *problem;

	if (s == NULL || s->input_schema == NULL || *input == NULL ||
		is_json_null(*input))
		return true;
	if (join && adk_jsonb_is_object(&(*input)->root))
	{
		/* each predecessor's output, a null one not checked */
		JsonbIterator *it = JsonbIteratorInit(&(*input)->root);
		JsonbValue	v;
		JsonbIteratorToken tok;
		JsonWriter	w;

		jw_init(&w);
		jw_begin_object(&w);
		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		{
			char	   *pred;
			Jsonb	   *value;

			if (tok != WJB_KEY)
				continue;
			pred = pnstrdup(v.val.string.val, v.val.string.len);
			(void) JsonbIteratorNext(&it, &v, true);
			value = adk_jsonb_value_to_jsonb(&v);
			if (v.type != jbvNull &&
				(problem = check_value(s->input_schema, &value)) != NULL)
			{
				*error = psprintf("input validation failed: predecessor \"%s\": %s",
								  pred, problem);
				return false;
			}
			jw_key(&w, pred);
			jw_jsonb(&w, value);
		}
		jw_end_object(&w);
		*input = jw_finish(&w);
		return true;
	}
	if ((problem = check_value(s->input_schema, input)) != NULL)
	{
		*error = psprintf("input validation failed: %s", problem);
		return false;
	}
	return true;
}

/*
 * After an activation produced output, before its event: the output
 * against output_schema; *output may be replaced by the value a string
 * parsed to.  false with *error when it does not match.
 */
bool
adk_wfnode_output(AdkWfNodeSettings *s, Jsonb **output, char **error)
{
	char	   *problem;

	if (s == NULL || s->output_schema == NULL || *output == NULL ||
		is_json_null(*output))
		return true;
	if ((problem = check_value(s->output_schema, output)) != NULL)
	{
		*error = psprintf("output validation failed: %s", problem);
		return false;
	}
	return true;
}

/*
 * Whether an activation that ended with output (NULL: none) waits instead
 * of completing: wait_for_output and no output.
 */
bool
adk_wfnode_waits(AdkWfNodeSettings *s, Jsonb *output)
{
	return s != NULL && s->wait_for_output &&
		(output == NULL || is_json_null(output));
}

/*
 * NULL when value matches schema; else what is wrong.  A string the
 * schema does not take as a string is tried as JSON text first: when that
 * parses and matches, *value becomes the parsed value.  Else the string
 * itself is checked (an enum of strings may take it).
 */
static char *
check_value(Jsonb *schema, Jsonb **value)
{
	JsonbValue	v;

	if (JB_ROOT_IS_SCALAR(*value) && JsonbExtractScalar(&(*value)->root, &v) &&
		v.type == jbvString && !schema_takes_string(schema))
	{
		Jsonb	   *parsed = parse_json_text(pnstrdup(v.val.string.val,
													  v.val.string.len));

		if (parsed != NULL && adk_schema_problem(schema, parsed) == NULL)
		{
			*value = parsed;
			return NULL;
		}
	}
	return adk_schema_problem(schema, *value);
}

/* JSON text as jsonb; NULL when it is not (strict) JSON */
static Jsonb *
parse_json_text(const char *text)
{
	AdkJsonParseError err;
	const char *why;
	struct json_object *obj = adk_json_parse(text, strlen(text), 64,
											 JSON_TOKENER_STRICT, &err, &why);
	Jsonb	   *volatile parsed = NULL;

	if (obj == NULL)
		return NULL;
	PG_TRY();
	{
		parsed = adk_jsonc_to_jsonb(obj);
	}
	PG_FINALLY();
	{
		json_object_put(obj);
	}
	PG_END_TRY();
	return parsed;
}

/* "type": "string", or a list naming "string" */
static bool
schema_takes_string(Jsonb *schema)
{
	JsonbValue *type = adk_jsonb_get(&schema->root, "type");
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	if (type == NULL)
		return false;
	if (type->type == jbvString)
		return type->val.string.len == 6 &&
			memcmp(type->val.string.val, "string", 6) == 0;
	if (type->type != jbvBinary)
		return false;
	it = JsonbIteratorInit(type->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_ELEM && v.type == jbvString && v.val.string.len == 6 &&
			memcmp(v.val.string.val, "string", 6) == 0)
			return true;
	}
	return false;
}

static bool
is_json_null(Jsonb *value)
{
	JsonbValue	v;

	return JB_ROOT_IS_SCALAR(value) && JsonbExtractScalar(&value->root, &v) &&
		v.type == jbvNull;
}

/*
 * One attempt of the node's work, fn(arg) -- its own subtransaction --,
 * under its timeout; *failed counts the attempts that failed so far.
 * WF_ATTEMPT_OK: it completed; WF_ATTEMPT_RETRY: it failed and its
 * RetryConfig runs it again after *wait_ms (the caller waits without
 * blocking anything: workflow.c); WF_ATTEMPT_FAILED: no attempt is left,
 * *error is the last one's (with how many were made when more than one).
 */
AdkWfAttempt
adk_wfnode_attempt(AdkWfNodeSettings *s, int *failed, AdkWfAttemptFn fn,
				   void *arg, char **error, long *wait_ms)
{
	if (attempt(s, fn, arg, error))
		return WF_ATTEMPT_OK;
	return adk_wfnode_failed(s, failed, error, wait_ms);
}

/*
 * An attempt of the node's work failed with *error -- a function's or a
 * tool's call, or an agent or nested workflow node's lane (workflow.c) --
 * and *failed counts it: WF_ATTEMPT_RETRY, run again after *wait_ms, or
 * WF_ATTEMPT_FAILED, no attempt left (*error says how many were made when
 * more than one).
 */
AdkWfAttempt
adk_wfnode_failed(AdkWfNodeSettings *s, int *failed, char **error,
				  long *wait_ms)
{
	(*failed)++;
	if (!adk_wfnode_retries_left(s, *failed))
	{
		if (*failed > 1)
			*error = psprintf("%s (attempt %d of %d)", *error, *failed,
							  s->max_attempts);
		return WF_ATTEMPT_FAILED;
	}
	*wait_ms = (long) ceil(adk_wfnode_delay(s, *failed) * 1000.0);
	return WF_ATTEMPT_RETRY;
}

/*
 * Whether an attempt that fails after failed attempts failed would be run
 * again (ADK-Go's ShouldRetry, but for the error: the caller knows which
 * failures a retry takes -- a call's, never a schema mismatch).
 */
bool
adk_wfnode_retries_left(AdkWfNodeSettings *s, int failed)
{
	return s != NULL && s->retry && s->max_attempts > 1 &&
		failed < s->max_attempts;
}

/*
 * The settings an item of a parallel worker is attempted under: its
 * worker node's (its timeout), with the parallel worker's retry -- ADK-Go's
 * ParallelWorker retries each item on its own by its RetryConfig, the
 * worker node having none.  The worker's own when the parallel worker has
 * no retry.
 */
AdkWfNodeSettings *
adk_wfnode_item_settings(AdkWfNodeSettings *worker, AdkWfNodeSettings *pw)
{
	AdkWfNodeSettings *s;

	if (pw == NULL || !pw->retry)
		return worker;
	s = palloc0(sizeof(AdkWfNodeSettings));
	if (worker != NULL)
		*s = *worker;
	s->retry = true;
	s->max_attempts = pw->max_attempts;
	s->initial_delay = pw->initial_delay;
	s->max_delay = pw->max_delay;
	s->backoff_factor = pw->backoff_factor;
	s->jitter = pw->jitter;
	return s;
}

/*
 * ADK-Go's CalculateDelay, in seconds, after failed attempts failed:
 * initial_delay * backoff_factor^(failed - 1) (a factor of 0 keeps it
 * constant), at most max_delay (0: no cap), then moved by up to jitter *
 * delay either way at random, never below 0.
 */
double
adk_wfnode_delay(AdkWfNodeSettings *s, int failed)
{
	double		factor = s->backoff_factor > 0 ? s->backoff_factor : 1.0;
	double		delay = s->initial_delay;
	int			i;

	if (failed <= 0)
		return 0;
	for (i = 1; i < failed && delay < 1e9; i++)
		delay *= factor;
	if (s->max_delay > 0 && delay > s->max_delay)
		delay = s->max_delay;
	if (s->jitter > 0)
	{
		delay += (pg_prng_double(&pg_global_prng_state) * 2.0 - 1.0) *
			s->jitter * delay;
		if (delay < 0)
			delay = 0;
	}
	return Min(delay, 1e9);
}

/*
 * One attempt, under the node's timeout when it has one: the timer's
 * cancel becomes the attempt's failure; any other cancel goes on up.
 */
static bool
attempt(AdkWfNodeSettings *s, AdkWfAttemptFn fn, void *arg, char **error)
{
	MemoryContext caller = CurrentMemoryContext;
	volatile bool ok = false;

	if (s == NULL || s->timeout_ms <= 0)
		return fn(arg, error);
	if (node_timeout_id == MAX_TIMEOUTS)
		node_timeout_id = RegisterTimeout(USER_TIMEOUT, node_timeout_handler);
	node_timed_out = false;
	enable_timeout_after(node_timeout_id, s->timeout_ms);
	PG_TRY();
	{
		ok = fn(arg, error);
	}
	PG_CATCH();
	{
		disable_timeout(node_timeout_id, false);
		if (!node_timed_out)
			PG_RE_THROW();
		/* fn's subtransaction is rolled back: only the message is left */
		MemoryContextSwitchTo(caller);
		FlushErrorState();
		node_timed_out = false;
		*error = psprintf("it ran longer than its timeout (%d ms) and was stopped",
						  s->timeout_ms);
		return false;
	}
	PG_END_TRY();
	disable_timeout(node_timeout_id, false);
	if (node_timed_out)
	{
		/* it fired as fn returned: its cancel was not for anything else */
		QueryCancelPending = false;
		node_timed_out = false;
	}
	return ok;
}

/* The node's timeout fired: cancel its query, as statement_timeout would */
static void
node_timeout_handler(void)
{
	node_timed_out = true;
	QueryCancelPending = true;
	InterruptPending = true;
	SetLatch(MyLatch);
}

/* A new attempt of the activation at path begins: its row counts it */
void
adk_wfnode_retrying(AdkRun *run, const char *path)
{
	AdkOwnerSave save;
	Oid			types[5] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		args[5];

	if (run->invocation_id == NULL)
		return;
	args[0] = CStringGetTextDatum(run->app);
	args[1] = CStringGetTextDatum(run->user);
	args[2] = CStringGetTextDatum(run->session);
	args[3] = CStringGetTextDatum(run->invocation_id);
	args[4] = CStringGetTextDatum(path);
	adk_owner_spi_begin(&save);
	if (adk_spi_exec("SELECT adk._workflow_node_attempt($1, $2, $3, $4, $5)",
					 5, types, args, NULL, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not count an attempt of node \"%s\"", path);
	adk_owner_spi_end(&save);
}
