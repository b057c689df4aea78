/*-------------------------------------------------------------------------
 *
 * allowlist_cache.c
 *		The allowlist's readable sets kept in the backend: computed, patched
 *		from the access change log and reused while they cannot have changed;
 *		the SQL functions that return them (agent._allowlist_ids_*,
 *		agent._readable_ids, agent._readable_set_stats) and the trigger that
 *		notes access changes (agent._access_changed).
 *
 * The plan-time switch of the policies, their membership test and its
 * planner support are in allowlist_support.c; the leakproof operators in
 * allowlist_ops.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/pathnodes.h"
#include "nodes/supportnodes.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/plancat.h"
#include "parser/parse_func.h"
#include "parser/parse_oper.h"
#include "mb/pg_wchar.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "tsearch/ts_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/uuid.h"

#include "access.h"
#include "access_gen.h"
#include "util/compat.h"
#include "util/guc.h"
#include "util/relcheck.h"
#include "util/shmem.h"

#include "allowlist_int.h"

PG_FUNCTION_INFO_V1(pg_agents_allowlist_ids);
PG_FUNCTION_INFO_V1(pg_agents_readable_ids);
PG_FUNCTION_INFO_V1(pg_agents_access_changed);
PG_FUNCTION_INFO_V1(pg_agents_readable_set_stats);

/* ------------------------------------------------------------------------
 * The readable set as a typed array, for the policies
 * ------------------------------------------------------------------------
 *
 * The SELECT policy of an integer id column reads
 *
 *		id = ANY ((SELECT agent._allowlist_ids_int8('page', 'read'))::bigint[])
 *
 * an InitPlan evaluated once per statement whose array feeds the index on the
 * id column.  The array is computed by AccessReadableIds (access_readable.c, the
 * decision of agent.can_access for each candidate) and kept in the backend
 * for as long as the access data it was computed from cannot have changed.
 * Two ways to know:
 *
 * - kept across statements (READ COMMITTED, the library preloaded, not on a
 *   standby, the transaction has not changed access data itself, no custom
 *   ACL function): the access generation of src/access/access_gen.c is sampled, then the
 *   set is computed under a fresh snapshot (so no committed change can be
 *   missing from it), and it stays good while the generation is the same and
 *   the access-changing transactions that were in flight at the sample are
 *   still in progress.  Changes to other tables do not matter.  The set may
 *   thus be a little newer than the statement's snapshot, never older: a
 *   revocation committed meanwhile already applies.
 * - otherwise, for one snapshot: the same visible transaction set (the
 *   snapshot's count of completed transactions, xmin, xmax and in-progress
 *   counts) and, when the transaction has written (or on a standby, or
 *   under an imported snapshot), the same transaction and command.
 */
#define IDS_CACHE_ENTRIES 8

static MemoryContext ids_cxt = NULL;
static IdsEntry ids_cache[IDS_CACHE_ENTRIES];
static int64 ids_computed = 0;	/* statistics of this backend (patched sets count) */
static int64 ids_reused = 0;
static int	ids_next = 0;		/* round-robin replacement */
static uint64 ids_epoch = 0;	/* the last IdsEntry.epoch given */
static bool ids_borrow = false; /* AllowlistIdsKeptBorrowed is asking */
static IdsEntry *ids_borrowed = NULL;	/* and the entry it got the set of */

/*
 * Fills k with what identifies the visible transaction set of snap (see
 * the comment above IdsSnapKey); the transaction and command too when the
 * transaction has written, the snapshot has no completion count, or it was
 * taken during recovery.
 */
static void
IdsSnapKeyFor(Snapshot snap, IdsSnapKey *k)
{
	memset(k, 0, sizeof(*k));
	k->completions = snap->snapXactCompletionCount;
	k->xmin = snap->xmin;
	k->xmax = snap->xmax;
	k->xcnt = snap->xcnt;
	k->subxcnt = snap->subxcnt;
	k->suboverflowed = snap->suboverflowed;
	k->recovery = snap->takenDuringRecovery;
	/*
	 * A transaction sees its own writes: then the set is only good for this
	 * transaction and command.  Likewise without a completion count (a
	 * snapshot not built by GetSnapshotData: imported, restored in a parallel
	 * worker) and on a hot standby.
	 */
	if (k->completions == 0 || k->recovery ||
		TransactionIdIsValid(GetTopTransactionIdIfAny()))
	{
		k->lxid = PGA_MY_LXID;
		k->curcid = snap->curcid;
	}
	/*
	 * With Citus, a change committed on another node leaves this node's
	 * snapshots alike: the set is then good for this statement only.
	 */
	if (AccessOnCitus())
	{
		k->lxid = PGA_MY_LXID;
		k->curcid = snap->curcid;
		k->stmt = GetCurrentStatementStartTimestamp();
	}
}

/*
 * A mode argument: true for "edit", false for "read"; ERROR 22023 for
 * anything else.
 */
bool
AllowlistParseMode(text *mode)
{
	char	   *m = text_to_cstring(mode);

	if (strcmp(m, "edit") == 0)
		return true;
	if (strcmp(m, "read") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid mode \"%s\"", m),
				 errdetail("A mode is read or edit.")));
	return false;
}

/* is s the text form of an int8, as the id test of the policies reads it? */
static bool
IdIsInt8(const char *s, int64 *out)
{
	const char *p = s;
	int			digits;
	bool		neg = false;
	uint64		v = 0;

	if (*p == '-')
	{
		neg = true;
		p++;
	}
	if (*p == '0')
	{
		if (p[1] != '\0' || neg)
			return false;
		*out = 0;
		return true;
	}
	for (digits = 0; p[digits]; digits++)
	{
		if (p[digits] < '0' || p[digits] > '9' || digits >= 19)
			return false;
		v = v * 10 + (p[digits] - '0');
	}
	if (digits == 0)
		return false;
	if (neg)
	{
		if (v > (uint64) PG_INT64_MAX + 1)
			return false;
		*out = (int64) (0 - v);
	}
	else
	{
		if (v > (uint64) PG_INT64_MAX)
			return false;
		*out = (int64) v;
	}
	return true;
}

