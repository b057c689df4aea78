/*-------------------------------------------------------------------------
 *
 * executor.c
 *		The runs in flight: one slot per claimed run, driven as a small
 *		state machine by the worker loop.
 *
 *		READY    the next LLM call can start (no transaction is open)
 *		HTTP     an LLM request is in flight in the curl multi handle
 *		BACKOFF  waiting to retry a 429, a 5xx, a time-out or a refused
 *		         connection
 *		TOOLS    tool calls of the last reply remain to be executed
 *		MCP      an MCP tool call of the reply is in flight in the same
 *		         multi handle (or due to start): prepared in the tool
 *		         transaction, sent after it committed, its answer recorded
 *		         in a transaction of its own (mcp_tools.c)
 *		CHILD    waiting for a delegated child run to end
 *
 * Database work happens in short transactions (RunUnit), one per unit of
 * work, and never while a transaction would span an HTTP call: requests
 * are only started and collected between transactions.  The conversation
 * (the provider's message array, the pending tool calls and their results)
 * is saved in agent.run_state in the same transaction as the tool effects,
 * so that a run paused for approval, waiting for a child, or interrupted by
 * a crash resumes exactly where it stood.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "jansson_prelude.h"
#include "spi_util.h"
#include "tool_gate.h"

#include <math.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "context.h"
#include "deltas.h"
#include "guc.h"
#include "http.h"
#include "llm.h"
#include "mcp_tools.h"
#include "ops.h"
#include "providers.h"
#include "ratelimit.h"
#include "runs.h"
#include "teams.h"
#include "tools.h"

#define MAX_SLOTS			1024
#define LLM_MAX_RETRIES		3
#define BACKOFF_BASE_MS		250
#define BACKOFF_MAX_MS		60000
#define CHILD_POLL_MS		200

typedef enum SlotState
{
	SLOT_FREE = 0,
	SLOT_READY,
	SLOT_HTTP,
	SLOT_BACKOFF,
	SLOT_TOOLS,
	SLOT_CHILD,
	SLOT_MCP
} SlotState;

typedef struct Slot
{
	SlotState	state;
	MemoryContext cxt;
	int64		run_id;
	int64		agent_id;
	char	   *workspace;
	char	   *regime;
	char	   *user_id;
	char	   *approval_mode;
	char	   *model;
	char	   *url;
	char	   *system;
	LlmProvider provider;
	bool		can_delegate;
	json_t	   *scope;
	json_t	   *tools;			/* neutral definitions */
	json_t	   *messages;		/* provider-native conversation */
	json_t	   *pending;		/* tool calls of the last reply */
	json_t	   *results;		/* their results so far */
	int			iterations;
	int			max_iterations;
	int			http_attempts;
	TimestampTz next_at;
	TimestampTz call_started;
	HttpRequest *req;
	LlmStream  *stream;			/* the streamed reply of the call in flight */
	int			stream_step;	/* its model call number in the run (deltas) */
	int64		conversation_id;	/* a chat run's conversation (deltas), 0: none */
	size_t		stream_pub;		/* published by the delta unit, once it commits */
	int64		child_run_id;
	McpCall    *mcp;			/* SLOT_MCP: the call in flight */
	uint32		gen;			/* claim that filled the slot */
	/* providers (providers.c, ratelimit.c) */
	char	   *agent_model;	/* agents.model as claimed */
	int			rl;				/* the limiter's bucket, -1: none */
	bool		rl_held;		/* the request in flight holds a share */
	int64		rl_est;			/* tokens it reserved */
	bool		rl_waiting;		/* READY, but the provider has no headroom */
	TimestampTz rl_until;		/* ... until then (0: until a request ends) */
	TimestampTz rl_lease_at;	/* its lease, last renewed while waiting */
} Slot;

static Slot slots[MAX_SLOTS];
static char unit_error[1024];
static bool more_work = true;	/* a slot was freed, or the last claim was full */
static bool woken = true;		/* a backend queued runs (latch) */
static TimestampTz last_claim = 0;
static TimestampTz last_child_poll = 0;
static uint32 claim_gen = 0;

/* plans prepared once and kept */
static SPIPlanPtr lease_plan = NULL;
static SPIPlanPtr forget_plan = NULL;
static SPIPlanPtr finish_plan = NULL;
static SPIPlanPtr save_plan = NULL;
static SPIPlanPtr claim_plan = NULL;
static SPIPlanPtr eligible_plan = NULL;


/* ---------------------------------------------------------------------
 * Units of work
 * ---------------------------------------------------------------------
 */

typedef void (*UnitFn) (Slot *s, void *arg);

/*
 * One short transaction, worker_spi's order.  An error is caught, the
 * transaction aborted, and its message kept in unit_error.
 */
