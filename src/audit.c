/*-------------------------------------------------------------------------
 *
 * audit.c
 *		The audit log: C row triggers on audited tables, the extension's own
 *		audit events, the append-only guard, retention purge.
 *
 * Rows are written straight into agent.audit_log's monthly partitions with
 * heap_multi_insert and index inserts (as COPY FROM writes a partitioned
 * table), not through SPI: no plan, no permission check, no snapshot per
 * row.  That is also what lets an unprivileged role's changes be recorded
 * while that role has no INSERT privilege on the log: only this code writes
 * it.  The rows of a statement are buffered and written when it ends (see
 * "The writer" below).
 *
 * The guard (BEFORE UPDATE/DELETE/TRUNCATE triggers, enabled ALWAYS, on the
 * log and on each partition) refuses every change to existing rows, except
 * inside agent.purge_audit() (rows past the retention period),
 * agent._audit_default_move() (rows leaving the default partition for their
 * month's) and agent._audit_backdate() (superuser, tests), which raise
 * backend-local flags that SQL cannot set.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/detoast.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "catalog/pg_class.h"
#include "nodes/parsenodes.h"
#include "nodes/primnodes.h"
#include "access/tupconvert.h"
#include "executor/execPartition.h"
#include "nodes/execnodes.h"
#include "commands/sequence.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "audit.h"
#include "compat.h"
#include "guc.h"
#include "redact.h"

PG_FUNCTION_INFO_V1(pg_agents_audit_trigger);
PG_FUNCTION_INFO_V1(pg_agents_caller);
PG_FUNCTION_INFO_V1(pg_agents_audit_event);
PG_FUNCTION_INFO_V1(pg_agents_audit_table_event);
PG_FUNCTION_INFO_V1(pg_agents_audit_guard);
PG_FUNCTION_INFO_V1(pg_agents_purge_audit);
PG_FUNCTION_INFO_V1(pg_agents_audit_backdate);
PG_FUNCTION_INFO_V1(pg_agents_audit_default_move);

#define SUMMARY_MAX		500

/* ------------------------------------------------------------------------
 * The audit_log relation
 * ------------------------------------------------------------------------
 */
enum
{
	AL_ID, AL_AT, AL_ACTOR_KIND, AL_ACTOR_ID, AL_ON_BEHALF_OF, AL_DB_USER,
	AL_RUN_ID, AL_SURFACE, AL_ACTION, AL_STATUS, AL_ERROR_CODE,
	AL_TARGET_TYPE, AL_TARGET_ID, AL_OWNER_ID, AL_WORKSPACE_ID, AL_INPUTS,
	AL_CHANGES, AL_SUMMARY, AL_TXID, AL_NCOLS
};

static const char *const al_names[AL_NCOLS] = {
	"id", "at", "actor_kind", "actor_id", "on_behalf_of", "db_user",
	"run_id", "surface", "action", "status", "error_code",
	"target_type", "target_id", "owner_id", "workspace_id", "inputs",
	"changes", "summary", "txid"
};

static Oid	al_relid = InvalidOid;
static Oid	al_seqid = InvalidOid;
static AttrNumber al_attnum[AL_NCOLS];

/* one audit row, before it is formed */
typedef struct AuditRow
{
	const char *actor_kind;
	const char *actor_id;
	const char *on_behalf_of;
	bool		has_run_id;
	int64		run_id;
	const char *surface;
	const char *action;
	const char *status;
	const char *error_code;
	const char *target_type;
	const char *target_id;
	const char *owner_id;
	const char *workspace_id;
	Jsonb	   *inputs;
	Jsonb	   *changes;
	const char *summary;
} AuditRow;

/* per-trigger description of an audited table */
typedef struct AuditCol
{
	char	   *name;
	Oid			typid;
	Oid			basetypid;
	int16		typlen;
	bool		typbyval;
	char		kind;			/* b i f n s N j J d o, or 0 for dropped */
	bool		sensitive;
	FmgrInfo	out;
} AuditCol;

typedef struct AuditTrigInfo
{
	Oid			tgoid;			/* hash key */
	Oid			relid;
	bool		valid;
	MemoryContext cxt;
	int			natts;
	AuditCol   *cols;
	char	   *qualname;
	char	   *target_type;
	AttrNumber	owner_att;
	AttrNumber	workspace_att;
	int			npk;
	AttrNumber	pk[INDEX_MAX_KEYS];
} AuditTrigInfo;

static HTAB *trig_cache = NULL;
static MemoryContext audit_cxt = NULL;
static bool callback_registered = false;

static Oid	db_user_oid = InvalidOid;
static char db_user_name[NAMEDATALEN];

/*
 * The writer.  The rows of a statement are buffered and written together when the
 * statement ends (the statement-level trigger agent.audit_table() adds after
 * the row trigger), as COPY does: one heap_multi_insert per batch, routed to
 * the partition of their month, then the index entries.  A batch is bounded
 * (AUDIT_BATCH_ROWS rows or AUDIT_BATCH_BYTES bytes: a full buffer is written
 * at once).  Each buffered row remembers the subtransaction that made it: a
 * rolled-back subtransaction (a savepoint, a PL/pgSQL exception block, a
 * failed statement) drops its rows, a committed one hands them to its
 * parent, and a flush writes only the rows of the current subtransaction
 * (so that they share its fate).  Rows still buffered are written before
 * commit.  The named events (agent._audit_event) are written at once.
 *
 * The buffer lives in a child of TopTransactionContext; the relations are
 * opened for one flush and closed after it, so that DDL on the log later in
 * the transaction never finds it in use.
 */
#define AUDIT_BATCH_ROWS	1000
#define AUDIT_BATCH_BYTES	(1024 * 1024)

typedef struct PendingRow
{
	HeapTuple	tup;
	SubTransactionId subid;
} PendingRow;

static MemoryContext pend_cxt = NULL;
static PendingRow *pend = NULL;
static int	npend = 0;
static int	maxpend = 0;
static Size pend_bytes = 0;
static LocalTransactionId pend_lxid = InvalidLocalTransactionId;
static bool xact_callback_registered = false;

/* the relations of one flush */
typedef struct AuditInsertState
{
	Relation	rel;
	EState	   *estate;
	ResultRelInfo *rri;
	ModifyTableState *mtstate;
	PartitionTupleRouting *proute;	/* NULL: the log is not partitioned */
	TupleTableSlot *rootslot;
	TupleTableSlot **slots;
	CommandId	cid;
} AuditInsertState;

/*
 * The monthly partition the last flush wrote to, with its bounds: a flush
 * whose rows all fall in it (every one-row statement of the month) opens it
 * directly instead of setting up tuple routing.  Forgotten when the log or
 * the partition changes (relcache invalidation).
 */
static Oid	leaf_relid = InvalidOid;
static TimestampTz leaf_lo = 0;
static TimestampTz leaf_hi = 0;

/* set only by purge_audit / _audit_backdate / _audit_default_move, never from SQL */
static bool purge_active = false;
static TimestampTz purge_cutoff = 0;
static bool backdate_active = false;
static bool move_active = false;
static TimestampTz move_lo = 0;
static TimestampTz move_hi = 0;

