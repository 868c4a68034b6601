/*-------------------------------------------------------------------------
 *
 * generate.c
 *	  One model call: adk_model_call() and adk_model_start() for the
 *	  runner, and for adk_generate() (generate_sql.c).
 *
 * The order of work: load the model and its key (model_def.c), merge the
 * model's options with the call's config (the call's options win, except
 * for headers: the two header sets are merged, and on a name both set --
 * compared case-insensitively -- the model's admin-set value wins, so a
 * call cannot replace a gateway's header), build the provider's request
 * (adapter_*.c), POST it (http.c), parse or stream the answer back into
 * ADK's LlmResponse shape, write the ledger row (ledger.c), and return the
 * response as jsonb.
 *
 * A provider or transport failure is not an ERROR: it comes back as a
 * response with error_code and error_message, and is recorded.  Invalid
 * arguments, a missing model, a key that may not be used, and query
 * cancellation raise.  Every json-c object has an owner on the error path.
 *
 * IDENTIFICATION
 *	  src/model/generate.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "access/xact.h"
#define json_object pg_json_object_sqlfn
#include "utils/builtins.h"
#undef json_object
#include "fmgr.h"
#include "nodes/pg_list.h"
#include "portability/instr_time.h"
#include "utils/memutils.h"
#include "utils/numeric.h"

#include <json-c/json.h>

#include "common/json_bridge.h"
#include "common/jsonb_util.h"
#include "common/trace_context.h"
#include "model/fallback.h"
#include "model/generate.h"
#include "model/guard.h"
#include "model/http.h"
#include "model/ledger.h"
#include "model/llm.h"
#include "model/model_def.h"
#include "model/msg_cache.h"
#include "model/request_memo.h"
#include "shared/breaker.h"

int			adk_max_response_bytes = 8 * 1024 * 1024;
int			adk_max_request_bytes = 20 * 1024 * 1024;
bool		adk_verify_incremental = false;

#define DEFAULT_TIMEOUT_MS			60000
#define DEFAULT_CONNECT_TIMEOUT_MS	10000
#define DEFAULT_RETRIES				2

/* What the streaming callbacks share. */
typedef struct StreamState
{
	LlmStream  *stream;
	List	   *pending;		/* json-c partials not yet handed on */
	AdkPartialFn on_partial;
	void	   *arg;
	const char *secret;			/* the key, redacted from every partial */
	AdkRedactHold hold;
	instr_time	start;			/* the request was sent */
	double		first_chunk_ms; /* time to the first body chunk; < 0: none yet */
	int			handed;			/* partials handed on so far */
	bool		keep_signatures;	/* adk_drop_thoughts' (guard.c) */
} StreamState;

/*
 * One model call in flight.  It lives in a memory context of its own
 * (cxt, under the context current when it started); deleting that context
 * stops the HTTP transfer if it is still running (http.c) and puts every
 * json-c object (a reset callback), so an ERROR anywhere leaks nothing.
 */
struct AdkModelCall
{
	MemoryContext cxt;
	AdkModelDef def;
	bool		stream;
	char	   *url;
	char	   *body;			/* malloc'd (llm.h), freed with cxt */
	AdkHttpRequest req;
	AdkHttpResponse resp;
	AdkHttpTransfer *transfer;
	struct json_object *contents;
	struct json_object *tools;
	struct json_object *config;
	struct json_object *result;
	struct json_object *request;	/* the body in json-c, while it is built */
	Jsonb	   *ledger_request; /* the body as the ledger stores it */
	struct json_object *headers;	/* the model's and the call's headers,
									 * merged; NULL: as the options say */
	StreamState st;				/* its stream and pending partials */
	char	   *app;			/* the session it is made for (its ledger */
	char	   *user;			/* row's owner), or NULL: none */
	char	   *invocation_id;	/* or NULL: none */
	bool		traced;			/* trace: the span the request joins */
	AdkTraceCurrent trace;
	MemoryContextCallback cb;

	/*
	 * Fallback models (fallback.c): the chain of models the call may try
	 * (chain[0] the model called; NULL: it has no fallbacks), the one now
	 * tried (def is a copy of chain[at]), how many went before it
	 * (attempt), the one it fell back from, and why the first went on.
	 * What the next request is built of is kept (copies) while a model is
	 * left to try, and so are the failed attempts' ledger rows, written
	 * when the call finishes.
	 */
	AdkModelDef *chain;
	int			nchain;
	int			at;
	int			attempt;
	const char *fallback_from;
	const char *first_error;
	bool		settled;		/* the answer is final: no model is tried
								 * after it */
	bool		thoughts_dropped;	/* adk.store_thoughts off took thought
									 * text out of result */
	struct json_object *thoughts;	/* ... and what it took (guard.c's
									 * adk_drop_thoughts), or NULL */
	Jsonb	   *keep_contents;
	Jsonb	   *keep_tools;
	Jsonb	   *keep_config;
	AdkPartialFn on_partial;
	void	   *arg;
	List	   *failed;			/* AdkModelCallRecord *, in order */
};

static bool has_header(struct json_object *extra, const char *name);
static void merge_headers(AdkModelCall *c, struct json_object *call);
static const char **build_headers(const AdkModelDef *def,
								  struct json_object *config,
								  const AdkTraceCurrent *trace, int *n);
static void collect_partial(struct json_object *partial, void *arg);
static void on_chunk(const char *data, size_t len, void *arg);
static void hand_on_partials(StreamState *st);
static Jsonb *partial_to_jsonb(StreamState *st, struct json_object *p);
static void free_call_objects(void *arg);
static void start_call(AdkModelCall *c, Jsonb *contents, Jsonb *tools,
					   Jsonb *options, AdkPartialFn on_partial, void *arg,
					   AdkRequestMemo *memo);
