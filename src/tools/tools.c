/*-------------------------------------------------------------------------
 *
 * tools.c
 *		The tool dispatcher of the worker: the definitions offered to the
 *		model, and one call dispatched to its family through the registry
 *		(tool_family.h).
 *
 * A family (tools_builtin.c, tools_rows.c, teams.c, mcp_tools.c, tools_web.c) registers
 * its names, its definitions and its execute function, and optionally its
 * asynchronous calls, what it delivers between turns and what ends a child's
 * wait; every family goes through the gate (tool_gate.c) and none calls back
 * here.  This file includes no family's internals, and the runs module
 * reaches a family through it only (tools/check_layers.sh).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "util/jansson_prelude.h"
#include "tool_family.h"
#include "tool_gate.h"
#include "tools.h"

#include "utils/timestamp.h"

/* the registry, in the order a call's name is matched */
static const ToolFamily *const families[] = {
	&ToolsBuiltinFamily,
	&ToolsRowsFamily,
	&McpToolFamily,
	&TeamsToolFamily,
	&WebToolFamily,
};

/* ---------------------------------------------------------------------
 * Definitions and dispatch
 * ---------------------------------------------------------------------
 */

/*
 * A claimed run's first tool list: the families' fixed definitions (the
 * built-in tools); context assembly then appends delegate_to_agent and
 * use_skill, and ToolsAddRunDefinitions the run's own.
 */
json_t *
ToolsDefinitions(void)
{
	json_t	   *tools = json_array();

	for (int i = 0; i < lengthof(families); i++)
		if (families[i]->base_definitions)
			families[i]->base_definitions(tools, 0, 0, false);
	return tools;
}

/* appends the families' definitions for the run (its MCP and teams tools) */
void
ToolsAddRunDefinitions(json_t *tools, int64 agent_id, int64 run_id, bool can_delegate)
{
	for (int i = 0; i < lengthof(families); i++)
		if (families[i]->run_definitions)
			families[i]->run_definitions(tools, agent_id, run_id, can_delegate);
}

/* the family a tool name belongs to, or NULL */
static const ToolFamily *
FindFamily(const ToolRun *tr, const char *name)
{
	for (int i = 0; i < lengthof(families); i++)
	{
		const ToolFamily *f = families[i];

		if (f->prefix && strncmp(name, f->prefix, strlen(f->prefix)) == 0)
			return f;
		if (f->handles && f->handles(tr, name))
			return f;
	}
	return NULL;
}

/*
 * Executes one tool call.  TOOL_DONE sets *result (an object; {"error":
 * ...} for a failure the model should see).
 */
ToolOutcome
ToolsExecute(const ToolRun *tr, const char *name, json_t *input, json_t **result,
			 int64 *child_run_id, ToolCall **call)
{
	TimestampTz started = GetCurrentTimestamp();
	const ToolFamily *family;
	ToolOutcome oc;

	ToolGateBegin();
	*result = NULL;
	*child_run_id = 0;
	*call = NULL;
	if (!json_is_object(input))
		return ToolGateFail(tr, name, input, result, started,
								"the arguments of tool \"%s\" must be a JSON object", name);
	family = FindFamily(tr, name);
	if (family == NULL)
		return ToolGateFail(tr, name, input, result, started,
								"unknown tool \"%s\"", name);
	oc = family->execute(tr, name, input, result, child_run_id, started);
	if (oc == TOOL_ASYNC)
	{
		if (family->async == NULL)
			elog(ERROR, "tool family \"%s\" has no asynchronous calls", family->family);
		*call = family->async->take();
		if (*call == NULL)
			elog(ERROR, "tool family \"%s\" prepared no asynchronous call", family->family);
		(*call)->family = family;
	}
	return oc;
}

/* ---------------------------------------------------------------------
 * Asynchronous calls (ToolAsyncRoutine), through the call's family
 * ---------------------------------------------------------------------
 */

