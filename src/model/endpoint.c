/*-------------------------------------------------------------------------
 *
 * endpoint.c
 *	  An endpoint URL as libcurl reads it, and the host entries API keys
 *	  are bound to.
 *
 * A key (a secret's allowed_hosts, an adk.env_key_hosts entry) may only
 * be sent to the endpoint its binding names, so the endpoint is read the
 * way libcurl will read it when it connects: with libcurl's own URL
 * parser (curl_url), which gives the scheme, the host and the port, the
 * port being the scheme's default when the URL has none.  A URL libcurl
 * cannot parse ("http://127.0.0.1:56102:56103/v1": a port that is not a
 * number) is refused, never taken apart by hand.
 *
 * A binding entry is one of
 *	  *							any endpoint;
 *	  host						that host, any scheme and port;
 *	  host:port					that host and port, any scheme;
 *	  scheme://host[:port]		that scheme, host and port (the scheme's
 *								default port when none is given);
 * host names compare case-insensitively, and IPv4 addresses as libcurl
 * normalises them (2852039166 is 169.254.169.254); IPv6 hosts are written
 * in brackets, "[::1]:8080".
 *
 * Memory: results are palloc'd in the caller's context.  Each CURLU is
 * freed on every path (PG_FINALLY), and a string libcurl returns is
 * copied and freed before anything can raise.
 *
 * IDENTIFICATION
 *	  src/model/endpoint.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <curl/curl.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "model/endpoint.h"

PG_FUNCTION_INFO_V1(adk_endpoint_problem_sql);
PG_FUNCTION_INFO_V1(adk_host_entry_problem_sql);

/* A binding entry as parsed: scheme NULL and port -1 mean any. */
typedef struct HostEntry
{
	char	   *scheme;
	char	   *host;
	int			port;
} HostEntry;

static const char *parse_url(const char *url, bool default_port,
							 char **scheme, char **host, int *port);
static const char *parse_parts(CURLU *u, const char *url, bool default_port,
							   char **scheme, char **host, int *port);
static char *take_lower(char *s);
static const char *parse_entry(const char *entry, HostEntry *e);

/*
 * Parse an endpoint URL into ep; NULL, or what is wrong with it (libcurl's
 * words, a constant string).
 */
const char *
adk_endpoint_parse(const char *url, AdkEndpoint *ep)
{
	memset(ep, 0, sizeof(*ep));
	return parse_url(url, true, &ep->scheme, &ep->host, &ep->port);
}

/*
 * NULL when entry is a valid binding entry (see the file header), else
 * what is wrong with it.
 */
const char *
adk_host_entry_check(const char *entry)
{
	HostEntry	e;

	if (strcmp(entry, "*") == 0)
		return NULL;
	return parse_entry(entry, &e);
}

/*
 * Does binding entry allow endpoint ep?  An entry that does not parse
 * allows nothing.
 */
bool
adk_endpoint_allows(const char *entry, const AdkEndpoint *ep)
{
	HostEntry	e;

	if (strcmp(entry, "*") == 0)
		return true;
	if (parse_entry(entry, &e) != NULL)
		return false;
	if (e.scheme != NULL && strcmp(e.scheme, ep->scheme) != 0)
		return false;
	if (strcmp(e.host, ep->host) != 0)
		return false;
	return e.port < 0 || e.port == ep->port;
}

/*
 * Does one of hosts (a text[] of binding entries, a secret's
 * allowed_hosts) allow endpoint ep?
 */
bool
adk_endpoint_allowed_by(ArrayType *hosts, const AdkEndpoint *ep)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			i;

	deconstruct_array(hosts, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	for (i = 0; i < n; i++)
	{
		if (nulls[i])
			continue;
		if (adk_endpoint_allows(TextDatumGetCString(elems[i]), ep))
			return true;
	}
	return false;
}

/*
 * "host:port" of an endpoint, for messages.
 */
char *
adk_endpoint_hostport(const AdkEndpoint *ep)
{
	return psprintf("%s:%d", ep->host, ep->port);
}

/*
 * A binding entry: "scheme://host[:port]", or "host[:port]" read as the
 * authority of a URL; nothing else (no path, user or query).
 */
