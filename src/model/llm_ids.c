/*-------------------------------------------------------------------------
 *
 * llm_ids.c
 *	  Call ids: deterministic ids for calls and responses that come
 *	  without one, and generated "adk-" call ids.
 *
 * Malloc/json-c based and free of PostgreSQL.
 *
 * IDENTIFICATION
 *	  src/model/llm_ids.c
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <json-c/json.h>

#define ADK_LLM_INTERNAL
#include "llm.h"

static int	llm_random(unsigned char *buf, size_t n);
static size_t put_decimal(char *out, size_t v);
static int	llm_id_grow(LlmIdSynth *ids);
static LlmIdCall *llm_ids_match(LlmIdSynth *ids, const LlmPart *part);

/* ----------------------------------------------------------------
 *		Call ids
 * ----------------------------------------------------------------
 */

/*
 * v in decimal at out (at most 20 digits, no NUL); returns the length.
 * Ids and signatures are written per call of every request: no snprintf.
 */
static size_t
put_decimal(char *out, size_t v)
{
	char		digits[20];
	size_t		n = 0;
	size_t		k;

	do
	{
		digits[n++] = (char) ('0' + v % 10);
		v /= 10;
	} while (v > 0);
	for (k = 0; k < n; k++)
		out[k] = digits[n - 1 - k];
	return n;
}

static int
llm_id_grow(LlmIdSynth *ids)
{
	if (ids->ncalls == ids->cap)
	{
		size_t		cap = ids->cap ? ids->cap * 2 : 8;
		LlmIdCall  *nc = realloc(ids->calls, cap * sizeof(LlmIdCall));

		if (nc == NULL)
			return -1;
		ids->calls = nc;
		ids->cap = cap;
	}
	return 0;
}

/*
 * Record a call and return the id to send: its own, or "call_<n>" counted
 * over the request.  The string is owned by ids; NULL when out of memory.
 */
const char *
llm_ids_call(LlmIdSynth *ids, const LlmPart *part)
{
	char		buf[32];
	const char *id = part->id;
	LlmIdCall  *c;

	ids->uses++;
	if (llm_id_grow(ids) < 0)
		return NULL;
	if (id == NULL)
	{
		/* "call_<n>", without snprintf: one per id-less call of a request */
		memcpy(buf, "call_", 5);
		buf[5 + put_decimal(buf + 5, (size_t) ++ids->counter)] = '\0';
		id = buf;
	}
	c = &ids->calls[ids->ncalls];
	c->id = strdup(id);
	if (c->id == NULL)
		return NULL;
	c->name = part->name;
	c->synthesized = (part->id == NULL);
	c->answered = 0;
	ids->ncalls++;
	return c->id;
}

/*
 * The earliest unanswered call matching the response, or NULL.  A response
 * with an id matches that id; one without matches by name, preferring calls
 * that had no id either (the runner strips only its own ids, from both).
 */
static LlmIdCall *
llm_ids_match(LlmIdSynth *ids, const LlmPart *part)
{
	size_t		i;
	int			pass;

	for (pass = 0; pass < 2; pass++)
	{
		/* every call before first_open is answered */
		for (i = ids->first_open; i < ids->ncalls; i++)
		{
			LlmIdCall  *c = &ids->calls[i];

			if (c->answered)
				continue;
			if (part->id != NULL)
			{
				if (strcmp(c->id, part->id) == 0)
					return c;
			}
			else if (strcmp(c->name, part->name) == 0 &&
					 (pass == 1 || c->synthesized))
				return c;
		}
		if (part->id != NULL)
			break;
	}
	return NULL;
}

/*
 * Return the id to send with a function response: its own, that of the
 * call it answers (see llm_ids_match), or a fresh "call_<n>" when no call
 * is left to answer.  NULL when out of memory.
 */
