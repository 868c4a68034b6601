/*-------------------------------------------------------------------------
 *
 * llm.h
 *	  Conversion between ADK contents and the wire formats of the model
 *	  providers (OpenAI Chat Completions, Gemini generateContent, Anthropic
 *	  Messages), including their streaming (SSE) variants.
 *
 * This layer knows nothing about PostgreSQL: it uses json-c and the C
 * library only, so it can be unit-tested standalone.  A PG-facing wrapper
 * turns its results into jsonb and ereports.
 *
 * Ownership: every "char *" returned is malloc'd and freed by the caller
 * with free(); every "struct json_object *" returned is a new reference
 * that the caller releases with json_object_put().  Objects passed in
 * (LlmRequestSpec members) are borrowed and not changed (json-c may cache
 * a serialization inside them); numbers in them are written out as json-c
 * prints them, so objects parsed from text keep their original spelling.
 *
 * Errors: request building returns NULL and a malloc'd message.  Response
 * parsing never fails outright: problems become an LlmResponse carrying
 * "error_code" and "error_message" (see llm_parse_response).
 *
 * Thread safety: no global mutable state; distinct objects may be used
 * from distinct threads.  An LlmStream is used by one thread at a time.
 *
 * IDENTIFICATION
 *	  src/model/llm.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_LLM_H
#define ADK_LLM_H

#include <stddef.h>
#include <stdint.h>

#include "common/json_limits.h"

struct json_object;

/*
 * Deepest nesting accepted in any JSON received from a provider, and in an
 * LlmResponse (which becomes an event: the response object is level 1)
 */
#define LLM_MAX_JSON_DEPTH		ADK_MAX_JSON_DEPTH
/*
 * Deepest nesting accepted in a provider's body.  A response whose call
 * arguments fit in an event is up to two levels deeper on the wire (Gemini
 * wraps arguments in seven levels, an event in five); a few more levels
 * let arguments that are slightly too deep get the precise error.  What is
 * kept is checked against LLM_MAX_JSON_DEPTH.
 */
#define LLM_MAX_WIRE_DEPTH		(LLM_MAX_JSON_DEPTH + 8)
/*
 * Levels a model event wraps around a call's arguments: the event, its
 * content, the parts array, the part, the function_call object.  Arguments
 * may nest at most LLM_MAX_JSON_DEPTH - LLM_ARGS_WRAPPING levels.
 */
#define LLM_ARGS_WRAPPING		5
/*
 * Largest token count reported; larger ones saturate.  Far beyond any real
 * call, and low enough that millions of them summed stay within bigint.
 */
#define LLM_MAX_TOKEN_COUNT		((int64_t) 1000000000000)
/* Longest error_message copied from a provider, in bytes */
#define LLM_MAX_ERROR_MESSAGE	1000
/* Largest single SSE event accepted while streaming, in bytes */
#define LLM_MAX_SSE_EVENT		(16 * 1024 * 1024)
/* max_tokens sent to Anthropic when the config gives none */
#define LLM_DEFAULT_MAX_TOKENS	4096
/* Generated function-call ids: "adk-" and a 36-character UUID v4 */
#define LLM_CALL_ID_PREFIX		"adk-"
#define LLM_CALL_ID_LEN			40

typedef enum LlmProvider
{
	LLM_OPENAI,
	LLM_GEMINI,
	LLM_ANTHROPIC
} LlmProvider;

/* "openai", "gemini", "anthropic" (exact, lower case); 0 ok, -1 unknown */
extern int	llm_provider_from_name(const char *name, LlmProvider *out);

/* The name llm_provider_from_name accepts, or NULL for a bad value */
extern const char *llm_provider_name(LlmProvider p);

