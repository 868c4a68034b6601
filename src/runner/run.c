/*-------------------------------------------------------------------------
 *
 * run.c
 *	  One invocation's steps, for adk_run (run_entry.c) and the job
 *	  workers, in this order of work (000 §三.4-§三.6):
 *
 *	1. get the session, or create it when the app allows;
 *	2. decide the agent (route.c);
 *	3. append the user event -- on_user_message may replace the content,
 *	   state_delta goes on this event; returned only if yield_user_message;
 *	4. before_run may end the run early with content of its own (we use
 *	   that content: the documented meaning, 000 §四.4.2);
 *	5. run the agent: every non-partial event passes on_event (which may
 *	   replace or reject it), is appended, and only then returned; partial
 *	   events are returned, never stored;
 *	6. the LLM flow (flow.c);
 *	7. after_run, then the sliding window (compaction.c) -- a phase of
 *	   the run's steps like the agents': its summarizer is started in one
 *	   step and its summary appended in the step after the answer came, so
 *	   the run waits for it as for any model call -- then the memory tools'
 *	   after_run and the invocation row.
 * adk.invocations keeps a row per invocation: status, agent, timings,
 * model calls, tokens, error.  A model or plugin failure is a stored error
 * event and a failed invocation; the run goes on normally.  Invalid
 * arguments, missing definitions and query cancellation raise.
 *
 * IDENTIFICATION
 *	  src/runner/run.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/resowner.h"
#include "portability/instr_time.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "common/ids.h"
#include "common/json_writer.h"
#include "common/jsonb_util.h"
#include "common/trace_context.h"
#include "model/http.h"
#include "model/ledger.h"
#include "model/msg_cache.h"
#include "common/spi_plans.h"
#include "runner/builtin_tools.h"
#include "runner/compaction.h"
#include "runner/runner.h"
#include "runner/spans.h"
#include "shared/registry.h"
#include "store/append.h"
#include "common/owner.h"
#include "store/session_read.h"
#include "store/tenancy.h"

static AdkRun *begin_run(const char *app, const char *user,
						 const char *session, Jsonb *message,
						 Jsonb *state_delta, Jsonb *options,
						 const char *invocation_id, const char *extschema,
						 AdkEventSink sink, void *sink_arg, bool retry);
static bool continue_run(AdkRun *run, Jsonb *message, AdkAgent *agent);
static void start_run(AdkRun *run, Jsonb *message, Jsonb *state_delta,
					  const char *extschema, const char *invocation_id,
					  bool retry);
static AdkStepResult finish_run(AdkRun *run);
static AdkStepResult end_run(AdkRun *run);
static void close_run(AdkRun *run);
static AdkRun *new_run(const char *app, const char *user, const char *session,
					   Jsonb *state_delta, Jsonb *options, AdkEventSink sink,
					   void *sink_arg);
static void ensure_session(AdkRun *run, bool auto_create, const char *extschema,
						   bool foreground);
static void append_user_event(AdkRun *run, Jsonb *content, Jsonb *state_delta,
							  List *artifact_delta);
static void invocation_start(AdkRun *run, const char *agent, Jsonb *options);
static void invocation_end(AdkRun *run);
static void parse_options(AdkRun *run, Jsonb *options);
/* largest block of a run's own memory context (see new_run) */
#define RUN_MAX_BLOCK (64 * 1024)

static MemoryContext new_step_cxt(AdkRun *run);

/*
 * The memory of one step (runner.h), under the run's, made anew after
 * each step.  Not the sizes PostgreSQL keeps deleted contexts of for
 * reuse, and the smallest first block AllocSet takes (1 kB, most of it the
 * context's header): once deleted, nearly all of its memory is back with
 * malloc, so under valgrind anything kept past its step shows up as a use
 * after free.  (A context per step costs a malloc and a free.)
 */
