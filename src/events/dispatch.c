/*-------------------------------------------------------------------------
 *
 * dispatch.c
 *		agent.fire_event: match an event to the enabled event and mention
 *		triggers, apply anti-loop, filters, suspension, dedup, and queue one
 *		autonomous run per surviving trigger through agent._enqueue_run.
 *
 * Everything happens inside the caller's transaction: a rolled-back write
 * makes no run, and dedup fingerprints written by a rolled-back transaction
 * vanish with it.
 *
 * Matching cost does not grow with non-matching triggers: candidates are
 * looked up by (event_name, resource_type, resource_id | NULL) through a
 * partial index, and the result is cached per backend.  The cache is flushed
 * by a relcache invalidation of agent.triggers, which a statement trigger on
 * that table sends whenever a matching column changes (and which every
 * backend receives at commit, or at once in the writing transaction).  So an
 * event that matches nothing costs a hash lookup, without SPI; on a miss the
 * index is read directly (ScanCandidates), without SPI either.
 *
 * Reads and writes of the extension's tables run as the owner of the schema
 * "agent" with search_path = pg_catalog, as a SECURITY DEFINER function would,
 * but only on the slow path (a candidate exists), so that the no-match path
 * stays cheap.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "storage/lmgr.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_operator.h"
#include "nodes/makefuncs.h"
#include "commands/trigger.h"
#include "common/md5.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "access/access.h"
#include "enqueue.h"
#include "events.h"
#include "util/compat.h"
#include "util/guc.h"
#include "util/jsonb_build.h"
#include "util/relcheck.h"
#include "util/spi_util.h"

PG_FUNCTION_INFO_V1(pg_agents_fire_event);
PG_FUNCTION_INFO_V1(pg_agents_fire_event_in);
PG_FUNCTION_INFO_V1(pg_agents_triggers_changed);

#define CACHE_KEY_LEN		256
#define CACHE_MAX_ENTRIES	4096

/* One enabled trigger that may match an event. */
typedef struct Candidate
{
	int64		id;
	int64		agent_id;
	char	   *workspace_id;
	bool		allow_self;
	char	   *prompt;
	Jsonb	   *filter;			/* NULL when the filter is empty */
	Oid			saved_by;		/* role a filter view is read as */
} Candidate;

typedef struct CacheEntry
{
	char		key[CACHE_KEY_LEN];
	int			n;
	Candidate  *items;
} CacheEntry;

static HTAB *trig_cache = NULL;
static MemoryContext trig_cache_cxt = NULL;
static bool cache_stale = true;
static bool callback_registered = false;
static Oid	triggers_relid = InvalidOid;

/*
 * The candidate lookup of an event (not a mention) reads triggers_event_idx
 * directly, as the query below would (its three probes), without SPI, plan
 * cache, or a change of user and search_path: the columns read, found when
 * the cache is (re)built (when one is missing, the query runs).  When Citus
 * manages agent.triggers the query runs (routed by the event's workspace)
 * and nothing is cached (its statement trigger fires on the shards, so the
 * flush would not reach this backend).
 */
static bool triggers_atts_ok = false;
typedef struct TriggerAtts
{
	AttrNumber	id,
				agent_id,
				workspace_id,
				allow_self,
				prompt,
				filter,
				saved_by,
				enabled,
				kind,
				resource_id;
} TriggerAtts;
static TriggerAtts tatts;
static int	dispatch_depth = 0;

static SPIPlanPtr plan_lookup = NULL;
static SPIPlanPtr plan_mention = NULL;
static SPIPlanPtr plan_agent = NULL;
static SPIPlanPtr plan_agent_citus = NULL;
static SPIPlanPtr plan_restype_citus = NULL;
static SPIPlanPtr plan_parent = NULL;
static SPIPlanPtr plan_dedup = NULL;
static SPIPlanPtr plan_launch = NULL;
static SPIPlanPtr plan_launch_other = NULL;
static SPIPlanPtr plan_enqueue = NULL;
static SPIPlanPtr plan_audit = NULL;
static SPIPlanPtr plan_last_run = NULL;
static SPIPlanPtr plan_filter_error = NULL;
static SPIPlanPtr plan_self_skip = NULL;
static SPIPlanPtr plan_self_audit = NULL;

/* --------------------------------------------------------------------------
 * helpers
 * --------------------------------------------------------------------------
 */

/* "agent:<id>" -> id, else 0. */
static int64
ActorAgentId(const char *actor)
{
	const char *p;
	int64		id = 0;
	int			digits = 0;

	if (actor == NULL || strncmp(actor, "agent:", 6) != 0)
		return 0;
	for (p = actor + 6; *p; p++)
	{
		if (!isdigit((unsigned char) *p) || ++digits > 18)
			return 0;
		id = id * 10 + (*p - '0');
	}
	return digits > 0 ? id : 0;
}

/* The agent a payload's "agent_id" names (number or digits string), else 0. */
static int64
PayloadAgentId(Jsonb *payload)
{
	JsonbValue	v;
	char	   *s;

	if (payload == NULL || !JsonContainerIsObject(&payload->root) ||
		getKeyJsonValueFromContainer(&payload->root, "agent_id", 8, &v) == NULL)
		return 0;
	if (v.type == jbvNumeric)
		s = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v.val.numeric)));
	else if (v.type == jbvString && v.val.string.len > 0 && v.val.string.len <= 18)
		s = pnstrdup(v.val.string.val, v.val.string.len);
	else
		return 0;
	return ActorAgentId(psprintf("agent:%s", s));
}

/* --------------------------------------------------------------------------
 * the trigger cache
 * --------------------------------------------------------------------------
 */

/*
 * relcache invalidation: a change of agent.triggers (or of any relation, for
 * InvalidOid) makes the trigger cache stale
 */
static void
TriggersInvalCallback(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == triggers_relid)
		cache_stale = true;
}

/*
 * What every trigger the direct lookup returns satisfies: enabled AND kind =
 * 'event' (the index's predicate, enabled AND kind IN ('event', 'mention'),
 * must follow from it, or the index could leave out a candidate).
 */
static List *
EventRestriction(Oid relid)
{
	AttrNumber	enabled = get_attnum(relid, "enabled");
	AttrNumber	kind = get_attnum(relid, "kind");

	if (enabled == InvalidAttrNumber || kind == InvalidAttrNumber)
		return NIL;
	return list_make2(makeVar(1, enabled, BOOLOID, -1, InvalidOid, 0),
					  make_opclause(TextEqualOperator, BOOLOID, false,
									(Expr *) makeVar(1, kind, TEXTOID, -1, DEFAULT_COLLATION_OID, 0),
									(Expr *) makeConst(TEXTOID, -1, DEFAULT_COLLATION_OID, -1,
													   CStringGetTextDatum("event"), false, false),
									InvalidOid, DEFAULT_COLLATION_OID));
}

/*
 * triggers_event_idx as the direct lookup reads it: a B-tree on agent.triggers
 * whose leading columns are (workspace_id, event_name, resource_type,
 * resource_id), all text, holding every enabled event trigger (checked by
 * relcheck.c when first scanned, and again after a change of the index or
 * the table: an error otherwise).
 */
static const PgaIndexSpec triggers_event_spec = {
	"triggers_event_idx", "triggers", 4,
	{{"workspace_id", TEXTOID}, {"event_name", TEXTOID},
	 {"resource_type", TEXTOID}, {"resource_id", TEXTOID}},
	EventRestriction
};

/* finds the columns of agent.triggers the direct lookup reads; false if one is missing */
static bool
FindTriggerAtts(void)
{
	tatts.id = get_attnum(triggers_relid, "id");
	tatts.agent_id = get_attnum(triggers_relid, "agent_id");
	tatts.workspace_id = get_attnum(triggers_relid, "workspace_id");
	tatts.allow_self = get_attnum(triggers_relid, "allow_self_retrigger");
	tatts.prompt = get_attnum(triggers_relid, "prompt");
	tatts.filter = get_attnum(triggers_relid, "filter");
	tatts.saved_by = get_attnum(triggers_relid, "saved_by");
	tatts.enabled = get_attnum(triggers_relid, "enabled");
	tatts.kind = get_attnum(triggers_relid, "kind");
	tatts.resource_id = get_attnum(triggers_relid, "resource_id");
	return !(tatts.id <= 0 || tatts.agent_id <= 0 || tatts.workspace_id <= 0 || tatts.allow_self <= 0 ||
			 tatts.prompt <= 0 || tatts.filter <= 0 || tatts.saved_by <= 0 || tatts.enabled <= 0 ||
			 tatts.kind <= 0 || tatts.resource_id <= 0);
}

