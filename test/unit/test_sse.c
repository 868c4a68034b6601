/*-------------------------------------------------------------------------
 *
 * test_sse.c
 *	  Unit tests of the generic SSE parser (src/model/sse.c).
 *
 * Events are recorded as "type|id|data" lines so that a whole stream can
 * be compared with one string; data is shown with '\n' as "\\n" and NUL
 * as "\\0".
 *
 * IDENTIFICATION
 *	  test/unit/test_sse.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

typedef struct Rec
{
	LlmBuf		out;
	int			stop_after;		/* stop after this many events; 0 never */
	int			count;
} Rec;

static int	rec_cb(const SseEvent *ev, void *arg);
static char *sse_run(const char *in, size_t len, size_t step, size_t max,
					 int *rc);
static char *sse_run_split(const char *in, size_t len, size_t at, int *rc);

static int
rec_cb(const SseEvent *ev, void *arg)
{
	Rec		   *r = (Rec *) arg;
	size_t		i;

	llm_buf_append(&r->out, ev->type, strlen(ev->type));
	llm_buf_append(&r->out, "|", 1);
	llm_buf_append(&r->out, ev->id, strlen(ev->id));
	llm_buf_append(&r->out, "|", 1);
	for (i = 0; i < ev->data_len; i++)
	{
		if (ev->data[i] == '\n')
			llm_buf_append(&r->out, "\\n", 2);
		else if (ev->data[i] == '\0')
			llm_buf_append(&r->out, "\\0", 2);
		else
			llm_buf_append(&r->out, ev->data + i, 1);
	}
	llm_buf_append(&r->out, "\n", 1);
	r->count++;
	return (r->stop_after && r->count >= r->stop_after) ? 1 : 0;
}

/*
 * Parse in with pieces of step bytes (0 = whole); returns the record and
 * sets *rc to -1 if any feed failed.
 */
static char *
sse_run(const char *in, size_t len, size_t step, size_t max, int *rc)
{
	Rec			r = {{0}, 0, 0};
	SseParser  *p = sse_parser_new(max ? max : 1024 * 1024, rec_cb, &r);
	size_t		off = 0;

	*rc = 0;
	if (step == 0)
		step = len ? len : 1;
	while (off < len)
	{
		size_t		n = (len - off < step) ? len - off : step;

		if (sse_parser_feed(p, in + off, n) < 0)
			*rc = -1;
		off += n;
	}
	sse_parser_free(p);
	llm_buf_append(&r.out, "", 0);
	return r.out.data;
}

static char *
sse_run_split(const char *in, size_t len, size_t at, int *rc)
{
	Rec			r = {{0}, 0, 0};
	SseParser  *p = sse_parser_new(1024, rec_cb, &r);

	*rc = 0;
	if (sse_parser_feed(p, in, at) < 0 || sse_parser_feed(p, in + at, len - at) < 0)
		*rc = -1;
	sse_parser_free(p);
	llm_buf_append(&r.out, "", 0);
	return r.out.data;
}

#define EXPECT_EVENTS(input, want) \
	do { \
		int			rc_; \
		char	   *got_ = sse_run((input), sizeof(input) - 1, 0, 0, &rc_); \
		CHECK_INT(rc_, 0); \
		CHECK_STR(got_, (want)); \
		free(got_); \
	} while (0)

static void
test_basic_lf(void)
{
	EXPECT_EVENTS("data: hello\n\ndata: world\n\n",
				  "message||hello\nmessage||world\n");
}

static void
test_line_endings(void)
{
	const char *want = "message||a\\nb\nping||c\n";

	EXPECT_EVENTS("data: a\ndata: b\n\nevent: ping\ndata: c\n\n", want);
	EXPECT_EVENTS("data: a\r\ndata: b\r\n\r\nevent: ping\r\ndata: c\r\n\r\n", want);
	EXPECT_EVENTS("data: a\rdata: b\r\revent: ping\rdata: c\r\r", want);
	EXPECT_EVENTS("data: a\r\ndata: b\n\revent: ping\rdata: c\n\r\n", want);
}

