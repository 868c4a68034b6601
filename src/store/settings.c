/*-------------------------------------------------------------------------
 *
 * settings.c
 *	  The store's settings: the largest event and artifact, how long a
 *	  foreground writer waits for a session, what NOTIFY carries.
 *
 * IDENTIFICATION
 *	  src/store/settings.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "utils/guc.h"

#include "store/append.h"
#include "store/artifacts.h"
#include "store/notify.h"
#include "store/session_read.h"
#include "store/settings.h"

static const struct config_enum_entry notify_payload_options[] = {
	{"opaque", ADK_NOTIFY_OPAQUE, false},
	{"full", ADK_NOTIFY_FULL, false},
	{NULL, 0, false}
};

/*
 * Called from _PG_init: the store's GUCs (each variable lives in the file
 * that reads it) and its transaction callbacks.
 */
void
adk_store_init(void)
{
	DefineCustomIntVariable("adk.max_event_size",
							gettext_noop("Largest event accepted by an append."),
							gettext_noop("Measured on the event's jsonb representation."),
							&adk_max_event_size_kb,
							10 * 1024,
							1,
							MAX_KILOBYTES,
							PGC_SUSET,
							GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("adk.max_artifact_size",
							gettext_noop("Largest artifact accepted by adk_save_artifact."),
							NULL,
							&adk_max_artifact_size_kb,
							100 * 1024,
							1,
							1024 * 1024,
							PGC_SUSET,
							GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("adk.session_wait_timeout",
							gettext_noop("How long adk_run, adk_append_event and adk_compact wait for a queued run that holds their session."),
							gettext_noop("0 waits without a limit (a query cancel still stops the wait)."),
							&adk_session_wait_timeout_ms,
							60000,
							0,
							INT_MAX,
							PGC_USERSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("adk.notify_events",
							 gettext_noop("Whether every stored event sends NOTIFY adk_events."),
							 gettext_noop("A transaction that has sent a notification cannot be prepared (two-phase commit)."),
							 &adk_notify_events,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("adk.notify_payload",
							 gettext_noop("What NOTIFY adk_events and adk_jobs carry: opaque row ids, or the full ids."),
							 gettext_noop("Any role may LISTEN, whatever its privileges: \"opaque\" sends only the event's or the job's id, which a listener looks up in adk.events or adk.jobs with its own privileges; \"full\" also sends the app, user, session and invocation ids."),
							 &adk_notify_payload,
							 ADK_NOTIFY_OPAQUE,
							 notify_payload_options,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);

	adk_artifacts_init();
}
