/*-------------------------------------------------------------------------
 *
 * request_memo.h
 *	  A run's request memo (AdkRequestMemo) as generate.c builds requests
 *	  through it: private to generate.c and request_memo.c.
 *
 * IDENTIFICATION
 *	  src/model/request_memo.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_REQUEST_MEMO_H
#define ADK_REQUEST_MEMO_H

#include "utils/jsonb.h"

#include "model/generate.h"
#include "model/llm.h"

/*
 * A request memo: the last request built through it, kept whole.  A run
 * keeps one per agent and branch (flow.c), and their requests grow by a
 * turn or a tool call at a time: the next request's contents begin with
 * this one's (up to a content prompt assembly changed: a long-running
 * call answered late, compaction, another writer), so it is built from the
 * first content that differs -- or from the adapter's last boundary before
 * it where it can start again (LlmBoundary) -- and the messages of the
 * contents before are this request's, referenced as they are.  Finding
 * that content is one memcmp over the contents' jsonb; the contents before
 * it are not converted, hashed, looked up or given ids at all, so what a
 * model call costs here besides serializing its request no longer grows
 * with the history.
 *
 * Memory: the struct, the model id and the contents' copy are in owner;
 * the boundaries are malloc'd and msgs is a json-c reference, both
 * released when owner goes (cb) or the memo is emptied.  It holds one
 * request: each new one replaces the old.
 */
struct AdkRequestMemo
{
	MemoryContext owner;
	MemoryContextCallback cb;
	bool		valid;
	LlmProvider provider;
	char	   *model;			/* the provider's model id */
	Jsonb	   *contents;		/* the contents it was built of */
	LlmBoundary *b;				/* its boundaries, 0 .. number of contents */
	size_t		nb;
	size_t		cap;
	struct json_object *msgs;	/* its contents' messages, from msgs_off */
	size_t		msgs_off;
	LlmTextMemo text;			/* its body's messages as printed */
};

extern int	adk_memo_same_prefix(Jsonb *a, Jsonb *b);
extern int	adk_memo_resume_point(const AdkRequestMemo *memo, int q);
extern void adk_memo_take(AdkRequestMemo *memo, LlmProvider p,
						  const char *model, Jsonb *contents, int from,
						  LlmRequestLog *log);
extern void adk_memo_empty(AdkRequestMemo *memo, bool freeing);

#endif							/* ADK_REQUEST_MEMO_H */
