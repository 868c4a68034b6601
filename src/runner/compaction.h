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

/*
 * The steps of a compaction, shared with the SQL functions
 * (compaction_sql.c): a query as the owner of schema adk, the read, the
 * summary, and the checked append.
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
