/*-------------------------------------------------------------------------
 *
 * jsonb_build.h
 *	  A jsonb object from its top-level fields, nested values copied.
 *
 * IDENTIFICATION
 *	  src/common/jsonb_build.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_JSONB_BUILD_H
#define ADK_JSONB_BUILD_H

#include "utils/jsonb.h"

typedef struct AdkJsonbField
{
	const char *key;
	int			keylen;
	JsonbValue	value;			/* a scalar, or jbvBinary object / array */
	int			order;			/* set by adk_jsonb_build_object */
} AdkJsonbField;

extern Jsonb *adk_jsonb_build_object(AdkJsonbField *fields, int n);

#endif							/* ADK_JSONB_BUILD_H */
