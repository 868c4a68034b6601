/*-------------------------------------------------------------------------
 *
 * fallback.c
 *	  Fallback models (docs/models.md, "Fallback models"): the chain of
 *	  models a call may try, which failures go on to the next one, and the
 *	  metadata of an answer that came from a fallback.
 *
 * The chain is the called model, then its adk.models.fallbacks in order,
 * each followed by its own fallbacks (depth first), each model once and at
 * most ADK_MAX_FALLBACK_CHAIN of them; the definitions are loaded when the
 * call starts (model_def.c), so going on to the next model later reads no
 * table.  The definition triggers refuse cycles; the chain skips a model
 * it holds already anyway.
 *
 * A failure goes on when the failed model's fallback_on option lists it:
 * an HTTP status ("429"), a status class ("5xx") or an error code
 * ("TIMEOUT", "CONNECTION_ERROR", ...); by default 429, 5xx and TIMEOUT,
 * what a provider's own SDK retries and a second provider can answer
 * instead.  A 4xx such as 400 is the request's fault: another model would
 * refuse it too.
 *
 * An answer from a model other than the one called carries ADK Python's
 * FallbackPlugin keys in custom_metadata: fallback_triggered,
 * original_model, fallback_model, fallback_attempt and error_code.
 *
 * IDENTIFICATION
 *	  src/model/fallback.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/jsonb.h"

#include <json-c/json.h>

#include "common/jsonb_util.h"
#include "model/fallback.h"

static const char *const default_fallback_on[] = {"429", "5xx", "TIMEOUT"};

static bool matches(const char *entry, long http_status, const char *error_code);
static void add_to_chain(AdkModelDef *chain, int *n, const char *name);

/*
 * The chain of models of a call to first (first included, at [0]); *n is
 * its length.  Loading a fallback's definition raises as loading the
 * called model's would (an unknown model, a key that may not be used).
 */
AdkModelDef *
adk_fallback_chain(const AdkModelDef *first, int *n)
{
	AdkModelDef *chain = palloc0(sizeof(AdkModelDef) * ADK_MAX_FALLBACK_CHAIN);
	int			i;

	chain[0] = *first;
	*n = 1;
	for (i = 0; i < first->nfallbacks; i++)
		add_to_chain(chain, n, first->fallbacks[i]);
	return chain;
}

/* name and, depth first, its fallbacks: those not in the chain yet */
static void
add_to_chain(AdkModelDef *chain, int *n, const char *name)
{
	AdkModelDef *def;
	int			i;

	if (*n >= ADK_MAX_FALLBACK_CHAIN)
		return;
	for (i = 0; i < *n; i++)
		if (strcmp(chain[i].name, name) == 0)
			return;
	def = &chain[(*n)++];
	adk_load_model(name, def);
	for (i = 0; i < def->nfallbacks; i++)
		add_to_chain(chain, n, def->fallbacks[i]);
}

/*
 * Does a failure of def -- the HTTP status of its last attempt (0: none)
 * and the transport error code (NULL: none) -- go on to the next model?
 * Its fallback_on option says; the models' trigger keeps it an array of
 * strings.
 */
bool
adk_fallback_fails_over(const AdkModelDef *def, long http_status,
						const char *error_code)
{
	JsonbValue *on = adk_jsonb_get(&def->options->root, "fallback_on");
	size_t		i;

	if (error_code == NULL && http_status >= 200 && http_status < 400)
		return false;			/* an answer (a 3xx is not followed) */
	if (on == NULL || on->type != jbvBinary)
	{
		for (i = 0; i < lengthof(default_fallback_on); i++)
			if (matches(default_fallback_on[i], http_status, error_code))
				return true;
		return false;
	}
	{
		JsonbIterator *it = JsonbIteratorInit(on->val.binary.data);
		JsonbValue	v;
		JsonbIteratorToken tok;
		bool		found = false;

		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		{
			if (tok != WJB_ELEM || v.type != jbvString || found)
				continue;
			found = matches(pnstrdup(v.val.string.val, v.val.string.len),
							http_status, error_code);
		}
		return found;
	}
}

/*
 * One fallback_on entry against a failure: "503" an HTTP status, "5xx" a
 * class of them (both only for an HTTP answer, not a transport failure),
 * anything else the transport's error code.
 */
static bool
matches(const char *entry, long http_status, const char *error_code)
{
	if (error_code != NULL)
		return strcmp(entry, error_code) == 0;
	if (http_status <= 0 || strlen(entry) != 3 || entry[0] < '1' || entry[0] > '5')
		return false;
	if (strcmp(entry + 1, "xx") == 0)
		return http_status / 100 == entry[0] - '0';
	return strspn(entry, "0123456789") == 3 && http_status == atol(entry);
}

/*
 * The keys ADK Python's FallbackPlugin sets, added to the answer's
 * custom_metadata (made when it has none): the model called, the one that
 * answered, how many models were gone past (attempt) and the error that
 * made the first of them go on.
 */
void
adk_fallback_annotate(struct json_object *result, const char *original_model,
					  const char *fallback_model, int attempt,
					  const char *error_code)
{
	struct json_object *meta;

	if (!json_object_object_get_ex(result, "custom_metadata", &meta) ||
		!json_object_is_type(meta, json_type_object))
	{
		meta = json_object_new_object();
		if (meta == NULL || json_object_object_add(result, "custom_metadata", meta) != 0)
		{
			json_object_put(meta);
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory")));
		}
	}
	if (json_object_object_add(meta, "fallback_triggered", json_object_new_boolean(1)) != 0 ||
		json_object_object_add(meta, "original_model", json_object_new_string(original_model)) != 0 ||
		json_object_object_add(meta, "fallback_model", json_object_new_string(fallback_model)) != 0 ||
		json_object_object_add(meta, "fallback_attempt", json_object_new_int(attempt)) != 0 ||
		json_object_object_add(meta, "error_code", json_object_new_string(error_code)) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
}
