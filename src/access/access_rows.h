/*-------------------------------------------------------------------------
 *
 * access_rows.h
 *		The one row source of the access facts (private to the access_*.c
 *		files): each fact reads the rows of one query below, by its keys,
 *		from the backend chosen once per relation and transaction
 *		(AccessEnsureRels):
 *
 *		index	a checked index scan of the local heap (access_rows_index.c),
 *				when the table is local and its index checked;
 *		spi		a read-only statement under the active snapshot
 *				(access_rows_spi.c), when Citus manages the table (its rows
 *				are on the nodes holding its shards), or on any node when
 *				pg_agents.access_backend = spi (a developer setting that
 *				proves both backends give the same answers).
 *
 *		A row means the same in both: every key holds (the index backend
 *		checks in C what its index does not), and column i of the query is
 *		the same column.  What the facts mean, and what they decide from
 *		the rows, is written once, in access_facts.c and access_readable.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_ACCESS_ROWS_H
#define PG_AGENTS_ACCESS_ROWS_H

#include "access/genam.h"
#include "access/relscan.h"
#include "access/htup.h"
#include "access/tupdesc.h"
#include "executor/tuptable.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"

/* the queries of the facts (their keys and columns: access_rows.c) */
typedef enum AccessQuery
{
	AQ_AGENT,					/* agents by id [, route]: workspace_id,
								 * owner_id, status, deleted_at */
	AQ_GROUPS,					/* group_members by user, workspace (NULL or
								 * equal): group_id */
	AQ_GRANT,					/* access by agent, type, id [, route]: access */
	AQ_GRANTS_OF_TYPE,			/* access by agent, type [, route]:
								 * resource_id, access */
	AQ_GRANTS_ALL,				/* access by agent [, route] (bounded):
								 * resource_type, resource_id, access */
	AQ_ACL,						/* resource_acl by type, id: principal,
								 * access, workspace_id */
	AQ_ACL_OF_PRINCIPAL,		/* resource_acl by principal, type (bounded):
								 * resource_id */
	AQ_SHARED_OF_TYPE,			/* resource_acl by principal 'workspace',
								 * type, workspace: resource_id */
	AQ_CONFIG,					/* access_config, every row: acl_function */
	AQ_NQUERIES
} AccessQuery;

#define AQ_MAX_KEYS		4
#define AQ_MAX_COLS		4

/* how a key restricts the rows */
typedef enum AccessKeyKind
{
	AK_INDEX,					/* a leading column of the index scanned */
	AK_EQ,						/* another column, equal */
	AK_NULL_OR_EQ,				/* another column, NULL or equal */
	AK_ROUTE					/* the workspace a statement routes to (Citus
								 * distributes by it); the index backend has
								 * no use for it */
} AccessKeyKind;

/* a key's value: text (s, NULL for none) or bigint (i) */
typedef struct AccessKey
{
	const char *s;
	int64		i;
} AccessKey;

typedef struct AccessKeyDef
{
	AccessKeyKind kind;
	Oid			type;			/* TEXTOID or INT8OID */
	AttrNumber *att;			/* AK_EQ, AK_NULL_OR_EQ: its column */
} AccessKeyDef;

/*
 * One query: its relation, its keys and columns, the index the index
 * backend scans (InvalidOid: the whole table) and the statement the SPI
 * backend runs (sql with every key, $1.. in key order; sql_unrouted without
 * the route key, last, run when it is NULL or, with route_fallback, when
 * the routed statement finds nothing; NULL sql: the backend cannot read it).
 */
typedef struct AccessQueryDef
{
	const char *name;
	Oid		   *heap;			/* into AccessRelations */
	Oid		   *index;
	struct PgaIndexInfo *ix;
	int			nkeys;
	AccessKeyDef keys[AQ_MAX_KEYS];
	int			ncols;
	AttrNumber *cols[AQ_MAX_COLS];
	const char *sql;
	const char *sql_unrouted;
	bool		route_fallback;
	bool		bounded;		/* takes a bound (AccessRowsBegin) */
} AccessQueryDef;

extern const AccessQueryDef AccessQueries[AQ_NQUERIES];

