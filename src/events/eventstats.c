/*-------------------------------------------------------------------------
 *
 * eventstats.c
 *		Events whose workspace is unknown: counted in shared memory.
 *
 * Every event belongs to a workspace (docs/events.md): a watched row's
 * workspace column, or the session's pg_agents.workspace.  An event whose
 * workspace is unknown wakes nobody; it is counted here, per database, and
 * the first one of a transaction raises a WARNING, so that it is never lost
 * silently.  The count lives in shared memory: it survives the rollback of
 * the transaction that fired the event (a misconfigured application is
 * visible even when its writes fail later), and starts again from zero when
 * the server restarts.  agent.unknown_workspace_events() reads it.
 *
 * Without shared_preload_libraries the count is kept per backend.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "events.h"

PG_FUNCTION_INFO_V1(pg_agents_unknown_workspace_events);

#define EVSTAT_SLOTS	32
#define EVSTAT_NAMELEN	64

typedef struct EvStatSlot
{
	Oid			dbid;			/* InvalidOid: free */
	uint64		events;
	TimestampTz last_at;
	char		last_event[EVSTAT_NAMELEN];
	char		last_resource_type[EVSTAT_NAMELEN];
	char		last_resource_id[EVSTAT_NAMELEN];
} EvStatSlot;

typedef struct EvStatShared
{
	slock_t		mutex;
	uint64		overflow;		/* events of databases beyond the slots */
	EvStatSlot	slots[EVSTAT_SLOTS];
} EvStatShared;

static EvStatShared *evstat = NULL;
static EvStatSlot local_slot;	/* without shared memory */

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static bool warned_in_xact = false;
static bool callback_registered = false;

/* shmem_request_hook: asks for the shared event counters' space. */
static void
EvStatShmemRequest(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(EvStatShared)));
}

/*
 * shmem_startup_hook: attaches to the shared event counters, zeroing them and
 * initializing their spinlock when this is the first process to create them.
 */
static void
EvStatShmemStartup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	evstat = ShmemInitStruct("pg_agents events", sizeof(EvStatShared), &found);
	if (!found)
	{
		memset(evstat, 0, sizeof(EvStatShared));
		SpinLockInit(&evstat->mutex);
	}
	LWLockRelease(AddinShmemInitLock);
}

/* Called from _PG_init: hooks in only while shared_preload_libraries loads. */
void
EventsInitStats(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = EvStatShmemRequest;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = EvStatShmemStartup;
}

/*
 * Transaction callback: rearms the once-per-transaction warning about events
 * of unknown workspace when the transaction ends.
 */
static void
EvStatXactCallback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE)
		warned_in_xact = false;
}

/*
 * Counts one event in slot s and records it as the slot's last event (time,
 * event name, resource type and id, each truncated to EVSTAT_NAMELEN; NULL
 * stored as empty).  The caller holds the spinlock when s is shared.
 */
static void
FillSlot(EvStatSlot *s, const char *event_name, const char *resource_type,
		 const char *resource_id)
{
	s->events++;
	s->last_at = GetCurrentTimestamp();
	strlcpy(s->last_event, event_name ? event_name : "", EVSTAT_NAMELEN);
	strlcpy(s->last_resource_type, resource_type ? resource_type : "", EVSTAT_NAMELEN);
	strlcpy(s->last_resource_id, resource_id ? resource_id : "", EVSTAT_NAMELEN);
}

/*
 * Counts one event whose workspace is unknown; warns once per transaction.
 * why says where the workspace should have come from.
 */
void
EventsCountUnknownWorkspace(const char *event_name, const char *resource_type,
							  const char *resource_id, const char *why)
{
	if (evstat != NULL)
	{
		int			i;
		EvStatSlot *slot = NULL;

		SpinLockAcquire(&evstat->mutex);
		for (i = 0; i < EVSTAT_SLOTS; i++)
		{
			if (evstat->slots[i].dbid == MyDatabaseId)
			{
				slot = &evstat->slots[i];
				break;
			}
			if (slot == NULL && evstat->slots[i].dbid == InvalidOid)
				slot = &evstat->slots[i];
		}
		if (slot != NULL)
		{
			slot->dbid = MyDatabaseId;
			FillSlot(slot, event_name, resource_type, resource_id);
		}
		else
			evstat->overflow++;
		SpinLockRelease(&evstat->mutex);
	}
	else
		FillSlot(&local_slot, event_name, resource_type, resource_id);

	if (!callback_registered)
	{
		RegisterXactCallback(EvStatXactCallback, NULL);
		callback_registered = true;
	}
	if (!warned_in_xact)
	{
		warned_in_xact = true;
		ereport(WARNING,
				(errcode(ERRCODE_WARNING),
				 errmsg("event \"%s\" on %s \"%s\" belongs to no workspace and wakes no agent",
						event_name, resource_type, resource_id ? resource_id : ""),
				 errdetail("%s Further such events of this transaction are counted without a warning.", why),
				 errhint("Set pg_agents.workspace in the session (or ALTER DATABASE ... SET pg_agents.workspace), or watch the table with a workspace_column; agent.unknown_workspace_events() counts these events.")));
	}
}

/*
 * agent.unknown_workspace_events() RETURNS TABLE (events bigint,
 *     last_at timestamptz, last_event text, last_resource_type text,
 *     last_resource_id text)
 *
 * One row for the current database (events 0 when none was counted).
 */
Datum
pg_agents_unknown_workspace_events(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[5];
	bool		nulls[5] = {false, false, false, false, false};
	EvStatSlot	copy;
	int			i;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	memset(&copy, 0, sizeof(copy));
	if (evstat != NULL)
	{
		SpinLockAcquire(&evstat->mutex);
		for (i = 0; i < EVSTAT_SLOTS; i++)
			if (evstat->slots[i].dbid == MyDatabaseId)
				copy = evstat->slots[i];
		SpinLockRelease(&evstat->mutex);
	}
	else
		copy = local_slot;

	values[0] = Int64GetDatum((int64) copy.events);
	if (copy.events == 0)
	{
		nulls[1] = nulls[2] = nulls[3] = nulls[4] = true;
	}
	else
	{
		values[1] = TimestampTzGetDatum(copy.last_at);
		values[2] = CStringGetTextDatum(copy.last_event);
		values[3] = CStringGetTextDatum(copy.last_resource_type);
		values[4] = CStringGetTextDatum(copy.last_resource_id);
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}