typedef struct LlmRequestSpec
{
	LlmProvider provider;
	const char *model;			/* provider's model id */
	struct json_object *contents;	/* borrowed: array of ADK Content */
	const char *system_instruction; /* NULL = none */
	struct json_object *tools;	/* borrowed: array of {name, description,
								 * parameters} or NULL */
	struct json_object *config; /* borrowed: {temperature, max_output_tokens,
								 * top_p, top_k, stop_sequences[],
								 * presence_penalty, frequency_penalty,
								 * seed} or NULL; other keys are ignored */
	int			stream;

	/*
	 * NULL, or one slot per content (llm_reuses_contents providers only).
	 * A slot set on entry is the array of wire messages that content made
	 * before: they are added (referenced) in its place, and the content
	 * itself is not read (it may be JSON null).  (Anthropic: the message
	 * of its blocks alone, added as it is unless contents of the same role
	 * next to it are merged into one message with it, which then takes
	 * its blocks.)  A slot NULL on entry is set to a new array of the
	 * messages its content made when they depend on nothing but the
	 * content (OpenAI: no function call or response, whose ids are counted
	 * over the request; Anthropic: no call or response without an id;
	 * Gemini: always); the caller owns it, even when the build fails.
	 */
	struct json_object **reuse;

	/*
	 * NULL, or one slot per content (llm_reuses_contents providers only),
	 * for the contents whose messages depend on the ids their calls and
	 * responses are given (counted over the request): see LlmIdReuse.
	 * idmsgs(idarg, i, sig) gives the messages content i made before with
	 * the ids in sig (borrowed), or NULL.  OpenAI and Anthropic use them;
	 * Gemini needs no ids.
	 */
	struct LlmIdReuse *idreuse;
	struct json_object *(*idmsgs) (void *idarg, size_t i, const char *sig);
	void	   *idarg;

	/*
	 * Resuming a previous request (request_memo.c): when from >
	 * 0, the request's contents are from + length(contents) contents, of
	 * which "contents" holds the ones from index "from" on (reuse, idreuse
	 * and idmsgs are indexed like it: slot k is content from + k; errors
	 * still name contents by their index in the whole request).  The
	 * messages contents 0 .. from - 1 made are resume_n messages of
	 * resume_msgs, from index resume_off on (borrowed; each is added by
	 * reference, in order), and resume_ids is the ids' state after them
	 * (borrowed).  The caller took "from" from an LlmRequestLog of a
	 * request whose first contents were the same (see LlmBoundary).
	 */
	size_t		from;
	struct json_object *resume_msgs;
	size_t		resume_off;
	size_t		resume_n;
	const struct LlmIdState *resume_ids;

	/* NULL, or what the build says of each boundary (LlmRequestLog) */
	struct LlmRequestLog *log;

	/*
	 * NULL, or the text memo of the previous request made through the
	 * same request memo (LlmTextMemo): the body is printed through it
	 */
	struct LlmTextMemo *text;

	/*
	 * NULL, or prompt caching on with this key (prompt_cache.c): OpenAI
	 * sends it as prompt_cache_key, Anthropic marks cache breakpoints
	 */
	const char *cache_key;

	/*
	 * Anthropic with thinking on: when the request continues a tool loop
	 * whose assistant message has no thinking block to begin with (its
	 * thoughts' text was not kept: adk.store_thoughts off), send it
	 * without thinking, which the API then allows (llm_thinking.c)
	 */
	int			thinking_unkept;
} LlmRequestSpec;

/*
 * An open (unanswered) call at a content boundary, its strings copied.
 * Calls already answered are never matched again (llm_ids_match), so the
 * open ones, in order, and the counter are all the ids' state there.
 */
typedef struct LlmIdOpen
{
	char	   *id;
	char	   *name;
	int			synthesized;
} LlmIdOpen;

typedef struct LlmIdState
{
	int			counter;
	size_t		nopen;
	LlmIdOpen  *open;			/* malloc'd, NULL when nopen is 0 */
} LlmIdState;

/* Boundaries with more open calls than this are not resumable */
#define LLM_MAX_RESUME_OPEN		64

/*
 * Whether a request built again can start at a boundary (before content
 * b) with the messages the contents before it made: NO; ANY, whatever
 * content b is (OpenAI and Gemini: every boundary; Anthropic: where no
 * message is pending); SAME, only when content b is the one this request
 * had (Anthropic: content b started a new message, which it would not if
 * another content of the role before it stood there).
 */
typedef enum LlmResumeKind
{
	LLM_RESUME_NO = 0,
	LLM_RESUME_ANY,
	LLM_RESUME_SAME
} LlmResumeKind;

/*
 * A content boundary of a built request: before content b (b = the number
 * of contents: after the last).  nmsgs: how many messages the contents
 * before it made that are complete there (counted from the log's
 * msgs_off); ids: the ids' state there (when resume is not NO).
 */
typedef struct LlmBoundary
{
	size_t		nmsgs;
	int			resume;			/* LlmResumeKind */
	LlmIdState	ids;
} LlmBoundary;

