/*-------------------------------------------------------------------------
 *
 * access_int.h
 *		Private declarations of the access module: the facts (access_facts.c),
 *		the decision (access_decide.c), the SQL entry points (access.c) and the
 *		readable set (access_readable.c).  No other module includes it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_ACCESS_INT_H
#define PG_AGENTS_ACCESS_INT_H

#include "access/genam.h"
#include "access/relscan.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/snapshot.h"

#include "access_rows.h"
#include "util/compat.h"
#include "util/relcheck.h"

/* the reason codes, stable and documented */
typedef enum AccessReason
{
	AR_GRANTED,
	AR_GRANTED_WORKSPACE_SHARED,
	AR_NOT_GRANTED,
	AR_GRANT_READ_ONLY,
	AR_OWNER_DENIED,
	AR_USER_DENIED,
	AR_AGENT_SUSPENDED,
	AR_AGENT_DELETED,
	AR_AGENT_NOT_FOUND,
	AR_USER_REQUIRED,
	AR_INVALID_MODE,
	AR_INVALID_REGIME,
	AR_OTHER_WORKSPACE
} AccessReason;

/* access levels: none < read < edit */
#define LEVEL_NONE	0
#define LEVEL_READ	1
#define LEVEL_EDIT	2

/* ------------------------------------------------------------------------
 * Relation and index OIDs, looked up once per transaction
 * ------------------------------------------------------------------------
 */
typedef struct AccessRels
{
	LocalTransactionId lxid;
	bool		valid;
	Oid			agents;
	Oid			agents_pkey;
	Oid			access;
	Oid			access_pkey;
	Oid			acl;
	Oid			acl_pkey;
	Oid			acl_principal_idx;
	Oid			members;
	Oid			members_user_idx;
	Oid			config;
	/* the indexes scanned, checked (relcheck.c) */
	PgaIndexInfo agents_pkey_ix;
	PgaIndexInfo access_pkey_ix;
	PgaIndexInfo acl_pkey_ix;
	PgaIndexInfo acl_principal_ix;
	PgaIndexInfo members_user_ix;
	/* managed by Citus: read through SPI, never directly */
	bool		agents_citus;
	bool		access_citus;
	bool		acl_citus;
	bool		members_citus;
	bool		config_citus;
	/* the row source of each query (access_rows.h), chosen with them */
	const struct AccessRowsOps *src[AQ_NQUERIES];
	int			backend;		/* pg_agents.access_backend they were chosen for */
	/* attribute numbers in the heaps */
	AttrNumber	ag_workspace;
	AttrNumber	ag_owner;
	AttrNumber	ag_status;
	AttrNumber	ag_deleted;
	AttrNumber	ac_type;
	AttrNumber	ac_id;
	AttrNumber	ac_access;
	AttrNumber	acl_type;
	AttrNumber	acl_id;
	AttrNumber	acl_workspace;
	AttrNumber	acl_principal;
	AttrNumber	acl_access;
	AttrNumber	gm_workspace;
	AttrNumber	gm_group;
	AttrNumber	cf_function;
} AccessRels;

extern AccessRels AccessRelations;

/* whether Citus manages any access table (AccessRelations filled: AccessEnsureRels) */
static inline bool
AccessRelsOnCitus(void)
{
	return AccessRelations.agents_citus || AccessRelations.access_citus || AccessRelations.acl_citus ||
		AccessRelations.members_citus || AccessRelations.config_citus;
}

typedef struct AgentEntry
{
	int64		id;				/* hash key */
	bool		found;
	bool		deleted;
	bool		suspended;
	char	   *workspace;
	char	   *owner;
	int			ws_grant;		/* level of its workspace_shared grant, -1 unknown */
	int			checks;			/* grant lookups since its set was last loaded */
	int			known_grants;	/* its grants when last loaded (any snapshot), -1 unknown */
	int			loads;			/* how many times its set was loaded */
	bool		set_failed;		/* too many grants to load them all */
	struct GrantSet *set;		/* all its grants, once loaded */
	/* with Citus: the grant read with its row (AccessGetAgentFor), if any */
	char	   *first_rtype;	/* NULL: none */
	char	   *first_rid;
	int			first_level;
	bool		filled;			/* false while (or if an error stopped) filling it */
} AgentEntry;

/* ------------------------------------------------------------------------
 * Small helpers on text datums
 * ------------------------------------------------------------------------
 */

/* does the text datum equal the C string s (of length len)? */
static inline bool
TextEq(Datum d, const char *s, int len)
{
	text	   *t = DatumGetTextPP(d);
	bool		eq = (VARSIZE_ANY_EXHDR(t) == len &&
					  memcmp(VARDATA_ANY(t), s, len) == 0);

	if ((Pointer) t != DatumGetPointer(d))
		pfree(t);
	return eq;
}

/* 'edit' -> LEVEL_EDIT, 'read' -> LEVEL_READ, anything else LEVEL_NONE */
static inline int
TextLevel(Datum d)
{
	if (TextEq(d, "edit", 4))
		return LEVEL_EDIT;
	if (TextEq(d, "read", 4))
		return LEVEL_READ;
	return LEVEL_NONE;
}

