/*-------------------------------------------------------------------------
 *
 * adapter_openai.c
 *	  ADK contents to and from OpenAI Chat Completions, for OpenAI and the
 *	  servers that speak its protocol.
 *
 * Requests: the system instruction is the first message; model contents
 * become "assistant" messages (text joined, function calls as tool_calls
 * with their arguments as a JSON string); user contents become one "tool"
 * message per function response, followed by a "user" message for the
 * remaining parts.  Calls without id get "call_<n>" and their responses
 * the same id (see llm_ids_call).
 *
 * Responses: choices[0] only.  Streaming chunks carry text in
 * delta.content and tool calls as fragments keyed by "index"; usage comes
 * in a last chunk with no choices (stream_options.include_usage) and the
 * stream ends with "data: [DONE]".
 *
 * IDENTIFICATION
 *	  src/model/adapter_openai.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#define ADK_LLM_INTERNAL
#include "llm.h"

static struct json_object *openai_build(const LlmRequestSpec *spec,
										char **errmsg);
static struct json_object *openai_made(struct json_object *messages,
									   size_t from);
static int	openai_id_check(const LlmPart *part, int is_model, size_t ci,
							size_t pi, char **errmsg);
static int	openai_content(struct json_object *messages,
						   struct json_object *content, size_t ci,
						   LlmIdSynth *ids, const char **assigned,
						   char **errmsg);
static int	openai_model_message(struct json_object *messages,
								 struct json_object *parts, size_t ci,
								 LlmIdSynth *ids, const char **assigned,
								 char **errmsg);
static int	openai_user_messages(struct json_object *messages,
								 struct json_object *parts, size_t ci,
								 LlmIdSynth *ids, const char **assigned,
								 char **errmsg);
static struct json_object *openai_tool_call(const LlmPart *part,
											const char *id);
static struct json_object *openai_inline(const LlmPart *part, size_t ci,
										 size_t pi, char **errmsg);
static struct json_object *openai_data_url(const LlmPart *part);
static int	openai_tools(struct json_object *body, const LlmRequestSpec *spec,
						 char **errmsg);
static void openai_response_format(struct json_object *body,
								   const LlmRequestSpec *spec);
static int	openai_strict_ok(struct json_object *schema, int depth);
static struct json_object *openai_parse(struct json_object *body);
static int	openai_message_parts(struct json_object *message,
								 struct json_object *parts,
								 struct json_object **err);
static struct json_object *openai_call(struct json_object *tc);
static struct json_object *openai_usage(struct json_object *usage);
static int	openai_error(struct json_object *body, const char **code,
						 const char **msg);
static int	openai_event(LlmStream *s, const SseEvent *ev);
static int	openai_is_done(const SseEvent *ev);
static int	openai_delta(LlmStream *s, struct json_object *choice);
static int	openai_tool_delta(LlmStream *s, struct json_object *tc);
static LlmSlot *openai_call_slot(LlmStream *s, struct json_object *tc,
								 const char *id);

const LlmAdapter llm_openai_adapter = {
	openai_build,
	openai_parse,
	openai_error,
	openai_event
};

static const char *const openai_finish_map[] = {
	"stop", "STOP",
	"length", "MAX_TOKENS",
	"tool_calls", "STOP",
	"function_call", "STOP",
	"content_filter", "SAFETY",
	NULL
};

static const LlmConfigMap openai_config_map[] = {
	{"temperature", "temperature", LLM_CFG_NUMBER},
	{"top_p", "top_p", LLM_CFG_NUMBER},
	{"max_output_tokens", "max_tokens", LLM_CFG_INTEGER},
	{"stop_sequences", "stop", LLM_CFG_STRINGS},
	{"presence_penalty", "presence_penalty", LLM_CFG_NUMBER},
	{"frequency_penalty", "frequency_penalty", LLM_CFG_NUMBER},
	{"seed", "seed", LLM_CFG_INTEGER},
	{NULL, NULL, LLM_CFG_NUMBER}
};

static const char *const openai_usage_map[] = {
	"prompt_tokens", "prompt_token_count",
	"completion_tokens", "candidates_token_count",
	"total_tokens", "total_token_count",
	NULL
};

/* ----------------------------------------------------------------
 *		Requests
 * ----------------------------------------------------------------
 */

