/*-------------------------------------------------------------------------
 *
 * mcp_tools.c
 *		MCP tools in the worker: definitions offered to the model and the
 *		execution of an mcp__<server>__<tool> call.
 *
 * Tools come from agent.mcp_agent_tools (the agent's workspace servers and
 * its owner's personal ones, filtered by its scope; written out here as one
 * kept-plan query), read at every claim, so
 * that a server added or refreshed while the worker runs is used by the next
 * run without a restart.  A call goes through the same approval gate as the
 * built-in tools (the tool's needs_approval flag, scope.needs_approval, the
 * agent's approval_mode: "writes" pauses any tool the server does not mark
 * readOnlyHint), then the call, where a remote failure is a failed tool
 * result the model reads, never an error of the run.
 *
 * The tool transaction only prepares the call (McpPrepareFast, else
 * agent._mcp_worker_prepare);
 * mcp_tools_async.c sends it and records the answer.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "util/jansson_prelude.h"
#include "tools/tool_family.h"
#include "tools/tool_gate.h"
#include "util/spi_util.h"

#include <string.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/jsonb.h"

#include "llm/secrets.h"
#include "mcp_tools_int.h"
#include "tools/tools.h"
#include "util/config_gen.h"

/*
 * The MCP tools offered to a run at its claim (server, tool, approval flags,
 * schema), so that its calls need not list them again: builtin tools use
 * the scope as claimed too.  A ring of the last runs claimed (bounded
 * memory: a few MB with large tool lists); a run not found (evicted, with
 * more runs in flight than that) is looked up again (McpToolExecute).
 * malloc'd.
 */
#define TOOL_CACHE	256
static struct
{
	int64		run_id;
	json_t	   *tools;			/* exposed name -> {server_id, tool, needs, read_only, schema} */
}			tool_cache[TOOL_CACHE];
static int	tool_cache_next = 0;

/*
 * Stores the tools known to a run (exposed name -> server_id, tool, needs,
 * read_only, schema), taking over the reference to known: replaces the run's
 * entry, else evicts the oldest one in the ring.
 */
static void
CachePut(int64 run_id, json_t *known)
{
	int			i;

	for (i = 0; i < TOOL_CACHE; i++)
		if (tool_cache[i].tools && tool_cache[i].run_id == run_id)
			break;
	if (i == TOOL_CACHE)
	{
		i = tool_cache_next;
		tool_cache_next = (tool_cache_next + 1) % TOOL_CACHE;
	}
	if (tool_cache[i].tools)
		json_decref(tool_cache[i].tools);
	tool_cache[i].run_id = run_id;
	tool_cache[i].tools = known;
}

/*
 * The cached definition of the run's tool name (a borrowed reference), or
 * NULL when the run is not cached (evicted) or has no such tool.
 */
static json_t *
CacheGet(int64 run_id, const char *name)
{
	for (int i = 0; i < TOOL_CACHE; i++)
		if (tool_cache[i].tools && tool_cache[i].run_id == run_id)
			return json_object_get(tool_cache[i].tools, name);
	return NULL;
}

/*
 * SpiUtilExecPlan with a generic plan, made once: the listing's and the
 * preparation's plans cost more to make than to run, and their parameters
 * are keys.  With Citus (which plans no generic plan of a join of
 * distributed tables) as SpiUtilExecPlan does, a plan made at each call.
 */
static int
ExecGenericPlan(SPIPlanPtr *cache, const char *sql, int nargs, Oid *types, Datum *vals,
				bool read_only, long count)
{
	static int	citus = -1;

	if (citus < 0)
		citus = SpiUtilFunctionExists("pg_catalog.citus_version()") ? 1 : 0;
	if (*cache == NULL && citus == 0)
	{
		SPIPlanPtr	plan = SPI_prepare_cursor(sql, nargs, types, CURSOR_OPT_GENERIC_PLAN);

		if (plan == NULL)
			elog(ERROR, "pg_agents: could not prepare \"%s\": %s", sql,
				 SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "pg_agents: could not keep the plan of \"%s\"", sql);
		*cache = plan;
	}
	return SpiUtilExecPlan(cache, sql, nargs, types, vals, NULL, read_only, count);
}

