/*-------------------------------------------------------------------------
 *
 * jsonb_util.c
 *	  Small jsonb helpers: key lookup, concatenation, one-key objects and
 *	  the split of an ADK state delta by scope prefix.
 *
 * All results are palloc'd in CurrentMemoryContext.
 *
 * IDENTIFICATION
 *	  src/common/jsonb_util.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/fmgrprotos.h"
#include "utils/numeric.h"

#include "common/jsonb_util.h"

static void push_key(JsonbParseState **state, const char *key, int len);
static bool has_prefix(const JsonbValue *key, const char *prefix, int plen);

/*
 * Nesting depth of a jsonb container: a scalar is 0, {} or [] is 1, and so
 * on.  Stops counting once "limit" is passed (returns limit + 1), so a check
 * against a limit costs no more than walking up to it.
 */
int
adk_jsonb_depth(JsonbContainer *c, int limit)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	int			depth = 0;
	int			max = 0;

	if (c == NULL || JsonContainerIsScalar(c))
		return 0;
	it = JsonbIteratorInit(c);
	while ((tok = JsonbIteratorNext(&it, &v, false)) != WJB_DONE)
	{
		if (tok == WJB_BEGIN_ARRAY || tok == WJB_BEGIN_OBJECT)
		{
			if (++depth > max)
				max = depth;
			if (max > limit)
				return limit + 1;
		}
		else if (tok == WJB_END_ARRAY || tok == WJB_END_OBJECT)
			depth--;
	}
	return max;
}

/*
 * Look up "key" in a jsonb object; NULL when absent or not an object.
 */
JsonbValue *
adk_jsonb_get(JsonbContainer *obj, const char *key)
{
	JsonbValue	k;

	if (obj == NULL || !JsonContainerIsObject(obj))
		return NULL;
	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = strlen(key);
	return findJsonbValueFromContainer(obj, JB_FOBJECT, &k);
}

bool
adk_jsonb_is_object(JsonbContainer *c)
{
	return c != NULL && JsonContainerIsObject(c) && !JsonContainerIsScalar(c);
}

/*
 * a || b for two jsonb objects (keys of b win).
 */
Jsonb *
adk_jsonb_concat(Jsonb *a, Jsonb *b)
{
	return DatumGetJsonbP(DirectFunctionCall2(jsonb_concat,
											  JsonbPGetDatum(a),
											  JsonbPGetDatum(b)));
}

/*
 * Turn a JsonbValue (scalar or jbvBinary) into a standalone Jsonb.
 */
Jsonb *
adk_jsonb_value_to_jsonb(JsonbValue *v)
{
	return JsonbValueToJsonb(v);
}

static void
push_key(JsonbParseState **state, const char *key, int len)
{
	JsonbValue	k;

	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = len;
	pushJsonbValue(state, WJB_KEY, &k);
}

/*
 * {"key": value} where value is an int64.
 */
Jsonb *
adk_jsonb_one_int(const char *key, int64 value)
{
	JsonbValue	v;

	v.type = jbvNumeric;
	v.val.numeric = int64_to_numeric(value);
	return adk_jsonb_one_value(key, &v);
}

/*
 * {"key": value} for any JsonbValue (scalar or jbvBinary).
 */
Jsonb *
adk_jsonb_one_value(const char *key, JsonbValue *value)
{
	JsonbParseState *state = NULL;
	JsonbValue *res;

	pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
	push_key(&state, key, strlen(key));
	pushJsonbValue(&state, WJB_VALUE, value);
	res = pushJsonbValue(&state, WJB_END_OBJECT, NULL);
	return JsonbValueToJsonb(res);
}

static bool
has_prefix(const JsonbValue *key, const char *prefix, int plen)
{
	return key->val.string.len >= plen &&
		memcmp(key->val.string.val, prefix, plen) == 0;
}

/*
 * Copy of an object without its "temp:" keys.
 */