static void
audit_relcache_callback(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	AuditTrigInfo *e;

	if (relid == InvalidOid || relid == al_relid || relid == leaf_relid)
		leaf_relid = InvalidOid;
	if (relid == InvalidOid || relid == al_relid)
		al_relid = InvalidOid;
	if (trig_cache == NULL)
		return;
	hash_seq_init(&status, trig_cache);
	while ((e = hash_seq_search(&status)) != NULL)
		if (relid == InvalidOid || e->relid == relid)
			e->valid = false;
}
static void
audit_init_cache(void)
{
	HASHCTL		ctl;

	if (audit_cxt == NULL)
		audit_cxt = AllocSetContextCreate(CacheMemoryContext, "pg_agents audit",
										  ALLOCSET_DEFAULT_SIZES);
	if (trig_cache == NULL)
	{
		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(AuditTrigInfo);
		ctl.hcxt = audit_cxt;
		trig_cache = hash_create("pg_agents audited tables", 64, &ctl,
								 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	if (!callback_registered)
	{
		CacheRegisterRelcacheCallback(audit_relcache_callback, (Datum) 0);
		callback_registered = true;
	}
}

/* Looks agent.audit_log up (once per backend, again after invalidation). */
static void
audit_log_lookup(void)
{
	Oid			nsp;
	Oid			relid;
	int			i;

	audit_init_cache();
	if (OidIsValid(al_relid))
		return;
	nsp = get_namespace_oid("agent", true);
	relid = OidIsValid(nsp) ? get_relname_relid("audit_log", nsp) : InvalidOid;
	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation \"agent.audit_log\" does not exist"),
				 errhint("Run CREATE EXTENSION pg_agents in this database.")));
	for (i = 0; i < AL_NCOLS; i++)
	{
		al_attnum[i] = get_attnum(relid, al_names[i]);
		if (al_attnum[i] == InvalidAttrNumber)
			elog(ERROR, "column \"%s\" of agent.audit_log does not exist", al_names[i]);
	}
	al_seqid = PgaGetIdentitySequence(relid, al_attnum[AL_ID], false);
	al_relid = relid;
}

static const char *
session_user_name(void)
{
	Oid			u = GetSessionUserId();

	if (u != db_user_oid)
	{
		char	   *n = GetUserNameFromId(u, false);

		strlcpy(db_user_name, n, NAMEDATALEN);
		db_user_oid = u;
	}
	return db_user_name;
}

static inline const char *
guc_or_null(const char *v)
{
	return (v == NULL || v[0] == '\0') ? NULL : v;
}

/*
 * Fills the identity columns from the session identity GUCs.
 */
static void
audit_identity(AuditRow *row)
{
	const char *a = guc_or_null(pg_agents_actor);
	const char *r = guc_or_null(pg_agents_run_id);

	if (a == NULL)
	{
		row->actor_kind = "human";
		row->actor_id = NULL;
	}
	else if (strncmp(a, "agent:", 6) == 0)
	{
		row->actor_kind = "agent";
		row->actor_id = a + 6;
	}
	else if (strcmp(a, "system") == 0)
	{
		row->actor_kind = "system";
		row->actor_id = NULL;
	}
	else if (strncmp(a, "user:", 5) == 0)
	{
		row->actor_kind = "human";
		row->actor_id = a + 5;
	}
	else
	{
		row->actor_kind = "human";
		row->actor_id = a;
	}
	row->on_behalf_of = guc_or_null(pg_agents_on_behalf_of);
	row->surface = guc_or_null(pg_agents_surface);
	row->has_run_id = false;
	if (r != NULL)
	{
		char	   *end;

		errno = 0;
		row->run_id = strtoi64(r, &end, 10);
		if (errno != 0 || end == r || *end != '\0')
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid value for parameter \"pg_agents.run_id\": \"%s\"", r),
					 errdetail("A run id is a bigint."),
					 errhint("Set pg_agents.run_id to the id of the agent run, or reset it.")));
		row->has_run_id = true;
	}
	if (row->workspace_id == NULL)
		row->workspace_id = guc_or_null(pg_agents_workspace);
}

static inline void
set_text(Datum *values, bool *nulls, int col, const char *s)
{
	int			a = al_attnum[col] - 1;

	if (s == NULL)
		return;
	values[a] = CStringGetTextDatum(s);
	nulls[a] = false;
}

static void
pending_forget(void)
{
	pend_cxt = NULL;
	pend = NULL;
	npend = 0;
	maxpend = 0;
	pend_bytes = 0;
	pend_lxid = InvalidLocalTransactionId;
}

static void audit_flush(void);

static void
audit_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					   SubTransactionId parentSubid, void *arg)
{
	int			i,
				keep = 0;

	if (pend == NULL || pend_lxid != PGA_MY_LXID)
		return;
	switch (event)
	{
		case SUBXACT_EVENT_ABORT_SUB:
			/* its rows and those of its children (started after it) go */
			for (i = 0; i < npend; i++)
				if (pend[i].subid < mySubid)
					pend[keep++] = pend[i];
			npend = keep;
			break;
		case SUBXACT_EVENT_COMMIT_SUB:
			for (i = 0; i < npend; i++)
				if (pend[i].subid == mySubid)
					pend[i].subid = parentSubid;
			break;
		default:
			break;
	}
}

static void
audit_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			/* rows whose statement trigger did not fire (e.g. disabled) */
			if (pend != NULL && pend_lxid == PGA_MY_LXID && npend > 0)
				audit_flush();
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			/* the memory goes with TopTransactionContext */
			pending_forget();
			break;
		default:
			break;
	}
}

