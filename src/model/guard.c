/*-------------------------------------------------------------------------
 *
 * guard.c
 *	  The two borders of a model call.
 *
 * Going out: the transport options a call may set -- headers, timeout_ms,
 * connect_timeout_ms, retries, max_request_bytes, prompt_cache_key -- and
 * its "thinking" setting (by llm_thinking.c's rules, adk_check_thinking())
 * are checked by adk_check_call_options(),
 * the one set of rules for adk.models.options (the table's trigger calls
 * it through adk._check_call_options) and for the config of every call
 * (adk_generate, adk_generate_stream, the runner).  Header names must be
 * HTTP tokens, values must not hold CR, LF, NUL or other control
 * characters (no header injection), a name may appear once, and the
 * headers adk_runner sets itself -- the key, the framing, the host -- may
 * not be set at all.  Numbers are bounded, so no call can wait for hours
 * or retry a thousand times.
 *
 * Coming back: a provider may echo the API key (in an error message, in
 * text it was asked to repeat, in a function call's arguments).  Every
 * value that came from the provider is passed through adk_redact_jsonc()
 * or, for streamed text, adk_redact_partial() in generate.c, the one place
 * where a provider's answer enters the system, before anything stores or
 * returns it; so events, adk.event_log, tool arguments, the ledger, run
 * and job errors all see "[REDACTED]" instead of the key.  Streamed text
 * that ends with what could be the start of the key is held back until
 * the next delta (or the final response) settles it, so the key cannot be
 * reassembled from partials either.  There too, with adk.store_thoughts
 * off, the text of thought parts is dropped (adk_drop_thoughts), so that
 * no event, ledger row or result holds it; only the run that made the
 * call gets it, to send back within itself (runner/thoughts.c).
 *
 * IDENTIFICATION
 *	  src/model/guard.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>
#include <math.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "utils/jsonb.h"

#include <json-c/json.h>

#include "common/json_bridge.h"
#include "model/guard.h"
#include "model/llm.h"

PG_FUNCTION_INFO_V1(adk_check_call_options_sql);
PG_FUNCTION_INFO_V1(adk_check_thinking_sql);

/*
 * Headers adk_runner sets itself, or that frame or route the request:
 * never from options (compared case-insensitively).
 */
static const char *const reserved_headers[] = {
	"authorization", "proxy-authorization", "x-api-key", "x-goog-api-key",
	"api-key", "anthropic-version", "accept", "content-type",
	"content-length", "content-encoding", "transfer-encoding", "host",
	"connection", "keep-alive", "te", "trailer", "upgrade", "expect",
	NULL
};

bool		adk_store_thoughts = true;

static void check_int_option(struct json_object *options, const char *what,
							 const char *key, int lo, int hi);
static void check_headers(struct json_object *headers, const char *what);
static void check_cache_key(struct json_object *options, const char *what);
static bool is_token(const char *s);
static void take_thought(struct json_object **taken, struct json_object *part,
						 size_t at, bool emptied);
static struct json_object *empty_thought(struct json_object *part);

/*
 * Refuse (22023) transport options that break the rules above.  what
 * names the options in messages: "model option" or "config option".
 */
void
adk_check_call_options(struct json_object *options, const char *what)
{
	struct json_object *headers;
	struct json_object *thinking;

	if (options == NULL || !json_object_is_type(options, json_type_object))
		return;
	check_int_option(options, what, "timeout_ms",
					 ADK_MIN_TIMEOUT_MS, ADK_MAX_TIMEOUT_MS);
	check_int_option(options, what, "connect_timeout_ms",
					 ADK_MIN_TIMEOUT_MS, ADK_MAX_CONNECT_TIMEOUT_MS);
	check_int_option(options, what, "retries", 0, ADK_MAX_RETRIES);
	/* only lowers adk.max_request_bytes (generate.c) */
	check_int_option(options, what, "max_request_bytes", 1, INT_MAX);
	if (json_object_object_get_ex(options, "headers", &headers))
		check_headers(headers, what);
	check_cache_key(options, what);
	if (json_object_object_get_ex(options, "thinking", &thinking))
		adk_check_thinking(thinking, what);
}

