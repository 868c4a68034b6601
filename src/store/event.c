/*-------------------------------------------------------------------------
 *
 * event.c
 *	  Validation and normalization of ADK events before they are stored.
 *
 * event_data holds an event exactly as ADK Python's
 * Event.model_dump(exclude_none=True, mode="json") and ADK-JS write it:
 * snake_case keys, the four action maps present even when empty, and
 * long_running_tool_ids present even when empty.  This file checks the
 * shape of a caller's event and fills in what ADK would: a generated id,
 * the empty maps.  The final timestamp is set by the events trigger.
 *
 * IDENTIFICATION
 *	  src/store/event.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "common/compat.h"
#include "common/ids.h"
#include "common/jsonb_build.h"
#include "common/jsonb_util.h"
#include "store/event.h"
#include "store/event_time.h"

static const char *const action_maps[] = {
	"state_delta", "artifact_delta", "requested_auth_configs",
	"requested_tool_confirmations"
};

static void require_type(JsonbValue *v, const char *field, bool object);
static char *string_field(JsonbContainer *ev, const char *field,
						  int max_chars, bool required);
static void finish_actions(JsonbValue *actions, bool strip_temp);
static void add_field(AdkJsonbField *f, int *n, const char *key, int keylen,
					  JsonbValue *value);
static void add_string(AdkJsonbField *f, int *n, const char *key,
					   const char *value);
static void set_binary(JsonbValue *v, Jsonb *jb);
static Jsonb *empty_container(bool object);
static bool key_is(JsonbValue *k, const char *name);
static TimestampTz event_ms_to_timestamp(Numeric n);
pg_noreturn static void out_of_range(const char *what);
static bool branch_is_valid(const char *s, int len);

/* A branch: agent names joined by dots, at most this many bytes. */
#define ADK_MAX_BRANCH_BYTES	1024

/*
 * Check an event (22023 for a malformed one; the caller has rejected NULL
 * and oversized input) and fill keys.
 */
void
adk_event_check(Jsonb *event, AdkEventKeys *keys)
{
	JsonbContainer *ev = &event->root;
	JsonbValue *v;
	char		uuid[37];

	if (!adk_jsonb_is_object(ev))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("event must be a JSON object")));

	keys->id = string_field(ev, "id", ADK_MAX_ID_CHARS, false);
	keys->id_given = keys->id != NULL;
	if (keys->id == NULL)
	{
		adk_random_uuid(uuid);
		keys->id = pstrdup(uuid);
	}
	keys->invocation_id = string_field(ev, "invocation_id",
									   ADK_MAX_INVOCATION_ID_CHARS, false);
	keys->invocation_id_given = keys->invocation_id != NULL;
	if (keys->invocation_id == NULL)
		keys->invocation_id = "";
	(void) string_field(ev, "author", ADK_MAX_ID_CHARS, true);

	if ((v = adk_jsonb_get(ev, "content")) != NULL)
	{
		require_type(v, "content", true);
		if ((v = adk_jsonb_get(v->val.binary.data, "parts")) != NULL)
			require_type(v, "content.parts", false);
	}
	if ((v = adk_jsonb_get(ev, "long_running_tool_ids")) != NULL)
		require_type(v, "long_running_tool_ids", false);
	if ((v = adk_jsonb_get(ev, "actions")) != NULL && v->type != jbvNull)
	{
		JsonbValue *sd;

		require_type(v, "actions", true);
		if ((sd = adk_jsonb_get(v->val.binary.data, "state_delta")) != NULL)
			require_type(sd, "actions.state_delta", true);
	}

	keys->proposed_time = GetCurrentTimestamp();
	if ((v = adk_jsonb_get(ev, "timestamp")) != NULL)
	{
		if (v->type != jbvNumeric)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("event field \"timestamp\" must be a number of milliseconds since the Unix epoch")));
		keys->proposed_time = event_ms_to_timestamp(v->val.numeric);
	}
	adk_event_check_fields(event);
	v = adk_jsonb_get(ev, "partial");
	keys->partial = (v != NULL && v->type == jbvBool && v->val.boolean);
}