/* is s a uuid in the canonical lowercase form the grants use? */
static bool
IdIsUuid(const char *s)
{
	int			i;

	if (strlen(s) != 36)
		return false;
	for (i = 0; i < 36; i++)
	{
		char		c = s[i];

		if (i == 8 || i == 13 || i == 18 || i == 23)
		{
			if (c != '-')
				return false;
		}
		else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
	}
	return true;
}

/* qsort comparator of int64 values, ascending. */
int
AllowlistCompareInt64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

/*
 * The readable ids as an array of elemtype (text, int8 or uuid): ids that
 * are not the text form of a value of the type are left out, so a stray
 * grant never makes a query fail.  Built in the current memory context.
 */
static Datum
BuildIdsArray(char **ids, int n, Oid elemtype)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(n, 1));
	int			m = 0;
	int			i;
	int16		typlen;
	bool		typbyval;
	char		typalign;

	for (i = 0; i < n; i++)
	{
		if (elemtype == INT8OID)
		{
			int64		v;

			if (IdIsInt8(ids[i], &v))
				elems[m++] = Int64GetDatum(v);
		}
		else if (elemtype == UUIDOID)
		{
			if (IdIsUuid(ids[i]))
				elems[m++] = DirectFunctionCall1(uuid_in, CStringGetDatum(ids[i]));
		}
		else
			elems[m++] = CStringGetTextDatum(ids[i]);
	}
	if (elemtype == INT8OID && m > 1)
	{
		int64	   *v = palloc(sizeof(int64) * m);

		for (i = 0; i < m; i++)
			v[i] = DatumGetInt64(elems[i]);
		qsort(v, m, sizeof(int64), AllowlistCompareInt64);
		for (i = 0; i < m; i++)
			elems[i] = Int64GetDatum(v[i]);
	}
	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	return PointerGetDatum(construct_array(elems, m, elemtype, typlen, typbyval, typalign));
}

/* the entry for these arguments, or NULL */
IdsEntry *
AllowlistFindEntry(int64 agent_id, const char *rtype, bool edit, Oid elemtype, Oid access_rel)
{
	int			i;

	for (i = 0; i < IDS_CACHE_ENTRIES; i++)
	{
		IdsEntry   *c = &ids_cache[i];

		if (c->used && c->agent_id == agent_id && c->edit == edit &&
			c->elemtype == elemtype && c->access_rel == access_rel &&
			strcmp(c->rtype, rtype) == 0)
			return c;
	}
	return NULL;
}

/* Empties a cache entry, freeing its memory context when it was in use. */
static void
DropEntry(IdsEntry *e)
{
	if (e->used)
		MemoryContextDelete(e->cxt);
	e->used = false;
	e->epoch = ++ids_epoch;		/* a borrowed set of it is gone */
}

