/*-------------------------------------------------------------------------
 *
 * mcp_elicit_sql.c
 *		agent._mcp_call_input: a tools/call that may pause for people.
 *
 * The worker's MCP calls go through agent.mcp_agent_call_input
 * (sql/src/706_mcp_elicitation.sql), which uses this entry point: a
 * 2026-07-28 server's input_required result (an elicitation) is handed back
 * as {"input_required": true, "input_requests", "request_state"} for the run
 * to wait for a person's answer, and the call is later sent again with
 * inputResponses and the requestState.  Only for servers recorded as
 * 2026-07-28: a fresh client per call, spoken to statelessly at once (no
 * session to keep).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "util/jansson_prelude.h"

#include <string.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "llm/providers.h"
#include "llm/secrets.h"
#include "mcp.h"
#include "mcp_sql.h"
#include "util/guc.h"

PG_FUNCTION_INFO_V1(pg_agents_mcp_call_input);

/*
 * Abort callback of the client: non-zero when a query cancel or backend
 * termination is pending.
 */
static int
ElicitInterrupted(void *arg)
{
	return (QueryCancelPending || ProcDiePending) ? 1 : 0;
}

/*
 * agent._mcp_call_input(server_id, url, headers, tool, arguments,
 * input_responses, request_state) RETURNS jsonb: {"ok": true, "result"},
 * {"ok": false, "input_required": true, "input_requests", "request_state"},
 * or {"ok": false, "error", "rpc_error"?}.  Never raises for a remote
 * failure.
 */
Datum
pg_agents_mcp_call_input(PG_FUNCTION_ARGS)
{
	char	   *url;
	char	   *tool;
	json_t	   *headers;
	json_t	   *args;
	json_t	   *responses = NULL;
	char	   *state = NULL;
	McpClient  *c;
	json_t	   *result = NULL;
	json_t	   *out;
	int			rc;
	const char *problem;
	char	   *serr = NULL;

	if (PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3) || PG_ARGISNULL(4))
		PG_RETURN_NULL();
	url = text_to_cstring(PG_GETARG_TEXT_PP(1));
	problem = McpUrlProblem(url);
	if (problem)
	{
		out = json_pack("{s:b, s:s}", "ok", 0, "error", problem);
		goto finish;
	}
	headers = McpJsonbToJansson(PG_GETARG_JSONB_P(2), false);
	tool = text_to_cstring(PG_GETARG_TEXT_PP(3));
	args = McpJsonbToJansson(PG_GETARG_JSONB_P(4), false);
	if (!PG_ARGISNULL(5))
		responses = McpJsonbToJansson(PG_GETARG_JSONB_P(5), false);
	if (!PG_ARGISNULL(6))
		state = text_to_cstring(PG_GETARG_TEXT_PP(6));

	/* providers: ${secret:NAME} header values, resolved now */
	if (!SecretsExpandJsonHeaders(headers, PG_ARGISNULL(0) ? NULL : McpServerWorkspace(PG_GETARG_INT64(0)), &serr))
	{
		if (headers)
			json_decref(headers);
		if (args)
			json_decref(args);
		if (responses)
			json_decref(responses);
		out = json_pack("{s:b, s:s}", "ok", 0, "error", serr);
		goto finish;
	}
	c = McpClientNew(url, headers, pg_agents_request_timeout);
	if (headers)
		json_decref(headers);
	McpClientSetAbort(c, ElicitInterrupted, NULL);
	McpClientDeferElicitation(c);
	/* called for servers recorded as stateless: no server/discover first */
	McpClientSetProtocol(c, MCP_STATELESS_VERSION);
	rc = McpCallToolWithInput(c, tool, json_is_object(args) ? args : NULL,
								  json_is_object(responses) ? responses : NULL, state, &result);
	if (rc == MCP_OK)
		out = json_pack("{s:b, s:O}", "ok", 1, "result", result);
	else if (rc == MCP_INPUT_REQUIRED && result)
	{
		out = json_pack("{s:b, s:b, s:O?, s:O?, s:s}", "ok", 0, "input_required", 1,
						"input_requests", json_object_get(result, "inputRequests"),
						"request_state", json_object_get(result, "requestState"),
						"error", McpClientError(c));
	}
	else if (rc == MCP_RPC_ERROR)
		out = json_pack("{s:b, s:s, s:O}", "ok", 0, "error", McpClientError(c),
						"rpc_error", result ? result : json_null());
	else
		out = json_pack("{s:b, s:s}", "ok", 0, "error", McpClientError(c));
	if (result)
		json_decref(result);
	McpClientClose(c);
	if (args)
		json_decref(args);
	if (responses)
		json_decref(responses);

finish:
	PG_RETURN_DATUM(McpJanssonToJsonb(out, "an MCP answer", false));
}
