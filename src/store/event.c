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
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "adk_runner.h"
#include "common/ids.h"
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
static Jsonb *normalized_actions(JsonbValue *actions);
static void push_string(JsonbParseState **st, const char *key,
						const char *val);
static bool actions_complete(JsonbValue *actions);

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
		keys->proposed_time =
			adk_epoch_ms_to_timestamp(DatumGetInt64(DirectFunctionCall1(numeric_int8,
																		NumericGetDatum(v->val.numeric))));
	}
	v = adk_jsonb_get(ev, "partial");
	keys->partial = (v != NULL && v->type == jbvBool && v->val.boolean);
}

/*
 * The event as stored, in one rebuild: what ADK fills in (id,
 * invocation_id, the empty action maps, long_running_tool_ids), the final
 * time as epoch milliseconds (unless time is 0: a partial event), and
 * actions.state_delta without its temp: keys when strip_temp.
 */
Jsonb *
adk_event_finish(Jsonb *event, AdkEventKeys *keys, TimestampTz time,
				 bool strip_temp)
{
	JsonbContainer *ev = &event->root;
	JsonbValue *actions = adk_jsonb_get(ev, "actions");
	JsonbParseState *st = NULL;
	JsonbValue	k;
	JsonbValue	v;
	bool		actions_ok = actions_complete(actions) && !strip_temp;

	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	if (!keys->id_given)
		push_string(&st, "id", keys->id);
	if (!keys->invocation_id_given)
		push_string(&st, "invocation_id", "");
	if (!actions_ok)
	{
		Jsonb	   *merged = normalized_actions(actions);

		if (strip_temp)
		{
			JsonbValue *sd = adk_jsonb_get(&merged->root, "state_delta");
			Jsonb	   *clean = adk_jsonb_without_temp(sd->val.binary.data);

			v.type = jbvBinary;
			v.val.binary.data = &clean->root;
			v.val.binary.len = VARSIZE(clean) - VARHDRSZ;
			merged = adk_jsonb_concat(merged, adk_jsonb_one_value("state_delta", &v));
		}
		k.type = jbvString;
		k.val.string.val = "actions";
		k.val.string.len = 7;
		pushJsonbValue(&st, WJB_KEY, &k);
		v.type = jbvBinary;
		v.val.binary.data = &merged->root;
		v.val.binary.len = VARSIZE(merged) - VARHDRSZ;
		pushJsonbValue(&st, WJB_VALUE, &v);
	}
	if (adk_jsonb_get(ev, "long_running_tool_ids") == NULL)
	{
		k.type = jbvString;
		k.val.string.val = "long_running_tool_ids";
		k.val.string.len = strlen(k.val.string.val);
		pushJsonbValue(&st, WJB_KEY, &k);
		pushJsonbValue(&st, WJB_BEGIN_ARRAY, NULL);
		pushJsonbValue(&st, WJB_END_ARRAY, NULL);
	}
	if (time != 0)
	{
		k.type = jbvString;
		k.val.string.val = "timestamp";
		k.val.string.len = 9;
		pushJsonbValue(&st, WJB_KEY, &k);
		v.type = jbvNumeric;
		v.val.numeric = int64_to_numeric(adk_timestamp_to_epoch_ms(time));
		pushJsonbValue(&st, WJB_VALUE, &v);
	}
	return adk_jsonb_concat(event,
							JsonbValueToJsonb(pushJsonbValue(&st, WJB_END_OBJECT, NULL)));
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
	what = psprintf("event field \"%s\"", field);
	adk_check_id_cstring(what, v->val.string.val, v->val.string.len,
						 max_chars);
	return pnstrdup(v->val.string.val, v->val.string.len);
}

/*
 * The four empty action maps, overlaid with the event's own actions.
 */
static Jsonb *
normalized_actions(JsonbValue *actions)
{
	JsonbParseState *st = NULL;
	JsonbValue	k;
	Jsonb	   *defaults;
	JsonbValue *sd;
	size_t		i;

	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	for (i = 0; i < lengthof(action_maps); i++)
	{
		k.type = jbvString;
		k.val.string.val = (char *) action_maps[i];
		k.val.string.len = strlen(action_maps[i]);
		pushJsonbValue(&st, WJB_KEY, &k);
		pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
		pushJsonbValue(&st, WJB_END_OBJECT, NULL);
	}
	defaults = JsonbValueToJsonb(pushJsonbValue(&st, WJB_END_OBJECT, NULL));
	if (actions == NULL || actions->type == jbvNull)
		return defaults;

	(void) sd;
	return adk_jsonb_concat(defaults, JsonbValueToJsonb(actions));
}

/*
 * Does an actions object already hold the four maps (and a valid
 * state_delta)?
 */
static bool
actions_complete(JsonbValue *actions)
{
	size_t		i;
	JsonbValue *sd;

	if (actions == NULL || actions->type != jbvBinary ||
		!adk_jsonb_is_object(actions->val.binary.data))
		return false;
	for (i = 0; i < lengthof(action_maps); i++)
		if (adk_jsonb_get(actions->val.binary.data, action_maps[i]) == NULL)
			return false;
	(void) sd;
	return true;
}

static void
push_string(JsonbParseState **st, const char *key, const char *val)
{
	JsonbValue	v;

	v.type = jbvString;
	v.val.string.val = (char *) key;
	v.val.string.len = strlen(key);
	pushJsonbValue(st, WJB_KEY, &v);
	v.val.string.val = (char *) val;
	v.val.string.len = strlen(val);
	pushJsonbValue(st, WJB_VALUE, &v);
}
