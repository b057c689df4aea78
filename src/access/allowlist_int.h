/*-------------------------------------------------------------------------
 *
 * allowlist_int.h
 *		Private declarations of the allowlist module: the kept readable sets
 *		(allowlist_cache.c) as the membership test and the planner support
 *		(allowlist_support.c) read them.  No other module includes it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_ALLOWLIST_INT_H
#define PG_AGENTS_ALLOWLIST_INT_H

#include "access/transam.h"
#include "datatype/timestamp.h"
#include "utils/palloc.h"

/*
 * What identifies the visible transaction set of a snapshot (see
 * allowlist_cache.c): a readable set not kept across statements is good
 * while it is the same.
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
	uint64		epoch;			/* changes whenever array may be freed or replaced */
	int8		sorted;			/* uuid array: 0 not checked, 1 sorted, -1 not */
} IdsEntry;

extern bool AllowlistParseMode(text *mode);
extern IdsEntry *AllowlistFindEntry(int64 agent_id, const char *rtype, bool edit, Oid elemtype, Oid access_rel);
extern bool AllowlistTextIs(text *t, const char *s);
extern int AllowlistCompareInt64(const void *a, const void *b);
extern Datum AllowlistIdsArrayOrCount(int64 agent_id, const char *rtype, bool edit, Oid elemtype, int *count, bool kept_only);
extern Datum AllowlistIdsArray(int64 agent_id, const char *rtype, bool edit, Oid elemtype);
extern Datum AllowlistIdsKept(int64 agent_id, const char *rtype, bool edit, Oid elemtype);
extern Datum AllowlistIdsKeptBorrowed(int64 agent_id, const char *rtype, bool edit, Oid elemtype,
									  IdsEntry **from, uint64 *epoch);
extern int AllowlistIdsEstimate(int64 agent_id, const char *rtype, bool edit, Oid elemtype);

#endif							/* PG_AGENTS_ALLOWLIST_INT_H */