/* a fresh entry (the old one for the same arguments, or a replaced one) */
static IdsEntry *
NewEntry(IdsEntry *old, int64 agent_id, const char *rtype, bool edit, Oid elemtype,
		 Oid access_rel, Datum arr)
{
	IdsEntry   *e = old;
	MemoryContext oldcxt;

	if (e == NULL)
	{
		int			i;

		for (i = 0; i < IDS_CACHE_ENTRIES && e == NULL; i++)
			if (!ids_cache[i].used)
				e = &ids_cache[i];
		if (e == NULL)
		{
			e = &ids_cache[ids_next];
			ids_next = (ids_next + 1) % IDS_CACHE_ENTRIES;
		}
	}
	DropEntry(e);
	if (ids_cxt == NULL)
		ids_cxt = AllocSetContextCreate(TopMemoryContext, "pg_agents readable sets",
										ALLOCSET_SMALL_SIZES);
	e->cxt = AllocSetContextCreate(ids_cxt, "pg_agents readable set", ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(e->cxt);
	e->agent_id = agent_id;
	e->edit = edit;
	e->elemtype = elemtype;
	e->access_rel = access_rel;
	e->rtype = pstrdup(rtype);
	e->array = PointerGetDatum(DatumGetArrayTypePCopy(arr));
	e->shared = false;
	e->ninflight = 0;
	e->inflight = NULL;
	e->inflight_seq = NULL;
	e->pubseq = 0;
	e->owner = NULL;
	e->workspace = NULL;
	e->live = false;
	e->base = (Datum) 0;
	e->stale_decisions = 0;
	e->sorted = 0;
	MemoryContextSwitchTo(oldcxt);
	e->used = true;
	return e;
}

/* compute the set as an array under the active snapshot, in the current context */
static Datum
ComputeIdsArray(int64 agent_id, const char *rtype, bool edit, Oid elemtype, bool *custom_acl)
{
	int			n;
	char	  **ids = AccessReadableIds(agent_id, rtype, edit, &n, custom_acl);

	return BuildIdsArray(ids, n, elemtype);
}

/*
 * The kept set e brought up to date from the change log, or (Datum) 0 when
 * it must be computed afresh.  The changes that may be missing from e are
 * those of the transactions in flight at its sample (e->inflight_seq) and
 * of every transaction published since (seqs e->pubseq + 1 .. pubseq, the
 * caller's new sample): each record either does not concern e's agent and
 * type, or names resources whose membership is decided again here, under a
 * snapshot taken after the new sample (so that no change visible to this
 * statement is missing, as when the set is computed).  A record that is gone
 * from the log, one that describes no rows, a change of the agent itself,
 * or more than PATCH_MAX_RIDS resources: computed afresh.  (A change of the
 * owner's groups names the resources that hold an ACL row for the group.)  Built in the
 * current memory context.
 */
#define PATCH_MAX_RIDS 64
#define PATCH_MAX_RECORDS 32

/* Whether t holds exactly the bytes of the C string s. */
bool
AllowlistTextIs(text *t, const char *s)
{
	int			len = VARSIZE_ANY_EXHDR(t);

	return (int) strlen(s) == len && memcmp(VARDATA_ANY(t), s, len) == 0;
}

/*
 * Adds to rids the ids of e's resource type that change record seq concerns
 * (a grant of e's agent, a resource, or the resources holding an ACL row for
 * a group the owner joined or left), and sets *agent_row when it changes the
 * row of e's agent.  false when the set cannot be patched: the record is gone
 * or concerns everything, it changes e's agent as a whole, the owner is
 * unknown, or more than PATCH_MAX_RIDS ids would be needed.
 */
static bool
PatchCollect(IdsEntry *e, uint64 seq, char **rids, int *nrids, bool *agent_row)
{
	PgAgentsAccessChange c;
	int			i;

	if (!AccessChangeGet(seq, &c) || c.all)
		return false;
	for (i = 0; i < c.nitems; i++)
	{
		PgAgentsAccessItem *it = &c.items[i];

		if (it->kind == PGA_CHANGE_AGENT)
		{
			if (it->agent_id == e->agent_id)
				return false;
			continue;
		}
		if (it->kind == PGA_CHANGE_AGENT_ROW)
		{
			/* its owner, workspace or liveness: read again by PatchKeptSet */
			if (it->agent_id == e->agent_id)
				*agent_row = true;
			continue;
		}
		if (it->kind == PGA_CHANGE_USER)
		{
			char	   *principal;
			int			n;

			if (e->owner != NULL && strcmp(it->rid, e->owner) != 0)
				continue;		/* another user's groups */
			/* the groups may read collections whose rows the set holds */
			if (AccessTypeHasParent(e->rtype, NULL))
				return false;
			/*
			 * The owner joined or left group it->rtype: what changes is its
			 * level on the resources that hold an ACL row for that group.
			 */
			if (e->owner == NULL || it->rtype[0] == '\0' || *nrids >= PATCH_MAX_RIDS)
				return false;
			principal = psprintf("group:%s", it->rtype);
			n = AccessAclResourcesOf(principal, e->rtype, PATCH_MAX_RIDS - *nrids,
									   rids + *nrids);
			pfree(principal);
			if (n < 0)
				return false;
			*nrids += n;
			continue;
		}
		if (it->kind == PGA_CHANGE_GRANT && it->agent_id != e->agent_id)
			continue;
		if (it->kind != PGA_CHANGE_GRANT && it->kind != PGA_CHANGE_RESOURCE)
			return false;
		if (strcmp(it->rtype, e->rtype) != 0)
		{
			/* a grant or ACL of a collection whose rows the set holds */
			if (AccessTypeHasParent(e->rtype, it->rtype))
				return false;
			continue;
		}
		if (*nrids >= PATCH_MAX_RIDS)
			return false;
		rids[(*nrids)++] = pstrdup(it->rid);
	}
	return true;
}

/* is the array element d the id rid (in its text form)? */
static bool
ElemIsId(Datum d, Oid elemtype, const char *rid, int64 rid_int, Datum rid_uuid)
{
	if (elemtype == INT8OID)
		return DatumGetInt64(d) == rid_int;
	if (elemtype == UUIDOID)
		return memcmp(DatumGetUUIDP(d), DatumGetUUIDP(rid_uuid), UUID_LEN) == 0;
	return AllowlistTextIs(DatumGetTextPP(d), rid);
}

/*
 * PatchKeptSet for a sorted bigint set without nulls: bisection, insertion
 * and removal on the array's own data, the resources decided under the
 * active snapshot.  (Datum) 0 when a custom ACL function answers.
 */
static Datum
PatchInt8Set(IdsEntry *e, ArrayType *arr, char **rids, int nrids)
{
	int			n = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
	int64	   *v = palloc(sizeof(int64) * (n + nrids + 1));
	ArrayType  *res;
	Size		nbytes;
	int			i;

	if (n > 0)
		memcpy(v, ARR_DATA_PTR(arr), sizeof(int64) * n);
	for (i = 0; i < nrids; i++)
	{
		int64		id;
		int			r;
		int			lo = 0;
		int			hi = n;

		if (!IdIsInt8(rids[i], &id))
			continue;			/* never in a set of this type */
		r = AccessReadableOne(e->agent_id, e->rtype, rids[i], e->edit);
		if (r < 0)
			return (Datum) 0;
		while (lo < hi)
		{
			int			mid = lo + (hi - lo) / 2;

			if (v[mid] < id)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < n && v[lo] == id)
		{
			if (r == 0)
			{
				memmove(&v[lo], &v[lo + 1], sizeof(int64) * (n - lo - 1));
				n--;
			}
		}
		else if (r == 1)
		{
			memmove(&v[lo + 1], &v[lo], sizeof(int64) * (n - lo));
			v[lo] = id;
			n++;
		}
	}
	if (n == 0)
		return PointerGetDatum(construct_empty_array(INT8OID));
	nbytes = ARR_OVERHEAD_NONULLS(1) + sizeof(int64) * n;
	res = (ArrayType *) palloc0(nbytes);
	SET_VARSIZE(res, nbytes);
	res->ndim = 1;
	res->dataoffset = 0;
	res->elemtype = INT8OID;
	ARR_DIMS(res)[0] = n;
	ARR_LBOUND(res)[0] = 1;
	memcpy(ARR_DATA_PTR(res), v, sizeof(int64) * n);
	pfree(v);
	return PointerGetDatum(res);
}

/*
 * The kept set of e brought up to the published change sequence pubseq: the
 * resources named by the records in flight when it was computed and by those
 * published since are decided again under a fresh snapshot, and added to or
 * removed from a copy of the set.  *unchanged is set when no record concerns
 * the set.  (Datum) 0 when it cannot be patched (too many records, see
 * PatchCollect, or a custom ACL function answers): the caller computes it
 * afresh.
 *
 * A change of the agent's row is read again under that snapshot: what the
 * set depends on there is the owner and the workspace (a change of either is
 * a new set: computed afresh, never reused) and whether the agent is live
 * (neither suspended nor deleted).  A set whose agent is not live is empty,
 * and what it would be if the agent were live is kept beside it (*live
 * false, *base that set or 0 when unknown): a suspension empties the answer
 * and a resumption restores it without computing, as long as none of its
 * resources changed meanwhile (the decisions while the agent is not live
 * say nothing, so then it is computed afresh once live again).
 */
static Datum
PatchKeptSet(IdsEntry *e, uint64 pubseq, bool *unchanged, bool *live, Datum *base)
{
	char	   *rids[PATCH_MAX_RIDS];
	int			nrids = 0;
	uint64		seq;
	int			i;
	ArrayType  *arr;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			cap;
	int16		typlen;
	bool		typbyval;
	char		typalign;

	bool		ok = true;
	bool		agent_row = false;
	Datum		was;

	*live = e->live;
	*base = (Datum) 0;
	if (pubseq < e->pubseq || pubseq - e->pubseq > PATCH_MAX_RECORDS)
		return (Datum) 0;
	/* what the records name is read (and decided) under a fresh snapshot */
	PushActiveSnapshot(GetLatestSnapshot());
	for (i = 0; i < e->ninflight && ok; i++)
		ok = PatchCollect(e, e->inflight_seq[i], rids, &nrids, &agent_row);
	for (seq = e->pubseq + 1; seq <= pubseq && ok; seq++)
		ok = PatchCollect(e, seq, rids, &nrids, &agent_row);
	if (ok && agent_row)
	{
		char	   *owner;
		char	   *workspace;

		/* the same owner and workspace as the set was computed for? */
		ok = AccessAgentState(e->agent_id, &owner, &workspace, live) &&
			e->owner != NULL && e->workspace != NULL &&
			strcmp(owner, e->owner) == 0 && strcmp(workspace, e->workspace) == 0;
	}
	if (!ok)
	{
		PopActiveSnapshot();
		return (Datum) 0;
	}

	/* the set as if the agent were live (not known: 0) */
	was = e->live ? e->array : e->base;
	if (!*live)
	{
		/* empty; the set as if live stays good while none of its resources changed */
		PopActiveSnapshot();
		if (nrids == 0 && was != (Datum) 0)
			*base = PointerGetDatum(DatumGetArrayTypePCopy(was));
		*unchanged = !e->live;
		return PointerGetDatum(construct_empty_array(e->elemtype));
	}
	if (was == (Datum) 0)
	{
		PopActiveSnapshot();
		return (Datum) 0;		/* live again, the set is not known */
	}
	arr = DatumGetArrayTypePCopy(was);
	*unchanged = nrids == 0 && e->live;
	if (nrids == 0)
	{
		PopActiveSnapshot();
		return PointerGetDatum(arr);	/* nothing of this set changed */
	}

	if (e->elemtype == INT8OID && !ARR_HASNULL(arr))
	{
		Datum		res = PatchInt8Set(e, arr, rids, nrids);

		PopActiveSnapshot();
		return res;
	}
	get_typlenbyvalalign(e->elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(arr, e->elemtype, typlen, typbyval, typalign, &elems, &nulls, &n);
	cap = n + nrids;
	elems = repalloc(elems, sizeof(Datum) * Max(cap, 1));
	for (i = 0; i < nrids; i++)
	{
		int64		rid_int = 0;
		Datum		rid_uuid = (Datum) 0;
		int			r;
		int			j;
		int			at = -1;

		if (e->elemtype == INT8OID && !IdIsInt8(rids[i], &rid_int))
			continue;			/* never in a set of this type */
		if (e->elemtype == UUIDOID)
		{
			if (!IdIsUuid(rids[i]))
				continue;
			rid_uuid = DirectFunctionCall1(uuid_in, CStringGetDatum(rids[i]));
		}
		r = AccessReadableOne(e->agent_id, e->rtype, rids[i], e->edit);
		if (r < 0)
		{
			PopActiveSnapshot();
			return (Datum) 0;	/* a custom ACL function: not kept anyway */
		}
		if (e->elemtype == INT8OID)
		{
			/* sorted: bisection, and the insertion point */
			int			lo = 0;
			int			hi = n;

			while (lo < hi)
			{
				int			mid = lo + (hi - lo) / 2;

				if (DatumGetInt64(elems[mid]) < rid_int)
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo < n && DatumGetInt64(elems[lo]) == rid_int)
				at = lo;
			else if (r == 1)
			{
				memmove(&elems[lo + 1], &elems[lo], sizeof(Datum) * (n - lo));
				elems[lo] = Int64GetDatum(rid_int);
				n++;
			}
		}
		else
		{
			for (j = 0; j < n && at < 0; j++)
				if (ElemIsId(elems[j], e->elemtype, rids[i], rid_int, rid_uuid))
					at = j;
			if (r == 1 && at < 0)
				elems[n++] = e->elemtype == UUIDOID ? rid_uuid : CStringGetTextDatum(rids[i]);
		}
		if (r == 0 && at >= 0)
		{
			memmove(&elems[at], &elems[at + 1], sizeof(Datum) * (n - at - 1));
			n--;
		}
	}
	PopActiveSnapshot();
	return PointerGetDatum(construct_array(elems, n, e->elemtype, typlen, typbyval, typalign));
}

/* may the set outlive the statement through the access generation? */
static bool
CanKeepAcrossStatements(void)
{
	return ShmemAvailable() && !IsolationUsesXactSnapshot() &&
		!RecoveryInProgress() && !IsInParallelMode() &&
		!AccessChangedInXact() && !AccessOnCitus();
}

/* the number of elements of an array datum */
static int
ArrayCount(Datum arr)
{
	ArrayType  *a = DatumGetArrayTypeP(arr);

	return ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a));
}

