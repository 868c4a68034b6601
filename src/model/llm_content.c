/*-------------------------------------------------------------------------
 *
 * llm_content.c
 *	  Decoding of ADK contents, parts, tools and generation config for
 *	  the provider adapters.
 *
 * Malloc/json-c based and free of PostgreSQL.
 *
 * IDENTIFICATION
 *	  src/model/llm_content.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <string.h>

#include <json-c/json.h>

#define ADK_LLM_INTERNAL
#include "llm.h"

static int	llm_opt_str(struct json_object *obj, const char *key,
						const char **out);
static int	llm_call_decode(struct json_object *part, const char *what,
							const char *argkey, size_t ci, size_t pi,
							LlmPart *out, char **errmsg);
static int	llm_part_kind(struct json_object *part, size_t ci, size_t pi,
						  char **errmsg);
static int	llm_data_decode(struct json_object *part, int kind, size_t ci,
							size_t pi, LlmPart *out, char **errmsg);
static int	llm_config_one(struct json_object *dst, struct json_object *val,
						   const LlmConfigMap *m, char **errmsg);

/* ----------------------------------------------------------------
 *		Decoding ADK contents, tools and config
 * ----------------------------------------------------------------
 */

/*
 * Check contents[index] and return its role and parts array (borrowed).
 */
int
llm_content_decode(struct json_object *content, size_t index, int *is_model,
				   struct json_object **parts, char **errmsg)
{
	const char *role;

	if (content == NULL || !json_object_is_type(content, json_type_object))
	{
		llm_set_errmsg(errmsg, "contents[%zu] is not an object", index);
		return -1;
	}
	role = llm_get_str(content, "role");
	if (role == NULL || (strcmp(role, "user") != 0 && strcmp(role, "model") != 0))
	{
		llm_set_errmsg(errmsg, "contents[%zu].role must be \"user\" or \"model\"",
					   index);
		return -1;
	}
	*is_model = (role[0] == 'm');
	*parts = llm_get_arr(content, "parts");
	if (*parts == NULL)
	{
		llm_set_errmsg(errmsg, "contents[%zu].parts must be an array", index);
		return -1;
	}
	return 0;
}

/*
 * Optional string member: absent, null and "" all mean NULL.
 * -1 when present with another type.
 */
static int
llm_opt_str(struct json_object *obj, const char *key, const char **out)
{
	struct json_object *val = llm_get(obj, key);

	*out = NULL;
	if (val == NULL)
		return 0;
	if (!json_object_is_type(val, json_type_string))
		return -1;
	if (json_object_get_string_len(val) > 0)
		*out = json_object_get_string(val);
	return 0;
}

/*
 * Decode function_call / function_response member "what" of a part.
 */
static int
llm_call_decode(struct json_object *part, const char *what, const char *argkey,
				size_t ci, size_t pi, LlmPart *out, char **errmsg)
{
	struct json_object *fc = llm_get(part, what);
	struct json_object *args;

	if (fc == NULL || !json_object_is_type(fc, json_type_object))
	{
		llm_set_errmsg(errmsg, "contents[%zu].parts[%zu].%s is not an object",
					   ci, pi, what);
		return -1;
	}
	if (llm_opt_str(fc, "name", &out->name) < 0 || out->name == NULL ||
		llm_opt_str(fc, "id", &out->id) < 0)
	{
		llm_set_errmsg(errmsg, "contents[%zu].parts[%zu].%s needs a string \"name\" and an optional string \"id\"",
					   ci, pi, what);
		return -1;
	}
	args = llm_get(fc, argkey);
	if (args != NULL && !json_object_is_type(args, json_type_object))
	{
		llm_set_errmsg(errmsg, "contents[%zu].parts[%zu].%s.%s must be an object",
					   ci, pi, what, argkey);
		return -1;
	}
	out->args = args;
	return 0;
}

/*
 * Which of the part kinds the part has: 0..3 (see llm_part_kinds), -1 for
 * none, -2 (with a message) for more than one.
 */
static const char *const llm_part_kinds[] = {"text", "function_call",
"function_response", "inline_data"};

static int
llm_part_kind(struct json_object *part, size_t ci, size_t pi, char **errmsg)
{
	int			found = -1;
	int			i;

	for (i = 0; i < 4; i++)
	{
		if (llm_get(part, llm_part_kinds[i]) == NULL)
			continue;
		if (found >= 0)
		{
			llm_set_errmsg(errmsg, "contents[%zu].parts[%zu] has both \"%s\" and \"%s\"",
						   ci, pi, llm_part_kinds[found], llm_part_kinds[i]);
			return -2;
		}
		found = i;
	}
	return found;
}

/*
 * The data members of a text or inline_data part.
 */
static int
llm_data_decode(struct json_object *part, int kind, size_t ci, size_t pi,
				LlmPart *out, char **errmsg)
{
	struct json_object *t = llm_get(part, "text");
	struct json_object *d = llm_get_obj(part, "inline_data");

	if (kind == 0)
	{
		if (!json_object_is_type(t, json_type_string))
		{
			llm_set_errmsg(errmsg, "contents[%zu].parts[%zu].text must be a string",
						   ci, pi);
			return -1;
		}
		out->kind = LLM_PART_TEXT;
		out->text = json_object_get_string(t);
		out->text_len = (size_t) json_object_get_string_len(t);
		out->text_obj = t;
		return 0;
	}
	out->kind = LLM_PART_INLINE;
	if (d == NULL || llm_opt_str(d, "mime_type", &out->mime_type) < 0 ||
		out->mime_type == NULL || llm_get_str(d, "data") == NULL)
	{
		llm_set_errmsg(errmsg, "contents[%zu].parts[%zu].inline_data needs string \"mime_type\" and \"data\"",
					   ci, pi);
		return -1;
	}
	out->data = llm_get_str(d, "data");
	return 0;
}

