/*-------------------------------------------------------------------------
 *
 * test_output.c
 *	  What any model output becomes, for all three providers, unary and
 *	  streamed: numbers keep their digits or make an error response, tool
 *	  arguments fit in a stored event, token counts saturate, error codes
 *	  are never empty, redirects are reported as such.
 *
 * IDENTIFICATION
 *	  test/unit/test_output.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

static const LlmProvider providers[] = {LLM_OPENAI, LLM_GEMINI, LLM_ANTHROPIC};

static char *escaped(const char *s);
static char *call_body(LlmProvider p, int stream, const char *args);
static struct json_object *run_body(LlmProvider p, int stream, const char *body);
static struct json_object *run_call(LlmProvider p, int stream, const char *args);
static const char *args_text(struct json_object *resp);
static char *nested_args(int depth);

/* s with '"' and '\' escaped, for a JSON string; malloc'd */
static char *
escaped(const char *s)
{
	char	   *out = malloc(strlen(s) * 2 + 1);
	char	   *o = out;

	for (; *s; s++)
	{
		if (*s == '"' || *s == '\\')
			*o++ = '\\';
		*o++ = *s;
	}
	*o = '\0';
	return out;
}

/* A provider body (or event stream) with one call of "f" with args (raw JSON) */
static char *
call_body(LlmProvider p, int stream, const char *args)
{
	char	   *e = escaped(args);
	size_t		n = strlen(args) * 2 + 2048;
	char	   *b = malloc(n);

	switch (p)
	{
		case LLM_OPENAI:
			if (!stream)
				snprintf(b, n, "{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":null,"
						 "\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"%s\"}}]},"
						 "\"finish_reason\":\"tool_calls\"}]}", e);
			else
				snprintf(b, n, "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\","
						 "\"function\":{\"name\":\"f\",\"arguments\":\"%s\"}}]}}]}\n\n"
						 "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
						 "data: [DONE]\n\n", e);
			break;
		case LLM_GEMINI:
			snprintf(b, n, "%s{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"f\",\"args\":%s}}]},"
					 "\"finishReason\":\"STOP\"}]}%s", stream ? "data: " : "", args, stream ? "\r\n\r\n" : "");
			break;
		case LLM_ANTHROPIC:
			if (!stream)
				snprintf(b, n, "{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\","
						 "\"content\":[{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"f\",\"input\":%s}],"
						 "\"stop_reason\":\"tool_use\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}", args);
			else
				snprintf(b, n, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\","
						 "\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n"
						 "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
						 "\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"f\",\"input\":{}}}\n\n"
						 "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
						 "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"%s\"}}\n\n"
						 "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
						 "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},"
						 "\"usage\":{\"output_tokens\":1}}\n\n"
						 "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", e);
			break;
	}
	free(e);
	return b;
}

static struct json_object *
run_body(LlmProvider p, int stream, const char *body)
{
	UnitStreamRun run;
	struct json_object *r;

	if (!stream)
		return llm_parse_response(p, 200, body, strlen(body));
	unit_stream(p, body, strlen(body), 7, 200, &run);
	r = json_object_get(run.final);
	unit_stream_free(&run);
	return r;
}

static struct json_object *
run_call(LlmProvider p, int stream, const char *args)
{
	char	   *body = call_body(p, stream, args);
	struct json_object *r = run_body(p, stream, body);

	free(body);
	return r;
}

/* the first function call's args, compact, or NULL */
static const char *
args_text(struct json_object *resp)
{
	struct json_object *part = llm_get_idx(llm_get_obj(resp, "content"), "parts", 0);
	struct json_object *args = llm_get_obj(llm_get_obj(part, "function_call"), "args");

	return args ? json_object_to_json_string_ext(args, JSON_C_TO_STRING_PLAIN) : NULL;
}

/* {"a":{"a":...{}}} with depth levels; malloc'd */
static char *
nested_args(int depth)
{
	char	   *s = malloc((size_t) depth * 6 + 1);
	char	   *p = s;
	int			i;

	for (i = 0; i < depth - 1; i++)
		p += sprintf(p, "{\"a\":");
	p += sprintf(p, "{}");
	for (i = 0; i < depth - 1; i++)
		*p++ = '}';
	*p = '\0';
	return s;
}