/*
 * An event's "timestamp" (epoch milliseconds) as a time, range-checked
 * before any arithmetic: ms * 1000 must not overflow.
 */
static TimestampTz
event_ms_to_timestamp(Numeric n)
{
	Datum		num = NumericGetDatum(n);
	Datum		lo = NumericGetDatum(int64_to_numeric(ADK_EVENT_MIN_MS - 1));
	Datum		hi = NumericGetDatum(int64_to_numeric(ADK_EVENT_MAX_MS + 1));
	int64		ms;

	if (DatumGetInt32(DirectFunctionCall2(numeric_cmp, num, lo)) < 0 ||
		DatumGetInt32(DirectFunctionCall2(numeric_cmp, num, hi)) > 0)
		out_of_range("event field \"timestamp\"");
	/* within 1 of the range: rounding to an integer cannot overflow */
	ms = DatumGetInt64(DirectFunctionCall1(numeric_int8, num));
	if (ms < ADK_EVENT_MIN_MS || ms > ADK_EVENT_MAX_MS)
		out_of_range("event field \"timestamp\"");
	return adk_epoch_ms_to_timestamp(ms);
}

/*
 * The checks every stored event gets, whoever writes it (adk_event_check,
 * and the events trigger for other runtimes' INSERTs): its nesting depth,
 * "partial" a boolean, "branch" agent names joined by dots.
 */
void
adk_event_check_fields(Jsonb *event)
{
	JsonbContainer *ev = &event->root;
	JsonbValue *v;

	/*
	 * Each level of jsonb nesting takes at least 8 bytes (a container header
	 * and the JEntry of its one element), so a small event is never too deep
	 * and is not walked.
	 */
	if (VARSIZE(event) > ADK_MAX_JSON_DEPTH * 8 &&
		adk_jsonb_depth(ev, ADK_MAX_JSON_DEPTH) > ADK_MAX_JSON_DEPTH)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("event is nested too deeply"),
				 errdetail("At most %d levels of nesting are accepted (the event object itself is the first).",
						   ADK_MAX_JSON_DEPTH)));

	if ((v = adk_jsonb_get(ev, "partial")) != NULL && v->type != jbvNull &&
		v->type != jbvBool)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("event field \"partial\" must be a boolean")));

	/* ADK's isolation scope: the id of the call that delegated a task */
	if ((v = adk_jsonb_get(ev, "isolation_scope")) != NULL &&
		v->type != jbvNull && v->type != jbvString)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("event field \"isolation_scope\" must be a string")));

	if ((v = adk_jsonb_get(ev, "branch")) != NULL && v->type != jbvNull &&
		(v->type != jbvString ||
		 !branch_is_valid(v->val.string.val, v->val.string.len)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("event field \"branch\" must be agent names joined by dots"),
				 errdetail("Each name is letters, digits, \"_\" or \"-\" (or other printable non-ASCII characters), and may end in \"@\" and a node's key (translator@1); the branch has at most %d bytes.",
						   ADK_MAX_BRANCH_BYTES)));
}

/*
 * 22008 for a time no event may have (see store/event_time.h).
 */
void
adk_check_event_time(TimestampTz ts)
{
	if (!adk_event_time_in_range(ts))
		out_of_range("event timestamp");
}

static void
out_of_range(const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("%s is out of range", what),
			 errdetail("Event times are milliseconds since the Unix epoch from %lld to %lld (years 1 to 9999 UTC).",
					   (long long) ADK_EVENT_MIN_MS,
					   (long long) ADK_EVENT_MAX_MS)));
}

/*
 * ADK's branch: "root.child.grandchild".  A name may end in "@" and a
 * node's key, as ADK-Go's node branches do ("translator@1").  Names are agent names; other
 * runtimes allow non-ASCII letters in them, so any printable non-ASCII
 * character passes, but no empty name, space, punctuation or control
 * character.
 */
