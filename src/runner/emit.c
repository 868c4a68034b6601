/*-------------------------------------------------------------------------
 *
 * emit.c
 *	  The one place events leave the runner: typed event builders, and
 *	  adk_emit / adk_emit_error with the plugin hook around them (on_event),
 *	  the store's limits checked first, the append, the run's sink.
 *
 * The flow, the agents, HITL and compaction call down into this file; it
 * calls only the store and plugins.c, never back up into run.c, agents.c or
 * flow.c.  Step 5 of run.c's order of work for each event: on_event
 * (which may replace or reject it), append unless partial, then the sink
 * (adk_run's rows, or nothing in a job worker, whose step's commit
 * publishes it).
 *
 * IDENTIFICATION
 *	  src/runner/emit.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "portability/instr_time.h"
#include "utils/memutils.h"

#include "common/ids.h"
#include "common/json_writer.h"
#include "common/jsonb_util.h"
#include "runner/runner.h"
#include "store/append.h"

/*
 * A content of one text part: {"role": role, "parts": [{"text": text}]}.
 */
void
adk_jw_text_content(JsonWriter *w, const char *role, const char *text)
{
	jw_begin_object(w);
	jw_key(w, "role");
	jw_string(w, role);
	jw_key(w, "parts");
	jw_begin_array(w);
	jw_begin_object(w);
	jw_key(w, "text");
	jw_string(w, text);
	jw_end_object(w);
	jw_end_array(w);
	jw_end_object(w);
}

/*
 * One part {"function_response": {"id", "name", "response"}} of a tool
 * response event.  An empty response ({}, as transfer_to_agent and
 * exit_loop answer) is left out, as ADK-Go writes it (docs/agent-modes.md
 * "Where we differ from ADK-Go").
 */
void
adk_jw_function_response(JsonWriter *w, const char *id, const char *name,
						 Jsonb *response)
{
	jw_begin_object(w);
	jw_key(w, "function_response");
	jw_begin_object(w);
	jw_key(w, "id");
	jw_string(w, id);
	jw_key(w, "name");
	jw_string(w, name);
	if (!(JB_ROOT_IS_OBJECT(response) && JB_ROOT_COUNT(response) == 0))
	{
		jw_key(w, "response");
		jw_jsonb(w, response);
	}
	jw_end_object(w);
	jw_end_object(w);
}

/*
 * The event's "node_info" as ADK-Go writes it (docs/agent-modes.md): the
 * path of the node that wrote it ("coordinator",
 * "coordinator/booker@<call id>", "coordinator/translator@1"); on the
 * event that finishes a task or a single_turn node, "output_for" (that
 * node's path), and "message_as_output" when the node's output is the
 * event's own message.  Nothing outside a node (the user's message).
 */
void
adk_jw_node_info(JsonWriter *w, AdkRun *run, bool output_for,
				 bool message_as_output)
{
	if (run->node_path == NULL)
		return;
	jw_key(w, "node_info");
	jw_begin_object(w);
	jw_key(w, "path");
	jw_string(w, run->node_path);
	if (message_as_output)
	{
		jw_key(w, "message_as_output");
		jw_bool(w, true);
	}
	if (output_for)
	{
		jw_key(w, "output_for");
		jw_begin_array(w);
		jw_string(w, run->node_path);
		jw_end_array(w);
	}
	jw_end_object(w);
}

/*
 * Open an event object: {"invocation_id", "author"[, "branch"] -- the
 * caller adds the rest and closes it.
 */
void
adk_event_start(JsonWriter *w, AdkRun *run, const char *author,
				const char *branch)
{
	adk_event_start_node(w, run, author, branch, false);
}

/*
 * adk_event_start for the event whose output finishes its node
 * (output_for: task_mode.c's finish_task response).
 */
void
adk_event_start_node(JsonWriter *w, AdkRun *run, const char *author,
					 const char *branch, bool output_for)
{
	AdkWfNodeMeta *meta;

	jw_init(w);
	jw_begin_object(w);
	jw_key(w, "invocation_id");
	jw_string(w, run->invocation_id);
	jw_key(w, "author");
	jw_string(w, author);
	if (branch)
	{
		jw_key(w, "branch");
		jw_string(w, branch);
	}
	/* a task agent's events: its isolation scope (task_mode.c) */
	if (run->scope)
	{
		jw_key(w, "isolation_scope");
		jw_string(w, run->scope);
	}
	adk_jw_node_info(w, run, output_for, false);
	/*
	 * a graph workflow's node (workflow.c) -- a function's, or an agent
	 * node's own events, in its lane: what its run_states row holds
	 */
	if ((meta = adk_node_meta(run, run->node_path)) != NULL)
	{
		jw_key(w, "custom_metadata");
		jw_begin_object(w);
		if (meta->graph_hash)
		{
			jw_key(w, "adk_graph_hash");
			jw_string(w, meta->graph_hash);
		}
		if (meta->triggered_by)
		{
			jw_key(w, "adk_triggered_by");
			jw_string(w, meta->triggered_by);
		}
		jw_end_object(w);
	}
}