/*
 * agent._mcp_like_patterns(a.scope->'key') written out, for the listing: a
 * call of that function (SET search_path: never inlined) costs more than the
 * rest of the query.
 */
#define LIKE_PATTERNS(key) \
	"(SELECT coalesce(pg_catalog.array_agg(pg_catalog.replace(pg_catalog.replace(" \
	"pg_catalog.replace(pg_catalog.replace(pat, '\\', '\\\\'), '%', '\\%'), '_', '\\_'), '*', '%')), '{}') " \
	"FROM pg_catalog.jsonb_array_elements_text(CASE WHEN pg_catalog.jsonb_typeof(a.scope->'" key "') = 'array' " \
	"THEN a.scope->'" key "' ELSE '[]' END) AS pat)"

/*
 * Appends the run's MCP tools ({name, description, parameters}, the
 * description prefixed with the server's name) to tools: those of the
 * workspace's servers and of the personal ones of the run's user
 * (agent._mcp_run_user: the requester of a manual run, the owner of an
 * autonomous one), never another user's.  Caches them for
 * the run's calls (CachePut).  A workspace with no enabled MCP server costs a
 * single kept-plan query.  Needs SPI; ereports ERROR when a query fails.
 */
static void
McpAppendToolDefinitions(json_t *tools, int64 agent_id, int64 run_id)
{
	Oid			types[2] = {INT8OID, INT8OID};
	Datum		vals[2];
	int			rc;
	json_t	   *known;
	static SPIPlanPtr list_plan = NULL;

	vals[0] = Int64GetDatum(agent_id);
	vals[1] = Int64GetDatum(run_id);

	/*
	 * One kept-plan query, agent.mcp_agent_tools(agent, agent._mcp_run_user(run))
	 * written out (those are plpgsql, planned again at every call): the run's
	 * workspace (Citus routes by it, the agent's own), the run's user (the
	 * requester of a manual run, the owner of an autonomous one), the agent's
	 * patterns, then its servers' tools.  A workspace with no enabled MCP
	 * server finds no server row: nothing more to do.
	 */
	rc = ExecGenericPlan(&list_plan,
						 "SELECT t.exposed_name, s.name, coalesce(t.description, ''), "
						 "t.input_schema::pg_catalog.text, s.id, t.name, "
						 "t.needs_approval OR t.exposed_name LIKE ANY (p.ap), "
						 "coalesce((t.annotations->>'readOnlyHint')::boolean, false) "
						 "FROM (SELECT r.workspace_id AS ws, "
						 "CASE WHEN r.regime = 'manual' THEN r.requested_by ELSE a.owner_id END AS usr, "
						 LIKE_PATTERNS("mcp_servers") " AS sp, "
						 LIKE_PATTERNS("mcp_tools") " AS tp, "
						 LIKE_PATTERNS("needs_approval") " AS ap "
						 "FROM agent.runs r JOIN agent.agents a ON a.workspace_id = r.workspace_id AND a.id = r.agent_id "
						 "WHERE r.id = $2 AND a.id = $1 AND a.deleted_at IS NULL "
						 "OFFSET 0) p "	/* (not pulled up: the patterns once, not a row) */
						 "JOIN agent.mcp_servers s ON s.workspace_id = p.ws "
						 "JOIN agent.mcp_tools t ON t.workspace_id = s.workspace_id AND t.server_id = s.id "
						 "WHERE s.enabled "
						 "AND (s.scope = 'workspace' OR (s.scope = 'user' AND s.owner_id = p.usr)) "
						 "AND (s.name LIKE ANY (p.sp) OR t.exposed_name LIKE ANY (p.tp)) "
						 "ORDER BY t.exposed_name",
						 2, types, vals, true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not list the MCP tools of agent " INT64_FORMAT, agent_id);
	known = json_pack("{}");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	td = SPI_tuptable->tupdesc;
		char	   *name = SPI_getvalue(tup, td, 1);
		char	   *server = SPI_getvalue(tup, td, 2);
		char	   *desc = SPI_getvalue(tup, td, 3);
		char	   *schema_text = SPI_getvalue(tup, td, 4);
		json_t	   *schema = json_loads(schema_text, 0, NULL);
		char	   *full = psprintf("[MCP server %s] %s", server, desc);
		char	   *sid = SPI_getvalue(tup, td, 5);
		char	   *tool = SPI_getvalue(tup, td, 6);
		char	   *needs = SPI_getvalue(tup, td, 7);
		char	   *ro = SPI_getvalue(tup, td, 8);

		json_object_set_new(known, name, json_pack("{s:I, s:s, s:b, s:b, s:s}",
												   "server_id", (json_int_t) strtoll(sid ? sid : "0", NULL, 10),
												   "tool", tool ? tool : "",
												   "needs", needs && needs[0] == 't',
												   "read_only", ro && ro[0] == 't',
												   "schema", schema_text ? schema_text : "{}"));

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
	CachePut(run_id, known);
}

/*
 * The preparation of a call (agent._mcp_worker_prepare's answer:
 * {"prepared", server_id, server, tool, url, headers, protocol_version,
 * arguments, tool_def}) through one kept-plan read of the server's row, in
 * the run's workspace, enabled.  The call is gated again there, as the
 * listing gates it (so that a change since the claim counts): the server is
 * the workspace's or the run's user's own, and the agent (not deleted) still
 * allows the server or the tool; else the refusal
 * ({"ok": false, "denied": true, ...}).  NULL when the function must answer
 * instead: no such server (now disabled, deleted: refused there), or a
 * 2026-07-28 server, where an answered question of the run for this very
 * call is consumed and sent with it.
 */
static json_t *
McpPrepareFast(const ToolRun *tr, const char *name, json_t *input, int64 server_id,
			   const char *tool, const char *schema)
{
	Oid			types[4] = {TEXTOID, INT8OID, TEXTOID, INT8OID};
	Datum		vals[4];
	static SPIPlanPtr plan = NULL;
	HeapTuple	tup;
	TupleDesc	td;
	char	   *server;
	char	   *url;
	char	   *headers;
	char	   *protocol;
	char	   *allowed;
	json_t	   *h;
	json_t	   *sch;
	json_t	   *args;
	json_t	   *prep;

	vals[0] = CStringGetTextDatum(tr->workspace ? tr->workspace : "");
	vals[1] = Int64GetDatum(server_id);
	vals[2] = CStringGetTextDatum(name);
	vals[3] = Int64GetDatum(tr->run_id);
	if (ExecGenericPlan(&plan, "SELECT s.name, s.url, s.headers::pg_catalog.text, s.protocol_version, "
						"coalesce((s.scope = 'workspace' OR (s.scope = 'user' AND s.owner_id = p.usr)) "
						"AND (s.name LIKE ANY (p.sp) OR $3 LIKE ANY (p.tp)), false) "
						"FROM agent.mcp_servers s LEFT JOIN "
						"(SELECT CASE WHEN r.regime = 'manual' THEN r.requested_by ELSE a.owner_id END AS usr, "
						LIKE_PATTERNS("mcp_servers") " AS sp, "
						LIKE_PATTERNS("mcp_tools") " AS tp "
						"FROM agent.runs r JOIN agent.agents a ON a.workspace_id = r.workspace_id AND a.id = r.agent_id "
						"WHERE r.workspace_id = $1 AND r.id = $4 AND a.deleted_at IS NULL OFFSET 0) p ON true "
						"WHERE s.workspace_id = $1 AND s.id = $2 AND s.enabled",
						4, types, vals, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read MCP server " INT64_FORMAT, server_id);
	if (SPI_processed != 1)
		return NULL;
	tup = SPI_tuptable->vals[0];
	td = SPI_tuptable->tupdesc;
	server = SPI_getvalue(tup, td, 1);
	url = SPI_getvalue(tup, td, 2);
	headers = SPI_getvalue(tup, td, 3);
	protocol = SPI_getvalue(tup, td, 4);
	allowed = SPI_getvalue(tup, td, 5);
	if (allowed == NULL || allowed[0] != 't')
	{
		char	   *msg = psprintf("tool \"%s\" is not available to this agent", name);

		prep = json_pack("{s:b, s:b, s:s, s:{s:b, s:[{s:s, s:s}]}}", "ok", 0, "denied", 1, "error", msg,
						 "result", "isError", 1, "content", "type", "text", "text", msg);
		pfree(msg);
		return prep;
	}
	if (protocol && strcmp(protocol, MCP_STATELESS_VERSION) == 0)
		return NULL;
	h = headers ? json_loads(headers, JSON_DECODE_ANY, NULL) : NULL;
	sch = json_loads(schema ? schema : "{}", JSON_DECODE_ANY, NULL);
	args = json_is_object(input) ? json_deep_copy(input) : json_object();
	prep = json_pack("{s:b, s:I, s:s?, s:s, s:s?, s:o, s:s?, s:o, s:{s:s, s:o}}",
					 "prepared", 1, "server_id", (json_int_t) server_id, "server", server,
					 "tool", tool ? tool : "", "url", url,
					 "headers", h ? h : json_null(), "protocol_version", protocol,
					 "arguments", args,
					 "tool_def", "name", tool ? tool : "", "inputSchema", sch ? sch : json_null());
	if (prep == NULL)
		elog(ERROR, "could not prepare the call of MCP tool \"%s\"", name);
	return prep;
}

/*
 * Executes one mcp__* tool call for the run, inside the tool transaction:
 * the look-up, the approval gate and the preparation
 * (agent._mcp_worker_prepare).  TOOL_ASYNC: the call is prepared
 * (McpTakePrepared), to be sent once the transaction committed.
 */
static ToolOutcome
McpToolExecute(const ToolRun *tr, const char *name, json_t *input, json_t **result,
			   TimestampTz started)
{
	bool		needs;
	bool		read_only;
	int64		server_id;
	char	   *tool;
	char	   *schema;
	json_t	   *prep;
	McpCall    *mc;
	ToolOutcome oc;
	json_t	   *cached;
	static SPIPlanPtr prep_plan = NULL;

	*result = NULL;
	cached = CacheGet(tr->run_id, name);
	if (cached == NULL)
	{
		/* evicted from the ring (or no such tool): the run's tools listed again */
		json_t	   *scratch = json_array();

		McpAppendToolDefinitions(scratch, tr->agent_id, tr->run_id);
		json_decref(scratch);
		cached = CacheGet(tr->run_id, name);
	}
	if (cached == NULL)
	{
		*result = json_pack("{s:s}", "error", psprintf("unknown tool \"%s\"", name));
		ToolGateRecordStep(tr->run_id, tr->workspace, "error", name, input, *result, "error", 0, started);
		return TOOL_DONE;
	}
	/* as offered at the claim (the server's row is read again by the preparation) */
	needs = json_is_true(json_object_get(cached, "needs"));
	read_only = json_is_true(json_object_get(cached, "read_only"));
	server_id = (int64) json_integer_value(json_object_get(cached, "server_id"));
	tool = pstrdup(json_string_value(json_object_get(cached, "tool")));
	schema = pstrdup(json_string_value(json_object_get(cached, "schema")));
	if (needs || ToolGateNeedsApproval(tr, name, !read_only))
	{
		ToolOutcome gate = ToolGateApproval(tr, name, input, result, started);

		if (gate != TOOL_DONE || *result != NULL)
			return gate;
	}

	prep = McpPrepareFast(tr, name, input, server_id, tool, schema);
	if (prep == NULL)
	{
		/*
		 * The server is gone or disabled (refused below), or speaks
		 * 2026-07-28 (an answered question of the run may go with the call):
		 * agent._mcp_worker_prepare.
		 */
		Oid			ptypes[6] = {INT8OID, TEXTOID, JSONBOID, INT8OID, TEXTOID, JSONBOID};
		Datum		pvals[6];

		pvals[0] = Int64GetDatum(tr->run_id);
		pvals[1] = CStringGetTextDatum(name);
		pvals[2] = McpJsonbArg(input);
		pvals[3] = Int64GetDatum(server_id);
		pvals[4] = CStringGetTextDatum(tool ? tool : "");
		pvals[5] = DirectFunctionCall1(jsonb_in, CStringGetDatum(schema ? schema : "{}"));
		if (SpiUtilExecPlan(&prep_plan, "SELECT agent._mcp_worker_prepare($1, $2, $3, $4, $5, $6)::pg_catalog.text",
							 6, ptypes, pvals, NULL, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "agent._mcp_worker_prepare returned no row");
		prep = McpJsonFromText(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
		if (prep == NULL)
			elog(ERROR, "agent._mcp_worker_prepare returned invalid JSON");
	}
	if (!json_is_true(json_object_get(prep, "prepared")))
	{
		/* refused (the tool left the agent's reach meanwhile) */
		oc = McpRecordCall(tr, name, input, prep, result, started);
		json_decref(prep);
		return oc;
	}
	if (McpPreparedCall)
	{
		McpCallFree(McpPreparedCall);
		McpPreparedCall = NULL;
	}
	mc = calloc(1, sizeof(McpCall));
	if (mc == NULL)
		elog(ERROR, "out of memory");
	mc->server_id = (int64) json_integer_value(json_object_get(prep, "server_id"));
	mc->exposed = McpXdup(name);
	mc->server = McpXdup(json_string_value(json_object_get(prep, "server")));
	mc->tool = McpXdup(json_string_value(json_object_get(prep, "tool")));
	mc->url = McpXdup(json_string_value(json_object_get(prep, "url")));
	if (json_is_string(json_object_get(prep, "protocol_version")))
		mc->protocol = McpXdup(json_string_value(json_object_get(prep, "protocol_version")));
	mc->headers = json_deep_copy(json_object_get(prep, "headers"));
	mc->arguments = json_incref(json_object_get(prep, "arguments"));
	mc->tool_def = json_incref(json_object_get(prep, "tool_def"));
	if (json_is_object(json_object_get(prep, "input_responses")))
		mc->responses = json_incref(json_object_get(prep, "input_responses"));
	if (json_is_string(json_object_get(prep, "request_state")))
		mc->request_state = McpXdup(json_string_value(json_object_get(prep, "request_state")));
	mc->input = json_incref(input);
	mc->started = started;
	{
		/* the headers as configured (references, not secrets) and the generation of the secrets */
		char	   *h = json_dumps(mc->headers, JSON_COMPACT | JSON_SORT_KEYS);
		size_t		kl = strlen(mc->url) + (h ? strlen(h) : 0) + (mc->protocol ? strlen(mc->protocol) : 0) + 32;

		mc->key = malloc(kl);
		if (mc->key == NULL)
			elog(ERROR, "out of memory");
		snprintf(mc->key, kl, "%s\n%s\n%s\n%llu", mc->url, h ? h : "", mc->protocol ? mc->protocol : "",
				 (unsigned long long) ConfigGeneration());
		if (h)
		{
			memset(h, 0, strlen(h));
			free(h);
		}
	}
	{
		/* providers: ${secret:NAME} header values, resolved in this transaction */
		char	   *serr = NULL;

		if (!SecretsExpandJsonHeaders(mc->headers, tr->workspace, &serr))
		{
			json_t	   *call = json_pack("{s:b, s:s, s:s, s:s, s:{s:b, s:[{s:s, s:s}]}}",
										 "ok", 0, "server", mc->server, "tool", mc->tool,
										 "error", serr ? serr : "a secret of the server's headers cannot be read",
										 "result", "isError", 1, "content", "type", "text",
										 "text", serr ? serr : "a secret of the server's headers cannot be read");

			McpCallFree(mc);
			json_decref(prep);
			oc = McpRecordCall(tr, name, input, call, result, started);
			json_decref(call);
			return oc;
		}
	}
	json_decref(prep);
	McpPreparedCall = mc;
	return TOOL_ASYNC;
}

/* ---------------------------------------------------------------------
 * The MCP tool family of the registry (tool_family.h): mcp__<server>__<tool>
 * ---------------------------------------------------------------------
 */

/* the run's MCP tools (ToolFamilyDefinitions) */
static void
McpFamilyDefinitions(json_t *tools, int64 agent_id, int64 run_id, bool can_delegate)
{
	McpAppendToolDefinitions(tools, agent_id, run_id);
}

/* one mcp__* call (ToolFamilyExecute); an MCP tool never delegates */
static ToolOutcome
McpFamilyExecute(const ToolRun *tr, const char *name, json_t *input, json_t **result,
				 int64 *child_run_id, TimestampTz started)
{
	return McpToolExecute(tr, name, input, result, started);
}

const ToolFamily McpToolFamily = {
	.family = "mcp",
	.prefix = "mcp__",
	.handles = NULL,
	.base_definitions = NULL,
	.run_definitions = McpFamilyDefinitions,
	.execute = McpFamilyExecute,
	.async = &McpAsyncRoutine,
};
