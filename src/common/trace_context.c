/*-------------------------------------------------------------------------
 *
 * trace_context.c
 *	  W3C Trace Context (traceparent) for adk_runner's spans.
 *
 * A traceparent is "version-trace_id-parent_id-flags" in lower-case hex.
 * Version 00 is exactly 55 characters; a later version may append fields
 * after a '-' (they are ignored, as the recommendation says); version ff,
 * upper-case hex, and all-zero trace or parent ids are invalid.
 *
 * adk_trace_current is the span the runner is in: runner/spans.c sets it,
 * the model layer reads it to send traceparent to providers, and
 * adk_current_trace() shows it to tools.  It names the invocation it
 * belongs to, and is only used while that invocation runs.
 *
 * IDENTIFICATION
 *	  src/common/trace_context.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "common/trace_context.h"

AdkTraceCurrent adk_trace_current;

/* adk_running_invocation(): the runner's string, valid while it is set */
static const char *running_invocation = NULL;

PG_FUNCTION_INFO_V1(adk_span_row_ok);

static bool lower_hex(const char *s, int n, bool *all_zero);
static int	hex_value(char c);

/*
 * Parse s; true when it is a valid traceparent.  trace_id (33 bytes),
 * parent_id (17 bytes) and flags are filled when not NULL.
 */
bool
adk_traceparent_parse(const char *s, char *trace_id, char *parent_id,
					  unsigned char *flags)
{
	size_t		len;
	bool		zero;

	if (s == NULL)
		return false;
	len = strlen(s);
	if (len < ADK_TRACEPARENT_LEN)
		return false;
	if (!lower_hex(s, 2, &zero) || strncmp(s, "ff", 2) == 0)
		return false;
	/* version 00 has exactly four fields; later ones may have more */
	if (strncmp(s, "00", 2) == 0 ? len != ADK_TRACEPARENT_LEN :
		(len > ADK_TRACEPARENT_LEN && s[ADK_TRACEPARENT_LEN] != '-'))
		return false;
	if (s[2] != '-' || s[35] != '-' || s[52] != '-')
		return false;
	if (!lower_hex(s + 3, ADK_TRACE_ID_HEX, &zero) || zero)
		return false;
	if (!lower_hex(s + 36, ADK_SPAN_ID_HEX, &zero) || zero)
		return false;
	if (!lower_hex(s + 53, 2, &zero))
		return false;
	if (trace_id)
		strlcpy(trace_id, s + 3, ADK_TRACE_ID_HEX + 1);
	if (parent_id)
		strlcpy(parent_id, s + 36, ADK_SPAN_ID_HEX + 1);
	if (flags)
		*flags = (unsigned char) (hex_value(s[53]) * 16 + hex_value(s[54]));
	return true;
}

/*
 * Raise 22023 unless s is a valid traceparent; what names it ("option
 * \"traceparent\"").
 */
void
adk_traceparent_check(const char *s, const char *what)
{
	if (!adk_traceparent_parse(s, NULL, NULL, NULL))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for %s: \"%s\"", what, s ? s : ""),
				 errdetail("A traceparent is version-trace_id-parent_id-flags in lower-case hex, e.g. 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01; the ids must not be all zeros.")));
}

/*
 * "00-trace_id-span_id-flags", palloc'd.
 */
char *
adk_traceparent_format(const char *trace_id, const char *span_id,
					   unsigned char flags)
{
	return psprintf("00-%s-%s-%02x", trace_id, span_id, flags);
}

/*
 * nbytes random bytes as 2 * nbytes lower-case hex digits (never all
 * zeros) and a NUL.
 */
void
adk_random_hex_id(char *out, int nbytes)
{
	static const char digits[] = "0123456789abcdef";
	unsigned char buf[16];
	bool		zero;
	int			i;

	Assert(nbytes <= (int) sizeof(buf));
	do
	{
		if (!pg_strong_random(buf, nbytes))
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not generate a random trace id")));
		zero = true;
		for (i = 0; i < nbytes; i++)
		{
			out[2 * i] = digits[buf[i] >> 4];
			out[2 * i + 1] = digits[buf[i] & 15];
			if (buf[i] != 0)
				zero = false;
		}
	} while (zero);
	out[2 * nbytes] = '\0';
}

