/*-------------------------------------------------------------------------
 *
 * hitl.c
 *	  Human in the loop (README "Human in the loop"; 000 §四.4.3-§四.4.4):
 *	  long-running tools, tool confirmation, the RunState rows in
 *	  adk.run_states, and resuming an invocation exactly once.
 *
 * Pause.  A call to a long_running tool runs (it files the ticket, say)
 * and its id is in the model event's long_running_tool_ids (flow.c).  A
 * call to a require_confirmation tool does not run: it gets ADK-Go's
 * placeholder response, {"error": "error tool \"<name>\" requires
 * confirmation, please approve or reject"} (docs/agent-modes.md "Where we
 * differ from ADK-Go"), the function-response event carries
 * actions.requested_tool_confirmations, and the agent then emits ADK's
 * adk_request_confirmation call -- its own "adk-" id, listed in
 * long_running_tool_ids, args {"originalFunctionCall": {id, name, args},
 * "toolConfirmation": {hint, confirmed: false, payload: null}} (ADK-Go's
 * golden streams also show its struct's empty partialargs and
 * willcontinue; its reader fills them in when absent, so they are not
 * written).  Either
 * way, once the function-response event is stored the flow stops (ADK's
 * ErrNodeInterrupted: a pause, not a failure; workflow agents above stop
 * too), adk.run_states gets the invocation's row 'waiting' with the pending
 * ids, in the same transaction as the events, and the invocation ends
 * 'waiting'.
 *
 * Resume.  run.c finds the invocation of the call a function response
 * answers (resolveInvocationID); adk_hitl_begin then asks
 * adk._resume_interrupts, which locks that invocation's run_states rows
 * holding one of the message's ids as pending (SELECT ... FOR UPDATE),
 * marks those ids answered and says which node made the calls.  A match
 * resumes: the invocation id is reused, the user event is stored under
 * it, and the LLM flow of the agent that made the call runs again, in
 * that node -- a task's row names its agent and scope (route.c,
 * task_mode.c), read, not found again in the history -- and the model
 * sees its call with the (moved-up) response.  No match -- an
 * unknown id, or one answered already -- and the message is plain input
 * in a new invocation (ADK: wf.Run, not wf.Resume).  Several interrupts
 * may be answered one per turn.  Each answer is stored and marked, but the
 * model is called only once the agent's last pending id is answered: until
 * then the resumed run stops before the model call and the invocation
 * stays 'waiting'.  (ADK-Go reruns the node as soon as the answered set is
 * non-empty; a model call per partial answer would see the other calls
 * with only their provisional responses.  Waiting for the whole batch is
 * what a parallel function call is -- and the model sees every answer
 * next to its call in one request.)  Confirmed tools run at once, though.
 *
 * Answered by call id.  A pending call is answered by any later user
 * response with its id, from any writer, in any invocation (ADK-JS and
 * ADK Python answer in a new invocation): the events trigger keeps
 * adk.run_states up to date as each event is appended, so an answer given
 * through another runtime shows at once and is never resumed again here.
 *
 * Exactly once.  adk_run holds the session row lock from its start, so a
 * second resume of the same interrupt waits for the first to commit and
 * then finds the id answered.  An answer to a long-running call then runs
 * as plain input (a long-running tool may report again: the model sees the
 * newer response).  A message that only repeats answers to confirmations
 * already answered -- two clients approving at once -- runs nothing at
 * all: no event is stored, no model is called, adk_run returns no rows
 * (run->waits.ignored); the decision and its outcome are in the session.  The run_states row
 * lock makes the check-and-mark atomic on its own, also against writers
 * that do not take the session lock (an UPDATE of the row, a rebuild).
 * The answer, the continuation and the row are one transaction: a crash
 * in between rolls the answer back too, and the interrupt stays pending.
 *
 * Confirmation.  The answer to an adk_request_confirmation call
 * ({"confirmed": true}, also {"response": "<json>"} as ADK clients send
 * it) maps back to the original call through the confirmation call's
 * originalFunctionCall, checked against the call in the history.  At the
 * start of that agent's flow the original tool runs (before_tool,
 * after_tool and on_tool_error plugins as usual) -- or, unconfirmed,
 * answers {"error": "This tool call is rejected."} -- in a function-
 * response event with the ORIGINAL call id; then the model is called.
 *
 * IDENTIFICATION
 *	  src/runner/hitl.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "nodes/value.h"
#include "utils/array.h"
#define json_object pg_json_object_sqlfn
#include "utils/builtins.h"
#undef json_object
#include "utils/memutils.h"

#include <json-c/json.h>

#include "common/json_writer.h"
#include "common/jsonb_util.h"
#include "common/spi_plans.h"
#include "runner/builtin_tools.h"
#include "runner/runner.h"
#include "common/owner.h"

#define CONFIRMATION_CALL "adk_request_confirmation"
#define REQUEST_INPUT_CALL "adk_request_input"
/* ADK-Go's tool.ErrConfirmationRequired, wrapped with the tool's name */
#define NEEDS_CONFIRMATION "error tool \"%s\" requires confirmation, please approve or reject"
#define REJECTED "This tool call is rejected."

