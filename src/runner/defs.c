/*-------------------------------------------------------------------------
 *
 * defs.c
 *	  An app's definitions -- the app row, its plugins, its agent tree and
 *	  the agents' tools -- read once per backend and kept while
 *	  adk.definitions_version does not change.
 *
 * Every statement that writes adk.agents, adk.tools, adk.apps or
 * adk.plugins bumps that one row, so a run compares the row's version and
 * xmin with what the cache was read under: equal means nothing changed
 * (the xmin also tells a rolled-back change from a later committed one).
 * On a change the whole cache is dropped -- or, while a run still uses it
 * (a cursor over adk_run, half read), set aside and freed when the last
 * such run's memory goes: a run keeps the definitions it started with.  The
 * tree rules are checked when
 * a tree is read, so a run never uses a tree that breaks them.  Models and
 * secrets are not cached: their rows are read at each model call.
 *
 * IDENTIFICATION
 *	  src/runner/defs.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "common/spi_plans.h"
#include "runner/runner.h"
#include "store/owner.h"

typedef struct CachedApp
{
	char	   *app;
	char	   *root_name;
	bool		auto_create;
	bool		compaction;
	int			max_llm_calls;
	List	   *plugins;
	List	   *agents;
	AdkAgent   *root;
} CachedApp;

/*
 * One generation of the cache: its memory, and how many runs still use it
 * (in TopMemoryContext, outside the memory it describes).
 */
typedef struct CacheGen
{
	MemoryContext cxt;
	int			pins;			/* runs that started with it, not yet freed */
	bool		current;		/* false: set aside, freed at the last unpin */
} CacheGen;

static CacheGen *cache_gen = NULL;
static List *cached_apps = NIL;
static int64 cached_version = -1;
static char *cached_xmin = NULL;

static void check_version(void);
static void new_generation(void);
static void unpin_generation(void *arg);
static CachedApp *load_app(const char *app);

/*
 * Fill run's definitions (root, agents, plugins, max_llm_calls unless the
 * options set it) for run->app.
 */
void
adk_load_definitions(AdkRun *run, bool *auto_create)
{
	ListCell   *lc;
	CachedApp  *c = NULL;
	MemoryContextCallback *pin;

	check_version();
	foreach(lc, cached_apps)
	{
		if (strcmp(((CachedApp *) lfirst(lc))->app, run->app) == 0)
		{
			c = (CachedApp *) lfirst(lc);
			break;
		}
	}
	if (c == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(cache_gen->cxt);

		c = load_app(run->app);
		cached_apps = lappend(cached_apps, c);
		MemoryContextSwitchTo(old);
	}
	/*
	 * The run points into this generation: pin it until the run's memory
	 * goes (at the end of the run's query, also on error).
	 */
	pin = MemoryContextAlloc(GetMemoryChunkContext(run), sizeof(MemoryContextCallback));
	pin->func = unpin_generation;
	pin->arg = cache_gen;
	cache_gen->pins++;
	MemoryContextRegisterResetCallback(GetMemoryChunkContext(run), pin);

	run->root = c->root;
	run->agents = c->agents;
	run->plugins = c->plugins;
	/* options.max_llm_calls may lower the app's cap, never raise it */
	if (run->max_llm_calls < 0 || run->max_llm_calls > c->max_llm_calls)
		run->max_llm_calls = c->max_llm_calls;
	*auto_create = c->auto_create;
	run->compaction_configured = c->compaction;
}

/*
 * Drop the cache when adk.definitions_version changed.
 */
static void
check_version(void)
{
	AdkOwnerSave save;
	int64		version = 0;
	char	   *xmin = NULL;
	bool		isnull;

	adk_become_owner(&save);
	SPI_connect();
	if (adk_spi_exec("SELECT version, xmin::pg_catalog.text FROM adk.definitions_version",
					 0, NULL, NULL, NULL, 1) == SPI_OK_SELECT && SPI_processed == 1)
	{
		version = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											  SPI_tuptable->tupdesc, 1, &isnull));
		xmin = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	}
	if (cache_gen == NULL)
		new_generation();
	if (version != cached_version || xmin == NULL || cached_xmin == NULL ||
		strcmp(xmin, cached_xmin) != 0)
	{
		if (cache_gen->pins > 0)
		{
			/* runs still use it: the last of them frees it */
			cache_gen->current = false;
			new_generation();
		}
		else
			MemoryContextReset(cache_gen->cxt);
		cached_apps = NIL;
		cached_version = version;
		cached_xmin = xmin ? MemoryContextStrdup(cache_gen->cxt, xmin) : NULL;
	}
	SPI_finish();
	adk_restore_user(&save);
}

static void
new_generation(void)
{
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext, "adk_runner definitions",
											  ALLOCSET_DEFAULT_SIZES);

	cache_gen = MemoryContextAllocZero(TopMemoryContext, sizeof(CacheGen));
	cache_gen->cxt = cxt;
	cache_gen->current = true;
}

/*
 * A run's memory is going: it no longer uses its generation.  (Reset
 * callbacks of the run's context; never raises.)
 */
static void
unpin_generation(void *arg)
{
	CacheGen   *gen = (CacheGen *) arg;

	gen->pins--;
	if (gen->pins == 0 && !gen->current)
	{
		MemoryContextDelete(gen->cxt);
		pfree(gen);
	}
}

/*
 * Read one app's definitions (into the current memory context).
 */
static CachedApp *
load_app(const char *app)
{
	CachedApp  *c = palloc0(sizeof(CachedApp));
	AdkOwnerSave save;
	Datum		arg = CStringGetTextDatum(app);
	Oid			type = TEXTOID;
	MemoryContext caller = CurrentMemoryContext;
	bool		isnull;
	HeapTuple	row;
	TupleDesc	desc;
	ArrayType  *plugins;
	AdkRun		tmp;
	ListCell   *lc;

	adk_become_owner(&save);
	SPI_connect();
	if (adk_spi_exec("SELECT root_agent, auto_create_session, plugins, max_llm_calls,"
					 " compaction IS NOT NULL"
					 " FROM adk.apps WHERE name OPERATOR(pg_catalog.=) $1",
					 1, &type, &arg, NULL, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read adk.apps");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("app \"%s\" does not exist", app),
				 errhint("Define it with adk_define_app().")));
	row = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	MemoryContextSwitchTo(caller);
	c->app = pstrdup(app);
	c->root_name = SPI_getvalue(row, desc, 1);
	c->auto_create = DatumGetBool(SPI_getbinval(row, desc, 2, &isnull));
	plugins = DatumGetArrayTypePCopy(SPI_getbinval(row, desc, 3, &isnull));
	c->max_llm_calls = DatumGetInt32(SPI_getbinval(row, desc, 4, &isnull));
	c->compaction = DatumGetBool(SPI_getbinval(row, desc, 5, &isnull));
	SPI_finish();
	adk_restore_user(&save);

	c->plugins = adk_load_plugins(plugins);
	memset(&tmp, 0, sizeof(tmp));
	tmp.app = c->app;
	adk_load_agents(&tmp, c->root_name);
	c->root = tmp.root;
	c->agents = tmp.agents;
	foreach(lc, c->agents)
	{
		AdkAgent   *a = (AdkAgent *) lfirst(lc);

		a->tool_defs = adk_load_tools(a);
		a->tools_loaded = true;
	}
	return c;
}