/*
 * Integers beyond int64 (json-c saturates them) and numbers beyond a double
 * keep their exact digits, in every provider's arguments.
 */
static void
test_numbers_keep_digits(void)
{
	static const char args[] =
		"{\"a\":123456789012345678901234567890,\"b\":-98765432109876543210987,"
		"\"c\":18446744073709551616,\"d\":9223372036854775807,\"e\":-9223372036854775808,"
		"\"f\":1e999,\"g\":1.5E+3,\"h\":[12345678901234567890123,-1,0.1],\"i\":\"99999999999999999999\"}";
	size_t		i;
	int			stream;

	for (i = 0; i < 3; i++)
		for (stream = 0; stream < 2; stream++)
		{
			struct json_object *r = run_call(providers[i], stream, args);

			if (args_text(r) == NULL || strcmp(args_text(r), args) != 0)
				unit_fail(__FILE__, __LINE__, "%s%s: args %s", llm_provider_name(providers[i]),
						  stream ? " (stream)" : "", json_object_to_json_string(r));
			json_object_put(r);
		}
}

/* Only numbers are marked: digits in strings, keys and escapes stay as they are */
static void
test_bigints_only_numbers(void)
{
	static const char in[] =
		"{\"s\":\"x\\\"12345678901234567890123\",\"12345678901234567890123\":[-12345678901234567890123,"
		"\"\\\\\",12345678901234567890123e5,1.12345678901234567890123,123456789012345678901234]}";
	static const char out[] =
		"{\"s\":\"x\\\"12345678901234567890123\",\"12345678901234567890123\":[-12345678901234567890123,"
		"\"\\\\\",12345678901234567890123e5,1.12345678901234567890123,123456789012345678901234]}";
	const char *why;
	struct json_object *o = llm_json_parse(in, sizeof(in) - 1, &why);

	CHECK(o != NULL);
	if (o != NULL)
		CHECK_STR(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), out);
	json_object_put(o);
	/* a bare big integer, and one at the very end of the text */
	o = llm_json_parse("-98765432109876543210", 21, &why);
	CHECK(o != NULL);
	if (o != NULL)
		CHECK_STR(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), "-98765432109876543210");
	json_object_put(o);
}

/*
 * Valid JSON numbers PostgreSQL's numeric cannot hold make an error
 * response, never a response the store would fail on.
 */
static void
test_numbers_unstorable(void)
{
	static const char *const bad[] = {
		"{\"x\":1e-20000}", "{\"x\":[1e131072]}", "{\"x\":0e-16384}",
		"{\"x\":1e2147483648}", NULL
	};
	const char *const *a;
	size_t		i;
	int			stream;

	for (a = bad; *a; a++)
		for (i = 0; i < 3; i++)
			for (stream = 0; stream < 2; stream++)
			{
				struct json_object *r = run_call(providers[i], stream, *a);
				const char *code = llm_get_str(r, "error_code");

				if (code == NULL || llm_get(r, "content") != NULL ||
					(strcmp(code, "MALFORMED_RESPONSE") != 0 &&
					 strcmp(code, "MALFORMED_FUNCTION_CALL") != 0))
					unit_fail(__FILE__, __LINE__, "%s%s %s: %s", llm_provider_name(providers[i]),
							  stream ? " (stream)" : "", *a, json_object_to_json_string(r));
				json_object_put(r);
			}
}

