/*-------------------------------------------------------------------------
 *
 * adapter_anthropic.c
 *	  ADK contents to and from the Anthropic Messages API.
 *
 * Requests: "system" holds the system instruction; contents become
 * messages of content blocks (text, image/document, tool_use, tool_result).
 * The API wants user and assistant turns to alternate, so consecutive
 * contents of one role are merged into one message, and within a user
 * message the tool_result blocks come first, as the API requires.  Calls
 * without id get "call_<n>" and their results the same id.  max_tokens is
 * required: LLM_DEFAULT_MAX_TOKENS unless configured.  Thought parts with
 * a signature go back as the blocks they came as, which the API requires
 * before the tool_use blocks of a tool loop's last assistant message
 * (docs/models.md, "Thinking"): a thinking block (its text and signature)
 * or, a thought without text, a redacted_thinking block (the signature is
 * its data); thoughts without a signature (another provider's) are left
 * out.
 *
 * Responses: content blocks, stop_reason, usage.  Streams are typed
 * events (message_start, content_block_start/delta/stop, message_delta,
 * message_stop, ping, error); blocks are keyed by their "index" and tool
 * input arrives as partial JSON text.  A thinking block is a thought part
 * with its signature as thought_signature (streamed: signature_delta), a
 * redacted_thinking block a thought part without text whose
 * thought_signature is the block's data.
 *
 * IDENTIFICATION
 *	  src/model/adapter_anthropic.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#define ADK_LLM_INTERNAL
#include "llm.h"

/*
 * Messages being assembled: the pending one is kept until the role changes.
 * It is the blocks of n contents.  While n is 1 they are that content's
 * own array (referenced: its tool_result blocks first, then the others),
 * with the message of these blocks alone when the content has one (made
 * for reuse): it is added as it is if no other content joins.  From the
 * second content on, results and others collect the blocks of all.
 */
typedef struct AnthMessages
{
	struct json_object *messages;	/* borrowed from the body */
	int			role;			/* of the pending message: 0 user, 1
								 * assistant (when n > 0) */
	int			n;				/* contents in it */
	struct json_object *first_blocks;	/* n == 1: the content's */
	size_t		first_nres;		/* how many of them are tool results */
	struct json_object *first_msg;	/* n == 1: its message, or NULL */
	struct json_object *results;	/* n > 1: its tool_result blocks */
	struct json_object *others; /* n > 1: its other blocks */
} AnthMessages;

static struct json_object *anth_build(const LlmRequestSpec *spec,
									  char **errmsg);
static int	anth_messages(struct json_object *body, const LlmRequestSpec *spec,
						  char **errmsg);
static void anth_log(LlmRequestLog *log, AnthMessages *am, int pending,
					 size_t before, LlmIdState *st);
static int	anth_id_check(const LlmPart *part, int is_model, size_t ci,
						  size_t pi, char **errmsg);
static int	anth_content(AnthMessages *am, struct json_object *content,
						 size_t ci, LlmIdSynth *ids, const char **assigned,
						 struct json_object **made,
						 struct json_object **made_ids, char **errmsg);
static void anth_add(AnthMessages *am, int is_model,
					 struct json_object *blocks, size_t nres,
					 struct json_object *msg);
static void anth_split(AnthMessages *am, struct json_object *blocks,
					   size_t nres);
static int	anth_reuse(AnthMessages *am, struct json_object *made,
					   LlmIdSynth *ids);
static void anth_add_made(AnthMessages *am, struct json_object *made);
static struct json_object *anth_block(const LlmPart *part, int is_model,
									   size_t ci, size_t pi, LlmIdSynth *ids,
									   const char *id, char **errmsg);
static struct json_object *anth_media(const LlmPart *part, size_t ci,
									  size_t pi, char **errmsg);
static void anth_move(struct json_object *dst, struct json_object *src);
static void anth_flush(AnthMessages *am);
static struct json_object *anth_message(int is_model,
										struct json_object *blocks);
static int	anth_tools(struct json_object *body, const LlmRequestSpec *spec,
					   char **errmsg);
static struct json_object *anth_parse(struct json_object *body);
static struct json_object *anth_block_part(struct json_object *block);
static void anth_usage(struct json_object *dst, struct json_object *src);
static int	anth_error(struct json_object *body, const char **code,
					   const char **msg);
static int	anth_event(LlmStream *s, const SseEvent *ev);
static int	anth_block_start(LlmStream *s, struct json_object *chunk);
static int	anth_block_delta(LlmStream *s, struct json_object *chunk);
static int	anth_message_delta(LlmStream *s, struct json_object *chunk);

const LlmAdapter llm_anthropic_adapter = {
	anth_build,
	anth_parse,
	anth_error,
	anth_event
};

