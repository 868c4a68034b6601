/*-------------------------------------------------------------------------
 *
 * model_def.c
 *	  Load a model definition and resolve its API key.
 *
 * A key comes from one of two places:
 *	- adk.secrets, read as the owner of schema adk (callers cannot read
 *	  that table), and only when the model's endpoint host is one of the
 *	  secret's allowed_hosts -- so a model pointed at another host cannot
 *	  carry the key there;
 *	- a server environment variable named by the model, and only one of
 *	  those listed in adk.allowed_key_env (superuser-only), so defining a
 *	  model is no way to read the server's other environment variables.
 * A key never appears in an error message, a log line or a table.
 *
 * IDENTIFICATION
 *	  src/model/model_def.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <stdlib.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "model/model_def.h"
#include "store/owner.h"

char	   *adk_allowed_key_env = NULL;

static SPIPlanPtr load_plan = NULL;

static bool env_name_allowed(const char *name);
static char *endpoint_hostport(const char *endpoint);
static bool host_allowed(ArrayType *hosts, const char *hostport);
static char *get_text(int col);

#define LOAD_SQL \
	"SELECT m.provider, m.endpoint, m.model, m.options, m.api_key_env," \
	"       m.api_key_secret, s.value, s.allowed_hosts" \
	"  FROM adk.models m" \
	"  LEFT JOIN adk.secrets s ON s.name OPERATOR(pg_catalog.=) m.api_key_secret" \
	" WHERE m.name OPERATOR(pg_catalog.=) $1"

/*
 * Read model "name" into def (palloc'd in the current context).
 */
void
adk_load_model(const char *name, AdkModelDef *def)
{
	AdkOwnerSave save;
	Datum		arg = CStringGetTextDatum(name);
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext spi;
	char	   *key_env;
	char	   *secret;
	bool		isnull;
	bool		host_ok = false;
	char	   *hostport = NULL;

	memset(def, 0, sizeof(*def));
	adk_become_owner(&save);
	SPI_connect();
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

	spi = MemoryContextSwitchTo(caller);
	def->name = pstrdup(name);
	def->provider_name = get_text(1);
	def->endpoint = get_text(2);
	def->model = get_text(3);
	def->options = DatumGetJsonbPCopy(SPI_getbinval(SPI_tuptable->vals[0],
													SPI_tuptable->tupdesc, 4,
													&isnull));
	key_env = get_text(5);
	secret = get_text(6);
	def->api_key = get_text(7);
	if (secret != NULL)
	{
		Datum		hosts = SPI_getbinval(SPI_tuptable->vals[0],
										  SPI_tuptable->tupdesc, 8, &isnull);

		hostport = endpoint_hostport(def->endpoint);
		host_ok = !isnull && host_allowed(DatumGetArrayTypeP(hosts), hostport);
	}
	if (secret && !host_ok)
	{
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("secret \"%s\" may not be sent to host \"%s\"",
						secret, hostport),
				 errdetail("Model \"%s\" points at that host, which is not one of the secret's allowed hosts.",
						   name),
				 errhint("Bind the secret to the host with adk_set_secret(), or point the model elsewhere.")));
	}
	MemoryContextSwitchTo(spi);
	SPI_finish();
	adk_restore_user(&save);

	if (llm_provider_from_name(def->provider_name, &def->provider) != 0)
		elog(ERROR, "unknown provider \"%s\"", def->provider_name);

	if (key_env != NULL)
	{
		const char *value;

		if (!env_name_allowed(key_env))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("model \"%s\" may not read environment variable \"%s\"",
							name, key_env),
					 errhint("A superuser can add it to \"adk.allowed_key_env\".")));
		value = getenv(key_env);
		if (value == NULL || value[0] == '\0')
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("environment variable \"%s\" of model \"%s\" is not set in the server",
							key_env, name)));
		def->api_key = pstrdup(value);
	}
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
 * "host[:port]" of an endpoint, lower-cased.  adk.models guarantees the
 * form scheme://authority[/path] with no user info.
 */
static char *
endpoint_hostport(const char *endpoint)
{
	const char *p = strstr(endpoint, "://");
	char	   *result;
	size_t		i;

	p = p ? p + 3 : endpoint;
	result = pnstrdup(p, strcspn(p, "/?#"));
	for (i = 0; result[i]; i++)
		result[i] = pg_tolower((unsigned char) result[i]);
	return result;
}

/*
 * Is the endpoint's host (or host:port) one of allowed_hosts, or is '*'?
 */
static bool
host_allowed(ArrayType *hosts, const char *hostport)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			i;
	const char *colon = strrchr(hostport, ':');
	size_t		hostlen = strlen(hostport);

	/* "host:port" -> host is everything before the port (not for [v6]) */
	if (colon != NULL && strchr(colon, ']') == NULL)
		hostlen = colon - hostport;

	deconstruct_array(hosts, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	for (i = 0; i < n; i++)
	{
		char	   *h;

		if (nulls[i])
			continue;
		h = TextDatumGetCString(elems[i]);
		if (strcmp(h, "*") == 0 || strcmp(h, hostport) == 0 ||
			(strlen(h) == hostlen && strncmp(h, hostport, hostlen) == 0))
			return true;
	}
	return false;
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
