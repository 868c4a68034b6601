/*-------------------------------------------------------------------------
 *
 * workflow_node.h
 *	  What a graph workflow node's settings do to one of its activations
 *	  (workflow_node.c): input and output schemas, retry, timeout,
 *	  wait_for_output.
 *
 * IDENTIFICATION
 *	  src/runner/workflow_node.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_WORKFLOW_NODE_H
#define ADK_WORKFLOW_NODE_H

#include "nodes/pg_list.h"
#include "utils/jsonb.h"

#include "runner/runner.h"

/* A node's settings, as adk._workflow_node_settings reads them */
typedef struct AdkWfNodeSettings
{
	char	   *name;
	bool		retry;			/* it has a RetryConfig */
	int			max_attempts;
	double		initial_delay;	/* seconds */
	double		max_delay;		/* seconds; 0: no cap */
	double		backoff_factor;
	double		jitter;
	int			timeout_ms;		/* 0: none */
	Jsonb	   *input_schema;	/* NULL: none */
	Jsonb	   *output_schema;	/* NULL: none */
	bool		wait_for_output;
} AdkWfNodeSettings;

/* One attempt of a node's work: true when it completed, else *error */
typedef bool (*AdkWfAttemptFn) (void *arg, char **error);

/* How one attempt of a node's work ended (adk_wfnode_attempt) */
typedef enum AdkWfAttempt
{
	WF_ATTEMPT_OK,				/* it completed */
	WF_ATTEMPT_FAILED,			/* it failed, no attempt is left: *error */
	WF_ATTEMPT_RETRY			/* it failed: again after *wait_ms */
} AdkWfAttempt;

extern List *adk_wfnode_load(const char *workflow);
extern AdkWfNodeSettings *adk_wfnode_find(List *settings, const char *node);
extern bool adk_wfnode_input(AdkWfNodeSettings *s, bool join, Jsonb **input,
							 char **error);
extern AdkWfAttempt adk_wfnode_attempt(AdkWfNodeSettings *s, int *failed,
									   AdkWfAttemptFn fn, void *arg,
									   char **error, long *wait_ms);
extern AdkWfAttempt adk_wfnode_failed(AdkWfNodeSettings *s, int *failed,
									   char **error, long *wait_ms);
extern bool adk_wfnode_retries_left(AdkWfNodeSettings *s, int failed);
extern AdkWfNodeSettings *adk_wfnode_item_settings(AdkWfNodeSettings *worker,
												   AdkWfNodeSettings *pw);
extern void adk_wfnode_retrying(AdkRun *run, const char *path);
extern bool adk_wfnode_output(AdkWfNodeSettings *s, Jsonb **output,
							  char **error);
extern bool adk_wfnode_waits(AdkWfNodeSettings *s, Jsonb *output);
extern double adk_wfnode_delay(AdkWfNodeSettings *s, int failed);

#endif							/* ADK_WORKFLOW_NODE_H */
