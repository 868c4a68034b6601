/*-------------------------------------------------------------------------
 *
 * model_def.c
 *	  Load a model definition and resolve its API key.
 *
 * A key comes from one of two places:
 *	- adk.secrets, read as the owner of schema adk (callers cannot read
 *	  that table), and only when the model's endpoint is one the secret's
 *	  allowed_hosts bind it to -- so a model pointed at another host cannot
 *	  carry the key there;
 *	- a server environment variable named by the model, and only one of
 *	  those listed in adk.allowed_key_env (superuser-only), so defining a
 *	  model is no way to read the server's other environment variables;
 *	  and only to a host adk.env_key_hosts (superuser-only) binds that
 *	  variable to, as allowed_hosts binds a secret, so a model pointed at
 *	  another endpoint cannot carry the server's key there.
 * A key never appears in an error message, a log line or a table.  The
 * endpoint is read by libcurl's URL parser and compared by scheme, host
 * and port with the binding's entries (endpoint.c); an endpoint libcurl
 * cannot read is refused.
 *
 * Every model call needs its definition, so what the query returns is kept
 * per backend, by model name.  Statement triggers on adk.models and
 * adk.secrets send a relcache invalidation of their table whenever a row
 * changes (adk._definitions_changed), which empties the cache here: in the
 * writing backend at its next command, in others when the write commits,
 * and nowhere if it rolls back.  The environment-variable rule is checked
 * at every call (adk.allowed_key_env and adk.env_key_hosts can change at
 * any time).
 *
 * IDENTIFICATION
 *	  src/model/model_def.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <stdlib.h>

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "common/owner.h"
#include "model/endpoint.h"
#include "model/model_def.h"

char	   *adk_allowed_key_env = NULL;
char	   *adk_env_key_hosts = NULL;

static SPIPlanPtr load_plan = NULL;

/* A model's row as read, with its secret's host check done. */
typedef struct CachedModel
{
	char	   *name;
	char	   *provider_name;
	char	   *endpoint;
	char	   *model;
	Jsonb	   *options;
	char	   *key_env;		/* NULL: none */
	char	   *api_key;		/* from adk.secrets; NULL: none */
	int			nfallbacks;
	char	  **fallbacks;		/* adk.models.fallbacks, in order */
	int			schema_with_tools;	/* output_schema_with_tools: 1, 0, -1 unset */
} CachedModel;

#define MAX_CACHED_MODELS 64

static MemoryContext cache_cxt = NULL;
static List *cache = NIL;
static Oid	models_relid = InvalidOid;
static Oid	secrets_relid = InvalidOid;

static CachedModel *read_model(const char *name);
static void forget_models(Datum arg, Oid relid);

static bool env_name_allowed(const char *name);
static void parse_endpoint(const char *name, const char *endpoint,
						   AdkEndpoint *ep);
static bool env_host_allowed(const char *name, const AdkEndpoint *ep);
static char *get_text(int col);
static void read_fallbacks(CachedModel *m, int col);
static int	read_capability(int col, const char *key);

/* sql/install/88_store_statements.sql */
#define LOAD_SQL "SELECT * FROM adk._model_definition($1)"

/*
 * Read model "name" into def (palloc'd in the current context).
 */
void
adk_load_model(const char *name, AdkModelDef *def)
{
	CachedModel *m = NULL;
	ListCell   *lc;
	int			i;

	foreach(lc, cache)
	{
		CachedModel *c = (CachedModel *) lfirst(lc);

		if (strcmp(c->name, name) == 0)
		{
			m = c;
			break;
		}
	}
	if (m == NULL)
		m = read_model(name);

	memset(def, 0, sizeof(*def));
	def->name = pstrdup(m->name);
	def->provider_name = pstrdup(m->provider_name);
	def->endpoint = pstrdup(m->endpoint);
	def->model = pstrdup(m->model);
	def->options = (Jsonb *) palloc(VARSIZE(m->options));
	memcpy(def->options, m->options, VARSIZE(m->options));
	def->api_key = m->api_key ? pstrdup(m->api_key) : NULL;
	def->nfallbacks = m->nfallbacks;
	def->fallbacks = palloc(sizeof(char *) * (m->nfallbacks + 1));
	for (i = 0; i < m->nfallbacks; i++)
		def->fallbacks[i] = pstrdup(m->fallbacks[i]);

	if (llm_provider_from_name(def->provider_name, &def->provider) != 0)
		elog(ERROR, "unknown provider \"%s\"", def->provider_name);

	/*
	 * Unset, a structured output schema goes with tools where the provider
	 * documents it for every model: OpenAI's strict json_schema response
	 * format does; Gemini's depends on the model (docs/models.md)
	 */
	def->schema_with_tools = m->schema_with_tools >= 0 ? m->schema_with_tools == 1 :
		def->provider == LLM_OPENAI;

	if (m->key_env != NULL)
	{
		const char *value;
		AdkEndpoint ep;

		if (!env_name_allowed(m->key_env))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("model \"%s\" may not read environment variable \"%s\"",
							name, m->key_env),
					 errhint("A superuser can add it to \"adk.allowed_key_env\".")));
		value = getenv(m->key_env);
		if (value == NULL || value[0] == '\0')
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("environment variable \"%s\" of model \"%s\" is not set in the server",
							m->key_env, name)));
		parse_endpoint(name, m->endpoint, &ep);
		if (!env_host_allowed(m->key_env, &ep))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("environment variable \"%s\" may not be sent to host \"%s\"",
							m->key_env, adk_endpoint_hostport(&ep)),
					 errdetail("Model \"%s\" points at that host, which \"adk.env_key_hosts\" does not bind to the variable.",
							   name),
					 errhint("A superuser can add \"%s=<host>\" to \"adk.env_key_hosts\", or point the model elsewhere.",
							 m->key_env)));
		def->api_key = pstrdup(value);
	}
}