static bool
RunUnit(const char *activity, UnitFn fn, Slot *s, void *arg)
{
	MemoryContext cxt = CurrentMemoryContext;
	volatile bool ok = true;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PG_TRY();
	{
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		PushActiveSnapshot(GetTransactionSnapshot());
		pgstat_report_activity(STATE_RUNNING, activity);
		fn(s, arg);
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
		strlcpy(unit_error, edata->message ? edata->message : "unknown error", sizeof(unit_error));
		ereport(LOG,
				(errmsg("pg_agents worker: %s failed: %s", activity, unit_error)));
		PgAgentsWorkerNoteError(unit_error);	/* operations: agent.worker_status */
		FreeErrorData(edata);
		ok = false;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	pgstat_report_stat(false);
	pgstat_report_activity(STATE_IDLE, NULL);
	return ok;
}

static void
SlotFree(Slot *s)
{
	if (s->rl_held)				/* providers: its share of the limits comes back */
		RateLimitDone(s->rl, s->rl_est, -1, 0, -1, NULL, NULL);
	if (s->req)
		HttpFree(s->req);
	if (s->mcp)
		McpCallFree(s->mcp);
	LlmStreamFree(s->stream);
	if (s->scope)
		json_decref(s->scope);
	if (s->tools)
		json_decref(s->tools);
	if (s->messages)
		json_decref(s->messages);
	if (s->pending)
		json_decref(s->pending);
	if (s->results)
		json_decref(s->results);
	if (s->cxt)
		MemoryContextDelete(s->cxt);
	memset(s, 0, sizeof(Slot));
	more_work = true;
}

static ToolRun
SlotToolRun(Slot *s)
{
	ToolRun		tr;

	tr.run_id = s->run_id;
	tr.agent_id = s->agent_id;
	tr.workspace = s->workspace;
	tr.regime = s->regime;
	tr.user_id = strcmp(s->regime, "manual") == 0 ? s->user_id : NULL;
	tr.approval_mode = s->approval_mode;
	tr.scope = s->scope;
	tr.can_delegate = s->can_delegate;
	return tr;
}

/* ---- SQL pieces used inside units ---- */

/* renews the lease; false when the run is no longer ours (cancelled, reclaimed) */
static bool
HoldLease(int64 run_id)
{
	Oid			types[2] = {INT8OID, INT4OID};
	Datum		vals[2];

	vals[0] = Int64GetDatum(run_id);
	vals[1] = Int32GetDatum(pg_agents_run_lease);
	if (SpiUtilExecPlan(&lease_plan, "UPDATE agent.runs SET lease_until = pg_catalog.now() + pg_catalog.make_interval(secs => $2) "
						 "WHERE id = $1 AND status = 'running'",
						 2, types, vals, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not renew the lease of run " INT64_FORMAT, run_id);
	return SPI_processed == 1;
}

static void
ForgetState(int64 run_id)
{
	Oid			types[1] = {INT8OID};
	Datum		vals[1];

	vals[0] = Int64GetDatum(run_id);
	if (SpiUtilExecPlan(&forget_plan, "DELETE FROM agent.run_state WHERE run_id = $1", 1, types, vals, NULL, false, 0)
		!= SPI_OK_DELETE)
		elog(ERROR, "could not forget the state of run " INT64_FORMAT, run_id);
}

static void
FinishRun(int64 run_id, const char *status, json_t *output, const char *error)
{
	Oid			types[4] = {INT8OID, TEXTOID, JSONBOID, TEXTOID};
	Datum		vals[4];
	char		nulls[4] = "    ";
	char	   *out = NULL;

	vals[0] = Int64GetDatum(run_id);
	vals[1] = CStringGetTextDatum(status);
	if (output)
	{
		char	   *s = json_dumps(output, JSON_COMPACT | JSON_ENCODE_ANY);

		out = pstrdup(s);
		free(s);
		vals[2] = DirectFunctionCall1(jsonb_in, CStringGetDatum(out));
	}
	else
		nulls[2] = 'n';
	if (error)
		vals[3] = CStringGetTextDatum(error);
	else
		nulls[3] = 'n';
	if (SpiUtilExecPlan(&finish_plan, "SELECT agent.finish_run($1, $2, $3, $4)", 4, types, vals, nulls, false, 0)
		!= SPI_OK_SELECT)
		elog(ERROR, "agent.finish_run failed for run " INT64_FORMAT, run_id);
	ForgetState(run_id);
}

static void
SaveState(Slot *s)
{
	json_t	   *st = json_pack("{s:O,s:O,s:O,s:i,s:I,s:s?}",
							   "messages", s->messages,
							   "pending", s->pending ? s->pending : json_null(),
							   "results", s->results ? s->results : json_null(),
							   "iterations", s->iterations,
							   "child_run_id", (json_int_t) s->child_run_id,
							   "system", s->system);	/* context: the prompt it started with */
	char	   *str = json_dumps(st, JSON_COMPACT);
	char	   *p = pstrdup(str);
	Oid			types[3] = {INT8OID, JSONBOID, INT4OID};
	Datum		vals[3];

	free(str);
	json_decref(st);
	vals[0] = Int64GetDatum(s->run_id);
	vals[1] = DirectFunctionCall1(jsonb_in, CStringGetDatum(p));
	vals[2] = Int32GetDatum(MyProcPid);
	if (SpiUtilExecPlan(&save_plan, "INSERT INTO agent.run_state AS st (run_id, workspace_id, worker_pid, state) "
							  "SELECT r.id, r.workspace_id, $3, $2 FROM agent.runs r WHERE r.id = $1 "
							  "ON CONFLICT (run_id) DO UPDATE SET state = excluded.state, "
							  "worker_pid = excluded.worker_pid, updated_at = pg_catalog.clock_timestamp()",
							  3, types, vals, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not save the state of run " INT64_FORMAT, s->run_id);
}

/* ---- failing a run ---- */

typedef struct FailArg
{
	const char *status;
	const char *error;
} FailArg;

static void
FailUnit(Slot *s, void *arg)
{
	FailArg    *fa = (FailArg *) arg;
	json_t	   *out = json_pack("{s:s}", "error", fa->error);

	if (!HoldLease(s->run_id))
	{
		json_decref(out);
		return;
	}
	ToolGateRecordStep(s->run_id, "error", "run", NULL, out, fa->status, 0, 0);
	json_decref(out);
	FinishRun(s->run_id, fa->status, NULL, fa->error);
}

/* ends the run with a clear error; the slot is freed whatever happens */
static void
EndRunFailed(Slot *s, const char *status, const char *error)
{
	FailArg		fa;
	char	   *copy = pstrdup(error);

	fa.status = status;
	fa.error = copy;
	if (!RunUnit("pg_agents: failing a run", FailUnit, s, &fa))
	{
		/* a second chance without the step, e.g. when redaction failed */
		FailArg		fb = {status, psprintf("%s (and: %s)", copy, unit_error)};

		(void) RunUnit("pg_agents: failing a run", FailUnit, s, &fb);
	}
	SlotFree(s);
}

/* ---------------------------------------------------------------------
 * Claiming
 * ---------------------------------------------------------------------
 */

static char *
SlotStrdup(Slot *s, const char *v)
{
	return v ? MemoryContextStrdup(s->cxt, v) : NULL;
}

/* the prompt, the payload check: context assembly (context.c) */

static Slot *
FreeSlot(void)
{
	for (int i = 0; i < MAX_SLOTS; i++)
		if (slots[i].state == SLOT_FREE)
			return &slots[i];
	return NULL;
}

static void
ClaimUnit(Slot *unused, void *arg)
{
	int			n = *(int *) arg;
	Oid			types[2] = {INT4OID, INT4OID};
	Datum		vals[2];
	int			rc;
	uint64		nrows;
	SPITupleTable *tt;

	if (ProvidersStale())		/* providers: rows and secrets (providers.c) */
		ProvidersLoad();

	/*
	 * Without a default endpoint (pg_agents.llm_url empty) the worker only
	 * works when some queued run's agent names its own (scope llm_url);
	 * otherwise runs stay queued for an external executor (claim_runs).
	 */
	if (pg_agents_llm_url == NULL || pg_agents_llm_url[0] == '\0')
	{
		/*
		 * One primary-key probe of agents per queued run, up to the first
		 * that qualifies (LATERAL ... LIMIT 1 keeps it a nested loop: as a
		 * join, the kept plan hashed every agent at each claim, 10k agents
		 * costing more than the claim itself).
		 */
		rc = SpiUtilExecPlan(&eligible_plan,
							  "SELECT EXISTS (SELECT 1 FROM agent.runs r "
							  "CROSS JOIN LATERAL (SELECT 1 FROM agent.agents a "
							  "                    WHERE a.id = r.agent_id AND a.scope ?| '{llm_url,provider}' LIMIT 1) ok "
							  "WHERE r.status = 'queued')",
							  0, NULL, NULL, NULL, true, 1);
		if (rc != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "could not look for runs to claim");
		if (strcmp(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1), "t") != 0)
		{
			*(int *) arg = 0;
			return;
		}
	}

	vals[0] = Int32GetDatum(n);
	vals[1] = Int32GetDatum(MyProcPid);
	rc = SpiUtilExecPlan(&claim_plan,
		"WITH c AS (SELECT * FROM agent.claim_runs($1) WITH ORDINALITY), "
		"s AS (INSERT INTO agent.run_state AS st (run_id, workspace_id, worker_pid) "
		"      SELECT c.id, c.workspace_id, $2 FROM c "
		"      ON CONFLICT (run_id) DO UPDATE SET worker_pid = excluded.worker_pid, claimed_at = pg_catalog.clock_timestamp() "
		"      RETURNING st.run_id, st.state) "
		"SELECT c.id, c.agent_id, c.workspace_id, c.regime, c.requested_by, c.input::pg_catalog.text, c.origin, "
		"       a.name, a.instructions, a.model, a.approval_mode, a.scope::pg_catalog.text, a.max_iterations, "
		"       pg_catalog.jsonb_array_length(a.delegation) > 0, a.deleted_at IS NOT NULL, "
		"       a.status = 'suspended' AND c.regime = 'autonomous', "
		"       t.prompt, t.kind, t.event_name, s.state::pg_catalog.text, "
		"       c.depth, a.instruction_page_id, "	/* context assembly: */
		"       CASE WHEN c.regime = 'manual' "		/* may a skill be listed? */
		"            THEN EXISTS (SELECT 1 FROM agent.resource_tables rt WHERE rt.resource_type = 'skill') "
		"            ELSE EXISTS (SELECT 1 FROM agent.access g WHERE g.agent_id = c.agent_id AND g.resource_type = 'skill') END "
		"FROM c JOIN s ON s.run_id = c.id "
		"JOIN agent.agents a ON a.id = c.agent_id "
		"LEFT JOIN agent.triggers t ON t.id = c.trigger_id "
		"ORDER BY c.ordinality",	/* started in claim order (fair order) */
		2, types, vals, NULL, false, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not claim runs: %s", SPI_result_code_string(rc));
	nrows = SPI_processed;
	tt = SPI_tuptable;
	*(int *) arg = (int) nrows;

	for (uint64 i = 0; i < nrows; i++)
	{
		HeapTuple	tup = tt->vals[i];
		TupleDesc	td = tt->tupdesc;
		Slot	   *s = FreeSlot();
		bool		isnull;
		json_t	   *input;
		json_t	   *state = NULL;
		char	   *v;
		ProviderResolved rp;
		char	   *perr = NULL;
		bool		resolved;

		if (s == NULL)
			elog(ERROR, "no free run slot");
		memset(s, 0, sizeof(Slot));
		s->gen = claim_gen;
		s->cxt = AllocSetContextCreate(TopMemoryContext, "pg_agents run", ALLOCSET_SMALL_SIZES);
		s->run_id = DatumGetInt64(SPI_getbinval(tup, td, 1, &isnull));
		s->agent_id = DatumGetInt64(SPI_getbinval(tup, td, 2, &isnull));
		s->workspace = SlotStrdup(s, SPI_getvalue(tup, td, 3));
		s->regime = SlotStrdup(s, SPI_getvalue(tup, td, 4));
		s->user_id = SlotStrdup(s, SPI_getvalue(tup, td, 5));
		s->approval_mode = SlotStrdup(s, SPI_getvalue(tup, td, 11));
		s->scope = json_loads(SPI_getvalue(tup, td, 12), 0, NULL);
		if (s->scope == NULL)
			s->scope = json_object();
		s->max_iterations = DatumGetInt32(SPI_getbinval(tup, td, 13, &isnull));
		s->can_delegate = DatumGetBool(SPI_getbinval(tup, td, 14, &isnull));
		s->state = SLOT_READY;

		/*
		 * provider, URL and model (providers.c): a provider the agent's
		 * settings name, else the agent's settings, then the GUCs
		 */
		s->agent_model = SlotStrdup(s, SPI_getvalue(tup, td, 10));
		resolved = ProviderResolve(s->scope, s->agent_model, &rp, &perr);
		s->provider = resolved ? rp.kind : LLM_OPENAI;
		s->url = resolved ? SlotStrdup(s, rp.base_url) : NULL;
		s->model = SlotStrdup(s, resolved ? rp.model : "default");
		s->rl = resolved ? rp.ratelimit : -1;

		v = SPI_getvalue(tup, td, 20);
		if (v)
			state = json_loads(v, 0, NULL);
		if (state && json_is_array(json_object_get(state, "messages")))
		{
			s->messages = json_incref(json_object_get(state, "messages"));
			if (json_is_array(json_object_get(state, "pending")))
				s->pending = json_incref(json_object_get(state, "pending"));
			if (json_is_array(json_object_get(state, "results")))
				s->results = json_incref(json_object_get(state, "results"));
			s->system = SlotStrdup(s, json_string_value(json_object_get(state, "system")));
			s->iterations = (int) json_integer_value(json_object_get(state, "iterations"));
			s->child_run_id = json_integer_value(json_object_get(state, "child_run_id"));
			if (s->child_run_id > 0)
				s->state = SLOT_CHILD;
			else if (s->pending && json_array_size(s->pending) > json_array_size(s->results))
				s->state = SLOT_TOOLS;
		}
		else
			s->messages = json_array();
		if (state)
			json_decref(state);
		/* unknown provider, no endpoint, an endpoint not allowlisted ... */
		if (!resolved)
		{
			FinishRun(s->run_id, "failed", NULL, perr);
			SlotFree(s);
			continue;
		}
		if (DatumGetBool(SPI_getbinval(tup, td, 15, &isnull)))
		{
			FinishRun(s->run_id, "failed", NULL, "the agent was deleted");
			SlotFree(s);
			continue;
		}
		if (DatumGetBool(SPI_getbinval(tup, td, 16, &isnull)))
		{
			FinishRun(s->run_id, "cancelled", NULL, "the agent is suspended");
			SlotFree(s);
			continue;
		}

		/* context assembly (context.c): system prompt, first messages, tools */
		{
			ToolRun		tr = SlotToolRun(s);
			ContextRun	cr;
			char	   *err;

			input = json_loads(SPI_getvalue(tup, td, 6), 0, NULL);
			if (input == NULL)
				input = json_object();
			/* a chat run of agent.send_message: its deltas name the conversation */
			if (strcmp(s->regime, "manual") == 0 &&
				json_is_integer(json_object_get(input, "conversation_id")))
				s->conversation_id = json_integer_value(json_object_get(input, "conversation_id"));
			memset(&cr, 0, sizeof(cr));
			cr.agent_name = SPI_getvalue(tup, td, 8);
			cr.instructions = SPI_getvalue(tup, td, 9);
			cr.depth = DatumGetInt32(SPI_getbinval(tup, td, 21, &isnull));
			cr.page_id = SPI_getvalue(tup, td, 22);
			cr.delegation_listed = s->can_delegate;
			cr.skills_possible = DatumGetBool(SPI_getbinval(tup, td, 23, &isnull));
			cr.fresh = json_array_size(s->messages) == 0;
			cr.provider = s->provider;
			cr.input = input;
			cr.trigger_prompt = SPI_getvalue(tup, td, 17);
			cr.origin = SPI_getvalue(tup, td, 7);
			s->tools = ToolsDefinitions();
			cr.tools = s->tools;
			cr.messages = s->messages;
			err = ContextAssemble(&tr, &cr);
			json_decref(input);
			if (err)
			{
				FinishRun(s->run_id, "failed", NULL, psprintf("could not assemble the run's context: %s", err));
				SlotFree(s);
				continue;
			}
			s->can_delegate = cr.can_delegate;
			if (s->system == NULL)
				s->system = SlotStrdup(s, cr.system);
			ToolsAddRunDefinitions(s->tools, s->agent_id, s->run_id, s->can_delegate);
		}
		/* teams: messages that arrived while it was queued or waiting */
		if (s->state == SLOT_READY && TeamsDeliver(s->run_id, s->provider, s->messages) > 0)
			SaveState(s);
	}
}

static int
ActiveSlots(void)
{
	int			n = 0;

	for (int i = 0; i < MAX_SLOTS; i++)
		if (slots[i].state != SLOT_FREE && slots[i].state != SLOT_CHILD)
			n++;
	return n;
}

int
RunsActive(void)
{
	return ActiveSlots();
}

/* claims up to the free capacity; returns how many runs were claimed */
int
RunsClaim(void)
{
	int			cap = Min(pg_agents_max_concurrent_runs, MAX_SLOTS);
	int			n = cap - ActiveSlots();
	int			got;
	int			used = 0;

	for (int i = 0; i < MAX_SLOTS; i++)
		if (slots[i].state != SLOT_FREE)
			used++;
	n = Min(n, MAX_SLOTS - used);
	if (n <= 0)
		return 0;
	if (PgAgentsWorkerClaimsStopped())	/* operations: paused or draining */
	{
		more_work = false;
		return 0;
	}
	got = n;
	last_claim = GetCurrentTimestamp();
	claim_gen++;
	if (!RunUnit("pg_agents: claiming runs", ClaimUnit, NULL, &got))
	{
		/* the claim rolled back: forget the slots it had filled */
		for (int i = 0; i < MAX_SLOTS; i++)
			if (slots[i].state != SLOT_FREE && slots[i].gen == claim_gen)
				SlotFree(&slots[i]);
		more_work = false;
		return -1;
	}
	more_work = (got == n);
	return got;
}

/* ---------------------------------------------------------------------
 * Tools
 * ---------------------------------------------------------------------
 */

/* executes the remaining tool calls of the slot, inside a unit */
static void
ExecuteTools(Slot *s)
{
	ToolRun		tr = SlotToolRun(s);

	if (s->results == NULL)
		s->results = json_array();
	ToolGateSetIdentity(&tr);
	while (json_array_size(s->results) < json_array_size(s->pending))
	{
		json_t	   *call = json_array_get(s->pending, json_array_size(s->results));
		const char *name = json_string_value(json_object_get(call, "name"));
		json_t	   *result = NULL;
		int64		child = 0;
		ToolOutcome oc;
		char	   *content;

		CHECK_FOR_INTERRUPTS();
		oc = ToolsExecute(&tr, name ? name : "", json_object_get(call, "input"), &result, &child);
		if (oc == TOOL_MCP_ASYNC)
		{
			/* sent once this transaction committed (RunsStep) */
			s->mcp = McpTakePrepared();
			SaveState(s);
			s->state = SLOT_MCP;
			return;
		}
		if (oc == TOOL_PAUSE)
		{
			SaveState(s);
			s->state = SLOT_FREE;	/* freed by the caller */
			return;
		}
		if (oc == TOOL_WAIT_CHILD)
		{
			s->child_run_id = child;
			SaveState(s);
			s->state = SLOT_CHILD;
			/* park the run (waiting_children) until its child ends: it is re-queued then */
			if (SpiUtilFunctionExists("agent.wait_for_children(bigint)"))
			{
				Oid			types[1] = {INT8OID};
				Datum		vals[1];
				bool		isnull;

				vals[0] = Int64GetDatum(s->run_id);
				if (SPI_execute_with_args("SELECT agent.wait_for_children($1)", 1, types, vals, NULL, false, 1)
					!= SPI_OK_SELECT || SPI_processed != 1)
					elog(ERROR, "agent.wait_for_children returned no row");
				if (DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)))
					s->state = SLOT_FREE;	/* freed by the caller */
			}
			return;
		}
		content = json_dumps(result, JSON_COMPACT);
		json_array_append_new(s->results,
							  json_pack("{s:O,s:s,s:b}", "id", json_object_get(call, "id"),
										"content", content,
										"is_error", json_object_get(result, "error") != NULL));
		free(content);
		json_decref(result);
	}
	LlmAppendToolResults(s->provider, s->messages, s->results);
	(void) TeamsDeliver(s->run_id, s->provider, s->messages);	/* teams: safe point */
	json_decref(s->pending);
	json_decref(s->results);
	s->pending = NULL;
	s->results = NULL;
	SaveState(s);
	s->state = SLOT_READY;
}

static void
ToolsUnit(Slot *s, void *arg)
{
	if (!HoldLease(s->run_id))
	{
		s->state = SLOT_FREE;
		return;
	}
	ExecuteTools(s);
}

static void
ChildUnit(Slot *s, void *arg)
{
	bool		finished;
	json_t	   *result;
	char	   *content;

	if (!HoldLease(s->run_id))
	{
		s->state = SLOT_FREE;
		return;
	}
	result = ToolsChildResult(s->child_run_id, &finished);
	if (!finished)
	{
		/* teams: a question of the child ends the wait */
		result = TeamsChildQuestion(s->run_id, s->child_run_id);
		if (result == NULL)
			return;
	}
	{
		json_t	   *call = json_array_get(s->pending, json_array_size(s->results));

		content = json_dumps(result, JSON_COMPACT);
		if (s->results == NULL)
			s->results = json_array();
		json_array_append_new(s->results,
							  json_pack("{s:O,s:s,s:b}", "id", json_object_get(call, "id"),
										"content", content,
										"is_error", json_object_get(result, "error") != NULL));
		free(content);
		json_decref(result);
	}
	s->child_run_id = 0;
	ExecuteTools(s);
}

/* the answer of the slot's MCP call is recorded, then the remaining tools run */
static void
McpResultUnit(Slot *s, void *arg)
{
	ToolRun		tr = SlotToolRun(s);
	json_t	   *result = NULL;
	json_t	   *call;
	ToolOutcome oc;
	char	   *content;

	if (!HoldLease(s->run_id))
	{
		s->state = SLOT_FREE;
		return;
	}
	ToolGateSetIdentity(&tr);
	oc = McpCallRecord(&tr, s->mcp, &result);
	McpCallFree(s->mcp);
	s->mcp = NULL;
	if (oc == TOOL_PAUSE)
	{
		SaveState(s);
		s->state = SLOT_FREE;	/* freed by the caller */
		return;
	}
	call = json_array_get(s->pending, json_array_size(s->results));
	content = json_dumps(result, JSON_COMPACT);
	json_array_append_new(s->results,
						  json_pack("{s:O,s:s,s:b}", "id", json_object_get(call, "id"),
									"content", content,
									"is_error", json_object_get(result, "error") != NULL));
	free(content);
	json_decref(result);
	s->state = SLOT_TOOLS;
	ExecuteTools(s);
}

/* a question of the MCP server in the call's stream: stored, or its answer looked for */
static void
McpElicitUnit(Slot *s, void *arg)
{
	ToolRun		tr = SlotToolRun(s);

	if (!HoldLease(s->run_id))
	{
		s->state = SLOT_FREE;
		return;
	}
	McpCallElicitStep(&tr, s->mcp);
}

static void SlotUnit(Slot *s, const char *activity, UnitFn fn, void *arg);

/* the MCP results of one pass (FlushMcpResults) */
#define MCP_BATCH		64
typedef struct McpBatch
{
	int			n;
	Slot	   *slots[MCP_BATCH];
	SlotState	before[MCP_BATCH];
	char	   *failed[MCP_BATCH];
} McpBatch;

static McpBatch mcp_batch;

/* a transfer of MCP (mcp_tools.c) ended */
static void
McpTransferDone(HttpRequest *req)
{
	Slot	   *s;

	if (req->kind == HTTP_MCP_REPLY)
	{
		McpReplyDone(req);
		return;
	}
	s = (Slot *) req->owner;
	CHECK_FOR_INTERRUPTS();
	if (McpCallCollect(s->mcp, req))
	{
		if (mcp_batch.n < MCP_BATCH)
			mcp_batch.slots[mcp_batch.n++] = s;	/* recorded with the others (FlushMcpResults) */
		else
			SlotUnit(s, "pg_agents: recording an MCP result", McpResultUnit, NULL);
	}
}

/*
 * The MCP results that came back in one pass are recorded in one
 * transaction, each slot's in a subtransaction of its own, so that a failed
 * one fails its run only (as SlotUnit would).
 */
static void
McpBatchUnit(Slot *unused, void *arg)
{
	McpBatch   *b = (McpBatch *) arg;

	for (int i = 0; i < b->n; i++)
	{
		Slot	   *s = b->slots[i];
		MemoryContext cxt = CurrentMemoryContext;
		ResourceOwner owner = CurrentResourceOwner;

		b->failed[i] = NULL;
		BeginInternalSubTransaction(NULL);
		MemoryContextSwitchTo(cxt);
		PG_TRY();
		{
			McpResultUnit(s, NULL);
			ReleaseCurrentSubTransaction();
			MemoryContextSwitchTo(cxt);
			CurrentResourceOwner = owner;
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(cxt);
			edata = CopyErrorData();
			FlushErrorState();
			RollbackAndReleaseCurrentSubTransaction();
			MemoryContextSwitchTo(cxt);
			CurrentResourceOwner = owner;
			b->failed[i] = MemoryContextStrdup(TopMemoryContext, edata->message ? edata->message : "unknown error");
			ereport(LOG,
					(errmsg("pg_agents worker: recording an MCP result failed: %s", b->failed[i])));
			FreeErrorData(edata);
		}
		PG_END_TRY();
	}
}

static void
FlushMcpResults(void)
{
	McpBatch   *b = &mcp_batch;
	bool		ok;

	if (b->n == 0)
		return;
	if (b->n == 1)
	{
		b->n = 0;
		SlotUnit(b->slots[0], "pg_agents: recording an MCP result", McpResultUnit, NULL);
		return;
	}
	for (int i = 0; i < b->n; i++)
		b->before[i] = b->slots[i]->state;
	ok = RunUnit("pg_agents: recording MCP results", McpBatchUnit, NULL, b);
	for (int i = 0; i < b->n; i++)
	{
		Slot	   *s = b->slots[i];

		if (!ok || b->failed[i])
		{
			s->state = b->before[i];
			EndRunFailed(s, "failed", psprintf("internal error of the worker: %s",
											   ok ? b->failed[i] : unit_error));
		}
		else if (s->state == SLOT_FREE)
			SlotFree(s);
		if (b->failed[i])
			pfree(b->failed[i]);
		b->failed[i] = NULL;
	}
	b->n = 0;
}

/* starts the MCP calls that are due, with no transaction open */
static void
StartDueMcp(void)
{
	TimestampTz now = GetCurrentTimestamp();

	for (int i = 0; i < MAX_SLOTS; i++)
	{
		Slot	   *s = &slots[i];

		if (s->state != SLOT_MCP)
			continue;
		if (McpCallDue(s->mcp, now))
		{
			CHECK_FOR_INTERRUPTS();
			McpCallStart(s->mcp, s);
			if (McpCallAnswered(s->mcp))	/* could not start: a failed result */
				SlotUnit(s, "pg_agents: recording an MCP result", McpResultUnit, NULL);
		}
		else if (McpCallInFlight(s->mcp))
		{
			McpCallPump(s->mcp);
			if (McpCallAnswered(s->mcp))	/* timed out */
				SlotUnit(s, "pg_agents: recording an MCP result", McpResultUnit, NULL);
			else if (McpCallWantsUnit(s->mcp, now))
				SlotUnit(s, "pg_agents: an MCP server asks a person", McpElicitUnit, NULL);
		}
	}
	McpWorkerHousekeeping();
}

/* runs a unit for a slot that may end the slot; a failed unit fails the run */
static void
SlotUnit(Slot *s, const char *activity, UnitFn fn, void *arg)
{
	SlotState	before = s->state;

	if (!RunUnit(activity, fn, s, arg))
	{
		char	   *msg = psprintf("internal error of the worker: %s", unit_error);

		s->state = before;
		EndRunFailed(s, "failed", msg);
		return;
	}
	if (s->state == SLOT_FREE)
		SlotFree(s);
}

/* ---------------------------------------------------------------------
 * LLM calls
 * ---------------------------------------------------------------------
 */

static void
StartCall(Slot *s)
{
	char	   *body;
	char	   *url;
	struct curl_slist *headers;
	ProviderResolved rp;
	char	   *perr = NULL;
	long		wait_ms;
	bool		stream;
	json_t	   *mt;
	int			max_tokens;

	if (s->iterations >= s->max_iterations)
	{
		EndRunFailed(s, "failed",
					 psprintf("the model did not give a final answer within max_iterations (%d) turns",
							  s->max_iterations));
		return;
	}
	/* providers: the key, headers and limits as they are now (rotation) */
	if (!ProviderResolve(s->scope, s->agent_model, &rp, &perr))
	{
		EndRunFailed(s, "failed", perr);
		return;
	}
	s->rl = rp.ratelimit;
	if (s->rl_est <= 0)			/* about 4 bytes a token, refined by usage */
		s->rl_est = (strlen(s->system) + 200) / 4;
	if (!RateLimitAdmit(s->rl, s->rl_est, &wait_ms))
	{
		if (!s->rl_waiting)
		{
			RateLimitCountWait(s->rl);
			s->rl_lease_at = GetCurrentTimestamp();
		}
		s->rl_waiting = true;	/* stays READY; the loop sleeps (RunsNextTimeout) */
		s->rl_until = wait_ms >= 0 ? TimestampTzPlusMilliseconds(GetCurrentTimestamp(), wait_ms) : 0;
		return;
	}
	s->rl_waiting = false;
	s->rl_held = s->rl >= 0;
	/* streaming: a named provider's "stream" setting, else pg_agents.llm_stream */
	stream = rp.name ? rp.stream : LlmStreamEnabled(s->url);
	/* scope max_tokens: a positive integer, else the default */
	mt = json_object_get(s->scope, "max_tokens");
	max_tokens = json_is_integer(mt) && json_integer_value(mt) > 0 && json_integer_value(mt) <= 10000000
		? (int) json_integer_value(mt) : 0;
	body = LlmBuildBody(s->provider, s->model, s->system, s->messages, s->tools, stream, max_tokens);
	url = LlmEndpoint(s->provider, s->url);
	/* the key only ever goes to its provider's base URL (providers.c) */
	headers = ProviderAddHeaders(&rp, LlmHeaders(s->provider, rp.api_key));
	LlmStreamFree(s->stream);
	s->stream = NULL;
	if (stream)
	{
		headers = curl_slist_append(headers, "Accept: text/event-stream");
		s->stream = LlmStreamNew(s->provider);
		s->stream_step = s->iterations + 1;
		s->stream_pub = 0;
		if (s->stream)
			s->stream->last_publish = GetCurrentTimestamp();
	}
	s->call_started = GetCurrentTimestamp();
	s->state = SLOT_HTTP;
	s->req = HttpStart(url, headers, body, rp.request_timeout, s);
	HttpSetStream(s->req, s->stream);
	s->rl_est = strlen(body) / 4 + 1;	/* the next request's estimate */
	pfree(url);
}

/* providers: the request of the slot ended; its share of the limits comes back */
static void
SlotLimiterDone(Slot *s, HttpRequest *req, int64 used, const char *error)
{
	if (!s->rl_held)
		return;
	s->rl_held = false;
	RateLimitDone(s->rl, s->rl_est, used, req->result == CURLE_OK ? req->status : 0,
				  req->retry_after_ms, &req->rl, error);
}


/* input and output of the llm step that records a reply */
static void
ReplyStepJson(Slot *s, LlmReply *r, json_t **in, json_t **out)
{
	json_t	   *names = json_array();
	size_t		i;
	json_t	   *t;

	json_array_foreach(s->tools, i, t)
		json_array_append(names, json_object_get(t, "name"));
	*in = json_pack("{s:s,s:s,s:i,s:o}", "provider", s->provider == LLM_ANTHROPIC ? "anthropic" : "openai",
					"model", s->model, "messages", (int) json_array_size(s->messages), "tools", names);
	*out = json_pack("{s:s?,s:O,s:s?,s:{s:I,s:I}}", "text", r->text, "tool_calls", r->calls,
					 "stop", r->stop, "usage", "in", (json_int_t) r->tokens_in,
					 "out", (json_int_t) r->tokens_out);
	/* cache and reasoning counts only when the provider reported them */
	if (r->tokens_cached > 0)
		json_object_set_new(json_object_get(*out, "usage"), "cached", json_integer(r->tokens_cached));
	if (r->tokens_cache_write > 0)
		json_object_set_new(json_object_get(*out, "usage"), "cache_write", json_integer(r->tokens_cache_write));
	if (r->tokens_reasoning > 0)
		json_object_set_new(json_object_get(*out, "usage"), "reasoning", json_integer(r->tokens_reasoning));
	if (r->refusal)
		json_object_set_new(*out, "refusal", json_string(r->refusal));
}

/* ---------------------------------------------------------------------
 * Streaming: text deltas on NOTIFY agent_run_deltas (docs/worker.md)
 *
 * Throttle: the worker publishes the new text of every streamed call at
 * most once per DELTA_MIN_MS (sooner only for a call with DELTA_MAX_BYTES
 * pending), all calls in one short transaction: the one that records
 * replies when the pass has one, else its own.  So a listener gets a
 * call's text at most 100 ms after it arrived, in at most ten
 * notifications a second per call, and the worker commits at most ten
 * delta transactions a second however many runs stream.  The rest of a
 * reply goes out in the transaction that records it.  The payloads are
 * made by src/deltas.c.
 * ---------------------------------------------------------------------
 */
#define DELTA_MIN_MS		100
#define DELTA_MAX_BYTES		65536

static TimestampTz last_deltas = 0;	/* the last delta notifications */

/* notifies text[from, upto) of the slot's stream; returns the new offset */
static size_t
NotifyDeltas(Slot *s, size_t from, size_t upto)
{
	return DeltasNotify(s->run_id, s->conversation_id, s->stream_step, s->http_attempts + 1,
						s->stream->text, from, upto);
}

/* the rest of a finished stream, inside the unit that records the reply */
static void
NotifyRest(Slot *s)
{
	if (s->stream && s->stream->text_len > s->stream->published)
		(void) NotifyDeltas(s, s->stream->published, s->stream->text_len);
}

static bool
DeltaDue(Slot *s, TimestampTz now)
{
	LlmStream  *st = s->stream;

	/* (a call whose reply came is no longer due: its unit sends the rest) */
	if (s->state != SLOT_HTTP || s->req == NULL || st == NULL || st->text_len <= st->published)
		return false;
	return st->text_len - st->published >= DELTA_MAX_BYTES ||
		TimestampDifferenceExceeds(last_deltas, now, DELTA_MIN_MS);
}

/* inside a unit: notifies the due text of every call in flight */
static void
DeltasInUnit(TimestampTz now)
{
	for (int i = 0; i < MAX_SLOTS; i++)
		if (slots[i].stream)
			slots[i].stream_pub = slots[i].stream->published;
	for (int i = 0; i < MAX_SLOTS; i++)
		if (DeltaDue(&slots[i], now))
			slots[i].stream_pub = NotifyDeltas(&slots[i], slots[i].stream->published,
											   slots[i].stream->text_len);
}

/* after the unit of DeltasInUnit committed */
static void
DeltasCommitted(TimestampTz now)
{
	bool		any = false;

	for (int i = 0; i < MAX_SLOTS; i++)
		if (DeltaDue(&slots[i], now))
		{
			slots[i].stream->published = Max(slots[i].stream_pub, slots[i].stream->published);
			slots[i].stream->last_publish = now;
			any = true;
		}
	if (any)
		last_deltas = now;
}

static void
DeltaUnit(Slot *unused, void *arg)
{
	DeltasInUnit(*(TimestampTz *) arg);
}

/* one short transaction for the deltas due (NOTIFY is sent at its commit) */
static void
PublishDeltas(void)
{
	TimestampTz now = GetCurrentTimestamp();
	bool		any = false;

	for (int i = 0; i < MAX_SLOTS && !any; i++)
		any = DeltaDue(&slots[i], now);
	if (!any)
		return;
	if (RunUnit("pg_agents: publishing text deltas", DeltaUnit, NULL, &now))
		DeltasCommitted(now);
}

typedef struct ReplyArg
{
	LlmReply   *reply;
	int64		in;
	int64		out;
} ReplyArg;

static void
ReplyUnit(Slot *s, void *arg)
{
	LlmReply   *r = ((ReplyArg *) arg)->reply;
	json_t	   *in;
	json_t	   *out;
	Oid			types[4] = {INT8OID, INT4OID, INT4OID, TEXTOID};
	Datum		vals[4];
	char	   *status;
	static SPIPlanPtr usage_plan = NULL;
	static SPIPlanPtr status_plan = NULL;

	if (!HoldLease(s->run_id))
	{
		s->state = SLOT_FREE;
		return;
	}
	ReplyStepJson(s, r, &in, &out);
	ToolGateRecordStep(s->run_id, "llm", s->model, in, out, "ok", r->tokens_in + r->tokens_out, s->call_started);
	json_decref(in);
	json_decref(out);

	vals[0] = Int64GetDatum(s->run_id);
	vals[1] = Int32GetDatum((int32) Min(r->tokens_in, PG_INT32_MAX));
	vals[2] = Int32GetDatum((int32) Min(r->tokens_out, PG_INT32_MAX));
	vals[3] = CStringGetTextDatum(s->model);
	if (SpiUtilExecPlan(&usage_plan, "SELECT agent.add_usage($1, $2, $3, $4)", 4, types, vals, NULL, false, 0)
		!= SPI_OK_SELECT)
		elog(ERROR, "agent.add_usage failed");
	if (r->tokens_cached > 0)
	{
		static SPIPlanPtr cached_plan = NULL;
		Oid			ctypes[2] = {INT8OID, INT8OID};
		Datum		cvals[2] = {Int64GetDatum(s->run_id), Int64GetDatum(r->tokens_cached)};

		if (SpiUtilExecPlan(&cached_plan, "UPDATE agent.runs SET tokens_cached = tokens_cached + $2 WHERE id = $1",
							 2, ctypes, cvals, NULL, false, 0) != SPI_OK_UPDATE)
			elog(ERROR, "could not record the cached tokens of run " INT64_FORMAT, s->run_id);
	}
	NotifyRest(s);
	if (SpiUtilExecPlan(&status_plan, "SELECT r.status, r.tokens_total >= coalesce(r.token_budget, a.default_token_budget), "
							  "coalesce(r.token_budget, a.default_token_budget), r.tokens_total "
							  "FROM agent.runs r JOIN agent.agents a ON a.id = r.agent_id WHERE r.id = $1",
							  1, types, vals, NULL, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "run " INT64_FORMAT " disappeared", s->run_id);
	status = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	if (strcmp(status, "running") != 0)
	{
		s->state = SLOT_FREE;	/* add_usage ended it (budget), or someone cancelled it */
		return;
	}
	s->iterations++;
	if (strcmp(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2), "t") == 0)
	{
		char	   *err = psprintf("token budget of %s exhausted (%s used)",
								   SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3),
								   SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 4));

		FinishRun(s->run_id, "budget_exceeded", NULL, err);
		s->state = SLOT_FREE;
		return;
	}

	/* the stop reasons that do not end the turn as usual (docs/worker.md) */
	switch (LlmStopKindOf(r))
	{
		case LLM_STOP_NORMAL:
			break;
		case LLM_STOP_PAUSE:
			/* a long turn paused by the provider: its content goes back as is */
			json_array_append(s->messages, r->assistant);
			SaveState(s);
			s->state = SLOT_READY;
			return;
		case LLM_STOP_REFUSAL:
			{
				json_t	   *result = json_pack("{s:s,s:s?,s:s?}", "stop", r->stop ? r->stop : "refusal",
											   "text", r->text, "refusal", r->refusal);

				FinishRun(s->run_id, "failed", result,
						  psprintf("the model refused to answer (stop reason %s)%s%s",
								   r->stop ? r->stop : "refusal",
								   r->refusal ? ": " : "", r->refusal ? r->refusal : ""));
				json_decref(result);
				s->state = SLOT_FREE;
				return;
			}
		case LLM_STOP_MAX_TOKENS:
			FinishRun(s->run_id, "failed", NULL,
					  psprintf("the reply was cut at max_tokens (stop reason %s, %lld tokens out): "
							   "the model's answer is incomplete",
							   r->stop, (long long) r->tokens_out));
			s->state = SLOT_FREE;
			return;
		case LLM_STOP_CONTEXT:
			FinishRun(s->run_id, "failed", NULL,
					  psprintf("the conversation no longer fits the model's context window "
							   "(stop reason %s, %lld tokens in)", r->stop, (long long) r->tokens_in));
			s->state = SLOT_FREE;
			return;
	}

	/* teams: a message arrived during the call, the run goes on */
	if (json_array_size(r->calls) == 0 && TeamsPending(s->run_id))
	{
		json_array_append(s->messages, r->assistant);
		(void) TeamsDeliver(s->run_id, s->provider, s->messages);
		SaveState(s);
		s->state = SLOT_READY;
		return;
	}

	if (json_array_size(r->calls) == 0)
	{
		json_t	   *result = json_pack("{s:s}", "text", r->text ? r->text : "");

		FinishRun(s->run_id, "succeeded", result, NULL);
		json_decref(result);
		s->state = SLOT_FREE;
		return;
	}

	json_array_append(s->messages, r->assistant);
	if (s->pending)
		json_decref(s->pending);
	if (s->results)
		json_decref(s->results);
	s->pending = json_incref(r->calls);
	s->results = json_array();
	ExecuteTools(s);
}

typedef struct RetryArg
{
	json_t	   *info;
} RetryArg;

static void
RetryUnit(Slot *s, void *arg)
{
	if (!HoldLease(s->run_id))
	{
		s->state = SLOT_FREE;
		return;
	}
	ToolGateRecordStep(s->run_id, "error", "llm", NULL, ((RetryArg *) arg)->info, "retry", 0, s->call_started);
}

static bool
Retryable(HttpRequest *req)
{
	if (req->resp_too_big)
		return false;
	switch (req->result)
	{
		case CURLE_OK:
			/* a 429 for an exhausted quota or spend limit never succeeds */
			if (req->status == 429 && req->stream_mode != 1 && LlmQuotaError(req->resp, req->resp_len))
				return false;
			return req->status == 429 || req->status >= 500;
		case CURLE_OPERATION_TIMEDOUT:
		case CURLE_COULDNT_CONNECT:
		case CURLE_COULDNT_RESOLVE_HOST:
		case CURLE_GOT_NOTHING:
		case CURLE_SEND_ERROR:
		case CURLE_RECV_ERROR:
			return true;
		default:
			return false;
	}
}

static char *
DescribeFailure(HttpRequest *req)
{
	if (req->resp_too_big)
		return psprintf("the LLM reply is larger than pg_agents.max_reply_bytes (%zu bytes): the worker stopped reading it",
						req->max_bytes);
	if (req->result == CURLE_OPERATION_TIMEDOUT)
		return psprintf("LLM request timed out after %d ms", pg_agents_request_timeout);
	if (req->result == CURLE_PARTIAL_FILE)
		return psprintf("truncated response from the LLM: the connection closed after %zu bytes", req->resp_len);
	if (req->result != CURLE_OK)
		return psprintf("could not reach the LLM endpoint: %s",
						req->errbuf[0] ? req->errbuf : curl_easy_strerror(req->result));
	return psprintf("LLM endpoint returned HTTP %ld: %s%s%s%s", req->status,
					LlmErrorMessage(req->resp, req->resp_len),
					req->request_id[0] ? " (request id " : "", req->request_id,
					req->request_id[0] ? ")" : "");
}

/*
 * Final answers of root runs are recorded in batches: one transaction and
 * a few set-based statements for all of them (agent._worker_finish_replies)
 * instead of one transaction of a dozen statements each.  When the batch
 * fails, each reply is recorded alone as before, so that an error of one
 * run fails only that run.
 */
#define REPLY_BATCH		32

typedef struct BatchItem
{
	Slot	   *s;
	LlmReply	reply;
	char		outcome;		/* f finished, c continue, g gone, s single */
	json_t	   *saved_messages; /* before a "continue" changed them */
	int			saved_iterations;
} BatchItem;

typedef struct ReplyBatch
{
	int			n;
	TimestampTz deltas_at;		/* the due deltas of calls in flight go along */
	BatchItem	items[REPLY_BATCH];
} ReplyBatch;

static ReplyBatch batch;

static void
BatchUnit(Slot *unused, void *arg)
{
	ReplyBatch *b = (ReplyBatch *) arg;
	json_t	   *arr = json_array();
	char	   *str;
	char	   *p;
	Oid			types[2] = {JSONBOID, INT4OID};
	Datum		vals[2];
	static SPIPlanPtr plan = NULL;
	SPITupleTable *tt;
	uint64		nrows;

	for (int i = 0; i < b->n; i++)
	{
		BatchItem  *it = &b->items[i];
		Slot	   *s = it->s;
		LlmReply   *r = &it->reply;
		json_t	   *in;
		json_t	   *out;
		int64		tin = Min(r->tokens_in, PG_INT32_MAX);
		int64		tout = Min(r->tokens_out, PG_INT32_MAX);

		ReplyStepJson(s, r, &in, &out);
		json_array_append_new(arr, json_pack("{s:I,s:s,s:o,s:o,s:I,s:I,s:I,s:I,s:I,s:s?}",
											 "run_id", (json_int_t) s->run_id,
											 "model", s->model,
											 "input", in,
											 "output", out,
											 "tokens", (json_int_t) Min(r->tokens_in + r->tokens_out, PG_INT32_MAX),
											 "tokens_in", (json_int_t) tin,
											 "tokens_out", (json_int_t) tout,
											 "tokens_cached", (json_int_t) Min(r->tokens_cached, PG_INT32_MAX),
											 "started_us", (json_int_t) (s->call_started +
																		 ((POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) *
																		  SECS_PER_DAY * USECS_PER_SEC)),
											 "text", r->text));
		it->outcome = 's';
		it->saved_messages = NULL;
	}
	str = json_dumps(arr, JSON_COMPACT);
	p = pstrdup(str);
	free(str);
	json_decref(arr);
	vals[0] = DirectFunctionCall1(jsonb_in, CStringGetDatum(p));
	vals[1] = Int32GetDatum(pg_agents_run_lease);
	if (SpiUtilExecPlan(&plan, "SELECT f.run_id, f.outcome FROM agent._worker_finish_replies($1, $2) f",
						 2, types, vals, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "agent._worker_finish_replies failed");
	tt = SPI_tuptable;
	nrows = SPI_processed;
	for (uint64 k = 0; k < nrows; k++)
	{
		bool		isnull;
		int64		id = DatumGetInt64(SPI_getbinval(tt->vals[k], tt->tupdesc, 1, &isnull));
		char	   *oc = SPI_getvalue(tt->vals[k], tt->tupdesc, 2);

		for (int i = 0; i < b->n; i++)
			if (b->items[i].s->run_id == id && oc)
				b->items[i].outcome = oc[0];
	}

	/* the rest of streamed answers recorded here (the others: ReplyUnit) */
	for (int i = 0; i < b->n; i++)
		if (b->items[i].outcome == 'f' || b->items[i].outcome == 'c')
			NotifyRest(b->items[i].s);
	DeltasInUnit(b->deltas_at);

	/* teams: a message arrived during the call, the run goes on */
	for (int i = 0; i < b->n; i++)
	{
		BatchItem  *it = &b->items[i];
		Slot	   *s = it->s;

		if (it->outcome != 'c')
			continue;
		it->saved_messages = s->messages;
		it->saved_iterations = s->iterations;
		s->messages = json_copy(s->messages);
		s->iterations++;
		json_array_append(s->messages, it->reply.assistant);
		(void) TeamsDeliver(s->run_id, s->provider, s->messages);
		SaveState(s);
	}
}

/* records the batched replies; the slots end, go on, or are recorded alone */
static void
FlushReplies(void)
{
	ReplyBatch *b = &batch;
	bool		ok;

	if (b->n == 0)
		return;
	b->deltas_at = GetCurrentTimestamp();
	ok = RunUnit("pg_agents: recording LLM replies", BatchUnit, NULL, b);
	if (ok)
		DeltasCommitted(b->deltas_at);
	for (int i = 0; i < b->n; i++)
	{
		BatchItem  *it = &b->items[i];
		Slot	   *s = it->s;

		if (!ok && it->saved_messages)
		{
			/* rolled back: the conversation as it was */
			json_decref(s->messages);
			s->messages = it->saved_messages;
			s->iterations = it->saved_iterations;
			it->saved_messages = NULL;
		}
		if (ok && it->outcome == 'f')
			SlotFree(s);
		else if (ok && it->outcome == 'g')
			SlotFree(s);
		else if (ok && it->outcome == 'c')
		{
			json_decref(it->saved_messages);
			s->state = SLOT_READY;
		}
		else
		{
			ReplyArg	ra;

			memset(&ra, 0, sizeof(ra));
			ra.reply = &it->reply;
			SlotUnit(s, "pg_agents: recording an LLM reply", ReplyUnit, &ra);
		}
		LlmFreeReply(&it->reply);
	}
	b->n = 0;
}

/* providers: a text (an error from the provider) without the provider's key in it */
static char *
ScrubText(Slot *s, char *why)
{
	ProviderResolved rp;
	char	   *perr;

	if (ProviderResolve(s->scope, s->agent_model, &rp, &perr))
		why = ProviderScrub(&rp, why);
	return why;
}

/* providers: a failure's description without the provider's key in it */
static char *
ScrubbedFailure(Slot *s, HttpRequest *req)
{
	return ScrubText(s, DescribeFailure(req));
}

static void
CallDone(Slot *s, HttpRequest *req)
{
	char	   *why = NULL;
	bool		retry = false;
	json_t	   *streamed = NULL;

	s->req = NULL;
	CHECK_FOR_INTERRUPTS();
	if (req->stream_mode == 1 && !req->resp_too_big)
	{
		/* a streamed 200: it must have ended (message_stop, [DONE]) */
		streamed = LlmStreamFinish(s->stream);
		if (s->stream->error)
		{
			why = psprintf("the LLM stream ended with an error event: %s%s%s%s%s%s",
						   s->stream->error_type ? s->stream->error_type : "",
						   s->stream->error_type ? ": " : "", s->stream->error,
						   req->request_id[0] ? " (request id " : "", req->request_id,
						   req->request_id[0] ? ")" : "");
			retry = s->stream->error_type == NULL ||
				strcmp(s->stream->error_type, "invalid_request_error") != 0;
		}
		else if (streamed == NULL || req->result != CURLE_OK)
		{
			why = psprintf("the LLM stream was cut after %zu bytes: %s", req->resp_len,
						   req->result != CURLE_OK
						   ? (req->errbuf[0] ? req->errbuf : curl_easy_strerror(req->result))
						   : "it ended without its last event");
			retry = true;
		}
		if (why)
			why = ScrubText(s, why);
		if (why && streamed)
		{
			json_decref(streamed);
			streamed = NULL;
		}
	}
	else if (req->result != CURLE_OK || req->status != 200)
	{
		why = ScrubbedFailure(s, req);
		retry = Retryable(req);
		if (req->status == 429 && !retry)
			why = psprintf("%s: the provider's quota or spend limit is exhausted, retrying cannot help", why);
	}

	if (why)
	{
		SlotLimiterDone(s, req, -1, why);
		if (retry && s->http_attempts < LLM_MAX_RETRIES)
		{
			long		delay;
			RetryArg	ra;

			if (req->retry_after_ms >= 0)
				delay = Min(req->retry_after_ms, BACKOFF_MAX_MS) + random() % 50;
			else
			{
				delay = BACKOFF_BASE_MS * (1L << s->http_attempts);
				delay = Min(delay, BACKOFF_MAX_MS);
				delay = delay / 2 + random() % (delay / 2 + 1);
			}
			s->http_attempts++;
			ra.info = json_pack("{s:s,s:i,s:i,s:I,s:b}", "error", why, "attempt", s->http_attempts,
								"http_status", (int) req->status, "retry_in_ms", (json_int_t) delay,
								"retry_after", req->retry_after_ms >= 0);
			if (req->request_id[0])
				json_object_set_new(ra.info, "request_id", json_string(req->request_id));
			HttpFree(req);
			s->state = SLOT_BACKOFF;
			s->next_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), delay);
			if (!RunUnit("pg_agents: recording a retry", RetryUnit, s, &ra))
			{
				json_decref(ra.info);
				EndRunFailed(s, "failed", psprintf("internal error of the worker: %s", unit_error));
				return;
			}
			json_decref(ra.info);
			if (s->state == SLOT_FREE)
				SlotFree(s);
			return;
		}
		HttpFree(req);
		if (retry || s->http_attempts > 0)
			why = psprintf("%s (gave up after %d attempts)", why, s->http_attempts + 1);
		EndRunFailed(s, "failed", why);
		return;
	}

	{
		LlmReply	r;
		ReplyArg	ra;
		bool		parsed;

		if (streamed)
			parsed = LlmParseReplyJson(s->provider, streamed, &r);	/* takes it */
		else
			parsed = LlmParseReply(s->provider, req->resp, req->resp_len, &r);
		if (!parsed)
		{
			SlotLimiterDone(s, req, -1, r.error);
			HttpFree(req);
			LlmFreeReply(&r);
			EndRunFailed(s, "failed", r.error);
			return;
		}
		SlotLimiterDone(s, req, r.tokens_in + r.tokens_out, NULL);
		HttpFree(req);
		s->http_attempts = 0;
		if (json_array_size(r.calls) == 0 && LlmStopKindOf(&r) == LLM_STOP_NORMAL && batch.n < REPLY_BATCH)
		{
			/* a final answer: recorded with the others (FlushReplies) */
			batch.items[batch.n].s = s;
			batch.items[batch.n].reply = r;
			batch.items[batch.n].saved_messages = NULL;
			batch.n++;
			return;
		}
		ra.reply = &r;
		SlotUnit(s, "pg_agents: recording an LLM reply", ReplyUnit, &ra);
		LlmFreeReply(&r);
	}
}