void
adk_trace_set_current(const char *invocation_id, const char *trace_id,
					  const char *span_id, unsigned char flags)
{
	if (invocation_id == NULL)
	{
		adk_trace_current.set = false;
		return;
	}
	strlcpy(adk_trace_current.invocation_id, invocation_id,
			sizeof(adk_trace_current.invocation_id));
	strlcpy(adk_trace_current.trace_id, trace_id, sizeof(adk_trace_current.trace_id));
	strlcpy(adk_trace_current.span_id, span_id, sizeof(adk_trace_current.span_id));
	adk_trace_current.flags = flags;
	adk_trace_current.set = true;
}

/*
 * Is the current context the one of this (running) invocation?
 */
bool
adk_trace_current_for(const char *invocation_id)
{
	return invocation_id != NULL && adk_trace_current.set &&
		strncmp(adk_trace_current.invocation_id, invocation_id,
				sizeof(adk_trace_current.invocation_id) - 1) == 0;
}

/*
 * The current context if it is this invocation's, else NULL.
 */
const AdkTraceCurrent *
adk_trace_context_for(const char *invocation_id)
{
	return adk_trace_current_for(invocation_id) ? &adk_trace_current : NULL;
}

void
adk_running_invocation_set(const char *invocation_id)
{
	running_invocation = invocation_id;
}

const char *
adk_running_invocation(void)
{
	return running_invocation;
}

/*
 * adk._span_row_ok(trace_id, span_id, parent_span_id, kind, status_code,
 * attributes, events): the CHECK of adk.spans (sql/install/84_spans.sql).
 * trace_id: 32 and span_id: 16 lower-case hex digits, not all zeros;
 * parent_span_id: 16 lower-case hex digits; kind: an OpenTelemetry span
 * kind; status_code: UNSET, OK or ERROR; attributes a JSON object, events
 * an array.  A NULL passes, as it would a CHECK (NOT NULL is the
 * column's).  One function over the columns instead of seven expressions
 * because the executor reads every CHECK of the table from its stored
 * node tree at the start of each INSERT: this one is a fifth of the size.
 */
Datum
adk_span_row_ok(PG_FUNCTION_ARGS)
{
	static const char *const kinds[] = {"INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"};
	static const char *const codes[] = {"UNSET", "OK", "ERROR"};
	bool		zero;
	size_t		i;

	if (!PG_ARGISNULL(0))
	{
		text	   *t = PG_GETARG_TEXT_PP(0);

		if (VARSIZE_ANY_EXHDR(t) != ADK_TRACE_ID_HEX ||
			!lower_hex(VARDATA_ANY(t), ADK_TRACE_ID_HEX, &zero) || zero)
			PG_RETURN_BOOL(false);
	}
	for (i = 1; i <= 2; i++)
	{
		text	   *t;

		if (PG_ARGISNULL(i))
			continue;
		t = PG_GETARG_TEXT_PP(i);
		if (VARSIZE_ANY_EXHDR(t) != ADK_SPAN_ID_HEX ||
			!lower_hex(VARDATA_ANY(t), ADK_SPAN_ID_HEX, &zero) || (i == 1 && zero))
			PG_RETURN_BOOL(false);
	}
	if (!PG_ARGISNULL(3))
	{
		char	   *kind = text_to_cstring(PG_GETARG_TEXT_PP(3));

		for (i = 0; i < lengthof(kinds); i++)
			if (strcmp(kind, kinds[i]) == 0)
				break;
		if (i == lengthof(kinds))
			PG_RETURN_BOOL(false);
	}
	if (!PG_ARGISNULL(4))
	{
		char	   *code = text_to_cstring(PG_GETARG_TEXT_PP(4));

		for (i = 0; i < lengthof(codes); i++)
			if (strcmp(code, codes[i]) == 0)
				break;
		if (i == lengthof(codes))
			PG_RETURN_BOOL(false);
	}
	if (!PG_ARGISNULL(5))
	{
		Jsonb	   *j = PG_GETARG_JSONB_P(5);

		if (!JB_ROOT_IS_OBJECT(j))
			PG_RETURN_BOOL(false);
	}
	if (!PG_ARGISNULL(6))
	{
		Jsonb	   *j = PG_GETARG_JSONB_P(6);

		if (!JB_ROOT_IS_ARRAY(j) || JB_ROOT_IS_SCALAR(j))
			PG_RETURN_BOOL(false);
	}
	PG_RETURN_BOOL(true);
}

static bool
lower_hex(const char *s, int n, bool *all_zero)
{
	int			i;

	*all_zero = true;
	for (i = 0; i < n; i++)
	{
		if (hex_value(s[i]) < 0)
			return false;
		if (s[i] != '0')
			*all_zero = false;
	}
	return true;
}

static int
hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}