static void
insert_state_open(AuditInsertState *st)
{
	int			i;

	audit_log_lookup();
	memset(st, 0, sizeof(*st));
	st->rel = table_open(al_relid, RowExclusiveLock);
	st->estate = CreateExecutorState();
	st->cid = GetCurrentCommandId(true);
	st->estate->es_output_cid = st->cid;
	st->rri = makeNode(ResultRelInfo);
	InitResultRelInfo(st->rri, st->rel, 1, NULL, 0);
	st->rootslot = ExecInitExtraTupleSlot(st->estate, RelationGetDescr(st->rel),
										  &TTSOpsHeapTuple);
	if (st->rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
	{
		/* as COPY FROM routes its rows */
		st->mtstate = makeNode(ModifyTableState);
		st->mtstate->ps.plan = NULL;
		st->mtstate->ps.state = st->estate;
		st->mtstate->operation = CMD_INSERT;
		st->mtstate->mt_nrels = 1;
		st->mtstate->resultRelInfo = st->rri;
		st->mtstate->rootResultRelInfo = st->rri;
		st->proute = ExecSetupPartitionTupleRouting(st->estate, st->rel);
	}
	else
		ExecOpenIndices(st->rri, false);	/* a 0.3.0 log, before the update */
	st->slots = palloc(sizeof(TupleTableSlot *) * AUDIT_BATCH_ROWS);
	for (i = 0; i < AUDIT_BATCH_ROWS; i++)
		st->slots[i] = NULL;
}

static void
insert_state_close(AuditInsertState *st)
{
	int			i;

	for (i = 0; i < AUDIT_BATCH_ROWS; i++)
		if (st->slots[i] != NULL)
			ExecDropSingleTupleTableSlot(st->slots[i]);
	if (st->proute != NULL)
		ExecCleanupTupleRouting(st->mtstate, st->proute);
	else
		ExecCloseIndices(st->rri);
	ExecResetTupleTable(st->estate->es_tupleTable, false);
	table_close(st->rel, NoLock);
	FreeExecutorState(st->estate);
}

/* one heap_multi_insert into one partition, then its index entries */
static void
write_group(AuditInsertState *st, ResultRelInfo *leaf, int n)
{
	int			i;

	table_multi_insert(leaf->ri_RelationDesc, st->slots, n, st->cid, 0, NULL);
	for (i = 0; i < n; i++)
	{
		if (leaf->ri_NumIndices > 0)
			list_free(ExecInsertIndexTuples(leaf, st->slots[i], st->estate,
											false, false, NULL, NIL));
		ExecClearTuple(st->slots[i]);
		ResetPerTupleExprContext(st->estate);
	}
}

/* remembers a monthly partition and its bounds for the next flushes */
static void
leaf_remember(Relation leaf)
{
	HeapTuple	tp = SearchSysCache1(RELOID, ObjectIdGetDatum(RelationGetRelid(leaf)));
	Datum		d;
	bool		isnull;

	if (!HeapTupleIsValid(tp))
		return;
	/* only a partition with the row layout of the parent (no conversion) */
	{
		TupleDesc	pdesc;
		Relation	parent = RelationIdGetRelation(al_relid);
		bool		same = RelationIsValid(parent);
		int			i;

		if (same)
		{
			pdesc = RelationGetDescr(parent);
			same = pdesc->natts == RelationGetDescr(leaf)->natts;
			for (i = 0; same && i < pdesc->natts; i++)
			{
				Form_pg_attribute a = TupleDescAttr(pdesc, i);
				Form_pg_attribute b = TupleDescAttr(RelationGetDescr(leaf), i);

				same = a->atttypid == b->atttypid && a->attlen == b->attlen &&
					a->attisdropped == b->attisdropped && a->attalign == b->attalign;
			}
			RelationClose(parent);
		}
		if (!same)
		{
			ReleaseSysCache(tp);
			return;
		}
	}
	d = SysCacheGetAttr(RELOID, tp, Anum_pg_class_relpartbound, &isnull);
	if (!isnull)
	{
		PartitionBoundSpec *spec = (PartitionBoundSpec *) stringToNode(TextDatumGetCString(d));

		if (IsA(spec, PartitionBoundSpec) && spec->strategy == PARTITION_STRATEGY_RANGE &&
			!spec->is_default && list_length(spec->lowerdatums) == 1 &&
			list_length(spec->upperdatums) == 1)
		{
			PartitionRangeDatum *l = linitial_node(PartitionRangeDatum, spec->lowerdatums);
			PartitionRangeDatum *u = linitial_node(PartitionRangeDatum, spec->upperdatums);

			if (l->kind == PARTITION_RANGE_DATUM_VALUE && u->kind == PARTITION_RANGE_DATUM_VALUE &&
				IsA(l->value, Const) && IsA(u->value, Const) &&
				!((Const *) l->value)->constisnull && !((Const *) u->value)->constisnull)
			{
				leaf_lo = DatumGetTimestampTz(((Const *) l->value)->constvalue);
				leaf_hi = DatumGetTimestampTz(((Const *) u->value)->constvalue);
				leaf_relid = RelationGetRelid(leaf);
			}
		}
	}
	ReleaseSysCache(tp);
}

/*
 * The rows of the current subtransaction all belong to the remembered
 * partition: they are written there without tuple routing.  Returns false
 * (nothing done) otherwise.
 */
static bool
audit_flush_leaf(SubTransactionId cur)
{
	Oid			leaf = leaf_relid;
	Relation	parent;
	Relation	rel;
	AuditInsertState st;
	TupleDesc	pdesc;
	TupleDesc	ldesc;
	int			i,
				n = 0,
				keep = 0;

	if (!OidIsValid(leaf))
		return false;
	audit_log_lookup();
	/* as an INSERT through the parent: no partition detached under us */
	parent = table_open(al_relid, RowExclusiveLock);
	pdesc = RelationGetDescr(parent);
	for (i = 0; i < npend; i++)
	{
		bool		isnull;
		TimestampTz at;

		if (pend[i].subid != cur)
			continue;
		at = DatumGetTimestampTz(heap_getattr(pend[i].tup, al_attnum[AL_AT], pdesc, &isnull));
		if (isnull || at < leaf_lo || at >= leaf_hi)
			break;
		if (++n > AUDIT_BATCH_ROWS)
			break;
	}
	if (i < npend || leaf_relid != leaf)
	{
		table_close(parent, NoLock);
		return false;
	}
	rel = table_open(leaf, RowExclusiveLock);
	ldesc = RelationGetDescr(rel);
	if (leaf_relid != leaf || !rel->rd_rel->relispartition)
	{
		/* changed while we waited for the lock, or a different row type */
		table_close(rel, NoLock);
		table_close(parent, NoLock);
		leaf_relid = InvalidOid;
		return false;
	}

	memset(&st, 0, sizeof(st));
	st.estate = CreateExecutorState();
	st.cid = GetCurrentCommandId(true);
	st.estate->es_output_cid = st.cid;
	st.rri = makeNode(ResultRelInfo);
	InitResultRelInfo(st.rri, rel, 1, NULL, 0);
	ExecOpenIndices(st.rri, false);
	st.slots = palloc(sizeof(TupleTableSlot *) * n);
	n = 0;
	for (i = 0; i < npend; i++)
	{
		if (pend[i].subid != cur)
		{
			pend[keep++] = pend[i];
			continue;
		}
		st.slots[n] = MakeSingleTupleTableSlot(ldesc, &TTSOpsHeapTuple);
		ExecStoreHeapTuple(pend[i].tup, st.slots[n], false);
		n++;
	}
	write_group(&st, st.rri, n);
	for (i = 0; i < n; i++)
		ExecDropSingleTupleTableSlot(st.slots[i]);
	ExecCloseIndices(st.rri);
	table_close(rel, NoLock);
	table_close(parent, NoLock);
	FreeExecutorState(st.estate);
	npend = keep;
	return true;
}

/*
 * Writes the buffered rows of the current subtransaction (those of an
 * enclosing one wait for it).
 */
static void
audit_flush(void)
{
	SubTransactionId cur = GetCurrentSubTransactionId();
	AuditInsertState st;
	ResultRelInfo *group = NULL;
	int			n = 0;
	int			keep = 0;
	int			i;
	MemoryContext old;

	if (pend == NULL || pend_lxid != PGA_MY_LXID || npend == 0)
		return;
	for (i = 0; i < npend; i++)
		if (pend[i].subid == cur)
			break;
	if (i == npend)
		return;

	old = MemoryContextSwitchTo(pend_cxt);
	if (audit_flush_leaf(cur))
	{
		MemoryContextSwitchTo(old);
		if (npend == 0)
		{
			MemoryContextReset(pend_cxt);
			pend = NULL;
			maxpend = 0;
			pend_bytes = 0;
		}
		return;
	}
	insert_state_open(&st);
	for (i = 0; i < npend; i++)
	{
		ResultRelInfo *leaf;
		HeapTuple	tup = pend[i].tup;
		TupleDesc	ldesc;

		if (pend[i].subid != cur)
		{
			pend[keep++] = pend[i];
			continue;
		}
		if (st.proute != NULL)
		{
			TupleConversionMap *map;

			ExecStoreHeapTuple(tup, st.rootslot, false);
			leaf = ExecFindPartition(st.mtstate, st.rri, st.proute, st.rootslot, st.estate);
			ExecClearTuple(st.rootslot);
			if (leaf != group)
				leaf_remember(leaf->ri_RelationDesc);
			map = PgaRootToChildMap(leaf, st.estate);
			if (map != NULL)
				tup = execute_attr_map_tuple(tup, map);
		}
		else
			leaf = st.rri;
		if (group != NULL && (leaf != group || n == AUDIT_BATCH_ROWS))
		{
			write_group(&st, group, n);
			n = 0;
		}
		group = leaf;
		ldesc = RelationGetDescr(leaf->ri_RelationDesc);
		if (st.slots[n] != NULL && st.slots[n]->tts_tupleDescriptor != ldesc)
		{
			ExecDropSingleTupleTableSlot(st.slots[n]);
			st.slots[n] = NULL;
		}
		if (st.slots[n] == NULL)
			st.slots[n] = MakeSingleTupleTableSlot(ldesc, &TTSOpsHeapTuple);
		ExecStoreHeapTuple(tup, st.slots[n], false);
		n++;
	}
	if (n > 0)
		write_group(&st, group, n);
	insert_state_close(&st);
	MemoryContextSwitchTo(old);

	npend = keep;
	if (npend == 0)
	{
		/* all written: the memory is reused */
		MemoryContextReset(pend_cxt);
		pend = NULL;
		maxpend = 0;
		pend_bytes = 0;
	}
}

/* appends a formed row to the buffer (grown as needed), tied to the current subtransaction */
static void
pending_push(HeapTuple tup_in_pend_cxt)
{
	if (pend == NULL)
	{
		maxpend = 64;
		pend = MemoryContextAlloc(pend_cxt, sizeof(PendingRow) * maxpend);
	}
	else if (npend == maxpend)
	{
		maxpend *= 2;
		pend = repalloc(pend, sizeof(PendingRow) * maxpend);
	}
	pend[npend].tup = tup_in_pend_cxt;
	pend[npend].subid = GetCurrentSubTransactionId();
	npend++;
}

/* appends a formed row to the buffer, writing the buffer when full */
static void
pending_add(HeapTuple tup_in_pend_cxt)
{
	pending_push(tup_in_pend_cxt);
	pend_bytes += tup_in_pend_cxt->t_len;
	if (npend >= AUDIT_BATCH_ROWS || pend_bytes >= AUDIT_BATCH_BYTES)
		audit_flush();
}

/* the buffer of this transaction, made on first use */
static void
pending_begin(void)
{
	if (!xact_callback_registered)
	{
		RegisterXactCallback(audit_xact_callback, NULL);
		RegisterSubXactCallback(audit_subxact_callback, NULL);
		xact_callback_registered = true;
	}
	if (pend_cxt != NULL && pend_lxid == PGA_MY_LXID)
		return;
	pending_forget();
	pend_cxt = AllocSetContextCreate(TopTransactionContext, "pg_agents audit rows",
									 ALLOCSET_DEFAULT_SIZES);
	pend_lxid = PGA_MY_LXID;
}

/*
 * Buffers one row for agent.audit_log (formed now: its id, time and
 * transaction are those of the change).
 */
static void
audit_insert(AuditRow *row)
{
	Relation	rel;
	TupleDesc	desc;
	Datum	   *values;
	bool	   *nulls;
	HeapTuple	tup;
	int			natts;
	int			i;
	MemoryContext old;

	if (RecoveryInProgress())
	{
		ereport(LOG,
				(errmsg("audit event \"%s\" not recorded: the server is in recovery",
						row->action)));
		return;
	}
	audit_log_lookup();
	pending_begin();
	/* held to the end of the transaction, as an INSERT would */
	rel = table_open(al_relid, RowExclusiveLock);
	desc = RelationGetDescr(rel);
	natts = desc->natts;
	values = palloc0(sizeof(Datum) * natts);
	nulls = palloc(sizeof(bool) * natts);
	for (i = 0; i < natts; i++)
		nulls[i] = true;

	values[al_attnum[AL_ID] - 1] = Int64GetDatum(nextval_internal(al_seqid, false));
	nulls[al_attnum[AL_ID] - 1] = false;
	values[al_attnum[AL_AT] - 1] = TimestampTzGetDatum(GetCurrentTimestamp());
	nulls[al_attnum[AL_AT] - 1] = false;
	values[al_attnum[AL_TXID] - 1] =
		Int64GetDatum((int64) U64FromFullTransactionId(GetTopFullTransactionId()));
	nulls[al_attnum[AL_TXID] - 1] = false;
	if (row->has_run_id)
	{
		values[al_attnum[AL_RUN_ID] - 1] = Int64GetDatum(row->run_id);
		nulls[al_attnum[AL_RUN_ID] - 1] = false;
	}
	set_text(values, nulls, AL_ACTOR_KIND, row->actor_kind);
	set_text(values, nulls, AL_ACTOR_ID, row->actor_id);
	set_text(values, nulls, AL_ON_BEHALF_OF, row->on_behalf_of);
	set_text(values, nulls, AL_DB_USER, session_user_name());
	set_text(values, nulls, AL_SURFACE, row->surface);
	set_text(values, nulls, AL_ACTION, row->action);
	set_text(values, nulls, AL_STATUS, row->status ? row->status : "success");
	set_text(values, nulls, AL_ERROR_CODE, row->error_code);
	set_text(values, nulls, AL_TARGET_TYPE, row->target_type);
	set_text(values, nulls, AL_TARGET_ID, row->target_id);
	set_text(values, nulls, AL_OWNER_ID, row->owner_id);
	set_text(values, nulls, AL_WORKSPACE_ID, row->workspace_id);
	set_text(values, nulls, AL_SUMMARY, row->summary);
	if (row->inputs)
	{
		values[al_attnum[AL_INPUTS] - 1] = JsonbPGetDatum(row->inputs);
		nulls[al_attnum[AL_INPUTS] - 1] = false;
	}
	if (row->changes)
	{
		values[al_attnum[AL_CHANGES] - 1] = JsonbPGetDatum(row->changes);
		nulls[al_attnum[AL_CHANGES] - 1] = false;
	}

	old = MemoryContextSwitchTo(pend_cxt);
	tup = heap_form_tuple(desc, values, nulls);
	MemoryContextSwitchTo(old);
	table_close(rel, NoLock);
	pfree(values);
	pfree(nulls);
	pending_add(tup);
}

/* ------------------------------------------------------------------------
 * Named events: agent._audit_event and the C entry point
 * ------------------------------------------------------------------------
 */

/* a summary is redacted and kept short */
static const char *
clean_summary(const char *s)
{
	int			len;
	char	   *red;
	int			red_len;

	if (s == NULL)
		return NULL;
	len = strlen(s);
	red = PgAgentsRedactText(s, len, &red_len);
	if (red == NULL)
	{
		red = pstrdup(s);
		red_len = len;
	}
	if (red_len > SUMMARY_MAX)
	{
		int			keep = pg_mbcliplen(red, red_len, SUMMARY_MAX);

		red[keep] = '\0';
	}
	return red;
}

/*
 * Writes one audit row for an action of the extension (or of the worker):
 * the identity comes from the session GUCs, inputs are redacted.  Does
 * nothing when pg_agents.audit_enabled is off.
 */
void
PgAgentsAuditEvent(const char *action, const char *status,
				   const char *target_type, const char *target_id,
				   const char *workspace_id, const char *owner_id,
				   Jsonb *inputs, const char *summary, const char *error_code)
{
	AuditRow	row;

	if (!pg_agents_audit_enabled)
		return;
	if (action == NULL || action[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("audit action must not be empty")));
	if (status == NULL)
		status = "success";
	if (strcmp(status, "success") != 0 && strcmp(status, "error") != 0 &&
		strcmp(status, "denied") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid audit status \"%s\"", status),
				 errdetail("An audit status is success, error or denied.")));

	memset(&row, 0, sizeof(row));
	row.workspace_id = workspace_id;
	audit_identity(&row);
	row.action = action;
	row.status = status;
	row.error_code = error_code;
	row.target_type = target_type;
	row.target_id = target_id;
	row.owner_id = owner_id;
	row.inputs = inputs ? PgAgentsRedactJsonb(inputs) : NULL;
	row.summary = clean_summary(summary);
	audit_insert(&row);
	audit_flush();
}

