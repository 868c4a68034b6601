/*-------------------------------------------------------------------------
 *
 * breaker.c
 *	  The models' circuit breakers (docs/models.md, "Fallback models"): one
 *	  entry per model in shared memory, so every backend and job worker
 *	  sees the same state.
 *
 * A failure that would fail over (model/fallback.c) counts against the
 * model that failed.  adk.breaker_failures of them within
 * adk.breaker_window open its breaker: for adk.breaker_cooldown every
 * request skips the model and starts on its first fallback.  Then the
 * breaker is half open: requests try the model again; the first answer
 * closes the breaker, the first failure opens it for another cool-down.
 * An answer also forgets the failures counted so far.  The three settings
 * are the server's (reload), so that every process counts alike.
 *
 * Only with shared_preload_libraries = 'adk_runner' (the memory is
 * requested at server start); otherwise no breaker ever opens and
 * adk.model_breakers is empty.  At most BREAKER_SLOTS models are tracked
 * at once: when every slot is taken, the one least recently failed and
 * now closed is reused, and a model that finds none is not tracked.  One
 * LWLock guards the entries, held only for a few loads and stores, and
 * exclusively only to change one (an answer that changes nothing reads).
 *
 * IDENTIFICATION
 *	  src/shared/breaker.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "common/hashfn.h"
#include "fmgr.h"
#include "funcapi.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "shared/breaker.h"

#define BREAKER_SLOTS		256
#define BREAKER_NAME_LEN	128

int			adk_breaker_failures = 5;
int			adk_breaker_window_ms = 60 * 1000;
int			adk_breaker_cooldown_ms = 30 * 1000;

typedef struct BreakerEntry
{
	uint64		hash;			/* of the whole model name; 0: free */
	char		name[BREAKER_NAME_LEN]; /* the name, cut to fit */
	int			failures;		/* counted in the window since window_start */
	TimestampTz window_start;
	TimestampTz open_until;		/* 0: closed; past: half open */
	int64		times_opened;
	TimestampTz last_failure;
} BreakerEntry;

typedef struct BreakerShmem
{
	LWLock	   *lock;
	BreakerEntry entries[BREAKER_SLOTS];
} BreakerShmem;

static BreakerShmem *breakers = NULL;

static uint64 name_hash(const char *model);
static BreakerEntry *find_entry(uint64 h);
static BreakerEntry *take_entry(uint64 h, const char *model, TimestampTz now);
static void open_breaker(BreakerEntry *e, TimestampTz now);

PG_FUNCTION_INFO_V1(adk_model_breakers);

Size
adk_breaker_shmem_size(void)
{
	return MAXALIGN(sizeof(BreakerShmem));
}

/* Called under AddinShmemInitLock by shared/shmem.c's startup hook. */
void
adk_breaker_shmem_startup(void)
{
	bool		found;

	breakers = ShmemInitStruct("adk_runner breakers", adk_breaker_shmem_size(),
							   &found);
	if (!found)
	{
		memset(breakers, 0, adk_breaker_shmem_size());
		breakers->lock = &(GetNamedLWLockTranche("adk_runner breakers"))->lock;
	}
}

