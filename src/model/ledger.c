/*-------------------------------------------------------------------------
 *
 * ledger.c
 *	  adk.model_calls: one row per model request -- model, provider, HTTP
 *	  status, attempts, latency, tokens, finish reason, error, and the
 *	  request and response bodies with the key redacted.
 *
 * The row is written in the caller's transaction, as the owner of schema
 * adk; if that transaction rolls back, shared/spent.c has the launcher
 * write it again, without its bodies and marked rolled_back.  It keeps
 * the request as sent (jsonb), the response as returned to the caller
 * (jsonb, ADK's LlmResponse shape) and the provider's raw body
 * (text; NULL when it is not valid text in the database encoding -- the
 * error columns then say why).  Nothing is parsed twice: the request is
 * our own json-c output (converted as it is, unless the key must be
 * redacted from its text) and the response was converted for the caller
 * already, so writing the row cannot fail on a provider's bad bytes.
 * Keys travel in headers, never in bodies, and a body that contains the
 * key anyway (a provider echoing it back) has every occurrence replaced
 * before it is stored.  Rows older than adk.model_calls_retention
 * are deleted every RETENTION_EVERY writes of a backend, so the table
 * cannot grow without bound.
 *
 * IDENTIFICATION
 *	  src/model/ledger.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heaptoast.h"
#include "access/toast_compression.h"
#include "access/toast_internals.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "utils/memutils.h"
#include "miscadmin.h"
#define json_object pg_json_object_sqlfn
#include "utils/builtins.h"
#undef json_object
#include "utils/jsonb.h"

#include <json-c/json.h>

#include "common/json_bridge.h"
#include "common/owner.h"
#include "common/spi_plans.h"
#include "common/trace_context.h"
#include "model/guard.h"
#include "model/ledger.h"
#include "model/llm.h"
#include "model/request_jsonb.h"
#include "shared/spent.h"

#define RETENTION_EVERY 100
#define REDACTED "[REDACTED]"

int			adk_model_calls_retention_s = 7 * 24 * 3600;
bool		adk_model_calls_bodies = true;
AdkLastModelCall adk_ledger_last;

static uint64 writes = 0;

static char *redact(const char *text, size_t len, const char *secret);
static text *raw_body_text(const char *body, size_t len, const char *secret);
static Datum usage_field(struct json_object *result, const char *key,
						 char *null);
static Datum string_field(struct json_object *result, const char *key,
						  char *null);
static void remember_call(const AdkModelCallRecord *rec);
static Jsonb *compress_request(Jsonb *req);
static Jsonb *without_thoughts(Jsonb *req);

/*
 * The row's insert, returning the row without its bodies as JSON text
 * (shared/spent.c hands it to the launcher if the transaction rolls
 * back), and the purge of rows older than $1 seconds: statements in
 * sql/install/88_turn_statements.sql that adk_spi_call runs from their
 * bodies, with a generic plan -- a custom one would make the request's
 * parameter a constant, decompressed and copied twice, before the insert
 * copies and compresses it again.
 */
#define INSERT_FUNCTION "adk._model_call_insert"
#define NARGS 27
#define PURGE_FUNCTION "adk._model_calls_purge"

