/*-------------------------------------------------------------------------
 *
 * ids.h
 *	  Validation of ADK identities (app names, user ids, session ids,
 *	  event ids).
 *
 * IDENTIFICATION
 *	  src/common/ids.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_IDS_H
#define ADK_IDS_H

#include "fmgr.h"

/* ADK's key width: sessions/events ids are varchar(191). */
#define ADK_MAX_ID_CHARS		191
/* events.invocation_id is varchar(255). */
#define ADK_MAX_INVOCATION_ID_CHARS	255

extern char *adk_check_id(const char *what, text *value, int max_chars);
extern void adk_check_id_cstring(const char *what, const char *value,
								 int len, int max_chars);
extern bool adk_id_is_printable(const char *value, int len);

/* Writes a random (version 4) UUID, 36 characters plus NUL, into buf. */
extern void adk_random_uuid(char *buf);

#endif							/* ADK_IDS_H */
