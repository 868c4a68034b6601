/*-------------------------------------------------------------------------
 *
 * owner.c
 *	  Switch to the owner of schema adk around writes to the store.
 *
 * Roles granted adk_user may read the session tables but not write them
 * directly; the store's C entry points write as the owner of schema adk
 * (the role that created the extension), in a security-restricted
 * operation, the way pg_cron and pg_net touch their own tables.  An ERROR
 * inside restores the previous user as part of (sub)transaction abort.
 *
 * IDENTIFICATION
 *	  src/store/owner.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "miscadmin.h"
#include "utils/syscache.h"

#include "store/owner.h"

void
adk_become_owner(AdkOwnerSave *save)
{
	Oid			nspid = get_namespace_oid("adk", false);
	HeapTuple	tup;
	Oid			owner;

	tup = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(nspid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for schema %u", nspid);
	owner = ((Form_pg_namespace) GETSTRUCT(tup))->nspowner;
	ReleaseSysCache(tup);

	GetUserIdAndSecContext(&save->userid, &save->sec_context);
	SetUserIdAndSecContext(owner, save->sec_context |
						   SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
}

void
adk_restore_user(AdkOwnerSave *save)
{
	SetUserIdAndSecContext(save->userid, save->sec_context);
}
