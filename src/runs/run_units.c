/*-------------------------------------------------------------------------
 *
 * run_units.c
 *		The SQL of the runs in flight: every statement the slots (run_loop.c,
 *		run_slot.c, run_tools.c, run_calls.c) run inside their units (one
 *		short transaction each, SpiUtilUnit): the lease, the end of a run, the
 *		saved conversation, the claim, the usage of a reply, the batch of
 *		final answers, the wait for children, the reclaim and the requeue of
 *		a drain.  The bottom of the runs module: it calls none of its files.
 *
 * Plans are prepared once and kept (PgAgentsExecPlan).  Results are read by
 * column name (SpiUtilColumnsByName), never by position.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "util/jansson_prelude.h"

#include "run_int.h"

#include "tools/tool_gate.h"
#include "util/guc.h"
#include "util/spi_util.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"


static SPIPlanPtr lease_plan = NULL;
static SPIPlanPtr forget_plan = NULL;
static SPIPlanPtr finish_plan = NULL;
static SPIPlanPtr save_plan = NULL;
static SPIPlanPtr claim_plan = NULL;
static SPIPlanPtr eligible_plan = NULL;

/* a json value as a jsonb Datum */
static Datum
JsonbDatum(json_t *v, size_t flags)
{
	char	   *s = json_dumps(v, JSON_COMPACT | flags);
	char	   *p = pstrdup(s);

	free(s);
	return DirectFunctionCall1(jsonb_in, CStringGetDatum(p));
}

/*
 * Renews the lease; false when the run is no longer ours (cancelled,
 * reclaimed).  Every statement here names the run's workspace (Citus
 * routes by it).
 */
