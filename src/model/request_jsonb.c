/*-------------------------------------------------------------------------
 *
 * request_jsonb.c
 *	  A request body as jsonb for adk.model_calls, made of the jsonb its
 *	  kept messages carry.
 *
 * The ledger stores every request it sends.  A tool loop sends the whole
 * history every time, and converting it node by node from json-c cost
 * more than all of prompt assembly (issue 12, §7).  A message kept for
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

#include "utils/jsonb.h"

#include <json-c/json.h>

#include "common/json_bridge.h"
#include "common/jsonb_util.h"
#include "model/llm.h"
#include "model/request_jsonb.h"

static Jsonb *part_jsonb(struct json_object *v, int depth);
static void root_value(Jsonb *jb, JsonbValue *out);

Jsonb *
adk_request_jsonb(struct json_object *body)
{
	Jsonb	   *jb = part_jsonb(body, 0);
	Jsonb	   *copy;

	if (llm_msg_memo(body) == NULL)
		return jb;
	/* a body is never kept itself; if it were, its memo's is not ours */
	copy = palloc(VARSIZE(jb));
	memcpy(copy, jb, VARSIZE(jb));
	return copy;
}

/*
 * The jsonb of v, at nesting depth "depth" of the body: a message's memo's
 * (not to be changed or freed), or a new one in CurrentMemoryContext.
 */
static Jsonb *
part_jsonb(struct json_object *v, int depth)
{
	LlmMsgMemo *m = llm_msg_memo(v);
	JsonbValue *keys;
	JsonbValue *vals;
	Jsonb	   *jb;
	int			n;
	int			i = 0;
	struct json_object_iter it;

	if (m != NULL)
	{
		if (m->jsonb == NULL)
		{
			void	   *copy;

			jb = adk_jsonc_to_jsonb(v);
			copy = malloc(VARSIZE(jb));
			if (copy == NULL)
				return jb;		/* not kept: made again next time */
			memcpy(copy, jb, VARSIZE(jb));
			pfree(jb);
			m->jsonb = copy;
		}
		return (Jsonb *) m->jsonb;
	}
	if (depth >= 2 ||
		!(json_object_is_type(v, json_type_object) ||
		  json_object_is_type(v, json_type_array)))
		return adk_jsonc_to_jsonb(v);

	if (json_object_is_type(v, json_type_array))
	{
		n = (int) json_object_array_length(v);
		vals = palloc(sizeof(JsonbValue) * (n + 1));
		for (i = 0; i < n; i++)
			root_value(part_jsonb(json_object_array_get_idx(v, i), depth + 1),
					   &vals[i]);
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
			root_value(part_jsonb(it.val, depth + 1), &vals[i]);
			i++;
		}
		jb = adk_jsonb_object_of(keys, vals, i);
		pfree(keys);
	}
	/* the parts' bytes are copied; new ones go with the caller's memory */
	pfree(vals);
	return jb;
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
