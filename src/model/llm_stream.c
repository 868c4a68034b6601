/*-------------------------------------------------------------------------
 *
 * llm_stream.c
 *	  The streaming aggregator: feeds SSE events to the provider adapter,
 *	  delivers partials and builds the final response.
 *
 * A stream keeps every piece it may own in the LlmStream itself (including
 * the event being handled and the partial being delivered), so that
 * llm_stream_free releases everything even when the partial callback
 * leaves by longjmp.
 *
 * Malloc/json-c based and free of PostgreSQL.
 *
 * IDENTIFICATION
 *	  src/model/llm_stream.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#define ADK_LLM_INTERNAL
#include "llm.h"

/* How much of a streamed body is kept to report an HTTP error body */
#define LLM_STREAM_RAW_KEEP		(64 * 1024)

static int	llm_stream_on_event(const SseEvent *ev, void *arg);
static void llm_stream_emit(LlmStream *s, const char *text, size_t len,
							int thought);
static struct json_object *llm_stream_slot_part(LlmSlot *slot);
static struct json_object *llm_stream_final(LlmStream *s);
static void llm_slot_free(LlmSlot *slot);

/* ----------------------------------------------------------------
 *		Streaming
 * ----------------------------------------------------------------
 */

LlmStream *
llm_stream_new(LlmProvider p, llm_partial_cb cb, void *arg)
{
	const LlmAdapter *ad = llm_adapter(p);
	LlmStream  *s;

	if (ad == NULL)
		return NULL;
	s = calloc(1, sizeof(LlmStream));
	if (s == NULL)
		return NULL;
	s->provider = p;
	s->adapter = ad;
	s->cb = cb;
	s->cb_arg = arg;
	s->sse = sse_parser_new(LLM_MAX_SSE_EVENT, llm_stream_on_event, s);
	if (s->sse == NULL)
	{
		free(s);
		return NULL;
	}
	return s;
}

static void
llm_slot_free(LlmSlot *slot)
{
	llm_buf_free(&slot->buf);
	json_object_put(slot->args);
	free(slot->id);
	free(slot->name);
	free(slot->signature);
}

void
llm_stream_free(LlmStream *s)
{
	size_t		i;

	if (s == NULL)
		return;
	sse_parser_free(s->sse);
	llm_buf_free(&s->raw);
	for (i = 0; i < s->nslots; i++)
		llm_slot_free(&s->slots[i]);
	free(s->slots);
	json_object_put(s->usage);
	json_object_put(s->chunk);
	json_object_put(s->partial);
	free(s->finish_reason);
	free(s->finish_message);
	free(s->model_version);
	free(s->error_code);
	free(s->error_message);
	free(s);
}

int
llm_stream_feed(LlmStream *s, const char *data, size_t len)
{
	if (s->failed)
		return -1;
	if (!s->raw_overflow)
	{
		if (s->raw.len + len > LLM_STREAM_RAW_KEEP)
			s->raw_overflow = 1;
		else if (llm_buf_append(&s->raw, data, len) < 0)
			return llm_stream_fail(s, "OUT_OF_MEMORY", "out of memory");
	}
	if (sse_parser_feed(s->sse, data, len) < 0)
	{
		char		msg[160];

		snprintf(msg, sizeof(msg), "invalid event stream: %s",
				 sse_parser_error(s->sse));
		return llm_stream_fail(s, "MALFORMED_RESPONSE", msg);
	}
	return 0;
}

static int
llm_stream_on_event(const SseEvent *ev, void *arg)
{
	LlmStream  *s = (LlmStream *) arg;

	if (s->failed)
		return -1;
	/* an event with blank data carries nothing (some proxies send them) */
	if (llm_is_blank(ev->data, ev->data_len))
		return 0;
	if (s->adapter->event(s, ev) < 0)
	{
		llm_stream_fail(s, "MALFORMED_RESPONSE", "invalid stream event");
		return -1;
	}
	return 0;
}

struct json_object *
llm_stream_finish(LlmStream *s, long http_status)
{
	if (http_status >= 300 && http_status < 400)
		return llm_redirect_response(http_status, NULL);
	if (http_status >= 400)
		return llm_parse_response(s->provider, http_status, s->raw.data,
								  s->raw.len);
	if (s->failed)
	{
		if (s->error_code == NULL)
			return llm_error_responsef("OUT_OF_MEMORY", "out of memory");
		return llm_error_response(s->error_code, s->error_message,
								  strlen(s->error_message));
	}
	if (sse_parser_events(s->sse) == 0 && !s->raw_overflow && s->raw.len > 0)
	{
		size_t		i = 0;

		/* not an event stream: the server sent a plain JSON response */
		while (i < s->raw.len && llm_is_blank(s->raw.data + i, 1))
			i++;
		if (i < s->raw.len && s->raw.data[i] == '{')
			return llm_parse_response(s->provider, http_status, s->raw.data,
									  s->raw.len);
	}
	if (!s->complete)
		return llm_error_responsef("STREAM_TRUNCATED",
								   "model response stream ended before the response was complete");
	return llm_stream_final(s);
}

