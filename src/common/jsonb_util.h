/*-------------------------------------------------------------------------
 *
 * jsonb_util.h
 *	  Small jsonb helpers used across adk_runner.
 *
 * IDENTIFICATION
 *	  src/common/jsonb_util.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_JSONB_UTIL_H
#define ADK_JSONB_UTIL_H

#include "utils/jsonb.h"

/* ADK_MAX_JSON_DEPTH: the one nesting limit for stored JSON */
#include "common/json_limits.h"

/* A state delta split by ADK's key prefixes; NULL where a scope is empty. */
typedef struct AdkStateDelta
{
	Jsonb	   *session;		/* unprefixed keys */
	Jsonb	   *app;			/* "app:" keys, prefix stripped */
	Jsonb	   *user;			/* "user:" keys, prefix stripped */
	bool		had_temp;		/* "temp:" keys were present (dropped) */
} AdkStateDelta;

extern JsonbValue *adk_jsonb_get(JsonbContainer *obj, const char *key);
extern bool adk_jsonb_is_object(JsonbContainer *c);
extern Jsonb *adk_jsonb_concat(Jsonb *a, Jsonb *b);
extern Jsonb *adk_jsonb_value_to_jsonb(JsonbValue *v);
extern Jsonb *adk_jsonb_array_of(const JsonbValue *elems, int n);
extern Jsonb *adk_jsonb_array_extend(const Jsonb *pre, int keep,
									 const JsonbValue *elems, int n);
extern Jsonb *adk_jsonb_object_of(const JsonbValue *keys,
								  const JsonbValue *vals, int n);
extern Jsonb *adk_jsonb_one_int(const char *key, int64 value);
extern Jsonb *adk_jsonb_one_value(const char *key, JsonbValue *value);
extern Jsonb *adk_jsonb_without_temp(JsonbContainer *obj);
extern int	adk_jsonb_depth(JsonbContainer *c, int limit);
extern void adk_split_state_delta(JsonbContainer *delta, AdkStateDelta *out);

#endif							/* ADK_JSONB_UTIL_H */
