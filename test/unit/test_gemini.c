/*-------------------------------------------------------------------------
 *
 * test_gemini.c
 *	  Unit tests of the Gemini generateContent adapter.
 *
 * IDENTIFICATION
 *	  test/unit/test_gemini.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

static struct json_object *parse(long status, const char *squoted);

static struct json_object *
parse(long status, const char *squoted)
{
	struct json_object *b = J(squoted);
	const char *text = json_object_to_json_string(b);
	struct json_object *r = llm_parse_response(LLM_GEMINI, status, text, strlen(text));

	json_object_put(b);
	return r;
}

static void
test_request_golden(void)
{
	struct json_object *got = unit_build_fixture(LLM_GEMINI, "gemini-2.5-flash", 0);
	struct json_object *want = unit_load("gemini_request.json");

	CHECK_JSON_OBJ(got, want);
	json_object_put(got);
	/* streaming changes only the URL */
	got = unit_build_fixture(LLM_GEMINI, "gemini-2.5-flash", 1);
	CHECK_JSON_OBJ(got, want);
	json_object_put(got);
	json_object_put(want);
}

static void
test_request_minimal(void)
{
	char	   *err = NULL;
	struct json_object *got;

	/* no system instruction, tools or config; empty parts dropped */
	got = unit_build(LLM_GEMINI,
					 "[{'role':'user','parts':[{'text':''}]},"
					 "{'role':'user','parts':[{'text':'hi'},{'text':'','thought_signature':'s'}]},"
					 "{'role':'model','parts':[]}]", &err);
	CHECK_JSON(got, "{'contents':[{'role':'user','parts':[{'text':'hi'},{'text':'','thoughtSignature':'s'}]}]}");
	CHECK(err == NULL);
	json_object_put(got);
	/* any media type goes through */
	got = unit_build(LLM_GEMINI,
					 "[{'role':'user','parts':[{'inline_data':{'mime_type':'audio/ogg','data':'T2dn'}}]}]",
					 &err);
	CHECK_JSON(got, "{'contents':[{'role':'user','parts':[{'inlineData':{'mimeType':'audio/ogg','data':'T2dn'}}]}]}");
	json_object_put(got);
}

static void
test_request_schema_choice(void)
{
	LlmRequestSpec spec;
	struct json_object *contents = J("[]");
	struct json_object *tools = J("[{'name':'a','parameters':{'type':'object','properties':{'x':{'type':'array','items':{'type':'integer','minimum':0}},"
								  "'y':{'anyOf':[{'type':'string'},{'type':'number'}]}}}},"
								  "{'name':'b','parameters':{'type':'object','properties':{'x':{'type':'array','items':{'const':1}}}}},"
								  "{'name':'c','parameters':{'$schema':'https://json-schema.org/draft/2020-12/schema','type':'object'}}]");
	char	   *body;
	struct json_object *got;

	memset(&spec, 0, sizeof(spec));
	spec.provider = LLM_GEMINI;
	spec.model = "g";
	spec.contents = contents;
	spec.tools = tools;
	body = llm_build_request(&spec, NULL);
	got = json_tokener_parse(body);
	CHECK_JSON(got, "{'contents':[],'tools':[{'functionDeclarations':["
			   "{'name':'a','parameters':{'type':'object','properties':{'x':{'type':'array','items':{'type':'integer','minimum':0}},"
			   "'y':{'anyOf':[{'type':'string'},{'type':'number'}]}}}},"
			   "{'name':'b','parametersJsonSchema':{'type':'object','properties':{'x':{'type':'array','items':{'const':1}}}}},"
			   "{'name':'c','parametersJsonSchema':{'$schema':'https://json-schema.org/draft/2020-12/schema','type':'object'}}]}]}");
	json_object_put(got);
	free(body);
	json_object_put(contents);
	json_object_put(tools);
}

