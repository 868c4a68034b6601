/*-------------------------------------------------------------------------
 *
 * args.c
 *	  The arguments of the runner's SQL entry points, checked: the ids
 *	  (app name, user id, session id) and adk_run's and adk_submit's
 *	  message.
 *
 * IDENTIFICATION
 *	  src/runner/args.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "common/ids.h"
#include "common/jsonb_util.h"
#include "runner/runner.h"
#include "store/tenancy.h"

/*
 * An id argument of an SQL entry point (app name, user id, session id),
 * checked.  The app is argument 0 and the user id argument 1: checking the
 * user id also checks the app's tenancy.
 */
char *
adk_arg_id(FunctionCallInfo fcinfo, int n, const char *what)
{
	char	   *id = adk_check_id(what, PG_ARGISNULL(n) ? NULL : PG_GETARG_TEXT_PP(n),
								  ADK_MAX_ID_CHARS);

	if (n == 1)
		adk_tenancy_check(text_to_cstring(PG_GETARG_TEXT_PP(0)), id);
	return id;
}

/*
 * The message argument of adk_run / adk_submit as a Content: text becomes
 * a user text part; jsonb must already be a Content with parts.
 */
Jsonb *
adk_message_arg(FunctionCallInfo fcinfo, int argno, bool is_text)
{
	Jsonb	   *message;
	JsonbValue *parts;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("message must not be null")));
	if (is_text)
		return adk_text_content(text_to_cstring(PG_GETARG_TEXT_PP(argno)));
	message = PG_GETARG_JSONB_P(argno);
	if (!adk_jsonb_is_object(&message->root) ||
		(parts = adk_jsonb_get(&message->root, "parts")) == NULL ||
		parts->type != jbvBinary || !JsonContainerIsArray(parts->val.binary.data) ||
		JsonContainerSize(parts->val.binary.data) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("message must be a content: a JSON object with a non-empty \"parts\" array"),
				 errhint("Pass text as text, or build function responses with adk_function_response().")));
	return message;
}