static inline char *
text_arg(FunctionCallInfo fcinfo, int n)
{
	if (PG_NARGS() <= n || PG_ARGISNULL(n))
		return NULL;
	return text_to_cstring(PG_GETARG_TEXT_PP(n));
}

/*
 * agent._audit_event(p_action, p_status, p_target_type, p_target_id,
 *                    p_workspace_id, p_owner_id, p_inputs, p_summary,
 *                    p_error_code)
 */
Datum
pg_agents_audit_event(PG_FUNCTION_ARGS)
{
	PgAgentsAuditEvent(text_arg(fcinfo, 0), text_arg(fcinfo, 1),
					   text_arg(fcinfo, 2), text_arg(fcinfo, 3),
					   text_arg(fcinfo, 4), text_arg(fcinfo, 5),
					   PG_ARGISNULL(6) ? NULL : PG_GETARG_JSONB_P(6),
					   text_arg(fcinfo, 7), text_arg(fcinfo, 8));
	PG_RETURN_VOID();
}

/*
 * agent._audit_table_event(tbl regclass, action text, target_type text):
 * records audit.table / audit.untable; only the table's owner may.
 */
Datum
pg_agents_audit_table_event(PG_FUNCTION_ARGS)
{
	Oid			relid;
	char	   *action;
	char	   *target_type = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
	char	   *relname;
	char	   *nspname;
	char	   *qual;
	StringInfoData buf;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("table and action must not be null")));
	relid = PG_GETARG_OID(0);
	action = text_to_cstring(PG_GETARG_TEXT_PP(1));
	if (get_rel_name(relid) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	if (strcmp(action, "audit.table") != 0 && strcmp(action, "audit.untable") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid audit table action \"%s\"", action)));
	if (!pg_class_ownercheck(relid, GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of table %s", get_rel_name(relid))));
	relname = get_rel_name(relid);
	nspname = get_namespace_name(get_rel_namespace(relid));
	qual = quote_qualified_identifier(nspname, relname);
	initStringInfo(&buf);
	if (strcmp(action, "audit.table") == 0)
		appendStringInfo(&buf, "audit on %s (target type %s)", qual,
						 target_type ? target_type : relname);
	else
		appendStringInfo(&buf, "audit off %s", qual);
	PgAgentsAuditEvent(action, "success", "table", qual, NULL, NULL, NULL,
					   buf.data, NULL);
	PG_RETURN_VOID();
}

/* ------------------------------------------------------------------------
 * The row trigger
 * ------------------------------------------------------------------------
 */

static char
column_kind(Oid typid)
{
	Oid			base = getBaseType(typid);

	switch (base)
	{
		case BOOLOID:
			return 'b';
		case INT2OID:
		case INT4OID:
		case INT8OID:
			return 'i';
		case FLOAT4OID:
		case FLOAT8OID:
			return 'f';
		case NUMERICOID:
			return 'n';
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
			return 's';
		case NAMEOID:
			return 'N';
		case JSONBOID:
			return 'j';
		case JSONOID:
			return 'J';
		case DATEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			return 'd';
		default:
			return 'o';
	}
}

static AttrNumber
find_column(TupleDesc desc, const char *name)
{
	int			i;

	if (name == NULL || name[0] == '\0')
		return InvalidAttrNumber;
	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), name) == 0)
			return att->attnum;
	}
	return InvalidAttrNumber;
}

