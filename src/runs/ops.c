/*-------------------------------------------------------------------------
 *
 * ops.c
 *		Operations for DBAs (docs/operations.md): what agent.worker_status
 *		shows of the worker, the pause flag the claim path reads, and the
 *		run log (pg_agents.log_runs).
 *
 * The worker's status lives in shared memory (PgAgentsWorkerInfo, src/
 * shmem.c), written by the worker as it goes and read by
 * agent._worker_status().  The pause state itself is a row of
 * agent.worker_control (it survives a restart); shared memory caches it:
 * agent.pause_worker() sets the cache when its transaction commits, and the
 * worker syncs it from the table at every tick.
 *
 * The run log: a row trigger on agent.runs notes every run that reaches a
 * terminal status; the notes of a transaction are written as LOG lines when
 * it commits (a rolled-back finish, or a finish in a rolled-back
 * subtransaction, logs nothing).  The line carries ids, status, times,
 * tokens and an error code, never the run's input, output or error text.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "ops.h"
#include "util/compat.h"
#include "util/guc.h"
#include "util/redact.h"
#include "util/shmem.h"
#include "util/wake.h"

PG_FUNCTION_INFO_V1(pg_agents_worker_status);
PG_FUNCTION_INFO_V1(pg_agents_worker_sync_pause);
PG_FUNCTION_INFO_V1(pg_agents_run_log);
PG_FUNCTION_INFO_V1(pg_agents_run_error_code);

/* set in the worker process while it drains (SIGTERM) */
static bool worker_draining = false;

/* the worker's sync from the table: pause_seq before its snapshot */
static uint32 sync_seq = 0;

/* ------------------------------------------------------------------------
 * The worker's status, written by the worker
 * ------------------------------------------------------------------------
 */

/*
 * Publishes the worker's state in shared memory (under its spinlock), for
 * the status functions; no-op without shared memory.
 */
void
RunsWorkerSetState(PgAgentsWorkerState state)
{
	PgAgentsWorkerInfo *w = ShmemWorker();

	if (w == NULL)
		return;
	SpinLockAcquire(&w->mutex);
	w->state = state;
	SpinLockRelease(&w->mutex);
}

/* the last error of the worker, redacted and cut to PGA_WORKER_ERROR_LEN */
void
RunsWorkerNoteError(const char *msg)
{
	PgAgentsWorkerInfo *w = ShmemWorker();
	char	   *red;
	int			len;

	if (w == NULL || msg == NULL)
		return;
	/* NULL when there was nothing to redact */
	red = RedactText(msg, strlen(msg), &len);
	SpinLockAcquire(&w->mutex);
	strlcpy(w->last_error, red ? red : msg, sizeof(w->last_error));
	w->last_error_at = GetCurrentTimestamp();
	SpinLockRelease(&w->mutex);
	if (red)
		pfree(red);
}

/* an MCP call of a tool starts or ends (it blocks the worker meanwhile) */
void
RunsWorkerNoteMcp(bool starting)
{
	PgAgentsWorkerInfo *w = ShmemWorker();

	if (w == NULL || !PGA_IS_BACKGROUND_WORKER)
		return;
	SpinLockAcquire(&w->mutex);
	if (starting)
	{
		w->mcp_in_flight++;
		w->mcp_since = GetCurrentTimestamp();
	}
	else if (w->mcp_in_flight > 0)
		w->mcp_in_flight--;
	SpinLockRelease(&w->mutex);
}

/*
 * Whether the worker is paused (agent.worker_control, as last published in
 * shared memory); false when there is no shared memory.
 */
bool
RunsWorkerPaused(void)
{
	PgAgentsWorkerInfo *w = ShmemWorker();

	return w != NULL && pg_atomic_read_u32(&w->paused) != 0;
}

/* whether the worker may claim runs now: not paused, not draining */
bool
RunsWorkerClaimsStopped(void)
{
	return worker_draining || RunsWorkerPaused();
}

/*
 * Called by the worker when it starts draining (shutting down): from then on
 * it claims no more runs (RunsWorkerClaimsStopped).  Process-local.
 */
void
RunsWorkerDraining(bool on)
{
	worker_draining = on;
}

/* ------------------------------------------------------------------------
 * agent._worker_status()
 * ------------------------------------------------------------------------
 */

