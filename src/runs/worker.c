/*-------------------------------------------------------------------------
 *
 * worker.c
 *		The pg_agents background worker: registration, signals and the
 *		latch loop.
 *
 * One worker per served database, started by the launcher (src/runs/launcher.c)
 * and connected by oid.  When pg_agents.database names its database it
 * waits quietly while the extension is not created there; when it is empty
 * (every database served) it exits instead, and the launcher looks again
 * later.  Then it loops:
 *
 *	 wait (latch set by a backend at commit, a curl socket, or a bounded
 *	 timeout) -> reload the configuration on SIGHUP -> agent.tick() about
 *	 once a second -> RunsStep (HTTP completions, tools, claims, new
 *	 calls), each database step in its own short transaction.
 *
 * Backends never wait on it.  HTTP calls are never made inside an open
 * transaction.
 *
 * Operations (docs/operations.md): the loop publishes its status for
 * agent.worker_status, claims nothing while agent.pause_worker() holds, and
 * drains on SIGTERM: no new claims and no new calls, the requests in flight
 * get up to pg_agents.drain_timeout to finish (their replies recorded as
 * usual), then the runs still held go back to the queue with their saved
 * conversation (attempts not counted) and the worker exits.  A repeated
 * SIGTERM does not cut the drain short; SIGQUIT stops the worker at once.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "util/jansson_prelude.h"
#include "util/spi_util.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "llm/http.h"
#include "llm/providers.h"
#include "mcp/mcp_tools.h"
#include "ops.h"
#include "runs.h"
#include "util/guc.h"
#include "util/shmem.h"
#include "util/wake.h"
#include "worker.h"

PGDLLEXPORT void pg_agents_worker_main(Datum main_arg);

#define READY_RECHECK_MS	5000
#define TICK_MS				1000
#define IDLE_WAIT_MS		1000

/*
 * operations: SIGTERM asks for a drain, bounded by pg_agents.drain_timeout.
 * A repeated SIGTERM changes nothing: the postmaster may signal its children
 * more than once during a fast shutdown (PostgreSQL 17 does), and a second
 * signal must not turn a drain into a loss; SIGQUIT (immediate shutdown)
 * still stops the worker at once.
 */
static volatile sig_atomic_t drain_requested = false;

/* the name of the worker's database (for the log) */
static char worker_dbname[NAMEDATALEN] = "";

/* set by PgAgentsWorkerReady: the extension is not in the database */
static bool extension_absent = false;

/* this database's slot (shmem.h): DROP DATABASE's stop_now, the launcher's flags */
static PgAgentsDbSlot *
MySlot(void)
{
	return ShmemDbSlotFor(MyDatabaseId, true);
}

/*
 * DROP DATABASE of this database asked the worker to go at once (see
 * src/runs/launcher.c): no drain, its runs stay as they are (the next worker
 * reclaims them if the DROP fails).
 */
static void
ExitIfDatabaseDropped(void)
{
	PgAgentsDbSlot *slot = MySlot();
	bool		stop = false;

	if (slot == NULL)
		return;
	SpinLockAcquire(&slot->worker.mutex);
	stop = slot->stop_now;
	SpinLockRelease(&slot->worker.mutex);
	if (!stop)
		return;
	ereport(LOG,
			(errmsg("pg_agents worker of database \"%s\" stops: the database is being dropped", worker_dbname)));
	proc_exit(0);
}

/* SIGTERM: a drain is asked for (see above) */
static void
WorkerSigterm(SIGNAL_ARGS)
{
	int			save_errno = errno;

	drain_requested = true;
	SetLatch(MyLatch);
	errno = save_errno;
}

/*
 * SIGHUP: the configuration file re-read, and the providers' resolutions
 * kept by the runs in flight made again (they point into the GUCs).
 */
static void
ReloadConfigIfPending(void)
{
	if (!ConfigReloadPending)
		return;
	ConfigReloadPending = false;
	ProcessConfigFile(PGC_SIGHUP);
	ProvidersConfigReloaded();
}

/* operations: the figures of agent.worker_status that change every pass */
static void
PublishStatus(bool ready)
{
	PgAgentsWorkerInfo *w = ShmemWorker();

	if (w == NULL)
		return;
	SpinLockAcquire(&w->mutex);
	if (ready && w->state != PGA_WORKER_DRAINING)
		w->state = RunsWorkerPaused() ? PGA_WORKER_PAUSED : PGA_WORKER_RUNNING;
	w->slots_in_use = RunsActive();
	w->max_slots = pg_agents_max_concurrent_runs;
	w->llm_in_flight = HttpInFlight() - McpTransfersInFlight();
	w->mcp_in_flight = McpTransfersInFlight();	/* asynchronous too (mcp_tools.c) */
	SpinLockRelease(&w->mutex);
}

