/*-------------------------------------------------------------------------
 *
 * artifacts.c
 *	  The C side of the artifact service (sql/install/80_artifacts.sql
 *	  holds the tables and the SQL API): the adk.max_artifact_size limit,
 *	  and the run scope.
 *
 * The run scope: while the runner runs a step that may save artifacts
 * (the user's input blobs, a round of tool calls), every adk_save_artifact
 * for the run's session records the invocation id on the row and is noted
 * here, so the runner can put {filename: version} into the event's
 * actions.artifact_delta, as ADK does.  The notes live in
 * TopTransactionContext: a subtransaction that aborts (a tool that fails
 * after saving) drops its own notes, as its rows are gone too, and the end
 * of the transaction ends the scope whatever happened.  Scopes nest: a
 * tool that runs another app (adk_run inside a tool) opens an inner scope,
 * and its end (or the abort of the subtransaction it began in) gives the
 * outer one back.
 *
 * IDENTIFICATION
 *	  src/store/artifacts.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "store/artifacts.h"

PG_FUNCTION_INFO_V1(adk_max_artifact_size_sql);
PG_FUNCTION_INFO_V1(adk_artifact_run_invocation_sql);
PG_FUNCTION_INFO_V1(adk_artifact_run_session_sql);
PG_FUNCTION_INFO_V1(adk_artifact_note_sql);

int			adk_max_artifact_size_kb = 100 * 1024;

typedef struct ScopeNote
{
	char	   *filename;
	int			version;
	SubTransactionId subid;
} ScopeNote;

typedef struct RunScope
{
	bool		active;
	char	   *app;
	char	   *user;
	char	   *session;
	char	   *invocation_id;
	SubTransactionId subid;		/* where the scope began */
	List	   *notes;			/* ScopeNote *, in TopTransactionContext */
	struct RunScope *outer;		/* the scope this one interrupts, or NULL */
} RunScope;

static RunScope scope;
static bool callbacks_registered = false;

static void scope_xact_callback(XactEvent event, void *arg);
static void scope_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
								   SubTransactionId parentSubid, void *arg);
static bool scope_matches(FunctionCallInfo fcinfo);
static void scope_pop(void);

void
adk_artifacts_init(void)
{
	if (callbacks_registered)
		return;
	RegisterXactCallback(scope_xact_callback, NULL);
	RegisterSubXactCallback(scope_subxact_callback, NULL);
	callbacks_registered = true;
}

void
adk_artifact_scope_begin(const char *app, const char *user,
						 const char *session, const char *invocation_id)
{
	MemoryContext old;

	adk_artifacts_init();
	old = MemoryContextSwitchTo(TopTransactionContext);
	if (scope.active)
	{
		RunScope   *outer = palloc(sizeof(RunScope));

		*outer = scope;
		scope.outer = outer;
	}
	else
		scope.outer = NULL;
	scope.active = true;
	scope.app = pstrdup(app);
	scope.user = pstrdup(user);
	scope.session = pstrdup(session);
	scope.invocation_id = pstrdup(invocation_id);
	scope.subid = GetCurrentSubTransactionId();
	scope.notes = NIL;
	MemoryContextSwitchTo(old);
}

List *
adk_artifact_scope_end(void)
{
	List	   *result = NIL;
	ListCell   *lc;

	if (!scope.active)
		return NIL;
	foreach(lc, scope.notes)
	{
		ScopeNote  *n = (ScopeNote *) lfirst(lc);
		ListCell   *r;
		bool		found = false;

		foreach(r, result)
		{
			AdkArtifactNote *a = (AdkArtifactNote *) lfirst(r);

			if (strcmp(a->filename, n->filename) == 0)
			{
				a->version = n->version;
				found = true;
			}
		}
		if (!found)
		{
			AdkArtifactNote *a = palloc(sizeof(AdkArtifactNote));

			a->filename = pstrdup(n->filename);
			a->version = n->version;
			result = lappend(result, a);
		}
	}
	scope_pop();
	return result;
}

