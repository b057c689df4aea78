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

extern void RunsWorkerSetState(PgAgentsWorkerState state);
extern void RunsWorkerNoteError(const char *msg);
extern void RunsWorkerNoteMcp(bool starting);
extern bool RunsWorkerPaused(void);
extern void RunsWorkerPauseSyncBegin(void);
extern bool RunsWorkerClaimsStopped(void);
extern void RunsWorkerDraining(bool on);

#endif							/* PG_AGENTS_OPS_H */
