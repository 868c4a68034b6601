/*-------------------------------------------------------------------------
 *
 * llm_thinking.c
 *	  Thinking on the wire (docs/models.md, "Thinking"): the one
 *	  provider-neutral setting, config "thinking", checked and mapped to
 *	  each provider's own.
 *
 * The setting is {"budget_tokens": N} or {"effort": "low" | "medium" |
 * "high"}, either with an optional "include_thoughts" boolean.  Mapped:
 *	- Gemini: generationConfig.thinkingConfig, thinkingBudget (a budget)
 *	  or thinkingLevel (an effort, as Gemini 3 models take it), and
 *	  includeThoughts;
 *	- Anthropic: thinking {"type": "enabled", "budget_tokens"}; an effort
 *	  is the budget llm_thinking_budget() gives it, a budget below the
 *	  API's minimum (1024) is raised to it, and 0 sends no thinking (off,
 *	  the API's default).  The API wants max_tokens above the budget (it
 *	  counts thinking in the output): when max_tokens is not larger, it
 *	  becomes the budget plus max_tokens;
 *	- OpenAI (Chat Completions): reasoning_effort; a budget is the effort
 *	  llm_thinking_effort() gives it.
 * include_thoughts is Gemini's only: Anthropic always answers with its
 * thinking, OpenAI's Chat Completions never.
 *
 * With adk.store_thoughts off, the copy of a request the ledger keeps has
 * the text of the thoughts it sends back emptied
 * (llm_request_empty_thoughts): Anthropic's thinking blocks, Gemini's
 * thought parts (OpenAI's Chat Completions are sent none).  The run that
 * received them sends them back; another run has only what was stored,
 * and Anthropic refuses a tool loop's next request whose assistant
 * message does not begin with its thinking: that request goes without
 * thinking then (llm_thinking_anthropic_fit), as the API advises.
 *
 * IDENTIFICATION
 *	  src/model/llm_thinking.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#define ADK_LLM_INTERNAL
#include "llm.h"

/* Anthropic's smallest budget_tokens */
#define ANTHROPIC_MIN_BUDGET	1024

static const char *const efforts[] = {"low", "medium", "high", NULL};

/* The budget of an effort (Anthropic), and the bounds back (OpenAI) */
static const int64_t effort_budgets[] = {2048, 8192, 24576};
static const int64_t effort_bounds[] = {4096, 16384};

static int	effort_index(const char *effort);
static int	empty_members(struct json_object *list, const char *inner,
						  const char *is, const char *text);

/*
 * Check a "thinking" setting: 0, or -1 and *why (malloc'd) saying what is
 * wrong with it.
 */
int
llm_thinking_check(struct json_object *v, char **why)
{
	struct json_object *budget;
	struct json_object *effort;
	struct json_object *include;
	int64_t		n;

	if (v == NULL || !json_object_is_type(v, json_type_object))
	{
		llm_set_errmsg(why, "must be an object");
		return -1;
	}
	{
		json_object_object_foreach(v, key, val)
		{
			(void) val;
			if (strcmp(key, "budget_tokens") != 0 && strcmp(key, "effort") != 0 &&
				strcmp(key, "include_thoughts") != 0)
			{
				llm_set_errmsg(why, "has an unknown key \"%s\"", key);
				return -1;
			}
		}
	}
	budget = llm_get(v, "budget_tokens");
	effort = llm_get(v, "effort");
	include = llm_get(v, "include_thoughts");
	if ((budget == NULL) == (effort == NULL))
	{
		llm_set_errmsg(why, "needs either \"budget_tokens\" or \"effort\"");
		return -1;
	}
	if (budget != NULL &&
		(!json_object_is_type(budget, json_type_int) ||
		 !llm_get_int(v, "budget_tokens", &n) ||
		 n < 0 || n > LLM_MAX_THINKING_BUDGET))
	{
		llm_set_errmsg(why, "\"budget_tokens\" must be an integer between 0 and %d",
					   LLM_MAX_THINKING_BUDGET);
		return -1;
	}
	if (effort != NULL &&
		(!json_object_is_type(effort, json_type_string) ||
		 effort_index(json_object_get_string(effort)) < 0))
	{
		llm_set_errmsg(why, "\"effort\" must be \"low\", \"medium\" or \"high\"");
		return -1;
	}
	if (include != NULL && !json_object_is_type(include, json_type_boolean))
	{
		llm_set_errmsg(why, "\"include_thoughts\" must be true or false");
		return -1;
	}
	return 0;
}