static AuditTrigInfo *
trig_info(TriggerData *td)
{
	Trigger    *tg = td->tg_trigger;
	Relation	rel = td->tg_relation;
	TupleDesc	desc = RelationGetDescr(rel);
	AuditTrigInfo *e;
	bool		found;
	MemoryContext old;
	Oid			pkoid;
	int			i;

	audit_init_cache();
	e = hash_search(trig_cache, &tg->tgoid, HASH_ENTER, &found);
	if (found && e->valid)
		return e;
	if (found && e->cxt)
		MemoryContextDelete(e->cxt);
	e->valid = false;
	e->cxt = AllocSetContextCreate(audit_cxt, "pg_agents audited table",
								   ALLOCSET_SMALL_SIZES);
	e->relid = RelationGetRelid(rel);
	old = MemoryContextSwitchTo(e->cxt);

	e->qualname = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
											 RelationGetRelationName(rel));
	e->target_type = pstrdup((tg->tgnargs > 0 && tg->tgargs[0][0] != '\0')
							 ? tg->tgargs[0] : RelationGetRelationName(rel));
	e->owner_att = find_column(desc, tg->tgnargs > 1 ? tg->tgargs[1] : NULL);
	e->workspace_att = find_column(desc, tg->tgnargs > 2 ? tg->tgargs[2] : NULL);
	e->natts = desc->natts;
	e->cols = palloc0(sizeof(AuditCol) * desc->natts);
	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		AuditCol   *c = &e->cols[i];
		Oid			outfn;
		bool		varlena;

		if (att->attisdropped)
			continue;
		c->name = pstrdup(NameStr(att->attname));
		c->typid = att->atttypid;
		c->basetypid = getBaseType(att->atttypid);
		c->typlen = att->attlen;
		c->typbyval = att->attbyval;
		c->kind = column_kind(att->atttypid);
		c->sensitive = PgAgentsSensitiveName(c->name, strlen(c->name));
		getTypeOutputInfo(att->atttypid, &outfn, &varlena);
		fmgr_info_cxt(outfn, &c->out, e->cxt);
	}

	e->npk = 0;
	pkoid = RelationGetPrimaryKeyIndex(rel);
	if (OidIsValid(pkoid))
	{
		HeapTuple	itup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(pkoid));

		if (HeapTupleIsValid(itup))
		{
			Form_pg_index idx = (Form_pg_index) GETSTRUCT(itup);

			for (i = 0; i < idx->indnkeyatts && i < INDEX_MAX_KEYS; i++)
				if (idx->indkey.values[i] > 0)
					e->pk[e->npk++] = idx->indkey.values[i];
			ReleaseSysCache(itup);
		}
	}
	MemoryContextSwitchTo(old);
	e->valid = true;
	return e;
}

