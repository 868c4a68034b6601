/*-------------------------------------------------------------------------
 *
 * test_openai.c
 *	  Unit tests of the OpenAI Chat Completions adapter.
 *
 * IDENTIFICATION
 *	  test/unit/test_openai.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

static struct json_object *parse(long status, const char *squoted);
static void check_stream_all_ways(const char *body, size_t len,
								  const char *final, const char *partials);

/*
 * Parse a response body written with ' for ".
 */
static struct json_object *
parse(long status, const char *squoted)
{
	struct json_object *b = J(squoted);
	const char *text = json_object_to_json_string(b);
	struct json_object *r = llm_parse_response(LLM_OPENAI, status, text, strlen(text));

	json_object_put(b);
	return r;
}

static void
test_request_golden(void)
{
	struct json_object *got = unit_build_fixture(LLM_OPENAI, "gpt-4o-mini", 0);
	struct json_object *want = unit_load("openai_request.json");

	CHECK_JSON_OBJ(got, want);
	json_object_put(got);
	json_object_put(want);
}

static void
test_request_stream(void)
{
	LlmRequestSpec spec;
	struct json_object *contents = J("[{'role':'user','parts':[{'text':'hi'}]}]");
	struct json_object *tools = J("[]");
	struct json_object *got;
	char	   *body;

	memset(&spec, 0, sizeof(spec));
	spec.provider = LLM_OPENAI;
	spec.model = "gpt";
	spec.contents = contents;
	spec.tools = tools;
	spec.stream = 1;
	body = llm_build_request(&spec, NULL);
	got = json_tokener_parse(body);
	CHECK_JSON(got, "{'model':'gpt','messages':[{'role':'user','content':'hi'}],'stream':true,'stream_options':{'include_usage':true}}");
	json_object_put(got);
	free(body);
	json_object_put(contents);
	json_object_put(tools);
}

static void
test_request_id_synthesis(void)
{
	struct json_object *got = unit_build(LLM_OPENAI,
										 "[{'role':'model','parts':["
										 "{'function_call':{'name':'f','args':{'n':1}}},"
										 "{'function_call':{'name':'f','args':{'n':2}}},"
										 "{'function_call':{'name':'g'}}]},"
										 "{'role':'user','parts':["
										 "{'function_response':{'name':'g','response':{'r':'g'}}},"
										 "{'function_response':{'name':'f','response':{'r':1}}},"
										 "{'function_response':{'name':'f','response':{'r':2}}},"
										 "{'function_response':{'name':'h','response':{}}}]}]",
										 NULL);

	CHECK_JSON(got, "{'model':'m','messages':["
			   "{'role':'assistant','content':null,'tool_calls':["
			   "{'id':'call_1','type':'function','function':{'name':'f','arguments':'{\\'n\\':1}'}},"
			   "{'id':'call_2','type':'function','function':{'name':'f','arguments':'{\\'n\\':2}'}},"
			   "{'id':'call_3','type':'function','function':{'name':'g','arguments':'{}'}}]},"
			   "{'role':'tool','tool_call_id':'call_3','content':'{\\'r\\':\\'g\\'}'},"
			   "{'role':'tool','tool_call_id':'call_1','content':'{\\'r\\':1}'},"
			   "{'role':'tool','tool_call_id':'call_2','content':'{\\'r\\':2}'},"
			   "{'role':'tool','tool_call_id':'call_4','content':'{}'}]}");
	json_object_put(got);
}

/*
 * Messages a content made in one request, handed to the next in its place
 * (LlmRequestSpec.reuse), give the same bytes; only contents without calls
 * and responses (whose ids are counted over the request) hand theirs on.
 */
