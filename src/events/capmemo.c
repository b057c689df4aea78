/*-------------------------------------------------------------------------
 *
 * capmemo.c
 *		The hourly cap's memo of agent._enqueue_run, in backend memory.
 *
 * _enqueue_run counts an agent's recent autonomous runs once per
 * transaction (while it holds the agent's queue lock, no other transaction
 * queues for that agent and now() does not move), then carries the count
 * here: agent._cap_memo(agent_id) gives it (NULL: not counted yet in this
 * transaction), agent._cap_memo_set(agent_id, n) records it.  Nothing a
 * session can set reaches it: it is neither a setting nor a table, and
 * neither function is executable by PUBLIC or any role of the extension.
 *
 * It follows the transaction like the runs it counts: a value set in a
 * subtransaction that rolls back is restored to what it was before (an undo
 * record per change below the top level), and everything is forgotten when
 * the top transaction ends, whether it commits or aborts.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "fmgr.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "capmemo.h"

PG_FUNCTION_INFO_V1(pg_agents_cap_memo);
PG_FUNCTION_INFO_V1(pg_agents_cap_memo_set);

typedef struct CapMemoEntry
{
	int64		agent_id;		/* hash key */
	int64		count;
} CapMemoEntry;

typedef struct CapUndo
{
	int			level;			/* nest level that made the change */
	int64		agent_id;
	bool		had;			/* whether a value existed before */
	int64		old;
} CapUndo;

static MemoryContext memo_cxt = NULL;
static HTAB *memo = NULL;
static List *undo = NIL;		/* newest last */
static bool callbacks_registered = false;

/*
 * Forgets every count and undo record (the memory context is reset, the hash
 * table is made again on next use).
 */
static void
MemoForget(void)
{
	memo = NULL;
	undo = NIL;
	if (memo_cxt != NULL)
		MemoryContextReset(memo_cxt);
}

/*
 * Transaction callback: the memo lives for one top transaction only, so it is
 * forgotten when that commits, aborts or is prepared.
 */
static void
MemoXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			MemoForget();
			break;
		default:
			break;
	}
}

/*
 * Subtransaction callback.  On rollback, replays (newest first) the undo
 * records made at this nest level or deeper, restoring the earlier counts or
 * removing counts that did not exist before.  On commit, hands those undo
 * records to the parent level, which may still roll back.
 */
static void
MemoSubXactCallback(SubXactEvent event, SubTransactionId mySubid,
					SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();

	if (undo == NIL)
		return;
	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		/* undo, newest first, what this subtransaction (and its children) did */
		while (undo != NIL)
		{
			CapUndo    *u = (CapUndo *) llast(undo);

			if (u->level < level)
				break;
			if (u->had)
			{
				CapMemoEntry *e = hash_search(memo, &u->agent_id, HASH_ENTER, NULL);

				e->count = u->old;
			}
			else
				(void) hash_search(memo, &u->agent_id, HASH_REMOVE, NULL);
			undo = list_delete_last(undo);
		}
	}
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		ListCell   *lc;

		/* the changes now belong to the parent, which may still roll back */
		foreach(lc, undo)
		{
			CapUndo    *u = (CapUndo *) lfirst(lc);

			if (u->level >= level)
				u->level = level - 1;
		}
	}
}

/*
 * Registers the transaction callbacks (once per process) and makes the memory
 * context and the hash table of counts if they do not exist yet.
 */
static void
MemoInit(void)
{
	if (!callbacks_registered)
	{
		RegisterXactCallback(MemoXactCallback, NULL);
		RegisterSubXactCallback(MemoSubXactCallback, NULL);
		callbacks_registered = true;
	}
	if (memo_cxt == NULL)
		memo_cxt = AllocSetContextCreate(TopMemoryContext, "pg_agents cap memo",
										 ALLOCSET_SMALL_SIZES);
	if (memo == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(int64);
		ctl.entrysize = sizeof(CapMemoEntry);
		ctl.hcxt = memo_cxt;
		memo = hash_create("pg_agents cap memo", 16, &ctl,
						   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
}

/* the agent's count carried in this transaction; false when not counted yet */
bool
EventsCapMemoGet(int64 agent_id, int64 *count)
{
	CapMemoEntry *e;

	if (memo == NULL || !IsTransactionState())
		return false;
	e = hash_search(memo, &agent_id, HASH_FIND, NULL);
	if (e == NULL)
		return false;
	*count = e->count;
	return true;
}

/* records the agent's count for the rest of this transaction (undone with a rolled-back subtransaction) */
void
EventsCapMemoSet(int64 agent_id, int64 n)
{
	CapMemoEntry *e;
	bool		found;
	int			level = GetCurrentTransactionNestLevel();

	if (n < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a run count cannot be negative")));
	MemoInit();
	e = hash_search(memo, &agent_id, HASH_ENTER, &found);
	if (level > 1)
	{
		MemoryContext old = MemoryContextSwitchTo(memo_cxt);
		CapUndo    *u = palloc(sizeof(CapUndo));

		u->level = level;
		u->agent_id = agent_id;
		u->had = found;
		u->old = found ? e->count : 0;
		undo = lappend(undo, u);
		MemoryContextSwitchTo(old);
	}
	e->count = n;
}

/* agent._cap_memo(agent_id bigint) RETURNS bigint: NULL when not counted yet */
Datum
pg_agents_cap_memo(PG_FUNCTION_ARGS)
{
	int64		count;

	if (PG_ARGISNULL(0) || !EventsCapMemoGet(PG_GETARG_INT64(0), &count))
		PG_RETURN_NULL();
	PG_RETURN_INT64(count);
}

/* agent._cap_memo_set(agent_id bigint, n bigint) RETURNS void */
Datum
pg_agents_cap_memo_set(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("agent id and count must not be NULL")));
	EventsCapMemoSet(PG_GETARG_INT64(0), PG_GETARG_INT64(1));
	PG_RETURN_VOID();
}