/* ---------------------------------------------------------------------
 * The executor's pass of the worker loop
 * ---------------------------------------------------------------------
 */

/* a backend queued runs (the latch was set): claim at the next pass */
void
RunsWake(void)
{
	woken = true;
}

void
RunsInit(void)
{
	memset(slots, 0, sizeof(slots));
	srandom((unsigned int) (MyProcPid ^ GetCurrentTimestamp()));
}

static void
ReclaimUnit(Slot *s, void *arg)
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

void
RunsReclaimOnStart(void)
{
	(void) RunUnit("pg_agents: reclaiming runs", ReclaimUnit, NULL, NULL);
}

/*
 * Claim when woken by a backend, once a second anyway, or when slots freed
 * up: then as soon as a sixteenth of the capacity is free (two slots of 32)
 * while calls are in flight.  With a slow model, replies come back a few at
 * a time: waiting for a quarter of the slots left them idle (100 ms
 * latency, 32 at once: 82-83 % of the ideal rate, 86-89 % now), and a claim
 * transaction per few replies costs little next to them.
 */
static void
ClaimIfDue(TimestampTz now)
{
	int			cap = Min(pg_agents_max_concurrent_runs, MAX_SLOTS);
	int			free_slots = cap - ActiveSlots();

	if (free_slots > 0 &&
		(woken || TimestampDifferenceExceeds(last_claim, now, 1000) ||
		 (more_work && (free_slots >= Max(1, cap / 16) || HttpInFlight() == 0))))
	{
		woken = false;
		(void) RunsClaim();
	}
}