static char *
column_text(AuditCol *c, Datum d)
{
	if (c->kind == 's')
		return TextDatumGetCString(d);
	return OutputFunctionCall(&c->out, d);
}

/* pushes one column value, converted like to_jsonb and redacted */
static void
push_column(PgAgentsRedactor *r, JsonbParseState **ps, JsonbIteratorToken tok,
			AuditCol *c, Datum d, bool isnull, int depth)
{
	JsonbValue	v;

	if (isnull)
	{
		v.type = jbvNull;
		(void) pushJsonbValue(ps, tok, &v);
		return;
	}
	switch (c->kind)
	{
		case 'b':
			v.type = jbvBool;
			v.val.boolean = DatumGetBool(d);
			(void) pushJsonbValue(ps, tok, &v);
			return;
		case 'i':
			{
				int64		x;

				if (c->typlen == 2)
					x = DatumGetInt16(d);
				else if (c->typlen == 4)
					x = DatumGetInt32(d);
				else
					x = DatumGetInt64(d);
				v.type = jbvNumeric;
				v.val.numeric = int64_to_numeric(x);
				(void) pushJsonbValue(ps, tok, &v);
				return;
			}
		case 'f':
			{
				double		x = (c->typlen == 4) ? DatumGetFloat4(d) : DatumGetFloat8(d);

				if (isinf(x) || isnan(x))
					break;
				v.type = jbvNumeric;
				v.val.numeric = DatumGetNumeric(DirectFunctionCall1(float8_numeric,
																	Float8GetDatum(x)));
				(void) pushJsonbValue(ps, tok, &v);
				return;
			}
		case 'n':
			{
				Numeric		n = DatumGetNumeric(d);

				if (numeric_is_nan(n) || numeric_is_inf(n))
					break;
				v.type = jbvNumeric;
				v.val.numeric = n;
				(void) pushJsonbValue(ps, tok, &v);
				return;
			}
		case 's':
			{
				Size		raw = toast_raw_datum_size(d) - VARHDRSZ;
				text	   *t;

				/* only the scanned window of a long value is detoasted */
				if (raw > REDACT_MAX_STRING + REDACT_SCAN_MARGIN && VARATT_IS_EXTENDED(DatumGetPointer(d)))
					t = DatumGetTextPSlice(d, 0, REDACT_MAX_STRING + REDACT_SCAN_MARGIN);
				else
					t = DatumGetTextPP(d);
				PgAgentsRedactPushString(r, ps, tok, VARDATA_ANY(t), (int) raw,
										 c->sensitive);
				return;
			}
		case 'N':
			{
				char	   *s = NameStr(*DatumGetName(d));

				PgAgentsRedactPushString(r, ps, tok, s, strlen(s), c->sensitive);
				return;
			}
		case 'j':
			(void) PgAgentsRedactPushJsonb(r, ps, tok, DatumGetJsonbP(d), depth,
										   c->sensitive);
			return;
		case 'J':
			{
				Datum		jb = DirectFunctionCall1(jsonb_in,
													 CStringGetDatum(TextDatumGetCString(d)));

				(void) PgAgentsRedactPushJsonb(r, ps, tok, DatumGetJsonbP(jb), depth,
											   c->sensitive);
				return;
			}
		case 'd':
			{
				/* pushed strings are referenced, not copied: no stack buffer */
				char	   *buf = JsonEncodeDateTime(NULL, d, c->basetypid, NULL);

				PgAgentsRedactPushString(r, ps, tok, buf, strlen(buf), c->sensitive);
				return;
			}
		default:
			break;
	}
	/* everything else: the type's text output */
	{
		char	   *s = OutputFunctionCall(&c->out, d);

		PgAgentsRedactPushString(r, ps, tok, s, strlen(s), c->sensitive);
	}
}

static void
push_key(JsonbParseState **ps, const char *k)
{
	JsonbValue	v;

	v.type = jbvString;
	v.val.string.val = (char *) k;
	v.val.string.len = strlen(k);
	(void) pushJsonbValue(ps, WJB_KEY, &v);
}

static bool
same_value(AuditCol *c, Datum a, bool an, Datum b, bool bn)
{
	if (an || bn)
		return an && bn;
	if (datumIsEqual(a, b, c->typbyval, c->typlen))
		return true;
	if (c->typlen == -1)
	{
		struct varlena *x = PG_DETOAST_DATUM_PACKED(a);
		struct varlena *y = PG_DETOAST_DATUM_PACKED(b);

		return VARSIZE_ANY_EXHDR(x) == VARSIZE_ANY_EXHDR(y) &&
			memcmp(VARDATA_ANY(x), VARDATA_ANY(y), VARSIZE_ANY_EXHDR(x)) == 0;
	}
	return false;
}

/* the row's primary key as text: one column as is, several as a JSON array */
static char *
row_key(AuditTrigInfo *e, HeapTuple tup, TupleDesc desc)
{
	StringInfoData buf;
	int			i;

	if (e->npk == 0)
		return NULL;
	if (e->npk == 1)
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, e->pk[0], desc, &isnull);

		return isnull ? NULL : column_text(&e->cols[e->pk[0] - 1], d);
	}
	initStringInfo(&buf);
	appendStringInfoChar(&buf, '[');
	for (i = 0; i < e->npk; i++)
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, e->pk[i], desc, &isnull);

		if (i > 0)
			appendStringInfoChar(&buf, ',');
		if (isnull)
			appendStringInfoString(&buf, "null");
		else
			escape_json(&buf, column_text(&e->cols[e->pk[i] - 1], d));
	}
	appendStringInfoChar(&buf, ']');
	return buf.data;
}

static char *
row_column_text(AuditTrigInfo *e, AttrNumber att, HeapTuple tup, TupleDesc desc)
{
	bool		isnull;
	Datum		d;

	if (att == InvalidAttrNumber)
		return NULL;
	d = heap_getattr(tup, att, desc, &isnull);
	return isnull ? NULL : column_text(&e->cols[att - 1], d);
}