static struct json_object *
openai_build(const LlmRequestSpec *spec, char **errmsg)
{
	struct json_object *body;
	struct json_object *messages;
	LlmIdSynth	ids = {0};
	size_t		k;
	size_t		n = json_object_array_length(spec->contents);
	size_t		off;

	if (spec->model == NULL || spec->model[0] == '\0')
	{
		llm_set_errmsg(errmsg, "a model id is required");
		return NULL;
	}
	body = json_object_new_object();
	llm_add_str(body, "model", spec->model);
	messages = json_object_new_array();
	json_object_object_add(body, "messages", messages);
	if (spec->system_instruction != NULL && spec->system_instruction[0] != '\0')
	{
		struct json_object *sys = json_object_new_object();

		llm_add_str(sys, "role", "system");
		llm_add_str(sys, "content", spec->system_instruction);
		json_object_array_add(messages, sys);
	}

	/*
	 * The contents' messages start after the system message; each content
	 * makes its own, so a request resumes at any boundary: the messages of
	 * the contents before it, then the ids as they stood there.
	 */
	off = json_object_array_length(messages);
	if (spec->from > 0)
	{
		for (k = 0; k < spec->resume_n; k++)
			json_object_array_add(messages,
								  json_object_get(json_object_array_get_idx(spec->resume_msgs,
																			spec->resume_off + k)));
		if (spec->resume_ids != NULL &&
			llm_ids_restore(&ids, spec->resume_ids) < 0)
		{
			llm_set_errmsg(errmsg, "out of memory");
			goto fail;
		}
	}
	for (k = 0; k < n; k++)
	{
		size_t		i = spec->from + k;
		size_t		before = json_object_array_length(messages);
		int			uses = ids.uses;
		struct json_object *content = json_object_array_get_idx(spec->contents, k);
		struct json_object *same = NULL;
		const char **assigned = NULL;
		char	   *sig = NULL;
		int			rc;

		llm_log_boundary(spec->log, before - off, LLM_RESUME_ANY, &ids);
		if (spec->reuse != NULL && spec->reuse[k] != NULL)
			same = spec->reuse[k];
		else if (spec->idreuse != NULL)
		{
			/* the ids first: the messages are kept per content and ids */
			if (llm_ids_assign(content, i, &ids, openai_id_check, &assigned,
							   &sig, errmsg) < 0)
				goto fail;
			if (ids.uses != uses && spec->idmsgs != NULL)
				same = spec->idmsgs(spec->idarg, k, sig);
		}
		if (same != NULL)
		{
			size_t		m = json_object_array_length(same);
			size_t		j;

			for (j = 0; j < m; j++)
				json_object_array_add(messages,
									  json_object_get(json_object_array_get_idx(same, j)));
			free(assigned);
			free(sig);
			continue;
		}
		rc = openai_content(messages, content, i, &ids, assigned, errmsg);
		free(assigned);
		if (rc < 0)
		{
			free(sig);
			goto fail;
		}
		if (ids.uses == uses)
		{
			free(sig);
			if (spec->reuse != NULL)
				spec->reuse[k] = openai_made(messages, before);
		}
		else if (sig != NULL)
		{
			spec->idreuse[k].made = openai_made(messages, before);
			if (spec->idreuse[k].made != NULL)
				spec->idreuse[k].made_sig = sig;
			else
				free(sig);
		}
	}
	llm_log_boundary(spec->log, json_object_array_length(messages) - off,
					 LLM_RESUME_ANY, &ids);
	if (openai_tools(body, spec, errmsg) < 0 ||
		llm_config_apply(body, spec, openai_config_map, errmsg) < 0 ||
		llm_thinking_openai(body, spec, errmsg) < 0)
		goto fail;
	openai_response_format(body, spec);
	if (spec->stream)
	{
		struct json_object *opts = json_object_new_object();

		json_object_object_add(body, "stream", json_object_new_boolean(1));
		json_object_object_add(opts, "include_usage", json_object_new_boolean(1));
		json_object_object_add(body, "stream_options", opts);
	}
	/* routes requests of one prefix to the same cache (prompt_cache.c) */
	if (spec->cache_key != NULL)
		llm_add_str(body, "prompt_cache_key", spec->cache_key);
	llm_ids_free(&ids);
	llm_log_finish(spec->log, messages, off);
	return body;

fail:
	llm_ids_free(&ids);
	json_object_put(body);
	return NULL;
}

/*
 * A new array referencing the messages from index "from" on (a content's
 * own, to be reused by later requests), or NULL when out of memory (it is
 * then made again next time).
 */
