/*-------------------------------------------------------------------------
 *
 * parts.c
 *	  Reading the runner's JSON: a string field of an object, and the parts
 *	  of a content (or of an event's content), one object part at a time.
 *	  Every file of the runner that walks parts or reads a string field
 *	  does it through here.
 *
 * IDENTIFICATION
 *	  src/runner/parts.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/jsonb_util.h"
#include "runner/runner.h"

/*
 * The string at key of object c, copied into the current memory context;
 * NULL when there is none or it is no string.
 */
char *
adk_jstr(JsonbContainer *c, const char *key)
{
	JsonbValue *v = adk_jsonb_get(c, key);

	if (v == NULL || v->type != jbvString)
		return NULL;
	return pnstrdup(v->val.string.val, v->val.string.len);
}

/*
 * The "parts" of content (a Content object), or NULL when it has none.
 */
JsonbContainer *
adk_content_parts(JsonbContainer *content)
{
	JsonbValue *parts = adk_jsonb_get(content, "parts");

	if (parts == NULL || parts->type != jbvBinary ||
		!JsonContainerIsArray(parts->val.binary.data))
		return NULL;
	return parts->val.binary.data;
}

/*
 * The parts of an event's (or a model response's) content, or NULL.
 */
JsonbContainer *
adk_event_parts(JsonbContainer *event)
{
	JsonbValue *content = adk_jsonb_get(event, "content");

	if (content == NULL || content->type != jbvBinary)
		return NULL;
	return adk_content_parts(content->val.binary.data);
}

/*
 * Start walking parts (NULL: there is nothing to walk).
 */
void
adk_parts_begin(AdkParts *p, JsonbContainer *parts)
{
	p->it = parts != NULL ? JsonbIteratorInit(parts) : NULL;
}

/*
 * The next part that is an object, in *part (pointing into the parts'
 * Jsonb); false when there is none left.  A walk stopped early leaves its
 * iterator to the current memory context.
 */
bool
adk_parts_next(AdkParts *p, JsonbContainer **part)
{
	JsonbValue	v;
	JsonbIteratorToken tok;

	if (p->it == NULL)
		return false;
	while ((tok = JsonbIteratorNext(&p->it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_ELEM && v.type == jbvBinary)
		{
			*part = v.val.binary.data;
			return true;
		}
	}
	p->it = NULL;
	return false;
}