static MemoryContext
new_step_cxt(AdkRun *run)
{
	return AllocSetContextCreate(run->run_cxt, "adk_runner step",
								 1024, ALLOCSET_DEFAULT_INITSIZE,
								 ALLOCSET_DEFAULT_MAXSIZE);
}

/*
 * The run object, in a memory context of its own under the current one.
 */
/*
 * The runs of this backend whose memory is still there (adk_run's, a job
 * worker's): when the last is gone -- freed, or deleted with its caller's
 * memory after an ERROR -- the request cache (model/msg_cache.c) is
 * emptied, so its life is "while a run is in flight".
 */
static int	live_runs = 0;

static void
run_gone(void *arg)
{
	if (--live_runs <= 0)
	{
		live_runs = 0;
		adk_msg_cache_reset();
	}
}

static AdkRun *
new_run(const char *app, const char *user, const char *session,
		Jsonb *state_delta, Jsonb *options, AdkEventSink sink, void *sink_arg)
{
	/*
	 * What a run keeps grows with the history it reads (prompt.c keeps its
	 * events and their pieces), a few kB per model call of a tool loop:
	 * blocks of at most RUN_MAX_BLOCK, so that what it holds follows what it
	 * uses instead of doubling (the default's blocks go up to 8 MB).
	 */
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "adk_runner run",
											  ALLOCSET_DEFAULT_MINSIZE,
											  ALLOCSET_DEFAULT_INITSIZE,
											  RUN_MAX_BLOCK);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	AdkRun	   *run = palloc0(sizeof(AdkRun));

	run->run_cxt = cxt;
	live_runs++;
	run->live_cb.func = run_gone;
	run->live_cb.arg = NULL;
	MemoryContextRegisterResetCallback(cxt, &run->live_cb);
	run->step_cxt = new_step_cxt(run);
	run->app = pstrdup(app);
	run->user = pstrdup(user);
	run->session = pstrdup(session);
	run->sink = sink;
	run->sink_arg = sink_arg;
	if (state_delta && !adk_jsonb_is_object(&state_delta->root))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("state_delta must be a JSON object")));
	adk_tenancy_check_app_state(app, state_delta);
	parse_options(run, options);
	adk_run_registry_enter(app, user, session);	/* adk_cancel finds it */
	/* what the backend's last run on the session kept (prompt_carry.c) */
	adk_hist_carry_take(run);
	MemoryContextSwitchTo(old);
	return run;
}


/*
 * Begin a run of app's agents for message: steps 1 to 4 of the order of
 * work above (the first stored events go to sink now), in a run object
 * under the current memory context.  invocation_id: the id to use (a
 * queued job has one already), or NULL to make one (or reuse the one a
 * function response resumes).  extschema: the schema of the adk_*
 * functions.  Then adk_run_step until ADK_STEP_DONE, and adk_run_free.
 */
AdkRun *
adk_run_begin(const char *app, const char *user, const char *session,
			  Jsonb *message, Jsonb *state_delta, Jsonb *options,
			  const char *invocation_id, const char *extschema,
			  AdkEventSink sink, void *sink_arg)
{
	return begin_run(app, user, session, message, state_delta, options,
					 invocation_id, extschema, sink, sink_arg, false);
}

/*
 * adk_run_begin for a queued run's second or later attempt: the run goes
 * on from what the earlier attempts committed of invocation_id (retry.c)
 * -- its user event is not stored again, nor its stored model calls and
 * tool calls made again -- or starts afresh when they committed nothing.
 */
AdkRun *
adk_run_retry(const char *app, const char *user, const char *session,
			  Jsonb *message, Jsonb *state_delta, Jsonb *options,
			  const char *invocation_id, const char *extschema,
			  AdkEventSink sink, void *sink_arg)
{
	return begin_run(app, user, session, message, state_delta, options,
					 invocation_id, extschema, sink, sink_arg, true);
}

