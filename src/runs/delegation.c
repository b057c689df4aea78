/*-------------------------------------------------------------------------
 *
 * delegation.c
 *		agent.delegate / agent.try_delegate: the checks that decide whether a
 *		running run may hand a task to another agent, and the child run.
 *
 * The parent run must be of the session's workspace (agent._workspace_ok):
 * a run of another workspace is an unknown run (42704), before any lock.
 *
 * Checks, in order (the first that fails decides):
 *   1. the parent run is running                    55000 parent_not_running
 *   2. the child is in the parent agent's list      42501 not_listed
 *   3. the child exists in the same workspace       42704 agent_not_found
 *   4. the child is not deleted                     42704 agent_deleted
 *   5. the child is not suspended                   55000 agent_suspended
 *   6. the child agent is not already on the chain  42P19 cycle
 *      from the root run to the parent
 *   7. parent depth + 1 <= the depth limit          54000 depth_limit
 *   8. the child's budget fits in the parent's      54000 budget_exceeded
 *      remaining envelope (fail closed)
 *
 * A refusal is always written to the server log.  In raise mode it is an
 * error (the caller's transaction, and anything it wrote, rolls back); in
 * try mode it is recorded (a denied audit row, a denied step on the parent)
 * and returned as {"ok": false, ...}.
 *
 * Attachments: each resource reference is checked against the child's own
 * access (agent._delegation_attachment): one the child agent may not read
 * autonomously reaches the child run, and the delegate step, only as
 * {"resource_type", "resource_id", "withheld": <reason>}.
 *
 * Steps: in try mode (agent.try_delegate, the executor API) an accepted
 * delegation also gets a delegate step on the parent, whose output becomes
 * the child's result when the child ends.  agent.delegate writes no step:
 * its caller records its own tool step (as the worker does).
 *
 * Budgets: the parent's budget is its token_budget or its agent's
 * default_token_budget; its remaining envelope is budget - tokens_total -
 * tokens_reserved.  A NULL child budget takes the smaller of the envelope
 * and the child agent's default_token_budget.  The child's budget is added
 * to the parent's tokens_reserved; agent.add_usage consumes the reservation
 * as the child spends it and agent.finish_run returns what is left.
 *
 * Every multi-run change locks the tree's root run first (sql/src/300_runs.sql).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"

#include "util/guc.h"
#include "util/spi_util.h"

PG_FUNCTION_INFO_V1(pg_agents_delegation_depth_limit);
PG_FUNCTION_INFO_V1(pg_agents_delegate);

enum
{
	Q_ROOT,
	Q_WSOK,
	Q_LOCK,
	Q_ATTACH,
	Q_PARENT,
	Q_CHILD,
	Q_CHAIN,
	Q_ENQUEUE,
	Q_CHILD_RUN,
	Q_RESERVE,
	Q_GRANTED,
	Q_REFUSED,
	Q_COUNT
};

static SPIPlanPtr plans[Q_COUNT];

typedef struct Refusal
{
	const char *reason;
	int			sqlstate;
	char	   *message;
	char	   *detail;
	char	   *hint;
} Refusal;

/* The kept plan of delegation statement which (prepared on first use). */
static SPIPlanPtr
GetPlan(int which, const char *sql, int nargs, Oid *types)
{
	return SpiUtilKeptPlan(&plans[which], sql, nargs, types);
}

/* executes a delegation statement; errors unless SPI answers expected */
static void
Exec(SPIPlanPtr plan, Datum *values, const char *nulls, int expected)
{
	SpiUtilExecExpect(plan, values, nulls, false, expected, "delegation query");
}

/* column col of the first row of the last SPI result */
static Datum
Col(int col, bool *isnull)
{
	return SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col, isnull);
}

/* Col as int64, 0 for NULL */
static int64
ColInt64(int col)
{
	bool		isnull;
	Datum		d = Col(col, &isnull);

	return isnull ? 0 : DatumGetInt64(d);
}

/* Col as a C string, NULL for NULL */
static char *
ColText(int col)
{
	bool		isnull;
	Datum		d = Col(col, &isnull);

	return isnull ? NULL : TextDatumGetCString(d);
}

/* agent.delegation_depth_limit() RETURNS int */
Datum
pg_agents_delegation_depth_limit(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(GucEffectiveDelegationDepth());
}

