/*-------------------------------------------------------------------------
 *
 * otlp.h
 *	  The OTLP exporter: a background worker that sends committed spans to
 *	  adk.otlp_endpoint (OTLP/HTTP JSON, /v1/traces).
 *
 * IDENTIFICATION
 *	  src/worker/otlp.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_WORKER_OTLP_H
#define ADK_WORKER_OTLP_H

#include "postgres.h"

extern void adk_otlp_init(void);
extern PGDLLEXPORT void adk_otlp_exporter_main(Datum arg);

#endif							/* ADK_WORKER_OTLP_H */