/* A function call HITL keeps: asked about, or answered and to run */
typedef struct HitlCall
{
	char	   *agent;			/* the agent that made the call */
	char	   *id;
	char	   *name;
	Jsonb	   *args;
	bool		confirmed;
	char	   *error;			/* the answer cannot be used: this error */
} HitlCall;

struct AdkHitl
{
	bool		involved;		/* refresh run_states when the run ends */
	List	   *confirmed;		/* HitlCall *: answered confirmations */
	List	   *holding;		/* String *: resumed agents that still wait */
	List	   *requests;		/* HitlCall *: this round asks about these */
	bool		long_running;	/* this round made a long-running call */
	char	   *resumed_path;	/* run_states node_path of the node resumed */
	List	   *resumed_paths;	/* char *: every row the answers resumed */
	char	   *plain_text_id;	/* the request a plain text answers */
	char	   *refusal;		/* an answer its request refuses: why */
	char	   *resumed_agent;	/* the agent that made its calls */
};

static struct AdkHitl *hitl_of(AdkRun *run);
static bool confirmation_answer(Jsonb *response);
static void note_resumed(AdkRun *run, HeapTuple row, TupleDesc desc,
						 MemoryContext caller);
static bool repeated_confirmation(AdkRun *run, Datum ids);
static void refuse_cancelled(AdkRun *run, const char *invocation_id, Datum ids);
static void check_response_schema(AdkRun *run, HeapTuple row, TupleDesc desc,
								  const char *call_id, MemoryContext caller);
static int	refresh(AdkRun *run);
static Jsonb *run_confirmed(AdkRun *run, AdkAgent *agent, const char *branch,
							HitlCall *call, AdkTool *tool, bool *stop);
static void stop_here(AdkRun *run);

#define RESUME_SQL "SELECT * FROM adk._resume_interrupts($1, $2, $3, $4, $5)"
#define REFRESH_SQL "SELECT adk._refresh_run_states($1, $2, $3, $4, NULL, $5)"

static struct AdkHitl *
hitl_of(AdkRun *run)
{
	if (run->waits.hitl == NULL)
		run->waits.hitl = MemoryContextAllocZero(GetMemoryChunkContext(run),
										   sizeof(struct AdkHitl));
	return run->waits.hitl;
}

/*
 * Step 2 of adk_run, after run.c has found the invocation of the call the
 * message answers (candidate; NULL when it answers none or is no function
 * response).  The message's function responses: run->input (input.c).  Returns the invocation id to run under: candidate when the
 * message answers an interrupt of it that is still pending (a resume),
 * else NULL -- plain input gets a new invocation -- unless the id was
 * given by the caller (explicit_id: a queued job), which is kept.
 */
char *
adk_hitl_begin(AdkRun *run, char *candidate, bool explicit_id)
{
	List	   *responses = run->input.responses;
	Datum	   *ids;
	int			n = 0;
	ListCell   *lc;
	AdkOwnerSave save;
	Oid			types[5] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTARRAYOID};
	Datum		args[5];
	MemoryContext caller = CurrentMemoryContext;
	uint64		i;
	uint64		matched;

	if (candidate == NULL || responses == NIL)
		return candidate;

	ids = palloc(sizeof(Datum) * list_length(responses));
	foreach(lc, responses)
		ids[n++] = CStringGetTextDatum(((AdkInputResponse *) lfirst(lc))->id);
	args[0] = CStringGetTextDatum(run->app);
	args[1] = CStringGetTextDatum(run->user);
	args[2] = CStringGetTextDatum(run->session);
	args[3] = CStringGetTextDatum(candidate);
	args[4] = PointerGetDatum(construct_array(ids, n, TEXTOID, -1, false, TYPALIGN_INT));

	adk_owner_spi_begin(&save);
	if (adk_spi_exec(RESUME_SQL, 5, types, args, NULL, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not check the session's pending interrupts");
	matched = SPI_processed;
	for (i = 0; i < SPI_processed; i++)
		note_resumed(run, SPI_tuptable->vals[i], SPI_tuptable->tupdesc, caller);
	adk_owner_spi_end(&save);
	if (run->waits.hitl != NULL && run->waits.hitl->refusal != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the answer does not match the response schema of its request"),
				 errdetail("%s", run->waits.hitl->refusal),
				 errhint("Answer with a response that matches the request's responseSchema (adk.pending_interrupts.args), or a bare value as {\"result\": value}; the request stays pending.")));

	if (matched == 0)
	{
		/* an answer to a request adk_cancel cancelled: refused */
		if (!explicit_id)
			refuse_cancelled(run, candidate, args[4]);
		/* the message holds nothing but its function responses */
		if (run->input.nparts == list_length(responses) &&
			repeated_confirmation(run, args[4]))
			run->waits.ignored = true;
		return explicit_id ? candidate : NULL;
	}
	hitl_of(run)->involved = true;
	return candidate;
}

