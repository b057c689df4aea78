/*-------------------------------------------------------------------------
 *
 * enqueue.c
 *		agent._enqueue_run, the one way a run is queued: the agent (of the
 *		session's workspace, or its own), the parent run of a child, the
 *		hourly cap of autonomous runs under the agent's row of agent.locks
 *		(counted once a transaction, then carried by capmemo.c), the run row,
 *		NOTIFY agent_runs, the worker's wake-up at commit.
 *
 * In C with kept plans (it was PL/pgSQL): fire_event calls it for every
 * matching event (EventsEnqueueRun, already acting as the owner of schema
 * "agent"), and the interpreter, the SECURITY DEFINER switch and a dozen
 * statement executions a call were most of what separated a matching event
 * from a plain INSERT of its run row (docs/events.md, "What a matching
 * event costs").  Every statement names the workspace (Citus routes it), as
 * before; the statements are the same.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"

#include "capmemo.h"
#include "enqueue.h"
#include "util/guc.h"
#include "util/relcheck.h"
#include "util/spi_util.h"
#include "util/wake.h"

PG_FUNCTION_INFO_V1(pg_agents_enqueue_run);

static SPIPlanPtr plan_agent = NULL;
static SPIPlanPtr plan_agent_ws = NULL;
static SPIPlanPtr plan_parent = NULL;
static SPIPlanPtr plan_lock = NULL;
static SPIPlanPtr plan_lock_make = NULL;
static SPIPlanPtr plan_count = NULL;
static SPIPlanPtr plan_seq = NULL;
static SPIPlanPtr plan_insert = NULL;

/*
 * The sequence of agent.runs.id (pg_get_serial_sequence reads pg_depend: once
 * a backend, until a relcache invalidation of agent.runs or the sequence, as
 * when the extension is dropped or the table altered).
 */
static Oid	runs_seq = InvalidOid;
static Oid	runs_relid = InvalidOid;
static bool seq_callback = false;

static void
SeqInvalidate(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == runs_relid || relid == runs_seq)
		runs_seq = runs_relid = InvalidOid;
}

static int64
NextRunId(void)
{
	if (!OidIsValid(runs_seq))
	{
		int			ret;
		bool		isnull;
		Datum		d;
		Oid			rel = get_relname_relid("runs", get_namespace_oid("agent", false));

		if (!seq_callback)
		{
			RelcheckRegisterCallback(SeqInvalidate, (Datum) 0);
			seq_callback = true;
		}
		SpiUtilKeptPlan(&plan_seq,
						"SELECT pg_catalog.pg_get_serial_sequence('agent.runs', 'id')::pg_catalog.regclass::pg_catalog.oid",
						0, NULL);
		ret = SPI_execute_plan(plan_seq, NULL, NULL, false, 1);
		if (ret != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "pg_agents: could not find the sequence of agent.runs: %s", SPI_result_code_string(ret));
		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		if (isnull || !OidIsValid(rel))
			elog(ERROR, "pg_agents: agent.runs.id has no sequence");
		runs_relid = rel;
		runs_seq = DatumGetObjectId(d);
	}
	/* nextval(regclass): its own privilege check, as the function's owner */
	return DatumGetInt64(DirectFunctionCall1(nextval_oid, ObjectIdGetDatum(runs_seq)));
}

/* an int8 column of the first row of the last result; false when NULL */
static bool
SpiInt8(int col, int64 *out)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col, &isnull);

	if (!isnull)
		*out = DatumGetInt64(d);
	return !isnull;
}

