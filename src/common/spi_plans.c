/*-------------------------------------------------------------------------
 *
 * spi_plans.c
 *	  Running fixed SQL through SPI with plans kept for the backend.
 *
 * The runner's statements are string constants: the plan of each is
 * prepared once per backend (SPI_keepplan) and found again by the address
 * of its text, so a run spends no time parsing and planning them.  Only
 * constant SQL may come here -- never text built at run time.  Every
 * statement runs with read_only = false, so it sees what the same command
 * wrote before it (the runner reads events it has just appended).
 *
 * Each plan is generic (CURSOR_OPT_GENERIC_PLAN): made once for any
 * parameters, as a plan with parameters becomes after five runs anyway
 * when the planner finds it no dearer than the custom ones -- but without
 * the custom plans before that, and without planning again at every run
 * those statements whose generic plan the planner's estimate rates
 * dearer (the runner's statements are lookups by key: the same plan for
 * every key; test/bench/README.md has the figures).
 *
 * A kept plan never carries one search_path into another: the plan cache
 * compares the search_path a plan was made under with the current one at
 * every use and replans when they differ.  The statements here are
 * schema-qualified and run as the schema owner with search_path pinned
 * (common/owner.c), so they mean the same whoever calls.
 *
 * adk_spi_call runs a statement that lives in sql/install/ as a function
 * (the statements every turn runs, sql/install/88_turn_statements.sql):
 * it prepares the body of the LANGUAGE sql function once per backend, with
 * the function's argument types, and runs that plan -- not a call of the
 * function, which on PostgreSQL 15 parses and plans its body again at
 * every execution and pushes a GUC nest level for its SET clause
 * (docs/internals/statements.md).  What that SET clause would give, the
 * helper checks: the function must be LANGUAGE sql, not SECURITY DEFINER,
 * with search_path = pg_catalog, pg_temp its only setting, and its body
 * runs only while that is the search_path in effect (the owner's bracket
 * or the events trigger's pin, common/owner.c).  A function replaced or
 * altered since (a pg_proc invalidation) is looked up and prepared again.
 *
 * IDENTIFICATION
 *	  src/common/spi_plans.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/syscache.h"

#include "common/owner.h"
#include "common/spi_plans.h"

#define MAX_PLANS 64
#define MAX_FUNCTIONS 16

typedef struct KeptPlan
{
	const char *sql;
	SPIPlanPtr	plan;
} KeptPlan;

static KeptPlan plans[MAX_PLANS];
static int	nplans = 0;

/* A function whose body adk_spi_call runs, found by its name's address. */
typedef struct KeptFunction
{
	const char *name;
	Oid			oid;
	uint32		hash;			/* of oid in the pg_proc cache */
	bool		valid;			/* no invalidation of it since prepared */
	int			running;		/* executions of plan under way */
	SPIPlanPtr	plan;
} KeptFunction;

static KeptFunction functions[MAX_FUNCTIONS];
static int	nfunctions = 0;
static bool callback_registered = false;

static void function_invalidated(Datum arg, int cacheid, uint32 hashvalue);
static void prepare_function(KeptFunction *f, int nargs);

/*
 * SPI_execute_plan of the kept plan for sql (prepared on first use).
 * The caller is connected to SPI.
 */
int
adk_spi_exec(const char *sql, int nargs, Oid *argtypes, Datum *values,
			 const char *nulls, long count)
{
	SPIPlanPtr	plan = NULL;
	int			i;

	for (i = 0; i < nplans; i++)
	{
		if (plans[i].sql == sql)
		{
			plan = plans[i].plan;
			break;
		}
	}
	if (plan == NULL)
	{
		plan = SPI_prepare_cursor(sql, nargs, argtypes, CURSOR_OPT_GENERIC_PLAN);
		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
		if (nplans < MAX_PLANS)
		{
			SPI_keepplan(plan);
			plans[nplans].sql = sql;
			plans[nplans].plan = plan;
			nplans++;
		}
	}
	return SPI_execute_plan(plan, values, nulls, false, count);
}