/* starts the LLM calls that are due */
static void
ProvidersUnit(Slot *unused, void *arg)
{
	ProvidersLoad();
}

/* a run waiting for its provider's headroom keeps its lease (agent.tick requeues expired ones) */
static void
LeaseUnit(Slot *s, void *arg)
{
	if (!HoldLease(s->run_id))
		s->state = SLOT_FREE;	/* cancelled meanwhile */
}

static void
StartDueCalls(void)
{
	TimestampTz now = GetCurrentTimestamp();
	bool		checked = false;
	bool		full[RATELIMIT_MAX];	/* providers found without headroom in this pass */
	TimestampTz full_until[RATELIMIT_MAX];	/* ... until then (0: a request ends) */

	memset(full, 0, sizeof(full));
	for (int i = 0; i < MAX_SLOTS; i++)
	{
		Slot	   *s = &slots[i];

		if (s->state == SLOT_BACKOFF && s->next_at <= now)
			s->state = SLOT_READY;
		if (s->state == SLOT_READY && s->rl_waiting &&
			TimestampDifferenceExceeds(s->rl_lease_at, now, pg_agents_run_lease * 1000 / 3))
		{
			s->rl_lease_at = now;
			SlotUnit(s, "pg_agents: renewing the lease of a run waiting for its provider", LeaseUnit, NULL);
			if (s->state == SLOT_FREE)
				continue;
		}
		/* providers: not before its bucket refills, nor once it was found full */
		if (s->state == SLOT_READY && s->rl_waiting && s->rl_until > now)
			continue;
		if (s->state == SLOT_READY && s->rl_waiting && s->rl >= 0 && s->rl < RATELIMIT_MAX && full[s->rl])
		{
			s->rl_until = full_until[s->rl];	/* the same wait as the run found it full */
			continue;
		}
		if (s->state == SLOT_READY)
		{
			/* providers: a changed provider or secret is loaded before the next request */
			if (!checked && ProvidersStale())
				(void) RunUnit("pg_agents: loading providers", ProvidersUnit, NULL, NULL);
			checked = true;
			CHECK_FOR_INTERRUPTS();
			StartCall(s);
			if (s->state == SLOT_READY && s->rl_waiting && s->rl >= 0 && s->rl < RATELIMIT_MAX)
			{
				full[s->rl] = true;
				full_until[s->rl] = s->rl_until;
			}
		}
	}
}

