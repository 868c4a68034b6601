/*-------------------------------------------------------------------------
 *
 * msg_cache.c
 *	  The wire messages each content of a request made, kept for the next
 *	  requests of the backend.
 *
 * A tool loop sends the whole history with every model call; converting
 * each content to json-c and then to the provider's messages, and freeing
 * them all again, cost more than serializing the request.
 * The provider's messages of a content depend on nothing but the content's
 * bytes when it holds no function call or response, or (Gemini) always, or
 * (Anthropic) when all its calls and responses have ids of their own
 * (adapters say which: LlmRequestSpec.reuse), so they are kept here, keyed
 * by the provider and
 * the bytes of the content's jsonb container (jsonb is canonical: equal
 * contents have equal bytes), and later requests reference them instead
 * of making them again.  Being keyed by content, nothing here depends on
 * how the history got that content: compaction, other writers, branches
 * and agents' views change the contents prompt assembly hands in, and a
 * changed content simply misses.
 *
 * Otherwise (OpenAI, Anthropic) a content with function calls or
 * responses makes messages that depend on the ids they are given over the
 * request ("call_<n>" for a call the runner stripped of its "adk-" id, a
 * response answering by name): such a content is kept in json-c (no
 * conversion next time), and its messages per content and ids
 * (LlmIdReuse: the adapter gives the ids first, replaying the content's
 * plan, llm_ids.c, then asks for the messages).  So a tool loop's history
 * costs a copy per content, whatever it holds.
 *
 * Bounded: entries are charged their key and an estimate of their json-c
 * objects, and the cache starts over empty when a new entry would take it
 * past adk.request_cache_size (per backend; 0 turns the cache off).  Its
 * life: from a run's first request until the backend's last run in flight
 * ends (runner/run.c calls adk_msg_cache_reset then), so an idle backend
 * or job worker keeps nothing.  Memory is malloc'd, like json-c's own, so
 * that keeping an entry never raises an error (an entry that cannot be
 * kept is just freed).  Entries are only read while a request is built
 * and serialized, never changed -- except that a message's memo gets its
 * text and its jsonb the first time a request is printed and a ledger row
 * made with it (llm_json.c, request_jsonb.c).
 *
 * IDENTIFICATION
 *	  src/model/msg_cache.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <json-c/json.h>

#include "model/msg_cache.h"

/* adk.request_cache_size, in kB */
int			adk_request_cache_kb = 16 * 1024;

#define CACHE_BYTES ((size_t) adk_request_cache_kb * 1024)
#define NBUCKETS 16384			/* a power of 2 */
/*
 * what an entry costs besides its key, roughly: its json-c objects, and
 * its messages' text and jsonb
 */
#define ENTRY_COST(len) (sizeof(MsgEntry) + (len) * 7 + 256)

/*
 * An entry, for a kind and a key: for (provider, a content's bytes), the
 * messages of a content that depends on nothing else; for (CONTENT_KIND +
 * provider, a content's bytes), a content whose messages depend on the
 * ids its calls and responses are given (LlmIdReuse), in json-c; for
 * (IDMSG_KIND + provider, a content's bytes, NUL, the ids), the messages
 * it made with those ids.  An identical content (a call of the same tool
 * with the same arguments, say) is given other ids in each place it
 * holds, so the messages are kept per place's ids.
 */
#define CONTENT_KIND 64
#define IDMSG_KIND 128

typedef struct MsgEntry
{
	struct MsgEntry *next;		/* in its bucket */
	struct MsgEntry *older;		/* the entry added before it */
	uint32		hash;
	int			kind;
	size_t		len;
	struct json_object *msgs;	/* messages, or the content */
	char		key[FLEXIBLE_ARRAY_MEMBER];
} MsgEntry;

/*
 * The buckets, and every entry newest first (so that emptying the cache
 * visits the entries it holds, not the 16,384 buckets: it is emptied at
 * the end of every run)
 */
static MsgEntry **buckets = NULL;
static MsgEntry *newest = NULL;
static size_t used = 0;

static uint32 msg_hash(const char *key, size_t len);
static uint32 key_hash(int kind, uint32 h1, const char *key2, size_t len2);
static MsgEntry *find2(int kind, uint32 h1, const char *key1, size_t len1,
					   const char *key2, size_t len2);
