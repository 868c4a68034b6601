/*-------------------------------------------------------------------------
 *
 * adapter_gemini.c
 *	  ADK contents to and from the Gemini API (generateContent and
 *	  streamGenerateContent?alt=sse).
 *
 * ADK's content shape is Gemini's in snake_case, so requests are mostly a
 * renaming: function_call -> functionCall, inline_data -> inlineData,
 * thought_signature -> thoughtSignature.  Ids are sent only when present.
 * Tool parameters go out as "parameters" when they stay inside the OpenAPI
 * subset Gemini's Schema accepts, else as "parametersJsonSchema".
 *
 * Responses: candidates[0].content, finishReason (already ADK's enum),
 * usageMetadata and modelVersion.  Each streamed event is a whole
 * GenerateContentResponse holding the next piece; there is no end marker,
 * so a stream is complete once a finishReason has been seen.
 *
 * IDENTIFICATION
 *	  src/model/adapter_gemini.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#define ADK_LLM_INTERNAL
#include "llm.h"

/* Deepest tool schema examined before sending it as JSON Schema */
#define GEMINI_SCHEMA_DEPTH		32

static struct json_object *gemini_build(const LlmRequestSpec *spec,
										char **errmsg);
static int	gemini_contents(struct json_object *body,
							const LlmRequestSpec *spec, char **errmsg);
static int	gemini_content(struct json_object *content, size_t ci,
						   struct json_object **out, char **errmsg);
static struct json_object *gemini_part(const LlmPart *part);
static struct json_object *gemini_call(const LlmPart *part, const char *key,
									   const char *argkey);
static int	gemini_tools(struct json_object *body, const LlmRequestSpec *spec,
						 char **errmsg);
static int	gemini_schema_ok(struct json_object *schema, int depth);
static int	gemini_schema_key(const char *key);
static int	gemini_config(struct json_object *body, const LlmRequestSpec *spec,
						  char **errmsg);
static struct json_object *gemini_parse(struct json_object *body);
static struct json_object *gemini_blocked(struct json_object *body);
static struct json_object *gemini_adk_part(struct json_object *gp);
static int	gemini_error(struct json_object *body, const char **code,
						 const char **msg);
static int	gemini_event(LlmStream *s, const SseEvent *ev);
static int	gemini_stream_part(LlmStream *s, struct json_object *gp);
static int	gemini_stream_candidate(LlmStream *s, struct json_object *cand);

const LlmAdapter llm_gemini_adapter = {
	gemini_build,
	gemini_parse,
	gemini_error,
	gemini_event
};

static const LlmConfigMap gemini_config_map[] = {
	{"temperature", "temperature", LLM_CFG_NUMBER},
	{"top_p", "topP", LLM_CFG_NUMBER},
	{"top_k", "topK", LLM_CFG_NUMBER},
	{"max_output_tokens", "maxOutputTokens", LLM_CFG_INTEGER},
	{"stop_sequences", "stopSequences", LLM_CFG_STRINGS},
	{"presence_penalty", "presencePenalty", LLM_CFG_NUMBER},
	{"frequency_penalty", "frequencyPenalty", LLM_CFG_NUMBER},
	{"seed", "seed", LLM_CFG_INTEGER},
	{NULL, NULL, LLM_CFG_NUMBER}
};

static const char *const gemini_usage_map[] = {
	"promptTokenCount", "prompt_token_count",
	"candidatesTokenCount", "candidates_token_count",
	"totalTokenCount", "total_token_count",
	"cachedContentTokenCount", "cached_content_token_count",
	"thoughtsTokenCount", "thoughts_token_count",
	"toolUsePromptTokenCount", "tool_use_prompt_token_count",
	NULL
};

/* Keywords of Gemini's Schema object (an OpenAPI 3.0 subset) */
static const char *const gemini_schema_keys[] = {
	"type", "format", "title", "description", "nullable", "enum",
	"maxItems", "minItems", "properties", "required", "minProperties",
	"maxProperties", "minLength", "maxLength", "pattern", "example",
	"anyOf", "propertyOrdering", "default", "items", "minimum", "maximum",
	NULL
};

/* ----------------------------------------------------------------
 *		Requests
 * ----------------------------------------------------------------
 */

