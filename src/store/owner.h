/*-------------------------------------------------------------------------
 *
 * owner.h
 *	  Running store writes as the owner of schema adk.
 *
 * IDENTIFICATION
 *	  src/store/owner.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_OWNER_H
#define ADK_OWNER_H

typedef struct AdkOwnerSave
{
	Oid			userid;
	int			sec_context;
} AdkOwnerSave;

extern void adk_become_owner(AdkOwnerSave *save);
extern void adk_restore_user(AdkOwnerSave *save);

#endif							/* ADK_OWNER_H */
