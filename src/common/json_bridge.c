/*-------------------------------------------------------------------------
 *
 * json_bridge.c
 *	  Moving JSON between PostgreSQL's jsonb and json-c.
 *
 * Both directions go through JSON text.  Text from json-c can hold what
 * jsonb refuses -- "\u0000" escapes -- so it is cleaned first: a NUL
 * becomes U+FFFD.  json-c has already refused invalid UTF-8 (the adapters
 * parse with JSON_TOKENER_VALIDATE_UTF8).
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

#include <json-c/json.h>

#include "common/json_bridge.h"

#define ADK_JSONC_MAX_DEPTH 64

/*
 * jsonb -> new json-c object (caller puts it).  "what" names the argument
 * in the error for JSON nested too deeply for json-c.
 */
struct json_object *
adk_jsonb_to_jsonc(Jsonb *jb, const char *what)
{
	char	   *text = JsonbToCString(NULL, &jb->root, VARSIZE(jb));
	struct json_tokener *tok = json_tokener_new_ex(ADK_JSONC_MAX_DEPTH);
	struct json_object *obj;
	enum json_tokener_error err;

	if (tok == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	obj = json_tokener_parse_ex(tok, text, strlen(text));
	err = json_tokener_get_error(tok);
	json_tokener_free(tok);
	pfree(text);
	if (obj == NULL || err != json_tokener_success)
	{
		if (obj)
			json_object_put(obj);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s is nested too deeply", what),
				 errdetail("At most %d levels of nesting are accepted.",
						   ADK_JSONC_MAX_DEPTH)));
	}
	return obj;
}

/*
 * json-c object -> jsonb (palloc'd).  Does not consume obj.
 */
Jsonb *
adk_jsonc_to_jsonb(struct json_object *obj)
{
	const char *text = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN |
													  JSON_C_TO_STRING_NOSLASHESCAPE);

	return adk_cstring_to_jsonb(text);
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
