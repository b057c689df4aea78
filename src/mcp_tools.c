/*-------------------------------------------------------------------------
 *
 * mcp_tools.c
 *		MCP tools in the worker: definitions offered to the model and the
 *		execution of an mcp__<server>__<tool> call.
 *
 * Tools come from agent.mcp_agent_tools (the agent's workspace servers and
 * its owner's personal ones, filtered by its scope), read at every claim, so
 * that a server added or refreshed while the worker runs is used by the next
 * run without a restart.  A call goes through the same approval gate as the
 * built-in tools (the tool's needs_approval flag, scope.needs_approval, the
 * agent's approval_mode: "writes" pauses any tool the server does not mark
 * readOnlyHint), then agent.mcp_agent_call, which never raises for a remote
 * failure: a broken server is a failed tool result the model reads.  The
 * HTTP exchange runs synchronously in the worker, bounded by
 * pg_agents.request_timeout.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "worker_int.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "mcp.h"
#include "pg_agents.h"

/*
 * Appends the MCP tools of the agent, in this run, to a neutral tool list:
 * the workspace's servers and the personal ones of the run's user
 * (agent._mcp_run_user: the requester of a manual run, the owner of an
 * autonomous one), never another user's.
 */
void
McpAppendToolDefinitions(json_t *tools, int64 agent_id, int64 run_id)
{
	Oid			types[2] = {INT8OID, INT8OID};
	Datum		vals[2];
	int			rc;
	static SPIPlanPtr any_plan = NULL;
	static SPIPlanPtr list_plan = NULL;

	vals[0] = Int64GetDatum(agent_id);
	vals[1] = Int64GetDatum(run_id);

	/*
	 * Most agents have no MCP server enabled in their workspace: a cheap
	 * kept-plan look first, then the listing (agent.mcp_agent_tools is a
	 * SECURITY DEFINER SQL function, planned again at every call).
	 */
	rc = PgAgentsExecPlan(&any_plan,
						  "SELECT EXISTS (SELECT 1 FROM agent.agents a JOIN agent.mcp_servers s "
						  "ON s.workspace_id = a.workspace_id WHERE a.id = $1 AND s.enabled)",
						  1, types, vals, NULL, true, 1);	/* (agent only) */
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not look for the MCP servers of agent " INT64_FORMAT, agent_id);
	if (strcmp(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1), "t") != 0)
		return;
	rc = PgAgentsExecPlan(&list_plan, "SELECT m.exposed_name, m.server, coalesce(m.description, ''), m.input_schema::pg_catalog.text "
						  "FROM agent.mcp_agent_tools($1, agent._mcp_run_user($2)) m ORDER BY m.exposed_name",
						  2, types, vals, NULL, true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not list the MCP tools of agent " INT64_FORMAT, agent_id);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	td = SPI_tuptable->tupdesc;
		char	   *name = SPI_getvalue(tup, td, 1);
		char	   *server = SPI_getvalue(tup, td, 2);
		char	   *desc = SPI_getvalue(tup, td, 3);
		json_t	   *schema = json_loads(SPI_getvalue(tup, td, 4), 0, NULL);
		char	   *full = psprintf("[MCP server %s] %s", server, desc);

		if (!json_is_object(schema))
		{
			if (schema)
				json_decref(schema);
			schema = json_pack("{s:s}", "type", "object");
		}
		json_array_append_new(tools, json_pack("{s:s,s:s,s:o}", "name", name,
											   "description", full, "parameters", schema));
		pfree(full);
	}
}

/*
 * The call itself, through agent.mcp_agent_call_input (elicitation through
 * people, sql/src/706_mcp_elicitation.sql) when it is installed, else
 * agent.mcp_agent_call.
 */
