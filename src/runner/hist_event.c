/*-------------------------------------------------------------------------
 *
 * hist_event.c
 *	  One stored event as prompt assembly sees it (HistEvent): whether it
 *	  has a place in a prompt for a branch, its parts, and which of them
 *	  are function calls and responses with which ids.  Read by prompt.c
 *	  (the contents and their pairing) and prompt_memo.c (the history a
 *	  run keeps between its requests), below both.
 *
 * IDENTIFICATION
 *	  src/runner/hist_event.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "utils/builtins.h"

#include "common/jsonb_util.h"
#include "runner/prompt_history.h"
#include "runner/runner.h"

static bool belongs_to_branch(Jsonb *event, const char *branch);
static bool in_scope(Jsonb *event, const char *scope);
static bool is_internal_request(JsonbContainer *parts);
static bool part_call_id(JsonbValue *part, const char *kind, char **id);

/*
 * ev as prompt assembly sees it, copied into the current memory context;
 * NULL when it has no place in a prompt for branch (no content, partial,
 * another branch, another isolation scope, an internal request).
 */
HistEvent *
adk_hist_event(Jsonb *ev, const char *branch, const char *scope)
{
	JsonbValue *content;
	JsonbValue *parts;
	HistEvent  *h;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	int			nparts = 0;
	int			nresponses = 0;

	content = adk_jsonb_get(&ev->root, "content");
	if (content == NULL || content->type != jbvBinary)
		return NULL;
	parts = adk_jsonb_get(content->val.binary.data, "parts");
	if (parts == NULL || parts->type != jbvBinary ||
		JsonContainerSize(parts->val.binary.data) == 0)
		return NULL;
	if ((content = adk_jsonb_get(&ev->root, "partial")) != NULL &&
		content->type == jbvBool && content->val.boolean)
		return NULL;
	if (!belongs_to_branch(ev, branch) || !in_scope(ev, scope))
		return NULL;
	if (is_internal_request(parts->val.binary.data))
		return NULL;

	h = palloc0(sizeof(HistEvent));
	h->event = DatumGetJsonbPCopy(PointerGetDatum(ev));
	content = adk_jsonb_get(&h->event->root, "content");
	h->content_len = content->val.binary.len;
	h->parts = adk_jsonb_get(content->val.binary.data, "parts")->val.binary.data;
	h->author = adk_jstr(&h->event->root, "author");
	if (h->author == NULL)
		h->author = "user";
	h->role = adk_jstr(content->val.binary.data, "role");
	it = JsonbIteratorInit(h->parts);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok != WJB_ELEM || v.type != jbvBinary)
			continue;
		nparts++;
		if (adk_jsonb_get(v.val.binary.data, "function_call"))
			h->has_calls = true;
		if (adk_jsonb_get(v.val.binary.data, "function_response"))
			nresponses++;
	}
	h->only_responses = nparts > 0 && nresponses == nparts;
	h->has_responses = nresponses > 0;
	if (h->has_calls || h->has_responses)
	{
		JsonbValue *lr = adk_jsonb_get(&h->event->root, "long_running_tool_ids");
		int			k = 0;

		h->npinfo = JsonContainerSize(h->parts);
		h->pinfo = palloc0(sizeof(PartInfo) * h->npinfo);
		it = JsonbIteratorInit(h->parts);
		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		{
			PartInfo   *p;
			char	   *id;

			if (tok != WJB_ELEM)
				continue;
			p = &h->pinfo[k++];
			if (part_call_id(&v, "function_call", &id))
			{
				p->kind = 'c';
				if (id != NULL && lr != NULL && lr->type == jbvBinary)
				{
					JsonbValue	want;

					want.type = jbvString;
					want.val.string.val = id;
					want.val.string.len = strlen(id);
					p->long_running =
						findJsonbValueFromContainer(lr->val.binary.data,
													JB_FARRAY, &want) != NULL;
				}
			}
			else if (part_call_id(&v, "function_response", &id))
				p->kind = 'r';
			else
				continue;
			p->id = id;
			if (id != NULL)
				p->hash = hash_bytes((const unsigned char *) id, strlen(id));
		}
	}
	return h;
}

/*
 * ADK: an event without a branch, or whose branch is a prefix of ours.
 * A single_turn node's branch ("agent@n", single_turn.c) is a world of its
 * own: its events are in no other branch's prompt, and its prompt holds
 * no event of another branch, nor unbranched ones.
 */
static bool
belongs_to_branch(Jsonb *event, const char *branch)
{
	JsonbValue *b = adk_jsonb_get(&event->root, "branch");
	bool		node_event = b != NULL && b->type == jbvString &&
		memchr(b->val.string.val, '@', b->val.string.len) != NULL;

	if (adk_is_node_branch(branch) && (b == NULL || b->type != jbvString))
		return false;
	if (node_event && branch == NULL)
		return false;
	if (branch == NULL || b == NULL || b->type != jbvString)
		return true;
	return strlen(branch) >= (size_t) b->val.string.len &&
		strncmp(branch, b->val.string.val, b->val.string.len) == 0;
}

/*
 * ADK's isolation scopes (docs/agent-modes.md): a prompt holds the events
 * of its own scope only, exact match -- an unscoped agent's (scope NULL:
 * every agent but a task agent) only unscoped events.  A task agent's
 * events, which carry the id of the call that delegated to it, are in no
 * chat agent's prompt, and its prompt holds nothing outside its task.
 */
static bool
in_scope(Jsonb *event, const char *scope)
{
	JsonbValue *s = adk_jsonb_get(&event->root, "isolation_scope");

	if (s == NULL || s->type != jbvString || s->val.string.len == 0)
		return scope == NULL;
	return scope != NULL && strlen(scope) == (size_t) s->val.string.len &&
		memcmp(scope, s->val.string.val, s->val.string.len) == 0;
}

/*
 * Calls to / responses of ADK's internal confirmation and credential
 * requests never reach the model.
 */
static bool
is_internal_request(JsonbContainer *parts)
{
	JsonbIterator *it = JsonbIteratorInit(parts);
	JsonbValue	v;
	JsonbIteratorToken tok;

	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		JsonbValue *f;
		char	   *name;

		if (tok != WJB_ELEM || v.type != jbvBinary)
			continue;
		f = adk_jsonb_get(v.val.binary.data, "function_call");
		if (f == NULL)
			f = adk_jsonb_get(v.val.binary.data, "function_response");
		if (f == NULL || f->type != jbvBinary)
			continue;
		name = adk_jstr(f->val.binary.data, "name");
		if (name && (strcmp(name, "adk_request_confirmation") == 0 ||
					 strcmp(name, "adk_request_credential") == 0))
			return true;
	}
	return false;
}

static bool
part_call_id(JsonbValue *part, const char *kind, char **id)
{
	JsonbValue *f;

	if (part->type != jbvBinary)
		return false;
	f = adk_jsonb_get(part->val.binary.data, kind);
	if (f == NULL || f->type != jbvBinary)
		return false;
	*id = adk_jstr(f->val.binary.data, "id");
	return true;
}