/*
 * Step 5 for one event: on_event, append unless partial, return it.
 */
void
adk_emit(AdkRun *run, Jsonb *event)
{
	JsonbValue *partial = adk_jsonb_get(&event->root, "partial");
	bool		is_partial = partial && partial->type == jbvBool && partial->val.boolean;
	Jsonb	   *replaced;
	char	   *error;
	AdkStoredEvent stored;
	char	   *why;
	const char *code;

	if (!is_partial)
	{
		JsonbValue *author = adk_jsonb_get(&event->root, "author");

		replaced = adk_plugins_call(run, CB_ON_EVENT,
									adk_plugin_context(run, CB_ON_EVENT, NULL,
													   "event", event, NULL, NULL),
									&error);
		if (error)
		{
			/* the event is not stored; the run reports the error */
			char	   *name = author && author->type == jbvString ?
				pnstrdup(author->val.string.val, author->val.string.len) : "runner";

			adk_emit_error(run, name, NULL, "PLUGIN_ERROR", error);
			return;
		}
		if (replaced != NULL)
		{
			if (JB_ROOT_IS_SCALAR(replaced))
			{
				JsonbValue *s = getIthJsonbValueFromContainer(&replaced->root, 0);

				if (s->type == jbvBool && !s->val.boolean)
					return;		/* rejected: not stored, not returned */
			}
			event = replaced;
		}
	}
	if ((why = adk_event_unstorable(event, &code)) != NULL)
	{
		/*
		 * What a model or a plugin produced and the store would refuse: a
		 * stored error event instead (a failure is an event), never an
		 * ERROR that rolls back the caller or an event that breaks every
		 * later prompt.  A partial event is only a preview of one that
		 * follows: dropped.
		 */
		JsonbValue *author = adk_jsonb_get(&event->root, "author");
		JsonbValue *branch = adk_jsonb_get(&event->root, "branch");

		if (is_partial)
			return;
		adk_emit_error(run,
					   author && author->type == jbvString ?
					   pnstrdup(author->val.string.val, author->val.string.len) : "runner",
					   branch && branch->type == jbvString ?
					   pnstrdup(branch->val.string.val, branch->val.string.len) : NULL,
					   code, why);
		return;
	}
	adk_store_timed(run, event, &stored);
	adk_put_row(run, &stored, is_partial);
}

/*
 * NULL when the store takes an event of this size and nesting; else why
 * not, and *code the error code for it (EVENT_TOO_LARGE, EVENT_TOO_DEEP).
 * The same limits adk_append_event applies: adk.max_event_size on the
 * event's jsonb, ADK_MAX_JSON_DEPTH levels counting the event's own object.
 */
char *
adk_event_unstorable(Jsonb *event, const char **code)
{
	if (VARSIZE(event) > (Size) adk_max_event_size_kb * 1024)
	{
		*code = "EVENT_TOO_LARGE";
		return psprintf("the event would take %zu bytes; \"adk.max_event_size\" allows %d kB",
						(Size) VARSIZE(event), adk_max_event_size_kb);
	}
	if (adk_jsonb_depth(&event->root, ADK_MAX_JSON_DEPTH) > ADK_MAX_JSON_DEPTH)
	{
		*code = "EVENT_TOO_DEEP";
		return psprintf("the event would be nested more than %d levels deep",
						ADK_MAX_JSON_DEPTH);
	}
	*code = NULL;
	return NULL;
}

/*
 * The graph workflow node attempt an error at the current node path ends
 * instead of the invocation: an agent or nested workflow node with a
 * retry left (workflow.c marks its node meta) the path is at or below,
 * while the invocation goes on.  A schema mismatch -- the agent's own
 * output schema, a nested node's input or output validation -- and a
 * budget are no failures a retry takes (ADK-Go's default ShouldRetry).
 * The innermost such node when several hold the path; NULL: none.
 */
static AdkWfNodeMeta *
attempt_scope(AdkRun *run, const char *code, const char *message)
{
	AdkWfNodeMeta *found = NULL;
	ListCell   *lc;

	if (run->node_path == NULL || run->out.end_invocation || code == NULL ||
		strcmp(code, "OUTPUT_SCHEMA_INVALID") == 0 ||
		strcmp(code, "BUDGET_EXCEEDED") == 0 ||
		strcmp(code, "CANCELLED") == 0 ||
		(message != NULL && strstr(message, " validation failed: ") != NULL))
		return NULL;
	foreach(lc, run->wf_nodes)
	{
		AdkWfNodeMeta *meta = (AdkWfNodeMeta *) lfirst(lc);
		size_t		len = strlen(meta->path);

		/* the innermost: a nested node's own retry comes first */
		if (meta->attempt_scope && meta->attempt_error == NULL &&
			strncmp(run->node_path, meta->path, len) == 0 &&
			(run->node_path[len] == '\0' || run->node_path[len] == '/') &&
			(found == NULL || len > strlen(found->path)))
			found = meta;
	}
	return found;
}

