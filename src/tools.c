/*-------------------------------------------------------------------------
 *
 * tools.c
 *		The tool dispatcher of the worker: the definitions offered to the
 *		model, and one call dispatched to its family through the registry
 *		(tool_family.h).
 *
 * A family (tools_builtin.c, tools_rows.c, teams.c, mcp_tools.c, tools_web.c) registers
 * its names, its definitions and its execute function; every family goes
 * through the gate (tool_gate.c) and none calls back here.  This file
 * includes no family's internals.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "jansson_prelude.h"
#include "tools.h"
#include "tool_family.h"
#include "tool_gate.h"

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
			 int64 *child_run_id)
{
	TimestampTz started = GetCurrentTimestamp();
	const ToolFamily *family;

	ToolGateBegin();
	*result = NULL;
	*child_run_id = 0;
	if (!json_is_object(input))
		return ToolGateFail(tr, name, input, result, started,
								"the arguments of tool \"%s\" must be a JSON object", name);
	family = FindFamily(tr, name);
	if (family)
		return family->execute(tr, name, input, result, child_run_id, started);

	return ToolGateFail(tr, name, input, result, started,
							"unknown tool \"%s\"", name);
}
