/*-------------------------------------------------------------------------
 *
 * cancel.c
 *	  adk_cancel(invocation_id) and adk_interrupt(app, user_id, session_id):
 *	  stop runs, queued or running, in a job worker or in another backend.
 *
 * A queued job becomes 'cancelled' (in the caller's transaction: it takes
 * effect at commit).  A running run -- a job in a worker, or adk_run in
 * some backend -- is found in the run registry (shared/registry.c) and
 * its backend gets SIGINT, as pg_cancel_backend sends: the run stops at
 * its next CHECK_FOR_INTERRUPTS (the HTTP client checks every 20 ms), a
 * worker records the job and the invocation 'cancelled' and keeps the
 * events it committed; adk_run raises 57014 in its caller.  The signal is
 * sent while holding the registry lock after checking the entry is still
 * the same run, so a run that has ended is not signalled.
 *
 * A paused run -- an invocation 'waiting' for a person's answer or a
 * long-running tool's result (docs/runs.md "Cancelling a paused run") --
 * runs nowhere: adk._cancel_waiting ends it in the caller's transaction,
 * under its session's row lock (the lock adk_run holds while it resumes),
 * with an error event CANCELLED per waiting node, so that its requests are
 * no longer pending nor answerable and a rebuild of adk.run_states gives
 * the same rows (sql/install/63_cancel_waiting.sql).
 *
 * Who may cancel: the role the run runs as (or a role that has its
 * privileges), members of adk_admin, superusers; only superusers may
 * cancel a superuser's run (as with pg_cancel_backend).
 *
 * IDENTIFICATION
 *	  src/worker/cancel.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "common/ids.h"
#include "common/owner.h"
#include "store/tenancy.h"
#include "worker/worker.h"

PG_FUNCTION_INFO_V1(adk_cancel);
PG_FUNCTION_INFO_V1(adk_interrupt);

/* a registry entry as seen when copied */
typedef struct RunCopy
{
	int			index;
	pid_t		pid;
	Oid			role;
	bool		superuser;
	uint64		session_hash;
	uint64		invocation_hash;
} RunCopy;

static bool take_if_matching(RunCopy *runs, int *nruns, int index,
							 const AdkRunInfo *run, uint64 invocation_hash,
							 uint64 session_hash);
static void drop_denied(RunCopy *runs, int nruns, int *denied);
static bool still_same(const RunCopy *copy, const AdkRunInfo *run);
static int	signal_runs(uint64 invocation_hash, uint64 session_hash,
						int *denied);
static int	signal_job_runs(uint64 invocation_hash, uint64 session_hash,
							int *denied);
static int	cancel_queued(const char *where, int nargs, Datum *args,
						  int *denied);
static bool cancel_waiting(const char *invocation_id);
static void permission_denied(const char *invocation_id);

/*
 * Whether the current user may cancel a run that runs as role.
 */
bool
adk_may_cancel(Oid role, bool role_is_superuser)
{
	Oid			me = GetUserId();
	Oid			admin;

	if (superuser_arg(me))
		return true;
	if (role_is_superuser)
		return false;
	if (has_privs_of_role(me, role))
		return true;
	admin = get_role_oid("adk_admin", true);
	return OidIsValid(admin) && has_privs_of_role(me, admin);
}

/*
 * adk_cancel(invocation_id) RETURNS boolean
 */
Datum
adk_cancel(PG_FUNCTION_ARGS)
{
	char	   *invocation_id = adk_check_id("invocation id", PG_GETARG_TEXT_PP(0),
											 ADK_MAX_INVOCATION_ID_CHARS);
	Datum		arg = CStringGetTextDatum(invocation_id);
	int			denied = 0;
	int			n;

	/* a queued job never starts */
	n = cancel_queued("invocation_id OPERATOR(pg_catalog.=) $1", 1, &arg, &denied);
	if (denied > 0)
		permission_denied(invocation_id);
	if (n > 0)
		PG_RETURN_BOOL(true);

	/* a running one, here or in a worker */
	n = signal_runs(adk_invocation_hash(invocation_id), 0, &denied);
	if (denied > 0)
		permission_denied(invocation_id);
	if (n > 0)
		PG_RETURN_BOOL(true);

	/* a paused one */
	PG_RETURN_BOOL(cancel_waiting(invocation_id));
}

/*
 * Cancel the invocation if it is waiting (paused) and the caller may
 * cancel its runs; true when it was cancelled.
 */
