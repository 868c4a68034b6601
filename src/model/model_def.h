/*-------------------------------------------------------------------------
 *
 * model_def.h
 *	  A model definition from adk.models, with its API key resolved.
 *
 * IDENTIFICATION
 *	  src/model/model_def.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_MODEL_DEF_H
#define ADK_MODEL_DEF_H

#include "utils/jsonb.h"

#include "model/llm.h"

typedef struct AdkModelDef
{
	char	   *name;
	char	   *provider_name;
	LlmProvider provider;
	char	   *endpoint;
	char	   *model;
	Jsonb	   *options;
	char	   *api_key;		/* NULL: send no key */
} AdkModelDef;

/* GUC: environment variables a model may take its key from */
extern char *adk_allowed_key_env;

extern void adk_load_model(const char *name, AdkModelDef *def);
extern char *adk_auth_header(const AdkModelDef *def);

#endif							/* ADK_MODEL_DEF_H */
