/*-------------------------------------------------------------------------
 *
 * trigger.c
 *	  adk_create_trigger / adk_drop_trigger, and the row trigger they make:
 *	  a run queued for each row change of a user table.
 *
 * adk_create_trigger(tbl, app, message_template, user_id_column,
 * session_id_column, events) makes an AFTER ... FOR EACH ROW trigger
 * calling adk._job_trigger(app, template, user column, session column).
 * For each row the trigger renders the message from the row (NEW, or OLD
 * for DELETE):
 *	{{column}}	the column's value as text ('' when NULL)
 *	{{row}}		the row as JSON
 *	{{op}}		INSERT, UPDATE or DELETE
 *	{{table}}	the table's name
 * takes the user and session ids from the named columns, and queues a job
 * (submit.c) that runs as the role that wrote the row.  The job is a row
 * written in the writing transaction: it commits, or rolls back, with the
 * write.  Firing does not need the workers: the jobs wait in the queue.
 *
 * Only the table's owner may make or drop these triggers; they are
 * ordinary triggers otherwise (pg_dump keeps them, ALTER TABLE ... DISABLE
 * TRIGGER works).  A trigger on adk._job_trigger made by hand (CREATE
 * TRIGGER, or a restore) is checked when it is created, as
 * adk_create_trigger checks its arguments: the event trigger
 * adk_job_trigger_check (sql/install/70_workers.sql) calls
 * adk._job_trigger_check for it, so a trigger that names no app, or
 * columns the table does not have, fails then rather than at every row.
 *
 * IDENTIFICATION
 *	  src/worker/trigger.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "common/ids.h"
#include "runner/runner.h"
#include "worker/worker.h"

#if PG_VERSION_NUM >= 160000
#define adk_table_ownercheck(relid) \
	object_ownercheck(RelationRelationId, (relid), GetUserId())
#else
#define adk_table_ownercheck(relid) \
	pg_class_ownercheck((relid), GetUserId())
#endif

PG_FUNCTION_INFO_V1(adk_create_trigger);
PG_FUNCTION_INFO_V1(adk_drop_trigger);
PG_FUNCTION_INFO_V1(adk_job_trigger);
PG_FUNCTION_INFO_V1(adk_job_trigger_check);

#define NUM_TRIGGER_ARGS 4

static void check_owner(Oid relid);
static void check_column(Oid relid, const char *what, const char *column);
static char *trigger_events(ArrayType *events);
static char *free_trigger_name(Oid relid, const char *app);
static char *table_name(Oid relid);
static char *render(const char *template, Relation rel, HeapTuple tuple,
					const char *op, Oid check_relid);
static char *column_text(Relation rel, HeapTuple tuple, const char *column,
						 bool *found);

/*
 * adk_create_trigger(tbl, app, message_template, user_id_column,
 *					  session_id_column, events DEFAULT '{INSERT}')
 */
