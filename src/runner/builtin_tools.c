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
 * Memory's embeddings (an app with memory_embedding_model) wait in the
 * run's steps, as its model calls do (issue 12 §2): an AdkMemoryWait
 * holds the requests started in one step (embed.c), the run waits until
 * adk_memory_ready, and adk_memory_finish consumes them in a later step --
 * the entries added with their embeddings (run.c, at the end of the run),
 * or the search made with the query's (flow.c: preload_memory in the
 * round's first step, load_memory and an agent-tool's preload_memory in
 * the calls round).  Outside a run's steps (adk_prompt) a search embeds
 * its query in adk._memory_search, waiting in the call.
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
#include "utils/memutils.h"

#include "common/compat.h"
#include "common/jsonb_util.h"
#include "common/spi_plans.h"
#include "model/embed.h"
#include "runner/builtin_tools.h"
#include "store/artifacts.h"
#include "common/owner.h"

#define LOAD_ARTIFACTS "load_artifacts"
#define LOAD_MEMORY "load_memory"
#define PRELOAD_MEMORY "preload_memory"
#define MEMORY_RESULTS 10
#define EMBED_BATCH 100			/* texts per embedding request */

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

typedef enum MemoryWaitKind
{
	MW_ADD,						/* a completed invocation added to memory */
	MW_PRELOAD,					/* preload_memory's search */
	MW_LOAD						/* a load_memory call's search */
} MemoryWaitKind;

/*
 * Memory waiting for its embeddings: everything in cxt (under the memory
 * of the step owner that waits for it), which deleting stops the requests
 * with.
 */
struct AdkMemoryWait
{
	MemoryContext cxt;
	AdkRun	   *run;
	MemoryWaitKind kind;
	char	   *model;			/* the app's embedding model; NULL: none */
	int			ncalls;
	AdkEmbedCall **calls;		/* one per EMBED_BATCH texts (a search: one) */
	/* adding */
	int			n;
	char	  **event_ids;
	char	  **texts;
	/* searching */
	char	   *query;
	char	   *error;			/* the embedding failed */
	ArrayType  *vector;			/* ... else the query's */
};

static bool lists(AdkAgent *agent, const char *name);
static AppOptions app_options(AdkRun *run);
static List *artifact_names(AdkRun *run);
static List *search_memory(AdkRun *run, const char *query, bool known,
						   ArrayType *vector);
static Jsonb *memories_response(List *memories);
static AdkMemoryWait *new_wait(AdkRun *run, MemoryContext parent,
							   MemoryWaitKind kind);
static char *embedding_model(AdkRun *run, const char *query);
static AdkMemoryWait *search_wait(AdkRun *run, MemoryContext parent,
								  MemoryWaitKind kind, const char *query);
static void search_start(void *arg);
static void search_finish(void *arg);
static void insert_entries(AdkRun *run, char **event_ids, int n,
						   ArrayType *embeddings);
static char *user_text(Jsonb *content);
static char *provider_of(const char *model);
static void write_artifact_part(JsonWriter *w, const char *provider,
								const char *name, bytea *data,
								const char *mime_type);
static bool provider_takes(const char *provider, const char *mime);
static bool is_text_type(const char *mime);
static bytea *decode_base64(const char *s, int len, int part);
static char *extension_schema(void);

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
	if (strcmp(name, LOAD_MEMORY) == 0 && lists(agent, LOAD_MEMORY))
	{
		JsonbValue *query = adk_jsonb_get(&args->root, "query");

		if (query == NULL || query->type != jbvString)
			return adk_error_object("load_memory needs \"query\": a string");
		return memories_response(search_memory(run, pnstrdup(query->val.string.val,
															  query->val.string.len),
											   false, NULL));
	}
	return NULL;
}

/* load_memory's answer: {"memories": [{content, author, timestamp}, ...]} */
static Jsonb *
memories_response(List *memories)
{
	JsonWriter	w;
	ListCell   *lc;

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
		List	   *memories;
		ListCell   *lc;

		/* the query's embedding: made in the round's steps, else here */
		memories = query ? search_memory(run, query, run->preload_known,
										 run->preload_vector) : NIL;

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
	out = pg_b64_decode(norm, n, (adk_b64_byte *) VARDATA(result), pg_b64_dec_len(n));
	if (out < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("inline_data of message part %d is not valid base64", part)));
	SET_VARSIZE(result, VARHDRSZ + out);
	return result;
}

/*
 * A completed invocation's events go to memory when the app says so: the
 * entries are added now when the app has no embedding model; else their
 * embeddings are started here and the entries added with them by
 * adk_memory_finish, once they are in -- so an embedding failure raises
 * there and adds nothing, as adk_add_session_to_memory does, and a run
 * stopped while it waits adds nothing either.  The texts are read now;
 * events added to memory meanwhile (adk_add_session_to_memory) are
 * skipped when the entries are added.
 */
