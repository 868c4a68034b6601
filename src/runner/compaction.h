/*-------------------------------------------------------------------------
 *
 * compaction.h
 *	  Context compaction (SPEC §7): tail retention before a model call,
 *	  the sliding window after an invocation.
 *
 * IDENTIFICATION
 *	  src/runner/compaction.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_RUNNER_COMPACTION_H
#define ADK_RUNNER_COMPACTION_H

#include "runner/runner.h"

/* The app's compaction settings, read once per invocation. */
typedef struct AdkCompaction
{
	bool		enabled;		/* adk.apps.compaction is set */
	int			interval;		/* 0: no sliding window */
	int			overlap;
	int64		threshold;		/* 0: no tail retention */
	int			retention;
	char	   *summarizer;		/* model name */
	bool		own_summarizer; /* summarizer_model given (else the root's) */
} AdkCompaction;

/*
 * Before a model call: tail retention when the request is over the
 * threshold.  True when a summary was appended (build the contents again).
 * Never raises for a failed compaction: it is logged and recorded on the
 * invocation.
 */
extern bool adk_compaction_before_model(AdkRun *run, AdkAgent *agent,
										const char *branch, Jsonb *contents);

/* After an invocation that did not fail: the sliding window. */
extern void adk_compaction_after_run(AdkRun *run);

#endif							/* ADK_RUNNER_COMPACTION_H */
