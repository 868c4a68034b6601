/*-------------------------------------------------------------------------
 *
 * embed.h
 *	  Embeddings for memory's semantic search, started and consumed in
 *	  steps: one request in flight per call (http.c's multi handle).  A
 *	  call belongs to the memory context current at adk_embed_start:
 *	  deleting that context stops its request.
 *
 * IDENTIFICATION
 *	  src/model/embed.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_EMBED_H
#define ADK_EMBED_H

#include "utils/array.h"

/* One embedding request in flight (embed.c) */
typedef struct AdkEmbedCall AdkEmbedCall;

extern AdkEmbedCall *adk_embed_start(const char *model, int ntexts,
									 char **texts);
extern bool adk_embed_ready(const AdkEmbedCall *c);
extern ArrayType **adk_embed_finish(AdkEmbedCall *c);

#endif							/* ADK_EMBED_H */