static MsgEntry *add2(int kind, uint32 h1, const char *key1, size_t len1,
					  const char *key2, size_t len2);
static bool memo_all(struct json_object *msgs);
static void free_entry(MsgEntry *e);

/*
 * A hash of the content's bytes, eight at a time: the bytes of every
 * content of every request are hashed, and hash_bytes took several times
 * longer.  Entries are told apart by their bytes (memcmp), so a collision
 * costs a comparison, never a wrong message.
 */
static uint32
msg_hash(const char *key, size_t len)
{
	uint64		h = UINT64CONST(0x9e3779b97f4a7c15) ^ ((uint64) len << 8);
	size_t		i;
	uint64		w;

	for (i = 0; i + 8 <= len; i += 8)
	{
		memcpy(&w, key + i, 8);
		h = (h ^ w) * UINT64CONST(0xff51afd7ed558ccd);
		h ^= h >> 32;
	}
	w = 0;
	memcpy(&w, key + i, len - i);
	h = (h ^ w) * UINT64CONST(0xc4ceb9fe1a85ec53);
	h ^= h >> 29;
	return (uint32) h;
}

/*
 * The hash of a content's bytes, computed once per content and request
 * for all its lookups (adk_msg_cache_get and the others take it).
 */
uint32
adk_msg_cache_hash(const char *key, size_t len)
{
	return msg_hash(key, len);
}

/* the hash of (kind, key1 [, key2]), h1 the hash of key1 */
static uint32
key_hash(int kind, uint32 h1, const char *key2, size_t len2)
{
	uint32		h = h1 ^ ((uint32) kind * 0x9e3779b1U);

	if (key2 != NULL)
		h ^= msg_hash(key2, len2) * 0x85ebca6bU;
	return h;
}

/*
 * The entry for (kind, key1 [, NUL, key2]), h1 the hash of key1 (key2 may
 * be NULL).  Never allocates or raises (the adapters look entries up
 * while they build).
 */
static MsgEntry *
find2(int kind, uint32 h1, const char *key1, size_t len1, const char *key2,
	  size_t len2)
{
	uint32		h;
	size_t		len = key2 ? len1 + 1 + len2 : len1;
	MsgEntry   *e;

	if (buckets == NULL)
		return NULL;
	h = key_hash(kind, h1, key2, len2);
	for (e = buckets[h & (NBUCKETS - 1)]; e != NULL; e = e->next)
		if (e->hash == h && e->kind == kind && e->len == len &&
			memcmp(e->key, key1, len1) == 0 &&
			(key2 == NULL ||
			 (e->key[len1] == '\0' && memcmp(e->key + len1 + 1, key2, len2) == 0)))
			return e;
	return NULL;
}

/*
 * A new, empty entry for (kind, key1 [, NUL, key2]), or NULL when it
 * cannot be kept (too big, or no memory).  The cache may start over to
 * make room.
 */
static MsgEntry *
add2(int kind, uint32 h1, const char *key1, size_t len1, const char *key2,
	 size_t len2)
{
	size_t		len = key2 ? len1 + 1 + len2 : len1;
	uint32		h;
	MsgEntry   *e;

	if (len > CACHE_BYTES / 8)
		return NULL;
	if (used + ENTRY_COST(len) > CACHE_BYTES)
		adk_msg_cache_reset();
	if (buckets == NULL)
		buckets = calloc(NBUCKETS, sizeof(MsgEntry *));
	e = buckets ? calloc(1, offsetof(MsgEntry, key) + len) : NULL;
	if (e == NULL)
		return NULL;
	h = key_hash(kind, h1, key2, len2);
	e->hash = h;
	e->kind = kind;
	e->len = len;
	memcpy(e->key, key1, len1);
	if (key2 != NULL)
	{
		e->key[len1] = '\0';
		memcpy(e->key + len1 + 1, key2, len2);
	}
	e->next = buckets[h & (NBUCKETS - 1)];
	buckets[h & (NBUCKETS - 1)] = e;
	e->older = newest;
	newest = e;
	used += ENTRY_COST(len);
	return e;
}