/*
 * Refuse (22023) a "thinking" setting llm_thinking.c cannot map
 * (docs/models.md, "Thinking"); what names where it is set, as in
 * adk_check_call_options.  JSON null (thinking NULL) is no thinking: set
 * over a model's options, it turns theirs off.
 */
void
adk_check_thinking(struct json_object *thinking, const char *what)
{
	char	   *why = NULL;
	char	   *msg;

	if (thinking == NULL || llm_thinking_check(thinking, &why) == 0)
		return;
	msg = pstrdup(why ? why : "is invalid");
	free(why);
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("%s \"thinking\" %s", what, msg),
			 errhint("Use {\"budget_tokens\": N} or {\"effort\": \"low\" | \"medium\" | \"high\"}, with \"include_thoughts\": true or false if wanted.")));
}

/*
 * An integer option (checked by adk_check_call_options), else dflt.
 */
int
adk_call_int_option(struct json_object *options, const char *key, int dflt)
{
	struct json_object *v;

	if (options == NULL ||
		!json_object_object_get_ex(options, key, &v) || v == NULL)
		return dflt;
	if (json_object_is_type(v, json_type_int))
		return (int) json_object_get_int64(v);
	if (json_object_is_type(v, json_type_double))
		return (int) json_object_get_double(v);
	return dflt;
}

static void
check_int_option(struct json_object *options, const char *what,
				 const char *key, int lo, int hi)
{
	struct json_object *v;
	bool		ok = false;

	if (!json_object_object_get_ex(options, key, &v))
		return;
	if (json_object_is_type(v, json_type_int))
	{
		int64		i = json_object_get_int64(v);

		ok = (i >= lo && i <= hi);
	}
	else if (json_object_is_type(v, json_type_double))
	{
		double		d = json_object_get_double(v);

		ok = (isfinite(d) && d == floor(d) && d >= lo && d <= hi);
	}
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s \"%s\" must be an integer between %d and %d",
						what, key, lo, hi)));
}

/*
 * prompt_cache_key: prompt caching on with this key (docs/models.md,
 * "Prompt caching"), a short string of printable ASCII.
 */
static void
check_cache_key(struct json_object *options, const char *what)
{
	struct json_object *v;
	const char *s;
	int			len;
	int			i;
	bool		ok;

	if (!json_object_object_get_ex(options, "prompt_cache_key", &v))
		return;
	ok = json_object_is_type(v, json_type_string);
	if (ok)
	{
		s = json_object_get_string(v);
		len = json_object_get_string_len(v);
		ok = len >= 1 && len <= ADK_MAX_CACHE_KEY_LEN;
		for (i = 0; ok && i < len; i++)
			ok = s[i] >= 0x20 && s[i] < 0x7f;
	}
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s \"prompt_cache_key\" must be a string of 1 to %d printable ASCII characters",
						what, ADK_MAX_CACHE_KEY_LEN)));
}

static void
check_headers(struct json_object *headers, const char *what)
{
	List	   *seen = NIL;
	ListCell   *lc;

	if (!json_object_is_type(headers, json_type_object))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s \"headers\" must be an object of header names to string values",
						what),
				 errdetail("Names must be HTTP tokens and values must not contain line breaks.")));

	{
		json_object_object_foreach(headers, name, value)
		{
			const char *s;
			int			len;
			int			i;
			char	   *lower;

			if (!json_object_is_type(value, json_type_string) || !is_token(name))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("%s \"headers\" must be an object of header names to string values",
								what),
						 errdetail("Names must be HTTP tokens and values must not contain line breaks.")));
			s = json_object_get_string(value);
			len = json_object_get_string_len(value);
			for (i = 0; i < len; i++)
			{
				unsigned char c = (unsigned char) s[i];

				if ((c < 0x20 && c != '\t') || c == 0x7f)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("%s \"headers\" must be an object of header names to string values",
									what),
							 errdetail("Names must be HTTP tokens and values must not contain line breaks.")));
			}

			lower = pstrdup(name);
			for (i = 0; lower[i]; i++)
				lower[i] = pg_ascii_tolower((unsigned char) lower[i]);
			for (i = 0; reserved_headers[i] != NULL; i++)
				if (strcmp(lower, reserved_headers[i]) == 0)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("%s \"headers\" may not set header \"%s\"",
									what, name),
							 errhint("adk_runner sets the API key and framing headers itself; keep the key with adk_set_secret().")));
			foreach(lc, seen)
				if (strcmp((char *) lfirst(lc), lower) == 0)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("%s \"headers\" sets header \"%s\" more than once",
									what, name),
							 errdetail("Header names are case-insensitive.")));
			seen = lappend(seen, lower);
		}
	}
	list_free_deep(seen);
}

