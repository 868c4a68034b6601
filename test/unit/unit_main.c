/*-------------------------------------------------------------------------
 *
 * unit_main.c
 *	  Runner and helpers of the standalone unit tests of src/model.
 *
 * Prints one line per test ("test suite/name ... ok" or "... FAILED"),
 * the failed checks above it, and ends with "unit: N passed, M failed".
 * Exits 1 when any test failed.
 *
 * IDENTIFICATION
 *	  test/unit/unit_main.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

#ifndef UNIT_DATA_DIR
#define UNIT_DATA_DIR "data"
#endif

typedef struct UnitSuite
{
	const char *name;
	const UnitTest *tests;
} UnitSuite;

static int	unit_failures;		/* failed checks in the running test */

static void unit_partial(struct json_object *partial, void *arg);
static struct json_object *unit_build_spec(LlmRequestSpec *spec, char **err);
static void unit_pretty(const char *label, struct json_object *obj);

void
unit_fail(const char *file, int line, const char *fmt,...)
{
	va_list		ap;

	fprintf(stdout, "    %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	unit_failures++;
}

static void
unit_pretty(const char *label, struct json_object *obj)
{
	fprintf(stdout, "      %s: %s\n", label,
			obj ? json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN |
												 JSON_C_TO_STRING_NOSLASHESCAPE) :
			"(NULL)");
}

int
unit_check_json(const char *file, int line, struct json_object *got,
				struct json_object *want)
{
	if (got != NULL && want != NULL && json_object_equal(got, want))
		return 1;
	unit_fail(file, line, "JSON differs");
	unit_pretty("got     ", got);
	unit_pretty("expected", want);
	return 0;
}

int
unit_check_json_text(const char *file, int line, struct json_object *got,
					 const char *want)
{
	struct json_object *w = J(want);
	int			rc = unit_check_json(file, line, got, w);

	json_object_put(w);
	return rc;
}

struct json_object *
J(const char *squoted)
{
	char	   *copy = strdup(squoted);
	char	   *p;
	struct json_object *obj;

	for (p = copy; *p; p++)
		if (*p == '\'')
			*p = '"';
	obj = json_tokener_parse(copy);
	if (obj == NULL)
	{
		fprintf(stderr, "bad JSON literal in test: %s\n", copy);
		abort();
	}
	free(copy);
	return obj;
}

char *
unit_read(const char *name, size_t *len)
{
	char		path[1024];
	FILE	   *f;
	char	   *buf;
	long		size;

	snprintf(path, sizeof(path), "%s/%s", UNIT_DATA_DIR, name);
	f = fopen(path, "rb");
	if (f == NULL)
	{
		fprintf(stderr, "cannot open fixture %s\n", path);
		abort();
	}
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t) size + 1);
	if (fread(buf, 1, (size_t) size, f) != (size_t) size)
		abort();
	buf[size] = '\0';
	fclose(f);
	if (len != NULL)
		*len = (size_t) size;
	return buf;
}

struct json_object *
unit_load(const char *name)
{
	char	   *text = unit_read(name, NULL);
	struct json_object *obj = json_tokener_parse(text);

	if (obj == NULL)
	{
		fprintf(stderr, "bad JSON in fixture %s\n", name);
		abort();
	}
	free(text);
	return obj;
}

static struct json_object *
unit_build_spec(LlmRequestSpec *spec, char **err)
{
	char	   *body = llm_build_request(spec, err);
	struct json_object *obj;

	if (body == NULL)
		return NULL;
	obj = json_tokener_parse(body);
	if (obj == NULL)
		unit_fail(__FILE__, __LINE__, "request body is not JSON: %s", body);
	free(body);
	return obj;
}

struct json_object *
unit_build_fixture(LlmProvider p, const char *model, int stream)
{
	LlmRequestSpec spec;
	struct json_object *obj;
	char	   *err = NULL;

	memset(&spec, 0, sizeof(spec));
	spec.provider = p;
	spec.model = model;
	spec.contents = unit_load("history.json");
	spec.tools = unit_load("tools.json");
	spec.config = unit_load("config.json");
	spec.system_instruction = "You are helpful.";
	spec.stream = stream;
	obj = unit_build_spec(&spec, &err);
	if (obj == NULL)
		unit_fail(__FILE__, __LINE__, "build failed: %s", err ? err : "?");
	free(err);
	json_object_put(spec.contents);
	json_object_put(spec.tools);
	json_object_put(spec.config);
	return obj;
}

