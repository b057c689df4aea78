/*-------------------------------------------------------------------------
 *
 * shmem.c
 *		Shared memory of pg_agents: the hooks that request and attach it, and
 *		what agent.worker_status shows of the worker.
 *
 * The segment holds the worker's status (PgAgentsWorkerInfo, here,
 * docs/operations.md) and the parts other files register from _PG_init
 * (ShmemAddPart): the worker's wake-up (src/util/wake.c), the access
 * generation (src/access/access_gen.c) and the configuration generation
 * (src/util/config_gen.c); each part sizes and attaches its own struct, and
 * shmem.c calls none of them by name (they call it: the database slots).
 * The counters of worker starts survive a crash reset of shared memory
 * (carried over by the postmaster, see ShmemCarry).
 *
 * Shared memory exists only when the library is in shared_preload_libraries;
 * otherwise every function of the parts is a harmless no-op (runs
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

#include "shmem.h"

typedef struct PgAgentsShared
{
	slock_t		slots_lock;		/* taking or freeing a slot (dboid) */
	int			launcher_pid;	/* 0 when the launcher does not run */
	/* operations: one slot per served database (src/runs/ops.c, src/runs/launcher.c) */
	PgAgentsDbSlot slots[PGA_MAX_DB_SLOTS];
} PgAgentsShared;

static PgAgentsShared *pg_agents_shared = NULL;

/* the parts registered (ShmemAddPart), in the order of registration */
#define PGA_MAX_SHMEM_PARTS	8
typedef struct ShmemPart
{
	PgAgentsShmemSizeFn size;
	PgAgentsShmemInitFn init;
} ShmemPart;
static ShmemPart shmem_parts[PGA_MAX_SHMEM_PARTS];
static int	shmem_nparts = 0;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/*
 * Operations: the postmaster keeps the worker's start counters across a
 * crash reset of shared memory (a killed child makes the postmaster
 * re-create it): copied out at shmem_exit, before the segment goes, and back
 * in at the next startup.
 */
typedef struct CarriedCounters
{
	Oid			dboid;
	uint64		starts;
	uint64		resets;
} CarriedCounters;
static CarriedCounters carried_counters[PGA_MAX_DB_SLOTS];
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
	for (int i = 0; i < PGA_MAX_DB_SLOTS; i++)
	{
		PgAgentsDbSlot *slot = &pg_agents_shared->slots[i];

		SpinLockAcquire(&slot->worker.mutex);
		carried_counters[i].dboid = slot->dboid;
		carried_counters[i].starts = slot->worker.starts;
		carried_counters[i].resets = slot->worker.resets + 1;
		SpinLockRelease(&slot->worker.mutex);
	}
	carried = true;
	pg_agents_shared = NULL;
}

/*
 * A part of the segment, registered from _PG_init: its size (asked for by
 * the request hook) and its attach function (called by the startup hook,
 * under AddinShmemInitLock, after the worker's status), as PostgreSQL's own
 * hooks take them.
 */
void
ShmemAddPart(PgAgentsShmemSizeFn size, PgAgentsShmemInitFn init)
{
	if (shmem_nparts >= PGA_MAX_SHMEM_PARTS)
		elog(ERROR, "too many parts of the pg_agents shared memory");
	shmem_parts[shmem_nparts].size = size;
	shmem_parts[shmem_nparts].init = init;
	shmem_nparts++;
}

/* shmem_request_hook: the space of the worker's status and of the parts. */
static void
PgAgentsShmemRequest(void)
{
	Size		size = MAXALIGN(sizeof(PgAgentsShared));

	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	for (int i = 0; i < shmem_nparts; i++)
		size = add_size(size, shmem_parts[i].size());
	RequestAddinShmemSpace(size);
}

/* shmem_startup_hook: creates or attaches the worker's status and the parts. */
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
		memset(pg_agents_shared, 0, sizeof(PgAgentsShared));
		SpinLockInit(&pg_agents_shared->slots_lock);
		for (int i = 0; i < PGA_MAX_DB_SLOTS; i++)
		{
			PgAgentsDbSlot *slot = &pg_agents_shared->slots[i];

			SpinLockInit(&slot->worker.mutex);
			pg_atomic_init_u32(&slot->worker.paused, 0);
			if (carried && OidIsValid(carried_counters[i].dboid))
			{
				slot->dboid = carried_counters[i].dboid;
				slot->worker.starts = carried_counters[i].starts;
				slot->worker.resets = carried_counters[i].resets;
			}
		}
	}
	for (int i = 0; i < shmem_nparts; i++)
		shmem_parts[i].init();
	LWLockRelease(AddinShmemInitLock);
	/* in the postmaster: carry the counters over a crash reset (operations) */
	if (!IsUnderPostmaster)
		on_shmem_exit(ShmemCarry, (Datum) 0);
}