/* The state as shown by agent._worker_status(). */
static const char *
StateName(PgAgentsWorkerState s)
{
	switch (s)
	{
		case PGA_WORKER_STOPPED:
			return "stopped";
		case PGA_WORKER_STARTING:
			return "starting";
		case PGA_WORKER_WAITING_EXTENSION:
			return "waiting for extension";
		case PGA_WORKER_WAITING_UPDATE:
			return "waiting for extension update";
		case PGA_WORKER_RUNNING:
			return "running";
		case PGA_WORKER_PAUSED:
			return "paused";
		case PGA_WORKER_DRAINING:
			return "draining";
	}
	return "unknown";
}

/*
 * agent._worker_status() RETURNS TABLE(pid, database, started_at, state,
 * slots_in_use, max_concurrent_runs, llm_requests_in_flight,
 * mcp_requests_in_flight, mcp_request_since, last_tick, last_error,
 * last_error_at, restarts, shmem_resets): one row, none when the library
 * was not preloaded.
 */
Datum
pg_agents_worker_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PgAgentsWorkerInfo *w = ShmemWorker();
	PgAgentsWorkerInfo copy;
	Datum		values[14];
	bool		nulls[14];

	InitMaterializedSRF(fcinfo, 0);
	if (w == NULL)
		return (Datum) 0;
	SpinLockAcquire(&w->mutex);
	memcpy(&copy, w, offsetof(PgAgentsWorkerInfo, paused));
	SpinLockRelease(&w->mutex);

	memset(nulls, 0, sizeof(nulls));
	values[0] = Int32GetDatum(copy.pid);
	nulls[0] = copy.pid == 0;
	{
		char	   *db = get_database_name(MyDatabaseId);	/* its worker's database */

		values[1] = CStringGetTextDatum(db ? db : "");
	}
	values[2] = TimestampTzGetDatum(copy.started_at);
	nulls[2] = copy.started_at == 0;
	/* running or paused: as the pause flag is now (the worker publishes it a pass later) */
	if (copy.state == PGA_WORKER_RUNNING || copy.state == PGA_WORKER_PAUSED)
		copy.state = pg_atomic_read_u32(&w->paused) ? PGA_WORKER_PAUSED : PGA_WORKER_RUNNING;
	values[3] = CStringGetTextDatum(StateName(copy.pid == 0 ? PGA_WORKER_STOPPED : copy.state));
	values[4] = Int32GetDatum(copy.pid == 0 ? 0 : copy.slots_in_use);
	values[5] = Int32GetDatum(copy.pid == 0 ? pg_agents_max_concurrent_runs : copy.max_slots);
	values[6] = Int32GetDatum(copy.pid == 0 ? 0 : copy.llm_in_flight);
	values[7] = Int32GetDatum(copy.pid == 0 ? 0 : copy.mcp_in_flight);
	values[8] = TimestampTzGetDatum(copy.mcp_since);
	nulls[8] = copy.pid == 0 || copy.mcp_in_flight == 0;
	values[9] = TimestampTzGetDatum(copy.last_tick);
	nulls[9] = copy.last_tick == 0;
	values[10] = CStringGetTextDatum(copy.last_error);
	nulls[10] = copy.last_error[0] == '\0';
	values[11] = TimestampTzGetDatum(copy.last_error_at);
	nulls[11] = copy.last_error_at == 0;
	values[12] = Int64GetDatum((int64) (copy.starts > 0 ? copy.starts - 1 : 0));
	values[13] = Int64GetDatum((int64) copy.resets);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}

/* ------------------------------------------------------------------------
 * Pause: the cache in shared memory follows agent.worker_control at commit
 * ------------------------------------------------------------------------
 */

static int	pause_pending = -1;		/* -1 nothing, 0 resume, 1 pause */
static bool pause_callback = false;

/*
 * Transaction callback of the pause and resume calls: at commit, publishes the
 * pending pause state in shared memory and bumps pause_seq; an abort drops it.
 */
static void
PauseXactCallback(XactEvent event, void *arg)
{
	PgAgentsWorkerInfo *w;

	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			w = ShmemWorker();
			if (pause_pending >= 0 && w != NULL)
			{
				SpinLockAcquire(&w->mutex);
				pg_atomic_write_u32(&w->paused, (uint32) pause_pending);
				w->pause_seq++;
				SpinLockRelease(&w->mutex);
			}
			pause_pending = -1;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			/* a prepared pause is found by the worker's next tick */
			pause_pending = -1;
			break;
		default:
			break;
	}
}

/*
 * The worker reads agent.worker_control at every tick.  A pause or resume
 * that commits between the snapshot of that read and its write into the
 * cache is newer than what the worker read: the worker notes pause_seq
 * before the statement and writes only if no change committed since.
 */