struct json_object *
unit_build(LlmProvider p, const char *contents, char **err)
{
	LlmRequestSpec spec;
	struct json_object *obj;

	memset(&spec, 0, sizeof(spec));
	spec.provider = p;
	spec.model = "m";
	spec.contents = J(contents);
	obj = unit_build_spec(&spec, err);
	json_object_put(spec.contents);
	return obj;
}

/* what contents made, by the content's text: unit_check_reuse's cache */
/*
 * A history with every kind of content the adapters reuse or not: text,
 * calls and responses with and without ids, a thought with a signature,
 * another agent's context, inline data, empty and thought-only contents.
 */
const char unit_reuse_history[] =
	"[{'role':'user','parts':[{'text':'hi'}]},"
	"{'role':'model','parts':[{'text':'Let me look.'},"
	"{'function_call':{'id':'t1','name':'get_weather','args':{'city':'Paris'}},'thought_signature':'c2ln'},"
	"{'function_call':{'id':'t2','name':'lookup','args':{'q':'x'}}}]},"
	"{'role':'user','parts':[{'function_response':{'id':'t2','name':'lookup','response':{'r':2}}},"
	"{'function_response':{'id':'t1','name':'get_weather','response':{'temp':21}}}]},"
	"{'role':'model','parts':[{'function_call':{'name':'get_weather','args':{'city':'Rome'}}}]},"
	"{'role':'user','parts':[{'function_response':{'name':'get_weather','response':{'temp':25}}}]},"
	"{'role':'user','parts':[{'text':'For context:'},{'text':'[other] said: done'}]},"
	"{'role':'model','parts':[{'function_call':{'id':'call_1','name':'lookup','args':{}}}]},"
	"{'role':'user','parts':[{'function_response':{'id':'call_1','name':'lookup','response':{}}}]},"
	"{'role':'model','parts':[{'text':'hmm','thought':true},{'text':''}]},"
	"{'role':'user','parts':[{'inline_data':{'mime_type':'image/png','data':'iVBO'}},{'text':'see'}]},"
	"{'role':'model','parts':[{'text':''}]},"
	"{'role':'user','parts':[{'function_response':{'name':'lookup','response':{'late':true}}}]},"
	"{'role':'model','parts':[{'text':'again'},{'function_call':{'id':'t3','name':'get_weather','args':{'city':'Oslo'}}}]},"
	"{'role':'user','parts':[{'function_response':{'name':'get_weather','response':{'temp':3}}}]}]";

typedef struct UnitMade
{
	char	   *key;
	struct json_object *made;
} UnitMade;

static int	unit_reuse_one(const char *file, int line, LlmProvider p,
						   struct json_object *contents, UnitMade **cache,
						   size_t *ncache);

/* what unit_idmsgs looks in: the cache, and the request's content keys */
typedef struct UnitIdArg
{
	UnitMade   *cache;
	size_t		ncache;
	char	  **keys;
} UnitIdArg;

int			unit_idreuse_hits = 0;

/* (content text, ids) as one key: "<text>\001<sig>" */
static char *
unit_id_key(const char *key, const char *sig)
{
	char	   *k = malloc(strlen(key) + strlen(sig) + 2);

	sprintf(k, "%s\001%s", key, sig);
	return k;
}

/* LlmRequestSpec.idmsgs over the cache, as msg_cache.c keys it */
static struct json_object *
unit_idmsgs(void *arg, size_t i, const char *sig)
{
	UnitIdArg  *a = (UnitIdArg *) arg;
	char	   *k = unit_id_key(a->keys[i], sig);
	struct json_object *found = NULL;
	size_t		j;

	for (j = 0; j < a->ncache && found == NULL; j++)
		if (strcmp(a->cache[j].key, k) == 0)
			found = a->cache[j].made;
	free(k);
	if (found != NULL)
		unit_idreuse_hits++;
	return found;
}

