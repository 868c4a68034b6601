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
 *	  finish_task's arguments are checked as ADK-Go's ValidateMapOnSchema
 *	  checks a task's output (docs/agent-modes.md "Where we differ from
 *	  ADK-Go"): each argument in turn -- one the schema does not name is
 *	  refused, a typed one must have a value of its type (objects and
 *	  arrays entered) -- then the required ones, and ADK-Go's words for the
 *	  first problem, values printed as Go prints them.
 *
 * IDENTIFICATION
 *	  src/runner/schema_check.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/shortest_dec.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/float.h"
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
static char *output_map_problem(JsonbContainer *schema, JsonbContainer *obj,
								int depth);
static int	output_type_match(JsonbContainer *schema, JsonbValue *v,
							  char **problem, int depth);
static void go_quote(StringInfo buf, const char *s, int len);
static void go_value(StringInfo buf, JsonbValue *v);
static const char *go_type(JsonbValue *v);
static double numeric_double(Numeric n);
static int	cmp_keys(const ListCell *a, const ListCell *b);

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

/*
 * NULL when a task's finish_task arguments (an object) fit its output
 * schema as ADK-Go's ValidateMapOnSchema sees it; else ADK-Go's sentence
 * for the first problem.  The arguments go in the order jsonb keeps them
 * (ADK-Go's map order is random).  A property whose schema names no
 * single type, or an array without items, is not checked (ADK-Go refuses
 * any value there: "unsupported type").
 */
char *
adk_output_args_check(Jsonb *schema, Jsonb *args)
{
	if (!adk_jsonb_is_object(&args->root))
		return pstrdup("the arguments are not an object");
	return output_map_problem(&schema->root, &args->root, 0);
}

static char *
output_map_problem(JsonbContainer *schema, JsonbContainer *obj, int depth)
{
	JsonbValue *required = adk_jsonb_get(schema, "required");
	JsonbValue *props = adk_jsonb_get(schema, "properties");
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	if (props != NULL && (props->type != jbvBinary ||
						  !adk_jsonb_is_object(props->val.binary.data)))
		props = NULL;
	it = JsonbIteratorInit(obj);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		StringInfoData key;
		JsonbValue	val;
		JsonbValue *prop;
		char	   *problem = NULL;
		int			match;

		if (tok != WJB_KEY)
			continue;
		initStringInfo(&key);
		go_quote(&key, v.val.string.val, v.val.string.len);
		prop = props ? adk_jsonb_get(props->val.binary.data,
									 pnstrdup(v.val.string.val, v.val.string.len)) : NULL;
		(void) JsonbIteratorNext(&it, &val, true);
		if (prop == NULL)
			return psprintf("output arg: '%s' does not exist in schema properties",
							key.data);
		if (prop->type != jbvBinary || !adk_jsonb_is_object(prop->val.binary.data))
			continue;
		match = output_type_match(prop->val.binary.data, &val, &problem, depth);
		if (problem != NULL)
			return psprintf("output arg: '%s' validation failed: %s",
							key.data, problem);
		if (match == 0)
		{
			StringInfoData got;

			initStringInfo(&got);
			go_value(&got, &val);
			return psprintf("output arg: '%s' type mismatch, expected schema type %s, got value %s of type %s",
							key.data, adk_jstr(prop->val.binary.data, "type"),
							got.data, go_type(&val));
		}
	}
	if (required != NULL && required->type == jbvBinary)
	{
		it = JsonbIteratorInit(required->val.binary.data);
		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		{
			StringInfoData key;

			if (tok != WJB_ELEM || v.type != jbvString ||
				adk_jsonb_get(obj, pnstrdup(v.val.string.val, v.val.string.len)) != NULL)
				continue;
			initStringInfo(&key);
			go_quote(&key, v.val.string.val, v.val.string.len);
			return psprintf("\"output\" args does not contain required key: '%s'",
							key.data);
		}
	}
	return NULL;
}

/*
 * ADK-Go's matchType: 1 when v has schema's type, 0 when not, -1 when
 * the schema names no single type (not checked); *problem set when a
 * nested object or array item has one.
 */
