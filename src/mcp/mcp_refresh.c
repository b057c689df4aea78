/*-------------------------------------------------------------------------
 *
 * mcp_refresh.c
 *		The periodic refresh of MCP OAuth tokens and tool lists, in a
 *		background process of its own started by the worker loop.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <string.h>

#include "access/xact.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "tcop/tcopprot.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "mcp_tools.h"
#include "util/spi_util.h"

/* ---------------------------------------------------------------------
 * The periodic refresh, in a process of its own
 * ---------------------------------------------------------------------
 */

/*
 * OAuth tokens due for renewal (agent.mcp_oauth_refresh_due) and tool lists
 * due for a new listing (agent.mcp_refresh_due) talk to remote servers
 * synchronously, each request bounded by pg_agents.request_timeout, a few
 * servers a pass: done in the worker's loop, a silent server would stall
 * every run for minutes, with a transaction open.  The worker starts a
 * short-lived background process for it instead (at most one at a time),
 * and goes on; only when none can be started (max_worker_processes
 * exhausted) does the caller do it itself (returns false).
 */
static BackgroundWorkerHandle *refresh_handle = NULL;

/*
 * Starts the background process of the OAuth and tool list refresh
 * (pg_agents_mcp_refresh_main) for this database, unless the last one is
 * still running.  Returns true when one is running or started, false when
 * none could be registered.
 */
bool
McpRefreshLaunch(void)
{
	BackgroundWorker w;
	pid_t		pid;

	if (refresh_handle)
	{
		BgwHandleStatus st = GetBackgroundWorkerPid(refresh_handle, &pid);

		if (st == BGWH_STARTED || st == BGWH_NOT_YET_STARTED)
			return true;		/* the last pass is still at it */
		pfree(refresh_handle);
		refresh_handle = NULL;
	}
	memset(&w, 0, sizeof(w));
	w.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	w.bgw_start_time = BgWorkerStart_RecoveryFinished;
	w.bgw_restart_time = BGW_NEVER_RESTART;
	strlcpy(w.bgw_library_name, "pg_agents", BGW_MAXLEN);
	strlcpy(w.bgw_function_name, "pg_agents_mcp_refresh_main", BGW_MAXLEN);
	strlcpy(w.bgw_name, "pg_agents mcp refresh", BGW_MAXLEN);
	strlcpy(w.bgw_type, "pg_agents mcp refresh", BGW_MAXLEN);
	w.bgw_main_arg = ObjectIdGetDatum(MyDatabaseId);
	w.bgw_notify_pid = 0;
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
		bool		ok = RegisterDynamicBackgroundWorker(&w, &refresh_handle);

		MemoryContextSwitchTo(old);
		if (!ok)
		{
			refresh_handle = NULL;
			return false;
		}
	}
	return true;
}

PGDLLEXPORT void pg_agents_mcp_refresh_main(Datum arg);

/*
 * Background worker entry point of McpRefreshLaunch(): connects to the
 * database given in arg and, in one transaction, runs
 * agent.mcp_oauth_refresh_due() and agent.mcp_refresh_due() when they exist,
 * then exits.
 */
void
pg_agents_mcp_refresh_main(Datum arg)
{
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(DatumGetObjectId(arg), InvalidOid, 0);
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	PushActiveSnapshot(GetTransactionSnapshot());
	if (SpiUtilFunctionExists("agent.mcp_oauth_refresh_due(interval)"))
	{
		pgstat_report_activity(STATE_RUNNING, "pg_agents: MCP OAuth refresh");
		if (SPI_execute("SELECT agent.mcp_oauth_refresh_due()", false, 0) != SPI_OK_SELECT)
			elog(ERROR, "agent.mcp_oauth_refresh_due() failed");
	}
	if (SpiUtilFunctionExists("agent.mcp_refresh_due(interval,integer)"))
	{
		pgstat_report_activity(STATE_RUNNING, "pg_agents: MCP tool lists refresh");
		if (SPI_execute("SELECT agent.mcp_refresh_due()", false, 0) != SPI_OK_SELECT)
			elog(ERROR, "agent.mcp_refresh_due() failed");
	}
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_stat(true);
	pgstat_report_activity(STATE_IDLE, NULL);
	proc_exit(0);
}
