/*-------------------------------------------------------------------------
 *
 * msg_cache.h
 *	  The wire messages each content of a request made, kept for the next
 *	  requests of the backend (see msg_cache.c).
 *
 * IDENTIFICATION
 *	  src/model/msg_cache.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_MSG_CACHE_H
#define ADK_MSG_CACHE_H

#include "model/llm.h"

struct json_object;

/* GUC adk.request_cache_size (kB) */
extern int	adk_request_cache_kb;

extern uint32 adk_msg_cache_hash(const char *key, size_t len);
extern struct json_object *adk_msg_cache_get(LlmProvider p, uint32 h,
											 const char *key, size_t len);
extern void adk_msg_cache_put(LlmProvider p, uint32 h, const char *key,
							  size_t len, struct json_object *msgs);
extern struct json_object *adk_content_cache_get(LlmProvider p, uint32 h,
												 const char *key, size_t len);
extern void adk_content_cache_put(LlmProvider p, uint32 h, const char *key,
								  size_t len, struct json_object *content);
extern struct json_object *adk_idmsg_cache_get(LlmProvider p, uint32 h,
											   const char *key, size_t len,
											   const char *sig);
extern void adk_idmsg_cache_put(LlmProvider p, uint32 h, const char *key,
								size_t len, const char *sig,
								struct json_object *msgs);
extern void adk_msg_cache_reset(void);

#endif							/* ADK_MSG_CACHE_H */
