/*-------------------------------------------------------------------------
 *
 * artifact_tools.c
 *	  The artifact built-ins, as ADK Python has them:
 *
 *	- load_artifacts (LoadArtifactsTool): the system instruction lists the
 *	  artifact names of the session (and the user's user: ones); the call
 *	  answers {"artifact_names": [...]}, and the next request carries each
 *	  named artifact after the call's response, as a user content
 *	  "Artifact <name> is:" + the artifact -- inline data when the agent's
 *	  provider takes that MIME type, its text when it is text, a note
 *	  otherwise;
 *	- save_input_blobs_as_artifacts: each inline_data part of the user's
 *	  message is saved as an artifact (display_name, else
 *	  artifact_<invocation>_<i>) and replaced by the text "Uploaded file:
 *	  <name>. It is saved into artifacts", so no base64 is stored in
 *	  adk.events; the user event's actions.artifact_delta lists them.
 * Reads (artifact names and contents) and artifact saves run as the
 * invoking role, through the SQL API (the saves' functions are SECURITY
 * DEFINER themselves).  Model arguments are bound as parameters.
 *
 * IDENTIFICATION
 *	  src/runner/artifact_tools.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/base64.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "common/compat.h"
#include "common/jsonb_util.h"
#include "common/spi_plans.h"
#include "runner/artifact_tools.h"
#include "store/artifacts.h"
#include "common/owner.h"

static List *artifact_names(AdkRun *run);
static char *provider_of(const char *model);
static void write_artifact_part(JsonWriter *w, const char *provider,
								const char *name, bytea *data,
								const char *mime_type);
static bool provider_takes(const char *provider, const char *mime);
static bool is_text_type(const char *mime);
static bytea *decode_base64(const char *s, int len, int part);
static char *extension_schema(void);

/*
 * A call of load_artifacts: the function response, {"artifact_names":
 * [...]} (the next request carries them: adk_builtin_contents).
 */
Jsonb *
adk_artifacts_load_call(Jsonb *args)
{
	JsonWriter	w;
	JsonbValue *names = adk_jsonb_get(&args->root, "artifact_names");
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	if (names == NULL || names->type != jbvBinary ||
		!JsonContainerIsArray(names->val.binary.data))
		return adk_error_object("load_artifacts needs \"artifact_names\": a list of artifact names");
	jw_init(&w);
	jw_begin_object(&w);
	jw_key(&w, "artifact_names");
	jw_begin_array(&w);
	it = JsonbIteratorInit(names->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok != WJB_ELEM)
			continue;
		if (v.type != jbvString)
			return adk_error_object("load_artifacts needs \"artifact_names\": a list of artifact names");
		jw_value(&w, &v);
	}
	jw_end_array(&w);
	jw_end_object(&w);
	return jw_finish(&w);
}

/*
 * load_artifacts' part of the system instruction, appended to out: the
 * artifact names of the session and its user.
 */
void
adk_artifacts_instruction(AdkRun *run, AdkAgent *agent, StringInfo out)
{
	List	   *names;
	ListCell   *lc;

	if (!adk_agent_lists(agent, ADK_LOAD_ARTIFACTS))
		return;
	names = artifact_names(run);
	if (names != NIL)
	{
		if (out->len > 0)
			appendStringInfoString(out, "\n\n");
		appendStringInfoString(out, "You have a list of artifacts:\n  [");
		foreach(lc, names)
		{
			if (lc != list_head(names))
				appendStringInfoString(out, ", ");
			escape_json(out, (char *) lfirst(lc));
		}
		appendStringInfoString(out,
							   "]\n\nWhen the user asks questions about any of the artifacts, you should call the `load_artifacts` function to load the artifact. Always call load_artifacts before answering questions related to the artifacts, regardless of whether the artifacts have been loaded before. Do not depend on prior answers about the artifacts.");
	}
}

