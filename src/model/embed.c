/*-------------------------------------------------------------------------
 *
 * embed.c
 *	  Embeddings for memory's semantic search: a model of adk.models asked
 *	  for the vectors of some texts, and the cosine similarity of two.
 *
 * OpenAI-compatible models: POST <endpoint>/embeddings {"model", "input":
 * [texts]} -> data[i].embedding.  Gemini: POST <endpoint>/v1beta/models/
 * <model>:batchEmbedContents {"requests": [{"model", "content": {"parts":
 * [{"text"}]}}]} -> embeddings[i].values.  Anthropic has no embedding API.
 * The body is built with escape_json and the answer read as jsonb, so no
 * json-c object needs an owner on the error paths.  A failure (transport,
 * HTTP status, a shape we cannot read, vectors of unequal length) is an
 * ERROR; callers decide whether to go on without (adk._memory_search does).
 * The calls are not recorded in adk.model_calls, nor charged to budgets.
 *
 * A request is started (adk_embed_start) and consumed (adk_embed_finish)
 * as a model call is (generate.c), so a run waits for it in its steps
 * without blocking its process (builtin_tools.c); adk._embed, called
 * from SQL, starts it and waits for it in the call.
 *
 * IDENTIFICATION
 *	  src/model/embed.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "common/jsonb_util.h"
#include "model/generate.h"
#include "model/embed.h"
#include "model/http.h"
#include "model/model_def.h"

PG_FUNCTION_INFO_V1(adk_embed_sql);
PG_FUNCTION_INFO_V1(adk_cosine_sql);

#define EMBED_TIMEOUT_MS 30000
#define EMBED_CONNECT_TIMEOUT_MS 10000
#define EMBED_RETRIES 2

/*
 * One request in flight: everything it points to is in the memory context
 * current at adk_embed_start, which owns the transfer too (http.c), so
 * deleting that context stops it.
 */
struct AdkEmbedCall
{
	char	   *name;			/* adk.models name, for messages */
	AdkModelDef def;
	int			ntexts;
	const char *headers[3];
	AdkHttpRequest req;
	AdkHttpResponse resp;
	AdkHttpTransfer *transfer;
};

static ArrayType *vector_of(JsonbValue *list, const char *model, int i);
static int	int_option(Jsonb *options, const char *key, int dflt);
static char *one_line(const char *s, int max);
static char *redacted(const char *s, const char *secret);
static JsonbValue *nth(JsonbContainer *array, int i);

/*
 * Start the request for the vectors of texts[0 .. ntexts-1] (at least
 * one) from model; raises when the model cannot embed.  The call belongs
 * to the current memory context.
 */
AdkEmbedCall *
adk_embed_start(const char *model, int ntexts, char **texts)
{
	AdkEmbedCall *c = palloc0(sizeof(AdkEmbedCall));
	AdkModelDef *def = &c->def;
	StringInfoData body;
	int			i;

	Assert(ntexts > 0);
	c->name = pstrdup(model);
	c->ntexts = ntexts;
	adk_load_model(model, def);
	initStringInfo(&body);
	if (def->provider == LLM_OPENAI)
	{
		appendStringInfoString(&body, "{\"model\":");
		escape_json(&body, def->model);
		appendStringInfoString(&body, ",\"input\":[");
	}
	else if (def->provider == LLM_GEMINI)
		appendStringInfoString(&body, "{\"requests\":[");
	else
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("model \"%s\" cannot embed text", model),
				 errdetail("Only OpenAI-compatible and Gemini models have an embedding endpoint.")));
	for (i = 0; i < ntexts; i++)
	{
		const char *t = texts[i] ? texts[i] : "";

		if (i > 0)
			appendStringInfoChar(&body, ',');
		if (def->provider == LLM_OPENAI)
			escape_json(&body, t);
		else
		{
			appendStringInfoString(&body, "{\"model\":");
			escape_json(&body, strncmp(def->model, "models/", 7) == 0 ? def->model :
						psprintf("models/%s", def->model));
			appendStringInfoString(&body, ",\"content\":{\"parts\":[{\"text\":");
			escape_json(&body, t);
			appendStringInfoString(&body, "}]}}");
		}
	}
	appendStringInfoString(&body, "]}");

	{
		size_t		elen = strlen(def->endpoint);

		while (elen > 0 && def->endpoint[elen - 1] == '/')
			elen--;
		c->req.url = def->provider == LLM_OPENAI ?
			psprintf("%.*s/embeddings", (int) elen, def->endpoint) :
			psprintf("%.*s/v1beta/models/%s:batchEmbedContents", (int) elen, def->endpoint,
					 strncmp(def->model, "models/", 7) == 0 ? def->model + 7 : def->model);
	}
	c->headers[0] = "Content-Type: application/json";
	c->req.nheaders = 1;
	if (adk_auth_header(def) != NULL)
		c->headers[c->req.nheaders++] = adk_auth_header(def);
	c->req.headers = c->headers;
	c->req.body = body.data;
	c->req.body_len = body.len;
	c->req.timeout_ms = int_option(def->options, "timeout_ms", EMBED_TIMEOUT_MS);
	c->req.connect_timeout_ms = int_option(def->options, "connect_timeout_ms",
										   EMBED_CONNECT_TIMEOUT_MS);
	c->req.retries = int_option(def->options, "retries", EMBED_RETRIES);
	c->req.max_bytes = (size_t) adk_max_response_bytes;
	c->transfer = adk_http_start(&c->req, &c->resp);
	return c;
}

