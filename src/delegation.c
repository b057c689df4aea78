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

#include "pg_agents.h"
#include "spi_util.h"

PG_FUNCTION_INFO_V1(pg_agents_delegation_depth_limit);
PG_FUNCTION_INFO_V1(pg_agents_delegate);

enum
{
	Q_ROOT,
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

static Datum
Col(int col, bool *isnull)
{
	return SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col, isnull);
}

static int64
ColInt64(int col)
{
	bool		isnull;
	Datum		d = Col(col, &isnull);

	return isnull ? 0 : DatumGetInt64(d);
}

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
	PG_RETURN_INT32(PgAgentsEffectiveDelegationDepth());
}

/*
 * agent._delegate(parent bigint, child bigint, task text, attachments jsonb,
 *                 token_budget bigint, raise boolean) RETURNS jsonb
 */
Datum
pg_agents_delegate(PG_FUNCTION_ARGS)
{
	int64		parent_id;
	int64		child_id;
	char	   *task;
	Jsonb	   *attachments;
	bool		budget_given = !PG_ARGISNULL(4);
	int64		budget_asked = budget_given ? PG_GETARG_INT64(4) : 0;
	bool		raise = PG_ARGISNULL(5) ? true : PG_GETARG_BOOL(5);
	MemoryContext callerCxt = CurrentMemoryContext;
	Refusal		refusal = {0};
	bool		refused = false;
	StringInfoData result;
	int			max_depth = PgAgentsEffectiveDelegationDepth();

	/* parent row */
	char	   *p_status;
	int			p_depth;
	int64		p_agent;
	char	   *p_workspace;
	int64		p_budget;
	int64		p_total;
	int64		p_reserved;
	bool		listed;
	int			p_priority;
	int64		remaining;
	int64		child_budget = 0;
	int64		child_run = 0;
	char	   *child_status = NULL;
	int			child_depth = 0;

	Oid			t1[1] = {INT8OID};
	Oid			t2[2] = {INT8OID, INT8OID};
	Oid			t_enq[6] = {INT8OID, TEXTOID, JSONBOID, INT8OID, TEXTOID, INT8OID};
	Oid			t_child_run[2] = {INT8OID, INT4OID};
	Oid			t_attach[2] = {INT8OID, JSONBOID};
	Oid			t_granted[7] = {INT8OID, INT8OID, INT8OID, TEXTOID, JSONBOID, INT8OID, BOOLOID};
	Oid			t_refused[6] = {INT8OID, INT8OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		v[7];
	bool		isnull;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("parent run id must not be null")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("child agent id must not be null")));
	parent_id = PG_GETARG_INT64(0);
	child_id = PG_GETARG_INT64(1);
	task = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
	if (task == NULL || task[strspn(task, " \t\r\n")] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("delegated task must not be empty"),
				 errdetail("The task is the only instruction the child run receives.")));
	attachments = PG_ARGISNULL(3) ? NULL : PG_GETARG_JSONB_P(3);
	if (attachments != NULL && !JB_ROOT_IS_ARRAY(attachments))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("attachments must be a json array")));
	if (attachments != NULL && JB_ROOT_IS_SCALAR(attachments))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("attachments must be a json array")));
	if (budget_given && budget_asked < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("token budget must not be negative")));

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_agents: SPI_connect failed");

	/*
	 * 0. find the tree (a run of another workspace than the session's is an
	 * unknown run: refused before any lock), lock it, then the parent
	 */
	v[0] = Int64GetDatum(parent_id);
	Exec(GetPlan(Q_ROOT, "SELECT coalesce((SELECT rt.id FROM agent.runs rt WHERE rt.id = r.root_run_id), r.id),"
				 "       agent._workspace_ok(r.workspace_id) AND r.id IS NOT NULL"
				 " FROM (SELECT 1) one LEFT JOIN agent.runs r ON r.id = $1", 1, t1),
		 v, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0 || !DatumGetBool(Col(2, &isnull)) || isnull)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("run %lld does not exist", (long long) parent_id)));
	v[0] = Int64GetDatum(ColInt64(1));
	Exec(GetPlan(Q_LOCK, "SELECT 1 FROM agent.runs WHERE id = $1 FOR UPDATE", 1, t1),
		 v, NULL, SPI_OK_SELECT);

	v[0] = Int64GetDatum(parent_id);
	v[1] = Int64GetDatum(child_id);
	Exec(GetPlan(Q_PARENT,
				 "SELECT r.status, r.depth, r.agent_id, r.workspace_id,"
				 "       coalesce(r.token_budget, a.default_token_budget),"
				 "       r.tokens_total, r.tokens_reserved,"
				 "       EXISTS (SELECT 1 FROM pg_catalog.jsonb_array_elements(a.delegation) e"
				 "                WHERE e = pg_catalog.to_jsonb($2::pg_catalog.int8) OR e = pg_catalog.to_jsonb($2::pg_catalog.text)),"
				 "       r.priority"
				 "  FROM agent.runs r JOIN agent.agents a ON a.id = r.agent_id"
				 " WHERE r.id = $1 FOR UPDATE OF r", 2, t2),
		 v, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("run %lld does not exist", (long long) parent_id)));
	p_status = ColText(1);
	p_depth = DatumGetInt32(Col(2, &isnull));
	p_agent = ColInt64(3);
	p_workspace = ColText(4);
	p_budget = ColInt64(5);
	p_total = ColInt64(6);
	p_reserved = ColInt64(7);
	listed = DatumGetBool(Col(8, &isnull));
	p_priority = DatumGetInt16(Col(9, &isnull));
	remaining = p_budget - p_total - p_reserved;

	MemoryContextSwitchTo(callerCxt);

	/* 1. the parent must be at work */
	if (strcmp(p_status, "running") != 0)
	{
		refused = true;
		refusal.reason = "parent_not_running";
		refusal.sqlstate = ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE;
		refusal.message = psprintf("run %lld is not running", (long long) parent_id);
		refusal.detail = psprintf("The run is %s; only a running run may delegate.", p_status);
	}
	/* 2. only to listed agents */
	else if (!listed)
	{
		refused = true;
		refusal.reason = "not_listed";
		refusal.sqlstate = ERRCODE_INSUFFICIENT_PRIVILEGE;
		refusal.message = psprintf("agent %lld may not delegate to agent %lld",
								   (long long) p_agent, (long long) child_id);
		refusal.detail = psprintf("Agent %lld is not in the delegation list of agent %lld.",
								  (long long) child_id, (long long) p_agent);
	}

	/* 3-5. the child agent */
	if (!refused)
	{
		bool		found;
		char	   *c_workspace = NULL;
		char	   *c_status = NULL;
		bool		c_deleted = false;
		int64		c_default = 0;

		v[0] = Int64GetDatum(child_id);
		Exec(GetPlan(Q_CHILD,
					 "SELECT workspace_id, status, deleted_at IS NOT NULL, default_token_budget"
					 "  FROM agent.agents WHERE id = $1", 1, t1),
			 v, NULL, SPI_OK_SELECT);
		found = SPI_processed > 0;
		if (found)
		{
			MemoryContextSwitchTo(callerCxt);
			c_workspace = ColText(1);
			c_status = ColText(2);
			c_deleted = DatumGetBool(Col(3, &isnull));
			c_default = ColInt64(4);
		}
		MemoryContextSwitchTo(callerCxt);

		if (!found || strcmp(c_workspace, p_workspace) != 0)
		{
			refused = true;
			refusal.reason = "agent_not_found";
			refusal.sqlstate = ERRCODE_UNDEFINED_OBJECT;
			refusal.message = psprintf("agent %lld does not exist", (long long) child_id);
			refusal.detail = psprintf("There is no agent %lld in workspace \"%s\".",
									  (long long) child_id, p_workspace);
		}
		else if (c_deleted)
		{
			refused = true;
			refusal.reason = "agent_deleted";
			refusal.sqlstate = ERRCODE_UNDEFINED_OBJECT;
			refusal.message = psprintf("agent %lld does not exist", (long long) child_id);
			refusal.detail = psprintf("Agent %lld was deleted.", (long long) child_id);
		}
		else if (strcmp(c_status, "active") != 0)
		{
			refused = true;
			refusal.reason = "agent_suspended";
			refusal.sqlstate = ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE;
			refusal.message = psprintf("agent %lld is suspended", (long long) child_id);
			refusal.detail = pstrdup("A suspended agent takes no delegated work.");
		}
		else
		{
			/* 8 (computed now, checked after the cycle and depth) */
			if (budget_given)
				child_budget = budget_asked;
			else
				child_budget = Min(Max(remaining, 0), c_default);
		}
	}

	/* 6. no agent twice on a chain */
	if (!refused)
	{
		bool		in_chain;
		char	   *chain;

		v[0] = Int64GetDatum(parent_id);
		v[1] = Int64GetDatum(child_id);
		Exec(GetPlan(Q_CHAIN,
					 "WITH RECURSIVE c(id, parent, agent_id, n) AS ("
					 "  SELECT id, parent_run_id, agent_id, 0 FROM agent.runs WHERE id = $1"
					 "  UNION ALL"
					 "  SELECT r.id, r.parent_run_id, r.agent_id, c.n + 1"
					 "    FROM agent.runs r JOIN c ON r.id = c.parent WHERE c.n < 16)"
					 "SELECT coalesce(pg_catalog.bool_or(agent_id = $2), false),"
					 "       pg_catalog.string_agg(agent_id::pg_catalog.text, ' -> ' ORDER BY n DESC) FROM c", 2, t2),
			 v, NULL, SPI_OK_SELECT);
		in_chain = DatumGetBool(Col(1, &isnull));
		chain = ColText(2);
		MemoryContextSwitchTo(callerCxt);
		if (in_chain)
		{
			refused = true;
			refusal.reason = "cycle";
			refusal.sqlstate = ERRCODE_INVALID_RECURSION;
			refusal.message = psprintf("delegation cycle: agent %lld is already in the chain",
									   (long long) child_id);
			refusal.detail = psprintf("Agents on the chain from the root run: %s.", chain);
			refusal.hint = pstrdup("An agent cannot receive work from a chain it is already part of.");
		}
	}

	/* 7. depth, counted from the root run */
	if (!refused && p_depth + 1 > max_depth)
	{
		refused = true;
		refusal.reason = "depth_limit";
		refusal.sqlstate = ERRCODE_PROGRAM_LIMIT_EXCEEDED;
		refusal.message = psprintf("delegation depth limit reached (max %d)", max_depth);
		if (max_depth == 0)
			refusal.detail = pstrdup("Delegation is disabled (pg_agents.max_delegation_depth = 0).");
		else
			refusal.detail = psprintf("Run %lld is at depth %d; its child would be at depth %d.",
									  (long long) parent_id, p_depth, p_depth + 1);
		refusal.hint = pstrdup("The run cannot spawn another sub-agent; it has to do this work itself.");
	}

	/* 8. budgets fail closed */
	if (!refused)
	{
		if (!budget_given && remaining <= 0)
		{
			refused = true;
			refusal.reason = "budget_exceeded";
			refusal.sqlstate = ERRCODE_PROGRAM_LIMIT_EXCEEDED;
			refusal.message = psprintf("run %lld has no token budget left to delegate", (long long) parent_id);
			refusal.detail = psprintf("Its budget is %lld tokens: %lld used, %lld reserved for child runs.",
									  (long long) p_budget, (long long) p_total, (long long) p_reserved);
		}
		else if (budget_given && budget_asked > remaining)
		{
			refused = true;
			refusal.reason = "budget_exceeded";
			refusal.sqlstate = ERRCODE_PROGRAM_LIMIT_EXCEEDED;
			refusal.message = pstrdup("delegated token budget exceeds the parent's remaining envelope");
			refusal.detail = psprintf("Run %lld has %lld tokens left (budget %lld, used %lld, reserved %lld); the child asked for %lld.",
									  (long long) parent_id, (long long) Max(remaining, 0),
									  (long long) p_budget, (long long) p_total,
									  (long long) p_reserved, (long long) budget_asked);
		}
	}

	initStringInfo(&result);

	if (refused)
	{
		ereport(LOG,
				(errmsg("pg_agents: delegation from run %lld to agent %lld refused (%s): %s",
						(long long) parent_id, (long long) child_id, refusal.reason, refusal.message)));
		if (raise)
			ereport(ERROR,
					(errcode(refusal.sqlstate),
					 errmsg_internal("%s", refusal.message),
					 refusal.detail ? errdetail_internal("%s", refusal.detail) : 0,
					 refusal.hint ? errhint("%s", refusal.hint) : 0));

		v[0] = Int64GetDatum(parent_id);
		v[1] = Int64GetDatum(child_id);
		v[2] = CStringGetTextDatum(task);
		v[3] = CStringGetTextDatum(refusal.reason);
		v[4] = CStringGetTextDatum(refusal.message);
		v[5] = CStringGetTextDatum(refusal.detail ? refusal.detail : "");
		Exec(GetPlan(Q_REFUSED,
					 "SELECT agent._delegation_refused($1, $2, $3, $4, $5, nullif($6, ''))", 6, t_refused),
			 v, NULL, SPI_OK_SELECT);
		MemoryContextSwitchTo(callerCxt);

		appendStringInfoString(&result, "{\"ok\": false, \"reason\": ");
		escape_json(&result, refusal.reason);
		appendStringInfoString(&result, ", \"error\": ");
		escape_json(&result, refusal.message);
		appendStringInfoString(&result, ", \"detail\": ");
		if (refusal.detail)
			escape_json(&result, refusal.detail);
		else
			appendStringInfoString(&result, "null");
		appendStringInfo(&result, ", \"sqlstate\": \"%s\"}", unpack_sql_state(refusal.sqlstate));
	}
	else
	{
		char		requested_by[32];
		char		eq_nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};
		Datum		att_given = attachments ? JsonbPGetDatum(attachments)
			: DirectFunctionCall1(jsonb_in, CStringGetDatum("[]"));
		Datum		att_child;

		/* the attachments as the child may receive them */
		v[0] = Int64GetDatum(child_id);
		v[1] = att_given;
		Exec(GetPlan(Q_ATTACH,
					 "SELECT coalesce(jsonb_agg(agent._delegation_attachment($1, a.e) ORDER BY a.n), '[]'::jsonb)"
					 "  FROM jsonb_array_elements($2) WITH ORDINALITY AS a(e, n)", 2, t_attach),
			 v, NULL, SPI_OK_SELECT);
		att_child = SPI_datumTransfer(Col(1, &isnull), false, -1);
		MemoryContextSwitchTo(callerCxt);

		/* the child run, through the one queue path */
		snprintf(requested_by, sizeof(requested_by), "agent:%lld", (long long) p_agent);
		v[0] = Int64GetDatum(child_id);
		v[1] = CStringGetTextDatum(task);
		v[2] = att_child;
		v[3] = Int64GetDatum(parent_id);
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
		v[1] = Int32GetDatum(p_priority);
		Exec(GetPlan(Q_CHILD_RUN,
					 "UPDATE agent.runs SET priority = greatest(priority, $2)"
					 " WHERE id = $1 RETURNING status, depth", 2, t_child_run),
			 v, NULL, SPI_OK_UPDATE_RETURNING);
		MemoryContextSwitchTo(callerCxt);
		child_status = ColText(1);
		child_depth = DatumGetInt32(Col(2, &isnull));

		/* reserve the child's budget (a child refused by the hourly cap reserves nothing) */
		if (strcmp(child_status, "queued") == 0 && child_budget > 0)
		{
			v[0] = Int64GetDatum(parent_id);
			v[1] = Int64GetDatum(child_budget);
			Exec(GetPlan(Q_RESERVE,
						 "UPDATE agent.runs SET tokens_reserved = tokens_reserved + $2 WHERE id = $1",
						 2, t2),
				 v, NULL, SPI_OK_UPDATE);
		}

		v[0] = Int64GetDatum(parent_id);
		v[1] = Int64GetDatum(child_run);
		v[2] = Int64GetDatum(child_id);
		v[3] = CStringGetTextDatum(task);
		v[4] = att_child;
		v[5] = Int64GetDatum(child_budget);
		v[6] = BoolGetDatum(!raise);
		Exec(GetPlan(Q_GRANTED,
					 "SELECT agent._delegation_granted($1, $2, $3, $4, $5, $6, $7)", 7, t_granted),
			 v, NULL, SPI_OK_SELECT);
		MemoryContextSwitchTo(callerCxt);

		appendStringInfo(&result,
						 "{\"ok\": true, \"child_run_id\": %lld, \"token_budget\": %lld, \"depth\": %d, \"status\": ",
						 (long long) child_run, (long long) child_budget, child_depth);
		escape_json(&result, child_status);
		appendStringInfoChar(&result, '}');
	}

	SPI_finish();
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(result.data)));
}