Datum
pg_agents_audit_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *td;
	AuditTrigInfo *e;
	TupleDesc	desc;
	HeapTuple	tup;
	HeapTuple	oldtup = NULL;
	AuditRow	row;
	PgAgentsRedactor r;
	JsonbParseState *ps = NULL;
	JsonbValue *res = NULL;
	StringInfoData summary;
	int			i;
	int			nchanged = 0;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("agent._audit_trigger() must be called as a trigger")));
	td = (TriggerData *) fcinfo->context;
	if (!TRIGGER_FIRED_AFTER(td->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("agent._audit_trigger() must be fired AFTER the change"),
				 errhint("Attach it with agent.audit_table().")));
	/*
	 * History is written only by the triggers agent.audit_table() attached
	 * (the function is not executable by PUBLIC; this also stops a superuser's
	 * stray CREATE TRIGGER, and a temporary table, which no one else sees).
	 */
	if (strncmp(td->tg_trigger->tgname, "pg_agents_audit", strlen("pg_agents_audit")) != 0 ||
		td->tg_relation->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("table \"%s\" is not audited by agent.audit_table()",
						RelationGetRelationName(td->tg_relation)),
				 errdetail("Trigger \"%s\" calls agent._audit_trigger() directly.",
						   td->tg_trigger->tgname),
				 errhint("Attach the audit trigger with agent.audit_table().")));
	if (!pg_agents_audit_enabled)
		return PointerGetDatum(NULL);

	e = trig_info(td);
	desc = RelationGetDescr(td->tg_relation);
	memset(&row, 0, sizeof(row));
	row.target_type = e->target_type;
	row.status = "success";
	initStringInfo(&summary);

	if (TRIGGER_FIRED_BY_TRUNCATE(td->tg_event))
	{
		row.action = "truncate";
		appendStringInfo(&summary, "truncate %s", e->qualname);
		row.summary = summary.data;
		audit_identity(&row);
		audit_insert(&row);
		audit_flush();
		return PointerGetDatum(NULL);
	}
	if (!TRIGGER_FIRED_FOR_ROW(td->tg_event))
	{
		/* the statement's rows are all buffered: write them */
		audit_flush();
		return PointerGetDatum(NULL);
	}

	PgAgentsRedactorInit(&r);
	(void) pushJsonbValue(&ps, WJB_BEGIN_OBJECT, NULL);

	if (TRIGGER_FIRED_BY_UPDATE(td->tg_event))
	{
		oldtup = td->tg_trigtuple;
		tup = td->tg_newtuple;
		row.action = "update";
		for (i = 0; i < e->natts; i++)
		{
			AuditCol   *c = &e->cols[i];
			bool		on,
						nn;
			Datum		od,
						nd;

			if (c->kind == 0)
				continue;
			od = heap_getattr(oldtup, i + 1, desc, &on);
			nd = heap_getattr(tup, i + 1, desc, &nn);
			if (same_value(c, od, on, nd, nn))
				continue;
			nchanged++;
			push_key(&ps, c->name);
			(void) pushJsonbValue(&ps, WJB_BEGIN_OBJECT, NULL);
			push_key(&ps, "old");
			push_column(&r, &ps, WJB_VALUE, c, od, on, 3);
			push_key(&ps, "new");
			push_column(&r, &ps, WJB_VALUE, c, nd, nn, 3);
			(void) pushJsonbValue(&ps, WJB_END_OBJECT, NULL);
			if (summary.len < SUMMARY_MAX)
				appendStringInfo(&summary, "%s%s", nchanged == 1 ? "" : ", ", c->name);
		}
		if (nchanged == 0)
			return PointerGetDatum(NULL);	/* nothing changed: nothing written */
	}
	else
	{
		tup = td->tg_trigtuple;
		row.action = TRIGGER_FIRED_BY_INSERT(td->tg_event) ? "insert" : "delete";
		for (i = 0; i < e->natts; i++)
		{
			AuditCol   *c = &e->cols[i];
			bool		isnull;
			Datum		d;

			if (c->kind == 0)
				continue;
			d = heap_getattr(tup, i + 1, desc, &isnull);
			push_key(&ps, c->name);
			push_column(&r, &ps, WJB_VALUE, c, d, isnull, 2);
		}
	}
	res = pushJsonbValue(&ps, WJB_END_OBJECT, NULL);
	row.changes = JsonbValueToJsonb(res);

	row.target_id = row_key(e, tup, desc);
	row.owner_id = row_column_text(e, e->owner_att, tup, desc);
	row.workspace_id = row_column_text(e, e->workspace_att, tup, desc);
	{
		char	   *cols = pstrdup(summary.data);

		resetStringInfo(&summary);
		appendStringInfo(&summary, "%s %s", row.action, e->qualname);
		if (row.target_id)
			appendStringInfo(&summary, " %s", row.target_id);
		if (nchanged > 0)
			appendStringInfo(&summary, ": %s", cols);
	}
	row.summary = clean_summary(summary.data);
	audit_identity(&row);
	audit_insert(&row);
	return PointerGetDatum(NULL);
}

/* ------------------------------------------------------------------------
 * Append-only guard, purge, backdate
 * ------------------------------------------------------------------------
 */

static void
refuse_change(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("agent.audit_log is append-only"),
			 errdetail("Audit rows cannot be updated, deleted or truncated, not even by their owner or a superuser."),
			 errhint("Rows older than pg_agents.audit_retention_days are removed by agent.purge_audit().")));
}

Datum
pg_agents_audit_guard(PG_FUNCTION_ARGS)
{
	TriggerData *td;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("agent._audit_guard() must be called as a trigger")));
	td = (TriggerData *) fcinfo->context;

	if (TRIGGER_FIRED_BY_TRUNCATE(td->tg_event))
		refuse_change();

	if (TRIGGER_FIRED_BY_DELETE(td->tg_event) && (purge_active || move_active || backdate_active))
	{
		if (TRIGGER_FIRED_FOR_STATEMENT(td->tg_event))
			return PointerGetDatum(NULL);
		else
		{
			bool		isnull;
			TimestampTz at;

			audit_log_lookup();
			at = DatumGetTimestampTz(heap_getattr(td->tg_trigtuple, al_attnum[AL_AT],
												  RelationGetDescr(td->tg_relation), &isnull));
			/* the retention purge: only rows past the cut-off */
			if (purge_active && !isnull && at < purge_cutoff)
				return PointerGetDatum(td->tg_trigtuple);
			/* maintenance: rows of the new month out of the default partition */
			if (move_active && !isnull && at >= move_lo && at < move_hi &&
				strcmp(RelationGetRelationName(td->tg_relation), "audit_log_default") == 0)
				return PointerGetDatum(td->tg_trigtuple);
			/* backdating moves a row to an older month's partition: checked as an UPDATE */
			if (backdate_active)
				return PointerGetDatum(td->tg_trigtuple);
		}
	}
	if (TRIGGER_FIRED_BY_UPDATE(td->tg_event) && backdate_active)
	{
		if (TRIGGER_FIRED_FOR_STATEMENT(td->tg_event))
			return PointerGetDatum(NULL);
		else
		{
			TupleDesc	desc = RelationGetDescr(td->tg_relation);
			bool		ok = true;
			int			i;

			audit_log_lookup();
			/* only "at" may move, and only back in time */
			for (i = 0; i < desc->natts && ok; i++)
			{
				Form_pg_attribute att = TupleDescAttr(desc, i);
				bool		on,
							nn;
				Datum		od = heap_getattr(td->tg_trigtuple, i + 1, desc, &on);
				Datum		nd = heap_getattr(td->tg_newtuple, i + 1, desc, &nn);

				if (att->attisdropped)
					continue;
				if (i + 1 == al_attnum[AL_AT])
					ok = !on && !nn && DatumGetTimestampTz(nd) <= DatumGetTimestampTz(od);
				else if (on || nn)
					ok = (on && nn);
				else
					ok = datumIsEqual(od, nd, att->attbyval, att->attlen);
			}
			if (ok)
				return PointerGetDatum(td->tg_newtuple);
		}
	}
	refuse_change();
	return PointerGetDatum(NULL);	/* not reached */
}

/*
 * agent.purge_audit(): runs agent.maintain_audit(), then removes rows older
 * than pg_agents.audit_retention_days (0 keeps everything): the monthly
 * partitions that end before the cut-off are dropped whole (no row is
 * scanned outside them), the older rows left (in the partition the cut-off
 * falls in, and in the default partition) deleted; returns how many rows
 * went.
 */
