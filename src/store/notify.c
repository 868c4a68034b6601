/*-------------------------------------------------------------------------
 *
 * notify.c
 *	  NOTIFY adk_events for every stored event, NOTIFY adk_jobs for every
 *	  job that ends.
 *
 * PostgreSQL has no privileges on channels: any role may LISTEN, even one
 * with no grant on schema adk.  So by default (adk.notify_payload =
 * opaque) a payload names only a row, which a listener looks up with its
 * own privileges:
 *	adk_events: {"event_id"}	(adk.events.id)
 *	adk_jobs:   {"job_id", "status"}	(adk.jobs.id)
 * With adk.notify_payload = full (superusers set it, for a server whose
 * every role may see every session), payloads carry the ids themselves,
 * so LISTEN adk_events streams runs without a lookup:
 *	adk_events: {"event_id", "app", "user", "session", "seq",
 *				 "invocation_id", "author"}
 *	adk_jobs:   {"job_id", "invocation_id", "status"}
 * They are delivered at commit, like every notification: a job worker
 * commits after each step, so a listener sees its events as they come.
 * A payload stays under NOTIFY's 8000 bytes (ids are at most 191
 * characters; an over-long author is left out).  adk.notify_events = off
 * turns the event notifications off (a transaction that has notified
 * cannot be prepared).
 *
 * The store sends them (append.c) and the job worker (job.c): this file
 * sits in the store, which includes nothing from the workers.
 *
 * IDENTIFICATION
 *	  src/store/notify.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "commands/async.h"
#include "lib/stringinfo.h"
#include "utils/json.h"
#include "utils/jsonb.h"

#include "common/jsonb_util.h"
#include "store/notify.h"

bool		adk_notify_events = true;	/* GUCs (defined in settings.c) */
int			adk_notify_payload = ADK_NOTIFY_OPAQUE;

#define MAX_PAYLOAD		7999
#define MAX_AUTHOR		1024

static void json_field(StringInfo buf, const char *key, const char *value,
					   bool first);

void
adk_notify_event(const char *app, const char *user, const char *session,
				 int64 seq, const char *invocation_id, Jsonb *event)
{
	StringInfoData buf;
	JsonbValue *id;
	JsonbValue *author;
	Size		before_author;

	if (!adk_notify_events || IsParallelWorker())
		return;
	id = event ? adk_jsonb_get(&event->root, "id") : NULL;
	initStringInfo(&buf);
	json_field(&buf, "event_id",
			   id && id->type == jbvString ?
			   pnstrdup(id->val.string.val, id->val.string.len) : NULL, true);
	if (adk_notify_payload == ADK_NOTIFY_FULL)
	{
		json_field(&buf, "app", app, false);
		json_field(&buf, "user", user, false);
		json_field(&buf, "session", session, false);
		appendStringInfo(&buf, ",\"seq\":" INT64_FORMAT, seq);
		json_field(&buf, "invocation_id", invocation_id, false);
		before_author = buf.len;
		author = event ? adk_jsonb_get(&event->root, "author") : NULL;
		if (author && author->type == jbvString && author->val.string.len <= MAX_AUTHOR)
			json_field(&buf, "author",
					   pnstrdup(author->val.string.val, author->val.string.len), false);
		if (buf.len >= MAX_PAYLOAD)
		{
			buf.len = before_author;
			buf.data[buf.len] = '\0';
		}
	}
	appendStringInfoChar(&buf, '}');
	if (buf.len <= MAX_PAYLOAD)
		Async_Notify("adk_events", buf.data);
	pfree(buf.data);
}

void
adk_notify_job(int64 job_id, const char *invocation_id, const char *status)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, "{\"job_id\":" INT64_FORMAT, job_id);
	if (adk_notify_payload == ADK_NOTIFY_FULL)
		json_field(&buf, "invocation_id", invocation_id, false);
	json_field(&buf, "status", status, false);
	appendStringInfoChar(&buf, '}');
	Async_Notify("adk_jobs", buf.data);
	pfree(buf.data);
}

static void
json_field(StringInfo buf, const char *key, const char *value, bool first)
{
	appendStringInfoChar(buf, first ? '{' : ',');
	escape_json(buf, key);
	appendStringInfoChar(buf, ':');
	if (value)
		escape_json(buf, value);
	else
		appendStringInfoString(buf, "null");
}