static void
test_parse_text(void)
{
	struct json_object *r = parse(200, "{'candidates':[{'content':{'parts':[{'text':'Hello'},{'text':' there'}],'role':'model'},"
								  "'finishReason':'STOP','index':0,'safetyRatings':[]}],"
								  "'usageMetadata':{'promptTokenCount':4,'candidatesTokenCount':2,'totalTokenCount':6,"
								  "'promptTokensDetails':[{'modality':'TEXT','tokenCount':4}]},"
								  "'modelVersion':'gemini-2.5-flash','responseId':'abc'}");

	CHECK_JSON(r, "{'content':{'role':'model','parts':[{'text':'Hello'},{'text':' there'}]},"
			   "'usage_metadata':{'prompt_token_count':4,'candidates_token_count':2,'total_token_count':6},"
			   "'model_version':'gemini-2.5-flash','finish_reason':'STOP'}");
	json_object_put(r);
}

static void
test_parse_function_calls(void)
{
	struct json_object *r = parse(200, "{'candidates':[{'content':{'role':'model','parts':["
								  "{'text':'plan','thought':true},"
								  "{'functionCall':{'name':'get_weather','args':{'city':'Paris'}},'thoughtSignature':'c2ln'},"
								  "{'functionCall':{'id':'fc-2','name':'get_time'}},"
								  "{'executableCode':{'language':'PYTHON','code':'1'}},"
								  "{'inlineData':{'mimeType':'image/png','data':'iVBO'}}]},"
								  "'finishReason':'STOP'}],"
								  "'usageMetadata':{'promptTokenCount':9,'candidatesTokenCount':3,'totalTokenCount':20,"
								  "'thoughtsTokenCount':8,'cachedContentTokenCount':1}}");

	CHECK_INT(STRIP_IDS(r), 1);
	CHECK_JSON(r, "{'content':{'role':'model','parts':["
			   "{'text':'plan','thought':true},"
			   "{'function_call':{'id':'GEN','name':'get_weather','args':{'city':'Paris'}},'thought_signature':'c2ln'},"
			   "{'function_call':{'id':'fc-2','name':'get_time','args':{}}},"
			   "{'inline_data':{'mime_type':'image/png','data':'iVBO'}}]},"
			   "'usage_metadata':{'prompt_token_count':9,'candidates_token_count':3,'total_token_count':20,"
			   "'thoughts_token_count':8,'cached_content_token_count':1},"
			   "'finish_reason':'STOP'}");
	json_object_put(r);
	r = parse(200, "{'candidates':[{'content':{'parts':[{'functionCall':{'name':'f','args':[1]}}]}}]}");
	CHECK_STR(llm_get_str(r, "error_code"), "MALFORMED_FUNCTION_CALL");
	json_object_put(r);
}

static void
test_parse_finish_reasons(void)
{
	struct json_object *r;

	r = parse(200, "{'candidates':[{'content':{'parts':[{'text':'cut'}]},'finishReason':'MAX_TOKENS'}]}");
	CHECK_JSON(r, "{'content':{'role':'model','parts':[{'text':'cut'}]},'finish_reason':'MAX_TOKENS'}");
	json_object_put(r);
	r = parse(200, "{'candidates':[{'finishReason':'SAFETY','safetyRatings':[]}]}");
	CHECK_JSON(r, "{'finish_reason':'SAFETY','error_code':'SAFETY','error_message':'the model returned no content'}");
	json_object_put(r);
	r = parse(200, "{'candidates':[{'content':{},'finishReason':'MALFORMED_FUNCTION_CALL','finishMessage':'Malformed function call: x'}]}");
	CHECK_JSON(r, "{'finish_reason':'MALFORMED_FUNCTION_CALL','error_code':'MALFORMED_FUNCTION_CALL','error_message':'Malformed function call: x'}");
	json_object_put(r);
	r = parse(200, "{'promptFeedback':{'blockReason':'SAFETY'},'usageMetadata':{'promptTokenCount':3}}");
	CHECK_JSON(r, "{'error_code':'SAFETY','error_message':'the prompt was blocked (SAFETY)'}");
	json_object_put(r);
	r = parse(200, "{'usageMetadata':{'promptTokenCount':3}}");
	CHECK_JSON(r, "{'error_code':'MALFORMED_RESPONSE','error_message':'model response has no candidates'}");
	json_object_put(r);
}

