/*-------------------------------------------------------------------------
 *
 * endpoint.h
 *	  An endpoint URL as libcurl reads it (scheme, host, port), and the
 *	  host entries API keys are bound to.
 *
 * IDENTIFICATION
 *	  src/model/endpoint.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_ENDPOINT_H
#define ADK_ENDPOINT_H

#include "utils/array.h"

typedef struct AdkEndpoint
{
	char	   *scheme;			/* lower case: "http" or "https" */
	char	   *host;			/* lower case; [v6] in brackets */
	int			port;			/* the scheme's default when not given */
} AdkEndpoint;

extern const char *adk_endpoint_parse(const char *url, AdkEndpoint *ep);
extern const char *adk_host_entry_check(const char *entry);
extern bool adk_endpoint_allows(const char *entry, const AdkEndpoint *ep);
extern bool adk_endpoint_allowed_by(ArrayType *hosts, const AdkEndpoint *ep);
extern char *adk_endpoint_hostport(const AdkEndpoint *ep);

#endif							/* ADK_ENDPOINT_H */