static void
test_request_reuse(void)
{
	LlmRequestSpec spec;
	struct json_object *contents = unit_load("history.json");
	struct json_object *tools = unit_load("tools.json");
	struct json_object *config = unit_load("config.json");
	struct json_object *holes;
	struct json_object *reuse[7] = {0};
	char	   *plain;
	char	   *first;
	char	   *again;
	size_t		i;
	int			n = 0;

	CHECK(llm_reuses_contents(LLM_OPENAI));
	CHECK_INT(json_object_array_length(contents), 7);
	memset(&spec, 0, sizeof(spec));
	spec.provider = LLM_OPENAI;
	spec.model = "gpt-4o-mini";
	spec.contents = contents;
	spec.tools = tools;
	spec.config = config;
	spec.system_instruction = "You are helpful.";
	plain = llm_build_request(&spec, NULL);

	spec.reuse = reuse;
	first = llm_build_request(&spec, NULL);
	CHECK_STR(first, plain);
	/* contents 1 and 2 hold calls and responses */
	for (i = 0; i < 7; i++)
		CHECK((reuse[i] != NULL) == (i != 1 && i != 2));

	/* the reused contents are not read: JSON null in their place */
	holes = json_object_new_array();
	for (i = 0; i < 7; i++)
		json_object_array_add(holes, reuse[i] ? NULL :
							  json_object_get(json_object_array_get_idx(contents, i)));
	spec.contents = holes;
	again = llm_build_request(&spec, NULL);
	CHECK_STR(again, plain);
	for (i = 0; i < 7; i++)
		if (reuse[i] != NULL)
		{
			n += json_object_array_length(reuse[i]);
			json_object_put(reuse[i]);
		}
	/* contents 0, 3, 4, 5 and 6 make one message each */
	CHECK_INT(n, 5);
	free(plain);
	free(first);
	free(again);
	json_object_put(holes);
	json_object_put(contents);
	json_object_put(tools);
	json_object_put(config);
}

static void
test_request_parts(void)
{
	char	   *err = NULL;
	struct json_object *got;

	/* text with tool results: tool messages first; thought text dropped */
	got = unit_build(LLM_OPENAI,
					 "[{'role':'user','parts':[{'text':'see'},"
					 "{'function_response':{'id':'x','name':'f','response':{'ok':true}}},"
					 "{'inline_data':{'mime_type':'application/pdf','data':'JVBE'}},"
					 "{'text':'hmm','thought':true}]},"
					 "{'role':'model','parts':[{'text':'a'},{'text':'b'},{'text':'c','thought':true}]},"
					 "{'role':'model','parts':[{'text':'','thought':true}]}]", &err);
	CHECK_JSON(got, "{'model':'m','messages':["
			   "{'role':'tool','tool_call_id':'x','content':'{\\'ok\\':true}'},"
			   "{'role':'user','content':[{'type':'text','text':'see'},"
			   "{'type':'file','file':{'filename':'document.pdf','file_data':'data:application/pdf;base64,JVBE'}}]},"
			   "{'role':'assistant','content':'ab'}]}");
	json_object_put(got);
	CHECK(err == NULL);
	got = unit_build(LLM_OPENAI, "[{'role':'user','parts':[{'inline_data':{'mime_type':'audio/ogg','data':'AA'}}]}]",
					 &err);
	CHECK(got == NULL);
	CHECK(err && strstr(err, "inline data of type \"audio/ogg\" cannot be sent") != NULL);
	free(err);
	err = NULL;
	got = unit_build(LLM_OPENAI, "[{'role':'model','parts':[{'inline_data':{'mime_type':'image/png','data':'AA'}}]}]",
					 &err);
	CHECK(got == NULL);
	CHECK(err && strstr(err, "contents[0].parts[0]: a model content can only hold") != NULL);
	free(err);
	err = NULL;
	got = unit_build(LLM_OPENAI, "[{'role':'user','parts':[{'function_call':{'name':'f'}}]}]", &err);
	CHECK(got == NULL);
	CHECK(err && strstr(err, "a user content cannot hold a function call") != NULL);
	free(err);
}

static void
test_parse_text(void)
{
	struct json_object *r = parse(200, "{'id':'chatcmpl-1','object':'chat.completion','model':'gpt-4o-mini-2024-07-18',"
								  "'choices':[{'index':0,'message':{'role':'assistant','content':'Hello!','refusal':null},"
								  "'logprobs':null,'finish_reason':'stop'}],"
								  "'usage':{'prompt_tokens':10,'completion_tokens':3,'total_tokens':13}}");

	CHECK_JSON(r, "{'content':{'role':'model','parts':[{'text':'Hello!'}]},"
			   "'usage_metadata':{'prompt_token_count':10,'candidates_token_count':3,'total_token_count':13},"
			   "'model_version':'gpt-4o-mini-2024-07-18','finish_reason':'STOP'}");
	json_object_put(r);
}