/* the arguments of one agent._delegate call, and the caller's memory context */
typedef struct DelegateCall
{
	int64		parent_id;
	int64		child_id;
	char	   *task;
	Jsonb	   *attachments;	/* or NULL */
	bool		budget_given;
	int64		budget_asked;
	bool		raise;
	MemoryContext callerCxt;
} DelegateCall;

/* the parent run as read (and locked) by LockParent */
typedef struct ParentRun
{
	char	   *status;
	int			depth;
	int64		agent;
	char	   *workspace;
	int64		budget;
	int64		total;
	int64		reserved;
	bool		listed;			/* the child is in the parent agent's list */
	int			priority;
	int64		remaining;		/* budget - total - reserved */
} ParentRun;

/* a refusal: the first check that fails decides (reason NULL: none yet) */
static void
Refuse(Refusal *r, const char *reason, int sqlstate, char *message, char *detail, char *hint)
{
	r->reason = reason;
	r->sqlstate = sqlstate;
	r->message = message;
	r->detail = detail;
	r->hint = hint;
}

/* the SQL arguments, checked; errors for a malformed call */
static void
ParseDelegateCall(FunctionCallInfo fcinfo, DelegateCall *dc)
{
	dc->budget_given = !PG_ARGISNULL(4);
	dc->budget_asked = dc->budget_given ? PG_GETARG_INT64(4) : 0;
	dc->raise = PG_ARGISNULL(5) ? true : PG_GETARG_BOOL(5);
	dc->callerCxt = CurrentMemoryContext;
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("parent run id must not be null")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("child agent id must not be null")));
	dc->parent_id = PG_GETARG_INT64(0);
	dc->child_id = PG_GETARG_INT64(1);
	dc->task = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
	if (dc->task == NULL || dc->task[strspn(dc->task, " \t\r\n")] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("delegated task must not be empty"),
				 errdetail("The task is the only instruction the child run receives.")));
	dc->attachments = PG_ARGISNULL(3) ? NULL : PG_GETARG_JSONB_P(3);
	if (dc->attachments != NULL &&
		(!JB_ROOT_IS_ARRAY(dc->attachments) || JB_ROOT_IS_SCALAR(dc->attachments)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("attachments must be a json array")));
	if (dc->budget_given && dc->budget_asked < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("token budget must not be negative")));
}

/*
 * 0. finds the tree and its workspace (a run of another workspace than the
 * session's is an unknown run: refused before any lock), locks its root,
 * then reads and locks the parent; every statement after the first names
 * the workspace (Citus routes by it).
 */
static void
LockParent(const DelegateCall *dc, ParentRun *p)
{
	Oid			t1[1] = {INT8OID};
	Oid			t2[2] = {INT8OID, TEXTOID};
	Oid			t3[3] = {INT8OID, INT8OID, TEXTOID};
	Oid			tw[1] = {TEXTOID};
	Datum		v[3];
	bool		isnull;
	Datum		ws;
	int64		root;

	v[0] = Int64GetDatum(dc->parent_id);
	Exec(GetPlan(Q_ROOT, "SELECT r.workspace_id, coalesce(rt.id, r.id)"
				 "  FROM agent.runs r LEFT JOIN agent.runs rt ON rt.workspace_id = r.workspace_id AND rt.id = r.root_run_id"
				 " WHERE r.id = $1", 1, t1),
		 v, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("run %lld does not exist", (long long) dc->parent_id)));
	ws = SPI_datumTransfer(Col(1, &isnull), false, -1);
	root = ColInt64(2);
	/* (the tenant check apart: it reads the session's setting, here) */
	v[0] = ws;
	Exec(GetPlan(Q_WSOK, "SELECT agent._workspace_ok($1)", 1, tw), v, NULL, SPI_OK_SELECT);
	if (!DatumGetBool(Col(1, &isnull)) || isnull)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("run %lld does not exist", (long long) dc->parent_id)));
	v[0] = Int64GetDatum(root);
	v[1] = ws;
	Exec(GetPlan(Q_LOCK, "SELECT 1 FROM agent.runs WHERE workspace_id = $2 AND id = $1 FOR UPDATE", 2, t2),
		 v, NULL, SPI_OK_SELECT);

	v[0] = Int64GetDatum(dc->parent_id);
	v[1] = Int64GetDatum(dc->child_id);
	v[2] = ws;
	Exec(GetPlan(Q_PARENT,
				 "SELECT r.status, r.depth, r.agent_id, r.workspace_id,"
				 "       coalesce(r.token_budget, a.default_token_budget),"
				 "       r.tokens_total, r.tokens_reserved,"
				 "       EXISTS (SELECT 1 FROM pg_catalog.jsonb_array_elements(a.delegation) e"
				 "                WHERE e = pg_catalog.to_jsonb($2::pg_catalog.int8) OR e = pg_catalog.to_jsonb($2::pg_catalog.text)),"
				 "       r.priority"
				 "  FROM agent.runs r JOIN agent.agents a ON a.workspace_id = r.workspace_id AND a.id = r.agent_id"
				 " WHERE r.workspace_id = $3 AND r.id = $1 FOR UPDATE OF r", 3, t3),
		 v, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("run %lld does not exist", (long long) dc->parent_id)));
	p->status = ColText(1);
	p->depth = DatumGetInt32(Col(2, &isnull));
	p->agent = ColInt64(3);
	p->workspace = ColText(4);
	p->budget = ColInt64(5);
	p->total = ColInt64(6);
	p->reserved = ColInt64(7);
	p->listed = DatumGetBool(Col(8, &isnull));
	p->priority = DatumGetInt16(Col(9, &isnull));
	p->remaining = p->budget - p->total - p->reserved;

	MemoryContextSwitchTo(dc->callerCxt);
}

