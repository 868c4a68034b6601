/*-------------------------------------------------------------------------
 *
 * test_common.c
 *	  Unit tests of the provider-independent code (src/model/llm*.c):
 *	  provider names, URLs, call ids, strict JSON parsing, input
 *	  validation, id synthesis, error truncation, stream edge cases.
 *
 * IDENTIFICATION
 *	  test/unit/test_common.c
 *
 *-------------------------------------------------------------------------
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

static char *nested(int depth);
static char *nested_objects(int depth);
static char *long_error(const char *prefix, size_t n, size_t *len);
static void jump_cb(struct json_object *partial, void *arg);
static char *build(LlmProvider p, const char *contents, char **err);
static void expect_build_error(const char *contents, const char *needle);

static void
test_provider_names(void)
{
	LlmProvider p = LLM_GEMINI;

	CHECK_INT(llm_provider_from_name("openai", &p), 0);
	CHECK_INT(p, LLM_OPENAI);
	CHECK_INT(llm_provider_from_name("gemini", &p), 0);
	CHECK_INT(p, LLM_GEMINI);
	CHECK_INT(llm_provider_from_name("anthropic", &p), 0);
	CHECK_INT(p, LLM_ANTHROPIC);
	CHECK_INT(llm_provider_from_name("OpenAI", &p), -1);
	CHECK_INT(llm_provider_from_name("", &p), -1);
	CHECK_INT(llm_provider_from_name(NULL, &p), -1);
	CHECK_STR(llm_provider_name(LLM_ANTHROPIC), "anthropic");
	CHECK(llm_provider_name((LlmProvider) 42) == NULL);
	CHECK(llm_stream_new((LlmProvider) 42, NULL, NULL) == NULL);
}

#define CHECK_URL(p, ep, model, stream, want) \
	do { \
		char	   *u_ = llm_request_url((p), (ep), (model), (stream)); \
		CHECK_STR(u_, (want)); \
		free(u_); \
	} while (0)

static void
test_urls(void)
{
	CHECK_URL(LLM_OPENAI, "https://api.openai.com/v1", "gpt-4o", 0,
			  "https://api.openai.com/v1/chat/completions");
	CHECK_URL(LLM_OPENAI, "http://127.0.0.1:18080/v1/", NULL, 1,
			  "http://127.0.0.1:18080/v1/chat/completions");
	CHECK_URL(LLM_ANTHROPIC, "https://api.anthropic.com//", "claude", 1,
			  "https://api.anthropic.com/v1/messages");
	CHECK_URL(LLM_GEMINI, "https://generativelanguage.googleapis.com",
			  "gemini-2.5-flash", 0,
			  "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent");
	CHECK_URL(LLM_GEMINI, "https://generativelanguage.googleapis.com/",
			  "models/gemini-2.5-flash", 1,
			  "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
	CHECK_URL(LLM_GEMINI, "http://h", "a/../b?x=1 y", 0,
			  "http://h/v1beta/models/a%2F..%2Fb%3Fx%3D1%20y:generateContent");
	CHECK(llm_request_url(LLM_GEMINI, "http://h", NULL, 0) == NULL);
	CHECK(llm_request_url(LLM_GEMINI, "http://h", "", 0) == NULL);
	CHECK(llm_request_url(LLM_OPENAI, NULL, "m", 0) == NULL);
	CHECK(llm_request_url((LlmProvider) 9, "http://h", "m", 0) == NULL);
}

static void
test_call_ids(void)
{
	char		ids[64][LLM_CALL_ID_LEN + 1];
	int			i;
	int			j;

	for (i = 0; i < 64; i++)
	{
		const char *u = ids[i] + 4;

		CHECK_INT(llm_new_call_id(ids[i]), 0);
		CHECK_INT(strlen(ids[i]), 40);
		CHECK(strncmp(ids[i], "adk-", 4) == 0);
		/* xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx */
		CHECK_INT(strlen(u), 36);
		CHECK(u[8] == '-' && u[13] == '-' && u[18] == '-' && u[23] == '-');
		CHECK(u[14] == '4');
		CHECK(strchr("89ab", u[19]) != NULL);
		CHECK(strspn(u, "0123456789abcdef-") == 36);
		CHECK(llm_is_generated_call_id(ids[i]));
		for (j = 0; j < i; j++)
			CHECK(strcmp(ids[i], ids[j]) != 0);
	}
	CHECK(!llm_is_generated_call_id("call_1"));
	CHECK(!llm_is_generated_call_id("adk-1234"));
	CHECK(!llm_is_generated_call_id("adk-0123456789abcdef0123456789abcdef0123"));
	CHECK(!llm_is_generated_call_id("adk-ABCDEF01-2345-4789-8bcd-ef0123456789"));
	CHECK(llm_is_generated_call_id("adk-abcdef01-2345-4789-8bcd-ef0123456789"));
	CHECK(!llm_is_generated_call_id(NULL));
}