int
unit_check_reuse(const char *file, int line, LlmProvider p,
				 const char *history, const char *expect_kept)
{
	struct json_object *h = J(history);
	size_t		n = json_object_array_length(h);
	UnitMade   *cache = NULL;
	size_t		ncache = 0;
	size_t		i;
	size_t		k;
	int			reused = 0;

	if (strlen(expect_kept) != n)
		unit_fail(file, line, "expect_kept has %zu flags for %zu contents",
				  strlen(expect_kept), n);
	/*
	 * requests: the prefixes of 1..n contents (a tool loop), the suffixes
	 * from content 0..n-1 on (compaction), all n reversed
	 */
	for (k = 0; k < 2 * n + 1; k++)
	{
		struct json_object *req = json_object_new_array();

		for (i = 0; i < n; i++)
		{
			struct json_object *c = json_object_array_get_idx(h, k == 2 * n ? n - 1 - i : i);

			if ((k < n && i > k) || (k >= n && k < 2 * n && i < k - n))
				continue;
			json_object_array_add(req, json_object_get(c));
		}
		reused += unit_reuse_one(file, line, p, req, &cache, &ncache);
		json_object_put(req);
	}
	for (i = 0; i < n; i++)
	{
		const char *key = json_object_to_json_string_ext(json_object_array_get_idx(h, i),
														 JSON_C_TO_STRING_PLAIN);
		int			kept = 0;

		for (k = 0; k < ncache; k++)
			kept |= (strcmp(cache[k].key, key) == 0);
		if (kept != (expect_kept[i] == '1'))
			unit_fail(file, line, "content %zu %s kept", i, kept ? "was" : "was not");
	}
	for (k = 0; k < ncache; k++)
	{
		free(cache[k].key);
		json_object_put(cache[k].made);
	}
	free(cache);
	json_object_put(h);
	return reused;
}

/* the spec the resume checks build with: contents, tools, an instruction */
static void
resume_spec(LlmRequestSpec *spec, LlmProvider p, struct json_object *contents,
			struct json_object *tools)
{
	memset(spec, 0, sizeof(*spec));
	spec->provider = p;
	spec->model = "m";
	spec->tools = tools;
	spec->system_instruction = "Be brief.";
	spec->contents = contents;
}

/* the body of contents built whole, with its log (malloc'd) */
static char *
unit_resume_build(LlmProvider p, struct json_object *contents, size_t from,
				  const LlmRequestLog *prev, LlmRequestLog *log, char **err)
{
	LlmRequestSpec spec;
	struct json_object *tools = unit_load("tools.json");
	char	   *body;

	resume_spec(&spec, p, contents, tools);
	spec.log = log;
	if (from > 0)
	{
		spec.from = from;
		spec.resume_msgs = prev->msgs;
		spec.resume_off = prev->msgs_off;
		spec.resume_n = prev->b[from].nmsgs;
		spec.resume_ids = &prev->b[from].ids;
	}
	body = llm_build_request(&spec, err);
	json_object_put(tools);
	return body;
}

/* contents[from, n) of a, then b (not NULL) */
static struct json_object *
unit_slice(struct json_object *a, size_t from, size_t n, struct json_object *b)
{
	struct json_object *out = json_object_new_array();
	size_t		i;

	for (i = from; i < n; i++)
		json_object_array_add(out, json_object_get(json_object_array_get_idx(a, i)));
	if (b != NULL)
		json_object_array_add(out, json_object_get(b));
	return out;
}

static void
unit_resume_compare(const char *file, int line, LlmProvider p,
					struct json_object *h, size_t b, size_t n,
					struct json_object *extra, const LlmRequestLog *log)
{
	struct json_object *all = unit_slice(h, 0, n, extra);
	struct json_object *tail = unit_slice(h, b, n, extra);
	LlmRequestLog wlog = {0};
	LlmRequestLog rlog = {0};
	char	   *err1 = NULL;
	char	   *err2 = NULL;
	char	   *whole = unit_resume_build(p, all, 0, NULL, &wlog, &err1);
	char	   *resumed = unit_resume_build(p, tail, b, log, &rlog, &err2);
	size_t		k;

