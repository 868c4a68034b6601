/*-------------------------------------------------------------------------
 *
 * owner.h
 *	  Running store writes as the owner of schema adk.
 *
 * IDENTIFICATION
 *	  src/common/owner.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_OWNER_H
#define ADK_OWNER_H

typedef struct AdkOwnerSave
{
	Oid			userid;
	int			sec_context;
	int			nestlevel;		/* GUC nest level of the pinned search_path */
} AdkOwnerSave;

/* search_path while the extension runs SQL with raised privileges */
#define ADK_PINNED_SEARCH_PATH "pg_catalog, pg_temp"


extern Oid	adk_schema_owner(void);
extern void adk_become_owner(AdkOwnerSave *save);
extern void adk_restore_user(AdkOwnerSave *save);
extern void adk_owner_spi_begin(AdkOwnerSave *save);
extern void adk_owner_spi_end(AdkOwnerSave *save);
extern int	adk_pin_search_path(void);
extern void adk_unpin_search_path(int level);

#endif							/* ADK_OWNER_H */
