/*-------------------------------------------------------------------------
 *
 * http.h
 *	  The one libcurl client of adk_runner: many transfers in flight on one
 *	  curl multi handle per process.
 *
 * IDENTIFICATION
 *	  src/model/http.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_HTTP_H
#define ADK_HTTP_H

#include "lib/stringinfo.h"

/*
 * Called, outside any libcurl callback, with each piece of a successful
 * (2xx) response body as it arrives when streaming.
 */
typedef void (*AdkHttpChunkFn) (const char *data, size_t len, void *arg);

typedef struct AdkHttpRequest
{
	const char *url;
	const char *const *headers; /* "Name: value" lines */
	int			nheaders;
	const char *body;			/* POST body (JSON) */
	size_t		body_len;
	int			timeout_ms;		/* whole attempt */
	int			connect_timeout_ms;
	int			retries;		/* extra attempts on 429 / 5xx */
	size_t		max_bytes;		/* cap on the response body */
	AdkHttpChunkFn on_chunk;	/* NULL: buffer the whole body */
	void	   *arg;
} AdkHttpRequest;

typedef struct AdkHttpResponse
{
	long		status;			/* HTTP status of the last attempt, 0 if none */
	StringInfoData body;		/* body, unless streamed (error bodies always) */
	int			attempts;
	double		latency_ms;		/* all attempts, backoff included */
	const char *error_code;		/* transport failure: "TIMEOUT",
								 * "CONNECTION_ERROR", "RESPONSE_TOO_LARGE",
								 * "ENDPOINT_NOT_ALLOWED",
								 * "HTTP_CLIENT_ERROR"; NULL otherwise */
	char	   *error_message;
	bool		got_body;		/* some body bytes arrived before a failure */
	char	   *redirect_url;	/* a 3xx's target (not followed), or NULL */
} AdkHttpResponse;

/* One request in flight (http.c) */
typedef struct AdkHttpTransfer AdkHttpTransfer;

/* the longest single wait inside adk_http_drive, between interrupt checks */
#define ADK_HTTP_POLL_MS	20

extern bool adk_allow_link_local_endpoints;

extern void adk_http_init(void);
extern void adk_http_post(const AdkHttpRequest *req, AdkHttpResponse *resp);
extern AdkHttpTransfer *adk_http_start(const AdkHttpRequest *req,
									   AdkHttpResponse *resp);
extern bool adk_http_done(const AdkHttpTransfer *t);
extern void adk_http_drive(int timeout_ms);
extern void adk_http_abort(AdkHttpTransfer *t);
extern int	adk_http_in_flight(void);

#endif							/* ADK_HTTP_H */
