/*-------------------------------------------------------------------------
 *
 * addr.h
 *	  Which network addresses an endpoint may not reach: link-local ones,
 *	  where the cloud metadata services listen.
 *
 * Written without PostgreSQL, so the unit tests link it on its own.
 *
 * IDENTIFICATION
 *	  src/model/addr.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_ADDR_H
#define ADK_ADDR_H

#include <stdbool.h>
#include <sys/socket.h>

extern bool adk_addr_is_link_local(const struct sockaddr *sa);

#endif							/* ADK_ADDR_H */
