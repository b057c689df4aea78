/*-------------------------------------------------------------------------
 *
 * access.c
 *		agent.can_access and agent.explain_access: may this agent touch this
 *		resource, and why (not)?
 *
 * The rules (docs/access.md):
 *
 *	 arguments		NULL agent/resource -> error; mode not read/edit -> invalid_mode;
 *					regime not manual/autonomous -> invalid_regime; manual without
 *					a user -> user_required
 *	 agent			unknown -> agent_not_found; deleted -> agent_deleted;
 *					suspended (autonomous only) -> agent_suspended
 *	 manual			the user's ACL for the mode -> granted | user_denied
 *	 autonomous		direct grant in agent.access for (type, id):
 *					  edit asked, read granted -> grant_read_only (unless the
 *					  workspace_shared path allows the edit)
 *					  else the owner's ACL for the mode -> granted | owner_denied
 *					no direct grant, a workspace_shared grant, and the resource
 *					shared with the agent's own workspace (now, never snapshotted):
 *					  read: owner's ACL read -> granted_workspace_shared | owner_denied
 *					  edit: workspace_shared grant at edit (else grant_read_only),
 *					  workspace share at edit and owner's ACL edit (else
 *					  owner_denied) -> granted_workspace_shared
 *					else not_granted
 *	 edit implies read everywhere.
 *
 * The ACL (a user's or the owner's) comes from agent.resource_acl (principals
 * user:<id>, group:<g> for the groups of agent.group_members, workspace); or
 * from a function registered with agent.set_acl_function().  Workspaces
 * (docs/tenants.md): a row of a workspace counts only for agents of that
 * workspace.  A row whose workspace_id is NULL is a row of no workspace: a
 * user:<id> or group:<g> row, and a group_members row, count in every
 * workspace (the application's own, global statement about that user or
 * group); a principal "workspace" row counts in none, because "shared with
 * the whole workspace" means the agent's own workspace and such a row names
 * none.
 *
 * Speed matters: can_access sits in WHERE clauses over millions of rows. So
 * there is no SPI here: every lookup is a direct index scan on the tables'
 * keys; relation and index OIDs are looked up, and the relations locked, once
 * per transaction.  What is read is cached for as long as the active snapshot
 * is the same (same transaction, command id and visible transaction set),
 * which in practice is one statement: the agent rows, the users' groups, the
 * ACL setting, the agent.resource_acl rows of each resource, and, for an agent
 * checked several times, all its grants (one range scan; bounded by
 * pg_agents.access_cache_grants, cold sets dropped first).  A write in the
 * transaction or a commit seen by a new snapshot starts a fresh cache.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/namespace.h"
#include "catalog/pg_collation.h"
#include "common/hashfn.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "compat.h"
#include "pg_agents.h"

PG_FUNCTION_INFO_V1(pg_agents_can_access);
PG_FUNCTION_INFO_V1(pg_agents_explain_access);

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
	AR_INVALID_REGIME
} AccessReason;

static const char *const reason_names[] = {
	"granted",
	"granted_workspace_shared",
	"not_granted",
	"grant_read_only",
	"owner_denied",
	"user_denied",
	"agent_suspended",
	"agent_deleted",
	"agent_not_found",
	"user_required",
	"invalid_mode",
	"invalid_regime"
};

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

static AccessRels rels;

static Oid
LookupRel(Oid nsp, const char *name)
{
	Oid			relid = get_relname_relid(name, nsp);

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation \"agent.%s\" does not exist", name),
				 errhint("Is the pg_agents extension installed in this database?")));
	return relid;
}

static AttrNumber
LookupAtt(Oid relid, const char *name)
{
	AttrNumber	att = get_attnum(relid, name);

	if (att == InvalidAttrNumber)
		elog(ERROR, "pg_agents: column \"%s\" missing from relation %u", name, relid);
	return att;
}

static void
EnsureRels(void)
{
	Oid			nsp;

	if (rels.valid && rels.lxid == PGA_MY_LXID)
		return;
	rels.valid = false;
	nsp = get_namespace_oid("agent", true);
	if (!OidIsValid(nsp))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_SCHEMA),
				 errmsg("schema \"agent\" does not exist"),
				 errhint("Is the pg_agents extension installed in this database?")));
	rels.agents = LookupRel(nsp, "agents");
	rels.agents_pkey = LookupRel(nsp, "agents_pkey");
	rels.access = LookupRel(nsp, "access");
	rels.access_pkey = LookupRel(nsp, "access_pkey");
	rels.acl = LookupRel(nsp, "resource_acl");
	rels.acl_pkey = LookupRel(nsp, "resource_acl_pkey");
	rels.acl_principal_idx = LookupRel(nsp, "resource_acl_principal_idx");
	rels.members = LookupRel(nsp, "group_members");
	rels.members_user_idx = LookupRel(nsp, "group_members_user_idx");
	rels.config = LookupRel(nsp, "access_config");
	rels.ag_workspace = LookupAtt(rels.agents, "workspace_id");
	rels.ag_owner = LookupAtt(rels.agents, "owner_id");
	rels.ag_status = LookupAtt(rels.agents, "status");
	rels.ag_deleted = LookupAtt(rels.agents, "deleted_at");
	rels.ac_type = LookupAtt(rels.access, "resource_type");
	rels.acl_type = LookupAtt(rels.acl, "resource_type");
	rels.acl_id = LookupAtt(rels.acl, "resource_id");
	rels.ac_id = LookupAtt(rels.access, "resource_id");
	rels.ac_access = LookupAtt(rels.access, "access");
	rels.acl_workspace = LookupAtt(rels.acl, "workspace_id");
	rels.acl_principal = LookupAtt(rels.acl, "principal");
	rels.acl_access = LookupAtt(rels.acl, "access");
	rels.gm_workspace = LookupAtt(rels.members, "workspace_id");
	rels.gm_group = LookupAtt(rels.members, "group_id");
	rels.cf_function = LookupAtt(rels.config, "acl_function");
	/*
	 * Lock them once for the rest of the transaction (as any query reading
	 * them would), so that each check opens them without the lock manager.
	 */
	LockRelationOid(rels.agents, AccessShareLock);
	LockRelationOid(rels.agents_pkey, AccessShareLock);
	LockRelationOid(rels.access, AccessShareLock);
	LockRelationOid(rels.access_pkey, AccessShareLock);
	LockRelationOid(rels.acl, AccessShareLock);
	LockRelationOid(rels.acl_pkey, AccessShareLock);
	LockRelationOid(rels.acl_principal_idx, AccessShareLock);
	LockRelationOid(rels.members, AccessShareLock);
	LockRelationOid(rels.members_user_idx, AccessShareLock);
	LockRelationOid(rels.config, AccessShareLock);
	rels.lxid = PGA_MY_LXID;
	rels.valid = true;
}

/* ------------------------------------------------------------------------
 * The per-snapshot cache: agents, group memberships, the ACL setting
 * ------------------------------------------------------------------------
 */
typedef struct CacheKey
{
	LocalTransactionId lxid;
	CommandId	curcid;
	TransactionId xmin;
	TransactionId xmax;
	uint32		xcnt;
	int32		subxcnt;
	bool		suboverflowed;
	bool		valid;
} CacheKey;

/*
 * The agent.resource_acl rows of one resource, cached per snapshot (the same
 * resource is typically checked for several agents or modes).
 */
typedef struct AclRow
{
	char	   *principal;
	int			plen;
	int			level;
	char	   *workspace;		/* NULL: row of no particular workspace */
} AclRow;