/* the installed version of the extension in this database, NULL if none */
static char *
InstalledVersion(void)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	char	   *version = NULL;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("pg_agents"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, Anum_pg_extension_extversion,
									 RelationGetDescr(rel), &isnull);

		if (!isnull)
			version = TextDatumGetCString(d);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return version;
}

/*
 * The extension is created at the version of this library (then every
 * function the worker calls exists: no probe for any).  An older version (the library was upgraded,
 * ALTER EXTENSION pg_agents UPDATE not run yet) is said once in the log.
 */
static bool
PgAgentsWorkerReady(void)
{
	static char last_mismatch[64] = "";
	MemoryContext cxt = CurrentMemoryContext;
	bool		ready;
	char	   *version;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "pg_agents: looking for the extension");
	version = InstalledVersion();
	if (version != NULL && strcmp(version, PG_AGENTS_VERSION) != 0)
	{
		if (strcmp(last_mismatch, version) != 0)
		{
			ereport(LOG,
					(errmsg("pg_agents worker: extension pg_agents is at version %s in database \"%s\", this library is version %s",
							version, worker_dbname, PG_AGENTS_VERSION),
					 errdetail("The worker waits until the versions match."),
					 errhint("Run ALTER EXTENSION pg_agents UPDATE in database \"%s\".",
							 worker_dbname)));
			strlcpy(last_mismatch, version, sizeof(last_mismatch));
		}
		RunsWorkerSetState(PGA_WORKER_WAITING_UPDATE);	/* operations */
		version = NULL;			/* not ready */
	}
	else if (version != NULL)
		last_mismatch[0] = '\0';
	else
		RunsWorkerSetState(PGA_WORKER_WAITING_EXTENSION);	/* operations */
	extension_absent = version == NULL && last_mismatch[0] == '\0';
	ready = version != NULL;	/* (its script made every function the worker calls) */
	PopActiveSnapshot();
	CommitTransactionCommand();
	/* the commit left TopMemoryContext current: the loop's context again */
	MemoryContextSwitchTo(cxt);
	pgstat_report_activity(STATE_IDLE, NULL);
	return ready;
}

/*
 * The tick's statements: agent.tick() (schedules, expiries, leases;
 * unless pg_agents.worker_tick is off), the cleanup of saved states, the
 * pause state of agent.worker_control.
 */
