/*-------------------------------------------------------------------------
 *
 * subxact_abort.c
 *	  Rolling back an internal subtransaction after an error in it.
 *
 * Code that runs a piece of work in a subtransaction of its own
 * (BeginInternalSubTransaction) catches an error in it with PG_CATCH and
 * must roll that subtransaction back itself before it handles or re-throws
 * the error, as PL/pgSQL's EXCEPTION blocks do: left open, the
 * subtransaction of whoever catches the error next (a caller's EXCEPTION
 * block) would be rolled back in its place, and that caller's would stay
 * open.
 *
 * IDENTIFICATION
 *	  src/common/subxact_abort.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/memutils.h"

#include "common/subxact_abort.h"

/*
 * In the PG_CATCH of a subtransaction begun in memory context cxt with
 * resource owner owner current: copy the error into cxt, roll the
 * subtransaction back, make cxt and owner current again, and return the
 * error (for ReThrowError, or to report).
 */
ErrorData *
adk_subxact_abort(MemoryContext cxt, ResourceOwner owner)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	FlushErrorState();
	RollbackAndReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	return edata;
}