void
adk_builtin_saves_begin(AdkRun *run)
{
	adk_artifact_scope_begin(run->app, run->user, run->session,
							 run->invocation_id);
}

List *
adk_builtin_saves_end(void)
{
	return adk_artifact_scope_end();
}

/*
 * {"filename": version, ...}
 */
void
adk_jw_artifact_delta(JsonWriter *w, List *delta)
{
	ListCell   *lc;

	jw_begin_object(w);
	foreach(lc, delta)
	{
		AdkArtifactNote *n = (AdkArtifactNote *) lfirst(lc);

		jw_key(w, n->filename);
		jw_int(w, n->version);
	}
	jw_end_object(w);
}

/*
 * When the last event of the history answers load_artifacts, each named
 * artifact (its latest version) as a user content after it.
 */
void
adk_builtin_contents(AdkRun *run, AdkAgent *agent, JsonWriter *w,
					 Jsonb *last_event)
{
	JsonbValue *content;
	JsonbValue *parts;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	List	   *names = NIL;
	ListCell   *lc;
	char	   *provider;

	if (last_event == NULL || !adk_agent_lists(agent, ADK_LOAD_ARTIFACTS) ||
		(content = adk_jsonb_get(&last_event->root, "content")) == NULL ||
		content->type != jbvBinary ||
		(parts = adk_jsonb_get(content->val.binary.data, "parts")) == NULL ||
		parts->type != jbvBinary || !JsonContainerIsArray(parts->val.binary.data))
		return;
	it = JsonbIteratorInit(parts->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		JsonbValue *fr;
		JsonbValue *name;
		JsonbValue *response;
		JsonbValue *list;
		JsonbIterator *it2;
		JsonbValue	n;

		if (tok != WJB_ELEM || v.type != jbvBinary ||
			(fr = adk_jsonb_get(v.val.binary.data, "function_response")) == NULL ||
			fr->type != jbvBinary ||
			(name = adk_jsonb_get(fr->val.binary.data, "name")) == NULL ||
			name->type != jbvString ||
			name->val.string.len != strlen(ADK_LOAD_ARTIFACTS) ||
			memcmp(name->val.string.val, ADK_LOAD_ARTIFACTS, name->val.string.len) != 0 ||
			(response = adk_jsonb_get(fr->val.binary.data, "response")) == NULL ||
			response->type != jbvBinary ||
			(list = adk_jsonb_get(response->val.binary.data, "artifact_names")) == NULL ||
			list->type != jbvBinary || !JsonContainerIsArray(list->val.binary.data))
			continue;
		it2 = JsonbIteratorInit(list->val.binary.data);
		while ((tok = JsonbIteratorNext(&it2, &n, true)) != WJB_DONE)
			if (tok == WJB_ELEM && n.type == jbvString)
				names = lappend(names, pnstrdup(n.val.string.val, n.val.string.len));
	}
	if (names == NIL)
		return;

	provider = provider_of(agent->model);
	foreach(lc, names)
	{
		char	   *name = (char *) lfirst(lc);
		Oid			types[4] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID};
		Datum		args[4];
		bytea	   *data = NULL;
		char	   *mime = NULL;
		MemoryContext caller = CurrentMemoryContext;

		args[0] = CStringGetTextDatum(run->app);
		args[1] = CStringGetTextDatum(run->user);
		args[2] = CStringGetTextDatum(run->session);
		args[3] = CStringGetTextDatum(name);
		SPI_connect();
		if (adk_spi_exec("SELECT * FROM adk._artifact_latest($1, $2, $3, $4)",
						 4, types, args, NULL, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not read adk.artifacts");
		if (SPI_processed == 1)
		{
			bool		isnull;
			Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
										  1, &isnull);

			MemoryContextSwitchTo(caller);
			data = DatumGetByteaPCopy(d);
			mime = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
		}
		SPI_finish();
		MemoryContextSwitchTo(caller);

		jw_begin_object(w);
		jw_key(w, "role");
		jw_string(w, "user");
		jw_key(w, "parts");
		jw_begin_array(w);
		jw_begin_object(w);
		jw_key(w, "text");
		if (data == NULL)
		{
			jw_string(w, psprintf("Artifact %s does not exist.", name));
			jw_end_object(w);
		}
		else
		{
			jw_string(w, psprintf("Artifact %s is:", name));
			jw_end_object(w);
			write_artifact_part(w, provider, name, data, mime);
		}
		jw_end_array(w);
		jw_end_object(w);
	}
}

