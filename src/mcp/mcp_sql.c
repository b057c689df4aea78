/*-------------------------------------------------------------------------
 *
 * mcp_sql.c
 *		SQL-callable parts of the MCP client (agent._mcp_*).
 *
 * The HTTP work is done by src/mcp/mcp_transport.c from the calling backend (or the
 * worker, which calls the same functions through SPI).  One client, and so
 * one MCP session, is kept per server and process, keyed by the server's URL
 * and headers: a changed configuration opens a new session, a lost session
 * is re-initialized by the client, and every session is closed (DELETE) when
 * the process exits.  Remote failures are returned as {"ok": false, ...},
 * never raised, so that a broken server cannot abort the caller.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "util/jansson_prelude.h"

#include <string.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "llm/providers.h"
#include "llm/secrets.h"
#include "mcp.h"
#include "mcp_sql.h"
#include "util/config_gen.h"
#include "util/guc.h"

PG_FUNCTION_INFO_V1(pg_agents_mcp_url_problem);
PG_FUNCTION_INFO_V1(pg_agents_mcp_list);
PG_FUNCTION_INFO_V1(pg_agents_mcp_call);

#define MCP_CACHE_SIZE 16

typedef struct McpCached
{
	int64		server_id;
	char	   *key;			/* malloc'd: url + '\n' + headers */
	McpClient  *client;
} McpCached;

static McpCached mcp_cache[MCP_CACHE_SIZE];
static int	mcp_cached = 0;
static bool mcp_exit_hook = false;

/*
 * Closes the kept client at slot i (DELETE of its session) and closes the
 * gap in the cache.
 */
static void
McpCloseAt(int i)
{
	McpClientClose(mcp_cache[i].client);
	free(mcp_cache[i].key);
	memmove(&mcp_cache[i], &mcp_cache[i + 1], sizeof(McpCached) * (mcp_cached - i - 1));
	mcp_cached--;
}

/* on_proc_exit callback: closes every kept client, ending their sessions. */
static void
McpOnExit(int code, Datum arg)
{
	while (mcp_cached > 0)
		McpCloseAt(mcp_cached - 1);
}

/*
 * Abort callback of the kept clients: non-zero when a query cancel or
 * backend termination is pending, so that transfers stop promptly.
 */
static int
McpInterrupted(void *arg)
{
	return (QueryCancelPending || ProcDiePending) ? 1 : 0;
}

/*
 * The client of a server, kept across calls while its URL and headers stay
 * the same.  Only malloc'd memory is involved: nothing here can ereport.
 */
static McpClient *
McpClientFor(int64 server_id, const char *url, const char *headers_text, json_t *headers)
{
	size_t		kl = strlen(url) + strlen(headers_text) + 2;
	char	   *key = malloc(kl);
	int			i;
	McpClient  *c;

	if (key == NULL)
		return NULL;
	snprintf(key, kl, "%s\n%s", url, headers_text);
	for (i = 0; i < mcp_cached; i++)
	{
		if (mcp_cache[i].server_id != server_id)
			continue;
		if (strcmp(mcp_cache[i].key, key) == 0)
		{
			free(key);
			c = mcp_cache[i].client;
			McpClientSetTimeout(c, pg_agents_request_timeout);
			McpClientSetAbort(c, McpInterrupted, NULL);
			return c;
		}
		McpCloseAt(i);			/* the configuration changed */
		break;
	}
	if (mcp_cached == MCP_CACHE_SIZE)
		McpCloseAt(0);
	c = McpClientNew(url, headers, pg_agents_request_timeout);
	McpClientSetAbort(c, McpInterrupted, NULL);
	mcp_cache[mcp_cached].server_id = server_id;
	mcp_cache[mcp_cached].key = key;
	mcp_cache[mcp_cached].client = c;
	mcp_cached++;
	return c;
}

