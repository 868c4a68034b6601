/*-------------------------------------------------------------------------
 *
 * settings.h
 *	  The runner's settings (settings.c).
 *
 * IDENTIFICATION
 *	  src/runner/settings.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_RUNNER_SETTINGS_H
#define ADK_RUNNER_SETTINGS_H

/* GUC adk.tool_timeout (tools.c), in ms; 0: no limit */
extern int	adk_tool_timeout_ms;

/* GUC adk.history_carry_size (prompt_carry.c), in kB */
extern int	adk_history_carry_kb;

extern void adk_runner_init(void);

#endif							/* ADK_RUNNER_SETTINGS_H */