static void
test_parse_tool_calls(void)
{
	struct json_object *r = parse(200, "{'model':'gpt-4o','choices':[{'index':0,'message':{'role':'assistant','content':null,"
								  "'reasoning_content':'need weather',"
								  "'tool_calls':["
								  "{'id':'call_a','type':'function','function':{'name':'get_weather','arguments':'{\\'city\\': \\'Paris\\'}'}},"
								  "{'id':'call_b','type':'function','function':{'name':'get_time','arguments':''}},"
								  "{'type':'function','function':{'name':'noid','arguments':{'x':[1]}}}]},"
								  "'finish_reason':'tool_calls'}],"
								  "'usage':{'prompt_tokens':5,'completion_tokens':7,'total_tokens':12,"
								  "'prompt_tokens_details':{'cached_tokens':2},'completion_tokens_details':{'reasoning_tokens':4}}}");

	CHECK_INT(STRIP_IDS(r), 1);
	/* reasoning tokens are thoughts, not candidates, as Gemini counts them */
	CHECK_JSON(r, "{'content':{'role':'model','parts':["
			   "{'text':'need weather','thought':true},"
			   "{'function_call':{'id':'call_a','name':'get_weather','args':{'city':'Paris'}}},"
			   "{'function_call':{'id':'call_b','name':'get_time','args':{}}},"
			   "{'function_call':{'id':'GEN','name':'noid','args':{'x':[1]}}}]},"
			   "'usage_metadata':{'prompt_token_count':5,'candidates_token_count':3,'total_token_count':12,"
			   "'cached_content_token_count':2,'thoughts_token_count':4},"
			   "'model_version':'gpt-4o','finish_reason':'STOP'}");
	json_object_put(r);
}

static void
test_parse_bad_arguments(void)
{
	struct json_object *r;

	r = parse(200, "{'choices':[{'message':{'tool_calls':[{'id':'c','function':{'name':'f','arguments':'{\\'city\\': '}}]},'finish_reason':'tool_calls'}]}");
	CHECK_JSON(r, "{'error_code':'MALFORMED_FUNCTION_CALL','error_message':'arguments of function call \\'f\\' are not a JSON object: truncated JSON'}");
	json_object_put(r);
	r = parse(200, "{'choices':[{'message':{'tool_calls':[{'id':'c','function':{'name':'f','arguments':'[1,2]'}}]}}]}");
	CHECK_STR(llm_get_str(r, "error_code"), "MALFORMED_FUNCTION_CALL");
	json_object_put(r);
	r = parse(200, "{'choices':[{'message':{'tool_calls':[{'id':'c','function':{'arguments':'{}'}}]}}]}");
	CHECK_STR(llm_get_str(r, "error_code"), "MALFORMED_FUNCTION_CALL");
	json_object_put(r);
}

static void
test_parse_finish_reasons(void)
{
	struct json_object *r;

	r = parse(200, "{'choices':[{'message':{'content':'cut'},'finish_reason':'length'}]}");
	CHECK_JSON(r, "{'content':{'role':'model','parts':[{'text':'cut'}]},'finish_reason':'MAX_TOKENS'}");
	json_object_put(r);
	r = parse(200, "{'choices':[{'message':{'content':null},'finish_reason':'content_filter'}]}");
	CHECK_JSON(r, "{'finish_reason':'SAFETY','error_code':'SAFETY','error_message':'the model returned no content'}");
	json_object_put(r);
	r = parse(200, "{'choices':[{'message':{'content':'x'},'finish_reason':'something_new'}]}");
	CHECK_STR(llm_get_str(r, "finish_reason"), "OTHER");
	json_object_put(r);
	r = parse(200, "{'choices':[{'message':{'content':''},'finish_reason':'stop'}]}");
	CHECK_JSON(r, "{'finish_reason':'STOP'}");
	json_object_put(r);
	r = parse(200, "{'choices':[{'message':{'content':null,'refusal':'I cannot help.'},'finish_reason':'stop'}]}");
	CHECK_JSON(r, "{'content':{'role':'model','parts':[{'text':'I cannot help.'}]},'finish_reason':'STOP'}");
	json_object_put(r);
}