/* Whether the answer (or the failure) is in: adk_embed_finish won't wait */
bool
adk_embed_ready(const AdkEmbedCall *c)
{
	return adk_http_done(c->transfer);
}

/*
 * The vectors, one per text in order (real[], all of one length), in the
 * current memory context.  A failure (transport, HTTP status, a shape we
 * cannot read, vectors of unequal length) raises, the provider's words
 * with the key redacted.  Waits (driving every transfer in flight) when
 * the answer is not in yet.
 */
ArrayType **
adk_embed_finish(AdkEmbedCall *c)
{
	AdkHttpResponse *resp = &c->resp;
	const char *name = c->name;
	int			n = c->ntexts;
	ArrayType **result;
	Jsonb	   *answer;
	JsonbValue *list;
	int			dims = -1;
	int			i;

	while (!adk_http_done(c->transfer))
		adk_http_drive(ADK_HTTP_POLL_MS);
	if (resp->error_code != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("embedding model \"%s\" failed: %s", name, resp->error_code),
				 errdetail("%s", redacted(resp->error_message, c->def.api_key))));
	if (resp->status < 200 || resp->status >= 300)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("embedding model \"%s\" failed with HTTP status %ld", name, resp->status),
				 errdetail("The response began: %s",
						   one_line(redacted(resp->body.data, c->def.api_key), 200))));

	answer = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(resp->body.data)));
	list = adk_jsonb_get(&answer->root, c->def.provider == LLM_OPENAI ? "data" : "embeddings");
	if (list == NULL || list->type != jbvBinary || !JsonContainerIsArray(list->val.binary.data) ||
		(int) JsonContainerSize(list->val.binary.data) != n)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("embedding model \"%s\" did not answer with %d vectors", name, n)));
	result = palloc(sizeof(ArrayType *) * n);
	for (i = 0; i < n; i++)
	{
		ArrayType  *v = vector_of(nth(list->val.binary.data, i), name, i);

		if (dims < 0)
			dims = ArrayGetNItems(ARR_NDIM(v), ARR_DIMS(v));
		else if (dims != ArrayGetNItems(ARR_NDIM(v), ARR_DIMS(v)))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("embedding model \"%s\" answered vectors of different lengths", name)));
		result[i] = v;
	}
	return result;
}

/*
 * adk._embed(model text, texts text[]) RETURNS SETOF real[]: one vector per
 * text, in order -- the request started and waited for in the call.
 */
Datum
adk_embed_sql(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ArrayType  *texts;
	Datum	   *elems;
	bool	   *nulls;
	char	  **strings;
	int			n;
	int			i;
	ArrayType **vectors;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("embedding model and texts must not be null")));
	texts = PG_GETARG_ARRAYTYPE_P(1);
	deconstruct_array(texts, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC | MAT_SRF_BLESS);
	if (n == 0)
		return (Datum) 0;
	strings = palloc(sizeof(char *) * n);
	for (i = 0; i < n; i++)
		strings[i] = nulls[i] ? NULL : TextDatumGetCString(elems[i]);
	vectors = adk_embed_finish(adk_embed_start(text_to_cstring(PG_GETARG_TEXT_PP(0)),
											   n, strings));
	for (i = 0; i < n; i++)
	{
		Datum		value = PointerGetDatum(vectors[i]);
		bool		isnull = false;

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &value, &isnull);
	}
	return (Datum) 0;
}

/* An integer of the model's options (as adk_generate reads them), else dflt */
static int
int_option(Jsonb *options, const char *key, int dflt)
{
	JsonbValue *v = options ? adk_jsonb_get(&options->root, key) : NULL;

	if (v == NULL || v->type != jbvNumeric)
		return dflt;
	return DatumGetInt32(DirectFunctionCall1(numeric_int4, NumericGetDatum(v->val.numeric)));
}