/*
 * depth nested arrays around a number, as a malloc'd string.
 */
static char *
nested(int depth)
{
	char	   *s = malloc((size_t) depth * 2 + 2);
	int			i;

	for (i = 0; i < depth; i++)
		s[i] = '[';
	s[depth] = '1';
	for (i = 0; i < depth; i++)
		s[depth + 1 + i] = ']';
	s[2 * depth + 1] = '\0';
	return s;
}

/*
 * depth nested objects {"a":{"a":...{}}}, innermost empty.
 */
static char *
nested_objects(int depth)
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

static void
test_json_parse_strict(void)
{
	const char *why;
	struct json_object *o;
	char	   *deep;

	o = llm_json_parse("{\"a\": [1, 2]}\r\n", 15, &why);
	CHECK_JSON(o, "{'a':[1,2]}");
	json_object_put(o);
	o = llm_json_parse("42", 2, &why);
	CHECK(o != NULL && json_object_get_int(o) == 42);
	json_object_put(o);
	/* LLM_MAX_WIRE_DEPTH levels pass, one more does not */
	deep = nested(LLM_MAX_WIRE_DEPTH);
	o = llm_json_parse(deep, strlen(deep), &why);
	CHECK(o != NULL);
	json_object_put(o);
	free(deep);
	deep = nested(LLM_MAX_WIRE_DEPTH + 1);
	o = llm_json_parse(deep, strlen(deep), &why);
	CHECK(o == NULL);
	CHECK_STR(why, "nesting too deep");
	free(deep);
	/* json-c does not count an empty innermost container; we do */
	deep = nested_objects(LLM_MAX_WIRE_DEPTH);
	o = llm_json_parse(deep, strlen(deep), &why);
	CHECK(o != NULL);
	json_object_put(o);
	free(deep);
	deep = nested_objects(LLM_MAX_WIRE_DEPTH + 1);
	o = llm_json_parse(deep, strlen(deep), &why);
	CHECK(o == NULL);
	CHECK_STR(why, "nesting too deep");
	free(deep);
#define BAD(text, reason) \
	do { \
		o = llm_json_parse((text), sizeof(text) - 1, &why); \
		CHECK(o == NULL); \
		json_object_put(o); \
		CHECK_STR(why, (reason)); \
	} while (0)
	BAD("", "empty body");
	BAD(" \n", "empty body");
	BAD("{\"a\":1", "truncated JSON");
	BAD("{\"a\":\"\xff\"}", "invalid UTF-8");
	BAD("{\"a\":\"\xc0\x80\"}", "invalid UTF-8");	/* overlong */
	BAD("{\"a\":\"\xed\xa0\x80\"}", "invalid UTF-8");	/* surrogate */
	BAD("{\"a\":\"\xf4\x90\x80\x80\"}", "invalid UTF-8");	/* > U+10FFFF */
	BAD("{\"a\":\"\xe2\x82\"}", "invalid UTF-8");	/* cut sequence */
	BAD("{\"a\":1}\0", "invalid UTF-8");	/* raw NUL */
	BAD("{\"a\":NaN}", "NaN or Infinity is not JSON");
	BAD("{\"a\":[-Infinity]}", "NaN or Infinity is not JSON");
	o = llm_json_parse("{\"a\":1} x", 9, &why);
	CHECK(o == NULL && why != NULL);
	o = llm_json_parse("{\"a\":1,}", 8, &why);
	CHECK(o == NULL && why != NULL);
	/* valid but unusual */
	o = llm_json_parse("{\"a\":1e999,\"b\":\"\xf0\x9f\x98\x80\"}", 22, &why);
	CHECK(o != NULL);
	json_object_put(o);
}

