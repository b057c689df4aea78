/*-------------------------------------------------------------------------
 *
 * allowlist.c
 *		Plan-time switch of the allowlist row-level security policies.
 *
 * The policies installed by agent.enable_allowlist() read
 *
 *		NOT agent._allowlist_active() OR id = ANY (ARRAY(<granted ids>))
 *
 * agent._allowlist_active() is declared IMMUTABLE so that the planner folds
 * it: in a session that does not act as an agent the whole policy folds to
 * true and disappears (the table is planned exactly as without row-level
 * security: GIN and trigram indexes stay usable); in a session acting as an
 * agent it folds to the indexable "id = ANY(...)" alone.
 *
 * Folding a setting into a plan is only correct if no plan outlives a change
 * of that setting, so the assign hook of pg_agents.actor invalidates every
 * cached plan of the backend (ResetPlanCache) whenever the session switches
 * between acting as an agent and not.  The agent id itself is never folded:
 * the granted ids are computed at execution time from
 * agent.current_agent_id(), so a plan made for one agent and run for another
 * still filters for the second one.
 *
 * The policies also fold agent._allowlist_custom_acl() (whether a custom ACL
 * function is configured), so a change of agent.access_config invalidates
 * every cached plan of every backend at commit (a statement trigger calling
 * pg_agents_allowlist_invalidate).
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
#include "compat.h"
#include "guc.h"
#include "relcheck.h"
#include "shmem.h"

PG_FUNCTION_INFO_V1(pg_agents_allowlist_active);
PG_FUNCTION_INFO_V1(pg_agents_allowlist_invalidate);
PG_FUNCTION_INFO_V1(pg_agents_allowlist_ids);
PG_FUNCTION_INFO_V1(pg_agents_readable_ids);
PG_FUNCTION_INFO_V1(pg_agents_access_changed);
PG_FUNCTION_INFO_V1(pg_agents_readable_set_stats);
PG_FUNCTION_INFO_V1(pg_agents_allowlist_has);
PG_FUNCTION_INFO_V1(pg_agents_allowlist_custom_acl);
PG_FUNCTION_INFO_V1(pg_agents_allowlist_support);
PG_FUNCTION_INFO_V1(pg_agents_ts_match);
PG_FUNCTION_INFO_V1(pg_agents_ts_match_support);
PG_FUNCTION_INFO_V1(pg_agents_like);
PG_FUNCTION_INFO_V1(pg_agents_ilike);
PG_FUNCTION_INFO_V1(pg_agents_like_support);

/*
 * agent._allowlist_active() RETURNS boolean IMMUTABLE: whether the session
 * acts as an agent.  Internal to the allowlist policies; see the header.
 */
Datum
pg_agents_allowlist_active(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(PgAgentsActorIsAgent(pg_agents_actor));
}

/*
 * agent._allowlist_custom_acl() RETURNS boolean IMMUTABLE: whether a custom
 * ACL function is configured (agent.access_config.acl_function), folded into
 * the plans of the policies.  Read under the latest snapshot and kept until
 * a relcache invalidation of agent.access_config or of every relation (what
 * agent._allowlist_invalidate sends when access_config changes, which also
 * drops the plans that folded it); an invalidation that arrives while it is
 * read makes the next call read again.
 */
static bool custom_acl_valid = false;
static bool custom_acl_value = false;
static bool custom_acl_callback = false;
static Oid	custom_acl_rel = InvalidOid;

/*
 * Relcache callback: forgets the kept answer of agent._allowlist_custom_acl()
 * on an invalidation of agent.access_config or of every relation.
 */
static void
CustomAclInvalidate(Datum arg, Oid relid)
{
	if (!OidIsValid(relid) || relid == custom_acl_rel)
		custom_acl_valid = false;
}

/*
 * agent._allowlist_custom_acl() (see above): true when a row of
 * agent.access_config has a non-null acl_function, false when none has, or
 * when the table does not exist (an answer that is not kept).  Scans the
 * table directly under the latest snapshot, without SPI.
 */
Datum
pg_agents_allowlist_custom_acl(PG_FUNCTION_ARGS)
{
	Oid			nsp;
	Oid			relid;
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tup;
	Snapshot	snap;
	AttrNumber	att;
	bool		found = false;

	if (custom_acl_valid)
		PG_RETURN_BOOL(custom_acl_value);
	if (!custom_acl_callback)
	{
		PgaRegisterRelcacheCallback(CustomAclInvalidate, (Datum) 0);
		custom_acl_callback = true;
	}
	custom_acl_valid = true;	/* an invalidation from here on clears it */
	nsp = get_namespace_oid("agent", true);
	relid = OidIsValid(nsp) ? get_relname_relid("access_config", nsp) : InvalidOid;
	custom_acl_rel = relid;
	if (!OidIsValid(relid))
	{
		custom_acl_valid = false;
		PG_RETURN_BOOL(false);
	}
	if (PgaCitusManaged(relid))
	{
		/* read through SPI, and not kept: its statement trigger fires on the nodes */
		custom_acl_valid = false;
		PG_RETURN_BOOL(PgaSpiCustomAcl());
	}
	att = get_attnum(relid, "acl_function");
	rel = table_open(relid, AccessShareLock);
	snap = RegisterSnapshot(GetLatestSnapshot());
	scan = systable_beginscan(rel, InvalidOid, false, snap, 0, NULL);
	while ((tup = systable_getnext(scan)) != NULL)
	{
		bool		isnull;

		if (att != InvalidAttrNumber)
			(void) heap_getattr(tup, att, RelationGetDescr(rel), &isnull);
		else
			isnull = true;
		if (!isnull)
			found = true;
	}
	systable_endscan(scan);
	UnregisterSnapshot(snap);
	table_close(rel, AccessShareLock);
	custom_acl_value = found;
	PG_RETURN_BOOL(found);
}