/*
 * One artifact as a part the provider can take: inline data for the MIME
 * types it accepts, the text of a text artifact, a note otherwise.
 */
static void
write_artifact_part(JsonWriter *w, const char *provider, const char *name,
					bytea *data, const char *mime_type)
{
	char	   *mime = pstrdup(mime_type);
	char	   *semi = strchr(mime, ';');
	char	   *p;
	int			len = VARSIZE_ANY_EXHDR(data);
	const char *bytes = VARDATA_ANY(data);

	if (semi)
		*semi = '\0';
	for (p = mime; *p; p++)
		*p = pg_ascii_tolower((unsigned char) *p);
	while (p > mime && (p[-1] == ' ' || p[-1] == '\t'))
		*--p = '\0';

	jw_begin_object(w);
	if (is_text_type(mime) && memchr(bytes, '\0', len) == NULL &&
		pg_verifymbstr(bytes, len, true))
	{
		jw_key(w, "text");
		jw_string(w, pnstrdup(bytes, len));
	}
	else if (provider_takes(provider, mime))
	{
		int			enc_len = pg_b64_enc_len(len);
		char	   *enc = palloc(enc_len + 1);
		int			n = pg_b64_encode((const adk_b64_byte *) bytes, len, enc, enc_len);

		if (n < 0)
			elog(ERROR, "could not encode artifact \"%s\"", name);
		enc[n] = '\0';
		jw_key(w, "inline_data");
		jw_begin_object(w);
		jw_key(w, "mime_type");
		jw_string(w, mime);
		jw_key(w, "data");
		jw_string(w, enc);
		jw_end_object(w);
	}
	else
	{
		jw_key(w, "text");
		jw_string(w, psprintf("[artifact %s: %d bytes of %s, which this model cannot read]",
							  name, len, mime));
	}
	jw_end_object(w);
}

/* The MIME types each adapter sends as inline data (src/model/adapter_*.c) */
static bool
provider_takes(const char *provider, const char *mime)
{
	if (provider == NULL)
		return false;
	if (strcmp(provider, "gemini") == 0)
		return strncmp(mime, "image/", 6) == 0 || strncmp(mime, "audio/", 6) == 0 ||
			strncmp(mime, "video/", 6) == 0 || strcmp(mime, "application/pdf") == 0;
	if (strcmp(provider, "openai") == 0)
		return strncmp(mime, "image/", 6) == 0 || strcmp(mime, "application/pdf") == 0 ||
			strcmp(mime, "audio/wav") == 0 || strcmp(mime, "audio/mpeg") == 0 ||
			strcmp(mime, "audio/mp3") == 0;
	if (strcmp(provider, "anthropic") == 0)
		return strcmp(mime, "image/jpeg") == 0 || strcmp(mime, "image/png") == 0 ||
			strcmp(mime, "image/gif") == 0 || strcmp(mime, "image/webp") == 0 ||
			strcmp(mime, "application/pdf") == 0;
	return false;
}

static bool
is_text_type(const char *mime)
{
	size_t		len = strlen(mime);

	return strncmp(mime, "text/", 5) == 0 ||
		strcmp(mime, "application/json") == 0 ||
		strcmp(mime, "application/xml") == 0 ||
		strcmp(mime, "application/yaml") == 0 ||
		strcmp(mime, "application/x-yaml") == 0 ||
		strcmp(mime, "application/javascript") == 0 ||
		strcmp(mime, "application/sql") == 0 ||
		(len > 5 && strcmp(mime + len - 5, "+json") == 0) ||
		(len > 4 && strcmp(mime + len - 4, "+xml") == 0);
}

