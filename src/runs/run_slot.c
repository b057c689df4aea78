/*-------------------------------------------------------------------------
 *
 * run_slot.c
 *		One run in flight, the bottom of the runs module: the slots
 *		themselves (RunSlotTable, the Slot of run_int.h), the short
 *		transaction a slot's work runs in (RunSlotUnit), a slot freed, a run
 *		failed, its provider as resolved and its run as the tools see it.
 *
 * The module's other files build on it and it calls none of them:
 * run_prompt.c (what the model receives), run_tools.c (a slot's tool
 * calls), run_calls.c (its LLM calls) and run_loop.c (the state machine the
 * worker loop drives) above it, run_units.c (the SQL of the units) below.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "util/jansson_prelude.h"

#include "run_int.h"

#include "ops.h"
#include "util/spi_util.h"

#include "utils/memutils.h"


Slot		RunSlotTable[MAX_SLOTS];
char		RunSlotUnitError[1024];
bool		RunSlotMoreWork = true;


/* ---------------------------------------------------------------------
 * Units of work
 * ---------------------------------------------------------------------
 */

/* a slot's unit: its function, the slot and the argument (SpiUtilUnit takes one) */
typedef struct SlotUnitCall
{
	UnitFn		fn;
	Slot	   *s;
	void	   *arg;
} SlotUnitCall;

/* the body SpiUtilUnit runs for a slot's unit */
static void
SlotUnitBody(void *arg)
{
	SlotUnitCall *c = (SlotUnitCall *) arg;

	c->fn(c->s, c->arg);
}

/*
 * One short transaction (SpiUtilUnit, spi_util.c).  An error is logged and
 * noted for agent.worker_status, its message kept in RunSlotUnitError.
 */
bool
RunSlotUnit(const char *activity, UnitFn fn, Slot *s, void *arg)
{
	SlotUnitCall c = {fn, s, arg};

	if (SpiUtilUnit(activity, SlotUnitBody, &c, RunSlotUnitError, sizeof(RunSlotUnitError)))
		return true;
	ereport(LOG,
			(errmsg("pg_agents worker: %s failed: %s", activity, RunSlotUnitError)));
	/*
	 * operations: agent.worker_status (pg_monitor) gets what failed and its
	 * SQLSTATE, never the message, which may quote a workspace's content;
	 * the server log has it
	 */
	RunsWorkerNoteError(psprintf("%s failed: SQLSTATE %s", activity, unpack_sql_state(SpiUtilUnitErrcode)));
	return false;
}

/* the slot's memory, requests and conversation released; the slot is free */
void
RunSlotFree(Slot *s)
{
	if (s->rl_held)				/* providers: its share of the limits comes back */
		RateLimitDone(s->rl, s->rl_est, -1, 0, -1, NULL, NULL);
	if (s->req)
		HttpFree(s->req);
	if (s->call)
		ToolsCallFree(s->call);
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
	RunSlotMoreWork = true;
}

/* the run of the slot as the tools see it (tools.c) */
ToolRun
RunSlotToolRun(Slot *s)
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

/*
 * The slot's provider (providers.c): where its requests go, with which key,
 * headers and limits.  Resolved once for the run, and again only when the
 * providers were reloaded or the configuration re-read since
 * (ProvidersEpoch), so that a rotated key or a changed limit still takes
 * effect at the next request.  false with *error when the run cannot be
 * served.  The pointers of *rp stay valid until the epoch moves.
 */
bool
RunSlotProvider(Slot *s, ProviderResolved *rp, char **error)
{
	uint64		epoch = ProvidersEpoch();

	if (!s->rp_valid || s->rp_epoch != epoch)
	{
		char	   *err = NULL;

		s->rp_ok = ProviderResolve(s->scope, s->workspace, s->key_user, s->agent_model, &s->rp, &err);
		if (s->rp_error)
			pfree(s->rp_error);
		s->rp_error = s->rp_ok ? NULL : MemoryContextStrdup(s->cxt, err ? err : "unknown error");
		s->rp_epoch = epoch;
		s->rp_valid = true;
	}
	*rp = s->rp;
	if (!s->rp_ok)
		*error = pstrdup(s->rp_error);
	return s->rp_ok;
}

/* ---- failing a run ---- */

typedef struct FailArg
{
	const char *status;
	const char *error;
} FailArg;

/* the unit that fails a run: its error step, its end */
static void
FailUnit(Slot *s, void *arg)
{
	FailArg    *fa = (FailArg *) arg;

	RunSqlRecordFailure(s, fa->status, fa->error);
}

/* ends the run with a clear error; the slot is freed whatever happens */
void
RunSlotFail(Slot *s, const char *status, const char *error)
{
	FailArg		fa;
	char	   *copy = pstrdup(error);

	fa.status = status;
	fa.error = copy;
	if (!RunSlotUnit("pg_agents: failing a run", FailUnit, s, &fa))
	{
		/* a second chance without the step, e.g. when redaction failed */
		FailArg		fb = {status, psprintf("%s (and: %s)", copy, RunSlotUnitError)};

		(void) RunSlotUnit("pg_agents: failing a run", FailUnit, s, &fb);
	}
	RunSlotFree(s);
}

/* runs a unit for a slot that may end the slot; a failed unit fails the run */
void
RunSlotUnitOrFail(Slot *s, const char *activity, UnitFn fn, void *arg)
{
	SlotState	before = s->state;

	if (!RunSlotUnit(activity, fn, s, arg))
	{
		char	   *msg = psprintf("internal error of the worker: %s", RunSlotUnitError);

		s->state = before;
		RunSlotFail(s, "failed", msg);
		return;
	}
	if (s->state == SLOT_FREE)
		RunSlotFree(s);
}