/*
 * The readable set of an agent for a type and mode as an array of elemtype,
 * kept while it cannot have changed (see above).  Returns a copy in the
 * caller's memory context.  With count != NULL, only the number of ids is
 * returned there (and the result is (Datum) 0): no copy is made.
 */
Datum
AllowlistIdsArrayOrCount(int64 agent_id, const char *rtype, bool edit, Oid elemtype, int *count,
						bool kept_only)
{
	Oid			access_rel = AccessRelid();
	IdsEntry   *e = AllowlistFindEntry(agent_id, rtype, edit, elemtype, access_rel);
	MemoryContext scratch;
	MemoryContext old;
	Datum		arr;
	bool		custom_acl = false;

	if (!ActiveSnapshotSet())
		elog(ERROR, "pg_agents: the readable set needs an active snapshot");
	/* an agent the session may not name has no set, kept or not */
	if (!AccessAgentIdVisible(agent_id))
	{
		if (count)
		{
			*count = 0;
			return (Datum) 0;
		}
		return PointerGetDatum(construct_empty_array(elemtype));
	}

	scratch = AllocSetContextCreate(CurrentMemoryContext, "pg_agents readable set",
									ALLOCSET_DEFAULT_SIZES);
	if (CanKeepAcrossStatements())
	{
		uint64		gen;
		uint64		pubseq;
		TransactionId inflight[PG_AGENTS_ACCESS_INFLIGHT];
		uint64		inflight_seq[PG_AGENTS_ACCESS_INFLIGHT];
		int			ninflight;
		bool		keep = AccessSampleSeq(&gen, &pubseq, inflight, inflight_seq,
											   &ninflight);
		bool		patched = false;
		bool		unchanged = false;
		char	   *owner = NULL;
		char	   *workspace = NULL;
		bool		live = false;
		Datum		base = (Datum) 0;

		if (keep && e != NULL && e->shared && e->gen == gen)
		{
			int			i;
			bool		valid = true;

			for (i = 0; i < e->ninflight && valid; i++)
				valid = TransactionIdIsInProgress(e->inflight[i]);
			if (valid)
			{
				MemoryContextDelete(scratch);
				if (count == NULL)
					ids_reused++;	/* plan-time estimates are not uses */
				if (count)
				{
					*count = ArrayCount(e->array);
					return (Datum) 0;
				}
				if (ids_borrow)
				{
					ids_borrowed = e;
					return e->array;
				}
				return PointerGetDatum(DatumGetArrayTypePCopy(e->array));
			}
		}
		/*
		 * Access data changed since the set was computed: what changed is in
		 * the change log (the transactions in flight at the last sample, and
		 * those published since).  A set the changes do not concern is still
		 * good; one they concern at a few resources is patched (those decided
		 * again under a snapshot taken after this sample); otherwise it is
		 * computed afresh.
		 */
		if (keep && e != NULL && e->shared)
		{
			old = MemoryContextSwitchTo(scratch);
			arr = PatchKeptSet(e, pubseq, &unchanged, &live, &base);
			/* the owner and workspace are the same: another is not patched */
			owner = e->owner ? pstrdup(e->owner) : NULL;
			workspace = e->workspace ? pstrdup(e->workspace) : NULL;
			MemoryContextSwitchTo(old);
			patched = arr != (Datum) 0;
		}
		if (!patched)
		{
			if (kept_only)
			{
				MemoryContextDelete(scratch);
				return (Datum) 0;
			}
			/* compute under a snapshot taken after the sample */
			old = MemoryContextSwitchTo(scratch);
			PushActiveSnapshot(GetLatestSnapshot());
			arr = ComputeIdsArray(agent_id, rtype, edit, elemtype, &custom_acl);
			(void) AccessAgentState(agent_id, &owner, &workspace, &live);
			base = (Datum) 0;	/* live: the set itself; else not known */
			PopActiveSnapshot();
			MemoryContextSwitchTo(old);
		}
		if (keep && !custom_acl)
		{
			e = NewEntry(e, agent_id, rtype, edit, elemtype, access_rel, arr);
			e->shared = true;
			e->gen = gen;
			e->pubseq = pubseq;
			e->owner = owner ? MemoryContextStrdup(e->cxt, owner) : NULL;
			e->workspace = workspace ? MemoryContextStrdup(e->cxt, workspace) : NULL;
			e->live = live;
			if (!live && base != (Datum) 0)
			{
				MemoryContext ecxt = MemoryContextSwitchTo(e->cxt);

				e->base = PointerGetDatum(DatumGetArrayTypePCopy(base));
				MemoryContextSwitchTo(ecxt);
			}
			e->ninflight = ninflight;
			if (ninflight > 0)
			{
				e->inflight = MemoryContextAlloc(e->cxt, sizeof(TransactionId) * ninflight);
				memcpy(e->inflight, inflight, sizeof(TransactionId) * ninflight);
				e->inflight_seq = MemoryContextAlloc(e->cxt, sizeof(uint64) * ninflight);
				memcpy(e->inflight_seq, inflight_seq, sizeof(uint64) * ninflight);
			}
		}
		else if (e != NULL)
			DropEntry(e);
		if (unchanged)
		{
			/* still good: a reuse, as if the generation had not moved */
			if (count == NULL)
				ids_reused++;
			if (count)
			{
				*count = ArrayCount(arr);
				arr = (Datum) 0;
			}
			else
				arr = PointerGetDatum(DatumGetArrayTypePCopy(arr));
			MemoryContextDelete(scratch);
			return arr;
		}
	}
	else
	{
		IdsSnapKey	key;

		IdsSnapKeyFor(GetActiveSnapshot(), &key);
		if (e != NULL && !e->shared && memcmp(&key, &e->key, sizeof(key)) == 0)
		{
			MemoryContextDelete(scratch);
			if (count == NULL)
				ids_reused++;
			if (count)
			{
				*count = ArrayCount(e->array);
				return (Datum) 0;
			}
			if (ids_borrow)
			{
				ids_borrowed = e;
				return e->array;
			}
			return PointerGetDatum(DatumGetArrayTypePCopy(e->array));
		}
		if (kept_only)
		{
			MemoryContextDelete(scratch);
			return (Datum) 0;
		}
		old = MemoryContextSwitchTo(scratch);
		arr = ComputeIdsArray(agent_id, rtype, edit, elemtype, &custom_acl);
		MemoryContextSwitchTo(old);
		e = NewEntry(e, agent_id, rtype, edit, elemtype, access_rel, arr);
		e->key = key;
	}
	ids_computed++;
	if (count)
	{
		*count = ArrayCount(arr);
		arr = (Datum) 0;
	}
	else
		arr = PointerGetDatum(DatumGetArrayTypePCopy(arr));
	MemoryContextDelete(scratch);
	return arr;
}

