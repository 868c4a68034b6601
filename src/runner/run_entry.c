/*-------------------------------------------------------------------------
 *
 * run_entry.c
 *	  adk_run(app, user_id, session_id, message, state_delta, options): the
 *	  SQL entry.  Checks the arguments (args.c), begins the run (run.c)
 *	  and returns its events as rows, one per call, while it steps it.
 *
 * adk_run runs in the caller's transaction; each row is returned as soon
 * as its event is stored (or streamed).  A caller that stops reading
 * early, and adk_cancel between FETCHes, end the invocation 'cancelled'.
 *
 * IDENTIFICATION
 *	  src/runner/run_entry.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "common/ids.h"
#include "common/jsonb_util.h"
#include "model/http.h"
#include "runner/runner.h"
#include "shared/registry.h"
#include "store/tenancy.h"

PG_FUNCTION_INFO_V1(adk_run_text);
PG_FUNCTION_INFO_V1(adk_run_content);

typedef struct RunState RunState;
typedef struct QueuedRow QueuedRow;

static Datum run_entry(FunctionCallInfo fcinfo, Jsonb *message);
static void first_call(FunctionCallInfo fcinfo, Jsonb *message);
static bool guarded_step(AdkRun *run);
static void queue_sink(AdkRun *run, Jsonb *event, int64 seq, TimestampTz time,
					   bool partial, void *arg);
static Datum row_datum(TupleDesc desc, AdkRun *run, QueuedRow *r);
static void stop_run(Datum arg);

/*
 * adk_run(app, user_id, session_id, message text, state_delta, options)
 */
Datum
adk_run_text(PG_FUNCTION_ARGS)
{
	return run_entry(fcinfo, adk_message_arg(fcinfo, 3, true));
}

/*
 * adk_run(app, user_id, session_id, message jsonb, state_delta, options):
 * message is a whole Content ({"role": "user", "parts": [...]}), e.g.
 * function responses.
 */
Datum
adk_run_content(PG_FUNCTION_ARGS)
{
	return run_entry(fcinfo, adk_message_arg(fcinfo, 3, false));
}

/* adk_run's state between calls */
typedef struct RunState
{
	AdkRun	   *run;
	List	   *queue;			/* QueuedRow *: events not yet returned */
	bool		finished;
} RunState;

typedef struct QueuedRow
{
	Jsonb	   *event;
	int64		seq;
	TimestampTz time;
	bool		partial;
} QueuedRow;

/*
 * adk_run's first call: the arguments checked, the run begun (its first
 * events queued) in the query's memory, and stopped when the caller stops
 * reading early (LIMIT, a closed cursor).
 */
static void
first_call(FunctionCallInfo fcinfo, Jsonb *message)
{
	char	   *app = adk_arg_id(fcinfo, 0, "app name");
	char	   *user = adk_arg_id(fcinfo, 1, "user id");
	char	   *session = adk_arg_id(fcinfo, 2, "session id");
	Jsonb	   *state_delta = PG_ARGISNULL(4) ? NULL : PG_GETARG_JSONB_P(4);
	Jsonb	   *options = PG_ARGISNULL(5) ? NULL : PG_GETARG_JSONB_P(5);
	char	   *extschema = get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid));
	FuncCallContext *funcctx = SRF_FIRSTCALL_INIT();
	MemoryContext old = MemoryContextSwitchTo(funcctx->multi_call_memory_ctx);
	TupleDesc	desc;
	RunState   *st;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "adk_run must return a composite type");
	funcctx->tuple_desc = BlessTupleDesc(desc);
	st = palloc0(sizeof(RunState));
	funcctx->user_fctx = st;
	RegisterExprContextCallback(((ReturnSetInfo *) fcinfo->resultinfo)->econtext,
								stop_run, PointerGetDatum(st));
	/* the arguments outlive this call: the run keeps the message */
	message = DatumGetJsonbPCopy(PointerGetDatum(message));
	if (state_delta != NULL)
		state_delta = DatumGetJsonbPCopy(PointerGetDatum(state_delta));
	st->run = adk_run_begin(app, user, session, message, state_delta,
							options, NULL, extschema, queue_sink, st);
	MemoryContextSwitchTo(old);
}

/*
 * adk_run's rows.  A value-per-call set-returning function: each call does
 * the work up to the next stored (or streamed) event and returns it, so in
 * a select list the events come out as the run makes them -- through a
 * cursor (psql: \set FETCH_COUNT 1) each FETCH returns as soon as its event
 * is stored, while the run waits for the next FETCH.  (In FROM,
 * PostgreSQL collects all rows before returning any.)
 */