Datum
adk_create_trigger(PG_FUNCTION_ARGS)
{
	Oid			relid;
	char	   *app;
	char	   *template;
	char	   *user_col;
	char	   *session_col;
	char	   *events;
	char	   *name;
	char	   *table;
	char	   *extschema = get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid));
	char		relkind;
	StringInfoData sql;
	int			i;

	for (i = 0; i < 6; i++)
	{
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("arguments of adk_create_trigger must not be null")));
	}
	relid = PG_GETARG_OID(0);
	app = adk_check_id("app name", PG_GETARG_TEXT_PP(1), ADK_MAX_ID_CHARS);
	template = text_to_cstring(PG_GETARG_TEXT_PP(2));
	user_col = text_to_cstring(PG_GETARG_TEXT_PP(3));
	session_col = text_to_cstring(PG_GETARG_TEXT_PP(4));
	events = trigger_events(PG_GETARG_ARRAYTYPE_P(5));

	adk_workers_require();
	relkind = get_rel_relkind(relid);
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", get_rel_name(relid))));
	check_owner(relid);
	adk_check_app(app);
	check_column(relid, "user id", user_col);
	check_column(relid, "session id", session_col);
	(void) render(template, NULL, NULL, NULL, relid);

	name = free_trigger_name(relid, app);
	table = table_name(relid);
	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TRIGGER %s AFTER %s ON %s FOR EACH ROW"
					 " EXECUTE FUNCTION adk._job_trigger(%s, %s, %s, %s)",
					 quote_identifier(name), events, table,
					 quote_literal_cstr(app), quote_literal_cstr(template),
					 quote_literal_cstr(user_col), quote_literal_cstr(session_col));
	SPI_connect();
	if (SPI_execute(sql.data, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not create trigger \"%s\"", name);
	if (SPI_execute(psprintf("COMMENT ON TRIGGER %s ON %s IS %s",
							 quote_identifier(name), table,
							 quote_literal_cstr(psprintf("adk_runner: queues a run of app \"%s\" per row change (%s.adk_create_trigger)",
														 app, extschema))),
					false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not comment on trigger \"%s\"", name);
	SPI_finish();
	PG_RETURN_TEXT_P(cstring_to_text(name));
}

/*
 * adk_drop_trigger(tbl, name DEFAULT NULL): drop one (or every) trigger
 * adk_create_trigger made on tbl; returns how many.
 */
Datum
adk_drop_trigger(PG_FUNCTION_ARGS)
{
	Oid			relid;
	char	   *name = PG_ARGISNULL(1) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(1));
	Oid			types[2] = {OIDOID, TEXTOID};
	Datum		args[2];
	char		nulls[2] = {' ', ' '};
	char	   *table;
	List	   *names = NIL;
	ListCell   *lc;
	uint64		i;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("table must not be null")));
	relid = PG_GETARG_OID(0);
	check_owner(relid);
	table = table_name(relid);
	args[0] = ObjectIdGetDatum(relid);
	args[1] = name ? CStringGetTextDatum(name) : (Datum) 0;
	nulls[1] = name ? ' ' : 'n';

	SPI_connect();
	if (SPI_execute_with_args("SELECT adk._job_triggers($1, $2)",
							  2, types, args, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_trigger");
	for (i = 0; i < SPI_processed; i++)
		names = lappend(names, SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1));
	if (name != NULL && names == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("table %s has no trigger \"%s\" made by adk_create_trigger", table, name)));
	foreach(lc, names)
	{
		if (SPI_execute(psprintf("DROP TRIGGER %s ON %s",
								 quote_identifier((char *) lfirst(lc)), table),
						false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "could not drop trigger \"%s\"", (char *) lfirst(lc));
	}
	SPI_finish();
	PG_RETURN_INT32(list_length(names));
}

/*
 * The row trigger: queue one run for this row change.
 */
Datum
adk_job_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Trigger    *trigger;
	Relation	rel;
	HeapTuple	tuple;
	const char *op;
	char	   *user;
	char	   *session;
	char	   *message;
	bool		found;
	char	  **targs;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("adk._job_trigger() must be called as a trigger")));
	if (!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) || !TRIGGER_FIRED_AFTER(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("adk._job_trigger() must fire AFTER, FOR EACH ROW")));
	trigger = trigdata->tg_trigger;
	if (trigger->tgnargs != NUM_TRIGGER_ARGS)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("adk._job_trigger() takes %d arguments", NUM_TRIGGER_ARGS),
				 errhint("Make the trigger with adk_create_trigger().")));
	targs = trigger->tgargs;
	rel = trigdata->tg_relation;
	if (TRIGGER_FIRED_BY_DELETE(trigdata->tg_event))
	{
		op = "DELETE";
		tuple = trigdata->tg_trigtuple;
	}
	else if (TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
	{
		op = "UPDATE";
		tuple = trigdata->tg_newtuple;
	}
	else
	{
		op = "INSERT";
		tuple = trigdata->tg_trigtuple;
	}

	user = column_text(rel, tuple, targs[2], &found);
	if (!found || user == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("user id column \"%s\" of table \"%s\" is %s", targs[2],
						RelationGetRelationName(rel), found ? "null" : "missing"),
				 errdetail("Trigger \"%s\" queues a run for each row and needs a user id.",
						   trigger->tgname)));
	session = column_text(rel, tuple, targs[3], &found);
	if (!found || session == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("session id column \"%s\" of table \"%s\" is %s", targs[3],
						RelationGetRelationName(rel), found ? "null" : "missing"),
				 errdetail("Trigger \"%s\" queues a run for each row and needs a session id.",
						   trigger->tgname)));
	adk_check_id_cstring("user id", user, strlen(user), ADK_MAX_ID_CHARS);
	adk_check_id_cstring("session id", session, strlen(session), ADK_MAX_ID_CHARS);
	message = render(targs[1], rel, tuple, op, InvalidOid);

	(void) adk_job_insert(targs[0], user, session, adk_text_content(message),
						  NULL, NULL, GetUserId(),
						  psprintf("trigger %s on %s", trigger->tgname,
								   table_name(RelationGetRelid(rel))));
	return PointerGetDatum(NULL);
}

