/*-------------------------------------------------------------------------
 *
 * budget.h
 *	  Token budgets (adk.budgets) at every model call of a run.
 *
 * IDENTIFICATION
 *	  src/runner/budget.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_BUDGET_H
#define ADK_BUDGET_H

#include "runner/runner.h"

/*
 * Before a model call: take it from every budget that applies (under the
 * budgets' row locks).  false: a budget is spent -- a BUDGET_EXCEEDED
 * error event was stored, the run ends failed, no call may be made.
 * *taken_at: when, for adk_budget_charge.
 */
extern bool adk_budget_take(AdkRun *run, const char *author, const char *branch,
							TimestampTz *taken_at);

/* After the call: charge its tokens (input + output) to those budgets. */
extern void adk_budget_charge(AdkRun *run, TimestampTz taken_at, int64 tokens);

/* The same for a call outside the agents' flow (a summarizer): NULL when
 * taken, else why not. */
extern char *adk_budget_try(const char *app, const char *user, TimestampTz *taken_at);
extern void adk_budget_charge_to(const char *app, const char *user,
								 TimestampTz taken_at, int64 tokens);

/* input + output tokens of a model response */
extern int64 adk_response_tokens(Jsonb *response);

#endif							/* ADK_BUDGET_H */
