/*-------------------------------------------------------------------------
 *
 * run_loop.c
 *		The runs in flight: one slot per claimed run, driven as a small
 *		state machine by the worker loop (runs.h): the claim, the pass, the
 *		drain.
 *
 *		READY    the next LLM call can start (no transaction is open)
 *		HTTP     an LLM request is in flight in the curl multi handle
 *		BACKOFF  waiting to retry a 429, a 5xx, a time-out or a refused
 *		         connection
 *		TOOLS    tool calls of the last reply remain to be executed
 *		ASYNC    an asynchronous tool call of the reply (an MCP call) is in
 *		         flight in the same multi handle (or due to start): prepared
 *		         in the tool transaction, sent after it committed, its answer
 *		         recorded in a transaction of its own; the slot holds it as
 *		         an opaque ToolCall and reaches its family through the
 *		         dispatcher (tools.h) only
 *		CHILD    waiting for a delegated child run to end
 *
 * Database work happens in short transactions (RunSlotUnit, over
 * SpiUtilUnit of spi_util.c), one per unit of work, and never while a
 * transaction would span an HTTP call: requests are only started and
 * collected between transactions.  The conversation (the provider's
 * message array, the pending tool calls and their results) is saved in
 * agent.run_state in the same transaction as the tool effects, so that a
 * run paused for approval, waiting for a child, or interrupted by a crash
 * resumes exactly where it stood.
 *
 * The top of the runs module; the files below it, which never call it:
 * run_calls.c (the LLM calls), run_tools.c (the tool calls, asynchronous
 * ones and children included), run_prompt.c (what the model receives),
 * run_slot.c (the slot itself: units, end, failure), run_units.c (the SQL
 * inside the units); run_int.h is their private header.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "util/jansson_prelude.h"

#include "run_int.h"

#include "ops.h"
#include "runs.h"
#include "util/guc.h"
#include "util/shmem.h"

#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"


static bool woken = true;		/* a backend queued runs (latch) */
static TimestampTz last_claim = 0;
static TimestampTz last_child_poll = 0;
static uint32 claim_gen = 0;


/* ---------------------------------------------------------------------
 * Claiming
 * ---------------------------------------------------------------------
 */

/* a copy of v in the slot's memory (NULL stays NULL) */
static char *
SlotStrdup(Slot *s, const char *v)
{
	return v ? MemoryContextStrdup(s->cxt, v) : NULL;
}

/* the first free slot, or NULL */
static Slot *
FreeSlot(void)
{
	for (int i = 0; i < MAX_SLOTS; i++)
		if (RunSlotTable[i].state == SLOT_FREE)
			return &RunSlotTable[i];
	return NULL;
}

/*
 * The slot of a claimed run: its identity, its agent's settings and its
 * provider (a named provider, else the agent's settings, then the GUCs),
 * READY.
 */
static void
SlotFill(Slot *s, const ClaimedRun *cr)
{
	ProviderResolved rp;
	char	   *perr = NULL;
	bool		resolved;

	memset(s, 0, sizeof(Slot));
	s->gen = claim_gen;
	s->cxt = AllocSetContextCreate(TopMemoryContext, "pg_agents run", ALLOCSET_SMALL_SIZES);
	s->run_id = cr->run_id;
	s->agent_id = cr->agent_id;
	s->workspace = SlotStrdup(s, cr->workspace);
	s->regime = SlotStrdup(s, cr->regime);
	s->user_id = SlotStrdup(s, cr->requested_by);

	/*
	 * The user whose own provider secrets the run uses (docs/worker.md,
	 * "Whose key"): the requester of a manual run (chat, API trigger), the
	 * creator of a run_as creator schedule job (its requested_by; NULL for
	 * a shared job).  Event, mention and other autonomous runs act for
	 * nobody's account: the workspace's key.
	 */
	if (cr->requested_by &&
		((cr->regime && strcmp(cr->regime, "manual") == 0) ||
		 (cr->origin && strcmp(cr->origin, "schedule") == 0)))
		s->key_user = SlotStrdup(s, cr->requested_by);
	s->approval_mode = SlotStrdup(s, cr->approval_mode);
	s->scope = cr->scope ? json_loads(cr->scope, 0, NULL) : NULL;
	if (s->scope == NULL)
		s->scope = json_object();
	s->max_iterations = cr->max_iterations;
	s->can_delegate = cr->delegation_listed;
	s->state = SLOT_READY;
	s->agent_model = SlotStrdup(s, cr->model);
	resolved = RunSlotProvider(s, &rp, &perr);
	s->provider = resolved ? rp.kind : LLM_OPENAI;
	s->url = resolved ? SlotStrdup(s, rp.base_url) : NULL;
	s->model = SlotStrdup(s, resolved ? rp.model : "default");
	s->rl = resolved ? rp.ratelimit : -1;
}

