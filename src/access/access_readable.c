/*-------------------------------------------------------------------------
 *
 * access_readable.c
 *		The readable set of the allowlist (src/access/allowlist_cache.c): the ids of the
 *		resources of a type that an agent may read (or edit), decided as
 *		agent.can_access decides them.
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
#include "catalog/pg_type.h"
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
#include "utils/array.h"
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

static SPIPlanPtr plan_grants_of_parent = NULL;
static SPIPlanPtr plan_shared_parents = NULL;
static Oid	shared_types[2] = {TEXTOID, TEXTOID};

/*
 * Whether one resource is in the agent's readable set, decided as the set
 * decides it (the autonomous decision of agent.can_access) under the active
 * snapshot, with a direct probe of the grant: for the few candidates of a
 * selective search, when the set is not kept (src/access/allowlist_cache.c).  1 or 0; -1
 * when a custom ACL function is configured (the set follows other rules).
 */
int
AccessReadableOne(int64 agent_id, const char *rtype, const char *rid, bool edit)
{
	Snapshot	snap;
	AgentEntry *ag;
	int			grant;

	snap = AccessBegin("the readable set");
	if (OidIsValid(AccessGetAclFunction(snap)))
		return -1;
	ag = AccessGetAgent(agent_id, snap);
	if (!AccessAgentVisible(ag) || ag->deleted || ag->suspended)
		return 0;
	grant = ag->set != NULL ? AccessGrantSetLookup(ag->set, rtype, rid) :
		AccessGetGrant(agent_id, rtype, rid, snap);
	return ReasonAllows(AccessDecideAutonomous(ag, rtype, rid, edit ? LEVEL_EDIT : LEVEL_READ,
											   grant, snap, false, NULL)) ? 1 : 0;
}

/*
 * What the readable set reads of an agent's row, under the active snapshot:
 * its owner and workspace (palloc'd, "" when there is none) and whether it is
 * live (neither deleted nor suspended: else its set is empty); false for an
 * unknown agent.  A kept set depends on the owner through the owner's groups,
 * and is emptied or restored by a change of liveness (src/access/allowlist_cache.c).
 */
bool
AccessAgentState(int64 agent_id, char **owner, char **workspace, bool *live)
{
	Snapshot	snap = AccessBegin("the readable set");
	AgentEntry *ag = AccessGetAgent(agent_id, snap);
	bool		visible = AccessAgentVisible(ag);

	*owner = pstrdup(visible && ag->owner != NULL ? ag->owner : "");
	*workspace = pstrdup(visible && ag->workspace != NULL ? ag->workspace : "");
	*live = visible && !ag->deleted && !ag->suspended;
	return visible;
}

/*
 * May the session name the agent (docs/tenants.md)?  False for an id no
 * agent holds and, on the same path, for an agent of another workspace than
 * the session's, or any agent for a session bound to none that is not a
 * superuser's (AccessSessionScope): the allowlist answers them all with an
 * empty set, before any kept set is looked at.
 */
bool
AccessAgentIdVisible(int64 agent_id)
{
	Snapshot	snap = AccessBegin("the readable set");

	return AccessAgentVisible(AccessGetAgent(agent_id, snap));
}

/*
 * The ids of the resources of a type that hold an agent.resource_acl row for
 * a principal, under the active snapshot, palloc'd into ids (at most max);
 * their number, or -1 when there are more (or the principal's rows of other
 * types are too many to look through): what a change of a user's groups may
 * change in a readable set (src/access/allowlist_cache.c).
 */
