/*-------------------------------------------------------------------------
 *
 * shmem.h
 *		Shared memory of pg_agents (shmem.c): its hooks, and what
 *		agent.worker_status shows of the worker, the database slots, the
 *		registration of the other parts.  The wake-up is wake.h's, the
 *		access generation access_gen.h's.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_SHMEM_H
#define PG_AGENTS_SHMEM_H

#include "datatype/timestamp.h"
#include "port/atomics.h"
#include "storage/spin.h"

extern void ShmemInitAll(void);
extern bool ShmemAvailable(void);

/*
 * A part of the segment (wake.c, access_gen.c, config_gen.c), registered
 * from _PG_init: its size, and its attach function, called at startup under
 * AddinShmemInitLock.
 */
typedef Size (*PgAgentsShmemSizeFn) (void);
typedef void (*PgAgentsShmemInitFn) (void);
extern void ShmemAddPart(PgAgentsShmemSizeFn size, PgAgentsShmemInitFn init);

/*
 * What agent.worker_status shows of the worker (docs/operations.md).
 * Written by the worker under its mutex; paused is read without it by the
 * claim path.
 */
typedef enum PgAgentsWorkerState
{
	PGA_WORKER_STOPPED = 0,
	PGA_WORKER_STARTING,
	PGA_WORKER_WAITING_EXTENSION,
	PGA_WORKER_WAITING_UPDATE,
	PGA_WORKER_RUNNING,
	PGA_WORKER_PAUSED,
	PGA_WORKER_DRAINING
} PgAgentsWorkerState;

#define PGA_WORKER_ERROR_LEN	256

typedef struct PgAgentsWorkerInfo
{
	slock_t		mutex;
	int			pid;			/* 0 when no worker runs */
	TimestampTz started_at;
	PgAgentsWorkerState state;
	int			slots_in_use;
	int			max_slots;
	int			llm_in_flight;
	int			mcp_in_flight;
	TimestampTz mcp_since;		/* start of the MCP call in flight */
	TimestampTz last_tick;
	TimestampTz last_error_at;
	char		last_error[PGA_WORKER_ERROR_LEN];
	uint64		starts;			/* worker starts since the postmaster started */
	uint64		resets;			/* crash resets of shared memory since then */
	uint32		pause_seq;		/* pause changes committed (under mutex) */
	pg_atomic_uint32 paused;	/* agent.worker_control.paused, as last synced */
} PgAgentsWorkerInfo;

extern PgAgentsWorkerInfo *ShmemWorker(void);

/*
 * The launcher (src/runs/launcher.c) starts one worker per served database; each
 * database has a slot of its own: its worker's status, its latch (src/util/wake.c)
 * and what the launcher and DROP DATABASE tell it.  A backend's slot is its
 * database's (ShmemWorker).
 */
#define PGA_MAX_DB_SLOTS	128

typedef struct PgAgentsDbSlot
{
	Oid			dboid;			/* InvalidOid: a free slot */
	bool		stop_now;		/* DROP DATABASE: exit at once, no drain */
	TimestampTz stop_at;		/* when stop_now was set */
	bool		no_extension;	/* its worker exited: the extension is not there */
	TimestampTz exited_at;		/* when its worker last exited */
	void	   *latch;			/* Latch * of its worker, NULL when none runs */
	PgAgentsWorkerInfo worker;
} PgAgentsDbSlot;

extern PgAgentsDbSlot *ShmemDbSlotFor(Oid dboid, bool create);
extern PgAgentsDbSlot *ShmemDbSlotAt(int i);
extern void ShmemDbSlotFree(PgAgentsDbSlot *slot);
extern int	ShmemClusterRunsElsewhere(void);
extern int *ShmemLauncherPid(void);

#endif							/* PG_AGENTS_SHMEM_H */