/*
 * One pass: collect finished HTTP calls, run tool units, poll children,
 * claim new runs, start calls that are due.
 *
 * While many replies are waiting to be recorded, new runs are claimed and
 * their calls sent every few replies, so that the model endpoint works on
 * them while the worker records the rest (instead of a whole batch of
 * calls ending, then a whole batch starting).
 */
void
RunsStep(void)
{
	HttpRequest *req;
	TimestampTz now;
	bool		poll_children;
	int			done = 0;

	while ((req = HttpNextDone()) != NULL)
	{
		Slot	   *s = (Slot *) req->owner;

		if (req->kind != HTTP_LLM)
		{
			McpTransferDone(req);
			continue;
		}
		CallDone(s, req);
		if (batch.n == REPLY_BATCH)
			FlushReplies();
		/* (bounded, so that the pass ends under a steady stream of replies) */
		if (++done % 16 == 0 && done <= 256)
		{
			FlushReplies();
			FlushMcpResults();
			ClaimIfDue(GetCurrentTimestamp());
			StartDueCalls();
			StartDueMcp();
			HttpPerform();
		}
	}
	FlushReplies();
	FlushMcpResults();
	PublishDeltas();			/* streaming: the text deltas still due */

	for (int i = 0; i < MAX_SLOTS; i++)
		if (slots[i].state == SLOT_TOOLS)
			SlotUnit(&slots[i], "pg_agents: executing tools", ToolsUnit, NULL);
	StartDueMcp();

	now = GetCurrentTimestamp();
	poll_children = TimestampDifferenceExceeds(last_child_poll, now, CHILD_POLL_MS);
	if (poll_children)
	{
		last_child_poll = now;
		for (int i = 0; i < MAX_SLOTS; i++)
			if (slots[i].state == SLOT_CHILD)
				SlotUnit(&slots[i], "pg_agents: waiting for a delegated run", ChildUnit, NULL);
	}

	ClaimIfDue(now);
	StartDueCalls();
}

