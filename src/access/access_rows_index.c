/*-------------------------------------------------------------------------
 *
 * access_rows_index.c
 *		The index backend of the access row source (access_rows.h): a
 *		checked index scan of the local heap under the given snapshot, the
 *		keys the index does not cover checked in C; a table with no index
 *		to scan (agent.access_config, a row or none) is read whole.  The
 *		relations are open and locked already (AccessEnsureRels).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "utils/builtins.h"
#include "utils/rel.h"

#include "access_int.h"

/* a scan kept open across reads (AccessRowsHold) */
typedef struct HeldScan
{
	bool		active;
	Relation	heap;
	Relation	index;
	IndexScanDesc scan;
	TupleTableSlot *slot;
} HeldScan;

static HeldScan held[AQ_NQUERIES];

/* the number of keys the index scans */
static int
IndexKeys(const AccessQueryDef *q)
{
	int			n = 0;
	int			k;

	for (k = 0; k < q->nkeys; k++)
		if (q->keys[k].kind == AK_INDEX)
			n++;
	return n;
}

static bool
IndexOffers(AccessQuery qid)
{
	return true;
}

static void
IndexBegin(AccessRows *rs, const AccessKey *keys, Snapshot snap, int bound)
{
	const AccessQueryDef *q = rs->q;
	ScanKeyData sk[AQ_MAX_KEYS];
	int			nsk = 0;
	int			k;

	rs->seen = 0;
	rs->max_seen = q->bounded ? 16 * Max(bound, 1) : 0;
	rs->ntext_keys = 0;
	rs->held = false;
	rs->scan = NULL;
	rs->hscan = NULL;
	for (k = 0; k < q->nkeys; k++)
		rs->eq_keys[k] = keys != NULL ? keys[k] : (AccessKey) {NULL, 0};
	if (q->index == NULL)
	{
		rs->heap = table_open(*q->heap, NoLock);
		rs->index = NULL;
		rs->slot = table_slot_create(rs->heap, NULL);
		rs->hscan = table_beginscan(rs->heap, snap, 0, NULL);
		return;
	}
	if (held[rs->qid].active)
	{
		rs->held = true;
		rs->heap = held[rs->qid].heap;
		rs->index = held[rs->qid].index;
		rs->slot = held[rs->qid].slot;
		rs->scan = held[rs->qid].scan;
	}
	else
		rs->scan = AccessScanBegin(*q->heap, *q->index, snap, IndexKeys(q),
								   &rs->heap, &rs->index, &rs->slot);
	for (k = 0; k < q->nkeys; k++)
	{
		Datum		d;

		if (q->keys[k].kind != AK_INDEX)
			continue;
		if (q->keys[k].type == INT8OID)
			d = Int64GetDatum(keys[k].i);
		else
		{
			d = CStringGetTextDatum(keys[k].s);
			rs->text_keys[rs->ntext_keys++] = d;
		}
		RelcheckIndexKey(&sk[nsk], q->ix, nsk, d);
		nsk++;
	}
	index_rescan(rs->scan, sk, nsk, NULL, 0);
}

/* do the keys the index does not cover hold for the slot's row? */
static bool
IndexResidual(AccessRows *rs)
{
	const AccessQueryDef *q = rs->q;
	int			k;

	for (k = 0; k < q->nkeys; k++)
	{
		const AccessKeyDef *kd = &q->keys[k];
		const char *s = rs->eq_keys[k].s;
		bool		isnull;
		Datum		d;

		if (kd->kind != AK_EQ && kd->kind != AK_NULL_OR_EQ)
			continue;
		d = slot_getattr(rs->slot, *kd->att, &isnull);
		if (isnull)
		{
			if (kd->kind == AK_EQ)
				return false;
			continue;
		}
		if (s == NULL || !TextEq(d, s, strlen(s)))
			return false;
	}
	return true;
}

static bool
IndexNext(AccessRows *rs)
{
	for (;;)
	{
		bool		got = rs->hscan != NULL ?
			table_scan_getnextslot(rs->hscan, ForwardScanDirection, rs->slot) :
			index_getnext_slot(rs->scan, ForwardScanDirection, rs->slot);

		if (!got)
			return false;
		if (rs->max_seen > 0 && ++rs->seen > rs->max_seen)
		{
			rs->truncated = true;
			return false;
		}
		if (IndexResidual(rs))
			return true;
	}
}

static Datum
IndexGet(AccessRows *rs, int col, bool *isnull)
{
	return slot_getattr(rs->slot, *rs->q->cols[col], isnull);
}

static void
IndexEnd(AccessRows *rs)
{
	int			k;

	if (rs->hscan != NULL)
	{
		table_endscan(rs->hscan);
		ExecDropSingleTupleTableSlot(rs->slot);
		table_close(rs->heap, NoLock);
		return;
	}
	if (!rs->held)
		AccessScanEnd(rs->scan, rs->slot, rs->index, rs->heap);
	/* a held scan is rescanned with new keys before it reads again */
	for (k = 0; k < rs->ntext_keys; k++)
		pfree(DatumGetPointer(rs->text_keys[k]));
}

static void
IndexHold(AccessQuery qid, Snapshot snap)
{
	const AccessQueryDef *q = &AccessQueries[qid];
	HeldScan   *h = &held[qid];

	Assert(!h->active && q->index != NULL);
	h->scan = AccessScanBegin(*q->heap, *q->index, snap, IndexKeys(q),
							  &h->heap, &h->index, &h->slot);
	h->active = true;
}

static void
IndexRelease(AccessQuery qid, bool abort)
{
	HeldScan   *h = &held[qid];

	if (!h->active)
		return;
	h->active = false;
	if (!abort)					/* else the transaction's abort releases them */
		AccessScanEnd(h->scan, h->slot, h->index, h->heap);
}

const AccessRowsOps AccessRowsIndex = {
	"index", IndexOffers, IndexBegin, IndexNext, IndexGet, IndexEnd, IndexHold, IndexRelease
};
