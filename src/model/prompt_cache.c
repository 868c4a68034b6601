/*-------------------------------------------------------------------------
 *
 * prompt_cache.c
 *	  Prompt caching on the wire (docs/models.md, "Prompt caching"):
 *	  Anthropic's cache_control breakpoints, and the cache-creation count
 *	  an answer reports.
 *
 * A request with LlmRequestSpec.cache_key set is cached: OpenAI's adapter
 * sends the key as prompt_cache_key; Gemini caches implicitly (nothing to
 * send, its cachedContentTokenCount is read as any usage); Anthropic's
 * adapter calls llm_cache_anthropic() on the body it built.  That marks,
 * in the order the API renders the prompt (tools, system, messages), the
 * last tool, the system prompt (made an array of one text block), and the
 * last block of each of the last two messages that have a block that can
 * take one (not thinking, not empty text): a breakpoint on the newest
 * message writes the conversation so far, the one before it reads what
 * the previous request wrote even when that one's tail differs.  Four at
 * most, the API's limit.
 *
 * The body's messages may be objects a request memo keeps for the next
 * request (request_memo.c, anth_reuse): a marked message is a copy put in
 * a new array of the messages, so the memo's messages and arrays are
 * never changed.
 *
 * IDENTIFICATION
 *	  src/model/prompt_cache.c
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include <json-c/json.h>

#define ADK_LLM_INTERNAL
#include "llm.h"

/* breakpoints in the messages: the API allows four in all */
#define CACHE_MESSAGE_MARKS 2

static struct json_object *cache_control(void);
static int	cache_block_ok(struct json_object *block);
static int	cache_mark_message(struct json_object *messages, size_t i);

/*
 * Mark body (an Anthropic request) as described above.  0, or -1 when out
 * of memory (body is then as it was, or marked in part: the caller drops
 * it).
 */
int
llm_cache_anthropic(struct json_object *body)
{
	struct json_object *tools = llm_get_arr(body, "tools");
	struct json_object *messages = llm_get_arr(body, "messages");
	const char *system = llm_get_str(body, "system");
	int			marks = 0;
	size_t		n;
	size_t		i;

	/* tools are made for each request (anth_tools): marked in place */
	if (tools != NULL && json_object_array_length(tools) > 0)
	{
		struct json_object *last = json_object_array_get_idx(tools,
															 json_object_array_length(tools) - 1);

		if (json_object_object_add(last, "cache_control", cache_control()) != 0)
			return -1;
	}
	if (system != NULL && system[0] != '\0')
	{
		struct json_object *blocks = json_object_new_array();
		struct json_object *block = json_object_new_object();

		llm_add_str(block, "type", "text");
		llm_add_str(block, "text", system);
		json_object_object_add(block, "cache_control", cache_control());
		json_object_array_add(blocks, block);
		/* replaces the string, which system pointed into */
		if (json_object_object_add(body, "system", blocks) != 0)
		{
			json_object_put(blocks);
			return -1;
		}
	}
	if (messages == NULL || (n = json_object_array_length(messages)) == 0)
		return 0;

	/* a new array of the same messages, the marked ones copies */
	{
		struct json_object *sent = json_object_new_array_ext((int) n);

		if (sent == NULL)
			return -1;
		for (i = 0; i < n; i++)
			json_object_array_add(sent,
								  json_object_get(json_object_array_get_idx(messages, i)));
		if (json_object_object_add(body, "messages", sent) != 0)
		{
			json_object_put(sent);
			return -1;
		}
		messages = sent;
	}
	for (i = n; i > 0 && marks < CACHE_MESSAGE_MARKS; i--)
	{
		int			rc = cache_mark_message(messages, i - 1);

		if (rc < 0)
			return -1;
		marks += rc;
	}
	return 0;
}

/*
 * The count of tokens an Anthropic answer wrote to the cache
 * (usage_metadata.cache_creation_token_count, set by its adapter), taken
 * out of result: it is not a field of ADK's usage metadata, so it goes to
 * the ledger's own column and nowhere else.  -1 when there is none.
 */
int64_t
llm_cache_take_creation(struct json_object *result)
{
	struct json_object *usage = llm_get_obj(result, "usage_metadata");
	int64_t		v;

	if (usage == NULL || llm_get(usage, "cache_creation_token_count") == NULL)
		return -1;
	if (!llm_get_count(usage, "cache_creation_token_count", &v))
		v = -1;
	json_object_object_del(usage, "cache_creation_token_count");
	return v;
}

static struct json_object *
cache_control(void)
{
	struct json_object *cc = json_object_new_object();

	llm_add_str(cc, "type", "ephemeral");
	return cc;
}

/* Whether the API takes a cache_control on block */
static int
cache_block_ok(struct json_object *block)
{
	const char *type = llm_get_str(block, "type");

	if (type == NULL || strcmp(type, "thinking") == 0 ||
		strcmp(type, "redacted_thinking") == 0)
		return 0;
	if (strcmp(type, "text") == 0)
	{
		const char *text = llm_get_str(block, "text");

		return text != NULL && text[0] != '\0';
	}
	return 1;
}

/*
 * Put a copy of message i of messages in its place, its last block that
 * may take one marked.  1 when marked, 0 when it has no such block, -1
 * when out of memory.
 */
static int
cache_mark_message(struct json_object *messages, size_t i)
{
	struct json_object *msg = json_object_array_get_idx(messages, i);
	struct json_object *content = llm_get_arr(msg, "content");
	struct json_object *copy;
	struct json_object *blocks;
	struct json_object *marked;
	struct json_object *block;
	size_t		nb;
	size_t		b;
	size_t		k;

	if (content == NULL)
		return 0;
	nb = json_object_array_length(content);
	for (b = nb; b > 0; b--)
		if (cache_block_ok(json_object_array_get_idx(content, b - 1)))
			break;
	if (b == 0)
		return 0;

	/*
	 * A copy of the message, of its array of blocks and of the marked
	 * block; the other blocks are shared with the original, unchanged.
	 */
	copy = json_object_new_object();
	blocks = json_object_new_array_ext((int) nb);
	marked = json_object_new_object();
	if (copy == NULL || blocks == NULL || marked == NULL)
	{
		json_object_put(copy);
		json_object_put(blocks);
		json_object_put(marked);
		return -1;
	}
	{
		json_object_object_foreach(msg, key, val)
		{
			if (strcmp(key, "content") != 0)
				json_object_object_add(copy, key, json_object_get(val));
		}
	}
	json_object_object_add(copy, "content", blocks);
	block = json_object_array_get_idx(content, b - 1);
	{
		json_object_object_foreach(block, bkey, bval)
		{
			if (strcmp(bkey, "cache_control") != 0)
				json_object_object_add(marked, bkey, json_object_get(bval));
		}
	}
	json_object_object_add(marked, "cache_control", cache_control());
	for (k = 0; k < nb; k++)
		json_object_array_add(blocks, k == b - 1 ? marked :
							  json_object_get(json_object_array_get_idx(content, k)));

	/* drops this array's reference to the original, which others hold */
	if (json_object_array_put_idx(messages, i, copy) != 0)
	{
		json_object_put(copy);
		return -1;
	}
	return 1;
}