/*
 * The user's content with each inline_data part saved as an artifact and
 * replaced by a text placeholder, when the app saves input blobs; *delta:
 * the saved versions.  The content unchanged otherwise.
 */
Jsonb *
adk_builtin_input_blobs(AdkRun *run, Jsonb *content, List **delta)
{
	JsonbValue *parts;
	JsonbIterator *it;
	JsonbValue	k;
	JsonbValue	v;
	JsonbIteratorToken tok;
	JsonWriter	w;
	bool		any = false;
	int			i = 0;
	char	   *save_sql;

	*delta = NIL;
	if (content == NULL || !adk_jsonb_is_object(&content->root) ||
		(parts = adk_jsonb_get(&content->root, "parts")) == NULL ||
		parts->type != jbvBinary || !JsonContainerIsArray(parts->val.binary.data))
		return content;
	it = JsonbIteratorInit(parts->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		if (tok == WJB_ELEM && v.type == jbvBinary &&
			adk_jsonb_get(v.val.binary.data, "inline_data") != NULL)
			any = true;
	if (!any || !adk_app_builtin_options(run).save_input_blobs)
		return content;

	save_sql = psprintf("SELECT %s.adk_save_artifact($1, $2, $3, $4, $5, $6)",
						quote_identifier(extension_schema()));
	adk_builtin_saves_begin(run);
	jw_init(&w);
	jw_begin_object(&w);
	it = JsonbIteratorInit(&content->root);
	while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE)
	{
		JsonbIterator *pit;

		if (tok != WJB_KEY)
			continue;
		(void) JsonbIteratorNext(&it, &v, true);
		jw_key(&w, pnstrdup(k.val.string.val, k.val.string.len));
		if (k.val.string.len != 5 || memcmp(k.val.string.val, "parts", 5) != 0)
		{
			jw_value(&w, &v);
			continue;
		}
		jw_begin_array(&w);
		pit = JsonbIteratorInit(v.val.binary.data);
		while ((tok = JsonbIteratorNext(&pit, &v, true)) != WJB_DONE)
		{
			JsonbValue *blob;
			JsonbValue *data;
			JsonbValue *x;
			char	   *name;
			char	   *mime = "application/octet-stream";
			Oid			types[6] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, BYTEAOID, TEXTOID};
			Datum		args[6];

			if (tok != WJB_ELEM)
				continue;
			if (v.type != jbvBinary ||
				(blob = adk_jsonb_get(v.val.binary.data, "inline_data")) == NULL ||
				blob->type != jbvBinary ||
				(data = adk_jsonb_get(blob->val.binary.data, "data")) == NULL ||
				data->type != jbvString)
			{
				jw_value(&w, &v);
				i++;
				continue;
			}
			if ((x = adk_jsonb_get(blob->val.binary.data, "display_name")) != NULL &&
				x->type == jbvString && x->val.string.len > 0)
				name = pnstrdup(x->val.string.val, x->val.string.len);
			else
				name = psprintf("artifact_%s_%d", run->invocation_id, i);
			if ((x = adk_jsonb_get(blob->val.binary.data, "mime_type")) != NULL &&
				x->type == jbvString && x->val.string.len > 0)
				mime = pnstrdup(x->val.string.val, x->val.string.len);
			args[0] = CStringGetTextDatum(run->app);
			args[1] = CStringGetTextDatum(run->user);
			args[2] = CStringGetTextDatum(run->session);
			args[3] = CStringGetTextDatum(name);
			args[4] = PointerGetDatum(decode_base64(data->val.string.val,
													data->val.string.len, i));
			args[5] = CStringGetTextDatum(mime);
			SPI_connect();
			if (SPI_execute_with_args(save_sql, 6, types, args, NULL, false, 1) != SPI_OK_SELECT)
				elog(ERROR, "could not save input blob \"%s\"", name);
			SPI_finish();

			jw_begin_object(&w);
			jw_key(&w, "text");
			jw_string(&w, psprintf("Uploaded file: %s. It is saved into artifacts", name));
			jw_end_object(&w);
			i++;
		}
		jw_end_array(&w);
	}
	jw_end_object(&w);
	*delta = adk_builtin_saves_end();
	return jw_finish(&w);
}

