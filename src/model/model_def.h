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

#include "utils/guc.h"
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
	int			nfallbacks;
	char	  **fallbacks;		/* the models it falls back to, in order */
	bool		schema_with_tools;	/* capabilities: output_schema_with_tools */
} AdkModelDef;

/* GUC: environment variables a model may take its key from */
extern char *adk_allowed_key_env;

/* GUC: the hosts each of those may be sent to ("NAME=host, ...") */
extern char *adk_env_key_hosts;

extern void adk_load_model(const char *name, AdkModelDef *def);
extern char *adk_auth_header(const AdkModelDef *def);
extern bool adk_check_env_key_hosts(char **newval, void **extra,
									GucSource source);

#endif							/* ADK_MODEL_DEF_H */
