/*-------------------------------------------------------------------------
 *
 * llm_common.c
 *	  Provider-independent parts of the model layer: URLs, strict JSON
 *	  parsing, decoding of ADK contents, call-id synthesis and generation,
 *	  LlmResponse builders, error handling and the streaming aggregator.
 *
 * The per-provider work lives in adapter_openai.c, adapter_gemini.c and
 * adapter_anthropic.c behind the LlmAdapter table.  Everything here is
 * malloc/json-c based and free of PostgreSQL.
 *
 * JSON from a provider goes through llm_json_parse only: the raw bytes must
 * be strict UTF-8 (as PostgreSQL understands it), the document must nest no
 * deeper than LLM_MAX_WIRE_DEPTH, every number must be one jsonb can hold
 * and keeps its exact digits (adk_json_parse), and U+0000 inside strings
 * becomes U+FFFD so that the result always fits in jsonb.
 *
 * A stream keeps every piece it may own in the LlmStream itself (including
 * the event being handled and the partial being delivered), so that
 * llm_stream_free releases everything even when the partial callback
 * leaves by longjmp.
 *
 * IDENTIFICATION
 *	  src/model/llm_common.c
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <json-c/json.h>

#define ADK_LLM_INTERNAL
#include "llm.h"

/* How much of a streamed body is kept to report an HTTP error body */
#define LLM_STREAM_RAW_KEEP		(64 * 1024)
/* How much of a non-JSON HTTP error body is quoted in error_message */
#define LLM_ERROR_SNIPPET		200

static const LlmAdapter *llm_adapter(LlmProvider p);
static size_t llm_utf8_seq(const unsigned char *s, size_t len);
static int	llm_utf8_valid(const char *s, size_t len);
static size_t llm_utf8_clip(const char *s, size_t len, size_t max);
static int	llm_is_blank(const char *s, size_t len);
static int	llm_json_check(struct json_object *obj, int depth);
static int	llm_fix_nul(struct json_object *str);
static int	llm_random(unsigned char *buf, size_t n);
static char *llm_percent_encode(const char *s);
static struct json_object *llm_http_error(const LlmAdapter *ad, long status,
										  struct json_object *obj,
										  const char *body, size_t len);
static struct json_object *llm_provider_error(long status, const char *code,
											  const char *msg);
static struct json_object *llm_fit_response(struct json_object *resp);
static int	llm_id_grow(LlmIdSynth *ids);
static LlmIdCall *llm_ids_match(LlmIdSynth *ids, const LlmPart *part);
static int	llm_stream_on_event(const SseEvent *ev, void *arg);
static void llm_stream_emit(LlmStream *s, const char *text, size_t len,
							int thought);
static struct json_object *llm_stream_slot_part(LlmSlot *slot);
static struct json_object *llm_stream_final(LlmStream *s);
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
static void llm_slot_free(LlmSlot *slot);

/* ----------------------------------------------------------------
 *		Providers and URLs
 * ----------------------------------------------------------------
 */

static const LlmAdapter *
llm_adapter(LlmProvider p)
{
	switch (p)
	{
		case LLM_OPENAI:
			return &llm_openai_adapter;
		case LLM_GEMINI:
			return &llm_gemini_adapter;
		case LLM_ANTHROPIC:
			return &llm_anthropic_adapter;
	}
	return NULL;
}

int
llm_provider_from_name(const char *name, LlmProvider *out)
{
	if (name == NULL)
		return -1;
	if (strcmp(name, "openai") == 0)
		*out = LLM_OPENAI;
	else if (strcmp(name, "gemini") == 0)
		*out = LLM_GEMINI;
	else if (strcmp(name, "anthropic") == 0)
		*out = LLM_ANTHROPIC;
	else
		return -1;
	return 0;
}

const char *
llm_provider_name(LlmProvider p)
{
	switch (p)
	{
		case LLM_OPENAI:
			return "openai";
		case LLM_GEMINI:
			return "gemini";
		case LLM_ANTHROPIC:
			return "anthropic";
	}
	return NULL;
}

