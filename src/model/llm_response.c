/*-------------------------------------------------------------------------
 *
 * llm_response.c
 *	  Builders of LlmResponse objects (errors, parts, content, finish
 *	  reason, usage) shared by the provider adapters.
 *
 * Malloc/json-c based and free of PostgreSQL.
 *
 * IDENTIFICATION
 *	  src/model/llm_response.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#define ADK_LLM_INTERNAL
#include "llm.h"

/* ----------------------------------------------------------------
 *		LlmResponse builders
 * ----------------------------------------------------------------
 */

/*
 * {error_code, error_message}; msg (valid UTF-8) is clipped to
 * LLM_MAX_ERROR_MESSAGE bytes on a character boundary.
 */
struct json_object *
llm_error_response(const char *code, const char *msg, size_t len)
{
	struct json_object *resp = json_object_new_object();

	if (resp == NULL)
		return NULL;
	/* a provider may send an empty type or message: never store "" */
	if (code == NULL || code[0] == '\0')
		code = "PROVIDER_ERROR";
	llm_add_str(resp, "error_code", code);
	if (msg == NULL || len == 0)
	{
		msg = "model provider reported an error";
		len = strlen(msg);
	}
	len = llm_utf8_clip(msg, len, LLM_MAX_ERROR_MESSAGE);
	json_object_object_add(resp, "error_message",
						   json_object_new_string_len(msg, (int) len));
	return resp;
}

struct json_object *
llm_error_responsef(const char *code, const char *fmt,...)
{
	va_list		ap;
	char		buf[LLM_MAX_ERROR_MESSAGE + 1];
	size_t		len;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	len = strlen(buf);
	if (!llm_utf8_valid(buf, len))
		len = 0;
	return llm_error_response(code, buf, len);
}

struct json_object *
llm_text_part(const char *text, size_t len, int thought, const char *signature)
{
	struct json_object *part = json_object_new_object();

	json_object_object_add(part, "text",
						   json_object_new_string_len(text ? text : "", (int) len));
	if (thought)
		json_object_object_add(part, "thought", json_object_new_boolean(1));
	if (signature != NULL)
		llm_add_str(part, "thought_signature", signature);
	return part;
}

/*
 * {"function_call": {id, name, args}}; takes over the reference to args.
 * An "adk-" id is generated when id is NULL or empty.  NULL on failure.
 */
struct json_object *
llm_call_part(const char *id, const char *name, struct json_object *args,
			  const char *signature)
{
	char		genid[LLM_CALL_ID_LEN + 1];
	struct json_object *fc;
	struct json_object *part;

	if (id == NULL || id[0] == '\0')
	{
		if (llm_new_call_id(genid) < 0)
		{
			json_object_put(args);
			return NULL;
		}
		id = genid;
	}
	fc = json_object_new_object();
	llm_add_str(fc, "id", id);
	llm_add_str(fc, "name", name);
	json_object_object_add(fc, "args", args);
	part = json_object_new_object();
	json_object_object_add(part, "function_call", fc);
	if (signature != NULL)
		llm_add_str(part, "thought_signature", signature);
	return part;
}

/*
 * Attach {"role": "model", "parts": parts}; takes over parts.  An empty
 * parts array means no content at all.
 */
void
llm_set_content(struct json_object *resp, struct json_object *parts)
{
	struct json_object *content;

	if (json_object_array_length(parts) == 0)
	{
		json_object_put(parts);
		return;
	}
	content = json_object_new_object();
	llm_add_str(content, "role", "model");
	json_object_object_add(content, "parts", parts);
	json_object_object_add(resp, "content", content);
}

/*
 * Set finish_reason.  A response that ends without content for any reason
 * but STOP is an error named after the reason (as ADK does for Gemini).
 */
void
llm_set_finish(struct json_object *resp, const char *finish,
			   const char *message)
{
	size_t		len;

	if (finish == NULL)
		return;
	/* an empty reason is Gemini's unset enum value, by its own name */
	if (finish[0] == '\0')
		finish = "FINISH_REASON_UNSPECIFIED";
	llm_add_str(resp, "finish_reason", finish);
	if (strcmp(finish, "STOP") == 0 || llm_get(resp, "content") != NULL ||
		llm_get(resp, "error_code") != NULL)
		return;
	llm_add_str(resp, "error_code", finish);
	if (message == NULL)
		message = "the model returned no content";
	len = llm_utf8_clip(message, strlen(message), LLM_MAX_ERROR_MESSAGE);
	json_object_object_add(resp, "error_message",
						   json_object_new_string_len(message, (int) len));
}

void
llm_usage_set(struct json_object *usage, const char *key, int64_t value)
{
	json_object_object_add(usage, key, json_object_new_int64(value));
}

/*
 * New usage_metadata object with the integers of src renamed through map
 * (pairs of source and ADK key, NULL-terminated); NULL when none is there.
 */
struct json_object *
llm_usage_from(struct json_object *src, const char *const *map)
{
	struct json_object *usage = NULL;
	int64_t		v;

	for (; map[0] != NULL; map += 2)
	{
		if (!llm_get_count(src, map[0], &v))
			continue;
		if (usage == NULL)
			usage = json_object_new_object();
		llm_usage_set(usage, map[1], v);
	}
	return usage;
}

/*
 * Map a provider finish reason through map (pairs of provider value and
 * ADK name, NULL-terminated); unknown values are "OTHER".
 */
const char *
llm_map_finish(const char *reason, const char *const *map)
{
	if (reason == NULL)
		return NULL;
	for (; map[0] != NULL; map += 2)
		if (strcmp(reason, map[0]) == 0)
			return map[1];
	return "OTHER";
}
