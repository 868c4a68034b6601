/*-------------------------------------------------------------------------
 *
 * retry.c
 *	  Where a retried queued run goes on: the invocation's events that an
 *	  earlier attempt committed say what is done already.
 *
 * A job's attempts share one invocation id.  A step commits its events
 * together with everything else it did (a SQL tool's effects, the
 * invocation row, state deltas), so what an attempt that died left behind
 * is exactly a prefix of the turn, and the next attempt continues it as a
 * HITL resume does: the user event is not stored again, a model call whose
 * event is stored is not made again, a call whose response event is stored
 * is not run again.  What the newest stored event of the invocation (not
 * one appended by another role) says:
 *
 *	none			nothing committed: the run starts afresh;
 *	the user's		the model is called (its agent chosen as at the start);
 *	model, calls	its calls are run (their responses were not stored,
 *					so their effects rolled back with them), then the
 *					model is called;
 *	responses		the model is called again (or, after a transfer, the
 *					agent transferred to runs; after an escalation, nothing);
 *	an error		the turn ended failed: only the run's end is redone;
 *	anything else	the agent answered: only the run's end (after_run,
 *					the sliding window, the memory tools) is redone.
 *
 * The agent that goes on is the one that wrote that event, alone -- as a
 * HITL resume runs the agent that made the call: a workflow agent above it
 * does not go on with its later sub-agents.
 *
 * IDENTIFICATION
 *	  src/runner/retry.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "common/jsonb_util.h"
#include "common/spi_plans.h"
#include "runner/runner.h"
#include "common/owner.h"

/* the invocation's own events, newest first */
#define INVOCATION_EVENTS_SQL "SELECT adk._invocation_events($1, $2, $3, $4)"

static bool has_part(Jsonb *event, const char *kind);

/*
 * What an earlier attempt of the run's invocation committed, in *p (in the
 * current memory context).  false: nothing -- the run starts afresh.
 */
bool
adk_retry_point(AdkRun *run, AdkRetryPoint *p)
{
	Oid			types[4] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		args[4];
	AdkOwnerSave save;
	MemoryContext caller = CurrentMemoryContext;
	Jsonb	   *last = NULL;
	uint64		i;
	char	   *author;
	JsonbValue *v;

	memset(p, 0, sizeof(*p));
	args[0] = CStringGetTextDatum(run->app);
	args[1] = CStringGetTextDatum(run->user);
	args[2] = CStringGetTextDatum(run->session);
	args[3] = CStringGetTextDatum(run->invocation_id);
	adk_owner_spi_begin(&save);
	if (adk_spi_exec(INVOCATION_EVENTS_SQL, 4, types, args, NULL, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the invocation's events");
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
									  1, &isnull);
		Jsonb	   *event;
		MemoryContext spi;

		if (isnull)
			continue;
		spi = MemoryContextSwitchTo(caller);
		event = DatumGetJsonbPCopy(d);
		if (last == NULL)
			last = event;
		author = adk_jstr(&event->root, "author");
		if (author != NULL && strcmp(author, "user") == 0 &&
			(v = adk_jsonb_get(&event->root, "content")) != NULL &&
			v->type == jbvBinary)
			p->user_content = JsonbValueToJsonb(v); /* the oldest wins */
		MemoryContextSwitchTo(spi);
	}
	adk_owner_spi_end(&save);
	if (last == NULL)
		return false;

	author = adk_jstr(&last->root, "author");
	if ((p->error_code = adk_jstr(&last->root, "error_code")) != NULL)
	{
		p->error_message = adk_jstr(&last->root, "error_message");
		return true;
	}
	if (author == NULL || strcmp(author, "user") == 0)
	{
		p->agent = adk_agent_for_input(run);
		return true;
	}
	p->branch = adk_jstr(&last->root, "branch");
	p->agent = adk_find_agent(run, author);
	if (p->agent == NULL)
		return true;			/* not in the tree any more: nothing goes on */
	/* a task agent's event: the task goes on in its scope (task_mode.c) */
	if (adk_is_task(p->agent))
		p->scope = adk_jstr(&last->root, "isolation_scope");
	if (has_part(last, "function_call"))
		p->calls = adk_llm_event_calls(last);
	else if (has_part(last, "function_response"))
	{
		JsonbValue *actions = adk_jsonb_get(&last->root, "actions");
		char	   *transfer = NULL;

		if (actions != NULL && actions->type == jbvBinary)
		{
			JsonbValue *esc = adk_jsonb_get(actions->val.binary.data, "escalate");

			transfer = adk_jstr(actions->val.binary.data, "transfer_to_agent");
			if (esc != NULL && esc->type == jbvBool && esc->val.boolean)
				p->agent = NULL;
		}
		if (transfer != NULL)
			p->agent = adk_find_agent(run, transfer);
	}
	else
		p->agent = NULL;		/* the agent answered */
	return true;
}

/*
 * Whether the event's content has a part of this kind (function_call,
 * function_response).
 */
static bool
has_part(Jsonb *event, const char *kind)
{
	AdkParts	parts;
	JsonbContainer *part;

	adk_parts_begin(&parts, adk_event_parts(&event->root));
	while (adk_parts_next(&parts, &part))
	{
		if (adk_jsonb_get(part, kind) != NULL)
			return true;
	}
	return false;
}