/*
 * The slot of a database: found, or taken when create is set; NULL when the
 * library was not preloaded or every slot is taken (then that database's
 * worker has no status and is not started: the launcher says so in the log).
 */
PgAgentsDbSlot *
ShmemDbSlotFor(Oid dboid, bool create)
{
	PgAgentsDbSlot *found = NULL;
	PgAgentsDbSlot *free_slot = NULL;

	if (pg_agents_shared == NULL || !OidIsValid(dboid))
		return NULL;
	SpinLockAcquire(&pg_agents_shared->slots_lock);
	for (int i = 0; i < PGA_MAX_DB_SLOTS; i++)
	{
		PgAgentsDbSlot *slot = &pg_agents_shared->slots[i];

		if (slot->dboid == dboid)
		{
			found = slot;
			break;
		}
		if (free_slot == NULL && !OidIsValid(slot->dboid))
			free_slot = slot;
	}
	if (found == NULL && create && free_slot != NULL)
	{
		free_slot->dboid = dboid;
		free_slot->stop_now = false;
		free_slot->stop_at = 0;
		free_slot->no_extension = false;
		free_slot->exited_at = 0;
		free_slot->latch = NULL;
		found = free_slot;
	}
	SpinLockRelease(&pg_agents_shared->slots_lock);
	return found;
}

/* the i-th slot (the launcher's scan), NULL without shared memory */
PgAgentsDbSlot *
ShmemDbSlotAt(int i)
{
	if (pg_agents_shared == NULL || i < 0 || i >= PGA_MAX_DB_SLOTS)
		return NULL;
	return &pg_agents_shared->slots[i];
}

/* the launcher frees the slot of a database that is gone (its worker stopped) */
void
ShmemDbSlotFree(PgAgentsDbSlot *slot)
{
	SpinLockAcquire(&pg_agents_shared->slots_lock);
	slot->dboid = InvalidOid;
	slot->stop_now = false;
	slot->no_extension = false;
	slot->latch = NULL;
	memset(&slot->worker, 0, offsetof(PgAgentsWorkerInfo, paused));
	SpinLockInit(&slot->worker.mutex);
	pg_atomic_write_u32(&slot->worker.paused, 0);
	SpinLockRelease(&pg_agents_shared->slots_lock);
}

/*
 * Runs held by the workers of the other databases, as they last published
 * them (every pass): pg_agents.max_cluster_runs caps the sum.
 */
int
ShmemClusterRunsElsewhere(void)
{
	int			n = 0;

	if (pg_agents_shared == NULL)
		return 0;
	for (int i = 0; i < PGA_MAX_DB_SLOTS; i++)
	{
		PgAgentsDbSlot *slot = &pg_agents_shared->slots[i];

		if (slot->dboid == MyDatabaseId || !OidIsValid(slot->dboid))
			continue;
		SpinLockAcquire(&slot->worker.mutex);
		if (slot->worker.pid != 0)
			n += slot->worker.slots_in_use;
		SpinLockRelease(&slot->worker.mutex);
	}
	return n;
}

/* where the launcher publishes its pid; NULL without shared memory */
int *
ShmemLauncherPid(void)
{
	return pg_agents_shared ? &pg_agents_shared->launcher_pid : NULL;
}

/*
 * The status of this database's worker (operations); NULL when the library
 * was not preloaded (or no slot is free).
 */
PgAgentsWorkerInfo *
ShmemWorker(void)
{
	static PgAgentsDbSlot *mine = NULL;

	/* (a slot is freed only once its database is gone) */
	if (mine == NULL || mine->dboid != MyDatabaseId)
		mine = ShmemDbSlotFor(MyDatabaseId, true);
	return mine ? &mine->worker : NULL;
}

/* Called from _PG_init: hooks in only while shared_preload_libraries loads. */
void
ShmemInitAll(void)
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
ShmemAvailable(void)
{
	return pg_agents_shared != NULL;
}
