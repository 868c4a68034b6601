/*-------------------------------------------------------------------------
 *
 * single_turn.c
 *	  single_turn sub-agents: a chat coordinator gets one tool per
 *	  single_turn sub-agent, named as the agent (ADK-Go's SingleTurnTool,
 *	  docs/agent-modes.md); calling it runs the sub-agent once, as a node of
 *	  the call.
 *
 * The node's prompt is its input alone -- the call's "request", or its
 * arguments as JSON when the agent has an input_schema -- followed by its
 * own events of this invocation: it sees no history, and its tools work in
 * a loop of their own (agents.c pushes its frame; flow.c runs its rounds).
 * Its events are stored on branch "<agent>@<n>", n counting the agent's
 * nodes in the invocation from 1, as ADK-Go's event streams show
 * (translator@1); nothing outside that branch sees them, and they see
 * nothing outside it.  Its last text answer is its output, parsed as JSON
 * when it has an output_schema; the coordinator's call gets
 * {"result": output} as its response, and output_key writes the output.
 * The calls of one model turn run one after another, each its own node.
 *
 * IDENTIFICATION
 *	  src/runner/single_turn.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <json-c/json.h>

#include "utils/memutils.h"

#include "common/json_bridge.h"
#include "common/json_limits.h"
#include "common/json_writer.h"
#include "common/jsonb_util.h"
#include "runner/runner.h"

/* One single_turn sub-agent run for one call (AdkRun.nodes) */
typedef struct AdkNode
{
	char	   *call_id;		/* the coordinator's call */
	char	   *agent;
	char	   *branch;			/* <agent>@<n> */
	Jsonb	   *input;			/* the user content its prompt starts with */
	char	   *output;			/* its last text answer, or NULL */
	Jsonb	   *result;			/* the call's response, once done */
	bool		chat;			/* a workflow's chat agent node: on its
								 * activation's branch, its prompt the
								 * session's (only its output is noted) */
	bool		deferred;		/* a workflow's agent node whose answer's
								 * event does not finish it: the workflow's
								 * event does (its node settings) */
} AdkNode;

static AdkNode *node_for_call(AdkRun *run, const char *call_id);
static AdkNode *node_on_branch(AdkRun *run, const char *branch);
static Jsonb *node_input(AdkAgent *child, Jsonb *args);
static Jsonb *node_result(AdkAgent *child, AdkNode *node);

/* A NULL mode is chat (docs/agent-modes.md) */
bool
adk_agent_is_chat(AdkAgent *agent)
{
	return agent->mode == NULL || strcmp(agent->mode, "chat") == 0;
}

static AdkAgent *
single_turn_sub_agent(AdkAgent *coordinator, const char *name)
{
	ListCell   *lc;

	if (strcmp(coordinator->kind, "llm") != 0)
		return NULL;
	foreach(lc, coordinator->sub_agents)
	{
		AdkAgent   *a = (AdkAgent *) lfirst(lc);

		if (a->mode != NULL && strcmp(a->mode, "single_turn") == 0 &&
			strcmp(a->name, name) == 0)
			return a;
	}
	return NULL;
}

/* Whether name is the tool of one of coordinator's single_turn sub-agents */
bool
adk_is_single_turn(AdkAgent *coordinator, const char *name)
{
	return single_turn_sub_agent(coordinator, name) != NULL;
}

/*
 * The coordinator's declarations of its single_turn sub-agents' tools
 * (ADK-Go's MakeFunctionDeclaration): the agent's name and description,
 * its input_schema as the parameters, else {request: string}, required.
 * How many it wrote.
 */
int
adk_single_turn_declare(JsonWriter *w, AdkAgent *coordinator)
{
	ListCell   *lc;
	int			n = 0;

	if (strcmp(coordinator->kind, "llm") != 0)
		return 0;
	foreach(lc, coordinator->sub_agents)
	{
		AdkAgent   *a = (AdkAgent *) lfirst(lc);

		if (a->mode == NULL || strcmp(a->mode, "single_turn") != 0)
			continue;
		jw_begin_object(w);
		jw_key(w, "name");
		jw_string(w, a->name);
		jw_key(w, "description");
		jw_string(w, a->description ? a->description : "");
		jw_key(w, "parameters");
		if (a->input_schema != NULL)
			jw_jsonb(w, a->input_schema);
		else
		{
			jw_begin_object(w);
			jw_key(w, "type");
			jw_string(w, "object");
			jw_key(w, "properties");
			jw_begin_object(w);
			jw_key(w, "request");
			jw_begin_object(w);
			jw_key(w, "type");
			jw_string(w, "string");
			jw_end_object(w);
			jw_end_object(w);
			jw_key(w, "required");
			jw_begin_array(w);
			jw_string(w, "request");
			jw_end_array(w);
			jw_end_object(w);
		}
		jw_end_object(w);
		n++;
	}
	return n;
}