static const char *const anth_finish_map[] = {
	"end_turn", "STOP",
	"tool_use", "STOP",
	"stop_sequence", "STOP",
	"max_tokens", "MAX_TOKENS",
	"model_context_window_exceeded", "MAX_TOKENS",
	"refusal", "SAFETY",
	NULL
};

static const LlmConfigMap anth_config_map[] = {
	{"max_output_tokens", "max_tokens", LLM_CFG_INTEGER},
	{"temperature", "temperature", LLM_CFG_NUMBER},
	{"top_p", "top_p", LLM_CFG_NUMBER},
	{"top_k", "top_k", LLM_CFG_INTEGER},
	{"stop_sequences", "stop_sequences", LLM_CFG_STRINGS},
	{NULL, NULL, LLM_CFG_NUMBER}
};

/* Media types the API takes as image blocks */
static const char *const anth_image_types[] = {
	"image/jpeg", "image/png", "image/gif", "image/webp", NULL
};

/* ----------------------------------------------------------------
 *		Requests
 * ----------------------------------------------------------------
 */

static struct json_object *
anth_build(const LlmRequestSpec *spec, char **errmsg)
{
	struct json_object *body;

	if (spec->model == NULL || spec->model[0] == '\0')
	{
		llm_set_errmsg(errmsg, "a model id is required");
		return NULL;
	}
	body = json_object_new_object();
	llm_add_str(body, "model", spec->model);
	if (llm_config_apply(body, spec, anth_config_map, errmsg) < 0)
		goto fail;
	if (llm_get(body, "max_tokens") == NULL)
		json_object_object_add(body, "max_tokens",
							   json_object_new_int(LLM_DEFAULT_MAX_TOKENS));
	if (llm_thinking_anthropic(body, spec, errmsg) < 0)
		goto fail;
	if (spec->system_instruction != NULL && spec->system_instruction[0] != '\0')
		llm_add_str(body, "system", spec->system_instruction);
	if (anth_messages(body, spec, errmsg) < 0 || anth_tools(body, spec, errmsg) < 0)
		goto fail;
	if (spec->thinking_unkept)
		llm_thinking_anthropic_fit(body);
	/* breakpoints on what was just built, never on the memo's messages */
	if (spec->cache_key != NULL && llm_cache_anthropic(body) < 0)
	{
		llm_set_errmsg(errmsg, "out of memory");
		goto fail;
	}
	if (spec->stream)
		json_object_object_add(body, "stream", json_object_new_boolean(1));
	return body;

fail:
	json_object_put(body);
	return NULL;
}

static int
anth_messages(struct json_object *body, const LlmRequestSpec *spec,
			  char **errmsg)
{
	AnthMessages am;
	LlmIdSynth	ids = {0};
	LlmIdState	st;
	size_t		k;
	size_t		n = json_object_array_length(spec->contents);
	int			rc = 0;

	memset(&am, 0, sizeof(am));
	memset(&st, 0, sizeof(st));
	am.messages = json_object_new_array();
	json_object_object_add(body, "messages", am.messages);

	/*
	 * Resumed (see anth_log): the messages before the boundary are all
	 * complete there, nothing is pending.
	 */
	if (spec->from > 0)
	{
		for (k = 0; k < spec->resume_n; k++)
			json_object_array_add(am.messages,
								  json_object_get(json_object_array_get_idx(spec->resume_msgs,
																			spec->resume_off + k)));
		if (spec->resume_ids != NULL &&
			llm_ids_restore(&ids, spec->resume_ids) < 0)
		{
			llm_set_errmsg(errmsg, "out of memory");
			rc = -1;
		}
	}
	for (k = 0; k < n && rc == 0; k++)
	{
		size_t		i = spec->from + k;
		struct json_object *content = json_object_array_get_idx(spec->contents, k);
		struct json_object *same;
		const char **assigned = NULL;
		char	   *sig = NULL;
		int			uses = ids.uses;
		/* resumed here: the message before was the other role's (see anth_log) */
		int			pending = (k == 0 && spec->from > 0) ? -2 : am.n;
		size_t		before = json_object_array_length(am.messages);

		/* the ids' state here, logged once it is known whether it may be */
		if (spec->log != NULL && llm_ids_save(&ids, &st) < 0)
			pending = -1;
		if (spec->reuse != NULL && spec->reuse[k] != NULL)
		{
			rc = anth_reuse(&am, spec->reuse[k], &ids);
			anth_log(spec->log, &am, pending, before, &st);
			continue;
		}
		if (spec->idreuse == NULL)
		{
			rc = anth_content(&am, content, i, &ids, NULL,
							  spec->reuse ? &spec->reuse[k] : NULL, NULL, errmsg);
			anth_log(spec->log, &am, pending, before, &st);
			continue;
		}

		/*
		 * The ids first (as OpenAI's adapter does): a content whose calls
		 * or responses are given ids over the request makes the same
		 * blocks again for the same ids.
		 */
		if ((rc = llm_ids_assign(content, i, &ids, anth_id_check, &assigned,
								 &sig, errmsg)) < 0)
			break;
		same = (ids.uses != uses && spec->idmsgs != NULL) ?
			spec->idmsgs(spec->idarg, k, sig) : NULL;
		if (same != NULL)
			anth_add_made(&am, same);
		else
			rc = anth_content(&am, content, i, &ids, assigned,
							  spec->reuse ? &spec->reuse[k] : NULL,
							  ids.uses != uses ? &spec->idreuse[k].made : NULL,
							  errmsg);
		free(assigned);
		if (same == NULL && spec->idreuse[k].made != NULL)
			spec->idreuse[k].made_sig = sig;
		else
			free(sig);
		anth_log(spec->log, &am, pending, before, &st);
	}
	llm_id_state_free(&st);
	if (rc == 0)
	{
		/* after the last content: resumable only when nothing is pending */
		llm_log_boundary(spec->log, json_object_array_length(am.messages),
						 am.n == 0 ? LLM_RESUME_ANY : LLM_RESUME_NO, &ids);
		anth_flush(&am);
		llm_log_finish(spec->log, am.messages, 0);
	}
	json_object_put(am.first_blocks);
	json_object_put(am.first_msg);
	json_object_put(am.results);
	json_object_put(am.others);
	llm_ids_free(&ids);
	return rc;
}

