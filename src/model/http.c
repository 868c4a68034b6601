/*-------------------------------------------------------------------------
 *
 * http.c
 *	  The one libcurl client of adk_runner: POST a JSON body, get the
 *	  response, buffered or streamed.
 *
 * Each backend keeps one curl multi handle for its lifetime; its
 * connection cache keeps provider connections alive between calls.  An
 * easy handle, with the options every request shares, is reused from one
 * request to the next; while a request runs it is owned by that request,
 * and PG_CATCH takes it out of the multi handle and frees it (and the
 * header list) whatever happens, including a query cancel in the middle of
 * a transfer.
 *
 * The transfer is driven in short curl_multi_poll() waits (at most
 * ADK_HTTP_POLL_MS) with CHECK_FOR_INTERRUPTS() between them, so
 * pg_cancel_backend() and statement_timeout stop an in-flight call within
 * that time; the wait shows in pg_stat_activity as wait event "Extension".
 * Nothing in the libcurl callbacks can raise an ERROR except running out
 * of memory: they only append to buffers.  Streamed bytes are handed to
 * the caller between waits, never from inside libcurl.
 *
 * 429 and 5xx responses are retried req->retries times, waiting as the
 * Retry-After header says (seconds), else 250 ms doubled per attempt, at
 * most 30 s; the wait is a latch wait that checks for interrupts too.
 * Only http and https are allowed, redirects are not followed, and
 * CURLOPT_NOSIGNAL keeps libcurl away from the backend's signal handlers.
 *
 * IDENTIFICATION
 *	  src/model/http.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <curl/curl.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "storage/latch.h"
#include "utils/wait_event.h"

#include "model/http.h"

#define ADK_HTTP_POLL_MS	20
#define ADK_HTTP_MAX_BACKOFF_MS	30000

/* State shared with the libcurl callbacks of one attempt. */
typedef struct Transfer
{
	CURL	   *easy;
	StringInfo	body;			/* bytes not yet handed on */
	size_t		total;			/* bytes received in this attempt */
	size_t		max_bytes;
	bool		too_large;
	long		retry_after_s;	/* -1: no header */
} Transfer;

static CURLM *multi = NULL;
static CURL *idle_easy = NULL;	/* reused between requests */

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg);
static size_t on_header(char *data, size_t size, size_t nmemb, void *arg);
static CURLcode run_attempt(const AdkHttpRequest *req, AdkHttpResponse *resp,
							Transfer *t, char *errbuf);
static CURLcode drive(Transfer *t, const AdkHttpRequest *req);
static void release(CURL *easy, bool added, struct curl_slist *headers,
					bool reuse);
static CURL *take_easy(void);
static void hand_on(Transfer *t, const AdkHttpRequest *req, AdkHttpResponse *resp);
static void set_transport_error(AdkHttpResponse *resp, CURLcode rc,
								Transfer *t, const char *errbuf);
static void backoff(int attempt, long retry_after_s);

/*
 * Once per process, before any request (called from _PG_init).
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
 * POST req->body to req->url and fill resp.  Transport failures (timeout,
 * refused connection, oversized body) are reported in resp->error_code;
 * only a query cancel or out-of-memory raise.
 */
void
adk_http_post(const AdkHttpRequest *req, AdkHttpResponse *resp)
{
	instr_time	start,
				now;
	char		errbuf[CURL_ERROR_SIZE];
	Transfer	t;
	CURLcode	rc;

	memset(resp, 0, sizeof(*resp));
	initStringInfo(&resp->body);
	if (multi == NULL)
	{
		multi = curl_multi_init();
		if (multi == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("could not create a libcurl handle")));
	}

	INSTR_TIME_SET_CURRENT(start);
	for (;;)
	{
		resp->attempts++;
		resetStringInfo(&resp->body);
		resp->error_code = NULL;
		resp->error_message = NULL;
		memset(&t, 0, sizeof(t));
		t.body = &resp->body;
		t.max_bytes = req->max_bytes;
		t.retry_after_s = -1;
		errbuf[0] = '\0';

		rc = run_attempt(req, resp, &t, errbuf);
		resp->got_body = t.total > 0;
		if (rc != CURLE_OK)
			set_transport_error(resp, rc, &t, errbuf);

		if (resp->attempts > req->retries ||
			!(resp->status == 429 || resp->status >= 500))
			break;
		backoff(resp->attempts, t.retry_after_s);
	}
	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	resp->latency_ms = INSTR_TIME_GET_MILLISEC(now);
}

/*
 * One attempt.  The easy handle and header list are freed on every path.
 */
static CURLcode
run_attempt(const AdkHttpRequest *req, AdkHttpResponse *resp, Transfer *t,
			char *errbuf)
{
	struct curl_slist *volatile headers = NULL;
	CURL	   *volatile easy = NULL;
	volatile bool added = false;
	volatile CURLcode result = CURLE_OK;
	int			i;

	PG_TRY();
	{
		easy = take_easy();
		t->easy = easy;
		for (i = 0; i < req->nheaders; i++)
		{
			struct curl_slist *h = curl_slist_append(headers, req->headers[i]);

			if (h == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_OUT_OF_MEMORY),
						 errmsg("out of memory")));
			headers = h;
		}

		curl_easy_setopt(easy, CURLOPT_URL, req->url);
		curl_easy_setopt(easy, CURLOPT_POSTFIELDS, req->body);
		curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) req->body_len);
		curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
		curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, (long) req->timeout_ms);
		curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, (long) req->connect_timeout_ms);
		curl_easy_setopt(easy, CURLOPT_WRITEDATA, t);
		curl_easy_setopt(easy, CURLOPT_HEADERDATA, t);
		curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, errbuf);

		if (curl_multi_add_handle(multi, easy) != CURLM_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not start an HTTP request")));
		added = true;

		result = drive(t, req);
		curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &resp->status);
		resp->redirect_url = NULL;
		if (resp->status >= 300 && resp->status < 400)
		{
			char	   *loc = NULL;

			/* not followed: say where it pointed */
			if (curl_easy_getinfo(easy, CURLINFO_REDIRECT_URL, &loc) == CURLE_OK &&
				loc != NULL)
				resp->redirect_url = pstrdup(loc);
		}
		hand_on(t, req, resp);
	}
	PG_CATCH();
	{
		/* a broken-off transfer: do not reuse this handle */
		release(easy, added, headers, false);
		PG_RE_THROW();
	}
	PG_END_TRY();
	release(easy, added, headers, true);

	return result;
}

