/*-------------------------------------------------------------------------
 *
 * adk_runner.c
 *	  Module entry point: library magic, _PG_init and the GUCs.
 *
 * Everything synchronous works after a plain CREATE EXTENSION; the library
 * is then loaded on first use and _PG_init runs in that backend.  All
 * settings live under the reserved "adk." prefix.
 *
 * IDENTIFICATION
 *	  src/adk_runner.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "adk_runner.h"

PG_MODULE_MAGIC;

int			adk_max_event_size_kb = 10 * 1024;

void		_PG_init(void);

/*
 * Module load callback.
 */
void
_PG_init(void)
{
	if (IsBinaryUpgrade)
		return;

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

	MarkGUCPrefixReserved("adk");
}