static AdkRun *
begin_run(const char *app, const char *user, const char *session,
		  Jsonb *message, Jsonb *state_delta, Jsonb *options,
		  const char *invocation_id, const char *extschema,
		  AdkEventSink sink, void *sink_arg, bool retry)
{
	AdkRun	   *run = new_run(app, user, session, state_delta, options, sink,
							  sink_arg);
	MemoryContext old = CurrentMemoryContext;

	PG_TRY();
	{
		MemoryContextSwitchTo(run->run_cxt);
		start_run(run, message, state_delta, extschema, invocation_id, retry);
	}
	PG_CATCH();
	{
		adk_running_invocation_set(NULL);
		PG_RE_THROW();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	adk_running_invocation_set(NULL);
	return run;
}

/*
 * One step of a run (ADK_STEP_RAN, ADK_STEP_WAIT: its model calls -- or
 * its sliding window's summarizer -- are in flight, ADK_STEP_DONE: it has
 * ended -- step 7 ran, its invocation row is final).  The ledger is told
 * which invocation is running, and forgets it whatever happens.
 */
AdkStepResult
adk_run_step(AdkRun *run)
{
	MemoryContext old = CurrentMemoryContext;
	volatile AdkStepResult r = ADK_STEP_RAN;

	adk_running_invocation_set(run->invocation_id);
	PG_TRY();
	{
		MemoryContextSwitchTo(run->step_cxt);
		if (run->waits.ending != NULL)
		{
			/* step 7 waits for the sliding window's summarizer */
			if (!adk_compaction_ready(run->waits.ending))
				r = ADK_STEP_WAIT;
			else
			{
				AdkCompactionWait *w = run->waits.ending;

				run->waits.ending = NULL;
				(void) adk_compaction_finish(w);
				r = end_run(run);
			}
		}
		else if (run->waits.memory_ending != NULL)
		{
			/* the end waits for the new memory entries' embeddings */
			if (!adk_memory_ready(run->waits.memory_ending))
				r = ADK_STEP_WAIT;
			else
			{
				AdkMemoryWait *w = run->waits.memory_ending;

				run->waits.memory_ending = NULL;
				(void) adk_memory_finish(w);
				close_run(run);
				r = ADK_STEP_DONE;
			}
		}
		else
		{
			r = adk_agent_step(run);
			if (r == ADK_STEP_DONE)
				r = finish_run(run);
		}
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(old);
		adk_running_invocation_set(NULL);
		PG_RE_THROW();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	adk_running_invocation_set(NULL);

	/* what the step allocated by the way goes (runner.h) */
	MemoryContextDelete(run->step_cxt);
	run->step_cxt = NULL;
	run->step_cxt = new_step_cxt(run);
	return r;
}

/*
 * Whether a step of the run would do work now: false only while all it
 * waits for (its agents' model calls, its sliding window's summarizer) is
 * still in flight.  Asks, touches nothing (no transaction needed): a job
 * worker steps only the runs that are ready.
 */
bool
adk_run_ready(AdkRun *run)
{
	if (run->waits.ending != NULL)
		return adk_compaction_ready(run->waits.ending);
	if (run->waits.memory_ending != NULL)
		return adk_memory_ready(run->waits.memory_ending);
	return adk_agent_ready(run);
}

/*
 * The run ends before its steps did (an ERROR, a cancel): every model call
 * in flight stops, its summarizer's too.
 */
void
adk_run_abandon(AdkRun *run)
{
	adk_agent_abandon(run);
	if (run->waits.ending != NULL)
		adk_compaction_abandon(run->waits.ending);
	run->waits.ending = NULL;
	if (run->waits.memory_ending != NULL)
		adk_memory_abandon(run->waits.memory_ending);
	run->waits.memory_ending = NULL;
}

/*
 * The run is over (or given up): its model calls stop, its memory goes.
 */
void
adk_run_free(AdkRun *run)
{
	adk_run_abandon(run);
	MemoryContextDelete(run->run_cxt);
}

/*
 * The run is stopped from outside before its steps ended (its caller
 * stopped reading, or adk_cancel asked between FETCHes): nothing more
 * runs, and its invocation ends 'cancelled' with what it stored.  code
 * and message: the invocation's error, or NULL for the caller's stop.
 */
void
adk_run_stop(AdkRun *run, const char *code, const char *message)
{
	run->out.stopped = true;
	if (code != NULL)
	{
		run->out.error_code = MemoryContextStrdup(run->run_cxt, code);
		run->out.error_message = MemoryContextStrdup(run->run_cxt, message);
	}
	close_run(run);
}


static void
parse_options(AdkRun *run, Jsonb *options)
{
	JsonbIterator *it;
	JsonbValue	k;
	JsonbValue	v;
	JsonbIteratorToken tok;

	run->max_llm_calls = -1;
	if (options == NULL)
		return;
	if (!adk_jsonb_is_object(&options->root))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("options must be a JSON object")));
	it = JsonbIteratorInit(&options->root);
	while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE)
	{
		char	   *key;

		if (tok != WJB_KEY)
			continue;
		(void) JsonbIteratorNext(&it, &v, true);
		key = pnstrdup(k.val.string.val, k.val.string.len);
		if (strcmp(key, "yield_user_message") == 0 && v.type == jbvBool)
			run->yield_user_message = v.val.boolean;
		else if (strcmp(key, "stream") == 0 && v.type == jbvBool)
			run->stream = v.val.boolean;
		else if (strcmp(key, "traceparent") == 0)
			run->trace.traceparent = adk_span_traceparent_option(&v);
		else if (strcmp(key, "max_llm_calls") == 0 && v.type == jbvNumeric)
		{
			Datum		num = NumericGetDatum(v.val.numeric);
			int64		n = 0;

			/* an integer from 1 to INT_MAX: 2.5 is not rounded, 1e30 not cut */
			if (DatumGetInt32(DirectFunctionCall2(numeric_cmp, num,
												  NumericGetDatum(int64_to_numeric(1)))) >= 0 &&
				DatumGetInt32(DirectFunctionCall2(numeric_cmp, num,
												  NumericGetDatum(int64_to_numeric(INT_MAX)))) <= 0)
				n = DatumGetInt64(DirectFunctionCall1(numeric_int8, num));
			if (n <= 0 ||
				DatumGetInt32(DirectFunctionCall2(numeric_cmp, num,
												  NumericGetDatum(int64_to_numeric(n)))) != 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("option \"max_llm_calls\" must be a positive integer")));
			run->max_llm_calls = (int) n;
		}
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid option \"%s\"", key),
					 errhint("Options are yield_user_message (boolean), stream (boolean), max_llm_calls (positive integer) and traceparent (W3C trace context).")));
	}
}