/*
 * agent._allowlist_invalidate(): statement trigger on agent.access_config.
 * Sends a relcache invalidation of every relation at commit, which makes every
 * backend drop its cached plans (they may hold a folded policy).
 */
Datum
pg_agents_allowlist_invalidate(PG_FUNCTION_ARGS)
{
	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("agent._allowlist_invalidate() must be called as a trigger")));
	CacheInvalidateRelcacheAll();
	return PointerGetDatum(NULL);
}

/* ------------------------------------------------------------------------
 * The readable set as a typed array, for the policies
 * ------------------------------------------------------------------------
 *
 * The SELECT policy of an integer id column reads
 *
 *		id = ANY ((SELECT agent._allowlist_ids_int8('page', 'read'))::bigint[])
 *
 * an InitPlan evaluated once per statement whose array feeds the index on the
 * id column.  The array is computed by PgAgentsReadableIds (access_readable.c, the
 * decision of agent.can_access for each candidate) and kept in the backend
 * for as long as the access data it was computed from cannot have changed.
 * Two ways to know:
 *
 * - kept across statements (READ COMMITTED, the library preloaded, not on a
 *   standby, the transaction has not changed access data itself, no custom
 *   ACL function): the access generation of src/access_gen.c is sampled, then the
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
typedef struct IdsSnapKey
{
	uint64		completions;
	TransactionId xmin;
	TransactionId xmax;
	uint32		xcnt;
	int32		subxcnt;
	bool		suboverflowed;
	bool		recovery;
	LocalTransactionId lxid;	/* 0 unless the transaction has written */
	CommandId	curcid;			/* likewise */
	TimestampTz stmt;			/* 0 unless Citus manages the access tables */
} IdsSnapKey;

typedef struct IdsEntry
{
	bool		used;
	int64		agent_id;
	bool		edit;
	Oid			elemtype;
	Oid			access_rel;		/* agent.access: another installation, another set */
	char	   *rtype;
	Datum		array;
	bool		shared;			/* kept by the access generation, else by snapshot */
	uint64		gen;			/* shared: the generation sampled */
	int			ninflight;		/* shared: access writers in flight at the sample */
	TransactionId *inflight;
	uint64	   *inflight_seq;	/* shared: their records in the change log */
	uint64		pubseq;			/* shared: the change log's last seq at the sample */
	char	   *owner;			/* shared: the agent's owner (its groups count) */
	char	   *workspace;		/* shared: the agent's workspace */
	bool		live;			/* shared: the agent was live (else array is empty) */
	Datum		base;			/* shared, not live: the set as if it were live, or 0 */
	int			stale_decisions;	/* rows decided one by one since it went stale */
	IdsSnapKey	key;			/* not shared: the snapshot */
	MemoryContext cxt;			/* holds all of the entry */
} IdsEntry;

#define IDS_CACHE_ENTRIES 8

static MemoryContext ids_cxt = NULL;
static IdsEntry ids_cache[IDS_CACHE_ENTRIES];
static int64 ids_computed = 0;	/* statistics of this backend (patched sets count) */
static int64 ids_reused = 0;
static int	ids_next = 0;		/* round-robin replacement */

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
	if (PgAgentsAccessOnCitus())
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
static bool
ParseMode(text *mode)
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
static int
CompareInt64(const void *a, const void *b)
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
		qsort(v, m, sizeof(int64), CompareInt64);
		for (i = 0; i < m; i++)
			elems[i] = Int64GetDatum(v[i]);
	}
	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	return PointerGetDatum(construct_array(elems, m, elemtype, typlen, typbyval, typalign));
}

/* the entry for these arguments, or NULL */
static IdsEntry *
FindEntry(int64 agent_id, const char *rtype, bool edit, Oid elemtype, Oid access_rel)
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
	MemoryContextSwitchTo(oldcxt);
	e->used = true;
	return e;
}

