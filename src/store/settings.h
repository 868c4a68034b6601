/*-------------------------------------------------------------------------
 *
 * settings.h
 *	  The store's settings (settings.c).
 *
 * IDENTIFICATION
 *	  src/store/settings.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_STORE_SETTINGS_H
#define ADK_STORE_SETTINGS_H

extern void adk_store_init(void);

#endif							/* ADK_STORE_SETTINGS_H */
