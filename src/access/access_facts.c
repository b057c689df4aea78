/*-------------------------------------------------------------------------
 *
 * access_facts.c
 *		The facts of access decisions: the relations and their OIDs, the
 *		per-snapshot caches of agents, groups, grants and ACL rows, and the
 *		index lookups that fill them (the speed notes are in access.c).
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
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
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

#include "access.h"
#include "access_int.h"
#include "util/compat.h"
#include "util/guc.h"
#include "util/spi_util.h"

/* The OID of agent.<name>, or an error saying the extension is missing. */
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

/*
 * The attribute number of a column the code relies on (an internal error if absent).
 */
static AttrNumber
LookupAtt(Oid relid, const char *name)
{
	AttrNumber	att = get_attnum(relid, name);

	if (att == InvalidAttrNumber)
		elog(ERROR, "pg_agents: column \"%s\" missing from relation %u", name, relid);
	return att;
}

/* the indexes scanned and the leading columns the scans need (relcheck.c) */
static const PgaIndexSpec agents_pkey_spec = {
	"agents_pkey", "agents", 1, {{"id", INT8OID}}, NULL
};
static const PgaIndexSpec access_pkey_spec = {
	"access_pkey", "access", 3,
	{{"agent_id", INT8OID}, {"resource_type", TEXTOID}, {"resource_id", TEXTOID}}, NULL
};
static const PgaIndexSpec acl_pkey_spec = {
	"resource_acl_pkey", "resource_acl", 2,
	{{"resource_type", TEXTOID}, {"resource_id", TEXTOID}}, NULL
};
static const PgaIndexSpec acl_principal_spec = {
	"resource_acl_principal_idx", "resource_acl", 1, {{"principal", TEXTOID}}, NULL
};
static const PgaIndexSpec members_user_spec = {
	"group_members_user_idx", "group_members", 1, {{"user_id", TEXTOID}}, NULL
};

static bool rels_callback_registered = false;

/* a relation changed (an index recreated, Citus took a table): look them up again */
static void
AccessRelsInvalCallback(Datum arg, Oid relid)
{
	if (!OidIsValid(relid) ||
		relid == AccessRelations.agents || relid == AccessRelations.agents_pkey ||
		relid == AccessRelations.access || relid == AccessRelations.access_pkey ||
		relid == AccessRelations.acl || relid == AccessRelations.acl_pkey ||
		relid == AccessRelations.acl_principal_idx ||
		relid == AccessRelations.members || relid == AccessRelations.members_user_idx ||
		relid == AccessRelations.config)
		AccessRelations.valid = false;
}

/*
 * The index of spec, checked, locked for the rest of the transaction;
 * nothing when its table is read through SPI (no direct scan then).
 */
static Oid
CheckedIndex(const PgaIndexSpec *spec, bool by_spi, PgaIndexInfo *ix)
{
	memset(ix, 0, sizeof(*ix));
	if (by_spi)
		return InvalidOid;
	*ix = *RelcheckIndex(spec);
	LockRelationOid(ix->indexid, AccessShareLock);
	return ix->indexid;
}

/*
 * Looks the relations, indexes and columns up and locks them, once per
 * transaction (again after a relcache invalidation): the indexes scanned
 * are checked column by column (an error names one that is not what the
 * scans need), and the row source of each is chosen (access_rows.h): SPI
 * for a table Citus manages, or for every table with
 * pg_agents.access_backend = spi; else the index scans.
 */
void
AccessEnsureRels(void)
{
	Oid			nsp;
	bool		spi = pg_agents_access_backend == PGA_ACCESS_BACKEND_SPI;
	int			q;

	if (!rels_callback_registered)
	{
		RelcheckRegisterCallback(AccessRelsInvalCallback, (Datum) 0);
		rels_callback_registered = true;
	}
	if (AccessRelations.valid && AccessRelations.lxid == PGA_MY_LXID &&
		AccessRelations.backend == pg_agents_access_backend)
		return;
	AccessRelations.valid = false;
	nsp = get_namespace_oid("agent", true);
	if (!OidIsValid(nsp))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_SCHEMA),
				 errmsg("schema \"agent\" does not exist"),
				 errhint("Is the pg_agents extension installed in this database?")));
	AccessRelations.agents = LookupRel(nsp, "agents");
	AccessRelations.access = LookupRel(nsp, "access");
	AccessRelations.acl = LookupRel(nsp, "resource_acl");
	AccessRelations.members = LookupRel(nsp, "group_members");
	AccessRelations.config = LookupRel(nsp, "access_config");
	/*
	 * Lock them once for the rest of the transaction (as any query reading
	 * them would), so that each check opens them without the lock manager.
	 */
	LockRelationOid(AccessRelations.agents, AccessShareLock);
	LockRelationOid(AccessRelations.access, AccessShareLock);
	LockRelationOid(AccessRelations.acl, AccessShareLock);
	LockRelationOid(AccessRelations.members, AccessShareLock);
	LockRelationOid(AccessRelations.config, AccessShareLock);
	AccessRelations.agents_citus = RelcheckCitusManaged(AccessRelations.agents);
	AccessRelations.access_citus = RelcheckCitusManaged(AccessRelations.access);
	AccessRelations.acl_citus = RelcheckCitusManaged(AccessRelations.acl);
	AccessRelations.members_citus = RelcheckCitusManaged(AccessRelations.members);
	AccessRelations.config_citus = RelcheckCitusManaged(AccessRelations.config);
	AccessRelations.agents_pkey = CheckedIndex(&agents_pkey_spec, spi || AccessRelations.agents_citus,
										   &AccessRelations.agents_pkey_ix);
	AccessRelations.access_pkey = CheckedIndex(&access_pkey_spec, spi || AccessRelations.access_citus,
										   &AccessRelations.access_pkey_ix);
	AccessRelations.acl_pkey = CheckedIndex(&acl_pkey_spec, spi || AccessRelations.acl_citus,
										&AccessRelations.acl_pkey_ix);
	AccessRelations.acl_principal_idx = CheckedIndex(&acl_principal_spec,
												 spi || AccessRelations.acl_citus,
												 &AccessRelations.acl_principal_ix);
	AccessRelations.members_user_idx = CheckedIndex(&members_user_spec,
												spi || AccessRelations.members_citus,
												&AccessRelations.members_user_ix);
	for (q = 0; q < AQ_NQUERIES; q++)
	{
		Oid		   *heap = AccessQueries[q].heap;
		bool		managed = heap == &AccessRelations.agents ? AccessRelations.agents_citus :
			heap == &AccessRelations.access ? AccessRelations.access_citus :
			heap == &AccessRelations.acl ? AccessRelations.acl_citus :
			heap == &AccessRelations.members ? AccessRelations.members_citus :
			AccessRelations.config_citus;

		AccessRelations.src[q] = spi || managed ? &AccessRowsSpi : &AccessRowsIndex;
	}
	AccessRelations.backend = pg_agents_access_backend;
	AccessRelations.ag_workspace = LookupAtt(AccessRelations.agents, "workspace_id");
	AccessRelations.ag_owner = LookupAtt(AccessRelations.agents, "owner_id");
	AccessRelations.ag_status = LookupAtt(AccessRelations.agents, "status");
	AccessRelations.ag_deleted = LookupAtt(AccessRelations.agents, "deleted_at");
	AccessRelations.ac_type = LookupAtt(AccessRelations.access, "resource_type");
	AccessRelations.acl_type = LookupAtt(AccessRelations.acl, "resource_type");
	AccessRelations.acl_id = LookupAtt(AccessRelations.acl, "resource_id");
	AccessRelations.ac_id = LookupAtt(AccessRelations.access, "resource_id");
	AccessRelations.ac_access = LookupAtt(AccessRelations.access, "access");
	AccessRelations.acl_workspace = LookupAtt(AccessRelations.acl, "workspace_id");
	AccessRelations.acl_principal = LookupAtt(AccessRelations.acl, "principal");
	AccessRelations.acl_access = LookupAtt(AccessRelations.acl, "access");
	AccessRelations.gm_workspace = LookupAtt(AccessRelations.members, "workspace_id");
	AccessRelations.gm_group = LookupAtt(AccessRelations.members, "group_id");
	AccessRelations.cf_function = LookupAtt(AccessRelations.config, "acl_function");
	AccessRelations.lxid = PGA_MY_LXID;
	AccessRelations.valid = true;
}