	if (whole == NULL || resumed == NULL ? whole != resumed : strcmp(whole, resumed) != 0)
		unit_fail(file, line, "request resumed at %zu of %zu (%s) differs:\n  whole   %s\n  resumed %s",
				  b, n, extra ? "another content after" : "same contents",
				  whole ? whole : err1, resumed ? resumed : err2);
	else if (whole != NULL && rlog.n != wlog.n - b)
		unit_fail(file, line, "resumed at %zu: %zu boundaries logged, expected %zu",
				  b, rlog.n, wlog.n - b);
	else if (whole != NULL)
		for (k = 0; k < rlog.n; k++)
			if (rlog.b[k].nmsgs != wlog.b[b + k].nmsgs ||
				rlog.b[k].resume != wlog.b[b + k].resume ||
				rlog.b[k].ids.counter != wlog.b[b + k].ids.counter ||
				rlog.b[k].ids.nopen != wlog.b[b + k].ids.nopen)
				unit_fail(file, line, "resumed at %zu: boundary %zu logged otherwise",
						  b, b + k);
	free(whole);
	free(resumed);
	free(err1);
	free(err2);
	llm_log_free(&wlog);
	llm_log_free(&rlog);
	json_object_put(all);
	json_object_put(tail);
}

int
unit_check_resume(const char *file, int line, LlmProvider p,
				  const char *history)
{
	struct json_object *h = J(history);
	size_t		n = json_object_array_length(h);
	LlmRequestLog log = {0};
	char	   *err = NULL;
	char	   *whole = unit_resume_build(p, h, 0, NULL, &log, &err);
	size_t		b;
	size_t		i;
	int			resumable = 0;

	if (whole == NULL || log.n != n + 1 || log.msgs == NULL)
	{
		unit_fail(file, line, "whole build: %s, %zu boundaries for %zu contents",
				  whole ? "ok" : err, log.n, n);
		goto done;
	}
	for (b = 1; b <= n; b++)
	{
		if (log.b[b].resume == LLM_RESUME_NO)
			continue;
		resumable++;
		if (b < n)
			unit_resume_compare(file, line, p, h, b, n, NULL, &log);
		if (log.b[b].resume != LLM_RESUME_ANY)
			continue;
		/* the request goes on otherwise: any content after the boundary */
		for (i = 0; i < n; i++)
			unit_resume_compare(file, line, p, h, b, b,
								json_object_array_get_idx(h, i), &log);
	}
done:
	free(whole);
	free(err);
	llm_log_free(&log);
	json_object_put(h);
	return resumable;
}

/*
 * One request of unit_check_reuse: its bytes with and without reuse, and
 * what its contents made added to the cache.  Returns the contents reused.
 */
static int
unit_reuse_one(const char *file, int line, LlmProvider p,
			   struct json_object *contents, UnitMade **cache, size_t *ncache)
{
	LlmRequestSpec spec;
	size_t		n = json_object_array_length(contents);
	struct json_object **slots = calloc(n + 1, sizeof(struct json_object *));
	char	  **keys = calloc(n + 1, sizeof(char *));
	char	  **all = calloc(n + 1, sizeof(char *));
	LlmIdReuse *ids = calloc(n + 1, sizeof(LlmIdReuse));
	UnitIdArg	idarg;
	struct json_object *holes = json_object_new_array();
	struct json_object *tools = unit_load("tools.json");
	char	   *plain;
	char	   *got;
	char	   *err1 = NULL;
	char	   *err2 = NULL;
	size_t		i;
	size_t		k;
	int			reused = 0;