bool
RunSqlHoldLease(int64 run_id, const char *workspace)
{
	Oid			types[3] = {INT8OID, INT4OID, TEXTOID};
	Datum		vals[3];

	vals[0] = Int64GetDatum(run_id);
	vals[1] = Int32GetDatum(pg_agents_run_lease);
	vals[2] = CStringGetTextDatum(workspace);
	if (SpiUtilExecPlan(&lease_plan, "UPDATE agent.runs SET lease_until = pg_catalog.now() + pg_catalog.make_interval(secs => $2) "
						 "WHERE workspace_id = $3 AND id = $1 AND status = 'running'",
						 3, types, vals, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not renew the lease of run " INT64_FORMAT, run_id);
	return SPI_processed == 1;
}

/* the saved conversation of a run that ended is dropped */
static void
ForgetState(int64 run_id, const char *workspace)
{
	Oid			types[2] = {INT8OID, TEXTOID};
	Datum		vals[2];

	vals[0] = Int64GetDatum(run_id);
	vals[1] = CStringGetTextDatum(workspace);
	if (SpiUtilExecPlan(&forget_plan, "DELETE FROM agent.run_state WHERE workspace_id = $2 AND run_id = $1",
						 2, types, vals, NULL, false, 0)
		!= SPI_OK_DELETE)
		elog(ERROR, "could not forget the state of run " INT64_FORMAT, run_id);
}

/* ends the run (agent.finish_run: status, output, error) and forgets its state */
void
RunSqlFinish(int64 run_id, const char *workspace, const char *status, json_t *output, const char *error)
{
	Oid			types[4] = {INT8OID, TEXTOID, JSONBOID, TEXTOID};
	Datum		vals[4];
	char		nulls[4] = "    ";

	vals[0] = Int64GetDatum(run_id);
	vals[1] = CStringGetTextDatum(status);
	if (output)
		vals[2] = JsonbDatum(output, JSON_ENCODE_ANY);
	else
		nulls[2] = 'n';
	if (error)
		vals[3] = CStringGetTextDatum(error);
	else
		nulls[3] = 'n';
	if (SpiUtilExecPlan(&finish_plan, "SELECT agent.finish_run($1, $2, $3, $4)", 4, types, vals, nulls, false, 0)
		!= SPI_OK_SELECT)
		elog(ERROR, "agent.finish_run failed for run " INT64_FORMAT, run_id);
	ForgetState(run_id, workspace);
}

/*
 * The slot's conversation saved in agent.run_state (messages, pending tool
 * calls, their results so far, iterations, the child waited for, the system
 * prompt), in the transaction of the effects it follows.
 */
void
RunSqlSaveState(Slot *s)
{
	json_t	   *st = json_pack("{s:O,s:O,s:O,s:i,s:I,s:s?}",
							   "messages", s->messages,
							   "pending", s->pending ? s->pending : json_null(),
							   "results", s->results ? s->results : json_null(),
							   "iterations", s->iterations,
							   "child_run_id", (json_int_t) s->child_run_id,
							   "system", s->system);	/* context: the prompt it started with */
	Oid			types[4] = {INT8OID, JSONBOID, INT4OID, TEXTOID};
	Datum		vals[4];

	vals[0] = Int64GetDatum(s->run_id);
	vals[1] = JsonbDatum(st, 0);
	vals[2] = Int32GetDatum(MyProcPid);
	vals[3] = CStringGetTextDatum(s->workspace);
	json_decref(st);
	if (SpiUtilExecPlan(&save_plan, "INSERT INTO agent.run_state AS st (run_id, workspace_id, worker_pid, state) "
						 "SELECT r.id, r.workspace_id, $3, $2 FROM agent.runs r WHERE r.workspace_id = $4 AND r.id = $1 "
						 "ON CONFLICT (run_id, workspace_id) DO UPDATE SET state = excluded.state, "
						 "worker_pid = excluded.worker_pid, updated_at = excluded.updated_at",	/* its default: Citus takes no volatile call in DO UPDATE */
						 4, types, vals, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not save the state of run " INT64_FORMAT, s->run_id);
}

/* ---------------------------------------------------------------------
 * The claim
 * ---------------------------------------------------------------------
 */

/*
 * Whether some queued run's agent names its own endpoint or provider (scope
 * llm_url, provider): without a default endpoint (pg_agents.llm_url empty)
 * the worker claims nothing otherwise, and runs stay queued for an external
 * executor (claim_runs).
 */
bool
RunSqlAnyClaimable(void)
{
	int			rc;
	bool		isnull;

	/*
	 * One primary-key probe of agents per queued run, up to the first that
	 * qualifies (a scalar subquery keeps it a nested loop: as a join, the
	 * kept plan hashed every agent at each claim, 10k agents costing more
	 * than the claim itself); on the run's workspace too, a colocated join
	 * on Citus (which refuses a LATERAL ... LIMIT).
	 */
	rc = SpiUtilExecPlan(&eligible_plan,
						  "SELECT EXISTS (SELECT 1 FROM agent.runs r "
						  "WHERE r.status = 'queued' "
						  "  AND (SELECT a.scope ?| '{llm_url,provider}' FROM agent.agents a "
						  "        WHERE a.workspace_id = r.workspace_id AND a.id = r.agent_id))",
						  0, NULL, NULL, NULL, true, 1);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not look for runs to claim");
	return DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/* the claim's columns, read by name */
enum
{
	CC_ID, CC_AGENT_ID, CC_WORKSPACE, CC_REGIME, CC_REQUESTED_BY, CC_INPUT, CC_ORIGIN,
	CC_AGENT_NAME, CC_INSTRUCTIONS, CC_MODEL, CC_APPROVAL_MODE, CC_SCOPE, CC_MAX_ITERATIONS,
	CC_DELEGATION_LISTED, CC_DELETED, CC_SUSPENDED, CC_TRIGGER_PROMPT, CC_STATE, CC_DEPTH,
	CC_PAGE_ID, CC_SKILLS_POSSIBLE, CC_COUNT
};

static const char *const claim_columns[CC_COUNT] = {
	"id", "agent_id", "workspace_id", "regime", "requested_by", "input", "origin",
	"agent_name", "instructions", "model", "approval_mode", "scope", "max_iterations",
	"delegation_listed", "agent_deleted", "agent_suspended", "trigger_prompt", "state", "depth",
	"instruction_page_id", "skills_possible"
};

/* a boolean column; NULL reads false */
static bool
ColBool(HeapTuple tup, TupleDesc td, int att)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, td, att, &isnull);

	return !isnull && DatumGetBool(d);
}

/* an integer column; NULL reads 0 */
static int32
ColInt32(HeapTuple tup, TupleDesc td, int att)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, td, att, &isnull);

	return isnull ? 0 : DatumGetInt32(d);
}

/* a bigint column; NULL reads 0 */
static int64
ColInt64(HeapTuple tup, TupleDesc td, int att)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, td, att, &isnull);

	return isnull ? 0 : DatumGetInt64(d);
}