typedef struct AclEntry
{
	uint64		hash;			/* hash key: of (type, id) */
	char	   *rtype;
	char	   *rid;
	int			nrows;
	AclRow	   *rows;
	bool		filled;			/* false while (or if an error stopped) filling it */
} AclEntry;

static HTAB *acl_cache = NULL;
static long acl_cached_rows = 0;

#define ACL_CACHE_MAX_ROWS	262144

/*
 * All the grants of one agent, in an open-addressing table, loaded in one
 * index range scan once the agent has been checked a few times in the same
 * snapshot (a run, or a WHERE clause, checks many resources for one agent).
 * Compact, so that a million grants fit in about 40 MB: one allocation per
 * set holding the slots (12 bytes each), the resource ids and the few
 * resource types, each stored once.
 */
typedef struct GrantItem
{
	uint32		hash;
	uint32		ridoff;			/* offset of the id in the set's strings */
	uint16		ridlen;
	uint8		level;			/* LEVEL_NONE marks an empty slot */
	uint8		tidx;			/* index of its type in typeoff */
} GrantItem;

#define GRANTSET_MAX_TYPES	255
#define GRANTSET_MAX_IDLEN	65535

typedef struct GrantSet
{
	uint32		mask;
	int			n;
	GrantItem  *items;
	uint32	   *typeoff;		/* offsets of the types in strings */
	char	   *strings;
	uint64		last_use;		/* check_clock when it last answered */
	/* the slots, type offsets and strings follow, in the same allocation */
} GrantSet;

#define GRANTSET_AFTER_CHECKS	4
#define GRANTSET_MAX_AGENT		20000

static long grantset_total = 0;
static uint64 check_clock = 0;	/* grant lookups in this snapshot */
static uint64 load_blocked_until = 0;

/* a set unused for this many checks may be dropped to make room */
#define GRANTSET_COLD_CHECKS	Max(1024, pg_agents_access_cache_grants / 4)

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
	bool		filled;			/* false while (or if an error stopped) filling it */
} AgentEntry;

typedef struct GroupsEntry
{
	uint64		hash;			/* hash key: of (workspace, user) */
	char	   *workspace;
	char	   *user;
	int			ngroups;
	char	  **groups;
	bool		filled;			/* false while (or if an error stopped) filling it */
} GroupsEntry;

#define CACHE_MAX_ENTRIES	65536

static MemoryContext cache_cxt = NULL;
static HTAB *agent_cache = NULL;
static HTAB *groups_cache = NULL;
static CacheKey cache_key;
static bool acl_fn_loaded = false;
static Oid	acl_fn_oid = InvalidOid;
static FmgrInfo acl_fn_info;

static void
CacheReset(void)
{
	if (cache_cxt == NULL)
		cache_cxt = AllocSetContextCreate(TopMemoryContext,
										  "pg_agents access cache",
										  ALLOCSET_DEFAULT_SIZES);
	else
		MemoryContextReset(cache_cxt);
	agent_cache = NULL;
	groups_cache = NULL;
	acl_cache = NULL;
	acl_cached_rows = 0;
	grantset_total = 0;
	check_clock = 0;
	load_blocked_until = 0;
	acl_fn_loaded = false;
	acl_fn_oid = InvalidOid;
}


