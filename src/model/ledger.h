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
	const char *request_body;	/* JSON text sent (made by us: valid JSON) */
	const char *response_body;	/* raw body received, or NULL (streamed) */
	size_t		response_len;
	struct json_object *result; /* the LlmResponse returned to the caller */
	Jsonb	   *result_jsonb;	/* the same, as returned */
	const char *secret;			/* redacted from both bodies; may be NULL */
} AdkModelCallRecord;

/* GUCs */
extern int	adk_model_calls_retention_s;
extern bool adk_model_calls_bodies;

/* Set by the runner while an invocation runs; NULL otherwise. */
extern char *adk_current_invocation_id;

extern void adk_ledger_record(const AdkModelCallRecord *rec);

#endif							/* ADK_LEDGER_H */
