/*-------------------------------------------------------------------------
 *
 * trace_context.h
 *	  W3C trace context: traceparent parsing and formatting, random ids,
 *	  and the span running now.
 *
 * IDENTIFICATION
 *	  src/common/trace_context.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_TRACE_CONTEXT_H
#define ADK_TRACE_CONTEXT_H

#define ADK_TRACE_ID_HEX	32
#define ADK_SPAN_ID_HEX		16
#define ADK_TRACEPARENT_LEN 55	/* version 00 */

/*
 * The span the runner is in now.  Valid only while invocation_id is the
 * running invocation (adk_running_invocation): a consumer checks that, so
 * a context left behind by an error, or by a run paused between two
 * FETCHes, is never used.
 */
typedef struct AdkTraceCurrent
{
	bool		set;
	char		invocation_id[128];
	char		trace_id[ADK_TRACE_ID_HEX + 1];
	char		span_id[ADK_SPAN_ID_HEX + 1];
	unsigned char flags;
} AdkTraceCurrent;

extern AdkTraceCurrent adk_trace_current;

extern bool adk_traceparent_parse(const char *s, char *trace_id,
								  char *parent_id, unsigned char *flags);
extern void adk_traceparent_check(const char *s, const char *what);
extern char *adk_traceparent_format(const char *trace_id, const char *span_id,
									unsigned char flags);
extern void adk_random_hex_id(char *out, int nbytes);
extern void adk_trace_set_current(const char *invocation_id,
								  const char *trace_id, const char *span_id,
								  unsigned char flags);
extern bool adk_trace_current_for(const char *invocation_id);
extern const AdkTraceCurrent *adk_trace_context_for(const char *invocation_id);

/*
 * The invocation whose step runs in this backend now, or NULL: set by the
 * runner around a step.  Code the runner calls gets the invocation as a
 * parameter; this is for the SQL functions a tool or plugin may call in
 * the middle of a step (adk_generate, adk_current_trace, adk_set_user),
 * which have no other way to know.
 */
extern void adk_running_invocation_set(const char *invocation_id);
extern const char *adk_running_invocation(void);

#endif							/* ADK_TRACE_CONTEXT_H */