/*
 * The node a resume goes on in, as its adk.run_states row says (path as
 * node_info writes it, and the agent that made the answered calls); NULL
 * when the run resumes nothing.
 */
const char *
adk_hitl_resumed_node(AdkRun *run, const char **agent)
{
	struct AdkHitl *h = run->waits.hitl;

	if (h == NULL || h->resumed_path == NULL || h->resumed_agent == NULL)
		return NULL;
	*agent = h->resumed_agent;
	return h->resumed_path;
}

/*
 * A function response answering a request of a paused run that adk_cancel
 * cancelled (adk._cancelled_request) is refused: nothing resumes it, and
 * as plain input it would answer a call the session shows as cancelled
 * (docs/runs.md "Cancelling a paused run").
 */
static void
refuse_cancelled(AdkRun *run, const char *invocation_id, Datum ids)
{
	AdkOwnerSave save;
	Oid			types[5] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTARRAYOID};
	Datum		args[5];
	MemoryContext caller = CurrentMemoryContext;
	char	   *id;

	args[0] = CStringGetTextDatum(run->app);
	args[1] = CStringGetTextDatum(run->user);
	args[2] = CStringGetTextDatum(run->session);
	args[3] = CStringGetTextDatum(invocation_id);
	args[4] = ids;
	adk_owner_spi_begin(&save);
	if (adk_spi_exec("SELECT adk._cancelled_request($1, $2, $3, $4, $5)",
					 5, types, args, NULL, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not check the session's cancelled requests");
	id = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	if (id != NULL)
		id = MemoryContextStrdup(caller, id);
	adk_owner_spi_end(&save);
	if (id != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("call \"%s\" of invocation \"%s\" was cancelled: it can no longer be answered",
						id, invocation_id),
				 errdetail("adk_cancel cancelled the invocation while it waited for this answer."),
				 errhint("Send a new message to start a new run.")));
}

/*
 * Every id answers a confirmation that a user's response answered already
 * (adk._repeated_confirmation): the message repeats a decision.
 */
static bool
repeated_confirmation(AdkRun *run, Datum ids)
{
	AdkOwnerSave save;
	Oid			types[4] = {TEXTOID, TEXTOID, TEXTOID, TEXTARRAYOID};
	Datum		args[4];
	bool		isnull;
	bool		repeated = false;

	args[0] = CStringGetTextDatum(run->app);
	args[1] = CStringGetTextDatum(run->user);
	args[2] = CStringGetTextDatum(run->session);
	args[3] = ids;
	adk_owner_spi_begin(&save);
	if (adk_spi_exec("SELECT adk._repeated_confirmation($1, $2, $3, $4)",
					 4, types, args, NULL, 1) == SPI_OK_SELECT && SPI_processed == 1)
		repeated = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
											  SPI_tuptable->tupdesc, 1, &isnull)) && !isnull;
	adk_owner_spi_end(&save);
	return repeated;
}

/*
 * One row of adk._resume_interrupts (in SPI's memory; what is kept goes
 * to caller's): an agent that still waits for other answers is held, an
 * answered confirmation noted with the call it confirms (or rejects).
 */