/*
 * Read model "name" from adk.models (and its secret), check that the
 * secret may go to the model's host, and keep the result.
 */
static CachedModel *
read_model(const char *name)
{
	AdkOwnerSave save;
	Datum		arg = CStringGetTextDatum(name);
	MemoryContext spi;
	CachedModel *m;
	char	   *secret;
	char	   *endpoint;
	bool		isnull;
	bool		host_ok = false;
	AdkEndpoint ep;

	if (cache_cxt == NULL)
	{
		cache_cxt = AllocSetContextCreate(CacheMemoryContext,
										  "adk model definitions",
										  ALLOCSET_SMALL_SIZES);
		CacheRegisterRelcacheCallback(forget_models, (Datum) 0);
	}
	/* the relations whose invalidation empties the cache */
	models_relid = get_relname_relid("models", get_namespace_oid("adk", false));
	secrets_relid = get_relname_relid("secrets", get_namespace_oid("adk", false));

	adk_owner_spi_begin(&save);
	if (load_plan == NULL)
	{
		Oid			types[1] = {TEXTOID};

		load_plan = SPI_prepare(LOAD_SQL, 1, types);
		if (load_plan == NULL)
			elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
		SPI_keepplan(load_plan);
	}
	if (SPI_execute_plan(load_plan, &arg, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read adk.models");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("model \"%s\" does not exist", name),
				 errhint("Define it with adk_define_model().")));

	secret = get_text(6);
	if (secret != NULL)
	{
		Datum		hosts = SPI_getbinval(SPI_tuptable->vals[0],
										  SPI_tuptable->tupdesc, 8, &isnull);

		endpoint = get_text(2);
		parse_endpoint(name, endpoint, &ep);
		host_ok = !isnull && adk_endpoint_allowed_by(DatumGetArrayTypeP(hosts), &ep);
	}
	if (secret && !host_ok)
	{
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("secret \"%s\" may not be sent to host \"%s\"",
						secret, adk_endpoint_hostport(&ep)),
				 errdetail("Model \"%s\" points at that host, which is not one of the secret's allowed hosts.",
						   name),
				 errhint("Bind the secret to the host with adk_set_secret(), or point the model elsewhere.")));
	}

	if (list_length(cache) >= MAX_CACHED_MODELS)
	{
		MemoryContextReset(cache_cxt);
		cache = NIL;
	}
	spi = MemoryContextSwitchTo(cache_cxt);
	m = palloc0(sizeof(CachedModel));
	m->name = pstrdup(name);
	m->provider_name = get_text(1);
	m->endpoint = get_text(2);
	m->model = get_text(3);
	m->options = DatumGetJsonbPCopy(SPI_getbinval(SPI_tuptable->vals[0],
												  SPI_tuptable->tupdesc, 4,
												  &isnull));
	m->key_env = get_text(5);
	m->api_key = get_text(7);
	read_fallbacks(m, 9);
	m->schema_with_tools = read_capability(10, "output_schema_with_tools");
	cache = lappend(cache, m);
	MemoryContextSwitchTo(spi);
	adk_owner_spi_end(&save);
	return m;
}

/* relcache invalidation of adk.models or adk.secrets: forget every model */
static void
forget_models(Datum arg, Oid relid)
{
	if (OidIsValid(relid) && relid != models_relid && relid != secrets_relid)
		return;
	if (cache_cxt != NULL)
		MemoryContextReset(cache_cxt);
	cache = NIL;
}

PG_FUNCTION_INFO_V1(adk_definitions_changed);

/*
 * Statement trigger on adk.models and adk.secrets: every backend's cached
 * definitions go when the change commits (ours at the next command).
 */
Datum
adk_definitions_changed(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "adk_definitions_changed must be called as a trigger");
	CacheInvalidateRelcacheByRelid(RelationGetRelid(trigdata->tg_relation));
	return PointerGetDatum(NULL);
}

/*
 * "Name: value" header line carrying the key, or NULL without a key.
 */