static void
TickBody(void *arg)
{
	if (pg_agents_worker_tick &&	/* off: someone else ticks */
		SPI_execute("SELECT agent.tick()", false, 0) != SPI_OK_SELECT)
		elog(ERROR, "agent.tick() failed");
	if (SPI_execute("SELECT agent._worker_cleanup()", false, 0) != SPI_OK_SELECT)
		elog(ERROR, "agent._worker_cleanup() failed");
	/* operations: the pause state of agent.worker_control (survives restarts) */
	RunsWorkerPauseSyncBegin();
	if (SPI_execute("SELECT agent._worker_sync_pause(coalesce((SELECT c.paused FROM agent.worker_control c), false))",
					false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read agent.worker_control");
}

/* the tick in its own unit; its time published for agent.worker_status */
static void
TickUnit(void)
{
	char		err[1024];

	if (!SpiUtilUnit("pg_agents: tick", TickBody, NULL, err, sizeof(err)))
	{
		ereport(LOG, (errmsg("pg_agents worker: tick failed: %s", err)));
		/* operations: the SQLSTATE only (agent.worker_status, pg_monitor), the message is in the log */
		RunsWorkerNoteError(psprintf("tick failed: SQLSTATE %s", unpack_sql_state(SpiUtilUnitErrcode)));
		return;
	}
	if (ShmemWorker())	/* operations */
	{
		SpinLockAcquire(&ShmemWorker()->mutex);
		ShmemWorker()->last_tick = GetCurrentTimestamp();
		SpinLockRelease(&ShmemWorker()->mutex);
	}
}

/* the MCP refresh's statements (agent.mcp_oauth_refresh_due, agent.mcp_refresh_due) */
static void
TickMcpOAuthBody(void *arg)
{
	pgstat_report_activity(STATE_RUNNING, "pg_agents: MCP OAuth refresh");
	if (SPI_execute("SELECT agent.mcp_oauth_refresh_due()", false, 0) != SPI_OK_SELECT)
		elog(ERROR, "agent.mcp_oauth_refresh_due() failed");
	pgstat_report_activity(STATE_RUNNING, "pg_agents: MCP tool lists refresh");
	if (SPI_execute("SELECT agent.mcp_refresh_due()", false, 0) != SPI_OK_SELECT)
		elog(ERROR, "agent.mcp_refresh_due() failed");
}

/*
 * MCP OAuth tokens that expire soon are renewed (agent.mcp_oauth_refresh_due)
 * and old tool lists listed again (agent.mcp_refresh_due, docs/mcp.md), at
 * most every 30 seconds, in a transaction of its own so that a remote
 * server's failure never touches the tick.
 */
static void
TickMcpOAuth(void)
{
	static TimestampTz last = 0;
	TimestampTz now = GetCurrentTimestamp();
	char		err[1024];

	if (last != 0 && !TimestampDifferenceExceeds(last, now, 30 * 1000))
		return;
	last = now;
	if (McpRefreshLaunch())		/* mcp_tools.c: in a process of its own */
		return;
	if (!SpiUtilUnit("pg_agents: MCP refresh", TickMcpOAuthBody, NULL, err, sizeof(err)))
		ereport(LOG, (errmsg("pg_agents worker: MCP OAuth refresh failed: %s", err)));
}

/* at exit: backends stop setting its latch, agent.worker_status says stopped */
static void
WorkerOnExit(int code, Datum arg)
{
	PgAgentsWorkerInfo *w = ShmemWorker();
	PgAgentsDbSlot *slot = MySlot();

	WakeSetWorkerLatch(NULL);
	if (slot != NULL)			/* the launcher's restart delay counts from here */
	{
		SpinLockAcquire(&slot->worker.mutex);
		slot->exited_at = GetCurrentTimestamp();
		SpinLockRelease(&slot->worker.mutex);
	}
	if (w != NULL)				/* operations */
	{
		SpinLockAcquire(&w->mutex);
		w->pid = 0;
		w->state = PGA_WORKER_STOPPED;
		w->slots_in_use = 0;
		w->llm_in_flight = 0;
		w->mcp_in_flight = 0;
		SpinLockRelease(&w->mutex);
	}
}

/*
 * Operations: the drain of SIGTERM.  Requests in flight finish (their
 * replies and tools recorded as usual) until none is left or
 * pg_agents.drain_timeout passes; then the runs still held go back to the
 * queue and the worker exits (and is started again unless the server is
 * shutting down).
 */
static void
Drain(void)
{
	TimestampTz deadline;
	int			held = RunsHeld();
	int			requeued;

	RunsWorkerDraining(true);
	RunsWorkerSetState(PGA_WORKER_DRAINING);
	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), pg_agents_drain_timeout);
	ereport(LOG,
			(errmsg("pg_agents worker: draining: %d runs held, %d requests in flight, up to %d ms",
					held, HttpInFlight(), pg_agents_drain_timeout)));
	while (!RunsDrainIdle())
	{
		TimestampTz now = GetCurrentTimestamp();
		long		left;

		if (now >= deadline)
			break;
		left = (long) ((deadline - now) / 1000);
		(void) HttpWait(Min(Max(left, 1), 100));
		ReloadConfigIfPending();
		CHECK_FOR_INTERRUPTS();
		ExitIfDatabaseDropped();
		RunsDrainStep();
		PublishStatus(true);
	}
	requeued = RunsRequeueAll();
	ereport(LOG,
			(errmsg("pg_agents worker: drained: %d of %d runs held went back to the queue",
					requeued, held)));
	proc_exit(1);
}

/*
 * The worker's session before its loop: the search_path pinned and the
 * identity settings cleared for the whole session, its latch published to
 * the backends that queue runs, agent.worker_status told it is starting.
 */