static Jsonb *finish_call(AdkModelCall *c);
static void make_result(AdkModelCall *c);
static void fill_record(AdkModelCall *c, AdkModelCallRecord *rec);
static void start_attempt(AdkModelCall *c, Jsonb *contents, Jsonb *tools,
						  Jsonb *config, AdkRequestMemo *memo);
static bool next_model(AdkModelCall *c, bool skip_open);
static bool fail_over(AdkModelCall *c);
static void go_on(AdkModelCall *c);
static void settle(AdkModelCall *c);
static int	request_limit(AdkModelCall *c, const char **name);
static void refuse_request(AdkModelCall *c, size_t len, int limit,
						   const char *name);

/* A content of the request: its jsonb bytes, and whether they were kept */
typedef struct ContentKey
{
	const char *key;
	size_t		len;
	uint32		hash;			/* adk_msg_cache_hash of the bytes */
	bool		kept;
} ContentKey;

/* What idmsgs_lookup needs: where each content's bytes are */
typedef struct IdMsgsArg
{
	LlmProvider provider;
	ContentKey *keys;
} IdMsgsArg;

static struct json_object *idmsgs_lookup(void *arg, size_t i, const char *sig);
static struct json_object **convert_contents(AdkModelCall *c, Jsonb *contents,
											 int *from, ContentKey **keys,
											 int *n, LlmIdReuse **idreuse);
static void keep_made(AdkModelCall *c, struct json_object **reuse,
					  LlmIdReuse *idreuse, ContentKey *keys, int n);
static char *build_body(AdkModelCall *c, Jsonb *contents,
						const LlmRequestSpec *base, AdkRequestMemo *memo,
						int *from, LlmRequestLog *log, Jsonb **ledger);
static void verify_resumed(AdkModelCall *c, Jsonb *contents,
						   const LlmRequestSpec *base, const char *body,
						   AdkRequestMemo *memo, int from);


/*
 * One model call, waited for.  contents: array of ADK contents; tools:
 * array of {name, description, parameters} or NULL; config: generation
 * config and call options (overriding the model's options) or NULL.  When
 * stream, on_partial gets each partial response before the final one is
 * returned.
 */
Jsonb *
adk_model_call(const char *model, Jsonb *contents, Jsonb *tools, Jsonb *config,
			   bool stream, AdkPartialFn on_partial, void *arg)
{
	AdkCallFor call_for = {0};
	AdkModelCall *c;

	/* adk_generate called by a tool: the call is the running step's */
	call_for.invocation_id = adk_running_invocation();
	call_for.trace = adk_trace_context_for(call_for.invocation_id);
	c = adk_model_start(model, contents, tools, config, stream, on_partial,
						arg, NULL, &call_for);

	while (!adk_model_call_ready(c))
		adk_http_drive(ADK_HTTP_POLL_MS);
	return adk_model_finish(c);
}

/*
 * Start a model call (the arguments as for adk_model_call) and return
 * without waiting: adk_http_drive() advances it, adk_model_call_ready()
 * says when its answer is in, adk_model_finish() makes the response of it.
 * The key, the request body and the partials' callback argument must stay
 * valid until then (they are copied into the call, but arg is not).
 * memo, when not NULL, is the request memo the request is built through
 * (see AdkRequestMemo); it holds this request once it is built.  call_for
 * (may be NULL) says whom the call is made for.
 */
