/*-------------------------------------------------------------------------
 *
 * relcheck.c
 *		The relations the C code reads or writes directly, checked before it
 *		does: an index scanned is found by name and its leading columns are
 *		checked by name and type (a changed index raises an error naming it,
 *		never a crash), and a relation managed by Citus (a row in
 *		pg_catalog.pg_dist_partition) is never read or written directly (the
 *		callers use SPI then).  Both answers are cached per backend and
 *		dropped by a relcache invalidation of the relation.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/parallel.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "optimizer/optimizer.h"
#include "utils/relcache.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "relcheck.h"

#define RELCHECK_MAX_INDEXES	16
#define RELCHECK_MAX_MANAGED	32

typedef struct CheckedIndex
{
	const PgaIndexSpec *spec;	/* NULL: free slot */
	PgaIndexInfo info;
} CheckedIndex;

typedef struct ManagedRel
{
	Oid			relid;			/* InvalidOid: free slot */
	bool		managed;
} ManagedRel;

static CheckedIndex checked[RELCHECK_MAX_INDEXES];
static ManagedRel managed_rels[RELCHECK_MAX_MANAGED];
static bool callback_registered = false;
static Oid	dist_relid = InvalidOid;	/* pg_catalog.pg_dist_partition, once seen */

/* a relation changed: forget what was checked about it (all, for InvalidOid) */
static void
RelcheckInvalCallback(Datum arg, Oid relid)
{
	int			i;

	for (i = 0; i < RELCHECK_MAX_INDEXES; i++)
		if (checked[i].spec != NULL &&
			(!OidIsValid(relid) || relid == checked[i].info.indexid ||
			 relid == checked[i].info.heapid))
			checked[i].spec = NULL;
	for (i = 0; i < RELCHECK_MAX_MANAGED; i++)
		if (OidIsValid(managed_rels[i].relid) &&
			(!OidIsValid(relid) || relid == managed_rels[i].relid || relid == dist_relid))
			managed_rels[i].relid = InvalidOid;
}

/*
 * The extension's relcache callbacks, called by one callback of PostgreSQL:
 * a backend has room for only MAX_RELCACHE_CALLBACKS (10) of them, which
 * Citus and pg_agents together would otherwise exceed (FATAL: out of
 * relcache_callback_list slots).
 */
#define RELCHECK_MAX_LISTENERS	16

typedef struct RelcacheListener
{
	RelcacheCallbackFunction fn;
	Datum		arg;
} RelcacheListener;

static RelcacheListener listeners[RELCHECK_MAX_LISTENERS];
static int	nlisteners = 0;

static void
RelcacheMux(Datum arg, Oid relid)
{
	int			i;

	RelcheckInvalCallback(arg, relid);
	for (i = 0; i < nlisteners; i++)
		listeners[i].fn(listeners[i].arg, relid);
}

static void
EnsureCallback(void)
{
	if (!callback_registered)
	{
		CacheRegisterRelcacheCallback(RelcacheMux, (Datum) 0);
		callback_registered = true;
	}
}

/*
 * Registers a relcache callback of the extension (as
 * CacheRegisterRelcacheCallback does, without using one of PostgreSQL's
 * slots); once per backend, like it.
 */
void
RelcheckRegisterCallback(RelcacheCallbackFunction fn, Datum arg)
{
	EnsureCallback();
	if (nlisteners >= RELCHECK_MAX_LISTENERS)
		ereport(FATAL,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("out of pg_agents relcache callback slots")));
	listeners[nlisteners].fn = fn;
	listeners[nlisteners].arg = arg;
	nlisteners++;
}

/* "(id bigint, workspace_id text)": the leading columns a spec expects */
static char *
SpecColumns(const PgaIndexSpec *spec)
{
	StringInfoData buf;
	int			i;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '(');
	for (i = 0; i < spec->ncols; i++)
		appendStringInfo(&buf, "%s%s %s", i > 0 ? ", " : "", spec->cols[i].name,
						 format_type_be(spec->cols[i].type));
	appendStringInfoChar(&buf, ')');
	return buf.data;
}

/* the error of an index that is missing or not what the code needs */
static void
IndexError(const PgaIndexSpec *spec, bool missing, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 missing ?
			 errmsg("index \"agent.%s\" does not exist", spec->index) :
			 errmsg("index \"agent.%s\" does not have the columns pg_agents needs", spec->index),
			 errdetail("pg_agents reads agent.%s directly through a valid B-tree index \"agent.%s\" whose leading columns are %s%s%s.",
					   spec->heap, spec->index, SpecColumns(spec),
					   why ? "; " : "", why ? why : ""),
			 errhint("Restore the index as the install script of pg_agents defines it (or reinstall the extension).")));
}

