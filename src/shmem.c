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
 * It also tracks the transactions that change what agents may access
 * (agent.agents, access, resource_acl, group_members, access_config; see
 * "The access generation" below), so that a backend can keep an agent's
 * readable set between statements (src/allowlist.c).
 *
 * And what agent.worker_status shows of the worker (PgAgentsWorkerInfo,
 * docs/operations.md); its counters of worker starts survive a crash reset
 * of shared memory (carried over by the postmaster, see ShmemCarry).
 *
 * Shared memory exists only when the library is in shared_preload_libraries;
 * otherwise every function here is a harmless no-op (runs still reach
 * external executors through NOTIFY agent_runs; readable sets are kept for
 * one snapshot only).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "storage/spin.h"

#include "pg_agents.h"

PG_FUNCTION_INFO_V1(pg_agents_request_wake);
PG_FUNCTION_INFO_V1(pg_agents_wake_count);

typedef struct AccessInflight
{
	TransactionId xid;			/* InvalidTransactionId: free slot */
	bool		prepared;		/* its own backend will not clear it */
	uint64		seq;			/* its record in the change log */
} AccessInflight;

/* the change log: what each published transaction changed (ring by seq) */
#define ACCESS_LOG_SIZE 64

typedef struct PgAgentsShared
{
	slock_t		mutex;
	Latch	   *worker_latch;	/* NULL when no worker runs */
	pg_atomic_uint64 wakeups;	/* commits that woke (or tried to wake) it */
	/* the access generation, under access_mutex */
	slock_t		access_mutex;
	uint64		access_gen;
	int			access_overflow;	/* writers in flight not in the array */
	AccessInflight access_inflight[PG_AGENTS_ACCESS_INFLIGHT];
	uint64		access_pubseq;	/* publications so far (the log's last seq) */
	PgAgentsAccessChange access_log[ACCESS_LOG_SIZE];
	/* operations: the worker's status (src/ops.c) */
	PgAgentsWorkerInfo worker;
} PgAgentsShared;

static PgAgentsShared *pg_agents_shared = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static bool wake_requested = false;
static bool xact_callback_registered = false;

/* this transaction changed access data; and what it published at pre-commit */
static bool access_changed = false;
static TransactionId access_published = InvalidTransactionId;
static bool access_published_overflow = false;
/* what this transaction changed, as far as the row triggers described it */
static PgAgentsAccessChange access_pending;

static void RegisterCallback(void);

/*
 * Operations: the postmaster keeps the worker's start counters across a
 * crash reset of shared memory (a killed child makes the postmaster
 * re-create it): copied out at shmem_exit, before the segment goes, and back
 * in at the next startup.
 */
static uint64 carried_starts = 0;
static uint64 carried_resets = 0;
static bool carried = false;

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
		SpinLockInit(&pg_agents_shared->access_mutex);
		pg_agents_shared->access_gen = 1;
		pg_agents_shared->access_overflow = 0;
		memset(pg_agents_shared->access_inflight, 0, sizeof(pg_agents_shared->access_inflight));
		pg_agents_shared->access_pubseq = 0;
		memset(pg_agents_shared->access_log, 0, sizeof(pg_agents_shared->access_log));
		/* operations */
		memset(&pg_agents_shared->worker, 0, sizeof(PgAgentsWorkerInfo));
		SpinLockInit(&pg_agents_shared->worker.mutex);
		pg_atomic_init_u32(&pg_agents_shared->worker.paused, 0);
		if (carried)
		{
			pg_agents_shared->worker.starts = carried_starts;
			pg_agents_shared->worker.resets = carried_resets;
		}
	}
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

static void AccessPublish(bool prepared);
static void AccessRetire(void);

static void
PgAgentsXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			if (access_changed)
				AccessPublish(false);
			break;
		case XACT_EVENT_PRE_PREPARE:
			if (access_changed)
				AccessPublish(true);
			break;
		default:
			break;
	}
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
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			AccessRetire();
			access_changed = false;
			access_pending.all = false;
			access_pending.nitems = 0;
			break;
		case XACT_EVENT_PREPARE:
			/* the prepared transaction stays published (see AccessSample) */
			access_published = InvalidTransactionId;
			access_published_overflow = false;
			access_changed = false;
			access_pending.all = false;
			access_pending.nitems = 0;
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
	RegisterCallback();
	wake_requested = true;
}

static void
RegisterCallback(void)
{
	if (!xact_callback_registered)
	{
		RegisterXactCallback(PgAgentsXactCallback, NULL);
		xact_callback_registered = true;
	}
}

