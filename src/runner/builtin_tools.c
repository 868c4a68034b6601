/*-------------------------------------------------------------------------
 *
 * builtin_tools.c
 *	  The artifact and memory built-ins (SPEC §9), as ADK Python has them:
 *
 *	- load_artifacts (LoadArtifactsTool): the system instruction lists the
 *	  artifact names of the session (and the user's user: ones); the call
 *	  answers {"artifact_names": [...]}, and the next request carries each
 *	  named artifact after the call's response, as a user content
 *	  "Artifact <name> is:" + the artifact -- inline data when the agent's
 *	  provider takes that MIME type, its text when it is text, a note
 *	  otherwise;
 *	- load_memory (LoadMemoryTool): the instruction says memory exists; the
 *	  call answers {"memories": [{content, author, timestamp}, ...]};
 *	- preload_memory (PreloadMemoryTool): no declaration; before each model
 *	  call the memories that match the user's message are added to the
 *	  system instruction in a <PAST_CONVERSATIONS> block;
 *	- save_input_blobs_as_artifacts: each inline_data part of the user's
 *	  message is saved as an artifact (display_name, else
 *	  artifact_<invocation>_<i>) and replaced by the text "Uploaded file:
 *	  <name>. It is saved into artifacts", so no base64 is stored in
 *	  adk.events; the user event's actions.artifact_delta lists them;
 *	- adk.apps.add_to_memory: a completed invocation's events are added to
 *	  memory.
 * Reads (artifact names and contents, memory searches) and artifact saves
 * run as the invoking role, through the SQL API (the saves' functions are
 * SECURITY DEFINER themselves); adding to memory runs as the owner.
 * Model arguments are bound as parameters.
 *
 * IDENTIFICATION
 *	  src/runner/builtin_tools.c
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

#include "common/jsonb_util.h"
#include "common/spi_plans.h"
#include "runner/builtin_tools.h"
#include "store/artifacts.h"
#include "store/owner.h"

#define LOAD_ARTIFACTS "load_artifacts"
#define LOAD_MEMORY "load_memory"
#define PRELOAD_MEMORY "preload_memory"
#define MEMORY_RESULTS 10

typedef struct AppOptions
{
	bool		save_input_blobs;
	bool		add_to_memory;
} AppOptions;

typedef struct Memory
{
	char	   *text;
	char	   *author;
	char	   *timestamp;
} Memory;

static bool lists(AdkAgent *agent, const char *name);
static AppOptions app_options(AdkRun *run);
static List *artifact_names(AdkRun *run);
static List *search_memory(AdkRun *run, const char *query);
static char *user_text(Jsonb *content);
static char *provider_of(const char *model);
static void write_artifact_part(JsonWriter *w, const char *provider,
								const char *name, bytea *data,
								const char *mime_type);
static bool provider_takes(const char *provider, const char *mime);
static bool is_text_type(const char *mime);
static bytea *decode_base64(const char *s, int len, int part);
static char *extension_schema(void);
static Jsonb *error_object(const char *message);

static bool
lists(AdkAgent *agent, const char *name)
{
	ListCell   *lc;

	foreach(lc, agent->tools)
		if (strcmp((char *) lfirst(lc), name) == 0)
			return true;
	return false;
}

/*
 * The declarations of load_artifacts and load_memory (ADK Python's); true
 * when one was written.  preload_memory declares nothing: the model never
 * calls it.
 */