/*
 * A stored error event; the invocation ends as failed.  Returns false.
 * Inside an attempt of a graph workflow node that a retry runs again
 * (attempt_scope), the error is that attempt's: noted on the node, not
 * stored -- ADK-Go yields no event for a failed attempt -- and the
 * invocation goes on (workflow.c stops the node's lane and retries it).
 */
bool
adk_emit_error(AdkRun *run, const char *author, const char *branch,
			   const char *code, const char *message)
{
	JsonWriter	w;
	AdkStoredEvent stored;
	AdkWfNodeMeta *scope = attempt_scope(run, code, message);

	if (scope != NULL)
	{
		scope->attempt_error = MemoryContextStrdup(run->run_cxt,
												   message && *message ? message :
												   (code ? code : "UNKNOWN_ERROR"));
		return false;
	}
	adk_event_start(&w, run, author, branch);
	jw_key(&w, "error_code");
	jw_string(&w, code ? code : "UNKNOWN_ERROR");
	jw_key(&w, "error_message");
	jw_string(&w, message ? message : "");
	jw_end_object(&w);
	adk_store_timed(run, jw_finish(&w), &stored);
	adk_put_row(run, &stored, false);
	run->out.failed = true;
	run->out.end_invocation = true;
	if (run->out.error_code == NULL)
	{
		/* in the run's memory: this may be called inside a round's */
		run->out.error_code = MemoryContextStrdup(GetMemoryChunkContext(run),
											  code ? code : "UNKNOWN_ERROR");
		run->out.error_message = MemoryContextStrdup(GetMemoryChunkContext(run),
												 message ? message : "");
	}
	return false;
}

/*
 * Append an event, adding the time it took to the invocation's store time
 * (adk.invocations.store_ms: what storing events cost this run).
 */
void
adk_store_timed(AdkRun *run, Jsonb *event, AdkStoredEvent *stored)
{
	instr_time	start,
				end;

	INSTR_TIME_SET_CURRENT(start);
	adk_store_append(run->app, run->user, run->session, event, stored);
	INSTR_TIME_SET_CURRENT(end);
	INSTR_TIME_SUBTRACT(end, start);
	run->out.store_ms += INSTR_TIME_GET_MILLISEC(end);
	if (stored->seq > 0)
	{
		run->out.stored_events++;
		run->last_seq = stored->seq;
		adk_node_event(run, stored->event, stored->time);	/* run_states.c */
	}
}

/*
 * Hand one event to the run's sink.
 */
void
adk_put_row(AdkRun *run, AdkStoredEvent *stored, bool partial)
{
	run->sink(run, stored->event, stored->seq, stored->time, partial,
			  run->sink_arg);
}

/*
 * "prefix" + a random UUID.
 */
char *
adk_new_id(const char *prefix)
{
	char		uuid[37];

	adk_random_uuid(uuid);
	return psprintf("%s%s", prefix, uuid);
}


/*
 * {"role": "user", "parts": [{"text": text}]}
 */
Jsonb *
adk_text_content(const char *text)
{
	JsonWriter	w;

	jw_init(&w);
	adk_jw_text_content(&w, "user", text);
	return jw_finish(&w);
}

/*
 * The usual shape of a callback in the flow: call the app's plugins for cb
 * with a context for agent (and up to two keyed values).  A plugin that
 * failed becomes a stored PLUGIN_ERROR event by agent on branch, and the
 * result is false; otherwise *result is the first plugin's replacement, or
 * NULL for "no change".
 */
bool
adk_plugins_hook(AdkRun *run, AdkCallback cb, const char *agent,
				 const char *branch, const char *key1, Jsonb *value1,
				 const char *key2, Jsonb *value2, Jsonb **result)
{
	char	   *error;

	*result = adk_plugins_call(run, cb,
							   adk_plugin_context(run, cb, agent, key1, value1,
												  key2, value2),
							   &error);
	if (error)
	{
		adk_emit_error(run, agent, branch, "PLUGIN_ERROR", error);
		return false;
	}
	return true;
}

/*
 * {"error": message}: the response a model gets for a call that failed
 * (tools, built-ins, HITL, agent-tools all answer with it).
 */
Jsonb *
adk_error_object(const char *message)
{
	JsonWriter	w;

	jw_init(&w);
	jw_begin_object(&w);
	jw_key(&w, "error");
	jw_string(&w, message);
	jw_end_object(&w);
	return jw_finish(&w);
}

/*
 * The custom_metadata of the graph node at path (run->wf_nodes, kept by
 * workflow.c); NULL: it is none
 */
AdkWfNodeMeta *
adk_node_meta(AdkRun *run, const char *path)
{
	ListCell   *lc;

	if (path == NULL)
		return NULL;
	foreach(lc, run->wf_nodes)
	{
		AdkWfNodeMeta *meta = (AdkWfNodeMeta *) lfirst(lc);

		if (strcmp(meta->path, path) == 0)
			return meta;
	}
	return NULL;
}
