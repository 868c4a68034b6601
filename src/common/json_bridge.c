/*-------------------------------------------------------------------------
 *
 * json_bridge.c
 *	  Moving JSON between PostgreSQL's jsonb and json-c.
 *
 * Both directions are built directly, not through JSON text: jsonb ->
 * json-c runs for every prompt (its contents, tools and config) and
 * json-c -> jsonb for every model response.  A number jsonb -> json-c is
 * read from its text by the shared parse (adk_json_parse), so it is the
 * very json-c value the text would give.  Text from json-c can hold what
 * jsonb refuses -- "\u0000" escapes -- so it is cleaned first: a NUL
 * becomes U+FFFD.  Invalid UTF-8 has already been refused (the adapters
 * check a body's bytes before json-c parses it).
 *
 * IDENTIFICATION
 *	  src/common/json_bridge.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#define json_object pg_json_object_sqlfn
#include "utils/builtins.h"
#undef json_object
#include "utils/fmgrprotos.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/numeric.h"

#include <json-c/json.h>

#include "common/json_bridge.h"
#include "common/json_limits.h"

static JsonbValue *push_jsonc(JsonbParseState **st, struct json_object *obj);
static void push_jsonc_value(JsonbParseState **st, struct json_object *val,
							 JsonbIteratorToken as);
static void jsonc_scalar(struct json_object *obj, JsonbValue *v);
static char *without_nul(const char *s, size_t len, int *outlen);
static struct json_object *jsonb_scalar_to_jsonc(JsonbValue *v, bool *ok);
static bool add_jsonb_container(struct json_object *to, JsonbContainer *c,
								int depth);

/*
 * jsonb -> new json-c object (caller puts it).  "what" names the argument
 * in the error for JSON nested too deeply for json-c.
 */
struct json_object *
adk_jsonb_to_jsonc(Jsonb *jb, const char *what)
{
	char	   *text;
	struct json_object *obj;
	AdkJsonParseError err;

	/*
	 * An object or array is copied node by node; a scalar at the top, or a
	 * value nested nearly as deeply as the limit allows, goes through text
	 * (which also gives the errors).
	 */
	if (!JB_ROOT_IS_SCALAR(jb))
	{
		bool		done = false;

		obj = JB_ROOT_IS_OBJECT(jb) ? json_object_new_object() : json_object_new_array();
		if (obj == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory")));
		PG_TRY();
		{
			done = add_jsonb_container(obj, &jb->root, 1);
		}
		PG_CATCH();
		{
			json_object_put(obj);
			PG_RE_THROW();
		}
		PG_END_TRY();
		if (done)
			return obj;
		json_object_put(obj);
	}

	text = JsonbToCString(NULL, &jb->root, VARSIZE(jb));

	/* the shared parse: big integers keep their digits */
	obj = adk_json_parse(text, strlen(text), ADK_MAX_JSON_DEPTH, 0, &err, NULL);
	pfree(text);
	if (obj == NULL && err == ADK_JSON_TOO_DEEP)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s is nested too deeply", what),
				 errdetail("At most %d levels of nesting are accepted.",
						   ADK_MAX_JSON_DEPTH)));
	if (obj == NULL && err == ADK_JSON_NOMEM)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	if (obj == NULL)
		elog(ERROR, "could not read %s back from jsonb (error %d)", what, (int) err);
	return obj;
}

/*
 * jsonb container c (an object or array met at nesting level depth, the
 * top being 1) -> new json-c object, copied node by node; NULL when that
 * cannot be done (see add_jsonb_container: adk_jsonb_to_jsonc of the whole
 * value then gives the result or the error).
 */
