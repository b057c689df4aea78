/*-------------------------------------------------------------------------
 *
 * audit_writer.c
 *		The writer of agent.audit_log: rows formed from an AuditRow, buffered
 *		per statement and written into the monthly partitions with
 *		heap_multi_insert and index inserts (see audit.h for why not SPI).
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
#include "catalog/index.h"
#include "optimizer/optimizer.h"
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
#include "audit_int.h"
#include "util/compat.h"
#include "util/guc.h"
#include "util/redact.h"
#include "util/relcheck.h"

/* ------------------------------------------------------------------------
 * The audit_log relation
 * ------------------------------------------------------------------------
 */
static const char *const al_names[AL_NCOLS] = {
	"id", "at", "actor_kind", "actor_id", "on_behalf_of", "db_user",
	"run_id", "surface", "action", "status", "error_code",
	"target_type", "target_id", "owner_id", "workspace_id", "inputs",
	"changes", "summary", "txid"
};

Oid			AuditLogRelid = InvalidOid;
static Oid	al_seqid = InvalidOid;
AttrNumber	AuditLogAttnum[AL_NCOLS];

static Oid	db_user_oid = InvalidOid;
static char db_user_name[NAMEDATALEN];
static bool log_callback_registered = false;

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

MemoryContext AuditPendingCxt = NULL;
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

/*
 * The indexes of that partition, described once (BuildIndexInfo, with the
 * predicate and expression states made ahead) and kept across statements
 * and transactions, instead of ExecOpenIndices at every flush: a one-row
 * transaction's flush then only locks and opens them.  Forgotten when the
 * partition or one of its indexes changes (a new or dropped index changes
 * the partition's relcache entry too).  Only for plain indexes: a unique or
 * exclusion one (none in the schema) goes through ExecOpenIndices.
 */
static MemoryContext leaf_ix_cxt = NULL;
static Oid	leaf_ix_relid = InvalidOid;	/* InvalidOid: nothing cached */
static int	leaf_ix_n = 0;
static Oid *leaf_ix_oids = NULL;
static IndexInfo **leaf_ix_info = NULL;

/* the log or its last partition changed: look them up again */
static void
audit_log_relcache_callback(Datum arg, Oid relid)
{
	int			i;

	if (relid == InvalidOid || relid == AuditLogRelid || relid == leaf_relid)
		leaf_relid = InvalidOid;
	if (relid == InvalidOid || relid == AuditLogRelid)
		AuditLogRelid = InvalidOid;
	if (OidIsValid(leaf_ix_relid))
	{
		bool		drop = (relid == InvalidOid || relid == leaf_ix_relid);

		for (i = 0; !drop && i < leaf_ix_n; i++)
			drop = (relid == leaf_ix_oids[i]);
		if (drop)
			leaf_ix_relid = InvalidOid;	/* the memory goes at the next build */
	}
}

/* Looks agent.audit_log up (once per backend, again after invalidation). */
void
AuditLogLookup(void)
{
	Oid			nsp;
	Oid			relid;
	int			i;

	if (!log_callback_registered)
	{
		RelcheckRegisterCallback(audit_log_relcache_callback, (Datum) 0);
		log_callback_registered = true;
	}
	if (OidIsValid(AuditLogRelid))
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
		AuditLogAttnum[i] = get_attnum(relid, al_names[i]);
		if (AuditLogAttnum[i] == InvalidAttrNumber)
			elog(ERROR, "column \"%s\" of agent.audit_log does not exist", al_names[i]);
	}
	al_seqid = PgaGetIdentitySequence(relid, AuditLogAttnum[AL_ID], false);
	AuditLogRelid = relid;
}

/* The session user's name (the db_user column), cached per role. */
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

/* Sets a text column of the row being formed; NULL stays NULL. */
static inline void
set_text(Datum *values, bool *nulls, int col, const char *s)
{
	int			a = AuditLogAttnum[col] - 1;

	if (s == NULL)
		return;
	values[a] = CStringGetTextDatum(s);
	nulls[a] = false;
}

/*
 * A target id as stored: redacted like the summary and the inputs (an id
 * may be a URL with a password, a token, a key the caller chose), and cut
 * at REDACT_MAX_STRING bytes on a character boundary.  NULL stays NULL.
 */