static bool
branch_is_valid(const char *s, int len)
{
	int			seglen = 0;
	bool		at_seen = false;
	int			i;

	if (len == 0 || len > ADK_MAX_BRANCH_BYTES ||
		!adk_id_is_printable(s, len))
		return false;
	for (i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) s[i];

		if (c == '.')
		{
			if (seglen == 0)
				return false;
			seglen = 0;
			at_seen = false;
			continue;
		}
		if (c == '@')
		{
			/* a node of the name: "translator@1" (ADK-Go) */
			if (seglen == 0 || at_seen)
				return false;
			at_seen = true;
			seglen = 0;
			continue;
		}
		if (!(c >= 0x80 || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return false;
		seglen++;
	}
	return seglen > 0;
}

/*
 * The event as stored: the caller's event with what ADK fills in (id,
 * invocation_id, the empty action maps, long_running_tool_ids), the final
 * time as epoch milliseconds (unless time is 0: a partial event keeps its
 * own), and actions.state_delta without its temp: keys when strip_temp.
 * Only the top level and "actions" are rebuilt; every other nested value
 * is copied as stored (common/jsonb_build.c).
 */
Jsonb *
adk_event_finish(Jsonb *event, AdkEventKeys *keys, TimestampTz time,
				 bool strip_temp)
{
	int			max = JsonContainerSize(&event->root) + 5;
	AdkJsonbField *f = palloc(max * sizeof(AdkJsonbField));
	int			n = 0;
	JsonbIterator *it = JsonbIteratorInit(&event->root);
	JsonbIteratorToken tok;
	JsonbValue	k;
	JsonbValue	v;
	bool		saw_actions = false;
	bool		saw_lrti = false;
	Jsonb	   *result;

	while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE)
	{
		if (tok != WJB_KEY)
			continue;			/* the object's own begin and end */
		(void) JsonbIteratorNext(&it, &v, true);

		/* replaced below */
		if ((time != 0 && key_is(&k, "timestamp")) ||
			(!keys->id_given && key_is(&k, "id")) ||
			(!keys->invocation_id_given && key_is(&k, "invocation_id")))
			continue;
		if (key_is(&k, "actions"))
		{
			saw_actions = true;
			finish_actions(&v, strip_temp);
		}
		else if (key_is(&k, "long_running_tool_ids"))
			saw_lrti = true;
		add_field(f, &n, k.val.string.val, k.val.string.len, &v);
	}

	if (!keys->id_given)
		add_string(f, &n, "id", keys->id);
	if (!keys->invocation_id_given)
		add_string(f, &n, "invocation_id", "");
	if (!saw_actions)
	{
		v.type = jbvNull;
		finish_actions(&v, false);
		add_field(f, &n, "actions", 7, &v);
	}
	if (!saw_lrti)
	{
		set_binary(&v, empty_container(false));
		add_field(f, &n, "long_running_tool_ids", 21, &v);
	}
	if (time != 0)
	{
		v.type = jbvNumeric;
		v.val.numeric = int64_to_numeric(adk_timestamp_to_epoch_ms(time));
		add_field(f, &n, "timestamp", 9, &v);
	}
	result = adk_jsonb_build_object(f, n);
	return result;
}

/*
 * Replace *actions (an object, or JSON null for none) by the value to
 * store: the four action maps added where missing, state_delta without
 * temp: keys when strip_temp.  An object that needs neither stays as it is.
 */