static void
note_resumed(AdkRun *run, HeapTuple row, TupleDesc desc, MemoryContext caller)
{
	char	   *call_id = SPI_getvalue(row, desc, 1);
	char	   *tool = SPI_getvalue(row, desc, 2);
	bool		isnull;
	Datum		original;
	MemoryContext spi;
	HitlCall   *c;
	AdkInputResponse *answer = NULL;
	ListCell   *lc;

	spi = MemoryContextSwitchTo(caller);
	hitl_of(run)->resumed_paths = lappend(hitl_of(run)->resumed_paths,
										  SPI_getvalue(row, desc, 7));
	MemoryContextSwitchTo(spi);
	if (hitl_of(run)->resumed_path == NULL)
	{
		/* where the run resumes: the node whose row made the call */
		spi = MemoryContextSwitchTo(caller);
		hitl_of(run)->resumed_path = SPI_getvalue(row, desc, 7);
		hitl_of(run)->resumed_agent = SPI_getvalue(row, desc, 4);
		MemoryContextSwitchTo(spi);
	}
	if (DatumGetInt32(SPI_getbinval(row, desc, 6, &isnull)) > 0)
	{
		/* that agent waits for more answers: it goes on once all are in */
		char	   *agent = SPI_getvalue(row, desc, 4);

		spi = MemoryContextSwitchTo(caller);
		if (!list_member(hitl_of(run)->holding, makeString(agent)))
			hitl_of(run)->holding = lappend(hitl_of(run)->holding,
											makeString(pstrdup(agent)));
		MemoryContextSwitchTo(spi);
	}
	if (tool != NULL && strcmp(tool, REQUEST_INPUT_CALL) == 0)
	{
		check_response_schema(run, row, desc, call_id, caller);
		return;
	}
	if (tool == NULL || strcmp(tool, CONFIRMATION_CALL) != 0)
		return;					/* a long-running call: the answer is its result */
	foreach(lc, run->input.responses)
		if (strcmp(((AdkInputResponse *) lfirst(lc))->id, call_id) == 0)
			answer = (AdkInputResponse *) lfirst(lc);
	original = SPI_getbinval(row, desc, 5, &isnull);

	spi = MemoryContextSwitchTo(caller);
	c = palloc0(sizeof(HitlCall));
	c->agent = SPI_getvalue(row, desc, 4);
	if (isnull)
	{
		/* ADK raises; here the model hears why nothing ran */
		Datum		a = SPI_getbinval(row, desc, 3, &isnull);
		Jsonb	   *asked = isnull ? NULL : DatumGetJsonbP(a);
		JsonbValue *o = asked ? adk_jsonb_get(&asked->root, "originalFunctionCall") : NULL;

		c->id = o && o->type == jbvBinary ? adk_jstr(o->val.binary.data, "id") : NULL;
		c->name = o && o->type == jbvBinary ? adk_jstr(o->val.binary.data, "name") : NULL;
		c->error = psprintf("the call confirmation %s asks about is not in the session's history",
							call_id);
	}
	else
	{
		Jsonb	   *call = DatumGetJsonbPCopy(original);
		JsonbValue *a = adk_jsonb_get(&call->root, "args");

		c->id = adk_jstr(&call->root, "id");
		c->name = adk_jstr(&call->root, "name");
		c->args = a && a->type == jbvBinary ? JsonbValueToJsonb(a) : NULL;
		c->confirmed = answer != NULL && confirmation_answer(answer->response);
	}
	if (c->id != NULL && c->name != NULL)
		hitl_of(run)->confirmed = lappend(hitl_of(run)->confirmed, c);
	MemoryContextSwitchTo(spi);
}

/*
 * An answer to a workflow's request for input (adk_request_input) whose
 * call declared a responseSchema: the answer -- its response, or the
 * value of a {"result": value} response, which ADK unwraps -- must match
 * it (schema_check.c), else the run is refused (adk_hitl_begin raises:
 * bad input loses nothing, the request stays pending).  A plain text
 * routed to the request is taken as it is, as ADK-JS takes it
 * (docs/workflows.md "Human input").
 */