int
AccessAclResourcesOf(const char *principal, const char *rtype, int max, char **ids)
{
	Snapshot	snap = AccessBegin("the readable set");
	AccessRows	rs;
	AccessKey	keys[2];
	int			n = 0;

	keys[0] = (AccessKey) {principal, 0};
	keys[1] = (AccessKey) {rtype, 0};
	AccessRowsBegin(&rs, AQ_ACL_OF_PRINCIPAL, keys, snap, max);
	while (n >= 0 && AccessRowsNext(&rs))
	{
		char	   *id = AccessRowsText(&rs, 0, CurrentMemoryContext);

		if (id == NULL)
			continue;
		if (n >= max)
			n = -1;
		else
			ids[n++] = id;
	}
	if (rs.truncated)
		n = -1;
	AccessRowsEnd(&rs);
	return n;
}

/* ------------------------------------------------------------------------
 * The readable set
 * ------------------------------------------------------------------------
 */

/* qsort/bsearch comparator of C strings */
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

/* Appends an id to the list (grown by doubling). */
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
 * The rows of collections (a type registered with a parent) the agent may
 * access through its grant on their collection: for each table, the agent's
 * grants on collections of the parent type (one query of agent.access), then
 * the table's rows of those collections (one query by parent_column = ANY),
 * each without a grant of its own (those are decided already: direct, sorted)
 * decided by the autonomous rule, which then finds the collection's grant
 * and the ACL that applies (the row's own, else the collection's).  With a
 * workspace_shared grant (want_shared), the collections of the parent type
 * shared with the agent's workspace count too (the rule decides their rows
 * by the share and the owner's ACL, as it decides a shared resource).
 */
