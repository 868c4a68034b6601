/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  Small shims over PostgreSQL version differences (15, 16, 17).
 *
 * IDENTIFICATION
 *	  src/common/compat.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_COMPAT_H
#define ADK_COMPAT_H

#include "catalog/pg_class.h"
#include "catalog/pg_proc.h"
#include "miscadmin.h"
#include "utils/acl.h"

#if PG_VERSION_NUM >= 160000
#define adk_proc_aclcheck(fn) \
	object_aclcheck(ProcedureRelationId, (fn), GetUserId(), ACL_EXECUTE)
#else
#define adk_proc_aclcheck(fn) \
	pg_proc_aclcheck((fn), GetUserId(), ACL_EXECUTE)
#endif

#if PG_VERSION_NUM >= 160000
#define adk_class_ownercheck(relid, role) \
	object_ownercheck(RelationRelationId, (relid), (role))
#else
#define adk_class_ownercheck(relid, role) pg_class_ownercheck((relid), (role))
#endif

#endif							/* ADK_COMPAT_H */