static void
test_parse_errors(void)
{
	struct json_object *r;

	r = parse(400, "{'error':{'message':'Invalid value for temperature.','type':'invalid_request_error','param':'temperature','code':null}}");
	CHECK_JSON(r, "{'error_code':'invalid_request_error','error_message':'Invalid value for temperature.'}");
	json_object_put(r);
	r = parse(401, "{'error':{'message':'Incorrect API key provided.','type':'invalid_request_error','param':null,'code':'invalid_api_key'}}");
	CHECK_JSON(r, "{'error_code':'invalid_api_key','error_message':'Incorrect API key provided.'}");
	json_object_put(r);
	r = parse(429, "{'error':{'message':'Rate limit reached for gpt-4o.','type':'requests','param':null,'code':'rate_limit_exceeded'}}");
	CHECK_JSON(r, "{'error_code':'rate_limit_exceeded','error_message':'Rate limit reached for gpt-4o.'}");
	json_object_put(r);
	r = parse(500, "{'error':{'message':'The server had an error while processing your request.','type':'server_error','param':null,'code':null}}");
	CHECK_JSON(r, "{'error_code':'server_error','error_message':'The server had an error while processing your request.'}");
	json_object_put(r);
	r = parse(500, "{'error':{}}");
	CHECK_JSON(r, "{'error_code':'HTTP_500','error_message':'model provider returned HTTP status 500'}");
	json_object_put(r);
	/* an error body with status 200, and the shapes of compatible servers */
	r = parse(200, "{'error':{'message':'overloaded','type':'server_error'}}");
	CHECK_JSON(r, "{'error_code':'server_error','error_message':'overloaded'}");
	json_object_put(r);
	r = parse(404, "{'error':'model \\'x\\' not found'}");
	CHECK_JSON(r, "{'error_code':'HTTP_404','error_message':'model \\'x\\' not found'}");
	json_object_put(r);
	r = parse(400, "{'object':'error','message':'max_tokens is too large','type':'BadRequestError','code':400}");
	CHECK_JSON(r, "{'error_code':'BadRequestError','error_message':'max_tokens is too large'}");
	json_object_put(r);
	r = parse(200, "{'object':'chat.completion','choices':[]}");
	CHECK_JSON(r, "{'error_code':'MALFORMED_RESPONSE','error_message':'model response has no choices[0].message'}");
	json_object_put(r);
}

static void
test_parse_malformed(void)
{
	static const char utf8[] = "{\"choices\":[{\"message\":{\"content\":\"caf\xe9\"}}]}";
	static const char trunc[] = "{\"choices\":[{\"message\":";
	struct json_object *r;
	char		deep[200];
	int			i;

	r = llm_parse_response(LLM_OPENAI, 200, utf8, sizeof(utf8) - 1);
	CHECK_JSON(r, "{'error_code':'MALFORMED_RESPONSE','error_message':'model response is not valid JSON: invalid UTF-8'}");
	json_object_put(r);
	r = llm_parse_response(LLM_OPENAI, 200, trunc, sizeof(trunc) - 1);
	CHECK_JSON(r, "{'error_code':'MALFORMED_RESPONSE','error_message':'model response is not valid JSON: truncated JSON'}");
	json_object_put(r);
	/* LLM_MAX_WIRE_DEPTH + 1 levels: the object plus as many arrays */
	strcpy(deep, "{\"choices\":");
	for (i = 0; i < LLM_MAX_WIRE_DEPTH; i++)
		strcat(deep, "[");
	for (i = 0; i < LLM_MAX_WIRE_DEPTH; i++)
		strcat(deep, "]");
	strcat(deep, "}");
	r = llm_parse_response(LLM_OPENAI, 200, deep, strlen(deep));
	CHECK_JSON(r, "{'error_code':'MALFORMED_RESPONSE','error_message':'model response is not valid JSON: nesting too deep'}");
	json_object_put(r);
	/* one level less parses, and is then refused for its shape */
	memmove(deep + 11, deep + 12, strlen(deep + 12) + 1);
	memmove(deep + 10 + LLM_MAX_WIRE_DEPTH, deep + 11 + LLM_MAX_WIRE_DEPTH,
			strlen(deep + 11 + LLM_MAX_WIRE_DEPTH) + 1);
	r = llm_parse_response(LLM_OPENAI, 200, deep, strlen(deep));
	CHECK_JSON(r, "{'error_code':'MALFORMED_RESPONSE','error_message':'model response has no choices[0].message'}");
	json_object_put(r);
	/* invalid UTF-8 in an error body: no quoting */
	r = llm_parse_response(LLM_OPENAI, 429, utf8, sizeof(utf8) - 1);
	CHECK_JSON(r, "{'error_code':'HTTP_429','error_message':'model provider returned HTTP status 429'}");
	json_object_put(r);
}

/*
 * The fixture stream gives the same final response and partials whether
 * fed whole, byte by byte or in 7-byte pieces.
 */
static void
check_stream_all_ways(const char *body, size_t len, const char *final,
					  const char *partials)
{
	static const size_t steps[] = {0, 1, 7};
	size_t		i;

	for (i = 0; i < 3; i++)
	{
		UnitStreamRun run;

		unit_stream(LLM_OPENAI, body, len, steps[i], 200, &run);
		CHECK(!run.feed_failed);
		STRIP_IDS(run.final);
		CHECK_JSON(run.final, final);
		CHECK_JSON(run.partials, partials);
		unit_stream_free(&run);
	}
}

