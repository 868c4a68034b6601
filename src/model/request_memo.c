/*-------------------------------------------------------------------------
 *
 * request_memo.c
 *	  A run's request memo: the last request built through it, so that the
 *	  next one, whose contents begin with the same contents, is built from
 *	  where they stop being the same (generate.c builds it).
 *
 * What the memo holds and how a request resumes from it is told at the
 * struct (request_memo.h).  Here: where a request resumes (the contents it
 * shares with the memo's, byte for byte, and the last boundary before),
 * taking a new request over, emptying it, and its life (its owner's
 * memory context).  A request larger than adk_request_memo_max keeps no
 * memo at all.
 *
 * IDENTIFICATION
 *	  src/model/request_memo.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include <json-c/json.h>

#include "model/generate.h"
#include "model/llm.h"
#include "model/request_memo.h"

static void memo_release(void *arg);

/*
 * How many leading contents of b are byte for byte those of a (both
 * arrays): their JEntries and data compared with memcmp, none decoded.
 * Equal bytes are equal contents (jsonb is canonical), and the elements
 * of both are laid out alike up to the first that differs (same lengths,
 * so the same offsets and alignment padding).
 */
int
adk_memo_same_prefix(Jsonb *a, Jsonb *b)
{
	int			na = (int) JB_ROOT_COUNT(a);
	int			nb = (int) JB_ROOT_COUNT(b);
	const char *da = (const char *) &a->root.children[na];
	const char *db = (const char *) &b->root.children[nb];
	uint32		off = 0;
	int			i;

	for (i = 0; i < na && i < nb; i++)
	{
		JEntry		ea = a->root.children[i];
		JEntry		eb = b->root.children[i];
		uint32		la;
		uint32		lb;

		if ((ea & JENTRY_TYPEMASK) != (eb & JENTRY_TYPEMASK))
			break;
		la = JBE_HAS_OFF(ea) ? JBE_OFFLENFLD(ea) - off : JBE_OFFLENFLD(ea);
		lb = JBE_HAS_OFF(eb) ? JBE_OFFLENFLD(eb) - off : JBE_OFFLENFLD(eb);
		if (la != lb || memcmp(da + off, db + off, la) != 0)
			break;
		off += la;
	}
	return i;
}

/*
 * Where a request whose first q contents are the memo's starts: the last
 * boundary at or before q the adapter can resume at (LLM_RESUME_SAME
 * ones only before q: the content after them must be the same), or 0
 * (built whole).
 */
int
adk_memo_resume_point(const AdkRequestMemo *memo, int q)
{
	int			b;

	if ((size_t) q >= memo->nb)
		q = (int) memo->nb - 1;
	for (b = q; b > 0; b--)
		if (memo->b[b].resume == LLM_RESUME_ANY ||
			(memo->b[b].resume == LLM_RESUME_SAME && b < q))
			return b;
	return 0;
}

/*
 * After a successful build of contents (from "from" on, with the log
 * log): the memo holds that request -- the boundaries before "from"
 * kept, the log's from there on, its messages, a copy of the contents.
 * Never raises: when something cannot be kept the memo is emptied (the
 * next request is built whole).  The log is taken over (emptied).
 */