void
adk_ledger_record(const AdkModelCallRecord *rec)
{
	Datum		args[NARGS];
	char		nulls[NARGS];
	bool		traced;
	Jsonb	   *req = NULL;
	Jsonb	   *resp = NULL;
	text	   *raw = NULL;
	AdkOwnerSave save;
	NameData	role;

	memset(nulls, ' ', sizeof(nulls));
	namestrcpy(&role, GetUserNameFromId(GetUserId(), false));
	if (adk_model_calls_bodies)
	{
		req = rec->request;
		resp = rec->result_jsonb;
		raw = raw_body_text(rec->response_body, rec->response_len,
							rec->secret);
	}

	args[0] = CStringGetTextDatum(rec->model);
	args[1] = CStringGetTextDatum(rec->provider);
	args[2] = CStringGetTextDatum(rec->url);
	args[3] = rec->invocation_id ?
		CStringGetTextDatum(rec->invocation_id) : (Datum) 0;
	nulls[3] = rec->invocation_id ? ' ' : 'n';
	args[4] = BoolGetDatum(rec->stream);
	args[5] = Int32GetDatum((int32) rec->http_status);
	nulls[5] = rec->http_status > 0 ? ' ' : 'n';
	args[6] = Int32GetDatum(rec->attempts);
	args[7] = Float8GetDatum(rec->latency_ms);
	args[8] = usage_field(rec->result, "prompt_token_count", &nulls[8]);
	/* output: the answer's tokens and its reasoning's (docs/models.md) */
	args[9] = usage_field(rec->result, "candidates_token_count", &nulls[9]);
	args[26] = usage_field(rec->result, "thoughts_token_count", &nulls[26]);
	if (nulls[26] == ' ')
	{
		args[9] = Int64GetDatum((nulls[9] == ' ' ? DatumGetInt64(args[9]) : 0) +
								DatumGetInt64(args[26]));
		nulls[9] = ' ';
	}
	args[10] = string_field(rec->result, "finish_reason", &nulls[10]);
	args[11] = string_field(rec->result, "error_code", &nulls[11]);
	args[12] = string_field(rec->result, "error_message", &nulls[12]);
	if (nulls[12] == ' ' && rec->secret)
		args[12] = CStringGetTextDatum(redact(TextDatumGetCString(args[12]),
											  VARSIZE_ANY_EXHDR(DatumGetPointer(args[12])),
											  rec->secret));
	args[13] = req ? JsonbPGetDatum(req) : (Datum) 0;
	nulls[13] = req ? ' ' : 'n';
	args[14] = resp ? JsonbPGetDatum(resp) : (Datum) 0;
	nulls[14] = resp ? ' ' : 'n';
	args[15] = raw ? PointerGetDatum(raw) : (Datum) 0;
	nulls[15] = raw ? ' ' : 'n';
	args[16] = NameGetDatum(&role);
	/* the timing and the span of the request (runner/spans.c) */
	args[17] = Float8GetDatum(rec->first_chunk_ms);
	nulls[17] = rec->first_chunk_ms >= 0 ? ' ' : 'n';
	{
		struct json_object *usage;
		struct json_object *v;

		nulls[18] = 'n';
		if (rec->result &&
			json_object_object_get_ex(rec->result, "usage_metadata", &usage) &&
			json_object_object_get_ex(usage, "cached_content_token_count", &v) &&
			json_object_is_type(v, json_type_int))
		{
			args[18] = Int64GetDatum(json_object_get_int64(v));
			nulls[18] = ' ';
		}
	}
	traced = rec->trace != NULL;
	args[19] = traced ? CStringGetTextDatum(rec->trace->trace_id) : (Datum) 0;
	args[20] = traced ? CStringGetTextDatum(rec->trace->span_id) : (Datum) 0;
	nulls[19] = nulls[20] = traced ? ' ' : 'n';
	/* whose row it is (row-level security, 85_tenancy.sql) */
	args[21] = rec->app ? CStringGetTextDatum(rec->app) : (Datum) 0;
	args[22] = rec->user ? CStringGetTextDatum(rec->user) : (Datum) 0;
	nulls[21] = rec->app ? ' ' : 'n';
	nulls[22] = rec->user ? ' ' : 'n';
	/* its place in the call's fallback chain (model/fallback.c) */
	args[23] = Int32GetDatum(rec->fallback_attempt);
	args[24] = rec->fallback_from ? CStringGetTextDatum(rec->fallback_from) : (Datum) 0;
	nulls[24] = rec->fallback_from ? ' ' : 'n';
	/* what the answer wrote to the prompt cache (model/prompt_cache.c) */
	args[25] = Int64GetDatum(rec->cache_creation_tokens);
	nulls[25] = rec->cache_creation_tokens >= 0 ? ' ' : 'n';

	remember_call(rec);
	adk_owner_spi_begin(&save);
	if (adk_spi_call(INSERT_FUNCTION, NARGS, args, nulls, 0) != SPI_OK_INSERT_RETURNING ||
		SPI_processed != 1)
		elog(ERROR, "could not insert into adk.model_calls");
	adk_spent_ledger_row(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));

	if (adk_model_calls_retention_s >= 0 && writes++ % RETENTION_EVERY == 0)
	{
		Datum		parg = Float8GetDatum((double) adk_model_calls_retention_s);

		if (adk_spi_call(PURGE_FUNCTION, 1, &parg, NULL, 0) != SPI_OK_DELETE)
			elog(ERROR, "could not purge adk.model_calls");
	}
	adk_owner_spi_end(&save);
}

