/*-------------------------------------------------------------------------
 *
 * launcher.c
 *		The pg_agents launcher: one worker per database served, started,
 *		restarted and stopped from here; and the DROP DATABASE that stops
 *		its database's worker first.
 *
 * The launcher is the one background worker registered at load (when the
 * library is in shared_preload_libraries).  It connects to no database and
 * reads pg_database about once a second.  The databases served are every
 * database that accepts connections and is not a template when
 * pg_agents.database is empty, else only the one it names.  For each it
 * keeps one dynamic worker (src/runs/worker.c, connected by oid, never restarted
 * by the postmaster):
 *
 *	 - a worker that exited (a drain, an error) is started again a second
 *	   later, while its database is still served;
 *	 - a worker that found no extension in its database (every-database
 *	   mode) exited; it is started again to look once per
 *	   pg_agents.launcher_naptime, so that a CREATE EXTENSION is served
 *	   within that time without a restart of the server;
 *	 - the worker of a database no longer served (dropped, renamed away from
 *	   pg_agents.database) is stopped, its slot of shared memory freed.
 *
 * DROP DATABASE waits (5 s at most) for the other sessions of the database
 * to go; a worker is one.  The ProcessUtility hook below marks the database's
 * slot (stop_now), signals the worker, which exits at once (no drain: its
 * runs are in the database being dropped; if the DROP fails, the next worker
 * reclaims them), and waits for it; the launcher starts no worker for a
 * marked slot for 30 s, by when the DROP committed or failed.
 *
 * No free background worker slot (max_worker_processes) is said in the log
 * once per database, and tried again at each pass.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/utility.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "util/guc.h"
#include "util/shmem.h"
#include "worker.h"

PGDLLEXPORT void pg_agents_launcher_main(Datum main_arg);

#define LAUNCHER_PASS_MS	1000
#define RESTART_DELAY_MS	1000
#define STOP_HOLD_MS		30000
#define DROP_WAIT_MS		5000

/* the launcher's own table of the workers it started (process-local) */
typedef struct LauncherEntry
{
	Oid			dboid;
	char		dbname[NAMEDATALEN];
	BackgroundWorkerHandle *handle;
	bool		said_no_slot;	/* "no background worker slot" logged */
	bool		seen;			/* served at this pass */
} LauncherEntry;

static LauncherEntry entries[PGA_MAX_DB_SLOTS];
static int	nentries = 0;
static bool said_no_shmem_slot = false;
static bool said_missing_db = false;

static ProcessUtility_hook_type prev_utility_hook = NULL;

/* _PG_init, while preloading: the launcher registered, restarted a second after it exits */
void
RunsRegisterWorker(void)
{
	BackgroundWorker worker;

	if (!process_shared_preload_libraries_in_progress)
		return;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 1;
	strlcpy(worker.bgw_library_name, "pg_agents", BGW_MAXLEN);
	strlcpy(worker.bgw_function_name, "pg_agents_launcher_main", BGW_MAXLEN);
	strlcpy(worker.bgw_name, "pg_agents launcher", BGW_MAXLEN);
	strlcpy(worker.bgw_type, "pg_agents launcher", BGW_MAXLEN);
	worker.bgw_main_arg = (Datum) 0;
	worker.bgw_notify_pid = 0;
	RegisterBackgroundWorker(&worker);
}

static LauncherEntry *
EntryFor(Oid dboid, const char *name)
{
	for (int i = 0; i < nentries; i++)
		if (entries[i].dboid == dboid)
			return &entries[i];
	if (nentries >= PGA_MAX_DB_SLOTS)
		return NULL;
	memset(&entries[nentries], 0, sizeof(LauncherEntry));
	entries[nentries].dboid = dboid;
	strlcpy(entries[nentries].dbname, name, NAMEDATALEN);
	return &entries[nentries++];
}

static bool
EntryRunning(LauncherEntry *e)
{
	pid_t		pid;

	if (e->handle == NULL)
		return false;
	if (GetBackgroundWorkerPid(e->handle, &pid) == BGWH_STOPPED)
	{
		pfree(e->handle);
		e->handle = NULL;
		return false;
	}
	return true;
}