/*
 * Before the coordinator's calls run (agents.c): the next of its
 * single_turn calls that has not run -- true with the sub-agent to push
 * (*child) and its branch; false when every one has its result.  A node
 * whose frame has just finished gets its result here.  Arguments that do
 * not fit the agent's input_schema are the call's error response, and no
 * node runs.  In the run's memory.
 */
bool
adk_single_turn_next(AdkRun *run, AdkAgent *coordinator, List *calls,
					 AdkAgent **child, const char **branch)
{
	MemoryContext old = MemoryContextSwitchTo(run->run_cxt);
	ListCell   *lc;
	bool		found = false;

	foreach(lc, calls)
	{
		AdkCall    *call = (AdkCall *) lfirst(lc);
		AdkAgent   *a = single_turn_sub_agent(coordinator, call->name);
		AdkNode    *node;
		ListCell   *l;
		int			n = 1;

		if (a == NULL)
			continue;
		if ((node = node_for_call(run, call->id)) != NULL)
		{
			if (node->result == NULL)
				node->result = node_result(a, node);	/* it has just run */
			continue;
		}
		node = palloc0(sizeof(AdkNode));
		node->call_id = pstrdup(call->id);
		node->agent = a->name;
		foreach(l, run->nodes)
		{
			if (strcmp(((AdkNode *) lfirst(l))->agent, a->name) == 0)
				n++;
		}
		node->branch = psprintf("%s@%d", a->name, n);
		run->nodes = lappend(run->nodes, node);
		/* checked in the step's memory: only a problem is kept */
		MemoryContextSwitchTo(old);
		node->result = adk_delegation_error(a, call->args, run->run_cxt);
		MemoryContextSwitchTo(run->run_cxt);
		if (node->result != NULL)
			continue;			/* ADK-Go: the tool fails, the model sees why */
		node->input = node_input(a, call->args);
		*child = a;
		*branch = node->branch;
		found = true;
		break;
	}
	MemoryContextSwitchTo(old);
	return found;
}

/*
 * The response of a single_turn call (flow.c's run_call), or NULL when
 * name is not one of coordinator's single_turn sub-agents.
 */
Jsonb *
adk_single_turn_result(AdkRun *run, AdkAgent *coordinator,
					   const char *call_id, const char *name)
{
	AdkNode    *node;

	if (!adk_is_single_turn(coordinator, name))
		return NULL;
	node = node_for_call(run, call_id);
	if (node == NULL || node->result == NULL)
		return adk_error_object(psprintf("agent \"%s\" did not run", name));
	return node->result;
}

/* A node's branch: agent names have no "@" (adk.agents' check) */
bool
adk_is_node_branch(const char *branch)
{
	return branch != NULL && strchr(branch, '@') != NULL;
}

/*
 * A node's request: its input, then what its own events give (contents,
 * an array); other branches' contents as they are.
 */
Jsonb *
adk_node_contents(AdkRun *run, const char *branch, Jsonb *contents)
{
	AdkNode    *node = node_on_branch(run, branch);
	JsonWriter	w;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	if (node == NULL || node->input == NULL)
		return contents;
	jw_init(&w);
	jw_begin_array(&w);
	jw_jsonb(&w, node->input);
	it = JsonbIteratorInit(&contents->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_ELEM)
			jw_value(&w, &v);
	}
	jw_end_array(&w);
	return jw_finish(&w);
}

/*
 * Whether a node's prompt holds event: only this invocation's (the next
 * invocation's node of the agent has the same branch).
 */
bool
adk_node_event_visible(AdkRun *run, const char *branch, Jsonb *event)
{
	char	   *inv;

	if (!adk_is_node_branch(branch))
		return true;
	inv = adk_jstr(&event->root, "invocation_id");
	return inv != NULL && strcmp(inv, run->invocation_id) == 0;
}

/*
 * A text answer of agent on branch (flow.c): a node's output is its last.
 * Whether it is one (its event then says so in node_info, as ADK-Go's
 * message_as_output).
 */
bool
adk_node_answer(AdkRun *run, AdkAgent *agent, const char *branch,
				const char *text)
{
	AdkNode    *node;
	ListCell   *lc;

	/* a workflow's chat agent node: its output noted, its event as is */
	foreach(lc, run->nodes)
	{
		node = (AdkNode *) lfirst(lc);
		if (node->chat && node->result == NULL &&
			strcmp(node->agent, agent->name) == 0 &&
			((branch == NULL && node->branch == NULL) ||
			 (branch != NULL && node->branch != NULL &&
			  strcmp(branch, node->branch) == 0)))
		{
			if (node->output)
				pfree(node->output);
			node->output = MemoryContextStrdup(run->run_cxt, text);
			return false;
		}
	}
	if (!adk_is_node_branch(branch) ||
		(node = node_on_branch(run, branch)) == NULL ||
		strcmp(node->agent, agent->name) != 0)
		return false;
	node->output = MemoryContextStrdup(run->run_cxt, text);
	return !node->deferred;
}

