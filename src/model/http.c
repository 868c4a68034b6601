/*-------------------------------------------------------------------------
 *
 * http.c
 *	  The one libcurl client of adk_runner: POST a JSON body, get the
 *	  response, buffered or streamed -- many requests in flight at once.
 *
 * Each process keeps one curl multi handle for its lifetime; its
 * connection cache keeps provider connections alive between calls.  A
 * request is started with adk_http_start(), which adds an easy handle to
 * the multi handle and returns at once; adk_http_drive() advances every
 * transfer in flight (a run waiting for its model, or a job worker holding
 * many runs, calls it) and adk_http_done() says when one has ended; its
 * AdkHttpResponse is then filled.  adk_http_post() is start + drive until
 * done.
 *
 * Ownership: a transfer is palloc'd in the memory context current at
 * adk_http_start(), with a reset callback on that context: when the
 * context goes -- the request's owner finished with it, or an ERROR (a
 * query cancel included) took the transaction or the run down -- an
 * unfinished transfer is taken out of the multi handle and its easy handle
 * and header list are freed.  Finished transfers hold no libcurl object.
 * The request's strings (url, headers, body) must live as long as the
 * transfer; they are the owner's.
 *
 * adk_http_drive() waits in curl_multi_poll() at most ADK_HTTP_POLL_MS at
 * a time with CHECK_FOR_INTERRUPTS() after each wait, so
 * pg_cancel_backend() and statement_timeout stop in-flight calls within
 * that time; the wait shows in pg_stat_activity as wait event
 * "Extension".  Nothing in the libcurl callbacks can raise an ERROR except
 * running out of memory: they only append to buffers.  Streamed bytes are
 * handed to each request's on_chunk between waits, never from inside
 * libcurl, in the memory context that owns the transfer.
 *
 * Per request: 429 and 5xx responses, and transport failures (no
 * connection, a reset, nothing or part of the answer received, a send
 * error, a timeout: retryable()), are retried req->retries times, waiting
 * as the Retry-After header says (seconds), else 250 ms doubled per
 * attempt, at most 30 s -- a deadline the driver keeps, so other
 * transfers go on meanwhile.  A streamed request is retried only while
 * nothing of its answer has been handed on.  The timeout
 * (CURLOPT_TIMEOUT_MS) is per attempt; the size cap is not retried.  Only http
 * and https are allowed, redirects are not followed, and CURLOPT_NOSIGNAL
 * keeps libcurl away from the backend's signal handlers.
 *
 * Every socket is opened here (CURLOPT_OPENSOCKETFUNCTION), after the host
 * name is resolved and before anything is sent: an address in a
 * link-local range (addr.c; the cloud metadata services listen there) is
 * refused unless a superuser allowed them with
 * adk.allow_link_local_endpoints, so a host name that resolves there is
 * refused as the literal is.  The refusal is the request's failure
 * (ENDPOINT_NOT_ALLOWED), like any transport error.  Through a proxy,
 * the address checked is the proxy's.
 *
 * IDENTIFICATION
 *	  src/model/http.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <curl/curl.h>

#include "lib/ilist.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"

#include "model/addr.h"
#include "model/http.h"

#define ADK_HTTP_MAX_BACKOFF_MS	30000
#define ADK_HTTP_IDLE_EASY		16

bool		adk_allow_link_local_endpoints = false;

typedef enum TransferState
{
	T_RUNNING,					/* an attempt is in the multi handle */
	T_BACKOFF,					/* waiting until retry_at for the next one */
	T_DONE						/* resp is filled; no libcurl object left */
} TransferState;

struct AdkHttpTransfer
{
	dlist_node	node;			/* in "active" while not done */
	TransferState state;
	const AdkHttpRequest *req_ptr;
	AdkHttpRequest req;			/* a copy: the caller's struct may go */
	AdkHttpResponse *resp;
	CURL	   *easy;
	struct curl_slist *headers;
	char		errbuf[CURL_ERROR_SIZE];
	size_t		total;			/* bytes received in this attempt */
	bool		too_large;
	char		refused[INET6_ADDRSTRLEN];	/* a link-local address not
											 * connected to; "" if none */
	bool		streamed;		/* some bytes went to on_chunk: no retry */
	long		retry_after_s;	/* -1: no header */
	instr_time	start;
	int64		retry_at_us;	/* when to retry, as now_us() */
	MemoryContextCallback cb;
};

