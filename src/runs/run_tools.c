/*-------------------------------------------------------------------------
 *
 * run_tools.c
 *		The tool calls of the runs in flight: a reply's tool calls executed
 *		in the slot's unit through the dispatcher (tools.h), a delegated
 *		child waited for, an asynchronous call (an opaque ToolCall, SLOT_ASYNC)
 *		started, pumped and its answer recorded, the results given back to
 *		the model.
 *
 * Above run_slot.c and run_prompt.c; run_calls.c (a reply that asks for
 * tools) and run_loop.c (the pass) call it, it calls neither.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "util/jansson_prelude.h"

#include "run_int.h"

#include "tools/tool_gate.h"

#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"


/*
 * The result of the pending call that comes next (a tool's, a child's, an
 * asynchronous call's) appended to the slot's results, as the provider
 * will be told it; takes the result.
 */
static void
SlotAppendResult(Slot *s, json_t *result)
{
	json_t	   *call = json_array_get(s->pending, json_array_size(s->results));
	char	   *content = json_dumps(result, JSON_COMPACT);
	char	   *cut = content ? RunResultCapped(content) : NULL;

	if (s->results == NULL)
		s->results = json_array();
	json_array_append_new(s->results,
						  json_pack("{s:O,s:s,s:b}", "id", json_object_get(call, "id"),
									"content", cut ? cut : (content ? content : "null"),
									"is_error", json_object_get(result, "error") != NULL));
	if (cut)
		pfree(cut);
	free(content);
	json_decref(result);
}

/*
 * Executes the remaining tool calls of the slot, inside a unit; stops at
 * a call that waits (an asynchronous call in flight, an approval, a
 * delegated child), else gives the results to the model and the slot is
 * READY again.
 */
void
RunToolsExecute(Slot *s)
{
	ToolRun		tr = RunSlotToolRun(s);

	if (s->results == NULL)
		s->results = json_array();
	ToolGateSetIdentity(&tr);
	while (json_array_size(s->results) < json_array_size(s->pending))
	{
		json_t	   *call = json_array_get(s->pending, json_array_size(s->results));
		const char *name = json_string_value(json_object_get(call, "name"));
		json_t	   *result = NULL;
		int64		child = 0;
		ToolCall   *async = NULL;
		ToolOutcome oc;

		CHECK_FOR_INTERRUPTS();
		oc = ToolsExecute(&tr, name ? name : "", json_object_get(call, "input"), &result, &child,
						  &async);
		if (oc == TOOL_ASYNC)
		{
			/* sent once this transaction committed (RunsStep) */
			s->call = async;
			RunSqlSaveState(s);
			s->state = SLOT_ASYNC;
			return;
		}
		if (oc == TOOL_PAUSE)
		{
			RunSqlSaveState(s);
			s->state = SLOT_FREE;	/* freed by the caller */
			return;
		}
		if (oc == TOOL_WAIT_CHILD)
		{
			s->child_run_id = child;
			RunSqlSaveState(s);
			s->state = SLOT_CHILD;
			/* park the run (waiting_children) until its child ends: it is re-queued then */
			if (RunSqlParkForChildren(s->run_id))
				s->state = SLOT_FREE;	/* freed by the caller */
			return;
		}
		SlotAppendResult(s, result);
	}
	LlmAppendToolResults(s->provider, s->messages, s->results);
	(void) ToolsBetweenTurns(s->run_id, s->workspace, s->provider, s->messages);	/* teams: safe point */
	json_decref(s->pending);
	json_decref(s->results);
	s->pending = NULL;
	s->results = NULL;
	RunSqlSaveState(s);
	s->state = SLOT_READY;
}

/* the unit of a slot with tool calls to execute */
static void
ToolsUnit(Slot *s, void *arg)
{
	if (!RunSqlHoldLease(s->run_id, s->workspace))
	{
		s->state = SLOT_FREE;
		return;
	}
	RunToolsExecute(s);
}

/*
 * The unit of a slot waiting for its child: the child's result (or its
 * question, teams) becomes the delegation's result and the remaining tools
 * run; nothing changes while the child is at work.
 */
static void
ChildUnit(Slot *s, void *arg)
{
	json_t	   *result;

	if (!RunSqlHoldLease(s->run_id, s->workspace))
	{
		s->state = SLOT_FREE;
		return;
	}
	result = ToolsChildPoll(s->run_id, s->workspace, s->child_run_id);
	if (result == NULL)
		return;
	SlotAppendResult(s, result);
	s->child_run_id = 0;
	RunToolsExecute(s);
}

/* the answer of the slot's asynchronous call is recorded, then the remaining tools run */
static void
AsyncResultUnit(Slot *s, void *arg)
{
	ToolRun		tr = RunSlotToolRun(s);
	json_t	   *result = NULL;
	ToolOutcome oc;

	if (!RunSqlHoldLease(s->run_id, s->workspace))
	{
		s->state = SLOT_FREE;
		return;
	}
	ToolGateSetIdentity(&tr);
	oc = ToolsCallRecord(&tr, s->call, &result);
	ToolsCallFree(s->call);
	s->call = NULL;
	if (oc == TOOL_PAUSE)
	{
		RunSqlSaveState(s);
		s->state = SLOT_FREE;	/* freed by the caller */
		return;
	}
	SlotAppendResult(s, result);
	s->state = SLOT_TOOLS;
	RunToolsExecute(s);
}

