/*-------------------------------------------------------------------------
 *
 * settings.h
 *	  The model layer's settings (settings.c).
 *
 * IDENTIFICATION
 *	  src/model/settings.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_MODEL_SETTINGS_H
#define ADK_MODEL_SETTINGS_H

extern void adk_model_init(void);

#endif							/* ADK_MODEL_SETTINGS_H */