static CURLM *multi = NULL;
static CURL *idle_easy[ADK_HTTP_IDLE_EASY];
static int	nidle = 0;
static dlist_head active = DLIST_STATIC_INIT(active);
static int	nactive = 0;

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg);
static size_t on_header(char *data, size_t size, size_t nmemb, void *arg);
static curl_socket_t open_socket(void *arg, curlsocktype purpose,
								 struct curl_sockaddr *address);
static void start_attempt(AdkHttpTransfer *t);
static void end_attempt(AdkHttpTransfer *t, CURLcode rc);
static void release_easy(AdkHttpTransfer *t, bool reuse);
static void finish(AdkHttpTransfer *t);
static CURL *take_easy(void);
static void hand_on(AdkHttpTransfer *t, bool at_end);
static void set_transport_error(AdkHttpTransfer *t, CURLcode rc);
static bool retryable(AdkHttpTransfer *t, CURLcode rc);
static bool perform_and_collect(void);
static long next_deadline_ms(void);
static void transfer_reset_callback(void *arg);
static int64 now_us(void);

/*
 * Once per process, before any request (called from adk_model_init).
 */
void
adk_http_init(void)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not initialize libcurl")));
}

/*
 * POST req->body to req->url and fill resp, waiting for the answer (other
 * transfers in flight advance meanwhile).  Transport failures (timeout,
 * refused connection, oversized body) are reported in resp->error_code;
 * only a query cancel or out-of-memory raise.
 */
void
adk_http_post(const AdkHttpRequest *req, AdkHttpResponse *resp)
{
	AdkHttpTransfer *t = adk_http_start(req, resp);

	/* t stays in the caller's memory: its reset callback points into it */
	while (!adk_http_done(t))
		adk_http_drive(ADK_HTTP_POLL_MS);
}

/*
 * Start a request; resp is filled when adk_http_done() says it ended.  The
 * transfer belongs to the current memory context (see the file header).
 */
AdkHttpTransfer *
adk_http_start(const AdkHttpRequest *req, AdkHttpResponse *resp)
{
	AdkHttpTransfer *t;

	if (multi == NULL)
	{
		multi = curl_multi_init();
		if (multi == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("could not create a libcurl handle")));
	}
	memset(resp, 0, sizeof(*resp));
	initStringInfo(&resp->body);

	t = palloc0(sizeof(AdkHttpTransfer));
	t->req = *req;
	t->resp = resp;
	t->state = T_DONE;			/* nothing to release yet */
	t->cb.func = transfer_reset_callback;
	t->cb.arg = t;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &t->cb);
	INSTR_TIME_SET_CURRENT(t->start);
	start_attempt(t);
	return t;
}

bool
adk_http_done(const AdkHttpTransfer *t)
{
	return t->state == T_DONE;
}

/*
 * How many requests are in flight (running or waiting to retry).
 */
int
adk_http_in_flight(void)
{
	return nactive;
}

/*
 * Stop a transfer that has not ended; resp is left as it was.  A finished
 * transfer is left alone.
 */
void
adk_http_abort(AdkHttpTransfer *t)
{
	if (t->state == T_DONE)
		return;
	release_easy(t, false);
	dlist_delete(&t->node);
	nactive--;
	t->state = T_DONE;
	if (t->resp->error_code == NULL)
	{
		t->resp->error_code = "HTTP_CLIENT_ERROR";
		t->resp->error_message = "the request was abandoned";
	}
}

/*
 * The owner's memory context goes: an unfinished transfer goes with it.
 */
static void
transfer_reset_callback(void *arg)
{
	AdkHttpTransfer *t = (AdkHttpTransfer *) arg;

	if (t->state == T_DONE)
		return;
	release_easy(t, false);
	dlist_delete(&t->node);
	nactive--;
	t->state = T_DONE;
}

/*
 * Advance every transfer in flight: what has arrived is taken in, ended
 * attempts are finished or retried; when nothing ended, wait up to
 * timeout_ms (and at most ADK_HTTP_POLL_MS) for the network or a retry's
 * deadline.  Checks for interrupts before returning.
 */
void
adk_http_drive(int timeout_ms)
{
	if (multi == NULL || nactive == 0)
	{
		CHECK_FOR_INTERRUPTS();
		return;
	}
	if (!perform_and_collect() && timeout_ms > 0)
	{
		long		wait = Min(timeout_ms, ADK_HTTP_POLL_MS);
		long		deadline = next_deadline_ms();
		int			nfds;

		if (deadline >= 0)
			wait = Min(wait, deadline);
		if (wait > 0)
		{
			pgstat_report_wait_start(PG_WAIT_EXTENSION);
			curl_multi_poll(multi, NULL, 0, (int) wait, &nfds);
			pgstat_report_wait_end();
		}
		(void) perform_and_collect();
	}
	CHECK_FOR_INTERRUPTS();
}