/* s with every occurrence of the model's key replaced (a provider may echo it) */
static char *
redacted(const char *s, const char *secret)
{
	StringInfoData out;
	size_t		n;
	const char *hit;

	if (s == NULL)
		return "";
	if (secret == NULL || secret[0] == '\0')
		return pstrdup(s);
	n = strlen(secret);
	initStringInfo(&out);
	while ((hit = strstr(s, secret)) != NULL)
	{
		appendBinaryStringInfo(&out, s, hit - s);
		appendStringInfoString(&out, "[REDACTED]");
		s = hit + n;
	}
	appendStringInfoString(&out, s);
	return out.data;
}

/* The first max bytes of s, whitespace runs as one space */
static char *
one_line(const char *s, int max)
{
	StringInfoData out;
	bool		space = false;

	initStringInfo(&out);
	for (; s != NULL && *s && out.len < max; s++)
	{
		if (*s == ' ' || *s == '\n' || *s == '\r' || *s == '\t')
			space = true;
		else
		{
			if (space && out.len > 0)
				appendStringInfoChar(&out, ' ');
			space = false;
			appendStringInfoChar(&out, *s);
		}
	}
	return out.data;
}

static JsonbValue *
nth(JsonbContainer *array, int i)
{
	return getIthJsonbValueFromContainer(array, i);
}

/*
 * data[i].embedding (OpenAI) or embeddings[i].values (Gemini) as real[].
 */
static ArrayType *
vector_of(JsonbValue *item, const char *model, int i)
{
	JsonbValue *values = NULL;
	int			n;
	int			k;
	Datum	   *d;

	if (item != NULL && item->type == jbvBinary)
	{
		values = adk_jsonb_get(item->val.binary.data, "embedding");
		if (values == NULL)
			values = adk_jsonb_get(item->val.binary.data, "values");
	}
	if (values == NULL || values->type != jbvBinary ||
		!JsonContainerIsArray(values->val.binary.data) ||
		(n = JsonContainerSize(values->val.binary.data)) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("embedding model \"%s\" answered no vector for text %d", model, i + 1)));
	d = palloc(sizeof(Datum) * n);
	for (k = 0; k < n; k++)
	{
		JsonbValue *x = getIthJsonbValueFromContainer(values->val.binary.data, k);

		if (x == NULL || x->type != jbvNumeric)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("embedding model \"%s\" answered a vector with a non-number", model)));
		d[k] = Float4GetDatum((float4) DatumGetFloat8(DirectFunctionCall1(numeric_float8,
																		   NumericGetDatum(x->val.numeric))));
	}
	return construct_array(d, n, FLOAT4OID, sizeof(float4), true, TYPALIGN_INT);
}

/*
 * adk._cosine(a real[], b real[]) RETURNS real: the cosine similarity;
 * NULL when the lengths differ or either is all zeros.
 */
Datum
adk_cosine_sql(PG_FUNCTION_ARGS)
{
	ArrayType  *a = PG_GETARG_ARRAYTYPE_P(0);
	ArrayType  *b = PG_GETARG_ARRAYTYPE_P(1);
	int			na = ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a));
	int			nb = ArrayGetNItems(ARR_NDIM(b), ARR_DIMS(b));
	float4	   *x;
	float4	   *y;
	double		dot = 0;
	double		xx = 0;
	double		yy = 0;
	int			i;

	if (ARR_ELEMTYPE(a) != FLOAT4OID || ARR_ELEMTYPE(b) != FLOAT4OID)
		elog(ERROR, "adk._cosine takes real[]");
	if (na != nb || na == 0 || ARR_HASNULL(a) || ARR_HASNULL(b))
		PG_RETURN_NULL();
	/* no nulls: the data follows the fixed overhead (ARR_DATA_PTR, unsigned) */
	x = (float4 *) ((char *) a + ARR_OVERHEAD_NONULLS(ARR_NDIM(a)));
	y = (float4 *) ((char *) b + ARR_OVERHEAD_NONULLS(ARR_NDIM(b)));
	for (i = 0; i < na; i++)
	{
		dot += (double) x[i] * y[i];
		xx += (double) x[i] * x[i];
		yy += (double) y[i] * y[i];
	}
	if (xx == 0 || yy == 0)
		PG_RETURN_NULL();
	PG_RETURN_FLOAT4((float4) (dot / (sqrt(xx) * sqrt(yy))));
}
