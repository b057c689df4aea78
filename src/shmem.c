/*-------------------------------------------------------------------------
 *
 * shmem.c
 *		Shared memory of pg_agents: the hooks that request and attach it, and
 *		what agent.worker_status shows of the worker.
 *
 * The segment holds four parts: the worker's status (PgAgentsWorkerInfo,
 * here, docs/operations.md), the worker's wake-up (src/wake.c), the access
 * generation (src/access_gen.c) and the configuration generation
 * (src/config_gen.c); each part sizes and attaches its own struct.  The counters of worker starts survive a crash reset of shared
 * memory (carried over by the postmaster, see ShmemCarry).
 *
 * Shared memory exists only when the library is in shared_preload_libraries;
 * otherwise every function of the four parts is a harmless no-op (runs
 * still reach external executors through NOTIFY agent_runs; readable sets
 * are kept for one snapshot only).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"

#include "access_gen.h"
#include "config_gen.h"
#include "shmem.h"
#include "wake.h"

typedef struct PgAgentsShared
{
	/* operations: the worker's status (src/ops.c) */
	PgAgentsWorkerInfo worker;
} PgAgentsShared;

static PgAgentsShared *pg_agents_shared = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/*
 * Operations: the postmaster keeps the worker's start counters across a
 * crash reset of shared memory (a killed child makes the postmaster
 * re-create it): copied out at shmem_exit, before the segment goes, and back
 * in at the next startup.
 */
static uint64 carried_starts = 0;
static uint64 carried_resets = 0;
static bool carried = false;

/*
 * The postmaster, at shmem_exit: copies the worker's start counters out of the
 * segment about to go.
 */
static void
ShmemCarry(int code, Datum arg)
{
	if (pg_agents_shared == NULL)
		return;
	SpinLockAcquire(&pg_agents_shared->worker.mutex);
	carried_starts = pg_agents_shared->worker.starts;
	carried_resets = pg_agents_shared->worker.resets + 1;
	SpinLockRelease(&pg_agents_shared->worker.mutex);
	carried = true;
	pg_agents_shared = NULL;
}

/* shmem_request_hook: the space of the four parts. */
static void
PgAgentsShmemRequest(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(add_size(MAXALIGN(sizeof(PgAgentsShared)),
									add_size(WakeShmemSize(),
											 add_size(AccessGenShmemSize(), ConfigGenShmemSize()))));
}

/* shmem_startup_hook: creates or attaches the four parts. */
static void
PgAgentsShmemStartup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	pg_agents_shared = ShmemInitStruct("pg_agents", sizeof(PgAgentsShared), &found);
	if (!found)
	{
		memset(&pg_agents_shared->worker, 0, sizeof(PgAgentsWorkerInfo));
		SpinLockInit(&pg_agents_shared->worker.mutex);
		pg_atomic_init_u32(&pg_agents_shared->worker.paused, 0);
		if (carried)
		{
			pg_agents_shared->worker.starts = carried_starts;
			pg_agents_shared->worker.resets = carried_resets;
		}
	}
	WakeShmemInit();
	AccessGenShmemInit();
	ConfigGenShmemInit();
	LWLockRelease(AddinShmemInitLock);
	/* in the postmaster: carry the counters over a crash reset (operations) */
	if (!IsUnderPostmaster)
		on_shmem_exit(ShmemCarry, (Datum) 0);
}

/* The worker's status (operations); NULL when the library was not preloaded. */
PgAgentsWorkerInfo *
PgAgentsWorkerShmem(void)
{
	return pg_agents_shared ? &pg_agents_shared->worker : NULL;
}

/* Called from _PG_init: hooks in only while shared_preload_libraries loads. */
void
PgAgentsInitShmem(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = PgAgentsShmemRequest;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = PgAgentsShmemStartup;
}

/* Whether the shared state exists (the library was preloaded). */
bool
PgAgentsShmemAvailable(void)
{
	return pg_agents_shared != NULL;
}