static void
test_json_nul_replaced(void)
{
	const char *why;
	static const char in[] = "{\"t\":[\"a\\u0000b\"]}";
	struct json_object *o = llm_json_parse(in, sizeof(in) - 1, &why);

	CHECK_JSON(o, "{'t':['a\xEF\xBF\xBD" "b']}");
	json_object_put(o);
}

static char *
build(LlmProvider p, const char *contents, char **err)
{
	LlmRequestSpec spec;
	struct json_object *c = J(contents);
	char	   *body;

	memset(&spec, 0, sizeof(spec));
	spec.provider = p;
	spec.model = "m";
	spec.contents = c;
	body = llm_build_request(&spec, err);
	json_object_put(c);
	return body;
}

/*
 * Every provider refuses the contents with a message containing needle.
 */
static void
expect_build_error(const char *contents, const char *needle)
{
	LlmProvider p;

	for (p = LLM_OPENAI; p <= LLM_ANTHROPIC; p++)
	{
		char	   *err = NULL;
		char	   *body = build(p, contents, &err);

		if (body != NULL || err == NULL || strstr(err, needle) == NULL)
			unit_fail(__FILE__, __LINE__, "%s: %s: got body %s, error \"%s\"",
					  llm_provider_name(p), contents, body ? body : "NULL",
					  err ? err : "NULL");
		free(body);
		free(err);
	}
}

static void
test_invalid_contents(void)
{
	expect_build_error("{'role':'user'}", "contents must be an array");
	expect_build_error("[1]", "contents[0] is not an object");
	expect_build_error("[{'role':'system','parts':[{'text':'x'}]}]",
					   "contents[0].role must be");
	expect_build_error("[{'parts':[{'text':'x'}]}]", "contents[0].role must be");
	expect_build_error("[{'role':'user'}]", "contents[0].parts must be an array");
	expect_build_error("[{'role':'user','parts':[{'text':'a'}]},{'role':'user','parts':[{'video':{}}]}]",
					   "contents[1].parts[0] is of an unknown kind");
	expect_build_error("[{'role':'user','parts':[{'text':'a','inline_data':{'mime_type':'image/png','data':''}}]}]",
					   "has both \"text\" and \"inline_data\"");
	expect_build_error("[{'role':'user','parts':[{'text':5}]}]", "text must be a string");
	expect_build_error("[{'role':'model','parts':[{'function_call':{'args':{}}}]}]",
					   "function_call needs a string \"name\"");
	expect_build_error("[{'role':'model','parts':[{'function_call':{'name':'f','args':[1]}}]}]",
					   "function_call.args must be an object");
	expect_build_error("[{'role':'user','parts':[{'function_response':{'name':'f','response':'x'}}]}]",
					   "function_response.response must be an object");
	expect_build_error("[{'role':'user','parts':[{'inline_data':{'data':'x'}}]}]",
					   "inline_data needs");
	expect_build_error("[{'role':'user','parts':['text']}]",
					   "contents[0].parts[0] is not an object");
	expect_build_error("[{'role':'user','parts':[{'text':'a','thought':'yes'}]}]",
					   "bad \"thought\"");
}