/* The readable set of these arguments, kept, patched or computed. */
Datum
AllowlistIdsArray(int64 agent_id, const char *rtype, bool edit, Oid elemtype)
{
	return AllowlistIdsArrayOrCount(agent_id, rtype, edit, elemtype, NULL, false);
}

/* the kept set, if it is still good, else (Datum) 0: nothing is computed */
Datum
AllowlistIdsKept(int64 agent_id, const char *rtype, bool edit, Oid elemtype)
{
	return AllowlistIdsArrayOrCount(agent_id, rtype, edit, elemtype, NULL, true);
}

/*
 * The kept set like AllowlistIdsKept, but when it is the entry's own array
 * (kept as it was), that array itself, not a copy: *from is then the entry
 * and *epoch its epoch, and the array is good while the entry's epoch is the
 * same (the caller checks before each use).  Otherwise *from is NULL and the
 * result, if any, a copy in the current memory context.
 */
Datum
AllowlistIdsKeptBorrowed(int64 agent_id, const char *rtype, bool edit, Oid elemtype,
						 IdsEntry **from, uint64 *epoch)
{
	Datum		arr;

	ids_borrow = true;
	ids_borrowed = NULL;
	PG_TRY();
	{
		arr = AllowlistIdsArrayOrCount(agent_id, rtype, edit, elemtype, NULL, true);
	}
	PG_FINALLY();
	{
		ids_borrow = false;
	}
	PG_END_TRY();
	*from = ids_borrowed;
	*epoch = ids_borrowed ? ids_borrowed->epoch : 0;
	ids_borrowed = NULL;
	return arr;
}

