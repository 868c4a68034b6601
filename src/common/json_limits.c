/*-------------------------------------------------------------------------
 *
 * json_limits.c
 *	  JSON that can be stored: the nesting limit, numbers jsonb can hold,
 *	  and a json-c parse that keeps every number's exact digits.
 *
 * Free of PostgreSQL: it is linked into the extension and into the model
 * layer's standalone unit tests and fuzz harnesses.
 *
 * IDENTIFICATION
 *	  src/common/json_limits.c
 *
 *-------------------------------------------------------------------------
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "common/json_limits.h"

/* PostgreSQL 15's numeric: NUMERIC_DSCALE_MAX, and 4 * (NUMERIC_WEIGHT_MAX + 1) */
#define PG_NUMERIC_MAX_DSCALE	16383
#define PG_NUMERIC_MAX_DWEIGHT	131071
/* numeric_in refuses exponents from INT_MAX / 2 on, whatever the digits */
#define PG_NUMERIC_MAX_EXPONENT (INT_MAX / 2 - 1)

/* Appended to integers out of int64's range so that json-c keeps them */
#define BIGINT_MARK				"E+00"
#define BIGINT_MARK_LEN			4

static int	is_digit(char c);
static size_t bigint_token(const char *s, size_t len);
static char *mark_bigints(const char *buf, size_t len, size_t *outlen);
static AdkJsonParseError check_tree(struct json_object *obj, int depth,
									int max_depth, int marked);
static AdkJsonParseError check_double(struct json_object *obj, int marked);

static int
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

int
adk_json_number_ok(const char *text)
{
	const char *p = text;
	long long	nint = 0;
	long long	nfrac = 0;
	long long	first = -1;		/* index of the first nonzero digit */
	long long	exp = 0;
	long long	dscale;
	int			expneg = 0;

	if (p == NULL)
		return 0;
	if (*p == '-')
		p++;
	if (!is_digit(*p))
		return 0;				/* NaN, Infinity and other words */
	for (; is_digit(*p); p++, nint++)
		if (first < 0 && *p != '0')
			first = nint;
	if (*p == '.')
	{
		p++;
		if (!is_digit(*p))
			return 0;
		for (; is_digit(*p); p++, nfrac++)
			if (first < 0 && *p != '0')
				first = nint + nfrac;
	}
	if (*p == 'e' || *p == 'E')
	{
		p++;
		if (*p == '+' || *p == '-')
			expneg = (*p++ == '-');
		if (!is_digit(*p))
			return 0;
		for (; is_digit(*p); p++)
		{
			exp = exp * 10 + (*p - '0');
			if (exp > PG_NUMERIC_MAX_EXPONENT)
				return 0;
		}
		if (expneg)
			exp = -exp;
	}
	if (*p != '\0')
		return 0;

	dscale = nfrac - exp;
	if (dscale > PG_NUMERIC_MAX_DSCALE)
		return 0;
	/* the decimal weight of the first nonzero digit (zero has none) */
	if (first >= 0 && nint - 1 - first + exp > PG_NUMERIC_MAX_DWEIGHT)
		return 0;
	return 1;
}

/*
 * Length of the integer token at s when it is one out of int64's range
 * (strict JSON: no leading zero), else 0.
 */
static size_t
bigint_token(const char *s, size_t len)
{
	size_t		i = 0;
	size_t		ndig;
	int			neg = 0;

	if (i < len && s[i] == '-')
	{
		neg = 1;
		i++;
	}
	if (i >= len || s[i] < '1' || s[i] > '9')
		return 0;
	while (i < len && is_digit(s[i]))
		i++;
	if (i < len && (s[i] == '.' || s[i] == 'e' || s[i] == 'E'))
		return 0;
	ndig = i - neg;
	if (ndig < 19)
		return 0;
	if (ndig == 19 &&
		memcmp(s + neg, neg ? "9223372036854775808" : "9223372036854775807", 19) <= 0)
		return 0;
	return i;
}

/*
 * A malloc'd copy of buf with BIGINT_MARK after each integer out of int64's
 * range (outside strings), or NULL when there is none (or no memory:
 * json-c then saturates, as before).
 */