static void
check_response_schema(AdkRun *run, HeapTuple row, TupleDesc desc,
					  const char *call_id, MemoryContext caller)
{
	struct AdkHitl *h = hitl_of(run);
	bool		isnull;
	Datum		a = SPI_getbinval(row, desc, 3, &isnull);
	Jsonb	   *asked = isnull ? NULL : DatumGetJsonbP(a);
	JsonbValue *schema = asked ? adk_jsonb_get(&asked->root, "responseSchema") : NULL;
	AdkInputResponse *answer = NULL;
	Jsonb	   *value;
	JsonbValue *result;
	char	   *problem;
	ListCell   *lc;

	if (schema == NULL || schema->type != jbvBinary ||
		!adk_jsonb_is_object(schema->val.binary.data) ||
		(h->plain_text_id != NULL && strcmp(h->plain_text_id, call_id) == 0) ||
		h->refusal != NULL)
		return;
	foreach(lc, run->input.responses)
		if (strcmp(((AdkInputResponse *) lfirst(lc))->id, call_id) == 0)
			answer = (AdkInputResponse *) lfirst(lc);
	if (answer == NULL)
		return;
	value = answer->response;
	if (value != NULL && JsonContainerSize(&value->root) == 1 &&
		(result = adk_jsonb_get(&value->root, "result")) != NULL)
		value = adk_jsonb_value_to_jsonb(result);
	if (value == NULL)
		problem = pstrdup("the response is not an object");
	else
		problem = adk_schema_problem(JsonbValueToJsonb(schema), value);
	if (problem != NULL)
		h->refusal = MemoryContextStrdup(caller,
										 psprintf("Request \"%s\": %s.", call_id, problem));
}

/*
 * Step 2 of adk_run, before the message's function responses are matched:
 * a message of plain text (text parts only) in a session where exactly
 * one workflow request for input (adk_request_input) is pending is that
 * request's answer, as ADK-JS routes it: the message becomes ADK's
 * function response to it, {"result": "<the text>"} (ADK's wrapping of a
 * bare value), and is stored so.  With several pending a plain text
 * could answer any of them: it is refused (ADK-JS ignores it as an
 * answer), and nothing is stored.  Only for an app with a graph workflow
 * in its tree: no other agent asks with adk_request_input, and a plain
 * turn pays no query for it.  Returns the message to run.
 */
Jsonb *
adk_hitl_plain_text(AdkRun *run, Jsonb *message)
{
	JsonbContainer *all = adk_content_parts(&message->root);
	AdkParts	parts;
	JsonbContainer *part;
	StringInfoData text;
	bool		workflow = false;
	ListCell   *lc;
	AdkOwnerSave save;
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		args[3];
	bool		isnull;
	int			pending = 0;
	char	   *id = NULL;
	JsonWriter	w;

	foreach(lc, run->defs.agents)
		if (strcmp(((AdkAgent *) lfirst(lc))->kind, "workflow") == 0)
			workflow = true;
	if (!workflow || all == NULL || JsonContainerSize(all) == 0)
		return message;
	initStringInfo(&text);
	adk_parts_begin(&parts, all);
	while (adk_parts_next(&parts, &part))
	{
		JsonbValue *t = adk_jsonb_get(part, "text");

		/* a part that is not text alone: no plain text */
		if (t == NULL || t->type != jbvString || JsonContainerSize(part) != 1)
			return message;
		appendBinaryStringInfo(&text, t->val.string.val, t->val.string.len);
	}

	args[0] = CStringGetTextDatum(run->app);
	args[1] = CStringGetTextDatum(run->user);
	args[2] = CStringGetTextDatum(run->session);
	adk_owner_spi_begin(&save);
	if (adk_spi_exec("SELECT * FROM adk._pending_input_requests($1, $2, $3)",
					 3, types, args, NULL, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read the session's pending requests for input");
	pending = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
										  SPI_tuptable->tupdesc, 2, &isnull));
	if (pending == 1)
		id = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	if (id != NULL)
		id = MemoryContextStrdup(GetMemoryChunkContext(run), id);
	adk_owner_spi_end(&save);
	if (pending > 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("session \"%s\" has %d pending requests for input: a plain text cannot say which one it answers",
						run->session, pending),
				 errhint("Answer one with a function response naming its call id (adk_function_response(call_id, 'adk_request_input', answer)); adk.pending_interrupts lists them.")));
	if (id == NULL)
		return message;

	hitl_of(run)->plain_text_id = id;
	jw_init(&w);
	jw_begin_object(&w);
	jw_key(&w, "role");
	jw_string(&w, "user");
	jw_key(&w, "parts");
	jw_begin_array(&w);
	jw_begin_object(&w);
	jw_key(&w, "function_response");
	jw_begin_object(&w);
	jw_key(&w, "id");
	jw_string(&w, id);
	jw_key(&w, "name");
	jw_string(&w, REQUEST_INPUT_CALL);
	jw_key(&w, "response");
	jw_begin_object(&w);
	jw_key(&w, "result");
	jw_string(&w, text.data);
	jw_end_object(&w);
	jw_end_object(&w);
	jw_end_object(&w);
	jw_end_array(&w);
	jw_end_object(&w);
	return jw_finish(&w);
}