AdkMemoryWait *
adk_builtin_after_run(AdkRun *run, MemoryContext parent)
{
	Oid			types[4] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		args[4];
	AdkOwnerSave save;
	char	   *model;
	AdkMemoryWait *w;
	MemoryContext old;
	uint64		i;
	int			b;

	if (!app_options(run).add_to_memory)
		return NULL;
	model = embedding_model(run, NULL);
	w = new_wait(run, parent, MW_ADD);
	old = MemoryContextSwitchTo(w->cxt);
	w->model = model ? pstrdup(model) : NULL;
	args[0] = CStringGetTextDatum(run->app);
	args[1] = CStringGetTextDatum(run->user);
	args[2] = CStringGetTextDatum(run->session);
	args[3] = CStringGetTextDatum(run->invocation_id);
	adk_become_owner(&save);
	SPI_connect();
	if (adk_spi_exec("SELECT p.event_id, p.text FROM adk._memory_pending($1, $2, $3, $4) p",
					 4, types, args, NULL, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the invocation's events for memory");
	w->n = (int) SPI_processed;
	w->event_ids = MemoryContextAlloc(w->cxt, sizeof(char *) * (w->n + 1));
	w->texts = MemoryContextAlloc(w->cxt, sizeof(char *) * (w->n + 1));
	for (i = 0; i < SPI_processed; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];

		w->event_ids[i] = MemoryContextStrdup(w->cxt, SPI_getvalue(row, SPI_tuptable->tupdesc, 1));
		w->texts[i] = MemoryContextStrdup(w->cxt, SPI_getvalue(row, SPI_tuptable->tupdesc, 2));
	}
	SPI_finish();
	adk_restore_user(&save);
	MemoryContextSwitchTo(w->cxt);

	if (w->n > 0 && w->model != NULL)
	{
		/* every batch in flight at once */
		w->ncalls = (w->n + EMBED_BATCH - 1) / EMBED_BATCH;
		w->calls = palloc0(sizeof(AdkEmbedCall *) * w->ncalls);
		for (b = 0; b < w->ncalls; b++)
			w->calls[b] = adk_embed_start(w->model,
										  Min(EMBED_BATCH, w->n - b * EMBED_BATCH),
										  w->texts + b * EMBED_BATCH);
		MemoryContextSwitchTo(old);
		return w;
	}
	if (w->n > 0)
		insert_entries(run, w->event_ids, w->n, NULL);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(w->cxt);
	return NULL;
}

/*
 * Before a model call of an agent with preload_memory: the user's message
 * embedded for the search, in the round's steps.  NULL when there is
 * nothing to wait for: the agent does not preload, the embedding was made
 * in an earlier round of the invocation (its message does not change), or
 * there is nothing to embed (no embedding model, no text).  A failed
 * embedding is tried again in the next round, as before every model call
 * without the stepper.
 */
AdkMemoryWait *
adk_builtin_preload_start(AdkRun *run, AdkAgent *agent, MemoryContext parent)
{
	char	   *query;
	AdkMemoryWait *w;

	if (!lists(agent, PRELOAD_MEMORY) ||
		(run->preload_known && run->preload_vector != NULL))
		return NULL;
	query = run->user_content ? user_text(run->user_content) : NULL;
	if (query == NULL)
		return NULL;

	/*
	 * Until the answer is in, an instruction built meanwhile (tail
	 * retention's token estimate) searches with full text alone, never
	 * waiting for an embedding of its own.
	 */
	run->preload_known = true;
	run->preload_vector = NULL;
	w = search_wait(run, parent, MW_PRELOAD, query);
	if (w->ncalls == 0 && w->error == NULL)
	{
		/* no embedding model: full-text search alone */
		MemoryContextDelete(w->cxt);
		return NULL;
	}
	return w;
}

/*
 * A call of load_memory by an agent that lists it: its query's embedding
 * started, the search made by adk_memory_finish.  NULL when it is not one
 * (or its arguments are wrong: adk_builtin_call says so).
 */
AdkMemoryWait *
adk_builtin_load_memory_start(AdkRun *run, AdkAgent *agent, const char *name,
							  Jsonb *args, MemoryContext parent)
{
	JsonbValue *query;

	if (strcmp(name, LOAD_MEMORY) != 0 || !lists(agent, LOAD_MEMORY) ||
		(query = adk_jsonb_get(&args->root, "query")) == NULL ||
		query->type != jbvString)
		return NULL;
	return search_wait(run, parent, MW_LOAD,
					   pnstrdup(query->val.string.val, query->val.string.len));
}

bool
adk_memory_ready(const AdkMemoryWait *w)
{
	int			i;

	for (i = 0; i < w->ncalls; i++)
		if (w->calls[i] != NULL && !adk_embed_ready(w->calls[i]))
			return false;
	return true;
}

/*
 * The embeddings are in: the entries added with them (an embedding failure
 * raises, as adk_add_session_to_memory does), or the search made with the
 * query's (a failure: a warning, and full-text search alone, as
 * adk_search_memory does).  load_memory's function response is returned,
 * in the caller's memory; NULL otherwise.  w is gone afterwards.
 */
Jsonb *
adk_memory_finish(AdkMemoryWait *w)
{
	MemoryContext caller = CurrentMemoryContext;
	AdkRun	   *run = w->run;
	Jsonb	   *result = NULL;

	Assert(adk_memory_ready(w));
	MemoryContextSwitchTo(w->cxt);
	if (w->kind == MW_ADD)
	{
		Datum	   *values = NULL;
		int			dims[2] = {w->n, 0};
		int			lbs[2] = {1, 1};
		int			b;
		int			i;
		int			k = 0;

		for (b = 0; b < w->ncalls; b++)
		{
			int			nb = Min(EMBED_BATCH, w->n - b * EMBED_BATCH);
			ArrayType **v = adk_embed_finish(w->calls[b]);

			for (i = 0; i < nb; i++)
			{
				int			d = ArrayGetNItems(ARR_NDIM(v[i]), ARR_DIMS(v[i]));
				Datum	   *elems;
				int			j;
				int			ne;

				if (values == NULL)
				{
					dims[1] = d;
					values = palloc(sizeof(Datum) * w->n * d);
				}
				else if (d != dims[1])
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("embedding model \"%s\" answered vectors of different lengths",
									w->model)));
				deconstruct_array(v[i], FLOAT4OID, sizeof(float4), true, TYPALIGN_INT,
								  &elems, NULL, &ne);
				for (j = 0; j < ne; j++)
					values[k++] = elems[j];
			}
		}
		insert_entries(run, w->event_ids, w->n,
					   construct_md_array(values, NULL, 2, dims, lbs, FLOAT4OID,
										  sizeof(float4), true, TYPALIGN_INT));
	}
	else
	{
		char	   *error;

		if (w->ncalls > 0 && !adk_run_guarded(search_finish, w, &error))
			w->error = error;
		if (w->error != NULL)
			ereport(WARNING,
					(errmsg("memory search without embeddings: %s", w->error)));
		MemoryContextSwitchTo(caller);
		if (w->kind == MW_PRELOAD)
		{
			/* for this round's instruction, and the invocation's next ones */
			run->preload_known = true;
			run->preload_vector = NULL;
			if (w->vector != NULL)
			{
				run->preload_vector = MemoryContextAlloc(run->run_cxt, VARSIZE(w->vector));
				memcpy(run->preload_vector, w->vector, VARSIZE(w->vector));
			}
		}
		else
			result = memories_response(search_memory(run, w->query, true, w->vector));
	}
	MemoryContextSwitchTo(caller);
	MemoryContextDelete(w->cxt);
	return result;
}