static void
test_stream_tools(void)
{
	size_t		len;
	char	   *body = unit_read("openai_stream_tools.sse", &len);

	check_stream_all_ways(body, len,
						  "{'content':{'role':'model','parts':[{'text':'Let me check.'},"
						  "{'function_call':{'id':'call_P','name':'get_weather','args':{'city':'Paris'}}},"
						  "{'function_call':{'id':'call_L','name':'get_weather','args':{'city':'London'}}}]},"
						  "'usage_metadata':{'prompt_token_count':82,'candidates_token_count':41,'total_token_count':123,"
						  "'cached_content_token_count':0,'thoughts_token_count':0},"
						  "'model_version':'gpt-4o-mini-2024-07-18','finish_reason':'STOP','turn_complete':true}",
						  "[{'partial':true,'content':{'role':'model','parts':[{'text':'Let'}]}},"
						  "{'partial':true,'content':{'role':'model','parts':[{'text':' me check.'}]}}]");
	free(body);
}

static void
test_stream_truncated(void)
{
	size_t		len;
	char	   *body = unit_read("openai_stream_tools.sse", &len);
	char	   *cut = strstr(body, "{\\\"ci");
	UnitStreamRun run;

	/* cut in the middle of the tool call arguments */
	unit_stream(LLM_OPENAI, body, (size_t) (cut - body), 3, 200, &run);
	CHECK(!run.feed_failed);
	CHECK_JSON(run.final, "{'error_code':'STREAM_TRUNCATED','error_message':'model response stream ended before the response was complete'}");
	CHECK_INT(json_object_array_length(run.partials), 2);
	unit_stream_free(&run);
	/* without [DONE] but after the finish reason the response is whole */
	cut = strstr(body, "data: [DONE]");
	unit_stream(LLM_OPENAI, body, (size_t) (cut - body), 0, 200, &run);
	CHECK_STR(llm_get_str(run.final, "finish_reason"), "STOP");
	CHECK(llm_get(run.final, "error_code") == NULL);
	unit_stream_free(&run);
	free(body);
}

static void
test_stream_error_event(void)
{
	static const char body[] =
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n"
		"data: {\"error\":{\"message\":\"The server had an error\",\"type\":\"server_error\",\"code\":null}}\n\n"
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" more\"}}]}\n\n"
		"data: [DONE]\n\n";
	UnitStreamRun run;

	unit_stream(LLM_OPENAI, body, sizeof(body) - 1, 0, 200, &run);
	CHECK(run.feed_failed);
	CHECK_JSON(run.final, "{'error_code':'server_error','error_message':'The server had an error'}");
	CHECK_JSON(run.partials, "[{'partial':true,'content':{'role':'model','parts':[{'text':'Hi'}]}}]");
	unit_stream_free(&run);
}

static void
test_stream_http_error(void)
{
	static const char body[] =
		"{\n  \"error\": {\n    \"message\": \"Rate limit reached\",\n    \"type\": \"requests\",\n"
		"    \"param\": null,\n    \"code\": \"rate_limit_exceeded\"\n  }\n}\n";
	UnitStreamRun run;

	unit_stream(LLM_OPENAI, body, sizeof(body) - 1, 10, 429, &run);
	CHECK_JSON(run.final, "{'error_code':'rate_limit_exceeded','error_message':'Rate limit reached'}");
	CHECK_INT(json_object_array_length(run.partials), 0);
	unit_stream_free(&run);
	unit_stream(LLM_OPENAI, "upstream timeout", 16, 0, 504, &run);
	CHECK_JSON(run.final, "{'error_code':'HTTP_504','error_message':'model provider returned HTTP status 504: upstream timeout'}");
	unit_stream_free(&run);
}

static void
test_stream_bad_arguments(void)
{
	static const char body[] =
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":\"}}]}}]}\n\n"
		"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
		"data: [DONE]\n\n";
	UnitStreamRun run;

	unit_stream(LLM_OPENAI, body, sizeof(body) - 1, 0, 200, &run);
	CHECK_JSON(run.final, "{'error_code':'MALFORMED_FUNCTION_CALL','error_message':'arguments of function call \\'f\\' are not a JSON object: truncated JSON'}");
	unit_stream_free(&run);
}

