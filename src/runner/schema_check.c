/*-------------------------------------------------------------------------
 *
 * schema_check.c
 *	  Arguments checked against a JSON Schema object, as ADK's
 *	  ValidateMapOnSchema does for a task or single_turn agent's tool
 *	  (docs/agent-modes.md): the required properties are there, and each
 *	  property the schema types has a value of that type.  The first
 *	  problem found is said in a sentence; nested schemas are not entered.
 *	  An agent's structured output (docs/models.md) is checked whole, in
 *	  nested schemas too: type, enum, properties, required,
 *	  additionalProperties false and items.
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

/* How deep an output schema is followed; deeper values are not checked */
#define OUTPUT_SCHEMA_DEPTH 32

static const char *value_type(JsonbValue *v);
static bool type_matches(const char *want, JsonbValue *v);
static char *value_problem(JsonbContainer *schema, JsonbValue *v,
						   const char *path, int depth);
static char *type_problem(JsonbContainer *schema, JsonbValue *v,
						  const char *path);
static char *enum_problem(JsonbContainer *schema, JsonbValue *v,
						  const char *path);
static char *object_problem(JsonbContainer *schema, JsonbContainer *obj,
							const char *path, int depth);
static char *items_problem(JsonbContainer *schema, JsonbContainer *arr,
						   const char *path, int depth);

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

/*
 * NULL when value (any jsonb) satisfies schema, nested schemas included;
 * else what is wrong, naming where ("$.items[2].name").
 */
char *
adk_schema_problem(Jsonb *schema, Jsonb *value)
{
	JsonbValue	v;

	if (JB_ROOT_IS_SCALAR(value))
		(void) JsonbExtractScalar(&value->root, &v);
	else
	{
		v.type = jbvBinary;
		v.val.binary.data = &value->root;
		v.val.binary.len = VARSIZE(value) - VARHDRSZ;
	}
	return value_problem(&schema->root, &v, "$", 0);
}

static char *
value_problem(JsonbContainer *schema, JsonbValue *v, const char *path,
			  int depth)
{
	char	   *problem;

	if (depth > OUTPUT_SCHEMA_DEPTH || !adk_jsonb_is_object(schema))
		return NULL;
	if ((problem = type_problem(schema, v, path)) != NULL ||
		(problem = enum_problem(schema, v, path)) != NULL)
		return problem;
	if (v->type == jbvBinary && adk_jsonb_is_object(v->val.binary.data))
		return object_problem(schema, v->val.binary.data, path, depth);
	if (v->type == jbvBinary)
		return items_problem(schema, v->val.binary.data, path, depth);
	return NULL;
}

/* "type": one name, or an array of them (["string", "null"]) */
static char *
type_problem(JsonbContainer *schema, JsonbValue *v, const char *path)
{
	JsonbValue *type = adk_jsonb_get(schema, "type");
	JsonbIterator *it;
	JsonbValue	t;
	JsonbIteratorToken tok;

	if (type == NULL)
		return NULL;
	if (type->type == jbvString)
	{
		char	   *want = pnstrdup(type->val.string.val, type->val.string.len);

		if (type_matches(want, v))
			return NULL;
		return psprintf("%s must be of type %s, not %s", path, want, value_type(v));
	}
	if (type->type != jbvBinary)
		return NULL;
	it = JsonbIteratorInit(type->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &t, true)) != WJB_DONE)
	{
		if (tok == WJB_ELEM && t.type == jbvString &&
			type_matches(pnstrdup(t.val.string.val, t.val.string.len), v))
			return NULL;
	}
	return psprintf("%s is of type %s, which its schema does not allow",
					path, value_type(v));
}

static char *
enum_problem(JsonbContainer *schema, JsonbValue *v, const char *path)
{
	JsonbValue *values = adk_jsonb_get(schema, "enum");

	if (values == NULL || values->type != jbvBinary ||
		!JsonContainerIsArray(values->val.binary.data) || v->type == jbvBinary)
		return NULL;
	if (findJsonbValueFromContainer(values->val.binary.data, JB_FARRAY, v) != NULL)
		return NULL;
	return psprintf("%s is not one of the values its schema's enum lists", path);
}

static char *
object_problem(JsonbContainer *schema, JsonbContainer *obj, const char *path,
			   int depth)
{
	JsonbValue *required = adk_jsonb_get(schema, "required");
	JsonbValue *props = adk_jsonb_get(schema, "properties");
	JsonbValue *additional = adk_jsonb_get(schema, "additionalProperties");
	bool		closed = additional != NULL && additional->type == jbvBool &&
		!additional->val.boolean;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	if (required != NULL && required->type == jbvBinary)
	{
		it = JsonbIteratorInit(required->val.binary.data);
		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		{
			char	   *key;

			if (tok != WJB_ELEM || v.type != jbvString)
				continue;
			key = pnstrdup(v.val.string.val, v.val.string.len);
			if (adk_jsonb_get(obj, key) == NULL)
				return psprintf("%s misses required property \"%s\"", path, key);
		}
	}
	if (props != NULL && props->type != jbvBinary)
		props = NULL;
	it = JsonbIteratorInit(obj);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		char	   *key;
		JsonbValue	val;
		JsonbValue *prop;
		char	   *problem;

		if (tok != WJB_KEY)
			continue;
		key = pnstrdup(v.val.string.val, v.val.string.len);
		(void) JsonbIteratorNext(&it, &val, true);
		prop = props ? adk_jsonb_get(props->val.binary.data, key) : NULL;
		if (prop == NULL && closed)
			return psprintf("%s has property \"%s\", which its schema does not define",
							path, key);
		if (prop == NULL || prop->type != jbvBinary)
			continue;
		problem = value_problem(prop->val.binary.data, &val,
								psprintf("%s.%s", path, key), depth + 1);
		if (problem != NULL)
			return problem;
	}
	return NULL;
}

static char *
items_problem(JsonbContainer *schema, JsonbContainer *arr, const char *path,
			  int depth)
{
	JsonbValue *items = adk_jsonb_get(schema, "items");
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	int			i = 0;

	if (items == NULL || items->type != jbvBinary)
		return NULL;
	it = JsonbIteratorInit(arr);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		char	   *problem;

		if (tok != WJB_ELEM)
			continue;
		problem = value_problem(items->val.binary.data, &v,
								psprintf("%s[%d]", path, i++), depth + 1);
		if (problem != NULL)
			return problem;
	}
	return NULL;
}
