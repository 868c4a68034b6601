/*-------------------------------------------------------------------------
 *
 * fuzz_stream.c
 *	  libFuzzer harness for one adapter's streamed parsing (llm_stream_*);
 *	  built once per provider (-DFUZZ_PROVIDER).
 *
 * The first byte picks the split of the rest into feeds and the HTTP
 * status; every partial and the final response are checked.
 *
 * IDENTIFICATION
 *	  test/unit/fuzz/fuzz_stream.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>

#include "fuzz_check.h"

static void
on_partial(struct json_object *partial, void *arg)
{
	(void) arg;
	fuzz_check_response(partial, 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *buf, size_t size)
{
	LlmStream  *s;
	struct json_object *r;
	size_t		step;
	size_t		off = 1;
	long		status;

	if (size < 1)
		return 0;
	step = (buf[0] & 0x3f) + 1;
	status = (buf[0] & 0x40) ? ((buf[0] & 0x80) ? 500 : 302) : 200;
	s = llm_stream_new(FUZZ_PROVIDER, on_partial, NULL);
	if (s == NULL)
		abort();
	while (off < size)
	{
		size_t		n = size - off < step ? size - off : step;

		if (llm_stream_feed(s, (const char *) buf + off, n) < 0)
			break;
		off += n;
	}
	r = llm_stream_finish(s, status);
	fuzz_check_response(r, 1);
	json_object_put(r);
	/* finish may be called more than once */
	r = llm_stream_finish(s, status);
	fuzz_check_response(r, 1);
	json_object_put(r);
	llm_stream_free(s);
	return 0;
}