void
adk_memory_abandon(AdkMemoryWait *w)
{
	MemoryContextDelete(w->cxt);
}

static AdkMemoryWait *
new_wait(AdkRun *run, MemoryContext parent, MemoryWaitKind kind)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "adk_runner memory",
											  ALLOCSET_SMALL_SIZES);
	AdkMemoryWait *w = MemoryContextAllocZero(cxt, sizeof(AdkMemoryWait));

	w->cxt = cxt;
	w->run = run;
	w->kind = kind;
	return w;
}

/*
 * The app's embedding model, when it has one and there is something to
 * embed (query NULL: adding; else a query with a letter or digit, as
 * adk._memory_search has it); NULL otherwise.
 */
static char *
embedding_model(AdkRun *run, const char *query)
{
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		args[2];
	char		nulls[2] = {' ', query ? ' ' : 'n'};
	char	   *result = NULL;
	MemoryContext caller = CurrentMemoryContext;
	AdkOwnerSave save;

	args[0] = CStringGetTextDatum(run->app);
	args[1] = query ? CStringGetTextDatum(query) : (Datum) 0;
	adk_become_owner(&save);
	SPI_connect();
	if (adk_spi_exec("SELECT a.memory_embedding_model FROM adk.apps a"
					 " WHERE a.name OPERATOR(pg_catalog.=) $1"
					 "   AND a.memory_embedding_model IS NOT NULL"
					 "   AND ($2 IS NULL OR $2 OPERATOR(pg_catalog.~) '[[:alnum:]]')",
					 2, types, args, nulls, 1) == SPI_OK_SELECT && SPI_processed == 1)
		result = MemoryContextStrdup(caller, SPI_getvalue(SPI_tuptable->vals[0],
														  SPI_tuptable->tupdesc, 1));
	SPI_finish();
	adk_restore_user(&save);
	return result;
}

