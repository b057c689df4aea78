/*-------------------------------------------------------------------------
 *
 * shmem.c
 *		Shared memory of pg_agents: the worker's wake-up latch.
 *
 * The worker publishes its latch with PgAgentsSetWorkerLatch(MyLatch) when it
 * starts (and NULL when it exits).  A backend that queues runs calls
 * PgAgentsRequestWake(); at commit an XactCallback sets the worker's latch,
 * once per transaction, so the worker claims the new runs without polling.
 * A rolled-back transaction wakes nobody.
 *
 * Shared memory exists only when the library is in shared_preload_libraries;
 * otherwise every function here is a harmless no-op (runs still reach
 * external executors through NOTIFY agent_runs).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"

#include "pg_agents.h"

PG_FUNCTION_INFO_V1(pg_agents_request_wake);
PG_FUNCTION_INFO_V1(pg_agents_wake_count);

typedef struct PgAgentsShared
{
	slock_t		mutex;
	Latch	   *worker_latch;	/* NULL when no worker runs */
	pg_atomic_uint64 wakeups;	/* commits that woke (or tried to wake) it */
} PgAgentsShared;

static PgAgentsShared *pg_agents_shared = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static bool wake_requested = false;
static bool xact_callback_registered = false;

static void
PgAgentsShmemRequest(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(PgAgentsShared)));
}

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
		SpinLockInit(&pg_agents_shared->mutex);
		pg_agents_shared->worker_latch = NULL;
		pg_atomic_init_u64(&pg_agents_shared->wakeups, 0);
	}
	LWLockRelease(AddinShmemInitLock);
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

/*
 * The worker publishes its latch (MyLatch) here, or NULL when it stops.
 * No-op when the library was not preloaded.
 */
void
PgAgentsSetWorkerLatch(Latch *latch)
{
	if (pg_agents_shared == NULL)
		return;
	SpinLockAcquire(&pg_agents_shared->mutex);
	pg_agents_shared->worker_latch = latch;
	SpinLockRelease(&pg_agents_shared->mutex);
}

static void
PgAgentsXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			if (wake_requested && pg_agents_shared != NULL)
			{
				Latch	   *latch;

				SpinLockAcquire(&pg_agents_shared->mutex);
				latch = pg_agents_shared->worker_latch;
				SpinLockRelease(&pg_agents_shared->mutex);
				pg_atomic_fetch_add_u64(&pg_agents_shared->wakeups, 1);
				if (latch != NULL)
					SetLatch(latch);
			}
			wake_requested = false;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			/* a prepared transaction's runs are found by the worker's poll */
			wake_requested = false;
			break;
		default:
			break;
	}
}

/*
 * Asks for the worker to be woken when the current transaction commits.
 * Several calls in one transaction wake it once.
 */
void
PgAgentsRequestWake(void)
{
	if (!xact_callback_registered)
	{
		RegisterXactCallback(PgAgentsXactCallback, NULL);
		xact_callback_registered = true;
	}
	wake_requested = true;
}

/* agent._request_wake() RETURNS void: used by agent._enqueue_run. */
Datum
pg_agents_request_wake(PG_FUNCTION_ARGS)
{
	PgAgentsRequestWake();
	PG_RETURN_VOID();
}

/*
 * agent._wake_count() RETURNS bigint: commits that woke the worker since the
 * server started; NULL when the library was not preloaded.
 */
Datum
pg_agents_wake_count(PG_FUNCTION_ARGS)
{
	if (pg_agents_shared == NULL)
		PG_RETURN_NULL();
	PG_RETURN_INT64((int64) pg_atomic_read_u64(&pg_agents_shared->wakeups));
}
