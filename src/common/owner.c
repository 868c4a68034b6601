/*-------------------------------------------------------------------------
 *
 * owner.c
 *	  Switch to the owner of schema adk around writes to the store.
 *
 * Roles granted adk_user may read the session tables but not write them
 * directly; the store's C entry points write as the owner of schema adk
 * (the role that created the extension), in a security-restricted
 * operation, the way pg_cron and pg_net touch their own tables.
 *
 * While the owner's privileges are in effect, search_path is pinned to
 * "pg_catalog, pg_temp" (in a GUC nest level of its own, as a SECURITY
 * DEFINER function with SET search_path does): nothing the extension runs
 * as the owner can resolve a name, operator or function to an object of
 * the caller's schemas.  adk_restore_user pops that level; an ERROR
 * inside restores both the previous user and search_path as part of
 * (sub)transaction abort (AtEOXact_GUC / AtEOSubXact_GUC).  A switch must
 * not span a transaction boundary: a commit would pop the level.
 *
 * IDENTIFICATION
 *	  src/common/owner.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/syscache.h"

#include "common/owner.h"
#include "common/schema_version.h"

/*
 * The owner of schema adk (the role that created the extension).
 */
Oid
adk_schema_owner(void)
{
	Oid			nspid = get_namespace_oid("adk", false);
	HeapTuple	tup;
	Oid			owner;

	tup = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(nspid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for schema %u", nspid);
	owner = ((Form_pg_namespace) GETSTRUCT(tup))->nspowner;
	ReleaseSysCache(tup);
	return owner;
}

void
adk_become_owner(AdkOwnerSave *save)
{
	Oid			owner;

	/* the store is read and written as its schema is: no other version */
	adk_require_schema();
	owner = adk_schema_owner();

	GetUserIdAndSecContext(&save->userid, &save->sec_context);
	save->nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", ADK_PINNED_SEARCH_PATH,
							 PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	SetUserIdAndSecContext(owner, save->sec_context |
						   SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
}

void
adk_restore_user(AdkOwnerSave *save)
{
	SetUserIdAndSecContext(save->userid, save->sec_context);
	AtEOXact_GUC(true, save->nestlevel);
}

/*
 * The bracket around the extension's own SQL: the owner switch and an SPI
 * connection, in this one place.  What runs between adk_owner_spi_begin
 * and adk_owner_spi_end runs as the owner of schema adk with search_path
 * pinned; an ERROR in between unwinds both (SPI at (sub)transaction abort,
 * the user and search_path as above).
 */
void
adk_owner_spi_begin(AdkOwnerSave *save)
{
	adk_become_owner(save);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
}

void
adk_owner_spi_end(AdkOwnerSave *save)
{
	SPI_finish();
	adk_restore_user(save);
}

/*
 * Pin search_path for code that runs with raised privileges without an
 * owner switch (a background worker's own statements, C triggers); undo
 * with adk_unpin_search_path(level).  Returns the nest level.
 */
int
adk_pin_search_path(void)
{
	int			level = NewGUCNestLevel();

	(void) set_config_option("search_path", ADK_PINNED_SEARCH_PATH,
							 PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	return level;
}

void
adk_unpin_search_path(int level)
{
	AtEOXact_GUC(true, level);
}