static struct json_object *
gemini_build(const LlmRequestSpec *spec, char **errmsg)
{
	struct json_object *body = json_object_new_object();

	if (gemini_contents(body, spec, errmsg) < 0)
		goto fail;
	if (spec->system_instruction != NULL && spec->system_instruction[0] != '\0')
	{
		struct json_object *si = json_object_new_object();
		struct json_object *parts = json_object_new_array();
		struct json_object *text = json_object_new_object();

		llm_add_str(text, "text", spec->system_instruction);
		json_object_array_add(parts, text);
		json_object_object_add(si, "parts", parts);
		json_object_object_add(body, "systemInstruction", si);
	}
	if (gemini_tools(body, spec, errmsg) < 0 ||
		gemini_config(body, spec, errmsg) < 0)
		goto fail;
	return body;

fail:
	json_object_put(body);
	return NULL;
}

/*
 * "contents": each ADK content with its parts renamed; contents left
 * without parts are dropped (Gemini refuses empty ones).  A content's wire
 * form depends on nothing but the content (ids are sent only when present,
 * nothing is merged), so every content's is offered for reuse
 * (LlmRequestSpec.reuse): an array of its one wire content, empty for a
 * dropped one.
 */
static int
gemini_contents(struct json_object *body, const LlmRequestSpec *spec,
				char **errmsg)
{
	struct json_object *contents = json_object_new_array();
	size_t		k;
	size_t		n = json_object_array_length(spec->contents);

	json_object_object_add(body, "contents", contents);
	/* no ids, nothing merged: a request resumes at any boundary */
	for (k = 0; spec->from > 0 && k < spec->resume_n; k++)
		json_object_array_add(contents,
							  json_object_get(json_object_array_get_idx(spec->resume_msgs,
																		spec->resume_off + k)));
	for (k = 0; k < n; k++)
	{
		size_t		ci = spec->from + k;
		struct json_object *content;

		llm_log_boundary(spec->log, json_object_array_length(contents),
						 LLM_RESUME_ANY, NULL);
		if (spec->reuse != NULL && spec->reuse[k] != NULL)
		{
			if (json_object_array_length(spec->reuse[k]) > 0)
				json_object_array_add(contents,
									  json_object_get(json_object_array_get_idx(spec->reuse[k], 0)));
			continue;
		}
		if (gemini_content(json_object_array_get_idx(spec->contents, k), ci,
						   &content, errmsg) < 0)
			return -1;
		if (spec->reuse != NULL &&
			(spec->reuse[k] = json_object_new_array()) != NULL &&
			content != NULL)
			json_object_array_add(spec->reuse[k], json_object_get(content));
		if (content != NULL)
			json_object_array_add(contents, content);
	}
	llm_log_boundary(spec->log, json_object_array_length(contents),
					 LLM_RESUME_ANY, NULL);
	llm_log_finish(spec->log, contents, 0);
	return 0;
}

/*
 * One ADK content in Gemini's form (*out), or *out NULL when it has no
 * part to send.
 */
static int
gemini_content(struct json_object *content, size_t ci,
			   struct json_object **out, char **errmsg)
{
	struct json_object *parts;
	struct json_object *gparts;
	int			is_model;
	size_t		pi;

	*out = NULL;
	if (llm_content_decode(content, ci, &is_model, &parts, errmsg) < 0)
		return -1;
	gparts = json_object_new_array();
	for (pi = 0; pi < json_object_array_length(parts); pi++)
	{
		LlmPart		part;
		struct json_object *gp;

		if (llm_part_decode(json_object_array_get_idx(parts, pi), ci, pi,
							&part, errmsg) < 0)
		{
			json_object_put(gparts);
			return -1;
		}
		if ((gp = gemini_part(&part)) != NULL)
			json_object_array_add(gparts, gp);
	}
	if (json_object_array_length(gparts) == 0)
	{
		json_object_put(gparts);
		return 0;
	}
	*out = json_object_new_object();
	llm_add_str(*out, "role", is_model ? "model" : "user");
	json_object_object_add(*out, "parts", gparts);
	return 0;
}

/*
 * One ADK part in Gemini's form; NULL for an empty text part.
 */
static struct json_object *
gemini_part(const LlmPart *part)
{
	struct json_object *gp;
	struct json_object *inner;

	switch (part->kind)
	{
		case LLM_PART_TEXT:
			if (part->text_len == 0 && part->signature == NULL)
				return NULL;
			gp = json_object_new_object();
			/* referenced, not copied */
			json_object_object_add(gp, "text", json_object_get(part->text_obj));
			if (part->thought)
				json_object_object_add(gp, "thought", json_object_new_boolean(1));
			break;
		case LLM_PART_CALL:
			gp = gemini_call(part, "functionCall", "args");
			break;
		case LLM_PART_RESPONSE:
			gp = gemini_call(part, "functionResponse", "response");
			break;
		default:
			gp = json_object_new_object();
			inner = json_object_new_object();
			llm_add_str(inner, "mimeType", part->mime_type);
			llm_add_str(inner, "data", part->data);
			json_object_object_add(gp, "inlineData", inner);
			break;
	}
	if (part->signature != NULL)
		llm_add_str(gp, "thoughtSignature", part->signature);
	return gp;
}