/*
 * What a build says of its boundaries, from spec->from to the number of
 * contents (b[k] is boundary from + k), when it succeeds; and msgs, a new
 * reference to the array in the body that holds the contents' messages,
 * from index msgs_off on (OpenAI: "messages", after the system message;
 * Anthropic: "messages"; Gemini: "contents").  A failed build leaves it
 * empty.  The caller frees it with llm_log_free.
 */
typedef struct LlmRequestLog
{
	LlmBoundary *b;
	size_t		n;
	size_t		cap;
	struct json_object *msgs;
	size_t		msgs_off;
	int			failed;			/* out of memory while logging */
} LlmRequestLog;

extern void llm_log_free(LlmRequestLog *log);
extern void llm_id_state_free(LlmIdState *st);

/*
 * A content whose calls or responses are given ids: its messages are a
 * function of the content and of those ids ("sig": "<length>:<id>" each,
 * in the order of its parts).  The ids are given first; when idmsgs has
 * messages for them, those are added (referenced) instead of made.  When
 * messages are made, made and made_sig are set (a new array of them, and
 * sig, malloc'd); the caller owns both, even when the build fails.
 */
typedef struct LlmIdReuse
{
	char	   *made_sig;
	struct json_object *made;
} LlmIdReuse;

/* 1 when p's requests honour LlmRequestSpec.reuse */
extern int	llm_reuses_contents(LlmProvider p);

/*
 * URL of the request for base endpoint "endpoint" (trailing '/' ignored):
 * {endpoint}/chat/completions, {endpoint}/v1beta/models/{model}:generateContent
 * (or :streamGenerateContent?alt=sse), {endpoint}/v1/messages.  The Gemini
 * model id is percent-encoded; a leading "models/" is dropped.  Malloc'd;
 * NULL when an argument is missing.
 */
extern char *llm_request_url(LlmProvider p, const char *endpoint,
							 const char *model, int stream);

/*
 * Request body as a malloc'd JSON string.  On invalid input returns NULL and,
 * when errmsg is not NULL, sets *errmsg to a malloc'd message (which names
 * the offending content and part by index).
 */
extern char *llm_build_request(const LlmRequestSpec *spec, char **errmsg);

/*
 * llm_build_request in two steps, so that a caller can let go of what the
 * body was built of (spec->contents) before it is printed: the body as a
 * json-c object (the caller puts it; NULL and *errmsg as for
 * llm_build_request), then its text (malloc'd, the compact form of body
 * through spec->text when set; NULL when out of memory).  On failure
 * spec->log is emptied.
 */
extern struct json_object *llm_build_request_object(const LlmRequestSpec *spec,
													char **errmsg);
extern char *llm_print_request(const LlmRequestSpec *spec,
							   struct json_object *body);

/*
 * Parse a complete non-streaming HTTP response into a new LlmResponse.
 * Never returns NULL except when out of memory.  Errors are reported in the
 * object: HTTP status >= 400 or a provider error body give the provider's
 * error type/status as error_code (or "HTTP_<status>") and its message
 * (at most LLM_MAX_ERROR_MESSAGE bytes); an unusable body gives
 * "MALFORMED_RESPONSE"; bad function-call arguments give
 * "MALFORMED_FUNCTION_CALL".  A response without content that did not end
 * with STOP carries its finish_reason as error_code too (as ADK does).
 * Strings in the result are valid UTF-8 without U+0000 (replaced by
 * U+FFFD), so the object always converts to jsonb.
 */
extern struct json_object *llm_parse_response(LlmProvider p, long http_status,
											  const char *body, size_t len);

/*
 * Error response for an HTTP redirect (status 3xx; redirects are not
 * followed): "HTTP_<status>", and the message names where it pointed
 * (location may be NULL), without userinfo, query or fragment, which may
 * carry credentials.
 */
extern struct json_object *llm_redirect_response(long http_status,
												 const char *location);

/* Streaming */
typedef struct LlmStream LlmStream;

/*
 * Called once per text delta with {"partial": true, "content": ...}.  The
 * object is borrowed and valid during the call only.  The callback may
 * leave by longjmp (ereport): the stream then must only be freed, and
 * llm_stream_free releases everything, the partial included.
 */
typedef void (*llm_partial_cb) (struct json_object *partial, void *arg);

/* NULL when out of memory or for a bad provider; cb may be NULL */
extern LlmStream *llm_stream_new(LlmProvider p, llm_partial_cb cb, void *arg);