static const char *
parse_entry(const char *entry, HostEntry *e)
{
	const char *sep = strstr(entry, "://");
	const char *authority = sep ? sep + 3 : entry;
	size_t		n = strcspn(authority, "/?#@");
	const char *problem;

	memset(e, 0, sizeof(*e));
	if (authority[n] != '\0' && strcmp(authority + n, "/") != 0)
		return "An entry is a host, host:port or scheme://host:port, without path, user or query";
	if (n < INET6_ADDRSTRLEN)
	{
		/*
		 * A bare IPv6 address: libcurl's own message for it differs between
		 * its versions, and says nothing of the brackets.
		 */
		char		addr[INET6_ADDRSTRLEN];
		struct in6_addr a6;

		memcpy(addr, authority, n);
		addr[n] = '\0';
		if (inet_pton(AF_INET6, addr, &a6) == 1)
			return "An IPv6 address is written in brackets, e.g. [::1] or [::1]:8080";
	}
	if (sep != NULL)
	{
		problem = parse_url(entry, true, &e->scheme, &e->host, &e->port);
		if (problem == NULL && strcmp(e->scheme, "http") != 0 &&
			strcmp(e->scheme, "https") != 0)
			problem = "The scheme must be http or https";
		return problem;
	}
	return parse_url(psprintf("http://%s", entry), false,
					 NULL, &e->host, &e->port);
}

/*
 * Parse url with libcurl; NULL on success, else the problem.  Without
 * default_port, *port is -1 when the URL has none.
 */
static const char *
parse_url(const char *url, bool default_port,
		  char **scheme, char **host, int *port)
{
	CURLU	   *volatile u = curl_url();
	const char *problem = NULL;

	if (u == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	PG_TRY();
	{
		problem = parse_parts(u, url, default_port, scheme, host, port);
	}
	PG_FINALLY();
	{
		curl_url_cleanup(u);
	}
	PG_END_TRY();
	return problem;
}

static const char *
parse_parts(CURLU *u, const char *url, bool default_port,
			char **scheme, char **host, int *port)
{
	CURLUcode	rc;
	char	   *s = NULL;

	rc = curl_url_set(u, CURLUPART_URL, url, 0);
	if (rc != CURLUE_OK)
		return curl_url_strerror(rc);

	if (scheme != NULL)
	{
		if (curl_url_get(u, CURLUPART_SCHEME, &s, 0) != CURLUE_OK)
			return "The URL has no scheme";
		*scheme = take_lower(s);
	}
	if (curl_url_get(u, CURLUPART_HOST, &s, 0) != CURLUE_OK)
		return "The URL has no host";
	*host = take_lower(s);
	rc = curl_url_get(u, CURLUPART_PORT, &s,
					  default_port ? CURLU_DEFAULT_PORT : 0);
	if (rc == CURLUE_NO_PORT && !default_port)
		*port = -1;
	else if (rc != CURLUE_OK)
		return "The URL has no port, and its scheme has no default port";
	else
	{
		*port = atoi(s);
		curl_free(s);
	}
	return NULL;
}

/*
 * A lower-cased palloc'd copy of s, which libcurl allocated; s is freed
 * before anything may raise.
 */
static char *
take_lower(char *s)
{
	size_t		len = strlen(s);
	char	   *r = palloc_extended(len + 1, MCXT_ALLOC_NO_OOM);
	size_t		i;

	if (r == NULL)
	{
		curl_free(s);
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	}
	for (i = 0; i <= len; i++)
		r[i] = pg_tolower((unsigned char) s[i]);
	curl_free(s);
	return r;
}

/*
 * adk._endpoint_problem(url text) RETURNS text: NULL when libcurl reads
 * url as an endpoint, else what is wrong with it (for the checks of
 * adk.models, which raise with their own message).
 */
Datum
adk_endpoint_problem_sql(PG_FUNCTION_ARGS)
{
	AdkEndpoint ep;
	const char *problem;

	problem = adk_endpoint_parse(text_to_cstring(PG_GETARG_TEXT_PP(0)), &ep);
	if (problem == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(problem));
}

/*
 * adk._host_entry_problem(entry text) RETURNS text: NULL when entry is a
 * valid binding entry, else what is wrong with it (adk_set_secret).
 */
Datum
adk_host_entry_problem_sql(PG_FUNCTION_ARGS)
{
	const char *problem;

	problem = adk_host_entry_check(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	if (problem == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(problem));
}