static Datum
run_entry(FunctionCallInfo fcinfo, Jsonb *message)
{
	FuncCallContext *funcctx;
	RunState   *st;
	MemoryContext old;

	if (SRF_IS_FIRSTCALL())
		first_call(fcinfo, message);

	funcctx = SRF_PERCALL_SETUP();
	st = (RunState *) funcctx->user_fctx;

	old = MemoryContextSwitchTo(funcctx->multi_call_memory_ctx);
	while (st->queue == NIL && !st->finished)
	{
		/*
		 * adk_cancel / adk_interrupt from another backend while this run
		 * waited for its caller (between FETCHes): it ends here, cancelled,
		 * with what it stored.
		 */
		if (adk_run_registry_cancel_requested())
		{
			st->finished = true;
			adk_run_stop(st->run, "CANCELLED",
						 "adk_cancel or adk_interrupt stopped the run between FETCHes");
			break;
		}
		st->finished = !guarded_step(st->run);
	}
	MemoryContextSwitchTo(old);

	if (st->queue != NIL)
	{
		QueuedRow  *r = (QueuedRow *) linitial(st->queue);
		Datum		row;

		st->queue = list_delete_first(st->queue);
		row = row_datum(funcctx->tuple_desc, st->run, r);
		/* the tuple holds a copy: a long run keeps no row it returned */
		pfree(r->event);
		pfree(r);
		SRF_RETURN_NEXT(funcctx, row);
	}

	/*
	 * SRF_RETURN_DONE frees st with the multi-call context: stop_run must
	 * not be called on it at executor shutdown.
	 */
	UnregisterExprContextCallback(((ReturnSetInfo *) fcinfo->resultinfo)->econtext,
								  stop_run, PointerGetDatum(st));
	SRF_RETURN_DONE(funcctx);
}

/*
 * One step of the agents, or, when none is left, the end of the run; when
 * the run waits for its model, the HTTP client is driven for a moment
 * (adk_run's backend has nothing else to do meanwhile) -- or, with no
 * call in flight (a workflow node waits to be retried), the backend
 * sleeps as long, interruptibly.  false when the run is over.
 */
static bool
guarded_step(AdkRun *run)
{
	AdkStepResult r = adk_run_step(run);

	if (r == ADK_STEP_WAIT)
	{
		if (adk_http_in_flight() > 0)
			adk_http_drive(ADK_HTTP_POLL_MS);
		else
		{
			/* a workflow node's retry is not due yet: a short nap */
			(void) WaitLatch(MyLatch,
							 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 ADK_HTTP_POLL_MS, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
		}
	}
	return r != ADK_STEP_DONE;
}

/*
 * The query ended before the run did (called only on a normal end, never
 * on an error): nothing more is run; the invocation ends 'cancelled' with
 * what it stored so far.
 */
static void
stop_run(Datum arg)
{
	RunState   *st = (RunState *) DatumGetPointer(arg);

	if (st->finished || st->run->invocation_id == NULL)
		return;
	st->finished = true;
	/* executor shutdown has no snapshot of its own */
	PushActiveSnapshot(GetTransactionSnapshot());
	adk_run_stop(st->run, NULL, NULL);
	PopActiveSnapshot();
}

static void
queue_sink(AdkRun *run, Jsonb *event, int64 seq, TimestampTz time,
		   bool partial, void *arg)
{
	RunState   *st = (RunState *) arg;
	MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(st));
	QueuedRow  *r = palloc(sizeof(QueuedRow));

	/*
	 * The event was made in the memory of one round of the flow, which is
	 * freed when the round ends (flow.c): the queue keeps a copy until the
	 * row is returned.
	 */
	r->event = DatumGetJsonbPCopy(JsonbPGetDatum(event));
	r->seq = seq;
	r->time = time;
	r->partial = partial;
	st->queue = lappend(st->queue, r);
	MemoryContextSwitchTo(old);
}

static Datum
row_datum(TupleDesc desc, AdkRun *run, QueuedRow *r)
{
	Datum		values[9];
	bool		nulls[9];
	JsonbValue *v;

	memset(nulls, 0, sizeof(nulls));
	v = adk_jsonb_get(&r->event->root, "id");
	if (v && v->type == jbvString)
		values[0] = PointerGetDatum(cstring_to_text_with_len(v->val.string.val, v->val.string.len));
	else
		nulls[0] = true;
	values[1] = CStringGetTextDatum(run->app);
	values[2] = CStringGetTextDatum(run->user);
	values[3] = CStringGetTextDatum(run->session);
	values[4] = CStringGetTextDatum(run->invocation_id);
	values[5] = TimestampTzGetDatum(r->time);
	nulls[5] = r->partial;
	values[6] = JsonbPGetDatum(r->event);
	values[7] = Int64GetDatum(r->seq);
	nulls[7] = r->partial;
	values[8] = BoolGetDatum(r->partial);
	return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
}