/* starts the worker of a database, if its slot says it may start now */
static void
MaybeStart(LauncherEntry *e, TimestampTz now)
{
	PgAgentsDbSlot *slot = ShmemDbSlotFor(e->dboid, true);
	BackgroundWorker w;
	BackgroundWorkerHandle *handle;
	bool		no_extension;
	TimestampTz exited_at;
	bool		stop_now;
	TimestampTz stop_at;

	if (slot == NULL)
	{
		if (!said_no_shmem_slot)
			ereport(LOG,
					(errmsg("pg_agents launcher: no shared memory slot is free for database \"%s\"", e->dbname),
					 errdetail("The launcher serves at most %d databases.", PGA_MAX_DB_SLOTS)));
		said_no_shmem_slot = true;
		return;
	}
	SpinLockAcquire(&slot->worker.mutex);
	no_extension = slot->no_extension;
	exited_at = slot->exited_at;
	stop_now = slot->stop_now;
	stop_at = slot->stop_at;
	if (stop_now && TimestampDifferenceExceeds(stop_at, now, STOP_HOLD_MS))
		slot->stop_now = stop_now = false;	/* the DROP DATABASE failed */
	SpinLockRelease(&slot->worker.mutex);
	if (stop_now)
		return;
	if (exited_at != 0 &&
		!TimestampDifferenceExceeds(exited_at, now,
									no_extension ? pg_agents_launcher_naptime : RESTART_DELAY_MS))
		return;

	memset(&w, 0, sizeof(w));
	w.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	w.bgw_start_time = BgWorkerStart_RecoveryFinished;
	w.bgw_restart_time = BGW_NEVER_RESTART;	/* the launcher restarts it */
	strlcpy(w.bgw_library_name, "pg_agents", BGW_MAXLEN);
	strlcpy(w.bgw_function_name, "pg_agents_worker_main", BGW_MAXLEN);
	strlcpy(w.bgw_name, "pg_agents worker", BGW_MAXLEN);
	strlcpy(w.bgw_type, "pg_agents worker", BGW_MAXLEN);
	w.bgw_main_arg = ObjectIdGetDatum(e->dboid);
	w.bgw_notify_pid = MyProcPid;
	if (!RegisterDynamicBackgroundWorker(&w, &handle))
	{
		if (!e->said_no_slot)
			ereport(LOG,
					(errmsg("pg_agents launcher: no background worker slot is free for the worker of database \"%s\"",
							e->dbname),
					 errdetail("Every one of max_worker_processes (%d) is in use.", max_worker_processes),
					 errhint("Raise max_worker_processes; the launcher tries again every second.")));
		e->said_no_slot = true;
		return;
	}
	if (e->said_no_slot)
		ereport(LOG,
				(errmsg("pg_agents launcher: the worker of database \"%s\" got a background worker slot",
						e->dbname)));
	e->said_no_slot = false;
	/* a fresh look: set again by the worker if the extension is still not there */
	SpinLockAcquire(&slot->worker.mutex);
	slot->no_extension = false;
	SpinLockRelease(&slot->worker.mutex);
	e->handle = handle;
}

/* one pass: pg_agents' databases read, workers started and stopped */
static void
LauncherPass(void)
{
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;
	TimestampTz now = GetCurrentTimestamp();
	bool		restricted = pg_agents_database != NULL && pg_agents_database[0] != '\0';
	bool		found_restricted = false;
	Oid			existing[PGA_MAX_DB_SLOTS * 4];
	int			nexisting = 0;
	bool		existing_overflow = false;

	for (int i = 0; i < nentries; i++)
		entries[i].seen = false;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "pg_agents launcher: reading pg_database");
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);
		LauncherEntry *e;

		if (nexisting < lengthof(existing))
			existing[nexisting++] = db->oid;
		else
			existing_overflow = true;
		if (restricted)
		{
			if (strcmp(NameStr(db->datname), pg_agents_database) != 0)
				continue;
			found_restricted = true;
		}
		else if (db->datistemplate || !db->datallowconn)
			continue;
#ifdef DATCONNLIMIT_INVALID_DB
		if (db->datconnlimit == DATCONNLIMIT_INVALID_DB)
			continue;			/* a DROP DATABASE interrupted */
