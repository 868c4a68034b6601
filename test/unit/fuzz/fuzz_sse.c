/*-------------------------------------------------------------------------
 *
 * fuzz_sse.c
 *	  libFuzzer harness for the SSE parser (src/model/sse.c).
 *
 * The first byte chooses how the rest is split into feeds and the event
 * size cap; the stream is parsed once split and once whole, and both must
 * give the same events.
 *
 * IDENTIFICATION
 *	  test/unit/fuzz/fuzz_sse.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ADK_LLM_INTERNAL
#include "llm.h"

typedef struct Digest
{
	size_t		events;
	uint64_t	hash;
} Digest;

static uint64_t
mix(uint64_t h, const char *s, size_t len)
{
	size_t		i;

	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char) s[i]) * 1099511628211ULL;
	return (h ^ 0xff) * 1099511628211ULL;
}

static int
on_event(const SseEvent *ev, void *arg)
{
	Digest	   *d = (Digest *) arg;

	if (ev->type == NULL || ev->data == NULL || ev->id == NULL ||
		ev->data[ev->data_len] != '\0')
		abort();
	d->events++;
	d->hash = mix(d->hash, ev->type, strlen(ev->type));
	d->hash = mix(d->hash, ev->data, ev->data_len);
	d->hash = mix(d->hash, ev->id, strlen(ev->id));
	return 0;
}

static int
run(const char *data, size_t len, size_t step, size_t max, Digest *d)
{
	SseParser  *p = sse_parser_new(max, on_event, d);
	size_t		off = 0;
	int			rc = 0;

	if (p == NULL)
		abort();
	memset(d, 0, sizeof(*d));
	while (off < len && rc == 0)
	{
		size_t		n = len - off < step ? len - off : step;

		rc = sse_parser_feed(p, data + off, n);
		off += n;
	}
	if (sse_parser_events(p) != d->events)
		abort();
	sse_parser_free(p);
	return rc;
}

int
LLVMFuzzerTestOneInput(const uint8_t *buf, size_t size)
{
	Digest		a;
	Digest		b;
	size_t		step;
	size_t		max;
	int			ra;
	int			rb;

	if (size < 1)
		return 0;
	step = (buf[0] & 0x1f) + 1;
	max = (buf[0] & 0x80) ? 64 : 1 << 20;
	ra = run((const char *) buf + 1, size - 1, step, max, &a);
	rb = run((const char *) buf + 1, size - 1, size, max, &b);
	/* splitting never changes the events (unless the cap stopped one run) */
	if (ra == 0 && rb == 0 && (a.events != b.events || a.hash != b.hash))
		abort();
	return 0;
}
