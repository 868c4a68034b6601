/*-------------------------------------------------------------------------
 *
 * spent.h
 *	  What a rolled-back transaction spent on model calls: its budget
 *	  charges and its adk.model_calls rows, handed to the launcher.
 *
 * IDENTIFICATION
 *	  src/shared/spent.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_SPENT_H
#define ADK_SPENT_H

#include "postgres.h"

/* shared memory (shared/shmem.c's hooks call these) */
extern Size adk_spent_shmem_size(void);
extern void adk_spent_shmem_startup(void);

/* the ledger row just inserted (its JSON without the bodies) */
extern void adk_spent_ledger_row(const char *row_json);

/*
 * The launcher: write what rolled-back transactions of this database
 * spent, in the current transaction.  true: some of it is still to be
 * written (a budget row was locked): call again soon.
 */
extern bool adk_spent_write(void);

/* a database other than this one with something to write, or InvalidOid */
extern Oid	adk_spent_other_database(void);

/* forget what waits for database dbid (it is gone, or has no extension) */
extern void adk_spent_discard(Oid dbid);

#endif							/* ADK_SPENT_H */