/*
 * One round of libcurl work: perform, collect ended attempts, hand
 * streamed bytes on, start retries that are due.  true when some transfer
 * ended or was handed bytes.
 */
static bool
perform_and_collect(void)
{
	int			running;
	CURLMsg    *msg;
	int			left;
	bool		progress = false;
	dlist_mutable_iter it;
	int64		now;

	if (curl_multi_perform(multi, &running) != CURLM_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("HTTP transfer failed inside libcurl")));

	while ((msg = curl_multi_info_read(multi, &left)) != NULL)
	{
		AdkHttpTransfer *t = NULL;

		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **) &t);
		if (t == NULL || t->easy != msg->easy_handle || t->state != T_RUNNING)
			continue;
		end_attempt(t, msg->data.result);
		progress = true;
	}

	now = now_us();
	dlist_foreach_modify(it, &active)
	{
		AdkHttpTransfer *t = dlist_container(AdkHttpTransfer, node, it.cur);

		if (t->state == T_RUNNING && t->req.on_chunk != NULL &&
			t->resp->body.len > 0)
		{
			hand_on(t, false);
			progress = true;
		}
		else if (t->state == T_BACKOFF && now >= t->retry_at_us)
			start_attempt(t);
	}
	return progress;
}

/*
 * The monotonic clock in microseconds: a plain number, because instr_time's
 * representation differs between server versions.
 */
static int64
now_us(void)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	return (int64) INSTR_TIME_GET_MICROSEC(now);
}

/*
 * Milliseconds to the nearest retry deadline, -1 when none.
 */
static long
next_deadline_ms(void)
{
	dlist_iter	it;
	int64		now = now_us();
	long		best = -1;

	dlist_foreach(it, &active)
	{
		AdkHttpTransfer *t = dlist_container(AdkHttpTransfer, node, it.cur);
		long		ms;

		if (t->state != T_BACKOFF)
			continue;
		ms = (long) ((t->retry_at_us - now) / 1000);
		if (ms < 0)
			ms = 0;
		if (best < 0 || ms < best)
			best = ms;
	}
	return best;
}

/*
 * Put the next attempt of t into the multi handle.  The easy handle and
 * header list are the transfer's from here until the attempt ends.
 */
static void
start_attempt(AdkHttpTransfer *t)
{
	const AdkHttpRequest *req = &t->req;
	AdkHttpResponse *resp = t->resp;
	int			i;

	resp->attempts++;
	resetStringInfo(&resp->body);
	resp->status = 0;
	resp->error_code = NULL;
	resp->error_message = NULL;
	t->total = 0;
	t->too_large = false;
	t->refused[0] = '\0';
	t->retry_after_s = -1;
	t->errbuf[0] = '\0';

	if (t->state != T_BACKOFF)
	{
		dlist_push_tail(&active, &t->node);
		nactive++;
	}
	t->state = T_RUNNING;		/* from here the reset callback releases */
	t->easy = take_easy();
	for (i = 0; i < req->nheaders; i++)
	{
		struct curl_slist *h = curl_slist_append(t->headers, req->headers[i]);

		if (h == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory")));
		t->headers = h;
	}

	curl_easy_setopt(t->easy, CURLOPT_URL, req->url);
	curl_easy_setopt(t->easy, CURLOPT_POSTFIELDS, req->body);
	curl_easy_setopt(t->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) req->body_len);
	curl_easy_setopt(t->easy, CURLOPT_HTTPHEADER, t->headers);
	curl_easy_setopt(t->easy, CURLOPT_TIMEOUT_MS, (long) req->timeout_ms);
	curl_easy_setopt(t->easy, CURLOPT_CONNECTTIMEOUT_MS, (long) req->connect_timeout_ms);
	curl_easy_setopt(t->easy, CURLOPT_WRITEDATA, t);
	curl_easy_setopt(t->easy, CURLOPT_HEADERDATA, t);
	curl_easy_setopt(t->easy, CURLOPT_OPENSOCKETDATA, t);
	curl_easy_setopt(t->easy, CURLOPT_ERRORBUFFER, t->errbuf);
	curl_easy_setopt(t->easy, CURLOPT_PRIVATE, (char *) t);

	if (curl_multi_add_handle(multi, t->easy) != CURLM_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not start an HTTP request")));
}

/*
 * An attempt ended (rc: libcurl's result): finish the transfer, or wait to
 * retry a 429 / 5xx.
 */
static void
end_attempt(AdkHttpTransfer *t, CURLcode rc)
{
	AdkHttpResponse *resp = t->resp;
	long		ms;

	curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &resp->status);
	resp->redirect_url = NULL;
	if (resp->status >= 300 && resp->status < 400)
	{
		char	   *loc = NULL;

		/* not followed: say where it pointed */
		if (curl_easy_getinfo(t->easy, CURLINFO_REDIRECT_URL, &loc) == CURLE_OK &&
			loc != NULL)
			resp->redirect_url = MemoryContextStrdup(GetMemoryChunkContext(t), loc);
	}
	hand_on(t, true);
	resp->got_body = t->total > 0;
	if (rc != CURLE_OK)
		set_transport_error(t, rc);

	if (resp->attempts > t->req.retries || !retryable(t, rc))
	{
		release_easy(t, rc == CURLE_OK);
		finish(t);
		return;
	}

	/* retry: after Retry-After, else 250 ms doubled per attempt */
	release_easy(t, rc == CURLE_OK);
	if (t->retry_after_s >= 0)
		ms = Min(t->retry_after_s * 1000L, ADK_HTTP_MAX_BACKOFF_MS);
	else
		ms = Min(250L << Min(resp->attempts - 1, 7), ADK_HTTP_MAX_BACKOFF_MS);
	t->retry_at_us = now_us() + (int64) ms * 1000;
	t->state = T_BACKOFF;
}