/*
 * The session's pg_agents.workspace, or NULL when it sets none: the
 * workspace a look-up routes to first (also the events', dispatch.c and
 * watch.c).
 */
const char *
AccessSessionWorkspace(void)
{
	if (pg_agents_workspace == NULL || pg_agents_workspace[0] == '\0')
		return NULL;
	return pg_agents_workspace;
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
	TimestampTz stmt;			/* with Citus: the statement's start */
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

/*
 * Rows of collections (agent.resource_tables.parent_type): for a resource
 * type, the registered tables whose rows belong to a collection, and for a
 * row, its collection; both cached per snapshot.
 */
typedef struct ParentTable
{
	char	   *ptype;			/* the collection's type */
	char	   *sql;			/* the row's collection id by row id (a constant
								 * for a table that is one collection) */
	char	   *rows_sql;		/* the rows (id, collection id, workspace) of
								 * collections $1 in workspace $2 */
	int			idkind;			/* ID_* below: how the row id is checked */
} ParentTable;

#define ID_TEXT		0			/* compared in the column's type, any text fits */
#define ID_INT2		1
#define ID_INT4		2
#define ID_INT8		3
#define ID_ASTEXT	4			/* another type: compared as text */

typedef struct ParentTypeEntry
{
	uint64		hash;			/* hash key: of the type */
	char	   *rtype;
	int			ntables;
	ParentTable *tables;
	bool		filled;
} ParentTypeEntry;

typedef struct ParentEntry
{
	uint64		hash;			/* hash key: of (type, id) */
	char	   *rtype;
	char	   *rid;
	char	   *ptype;			/* NULL: no collection */
	char	   *pid;
	bool		has_ws;			/* found in a table with a workspace_column */
	char	   *rws;			/* then the row's workspace ("" for none) */
	bool		filled;
} ParentEntry;

static MemoryContext cache_cxt = NULL;
static HTAB *agent_cache = NULL;
static HTAB *groups_cache = NULL;
static HTAB *parent_type_cache = NULL;	/* in parent_type_cxt */
static MemoryContext parent_type_cxt = NULL;
static LocalTransactionId parent_type_lxid = InvalidLocalTransactionId;
static CommandId parent_type_cid = InvalidCommandId;
static HTAB *parent_cache = NULL;
static CacheKey cache_key;
static bool acl_fn_loaded = false;
static Oid	acl_fn_oid = InvalidOid;
static FmgrInfo acl_fn_info;

/*
 * The agents the session may name (AccessSessionScope): decided once per
 * snapshot, role and workspace setting, before any agent is looked up.
 */
typedef struct ScopeEntry
{
	bool		valid;
	Oid			user;
	char	   *workspace;		/* the setting it was decided for, "" none */
	char	   *actor;			/* and pg_agents.actor */
	int64		self;			/* the agent the actor names, 0 none */
	AccessScopeKind kind;
} ScopeEntry;

static ScopeEntry scope;

/* Empties the per-snapshot caches (their memory context is reset). */
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
	parent_cache = NULL;
	acl_cache = NULL;
	acl_cached_rows = 0;
	grantset_total = 0;
	check_clock = 0;
	load_blocked_until = 0;
	acl_fn_loaded = false;
	acl_fn_oid = InvalidOid;
	scope.valid = false;
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

/*
 * Makes the caches those of this snapshot: kept while the snapshot is the same
 * (and they are not too big), else started afresh.  With Citus, a change
 * committed on another node (a revoke on the node of the workspace) leaves
 * this node's snapshots alike: the caches are then also those of this
 * statement only (its start), as the readable sets are
 * (src/access/allowlist_cache.c), so that the next statement reads afresh.
 */
static void
AccessEnsureCache(Snapshot snap)
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
	if (AccessRelsOnCitus())
		k.stmt = GetCurrentStatementStartTimestamp();
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
	parent_cache = CacheCreate("pg_agents parents", sizeof(uint64), sizeof(ParentEntry), 256);
	cache_key = k;
}