/*
 * {key: {"name", argkey: {...}, "id"?}}
 */
static struct json_object *
gemini_call(const LlmPart *part, const char *key, const char *argkey)
{
	struct json_object *gp = json_object_new_object();
	struct json_object *fc = json_object_new_object();

	llm_add_str(fc, "name", part->name);
	json_object_object_add(fc, argkey, llm_part_args(part));
	if (part->id != NULL)
		llm_add_str(fc, "id", part->id);
	json_object_object_add(gp, key, fc);
	return gp;
}

static int
gemini_tools(struct json_object *body, const LlmRequestSpec *spec,
			 char **errmsg)
{
	struct json_object *decls;
	struct json_object *tool;
	struct json_object *tools;
	size_t		i;
	size_t		n = spec->tools ? json_object_array_length(spec->tools) : 0;

	if (n == 0)
		return 0;
	decls = json_object_new_array();
	tool = json_object_new_object();
	tools = json_object_new_array();
	json_object_object_add(tool, "functionDeclarations", decls);
	json_object_array_add(tools, tool);
	json_object_object_add(body, "tools", tools);
	for (i = 0; i < n; i++)
	{
		const char *name;
		const char *desc;
		struct json_object *params;
		struct json_object *decl;

		if (llm_tool_decode(json_object_array_get_idx(spec->tools, i), i, &name,
							&desc, &params, errmsg) < 0)
			return -1;
		decl = json_object_new_object();
		llm_add_str(decl, "name", name);
		if (desc != NULL)
			llm_add_str(decl, "description", desc);
		if (params != NULL)
			llm_add_ref(decl, gemini_schema_ok(params, 0) ? "parameters" :
						"parametersJsonSchema", params);
		json_object_array_add(decls, decl);
	}
	return 0;
}

/*
 * Does this JSON Schema use only what Gemini's Schema object accepts?
 */
static int
gemini_schema_ok(struct json_object *schema, int depth)
{
	struct json_object_iter it;
	struct json_object *sub;
	size_t		i;

	if (depth > GEMINI_SCHEMA_DEPTH || schema == NULL ||
		!json_object_is_type(schema, json_type_object))
		return 0;
	json_object_object_foreachC(schema, it)
	{
		if (!gemini_schema_key(it.key) ||
			(strcmp(it.key, "type") == 0 &&
			 !json_object_is_type(it.val, json_type_string)))
			return 0;
	}
	if ((sub = llm_get_obj(schema, "properties")) != NULL)
	{
		json_object_object_foreachC(sub, it)
		{
			if (!gemini_schema_ok(it.val, depth + 1))
				return 0;
		}
	}
	if ((sub = llm_get(schema, "items")) != NULL &&
		!gemini_schema_ok(sub, depth + 1))
		return 0;
	if ((sub = llm_get(schema, "anyOf")) != NULL)
	{
		if (!json_object_is_type(sub, json_type_array))
			return 0;
		for (i = 0; i < json_object_array_length(sub); i++)
			if (!gemini_schema_ok(json_object_array_get_idx(sub, i), depth + 1))
				return 0;
	}
	return 1;
}

/*
 * Is key a keyword of Gemini's Schema object?
 */
static int
gemini_schema_key(const char *key)
{
	const char *const *k;

	for (k = gemini_schema_keys; *k != NULL; k++)
		if (strcmp(*k, key) == 0)
			return 1;
	return 0;
}

static int
gemini_config(struct json_object *body, const LlmRequestSpec *spec,
			  char **errmsg)
{
	struct json_object *gc = json_object_new_object();

	struct json_object *schema = llm_get_obj(spec->config, "response_schema");

	if (llm_config_apply(gc, spec, gemini_config_map, errmsg) < 0 ||
		llm_thinking_gemini(gc, spec, errmsg) < 0)
	{
		json_object_put(gc);
		return -1;
	}

	/*
	 * Structured output (docs/models.md): JSON answers of the schema, as
	 * Schema when it fits that subset, else as JSON Schema -- as the
	 * tools' parameters above
	 */
	if (schema != NULL)
	{
		llm_add_str(gc, "responseMimeType", "application/json");
		llm_add_ref(gc, gemini_schema_ok(schema, 0) ? "responseSchema" :
					"responseJsonSchema", schema);
	}
	if (json_object_object_length(gc) == 0)
		json_object_put(gc);
	else
		json_object_object_add(body, "generationConfig", gc);
	return 0;
}

