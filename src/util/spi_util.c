/*-------------------------------------------------------------------------
 *
 * spi_util.c
 *		SPI utilities shared by the in-database code and the worker: the
 *		one helper that prepares a statement once per backend and keeps its
 *		plan (SPI_keepplan; the plan cache re-plans it when the objects it
 *		uses change), catalog look-ups by name that answer InvalidOid
 *		instead of raising, the one unit-of-work runner (a short transaction
 *		around a function, for the worker's loop) and the by-name column
 *		lookup that units read their results with.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "spi_util.h"

#include "access/xact.h"
#include "fmgr.h"
#include "pgstat.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

static Oid	ToReg(PGFunction fn, const char *name);

/*
 * The plan of sql, prepared on first use and kept in *cache for the life
 * of the backend.  Errors when the statement cannot be prepared or kept.
 * In a database with Citus (pg_catalog.pg_dist_partition exists, looked up
 * once per backend) the plan is always made with the statement's
 * parameters (a custom plan): Citus plans no generic plan of a statement
 * that joins or nests distributed tables ("could not create distributed
 * plan"), and re-plans its distributed statements anyway.
 */
SPIPlanPtr
SpiUtilKeptPlan(SPIPlanPtr *cache, const char *sql, int nargs, Oid *types)
{
	static int	citus = -1;

	if (*cache == NULL)
	{
		SPIPlanPtr	plan;

		if (citus < 0)
			citus = OidIsValid(ToReg(to_regclass, "pg_catalog.pg_dist_partition")) ? 1 : 0;
		plan = citus == 1 ? SPI_prepare_cursor(sql, nargs, types, CURSOR_OPT_CUSTOM_PLAN)
			: SPI_prepare(sql, nargs, types);

		if (plan == NULL)
			elog(ERROR, "pg_agents: could not prepare \"%s\": %s", sql,
				 SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "pg_agents: could not keep the plan of \"%s\"", sql);
		*cache = plan;
	}
	return *cache;
}

/*
 * Executes sql through its kept plan (SpiUtilKeptPlan); returns
 * SPI_execute_plan's result code.
 */
int
SpiUtilExecPlan(SPIPlanPtr *cache, const char *sql, int nargs, Oid *types,
				Datum *vals, const char *nulls, bool read_only, long count)
{
	return SPI_execute_plan(SpiUtilKeptPlan(cache, sql, nargs, types),
							vals, nulls, read_only, count);
}

/*
 * Executes a prepared plan and errors unless SPI answers expected; what
 * names the statement in the message.
 */
void
SpiUtilExecExpect(SPIPlanPtr plan, Datum *vals, const char *nulls, bool read_only,
				  int expected, const char *what)
{
	int			rc = SPI_execute_plan(plan, vals, nulls, read_only, 0);

	if (rc != expected)
		elog(ERROR, "pg_agents: %s failed: %s", what, SPI_result_code_string(rc));
}

/* calls a to_reg* function: InvalidOid when the object is missing */
static Oid
ToReg(PGFunction fn, const char *name)
{
	LOCAL_FCINFO(fcinfo, 1);
	Datum		d;

	InitFunctionCallInfoData(*fcinfo, NULL, 1, InvalidOid, NULL, NULL);
	fcinfo->args[0].value = CStringGetTextDatum(name);
	fcinfo->args[0].isnull = false;
	d = fn(fcinfo);
	return fcinfo->isnull ? InvalidOid : DatumGetObjectId(d);
}

/* the function of a signature such as "agent.redact(jsonb)", or InvalidOid */
Oid
SpiUtilLookupProcedure(const char *signature)
{
	return ToReg(to_regprocedure, signature);
}

/* whether a function of that signature exists */
bool
SpiUtilFunctionExists(const char *signature)
{
	return OidIsValid(ToReg(to_regprocedure, signature));
}

/*
 * Runs body(arg) in an internal subtransaction, committed when it returns
 * (or rolled back anyway when !keep).  Returns NULL when it succeeded; when
 * it raised, rolls the subtransaction back and returns the error, copied
 * into the caller's memory context, for the caller to report or re-throw.
 */
ErrorData *
SpiUtilSubxact(void (*body) (void *arg), void *arg, bool keep)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	ErrorData  *volatile edata = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);
	PG_TRY();
	{
		body(arg);
		if (keep)
			ReleaseCurrentSubTransaction();
		else
			RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
	}
	PG_END_TRY();
	return edata;
}

/* the SQLSTATE of the last unit of SpiUtilUnit that failed (0 after a success) */
int			SpiUtilUnitErrcode = 0;

/*
 * One unit of work: a short transaction (worker_spi's order:
 * statement timestamp, transaction, SPI, snapshot, activity) around fn.
 * An error is caught and the transaction aborted; false then, with the
 * error's message in errbuf.  Every transaction of the loop but the
 * readiness probe goes through here (the slots' units of run_slot.c, the
 * tick, the MCP refresh in worker.c).
 */
bool
SpiUtilUnit(const char *activity, SpiUtilUnitFn fn, void *arg, char *errbuf, size_t errlen)
{
	MemoryContext cxt = CurrentMemoryContext;
	volatile bool ok = true;

	SpiUtilUnitErrcode = 0;
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PG_TRY();
	{
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		PushActiveSnapshot(GetTransactionSnapshot());
		pgstat_report_activity(STATE_RUNNING, activity);
		fn(arg);
		SPI_finish();
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		strlcpy(errbuf, edata->message ? edata->message : "unknown error", errlen);
		SpiUtilUnitErrcode = edata->sqlerrcode;
		FreeErrorData(edata);
		ok = false;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	pgstat_report_stat(false);
	pgstat_report_activity(STATE_IDLE, NULL);
	return ok;
}

/*
 * The column numbers of names in a query's result (SPI_fnumber), so that
 * the worker reads its rows by name, never by position.
 */
void
SpiUtilColumnsByName(TupleDesc td, const char *const *names, int *att, int n)
{
	for (int i = 0; i < n; i++)
		if ((att[i] = SPI_fnumber(td, names[i])) <= 0)
			elog(ERROR, "column \"%s\" is missing from the result of a worker query", names[i]);
}
