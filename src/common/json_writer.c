/*-------------------------------------------------------------------------
 *
 * json_writer.c
 *	  Building jsonb in palloc'd memory, value by value.
 *
 * The runner assembles events, prompts and plugin contexts with this small
 * writer: everything lives in the current memory context, so an ERROR
 * anywhere frees it with the context.  Each call pushes its value straight
 * into the jsonb being built (pushJsonbValue), as jsonb_in would after
 * parsing the same JSON text: no text is written and read back, and an
 * existing jsonb is copied in as its values, not printed and re-parsed.
 * The result is the jsonb the text would give (keys sorted, the last of
 * equal keys kept).  A key is followed by its value; a value inside an
 * array is an element.  What is written is copied into the memory context
 * that was current at jw_init, whatever is current when each value is
 * written (a caller may write from inside SPI); jw_finish's result is made
 * in the context current when it is called.
 *
 * IDENTIFICATION
 *	  src/common/json_writer.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "common/json_writer.h"

static void before_value(JsonWriter *w);
static void put_scalar(JsonWriter *w, JsonbValue *v);
static void put_container(JsonWriter *w, JsonbContainer *c, Jsonb *whole);
static void copy_scalar(JsonbValue *v);

void
jw_init(JsonWriter *w)
{
	w->cxt = CurrentMemoryContext;
	w->state = NULL;
	w->done = NULL;
	w->top_jsonb = NULL;
	w->has_top = false;
	w->key_pending = false;
	w->depth = 0;
	w->in_object[0] = false;
}

/*
 * A value is about to be written: in an object it must follow its key, and
 * only one value may stand at the top.  (pushJsonbValue trusts its caller
 * with the order; a writer's mistake is an ERROR here, not a broken jsonb.)
 */
static void
before_value(JsonWriter *w)
{
	if (w->depth == 0)
	{
		if (w->has_top || w->done != NULL || w->top_jsonb != NULL)
			elog(ERROR, "JSON writer given a second top-level value");
	}
	else if (w->in_object[w->depth])
	{
		if (!w->key_pending)
			elog(ERROR, "JSON writer given an object value without its key");
		w->key_pending = false;
	}
}

static void
open_container(JsonWriter *w, bool object)
{
	before_value(w);
	if (w->depth + 1 >= JW_MAX_DEPTH)
		elog(ERROR, "JSON nested too deeply");
	(void) pushJsonbValue(&w->state, object ? WJB_BEGIN_OBJECT : WJB_BEGIN_ARRAY, NULL);
	w->in_object[++w->depth] = object;
}

static void
close_container(JsonWriter *w, bool object)
{
	JsonbValue *res;

	if (w->depth == 0 || w->in_object[w->depth] != object || w->key_pending)
		elog(ERROR, "JSON writer closed a container it did not open, or a key without its value");
	res = pushJsonbValue(&w->state, object ? WJB_END_OBJECT : WJB_END_ARRAY, NULL);

	if (--w->depth == 0)
		w->done = res;
}

void
jw_begin_object(JsonWriter *w)
{
	MemoryContext old = MemoryContextSwitchTo(w->cxt);

	open_container(w, true);
	MemoryContextSwitchTo(old);
}

void
jw_end_object(JsonWriter *w)
{
	MemoryContext old = MemoryContextSwitchTo(w->cxt);

	close_container(w, true);
	MemoryContextSwitchTo(old);
}

void
jw_begin_array(JsonWriter *w)
{
	MemoryContext old = MemoryContextSwitchTo(w->cxt);

	open_container(w, false);
	MemoryContextSwitchTo(old);
}

void
jw_end_array(JsonWriter *w)
{
	MemoryContext old = MemoryContextSwitchTo(w->cxt);

	close_container(w, false);
	MemoryContextSwitchTo(old);
}

/*
 * An object key; the value written next belongs to it.
 */
void
jw_key(JsonWriter *w, const char *key)
{
	JsonbValue	k;
	MemoryContext old = MemoryContextSwitchTo(w->cxt);

	if (w->depth == 0 || !w->in_object[w->depth] || w->key_pending)
		elog(ERROR, "JSON writer given a key outside an object, or two keys in a row");
	w->key_pending = true;
	k.type = jbvString;
	k.val.string.len = strlen(key);
	k.val.string.val = pnstrdup(key, k.val.string.len);
	(void) pushJsonbValue(&w->state, WJB_KEY, &k);
	MemoryContextSwitchTo(old);
}

/* a scalar: the top-level value, an element or the value of the last key */
static void
put_scalar(JsonWriter *w, JsonbValue *v)
{
	before_value(w);
	if (w->depth == 0)
	{
		w->top = *v;
		w->has_top = true;
		return;
	}
	(void) pushJsonbValue(&w->state, w->in_object[w->depth] ? WJB_VALUE : WJB_ELEM, v);
}

void
jw_string(JsonWriter *w, const char *value)
{
	JsonbValue	v;
	MemoryContext old = MemoryContextSwitchTo(w->cxt);

	if (value == NULL)
	{
		jw_null(w);
		MemoryContextSwitchTo(old);
		return;
	}
	v.type = jbvString;
	v.val.string.len = strlen(value);
	v.val.string.val = pnstrdup(value, v.val.string.len);
	put_scalar(w, &v);
	MemoryContextSwitchTo(old);
}

