/*-------------------------------------------------------------------------
 *
 * sse.h
 *	  Incremental parser for Server-Sent Events (text/event-stream).
 *
 * Implements the "event stream interpretation" of the WHATWG HTML
 * standard: "field: value" lines, comment lines starting with ':', data
 * lines joined with '\n', events dispatched on an empty line, lines ended
 * by CRLF, LF or CR, and one leading UTF-8 BOM ignored.  Input may be split
 * at any byte.  An event still incomplete when the input ends is never
 * dispatched.  The parser knows nothing of the providers.
 *
 * IDENTIFICATION
 *	  src/model/sse.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_SSE_H
#define ADK_SSE_H

#include <stddef.h>

typedef struct SseEvent
{
	const char *type;			/* "event" field; "message" when not given */
	const char *data;			/* data lines joined by '\n', NUL-terminated */
	size_t		data_len;		/* bytes in data (data may hold NULs) */
	const char *id;				/* last event id seen; "" when none */
} SseEvent;

/*
 * Called for each dispatched event; the event and its strings are valid
 * during the call only.  A nonzero result stops the parser: the current and
 * every later sse_parser_feed return -1.
 */
typedef int (*sse_event_cb) (const SseEvent *ev, void *arg);

typedef struct SseParser SseParser;

/* max_event caps one event's buffered bytes (data plus current line) */
extern SseParser *sse_parser_new(size_t max_event, sse_event_cb cb, void *arg);

/* 0 ok; -1 on an oversize event, a stopping callback, or out of memory */
extern int	sse_parser_feed(SseParser *p, const char *buf, size_t len);

/* Why the parser stopped, or NULL */
extern const char *sse_parser_error(const SseParser *p);

/* Events dispatched so far */
extern size_t sse_parser_events(const SseParser *p);

extern void sse_parser_free(SseParser *p);

#endif							/* ADK_SSE_H */
