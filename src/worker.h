/*-------------------------------------------------------------------------
 *
 * worker.h
 *		The background worker (worker.c): its registration at load and whether
 *		it is ready to run units.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_WORKER_H
#define PG_AGENTS_WORKER_H

extern void PgAgentsRegisterWorker(void);
extern bool PgAgentsWorkerReady(void);

#endif							/* PG_AGENTS_WORKER_H */