static void
test_parse_errors(void)
{
	struct json_object *r;

	r = parse(400, "{'error':{'code':400,'message':'API key not valid. Please pass a valid API key.','status':'INVALID_ARGUMENT',"
			  "'details':[{'@type':'type.googleapis.com/google.rpc.ErrorInfo','reason':'API_KEY_INVALID'}]}}");
	CHECK_JSON(r, "{'error_code':'INVALID_ARGUMENT','error_message':'API key not valid. Please pass a valid API key.'}");
	json_object_put(r);
	r = parse(401, "{'error':{'code':401,'message':'Request had invalid authentication credentials.','status':'UNAUTHENTICATED'}}");
	CHECK_JSON(r, "{'error_code':'UNAUTHENTICATED','error_message':'Request had invalid authentication credentials.'}");
	json_object_put(r);
	r = parse(429, "{'error':{'code':429,'message':'You exceeded your current quota.','status':'RESOURCE_EXHAUSTED'}}");
	CHECK_JSON(r, "{'error_code':'RESOURCE_EXHAUSTED','error_message':'You exceeded your current quota.'}");
	json_object_put(r);
	r = parse(500, "[{'error':{'code':500,'message':'An internal error has occurred.','status':'INTERNAL'}}]");
	CHECK_JSON(r, "{'error_code':'INTERNAL','error_message':'An internal error has occurred.'}");
	json_object_put(r);
	r = parse(503, "{'error':{'code':503,'message':'The model is overloaded.'}}");
	CHECK_JSON(r, "{'error_code':'HTTP_503','error_message':'The model is overloaded.'}");
	json_object_put(r);
}

static void
test_stream_tools(void)
{
	size_t		len;
	char	   *body = unit_read("gemini_stream_tools.sse", &len);
	static const size_t steps[] = {0, 1, 5};
	size_t		i;

	for (i = 0; i < 3; i++)
	{
		UnitStreamRun run;

		unit_stream(LLM_GEMINI, body, len, steps[i], 200, &run);
		CHECK(!run.feed_failed);
		CHECK_INT(STRIP_IDS(run.final), 1);
		CHECK_JSON(run.final, "{'content':{'role':'model','parts':[{'text':'The weather is nice.'},"
				   "{'function_call':{'id':'GEN','name':'get_weather','args':{'city':'Paris'}},'thought_signature':'c2ln'},"
				   "{'function_call':{'id':'fc-7','name':'get_time','args':{}}}]},"
				   "'usage_metadata':{'prompt_token_count':20,'candidates_token_count':12,'total_token_count':40,'thoughts_token_count':8},"
				   "'model_version':'gemini-2.5-flash','finish_reason':'STOP','turn_complete':true}");
		CHECK_JSON(run.partials, "[{'partial':true,'content':{'role':'model','parts':[{'text':'The weather'}]}},"
				   "{'partial':true,'content':{'role':'model','parts':[{'text':' is nice.'}]}}]");
		unit_stream_free(&run);
	}
	free(body);
}

static void
test_stream_thoughts(void)
{
	static const char body[] =
		"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"think\",\"thought\":true}]}}]}\n\n"
		"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"ing\",\"thought\":true}]}}]}\n\n"
		"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Answer\",\"thoughtSignature\":\"sig\"}]}}]}\n\n"
		"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"\"}]},\"finishReason\":\"MAX_TOKENS\"}]}\n\n";
	UnitStreamRun run;

	unit_stream(LLM_GEMINI, body, sizeof(body) - 1, 0, 200, &run);
	CHECK_JSON(run.final, "{'content':{'role':'model','parts':[{'text':'thinking','thought':true},"
			   "{'text':'Answer','thought_signature':'sig'}]},'finish_reason':'MAX_TOKENS','turn_complete':true}");
	CHECK_INT(json_object_array_length(run.partials), 3);
	unit_stream_free(&run);
}