/* an HTTP token (RFC 9110 5.6.2), not empty */
static bool
is_token(const char *s)
{
	if (*s == '\0')
		return false;
	for (; *s; s++)
	{
		unsigned char c = (unsigned char) *s;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || strchr("!#$%&'*+-.^_`|~", c) != NULL))
			return false;
	}
	return true;
}

/*
 * adk._check_call_options(options jsonb) RETURNS void: the rules above,
 * for the trigger on adk.models.
 */
Datum
adk_check_call_options_sql(PG_FUNCTION_ARGS)
{
	Jsonb	   *jb = PG_GETARG_JSONB_P(0);
	struct json_object *volatile obj;

	obj = adk_jsonb_to_jsonc(jb, "options");
	PG_TRY();
	{
		adk_check_call_options(obj, "model option");
	}
	PG_FINALLY();
	{
		json_object_put(obj);
	}
	PG_END_TRY();
	PG_RETURN_VOID();
}

/*
 * Copy of text[0..len) with every occurrence of secret replaced, or NULL
 * when there is none.
 */
static char *
redact_text(const char *text, size_t len, const char *secret, size_t *outlen)
{
	StringInfoData out;
	size_t		slen = strlen(secret);
	const char *p = text;
	const char *end = text + len;
	bool		hit_any = false;

	if (slen == 0 || len < slen)
		return NULL;
	initStringInfo(&out);
	while ((size_t) (end - p) >= slen)
	{
		const char *hit = memchr(p, secret[0], end - p - slen + 1);

		if (hit == NULL)
			break;
		if (memcmp(hit, secret, slen) == 0)
		{
			appendBinaryStringInfo(&out, p, hit - p);
			appendStringInfoString(&out, ADK_REDACTED);
			p = hit + slen;
			hit_any = true;
		}
		else
		{
			appendBinaryStringInfo(&out, p, hit - p + 1);
			p = hit + 1;
		}
	}
	if (!hit_any)
	{
		pfree(out.data);
		return NULL;
	}
	appendBinaryStringInfo(&out, p, end - p);
	*outlen = out.len;
	return out.data;
}

/*
 * Replace the key wherever it appears in obj: string values and object
 * keys, at any depth.  obj is changed in place.
 */
