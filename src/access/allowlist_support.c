/*-------------------------------------------------------------------------
 *
 * allowlist_support.c
 *		Plan-time switch of the allowlist row-level security policies, their
 *		per-row membership test and its planner support.
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
#include "catalog/indexing.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_proc.h"
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
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
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

#include "allowlist.h"
#include "allowlist_int.h"

PG_FUNCTION_INFO_V1(pg_agents_allowlist_active);
PG_FUNCTION_INFO_V1(pg_agents_allowlist_invalidate);
PG_FUNCTION_INFO_V1(pg_agents_allowlist_has);
PG_FUNCTION_INFO_V1(pg_agents_allowlist_custom_acl);
PG_FUNCTION_INFO_V1(pg_agents_allowlist_support);

/*
 * agent._allowlist_active() RETURNS boolean IMMUTABLE: whether the session
 * acts as an agent.  Internal to the allowlist policies; see the header.
 */
Datum
pg_agents_allowlist_active(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(GucActorIsAgent(pg_agents_actor));
}

/*
 * Whether a switch of pg_agents.actor must drop every cached plan.  Only a
 * plan that folded agent._allowlist_active() (an allowlist policy, or a view
 * or SQL-standard function body calling it) depends on the actor, and such
 * an object is recorded in pg_depend as using the function.  While no object
 * uses it, no valid cached plan holds the folded value: a plan made on a
 * table that later gets a policy is invalidated by the relcache invalidation
 * of CREATE POLICY, which also forgets the answer kept here (any relcache
 * invalidation does, the whole-cache one included, and so does any change
 * of a function, which sends none), so that the next switch
 * drops the plans again until the question is asked anew.  Without a kept
 * answer the switch drops them (the assign hook, guc.c, reads no catalog).
 * The worker asks before each tool unit's identity (ToolGateSetIdentity):
 * without this its two switches a unit re-planned every statement it kept.
 */
static bool fold_valid = false;
static bool fold_none = false;
static bool fold_callback = false;

static void
FoldInvalidate(Datum arg, Oid relid)
{
	fold_valid = false;
}

/*
 * A function created or changed (pg_proc) sends no relcache invalidation: a
 * SQL-standard body calling agent._allowlist_active() is a new user of it,
 * and a plan inlining that function may fold it.
 */
static void
FoldInvalidateProc(Datum arg, int cacheid, uint32 hashvalue)
{
	fold_valid = false;
}

static bool
AllowlistPlansMayFold(void)
{
	return !(fold_valid && fold_none);
}