/* 1-2. the parent must be at work, and delegate only to listed agents */
static void
CheckParent(const DelegateCall *dc, const ParentRun *p, Refusal *r)
{
	if (strcmp(p->status, "running") != 0)
		Refuse(r, "parent_not_running", ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
			   psprintf("run %lld is not running", (long long) dc->parent_id),
			   psprintf("The run is %s; only a running run may delegate.", p->status), NULL);
	else if (!p->listed)
		Refuse(r, "not_listed", ERRCODE_INSUFFICIENT_PRIVILEGE,
			   psprintf("agent %lld may not delegate to agent %lld",
						(long long) p->agent, (long long) dc->child_id),
			   psprintf("Agent %lld is not in the delegation list of agent %lld.",
						(long long) dc->child_id, (long long) p->agent), NULL);
}

/*
 * 3-5. the child agent exists in the parent's workspace, is not deleted and
 * not suspended; *child_budget is its budget (checked in CheckBudget).
 */
static void
CheckChildAgent(const DelegateCall *dc, const ParentRun *p, Refusal *r, int64 *child_budget)
{
	Oid			t2[2] = {INT8OID, TEXTOID};
	Datum		v[2];
	bool		isnull;
	bool		found;
	char	   *c_workspace = NULL;
	char	   *c_status = NULL;
	bool		c_deleted = false;
	int64		c_default = 0;

	v[0] = Int64GetDatum(dc->child_id);
	v[1] = CStringGetTextDatum(p->workspace);
	/* in the parent's workspace only (another's is an unknown agent) */
	Exec(GetPlan(Q_CHILD,
				 "SELECT workspace_id, status, deleted_at IS NOT NULL, default_token_budget"
				 "  FROM agent.agents WHERE workspace_id = $2 AND id = $1", 2, t2),
		 v, NULL, SPI_OK_SELECT);
	found = SPI_processed > 0;
	if (found)
	{
		MemoryContextSwitchTo(dc->callerCxt);
		c_workspace = ColText(1);
		c_status = ColText(2);
		c_deleted = DatumGetBool(Col(3, &isnull));
		c_default = ColInt64(4);
	}
	MemoryContextSwitchTo(dc->callerCxt);

	if (!found || strcmp(c_workspace, p->workspace) != 0)
		Refuse(r, "agent_not_found", ERRCODE_UNDEFINED_OBJECT,
			   psprintf("agent %lld does not exist", (long long) dc->child_id),
			   psprintf("There is no agent %lld in workspace \"%s\".",
						(long long) dc->child_id, p->workspace), NULL);
	else if (c_deleted)
		Refuse(r, "agent_deleted", ERRCODE_UNDEFINED_OBJECT,
			   psprintf("agent %lld does not exist", (long long) dc->child_id),
			   psprintf("Agent %lld was deleted.", (long long) dc->child_id), NULL);
	else if (strcmp(c_status, "active") != 0)
		Refuse(r, "agent_suspended", ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
			   psprintf("agent %lld is suspended", (long long) dc->child_id),
			   pstrdup("A suspended agent takes no delegated work."), NULL);
	else if (dc->budget_given)
		*child_budget = dc->budget_asked;
	else
		*child_budget = Min(Max(p->remaining, 0), c_default);
}

