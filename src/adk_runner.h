/*-------------------------------------------------------------------------
 *
 * adk_runner.h
 *	  Declarations shared by every part of adk_runner: GUC variables and
 *	  limits that more than one concern needs.
 *
 * IDENTIFICATION
 *	  src/adk_runner.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_RUNNER_H
#define ADK_RUNNER_H

/* ADK's key width: sessions/events ids are varchar(191). */
#define ADK_MAX_ID_CHARS		191
/* events.invocation_id is varchar(255). */
#define ADK_MAX_INVOCATION_ID_CHARS	255

/* GUC: largest event_data accepted by an append, in kB. */
extern int	adk_max_event_size_kb;
extern int	adk_tool_timeout_ms;	/* adk.tool_timeout (tools.c) */

#endif							/* ADK_RUNNER_H */