/*
 * Percent-encode everything but RFC 3986 unreserved characters.
 */
static char *
llm_percent_encode(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t		n = strlen(s);
	char	   *out = malloc(3 * n + 1);
	char	   *o = out;

	if (out == NULL)
		return NULL;
	for (; *s; s++)
	{
		unsigned char c = (unsigned char) *s;

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			(c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
			c == '~')
			*o++ = (char) c;
		else
		{
			*o++ = '%';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
		}
	}
	*o = '\0';
	return out;
}

char *
llm_request_url(LlmProvider p, const char *endpoint, const char *model,
				int stream)
{
	size_t		elen;
	char	   *enc;
	char	   *url;
	size_t		size;

	if (endpoint == NULL || llm_provider_name(p) == NULL)
		return NULL;
	elen = strlen(endpoint);
	while (elen > 0 && endpoint[elen - 1] == '/')
		elen--;
	if (p != LLM_GEMINI)
	{
		const char *path = (p == LLM_OPENAI) ? "/chat/completions" : "/v1/messages";

		size = elen + strlen(path) + 1;
		url = malloc(size);
		if (url != NULL)
			snprintf(url, size, "%.*s%s", (int) elen, endpoint, path);
		return url;
	}
	if (model == NULL || model[0] == '\0')
		return NULL;
	if (strncmp(model, "models/", 7) == 0)
		model += 7;
	enc = llm_percent_encode(model);
	if (enc == NULL)
		return NULL;
	size = elen + strlen(enc) + 64;
	url = malloc(size);
	if (url != NULL)
		snprintf(url, size, "%.*s/v1beta/models/%s:%s", (int) elen, endpoint,
				 enc, stream ? "streamGenerateContent?alt=sse" : "generateContent");
	free(enc);
	return url;
}

/* ----------------------------------------------------------------
 *		Messages
 * ----------------------------------------------------------------
 */

/*
 * Set *errmsg to a malloc'd message unless errmsg is NULL or already set:
 * the first error found is the one reported.
 */
void
llm_set_errmsg(char **errmsg, const char *fmt,...)
{
	va_list		ap;
	char		buf[512];

	if (errmsg == NULL || *errmsg != NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	*errmsg = strdup(buf);
}

/* ----------------------------------------------------------------
 *		UTF-8 and strict JSON
 * ----------------------------------------------------------------
 */

/*
 * Length of the valid UTF-8 sequence starting at s, or 0 when invalid.
 * Overlong forms, surrogates, code points above U+10FFFF and NUL are
 * invalid, as in PostgreSQL.
 */
static size_t
llm_utf8_seq(const unsigned char *s, size_t len)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80;
	unsigned char hi = 0xBF;
	size_t		n;
	size_t		i;

	if (c == 0)
		return 0;
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		n = 2;
	else if (c >= 0xE0 && c <= 0xEF)
		n = 3;
	else if (c >= 0xF0 && c <= 0xF4)
		n = 4;
	else
		return 0;
	if (c == 0xE0)
		lo = 0xA0;
	else if (c == 0xED)
		hi = 0x9F;
	else if (c == 0xF0)
		lo = 0x90;
	else if (c == 0xF4)
		hi = 0x8F;
	if (len < n || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xBF)
			return 0;
	return n;
}

static int
llm_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *) s;
	size_t		i = 0;

	while (i < len)
	{
		size_t		n;

		if (p[i] != 0 && p[i] < 0x80)
		{
			i++;
			continue;
		}
		n = llm_utf8_seq(p + i, len - i);
		if (n == 0)
			return 0;
		i += n;
	}
	return 1;
}

/*
 * Longest prefix of valid UTF-8 string s that has at most max bytes and
 * does not end inside a character.
 */
static size_t
llm_utf8_clip(const char *s, size_t len, size_t max)
{
	size_t		n;

	if (len <= max)
		return len;
	n = max;
	while (n > 0 && (((unsigned char) s[n]) & 0xC0) == 0x80)
		n--;
	return n;
}

