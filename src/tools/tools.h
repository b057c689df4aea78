/*-------------------------------------------------------------------------
 *
 * tools.h
 *		The tool dispatcher of the worker (tools.c): a call's family found
 *		through the registry (tool_family.h), run inside the run slots'
 *		transactions; the types every tool family shares.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_TOOLS_H
#define PG_AGENTS_TOOLS_H

#include "util/jansson_prelude.h"

#include "datatype/timestamp.h"
#include "llm/http.h"
#include "llm/llm.h"

typedef struct ToolRun
{
	int64		run_id;
	int64		agent_id;
	const char *workspace;
	const char *regime;			/* manual | autonomous */
	const char *user_id;		/* requested_by for manual runs, else NULL */
	const char *approval_mode;	/* none | writes | all */
	json_t	   *scope;			/* agents.scope (borrowed) */
	bool		can_delegate;
} ToolRun;

typedef enum ToolOutcome
{
	TOOL_DONE,					/* result is set */
	TOOL_PAUSE,					/* approval requested: the run waits */
	TOOL_WAIT_CHILD,			/* delegated: child_run_id is set */
	TOOL_ASYNC					/* an asynchronous call is prepared: *call is set */
} ToolOutcome;

/*
 * An asynchronous tool call in flight (an MCP tools/call): prepared inside
 * the tool transaction (TOOL_ASYNC), started and pumped with no transaction
 * open, its answer recorded in a unit of its own.  Opaque to its holder (the
 * run slots); its family's code is reached through the registry
 * (tool_family.h) only.
 */
typedef struct ToolCall ToolCall;

extern json_t *ToolsDefinitions(void);
extern void ToolsAddRunDefinitions(json_t *tools, int64 agent_id, int64 run_id, bool can_delegate);
extern ToolOutcome ToolsExecute(const ToolRun *tr, const char *name, json_t *input,
								json_t **result, int64 *child_run_id, ToolCall **call);

/* an asynchronous call: no transaction open, unless said */
extern void ToolsCallStart(ToolCall *call, void *owner);
extern bool ToolsCallDue(ToolCall *call, TimestampTz now);
extern bool ToolsCallInFlight(ToolCall *call);
extern bool ToolsCallAnswered(ToolCall *call);
extern TimestampTz ToolsCallNextAt(ToolCall *call);
extern void ToolsCallPump(ToolCall *call);
extern bool ToolsCallWantsUnit(ToolCall *call, TimestampTz now);
extern void ToolsCallUnitStep(const ToolRun *tr, ToolCall *call);	/* in a unit */
extern ToolOutcome ToolsCallRecord(const ToolRun *tr, ToolCall *call, json_t **result); /* in a unit */
extern void ToolsCallFree(ToolCall *call);
extern void *ToolsTransferDone(HttpRequest *req);	/* a transfer not of an LLM call */
extern void ToolsHousekeeping(void);

/* between turns, in a unit: what reached the run meanwhile (teams' messages) */
extern int	ToolsBetweenTurns(int64 run_id, const char *workspace, LlmProvider provider,
							 json_t *messages);
extern bool ToolsBetweenTurnsPending(int64 run_id, const char *workspace);
/* a run waiting for its child, in a unit: the wait's result, or NULL */
extern json_t *ToolsChildPoll(int64 run_id, const char *workspace, int64 child_run_id);

/*
 * The gate every tool family goes through (identity, steps, access,
 * approval, subtransactions) is tool_gate.h; the registry of families
 * tool_family.h; the SPI helpers spi_util.h.
 */

#endif							/* PG_AGENTS_TOOLS_H */