/*
 * Log the boundary before the content just added (st: the ids' state
 * there; pending: how many contents the pending message held there, -1
 * when the state could not be saved, -2 at the boundary the build resumed
 * at; before: the messages there).  Consecutive contents of one role
 * make one message, so a build can start again only where no message is
 * pending: before the first content (or the boundary it resumed at:
 * pending 0, any content may follow), or before a content that flushed
 * the pending message of the other role and started one of its own (then
 * only before that same content: one of the role before it would have
 * joined that message).  Resuming there makes that content's message
 * again, with the contents of its role after it -- in a conversation, a
 * content or two.  A build resumed at such a boundary (pending -2) logs it
 * as it was: nothing is pending there only because the message before was
 * taken complete.
 */
static void
anth_log(LlmRequestLog *log, AnthMessages *am, int pending, size_t before,
		 LlmIdState *st)
{
	size_t		m;

	if (log == NULL)
		return;
	m = json_object_array_length(am->messages);
	if (pending == -2 && am->n == 1)
		llm_log_saved(log, m, LLM_RESUME_SAME, st);
	else if (pending == 0)
		llm_log_saved(log, m, LLM_RESUME_ANY, st);
	else if (pending > 0 && am->n == 1 && m == before + 1)
		llm_log_saved(log, m, LLM_RESUME_SAME, st);
	else
	{
		llm_id_state_free(st);
		llm_log_saved(log, 0, LLM_RESUME_NO, st);
	}
}

/*
 * Convert one content to blocks and add them to the pending message.
 *
 * When made is not NULL, *made is set to what the content gave, for later
 * requests (LlmRequestSpec.reuse): an array of one message, the content's
 * blocks alone (tool results first), which anth_reuse adds as it is or
 * merges with its neighbours' blocks as anth_add does here.  Only when the
 * blocks depend on nothing but the content: every call and response in it
 * has its own id.  Ids
 * found or made for calls and responses without one depend on the contents
 * before them (see llm_ids_call); those with an id are sent with it
 * whatever came before, and anth_reuse replays them into ids so that the
 * contents after get the same ids as when this one is converted.
 */
static int
anth_content(AnthMessages *am, struct json_object *content, size_t ci,
			 LlmIdSynth *ids, const char **assigned, struct json_object **made,
			 struct json_object **made_ids, char **errmsg)
{
	struct json_object *parts;
	struct json_object *results = json_object_new_array();
	struct json_object *others = json_object_new_array();
	struct json_object *blocks;
	struct json_object *msg = NULL;
	int			is_model;
	int			own = 1;
	size_t		pi;