static int
llm_is_blank(const char *s, size_t len)
{
	size_t		i;

	for (i = 0; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
			return 0;
	return 1;
}

/*
 * Parse JSON received from a provider.  Returns a new object, or NULL and a
 * short static reason in *why (never any of the input).
 */
struct json_object *
llm_json_parse(const char *buf, size_t len, const char **why)
{
	struct json_object *obj;
	AdkJsonParseError jerr;

	*why = NULL;
	if (buf == NULL || llm_is_blank(buf, len))
	{
		*why = "empty body";
		return NULL;
	}
	if (len >= INT_MAX)
	{
		*why = "body too large";
		return NULL;
	}
	if (!llm_utf8_valid(buf, len))
	{
		*why = "invalid UTF-8";
		return NULL;
	}
	obj = adk_json_parse(buf, len, LLM_MAX_WIRE_DEPTH,
						 JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8,
						 &jerr, why);
	switch (jerr)
	{
		case ADK_JSON_OK:
			break;
		case ADK_JSON_TOO_DEEP:
			*why = "nesting too deep";
			return NULL;
		case ADK_JSON_NAN:
			*why = "NaN or Infinity is not JSON";
			return NULL;
		case ADK_JSON_NUMBER:
			*why = "a number is out of the range of PostgreSQL's numeric";
			return NULL;
		case ADK_JSON_NOMEM:
			*why = "out of memory";
			return NULL;
		case ADK_JSON_SYNTAX:
			if (*why == NULL)
				*why = "invalid JSON";
			return NULL;
	}
	if (llm_json_check(obj, 0) == 0)
		return obj;
	*why = "out of memory";
	json_object_put(obj);
	return NULL;
}

/*
 * Walk a parsed document (adk_json_parse has checked nesting and numbers)
 * and replace U+0000 in strings.  0 ok, -1 out of memory.
 */
static int
llm_json_check(struct json_object *obj, int depth)
{
	int			rc = 0;

	switch (json_object_get_type(obj))
	{
		case json_type_string:
			return llm_fix_nul(obj) < 0 ? -1 : 0;
		case json_type_array:
			{
				size_t		i;
				size_t		n = json_object_array_length(obj);

				for (i = 0; i < n && rc == 0; i++)
					rc = llm_json_check(json_object_array_get_idx(obj, i), depth + 1);
				return rc;
			}
		case json_type_object:
			{
				struct json_object_iter it;

				json_object_object_foreachC(obj, it)
				{
					if ((rc = llm_json_check(it.val, depth + 1)) != 0)
						return rc;
				}
				return 0;
			}
		default:
			return 0;
	}
}

/*
 * Replace each NUL in a string object by U+FFFD (jsonb has no U+0000).
 */
static int
llm_fix_nul(struct json_object *str)
{
	const char *s = json_object_get_string(str);
	size_t		len = (size_t) json_object_get_string_len(str);
	size_t		nuls = 0;
	size_t		i;
	char	   *out;
	char	   *o;

	for (i = 0; i < len; i++)
		if (s[i] == '\0')
			nuls++;
	if (nuls == 0)
		return 0;
	out = malloc(len + 2 * nuls + 1);
	if (out == NULL)
		return -1;
	o = out;
	for (i = 0; i < len; i++)
	{
		if (s[i] != '\0')
			*o++ = s[i];
		else
		{
			memcpy(o, "\xEF\xBF\xBD", 3);
			o += 3;
		}
	}
	json_object_set_string_len(str, out, (int) (o - out));
	free(out);
	return 0;
}

/* ----------------------------------------------------------------
 *		json-c accessors
 * ----------------------------------------------------------------
 */

struct json_object *
llm_get(struct json_object *obj, const char *key)
{
	struct json_object *val = NULL;

	if (obj == NULL || !json_object_is_type(obj, json_type_object))
		return NULL;
	if (!json_object_object_get_ex(obj, key, &val))
		return NULL;
	return val;
}

/*
 * Element i of array member key, or NULL.
 */
struct json_object *
llm_get_idx(struct json_object *obj, const char *key, size_t i)
{
	struct json_object *arr = llm_get_arr(obj, key);

	if (arr == NULL || i >= json_object_array_length(arr))
		return NULL;
	return json_object_array_get_idx(arr, i);
}

struct json_object *
llm_get_obj(struct json_object *obj, const char *key)
{
	struct json_object *val = llm_get(obj, key);

	return (val != NULL && json_object_is_type(val, json_type_object)) ? val : NULL;
}

struct json_object *
llm_get_arr(struct json_object *obj, const char *key)
{
	struct json_object *val = llm_get(obj, key);

	return (val != NULL && json_object_is_type(val, json_type_array)) ? val : NULL;
}

const char *
llm_get_str(struct json_object *obj, const char *key)
{
	struct json_object *val = llm_get(obj, key);

	if (val == NULL || !json_object_is_type(val, json_type_string))
		return NULL;
	return json_object_get_string(val);
}

/*
 * 1 and *out when key holds an integer (or an integral double), else 0.
 */
int
llm_get_int(struct json_object *obj, const char *key, int64_t *out)
{
	struct json_object *val = llm_get(obj, key);

	if (val == NULL)
		return 0;
	if (json_object_is_type(val, json_type_int))
	{
		*out = json_object_get_int64(val);
		return 1;
	}
	if (json_object_is_type(val, json_type_double))
	{
		double		d = json_object_get_double(val);

		/* integral and exactly representable: no libm needed */
		if (d > -9e15 && d < 9e15 && d == (double) (int64_t) d)
		{
			*out = (int64_t) d;
			return 1;
		}
	}
	return 0;
}

int
llm_get_count(struct json_object *obj, const char *key, int64_t *out)
{
	struct json_object *val = llm_get(obj, key);
	int64_t		v;

	if (val == NULL)
		return 0;
	if (json_object_is_type(val, json_type_int))
		v = json_object_get_int64(val); /* json-c saturates uint64 */
	else if (json_object_is_type(val, json_type_double))
	{
		double		d = json_object_get_double(val);

		/* integers beyond int64 arrive as doubles (adk_json_parse) */
		if (!(d >= 0) || (d < (double) LLM_MAX_TOKEN_COUNT &&
						  d != (double) (int64_t) d))
			return 0;
		v = d >= (double) LLM_MAX_TOKEN_COUNT ? LLM_MAX_TOKEN_COUNT : (int64_t) d;
	}
	else
		return 0;
	if (v < 0)
		return 0;
	*out = v > LLM_MAX_TOKEN_COUNT ? LLM_MAX_TOKEN_COUNT : v;
	return 1;
}

int64_t
llm_count_add(int64_t a, int64_t b)
{
	/* both are within 0 .. LLM_MAX_TOKEN_COUNT: the sum cannot overflow */
	return a + b > LLM_MAX_TOKEN_COUNT ? LLM_MAX_TOKEN_COUNT : a + b;
}

void
llm_add_ref(struct json_object *obj, const char *key, struct json_object *val)
{
	json_object_object_add(obj, key, json_object_get(val));
}

void
llm_add_str(struct json_object *obj, const char *key, const char *val)
{
	json_object_object_add(obj, key, json_object_new_string(val));
}

/*
 * Compact serialization as a malloc'd string, or NULL when out of memory.
 */
char *
llm_json_compact(struct json_object *obj)
{
	const char *s;

	s = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN |
									   JSON_C_TO_STRING_NOSLASHESCAPE);
	return s ? strdup(s) : NULL;
}

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