static struct json_object *
openai_made(struct json_object *messages, size_t from)
{
	size_t		n = json_object_array_length(messages);
	struct json_object *made = json_object_new_array();

	if (made == NULL)
		return NULL;
	for (; from < n; from++)
		json_object_array_add(made,
							  json_object_get(json_object_array_get_idx(messages, from)));
	return made;
}

/*
 * Structured output (docs/models.md): the config's response_schema as a
 * json_schema response format, the answer JSON of that schema -- strict
 * when the schema is one strict mode takes (every object closed with
 * additionalProperties false, all its properties required), as
 * adk_json_schema's are; OpenAI refuses others with strict on.
 */
static void
openai_response_format(struct json_object *body, const LlmRequestSpec *spec)
{
	struct json_object *schema = llm_get_obj(spec->config, "response_schema");
	struct json_object *format;
	struct json_object *js;

	if (schema == NULL)
		return;
	format = json_object_new_object();
	js = json_object_new_object();
	llm_add_str(format, "type", "json_schema");
	llm_add_str(js, "name", "response");
	llm_add_ref(js, "schema", schema);
	json_object_object_add(js, "strict",
						   json_object_new_boolean(openai_strict_ok(schema, 0)));
	json_object_object_add(format, "json_schema", js);
	json_object_object_add(body, "response_format", format);
}

/*
 * Does strict mode take this schema: is every object in it closed, with
 * all its properties required?  Deeper than OPENAI_SCHEMA_DEPTH: no.
 */
#define OPENAI_SCHEMA_DEPTH 32

static int
openai_strict_ok(struct json_object *schema, int depth)
{
	struct json_object *props;
	struct json_object *required;
	struct json_object *additional;
	struct json_object *items;
	struct json_object_iter it;
	const char *type;

	if (depth > OPENAI_SCHEMA_DEPTH)
		return 0;
	if (schema == NULL || !json_object_is_type(schema, json_type_object))
		return 1;
	type = llm_get_str(schema, "type");
	if (type != NULL && strcmp(type, "object") == 0)
	{
		additional = llm_get(schema, "additionalProperties");
		if (additional == NULL || !json_object_is_type(additional, json_type_boolean) ||
			json_object_get_boolean(additional))
			return 0;
		props = llm_get_obj(schema, "properties");
		required = llm_get_arr(schema, "required");
		if (props != NULL)
		{
			json_object_object_foreachC(props, it)
			{
				size_t		i;
				int			found = 0;

				for (i = 0; required != NULL && i < json_object_array_length(required); i++)
				{
					const char *r = json_object_get_string(json_object_array_get_idx(required, i));

					if (r != NULL && strcmp(r, it.key) == 0)
						found = 1;
				}
				if (!found || !openai_strict_ok(it.val, depth + 1))
					return 0;
			}
		}
	}
	items = llm_get_obj(schema, "items");
	return items == NULL || openai_strict_ok(items, depth + 1);
}

/*
 * LlmIdCheck: which parts take ids, and the errors the build gives first.
 */
static int
openai_id_check(const LlmPart *part, int is_model, size_t ci, size_t pi,
				char **errmsg)
{
	if (is_model && part->kind == LLM_PART_TEXT)
		return 0;
	if (is_model && part->kind != LLM_PART_CALL)
	{
		llm_set_errmsg(errmsg, "contents[%zu].parts[%zu]: a model content can only hold text and function calls",
					   ci, pi);
		return -1;
	}
	if (!is_model && part->kind == LLM_PART_CALL)
	{
		llm_set_errmsg(errmsg, "contents[%zu].parts[%zu]: a user content cannot hold a function call",
					   ci, pi);
		return -1;
	}
	return is_model || part->kind == LLM_PART_RESPONSE;
}

/*
 * The messages of content ci; assigned: the ids its parts were given
 * (llm_ids_assign), or NULL to give them here.
 */
static int
openai_content(struct json_object *messages, struct json_object *content,
			   size_t ci, LlmIdSynth *ids, const char **assigned,
			   char **errmsg)
{
	struct json_object *parts;
	int			is_model;

	if (llm_content_decode(content, ci, &is_model, &parts, errmsg) < 0)
		return -1;
	if (is_model)
		return openai_model_message(messages, parts, ci, ids, assigned, errmsg);
	return openai_user_messages(messages, parts, ci, ids, assigned, errmsg);
}

/*
 * One assistant message: text parts joined, function calls as tool_calls.
 * Nothing is added for a content without either.
 */