struct json_object *
adk_jsonb_container_to_jsonc(JsonbContainer *c, int depth)
{
	struct json_object *obj;
	bool		done = false;

	obj = JsonContainerIsObject(c) ? json_object_new_object() : json_object_new_array();
	if (obj == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	PG_TRY();
	{
		done = add_jsonb_container(obj, c, depth);
	}
	PG_CATCH();
	{
		json_object_put(obj);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (done)
		return obj;
	json_object_put(obj);
	return NULL;
}

/*
 * Add the members of jsonb container c (an object or array at nesting
 * level depth, the top being 1) to the json-c object or array "to", which
 * owns every value added as soon as it is made (one json_object_put of the
 * top frees all on error).  false: nested too deeply, or a value the text
 * path must give (its error) -- the caller starts over through text.
 */
static bool
add_jsonb_container(struct json_object *to, JsonbContainer *c, int depth)
{
	JsonbIterator *it;
	JsonbIteratorToken tok;
	JsonbValue	v;
	char	   *key = NULL;
	bool		is_object = JsonContainerIsObject(c);

	/* adk_json_parse refuses more than ADK_MAX_JSON_DEPTH levels */
	if (depth >= ADK_MAX_JSON_DEPTH)
		return false;
	check_stack_depth();
	it = JsonbIteratorInit(c);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		struct json_object *val;
		bool		ok = true;

		if (tok == WJB_KEY)
		{
			key = pnstrdup(v.val.string.val, v.val.string.len);
			continue;
		}
		if (tok != WJB_VALUE && tok != WJB_ELEM)
			continue;			/* the container's own begin and end */
		if (v.type == jbvBinary)
			val = JsonContainerIsObject(v.val.binary.data) ?
				json_object_new_object() : json_object_new_array();
		else
			val = jsonb_scalar_to_jsonc(&v, &ok);
		if (!ok)
			return false;
		if (val == NULL && v.type != jbvNull)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory")));
		if (is_object)
		{
			if (json_object_object_add(to, key, val) != 0)
			{
				json_object_put(val);
				ereport(ERROR,
						(errcode(ERRCODE_OUT_OF_MEMORY),
						 errmsg("out of memory")));
			}
			pfree(key);
			key = NULL;
		}
		else if (json_object_array_add(to, val) != 0)
		{
			json_object_put(val);
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory")));
		}
		if (v.type == jbvBinary &&
			!add_jsonb_container(val, v.val.binary.data, depth + 1))
			return false;
	}
	return true;
}

/*
 * A jsonb scalar as a new json-c value (NULL for JSON null, as json-c has
 * it; NULL with *ok still true and a non-null type means no memory).  A
 * number is what adk_json_parse makes of its text; *ok = false when that
 * fails (the caller goes through text for the error).
 */
static struct json_object *
jsonb_scalar_to_jsonc(JsonbValue *v, bool *ok)
{
	*ok = true;
	switch (v->type)
	{
		case jbvNull:
			return NULL;
		case jbvBool:
			return json_object_new_boolean(v->val.boolean);
		case jbvString:
			return json_object_new_string_len(v->val.string.val, v->val.string.len);
		case jbvNumeric:
			{
				char	   *t = DatumGetCString(DirectFunctionCall1(numeric_out,
																	NumericGetDatum(v->val.numeric)));
				struct json_object *n;
				AdkJsonParseError err;

				n = adk_json_parse(t, strlen(t), 1, 0, &err, NULL);
				pfree(t);
				if (n == NULL)
					*ok = false;
				return n;
			}
		default:
			*ok = false;
			return NULL;
	}
}

/*
 * json-c object -> jsonb (palloc'd).  Does not consume obj.
 *
 * Built directly, not through text: this runs for every model response.
 * Numbers go through json-c's own text for them, so a number reads as the
 * text path would read it; a NUL in a string becomes U+FFFD, as
 * adk_sanitize_json_text makes of "\u0000".
 */
Jsonb *
adk_jsonc_to_jsonb(struct json_object *obj)
{
	JsonbParseState *st = NULL;
	JsonbValue	v;
	Jsonb	   *result;

	switch (json_object_get_type(obj))
	{
		case json_type_object:
		case json_type_array:
			result = JsonbValueToJsonb(push_jsonc(&st, obj));
			break;
		default:
			jsonc_scalar(obj, &v);
			result = JsonbValueToJsonb(&v);
			break;
	}
	return result;
}

/*
 * Push a json-c object or array, recursively.  Returns what pushJsonbValue
 * returned for its end.
 */
static JsonbValue *
push_jsonc(JsonbParseState **st, struct json_object *obj)
{
	JsonbValue	v;
	JsonbValue *res;

	check_stack_depth();
	if (json_object_is_type(obj, json_type_object))
	{
		struct json_object_iterator it = json_object_iter_begin(obj);
		struct json_object_iterator end = json_object_iter_end(obj);

		pushJsonbValue(st, WJB_BEGIN_OBJECT, NULL);
		while (!json_object_iter_equal(&it, &end))
		{
			const char *key = json_object_iter_peek_name(&it);

			v.type = jbvString;
			v.val.string.val = without_nul(key, strlen(key), &v.val.string.len);
			pushJsonbValue(st, WJB_KEY, &v);
			push_jsonc_value(st, json_object_iter_peek_value(&it), WJB_VALUE);
			json_object_iter_next(&it);
		}
		res = pushJsonbValue(st, WJB_END_OBJECT, NULL);
	}
	else
	{
		size_t		n = json_object_array_length(obj);
		size_t		i;

		pushJsonbValue(st, WJB_BEGIN_ARRAY, NULL);
		for (i = 0; i < n; i++)
			push_jsonc_value(st, json_object_array_get_idx(obj, i), WJB_ELEM);
		res = pushJsonbValue(st, WJB_END_ARRAY, NULL);
	}
	return res;
}

static void
push_jsonc_value(JsonbParseState **st, struct json_object *val,
				 JsonbIteratorToken as)
{
	JsonbValue	v;

	switch (json_object_get_type(val))
	{
		case json_type_object:
		case json_type_array:
			push_jsonc(st, val);
			break;
		default:
			jsonc_scalar(val, &v);
			pushJsonbValue(st, as, &v);
			break;
	}
}

/* a json-c scalar (NULL: JSON null) as a JsonbValue */
static void
jsonc_scalar(struct json_object *obj, JsonbValue *v)
{
	switch (json_object_get_type(obj))
	{
		case json_type_null:
			v->type = jbvNull;
			break;
		case json_type_boolean:
			v->type = jbvBool;
			v->val.boolean = json_object_get_boolean(obj) != 0;
			break;
		case json_type_double:
		case json_type_int:
			{
				const char *t = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN);

				/*
				 * Parsed JSON has been checked (adk_json_parse) and prints
				 * as written; a double made in C could still be NaN or
				 * Infinity, which is a defect, not the model's fault.
				 */
				if (!adk_json_number_ok(t))
					elog(ERROR, "number \"%.40s\" cannot be stored in jsonb", t);
				v->type = jbvNumeric;
				v->val.numeric = DatumGetNumeric(DirectFunctionCall3(numeric_in,
																	 CStringGetDatum(t),
																	 ObjectIdGetDatum(InvalidOid),
																	 Int32GetDatum(-1)));
			}
			break;
		case json_type_string:
			v->type = jbvString;
			v->val.string.val = without_nul(json_object_get_string(obj),
											json_object_get_string_len(obj),
											&v->val.string.len);
			break;
		default:
			elog(ERROR, "unexpected json-c type %d", (int) json_object_get_type(obj));
	}
}