/* 6. no agent twice on the chain from the root run */
static void
CheckChain(const DelegateCall *dc, const ParentRun *p, Refusal *r)
{
	Oid			t3[3] = {INT8OID, INT8OID, TEXTOID};
	Datum		v[3];
	bool		isnull;
	bool		in_chain;
	char	   *chain;

	v[0] = Int64GetDatum(dc->parent_id);
	v[1] = Int64GetDatum(dc->child_id);
	v[2] = CStringGetTextDatum(p->workspace);
	Exec(GetPlan(Q_CHAIN,
				 "WITH RECURSIVE c(id, parent, agent_id, n) AS ("
				 "  SELECT id, parent_run_id, agent_id, 0 FROM agent.runs WHERE workspace_id = $3 AND id = $1"
				 "  UNION ALL"
				 "  SELECT r.id, r.parent_run_id, r.agent_id, c.n + 1"
				 "    FROM agent.runs r JOIN c ON r.id = c.parent WHERE r.workspace_id = $3 AND c.n < 16)"
				 "SELECT coalesce(pg_catalog.bool_or(agent_id = $2), false),"
				 "       pg_catalog.string_agg(agent_id::pg_catalog.text, ' -> ' ORDER BY n DESC) FROM c", 3, t3),
		 v, NULL, SPI_OK_SELECT);
	in_chain = DatumGetBool(Col(1, &isnull));
	chain = ColText(2);
	MemoryContextSwitchTo(dc->callerCxt);
	if (in_chain)
		Refuse(r, "cycle", ERRCODE_INVALID_RECURSION,
			   psprintf("delegation cycle: agent %lld is already in the chain",
						(long long) dc->child_id),
			   psprintf("Agents on the chain from the root run: %s.", chain),
			   pstrdup("An agent cannot receive work from a chain it is already part of."));
}

/* 7. the depth, counted from the root run */
static void
CheckDepth(const DelegateCall *dc, const ParentRun *p, Refusal *r)
{
	int			max_depth = GucEffectiveDelegationDepth();

	if (p->depth + 1 <= max_depth)
		return;
	Refuse(r, "depth_limit", ERRCODE_PROGRAM_LIMIT_EXCEEDED,
		   psprintf("delegation depth limit reached (max %d)", max_depth),
		   max_depth == 0
		   ? pstrdup("Delegation is disabled (pg_agents.max_delegation_depth = 0).")
		   : psprintf("Run %lld is at depth %d; its child would be at depth %d.",
					  (long long) dc->parent_id, p->depth, p->depth + 1),
		   pstrdup("The run cannot spawn another sub-agent; it has to do this work itself."));
}

/* 8. budgets fail closed: the child's budget fits in the parent's envelope */
static void
CheckBudget(const DelegateCall *dc, const ParentRun *p, Refusal *r)
{
	if (!dc->budget_given && p->remaining <= 0)
		Refuse(r, "budget_exceeded", ERRCODE_PROGRAM_LIMIT_EXCEEDED,
			   psprintf("run %lld has no token budget left to delegate", (long long) dc->parent_id),
			   psprintf("Its budget is %lld tokens: %lld used, %lld reserved for child runs.",
						(long long) p->budget, (long long) p->total, (long long) p->reserved),
			   NULL);
	else if (dc->budget_given && dc->budget_asked > p->remaining)
		Refuse(r, "budget_exceeded", ERRCODE_PROGRAM_LIMIT_EXCEEDED,
			   pstrdup("delegated token budget exceeds the parent's remaining envelope"),
			   psprintf("Run %lld has %lld tokens left (budget %lld, used %lld, reserved %lld); the child asked for %lld.",
						(long long) dc->parent_id, (long long) Max(p->remaining, 0),
						(long long) p->budget, (long long) p->total,
						(long long) p->reserved, (long long) dc->budget_asked),
			   NULL);
}