static void
test_invalid_spec(void)
{
	LlmRequestSpec spec;
	struct json_object *contents = J("[{'role':'user','parts':[{'text':'hi'}]}]");
	struct json_object *bad_tools = J("[{'description':'no name'}]");
	struct json_object *not_array = J("{'name':'x'}");
	struct json_object *bad_cfg = J("{'temperature':'hot'}");
	struct json_object *bad_cfg2 = J("{'max_output_tokens':1.5}");
	struct json_object *bad_cfg3 = J("{'stop_sequences':['a',1]}");
	char	   *err = NULL;
	LlmProvider p;

	for (p = LLM_OPENAI; p <= LLM_ANTHROPIC; p++)
	{
		memset(&spec, 0, sizeof(spec));
		spec.provider = p;
		spec.model = "m";
		spec.contents = contents;
#define EXPECT_SPEC_ERROR(needle) \
	do { \
		char	   *b_ = llm_build_request(&spec, &err); \
		CHECK(b_ == NULL); \
		CHECK(err != NULL && strstr(err, (needle)) != NULL); \
		free(b_); \
		free(err); \
		err = NULL; \
	} while (0)
		spec.tools = bad_tools;
		EXPECT_SPEC_ERROR("tools[0] must be an object with a string \"name\"");
		spec.tools = not_array;
		EXPECT_SPEC_ERROR("tools must be an array");
		spec.tools = NULL;
		spec.config = bad_cfg;
		EXPECT_SPEC_ERROR("config \"temperature\" must be a number");
		spec.config = bad_cfg2;
		EXPECT_SPEC_ERROR("config \"max_output_tokens\" must be an integer");
		spec.config = bad_cfg3;
		EXPECT_SPEC_ERROR("config \"stop_sequences\" must be an array of strings");
		spec.config = contents;
		EXPECT_SPEC_ERROR("config must be an object");
		spec.config = NULL;
		if (p != LLM_GEMINI)
		{
			spec.model = NULL;
			EXPECT_SPEC_ERROR("a model id is required");
		}
	}
	spec.provider = (LlmProvider) 7;
	EXPECT_SPEC_ERROR("unknown model provider");
	/* a NULL errmsg is allowed */
	CHECK(llm_build_request(&spec, NULL) == NULL);
	json_object_put(contents);
	json_object_put(bad_tools);
	json_object_put(not_array);
	json_object_put(bad_cfg);
	json_object_put(bad_cfg2);
	json_object_put(bad_cfg3);
}

/*
 * An Anthropic error body whose message is prefix + n times "é".
 */
static char *
long_error(const char *prefix, size_t n, size_t *len)
{
	char	   *body = malloc(n * 2 + strlen(prefix) + 64);
	char	   *p = body;
	size_t		i;

	p += sprintf(p, "{\"error\":{\"type\":\"x_error\",\"message\":\"%s", prefix);
	for (i = 0; i < n; i++)
	{
		*p++ = '\xC3';
		*p++ = '\xA9';
	}
	p += sprintf(p, "\"}}");
	*len = (size_t) (p - body);
	return body;
}

static void
test_error_message_truncated(void)
{
	size_t		len;
	char	   *body;
	struct json_object *resp;
	const char *msg;

	/* cut to 1000 bytes exactly, ending on a whole character */
	body = long_error("", 1500, &len);
	resp = llm_parse_response(LLM_ANTHROPIC, 400, body, len);
	msg = llm_get_str(resp, "error_message");
	CHECK_STR(llm_get_str(resp, "error_code"), "x_error");
	CHECK(msg != NULL && strlen(msg) == 1000);
	CHECK(msg != NULL && (unsigned char) msg[999] == 0xA9);
	json_object_put(resp);
	free(body);
	/* one byte more in front: the cut steps back to 999 bytes */
	body = long_error("a", 1500, &len);
	resp = llm_parse_response(LLM_ANTHROPIC, 429, body, len);
	msg = llm_get_str(resp, "error_message");
	CHECK(msg != NULL && strlen(msg) == 999);
	CHECK(msg != NULL && (unsigned char) msg[998] == 0xA9);
	json_object_put(resp);
	free(body);
	/* short messages are untouched */
	body = long_error("x", 3, &len);
	resp = llm_parse_response(LLM_ANTHROPIC, 400, body, len);
	CHECK_JSON(resp, "{'error_code':'x_error','error_message':'x\xC3\xA9\xC3\xA9\xC3\xA9'}");
	json_object_put(resp);
	free(body);
}

