/*-------------------------------------------------------------------------
 *
 * fuzz_response.c
 *	  libFuzzer harness for one adapter's parsing of a complete response
 *	  (llm_parse_response); built once per provider (-DFUZZ_PROVIDER).
 *
 * The first byte picks the HTTP status; the rest is the body.
 *
 * IDENTIFICATION
 *	  test/unit/fuzz/fuzz_response.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>

#include "fuzz_check.h"

static const long statuses[] = {200, 200, 200, 200, 201, 302, 400, 401, 429, 500, 503, 529};

int
LLVMFuzzerTestOneInput(const uint8_t *buf, size_t size)
{
	struct json_object *r;

	if (size < 1)
		return 0;
	r = llm_parse_response(FUZZ_PROVIDER, statuses[buf[0] % (sizeof(statuses) / sizeof(statuses[0]))],
						   (const char *) buf + 1, size - 1);
	fuzz_check_response(r, 1);
	json_object_put(r);
	return 0;
}