/*
 * Servers that reuse index 0 for parallel calls (new id) or send no index
 * at all still give separate calls; reasoning deltas become thought text.
 */
static void
test_stream_compat_servers(void)
{
	static const char body[] =
		": keep-alive\n\ndata:\n\n"
		"data: {\"model\":\"llama\",\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"hmm\"}}]}\n\n"
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}}]}\n\n"
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"b\",\"function\":{\"name\":\"g\",\"arguments\":\"{\\\"x\\\":1}\"}}]}}]}\n\n"
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"c\",\"function\":{\"name\":\"h\",\"arguments\":\"{\\\"y\\\"\"}}]}}]}\n\n"
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\":2}\"}}]}}]}\n\n"
		"data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"ignored second choice\"}}]}\n\n"
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"done\"},\"finish_reason\":\"stop\"}]}\n\n";
	UnitStreamRun run;

	unit_stream(LLM_OPENAI, body, sizeof(body) - 1, 0, 200, &run);
	CHECK_JSON(run.final, "{'content':{'role':'model','parts':[{'text':'hmm','thought':true},"
			   "{'function_call':{'id':'a','name':'f','args':{}}},"
			   "{'function_call':{'id':'b','name':'g','args':{'x':1}}},"
			   "{'function_call':{'id':'c','name':'h','args':{'y':2}}},"
			   "{'text':'done'}]},"
			   "'model_version':'llama','finish_reason':'STOP','turn_complete':true}");
	CHECK_JSON(run.partials, "[{'partial':true,'content':{'role':'model','parts':[{'text':'hmm','thought':true}]}},"
			   "{'partial':true,'content':{'role':'model','parts':[{'text':'done'}]}}]");
	unit_stream_free(&run);
}

/*
 * A streamed refusal (delta.refusal) reaches the response as the
 * non-streamed one (message.refusal) does: as its text.
 */
static void
test_stream_refusal(void)
{
	static const char body[] =
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"refusal\":\"\"}}]}\n\n"
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"refusal\":\"I cannot \"}}]}\n\n"
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"refusal\":\"help.\"}}]}\n\n"
		"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
		"data: [DONE]\n\n";
	UnitStreamRun run;

	unit_stream(LLM_OPENAI, body, sizeof(body) - 1, 0, 200, &run);
	CHECK(!run.feed_failed);
	CHECK_JSON(run.final, "{'content':{'role':'model','parts':[{'text':'I cannot help.'}]},"
			   "'finish_reason':'STOP','turn_complete':true}");
	unit_stream_free(&run);
}

/*
 * The same over more histories: only contents without calls and responses
 * are kept.
 */
static void
test_request_reuse_history(void)
{
	CHECK(llm_reuses_contents(LLM_OPENAI));
	CHECK(CHECK_REUSE(LLM_OPENAI,
					  unit_reuse_history,
					  "10000100111000") > 0);
}

/* idmsgs for test_request_id_reuse: what the last build made, by index */
typedef struct IdMsgsStore
{
	char	   *sig[8];
	struct json_object *msgs[8];
	int			hits;
	int			asked;
} IdMsgsStore;

static struct json_object *
store_idmsgs(void *arg, size_t i, const char *sig)
{
	IdMsgsStore *st = (IdMsgsStore *) arg;

	st->asked++;
	if (i < 8 && st->sig[i] != NULL && strcmp(st->sig[i], sig) == 0)
	{
		st->hits++;
		return st->msgs[i];
	}
	return NULL;
}

/*
 * Contents with calls and responses are given their ids first; the
 * messages they made with the same ids are added instead of made again,
 * and the request is byte for byte the same.  The same call in two places
 * gets other ids, so its messages are told apart by them; errors are those
 * of the plain build.
 */