/*
 * Raise unless options are valid adk_run options (adk_submit checks them
 * when the job is queued, not when a worker runs it).
 */
void
adk_check_run_options(Jsonb *options)
{
	AdkRun		tmp;

	memset(&tmp, 0, sizeof(tmp));
	parse_options(&tmp, options);
}

/*
 * Steps 1 to 4, and the root agent pushed for step 5 (unless the run ended
 * early).  Then adk_agent_step until it returns false, then finish_run.
 */
static void
start_run(AdkRun *run, Jsonb *message, Jsonb *state_delta,
		  const char *extschema, const char *invocation_id, bool retry)
{
	bool		auto_create;
	AdkAgent   *agent;
	Jsonb	   *replaced;
	char	   *error;
	List	   *blobs;

	run->retried = retry;		/* its nodes start again (run_states.c) */
	run->queued = invocation_id != NULL;	/* its steps commit */

	/* 1. the app and the session */
	adk_load_definitions(run, &auto_create);
	ensure_session(run, auto_create, extschema, invocation_id == NULL);

	/*
	 * 2. which agent; the invocation id (reused when resuming a call: the
	 * invocation of the call a function response answers, 000 §四.4.4)
	 */
	/* a plain text may answer the one request for input pending (hitl.c) */
	if (!retry && invocation_id == NULL)
		message = adk_hitl_plain_text(run, message);
	adk_input_decode(&run->input, message);
	adk_input_find_call(run);
	/* a task's delegating call is answered by its task alone */
	if (!retry)
		adk_task_check_answers(run);
	run->invocation_id = invocation_id ? pstrdup(invocation_id) :
		run->input.call_invocation;
	/* HITL (hitl.c): only an answer to a pending interrupt resumes */
	run->invocation_id = adk_hitl_begin(run, run->invocation_id,
										invocation_id != NULL);
	if (run->waits.ignored)
		return;					/* a repeated confirmation: nothing runs */
	if (run->invocation_id == NULL)
		run->invocation_id = adk_new_id("e-");
	adk_running_invocation_set(run->invocation_id);
	adk_run_registry_note(run->invocation_id);	/* adk_cancel finds it by id */
	agent = adk_agent_for_input(run);
	run->defs.first_agent = agent;
	if (retry && continue_run(run, message, agent))
		return;
	invocation_start(run, agent->name, NULL);
	adk_span_run_begin(run);	/* the trace and its root span */

	/* 3. the user event */
	replaced = adk_plugins_call(run, CB_ON_USER_MESSAGE,
								adk_plugin_context(run, CB_ON_USER_MESSAGE, NULL,
												   "user_content", message, NULL, NULL),
								&error);
	/* input blobs saved as artifacts (builtin_tools.c), when the app says so */
	if (error)
	{
		message = adk_builtin_input_blobs(run, message, &blobs);
		append_user_event(run, message, state_delta, blobs);
		adk_emit_error(run, agent->name, NULL, "PLUGIN_ERROR", error);
		return;
	}
	run->input.user_content = adk_builtin_input_blobs(run, replaced ? replaced : message,
												&blobs);
	append_user_event(run, run->input.user_content, state_delta, blobs);

	/* 4. before_run: an early end with the plugin's content */
	if (!adk_plugins_hook(run, CB_BEFORE_RUN, agent->name, NULL,
						  "user_content", run->input.user_content, NULL, NULL, &replaced))
		return;					/* its error event ends the run */
	if (replaced != NULL)
	{
		JsonWriter	w;
		AdkStoredEvent stored;
		Jsonb	   *event;
		const char *code;

		adk_event_start(&w, run, agent->name, NULL);
		jw_key(&w, "content");
		jw_jsonb(&w, replaced);
		jw_end_object(&w);
		event = jw_finish(&w);
		if ((error = adk_event_unstorable(event, &code)) != NULL)
		{
			adk_emit_error(run, agent->name, NULL, code, error);
			return;
		}
		adk_store_timed(run, event, &stored);
		adk_put_row(run, &stored, false);
	}
	else
		adk_push_agent(run, agent, NULL);	/* 5, 6: the agent */
}