/* End the current scope: the outer one, if any, is current again. */
static void
scope_pop(void)
{
	RunScope   *outer = scope.outer;

	if (outer != NULL)
		scope = *outer;
	else
		memset(&scope, 0, sizeof(scope));
}

static void
scope_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			/* its memory goes with TopTransactionContext */
			memset(&scope, 0, sizeof(scope));
			break;
		default:
			break;
	}
}

static void
scope_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					   SubTransactionId parentSubid, void *arg)
{
	ListCell   *lc;
	RunScope   *level;

	if (!scope.active)
		return;
	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		/* scopes begun in it end with it; every level loses its notes */
		while (scope.active && scope.subid == mySubid)
			scope_pop();
		for (level = &scope; level != NULL && level->active; level = level->outer)
			foreach(lc, level->notes)
			{
				ScopeNote  *n = (ScopeNote *) lfirst(lc);

				if (n->subid == mySubid)
					level->notes = foreach_delete_current(level->notes, lc);
			}
	}
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		for (level = &scope; level != NULL && level->active; level = level->outer)
		{
			if (level->subid == mySubid)
				level->subid = parentSubid;
			foreach(lc, level->notes)
			{
				ScopeNote  *n = (ScopeNote *) lfirst(lc);

				if (n->subid == mySubid)
					n->subid = parentSubid;
			}
		}
	}
}

/* arguments 0..2 are the app, user and session of the run's scope */
static bool
scope_matches(FunctionCallInfo fcinfo)
{
	int			i;
	const char *want[3];

	if (!scope.active)
		return false;
	want[0] = scope.app;
	want[1] = scope.user;
	want[2] = scope.session;
	for (i = 0; i < 3; i++)
	{
		char	   *have;

		if (PG_ARGISNULL(i))
			return false;
		have = text_to_cstring(PG_GETARG_TEXT_PP(i));
		if (strcmp(have, want[i]) != 0)
			return false;
	}
	return true;
}

/*
 * adk._max_artifact_size() RETURNS bigint: the limit in bytes.
 */
Datum
adk_max_artifact_size_sql(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64((int64) adk_max_artifact_size_kb * 1024);
}

/*
 * adk._artifact_run_invocation(app, user, session) RETURNS text: the
 * invocation of the run scope when it is this session's, else NULL.
 */
Datum
adk_artifact_run_invocation_sql(PG_FUNCTION_ARGS)
{
	if (!scope_matches(fcinfo))
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(scope.invocation_id));
}

/*
 * adk._artifact_run_session() RETURNS text[]: {app, user, session} of the
 * run scope, or NULL when no run is saving.
 */
Datum
adk_artifact_run_session_sql(PG_FUNCTION_ARGS)
{
	Datum		elems[3];

	if (!scope.active)
		PG_RETURN_NULL();
	elems[0] = CStringGetTextDatum(scope.app);
	elems[1] = CStringGetTextDatum(scope.user);
	elems[2] = CStringGetTextDatum(scope.session);
	PG_RETURN_ARRAYTYPE_P(construct_array(elems, 3, TEXTOID, -1, false, TYPALIGN_INT));
}

/*
 * adk._artifact_note(app, user, session, filename, version): note a saved
 * version when the run scope is this session's.
 */
Datum
adk_artifact_note_sql(PG_FUNCTION_ARGS)
{
	MemoryContext old;
	ScopeNote  *n;

	if (PG_ARGISNULL(3) || PG_ARGISNULL(4) || !scope_matches(fcinfo))
		PG_RETURN_VOID();
	old = MemoryContextSwitchTo(TopTransactionContext);
	n = palloc(sizeof(ScopeNote));
	n->filename = text_to_cstring(PG_GETARG_TEXT_PP(3));
	n->version = PG_GETARG_INT32(4);
	n->subid = GetCurrentSubTransactionId();
	scope.notes = lappend(scope.notes, n);
	MemoryContextSwitchTo(old);
	PG_RETURN_VOID();
}
