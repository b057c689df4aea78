/*-------------------------------------------------------------------------
 *
 * access_decide.c
 *		The access decision: the rules of agent.can_access (listed in
 *		access.c) applied to the facts of access_facts.c.
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

#include "access.h"
#include "access_int.h"
#include "util/compat.h"
#include "util/guc.h"

/* "read" or "edit", for the details */
static const char *
ModeName(int mode)
{
	return mode == LEVEL_EDIT ? "edit" : "read";
}

/*
 * The autonomous decision given the level of the grant that applies (on
 * rtype/rid, LEVEL_NONE if none), the owner's ACL and the workspace share
 * read on atype/aid (the resource itself, or a row's collection).
 */
static AccessReason
DecideOn(AgentEntry *ag, const char *rtype, const char *rid,
		 const char *atype, const char *aid, int mode,
		 int grant, Snapshot snap, bool want_detail, char **detail)
{
	if (grant != LEVEL_NONE)
	{
		if (mode == LEVEL_EDIT && grant < LEVEL_EDIT)
		{
			/* the workspace_shared path may still allow the edit */
			if (AccessGetWorkspaceGrant(ag, snap) >= LEVEL_EDIT &&
				AccessWorkspaceShares(ag->workspace, atype, aid, LEVEL_EDIT, snap) &&
				AccessUserAllows(ag->workspace, ag->owner, atype, aid, LEVEL_EDIT, snap))
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
		if (AccessUserAllows(ag->workspace, ag->owner, atype, aid, mode, snap))
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

	grant = AccessGetWorkspaceGrant(ag, snap);
	if (grant != LEVEL_NONE &&
		AccessWorkspaceShares(ag->workspace, atype, aid, LEVEL_READ, snap))
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
			if (!AccessWorkspaceShares(ag->workspace, atype, aid, LEVEL_EDIT, snap))
			{
				if (want_detail)
					*detail = psprintf("%s %s is shared with the workspace read-only",
									   rtype, rid);
				return AR_OWNER_DENIED;
			}
		}
		if (AccessUserAllows(ag->workspace, ag->owner, atype, aid, mode, snap))
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
 * The ACL that decides for a resource: its own agent.resource_acl rows, or,
 * for a row of a collection without any, its collection's.
 */
static void
AclTarget(const char *workspace, const char *rtype, const char *rid,
		  const char *ptype, const char *pid, Snapshot snap,
		  const char **atype, const char **aid)
{
	if (ptype == NULL || AccessHasOwnAcl(workspace, rtype, rid, snap))
	{
		*atype = rtype;
		*aid = rid;
	}
	else
	{
		*atype = ptype;
		*aid = pid;
	}
}

/*
 * The autonomous decision for an active agent, given the level of its direct
 * grant on the resource (LEVEL_NONE if none).  Shared by can_access and the
 * readable set, so that both follow exactly the same rules.  A row of a
 * collection (agent.register_resource_table's parent_type) without a grant
 * of its own is decided by the agent's grant on its collection, and by its
 * collection's ACL when it has no ACL row of its own.
 */
AccessReason
AccessDecideAutonomous(AgentEntry *ag, const char *rtype, const char *rid, int mode,
					   int grant, Snapshot snap, bool want_detail, char **detail)
{
	const char *ptype = NULL;
	const char *pid = NULL;
	const char *atype;
	const char *aid;
	const char *gtype = rtype;
	const char *gid = rid;
	AccessReason r;

	/* a row of another workspace in a table that holds several: never */
	if (AccessRowOtherWorkspace(rtype, rid, ag->workspace, snap))
	{
		if (want_detail)
			*detail = psprintf("%s %s is a row of another workspace than agent %lld's",
							   rtype, rid, (long long) ag->id);
		return AR_OTHER_WORKSPACE;
	}
	if (AccessGetParent(rtype, rid, snap, &ptype, &pid) && grant == LEVEL_NONE)
	{
		int			pgrant = AccessAgentGrant(ag, ptype, pid, snap);

		if (pgrant != LEVEL_NONE)
		{
			grant = pgrant;
			gtype = ptype;
			gid = pid;
		}
	}
	AclTarget(ag->workspace, rtype, rid, ptype, pid, snap, &atype, &aid);
	r = DecideOn(ag, gtype, gid, atype, aid, mode, grant, snap, want_detail, detail);
	if (want_detail && ptype != NULL)
		*detail = psprintf("%s; %s %s is a row of %s %s: %s, %s",
						   *detail, rtype, rid, ptype, pid,
						   gtype == ptype ? "the grant came from the collection" :
						   grant != LEVEL_NONE ? "the row's own grant applies" :
						   "neither the row nor the collection is granted",
						   atype == ptype ? "the collection's ACL applies (the row has no ACL row of its own)" :
						   "the row's own ACL rows apply");
	return r;
}


/*
 * The decision for checked arguments.  detail is filled only when want_detail.
 */
AccessReason
AccessDecide(AccessArgs *a, bool want_detail, char **detail)
{
	Snapshot	snap;
	AgentEntry *ag;

	snap = AccessBegin("can_access");

	/*
	 * An agent the session may not name (another workspace's, or any for a
	 * session bound to none that is not a superuser's) is answered as an id
	 * no agent holds, on the same path: the same lookup, then this test.
	 */
	ag = AccessGetAgentFor(a->agent_id, a->rtype, a->rid, snap);
	if (!AccessAgentVisible(ag))
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
		const char *ptype = NULL;
		const char *pid = NULL;
		const char *atype;
		const char *aid;

		if (AccessRowOtherWorkspace(a->rtype, a->rid, ag->workspace, snap))
		{
			if (want_detail)
				*detail = psprintf("manual run: %s %s is a row of another workspace than agent %lld's",
								   a->rtype, a->rid, (long long) a->agent_id);
			return AR_OTHER_WORKSPACE;
		}
		if (!AccessGetParent(a->rtype, a->rid, snap, &ptype, &pid))
			ptype = NULL;
		AclTarget(ag->workspace, a->rtype, a->rid, ptype, pid, snap, &atype, &aid);
		if (AccessUserAllows(ag->workspace, a->user, atype, aid, a->mode, snap))
		{
			if (want_detail)
				*detail = psprintf("manual run: user %s may %s %s %s%s%s%s",
								   a->user, ModeName(a->mode), a->rtype, a->rid,
								   atype != a->rtype ? " through its collection " : "",
								   atype != a->rtype ? atype : "",
								   atype != a->rtype ? psprintf(" %s", aid) : "");
			return AR_GRANTED;
		}
		if (want_detail)
			*detail = psprintf("manual run: user %s may not %s %s %s%s%s%s",
							   a->user, ModeName(a->mode), a->rtype, a->rid,
							   atype != a->rtype ? " through its collection " : "",
							   atype != a->rtype ? atype : "",
							   atype != a->rtype ? psprintf(" %s", aid) : "");
		return AR_USER_DENIED;
	}

	if (ag->suspended)
	{
		if (want_detail)
			*detail = psprintf("agent %lld is suspended: it runs no autonomous work",
							   (long long) a->agent_id);
		return AR_AGENT_SUSPENDED;
	}

	return AccessDecideAutonomous(ag, a->rtype, a->rid, a->mode,
								  AccessAgentGrant(ag, a->rtype, a->rid, snap),
								  snap, want_detail, detail);
}
