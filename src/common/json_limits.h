/*-------------------------------------------------------------------------
 *
 * json_limits.h
 *	  The limits JSON must fit in to be stored, and the one JSON parser the
 *	  model layer and the jsonb bridge share.
 *
 * Free of PostgreSQL (json-c and the C library only), so that the model
 * layer's standalone unit tests and fuzz harnesses use it too.
 *
 * IDENTIFICATION
 *	  src/common/json_limits.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_JSON_LIMITS_H
#define ADK_JSON_LIMITS_H

#include <stddef.h>

struct json_object;

/*
 * The one nesting limit for JSON that enters the store: an event as stored
 * (its own object counts as level 1), whether it was appended by a caller,
 * built from a model's output or from a tool's result.  Prompt assembly and
 * the model adapters read events back within the same limit, so whatever was
 * accepted can always be sent again.
 */
#define ADK_MAX_JSON_DEPTH		64

/*
 * Can PostgreSQL's numeric (and so jsonb) hold this JSON number?  PostgreSQL
 * 15 keeps at most 16383 digits after the decimal point (counting those an
 * exponent adds) and numbers below 10^131072.  "text" is one JSON number
 * (as json-c keeps it); 1 yes, 0 no.
 */
extern int	adk_json_number_ok(const char *text);

/* How adk_json_parse failed */
typedef enum AdkJsonParseError
{
	ADK_JSON_OK = 0,
	ADK_JSON_SYNTAX,			/* not (strict) JSON, or truncated */
	ADK_JSON_TOO_DEEP,			/* nested deeper than max_depth */
	ADK_JSON_NAN,				/* NaN or Infinity (not JSON) */
	ADK_JSON_NUMBER,			/* a number out of numeric's range */
	ADK_JSON_NOMEM
} AdkJsonParseError;

/*
 * Parse JSON text with json-c (flags: json_tokener_set_flags, e.g.
 * JSON_TOKENER_STRICT) into a new object, or NULL and *err (and, for a
 * syntax error, *why: json-c's description).  Accepts at most max_depth
 * levels of nesting ({} and [] count one each).
 *
 * Numbers keep their exact text: json-c saturates integers outside int64 to
 * INT64_MIN / UINT64_MAX, so those are handed to json-c as doubles that
 * carry their original digits (json_object_to_json_string prints them as
 * written, the jsonb bridge reads that text).  Every number must be one
 * jsonb can hold (adk_json_number_ok).
 */
extern struct json_object *adk_json_parse(const char *buf, size_t len,
										  int max_depth, int flags,
										  AdkJsonParseError *err,
										  const char **why);

/*
 * Nesting depth of a json-c value: a scalar is 0, {} or [] is 1.  Stops
 * counting past limit (returns limit + 1).
 */
extern int	adk_json_depth(struct json_object *obj, int limit);

#endif							/* ADK_JSON_LIMITS_H */