/* ----------------------------------------------------------------
 *		Complete responses
 * ----------------------------------------------------------------
 */

static struct json_object *
gemini_parse(struct json_object *body)
{
	struct json_object *cand;
	struct json_object *gparts;
	struct json_object *parts;
	struct json_object *resp;
	struct json_object *usage;
	const char *version = llm_get_str(body, "modelVersion");
	size_t		i;

	cand = llm_get_idx(body, "candidates", 0);
	if (cand == NULL || !json_object_is_type(cand, json_type_object))
		return gemini_blocked(body);
	gparts = llm_get_arr(llm_get_obj(cand, "content"), "parts");
	parts = json_object_new_array();
	for (i = 0; gparts != NULL && i < json_object_array_length(gparts); i++)
	{
		struct json_object *part = gemini_adk_part(json_object_array_get_idx(gparts, i));

		if (part != NULL && llm_get(part, "error_code") != NULL)
		{
			json_object_put(parts);
			return part;
		}
		if (part != NULL)
			json_object_array_add(parts, part);
	}
	resp = json_object_new_object();
	llm_set_content(resp, parts);
	if ((usage = llm_usage_from(llm_get_obj(body, "usageMetadata"),
								gemini_usage_map)) != NULL)
		json_object_object_add(resp, "usage_metadata", usage);
	if (version != NULL)
		llm_add_str(resp, "model_version", version);
	llm_set_finish(resp, llm_get_str(cand, "finishReason"),
				   llm_get_str(cand, "finishMessage"));
	return resp;
}

/*
 * A response without candidates: the prompt was blocked, or it is
 * malformed.
 */
static struct json_object *
gemini_blocked(struct json_object *body)
{
	struct json_object *pf = llm_get_obj(body, "promptFeedback");
	const char *reason = llm_get_str(pf, "blockReason");
	const char *msg = llm_get_str(pf, "blockReasonMessage");

	if (reason == NULL)
		return llm_error_responsef("MALFORMED_RESPONSE",
								   "model response has no candidates");
	/* an empty reason is Gemini's unset enum value, by its own name */
	if (reason[0] == '\0')
		reason = "BLOCKED_REASON_UNSPECIFIED";
	if (msg != NULL)
		return llm_error_response(reason, msg, strlen(msg));
	return llm_error_responsef(reason, "the prompt was blocked (%s)", reason);
}

/*
 * One Gemini part as an ADK part; NULL for kinds ADK events do not carry
 * (executable code and the like); an error response for a bad call.
 */
static struct json_object *
gemini_adk_part(struct json_object *gp)
{
	struct json_object *text = llm_get(gp, "text");
	struct json_object *fc = llm_get_obj(gp, "functionCall");
	struct json_object *data = llm_get_obj(gp, "inlineData");
	struct json_object *thought = llm_get(gp, "thought");
	const char *sig = llm_get_str(gp, "thoughtSignature");

	if (text != NULL && json_object_is_type(text, json_type_string))
		return llm_text_part(json_object_get_string(text),
							 (size_t) json_object_get_string_len(text),
							 thought && json_object_get_boolean(thought), sig);
	if (fc != NULL)
	{
		struct json_object *args = llm_get(fc, "args");
		const char *name = llm_get_str(fc, "name");
		struct json_object *part;

		if (name == NULL || name[0] == '\0' ||
			(args != NULL && !json_object_is_type(args, json_type_object)))
			return llm_error_responsef("MALFORMED_FUNCTION_CALL",
									   "model returned a function call without a name or with arguments that are not an object");
		part = llm_call_part(llm_get_str(fc, "id"), name,
							 args ? json_object_get(args) : json_object_new_object(),
							 sig);
		return part ? part : llm_error_responsef("INTERNAL_ERROR",
												 "could not generate a function call id");
	}
	if (data != NULL && llm_get_str(data, "mimeType") && llm_get_str(data, "data"))
	{
		struct json_object *part = json_object_new_object();
		struct json_object *inner = json_object_new_object();

		llm_add_str(inner, "mime_type", llm_get_str(data, "mimeType"));
		llm_add_str(inner, "data", llm_get_str(data, "data"));
		json_object_object_add(part, "inline_data", inner);
		return part;
	}
	return NULL;
}

/*
 * {"error": {"code", "message", "status"}}, also inside a one-element
 * array (as streamGenerateContent without alt=sse sends it).
 */