static void
test_multiline_data(void)
{
	EXPECT_EVENTS("data: {\ndata: \"a\": 1\ndata: }\n\n",
				  "message||{\\n\"a\": 1\\n}\n");
	/* an empty data line still adds a line */
	EXPECT_EVENTS("data\ndata:\ndata: x\n\n", "message||\\n\\nx\n");
	EXPECT_EVENTS("data:\n\n", "message||\n");
}

static void
test_fields(void)
{
	/* no space, one space removed, a second kept */
	EXPECT_EVENTS("data:a\n\ndata:  b\n\n", "message||a\nmessage|| b\n");
	/* event type applies to one event; id persists */
	EXPECT_EVENTS("event: x\nid: 7\ndata: 1\n\ndata: 2\n\nid\ndata: 3\n\n",
				  "x|7|1\nmessage|7|2\nmessage||3\n");
	/* colons in the value are kept */
	EXPECT_EVENTS("data: a: b:c\n\n", "message||a: b:c\n");
	/* unknown fields and retry are ignored */
	EXPECT_EVENTS("retry: 100\nfoo: bar\ndata: z\n\n", "message||z\n");
	/* an id with a NUL is ignored */
	EXPECT_EVENTS("id: 1\nid: a\0b\ndata: z\n\n", "message|1|z\n");
}

static void
test_comments_and_empty_events(void)
{
	EXPECT_EVENTS(": keep-alive\n\n:\ndata: a\n: inside\n\n", "message||a\n");
	/* no data: nothing dispatched, and the type does not leak */
	EXPECT_EVENTS("event: lonely\n\ndata: b\n\n", "message||b\n");
	EXPECT_EVENTS("\n\n\n\n", "");
}

static void
test_bom(void)
{
	int			rc;
	char	   *got;
	static const char in[] = "\xEF\xBB\xBF" "data: a\n\n";

	EXPECT_EVENTS("\xEF\xBB\xBF" "data: a\n\n", "message||a\n");
	/* only at the very start */
	EXPECT_EVENTS("data: a\n\n\xEF\xBB\xBF" "data: b\n\n", "message||a\n");
	EXPECT_EVENTS("data: \xEF\xBB\xBFx\n\n", "message||\xEF\xBB\xBFx\n");
	/* a partial BOM is ordinary input: here it spoils the field name */
	EXPECT_EVENTS("\xEF\xBB" "data: a\n\ndata: b\n\n", "message||b\n");
	EXPECT_EVENTS("\xEF" "\n" "data: b\n\n", "message||b\n");
	/* split inside the BOM */
	got = sse_run(in, sizeof(in) - 1, 1, 0, &rc);
	CHECK_STR(got, "message||a\n");
	free(got);
	got = sse_run_split(in, sizeof(in) - 1, 2, &rc);
	CHECK_STR(got, "message||a\n");
	free(got);
}

static void
test_incomplete_event_dropped(void)
{
	EXPECT_EVENTS("data: a\n\ndata: b\n", "message||a\n");
	EXPECT_EVENTS("data: a\n\ndata: b", "message||a\n");
	/* a final CR ends the line but not the event */
	EXPECT_EVENTS("data: a\r\r\ndata: b\r", "message||a\n");
}

static void
test_nul_in_data(void)
{
	EXPECT_EVENTS("data: a\0b\n\n", "message||a\\0b\n");
}

/*
 * Every split point and byte-at-a-time feeding give what whole feeding
 * gives, CR/LF pairs split across feeds included.
 */