/* Drops the cache when stale and no dispatch is using it. */
static void
RefreshCache(void)
{
	HASHCTL		ctl;
	Oid			nsp;

	if (!callback_registered)
	{
		RelcheckRegisterCallback(TriggersInvalCallback, (Datum) 0);
		callback_registered = true;
	}
	/* see trigger changes committed by other sessions */
	AcceptInvalidationMessages();
	if (!cache_stale || dispatch_depth > 0)
		return;

	cache_stale = false;
	if (trig_cache_cxt == NULL)
		trig_cache_cxt = AllocSetContextCreate(CacheMemoryContext, "pg_agents trigger cache",
											   ALLOCSET_DEFAULT_SIZES);
	else
		MemoryContextReset(trig_cache_cxt);
	ctl.keysize = CACHE_KEY_LEN;
	ctl.entrysize = sizeof(CacheEntry);
	ctl.hcxt = trig_cache_cxt;
	trig_cache = hash_create("pg_agents trigger cache", 64, &ctl,
							 HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);

	nsp = get_namespace_oid("agent", true);
	triggers_relid = OidIsValid(nsp) ? get_relname_relid("triggers", nsp) : InvalidOid;
	triggers_atts_ok = OidIsValid(triggers_relid) && FindTriggerAtts();
}

/* Copies the SPI result rows into an array of candidates in cxt. */
static int
CopyCandidates(MemoryContext cxt, Candidate **out)
{
	int			n = (int) SPI_processed;
	int			i;
	Candidate  *items;
	MemoryContext old = MemoryContextSwitchTo(cxt);

	items = n > 0 ? palloc0(sizeof(Candidate) * n) : NULL;
	for (i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	td = SPI_tuptable->tupdesc;
		bool		isnull;
		Datum		d;

		items[i].id = DatumGetInt64(SPI_getbinval(tup, td, 1, &isnull));
		items[i].agent_id = DatumGetInt64(SPI_getbinval(tup, td, 2, &isnull));
		items[i].workspace_id = SPI_getvalue(tup, td, 3);
		d = SPI_getbinval(tup, td, 4, &isnull);
		items[i].allow_self = !isnull && DatumGetBool(d);
		items[i].prompt = SPI_getvalue(tup, td, 5);
		d = SPI_getbinval(tup, td, 6, &isnull);
		if (!isnull)
		{
			Jsonb	   *f = DatumGetJsonbPCopy(d);

			items[i].filter = JsonContainerSize(&f->root) > 0 ? f : NULL;
		}
		d = SPI_getbinval(tup, td, 7, &isnull);
		items[i].saved_by = isnull ? InvalidOid : DatumGetObjectId(d);
	}
	MemoryContextSwitchTo(old);
	*out = items;
	return n;
}

#define CANDIDATE_COLUMNS \
	"SELECT t.id, t.agent_id, t.workspace_id, t.allow_self_retrigger, t.prompt, t.filter, t.saved_by " \
	"FROM agent.triggers t "

/* Runs the candidate query; the caller is connected to SPI and elevated. */
static int
QueryCandidates(const char *workspace, const char *event_name, const char *resource_type,
				const char *resource_id, int64 mention_agent,
				MemoryContext cxt, Candidate **out)
{
	/* $1 event, $2 resource type, $3 resource id, $4 workspace, $5 the mentioned agent */
	Oid			types[5] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT8OID};
	Datum		args[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};
	SPIPlanPtr	plan;
	int			ret;

	if (mention_agent != 0)
	{
		/* a mention resolves only agents of the event's workspace */
		plan = SpiUtilKeptPlan(&plan_mention,
							   CANDIDATE_COLUMNS
							   "WHERE t.agent_id OPERATOR(pg_catalog.=) $5 AND t.enabled "
							   "AND t.workspace_id OPERATOR(pg_catalog.=) $4 "
							   "AND (t.kind OPERATOR(pg_catalog.=) 'mention' "
							   "     OR (t.kind OPERATOR(pg_catalog.=) 'event' AND t.event_name OPERATOR(pg_catalog.=) $1)) "
							   "AND (t.resource_type IS NULL OR t.resource_type OPERATOR(pg_catalog.=) $2) "
							   "AND (t.resource_id IS NULL OR t.resource_id OPERATOR(pg_catalog.=) $3) "
							   "ORDER BY t.id",
							   5, types);
	}
	else
	{
		/* probes of triggers_event_idx, within the event's workspace: this
		 * resource, any resource of the type, and (resource_type NULL) any
		 * resource of any type */
		plan = SpiUtilKeptPlan(&plan_lookup,
							   CANDIDATE_COLUMNS
							   "WHERE t.enabled AND t.kind IN ('event', 'mention') AND t.kind OPERATOR(pg_catalog.=) 'event' "
							   "AND t.workspace_id OPERATOR(pg_catalog.=) $4 AND t.event_name OPERATOR(pg_catalog.=) $1 AND t.resource_type OPERATOR(pg_catalog.=) $2 "
							   "AND t.resource_id OPERATOR(pg_catalog.=) $3 "
							   "UNION ALL "
							   CANDIDATE_COLUMNS
							   "WHERE t.enabled AND t.kind IN ('event', 'mention') AND t.kind OPERATOR(pg_catalog.=) 'event' "
							   "AND t.workspace_id OPERATOR(pg_catalog.=) $4 AND t.event_name OPERATOR(pg_catalog.=) $1 AND t.resource_type OPERATOR(pg_catalog.=) $2 "
							   "AND t.resource_id IS NULL "
							   "UNION ALL "
							   CANDIDATE_COLUMNS
							   "WHERE t.enabled AND t.kind IN ('event', 'mention') AND t.kind OPERATOR(pg_catalog.=) 'event' "
							   "AND t.workspace_id OPERATOR(pg_catalog.=) $4 AND t.event_name OPERATOR(pg_catalog.=) $1 AND t.resource_type IS NULL "
							   "AND (t.resource_id IS NULL OR t.resource_id OPERATOR(pg_catalog.=) $3) "
							   "ORDER BY 1",
							   4, types);
	}
	args[0] = CStringGetTextDatum(event_name);
	args[1] = CStringGetTextDatum(resource_type);
	if (resource_id)
		args[2] = CStringGetTextDatum(resource_id);
	else
		nulls[2] = 'n';
	args[3] = CStringGetTextDatum(workspace);
	args[4] = Int64GetDatum(mention_agent);
	ret = SPI_execute_plan(plan, args, nulls, false, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "pg_agents: trigger lookup failed: %s", SPI_result_code_string(ret));
	return CopyCandidates(cxt, out);
}

/* does the text datum equal the C string s? */
static bool
TextEqCString(Datum d, const char *s)
{
	text	   *t = DatumGetTextPP(d);
	size_t		len = strlen(s);
	bool		eq = (VARSIZE_ANY_EXHDR(t) == len && memcmp(VARDATA_ANY(t), s, len) == 0);

	if ((Pointer) t != DatumGetPointer(d))
		pfree(t);
	return eq;
}

/* qsort order of candidates: by trigger id */
static int
CandidateCmp(const void *a, const void *b)
{
	int64		x = ((const Candidate *) a)->id;
	int64		y = ((const Candidate *) b)->id;

	return (x > y) - (x < y);
}

/*
 * The candidate query of an event (QueryCandidates without a mention), as
 * three probes of triggers_event_idx read directly: this resource, any
 * resource of the type, any resource of any type.  Same snapshot as SPI
 * would take (the command counter advanced first), same rows, same order
 * (by id).  No permission check applies, as none did to the query, which
 * ran as the owner of schema "agent".
 */