/*
 * A retried queued run whose earlier attempts committed part of its turn
 * (retry.c): the invocation starts again where they left it -- no user
 * event, on_user_message or before_run again (they ran with the stored
 * user event, in its transaction) -- and false when they committed none
 * of it.
 */
static bool
continue_run(AdkRun *run, Jsonb *message, AdkAgent *agent)
{
	AdkRetryPoint p;

	if (!adk_retry_point(run, &p))
		return false;
	invocation_start(run, agent->name, NULL);
	adk_span_run_begin(run);
	run->input.user_content = p.user_content ? p.user_content : message;
	if (p.error_code != NULL)
	{
		/* the turn ended in its error event: only its end is recorded */
		run->out.failed = true;
		run->out.end_invocation = true;
		run->out.error_code = p.error_code;
		run->out.error_message = p.error_message ? p.error_message : "";
	}
	else
	{
		/* a task the attempt was in goes on in its scope (task_mode.c) */
		if (p.agent != NULL && p.scope != NULL)
			adk_task_retry(run, p.agent, p.scope);
		if (p.agent != NULL && p.calls != NIL)
			adk_push_agent_at_calls(run, p.agent, p.branch, p.calls);
		else if (p.agent != NULL)
			adk_push_agent(run, p.agent, p.branch);
	}
	return true;
}

