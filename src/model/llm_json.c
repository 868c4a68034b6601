/*-------------------------------------------------------------------------
 *
 * llm_json.c
 *	  Strict JSON parsing of provider bodies, UTF-8 checks, json-c
 *	  accessors and error messages of the model layer.
 *
 * JSON from a provider goes through llm_json_parse only: the raw bytes must
 * be strict UTF-8 (as PostgreSQL understands it), the document must nest no
 * deeper than LLM_MAX_WIRE_DEPTH, every number must be one jsonb can hold
 * and keeps its exact digits (adk_json_parse), and U+0000 inside strings
 * becomes U+FFFD so that the result always fits in jsonb.
 *
 * Malloc/json-c based and free of PostgreSQL.
 *
 * IDENTIFICATION
 *	  src/model/llm_json.c
 *
 *-------------------------------------------------------------------------
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#define ADK_LLM_INTERNAL
#include "llm.h"

/* how requests (and the JSON inside them) are serialized */
#define COMPACT_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

static size_t llm_utf8_seq(const unsigned char *s, size_t len);
static int	llm_json_check(struct json_object *obj, int depth);
static int	llm_fix_nul(struct json_object *str);

/* ----------------------------------------------------------------
 *		UTF-8 and strict JSON
 * ----------------------------------------------------------------
 */

/*
 * Length of the valid UTF-8 sequence starting at s, or 0 when invalid.
 * Overlong forms, surrogates, code points above U+10FFFF and NUL are
 * invalid, as in PostgreSQL.
 */
static size_t
llm_utf8_seq(const unsigned char *s, size_t len)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80;
	unsigned char hi = 0xBF;
	size_t		n;
	size_t		i;

	if (c == 0)
		return 0;
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		n = 2;
	else if (c >= 0xE0 && c <= 0xEF)
		n = 3;
	else if (c >= 0xF0 && c <= 0xF4)
		n = 4;
	else
		return 0;
	if (c == 0xE0)
		lo = 0xA0;
	else if (c == 0xED)
		hi = 0x9F;
	else if (c == 0xF0)
		lo = 0x90;
	else if (c == 0xF4)
		hi = 0x8F;
	if (len < n || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xBF)
			return 0;
	return n;
}

int
llm_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *) s;
	size_t		i = 0;

	while (i < len)
	{
		size_t		n;

		if (p[i] != 0 && p[i] < 0x80)
		{
			i++;
			continue;
		}
		n = llm_utf8_seq(p + i, len - i);
		if (n == 0)
			return 0;
		i += n;
	}
	return 1;
}

/*
 * Longest prefix of valid UTF-8 string s that has at most max bytes and
 * does not end inside a character.
 */
size_t
llm_utf8_clip(const char *s, size_t len, size_t max)
{
	size_t		n;

	if (len <= max)
		return len;
	n = max;
	while (n > 0 && (((unsigned char) s[n]) & 0xC0) == 0x80)
		n--;
	return n;
}

