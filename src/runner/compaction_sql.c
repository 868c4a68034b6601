/*-------------------------------------------------------------------------
 *
 * compaction_sql.c
 *	  The compaction API for callers outside a run:
 *	  adk_compaction_read(), adk_compaction_append() and adk_compact().
 *
 * They read, summarize and append as a run's compaction does, with the
 * same code (compaction.c) and the same check under the session row lock.
 *
 * IDENTIFICATION
 *	  src/runner/compaction_sql.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/builtins.h"

#include "common/ids.h"
#include "common/jsonb_util.h"
#include "runner/compaction.h"
#include "runner/runner.h"
#include "store/session_read.h"
#include "store/tenancy.h"

PG_FUNCTION_INFO_V1(adk_compaction_read_sql);
PG_FUNCTION_INFO_V1(adk_compaction_append_sql);
PG_FUNCTION_INFO_V1(adk_compact);

/*
 * Every entry point below names the app (argument 0) and the user id
 * (argument 1): adk_arg_id (args.c) checks them.
 */

/*
 * adk_compaction_read(app, user_id, session_id, from_seq, to_seq)
 */
Datum
adk_compaction_read_sql(PG_FUNCTION_ARGS)
{
	char	   *app = adk_arg_id(fcinfo, 0, "app name");
	char	   *user = adk_arg_id(fcinfo, 1, "user id");
	char	   *session = adk_arg_id(fcinfo, 2, "session id");
	int64		from = PG_ARGISNULL(3) ? 0 : PG_GETARG_INT64(3);
	int64		to = PG_ARGISNULL(4) ? 0 : PG_GETARG_INT64(4);
	Jsonb	   *plan;

	if ((!PG_ARGISNULL(3) && from < 1) || (!PG_ARGISNULL(4) && to < 1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("from_seq and to_seq must be positive")));
	plan = adk_compaction_read_plan(app, user, session, from, to,
									PG_ARGISNULL(3));
	if (plan == NULL)
		PG_RETURN_NULL();
	PG_RETURN_JSONB_P(plan);
}

/*
 * adk_compaction_append(app, user_id, session_id, plan, summary)
 */
Datum
adk_compaction_append_sql(PG_FUNCTION_ARGS)
{
	char	   *app = adk_arg_id(fcinfo, 0, "app name");
	char	   *user = adk_arg_id(fcinfo, 1, "user id");
	char	   *session = adk_arg_id(fcinfo, 2, "session id");
	Jsonb	   *plan;
	char	   *summary;
	char	   *refused;
	int64		seq;

	if (PG_ARGISNULL(3) || PG_ARGISNULL(4))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("plan and summary must not be null")));
	/*
	 * A summary written by the caller stands in every later prompt of the
	 * session.  In a 'shared' app any adk_user member may name any session,
	 * so only a role that sees everything may write one there.
	 */
	if (!adk_tenancy_trusted_append(app))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to append a compaction record to a session of app \"%s\"",
						app),
				 errdetail("App \"%s\" has tenancy 'shared': a summary written by one role would replace the history that other roles run on.",
						   app),
				 errhint("Use adk_compact(), which summarizes with the app's summarizer model, or give the app tenancy 'role' or 'claim'.")));
	plan = PG_GETARG_JSONB_P(3);
	summary = text_to_cstring(PG_GETARG_TEXT_PP(4));
	if (!adk_jsonb_is_object(&plan->root))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid compaction plan"),
				 errhint("Pass the result of adk_compaction_read() unchanged.")));
	if (summary[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("summary must not be empty")));
	/* a queued run's turn is not interrupted: wait for it, as adk_run does */
	(void) adk_session_lock_unheld(app, user, session);
	seq = adk_compaction_append_summary(app, user, session, plan, summary,
										"manual", adk_new_id("e-"), &refused);
	if (seq == 0)
	{
		ereport(WARNING,
				(errmsg("compaction of session \"%s\" not appended", session),
				 errdetail("%s.", refused)));
		PG_RETURN_NULL();
	}
	PG_RETURN_INT64(seq);
}

/*
 * adk_compact(app, user_id, session_id, from_seq, to_seq): read, summarize
 * with the app's summarizer, append.
 */
Datum
adk_compact(PG_FUNCTION_ARGS)
{
	char	   *app = adk_arg_id(fcinfo, 0, "app name");
	char	   *user = adk_arg_id(fcinfo, 1, "user id");
	char	   *session = adk_arg_id(fcinfo, 2, "session id");
	int64		from = PG_ARGISNULL(3) ? 0 : PG_GETARG_INT64(3);
	int64		to = PG_ARGISNULL(4) ? 0 : PG_GETARG_INT64(4);
	Oid			types[1] = {TEXTOID};
	Datum		args[1];
	bool		isnull;
	Datum		d;
	char	   *model;
	Jsonb	   *plan;
	char	   *summary;
	char	   *error;
	char	   *refused;
	int64		seq;

	if ((!PG_ARGISNULL(3) && from < 1) || (!PG_ARGISNULL(4) && to < 1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("from_seq and to_seq must be positive")));
	args[0] = CStringGetTextDatum(app);
	/* sql/install/65_compaction.sql */
	d = adk_compaction_owner_query("SELECT adk._summarizer_model($1)",
								   1, types, args, NULL, 1, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("app \"%s\" does not exist or has no summarizer model", app),
				 errhint("Set summarizer_model in the app's compaction.")));
	model = TextDatumGetCString(d);
	plan = adk_compaction_read_plan(app, user, session, from, to,
									PG_ARGISNULL(3));
	if (plan == NULL)
		PG_RETURN_NULL();
	summary = adk_compaction_summarize(app, user, model, NULL, plan, &error);
	if (summary == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
				 errmsg("could not summarize session \"%s\"", session),
				 errdetail("%s.", error)));
	/* a queued run's turn is not interrupted: wait for it, as adk_run does */
	(void) adk_session_lock_unheld(app, user, session);
	seq = adk_compaction_append_summary(app, user, session, plan, summary,
										"manual", adk_new_id("e-"), &refused);
	if (seq == 0)
	{
		ereport(WARNING,
				(errmsg("compaction of session \"%s\" not appended", session),
				 errdetail("%s.", refused)));
		PG_RETURN_NULL();
	}
	PG_RETURN_INT64(seq);
}
