/*-------------------------------------------------------------------------
 *
 * session_read.c
 *	  Every read the runner makes of a session: its row lock (and whether a
 *	  queued run holds it), its history for a prompt, its state for an
 *	  instruction, the event that made a function call, the authors of its
 *	  latest events.
 *
 * Identities in, palloc'd copies out: each function takes the session's
 * app, user and session id, runs its statement (plans kept by
 * adk_spi_exec) as the owner of schema adk with the pinned search_path,
 * and returns what it read copied into the caller's memory context, so
 * nothing points into SPI's memory once it returns.  The policy of what a
 * read means -- which agent an input goes to, what a prompt keeps of the
 * history, how a placeholder is filled -- stays with the runner, which
 * calls down into this file; nothing here knows the runner.
 *
 * The statements are adk._session_* functions: plpgsql ones
 * (sql/install/88_store_statements.sql) called in one line, and, for the
 * reads every turn makes -- the row lock and its holder, the history, the
 * recent authors -- LANGUAGE sql ones (88_turn_statements.sql) whose
 * bodies adk_spi_call runs as kept plans: a call of a function cost each
 * read 35,000-50,000 more instructions, a turn 5% more
 * (docs/internals/statements.md).
 *
 * IDENTIFICATION
 *	  src/store/session_read.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "storage/latch.h"
#include "storage/procarray.h"
#include "utils/builtins.h"
#include "utils/resowner.h"
#include "utils/wait_event.h"

#include "common/json_writer.h"
#include "common/owner.h"
#include "common/spi_plans.h"
#include "common/subxact_abort.h"
#include "store/session_read.h"

static void session_args(Datum *args, const char *app, const char *user,
						 const char *session);

/* GUC adk.session_wait_timeout (settings.c) */
int			adk_session_wait_timeout_ms = 60000;

static void
session_args(Datum *args, const char *app, const char *user,
			 const char *session)
{
	args[0] = CStringGetTextDatum(app);
	args[1] = CStringGetTextDatum(user);
	args[2] = CStringGetTextDatum(session);
}

/*
 * Take the session row's lock (FOR UPDATE: until the transaction, or the
 * subtransaction the caller opened, ends).  Returns whether the session
 * exists.  holder, when not NULL: the invocation id of the queued run
 * whose live job worker holds the session (a job 'running' in a worker
 * that is still there), or NULL when none does -- what run.c waits on.
 */
bool
adk_session_lock(const char *app, const char *user, const char *session,
				 char **holder)
{
	Datum		args[3];
	MemoryContext caller = CurrentMemoryContext;
	AdkOwnerSave save;
	bool		exists;

	if (holder)
		*holder = NULL;
	session_args(args, app, user, session);
	adk_owner_spi_begin(&save);
	if (holder == NULL)
		exists = adk_spi_call("adk._session_lock", 3, args, NULL, 1) == SPI_OK_SELECT &&
			SPI_processed == 1;
	else
	{
		uint64		i;

		/* the row lock, and the jobs 'running' on it in other processes */
		exists = adk_spi_call("adk._session_lock_holders", 3, args, NULL, 0) == SPI_OK_SELECT &&
			SPI_processed > 0;
		for (i = 0; exists && i < SPI_processed && *holder == NULL; i++)
		{
			HeapTuple	row = SPI_tuptable->vals[i];
			bool		isnull;
			Datum		pid = SPI_getbinval(row, SPI_tuptable->tupdesc, 2, &isnull);

			/* a job running in a process that is still there */
			if (!isnull && BackendPidGetProc(DatumGetInt32(pid)) != NULL)
				*holder = MemoryContextStrdup(caller,
											  SPI_getvalue(row, SPI_tuptable->tupdesc, 1));
		}
	}
	adk_owner_spi_end(&save);
	return exists;
}

