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

static Size container_bytes(const JsonbValue *const *ent, int n,
							const JsonbContainer *pre, int keep, uint32 header);
static void container_write(char *dst, uint32 header,
							const JsonbValue *const *ent, int n,
							const JsonbContainer *pre, int keep);

/*
 * Pointers to the n elements of an array value (jbvArray), palloc'd.
 */
static const JsonbValue **
elem_pointers(const JsonbValue *v)
{
	int			n = v->val.array.nElems;
	const JsonbValue **ent = palloc(sizeof(JsonbValue *) * (n + 1));
	int			i;

	for (i = 0; i < n; i++)
		ent[i] = &v->val.array.elems[i];
	return ent;
}

/*
 * Bytes a JsonbValue takes in a container at position pos (from the start
 * of the container, or of anything 4-aligned before it), with the padding
 * that aligns numerics and containers to 4 bytes, as convertJsonbScalar
 * and convertJsonbValue lay them out.  An array value (jbvArray, of
 * scalars and jbvBinary containers) is a container made in place.
 */
static Size
entry_size(const JsonbValue *v, Size pos)
{
	switch (v->type)
	{
		case jbvString:
			return v->val.string.len;
		case jbvNumeric:
			return INTALIGN(pos) - pos + VARSIZE_ANY(v->val.numeric);
		case jbvBinary:
			return INTALIGN(pos) - pos + v->val.binary.len;
		case jbvArray:
			{
				const JsonbValue **ent = elem_pointers(v);
				int			n = v->val.array.nElems;
				Size		len = container_bytes(ent, n, NULL, 0, JB_FARRAY);

				pfree(ent);
				return INTALIGN(pos) - pos + len;
			}
		case jbvBool:
		case jbvNull:
			return 0;
		default:
			elog(ERROR, "unexpected jsonb value type %d", (int) v->type);
	}
	return 0;					/* keep the compiler quiet */
}

/*
 * Bytes of a container (from its header on) of the first keep entries of
 * pre and the n entries ent: its header, the JEntries, their bytes.
 * header: JB_FARRAY or JB_FOBJECT (for the error).
 */
static Size
container_bytes(const JsonbValue *const *ent, int n,
				const JsonbContainer *pre, int keep, uint32 header)
{
	Size		start = sizeof(uint32) + sizeof(JEntry) * (Size) (keep + n);
	Size		total = start + (keep > 0 ? getJsonbOffset(pre, keep) : 0);
	int			i;

	if (!(header & JB_FOBJECT) && (Size) keep + n > JB_CMASK)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("number of jsonb array elements exceeds the maximum allowed (%zu)",
						(size_t) JB_CMASK)));
	for (i = 0; i < n; i++)
	{
		total += entry_size(ent[i], total);
		if (total - start > JENTRY_OFFLENMASK)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("total size of jsonb %s elements exceeds the maximum of %d bytes",
							(header & JB_FOBJECT) ? "object" : "array",
							JENTRY_OFFLENMASK)));
	}
	return total;
}

/*
 * A jsonb value of one container: header, then the JEntries of its n
 * entries (an array's elements; an object's keys, then its values), then
 * their bytes -- every JB_OFFSET_STRIDE-th JEntry its end offset, the
 * others their length, each counting its padding.  This is the layout
 * convertToJsonb gives, byte for byte, made by copying the entries' bytes
 * (a container's own bytes are position-independent once aligned to 4)
 * instead of going through their values.
 */
static Jsonb *
container_of(uint32 header, const JsonbValue *const *ent, int n,
			 const JsonbContainer *pre, int keep)
{
	Size		total = VARHDRSZ + container_bytes(ent, n, pre, keep, header);
	Jsonb	   *res;

	/* every byte is written: the entries, and zeros as padding */
	res = palloc(total);
	SET_VARSIZE(res, total);
	container_write((char *) &res->root, header, ent, n, pre, keep);
	return res;
}

/*
 * Write the container of container_bytes at dst (4-aligned).
 */
