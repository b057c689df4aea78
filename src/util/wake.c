/*-------------------------------------------------------------------------
 *
 * wake.c
 *		The worker's wake-up: its latch in shared memory, set once when a
 *		transaction that queued runs commits.
 *
 * The worker publishes its latch with WakeSetWorkerLatch(MyLatch) when it
 * starts (and NULL when it exits), in its database's slot (shmem.h): a
 * backend wakes the worker of its own database.  A backend that queues runs calls
 * WakeRequest(); at commit an XactCallback sets the worker's latch,
 * once per transaction, so the worker claims the new runs without polling.
 * A rolled-back transaction wakes nobody.  Without preloading (no shared
 * memory) it is a no-op: runs still reach external executors through NOTIFY
 * agent_runs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/latch.h"
#include "storage/shmem.h"
#include "storage/spin.h"

#include "shmem.h"
#include "wake.h"

PG_FUNCTION_INFO_V1(pg_agents_request_wake);
PG_FUNCTION_INFO_V1(pg_agents_wake_count);

typedef struct WakeShared
{
	slock_t		mutex;
	pg_atomic_uint64 wakeups;	/* commits that woke (or tried to wake) it */
} WakeShared;

static WakeShared *wake_shared = NULL;

static bool wake_requested = false;
static bool xact_callback_registered = false;

/* Shared memory wanted (shmem.c's request hook). */
static Size
WakeShmemSize(void)
{
	return MAXALIGN(sizeof(WakeShared));
}

/* Attaches to (or creates) the shared state, under AddinShmemInitLock. */
static void
WakeShmemInit(void)
{
	bool		found;

	wake_shared = ShmemInitStruct("pg_agents wake", sizeof(WakeShared), &found);
	if (!found)
	{
		SpinLockInit(&wake_shared->mutex);
		pg_atomic_init_u64(&wake_shared->wakeups, 0);
	}
}

/* from _PG_init: the part registered with shmem.c */
void
WakeShmemRegister(void)
{
	ShmemAddPart(WakeShmemSize, WakeShmemInit);
}

/*
 * The worker publishes its latch (MyLatch) here, or NULL when it stops.
 * No-op when the library was not preloaded.
 */
void
WakeSetWorkerLatch(Latch *latch)
{
	PgAgentsDbSlot *slot = ShmemDbSlotFor(MyDatabaseId, true);

	if (wake_shared == NULL || slot == NULL)
		return;
	SpinLockAcquire(&wake_shared->mutex);
	slot->latch = latch;
	SpinLockRelease(&wake_shared->mutex);
}

/* at commit, sets the worker's latch if this transaction asked for it */
static void
WakeXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			if (wake_requested && wake_shared != NULL)
			{
				Latch	   *latch = NULL;
				PgAgentsDbSlot *slot = ShmemDbSlotFor(MyDatabaseId, false);

				/* the latch of this database's worker (one per database) */
				SpinLockAcquire(&wake_shared->mutex);
				if (slot != NULL)
					latch = (Latch *) slot->latch;
				SpinLockRelease(&wake_shared->mutex);
				pg_atomic_fetch_add_u64(&wake_shared->wakeups, 1);
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
WakeRequest(void)
{
	if (!xact_callback_registered)
	{
		RegisterXactCallback(WakeXactCallback, NULL);
		xact_callback_registered = true;
	}
	wake_requested = true;
}

/* agent._request_wake() RETURNS void: used by agent._enqueue_run. */
Datum
pg_agents_request_wake(PG_FUNCTION_ARGS)
{
	WakeRequest();
	PG_RETURN_VOID();
}

/*
 * agent._wake_count() RETURNS bigint: commits that woke the worker since the
 * server started; NULL when the library was not preloaded.
 */
Datum
pg_agents_wake_count(PG_FUNCTION_ARGS)
{
	if (wake_shared == NULL)
		PG_RETURN_NULL();
	PG_RETURN_INT64((int64) pg_atomic_read_u64(&wake_shared->wakeups));
}
