/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  Small shims over PostgreSQL version differences (15, 16, 17, 18).
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

/* VARDATA_ANY and the other varlena macros left postgres.h in 16 */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

/*
 * A function that does not return: 18 marks it with pg_noreturn before the
 * declaration, where 15 to 17 had pg_attribute_noreturn() after it (gcc's
 * attribute may stand in either place).
 */
#ifndef pg_noreturn
#define pg_noreturn pg_attribute_noreturn()
#endif

/* the binary side of pg_b64_encode and pg_b64_decode: uint8 since 18 */
#if PG_VERSION_NUM >= 180000
typedef uint8 adk_b64_byte;
#else
typedef char adk_b64_byte;
#endif

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
