/*-------------------------------------------------------------------------
 *
 * test_anthropic.c
 *	  Unit tests of the Anthropic Messages adapter.
 *
 * IDENTIFICATION
 *	  test/unit/test_anthropic.c
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
	struct json_object *r = llm_parse_response(LLM_ANTHROPIC, status, text,
											   strlen(text));

	json_object_put(b);
	return r;
}

static void
test_request_golden(void)
{
	struct json_object *got = unit_build_fixture(LLM_ANTHROPIC, "claude-sonnet-4-5", 0);
	struct json_object *want = unit_load("anthropic_request.json");

	CHECK_JSON_OBJ(got, want);
	json_object_put(got);
	got = unit_build_fixture(LLM_ANTHROPIC, "claude-sonnet-4-5", 1);
	json_object_object_add(want, "stream", json_object_new_boolean(1));
	CHECK_JSON_OBJ(got, want);
	json_object_put(got);
	json_object_put(want);
}

static void
test_request_merge_and_order(void)
{
	char	   *err = NULL;
	struct json_object *got;

	/*
	 * user text then a tool result in one merged user turn: results first;
	 * an empty model content does not split the user run; default
	 * max_tokens.
	 */
	got = unit_build(LLM_ANTHROPIC,
					 "[{'role':'model','parts':[{'function_call':{'name':'f','args':{'a':1}}}]},"
					 "{'role':'user','parts':[{'text':'For context: x'}]},"
					 "{'role':'model','parts':[{'text':'','thought':true}]},"
					 "{'role':'user','parts':[{'function_response':{'name':'f','response':{'ok':1}}},{'text':''}]},"
					 "{'role':'model','parts':[{'text':'done'}]},"
					 "{'role':'model','parts':[{'text':'really'}]}]", &err);
	CHECK_JSON(got, "{'model':'m','max_tokens':4096,'messages':["
			   "{'role':'assistant','content':[{'type':'tool_use','id':'call_1','name':'f','input':{'a':1}}]},"
			   "{'role':'user','content':[{'type':'tool_result','tool_use_id':'call_1','content':'{\\'ok\\':1}'},"
			   "{'type':'text','text':'For context: x'}]},"
			   "{'role':'assistant','content':[{'type':'text','text':'done'},{'type':'text','text':'really'}]}]}");
	CHECK(err == NULL);
	json_object_put(got);
}

static void
test_request_media(void)
{
	char	   *err = NULL;
	struct json_object *got;

	got = unit_build(LLM_ANTHROPIC,
					 "[{'role':'user','parts':[{'inline_data':{'mime_type':'application/pdf','data':'JVBE'}},"
					 "{'inline_data':{'mime_type':'image/webp','data':'UklG'}}]}]", &err);
	CHECK_JSON(got, "{'model':'m','max_tokens':4096,'messages':[{'role':'user','content':["
			   "{'type':'document','source':{'type':'base64','media_type':'application/pdf','data':'JVBE'}},"
			   "{'type':'image','source':{'type':'base64','media_type':'image/webp','data':'UklG'}}]}]}");
	json_object_put(got);
	got = unit_build(LLM_ANTHROPIC,
					 "[{'role':'user','parts':[{'inline_data':{'mime_type':'image/tiff','data':'AA'}}]}]", &err);
	CHECK(got == NULL);
	CHECK(err && strstr(err, "contents[0].parts[0]: inline data of type \"image/tiff\"") != NULL);
	free(err);
	err = NULL;
	got = unit_build(LLM_ANTHROPIC,
					 "[{'role':'model','parts':[{'function_response':{'name':'f','response':{}}}]}]", &err);
	CHECK(got == NULL);
	CHECK(err && strstr(err, "a model content cannot hold this kind of part") != NULL);
	free(err);
}