void
adk_memo_take(AdkRequestMemo *memo, LlmProvider p, const char *model,
			  Jsonb *contents, int from, LlmRequestLog *log)
{
	int			n = (int) JB_ROOT_COUNT(contents);
	Jsonb	   *copy = NULL;
	char	   *mcopy = NULL;
	/* the text the build printed stays, whatever becomes of the rest */
	LlmTextMemo text = memo->text;
	size_t		i;

	memset(&memo->text, 0, sizeof(memo->text));
	if (!memo->valid || from == 0)
	{
		adk_memo_empty(memo, false);
		from = 0;
	}
	if (log->failed || log->msgs == NULL || log->n != (size_t) (n - from + 1) ||
		(copy = MemoryContextAllocExtended(memo->owner, VARSIZE(contents),
										   MCXT_ALLOC_NO_OOM)) == NULL ||
		(mcopy = MemoryContextAllocExtended(memo->owner, strlen(model) + 1,
											MCXT_ALLOC_NO_OOM)) == NULL)
		goto fail;
	if ((size_t) n + 1 > memo->cap)
	{
		size_t		cap = Max((size_t) n + 1, memo->cap * 2);
		LlmBoundary *nb = realloc(memo->b, cap * sizeof(LlmBoundary));

		if (nb == NULL)
			goto fail;
		memo->b = nb;
		memo->cap = cap;
	}
	memcpy(copy, contents, VARSIZE(contents));
	strcpy(mcopy, model);

	/* the boundaries from "from" on are this request's */
	for (i = (size_t) from; i < memo->nb; i++)
		llm_id_state_free(&memo->b[i].ids);
	memcpy(&memo->b[from], log->b, log->n * sizeof(LlmBoundary));
	memo->nb = (size_t) n + 1;
	log->n = 0;
	if (memo->msgs != NULL)
		json_object_put(memo->msgs);
	memo->msgs = log->msgs;
	memo->msgs_off = log->msgs_off;
	log->msgs = NULL;
	llm_log_free(log);
	if (memo->contents != NULL)
		pfree(memo->contents);
	if (memo->model != NULL)
		pfree(memo->model);
	memo->contents = copy;
	memo->model = mcopy;
	memo->provider = p;
	memo->valid = true;
	memo->text = text;
	return;

fail:
	if (copy != NULL)
		pfree(copy);
	adk_memo_empty(memo, false);
	llm_log_free(log);
	memo->text = text;
}

/*
 * Forget the memo's request; freeing: owner is going (its memory with
 * it), so only what is not in it is released.
 */
void
adk_memo_empty(AdkRequestMemo *memo, bool freeing)
{
	size_t		i;

	for (i = 0; i < memo->nb; i++)
		llm_id_state_free(&memo->b[i].ids);
	memo->nb = 0;
	if (freeing)
	{
		free(memo->b);
		memo->b = NULL;
		memo->cap = 0;
	}
	if (memo->msgs != NULL)
		json_object_put(memo->msgs);
	memo->msgs = NULL;
	llm_text_memo_free(&memo->text);
	if (!freeing && memo->contents != NULL)
		pfree(memo->contents);
	if (!freeing && memo->model != NULL)
		pfree(memo->model);
	memo->contents = NULL;
	memo->model = NULL;
	memo->valid = false;
}

static void
memo_release(void *arg)
{
	adk_memo_empty((AdkRequestMemo *) arg, true);
}

/*
 * The largest request (its contents' bytes) a run keeps memos of for its
 * next requests: a 32nd of adk.max_request_bytes (640 kB at the default).
 * The memos hold it several times more -- prompt.c a piece per event and
 * the last contents, a request memo its contents, messages and printed
 * text -- and a run with them peaks at about ten times such a request
 * (test/bench/request_memory.sh), a third of adk.max_request_bytes.  A
 * larger request is built whole every time (the copies of its bytes each
 * request makes cost about what that does), and neither its history read
 * (prompt.c) nor its messages (msg_cache.c) are kept: building it holds at
 * most three copies of its bytes at a time (build_body), and while it is
 * in flight its run holds its contents, its text and the ledger's
 * compressed copy.  The threshold is that low so that the requests a
 * memory bound is about (a megabyte and up at the default) take that
 * path, while a long session of short events (3,000 of them: about
 * 0.3 MB of request) keeps its memos (docs/workers.md, Memory per run).
 */
Size
adk_request_memo_max(void)
{
	return (Size) adk_max_request_bytes / 32;
}

/*
 * A request memo living in owner (see AdkRequestMemo).
 */
AdkRequestMemo *
adk_request_memo_new(MemoryContext owner)
{
	AdkRequestMemo *memo = MemoryContextAllocZero(owner, sizeof(AdkRequestMemo));

	memo->owner = owner;
	memo->cb.func = memo_release;
	memo->cb.arg = memo;
	MemoryContextRegisterResetCallback(owner, &memo->cb);
	return memo;
}