	if (llm_content_decode(content, ci, &is_model, &parts, errmsg) < 0)
		goto fail;
	for (pi = 0; pi < json_object_array_length(parts); pi++)
	{
		LlmPart		part;
		struct json_object *block;

		if (llm_part_decode(json_object_array_get_idx(parts, pi), ci, pi, &part,
							errmsg) < 0)
			goto fail;
		if (part.kind == LLM_PART_TEXT &&
			(part.thought ? part.signature == NULL || !is_model :
			 part.text_len == 0))
			continue;
		if ((part.kind == LLM_PART_CALL || part.kind == LLM_PART_RESPONSE) &&
			part.id == NULL)
			own = 0;
		if ((block = anth_block(&part, is_model, ci, pi, ids,
								assigned ? assigned[pi] : NULL, errmsg)) == NULL)
			goto fail;
		json_object_array_add(part.kind == LLM_PART_RESPONSE ? results : others,
							  block);
	}
	blocks = json_object_new_array();
	anth_move(blocks, results);
	anth_move(blocks, others);
	/* what it gave depends on the content alone, or on it and its ids */
	if (own && made == NULL)
		made_ids = NULL;
	else if (own)
		made_ids = made;
	if (made_ids != NULL)
	{
		/* not kept when out of memory: converted again next time */
		msg = anth_message(is_model, blocks);
		if (msg != NULL && (*made_ids = json_object_new_array()) != NULL)
			json_object_array_add(*made_ids, json_object_get(msg));
	}
	anth_add(am, is_model, blocks, json_object_array_length(results), msg);
	json_object_put(msg);
	json_object_put(blocks);
	json_object_put(results);
	json_object_put(others);
	return 0;

fail:
	json_object_put(results);
	json_object_put(others);
	return -1;
}

/*
 * Add a content's blocks (nres tool results first, then the others) to the
 * pending message, flushing it first when the role changes; msg, when not
 * NULL, is the message of these blocks alone.  Contents that give no blocks
 * are skipped, so they do not break a run of one role.
 */
static void
anth_add(AnthMessages *am, int is_model, struct json_object *blocks,
		 size_t nres, struct json_object *msg)
{
	if (json_object_array_length(blocks) == 0)
		return;
	if (am->n > 0 && am->role != is_model)
		anth_flush(am);
	am->role = is_model;
	if (am->n == 0)
	{
		am->first_blocks = json_object_get(blocks);
		am->first_nres = nres;
		am->first_msg = msg ? json_object_get(msg) : NULL;
	}
	else
	{
		if (am->n == 1)
		{
			am->results = json_object_new_array();
			am->others = json_object_new_array();
			anth_split(am, am->first_blocks, am->first_nres);
		}
		anth_split(am, blocks, nres);
	}
	am->n++;
}

/*
 * Append the first nres blocks to the pending tool results, the rest to
 * the other blocks.
 */
static void
anth_split(AnthMessages *am, struct json_object *blocks, size_t nres)
{
	size_t		n = json_object_array_length(blocks);
	size_t		i;

	for (i = 0; i < n; i++)
		json_object_array_add(i < nres ? am->results : am->others,
							  json_object_get(json_object_array_get_idx(blocks, i)));
}

/*
 * Add the message a content made before (see anth_content) in its place,
 * its blocks to be merged with its neighbours' as anth_add does.
 */
static void
anth_add_made(AnthMessages *am, struct json_object *made)
{
	struct json_object *msg = json_object_array_get_idx(made, 0);
	struct json_object *blocks = llm_get_arr(msg, "content");
	size_t		n = json_object_array_length(blocks);
	size_t		nres = 0;

	while (nres < n &&
		   strcmp(llm_get_str(json_object_array_get_idx(blocks, nres), "type"),
				  "tool_result") == 0)
		nres++;
	anth_add(am, strcmp(llm_get_str(msg, "role"), "assistant") == 0, blocks,
			 nres, msg);
}

/*
 * LlmIdCheck: which parts take ids (as anth_block gives them), and the
 * errors anth_content and anth_block give first (inline data is checked by
 * making its block).
 */
static int
anth_id_check(const LlmPart *part, int is_model, size_t ci, size_t pi,
			  char **errmsg)
{
	struct json_object *block;

	if (part->kind == LLM_PART_TEXT)
		return 0;
	if (part->kind == LLM_PART_INLINE && !is_model)
	{
		if ((block = anth_media(part, ci, pi, errmsg)) == NULL)
			return -1;
		json_object_put(block);
		return 0;
	}
	if ((part->kind == LLM_PART_CALL && is_model) ||
		(part->kind == LLM_PART_RESPONSE && !is_model))
		return 1;
	llm_set_errmsg(errmsg, "contents[%zu].parts[%zu]: a %s content cannot hold this kind of part",
				   ci, pi, is_model ? "model" : "user");
	return -1;
}

/*
 * Add the message a content made before (see anth_content), and register
 * its calls and responses, all with their own ids, in ids as converting it
 * does: its tool_use blocks in order as calls, its tool_result blocks in
 * order as responses (a content holds only one of the two kinds).
 */