/*
 * Claims up to n runs (agent.claim_runs, in its fair order) and marks them
 * ours in agent.run_state (the saved conversation of a run that resumes
 * comes back with it).  *runs: the rows, valid until the unit ends.
 */
int
RunSqlClaim(int n, ClaimedRun **runs)
{
	Oid			types[2] = {INT4OID, INT4OID};
	Datum		vals[2];
	int			att[CC_COUNT];
	int			rc;
	uint64		nrows;
	SPITupleTable *tt;
	ClaimedRun *out;

	vals[0] = Int32GetDatum(n);
	vals[1] = Int32GetDatum(MyProcPid);
	rc = SpiUtilExecPlan(&claim_plan,
						  "WITH c AS (SELECT * FROM agent.claim_runs($1) WITH ORDINALITY), "
						  "s AS (INSERT INTO agent.run_state AS st (run_id, workspace_id, worker_pid) "
						  "      SELECT c.id, c.workspace_id, $2 FROM c "
						  "      ON CONFLICT (run_id, workspace_id) DO UPDATE SET worker_pid = excluded.worker_pid, claimed_at = excluded.claimed_at "
						  "      RETURNING st.run_id, st.workspace_id, st.state) "
						  "SELECT c.id, c.agent_id, c.workspace_id, c.regime, c.requested_by, "
						  "       c.input::pg_catalog.text AS input, c.origin, "
						  "       a.name AS agent_name, a.instructions, a.model, a.approval_mode, "
						  "       a.scope::pg_catalog.text AS scope, a.max_iterations, "
						  "       pg_catalog.jsonb_array_length(a.delegation) > 0 AS delegation_listed, "
						  "       a.deleted_at IS NOT NULL AS agent_deleted, "
						  "       a.status = 'suspended' AND c.regime = 'autonomous' AS agent_suspended, "
						  "       t.prompt AS trigger_prompt, s.state::pg_catalog.text AS state, "
						  "       c.depth, a.instruction_page_id, "	/* context assembly: */
						  "       CASE WHEN c.regime = 'manual' "	/* may a skill be listed? */
						  "            THEN EXISTS (SELECT 1 FROM agent.resource_tables rt WHERE rt.resource_type = 'skill') "
						  "            ELSE EXISTS (SELECT 1 FROM agent.access g WHERE g.workspace_id = a.workspace_id "
						  "                          AND g.agent_id = a.id AND g.resource_type = 'skill') END "
						  "         AS skills_possible "
						  /* every join on the workspace too (colocated on Citus) */
						  "FROM c JOIN s ON s.workspace_id = c.workspace_id AND s.run_id = c.id "
						  "JOIN agent.agents a ON a.workspace_id = c.workspace_id AND a.id = c.agent_id "
						  "LEFT JOIN agent.triggers t ON t.workspace_id = a.workspace_id AND t.id = c.trigger_id "
						  "ORDER BY c.ordinality",	/* started in claim order (fair order) */
						  2, types, vals, NULL, false, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not claim runs: %s", SPI_result_code_string(rc));
	nrows = SPI_processed;
	tt = SPI_tuptable;
	SpiUtilColumnsByName(tt->tupdesc, claim_columns, att, CC_COUNT);
	out = palloc0(sizeof(ClaimedRun) * Max(nrows, 1));
	for (uint64 i = 0; i < nrows; i++)
	{
		HeapTuple	tup = tt->vals[i];
		TupleDesc	td = tt->tupdesc;
		ClaimedRun *cr = &out[i];

		cr->run_id = ColInt64(tup, td, att[CC_ID]);
		cr->agent_id = ColInt64(tup, td, att[CC_AGENT_ID]);
		cr->workspace = SPI_getvalue(tup, td, att[CC_WORKSPACE]);
		cr->regime = SPI_getvalue(tup, td, att[CC_REGIME]);
		cr->requested_by = SPI_getvalue(tup, td, att[CC_REQUESTED_BY]);
		cr->input = SPI_getvalue(tup, td, att[CC_INPUT]);
		cr->origin = SPI_getvalue(tup, td, att[CC_ORIGIN]);
		cr->agent_name = SPI_getvalue(tup, td, att[CC_AGENT_NAME]);
		cr->instructions = SPI_getvalue(tup, td, att[CC_INSTRUCTIONS]);
		cr->model = SPI_getvalue(tup, td, att[CC_MODEL]);
		cr->approval_mode = SPI_getvalue(tup, td, att[CC_APPROVAL_MODE]);
		cr->scope = SPI_getvalue(tup, td, att[CC_SCOPE]);
		cr->max_iterations = ColInt32(tup, td, att[CC_MAX_ITERATIONS]);
		cr->delegation_listed = ColBool(tup, td, att[CC_DELEGATION_LISTED]);
		cr->deleted = ColBool(tup, td, att[CC_DELETED]);
		cr->suspended = ColBool(tup, td, att[CC_SUSPENDED]);
		cr->trigger_prompt = SPI_getvalue(tup, td, att[CC_TRIGGER_PROMPT]);
		cr->state = SPI_getvalue(tup, td, att[CC_STATE]);
		cr->depth = ColInt32(tup, td, att[CC_DEPTH]);
		cr->page_id = SPI_getvalue(tup, td, att[CC_PAGE_ID]);
		cr->skills_possible = ColBool(tup, td, att[CC_SKILLS_POSSIBLE]);
	}
	*runs = out;
	return (int) nrows;
}

/* ---------------------------------------------------------------------
 * Replies
 * ---------------------------------------------------------------------
 */

/*
 * The usage of a reply added to the run and its ancestors (agent.add_usage,
 * the cached tokens), then the run as it stands: false when it is no longer
 * running (add_usage ended it for its budget, or someone cancelled it);
 * else its effective token budget (its own, or its agent's default) and the
 * tokens it used.
 */
bool
RunSqlAfterUsage(Slot *s, const LlmReply *r, int64 *budget, int64 *used)
{
	Oid			types[4] = {INT8OID, INT4OID, INT4OID, TEXTOID};
	Datum		vals[4];
	Oid			stypes[2] = {INT8OID, TEXTOID};
	Datum		svals[2];
	Oid			rtypes[6] = {INT8OID, INT4OID, INT4OID, TEXTOID, TEXTOID, INT8OID};
	Datum		rvals[6];
	char		rnulls[6] = "      ";
	static SPIPlanPtr root_plan = NULL;
	static SPIPlanPtr usage_plan = NULL;
	static SPIPlanPtr status_plan = NULL;
	static const char *const columns[] = {"status", "budget", "used"};
	int			att[3];
	HeapTuple	tup;
	TupleDesc	td;
	char	   *status;
	int32		tin = (int32) Min(r->tokens_in, PG_INT32_MAX);
	int32		tout = (int32) Min(r->tokens_out, PG_INT32_MAX);

	/*
	 * A root run (no parent: no ancestor to add to, no reservation to
	 * release, its row its own tree lock) takes its usage, cached tokens
	 * included, in one statement that returns what the status query below
	 * reads: what agent.add_usage and that query do for it, without the
	 * function's reads of the tree.  A child run, or counts add_usage would
	 * refuse, take the general path.
	 */
	if (tin >= 0 && tout >= 0 && r->tokens_cached >= 0)
	{
		rvals[0] = Int64GetDatum(s->run_id);
		rvals[1] = Int32GetDatum(tin);
		rvals[2] = Int32GetDatum(tout);
		if (s->model)
			rvals[3] = CStringGetTextDatum(s->model);
		else
			rnulls[3] = 'n';
		rvals[4] = CStringGetTextDatum(s->workspace);
		rvals[5] = Int64GetDatum(r->tokens_cached);
		if (SpiUtilExecPlan(&root_plan,
							"UPDATE agent.runs x "
							"SET tokens_total = x.tokens_total + $2 + $3, "
							"tokens_reserved = greatest(0, x.tokens_reserved), "
							"tokens_in = x.tokens_in + $2, tokens_out = x.tokens_out + $3, "
							"model = coalesce($4, x.model), tokens_cached = x.tokens_cached + $6 "
							"FROM agent.agents a "
							"WHERE x.workspace_id = $5 AND x.id = $1 AND x.parent_run_id IS NULL "
							"AND coalesce(x.root_run_id, x.id) = x.id "
							"AND a.workspace_id = $5 AND a.id = x.agent_id "
							"RETURNING x.status, coalesce(x.token_budget, a.default_token_budget) AS budget, "
							"x.tokens_total AS used",
							6, rtypes, rvals, rnulls, false, 0) != SPI_OK_UPDATE_RETURNING)
			elog(ERROR, "could not add the usage of run " INT64_FORMAT, s->run_id);
		if (SPI_processed == 1)
			goto status;
	}

	vals[0] = Int64GetDatum(s->run_id);
	vals[1] = Int32GetDatum(tin);
	vals[2] = Int32GetDatum(tout);
	vals[3] = CStringGetTextDatum(s->model);
	if (SpiUtilExecPlan(&usage_plan, "SELECT agent.add_usage($1, $2, $3, $4)", 4, types, vals, NULL, false, 0)
		!= SPI_OK_SELECT)
		elog(ERROR, "agent.add_usage failed");
	if (r->tokens_cached > 0)
	{
		static SPIPlanPtr cached_plan = NULL;
		Oid			ctypes[3] = {INT8OID, INT8OID, TEXTOID};
		Datum		cvals[3] = {Int64GetDatum(s->run_id), Int64GetDatum(r->tokens_cached),
		CStringGetTextDatum(s->workspace)};

		if (SpiUtilExecPlan(&cached_plan, "UPDATE agent.runs SET tokens_cached = tokens_cached + $2 "
							 "WHERE workspace_id = $3 AND id = $1",
							 3, ctypes, cvals, NULL, false, 0) != SPI_OK_UPDATE)
			elog(ERROR, "could not record the cached tokens of run " INT64_FORMAT, s->run_id);
	}
	svals[0] = Int64GetDatum(s->run_id);
	svals[1] = CStringGetTextDatum(s->workspace);
	if (SpiUtilExecPlan(&status_plan, "SELECT r.status, coalesce(r.token_budget, a.default_token_budget) AS budget, "
						 "r.tokens_total AS used "
						 "FROM agent.runs r JOIN agent.agents a ON a.workspace_id = r.workspace_id AND a.id = r.agent_id "
						 "WHERE r.workspace_id = $2 AND r.id = $1",
						 2, stypes, svals, NULL, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "run " INT64_FORMAT " disappeared", s->run_id);
status:
	tup = SPI_tuptable->vals[0];
	td = SPI_tuptable->tupdesc;
	SpiUtilColumnsByName(td, columns, att, lengthof(columns));
	status = SPI_getvalue(tup, td, att[0]);
	if (status == NULL || strcmp(status, "running") != 0)
		return false;
	*budget = ColInt64(tup, td, att[1]);
	*used = ColInt64(tup, td, att[2]);
	return true;
}

/*
 * A batch of final answers (a jsonb array of agent._worker_finish_replies's
 * records) recorded in a few set-based statements; outcomes[i] is the
 * outcome of ids[i] (f finished, c continue, g gone, s single), left as it
 * was for a run the function did not name.
 */
void
RunSqlFinishReplies(const char *replies, int64 *ids, char *outcomes, int n)
{
	Oid			types[2] = {JSONBOID, INT4OID};
	Datum		vals[2];
	static SPIPlanPtr plan = NULL;
	static const char *const columns[] = {"run_id", "outcome"};
	int			att[2];
	SPITupleTable *tt;
	uint64		nrows;

	vals[0] = DirectFunctionCall1(jsonb_in, CStringGetDatum(replies));
	vals[1] = Int32GetDatum(pg_agents_run_lease);
	if (SpiUtilExecPlan(&plan, "SELECT f.run_id, f.outcome FROM agent._worker_finish_replies($1, $2) f",
						 2, types, vals, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "agent._worker_finish_replies failed");
	tt = SPI_tuptable;
	nrows = SPI_processed;
	SpiUtilColumnsByName(tt->tupdesc, columns, att, lengthof(columns));
	for (uint64 k = 0; k < nrows; k++)
	{
		int64		id = ColInt64(tt->vals[k], tt->tupdesc, att[0]);
		char	   *oc = SPI_getvalue(tt->vals[k], tt->tupdesc, att[1]);

		for (int i = 0; i < n; i++)
			if (ids[i] == id && oc)
				outcomes[i] = oc[0];
	}
}

/* ---------------------------------------------------------------------
 * Failures, retries, children
 * ---------------------------------------------------------------------
 */

/* the run ends with an error step and its status (unless it is no longer ours) */
void
RunSqlRecordFailure(Slot *s, const char *status, const char *error)
{
	json_t	   *out;

	if (!RunSqlHoldLease(s->run_id, s->workspace))
		return;
	out = json_pack("{s:s}", "error", error);
	ToolGateRecordStep(s->run_id, s->workspace, "error", "run", NULL, out, status, 0, 0);
	json_decref(out);
	RunSqlFinish(s->run_id, s->workspace, status, NULL, error);
}

/* the step of a failed call that is retried; the slot ends when the run is no longer ours */
void
RunSqlRecordRetry(Slot *s, json_t *info)
{
	if (!RunSqlHoldLease(s->run_id, s->workspace))
	{
		s->state = SLOT_FREE;
		return;
	}
	ToolGateRecordStep(s->run_id, s->workspace, "error", "llm", NULL, info, "retry", 0, s->call_started);
}

/*
 * The run parks (waiting_children) until its delegated child ends, then
 * agent.wait_for_children re-queues it; true when it parked (the slot is
 * freed), false when the child has already ended (the slot waits on).
 */
bool
RunSqlParkForChildren(int64 run_id)
{
	Oid			types[1] = {INT8OID};
	Datum		vals[1];
	bool		isnull;

	vals[0] = Int64GetDatum(run_id);
	if (SPI_execute_with_args("SELECT agent.wait_for_children($1)", 1, types, vals, NULL, false, 1)
		!= SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "agent.wait_for_children returned no row");
	return DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/* ---------------------------------------------------------------------
 * Start and drain of the worker
 * ---------------------------------------------------------------------
 */

/* the runs a previous worker left running go back to the queue (agent._worker_reclaim) */
void
RunSqlReclaim(void)
{
	Oid			types[1] = {INT4OID};
	Datum		vals[1];

	vals[0] = Int32GetDatum(MyProcPid);
	if (SPI_execute_with_args("SELECT agent._worker_reclaim($1)", 1, types, vals, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "agent._worker_reclaim failed");
	if (SPI_processed == 1)
	{
		char	   *n = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		if (n && strcmp(n, "0") != 0)
			ereport(LOG,
					(errmsg("pg_agents worker: reclaimed %s runs left running by a previous worker", n)));
	}
}

/*
 * The runs held at the end of a drain go back to the queue
 * (agent._worker_requeue: attempts not counted, the saved conversation
 * kept); returns how many.
 */
int
RunSqlRequeue(int64 *ids, int n)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(n, 1));
	Oid			types[2] = {INT8ARRAYOID, INT4OID};
	Datum		vals[2];
	bool		isnull;

	for (int i = 0; i < n; i++)
		elems[i] = Int64GetDatum(ids[i]);
	vals[0] = PointerGetDatum(construct_array(elems, n, INT8OID, sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	vals[1] = Int32GetDatum(MyProcPid);
	if (SPI_execute_with_args("SELECT agent._worker_requeue($1, $2)", 2, types, vals, NULL, false, 1)
		!= SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "agent._worker_requeue failed");
	return DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}