/* one of the per-snapshot caches, in cache_cxt */
static HTAB *
CacheCreate(const char *name, Size keysize, Size entrysize, long nelem)
{
	HASHCTL		ctl;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = keysize;
	ctl.entrysize = entrysize;
	ctl.hcxt = cache_cxt;
	return hash_create(name, nelem, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

static void
EnsureCache(Snapshot snap)
{
	CacheKey	k;

	memset(&k, 0, sizeof(k));
	k.lxid = PGA_MY_LXID;
	k.curcid = snap->curcid;
	k.xmin = snap->xmin;
	k.xmax = snap->xmax;
	k.xcnt = snap->xcnt;
	k.subxcnt = snap->subxcnt;
	k.suboverflowed = snap->suboverflowed;
	k.valid = true;
	if (cache_key.valid && memcmp(&k, &cache_key, sizeof(k)) == 0 &&
		agent_cache != NULL &&
		hash_get_num_entries(agent_cache) < CACHE_MAX_ENTRIES &&
		hash_get_num_entries(groups_cache) < CACHE_MAX_ENTRIES)
		return;
	CacheReset();
	agent_cache = CacheCreate("pg_agents agents", sizeof(int64), sizeof(AgentEntry), 256);
	groups_cache = CacheCreate("pg_agents groups", sizeof(uint64), sizeof(GroupsEntry), 256);
	acl_cache = CacheCreate("pg_agents acl", sizeof(uint64), sizeof(AclEntry), 1024);
	cache_key = k;
}

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

static void
InitTextKey(ScanKey key, Relation index, AttrNumber attno, const char *value)
{
	ScanKeyEntryInitialize(key, 0, attno, BTEqualStrategyNumber, InvalidOid,
						   index->rd_indcollation[attno - 1], F_TEXTEQ,
						   CStringGetTextDatum(value));
}

/* ------------------------------------------------------------------------
 * Lookups by index scan
 * ------------------------------------------------------------------------
 */

/*
 * How many grants each agent had when its set was last loaded, remembered
 * by the backend across snapshots (a hint only: stale values do no harm).
 * A set is loaded once an agent has been checked GRANTSET_AFTER_CHECKS
 * times, and not before 1/GRANTSET_LOAD_RATIO of its known grants: loading
 * ten thousand grants for the six candidates of a search costs more than
 * six probes.
 */
#define GRANTSET_LOAD_RATIO		64
#define GRANT_COUNT_MEMO_MAX	65536

typedef struct GrantCountEntry
{
	int64		agent_id;		/* hash key */
	int			n;
} GrantCountEntry;

static HTAB *grant_count_memo = NULL;

static int
KnownGrantCount(int64 agent_id)
{
	GrantCountEntry *e;

	if (grant_count_memo == NULL)
		return -1;
	e = (GrantCountEntry *) hash_search(grant_count_memo, &agent_id, HASH_FIND, NULL);
	return e ? e->n : -1;
}

static void
RememberGrantCount(int64 agent_id, int n)
{
	GrantCountEntry *e;

	if (grant_count_memo != NULL &&
		hash_get_num_entries(grant_count_memo) >= GRANT_COUNT_MEMO_MAX)
	{
		hash_destroy(grant_count_memo);
		grant_count_memo = NULL;
	}
	if (grant_count_memo == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(int64);
		ctl.entrysize = sizeof(GrantCountEntry);
		ctl.hcxt = TopMemoryContext;
		grant_count_memo = hash_create("pg_agents grant counts", 1024, &ctl,
									   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	e = (GrantCountEntry *) hash_search(grant_count_memo, &agent_id, HASH_ENTER, NULL);
	e->n = n;
}

static AgentEntry *
GetAgent(int64 agent_id, Snapshot snap)
{
	AgentEntry *e;
	bool		found;
	Relation	heap;
	Relation	index;
	IndexScanDesc scan;
	ScanKeyData key;
	TupleTableSlot *slot;

	e = (AgentEntry *) hash_search(agent_cache, &agent_id, HASH_ENTER, &found);
	if (found && e->filled)
		return e;
	e->filled = false;
	e->found = false;
	e->deleted = false;
	e->suspended = false;
	e->workspace = NULL;
	e->owner = NULL;
	e->ws_grant = -1;
	e->checks = 0;
	e->known_grants = KnownGrantCount(agent_id);
	e->loads = 0;
	e->set_failed = false;
	e->set = NULL;

	heap = table_open(rels.agents, NoLock);
	index = index_open(rels.agents_pkey, NoLock);
	slot = table_slot_create(heap, NULL);
	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(agent_id));
	scan = index_beginscan(heap, index, snap, 1, 0);
	index_rescan(scan, &key, 1, NULL, 0);
	if (index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		Datum		d;
		MemoryContext old = MemoryContextSwitchTo(cache_cxt);

		e->found = true;
		d = slot_getattr(slot, rels.ag_workspace, &isnull);
		e->workspace = isnull ? pstrdup("") : TextDatumGetCString(d);
		d = slot_getattr(slot, rels.ag_owner, &isnull);
		e->owner = isnull ? pstrdup("") : TextDatumGetCString(d);
		d = slot_getattr(slot, rels.ag_status, &isnull);
		e->suspended = !isnull && TextEq(d, "suspended", 9);
		(void) slot_getattr(slot, rels.ag_deleted, &isnull);
		e->deleted = !isnull;
		MemoryContextSwitchTo(old);
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	index_close(index, NoLock);
	table_close(heap, NoLock);
	e->filled = true;
	return e;
}

/* the groups of a user (agent.group_members rows of this workspace or none) */
static GroupsEntry *
GetGroups(const char *workspace, const char *user, Snapshot snap)
{
	uint64		h;
	GroupsEntry *e;
	bool		found;
	Relation	heap;
	Relation	index;
	IndexScanDesc scan;
	ScanKeyData key;
	TupleTableSlot *slot;
	int			cap = 0;
	int			wslen = strlen(workspace);
	MemoryContext old;

	h = hash_bytes_extended((const unsigned char *) user, strlen(user), 0);
	h = hash_bytes_extended((const unsigned char *) workspace, wslen, h);
	e = (GroupsEntry *) hash_search(groups_cache, &h, HASH_ENTER, &found);
	if (found && e->filled && strcmp(e->user, user) == 0 && strcmp(e->workspace, workspace) == 0)
		return e;
	e->filled = false;
	/* new entry, or a hash collision: (re)fill it */
	old = MemoryContextSwitchTo(cache_cxt);
	e->workspace = pstrdup(workspace);
	e->user = pstrdup(user);
	e->ngroups = 0;
	e->groups = NULL;
	MemoryContextSwitchTo(old);

	heap = table_open(rels.members, NoLock);
	index = index_open(rels.members_user_idx, NoLock);
	slot = table_slot_create(heap, NULL);
	InitTextKey(&key, index, 1, user);
	scan = index_beginscan(heap, index, snap, 1, 0);
	index_rescan(scan, &key, 1, NULL, 0);
	while (index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		Datum		d;

		d = slot_getattr(slot, rels.gm_workspace, &isnull);
		if (!isnull && !TextEq(d, workspace, wslen))
			continue;
		d = slot_getattr(slot, rels.gm_group, &isnull);
		if (isnull)
			continue;
		old = MemoryContextSwitchTo(cache_cxt);
		if (e->ngroups == cap)
		{
			cap = cap == 0 ? 4 : cap * 2;
			e->groups = e->groups == NULL ? palloc(sizeof(char *) * cap)
				: repalloc(e->groups, sizeof(char *) * cap);
		}
		e->groups[e->ngroups++] = TextDatumGetCString(d);
		MemoryContextSwitchTo(old);
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	index_close(index, NoLock);
	table_close(heap, NoLock);
	e->filled = true;
	return e;
}

/* the access level of the agent's grant on (type, id), LEVEL_NONE if none */
static int
GetGrant(int64 agent_id, const char *rtype, const char *rid, Snapshot snap)
{
	Relation	heap;
	Relation	index;
	IndexScanDesc scan;
	ScanKeyData keys[3];
	TupleTableSlot *slot;
	int			level = LEVEL_NONE;

	heap = table_open(rels.access, NoLock);
	index = index_open(rels.access_pkey, NoLock);
	slot = table_slot_create(heap, NULL);
	ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(agent_id));
	InitTextKey(&keys[1], index, 2, rtype);
	InitTextKey(&keys[2], index, 3, rid);
	scan = index_beginscan(heap, index, snap, 3, 0);
	index_rescan(scan, keys, 3, NULL, 0);
	if (index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		Datum		d = slot_getattr(slot, rels.ac_access, &isnull);

		level = isnull ? LEVEL_NONE : TextLevel(d);
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	index_close(index, NoLock);
	table_close(heap, NoLock);
	return level;
}


static inline uint32
GrantHash(const char *rtype, const char *rid)
{
	return hash_combine(hash_bytes((const unsigned char *) rtype, strlen(rtype)),
						hash_bytes((const unsigned char *) rid, strlen(rid)));
}

static void
GrantSetInsert(GrantSet *gs, uint32 h, uint32 ridoff, int ridlen, int tidx, int level)
{
	uint32		i = h & gs->mask;

	while (gs->items[i].level != LEVEL_NONE)
		i = (i + 1) & gs->mask;
	gs->items[i].hash = h;
	gs->items[i].ridoff = ridoff;
	gs->items[i].ridlen = (uint16) ridlen;
	gs->items[i].level = (uint8) level;
	gs->items[i].tidx = (uint8) tidx;
}

static int
GrantSetLookup(GrantSet *gs, const char *rtype, const char *rid)
{
	int			ridlen = strlen(rid);
	uint32		h = hash_combine(hash_bytes((const unsigned char *) rtype, strlen(rtype)),
								 hash_bytes((const unsigned char *) rid, ridlen));
	uint32		i = h & gs->mask;

	while (gs->items[i].level != LEVEL_NONE)
	{
		GrantItem  *it = &gs->items[i];

		if (it->hash == h && it->ridlen == ridlen &&
			memcmp(gs->strings + it->ridoff, rid, ridlen) == 0 &&
			strcmp(gs->strings + gs->typeoff[it->tidx], rtype) == 0)
			return it->level;
		i = (i + 1) & gs->mask;
	}
	return LEVEL_NONE;
}

/*
 * Past the memory limit, drop the sets that have not answered for a while:
 * with checks grouped by agent (a run, a WHERE clause) those of the agents
 * already done; with checks scattered over many agents, none, and then no
 * new set is loaded for a while (each check probes the index).
 */
static void
DropColdGrantSets(void)
{
	HASH_SEQ_STATUS status;
	AgentEntry *e;
	uint64		cold = GRANTSET_COLD_CHECKS;
	uint64		threshold = check_clock > cold ? check_clock - cold : 0;
	int			dropped = 0;

	hash_seq_init(&status, agent_cache);
	while ((e = (AgentEntry *) hash_seq_search(&status)) != NULL)
	{
		if (e->set != NULL && e->set->last_use < threshold)
		{
			grantset_total -= e->set->n;
			pfree(e->set);
			e->set = NULL;
			e->checks = 0;
			dropped++;
		}
	}
	elog(DEBUG2, "pg_agents: dropped %d cold grant sets, %ld grants still held",
		 dropped, grantset_total);
}

/* load every grant of the agent; false (and nothing kept) past the limits */
static bool
LoadGrantSet(AgentEntry *ag, Snapshot snap)
{
	Relation	heap;
	Relation	index;
	IndexScanDesc scan;
	ScanKeyData key;
	TupleTableSlot *slot;
	int			n = 0;
	int			cap = 64;
	int			ntypes = 0;
	uint32		typeoff[GRANTSET_MAX_TYPES];
	uint32	   *ridoff;
	uint16	   *ridlen;
	uint8	   *tidx;
	uint8	   *levels;
	uint32	   *hashes;
	uint32		typehash[GRANTSET_MAX_TYPES];
	StringInfoData strings;
	bool		ok = true;
	MemoryContext tmp = AllocSetContextCreate(cache_cxt, "pg_agents grant set load",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(tmp);

	ridoff = palloc(sizeof(uint32) * cap);
	ridlen = palloc(sizeof(uint16) * cap);
	tidx = palloc(sizeof(uint8) * cap);
	levels = palloc(sizeof(uint8) * cap);
	hashes = palloc(sizeof(uint32) * cap);
	initStringInfo(&strings);
	heap = table_open(rels.access, NoLock);
	index = index_open(rels.access_pkey, NoLock);
	slot = table_slot_create(heap, NULL);
	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(ag->id));
	scan = index_beginscan(heap, index, snap, 1, 0);
	index_rescan(scan, &key, 1, NULL, 0);
	while (index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		Datum		d;
		text	   *t;
		int			len;
		int			level;
		int			ti;

		d = slot_getattr(slot, rels.ac_access, &isnull);
		level = isnull ? LEVEL_NONE : TextLevel(d);
		if (level == LEVEL_NONE)
			continue;
		if (n >= GRANTSET_MAX_AGENT || n >= pg_agents_access_cache_grants)
		{
			ok = false;
			break;
		}
		if (n == cap)
		{
			cap *= 2;
			ridoff = repalloc(ridoff, sizeof(uint32) * cap);
			ridlen = repalloc(ridlen, sizeof(uint16) * cap);
			tidx = repalloc(tidx, sizeof(uint8) * cap);
			levels = repalloc(levels, sizeof(uint8) * cap);
			hashes = repalloc(hashes, sizeof(uint32) * cap);
		}
		/* its type, stored once */
		d = slot_getattr(slot, rels.ac_type, &isnull);
		t = isnull ? NULL : DatumGetTextPP(d);
		len = t ? VARSIZE_ANY_EXHDR(t) : 0;
		for (ti = 0; ti < ntypes; ti++)
			if (strlen(strings.data + typeoff[ti]) == (size_t) len &&
				memcmp(strings.data + typeoff[ti], t ? VARDATA_ANY(t) : "", len) == 0)
				break;
		if (ti == ntypes)
		{
			if (ntypes == GRANTSET_MAX_TYPES || memchr(t ? VARDATA_ANY(t) : "", '\0', len) != NULL)
			{
				ok = false;
				break;
			}
			typeoff[ntypes] = strings.len;
			appendBinaryStringInfo(&strings, t ? VARDATA_ANY(t) : "", len);
			appendStringInfoChar(&strings, '\0');
			typehash[ntypes] = hash_bytes((const unsigned char *) strings.data + typeoff[ntypes], len);
			ntypes++;
		}
		/* its id */
		d = slot_getattr(slot, rels.ac_id, &isnull);
		t = isnull ? NULL : DatumGetTextPP(d);
		len = t ? VARSIZE_ANY_EXHDR(t) : 0;
		if (len > GRANTSET_MAX_IDLEN)
		{
			ok = false;
			break;
		}
		ridoff[n] = strings.len;
		ridlen[n] = (uint16) len;
		appendBinaryStringInfo(&strings, t ? VARDATA_ANY(t) : "", len);
		hashes[n] = hash_combine(typehash[ti],
								 hash_bytes((const unsigned char *) strings.data + ridoff[n], len));
		tidx[n] = (uint8) ti;
		levels[n] = (uint8) level;
		n++;
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	index_close(index, NoLock);
	table_close(heap, NoLock);
	MemoryContextSwitchTo(old);
	RememberGrantCount(ag->id, ok ? n : Max(n, GRANTSET_MAX_AGENT));
	ag->known_grants = ok ? n : Max(n, GRANTSET_MAX_AGENT);
	if (ok)
	{
		uint32		size = 8;
		Size		total;
		GrantSet   *gs;
		char	   *p;
		int			i;

		while (size < (uint32) n + (uint32) n / 2)
			size *= 2;
		if (grantset_total + n > pg_agents_access_cache_grants)
			DropColdGrantSets();
		if (grantset_total + n > pg_agents_access_cache_grants)
		{
			/* no room: probe the index, and try again later */
			MemoryContextDelete(tmp);
			ag->checks = 0;
			load_blocked_until = check_clock + GRANTSET_COLD_CHECKS;
			return false;
		}
		total = MAXALIGN(sizeof(GrantSet)) + sizeof(GrantItem) * size +
			sizeof(uint32) * ntypes + strings.len;
		p = MemoryContextAllocHuge(cache_cxt, total);
		gs = (GrantSet *) p;
		gs->mask = size - 1;
		gs->n = n;
		gs->items = (GrantItem *) (p + MAXALIGN(sizeof(GrantSet)));
		memset(gs->items, 0, sizeof(GrantItem) * size);
		gs->typeoff = (uint32 *) (gs->items + size);
		memcpy(gs->typeoff, typeoff, sizeof(uint32) * ntypes);
		gs->strings = (char *) (gs->typeoff + ntypes);
		memcpy(gs->strings, strings.data, strings.len);
		for (i = 0; i < n; i++)
			GrantSetInsert(gs, hashes[i], ridoff[i], ridlen[i], tidx[i], levels[i]);
		gs->last_use = check_clock;
		ag->set = gs;
		ag->loads++;
		grantset_total += n;
	}
	else
		ag->set_failed = true;
	MemoryContextDelete(tmp);
	return ok;
}

/* the level of the agent's grant on (type, id): from its set, or one index probe */
static int
AgentGrant(AgentEntry *ag, const char *rtype, const char *rid, Snapshot snap)
{
	check_clock++;
	if (ag->set == NULL && !ag->set_failed && check_clock >= load_blocked_until &&
		++ag->checks >= (GRANTSET_AFTER_CHECKS << Min(ag->loads, 16)) &&
		ag->checks >= ag->known_grants / GRANTSET_LOAD_RATIO)
		LoadGrantSet(ag, snap);
	if (ag->set != NULL)
	{
		ag->set->last_use = check_clock;
		return GrantSetLookup(ag->set, rtype, rid);
	}
	return GetGrant(ag->id, rtype, rid, snap);
}

/* the level of the agent's workspace_shared grant, looked up once per snapshot */
static int
GetWorkspaceGrant(AgentEntry *ag, Snapshot snap)
{
	if (ag->ws_grant < 0)
		ag->ws_grant = AgentGrant(ag, "workspace_shared", "*", snap);
	return ag->ws_grant;
}

/* the registered ACL function, InvalidOid for the default tables */
static Oid
GetAclFunction(Snapshot snap)
{
	Relation	heap;
	SysScanDesc scan;
	HeapTuple	tup;

	if (acl_fn_loaded)
		return acl_fn_oid;
	acl_fn_oid = InvalidOid;
	heap = table_open(rels.config, NoLock);
	scan = systable_beginscan(heap, InvalidOid, false, snap, 0, NULL);
	while ((tup = systable_getnext(scan)) != NULL)
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, rels.cf_function, RelationGetDescr(heap), &isnull);

		if (!isnull)
			acl_fn_oid = DatumGetObjectId(d);
	}
	systable_endscan(scan);
	table_close(heap, NoLock);
	if (OidIsValid(acl_fn_oid))
		fmgr_info_cxt(acl_fn_oid, &acl_fn_info, cache_cxt);
	acl_fn_loaded = true;
	return acl_fn_oid;
}

/* call the registered ACL function; user NULL asks about the workspace share */
static bool
CallAclFunction(const char *user, const char *rtype, const char *rid, int mode)
{
	LOCAL_FCINFO(fcinfo, 4);
	Datum		result;

	InitFunctionCallInfoData(*fcinfo, &acl_fn_info, 4, DEFAULT_COLLATION_OID, NULL, NULL);
	fcinfo->args[0].value = user ? CStringGetTextDatum(user) : (Datum) 0;
	fcinfo->args[0].isnull = (user == NULL);
	fcinfo->args[1].value = CStringGetTextDatum(rtype);
	fcinfo->args[1].isnull = false;
	fcinfo->args[2].value = CStringGetTextDatum(rid);
	fcinfo->args[2].isnull = false;
	fcinfo->args[3].value = CStringGetTextDatum(mode == LEVEL_EDIT ? "edit" : "read");
	fcinfo->args[3].isnull = false;
	if (user == NULL && acl_fn_info.fn_strict)
		return false;
	result = FunctionCallInvoke(fcinfo);
	if (fcinfo->isnull)
		return false;
	return DatumGetBool(result);
}


/*
 * While the readable set is computed, one scan of agent.resource_acl serves
 * every resource (index_rescan), instead of opening the relations and a scan
 * for each.
 */
static struct
{
	bool		active;
	Relation	heap;
	Relation	index;
	IndexScanDesc scan;
	TupleTableSlot *slot;
}			acl_probe;

static void
LoadAclRows(AclEntry *e, const char *rtype, const char *rid, Snapshot snap,
			MemoryContext cxt)
{
	Relation	heap;
	Relation	index;
	IndexScanDesc scan;
	ScanKeyData keys[2];
	TupleTableSlot *slot;
	int			cap = 0;

	e->nrows = 0;
	e->rows = NULL;
	if (acl_probe.active)
	{
		heap = acl_probe.heap;
		index = acl_probe.index;
		slot = acl_probe.slot;
		scan = acl_probe.scan;
	}
	else
	{
		heap = table_open(rels.acl, NoLock);
		index = index_open(rels.acl_pkey, NoLock);
		slot = table_slot_create(heap, NULL);
		scan = index_beginscan(heap, index, snap, 2, 0);
	}
	InitTextKey(&keys[0], index, 1, rtype);
	InitTextKey(&keys[1], index, 2, rid);
	index_rescan(scan, keys, 2, NULL, 0);
	while (index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		Datum		d;
		AclRow	   *r;
		MemoryContext old;

		d = slot_getattr(slot, rels.acl_principal, &isnull);
		if (isnull)
			continue;
		old = MemoryContextSwitchTo(cxt);
		if (e->nrows == cap)
		{
			cap = cap == 0 ? 4 : cap * 2;
			e->rows = e->rows == NULL ? palloc(sizeof(AclRow) * cap)
				: repalloc(e->rows, sizeof(AclRow) * cap);
		}
		r = &e->rows[e->nrows++];
		r->principal = TextDatumGetCString(d);
		r->plen = strlen(r->principal);
		d = slot_getattr(slot, rels.acl_access, &isnull);
		r->level = isnull ? LEVEL_NONE : TextLevel(d);
		d = slot_getattr(slot, rels.acl_workspace, &isnull);
		r->workspace = isnull ? NULL : TextDatumGetCString(d);
		MemoryContextSwitchTo(old);
	}
	pfree(DatumGetPointer(keys[0].sk_argument));
	pfree(DatumGetPointer(keys[1].sk_argument));
	if (!acl_probe.active)
	{
		index_endscan(scan);
		ExecDropSingleTupleTableSlot(slot);
		index_close(index, NoLock);
		table_close(heap, NoLock);
	}
}

static AclEntry *
GetAclRows(const char *rtype, const char *rid, Snapshot snap)
{
	uint64		h;
	AclEntry   *e;
	bool		found;
	MemoryContext old;

	h = hash_bytes_extended((const unsigned char *) rtype, strlen(rtype), 0);
	h = hash_bytes_extended((const unsigned char *) rid, strlen(rid), h);
	if (acl_cached_rows >= ACL_CACHE_MAX_ROWS)
		e = (AclEntry *) hash_search(acl_cache, &h, HASH_FIND, &found);
	else
	{
		e = (AclEntry *) hash_search(acl_cache, &h, HASH_ENTER, &found);
		if (!found)
			e->filled = false;
	}
	if (found && e->filled && strcmp(e->rtype, rtype) == 0 && strcmp(e->rid, rid) == 0)
		return e;
	if (e == NULL || found)
	{
		/* cache full, or another resource with the same hash: no caching */
		e = palloc(sizeof(AclEntry));
		e->rtype = pstrdup(rtype);
		e->rid = pstrdup(rid);
		LoadAclRows(e, rtype, rid, snap, CurrentMemoryContext);
		return e;
	}
	old = MemoryContextSwitchTo(cache_cxt);
	e->rtype = pstrdup(rtype);
	e->rid = pstrdup(rid);
	MemoryContextSwitchTo(old);
	LoadAclRows(e, rtype, rid, snap, cache_cxt);
	e->filled = true;
	acl_cached_rows += e->nrows + 1;
	return e;
}

/*
 * The level a principal holds on a resource, from agent.resource_acl rows of
 * the workspace (or, for user and group principals, without one).  user
 * NULL: the workspace share only, from rows that name this workspace.
 */
static int
AclLevel(const char *workspace, const char *user, GroupsEntry *groups,
		 const char *rtype, const char *rid, Snapshot snap)
{
	AclEntry   *e = GetAclRows(rtype, rid, snap);
	int			best = LEVEL_NONE;
	int			ulen = user ? strlen(user) : 0;
	int			i;

	for (i = 0; i < e->nrows && best < LEVEL_EDIT; i++)
	{
		AclRow	   *r = &e->rows[i];
		const char *ps = r->principal;
		int			plen = r->plen;
		bool		match = false;

		if (r->level <= best)
			continue;
		if (r->workspace != NULL && strcmp(r->workspace, workspace) != 0)
			continue;
		if (plen == 9 && memcmp(ps, "workspace", 9) == 0)
			match = r->workspace != NULL;	/* shared with this workspace, by name */
		else if (user != NULL && plen == ulen + 5 && memcmp(ps, "user:", 5) == 0)
			match = memcmp(ps + 5, user, ulen) == 0;
		else if (user != NULL && groups != NULL && plen > 6 && memcmp(ps, "group:", 6) == 0)
		{
			int			g;

			for (g = 0; g < groups->ngroups && !match; g++)
				match = strcmp(ps + 6, groups->groups[g]) == 0;
		}
		if (match)
			best = r->level;
	}
	return best;
}

/* may the user act on the resource at the mode (the user's own ACL)? */
static bool
UserAllows(const char *workspace, const char *user, const char *rtype,
		   const char *rid, int mode, Snapshot snap)
{
	if (OidIsValid(GetAclFunction(snap)))
		return CallAclFunction(user, rtype, rid, mode);
	return AclLevel(workspace, user, GetGroups(workspace, user, snap),
					rtype, rid, snap) >= mode;
}

/* is the resource shared with the whole workspace at the mode? */
static bool
WorkspaceShares(const char *workspace, const char *rtype, const char *rid,
				int mode, Snapshot snap)
{
	if (OidIsValid(GetAclFunction(snap)))
		return CallAclFunction(NULL, rtype, rid, mode);
	return AclLevel(workspace, NULL, NULL, rtype, rid, snap) >= mode;
}

/* ------------------------------------------------------------------------
 * The decision
 * ------------------------------------------------------------------------
 */
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

/*
 * A user id is taken on trust: only the application (a member of agents_app),
 * the worker's tool role (agents_tool, which no one but a superuser can
 * become) and superusers (the extension's own SECURITY DEFINER code) may
 * pass one.
 * Any other role may still ask about autonomous access, which depends on no
 * user: that is what the allowlist policies evaluate as the querying role.
 */
static bool vouch_roles_valid = false;
static bool vouch_callbacks = false;
static Oid	vouch_app_role = InvalidOid;
static Oid	vouch_tool_role = InvalidOid;

/* a role was created, dropped or renamed: look the two up again */
static void
VouchRolesInvalidate(Datum arg, int cacheid, uint32 hashvalue)
{
	vouch_roles_valid = false;
}

static void
RequireVouchingRole(void)
{
	Oid			user = GetUserId();

	if (superuser())
		return;
	if (!vouch_roles_valid)
	{
		if (!vouch_callbacks)
		{
			CacheRegisterSyscacheCallback(AUTHOID, VouchRolesInvalidate, (Datum) 0);
			CacheRegisterSyscacheCallback(AUTHNAME, VouchRolesInvalidate, (Datum) 0);
			vouch_callbacks = true;
		}
		/* valid first: an invalidation during the lookups makes it look again */
		vouch_roles_valid = true;
		vouch_app_role = get_role_oid("agents_app", true);
		vouch_tool_role = get_role_oid("agents_tool", true);
	}
	if (OidIsValid(vouch_app_role) && has_privs_of_role(user, vouch_app_role))
		return;
	/* the worker's tool SQL of a manual run filters by its user's ACL */
	if (OidIsValid(vouch_tool_role) && has_privs_of_role(user, vouch_tool_role))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to check access for a user"),
			 errdetail("Only the application (a member of agents_app) vouches for user ids."),
			 errhint("Grant agents_app to the application role, or check autonomous access without user_id.")));
}

static void
ReadArgs(FunctionCallInfo fcinfo, AccessArgs *a)
{
	a->agent_null = PG_ARGISNULL(0);
	a->agent_id = a->agent_null ? 0 : PG_GETARG_INT64(0);
	a->rtype = PG_ARGISNULL(1) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(1));
	a->rid = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
	a->mode_s = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));
	a->regime_s = PG_ARGISNULL(4) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(4));
	a->user = PG_ARGISNULL(5) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(5));
	if (a->user != NULL)
		RequireVouchingRole();
	a->mode = LEVEL_NONE;
	a->manual = false;
}

