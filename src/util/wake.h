/*-------------------------------------------------------------------------
 *
 * wake.h
 *		The worker's wake-up (wake.c): its latch, set when a transaction that
 *		queued runs commits.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_WAKE_H
#define PG_AGENTS_WAKE_H

#include "storage/latch.h"

extern void WakeSetWorkerLatch(Latch *latch);
extern void WakeRequest(void);

/* its part of the shared memory, registered from _PG_init (shmem.h) */
extern void WakeShmemRegister(void);

#endif							/* PG_AGENTS_WAKE_H */