static int
ScanCandidates(const PgaIndexInfo *ix, const char *workspace, const char *event_name,
			   const char *resource_type, const char *resource_id,
			   MemoryContext cxt, Candidate **out)
{
	Relation	heap;
	Relation	index;
	TupleTableSlot *slot;
	IndexScanDesc scan;
	ScanKeyData keys[4];
	Candidate  *items = NULL;
	int			n = 0;
	int			cap = 0;
	int			probe;

	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	UpdateActiveSnapshotCommandId();

	heap = table_open(triggers_relid, AccessShareLock);
	index = index_open(ix->indexid, AccessShareLock);
	slot = table_slot_create(heap, NULL);
	RelcheckIndexKey(&keys[0], ix, 0, CStringGetTextDatum(workspace));
	RelcheckIndexKey(&keys[1], ix, 1, CStringGetTextDatum(event_name));
	scan = index_beginscan(heap, index, GetActiveSnapshot(), 4, 0);
	for (probe = 0; probe < 3; probe++)
	{
		int			nkeys;

		if (probe == 0)
		{
			if (resource_id == NULL)
				continue;		/* "resource_id = NULL" matches nothing */
			RelcheckIndexKey(&keys[2], ix, 2, CStringGetTextDatum(resource_type));
			RelcheckIndexKey(&keys[3], ix, 3, CStringGetTextDatum(resource_id));
			nkeys = 4;
		}
		else if (probe == 1)
		{
			RelcheckIndexKey(&keys[2], ix, 2, CStringGetTextDatum(resource_type));
			RelcheckIndexNullKey(&keys[3], 3);
			nkeys = 4;
		}
		else
		{
			RelcheckIndexNullKey(&keys[2], 2);
			nkeys = 3;
		}
		index_rescan(scan, keys, nkeys, NULL, 0);
		while (index_getnext_slot(scan, ForwardScanDirection, slot))
		{
			bool		isnull;
			Datum		d;
			Candidate  *c;
			MemoryContext old;

			/* the index holds enabled event and mention triggers */
			d = slot_getattr(slot, tatts.enabled, &isnull);
			if (isnull || !DatumGetBool(d))
				continue;
			d = slot_getattr(slot, tatts.kind, &isnull);
			if (isnull || !TextEqCString(d, "event"))
				continue;
			if (probe == 2)
			{
				/* any resource of any type: resource_id NULL or this one */
				d = slot_getattr(slot, tatts.resource_id, &isnull);
				if (!isnull && (resource_id == NULL || !TextEqCString(d, resource_id)))
					continue;
			}

			old = MemoryContextSwitchTo(cxt);
			if (n == cap)
			{
				cap = cap ? cap * 2 : 8;
				items = items ? repalloc(items, sizeof(Candidate) * cap) : palloc(sizeof(Candidate) * cap);
			}
			c = &items[n++];
			memset(c, 0, sizeof(Candidate));
			c->id = DatumGetInt64(slot_getattr(slot, tatts.id, &isnull));
			c->agent_id = DatumGetInt64(slot_getattr(slot, tatts.agent_id, &isnull));
			d = slot_getattr(slot, tatts.workspace_id, &isnull);
			c->workspace_id = isnull ? NULL : TextDatumGetCString(d);
			d = slot_getattr(slot, tatts.allow_self, &isnull);
			c->allow_self = !isnull && DatumGetBool(d);
			d = slot_getattr(slot, tatts.prompt, &isnull);
			c->prompt = isnull ? NULL : TextDatumGetCString(d);
			d = slot_getattr(slot, tatts.filter, &isnull);
			if (!isnull)
			{
				Jsonb	   *f = DatumGetJsonbPCopy(d);

				c->filter = JsonContainerSize(&f->root) > 0 ? f : NULL;
			}
			d = slot_getattr(slot, tatts.saved_by, &isnull);
			c->saved_by = isnull ? InvalidOid : DatumGetObjectId(d);
			MemoryContextSwitchTo(old);
		}
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	index_close(index, AccessShareLock);
	table_close(heap, AccessShareLock);
	PopActiveSnapshot();

	if (n > 1)
		qsort(items, n, sizeof(Candidate), CandidateCmp);
	*out = items;
	return n;
}

/* The candidate query through SPI, as the owner of schema "agent". */
static int
QueryWithElevation(const char *workspace, const char *event_name, const char *resource_type,
				   const char *resource_id, int64 mention_agent,
				   MemoryContext cxt, Candidate **out)
{
	PgaElevation	elev;
	int			n;

	RelcheckElevate(&elev);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_agents: SPI_connect failed");
	n = QueryCandidates(workspace, event_name, resource_type, resource_id, mention_agent, cxt, out);
	SPI_finish();
	RelcheckRestore(&elev);
	return n;
}

/*
 * The candidate triggers of an event, from the cache when possible.  The
 * array stays valid until the end of the current dispatch.
 */
static int
GetCandidates(const char *workspace, const char *event_name, const char *resource_type,
			  const char *resource_id, int64 mention_agent, Candidate **out)
{
	char		key[CACHE_KEY_LEN];
	int			len;
	bool		cacheable;
	CacheEntry *entry = NULL;
	int			n;
	MemoryContext cxt;
	bool		citus;

	RefreshCache();
	/* the workspace is part of the key: one workspace's triggers are never
	 * another's candidates */
	len = snprintf(key, sizeof(key), "%s\x1f%s\x1f%s\x1f%s", workspace, event_name, resource_type,
				   resource_id ? resource_id : "\x1e");
	citus = OidIsValid(triggers_relid) && RelcheckCitusManaged(triggers_relid);
	cacheable = mention_agent == 0 && !cache_stale && len < CACHE_KEY_LEN &&
		!IsolationUsesXactSnapshot() && OidIsValid(triggers_relid) && !citus;
	if (cacheable)
	{
		entry = hash_search(trig_cache, key, HASH_FIND, NULL);
		if (entry)
		{
			*out = entry->items;
			return entry->n;
		}
	}

	cxt = cacheable ? trig_cache_cxt : CurrentMemoryContext;
	if (mention_agent == 0 && triggers_atts_ok && !citus)
	{
		PgaIndexInfo ix;

		/* locked first, so that the index checked is the one scanned */
		LockRelationOid(triggers_relid, AccessShareLock);
		ix = *RelcheckIndex(&triggers_event_spec);
		n = ScanCandidates(&ix, workspace, event_name, resource_type, resource_id, cxt, out);
	}
	else
		n = QueryWithElevation(workspace, event_name, resource_type, resource_id, mention_agent, cxt, out);

	/* an invalidation may have arrived while we queried: then do not keep it */
	if (cacheable && !cache_stale)
	{
		if (hash_get_num_entries(trig_cache) >= CACHE_MAX_ENTRIES)
			cache_stale = true; /* start over at the next event */
		else
		{
			entry = hash_search(trig_cache, key, HASH_ENTER, NULL);
			entry->n = n;
			entry->items = *out;
		}
	}
	return n;
}

/*
 * Whether any enabled event trigger could match the event (ignoring
 * filters).  The watchers call it before building a payload.
 */
bool
EventsHasCandidates(const char *workspace, const char *event_name,
						   const char *resource_type, const char *resource_id)
{
	Candidate  *items;

	if (workspace == NULL)
		return false;
	return GetCandidates(workspace, event_name, resource_type, resource_id, 0, &items) > 0;
}

/* --------------------------------------------------------------------------
 * dispatch
 * --------------------------------------------------------------------------
 */

typedef struct EventCtx
{
	const char *workspace;
	const char *event_name;
	const char *resource_type;
	const char *resource_id;
	Jsonb	   *payload;
	const char *actor;
	const char *event_id;
	const char *automation;		/* fire_event's automation label, or NULL */
	bool		own_resource;	/* resource_id names a resource (fire_event), not a table */
	char		fingerprint[40];	/* computed on first use */
} EventCtx;

/* the event's own fields, first in an audit row's details and a run's input */
static void
PushEventFields(JsonbParseState **st, const EventCtx *ev)
{
	JsonbBuildTextField(st, "event", ev->event_name);
	JsonbBuildTextField(st, "resource_type", ev->resource_type);
	JsonbBuildTextField(st, "resource_id", ev->resource_id);
	JsonbBuildTextField(st, "event_id", ev->event_id);
	JsonbBuildTextField(st, "actor", ev->actor);
}

/*
 * the event's deduplication key: its event_id when given, else an md5 of its
 * name, resource and canonical payload; computed once
 */
static const char *
Fingerprint(EventCtx *ev)
{
	StringInfoData buf;
	char		hex[33];
	const char *errstr = NULL;
	char		kind;

	if (ev->fingerprint[0] != '\0')
		return ev->fingerprint;
	initStringInfo(&buf);
	if (ev->event_id != NULL)
	{
		kind = 'e';
		appendStringInfoString(&buf, ev->event_id);
	}
	else
	{
		/* jsonb text output is canonical: keys sorted, duplicates removed */
		kind = 'p';
		appendStringInfo(&buf, "%s%c%s%c%s%c", ev->event_name, '\0', ev->resource_type, '\0',
						 ev->resource_id ? ev->resource_id : "", '\0');
		(void) JsonbToCString(&buf, &ev->payload->root, VARSIZE(ev->payload));
	}
	if (!pg_md5_hash(buf.data, buf.len, hex, &errstr))
		elog(ERROR, "pg_agents: could not compute event fingerprint: %s", errstr ? errstr : "?");
	snprintf(ev->fingerprint, sizeof(ev->fingerprint), "%c:%s", kind, hex);
	pfree(buf.data);
	return ev->fingerprint;
}

/* what the agent's row says, read once for the checks and the run */
typedef struct AgentFacts
{
	bool		has_cap;
	int64		cap;			/* hourly_run_cap */
	bool		own_type_registered;	/* the event's resource type is a resource table's */
} AgentFacts;

/*
 * Whether the agent (of the trigger's workspace) exists, is not deleted and
 * is active; with its hourly cap, and whether the event's own resource type
 * is registered (agent._withhold_payload then checks the resource).
 */
static bool
AgentIsActive(int64 agent_id, const char *workspace_id, const char *resource_type, AgentFacts *f)
{
	Oid			types[3] = {INT8OID, TEXTOID, TEXTOID};
	Datum		args[3] = {Int64GetDatum(agent_id), CStringGetTextDatum(workspace_id), (Datum) 0};
	char		nulls[3] = {' ', ' ', 'n'};
	int			ret;
	bool		isnull;
	Datum		d;

	/*
	 * On Citus, in a delegated agent._fire_event_in, a query of a distributed
	 * table must name the workspace and nothing else: a subquery of the
	 * reference table agent.resource_tables is refused there ("queries must
	 * filter by the distribution argument"), so it is a query of its own.
	 */
	if (OidIsValid(triggers_relid) && RelcheckCitusManaged(triggers_relid))
	{
		Oid			rtypes[1] = {TEXTOID};
		Datum		rargs[1];

		SpiUtilKeptPlan(&plan_agent_citus,
					"SELECT a.hourly_run_cap::pg_catalog.int8 "
					"FROM agent.agents a WHERE a.workspace_id OPERATOR(pg_catalog.=) $2 "
					"AND a.id OPERATOR(pg_catalog.=) $1 "
					"AND a.status OPERATOR(pg_catalog.=) 'active' AND a.deleted_at IS NULL",
					2, types);
		ret = SPI_execute_plan(plan_agent_citus, args, NULL, false, 1);
		if (ret != SPI_OK_SELECT)
			elog(ERROR, "pg_agents: agent lookup failed: %s", SPI_result_code_string(ret));
		if (SPI_processed == 0)
			return false;
		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		f->has_cap = !isnull;
		f->cap = isnull ? 0 : DatumGetInt64(d);
		f->own_type_registered = false;
		if (resource_type != NULL)
		{
			SpiUtilKeptPlan(&plan_restype_citus,
						"SELECT FROM agent.resource_tables r "
						"WHERE r.resource_type OPERATOR(pg_catalog.=) $1 LIMIT 1",
						1, rtypes);
			rargs[0] = CStringGetTextDatum(resource_type);
			ret = SPI_execute_plan(plan_restype_citus, rargs, NULL, false, 1);
			if (ret != SPI_OK_SELECT)
				elog(ERROR, "pg_agents: resource type lookup failed: %s", SPI_result_code_string(ret));
			f->own_type_registered = SPI_processed > 0;
		}
		return true;
	}

	SpiUtilKeptPlan(&plan_agent,
				"SELECT a.hourly_run_cap::pg_catalog.int8, "
				"  $3 IS NOT NULL AND EXISTS (SELECT 1 FROM agent.resource_tables r "
				"    WHERE r.resource_type OPERATOR(pg_catalog.=) $3) "
				"FROM agent.agents a WHERE a.workspace_id OPERATOR(pg_catalog.=) $2 "
				"AND a.id OPERATOR(pg_catalog.=) $1 "
				"AND a.status OPERATOR(pg_catalog.=) 'active' AND a.deleted_at IS NULL",
				3, types);
	if (resource_type != NULL)
	{
		args[2] = CStringGetTextDatum(resource_type);
		nulls[2] = ' ';
	}
	ret = SPI_execute_plan(plan_agent, args, nulls, false, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "pg_agents: agent lookup failed: %s", SPI_result_code_string(ret));
	if (SPI_processed == 0)
		return false;
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	f->has_cap = !isnull;
	f->cap = isnull ? 0 : DatumGetInt64(d);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
	f->own_type_registered = isnull || DatumGetBool(d);
	return true;
}

/*
 * The length of the self-retrigger chain an event of agent agent_id starts:
 * 1 plus the chain of the run the session works for, when that run is one of
 * the same agent.
 */
static int
SelfChain(int64 agent_id, const char *workspace_id)
{
	const char *rid = pg_agents_run_id;
	int64		run_id = 0;
	const char *p;
	Oid			types[2] = {INT8OID, TEXTOID};
	Datum		args[2];
	int			ret;
	int			chain = 0;

	if (rid == NULL || *rid == '\0' || strlen(rid) > 18)
		return 1;
	for (p = rid; *p; p++)
	{
		if (!isdigit((unsigned char) *p))
			return 1;
		run_id = run_id * 10 + (*p - '0');
	}
	SpiUtilKeptPlan(&plan_parent,
				"SELECT r.agent_id, COALESCE((r.input OPERATOR(pg_catalog.->>) 'self_chain')::pg_catalog.int4, 0) "
				"FROM agent.runs r WHERE r.workspace_id OPERATOR(pg_catalog.=) $2 "
				"AND r.id OPERATOR(pg_catalog.=) $1",
				2, types);
	args[0] = Int64GetDatum(run_id);
	/* a run of the same agent is a run of the trigger's workspace */
	args[1] = CStringGetTextDatum(workspace_id);
	ret = SPI_execute_plan(plan_parent, args, NULL, false, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "pg_agents: run lookup failed: %s", SPI_result_code_string(ret));
	if (SPI_processed > 0)
	{
		bool		isnull;
		int64		owner = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);

		if (owner == agent_id && !isnull)
			chain = DatumGetInt32(d);
	}
	return chain + 1;
}