void
RunsWorkerPauseSyncBegin(void)
{
	PgAgentsWorkerInfo *w = ShmemWorker();

	if (w == NULL)
		return;
	SpinLockAcquire(&w->mutex);
	sync_seq = w->pause_seq;
	SpinLockRelease(&w->mutex);
}

/*
 * agent._worker_sync_pause(paused boolean): the shared cache of the pause
 * state takes this value when the transaction commits (and the worker is
 * woken).  In the worker itself (syncing from the table) it is immediate,
 * unless a change committed since RunsWorkerPauseSyncBegin.
 */
Datum
pg_agents_worker_sync_pause(PG_FUNCTION_ARGS)
{
	bool		paused = PG_GETARG_BOOL(0);
	PgAgentsWorkerInfo *w = ShmemWorker();

	if (w == NULL)
		PG_RETURN_VOID();
	if (PGA_IS_BACKGROUND_WORKER)
	{
		SpinLockAcquire(&w->mutex);
		if (w->pause_seq == sync_seq)
			pg_atomic_write_u32(&w->paused, paused ? 1 : 0);
		SpinLockRelease(&w->mutex);
		PG_RETURN_VOID();
	}
	/* only the worker's database holds the worker's pause state */
	{
		char	   *db = get_database_name(MyDatabaseId);

		/* pg_agents.database empty: every database has its worker */
		if (db == NULL ||
			(pg_agents_database != NULL && pg_agents_database[0] != '\0' && strcmp(db, pg_agents_database) != 0))
		{
			ereport(WARNING,
					(errmsg("the pg_agents worker works in database \"%s\", not in this one",
							pg_agents_database ? pg_agents_database : ""),
					 errdetail("The pause state of this database is kept, but the worker does not read it."),
					 errhint("Call it in database \"%s\".", pg_agents_database ? pg_agents_database : "")));
			PG_RETURN_VOID();
		}
	}
	/* the wake-up's callback first, so that ours runs before it at commit */
	WakeRequest();
	if (!pause_callback)
	{
		RegisterXactCallback(PauseXactCallback, NULL);
		pause_callback = true;
	}
	pause_pending = paused ? 1 : 0;
	PG_RETURN_VOID();
}

/* ------------------------------------------------------------------------
 * Error codes of runs: a stable word for the error text of a run
 * ------------------------------------------------------------------------
 */

typedef struct ErrorPrefix
{
	const char *prefix;
	const char *code;
} ErrorPrefix;

static const ErrorPrefix error_prefixes[] = {
	{"LLM request timed out", "llm_timeout"},
	{"could not reach the LLM endpoint", "llm_unreachable"},
	{"truncated response from the LLM", "llm_truncated"},
	{"malformed response from the LLM", "llm_malformed"},
	{"the provider sent an invalid stream", "llm_malformed"},
	{"the provider reported invalid usage", "llm_invalid_usage"},
	{"the model did not give a final answer within max_iterations", "max_iterations"},
	{"token budget of", "token_budget"},
	{"hourly run cap", "hourly_cap"},
	{"internal error of the worker", "worker_error"},
	{"the worker stopped during this run", "worker_crashes"},
	{"run abandoned after", "lease_expired"},
	{"approval of tool", "approval_expired"},
	{"denied by", "approval_denied"},
	{"unknown LLM provider", "bad_provider"},
	{"no LLM endpoint", "no_endpoint"},
	{"the agent was deleted", "agent_deleted"},
	{"the agent is suspended", "agent_suspended"},
	{"cancelled", "cancelled"},
};

/* the error code of a run's error text; NULL when there is no error */
static const char *
RunErrorCode(const char *err, char *buf, size_t buflen)
{
	const char *http = "LLM endpoint returned HTTP ";

	if (err == NULL || err[0] == '\0')
		return NULL;
	if (strncmp(err, http, strlen(http)) == 0)
	{
		const char *p = err + strlen(http);
		int			n = 0;

		while (n < 3 && p[n] >= '0' && p[n] <= '9')
			n++;
		if (n == 3)
		{
			snprintf(buf, buflen, "llm_http_%.3s", p);
			return buf;
		}
		return "llm_http";
	}
	for (int i = 0; i < lengthof(error_prefixes); i++)
		if (strncmp(err, error_prefixes[i].prefix, strlen(error_prefixes[i].prefix)) == 0)
			return error_prefixes[i].code;
	if (strncmp(err, "agent ", 6) == 0 && strstr(err, " was deleted") != NULL)
		return "agent_deleted";
	return "other";
}

