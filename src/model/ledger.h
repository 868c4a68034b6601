/*-------------------------------------------------------------------------
 *
 * ledger.h
 *	  adk.model_calls: one row per model request.
 *
 * IDENTIFICATION
 *	  src/model/ledger.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_LEDGER_H
#define ADK_LEDGER_H

#include "utils/jsonb.h"

struct json_object;

typedef struct AdkModelCallRecord
{
	const char *model;
	const char *provider;
	const char *url;
	bool		stream;
	long		http_status;	/* 0: no HTTP response */
	int			attempts;
	double		latency_ms;
	Jsonb	   *request;		/* the request as stored (adk_ledger_request),
								 * or NULL: not sent, or bodies not kept */
	const char *response_body;	/* raw body received, or NULL (streamed) */
	size_t		response_len;
	struct json_object *result; /* the LlmResponse returned to the caller */
	Jsonb	   *result_jsonb;	/* the same, as returned */
	const char *secret;			/* redacted from both bodies; may be NULL */
	const char *provider_model; /* the provider's model id */
	double		first_chunk_ms; /* streamed: time to the first chunk; < 0: none */
	const char *app;			/* the session's app and user id the call */
	const char *user;			/* is made for; NULL: no session */
	const char *invocation_id;	/* NULL: none */
	const struct AdkTraceCurrent *trace;	/* the span it joined, or NULL */
	int			fallback_attempt;	/* 0: the first model the call tried */
	const char *fallback_from;	/* the model tried before, or NULL */
	int64		cache_creation_tokens;	/* written to the prompt cache; -1:
										 * none reported */
} AdkModelCallRecord;

/*
 * What the last adk_ledger_record call saw, for the runner's model span
 * (runner/spans.c): copied, so it outlives the call's memory.
 */
typedef struct AdkLastModelCall
{
	bool		valid;
	char		provider[16];
	char		request_model[128];
	char		host[256];
	int			port;
	long		http_status;
	int			attempts;
	double		latency_ms;
	double		first_chunk_ms; /* < 0: none */
} AdkLastModelCall;

extern AdkLastModelCall adk_ledger_last;

/* GUCs */
extern int	adk_model_calls_retention_s;
extern bool adk_model_calls_bodies;

extern Jsonb *adk_ledger_request(struct json_object *request);
extern Jsonb *adk_ledger_request_redacted(const char *body, const char *secret);
extern void adk_ledger_record(const AdkModelCallRecord *rec);

#endif							/* ADK_LEDGER_H */