/*
 * Base64 (standard or URL-safe, padded or not, as ADK's JSON has it)
 * to bytea.
 */
static bytea *
decode_base64(const char *s, int len, int part)
{
	char	   *norm = palloc(len + 4);
	int			n = 0;
	int			i;
	bytea	   *result;
	int			out;

	for (i = 0; i < len; i++)
	{
		char		c = s[i];

		if (c == '-')
			c = '+';
		else if (c == '_')
			c = '/';
		else if (c == '\n' || c == '\r' || c == ' ' || c == '\t')
			continue;
		norm[n++] = c;
	}
	while (n % 4 != 0)
		norm[n++] = '=';
	result = palloc(VARHDRSZ + pg_b64_dec_len(n));
	out = pg_b64_decode(norm, n, (adk_b64_byte *) VARDATA(result), pg_b64_dec_len(n));
	if (out < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("inline_data of message part %d is not valid base64", part)));
	SET_VARSIZE(result, VARHDRSZ + out);
	return result;
}

/* The artifact names of the run's session and its user, sorted */
static List *
artifact_names(AdkRun *run)
{
	List	   *result = NIL;
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		args[3];
	MemoryContext caller = CurrentMemoryContext;
	uint64		i;

	args[0] = CStringGetTextDatum(run->app);
	args[1] = CStringGetTextDatum(run->user);
	args[2] = CStringGetTextDatum(run->session);
	SPI_connect();
	if (adk_spi_exec("SELECT adk._artifact_names($1, $2, $3)",
					 3, types, args, NULL, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read adk.artifacts");
	for (i = 0; i < SPI_processed; i++)
	{
		char	   *name = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		MemoryContext spi = MemoryContextSwitchTo(caller);

		result = lappend(result, pstrdup(name));
		MemoryContextSwitchTo(spi);
	}
	SPI_finish();
	return result;
}

static char *
provider_of(const char *model)
{
	Oid			type = TEXTOID;
	Datum		arg;
	char	   *result = NULL;
	MemoryContext caller = CurrentMemoryContext;
	AdkOwnerSave save;

	if (model == NULL)
		return NULL;
	arg = CStringGetTextDatum(model);
	adk_owner_spi_begin(&save);
	if (adk_spi_exec("SELECT m.provider FROM adk.models m WHERE m.name OPERATOR(pg_catalog.=) $1",
					 1, &type, &arg, NULL, 1) == SPI_OK_SELECT && SPI_processed == 1)
	{
		char	   *p = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		result = MemoryContextStrdup(caller, p);
	}
	adk_owner_spi_end(&save);
	return result;
}

/* The schema of the adk_* functions */
static char *
extension_schema(void)
{
	char	   *result = NULL;
	MemoryContext caller = CurrentMemoryContext;
	char	   *schema;
	AdkOwnerSave save;

	adk_owner_spi_begin(&save);
	/* sql/install/88_store_statements.sql */
	if (adk_spi_exec("SELECT adk._extension_schema()",
					 0, NULL, NULL, NULL, 1) == SPI_OK_SELECT && SPI_processed == 1 &&
		(schema = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1)) != NULL)
		result = MemoryContextStrdup(caller, schema);
	adk_owner_spi_end(&save);
	if (result == NULL)
		elog(ERROR, "extension adk_runner is not installed");
	return result;
}