/* how long the loop may sleep before the executor needs it again */
long
RunsNextTimeout(long dflt)
{
	long		t = dflt;
	TimestampTz now = GetCurrentTimestamp();

	for (int i = 0; i < MAX_SLOTS; i++)
	{
		Slot	   *s = &slots[i];

		if (s->state == SLOT_BACKOFF)
		{
			long		ms = (long) ((s->next_at - now) / 1000);

			t = Min(t, Max(ms, 0));
		}
		else if (s->state == SLOT_CHILD)
			t = Min(t, CHILD_POLL_MS);
		else if (s->state == SLOT_MCP && !McpCallInFlight(s->mcp))
		{
			long		ms = (long) ((McpCallNextAt(s->mcp) - now) / 1000);

			t = Min(t, Max(ms, 0));
		}
		else if (s->state == SLOT_READY && s->rl_waiting)
		{
			/* providers: until the bucket refills, or (0) a request ends */
			if (s->rl_until > 0)
				t = Min(t, Max((long) ((s->rl_until - now) / 1000), 1));
		}
		else if (s->state == SLOT_HTTP && s->stream && s->stream->text_len > s->stream->published)
		{
			long		ms = DELTA_MIN_MS - (long) ((now - last_deltas) / 1000);

			t = Min(t, Max(ms, 0));
		}
		else if (s->state == SLOT_READY || s->state == SLOT_TOOLS)
			t = 0;
	}
	if ((woken || more_work) && ActiveSlots() < pg_agents_max_concurrent_runs && HttpInFlight() == 0)
		t = 0;
	return t;
}

