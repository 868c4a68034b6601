/*-------------------------------------------------------------------------
 *
 * settings.c
 *	  The runner's settings: the tool timeout and the traces' settings.
 *
 * IDENTIFICATION
 *	  src/runner/settings.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "utils/guc.h"

#include "runner/settings.h"
#include "runner/spans.h"

/*
 * Called from _PG_init: the runner's GUCs (adk_tool_timeout_ms lives in
 * tools.c, adk_history_carry_kb in prompt_carry.c, the traces' in spans.c).
 */
void
adk_runner_init(void)
{
	DefineCustomIntVariable("adk.tool_timeout",
							gettext_noop("Longest a SQL tool call may run."),
							gettext_noop("A tool that runs longer is stopped; the model gets an error response.  0 means no limit.  In a job worker, a running tool holds up the worker's other runs."),
							&adk_tool_timeout_ms,
							0,
							0,
							INT_MAX,
							PGC_SUSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("adk.history_carry_size",
							gettext_noop("Memory per backend for what runs assembled of their sessions' histories, kept for the backend's next run on each."),
							gettext_noop("The sessions run longest ago go first past it; the last run's session is kept whatever its size."),
							&adk_history_carry_kb,
							8 * 1024,
							0,
							1024 * 1024,
							PGC_SUSET,
							GUC_UNIT_KB,
							NULL, NULL, NULL);

	adk_spans_define_gucs();
}