static int
anth_reuse(AnthMessages *am, struct json_object *made, LlmIdSynth *ids)
{
	struct json_object *msg = json_object_array_get_idx(made, 0);
	struct json_object *blocks = llm_get_arr(msg, "content");
	size_t		n = json_object_array_length(blocks);
	size_t		i;

	for (i = 0; i < n; i++)
	{
		struct json_object *block = json_object_array_get_idx(blocks, i);
		const char *type = llm_get_str(block, "type");
		LlmPart		part = {0};

		if (strcmp(type, "tool_result") == 0)
		{
			part.kind = LLM_PART_RESPONSE;
			part.id = llm_get_str(block, "tool_use_id");
			if (llm_ids_response(ids, &part) == NULL)
				return -1;
		}
		else if (strcmp(type, "tool_use") == 0)
		{
			part.kind = LLM_PART_CALL;
			part.id = llm_get_str(block, "id");
			part.name = llm_get_str(block, "name");
			if (llm_ids_call(ids, &part) == NULL)
				return -1;
		}
	}
	anth_add_made(am, made);
	return 0;
}

/*
 * One content block for a part (not an empty text, nor a thought without
 * a signature or in a user content).
 */
static struct json_object *
anth_block(const LlmPart *part, int is_model, size_t ci, size_t pi,
		   LlmIdSynth *ids, const char *given, char **errmsg)
{
	struct json_object *block;
	struct json_object *args;
	const char *id;
	char	   *str;

	if (part->kind == LLM_PART_TEXT && part->thought && part->text_len == 0)
	{
		block = json_object_new_object();
		llm_add_str(block, "type", "redacted_thinking");
		llm_add_str(block, "data", part->signature);
		return block;
	}
	if (part->kind == LLM_PART_TEXT && part->thought)
	{
		block = json_object_new_object();
		llm_add_str(block, "type", "thinking");
		json_object_object_add(block, "thinking", json_object_get(part->text_obj));
		llm_add_str(block, "signature", part->signature);
		return block;
	}
	if (part->kind == LLM_PART_TEXT)
	{
		block = json_object_new_object();
		llm_add_str(block, "type", "text");
		/* referenced, not copied */
		json_object_object_add(block, "text", json_object_get(part->text_obj));
		return block;
	}
	if (part->kind == LLM_PART_INLINE && !is_model)
		return anth_media(part, ci, pi, errmsg);
	if (part->kind == LLM_PART_CALL && is_model)
	{
		if ((id = given ? given : llm_ids_call(ids, part)) == NULL)
			return NULL;
		block = json_object_new_object();
		llm_add_str(block, "type", "tool_use");
		llm_add_str(block, "id", id);
		llm_add_str(block, "name", part->name);
		json_object_object_add(block, "input", llm_part_args(part));
		return block;
	}
	if (part->kind == LLM_PART_RESPONSE && !is_model)
	{
		if ((id = given ? given : llm_ids_response(ids, part)) == NULL)
			return NULL;
		args = llm_part_args(part);
		str = llm_json_compact(args);
		json_object_put(args);
		block = json_object_new_object();
		llm_add_str(block, "type", "tool_result");
		llm_add_str(block, "tool_use_id", id);
		llm_add_str(block, "content", str ? str : "{}");
		free(str);
		return block;
	}
	llm_set_errmsg(errmsg, "contents[%zu].parts[%zu]: a %s content cannot hold this kind of part",
				   ci, pi, is_model ? "model" : "user");
	return NULL;
}

/*
 * Inline data as an image or (PDF) document block with a base64 source.
 */
static struct json_object *
anth_media(const LlmPart *part, size_t ci, size_t pi, char **errmsg)
{
	const char *const *t;
	const char *type = NULL;
	struct json_object *block;
	struct json_object *source;

	for (t = anth_image_types; *t != NULL; t++)
		if (strcmp(*t, part->mime_type) == 0)
			type = "image";
	if (strcmp(part->mime_type, "application/pdf") == 0)
		type = "document";
	if (type == NULL)
	{
		llm_set_errmsg(errmsg, "contents[%zu].parts[%zu]: inline data of type \"%s\" cannot be sent to an Anthropic model",
					   ci, pi, part->mime_type);
		return NULL;
	}
	source = json_object_new_object();
	llm_add_str(source, "type", "base64");
	llm_add_str(source, "media_type", part->mime_type);
	llm_add_str(source, "data", part->data);
	block = json_object_new_object();
	llm_add_str(block, "type", type);
	json_object_object_add(block, "source", source);
	return block;
}

/*
 * Append the elements of src to dst.
 */
static void
anth_move(struct json_object *dst, struct json_object *src)
{
	size_t		i;

	for (i = 0; i < json_object_array_length(src); i++)
		json_object_array_add(dst, json_object_get(json_object_array_get_idx(src, i)));
}

/*
 * Emit the pending message and start an empty one.
 */