/* Records that a self-retrigger chain was stopped: audit row and notice. */
static void
ReportLoopStopped(EventCtx *ev, Candidate *c, int chain)
{
	Oid			types[4] = {TEXTOID, TEXTOID, JSONBOID, TEXTOID};
	Datum		args[4];
	JsonbParseState *st = NULL;
	JsonbValue *res;
	int			ret;

	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	PushEventFields(&st, ev);
	JsonbBuildIntField(&st, "agent_id", c->agent_id);
	JsonbBuildIntField(&st, "self_chain", chain);
	JsonbBuildIntField(&st, "cap", pg_agents_self_retrigger_cap);
	res = pushJsonbValue(&st, WJB_END_OBJECT, NULL);

	SpiUtilKeptPlan(&plan_audit,
				"SELECT agent._audit_event('event.self_retrigger_capped', 'denied', 'trigger', $1, $2, NULL, $3, $4, 'self_retrigger_cap')",
				4, types);
	args[0] = CStringGetTextDatum(psprintf(INT64_FORMAT, c->id));
	args[1] = CStringGetTextDatum(c->workspace_id);
	args[2] = JsonbPGetDatum(JsonbValueToJsonb(res));
	args[3] = CStringGetTextDatum(psprintf("self-retrigger chain of agent " INT64_FORMAT " stopped after %d runs",
										   c->agent_id, chain - 1));
	ret = SPI_execute_plan(plan_audit, args, NULL, false, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "pg_agents: audit failed: %s", SPI_result_code_string(ret));

	ereport(NOTICE,
			(errmsg("self-retrigger chain of agent " INT64_FORMAT " stopped after %d runs",
					c->agent_id, chain - 1),
			 errdetail("Trigger " INT64_FORMAT " allows self-retriggering up to pg_agents.self_retrigger_cap = %d runs in a chain.",
					   c->id, pg_agents_self_retrigger_cap)));
}

/*
 * Anti-loop report: an event of the agent's own write was dropped for this
 * trigger.  The trigger counts it (self_skipped, self_skipped_at) and, at most
 * once an hour (self_skip_reported_at), an audit row event.self_skipped says
 * how many were dropped in all.  Written in the caller's transaction: a
 * rolled-back write leaves no count; a read-only transaction records nothing.
 */