/*
 * Decode one ADK part.  It must have exactly one of text, function_call,
 * function_response, inline_data; "thought" and "thought_signature" may
 * come with any; other members are ignored.
 */
int
llm_part_decode(struct json_object *part, size_t ci, size_t pi, LlmPart *out,
				char **errmsg)
{
	struct json_object *thought;
	int			kind;

	memset(out, 0, sizeof(LlmPart));
	if (part == NULL || !json_object_is_type(part, json_type_object))
	{
		llm_set_errmsg(errmsg, "contents[%zu].parts[%zu] is not an object", ci, pi);
		return -1;
	}
	if ((kind = llm_part_kind(part, ci, pi, errmsg)) == -2)
		return -1;
	thought = llm_get(part, "thought");
	if ((thought != NULL && !json_object_is_type(thought, json_type_boolean)) ||
		llm_opt_str(part, "thought_signature", &out->signature) < 0)
	{
		llm_set_errmsg(errmsg, "contents[%zu].parts[%zu] has a bad \"thought\" or \"thought_signature\"",
					   ci, pi);
		return -1;
	}
	out->thought = thought ? json_object_get_boolean(thought) : 0;
	switch (kind)
	{
		case 0:
		case 3:
			return llm_data_decode(part, kind, ci, pi, out, errmsg);
		case 1:
			out->kind = LLM_PART_CALL;
			return llm_call_decode(part, "function_call", "args", ci, pi, out,
								   errmsg);
		case 2:
			out->kind = LLM_PART_RESPONSE;
			return llm_call_decode(part, "function_response", "response", ci,
								   pi, out, errmsg);
	}
	llm_set_errmsg(errmsg, "contents[%zu].parts[%zu] is of an unknown kind", ci, pi);
	return -1;
}

/*
 * The call's args (or response's response) as a new reference; an empty
 * object when the part has none.
 */
struct json_object *
llm_part_args(const LlmPart *part)
{
	if (part->args != NULL)
		return json_object_get(part->args);
	return json_object_new_object();
}

/*
 * Check tools[index]: {name, description?, parameters?}.
 */
int
llm_tool_decode(struct json_object *tool, size_t index, const char **name,
				const char **description, struct json_object **parameters,
				char **errmsg)
{
	struct json_object *params = llm_get(tool, "parameters");

	if (tool == NULL || !json_object_is_type(tool, json_type_object) ||
		llm_opt_str(tool, "name", name) < 0 || *name == NULL ||
		llm_opt_str(tool, "description", description) < 0 ||
		(params != NULL && !json_object_is_type(params, json_type_object)))
	{
		llm_set_errmsg(errmsg, "tools[%zu] must be an object with a string \"name\", an optional string \"description\" and an optional object \"parameters\"",
					   index);
		return -1;
	}
	*parameters = params;
	return 0;
}

/*
 * Copy one config value to dst under its wire name after checking its type.
 * Empty string arrays are left out.  0 ok (or absent), -1 wrong type.
 */
static int
llm_config_one(struct json_object *dst, struct json_object *val,
			   const LlmConfigMap *m, char **errmsg)
{
	size_t		i;
	size_t		n;

	switch (m->type)
	{
		case LLM_CFG_NUMBER:
			if (json_object_is_type(val, json_type_int) ||
				(json_object_is_type(val, json_type_double) &&
				 isfinite(json_object_get_double(val))))
				break;
			llm_set_errmsg(errmsg, "config \"%s\" must be a number", m->key);
			return -1;
		case LLM_CFG_INTEGER:
			if (json_object_is_type(val, json_type_int))
				break;
			llm_set_errmsg(errmsg, "config \"%s\" must be an integer", m->key);
			return -1;
		case LLM_CFG_STRINGS:
			n = json_object_is_type(val, json_type_array) ?
				json_object_array_length(val) : 0;
			for (i = 0; i < n; i++)
				if (!json_object_is_type(json_object_array_get_idx(val, i),
										 json_type_string))
					break;
			if (!json_object_is_type(val, json_type_array) || i < n)
			{
				llm_set_errmsg(errmsg, "config \"%s\" must be an array of strings",
							   m->key);
				return -1;
			}
			if (n == 0)
				return 0;
			break;
	}
	llm_add_ref(dst, m->wire, val);
	return 0;
}

int
llm_config_apply(struct json_object *dst, const LlmRequestSpec *spec,
				 const LlmConfigMap *map, char **errmsg)
{
	for (; map->key != NULL; map++)
	{
		struct json_object *val = llm_get(spec->config, map->key);

		/* absent and null both mean "not configured" */
		if (val == NULL)
			continue;
		if (llm_config_one(dst, val, map, errmsg) < 0)
			return -1;
	}
	return 0;
}