static void
test_split_anywhere(void)
{
	static const char in[] =
		"\xEF\xBB\xBF: c\r\nevent: e1\r\nid: 1\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n"
		"data: x\ry\r\rdata: \xC3\xA9t\xC3\xA9\n\nevent: e2\ndata\n\n"
		"data: tail\r\n\r\ndata: dropped";
	size_t		len = sizeof(in) - 1;
	int			rc;
	char	   *whole = sse_run(in, len, 0, 0, &rc);
	char	   *got;
	size_t		at;
	size_t		step;

	/* "y" alone is a field without value, and ignored */
	CHECK_STR(whole, "e1|1|{\"a\":\\n1}\nmessage|1|x\n"
			  "message|1|\xC3\xA9t\xC3\xA9\ne2|1|\nmessage|1|tail\n");
	for (at = 0; at <= len; at++)
	{
		got = sse_run_split(in, len, at, &rc);
		if (strcmp(got, whole) != 0)
			unit_fail(__FILE__, __LINE__, "split at %zu differs: %s", at, got);
		free(got);
	}
	for (step = 1; step <= 7; step++)
	{
		got = sse_run(in, len, step, 0, &rc);
		if (strcmp(got, whole) != 0)
			unit_fail(__FILE__, __LINE__, "step %zu differs: %s", step, got);
		CHECK_INT(rc, 0);
		free(got);
	}
	free(whole);
}

static void
test_oversize_event(void)
{
	int			rc;
	char	   *got;
	Rec			r = {{0}, 0, 0};
	SseParser  *p;

	/* 32 bytes fit, 33 do not: "data: " + 26 = line of 32 */
	got = sse_run("data: abcdefghijklmnopqrstuvwxyz\n\n", 34, 0, 32, &rc);
	CHECK_INT(rc, 0);
	CHECK_STR(got, "message||abcdefghijklmnopqrstuvwxyz\n");
	free(got);
	got = sse_run("data: abcdefghijklmnopqrstuvwxyz0\n\n", 35, 1, 32, &rc);
	CHECK_INT(rc, -1);
	CHECK_STR(got, "");
	free(got);
	/* many small lines add up to one big event */
	got = sse_run("data: 0123456789\ndata: 0123456789\ndata: 0123456789\n\n",
				  51, 0, 32, &rc);
	CHECK_INT(rc, -1);
	free(got);
	/* the failure sticks and says why */
	p = sse_parser_new(16, rec_cb, &r);
	CHECK_INT(sse_parser_feed(p, "data: 0123456789abcdef", 22), -1);
	CHECK(sse_parser_error(p) != NULL &&
		  strstr(sse_parser_error(p), "exceeds 16 bytes") != NULL);
	CHECK_INT(sse_parser_feed(p, "\n\ndata: a\n\n", 11), -1);
	CHECK_INT(r.count, 0);
	sse_parser_free(p);
	llm_buf_free(&r.out);
}

static void
test_callback_stops(void)
{
	Rec			r = {{0}, 1, 0};
	SseParser  *p = sse_parser_new(1024, rec_cb, &r);

	CHECK_INT(sse_parser_feed(p, "data: 1\n\ndata: 2\n\n", 18), -1);
	CHECK_INT(r.count, 1);
	CHECK_INT(sse_parser_events(p), 1);
	CHECK(sse_parser_error(p) != NULL);
	CHECK_INT(sse_parser_feed(p, "data: 3\n\n", 9), -1);
	CHECK_INT(r.count, 1);
	sse_parser_free(p);
	llm_buf_free(&r.out);
}

const UnitTest sse_tests[] = {
	{"basic_lf", test_basic_lf},
	{"line_endings", test_line_endings},
	{"multiline_data", test_multiline_data},
	{"fields", test_fields},
	{"comments_and_empty_events", test_comments_and_empty_events},
	{"bom", test_bom},
	{"incomplete_event_dropped", test_incomplete_event_dropped},
	{"nul_in_data", test_nul_in_data},
	{"split_anywhere", test_split_anywhere},
	{"oversize_event", test_oversize_event},
	{"callback_stops", test_callback_stops},
	{NULL, NULL}
};