static int
openai_model_message(struct json_object *messages, struct json_object *parts,
					 size_t ci, LlmIdSynth *ids, const char **assigned,
					 char **errmsg)
{
	LlmBuf		text = {0};
	struct json_object *calls = json_object_new_array();
	struct json_object *msg;
	struct json_object *one = NULL; /* the text part, when one makes it all */
	int			ntext = 0;
	size_t		i;
	size_t		n = json_object_array_length(parts);

	for (i = 0; i < n; i++)
	{
		LlmPart		part;
		const char *id;

		if (llm_part_decode(json_object_array_get_idx(parts, i), ci, i, &part,
							errmsg) < 0)
			goto fail;
		if (part.kind == LLM_PART_TEXT)
		{
			if (!part.thought && llm_buf_append(&text, part.text, part.text_len) < 0)
				goto fail;
			if (!part.thought && part.text_len > 0)
			{
				one = part.text_obj;
				ntext++;
			}
			continue;
		}
		if (part.kind != LLM_PART_CALL)
		{
			llm_set_errmsg(errmsg, "contents[%zu].parts[%zu]: a model content can only hold text and function calls",
						   ci, i);
			goto fail;
		}
		if ((id = assigned ? assigned[i] : llm_ids_call(ids, &part)) == NULL)
			goto fail;
		json_object_array_add(calls, openai_tool_call(&part, id));
	}
	if (text.len > 0 || json_object_array_length(calls) > 0)
	{
		msg = json_object_new_object();
		llm_add_str(msg, "role", "assistant");
		/* one text part is referenced, not copied (a request's largest part) */
		json_object_object_add(msg, "content", text.len == 0 ? NULL :
							   ntext == 1 ? json_object_get(one) :
							   json_object_new_string_len(text.data, (int) text.len));
		if (json_object_array_length(calls) > 0)
			llm_add_ref(msg, "tool_calls", calls);
		json_object_array_add(messages, msg);
	}
	json_object_put(calls);
	llm_buf_free(&text);
	return 0;

fail:
	json_object_put(calls);
	llm_buf_free(&text);
	return -1;
}

/*
 * {"id", "type": "function", "function": {"name", "arguments": "<json>"}}
 */
static struct json_object *
openai_tool_call(const LlmPart *part, const char *id)
{
	struct json_object *tc = json_object_new_object();
	struct json_object *fn = json_object_new_object();
	struct json_object *args = llm_part_args(part);
	char	   *argstr = llm_json_compact(args);

	llm_add_str(tc, "id", id);
	llm_add_str(tc, "type", "function");
	llm_add_str(fn, "name", part->name);
	llm_add_str(fn, "arguments", argstr ? argstr : "{}");
	json_object_object_add(tc, "function", fn);
	free(argstr);
	json_object_put(args);
	return tc;
}

/*
 * A "tool" message per function response, then one "user" message with the
 * text and inline data (content as a plain string when it is one text).
 */
static int
openai_user_messages(struct json_object *messages, struct json_object *parts,
					 size_t ci, LlmIdSynth *ids, const char **assigned,
					 char **errmsg)
{
	struct json_object *items = json_object_new_array();
	struct json_object *msg;
	struct json_object *item;
	size_t		i;
	size_t		n = json_object_array_length(parts);

	for (i = 0; i < n; i++)
	{
		LlmPart		part;
		const char *id;
		struct json_object *resp;
		char	   *rstr;

		if (llm_part_decode(json_object_array_get_idx(parts, i), ci, i, &part,
							errmsg) < 0)
			goto fail;
		switch (part.kind)
		{
			case LLM_PART_TEXT:
				if (part.thought)
					continue;
				item = json_object_new_object();
				llm_add_str(item, "type", "text");
				/* referenced, not copied */
				json_object_object_add(item, "text", json_object_get(part.text_obj));
				json_object_array_add(items, item);
				break;
			case LLM_PART_INLINE:
				if ((item = openai_inline(&part, ci, i, errmsg)) == NULL)
					goto fail;
				json_object_array_add(items, item);
				break;
			case LLM_PART_RESPONSE:
				if ((id = assigned ? assigned[i] : llm_ids_response(ids, &part)) == NULL)
					goto fail;
				resp = llm_part_args(&part);
				rstr = llm_json_compact(resp);
				json_object_put(resp);
				msg = json_object_new_object();
				llm_add_str(msg, "role", "tool");
				llm_add_str(msg, "tool_call_id", id);
				llm_add_str(msg, "content", rstr ? rstr : "{}");
				free(rstr);
				json_object_array_add(messages, msg);
				break;
			case LLM_PART_CALL:
				llm_set_errmsg(errmsg, "contents[%zu].parts[%zu]: a user content cannot hold a function call",
							   ci, i);
				goto fail;
		}
	}
	if (json_object_array_length(items) > 0)
	{
		msg = json_object_new_object();
		llm_add_str(msg, "role", "user");
		item = json_object_array_get_idx(items, 0);
		if (json_object_array_length(items) == 1 && llm_get(item, "text") != NULL)
			llm_add_ref(msg, "content", llm_get(item, "text"));
		else
			llm_add_ref(msg, "content", items);
		json_object_array_add(messages, msg);
	}
	json_object_put(items);
	return 0;

fail:
	json_object_put(items);
	return -1;
}

