/*-------------------------------------------------------------------------
 *
 * access_gen.c
 *		The access generation: which transactions change what agents may
 *		access, so that a backend can keep an agent's readable set between
 *		statements (src/allowlist.c).
 *
 * The access data are agent.agents, access, resource_acl, group_members and
 * access_config.  Without preloading (no shared memory) nothing can be
 * kept: readable sets are kept for one snapshot only.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "storage/spin.h"

#include "access_gen.h"

typedef struct AccessInflight
{
	TransactionId xid;			/* InvalidTransactionId: free slot */
	bool		prepared;		/* its own backend will not clear it */
} AccessInflight;

typedef struct AccessGenShared
{
	slock_t		mutex;
	uint64		gen;
	int			overflow;		/* writers in flight not in the array */
	AccessInflight inflight[PG_AGENTS_ACCESS_INFLIGHT];
} AccessGenShared;

static AccessGenShared *access_shared = NULL;

static bool xact_callback_registered = false;

/* this transaction changed access data; and what it published at pre-commit */
static bool access_changed = false;
static TransactionId access_published = InvalidTransactionId;
static bool access_published_overflow = false;

static void AccessPublish(bool prepared);
static void AccessRetire(void);

/* Shared memory wanted (shmem.c's request hook). */
Size
AccessGenShmemSize(void)
{
	return MAXALIGN(sizeof(AccessGenShared));
}

/* Attaches to (or creates) the shared state, under AddinShmemInitLock. */
void
AccessGenShmemInit(void)
{
	bool		found;

	access_shared = ShmemInitStruct("pg_agents access generation", sizeof(AccessGenShared), &found);
	if (!found)
	{
		SpinLockInit(&access_shared->mutex);
		access_shared->gen = 1;
		access_shared->overflow = 0;
		memset(access_shared->inflight, 0, sizeof(access_shared->inflight));
	}
}

/* publishes at pre-commit (pre-prepare), retires once committed or aborted */
static void
AccessGenXactCallback(XactEvent event, void *arg)
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
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			AccessRetire();
			access_changed = false;
			break;
		case XACT_EVENT_PREPARE:
			/* the prepared transaction stays published (see AccessSample) */
			access_published = InvalidTransactionId;
			access_published_overflow = false;
			access_changed = false;
			break;
		default:
			break;
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

/* The current transaction changes access data (called by the triggers). */
void
PgAgentsNoteAccessChange(void)
{
	if (!xact_callback_registered)
	{
		RegisterXactCallback(AccessGenXactCallback, NULL);
		xact_callback_registered = true;
	}
	access_changed = true;
}

/* Whether the current transaction has changed access data. */
bool
PgAgentsAccessChangedInXact(void)
{
	return access_changed;
}

/*
 * Publishes the transaction's xid as a writer in flight (pre-commit or
 * pre-prepare), or counts an overflow when the array is full; bumps the
 * generation.
 */
static void
AccessPublish(bool prepared)
{
	TransactionId xid = GetTopTransactionIdIfAny();
	int			i;

	if (access_shared == NULL || !TransactionIdIsValid(xid) ||
		TransactionIdIsValid(access_published) || access_published_overflow)
		return;
	SpinLockAcquire(&access_shared->mutex);
	for (i = 0; i < PG_AGENTS_ACCESS_INFLIGHT; i++)
	{
		if (!TransactionIdIsValid(access_shared->inflight[i].xid))
		{
			access_shared->inflight[i].xid = xid;
			access_shared->inflight[i].prepared = prepared;
			break;
		}
	}
	if (i == PG_AGENTS_ACCESS_INFLIGHT)
	{
		access_shared->overflow++;
		access_published_overflow = true;
	}
	else
		access_published = xid;
	access_shared->gen++;
	SpinLockRelease(&access_shared->mutex);
}

/*
 * Retires what AccessPublish published, once the transaction ended; bumps the
 * generation.
 */
static void
AccessRetire(void)
{
	int			i;

	if (access_shared == NULL ||
		(!TransactionIdIsValid(access_published) && !access_published_overflow))
		return;
	SpinLockAcquire(&access_shared->mutex);
	if (access_published_overflow)
		access_shared->overflow--;
	else
	{
		for (i = 0; i < PG_AGENTS_ACCESS_INFLIGHT; i++)
		{
			if (TransactionIdEquals(access_shared->inflight[i].xid, access_published))
			{
				access_shared->inflight[i].xid = InvalidTransactionId;
				break;
			}
		}
	}
	access_shared->gen++;
	SpinLockRelease(&access_shared->mutex);
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
	int			i;
	bool		ok;
	TransactionId prepared[PG_AGENTS_ACCESS_INFLIGHT];
	int			nprepared = 0;

	*n = 0;
	if (access_shared == NULL)
		return false;
	SpinLockAcquire(&access_shared->mutex);
	for (i = 0; i < PG_AGENTS_ACCESS_INFLIGHT; i++)
	{
		AccessInflight *f = &access_shared->inflight[i];

		if (!TransactionIdIsValid(f->xid))
			continue;
		inflight[(*n)++] = f->xid;
		if (f->prepared)
			prepared[nprepared++] = f->xid;
	}
	ok = access_shared->overflow == 0;
	*gen = access_shared->gen;
	SpinLockRelease(&access_shared->mutex);

	/* retire the prepared transactions that have ended (no lock held here) */
	for (i = 0; i < nprepared; i++)
	{
		int			j;

		if (TransactionIdIsInProgress(prepared[i]))
			continue;
		SpinLockAcquire(&access_shared->mutex);
		for (j = 0; j < PG_AGENTS_ACCESS_INFLIGHT; j++)
		{
			AccessInflight *f = &access_shared->inflight[j];

			if (f->prepared && TransactionIdEquals(f->xid, prepared[i]))
			{
				f->xid = InvalidTransactionId;
				access_shared->gen++;
			}
		}
		SpinLockRelease(&access_shared->mutex);
		ok = false;				/* the sample is stale: compute, keep nothing */
	}
	return ok;
}
