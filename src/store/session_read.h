/*-------------------------------------------------------------------------
 *
 * session_read.h
 *	  Reading a session for the runner: its lock, its existence, its
 *	  history, its state, the event that made a call, its recent authors,
 *	  the last prompt size a model reported.
 *
 * IDENTIFICATION
 *	  src/store/session_read.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_SESSION_READ_H
#define ADK_SESSION_READ_H

#include "nodes/pg_list.h"
#include "utils/jsonb.h"

/* One event of a session's history, as read */
typedef struct AdkSessionEvent
{
	Jsonb	   *event;			/* event_data */
	int64		seq;			/* 0: read through the compaction summaries */
} AdkSessionEvent;

/*
 * Where a read of a session's history stopped: the next read goes on from
 * there only while the event read last is still there, live, with the
 * same id (session_read.c), so a reader that keeps what it read checks it
 * by seq and id instead of trusting it.  Zeroed: nothing read yet.
 */
typedef struct AdkHistoryMark
{
	int64		seq;			/* the last seq read; 0: none */
	char	   *id;				/* the id of the event of seq */
} AdkHistoryMark;

/* adk.session_wait_timeout: how long our writers wait for a queued run */
extern int	adk_session_wait_timeout_ms;

extern bool adk_session_lock(const char *app, const char *user,
							 const char *session, char **holder);
extern bool adk_session_lock_unheld(const char *app, const char *user,
									const char *session);
extern bool adk_session_exists(const char *app, const char *user,
							   const char *session);
extern List *adk_session_history(const char *app, const char *user,
								 const char *session, AdkHistoryMark *mark,
								 MemoryContext mark_cxt, bool *compacted,
								 bool *stale);
extern Jsonb *adk_session_state(const char *app, const char *user,
								const char *session);
extern bool adk_session_call_event(const char *app, const char *user,
								   const char *session, const char *call_id,
								   char **author, char **invocation_id);
extern List *adk_session_recent_authors(const char *app, const char *user,
										const char *session);
extern bool adk_session_prompt_tokens(const char *app, const char *user,
									  const char *session, int64 *tokens);

#endif							/* ADK_SESSION_READ_H */
