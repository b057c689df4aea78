/*-------------------------------------------------------------------------
 *
 * relcheck.h
 *		The relations the C code reads or writes directly (relcheck.c): the
 *		indexes it scans, found by name and checked column by column, and
 *		whether Citus manages a relation (then SPI is used instead).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_RELCHECK_H
#define PG_AGENTS_RELCHECK_H

#include "postgres.h"

#include "access/htup.h"
#include "access/skey.h"

#define PGA_INDEX_MAX_COLS	4

/* one leading column an index must have: its name in the heap and its type */
typedef struct PgaIndexColumn
{
	const char *name;
	Oid			type;
} PgaIndexColumn;

/* what a direct scan of an index needs, found when it was checked */
typedef struct PgaIndexInfo
{
	Oid			indexid;
	Oid			heapid;
	int			ncols;
	RegProcedure eqproc[PGA_INDEX_MAX_COLS];	/* the equality of the index's opfamily */
	Oid			collation[PGA_INDEX_MAX_COLS];
} PgaIndexInfo;

/*
 * How an index is expected: agent.<index> on agent.<heap>, leading columns;
 * restriction (NULL: the index may not be partial) gives the conditions
 * every row the scan reads satisfies (implicit AND, Vars of varno 1), which
 * must imply the index's predicate, if any.
 */
typedef struct PgaIndexSpec
{
	const char *index;
	const char *heap;
	int			ncols;
	PgaIndexColumn cols[PGA_INDEX_MAX_COLS];
	struct List *(*restriction) (Oid heapid);
} PgaIndexSpec;

extern const PgaIndexInfo *RelcheckIndex(const PgaIndexSpec *spec);
extern void RelcheckIndexKey(ScanKey key, const PgaIndexInfo *ix, int col, Datum value);
extern void RelcheckIndexNullKey(ScanKey key, int col);

extern bool RelcheckCitusManaged(Oid relid);
extern void RelcheckCitusNotParallel(void);
extern void RelcheckRegisterCallback(void (*fn) (Datum arg, Oid relid), Datum arg);
extern void RelcheckSpiInsertTuples(Oid relid, HeapTuple *tuples, int ntuples);
extern bool RelcheckSpiCustomAcl(void);

/* acting as the owner of schema "agent" with search_path = pg_catalog */
typedef struct PgaElevation
{
	Oid			save_userid;
	int			save_sec;
	int			nest;
} PgaElevation;

extern void RelcheckElevate(PgaElevation *e);
extern void RelcheckRestore(PgaElevation *e);

#endif							/* PG_AGENTS_RELCHECK_H */