/* starts (or resumes) the call; owner is what ToolsTransferDone gives back */
void
ToolsCallStart(ToolCall *call, void *owner)
{
	call->owner = owner;
	call->family->async->start(call);
}

/* not in flight, no answer yet, and due */
bool
ToolsCallDue(ToolCall *call, TimestampTz now)
{
	return call->family->async->due(call, now);
}

/* whether the call has a transfer in the multi handle */
bool
ToolsCallInFlight(ToolCall *call)
{
	return call->family->async->in_flight(call);
}

/* whether the call has its answer, ready for ToolsCallRecord */
bool
ToolsCallAnswered(ToolCall *call)
{
	return call->family->async->answered(call);
}

/* when a call not in flight is next due */
TimestampTz
ToolsCallNextAt(ToolCall *call)
{
	return call->family->async->next_at(call);
}

/* between passes: the call's own work while in flight (then maybe answered) */
void
ToolsCallPump(ToolCall *call)
{
	call->family->async->pump(call);
}

/* whether the call needs a unit (ToolsCallUnitStep) */
bool
ToolsCallWantsUnit(ToolCall *call, TimestampTz now)
{
	return call->family->async->wants_unit(call, now);
}

/* the call's work inside a unit (an MCP server's question for people) */
void
ToolsCallUnitStep(const ToolRun *tr, ToolCall *call)
{
	call->family->async->unit_step(tr, call);
}

/* the answer recorded, in a unit: TOOL_DONE with *result, or TOOL_PAUSE */
ToolOutcome
ToolsCallRecord(const ToolRun *tr, ToolCall *call, json_t **result)
{
	return call->family->async->record(tr, call, result);
}

/* frees the call (NULL is accepted) */
void
ToolsCallFree(ToolCall *call)
{
	if (call)
		call->family->async->free(call);
}

/*
 * A transfer that is not an LLM call ended: its family takes it.  Returns
 * the owner of the call that has its answer now, or NULL.
 */
void *
ToolsTransferDone(HttpRequest *req)
{
	for (int i = 0; i < lengthof(families); i++)
	{
		const ToolFamily *f = families[i];
		ToolCall   *answered = NULL;

		if (f->async && f->async->transfer_done && f->async->transfer_done(req, &answered))
			return answered ? answered->owner : NULL;
	}
	elog(WARNING, "pg_agents worker: a transfer of unknown kind %d ended", req->kind);
	HttpFree(req);
	return NULL;
}

/* once a pass, no transaction open: the families' own upkeep */
void
ToolsHousekeeping(void)
{
	for (int i = 0; i < lengthof(families); i++)
		if (families[i]->async && families[i]->async->housekeeping)
			families[i]->async->housekeeping();
}

/* ---------------------------------------------------------------------
 * Between turns, and a child's wait
 * ---------------------------------------------------------------------
 */

/* appends what reached the run meanwhile to the conversation; returns how many */
int
ToolsBetweenTurns(int64 run_id, const char *workspace, LlmProvider provider, json_t *messages)
{
	int			n = 0;

	for (int i = 0; i < lengthof(families); i++)
		if (families[i]->between_turns)
			n += families[i]->between_turns(run_id, workspace, provider, messages);
	return n;
}

/* whether something reached the run meanwhile */
bool
ToolsBetweenTurnsPending(int64 run_id, const char *workspace)
{
	for (int i = 0; i < lengthof(families); i++)
		if (families[i]->between_turns_pending &&
			families[i]->between_turns_pending(run_id, workspace))
			return true;
	return false;
}

/*
 * A run waiting for its child: the wait's result (the child ended, or asked
 * a question), from the first family that has one; NULL: it goes on.
 */
json_t *
ToolsChildPoll(int64 run_id, const char *workspace, int64 child_run_id)
{
	for (int i = 0; i < lengthof(families); i++)
		if (families[i]->child_poll)
		{
			json_t	   *r = families[i]->child_poll(run_id, workspace, child_run_id);

			if (r)
				return r;
		}
	return NULL;
}
