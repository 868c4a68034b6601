/*-------------------------------------------------------------------------
 *
 * artifacts.h
 *	  The artifact service's C side: adk.max_artifact_size, and the run
 *	  scope that records what a run saved for its actions.artifact_delta.
 *
 * IDENTIFICATION
 *	  src/store/artifacts.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_ARTIFACTS_H
#define ADK_ARTIFACTS_H

#include "nodes/pg_list.h"

/* GUC adk.max_artifact_size, in kB */
extern int	adk_max_artifact_size_kb;

/* One saved version: filename -> version */
typedef struct AdkArtifactNote
{
	char	   *filename;
	int			version;
} AdkArtifactNote;

extern void adk_artifacts_init(void);

/*
 * From begin to end, artifacts saved for this session (through any
 * adk_save_artifact call) carry the invocation id and are noted; end
 * returns the notes (AdkArtifactNote *, last save of a filename wins, in
 * first-save order), palloc'd in the caller's context.  A subtransaction
 * that aborts takes its notes with it; the end of the transaction ends the
 * scope.
 */
extern void adk_artifact_scope_begin(const char *app, const char *user,
									 const char *session,
									 const char *invocation_id);
extern List *adk_artifact_scope_end(void);

#endif							/* ADK_ARTIFACTS_H */