/* ----------------------------------------------------------------
 *		Call ids
 * ----------------------------------------------------------------
 */

static int
llm_id_grow(LlmIdSynth *ids)
{
	if (ids->ncalls == ids->cap)
	{
		size_t		cap = ids->cap ? ids->cap * 2 : 8;
		LlmIdCall  *nc = realloc(ids->calls, cap * sizeof(LlmIdCall));

		if (nc == NULL)
			return -1;
		ids->calls = nc;
		ids->cap = cap;
	}
	return 0;
}

/*
 * Record a call and return the id to send: its own, or "call_<n>" counted
 * over the request.  The string is owned by ids; NULL when out of memory.
 */
const char *
llm_ids_call(LlmIdSynth *ids, const LlmPart *part)
{
	char		buf[32];
	const char *id = part->id;
	LlmIdCall  *c;

	if (llm_id_grow(ids) < 0)
		return NULL;
	if (id == NULL)
	{
		snprintf(buf, sizeof(buf), "call_%d", ++ids->counter);
		id = buf;
	}
	c = &ids->calls[ids->ncalls];
	c->id = strdup(id);
	if (c->id == NULL)
		return NULL;
	c->name = part->name;
	c->synthesized = (part->id == NULL);
	c->answered = 0;
	ids->ncalls++;
	return c->id;
}