	resume_spec(&spec, p, contents, tools);
	plain = llm_build_request(&spec, &err1);
	for (i = 0; i < n; i++)
	{
		struct json_object *c = json_object_array_get_idx(contents, i);

		keys[i] = strdup(json_object_to_json_string_ext(c, JSON_C_TO_STRING_PLAIN));
		all[i] = strdup(keys[i]);
		for (k = 0; k < *ncache; k++)
			if (strcmp((*cache)[k].key, keys[i]) == 0)
				slots[i] = (*cache)[k].made;
		/* a reused content is not read: JSON null in its place */
		json_object_array_add(holes, slots[i] ? NULL : json_object_get(c));
		if (slots[i] != NULL)
		{
			free(keys[i]);
			keys[i] = NULL;
			reused++;
		}
	}
	spec.contents = holes;
	spec.reuse = slots;
	/* and the messages contents made with the ids they were given */
	idarg.cache = *cache;
	idarg.ncache = *ncache;
	idarg.keys = all;
	spec.idreuse = ids;
	spec.idmsgs = unit_idmsgs;
	spec.idarg = &idarg;
	got = llm_build_request(&spec, &err2);
	if (plain == NULL || got == NULL ? plain != got : strcmp(plain, got) != 0)
		unit_fail(file, line, "request with reuse differs:\n  plain %s\n  reuse %s",
				  plain ? plain : err1, got ? got : err2);
	for (i = 0; i < n; i++)
		if (keys[i] != NULL && slots[i] != NULL)
		{
			*cache = realloc(*cache, (*ncache + 1) * sizeof(UnitMade));
			(*cache)[*ncache].key = keys[i];
			(*cache)[*ncache].made = slots[i];
			(*ncache)++;
		}
		else
			free(keys[i]);
	for (i = 0; i < n; i++)
	{
		if (ids[i].made != NULL && ids[i].made_sig != NULL)
		{
			*cache = realloc(*cache, (*ncache + 1) * sizeof(UnitMade));
			(*cache)[*ncache].key = unit_id_key(all[i], ids[i].made_sig);
			(*cache)[*ncache].made = ids[i].made;
			(*ncache)++;
		}
		else
			json_object_put(ids[i].made);
		free(ids[i].made_sig);
		free(all[i]);
	}
	free(ids);
	free(all);
	free(plain);
	free(got);
	free(err1);
	free(err2);
	free(slots);
	free(keys);
	json_object_put(holes);
	json_object_put(tools);
	return reused;
}

static void
unit_partial(struct json_object *partial, void *arg)
{
	struct json_object *copy = NULL;

	json_object_deep_copy(partial, &copy, NULL);
	json_object_array_add((struct json_object *) arg, copy);
}

void
unit_stream(LlmProvider p, const char *body, size_t len, size_t step,
			long status, UnitStreamRun *run)
{
	LlmStream  *s;
	size_t		off = 0;

	memset(run, 0, sizeof(UnitStreamRun));
	run->partials = json_object_new_array();
	s = llm_stream_new(p, unit_partial, run->partials);
	if (step == 0)
		step = len ? len : 1;
	while (off < len)
	{
		size_t		n = (len - off < step) ? len - off : step;

		if (llm_stream_feed(s, body + off, n) < 0)
			run->feed_failed = 1;
		off += n;
	}
	run->final = llm_stream_finish(s, status);
	llm_stream_free(s);
}

void
unit_stream_free(UnitStreamRun *run)
{
	json_object_put(run->final);
	json_object_put(run->partials);
	memset(run, 0, sizeof(UnitStreamRun));
}

int
unit_strip_ids(const char *file, int line, struct json_object *resp)
{
	struct json_object *parts = llm_get_arr(llm_get_obj(resp, "content"), "parts");
	size_t		i;
	int			n = 0;

	for (i = 0; parts != NULL && i < json_object_array_length(parts); i++)
	{
		struct json_object *fc = llm_get_obj(json_object_array_get_idx(parts, i),
											 "function_call");
		const char *id = llm_get_str(fc, "id");

		if (fc == NULL)
			continue;
		if (id == NULL)
		{
			unit_fail(file, line, "function call without id");
			continue;
		}
		if (strncmp(id, "adk-", 4) != 0)
			continue;
		if (!llm_is_generated_call_id(id))
			unit_fail(file, line, "malformed generated id \"%s\"", id);
		llm_add_str(fc, "id", "GEN");
		n++;
	}
	return n;
}

int
main(void)
{
	static const UnitSuite suites[] = {
		{"sse", sse_tests},
		{"common", common_tests},
		{"openai", openai_tests},
		{"gemini", gemini_tests},
		{"anthropic", anthropic_tests},
		{"output", output_tests},
		{"addr", addr_tests},
	};
	int			passed = 0;
	int			failed = 0;
	size_t		i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 0; i < sizeof(suites) / sizeof(suites[0]); i++)
	{
		const UnitTest *t;

		for (t = suites[i].tests; t->name != NULL; t++)
		{
			unit_failures = 0;
			t->fn();
			printf("test %s/%s ... %s\n", suites[i].name, t->name,
				   unit_failures ? "FAILED" : "ok");
			if (unit_failures)
				failed++;
			else
				passed++;
		}
	}
	printf("unit: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