/*
 * Check the arguments.  NULL agent or resource is always an error; for the
 * others, returns the reason code (invalid_mode, invalid_regime,
 * user_required) or -1 when they are fine, and fills *detail.
 */
static int
CheckArgs(AccessArgs *a, char **detail)
{
	if (a->agent_null || a->rtype == NULL || a->rid == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("agent_id, resource_type and resource_id must not be NULL"),
				 errdetail("An access check needs an agent and a resource.")));
	if (a->mode_s != NULL && strcmp(a->mode_s, "read") == 0)
		a->mode = LEVEL_READ;
	else if (a->mode_s != NULL && strcmp(a->mode_s, "edit") == 0)
		a->mode = LEVEL_EDIT;
	else
	{
		*detail = psprintf("mode \"%s\" is not read or edit",
						   a->mode_s ? a->mode_s : "NULL");
		return AR_INVALID_MODE;
	}
	if (a->regime_s != NULL && strcmp(a->regime_s, "manual") == 0)
		a->manual = true;
	else if (a->regime_s != NULL && strcmp(a->regime_s, "autonomous") == 0)
		a->manual = false;
	else
	{
		*detail = psprintf("regime \"%s\" is not manual or autonomous",
						   a->regime_s ? a->regime_s : "NULL");
		return AR_INVALID_REGIME;
	}
	if (a->manual && a->user == NULL)
	{
		*detail = pstrdup("a manual run acts as a user: user_id is required");
		return AR_USER_REQUIRED;
	}
	return -1;
}