/*
 * The conversation a run saved (agent.run_state) when it resumes: its
 * messages, the pending tool calls and their results, the prompt it
 * started with; the slot then waits for its child, or executes the tools
 * that remain.  A fresh run starts with no message.
 */
static void
SlotRestore(Slot *s, const char *saved)
{
	json_t	   *state = saved ? json_loads(saved, 0, NULL) : NULL;

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
}

/*
 * Why a claimed run cannot go on, or NULL: its provider cannot serve it
 * (unknown, no endpoint, not allowlisted ...: failed), its agent was deleted
 * (failed) or suspended (an autonomous run: cancelled).
 */
static char *
ClaimRefusal(Slot *s, const ClaimedRun *cr, const char **status)
{
	ProviderResolved rp;
	char	   *perr = NULL;

	*status = "failed";
	if (!RunSlotProvider(s, &rp, &perr))
		return perr;
	if (cr->deleted)
		return "the agent was deleted";
	if (cr->suspended)
	{
		*status = "cancelled";
		return "the agent is suspended";
	}
	return NULL;
}

/*
 * The claim's unit: up to *arg runs claimed, each given a slot (its
 * provider, its saved conversation, its context); *arg becomes how many
 * were claimed.  A run that cannot go on ends here.
 */
static void
ClaimUnit(Slot *unused, void *arg)
{
	int			n = *(int *) arg;
	ClaimedRun *rows;
	int			nrows;

	if (ProvidersStale())		/* providers: rows and secrets (providers.c) */
		ProvidersLoad();

	/*
	 * Without a default endpoint (pg_agents.llm_url empty) the worker only
	 * works when some queued run's agent names its own (scope llm_url);
	 * otherwise runs stay queued for an external executor (claim_runs).
	 */
	if ((pg_agents_llm_url == NULL || pg_agents_llm_url[0] == '\0') && !RunSqlAnyClaimable())
	{
		*(int *) arg = 0;
		return;
	}

	nrows = RunSqlClaim(n, &rows);
	*(int *) arg = nrows;
	for (int i = 0; i < nrows; i++)
	{
		ClaimedRun *cr = &rows[i];
		Slot	   *s = FreeSlot();
		const char *status;
		char	   *why;

		if (s == NULL)
			elog(ERROR, "no free run slot");
		SlotFill(s, cr);
		SlotRestore(s, cr->state);
		why = ClaimRefusal(s, cr, &status);
		if (why == NULL)
		{
			/* context assembly (context.c): system prompt, first messages, tools */
			why = RunPromptAssemble(s, cr);
			if (why)
				why = psprintf("could not assemble the run's context: %s", why);
		}
		if (why)
		{
			RunSqlFinish(s->run_id, s->workspace, status, NULL, why);
			RunSlotFree(s);
			continue;
		}
		/* teams: messages that arrived while it was queued or waiting */
		if (s->state == SLOT_READY && ToolsBetweenTurns(s->run_id, s->workspace, s->provider, s->messages) > 0)
			RunSqlSaveState(s);
	}
}

/* the slots that hold a run at work (a run waiting for its child does not count) */
static int
ActiveSlots(void)
{
	int			n = 0;

	for (int i = 0; i < MAX_SLOTS; i++)
		if (RunSlotTable[i].state != SLOT_FREE && RunSlotTable[i].state != SLOT_CHILD)
			n++;
	return n;
}

/*
 * The slots this worker may use: pg_agents.max_concurrent_runs, and under
 * pg_agents.max_cluster_runs what the other databases' workers leave
 * (shmem.c, as they last published it).
 */
static int
RunsCap(void)
{
	int			cap = Min(pg_agents_max_concurrent_runs, MAX_SLOTS);

	if (pg_agents_max_cluster_runs > 0)
		cap = Min(cap, Max(pg_agents_max_cluster_runs - ShmemClusterRunsElsewhere(), 0));
	return cap;
}