static void
test_number_limits(void)
{
	static const struct
	{
		const char *text;
		int			ok;
	}			cases[] = {
		{"0", 1}, {"-0", 1}, {"1e999", 1}, {"1e1001", 1}, {"1e-16383", 1},
		{"1e-16384", 0}, {"0e-16384", 0}, {"0.5e-16382", 1}, {"0.5e-16383", 0},
		{"1e131071", 1}, {"9.99e131071", 1}, {"1e131072", 0}, {"0.01e131073", 1},
		{"1e1073741822", 0}, {"1e-1073741823", 0}, {"0e99999999999", 0},
		{"NaN", 0}, {"Infinity", 0}, {"-Infinity", 0}, {"1.", 0}, {"", 0},
		{"12345678901234567890123456789012345678901234567890", 1},
	};
	size_t		i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (adk_json_number_ok(cases[i].text) != cases[i].ok)
			unit_fail(__FILE__, __LINE__, "adk_json_number_ok(\"%s\") != %d",
					  cases[i].text, cases[i].ok);
}

/*
 * A stored event holds ADK_MAX_JSON_DEPTH levels; a model event nests a
 * call's args in event > content > parts > part > function_call, so args
 * may have ADK_MAX_JSON_DEPTH - 5 levels and no more, whatever the
 * provider's own wrapping.
 */
static void
test_args_depth(void)
{
	size_t		i;
	int			stream;
	char	   *fits = nested_args(ADK_MAX_JSON_DEPTH - 5);
	char	   *deep = nested_args(ADK_MAX_JSON_DEPTH - 4);

	for (i = 0; i < 3; i++)
		for (stream = 0; stream < 2; stream++)
		{
			struct json_object *r = run_call(providers[i], stream, fits);

			if (args_text(r) == NULL || strcmp(args_text(r), fits) != 0 ||
				adk_json_depth(r, ADK_MAX_JSON_DEPTH) != ADK_MAX_JSON_DEPTH)
				unit_fail(__FILE__, __LINE__, "%s%s: %d levels refused: %.200s",
						  llm_provider_name(providers[i]), stream ? " (stream)" : "",
						  ADK_MAX_JSON_DEPTH - 5, json_object_to_json_string(r));
			json_object_put(r);
			r = run_call(providers[i], stream, deep);
			if (llm_get(r, "content") != NULL ||
				llm_get_str(r, "error_code") == NULL ||
				strcmp(llm_get_str(r, "error_code"), "MALFORMED_FUNCTION_CALL") != 0)
				unit_fail(__FILE__, __LINE__, "%s%s: %d levels accepted: %.200s",
						  llm_provider_name(providers[i]), stream ? " (stream)" : "",
						  ADK_MAX_JSON_DEPTH - 4, json_object_to_json_string(r));
			json_object_put(r);
		}
	free(fits);
	free(deep);
}

static void
check_usage(const char *file, int line, struct json_object *r, const char *key,
			int64_t want)
{
	int64_t		v = -1;
	struct json_object *u = llm_get_obj(r, "usage_metadata");

	if (want < 0)
	{
		if (llm_get(u, key) != NULL)
			unit_fail(file, line, "%s present: %s", key, json_object_to_json_string(r));
		return;
	}
	if (!llm_get_int(u, key, &v) || v != want ||
		!json_object_is_type(llm_get(u, key), json_type_int))
		unit_fail(file, line, "%s == %lld, expected %lld: %s", key, (long long) v,
				  (long long) want, json_object_to_json_string(r));
}

#define CHECK_USAGE(r, key, want) check_usage(__FILE__, __LINE__, (r), (key), (want))

