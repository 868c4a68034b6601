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

#include "access/tableam.h"
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

/*
 * ExecInsertIndexTuples without ON CONFLICT, and what table_tuple_update
 * says about index entries (PostgreSQL 16 can ask for summarizing indexes
 * only).
 */
#if PG_VERSION_NUM >= 160000
#define adk_exec_insert_index_tuples(rri, slot, estate, update, summarizing) \
	ExecInsertIndexTuples((rri), (slot), (estate), (update), false, NULL, NIL, \
						  (summarizing))
typedef TU_UpdateIndexes AdkUpdateIndexes;
#define adk_update_needs_indexes(u) ((u) != TU_None)
#define adk_update_summarizing_only(u) ((u) == TU_Summarizing)
#else
#define adk_exec_insert_index_tuples(rri, slot, estate, update, summarizing) \
	ExecInsertIndexTuples((rri), (slot), (estate), (update), false, NULL, NIL)
typedef bool AdkUpdateIndexes;
#define adk_update_needs_indexes(u) (u)
#define adk_update_summarizing_only(u) false
#endif

#endif							/* ADK_COMPAT_H */
