/*-------------------------------------------------------------------------
 *
 * guard.h
 *	  What a model call may carry out (checked call options) and what may
 *	  come back from it (the key redacted from every provider value).
 *
 * IDENTIFICATION
 *	  src/model/guard.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_MODEL_GUARD_H
#define ADK_MODEL_GUARD_H

#include "lib/stringinfo.h"

struct json_object;

/* bounds of the transport options (also enforced for adk.models.options) */
#define ADK_MIN_TIMEOUT_MS			1
#define ADK_MAX_TIMEOUT_MS			3600000
#define ADK_MAX_CONNECT_TIMEOUT_MS	300000
#define ADK_MAX_RETRIES				10
#define ADK_MAX_CACHE_KEY_LEN		64

#define ADK_REDACTED "[REDACTED]"

/* Streamed text held back while it could still be the start of the key. */
typedef struct AdkRedactHold
{
	StringInfoData text[2];		/* [0] answer text, [1] thought text */
	bool		init;
} AdkRedactHold;

extern void adk_check_call_options(struct json_object *options,
								   const char *what);
/* Refuse (22023) a bad config "thinking" (model/llm_thinking.c) */
extern void adk_check_thinking(struct json_object *thinking, const char *what);
extern int	adk_call_int_option(struct json_object *options, const char *key,
								int dflt);
extern void adk_redact_jsonc(struct json_object *obj, const char *secret);
extern bool adk_redact_partial(struct json_object *partial, const char *secret,
							   AdkRedactHold *hold);

/* GUC adk.store_thoughts (docs/models.md, "Thinking") */
extern bool adk_store_thoughts;
extern bool adk_drop_thoughts(struct json_object *response,
							  bool keep_signatures,
							  struct json_object **taken);

#endif							/* ADK_MODEL_GUARD_H */