static int
effort_index(const char *effort)
{
	int			i;

	for (i = 0; efforts[i] != NULL; i++)
		if (strcmp(efforts[i], effort) == 0)
			return i;
	return -1;
}

/*
 * The request's thinking setting, checked: NULL when there is none (or
 * it is JSON null), and -1 on a bad one (errmsg set).
 */
static int
thinking_of(const LlmRequestSpec *spec, struct json_object **out,
			char **errmsg)
{
	char	   *why = NULL;

	*out = llm_get(spec->config, "thinking");
	if (*out == NULL)
		return 0;
	if (llm_thinking_check(*out, &why) < 0)
	{
		llm_set_errmsg(errmsg, "config \"thinking\" %s", why ? why : "is invalid");
		free(why);
		*out = NULL;
		return -1;
	}
	return 0;
}

/* The budget of a checked setting: its own, or its effort's */
int64_t
llm_thinking_budget(struct json_object *thinking)
{
	int64_t		n;

	if (llm_get_int(thinking, "budget_tokens", &n))
		return n;
	return effort_budgets[effort_index(llm_get_str(thinking, "effort"))];
}

/* The effort of a checked setting: its own, or its budget's */
const char *
llm_thinking_effort(struct json_object *thinking)
{
	int64_t		n;
	int			i;

	if (llm_get_str(thinking, "effort") != NULL)
		return llm_get_str(thinking, "effort");
	llm_get_int(thinking, "budget_tokens", &n);
	if (n == 0)
		return "minimal";
	for (i = 0; i < 2; i++)
		if (n < effort_bounds[i])
			return efforts[i];
	return efforts[2];
}

/*
 * Gemini: thinkingConfig into generationConfig gc.  0, or -1 (errmsg).
 */
int
llm_thinking_gemini(struct json_object *gc, const LlmRequestSpec *spec,
					char **errmsg)
{
	struct json_object *t;
	struct json_object *tc;
	struct json_object *include;
	int64_t		n;

	if (thinking_of(spec, &t, errmsg) < 0)
		return -1;
	if (t == NULL)
		return 0;
	tc = json_object_new_object();
	if (llm_get_int(t, "budget_tokens", &n))
		json_object_object_add(tc, "thinkingBudget", json_object_new_int64(n));
	else
		llm_add_str(tc, "thinkingLevel", llm_get_str(t, "effort"));
	if ((include = llm_get(t, "include_thoughts")) != NULL)
		json_object_object_add(tc, "includeThoughts",
							   json_object_new_boolean(json_object_get_boolean(include)));
	json_object_object_add(gc, "thinkingConfig", tc);
	return 0;
}

/*
 * Anthropic: "thinking" into body, max_tokens raised above the budget
 * (body has max_tokens already).  0, or -1 (errmsg).
 */
int
llm_thinking_anthropic(struct json_object *body, const LlmRequestSpec *spec,
					   char **errmsg)
{
	struct json_object *t;
	struct json_object *th;
	int64_t		budget;
	int64_t		max_tokens;

	if (thinking_of(spec, &t, errmsg) < 0)
		return -1;
	if (t == NULL || (budget = llm_thinking_budget(t)) == 0)
		return 0;
	if (budget < ANTHROPIC_MIN_BUDGET)
		budget = ANTHROPIC_MIN_BUDGET;
	th = json_object_new_object();
	llm_add_str(th, "type", "enabled");
	json_object_object_add(th, "budget_tokens", json_object_new_int64(budget));
	json_object_object_add(body, "thinking", th);
	if (llm_get_int(body, "max_tokens", &max_tokens) && max_tokens <= budget)
		json_object_object_add(body, "max_tokens",
							   json_object_new_int64(budget + max_tokens));
	return 0;
}