const char *
llm_ids_response(LlmIdSynth *ids, const LlmPart *part)
{
	LlmIdCall  *c = llm_ids_match(ids, part);
	const char *id;

	ids->uses++;
	if (c != NULL)
	{
		c->answered = 1;
		while (ids->first_open < ids->ncalls &&
			   ids->calls[ids->first_open].answered)
			ids->first_open++;
		return c->id;
	}
	if (part->id != NULL)
		return part->id;
	id = llm_ids_call(ids, part);
	if (id != NULL)
	{
		ids->calls[ids->ncalls - 1].answered = 1;
		while (ids->first_open < ids->ncalls &&
			   ids->calls[ids->first_open].answered)
			ids->first_open++;
	}
	return id;
}

/* ----------------------------------------------------------------
 *		The ids' state at a content boundary, for requests resumed there
 * ----------------------------------------------------------------
 */

int
llm_ids_save(const LlmIdSynth *ids, LlmIdState *st)
{
	size_t		i;
	size_t		n = 0;

	memset(st, 0, sizeof(LlmIdState));
	st->counter = ids->counter;
	for (i = ids->first_open; i < ids->ncalls; i++)
		if (!ids->calls[i].answered)
			n++;
	if (n == 0)
		return 0;
	if (n > LLM_MAX_RESUME_OPEN ||
		(st->open = calloc(n, sizeof(LlmIdOpen))) == NULL)
		return -1;
	for (i = ids->first_open; i < ids->ncalls; i++)
	{
		const LlmIdCall *c = &ids->calls[i];
		LlmIdOpen  *o = &st->open[st->nopen];

		if (c->answered)
			continue;
		st->nopen++;
		o->synthesized = c->synthesized;
		o->id = strdup(c->id);
		o->name = c->name ? strdup(c->name) : NULL;
		if (o->id == NULL || (c->name != NULL && o->name == NULL))
		{
			llm_id_state_free(st);
			return -1;
		}
	}
	return 0;
}

int
llm_ids_restore(LlmIdSynth *ids, const LlmIdState *st)
{
	size_t		i;

	ids->counter = st->counter;
	for (i = 0; i < st->nopen; i++)
	{
		LlmIdCall  *c;

		if (llm_id_grow(ids) < 0)
			return -1;
		c = &ids->calls[ids->ncalls];
		if ((c->id = strdup(st->open[i].id)) == NULL)
			return -1;
		c->name = st->open[i].name;
		c->synthesized = st->open[i].synthesized;
		c->answered = 0;
		ids->ncalls++;
	}
	return 0;
}

void
llm_id_state_free(LlmIdState *st)
{
	size_t		i;

	for (i = 0; i < st->nopen; i++)
	{
		free(st->open[i].id);
		free(st->open[i].name);
	}
	free(st->open);
	memset(st, 0, sizeof(LlmIdState));
}

void
llm_log_saved(LlmRequestLog *log, size_t nmsgs, int resume, LlmIdState *st)
{
	LlmBoundary *b;

	if (log == NULL || log->failed)
	{
		llm_id_state_free(st);
		return;
	}
	if (log->n == log->cap)
	{
		size_t		cap = log->cap ? log->cap * 2 : 16;
		LlmBoundary *nb = realloc(log->b, cap * sizeof(LlmBoundary));

		if (nb == NULL)
		{
			llm_id_state_free(st);
			log->failed = 1;
			return;
		}
		log->b = nb;
		log->cap = cap;
	}
	b = &log->b[log->n++];
	b->nmsgs = nmsgs;
	b->resume = resume;
	b->ids = *st;
	memset(st, 0, sizeof(LlmIdState));
}

void
llm_log_boundary(LlmRequestLog *log, size_t nmsgs, int resume,
				 const LlmIdSynth *ids)
{
	LlmIdState	st;

	if (log == NULL)
		return;
	memset(&st, 0, sizeof(st));
	if (resume != LLM_RESUME_NO && ids != NULL && llm_ids_save(ids, &st) < 0)
		resume = LLM_RESUME_NO;
	llm_log_saved(log, nmsgs, resume, &st);
}

