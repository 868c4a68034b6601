/*-------------------------------------------------------------------------
 *
 * schema_version.h
 *	  Whether the installed schema is the one this library was built for.
 *
 * IDENTIFICATION
 *	  src/common/schema_version.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_SCHEMA_VERSION_H
#define ADK_SCHEMA_VERSION_H

/* the extension version this library was built for (the Makefile's) */
#ifndef ADK_LIB_VERSION
#error "ADK_LIB_VERSION must be defined by the build"
#endif

typedef enum AdkSchemaState
{
	ADK_SCHEMA_ABSENT,			/* no adk_runner in this database */
	ADK_SCHEMA_MATCHES,			/* installed at the library's version */
	ADK_SCHEMA_OTHER			/* installed at another version */
} AdkSchemaState;

extern int	adk_version_cmp(const char *a, const char *b);
extern AdkSchemaState adk_schema_state(char **installed);
extern void adk_require_schema(void);
extern bool adk_schema_ready(void);

#endif							/* ADK_SCHEMA_VERSION_H */