static void
ReportSelfSkipped(EventCtx *ev, Candidate *c)
{
	Oid			types[2] = {INT8OID, TEXTOID};
	Datum		args[2];
	int			ret;
	bool		isnull;
	bool		report;
	int64		total;

	if (XactReadOnly)
		return;
	SpiUtilKeptPlan(&plan_self_skip,
				"WITH o AS (SELECT x.self_skip_reported_at AS old FROM agent.triggers x "
				"  WHERE x.workspace_id OPERATOR(pg_catalog.=) $2 AND x.id OPERATOR(pg_catalog.=) $1 FOR UPDATE) "
				"UPDATE agent.triggers t SET self_skipped = t.self_skipped OPERATOR(pg_catalog.+) 1, "
				"  self_skipped_at = pg_catalog.now(), "
				"  self_skip_reported_at = CASE WHEN o.old IS NULL "
				"    OR o.old OPERATOR(pg_catalog.<=) (pg_catalog.now() OPERATOR(pg_catalog.-) pg_catalog.interval '1 hour') "
				"    THEN pg_catalog.now() ELSE o.old END "
				"FROM o WHERE t.workspace_id OPERATOR(pg_catalog.=) $2 AND t.id OPERATOR(pg_catalog.=) $1 "
				"RETURNING (o.old IS NULL "
				"  OR o.old OPERATOR(pg_catalog.<=) (pg_catalog.now() OPERATOR(pg_catalog.-) pg_catalog.interval '1 hour')), "
				"  t.self_skipped",
				2, types);
	args[0] = Int64GetDatum(c->id);
	args[1] = CStringGetTextDatum(c->workspace_id);
	ret = SPI_execute_plan(plan_self_skip, args, NULL, false, 0);
	if (ret != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "pg_agents: could not update trigger: %s", SPI_result_code_string(ret));
	if (SPI_processed != 1)
		return;
	report = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)) && !isnull;
	total = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	if (!report)
		return;
	{
		Oid			atypes[4] = {TEXTOID, TEXTOID, JSONBOID, TEXTOID};
		Datum		aargs[4];
		JsonbParseState *st = NULL;
		JsonbValue *res;

		pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
		PushEventFields(&st, ev);
		JsonbBuildIntField(&st, "agent_id", c->agent_id);
		JsonbBuildIntField(&st, "self_skipped", total);
		res = pushJsonbValue(&st, WJB_END_OBJECT, NULL);
		SpiUtilKeptPlan(&plan_self_audit,
					"SELECT agent._audit_event('event.self_skipped', 'denied', 'trigger', $1, $2, NULL, $3, $4, 'self_event')",
					4, atypes);
		aargs[0] = CStringGetTextDatum(psprintf(INT64_FORMAT, c->id));
		aargs[1] = CStringGetTextDatum(c->workspace_id);
		aargs[2] = JsonbPGetDatum(JsonbValueToJsonb(res));
		aargs[3] = CStringGetTextDatum(psprintf("own write of agent " INT64_FORMAT " did not wake trigger " INT64_FORMAT
												" (anti-loop; " INT64_FORMAT " dropped in all)",
												c->agent_id, c->id, total));
		ret = SPI_execute_plan(plan_self_audit, aargs, NULL, false, 0);
		if (ret != SPI_OK_SELECT)
			elog(ERROR, "pg_agents: audit failed: %s", SPI_result_code_string(ret));
	}
}

/* Records the fingerprint; false when the same event was seen in the window. */
static bool
DedupFirstSeen(EventCtx *ev, Candidate *c)
{
	Oid			types[5] = {TEXTOID, INT8OID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		args[5];
	TimestampTz now = GetCurrentTransactionStartTimestamp();
	int			ret;

	if (pg_agents_dedup_window <= 0)
		return true;
	/*
	 * A concurrent insert of the same key waits for the first transaction:
	 * if it commits, the row is within the window and nothing is returned;
	 * if it rolls back, this one inserts.  An expired fingerprint is
	 * refreshed in place, and that event counts as new.  The time (now())
	 * and the window's cutoff are parameters: Citus refuses a stable
	 * function or operator (timestamptz - interval) in the conflict clause
	 * of a distributed table.
	 */
	SpiUtilKeptPlan(&plan_dedup,
				"INSERT INTO agent.event_dedup AS d (workspace_id, trigger_id, fingerprint, seen_at) "
				"VALUES ($1, $2, $3, $4) "
				"ON CONFLICT (workspace_id, trigger_id, fingerprint) DO UPDATE SET seen_at = excluded.seen_at "
				"WHERE d.seen_at OPERATOR(pg_catalog.<=) $5 "
				"RETURNING 1",
				5, types);
	args[0] = CStringGetTextDatum(c->workspace_id);
	args[1] = Int64GetDatum(c->id);
	args[2] = CStringGetTextDatum(Fingerprint(ev));
	args[3] = TimestampTzGetDatum(now);
	args[4] = TimestampTzGetDatum(now - (TimestampTz) pg_agents_dedup_window * USECS_PER_SEC);
	ret = SPI_execute_plan(plan_dedup, args, NULL, false, 0);
	if (ret != SPI_OK_INSERT_RETURNING)
		elog(ERROR, "pg_agents: dedup failed: %s", SPI_result_code_string(ret));
	return SPI_processed > 0;
}

/*
 * An automation and a trigger launching the agent through one trigger on the
 * same event within the dedup window make one run (sql/src/410_overlaps.sql);
 * false when this launch is the second.  The common case (a first launch, or
 * the same launcher again) is one upsert of agent.event_launches; only a
 * launch that meets the other launcher calls agent._launch_first, which
 * counts and reports it.
 */
static bool LaunchMemoKey(EventCtx *ev, Candidate *c, char *key);
static bool LaunchMemoFound(const char *key);
static void LaunchMemoRemember(const char *key);
static void LastRunForget(void);

static bool
LaunchFirst(EventCtx *ev, Candidate *c)
{
	Oid			types[9] = {TEXTOID, INT8OID, INT8OID, TEXTOID, TEXTOID, TEXTOID, JSONBOID, TEXTOID, TIMESTAMPTZOID};
	Datum		args[9];
	char		nulls[9] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	bool		isnull;
	int			ret;
	char		key[33];
	bool		memo;

	if (pg_agents_dedup_window <= 0)
		return true;
	memo = LaunchMemoKey(ev, c, key);
	if (memo && LaunchMemoFound(key))
		return true;
	SpiUtilKeptPlan(&plan_launch,
				"INSERT INTO agent.event_launches AS x (workspace_id, trigger_id, launch_key, seen_at, source) "
				"VALUES ($1, $2, pg_catalog.md5(pg_catalog.concat_ws(E'\\x01', $4, $5, "
				"  COALESCE($6, ''), COALESCE($7 OPERATOR(pg_catalog.->>) 'row_id', ''))), "
				"  pg_catalog.now(), COALESCE('automation:' OPERATOR(pg_catalog.||) $8, 'trigger')) "
				"ON CONFLICT (workspace_id, trigger_id, launch_key) DO UPDATE "
				"SET seen_at = excluded.seen_at, source = excluded.source "
				"WHERE x.source OPERATOR(pg_catalog.=) excluded.source "
				"   OR x.seen_at OPERATOR(pg_catalog.<=) $9 "
				"RETURNING 1",
				9, types);
	args[0] = CStringGetTextDatum(c->workspace_id);
	args[1] = Int64GetDatum(c->id);
	args[2] = Int64GetDatum(c->agent_id);
	args[3] = CStringGetTextDatum(ev->event_name);
	args[4] = CStringGetTextDatum(ev->resource_type);
	if (ev->resource_id)
		args[5] = CStringGetTextDatum(ev->resource_id);
	else
		nulls[5] = 'n';
	args[6] = JsonbPGetDatum(ev->payload);
	if (ev->automation)
		args[7] = CStringGetTextDatum(ev->automation);
	else
		nulls[7] = 'n';
	/* the window's cutoff (timestamptz - interval is STABLE: Citus refuses it there) */
	args[8] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp() -
								  (TimestampTz) pg_agents_dedup_window * USECS_PER_SEC);
	ret = SPI_execute_plan(plan_launch, args, nulls, false, 0);
	if (ret != SPI_OK_INSERT_RETURNING)
		elog(ERROR, "pg_agents: launch dedup failed: %s", SPI_result_code_string(ret));
	if (SPI_processed > 0)
	{
		if (memo)
			LaunchMemoRemember(key);
		return true;
	}
	/* the other launcher came first (its row is locked now): count it */
	LastRunForget();
	SpiUtilKeptPlan(&plan_launch_other,
				"SELECT agent._launch_first($1, $2, $3, $4, $5, $6, $7 OPERATOR(pg_catalog.->>) 'row_id', $8)",
				8, types);
	ret = SPI_execute_plan(plan_launch_other, args, nulls, false, 1);
	if (ret != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "pg_agents: launch dedup failed: %s", SPI_result_code_string(ret));
	return DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)) || isnull;
}

/*
 * The triggers whose last_run_at this transaction already set.  now() does
 * not move within a transaction and the first UPDATE holds the trigger's row
 * until the end, so a second UPDATE would write the same value again: a new
 * row version per event (a chain every later read of the row walks) and a
 * statement with its triggers, for nothing.  Forgotten at the end of the
 * transaction, and wholly when a subtransaction rolls back (its UPDATE may
 * have been undone: the next event writes it again, which is always right).
 */