/*
 * Inline data as a content item: images as image_url, PDF as file, WAV and
 * MP3 as input_audio, all carrying the base64 data.
 */
static struct json_object *
openai_inline(const LlmPart *part, size_t ci, size_t pi, char **errmsg)
{
	struct json_object *item = json_object_new_object();
	struct json_object *inner = json_object_new_object();
	const char *mt = part->mime_type;

	if (strncmp(mt, "image/", 6) == 0 || strcmp(mt, "application/pdf") == 0)
	{
		struct json_object *url = openai_data_url(part);

		if (url == NULL)
			goto fail;
		if (mt[0] == 'i')
		{
			llm_add_str(item, "type", "image_url");
			json_object_object_add(inner, "url", url);
			json_object_object_add(item, "image_url", inner);
		}
		else
		{
			llm_add_str(item, "type", "file");
			llm_add_str(inner, "filename", "document.pdf");
			json_object_object_add(inner, "file_data", url);
			json_object_object_add(item, "file", inner);
		}
		return item;
	}
	if (strcmp(mt, "audio/wav") == 0 || strcmp(mt, "audio/mpeg") == 0 ||
		strcmp(mt, "audio/mp3") == 0)
	{
		llm_add_str(item, "type", "input_audio");
		llm_add_str(inner, "data", part->data);
		llm_add_str(inner, "format", strcmp(mt, "audio/wav") == 0 ? "wav" : "mp3");
		json_object_object_add(item, "input_audio", inner);
		return item;
	}
	llm_set_errmsg(errmsg, "contents[%zu].parts[%zu]: inline data of type \"%s\" cannot be sent to an OpenAI model",
				   ci, pi, mt);
fail:
	json_object_put(inner);
	json_object_put(item);
	return NULL;
}

/*
 * "data:<mime>;base64,<data>" as a string object.
 */
static struct json_object *
openai_data_url(const LlmPart *part)
{
	LlmBuf		b = {0};
	struct json_object *url = NULL;

	if (llm_buf_append(&b, "data:", 5) == 0 &&
		llm_buf_append(&b, part->mime_type, strlen(part->mime_type)) == 0 &&
		llm_buf_append(&b, ";base64,", 8) == 0 &&
		llm_buf_append(&b, part->data, strlen(part->data)) == 0)
		url = json_object_new_string_len(b.data, (int) b.len);
	llm_buf_free(&b);
	return url;
}

static int
openai_tools(struct json_object *body, const LlmRequestSpec *spec,
			 char **errmsg)
{
	struct json_object *tools;
	size_t		i;
	size_t		n = spec->tools ? json_object_array_length(spec->tools) : 0;

	if (n == 0)
		return 0;
	tools = json_object_new_array();
	json_object_object_add(body, "tools", tools);
	for (i = 0; i < n; i++)
	{
		const char *name;
		const char *desc;
		struct json_object *params;
		struct json_object *tool;
		struct json_object *fn;

		if (llm_tool_decode(json_object_array_get_idx(spec->tools, i), i, &name,
							&desc, &params, errmsg) < 0)
			return -1;
		fn = json_object_new_object();
		llm_add_str(fn, "name", name);
		if (desc != NULL)
			llm_add_str(fn, "description", desc);
		if (params != NULL)
			llm_add_ref(fn, "parameters", params);
		tool = json_object_new_object();
		llm_add_str(tool, "type", "function");
		json_object_object_add(tool, "function", fn);
		json_object_array_add(tools, tool);
	}
	return 0;
}

