/*-------------------------------------------------------------------------
 *
 * settings.c
 *	  The model layer's settings: limits of a request and its answer, the
 *	  request cache, API keys, the ledger and link-local endpoints.
 *
 * IDENTIFICATION
 *	  src/model/settings.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "utils/guc.h"

#include "model/generate.h"
#include "model/guard.h"
#include "model/http.h"
#include "model/ledger.h"
#include "model/model_def.h"
#include "model/msg_cache.h"
#include "model/settings.h"
#include "shared/breaker.h"

/*
 * Called from _PG_init: the model layer's GUCs (each variable lives in the
 * file that reads it), then libcurl.
 */
void
adk_model_init(void)
{
	DefineCustomIntVariable("adk.max_response_bytes",
							gettext_noop("Largest model response body accepted."),
							NULL,
							&adk_max_response_bytes,
							8 * 1024 * 1024,
							1024,
							INT_MAX,
							PGC_SUSET,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);

	DefineCustomIntVariable("adk.max_request_bytes",
							gettext_noop("Largest model request body sent."),
							gettext_noop("A larger request is not sent: the call fails with REQUEST_TOO_LARGE."),
							&adk_max_request_bytes,
							20 * 1024 * 1024,
							1024,
							INT_MAX,
							PGC_SUSET,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);

	DefineCustomIntVariable("adk.request_cache_size",
							gettext_noop("Memory per backend for the provider messages of history contents, reused by a run's later requests."),
							gettext_noop("Kept while the backend has a run in flight, emptied when its last run ends or when full.  0 turns it off."),
							&adk_request_cache_kb,
							16 * 1024,
							0,
							1024 * 1024,
							PGC_SUSET,
							GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomStringVariable("adk.allowed_key_env",
							   gettext_noop("Server environment variables a model may take its API key from."),
							   gettext_noop("Comma-separated names."),
							   &adk_allowed_key_env,
							   "OPENAI_API_KEY, GEMINI_API_KEY, GOOGLE_API_KEY, ANTHROPIC_API_KEY",
							   PGC_SUSET,
							   GUC_LIST_INPUT,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("adk.env_key_hosts",
							   gettext_noop("The hosts each environment variable's API key may be sent to."),
							   gettext_noop("Comma-separated VARIABLE=host or VARIABLE=host:port; a variable may appear more than once; host * is any host."),
							   &adk_env_key_hosts,
							   "OPENAI_API_KEY=api.openai.com, "
							   "GEMINI_API_KEY=generativelanguage.googleapis.com, "
							   "GOOGLE_API_KEY=generativelanguage.googleapis.com, "
							   "ANTHROPIC_API_KEY=api.anthropic.com",
							   PGC_SUSET,
							   GUC_LIST_INPUT,
							   adk_check_env_key_hosts, NULL, NULL);

	DefineCustomIntVariable("adk.model_calls_retention",
							gettext_noop("How long rows of adk.model_calls are kept."),
							gettext_noop("-1 keeps them forever."),
							&adk_model_calls_retention_s,
							7 * 24 * 3600,
							-1,
							INT_MAX,
							PGC_SUSET,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("adk.model_calls_bodies",
							 gettext_noop("Whether adk.model_calls keeps request and response bodies."),
							 NULL,
							 &adk_model_calls_bodies,
							 true,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("adk.store_thoughts",
							 gettext_noop("Whether the text of a model's thoughts is kept."),
							 gettext_noop("Off: thought text is dropped where an answer comes in, before events, the ledger or a result hold it; thought signatures stay."),
							 &adk_store_thoughts,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("adk.allow_link_local_endpoints",
							 gettext_noop("Whether model, embedding and OTLP requests may connect to link-local addresses."),
							 gettext_noop("169.254.0.0/16 and fe80::/10, where cloud metadata services answer; checked on the address a host name resolves to."),
							 &adk_allow_link_local_endpoints,
							 false,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("adk.verify_incremental",
							 gettext_noop("Whether every prompt and request built from the run's previous one is also built from scratch and compared."),
							 gettext_noop("For tests: a difference is an internal error.  Doubles the cost of prompt assembly."),
							 &adk_verify_incremental,
							 false,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);

	adk_breaker_init_gucs();
	adk_http_init();
}