/* agent.run_error_code(error text) RETURNS text: NULL for no error */
Datum
pg_agents_run_error_code(PG_FUNCTION_ARGS)
{
	char		buf[32];
	const char *code;

	code = RunErrorCode(text_to_cstring(PG_GETARG_TEXT_PP(0)), buf, sizeof(buf));
	if (code == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(code));
}

/* ------------------------------------------------------------------------
 * The run log
 * ------------------------------------------------------------------------
 */

typedef struct RunLogNote
{
	int			level;			/* subtransaction nesting level that made it */
	char	   *line;
} RunLogNote;

static List *run_log_notes = NIL;	/* in TopTransactionContext */
static bool run_log_callbacks = false;

/*
 * Transaction callback of the run log: at commit (or prepare), writes the
 * noted lines to the server log (LOG, without statement or context); at abort
 * they are dropped.
 */
static void
RunLogXactCallback(XactEvent event, void *arg)
{
	ListCell   *lc;

	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PREPARE:
			foreach(lc, run_log_notes)
			{
				RunLogNote *n = (RunLogNote *) lfirst(lc);

				ereport(LOG,
						(errmsg("pg_agents run: %s", n->line),
						 errhidestmt(true), errhidecontext(true)));
			}
			run_log_notes = NIL;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			run_log_notes = NIL;
			break;
		default:
			break;
	}
}

/*
 * Subtransaction callback of the run log: a committed subtransaction's notes
 * pass to its parent, a rolled-back one's are dropped.
 */
static void
RunLogSubXactCallback(SubXactEvent event, SubTransactionId mySubid,
					  SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();
	ListCell   *lc;

	if (run_log_notes == NIL)
		return;
	if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		/* the notes now belong to the parent */
		foreach(lc, run_log_notes)
		{
			RunLogNote *n = (RunLogNote *) lfirst(lc);

			if (n->level >= level)
				n->level = level - 1;
		}
	}
	else if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		foreach(lc, run_log_notes)
		{
			RunLogNote *n = (RunLogNote *) lfirst(lc);

			if (n->level >= level)
				run_log_notes = foreach_delete_current(run_log_notes, lc);
		}
	}
}

/*
 * A value of the line: plain when it is a simple word, else double-quoted
 * with \" \\ and \xNN escapes, so that a workspace id can neither break the
 * line nor forge a field.  At most 128 bytes of it.
 */
static void
AppendLogValue(StringInfo b, const char *v)
{
	bool		plain = v[0] != '\0';
	int			n = 0;

	for (const char *p = v; *p && plain; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
			  *p == '_' || *p == '-' || *p == '.' || *p == ':' || *p == '@' || *p == '/'))
			plain = false;
	if (plain && strlen(v) <= 128)
	{
		appendStringInfoString(b, v);
		return;
	}
	appendStringInfoChar(b, '"');
	for (const unsigned char *p = (const unsigned char *) v; *p && n < 128; p++, n++)
	{
		if (*p == '"' || *p == '\\')
			appendStringInfo(b, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			appendStringInfo(b, "\\x%02x", *p);
		else
			appendStringInfoChar(b, (char) *p);
	}
	if (*((const unsigned char *) v + n) != '\0')
		appendStringInfoString(b, "...");
	appendStringInfoChar(b, '"');
}

/*
 * The value of column name of tup in *d; false when the column does not exist
 * or is null.
 */
static bool
GetAttr(HeapTuple tup, TupleDesc td, const char *name, Datum *d)
{
	int			att = SPI_fnumber(td, name);
	bool		isnull;

	if (att <= 0)
		return false;
	*d = heap_getattr(tup, att, td, &isnull);
	return !isnull;
}

/*
 * Appends " name=value" for a bigint column of tup, "-" as value when the
 * column is null or missing.
 */
static void
AppendInt8Attr(StringInfo b, HeapTuple tup, TupleDesc td, const char *name)
{
	Datum		d;

	appendStringInfo(b, " %s=", name);
	if (GetAttr(tup, td, name, &d))
		appendStringInfo(b, INT64_FORMAT, DatumGetInt64(d));
	else
		appendStringInfoChar(b, '-');
}

/*
 * Appends " label=milliseconds" from from to to, "-" as value unless both are
 * known.
 */
static void
AppendMillis(StringInfo b, const char *label, bool have_from, TimestampTz from,
			 bool have_to, TimestampTz to)
{
	appendStringInfo(b, " %s=", label);
	if (have_from && have_to)
		appendStringInfo(b, INT64_FORMAT, (int64) ((to - from) / 1000));
	else
		appendStringInfoChar(b, '-');
}