/*
 * Whether an attempt that ended so is tried again (while retries are
 * left): a 429 or 5xx answer, and -- as the providers' own SDKs retry
 * connection errors -- a transport failure before a whole answer came:
 * no connection, the connection reset or closed with nothing or part of
 * the answer received, a send error, a timeout.  Not the size cap (the
 * answer would be as large again), not a 4xx, not what libcurl refused
 * itself, not a link-local address we refused; and never once part of a streamed answer has been handed on,
 * which the caller has already shown.
 */
static bool
retryable(AdkHttpTransfer *t, CURLcode rc)
{
	/* a link-local address refused (open_socket) is refused again */
	if (t->streamed || t->refused[0] != '\0')
		return false;
	switch (rc)
	{
		case CURLE_OK:
			return t->resp->status == 429 || t->resp->status >= 500;
		case CURLE_COULDNT_CONNECT:
		case CURLE_OPERATION_TIMEDOUT:
		case CURLE_GOT_NOTHING:
		case CURLE_SEND_ERROR:
		case CURLE_RECV_ERROR:
		case CURLE_PARTIAL_FILE:
		case CURLE_HTTP2:
		case CURLE_HTTP2_STREAM:
		case CURLE_SSL_CONNECT_ERROR:
			return true;
		case CURLE_WRITE_ERROR:
			/* on_body refused more than max_bytes: the answer is too large */
			return false;
		default:
			return false;
	}
}

static void
finish(AdkHttpTransfer *t)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, t->start);
	t->resp->latency_ms = INSTR_TIME_GET_MILLISEC(now);
	dlist_delete(&t->node);
	nactive--;
	t->state = T_DONE;
}

/*
 * An easy handle with the options every request shares: an idle one, or a
 * new one.
 */
static CURL *
take_easy(void)
{
	CURL	   *easy;

	if (nidle > 0)
		return idle_easy[--nidle];

	easy = curl_easy_init();
	if (easy == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("could not create a libcurl handle")));
	curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(easy, CURLOPT_POST, 1L);
	curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(easy, CURLOPT_OPENSOCKETFUNCTION, open_socket);
	curl_easy_setopt(easy, CURLOPT_USERAGENT, "adk_runner/0.1");
	return easy;
}

/*
 * After an attempt (or when it is broken off): take the handle out of the
 * multi handle, drop the pointers into this transfer's memory, free the
 * header list, and keep the handle for another request (reuse) or free it.
 */
static void
release_easy(AdkHttpTransfer *t, bool reuse)
{
	if (t->easy != NULL)
	{
		curl_multi_remove_handle(multi, t->easy);
		curl_easy_setopt(t->easy, CURLOPT_HTTPHEADER, NULL);
		curl_easy_setopt(t->easy, CURLOPT_ERRORBUFFER, NULL);
		curl_easy_setopt(t->easy, CURLOPT_POSTFIELDS, NULL);
		curl_easy_setopt(t->easy, CURLOPT_WRITEDATA, NULL);
		curl_easy_setopt(t->easy, CURLOPT_HEADERDATA, NULL);
		curl_easy_setopt(t->easy, CURLOPT_OPENSOCKETDATA, NULL);
		curl_easy_setopt(t->easy, CURLOPT_PRIVATE, NULL);
		if (reuse && nidle < ADK_HTTP_IDLE_EASY)
			idle_easy[nidle++] = t->easy;
		else
			curl_easy_cleanup(t->easy);
		t->easy = NULL;
	}
	curl_slist_free_all(t->headers);
	t->headers = NULL;
}