/* the kept plans of the statements the access module runs through SPI itself */
static SPIPlanPtr plan_parent_types = NULL;
static SPIPlanPtr plan_reader_bound = NULL;

/* ------------------------------------------------------------------------
 * The facts, one function each, read from the row source (access_rows.h)
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

/* The agent's grant count when its set was last loaded, -1 if unknown. */
static int
KnownGrantCount(int64 agent_id)
{
	GrantCountEntry *e;

	if (grant_count_memo == NULL)
		return -1;
	e = (GrantCountEntry *) hash_search(grant_count_memo, &agent_id, HASH_FIND, NULL);
	return e ? e->n : -1;
}

/*
 * Remembers the agent's grant count (the memo is dropped whole when full).
 */
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

/* a new (or refilled) agent entry: nothing known yet */
static void
AgentEntryInit(AgentEntry *e, int64 agent_id)
{
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
	e->first_rtype = NULL;
	e->first_rid = NULL;
	e->first_level = LEVEL_NONE;
}

/* the agent's row from text columns (workspace, owner, status, deleted_at) */
static void
AgentEntryFill(AgentEntry *e, char *workspace, char *owner, bool suspended, bool deleted)
{
	e->found = true;
	e->workspace = workspace != NULL ? workspace : MemoryContextStrdup(cache_cxt, "");
	e->owner = owner != NULL ? owner : MemoryContextStrdup(cache_cxt, "");
	e->suspended = suspended;
	e->deleted = deleted;
}

/*
 * The agent's row (workspace, owner, status), read once per snapshot; found is
 * false for an unknown agent.
 */
AgentEntry *
AccessGetAgent(int64 agent_id, Snapshot snap)
{
	AgentEntry *e;
	bool		found;
	AccessRows	rs;
	AccessKey	keys[2];

	e = (AgentEntry *) hash_search(agent_cache, &agent_id, HASH_ENTER, &found);
	if (found && e->filled)
		return e;
	AgentEntryInit(e, agent_id);

	/* routed to the session's workspace first, else by id alone */
	keys[0] = (AccessKey) {NULL, agent_id};
	keys[1] = (AccessKey) {AccessSessionWorkspace(), 0};
	AccessRowsBegin(&rs, AQ_AGENT, keys, snap, 0);
	if (AccessRowsNext(&rs))
	{
		bool		isnull;
		bool		snull;
		Datum		d;
		char	   *workspace = AccessRowsText(&rs, 0, cache_cxt);
		char	   *owner = AccessRowsText(&rs, 1, cache_cxt);

		d = AccessRowsGet(&rs, 2, &snull);
		(void) AccessRowsGet(&rs, 3, &isnull);
		AgentEntryFill(e, workspace, owner, !snull && TextEq(d, "suspended", 9), !isnull);
	}
	AccessRowsEnd(&rs);
	e->filled = true;
	return e;
}

/*
 * With Citus, the agent's row, its grant on (rtype, rid) and its
 * workspace_shared grant in one statement routed to the session's workspace
 * (the two tables are co-located: one round trip to the node of the
 * workspace instead of two or three), for the first decision on the agent
 * in the snapshot; else, or when the agent is not of the session's
 * workspace, AccessGetAgent.  The grants are what AccessGetGrant would read
 * (the same snapshot, the agent's workspace), kept in the entry for
 * AccessAgentGrant and AccessGetWorkspaceGrant.
 */
static SPIPlanPtr plan_agent_grant = NULL;

AgentEntry *
AccessGetAgentFor(int64 agent_id, const char *rtype, const char *rid, Snapshot snap)
{
	AgentEntry *e;
	bool		found;
	PgaElevation elev;
	Oid			types[4] = {INT8OID, TEXTOID, TEXTOID, TEXTOID};
	Datum		vals[4];

	if (!AccessRelations.agents_citus || !AccessRelations.access_citus ||
		AccessSessionWorkspace() == NULL)
		return AccessGetAgent(agent_id, snap);
	e = (AgentEntry *) hash_search(agent_cache, &agent_id, HASH_ENTER, &found);
	if (found && e->filled)
		return e;
	AgentEntryInit(e, agent_id);
	vals[0] = Int64GetDatum(agent_id);
	vals[1] = CStringGetTextDatum(rtype);
	vals[2] = CStringGetTextDatum(rid);
	vals[3] = CStringGetTextDatum(AccessSessionWorkspace());
	AccessSpiRun(&elev, &plan_agent_grant,
				 "SELECT a.workspace_id, a.owner_id, a.status, a.deleted_at, g.access, w.access "
				 "FROM agent.agents a LEFT JOIN agent.access g"
				 " ON g.agent_id OPERATOR(pg_catalog.=) a.id"
				 " AND g.workspace_id OPERATOR(pg_catalog.=) a.workspace_id"
				 " AND g.resource_type OPERATOR(pg_catalog.=) $2"
				 " AND g.resource_id OPERATOR(pg_catalog.=) $3 "
				 "LEFT JOIN agent.access w"
				 " ON w.agent_id OPERATOR(pg_catalog.=) a.id"
				 " AND w.workspace_id OPERATOR(pg_catalog.=) a.workspace_id"
				 " AND w.resource_type OPERATOR(pg_catalog.=) 'workspace_shared'"
				 " AND w.resource_id OPERATOR(pg_catalog.=) '*' "
				 "WHERE a.id OPERATOR(pg_catalog.=) $1 AND a.workspace_id OPERATOR(pg_catalog.=) $4",
				 4, types, vals);
	if (SPI_processed == 1)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		snull;
		bool		dnull;
		bool		gnull;
		bool		wnull;
		Datum		st = SPI_getbinval(tup, desc, 3, &snull);
		Datum		g;
		Datum		w;

		(void) SPI_getbinval(tup, desc, 4, &dnull);
		g = SPI_getbinval(tup, desc, 5, &gnull);
		w = SPI_getbinval(tup, desc, 6, &wnull);
		e->ws_grant = wnull ? LEVEL_NONE : TextLevel(w);
		AgentEntryFill(e, AccessSpiText(0, 1, cache_cxt), AccessSpiText(0, 2, cache_cxt),
					   !snull && TextEq(st, "suspended", 9), !dnull);
		e->first_level = gnull ? LEVEL_NONE : TextLevel(g);
		e->first_rtype = MemoryContextStrdup(cache_cxt, rtype);
		e->first_rid = MemoryContextStrdup(cache_cxt, rid);
	}
	AccessSpiDone(&elev);
	if (!e->found)
		return AccessGetAgent(agent_id, snap);	/* another workspace's, or none */
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
	AccessRows	rs;
	AccessKey	keys[2];
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

	keys[0] = (AccessKey) {user, 0};
	keys[1] = (AccessKey) {workspace, 0};
	AccessRowsBegin(&rs, AQ_GROUPS, keys, snap, 0);
	while (AccessRowsNext(&rs))
	{
		char	   *g = AccessRowsText(&rs, 0, cache_cxt);

		if (g == NULL)
			continue;
		old = MemoryContextSwitchTo(cache_cxt);
		if (e->ngroups == cap)
		{
			cap = cap == 0 ? 4 : cap * 2;
			e->groups = e->groups == NULL ? palloc(sizeof(char *) * cap)
				: repalloc(e->groups, sizeof(char *) * cap);
		}
		e->groups[e->ngroups++] = g;
		MemoryContextSwitchTo(old);
	}
	AccessRowsEnd(&rs);
	e->filled = true;
	return e;
}

