/*-------------------------------------------------------------------------
 *
 * subxact_abort.h
 *	  Rolling back an internal subtransaction after an error in it.
 *
 * IDENTIFICATION
 *	  src/common/subxact_abort.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_SUBXACT_ABORT_H
#define ADK_SUBXACT_ABORT_H

#include "utils/elog.h"
#include "utils/resowner.h"

extern ErrorData *adk_subxact_abort(MemoryContext cxt, ResourceOwner owner);

#endif							/* ADK_SUBXACT_ABORT_H */