typedef struct LastRunMemo
{
	int64		trigger_id;		/* hash key */
	char	   *workspace_id;
} LastRunMemo;

/*
 * The launches (agent.event_launches) this transaction already recorded as
 * first, by their key: the same launcher again on the same key within the
 * transaction would upsert the same row to the same values (seen_at is
 * now(), the source the same; the row stays locked by this transaction), so
 * it is first again without a statement.  Forgotten like the memo above, and
 * whenever a launch meets the other launcher (agent._launch_first may change
 * the row).
 */
typedef struct LaunchMemo
{
	char		key[33];		/* md5 of workspace, trigger, launch key, source */
} LaunchMemo;

static MemoryContext last_run_cxt = NULL;
static HTAB *last_run_memo = NULL;
static HTAB *launch_memo = NULL;
static bool last_run_callbacks = false;

static void
LastRunForget(void)
{
	last_run_memo = NULL;
	launch_memo = NULL;
	if (last_run_cxt != NULL)
		MemoryContextReset(last_run_cxt);
}

static void
LastRunXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			LastRunForget();
			break;
		default:
			break;
	}
}

static void
LastRunSubXactCallback(SubXactEvent event, SubTransactionId mySubid,
					   SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		LastRunForget();
}

/* the callbacks (once a process) and the memos' memory context */
static void
MemoInit(void)
{
	if (!last_run_callbacks)
	{
		RegisterXactCallback(LastRunXactCallback, NULL);
		RegisterSubXactCallback(LastRunSubXactCallback, NULL);
		last_run_callbacks = true;
	}
	if (last_run_cxt == NULL)
		last_run_cxt = AllocSetContextCreate(TopMemoryContext, "pg_agents dispatch memo",
											 ALLOCSET_SMALL_SIZES);
}

/* whether this transaction already set the trigger's last_run_at */
static bool
LastRunDone(const Candidate *c)
{
	LastRunMemo *m;

	if (last_run_memo == NULL)
		return false;
	m = hash_search(last_run_memo, &c->id, HASH_FIND, NULL);
	return m != NULL && strcmp(m->workspace_id, c->workspace_id) == 0;
}