static void
anth_flush(AnthMessages *am)
{
	struct json_object *blocks;

	if (am->n == 1 && am->first_msg != NULL)
		json_object_array_add(am->messages, json_object_get(am->first_msg));
	else if (am->n == 1)
		json_object_array_add(am->messages,
							  anth_message(am->role, am->first_blocks));
	else if (am->n > 1)
	{
		blocks = json_object_new_array();
		anth_move(blocks, am->results);
		anth_move(blocks, am->others);
		json_object_array_add(am->messages, anth_message(am->role, blocks));
		json_object_put(blocks);
	}
	json_object_put(am->first_blocks);
	json_object_put(am->first_msg);
	json_object_put(am->results);
	json_object_put(am->others);
	am->first_blocks = am->first_msg = NULL;
	am->results = am->others = NULL;
	am->n = 0;
}

/*
 * {"role", "content": blocks (referenced)}
 */
static struct json_object *
anth_message(int is_model, struct json_object *blocks)
{
	struct json_object *msg = json_object_new_object();

	llm_add_str(msg, "role", is_model ? "assistant" : "user");
	llm_add_ref(msg, "content", blocks);
	return msg;
}

static int
anth_tools(struct json_object *body, const LlmRequestSpec *spec, char **errmsg)
{
	struct json_object *tools;
	size_t		i;
	size_t		n = spec->tools ? json_object_array_length(spec->tools) : 0;

	if (n == 0)
		return 0;
	tools = json_object_new_array();
	json_object_object_add(body, "tools", tools);
	for (i = 0; i < n; i++)
	{
		const char *name;
		const char *desc;
		struct json_object *params;
		struct json_object *tool;

		if (llm_tool_decode(json_object_array_get_idx(spec->tools, i), i, &name,
							&desc, &params, errmsg) < 0)
			return -1;
		tool = json_object_new_object();
		llm_add_str(tool, "name", name);
		if (desc != NULL)
			llm_add_str(tool, "description", desc);
		if (params != NULL)
			llm_add_ref(tool, "input_schema", params);
		else
		{
			struct json_object *schema = json_object_new_object();

			llm_add_str(schema, "type", "object");
			json_object_object_add(schema, "properties", json_object_new_object());
			json_object_object_add(tool, "input_schema", schema);
		}
		json_object_array_add(tools, tool);
	}
	return 0;
}

/* ----------------------------------------------------------------
 *		Complete responses
 * ----------------------------------------------------------------
 */

static struct json_object *
anth_parse(struct json_object *body)
{
	struct json_object *blocks = llm_get_arr(body, "content");
	struct json_object *parts;
	struct json_object *resp;
	struct json_object *usage;
	const char *model = llm_get_str(body, "model");
	size_t		i;

	if (blocks == NULL)
		return llm_error_responsef("MALFORMED_RESPONSE",
								   "model response has no content array");
	parts = json_object_new_array();
	for (i = 0; i < json_object_array_length(blocks); i++)
	{
		struct json_object *part = anth_block_part(json_object_array_get_idx(blocks, i));

		if (part != NULL && llm_get(part, "error_code") != NULL)
		{
			json_object_put(parts);
			return part;
		}
		if (part != NULL)
			json_object_array_add(parts, part);
	}
	resp = json_object_new_object();
	llm_set_content(resp, parts);
	if (llm_get_obj(body, "usage") != NULL)
	{
		usage = json_object_new_object();
		anth_usage(usage, llm_get_obj(body, "usage"));
		json_object_object_add(resp, "usage_metadata", usage);
	}
	if (model != NULL)
		llm_add_str(resp, "model_version", model);
	llm_set_finish(resp, llm_map_finish(llm_get_str(body, "stop_reason"),
										anth_finish_map), NULL);
	return resp;
}

/*
 * A response content block as an ADK part: text, tool_use as a function
 * call, thinking as thought text with its signature, redacted_thinking as
 * a thought without text; NULL for other block types.
 */
static struct json_object *
anth_block_part(struct json_object *block)
{
	const char *type = llm_get_str(block, "type");
	struct json_object *str;
	struct json_object *input;
	struct json_object *part;
	const char *name;

	if (type == NULL)
		return NULL;
	if (strcmp(type, "redacted_thinking") == 0)
	{
		const char *data = llm_get_str(block, "data");

		return data != NULL && data[0] != '\0' ?
			llm_text_part("", 0, 1, data) : NULL;
	}
	if (strcmp(type, "text") == 0 || strcmp(type, "thinking") == 0)
	{
		const char *sig = type[1] == 'h' ? llm_get_str(block, "signature") : NULL;

		if (sig != NULL && sig[0] == '\0')
			sig = NULL;
		str = llm_get(block, type);
		if (str == NULL || !json_object_is_type(str, json_type_string) ||
			json_object_get_string_len(str) == 0)
			return NULL;
		return llm_text_part(json_object_get_string(str),
							 (size_t) json_object_get_string_len(str),
							 type[1] == 'h', sig);
	}
	if (strcmp(type, "tool_use") != 0)
		return NULL;
	name = llm_get_str(block, "name");
	input = llm_get(block, "input");
	if (name == NULL || name[0] == '\0' ||
		(input != NULL && !json_object_is_type(input, json_type_object)))
		return llm_error_responsef("MALFORMED_FUNCTION_CALL",
								   "model returned a tool_use block without a name or with input that is not an object");
	part = llm_call_part(llm_get_str(block, "id"), name,
						 input ? json_object_get(input) : json_object_new_object(),
						 NULL);
	return part ? part : llm_error_responsef("INTERNAL_ERROR",
											 "could not generate a function call id");
}

