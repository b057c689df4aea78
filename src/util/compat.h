/*-------------------------------------------------------------------------
 *
 * compat.h
 *		What differs between the PostgreSQL major versions pg_agents builds
 *		against (15, 16, 17, 18), in one place, as pgvector and pg_cron do.
 *
 * Where only arguments were added, a macro of the same name supplies them,
 * so the call sites read as on PostgreSQL 15.  Where the call itself
 * changed, a PGA_ macro or a Pga function stands for it.  The headers that declare those
 * functions are included here first, so that a macro never renames their
 * declarations; include this file after postgres.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_COMPAT_H
#define PG_AGENTS_COMPAT_H

#include "postgres.h"

#include "access/genam.h"
#include "access/relation.h"
#include "catalog/dependency.h"
#include "catalog/pg_class.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/lockdefs.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/resowner.h"

#if PG_VERSION_NUM < 150000
#error "pg_agents needs PostgreSQL 15 or later"
#endif

/*
 * 16: pg_class_ownercheck() and its kin became object_ownercheck(classid, ...)
 */
#if PG_VERSION_NUM >= 160000
#define pg_class_ownercheck(relid, roleid) \
	object_ownercheck(RelationRelationId, (relid), (roleid))
#endif

/*
 * 16: pg_proc_aclcheck() became object_aclcheck(ProcedureRelationId, ...)
 */
#if PG_VERSION_NUM >= 160000
#define pg_proc_aclcheck(procid, roleid, mode) \
	object_aclcheck(ProcedureRelationId, (procid), (roleid), (mode))
#endif

/*
 * 16: stringToQualifiedNameList() takes a soft-error context (NULL: errors
 * are thrown, as before)
 */
#if PG_VERSION_NUM >= 160000
#define stringToQualifiedNameList(string) \
	stringToQualifiedNameList((string), NULL)
#endif

/*
 * 16: ExecInsertIndexTuples() takes onlySummarizing (false: every index, as
 * before)
 */
#if PG_VERSION_NUM >= 160000
#define ExecInsertIndexTuples(rri, slot, estate, update, noDupErr, specConflict, arbiterIndexes) \
	ExecInsertIndexTuples((rri), (slot), (estate), (update), (noDupErr), \
						  (specConflict), (arbiterIndexes), false)
#endif

/*
 * 17: an index AM may keep state between the index_insert() calls of a
 * statement (BRIN's revmap), released by index_insert_cleanup() before the
 * index is closed (ExecCloseIndices does it)
 */
#if PG_VERSION_NUM >= 170000
#define PgaIndexInsertCleanup(index, info) index_insert_cleanup((index), (info))
#else
#define PgaIndexInsertCleanup(index, info) ((void) (index), (void) (info))
#endif

/*
 * 18: index_beginscan() takes the instrumentation of parallel index scans
 * (NULL: none)
 */
#if PG_VERSION_NUM >= 180000
#define index_beginscan(heap, index, snapshot, nkeys, norderbys) \
	index_beginscan((heap), (index), (snapshot), NULL, (nkeys), (norderbys))
#endif

/*
 * 18: RelationGetPrimaryKeyIndex() can return a deferrable primary key; as
 * before, only an immediate one is taken (false)
 */
#if PG_VERSION_NUM >= 180000
#define RelationGetPrimaryKeyIndex(relation) \
	RelationGetPrimaryKeyIndex((relation), false)
#endif

/*
 * 17: the IsBackgroundWorker flag became the AmBackgroundWorkerProcess()
 * test of the process's type (miscadmin.h)
 */
#if PG_VERSION_NUM >= 170000
#define PGA_IS_BACKGROUND_WORKER AmBackgroundWorkerProcess()
#else
#define PGA_IS_BACKGROUND_WORKER IsBackgroundWorker
#endif

/*
 * 17: the local transaction id of a backend moved into PGPROC.vxid
 */
#if PG_VERSION_NUM >= 170000
#define PGA_MY_LXID (MyProc->vxid.lxid)
#else
#define PGA_MY_LXID (MyProc->lxid)
#endif

/*
 * 17: CreateWaitEventSet() takes the resource owner that releases the set on
 * error (it lives in TopMemoryContext) instead of a memory context; callers
 * still free it with FreeWaitEventSet()
 */
#if PG_VERSION_NUM >= 170000
#define PGA_WAIT_EVENT_SET_OWNER CurrentResourceOwner
#else
#define PGA_WAIT_EVENT_SET_OWNER CurrentMemoryContext
#endif

/*
 * 17: getIdentitySequence() takes the relation instead of its OID (to find
 * the sequence of a partition in its root); the lock taken here is kept to
 * the end of the transaction, as the caller's lookups expect
 */
static inline Oid
PgaGetIdentitySequence(Oid relid, AttrNumber attnum, bool missing_ok)
{
#if PG_VERSION_NUM >= 170000
	Relation	rel = relation_open(relid, AccessShareLock);
	Oid			seqid = getIdentitySequence(rel, attnum, missing_ok);

	relation_close(rel, NoLock);
	return seqid;
#else
	return getIdentitySequence(relid, attnum, missing_ok);
#endif
}

/*
 * 16: the map from a partitioned table's row type to a partition's is built
 * on demand by ExecGetRootToChildMap(); 15 keeps it in
 * ri_RootToPartitionMap, set when the partition is routed to
 */
#if PG_VERSION_NUM >= 160000
#define PgaRootToChildMap(rri, estate) ExecGetRootToChildMap((rri), (estate))
#else
#define PgaRootToChildMap(rri, estate) ((rri)->ri_RootToPartitionMap)
#endif

#endif							/* PG_AGENTS_COMPAT_H */