static void
WorkerSessionSetup(void)
{
	/*
	 * The worker is the bootstrap superuser: no name in its SQL may resolve
	 * through a schema someone else can create in.  The database's (or the
	 * role's) search_path, applied at connection, is overridden for the
	 * whole session, and every statement schema-qualifies its functions
	 * anyway (pg_temp last: it is never searched for functions).
	 */
	SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_OVERRIDE);

	/*
	 * Nor does a database's or a role's identity setting (an audit row of
	 * the worker's bookkeeping attributed to someone else): the worker's own
	 * statements set none, and each tool call sets the run's identity for
	 * its transaction (ToolGateSetIdentity).
	 */
	{
		static const char *const identity[] = {
			"pg_agents.actor", "pg_agents.workspace", "pg_agents.run_id",
			"pg_agents.surface", "pg_agents.on_behalf_of"
		};

		for (int i = 0; i < lengthof(identity); i++)
			SetConfigOption(identity[i], "", PGC_SUSET, PGC_S_OVERRIDE);
		/* so its own audit rows name it (system, 'worker') */
		AuditAsWorker = true;
	}

	/* backends that queue runs set this latch at commit (src/util/wake.c) */
	WakeSetWorkerLatch(MyLatch);
	before_shmem_exit(WorkerOnExit, (Datum) 0);
	if (ShmemWorker())	/* operations: agent.worker_status */
	{
		PgAgentsWorkerInfo *w = ShmemWorker();

		SpinLockAcquire(&w->mutex);
		w->pid = MyProcPid;
		w->started_at = GetCurrentTimestamp();
		w->state = PGA_WORKER_STARTING;
		w->starts++;
		SpinLockRelease(&w->mutex);
	}
}

/*
 * Every database served (pg_agents.database empty): a worker whose database
 * has no extension (never created, or dropped) exits, and the launcher looks
 * again after pg_agents.launcher_naptime.
 */
static void
ExitIfNoExtension(void)
{
	PgAgentsDbSlot *slot;

	if (!extension_absent || (pg_agents_database != NULL && pg_agents_database[0] != '\0'))
		return;
	slot = MySlot();
	if (slot != NULL)
	{
		SpinLockAcquire(&slot->worker.mutex);
		slot->no_extension = true;
		SpinLockRelease(&slot->worker.mutex);
	}
	ereport(DEBUG1,
			(errmsg("pg_agents worker of database \"%s\" exits: the extension is not there", worker_dbname)));
	proc_exit(0);
}

/* the worker: connection, then the latch loop (see the top of the file) */
void
pg_agents_worker_main(Datum main_arg)
{
	MemoryContext loopcxt;
	bool		ready = false;
	TimestampTz last_ready_check = 0;
	TimestampTz last_tick = 0;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, WorkerSigterm);	/* operations: drain, then exit */
	BackgroundWorkerUnblockSignals();

	BackgroundWorkerInitializeConnectionByOid(DatumGetObjectId(main_arg), InvalidOid, 0);
	pgstat_report_appname("pg_agents worker");
	{
		char	   *name;

		StartTransactionCommand();
		name = get_database_name(MyDatabaseId);
		strlcpy(worker_dbname, name ? name : "?", sizeof(worker_dbname));
		CommitTransactionCommand();
	}

	WorkerSessionSetup();
	HttpInit();
	RunsInit();
	loopcxt = AllocSetContextCreate(TopMemoryContext, "pg_agents worker loop", ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(loopcxt);

	ereport(LOG, (errmsg("pg_agents worker started in database \"%s\"", worker_dbname)));

	for (;;)
	{
		TimestampTz now;
		long		timeout;
		bool		latch;

		if (!ready)
			timeout = READY_RECHECK_MS;
		else
			timeout = RunsNextTimeout(IDLE_WAIT_MS);
		latch = HttpWait(timeout);
		if (latch)
			RunsWake();

		ReloadConfigIfPending();
		/* (whatever a unit left current, the pass allocates in loopcxt) */
		MemoryContextSwitchTo(loopcxt);
		MemoryContextReset(loopcxt);
		CHECK_FOR_INTERRUPTS();
		ExitIfDatabaseDropped();
		if (drain_requested)	/* operations */
			Drain();

		now = GetCurrentTimestamp();
		if (!ready)
		{
			/* a backend that queued runs set the latch: the extension is there */
			if (!latch && !TimestampDifferenceExceeds(last_ready_check, now, READY_RECHECK_MS - 10))
				continue;
			last_ready_check = now;
			ready = PgAgentsWorkerReady();
			if (!ready)
			{
				ExitIfNoExtension();
				continue;
			}
			RunsReclaimOnStart();
		}

		if (TimestampDifferenceExceeds(last_tick, now, TICK_MS))
		{
			last_tick = now;
			TickUnit();
			TickMcpOAuth();
			/* the extension may have been dropped meanwhile */
			if (!PgAgentsWorkerReady())
			{
				ready = false;
				ExitIfNoExtension();
				continue;
			}
		}

		RunsStep();
		PublishStatus(true);	/* operations */
	}
}