/*
 * adk._job_trigger_check(tbl, trigger): the checks adk_create_trigger
 * makes, for a trigger of tbl on adk._job_trigger created by hand -- it
 * fires AFTER, FOR EACH ROW, with an app that exists, a template whose
 * {{column}}s and a user and a session id column that tbl has.
 */
Datum
adk_job_trigger_check(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	Oid			tgoid = PG_GETARG_OID(1);
	Relation	rel;
	char	   *tgname = NULL;
	int16		tgtype = 0;
	int			nargs = -1;
	char	  **targs = NULL;
	int			i;

	rel = relation_open(relid, AccessShareLock);
	for (i = 0; rel->trigdesc && i < rel->trigdesc->numtriggers; i++)
	{
		Trigger    *t = &rel->trigdesc->triggers[i];
		int			k;

		if (t->tgoid != tgoid)
			continue;
		tgname = pstrdup(t->tgname);
		tgtype = t->tgtype;
		nargs = t->tgnargs;
		targs = palloc(sizeof(char *) * Max(nargs, 1));
		for (k = 0; k < nargs; k++)
			targs[k] = pstrdup(t->tgargs[k]);
	}
	relation_close(rel, AccessShareLock);
	if (tgname == NULL)
		PG_RETURN_VOID();		/* dropped again meanwhile */

	if (!TRIGGER_FOR_ROW(tgtype) || !TRIGGER_FOR_AFTER(tgtype))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("trigger \"%s\" on adk._job_trigger() must fire AFTER, FOR EACH ROW", tgname),
				 errhint("Make the trigger with adk_create_trigger().")));
	if (nargs != NUM_TRIGGER_ARGS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("trigger \"%s\" passes %d arguments to adk._job_trigger(), which takes %d",
						tgname, nargs, NUM_TRIGGER_ARGS),
				 errdetail("The arguments are the app name, the message template, the user id column and the session id column."),
				 errhint("Make the trigger with adk_create_trigger().")));
	adk_check_id_cstring("app name", targs[0], strlen(targs[0]), ADK_MAX_ID_CHARS);
	adk_check_app(targs[0]);
	check_column(relid, "user id", targs[2]);
	check_column(relid, "session id", targs[3]);
	(void) render(targs[1], NULL, NULL, NULL, relid);
	PG_RETURN_VOID();
}

static void
check_owner(Oid relid)
{
	if (!adk_table_ownercheck(relid))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of table %s", get_rel_name(relid))));
}

static void
check_column(Oid relid, const char *what, const char *column)
{
	AttrNumber	att = get_attnum(relid, column);

	if (att == InvalidAttrNumber || att < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist", column,
						get_rel_name(relid)),
				 errdetail("It was given as the %s column.", what)));
}

/*
 * '{INSERT,UPDATE}' -> "INSERT OR UPDATE"
 */