static void
test_request_id_reuse(void)
{
	static const char contents[] =
		"[{'role':'user','parts':[{'text':'go'}]},"
		"{'role':'model','parts':[{'function_call':{'name':'probe','args':{'n':7}}}]},"
		"{'role':'user','parts':[{'function_response':{'name':'probe','response':{'ok':true}}}]},"
		"{'role':'model','parts':[{'text':'again'},{'function_call':{'name':'probe','args':{'n':7}}}]},"
		"{'role':'user','parts':[{'function_response':{'name':'probe','response':{'ok':true}}}]},"
		"{'role':'model','parts':[{'function_call':{'id':'own-1','name':'probe','args':{}}}]},"
		"{'role':'user','parts':[{'function_response':{'id':'own-1','name':'probe','response':{}}}]},"
		"{'role':'model','parts':[{'text':'done'}]}]";
	LlmRequestSpec spec;
	LlmIdReuse slots[8];
	IdMsgsStore st;
	struct json_object *reuse[8] = {0};
	char	   *plain;
	char	   *first;
	char	   *again;
	char	   *err1 = NULL;
	char	   *err2 = NULL;
	size_t		i;

	memset(&spec, 0, sizeof(spec));
	memset(&st, 0, sizeof(st));
	memset(slots, 0, sizeof(slots));
	spec.provider = LLM_OPENAI;
	spec.model = "m";
	spec.contents = J(contents);
	plain = llm_build_request(&spec, NULL);
	CHECK(plain != NULL);

	spec.reuse = reuse;
	spec.idreuse = slots;
	spec.idmsgs = store_idmsgs;
	spec.idarg = &st;
	first = llm_build_request(&spec, NULL);
	CHECK_STR(first, plain);
	CHECK_INT(st.hits, 0);
	/* contents 1-6 hold calls or responses: made, with their ids */
	for (i = 0; i < 8; i++)
	{
		CHECK((slots[i].made != NULL) == (i >= 1 && i <= 6));
		CHECK((reuse[i] != NULL) == (i == 0 || i == 7));
		st.sig[i] = slots[i].made_sig;
		st.msgs[i] = slots[i].made;
		slots[i].made_sig = NULL;
		slots[i].made = NULL;
	}
	CHECK_STR(st.sig[1], "6:call_1");
	CHECK_STR(st.sig[2], "6:call_1");
	CHECK_STR(st.sig[3], "6:call_2");
	CHECK_STR(st.sig[5], "5:own-1");

	/* again: every content with ids is taken from the store */
	for (i = 0; i < 8; i++)
		if (reuse[i] != NULL)
		{
			json_object_put(reuse[i]);
			reuse[i] = NULL;
		}
	st.asked = 0;
	again = llm_build_request(&spec, NULL);
	CHECK_STR(again, plain);
	CHECK_INT(st.asked, 6);
	CHECK_INT(st.hits, 6);
	for (i = 0; i < 8; i++)
		CHECK(slots[i].made == NULL);

	/* the same errors, at the same part */
	for (i = 0; i < 8; i++)
	{
		json_object_put(reuse[i]);
		reuse[i] = NULL;
	}
	json_object_put(spec.contents);
	spec.contents = J("[{'role':'model','parts':[{'function_call':{'name':'f','args':{}}},"
					  "{'inline_data':{'mime_type':'image/png','data':'AAAA'}}]}]");
	spec.reuse = NULL;
	spec.idreuse = NULL;
	CHECK(llm_build_request(&spec, &err1) == NULL);
	spec.reuse = reuse;
	spec.idreuse = slots;
	CHECK(llm_build_request(&spec, &err2) == NULL);
	CHECK(err1 != NULL && err2 != NULL);
	if (err1 && err2)
		CHECK_STR(err2, err1);

	for (i = 0; i < 8; i++)
	{
		free(st.sig[i]);
		json_object_put(st.msgs[i]);
		free(slots[i].made_sig);
		json_object_put(slots[i].made);
		json_object_put(reuse[i]);
	}
	free(err1);
	free(err2);
	free(plain);
	free(first);
	free(again);
	json_object_put(spec.contents);
}

/*
 * A request resumed at any content boundary (the request memo of
 * generate.c) gives the bytes of the whole build, whatever contents follow
 * (ids as they stood there: calls still open are answered after it).
 */
static void
test_request_resume(void)
{
	CHECK_INT(CHECK_RESUME(LLM_OPENAI, unit_reuse_history), 14);
}

/*
 * Structured output: the config's response_schema in each adapter --
 * OpenAI's json_schema response format (strict only for a schema strict
 * mode takes), Gemini's responseSchema or responseJsonSchema with the JSON
 * MIME type, nothing for Anthropic (the runner gives it a tool instead).
 */
static struct json_object *
build_with_config(LlmProvider p, const char *config)
{
	LlmRequestSpec spec;
	struct json_object *contents = J("[{'role':'user','parts':[{'text':'hi'}]}]");
	struct json_object *cfg = J(config);
	char	   *err = NULL;
	char	   *body;
	struct json_object *obj;

	memset(&spec, 0, sizeof(spec));
	spec.provider = p;
	spec.model = "m";
	spec.contents = contents;
	spec.config = cfg;
	body = llm_build_request(&spec, &err);
	CHECK(body != NULL && err == NULL);
	obj = body ? json_tokener_parse(body) : NULL;
	free(body);
	free(err);
	json_object_put(contents);
	json_object_put(cfg);
	return obj;
}

