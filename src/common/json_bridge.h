/*-------------------------------------------------------------------------
 *
 * json_bridge.h
 *	  Moving JSON between PostgreSQL's jsonb and json-c.
 *
 * IDENTIFICATION
 *	  src/common/json_bridge.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_JSON_BRIDGE_H
#define ADK_JSON_BRIDGE_H

#include "utils/jsonb.h"

struct json_object;

extern struct json_object *adk_jsonb_to_jsonc(Jsonb *jb, const char *what);
extern struct json_object *adk_jsonb_container_to_jsonc(JsonbContainer *c,
														int depth);
extern Jsonb *adk_jsonc_to_jsonb(struct json_object *obj);
extern Jsonb *adk_cstring_to_jsonb(const char *json);
extern char *adk_sanitize_json_text(const char *json);

#endif							/* ADK_JSON_BRIDGE_H */