static void
test_parse_text_and_tools(void)
{
	struct json_object *r = parse(200, "{'id':'msg_1','type':'message','role':'assistant','model':'claude-sonnet-4-5-20250929',"
								  "'content':[{'type':'thinking','thinking':'hmm','signature':'x'},"
								  "{'type':'text','text':'Checking.'},"
								  "{'type':'tool_use','id':'toolu_1','name':'get_weather','input':{'city':'Paris'}},"
								  "{'type':'tool_use','id':'toolu_2','name':'get_time','input':{}},"
								  "{'type':'server_tool_use','id':'s','name':'web_search','input':{}}],"
								  "'stop_reason':'tool_use','stop_sequence':null,"
								  "'usage':{'input_tokens':100,'cache_creation_input_tokens':20,'cache_read_input_tokens':30,'output_tokens':40}}");

	/* the tokens written to the cache: for the ledger, taken out there */
	CHECK_JSON(r, "{'content':{'role':'model','parts':[{'text':'hmm','thought':true,'thought_signature':'x'},{'text':'Checking.'},"
			   "{'function_call':{'id':'toolu_1','name':'get_weather','args':{'city':'Paris'}}},"
			   "{'function_call':{'id':'toolu_2','name':'get_time','args':{}}}]},"
			   "'usage_metadata':{'cache_creation_token_count':20,'cached_content_token_count':30,"
			   "'prompt_token_count':150,'candidates_token_count':40,'total_token_count':190},"
			   "'model_version':'claude-sonnet-4-5-20250929','finish_reason':'STOP'}");
	CHECK_INT(llm_cache_take_creation(r), 20);
	CHECK(llm_get(llm_get_obj(r, "usage_metadata"), "cache_creation_token_count") == NULL);
	CHECK_INT(llm_cache_take_creation(r), -1);
	json_object_put(r);
	r = parse(200, "{'content':[{'type':'tool_use','name':'f'}],'stop_reason':'tool_use'}");
	CHECK_INT(STRIP_IDS(r), 1);
	CHECK_JSON(r, "{'content':{'role':'model','parts':[{'function_call':{'id':'GEN','name':'f','args':{}}}]},'finish_reason':'STOP'}");
	json_object_put(r);
	r = parse(200, "{'content':[{'type':'tool_use','id':'t','name':'f','input':'x'}]}");
	CHECK_STR(llm_get_str(r, "error_code"), "MALFORMED_FUNCTION_CALL");
	json_object_put(r);
}

static void
test_parse_stop_reasons(void)
{
	static const char *const cases[][2] = {
		{"end_turn", "STOP"}, {"stop_sequence", "STOP"}, {"max_tokens", "MAX_TOKENS"},
		{"refusal", "SAFETY"}, {"pause_turn", "OTHER"}
	};
	size_t		i;

	for (i = 0; i < 5; i++)
	{
		char		body[200];
		struct json_object *r;

		snprintf(body, sizeof(body),
				 "{\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"stop_reason\":\"%s\"}",
				 cases[i][0]);
		r = llm_parse_response(LLM_ANTHROPIC, 200, body, strlen(body));
		CHECK_STR(llm_get_str(r, "finish_reason"), cases[i][1]);
		CHECK(llm_get(r, "error_code") == NULL);
		json_object_put(r);
	}
	{
		struct json_object *r = parse(200, "{'content':[],'stop_reason':'refusal'}");

		CHECK_JSON(r, "{'finish_reason':'SAFETY','error_code':'SAFETY','error_message':'the model returned no content'}");
		json_object_put(r);
	}
}

static void
test_parse_errors(void)
{
	static const char *const cases[][3] = {
		{"400", "invalid_request_error", "max_tokens: Field required"},
		{"401", "authentication_error", "invalid x-api-key"},
		{"429", "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"},
		{"500", "api_error", "Internal server error"},
		{"529", "overloaded_error", "Overloaded"}
	};
	size_t		i;
	struct json_object *r;

	for (i = 0; i < 5; i++)
	{
		char		body[300];

		snprintf(body, sizeof(body),
				 "{\"type\":\"error\",\"error\":{\"type\":\"%s\",\"message\":\"%s\"},\"request_id\":\"req_1\"}",
				 cases[i][1], cases[i][2]);
		r = llm_parse_response(LLM_ANTHROPIC, atol(cases[i][0]), body, strlen(body));
		CHECK_STR(llm_get_str(r, "error_code"), cases[i][1]);
		CHECK_STR(llm_get_str(r, "error_message"), cases[i][2]);
		CHECK(llm_get(r, "content") == NULL);
		json_object_put(r);
	}
	r = parse(200, "{'type':'message','role':'assistant'}");
	CHECK_JSON(r, "{'error_code':'MALFORMED_RESPONSE','error_message':'model response has no content array'}");
	json_object_put(r);
}