/*
 * The string, or a palloc'd copy with each NUL byte replaced by U+FFFD
 * (jsonb cannot store NUL).
 */
static char *
without_nul(const char *s, size_t len, int *outlen)
{
	StringInfoData out;
	size_t		i;

	if (memchr(s, '\0', len) == NULL)
	{
		*outlen = (int) len;
		return (char *) s;
	}
	initStringInfo(&out);
	for (i = 0; i < len; i++)
	{
		if (s[i] == '\0')
			appendBinaryStringInfo(&out, "\xef\xbf\xbd", 3);
		else
			appendStringInfoChar(&out, s[i]);
	}
	*outlen = out.len;
	return out.data;
}

/*
 * JSON text -> jsonb, after adk_sanitize_json_text.
 */
Jsonb *
adk_cstring_to_jsonb(const char *json)
{
	char	   *clean = adk_sanitize_json_text(json);

	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(clean)));
}

/*
 * A palloc'd copy of JSON text with every "\u0000" escape replaced by
 * "\ufffd" (jsonb cannot store NUL).  A backslash that is itself escaped
 * ("\\u0000") is left alone.
 */
char *
adk_sanitize_json_text(const char *json)
{
	StringInfoData out;
	const char *p = json;

	if (strstr(json, "\\u0000") == NULL)
		return pstrdup(json);

	initStringInfo(&out);
	while (*p)
	{
		if (p[0] == '\\' && p[1] == '\\')
		{
			appendBinaryStringInfo(&out, p, 2);
			p += 2;
		}
		else if (strncmp(p, "\\u0000", 6) == 0)
		{
			appendStringInfoString(&out, "\\ufffd");
			p += 6;
		}
		else
			appendStringInfoChar(&out, *p++);
	}
	return out.data;
}