static char *
trigger_events(ArrayType *events)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			i;
	bool		seen[3] = {false, false, false};
	const char *names[3] = {"INSERT", "UPDATE", "DELETE"};
	StringInfoData buf;

	deconstruct_array(events, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	for (i = 0; i < n; i++)
	{
		char	   *e;
		int			k;
		bool		known = false;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("events must not contain nulls")));
		e = TextDatumGetCString(elems[i]);
		for (k = 0; k < 3; k++)
		{
			if (pg_strcasecmp(e, names[k]) == 0)
				seen[k] = known = true;
		}
		if (!known)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid trigger event \"%s\"", e),
					 errhint("Events are INSERT, UPDATE and DELETE.")));
	}
	initStringInfo(&buf);
	for (i = 0; i < 3; i++)
	{
		if (seen[i])
			appendStringInfo(&buf, "%s%s", buf.len > 0 ? " OR " : "", names[i]);
	}
	if (buf.len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("events must name at least one of INSERT, UPDATE and DELETE")));
	return buf.data;
}

/*
 * "adk_<app>" (lower case letters, digits and _ only), with a number
 * appended if the table has a trigger of that name already.
 */
static char *
free_trigger_name(Oid relid, const char *app)
{
	StringInfoData base;
	const char *p;
	int			n;

	initStringInfo(&base);
	appendStringInfoString(&base, "adk_");
	for (p = app; *p && base.len < 40; p++)
	{
		unsigned char c = (unsigned char) *p;

		appendStringInfoChar(&base, (c < 128 && isalnum(c)) ? tolower(c) : '_');
	}
	if (!OidIsValid(get_trigger_oid(relid, base.data, true)))
		return base.data;
	for (n = 2;; n++)
	{
		char	   *name = psprintf("%s_%d", base.data, n);

		if (!OidIsValid(get_trigger_oid(relid, name, true)))
			return name;
	}
}

static char *
table_name(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

/*
 * The message for one row.  With rel NULL: only check the template
 * against the columns of check_relid.
 */
static char *
render(const char *template, Relation rel, HeapTuple tuple, const char *op,
	   Oid check_relid)
{
	StringInfoData out;
	const char *p = template;

	initStringInfo(&out);
	while (*p)
	{
		const char *open = strstr(p, "{{");
		const char *close;
		char	   *name;
		int			len;

		if (open == NULL || (close = strstr(open + 2, "}}")) == NULL)
		{
			appendStringInfoString(&out, p);
			break;
		}
		appendBinaryStringInfo(&out, p, open - p);
		/* the name, trimmed */
		p = open + 2;
		while (p < close && isspace((unsigned char) *p))
			p++;
		len = close - p;
		while (len > 0 && isspace((unsigned char) p[len - 1]))
			len--;
		name = pnstrdup(p, len);
		p = close + 2;

		if (strcmp(name, "row") == 0)
		{
			if (rel)
				appendStringInfoString(&out,
									   TextDatumGetCString(DirectFunctionCall1(row_to_json,
																			   heap_copy_tuple_as_datum(tuple, RelationGetDescr(rel)))));
		}
		else if (strcmp(name, "op") == 0)
		{
			if (rel)
				appendStringInfoString(&out, op);
		}
		else if (strcmp(name, "table") == 0)
		{
			if (rel)
				appendStringInfoString(&out, RelationGetRelationName(rel));
		}
		else if (rel == NULL)
			check_column(check_relid, "template's", name);
		else
		{
			bool		found;
			char	   *value = column_text(rel, tuple, name, &found);

			if (!found)
				appendBinaryStringInfo(&out, open, close + 2 - open);	/* as written */
			else if (value)
				appendStringInfoString(&out, value);
		}
	}
	return out.data;
}

/*
 * A column's value as text; NULL when the value is NULL.  *found: the
 * column exists (it may have been dropped since the trigger was made).
 */
static char *
column_text(Relation rel, HeapTuple tuple, const char *column, bool *found)
{
	int			att = SPI_fnumber(RelationGetDescr(rel), column);

	*found = att > 0;
	if (!*found)
		return NULL;
	return SPI_getvalue(tuple, RelationGetDescr(rel), att);
}