char *
adk_auth_header(const AdkModelDef *def)
{
	if (def->api_key == NULL)
		return NULL;
	switch (def->provider)
	{
		case LLM_OPENAI:
			return psprintf("Authorization: Bearer %s", def->api_key);
		case LLM_GEMINI:
			return psprintf("x-goog-api-key: %s", def->api_key);
		case LLM_ANTHROPIC:
			return psprintf("x-api-key: %s", def->api_key);
	}
	return NULL;
}

/*
 * The model's endpoint as libcurl reads it, or an error.  adk.models
 * checks endpoints as they are written; this is the backstop for a row
 * that came in another way (a restored dump).
 */
static void
parse_endpoint(const char *name, const char *endpoint, AdkEndpoint *ep)
{
	const char *problem = adk_endpoint_parse(endpoint, ep);

	if (problem != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid endpoint \"%s\" for model \"%s\"",
						endpoint, name),
				 errdetail("%s.", problem)));
}

static char *
get_text(int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
								  col, &isnull);

	return isnull ? NULL : TextDatumGetCString(d);
}

/*
 * m's fallbacks (adk.models.fallbacks, text[]) from column col of the row
 * SPI read, in the current memory context; the models' trigger keeps them
 * free of NULLs.
 */
static void
read_fallbacks(CachedModel *m, int col)
{
	Datum		d;
	bool		isnull;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			i;

	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col, &isnull);
	if (isnull)
		return;
	deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &nulls, &n);
	m->fallbacks = palloc(sizeof(char *) * (n + 1));
	for (i = 0; i < n; i++)
		if (!nulls[i])
			m->fallbacks[m->nfallbacks++] = TextDatumGetCString(elems[i]);
	pfree(elems);
	pfree(nulls);
}

/*
 * A boolean of adk.models.capabilities (jsonb, column col of the row SPI
 * read): 1 or 0, -1 when it is not set.  The models' checks keep each
 * known key a boolean.
 */
static int
read_capability(int col, const char *key)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
								  col, &isnull);
	JsonbValue	k;
	JsonbValue *v;

	if (isnull)
		return -1;
	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = strlen(key);
	v = findJsonbValueFromContainer(&DatumGetJsonbP(d)->root, JB_FOBJECT, &k);
	if (v == NULL || v->type != jbvBool)
		return -1;
	return v->val.boolean ? 1 : 0;
}

/*
 * Is "name" in the comma-separated adk.allowed_key_env list?
 */
static bool
env_name_allowed(const char *name)
{
	const char *p = adk_allowed_key_env ? adk_allowed_key_env : "";
	size_t		len = strlen(name);

	while (*p)
	{
		const char *end;

		while (*p == ' ' || *p == ',')
			p++;
		end = p;
		while (*end && *end != ',' && *end != ' ')
			end++;
		if ((size_t) (end - p) == len && strncmp(p, name, len) == 0)
			return true;
		p = end;
	}
	return false;
}

/*
 * Does adk.env_key_hosts ("NAME=entry, ...", a name may appear more than
 * once; entries as in endpoint.c, '*' is any host) let variable "name" go
 * to endpoint ep?
 */
static bool
env_host_allowed(const char *name, const AdkEndpoint *ep)
{
	const char *p = adk_env_key_hosts ? adk_env_key_hosts : "";
	size_t		len = strlen(name);

	while (*p)
	{
		const char *end;

		while (*p == ' ' || *p == ',')
			p++;
		end = p;
		while (*end && *end != ',' && *end != ' ')
			end++;
		if ((size_t) (end - p) > len + 1 && strncmp(p, name, len) == 0 &&
			p[len] == '=')
		{
			char	   *h = pnstrdup(p + len + 1, end - p - len - 1);
			bool		ok;

			ok = adk_endpoint_allows(h, ep);
			pfree(h);
			if (ok)
				return true;
		}
		p = end;
	}
	return false;
}

/*
 * GUC check hook of adk.env_key_hosts: every entry is NAME=entry, the
 * entry one libcurl can read (endpoint.c).
 */
bool
adk_check_env_key_hosts(char **newval, void **extra, GucSource source)
{
	const char *p = *newval ? *newval : "";

	while (*p)
	{
		const char *end;
		const char *eq;

		while (*p == ' ' || *p == ',')
			p++;
		if (*p == '\0')
			break;
		end = p;
		while (*end && *end != ',' && *end != ' ')
			end++;
		eq = memchr(p, '=', end - p);
		if (eq == NULL || eq == p || eq + 1 == end)
		{
			GUC_check_errdetail("Each entry must be VARIABLE=host or VARIABLE=host:port, e.g. OPENAI_API_KEY=api.openai.com.");
			return false;
		}
		else
		{
			char	   *h = pnstrdup(eq + 1, end - eq - 1);
			const char *problem = adk_host_entry_check(h);

			if (problem != NULL)
			{
				GUC_check_errdetail("Host \"%s\" is not valid: %s.", h, problem);
				return false;
			}
			pfree(h);
		}
		p = end;
	}
	return true;
}