/* compute the set as an array under the active snapshot, in the current context */
static Datum
ComputeIdsArray(int64 agent_id, const char *rtype, bool edit, Oid elemtype, bool *custom_acl)
{
	int			n;
	char	  **ids = PgAgentsReadableIds(agent_id, rtype, edit, &n, custom_acl);

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

static bool TextIs(text *t, const char *s);

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

	if (!PgAgentsAccessChangeGet(seq, &c) || c.all)
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
			if (PgAgentsTypeHasParent(e->rtype, NULL))
				return false;
			/*
			 * The owner joined or left group it->rtype: what changes is its
			 * level on the resources that hold an ACL row for that group.
			 */
			if (e->owner == NULL || it->rtype[0] == '\0' || *nrids >= PATCH_MAX_RIDS)
				return false;
			principal = psprintf("group:%s", it->rtype);
			n = PgAgentsAclResourcesOf(principal, e->rtype, PATCH_MAX_RIDS - *nrids,
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
			if (PgAgentsTypeHasParent(e->rtype, it->rtype))
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
	return TextIs(DatumGetTextPP(d), rid);
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
		r = PgAgentsReadableOne(e->agent_id, e->rtype, rids[i], e->edit);
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
		ok = PgAgentsAgentState(e->agent_id, &owner, &workspace, live) &&
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
		r = PgAgentsReadableOne(e->agent_id, e->rtype, rids[i], e->edit);
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
	return PgAgentsShmemAvailable() && !IsolationUsesXactSnapshot() &&
		!RecoveryInProgress() && !IsInParallelMode() &&
		!PgAgentsAccessChangedInXact() && !PgAgentsAccessOnCitus();
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
static Datum
ReadableIdsArrayOrCount(int64 agent_id, const char *rtype, bool edit, Oid elemtype, int *count,
						bool kept_only)
{
	Oid			access_rel = PgAgentsAccessRelid();
	IdsEntry   *e = FindEntry(agent_id, rtype, edit, elemtype, access_rel);
	MemoryContext scratch;
	MemoryContext old;
	Datum		arr;
	bool		custom_acl = false;

	if (!ActiveSnapshotSet())
		elog(ERROR, "pg_agents: the readable set needs an active snapshot");
	/* an agent the session may not name has no set, kept or not */
	if (!PgAgentsAgentVisible(agent_id))
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
		bool		keep = PgAgentsAccessSampleSeq(&gen, &pubseq, inflight, inflight_seq,
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
			(void) PgAgentsAgentState(agent_id, &owner, &workspace, &live);
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
static Datum
ReadableIdsArray(int64 agent_id, const char *rtype, bool edit, Oid elemtype)
{
	return ReadableIdsArrayOrCount(agent_id, rtype, edit, elemtype, NULL, false);
}

/* the kept set, if it is still good, else (Datum) 0: nothing is computed */
static Datum
ReadableIdsKept(int64 agent_id, const char *rtype, bool edit, Oid elemtype)
{
	return ReadableIdsArrayOrCount(agent_id, rtype, edit, elemtype, NULL, true);
}

/*
 * An estimate of the size of the set: that of the last set computed for
 * these arguments, good or not any more; -1 if there is none.
 */
static int
ReadableIdsEstimate(int64 agent_id, const char *rtype, bool edit, Oid elemtype)
{
	IdsEntry   *e;

	/* not even the size of the set of an agent the session may not name */
	if (!PgAgentsAgentVisible(agent_id))
		return -1;
	e = FindEntry(agent_id, rtype, edit, elemtype, PgAgentsAccessRelid());
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
		PgAgentsNoteAccessChange();
		return;
	}
	strlcpy(it.rtype, trig->tgargs[0], sizeof(it.rtype));
	strlcpy(it.rid, rid, sizeof(it.rid));
	pfree(rid);
	PgAgentsNoteAccessItem(&it);
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
			PgAgentsNoteAccessChange();
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
			PgAgentsNoteAccessChange();
			return;
		}
	}
	else if (strcmp(name, "group_members") == 0)
	{
		/* the groups of a user: rid the user, rtype the group ("" unknown) */
		it.kind = PGA_CHANGE_USER;
		if (!RowText(tup, desc, "user_id", it.rid))
		{
			PgAgentsNoteAccessChange();
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
			PgAgentsNoteAccessChange();
			return;
		}
	}
	else
	{
		PgAgentsNoteAccessChange();
		return;
	}
	PgAgentsNoteAccessItem(&it);
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
 * deleted (src/access_readable.c): an update that leaves those (and the id)
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
	PgAgentsNoteAccessItem(&it);
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
 * access tables; the transaction changes access data (src/access_gen.c).  As a
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
			PgAgentsNoteAccessChange();
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
		PgAgentsNoteAccessChange();
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
	edit = ParseMode(PG_GETARG_TEXT_PP(1));
	if (!PgAgentsActorIsAgent(pg_agents_actor))
		PG_RETURN_ARRAYTYPE_P(construct_empty_array(elemtype));
	PG_RETURN_DATUM(ReadableIdsArray(strtoll(pg_agents_actor + 6, NULL, 10),
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
	PG_RETURN_DATUM(ReadableIdsArray(PG_GETARG_INT64(0),
									 text_to_cstring(PG_GETARG_TEXT_PP(1)),
									 ParseMode(PG_GETARG_TEXT_PP(2)), TEXTOID));
}

/* ------------------------------------------------------------------------
 * The policies' membership test, and what the planner knows about it
 * ------------------------------------------------------------------------
 *
 * The SELECT policy of an id column reads (folded for an agent session)
 *
 *		agent._allowlist_has(id, 'page', 'read')
 *
 * a per-row membership test of the session's agent's readable set (the
 * array above, kept while it cannot have changed, searched by bisection),
 * with a planner support function that
 *
 * - estimates its selectivity from the real size of the readable set (so
 *   the planner knows a search for a rare term is best started from the
 *   text index, and a broad one from the id index);
 * - turns it into an index condition on a btree index of the id column,
 *   "id = ANY (agent._allowlist_ids_int8('page', 'read'))", whose cost is
 *   one probe per readable id (the support function of _allowlist_ids_*).
 *
 * So an agent's query is planned either way by cost: probe the id index
 * with the readable set, or scan by the query's own conditions and filter
 * with the set.  What reaches the results (rows, counts, ranks) is the same.
 */

/*
 * Rows decided one by one before the readable set is computed: a decision
 * costs about half of what the set costs per id it holds, so at most twice
 * the size of the last set computed (at least HAS_PERROW_MIN): a search
 * never pays more than twice the cheaper of the two ways.  The count runs
 * across the statements that find the set not kept (the entry's
 * stale_decisions), so that selective searches after a change that makes
 * the set computed afresh do not decide row by row for ever: once they
 * have decided as many rows, the next one computes the set, kept again.
 */
#define HAS_PERROW_MIN 1000

typedef struct HasSet
{
	char		actor[32];		/* pg_agents.actor it was built for */
	char	   *workspace;		/* and pg_agents.workspace ("" none) */
	Oid			argtype;
	bool		edit;
	bool		perrow;			/* deciding row by row, no set yet */
	int			decisions;		/* rows decided so */
	int			perrow_max;		/* rows to decide so before computing the set */
	IdsEntry   *stale;			/* the entry not kept, whose stale_decisions count */
	MemoryContext stale_cxt;	/* its memory context then (still the same entry?) */
	int64		agent_id;
	Oid			elemtype;		/* INT8OID, UUIDOID or TEXTOID */
	char	   *rtype;
	char	   *mode;
	int			n;
	int64	   *ints;
	pg_uuid_t  *uuids;
	text	  **texts;
} HasSet;

/* qsort and bsearch comparator of uuids, bytewise. */
static int
CompareUuid(const void *a, const void *b)
{
	return memcmp(a, b, UUID_LEN);
}

/*
 * qsort and bsearch comparator of text pointers: shorter first, then bytewise
 * (an order for searching, not a collation).
 */
static int
CompareTextP(const void *a, const void *b)
{
	const text *x = *(text *const *) a;
	const text *y = *(text *const *) b;
	int			lx = VARSIZE_ANY_EXHDR(x);
	int			ly = VARSIZE_ANY_EXHDR(y);

	if (lx != ly)
		return lx < ly ? -1 : 1;
	return memcmp(VARDATA_ANY(x), VARDATA_ANY(y), lx);
}

/*
 * The element type of the readable set compared with an id of type argtype:
 * bigint for the integer types, uuid for uuid, text for anything else.
 */
static Oid
HasElemType(Oid argtype)
{
	switch (argtype)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
			return INT8OID;
		case UUIDOID:
			return UUIDOID;
		default:
			return TEXTOID;
	}
}

/* Whether t holds exactly the bytes of the C string s. */
static bool
TextIs(text *t, const char *s)
{
	int			len = VARSIZE_ANY_EXHDR(t);

	return (int) strlen(s) == len && memcmp(VARDATA_ANY(t), s, len) == 0;
}

/* fill the search structure from a readable set (an array of s->elemtype) */
static void
HasSetFill(HasSet *s, MemoryContext cxt, Datum arrd)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	ArrayType  *arr = DatumGetArrayTypeP(arrd);
	Datum	   *elems;
	bool	   *nulls;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	int			i;

	s->perrow = false;
	if (s->elemtype == INT8OID && !ARR_HASNULL(arr))
	{
		/* sorted by BuildIdsArray */
		s->n = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
		s->ints = palloc(sizeof(int64) * Max(s->n, 1));
		memcpy(s->ints, ARR_DATA_PTR(arr), sizeof(int64) * s->n);
		MemoryContextSwitchTo(old);
		return;
	}
	get_typlenbyvalalign(s->elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(arr, s->elemtype, typlen, typbyval, typalign, &elems, &nulls, &s->n);
	if (s->elemtype == INT8OID)
	{
		s->ints = palloc(sizeof(int64) * Max(s->n, 1));
		for (i = 0; i < s->n; i++)
			s->ints[i] = DatumGetInt64(elems[i]);
		qsort(s->ints, s->n, sizeof(int64), CompareInt64);
	}
	else if (s->elemtype == UUIDOID)
	{
		s->uuids = palloc(sizeof(pg_uuid_t) * Max(s->n, 1));
		for (i = 0; i < s->n; i++)
			memcpy(&s->uuids[i], DatumGetUUIDP(elems[i]), sizeof(pg_uuid_t));
		qsort(s->uuids, s->n, sizeof(pg_uuid_t), CompareUuid);
	}
	else
	{
		s->texts = palloc(sizeof(text *) * Max(s->n, 1));
		for (i = 0; i < s->n; i++)
			s->texts[i] = DatumGetTextPP(elems[i]);
		qsort(s->texts, s->n, sizeof(text *), CompareTextP);
	}
	MemoryContextSwitchTo(old);
}

/*
 * The search structure for the agent: from the kept readable set when it is
 * still good; otherwise it starts deciding row by row (see
 * pg_agents_allowlist_has), in cxt.
 */
static HasSet *
HasSetBuild(MemoryContext cxt, int64 agent_id, const char *rtype, const char *mode,
			Oid elemtype)
{
	HasSet	   *s = MemoryContextAllocZero(cxt, sizeof(HasSet));
	Datum		kept;

	s->agent_id = agent_id;
	s->elemtype = elemtype;
	s->rtype = MemoryContextStrdup(cxt, rtype);
	s->mode = MemoryContextStrdup(cxt, mode);
	s->edit = ParseMode(cstring_to_text(mode));
	kept = ReadableIdsKept(agent_id, rtype, s->edit, elemtype);
	if (kept != (Datum) 0)
		HasSetFill(s, cxt, kept);
	else
	{
		int			n = ReadableIdsEstimate(agent_id, rtype, s->edit, elemtype);
		IdsEntry   *e = FindEntry(agent_id, rtype, s->edit, elemtype, PgAgentsAccessRelid());

		s->perrow = true;
		s->perrow_max = n > HAS_PERROW_MIN / 2 ? 2 * n : HAS_PERROW_MIN;
		if (e != NULL)
		{
			/* what earlier statements decided one by one since it went stale */
			s->perrow_max = Max(s->perrow_max - e->stale_decisions, 0);
			s->stale = e;
			s->stale_cxt = e->cxt;
		}
	}
	return s;
}

/* the canonical text form of an id of the policy's argument type */
static char *
IdText(FunctionCallInfo fcinfo, Oid argtype)
{
	switch (argtype)
	{
		case INT2OID:
			return psprintf("%d", (int) PG_GETARG_INT16(0));
		case INT4OID:
			return psprintf("%d", (int) PG_GETARG_INT32(0));
		case INT8OID:
			return psprintf(INT64_FORMAT, PG_GETARG_INT64(0));
		case UUIDOID:
			return DatumGetCString(DirectFunctionCall1(uuid_out, PG_GETARG_DATUM(0)));
		default:
			return text_to_cstring(PG_GETARG_TEXT_PP(0));
	}
}

/*
 * agent._allowlist_has(id <bigint|integer|smallint|uuid|text>, resource_type
 * text, mode text) RETURNS boolean: whether the id is in the readable set of
 * the session's agent (false when the session does not act as an agent).
 * The set is looked up once per call site and execution, like the InitPlan
 * it replaces.  Text ids compare byte for byte.
 */
Datum
pg_agents_allowlist_has(PG_FUNCTION_ARGS)
{
	HasSet	   *s = (HasSet *) fcinfo->flinfo->fn_extra;
	text	   *rt = PG_GETARG_TEXT_PP(1);
	text	   *md = PG_GETARG_TEXT_PP(2);
	Oid			elemtype;

	/* the same actor, type and mode as the set was built for? */
	if (s == NULL || pg_agents_actor == NULL || strcmp(s->actor, pg_agents_actor) != 0 ||
		strcmp(s->workspace, pg_agents_workspace ? pg_agents_workspace : "") != 0 ||
		!TextIs(rt, s->rtype) || !TextIs(md, s->mode))
	{
		Oid			argtype = get_fn_expr_argtype(fcinfo->flinfo, 0);

		if (!PgAgentsActorIsAgent(pg_agents_actor))
			PG_RETURN_BOOL(false);
		s = HasSetBuild(fcinfo->flinfo->fn_mcxt, strtoll(pg_agents_actor + 6, NULL, 10),
						text_to_cstring(rt), text_to_cstring(md), HasElemType(argtype));
		strlcpy(s->actor, pg_agents_actor, sizeof(s->actor));
		s->workspace = MemoryContextStrdup(fcinfo->flinfo->fn_mcxt,
										   pg_agents_workspace ? pg_agents_workspace : "");
		s->argtype = argtype;
		fcinfo->flinfo->fn_extra = s;
	}
	if (s->perrow)
	{
		/*
		 * The set is not kept (access data changed since it was computed):
		 * computing it costs a probe per grant, so the first rows are
		 * decided one by one (a probe each), as the set would decide them,
		 * which is cheaper for the candidates of a selective search; past
		 * perrow_max rows the set is computed after all.
		 */
		if (s->decisions < s->perrow_max)
		{
			char	   *rid = IdText(fcinfo, s->argtype);
			int			r = PgAgentsReadableOne(s->agent_id, s->rtype, rid, s->edit);

			pfree(rid);
			if (r >= 0)
			{
				s->decisions++;
				if (s->stale != NULL && s->stale->used && s->stale->cxt == s->stale_cxt)
					s->stale->stale_decisions++;
				PG_RETURN_BOOL(r == 1);
			}
		}
		HasSetFill(s, fcinfo->flinfo->fn_mcxt,
				   ReadableIdsArray(s->agent_id, s->rtype, s->edit, s->elemtype));
	}
	elemtype = s->elemtype;
	if (elemtype == INT8OID)
	{
		int64		v = s->argtype == INT2OID ? (int64) PG_GETARG_INT16(0) :
			s->argtype == INT4OID ? (int64) PG_GETARG_INT32(0) : PG_GETARG_INT64(0);
		int			lo = 0;
		int			hi = s->n - 1;

		while (lo <= hi)
		{
			int			mid = lo + (hi - lo) / 2;
			int64		m = s->ints[mid];

			if (m == v)
				PG_RETURN_BOOL(true);
			if (m < v)
				lo = mid + 1;
			else
				hi = mid - 1;
		}
		PG_RETURN_BOOL(false);
	}
	if (elemtype == UUIDOID)
		PG_RETURN_BOOL(bsearch(PG_GETARG_UUID_P(0), s->uuids, s->n, sizeof(pg_uuid_t),
							   CompareUuid) != NULL);
	{
		text	   *v = PG_GETARG_TEXT_PP(0);

		PG_RETURN_BOOL(bsearch(&v, s->texts, s->n, sizeof(text *), CompareTextP) != NULL);
	}
}

/* used when the size of the readable set cannot be known at plan time */
#define HAS_DEFAULT_SET_SIZE 1000.0

/*
 * The size of the session's agent's readable set for these (constant)
 * arguments, as the policy will see it: computed (or found kept) now, since
 * the statement needs it anyway.  Planning only estimates with it.
 */
static struct
{
	bool		valid;
	LocalTransactionId lxid;
	CommandId	cid;
	int64		agent_id;
	bool		edit;
	Oid			elemtype;
	char		rtype[128];
	int			n;
}			size_memo;

/*
 * The planner's estimate of the readable set's size for the rtype and mode
 * arguments of agent._allowlist_has: when both are constants and the session
 * acts as an agent, the size of the last set computed for them (else the set
 * is computed now, and kept), memoized per command; HAS_DEFAULT_SET_SIZE
 * otherwise.
 */
static double
ReadableSetSize(Node *rtype_arg, Node *mode_arg, Oid elemtype)
{
	Const	   *rt = (Const *) rtype_arg;
	Const	   *md = (Const *) mode_arg;
	char	   *mode;
	char	   *rtype;
	int64		agent_id;
	bool		edit;
	int			n = 0;

	if (rt == NULL || md == NULL || !IsA(rt, Const) || !IsA(md, Const) ||
		rt->constisnull || md->constisnull ||
		!PgAgentsActorIsAgent(pg_agents_actor) || !ActiveSnapshotSet())
		return HAS_DEFAULT_SET_SIZE;
	mode = TextDatumGetCString(md->constvalue);
	if (strcmp(mode, "read") != 0 && strcmp(mode, "edit") != 0)
		return HAS_DEFAULT_SET_SIZE;
	rtype = TextDatumGetCString(rt->constvalue);
	agent_id = strtoll(pg_agents_actor + 6, NULL, 10);
	edit = strcmp(mode, "edit") == 0;
	/* the planner asks several times per statement: once per command */
	if (size_memo.valid && size_memo.lxid == PGA_MY_LXID &&
		size_memo.cid == GetCurrentCommandId(false) && size_memo.agent_id == agent_id &&
		size_memo.edit == edit && size_memo.elemtype == elemtype &&
		strcmp(size_memo.rtype, rtype) == 0)
		return (double) size_memo.n;
	/*
	 * The size of the last set computed, even if it is not good any more
	 * (an estimate); only when there is none is the set computed now (the
	 * statement will likely need it, and it is kept).
	 */
	n = ReadableIdsEstimate(agent_id, rtype, edit, elemtype);
	if (n < 0)
		(void) ReadableIdsArrayOrCount(agent_id, rtype, edit, elemtype, &n, false);
	if (strlen(rtype) < sizeof(size_memo.rtype))
	{
		size_memo.valid = true;
		size_memo.lxid = PGA_MY_LXID;
		size_memo.cid = GetCurrentCommandId(false);
		size_memo.agent_id = agent_id;
		size_memo.edit = edit;
		size_memo.elemtype = elemtype;
		strcpy(size_memo.rtype, rtype);
		size_memo.n = n;
	}
	return (double) n;
}

/* agent._allowlist_ids_<type>(text, text) */
static Oid
IdsFunction(Oid elemtype)
{
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	const char *name = elemtype == INT8OID ? "_allowlist_ids_int8" :
		elemtype == UUIDOID ? "_allowlist_ids_uuid" : "_allowlist_ids_text";

	return LookupFuncName(list_make2(makeString("agent"), makeString(pstrdup(name))),
						  2, argtypes, true);
}

/*
 * agent._allowlist_support(internal): planner support of agent._allowlist_has
 * (selectivity, cost, index condition) and of agent._allowlist_ids_* (cost).
 */
Datum
pg_agents_allowlist_support(PG_FUNCTION_ARGS)
{
	Node	   *rawreq = (Node *) PG_GETARG_POINTER(0);

	if (IsA(rawreq, SupportRequestSelectivity))
	{
		SupportRequestSelectivity *req = (SupportRequestSelectivity *) rawreq;
		double		n;
		double		tuples = 0;
		int			relid;
		Node	   *arg0;

		if (list_length(req->args) != 3)
			PG_RETURN_POINTER(NULL);
		arg0 = linitial(req->args);
		n = ReadableSetSize(lsecond(req->args), lthird(req->args),
							HasElemType(exprType(arg0)));
		if (bms_get_singleton_member(pull_varnos(req->root, arg0), &relid) &&
			relid > 0 && relid < req->root->simple_rel_array_size &&
			req->root->simple_rel_array[relid] != NULL)
			tuples = req->root->simple_rel_array[relid]->tuples;
		if (tuples < 1)
			tuples = Max(n * 10, 1000);
		req->selectivity = Min(1.0, Max(n, 1.0) / tuples);
		PG_RETURN_POINTER(req);
	}
	if (IsA(rawreq, SupportRequestCost))
	{
		SupportRequestCost *req = (SupportRequestCost *) rawreq;
		FuncExpr   *fe = (FuncExpr *) req->node;

		if (get_func_rettype(req->funcid) == BOOLOID)
		{
			/*
			 * A bisection of the readable set; charged like the fetch of the
			 * row it filters, which the planner's bitmap and sequential scan
			 * costs underestimate against the probes of the id index (the
			 * figure that chooses the faster plan in bench/rls.sh).
			 */
			req->startup = 0;
			req->per_tuple = 10 * cpu_tuple_cost;
		}
		else
		{
			/*
			 * The readable set in an index condition: one probe of the id
			 * index and one heap fetch per id, which the index's own
			 * estimate (ten elements for an array it cannot see) misses.
			 */
			double		n = HAS_DEFAULT_SET_SIZE;

			if (fe != NULL && IsA(fe, FuncExpr) && list_length(fe->args) == 2)
				n = ReadableSetSize(linitial(fe->args), lsecond(fe->args),
									get_element_type(fe->funcresulttype));
			req->startup = 0;
			req->per_tuple = n * (random_page_cost + cpu_index_tuple_cost + cpu_tuple_cost);
		}
		PG_RETURN_POINTER(req);
	}
	if (IsA(rawreq, SupportRequestIndexCondition))
	{
		SupportRequestIndexCondition *req = (SupportRequestIndexCondition *) rawreq;
		FuncExpr   *fe = (FuncExpr *) req->node;
		Node	   *arg0;
		Oid			argtype;
		Oid			elemtype;
		Oid			opno;
		Oid			idsfn;
		ScalarArrayOpExpr *sa;
		ListCell   *lc;

		if (!IsA(fe, FuncExpr) || list_length(fe->args) != 3 || req->indexarg != 0 ||
			req->index->relam != BTREE_AM_OID ||
			!IsA(lsecond(fe->args), Const) || !IsA(lthird(fe->args), Const))
			PG_RETURN_POINTER(NULL);
		arg0 = linitial(fe->args);
		argtype = exprType(arg0);
		elemtype = HasElemType(argtype);
		if (elemtype == TEXTOID &&
			(argtype != TEXTOID ||
			 (OidIsValid(req->indexcollation) && !get_collation_isdeterministic(req->indexcollation))))
			PG_RETURN_POINTER(NULL);
		/*
		 * A query that already pins the column to a value (id = 42) probes
		 * the index with it; the readable set as a second index condition
		 * would only cost its preprocessing.  The test then filters.
		 */
		foreach(lc, req->index->rel->baserestrictinfo)
		{
			RestrictInfo *ri = lfirst_node(RestrictInfo, lc);
			OpExpr	   *op = (OpExpr *) ri->clause;

			if (IsA(op, OpExpr) && list_length(op->args) == 2 &&
				get_op_opfamily_strategy(op->opno, req->opfamily) == BTEqualStrategyNumber &&
				((equal(strip_implicit_coercions(linitial(op->args)), strip_implicit_coercions(arg0)) &&
				  !contain_var_clause(lsecond(op->args))) ||
				 (equal(strip_implicit_coercions(lsecond(op->args)), strip_implicit_coercions(arg0)) &&
				  !contain_var_clause(linitial(op->args)))))
				PG_RETURN_POINTER(NULL);
		}
		opno = get_opfamily_member(req->opfamily, argtype, elemtype, BTEqualStrategyNumber);
		idsfn = IdsFunction(elemtype);
		if (!OidIsValid(opno) || !OidIsValid(idsfn))
			PG_RETURN_POINTER(NULL);
		sa = makeNode(ScalarArrayOpExpr);
		sa->opno = opno;
		sa->opfuncid = get_opcode(opno);
		sa->useOr = true;
		sa->inputcollid = elemtype == TEXTOID ? req->indexcollation : InvalidOid;
		sa->args = list_make2(copyObject(arg0),
							  makeFuncExpr(idsfn, get_array_type(elemtype),
										   list_make2(copyObject(lsecond(fe->args)),
													  copyObject(lthird(fe->args))),
										   elemtype == TEXTOID ? DEFAULT_COLLATION_OID : InvalidOid,
										   DEFAULT_COLLATION_OID, COERCE_EXPLICIT_CALL));
		sa->location = -1;
		/*
		 * Exact: the same set, the same equality (integers, uuids, text
		 * under a deterministic collation, that is byte for byte), so the
		 * test is not evaluated again on the rows the probe returns.
		 */
		req->lossy = false;
		PG_RETURN_POINTER(list_make1(sa));
	}
	PG_RETURN_POINTER(NULL);
}

/* ------------------------------------------------------------------------
 * agent.ts_match: a leakproof full-text match
 * ------------------------------------------------------------------------
 *
 * Row-level security evaluates the policies before any condition whose
 * function is not LEAKPROOF, and only a leakproof condition may become an
 * index condition beneath them.  pg_catalog's tsvector @@ tsquery is not
 * marked LEAKPROOF (and changing pg_catalog is not ours to do), so under the
 * allowlist an agent's search cannot start from the text index.
 * agent.ts_match(tsvector, tsquery) is the same match, marked LEAKPROOF:
 * its result depends on its arguments only and it raises no error that
 * depends on them (ts_match_vq searches the vector for the query's lexemes;
 * the one data-dependent error it could raise, stack depth on a deeply
 * nested query, is avoided: a query nested deeper than TS_MATCH_MAX_DEPTH
 * levels matches nothing).  Its support function lets the planner use a
 * GIN or GiST index whose operator family has @@ (the default tsvector_ops)
 * and estimate it as @@.
 */
#define TS_MATCH_MAX_DEPTH 256

/*
 * Whether the query nests deeper than TS_MATCH_MAX_DEPTH levels (or is
 * malformed), walked with an explicit stack so that the check itself cannot
 * run out of stack.
 */
static bool
TsQueryTooDeep(TSQuery q)
{
	QueryItem  *items = GETQUERY(q);
	int		   *stack;
	int		   *depth;
	int			top = 0;
	bool		deep = false;

	if (q->size <= TS_MATCH_MAX_DEPTH)
		return false;			/* the depth is at most the number of items */
	stack = palloc(sizeof(int) * q->size);
	depth = palloc(sizeof(int) * q->size);
	stack[top] = 0;
	depth[top++] = 1;
	while (top > 0 && !deep)
	{
		int			i = stack[--top];
		int			d = depth[top];

		if (d > TS_MATCH_MAX_DEPTH)
			deep = true;
		else if (i >= 0 && i < q->size && items[i].type == QI_OPR)
		{
			/* operands: item + 1, and for binary operators item + left */
			if (top + 2 > q->size)
			{
				deep = true;	/* malformed: never reached for a valid query */
				break;
			}
			stack[top] = i + 1;
			depth[top++] = d + 1;
			if (items[i].qoperator.oper != OP_NOT)
			{
				stack[top] = i + items[i].qoperator.left;
				depth[top++] = d + 1;
			}
		}
	}
	pfree(stack);
	pfree(depth);
	return deep;
}

/*
 * agent.ts_match(tsvector, tsquery) RETURNS boolean (see above): tsvector @@
 * tsquery, but false for a query TsQueryTooDeep refuses.
 */
Datum
pg_agents_ts_match(PG_FUNCTION_ARGS)
{
	TSQuery		q = PG_GETARG_TSQUERY(1);

	if (TsQueryTooDeep(q))
		PG_RETURN_BOOL(false);
	return DirectFunctionCall2Coll(ts_match_vq, PG_GET_COLLATION(),
								   PG_GETARG_DATUM(0), PointerGetDatum(q));
}

/* pg_catalog.@@ (tsvector, tsquery) */
static Oid
TsMatchOperator(void)
{
	return LookupOperName(NULL, list_make2(makeString("pg_catalog"), makeString("@@")),
						  TSVECTOROID, TSQUERYOID, true, -1);
}

/*
 * agent._ts_match_support(internal): planner support of agent.ts_match: the
 * selectivity of @@, and @@ as an index condition on a tsvector index.
 */
Datum
pg_agents_ts_match_support(PG_FUNCTION_ARGS)
{
	Node	   *rawreq = (Node *) PG_GETARG_POINTER(0);
	Oid			op;

	if (IsA(rawreq, SupportRequestSelectivity))
	{
		SupportRequestSelectivity *req = (SupportRequestSelectivity *) rawreq;

		op = TsMatchOperator();
		if (!OidIsValid(op) || list_length(req->args) != 2)
			PG_RETURN_POINTER(NULL);
		if (req->is_join)
			req->selectivity = join_selectivity(req->root, op, req->args, req->inputcollid,
												req->jointype, req->sjinfo);
		else
			req->selectivity = restriction_selectivity(req->root, op, req->args,
													   req->inputcollid, req->varRelid);
		PG_RETURN_POINTER(req);
	}
	if (IsA(rawreq, SupportRequestIndexCondition))
	{
		SupportRequestIndexCondition *req = (SupportRequestIndexCondition *) rawreq;
		FuncExpr   *fe = (FuncExpr *) req->node;
		Node	   *query;

		if (!IsA(fe, FuncExpr) || list_length(fe->args) != 2 || req->indexarg != 0)
			PG_RETURN_POINTER(NULL);
		op = TsMatchOperator();
		if (!OidIsValid(op) || !op_in_opfamily(op, req->opfamily))
			PG_RETURN_POINTER(NULL);
		query = lsecond(fe->args);
		/* a constant query too deep for ts_match stays ts_match's */
		if (IsA(query, Const) && !((Const *) query)->constisnull &&
			TsQueryTooDeep(DatumGetTSQuery(((Const *) query)->constvalue)))
			PG_RETURN_POINTER(NULL);
		req->lossy = false;
		PG_RETURN_POINTER(list_make1(make_opclause(op, BOOLOID, false,
												   (Expr *) copyObject(linitial(fe->args)),
												   (Expr *) copyObject(query),
												   InvalidOid, fe->inputcollid)));
	}
	PG_RETURN_POINTER(NULL);
}

/* ------------------------------------------------------------------------
 * agent.like and agent.ilike: leakproof LIKE and ILIKE
 * ------------------------------------------------------------------------
 *
 * The same matches as text LIKE and ILIKE (~~, ~~*), marked LEAKPROOF, so
 * that under the allowlist a pattern search can start from a trigram index
 * (pg_trgm's gin_trgm_ops or gist_trgm_ops, whose operator families have ~~
 * and ~~*) or a btree prefix, and filter with the policy afterwards.  The
 * errors of LIKE that depend on its arguments (a pattern ending with the
 * escape character; running out of stack on thousands of %) are avoided:
 * such a pattern matches nothing.  (ILIKE
 * lower-cases both sides first, which raises nothing on text that is valid
 * in the database encoding, as PostgreSQL ensures all stored text is.)
 */

/*
 * Could LIKE raise an error on this pattern, whatever the string?  A pattern
 * ending with an unpaired escape character (a backslash) always can; one
 * with more than LIKE_MAX_WILDCARDS % signs could run out of stack (the
 * matcher recurses once per %) depending on the string.  Such patterns match
 * nothing through agent.like.
 */
#define LIKE_MAX_WILDCARDS 256

/*
 * The test described above LIKE_MAX_WILDCARDS; bytes that are not valid text
 * in the database encoding are refused too.
 */
static bool
LikePatternBad(text *pat)
{
	const char *p = VARDATA_ANY(pat);
	int			len = VARSIZE_ANY_EXHDR(pat);
	int			wildcards = 0;

	while (len > 0)
	{
		int			l;

		if (*p == '%' && ++wildcards > LIKE_MAX_WILDCARDS)
			return true;
		if (*p == '\\')
		{
			if (len == 1)
				return true;
			p++;
			len--;
		}
		l = pg_mblen(p);
		if (l > len)
			return true;		/* not valid text: never from the database */
		p += l;
		len -= l;
	}
	return false;
}

/*
 * agent.like / agent.ilike: false for a pattern LikePatternBad refuses,
 * otherwise the matcher's (textlike or texticlike) answer
 */
static Datum
like_call(FunctionCallInfo fcinfo, PGFunction matcher)
{
	text	   *pat = PG_GETARG_TEXT_PP(1);

	if (LikePatternBad(pat))
		PG_RETURN_BOOL(false);
	return DirectFunctionCall2Coll(matcher, PG_GET_COLLATION(), PG_GETARG_DATUM(0),
								   PointerGetDatum(pat));
}

/* agent.like(text, text) RETURNS boolean: LIKE, through like_call. */
Datum
pg_agents_like(PG_FUNCTION_ARGS)
{
	return like_call(fcinfo, textlike);
}

/* agent.ilike(text, text) RETURNS boolean: ILIKE, through like_call. */
Datum
pg_agents_ilike(PG_FUNCTION_ARGS)
{
	return like_call(fcinfo, texticlike);
}

/*
 * agent._like_support(internal): planner support of agent.like and
 * agent.ilike: the estimates and btree prefix conditions of LIKE and ILIKE
 * (their own support functions), and ~~ / ~~* as the index condition on an
 * index whose operator family has it (pg_trgm).
 */
Datum
pg_agents_like_support(PG_FUNCTION_ARGS)
{
	Node	   *rawreq = (Node *) PG_GETARG_POINTER(0);
	bool		ci;
	Oid			op;

	if (IsA(rawreq, SupportRequestSelectivity))
		ci = ((SupportRequestSelectivity *) rawreq)->funcid != InvalidOid &&
			strcmp(get_func_name(((SupportRequestSelectivity *) rawreq)->funcid), "ilike") == 0;
	else if (IsA(rawreq, SupportRequestIndexCondition))
		ci = strcmp(get_func_name(((SupportRequestIndexCondition *) rawreq)->funcid), "ilike") == 0;
	else
		PG_RETURN_POINTER(NULL);

	if (IsA(rawreq, SupportRequestIndexCondition))
	{
		SupportRequestIndexCondition *req = (SupportRequestIndexCondition *) rawreq;
		FuncExpr   *fe = (FuncExpr *) req->node;
		Node	   *pattern;

		if (!IsA(fe, FuncExpr) || list_length(fe->args) != 2 || req->indexarg != 0)
			PG_RETURN_POINTER(NULL);
		pattern = lsecond(fe->args);
		op = LookupOperName(NULL, list_make2(makeString("pg_catalog"), makeString(ci ? "~~*" : "~~")),
							TEXTOID, TEXTOID, true, -1);
		if (OidIsValid(op) && op_in_opfamily(op, req->opfamily))
		{
			/*
			 * The index's recheck runs ~~ itself on the candidates: only a
			 * constant pattern, known not to make it fail.
			 */
			if (!IsA(pattern, Const) || ((Const *) pattern)->constisnull ||
				LikePatternBad(DatumGetTextPP(((Const *) pattern)->constvalue)))
				PG_RETURN_POINTER(NULL);
			req->lossy = false;
			PG_RETURN_POINTER(list_make1(make_opclause(op, BOOLOID, false,
													   (Expr *) copyObject(linitial(fe->args)),
													   (Expr *) copyObject(pattern),
													   InvalidOid, fe->inputcollid)));
		}
	}
	/* a btree prefix (lossy: the match stays as a filter), and the estimates */
	PG_RETURN_DATUM(DirectFunctionCall1(ci ? texticlike_support : textlike_support,
										PointerGetDatum(rawreq)));
}