/* an open read of a query's rows (on the caller's stack) */
typedef struct AccessRows
{
	const struct AccessRowsOps *ops;
	const AccessQueryDef *q;
	AccessQuery qid;
	bool		truncated;		/* the bound was reached: more rows may match */
	/* the index backend */
	Relation	heap;
	Relation	index;
	IndexScanDesc scan;
	TableScanDesc hscan;
	TupleTableSlot *slot;
	bool		held;			/* the scan is the held one (AccessRowsHold) */
	int			seen;
	int			max_seen;
	Datum		text_keys[AQ_MAX_KEYS];
	int			ntext_keys;
	AccessKey	eq_keys[AQ_MAX_KEYS];
	/* the SPI backend: the rows, copied out of SPI */
	MemoryContext cxt;
	TupleDesc	tupdesc;
	HeapTuple  *tuples;
	uint64		ntuples;
	uint64		pos;
} AccessRows;

/* a backend (access_rows_index.c, access_rows_spi.c) */
typedef struct AccessRowsOps
{
	const char *name;
	bool		(*offers) (AccessQuery qid);
	void		(*begin) (AccessRows *rs, const AccessKey *keys, Snapshot snap, int bound);
	bool		(*next) (AccessRows *rs);
	Datum		(*get) (AccessRows *rs, int col, bool *isnull);
	void		(*end) (AccessRows *rs);
	void		(*hold) (AccessQuery qid, Snapshot snap);
	void		(*release) (AccessQuery qid, bool abort);
} AccessRowsOps;

extern const AccessRowsOps AccessRowsIndex;
extern const AccessRowsOps AccessRowsSpi;

/* the backend of a query's relation in this transaction (AccessEnsureRels) */
extern const AccessRowsOps *AccessRowsSource(AccessQuery qid);

/*
 * Begins reading the rows of a query by its keys (AK_ROUTE may be NULL).
 * bound (queries marked bounded): the reader needs at most bound + 1 rows;
 * the SPI backend returns no more (LIMIT), the index backend, which checks
 * in C what its index does not, stops with truncated set once it has
 * looked at 16 * Max(bound, 1) rows.
 */
static inline void
AccessRowsBegin(AccessRows *rs, AccessQuery qid, const AccessKey *keys, Snapshot snap,
				int bound)
{
	rs->ops = AccessRowsSource(qid);
	rs->q = &AccessQueries[qid];
	rs->qid = qid;
	rs->truncated = false;
	rs->ops->begin(rs, keys, snap, bound);
}

/* the next row (false at the end) */
static inline bool
AccessRowsNext(AccessRows *rs)
{
	return rs->ops->next(rs);
}

/* column col (0-based, in the query's order) of the current row */
static inline Datum
AccessRowsGet(AccessRows *rs, int col, bool *isnull)
{
	return rs->ops->get(rs, col, isnull);
}

static inline void
AccessRowsEnd(AccessRows *rs)
{
	rs->ops->end(rs);
}

/* does the backend of the query's relation read it? */
static inline bool
AccessRowsOffers(AccessQuery qid)
{
	return AccessRowsSource(qid)->offers(qid);
}

/* does a read of the query route by the workspace (its AK_ROUTE key)? */
static inline bool
AccessRowsRouted(AccessQuery qid)
{
	return AccessRowsSource(qid) == &AccessRowsSpi;
}

/*
 * Keeps one read of the query open across many (the readable set reads
 * the ACL of every candidate: one index scan, rescanned); Release ends it
 * (abort: after an error, whose abort releases the rest).  Nothing for a
 * backend with no open reads to keep.
 */
static inline void
AccessRowsHold(AccessQuery qid, Snapshot snap)
{
	AccessRowsSource(qid)->hold(qid, snap);
}

static inline void
AccessRowsRelease(AccessQuery qid, bool abort)
{
	AccessRowsSource(qid)->release(qid, abort);
}

/* text column col of the current row as a C string in cxt, NULL if null */
extern char *AccessRowsText(AccessRows *rs, int col, MemoryContext cxt);

#endif							/* PG_AGENTS_ACCESS_ROWS_H */