static int
gemini_error(struct json_object *body, const char **code, const char **msg)
{
	struct json_object *err;

	if (body != NULL && json_object_is_type(body, json_type_array))
		body = json_object_array_get_idx(body, 0);
	err = llm_get_obj(body, "error");
	*code = *msg = NULL;
	if (err == NULL)
		return 0;
	*code = llm_get_str(err, "status");
	*msg = llm_get_str(err, "message");
	return 1;
}

/* ----------------------------------------------------------------
 *		Streaming
 * ----------------------------------------------------------------
 */

static int
gemini_event(LlmStream *s, const SseEvent *ev)
{
	struct json_object *chunk;
	struct json_object *cand;
	struct json_object *usage;
	const char *code;
	const char *msg;
	const char *version;

	if ((chunk = llm_stream_json(s, ev)) == NULL)
		return -1;
	if (gemini_error(chunk, &code, &msg))
		return llm_stream_fail(s, code ? code : "PROVIDER_ERROR",
							   msg ? msg : "model provider reported an error");
	version = llm_get_str(chunk, "modelVersion");
	if (version != NULL && llm_stream_setstr(&s->model_version, version) < 0)
		return llm_stream_fail(s, "OUT_OF_MEMORY", "out of memory");
	if ((usage = llm_usage_from(llm_get_obj(chunk, "usageMetadata"),
								gemini_usage_map)) != NULL)
	{
		json_object_put(s->usage);
		s->usage = usage;
	}
	cand = llm_get_idx(chunk, "candidates", 0);
	if (cand != NULL)
		return gemini_stream_candidate(s, cand);
	if (llm_get_str(llm_get_obj(chunk, "promptFeedback"), "blockReason") != NULL)
	{
		struct json_object *err = gemini_blocked(chunk);
		int			rc = llm_stream_fail(s, llm_get_str(err, "error_code"),
										 llm_get_str(err, "error_message"));

		json_object_put(err);
		return rc;
	}
	return 0;
}

static int
gemini_stream_candidate(LlmStream *s, struct json_object *cand)
{
	struct json_object *gparts = llm_get_arr(llm_get_obj(cand, "content"), "parts");
	const char *finish = llm_get_str(cand, "finishReason");
	size_t		i;

	for (i = 0; gparts != NULL && i < json_object_array_length(gparts); i++)
		if (gemini_stream_part(s, json_object_array_get_idx(gparts, i)) < 0)
			return -1;
	if (finish != NULL)
	{
		if (llm_stream_setstr(&s->finish_reason, finish) < 0 ||
			llm_stream_setstr(&s->finish_message,
							  llm_get_str(cand, "finishMessage")) < 0)
			return llm_stream_fail(s, "OUT_OF_MEMORY", "out of memory");
		s->complete = 1;
	}
	return 0;
}

/*
 * Text parts are streamed and joined; any other part arrives whole and is
 * kept as it is.
 */
static int
gemini_stream_part(LlmStream *s, struct json_object *gp)
{
	struct json_object *text = llm_get(gp, "text");
	struct json_object *thought = llm_get(gp, "thought");
	const char *sig = llm_get_str(gp, "thoughtSignature");
	struct json_object *part;
	LlmSlot    *slot;
	int			th = thought && json_object_get_boolean(thought);

	if (text != NULL && json_object_is_type(text, json_type_string))
	{
		if (llm_stream_text(s, -1, json_object_get_string(text),
							(size_t) json_object_get_string_len(text), th) < 0)
			return -1;
		if (sig == NULL)
			return 0;
		slot = s->nslots > 0 ? &s->slots[s->nslots - 1] : NULL;
		if ((slot == NULL || slot->kind != LLM_SLOT_TEXT || slot->thought != th) &&
			(slot = llm_stream_new_slot(s, -1, LLM_SLOT_TEXT)) == NULL)
			return -1;
		slot->thought = th;
		if (llm_stream_setstr(&slot->signature, sig) < 0)
			return llm_stream_fail(s, "OUT_OF_MEMORY", "out of memory");
		return 0;
	}
	part = gemini_adk_part(gp);
	if (part == NULL)
		return 0;
	if (llm_get(part, "error_code") != NULL)
	{
		int			rc = llm_stream_fail(s, llm_get_str(part, "error_code"),
										 llm_get_str(part, "error_message"));

		json_object_put(part);
		return rc;
	}
	if ((slot = llm_stream_new_slot(s, -1, LLM_SLOT_PART)) == NULL)
	{
		json_object_put(part);
		return -1;
	}
	slot->args = part;
	return 0;
}