/*
 * Whether an answer to adk_request_confirmation confirms: a ToolConfirmation
 * {"confirmed": true, ...}, or ADK clients' {"response": "<that as JSON
 * text>"} (or the object itself under "response").  Anything else --
 * false, a malformed payload -- is a rejection, as ADK's strict parse
 * makes it.
 */
static bool
confirmation_answer(Jsonb *response)
{
	JsonbValue *v;

	if (response == NULL || !adk_jsonb_is_object(&response->root))
		return false;
	if ((v = adk_jsonb_get(&response->root, "confirmed")) != NULL)
		return v->type == jbvBool && v->val.boolean;
	if ((v = adk_jsonb_get(&response->root, "response")) == NULL)
		return false;
	if (v->type == jbvBinary)
	{
		JsonbValue *c = adk_jsonb_get(v->val.binary.data, "confirmed");

		return c != NULL && c->type == jbvBool && c->val.boolean;
	}
	if (v->type == jbvString)
	{
		/* parsed with json-c: text that is not JSON is a "no", not an ERROR */
		char	   *text = pnstrdup(v->val.string.val, v->val.string.len);
		struct json_object *obj = json_tokener_parse(text);
		struct json_object *c;
		bool		yes;

		yes = obj != NULL && json_object_is_type(obj, json_type_object) &&
			json_object_object_get_ex(obj, "confirmed", &c) &&
			json_object_is_type(c, json_type_boolean) && json_object_get_boolean(c);
		if (obj != NULL)
			json_object_put(obj);
		return yes;
	}
	return false;
}

/*
 * At the start of an LLM agent's flow in a resumed invocation.  First the
 * confirmations this agent asked for and the user answered: the original
 * tool runs (or is rejected), in one function-response event with the
 * original call ids.  Then, if the agent still waits for answers to other
 * interrupts, it stops here (the invocation stays waiting; the model is
 * called once every answer is in).  Returns false when the flow must not
 * go on.
 */
bool
adk_hitl_resume_flow(AdkRun *run, AdkAgent *agent, const char *branch, List *tools)
{
	struct AdkHitl *h = run->waits.hitl;
	List	   *mine = NIL;
	List	   *others = NIL;
	ListCell   *lc;
	bool		hold;
	bool		stop = false;

	if (h == NULL || (h->confirmed == NIL && h->holding == NIL))
		return true;
	hold = list_member(h->holding, makeString(agent->name));
	h->holding = list_delete(h->holding, makeString(agent->name));
	foreach(lc, h->confirmed)
	{
		HitlCall   *c = (HitlCall *) lfirst(lc);

		if (strcmp(c->agent, agent->name) == 0)
			mine = lappend(mine, c);
		else
		{
			/* the other agents' turns come in later steps: the run's memory */
			MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(run));

			others = lappend(others, c);
			MemoryContextSwitchTo(old);
		}
	}
	list_free(h->confirmed);
	h->confirmed = others;

	if (mine != NIL)
	{
		JsonWriter	w;
		List	   *saved;

		adk_event_start(&w, run, agent->name, branch);
		jw_key(&w, "content");
		jw_begin_object(&w);
		jw_key(&w, "role");
		jw_string(&w, "user");
		jw_key(&w, "parts");
		jw_begin_array(&w);
		adk_builtin_saves_begin(run);	/* artifacts the tools save */
		foreach(lc, mine)
		{
			HitlCall   *c = (HitlCall *) lfirst(lc);
			AdkTool    *tool = adk_find_tool(tools, c->name);
			Jsonb	   *result;

			if (c->error)
				result = adk_error_object(c->error);
			else if (tool == NULL || !tool->require_confirmation)
				result = adk_error_object(psprintf("tool \"%s\" is not available to agent \"%s\" as a tool that needs confirmation",
												   c->name, agent->name));
			else if (!c->confirmed)
				result = adk_error_object(REJECTED);
			else
			{
				result = run_confirmed(run, agent, branch, c, tool, &stop);
				if (run->out.end_invocation)
				{
					(void) adk_builtin_saves_end();
					return false;
				}
			}
			adk_jw_function_response(&w, c->id, c->name, result);
		}
		saved = adk_builtin_saves_end();
		jw_end_array(&w);
		jw_end_object(&w);
		if (saved)
		{
			jw_key(&w, "actions");
			jw_begin_object(&w);
			jw_key(&w, "artifact_delta");
			adk_jw_artifact_delta(&w, saved);
			jw_end_object(&w);
		}
		jw_end_object(&w);
		adk_emit(run, jw_finish(&w));
		if (run->out.end_invocation)
			return false;
	}
	if (stop || hold)
	{
		/*
		 * A confirmed tool that is itself long-running waits for its own
		 * answer now; a node with interrupts still pending waits for them.
		 */
		stop_here(run);
		return false;
	}
	return true;
}

