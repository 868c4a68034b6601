/*-------------------------------------------------------------------------
 *
 * ids.c
 *	  Validation of ADK identities.
 *
 * ADK's session tables key everything on varchar(191) columns, so an id is
 * a non-empty string of at most 191 characters.  A NULL is rejected with
 * SQLSTATE 22004, everything else with 22023 (invalid_parameter_value).
 * NUL bytes cannot reach us: neither text nor jsonb can hold them.  Control
 * characters (C0, DEL and, in a UTF-8 database, C1) are refused too: ids
 * are written into log lines, NOTIFY payloads and error messages, where a
 * newline or an escape sequence would forge or hide lines.
 *
 * IDENTIFICATION
 *	  src/common/ids.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"

#include "common/compat.h"
#include "common/ids.h"

/*
 * Check a text identity and return it as a palloc'd C string.
 * "what" names the argument in messages ("session id").
 */
char *
adk_check_id(const char *what, text *value, int max_chars)
{
	if (value == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", what)));

	adk_check_id_cstring(what, VARDATA_ANY(value), VARSIZE_ANY_EXHDR(value),
						 max_chars);
	return text_to_cstring(value);
}

/*
 * Check an identity given as bytes (not necessarily NUL-terminated).
 */
void
adk_check_id_cstring(const char *what, const char *value, int len,
					 int max_chars)
{
	int			nchars;

	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be empty", what)));

	if (memchr(value, '\0', len) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not contain NUL bytes", what)));

	if (!adk_id_is_printable(value, len))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not contain control characters", what)));

	nchars = len <= max_chars ? len : pg_mbstrlen_with_len(value, len);
	if (nchars > max_chars)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s is too long", what),
				 errdetail("It has %d characters; the limit is %d.",
						   nchars, max_chars)));
}

/*
 * True when value has no control character: no byte below 0x20, no DEL,
 * and in a UTF-8 database no C1 control (U+0080..U+009F, encoded as 0xC2
 * 0x80..0x9F).
 */
bool
adk_id_is_printable(const char *value, int len)
{
	const unsigned char *p = (const unsigned char *) value;
	bool		utf8 = GetDatabaseEncoding() == PG_UTF8;
	int			i;

	for (i = 0; i < len; i++)
	{
		if (p[i] < 0x20 || p[i] == 0x7f)
			return false;
		if (utf8 && p[i] == 0xc2 && i + 1 < len && p[i + 1] >= 0x80 &&
			p[i + 1] <= 0x9f)
			return false;
	}
	return true;
}

/*
 * A random version-4 UUID in its canonical text form.
 *
 * Every stored event without an id gets one, so the random bytes are drawn
 * from pg_strong_random a block at a time rather than 16 at a time (each
 * call takes OpenSSL's locks), and formatted without snprintf.  The block
 * belongs to the process that drew it: a forked child draws its own.
 */
#define UUID_BLOCK 512

void
adk_random_uuid(char *buf)
{
	static const char hex[] = "0123456789abcdef";
	static unsigned char block[UUID_BLOCK];
	static int	used = UUID_BLOCK;
	static int	owner_pid = 0;
	unsigned char b[16];
	int			i;
	char	   *p = buf;

	if (used + 16 > UUID_BLOCK || owner_pid != MyProcPid)
	{
		if (!pg_strong_random(block, sizeof(block)))
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not generate random values")));
		used = 0;
		owner_pid = MyProcPid;
	}
	memcpy(b, block + used, 16);
	memset(block + used, 0, 16);
	used += 16;

	b[6] = (b[6] & 0x0f) | 0x40;
	b[8] = (b[8] & 0x3f) | 0x80;
	for (i = 0; i < 16; i++)
	{
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		*p++ = hex[b[i] >> 4];
		*p++ = hex[b[i] & 0x0f];
	}
	*p = '\0';
}

PG_FUNCTION_INFO_V1(adk_check_id_sql);

/*
 * adk._check_id(what text, value text) RETURNS text: the same checks for
 * the SQL-language parts of the extension.
 */
Datum
adk_check_id_sql(PG_FUNCTION_ARGS)
{
	char	   *what = PG_ARGISNULL(0) ? "id" : text_to_cstring(PG_GETARG_TEXT_PP(0));

	(void) adk_check_id(what, PG_ARGISNULL(1) ? NULL : PG_GETARG_TEXT_PP(1),
						ADK_MAX_ID_CHARS);
	PG_RETURN_DATUM(PG_GETARG_DATUM(1));
}