static void
RaiseArgError(AccessArgs *a, int reason)
{
	switch (reason)
	{
		case AR_INVALID_MODE:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid access mode \"%s\"", a->mode_s ? a->mode_s : "NULL"),
					 errdetail("Reason code: invalid_mode."),
					 errhint("The mode is read or edit.")));
			break;
		case AR_INVALID_REGIME:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid regime \"%s\"", a->regime_s ? a->regime_s : "NULL"),
					 errdetail("Reason code: invalid_regime."),
					 errhint("The regime is manual or autonomous.")));
			break;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a manual access check needs a user_id"),
					 errdetail("Reason code: user_required."),
					 errhint("A manual run acts as the user who asked for it.")));
			break;
	}
}

static const char *
ModeName(int mode)
{
	return mode == LEVEL_EDIT ? "edit" : "read";
}

/*
 * The autonomous decision for an active agent, given the level of its direct
 * grant on the resource (LEVEL_NONE if none).  Shared by can_access and the
 * readable set, so that both follow exactly the same rules.
 */
static AccessReason
DecideAutonomous(AgentEntry *ag, const char *rtype, const char *rid, int mode,
				 int grant, Snapshot snap, bool want_detail, char **detail)
{
	if (grant != LEVEL_NONE)
	{
		if (mode == LEVEL_EDIT && grant < LEVEL_EDIT)
		{
			/* the workspace_shared path may still allow the edit */
			if (GetWorkspaceGrant(ag, snap) >= LEVEL_EDIT &&
				WorkspaceShares(ag->workspace, rtype, rid, LEVEL_EDIT, snap) &&
				UserAllows(ag->workspace, ag->owner, rtype, rid, LEVEL_EDIT, snap))
			{
				if (want_detail)
					*detail = psprintf("agent %lld holds a read grant on %s %s, but an edit workspace_shared grant, the resource is shared with the workspace at edit and owner %s may edit it",
									   (long long) ag->id, rtype, rid, ag->owner);
				return AR_GRANTED_WORKSPACE_SHARED;
			}
			if (want_detail)
				*detail = psprintf("agent %lld holds only a read grant on %s %s",
								   (long long) ag->id, rtype, rid);
			return AR_GRANT_READ_ONLY;
		}
		if (UserAllows(ag->workspace, ag->owner, rtype, rid, mode, snap))
		{
			if (want_detail)
				*detail = psprintf("agent %lld holds a%s grant on %s %s and owner %s may %s it",
								   (long long) ag->id,
								   grant == LEVEL_EDIT ? "n edit" : " read",
								   rtype, rid, ag->owner, ModeName(mode));
			return AR_GRANTED;
		}
		if (want_detail)
			*detail = psprintf("agent %lld holds a grant on %s %s but owner %s may not %s it",
							   (long long) ag->id, rtype, rid, ag->owner,
							   ModeName(mode));
		return AR_OWNER_DENIED;
	}

	grant = GetWorkspaceGrant(ag, snap);
	if (grant != LEVEL_NONE &&
		WorkspaceShares(ag->workspace, rtype, rid, LEVEL_READ, snap))
	{
		if (mode == LEVEL_EDIT)
		{
			if (grant < LEVEL_EDIT)
			{
				if (want_detail)
					*detail = psprintf("%s %s is shared with the workspace but agent %lld holds only a read workspace_shared grant",
									   rtype, rid, (long long) ag->id);
				return AR_GRANT_READ_ONLY;
			}
			if (!WorkspaceShares(ag->workspace, rtype, rid, LEVEL_EDIT, snap))
			{
				if (want_detail)
					*detail = psprintf("%s %s is shared with the workspace read-only",
									   rtype, rid);
				return AR_OWNER_DENIED;
			}
		}
		if (UserAllows(ag->workspace, ag->owner, rtype, rid, mode, snap))
		{
			if (want_detail)
				*detail = psprintf("%s %s is shared with the workspace at %s and agent %lld holds a workspace_shared grant",
								   rtype, rid, ModeName(mode), (long long) ag->id);
			return AR_GRANTED_WORKSPACE_SHARED;
		}
		if (want_detail)
			*detail = psprintf("%s %s is shared with the workspace but owner %s may not %s it",
							   rtype, rid, ag->owner, ModeName(mode));
		return AR_OWNER_DENIED;
	}

	if (want_detail)
		*detail = psprintf("agent %lld holds no grant on %s %s%s",
						   (long long) ag->id, rtype, rid,
						   grant != LEVEL_NONE ? " and it is not shared with the workspace" : "");
	return AR_NOT_GRANTED;
}


