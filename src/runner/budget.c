/*-------------------------------------------------------------------------
 *
 * budget.c
 *	  Token budgets (README "Budgets and costs"): every model
 *	  call of a run is taken from, then charged to, the budgets of
 *	  adk.budgets that cover its app, user id and role.
 *
 * adk._budget_take (sql/install/85_tenancy.sql) locks each budget's usage
 * row for the current period (SELECT ... FOR UPDATE, in budget id order,
 * so two takers never deadlock), refuses the call when a budget is spent
 * and counts it otherwise; the charge after the call updates the same
 * rows in the same transaction, so the lock is held from the check to the
 * charge and no other run can pass a check on the same remaining budget
 * in between.
 *
 * Most apps have no budget: a kept plan first looks whether any budget
 * covers the call (the same rows adk._budget_take would lock, read as the
 * same role) and, when none does, neither function is called -- nothing
 * was taken, so nothing is charged either (taken_at = NOT_TAKEN).  A
 * budget defined while the call is in flight counts from the next call
 * on, as it would had it committed a moment later.
 *
 * IDENTIFICATION
 *	  src/runner/budget.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "common/jsonb_util.h"
#include "common/spi_plans.h"
#include "runner/budget.h"
#include "common/owner.h"

/* taken_at of a call no budget covered: adk_budget_charge_to does nothing */
#define NOT_TAKEN DT_NOBEGIN

/*
 * whether a budget with a limit covers the call of user $2 in app $1 as
 * role $3 (adk._budget_take takes nothing else): every model call runs it,
 * so adk_spi_call runs the function's body (88_turn_statements.sql,
 * docs/internals/statements.md)
 */
#define ANY_BUDGET_FUNCTION "adk._budget_any"

char *
adk_budget_try(const char *app, const char *user, TimestampTz *taken_at)
{
	Oid			types[3] = {TEXTOID, TEXTOID, NAMEOID};
	Datum		args[3];
	NameData	role;
	AdkOwnerSave save;
	char	   *refused = NULL;
	char	   *v;
	bool		isnull;
	MemoryContext caller = CurrentMemoryContext;

	namestrcpy(&role, GetUserNameFromId(GetUserId(), false));
	args[0] = CStringGetTextDatum(app);
	args[1] = CStringGetTextDatum(user);
	args[2] = NameGetDatum(&role);
	*taken_at = GetCurrentTimestamp();
	adk_owner_spi_begin(&save);
	if (adk_spi_call(ANY_BUDGET_FUNCTION, 3, args, NULL, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not read the token budgets");
	if (!DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
									1, &isnull)))
	{
		*taken_at = NOT_TAKEN;
		adk_owner_spi_end(&save);
		return NULL;
	}
	if (SPI_execute_with_args("SELECT adk._budget_take($1, $2, $3)", 3, types, args, NULL,
							  false, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not check the token budgets");
	v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	if (v != NULL)
		refused = MemoryContextStrdup(caller, v);
	adk_owner_spi_end(&save);
	return refused;
}

void
adk_budget_charge_to(const char *app, const char *user, TimestampTz taken_at,
					 int64 tokens)
{
	Oid			types[5] = {TEXTOID, TEXTOID, NAMEOID, TIMESTAMPTZOID, INT8OID};
	Datum		args[5];
	NameData	role;
	AdkOwnerSave save;

	if (tokens <= 0 || taken_at == NOT_TAKEN)
		return;
	namestrcpy(&role, GetUserNameFromId(GetUserId(), false));
	args[0] = CStringGetTextDatum(app);
	args[1] = CStringGetTextDatum(user);
	args[2] = NameGetDatum(&role);
	args[3] = TimestampTzGetDatum(taken_at);
	args[4] = Int64GetDatum(tokens);
	adk_owner_spi_begin(&save);
	if (SPI_execute_with_args("SELECT adk._budget_charge($1, $2, $3, $4, $5)", 5, types, args,
							  NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not charge the token budgets");
	adk_owner_spi_end(&save);
}

/*
 * Input + output tokens of a model response (usage_metadata), reasoning
 * included (docs/models.md, "Thinking"), 0 when it says nothing.
 */
int64
adk_response_tokens(Jsonb *response)
{
	static const char *const keys[] = {"prompt_token_count", "candidates_token_count",
	"thoughts_token_count"};
	JsonbValue *usage = adk_jsonb_get(&response->root, "usage_metadata");
	int64		tokens = 0;
	size_t		i;

	if (usage == NULL || usage->type != jbvBinary)
		return 0;
	for (i = 0; i < lengthof(keys); i++)
	{
		JsonbValue *v = adk_jsonb_get(usage->val.binary.data, keys[i]);

		if (v != NULL && v->type == jbvNumeric)
			tokens += DatumGetInt64(DirectFunctionCall1(numeric_int8,
														NumericGetDatum(v->val.numeric)));
	}
	return tokens;
}

bool
adk_budget_take(AdkRun *run, const char *author, const char *branch,
				TimestampTz *taken_at)
{
	char	   *refused = adk_budget_try(run->app, run->user, taken_at);

	if (refused == NULL)
		return true;
	adk_emit_error(run, author, branch, "BUDGET_EXCEEDED", refused);
	return false;
}

void
adk_budget_charge(AdkRun *run, TimestampTz taken_at, int64 tokens)
{
	adk_budget_charge_to(run->app, run->user, taken_at, tokens);
}
