/*-------------------------------------------------------------------------
 *
 * adk_runner.c
 *	  Module entry point: library magic and _PG_init.
 *
 * Everything synchronous works after a plain CREATE EXTENSION; the library
 * is then loaded on first use and _PG_init runs in that backend.  All
 * settings live under the reserved "adk." prefix; each layer defines its
 * own (store, model, runner, worker: bottom to top).
 *
 * IDENTIFICATION
 *	  src/adk_runner.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "model/settings.h"
#include "runner/settings.h"
#include "store/settings.h"
#include "worker/worker.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/*
 * Module load callback.
 */
void
_PG_init(void)
{
	if (IsBinaryUpgrade)
		return;

	adk_store_init();
	adk_model_init();
	adk_runner_init();
	/* background workers: settings, and with preload shmem + the launcher */
	adk_worker_init();

	MarkGUCPrefixReserved("adk");
}
