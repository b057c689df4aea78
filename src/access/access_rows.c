/*-------------------------------------------------------------------------
 *
 * access_rows.c
 *		The queries the access facts read (access_rows.h): for each, its
 *		relation, its keys and columns, the index the index backend scans
 *		(access_rows_index.c) and the statement the SPI backend runs
 *		(access_rows_spi.c), side by side, so that both read the same rows.
 *		The statements name the workspace when the table is distributed by
 *		it (a query routed to one shard), and qualify every operator.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"

#include "access_int.h"

/* The relations of the facts and their row sources, chosen once per
 * transaction by AccessEnsureRels (access_facts.c). */
AccessRels AccessRelations;

#define OPEQ " OPERATOR(pg_catalog.=) "

const AccessQueryDef AccessQueries[AQ_NQUERIES] = {
	[AQ_AGENT] = {
		"agent", &AccessRelations.agents, &AccessRelations.agents_pkey, &AccessRelations.agents_pkey_ix,
		2, {{AK_INDEX, INT8OID, NULL}, {AK_ROUTE, TEXTOID, NULL}},
		4, {&AccessRelations.ag_workspace, &AccessRelations.ag_owner, &AccessRelations.ag_status,
		&AccessRelations.ag_deleted},
		"SELECT a.workspace_id, a.owner_id, a.status, a.deleted_at FROM agent.agents a "
		"WHERE a.id" OPEQ "$1 AND a.workspace_id" OPEQ "$2",
		"SELECT a.workspace_id, a.owner_id, a.status, a.deleted_at FROM agent.agents a "
		"WHERE a.id" OPEQ "$1",
		true, false
	},
	[AQ_GROUPS] = {
		"groups", &AccessRelations.members, &AccessRelations.members_user_idx,
		&AccessRelations.members_user_ix,
		2, {{AK_INDEX, TEXTOID, NULL}, {AK_NULL_OR_EQ, TEXTOID, &AccessRelations.gm_workspace}},
		1, {&AccessRelations.gm_group},
		"SELECT m.group_id FROM agent.group_members m WHERE m.user_id" OPEQ "$1 "
		"AND (m.workspace_id IS NULL OR m.workspace_id" OPEQ "$2)",
		NULL, false, false
	},
	[AQ_GRANT] = {
		"grant", &AccessRelations.access, &AccessRelations.access_pkey, &AccessRelations.access_pkey_ix,
		4, {{AK_INDEX, INT8OID, NULL}, {AK_INDEX, TEXTOID, NULL}, {AK_INDEX, TEXTOID, NULL},
		{AK_ROUTE, TEXTOID, NULL}},
		1, {&AccessRelations.ac_access},
		"SELECT g.access FROM agent.access g WHERE g.agent_id" OPEQ "$1 "
		"AND g.resource_type" OPEQ "$2 AND g.resource_id" OPEQ "$3 AND g.workspace_id" OPEQ "$4",
		"SELECT g.access FROM agent.access g WHERE g.agent_id" OPEQ "$1 "
		"AND g.resource_type" OPEQ "$2 AND g.resource_id" OPEQ "$3",
		false, false
	},
	[AQ_GRANTS_OF_TYPE] = {
		"grants of a type", &AccessRelations.access, &AccessRelations.access_pkey,
		&AccessRelations.access_pkey_ix,
		3, {{AK_INDEX, INT8OID, NULL}, {AK_INDEX, TEXTOID, NULL}, {AK_ROUTE, TEXTOID, NULL}},
		2, {&AccessRelations.ac_id, &AccessRelations.ac_access},
		"SELECT g.resource_id, g.access FROM agent.access g WHERE g.agent_id" OPEQ "$1 "
		"AND g.resource_type" OPEQ "$2 AND g.workspace_id" OPEQ "$3",
		"SELECT g.resource_id, g.access FROM agent.access g WHERE g.agent_id" OPEQ "$1 "
		"AND g.resource_type" OPEQ "$2",
		false, false
	},
	[AQ_GRANTS_ALL] = {
		/* the grant sets (bounded: a set too big to keep is not loaded) */
		"every grant", &AccessRelations.access, &AccessRelations.access_pkey,
		&AccessRelations.access_pkey_ix,
		2, {{AK_INDEX, INT8OID, NULL}, {AK_ROUTE, TEXTOID, NULL}},
		3, {&AccessRelations.ac_type, &AccessRelations.ac_id, &AccessRelations.ac_access},
		"SELECT g.resource_type, g.resource_id, g.access FROM agent.access g "
		"WHERE g.agent_id" OPEQ "$1 AND g.workspace_id" OPEQ "$3 LIMIT $2",
		"SELECT g.resource_type, g.resource_id, g.access FROM agent.access g "
		"WHERE g.agent_id" OPEQ "$1 LIMIT $2",
		false, true
	},
	[AQ_ACL] = {
		"acl", &AccessRelations.acl, &AccessRelations.acl_pkey, &AccessRelations.acl_pkey_ix,
		2, {{AK_INDEX, TEXTOID, NULL}, {AK_INDEX, TEXTOID, NULL}},
		3, {&AccessRelations.acl_principal, &AccessRelations.acl_access, &AccessRelations.acl_workspace},
		"SELECT l.principal, l.access, l.workspace_id FROM agent.resource_acl l "
		"WHERE l.resource_type" OPEQ "$1 AND l.resource_id" OPEQ "$2",
		NULL, false, false
	},
	[AQ_ACL_OF_PRINCIPAL] = {
		"acl of a principal", &AccessRelations.acl, &AccessRelations.acl_principal_idx,
		&AccessRelations.acl_principal_ix,
		2, {{AK_INDEX, TEXTOID, NULL}, {AK_EQ, TEXTOID, &AccessRelations.acl_type}},
		1, {&AccessRelations.acl_id},
		"SELECT l.resource_id FROM agent.resource_acl l WHERE l.principal" OPEQ "$1 "
		"AND l.resource_type" OPEQ "$2 LIMIT $3",
		NULL, false, true
	},
	[AQ_SHARED_OF_TYPE] = {
		"shared of a type", &AccessRelations.acl, &AccessRelations.acl_principal_idx,
		&AccessRelations.acl_principal_ix,
		3, {{AK_INDEX, TEXTOID, NULL}, {AK_EQ, TEXTOID, &AccessRelations.acl_type},
		{AK_EQ, TEXTOID, &AccessRelations.acl_workspace}},
		1, {&AccessRelations.acl_id},
		"SELECT l.resource_id FROM agent.resource_acl l WHERE l.principal" OPEQ "$1 "
		"AND l.resource_type" OPEQ "$2 AND l.workspace_id" OPEQ "$3",
		NULL, false, false
	},
	[AQ_CONFIG] = {
		"config", &AccessRelations.config, NULL, NULL,
		0, {{0}},
		1, {&AccessRelations.cf_function},
		"SELECT c.acl_function::pg_catalog.oid FROM agent.access_config c",
		NULL, false, false
	},
};

/*
 * The backend of a query's relation in this transaction (AccessEnsureRels;
 * kept by an invalidation until the next look-up, so that a held read is
 * released by the backend that holds it).
 */
const AccessRowsOps *
AccessRowsSource(AccessQuery qid)
{
	Assert(AccessRelations.src[qid] != NULL);
	return AccessRelations.src[qid];
}

/* text column col of the current row as a C string in cxt, NULL if null */
char *
AccessRowsText(AccessRows *rs, int col, MemoryContext cxt)
{
	bool		isnull;
	Datum		d = AccessRowsGet(rs, col, &isnull);
	MemoryContext old;
	char	   *s;

	if (isnull)
		return NULL;
	old = MemoryContextSwitchTo(cxt);
	s = TextDatumGetCString(d);
	MemoryContextSwitchTo(old);
	return s;
}