/* ----------------------------------------------------------------
 *		Complete responses
 * ----------------------------------------------------------------
 */

static struct json_object *
openai_parse(struct json_object *body)
{
	struct json_object *choice;
	struct json_object *message;
	struct json_object *parts;
	struct json_object *resp;
	struct json_object *usage;
	struct json_object *err = NULL;
	const char *model = llm_get_str(body, "model");

	choice = llm_get_idx(body, "choices", 0);
	message = llm_get_obj(choice, "message");
	if (message == NULL)
		return llm_error_responsef("MALFORMED_RESPONSE",
								   "model response has no choices[0].message");
	parts = json_object_new_array();
	if (openai_message_parts(message, parts, &err) < 0)
	{
		json_object_put(parts);
		return err;
	}
	resp = json_object_new_object();
	llm_set_content(resp, parts);
	usage = openai_usage(llm_get_obj(body, "usage"));
	if (usage != NULL)
		json_object_object_add(resp, "usage_metadata", usage);
	if (model != NULL)
		llm_add_str(resp, "model_version", model);
	llm_set_finish(resp, llm_map_finish(llm_get_str(choice, "finish_reason"),
										openai_finish_map), NULL);
	return resp;
}

/*
 * Reasoning, text (or refusal) and tool calls of a message as ADK parts.
 * -1 and *err (an error response) on a bad tool call.
 */
static int
openai_message_parts(struct json_object *message, struct json_object *parts,
					 struct json_object **err)
{
	struct json_object *content = llm_get(message, "content");
	struct json_object *calls = llm_get_arr(message, "tool_calls");
	const char *reasoning = llm_get_str(message, "reasoning_content");
	const char *refusal = llm_get_str(message, "refusal");
	size_t		i;

	if (reasoning != NULL && reasoning[0] != '\0')
		json_object_array_add(parts, llm_text_part(reasoning, strlen(reasoning),
												   1, NULL));
	if (json_object_is_type(content, json_type_string) &&
		json_object_get_string_len(content) > 0)
		json_object_array_add(parts,
							  llm_text_part(json_object_get_string(content),
											(size_t) json_object_get_string_len(content),
											0, NULL));
	else if (content != NULL && json_object_is_type(content, json_type_array))
	{
		for (i = 0; i < json_object_array_length(content); i++)
		{
			const char *t = llm_get_str(json_object_array_get_idx(content, i), "text");

			if (t != NULL && t[0] != '\0')
				json_object_array_add(parts, llm_text_part(t, strlen(t), 0, NULL));
		}
	}
	else if (refusal != NULL && refusal[0] != '\0')
		json_object_array_add(parts, llm_text_part(refusal, strlen(refusal), 0, NULL));
	for (i = 0; calls != NULL && i < json_object_array_length(calls); i++)
	{
		struct json_object *part = openai_call(json_object_array_get_idx(calls, i));

		if (llm_get(part, "error_code") != NULL)
		{
			*err = part;
			return -1;
		}
		json_object_array_add(parts, part);
	}
	return 0;
}

/*
 * One tool_calls entry as an ADK function_call part, or an error response.
 */
static struct json_object *
openai_call(struct json_object *tc)
{
	struct json_object *fn = llm_get_obj(tc, "function");
	struct json_object *raw = llm_get(fn, "arguments");
	const char *name = llm_get_str(fn, "name");
	struct json_object *args = NULL;
	struct json_object *part;
	const char *why = NULL;

	if (name == NULL || name[0] == '\0')
		return llm_error_responsef("MALFORMED_FUNCTION_CALL",
								   "model returned a function call without a name");
	if (raw == NULL ||
		(json_object_is_type(raw, json_type_string) &&
		 strspn(json_object_get_string(raw), " \t\r\n") ==
		 (size_t) json_object_get_string_len(raw)))
		args = json_object_new_object();
	else if (json_object_is_type(raw, json_type_string))
		args = llm_json_parse(json_object_get_string(raw),
							  (size_t) json_object_get_string_len(raw), &why);
	else
		args = json_object_get(raw);
	if (args == NULL || !json_object_is_type(args, json_type_object))
	{
		json_object_put(args);
		return llm_error_responsef("MALFORMED_FUNCTION_CALL",
								   "arguments of function call \"%s\" are not a JSON object%s%s",
								   name, why ? ": " : "", why ? why : "");
	}
	part = llm_call_part(llm_get_str(tc, "id"), name, args, NULL);
	if (part == NULL)
		return llm_error_responsef("INTERNAL_ERROR",
								   "could not generate a function call id");
	return part;
}

