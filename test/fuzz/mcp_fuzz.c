/*
 * libFuzzer harness for the MCP client (src/mcp/mcp_transport.c, mcp_protocol.c,
 * mcp_async.c) as a hostile server sees it: JSON and SSE answers (the SSE
 * reader, resumption ids and retry delays, JSON-RPC ids, batches, server
 * requests and notifications in the stream), initialize / server/discover /
 * version negotiation, tools/list pages and x-mcp-header annotations,
 * tools/call results, input_required rounds and elicitation (the requested
 * schema's defaults), through the synchronous calls and the asynchronous ones
 * of the worker.  The network is fake_curl.c: each HTTP exchange is answered
 * by the next response of the input's script, its body in chunks cut
 * anywhere.
 *
 * Input: one byte of flags (bits 0-1: the protocol, auto / 2025-11-25 /
 * 2026-07-28 / 2025-03-26; bit 2: an elicitation callback that accepts;
 * bit 3: elicitation held for people, async calls only; bit 4: elicitation
 * deferred), one byte seeding the chunk
 * boundaries, then the script (fake_curl.h).
 *
 * Checks: no crash, no leak, no sanitizer report, within the time and memory
 * limits; every call returns one of the documented codes and sets its
 * result as documented (an object on MCP_OK, else NULL or an error object);
 * a text result is a string.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_curl.h"
#include "mcp/mcp.h"

static const char *const protocols[] = {NULL, "2025-11-25", "2026-07-28", "2025-03-26"};

static void
check_code(int rc)
{
	if (rc != MCP_OK && rc != MCP_ERROR && rc != MCP_RPC_ERROR && rc != MCP_ABORTED &&
		rc != MCP_INPUT_REQUIRED && rc != MCP_UNAUTHORIZED && rc != MCP_SESSION_GONE &&
		rc != MCP_AGAIN)
		abort();
}

static json_t *
accept_cb(void *arg, json_t *params)
{
	json_t	   *answer = json_pack("{s:s,s:{s:s}}", "action", "accept", "content", "name", "x");

	(void) arg;
	McpElicitationApplyDefaults(params, json_object_get(answer, "content"));
	return answer;
}

static void
check_result(int rc, json_t *result)
{
	check_code(rc);
	if (rc == MCP_OK && !json_is_object(result) && result != NULL)
		abort();
	if (rc == MCP_OK && result)
	{
		char	   *t = McpResultText(result);

		if (t)
			(void) strlen(t);
		free(t);
	}
	if (result)
		json_decref(result);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	McpClient  *c;
	json_t	   *tools = NULL;
	json_t	   *result = NULL;
	json_t	   *args;
	int			rc;

	if (size < 2)
		return 0;
	fake_curl_script(data + 2, size - 2, data[1]);
	c = McpClientNew("https://mcp.example/mcp", NULL, 10000);
	if (c == NULL)
		abort();
	McpClientSetProtocol(c, protocols[data[0] & 3]);
	if (data[0] & 4)
		McpClientSetElicitation(c, accept_cb, NULL);
	if (data[0] & 8)
		McpClientHoldElicitation(c, 1000);
	else if (data[0] & 16)
		McpClientDeferElicitation(c);

	/* synchronous: list, call, any request (not with held elicitation: the worker's async calls only) */
	args = json_pack("{s:s,s:i}", "region", "eu", "n", 1);
	if (data[0] & 8)
		goto async;
	rc = McpListTools(c, &tools);
	check_code(rc);
	if (rc == MCP_OK && !json_is_array(tools))
		abort();
	if (tools)
		json_decref(tools);
	(void) McpClientRejectedTools(c);
	(void) McpClientToolsTtlMs(c);
	(void) McpClientServerInfo(c);
	(void) strlen(McpClientError(c));

	rc = McpCallTool(c, "search", args, &result);
	check_result(rc, result);
	result = NULL;
	{
		json_t	   *params = json_pack("{s:s}", "uri", "file:///a");

		rc = McpRequest(c, "resources/read", params, &result);
		json_decref(params);
	}
	check_result(rc, result);
	result = NULL;

	/* asynchronous, as the worker calls */
async:
	if (McpClientReady(c) == MCP_OK)
	{
		McpAsync   *a = McpAsyncCall(c, "search", args, NULL, NULL, NULL);

		for (int round = 0; a && round < 8; round++)
		{
			struct curl_slist *h;
			char	   *body;
			json_t	   *el;

			rc = McpAsyncDone(a, fake_curl_run(McpAsyncHandle(a)), &result);
			check_code(rc);
			(void) McpAsyncListChanged(a);
			while ((el = McpAsyncTakeElicitation(a)) != NULL)
			{
				json_t	   *answer = json_pack("{s:s}", "action", "decline");

				McpAsyncAnswerElicitation(a, el, answer);	/* copies it */
				json_decref(answer);
				json_decref(el);
			}
			while (McpAsyncNextReply(a, &h, &body))
			{
				curl_slist_free_all(h);
				free(body);
			}
			if (rc != MCP_AGAIN)
			{
				check_result(rc == MCP_SESSION_GONE ? MCP_ERROR : rc, result);
				result = NULL;
				break;
			}
			if (result)
				json_decref(result);
			result = NULL;
		}
		McpAsyncRequestFree(a);
	}
	json_decref(args);
	McpClientClose(c);
	return 0;
}