static void
finish_actions(JsonbValue *actions, bool strip_temp)
{
	AdkJsonbField f[32 + lengthof(action_maps)];
	bool		seen[lengthof(action_maps)] = {false};
	int			n = 0;
	int			nseen = 0;
	size_t		i;

	if (actions->type == jbvBinary)
	{
		JsonbIterator *it;
		JsonbIteratorToken tok;
		JsonbValue	k;
		JsonbValue	v;
		AdkJsonbField *many = f;

		for (i = 0; i < lengthof(action_maps); i++)
			if (adk_jsonb_get(actions->val.binary.data, action_maps[i]) != NULL)
				nseen++;
		if (nseen == lengthof(action_maps) && !strip_temp)
			return;				/* already as ADK stores it */

		if (JsonContainerSize(actions->val.binary.data) > 32)
			many = palloc((JsonContainerSize(actions->val.binary.data) +
						   lengthof(action_maps)) * sizeof(AdkJsonbField));
		it = JsonbIteratorInit(actions->val.binary.data);
		while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE)
		{
			if (tok != WJB_KEY)
				continue;
			(void) JsonbIteratorNext(&it, &v, true);
			for (i = 0; i < lengthof(action_maps); i++)
				if (key_is(&k, action_maps[i]))
					seen[i] = true;
			if (strip_temp && key_is(&k, "state_delta") && v.type == jbvBinary)
				set_binary(&v, adk_jsonb_without_temp(v.val.binary.data));
			add_field(many, &n, k.val.string.val, k.val.string.len, &v);
		}
		for (i = 0; i < lengthof(action_maps); i++)
		{
			JsonbValue	empty;

			if (seen[i])
				continue;
			set_binary(&empty, empty_container(true));
			add_field(many, &n, action_maps[i], strlen(action_maps[i]), &empty);
		}
		set_binary(actions, adk_jsonb_build_object(many, n));
		return;
	}

	for (i = 0; i < lengthof(action_maps); i++)
	{
		JsonbValue	empty;

		set_binary(&empty, empty_container(true));
		add_field(f, &n, action_maps[i], strlen(action_maps[i]), &empty);
	}
	set_binary(actions, adk_jsonb_build_object(f, n));
}

static void
add_field(AdkJsonbField *f, int *n, const char *key, int keylen,
		  JsonbValue *value)
{
	f[*n].key = key;
	f[*n].keylen = keylen;
	f[*n].value = *value;
	(*n)++;
}

static void
add_string(AdkJsonbField *f, int *n, const char *key, const char *value)
{
	JsonbValue	v;

	v.type = jbvString;
	v.val.string.val = (char *) value;
	v.val.string.len = strlen(value);
	add_field(f, n, key, strlen(key), &v);
}

/* *v = the jsonb jb as a binary value */
static void
set_binary(JsonbValue *v, Jsonb *jb)
{
	v->type = jbvBinary;
	v->val.binary.data = &jb->root;
	v->val.binary.len = VARSIZE(jb) - VARHDRSZ;
}

/* {} or [], made once */
static Jsonb *
empty_container(bool object)
{
	static Jsonb *empty[2];

	if (empty[object] == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
		JsonbParseState *st = NULL;

		pushJsonbValue(&st, object ? WJB_BEGIN_OBJECT : WJB_BEGIN_ARRAY, NULL);
		empty[object] = JsonbValueToJsonb(pushJsonbValue(&st,
														 object ? WJB_END_OBJECT : WJB_END_ARRAY,
														 NULL));
		MemoryContextSwitchTo(old);
	}
	return empty[object];
}


static bool
key_is(JsonbValue *k, const char *name)
{
	size_t		len = strlen(name);

	return k->val.string.len == (int) len &&
		memcmp(k->val.string.val, name, len) == 0;
}


static void
require_type(JsonbValue *v, const char *field, bool object)
{
	bool		ok = v->type == jbvBinary &&
		(object ? JsonContainerIsObject(v->val.binary.data) :
		 JsonContainerIsArray(v->val.binary.data)) &&
		!JsonContainerIsScalar(v->val.binary.data);

	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("event field \"%s\" must be a JSON %s", field,
						object ? "object" : "array")));
}

/*
 * A string field checked like an id; NULL when absent and not required.
 */
static char *
string_field(JsonbContainer *ev, const char *field, int max_chars,
			 bool required)
{
	JsonbValue *v = adk_jsonb_get(ev, field);
	char	   *what;

	if (v == NULL || v->type == jbvNull)
	{
		if (required)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("event field \"%s\" is required", field)));
		return NULL;
	}
	if (v->type != jbvString)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("event field \"%s\" must be a string", field)));
	/* the message's subject is built only when the quick check fails */
	if (v->val.string.len == 0 || v->val.string.len > max_chars ||
		!adk_id_is_printable(v->val.string.val, v->val.string.len))
	{
		what = psprintf("event field \"%s\"", field);
		adk_check_id_cstring(what, v->val.string.val, v->val.string.len,
							 max_chars);
	}
	return pnstrdup(v->val.string.val, v->val.string.len);
}