/*
 * usage_metadata from an OpenAI usage object; NULL when there is none.
 */
static struct json_object *
openai_usage(struct json_object *usage)
{
	struct json_object *out = llm_usage_from(usage, openai_usage_map);
	int64_t		v;

	if (out == NULL)
		return NULL;
	if (llm_get_count(llm_get_obj(usage, "prompt_tokens_details"),
					  "cached_tokens", &v))
		llm_usage_set(out, "cached_content_token_count", v);
	/*
	 * Reasoning tokens are thoughts_token_count and, as Gemini counts them,
	 * not candidates_token_count (completion_tokens holds both)
	 */
	if (llm_get_count(llm_get_obj(usage, "completion_tokens_details"),
					  "reasoning_tokens", &v))
	{
		int64_t		out_tokens;

		llm_usage_set(out, "thoughts_token_count", v);
		if (v > 0 && llm_get_count(out, "candidates_token_count", &out_tokens))
			llm_usage_set(out, "candidates_token_count",
						  out_tokens > v ? out_tokens - v : 0);
	}
	return out;
}

/*
 * {"error": {"message", "type", "code"}} (code preferred when a string), a
 * bare {"error": "message"}, or vLLM's {"object": "error", ...}.
 */
static int
openai_error(struct json_object *body, const char **code, const char **msg)
{
	struct json_object *err = llm_get(body, "error");
	const char *obj = llm_get_str(body, "object");

	*code = *msg = NULL;
	if (err != NULL && json_object_is_type(err, json_type_object))
	{
		*msg = llm_get_str(err, "message");
		*code = llm_get_str(err, "code");
		if (*code == NULL || (*code)[0] == '\0')
			*code = llm_get_str(err, "type");
		return 1;
	}
	if (err != NULL && json_object_is_type(err, json_type_string))
	{
		*msg = json_object_get_string(err);
		return 1;
	}
	if (obj != NULL && strcmp(obj, "error") == 0)
	{
		*msg = llm_get_str(body, "message");
		*code = llm_get_str(body, "type");
		return 1;
	}
	return 0;
}

/* ----------------------------------------------------------------
 *		Streaming
 * ----------------------------------------------------------------
 */

static int
openai_event(LlmStream *s, const SseEvent *ev)
{
	struct json_object *chunk;
	struct json_object *choices;
	struct json_object *usage;
	const char *code;
	const char *msg;
	const char *model;
	size_t		i;

	if (openai_is_done(ev))
	{
		s->complete = 1;
		return 0;
	}
	if ((chunk = llm_stream_json(s, ev)) == NULL)
		return -1;
	if (openai_error(chunk, &code, &msg))
		return llm_stream_fail(s, code ? code : "PROVIDER_ERROR",
							   msg ? msg : "model provider reported an error");
	model = llm_get_str(chunk, "model");
	if (model != NULL && model[0] != '\0' &&
		llm_stream_setstr(&s->model_version, model) < 0)
		return llm_stream_fail(s, "OUT_OF_MEMORY", "out of memory");
	usage = openai_usage(llm_get_obj(chunk, "usage"));
	if (usage != NULL)
	{
		json_object_put(s->usage);
		s->usage = usage;
	}
	choices = llm_get_arr(chunk, "choices");
	for (i = 0; choices != NULL && i < json_object_array_length(choices); i++)
	{
		struct json_object *choice = json_object_array_get_idx(choices, i);
		int64_t		index = 0;

		llm_get_int(choice, "index", &index);
		if (index == 0 && openai_delta(s, choice) < 0)
			return -1;
	}
	return 0;
}

/*
 * Is this the "[DONE]" sentinel (surrounding blanks allowed)?
 */
static int
openai_is_done(const SseEvent *ev)
{
	const char *d = ev->data;
	size_t		len = ev->data_len;

	while (len > 0 && (*d == ' ' || *d == '\t'))
	{
		d++;
		len--;
	}
	while (len > 0 && (d[len - 1] == ' ' || d[len - 1] == '\t'))
		len--;
	return len == 6 && memcmp(d, "[DONE]", 6) == 0;
}

/*
 * Apply choices[0] of a chunk: reasoning, text and refusal deltas, tool call
 * fragments, finish reason.
 */