/*
 * An agent's output as a value: its text, parsed as JSON when the agent
 * has an output_schema and the text is JSON (ADK-Go: the output schema's
 * shape); the text otherwise.  A jsonb scalar or container.
 */
Jsonb *
adk_agent_output_value(AdkAgent *agent, const char *text)
{
	JsonbValue	s;

	if (agent->output_schema != NULL)
	{
		AdkJsonParseError err;
		const char *why;
		struct json_object *obj = adk_json_parse(text, strlen(text), 64, JSON_TOKENER_STRICT,
												 &err, &why);

		if (obj != NULL)
		{
			Jsonb	   *volatile result = NULL;

			PG_TRY();
			{
				result = adk_jsonc_to_jsonb(obj);
			}
			PG_FINALLY();
			{
				json_object_put(obj);
			}
			PG_END_TRY();
			return result;
		}
	}
	s.type = jbvString;
	s.val.string.val = (char *) text;
	s.val.string.len = strlen(text);
	return JsonbValueToJsonb(&s);
}

static AdkNode *
node_for_call(AdkRun *run, const char *call_id)
{
	ListCell   *lc;

	foreach(lc, run->nodes)
	{
		AdkNode    *n = (AdkNode *) lfirst(lc);

		if (!n->chat && strcmp(n->call_id, call_id) == 0)
			return n;
	}
	return NULL;
}

static AdkNode *
node_on_branch(AdkRun *run, const char *branch)
{
	ListCell   *lc;

	if (branch == NULL)
		return NULL;
	foreach(lc, run->nodes)
	{
		AdkNode    *n = (AdkNode *) lfirst(lc);

		if (!n->chat && strcmp(n->branch, branch) == 0)
			return n;
	}
	return NULL;
}

/*
 * The user content a node's prompt starts with (ADK-Go's node input): the
 * request, or the arguments as JSON text when the agent has an
 * input_schema.
 */
static Jsonb *
node_input(AdkAgent *child, Jsonb *args)
{
	char	   *text = child->input_schema ? NULL : adk_jstr(&args->root, "request");

	if (text == NULL)
		text = JsonbToCString(NULL, &args->root, VARSIZE(args));
	return adk_text_content(text);
}

/* {"result": output}: the output a value (adk_agent_output_value) */
static Jsonb *
node_result(AdkAgent *child, AdkNode *node)
{
	JsonWriter	w;

	jw_init(&w);
	jw_begin_object(&w);
	jw_key(&w, "result");
	if (node->output == NULL)
		jw_null(&w);
	else
		jw_jsonb(&w, adk_agent_output_value(child, node->output));
	jw_end_object(&w);
	return jw_finish(&w);
}

/*
 * A graph workflow's agent node starts in its lane (agents.c): noted as a
 * node of the run, keyed by its path, so that its prompt starts with its
 * input on its own branch -- a single_turn agent's, as above -- and its
 * last text answer is kept (a chat agent node's prompt is the session's
 * on its activation's branch: only its answer is noted).  In the run's
 * memory.  A node whose settings check its output first (defer_output)
 * has its answer noted but its event does not finish it.  A new attempt
 * of the node (its retry: workflow.c) goes on with the same node.
 */
void
adk_node_open(AdkRun *run, AdkWfAgentNode *wn)
{
	MemoryContext old;
	AdkNode    *node;
	ListCell   *lc;

	/* a new attempt of a node a retry runs again: its answer so far goes */
	foreach(lc, run->nodes)
	{
		node = (AdkNode *) lfirst(lc);
		if (node->result == NULL && strcmp(node->call_id, wn->path) == 0)
		{
			if (node->output)
				pfree(node->output);
			node->output = NULL;
			return;
		}
	}
	old = MemoryContextSwitchTo(run->run_cxt);
	node = palloc0(sizeof(AdkNode));
	node->deferred = wn->defer_output;

	node->call_id = pstrdup(wn->path);
	node->agent = pstrdup(wn->agent->name);
	node->branch = wn->branch ? pstrdup(wn->branch) : NULL;
	node->chat = wn->chat;
	node->input = (!wn->chat && wn->content) ?
		DatumGetJsonbPCopy(JsonbPGetDatum(wn->content)) : NULL;
	run->nodes = lappend(run->nodes, node);
	MemoryContextSwitchTo(old);
}

/*
 * The agent node's lane has finished: its last text answer (NULL: none),
 * and the node is done (a later activation is another node).
 */
char *
adk_node_output(AdkRun *run, AdkWfAgentNode *wn)
{
	ListCell   *lc;

	foreach(lc, run->nodes)
	{
		AdkNode    *n = (AdkNode *) lfirst(lc);

		if (n->result == NULL && strcmp(n->call_id, wn->path) == 0)
		{
			/* done: {"result": output}, as a single_turn call's */
			MemoryContext old = MemoryContextSwitchTo(run->run_cxt);

			n->result = node_result(wn->agent, n);
			MemoryContextSwitchTo(old);
			return n->output;
		}
	}
	return NULL;
}
