/*-------------------------------------------------------------------------
 *
 * fallback.h
 *	  Fallback models: the chain of models a call may try, which failures
 *	  go on to the next one, and the metadata of an answer that came from
 *	  a fallback.
 *
 * IDENTIFICATION
 *	  src/model/fallback.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_FALLBACK_H
#define ADK_FALLBACK_H

#include "model/model_def.h"

struct json_object;

/* the most models one call's chain holds, the called one included */
#define ADK_MAX_FALLBACK_CHAIN 16

extern AdkModelDef *adk_fallback_chain(const AdkModelDef *first, int *n);
extern bool adk_fallback_fails_over(const AdkModelDef *def, long http_status,
									const char *error_code);
extern void adk_fallback_annotate(struct json_object *result,
								  const char *original_model,
								  const char *fallback_model, int attempt,
								  const char *error_code);

#endif							/* ADK_FALLBACK_H */