int
llm_is_blank(const char *s, size_t len)
{
	size_t		i;

	for (i = 0; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
			return 0;
	return 1;
}

/*
 * Parse JSON received from a provider.  Returns a new object, or NULL and a
 * short static reason in *why (never any of the input).
 */
struct json_object *
llm_json_parse(const char *buf, size_t len, const char **why)
{
	struct json_object *obj;
	AdkJsonParseError jerr;

	*why = NULL;
	if (buf == NULL || llm_is_blank(buf, len))
	{
		*why = "empty body";
		return NULL;
	}
	if (len >= INT_MAX)
	{
		*why = "body too large";
		return NULL;
	}
	/*
	 * The bytes are checked here, not by json-c: json-c 0.18 (Debian 13)
	 * refuses valid multi-byte UTF-8 ("19°C") when JSON_TOKENER_STRICT and
	 * JSON_TOKENER_VALIDATE_UTF8 are set together.
	 */
	if (!llm_utf8_valid(buf, len))
	{
		*why = "invalid UTF-8";
		return NULL;
	}
	obj = adk_json_parse(buf, len, LLM_MAX_WIRE_DEPTH, JSON_TOKENER_STRICT,
						 &jerr, why);
	switch (jerr)
	{
		case ADK_JSON_OK:
			break;
		case ADK_JSON_TOO_DEEP:
			*why = "nesting too deep";
			return NULL;
		case ADK_JSON_NAN:
			*why = "NaN or Infinity is not JSON";
			return NULL;
		case ADK_JSON_NUMBER:
			*why = "a number is out of the range of PostgreSQL's numeric";
			return NULL;
		case ADK_JSON_NOMEM:
			*why = "out of memory";
			return NULL;
		case ADK_JSON_SYNTAX:
			if (*why == NULL)
				*why = "invalid JSON";
			return NULL;
	}
	if (llm_json_check(obj, 0) == 0)
		return obj;
	*why = "out of memory";
	json_object_put(obj);
	return NULL;
}

/*
 * Walk a parsed document (adk_json_parse has checked nesting and numbers)
 * and replace U+0000 in strings.  0 ok, -1 out of memory.
 */
static int
llm_json_check(struct json_object *obj, int depth)
{
	int			rc = 0;

	switch (json_object_get_type(obj))
	{
		case json_type_string:
			return llm_fix_nul(obj) < 0 ? -1 : 0;
		case json_type_array:
			{
				size_t		i;
				size_t		n = json_object_array_length(obj);

				for (i = 0; i < n && rc == 0; i++)
					rc = llm_json_check(json_object_array_get_idx(obj, i), depth + 1);
				return rc;
			}
		case json_type_object:
			{
				struct json_object_iter it;

				json_object_object_foreachC(obj, it)
				{
					if ((rc = llm_json_check(it.val, depth + 1)) != 0)
						return rc;
				}
				return 0;
			}
		default:
			return 0;
	}
}

/*
 * Replace each NUL in a string object by U+FFFD (jsonb has no U+0000).
 */
static int
llm_fix_nul(struct json_object *str)
{
	const char *s = json_object_get_string(str);
	size_t		len = (size_t) json_object_get_string_len(str);
	size_t		nuls = 0;
	size_t		i;
	char	   *out;
	char	   *o;

	for (i = 0; i < len; i++)
		if (s[i] == '\0')
			nuls++;
	if (nuls == 0)
		return 0;
	out = malloc(len + 2 * nuls + 1);
	if (out == NULL)
		return -1;
	o = out;
	for (i = 0; i < len; i++)
	{
		if (s[i] != '\0')
			*o++ = s[i];
		else
		{
			memcpy(o, "\xEF\xBF\xBD", 3);
			o += 3;
		}
	}
	json_object_set_string_len(str, out, (int) (o - out));
	free(out);
	return 0;
}

/* ----------------------------------------------------------------
 *		json-c accessors
 * ----------------------------------------------------------------
 */

struct json_object *
llm_get(struct json_object *obj, const char *key)
{
	struct json_object *val = NULL;

	if (obj == NULL || !json_object_is_type(obj, json_type_object))
		return NULL;
	if (!json_object_object_get_ex(obj, key, &val))
		return NULL;
	return val;
}

/*
 * Element i of array member key, or NULL.
 */
struct json_object *
llm_get_idx(struct json_object *obj, const char *key, size_t i)
{
	struct json_object *arr = llm_get_arr(obj, key);

	if (arr == NULL || i >= json_object_array_length(arr))
		return NULL;
	return json_object_array_get_idx(arr, i);
}

struct json_object *
llm_get_obj(struct json_object *obj, const char *key)
{
	struct json_object *val = llm_get(obj, key);

	return (val != NULL && json_object_is_type(val, json_type_object)) ? val : NULL;
}

struct json_object *
llm_get_arr(struct json_object *obj, const char *key)
{
	struct json_object *val = llm_get(obj, key);

	return (val != NULL && json_object_is_type(val, json_type_array)) ? val : NULL;
}

const char *
llm_get_str(struct json_object *obj, const char *key)
{
	struct json_object *val = llm_get(obj, key);

	if (val == NULL || !json_object_is_type(val, json_type_string))
		return NULL;
	return json_object_get_string(val);
}

/*
 * 1 and *out when key holds an integer (or an integral double), else 0.
 */
int
llm_get_int(struct json_object *obj, const char *key, int64_t *out)
{
	struct json_object *val = llm_get(obj, key);

	if (val == NULL)
		return 0;
	if (json_object_is_type(val, json_type_int))
	{
		*out = json_object_get_int64(val);
		return 1;
	}
	if (json_object_is_type(val, json_type_double))
	{
		double		d = json_object_get_double(val);

		/* integral and exactly representable: no libm needed */
		if (d > -9e15 && d < 9e15 && d == (double) (int64_t) d)
		{
			*out = (int64_t) d;
			return 1;
		}
	}
	return 0;
}

int
llm_get_count(struct json_object *obj, const char *key, int64_t *out)
{
	struct json_object *val = llm_get(obj, key);
	int64_t		v;

	if (val == NULL)
		return 0;
	if (json_object_is_type(val, json_type_int))
		v = json_object_get_int64(val); /* json-c saturates uint64 */
	else if (json_object_is_type(val, json_type_double))
	{
		double		d = json_object_get_double(val);

		/* integers beyond int64 arrive as doubles (adk_json_parse) */
		if (!(d >= 0) || (d < (double) LLM_MAX_TOKEN_COUNT &&
						  d != (double) (int64_t) d))
			return 0;
		v = d >= (double) LLM_MAX_TOKEN_COUNT ? LLM_MAX_TOKEN_COUNT : (int64_t) d;
	}
	else
		return 0;
	if (v < 0)
		return 0;
	*out = v > LLM_MAX_TOKEN_COUNT ? LLM_MAX_TOKEN_COUNT : v;
	return 1;
}

int64_t
llm_count_add(int64_t a, int64_t b)
{
	/* both are within 0 .. LLM_MAX_TOKEN_COUNT: the sum cannot overflow */
	return a + b > LLM_MAX_TOKEN_COUNT ? LLM_MAX_TOKEN_COUNT : a + b;
}

void
llm_add_ref(struct json_object *obj, const char *key, struct json_object *val)
{
	json_object_object_add(obj, key, json_object_get(val));
}

void
llm_add_str(struct json_object *obj, const char *key, const char *val)
{
	json_object_object_add(obj, key, json_object_new_string(val));
}

/*
 * Compact serialization as a malloc'd string, or NULL when out of memory.
 */
char *
llm_json_compact(struct json_object *obj)
{
	const char *s;

	s = json_object_to_json_string_ext(obj, COMPACT_FLAGS);
	return s ? strdup(s) : NULL;
}

/* ----------------------------------------------------------------
 *		Kept messages' memos, and the requests that copy them
 * ----------------------------------------------------------------
 */

/*
 * The first step of every json-c user_delete callback here: the object
 * forgets its userdata before the callback frees it.  json-c 0.19 (Debian
 * sid) calls the callback of the object json_object_put was given twice
 * when that object is a non-empty array or object, and then reads the
 * userdata as the object's parent; an object without userdata is freed
 * once, as by every other version.  json_object_set_userdata calls the
 * callback once more, nested: that call returns 0 (do nothing), the outer
 * one 1 (free the userdata).
 */
int
llm_json_userdata_detach(struct json_object *obj)
{
	static int	detaching = 0;

	if (detaching)
		return 0;
	detaching = 1;
	json_object_set_userdata(obj, NULL, NULL);
	detaching = 0;
	return 1;
}

static void
memo_free(struct json_object *msg, void *userdata)
{
	LlmMsgMemo *m = (LlmMsgMemo *) userdata;

	if (m == NULL || !llm_json_userdata_detach(msg))
		return;
	free(m->text);
	free(m->jsonb);
	free(m);
}

LlmMsgMemo *
llm_msg_memo(struct json_object *msg)
{
	LlmMsgMemo *m;

	/* only memos are set as the userdata of objects (doubles have text) */
	if (!json_object_is_type(msg, json_type_object))
		return NULL;
	m = (LlmMsgMemo *) json_object_get_userdata(msg);
	return m != NULL && m->magic == LLM_MSG_MEMO_MAGIC ? m : NULL;
}

int
llm_msg_memo_set(struct json_object *msg)
{
	LlmMsgMemo *m;

	if (!json_object_is_type(msg, json_type_object) ||
		json_object_get_userdata(msg) != NULL)
		return llm_msg_memo(msg) != NULL ? 0 : -1;
	/* its text is printed when a request first prints it (put_compact) */
	m = calloc(1, sizeof(LlmMsgMemo));
	if (m == NULL)
		return -1;
	m->magic = LLM_MSG_MEMO_MAGIC;
	json_object_set_userdata(msg, m, memo_free);
	return 0;
}

/*
 * Append v's compact text to b.  The body (depth 0) and its members
 * (depth 1, e.g. the messages array) are written here, as json-c writes
 * them with COMPACT_FLAGS -- "{", "\"key\":value" joined by ",", "}";
 * "[", values joined by ",", "]"; a NULL member is "null" -- so that a
 * message with a memo (depth 2) is copied; everything else is printed by
 * json-c itself.
 */
static int	put_compact_memo(LlmBuf *b, struct json_object *v, int depth,
							 const char *member, LlmTextMemo *memo,
							 LlmTextMemo *next);
static int	put_elements(LlmBuf *b, struct json_object *arr,
						 LlmTextMemo *memo, LlmTextMemo *next);
static char *print_detached(struct json_object *v, size_t *len);

static int
put_compact(LlmBuf *b, struct json_object *v, int depth)
{
	return put_compact_memo(b, v, depth, NULL, NULL, NULL);
}

/*
 * put_compact, with body's array member "member" written by put_elements
 * (memo: the previous request's, next: this one's; see LlmTextMemo)
 */
static int
put_compact_memo(LlmBuf *b, struct json_object *v, int depth,
				 const char *member, LlmTextMemo *memo, LlmTextMemo *next)
{
	LlmMsgMemo *m = llm_msg_memo(v);
	const char *t;
	int			first = 1;
	struct json_object_iter it;

	if (m != NULL && m->text == NULL)
	{
		/* the first request that prints it: kept for the next ones */
		m->text = print_detached(v, &m->len);
		if (m->text == NULL)
			return -1;
	}
	if (m != NULL)
		return llm_buf_append(b, m->text, m->len);
	if (depth < 2 && json_object_is_type(v, json_type_object))
	{
		if (llm_buf_append(b, "{", 1) < 0)
			return -1;
		json_object_object_foreachC(v, it)
		{
			struct json_object *k = json_object_new_string(it.key);

			t = k ? json_object_to_json_string_ext(k, COMPACT_FLAGS) : NULL;
			if (t == NULL ||
				(!first && llm_buf_append(b, ",", 1) < 0) ||
				llm_buf_append(b, t, strlen(t)) < 0 ||
				llm_buf_append(b, ":", 1) < 0)
			{
				json_object_put(k);
				return -1;
			}
			json_object_put(k);
			first = 0;
			if (member != NULL && depth == 0 && strcmp(it.key, member) == 0 &&
				json_object_is_type(it.val, json_type_array))
			{
				if (put_elements(b, it.val, memo, next) < 0)
					return -1;
			}
			else if (put_compact(b, it.val, depth + 1) < 0)
				return -1;
		}
		return llm_buf_append(b, "}", 1);
	}
	if (depth < 2 && json_object_is_type(v, json_type_array))
	{
		size_t		n = json_object_array_length(v);
		size_t		i;

		if (llm_buf_append(b, "[", 1) < 0)
			return -1;
		for (i = 0; i < n; i++)
		{
			if ((i > 0 && llm_buf_append(b, ",", 1) < 0) ||
				put_compact(b, json_object_array_get_idx(v, i), depth + 1) < 0)
				return -1;
		}
		return llm_buf_append(b, "]", 1);
	}
	if (json_object_is_type(v, json_type_object) ||
		json_object_is_type(v, json_type_array))
	{
		size_t		len;
		char	   *text = print_detached(v, &len);
		int			rc;

		if (text == NULL)
			return -1;
		rc = llm_buf_append(b, text, len);
		free(text);
		return rc;
	}
	/* json-c prints a NULL object as null */
	t = json_object_to_json_string_ext(v, COMPACT_FLAGS);
	return t ? llm_buf_append(b, t, strlen(t)) : -1;
}

/*
 * v's compact text (malloc'd; NULL when out of memory), *len its length.
 * json-c keeps the text it prints of an object in that object until it is
 * freed: a kept message would hold its text twice (there and in its
 * memo), and a message of a request until the request goes.  So v is
 * printed as the element of an array of its own, whose text goes with it.
 */
static char *
print_detached(struct json_object *v, size_t *len)
{
	struct json_object *wrap = json_object_new_array();
	const char *t;
	size_t		n = 0;
	char	   *out = NULL;

	if (wrap == NULL)
		return NULL;
	if (json_object_array_add(wrap, json_object_get(v)) != 0)
	{
		json_object_put(v);
		json_object_put(wrap);
		return NULL;
	}
	t = json_object_to_json_string_length(wrap, COMPACT_FLAGS, &n);
	/* "[" text "]" */
	if (t != NULL && n >= 2 && (out = malloc(n - 1)) != NULL)
	{
		memcpy(out, t + 1, n - 2);
		out[n - 2] = '\0';
		*len = n - 2;
	}
	json_object_put(wrap);
	return out;
}

/*
 * Write arr (a member of the body) as put_compact does; a run of elements
 * that are the objects memo had at the same indexes is one copy of their
 * text.  next (zeroed) gets the elements (references) and their text.
 */
static int
put_elements(LlmBuf *b, struct json_object *arr, LlmTextMemo *memo,
			 LlmTextMemo *next)
{
	size_t		n = json_object_array_length(arr);
	size_t		base;
	size_t		i = 0;

	if (llm_buf_append(b, "[", 1) < 0)
		return -1;
	base = b->len;
	next->elems = calloc(n + 1, sizeof(struct json_object *));
	next->end = malloc((n + 1) * sizeof(size_t));
	if (next->elems == NULL || next->end == NULL)
		return -1;
	next->n = n;				/* its references are released on failure */
	while (i < n)
	{
		struct json_object *e = json_object_array_get_idx(arr, i);
		size_t		j = i;

		if (i > 0 && llm_buf_append(b, ",", 1) < 0)
			return -1;
		while (j < n && j < memo->n && memo->elems[j] != NULL &&
			   memo->elems[j] == json_object_array_get_idx(arr, j))
			j++;
		if (j > i)
		{
			/* elements i .. j - 1, as memo's request wrote them */
			size_t		from = i > 0 ? memo->end[i - 1] + 1 : 0;
			size_t		at = b->len - base;
			size_t		k;

			if (llm_buf_append(b, memo->text + from, memo->end[j - 1] - from) < 0)
				return -1;
			for (k = i; k < j; k++)
			{
				next->end[k] = at + (memo->end[k] - from);
				/* the reference moves to next */
				next->elems[k] = memo->elems[k];
				memo->elems[k] = NULL;
			}
			i = j;
			continue;
		}
		if (put_compact(b, e, 2) < 0)
			return -1;
		next->end[i] = b->len - base;
		next->elems[i] = json_object_get(e);
		i++;
	}
	next->len = b->len - base;
	next->text = malloc(next->len + 1);
	if (next->text == NULL)
		return -1;
	memcpy(next->text, b->data + base, next->len);
	return llm_buf_append(b, "]", 1);
}

char *
llm_request_compact_memo(struct json_object *body, const char *member,
						 LlmTextMemo *memo)
{
	LlmBuf		b = {0};
	LlmTextMemo next = {0};
	int			rc = put_compact_memo(&b, body, 0, member, memo, &next);

	llm_text_memo_free(memo);
	if (rc < 0)
	{
		llm_text_memo_free(&next);
		llm_buf_free(&b);
		return NULL;
	}
	*memo = next;
	return b.data ? b.data : strdup("");
}

void
llm_text_memo_free(LlmTextMemo *memo)
{
	size_t		i;

	for (i = 0; memo->elems != NULL && i < memo->n; i++)
		if (memo->elems[i] != NULL)
			json_object_put(memo->elems[i]);
	free(memo->elems);
	free(memo->end);
	free(memo->text);
	memset(memo, 0, sizeof(*memo));
}

char *
llm_request_compact(struct json_object *body)
{
	LlmBuf		b = {0};

	if (put_compact(&b, body, 0) < 0)
	{
		llm_buf_free(&b);
		return NULL;
	}
	return b.data ? b.data : strdup("");
}

/* ----------------------------------------------------------------
 *		Messages
 * ----------------------------------------------------------------
 */

/*
 * Set *errmsg to a malloc'd message unless errmsg is NULL or already set:
 * the first error found is the one reported.
 */
void
llm_set_errmsg(char **errmsg, const char *fmt,...)
{
	va_list		ap;
	char		buf[512];

	if (errmsg == NULL || *errmsg != NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	*errmsg = strdup(buf);
}