static void
test_request_response_schema(void)
{
	struct json_object *got;

	got = build_with_config(LLM_OPENAI,
							"{'response_schema':{'type':'object','properties':{'a':{'type':'array','items':"
							"{'type':'object','properties':{'b':{'type':'integer'}},'required':['b'],"
							"'additionalProperties':false}}},'required':['a'],'additionalProperties':false}}");
	CHECK_JSON(json_object_object_get(got, "response_format"),
			   "{'type':'json_schema','json_schema':{'name':'response','schema':{'type':'object',"
			   "'properties':{'a':{'type':'array','items':{'type':'object','properties':{'b':{'type':'integer'}},"
			   "'required':['b'],'additionalProperties':false}}},'required':['a'],'additionalProperties':false},"
			   "'strict':true}}");
	json_object_put(got);
	/* an optional property, an open nested object: not strict */
	got = build_with_config(LLM_OPENAI,
							"{'response_schema':{'type':'object','properties':{'a':{'type':'string'}},"
							"'additionalProperties':false}}");
	CHECK_JSON(json_object_object_get(json_object_object_get(got, "response_format"), "json_schema"),
			   "{'name':'response','schema':{'type':'object','properties':{'a':{'type':'string'}},"
			   "'additionalProperties':false},'strict':false}");
	json_object_put(got);
	got = build_with_config(LLM_OPENAI, "{'response_schema':{'type':'array','items':{'type':'object'}}}");
	CHECK_JSON(json_object_object_get(json_object_object_get(json_object_object_get(got, "response_format"),
																"json_schema"), "strict"), "false");
	json_object_put(got);
	/* no schema, no response format; Anthropic never sends one */
	got = build_with_config(LLM_OPENAI, "{'temperature':0.5}");
	CHECK(json_object_object_get(got, "response_format") == NULL);
	json_object_put(got);
	got = build_with_config(LLM_ANTHROPIC, "{'response_schema':{'type':'object'}}");
	CHECK(json_object_object_get(got, "response_format") == NULL &&
		  json_object_object_get(got, "response_schema") == NULL &&
		  json_object_object_get(got, "output_format") == NULL);
	json_object_put(got);
	/* Gemini: Schema when it fits that subset, else JSON Schema */
	got = build_with_config(LLM_GEMINI,
							"{'temperature':0.5,'response_schema':{'type':'object','properties':{'a':{'type':'string'}}}}");
	CHECK_JSON(json_object_object_get(got, "generationConfig"),
			   "{'temperature':0.5,'responseMimeType':'application/json',"
			   "'responseSchema':{'type':'object','properties':{'a':{'type':'string'}}}}");
	json_object_put(got);
	got = build_with_config(LLM_GEMINI,
							"{'response_schema':{'type':'object','properties':{'a':{'type':'string'}},"
							"'additionalProperties':false}}");
	CHECK_JSON(json_object_object_get(got, "generationConfig"),
			   "{'responseMimeType':'application/json','responseJsonSchema':{'type':'object',"
			   "'properties':{'a':{'type':'string'}},'additionalProperties':false}}");
	json_object_put(got);
}

const UnitTest openai_tests[] = {
	{"request_resume", test_request_resume},
	{"request_reuse_history", test_request_reuse_history},
	{"stream_refusal", test_stream_refusal},
	{"request_golden", test_request_golden},
	{"request_stream", test_request_stream},
	{"request_id_synthesis", test_request_id_synthesis},
	{"request_reuse", test_request_reuse},
	{"request_id_reuse", test_request_id_reuse},
	{"request_parts", test_request_parts},
	{"request_response_schema", test_request_response_schema},
	{"parse_text", test_parse_text},
	{"parse_tool_calls", test_parse_tool_calls},
	{"parse_bad_arguments", test_parse_bad_arguments},
	{"parse_finish_reasons", test_parse_finish_reasons},
	{"parse_errors", test_parse_errors},
	{"parse_malformed", test_parse_malformed},
	{"stream_tools", test_stream_tools},
	{"stream_truncated", test_stream_truncated},
	{"stream_error_event", test_stream_error_event},
	{"stream_http_error", test_stream_http_error},
	{"stream_bad_arguments", test_stream_bad_arguments},
	{"stream_compat_servers", test_stream_compat_servers},
	{NULL, NULL}
};
