/*-------------------------------------------------------------------------
 *
 * request_jsonb.h
 *	  A request body as jsonb for adk.model_calls, made of the jsonb its
 *	  kept messages carry (see request_jsonb.c).
 *
 * IDENTIFICATION
 *	  src/model/request_jsonb.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_REQUEST_JSONB_H
#define ADK_REQUEST_JSONB_H

#include "utils/jsonb.h"

struct json_object;

extern Jsonb *adk_request_jsonb(struct json_object *body);

#endif							/* ADK_REQUEST_JSONB_H */