void
jw_int(JsonWriter *w, int64 value)
{
	JsonbValue	v;
	MemoryContext old = MemoryContextSwitchTo(w->cxt);

	v.type = jbvNumeric;
	v.val.numeric = int64_to_numeric(value);
	put_scalar(w, &v);
	MemoryContextSwitchTo(old);
}

void
jw_bool(JsonWriter *w, bool value)
{
	JsonbValue	v;
	MemoryContext old = MemoryContextSwitchTo(w->cxt);

	v.type = jbvBool;
	v.val.boolean = value;
	put_scalar(w, &v);
	MemoryContextSwitchTo(old);
}

void
jw_null(JsonWriter *w)
{
	JsonbValue	v;
	MemoryContext old = MemoryContextSwitchTo(w->cxt);

	v.type = jbvNull;
	put_scalar(w, &v);
	MemoryContextSwitchTo(old);
}

/*
 * A copy of a scalar's string or number: pushJsonbValue keeps pointers,
 * and what the caller wrote may be freed or reused before jw_finish.
 */
static void
copy_scalar(JsonbValue *v)
{
	if (v->type == jbvString)
		v->val.string.val = pnstrdup(v->val.string.val, v->val.string.len);
	else if (v->type == jbvNumeric)
	{
		Size		len = VARSIZE_ANY(v->val.numeric);
		Numeric		n = palloc(len);

		memcpy(n, v->val.numeric, len);
		v->val.numeric = n;
	}
}

/*
 * A stored container: its values are pushed, copied; a scalar one as its
 * scalar.  whole: the jsonb it is the root of -- then that is copied once
 * and its values are pushed from the copy -- or NULL (each value copied).
 */
static void
put_container(JsonWriter *w, JsonbContainer *c, Jsonb *whole)
{
	JsonbValue	v;
	JsonbIterator *it;
	JsonbIteratorToken tok;
	JsonbValue *res = NULL;

	if (JsonContainerIsScalar(c))
	{
		if (!JsonbExtractScalar(c, &v))
			elog(ERROR, "could not read a jsonb scalar");
		copy_scalar(&v);
		put_scalar(w, &v);
		return;
	}
	before_value(w);
	if (whole != NULL)
	{
		Jsonb	   *copy = palloc(VARSIZE(whole));

		memcpy(copy, whole, VARSIZE(whole));
		if (w->depth == 0)
		{
			w->top_jsonb = copy;
			return;
		}
		/* pushJsonbValue pushes its values, pointing into the copy */
		v.type = jbvBinary;
		v.val.binary.data = &copy->root;
		v.val.binary.len = VARSIZE(copy) - VARHDRSZ;
		(void) pushJsonbValue(&w->state, w->in_object[w->depth] ? WJB_VALUE : WJB_ELEM, &v);
		return;
	}
	if (w->depth + 1 >= JW_MAX_DEPTH)
		elog(ERROR, "JSON nested too deeply");
	it = JsonbIteratorInit(c);
	while ((tok = JsonbIteratorNext(&it, &v, false)) != WJB_DONE)
	{
		if (tok == WJB_KEY || tok == WJB_VALUE || tok == WJB_ELEM)
		{
			copy_scalar(&v);
			res = pushJsonbValue(&w->state, tok, &v);
		}
		else
			res = pushJsonbValue(&w->state, tok, NULL);
	}
	if (w->depth == 0)
		w->done = res;
}

void
jw_jsonb(JsonWriter *w, Jsonb *value)
{
	MemoryContext old = MemoryContextSwitchTo(w->cxt);

	if (value == NULL)
		jw_null(w);
	else
		put_container(w, &value->root, value);
	MemoryContextSwitchTo(old);
}

void
jw_container(JsonWriter *w, JsonbContainer *c)
{
	MemoryContext old = MemoryContextSwitchTo(w->cxt);

	put_container(w, c, NULL);
	MemoryContextSwitchTo(old);
}

/*
 * Any JsonbValue: a scalar or a jbvBinary container.
 */
void
jw_value(JsonWriter *w, JsonbValue *v)
{
	MemoryContext old = MemoryContextSwitchTo(w->cxt);

	if (v == NULL)
		jw_null(w);
	else if (v->type == jbvBinary)
		jw_container(w, v->val.binary.data);
	else
	{
		JsonbValue	copy = *v;

		copy_scalar(&copy);
		put_scalar(w, &copy);
	}
	MemoryContextSwitchTo(old);
}

/*
 * The jsonb written.  Every container must have been closed.
 */
Jsonb *
jw_finish(JsonWriter *w)
{
	if (w->depth != 0)
		elog(ERROR, "JSON writer finished with %d containers open", w->depth);
	if (w->done != NULL)
		return JsonbValueToJsonb(w->done);
	if (w->top_jsonb != NULL)
	{
		Jsonb	   *copy = palloc(VARSIZE(w->top_jsonb));

		memcpy(copy, w->top_jsonb, VARSIZE(w->top_jsonb));
		return copy;
	}
	if (w->has_top)
		return JsonbValueToJsonb(&w->top);
	elog(ERROR, "JSON writer finished with nothing written");
	return NULL;				/* keep compiler quiet */
}

/*
 * The same as JSON text (jsonb's output), palloc'd.
 */
char *
jw_finish_text(JsonWriter *w)
{
	Jsonb	   *jb = jw_finish(w);

	return JsonbToCString(NULL, &jb->root, VARSIZE(jb));
}
