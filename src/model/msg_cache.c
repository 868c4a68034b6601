/*-------------------------------------------------------------------------
 *
 * msg_cache.c
 *	  The wire messages each content of a request made, kept for the next
 *	  requests of the backend.
 *
 * A tool loop sends the whole history with every model call; converting
 * each content to json-c and then to the provider's messages, and freeing
 * them all again, cost more than serializing the request (issue 12, §7).
 * The provider's messages of a content depend on nothing but the content's
 * bytes when it holds no function call or response (adapters say which:
 * LlmRequestSpec.reuse), so they are kept here, keyed by the provider and
 * the bytes of the content's jsonb container (jsonb is canonical: equal
 * contents have equal bytes), and later requests reference them instead
 * of making them again.  Being keyed by content, nothing here depends on
 * how the history got that content: compaction, other writers, branches
 * and agents' views change the contents prompt assembly hands in, and a
 * changed content simply misses.
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
 * jsonb the first time a ledger row needs it (request_jsonb.c).
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

typedef struct MsgEntry
{
	struct MsgEntry *next;
	uint32		hash;
	LlmProvider provider;
	size_t		len;
	struct json_object *msgs;
	char		key[FLEXIBLE_ARRAY_MEMBER];
} MsgEntry;

static MsgEntry **buckets = NULL;
static size_t used = 0;

static uint32 msg_hash(LlmProvider p, const char *key, size_t len);

/*
 * A hash of the content's bytes, eight at a time: the bytes of every
 * content of every request are hashed, and hash_bytes took several times
 * longer.  Entries are told apart by their bytes (memcmp), so a collision
 * costs a comparison, never a wrong message.
 */
static uint32
msg_hash(LlmProvider p, const char *key, size_t len)
{
	uint64		h = UINT64CONST(0x9e3779b97f4a7c15) ^ ((uint64) len << 8) ^ (uint64) p;
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
 * The messages kept for (p, key), borrowed (valid until the next
 * adk_msg_cache_put), or NULL.
 */
struct json_object *
adk_msg_cache_get(LlmProvider p, const char *key, size_t len)
{
	uint32		h;
	MsgEntry   *e;

	if (buckets == NULL)
		return NULL;
	h = msg_hash(p, key, len);
	for (e = buckets[h & (NBUCKETS - 1)]; e != NULL; e = e->next)
		if (e->hash == h && e->provider == p && e->len == len &&
			memcmp(e->key, key, len) == 0)
			return e->msgs;
	return NULL;
}

/*
 * Keep msgs (an array of wire messages; this takes the caller's reference)
 * for (p, key), each message with its memo (llm.h: its text, printed once
 * here, and its jsonb, made by the ledger when it first needs it).
 * Already kept, or no memory: msgs is put.
 */
void
adk_msg_cache_put(LlmProvider p, const char *key, size_t len,
				  struct json_object *msgs)
{
	uint32		h;
	MsgEntry   *e;

	size_t		i;

	if (len > CACHE_BYTES / 8 ||
		adk_msg_cache_get(p, key, len) != NULL)
	{
		json_object_put(msgs);
		return;
	}
	for (i = 0; i < json_object_array_length(msgs); i++)
		if (llm_msg_memo_set(json_object_array_get_idx(msgs, i)) < 0)
		{
			json_object_put(msgs);
			return;
		}
	if (used + ENTRY_COST(len) > CACHE_BYTES)
		adk_msg_cache_reset();
	if (buckets == NULL)
		buckets = calloc(NBUCKETS, sizeof(MsgEntry *));
	e = buckets ? malloc(offsetof(MsgEntry, key) + len) : NULL;
	if (e == NULL)
	{
		json_object_put(msgs);
		return;
	}
	h = msg_hash(p, key, len);
	e->hash = h;
	e->provider = p;
	e->len = len;
	e->msgs = msgs;
	memcpy(e->key, key, len);
	e->next = buckets[h & (NBUCKETS - 1)];
	buckets[h & (NBUCKETS - 1)] = e;
	used += ENTRY_COST(len);
}

/*
 * Empty the cache: when it is full, and when the backend's last run ends.
 * Frees only; never raises (it runs from a memory context reset callback).
 */
void
adk_msg_cache_reset(void)
{
	int			i;

	if (buckets == NULL)
		return;
	for (i = 0; i < NBUCKETS; i++)
	{
		while (buckets[i] != NULL)
		{
			MsgEntry   *e = buckets[i];

			buckets[i] = e->next;
			json_object_put(e->msgs);
			free(e);
		}
	}
	used = 0;
}