/* checks the index against its spec; fills info or raises the error */
static void
CheckIndex(const PgaIndexSpec *spec, PgaIndexInfo *info)
{
	Oid			nsp = get_namespace_oid("agent", true);
	Oid			heapid = OidIsValid(nsp) ? get_relname_relid(spec->heap, nsp) : InvalidOid;
	Oid			indexid = OidIsValid(nsp) ? get_relname_relid(spec->index, nsp) : InvalidOid;
	HeapTuple	tup;
	Form_pg_class cform;
	Form_pg_index iform;
	Datum		d;
	bool		isnull;
	oidvector  *indclass;
	oidvector  *indcoll;
	int			i;

	if (!OidIsValid(heapid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation \"agent.%s\" does not exist", spec->heap),
				 errhint("Is the pg_agents extension installed in this database?")));
	if (!OidIsValid(indexid))
		IndexError(spec, true, NULL);

	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(indexid));
	if (!HeapTupleIsValid(tup))
		IndexError(spec, true, NULL);
	cform = (Form_pg_class) GETSTRUCT(tup);
	if (cform->relkind != RELKIND_INDEX)
	{
		ReleaseSysCache(tup);
		IndexError(spec, false, "it is not an index of a table");
	}
	if (cform->relam != BTREE_AM_OID)
	{
		ReleaseSysCache(tup);
		IndexError(spec, false, "it is not a B-tree index");
	}
	ReleaseSysCache(tup);

	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexid));
	if (!HeapTupleIsValid(tup))
		IndexError(spec, true, NULL);
	iform = (Form_pg_index) GETSTRUCT(tup);
	if (iform->indrelid != heapid)
	{
		ReleaseSysCache(tup);
		IndexError(spec, false, psprintf("it is an index of another table"));
	}
	if (!iform->indisvalid || !iform->indisready || !iform->indislive)
	{
		ReleaseSysCache(tup);
		IndexError(spec, false, "it is not valid");
	}
	if (iform->indnkeyatts < spec->ncols)
	{
		ReleaseSysCache(tup);
		IndexError(spec, false, psprintf("it has %d key columns", iform->indnkeyatts));
	}
	if (!heap_attisnull(tup, Anum_pg_index_indpred, NULL))
	{
		Relation	irel;
		List	   *pred;
		bool		implied;

		if (spec->restriction == NULL)
		{
			ReleaseSysCache(tup);
			IndexError(spec, false, "it is a partial index");
		}
		irel = index_open(indexid, AccessShareLock);
		pred = RelationGetIndexPredicate(irel);
		implied = predicate_implied_by(pred, spec->restriction(heapid), false);
		index_close(irel, AccessShareLock);
		if (!implied)
		{
			ReleaseSysCache(tup);
			IndexError(spec, false, "its predicate may leave out rows the scan reads");
		}
	}
	d = SysCacheGetAttr(INDEXRELID, tup, Anum_pg_index_indclass, &isnull);
	Assert(!isnull);
	indclass = (oidvector *) DatumGetPointer(d);
	d = SysCacheGetAttr(INDEXRELID, tup, Anum_pg_index_indcollation, &isnull);
	Assert(!isnull);
	indcoll = (oidvector *) DatumGetPointer(d);

	for (i = 0; i < spec->ncols; i++)
	{
		const PgaIndexColumn *c = &spec->cols[i];
		AttrNumber	want = get_attnum(heapid, c->name);
		AttrNumber	have = iform->indkey.values[i];
		Oid			opfamily;
		Oid			opcintype;
		Oid			opno;
		char	   *why = NULL;

		if (have == 0)
			why = psprintf("its column %d is an expression", i + 1);
		else if (want == InvalidAttrNumber || have != want)
			why = psprintf("its column %d is %s", i + 1,
						   quote_identifier(get_attname(heapid, have, false)));
		else if (get_atttype(heapid, have) != c->type)
			why = psprintf("its column %d (%s) is of type %s", i + 1, c->name,
						   format_type_be(get_atttype(heapid, have)));
		else
		{
			opfamily = get_opclass_family(indclass->values[i]);
			opcintype = get_opclass_input_type(indclass->values[i]);
			opno = opcintype == c->type ?
				get_opfamily_member(opfamily, c->type, c->type, BTEqualStrategyNumber) :
				InvalidOid;
			if (!OidIsValid(opno))
				why = psprintf("its column %d (%s) has an operator class without equality on %s",
							   i + 1, c->name, format_type_be(c->type));
			else
			{
				info->eqproc[i] = get_opcode(opno);
				info->collation[i] = indcoll->values[i];
			}
		}
		if (why != NULL)
		{
			ReleaseSysCache(tup);
			IndexError(spec, false, why);
		}
	}
	ReleaseSysCache(tup);
	info->indexid = indexid;
	info->heapid = heapid;
	info->ncols = spec->ncols;
}

