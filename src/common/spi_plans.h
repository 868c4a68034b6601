/*-------------------------------------------------------------------------
 *
 * spi_plans.h
 *	  Running fixed SQL through SPI with plans kept for the backend.
 *
 * IDENTIFICATION
 *	  src/common/spi_plans.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef ADK_SPI_PLANS_H
#define ADK_SPI_PLANS_H

#include "executor/spi.h"

extern int	adk_spi_exec(const char *sql, int nargs, Oid *argtypes,
						 Datum *values, const char *nulls, long count);
extern int	adk_spi_call(const char *name, int nargs, Datum *values,
						 const char *nulls, long count);

#endif							/* ADK_SPI_PLANS_H */
