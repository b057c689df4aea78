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

#include "access/htup_details.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "funcapi.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/snapmgr.h"
#include "utils/uuid.h"

#include "compat.h"
#include "pg_agents.h"

PG_FUNCTION_INFO_V1(pg_agents_allowlist_active);
PG_FUNCTION_INFO_V1(pg_agents_allowlist_invalidate);
PG_FUNCTION_INFO_V1(pg_agents_allowlist_ids);
PG_FUNCTION_INFO_V1(pg_agents_readable_ids);
PG_FUNCTION_INFO_V1(pg_agents_access_changed);
PG_FUNCTION_INFO_V1(pg_agents_readable_set_stats);

/* whether the last value assigned to pg_agents.actor named an agent */
static bool actor_is_agent = false;

/*
 * True when an actor string is "agent:<1 to 18 digits>", the same rule as
 * agent.current_agent_id().
 */
bool
PgAgentsActorIsAgent(const char *actor)
{
	const char *p;
	int			n = 0;

	if (actor == NULL || strncmp(actor, "agent:", 6) != 0)
		return false;
	for (p = actor + 6; *p; p++)
	{
		if (!isdigit((unsigned char) *p))
			return false;
		n++;
	}
	return n >= 1 && n <= 18;
}

/*
 * Assign hook of pg_agents.actor: a change between "acts as an agent" and
 * "does not" invalidates the backend's cached plans, which may hold a folded
 * allowlist policy.  Assign hooks must not fail; ResetPlanCache only marks
 * plans invalid.
 */
void
PgAgentsActorAssign(const char *newval, void *extra)
{
	bool		is_agent = PgAgentsActorIsAgent(newval);

	if (is_agent != actor_is_agent)
	{
		actor_is_agent = is_agent;
		ResetPlanCache();
	}
}

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
 * id column.  The array is computed by PgAgentsReadableIds (access.c, the
 * decision of agent.can_access for each candidate) and kept in the backend
 * for as long as the access data it was computed from cannot have changed.
 * Two ways to know:
 *
 * - kept across statements (READ COMMITTED, the library preloaded, not on a
 *   standby, the transaction has not changed access data itself, no custom
 *   ACL function): the access generation of src/shmem.c is sampled, then the
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
	IdsSnapKey	key;			/* not shared: the snapshot */
	MemoryContext cxt;			/* holds all of the entry */
} IdsEntry;

#define IDS_CACHE_ENTRIES 8

static MemoryContext ids_cxt = NULL;
static IdsEntry ids_cache[IDS_CACHE_ENTRIES];
static int64 ids_computed = 0;	/* statistics of this backend */
static int64 ids_reused = 0;
static int	ids_next = 0;		/* round-robin replacement */

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
}

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

/* may the set outlive the statement through the access generation? */
static bool
CanKeepAcrossStatements(void)
{
	return PgAgentsShmemAvailable() && !IsolationUsesXactSnapshot() &&
		!RecoveryInProgress() && !IsInParallelMode() &&
		!PgAgentsAccessChangedInXact();
}

/*
 * The readable set of an agent for a type and mode as an array of elemtype,
 * kept while it cannot have changed (see above).  Returns a copy in the
 * caller's memory context.
 */
static Datum
ReadableIdsArray(int64 agent_id, const char *rtype, bool edit, Oid elemtype)
{
	Oid			access_rel = PgAgentsAccessRelid();
	IdsEntry   *e = FindEntry(agent_id, rtype, edit, elemtype, access_rel);
	MemoryContext scratch;
	MemoryContext old;
	Datum		arr;
	bool		custom_acl = false;

	if (!ActiveSnapshotSet())
		elog(ERROR, "pg_agents: the readable set needs an active snapshot");

	scratch = AllocSetContextCreate(CurrentMemoryContext, "pg_agents readable set",
									ALLOCSET_DEFAULT_SIZES);
	if (CanKeepAcrossStatements())
	{
		uint64		gen;
		TransactionId inflight[PG_AGENTS_ACCESS_INFLIGHT];
		int			ninflight;
		bool		keep = PgAgentsAccessSample(&gen, inflight, &ninflight);

		if (keep && e != NULL && e->shared && e->gen == gen)
		{
			int			i;
			bool		valid = true;

			for (i = 0; i < e->ninflight && valid; i++)
				valid = TransactionIdIsInProgress(e->inflight[i]);
			if (valid)
			{
				MemoryContextDelete(scratch);
				ids_reused++;
				return PointerGetDatum(DatumGetArrayTypePCopy(e->array));
			}
		}
		/* compute under a snapshot taken after the sample */
		old = MemoryContextSwitchTo(scratch);
		PushActiveSnapshot(GetLatestSnapshot());
		arr = ComputeIdsArray(agent_id, rtype, edit, elemtype, &custom_acl);
		PopActiveSnapshot();
		MemoryContextSwitchTo(old);
		if (keep && !custom_acl)
		{
			e = NewEntry(e, agent_id, rtype, edit, elemtype, access_rel, arr);
			e->shared = true;
			e->gen = gen;
			e->ninflight = ninflight;
			if (ninflight > 0)
			{
				e->inflight = MemoryContextAlloc(e->cxt, sizeof(TransactionId) * ninflight);
				memcpy(e->inflight, inflight, sizeof(TransactionId) * ninflight);
			}
		}
		else if (e != NULL)
			DropEntry(e);
	}
	else
	{
		IdsSnapKey	key;

		IdsSnapKeyFor(GetActiveSnapshot(), &key);
		if (e != NULL && !e->shared && memcmp(&key, &e->key, sizeof(key)) == 0)
		{
			MemoryContextDelete(scratch);
			ids_reused++;
			return PointerGetDatum(DatumGetArrayTypePCopy(e->array));
		}
		old = MemoryContextSwitchTo(scratch);
		arr = ComputeIdsArray(agent_id, rtype, edit, elemtype, &custom_acl);
		MemoryContextSwitchTo(old);
		e = NewEntry(e, agent_id, rtype, edit, elemtype, access_rel, arr);
		e->key = key;
	}
	ids_computed++;
	arr = PointerGetDatum(DatumGetArrayTypePCopy(arr));
	MemoryContextDelete(scratch);
	return arr;
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

/*
 * agent._access_changed() RETURNS trigger: statement trigger on the access
 * tables; the transaction changes access data (src/shmem.c).
 */
Datum
pg_agents_access_changed(PG_FUNCTION_ARGS)
{
	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("agent._access_changed() must be called as a trigger")));
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