static void
container_write(char *dst, uint32 header, const JsonbValue *const *ent,
				int n, const JsonbContainer *pre, int keep)
{
	JsonbContainer *root = (JsonbContainer *) dst;
	Size		start = sizeof(uint32) + sizeof(JEntry) * (Size) (keep + n);
	uint32		off = keep > 0 ? getJsonbOffset(pre, keep) : 0;
	Size		pos;
	int			i;

	root->header = header;
	if (keep > 0)
	{
		/*
		 * The first keep entries of pre, as they are: an entry's JEntry
		 * depends only on the entries before it, and its bytes move by a
		 * multiple of 4 (the JEntries of the other elements), so their
		 * padding stays right.
		 */
		memcpy(root->children, pre->children, sizeof(JEntry) * keep);
		memcpy(dst + start,
			   (const char *) &pre->children[JsonContainerSize(pre)], off);
	}
	pos = start + off;
	for (i = 0; i < n; i++)
	{
		const JsonbValue *v = ent[i];
		uint32		len = (uint32) entry_size(v, pos);
		uint32		pad = (v->type == jbvNumeric || v->type == jbvBinary ||
						   v->type == jbvArray) ?
			INTALIGN(pos) - pos : 0;
		uint32		type = 0;
		int			j = keep + i;

		memset(dst + pos, 0, pad);
		switch (v->type)
		{
			case jbvString:
				type = JENTRY_ISSTRING;
				memcpy(dst + pos, v->val.string.val, len);
				break;
			case jbvNumeric:
				type = JENTRY_ISNUMERIC;
				memcpy(dst + pos + pad, v->val.numeric, len - pad);
				break;
			case jbvBinary:
				type = JENTRY_ISCONTAINER;
				memcpy(dst + pos + pad, v->val.binary.data, len - pad);
				break;
			case jbvArray:
				{
					const JsonbValue **elems = elem_pointers(v);

					type = JENTRY_ISCONTAINER;
					container_write(dst + pos + pad,
									(uint32) v->val.array.nElems | JB_FARRAY,
									elems, v->val.array.nElems, NULL, 0);
					pfree(elems);
				}
				break;
			case jbvBool:
				type = v->val.boolean ? JENTRY_ISBOOL_TRUE : JENTRY_ISBOOL_FALSE;
				break;
			default:
				type = JENTRY_ISNULL;
				break;
		}
		off += len;
		root->children[j] = type |
			((j % JB_OFFSET_STRIDE) == 0 ? (off | JENTRY_HAS_OFF) : len);
		pos += len;
	}
	Assert(pos == container_bytes(ent, n, pre, keep, header));
}

/*
 * The jsonb array of elems (scalars, or objects and arrays as jbvBinary,
 * as JsonbIteratorNext gives them): what pushing them into a new array
 * would give, byte for byte (see container_of).
 */
Jsonb *
adk_jsonb_array_of(const JsonbValue *elems, int n)
{
	return adk_jsonb_array_extend(NULL, 0, elems, n);
}

/*
 * The jsonb array of the first keep elements of pre (an array) followed by
 * elems: what adk_jsonb_array_of would give for all of them, byte for byte,
 * the first keep copied as they are (prompt.c: a request extending the
 * previous one costs a copy of its bytes).  pre may be NULL when keep is 0.
 */
Jsonb *
adk_jsonb_array_extend(const Jsonb *pre, int keep, const JsonbValue *elems,
					   int n)
{
	const JsonbValue **ent = palloc(sizeof(JsonbValue *) * (n + 1));
	Jsonb	   *res;
	int			i;

	Assert(keep == 0 || (keep > 0 && keep <= (int) JB_ROOT_COUNT(pre) &&
						 JB_ROOT_IS_ARRAY(pre) && !JB_ROOT_IS_SCALAR(pre)));
	for (i = 0; i < n; i++)
		ent[i] = &elems[i];
	res = container_of((uint32) (keep + n) | JB_FARRAY, ent, n,
					   keep > 0 ? &pre->root : NULL, keep);
	pfree(ent);
	return res;
}

/* jsonb's order of keys: shorter first, then bytewise (jsonb_util.c) */
static int
key_cmp(const void *a, const void *b)
{
	const JsonbValue *ka = *(const JsonbValue *const *) a;
	const JsonbValue *kb = *(const JsonbValue *const *) b;

	if (ka->val.string.len != kb->val.string.len)
		return ka->val.string.len > kb->val.string.len ? 1 : -1;
	return memcmp(ka->val.string.val, kb->val.string.val, ka->val.string.len);
}

/*
 * The jsonb object of n pairs, keys[i] (jbvString, distinct) to vals[i]
 * (as for adk_jsonb_array_of, or jbvArray values of those: arrays made in
 * place, request_jsonb.c), byte for byte what pushing them would give:
 * the keys in jsonb's order, then the values in the same order.
 */
Jsonb *
adk_jsonb_object_of(const JsonbValue *keys, const JsonbValue *vals, int n)
{
	const JsonbValue **ent = palloc(sizeof(JsonbValue *) * (2 * n + 1));
	Jsonb	   *res;
	int			i;

	for (i = 0; i < n; i++)
	{
		Assert(keys[i].type == jbvString);
		ent[i] = &keys[i];
	}
	qsort(ent, n, sizeof(JsonbValue *), key_cmp);
	for (i = 1; i < n; i++)
		if (key_cmp(&ent[i - 1], &ent[i]) == 0)
			elog(ERROR, "duplicate key in jsonb object");
	for (i = 0; i < n; i++)
		ent[n + i] = &vals[ent[i] - keys];
	res = container_of((uint32) n | JB_FOBJECT, ent, 2 * n, NULL, 0);
	pfree(ent);
	return res;
}