/* ------------------------------------------------------------------------
 * The access generation
 * ------------------------------------------------------------------------
 *
 * A transaction that changes access data (statement triggers on the access
 * tables call PgAgentsNoteAccessChange) publishes its xid at pre-commit,
 * before it becomes visible, and retires it after it became visible (or
 * aborted); each step increments the generation.  A reader samples the
 * generation and the published xids, then takes a fresh snapshot and
 * computes; what it computed stays good while the generation is the same and
 * every xid published at the sample is still in progress: a change visible
 * to a later snapshot either was published after the sample (the generation
 * moved) or was in flight at the sample and has ended since.  A prepared
 * transaction stays published until a reader sees that it has ended.  When
 * the array is full the overflow count makes readers compute every time.
 */

/*
 * The current transaction changes access data in a way not described item by
 * item (called by the statement triggers): every kept set is to be computed
 * afresh once it commits.
 */
void
PgAgentsNoteAccessChange(void)
{
	RegisterCallback();
	access_changed = true;
	access_pending.all = true;
}

static bool
AccessItemEqual(const PgAgentsAccessItem *a, const PgAgentsAccessItem *b)
{
	return a->kind == b->kind && a->agent_id == b->agent_id &&
		strcmp(a->rtype, b->rtype) == 0 && strcmp(a->rid, b->rid) == 0;
}

/*
 * The current transaction changes one row of access data, described by item
 * (called by the row triggers): a kept set that the item does not concern is
 * still good after the commit, and one it concerns can be patched (the
 * resource decided again).  Past PG_AGENTS_ACCESS_ITEMS items the grants of
 * one agent collapse into "that agent", and past that everything counts as
 * changed.
 */
void
PgAgentsNoteAccessItem(const PgAgentsAccessItem *item)
{
	PgAgentsAccessChange *p = &access_pending;
	int			i,
				j;

	RegisterCallback();
	access_changed = true;
	if (p->all)
		return;
	for (i = 0; i < p->nitems; i++)
	{
		if (AccessItemEqual(&p->items[i], item))
			return;
		/* the agent as a whole already covers its grants */
		if (p->items[i].kind == PGA_CHANGE_AGENT && item->kind == PGA_CHANGE_GRANT &&
			p->items[i].agent_id == item->agent_id)
			return;
	}
	if (p->nitems < PG_AGENTS_ACCESS_ITEMS)
	{
		p->items[p->nitems++] = *item;
		return;
	}
	if (item->kind == PGA_CHANGE_GRANT || item->kind == PGA_CHANGE_AGENT)
	{
		/* collapse the agent's items into one */
		for (i = 0, j = 0; i < p->nitems; i++)
		{
			if ((p->items[i].kind == PGA_CHANGE_GRANT || p->items[i].kind == PGA_CHANGE_AGENT) &&
				p->items[i].agent_id == item->agent_id)
				continue;
			p->items[j++] = p->items[i];
		}
		if (j < PG_AGENTS_ACCESS_ITEMS)
		{
			memset(&p->items[j], 0, sizeof(PgAgentsAccessItem));
			p->items[j].kind = PGA_CHANGE_AGENT;
			p->items[j].agent_id = item->agent_id;
			p->nitems = j + 1;
			return;
		}
	}
	p->all = true;
}

/* Whether the current transaction has changed access data. */
bool
PgAgentsAccessChangedInXact(void)
{
	return access_changed;
}

static void
AccessPublish(bool prepared)
{
	TransactionId xid = GetTopTransactionIdIfAny();
	int			i;
	uint64		seq;
	PgAgentsAccessChange *rec;

	if (pg_agents_shared == NULL || !TransactionIdIsValid(xid) ||
		TransactionIdIsValid(access_published) || access_published_overflow)
		return;
	SpinLockAcquire(&pg_agents_shared->access_mutex);
	seq = ++pg_agents_shared->access_pubseq;
	rec = &pg_agents_shared->access_log[seq % ACCESS_LOG_SIZE];
	rec->seq = seq;
	rec->all = access_pending.all;
	rec->nitems = access_pending.all ? 0 : access_pending.nitems;
	if (rec->nitems > 0)
		memcpy(rec->items, access_pending.items, sizeof(PgAgentsAccessItem) * rec->nitems);
	for (i = 0; i < PG_AGENTS_ACCESS_INFLIGHT; i++)
	{
		if (!TransactionIdIsValid(pg_agents_shared->access_inflight[i].xid))
		{
			pg_agents_shared->access_inflight[i].xid = xid;
			pg_agents_shared->access_inflight[i].prepared = prepared;
			pg_agents_shared->access_inflight[i].seq = seq;
			break;
		}
	}
	if (i == PG_AGENTS_ACCESS_INFLIGHT)
	{
		pg_agents_shared->access_overflow++;
		access_published_overflow = true;
	}
	else
		access_published = xid;
	pg_agents_shared->access_gen++;
	SpinLockRelease(&pg_agents_shared->access_mutex);
}

