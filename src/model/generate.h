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

/* Receives each partial response of a streamed call, in order. */
typedef void (*AdkPartialFn) (Jsonb *partial, void *arg);

/* GUC */
extern int	adk_max_response_bytes;

extern Jsonb *adk_model_call(const char *model, Jsonb *contents, Jsonb *tools,
							 Jsonb *config, bool stream,
							 AdkPartialFn on_partial, void *arg);

#endif							/* ADK_GENERATE_H */