/* operations: the slots in use for agent.worker_status */
int
RunsActive(void)
{
	return ActiveSlots();
}

/* claims up to the free capacity; returns how many runs were claimed */
static int
RunsClaim(void)
{
	int			cap = RunsCap();
	int			n = cap - ActiveSlots();
	int			got;
	int			used = 0;

	for (int i = 0; i < MAX_SLOTS; i++)
		if (RunSlotTable[i].state != SLOT_FREE)
			used++;
	n = Min(n, MAX_SLOTS - used);
	if (n <= 0)
		return 0;
	if (RunsWorkerClaimsStopped())	/* operations: paused or draining */
	{
		RunSlotMoreWork = false;
		return 0;
	}
	got = n;
	last_claim = GetCurrentTimestamp();
	claim_gen++;
	if (!RunSlotUnit("pg_agents: claiming runs", ClaimUnit, NULL, &got))
	{
		/* the claim rolled back: forget the slots it had filled */
		for (int i = 0; i < MAX_SLOTS; i++)
			if (RunSlotTable[i].state != SLOT_FREE && RunSlotTable[i].gen == claim_gen)
				RunSlotFree(&RunSlotTable[i]);
		RunSlotMoreWork = false;
		return -1;
	}
	RunSlotMoreWork = (got == n);
	return got;
}

/* ---------------------------------------------------------------------
 * The pass of the worker loop
 * ---------------------------------------------------------------------
 */

/* a backend queued runs (the latch was set): claim at the next pass */
void
RunsWake(void)
{
	woken = true;
}

/* at the worker's start: every slot free, the backoff jitter seeded */
void
RunsInit(void)
{
	memset(RunSlotTable, 0, sizeof(RunSlotTable));
	srandom((unsigned int) (MyProcPid ^ GetCurrentTimestamp()));
}

/* the unit of the start: runs left running by a previous worker reclaimed */
static void
ReclaimUnit(Slot *s, void *arg)
{
	RunSqlReclaim();
}

/* at start (and when the extension appears): the runs a previous worker held go back to the queue */
void
RunsReclaimOnStart(void)
{
	(void) RunSlotUnit("pg_agents: reclaiming runs", ReclaimUnit, NULL, NULL);
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
	int			cap = RunsCap();
	int			free_slots = cap - ActiveSlots();

	if (free_slots > 0 &&
		(woken || TimestampDifferenceExceeds(last_claim, now, 1000) ||
		 (RunSlotMoreWork && (free_slots >= Max(1, cap / 16) || HttpInFlight() == 0))))
	{
		woken = false;
		(void) RunsClaim();
	}
}

/* the unit that reloads the providers and their secrets (providers.c) */
static void
ProvidersUnit(Slot *unused, void *arg)
{
	ProvidersLoad();
}

/* a run waiting for its provider's headroom keeps its lease (agent.tick requeues expired ones) */
static void
LeaseUnit(Slot *s, void *arg)
{
	if (!RunSqlHoldLease(s->run_id, s->workspace))
		s->state = SLOT_FREE;	/* cancelled meanwhile */
}