/*
 * Bytes of the response body as they arrive, split anywhere.  0 ok; -1 when
 * the stream failed (provider error event, malformed data, oversize event):
 * stop reading, llm_stream_finish returns the error.
 */
extern int	llm_stream_feed(LlmStream *s, const char *data, size_t len);

/*
 * The final LlmResponse (new object): text and function calls aggregated,
 * usage, finish_reason, model_version, "turn_complete": true; or an error
 * response (error event, HTTP status >= 400 with the fed bytes as error
 * body, "STREAM_TRUNCATED" when the stream ended before its end).  May be
 * called more than once.
 */
extern struct json_object *llm_stream_finish(LlmStream *s, long http_status);

extern void llm_stream_free(LlmStream *s);

/*
 * Write a new call id, "adk-" + UUID v4, NUL-terminated, into buf (at least
 * LLM_CALL_ID_LEN + 1 bytes).  0 ok, -1 when no randomness is available.
 */
extern int	llm_new_call_id(char *buf);

/* Does id look like one made by llm_new_call_id? */
extern int	llm_is_generated_call_id(const char *id);

/*
 * What a wire message kept for later requests (msg_cache.c) carries as its
 * json-c userdata: its compact text, printed by the first request that
 * prints it after it is kept, which every later request that references
 * the message copies instead of printing it again, and its jsonb for
 * adk.model_calls (a malloc'd Jsonb, made by the ledger on first use).
 * NULL until then.  A kept message is never changed, so neither goes
 * stale.
 */
typedef struct LlmMsgMemo
{
	uint32_t	magic;			/* LLM_MSG_MEMO_MAGIC */
	size_t		len;
	char	   *text;
	void	   *jsonb;
} LlmMsgMemo;

#define LLM_MSG_MEMO_MAGIC 0x6f6d656dU

/* msg's memo, or NULL */
extern LlmMsgMemo *llm_msg_memo(struct json_object *msg);

/* Give msg (an object) its memo: 0, or -1 when out of memory (none then) */
extern int	llm_msg_memo_set(struct json_object *msg);

/*
 * A request body's compact serialization (as llm_json_compact gives it,
 * byte for byte), copying the text of messages that have a memo; malloc'd,
 * NULL when out of memory.
 */
extern char *llm_request_compact(struct json_object *body);

/*
 * What a request printed of its top-level array member (the messages, or
 * Gemini's contents), so that the next request made of the same objects
 * copies their text in runs instead of writing it element by element: the
 * elements (references: an element is never changed once a request holds
 * it, so the same object prints the same), their text joined by ",", and
 * where each element's text ends.  Zeroed: empty.
 */
typedef struct LlmTextMemo
{
	struct json_object **elems;
	size_t	   *end;
	size_t		n;
	char	   *text;
	size_t		len;
} LlmTextMemo;

/*
 * llm_request_compact, byte for byte, copying the text of the elements of
 * body's array member "member" that are the objects memo's request had at
 * the same index; memo then holds this request's.  On failure (NULL) memo
 * is left empty.
 */
extern char *llm_request_compact_memo(struct json_object *body,
									  const char *member, LlmTextMemo *memo);
extern void llm_text_memo_free(LlmTextMemo *memo);

/*
 * Take the tokens an answer wrote to the provider's prompt cache out of
 * its usage_metadata (prompt_cache.c); -1 when none were reported
 */
extern int64_t llm_cache_take_creation(struct json_object *result);

/* Largest thinking "budget_tokens" accepted */
#define LLM_MAX_THINKING_BUDGET 1000000

/*
 * Check config "thinking" (llm_thinking.c): 0, or -1 and *why (malloc'd),
 * what is wrong with it, to follow its name in a message
 */
extern int	llm_thinking_check(struct json_object *v, char **why);

/*
 * Empty the text of the thoughts in a provider request (llm_thinking.c):
 * how many were; -1 when out of memory
 */
extern int	llm_request_empty_thoughts(struct json_object *request);

#ifdef ADK_LLM_INTERNAL

/*
 * Internal interface shared by llm.c, llm_json.c, llm_content.c, llm_ids.c,
 * llm_response.c, llm_stream.c and the adapter_*.c files.
 * Not for use by the PG wrapper.
 */
#include <stdint.h>

#include "buf.h"
#include "sse.h"

extern void llm_set_errmsg(char **errmsg, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));

