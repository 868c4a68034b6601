/*-------------------------------------------------------------------------
 *
 * spans.h
 *	  OpenTelemetry GenAI spans of a run, as rows of adk.spans.
 *
 * The runner calls one function at each edge: run begin/end, agent
 * begin/end (a frame pushed or popped), model request start/end, tool
 * start/end, plugin start/end.  Everything else is here.
 *
 * IDENTIFICATION
 *	  src/runner/spans.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_RUNNER_SPANS_H
#define ADK_RUNNER_SPANS_H

#include "utils/jsonb.h"

struct AdkRun;
struct AdkAgent;
struct AdkTool;

/* GUCs */
extern bool adk_spans_enabled;
extern bool adk_capture_message_content;
extern int	adk_spans_retention_s;
extern char *adk_traceparent_setting;
extern char *adk_otlp_endpoint;	/* set: spans are queued for export */

extern void adk_spans_define_gucs(void);
extern char *adk_span_traceparent_option(JsonbValue *v);

extern void adk_span_run_begin(struct AdkRun *run);
extern void adk_span_run_end(struct AdkRun *run, bool waiting);
extern void adk_span_agent_begin(struct AdkRun *run, struct AdkAgent *agent);
extern void adk_span_agent_end(struct AdkRun *run);
extern void adk_span_model_begin(struct AdkRun *run, const char *model,
								 Jsonb *contents);
extern void adk_span_model_end(struct AdkRun *run, Jsonb *response);
extern void adk_span_tool_begin(struct AdkRun *run, struct AdkTool *tool,
								const char *call_id, Jsonb *args);
extern void adk_span_tool_end(struct AdkRun *run, Jsonb *result);
extern void adk_span_plugin_begin(struct AdkRun *run);
extern void adk_span_plugin_end(struct AdkRun *run, const char *plugin,
								const char *callback, bool ok);

#endif							/* ADK_RUNNER_SPANS_H */