static bool
cancel_waiting(const char *invocation_id)
{
	Oid			types[2] = {TEXTOID, NAMEOID};
	Datum		args[2];
	AdkOwnerSave save;
	bool		isnull;
	Datum		value;
	char	   *role_name;
	Oid			role;
	bool		allowed;
	bool		done;

	if (!OidIsValid(get_namespace_oid("adk", true)))
		return false;
	args[0] = CStringGetTextDatum(invocation_id);
	adk_owner_spi_begin(&save);
	if (SPI_execute_with_args("SELECT adk._waiting_invocation_role($1)",
							  1, types, args, NULL, false, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not read adk.invocations");
	value = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (isnull)
	{
		adk_owner_spi_end(&save);
		return false;
	}
	role_name = pstrdup(NameStr(*DatumGetName(value)));

	/* the check reads catalogs: as the caller */
	adk_restore_user(&save);
	role = get_role_oid(role_name, true);
	allowed = adk_may_cancel(role, OidIsValid(role) && superuser_arg(role));
	adk_become_owner(&save);
	if (!allowed)
	{
		adk_owner_spi_end(&save);
		permission_denied(invocation_id);
	}

	args[1] = DirectFunctionCall1(namein, CStringGetDatum(role_name));
	if (SPI_execute_with_args("SELECT adk._cancel_waiting($1, $2)",
							  2, types, args, NULL, false, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not cancel the waiting invocation");
	done = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
									  1, &isnull));
	adk_owner_spi_end(&save);
	return done;
}

/*
 * adk_interrupt(app, user_id, session_id) RETURNS integer: every queued
 * job of the session, and every run executing on it, that the caller may
 * cancel; returns how many.
 */
Datum
adk_interrupt(PG_FUNCTION_ARGS)
{
	char	   *app = adk_check_id("app name", PG_GETARG_TEXT_PP(0), ADK_MAX_ID_CHARS);
	char	   *user = adk_check_id("user id", PG_GETARG_TEXT_PP(1), ADK_MAX_ID_CHARS);
	char	   *session = adk_check_id("session id", PG_GETARG_TEXT_PP(2), ADK_MAX_ID_CHARS);
	Datum		args[3];
	int			denied = 0;
	int			n;

	adk_tenancy_check(app, user);
	args[0] = CStringGetTextDatum(app);
	args[1] = CStringGetTextDatum(user);
	args[2] = CStringGetTextDatum(session);
	n = cancel_queued("app_name OPERATOR(pg_catalog.=) $1"
					  " AND user_id OPERATOR(pg_catalog.=) $2"
					  " AND session_id OPERATOR(pg_catalog.=) $3",
					  3, args, &denied);
	n += signal_runs(0, adk_session_hash(app, user, session), &denied);
	PG_RETURN_INT32(n);
}

/*
 * Cancel the queued jobs matching "where" (over $1..$nargs, all text) that
 * the caller may cancel; *denied counts those it may not.
 */
static int
cancel_queued(const char *where, int nargs, Datum *args, int *denied)
{
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	AdkOwnerSave save;
	Datum	   *ids;
	int			nids = 0;
	int			n = 0;
	uint64		i;

	if (!OidIsValid(get_namespace_oid("adk", true)))
		return 0;
	adk_owner_spi_begin(&save);
	if (SPI_execute_with_args(psprintf("SELECT id, role_oid FROM adk.jobs WHERE %s AND status OPERATOR(pg_catalog.=) 'queued'",
									   where),
							  nargs, types, args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read adk.jobs");
	ids = palloc(sizeof(Datum) * (SPI_processed + 1));
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		id = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
		Oid			role = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
														  SPI_tuptable->tupdesc, 2, &isnull));

		/* the check reads catalogs: as the caller */
		adk_restore_user(&save);
		if (adk_may_cancel(role, superuser_arg(role)))
			ids[nids++] = id;
		else
			(*denied)++;
		adk_become_owner(&save);
	}
	if (nids > 0)
	{
		Oid			type = INT8ARRAYOID;
		Datum		arr = PointerGetDatum(construct_array(ids, nids, INT8OID, 8,
														  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));

		/* a job claimed meanwhile is no longer queued: left to signal_runs */
		if (SPI_execute_with_args("SELECT * FROM adk._jobs_cancel_queued($1)",
								  1, &type, &arr, NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not cancel jobs");
		n = (int) SPI_processed;
		for (i = 0; i < SPI_processed; i++)
		{
			bool		isnull;

			adk_notify_job(DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i],
													   SPI_tuptable->tupdesc, 2, &isnull)),
						   SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1),
						   "cancelled");
		}
	}
	adk_owner_spi_end(&save);
	return n;
}

/*
 * SIGINT to the backends executing a matching run (by invocation, or by
 * session) that the caller may cancel; returns how many were signalled.
 */