/* UTF-8 checks (llm_json.c) */
extern int	llm_utf8_valid(const char *s, size_t len);
extern int	llm_json_userdata_detach(struct json_object *obj);
extern size_t llm_utf8_clip(const char *s, size_t len, size_t max);
extern int	llm_is_blank(const char *s, size_t len);

/* JSON received from a provider: strict, UTF-8 checked, LLM_MAX_WIRE_DEPTH */
extern struct json_object *llm_json_parse(const char *buf, size_t len,
										  const char **why);

/* Typed member access; NULL / 0 when absent or of another type */
extern struct json_object *llm_get(struct json_object *obj, const char *key);
extern struct json_object *llm_get_obj(struct json_object *obj, const char *key);
extern struct json_object *llm_get_arr(struct json_object *obj, const char *key);
extern struct json_object *llm_get_idx(struct json_object *obj, const char *key,
									   size_t i);
extern const char *llm_get_str(struct json_object *obj, const char *key);
extern int	llm_get_int(struct json_object *obj, const char *key, int64_t *out);
/* A token count: 0 .. LLM_MAX_TOKEN_COUNT (saturated); 0 when absent or bad */
extern int	llm_get_count(struct json_object *obj, const char *key, int64_t *out);
/* a + b for counts, saturated at LLM_MAX_TOKEN_COUNT */
extern int64_t llm_count_add(int64_t a, int64_t b);

/* Add a member; the value is a borrowed object (its count is raised) */
extern void llm_add_ref(struct json_object *obj, const char *key,
						struct json_object *val);
extern void llm_add_str(struct json_object *obj, const char *key,
						const char *val);
extern char *llm_json_compact(struct json_object *obj);

/* One decoded ADK part; all pointers are borrowed from the content */
typedef enum LlmPartKind
{
	LLM_PART_TEXT,
	LLM_PART_CALL,
	LLM_PART_RESPONSE,
	LLM_PART_INLINE
} LlmPartKind;

typedef struct LlmPart
{
	LlmPartKind kind;
	const char *text;			/* TEXT */
	size_t		text_len;
	struct json_object *text_obj;	/* TEXT: the string object of text, for
									 * a message to reference (not copy) */
	int			thought;		/* TEXT: model reasoning */
	const char *signature;		/* thought_signature, any kind, or NULL */
	const char *id;				/* CALL, RESPONSE: NULL when none */
	const char *name;			/* CALL, RESPONSE */
	struct json_object *args;	/* CALL: args; RESPONSE: response; NULL
								 * when absent (see llm_part_args) */
	const char *mime_type;		/* INLINE */
	const char *data;			/* INLINE: base64 */
} LlmPart;

extern int	llm_content_decode(struct json_object *content, size_t index,
							   int *is_model, struct json_object **parts,
							   char **errmsg);
extern int	llm_part_decode(struct json_object *part, size_t ci, size_t pi,
							LlmPart *out, char **errmsg);
extern struct json_object *llm_part_args(const LlmPart *part);

/* Deterministic ids for calls and responses that have none */
typedef struct LlmIdCall
{
	const char *name;
	char	   *id;
	int			synthesized;	/* the call came without an id */
	int			answered;
} LlmIdCall;

typedef struct LlmIdSynth
{
	LlmIdCall  *calls;
	size_t		ncalls;
	size_t		cap;
	int			counter;
	int			uses;			/* calls of llm_ids_call/response */
	size_t		first_open;		/* calls before it are all answered: a
								 * request's responses cost O(open calls),
								 * not O(calls), to match */
} LlmIdSynth;

/*
 * The ids' state of ids as an LlmIdState (*st, malloc'd strings): 0, or
 * -1 when out of memory or with more than LLM_MAX_RESUME_OPEN open calls
 * (*st is then empty)
 */
extern int	llm_ids_save(const LlmIdSynth *ids, LlmIdState *st);

/*
 * Set ids (empty) to the state st; names are borrowed from st, which must
 * outlive ids' use.  0, or -1 when out of memory.
 */
extern int	llm_ids_restore(LlmIdSynth *ids, const LlmIdState *st);

/*
 * Log boundary b of the build (spec->log, when not NULL): nmsgs messages
 * complete, resume kind, the ids' state (NULL: none, for Gemini; saved
 * only when resume is not NO).  A boundary whose ids cannot be saved is
 * logged as not resumable.  Out of memory sets log->failed.
 */
extern void llm_log_boundary(LlmRequestLog *log, size_t nmsgs, int resume,
							 const LlmIdSynth *ids);