void
adk_redact_jsonc(struct json_object *obj, const char *secret)
{
	if (obj == NULL || secret == NULL || secret[0] == '\0')
		return;
	check_stack_depth();
	switch (json_object_get_type(obj))
	{
		case json_type_string:
			{
				size_t		n;
				char	   *clean = redact_text(json_object_get_string(obj),
												json_object_get_string_len(obj),
												secret, &n);

				if (clean != NULL)
				{
					if (json_object_set_string_len(obj, clean, (int) n) != 1)
						ereport(ERROR,
								(errcode(ERRCODE_OUT_OF_MEMORY),
								 errmsg("out of memory")));
					pfree(clean);
				}
				break;
			}
		case json_type_array:
			{
				size_t		i;
				size_t		n = json_object_array_length(obj);

				for (i = 0; i < n; i++)
					adk_redact_jsonc(json_object_array_get_idx(obj, i), secret);
				break;
			}
		case json_type_object:
			{
				List	   *keys = NIL;
				ListCell   *lc;

				json_object_object_foreach(obj, k, v)
				{
					adk_redact_jsonc(v, secret);
					if (strstr(k, secret) != NULL)
						keys = lappend(keys, pstrdup(k));
				}
				/* renamed after the walk: the iteration must not see it */
				foreach(lc, keys)
				{
					char	   *key = (char *) lfirst(lc);
					struct json_object *val = NULL;
					size_t		n;
					char	   *clean = redact_text(key, strlen(key), secret, &n);

					json_object_object_get_ex(obj, key, &val);
					json_object_get(val);
					json_object_object_del(obj, key);
					if (json_object_object_add(obj, clean, val) != 0)
					{
						json_object_put(val);
						ereport(ERROR,
								(errcode(ERRCODE_OUT_OF_MEMORY),
								 errmsg("out of memory")));
					}
				}
				list_free_deep(keys);
				break;
			}
		default:
			break;
	}
}

/*
 * Redact a streamed partial ({"partial": true, "content": {"parts": [...]}})
 * in place.  Text parts are joined with what hold kept from earlier
 * partials; an end that could still become the key is kept back in hold
 * (the final response carries the whole text, redacted).  Returns false
 * when nothing is left to hand on.
 */
bool
adk_redact_partial(struct json_object *partial, const char *secret,
				   AdkRedactHold *hold)
{
	struct json_object *content;
	struct json_object *parts;
	size_t		slen;
	size_t		i;
	size_t		n;
	bool		any = false;

	if (secret == NULL || secret[0] == '\0')
		return true;
	if (!json_object_object_get_ex(partial, "content", &content) ||
		!json_object_object_get_ex(content, "parts", &parts) ||
		!json_object_is_type(parts, json_type_array))
	{
		adk_redact_jsonc(partial, secret);
		return true;
	}
	if (!hold->init)
	{
		initStringInfo(&hold->text[0]);
		initStringInfo(&hold->text[1]);
		hold->init = true;
	}
	slen = strlen(secret);
	n = json_object_array_length(parts);
	for (i = 0; i < n; i++)
	{
		struct json_object *part = json_object_array_get_idx(parts, i);
		struct json_object *text;
		struct json_object *thought;
		StringInfo	buf;
		char	   *clean;
		size_t		cleanlen;
		size_t		keep;
		bool		is_thought;

		if (!json_object_object_get_ex(part, "text", &text) ||
			!json_object_is_type(text, json_type_string))
		{
			adk_redact_jsonc(part, secret);
			any = true;
			continue;
		}
		is_thought = json_object_object_get_ex(part, "thought", &thought) &&
			json_object_get_boolean(thought);
		buf = &hold->text[is_thought ? 1 : 0];
		appendBinaryStringInfo(buf, json_object_get_string(text),
							   json_object_get_string_len(text));
		clean = redact_text(buf->data, buf->len, secret, &cleanlen);
		if (clean == NULL)
		{
			clean = pnstrdup(buf->data, buf->len);
			cleanlen = buf->len;
		}
		/* the longest end of the text that is a proper prefix of the key */
		for (keep = Min(slen - 1, cleanlen); keep > 0; keep--)
			if (memcmp(clean + cleanlen - keep, secret, keep) == 0)
				break;
		if (json_object_set_string_len(text, clean, (int) (cleanlen - keep)) != 1)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory")));
		resetStringInfo(buf);
		appendBinaryStringInfo(buf, clean + cleanlen - keep, keep);
		if (cleanlen > keep)
			any = true;
		pfree(clean);
	}
	return any;
}

/*
 * adk._check_thinking(thinking jsonb, what text) RETURNS void:
 * adk_check_thinking, for the triggers on adk.models and adk.agents.
 */
