/*-------------------------------------------------------------------------
 *
 * generate.h
 *	  One model call: the seam between SQL (adk_generate) or the runner and
 *	  the HTTP client and provider adapters.
 *
 * IDENTIFICATION
 *	  src/model/generate.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_GENERATE_H
#define ADK_GENERATE_H

#include "utils/jsonb.h"

#include "common/trace_context.h"

/* Receives each partial response of a streamed call, in order. */
typedef void (*AdkPartialFn) (Jsonb *partial, void *arg);

/* GUC */
extern int	adk_max_response_bytes;
/* adk.max_request_bytes: a larger request is not sent (REQUEST_TOO_LARGE) */
extern int	adk_max_request_bytes;

/*
 * GUC adk.verify_incremental: what is built from a run's previous prompt
 * or request (prompt.c, generate.c) is also built from scratch and the
 * two compared (for the test suites)
 */
extern bool adk_verify_incremental;

/*
 * The largest request a run keeps memos of for its next ones, in bytes
 * (request_memo.c)
 */
extern Size adk_request_memo_max(void);

/* One model call in flight (generate.c) */
typedef struct AdkModelCall AdkModelCall;

/*
 * The previous request built through it (request_memo.c), so that the next
 * one, whose contents begin with the same contents, is built from where
 * they stop being the same: what the contents before made is taken as it
 * is.  It lives in the memory context it was made in; its json-c objects
 * go with that context.
 */
typedef struct AdkRequestMemo AdkRequestMemo;

extern AdkRequestMemo *adk_request_memo_new(MemoryContext owner);

/*
 * Whom a call is made for: the session's app and user id (its ledger row
 * is theirs: row-level security shows it to whoever may see that user's
 * sessions; NULL: the calling role's alone), the invocation (NULL: none)
 * and the span its request joins as W3C traceparent (NULL: none).  Copied
 * into the call.
 */
typedef struct AdkCallFor
{
	const char *app;
	const char *user;
	const char *invocation_id;
	const AdkTraceCurrent *trace;
} AdkCallFor;

extern AdkModelCall *adk_model_start(const char *model, Jsonb *contents,
									 Jsonb *tools, Jsonb *config, bool stream,
									 AdkPartialFn on_partial, void *arg,
									 AdkRequestMemo *memo,
									 const AdkCallFor *call_for);
extern bool adk_model_call_ready(AdkModelCall *c);
extern Jsonb *adk_model_finish(AdkModelCall *c);
extern Jsonb *adk_model_finish_thoughts(AdkModelCall *c, Jsonb **thoughts);
extern void adk_model_abandon(AdkModelCall *c);
extern Jsonb *adk_model_call(const char *model, Jsonb *contents, Jsonb *tools,
							 Jsonb *config, bool stream,
							 AdkPartialFn on_partial, void *arg);

#endif							/* ADK_GENERATE_H */
