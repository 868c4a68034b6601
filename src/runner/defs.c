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
#include "common/md5.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "common/jsonb_util.h"
#include "common/spi_plans.h"
#include "runner/runner.h"
#include "common/owner.h"

typedef struct CachedApp
{
	char	   *app;
	char	   *root_name;
	bool		auto_create;
	bool		compaction;
	bool		context_cache;	/* adk.apps.context_cache enabled */
	AdkAppOptions builtin;		/* adk._app_builtin_options */
	int64		version;		/* adk.definitions_version it was read at */
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

	run->defs.root = c->root;
	run->defs.agents = c->agents;
	run->defs.plugins = c->plugins;
	/* options.max_llm_calls may lower the app's cap, never raise it */
	if (run->max_llm_calls < 0 || run->max_llm_calls > c->max_llm_calls)
		run->max_llm_calls = c->max_llm_calls;
	*auto_create = c->auto_create;
	run->defs.compaction_configured = c->compaction;
	run->defs.context_cache = c->context_cache;
	run->defs.builtin = c->builtin;
	run->defs.version = c->version;
}

/*
 * config with the prompt cache key of agent's requests when the app caches
 * prompts (docs/models.md, "Prompt caching"), else config.  The key is the
 * same for every request of the app and agent while the definitions stay
 * (their version): the prompt the agent's requests begin with -- its
 * instruction and tools -- is defined by them.  A hash, so that no app or
 * agent name goes to the provider.
 */
Jsonb *
adk_prompt_cache_config(AdkRun *run, AdkAgent *agent, Jsonb *config)
{
	StringInfoData what;
	char		hex[33];
	const char *errstr = NULL;
	char	   *add;

	if (!run->defs.context_cache)
		return config;
	initStringInfo(&what);
	appendStringInfo(&what, "%s%c%s%c" INT64_FORMAT, run->app, '\0',
					 agent->name, '\0', run->defs.version);
	if (!pg_md5_hash(what.data, what.len, hex, &errstr))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not compute the prompt cache key: %s", errstr)));
	add = psprintf("{\"prompt_cache_key\": \"adk-%s\"}", hex);
	return adk_jsonb_concat(config,
							DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
															   CStringGetDatum(add))));
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

	adk_owner_spi_begin(&save);
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
	adk_owner_spi_end(&save);
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

	adk_owner_spi_begin(&save);
	if (adk_spi_exec("SELECT * FROM adk._app_definition($1)",
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
	c->context_cache = DatumGetBool(SPI_getbinval(row, desc, 6, &isnull));
	c->version = cached_version;
	/* the built-in tools' settings, read with the rest of the app's row */
	if (adk_spi_exec("SELECT * FROM adk._app_builtin_options($1)",
					 1, &type, &arg, NULL, 1) == SPI_OK_SELECT && SPI_processed == 1)
	{
		row = SPI_tuptable->vals[0];
		desc = SPI_tuptable->tupdesc;
		c->builtin.save_input_blobs = DatumGetBool(SPI_getbinval(row, desc, 1, &isnull));
		c->builtin.add_to_memory = DatumGetBool(SPI_getbinval(row, desc, 2, &isnull));
	}
	adk_owner_spi_end(&save);

	c->plugins = adk_load_plugins(plugins);
	memset(&tmp, 0, sizeof(tmp));
	tmp.app = c->app;
	adk_load_agents(&tmp, c->root_name);
	c->root = tmp.defs.root;
	c->agents = tmp.defs.agents;
	foreach(lc, c->agents)
	{
		AdkAgent   *a = (AdkAgent *) lfirst(lc);

		a->tool_defs = adk_load_tools(a);
		a->tools_loaded = true;
	}
	return c;
}

/*
 * The agent tree of a run, read once per invocation from adk.agents
 * (checked against the tree rules first: rows may have changed since the
 * app was defined), and the lookups in it: agents.c steps through the
 * tree; the flow, the prompt and the tools look agents up here.
 */
static void load_tree(AdkRun *run, const char *root, bool main_tree);
static char *text_array_get(ArrayType *a, List **out);

#define TREE_SQL "SELECT * FROM adk._agent_definitions($1)"

/*
 * Read the tree under root_name (and the agents its agents use as tools).
 */
void
adk_load_agents(AdkRun *run, const char *root_name)
{
	ListCell   *lc;
	int			i;

	load_tree(run, root_name, true);
	run->defs.root = adk_find_agent(run, root_name);
	if (run->defs.root == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("root agent \"%s\" of app \"%s\" does not exist",
						root_name, run->app)));

	/*
	 * Agents used as tools, and the agents and nested workflows that are a
	 * graph workflow's nodes (workflow.c), that are not in the tree: each
	 * loaded as a tree of its own (which may name more, so the list is
	 * walked as it grows)
	 */
	for (i = 0; i < list_length(run->defs.agents); i++)
	{
		AdkAgent   *a = (AdkAgent *) list_nth(run->defs.agents, i);
		List	   *names = list_copy(a->tools);
		AdkOwnerSave save;
		Oid			type = TEXTOID;
		Datum		arg;

		if (strcmp(a->kind, "workflow") == 0)
		{
			MemoryContext caller = CurrentMemoryContext;
			uint64		k;

			arg = CStringGetTextDatum(a->name);
			adk_owner_spi_begin(&save);
			if (adk_spi_exec("SELECT coalesce(agent, sub_workflow) FROM adk.workflow_nodes WHERE workflow OPERATOR(pg_catalog.=) $1 AND kind IN ('agent', 'workflow')",
							 1, &type, &arg, NULL, 0) != SPI_OK_SELECT)
				elog(ERROR, "could not read the agent nodes of workflow \"%s\"", a->name);
			for (k = 0; k < SPI_processed; k++)
			{
				char	   *name = SPI_getvalue(SPI_tuptable->vals[k],
												SPI_tuptable->tupdesc, 1);
				MemoryContext spi = MemoryContextSwitchTo(caller);

				names = lappend(names, pstrdup(name));
				MemoryContextSwitchTo(spi);
			}
			adk_owner_spi_end(&save);
		}
		foreach(lc, names)
		{
			char	   *name = (char *) lfirst(lc);
			bool		is_agent;

			if (adk_find_agent(run, name) != NULL)
				continue;
			arg = CStringGetTextDatum(name);
			adk_owner_spi_begin(&save);
			is_agent = adk_spi_exec("SELECT 1 FROM adk.agents WHERE name OPERATOR(pg_catalog.=) $1",
									1, &type, &arg, NULL, 1) == SPI_OK_SELECT &&
				SPI_processed == 1;
			adk_owner_spi_end(&save);
			if (is_agent)
				load_tree(run, name, false);
		}
		list_free(names);
	}
}