/*
 * The earliest unanswered call matching the response, or NULL.  A response
 * with an id matches that id; one without matches by name, preferring calls
 * that had no id either (the runner strips only its own ids, from both).
 */
static LlmIdCall *
llm_ids_match(LlmIdSynth *ids, const LlmPart *part)
{
	size_t		i;
	int			pass;

	for (pass = 0; pass < 2; pass++)
	{
		for (i = 0; i < ids->ncalls; i++)
		{
			LlmIdCall  *c = &ids->calls[i];

			if (c->answered)
				continue;
			if (part->id != NULL)
			{
				if (strcmp(c->id, part->id) == 0)
					return c;
			}
			else if (strcmp(c->name, part->name) == 0 &&
					 (pass == 1 || c->synthesized))
				return c;
		}
		if (part->id != NULL)
			break;
	}
	return NULL;
}

/*
 * Return the id to send with a function response: its own, that of the
 * call it answers (see llm_ids_match), or a fresh "call_<n>" when no call
 * is left to answer.  NULL when out of memory.
 */
const char *
llm_ids_response(LlmIdSynth *ids, const LlmPart *part)
{
	LlmIdCall  *c = llm_ids_match(ids, part);
	const char *id;

	if (c != NULL)
	{
		c->answered = 1;
		return c->id;
	}
	if (part->id != NULL)
		return part->id;
	id = llm_ids_call(ids, part);
	if (id != NULL)
		ids->calls[ids->ncalls - 1].answered = 1;
	return id;
}

void
llm_ids_free(LlmIdSynth *ids)
{
	size_t		i;

	for (i = 0; i < ids->ncalls; i++)
		free(ids->calls[i].id);
	free(ids->calls);
	memset(ids, 0, sizeof(LlmIdSynth));
}

static int
llm_random(unsigned char *buf, size_t n)
{
	size_t		got = 0;

	while (got < n)
	{
		ssize_t		r = getrandom(buf + got, n - got, 0);

		if (r < 0)
		{
			if (errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t) r;
	}
	return 0;
}

int
llm_new_call_id(char *buf)
{
	unsigned char r[16];

	if (llm_random(r, sizeof(r)) < 0)
		return -1;
	r[6] = (unsigned char) ((r[6] & 0x0F) | 0x40);	/* version 4 */
	r[8] = (unsigned char) ((r[8] & 0x3F) | 0x80);	/* RFC 4122 variant */
	snprintf(buf, LLM_CALL_ID_LEN + 1,
			 LLM_CALL_ID_PREFIX "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
			 r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7],
			 r[8], r[9], r[10], r[11], r[12], r[13], r[14], r[15]);
	return 0;
}

int
llm_is_generated_call_id(const char *id)
{
	size_t		plen = strlen(LLM_CALL_ID_PREFIX);
	size_t		i;

	if (id == NULL || strlen(id) != LLM_CALL_ID_LEN ||
		strncmp(id, LLM_CALL_ID_PREFIX, plen) != 0)
		return 0;
	for (i = plen; i < LLM_CALL_ID_LEN; i++)
	{
		size_t		k = i - plen;
		char		c = id[i];

		if (k == 8 || k == 13 || k == 18 || k == 23)
		{
			if (c != '-')
				return 0;
		}
		else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return 0;
	}
	return 1;
}

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