/*
 * A confirmed call: the SQL tool with its plugins, as flow.c runs tools.
 */
static Jsonb *
run_confirmed(AdkRun *run, AdkAgent *agent, const char *branch, HitlCall *call,
			  AdkTool *tool, bool *stop)
{
	JsonWriter	w;
	Jsonb	   *args = call->args;

	if (args == NULL)
	{
		jw_init(&w);
		jw_begin_object(&w);
		jw_end_object(&w);
		args = jw_finish(&w);
	}
	if (tool->long_running)
		*stop = true;
	return adk_call_sql_tool(run, agent, branch, tool, call->id, args);
}

/*
 * flow.c, before a long-running or require_confirmation SQL tool runs.  A
 * long-running call is noted (the flow pauses after this round) and runs;
 * a call that needs confirmation is noted and answered with ADK-Go's
 * placeholder instead of running.  NULL: run the tool.
 */
Jsonb *
adk_hitl_before_tool(AdkRun *run, AdkAgent *agent, AdkTool *tool,
					 const char *call_id, Jsonb *args)
{
	struct AdkHitl *h = hitl_of(run);
	MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(run));
	HitlCall   *c;

	h->involved = true;
	if (!tool->require_confirmation)
	{
		h->long_running = true;
		MemoryContextSwitchTo(old);
		return NULL;
	}
	c = palloc0(sizeof(HitlCall));
	c->agent = pstrdup(agent->name);
	c->id = pstrdup(call_id);
	c->name = pstrdup(tool->name);
	c->args = DatumGetJsonbPCopy(JsonbPGetDatum(args));
	h->requests = lappend(h->requests, c);
	MemoryContextSwitchTo(old);
	return adk_error_object(psprintf(NEEDS_CONFIRMATION, tool->name));
}

static char *
confirmation_hint(const char *name)
{
	return psprintf("Please approve or reject the tool call %s() by responding with a FunctionResponse with an expected ToolConfirmation payload.",
					name);
}

static void
write_tool_confirmation(JsonWriter *w, const char *name)
{
	jw_begin_object(w);
	jw_key(w, "hint");
	jw_string(w, confirmation_hint(name));
	jw_key(w, "confirmed");
	jw_bool(w, false);
	jw_key(w, "payload");
	jw_null(w);
	jw_end_object(w);
}

/*
 * flow.c, for the function-response event's actions: this round's
 * requested_tool_confirmations ({call id: ToolConfirmation}), or NULL.
 */
Jsonb *
adk_hitl_requested_confirmations(AdkRun *run)
{
	JsonWriter	w;
	ListCell   *lc;

	if (run->waits.hitl == NULL || run->waits.hitl->requests == NIL)
		return NULL;
	jw_init(&w);
	jw_begin_object(&w);
	foreach(lc, run->waits.hitl->requests)
	{
		HitlCall   *c = (HitlCall *) lfirst(lc);

		jw_key(&w, c->id);
		write_tool_confirmation(&w, c->name);
	}
	jw_end_object(&w);
	return jw_finish(&w);
}

/*
 * flow.c, once a round's function-response event is stored: when the
 * round made a long-running call or asked for a confirmation, emit the
 * adk_request_confirmation calls (if any), stop the invocation (a pause:
 * workflow agents above stop too), bring run_states up to date and return
 * true.  False: carry on.
 */