/* Token counts saturate at LLM_MAX_TOKEN_COUNT; negative ones are dropped */
static void
test_usage_saturates(void)
{
	static const char big[] = "9223372036854775807";
	static const char huge[] = "99999999999999999999999";
	char		body[2048];
	struct json_object *r;
	UnitStreamRun run;

	snprintf(body, sizeof(body),
			 "{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}],"
			 "\"stop_reason\":\"end_turn\",\"usage\":{\"input_tokens\":%s,\"cache_creation_input_tokens\":%s,"
			 "\"cache_read_input_tokens\":%s,\"output_tokens\":%s}}", big, big, huge, big);
	r = llm_parse_response(LLM_ANTHROPIC, 200, body, strlen(body));
	CHECK_USAGE(r, "prompt_token_count", LLM_MAX_TOKEN_COUNT);
	CHECK_USAGE(r, "cached_content_token_count", LLM_MAX_TOKEN_COUNT);
	CHECK_USAGE(r, "candidates_token_count", LLM_MAX_TOKEN_COUNT);
	CHECK_USAGE(r, "total_token_count", LLM_MAX_TOKEN_COUNT);
	json_object_put(r);

	snprintf(body, sizeof(body),
			 "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\","
			 "\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":%s,\"cache_read_input_tokens\":%s,"
			 "\"output_tokens\":1}}}\n\n"
			 "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
			 "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
			 "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
			 "\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n"
			 "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
			 "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},"
			 "\"usage\":{\"output_tokens\":%s}}\n\n"
			 "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", big, big, huge);
	unit_stream(LLM_ANTHROPIC, body, strlen(body), 0, 200, &run);
	CHECK_USAGE(run.final, "prompt_token_count", LLM_MAX_TOKEN_COUNT);
	CHECK_USAGE(run.final, "candidates_token_count", LLM_MAX_TOKEN_COUNT);
	CHECK_USAGE(run.final, "total_token_count", LLM_MAX_TOKEN_COUNT);
	unit_stream_free(&run);

	snprintf(body, sizeof(body),
			 "{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},\"finish_reason\":\"stop\"}],"
			 "\"usage\":{\"prompt_tokens\":%s,\"completion_tokens\":-5,\"total_tokens\":1e30,"
			 "\"prompt_tokens_details\":{\"cached_tokens\":%s},\"completion_tokens_details\":{\"reasoning_tokens\":7}}}",
			 huge, big);
	r = llm_parse_response(LLM_OPENAI, 200, body, strlen(body));
	CHECK_USAGE(r, "prompt_token_count", LLM_MAX_TOKEN_COUNT);
	CHECK_USAGE(r, "candidates_token_count", -1);
	CHECK_USAGE(r, "total_token_count", LLM_MAX_TOKEN_COUNT);
	CHECK_USAGE(r, "cached_content_token_count", LLM_MAX_TOKEN_COUNT);
	CHECK_USAGE(r, "thoughts_token_count", 7);
	json_object_put(r);

	snprintf(body, sizeof(body),
			 "{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"hi\"}]},\"finishReason\":\"STOP\"}],"
			 "\"usageMetadata\":{\"promptTokenCount\":%s,\"candidatesTokenCount\":%s,\"totalTokenCount\":-1}}",
			 huge, big);
	r = llm_parse_response(LLM_GEMINI, 200, body, strlen(body));
	CHECK_USAGE(r, "prompt_token_count", LLM_MAX_TOKEN_COUNT);
	CHECK_USAGE(r, "candidates_token_count", LLM_MAX_TOKEN_COUNT);
	CHECK_USAGE(r, "total_token_count", -1);
	json_object_put(r);
}

static void
check_code(const char *file, int line, struct json_object *r, const char *want)
{
	const char *code = llm_get_str(r, "error_code");
	const char *msg = llm_get_str(r, "error_message");

	if (code == NULL || strcmp(code, want) != 0 || msg == NULL || msg[0] == '\0')
		unit_fail(file, line, "expected error_code %s and a message: %s", want,
				  json_object_to_json_string(r));
}

#define CHECK_CODE(r, want) check_code(__FILE__, __LINE__, (r), (want))