bool
adk_builtin_declare(JsonWriter *w, const char *name)
{
	const char *param;
	const char *param_type;
	const char *description;

	if (strcmp(name, LOAD_ARTIFACTS) == 0)
	{
		description = "Loads the artifacts and adds them to the session.";
		param = "artifact_names";
		param_type = "array";
	}
	else if (strcmp(name, LOAD_MEMORY) == 0)
	{
		description = "Loads the memory for the current user.";
		param = "query";
		param_type = "string";
	}
	else
		return false;

	jw_begin_object(w);
	jw_key(w, "name");
	jw_string(w, name);
	jw_key(w, "description");
	jw_string(w, description);
	jw_key(w, "parameters");
	jw_begin_object(w);
	jw_key(w, "type");
	jw_string(w, "object");
	jw_key(w, "properties");
	jw_begin_object(w);
	jw_key(w, param);
	jw_begin_object(w);
	jw_key(w, "type");
	jw_string(w, param_type);
	if (strcmp(param_type, "array") == 0)
	{
		jw_key(w, "items");
		jw_begin_object(w);
		jw_key(w, "type");
		jw_string(w, "string");
		jw_end_object(w);
	}
	jw_end_object(w);
	jw_end_object(w);
	jw_key(w, "required");
	jw_begin_array(w);
	jw_string(w, param);
	jw_end_array(w);
	jw_end_object(w);
	jw_end_object(w);
	return true;
}

/*
 * A call of load_artifacts or load_memory by an agent that lists it: the
 * function response.  NULL when the name is not one of ours.
 */
Jsonb *
adk_builtin_call(AdkRun *run, AdkAgent *agent, const char *name, Jsonb *args)
{
	JsonWriter	w;

	if (strcmp(name, LOAD_ARTIFACTS) == 0 && lists(agent, LOAD_ARTIFACTS))
	{
		JsonbValue *names = adk_jsonb_get(&args->root, "artifact_names");
		JsonbIterator *it;
		JsonbValue	v;
		JsonbIteratorToken tok;

		if (names == NULL || names->type != jbvBinary ||
			!JsonContainerIsArray(names->val.binary.data))
			return error_object("load_artifacts needs \"artifact_names\": a list of artifact names");
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
				return error_object("load_artifacts needs \"artifact_names\": a list of artifact names");
			jw_value(&w, &v);
		}
		jw_end_array(&w);
		jw_end_object(&w);
		return jw_finish(&w);
	}
	if (strcmp(name, LOAD_MEMORY) == 0 && lists(agent, LOAD_MEMORY))
	{
		JsonbValue *query = adk_jsonb_get(&args->root, "query");
		List	   *memories;
		ListCell   *lc;

		if (query == NULL || query->type != jbvString)
			return error_object("load_memory needs \"query\": a string");
		memories = search_memory(run, pnstrdup(query->val.string.val,
												query->val.string.len));
		jw_init(&w);
		jw_begin_object(&w);
		jw_key(&w, "memories");
		jw_begin_array(&w);
		foreach(lc, memories)
		{
			Memory	   *m = (Memory *) lfirst(lc);

			jw_begin_object(&w);
			jw_key(&w, "content");
			jw_begin_object(&w);
			jw_key(&w, "role");
			jw_string(&w, m->author && strcmp(m->author, "user") == 0 ? "user" : "model");
			jw_key(&w, "parts");
			jw_begin_array(&w);
			jw_begin_object(&w);
			jw_key(&w, "text");
			jw_string(&w, m->text);
			jw_end_object(&w);
			jw_end_array(&w);
			jw_end_object(&w);
			jw_key(&w, "author");
			if (m->author)
				jw_string(&w, m->author);
			else
				jw_null(&w);
			jw_key(&w, "timestamp");
			jw_string(&w, m->timestamp);
			jw_end_object(&w);
		}
		jw_end_array(&w);
		jw_end_object(&w);
		return jw_finish(&w);
	}
	return NULL;
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
 * The built-ins' part of the system instruction, appended to out.
 */