/*
 * Merge Anthropic usage src into ADK usage dst.  Cached input counts, read
 * and written, are part of the prompt (the API's input_tokens counts
 * neither); the total is recomputed from prompt and output.
 * Counts saturate at LLM_MAX_TOKEN_COUNT (llm_get_count).
 */
static void
anth_usage(struct json_object *dst, struct json_object *src)
{
	int64_t		in;
	int64_t		v;
	int64_t		prompt = 0;
	int64_t		out = 0;

	if (llm_get_count(src, "input_tokens", &in))
	{
		if (llm_get_count(src, "cache_creation_input_tokens", &v))
		{
			in = llm_count_add(in, v);
			/* to the ledger (llm_cache_take_creation) */
			if (v > 0)
				llm_usage_set(dst, "cache_creation_token_count", v);
		}
		if (llm_get_count(src, "cache_read_input_tokens", &v))
		{
			in = llm_count_add(in, v);
			if (v > 0)
				llm_usage_set(dst, "cached_content_token_count", v);
		}
		llm_usage_set(dst, "prompt_token_count", in);
	}
	if (llm_get_count(src, "output_tokens", &v))
		llm_usage_set(dst, "candidates_token_count", v);
	if (llm_get_count(dst, "prompt_token_count", &v))
		prompt = v;
	if (llm_get_count(dst, "candidates_token_count", &v))
		out = v;
	if (llm_get(dst, "prompt_token_count") || llm_get(dst, "candidates_token_count"))
		llm_usage_set(dst, "total_token_count", llm_count_add(prompt, out));
}

/*
 * {"type": "error", "error": {"type", "message"}}.
 */
static int
anth_error(struct json_object *body, const char **code, const char **msg)
{
	struct json_object *err = llm_get_obj(body, "error");

	*code = *msg = NULL;
	if (err == NULL)
		return 0;
	*code = llm_get_str(err, "type");
	*msg = llm_get_str(err, "message");
	return 1;
}

/* ----------------------------------------------------------------
 *		Streaming
 * ----------------------------------------------------------------
 */

static int
anth_event(LlmStream *s, const SseEvent *ev)
{
	struct json_object *chunk;
	const char *type;
	const char *code;
	const char *msg;

	if ((chunk = llm_stream_json(s, ev)) == NULL)
		return -1;
	type = llm_get_str(chunk, "type");
	if (type == NULL)
		type = ev->type;
	if (strcmp(type, "error") == 0 || llm_get_obj(chunk, "error") != NULL)
	{
		anth_error(chunk, &code, &msg);
		return llm_stream_fail(s, code ? code : "PROVIDER_ERROR",
							   msg ? msg : "model provider reported an error");
	}
	if (strcmp(type, "message_start") == 0)
	{
		struct json_object *message = llm_get_obj(chunk, "message");
		const char *model = llm_get_str(message, "model");

		if (model != NULL && llm_stream_setstr(&s->model_version, model) < 0)
			return llm_stream_fail(s, "OUT_OF_MEMORY", "out of memory");
		if (llm_get_obj(message, "usage") != NULL)
			anth_usage(llm_stream_usage(s), llm_get_obj(message, "usage"));
		return 0;
	}
	if (strcmp(type, "content_block_start") == 0)
		return anth_block_start(s, chunk);
	if (strcmp(type, "content_block_delta") == 0)
		return anth_block_delta(s, chunk);
	if (strcmp(type, "message_delta") == 0)
		return anth_message_delta(s, chunk);
	if (strcmp(type, "message_stop") == 0)
		s->complete = 1;
	/* ping, content_block_stop and unknown events carry nothing we need */
	return 0;
}

/*
 * content_block_start: make the slot for the block's index.
 */
