/*-------------------------------------------------------------------------
 *
 * json_writer.c
 *	  Building JSON text in palloc'd memory, then jsonb.
 *
 * The runner assembles events, prompts and plugin contexts with this small
 * writer: everything lives in the current memory context, so an ERROR
 * anywhere frees it with the context.  Commas are placed automatically;
 * strings are escaped with escape_json(); existing jsonb is copied in as
 * text.
 *
 * IDENTIFICATION
 *	  src/common/json_writer.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/json.h"

#include "common/json_writer.h"

static void separate(JsonWriter *w);

void
jw_init(JsonWriter *w)
{
	initStringInfo(&w->buf);
	w->depth = 0;
	w->first[0] = true;
}

/* a comma before every element but the first of its container */
static void
separate(JsonWriter *w)
{
	if (w->depth > 0 && !w->first[w->depth])
		appendStringInfoChar(&w->buf, ',');
	w->first[w->depth] = false;
}

static void
open_container(JsonWriter *w, char c)
{
	separate(w);
	appendStringInfoChar(&w->buf, c);
	if (++w->depth >= JW_MAX_DEPTH)
		elog(ERROR, "JSON nested too deeply");
	w->first[w->depth] = true;
}

void
jw_begin_object(JsonWriter *w)
{
	open_container(w, '{');
}

void
jw_end_object(JsonWriter *w)
{
	w->depth--;
	appendStringInfoChar(&w->buf, '}');
}

void
jw_begin_array(JsonWriter *w)
{
	open_container(w, '[');
}

void
jw_end_array(JsonWriter *w)
{
	w->depth--;
	appendStringInfoChar(&w->buf, ']');
}

/*
 * An object key; the value written next belongs to it (no comma between).
 */
void
jw_key(JsonWriter *w, const char *key)
{
	separate(w);
	escape_json(&w->buf, key);
	appendStringInfoChar(&w->buf, ':');
	w->first[w->depth] = true;	/* the value follows without a comma */
}

void
jw_string(JsonWriter *w, const char *value)
{
	separate(w);
	if (value == NULL)
		appendStringInfoString(&w->buf, "null");
	else
		escape_json(&w->buf, value);
	w->first[w->depth] = false;
}

void
jw_int(JsonWriter *w, int64 value)
{
	separate(w);
	appendStringInfo(&w->buf, INT64_FORMAT, value);
	w->first[w->depth] = false;
}

void
jw_bool(JsonWriter *w, bool value)
{
	separate(w);
	appendStringInfoString(&w->buf, value ? "true" : "false");
	w->first[w->depth] = false;
}

void
jw_null(JsonWriter *w)
{
	separate(w);
	appendStringInfoString(&w->buf, "null");
	w->first[w->depth] = false;
}

void
jw_jsonb(JsonWriter *w, Jsonb *value)
{
	if (value == NULL)
	{
		jw_null(w);
		return;
	}
	separate(w);
	(void) JsonbToCString(&w->buf, &value->root, VARSIZE(value));
	w->first[w->depth] = false;
}

void
jw_container(JsonWriter *w, JsonbContainer *c)
{
	separate(w);
	(void) JsonbToCString(&w->buf, c, -1);
	w->first[w->depth] = false;
}

/*
 * Any JsonbValue: a scalar or a jbvBinary container.
 */
void
jw_value(JsonWriter *w, JsonbValue *v)
{
	if (v == NULL)
		jw_null(w);
	else if (v->type == jbvBinary)
		jw_container(w, v->val.binary.data);
	else
		jw_jsonb(w, JsonbValueToJsonb(v));
}

Jsonb *
jw_finish(JsonWriter *w)
{
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
											  CStringGetDatum(w->buf.data)));
}