static void
test_stream_truncated(void)
{
	size_t		len;
	char	   *body = unit_read("gemini_stream_tools.sse", &len);
	char	   *last = strstr(body, "functionCall");
	UnitStreamRun run;

	/* the last chunk, which has the finish reason, never arrives whole */
	unit_stream(LLM_GEMINI, body, (size_t) (last - body), 0, 200, &run);
	CHECK_STR(llm_get_str(run.final, "error_code"), "STREAM_TRUNCATED");
	CHECK_INT(json_object_array_length(run.partials), 2);
	unit_stream_free(&run);
	free(body);
}

static void
test_stream_errors(void)
{
	static const char body[] =
		"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}}]}\r\n\r\n"
		"data: {\"error\":{\"code\":503,\"message\":\"The model is overloaded.\",\"status\":\"UNAVAILABLE\"}}\r\n\r\n";
	static const char blocked[] =
		"data: {\"promptFeedback\":{\"blockReason\":\"PROHIBITED_CONTENT\",\"blockReasonMessage\":\"no\"}}\r\n\r\n";
	static const char http[] =
		"[{\n  \"error\": {\n    \"code\": 429,\n    \"message\": \"Quota exceeded\",\n    \"status\": \"RESOURCE_EXHAUSTED\"\n  }\n}\n]";
	UnitStreamRun run;

	unit_stream(LLM_GEMINI, body, sizeof(body) - 1, 0, 200, &run);
	CHECK(run.feed_failed);
	CHECK_JSON(run.final, "{'error_code':'UNAVAILABLE','error_message':'The model is overloaded.'}");
	unit_stream_free(&run);
	unit_stream(LLM_GEMINI, blocked, sizeof(blocked) - 1, 0, 200, &run);
	CHECK_JSON(run.final, "{'error_code':'PROHIBITED_CONTENT','error_message':'no'}");
	unit_stream_free(&run);
	unit_stream(LLM_GEMINI, http, sizeof(http) - 1, 3, 429, &run);
	CHECK_JSON(run.final, "{'error_code':'RESOURCE_EXHAUSTED','error_message':'Quota exceeded'}");
	unit_stream_free(&run);
}

/*
 * Safety in a stream ends as it does without one: a candidate stopped for
 * SAFETY with no content is the SAFETY error.
 */
static void
test_stream_safety(void)
{
	static const char body[] =
		"data: {\"candidates\":[{\"finishReason\":\"SAFETY\",\"safetyRatings\":[]}]}\r\n\r\n";
	UnitStreamRun run;

	unit_stream(LLM_GEMINI, body, sizeof(body) - 1, 0, 200, &run);
	CHECK_JSON(run.final, "{'finish_reason':'SAFETY','error_code':'SAFETY','error_message':'the model returned no content',"
			   "'turn_complete':true}");
	unit_stream_free(&run);
}

/*
 * What a content made, reused in later requests wherever that content
 * stands, gives the same bytes: every content, as nothing in Gemini's form
 * depends on other contents (ids are sent only when present).
 */
static void
test_request_reuse_history(void)
{
	CHECK(llm_reuses_contents(LLM_GEMINI));
	CHECK(CHECK_REUSE(LLM_GEMINI,
					  unit_reuse_history,
					  "11111111111111") > 0);
}

/*
 * A request resumed at any content boundary (the request memo of
 * generate.c) gives the bytes of the whole build, whatever contents follow
 * (ids as they stood there: calls still open are answered after it).
 */
static void
test_request_resume(void)
{
	CHECK_INT(CHECK_RESUME(LLM_GEMINI, unit_reuse_history), 14);
}

const UnitTest gemini_tests[] = {
	{"request_resume", test_request_resume},
	{"request_reuse_history", test_request_reuse_history},
	{"stream_safety", test_stream_safety},
	{"request_golden", test_request_golden},
	{"request_minimal", test_request_minimal},
	{"request_schema_choice", test_request_schema_choice},
	{"parse_text", test_parse_text},
	{"parse_function_calls", test_parse_function_calls},
	{"parse_finish_reasons", test_parse_finish_reasons},
	{"parse_errors", test_parse_errors},
	{"stream_tools", test_stream_tools},
	{"stream_thoughts", test_stream_thoughts},
	{"stream_truncated", test_stream_truncated},
	{"stream_errors", test_stream_errors},
	{NULL, NULL}
};
