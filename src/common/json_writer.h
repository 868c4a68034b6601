/*-------------------------------------------------------------------------
 *
 * json_writer.h
 *	  Building jsonb in palloc'd memory, value by value.
 *
 * IDENTIFICATION
 *	  src/common/json_writer.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_JSON_WRITER_H
#define ADK_JSON_WRITER_H

#include "lib/stringinfo.h"
#include "utils/palloc.h"
#include "utils/jsonb.h"

#include "common/json_limits.h"

/* slots for every level ADK_MAX_JSON_DEPTH allows, and the top (0) */
#define JW_MAX_DEPTH (ADK_MAX_JSON_DEPTH + 1)

typedef struct JsonWriter
{
	MemoryContext cxt;			/* where everything written lives */
	JsonbParseState *state;		/* the open containers */
	JsonbValue *done;			/* the top-level container, once closed */
	JsonbValue	top;			/* a top-level scalar */
	Jsonb	   *top_jsonb;		/* a top-level jsonb written as it is */
	bool		has_top;
	bool		key_pending;	/* a key was written, its value not yet */
	int			depth;
	bool		in_object[JW_MAX_DEPTH];
} JsonWriter;

extern void jw_init(JsonWriter *w);
extern void jw_begin_object(JsonWriter *w);
extern void jw_end_object(JsonWriter *w);
extern void jw_begin_array(JsonWriter *w);
extern void jw_end_array(JsonWriter *w);
extern void jw_key(JsonWriter *w, const char *key);
extern void jw_string(JsonWriter *w, const char *value);
extern void jw_int(JsonWriter *w, int64 value);
extern void jw_bool(JsonWriter *w, bool value);
extern void jw_null(JsonWriter *w);
extern void jw_jsonb(JsonWriter *w, Jsonb *value);
extern void jw_container(JsonWriter *w, JsonbContainer *c);
extern void jw_value(JsonWriter *w, JsonbValue *v);
extern Jsonb *jw_finish(JsonWriter *w);
extern char *jw_finish_text(JsonWriter *w);

#endif							/* ADK_JSON_WRITER_H */
