/*-------------------------------------------------------------------------
 *
 * schema_check.c
 *	  Arguments checked against a JSON Schema object, as ADK's
 *	  ValidateMapOnSchema does for a task or single_turn agent's tool
 *	  (docs/agent-modes.md): the required properties are there, and each
 *	  property the schema types has a value of that type.  The first
 *	  problem found is said in a sentence; nested schemas are not entered.
 *
 * IDENTIFICATION
 *	  src/runner/schema_check.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/numeric.h"

#include "common/json_bridge.h"
#include "common/jsonb_util.h"
#include "runner/runner.h"

static const char *value_type(JsonbValue *v);
static bool type_matches(const char *want, JsonbValue *v);

/*
 * A delegation's arguments against the delegated agent's input_schema, or
 * ADK-Go's default {request: string}: NULL when they fit; else the error
 * the tool answers with (ADK-Go: the model sees it), made in keep.  The
 * check itself allocates in the current context.
 */
Jsonb *
adk_delegation_error(AdkAgent *agent, Jsonb *args, MemoryContext keep)
{
	char	   *problem;
	Jsonb	   *error;
	MemoryContext old;

	problem = adk_schema_check(agent->input_schema ? agent->input_schema :
							   adk_cstring_to_jsonb("{\"required\": [\"request\"], "
													"\"properties\": {\"request\": {\"type\": \"string\"}}}"),
							   args);
	if (problem == NULL)
		return NULL;
	old = MemoryContextSwitchTo(keep);
	error = adk_error_object(psprintf("argument validation failed for agent %s: %s",
									  agent->name, problem));
	MemoryContextSwitchTo(old);
	return error;
}

/*
 * NULL when args (an object) satisfies schema; else what is wrong.
 */
char *
adk_schema_check(Jsonb *schema, Jsonb *args)
{
	JsonbValue *required = adk_jsonb_get(&schema->root, "required");
	JsonbValue *props = adk_jsonb_get(&schema->root, "properties");
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	if (!adk_jsonb_is_object(&args->root))
		return pstrdup("the arguments are not an object");
	if (required != NULL && required->type == jbvBinary)
	{
		it = JsonbIteratorInit(required->val.binary.data);
		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		{
			char	   *key;

			if (tok != WJB_ELEM || v.type != jbvString)
				continue;
			key = pnstrdup(v.val.string.val, v.val.string.len);
			if (adk_jsonb_get(&args->root, key) == NULL)
				return psprintf("missing required property \"%s\"", key);
		}
	}
	if (props == NULL || props->type != jbvBinary)
		return NULL;
	it = JsonbIteratorInit(&args->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		char	   *key;
		JsonbValue	val;
		JsonbValue *prop;
		char	   *want;

		if (tok != WJB_KEY)
			continue;
		key = pnstrdup(v.val.string.val, v.val.string.len);
		(void) JsonbIteratorNext(&it, &val, true);
		prop = adk_jsonb_get(props->val.binary.data, key);
		if (prop == NULL || prop->type != jbvBinary)
			continue;
		want = adk_jstr(prop->val.binary.data, "type");
		if (want != NULL && !type_matches(want, &val))
			return psprintf("property \"%s\" must be of type %s, not %s",
							key, want, value_type(&val));
	}
	return NULL;
}

static const char *
value_type(JsonbValue *v)
{
	switch (v->type)
	{
		case jbvNull:
			return "null";
		case jbvString:
			return "string";
		case jbvNumeric:
			return "number";
		case jbvBool:
			return "boolean";
		case jbvBinary:
			return adk_jsonb_is_object(v->val.binary.data) ? "object" : "array";
		default:
			return "unknown";
	}
}

/* ADK's Schema types are upper case (OBJECT), JSON Schema's lower case */
static bool
type_matches(const char *want, JsonbValue *v)
{
	const char *got = value_type(v);

	if (pg_strcasecmp(want, "integer") == 0)
	{
		char	   *text;

		if (v->type != jbvNumeric)
			return false;
		text = DatumGetCString(DirectFunctionCall1(numeric_out,
												   NumericGetDatum(v->val.numeric)));
		return strpbrk(text, ".eE") == NULL;
	}
	return pg_strcasecmp(want, got) == 0;
}