/*
 * Anthropic, body built with thinking on: when its messages end with a
 * user message of tool_result blocks whose assistant message before does
 * not begin with a thinking or redacted_thinking block (the API refuses
 * that), take "thinking" out: that request is answered without thinking.
 */
void
llm_thinking_anthropic_fit(struct json_object *body)
{
	struct json_object *msgs = llm_get(body, "messages");
	struct json_object *user;
	struct json_object *blocks;
	const char *type;
	size_t		n;
	size_t		i;
	int			results = 0;

	if (llm_get(body, "thinking") == NULL || msgs == NULL ||
		!json_object_is_type(msgs, json_type_array) ||
		(n = json_object_array_length(msgs)) < 2)
		return;
	user = json_object_array_get_idx(msgs, n - 1);
	blocks = llm_get(user, "content");
	if (blocks == NULL || !json_object_is_type(blocks, json_type_array))
		return;
	for (i = 0; i < json_object_array_length(blocks); i++)
	{
		type = llm_get_str(json_object_array_get_idx(blocks, i), "type");
		if (type != NULL && strcmp(type, "tool_result") == 0)
			results = 1;
	}
	if (!results)
		return;
	blocks = llm_get(json_object_array_get_idx(msgs, n - 2), "content");
	if (blocks != NULL && json_object_is_type(blocks, json_type_array) &&
		json_object_array_length(blocks) > 0 &&
		(type = llm_get_str(json_object_array_get_idx(blocks, 0), "type")) != NULL &&
		(strcmp(type, "thinking") == 0 || strcmp(type, "redacted_thinking") == 0))
		return;
	json_object_object_del(body, "thinking");
}

/*
 * OpenAI Chat Completions: reasoning_effort into body.  0, or -1 (errmsg).
 */
int
llm_thinking_openai(struct json_object *body, const LlmRequestSpec *spec,
					char **errmsg)
{
	struct json_object *t;

	if (thinking_of(spec, &t, errmsg) < 0)
		return -1;
	if (t != NULL)
		llm_add_str(body, "reasoning_effort", llm_thinking_effort(t));
	return 0;
}

/*
 * Empty the text of the thoughts request sends back: in Anthropic's
 * messages[].content[] the "thinking" of each block of type "thinking",
 * in Gemini's contents[].parts[] the "text" of each part with "thought":
 * true.  Returns how many were emptied, or -1 when out of memory.
 */
int
llm_request_empty_thoughts(struct json_object *request)
{
	int			a;
	int			g;

	a = empty_members(llm_get(request, "messages"), "content", NULL, "thinking");
	g = empty_members(llm_get(request, "contents"), "parts", "thought", "text");
	return a < 0 || g < 0 ? -1 : a + g;
}

/*
 * For each element of list, each element of its array inner: a block of
 * type "thinking" (is NULL) or a part whose member is is true, with a
 * string member text that is not empty, has that text emptied.
 */
static int
empty_members(struct json_object *list, const char *inner, const char *is,
			  const char *text)
{
	size_t		i;
	size_t		j;
	int			n = 0;

	if (list == NULL || !json_object_is_type(list, json_type_array))
		return 0;
	for (i = 0; i < json_object_array_length(list); i++)
	{
		struct json_object *items = llm_get(json_object_array_get_idx(list, i), inner);

		if (items == NULL || !json_object_is_type(items, json_type_array))
			continue;
		for (j = 0; j < json_object_array_length(items); j++)
		{
			struct json_object *item = json_object_array_get_idx(items, j);
			struct json_object *t = llm_get(item, text);
			struct json_object *flag;
			const char *type;

			if (t == NULL || !json_object_is_type(t, json_type_string) ||
				json_object_get_string_len(t) == 0)
				continue;
			if (is == NULL)
			{
				type = llm_get_str(item, "type");
				if (type == NULL || strcmp(type, "thinking") != 0)
					continue;
			}
			else if ((flag = llm_get(item, is)) == NULL ||
					 !json_object_is_type(flag, json_type_boolean) ||
					 !json_object_get_boolean(flag))
				continue;
			if (json_object_set_string(t, "") != 1)
				return -1;
			n++;
		}
	}
	return n;
}