/* a scan key: checked text column col (0-based) of the index equals value */
static inline void
InitTextKey(ScanKey key, const PgaIndexInfo *ix, int col, const char *value)
{
	RelcheckIndexKey(key, ix, col, CStringGetTextDatum(value));
}

/*
 * Opens heap and index (locked by AccessEnsureRels) and a slot, and begins
 * an index scan of nkeys keys; the caller builds its keys on *index and
 * calls index_rescan.
 */
static inline IndexScanDesc
AccessScanBegin(Oid heapid, Oid indexid, Snapshot snap, int nkeys,
				Relation *heap, Relation *index, TupleTableSlot **slot)
{
	*heap = table_open(heapid, NoLock);
	*index = index_open(indexid, NoLock);
	*slot = table_slot_create(*heap, NULL);
	return index_beginscan(*heap, *index, snap, nkeys, 0);
}

/* ends what AccessScanBegin began */
static inline void
AccessScanEnd(IndexScanDesc scan, TupleTableSlot *slot, Relation index, Relation heap)
{
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	index_close(index, NoLock);
	table_close(heap, NoLock);
}

/* ------------------------------------------------------------------------
 * The facts (access_facts.c): relations, per-snapshot caches, lookups
 * ------------------------------------------------------------------------
 */
/* SPI reads of the access module (access_rows_spi.c) */
extern void AccessSpiRun(PgaElevation *e, SPIPlanPtr *plan, const char *sql, int nargs,
						 Oid *types, Datum *vals);
extern void AccessSpiDone(PgaElevation *e);
extern char *AccessSpiText(uint64 r, int i, MemoryContext cxt);

/* the agents the session may name (access_facts.c, AccessSessionScope) */
typedef enum AccessScopeKind
{
	SCOPE_NONE,					/* none: answered as ids no agent holds */
	SCOPE_WORKSPACE,			/* those of the session's workspace */
	SCOPE_ALL					/* every agent: a superuser bound to none */
} AccessScopeKind;

extern bool AccessAgentVisible(const AgentEntry *ag);
extern void AccessEnsureRels(void);
extern Snapshot AccessBegin(const char *what);
extern AgentEntry *AccessGetAgent(int64 agent_id, Snapshot snap);
extern AgentEntry *AccessGetAgentFor(int64 agent_id, const char *rtype, const char *rid,
									 Snapshot snap);
extern int	AccessGetGrant(int64 agent_id, const char *rtype, const char *rid, Snapshot snap);
extern int	AccessGrantSetLookup(struct GrantSet *gs, const char *rtype, const char *rid);
extern int	AccessAgentGrant(AgentEntry *ag, const char *rtype, const char *rid, Snapshot snap);
extern int	AccessGetWorkspaceGrant(AgentEntry *ag, Snapshot snap);
extern Oid	AccessGetAclFunction(Snapshot snap);
extern bool AccessUserAllows(const char *workspace, const char *user, const char *rtype,
							 const char *rid, int mode, Snapshot snap);
extern bool AccessGetParent(const char *rtype, const char *rid, Snapshot snap,
							const char **ptype, const char **pid);
extern int	AccessParentTables(const char *rtype, const char ***ptypes,
							   const char ***rows_sqls);
extern void AccessRememberParent(const char *rtype, const char *rid, const char *ptype,
								 const char *pid, const char *rws);
extern bool AccessRowOtherWorkspace(const char *rtype, const char *rid, const char *workspace,
									Snapshot snap);
extern bool AccessHasOwnAcl(const char *workspace, const char *rtype, const char *rid,
							Snapshot snap);
extern bool AccessWorkspaceShares(const char *workspace, const char *rtype, const char *rid,
								  int mode, Snapshot snap);

/* ------------------------------------------------------------------------
 * The decision (access_decide.c)
 * ------------------------------------------------------------------------
 */
/* the arguments of can_access and explain_access (read by access.c) */
typedef struct AccessArgs
{
	bool		agent_null;
	int64		agent_id;
	char	   *rtype;			/* NULL when the argument was NULL */
	char	   *rid;
	char	   *mode_s;
	char	   *regime_s;
	char	   *user;
	int			mode;			/* LEVEL_READ or LEVEL_EDIT once checked */
	bool		manual;
} AccessArgs;

extern AccessReason AccessDecideAutonomous(AgentEntry *ag, const char *rtype, const char *rid,
										  int mode, int grant, Snapshot snap,
										  bool want_detail, char **detail);
extern AccessReason AccessDecide(AccessArgs *a, bool want_detail, char **detail);

/* does the reason code let the agent act? */
static inline bool
ReasonAllows(AccessReason r)
{
	return r == AR_GRANTED || r == AR_GRANTED_WORKSPACE_SHARED;
}

#endif							/* PG_AGENTS_ACCESS_INT_H */