/*
 * An easy handle with the options every request shares: the idle one, or
 * a new one.
 */
static CURL *
take_easy(void)
{
	CURL	   *easy = idle_easy;

	idle_easy = NULL;
	if (easy != NULL)
		return easy;

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
	curl_easy_setopt(easy, CURLOPT_USERAGENT, "adk_runner/0.1");
	return easy;
}

/*
 * After an attempt: take the handle out of the multi handle, drop the
 * pointers into this attempt's memory, free the header list, and keep the
 * handle for the next request (reuse) or free it.
 */
static void
release(CURL *easy, bool added, struct curl_slist *headers, bool reuse)
{
	if (easy != NULL)
	{
		if (added)
			curl_multi_remove_handle(multi, easy);
		curl_easy_setopt(easy, CURLOPT_HTTPHEADER, NULL);
		curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, NULL);
		curl_easy_setopt(easy, CURLOPT_POSTFIELDS, NULL);
		curl_easy_setopt(easy, CURLOPT_WRITEDATA, NULL);
		curl_easy_setopt(easy, CURLOPT_HEADERDATA, NULL);
		if (reuse && idle_easy == NULL)
			idle_easy = easy;
		else
			curl_easy_cleanup(easy);
	}
	curl_slist_free_all(headers);
}

/*
 * Run the transfer to its end in short, interruptible waits; its result.
 */
static CURLcode
drive(Transfer *t, const AdkHttpRequest *req)
{
	int			running = 1;

	for (;;)
	{
		CURLMsg    *msg;
		int			left;
		int			nfds;

		if (curl_multi_perform(multi, &running) != CURLM_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("HTTP transfer failed inside libcurl")));

		while ((msg = curl_multi_info_read(multi, &left)) != NULL)
		{
			if (msg->msg == CURLMSG_DONE && msg->easy_handle == t->easy)
				return msg->data.result;
		}

		/* hand streamed bytes on between waits, never inside libcurl */
		if (req->on_chunk != NULL && t->body->len > 0)
		{
			long		status = 0;

			curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
			if (status >= 200 && status < 300)
			{
				req->on_chunk(t->body->data, t->body->len, req->arg);
				resetStringInfo(t->body);
			}
		}

		pgstat_report_wait_start(PG_WAIT_EXTENSION);
		curl_multi_poll(multi, NULL, 0, ADK_HTTP_POLL_MS, &nfds);
		pgstat_report_wait_end();
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * After the transfer: the rest of a streamed 2xx body goes to the caller.
 */
static void
hand_on(Transfer *t, const AdkHttpRequest *req, AdkHttpResponse *resp)
{
	if (req->on_chunk != NULL && resp->status >= 200 && resp->status < 300 &&
		t->body->len > 0)
	{
		req->on_chunk(t->body->data, t->body->len, req->arg);
		resetStringInfo(t->body);
	}
}

static size_t
on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	Transfer   *t = (Transfer *) arg;
	size_t		n = size * nmemb;

	if (t->total + n > t->max_bytes)
	{
		t->too_large = true;
		return 0;				/* makes libcurl stop with a write error */
	}
	t->total += n;
	appendBinaryStringInfo(t->body, data, n);
	return n;
}

static size_t
on_header(char *data, size_t size, size_t nmemb, void *arg)
{
	Transfer   *t = (Transfer *) arg;
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

static void
set_transport_error(AdkHttpResponse *resp, CURLcode rc, Transfer *t,
					const char *errbuf)
{
	const char *what = errbuf[0] ? errbuf : curl_easy_strerror(rc);

	if (t->too_large)
	{
		resp->error_code = "RESPONSE_TOO_LARGE";
		resp->error_message = psprintf("the response exceeded %zu bytes (\"adk.max_response_bytes\")",
									   t->max_bytes);
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

	/*
	 * resp->status stays what the server answered before the transfer broke
	 * off (0 when it never answered), so the ledger shows it.
	 */
}

/*
 * Wait before the next attempt, interruptibly.
 */
static void
backoff(int attempt, long retry_after_s)
{
	long		ms;
	instr_time	start,
				now;

	if (retry_after_s >= 0)
		ms = Min(retry_after_s * 1000L, ADK_HTTP_MAX_BACKOFF_MS);
	else
		ms = Min(250L << Min(attempt - 1, 7), ADK_HTTP_MAX_BACKOFF_MS);

	INSTR_TIME_SET_CURRENT(start);
	for (;;)
	{
		long		left;

		INSTR_TIME_SET_CURRENT(now);
		INSTR_TIME_SUBTRACT(now, start);
		left = ms - (long) INSTR_TIME_GET_MILLISEC(now);
		if (left <= 0)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 left, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}