static int
signal_runs(uint64 invocation_hash, uint64 session_hash, int *denied)
{
	RunCopy    *runs;
	int			nruns = 0;
	int			n = 0;
	int			i;

	if (adk_workers == NULL)
		return 0;
	runs = palloc(sizeof(RunCopy) * adk_workers->nentries);
	LWLockAcquire(adk_workers->lock, LW_SHARED);
	for (i = 0; i < adk_workers->nentries; i++)
	{
		AdkRunEntry *e = &adk_workers->entries[i];

		if (e->run.pid != MyProcPid)
			take_if_matching(runs, &nruns, i, &e->run,
							 invocation_hash, session_hash);
	}
	LWLockRelease(adk_workers->lock);

	/* permissions read catalogs: outside the lock */
	drop_denied(runs, nruns, denied);

	LWLockAcquire(adk_workers->lock, LW_EXCLUSIVE);
	for (i = 0; i < nruns; i++)
	{
		AdkRunEntry *e = &adk_workers->entries[runs[i].index];

		if (!still_same(&runs[i], &e->run))
			continue;			/* ended meanwhile */
		e->run.cancel_requested = true;
		if (kill(e->run.pid, SIGINT) == 0)
			n++;
		else
			elog(DEBUG1, "could not send SIGINT to process %d: %m", (int) e->run.pid);
	}
	LWLockRelease(adk_workers->lock);
	return n + signal_job_runs(invocation_hash, session_hash, denied);
}

/*
 * The runs job workers hold: the run's flag is set and its worker's latch,
 * so the worker stops that run (its model calls in flight too) within
 * ADK_HTTP_POLL_MS; when the worker is stepping that very run right now
 * (a SQL tool may be running), it gets SIGINT too, which cancels that step
 * only.
 */
static int
signal_job_runs(uint64 invocation_hash, uint64 session_hash, int *denied)
{
	RunCopy    *runs;
	int			max = adk_workers->nslots * ADK_MAX_WORKER_CONCURRENCY;
	int			nruns = 0;
	int			n = 0;
	int			i;

	runs = palloc(sizeof(RunCopy) * max);
	LWLockAcquire(adk_workers->lock, LW_SHARED);
	for (i = 0; i < max; i++)
	{
		take_if_matching(runs, &nruns, i, &adk_workers->job_runs[i].run,
						 invocation_hash, session_hash);
	}
	LWLockRelease(adk_workers->lock);

	drop_denied(runs, nruns, denied);

	LWLockAcquire(adk_workers->lock, LW_EXCLUSIVE);
	for (i = 0; i < nruns; i++)
	{
		AdkJobRunEntry *e = &adk_workers->job_runs[runs[i].index];
		int			s = runs[i].index / ADK_MAX_WORKER_CONCURRENCY;
		AdkWorkerSlot *slot = &adk_workers->slots[s];

		if (!still_same(&runs[i], &e->run))
			continue;			/* ended meanwhile */
		e->run.cancel_requested = true;
		if (slot->stepping == runs[i].index % ADK_MAX_WORKER_CONCURRENCY &&
			slot->pid == e->run.pid)
			(void) kill(e->run.pid, SIGINT);
		if (slot->latch)
			SetLatch(slot->latch);
		n++;
	}
	LWLockRelease(adk_workers->lock);
	return n;
}

/*
 * Copy a run entry into runs[] when it is live and is the invocation or
 * runs in the session asked for (a zero hash matches nothing).  Called
 * under the registry lock.
 */
static bool
take_if_matching(RunCopy *runs, int *nruns, int index, const AdkRunInfo *run,
				 uint64 invocation_hash, uint64 session_hash)
{
	RunCopy    *c;

	if (run->pid == 0)
		return false;
	if (!((invocation_hash != 0 && run->invocation_hash == invocation_hash) ||
		  (session_hash != 0 && run->session_hash == session_hash)))
		return false;
	c = &runs[(*nruns)++];
	c->index = index;
	c->pid = run->pid;
	c->role = run->role;
	c->superuser = run->superuser;
	c->session_hash = run->session_hash;
	c->invocation_hash = run->invocation_hash;
	return true;
}

/*
 * Forget the copied runs the caller may not cancel, counting them.  The
 * check reads catalogs, so it runs outside the registry lock.
 */
static void
drop_denied(RunCopy *runs, int nruns, int *denied)
{
	int			i;

	for (i = 0; i < nruns; i++)
	{
		if (!adk_may_cancel(runs[i].role, runs[i].superuser))
		{
			(*denied)++;
			runs[i].pid = 0;
		}
	}
}

/*
 * Is the entry still the run that was copied (not ended, nor reused by
 * another run while the lock was not held)?  Called under the lock.
 */
static bool
still_same(const RunCopy *copy, const AdkRunInfo *run)
{
	return copy->pid != 0 && run->pid == copy->pid &&
		run->session_hash == copy->session_hash &&
		run->invocation_hash == copy->invocation_hash;
}

static void
permission_denied(const char *invocation_id)
{
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to cancel run \"%s\"", invocation_id),
			 errdetail("Only the role the run runs as, members of adk_admin and superusers may cancel it; only superusers may cancel a superuser's run.")));
}
