/*-------------------------------------------------------------------------
 *
 * compaction.h
 *	  Context compaction: tail retention before a model call,
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
 * A run's compaction waits for its summarizer without blocking: one
 * step reads the range and starts the summarizer's model call,
 * the run waits (ADK_STEP_WAIT), and the step after the answer came
 * appends the summary under the check.  The wait lives in memory under
 * the step's owner that waits for it (the round's for tail retention,
 * the run's for the sliding window), so deleting that stops it too.
 */
typedef struct AdkCompactionWait AdkCompactionWait;

/*
 * Before a model call: tail retention when the request is over the
 * threshold.  NULL when there is nothing to wait for; else wait until
 * adk_compaction_ready, then adk_compaction_finish, which says whether a
 * summary was appended (build the contents again).  Never raises for a
 * failed compaction: it is logged and recorded on the invocation.
 */
extern AdkCompactionWait *adk_compaction_before_model(AdkRun *run,
													  AdkAgent *agent,
													  const char *branch,
													  Jsonb *contents,
													  MemoryContext parent);

/* After an invocation that did not fail: the sliding window, likewise. */
extern AdkCompactionWait *adk_compaction_after_run(AdkRun *run,
												   MemoryContext parent);

extern bool adk_compaction_ready(const AdkCompactionWait *w);
extern bool adk_compaction_finish(AdkCompactionWait *w);
extern void adk_compaction_abandon(AdkCompactionWait *w);

/*
 * The steps of a compaction, shared with the SQL functions
 * (compaction_sql.c): a query as the owner of schema adk, the read, the
 * summary (started and waited for in the call: for adk_compact, outside
 * any run), and the checked append.
 */
extern Datum adk_compaction_owner_query(const char *sql, int nargs, Oid *types,
										Datum *args, const char *nulls,
										int col, bool *isnull);
extern Jsonb *adk_compaction_read_plan(const char *app, const char *user,
									   const char *session, int64 from,
									   int64 to, bool rolling);
extern char *adk_compaction_summarize(const char *app, const char *user,
									  const char *model, Jsonb *config,
									  Jsonb *plan, char **error);
extern int64 adk_compaction_append_summary(const char *app, const char *user,
										   const char *session, Jsonb *plan,
										   const char *summary,
										   const char *kind,
										   const char *invocation_id,
										   char **refused);

#endif							/* ADK_RUNNER_COMPACTION_H */
