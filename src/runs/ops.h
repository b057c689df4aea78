/*-------------------------------------------------------------------------
 *
 * ops.h
 *		Operations (ops.c): the worker's status, pause and drain, the run log
 *		(docs/operations.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_OPS_H
#define PG_AGENTS_OPS_H

#include "util/shmem.h"

extern void PgAgentsWorkerSetState(PgAgentsWorkerState state);
extern void PgAgentsWorkerNoteError(const char *msg);
extern void PgAgentsWorkerNoteMcp(bool starting);
extern bool PgAgentsWorkerPaused(void);
extern void PgAgentsWorkerPauseSyncBegin(void);
extern bool PgAgentsWorkerClaimsStopped(void);
extern void PgAgentsWorkerDraining(bool on);

#endif							/* PG_AGENTS_OPS_H */