/* ----------------------------------------------------------------
 *		Requests and complete responses
 * ----------------------------------------------------------------
 */

char *
llm_build_request(const LlmRequestSpec *spec, char **errmsg)
{
	const LlmAdapter *ad;
	struct json_object *body;
	char	   *out;

	if (errmsg != NULL)
		*errmsg = NULL;
	ad = spec ? llm_adapter(spec->provider) : NULL;
	if (ad == NULL)
	{
		llm_set_errmsg(errmsg, "unknown model provider");
		return NULL;
	}
	if (spec->contents == NULL ||
		!json_object_is_type(spec->contents, json_type_array))
	{
		llm_set_errmsg(errmsg, "contents must be an array");
		return NULL;
	}
	if (spec->tools != NULL && !json_object_is_type(spec->tools, json_type_array))
	{
		llm_set_errmsg(errmsg, "tools must be an array");
		return NULL;
	}
	if (spec->config != NULL && !json_object_is_type(spec->config, json_type_object))
	{
		llm_set_errmsg(errmsg, "config must be an object");
		return NULL;
	}
	body = ad->build(spec, errmsg);
	if (body == NULL)
	{
		llm_set_errmsg(errmsg, "out of memory");
		return NULL;
	}
	out = llm_json_compact(body);
	json_object_put(body);
	if (out == NULL)
		llm_set_errmsg(errmsg, "out of memory");
	return out;
}

struct json_object *
llm_parse_response(LlmProvider p, long http_status, const char *body,
				   size_t len)
{
	const LlmAdapter *ad = llm_adapter(p);
	struct json_object *obj;
	struct json_object *resp;
	const char *why;
	const char *code;
	const char *msg;

	if (ad == NULL)
		return llm_error_responsef("INVALID_PROVIDER", "unknown model provider");
	if (http_status >= 300 && http_status < 400)
		return llm_redirect_response(http_status, NULL);
	obj = llm_json_parse(body, body ? len : 0, &why);
	if (http_status >= 400)
		resp = llm_http_error(ad, http_status, obj, body, body ? len : 0);
	else if (obj == NULL)
		resp = llm_error_responsef("MALFORMED_RESPONSE",
								   "model response is not valid JSON: %s", why);
	else if (!json_object_is_type(obj, json_type_object))
		resp = llm_error_responsef("MALFORMED_RESPONSE",
								   "model response is not a JSON object");
	else if (ad->error(obj, &code, &msg))
		resp = llm_provider_error(http_status, code, msg);
	else
		resp = llm_fit_response(ad->parse(obj));
	json_object_put(obj);
	return resp;
}

/*
 * The response, or an error response in its place when it would not fit in
 * a stored event (the response object is the event's level 1): function
 * call arguments nested more than LLM_MAX_JSON_DEPTH - LLM_ARGS_WRAPPING
 * levels.  Consumes resp.
 */
static struct json_object *
llm_fit_response(struct json_object *resp)
{
	struct json_object *parts = llm_get_arr(llm_get_obj(resp, "content"), "parts");
	size_t		i;

	if (resp == NULL || llm_get(resp, "error_code") != NULL ||
		adk_json_depth(resp, LLM_MAX_JSON_DEPTH) <= LLM_MAX_JSON_DEPTH)
		return resp;
	for (i = 0; parts != NULL && i < json_object_array_length(parts); i++)
	{
		struct json_object *fc = llm_get_obj(json_object_array_get_idx(parts, i),
											 "function_call");
		const char *name = llm_get_str(fc, "name");
		struct json_object *err;

		if (fc == NULL ||
			adk_json_depth(llm_get(fc, "args"), LLM_MAX_JSON_DEPTH) <=
			LLM_MAX_JSON_DEPTH - LLM_ARGS_WRAPPING)
			continue;
		err = llm_error_responsef("MALFORMED_FUNCTION_CALL",
								  "arguments of function call '%.100s' are nested too deeply: at most %d levels are accepted",
								  name ? name : "", LLM_MAX_JSON_DEPTH - LLM_ARGS_WRAPPING);
		json_object_put(resp);
		return err;
	}
	json_object_put(resp);
	return llm_error_responsef("MALFORMED_RESPONSE",
							   "model response is nested too deeply: an event holds at most %d levels",
							   LLM_MAX_JSON_DEPTH);
}

