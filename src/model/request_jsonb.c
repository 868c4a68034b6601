/*-------------------------------------------------------------------------
 *
 * request_jsonb.c
 *	  A request body as jsonb for adk.model_calls, made of the jsonb its
 *	  kept messages carry.
 *
 * The ledger stores every request it sends.  A tool loop sends the whole
 * history every time, and converting it node by node from json-c cost
 * more than all of prompt assembly.  A message kept for
 * later requests (msg_cache.c) carries a memo (llm.h); its jsonb is made
 * the first time a request with it is stored and kept in the memo, and
 * later requests copy its bytes.  The body and its members (the messages
 * array, say) are put together here from their parts' bytes
 * (adk_jsonb_object_of, adk_jsonb_array_of), byte for byte the jsonb that
 * converting the whole body would give; deeper values without a memo are
 * converted by json_bridge.c.
 *
 * IDENTIFICATION
 *	  src/model/request_jsonb.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/pg_list.h"
#include "utils/jsonb.h"

#include <json-c/json.h>

#include "common/json_bridge.h"
#include "common/jsonb_util.h"
#include "model/llm.h"
#include "model/request_jsonb.h"

static Jsonb *container_jsonb(struct json_object *v, int depth, List **made);
static void part_value(struct json_object *v, int depth, JsonbValue *out,
					   List **made);
static void root_value(Jsonb *jb, JsonbValue *out);
static bool has_memo(struct json_object *v, int depth);

Jsonb *
adk_request_jsonb(struct json_object *body)
{
	List	   *made = NIL;
	Jsonb	   *jb;
	JsonbValue	v;

	/*
	 * Without a kept message there is nothing to copy: converted in one
	 * pass, its strings referenced until the result is written, so the
	 * request's bytes are written once, not a second time in parts (a
	 * large request keeps none, generate.c).
	 */
	if (!has_memo(body, 0))
		return adk_jsonc_to_jsonb(body);
	if (llm_msg_memo(body) != NULL ||
		!(json_object_is_type(body, json_type_object) ||
		  json_object_is_type(body, json_type_array)))
	{
		/* a body is never kept itself; if it were, its memo's is not ours */
		part_value(body, 0, &v, &made);
		jb = adk_jsonb_value_to_jsonb(&v);
	}
	else
		jb = container_jsonb(body, 0, &made);
	/* the parts' bytes are copied: the new ones are not needed any more */
	list_free_deep(made);
	return jb;
}

/*
 * Whether v, at nesting depth "depth" of the body, or a value in it down to
 * depth 2 (where part_value stops looking) is a kept message.
 */
static bool
has_memo(struct json_object *v, int depth)
{
	if (llm_msg_memo(v) != NULL)
		return true;
	if (depth >= 2)
		return false;
	if (json_object_is_type(v, json_type_array))
	{
		size_t		n = json_object_array_length(v);
		size_t		i;

		for (i = 0; i < n; i++)
			if (has_memo(json_object_array_get_idx(v, i), depth + 1))
				return true;
	}
	else if (json_object_is_type(v, json_type_object))
	{
		struct json_object_iter it;

		json_object_object_foreachC(v, it)
		{
			if (has_memo(it.val, depth + 1))
				return true;
		}
	}
	return false;
}

/*
 * The jsonb of v, an object or array at nesting depth 0 or 1 of the body,
 * made of its members' values (part_value; what they needed made is added
 * to *made), in CurrentMemoryContext.
 */
static Jsonb *
container_jsonb(struct json_object *v, int depth, List **made)
{
	JsonbValue *keys;
	JsonbValue *vals;
	Jsonb	   *jb;
	int			n;
	int			i = 0;
	struct json_object_iter it;

	if (json_object_is_type(v, json_type_array))
	{
		n = (int) json_object_array_length(v);
		vals = palloc(sizeof(JsonbValue) * (n + 1));
		for (i = 0; i < n; i++)
			part_value(json_object_array_get_idx(v, i), depth + 1, &vals[i],
					   made);
		jb = adk_jsonb_array_of(vals, n);
	}
	else
	{
		n = json_object_object_length(v);
		keys = palloc(sizeof(JsonbValue) * (n + 1));
		vals = palloc(sizeof(JsonbValue) * (n + 1));
		json_object_object_foreachC(v, it)
		{
			keys[i].type = jbvString;
			keys[i].val.string.val = it.key;
			keys[i].val.string.len = (int) strlen(it.key);
			part_value(it.val, depth + 1, &vals[i], made);
			i++;
		}
		jb = adk_jsonb_object_of(keys, vals, i);
		pfree(keys);
	}
	pfree(vals);
	return jb;
}

/*
 * v, at nesting depth "depth" of the body, as a value of its container:
 * a message's memo's jsonb (not to be changed or freed), an array member
 * of the body (depth 1: the messages, say) as the values of its elements
 * -- the body's jsonb makes it in place, so its bytes are not copied
 * twice -- or a new jsonb.  What is made for it is added to *made, for
 * the caller to free once its container is made.
 */
static void
part_value(struct json_object *v, int depth, JsonbValue *out, List **made)
{
	LlmMsgMemo *m = llm_msg_memo(v);
	Jsonb	   *jb;

	if (m != NULL)
	{
		if (m->jsonb == NULL)
		{
			void	   *copy;

			jb = adk_jsonc_to_jsonb(v);
			copy = malloc(VARSIZE(jb));
			if (copy == NULL)
			{
				/* not kept: made again next time */
				*made = lappend(*made, jb);
				root_value(jb, out);
				return;
			}
			memcpy(copy, jb, VARSIZE(jb));
			pfree(jb);
			m->jsonb = copy;
		}
		root_value((Jsonb *) m->jsonb, out);
		return;
	}
	if (depth == 1 && json_object_is_type(v, json_type_array))
	{
		int			n = (int) json_object_array_length(v);
		JsonbValue *vals = palloc(sizeof(JsonbValue) * (n + 1));
		int			i;

		*made = lappend(*made, vals);
		for (i = 0; i < n; i++)
			part_value(json_object_array_get_idx(v, i), depth + 1, &vals[i],
					   made);
		out->type = jbvArray;
		out->val.array.nElems = n;
		out->val.array.elems = vals;
		out->val.array.rawScalar = false;
		return;
	}
	if (depth >= 2 ||
		!(json_object_is_type(v, json_type_object) ||
		  json_object_is_type(v, json_type_array)))
		jb = adk_jsonc_to_jsonb(v);
	else
		jb = container_jsonb(v, depth, made);
	*made = lappend(*made, jb);
	root_value(jb, out);
}

/*
 * The root of jb as a value: its scalar, or its container.
 */
static void
root_value(Jsonb *jb, JsonbValue *out)
{
	if (JB_ROOT_IS_SCALAR(jb))
	{
		if (!JsonbExtractScalar(&jb->root, out))
			elog(ERROR, "could not extract a jsonb scalar");
		return;
	}
	out->type = jbvBinary;
	out->val.binary.data = &jb->root;
	out->val.binary.len = VARSIZE(jb) - VARHDRSZ;
}