/* the access level of the agent's grant on (type, id), LEVEL_NONE if none */
int
AccessGetGrant(int64 agent_id, const char *rtype, const char *rid, Snapshot snap)
{
	AccessRows	rs;
	AccessKey	keys[4];
	int			level = LEVEL_NONE;

	keys[0] = (AccessKey) {NULL, agent_id};
	keys[1] = (AccessKey) {rtype, 0};
	keys[2] = (AccessKey) {rid, 0};
	keys[3] = (AccessKey) {NULL, 0};
	if (AccessRowsRouted(AQ_GRANT))
	{
		/* routed to the agent's workspace: nothing for an unknown agent */
		AgentEntry *ag = AccessGetAgent(agent_id, snap);

		if (!ag->found)
			return LEVEL_NONE;
		keys[3].s = ag->workspace;
	}
	AccessRowsBegin(&rs, AQ_GRANT, keys, snap, 0);
	if (AccessRowsNext(&rs))
	{
		bool		isnull;
		Datum		d = AccessRowsGet(&rs, 0, &isnull);

		level = isnull ? LEVEL_NONE : TextLevel(d);
	}
	AccessRowsEnd(&rs);
	return level;
}


/* hash of a (type, id) pair in a grant set */
static inline uint32
GrantHash(const char *rtype, const char *rid)
{
	return hash_combine(hash_bytes((const unsigned char *) rtype, strlen(rtype)),
						hash_bytes((const unsigned char *) rid, strlen(rid)));
}

/* Inserts a grant into the set's open-addressing table (linear probing). */
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

/*
 * The level of the grant on (type, id) in a loaded set, LEVEL_NONE if none.
 */
