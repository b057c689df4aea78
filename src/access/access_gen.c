/*-------------------------------------------------------------------------
 *
 * access_gen.c
 *		The access generation: which transactions change what agents may
 *		access, so that a backend can keep an agent's readable set between
 *		statements (src/access/allowlist_cache.c).
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
#include "util/shmem.h"

typedef struct AccessInflight
{
	TransactionId xid;			/* InvalidTransactionId: free slot */
	bool		prepared;		/* its own backend will not clear it */
	uint64		seq;			/* its record in the change log */
} AccessInflight;

/* the change log: what each published transaction changed (ring by seq) */
#define ACCESS_LOG_SIZE 64

typedef struct AccessGenShared
{
	slock_t		mutex;
	uint64		gen;
	int			overflow;		/* writers in flight not in the array */
	AccessInflight inflight[PG_AGENTS_ACCESS_INFLIGHT];
	uint64		pubseq;			/* publications so far (the log's last seq) */
	PgAgentsAccessChange log[ACCESS_LOG_SIZE];
} AccessGenShared;

static AccessGenShared *access_shared = NULL;

static bool xact_callback_registered = false;

/* this transaction changed access data; and what it published at pre-commit */
static bool access_changed = false;
static TransactionId access_published = InvalidTransactionId;
static bool access_published_overflow = false;
/* what this transaction changed, as far as the row triggers described it */
static PgAgentsAccessChange access_pending;

static void AccessPublish(bool prepared);
static void AccessRetire(void);

/* Shared memory wanted (shmem.c's request hook). */
static Size
AccessGenShmemSize(void)
{
	return MAXALIGN(sizeof(AccessGenShared));
}

/* Attaches to (or creates) the shared state, under AddinShmemInitLock. */
static void
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
		access_shared->pubseq = 0;
		memset(access_shared->log, 0, sizeof(access_shared->log));
	}
}

/* from _PG_init: the part registered with shmem.c */
void
AccessGenShmemRegister(void)
{
	ShmemAddPart(AccessGenShmemSize, AccessGenShmemInit);
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
			access_pending.all = false;
			access_pending.nitems = 0;
			break;
		case XACT_EVENT_PREPARE:
			/* the prepared transaction stays published (see AccessSampleSeq) */
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

/* ------------------------------------------------------------------------
 * The access generation
 * ------------------------------------------------------------------------
 *
 * A transaction that changes access data (statement triggers on the access
 * tables call AccessNoteChange, row triggers AccessNoteItem)
 * publishes its xid at pre-commit, with what it changed in the change log,
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

/* Registers AccessGenXactCallback once per process. */
static void
AccessGenRegister(void)
{
	if (!xact_callback_registered)
	{
		RegisterXactCallback(AccessGenXactCallback, NULL);
		xact_callback_registered = true;
	}
}

/*
 * The current transaction changes access data in a way not described item by
 * item (called by the statement triggers): every kept set is to be computed
 * afresh once it commits.
 */
void
AccessNoteChange(void)
{
	AccessGenRegister();
	access_changed = true;
	access_pending.all = true;
}

/* Whether two access items name the same row change (kind, agent, resource). */
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
 * resource decided again, or the agent's row read again).  Past
 * PG_AGENTS_ACCESS_ITEMS items the grants and the row of one agent collapse
 * into "that agent", and past that everything counts as changed.
 */
void
AccessNoteItem(const PgAgentsAccessItem *item)
{
	PgAgentsAccessChange *p = &access_pending;
	int			i,
				j;

	AccessGenRegister();
	access_changed = true;
	if (p->all)
		return;
	for (i = 0; i < p->nitems; i++)
	{
		if (AccessItemEqual(&p->items[i], item))
			return;
		/* the agent as a whole already covers its grants and its row */
		if (p->items[i].kind == PGA_CHANGE_AGENT &&
			(item->kind == PGA_CHANGE_GRANT || item->kind == PGA_CHANGE_AGENT_ROW) &&
			p->items[i].agent_id == item->agent_id)
			return;
	}
	if (p->nitems < PG_AGENTS_ACCESS_ITEMS)
	{
		p->items[p->nitems++] = *item;
		return;
	}
	if (item->kind == PGA_CHANGE_GRANT || item->kind == PGA_CHANGE_AGENT ||
		item->kind == PGA_CHANGE_AGENT_ROW)
	{
		/* collapse the agent's items into one */
		for (i = 0, j = 0; i < p->nitems; i++)
		{
			if ((p->items[i].kind == PGA_CHANGE_GRANT || p->items[i].kind == PGA_CHANGE_AGENT ||
				 p->items[i].kind == PGA_CHANGE_AGENT_ROW) &&
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
AccessChangedInXact(void)
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
	uint64		seq;
	PgAgentsAccessChange *rec;

	if (access_shared == NULL || !TransactionIdIsValid(xid) ||
		TransactionIdIsValid(access_published) || access_published_overflow)
		return;
	SpinLockAcquire(&access_shared->mutex);
	/* what it changed, in the change log */
	seq = ++access_shared->pubseq;
	rec = &access_shared->log[seq % ACCESS_LOG_SIZE];
	rec->seq = seq;
	rec->all = access_pending.all;
	rec->nitems = access_pending.all ? 0 : access_pending.nitems;
	if (rec->nitems > 0)
		memcpy(rec->items, access_pending.items, sizeof(PgAgentsAccessItem) * rec->nitems);
	for (i = 0; i < PG_AGENTS_ACCESS_INFLIGHT; i++)
	{
		if (!TransactionIdIsValid(access_shared->inflight[i].xid))
		{
			access_shared->inflight[i].xid = xid;
			access_shared->inflight[i].prepared = prepared;
			access_shared->inflight[i].seq = seq;
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
 * PG_AGENTS_ACCESS_INFLIGHT, into inflight, their number in *n), with the
 * last seq of the change log (*pubseq) and the seq of each xid in flight
 * (inflight_seq): what AccessChangeGet reads.  False when nothing
 * can be kept: no shared memory, or writers beyond the array.  Prepared
 * transactions found ended are retired here.
 */
bool
AccessSampleSeq(uint64 *gen, uint64 *pubseq, TransactionId *inflight,
						uint64 *inflight_seq, int *n)
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
		inflight_seq[*n] = f->seq;
		inflight[(*n)++] = f->xid;
		if (f->prepared)
			prepared[nprepared++] = f->xid;
	}
	ok = access_shared->overflow == 0;
	*gen = access_shared->gen;
	*pubseq = access_shared->pubseq;
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

/*
 * The change log's record seq (what one published transaction changed) into
 * *out; false when it is not there any more (the log wrapped) or not yet.
 */
bool
AccessChangeGet(uint64 seq, PgAgentsAccessChange *out)
{
	PgAgentsAccessChange *rec;
	bool		ok;

	if (access_shared == NULL || seq == 0)
		return false;
	SpinLockAcquire(&access_shared->mutex);
	rec = &access_shared->log[seq % ACCESS_LOG_SIZE];
	ok = rec->seq == seq;
	if (ok)
	{
		out->seq = rec->seq;
		out->all = rec->all;
		out->nitems = rec->nitems;
		if (rec->nitems > 0)
			memcpy(out->items, rec->items, sizeof(PgAgentsAccessItem) * rec->nitems);
	}
	SpinLockRelease(&access_shared->mutex);
	return ok;
}