/* records that this transaction set the trigger's last_run_at */
static void
LastRunRemember(const Candidate *c)
{
	LastRunMemo *m;
	bool		found;

	MemoInit();
	if (last_run_memo == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(int64);
		ctl.entrysize = sizeof(LastRunMemo);
		ctl.hcxt = last_run_cxt;
		last_run_memo = hash_create("pg_agents last_run memo", 16, &ctl,
									HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	m = hash_search(last_run_memo, &c->id, HASH_ENTER, &found);
	/* (two workspaces' triggers of one id: the later one is remembered) */
	m->workspace_id = MemoryContextStrdup(last_run_cxt, c->workspace_id);
}

/*
 * The memo key of a launch, or false when the launch is not memoized (a
 * row_id that is not a string: its ->> text is left to SQL).
 */
static bool
LaunchMemoKey(EventCtx *ev, Candidate *c, char *key)
{
	StringInfoData buf;
	const char *errstr = NULL;
	JsonbValue *v = NULL;

	if (JsonContainerIsObject(&ev->payload->root))
		v = getKeyJsonValueFromContainer(&ev->payload->root, "row_id", 6, NULL);
	if (v != NULL && v->type != jbvString && v->type != jbvNull)
		return false;
	initStringInfo(&buf);
	appendStringInfo(&buf, "%s%c" INT64_FORMAT "%c%s%c%s%c%s%c", c->workspace_id, '\0', c->id, '\0',
					 ev->event_name, '\0', ev->resource_type, '\0',
					 ev->resource_id ? ev->resource_id : "", '\0');
	if (v != NULL && v->type == jbvString)
		appendBinaryStringInfo(&buf, v->val.string.val, v->val.string.len);
	appendStringInfoChar(&buf, '\0');
	if (ev->automation)
		appendStringInfo(&buf, "automation:%s", ev->automation);
	else
		appendStringInfoString(&buf, "trigger");
	if (!pg_md5_hash(buf.data, buf.len, key, &errstr))
		elog(ERROR, "pg_agents: could not compute launch key: %s", errstr ? errstr : "?");
	pfree(buf.data);
	return true;
}

static bool
LaunchMemoFound(const char *key)
{
	return launch_memo != NULL && hash_search(launch_memo, key, HASH_FIND, NULL) != NULL;
}

static void
LaunchMemoRemember(const char *key)
{
	MemoInit();
	if (launch_memo == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = 33;
		ctl.entrysize = sizeof(LaunchMemo);
		ctl.hcxt = last_run_cxt;
		launch_memo = hash_create("pg_agents launch memo", 16, &ctl,
								  HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	}
	(void) hash_search(launch_memo, key, HASH_ENTER, NULL);
}

/* whether a payload has the shape of a row: "table", and "row" or "old" (agent._withhold_payload) */
static bool
PayloadHasRow(Jsonb *payload)
{
	JsonbContainer *jc = &payload->root;

	if (!JsonContainerIsObject(jc))
		return false;
	return getKeyJsonValueFromContainer(jc, "table", 5, NULL) != NULL &&
		(getKeyJsonValueFromContainer(jc, "row", 3, NULL) != NULL ||
		 getKeyJsonValueFromContainer(jc, "old", 3, NULL) != NULL);
}

/*
 * the run of one matched trigger (agent._enqueue_run), with the event as its
 * input; returns the run's id
 */
static int64
Enqueue(EventCtx *ev, Candidate *c, bool mention, int self_chain, const AgentFacts *facts)
{
	Oid			types[8] = {INT8OID, TEXTOID, JSONBOID, INT8OID, TEXTOID, JSONBOID, TEXTOID, TEXTOID};
	Datum		args[8];
	char		nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	JsonbParseState *st = NULL;
	JsonbValue *res;
	int			ret;
	bool		isnull;
	Datum		d;
	int64		run_id;
	EnqueueArgs ea;

	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	PushEventFields(&st, ev);
	JsonbBuildTextField(&st, "prompt", c->prompt);
	if (ev->automation)
		JsonbBuildTextField(&st, "automation", ev->automation);
	if (self_chain > 0)
		JsonbBuildIntField(&st, "self_chain", self_chain);

	/*
	 * The payload is stored as the agent may see it: a row of a registered
	 * resource it may not read is replaced by a reference and the reason
	 * (agent._withhold_payload), so that runs.input, claim_runs, the
	 * activity and run_detail never carry it.  A payload of neither shape
	 * it checks (the event's own resource of a registered type; a row:
	 * "table" with "row" or "old") is what _withhold_payload returns
	 * unchanged: it is put in as it is, without calling it.
	 */
	if (!facts->own_type_registered && !PayloadHasRow(ev->payload))
	{
		JsonbBuildKey(&st, "payload");
		JsonbBuildJsonb(&st, ev->payload);
		res = pushJsonbValue(&st, WJB_END_OBJECT, NULL);
		d = JsonbPGetDatum(JsonbValueToJsonb(res));
	}
	else
	{
		res = pushJsonbValue(&st, WJB_END_OBJECT, NULL);
		SpiUtilKeptPlan(&plan_enqueue,
					"SELECT $3 OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('payload', "
					"agent._withhold_payload($1, $6, 'autonomous', NULL, $7, $8))",
					8, types);
		args[0] = Int64GetDatum(c->agent_id);
		args[1] = CStringGetTextDatum(mention ? "mention" : "event");
		args[2] = JsonbPGetDatum(JsonbValueToJsonb(res));
		args[3] = Int64GetDatum(c->id);
		if (ev->actor)
			args[4] = CStringGetTextDatum(ev->actor);
		else
			nulls[4] = 'n';
		args[5] = JsonbPGetDatum(ev->payload);
		/* the event's own resource is checked too (a watcher's is a table) */
		if (ev->own_resource && ev->resource_id)
		{
			args[6] = CStringGetTextDatum(ev->resource_type);
			args[7] = CStringGetTextDatum(ev->resource_id);
		}
		else
			nulls[6] = nulls[7] = 'n';
		ret = SPI_execute_plan(plan_enqueue, args, nulls, false, 0);
		if (ret != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "pg_agents: could not make a run's input: %s", SPI_result_code_string(ret));
		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		if (isnull)
			elog(ERROR, "pg_agents: a run's input is NULL");
	}

	/* agent._enqueue_run, called directly (this runs as its owner already) */
	memset(&ea, 0, sizeof(ea));
	ea.has_agent = true;
	ea.agent_id = c->agent_id;
	ea.regime = "autonomous";
	ea.origin = mention ? "mention" : "event";
	ea.input = DatumGetJsonbP(d);
	ea.has_trigger = true;
	ea.trigger_id = c->id;
	ea.requested_by = ev->actor;
	ea.agent_workspace = c->workspace_id;
	ea.has_cap = facts->has_cap;
	ea.cap = facts->cap;
	run_id = EventsEnqueueRun(&ea);

	/* the trigger remembers when it last queued a run (once a transaction) */
	if (!LastRunDone(c))
	{
		Oid			ltypes[2] = {INT8OID, TEXTOID};
		Datum		largs[2] = {Int64GetDatum(c->id), CStringGetTextDatum(c->workspace_id)};

		SpiUtilKeptPlan(&plan_last_run,
					"UPDATE agent.triggers t SET last_run_at = pg_catalog.now() "
					"WHERE t.workspace_id OPERATOR(pg_catalog.=) $2 AND t.id OPERATOR(pg_catalog.=) $1",
					2, ltypes);
		ret = SPI_execute_plan(plan_last_run, largs, NULL, false, 0);
		if (ret != SPI_OK_UPDATE)
			elog(ERROR, "pg_agents: could not update trigger: %s", SPI_result_code_string(ret));
		LastRunRemember(c);
	}
	return run_id;
}

/*
 * A trigger whose filter view failed (error, time-out, no right): its
 * last_status and last_error say why.  Written in the caller's transaction
 * (a rolled-back write leaves no mark), without ever waiting: when another
 * transaction holds the trigger's row, that one records it.
 */
static void
RecordFilterError(Candidate *c, const char *msg)
{
	Oid			types[3] = {INT8OID, TEXTOID, TEXTOID};
	Datum		args[3];
	int			ret;

	/* a read-only transaction matches (or not) but records nothing */
	if (XactReadOnly)
		return;
	SpiUtilKeptPlan(&plan_filter_error,
				"UPDATE agent.triggers t SET last_status = 'error', last_error = $2 "
				"WHERE t.workspace_id OPERATOR(pg_catalog.=) $3 "
				"AND t.id OPERATOR(pg_catalog.=) (SELECT x.id FROM agent.triggers x "
				"  WHERE x.workspace_id OPERATOR(pg_catalog.=) $3 AND x.id OPERATOR(pg_catalog.=) $1 "
				"    AND (x.last_error IS NULL OR x.last_error OPERATOR(pg_catalog.<>) $2 "
				"         OR x.last_status IS NULL OR x.last_status OPERATOR(pg_catalog.<>) 'error') "
				"  FOR UPDATE SKIP LOCKED)",
				3, types);
	args[0] = Int64GetDatum(c->id);
	args[1] = CStringGetTextDatum(msg);
	args[2] = CStringGetTextDatum(c->workspace_id);
	ret = SPI_execute_plan(plan_filter_error, args, NULL, false, 0);
	if (ret != SPI_OK_UPDATE)
		elog(ERROR, "pg_agents: could not update trigger: %s", SPI_result_code_string(ret));
}

/* Processes the candidates of one event; appends run ids to *runs. */
static void
ProcessCandidates(EventCtx *ev, Candidate *items, int n, bool mention, List **runs)
{
	int64		actor_agent = ActorAgentId(ev->actor);
	PgaElevation	elev;
	int			i;
	MemoryContext outer = CurrentMemoryContext;

	RelcheckElevate(&elev);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_agents: SPI_connect failed");
	for (i = 0; i < n; i++)
	{
		Candidate  *c = &items[i];
		int			self_chain = 0;
		int64		run_id;
		AgentFacts	facts;

		/* anti-loop: an agent's own writes do not wake it, unless allowed */
		if (actor_agent != 0 && actor_agent == c->agent_id && !c->allow_self)
		{
			ReportSelfSkipped(ev, c);
			continue;
		}
		if (c->filter != NULL)
		{
			FilterEval	fe;
			bool		match;

			memset(&fe, 0, sizeof(fe));
			fe.role = c->saved_by;
			fe.trigger_id = c->id;
			match = EventsFilterMatches(c->filter, ev->payload, &fe);
			if (fe.error != NULL)
				RecordFilterError(c, fe.error);
			if (!match)
				continue;
		}
		/* suspended or deleted agents: silent */
		if (!AgentIsActive(c->agent_id, c->workspace_id,
						   ev->own_resource && ev->resource_id ? ev->resource_type : NULL, &facts))
			continue;
		if (actor_agent != 0 && actor_agent == c->agent_id)
		{
			self_chain = SelfChain(c->agent_id, c->workspace_id);
			if (self_chain > pg_agents_self_retrigger_cap)
			{
				ReportLoopStopped(ev, c, self_chain);
				continue;
			}
		}
		if (!DedupFirstSeen(ev, c))
			continue;
		if (!LaunchFirst(ev, c))
			continue;
		run_id = Enqueue(ev, c, mention, self_chain, &facts);
		{
			MemoryContext old = MemoryContextSwitchTo(outer);
			int64	   *v = palloc(sizeof(int64));

			*v = run_id;
			*runs = lappend(*runs, v);
			MemoryContextSwitchTo(old);
		}
	}
	SPI_finish();
	RelcheckRestore(&elev);
}

/*
 * Dispatches one event; returns the ids of the runs made (a List of int64
 * pointers in the current memory context).  actor NULL means the session's
 * pg_agents.actor.
 */
static List *
DispatchEvent(const char *workspace, const char *event_name, const char *resource_type,
			  const char *resource_id, Jsonb *payload, const char *actor,
			  const char *event_id, bool own_resource, const char *automation)
{
	EventCtx	ev;
	List	   *volatile runs = NIL;
	bool		mention = strcmp(event_name, "agent.mentioned") == 0;
	int64		mention_agent = 0;
	Candidate  *items;
	int			n;

	if (workspace == NULL)
	{
		EventsCountUnknownWorkspace(event_name, resource_type, resource_id,
									  "The session sets no pg_agents.workspace.");
		return NIL;
	}
	if (actor == NULL && pg_agents_actor != NULL && pg_agents_actor[0] != '\0')
		actor = pg_agents_actor;
	if (mention)
	{
		/* a mention is routed to the mentioned agent's triggers only */
		mention_agent = PayloadAgentId(payload);
		if (mention_agent == 0)
			return NIL;
	}

	memset(&ev, 0, sizeof(ev));
	ev.workspace = workspace;
	ev.event_name = event_name;
	ev.resource_type = resource_type;
	ev.resource_id = resource_id;
	ev.payload = payload;
	ev.actor = actor;
	ev.event_id = event_id;
	ev.automation = automation;
	ev.own_resource = own_resource;

	/* may flush a stale cache: no dispatch is using it at depth 0 */
	n = GetCandidates(workspace, event_name, resource_type, resource_id, mention_agent, &items);
	if (n == 0)
		return NIL;

	/* a nested dispatch (a run written to a watched table) keeps items valid */
	dispatch_depth++;
	PG_TRY();
	{
		List	   *made = NIL;

		ProcessCandidates(&ev, items, n, mention, &made);
		runs = made;
	}
	PG_FINALLY();
	{
		dispatch_depth--;
	}
	PG_END_TRY();
	return runs;
}

/* The watchers' entry point: resource_id is the watched table. */
List *
EventsDispatch(const char *workspace, const char *event_name, const char *resource_type,
				 const char *resource_id, Jsonb *payload, const char *actor,
				 const char *event_id)
{
	return DispatchEvent(workspace, event_name, resource_type, resource_id, payload,
						 actor, event_id, false, NULL);
}

/* text argument n as a C string, NULL for SQL NULL */
static char *
TextArgOrNull(FunctionCallInfo fcinfo, int n)
{
	return PG_ARGISNULL(n) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(n));
}

/* The checked arguments of agent.fire_event (and agent._fire_event_in). */
typedef struct FireArgs
{
	char	   *event_name;
	char	   *resource_type;
	char	   *resource_id;
	Jsonb	   *payload;
	char	   *actor;
	char	   *event_id;
	char	   *automation;
} FireArgs;

/* Reads and checks the event's arguments, the first at argument 'first'. */
static void
GetFireArgs(FunctionCallInfo fcinfo, int first, FireArgs *a)
{
	a->event_name = TextArgOrNull(fcinfo, first);
	a->resource_type = TextArgOrNull(fcinfo, first + 1);
	a->resource_id = TextArgOrNull(fcinfo, first + 2);
	a->actor = TextArgOrNull(fcinfo, first + 4);
	a->event_id = TextArgOrNull(fcinfo, first + 5);
	/* the automation label (0.4.0; absent until ALTER EXTENSION ... UPDATE) */
	a->automation = PG_NARGS() > first + 6 ? TextArgOrNull(fcinfo, first + 6) : NULL;

	if (a->event_name == NULL || a->event_name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("event_name must not be empty")));
	if (a->resource_type == NULL || a->resource_type[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("resource_type must not be empty")));
	if (PG_ARGISNULL(first + 3))
		a->payload = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum("{}")));
	else
		a->payload = PG_GETARG_JSONB_P(first + 3);
	if (!JsonContainerIsObject(&a->payload->root) || JsonContainerIsScalar(&a->payload->root))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("event payload must be a JSON object")));
	if (a->actor != NULL && a->actor[0] == '\0')
		a->actor = NULL;
	if (a->event_id != NULL && a->event_id[0] == '\0')
		a->event_id = NULL;
	if (a->automation != NULL && a->automation[0] == '\0')
		a->automation = NULL;
	if (a->automation != NULL && strlen(a->automation) > 200)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("automation label is too long"),
				 errdetail("An automation label has at most 200 bytes.")));
}