/* Called from _PG_init, with the model layer's other settings. */
void
adk_breaker_init_gucs(void)
{
	DefineCustomIntVariable("adk.breaker_failures",
							gettext_noop("Failures of a model within adk.breaker_window that open its circuit breaker."),
							gettext_noop("0 never opens one.  Only failures that fail over count (the model's fallback_on option)."),
							&adk_breaker_failures,
							5,
							0,
							1000000,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("adk.breaker_window",
							gettext_noop("The time within which adk.breaker_failures failures open a model's circuit breaker."),
							NULL,
							&adk_breaker_window_ms,
							60 * 1000,
							1,
							INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("adk.breaker_cooldown",
							gettext_noop("How long an open circuit breaker makes requests skip its model."),
							NULL,
							&adk_breaker_cooldown_ms,
							30 * 1000,
							1,
							INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
}

/*
 * Is the breaker of model open (requests skip the model)?  False when
 * closed, half open or not tracked.
 */
bool
adk_breaker_is_open(const char *model)
{
	uint64		h = name_hash(model);
	BreakerEntry *e;
	bool		open = false;

	if (breakers == NULL)
		return false;
	LWLockAcquire(breakers->lock, LW_SHARED);
	e = find_entry(h);
	if (e != NULL && e->open_until != 0 &&
		GetCurrentTimestamp() < e->open_until)
		open = true;
	LWLockRelease(breakers->lock);
	return open;
}

/*
 * The model failed (a failure that fails over): count it, and open the
 * breaker at the adk.breaker_failures'th in the window -- or at once when
 * it was half open.
 */
void
adk_breaker_failure(const char *model)
{
	uint64		h = name_hash(model);
	TimestampTz now = GetCurrentTimestamp();
	BreakerEntry *e;

	if (breakers == NULL || adk_breaker_failures <= 0)
		return;
	LWLockAcquire(breakers->lock, LW_EXCLUSIVE);
	e = take_entry(h, model, now);
	if (e != NULL)
	{
		e->last_failure = now;
		if (e->open_until != 0 && now >= e->open_until)
			open_breaker(e, now);	/* half open: the trial failed */
		else if (e->open_until == 0)
		{
			if (e->failures == 0 ||
				now >= TimestampTzPlusMilliseconds(e->window_start,
												   adk_breaker_window_ms))
			{
				e->window_start = now;
				e->failures = 0;
			}
			if (++e->failures >= adk_breaker_failures)
				open_breaker(e, now);
		}
	}
	LWLockRelease(breakers->lock);
}

/*
 * The model answered: its breaker closes and its failures are forgotten.
 * Nearly every answer finds the breaker closed with nothing counted, or
 * the model untracked: that is seen under the shared lock, so answers in
 * many processes do not queue for the exclusive one; only a breaker with
 * something to forget takes it (and looks again).
 */
void
adk_breaker_success(const char *model)
{
	uint64		h = name_hash(model);
	BreakerEntry *e;
	bool		clean;

	if (breakers == NULL)
		return;
	LWLockAcquire(breakers->lock, LW_SHARED);
	e = find_entry(h);
	clean = (e == NULL || (e->failures == 0 && e->open_until == 0));
	LWLockRelease(breakers->lock);
	if (clean)
		return;
	LWLockAcquire(breakers->lock, LW_EXCLUSIVE);
	e = find_entry(h);
	if (e != NULL)
	{
		e->failures = 0;
		e->open_until = 0;
	}
	LWLockRelease(breakers->lock);
}

static void
open_breaker(BreakerEntry *e, TimestampTz now)
{
	e->open_until = TimestampTzPlusMilliseconds(now, adk_breaker_cooldown_ms);
	e->failures = 0;
	e->times_opened++;
}

static uint64
name_hash(const char *model)
{
	uint64		h = hash_bytes_extended((const unsigned char *) model,
										(int) strlen(model), 0);

	return h == 0 ? 1 : h;
}

/* The entry of hash h, or NULL; the lock is held. */
static BreakerEntry *
find_entry(uint64 h)
{
	int			i;

	for (i = 0; i < BREAKER_SLOTS; i++)
		if (breakers->entries[i].hash == h)
			return &breakers->entries[i];
	return NULL;
}

/*
 * The entry of hash h, made when there is none: in a free slot, else in
 * the closed one that failed longest ago; NULL when every slot is open.
 * The lock is held exclusively.
 */
static BreakerEntry *
take_entry(uint64 h, const char *model, TimestampTz now)
{
	BreakerEntry *e = find_entry(h);
	BreakerEntry *reuse = NULL;
	int			i;

	if (e != NULL)
		return e;
	for (i = 0; i < BREAKER_SLOTS; i++)
	{
		BreakerEntry *c = &breakers->entries[i];

		if (c->hash == 0)
		{
			reuse = c;
			break;
		}
		if ((c->open_until == 0 || now >= c->open_until) &&
			(reuse == NULL || c->last_failure < reuse->last_failure))
			reuse = c;
	}
	if (reuse == NULL)
		return NULL;
	memset(reuse, 0, sizeof(*reuse));
	reuse->hash = h;
	strlcpy(reuse->name, model, sizeof(reuse->name));
	return reuse;
}

/*
 * adk._model_breakers(): every tracked model's breaker (adk.model_breakers).
 */
Datum
adk_model_breakers(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	BreakerEntry *copy;
	TimestampTz now = GetCurrentTimestamp();
	int			n = 0;
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	if (breakers == NULL)
		return (Datum) 0;
	copy = palloc(sizeof(BreakerEntry) * BREAKER_SLOTS);
	LWLockAcquire(breakers->lock, LW_SHARED);
	for (i = 0; i < BREAKER_SLOTS; i++)
		if (breakers->entries[i].hash != 0)
			copy[n++] = breakers->entries[i];
	LWLockRelease(breakers->lock);

	for (i = 0; i < n; i++)
	{
		BreakerEntry *e = &copy[i];
		Datum		values[7];
		bool		nulls[7] = {0};
		const char *state;

		if (e->open_until == 0)
			state = "closed";
		else if (now < e->open_until)
			state = "open";
		else
			state = "half_open";
		values[0] = CStringGetTextDatum(e->name);
		values[1] = CStringGetTextDatum(state);
		values[2] = Int32GetDatum(e->failures);
		values[3] = TimestampTzGetDatum(e->window_start);
		nulls[3] = (e->failures == 0);
		values[4] = TimestampTzGetDatum(e->open_until);
		nulls[4] = (e->open_until == 0);
		values[5] = Int64GetDatum(e->times_opened);
		values[6] = TimestampTzGetDatum(e->last_failure);
		nulls[6] = (e->last_failure == 0);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