static void
AccessRetire(void)
{
	int			i;

	if (pg_agents_shared == NULL ||
		(!TransactionIdIsValid(access_published) && !access_published_overflow))
		return;
	SpinLockAcquire(&pg_agents_shared->access_mutex);
	if (access_published_overflow)
		pg_agents_shared->access_overflow--;
	else
	{
		for (i = 0; i < PG_AGENTS_ACCESS_INFLIGHT; i++)
		{
			if (TransactionIdEquals(pg_agents_shared->access_inflight[i].xid, access_published))
			{
				pg_agents_shared->access_inflight[i].xid = InvalidTransactionId;
				break;
			}
		}
	}
	pg_agents_shared->access_gen++;
	SpinLockRelease(&pg_agents_shared->access_mutex);
	access_published = InvalidTransactionId;
	access_published_overflow = false;
}

/*
 * Samples the access generation and the xids in flight (at most
 * PG_AGENTS_ACCESS_INFLIGHT, into inflight, their number in *n).  False when
 * nothing can be kept: no shared memory, or writers beyond the array.
 * Prepared transactions found ended are retired here.
 */
bool
PgAgentsAccessSample(uint64 *gen, TransactionId *inflight, int *n)
{
	uint64		pubseq;
	uint64		seqs[PG_AGENTS_ACCESS_INFLIGHT];

	return PgAgentsAccessSampleSeq(gen, &pubseq, inflight, seqs, n);
}

/*
 * The same, with the last seq of the change log (*pubseq) and the seq of
 * each xid in flight (inflight_seq): what PgAgentsAccessChangeGet reads.
 */
bool
PgAgentsAccessSampleSeq(uint64 *gen, uint64 *pubseq, TransactionId *inflight,
						uint64 *inflight_seq, int *n)
{
	int			i;
	bool		ok;
	TransactionId prepared[PG_AGENTS_ACCESS_INFLIGHT];
	int			nprepared = 0;

	*n = 0;
	if (pg_agents_shared == NULL)
		return false;
	SpinLockAcquire(&pg_agents_shared->access_mutex);
	for (i = 0; i < PG_AGENTS_ACCESS_INFLIGHT; i++)
	{
		AccessInflight *f = &pg_agents_shared->access_inflight[i];

		if (!TransactionIdIsValid(f->xid))
			continue;
		inflight_seq[*n] = f->seq;
		inflight[(*n)++] = f->xid;
		if (f->prepared)
			prepared[nprepared++] = f->xid;
	}
	ok = pg_agents_shared->access_overflow == 0;
	*gen = pg_agents_shared->access_gen;
	*pubseq = pg_agents_shared->access_pubseq;
	SpinLockRelease(&pg_agents_shared->access_mutex);

	/* retire the prepared transactions that have ended (no lock held here) */
	for (i = 0; i < nprepared; i++)
	{
		int			j;

		if (TransactionIdIsInProgress(prepared[i]))
			continue;
		SpinLockAcquire(&pg_agents_shared->access_mutex);
		for (j = 0; j < PG_AGENTS_ACCESS_INFLIGHT; j++)
		{
			AccessInflight *f = &pg_agents_shared->access_inflight[j];

			if (f->prepared && TransactionIdEquals(f->xid, prepared[i]))
			{
				f->xid = InvalidTransactionId;
				pg_agents_shared->access_gen++;
			}
		}
		SpinLockRelease(&pg_agents_shared->access_mutex);
		ok = false;				/* the sample is stale: compute, keep nothing */
	}
	return ok;
}

/*
 * The change log's record seq (what one published transaction changed) into
 * *out; false when it is not there any more (the log wrapped) or not yet.
 */
bool
PgAgentsAccessChangeGet(uint64 seq, PgAgentsAccessChange *out)
{
	PgAgentsAccessChange *rec;
	bool		ok;

	if (pg_agents_shared == NULL || seq == 0)
		return false;
	SpinLockAcquire(&pg_agents_shared->access_mutex);
	rec = &pg_agents_shared->access_log[seq % ACCESS_LOG_SIZE];
	ok = rec->seq == seq;
	if (ok)
	{
		out->seq = rec->seq;
		out->all = rec->all;
		out->nitems = rec->nitems;
		if (rec->nitems > 0)
			memcpy(out->items, rec->items, sizeof(PgAgentsAccessItem) * rec->nitems);
	}
	SpinLockRelease(&pg_agents_shared->access_mutex);
	return ok;
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