void
llm_log_finish(LlmRequestLog *log, struct json_object *msgs, size_t msgs_off)
{
	if (log == NULL)
		return;
	log->msgs = json_object_get(msgs);
	log->msgs_off = msgs_off;
}

void
llm_log_free(LlmRequestLog *log)
{
	size_t		i;

	for (i = 0; i < log->n; i++)
		llm_id_state_free(&log->b[i].ids);
	free(log->b);
	if (log->msgs != NULL)
		json_object_put(log->msgs);
	memset(log, 0, sizeof(LlmRequestLog));
}

/* ----------------------------------------------------------------
 *		Plans: the ids a kept content takes, without decoding it
 * ----------------------------------------------------------------
 */

#define PLAN_MAGIC 0x4e4c5044U

typedef struct LlmIdPlanItem
{
	size_t		part;
	const char *id;				/* borrowed from the content */
	const char *name;
} LlmIdPlanItem;

struct LlmIdPlan
{
	uint32_t	magic;
	int			is_model;
	size_t		nparts;
	size_t		n;
	LlmIdPlanItem items[];
};

static void
plan_free(struct json_object *content, void *userdata)
{
	if (llm_json_userdata_detach(content))
		free(userdata);
}

LlmIdPlan *
llm_ids_plan_new(struct json_object *content, int is_model, size_t nparts)
{
	LlmIdPlan  *plan;

	if (!json_object_is_type(content, json_type_object) ||
		json_object_get_userdata(content) != NULL)
		return NULL;
	plan = malloc(offsetof(LlmIdPlan, items) + sizeof(LlmIdPlanItem) * (nparts + 1));
	if (plan == NULL)
		return NULL;
	plan->magic = PLAN_MAGIC;
	plan->is_model = is_model;
	plan->nparts = nparts;
	plan->n = 0;
	return plan;
}

void
llm_ids_plan_add(LlmIdPlan *plan, size_t part, const LlmPart *p)
{
	if (plan == NULL || plan->n >= plan->nparts)
		return;
	plan->items[plan->n].part = part;
	plan->items[plan->n].id = p->id;
	plan->items[plan->n].name = p->name;
	plan->n++;
}

void
llm_ids_plan_keep(struct json_object *content, LlmIdPlan *plan)
{
	if (plan != NULL)
		json_object_set_userdata(content, plan, plan_free);
}

void
llm_ids_plan_free(LlmIdPlan *plan)
{
	free(plan);
}

int
llm_ids_replay(struct json_object *content, LlmIdSynth *ids,
			   const char ***assigned, char **sig)
{
	LlmIdPlan  *plan;
	const char **a;
	LlmBuf		b = {0};
	size_t		i;

	*assigned = NULL;
	*sig = NULL;
	if (!json_object_is_type(content, json_type_object))
		return 0;
	plan = (LlmIdPlan *) json_object_get_userdata(content);
	if (plan == NULL || plan->magic != PLAN_MAGIC)
		return 0;
	a = calloc(plan->nparts + 1, sizeof(char *));
	if (a == NULL || llm_buf_append(&b, "", 0) < 0)
		goto fail;
	for (i = 0; i < plan->n; i++)
	{
		LlmPart		part;
		const char *id;

		memset(&part, 0, sizeof(part));
		part.kind = plan->is_model ? LLM_PART_CALL : LLM_PART_RESPONSE;
		part.id = plan->items[i].id;
		part.name = plan->items[i].name;
		id = plan->is_model ? llm_ids_call(ids, &part) :
			llm_ids_response(ids, &part);
		if (id == NULL || llm_ids_sig_append(&b, id) < 0)
			goto fail;
		a[plan->items[i].part] = id;
	}
	*assigned = a;
	*sig = b.data;
	return 1;

fail:
	free(a);
	llm_buf_free(&b);
	return -1;
}

