/*-------------------------------------------------------------------------
 *
 * tenancy.h
 *	  Tenancy per app (README "Tenancy"): who may name which ADK user id.
 *
 * IDENTIFICATION
 *	  src/store/tenancy.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_TENANCY_H
#define ADK_TENANCY_H

#include "utils/jsonb.h"

typedef enum AdkTenancy
{
	ADK_TENANCY_SHARED,
	ADK_TENANCY_ROLE,
	ADK_TENANCY_CLAIM
} AdkTenancy;

/* the app's mode ('shared' for an app that is not defined) */
extern AdkTenancy adk_app_tenancy(const char *app);

/* the current role sees and runs every user's sessions (admin, owner) */
extern bool adk_tenancy_sees_all(void);

/* raise 42501 unless the current role may act as "user" in "app" */
extern void adk_tenancy_check(const char *app, const char *user);

/*
 * raise 42501 when state (a state or a state_delta object; NULL: none) has
 * an "app:" key and the current role may not write the app state of
 * "app": in a 'role' or 'claim' app only roles that see everything do.
 */
extern void adk_tenancy_check_app_state(const char *app, Jsonb *state);

/*
 * true when an event the current role appends to a session of "app"
 * through adk_append_event may count as history that other roles act on
 * (pending calls, compaction records): see tenancy.c.
 */
extern bool adk_tenancy_trusted_append(const char *app);

/*
 * A job worker runs a queued run as the user the submitter named (checked
 * when it was queued): pin it for the run, so the run's own calls pass
 * the claim check and adk_set_user is refused meanwhile.  NULL unpins.
 */
extern void adk_tenancy_pin_user(const char *user);

#endif							/* ADK_TENANCY_H */
