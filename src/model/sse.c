/*-------------------------------------------------------------------------
 *
 * sse.c
 *	  Incremental parser for Server-Sent Events (text/event-stream).
 *
 * The parser keeps the current line, the data buffer, the event type and
 * the last event id, each in a growable buffer.  Bytes are consumed in runs
 * between line ends; a CR that ends a chunk is remembered so that an LF
 * starting the next chunk is not taken for a second, empty line.  The bytes
 * of a possible leading BOM are held back until they are known to be one.
 *
 * Memory is malloc'd; sse_parser_free releases everything.
 *
 * IDENTIFICATION
 *	  src/model/sse.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "sse.h"

struct SseParser
{
	sse_event_cb cb;
	void	   *arg;
	size_t		max_event;
	LlmBuf		line;
	LlmBuf		data;
	LlmBuf		type;
	LlmBuf		id;
	int			bom_matched;	/* BOM bytes seen so far; -1 once decided */
	int			after_cr;		/* last byte was a CR ending a line */
	size_t		events;
	const char *error;
	char		errbuf[96];
};

static const unsigned char sse_bom[3] = {0xEF, 0xBB, 0xBF};

static int	sse_fail(SseParser *p, const char *msg);
static int	sse_consume(SseParser *p, const char *buf, size_t len);
static int	sse_skip_bom(SseParser *p, const char **buf, size_t *len);
static int	sse_line(SseParser *p);
static int	sse_field(SseParser *p, const char *name, size_t nlen,
					  const char *value, size_t vlen);
static int	sse_dispatch(SseParser *p);


/*
 * Stop the parser for good; returns -1 for the caller to pass on.
 */
static int
sse_fail(SseParser *p, const char *msg)
{
	if (p->error == NULL)
		p->error = msg;
	return -1;
}

SseParser *
sse_parser_new(size_t max_event, sse_event_cb cb, void *arg)
{
	SseParser  *p = calloc(1, sizeof(SseParser));

	if (p == NULL)
		return NULL;
	p->cb = cb;
	p->arg = arg;
	p->max_event = max_event;
	return p;
}

void
sse_parser_free(SseParser *p)
{
	if (p == NULL)
		return;
	free(p->line.data);
	free(p->data.data);
	free(p->type.data);
	free(p->id.data);
	free(p);
}

const char *
sse_parser_error(const SseParser *p)
{
	return p->error;
}

size_t
sse_parser_events(const SseParser *p)
{
	return p->events;
}

int
sse_parser_feed(SseParser *p, const char *buf, size_t len)
{
	if (p->error != NULL)
		return -1;
	if (p->bom_matched >= 0 && sse_skip_bom(p, &buf, &len) < 0)
		return -1;
	if (len == 0)
		return 0;
	return sse_consume(p, buf, len);
}

/*
 * Match the start of the stream against the UTF-8 BOM.  Matched bytes are
 * dropped; on a mismatch the bytes held back are replayed as ordinary input.
 * Advances *buf and *len past what was used.
 */
static int
sse_skip_bom(SseParser *p, const char **buf, size_t *len)
{
	while (p->bom_matched >= 0 && *len > 0)
	{
		int			held = p->bom_matched;

		if ((unsigned char) **buf == sse_bom[held])
		{
			p->bom_matched = (held == 2) ? -1 : held + 1;
			(*buf)++;
			(*len)--;
			continue;
		}
		p->bom_matched = -1;
		if (held > 0 && sse_consume(p, (const char *) sse_bom, held) < 0)
			return -1;
	}
	return 0;
}

/*
 * Split input into lines and handle each complete one.
 */
static int
sse_consume(SseParser *p, const char *buf, size_t len)
{
	size_t		i = 0;

	while (i < len)
	{
		char		c = buf[i];
		size_t		j;

		if (p->after_cr)
		{
			p->after_cr = 0;
			if (c == '\n')
			{
				i++;
				continue;
			}
		}
		if (c == '\r' || c == '\n')
		{
			if (sse_line(p) < 0)
				return -1;
			p->after_cr = (c == '\r');
			i++;
			continue;
		}
		for (j = i; j < len && buf[j] != '\r' && buf[j] != '\n'; j++)
			;
		if (p->line.len + (j - i) + p->data.len > p->max_event)
		{
			snprintf(p->errbuf, sizeof(p->errbuf),
					 "event exceeds %zu bytes", p->max_event);
			return sse_fail(p, p->errbuf);
		}
		if (llm_buf_append(&p->line, buf + i, j - i) < 0)
			return sse_fail(p, "out of memory");
		i = j;
	}
	return 0;
}

/*
 * Interpret the complete line held in p->line, then clear it.
 */
static int
sse_line(SseParser *p)
{
	const char *line = p->line.data;
	size_t		len = p->line.len;
	const char *colon;
	int			rc = 0;

	if (len == 0)
		return sse_dispatch(p);
	if (line[0] != ':')
	{
		colon = memchr(line, ':', len);
		if (colon == NULL)
			rc = sse_field(p, line, len, "", 0);
		else
		{
			const char *value = colon + 1;
			size_t		vlen = len - (size_t) (value - line);

			if (vlen > 0 && value[0] == ' ')
			{
				value++;
				vlen--;
			}
			rc = sse_field(p, line, (size_t) (colon - line), value, vlen);
		}
	}
	p->line.len = 0;
	return rc;
}

/*
 * Apply one field.  Unknown fields and "retry" are ignored.
 */
static int
sse_field(SseParser *p, const char *name, size_t nlen,
		  const char *value, size_t vlen)
{
	if (nlen == 4 && memcmp(name, "data", 4) == 0)
	{
		if (p->data.len + vlen + 1 > p->max_event)
		{
			snprintf(p->errbuf, sizeof(p->errbuf),
					 "event exceeds %zu bytes", p->max_event);
			return sse_fail(p, p->errbuf);
		}
		if (llm_buf_append(&p->data, value, vlen) < 0 ||
			llm_buf_append(&p->data, "\n", 1) < 0)
			return sse_fail(p, "out of memory");
	}
	else if (nlen == 5 && memcmp(name, "event", 5) == 0)
	{
		p->type.len = 0;
		if (llm_buf_append(&p->type, value, vlen) < 0)
			return sse_fail(p, "out of memory");
	}
	else if (nlen == 2 && memcmp(name, "id", 2) == 0)
	{
		if (memchr(value, '\0', vlen) != NULL)
			return 0;
		p->id.len = 0;
		if (llm_buf_append(&p->id, value, vlen) < 0)
			return sse_fail(p, "out of memory");
	}
	return 0;
}

/*
 * End of an event: hand it to the callback unless it has no data, then
 * reset the data and type buffers (the last event id persists).
 */
static int
sse_dispatch(SseParser *p)
{
	SseEvent	ev;
	int			rc;

	if (p->data.len == 0)
	{
		p->type.len = 0;
		return 0;
	}
	p->data.len--;				/* drop the '\n' after the last line */
	p->data.data[p->data.len] = '\0';
	ev.type = (p->type.len > 0) ? p->type.data : "message";
	ev.data = p->data.data;
	ev.data_len = p->data.len;
	ev.id = (p->id.len > 0) ? p->id.data : "";
	p->events++;
	rc = p->cb ? p->cb(&ev, p->arg) : 0;
	p->data.len = 0;
	p->type.len = 0;
	if (rc != 0)
		return sse_fail(p, "stopped by the event handler");
	return 0;
}