/*
 * Starts the LLM calls that are due: slots READY (a backoff that ended
 * included), unless their provider has no headroom; the lease of a run
 * waiting for headroom renewed; changed providers loaded first.
 */
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
		Slot	   *s = &RunSlotTable[i];

		if (s->state == SLOT_BACKOFF && s->next_at <= now)
			s->state = SLOT_READY;
		if (s->state == SLOT_READY && s->rl_waiting &&
			TimestampDifferenceExceeds(s->rl_lease_at, now, pg_agents_run_lease * 1000 / 3))
		{
			s->rl_lease_at = now;
			RunSlotUnitOrFail(s, "pg_agents: renewing the lease of a run waiting for its provider", LeaseUnit, NULL);
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
				(void) RunSlotUnit("pg_agents: loading providers", ProvidersUnit, NULL, NULL);
			checked = true;
			CHECK_FOR_INTERRUPTS();
			RunCallStart(s);
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
			RunToolsTransferDone(req);
			continue;
		}
		RunCallDone(s, req);
		if (RunCallsBatchFull())
			RunCallsFlush();
		/* (bounded, so that the pass ends under a steady stream of replies) */
		if (++done % 16 == 0 && done <= 256)
		{
			RunCallsFlush();
			RunToolsFlushAsync();
			ClaimIfDue(GetCurrentTimestamp());
			StartDueCalls();
			RunToolsStartDueAsync();
			HttpPerform();
		}
	}
	/* (while streams are in flight, final answers wait a little for the next ones) */
	if (RunCallsFlushDue(GetCurrentTimestamp(), NULL))
		RunCallsFlush();
	RunToolsFlushAsync();
	RunCallsPublishDeltas();	/* streaming: the text deltas still due */

	RunToolsExecuteDue();
	RunToolsStartDueAsync();

	now = GetCurrentTimestamp();
	poll_children = TimestampDifferenceExceeds(last_child_poll, now, CHILD_POLL_MS);
	if (poll_children)
	{
		last_child_poll = now;
		RunToolsPollChildren();
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
		Slot	   *s = &RunSlotTable[i];

		if (s->state == SLOT_BACKOFF)
		{
			long		ms = (long) ((s->next_at - now) / 1000);

			t = Min(t, Max(ms, 0));
		}
		else if (s->state == SLOT_CHILD)
			t = Min(t, CHILD_POLL_MS);
		else if (s->state == SLOT_ASYNC && !ToolsCallInFlight(s->call))
		{
			long		ms = (long) ((ToolsCallNextAt(s->call) - now) / 1000);

			t = Min(t, Max(ms, 0));
		}
		else if (s->state == SLOT_READY && s->rl_waiting)
		{
			/* providers: until the bucket refills, or (0) a request ends */
			if (s->rl_until > 0)
				t = Min(t, Max((long) ((s->rl_until - now) / 1000), 1));
		}
		else if (s->state == SLOT_HTTP && s->req && s->stream && s->stream->text_len > s->stream->published)
		{
			long		ms = RunCallsDeltaWait(now);

			t = Min(t, Max(ms, 0));
		}
		else if (s->state == SLOT_READY || s->state == SLOT_TOOLS)
			t = 0;
	}
	if (!RunCallsBatchEmpty())
	{
		long		ms;

		if (RunCallsFlushDue(now, &ms))
			t = 0;
		else
			t = Min(t, Max(ms, 1));
	}
	if ((woken || RunSlotMoreWork) && ActiveSlots() < RunsCap() && HttpInFlight() == 0)
		t = 0;
	return t;
}

/* ---------------------------------------------------------------------
 * Operations: the drain of SIGTERM (src/runs/worker.c, docs/operations.md)
 * ---------------------------------------------------------------------
 */

/* runs held by the worker (any slot in use) */
int
RunsHeld(void)
{
	int			n = 0;

	for (int i = 0; i < MAX_SLOTS; i++)
		if (RunSlotTable[i].state != SLOT_FREE)
			n++;
	return n;
}

/* nothing left that finishes by itself: no request in flight, no tools due */
bool
RunsDrainIdle(void)
{
	if (HttpInFlight() > 0 || !RunCallsBatchEmpty())
		return false;
	for (int i = 0; i < MAX_SLOTS; i++)
		if (RunSlotTable[i].state == SLOT_TOOLS)
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
			RunToolsTransferDone(req);
			continue;
		}
		RunCallDone((Slot *) req->owner, req);
		if (RunCallsBatchFull())
			RunCallsFlush();
	}
	RunCallsFlush();
	RunToolsFlushAsync();
	RunToolsExecuteDue();
}

typedef struct RequeueArg
{
	int64	   *ids;			/* the runs held */
	int			n;
	int			requeued;
} RequeueArg;

/* the unit of the end of a drain: the runs held go back to the queue */
static void
RequeueUnit(Slot *unused, void *arg)
{
	RequeueArg *ra = (RequeueArg *) arg;

	ra->requeued = RunSqlRequeue(ra->ids, ra->n);
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
	RequeueArg	ra = {palloc(sizeof(int64) * MAX_SLOTS), 0, 0};

	for (int i = 0; i < MAX_SLOTS; i++)
		if (RunSlotTable[i].state != SLOT_FREE)
			ra.ids[ra.n++] = RunSlotTable[i].run_id;
	if (ra.n == 0)
		return 0;
	if (!RunSlotUnit("pg_agents: requeueing runs (drain)", RequeueUnit, NULL, &ra))
		ra.requeued = 0;
	for (int i = 0; i < MAX_SLOTS; i++)
		if (RunSlotTable[i].state != SLOT_FREE)
			RunSlotFree(&RunSlotTable[i]);
	return ra.requeued;
}