/*
 * An estimate of the size of the set: that of the last set computed for
 * these arguments, good or not any more; -1 if there is none.
 */
int
AllowlistIdsEstimate(int64 agent_id, const char *rtype, bool edit, Oid elemtype)
{
	IdsEntry   *e;

	/* not even the size of the set of an agent the session may not name */
	if (!AccessAgentIdVisible(agent_id))
		return -1;
	e = AllowlistFindEntry(agent_id, rtype, edit, elemtype, AccessRelid());
	return e ? ArrayCount(e->array) : -1;
}

/*
 * agent.readable_set_stats(OUT computed bigint, OUT reused bigint): how many
 * readable sets this backend has computed, and how many it has reused.
 */
Datum
pg_agents_readable_set_stats(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[2];
	bool		nulls[2] = {false, false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "pg_agents: readable_set_stats must return a row");
	tupdesc = BlessTupleDesc(tupdesc);
	values[0] = Int64GetDatum(ids_computed);
	values[1] = Int64GetDatum(ids_reused);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/* a text column of a row into buf (at most PG_AGENTS_ACCESS_ITEM_LEN - 1 bytes) */
static bool
RowText(HeapTuple tup, TupleDesc desc, const char *col, char *buf)
{
	int			att = SPI_fnumber(desc, col);
	bool		isnull;
	Datum		d;
	text	   *t;
	int			len;

	if (att <= 0)
		return false;
	d = heap_getattr(tup, att, desc, &isnull);
	if (isnull)
		return false;
	t = DatumGetTextPP(d);
	len = VARSIZE_ANY_EXHDR(t);
	if (len >= PG_AGENTS_ACCESS_ITEM_LEN || memchr(VARDATA_ANY(t), '\0', len) != NULL)
		return false;
	memcpy(buf, VARDATA_ANY(t), len);
	buf[len] = '\0';
	return true;
}

/*
 * A row of an application table registered as the rows of collections
 * (agent.register_resource_table with a parent installs this trigger with
 * two arguments: the resource type and the id column): the resource it is
 * changes (added, removed, or moved to another collection), so kept sets of
 * its type decide it again.  An id that does not fit an item, or a null
 * one, is an undescribed change.
 */
static void
NoteRegisteredRow(Trigger *trig, Relation rel, HeapTuple tup)
{
	TupleDesc	desc = RelationGetDescr(rel);
	PgAgentsAccessItem it;
	int			att = SPI_fnumber(desc, trig->tgargs[1]);
	char	   *rid = att > 0 ? SPI_getvalue(tup, desc, att) : NULL;

	memset(&it, 0, sizeof(it));
	it.kind = PGA_CHANGE_RESOURCE;
	if (rid == NULL || strlen(rid) >= PG_AGENTS_ACCESS_ITEM_LEN ||
		strlen(trig->tgargs[0]) >= PG_AGENTS_ACCESS_ITEM_LEN)
	{
		AccessNoteChange();
		return;
	}
	strlcpy(it.rtype, trig->tgargs[0], sizeof(it.rtype));
	strlcpy(it.rid, rid, sizeof(it.rid));
	pfree(rid);
	AccessNoteItem(&it);
}

/*
 * The bigint column col of tup in *out; false when it is missing, not bigint
 * or null.
 */
static bool
RowInt8(HeapTuple tup, TupleDesc desc, const char *col, int64 *out)
{
	int			att = SPI_fnumber(desc, col);
	bool		isnull;
	Datum		d;

	if (att <= 0 || TupleDescAttr(desc, att - 1)->atttypid != INT8OID)
		return false;
	d = heap_getattr(tup, att, desc, &isnull);
	if (isnull)
		return false;
	*out = DatumGetInt64(d);
	return true;
}

/* describe one changed row of agent.access, agent.resource_acl or agent.agents */
static void
NoteAccessRow(Relation rel, HeapTuple tup)
{
	const char *name = RelationGetRelationName(rel);
	TupleDesc	desc = RelationGetDescr(rel);
	PgAgentsAccessItem it;

	memset(&it, 0, sizeof(it));
	if (strcmp(name, "access") == 0)
	{
		if (!RowInt8(tup, desc, "agent_id", &it.agent_id))
		{
			AccessNoteChange();
			return;
		}
		it.kind = PGA_CHANGE_GRANT;
		/* a workspace_shared grant, or one that does not fit: the whole agent */
		if (!RowText(tup, desc, "resource_type", it.rtype) ||
			!RowText(tup, desc, "resource_id", it.rid) ||
			strcmp(it.rtype, "workspace_shared") == 0)
		{
			it.kind = PGA_CHANGE_AGENT;
			it.rtype[0] = it.rid[0] = '\0';
		}
	}
	else if (strcmp(name, "resource_acl") == 0)
	{
		it.kind = PGA_CHANGE_RESOURCE;
		if (!RowText(tup, desc, "resource_type", it.rtype) ||
			!RowText(tup, desc, "resource_id", it.rid))
		{
			AccessNoteChange();
			return;
		}
	}
	else if (strcmp(name, "group_members") == 0)
	{
		/* the groups of a user: rid the user, rtype the group ("" unknown) */
		it.kind = PGA_CHANGE_USER;
		if (!RowText(tup, desc, "user_id", it.rid))
		{
			AccessNoteChange();
			return;
		}
		if (!RowText(tup, desc, "group_id", it.rtype))
			it.rtype[0] = '\0';
	}
	else if (strcmp(name, "agents") == 0)
	{
		it.kind = PGA_CHANGE_AGENT;
		if (!RowInt8(tup, desc, "id", &it.agent_id))
		{
			AccessNoteChange();
			return;
		}
	}
	else
	{
		AccessNoteChange();
		return;
	}
	AccessNoteItem(&it);
}

/* is column col the same in both rows (byte for byte; a missing one is not)? */
static bool
RowColumnSame(HeapTuple a, HeapTuple b, TupleDesc desc, const char *col)
{
	int			att = SPI_fnumber(desc, col);
	Form_pg_attribute attr;
	bool		anull;
	bool		bnull;
	Datum		ad;
	Datum		bd;

	if (att <= 0)
		return false;
	attr = TupleDescAttr(desc, att - 1);
	ad = heap_getattr(a, att, desc, &anull);
	bd = heap_getattr(b, att, desc, &bnull);
	if (anull || bnull)
		return anull && bnull;
	return datumIsEqual(ad, bd, attr->attbyval, attr->attlen);
}

/*
 * Describe an update of an agent.agents row.  Of the row, the readable set
 * reads the owner, the workspace and whether the agent is suspended or
 * deleted (src/access/access_readable.c): an update that leaves those (and the id)
 * as they were changes no one's access and is not noted at all (a status
 * set to what it was, an updated_at, a name or instructions written with
 * them); one that changes them is noted as a change of the agent's row, so
 * that kept sets read it again (PatchKeptSet: a suspension or deletion
 * empties the set and a resumption restores it; another owner or workspace
 * makes it computed afresh); a changed id changes both agents as a whole.
 */
static void
NoteAgentUpdate(Relation rel, HeapTuple oldtup, HeapTuple newtup)
{
	TupleDesc	desc = RelationGetDescr(rel);
	PgAgentsAccessItem it;
	int64		oldid;

	memset(&it, 0, sizeof(it));
	if (!RowInt8(oldtup, desc, "id", &oldid) || !RowInt8(newtup, desc, "id", &it.agent_id) ||
		oldid != it.agent_id)
	{
		NoteAccessRow(rel, oldtup);
		NoteAccessRow(rel, newtup);
		return;
	}
	if (RowColumnSame(oldtup, newtup, desc, "workspace_id") &&
		RowColumnSame(oldtup, newtup, desc, "owner_id") &&
		RowColumnSame(oldtup, newtup, desc, "status") &&
		RowColumnSame(oldtup, newtup, desc, "deleted_at"))
		return;
	it.kind = PGA_CHANGE_AGENT_ROW;
	AccessNoteItem(&it);
}

/*
 * Does a row trigger calling this same function, enabled as this statement
 * trigger is, describe the rows of this statement's event?  (Then the
 * statement has nothing to add; otherwise its change is undescribed.)
 */
static bool
RowTriggerDescribes(TriggerData *td, Oid fn)
{
	TriggerDesc *trigdesc = td->tg_relation->trigdesc;
	Trigger    *self = td->tg_trigger;
	int16		event;
	int			i;

	if (TRIGGER_FIRED_BY_INSERT(td->tg_event))
		event = TRIGGER_TYPE_INSERT;
	else if (TRIGGER_FIRED_BY_DELETE(td->tg_event))
		event = TRIGGER_TYPE_DELETE;
	else if (TRIGGER_FIRED_BY_UPDATE(td->tg_event))
		event = TRIGGER_TYPE_UPDATE;
	else
		return false;			/* TRUNCATE */
	if (trigdesc == NULL)
		return false;
	for (i = 0; i < trigdesc->numtriggers; i++)
	{
		Trigger    *t = &trigdesc->triggers[i];

		if (t->tgfoid != fn || t->tgenabled != self->tgenabled ||
			!TRIGGER_TYPE_MATCHES(t->tgtype, TRIGGER_TYPE_ROW, TRIGGER_TYPE_AFTER, event) ||
			t->tgqual != NULL)
			continue;
		/* an UPDATE OF row trigger must cover this one's columns */
		if (event == TRIGGER_TYPE_UPDATE && t->tgnattr > 0)
		{
			int			a;
			int			b;
			bool		covers = self->tgnattr > 0;

			for (a = 0; a < self->tgnattr && covers; a++)
			{
				covers = false;
				for (b = 0; b < t->tgnattr && !covers; b++)
					covers = t->tgattr[b] == self->tgattr[a];
			}
			if (!covers)
				continue;
		}
		return true;
	}
	return false;
}

/*
 * agent._access_changed() RETURNS trigger: statement and row trigger on the
 * access tables; the transaction changes access data (src/access/access_gen.c).  As a
 * row trigger (agent.access, agent.resource_acl, agent.agents,
 * agent.group_members) it describes what the row changes, so that kept
 * readable sets it does not concern stay good and those it concerns are
 * patched; as a statement trigger, a change that no row trigger described
 * (TRUNCATE, agent.access_config, a row trigger missing or disabled) makes
 * every kept set be computed afresh.
 */
Datum
pg_agents_access_changed(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("agent._access_changed() must be called as a trigger")));
	if (TRIGGER_FIRED_FOR_ROW(td->tg_event))
	{
		if (!TRIGGER_FIRED_AFTER(td->tg_event))
			AccessNoteChange();
		else if (td->tg_trigger->tgnargs == 2)
		{
			NoteRegisteredRow(td->tg_trigger, td->tg_relation, td->tg_trigtuple);
			if (TRIGGER_FIRED_BY_UPDATE(td->tg_event))
				NoteRegisteredRow(td->tg_trigger, td->tg_relation, td->tg_newtuple);
		}
		else if (TRIGGER_FIRED_BY_UPDATE(td->tg_event) &&
				 strcmp(RelationGetRelationName(td->tg_relation), "agents") == 0)
			NoteAgentUpdate(td->tg_relation, td->tg_trigtuple, td->tg_newtuple);
		else
		{
			NoteAccessRow(td->tg_relation, td->tg_trigtuple);
			if (TRIGGER_FIRED_BY_UPDATE(td->tg_event))
				NoteAccessRow(td->tg_relation, td->tg_newtuple);
		}
		return PointerGetDatum(NULL);
	}
	if (!RowTriggerDescribes(td, fcinfo->flinfo->fn_oid))
		AccessNoteChange();
	return PointerGetDatum(NULL);
}