Jsonb *
adk_jsonb_without_temp(JsonbContainer *obj)
{
	JsonbParseState *state = NULL;
	JsonbIterator *it = JsonbIteratorInit(obj);
	JsonbValue	k,
				v;
	JsonbIteratorToken tok;
	JsonbValue *res = NULL;

	while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE)
	{
		if (tok == WJB_BEGIN_OBJECT || tok == WJB_END_OBJECT)
		{
			res = pushJsonbValue(&state, tok, NULL);
			continue;
		}
		Assert(tok == WJB_KEY);
		tok = JsonbIteratorNext(&it, &v, true);
		if (has_prefix(&k, "temp:", 5))
			continue;
		pushJsonbValue(&state, WJB_KEY, &k);
		pushJsonbValue(&state, WJB_VALUE, &v);
	}
	return JsonbValueToJsonb(res);
}

/*
 * Split a state delta object by ADK's scope prefixes (000 §三.4.3):
 * "app:" and "user:" keys go to their scope with the prefix removed,
 * "temp:" keys are dropped, the rest belong to the session.
 */
void
adk_split_state_delta(JsonbContainer *delta, AdkStateDelta *out)
{
	JsonbParseState *st[3] = {NULL, NULL, NULL};
	int			n[3] = {0, 0, 0};
	JsonbIterator *it;
	JsonbValue	k,
				v;
	JsonbIteratorToken tok;
	Jsonb	  **dest[3];
	int			i;

	memset(out, 0, sizeof(*out));
	if (!adk_jsonb_is_object(delta) || JsonContainerSize(delta) == 0)
		return;

	dest[0] = &out->session;
	dest[1] = &out->app;
	dest[2] = &out->user;

	it = JsonbIteratorInit(delta);
	while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE)
	{
		int			scope;
		int			skip;

		if (tok != WJB_KEY)
			continue;
		tok = JsonbIteratorNext(&it, &v, true);

		if (has_prefix(&k, "temp:", 5))
		{
			out->had_temp = true;
			continue;
		}
		else if (has_prefix(&k, "app:", 4))
			scope = 1, skip = 4;
		else if (has_prefix(&k, "user:", 5))
			scope = 2, skip = 5;
		else
			scope = 0, skip = 0;

		if (n[scope]++ == 0)
			pushJsonbValue(&st[scope], WJB_BEGIN_OBJECT, NULL);
		push_key(&st[scope], k.val.string.val + skip,
				 k.val.string.len - skip);
		pushJsonbValue(&st[scope], WJB_VALUE, &v);
	}

	for (i = 0; i < 3; i++)
	{
		if (n[i] > 0)
			*dest[i] = JsonbValueToJsonb(pushJsonbValue(&st[i],
														WJB_END_OBJECT,
														NULL));
	}
}

/*
 * The jsonb array of elems, each an object or array (jbvBinary, as
 * JsonbIteratorNext gives them), by copying their bytes: what pushing
 * them into a new array would give, byte for byte (convertToJsonb lays out
 * an array as its header, one JEntry per element -- every
 * JB_OFFSET_STRIDE-th its end offset, the others their length, each
 * counting the padding that aligns a container to 4 bytes -- then the
 * elements), without going through their values.
 */
Jsonb *
adk_jsonb_array_of(const JsonbValue *elems, int n)
{
	Size		total = VARHDRSZ + sizeof(uint32) + sizeof(JEntry) * (Size) n;
	Size		pos;
	uint32		off = 0;
	Jsonb	   *res;
	int			i;

	for (i = 0; i < n; i++)
	{
		if (elems[i].type != jbvBinary)
			elog(ERROR, "jsonb array element %d is not a container", i);
		total = INTALIGN(total) + elems[i].val.binary.len;
		if (total - VARHDRSZ > JENTRY_OFFLENMASK || n > JB_CMASK)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("total size of jsonb array elements exceeds the maximum of %d bytes",
							JENTRY_OFFLENMASK)));
	}
	res = palloc0(total);
	SET_VARSIZE(res, total);
	res->root.header = (uint32) n | JB_FARRAY;
	pos = VARHDRSZ + sizeof(uint32) + sizeof(JEntry) * (Size) n;
	for (i = 0; i < n; i++)
	{
		uint32		pad = INTALIGN(pos) - pos;
		uint32		len = pad + elems[i].val.binary.len;

		off += len;
		res->root.children[i] = JENTRY_ISCONTAINER |
			((i % JB_OFFSET_STRIDE) == 0 ? (off | JENTRY_HAS_OFF) : len);
		memcpy((char *) res + pos + pad, elems[i].val.binary.data,
			   elems[i].val.binary.len);
		pos += len;
	}
	Assert(pos == total);
	return res;
}