struct json_object *
llm_redirect_response(long http_status, const char *location)
{
	char		code[32];
	char		where[512];
	size_t		n = 0;
	const char *p = location;
	const char *host;

	snprintf(code, sizeof(code), "HTTP_%ld", http_status);
	if (location == NULL || location[0] == '\0')
		return llm_error_responsef(code, "model provider answered with a redirect (HTTP status %ld), which is not followed",
								   http_status);
	/* scheme://, then drop userinfo; stop at the query or fragment */
	host = strstr(p, "://");
	if (host != NULL && strcspn(p, "/?#") > (size_t) (host - p))
	{
		const char *at = NULL;
		size_t		auth;
		size_t		i;

		host += 3;
		auth = strcspn(host, "/?#");
		for (i = 0; i < auth; i++)
			if (host[i] == '@')
				at = host + i;
		n = (size_t) (host - p);
		if (n >= sizeof(where))
			n = 0;
		memcpy(where, p, n);
		p = at ? at + 1 : host;
	}
	/* a Location is ASCII: anything else, and control characters, become ? */
	for (; *p && *p != '?' && *p != '#' && n < 300; p++)
		where[n++] = ((unsigned char) *p < 0x20 || (unsigned char) *p >= 0x7f) ? '?' : *p;
	where[n] = '\0';
	return llm_error_responsef(code, "model provider answered with a redirect (HTTP status %ld) to %s, which is not followed",
							   http_status, where);
}

/*
 * Error response for a provider error body; code or msg may be NULL.
 */
static struct json_object *
llm_provider_error(long status, const char *code, const char *msg)
{
	char		codebuf[32];
	char		msgbuf[64];

	if (code == NULL || code[0] == '\0')
	{
		if (status >= 400)
			snprintf(codebuf, sizeof(codebuf), "HTTP_%ld", status);
		else
			snprintf(codebuf, sizeof(codebuf), "PROVIDER_ERROR");
		code = codebuf;
	}
	if (msg == NULL || msg[0] == '\0')
	{
		snprintf(msgbuf, sizeof(msgbuf), "model provider returned HTTP status %ld",
				 status);
		msg = msgbuf;
	}
	return llm_error_response(code, msg, strlen(msg));
}

/*
 * Error response for HTTP status >= 400: the provider's error when the body
 * holds one, else HTTP_<status> quoting the start of a readable body.
 */
static struct json_object *
llm_http_error(const LlmAdapter *ad, long status, struct json_object *obj,
			   const char *body, size_t len)
{
	const char *code = NULL;
	const char *msg = NULL;
	char		codebuf[32];
	size_t		start = 0;

	if (obj != NULL && ad->error(obj, &code, &msg))
		return llm_provider_error(status, code, msg);
	snprintf(codebuf, sizeof(codebuf), "HTTP_%ld", status);
	if (obj == NULL && len > 0 && llm_utf8_valid(body, len))
	{
		while (start < len && llm_is_blank(body + start, 1))
			start++;
		while (len > start && llm_is_blank(body + len - 1, 1))
			len--;
	}
	else
		len = start = 0;
	if (len == start)
		return llm_error_responsef(codebuf, "model provider returned HTTP status %ld",
								   status);
	len = start + llm_utf8_clip(body + start, len - start, LLM_ERROR_SNIPPET);
	return llm_error_responsef(codebuf, "model provider returned HTTP status %ld: %.*s",
							   status, (int) (len - start), body + start);
}

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