static json_t *
McpToolCallForRun(const ToolRun *tr, const char *name, Datum arguments)
{
	Oid			types[4] = {INT8OID, INT8OID, TEXTOID, JSONBOID};
	Datum		vals[4];
	int			rc;

	vals[0] = Int64GetDatum(tr->agent_id);
	vals[1] = Int64GetDatum(tr->run_id);
	vals[2] = CStringGetTextDatum(name);
	vals[3] = arguments;
	/* personal servers: the run's user only (agent._mcp_run_user, inside) */
	PgAgentsWorkerNoteMcp(true);	/* operations: agent.worker_status (reset by the loop on error) */
	rc = SPI_execute_with_args("SELECT agent.mcp_agent_call_input($1, $2, $3, $4)::pg_catalog.text", 4, types, vals,
							   NULL, false, 1);
	PgAgentsWorkerNoteMcp(false);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "agent.mcp_agent_call returned no row");
	return json_loads(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1), 0, NULL);
}

/* Executes one mcp__* tool call for the run. */
ToolOutcome
McpToolExecute(const ToolRun *tr, const char *name, json_t *input, json_t **result,
			   TimestampTz started)
{
	Oid			types[4] = {INT8OID, TEXTOID, JSONBOID, INT8OID};
	Datum		vals[4];
	int			rc;
	bool		isnull;
	bool		needs;
	bool		read_only;
	char	   *text;
	json_t	   *call;
	json_t	   *res;
	json_t	   *step;
	bool		ok;

	*result = NULL;
	vals[0] = Int64GetDatum(tr->agent_id);
	vals[1] = CStringGetTextDatum(name);
	vals[2] = (Datum) 0;
	vals[3] = Int64GetDatum(tr->run_id);
	rc = SPI_execute_with_args("SELECT m.needs_approval, m.read_only "
							   "FROM agent.mcp_agent_tools($1, agent._mcp_run_user($4)) m "
							   "WHERE m.exposed_name = $2", 4, types, vals, "  n ", true, 1);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not look up MCP tool \"%s\"", name);
	if (SPI_processed != 1)
	{
		*result = json_pack("{s:s}", "error", psprintf("unknown tool \"%s\"", name));
		ToolsRecordStep(tr->run_id, "error", name, input, *result, "error", 0, started);
		return TOOL_DONE;
	}
	needs = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	read_only = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	if (needs || ToolsNeedsApproval(tr, name, !read_only))
	{
		ToolOutcome gate = ToolsApprovalGate(tr, name, input, result, started);

		if (gate != TOOL_DONE || *result != NULL)
			return gate;
	}

	text = json_dumps(input, JSON_COMPACT);
	vals[2] = DirectFunctionCall1(jsonb_in, CStringGetDatum(pstrdup(text ? text : "{}")));
	free(text);
	call = McpToolCallForRun(tr, name, vals[2]);
	if (call == NULL)
		elog(ERROR, "agent.mcp_agent_call returned invalid JSON");
	if (json_is_true(json_object_get(call, "paused")))
	{
		/* the server asked a person something: the run waits like on an approval */
		step = json_pack("{s:s, s:O?, s:O?}", "elicitation", "pending",
						 "approval_key", json_object_get(call, "approval_key"),
						 "questions", json_object_get(call, "questions"));
		ToolsRecordStep(tr->run_id, "approval", name, input, step, "pending", 0, started);
		json_decref(step);
		json_decref(call);
		return TOOL_PAUSE;
	}
	ok = json_is_true(json_object_get(call, "ok"));
	res = json_object_get(call, "result");
	text = mcp_result_text(res);
	if (ok)
	{
		*result = json_pack("{s:s}", "result", text);
		if (json_object_get(res, "structuredContent"))
			json_object_set(*result, "structured", json_object_get(res, "structuredContent"));
	}
	else
		*result = json_pack("{s:s}", "error", text[0] ? text : "the MCP tool failed");
	free(text);
	step = json_pack("{s:O?,s:O?,s:O?}", "server", json_object_get(call, "server"),
					 "tool", json_object_get(call, "tool"), "result", res);
	ToolsRecordStep(tr->run_id, "tool", name, input, step, ok ? "ok" : "error", 0, started);
	json_decref(step);
	json_decref(call);
	return TOOL_DONE;
}
