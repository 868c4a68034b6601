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
 * IDENTIFICATION
 *	  src/common/spi_plans.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/spi_plans.h"

#define MAX_PLANS 64

typedef struct KeptPlan
{
	const char *sql;
	SPIPlanPtr	plan;
} KeptPlan;

static KeptPlan plans[MAX_PLANS];
static int	nplans = 0;

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