static void
test_malformed_never_echoes(void)
{
	static const char body[] = "<html>SECRET-TOKEN-123 {\"choices\":";
	LlmProvider p;
	char	   *deep;

	for (p = LLM_OPENAI; p <= LLM_ANTHROPIC; p++)
	{
		struct json_object *r = llm_parse_response(p, 200, body, sizeof(body) - 1);
		const char *msg = llm_get_str(r, "error_message");

		CHECK_STR(llm_get_str(r, "error_code"), "MALFORMED_RESPONSE");
		CHECK(msg != NULL && strstr(msg, "SECRET") == NULL);
		CHECK(llm_get(r, "content") == NULL);
		json_object_put(r);
		r = llm_parse_response(p, 200, NULL, 0);
		CHECK_JSON(r, "{'error_code':'MALFORMED_RESPONSE','error_message':'model response is not valid JSON: empty body'}");
		json_object_put(r);
		r = llm_parse_response(p, 200, "[1,2]", 5);
		CHECK_STR(llm_get_str(r, "error_code"), "MALFORMED_RESPONSE");
		json_object_put(r);
		r = llm_parse_response(p, 200, "{\"x\":\"\xed\xbf\xbf\"}", 11);
		CHECK_JSON(r, "{'error_code':'MALFORMED_RESPONSE','error_message':'model response is not valid JSON: invalid UTF-8'}");
		json_object_put(r);
		deep = nested(LLM_MAX_WIRE_DEPTH + 1);
		r = llm_parse_response(p, 200, deep, strlen(deep));
		CHECK_JSON(r, "{'error_code':'MALFORMED_RESPONSE','error_message':'model response is not valid JSON: nesting too deep'}");
		json_object_put(r);
		free(deep);
	}
}

static void
test_http_error_without_json(void)
{
	static const char html[] = "<html><body>502 Bad Gateway</body></html>\n";
	static const char bin[] = "\xff\xfe garbage";
	struct json_object *r;

	r = llm_parse_response(LLM_OPENAI, 502, html, sizeof(html) - 1);
	CHECK_JSON(r, "{'error_code':'HTTP_502','error_message':'model provider returned HTTP status 502: <html><body>502 Bad Gateway</body></html>'}");
	json_object_put(r);
	r = llm_parse_response(LLM_GEMINI, 503, "", 0);
	CHECK_JSON(r, "{'error_code':'HTTP_503','error_message':'model provider returned HTTP status 503'}");
	json_object_put(r);
	r = llm_parse_response(LLM_ANTHROPIC, 500, bin, sizeof(bin) - 1);
	CHECK_JSON(r, "{'error_code':'HTTP_500','error_message':'model provider returned HTTP status 500'}");
	json_object_put(r);
	/* JSON without a recognisable error */
	r = llm_parse_response(LLM_ANTHROPIC, 404, "{\"detail\":\"nope\"}", 17);
	CHECK_JSON(r, "{'error_code':'HTTP_404','error_message':'model provider returned HTTP status 404'}");
	json_object_put(r);
}

static void
test_stream_not_sse(void)
{
	UnitStreamRun run;
	static const char body[] =
		"{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}";

	/* a server that ignored "stream": the plain response is used */
	unit_stream(LLM_OPENAI, body, sizeof(body) - 1, 5, 200, &run);
	CHECK_JSON(run.final, "{'content':{'role':'model','parts':[{'text':'hi'}]},'finish_reason':'STOP'}");
	unit_stream_free(&run);
	/* nothing at all */
	unit_stream(LLM_ANTHROPIC, "", 0, 0, 200, &run);
	CHECK_STR(llm_get_str(run.final, "error_code"), "STREAM_TRUNCATED");
	unit_stream_free(&run);
	/* an event cut in the middle */
	unit_stream(LLM_GEMINI, "data: {\"candidates\":", 20, 0, 200, &run);
	CHECK_STR(llm_get_str(run.final, "error_code"), "STREAM_TRUNCATED");
	unit_stream_free(&run);
}