static void
AddRowsOfCollections(AgentEntry *ag, const char *rtype, int mode, Snapshot snap,
					 bool want_shared, int nparents, const char **ptypes, const char **rows_sqls,
					 IdList *direct, IdList *ids)
{
	int			t;

	for (t = 0; t < nparents; t++)
	{
		PgaElevation elev;
		Oid			types[2] = {INT8OID, TEXTOID};
		Datum		vals[2];
		Datum	   *colls;
		int			ncolls = 0;
		IdList		rows = {NULL, 0, 0};
		IdList		parents = {NULL, 0, 0};
		IdList		wss = {NULL, 0, 0};
		MemoryContext cxt = CurrentMemoryContext;
		uint64		r;
		int			i;
		int			rc;

		vals[0] = Int64GetDatum(ag->id);
		vals[1] = CStringGetTextDatum(ptypes[t]);
		AccessEnsureRels();	/* AccessSpiRun reads its Citus flags */
		AccessSpiRun(&elev, &plan_grants_of_parent,
					 "SELECT g.resource_id FROM agent.access g "
					 "WHERE g.agent_id OPERATOR(pg_catalog.=) $1 AND g.resource_type OPERATOR(pg_catalog.=) $2 "
					 "AND g.access OPERATOR(pg_catalog.=) ANY ('{read,edit}'::pg_catalog.text[])",
					 2, types, vals);
		colls = MemoryContextAlloc(cxt, sizeof(Datum) * (SPI_processed + 1));
		for (r = 0; r < SPI_processed; r++)
		{
			bool		isnull;
			Datum		d = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &isnull);

			if (!isnull)
			{
				MemoryContext old = MemoryContextSwitchTo(cxt);

				colls[ncolls++] = PointerGetDatum(DatumGetTextPCopy(d));
				MemoryContextSwitchTo(old);
			}
		}
		/* with a workspace_shared grant: the collections shared with the workspace */
		if (want_shared)
		{
			Datum		svals[2];

			svals[0] = CStringGetTextDatum(ptypes[t]);
			svals[1] = CStringGetTextDatum(ag->workspace);
			rc = SpiUtilExecPlan(&plan_shared_parents,
								 "SELECT l.resource_id FROM agent.resource_acl l "
								 "WHERE l.principal OPERATOR(pg_catalog.=) 'workspace' "
								 "AND l.resource_type OPERATOR(pg_catalog.=) $1 "
								 "AND l.workspace_id OPERATOR(pg_catalog.=) $2",
								 2, shared_types, svals, NULL, true, 0);
			if (rc != SPI_OK_SELECT)
				elog(ERROR, "pg_agents: collections shared with the workspace lookup failed: %s",
					 SPI_result_code_string(rc));
			if (SPI_processed > 0)
				colls = repalloc(colls, sizeof(Datum) * (ncolls + SPI_processed + 1));
			for (r = 0; r < SPI_processed; r++)
			{
				bool		isnull;
				Datum		d = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &isnull);

				if (!isnull)
				{
					MemoryContext old = MemoryContextSwitchTo(cxt);

					colls[ncolls++] = PointerGetDatum(DatumGetTextPCopy(d));
					MemoryContextSwitchTo(old);
				}
			}
		}
		if (ncolls > 0)
		{
			Oid			atypes[2] = {TEXTARRAYOID, TEXTOID};
			Datum		avals[2];

			/* $2: the agent's workspace (a table with a workspace_column keeps its rows) */
			avals[0] = PointerGetDatum(construct_array(colls, ncolls, TEXTOID, -1, false,
													   TYPALIGN_INT));
			avals[1] = CStringGetTextDatum(ag->workspace ? ag->workspace : "");
			rc = SPI_execute_with_args(rows_sqls[t], 2, atypes, avals, NULL, true, 0);
			if (rc != SPI_OK_SELECT)
				elog(ERROR, "pg_agents: rows of collections lookup failed: %s",
					 SPI_result_code_string(rc));
			for (r = 0; r < SPI_processed; r++)
			{
				char	   *rid = AccessSpiText(r, 1, cxt);
				char	   *pid = AccessSpiText(r, 2, cxt);
				char	   *rws = AccessSpiText(r, 3, cxt);

				MemoryContext old;

				if (rid == NULL || pid == NULL)
					continue;
				/* the lists outlive SPI: grow them in the caller's context */
				old = MemoryContextSwitchTo(cxt);
				IdListAdd(&rows, rid);
				IdListAdd(&parents, pid);
				IdListAdd(&wss, rws);
				MemoryContextSwitchTo(old);
			}
		}
		AccessSpiDone(&elev);
		/* decided outside SPI: the decision may itself read through SPI */
		for (i = 0; i < rows.n; i++)
		{
			char	   *rid = rows.items[i];

			CHECK_FOR_INTERRUPTS();
			if (direct->n > 0 &&
				bsearch(&rid, direct->items, direct->n, sizeof(char *), CompareCStrings) != NULL)
				continue;
			AccessRememberParent(rtype, rid, ptypes[t], parents.items[i], wss.items[i]);
			if (ReasonAllows(AccessDecideAutonomous(ag, rtype, rid, mode, LEVEL_NONE, snap,
													false, NULL)))
				IdListAdd(ids, rid);
		}
	}
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
 *	- for a type registered with a parent (rows of collections), each row of
 *	  a collection the agent is granted that holds no direct grant
 *	  (AddRowsOfCollections).
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
	AccessRows	rs;
	AccessKey	keys[3];
	int			nparents;
	const char **ptypes;
	const char **rows_sqls;
	bool		want_direct;

	*n = 0;
	snap = AccessBegin("the readable set");
	*custom_acl = OidIsValid(AccessGetAclFunction(snap));
	ag = AccessGetAgent(agent_id, snap);
	if (!AccessAgentVisible(ag) || ag->deleted || ag->suspended)
		return NULL;
	want_shared = !*custom_acl &&
		AccessGetWorkspaceGrant(ag, snap) != LEVEL_NONE;
	/*
	 * rows of collections: the set follows the application's rows, whose
	 * changes the registration's trigger reports (agent._access_changed), and
	 * the collections' grants and ACL (a kept set of such a type is computed
	 * afresh after them: PatchCollect)
	 */
	nparents = AccessParentTables(rtype, &ptypes, &rows_sqls);
	want_direct = want_shared || nparents > 0;

	/* the direct grants of the type, each decided with its level */
	keys[0] = (AccessKey) {NULL, agent_id};
	keys[1] = (AccessKey) {rtype, 0};
	keys[2] = (AccessKey) {ag->workspace, 0};
	AccessRowsBegin(&rs, AQ_GRANTS_OF_TYPE, keys, snap, 0);
	while (AccessRowsNext(&rs))
	{
		bool		isnull;
		Datum		d;
		int			level;
		char	   *rid;

		CHECK_FOR_INTERRUPTS();
		d = AccessRowsGet(&rs, 1, &isnull);
		level = isnull ? LEVEL_NONE : TextLevel(d);
		if (level == LEVEL_NONE)
			continue;
		rid = AccessRowsText(&rs, 0, CurrentMemoryContext);
		if (rid == NULL)
			continue;
		/* a direct grant decides its resource, allowed or not */
		if (want_direct)
			IdListAdd(&direct, rid);
		if (ReasonAllows(AccessDecideAutonomous(ag, rtype, rid, mode, level, snap, false, NULL)))
			IdListAdd(&ids, rid);
	}
	AccessRowsEnd(&rs);

	/* what is shared with the whole workspace and holds no direct grant */
	if (want_direct)
	{
		if (direct.n > 1)
			qsort(direct.items, direct.n, sizeof(char *), CompareCStrings);
	}
	if (nparents > 0)
		AddRowsOfCollections(ag, rtype, mode, snap, want_shared, nparents, ptypes, rows_sqls,
							 &direct, &ids);
	if (want_shared)
	{
		/* shared with the agent's own workspace, by name */
		keys[0] = (AccessKey) {"workspace", 0};
		keys[1] = (AccessKey) {rtype, 0};
		keys[2] = (AccessKey) {ag->workspace, 0};
		AccessRowsBegin(&rs, AQ_SHARED_OF_TYPE, keys, snap, 0);
		while (AccessRowsNext(&rs))
		{
			char	   *rid;

			CHECK_FOR_INTERRUPTS();
			rid = AccessRowsText(&rs, 0, CurrentMemoryContext);
			if (rid == NULL)
				continue;
			if ((direct.n > 0 &&
				 bsearch(&rid, direct.items, direct.n, sizeof(char *), CompareCStrings) != NULL) ||
				!ReasonAllows(AccessDecideAutonomous(ag, rtype, rid, mode, LEVEL_NONE, snap, false, NULL)))
			{
				pfree(rid);
				continue;
			}
			IdListAdd(&ids, rid);
		}
		AccessRowsEnd(&rs);
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
AccessReadableIds(int64 agent_id, const char *rtype, bool edit, int *n, bool *custom_acl)
{
	char	  **ids;

	AccessEnsureRels();
	if (!ActiveSnapshotSet())
		elog(ERROR, "pg_agents: the readable set needs an active snapshot");
	/* one read of agent.resource_acl serves the owner's ACL of every candidate */
	AccessRowsHold(AQ_ACL, GetActiveSnapshot());
	PG_TRY();
	{
		ids = ReadableIds(agent_id, rtype, edit, n, custom_acl);
	}
	PG_CATCH();
	{
		AccessRowsRelease(AQ_ACL, true);
		PG_RE_THROW();
	}
	PG_END_TRY();
	AccessRowsRelease(AQ_ACL, false);
	return ids;
}

/*
 * Is rtype registered as the rows of collections of type ptype (of any type
 * when ptype is NULL)?  A readable set of such a type changes with the
 * grants and the ACL of those collections, which a patch of the rows' own
 * ids does not cover (src/access/allowlist_cache.c, PatchCollect).
 */
bool
AccessTypeHasParent(const char *rtype, const char *ptype)
{
	const char **ptypes;
	const char **rows_sqls;
	int			n = AccessParentTables(rtype, &ptypes, &rows_sqls);
	int			i;

	for (i = 0; i < n; i++)
		if (ptype == NULL || strcmp(ptypes[i], ptype) == 0)
			return true;
	return false;
}