static char *
mark_bigints(const char *buf, size_t len, size_t *outlen)
{
	size_t		i = 0;
	size_t		nmarks = 0;
	int			pass;
	char	   *out = NULL;
	size_t		o = 0;

	for (pass = 0; pass < 2; pass++)
	{
		int			in_str = 0;

		for (i = 0; i < len;)
		{
			char		c = buf[i];
			size_t		n;

			if (in_str)
			{
				if (c == '\\' && i + 1 < len)
					n = 2;
				else
				{
					if (c == '"')
						in_str = 0;
					n = 1;
				}
			}
			else if (c == '"')
			{
				in_str = 1;
				n = 1;
			}
			else if ((c == '-' || is_digit(c)) &&
					 (i == 0 || !(is_digit(buf[i - 1]) || buf[i - 1] == '.' ||
								  buf[i - 1] == 'e' || buf[i - 1] == 'E' ||
								  buf[i - 1] == '+' || buf[i - 1] == '-')))
			{
				size_t		big = bigint_token(buf + i, len - i);

				n = 1;
				while (i + n < len && (is_digit(buf[i + n]) || buf[i + n] == '.' ||
									   buf[i + n] == 'e' || buf[i + n] == 'E' ||
									   buf[i + n] == '+' || buf[i + n] == '-'))
					n++;
				if (big == n)
				{
					if (pass == 0)
						nmarks++;
					else
					{
						memcpy(out + o, buf + i, n);
						o += n;
						memcpy(out + o, BIGINT_MARK, BIGINT_MARK_LEN);
						o += BIGINT_MARK_LEN;
						i += n;
						continue;
					}
				}
			}
			else
				n = 1;
			if (i + n > len)
				n = len - i;
			if (pass == 1)
			{
				memcpy(out + o, buf + i, n);
				o += n;
			}
			i += n;
		}
		if (pass == 0)
		{
			if (nmarks == 0 || len > (size_t) INT_MAX - 1 - nmarks * BIGINT_MARK_LEN)
				return NULL;
			out = malloc(len + nmarks * BIGINT_MARK_LEN + 1);
			if (out == NULL)
				return NULL;
		}
	}
	out[o] = '\0';
	*outlen = o;
	return out;
}

/*
 * json-c 0.18 in strict mode takes every byte of a string from 0x80 up for a
 * control character (it compares a signed char with 0x1f), so strict
 * parses see valid UTF-8 ("19°C") as an error.  With that version, a text
 * for a strict parse has its multi-byte characters written as \u escapes
 * first (a pair for those above U+FFFF): json-c reads them back into the
 * same characters, and outside a string an escape is as invalid as the
 * character was.  Bytes that are not valid UTF-8 are left as they are
 * (json-c refuses them).  Returns a new text, or NULL when there is nothing
 * to escape or no memory (then *nomem).
 */
#if JSON_C_VERSION_NUM >= 0x001200 && JSON_C_VERSION_NUM < 0x001300
#define ADK_JSONC_STRICT_ASCII_ONLY 1

static char *
escape_non_ascii(const char *buf, size_t len, size_t *outlen, int *nomem)
{
	const unsigned char *s = (const unsigned char *) buf;
	size_t		i;
	size_t		o = 0;
	char	   *out;

	*nomem = 0;
	for (i = 0; i < len && s[i] < 0x80; i++)
		;
	if (i == len)
		return NULL;
	/* every byte becomes at most 6 (a 4-byte character: 12) */
	out = malloc(len * 6 + 1);
	if (out == NULL)
	{
		*nomem = 1;
		return NULL;
	}
	for (i = 0; i < len;)
	{
		unsigned int cp;
		size_t		n;

		if (s[i] < 0x80)
		{
			out[o++] = (char) s[i++];
			continue;
		}
		n = (s[i] >= 0xC2 && s[i] <= 0xDF) ? 2 :
			(s[i] >= 0xE0 && s[i] <= 0xEF) ? 3 :
			(s[i] >= 0xF0 && s[i] <= 0xF4) ? 4 : 0;
		cp = s[i] & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
		if (n > 0 && i + n <= len)
		{
			size_t		k;

			for (k = 1; k < n && (s[i + k] & 0xC0) == 0x80; k++)
				cp = (cp << 6) | (s[i + k] & 0x3F);
			if (k < n || cp < 0x80 || (cp >= 0xD800 && cp <= 0xDFFF) ||
				cp > 0x10FFFF || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000))
				n = 0;
		}
		else
			n = 0;
		if (n == 0)
		{
			out[o++] = (char) s[i++];
			continue;
		}
		if (cp >= 0x10000)
		{
			cp -= 0x10000;
			o += sprintf(out + o, "\\u%04X\\u%04X", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
		}
		else
			o += sprintf(out + o, "\\u%04X", cp);
		i += n;
	}
	out[o] = '\0';
	*outlen = o;
	return out;
}
#endif