/* Give every message of msgs its memo; false when out of memory */
static bool
memo_all(struct json_object *msgs)
{
	size_t		i;

	for (i = 0; i < json_object_array_length(msgs); i++)
		if (llm_msg_memo_set(json_object_array_get_idx(msgs, i)) < 0)
			return false;
	return true;
}

/*
 * The messages kept for (p, key), borrowed (valid until the next
 * adk_*_cache_put, which may empty the cache to make room), or NULL.
 */
struct json_object *
adk_msg_cache_get(LlmProvider p, uint32 h, const char *key, size_t len)
{
	MsgEntry   *e = find2((int) p, h, key, len, NULL, 0);

	return e ? e->msgs : NULL;
}

/*
 * Keep msgs (an array of wire messages; this takes the caller's reference)
 * for (p, key), each message with its memo (llm.h: its text, printed by
 * the next request that prints it, and its jsonb, made by the ledger when
 * it first needs it).
 * Already kept, or no memory: msgs is put.
 */
void
adk_msg_cache_put(LlmProvider p, uint32 h, const char *key, size_t len,
				  struct json_object *msgs)
{
	MsgEntry   *e;

	/*
	 * Memos first, also when msgs is not kept (another content with the
	 * same bytes was): the request memo (request_memo.c) references these very
	 * messages in the next requests, which then copy their text too.
	 */
	if (!memo_all(msgs) || find2((int) p, h, key, len, NULL, 0) != NULL ||
		(e = add2((int) p, h, key, len, NULL, 0)) == NULL)
	{
		json_object_put(msgs);
		return;
	}
	e->msgs = msgs;
}

/*
 * The content kept for (p, key) in json-c (borrowed, valid as for
 * adk_msg_cache_get), or NULL.
 */
struct json_object *
adk_content_cache_get(LlmProvider p, uint32 h, const char *key, size_t len)
{
	MsgEntry   *e = find2(CONTENT_KIND + (int) p, h, key, len, NULL, 0);

	return e ? e->msgs : NULL;
}

/*
 * Keep content (json-c; this takes the caller's reference) for (p, key).
 * Already kept, or no memory: content is put.
 */
void
adk_content_cache_put(LlmProvider p, uint32 h, const char *key, size_t len,
					  struct json_object *content)
{
	MsgEntry   *e;

	if (find2(CONTENT_KIND + (int) p, h, key, len, NULL, 0) != NULL ||
		(e = add2(CONTENT_KIND + (int) p, h, key, len, NULL, 0)) == NULL)
	{
		json_object_put(content);
		return;
	}
	e->msgs = content;
}

/*
 * The messages kept for the content (p, key) given the ids in sig
 * (borrowed, valid as for adk_msg_cache_get), or NULL.
 */
struct json_object *
adk_idmsg_cache_get(LlmProvider p, uint32 h, const char *key, size_t len,
					const char *sig)
{
	MsgEntry   *e = find2(IDMSG_KIND + (int) p, h, key, len, sig, strlen(sig));

	return e ? e->msgs : NULL;
}

/*
 * Keep msgs (this takes the caller's reference) for the content (p, key)
 * given the ids in sig, each message with its memo.  Already kept, or no
 * memory: msgs is put.
 */
void
adk_idmsg_cache_put(LlmProvider p, uint32 h, const char *key, size_t len,
					const char *sig, struct json_object *msgs)
{
	size_t		slen = strlen(sig);
	MsgEntry   *e;

	/* memos first, as adk_msg_cache_put gives them */
	if (!memo_all(msgs) ||
		find2(IDMSG_KIND + (int) p, h, key, len, sig, slen) != NULL ||
		(e = add2(IDMSG_KIND + (int) p, h, key, len, sig, slen)) == NULL)
		json_object_put(msgs);
	else
		e->msgs = msgs;
}

static void
free_entry(MsgEntry *e)
{
	if (e->msgs != NULL)
		json_object_put(e->msgs);
	free(e);
}

/*
 * Empty the cache: when it is full, and when the backend's last run ends.
 * Frees only; never raises (it runs from a memory context reset callback).
 */
void
adk_msg_cache_reset(void)
{
	while (newest != NULL)
	{
		MsgEntry   *e = newest;

		newest = e->older;
		buckets[e->hash & (NBUCKETS - 1)] = NULL;
		free_entry(e);
	}
	used = 0;
}