bool
adk_hitl_pause(AdkRun *run, AdkAgent *agent, const char *branch)
{
	struct AdkHitl *h = run->waits.hitl;

	if (h == NULL || (h->requests == NIL && !h->long_running))
		return false;
	if (h->requests != NIL)
	{
		JsonWriter	w;
		ListCell   *lc;
		List	   *ids = NIL;

		adk_event_start(&w, run, agent->name, branch);
		jw_key(&w, "content");
		jw_begin_object(&w);
		jw_key(&w, "role");
		jw_string(&w, "model");
		jw_key(&w, "parts");
		jw_begin_array(&w);
		foreach(lc, h->requests)
		{
			HitlCall   *c = (HitlCall *) lfirst(lc);
			char	   *id = adk_new_id("adk-");

			ids = lappend(ids, id);
			jw_begin_object(&w);
			jw_key(&w, "function_call");
			jw_begin_object(&w);
			jw_key(&w, "id");
			jw_string(&w, id);
			jw_key(&w, "name");
			jw_string(&w, CONFIRMATION_CALL);
			jw_key(&w, "args");
			jw_begin_object(&w);
			jw_key(&w, "originalFunctionCall");
			jw_begin_object(&w);
			jw_key(&w, "id");
			jw_string(&w, c->id);
			jw_key(&w, "name");
			jw_string(&w, c->name);
			jw_key(&w, "args");
			jw_jsonb(&w, c->args);
			jw_end_object(&w);
			jw_key(&w, "toolConfirmation");
			write_tool_confirmation(&w, c->name);
			jw_end_object(&w);
			jw_end_object(&w);
			jw_end_object(&w);
		}
		jw_end_array(&w);
		jw_end_object(&w);
		jw_key(&w, "long_running_tool_ids");
		jw_begin_array(&w);
		foreach(lc, ids)
			jw_string(&w, (char *) lfirst(lc));
		jw_end_array(&w);
		jw_end_object(&w);
		h->requests = NIL;
		adk_emit(run, jw_finish(&w));
	}
	stop_here(run);
	return true;
}

/*
 * The pause itself: the invocation stops (ADK's ErrNodeInterrupted --
 * workflow agents above stop too, after_agent is not called) and its
 * run_states rows are brought up to date now, in the transaction of the
 * events that made the interrupts.
 */
static void
stop_here(AdkRun *run)
{
	struct AdkHitl *h = hitl_of(run);

	h->long_running = false;
	h->involved = true;
	run->out.end_invocation = true;
	(void) refresh(run);
}

/*
 * workflow.c: a graph workflow's node asked for human input and no
 * branch can run any more -- the invocation pauses as above.
 */
void
adk_hitl_stop(AdkRun *run)
{
	stop_here(run);
}

/*
 * workflow.c: a node of a graph workflow asked for human input in this
 * run, which may yet fail before it pauses (an item of a parallel worker
 * failing after another asked): the rows this run touched are brought to
 * what its events say as it ends, so the asking node's row and its
 * request end as its stop event says.
 */
void
adk_hitl_involve(AdkRun *run)
{
	hitl_of(run)->involved = true;
}

/*
 * run.c, as the invocation ends: for an invocation HITL touched, or a
 * queued run's retry (whose earlier attempts' nodes this one did not see),
 * bring its run_states rows to what its events say (*refreshed), and say
 * whether it still waits.  Any other invocation's rows are ended by
 * adk._invocation_end from what the run saw (run_states.c).
 */
bool
adk_hitl_end(AdkRun *run, bool *refreshed)
{
	*refreshed = false;
	if (run->invocation_id == NULL ||
		((run->waits.hitl == NULL || !run->waits.hitl->involved) && !run->retried))
		return false;
	*refreshed = true;
	return refresh(run) > 0;
}

/*
 * adk._refresh_run_states for this invocation; the number of interrupts
 * still pending.  Only the rows this run can have changed -- the nodes it
 * wrote events in, the rows its answers resumed, and the nodes above them
 * (a resume costs what those rows cost, not what every node of the paused
 * invocation does: test/bench/workflow.sh) -- but for a queued run's
 * retry, whose earlier attempts' nodes this one did not see: all of them.
 */
static int
refresh(AdkRun *run)
{
	AdkOwnerSave save;
	Oid			types[5] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTARRAYOID};
	Datum		args[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};
	bool		isnull;
	int			pending = 0;

	args[0] = CStringGetTextDatum(run->app);
	args[1] = CStringGetTextDatum(run->user);
	args[2] = CStringGetTextDatum(run->session);
	args[3] = CStringGetTextDatum(run->invocation_id);
	if (run->retried)
	{
		args[4] = (Datum) 0;
		nulls[4] = 'n';
	}
	else
	{
		args[4] = adk_node_paths(run, run->waits.hitl ?
								 run->waits.hitl->resumed_paths : NIL);
	}
	adk_owner_spi_begin(&save);
	if (adk_spi_exec(REFRESH_SQL, 5, types, args, nulls, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not update adk.run_states");
	pending = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
										  SPI_tuptable->tupdesc, 1, &isnull));
	adk_owner_spi_end(&save);
	return isnull ? 0 : pending;
}