static void
test_stream_tools(void)
{
	size_t		len;
	char	   *body = unit_read("anthropic_stream_tools.sse", &len);
	static const size_t steps[] = {0, 1, 13};
	size_t		i;

	for (i = 0; i < 3; i++)
	{
		UnitStreamRun run;

		unit_stream(LLM_ANTHROPIC, body, len, steps[i], 200, &run);
		CHECK(!run.feed_failed);
		CHECK_JSON(run.final, "{'content':{'role':'model','parts':[{'text':'Okay, let me check.'},"
				   "{'function_call':{'id':'toolu_01','name':'get_weather','args':{'location':'San Francisco, CA','unit':'fahrenheit'}}},"
				   "{'function_call':{'id':'toolu_02','name':'get_time','args':{}}}]},"
				   "'usage_metadata':{'prompt_token_count':472,'candidates_token_count':89,'total_token_count':561},"
				   "'model_version':'claude-sonnet-4-5-20250929','finish_reason':'STOP','turn_complete':true}");
		CHECK_JSON(run.partials, "[{'partial':true,'content':{'role':'model','parts':[{'text':'Okay'}]}},"
				   "{'partial':true,'content':{'role':'model','parts':[{'text':', let me check.'}]}}]");
		unit_stream_free(&run);
	}
	free(body);
}

static void
test_stream_truncated(void)
{
	size_t		len;
	char	   *body = unit_read("anthropic_stream_tools.sse", &len);
	char	   *cut = strstr(body, "event: message_delta");
	UnitStreamRun run;

	unit_stream(LLM_ANTHROPIC, body, (size_t) (cut - body), 0, 200, &run);
	CHECK_JSON(run.final, "{'error_code':'STREAM_TRUNCATED','error_message':'model response stream ended before the response was complete'}");
	unit_stream_free(&run);
	free(body);
}

/*
 * Thinking (docs/models.md, "Thinking"): signed thoughts of a model content
 * go back as thinking blocks, a thought without text as redacted_thinking,
 * unsigned ones and a user content's not at all; config "thinking" is
 * extended thinking, max_tokens raised above the budget; a stream's
 * signature_delta and redacted_thinking block make the same parts.
 */