/*
 * The call's work inside a unit: a question of the MCP server in the call's
 * stream stored, or its answer looked for
 */
static void
AsyncStepUnit(Slot *s, void *arg)
{
	ToolRun		tr = RunSlotToolRun(s);

	if (!RunSqlHoldLease(s->run_id, s->workspace))
	{
		s->state = SLOT_FREE;
		return;
	}
	ToolsCallUnitStep(&tr, s->call);
}

/* the asynchronous results of one pass (RunToolsFlushAsync) */
#define ASYNC_BATCH		64
typedef struct AsyncBatch
{
	int			n;
	Slot	   *slots[ASYNC_BATCH];
	SlotState	before[ASYNC_BATCH];
	char	   *failed[ASYNC_BATCH];
} AsyncBatch;

static AsyncBatch async_batch;

/* a transfer that is not an LLM call ended: its tool family takes it (tools.h) */
void
RunToolsTransferDone(HttpRequest *req)
{
	Slot	   *s = (Slot *) ToolsTransferDone(req);

	if (s)						/* the slot's call has its answer */
	{
		if (async_batch.n < ASYNC_BATCH)
			async_batch.slots[async_batch.n++] = s;	/* recorded with the others (RunToolsFlushAsync) */
		else
			RunSlotUnitOrFail(s, "pg_agents: recording an MCP result", AsyncResultUnit, NULL);
	}
}

/* one slot's asynchronous result, in its subtransaction (AsyncBatchUnit) */
static void
AsyncResultBody(void *arg)
{
	AsyncResultUnit((Slot *) arg, NULL);
}

/*
 * The asynchronous results that came back in one pass are recorded in one
 * transaction, each slot's in a subtransaction of its own, so that a failed
 * one fails its run only (as RunSlotUnitOrFail would).
 */
static void
AsyncBatchUnit(Slot *unused, void *arg)
{
	AsyncBatch *b = (AsyncBatch *) arg;

	for (int i = 0; i < b->n; i++)
	{
		char	   *err = ToolGateInSubxact(AsyncResultBody, b->slots[i]);

		b->failed[i] = err ? MemoryContextStrdup(TopMemoryContext, err) : NULL;
		if (err)
			ereport(LOG,
					(errmsg("pg_agents worker: recording an MCP result failed: %s", err)));
	}
}

/* records the asynchronous results of the pass (one alone as any unit, more in AsyncBatchUnit) */
void
RunToolsFlushAsync(void)
{
	AsyncBatch *b = &async_batch;
	bool		ok;

	if (b->n == 0)
		return;
	if (b->n == 1)
	{
		b->n = 0;
		RunSlotUnitOrFail(b->slots[0], "pg_agents: recording an MCP result", AsyncResultUnit, NULL);
		return;
	}
	for (int i = 0; i < b->n; i++)
		b->before[i] = b->slots[i]->state;
	ok = RunSlotUnit("pg_agents: recording MCP results", AsyncBatchUnit, NULL, b);
	for (int i = 0; i < b->n; i++)
	{
		Slot	   *s = b->slots[i];

		if (!ok || b->failed[i])
		{
			s->state = b->before[i];
			RunSlotFail(s, "failed", psprintf("internal error of the worker: %s",
											  ok ? b->failed[i] : RunSlotUnitError));
		}
		else if (s->state == SLOT_FREE)
			RunSlotFree(s);
		if (b->failed[i])
			pfree(b->failed[i]);
		b->failed[i] = NULL;
	}
	b->n = 0;
}

/* starts the asynchronous calls that are due, with no transaction open */
void
RunToolsStartDueAsync(void)
{
	TimestampTz now = GetCurrentTimestamp();

	for (int i = 0; i < MAX_SLOTS; i++)
	{
		Slot	   *s = &RunSlotTable[i];

		if (s->state != SLOT_ASYNC)
			continue;
		if (ToolsCallDue(s->call, now))
		{
			CHECK_FOR_INTERRUPTS();
			ToolsCallStart(s->call, s);
			if (ToolsCallAnswered(s->call))	/* could not start: a failed result */
				RunSlotUnitOrFail(s, "pg_agents: recording an MCP result", AsyncResultUnit, NULL);
		}
		else if (ToolsCallInFlight(s->call))
		{
			ToolsCallPump(s->call);
			if (ToolsCallAnswered(s->call))	/* timed out */
				RunSlotUnitOrFail(s, "pg_agents: recording an MCP result", AsyncResultUnit, NULL);
			else if (ToolsCallWantsUnit(s->call, now))
				RunSlotUnitOrFail(s, "pg_agents: an MCP server asks a person", AsyncStepUnit, NULL);
		}
	}
	ToolsHousekeeping();
}

/* the slots with tool calls to execute, each in its unit */
void
RunToolsExecuteDue(void)
{
	for (int i = 0; i < MAX_SLOTS; i++)
		if (RunSlotTable[i].state == SLOT_TOOLS)
			RunSlotUnitOrFail(&RunSlotTable[i], "pg_agents: executing tools", ToolsUnit, NULL);
}

/* the slots waiting for a delegated child, each polled in its unit */
void
RunToolsPollChildren(void)
{
	for (int i = 0; i < MAX_SLOTS; i++)
		if (RunSlotTable[i].state == SLOT_CHILD)
			RunSlotUnitOrFail(&RunSlotTable[i], "pg_agents: waiting for a delegated run", ChildUnit, NULL);
}