/*
 * agent.<spec->index>, checked against spec (once, then again after a
 * relcache invalidation of the index or its table): an error
 * (ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE) when it is missing or its
 * leading columns are not the named ones of the given types.  The result
 * stays valid until the next invalidation is processed.
 */
const PgaIndexInfo *
RelcheckIndex(const PgaIndexSpec *spec)
{
	int			i;
	int			free_slot = -1;
	PgaIndexInfo info;

	EnsureCallback();
	for (i = 0; i < RELCHECK_MAX_INDEXES; i++)
	{
		if (checked[i].spec == spec)
			return &checked[i].info;
		if (checked[i].spec == NULL && free_slot < 0)
			free_slot = i;
	}
	memset(&info, 0, sizeof(info));
	CheckIndex(spec, &info);
	if (free_slot < 0)
		elog(ERROR, "pg_agents: too many checked indexes");
	checked[free_slot].info = info;
	checked[free_slot].spec = spec;
	return &checked[free_slot].info;
}

/* a scan key: checked column col (0-based) equals value */
void
RelcheckIndexKey(ScanKey key, const PgaIndexInfo *ix, int col, Datum value)
{
	Assert(col >= 0 && col < ix->ncols);
	ScanKeyEntryInitialize(key, 0, col + 1, BTEqualStrategyNumber, InvalidOid,
						   ix->collation[col], ix->eqproc[col], value);
}

/* a scan key: column col (0-based) IS NULL */
void
RelcheckIndexNullKey(ScanKey key, int col)
{
	ScanKeyEntryInitialize(key, SK_ISNULL | SK_SEARCHNULL, col + 1, InvalidStrategy,
						   InvalidOid, InvalidOid, InvalidOid, (Datum) 0);
}

/* is there a row of pg_catalog.pg_dist_partition for the relation? */
static bool
LookupManaged(Oid relid)
{
	Oid			dist = get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE);
	AttrNumber	att;
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData key;
	bool		found;

	if (!OidIsValid(dist))
		return false;
	dist_relid = dist;
	att = get_attnum(dist, "logicalrelid");
	if (att == InvalidAttrNumber)
		return false;
	rel = table_open(dist, AccessShareLock);
	ScanKeyInit(&key, att, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 1, &key);
	found = HeapTupleIsValid(systable_getnext(scan));
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/*
 * Does Citus manage the relation (a distributed, reference or Citus local
 * table: its rows are not, or not only, in the local heap)?  False without
 * Citus.  Cached per relation until a relcache invalidation of it (Citus
 * sends one when it records or drops the relation in its metadata).
 */
bool
RelcheckCitusManaged(Oid relid)
{
	int			i;
	int			free_slot = -1;
	bool		managed;

	EnsureCallback();
	for (i = 0; i < RELCHECK_MAX_MANAGED; i++)
	{
		if (managed_rels[i].relid == relid)
			return managed_rels[i].managed;
		if (!OidIsValid(managed_rels[i].relid) && free_slot < 0)
			free_slot = i;
	}
	managed = LookupManaged(relid);
	if (free_slot >= 0)
	{
		managed_rels[free_slot].relid = relid;
		managed_rels[free_slot].managed = managed;
	}
	return managed;
}

/*
 * Acts as the owner of schema "agent" with search_path = pg_catalog until
 * RelcheckRestore (an error unwinds both with the transaction): what a direct
 * read does without permission checks, SPI does as the owner.
 */
void
RelcheckElevate(PgaElevation *e)
{
	Oid			nsp = get_namespace_oid("agent", false);
	HeapTuple	tup;
	Oid			owner;

	tup = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(nsp));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for namespace %u", nsp);
	owner = ((Form_pg_namespace) GETSTRUCT(tup))->nspowner;
	ReleaseSysCache(tup);

	GetUserIdAndSecContext(&e->save_userid, &e->save_sec);
	SetUserIdAndSecContext(owner, e->save_sec | SECURITY_LOCAL_USERID_CHANGE);
	e->nest = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
}

/* undoes RelcheckElevate: the search_path and the user of the caller */
void
RelcheckRestore(PgaElevation *e)
{
	AtEOXact_GUC(true, e->nest);
	SetUserIdAndSecContext(e->save_userid, e->save_sec);
}

/*
 * Inserts the tuples (formed with the row type of agent.<relname>, relid)
 * through SPI, as the owner of schema "agent": batched multi-row INSERTs
 * naming every column (so the workspace_id of each row too), identity
 * values kept (OVERRIDING SYSTEM VALUE), for a table Citus manages, whose
 * rows go to the nodes of their shards.
 */