int64
EventsEnqueueRun(const EnqueueArgs *a)
{
	const char *ws_setting = GetConfigOption("pg_agents.workspace", true, false);
	char	   *ws = NULL;
	bool		deleted = true;
	bool		has_cap = false;
	int64		cap = 0;
	bool		found = false;
	int64		root = 0;
	bool		has_root = false;
	int32		depth = 0;
	bool		autonomous = a->regime != NULL && strcmp(a->regime, "autonomous") == 0;
	bool		manual = a->regime != NULL && strcmp(a->regime, "manual") == 0;
	int64		recent = 0;
	const char *status = "queued";
	char	   *error = NULL;
	int64		id;
	int			ret;
	bool		isnull;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_agents: SPI_connect failed");

	/*
	 * every statement names the workspace: the session's, or the agent's own
	 * (a session bound to none, such as agent.tick's, or an event of a row of
	 * another workspace than the session's: the callers check the boundary)
	 */
	if (a->has_agent && a->agent_workspace != NULL)
	{
		/* the caller read the agent's row (active, not deleted) just now */
		found = true;
		deleted = false;
		ws = pstrdup(a->agent_workspace);
		has_cap = a->has_cap;
		cap = a->cap;
	}
	else if (a->has_agent)
	{
		Oid			types[2] = {INT8OID, TEXTOID};
		Datum		args[2];
		char		nulls[2] = {' ', ' '};

		SpiUtilKeptPlan(&plan_agent,
						"SELECT x.workspace_id, x.deleted_at IS NOT NULL, x.hourly_run_cap::pg_catalog.int8 "
						"FROM agent.agents x WHERE x.workspace_id OPERATOR(pg_catalog.=) $2 "
						"AND x.id OPERATOR(pg_catalog.=) $1",
						2, types);
		args[0] = Int64GetDatum(a->agent_id);
		if (ws_setting != NULL && ws_setting[0] != '\0')
		{
			args[1] = CStringGetTextDatum(ws_setting);
			ret = SPI_execute_plan(plan_agent, args, nulls, false, 1);
			if (ret != SPI_OK_SELECT)
				elog(ERROR, "pg_agents: agent lookup failed: %s", SPI_result_code_string(ret));
			found = SPI_processed > 0;
		}
		if (!found)
		{
			SpiUtilKeptPlan(&plan_agent_ws,
							"SELECT x.workspace_id FROM agent.agents x WHERE x.id OPERATOR(pg_catalog.=) $1",
							1, types);
			ret = SPI_execute_plan(plan_agent_ws, args, NULL, false, 1);
			if (ret != SPI_OK_SELECT)
				elog(ERROR, "pg_agents: agent lookup failed: %s", SPI_result_code_string(ret));
			if (SPI_processed > 0)
			{
				Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

				if (isnull)
					nulls[1] = 'n';
				else
					args[1] = d;
				ret = SPI_execute_plan(plan_agent, args, nulls, false, 1);
				if (ret != SPI_OK_SELECT)
					elog(ERROR, "pg_agents: agent lookup failed: %s", SPI_result_code_string(ret));
				found = SPI_processed > 0;
			}
		}
		if (found)
		{
			ws = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
			deleted = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
			has_cap = SpiInt8(3, &cap);
		}
	}
	if (!found || deleted || ws == NULL)
	{
		if (a->has_agent)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("agent " INT64_FORMAT " does not exist", a->agent_id)));
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("agent <NULL> does not exist")));
	}

	if (a->has_parent)
	{
		Oid			types[2] = {TEXTOID, INT8OID};
		Datum		args[2] = {CStringGetTextDatum(ws), Int64GetDatum(a->parent_run_id)};

		SpiUtilKeptPlan(&plan_parent,
						"SELECT x.root_run_id, x.depth FROM agent.runs x "
						"WHERE x.workspace_id OPERATOR(pg_catalog.=) $1 AND x.id OPERATOR(pg_catalog.=) $2",
						2, types);
		ret = SPI_execute_plan(plan_parent, args, NULL, false, 1);
		if (ret != SPI_OK_SELECT)
			elog(ERROR, "pg_agents: run lookup failed: %s", SPI_result_code_string(ret));
		if (SPI_processed > 0)
		{
			Datum		d;

			has_root = SpiInt8(1, &root);
			d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
			/* coalesce(p.depth + 1, 0) */
			depth = isnull ? 0 : DatumGetInt32(d) + 1;
		}
	}

	if (autonomous)
	{
		Oid			types[3] = {TEXTOID, INT8OID, INT8OID};
		Datum		args[3];
		char	   *key = psprintf(INT64_FORMAT, a->agent_id);
		bool		memo = true;

		if (!has_cap)
			cap = pg_agents_hourly_run_cap;

		/*
		 * one queue decision at a time per agent, so that concurrent events
		 * respect the cap: the agent's row of agent.locks, which no other
		 * role can lock (the row made by agent._lock on the agent's first
		 * queueing).  A count carried by the memo was made while holding
		 * that lock, in this transaction, at a level that did not roll back
		 * (the memo's undo follows the subtransactions): it is still held.
		 */
		if (!EventsCapMemoGet(a->agent_id, &recent))
		{
			memo = false;
			args[0] = CStringGetTextDatum(key);
			SpiUtilKeptPlan(&plan_lock,
							"SELECT FROM agent.locks l WHERE l.purpose OPERATOR(pg_catalog.=) 'cap' "
							"AND l.key OPERATOR(pg_catalog.=) $1 FOR UPDATE",
							1, types);
			ret = SPI_execute_plan(plan_lock, args, NULL, false, 0);
			if (ret != SPI_OK_SELECT)
				elog(ERROR, "pg_agents: cap lock failed: %s", SPI_result_code_string(ret));
			if (SPI_processed == 0)
			{
				SpiUtilKeptPlan(&plan_lock_make, "SELECT agent._lock('cap', $1)", 1, types);
				ret = SPI_execute_plan(plan_lock_make, args, NULL, false, 0);
				if (ret != SPI_OK_SELECT)
					elog(ERROR, "pg_agents: cap lock failed: %s", SPI_result_code_string(ret));
			}
		}

		/*
		 * Counting stops at the cap: the check costs at most cap rows.  While
		 * this transaction holds the lock no other one queues for the agent,
		 * and now() does not move, so the count only grows by the runs queued
		 * here: it is counted once per transaction and then carried in
		 * backend memory (capmemo.c: undone with a rolled-back
		 * subtransaction, like the rows).
		 */
		if (!memo)
		{
			args[0] = CStringGetTextDatum(ws);
			args[1] = Int64GetDatum(a->agent_id);
			args[2] = Int64GetDatum(cap);
			SpiUtilKeptPlan(&plan_count,
							"SELECT pg_catalog.count(*) FROM ("
							"  SELECT 1 FROM agent.runs r"
							"   WHERE r.workspace_id OPERATOR(pg_catalog.=) $1 AND r.agent_id OPERATOR(pg_catalog.=) $2"
							"     AND r.regime OPERATOR(pg_catalog.=) 'autonomous'"
							"     AND r.created_at OPERATOR(pg_catalog.>) (pg_catalog.now() OPERATOR(pg_catalog.-) pg_catalog.interval '1 hour')"
							"     AND r.status OPERATOR(pg_catalog.<>) 'budget_exceeded'"
							"   LIMIT $3) s",
							3, types);
			ret = SPI_execute_plan(plan_count, args, NULL, false, 1);
			if (ret != SPI_OK_SELECT || SPI_processed != 1)
				elog(ERROR, "pg_agents: cap count failed: %s", SPI_result_code_string(ret));
			(void) SpiInt8(1, &recent);
		}
		if (recent >= cap)
		{
			status = "budget_exceeded";
			error = psprintf("hourly run cap of " INT64_FORMAT " reached", cap);
		}
	}

	/* the id is taken first so that a root run is its own root in one INSERT */
	id = NextRunId();

	{
		Oid			types[15] = {INT8OID, TEXTOID, INT8OID, INT8OID, INT8OID, INT8OID, INT4OID,
								 TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT2OID, JSONBOID, TEXTOID, INT8OID};
		Datum		args[15];
		char		nulls[15];
		bool		queued = strcmp(status, "queued") == 0;

		memset(nulls, ' ', sizeof(nulls));
		args[0] = Int64GetDatum(id);
		args[1] = CStringGetTextDatum(ws);
		args[2] = Int64GetDatum(a->agent_id);
		if (a->has_trigger)
			args[3] = Int64GetDatum(a->trigger_id);
		else
			nulls[3] = 'n';
		if (a->has_parent)
			args[4] = Int64GetDatum(a->parent_run_id);
		else
			nulls[4] = 'n';
		args[5] = Int64GetDatum(has_root ? root : id);
		args[6] = Int32GetDatum(depth);
		if (a->regime)
			args[7] = CStringGetTextDatum(a->regime);
		else
			nulls[7] = 'n';
		if (a->origin)
			args[8] = CStringGetTextDatum(a->origin);
		else
			nulls[8] = 'n';
		if (a->requested_by)
			args[9] = CStringGetTextDatum(a->requested_by);
		else
			nulls[9] = 'n';
		args[10] = CStringGetTextDatum(status);
		args[11] = Int16GetDatum(manual ? 10 : 0);
		if (a->input)
			args[12] = JsonbPGetDatum(a->input);
		else
			args[12] = DirectFunctionCall1(jsonb_in, CStringGetDatum("{}"));
		if (error)
			args[13] = CStringGetTextDatum(error);
		else
			nulls[13] = 'n';
		if (a->has_token_budget)
			args[14] = Int64GetDatum(a->token_budget);
		else
			nulls[14] = 'n';
		SpiUtilKeptPlan(&plan_insert,
						"INSERT INTO agent.runs (id, workspace_id, agent_id, trigger_id, parent_run_id, root_run_id, depth, regime, "
						"  origin, requested_by, status, priority, input, error, token_budget, finished_at) "
						"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, "
						"  CASE WHEN $11 OPERATOR(pg_catalog.<>) 'queued' THEN pg_catalog.now() END)",
						15, types);
		ret = SPI_execute_plan(plan_insert, args, nulls, false, 0);
		if (ret != SPI_OK_INSERT)
			elog(ERROR, "pg_agents: could not queue run: %s", SPI_result_code_string(ret));

		if (autonomous)
			EventsCapMemoSet(a->agent_id, recent + (queued ? 1 : 0));
		/* as pg_notify(): the payload json_build_object(...)::text wrote */
		PreventCommandDuringRecovery("NOTIFY");
		Async_Notify("agent_runs",
					 psprintf("{\"run_id\" : " INT64_FORMAT ", \"agent_id\" : " INT64_FORMAT ", \"status\" : \"%s\"}",
							  id, a->agent_id, status));
		if (queued)
			WakeRequest();	/* sets the worker's latch at commit */
	}
	SPI_finish();
	return id;
}