/* Log a boundary whose ids' state was saved before (taken over) */
extern void llm_log_saved(LlmRequestLog *log, size_t nmsgs, int resume,
						  LlmIdState *st);

/* Finish the log of a successful build: msgs and msgs_off (llm.h) */
extern void llm_log_finish(LlmRequestLog *log, struct json_object *msgs,
						   size_t msgs_off);

extern const char *llm_ids_call(LlmIdSynth *ids, const LlmPart *part);
extern const char *llm_ids_response(LlmIdSynth *ids, const LlmPart *part);
extern void llm_ids_free(LlmIdSynth *ids);

/*
 * What an adapter learnt of a content that took its ids without an error
 * (its calls, in a model content, or its responses, in a user content, by
 * part, with their own ids and names), kept as the content's json-c
 * userdata: the next requests that send the same kept (never changed)
 * content give it the same llm_ids_* calls without decoding it.  Every
 * function here takes a NULL plan (out of memory, or the content already
 * has userdata) and does nothing with it.
 */
typedef struct LlmIdPlan LlmIdPlan;

extern LlmIdPlan *llm_ids_plan_new(struct json_object *content, int is_model,
								   size_t nparts);
extern void llm_ids_plan_add(LlmIdPlan *plan, size_t part, const LlmPart *p);
extern void llm_ids_plan_keep(struct json_object *content, LlmIdPlan *plan);
extern void llm_ids_plan_free(LlmIdPlan *plan);

/*
 * Give content the ids its plan says, as the adapter would: (*assigned)[k]
 * for part k (malloc'd), *sig the ids as one string (malloc'd).  1 when
 * replayed, 0 when the content has no plan, -1 when out of memory.
 */
extern int	llm_ids_replay(struct json_object *content, LlmIdSynth *ids,
						   const char ***assigned, char **sig);

/* Append "<length>:<id>" to b (an ids signature); 0, or -1 */
extern int	llm_ids_sig_append(LlmBuf *b, const char *id);

/*
 * An adapter's rule for a part of a content (is_model: a model content):
 * 1 when it takes an id (a call of a model content, a response of a user
 * content), 0 when it takes none, -1 (errmsg set) when the build would
 * fail on it -- the checks the build makes up to the part's id, in the
 * same order, with the same errors.
 */
typedef int (*LlmIdCheck) (const LlmPart *part, int is_model, size_t ci,
						   size_t pi, char **errmsg);

/*
 * The ids content ci's calls (a model content) or responses (a user
 * content) are given, in the order of its parts, as the build would give
 * them: (*assigned)[k] for part k, NULL for the other parts (malloc'd; the
 * strings are owned by ids or the content); *sig, the ids as one string,
 * "<length>:<id>" each (malloc'd).  A content that took its ids before
 * replays its plan; one that takes them now without an error keeps one.
 * 0, or -1.
 */
extern int	llm_ids_assign(struct json_object *content, size_t ci,
						   LlmIdSynth *ids, LlmIdCheck check,
						   const char ***assigned, char **sig,
						   char **errmsg);

/* Generation config keys copied to the wire under another name */
typedef enum LlmConfigType
{
	LLM_CFG_NUMBER,
	LLM_CFG_INTEGER,
	LLM_CFG_STRINGS
} LlmConfigType;

typedef struct LlmConfigMap
{
	const char *key;			/* ADK name, e.g. "max_output_tokens" */
	const char *wire;			/* provider name, e.g. "maxOutputTokens" */
	LlmConfigType type;
} LlmConfigMap;

/* Copy the config values named in map (ending with a NULL key) into dst */
extern int	llm_config_apply(struct json_object *dst, const LlmRequestSpec *spec,
							 const LlmConfigMap *map, char **errmsg);
extern int	llm_tool_decode(struct json_object *tool, size_t index,
							const char **name, const char **description,
							struct json_object **parameters, char **errmsg);

/* Building LlmResponse objects */
extern struct json_object *llm_error_response(const char *code,
											  const char *msg, size_t len);
extern struct json_object *llm_error_responsef(const char *code,
											   const char *fmt,...)
			__attribute__((format(printf, 2, 3)));
extern struct json_object *llm_text_part(const char *text, size_t len,
										 int thought, const char *signature);
extern struct json_object *llm_call_part(const char *id, const char *name,
										 struct json_object *args,
										 const char *signature);