/* After a transport failure the session state is unknown: start afresh. */
static void
McpForget(int64 server_id)
{
	int			i;

	for (i = 0; i < mcp_cached; i++)
	{
		if (mcp_cache[i].server_id == server_id)
		{
			McpCloseAt(i);
			return;
		}
	}
}

/* Registers McpOnExit once per backend. */
static void
McpRegisterExit(void)
{
	if (!mcp_exit_hook)
	{
		on_proc_exit(McpOnExit, (Datum) 0);
		mcp_exit_hook = true;
	}
}

/* See mcp_sql.h. */
json_t *
McpJsonbToJansson(Jsonb *jb, bool wipe)
{
	char	   *text = JsonbToCString(NULL, &jb->root, VARSIZE(jb));
	json_t	   *j = json_loads(text, JSON_DECODE_ANY, NULL);

	if (wipe)
		memset(text, 0, strlen(text));
	pfree(text);
	return j;
}

/* See mcp_sql.h. */
Datum
McpJanssonToJsonb(json_t *j, const char *what, bool wipe)
{
	char	   *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
	char	   *p;

	json_decref(j);
	if (s == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not encode %s as JSON", what)));
	p = pstrdup(s);
	if (wipe)
		memset(s, 0, strlen(s));
	free(s);
	return DirectFunctionCall1(jsonb_in, CStringGetDatum(p));
}

/* An MCP answer (see McpJanssonToJsonb). */
#define JanssonToJsonb(j) McpJanssonToJsonb((j), "an MCP answer", false)

/* {"ok": false, "error": error} (a new reference). */
static json_t *
FailureJson(const char *error)
{
	return json_pack("{s:b, s:s}", "ok", 0, "error", error);
}

/* A failed exchange's answer: the client's error; the kept client is dropped. */
static json_t *
FailureAndForget(McpClient *c, int64 server_id)
{
	json_t	   *out = FailureJson(McpClientError(c));

	McpForget(server_id);
	return out;
}

/*
 * Takes ownership of out, the answer of an exchange that ended with rc: as
 * jsonb, or, when the caller was interrupted, after CHECK_FOR_INTERRUPTS
 * (which raises), {"ok": false, "error": "interrupted"}.
 */
static Datum
AnswerJsonb(json_t *out, int rc)
{
	if (rc == MCP_ABORTED)
	{
		json_decref(out);
		CHECK_FOR_INTERRUPTS();
		out = FailureJson("interrupted");
	}
	return JanssonToJsonb(out);
}

/*
 * The kept client of server_id for url and the jsonb headers hjb, their
 * ${secret:NAME} values resolved now (rotation: a new session), keyed by the
 * headers' text and the configuration generation.  NULL with *error set to a
 * sentence when a secret cannot be resolved or memory ran out.
 */
static McpClient *
ClientForArgs(int64 server_id, const char *url, Jsonb *hjb, const char **error)
{
	char	   *htext = JsonbToCString(NULL, &hjb->root, VARSIZE(hjb));
	json_t	   *headers;
	char	   *serr = NULL;
	McpClient  *c;

	McpRegisterExit();
	headers = json_loads(htext, 0, NULL);
	if (!SecretsExpandJsonHeaders(headers, McpServerWorkspace(server_id), &serr))
	{
		json_decref(headers);
		*error = serr;
		return NULL;
	}
	htext = psprintf("%s\n%llu", htext, (unsigned long long) ConfigGeneration());
	c = McpClientFor(server_id, url, htext, headers);
	if (headers)
		json_decref(headers);
	if (c == NULL)
		*error = "out of memory";
	return c;
}

/*
 * agent._mcp_url_problem(url) RETURNS text: why url is not acceptable (see
 * McpUrlProblem), or NULL when it is.
 */
Datum
pg_agents_mcp_url_problem(PG_FUNCTION_ARGS)
{
	char	   *url = text_to_cstring(PG_GETARG_TEXT_PP(0));
	const char *problem = McpUrlProblem(url);

	if (problem == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(problem));
}

/*
 * agent._mcp_list(server_id, url, headers) RETURNS jsonb: tools/list with
 * the server's kept client, as {"ok": true, "protocolVersion",
 * "serverInfo", "tools", "ttlMs"?} or {"ok": false, "error"}.  A remote
 * failure never raises (the kept client is dropped); an interrupted call
 * raises the pending cancel.
 */
Datum
pg_agents_mcp_list(PG_FUNCTION_ARGS)
{
	int64		server_id = PG_GETARG_INT64(0);
	char	   *url = text_to_cstring(PG_GETARG_TEXT_PP(1));
	Jsonb	   *hjb = PG_GETARG_JSONB_P(2);
	json_t	   *out;
	json_t	   *tools = NULL;
	McpClient  *c;
	int			rc;
	const char *problem = McpUrlProblem(url);

	if (problem)
		return JanssonToJsonb(FailureJson(problem));
	c = ClientForArgs(server_id, url, hjb, &problem);
	if (c == NULL)
		return JanssonToJsonb(FailureJson(problem));

	rc = McpListTools(c, &tools);
	if (rc == MCP_OK)
	{
		json_t	   *info = McpClientServerInfo(c);

		out = json_pack("{s:b, s:s, s:O, s:o}", "ok", 1,
						"protocolVersion", McpClientProtocolVersion(c),
						"serverInfo", info ? info : json_null(),
						"tools", tools);
		if (McpClientToolsTtlMs(c) >= 0)
			json_object_set_new(out, "ttlMs", json_integer(McpClientToolsTtlMs(c)));
	}
	else
		out = FailureAndForget(c, server_id);
	return AnswerJsonb(out, rc);
}

/*
 * agent._mcp_call(server_id, url, headers, tool, arguments) RETURNS jsonb:
 * tools/call with the server's kept client, as {"ok": true, "result"},
 * {"ok": false, "error", "rpc_error"} for a JSON-RPC error answer, or
 * {"ok": false, "error"} (the kept client then dropped).  Arguments that
 * are not a JSON object are refused; a remote failure never raises, an
 * interrupted call raises the pending cancel.
 */
Datum
pg_agents_mcp_call(PG_FUNCTION_ARGS)
{
	int64		server_id = PG_GETARG_INT64(0);
	char	   *url = text_to_cstring(PG_GETARG_TEXT_PP(1));
	Jsonb	   *hjb = PG_GETARG_JSONB_P(2);
	char	   *tool = text_to_cstring(PG_GETARG_TEXT_PP(3));
	Jsonb	   *ajb = PG_GETARG_JSONB_P(4);
	json_t	   *args;
	json_t	   *result = NULL;
	json_t	   *out;
	McpClient  *c;
	int			rc;
	const char *problem = McpUrlProblem(url);

	if (problem)
		return JanssonToJsonb(FailureJson(problem));
	args = McpJsonbToJansson(ajb, false);
	if (!json_is_object(args))
	{
		if (args)
			json_decref(args);
		return JanssonToJsonb(FailureJson("the arguments must be a JSON object"));
	}
	c = ClientForArgs(server_id, url, hjb, &problem);
	if (c == NULL)
	{
		json_decref(args);
		return JanssonToJsonb(FailureJson(problem));
	}

	rc = McpCallTool(c, tool, args, &result);
	json_decref(args);
	if (rc == MCP_OK)
		out = json_pack("{s:b, s:o}", "ok", 1, "result", result);
	else if (rc == MCP_RPC_ERROR)
		out = json_pack("{s:b, s:s, s:o}", "ok", 0, "error", McpClientError(c),
						"rpc_error", result ? result : mcp_json_object());
	else
	{
		if (result)
			json_decref(result);
		out = FailureAndForget(c, server_id);
	}
	return AnswerJsonb(out, rc);
}
