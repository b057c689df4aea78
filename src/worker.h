/*-------------------------------------------------------------------------
 *
 * worker.h
 *		The background worker (worker.c): its registration at load, whether
 *		it is ready to run units, and the one unit-of-work runner (a short
 *		transaction around a function) with the by-name column lookup its
 *		units read their results with.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_WORKER_H
#define PG_AGENTS_WORKER_H

#include "access/tupdesc.h"

extern void PgAgentsRegisterWorker(void);
extern bool PgAgentsWorkerReady(void);

typedef void (*WorkerUnitFn) (void *arg);
extern bool WorkerUnit(const char *activity, WorkerUnitFn fn, void *arg, char *errbuf, size_t errlen);
extern void WorkerColumnsByName(TupleDesc td, const char *const *names, int *att, int n);

#endif							/* PG_AGENTS_WORKER_H */