#endif
		e = EntryFor(db->oid, NameStr(db->datname));
		if (e == NULL)
			continue;
		strlcpy(e->dbname, NameStr(db->datname), NAMEDATALEN);
		e->seen = true;
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);

	if (restricted && !found_restricted && !said_missing_db)
		ereport(LOG,
				(errmsg("pg_agents launcher: database \"%s\" (pg_agents.database) does not exist", pg_agents_database),
				 errhint("Create it, or set pg_agents.database to '' to serve every database that has the extension.")));
	said_missing_db = restricted && !found_restricted;

	/* served: started (again) when not running; no longer served: stopped */
	for (int i = 0; i < nentries; i++)
	{
		LauncherEntry *e = &entries[i];
		bool		running = EntryRunning(e);

		if (e->seen && !running)
			MaybeStart(e, now);
		else if (!e->seen && running)
			TerminateBackgroundWorker(e->handle);
	}
	/* the entries of databases no longer served whose worker stopped go */
	for (int i = nentries - 1; i >= 0; i--)
	{
		if (entries[i].seen || entries[i].handle != NULL)
			continue;
		entries[i] = entries[--nentries];
	}
	/* and the shared slots of databases that are gone, once their worker stopped */
	if (!existing_overflow)
	{
		for (int i = 0; i < PGA_MAX_DB_SLOTS; i++)
		{
			PgAgentsDbSlot *slot = ShmemDbSlotAt(i);
			bool		exists = false;
			int			pid;

			if (slot == NULL || !OidIsValid(slot->dboid))
				continue;
			for (int j = 0; j < nexisting && !exists; j++)
				exists = existing[j] == slot->dboid;
			SpinLockAcquire(&slot->worker.mutex);
			pid = slot->worker.pid;
			SpinLockRelease(&slot->worker.mutex);
			if (!exists && pid == 0)
				ShmemDbSlotFree(slot);
		}
	}
}

/* at exit: agent.worker_status no longer names a launcher */
static void
LauncherOnExit(int code, Datum arg)
{
	int		   *pid = ShmemLauncherPid();

	if (pid != NULL)
		*pid = 0;
}

/* the launcher: no database, a pass about every second (see the top of the file) */
void
pg_agents_launcher_main(Datum main_arg)
{
	MemoryContext cxt;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("pg_agents launcher");
	if (ShmemLauncherPid() != NULL)
		*ShmemLauncherPid() = MyProcPid;
	before_shmem_exit(LauncherOnExit, (Datum) 0);
	cxt = AllocSetContextCreate(TopMemoryContext, "pg_agents launcher", ALLOCSET_DEFAULT_SIZES);

	ereport(LOG,
			(errmsg("pg_agents launcher started, serving %s",
					pg_agents_database && pg_agents_database[0] ?
					psprintf("database \"%s\"", pg_agents_database) : "every database that has the extension")));
	for (;;)
	{
		if (ShutdownRequestPending)
			proc_exit(0);
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		MemoryContextSwitchTo(cxt);
		LauncherPass();
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 LAUNCHER_PASS_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * Before a DROP DATABASE: the worker of that database told to exit at once
 * (stop_now, SIGTERM), and waited for (DROP DATABASE itself waits 5 s at
 * most for the database's sessions to go).
 */
static void
StopWorkerOfDatabase(const char *dbname)
{
	Oid			dboid = get_database_oid(dbname, true);
	PgAgentsDbSlot *slot;
	int			pid;

	if (!OidIsValid(dboid))
		return;
	slot = ShmemDbSlotFor(dboid, false);
	if (slot == NULL)
		return;
	SpinLockAcquire(&slot->worker.mutex);
	slot->stop_now = true;
	slot->stop_at = GetCurrentTimestamp();
	pid = slot->worker.pid;
	SpinLockRelease(&slot->worker.mutex);
	if (pid == 0)
		return;
	(void) kill(pid, SIGTERM);
	for (int waited = 0; waited < DROP_WAIT_MS; waited += 10)
	{
		SpinLockAcquire(&slot->worker.mutex);
		pid = slot->worker.pid;
		SpinLockRelease(&slot->worker.mutex);
		if (pid == 0)
			break;
		CHECK_FOR_INTERRUPTS();
		pg_usleep(10 * 1000L);
	}
}

static void
PgAgentsProcessUtility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
					   ProcessUtilityContext context, ParamListInfo params,
					   QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;

	if (parsetree != NULL && IsA(parsetree, DropdbStmt) && ShmemAvailable())
		StopWorkerOfDatabase(((DropdbStmt *) parsetree)->dbname);
	if (prev_utility_hook)
		prev_utility_hook(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
}

/* _PG_init: the DROP DATABASE hook */
void
RunsInitLauncherHooks(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = PgAgentsProcessUtility;
}
