/*-------------------------------------------------------------------------
 *
 * access_rows_spi.c
 *		The SPI backend of the access row source (access_rows.h), for a
 *		table Citus manages (its rows are on the nodes holding its shards,
 *		not in the local heap), or any table with pg_agents.access_backend
 *		= spi: a kept read-only plan under the active snapshot, run as the
 *		owner of schema "agent" (a direct scan checks no permission either),
 *		routed to the workspace when the query has a route.  The rows are
 *		copied out of SPI before it ends, so that what a fact decides from
 *		them runs outside SPI (a decision may itself read through SPI).
 *		Also the SPI runner of the access module's other statements.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "access.h"
#include "access_int.h"
#include "util/spi_util.h"

/* the kept plans: [query][0] with its route, [query][1] without */
static SPIPlanPtr plans[AQ_NQUERIES][2];

/*
 * Runs a kept read-only plan, elevated and connected (also for
 * access_readable.c); AccessSpiDone ends it.  Where Citus manages the access
 * tables, never in a parallel worker (Citus runs no query there); on one
 * node a parallel worker reads through SPI as the leader does.  Its
 * callers hold a row source, so AccessRelations is filled.
 */
void
AccessSpiRun(PgaElevation *e, SPIPlanPtr *plan, const char *sql, int nargs, Oid *types,
			 Datum *vals)
{
	int			rc;

	if (AccessRelsOnCitus())
		RelcheckCitusNotParallel();
	RelcheckElevate(e);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_agents: SPI_connect failed");
	rc = SpiUtilExecPlan(plan, sql, nargs, types, vals, NULL, true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "pg_agents: access lookup failed: %s", SPI_result_code_string(rc));
}

void
AccessSpiDone(PgaElevation *e)
{
	SPI_finish();
	RelcheckRestore(e);
}

/* text column i (1-based) of SPI result row r, palloc'd in cxt; NULL if null */
char *
AccessSpiText(uint64 r, int i, MemoryContext cxt)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, i, &isnull);
	MemoryContext old;
	char	   *s;

	if (isnull)
		return NULL;
	old = MemoryContextSwitchTo(cxt);
	s = TextDatumGetCString(d);
	MemoryContextSwitchTo(old);
	return s;
}

static bool
SpiOffers(AccessQuery qid)
{
	return AccessQueries[qid].sql != NULL;
}

/* runs one statement of the query and copies its rows into rs->cxt */
static void
SpiRead(AccessRows *rs, bool routed, int nargs, Oid *types, Datum *vals)
{
	const AccessQueryDef *q = rs->q;
	PgaElevation elev;
	MemoryContext old = MemoryContextSwitchTo(rs->cxt);
	uint64		r;

	/* SPI_copytuple copies into the context current at SPI_connect: rs->cxt */
	AccessSpiRun(&elev, &plans[rs->qid][routed ? 0 : 1],
				 routed || q->sql_unrouted == NULL ? q->sql : q->sql_unrouted,
				 nargs, types, vals);
	rs->ntuples = SPI_processed;
	if (SPI_processed > 0)
	{
		MemoryContext spi = MemoryContextSwitchTo(rs->cxt);

		rs->tupdesc = CreateTupleDescCopy(SPI_tuptable->tupdesc);
		rs->tuples = palloc(sizeof(HeapTuple) * SPI_processed);
		MemoryContextSwitchTo(spi);
		for (r = 0; r < SPI_processed; r++)
			rs->tuples[r] = SPI_copytuple(SPI_tuptable->vals[r]);
	}
	AccessSpiDone(&elev);
	MemoryContextSwitchTo(old);
}

/*
 * The statement of the query with every key ($1.. the keys in order, then
 * the bound, then the route); with a route of NULL, or with route_fallback
 * when the routed statement finds nothing, the one without the route.
 */
static void
SpiBegin(AccessRows *rs, const AccessKey *keys, Snapshot snap, int bound)
{
	const AccessQueryDef *q = rs->q;
	Oid			types[AQ_MAX_KEYS + 1];
	Datum		vals[AQ_MAX_KEYS + 1];
	int			n = 0;
	int			k;
	const char *route = NULL;
	bool		has_route = false;

	rs->cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_agents access rows",
									ALLOCSET_SMALL_SIZES);
	rs->ntuples = 0;
	rs->pos = 0;
	rs->tuples = NULL;
	rs->tupdesc = NULL;
	for (k = 0; k < q->nkeys; k++)
	{
		if (q->keys[k].kind == AK_ROUTE)
		{
			/* the last key */
			has_route = true;
			route = keys[k].s;
			continue;
		}
		types[n] = q->keys[k].type;
		vals[n++] = q->keys[k].type == INT8OID ? Int64GetDatum(keys[k].i) :
			CStringGetTextDatum(keys[k].s);
	}
	if (q->bounded)
	{
		types[n] = INT8OID;
		vals[n++] = Int64GetDatum((int64) bound + 1);
	}
	if (has_route && route != NULL)
	{
		types[n] = TEXTOID;
		vals[n] = CStringGetTextDatum(route);
		SpiRead(rs, true, n + 1, types, vals);
		if (rs->ntuples > 0 || !q->route_fallback)
			return;
	}
	SpiRead(rs, !has_route, n, types, vals);
}

static bool
SpiNext(AccessRows *rs)
{
	if (rs->pos >= rs->ntuples)
		return false;
	rs->pos++;
	return true;
}

static Datum
SpiGet(AccessRows *rs, int col, bool *isnull)
{
	return heap_getattr(rs->tuples[rs->pos - 1], col + 1, rs->tupdesc, isnull);
}

static void
SpiEnd(AccessRows *rs)
{
	MemoryContextDelete(rs->cxt);
}

/* nothing is kept open across reads */
static void
SpiHold(AccessQuery qid, Snapshot snap)
{
}

static void
SpiRelease(AccessQuery qid, bool abort)
{
}

const AccessRowsOps AccessRowsSpi = {
	"spi", SpiOffers, SpiBegin, SpiNext, SpiGet, SpiEnd, SpiHold, SpiRelease
};