/* ---------------------------------------------------------------------
 * Operations: the drain of SIGTERM (src/worker.c, docs/operations.md)
 * ---------------------------------------------------------------------
 */

/* runs held by the worker (any slot in use) */
int
RunsHeld(void)
{
	int			n = 0;

	for (int i = 0; i < MAX_SLOTS; i++)
		if (slots[i].state != SLOT_FREE)
			n++;
	return n;
}

/* nothing left that finishes by itself: no request in flight, no tools due */
bool
RunsDrainIdle(void)
{
	if (HttpInFlight() > 0 || batch.n > 0)
		return false;
	for (int i = 0; i < MAX_SLOTS; i++)
		if (slots[i].state == SLOT_TOOLS)
			return false;
	return true;
}

/*
 * A pass while draining: replies of the requests in flight are recorded and
 * the tools they ask for executed (each with its state saved, as always),
 * but no run is claimed and no new call is started.
 */
void
RunsDrainStep(void)
{
	HttpRequest *req;

	while ((req = HttpNextDone()) != NULL)
	{
		if (req->kind != HTTP_LLM)
		{
			McpTransferDone(req);
			continue;
		}
		CallDone((Slot *) req->owner, req);
		if (batch.n == REPLY_BATCH)
			FlushReplies();
	}
	FlushReplies();
	FlushMcpResults();
	for (int i = 0; i < MAX_SLOTS; i++)
		if (slots[i].state == SLOT_TOOLS)
			SlotUnit(&slots[i], "pg_agents: executing tools", ToolsUnit, NULL);
}