/*
 * agent._allowlist_ids_text / _int8 / _uuid(resource_type text, mode text):
 * the ids the session's agent may read (or edit) among the resources of the
 * type, as an array of the function's element type; empty when the session
 * does not act as an agent.  Internal to the allowlist policies.
 */
Datum
pg_agents_allowlist_ids(PG_FUNCTION_ARGS)
{
	Oid			rettype = get_fn_expr_rettype(fcinfo->flinfo);
	Oid			elemtype = OidIsValid(rettype) ? get_element_type(rettype) : InvalidOid;
	char	   *rtype;
	bool		edit;

	if (elemtype != TEXTOID && elemtype != INT8OID && elemtype != UUIDOID)
		elog(ERROR, "pg_agents: _allowlist_ids must return text[], bigint[] or uuid[]");
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("resource_type and mode must not be NULL")));
	rtype = text_to_cstring(PG_GETARG_TEXT_PP(0));
	edit = AllowlistParseMode(PG_GETARG_TEXT_PP(1));
	if (!GucActorIsAgent(pg_agents_actor))
		PG_RETURN_ARRAYTYPE_P(construct_empty_array(elemtype));
	PG_RETURN_DATUM(AllowlistIdsArray(strtoll(pg_agents_actor + 6, NULL, 10),
									 rtype, edit, elemtype));
}

/*
 * agent._readable_ids(agent_id bigint, resource_type text, mode text)
 * RETURNS text[]: the readable set of any agent, for
 * agent.readable_resources (which checks who may ask).
 */
Datum
pg_agents_readable_ids(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("agent_id, resource_type and mode must not be NULL")));
	PG_RETURN_DATUM(AllowlistIdsArray(PG_GETARG_INT64(0),
									 text_to_cstring(PG_GETARG_TEXT_PP(1)),
									 AllowlistParseMode(PG_GETARG_TEXT_PP(2)), TEXTOID));
}

