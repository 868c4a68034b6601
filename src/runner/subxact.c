/*-------------------------------------------------------------------------
 *
 * subxact.c
 *	  Running a piece of the runner in its own subtransaction, so that an
 *	  error inside it -- a tool that raises, a plugin that fails -- rolls
 *	  back that piece only and comes back as a message.
 *
 * This is how PL/pgSQL's EXCEPTION blocks do it.  A query cancel or a
 * statement timeout is never swallowed: it is re-thrown after the
 * subtransaction is rolled back, so adk_run stops as the user asked.
 *
 * IDENTIFICATION
 *	  src/runner/subxact.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "common/subxact_abort.h"
#include "runner/runner.h"

/*
 * Run fn(arg) in a subtransaction.  true: it completed (and its work is
 * kept); false: it raised, its work is rolled back and *error holds the
 * message (palloc'd in the caller's context).
 */
bool
adk_run_guarded(AdkGuardedFn fn, void *arg, char **error)
{
	MemoryContext caller = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile bool ok = true;

	*error = NULL;
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(caller);

	PG_TRY();
	{
		fn(arg);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(caller);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata = adk_subxact_abort(caller, owner);

		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED ||
			edata->sqlerrcode == ERRCODE_ADMIN_SHUTDOWN)
			ReThrowError(edata);
		*error = edata->message ? pstrdup(edata->message) : pstrdup("unknown error");
		ok = false;
	}
	PG_END_TRY();

	return ok;
}