/*
 * Step 7: after_run, then the sliding window (not after a failure or tail
 * retention) -- ADK_STEP_WAIT while its summarizer is in flight, the step
 * after its answer appends the summary and ends the run (end_run) --
 * else end_run now, ADK_STEP_DONE.
 */
static AdkStepResult
finish_run(AdkRun *run)
{
	if (run->waits.ignored)
	{
		adk_run_registry_leave();
		return ADK_STEP_DONE;
	}
	if (!run->out.failed)
	{
		Jsonb	   *ignored;

		(void) adk_plugins_hook(run, CB_AFTER_RUN, run->defs.first_agent->name, NULL,
								NULL, NULL, NULL, NULL, &ignored);
	}
	if (!run->out.failed)
	{
		run->waits.ending = adk_compaction_after_run(run, run->run_cxt);
		if (run->waits.ending != NULL)
			return ADK_STEP_WAIT;
	}
	return end_run(run);
}

/*
 * The rest of step 7, after the sliding window: the memory tools'
 * after_run (adk.apps.add_to_memory) -- ADK_STEP_WAIT while the new
 * entries' embeddings are in flight, the step after their answer adds the
 * entries and closes the run -- else close_run now, ADK_STEP_DONE.
 */
static AdkStepResult
end_run(AdkRun *run)
{
	if (!run->out.failed)
	{
		run->waits.memory_ending = adk_builtin_after_run(run, run->run_cxt);
		if (run->waits.memory_ending != NULL)
			return ADK_STEP_WAIT;
	}
	close_run(run);
	return ADK_STEP_DONE;
}

/*
 * The invocation's row, the run registry left, and what the run kept of
 * its history handed to the backend
 */
static void
close_run(AdkRun *run)
{
	invocation_end(run);
	adk_run_registry_leave();
	/* for the backend's next run on the session (prompt_carry.c) */
	adk_hist_carry_keep(run);
}

/*
 * The session exists (or is created now), and this transaction holds its
 * row lock from here on: a second adk_run on the same session waits for
 * this one to commit, so two invocations never interleave their events,
 * and everything read below sees the history as it stands.
 */