typedef struct RequeueArg
{
	List	   *ids;			/* int64 * of the runs held */
	int			requeued;
} RequeueArg;

static void
RequeueUnit(Slot *unused, void *arg)
{
	RequeueArg *ra = (RequeueArg *) arg;
	Datum	   *elems = palloc(sizeof(Datum) * Max(list_length(ra->ids), 1));
	Oid			types[2] = {INT8ARRAYOID, INT4OID};
	Datum		vals[2];
	int			i = 0;
	bool		isnull;
	ListCell   *lc;

	foreach(lc, ra->ids)
		elems[i++] = Int64GetDatum(*(int64 *) lfirst(lc));
	vals[0] = PointerGetDatum(construct_array(elems, i, INT8OID, sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	vals[1] = Int32GetDatum(MyProcPid);
	if (SPI_execute_with_args("SELECT agent._worker_requeue($1, $2)", 2, types, vals, NULL, false, 1)
		!= SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "agent._worker_requeue failed");
	ra->requeued = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * The end of a drain: every run still held goes back to the queue in one
 * transaction (agent._worker_requeue: queued, attempts not counted, the
 * conversation saved at its last safe point kept), requests still in flight
 * are abandoned.  Returns how many runs were requeued; when the transaction
 * fails they stay running and the next worker reclaims them.
 */
int
RunsRequeueAll(void)
{
	RequeueArg	ra = {NIL, 0};

	for (int i = 0; i < MAX_SLOTS; i++)
		if (slots[i].state != SLOT_FREE)
		{
			int64	   *id = palloc(sizeof(int64));

			*id = slots[i].run_id;
			ra.ids = lappend(ra.ids, id);
		}
	if (ra.ids == NIL)
		return 0;
	if (!RunUnit("pg_agents: requeueing runs (drain)", RequeueUnit, NULL, &ra))
		ra.requeued = 0;
	for (int i = 0; i < MAX_SLOTS; i++)
		if (slots[i].state != SLOT_FREE)
			SlotFree(&slots[i]);
	return ra.requeued;
}
