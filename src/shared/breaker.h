/*-------------------------------------------------------------------------
 *
 * breaker.h
 *	  The models' circuit breakers, in shared memory: a model that failed
 *	  adk.breaker_failures times within adk.breaker_window is skipped for
 *	  adk.breaker_cooldown by every backend and worker.
 *
 * IDENTIFICATION
 *	  src/shared/breaker.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_BREAKER_H
#define ADK_BREAKER_H

/* GUCs */
extern int	adk_breaker_failures;
extern int	adk_breaker_window_ms;
extern int	adk_breaker_cooldown_ms;

extern Size adk_breaker_shmem_size(void);
extern void adk_breaker_shmem_startup(void);
extern void adk_breaker_init_gucs(void);

extern bool adk_breaker_is_open(const char *model);
extern void adk_breaker_failure(const char *model);
extern void adk_breaker_success(const char *model);

#endif							/* ADK_BREAKER_H */