Datum
adk_check_thinking_sql(PG_FUNCTION_ARGS)
{
	Jsonb	   *jb = PG_GETARG_JSONB_P(0);
	text	   *t = PG_GETARG_TEXT_PP(1);
	char	   *what = pnstrdup(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
	struct json_object *volatile obj;

	/* JSON null: none */
	if (JB_ROOT_IS_SCALAR(jb))
	{
		JsonbValue	v;

		if (JsonbExtractScalar(&jb->root, &v) && v.type == jbvNull)
			PG_RETURN_VOID();
	}
	obj = adk_jsonb_to_jsonc(jb, "thinking");
	PG_TRY();
	{
		adk_check_thinking(obj, what);
	}
	PG_FINALLY();
	{
		json_object_put(obj);
	}
	PG_END_TRY();
	PG_RETURN_VOID();
}

/*
 * With adk.store_thoughts off, take the thoughts out of a response or a
 * streamed partial (its content's parts): a thought part with text goes,
 * but when keep_signatures, one with a thought_signature stays with its
 * text emptied (Gemini needs the signature back, not the text), and a
 * thought without text (Anthropic's redacted thinking: nothing readable)
 * stays as it is.  Returns whether anything was dropped.
 *
 * taken, when not NULL, gets what was taken, for the run that made the
 * call to send back within it (runner/thoughts.c): a new array (or NULL,
 * nothing taken) of {"at": its index in the parts, "emptied": kept with
 * its text emptied, or left out, "part": the part as it came}.
 */
bool
adk_drop_thoughts(struct json_object *response, bool keep_signatures,
				  struct json_object **taken)
{
	struct json_object *content;
	struct json_object *parts;
	struct json_object *kept;
	bool		dropped = false;
	size_t		n;
	size_t		i;

	if (taken != NULL)
		*taken = NULL;
	if (adk_store_thoughts || response == NULL ||
		!json_object_object_get_ex(response, "content", &content) ||
		!json_object_object_get_ex(content, "parts", &parts) ||
		!json_object_is_type(parts, json_type_array))
		return false;
	n = json_object_array_length(parts);
	kept = json_object_new_array();
	if (kept == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	for (i = 0; i < n; i++)
	{
		struct json_object *part = json_object_array_get_idx(parts, i);
		struct json_object *v;
		bool		emptied;

		if (json_object_object_get_ex(part, "thought", &v) &&
			json_object_is_type(v, json_type_boolean) &&
			json_object_get_boolean(v) &&
			json_object_object_get_ex(part, "text", &v) &&
			json_object_is_type(v, json_type_string) &&
			json_object_get_string_len(v) > 0)
		{
			dropped = true;
			emptied = keep_signatures &&
				json_object_object_get_ex(part, "thought_signature", NULL);
			if (taken != NULL)
				take_thought(taken, part, i, emptied);
			if (!emptied)
				continue;
			/* a copy: the part taken keeps its text */
			json_object_array_add(kept, empty_thought(part));
			continue;
		}
		json_object_array_add(kept, json_object_get(part));
	}
	if (dropped)
		json_object_object_add(content, "parts", kept);
	else
		json_object_put(kept);
	return dropped;
}

/* Append {"at", "emptied", "part"} to *taken (made when NULL) */
static void
take_thought(struct json_object **taken, struct json_object *part, size_t at,
			 bool emptied)
{
	struct json_object *t = json_object_new_object();

	if (t == NULL ||
		(*taken == NULL && (*taken = json_object_new_array()) == NULL))
	{
		json_object_put(t);
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	}
	json_object_array_add(*taken, t);
	json_object_object_add(t, "at", json_object_new_int64((int64_t) at));
	json_object_object_add(t, "emptied", json_object_new_boolean(emptied));
	json_object_object_add(t, "part", json_object_get(part));
}

/* A copy of thought part with its text "" (a new reference) */
static struct json_object *
empty_thought(struct json_object *part)
{
	struct json_object *copy = json_object_new_object();

	if (copy == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	{
		json_object_object_foreach(part, k, v)
		{
			json_object_object_add(copy, k, strcmp(k, "text") == 0 ?
								   json_object_new_string("") :
								   json_object_get(v));
		}
	}
	return copy;
}
