/*-------------------------------------------------------------------------
 *
 * spi_util.h
 *		SPI utilities of the whole extension: the one kept-plan helper,
 *		catalog look-ups by name, the subtransaction runner, the unit-of-work
 *		runner and the by-name column lookup (spi_util.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_SPI_UTIL_H
#define PG_AGENTS_SPI_UTIL_H

#include "postgres.h"

#include "executor/spi.h"

extern SPIPlanPtr SpiUtilKeptPlan(SPIPlanPtr *cache, const char *sql, int nargs, Oid *types);
extern int	SpiUtilExecPlan(SPIPlanPtr *cache, const char *sql, int nargs, Oid *types,
							Datum *vals, const char *nulls, bool read_only, long count);
extern void SpiUtilExecExpect(SPIPlanPtr plan, Datum *vals, const char *nulls,
							  bool read_only, int expected, const char *what);
extern Oid	SpiUtilLookupProcedure(const char *signature);
extern bool SpiUtilFunctionExists(const char *signature);
extern ErrorData *SpiUtilSubxact(void (*body) (void *arg), void *arg, bool keep);

typedef void (*SpiUtilUnitFn) (void *arg);
extern int	SpiUtilUnitErrcode;
extern bool SpiUtilUnit(const char *activity, SpiUtilUnitFn fn, void *arg, char *errbuf, size_t errlen);
extern void SpiUtilColumnsByName(TupleDesc td, const char *const *names, int *att, int n);

#endif							/* PG_AGENTS_SPI_UTIL_H */