Datum
pg_agents_purge_audit(PG_FUNCTION_ARGS)
{
	int			days = pg_agents_audit_retention_days;
	TimestampTz cutoff;
	Datum		args[1];
	Oid			types[1] = {TIMESTAMPTZOID};
	int64		dropped = 0;
	int64		deleted = 0;
	int			nparts = 0;
	int			rc;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	rc = SPI_execute("SELECT agent.maintain_audit()", false, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not maintain agent.audit_log: %s", SPI_result_code_string(rc));
	if (days <= 0)
	{
		SPI_finish();
		PG_RETURN_INT64(0);
	}
	cutoff = GetCurrentTransactionStartTimestamp() - (TimestampTz) days * USECS_PER_DAY;
	args[0] = TimestampTzGetDatum(cutoff);

	rc = SPI_execute_with_args("SELECT dropped, pg_catalog.cardinality(partitions) "
							   "FROM agent._audit_drop_partitions($1)",
							   1, types, args, NULL, false, 0);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not drop partitions of agent.audit_log: %s", SPI_result_code_string(rc));
	{
		bool		isnull;

		dropped = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		nparts = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	}

	purge_active = true;
	purge_cutoff = cutoff;
	PG_TRY();
	{
		rc = SPI_execute_with_args("DELETE FROM agent.audit_log WHERE at < $1",
								   1, types, args, NULL, false, 0);
		if (rc != SPI_OK_DELETE)
			elog(ERROR, "could not purge agent.audit_log: %s", SPI_result_code_string(rc));
		deleted = (int64) SPI_processed;
	}
	PG_FINALLY();
	{
		purge_active = false;
	}
	PG_END_TRY();
	SPI_finish();

	{
		char		inputs[192];
		int64		total = dropped + deleted;

		snprintf(inputs, sizeof(inputs),
				 "{\"retention_days\": %d, \"deleted\": " INT64_FORMAT
				 ", \"dropped_partitions\": %d}",
				 days, total, nparts);
		PgAgentsAuditEvent("audit.purge", "success", "audit_log", NULL, NULL, NULL,
						   DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(inputs))),
						   psprintf("purged " INT64_FORMAT " audit rows older than %d days (%d partitions dropped)",
									total, days, nparts),
						   NULL);
		PG_RETURN_INT64(total);
	}
}

/*
 * agent._audit_default_move(name text, lo timestamptz, hi timestamptz):
 * agent.maintain_audit() making the partition of [lo, hi) while the default
 * partition holds rows of that range: takes them out of the default
 * partition, has agent._audit_new_partition() make the partition, and
 * writes them again (same ids, same content), now into it.
 */
Datum
pg_agents_audit_default_move(PG_FUNCTION_ARGS)
{
	Datum		args[3];
	Oid			types[3] = {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	TupleDesc	desc;
	Relation	rel;
	uint64		n;
	uint64		i;
	int			rc;

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for function _audit_default_move")));
	args[0] = PG_GETARG_DATUM(0);
	args[1] = PG_GETARG_DATUM(1);
	args[2] = PG_GETARG_DATUM(2);
	audit_log_lookup();
	pending_begin();

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	move_active = true;
	move_lo = PG_GETARG_TIMESTAMPTZ(1);
	move_hi = PG_GETARG_TIMESTAMPTZ(2);
	PG_TRY();
	{
		rc = SPI_execute_with_args("DELETE FROM agent.audit_log_default WHERE at >= $1 AND at < $2 "
								   "RETURNING *", 2, types + 1, args + 1, NULL, false, 0);
		if (rc != SPI_OK_DELETE_RETURNING)
			elog(ERROR, "could not move rows out of agent.audit_log_default: %s",
				 SPI_result_code_string(rc));
	}
	PG_FINALLY();
	{
		move_active = false;
	}
	PG_END_TRY();

	/* the rows wait in the buffer of this subtransaction */
	rel = RelationIdGetRelation(al_relid);
	desc = RelationGetDescr(rel);
	if (SPI_tuptable->tupdesc->natts != desc->natts)
		elog(ERROR, "agent.audit_log_default does not have the columns of agent.audit_log");
	for (i = 0; i < SPI_processed; i++)
	{
		Datum	   *values = palloc(sizeof(Datum) * desc->natts);
		bool	   *nulls = palloc(sizeof(bool) * desc->natts);
		MemoryContext old;
		HeapTuple	tup;

		heap_deform_tuple(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, values, nulls);
		old = MemoryContextSwitchTo(pend_cxt);
		tup = heap_form_tuple(desc, values, nulls);
		MemoryContextSwitchTo(old);
		/* not pending_add: no flush before the partition exists */
		pending_push(tup);
	}
	n = SPI_processed;
	RelationClose(rel);

	rc = SPI_execute_with_args("SELECT agent._audit_new_partition($1, $2, $3)",
							   3, types, args, NULL, false, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not make partition: %s", SPI_result_code_string(rc));
	SPI_finish();
	audit_flush();
	PG_RETURN_INT64((int64) n);
}

/*
 * agent._audit_backdate(ids bigint[], age interval): superuser only; moves
 * "at" of the given rows back by age (tests of the retention purge), and
 * records that it did.
 */
Datum
pg_agents_audit_backdate(PG_FUNCTION_ARGS)
{
	Datum		args[2];
	Oid			types[2] = {INT8ARRAYOID, INTERVALOID};
	Interval   *age;
	int64		n = 0;
	int			rc;

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for function _audit_backdate"),
				 errdetail("Only a superuser may backdate audit rows.")));
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ids and age must not be null")));
	age = PG_GETARG_INTERVAL_P(1);
	if (age->time < 0 || age->day < 0 || age->month < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("age must not be negative"),
				 errdetail("Audit rows can only be moved back in time.")));
	args[0] = PG_GETARG_DATUM(0);
	args[1] = PG_GETARG_DATUM(1);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	backdate_active = true;
	PG_TRY();
	{
		rc = SPI_execute_with_args("UPDATE agent.audit_log SET at = at - $2 WHERE id = ANY ($1)",
								   2, types, args, NULL, false, 0);
		if (rc != SPI_OK_UPDATE)
			elog(ERROR, "could not backdate agent.audit_log: %s", SPI_result_code_string(rc));
		n = (int64) SPI_processed;
	}
	PG_FINALLY();
	{
		backdate_active = false;
	}
	PG_END_TRY();
	SPI_finish();

	PgAgentsAuditEvent("audit.backdate", "success", "audit_log", NULL, NULL, NULL, NULL,
					   psprintf("backdated " INT64_FORMAT " audit rows by %s", n,
								DatumGetCString(DirectFunctionCall1(interval_out,
																	PG_GETARG_DATUM(1)))),
					   NULL);
	PG_RETURN_INT64(n);
}

/*
 * agent._caller() RETURNS regrole: the role the session acts as (its SET
 * ROLE), whatever SECURITY DEFINER function is running.  The extension's
 * SECURITY DEFINER functions that act on an object of the caller's (such as
 * agent.audit_table on a table) check the caller's rights with it.
 */
Datum
pg_agents_caller(PG_FUNCTION_ARGS)
{
	PG_RETURN_OID(GetOuterUserId());
}