AdkModelCall *
adk_model_start(const char *model, Jsonb *contents, Jsonb *tools,
				Jsonb *config, bool stream, AdkPartialFn on_partial, void *arg,
				AdkRequestMemo *memo, const AdkCallFor *call_for)
{
	MemoryContext cxt;
	MemoryContext old;
	AdkModelCall *c;

	cxt = AllocSetContextCreate(CurrentMemoryContext, "adk_runner model call",
								ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(cxt);
	c = palloc0(sizeof(AdkModelCall));
	c->cxt = cxt;
	c->stream = stream;
	c->cb.func = free_call_objects;
	c->cb.arg = c;
	MemoryContextRegisterResetCallback(cxt, &c->cb);
	if (call_for != NULL)
	{
		c->app = call_for->app ? pstrdup(call_for->app) : NULL;
		c->user = call_for->user ? pstrdup(call_for->user) : NULL;
		c->invocation_id = call_for->invocation_id ?
			pstrdup(call_for->invocation_id) : NULL;
		if (call_for->trace != NULL)
		{
			c->trace = *call_for->trace;
			c->traced = true;
		}
	}
	c->on_partial = on_partial;
	c->arg = arg;
	PG_TRY();
	{
		adk_load_model(model, &c->def);
		if (c->def.nfallbacks > 0)
		{
			/*
			 * What the next model's request is built of, should this one
			 * fail: one more copy of the contents while the call lasts
			 */
			c->chain = adk_fallback_chain(&c->def, &c->nchain);
			c->keep_contents = DatumGetJsonbPCopy(JsonbPGetDatum(contents));
			c->keep_tools = tools ? DatumGetJsonbPCopy(JsonbPGetDatum(tools)) : NULL;
			c->keep_config = config ? DatumGetJsonbPCopy(JsonbPGetDatum(config)) : NULL;
			/* a model whose circuit breaker is open is gone past */
			if (c->nchain > 1 && adk_breaker_is_open(c->def.name))
			{
				c->first_error = "CIRCUIT_OPEN";
				(void) next_model(c, true);
			}
		}
		start_attempt(c, contents, tools, config, memo);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(old);
		MemoryContextDelete(cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	return c;
}

/*
 * Whether the call's answer (or its failure) is in.  A failure that goes
 * on to a fallback model starts that model's request here: the call is
 * not ready then.
 */
bool
adk_model_call_ready(AdkModelCall *c)
{
	MemoryContext old;
	bool		went_on;

	for (;;)
	{
		if (c->settled)
			return true;
		if (c->transfer != NULL && !adk_http_done(c->transfer))
			return false;
		old = MemoryContextSwitchTo(c->cxt);
		went_on = fail_over(c);
		if (!went_on)
			settle(c);
		MemoryContextSwitchTo(old);
		if (!went_on)
			return true;
	}
}

/*
 * Build the request of c->def and start it: the model's options merged
 * with the call's config (headers: the model's win), through memo if not
 * NULL.  In the call's memory.
 */
static void
start_attempt(AdkModelCall *c, Jsonb *contents, Jsonb *tools, Jsonb *config,
			  AdkRequestMemo *memo)
{
	Jsonb	   *options;

	options = config ? adk_jsonb_concat(c->def.options, config) : c->def.options;
	if (config != NULL)
	{
		/* the caller's transport options, by the rules of adk.models */
		c->config = adk_jsonb_to_jsonc(config, "config");
		adk_check_call_options(c->config, "config option");
		merge_headers(c, c->config);
		json_object_put(c->config);
		c->config = NULL;
	}
	start_call(c, contents, tools, options, c->on_partial, c->arg, memo);
}

/*
 * Make the next model of the chain c->def; with skip_open, one whose
 * circuit breaker is open is gone past too, unless it is the last.  false
 * when none is left.
 */
static bool
next_model(AdkModelCall *c, bool skip_open)
{
	const char *from = c->def.name;

	if (c->chain == NULL || c->at + 1 >= c->nchain)
		return false;
	c->at++;
	while (skip_open && c->at + 1 < c->nchain &&
		   adk_breaker_is_open(c->chain[c->at].name))
		c->at++;
	c->def = c->chain[c->at];
	c->attempt++;
	c->fallback_from = from;
	return true;
}

/*
 * The attempt that just ended failed in a way its model's fallback_on
 * lists, and a model is left: its ledger row is kept for later, the
 * failure counted against the model's breaker, and the next model's
 * request started.  false otherwise (the answer is the call's).  In the
 * call's memory.
 *
 * A streamed answer whose partials were handed on already does not go on:
 * the caller has them (adk_run's partial rows, adk_generate_stream's), and
 * another model's would repeat the text.
 *
 * This runs where the caller asks whether the call is ready: in a job
 * worker, between the steps of its runs, outside any transaction.  So it
 * reads no table (the chain was loaded when the call started), and an
 * ERROR there (building the next request for another provider, say) ends
 * the call with that error instead: only the call's memory and the
 * backend's caches are touched, nothing transactional to undo.
 */
static bool
fail_over(AdkModelCall *c)
{
	const char *code = c->resp.error_code;

	if (c->chain == NULL || c->at + 1 >= c->nchain)
		return false;
	if (c->stream && (c->st.handed > 0 || c->st.pending != NIL))
		return false;
	if (c->transfer == NULL && code != NULL &&
		strcmp(code, "REQUEST_TOO_LARGE") != 0)
		return false;
	if (!adk_fallback_fails_over(&c->def, c->resp.status, code))
		return false;

	adk_breaker_failure(c->def.name);
	if (IsTransactionState())
		go_on(c);
	else
	{
		PG_TRY();
		{
			go_on(c);
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(c->cxt);
			edata = CopyErrorData();
			FlushErrorState();
			if (c->result)
				json_object_put(c->result);
			c->result = NULL;
			memset(&c->resp, 0, sizeof(c->resp));
			c->resp.error_code = "INVALID_REQUEST";
			c->resp.error_message = edata->message;
			c->transfer = NULL;
			c->at = c->nchain - 1;	/* no model is tried after this */
		}
		PG_END_TRY();
	}
	return true;
}

/*
 * fail_over's work: keep the failed attempt's ledger row (written when the
 * call finishes), then start the next model's request.  In the call's
 * memory.
 */
static void
go_on(AdkModelCall *c)
{
	AdkModelCallRecord *rec;

	free(c->body);
	c->body = NULL;
	make_result(c);
	rec = palloc0(sizeof(AdkModelCallRecord));
	fill_record(c, rec);
	c->failed = lappend(c->failed, rec);
	c->result = NULL;			/* the record holds it */
	c->ledger_request = NULL;
	if (c->first_error == NULL)
	{
		struct json_object *e;

		c->first_error = json_object_object_get_ex(rec->result, "error_code", &e) ?
			pstrdup(json_object_get_string(e)) : psprintf("HTTP_%ld", c->resp.status);
	}
	if (c->st.stream)
		llm_stream_free(c->st.stream);
	c->st.stream = NULL;
	memset(&c->st.hold, 0, sizeof(c->st.hold));
	c->transfer = NULL;

	(void) next_model(c, true);
	start_attempt(c, c->keep_contents, c->keep_tools, c->keep_config, NULL);
}

/*
 * The answer in is the call's: its model's breaker learns how it went.
 */
static void
settle(AdkModelCall *c)
{
	c->settled = true;
	if (c->chain == NULL)
		return;
	if (c->resp.error_code == NULL && c->resp.status >= 200 && c->resp.status < 300)
		adk_breaker_success(c->def.name);
	else if (adk_fallback_fails_over(&c->def, c->resp.status, c->resp.error_code))
		adk_breaker_failure(c->def.name);
}

/*
 * The response of a call that is ready, in the caller's memory context;
 * the call is gone afterwards (its ledger row written).  The partials left
 * of a stream are handed on first.
 */
Jsonb *
adk_model_finish(AdkModelCall *c)
{
	return adk_model_finish_thoughts(c, NULL);
}

/*
 * adk_model_finish for a run: *thoughts (when not NULL) is set to what
 * adk.store_thoughts off took out of the response (guard.c's
 * adk_drop_thoughts: a jsonb array of {"at", "emptied", "part"}), or NULL
 * when nothing was.  The run sends it back within itself and stores it
 * nowhere (docs/models.md, "Thinking").
 */
Jsonb *
adk_model_finish_thoughts(AdkModelCall *c, Jsonb **thoughts)
{
	MemoryContext caller = CurrentMemoryContext;
	Jsonb	   *volatile result = NULL;
	Jsonb	   *volatile taken = NULL;

	if (!adk_model_call_ready(c))
		elog(ERROR, "model call finished before its answer came");
	PG_TRY();
	{
		Jsonb	   *r;
		Jsonb	   *t = NULL;

		MemoryContextSwitchTo(c->cxt);
		r = finish_call(c);
		if (thoughts != NULL && c->thoughts != NULL)
			t = adk_jsonc_to_jsonb(c->thoughts);
		MemoryContextSwitchTo(caller);
		result = DatumGetJsonbPCopy(JsonbPGetDatum(r));
		if (t != NULL)
			taken = DatumGetJsonbPCopy(JsonbPGetDatum(t));
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(caller);
		MemoryContextDelete(c->cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
	MemoryContextDelete(c->cxt);
	if (thoughts != NULL)
		*thoughts = taken;
	return result;
}

/*
 * Drop a call without its response (the run ended meanwhile): its
 * transfer stops, nothing is recorded.
 */
void
adk_model_abandon(AdkModelCall *c)
{
	MemoryContextDelete(c->cxt);
}

/*
 * Build the request and start its transfer; every json-c object it makes
 * is recorded in c.
 */
static void
start_call(AdkModelCall *c, Jsonb *contents, Jsonb *tools, Jsonb *options,
		   AdkPartialFn on_partial, void *arg, AdkRequestMemo *memo)
{
	AdkModelDef *def = &c->def;
	LlmRequestSpec spec;
	AdkHttpRequest *req = &c->req;
	StreamState *st = &c->st;
	struct json_object *si;
	char	   *url;
	LlmRequestLog log;
	int			from = 0;
	int			limit;
	const char *limit_name;

	c->tools = tools ? adk_jsonb_to_jsonc(tools, "tools") : NULL;
	c->config = adk_jsonb_to_jsonc(options, "config");
	if (c->headers != NULL)
	{
		/* the merged headers, instead of the call's alone */
		if (json_object_object_add(c->config, "headers", c->headers) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory")));
		c->headers = NULL;		/* c->config holds them now */
	}

	memset(&spec, 0, sizeof(spec));
	spec.provider = def->provider;
	spec.model = def->model;
	spec.tools = c->tools;
	spec.config = c->config;
	spec.stream = c->stream;
	/* a paused tool loop's thoughts were not kept (llm_thinking.c) */
	spec.thinking_unkept = !adk_store_thoughts;
	if (json_object_object_get_ex(c->config, "system_instruction", &si) &&
		json_object_is_type(si, json_type_string))
		spec.system_instruction = json_object_get_string(si);
	/* prompt caching (prompt_cache.c), checked by adk_check_call_options */
	if (json_object_object_get_ex(c->config, "prompt_cache_key", &si) &&
		json_object_is_type(si, json_type_string))
		spec.cache_key = json_object_get_string(si);

	/*
	 * Through a memo: from the last boundary before the first content that
	 * is not the memo's request's (the system instruction, tools and config
	 * are made anew every time: only the contents' messages are taken).
	 */
	if (memo != NULL &&
		(!JB_ROOT_IS_ARRAY(contents) || JB_ROOT_IS_SCALAR(contents)))
		memo = NULL;

	/* a larger request is built whole (adk_request_memo_max) */
	if (memo != NULL && (Size) VARSIZE(contents) > adk_request_memo_max())
	{
		adk_memo_empty(memo, false);
		memo = NULL;
	}
	if (memo != NULL && memo->valid && memo->provider == def->provider &&
		strcmp(memo->model, def->model) == 0)
		from = adk_memo_resume_point(memo, adk_memo_same_prefix(memo->contents, contents));
	url = llm_request_url(def->provider, def->endpoint, def->model, c->stream);
	if (url == NULL)
		elog(ERROR, "could not build the request URL");
	c->url = pstrdup(url);
	free(url);
	memset(&log, 0, sizeof(log));
	c->body = build_body(c, contents, &spec, memo, &from, memo ? &log : NULL,
						 adk_model_calls_bodies ? &c->ledger_request : NULL);
	if (memo != NULL)
		adk_memo_take(memo, def->provider, def->model, contents, from, &log);
	limit = request_limit(c, &limit_name);
	if (strlen(c->body) > (size_t) limit)
	{
		refuse_request(c, strlen(c->body), limit, limit_name);
		return;
	}
	/* resumed, or printed through the memo: built whole too (tests) */
	if (memo != NULL && (from > 0 || memo->text.n > 0) && adk_verify_incremental)
		verify_resumed(c, contents, &spec, c->body, memo, from);
	/* a key written into the request shows in its text only */
	if (c->ledger_request != NULL && def->api_key != NULL &&
		def->api_key[0] != '\0' && strstr(c->body, def->api_key) != NULL)
	{
		pfree(c->ledger_request);
		c->ledger_request = adk_ledger_request_redacted(c->body, def->api_key);
	}

	memset(req, 0, sizeof(*req));
	req->url = c->url;
	req->headers = build_headers(def, c->config,
								 c->traced ? &c->trace : NULL,
								 &req->nheaders);
	req->body = c->body;
	req->body_len = strlen(c->body);
	req->timeout_ms = adk_call_int_option(c->config, "timeout_ms",
										  DEFAULT_TIMEOUT_MS);
	req->connect_timeout_ms = adk_call_int_option(c->config, "connect_timeout_ms",
												  DEFAULT_CONNECT_TIMEOUT_MS);
	req->retries = adk_call_int_option(c->config, "retries", DEFAULT_RETRIES);
	req->max_bytes = (size_t) adk_max_response_bytes;

	/* the request is built: its json-c form is not needed any more */
	if (c->tools)
		json_object_put(c->tools);
	c->tools = NULL;
	json_object_put(c->config);
	c->config = NULL;

	if (c->stream)
	{
		st->stream = llm_stream_new(def->provider, collect_partial, st);
		if (st->stream == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory")));
		st->on_partial = on_partial;
		st->arg = arg;
		st->secret = def->api_key;
		st->keep_signatures = def->provider != LLM_ANTHROPIC;
		req->on_chunk = on_chunk;
		req->arg = st;
	}

	st->first_chunk_ms = -1;
	INSTR_TIME_SET_CURRENT(st->start);
	c->transfer = adk_http_start(req, &c->resp);
}

/*
 * The largest request the call may send, and what sets it (for the error
 * message): adk.max_request_bytes, or the model's or the call's
 * max_request_bytes option when smaller.  An option only ever lowers the
 * superuser's setting -- whoever may define a model or make a call must
 * not be able to raise a bound a superuser set on the server's memory --
 * and a call's config cannot raise its model's option either (the
 * smallest of the three applies).  c->config is the model's options
 * merged with the call's (the call's win), so the model's own value is
 * read from its definition.
 */
static int
request_limit(AdkModelCall *c, const char **name)
{
	int			limit = adk_max_request_bytes;
	int			call = adk_call_int_option(c->config, "max_request_bytes", INT_MAX);
	JsonbValue	v;

	*name = "adk.max_request_bytes";
	if (getKeyJsonValueFromContainer(&c->def.options->root, "max_request_bytes",
									 strlen("max_request_bytes"), &v) != NULL &&
		v.type == jbvNumeric)
	{
		/* the models' trigger keeps it an integer in 1 .. INT_MAX */
		int64		model = DatumGetInt64(DirectFunctionCall1(numeric_int8,
															  NumericGetDatum(v.val.numeric)));

		if (model > 0 && model < limit)
		{
			limit = (int) model;
			*name = psprintf("the max_request_bytes option of model \"%s\"",
							 c->def.name);
		}
	}
	if (call > 0 && call < limit)
	{
		limit = call;
		*name = "the call's max_request_bytes option";
	}
	return limit;
}

/*
 * A request of len bytes, more than limit (named name): it is not sent.
 * The call is ready at once and fails with REQUEST_TOO_LARGE (finish_call
 * makes the response and the ledger row of it, without the request).
 */
static void
refuse_request(AdkModelCall *c, size_t len, int limit, const char *name)
{
	c->resp.error_code = "REQUEST_TOO_LARGE";
	c->resp.error_message =
		psprintf("the request of %zu bytes is larger than %s (%d bytes) and was not sent: "
				 "compact the session (adk_compact(), or the app's compaction settings) or start a new one",
				 len, name, limit);
	if (c->ledger_request != NULL)
		pfree(c->ledger_request);
	c->ledger_request = NULL;
	if (c->tools)
		json_object_put(c->tools);
	c->tools = NULL;
	json_object_put(c->config);
	c->config = NULL;
	free(c->body);
	c->body = NULL;
	c->transfer = NULL;
}

/*
 * Set c->contents, the request's contents from *from on in json-c (a
 * resumed request's, LlmRequestSpec.from: the contents before are not
 * read at all).  For a provider that reuses the messages of contents
 * (msg_cache.c), the result has a slot per content converted
 * (spec.reuse): a content whose messages are kept is JSON null in
 * c->contents and its messages are in its slot, *keys says where each
 * content's bytes are (in contents) and *n how many there are; a content
 * whose messages depend on the ids it is given is taken as kept in json-c
 * (no conversion), with the messages it made last in *idreuse.  Otherwise
 * (or for contents the node-by-node copy cannot take, which the whole
 * conversion then gives its error) every content is converted, *from is
 * set to 0 and the result is NULL.
 */
static struct json_object **
convert_contents(AdkModelCall *c, Jsonb *contents, int *from,
				 ContentKey **keys, int *n, LlmIdReuse **idreuse)
{
	LlmProvider p = c->def.provider;
	struct json_object **reuse;
	LlmIdReuse *ir;
	ContentKey *k;
	JsonbContainer *root = &contents->root;
	const char *base;
	int			count;
	int			i;
	int			j = 0;
	uint32		off;

	*keys = NULL;
	*n = 0;
	*idreuse = NULL;
	/*
	 * The messages of a request larger than adk_request_memo_max are not
	 * kept either: the backend's cache would hold them (and their text
	 * and jsonb, once printed and stored) besides the request's own.
	 */
	if (!llm_reuses_contents(p) || !JB_ROOT_IS_ARRAY(contents) ||
		JB_ROOT_IS_SCALAR(contents) ||
		(Size) VARSIZE(contents) > adk_request_memo_max())
		goto whole;
	count = (int) JB_ROOT_COUNT(contents);
	reuse = palloc0(sizeof(struct json_object *) * (count - *from + 1));
	ir = palloc0(sizeof(LlmIdReuse) * (count - *from + 1));
	k = palloc0(sizeof(ContentKey) * (count - *from + 1));
	c->contents = json_object_new_array();
	if (c->contents == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));

	/*
	 * The elements from *from on, straight from the array's JEntries (an
	 * iterator would step over every element before): each is a container,
	 * its data after the alignment padding, as JsonbIteratorNext gives it.
	 */
	base = (const char *) &root->children[count];
	off = *from > 0 ? getJsonbOffset(root, *from) : 0;
	for (i = *from; i < count; i++)
	{
		JEntry		e = root->children[i];
		uint32		start = off;
		uint32		len;
		struct json_object *obj = NULL;

		len = JBE_HAS_OFF(e) ? JBE_OFFLENFLD(e) - off : JBE_OFFLENFLD(e);
		off += len;
		if (!JBE_ISCONTAINER(e))
			goto restart;
		k[j].key = base + INTALIGN(start);
		k[j].len = (size_t) (len - (INTALIGN(start) - start));
		k[j].hash = adk_msg_cache_hash(k[j].key, k[j].len);
		reuse[j] = adk_msg_cache_get(p, k[j].hash, k[j].key, k[j].len);
		k[j].kept = (reuse[j] != NULL);
		if (!k[j].kept)
		{
			obj = adk_content_cache_get(p, k[j].hash, k[j].key, k[j].len);
			if (obj != NULL)
				json_object_get(obj);
			/* an element of the top array: nesting level 2 */
			else if ((obj = adk_jsonb_container_to_jsonc((JsonbContainer *) k[j].key, 2)) == NULL)
				goto restart;
		}
		if (json_object_array_add(c->contents, obj) != 0)
		{
			json_object_put(obj);
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory")));
		}
		j++;
	}
	*keys = k;
	*n = j;
	*idreuse = ir;
	return reuse;

restart:
	json_object_put(c->contents);
	c->contents = NULL;
whole:
	*from = 0;
	c->contents = adk_jsonb_to_jsonc(contents, "contents");
	return NULL;
}

/*
 * LlmRequestSpec.idmsgs: the messages kept for content i given the ids in
 * sig.  (The cache only grows while a request is built: the borrowed
 * messages stay valid until keep_made.)
 */
static struct json_object *
idmsgs_lookup(void *arg, size_t i, const char *sig)
{
	IdMsgsArg  *a = (IdMsgsArg *) arg;

	return adk_idmsg_cache_get(a->provider, a->keys[i].hash, a->keys[i].key,
							   a->keys[i].len, sig);
}

/*
 * Keep the messages the adapter made of contents that were not kept yet
 * (it set their slots); the cache takes them over.
 */
static void
keep_made(AdkModelCall *c, struct json_object **reuse, LlmIdReuse *idreuse,
		  ContentKey *keys, int n)
{
	LlmProvider p = c->def.provider;
	int			i;

	for (i = 0; i < n; i++)
	{
		if (!keys[i].kept && reuse[i] != NULL)
		{
			adk_msg_cache_put(p, keys[i].hash, keys[i].key, keys[i].len, reuse[i]);
			reuse[i] = NULL;
		}
		if (idreuse[i].made != NULL)
		{
			adk_content_cache_put(p, keys[i].hash, keys[i].key, keys[i].len,
								  json_object_get(json_object_array_get_idx(c->contents, i)));
			adk_idmsg_cache_put(p, keys[i].hash, keys[i].key, keys[i].len,
								idreuse[i].made_sig, idreuse[i].made);
			idreuse[i].made = NULL;
		}
		free(idreuse[i].made_sig);
		idreuse[i].made_sig = NULL;
	}
}

/*
 * Build the request body (malloc'd) of contents from *from on, base giving
 * the rest of the spec; when *from > 0 the contents before are memo's
 * (resumed).  *from is set to 0 when the request is built whole after
 * all.  log, when not NULL, gets the build's boundaries; ledger, when not
 * NULL, the request as the ledger stores it (adk_ledger_request).  An
 * invalid request raises (log empty).
 *
 * Memory: one copy of the request's bytes at a time is made and let go
 * of as the next is made.  The contents in json-c go once the provider's
 * body is built of them, the ledger's jsonb is made of that body and
 * compressed before the body is printed, and the body in json-c goes once
 * it is printed.  So besides the contents' jsonb (the caller's) a build
 * holds at most two copies: the contents and the body in json-c, then the
 * body and the ledger's jsonb, then the body and its text.
 */
static char *
build_body(AdkModelCall *c, Jsonb *contents, const LlmRequestSpec *base,
		   AdkRequestMemo *memo, int *from, LlmRequestLog *log, Jsonb **ledger)
{
	LlmRequestSpec spec = *base;
	struct json_object **reuse;
	LlmIdReuse *idreuse;
	ContentKey *keys;
	int			ncontents;
	IdMsgsArg	idmsgs_arg;
	char	   *body;
	char	   *build_err = NULL;

	reuse = convert_contents(c, contents, from, &keys, &ncontents, &idreuse);
	spec.contents = c->contents;
	spec.reuse = reuse;
	spec.idreuse = idreuse;
	if (idreuse != NULL)
	{
		idmsgs_arg.provider = spec.provider;
		idmsgs_arg.keys = keys;
		spec.idmsgs = idmsgs_lookup;
		spec.idarg = &idmsgs_arg;
	}
	if (*from > 0)
	{
		const LlmBoundary *b = &memo->b[*from];

		spec.from = (size_t) *from;
		spec.resume_msgs = memo->msgs;
		spec.resume_off = memo->msgs_off;
		spec.resume_n = b->nmsgs;
		spec.resume_ids = &b->ids;
	}
	spec.log = log;
	/* the messages it shares with the memo's request are copied as text */
	spec.text = memo != NULL ? &memo->text : NULL;

	c->request = llm_build_request_object(&spec, &build_err);
	if (reuse != NULL)
		keep_made(c, reuse, idreuse, keys, ncontents);
	json_object_put(c->contents);
	c->contents = NULL;
	if (c->request == NULL)
	{
		char	   *msg = pstrdup(build_err ? build_err : "invalid request");

		free(build_err);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid model request: %s", msg)));
	}
	if (ledger != NULL)
		*ledger = adk_ledger_request(c->request);
	body = llm_print_request(&spec, c->request);
	json_object_put(c->request);
	c->request = NULL;
	if (body == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	return body;
}

/* a message's compact text, for comparing (palloc'd) */
static char *
message_text(struct json_object *msg)
{
	return pstrdup(json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN));
}

/*
 * adk.verify_incremental: the request resumed at content "from" (body)
 * built again from scratch; a difference is an error naming the first
 * content whose messages differ.  memo holds the resumed request (its
 * messages): it is emptied first.
 */
static void
verify_resumed(AdkModelCall *c, Jsonb *contents, const LlmRequestSpec *base,
			   const char *body, AdkRequestMemo *memo, int from)
{
	LlmRequestLog vlog;
	char	   *whole;
	int			zero = 0;
	int			at = -1;
	size_t		j;
	size_t		k;

	memset(&vlog, 0, sizeof(vlog));
	whole = build_body(c, contents, base, NULL, &zero, &vlog, NULL);
	if (strcmp(whole, body) == 0)
	{
		free(whole);
		llm_log_free(&vlog);
		return;
	}
	free(whole);

	/* the first message that differs, and the content that made it */
	if (memo->valid && vlog.msgs != NULL)
	{
		size_t		nr = json_object_array_length(memo->msgs) - memo->msgs_off;
		size_t		nw = json_object_array_length(vlog.msgs) - vlog.msgs_off;

		for (j = 0; j < nr && j < nw; j++)
			if (strcmp(message_text(json_object_array_get_idx(memo->msgs, memo->msgs_off + j)),
					   message_text(json_object_array_get_idx(vlog.msgs, vlog.msgs_off + j))) != 0)
				break;
		for (k = 0; k + 1 < vlog.n; k++)
			if (vlog.b[k + 1].nmsgs > j)
				break;
		at = (int) k;
	}
	llm_log_free(&vlog);
	adk_memo_empty(memo, false);
	elog(ERROR, "adk.verify_incremental: the request resumed at content %d differs from the one built whole, at content %d",
		 from, at);
}

/*
 * The answer: parsed (or the stream finished), the key redacted, the
 * ledger rows written (the failed attempts' first, in order).  In the
 * call's memory.
 */
static Jsonb *
finish_call(AdkModelCall *c)
{
	AdkModelCallRecord rec;
	ListCell   *lc;

	/* the answer is in: the request's text is not needed any more */
	free(c->body);
	c->body = NULL;
	make_result(c);
	if (c->attempt > 0)
		adk_fallback_annotate(c->result, c->chain[0].name, c->def.name,
							  c->attempt, c->first_error);

	foreach(lc, c->failed)
		adk_ledger_record((AdkModelCallRecord *) lfirst(lc));
	memset(&rec, 0, sizeof(rec));
	fill_record(c, &rec);
	adk_ledger_record(&rec);

	return rec.result_jsonb;
}

/*
 * c->result: the answer of the attempt that ended, the key redacted.
 */
static void
make_result(AdkModelCall *c)
{
	AdkModelDef *def = &c->def;
	AdkHttpResponse *resp = &c->resp;
	StreamState *st = &c->st;
	bool		stream = c->stream;

	if (stream && resp->error_code != NULL && resp->got_body &&
		strcmp(resp->error_code, "HTTP_CLIENT_ERROR") == 0)
	{
		/* the stream broke off after it started: say so */
		hand_on_partials(st);
		c->result = llm_stream_finish(st->stream, 200);
	}
	else if (resp->error_code != NULL)
	{
		c->result = json_object_new_object();
		json_object_object_add(c->result, "error_code",
							   json_object_new_string(resp->error_code));
		json_object_object_add(c->result, "error_message",
							   json_object_new_string(resp->error_message));
	}
	else if (resp->status >= 300 && resp->status < 400)
		c->result = llm_redirect_response(resp->status, resp->redirect_url);
	else if (stream && resp->status < 300)
	{
		hand_on_partials(st);
		c->result = llm_stream_finish(st->stream, resp->status);
	}
	else
	{
		/* http.c keeps the body of a non-2xx response, streamed or not */
		c->result = llm_parse_response(def->provider, resp->status,
									   resp->body.data, resp->body.len);
	}
	if (c->result == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	/* the provider's answer enters here: no key gets past this point */
	adk_redact_jsonc(c->result, def->api_key);
	/*
	 * nor thought text with adk.store_thoughts off; Anthropic's signatures
	 * are worth nothing without their text (docs/models.md, "Thinking").
	 * What it took goes to the run alone (adk_model_finish_thoughts).
	 */
	if (c->thoughts != NULL)
		json_object_put(c->thoughts);
	c->thoughts = NULL;
	c->thoughts_dropped = adk_drop_thoughts(c->result,
											def->provider != LLM_ANTHROPIC,
											&c->thoughts);
}

/*
 * rec: the ledger row of the attempt that ended (c->result made); it
 * points into the call's memory and takes c->result.
 */
static void
fill_record(AdkModelCall *c, AdkModelCallRecord *rec)
{
	AdkModelDef *def = &c->def;
	AdkHttpResponse *resp = &c->resp;
	bool		stream = c->stream;

	rec->model = def->name;
	rec->provider = def->provider_name;
	rec->url = c->url;
	rec->stream = stream;
	rec->http_status = resp->status;
	rec->attempts = resp->attempts;
	rec->latency_ms = resp->latency_ms;
	rec->request = c->ledger_request;	/* NULL: not sent */
	/* the raw body of a complete HTTP response (streams: error bodies) */
	if (resp->error_code == NULL && (!stream || resp->status >= 300) &&
		!c->thoughts_dropped)
	{
		rec->response_body = resp->body.data;
		rec->response_len = resp->body.len;
	}
	rec->result = c->result;
	rec->cache_creation_tokens = llm_cache_take_creation(c->result);
	rec->result_jsonb = adk_jsonc_to_jsonb(c->result);
	rec->secret = def->api_key;
	rec->provider_model = def->model;
	rec->first_chunk_ms = stream ? c->st.first_chunk_ms : -1;
	rec->app = c->app;
	rec->user = c->user;
	rec->invocation_id = c->invocation_id;
	rec->trace = c->traced ? &c->trace : NULL;
	rec->fallback_attempt = c->attempt;
	rec->fallback_from = c->fallback_from;
}

static void
free_call_objects(void *arg)
{
	AdkModelCall *c = (AdkModelCall *) arg;
	ListCell   *lc;

	if (c->contents)
		json_object_put(c->contents);
	if (c->tools)
		json_object_put(c->tools);
	if (c->config)
		json_object_put(c->config);
	if (c->result)
		json_object_put(c->result);
	if (c->thoughts)
		json_object_put(c->thoughts);
	if (c->request)
		json_object_put(c->request);
	free(c->body);
	c->body = NULL;
	if (c->headers)
		json_object_put(c->headers);
	if (c->st.stream)
		llm_stream_free(c->st.stream);
	foreach(lc, c->st.pending)
		json_object_put((struct json_object *) lfirst(lc));
	foreach(lc, c->failed)
		json_object_put(((AdkModelCallRecord *) lfirst(lc))->result);
	c->failed = NIL;
	c->contents = c->tools = c->config = c->result = c->request = NULL;
	c->thoughts = NULL;
	c->headers = NULL;
	c->st.stream = NULL;
	c->st.pending = NIL;
}

/*
 * Does the options.headers object set header name (any case)?
 */
static bool
has_header(struct json_object *extra, const char *name)
{
	if (extra == NULL)
		return false;
	{
		json_object_object_foreach(extra, k, v)
		{
			(void) v;
			if (pg_strcasecmp(k, name) == 0)
				return true;
		}
	}
	return false;
}

/*
 * When both the model's options and the call's config (call, checked)
 * set headers, keep in c->headers the model's headers and the call's whose
 * names the model does not set (any case): the admin's win.  Otherwise
 * the options as merged (the one set of headers there is) are right.
 */
static void
merge_headers(AdkModelCall *c, struct json_object *call)
{
	struct json_object *call_h;
	struct json_object *model_h;

	if (!json_object_object_get_ex(call, "headers", &call_h) ||
		!json_object_is_type(call_h, json_type_object))
		return;
	/* c owns the model's options from here, and then their headers */
	c->headers = adk_jsonb_to_jsonc(c->def.options, "options");
	if (!json_object_object_get_ex(c->headers, "headers", &model_h) ||
		!json_object_is_type(model_h, json_type_object))
	{
		json_object_put(c->headers);
		c->headers = NULL;
		return;
	}
	json_object_get(model_h);
	json_object_put(c->headers);
	c->headers = model_h;
	{
		json_object_object_foreach(call_h, k, v)
		{
			if (has_header(model_h, k))
				continue;
			if (json_object_object_add(model_h, k, json_object_get(v)) != 0)
			{
				json_object_put(v);
				ereport(ERROR,
						(errcode(ERRCODE_OUT_OF_MEMORY),
						 errmsg("out of memory")));
			}
		}
	}
}

/*
 * Content-Type, the key header, provider headers, then options.headers.
 */
static const char **
build_headers(const AdkModelDef *def, struct json_object *config,
			  const AdkTraceCurrent *trace, int *n)
{
	struct json_object *extra = NULL;
	int			max = 5;
	const char **h;
	char	   *auth = adk_auth_header(def);

	if (json_object_object_get_ex(config, "headers", &extra) &&
		json_object_is_type(extra, json_type_object))
		max += json_object_object_length(extra);
	else
		extra = NULL;

	h = palloc(sizeof(char *) * max);
	*n = 0;
	h[(*n)++] = "Content-Type: application/json";
	h[(*n)++] = "Accept: application/json, text/event-stream";
	if (auth)
		h[(*n)++] = auth;
	if (def->provider == LLM_ANTHROPIC)
		h[(*n)++] = "anthropic-version: 2023-06-01";
	/*
	 * W3C trace context: the provider's spans join the run's trace (unless
	 * options.headers sets a traceparent of its own).
	 */
	if (trace != NULL && !has_header(extra, "traceparent"))
		h[(*n)++] = psprintf("traceparent: %s",
							 adk_traceparent_format(trace->trace_id,
													trace->span_id,
													trace->flags));
	if (extra)
	{
		json_object_object_foreach(extra, k, v)
		{
			if (json_object_is_type(v, json_type_string))
				h[(*n)++] = psprintf("%s: %s", k, json_object_get_string(v));
		}
	}
	return h;
}

/*
 * Adapter callback: keep the partial for later (no PostgreSQL work inside
 * the adapter).
 */
static void
collect_partial(struct json_object *partial, void *arg)
{
	StreamState *st = (StreamState *) arg;

	st->pending = lappend(st->pending, json_object_get(partial));
}

/*
 * HTTP callback (between waits, not inside libcurl): feed the stream
 * parser, then hand the partials it produced on.
 */
static void
on_chunk(const char *data, size_t len, void *arg)
{
	StreamState *st = (StreamState *) arg;

	if (st->first_chunk_ms < 0)
	{
		instr_time	now;

		INSTR_TIME_SET_CURRENT(now);
		INSTR_TIME_SUBTRACT(now, st->start);
		st->first_chunk_ms = INSTR_TIME_GET_MILLISEC(now);
	}
	(void) llm_stream_feed(st->stream, data, len);
	hand_on_partials(st);
}

/*
 * A partial as jsonb, the key redacted, or NULL when redaction held all of
 * it back; the json-c object is released whatever happens.
 */
static Jsonb *
partial_to_jsonb(StreamState *st, struct json_object *p)
{
	Jsonb	   *volatile jb = NULL;

	PG_TRY();
	{
		bool		none = false;

		/* a partial of thought text alone, dropped, is not handed on */
		if (adk_drop_thoughts(p, st->keep_signatures, NULL))
		{
			struct json_object *content = json_object_object_get(p, "content");

			none = json_object_array_length(json_object_object_get(content, "parts")) == 0;
		}
		if (!none && adk_redact_partial(p, st->secret, &st->hold))
			jb = adk_jsonc_to_jsonb(p);
	}
	PG_CATCH();
	{
		json_object_put(p);
		PG_RE_THROW();
	}
	PG_END_TRY();
	json_object_put(p);
	return jb;
}

static void
hand_on_partials(StreamState *st)
{
	while (st->pending != NIL)
	{
		struct json_object *p = (struct json_object *) linitial(st->pending);
		Jsonb	   *jb;

		st->pending = list_delete_first(st->pending);
		jb = partial_to_jsonb(st, p);
		if (jb != NULL && st->on_partial)
		{
			st->handed++;
			st->on_partial(jb, st->arg);
		}
	}
}