void
AllowlistNoteFolding(void)
{
	Oid			fn;
	bool		found = false;

	if (fold_valid)
		return;
	if (!fold_callback)
	{
		RelcheckRegisterCallback(FoldInvalidate, (Datum) 0);
		CacheRegisterSyscacheCallback(PROCOID, FoldInvalidateProc, (Datum) 0);
		guc_actor_plans_may_fold = AllowlistPlansMayFold;
		fold_callback = true;
	}
	fold_valid = true;			/* an invalidation from here on clears it */
	fn = LookupFuncName(list_make2(makeString("agent"), makeString("_allowlist_active")), 0, NULL, true);
	if (OidIsValid(fn))
	{
		Relation	rel = table_open(DependRelationId, AccessShareLock);
		ScanKeyData key[2];
		SysScanDesc scan;

		ScanKeyInit(&key[0], Anum_pg_depend_refclassid, BTEqualStrategyNumber, F_OIDEQ,
					ObjectIdGetDatum(ProcedureRelationId));
		ScanKeyInit(&key[1], Anum_pg_depend_refobjid, BTEqualStrategyNumber, F_OIDEQ,
					ObjectIdGetDatum(fn));
		scan = systable_beginscan(rel, DependReferenceIndexId, true, NULL, 2, key);
		found = HeapTupleIsValid(systable_getnext(scan));
		systable_endscan(scan);
		table_close(rel, AccessShareLock);
	}
	fold_none = !found;
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
		RelcheckRegisterCallback(CustomAclInvalidate, (Datum) 0);
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
	if (RelcheckCitusManaged(relid))
	{
		/* read through SPI, and not kept: its statement trigger fires on the nodes */
		custom_acl_valid = false;
		PG_RETURN_BOOL(RelcheckSpiCustomAcl());
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
	IdsEntry   *src;			/* the entry whose own array is searched, or NULL */
	uint64		src_epoch;		/* its epoch then (the array is good while the same) */
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
 * qsort and bsearch comparator of text pointers: bytewise, a prefix first
 * (an order for searching, not a collation; the order of C strings, which a
 * readable set built from sorted ids usually has already).
 */
static int
CompareTextP(const void *a, const void *b)
{
	const text *x = *(text *const *) a;
	const text *y = *(text *const *) b;
	int			lx = VARSIZE_ANY_EXHDR(x);
	int			ly = VARSIZE_ANY_EXHDR(y);
	int			c = memcmp(VARDATA_ANY(x), VARDATA_ANY(y), Min(lx, ly));

	if (c != 0 || lx == ly)
		return c;
	return lx < ly ? -1 : 1;
}

/* whether the n elements of size sz at base are sorted by cmp already */
static bool
IsSorted(const void *base, int n, size_t sz, int (*cmp) (const void *, const void *))
{
	const char *p = base;
	int			i;

	for (i = 1; i < n; i++)
		if (cmp(p + (i - 1) * sz, p + i * sz) > 0)
			return false;
	return true;
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
	/*
	 * The callers hand over a copy made in cxt: integers and uuids, which lie
	 * side by side in it (8 or 16 bytes, no padding), are searched in place,
	 * so a statement pays no per-element work for a kept set (integers are
	 * sorted by BuildIdsArray; uuids are sorted here only if they are not
	 * already).
	 */
	if ((s->elemtype == INT8OID || s->elemtype == UUIDOID) && !ARR_HASNULL(arr))
	{
		size_t		sz = s->elemtype == INT8OID ? sizeof(int64) : sizeof(pg_uuid_t);

		bool		sorted;

		s->n = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
		if (s->elemtype == INT8OID)
			sorted = true;
		else if (s->src != NULL && s->src->sorted != 0)
			sorted = s->src->sorted > 0;	/* checked by an earlier statement */
		else
		{
			sorted = IsSorted(ARR_DATA_PTR(arr), s->n, sizeof(pg_uuid_t), CompareUuid);
			if (s->src != NULL)
				s->src->sorted = sorted ? 1 : -1;
		}
		if ((Pointer) arr != DatumGetPointer(arrd) || (!sorted && s->src != NULL))
		{
			/* detoasted, or the entry's own and to be sorted: a copy */
			void	   *copy = palloc(sz * Max(s->n, 1));

			memcpy(copy, ARR_DATA_PTR(arr), sz * s->n);
			if (s->elemtype == INT8OID)
				s->ints = copy;
			else
				s->uuids = copy;
		}
		else if (s->elemtype == INT8OID)
			s->ints = (int64 *) ARR_DATA_PTR(arr);
		else
			s->uuids = (pg_uuid_t *) ARR_DATA_PTR(arr);
		if (!sorted)
			qsort(s->uuids, s->n, sizeof(pg_uuid_t), CompareUuid);
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
		qsort(s->ints, s->n, sizeof(int64), AllowlistCompareInt64);
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
		if (!IsSorted(s->texts, s->n, sizeof(text *), CompareTextP))
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
	s->edit = AllowlistParseMode(cstring_to_text(mode));
	{
		/*
		 * The kept set itself (no copy per statement: 50k grants are 400 or
		 * 800 kB), good while its entry's epoch is the same, which
		 * pg_agents_allowlist_has checks before each probe; or a copy made in
		 * cxt, where it is searched in place.
		 */
		MemoryContext old = MemoryContextSwitchTo(cxt);

		kept = AllowlistIdsKeptBorrowed(agent_id, rtype, s->edit, elemtype,
										&s->src, &s->src_epoch);
		MemoryContextSwitchTo(old);
	}
	if (kept != (Datum) 0)
		HasSetFill(s, cxt, kept);
	else
	{
		int			n = AllowlistIdsEstimate(agent_id, rtype, s->edit, elemtype);
		IdsEntry   *e = AllowlistFindEntry(agent_id, rtype, s->edit, elemtype, AccessRelid());

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

	/* the kept set searched in place replaced since (by a nested statement)? */
	if (s != NULL && s->src != NULL && s->src->epoch != s->src_epoch)
		s = NULL;
	/* the same actor, type and mode as the set was built for? */
	if (s == NULL || pg_agents_actor == NULL || strcmp(s->actor, pg_agents_actor) != 0 ||
		strcmp(s->workspace, pg_agents_workspace ? pg_agents_workspace : "") != 0 ||
		!AllowlistTextIs(rt, s->rtype) || !AllowlistTextIs(md, s->mode))
	{
		Oid			argtype = get_fn_expr_argtype(fcinfo->flinfo, 0);

		if (!GucActorIsAgent(pg_agents_actor))
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
			int			r = AccessReadableOne(s->agent_id, s->rtype, rid, s->edit);

			pfree(rid);
			if (r >= 0)
			{
				s->decisions++;
				if (s->stale != NULL && s->stale->used && s->stale->cxt == s->stale_cxt)
					s->stale->stale_decisions++;
				PG_RETURN_BOOL(r == 1);
			}
		}
		{
			MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
			Datum		arr = AllowlistIdsArray(s->agent_id, s->rtype, s->edit, s->elemtype);

			MemoryContextSwitchTo(old);
			s->src = NULL;
			HasSetFill(s, fcinfo->flinfo->fn_mcxt, arr);
		}
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
		!GucActorIsAgent(pg_agents_actor) || !ActiveSnapshotSet())
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
	n = AllowlistIdsEstimate(agent_id, rtype, edit, elemtype);
	if (n < 0)
		(void) AllowlistIdsArrayOrCount(agent_id, rtype, edit, elemtype, &n, false);
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