/*
 * The request of a model call as adk.model_calls stores it, compressed:
 * the json-c object its text is printed from (json_bridge.c converts
 * numbers through the same text and NULs as the text path does), so the
 * history is not parsed again, and the kept messages' jsonb is copied
 * (request_jsonb.c).  It is made before the text is printed, once what
 * the body was built of is gone, and compressed at once: a call holds at
 * most three copies of its request's bytes at any time (generate.c).
 */
Jsonb *
adk_ledger_request(struct json_object *request)
{
	return compress_request(without_thoughts(adk_request_jsonb(request)));
}

/*
 * The same made of the text sent (body), every occurrence of the key
 * (secret) replaced: for a body that holds the key, which only its text
 * shows (a key written into a message, say).
 */
Jsonb *
adk_ledger_request_redacted(const char *body, const char *secret)
{
	return compress_request(without_thoughts(adk_cstring_to_jsonb(redact(body, strlen(body),
																		  secret))));
}

/*
 * With adk.store_thoughts off, the request as the ledger keeps it: the
 * text of the thoughts it sent back (within the run that received them,
 * docs/models.md "Thinking") emptied.  req itself when there is none (or
 * the setting is on); otherwise a new jsonb, req freed.
 */
static Jsonb *
without_thoughts(Jsonb *req)
{
	struct json_object *volatile obj;
	Jsonb	   *volatile out = NULL;

	if (adk_store_thoughts || req == NULL)
		return req;
	obj = adk_jsonb_to_jsonc(req, "request");
	PG_TRY();
	{
		int			n = llm_request_empty_thoughts(obj);

		if (n < 0)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory")));
		if (n > 0)
			out = adk_jsonc_to_jsonb(obj);
	}
	PG_FINALLY();
	{
		json_object_put(obj);
	}
	PG_END_TRY();
	if (out == NULL)
		return req;
	pfree(req);
	return out;
}

/*
 * The request's jsonb compressed as its column would store it (lz4 where
 * the server has it, as the install script sets it up; else pglz), the
 * uncompressed one freed: the row's tuple and its TOAST then copy the
 * compressed bytes, not the whole request again (a request is the largest
 * thing a model call holds; the insert would otherwise copy it into the
 * tuple, then compress it into a third buffer).  Uncompressible or small
 * ones are returned as they are.
 */
static Jsonb *
compress_request(Jsonb *req)
{
	Datum		c;

	if (req == NULL || VARSIZE(req) <= TOAST_TUPLE_THRESHOLD)
		return req;
#ifdef USE_LZ4
	c = toast_compress_datum(PointerGetDatum(req), TOAST_LZ4_COMPRESSION);
#else
	c = toast_compress_datum(PointerGetDatum(req), TOAST_PGLZ_COMPRESSION);
#endif
	if (DatumGetPointer(c) == NULL)
		return req;
	pfree(req);
	return (Jsonb *) DatumGetPointer(c);
}

/*
 * Keep what the runner's model span needs from rec (adk_ledger_last).
 */