int
llm_ids_assign(struct json_object *content, size_t ci, LlmIdSynth *ids,
			   LlmIdCheck check, const char ***assigned, char **sig,
			   char **errmsg)
{
	struct json_object *parts;
	int			is_model;
	size_t		n;
	size_t		pi;
	const char **a;
	LlmBuf		b = {0};
	LlmIdPlan  *plan;
	int			rc;

	/* a content that took its ids before: the same calls, no decoding */
	if ((rc = llm_ids_replay(content, ids, assigned, sig)) != 0)
		return rc > 0 ? 0 : -1;
	if (llm_content_decode(content, ci, &is_model, &parts, errmsg) < 0)
		return -1;
	n = json_object_array_length(parts);
	a = calloc(n + 1, sizeof(char *));
	plan = llm_ids_plan_new(content, is_model, n);
	if (a == NULL || llm_buf_append(&b, "", 0) < 0)
		goto fail;
	for (pi = 0; pi < n; pi++)
	{
		LlmPart		part;
		const char *id;

		if (llm_part_decode(json_object_array_get_idx(parts, pi), ci, pi, &part,
							errmsg) < 0 ||
			(rc = check(&part, is_model, ci, pi, errmsg)) < 0)
			goto fail;
		if (rc == 0)
			continue;
		id = is_model ? llm_ids_call(ids, &part) : llm_ids_response(ids, &part);
		if (id == NULL || llm_ids_sig_append(&b, id) < 0)
			goto fail;
		a[pi] = id;
		llm_ids_plan_add(plan, pi, &part);
	}
	llm_ids_plan_keep(content, plan);
	*assigned = a;
	*sig = b.data;
	return 0;

fail:
	llm_ids_plan_free(plan);
	free(a);
	llm_buf_free(&b);
	return -1;
}

int
llm_ids_sig_append(LlmBuf *b, const char *id)
{
	char		out[24];
	size_t		n = put_decimal(out, strlen(id));

	out[n] = ':';
	return llm_buf_append(b, out, n + 1) < 0 ? -1 :
		llm_buf_append(b, id, strlen(id));
}

void
llm_ids_free(LlmIdSynth *ids)
{
	size_t		i;

	for (i = 0; i < ids->ncalls; i++)
		free(ids->calls[i].id);
	free(ids->calls);
	memset(ids, 0, sizeof(LlmIdSynth));
}

static int
llm_random(unsigned char *buf, size_t n)
{
	size_t		got = 0;

	while (got < n)
	{
		ssize_t		r = getrandom(buf + got, n - got, 0);

		if (r < 0)
		{
			if (errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t) r;
	}
	return 0;
}

int
llm_new_call_id(char *buf)
{
	unsigned char r[16];

	if (llm_random(r, sizeof(r)) < 0)
		return -1;
	r[6] = (unsigned char) ((r[6] & 0x0F) | 0x40);	/* version 4 */
	r[8] = (unsigned char) ((r[8] & 0x3F) | 0x80);	/* RFC 4122 variant */
	snprintf(buf, LLM_CALL_ID_LEN + 1,
			 LLM_CALL_ID_PREFIX "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
			 r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7],
			 r[8], r[9], r[10], r[11], r[12], r[13], r[14], r[15]);
	return 0;
}

int
llm_is_generated_call_id(const char *id)
{
	size_t		plen = strlen(LLM_CALL_ID_PREFIX);
	size_t		i;

	if (id == NULL || strlen(id) != LLM_CALL_ID_LEN ||
		strncmp(id, LLM_CALL_ID_PREFIX, plen) != 0)
		return 0;
	for (i = plen; i < LLM_CALL_ID_LEN; i++)
	{
		size_t		k = i - plen;
		char		c = id[i];

		if (k == 8 || k == 13 || k == 18 || k == 23)
		{
			if (c != '-')
				return 0;
		}
		else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return 0;
	}
	return 1;
}