/*
 * Mark the stream failed with an error response to return; the first
 * failure wins.  Returns -1.
 */
int
llm_stream_fail(LlmStream *s, const char *code, const char *msg)
{
	size_t		len;

	if (s->failed)
		return -1;
	s->failed = 1;
	/* a provider may send an empty type or message: never store "" */
	if (code == NULL || code[0] == '\0')
		code = "PROVIDER_ERROR";
	if (msg == NULL || msg[0] == '\0')
		msg = "model provider reported an error";
	len = llm_utf8_clip(msg, strlen(msg), LLM_MAX_ERROR_MESSAGE);
	s->error_code = strdup(code);
	s->error_message = strndup(msg, len);
	if (s->error_code == NULL || s->error_message == NULL)
	{
		free(s->error_code);
		free(s->error_message);
		s->error_code = strdup("OUT_OF_MEMORY");
		s->error_message = strdup("out of memory");
		if (s->error_code == NULL || s->error_message == NULL)
		{
			free(s->error_code);
			free(s->error_message);
			s->error_code = s->error_message = NULL;
		}
	}
	return -1;
}

/*
 * Parse the event's data as JSON; the object stays owned by the stream
 * (until the next event or llm_stream_free).  NULL after failing the
 * stream when the data is not valid JSON.
 */
struct json_object *
llm_stream_json(LlmStream *s, const SseEvent *ev)
{
	const char *why;
	char		msg[128];

	json_object_put(s->chunk);
	s->chunk = llm_json_parse(ev->data, ev->data_len, &why);
	if (s->chunk != NULL && json_object_is_type(s->chunk, json_type_object))
		return s->chunk;
	snprintf(msg, sizeof(msg), "stream event is not a JSON object: %s",
			 why ? why : "wrong type");
	llm_stream_fail(s, "MALFORMED_RESPONSE", msg);
	return NULL;
}

LlmSlot *
llm_stream_new_slot(LlmStream *s, int key, LlmSlotKind kind)
{
	LlmSlot    *slot;

	if (s->nslots == s->slots_cap)
	{
		size_t		cap = s->slots_cap ? s->slots_cap * 2 : 8;
		LlmSlot    *ns = realloc(s->slots, cap * sizeof(LlmSlot));

		if (ns == NULL)
		{
			llm_stream_fail(s, "OUT_OF_MEMORY", "out of memory");
			return NULL;
		}
		s->slots = ns;
		s->slots_cap = cap;
	}
	slot = &s->slots[s->nslots++];
	memset(slot, 0, sizeof(LlmSlot));
	slot->key = key;
	slot->kind = kind;
	return slot;
}

/*
 * The latest slot with provider index key (>= 0), or NULL.  Slot pointers
 * are valid until the next slot is made.
 */
LlmSlot *
llm_stream_find(LlmStream *s, int key)
{
	size_t		i;

	if (key < 0)
		return NULL;
	for (i = s->nslots; i > 0; i--)
		if (s->slots[i - 1].key == key)
			return &s->slots[i - 1];
	return NULL;
}

/*
 * Add a text delta and deliver it as a partial.  key >= 0 names the
 * provider's block (made on first use; deltas for an ignored block are
 * dropped); key < 0 continues the last slot when it is text of the same
 * kind.  0 ok, -1 after failing the stream.
 */
int
llm_stream_text(LlmStream *s, int key, const char *text, size_t len,
				int thought)
{
	LlmSlot    *slot = NULL;
	LlmSlot    *last = s->nslots > 0 ? &s->slots[s->nslots - 1] : NULL;

	if (len == 0)
		return 0;
	if (key >= 0)
		slot = llm_stream_find(s, key);
	else if (last != NULL && last->kind == LLM_SLOT_TEXT && last->key < 0 &&
			 last->thought == thought)
		slot = last;
	if (slot == NULL)
	{
		slot = llm_stream_new_slot(s, key < 0 ? -1 : key, LLM_SLOT_TEXT);
		if (slot == NULL)
			return -1;
		slot->thought = thought;
	}
	if (slot->kind == LLM_SLOT_IGNORE)
		return 0;
	if (slot->kind != LLM_SLOT_TEXT)
		return llm_stream_fail(s, "MALFORMED_RESPONSE",
							   "model streamed text into a block that is not text");
	if (llm_buf_append(&slot->buf, text, len) < 0)
		return llm_stream_fail(s, "OUT_OF_MEMORY", "out of memory");
	llm_stream_emit(s, text, len, slot->thought);
	return 0;
}