static const char *
clean_target_id(const char *s)
{
	int			len;
	char	   *red;
	int			red_len;

	if (s == NULL)
		return NULL;
	len = strlen(s);
	red = RedactText(s, len, &red_len);
	if (red == NULL && len <= REDACT_MAX_STRING)
		return s;
	if (red == NULL)
	{
		red = pstrdup(s);
		red_len = len;
	}
	if (red_len > REDACT_MAX_STRING)
		red[pg_mbcliplen(red, red_len, REDACT_MAX_STRING)] = '\0';
	return red;
}

/* Forgets the buffer (its memory goes with the transaction's). */
static void
pending_forget(void)
{
	AuditPendingCxt = NULL;
	pend = NULL;
	npend = 0;
	maxpend = 0;
	pend_bytes = 0;
	pend_lxid = InvalidLocalTransactionId;
}


/*
 * A rolled-back subtransaction drops its rows, a committed one hands them to
 * its parent.
 */
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

/*
 * Writes what is still buffered before commit; forgets the buffer at the end.
 */
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
				AuditFlush();
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

/*
 * Opens the log for one flush: executor state, result relation and, for a
 * partitioned log, tuple routing.
 */
static void
insert_state_open(AuditInsertState *st)
{
	int			i;

	AuditLogLookup();
	memset(st, 0, sizeof(*st));
	st->rel = table_open(AuditLogRelid, RowExclusiveLock);
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

/* Closes what insert_state_open opened. */
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
		Relation	parent = RelationIdGetRelation(AuditLogRelid);
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
 * Describes the indexes of partition rel (locked) for the next flushes.
 * Returns false, with nothing cached, when one of them is unique or an
 * exclusion constraint's.
 */
static bool
leaf_indexes_describe(Relation rel)
{
	List	   *oids;
	ListCell   *lc;
	MemoryContext old;
	int			n = 0;

	leaf_ix_relid = InvalidOid;
	if (leaf_ix_cxt == NULL)
		leaf_ix_cxt = AllocSetContextCreate(CacheMemoryContext, "pg_agents audit indexes",
											ALLOCSET_SMALL_SIZES);
	else
		MemoryContextReset(leaf_ix_cxt);
	leaf_ix_n = 0;
	oids = RelationGetIndexList(rel);
	old = MemoryContextSwitchTo(leaf_ix_cxt);
	leaf_ix_oids = palloc(sizeof(Oid) * Max(list_length(oids), 1));
	leaf_ix_info = palloc(sizeof(IndexInfo *) * Max(list_length(oids), 1));
	foreach(lc, oids)
	{
		Relation	ix = index_open(lfirst_oid(lc), RowExclusiveLock);
		IndexInfo  *ii = BuildIndexInfo(ix);

		index_close(ix, NoLock);
		if (ii->ii_Unique || ii->ii_ExclusionOps != NULL)
		{
			MemoryContextSwitchTo(old);
			MemoryContextReset(leaf_ix_cxt);
			list_free(oids);
			return false;
		}
		/* the states ExecInsertIndexTuples would make per flush */
		if (ii->ii_Predicate != NIL)
			ii->ii_PredicateState =
				ExecInitQual((List *) expression_planner((Expr *) ii->ii_Predicate), NULL);
		if (ii->ii_Expressions != NIL)
		{
			ListCell   *e;

			foreach(e, ii->ii_Expressions)
				ii->ii_ExpressionsState =
					lappend(ii->ii_ExpressionsState,
							ExecInitExpr(expression_planner((Expr *) lfirst(e)), NULL));
		}
		leaf_ix_oids[n] = lfirst_oid(lc);
		leaf_ix_info[n] = ii;
		n++;
	}
	MemoryContextSwitchTo(old);
	list_free(oids);
	leaf_ix_n = n;
	leaf_ix_relid = RelationGetRelid(rel);
	return true;
}

/*
 * Opens the indexes of partition rel (locked) into rri as ExecOpenIndices
 * would, from the description kept across flushes; the locks are kept to
 * the end of the transaction, as the partition's.  A partial index that
 * none of the n rows in slots goes into is not opened (rows without a run
 * skip the run index).  Returns false (nothing opened) when the indexes
 * cannot be described.
 */
static bool
leaf_indexes_open(ResultRelInfo *rri, Relation rel, EState *estate,
				  TupleTableSlot **slots, int n)
{
	int			i,
				j,
				nopen = 0;

	if (leaf_ix_relid != RelationGetRelid(rel) && !leaf_indexes_describe(rel))
		return false;
	rri->ri_IndexRelationDescs = palloc(sizeof(Relation) * Max(leaf_ix_n, 1));
	rri->ri_IndexRelationInfo = palloc(sizeof(IndexInfo *) * Max(leaf_ix_n, 1));
	for (i = 0; i < leaf_ix_n; i++)
	{
		IndexInfo  *ii = leaf_ix_info[i];

		if (ii->ii_PredicateState != NULL)
		{
			ExprContext *econtext = GetPerTupleExprContext(estate);
			bool		any = false;

			for (j = 0; j < n && !any; j++)
			{
				econtext->ecxt_scantuple = slots[j];
				any = ExecQual(ii->ii_PredicateState, econtext);
				ResetExprContext(econtext);
			}
			if (!any)
				continue;
		}
		rri->ri_IndexRelationDescs[nopen] = index_open(leaf_ix_oids[i], RowExclusiveLock);
		/* what an index AM caches during the flush goes with the flush */
		ii->ii_AmCache = NULL;
		ii->ii_Context = CurrentMemoryContext;
		rri->ri_IndexRelationInfo[nopen] = ii;
		nopen++;
	}
	rri->ri_NumIndices = nopen;
	return true;
}

/* Closes what leaf_indexes_open opened (the locks stay). */
static void
leaf_indexes_close(ResultRelInfo *rri)
{
	int			i;

	for (i = 0; i < rri->ri_NumIndices; i++)
	{
		PgaIndexInsertCleanup(rri->ri_IndexRelationDescs[i], rri->ri_IndexRelationInfo[i]);
		rri->ri_IndexRelationInfo[i]->ii_AmCache = NULL;
		index_close(rri->ri_IndexRelationDescs[i], NoLock);
	}
	rri->ri_NumIndices = 0;
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
	bool		cached;
	int			i,
				n = 0,
				keep = 0;

	if (!OidIsValid(leaf))
		return false;
	AuditLogLookup();
	/* as an INSERT through the parent: no partition detached under us */
	parent = table_open(AuditLogRelid, RowExclusiveLock);
	pdesc = RelationGetDescr(parent);
	for (i = 0; i < npend; i++)
	{
		bool		isnull;
		TimestampTz at;

		if (pend[i].subid != cur)
			continue;
		at = DatumGetTimestampTz(heap_getattr(pend[i].tup, AuditLogAttnum[AL_AT], pdesc, &isnull));
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
	if (!(cached = leaf_indexes_open(st.rri, rel, st.estate, st.slots, n)))
		ExecOpenIndices(st.rri, false);
	write_group(&st, st.rri, n);
	for (i = 0; i < n; i++)
		ExecDropSingleTupleTableSlot(st.slots[i]);
	if (cached)
		leaf_indexes_close(st.rri);
	else
		ExecCloseIndices(st.rri);
	table_close(rel, NoLock);
	table_close(parent, NoLock);
	FreeExecutorState(st.estate);
	npend = keep;
	return true;
}

/*
 * The rows of the current subtransaction written through SPI (relcheck.c:
 * multi-row INSERTs naming each row's workspace_id), for a log Citus
 * manages: its rows belong on the nodes of its shards.
 */
static void
audit_flush_spi(SubTransactionId cur)
{
	HeapTuple  *tuples = palloc(sizeof(HeapTuple) * npend);
	int			n = 0,
				keep = 0,
				i;

	for (i = 0; i < npend; i++)
	{
		if (pend[i].subid == cur)
			tuples[n++] = pend[i].tup;
		else
			pend[keep++] = pend[i];
	}
	RelcheckSpiInsertTuples(AuditLogRelid, tuples, n);
	pfree(tuples);
	npend = keep;
	if (npend == 0)
	{
		MemoryContextReset(AuditPendingCxt);
		pend = NULL;
		maxpend = 0;
		pend_bytes = 0;
	}
}

/*
 * Writes the buffered rows of the current subtransaction (those of an
 * enclosing one wait for it).
 */
void
AuditFlush(void)
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

	/* a log Citus manages is written through SPI, never directly */
	AuditLogLookup();
	if (RelcheckCitusManaged(AuditLogRelid))
	{
		audit_flush_spi(cur);
		return;
	}

	old = MemoryContextSwitchTo(AuditPendingCxt);
	if (audit_flush_leaf(cur))
	{
		MemoryContextSwitchTo(old);
		if (npend == 0)
		{
			MemoryContextReset(AuditPendingCxt);
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
		MemoryContextReset(AuditPendingCxt);
		pend = NULL;
		maxpend = 0;
		pend_bytes = 0;
	}
}

/* appends a formed row to the buffer (grown as needed), tied to the current subtransaction */
void
AuditPendingPush(HeapTuple tup_in_pend_cxt)
{
	if (pend == NULL)
	{
		maxpend = 64;
		pend = MemoryContextAlloc(AuditPendingCxt, sizeof(PendingRow) * maxpend);
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
	AuditPendingPush(tup_in_pend_cxt);
	pend_bytes += tup_in_pend_cxt->t_len;
	if (npend >= AUDIT_BATCH_ROWS || pend_bytes >= AUDIT_BATCH_BYTES)
		AuditFlush();
}

/* the buffer of this transaction, made on first use */
void
AuditPendingBegin(void)
{
	if (!xact_callback_registered)
	{
		RegisterXactCallback(audit_xact_callback, NULL);
		RegisterSubXactCallback(audit_subxact_callback, NULL);
		xact_callback_registered = true;
	}
	if (AuditPendingCxt != NULL && pend_lxid == PGA_MY_LXID)
		return;
	pending_forget();
	AuditPendingCxt = AllocSetContextCreate(TopTransactionContext, "pg_agents audit rows",
									 ALLOCSET_DEFAULT_SIZES);
	pend_lxid = PGA_MY_LXID;
}

/*
 * Buffers one row for agent.audit_log (formed now: its id, time and
 * transaction are those of the change).
 */
void
AuditInsert(AuditRow *row)
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
	AuditLogLookup();
	AuditPendingBegin();
	/* held to the end of the transaction, as an INSERT would */
	rel = table_open(AuditLogRelid, RowExclusiveLock);
	desc = RelationGetDescr(rel);
	natts = desc->natts;
	values = palloc0(sizeof(Datum) * natts);
	nulls = palloc(sizeof(bool) * natts);
	for (i = 0; i < natts; i++)
		nulls[i] = true;

	values[AuditLogAttnum[AL_ID] - 1] = Int64GetDatum(nextval_internal(al_seqid, false));
	nulls[AuditLogAttnum[AL_ID] - 1] = false;
	values[AuditLogAttnum[AL_AT] - 1] = TimestampTzGetDatum(GetCurrentTimestamp());
	nulls[AuditLogAttnum[AL_AT] - 1] = false;
	values[AuditLogAttnum[AL_TXID] - 1] =
		Int64GetDatum((int64) U64FromFullTransactionId(GetTopFullTransactionId()));
	nulls[AuditLogAttnum[AL_TXID] - 1] = false;
	if (row->has_run_id)
	{
		values[AuditLogAttnum[AL_RUN_ID] - 1] = Int64GetDatum(row->run_id);
		nulls[AuditLogAttnum[AL_RUN_ID] - 1] = false;
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
	set_text(values, nulls, AL_TARGET_ID, clean_target_id(row->target_id));
	set_text(values, nulls, AL_OWNER_ID, row->owner_id);
	set_text(values, nulls, AL_WORKSPACE_ID, row->workspace_id);
	set_text(values, nulls, AL_SUMMARY, row->summary);
	if (row->inputs)
	{
		values[AuditLogAttnum[AL_INPUTS] - 1] = JsonbPGetDatum(row->inputs);
		nulls[AuditLogAttnum[AL_INPUTS] - 1] = false;
	}
	if (row->changes)
	{
		values[AuditLogAttnum[AL_CHANGES] - 1] = JsonbPGetDatum(row->changes);
		nulls[AuditLogAttnum[AL_CHANGES] - 1] = false;
	}

	old = MemoryContextSwitchTo(AuditPendingCxt);
	tup = heap_form_tuple(desc, values, nulls);
	MemoryContextSwitchTo(old);
	table_close(rel, NoLock);
	pfree(values);
	pfree(nulls);
	pending_add(tup);
}