/*
 * agent._run_log() trigger, AFTER INSERT OR UPDATE OF status ON agent.runs
 * FOR EACH ROW WHEN the run reaches a terminal status: notes the LOG line
 * that its transaction writes at commit (pg_agents.log_runs).
 *
 * pg_agents run: run_id=42 workspace=w1 agent_id=7 origin=event trigger_id=3
 *   status=failed duration_ms=1520 queue_ms=12 tokens_in=120 tokens_out=40
 *   tokens_total=160 attempts=1 error_code=llm_http_503
 */
Datum
pg_agents_run_log(PG_FUNCTION_ARGS)
{
	TriggerData *trig = (TriggerData *) fcinfo->context;
	HeapTuple	tup;
	TupleDesc	td;
	Datum		d;
	char	   *status;
	char	   *err = NULL;
	const char *code;
	char		codebuf[32];
	bool		hs,
				hf,
				hc;
	TimestampTz started = 0,
				finished = 0,
				created = 0;
	StringInfoData b;
	MemoryContext old;
	RunLogNote *note;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_AFTER(trig->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trig->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("agent._run_log() must be an AFTER row trigger on agent.runs")));
	if (pg_agents_log_runs == 0)
		return PointerGetDatum(NULL);
	tup = trig->tg_newtuple ? trig->tg_newtuple : trig->tg_trigtuple;
	td = trig->tg_relation->rd_att;
	if (!GetAttr(tup, td, "status", &d))
		return PointerGetDatum(NULL);
	status = TextDatumGetCString(d);
	if (strcmp(status, "queued") == 0 || strcmp(status, "running") == 0 ||
		strncmp(status, "waiting_", 8) == 0)
		return PointerGetDatum(NULL);
	/* errors: failed, budget_exceeded, expired (not succeeded, not cancelled) */
	if (pg_agents_log_runs == 1 &&
		(strcmp(status, "succeeded") == 0 || strcmp(status, "cancelled") == 0))
		return PointerGetDatum(NULL);
	if (GetAttr(tup, td, "error", &d))
		err = TextDatumGetCString(d);

	initStringInfo(&b);
	appendStringInfoString(&b, "run_id=");
	if (GetAttr(tup, td, "id", &d))
		appendStringInfo(&b, INT64_FORMAT, DatumGetInt64(d));
	appendStringInfoString(&b, " workspace=");
	AppendLogValue(&b, GetAttr(tup, td, "workspace_id", &d) ? TextDatumGetCString(d) : "");
	AppendInt8Attr(&b, tup, td, "agent_id");
	appendStringInfoString(&b, " origin=");
	AppendLogValue(&b, GetAttr(tup, td, "origin", &d) ? TextDatumGetCString(d) : "");
	AppendInt8Attr(&b, tup, td, "trigger_id");
	appendStringInfoString(&b, " status=");
	AppendLogValue(&b, status);
	hc = GetAttr(tup, td, "created_at", &d);
	if (hc)
		created = DatumGetTimestampTz(d);
	hs = GetAttr(tup, td, "started_at", &d);
	if (hs)
		started = DatumGetTimestampTz(d);
	hf = GetAttr(tup, td, "finished_at", &d);
	if (hf)
		finished = DatumGetTimestampTz(d);
	AppendMillis(&b, "duration_ms", hs, started, hf, finished);
	AppendMillis(&b, "queue_ms", hc, created, hs, started);
	AppendInt8Attr(&b, tup, td, "tokens_in");
	AppendInt8Attr(&b, tup, td, "tokens_out");
	AppendInt8Attr(&b, tup, td, "tokens_total");
	appendStringInfoString(&b, " attempts=");
	if (GetAttr(tup, td, "attempts", &d))
		appendStringInfo(&b, "%d", DatumGetInt32(d));
	else
		appendStringInfoChar(&b, '-');
	code = RunErrorCode(err, codebuf, sizeof(codebuf));
	appendStringInfo(&b, " error_code=%s", code ? code : "-");

	if (!run_log_callbacks)
	{
		RegisterXactCallback(RunLogXactCallback, NULL);
		RegisterSubXactCallback(RunLogSubXactCallback, NULL);
		run_log_callbacks = true;
	}
	old = MemoryContextSwitchTo(TopTransactionContext);
	note = palloc(sizeof(RunLogNote));
	note->level = GetCurrentTransactionNestLevel();
	note->line = pstrdup(b.data);
	run_log_notes = lappend(run_log_notes, note);
	MemoryContextSwitchTo(old);
	pfree(b.data);
	return PointerGetDatum(NULL);
}