void
RelcheckSpiInsertTuples(Oid relid, HeapTuple *tuples, int ntuples)
{
	Relation	rel = table_open(relid, RowExclusiveLock);
	TupleDesc	desc = RelationGetDescr(rel);
	int			natts = desc->natts;
	int		   *cols = palloc(sizeof(int) * natts);
	int			ncols = 0;
	int			per_stmt;
	int			done = 0;
	Datum	   *values = palloc(sizeof(Datum) * natts);
	bool	   *isnull = palloc(sizeof(bool) * natts);
	char	   *relname = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
													 RelationGetRelationName(rel));
	PgaElevation elev;
	int			i;

	for (i = 0; i < natts; i++)
	{
		Form_pg_attribute a = TupleDescAttr(desc, i);

		if (!a->attisdropped && a->attgenerated == '\0')
			cols[ncols++] = i;
	}
	per_stmt = Max(1, Min(1000, 65535 / Max(ncols, 1)));

	RelcheckElevate(&elev);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_agents: SPI_connect failed");
	while (done < ntuples)
	{
		int			n = Min(per_stmt, ntuples - done);
		StringInfoData sql;
		Oid		   *types = palloc(sizeof(Oid) * n * ncols);
		Datum	   *args = palloc(sizeof(Datum) * n * ncols);
		char	   *nulls = palloc(n * ncols);
		int			r,
					c,
					p = 0;
		int			rc;

		initStringInfo(&sql);
		appendStringInfo(&sql, "INSERT INTO %s (", relname);
		for (c = 0; c < ncols; c++)
			appendStringInfo(&sql, "%s%s", c > 0 ? ", " : "",
							 quote_identifier(NameStr(TupleDescAttr(desc, cols[c])->attname)));
		appendStringInfoString(&sql, ") OVERRIDING SYSTEM VALUE VALUES ");
		for (r = 0; r < n; r++)
		{
			heap_deform_tuple(tuples[done + r], desc, values, isnull);
			appendStringInfoString(&sql, r > 0 ? ", (" : "(");
			for (c = 0; c < ncols; c++)
			{
				types[p] = TupleDescAttr(desc, cols[c])->atttypid;
				args[p] = values[cols[c]];
				nulls[p] = isnull[cols[c]] ? 'n' : ' ';
				p++;
				appendStringInfo(&sql, "%s$%d", c > 0 ? ", " : "", p);
			}
			appendStringInfoChar(&sql, ')');
		}
		rc = SPI_execute_with_args(sql.data, p, types, args, nulls, false, 0);
		if (rc != SPI_OK_INSERT)
			elog(ERROR, "pg_agents: insert into %s failed: %s", relname, SPI_result_code_string(rc));
		if (SPI_processed != (uint64) n)
			elog(ERROR, "pg_agents: insert into %s wrote " UINT64_FORMAT " rows of %d",
				 relname, SPI_processed, n);
		pfree(sql.data);
		pfree(types);
		pfree(args);
		pfree(nulls);
		done += n;
	}
	SPI_finish();
	RelcheckRestore(&elev);
	table_close(rel, NoLock);
}

/*
 * Whether a row of agent.access_config (relid) names an ACL function, read
 * through SPI (a reference table under Citus), as the owner of schema "agent".
 */
bool
RelcheckSpiCustomAcl(void)
{
	PgaElevation elev;
	bool		found;
	int			rc;

	RelcheckElevate(&elev);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_agents: SPI_connect failed");
	rc = SPI_execute("SELECT 1 FROM agent.access_config c WHERE c.acl_function IS NOT NULL LIMIT 1",
					 true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "pg_agents: access_config lookup failed: %s", SPI_result_code_string(rc));
	found = SPI_processed > 0;
	SPI_finish();
	RelcheckRestore(&elev);
	return found;
}

/*
 * Errors out in a parallel worker, before a query of a table Citus manages:
 * Citus runs no distributed query there (it fails on its own with "cannot
 * use 2PC in transactions involving multiple servers"); the decision
 * functions are PARALLEL SAFE for the single-node case.
 */
void
RelcheckCitusNotParallel(void)
{
	if (IsParallelWorker())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("pg_agents cannot read a table managed by Citus in a parallel worker"),
				 errdetail("Access decisions read agent.agents, agent.access, agent.resource_acl, agent.group_members and agent.access_config through queries when Citus manages them, and Citus runs no query from a parallel worker."),
				 errhint("Set max_parallel_workers_per_gather to 0 where queries call agent.can_access on Citus (see docs/scaling.md).")));
}