int
AccessGrantSetLookup(GrantSet *gs, const char *rtype, const char *rid)
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
	AccessRows	rs;
	AccessKey	keys[2];
	int			limit = Min(GRANTSET_MAX_AGENT, pg_agents_access_cache_grants);
	int			seen = 0;
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
	/*
	 * At most limit + 1 rows (a statement routed to the agent's workspace
	 * when Citus holds the grants): past limit the set is not kept.
	 */
	keys[0] = (AccessKey) {NULL, ag->id};
	keys[1] = (AccessKey) {ag->workspace, 0};
	AccessRowsBegin(&rs, AQ_GRANTS_ALL, keys, snap, limit);
	while (AccessRowsNext(&rs))
	{
		bool		isnull;
		Datum		d;
		text	   *t;
		int			len;
		int			level;
		int			ti;

		if (++seen > limit)
		{
			ok = false;
			break;
		}
		d = AccessRowsGet(&rs, 2, &isnull);
		level = isnull ? LEVEL_NONE : TextLevel(d);
		if (level == LEVEL_NONE)
			continue;
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
		d = AccessRowsGet(&rs, 0, &isnull);
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
		d = AccessRowsGet(&rs, 1, &isnull);
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
	AccessRowsEnd(&rs);
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
int
AccessAgentGrant(AgentEntry *ag, const char *rtype, const char *rid, Snapshot snap)
{
	check_clock++;
	if (ag->set == NULL && !ag->set_failed && AccessRowsOffers(AQ_GRANTS_ALL) &&
		check_clock >= load_blocked_until &&
		++ag->checks >= (GRANTSET_AFTER_CHECKS << Min(ag->loads, 16)) &&
		ag->checks >= ag->known_grants / GRANTSET_LOAD_RATIO)
		LoadGrantSet(ag, snap);
	if (ag->set != NULL)
	{
		ag->set->last_use = check_clock;
		return AccessGrantSetLookup(ag->set, rtype, rid);
	}
	if (ag->first_rtype != NULL && strcmp(ag->first_rtype, rtype) == 0 &&
		strcmp(ag->first_rid, rid) == 0)
		return ag->first_level;
	return AccessGetGrant(ag->id, rtype, rid, snap);
}

/* the level of the agent's workspace_shared grant, looked up once per snapshot */
int
AccessGetWorkspaceGrant(AgentEntry *ag, Snapshot snap)
{
	if (ag->ws_grant < 0)
		ag->ws_grant = AccessAgentGrant(ag, "workspace_shared", "*", snap);
	return ag->ws_grant;
}

/* the registered ACL function, InvalidOid for the default tables */
Oid
AccessGetAclFunction(Snapshot snap)
{
	AccessRows	rs;

	if (acl_fn_loaded)
		return acl_fn_oid;
	acl_fn_oid = InvalidOid;
	AccessRowsBegin(&rs, AQ_CONFIG, NULL, snap, 0);
	while (AccessRowsNext(&rs))
	{
		bool		isnull;
		Datum		d = AccessRowsGet(&rs, 0, &isnull);

		if (!isnull)
			acl_fn_oid = DatumGetObjectId(d);
	}
	AccessRowsEnd(&rs);
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
 * Reads the agent.resource_acl rows of one resource into e (allocated in
 * cxt), through the read the readable set holds open when there is one
 * (AccessRowsHold).
 */
static void
LoadAclRows(AclEntry *e, const char *rtype, const char *rid, Snapshot snap,
			MemoryContext cxt)
{
	AccessRows	rs;
	AccessKey	keys[2];
	int			cap = 0;

	e->nrows = 0;
	e->rows = NULL;
	keys[0] = (AccessKey) {rtype, 0};
	keys[1] = (AccessKey) {rid, 0};
	AccessRowsBegin(&rs, AQ_ACL, keys, snap, 0);
	while (AccessRowsNext(&rs))
	{
		bool		isnull;
		Datum		d;
		AclRow	   *r;
		MemoryContext old;

		d = AccessRowsGet(&rs, 0, &isnull);
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
		d = AccessRowsGet(&rs, 1, &isnull);
		r->level = isnull ? LEVEL_NONE : TextLevel(d);
		d = AccessRowsGet(&rs, 2, &isnull);
		r->workspace = isnull ? NULL : TextDatumGetCString(d);
		MemoryContextSwitchTo(old);
	}
	AccessRowsEnd(&rs);
}

/*
 * The agent.resource_acl rows of one resource, cached per snapshot (when the
 * cache is full, read again each time into a short-lived entry).
 */
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
bool
AccessUserAllows(const char *workspace, const char *user, const char *rtype,
				 const char *rid, int mode, Snapshot snap)
{
	if (OidIsValid(AccessGetAclFunction(snap)))
		return CallAclFunction(user, rtype, rid, mode);
	return AclLevel(workspace, user, GetGroups(workspace, user, snap),
					rtype, rid, snap) >= mode;
}

/* is the resource shared with the whole workspace at the mode? */
bool
AccessWorkspaceShares(const char *workspace, const char *rtype, const char *rid,
					  int mode, Snapshot snap)
{
	if (OidIsValid(AccessGetAclFunction(snap)))
		return CallAclFunction(NULL, rtype, rid, mode);
	return AclLevel(workspace, NULL, NULL, rtype, rid, snap) >= mode;
}

/* ------------------------------------------------------------------------
 * Rows of collections
 * ------------------------------------------------------------------------
 */

/*
 * The registrations of parents, kept for the transaction (for the statement
 * once the transaction has written: it may have registered a table).
 */
static void
EnsureParentTypeCache(void)
{
	CommandId	cid = TransactionIdIsValid(GetTopTransactionIdIfAny()) ?
		GetCurrentCommandId(false) : InvalidCommandId;
	HASHCTL		ctl;

	if (parent_type_cache != NULL && parent_type_lxid == PGA_MY_LXID &&
		parent_type_cid == cid)
		return;
	if (parent_type_cxt == NULL)
		parent_type_cxt = AllocSetContextCreate(TopMemoryContext,
												"pg_agents parent types",
												ALLOCSET_SMALL_SIZES);
	else
		MemoryContextReset(parent_type_cxt);
	parent_type_cache = NULL;
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(uint64);
	ctl.entrysize = sizeof(ParentTypeEntry);
	ctl.hcxt = parent_type_cxt;
	parent_type_cache = hash_create("pg_agents parent types", 16, &ctl,
									HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	parent_type_lxid = PGA_MY_LXID;
	parent_type_cid = cid;
}

/* the registered tables of a type whose rows belong to a collection */
static ParentTypeEntry *
GetParentTypes(const char *rtype)
{
	uint64		h = hash_bytes_extended((const unsigned char *) rtype, strlen(rtype), 0);
	ParentTypeEntry *e;
	bool		found;
	PgaElevation elev;
	Oid			types[1] = {TEXTOID};
	Datum		vals[1];
	uint64		r;

	EnsureParentTypeCache();
	e = (ParentTypeEntry *) hash_search(parent_type_cache, &h, HASH_ENTER, &found);
	if (found && e->filled && strcmp(e->rtype, rtype) == 0)
		return e;
	if (found && e->filled)
	{
		/* another type with the same hash: not cached */
		e = MemoryContextAllocZero(parent_type_cxt, sizeof(ParentTypeEntry));
	}
	e->filled = false;
	e->rtype = MemoryContextStrdup(parent_type_cxt, rtype);
	e->ntables = 0;
	e->tables = NULL;
	vals[0] = CStringGetTextDatum(rtype);
	AccessEnsureRels();	/* AccessSpiRun reads its Citus flags */
	AccessSpiRun(&elev, &plan_parent_types,
				 "SELECT r.parent_type, NULL::pg_catalog.text, "
				 "pg_catalog.format('SELECT %s, %s FROM %s WHERE %s LIMIT 1', "
				 " CASE WHEN r.parent_column IS NOT NULL THEN pg_catalog.format('%I::pg_catalog.text', r.parent_column)"
				 "  WHEN r.parent_id IS NOT NULL THEN pg_catalog.format('%L::pg_catalog.text', r.parent_id)"
				 "  ELSE 'NULL::pg_catalog.text' END,"
				 " CASE WHEN r.workspace_column IS NOT NULL THEN"
				 "  pg_catalog.format('COALESCE(%I::pg_catalog.text, '''')', r.workspace_column)"
				 "  ELSE 'NULL::pg_catalog.text' END, r.tbl,"
				 " CASE WHEN a.atttypid IN (20, 21, 23, 25, 1043, 1042) THEN"
				 "  pg_catalog.format('%I OPERATOR(pg_catalog.=) $1::%s', r.id_column, pg_catalog.format_type(a.atttypid, NULL))"
				 " ELSE pg_catalog.format('%I::pg_catalog.text OPERATOR(pg_catalog.=) $1', r.id_column) END), "
				 "CASE a.atttypid WHEN 21 THEN 1 WHEN 23 THEN 2 WHEN 20 THEN 3"
				 " WHEN 25 THEN 0 WHEN 1043 THEN 0 WHEN 1042 THEN 0 ELSE 4 END, "
				 "pg_catalog.format('SELECT %I::pg_catalog.text, %s, %s FROM %s WHERE %s%s', r.id_column, "
				 " CASE WHEN r.parent_column IS NOT NULL THEN pg_catalog.format('%I::pg_catalog.text', r.parent_column)"
				 "  ELSE pg_catalog.format('%L::pg_catalog.text', r.parent_id) END,"
				 " CASE WHEN r.workspace_column IS NOT NULL THEN pg_catalog.format('%I::pg_catalog.text', r.workspace_column)"
				 "  ELSE 'NULL::pg_catalog.text' END, r.tbl,"
				 " CASE WHEN r.parent_column IS NULL THEN pg_catalog.format('%L::pg_catalog.text OPERATOR(pg_catalog.=) ANY ($1)', r.parent_id)"
				 "  WHEN pa.atttypid IN (25, 1043) THEN pg_catalog.format('%I OPERATOR(pg_catalog.=) ANY ($1)', r.parent_column)"
				 "  ELSE pg_catalog.format('%I::pg_catalog.text OPERATOR(pg_catalog.=) ANY ($1)', r.parent_column) END,"
				 " CASE WHEN r.workspace_column IS NULL THEN ''"
				 "  WHEN wa.atttypid IN (25, 1043) THEN pg_catalog.format(' AND %I OPERATOR(pg_catalog.=) $2', r.workspace_column)"
				 "  ELSE pg_catalog.format(' AND %I::pg_catalog.text OPERATOR(pg_catalog.=) $2', r.workspace_column) END) "
				 "FROM agent.resource_tables r JOIN pg_catalog.pg_attribute a"
				 " ON a.attrelid OPERATOR(pg_catalog.=) r.tbl AND a.attname OPERATOR(pg_catalog.=) r.id_column "
				 "LEFT JOIN pg_catalog.pg_attribute pa"
				 " ON pa.attrelid OPERATOR(pg_catalog.=) r.tbl AND pa.attname OPERATOR(pg_catalog.=) r.parent_column "
				 "LEFT JOIN pg_catalog.pg_attribute wa"
				 " ON wa.attrelid OPERATOR(pg_catalog.=) r.tbl AND wa.attname OPERATOR(pg_catalog.=) r.workspace_column "
				 "WHERE r.resource_type OPERATOR(pg_catalog.=) $1"
				 " AND (r.parent_type IS NOT NULL OR r.workspace_column IS NOT NULL) "
				 "ORDER BY r.tbl",
				 1, types, vals);
	if (SPI_processed > 0)
		e->tables = MemoryContextAllocZero(parent_type_cxt, sizeof(ParentTable) * SPI_processed);
	for (r = 0; r < SPI_processed; r++)
	{
		ParentTable *t = &e->tables[e->ntables];
		bool		isnull;
		Datum		kind = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 4, &isnull);

		t->ptype = AccessSpiText(r, 1, parent_type_cxt);
		t->sql = AccessSpiText(r, 3, parent_type_cxt);
		t->rows_sql = AccessSpiText(r, 5, parent_type_cxt);
		t->idkind = isnull ? ID_ASTEXT : DatumGetInt32(kind);
		if (t->sql != NULL)
			e->ntables++;
	}
	AccessSpiDone(&elev);
	e->filled = true;
	return e;
}

/* can the text be compared with an id column of this kind (no cast error)? */
static bool
IdFits(const char *rid, int idkind)
{
	const char *p = rid;
	char	   *end;
	long long	v;

	if (idkind == ID_TEXT || idkind == ID_ASTEXT)
		return true;
	if (*p == '-')
		p++;
	if (*p < '0' || *p > '9')
		return false;
	errno = 0;
	v = strtoll(rid, &end, 10);
	if (errno != 0 || *end != '\0')
		return false;
	if (idkind == ID_INT2)
		return v >= PG_INT16_MIN && v <= PG_INT16_MAX;
	if (idkind == ID_INT4)
		return v >= PG_INT32_MIN && v <= PG_INT32_MAX;
	return true;
}

/*
 * Runs the lookup of a row's collection (one of ParentTable.sql, text $1)
 * through a plan kept for the session: a decision on a row of a collection
 * that is not in the snapshot's cache costs one execution, not a parse and a
 * plan.  The statements are few (one per registered table with a parent);
 * past PARENT_PLANS_MAX they are run unprepared.  A kept plan follows the
 * table's changes through the plan cache.  Called inside SPI.
 */
#define PARENT_PLANS_MAX 32
static char *parent_plan_sql[PARENT_PLANS_MAX];
static SPIPlanPtr parent_plan[PARENT_PLANS_MAX];
static int	nparent_plans = 0;

static int
ParentLookup(const char *sql, Oid *types, Datum *vals)
{
	int			i;

	for (i = 0; i < nparent_plans; i++)
		if (strcmp(parent_plan_sql[i], sql) == 0)
			return SPI_execute_plan(parent_plan[i], vals, NULL, true, 1);
	if (nparent_plans < PARENT_PLANS_MAX)
	{
		SPIPlanPtr	plan = NULL;

		SpiUtilKeptPlan(&plan, sql, 1, types);
		parent_plan_sql[nparent_plans] = MemoryContextStrdup(TopMemoryContext, sql);
		parent_plan[nparent_plans++] = plan;
		return SPI_execute_plan(plan, vals, NULL, true, 1);
	}
	return SPI_execute_with_args(sql, 1, types, vals, NULL, true, 1);
}

/*
 * The collection a resource belongs to, when its type is registered with a
 * parent (agent.register_resource_table's parent_type): true and *ptype,
 * *pid set, else false.  The row's collection id is read from the
 * registered table by its id (parameterised, as the owner of schema
 * "agent"), cached per snapshot.
 */
static ParentEntry *
LookupRow(const char *rtype, const char *rid, Snapshot snap)
{
	ParentTypeEntry *te;
	ParentEntry *e;
	uint64		h;
	bool		found;
	int			i;
	bool		row = false;

	te = GetParentTypes(rtype);
	if (te->ntables == 0)
		return NULL;

	h = hash_bytes_extended((const unsigned char *) rtype, strlen(rtype), 0);
	h = hash_bytes_extended((const unsigned char *) rid, strlen(rid), h);
	e = (ParentEntry *) hash_search(parent_cache, &h, HASH_ENTER, &found);
	if (found && e->filled && strcmp(e->rtype, rtype) == 0 && strcmp(e->rid, rid) == 0)
		return e;
	if (found && e->filled)
		e = MemoryContextAllocZero(cache_cxt, sizeof(ParentEntry));
	e->filled = false;
	e->rtype = MemoryContextStrdup(cache_cxt, rtype);
	e->rid = MemoryContextStrdup(cache_cxt, rid);
	e->ptype = NULL;
	e->pid = NULL;
	e->has_ws = false;
	e->rws = NULL;
	for (i = 0; i < te->ntables && !row; i++)
	{
		ParentTable *t = &te->tables[i];
		PgaElevation elev;
		Oid			types[1] = {TEXTOID};
		Datum		vals[1];
		int			rc;

		if (!IdFits(rid, t->idkind))
			continue;
		vals[0] = CStringGetTextDatum(rid);
		if (AccessOnCitus())
			RelcheckCitusNotParallel();
		RelcheckElevate(&elev);
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "pg_agents: SPI_connect failed");
		rc = ParentLookup(t->sql, types, vals);
		if (rc != SPI_OK_SELECT)
			elog(ERROR, "pg_agents: collection lookup failed: %s", SPI_result_code_string(rc));
		if (SPI_processed > 0)
		{
			row = true;
			e->pid = AccessSpiText(0, 1, cache_cxt);
			if (e->pid != NULL && t->ptype != NULL)
				e->ptype = MemoryContextStrdup(cache_cxt, t->ptype);
			e->rws = AccessSpiText(0, 2, cache_cxt);
			e->has_ws = e->rws != NULL;
		}
		AccessSpiDone(&elev);
	}
	e->filled = true;
	return e;
}

bool
AccessGetParent(const char *rtype, const char *rid, Snapshot snap,
				const char **ptype, const char **pid)
{
	ParentEntry *e = LookupRow(rtype, rid, snap);

	if (e == NULL || e->ptype == NULL)
		return false;
	*ptype = e->ptype;
	*pid = e->pid;
	return true;
}

/*
 * Is the resource a row of a table registered with a workspace_column whose
 * workspace is not the given one (the agent's)?  A table that holds the
 * resources of several workspaces declares the column; its rows are then
 * never another workspace's agent's, whatever its grants say (an id
 * granted in one workspace may name a row of another).  Rows with no
 * workspace count as another workspace's.  Uses the per-snapshot cache of
 * the row's collection (one lookup of the row by its id).
 */
bool
AccessRowOtherWorkspace(const char *rtype, const char *rid, const char *workspace,
						Snapshot snap)
{
	ParentEntry *e = LookupRow(rtype, rid, snap);

	if (e == NULL || !e->has_ws)
		return false;
	return workspace == NULL || strcmp(e->rws, workspace) != 0;
}

/*
 * The registered tables of a type whose rows belong to collections: their
 * number, and for each the collections' type and the statement listing the
 * rows (row id, collection id) of the collections of a text[] parameter.
 */
int
AccessParentTables(const char *rtype, const char ***ptypes, const char ***rows_sqls)
{
	ParentTypeEntry *te = GetParentTypes(rtype);
	int			i;

	int			n = 0;

	*ptypes = palloc(sizeof(char *) * (te->ntables + 1));
	*rows_sqls = palloc(sizeof(char *) * (te->ntables + 1));
	for (i = 0; i < te->ntables; i++)
	{
		if (te->tables[i].ptype == NULL)
			continue;			/* a workspace_column without a parent */
		(*ptypes)[n] = te->tables[i].ptype;
		(*rows_sqls)[n++] = te->tables[i].rows_sql;
	}
	return n;
}

/*
 * Remembers the collection of a row for the snapshot (read with the rows of
 * a collection), so that deciding it reads the table no more.
 */
void
AccessRememberParent(const char *rtype, const char *rid, const char *ptype, const char *pid,
					 const char *rws)
{
	uint64		h;
	ParentEntry *e;
	bool		found;

	if (parent_cache == NULL || hash_get_num_entries(parent_cache) >= CACHE_MAX_ENTRIES)
		return;
	h = hash_bytes_extended((const unsigned char *) rtype, strlen(rtype), 0);
	h = hash_bytes_extended((const unsigned char *) rid, strlen(rid), h);
	e = (ParentEntry *) hash_search(parent_cache, &h, HASH_ENTER, &found);
	if (found)
		return;					/* known, or another row with the same hash */
	e->rtype = MemoryContextStrdup(cache_cxt, rtype);
	e->rid = MemoryContextStrdup(cache_cxt, rid);
	e->ptype = MemoryContextStrdup(cache_cxt, ptype);
	e->pid = MemoryContextStrdup(cache_cxt, pid);
	e->has_ws = rws != NULL;
	e->rws = rws != NULL ? MemoryContextStrdup(cache_cxt, rws) : NULL;
	e->filled = true;
}

/*
 * Does the resource have agent.resource_acl rows of its own (in the
 * workspace or for every workspace)?  With a custom ACL function (which
 * cannot say), true: the function decides on the row itself.
 */
bool
AccessHasOwnAcl(const char *workspace, const char *rtype, const char *rid, Snapshot snap)
{
	AclEntry   *e;
	int			i;

	if (OidIsValid(AccessGetAclFunction(snap)))
		return true;
	e = GetAclRows(rtype, rid, snap);
	for (i = 0; i < e->nrows; i++)
		if (e->rows[i].workspace == NULL || strcmp(e->rows[i].workspace, workspace) == 0)
			return true;
	return false;
}

/*
 * Is the role bound to the workspace as an analytics role (a row of
 * agent.reader_workspaces for a role it has the privileges of, as
 * agent._may_read_workspace reads it)?
 */
static bool
ReaderBound(Oid user, const char *workspace)
{
	PgaElevation elev;
	Oid			types[1] = {TEXTOID};
	Datum		vals[1];
	bool		bound = false;
	uint64		r;

	vals[0] = CStringGetTextDatum(workspace);
	AccessEnsureRels();	/* AccessSpiRun reads its Citus flags */
	AccessSpiRun(&elev, &plan_reader_bound,
		   "SELECT b.role_id::pg_catalog.oid FROM agent.reader_workspaces b "
		   "WHERE b.workspace_id OPERATOR(pg_catalog.=) $1", 1, types, vals);
	for (r = 0; r < SPI_processed && !bound; r++)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &isnull);

		bound = !isnull && has_privs_of_role(user, DatumGetObjectId(d));
	}
	AccessSpiDone(&elev);
	return bound;
}