/*
 * A search's wait: the query's embedding started when the app has an
 * embedding model (ncalls 1); a failure to start it is kept in error (the
 * search then warns and goes on without, as adk._memory_search does).
 */
static AdkMemoryWait *
search_wait(AdkRun *run, MemoryContext parent, MemoryWaitKind kind,
			const char *query)
{
	AdkMemoryWait *w = new_wait(run, parent, kind);
	MemoryContext old = MemoryContextSwitchTo(w->cxt);
	char	   *model = embedding_model(run, query);
	char	   *error;

	w->query = pstrdup(query);
	if (model != NULL)
	{
		w->model = model;
		w->ncalls = 1;
		w->calls = palloc0(sizeof(AdkEmbedCall *));
		if (!adk_run_guarded(search_start, w, &error))
		{
			w->error = error;
			w->ncalls = 0;
		}
	}
	MemoryContextSwitchTo(old);
	return w;
}

/* In a subtransaction, in w's memory */
static void
search_start(void *arg)
{
	AdkMemoryWait *w = (AdkMemoryWait *) arg;

	w->calls[0] = adk_embed_start(w->model, 1, &w->query);
}

/* In a subtransaction, in w's memory */
static void
search_finish(void *arg)
{
	AdkMemoryWait *w = (AdkMemoryWait *) arg;

	w->vector = adk_embed_finish(w->calls[0])[0];
}

/*
 * adk._memory_insert as the owner: the events' entries, with their
 * embeddings (rows of a two-dimensional real[]) or without (NULL).
 */
static void
insert_entries(AdkRun *run, char **event_ids, int n, ArrayType *embeddings)
{
	Oid			types[5] = {TEXTOID, TEXTOID, TEXTOID, TEXTARRAYOID, FLOAT4ARRAYOID};
	Datum		args[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', embeddings ? ' ' : 'n'};
	Datum	   *ids = palloc(sizeof(Datum) * n);
	AdkOwnerSave save;
	int			i;

	for (i = 0; i < n; i++)
		ids[i] = CStringGetTextDatum(event_ids[i]);
	args[0] = CStringGetTextDatum(run->app);
	args[1] = CStringGetTextDatum(run->user);
	args[2] = CStringGetTextDatum(run->session);
	args[3] = PointerGetDatum(construct_array(ids, n, TEXTOID, -1, false, TYPALIGN_INT));
	args[4] = PointerGetDatum(embeddings);
	adk_become_owner(&save);
	SPI_connect();
	if (adk_spi_exec("SELECT adk._memory_insert($1, $2, $3, $4, $5)",
					 5, types, args, nulls, 1) != SPI_OK_SELECT)
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

/*
 * The user's memories matching query, best first: with the query's
 * embedding when known (vector; NULL: full-text search alone), else
 * adk._memory_search embeds it, waiting in the call (outside the steps of
 * a run: adk_prompt, an agent-tool's instruction).
 */
static List *
search_memory(AdkRun *run, const char *query, bool known, ArrayType *vector)
{
	List	   *result = NIL;
	Oid			types[5] = {TEXTOID, TEXTOID, TEXTOID, INT4OID, FLOAT4ARRAYOID};
	Datum		args[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', vector ? ' ' : 'n'};
	MemoryContext caller = CurrentMemoryContext;
	uint64		i;

	args[0] = CStringGetTextDatum(run->app);
	args[1] = CStringGetTextDatum(run->user);
	args[2] = CStringGetTextDatum(query);
	args[3] = Int32GetDatum(MEMORY_RESULTS);
	args[4] = PointerGetDatum(vector);
	SPI_connect();
	if (adk_spi_exec(known ?
					 "SELECT m.text, m.author,"
					 " pg_catalog.to_jsonb(m.\"timestamp\") OPERATOR(pg_catalog.#>>) '{}'"
					 " FROM adk._memory_search_vec($1, $2, $3, $4, $5) m" :
					 "SELECT m.text, m.author,"
					 " pg_catalog.to_jsonb(m.\"timestamp\") OPERATOR(pg_catalog.#>>) '{}'"
					 " FROM adk._memory_search($1, $2, $3, $4) m",
					 known ? 5 : 4, types, args, nulls, 0) != SPI_OK_SELECT)
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