/*
 * SPI_execute_plan of the body of function "name" (schema-qualified, one
 * function of that name, nargs arguments of the types it declares), as
 * the module header says.  Only constant names may come here.  The caller
 * is connected to SPI, with search_path pinned.
 */
int
adk_spi_call(const char *name, int nargs, Datum *values, const char *nulls,
			 long count)
{
	KeptFunction *volatile f = NULL;
	int			i;
	int			rc;

	if (strcmp(namespace_search_path, ADK_PINNED_SEARCH_PATH) != 0)
		elog(ERROR, "statement %s must run with search_path pinned", name);
	for (i = 0; i < nfunctions; i++)
	{
		if (functions[i].name == name)
		{
			f = &functions[i];
			break;
		}
	}
	if (f == NULL)
	{
		if (nfunctions >= MAX_FUNCTIONS)
			elog(ERROR, "too many statements kept as functions");
		f = &functions[nfunctions++];
		f->name = name;
		f->plan = NULL;
		f->valid = false;
		f->running = 0;
	}
	if (!f->valid)
		prepare_function(f, nargs);
	f->running++;
	PG_TRY();
	{
		rc = SPI_execute_plan(f->plan, values, nulls, false, count);
	}
	PG_FINALLY();
	{
		f->running--;
	}
	PG_END_TRY();
	return rc;
}

/*
 * Look up the function, check it, and keep the plan of its body.
 */
static void
prepare_function(KeptFunction *f, int nargs)
{
	Oid			oid;
	HeapTuple	tup;
	Form_pg_proc proc;
	Datum		d;
	bool		isnull;
	SPIPlanPtr	plan;
	Datum	   *settings = NULL;
	int			nsettings = 0;
	char	   *src;

	if (!callback_registered)
	{
		CacheRegisterSyscacheCallback(PROCOID, function_invalidated, (Datum) 0);
		callback_registered = true;
	}
	/* one still running (the function altered inside it) is left alone */
	if (f->plan != NULL && f->running == 0)
		SPI_freeplan(f->plan);
	f->plan = NULL;
	oid = DatumGetObjectId(DirectFunctionCall1(regprocin, CStringGetDatum(f->name)));
	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(oid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for function %u", oid);
	proc = (Form_pg_proc) GETSTRUCT(tup);
	if (proc->prolang != SQLlanguageId || proc->prosecdef ||
		proc->pronargs != nargs ||
		!heap_attisnull(tup, Anum_pg_proc_prosqlbody, NULL))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("function %s must be a LANGUAGE sql statement of %d arguments, not SECURITY DEFINER",
						f->name, nargs)));
	/* the one setting a call would make: search_path, as it is pinned */
	d = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_proconfig, &isnull);
	if (!isnull)
		deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false,
						  TYPALIGN_INT, &settings, NULL, &nsettings);
	if (nsettings != 1 ||
		strcmp(TextDatumGetCString(settings[0]),
			   "search_path=" ADK_PINNED_SEARCH_PATH) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("function %s must set search_path to %s, and nothing else",
						f->name, ADK_PINNED_SEARCH_PATH)));
	d = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_prosrc, &isnull);
	if (isnull)
		elog(ERROR, "null prosrc for function %u", oid);
	src = TextDatumGetCString(d);

	/* generic, as adk_spi_exec's plans are */
	plan = SPI_prepare_cursor(src, nargs, proc->proargtypes.values,
							  CURSOR_OPT_GENERIC_PLAN);
	ReleaseSysCache(tup);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for the body of %s: %s", f->name,
			 SPI_result_code_string(SPI_result));
	SPI_keepplan(plan);
	f->oid = oid;
	f->hash = GetSysCacheHashValue1(PROCOID, ObjectIdGetDatum(oid));
	f->plan = plan;
	f->valid = true;
}

/*
 * A pg_proc entry changed (hashvalue 0: any may have): the kept plans of
 * those functions are prepared again at their next use -- not freed here,
 * where one may be running.
 */
static void
function_invalidated(Datum arg, int cacheid, uint32 hashvalue)
{
	int			i;

	for (i = 0; i < nfunctions; i++)
		if (hashvalue == 0 || functions[i].hash == hashvalue)
			functions[i].valid = false;
}