static void
test_stream_oversize_event(void)
{
	LlmStream  *s = llm_stream_new(LLM_OPENAI, NULL, NULL);
	size_t		chunk = 1024 * 1024;
	char	   *buf = malloc(chunk);
	struct json_object *r;
	int			rc = 0;
	int			i;

	memset(buf, 'a', chunk);
	CHECK_INT(llm_stream_feed(s, "data: ", 6), 0);
	for (i = 0; i < 17 && rc == 0; i++)
		rc = llm_stream_feed(s, buf, chunk);
	CHECK_INT(rc, -1);
	CHECK_INT(i, 16);			/* fails on the chunk that crosses 16 MB */
	CHECK_INT(llm_stream_feed(s, "\n\n", 2), -1);
	r = llm_stream_finish(s, 200);
	CHECK_STR(llm_get_str(r, "error_code"), "MALFORMED_RESPONSE");
	CHECK(strstr(llm_get_str(r, "error_message"), "exceeds 16777216 bytes") != NULL);
	json_object_put(r);
	llm_stream_free(s);
	free(buf);
}

static void
test_stream_bad_json_event(void)
{
	UnitStreamRun run;
	static const char body[] = "data: {\"choices\": [\n\ndata: [DONE]\n\n";

	unit_stream(LLM_OPENAI, body, sizeof(body) - 1, 0, 200, &run);
	CHECK(run.feed_failed);
	CHECK_JSON(run.final, "{'error_code':'MALFORMED_RESPONSE','error_message':'stream event is not a JSON object: truncated JSON'}");
	unit_stream_free(&run);
}

/*
 * llm_stream_free releases what a stream holds at any point: here after a
 * tool call was started but never finished.
 */
static void
test_stream_free_midway(void)
{
	LlmStream  *s = llm_stream_new(LLM_ANTHROPIC, NULL, NULL);
	static const char body[] =
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"c\",\"usage\":{\"input_tokens\":3}}}\n\n"
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":{}}}\n\n"
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\"}}\n\n";

	CHECK_INT(llm_stream_feed(s, body, sizeof(body) - 1), 0);
	llm_stream_free(s);
	llm_stream_free(NULL);
}

static jmp_buf jump_env;

static void
jump_cb(struct json_object *partial, void *arg)
{
	(void) partial;
	(*(int *) arg)++;
	longjmp(jump_env, 1);
}

/*
 * A partial callback that leaves by longjmp (as ereport would) leaves the
 * stream freeable without leaks: run under LeakSanitizer / valgrind.
 */
static void
test_stream_longjmp_from_callback(void)
{
	static const char body[] =
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n"
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"}}]}\n\n";
	static int	calls;
	static LlmStream *s;

	calls = 0;
	s = llm_stream_new(LLM_OPENAI, jump_cb, &calls);
	if (setjmp(jump_env) == 0)
	{
		llm_stream_feed(s, body, sizeof(body) - 1);
		unit_fail(__FILE__, __LINE__, "callback did not run");
	}
	CHECK_INT(calls, 1);
	llm_stream_free(s);
}

/*
 * Every prefix of each provider's fixture stream ends either truncated or
 * (once the finish reason is in) complete; never malformed, never a crash.
 */
