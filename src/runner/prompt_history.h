/*-------------------------------------------------------------------------
 *
 * prompt_history.h
 *	  The session history as prompt assembly sees it (HistEvent), and what a
 *	  run keeps of it between model calls (HistCache): shared by prompt.c
 *	  (contents and pairing) and prompt_memo.c (what is kept, and where the
 *	  next request resumes).  Private to those two files.
 *
 * IDENTIFICATION
 *	  src/runner/prompt_history.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_PROMPT_HISTORY_H
#define ADK_PROMPT_HISTORY_H

#include "utils/jsonb.h"

#include "runner/runner.h"
#include "store/session_read.h"

/* A part of an event with calls or responses, as pairing sees it */
typedef struct PartInfo
{
	char		kind;			/* 'c' function call, 'r' function response,
								 * 0 anything else */
	bool		long_running;	/* a call listed in long_running_tool_ids */
	char	   *id;				/* its id, or NULL */
	uint32		hash;			/* of id */
} PartInfo;

/* The responses moved up after a call, as one source each (RespStep) */
typedef struct RespStep
{
	int			at;				/* the response event's index */
	struct HistEvent *src;		/* the run's event it is a copy of */
	bool		other;			/* another agent's: as context */
	uint64		skip;			/* its parts answered again later (bit k) */
} RespStep;

/* One event of the history, as prompt assembly sees it. */
typedef struct HistEvent
{
	Jsonb	   *event;
	Size		content_len;	/* its content's jsonb bytes */
	char	   *author;
	JsonbContainer *parts;		/* content.parts, NULL when none */
	char	   *role;
	bool		has_calls;
	bool		only_responses; /* every part a function_response */
	bool		has_responses;
	bool		consumed;		/* already placed after its call */
	/* with has_calls or has_responses: one per element of parts */
	PartInfo   *pinfo;
	int			npinfo;

	/*
	 * What the event itself adds to a request (a jsonb array of 0 or 1
	 * contents), kept with the event for the run's next requests when it
	 * depends on nothing but the event and what is paired of it: another
	 * agent's event (as context), or its own content, which sends the
	 * parts that are paired (piece_sig, bit k: part k; events of up to 64
	 * parts).  piece_other: made as another agent's event.  The history
	 * cache's rules (compaction, other writers, branches) decide which
	 * events there are; a piece lives and goes with its event.
	 */
	Jsonb	   *piece;
	bool		piece_other;
	uint64		piece_sig;

	/*
	 * The responses moved up after this event's calls, kept likewise with
	 * the steps that made them: they are reused while the same events
	 * answer the calls in the same way.
	 */
	Jsonb	   *resp_piece;
	RespStep   *resp_steps;
	int			resp_nsteps;
	struct HistEvent *kept;		/* the run's event this is a copy of, or NULL */
} HistEvent;

/* An id of the parts of a HistCache's events: the first event with one */
typedef struct FirstId
{
	struct FirstId *next;
	const char *id;
	uint32		hash;
	int			first;
} FirstId;

/*
 * What the run's previous request of a HistCache's events was made of
 * (memo_resume_at): for agent, of events [0, nevents); the call event
 * cut_to_latest_response cut after (INT_MAX: none); ev_elem[i], i in
 * [0, nevents], how many of its contents came before event i; its
 * contents.  agent NULL: none yet.
 */
typedef struct PromptMemo
{
	char	   *agent;
	int			nevents;
	int			cut_from;
	int		   *ev_elem;
	int			cap;
	Jsonb	   *contents;
} PromptMemo;

/*
 * What a run has read of its session for one branch, kept between model
 * calls (prompt_memo.c) and handed to the backend's next run on the
 * session (prompt_carry.c): the events that pass the branch filter, and
 * where the read stopped (the last seq and its event's id).  The next
 * call reads only the events after it, so prompt assembly costs O(new
 * events) in reads, not O(history) -- a tool loop of 50 calls reads the
 * history once, a conversation's next turn reads its new events.  Events
 * are append-only and a session's seq only grows (appends take the
 * session row lock), so a foreign writer's events (ADK-JS) are simply the
 * next ones read; a read whose mark no longer holds (a rolled-back
 * append, a rewind: store/session_read.c) reads the branch again from the
 * start.  A compacted session is read through adk._prompt_events every
 * time (summaries stand in for the events they cover), and its cache
 * dropped.  The ids of the events' parts
 * (FirstId, a hash table) and the previous request (PromptMemo) go with
 * the events.
 */
typedef struct HistCache
{
	MemoryContext cxt;			/* the events, their pieces and the ids */
	char	   *branch;			/* NULL: the root branch */
	char	   *scope;			/* the isolation scope; NULL: none */
	AdkHistoryMark mark;		/* where the last read stopped */
	bool		carried;		/* made by an earlier run (prompt_carry.c) */
	List	   *events;			/* HistEvent *, in cxt */
	Size		bytes;			/* the events' contents' jsonb bytes: about
								 * what they give a request */
	Size		event_bytes;	/* the events' jsonb bytes */
	FirstId   **ids;
	uint32		ids_mask;
	int			nids;
	PromptMemo	memo;
} HistCache;

/* prompt.c */
extern HistEvent *adk_hist_event(Jsonb *ev, const char *branch,
								 const char *scope);

/* prompt_memo.c */
extern List *adk_hist_read(AdkRun *run, const char *branch,
						   HistCache **cache);
extern List *adk_hist_read_whole(AdkRun *run, const char *branch);
extern List *adk_hist_copies(HistCache *cache, int from, bool keep);
extern void adk_hist_forget_pieces(HistCache *cache);
extern void adk_hist_forget_events(HistCache *cache);
extern int	adk_hist_resume_at(HistCache *cache, AdkAgent *agent);
extern void adk_hist_memo_keep(AdkRun *run, HistCache *cache,
							   AdkAgent *agent, int from, int len,
							   const int *ev_elem, int nkeep, int cut_from,
							   Jsonb *result);

#endif							/* ADK_PROMPT_HISTORY_H */