extern void llm_set_content(struct json_object *resp, struct json_object *parts);
extern void llm_set_finish(struct json_object *resp, const char *finish,
						   const char *message);
extern void llm_usage_set(struct json_object *usage, const char *key,
						  int64_t value);
extern struct json_object *llm_usage_from(struct json_object *src,
										  const char *const *map);
extern const char *llm_map_finish(const char *reason,
								  const char *const *map);

/* Thinking (llm_thinking.c): each provider's mapping of config "thinking" */
extern int64_t llm_thinking_budget(struct json_object *thinking);
extern const char *llm_thinking_effort(struct json_object *thinking);
extern int	llm_thinking_gemini(struct json_object *gc, const LlmRequestSpec *spec,
								char **errmsg);
extern void llm_thinking_anthropic_fit(struct json_object *body);
extern int	llm_thinking_anthropic(struct json_object *body,
								   const LlmRequestSpec *spec, char **errmsg);
extern int	llm_thinking_openai(struct json_object *body,
								const LlmRequestSpec *spec, char **errmsg);

/* Prompt caching (prompt_cache.c) */
extern int	llm_cache_anthropic(struct json_object *body);

/* Per-provider operations */
typedef struct LlmSlot LlmSlot;

typedef struct LlmAdapter
{
	/* request body, or NULL and *errmsg */
	struct json_object *(*build) (const LlmRequestSpec *spec, char **errmsg);
	/* LlmResponse from a successful, well-formed body */
	struct json_object *(*parse) (struct json_object *body);
	/* 1 and code/message when body is a provider error */
	int			(*error) (struct json_object *body, const char **code,
						  const char **msg);
	/* one SSE event; 0 ok, -1 stream failed */
	int			(*event) (LlmStream *s, const SseEvent *ev);
} LlmAdapter;

extern const LlmAdapter llm_openai_adapter;
extern const LlmAdapter llm_gemini_adapter;
extern const LlmAdapter llm_anthropic_adapter;

/* The adapter of a provider, or NULL (llm.c) */
extern const LlmAdapter *llm_adapter(LlmProvider p);

/* resp, or an error response in its place when it would not fit (llm.c) */
extern struct json_object *llm_fit_response(struct json_object *resp);

/* One aggregated piece of a streamed response */
typedef enum LlmSlotKind
{
	LLM_SLOT_TEXT,				/* text run (buf) */
	LLM_SLOT_CALL,				/* function call (buf or args) */
	LLM_SLOT_PART,				/* finished ADK part (args) */
	LLM_SLOT_IGNORE				/* provider block we do not report */
} LlmSlotKind;

struct LlmSlot
{
	LlmSlotKind kind;
	int			key;			/* provider's index; < 0 = none */
	int			thought;
	LlmBuf		buf;			/* text, or call arguments as JSON text */
	struct json_object *args;	/* call arguments received whole, or the
								 * part of a PART slot */
	char	   *id;
	char	   *name;
	char	   *signature;
};

struct LlmStream
{
	LlmProvider provider;
	const LlmAdapter *adapter;
	llm_partial_cb cb;
	void	   *cb_arg;
	SseParser  *sse;
	LlmBuf		raw;			/* first bytes fed, for error bodies */
	int			raw_overflow;
	LlmSlot    *slots;
	size_t		nslots;
	size_t		slots_cap;
	int			next_key;		/* for slots made without a provider index */
	struct json_object *usage;	/* ADK usage_metadata */
	char	   *finish_reason;	/* ADK (Gemini) enum name */
	char	   *finish_message;
	char	   *model_version;
	char	   *error_code;
	char	   *error_message;
	int			complete;		/* end of stream or finish reason seen */
	int			failed;
	struct json_object *chunk;	/* event being handled */
	struct json_object *partial;	/* partial being delivered */
};

extern struct json_object *llm_stream_json(LlmStream *s, const SseEvent *ev);
extern int	llm_stream_fail(LlmStream *s, const char *code, const char *msg);
extern int	llm_stream_text(LlmStream *s, int key, const char *text,
							size_t len, int thought);
extern LlmSlot *llm_stream_find(LlmStream *s, int key);
extern LlmSlot *llm_stream_new_slot(LlmStream *s, int key, LlmSlotKind kind);
extern int	llm_stream_setstr(char **field, const char *val);
extern struct json_object *llm_stream_usage(LlmStream *s);

#endif							/* ADK_LLM_INTERNAL */

#endif							/* ADK_LLM_H */