static void
test_stream_every_prefix(void)
{
	static const char *const files[] = {"openai_stream_tools.sse",
	"gemini_stream_tools.sse", "anthropic_stream_tools.sse"};
	static const LlmProvider provs[] = {LLM_OPENAI, LLM_GEMINI, LLM_ANTHROPIC};
	int			f;

	for (f = 0; f < 3; f++)
	{
		size_t		len;
		size_t		k;
		char	   *body = unit_read(files[f], &len);
		int			complete = 0;

		for (k = 0; k <= len; k++)
		{
			UnitStreamRun run;
			const char *code;

			unit_stream(provs[f], body, k, 0, 200, &run);
			code = llm_get_str(run.final, "error_code");
			if (code == NULL)
			{
				complete++;
				CHECK(llm_get_str(run.final, "finish_reason") != NULL);
			}
			else if (strcmp(code, "STREAM_TRUNCATED") != 0)
				unit_fail(__FILE__, __LINE__, "%s prefix %zu: %s", files[f], k, code);
			else if (complete > 0)
				unit_fail(__FILE__, __LINE__, "%s prefix %zu: truncated after complete",
						  files[f], k);
			unit_stream_free(&run);
		}
		CHECK(complete > 0);
		free(body);
	}
}

/*
 * A request's serialization copies the memo of a kept message and prints
 * the rest: byte for byte what printing the whole body gives, whatever the
 * body holds at its first two levels (nulls, numbers, strings with
 * escapes, empty containers, nested objects) and wherever memos sit.
 */
static void
test_request_compact_memos(void)
{
	const char *text =
		"{\"model\":\"m\",\"empty\":{},\"none\":null,\"t\":0.25,\"n\":12,"
		"\"q\\\"k\\\\\":\"a/b \\u00e9\\n\",\"opts\":{\"x\":[1,2,{}],\"y\":true},"
		"\"messages\":[{\"role\":\"system\",\"content\":\"s\"},"
		"{\"role\":\"user\",\"content\":\"caf\\u00e9 \\\"q\\\" \\\\ /\"},"
		"{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c1\",\"args\":{\"a\":1.5e300}}]},"
		"[],null,3]}";
	struct json_object *body = json_tokener_parse(text);
	struct json_object *msgs;
	char	   *want;
	char	   *got;
	size_t		i;

	CHECK(body != NULL);
	want = llm_json_compact(body);
	got = llm_request_compact(body);
	CHECK_STR(got, want);
	free(got);

	/* memos on every object message: their text is copied */
	CHECK(json_object_object_get_ex(body, "messages", &msgs));
	for (i = 0; i < json_object_array_length(msgs); i++)
	{
		struct json_object *m = json_object_array_get_idx(msgs, i);

		if (json_object_is_type(m, json_type_object))
		{
			CHECK_INT(llm_msg_memo_set(m), 0);
			CHECK(llm_msg_memo(m) != NULL);
		}
		else
			CHECK(llm_msg_memo(m) == NULL);
	}
	/* the first print fills the memos' text, the second copies it */
	for (i = 0; i < 2; i++)
	{
		got = llm_request_compact(body);
		CHECK_STR(got, want);
		free(got);
	}
	CHECK(llm_msg_memo(json_object_array_get_idx(msgs, 1))->text != NULL);

	/* a memo is what is copied: a doctored one shows in the output */
	{
		LlmMsgMemo *m = llm_msg_memo(json_object_array_get_idx(msgs, 0));

		free(m->text);
		m->text = strdup("{\"memo\":1}");
		m->len = strlen(m->text);
		got = llm_request_compact(body);
		CHECK(strstr(got, "\"messages\":[{\"memo\":1},{\"role\":\"user\"") != NULL);
		free(got);
	}
	/* doubles carry their text as userdata: never taken for memos */
	{
		struct json_object *d = json_object_new_double_s(1.0, "1.0");

		CHECK(llm_msg_memo(d) == NULL);
		CHECK_INT(llm_msg_memo_set(d), -1);
		json_object_put(d);
	}
	free(want);
	json_object_put(body);
}

/*
 * A request printed through a text memo copies the text of the elements
 * that are the objects the previous request had at the same index, in
 * runs: byte for byte what printing the whole body gives, across requests
 * that keep, replace, add, drop and move messages, a changed object in
 * front (a new system message), and with other members around the array.
 */