/*
 * The decision for checked arguments.  detail is filled only when want_detail.
 */
static AccessReason
Decide(AccessArgs *a, bool want_detail, char **detail)
{
	Snapshot	snap;
	AgentEntry *ag;

	EnsureRels();
	if (!ActiveSnapshotSet())
		elog(ERROR, "pg_agents: can_access needs an active snapshot");
	snap = GetActiveSnapshot();
	EnsureCache(snap);

	ag = GetAgent(a->agent_id, snap);
	if (!ag->found)
	{
		if (want_detail)
			*detail = psprintf("agent %lld does not exist", (long long) a->agent_id);
		return AR_AGENT_NOT_FOUND;
	}
	if (ag->deleted)
	{
		if (want_detail)
			*detail = psprintf("agent %lld was deleted", (long long) a->agent_id);
		return AR_AGENT_DELETED;
	}

	if (a->manual)
	{
		if (UserAllows(ag->workspace, a->user, a->rtype, a->rid, a->mode, snap))
		{
			if (want_detail)
				*detail = psprintf("manual run: user %s may %s %s %s",
								   a->user, ModeName(a->mode), a->rtype, a->rid);
			return AR_GRANTED;
		}
		if (want_detail)
			*detail = psprintf("manual run: user %s may not %s %s %s",
							   a->user, ModeName(a->mode), a->rtype, a->rid);
		return AR_USER_DENIED;
	}

	if (ag->suspended)
	{
		if (want_detail)
			*detail = psprintf("agent %lld is suspended: it runs no autonomous work",
							   (long long) a->agent_id);
		return AR_AGENT_SUSPENDED;
	}

	return DecideAutonomous(ag, a->rtype, a->rid, a->mode,
							AgentGrant(ag, a->rtype, a->rid, snap),
							snap, want_detail, detail);
}