static void
ensure_session(AdkRun *run, bool auto_create, const char *extschema,
			   bool foreground)
{
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		args[3];
	bool		exists;

	if (foreground)
		exists = adk_session_lock_unheld(run->app, run->user, run->session);
	else
		exists = adk_session_lock(run->app, run->user, run->session, NULL);
	if (exists)
		return;

	if (!auto_create)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("session \"%s\" does not exist for app \"%s\" and user \"%s\"",
						run->session, run->app, run->user),
				 errhint("App \"%s\" does not create sessions itself; create it with adk_create_session().",
						 run->app)));
	args[0] = CStringGetTextDatum(run->app);
	args[1] = CStringGetTextDatum(run->user);
	args[2] = CStringGetTextDatum(run->session);
	SPI_connect();
	if (SPI_execute_with_args(psprintf("SELECT %s.adk_create_session($1, $2, $3)",
									   quote_identifier(extschema)),
							  3, types, args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not create the session");
	SPI_finish();
	if (!adk_session_lock(run->app, run->user, run->session, NULL))
		elog(ERROR, "could not lock the session");
}

static void
append_user_event(AdkRun *run, Jsonb *content, Jsonb *state_delta,
				  List *artifact_delta)
{
	JsonWriter	w;
	AdkStoredEvent stored;

	run->scope = run->first_scope;	/* inherited from an open task */
	/* answers to a graph agent node's calls: on its lane's branch (hitl.c) */
	adk_event_start(&w, run, "user", adk_hitl_answer_branch(run));
	run->scope = NULL;
	jw_key(&w, "content");
	jw_jsonb(&w, content);
	if (state_delta || artifact_delta)
	{
		jw_key(&w, "actions");
		jw_begin_object(&w);
		if (state_delta)
		{
			jw_key(&w, "state_delta");
			jw_jsonb(&w, state_delta);
		}
		if (artifact_delta)
		{
			jw_key(&w, "artifact_delta");
			adk_jw_artifact_delta(&w, artifact_delta);
		}
		jw_end_object(&w);
	}
	jw_end_object(&w);
	adk_store_timed(run, jw_finish(&w), &stored);
	if (run->yield_user_message)
		adk_put_row(run, &stored, false);
}

static void
invocation_start(AdkRun *run, const char *agent, Jsonb *options)
{
	Oid			types[6] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		args[6];
	AdkOwnerSave save;
	args[0] = CStringGetTextDatum(run->invocation_id);
	args[1] = CStringGetTextDatum(run->app);
	args[2] = CStringGetTextDatum(run->user);
	args[3] = CStringGetTextDatum(run->session);
	args[4] = CStringGetTextDatum(agent);
	args[5] = CStringGetTextDatum(GetUserNameFromId(GetUserId(), false));
	adk_owner_spi_begin(&save);
	if (adk_spi_exec("SELECT adk._invocation_start($1, $2, $3, $4, $5, $6)",
					 6, types, args, NULL, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not record the invocation");
	adk_owner_spi_end(&save);
}

static void
invocation_end(AdkRun *run)
{
	Oid			types[15] = {TEXTOID, TEXTOID, INT4OID, INT8OID, INT8OID, TEXTOID, TEXTOID,
		FLOAT8OID, TEXTARRAYOID, TEXTARRAYOID, TIMESTAMPTZARRAYOID, TEXTARRAYOID, JSONBOID,
	BOOLOID, TEXTARRAYOID};
	Datum		args[15];
	char		nulls[15] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	AdkOwnerSave save;
	bool		refreshed;
	bool		waiting = adk_hitl_end(run, &refreshed);	/* HITL: still waiting? */

	adk_span_run_end(run, waiting);	/* every open span ends */

	args[0] = CStringGetTextDatum(run->invocation_id);
	args[1] = CStringGetTextDatum(run->out.failed ? "failed" :
								  run->out.stopped ? "cancelled" :
								  waiting ? "waiting" : "completed");
	args[2] = Int32GetDatum(run->out.llm_calls);
	args[3] = Int64GetDatum(run->out.input_tokens);
	args[4] = Int64GetDatum(run->out.output_tokens);
	if (run->out.error_code)
	{
		args[5] = CStringGetTextDatum(run->out.error_code);
		args[6] = CStringGetTextDatum(run->out.error_message);
	}
	else if (run->out.stopped)
	{
		args[5] = CStringGetTextDatum("CANCELLED");
		args[6] = CStringGetTextDatum("the caller stopped reading adk_run's rows before the run ended");
	}
	else
		nulls[5] = nulls[6] = 'n';
	args[7] = Float8GetDatum(run->out.store_ms);
	/* its nodes' rows end as their last events say (run_states.c) */
	if (refreshed)
	{
		nulls[8] = nulls[9] = nulls[10] = nulls[11] = nulls[14] = 'n';
		args[13] = BoolGetDatum(false);
	}
	else
	{
		args[13] = BoolGetDatum(adk_node_ends(run, &args[8], &args[9], &args[10],
											  &args[11], &args[14]));
		if (args[14] == (Datum) 0)
			nulls[14] = 'n';
	}
	args[12] = run->input.user_content ? JsonbPGetDatum(run->input.user_content) : (Datum) 0;
	if (run->input.user_content == NULL)
		nulls[12] = 'n';
	adk_owner_spi_begin(&save);
	/* and the job of a queued run that paused and is resumed here */
	if (adk_spi_exec("SELECT adk._invocation_end($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
					 15, types, args, nulls, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not record the end of the invocation");
	adk_owner_spi_end(&save);
}