static void
test_thinking(void)
{
	LlmRequestSpec spec = {0};
	struct json_object *body;
	char	   *err = NULL;
	UnitStreamRun run;
	static const char stream[] =
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"c\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n"
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n"
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Let me\"}}\n\n"
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\" see\"}}\n\n"
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EqQB\"}}\n\n"
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"redacted_thinking\",\"data\":\"EmwK\"}}\n\n"
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n"
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n"
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n"
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\n"
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

	spec.provider = LLM_ANTHROPIC;
	spec.model = "m";
	spec.contents = J("[{'role':'user','parts':[{'text':'q'},{'text':'u','thought':true,'thought_signature':'s0'}]},"
					  "{'role':'model','parts':[{'text':'plan','thought':true,'thought_signature':'s1'},"
					  "{'text':'','thought':true,'thought_signature':'r1'},{'text':'other','thought':true},"
					  "{'function_call':{'id':'t1','name':'f','args':{}}}]},"
					  "{'role':'user','parts':[{'function_response':{'id':'t1','name':'f','response':{}}}]}]");
	spec.config = J("{'thinking':{'budget_tokens':2048},'max_output_tokens':1000}");
	body = llm_build_request_object(&spec, &err);
	CHECK(body != NULL);
	CHECK_JSON(llm_get(body, "thinking"), "{'type':'enabled','budget_tokens':2048}");
	CHECK_JSON(llm_get(body, "max_tokens"), "3048");
	CHECK_JSON(llm_get(body, "messages"),
			   "[{'role':'user','content':[{'type':'text','text':'q'}]},"
			   "{'role':'assistant','content':[{'type':'thinking','thinking':'plan','signature':'s1'},"
			   "{'type':'redacted_thinking','data':'r1'},{'type':'tool_use','id':'t1','name':'f','input':{}}]},"
			   "{'role':'user','content':[{'type':'tool_result','tool_use_id':'t1','content':'{}'}]}]");
	json_object_put(body);
	json_object_put(spec.config);
	/* an effort is a budget; 0 is none; a bad setting fails the build */
	spec.config = J("{'thinking':{'effort':'medium'}}");
	body = llm_build_request_object(&spec, &err);
	CHECK_JSON(llm_get(body, "thinking"), "{'type':'enabled','budget_tokens':8192}");
	CHECK_JSON(llm_get(body, "max_tokens"), "12288");
	json_object_put(body);
	json_object_put(spec.config);
	spec.config = J("{'thinking':{'budget_tokens':0}}");
	body = llm_build_request_object(&spec, &err);
	CHECK(llm_get(body, "thinking") == NULL);
	json_object_put(body);
	json_object_put(spec.config);
	spec.config = J("{'thinking':{'effort':'max'}}");
	CHECK(llm_build_request_object(&spec, &err) == NULL);
	CHECK(err && strstr(err, "\"effort\" must be") != NULL);
	free(err);
	json_object_put(spec.config);
	json_object_put(spec.contents);

	unit_stream(LLM_ANTHROPIC, stream, sizeof(stream) - 1, 7, 200, &run);
	CHECK_JSON(llm_get(run.final, "content"),
			   "{'role':'model','parts':[{'text':'Let me see','thought':true,'thought_signature':'EqQB'},"
			   "{'text':'','thought':true,'thought_signature':'EmwK'},{'text':'Hi'}]}");
	unit_stream_free(&run);
}

static void
test_stream_error_event(void)
{
	static const char body[] =
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"c\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n"
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n"
		"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
	static const char http[] =
		"{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow down\"}}";
	UnitStreamRun run;

	unit_stream(LLM_ANTHROPIC, body, sizeof(body) - 1, 0, 200, &run);
	CHECK(run.feed_failed);
	CHECK_JSON(run.final, "{'error_code':'overloaded_error','error_message':'Overloaded'}");
	CHECK_INT(json_object_array_length(run.partials), 1);
	unit_stream_free(&run);
	/* the HTTP error path */
	unit_stream(LLM_ANTHROPIC, http, strlen(http), 4, 429, &run);
	CHECK_JSON(run.final, "{'error_code':'rate_limit_error','error_message':'slow down'}");
	unit_stream_free(&run);
}

static void
test_stream_protocol_errors(void)
{
	static const char wrong_kind[] =
		"data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
		"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n";
	static const char ignored[] =
		"data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"s\",\"name\":\"web_search\"}}\n\n"
		"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"q\\\":1}\"}}\n\n"
		"data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":{}}}\n\n"
		"data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":\"}}\n\n"
		"data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":5}}\n\n";
	UnitStreamRun run;

	unit_stream(LLM_ANTHROPIC, wrong_kind, sizeof(wrong_kind) - 1, 0, 200, &run);
	CHECK(run.feed_failed);
	CHECK_JSON(run.final, "{'error_code':'MALFORMED_RESPONSE','error_message':'input_json_delta for a block that is not tool_use'}");
	unit_stream_free(&run);
	/* server tool blocks are skipped; cut tool input is malformed */
	unit_stream(LLM_ANTHROPIC, ignored, sizeof(ignored) - 1, 0, 200, &run);
	CHECK(!run.feed_failed);
	CHECK_JSON(run.final, "{'error_code':'MALFORMED_FUNCTION_CALL','error_message':'arguments of function call \\'f\\' are not a JSON object: truncated JSON'}");
	unit_stream_free(&run);
}

/*
 * A streamed refusal (stop_reason "refusal", no content) ends as the
 * non-streamed one does: the SAFETY error.
 */