static int
anth_block_start(LlmStream *s, struct json_object *chunk)
{
	struct json_object *block = llm_get_obj(chunk, "content_block");
	const char *type = llm_get_str(block, "type");
	struct json_object *input = llm_get_obj(block, "input");
	LlmSlot    *slot;
	int64_t		index;

	if (!llm_get_int(chunk, "index", &index) || index < 0 || index > 1000000 ||
		type == NULL)
		return llm_stream_fail(s, "MALFORMED_RESPONSE",
							   "content_block_start without index or type");
	if (llm_stream_find(s, (int) index) != NULL)
		return llm_stream_fail(s, "MALFORMED_RESPONSE",
							   "content block index started twice");
	if (strcmp(type, "redacted_thinking") == 0)
	{
		const char *data = llm_get_str(block, "data");

		if ((slot = llm_stream_new_slot(s, (int) index, LLM_SLOT_TEXT)) == NULL)
			return -1;
		slot->thought = 1;
		if (data != NULL && data[0] != '\0' &&
			llm_stream_setstr(&slot->signature, data) < 0)
			return llm_stream_fail(s, "OUT_OF_MEMORY", "out of memory");
		return 0;
	}
	if (strcmp(type, "text") == 0 || strcmp(type, "thinking") == 0)
	{
		const char *text = llm_get_str(block, type);

		if ((slot = llm_stream_new_slot(s, (int) index, LLM_SLOT_TEXT)) == NULL)
			return -1;
		slot->thought = (type[1] == 'h');
		return text ? llm_stream_text(s, (int) index, text, strlen(text),
									  type[1] == 'h') : 0;
	}
	if (strcmp(type, "tool_use") != 0)
		return llm_stream_new_slot(s, (int) index, LLM_SLOT_IGNORE) ? 0 : -1;
	if ((slot = llm_stream_new_slot(s, (int) index, LLM_SLOT_CALL)) == NULL)
		return -1;
	if (llm_stream_setstr(&slot->id, llm_get_str(block, "id")) < 0 ||
		llm_stream_setstr(&slot->name, llm_get_str(block, "name")) < 0)
		return llm_stream_fail(s, "OUT_OF_MEMORY", "out of memory");
	if (input != NULL)
		slot->args = json_object_get(input);
	return 0;
}

/*
 * content_block_delta: text, thinking or partial tool input.
 */
static int
anth_block_delta(LlmStream *s, struct json_object *chunk)
{
	struct json_object *delta = llm_get_obj(chunk, "delta");
	const char *type = llm_get_str(delta, "type");
	struct json_object *piece;
	LlmSlot    *slot;
	int64_t		index;

	if (!llm_get_int(chunk, "index", &index) || index < 0 || index > 1000000 ||
		type == NULL)
		return llm_stream_fail(s, "MALFORMED_RESPONSE",
							   "content_block_delta without index or type");
	if (strcmp(type, "text_delta") == 0 || strcmp(type, "thinking_delta") == 0)
	{
		piece = llm_get(delta, type[1] == 'e' ? "text" : "thinking");
		if (piece == NULL || !json_object_is_type(piece, json_type_string))
			return 0;
		return llm_stream_text(s, (int) index, json_object_get_string(piece),
							   (size_t) json_object_get_string_len(piece),
							   type[1] == 'h');
	}
	if (strcmp(type, "signature_delta") == 0)
	{
		const char *sig = llm_get_str(delta, "signature");

		slot = llm_stream_find(s, (int) index);
		if (slot == NULL || slot->kind != LLM_SLOT_TEXT || !slot->thought)
			return llm_stream_fail(s, "MALFORMED_RESPONSE",
								   "signature_delta for a block that is not thinking");
		if (sig != NULL && sig[0] != '\0' &&
			llm_stream_setstr(&slot->signature, sig) < 0)
			return llm_stream_fail(s, "OUT_OF_MEMORY", "out of memory");
		return 0;
	}
	if (strcmp(type, "input_json_delta") != 0)
		return 0;
	slot = llm_stream_find(s, (int) index);
	if (slot != NULL && slot->kind == LLM_SLOT_IGNORE)
		return 0;
	if (slot == NULL || slot->kind != LLM_SLOT_CALL)
		return llm_stream_fail(s, "MALFORMED_RESPONSE",
							   "input_json_delta for a block that is not tool_use");
	piece = llm_get(delta, "partial_json");
	if (piece != NULL && json_object_is_type(piece, json_type_string) &&
		llm_buf_append(&slot->buf, json_object_get_string(piece),
					   (size_t) json_object_get_string_len(piece)) < 0)
		return llm_stream_fail(s, "OUT_OF_MEMORY", "out of memory");
	return 0;
}

/*
 * message_delta: stop reason and cumulative usage.
 */
static int
anth_message_delta(LlmStream *s, struct json_object *chunk)
{
	const char *stop = llm_get_str(llm_get_obj(chunk, "delta"), "stop_reason");

	if (llm_get_obj(chunk, "usage") != NULL)
		anth_usage(llm_stream_usage(s), llm_get_obj(chunk, "usage"));
	if (stop == NULL)
		return 0;
	if (llm_stream_setstr(&s->finish_reason,
						  llm_map_finish(stop, anth_finish_map)) < 0)
		return llm_stream_fail(s, "OUT_OF_MEMORY", "out of memory");
	s->complete = 1;
	return 0;
}