/*
 * Streamed bytes of a 2xx response go to the caller, in the memory of the
 * transfer's owner.
 */
static void
hand_on(AdkHttpTransfer *t, bool at_end)
{
	long		status = 0;
	MemoryContext old;

	if (t->req.on_chunk == NULL || t->resp->body.len == 0)
		return;
	curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
	if (status < 200 || status >= 300)
		return;
	old = MemoryContextSwitchTo(GetMemoryChunkContext(t));
	t->streamed = true;
	t->req.on_chunk(t->resp->body.data, t->resp->body.len, t->req.arg);
	resetStringInfo(&t->resp->body);
	MemoryContextSwitchTo(old);
	(void) at_end;
}

static size_t
on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	AdkHttpTransfer *t = (AdkHttpTransfer *) arg;
	size_t		n = size * nmemb;

	if (t->total + n > t->req.max_bytes)
	{
		t->too_large = true;
		return 0;				/* makes libcurl stop with a write error */
	}
	t->total += n;
	appendBinaryStringInfo(&t->resp->body, data, n);
	return n;
}

static size_t
on_header(char *data, size_t size, size_t nmemb, void *arg)
{
	AdkHttpTransfer *t = (AdkHttpTransfer *) arg;
	size_t		n = size * nmemb;

	if (n > 12 && pg_strncasecmp(data, "retry-after:", 12) == 0)
	{
		char	   *end;
		long		v = strtol(data + 12, &end, 10);

		if (end != data + 12 && v >= 0)
			t->retry_after_s = v;
	}
	return n;
}

/*
 * libcurl is about to connect to address (resolved): open the socket, or
 * refuse a link-local address (remembered in the transfer arg for the
 * error message).  Runs inside libcurl: nothing here may raise.
 */
static curl_socket_t
open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *address)
{
	AdkHttpTransfer *t = (AdkHttpTransfer *) arg;

	if (!adk_allow_link_local_endpoints &&
		adk_addr_is_link_local(&address->addr))
	{
		if (t != NULL)
		{
			const void *a;

			if (address->family == AF_INET6)
				a = &((struct sockaddr_in6 *) &address->addr)->sin6_addr;
			else
				a = &((struct sockaddr_in *) &address->addr)->sin_addr;
			if (inet_ntop(address->family, a, t->refused,
						  sizeof(t->refused)) == NULL)
				strlcpy(t->refused, "?", sizeof(t->refused));
		}
		return CURL_SOCKET_BAD;
	}
	return socket(address->family, address->socktype, address->protocol);
}

static void
set_transport_error(AdkHttpTransfer *t, CURLcode rc)
{
	AdkHttpResponse *resp = t->resp;
	const char *what = t->errbuf[0] ? t->errbuf : curl_easy_strerror(rc);
	MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(t));

	if (t->too_large)
	{
		resp->error_code = "RESPONSE_TOO_LARGE";
		resp->error_message = psprintf("the response exceeded %zu bytes (\"adk.max_response_bytes\")",
									   t->req.max_bytes);
	}
	else if (t->refused[0] != '\0')
	{
		resp->error_code = "ENDPOINT_NOT_ALLOWED";
		resp->error_message = psprintf("the endpoint's address %s is link-local, where cloud metadata services answer; a superuser may allow such addresses with \"adk.allow_link_local_endpoints\"",
									   t->refused);
	}
	else if (rc == CURLE_OPERATION_TIMEDOUT)
	{
		resp->error_code = "TIMEOUT";
		resp->error_message = psprintf("the request timed out: %s", what);
	}
	else if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
			 rc == CURLE_COULDNT_RESOLVE_PROXY)
	{
		resp->error_code = "CONNECTION_ERROR";
		resp->error_message = psprintf("could not connect: %s", what);
	}
	else
	{
		resp->error_code = "HTTP_CLIENT_ERROR";
		resp->error_message = psprintf("HTTP request failed: %s", what);
	}
	MemoryContextSwitchTo(old);

	/*
	 * resp->status stays what the server answered before the transfer broke
	 * off (0 when it never answered), so the ledger shows it.
	 */
}