static void
test_stream_refusal(void)
{
	static const char body[] =
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n"
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"refusal\"},\"usage\":{\"output_tokens\":1}}\n\n"
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
	UnitStreamRun run;

	unit_stream(LLM_ANTHROPIC, body, sizeof(body) - 1, 0, 200, &run);
	CHECK_STR(llm_get_str(run.final, "finish_reason"), "SAFETY");
	CHECK_STR(llm_get_str(run.final, "error_code"), "SAFETY");
	unit_stream_free(&run);
}

/*
 * What a content made, reused in later requests wherever that content
 * stands, gives the same bytes (neighbours of one role merged as when it
 * is converted): every content but those with a call or response without
 * an id, whose ids depend on the contents before.  Those after a reused
 * content with ids still get the same ids (content 13 answers 12's t3).
 */
static void
test_request_reuse_history(void)
{
	CHECK(llm_reuses_contents(LLM_ANTHROPIC));
	CHECK(CHECK_REUSE(LLM_ANTHROPIC,
					  unit_reuse_history,
					  "11100111111010") > 0);
}

/*
 * Contents whose calls or responses have no ids of their own are given
 * call_<n> over the request: their blocks are kept per content and ids
 * (LlmRequestSpec.idmsgs), and taken again when a later request gives them
 * the same ids, byte for byte the same request.
 */
static void
test_request_id_reuse(void)
{
	int			before = unit_idreuse_hits;

	/* tool turns as the runner sends them: the adk- ids stripped */
	CHECK(CHECK_REUSE(LLM_ANTHROPIC,
					  "[{'role':'user','parts':[{'text':'go'}]},"
	"{'role':'model','parts':[{'function_call':{'name':'probe','args':{'n':7}}}]},"
	"{'role':'user','parts':[{'function_response':{'name':'probe','response':{'ok':true}}}]},"
	"{'role':'model','parts':[{'text':'again'},{'function_call':{'name':'probe','args':{'n':7}}}]},"
	"{'role':'user','parts':[{'function_response':{'name':'probe','response':{'ok':true}}}]},"
	"{'role':'user','parts':[{'text':'and you?'}]},"
	"{'role':'model','parts':[{'function_call':{'name':'probe','args':{'n':7}}}]},"
	"{'role':'user','parts':[{'function_response':{'name':'probe','response':{'ok':true}}}]},"
	"{'role':'model','parts':[{'text':'done'}]}]",
					  "100001001") > 0);
	CHECK(unit_idreuse_hits > before);
}

/*
 * A request resumed at a content boundary (the request memo of
 * generate.c): only where no message is pending -- before the content
 * that starts a message of the other role -- and then the same bytes as
 * the whole build, with the ids as they stood there.
 */
static void
test_request_resume(void)
{
	/* 14 contents; merged: 5 and 6 (user), 9 and 10 (user) */
	CHECK(CHECK_RESUME(LLM_ANTHROPIC, unit_reuse_history) >= 8);
	CHECK(CHECK_RESUME(LLM_ANTHROPIC,
					   "[{'role':'user','parts':[{'text':'a'}]},"
					   "{'role':'user','parts':[{'text':'b'}]},"
					   "{'role':'model','parts':[{'function_call':{'name':'f','args':{}}}]},"
					   "{'role':'user','parts':[{'function_response':{'name':'f','response':{}}}]},"
					   "{'role':'user','parts':[{'text':'c'}]}]") == 2);
}

/*
 * Prompt caching (LlmRequestSpec.cache_key): breakpoints on the last tool,
 * the system prompt and the last two messages, four in all; the messages
 * kept for the next request (LlmRequestSpec.reuse) are left unmarked, and
 * so is the next request built from them but for its own last two.
 */