/*
 * A refusal: logged; raised in raise mode, else recorded (a denied audit
 * row and step, agent._delegation_refused) and written to result.
 */
static void
RecordRefusal(const DelegateCall *dc, const Refusal *r, StringInfo result)
{
	Oid			t_refused[6] = {INT8OID, INT8OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		v[6];

	ereport(LOG,
			(errmsg("pg_agents: delegation from run %lld to agent %lld refused (%s): %s",
					(long long) dc->parent_id, (long long) dc->child_id, r->reason, r->message)));
	if (dc->raise)
		ereport(ERROR,
				(errcode(r->sqlstate),
				 errmsg_internal("%s", r->message),
				 r->detail ? errdetail_internal("%s", r->detail) : 0,
				 r->hint ? errhint("%s", r->hint) : 0));

	v[0] = Int64GetDatum(dc->parent_id);
	v[1] = Int64GetDatum(dc->child_id);
	v[2] = CStringGetTextDatum(dc->task);
	v[3] = CStringGetTextDatum(r->reason);
	v[4] = CStringGetTextDatum(r->message);
	v[5] = CStringGetTextDatum(r->detail ? r->detail : "");
	Exec(GetPlan(Q_REFUSED,
				 "SELECT agent._delegation_refused($1, $2, $3, $4, $5, nullif($6, ''))", 6, t_refused),
		 v, NULL, SPI_OK_SELECT);
	MemoryContextSwitchTo(dc->callerCxt);

	appendStringInfoString(result, "{\"ok\": false, \"reason\": ");
	escape_json(result, r->reason);
	appendStringInfoString(result, ", \"error\": ");
	escape_json(result, r->message);
	appendStringInfoString(result, ", \"detail\": ");
	if (r->detail)
		escape_json(result, r->detail);
	else
		appendStringInfoString(result, "null");
	appendStringInfo(result, ", \"sqlstate\": \"%s\"}", unpack_sql_state(r->sqlstate));
}

/*
 * An accepted delegation: the attachments as the child may receive them,
 * the child run through the one queue path, its priority, the reservation
 * of its budget and the grant's audit row and step; written to result.
 */
static void
SpawnChild(const DelegateCall *dc, const ParentRun *p, int64 child_budget, StringInfo result)
{
	Oid			t_enq[6] = {INT8OID, TEXTOID, JSONBOID, INT8OID, TEXTOID, INT8OID};
	Oid			t_child_run[3] = {INT8OID, INT4OID, TEXTOID};
	Oid			t3[3] = {INT8OID, INT8OID, TEXTOID};
	Oid			t_attach[2] = {INT8OID, JSONBOID};
	Oid			t_granted[7] = {INT8OID, INT8OID, INT8OID, TEXTOID, JSONBOID, INT8OID, BOOLOID};
	Datum		v[7];
	bool		isnull;
	char		requested_by[32];
	char		eq_nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};
	Datum		att_given = dc->attachments ? JsonbPGetDatum(dc->attachments)
		: DirectFunctionCall1(jsonb_in, CStringGetDatum("[]"));
	Datum		att_child;
	int64		child_run;
	char	   *child_status;
	int			child_depth;

	/* the attachments as the child may receive them */
	v[0] = Int64GetDatum(dc->child_id);
	v[1] = att_given;
	Exec(GetPlan(Q_ATTACH,
				 "SELECT coalesce(jsonb_agg(agent._delegation_attachment($1, a.e) ORDER BY a.n), '[]'::jsonb)"
				 "  FROM jsonb_array_elements($2) WITH ORDINALITY AS a(e, n)", 2, t_attach),
		 v, NULL, SPI_OK_SELECT);
	att_child = SPI_datumTransfer(Col(1, &isnull), false, -1);
	MemoryContextSwitchTo(dc->callerCxt);

	/* the child run, through the one queue path */
	snprintf(requested_by, sizeof(requested_by), "agent:%lld", (long long) p->agent);
	v[0] = Int64GetDatum(dc->child_id);
	v[1] = CStringGetTextDatum(dc->task);
	v[2] = att_child;
	v[3] = Int64GetDatum(dc->parent_id);
	v[4] = CStringGetTextDatum(requested_by);
	v[5] = Int64GetDatum(child_budget);
	Exec(GetPlan(Q_ENQUEUE,
				 "SELECT agent._enqueue_run($1, 'autonomous', 'delegation',"
				 "         pg_catalog.jsonb_build_object('task', $2::pg_catalog.text, 'attachments', $3::pg_catalog.jsonb,"
				 "                            'parent_run_id', $4::pg_catalog.int8),"
				 "         NULL, $5::pg_catalog.text, $4::pg_catalog.int8, $6::pg_catalog.int8)", 6, t_enq),
		 v, eq_nulls, SPI_OK_SELECT);
	child_run = ColInt64(1);

	/* interactive work delegated stays interactive */
	v[0] = Int64GetDatum(child_run);
	v[1] = Int32GetDatum(p->priority);
	v[2] = CStringGetTextDatum(p->workspace);
	Exec(GetPlan(Q_CHILD_RUN,
				 "UPDATE agent.runs SET priority = greatest(priority, $2)"
				 " WHERE workspace_id = $3 AND id = $1 RETURNING status, depth", 3, t_child_run),
		 v, NULL, SPI_OK_UPDATE_RETURNING);
	MemoryContextSwitchTo(dc->callerCxt);
	child_status = ColText(1);
	child_depth = DatumGetInt32(Col(2, &isnull));

	/* reserve the child's budget (a child refused by the hourly cap reserves nothing) */
	if (strcmp(child_status, "queued") == 0 && child_budget > 0)
	{
		v[0] = Int64GetDatum(dc->parent_id);
		v[1] = Int64GetDatum(child_budget);
		v[2] = CStringGetTextDatum(p->workspace);
		Exec(GetPlan(Q_RESERVE,
					 "UPDATE agent.runs SET tokens_reserved = tokens_reserved + $2 WHERE workspace_id = $3 AND id = $1",
					 3, t3),
			 v, NULL, SPI_OK_UPDATE);
	}

	v[0] = Int64GetDatum(dc->parent_id);
	v[1] = Int64GetDatum(child_run);
	v[2] = Int64GetDatum(dc->child_id);
	v[3] = CStringGetTextDatum(dc->task);
	v[4] = att_child;
	v[5] = Int64GetDatum(child_budget);
	v[6] = BoolGetDatum(!dc->raise);
	Exec(GetPlan(Q_GRANTED,
				 "SELECT agent._delegation_granted($1, $2, $3, $4, $5, $6, $7)", 7, t_granted),
		 v, NULL, SPI_OK_SELECT);
	MemoryContextSwitchTo(dc->callerCxt);

	appendStringInfo(result,
					 "{\"ok\": true, \"child_run_id\": %lld, \"token_budget\": %lld, \"depth\": %d, \"status\": ",
					 (long long) child_run, (long long) child_budget, child_depth);
	escape_json(result, child_status);
	appendStringInfoChar(result, '}');
}

/*
 * agent._delegate(parent bigint, child bigint, task text, attachments jsonb,
 *                 token_budget bigint, raise boolean) RETURNS jsonb
 *
 * The checks of the file's header comment, in order, then the refusal or
 * the child run.
 */
Datum
pg_agents_delegate(PG_FUNCTION_ARGS)
{
	DelegateCall dc;
	ParentRun	p;
	Refusal		refusal = {0};
	int64		child_budget = 0;
	StringInfoData result;

	ParseDelegateCall(fcinfo, &dc);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_agents: SPI_connect failed");

	LockParent(&dc, &p);
	CheckParent(&dc, &p, &refusal);
	if (refusal.reason == NULL)
		CheckChildAgent(&dc, &p, &refusal, &child_budget);
	if (refusal.reason == NULL)
		CheckChain(&dc, &p, &refusal);
	if (refusal.reason == NULL)
		CheckDepth(&dc, &p, &refusal);
	if (refusal.reason == NULL)
		CheckBudget(&dc, &p, &refusal);

	initStringInfo(&result);
	if (refusal.reason != NULL)
		RecordRefusal(&dc, &refusal, &result);
	else
		SpawnChild(&dc, &p, child_budget, &result);

	SPI_finish();
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(result.data)));
}