/* does the role have the privileges of the named role (false if it does not exist)? */
static bool
HasRole(Oid user, const char *name)
{
	Oid			role = get_role_oid(name, true);

	return OidIsValid(role) && has_privs_of_role(user, role);
}

/*
 * The agents the session may name (docs/tenants.md, "Agents of other
 * workspaces"), decided from the current role and pg_agents.workspace alone,
 * never from the agent asked about:
 *
 *	bound to a workspace	its agents, when the role may act in it: a
 *							superuser, the application (agents_app), the
 *							worker's tool role (agents_tool), or an analytics
 *							role bound to it (agent.bind_reader); none for any
 *							other role (setting the workspace opens nothing)
 *	bound to none			every agent for a superuser (the worker's own
 *							statements, the extension's SECURITY DEFINER code,
 *							maintenance); none for any other role, as
 *							row-level security gives it no row
 *
 * and, besides, the session's own agent (pg_agents.actor = agent:<id>) when it
 * is of the session's workspace or the session is bound to none: what the
 * allowlist's readable set of that agent shows of it anyway, on the tables
 * the role may read (the allowlist only ever hides rows).  Every agent
 * outside the scope is answered exactly as an id no agent holds.
 */
static AccessScopeKind
AccessSessionScope(void)
{
	Oid			user = GetUserId();
	const char *ws = pg_agents_workspace != NULL ? pg_agents_workspace : "";
	const char *actor = pg_agents_actor != NULL ? pg_agents_actor : "";

	if (scope.valid && scope.user == user && strcmp(scope.workspace, ws) == 0 &&
		strcmp(scope.actor, actor) == 0)
		return scope.kind;
	scope.valid = false;
	if (ws[0] == '\0')
		scope.kind = superuser_arg(user) ? SCOPE_ALL : SCOPE_NONE;
	else if (superuser_arg(user) || HasRole(user, "agents_app") ||
			 HasRole(user, "agents_tool") || ReaderBound(user, ws))
		scope.kind = SCOPE_WORKSPACE;
	else
		scope.kind = SCOPE_NONE;
	scope.user = user;
	scope.workspace = MemoryContextStrdup(cache_cxt, ws);
	scope.actor = MemoryContextStrdup(cache_cxt, actor);
	scope.self = GucActorIsAgent(actor) ? strtoll(actor + 6, NULL, 10) : 0;
	scope.valid = true;
	return scope.kind;
}

