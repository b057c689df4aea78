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
 *	 agent			unknown, or one the session may not name (another
 *					workspace's: AccessSessionScope, docs/tenants.md) ->
 *					agent_not_found, the same row; deleted -> agent_deleted;
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
 * there is no SPI here for a local table: every lookup is a direct index scan
 * on the tables' keys (the row source of access_rows.h; SPI only for a table
 * Citus manages, or with pg_agents.access_backend = spi); relation and index
 * OIDs are looked up, and the relations locked, once per transaction.  What is read is cached for as long as the active snapshot
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

#include "access.h"
#include "access_int.h"
#include "util/compat.h"
#include "util/guc.h"

PG_FUNCTION_INFO_V1(pg_agents_can_access);
PG_FUNCTION_INFO_V1(pg_agents_explain_access);

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
	"invalid_regime",
	"other_workspace"
};

/* ------------------------------------------------------------------------
 * Argument parsing
 * ------------------------------------------------------------------------
 */
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

/*
 * Errors out unless the current role may vouch for a user id (see above).
 */
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

/*
 * Reads the six arguments of can_access/explain_access; a user id requires a vouching role.
 */
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

/*
 * Raises the error of an argument reason code (can_access errors, explain_access explains).
 */
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

/* ------------------------------------------------------------------------
 * The SQL entry points
 * ------------------------------------------------------------------------
 */
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
	PG_RETURN_BOOL(ReasonAllows(AccessDecide(&a, false, &detail)));
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
		r = AccessDecide(&a, true, &detail);
	values[0] = BoolGetDatum(ReasonAllows((AccessReason) r));
	values[1] = CStringGetTextDatum(reason_names[r]);
	values[2] = CStringGetTextDatum(detail ? detail : "");
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