static inline bool
ReasonAllows(AccessReason r)
{
	return r == AR_GRANTED || r == AR_GRANTED_WORKSPACE_SHARED;
}

/*
 * agent.can_access(agent_id bigint, resource_type text, resource_id text,
 *					mode text, regime text, user_id text) RETURNS boolean
 */
Datum
pg_agents_can_access(PG_FUNCTION_ARGS)
{
	AccessArgs	a;
	char	   *detail = NULL;
	int			bad;

	ReadArgs(fcinfo, &a);
	bad = CheckArgs(&a, &detail);
	if (bad >= 0)
		RaiseArgError(&a, bad);
	PG_RETURN_BOOL(ReasonAllows(Decide(&a, false, &detail)));
}

/*
 * agent.explain_access(<same>) RETURNS TABLE(allowed boolean, reason text,
 *												detail text)
 */
Datum
pg_agents_explain_access(PG_FUNCTION_ARGS)
{
	AccessArgs	a;
	char	   *detail = NULL;
	int			r;
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "pg_agents: explain_access must return a row");
	tupdesc = BlessTupleDesc(tupdesc);

	ReadArgs(fcinfo, &a);
	r = CheckArgs(&a, &detail);
	if (r < 0)
		r = Decide(&a, true, &detail);
	values[0] = BoolGetDatum(ReasonAllows((AccessReason) r));
	values[1] = CStringGetTextDatum(reason_names[r]);
	values[2] = CStringGetTextDatum(detail ? detail : "");
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * Whether one resource is in the agent's readable set, decided as the set
 * decides it (the autonomous decision of agent.can_access) under the active
 * snapshot, with a direct probe of the grant: for the few candidates of a
 * selective search, when the set is not kept (src/allowlist.c).  1 or 0; -1
 * when a custom ACL function is configured (the set follows other rules).
 */
int
PgAgentsReadableOne(int64 agent_id, const char *rtype, const char *rid, bool edit)
{
	Snapshot	snap;
	AgentEntry *ag;
	int			grant;

	EnsureRels();
	if (!ActiveSnapshotSet())
		elog(ERROR, "pg_agents: the readable set needs an active snapshot");
	snap = GetActiveSnapshot();
	EnsureCache(snap);
	if (OidIsValid(GetAclFunction(snap)))
		return -1;
	ag = GetAgent(agent_id, snap);
	if (!ag->found || ag->deleted || ag->suspended)
		return 0;
	grant = ag->set != NULL ? GrantSetLookup(ag->set, rtype, rid) :
		GetGrant(agent_id, rtype, rid, snap);
	return ReasonAllows(DecideAutonomous(ag, rtype, rid, edit ? LEVEL_EDIT : LEVEL_READ,
										 grant, snap, false, NULL)) ? 1 : 0;
}

/*
 * The owner of an agent under the active snapshot ("" when there is none),
 * palloc'd: what a kept readable set depends on through the owner's groups
 * (src/allowlist.c).
 */
char *
PgAgentsAgentOwner(int64 agent_id)
{
	Snapshot	snap;
	AgentEntry *ag;

	EnsureRels();
	if (!ActiveSnapshotSet())
		elog(ERROR, "pg_agents: the readable set needs an active snapshot");
	snap = GetActiveSnapshot();
	EnsureCache(snap);
	ag = GetAgent(agent_id, snap);
	return pstrdup(ag->found && ag->owner != NULL ? ag->owner : "");
}

/*
 * The ids of the resources of a type that hold an agent.resource_acl row for
 * a principal, under the active snapshot, palloc'd into ids (at most max);
 * their number, or -1 when there are more (or the principal's rows of other
 * types are too many to look through): what a change of a user's groups may
 * change in a readable set (src/allowlist.c).
 */
