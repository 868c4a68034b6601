/*-------------------------------------------------------------------------
 *
 * fuzz_check.h
 *	  Invariants every LlmResponse must keep, checked by the fuzz harnesses:
 *	  what llm.h promises and what the jsonb bridge and the store rely on.
 *
 * A violation aborts (libFuzzer then saves the input).
 *
 * IDENTIFICATION
 *	  test/unit/fuzz/fuzz_check.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_FUZZ_CHECK_H
#define ADK_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#define ADK_LLM_INTERNAL
#include "llm.h"

static void
fuzz_fail(const char *what, struct json_object *obj)
{
	fprintf(stderr, "fuzz invariant violated: %s\n%.2000s\n", what,
			obj ? json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN) : "(null)");
	abort();
}

/* strict UTF-8 as PostgreSQL takes it, and no NUL */
static int
fuzz_utf8_ok(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *) s;
	size_t		i = 0;

	while (i < len)
	{
		unsigned char c = p[i];
		size_t		n;
		unsigned int cp;
		size_t		k;

		if (c == 0)
			return 0;
		if (c < 0x80)
		{
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			n = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			n = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			n = 3, cp = c & 0x07;
		else
			return 0;
		if (i + n >= len)
			return 0;
		for (k = 1; k <= n; k++)
		{
			if ((p[i + k] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (p[i + k] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
			(cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += n + 1;
	}
	return 1;
}

static void
fuzz_check_value(struct json_object *v, struct json_object *top)
{
	switch (json_object_get_type(v))
	{
		case json_type_string:
			if (!fuzz_utf8_ok(json_object_get_string(v),
							  (size_t) json_object_get_string_len(v)))
				fuzz_fail("a string is not valid UTF-8 without NUL", top);
			break;
		case json_type_int:
		case json_type_double:
			if (!adk_json_number_ok(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN)))
				fuzz_fail("a number jsonb cannot hold", top);
			break;
		case json_type_array:
			{
				size_t		i;

				for (i = 0; i < json_object_array_length(v); i++)
					fuzz_check_value(json_object_array_get_idx(v, i), top);
			}
			break;
		case json_type_object:
			{
				struct json_object_iter it;

				json_object_object_foreachC(v, it)
				{
					if (!fuzz_utf8_ok(it.key, strlen(it.key)))
						fuzz_fail("a key is not valid UTF-8", top);
					fuzz_check_value(it.val, top);
				}
			}
			break;
		default:
			break;
	}
}

/* An LlmResponse (final == 0: a partial) */
static void
fuzz_check_response(struct json_object *r, int final)
{
	struct json_object *code;

	if (r == NULL)
		fuzz_fail("no response", r);
	if (!json_object_is_type(r, json_type_object))
		fuzz_fail("response is not an object", r);
	if (adk_json_depth(r, LLM_MAX_JSON_DEPTH) > LLM_MAX_JSON_DEPTH)
		fuzz_fail("response nests deeper than an event may", r);
	fuzz_check_value(r, r);
	if (json_object_object_get_ex(r, "error_code", &code))
	{
		struct json_object *msg;

		if (!json_object_is_type(code, json_type_string) ||
			json_object_get_string_len(code) == 0)
			fuzz_fail("empty or non-string error_code", r);
		if (!json_object_object_get_ex(r, "error_message", &msg) ||
			!json_object_is_type(msg, json_type_string) ||
			json_object_get_string_len(msg) == 0)
			fuzz_fail("error without a message", r);
		if (json_object_object_get_ex(r, "content", NULL))
			fuzz_fail("error with content", r);
	}
	if (!final && !json_object_object_get_ex(r, "partial", NULL))
		fuzz_fail("partial without \"partial\"", r);
}

#endif							/* ADK_FUZZ_CHECK_H */