static int
output_type_match(JsonbContainer *schema, JsonbValue *v, char **problem,
				  int depth)
{
	char	   *type = adk_jstr(schema, "type");
	JsonbValue *items;
	JsonbIterator *it;
	JsonbValue	e;
	JsonbIteratorToken tok;
	int			i = 0;

	if (type == NULL || depth > OUTPUT_SCHEMA_DEPTH)
		return -1;
	if (v->type == jbvNull)
		return 0;
	if (pg_strcasecmp(type, "string") == 0)
		return v->type == jbvString;
	if (pg_strcasecmp(type, "boolean") == 0)
		return v->type == jbvBool;
	if (pg_strcasecmp(type, "number") == 0)
		return v->type == jbvNumeric;
	if (pg_strcasecmp(type, "integer") == 0)
	{
		double		d;

		if (v->type != jbvNumeric)
			return 0;
		d = numeric_double(v->val.numeric);
		return d == trunc(d);
	}
	if (pg_strcasecmp(type, "object") == 0)
	{
		if (v->type != jbvBinary || !adk_jsonb_is_object(v->val.binary.data))
			return 0;
		*problem = output_map_problem(schema, v->val.binary.data, depth + 1);
		return *problem == NULL;
	}
	if (pg_strcasecmp(type, "array") != 0)
		return -1;
	if (v->type != jbvBinary || adk_jsonb_is_object(v->val.binary.data))
		return 0;
	items = adk_jsonb_get(schema, "items");
	if (items == NULL || items->type != jbvBinary ||
		!adk_jsonb_is_object(items->val.binary.data))
		return -1;
	it = JsonbIteratorInit(v->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &e, true)) != WJB_DONE)
	{
		int			match;

		if (tok != WJB_ELEM)
			continue;
		match = output_type_match(items->val.binary.data, &e, problem, depth + 1);
		if (*problem != NULL)
		{
			*problem = psprintf("array item %d: %s", i, *problem);
			return 0;
		}
		if (match == 0)
			return 0;
		i++;
	}
	return 1;
}

/* Go's %q of a string: its escapes for quotes, backslashes and controls */
static void
go_quote(StringInfo buf, const char *s, int len)
{
	int			i;

	appendStringInfoChar(buf, '"');
	for (i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) s[i];

		if (c == '"' || c == '\\')
			appendStringInfo(buf, "\\%c", c);
		else if (c == '\n')
			appendStringInfoString(buf, "\\n");
		else if (c == '\t')
			appendStringInfoString(buf, "\\t");
		else if (c == '\r')
			appendStringInfoString(buf, "\\r");
		else if (c < 0x20 || c == 0x7f)
			appendStringInfo(buf, "\\x%02x", c);
		else
			appendStringInfoChar(buf, (char) c);
	}
	appendStringInfoChar(buf, '"');
}

/*
 * Go's %v of a value decoded from JSON: a float64 as 'g' with the fewest
 * digits (an exponent below -4 or from 6 up written 1.5e+06), strings
 * bare, [a b] for an array, map[k:v] with the keys sorted for an object.
 */