static int
openai_delta(LlmStream *s, struct json_object *choice)
{
	struct json_object *delta = llm_get_obj(choice, "delta");
	struct json_object *calls = llm_get_arr(delta, "tool_calls");
	const char *reasoning = llm_get_str(delta, "reasoning_content");
	const char *text = llm_get_str(delta, "content");
	const char *refusal = llm_get_str(delta, "refusal");
	const char *finish = llm_get_str(choice, "finish_reason");
	size_t		i;

	if (reasoning != NULL &&
		llm_stream_text(s, -1, reasoning, strlen(reasoning), 1) < 0)
		return -1;
	if (text != NULL &&
		llm_stream_text(s, -1, text,
						(size_t) json_object_get_string_len(llm_get(delta, "content")),
						0) < 0)
		return -1;
	/* a refusal is the answer's text, as message.refusal is unstreamed */
	if (refusal != NULL && refusal[0] != '\0' &&
		llm_stream_text(s, -1, refusal,
						(size_t) json_object_get_string_len(llm_get(delta, "refusal")),
						0) < 0)
		return -1;
	for (i = 0; calls != NULL && i < json_object_array_length(calls); i++)
		if (openai_tool_delta(s, json_object_array_get_idx(calls, i)) < 0)
			return -1;
	if (finish != NULL)
	{
		if (llm_stream_setstr(&s->finish_reason,
							  llm_map_finish(finish, openai_finish_map)) < 0)
			return llm_stream_fail(s, "OUT_OF_MEMORY", "out of memory");
		s->complete = 1;
	}
	return 0;
}

/*
 * The slot a tool call fragment belongs to, made when new.  Fragments are
 * matched by "index"; a new id at an index already used starts a new call
 * (some servers reuse index 0); fragments without index are matched by id,
 * else go to the last call.  NULL after failing the stream.
 */
static LlmSlot *
openai_call_slot(LlmStream *s, struct json_object *tc, const char *id)
{
	LlmSlot    *slot = NULL;
	int64_t		index;
	size_t		i;

	if (llm_get_int(tc, "index", &index) && index >= 0 && index < 1000000)
	{
		slot = llm_stream_find(s, (int) index);
		if (slot != NULL && slot->id != NULL && id != NULL &&
			strcmp(slot->id, id) != 0)
		{
			slot->key = -2;		/* retire it: the index is reused */
			slot = NULL;
		}
		return slot ? slot : llm_stream_new_slot(s, (int) index, LLM_SLOT_CALL);
	}
	for (i = s->nslots; i > 0; i--)
	{
		LlmSlot    *cand = &s->slots[i - 1];

		if (cand->kind == LLM_SLOT_CALL &&
			(id == NULL || (cand->id != NULL && strcmp(cand->id, id) == 0)))
			return cand;
	}
	return llm_stream_new_slot(s, -1, LLM_SLOT_CALL);
}

/*
 * One tool call fragment: id and name (kept from the first fragment that
 * has them) and a piece of the arguments text.
 */
static int
openai_tool_delta(LlmStream *s, struct json_object *tc)
{
	struct json_object *fn = llm_get_obj(tc, "function");
	struct json_object *args = llm_get(fn, "arguments");
	const char *id = llm_get_str(tc, "id");
	const char *name = llm_get_str(fn, "name");
	LlmSlot    *slot;

	if (id != NULL && id[0] == '\0')
		id = NULL;
	if ((slot = openai_call_slot(s, tc, id)) == NULL)
		return -1;
	if (slot->kind != LLM_SLOT_CALL)
		return llm_stream_fail(s, "MALFORMED_RESPONSE",
							   "tool call fragment for a block that is not a call");
	if ((id != NULL && slot->id == NULL && llm_stream_setstr(&slot->id, id) < 0) ||
		(name != NULL && name[0] != '\0' && slot->name == NULL &&
		 llm_stream_setstr(&slot->name, name) < 0))
		return llm_stream_fail(s, "OUT_OF_MEMORY", "out of memory");
	if (args != NULL && json_object_is_type(args, json_type_string))
	{
		if (llm_buf_append(&slot->buf, json_object_get_string(args),
						   (size_t) json_object_get_string_len(args)) < 0)
			return llm_stream_fail(s, "OUT_OF_MEMORY", "out of memory");
	}
	else if (args != NULL && json_object_is_type(args, json_type_object))
	{
		json_object_put(slot->args);
		slot->args = json_object_get(args);
	}
	return 0;
}