/*
 * One run per session at a time, whoever drives it, and no event of ours
 * in the middle of a turn: a job worker commits between the steps of a
 * run and holds no lock while the run waits for its model, so the session
 * row lock alone would let a foreground adk_run slip a whole invocation in
 * between, or adk_append_event an event between a job's call and its
 * answer.  The job's row says the session is held: status 'running' with
 * a live worker (other than this process: a job's own tool appending to
 * its session would otherwise wait for itself).  adk_run and
 * adk_append_event wait for it -- in short latch waits that a query cancel
 * stops, at most adk.session_wait_timeout -- then take the session row
 * lock and look again under it (in a subtransaction, so a writer that lost
 * the race lets the lock go while it waits).  The hold ends when the job
 * ends, pauses, fails, or its worker dies (then the launcher's recovery
 * requeues or fails it, and its pid is gone at once).  Jobs, for their
 * part, never wait for a foreground run: they skip a locked session
 * (job.c).  Returns whether the session exists (locked).
 */
bool
adk_session_lock_unheld(const char *app, const char *user, const char *session)
{
	instr_time	start;
	Datum		args[3];
	AdkOwnerSave save;
	bool		locked;

	/*
	 * Usually no job is 'running' on the session at all: then one
	 * statement takes the row lock, in this transaction (no
	 * subtransaction, whose lock the session bumps that follow would turn
	 * into a multixact).  Otherwise (or without the session) it locks
	 * nothing, and the look below tells a live holder from a gone one.
	 */
	session_args(args, app, user, session);
	adk_owner_spi_begin(&save);
	locked = adk_spi_call("adk._session_lock_unheld", 3, args, NULL, 1) == SPI_OK_SELECT &&
		SPI_processed == 1;
	adk_owner_spi_end(&save);
	if (locked)
		return true;

	INSTR_TIME_SET_CURRENT(start);
	for (;;)
	{
		MemoryContext cxt = CurrentMemoryContext;
		ResourceOwner owner = CurrentResourceOwner;
		bool		exists;
		char	   *holder;
		instr_time	now;

		BeginInternalSubTransaction(NULL);
		MemoryContextSwitchTo(cxt);
		/*
		 * the row lock, and the job holding the session; an error (a lock
		 * timeout, a cancel) rolls the subtransaction back before it goes
		 * on up (common/subxact_abort.c)
		 */
		PG_TRY();
		{
			exists = adk_session_lock(app, user, session, &holder);
		}
		PG_CATCH();
		{
			ReThrowError(adk_subxact_abort(cxt, owner));
		}
		PG_END_TRY();
		if (holder == NULL)
		{
			ReleaseCurrentSubTransaction();
			MemoryContextSwitchTo(cxt);
			CurrentResourceOwner = owner;
			return exists;
		}
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;

		INSTR_TIME_SET_CURRENT(now);
		INSTR_TIME_SUBTRACT(now, start);
		if (adk_session_wait_timeout_ms > 0 &&
			INSTR_TIME_GET_MILLISEC(now) >= adk_session_wait_timeout_ms)
			ereport(ERROR,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("session \"%s\" of app \"%s\" is busy", session, app),
					 errdetail("Queued run \"%s\" holds it.", holder),
					 errhint("Wait for it with adk_wait(), or raise \"adk.session_wait_timeout\".")));
		pfree(holder);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * Whether the session exists (read, not locked).
 */
bool
adk_session_exists(const char *app, const char *user, const char *session)
{
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		args[3];
	AdkOwnerSave save;
	bool		exists;
	bool		isnull;

	session_args(args, app, user, session);
	adk_owner_spi_begin(&save);
	if (adk_spi_exec("SELECT adk._session_exists($1, $2, $3)",
					 3, types, args, NULL, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read adk.sessions");
	exists = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
										SPI_tuptable->tupdesc, 1, &isnull));
	adk_owner_spi_end(&save);
	return exists;
}

/*
 * The session's live events in seq order, as AdkSessionEvent *: those
 * after mark->seq, read through the (app, user, session, seq) index -- or,
 * when the session has been compacted (*compacted), all of it as a prompt
 * sees it, read through adk._prompt_events (sql/install/65_compaction.sql):
 * summaries in place of the events they cover, seq 0 for every entry, and
 * the mark ignored.  Rewound events are left out, as adk.live_events
 * does (adk._session_history, sql/install/88_turn_statements.sql).
 *
 * The mark is checked and moved on (in mark_cxt): with mark->seq > 0 the
 * event of that seq is read too, and the read is *stale (nothing
 * returned) unless it is there, not rewound, with mark->id.  Seqs are
 * given under the session row's lock and go back only with the
 * transaction that took them, so the event of a seq having the same id
 * means every event before it is the one read then: a rolled-back append
 * or a session deleted and made again make the caller read the history
 * again from the start.  So does a rewind that changed which of those
 * events are live: what a rewind event rewinds is one range of seqs up to
 * itself, the newest event (sql/install/12_rewound.sql), so a rewind since
 * the mark that rewinds, or brings back, an event up to mark->seq covers
 * mark->seq too.
 */
List *
adk_session_history(const char *app, const char *user, const char *session,
					AdkHistoryMark *mark, MemoryContext mark_cxt,
					bool *compacted, bool *stale)
{
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		args[4];
	MemoryContext caller = CurrentMemoryContext;
	AdkOwnerSave save;
	List	   *result = NIL;
	uint64		i;
	bool		compacted_null;

	*stale = false;
	session_args(args, app, user, session);
	args[3] = Int64GetDatum(mark->seq);
	adk_owner_spi_begin(&save);
	if (adk_spi_call("adk._session_compacted", 3, args, NULL, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not read adk.compactions");
	*compacted = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
											SPI_tuptable->tupdesc, 1, &compacted_null));
	if (*compacted)
	{
		if (adk_spi_exec("SELECT event_data, 0::pg_catalog.int8 FROM adk._prompt_events($1, $2, $3)",
						 3, types, args, NULL, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not read the session's events");
	}
	else if (adk_spi_call("adk._session_history", 4, args, NULL, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the session's events");
	if (!*compacted && mark->seq > 0)
	{
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull = true;
		int64		seq = 0;
		Datum		id = (Datum) 0;

		if (SPI_processed > 0)
		{
			seq = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], desc, 2,
											  &isnull));
			id = SPI_getbinval(SPI_tuptable->vals[0], desc, 3, &isnull);
		}
		/* the first row is the event of mark->seq, or it went */
		if (SPI_processed == 0 || isnull || seq != mark->seq ||
			mark->id == NULL || strcmp(TextDatumGetCString(id), mark->id) != 0)
		{
			*stale = true;
			adk_owner_spi_end(&save);
			MemoryContextSwitchTo(caller);
			return NIL;
		}
	}
	for (i = 0; i < SPI_processed; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int64		seq = DatumGetInt64(SPI_getbinval(row, desc, 2, &isnull));
		Datum		ev;
		MemoryContext spi;
		AdkSessionEvent *e;

		if (!*compacted && seq == mark->seq)
			continue;			/* the event the mark stands on */
		ev = SPI_getbinval(row, desc, 1, &isnull);
		spi = MemoryContextSwitchTo(caller);
		e = palloc(sizeof(AdkSessionEvent));
		e->event = DatumGetJsonbPCopy(ev);
		e->seq = seq;
		result = lappend(result, e);
		MemoryContextSwitchTo(spi);
	}
	if (!*compacted && SPI_processed > 0)
	{
		HeapTuple	row = SPI_tuptable->vals[SPI_processed - 1];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int64		seq = DatumGetInt64(SPI_getbinval(row, desc, 2, &isnull));

		if (seq != mark->seq)
		{
			Datum		id = SPI_getbinval(row, desc, 3, &isnull);
			char	   *old = mark->id;

			mark->id = MemoryContextStrdup(mark_cxt, TextDatumGetCString(id));
			if (old != NULL)
				pfree(old);
			mark->seq = seq;
		}
	}
	adk_owner_spi_end(&save);
	MemoryContextSwitchTo(caller);
	return result;
}

/*
 * The state an instruction's {key} placeholders see: the session's state,
 * the app's state under "app:" and the user's under "user:".  NULL when
 * the session does not exist (or its state is null).
 */
Jsonb *
adk_session_state(const char *app, const char *user, const char *session)
{
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		args[3];
	MemoryContext caller = CurrentMemoryContext;
	AdkOwnerSave save;
	Jsonb	   *state = NULL;

	session_args(args, app, user, session);
	adk_owner_spi_begin(&save);
	if (adk_spi_exec("SELECT adk._session_state($1, $2, $3)",
					 3, types, args, NULL, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
									  1, &isnull);

		/* into the caller's memory (SPI's upper executor context) */
		if (!isnull)
			state = DatumGetJsonbP(SPI_datumTransfer(d, false, -1));
	}
	adk_owner_spi_end(&save);
	MemoryContextSwitchTo(caller);
	return state;
}

/*
 * The newest event of the session that made function call call_id -- not
 * one the store appended itself (custom_metadata.adk_appended_by): its
 * author and invocation id (either out-pointer may be NULL).  false when
 * there is none.
 */
bool
adk_session_call_event(const char *app, const char *user, const char *session,
					   const char *call_id, char **author,
					   char **invocation_id)
{
	Oid			types[4] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		args[4];
	JsonWriter	w;
	MemoryContext caller = CurrentMemoryContext;
	AdkOwnerSave save;
	bool		found = false;

	/* {"content": {"parts": [{"function_call": {"id": call_id}}]}} */
	jw_init(&w);
	jw_begin_object(&w);
	jw_key(&w, "content");
	jw_begin_object(&w);
	jw_key(&w, "parts");
	jw_begin_array(&w);
	jw_begin_object(&w);
	jw_key(&w, "function_call");
	jw_begin_object(&w);
	jw_key(&w, "id");
	jw_string(&w, call_id);
	jw_end_object(&w);
	jw_end_object(&w);
	jw_end_array(&w);
	jw_end_object(&w);
	jw_end_object(&w);
	session_args(args, app, user, session);
	args[3] = CStringGetTextDatum(jw_finish_text(&w));
	adk_owner_spi_begin(&save);
	if (adk_spi_exec("SELECT * FROM adk._session_call_event($1, $2, $3, $4::pg_catalog.jsonb)",
					 4, types, args, NULL, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
	{
		MemoryContext spi = MemoryContextSwitchTo(caller);

		if (author)
			*author = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		if (invocation_id)
			*invocation_id = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
		MemoryContextSwitchTo(spi);
		found = true;
	}
	adk_owner_spi_end(&save);
	return found;
}

/*
 * The authors of the session's newest 200 events, newest first, each once
 * (at its newest event; events without an author are left out), as
 * char *.  Authors are compared as stored, and only a new one is copied:
 * the newest events of a session are mostly by a few authors.
 */
List *
adk_session_recent_authors(const char *app, const char *user,
						   const char *session)
{
	Datum		args[3];
	MemoryContext caller = CurrentMemoryContext;
	AdkOwnerSave save;
	List	   *result = NIL;
	uint64		i;

	session_args(args, app, user, session);
	adk_owner_spi_begin(&save);
	if (adk_spi_call("adk._session_recent_authors", 3, args, NULL, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the session's events");
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
									  1, &isnull);
		text	   *t;
		int			len;
		bool		seen = false;
		ListCell   *lc;

		if (isnull)
			continue;
		t = DatumGetTextPP(d);
		len = VARSIZE_ANY_EXHDR(t);
		foreach(lc, result)
		{
			const char *name = (const char *) lfirst(lc);

			if (strncmp(name, VARDATA_ANY(t), len) == 0 && name[len] == '\0')
			{
				seen = true;
				break;
			}
		}
		if (!seen)
		{
			MemoryContext spi = MemoryContextSwitchTo(caller);

			result = lappend(result, text_to_cstring(t));
			MemoryContextSwitchTo(spi);
		}
	}
	adk_owner_spi_end(&save);
	return result;
}

/*
 * The prompt_token_count of the newest model response stored after the
 * session's last compaction (usage_metadata), into *tokens.  false when
 * there is none.
 */
bool
adk_session_prompt_tokens(const char *app, const char *user,
						  const char *session, int64 *tokens)
{
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		args[3];
	AdkOwnerSave save;
	bool		found = false;

	session_args(args, app, user, session);
	adk_owner_spi_begin(&save);
	if (adk_spi_exec("SELECT adk._session_prompt_tokens($1, $2, $3)",
					 3, types, args, NULL, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
									  1, &isnull);

		if (!isnull)
		{
			*tokens = DatumGetInt64(d);
			found = true;
		}
	}
	adk_owner_spi_end(&save);
	return found;
}
