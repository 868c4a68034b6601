/*-------------------------------------------------------------------------
 *
 * jsonb_build.c
 *	  Build a jsonb object from its top-level fields, copying nested
 *	  objects and arrays as they are stored instead of re-encoding them.
 *
 * Every stored event is the caller's event with a few top-level fields
 * added or replaced (id, timestamp, the action maps).  Going through
 * pushJsonbValue would decode every nested value of the event into a tree
 * and encode it again; this writes the one new top-level container and
 * copies each nested container's bytes.  That is what JsonbValueToJsonb
 * itself does with a binary value at the top: a container is position
 * independent once it starts at a 4-byte boundary.  The layout written
 * here is convertJsonbObject's (utils/adt/jsonb_util.c): the header, the
 * keys' JEntries then the values', every JB_OFFSET_STRIDE'th one holding
 * an end offset instead of a length; keys sorted by length, then bytes;
 * numerics and containers padded to a 4-byte boundary, the padding counted
 * in their length.  The result is byte for byte what the slow path gives.
 *
 * IDENTIFICATION
 *	  src/common/jsonb_build.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"

#include "common/jsonb_build.h"

static int	field_cmp(const void *a, const void *b);
static int	pad_to_int(StringInfo buf);
static JEntry append_value(StringInfo buf, const JsonbValue *v);

/*
 * The object with fields[0..n-1] (n >= 0).  A value is a scalar (string,
 * numeric, bool, null) or a jbvBinary object or array.  When a key occurs
 * more than once the last field wins, as in jsonb_in.  Sorts fields.
 */
Jsonb *
adk_jsonb_build_object(AdkJsonbField *fields, int n)
{
	StringInfoData buf;
	int			nkeep = 0;
	int			jentry_offset;
	int			totallen = 0;
	uint32		header;
	int			i;
	Jsonb	   *result;

	for (i = 0; i < n; i++)
		fields[i].order = i;
	qsort(fields, n, sizeof(AdkJsonbField), field_cmp);
	/* of equal keys keep the last given: sorted last by field_cmp */
	for (i = 0; i < n; i++)
	{
		if (i + 1 < n && fields[i].keylen == fields[i + 1].keylen &&
			memcmp(fields[i].key, fields[i + 1].key, fields[i].keylen) == 0)
			continue;
		fields[nkeep++] = fields[i];
	}

	initStringInfo(&buf);
	enlargeStringInfo(&buf, VARHDRSZ + sizeof(uint32) + 2 * nkeep * sizeof(JEntry));
	buf.len = VARHDRSZ;			/* the varlena header, set at the end */
	header = nkeep | JB_FOBJECT;
	appendBinaryStringInfo(&buf, (char *) &header, sizeof(uint32));
	jentry_offset = buf.len;
	buf.len += 2 * nkeep * sizeof(JEntry);

	/* the keys, then the values, each with its JEntry */
	for (i = 0; i < 2 * nkeep; i++)
	{
		JEntry		meta;

		if (i < nkeep)
		{
			appendBinaryStringInfo(&buf, fields[i].key, fields[i].keylen);
			meta = (JEntry) fields[i].keylen;
		}
		else
			meta = append_value(&buf, &fields[i - nkeep].value);

		totallen += JBE_OFFLENFLD(meta);
		if (totallen > JENTRY_OFFLENMASK)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("total size of jsonb object elements exceeds the maximum of %u bytes",
							JENTRY_OFFLENMASK)));
		if (i % JB_OFFSET_STRIDE == 0)
			meta = (meta & JENTRY_TYPEMASK) | totallen | JENTRY_HAS_OFF;
		memcpy(buf.data + jentry_offset, &meta, sizeof(JEntry));
		jentry_offset += sizeof(JEntry);
	}

	if (buf.len - VARHDRSZ > JENTRY_OFFLENMASK)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("total size of jsonb object elements exceeds the maximum of %u bytes",
						JENTRY_OFFLENMASK)));
	result = (Jsonb *) buf.data;
	SET_VARSIZE(result, buf.len);
	return result;
}

/*
 * Append one value's data (after its padding, if it has any) and return
 * its JEntry, the length including the padding.
 */
static JEntry
append_value(StringInfo buf, const JsonbValue *v)
{
	int			pad;

	switch (v->type)
	{
		case jbvNull:
			return JENTRY_ISNULL;
		case jbvBool:
			return v->val.boolean ? JENTRY_ISBOOL_TRUE : JENTRY_ISBOOL_FALSE;
		case jbvString:
			appendBinaryStringInfo(buf, v->val.string.val, v->val.string.len);
			return (JEntry) v->val.string.len;
		case jbvNumeric:
			{
				int			len = VARSIZE_ANY(v->val.numeric);

				pad = pad_to_int(buf);
				appendBinaryStringInfo(buf, (char *) v->val.numeric, len);
				return JENTRY_ISNUMERIC | (pad + len);
			}
		case jbvBinary:
			if (JsonContainerIsScalar(v->val.binary.data))
				elog(ERROR, "a raw scalar cannot be a jsonb object's value");
			pad = pad_to_int(buf);
			appendBinaryStringInfo(buf, (char *) v->val.binary.data,
								   v->val.binary.len);
			return JENTRY_ISCONTAINER | (pad + v->val.binary.len);
		default:
			elog(ERROR, "unexpected jsonb value type %d", (int) v->type);
	}
	return 0;					/* keep the compiler quiet */
}

/* jsonb's key order: shorter first, then by bytes; then as given */
static int
field_cmp(const void *a, const void *b)
{
	const AdkJsonbField *fa = (const AdkJsonbField *) a;
	const AdkJsonbField *fb = (const AdkJsonbField *) b;
	int			r;

	if (fa->keylen != fb->keylen)
		return fa->keylen < fb->keylen ? -1 : 1;
	r = memcmp(fa->key, fb->key, fa->keylen);
	if (r != 0)
		return r;
	return fa->order < fb->order ? -1 : (fa->order > fb->order);
}

/* zero bytes up to a 4-byte boundary of the whole datum; how many */
static int
pad_to_int(StringInfo buf)
{
	int			pad = INTALIGN(buf->len) - buf->len;

	if (pad > 0)
	{
		enlargeStringInfo(buf, pad);
		memset(buf->data + buf->len, 0, pad);
		buf->len += pad;
		buf->data[buf->len] = '\0';
	}
	return pad;
}