int
PgAgentsAclResourcesOf(const char *principal, const char *rtype, int max, char **ids)
{
	Relation	heap;
	Relation	index;
	IndexScanDesc scan;
	ScanKeyData key;
	TupleTableSlot *slot;
	int			n = 0;
	int			seen = 0;
	int			rtype_len = strlen(rtype);

	EnsureRels();
	if (!ActiveSnapshotSet())
		elog(ERROR, "pg_agents: the readable set needs an active snapshot");
	heap = table_open(rels.acl, NoLock);
	index = index_open(rels.acl_principal_idx, NoLock);
	slot = table_slot_create(heap, NULL);
	InitTextKey(&key, index, 1, principal);
	scan = index_beginscan(heap, index, GetActiveSnapshot(), 1, 0);
	index_rescan(scan, &key, 1, NULL, 0);
	while (n >= 0 && index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		Datum		d;

		if (++seen > 16 * Max(max, 1))
		{
			n = -1;
			break;
		}
		d = slot_getattr(slot, rels.acl_type, &isnull);
		if (isnull || !TextEq(d, rtype, rtype_len))
			continue;
		d = slot_getattr(slot, rels.acl_id, &isnull);
		if (isnull)
			continue;
		if (n >= max)
			n = -1;
		else
			ids[n++] = TextDatumGetCString(d);
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	index_close(index, NoLock);
	table_close(heap, NoLock);
	return n;
}

/* ------------------------------------------------------------------------
 * The readable set
 * ------------------------------------------------------------------------
 */

static int
CompareCStrings(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* a growable array of C strings */
typedef struct IdList
{
	char	  **items;
	int			n;
	int			cap;
} IdList;

static void
IdListAdd(IdList *l, char *s)
{
	if (l->n == l->cap)
	{
		l->cap = l->cap == 0 ? 64 : l->cap * 2;
		l->items = l->items == NULL ? palloc(sizeof(char *) * l->cap)
			: repalloc(l->items, sizeof(char *) * l->cap);
	}
	l->items[l->n++] = s;
}

/*
 * The ids of the resources of one type that an agent may access at a mode in
 * the autonomous regime, as the decision of agent.can_access gives them:
 *
 *	- each direct grant of the type (one index range scan of agent.access),
 *	  decided with its level, so bounded by the owner's ACL;
 *	- with a workspace_shared grant, each resource of the type shared with the
 *	  whole workspace (one index scan of agent.resource_acl on principal
 *	  'workspace') that holds no direct grant.
 *
 * With a custom ACL function the workspace shares cannot be listed (such a
 * function answers one resource at a time), so only direct grants count.
 * Nothing for an unknown, deleted or suspended agent.  The ids are returned
 * sorted (strcmp) and distinct, palloc'd in the current memory context; *n is
 * their number.  Reads the tables under the active snapshot, sharing the
 * per-snapshot caches of can_access.
 */
static char **
ReadableIds(int64 agent_id, const char *rtype, bool edit, int *n, bool *custom_acl)
{
	Snapshot	snap;
	AgentEntry *ag;
	int			mode = edit ? LEVEL_EDIT : LEVEL_READ;
	bool		want_shared;
	IdList		ids = {NULL, 0, 0};
	IdList		direct = {NULL, 0, 0};
	int			rtype_len = strlen(rtype);
	Relation	heap;
	Relation	index;
	IndexScanDesc scan;
	ScanKeyData keys[2];
	TupleTableSlot *slot;

	*n = 0;
	EnsureRels();
	if (!ActiveSnapshotSet())
		elog(ERROR, "pg_agents: the readable set needs an active snapshot");
	snap = GetActiveSnapshot();
	EnsureCache(snap);
	*custom_acl = OidIsValid(GetAclFunction(snap));
	ag = GetAgent(agent_id, snap);
	if (!ag->found || ag->deleted || ag->suspended)
		return NULL;
	want_shared = !*custom_acl &&
		GetWorkspaceGrant(ag, snap) != LEVEL_NONE;

	/* the direct grants of the type, each decided with its level */
	heap = table_open(rels.access, NoLock);
	index = index_open(rels.access_pkey, NoLock);
	slot = table_slot_create(heap, NULL);
	ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(agent_id));
	InitTextKey(&keys[1], index, 2, rtype);
	scan = index_beginscan(heap, index, snap, 2, 0);
	index_rescan(scan, keys, 2, NULL, 0);
	while (index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		Datum		d;
		int			level;
		char	   *rid;

		CHECK_FOR_INTERRUPTS();
		d = slot_getattr(slot, rels.ac_access, &isnull);
		level = isnull ? LEVEL_NONE : TextLevel(d);
		if (level == LEVEL_NONE)
			continue;
		d = slot_getattr(slot, rels.ac_id, &isnull);
		if (isnull)
			continue;
		rid = TextDatumGetCString(d);
		/* a direct grant decides its resource, allowed or not */
		if (want_shared)
			IdListAdd(&direct, rid);
		if (ReasonAllows(DecideAutonomous(ag, rtype, rid, mode, level, snap, false, NULL)))
			IdListAdd(&ids, rid);
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	index_close(index, NoLock);
	table_close(heap, NoLock);

	/* what is shared with the whole workspace and holds no direct grant */
	if (want_shared)
	{
		if (direct.n > 1)
			qsort(direct.items, direct.n, sizeof(char *), CompareCStrings);
		heap = table_open(rels.acl, NoLock);
		index = index_open(rels.acl_principal_idx, NoLock);
		slot = table_slot_create(heap, NULL);
		InitTextKey(&keys[0], index, 1, "workspace");
		scan = index_beginscan(heap, index, snap, 1, 0);
		index_rescan(scan, keys, 1, NULL, 0);
		while (index_getnext_slot(scan, ForwardScanDirection, slot))
		{
			bool		isnull;
			Datum		d;
			char	   *rid;

			CHECK_FOR_INTERRUPTS();
			d = slot_getattr(slot, rels.acl_type, &isnull);
			if (isnull || !TextEq(d, rtype, rtype_len))
				continue;
			/* shared with the agent's own workspace, by name (NULL: none) */
			d = slot_getattr(slot, rels.acl_workspace, &isnull);
			if (isnull || !TextEq(d, ag->workspace, strlen(ag->workspace)))
				continue;
			d = slot_getattr(slot, rels.acl_id, &isnull);
			if (isnull)
				continue;
			rid = TextDatumGetCString(d);
			if ((direct.n > 0 &&
				 bsearch(&rid, direct.items, direct.n, sizeof(char *), CompareCStrings) != NULL) ||
				!ReasonAllows(DecideAutonomous(ag, rtype, rid, mode, LEVEL_NONE, snap, false, NULL)))
			{
				pfree(rid);
				continue;
			}
			IdListAdd(&ids, rid);
		}
		index_endscan(scan);
		ExecDropSingleTupleTableSlot(slot);
		index_close(index, NoLock);
		table_close(heap, NoLock);
	}

	/* sorted and distinct (a resource may be shared by several ACL rows) */
	if (ids.n > 1)
	{
		int			i,
					j = 0;

		qsort(ids.items, ids.n, sizeof(char *), CompareCStrings);
		for (i = 1; i < ids.n; i++)
		{
			if (strcmp(ids.items[i], ids.items[j]) != 0)
				ids.items[++j] = ids.items[i];
		}
		ids.n = j + 1;
	}
	*n = ids.n;
	return ids.items;
}

/*
 * The ids of the resources of one type that an agent may access at a mode in
 * the autonomous regime (see ReadableIds), with one open scan of
 * agent.resource_acl for the owner's ACL of every candidate.  *custom_acl
 * says whether a custom ACL function answered (its sources are unknown).
 */
char	  **
PgAgentsReadableIds(int64 agent_id, const char *rtype, bool edit, int *n, bool *custom_acl)
{
	char	  **ids;

	EnsureRels();
	if (!ActiveSnapshotSet())
		elog(ERROR, "pg_agents: the readable set needs an active snapshot");
	Assert(!acl_probe.active);
	acl_probe.heap = table_open(rels.acl, NoLock);
	acl_probe.index = index_open(rels.acl_pkey, NoLock);
	acl_probe.slot = table_slot_create(acl_probe.heap, NULL);
	acl_probe.scan = index_beginscan(acl_probe.heap, acl_probe.index,
									 GetActiveSnapshot(), 2, 0);
	acl_probe.active = true;
	PG_TRY();
	{
		ids = ReadableIds(agent_id, rtype, edit, n, custom_acl);
	}
	PG_CATCH();
	{
		acl_probe.active = false;	/* the transaction's abort releases the rest */
		PG_RE_THROW();
	}
	PG_END_TRY();
	acl_probe.active = false;
	index_endscan(acl_probe.scan);
	ExecDropSingleTupleTableSlot(acl_probe.slot);
	index_close(acl_probe.index, NoLock);
	table_close(acl_probe.heap, NoLock);
	return ids;
}

/* The OID of agent.access in this transaction (an installation's identity). */
Oid
PgAgentsAccessRelid(void)
{
	EnsureRels();
	return rels.access;
}
