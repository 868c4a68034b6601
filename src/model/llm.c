/*-------------------------------------------------------------------------
 *
 * llm.c
 *	  Provider-independent entry points of the model layer: providers and
 *	  request URLs, requests and complete responses.
 *
 * The per-provider work lives in adapter_openai.c, adapter_gemini.c and
 * adapter_anthropic.c behind the LlmAdapter table.  The rest of the
 * provider-independent code is split by concept: llm_json.c (strict JSON,
 * json-c accessors and error messages), llm_content.c (decoding ADK
 * contents, tools and config), llm_ids.c (call ids), llm_response.c
 * (LlmResponse builders) and llm_stream.c (the streaming aggregator).  All of it is malloc/json-c
 * based and free of PostgreSQL.
 *
 * IDENTIFICATION
 *	  src/model/llm.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#define ADK_LLM_INTERNAL
#include "llm.h"

/* How much of a non-JSON HTTP error body is quoted in error_message */
#define LLM_ERROR_SNIPPET		200

static char *llm_percent_encode(const char *s);
static struct json_object *llm_http_error(const LlmAdapter *ad, long status,
										  struct json_object *obj,
										  const char *body, size_t len);
static struct json_object *llm_provider_error(long status, const char *code,
											  const char *msg);

/* ----------------------------------------------------------------
 *		Providers and URLs
 * ----------------------------------------------------------------
 */

const LlmAdapter *
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
 *		Requests and complete responses
 * ----------------------------------------------------------------
 */

int
llm_reuses_contents(LlmProvider p)
{
	return p == LLM_OPENAI || p == LLM_GEMINI || p == LLM_ANTHROPIC;
}

char *
llm_build_request(const LlmRequestSpec *spec, char **errmsg)
{
	struct json_object *body = llm_build_request_object(spec, errmsg);
	char	   *out;

	if (body == NULL)
		return NULL;
	out = llm_print_request(spec, body);
	json_object_put(body);
	if (out == NULL)
		llm_set_errmsg(errmsg, "out of memory");
	return out;
}

struct json_object *
llm_build_request_object(const LlmRequestSpec *spec, char **errmsg)
{
	const LlmAdapter *ad;
	struct json_object *body;

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
		if (spec->log != NULL)
			llm_log_free(spec->log);
		llm_set_errmsg(errmsg, "out of memory");
	}
	return body;
}

char *
llm_print_request(const LlmRequestSpec *spec, struct json_object *body)
{
	char	   *out;

	/* the array of messages (Gemini: contents) is where memo runs are */
	out = spec->text != NULL ?
		llm_request_compact_memo(body, spec->provider == LLM_GEMINI ?
								 "contents" : "messages", spec->text) :
		llm_request_compact(body);
	if (out == NULL && spec->log != NULL)
		llm_log_free(spec->log);
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
struct json_object *
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
