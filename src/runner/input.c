/*-------------------------------------------------------------------------
 *
 * input.c
 *	  The user's message of a run, decoded once: its parts, its function
 *	  responses, and the session's event that made the call the first of
 *	  them answers.  run.c decodes it as the run starts; route.c (which
 *	  agent handles it), hitl.c (which interrupts it answers) and retry.c
 *	  read what is decoded here, never the message again.
 *
 * IDENTIFICATION
 *	  src/runner/input.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/jsonb_util.h"
#include "runner/runner.h"
#include "store/session_read.h"

/*
 * Decode message (a Content: run_entry.c and adk_submit checked it) into
 * in, in the current memory context.  The function responses are those
 * with a string id, in the order of the parts.
 */
void
adk_input_decode(AdkInput *in, Jsonb *message)
{
	JsonbContainer *all = adk_content_parts(&message->root);
	AdkParts	parts;
	JsonbContainer *part;

	in->content = message;
	in->nparts = 0;
	in->responses = NIL;
	in->call_author = NULL;
	in->call_invocation = NULL;
	if (all == NULL)
		return;
	in->nparts = JsonContainerSize(all);
	adk_parts_begin(&parts, all);
	while (adk_parts_next(&parts, &part))
	{
		JsonbValue *f;
		JsonbValue *r;
		AdkInputResponse *h;
		char	   *id;

		if ((f = adk_jsonb_get(part, "function_response")) == NULL ||
			f->type != jbvBinary ||
			(id = adk_jstr(f->val.binary.data, "id")) == NULL)
			continue;
		h = palloc0(sizeof(AdkInputResponse));
		h->id = id;
		r = adk_jsonb_get(f->val.binary.data, "response");
		h->response = r && r->type == jbvBinary ? JsonbValueToJsonb(r) : NULL;
		in->responses = lappend(in->responses, h);
	}
}

/*
 * The newest event of the run's session that made the call the message's
 * first function response answers: its author and invocation id in
 * run->input (NULL when the message answers no call, or none is found).
 * Read once, after the session is locked (store/session_read.c).
 */
void
adk_input_find_call(AdkRun *run)
{
	AdkInput   *in = &run->input;
	AdkInputResponse *first;

	if (in->responses == NIL)
		return;
	first = (AdkInputResponse *) linitial(in->responses);
	if (!adk_session_call_event(run->app, run->user, run->session, first->id,
								&in->call_author, &in->call_invocation))
	{
		in->call_author = NULL;
		in->call_invocation = NULL;
	}
}
