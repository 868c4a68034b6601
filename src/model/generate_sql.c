/*-------------------------------------------------------------------------
 *
 * generate_sql.c
 *	  adk_generate() and adk_generate_stream(): one model call from SQL
 *	  (generate.c makes it).
 *
 * The arguments are checked here (a model name, contents and tools as
 * JSON arrays, config as an object); a streamed call's partial responses
 * are returned as rows, then the final one.
 *
 * IDENTIFICATION
 *	  src/model/generate_sql.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#define json_object pg_json_object_sqlfn
#include "utils/builtins.h"
#undef json_object
#include "fmgr.h"
#include "funcapi.h"
#include "utils/jsonb.h"
#include "utils/tuplestore.h"

#include "common/jsonb_util.h"
#include "model/generate.h"

PG_FUNCTION_INFO_V1(adk_generate);
PG_FUNCTION_INFO_V1(adk_generate_stream);

static Jsonb *
require_array(FunctionCallInfo fcinfo, int argno, const char *what)
{
	Jsonb	   *jb;

	if (PG_ARGISNULL(argno))
		return NULL;
	jb = PG_GETARG_JSONB_P(argno);
	if (!JB_ROOT_IS_ARRAY(jb) || JB_ROOT_IS_SCALAR(jb))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a JSON array", what)));
	return jb;
}

static void
check_args(FunctionCallInfo fcinfo, char **model, Jsonb **contents,
		   Jsonb **tools, Jsonb **config)
{
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("model must not be null")));
	*model = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("contents must not be null")));
	*contents = require_array(fcinfo, 1, "contents");
	*tools = require_array(fcinfo, 2, "tools");
	*config = PG_ARGISNULL(3) ? NULL : PG_GETARG_JSONB_P(3);
	if (*config && !adk_jsonb_is_object(&(*config)->root))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("config must be a JSON object")));
}

/*
 * adk_generate(model, contents, tools, config) RETURNS jsonb
 */
Datum
adk_generate(PG_FUNCTION_ARGS)
{
	char	   *model;
	Jsonb	   *contents;
	Jsonb	   *tools;
	Jsonb	   *config;

	check_args(fcinfo, &model, &contents, &tools, &config);
	PG_RETURN_JSONB_P(adk_model_call(model, contents, tools, config, false,
									 NULL, NULL));
}

static void
put_row(Jsonb *row, void *arg)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) arg;
	Datum		value = JsonbPGetDatum(row);
	bool		isnull = false;

	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &value, &isnull);
}

/*
 * adk_generate_stream(model, contents, tools, config) RETURNS SETOF jsonb:
 * the partial responses, then the final one.
 */
Datum
adk_generate_stream(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *model;
	Jsonb	   *contents;
	Jsonb	   *tools;
	Jsonb	   *config;
	Jsonb	   *final;

	check_args(fcinfo, &model, &contents, &tools, &config);
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC | MAT_SRF_BLESS);
	final = adk_model_call(model, contents, tools, config, true, put_row, rsinfo);
	put_row(final, rsinfo);
	return (Datum) 0;
}
