/*-------------------------------------------------------------------------
 *
 * spans.h
 *	  OpenTelemetry GenAI spans of a run, as rows of adk.spans.
 *
 * A run is concurrent inside (a parallel agent's lanes, agents used as
 * tools): spans are not a stack.  Each begin function takes its parent
 * explicitly and returns a handle, an AdkSpanId, that the work it
 * describes keeps (a frame its agent span, a round its model span, a call
 * slot its agent-tool's spans) and ends it with.  A handle is a number, not
 * a pointer: one that outlives its span (work abandoned, the span already
 * ended with its parent or the run) names nothing, and every function
 * ignores it.  Ending a span first ends the spans still open below it, as
 * abandoned (status ERROR).  0 is no span (spans off).
 *
 * The stepper (agents.c) says which frame's agent span each step works for
 * (adk_span_step_begin): what starts and ends within the step -- SQL tool
 * calls, plugin callbacks -- hangs under it (adk_span_step).
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

typedef uint32 AdkSpanId;		/* 0: no span */

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
extern void adk_span_keep_written(struct AdkRun *run);
extern void adk_span_committed(struct AdkRun *run);
extern void adk_span_run_abort(struct AdkRun *run, bool cancelled,
							   const char *error_type, const char *message);

extern void adk_span_step_begin(struct AdkRun *run, AdkSpanId span);
extern AdkSpanId adk_span_step(struct AdkRun *run);
extern AdkSpanId adk_span_root(struct AdkRun *run);

extern AdkSpanId adk_span_agent_begin(struct AdkRun *run, AdkSpanId parent,
									  struct AdkAgent *agent);
extern void adk_span_agent_end(struct AdkRun *run, AdkSpanId span);
extern AdkSpanId adk_span_model_begin(struct AdkRun *run, AdkSpanId parent,
									  const char *model, Jsonb *contents);
extern AdkSpanId adk_span_compaction_begin(struct AdkRun *run, AdkSpanId parent,
										   const char *kind, const char *model,
										   Jsonb *contents);
extern void adk_span_model_finishing(struct AdkRun *run, AdkSpanId span);
extern void adk_span_model_end(struct AdkRun *run, AdkSpanId span,
							   Jsonb *response);
extern void adk_span_model_fail(struct AdkRun *run, AdkSpanId span,
								const char *error_type, const char *message);
extern AdkSpanId adk_span_tool_begin(struct AdkRun *run, AdkSpanId parent,
									 const char *tool, const char *description,
									 const char *call_id, Jsonb *args);
extern void adk_span_tool_end(struct AdkRun *run, AdkSpanId span,
							  Jsonb *result);
extern AdkSpanId adk_span_agent_tool_begin(struct AdkRun *run, AdkSpanId parent,
										   struct AdkAgent *agent,
										   const char *call_id, Jsonb *args);
extern void adk_span_agent_tool_end(struct AdkRun *run, AdkSpanId span,
									Jsonb *result);
extern void adk_span_plugin_begin(struct AdkRun *run);
extern void adk_span_plugin_end(struct AdkRun *run, const char *plugin,
								const char *callback, bool ok);

#endif							/* ADK_RUNNER_SPANS_H */