/* Returns the run ids of a list (of int64 pointers) as the function's rows. */
static void
ReturnRuns(FunctionCallInfo fcinfo, List *runs)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ListCell   *lc;

	foreach(lc, runs)
	{
		Datum		value = Int64GetDatum(*(int64 *) lfirst(lc));
		bool		isnull = false;

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &value, &isnull);
	}
}

/* a quoted SQL literal of s, or NULL */
static void
AppendLiteral(StringInfo buf, const char *s, const char *cast)
{
	if (s == NULL)
		appendStringInfoString(buf, "NULL");
	else
		appendStringInfoString(buf, quote_literal_cstr(s));
	appendStringInfoString(buf, cast);
}

/*
 * On Citus, in a transaction block: agent._fire_event_in, the distributed
 * function (docs/scaling.md), called as the caller through SPI with constant
 * arguments, which Citus delegates to the node of the workspace over the
 * connection that already wrote that workspace's placements in this
 * transaction (as the same user), where the event is dispatched.  Dispatching
 * here would read and write the placements as the owner of schema "agent",
 * on a second connection, which Citus refuses after the application's own
 * writes of the workspace ("modified in this transaction by a different
 * user").  False (nothing done) when the function is missing (the extension
 * not yet updated) or not distributed: the event is then dispatched here.
 */
static bool
DispatchThroughCitus(const char *workspace, FireArgs *a, List **runs)
{
	static Oid	fire_in_oid = InvalidOid;
	Oid			nsp;
	StringInfoData q;
	uint64		i;
	int			ret;
	MemoryContext outer = CurrentMemoryContext;

	if (!IsTransactionBlock() || dispatch_depth > 0)
		return false;
	if (!OidIsValid(triggers_relid))
		RefreshCache();
	if (!OidIsValid(triggers_relid) || !RelcheckCitusManaged(triggers_relid))
		return false;
	nsp = get_namespace_oid("agent", true);
	if (!OidIsValid(nsp))
		return false;
	if (!OidIsValid(fire_in_oid) ||
		!SearchSysCacheExists1(PROCOID, ObjectIdGetDatum(fire_in_oid)))
	{
		Oid			argtypes[8] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID,
		TEXTOID, TEXTOID, TEXTOID};
		oidvector  *args = buildoidvector(argtypes, 8);
		HeapTuple	tup = SearchSysCache3(PROCNAMEARGSNSP, CStringGetDatum("_fire_event_in"),
										  PointerGetDatum(args), ObjectIdGetDatum(nsp));

		if (!HeapTupleIsValid(tup))
			return false;
		fire_in_oid = ((Form_pg_proc) GETSTRUCT(tup))->oid;
		ReleaseSysCache(tup);
	}

	/* the session's actor is named: the node's own may be another */
	if (a->actor == NULL && pg_agents_actor != NULL && pg_agents_actor[0] != '\0')
		a->actor = pg_agents_actor;
	initStringInfo(&q);
	appendStringInfoString(&q, "SELECT r FROM agent._fire_event_in(");
	AppendLiteral(&q, workspace, "::pg_catalog.text, ");
	AppendLiteral(&q, a->event_name, "::pg_catalog.text, ");
	AppendLiteral(&q, a->resource_type, "::pg_catalog.text, ");
	AppendLiteral(&q, a->resource_id, "::pg_catalog.text, ");
	AppendLiteral(&q, JsonbToCString(NULL, &a->payload->root, VARSIZE(a->payload)),
				  "::pg_catalog.jsonb, ");
	AppendLiteral(&q, a->actor, "::pg_catalog.text, ");
	AppendLiteral(&q, a->event_id, "::pg_catalog.text, ");
	AppendLiteral(&q, a->automation, "::pg_catalog.text) AS r");

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_agents: SPI_connect failed");
	ret = SPI_execute(q.data, false, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "pg_agents: could not dispatch the event through agent._fire_event_in: %s",
			 SPI_result_code_string(ret));
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
		MemoryContext old;
		int64	   *v;

		if (isnull)
			continue;
		old = MemoryContextSwitchTo(outer);
		v = palloc(sizeof(int64));
		*v = DatumGetInt64(d);
		*runs = lappend(*runs, v);
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	return true;
}

/*
 * agent.fire_event(event_name text, resource_type text, resource_id text,
 *                  payload jsonb DEFAULT '{}', actor text DEFAULT NULL,
 *                  event_id text DEFAULT NULL, automation text DEFAULT NULL)
 *   RETURNS SETOF bigint
 */
Datum
pg_agents_fire_event(PG_FUNCTION_ARGS)
{
	FireArgs	a;
	const char *workspace;
	List	   *runs = NIL;

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	GetFireArgs(fcinfo, 0, &a);

	/*
	 * The event belongs to the session's workspace.  A non-superuser session
	 * without one is refused like every API call; a superuser session
	 * without one fires an event of no workspace, which wakes nobody (and is
	 * counted).
	 */
	workspace = AccessSessionWorkspace();
	if (workspace == NULL && !superuser_arg(GetOuterUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("pg_agents.workspace is not set"),
				 errdetail("Every call of the pg_agents API works inside the session's workspace."),
				 errhint("SET LOCAL pg_agents.workspace = '<workspace id>' for each request (or ALTER DATABASE ... SET pg_agents.workspace for a single-tenant database).")));

	if (workspace == NULL || !DispatchThroughCitus(workspace, &a, &runs))
		runs = DispatchEvent(workspace, a.event_name, a.resource_type, a.resource_id, a.payload,
							 a.actor, a.event_id, true, a.automation);
	ReturnRuns(fcinfo, runs);
	return (Datum) 0;
}

/*
 * agent._fire_event_in(workspace_id text, event_name text, resource_type text,
 *                      resource_id text, payload jsonb, actor text,
 *                      event_id text, automation text)
 *   RETURNS SETOF bigint
 *
 * agent.fire_event on the node of the workspace (DispatchThroughCitus): the
 * workspace named must be the session's, as it is there (Citus sends the
 * transaction's SET LOCAL commands along, docs/scaling.md).
 */
Datum
pg_agents_fire_event_in(PG_FUNCTION_ARGS)
{
	FireArgs	a;
	char	   *workspace = TextArgOrNull(fcinfo, 0);
	const char *session = AccessSessionWorkspace();
	List	   *runs;

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	GetFireArgs(fcinfo, 1, &a);
	if (session == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("pg_agents.workspace is not set on the node of workspace \"%s\"",
						workspace ? workspace : ""),
				 errdetail("Every call of the pg_agents API works inside the session's workspace."),
				 errhint("On Citus, set it with SET LOCAL pg_agents.workspace inside the transaction block, or with agent.set_identity() (see docs/scaling.md).")));
	if (workspace == NULL || strcmp(workspace, session) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to fire an event in workspace \"%s\"",
						workspace ? workspace : ""),
				 errdetail("The session's workspace is \"%s\".", session)));
	runs = DispatchEvent(workspace, a.event_name, a.resource_type, a.resource_id, a.payload,
						 a.actor, a.event_id, true, a.automation);
	ReturnRuns(fcinfo, runs);
	return (Datum) 0;
}

/*
 * Statement trigger on agent.triggers: tells every backend (at commit) and
 * this one (at once) that the cached candidate triggers are stale.
 */
Datum
pg_agents_triggers_changed(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("agent._triggers_changed() must be called as a trigger")));
	CacheInvalidateRelcache(trigdata->tg_relation);
	return PointerGetDatum(NULL);
}