static struct json_object *
memo_body(struct json_object **pool, const int *pick, int n)
{
	struct json_object *body = json_object_new_object();
	struct json_object *msgs = json_object_new_array();
	int			i;

	json_object_object_add(body, "model", json_object_new_string("m"));
	json_object_object_add(body, "messages", msgs);
	for (i = 0; i < n; i++)
		json_object_array_add(msgs, pick[i] < 0 ? NULL : json_object_get(pool[pick[i]]));
	json_object_object_add(body, "tools", json_object_new_array());
	return body;
}

static void
test_request_compact_text_memo(void)
{
	struct json_object *pool[8];
	/* requests as indexes into pool: -1 is JSON null */
	static const int reqs[][7] = {
		{0, 1, 2, 3, -9},
		{0, 1, 2, 3, 4, -9},
		{5, 1, 2, 3, 4, 6, -9},	/* another first message, one more */
		{5, 1, 3, 2, 4, 6, -9},	/* two swapped: copied around them */
		{5, 1, -1, 2, -9},		/* a null, fewer */
		{7, -9},
		{-9},
		{0, 1, 2, 3, 4, 5, 6}
	};
	LlmTextMemo memo = {0};
	size_t		r;
	int			i;

	for (i = 0; i < 8; i++)
	{
		char		buf[64];

		snprintf(buf, sizeof(buf), "{\"role\":\"user\",\"content\":\"m%d \\u00e9\"}", i);
		pool[i] = json_tokener_parse(buf);
		CHECK(pool[i] != NULL);
		if (i % 2 == 0)
			CHECK_INT(llm_msg_memo_set(pool[i]), 0);
	}
	for (r = 0; r < sizeof(reqs) / sizeof(reqs[0]); r++)
	{
		int			n = 0;
		struct json_object *body;
		char	   *want;
		char	   *got;

		while (n < 7 && reqs[r][n] != -9)
			n++;
		body = memo_body(pool, reqs[r], n);
		want = llm_json_compact(body);
		got = llm_request_compact_memo(body, "messages", &memo);
		CHECK_STR(got, want);
		CHECK_INT((int) memo.n, n);
		free(got);
		free(want);
		json_object_put(body);
	}
	/* the memo's text is what is copied: a doctored one shows */
	{
		struct json_object *body = memo_body(pool, reqs[7], 7);

		memo.text[0] = 'X';
		{
			char	   *got = llm_request_compact_memo(body, "messages", &memo);

			CHECK(strncmp(got, "{\"model\":\"m\",\"messages\":[X", 26) == 0);
			free(got);
		}
		json_object_put(body);
	}
	llm_text_memo_free(&memo);
	CHECK_INT((int) memo.n, 0);
	for (i = 0; i < 8; i++)
		json_object_put(pool[i]);
}

const UnitTest common_tests[] = {
	{"provider_names", test_provider_names},
	{"urls", test_urls},
	{"call_ids", test_call_ids},
	{"json_parse_strict", test_json_parse_strict},
	{"json_nul_replaced", test_json_nul_replaced},
	{"invalid_contents", test_invalid_contents},
	{"invalid_spec", test_invalid_spec},
	{"error_message_truncated", test_error_message_truncated},
	{"malformed_never_echoes", test_malformed_never_echoes},
	{"http_error_without_json", test_http_error_without_json},
	{"stream_not_sse", test_stream_not_sse},
	{"stream_oversize_event", test_stream_oversize_event},
	{"stream_bad_json_event", test_stream_bad_json_event},
	{"stream_free_midway", test_stream_free_midway},
	{"stream_longjmp_from_callback", test_stream_longjmp_from_callback},
	{"stream_every_prefix", test_stream_every_prefix},
	{"request_compact_memos", test_request_compact_memos},
	{"request_compact_text_memo", test_request_compact_text_memo},
	{NULL, NULL}
};