static void
test_request_cache_breakpoints(void)
{
	struct json_object *contents = J("[{'role':'user','parts':[{'text':'one'}]},"
									 "{'role':'model','parts':[{'text':'two'}]},"
									 "{'role':'user','parts':[{'text':'three'}]}]");
	struct json_object *tools = J("[{'name':'f','description':'d'},{'name':'g'}]");
	struct json_object *reuse[3] = {NULL, NULL, NULL};
	LlmRequestSpec spec;
	struct json_object *body;
	char	   *err = NULL;
	size_t		i;

	memset(&spec, 0, sizeof(spec));
	spec.provider = LLM_ANTHROPIC;
	spec.model = "m";
	spec.contents = contents;
	spec.tools = tools;
	spec.system_instruction = "be brief";
	spec.reuse = reuse;
	spec.cache_key = "k";
	body = llm_build_request_object(&spec, &err);
	CHECK(body != NULL && err == NULL);
	CHECK_JSON(body, "{'model':'m','max_tokens':4096,"
			   "'system':[{'type':'text','text':'be brief','cache_control':{'type':'ephemeral'}}],"
			   "'messages':[{'role':'user','content':[{'type':'text','text':'one'}]},"
			   "{'role':'assistant','content':[{'type':'text','text':'two','cache_control':{'type':'ephemeral'}}]},"
			   "{'role':'user','content':[{'type':'text','text':'three','cache_control':{'type':'ephemeral'}}]}],"
			   "'tools':[{'name':'f','description':'d','input_schema':{'type':'object','properties':{}}},"
			   "{'name':'g','input_schema':{'type':'object','properties':{}},'cache_control':{'type':'ephemeral'}}]}");
	json_object_put(body);
	for (i = 0; i < 3; i++)
		CHECK(reuse[i] != NULL &&
			  strstr(json_object_to_json_string(reuse[i]), "cache_control") == NULL);

	/* the next request takes the kept messages: only its own are marked */
	json_object_array_add(contents, J("{'role':'model','parts':[{'text':'four'}]}"));
	{
		struct json_object *reuse2[4] = {json_object_get(reuse[0]), json_object_get(reuse[1]),
		json_object_get(reuse[2]), NULL};

		spec.reuse = reuse2;
		spec.tools = NULL;
		spec.system_instruction = NULL;
		body = llm_build_request_object(&spec, &err);
		CHECK(body != NULL && err == NULL);
		CHECK_JSON(body, "{'model':'m','max_tokens':4096,"
				   "'messages':[{'role':'user','content':[{'type':'text','text':'one'}]},"
				   "{'role':'assistant','content':[{'type':'text','text':'two'}]},"
				   "{'role':'user','content':[{'type':'text','text':'three','cache_control':{'type':'ephemeral'}}]},"
				   "{'role':'assistant','content':[{'type':'text','text':'four','cache_control':{'type':'ephemeral'}}]}]}");
		json_object_put(body);
		for (i = 0; i < 4; i++)
		{
			CHECK(reuse2[i] != NULL &&
				  strstr(json_object_to_json_string(reuse2[i]), "cache_control") == NULL);
			json_object_put(reuse2[i]);
		}
	}
	/* off: nothing marked, the system prompt a string */
	spec.cache_key = NULL;
	spec.reuse = NULL;
	spec.system_instruction = "be brief";
	body = llm_build_request_object(&spec, &err);
	CHECK(body != NULL && strstr(json_object_to_json_string(body), "cache_control") == NULL);
	CHECK_STR(llm_get_str(body, "system"), "be brief");
	json_object_put(body);
	for (i = 0; i < 3; i++)
		json_object_put(reuse[i]);
	json_object_put(contents);
	json_object_put(tools);
}

const UnitTest anthropic_tests[] = {
	{"request_cache_breakpoints", test_request_cache_breakpoints},
	{"request_resume", test_request_resume},
	{"request_reuse_history", test_request_reuse_history},
	{"request_id_reuse", test_request_id_reuse},
	{"stream_refusal", test_stream_refusal},
	{"thinking", test_thinking},
	{"request_golden", test_request_golden},
	{"request_merge_and_order", test_request_merge_and_order},
	{"request_media", test_request_media},
	{"parse_text_and_tools", test_parse_text_and_tools},
	{"parse_stop_reasons", test_parse_stop_reasons},
	{"parse_errors", test_parse_errors},
	{"stream_tools", test_stream_tools},
	{"stream_truncated", test_stream_truncated},
	{"stream_error_event", test_stream_error_event},
	{"stream_protocol_errors", test_stream_protocol_errors},
	{NULL, NULL}
};