/*
 * May the session name this agent (found or not)?  One comparison with the
 * scope AccessBegin decided: an agent of another workspace takes the path of
 * an id no agent holds, with no lookup after it.
 */
bool
AccessAgentVisible(const AgentEntry *ag)
{
	if (!ag->found)
		return false;
	if (scope.kind == SCOPE_ALL)
		return true;
	/* bound to a workspace: never another's agent, whoever asks */
	if (scope.workspace[0] != '\0' && strcmp(ag->workspace, scope.workspace) != 0)
		return false;
	return scope.kind == SCOPE_WORKSPACE || ag->id == scope.self;
}

/*
 * The start of every decision: the relations of this transaction, the active
 * snapshot (what needs it is named in the error), its caches, and the agents
 * the session may name.
 */
Snapshot
AccessBegin(const char *what)
{
	Snapshot	snap;

	AccessEnsureRels();
	if (!ActiveSnapshotSet())
		elog(ERROR, "pg_agents: %s needs an active snapshot", what);
	snap = GetActiveSnapshot();
	AccessEnsureCache(snap);
	(void) AccessSessionScope();
	return snap;
}

/* The OID of agent.access in this transaction (an installation's identity). */
Oid
AccessRelid(void)
{
	AccessEnsureRels();
	return AccessRelations.access;
}

/*
 * Does Citus manage one of the access relations?  Then their row triggers
 * fire on the nodes holding the shards, and the access generation of this
 * node's shared memory does not see their changes: nothing decided from
 * them may be kept across statements (src/access/allowlist_cache.c).
 */
bool
AccessOnCitus(void)
{
	AccessEnsureRels();
	return AccessRelsOnCitus();
}