/*
 * Deliver {"partial": true, "content": {...}} to the callback.  The object
 * is parked in the stream while the callback runs (see file header).
 */
static void
llm_stream_emit(LlmStream *s, const char *text, size_t len, int thought)
{
	struct json_object *parts;

	if (s->cb == NULL)
		return;
	s->partial = json_object_new_object();
	json_object_object_add(s->partial, "partial", json_object_new_boolean(1));
	parts = json_object_new_array();
	json_object_array_add(parts, llm_text_part(text, len, thought, NULL));
	llm_set_content(s->partial, parts);
	s->cb(s->partial, s->cb_arg);
	json_object_put(s->partial);
	s->partial = NULL;
}

/*
 * Replace a malloc'd string field; 0 ok, -1 out of memory.
 */
int
llm_stream_setstr(char **field, const char *val)
{
	char	   *copy = val ? strdup(val) : NULL;

	if (val != NULL && copy == NULL)
		return -1;
	free(*field);
	*field = copy;
	return 0;
}

/*
 * The stream's usage_metadata object, made empty on first use.
 */
struct json_object *
llm_stream_usage(LlmStream *s)
{
	if (s->usage == NULL)
		s->usage = json_object_new_object();
	return s->usage;
}

/*
 * The part for one slot: NULL for nothing to report, or an error response
 * (with "error_code") when a call cannot be completed.
 */
static struct json_object *
llm_stream_slot_part(LlmSlot *slot)
{
	struct json_object *args;
	struct json_object *part;
	const char *why = NULL;

	if (slot->kind == LLM_SLOT_IGNORE)
		return NULL;
	if (slot->kind == LLM_SLOT_PART)
		return json_object_get(slot->args);
	if (slot->kind == LLM_SLOT_TEXT)
	{
		if (slot->buf.len == 0 && slot->signature == NULL)
			return NULL;
		return llm_text_part(slot->buf.data, slot->buf.len, slot->thought,
							 slot->signature);
	}
	if (slot->name == NULL || slot->name[0] == '\0')
		return llm_error_responsef("MALFORMED_FUNCTION_CALL",
								   "model streamed a function call without a name");
	if (slot->buf.len > 0 && !llm_is_blank(slot->buf.data, slot->buf.len))
		args = llm_json_parse(slot->buf.data, slot->buf.len, &why);
	else if (slot->args != NULL)
		args = json_object_get(slot->args);
	else
		args = json_object_new_object();
	if (args == NULL || !json_object_is_type(args, json_type_object))
	{
		json_object_put(args);
		return llm_error_responsef("MALFORMED_FUNCTION_CALL",
								   "arguments of function call \"%s\" are not a JSON object%s%s",
								   slot->name, why ? ": " : "", why ? why : "");
	}
	part = llm_call_part(slot->id, slot->name, args, slot->signature);
	if (part == NULL)
		return llm_error_responsef("INTERNAL_ERROR", "could not generate a function call id");
	return part;
}

/*
 * Build the aggregated final response of a complete stream.
 */
static struct json_object *
llm_stream_final(LlmStream *s)
{
	struct json_object *resp;
	struct json_object *parts = json_object_new_array();
	size_t		i;

	for (i = 0; i < s->nslots; i++)
	{
		struct json_object *part = llm_stream_slot_part(&s->slots[i]);

		if (part == NULL)
			continue;
		if (llm_get(part, "error_code") != NULL)
		{
			json_object_put(parts);
			return part;
		}
		json_object_array_add(parts, part);
	}
	resp = json_object_new_object();
	llm_set_content(resp, parts);
	if (s->usage != NULL)
		llm_add_ref(resp, "usage_metadata", s->usage);
	if (s->model_version != NULL)
		llm_add_str(resp, "model_version", s->model_version);
	llm_set_finish(resp, s->finish_reason, s->finish_message);
	json_object_object_add(resp, "turn_complete", json_object_new_boolean(1));
	return llm_fit_response(resp);
}