struct json_object *
adk_json_parse(const char *buf, size_t len, int max_depth, int flags,
			   AdkJsonParseError *err, const char **why)
{
	struct json_tokener *tok;
	struct json_object *obj;
	enum json_tokener_error jerr;
	size_t		mlen = 0;
	char	   *marked = NULL;
	int			escaped_only = 0;	/* marked holds no bigint marks */

	*err = ADK_JSON_OK;
	if (why)
		*why = NULL;
	if (len >= INT_MAX)
	{
		*err = ADK_JSON_SYNTAX;
		if (why)
			*why = "text too large";
		return NULL;
	}
	marked = mark_bigints(buf, len, &mlen);
#ifdef ADK_JSONC_STRICT_ASCII_ONLY
	if (flags & JSON_TOKENER_STRICT)
	{
		int			nomem;
		size_t		elen = 0;
		char	   *escaped = escape_non_ascii(marked ? marked : buf,
											   marked ? mlen : len, &elen, &nomem);

		if (nomem)
		{
			free(marked);
			*err = ADK_JSON_NOMEM;
			return NULL;
		}
		if (escaped != NULL)
		{
			/* marks stay marks: only bytes from 0x80 up were rewritten */
			int			had_marks = marked != NULL;

			free(marked);
			marked = escaped;
			mlen = elen;
			if (!had_marks)
				escaped_only = 1;
		}
	}
#endif
	/*
	 * json-c's limit is one off (and it does not count an empty innermost
	 * container); check_tree enforces the exact one
	 */
	tok = json_tokener_new_ex(max_depth + 1);
	if (tok == NULL)
	{
		free(marked);
		*err = ADK_JSON_NOMEM;
		return NULL;
	}
	json_tokener_set_flags(tok, flags);
	obj = json_tokener_parse_ex(tok, marked ? marked : buf,
								(int) (marked ? mlen : len));
	jerr = json_tokener_get_error(tok);
	if (obj == NULL && jerr == json_tokener_continue)
	{
		/* a bare number needs an end marker; anything else is truncated */
		obj = json_tokener_parse_ex(tok, "", 1);
		jerr = json_tokener_get_error(tok);
		if (obj == NULL)
			jerr = json_tokener_error_parse_eof;
	}
	json_tokener_free(tok);
	if (obj == NULL)
	{
		free(marked);
		*err = (jerr == json_tokener_error_depth) ? ADK_JSON_TOO_DEEP :
			ADK_JSON_SYNTAX;
		if (why)
			*why = (jerr == json_tokener_error_parse_eof) ? "truncated JSON" :
				json_tokener_error_desc(jerr);
		return NULL;
	}
	*err = check_tree(obj, 0, max_depth, marked != NULL && !escaped_only);
	free(marked);
	if (*err != ADK_JSON_OK)
	{
		json_object_put(obj);
		return NULL;
	}
	return obj;
}

/*
 * Walk a parsed document: exact nesting (depth = containers around obj)
 * and numbers.
 */
static AdkJsonParseError
check_tree(struct json_object *obj, int depth, int max_depth, int marked)
{
	AdkJsonParseError rc = ADK_JSON_OK;

	switch (json_object_get_type(obj))
	{
		case json_type_double:
			return check_double(obj, marked);
		case json_type_array:
			{
				size_t		i;
				size_t		n = json_object_array_length(obj);

				if (depth >= max_depth)
					return ADK_JSON_TOO_DEEP;
				for (i = 0; i < n && rc == ADK_JSON_OK; i++)
					rc = check_tree(json_object_array_get_idx(obj, i), depth + 1,
									max_depth, marked);
				return rc;
			}
		case json_type_object:
			{
				struct json_object_iter it;

				if (depth >= max_depth)
					return ADK_JSON_TOO_DEEP;
				json_object_object_foreachC(obj, it)
				{
					if ((rc = check_tree(it.val, depth + 1, max_depth, marked)) != ADK_JSON_OK)
						return rc;
				}
				return rc;
			}
		default:
			return ADK_JSON_OK;
	}
}

/*
 * A parsed double prints as its original text (json-c keeps it); drop the
 * mark of an integer mark_bigints marked, then check what jsonb can hold.
 * NaN and Infinity (json-c accepts them even in strict mode) fail here.
 */
static AdkJsonParseError
check_double(struct json_object *obj, int marked)
{
	const char *t = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN);
	size_t		n = strlen(t);

	if (marked && n > BIGINT_MARK_LEN &&
		strcmp(t + n - BIGINT_MARK_LEN, BIGINT_MARK) == 0 &&
		bigint_token(t, n - BIGINT_MARK_LEN) == n - BIGINT_MARK_LEN)
	{
		char	   *plain = strndup(t, n - BIGINT_MARK_LEN);

		if (plain == NULL)
			return ADK_JSON_NOMEM;
		json_object_set_serializer(obj, json_object_userdata_to_json_string,
								   plain, json_object_free_userdata);
		t = plain;
	}
	if (adk_json_number_ok(t))
		return ADK_JSON_OK;
	if (*t == '-')
		t++;
	return is_digit(*t) ? ADK_JSON_NUMBER : ADK_JSON_NAN;
}

int
adk_json_depth(struct json_object *obj, int limit)
{
	int			max = 0;

	switch (json_object_get_type(obj))
	{
		case json_type_array:
			{
				size_t		i;
				size_t		n = json_object_array_length(obj);

				if (limit <= 0)
					return 1;
				for (i = 0; i < n && max < limit; i++)
				{
					int			d = adk_json_depth(json_object_array_get_idx(obj, i),
												   limit - 1);

					if (d > max)
						max = d;
				}
				return max + 1;
			}
		case json_type_object:
			{
				struct json_object_iter it;

				if (limit <= 0)
					return 1;
				json_object_object_foreachC(obj, it)
				{
					int			d = adk_json_depth(it.val, limit - 1);

					if (d > max)
						max = d;
					if (max >= limit)
						break;
				}
				return max + 1;
			}
		default:
			return 0;
	}
}