static void
load_tree(AdkRun *run, const char *root, bool main_tree)
{
	AdkOwnerSave save;
	Datum		arg = CStringGetTextDatum(root);
	Oid			type = TEXTOID;
	MemoryContext caller = CurrentMemoryContext;
	uint64		i;
	List	   *workflows = NIL;
	List	   *parents = NIL;
	ListCell   *lc;
	ListCell   *pc;
	char	   *refusal;
	char	   *refused = NULL;

	adk_owner_spi_begin(&save);
	if (main_tree &&
		adk_spi_exec("SELECT adk._check_agent_tree($1)", 1, &type, &arg,
					 NULL, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not check the agent tree");
	if (adk_spi_exec(TREE_SQL, 1, &type, &arg, NULL, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the agent tree");
	for (i = 0; i < SPI_processed; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		MemoryContext spi = MemoryContextSwitchTo(caller);
		AdkAgent   *a = palloc0(sizeof(AdkAgent));
		char	   *parent = SPI_getvalue(row, desc, 2);
		bool		isnull;
		Datum		d;

		a->name = SPI_getvalue(row, desc, 1);
		a->kind = SPI_getvalue(row, desc, 3);

		if (strcmp(a->kind, "workflow") == 0)
		{
			workflows = lappend(workflows, a->name);
			/* a sub-agent of an agent that is not a workflow, or the root */
			parents = lappend(parents, i > 0 ? parent : NULL);
		}
		a->model = SPI_getvalue(row, desc, 4);
		a->instruction = SPI_getvalue(row, desc, 5);
		a->description = SPI_getvalue(row, desc, 6);
		d = SPI_getbinval(row, desc, 7, &isnull);
		if (!isnull)
			text_array_get(DatumGetArrayTypeP(d), &a->tools);
		a->output_key = SPI_getvalue(row, desc, 8);
		a->disallow_transfer_to_parent = DatumGetBool(SPI_getbinval(row, desc, 9, &isnull));
		a->disallow_transfer_to_peers = DatumGetBool(SPI_getbinval(row, desc, 10, &isnull));
		d = SPI_getbinval(row, desc, 11, &isnull);
		a->max_iterations = isnull ? 0 : DatumGetInt32(d);
		a->include_contents_none = DatumGetBool(SPI_getbinval(row, desc, 12, &isnull));
		d = SPI_getbinval(row, desc, 13, &isnull);
		a->generate_config = isnull ? NULL : DatumGetJsonbPCopy(d);
		a->mode = SPI_getvalue(row, desc, 14);
		d = SPI_getbinval(row, desc, 15, &isnull);
		a->input_schema = isnull ? NULL : DatumGetJsonbPCopy(d);
		d = SPI_getbinval(row, desc, 16, &isnull);
		a->output_schema = isnull ? NULL : DatumGetJsonbPCopy(d);
		if (parent != NULL && (!main_tree || i > 0))
		{
			a->parent = adk_find_agent(run, parent);
			if (a->parent)
				a->parent->sub_agents = lappend(a->parent->sub_agents, a);
		}
		if (i == 0)
			a->parent = NULL;
		run->defs.agents = lappend(run->defs.agents, a);
		MemoryContextSwitchTo(spi);
	}

	/*
	 * A graph workflow runs (workflow.c) when its nodes are of the kinds
	 * the runner runs; else the run is refused before anything is stored
	 * (docs/workflows.md "What runs").
	 */
	forboth(lc, workflows, pc, parents)
	{
		Oid			types[2] = {TEXTOID, TEXTOID};
		Datum		args[2];
		char		nulls[2] = {' ', lfirst(pc) ? ' ' : 'n'};

		args[0] = CStringGetTextDatum((char *) lfirst(lc));
		args[1] = lfirst(pc) ? CStringGetTextDatum((char *) lfirst(pc)) : (Datum) 0;
		if (adk_spi_exec("SELECT coalesce(adk._workflow_refusal($1),"
						 " adk._workflow_pause_refusal($1),"
						 " adk._workflow_pause_below_refusal($1, $2))", 2, types, args,
						 nulls, 0) != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "could not check workflow \"%s\"", (char *) lfirst(lc));
		refusal = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		if (refusal != NULL)
		{
			MemoryContext spi = MemoryContextSwitchTo(caller);

			refusal = pstrdup(refusal);
			refused = (char *) lfirst(lc);
			MemoryContextSwitchTo(spi);
			break;
		}
	}
	adk_owner_spi_end(&save);
	if (refused != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("workflow \"%s\" cannot run: %s, which adk_runner does not run yet",
						refused, refusal),
				 errdetail("It is in the agent tree of \"%s\".", root),
				 errhint("Every node kind runs and takes every setting but a join, which takes no retry or timeout; a tool node's tool may not require confirmation; an agent node's own agent may pause for human input, an item's agent too, but not an agent below it or one in a workflow below an agent that is not a workflow.  See \"What runs\" in docs/workflows.md.")));
}

static char *
text_array_get(ArrayType *a, List **out)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			i;

	deconstruct_array(a, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	for (i = 0; i < n; i++)
		if (!nulls[i])
			*out = lappend(*out, TextDatumGetCString(elems[i]));
	return NULL;
}

AdkAgent *
adk_find_agent(AdkRun *run, const char *name)
{
	ListCell   *lc;

	if (name == NULL)
		return NULL;
	foreach(lc, run->defs.agents)
	{
		AdkAgent   *a = (AdkAgent *) lfirst(lc);

		if (strcmp(a->name, name) == 0)
			return a;
	}
	return NULL;
}

/*
 * Where an LLM agent may transfer (ADK's _get_transfer_targets): its
 * sub-agents; its parent unless disallow_transfer_to_parent; its peers
 * unless disallow_transfer_to_peers -- the last two only under an LLM
 * parent.  Only chat agents transfer and are transferred to: a task or
 * single_turn agent is reached through the tool named as it
 * (docs/agent-modes.md).
 */
List *
adk_transfer_targets(AdkAgent *agent)
{
	List	   *result = NIL;
	ListCell   *lc;

	if (strcmp(agent->kind, "llm") != 0 || !adk_agent_is_chat(agent))
		return NIL;
	foreach(lc, agent->sub_agents)
	{
		if (adk_agent_is_chat(lfirst(lc)))
			result = lappend(result, lfirst(lc));
	}
	if (agent->parent && strcmp(agent->parent->kind, "llm") == 0)
	{
		if (!agent->disallow_transfer_to_parent)
			result = lappend(result, agent->parent);
		if (!agent->disallow_transfer_to_peers)
		{
			foreach(lc, agent->parent->sub_agents)
			{
				if (lfirst(lc) != agent && adk_agent_is_chat(lfirst(lc)))
					result = lappend(result, lfirst(lc));
			}
		}
	}
	return result;
}

/*
 * The SQL tool named name in adk.tools, allocated in caller; NULL when
 * there is none.  The caller is connected to SPI as the owner.
 */
static AdkTool *
read_tool(const char *name, MemoryContext caller)
{
	Oid			argtype = TEXTOID;
	Datum		arg = CStringGetTextDatum(name);
	AdkTool    *t;
	HeapTuple	row;
	TupleDesc	desc;
	MemoryContext spi;
	bool		isnull;

	if (adk_spi_exec("SELECT * FROM adk._tool_definition($1)",
					 1, &argtype, &arg, NULL, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read adk.tools");
	if (SPI_processed == 0)
		return NULL;
	row = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	spi = MemoryContextSwitchTo(caller);
	t = palloc0(sizeof(AdkTool));
	t->name = pstrdup(name);
	t->function = DatumGetObjectId(SPI_getbinval(row, desc, 1, &isnull));
	t->description = SPI_getvalue(row, desc, 2);
	t->parameters = DatumGetJsonbPCopy(SPI_getbinval(row, desc, 3, &isnull));
	t->long_running = DatumGetBool(SPI_getbinval(row, desc, 4, &isnull));
	t->require_confirmation = DatumGetBool(SPI_getbinval(row, desc, 5, &isnull));
	MemoryContextSwitchTo(spi);
	return t;
}

/*
 * The SQL tools an agent lists (built-ins and agents-as-tools are not in
 * adk.tools).
 */
List *
adk_load_tools(AdkAgent *agent)
{
	List	   *result = NIL;
	ListCell   *lc;
	AdkOwnerSave save;
	MemoryContext caller = CurrentMemoryContext;

	if (agent->tools == NIL)
		return NIL;
	adk_owner_spi_begin(&save);
	foreach(lc, agent->tools)
	{
		AdkTool    *t = read_tool((char *) lfirst(lc), caller);

		if (t != NULL)
		{
			/* the list outlives SPI's memory */
			MemoryContext spi = MemoryContextSwitchTo(caller);

			result = lappend(result, t);
			MemoryContextSwitchTo(spi);
		}
	}
	adk_owner_spi_end(&save);
	return result;
}

/* The SQL tool named name (a workflow's tool node's), or NULL */
AdkTool *
adk_load_tool(const char *name)
{
	AdkOwnerSave save;
	MemoryContext caller = CurrentMemoryContext;
	AdkTool    *t;

	adk_owner_spi_begin(&save);
	t = read_tool(name, caller);
	adk_owner_spi_end(&save);
	return t;
}

/* Whether the agent lists name (a tool, a built-in, an agent) among its tools */
bool
adk_agent_lists(AdkAgent *agent, const char *name)
{
	ListCell   *lc;

	foreach(lc, agent->tools)
		if (strcmp((char *) lfirst(lc), name) == 0)
			return true;
	return false;
}

/*
 * The run's app's settings for the built-in tools (adk.apps), read with
 * the app's definitions: a change to adk.apps bumps their version, so
 * they are the row as it stands.
 */
AdkAppOptions
adk_app_builtin_options(AdkRun *run)
{
	return run->defs.builtin;
}

/*
 * Whether agent is a graph workflow (its frame is stepped by workflow.c;
 * hitl.c and agents.c ask too)
 */
bool
adk_is_graph(AdkAgent *agent)
{
	return strcmp(agent->kind, "workflow") == 0;
}