/*
 * agent._enqueue_run(p_agent_id bigint, p_regime text, p_origin text,
 *                    p_input jsonb DEFAULT '{}', p_trigger_id bigint DEFAULT NULL,
 *                    p_requested_by text DEFAULT NULL, p_parent_run_id bigint DEFAULT NULL,
 *                    p_token_budget bigint DEFAULT NULL) RETURNS bigint
 * SECURITY DEFINER, search_path pg_catalog, pg_temp (set by the function's
 * definition).
 */
Datum
pg_agents_enqueue_run(PG_FUNCTION_ARGS)
{
	EnqueueArgs a;

	memset(&a, 0, sizeof(a));
	a.has_agent = !PG_ARGISNULL(0);
	if (a.has_agent)
		a.agent_id = PG_GETARG_INT64(0);
	a.regime = PG_ARGISNULL(1) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(1));
	a.origin = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
	a.input = PG_ARGISNULL(3) ? NULL : PG_GETARG_JSONB_P(3);
	a.has_trigger = !PG_ARGISNULL(4);
	if (a.has_trigger)
		a.trigger_id = PG_GETARG_INT64(4);
	a.requested_by = PG_ARGISNULL(5) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(5));
	a.has_parent = !PG_ARGISNULL(6);
	if (a.has_parent)
		a.parent_run_id = PG_GETARG_INT64(6);
	a.has_token_budget = !PG_ARGISNULL(7);
	if (a.has_token_budget)
		a.token_budget = PG_GETARG_INT64(7);
	PG_RETURN_INT64(EventsEnqueueRun(&a));
}