static void
remember_call(const AdkModelCallRecord *rec)
{
	const char *p = rec->url ? strstr(rec->url, "://") : NULL;
	size_t		n;
	const char *colon;

	memset(&adk_ledger_last, 0, sizeof(adk_ledger_last));
	adk_ledger_last.valid = true;
	strlcpy(adk_ledger_last.provider, rec->provider ? rec->provider : "",
			sizeof(adk_ledger_last.provider));
	strlcpy(adk_ledger_last.request_model, rec->provider_model ? rec->provider_model : "",
			sizeof(adk_ledger_last.request_model));
	adk_ledger_last.http_status = rec->http_status;
	adk_ledger_last.attempts = rec->attempts;
	adk_ledger_last.latency_ms = rec->latency_ms;
	adk_ledger_last.first_chunk_ms = rec->first_chunk_ms;
	if (p == NULL)
		return;
	/* scheme://host[:port][/path]: the endpoint has no user info */
	adk_ledger_last.port = strncmp(rec->url, "https", 5) == 0 ? 443 : 80;
	p += 3;
	n = strcspn(p, "/?#");
	colon = memchr(p, ':', n);
	if (*p == '[')
	{
		const char *close = memchr(p, ']', n);

		colon = close ? memchr(close, ':', n - (close - p)) : NULL;
	}
	if (colon)
	{
		adk_ledger_last.port = atoi(colon + 1);
		n = colon - p;
	}
	if (n >= sizeof(adk_ledger_last.host))
		n = sizeof(adk_ledger_last.host) - 1;
	memcpy(adk_ledger_last.host, p, n);
	adk_ledger_last.host[n] = '\0';
}

/*
 * Copy of text with every occurrence of secret replaced.
 */
static char *
redact(const char *text, size_t len, const char *secret)
{
	StringInfoData out;
	size_t		slen = secret ? strlen(secret) : 0;
	const char *p = text;
	const char *end = text + len;

	initStringInfo(&out);
	enlargeStringInfo(&out, (int) len);
	while (slen > 0 && (size_t) (end - p) >= slen)
	{
		const char *hit = memchr(p, secret[0], end - p - slen + 1);

		if (hit == NULL)
			break;
		if (memcmp(hit, secret, slen) == 0)
		{
			appendBinaryStringInfo(&out, p, hit - p);
			appendStringInfoString(&out, REDACTED);
			p = hit + slen;
		}
		else
		{
			appendBinaryStringInfo(&out, p, hit - p + 1);
			p = hit + 1;
		}
	}
	appendBinaryStringInfo(&out, p, end - p);
	return out.data;
}

/*
 * The provider's raw body as text with the key redacted, or NULL when it
 * is not valid in the database encoding (or holds a NUL byte).
 */
static text *
raw_body_text(const char *body, size_t len, const char *secret)
{
	char	   *clean;

	if (body == NULL || len > (size_t) MaxAllocSize / 2 ||
		memchr(body, '\0', len) != NULL ||
		!pg_verifymbstr(body, (int) len, true))
		return NULL;
	clean = redact(body, len, secret);
	return cstring_to_text(clean);
}

static Datum
usage_field(struct json_object *result, const char *key, char *null)
{
	struct json_object *usage;
	struct json_object *v;

	*null = 'n';
	if (result && json_object_object_get_ex(result, "usage_metadata", &usage) &&
		json_object_object_get_ex(usage, key, &v) &&
		json_object_is_type(v, json_type_int))
	{
		*null = ' ';
		return Int64GetDatum(json_object_get_int64(v));
	}
	return (Datum) 0;
}

static Datum
string_field(struct json_object *result, const char *key, char *null)
{
	struct json_object *v;

	*null = 'n';
	if (result && json_object_object_get_ex(result, key, &v) &&
		json_object_is_type(v, json_type_string))
	{
		*null = ' ';
		return CStringGetTextDatum(json_object_get_string(v));
	}
	return (Datum) 0;
}