/* No error code or message is ever empty */
static void
test_no_empty_error_codes(void)
{
	struct json_object *r;
	UnitStreamRun run;
	static const char gem[] =
		"{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[]},\"finishReason\":\"\"}]}";
	static const char gem_stream[] =
		"data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[]},\"finishReason\":\"\"}]}\r\n\r\n";
	static const char gem_blocked[] =
		"{\"promptFeedback\":{\"blockReason\":\"\"}}";
	static const char anth_stream[] =
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\","
		"\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n"
		"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"\",\"message\":\"\"}}\n\n";
	static const char anth_err[] =
		"{\"type\":\"error\",\"error\":{\"type\":\"\",\"message\":\"\"}}";
	static const char oai_stream[] =
		"data: {\"error\":{\"message\":\"\",\"type\":\"\",\"code\":\"\"}}\n\n";
	static const char gem_err_stream[] =
		"data: {\"error\":{\"code\":500,\"message\":\"\",\"status\":\"\"}}\r\n\r\n";

	r = llm_parse_response(LLM_GEMINI, 200, gem, strlen(gem));
	CHECK_CODE(r, "FINISH_REASON_UNSPECIFIED");
	CHECK_STR(llm_get_str(r, "finish_reason"), "FINISH_REASON_UNSPECIFIED");
	json_object_put(r);
	unit_stream(LLM_GEMINI, gem_stream, strlen(gem_stream), 0, 200, &run);
	CHECK_CODE(run.final, "FINISH_REASON_UNSPECIFIED");
	unit_stream_free(&run);
	r = llm_parse_response(LLM_GEMINI, 200, gem_blocked, strlen(gem_blocked));
	CHECK_CODE(r, "BLOCKED_REASON_UNSPECIFIED");
	json_object_put(r);
	unit_stream(LLM_ANTHROPIC, anth_stream, strlen(anth_stream), 0, 200, &run);
	CHECK_CODE(run.final, "PROVIDER_ERROR");
	unit_stream_free(&run);
	r = llm_parse_response(LLM_ANTHROPIC, 200, anth_err, strlen(anth_err));
	CHECK_CODE(r, "PROVIDER_ERROR");
	json_object_put(r);
	r = llm_parse_response(LLM_ANTHROPIC, 529, anth_err, strlen(anth_err));
	CHECK_CODE(r, "HTTP_529");
	json_object_put(r);
	unit_stream(LLM_OPENAI, oai_stream, strlen(oai_stream), 0, 200, &run);
	CHECK_CODE(run.final, "PROVIDER_ERROR");
	unit_stream_free(&run);
	unit_stream(LLM_GEMINI, gem_err_stream, strlen(gem_err_stream), 0, 200, &run);
	CHECK_CODE(run.final, "PROVIDER_ERROR");
	unit_stream_free(&run);
}

/* A redirect is reported as one, with where it pointed (no query: keys) */
static void
test_redirect(void)
{
	size_t		i;
	struct json_object *r;
	const char *msg;
	UnitStreamRun run;

	for (i = 0; i < 3; i++)
	{
		r = llm_parse_response(providers[i], 302, "", 0);
		CHECK_CODE(r, "HTTP_302");
		json_object_put(r);
		unit_stream(providers[i], "", 0, 0, 307, &run);
		CHECK_CODE(run.final, "HTTP_307");
		unit_stream_free(&run);
	}
	r = llm_redirect_response(301, "https://user:pw@moved.example:8443/v1/chat?key=SECRET#frag");
	CHECK_CODE(r, "HTTP_301");
	msg = llm_get_str(r, "error_message");
	CHECK(msg != NULL && strstr(msg, "https://moved.example:8443/v1/chat") != NULL);
	CHECK(msg != NULL && strstr(msg, "SECRET") == NULL && strstr(msg, "pw") == NULL &&
		  strstr(msg, "frag") == NULL);
	json_object_put(r);
	r = llm_redirect_response(302, "/relative\r\nX-Injected: 1");
	CHECK_CODE(r, "HTTP_302");
	msg = llm_get_str(r, "error_message");
	CHECK(msg != NULL && strchr(msg, '\r') == NULL && strchr(msg, '\n') == NULL);
	json_object_put(r);
	r = llm_redirect_response(302, NULL);
	CHECK_CODE(r, "HTTP_302");
	json_object_put(r);
}

const UnitTest output_tests[] = {
	{"numbers_keep_digits", test_numbers_keep_digits},
	{"bigints_only_numbers", test_bigints_only_numbers},
	{"numbers_unstorable", test_numbers_unstorable},
	{"number_limits", test_number_limits},
	{"args_depth", test_args_depth},
	{"usage_saturates", test_usage_saturates},
	{"no_empty_error_codes", test_no_empty_error_codes},
	{"redirect", test_redirect},
	{NULL, NULL}
};