static void
go_value(StringInfo buf, JsonbValue *v)
{
	JsonbIterator *it;
	JsonbValue	e;
	JsonbIteratorToken tok;
	bool		first = true;

	switch (v->type)
	{
		case jbvNull:
			appendStringInfoString(buf, "<nil>");
			return;
		case jbvString:
			appendBinaryStringInfo(buf, v->val.string.val, v->val.string.len);
			return;
		case jbvBool:
			appendStringInfoString(buf, v->val.boolean ? "true" : "false");
			return;
		case jbvNumeric:
			{
				char		shortest[DOUBLE_SHORTEST_DECIMAL_LEN];
				char		digits[DOUBLE_SHORTEST_DECIMAL_LEN];
				double		d = numeric_double(v->val.numeric);
				char	   *p;
				int			nd = 0;
				int			dp = 0;
				bool		seen_point = false;
				int			exp;
				int			i;

				if (isinf(d))
				{
					appendStringInfoString(buf, d > 0 ? "+Inf" : "-Inf");
					return;
				}
				(void) double_to_shortest_decimal_buf(d, shortest);
				p = shortest;
				if (*p == '-')
				{
					appendStringInfoChar(buf, '-');
					p++;
				}
				/* the digits without leading zeros, and where the point is */
				for (; *p && *p != 'e'; p++)
				{
					if (*p == '.')
						seen_point = true;
					else if (nd == 0 && *p == '0')
						dp -= seen_point ? 1 : 0;
					else
					{
						digits[nd++] = *p;
						if (!seen_point)
							dp++;
					}
				}
				if (*p == 'e')
					dp += atoi(p + 1);
				while (nd > 0 && digits[nd - 1] == '0')
					nd--;
				if (nd == 0)
				{
					appendStringInfoChar(buf, '0');
					return;
				}
				exp = dp - 1;
				if (exp < -4 || exp >= 6)
				{
					appendStringInfoChar(buf, digits[0]);
					if (nd > 1)
					{
						appendStringInfoChar(buf, '.');
						appendBinaryStringInfo(buf, digits + 1, nd - 1);
					}
					appendStringInfo(buf, "e%c%02d", exp < 0 ? '-' : '+', abs(exp));
				}
				else if (dp <= 0)
				{
					appendStringInfoString(buf, "0.");
					for (i = dp; i < 0; i++)
						appendStringInfoChar(buf, '0');
					appendBinaryStringInfo(buf, digits, nd);
				}
				else
				{
					for (i = 0; i < Max(nd, dp); i++)
					{
						if (i == dp)
							appendStringInfoChar(buf, '.');
						appendStringInfoChar(buf, i < nd ? digits[i] : '0');
					}
				}
				return;
			}
		case jbvBinary:
			break;
		default:
			appendStringInfoString(buf, "?");
			return;
	}
	if (!adk_jsonb_is_object(v->val.binary.data))
	{
		appendStringInfoChar(buf, '[');
		it = JsonbIteratorInit(v->val.binary.data);
		while ((tok = JsonbIteratorNext(&it, &e, true)) != WJB_DONE)
		{
			if (tok != WJB_ELEM)
				continue;
			if (!first)
				appendStringInfoChar(buf, ' ');
			first = false;
			go_value(buf, &e);
		}
		appendStringInfoChar(buf, ']');
		return;
	}
	else
	{
		List	   *keys = NIL;
		ListCell   *lc;

		it = JsonbIteratorInit(v->val.binary.data);
		while ((tok = JsonbIteratorNext(&it, &e, true)) != WJB_DONE)
			if (tok == WJB_KEY)
				keys = lappend(keys, pnstrdup(e.val.string.val, e.val.string.len));
		list_sort(keys, cmp_keys);
		appendStringInfoString(buf, "map[");
		foreach(lc, keys)
		{
			char	   *k = (char *) lfirst(lc);

			if (!first)
				appendStringInfoChar(buf, ' ');
			first = false;
			appendStringInfo(buf, "%s:", k);
			go_value(buf, adk_jsonb_get(v->val.binary.data, k));
		}
		appendStringInfoChar(buf, ']');
	}
}

/* Go's %T of a value decoded from JSON */
static const char *
go_type(JsonbValue *v)
{
	switch (v->type)
	{
		case jbvNull:
			return "<nil>";
		case jbvString:
			return "string";
		case jbvNumeric:
			return "float64";
		case jbvBool:
			return "bool";
		case jbvBinary:
			return adk_jsonb_is_object(v->val.binary.data) ?
				"map[string]interface {}" : "[]interface {}";
		default:
			return "?";
	}
}

/* a JSON number as Go's encoding/json reads it: a float64 */
static double
numeric_double(Numeric n)
{
	return DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow,
											  NumericGetDatum(n)));
}

/* Go's order of a map's keys when printed: by their bytes */
static int
cmp_keys(const ListCell *a, const ListCell *b)
{
	return strcmp((char *) lfirst(a), (char *) lfirst(b));
}