void
adk_builtin_instruction(AdkRun *run, AdkAgent *agent, StringInfo out)
{
	if (lists(agent, LOAD_ARTIFACTS))
	{
		List	   *names = artifact_names(run);
		ListCell   *lc;

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
	if (lists(agent, LOAD_MEMORY))
	{
		if (out->len > 0)
			appendStringInfoString(out, "\n\n");
		appendStringInfoString(out,
							   "You have memory. You can use it to answer questions. If any questions need you to look up the memory, you should call load_memory function with a query.");
	}
	if (lists(agent, PRELOAD_MEMORY))
	{
		char	   *query = run->user_content ? user_text(run->user_content) : NULL;
		List	   *memories = query ? search_memory(run, query) : NIL;
		ListCell   *lc;

		if (memories != NIL)
		{
			if (out->len > 0)
				appendStringInfoString(out, "\n\n");
			appendStringInfoString(out,
								   "The following content is from your previous conversations with the user.\n"
								   "They may be useful for answering the user's current query.\n"
								   "<PAST_CONVERSATIONS>\n");
			foreach(lc, memories)
			{
				Memory	   *m = (Memory *) lfirst(lc);

				appendStringInfo(out, "Time: %s\n", m->timestamp);
				if (m->author)
					appendStringInfo(out, "%s: %s\n", m->author, m->text);
				else
					appendStringInfo(out, "%s\n", m->text);
			}
			appendStringInfoString(out, "</PAST_CONVERSATIONS>\n");
		}
	}
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

	if (last_event == NULL || !lists(agent, LOAD_ARTIFACTS) ||
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
			name->val.string.len != strlen(LOAD_ARTIFACTS) ||
			memcmp(name->val.string.val, LOAD_ARTIFACTS, name->val.string.len) != 0 ||
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
		if (adk_spi_exec("SELECT a.data, a.mime_type FROM adk.artifacts a"
						 " WHERE a.app_name OPERATOR(pg_catalog.=) $1"
						 "   AND a.user_id OPERATOR(pg_catalog.=) $2"
						 "   AND a.session_id OPERATOR(pg_catalog.=) adk._artifact_scope($3, $4)"
						 "   AND a.filename OPERATOR(pg_catalog.=) $4"
						 " ORDER BY a.version DESC LIMIT 1",
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
		int			n = pg_b64_encode(bytes, len, enc, enc_len);

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
	if (!any || !app_options(run).save_input_blobs)
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
	out = pg_b64_decode(norm, n, VARDATA(result), pg_b64_dec_len(n));
	if (out < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("inline_data of message part %d is not valid base64", part)));
	SET_VARSIZE(result, VARHDRSZ + out);
	return result;
}

/*
 * A completed invocation's events go to memory when the app says so.
 */
void
adk_builtin_after_run(AdkRun *run)
{
	Oid			types[4] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		args[4];
	AdkOwnerSave save;

	if (!app_options(run).add_to_memory)
		return;
	args[0] = CStringGetTextDatum(run->app);
	args[1] = CStringGetTextDatum(run->user);
	args[2] = CStringGetTextDatum(run->session);
	args[3] = CStringGetTextDatum(run->invocation_id);
	adk_become_owner(&save);
	SPI_connect();
	if (adk_spi_exec("SELECT adk._memory_add($1, $2, $3, $4)",
					 4, types, args, NULL, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not add the invocation to memory");
	SPI_finish();
	adk_restore_user(&save);
}

static AppOptions
app_options(AdkRun *run)
{
	AppOptions	o = {false, false};
	Oid			type = TEXTOID;
	Datum		arg = CStringGetTextDatum(run->app);
	AdkOwnerSave save;

	adk_become_owner(&save);
	SPI_connect();
	if (adk_spi_exec("SELECT a.save_input_blobs_as_artifacts, a.add_to_memory"
					 " FROM adk.apps a WHERE a.name OPERATOR(pg_catalog.=) $1",
					 1, &type, &arg, NULL, 1) == SPI_OK_SELECT && SPI_processed == 1)
	{
		bool		isnull;

		o.save_input_blobs = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
														SPI_tuptable->tupdesc, 1, &isnull));
		o.add_to_memory = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
													 SPI_tuptable->tupdesc, 2, &isnull));
	}
	SPI_finish();
	adk_restore_user(&save);
	return o;
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
	if (adk_spi_exec("SELECT DISTINCT a.filename FROM adk.artifacts a"
					 " WHERE a.app_name OPERATOR(pg_catalog.=) $1"
					 "   AND a.user_id OPERATOR(pg_catalog.=) $2"
					 "   AND (a.session_id OPERATOR(pg_catalog.=) $3"
					 "        OR a.session_id OPERATOR(pg_catalog.=) '')"
					 " ORDER BY 1", 3, types, args, NULL, 0) != SPI_OK_SELECT)
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

/* The user's memories matching query, best first */
static List *
search_memory(AdkRun *run, const char *query)
{
	List	   *result = NIL;
	Oid			types[4] = {TEXTOID, TEXTOID, TEXTOID, INT4OID};
	Datum		args[4];
	MemoryContext caller = CurrentMemoryContext;
	uint64		i;

	args[0] = CStringGetTextDatum(run->app);
	args[1] = CStringGetTextDatum(run->user);
	args[2] = CStringGetTextDatum(query);
	args[3] = Int32GetDatum(MEMORY_RESULTS);
	SPI_connect();
	if (adk_spi_exec("SELECT m.text, m.author,"
					 " pg_catalog.to_jsonb(m.\"timestamp\") OPERATOR(pg_catalog.#>>) '{}'"
					 " FROM adk._memory_search($1, $2, $3, $4) m",
					 4, types, args, NULL, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not search memory");
	for (i = 0; i < SPI_processed; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		char	   *text = SPI_getvalue(row, desc, 1);
		char	   *author = SPI_getvalue(row, desc, 2);
		char	   *ts = SPI_getvalue(row, desc, 3);
		MemoryContext spi = MemoryContextSwitchTo(caller);
		Memory	   *m = palloc(sizeof(Memory));

		m->text = pstrdup(text);
		m->author = author ? pstrdup(author) : NULL;
		m->timestamp = pstrdup(ts);
		result = lappend(result, m);
		MemoryContextSwitchTo(spi);
	}
	SPI_finish();
	return result;
}

/* The text parts of a content, joined with spaces; NULL when none */
static char *
user_text(Jsonb *content)
{
	JsonbValue *parts = adk_jsonb_get(&content->root, "parts");
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	StringInfoData s;

	if (parts == NULL || parts->type != jbvBinary ||
		!JsonContainerIsArray(parts->val.binary.data))
		return NULL;
	initStringInfo(&s);
	it = JsonbIteratorInit(parts->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		JsonbValue *t;

		if (tok != WJB_ELEM || v.type != jbvBinary ||
			(t = adk_jsonb_get(v.val.binary.data, "text")) == NULL ||
			t->type != jbvString)
			continue;
		if (s.len > 0)
			appendStringInfoChar(&s, ' ');
		appendBinaryStringInfo(&s, t->val.string.val, t->val.string.len);
	}
	return s.len > 0 ? s.data : NULL;
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
	adk_become_owner(&save);
	SPI_connect();
	if (adk_spi_exec("SELECT m.provider FROM adk.models m WHERE m.name OPERATOR(pg_catalog.=) $1",
					 1, &type, &arg, NULL, 1) == SPI_OK_SELECT && SPI_processed == 1)
	{
		char	   *p = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		result = MemoryContextStrdup(caller, p);
	}
	SPI_finish();
	adk_restore_user(&save);
	return result;
}

/* The schema of the adk_* functions */
static char *
extension_schema(void)
{
	char	   *result = NULL;
	MemoryContext caller = CurrentMemoryContext;

	SPI_connect();
	if (adk_spi_exec("SELECT n.nspname FROM pg_catalog.pg_extension e"
					 " JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace"
					 " WHERE e.extname OPERATOR(pg_catalog.=) 'adk_runner'",
					 0, NULL, NULL, NULL, 1) == SPI_OK_SELECT && SPI_processed == 1)
		result = MemoryContextStrdup(caller,
									 SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
	SPI_finish();
	if (result == NULL)
		elog(ERROR, "extension adk_runner is not installed");
	return result;
}

static Jsonb *
error_object(const char *message)
{
	JsonWriter	w;

	jw_init(&w);
	jw_begin_object(&w);
	jw_key(&w, "error");
	jw_string(&w, message);
	jw_end_object(&w);
	return jw_finish(&w);
}
