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
 * readOnlyHint), then the call, where a remote failure is a failed tool
 * result the model reads, never an error of the run.
 *
 * The call is asynchronous (docs/mcp.md, "How the worker calls MCP
 * servers"): the tool transaction only prepares it
 * (agent._mcp_worker_prepare), the executor sends it through the worker's
 * curl multi handle once that transaction committed, with no transaction
 * open, and records the answer in a short transaction of its own
 * (agent._mcp_worker_finish, McpCallRecord), with the same step as a
 * synchronous call.  Each request is bounded by pg_agents.request_timeout;
 * a slow or silent server delays only the runs waiting on it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "jansson_prelude.h"
#include "spi_util.h"
#include "tool_family.h"
#include "tool_gate.h"

#include <string.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "tcop/tcopprot.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "config_gen.h"
#include "guc.h"
#include "http.h"
#include "mcp.h"
#include "mcp_tools.h"
#include "ops.h"
#include "secrets.h"
#include "tools.h"

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
	static SPIPlanPtr any_plan = NULL;
	static SPIPlanPtr list_plan = NULL;

	vals[0] = Int64GetDatum(agent_id);
	vals[1] = Int64GetDatum(run_id);

	/*
	 * Most agents have no MCP server enabled in their workspace: a cheap
	 * kept-plan look first, then the listing (agent.mcp_agent_tools is a
	 * SECURITY DEFINER SQL function, planned again at every call).
	 */
	rc = SpiUtilExecPlan(&any_plan,
						  "SELECT EXISTS (SELECT 1 FROM agent.mcp_servers s "
						  "WHERE s.workspace_id = (SELECT a.workspace_id FROM agent.agents a WHERE a.id = $1) "
						  "AND s.enabled)",	/* the agent's workspace first: no join (Citus) */
						  1, types, vals, NULL, true, 1);	/* (agent only) */
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not look for the MCP servers of agent " INT64_FORMAT, agent_id);
	if (strcmp(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1), "t") != 0)
	{
		CachePut(run_id, json_pack("{}"));
		return;
	}
	rc = SpiUtilExecPlan(&list_plan, "SELECT m.exposed_name, m.server, coalesce(m.description, ''), m.input_schema::pg_catalog.text, "
						  "m.server_id, m.tool, m.needs_approval, m.read_only "
						  "FROM agent.mcp_agent_tools($1, agent._mcp_run_user($2)) m ORDER BY m.exposed_name",
						  2, types, vals, NULL, true, 0);
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

/* ---------------------------------------------------------------------
 * Asynchronous calls
 * ---------------------------------------------------------------------
 */

/*
 * The worker's clients, one per server and configuration (URL, headers,
 * protocol), kept across calls so that a session (2025-11-25 and older) is
 * initialized once and its Mcp-Session-Id reused by every call, however many
 * are in flight.  A client whose configuration changed (a renewed OAuth
 * token) is closed once no call uses it any more, outside any transaction
 * (McpWorkerHousekeeping).  malloc'd: nothing here can ereport.
 */
typedef struct McpEntry
{
	struct McpEntry *next;
	int64		server_id;
	char	   *key;
	McpClient  *client;
	int			refs;
	bool		stale;
	bool		broken;			/* stale after a failure: closed without DELETE */
	struct McpCall *initializing;	/* the call initializing its session */
	char	   *init_error;		/* why the last initialization failed */
} McpEntry;

static McpEntry *entries = NULL;
static int	transfers = 0;		/* MCP transfers in the multi handle */
static bool exit_hook = false;

typedef struct McpCall
{
	ToolCall	call;			/* the head the dispatcher reads (tool_family.h) */
	/* prepared in the tool transaction */
	int64		server_id;
	char	   *exposed;
	char	   *server;
	char	   *tool;
	char	   *url;
	char	   *protocol;
	char	   *key;
	json_t	   *headers;		/* secret: never printed */
	json_t	   *input;			/* the model's input, for the step */
	json_t	   *arguments;
	json_t	   *tool_def;
	json_t	   *responses;
	char	   *request_state;
	TimestampTz started;
	/* the transfer, with no transaction open */
	McpEntry   *entry;
	McpAsync   *async;
	bool		initializing;	/* async is the session's initialize */
	char	   *session;		/* the session the call went out on */
	HttpRequest *req;
	int			session_retries;
	TimestampTz next_at;
	/* what came back: {"ok", "result"|"error", ...} */
	json_t	   *answer;
	bool		list_changed;
	/* a question the server asked in the stream, waiting for people */
	json_t	   *elicit;			/* its elicitation/create request */
	int			elicit_state;	/* ELICIT_* */
	int64		elicit_id;		/* agent.mcp_elicitations.id */
	long		elicit_since;	/* mcp_now_ms() when it came */
	TimestampTz elicit_until;	/* answered "cancel" then */
	TimestampTz poll_at;
} McpCall;

#define ELICIT_NONE		0
#define ELICIT_NEW		1		/* to be stored for people */
#define ELICIT_WAITING	2		/* stored: the answer is looked for */
#define ELICIT_POLL_MS	500

static McpCall *prepared = NULL;

/*
 * strdup() for the malloc'd state of this file: NULL becomes "", and out of
 * memory is FATAL.
 */
static char *
xdup(const char *s)
{
	char	   *r = strdup(s ? s : "");

	if (r == NULL)
		elog(FATAL, "out of memory");
	return r;
}

/*
 * Unlinks a client entry and closes its client (with the session's DELETE,
 * unless the entry is broken), then frees it.  The caller makes sure no call
 * refers to it.
 */
static void
EntryClose(McpEntry *e)
{
	McpEntry  **pp;

	for (pp = &entries; *pp; pp = &(*pp)->next)
		if (*pp == e)
		{
			*pp = e->next;
			break;
		}
	/*
	 * The DELETE of the session (synchronous, at most 2 s) only when the
	 * server was answering: one that failed may not answer it either.
	 */
	if (e->broken)
		mcp_client_forget_session(e->client);
	mcp_client_close(e->client);
	free(e->key);
	free(e->init_error);
	free(e);
}

/* on_proc_exit callback: closes every client left, ending their sessions. */
static void
McpWorkerOnExit(int code, Datum arg)
{
	while (entries)
		EntryClose(entries);
}

/* closes the clients no call uses any more; outside transactions */
static void
McpWorkerHousekeeping(void)
{
	McpEntry   *e = entries;

	while (e)
	{
		McpEntry   *next = e->next;

		if (e->stale && e->refs == 0)
			EntryClose(e);
		e = next;
	}
}

/*
 * The client entry for a call's server and configuration key, with a
 * reference taken (refs++).  Entries of the same server with another key are
 * marked stale; a new entry gets a new client, set up for the call's protocol
 * (a stateless one defers elicitations to people, an older one holds them up
 * to pg_agents.mcp_elicitation_wait).  Registers the exit hook on first use.
 */
static McpEntry *
EntryFor(McpCall *mc)
{
	McpEntry   *e;

	for (e = entries; e; e = e->next)
	{
		if (e->server_id != mc->server_id || e->stale)
			continue;
		if (strcmp(e->key, mc->key) == 0)
		{
			e->refs++;
			return e;
		}
		e->stale = true;		/* the configuration changed */
	}
	if (!exit_hook)
	{
		on_proc_exit(McpWorkerOnExit, (Datum) 0);
		exit_hook = true;
	}
	e = calloc(1, sizeof(McpEntry));
	if (e == NULL)
		elog(FATAL, "out of memory");
	e->server_id = mc->server_id;
	e->key = xdup(mc->key);
	e->client = mcp_client_new(mc->url, mc->headers, pg_agents_request_timeout);
	if (mc->protocol && strcmp(mc->protocol, MCP_STATELESS_VERSION) == 0)
	{
		mcp_client_set_protocol(e->client, MCP_STATELESS_VERSION);
		/* input_required comes back to be answered by people */
		mcp_client_defer_elicitation(e->client);
	}
	else
	{
		mcp_client_set_protocol(e->client, mc->protocol);	/* NULL: discover */
		/* a 2025-11-25 server's question in the stream waits for people */
		if (pg_agents_mcp_elicitation_wait > 0)
			mcp_client_hold_elicitation(e->client, pg_agents_mcp_elicitation_wait * 1000L);
	}
	e->refs = 1;
	e->next = entries;
	entries = e;
	return e;
}

/*
 * Sets the call's answer, taking over the reference and dropping the old one.
 */
static void
SetAnswer(McpCall *mc, json_t *answer)
{
	if (mc->answer)
		json_decref(mc->answer);
	mc->answer = answer;
}

/*
 * A failed answer {"ok": false, "error": ...}, with a generic message for an
 * empty error.
 */
static json_t *
Failure(const char *error)
{
	return json_pack("{s:b, s:s}", "ok", 0, "error", error && error[0] ? error : "the MCP call failed");
}

/*
 * Parses a text of any JSON value (new reference); NULL for NULL or invalid
 * text.
 */
static json_t *
JsonFromText(const char *text)
{
	return text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;
}

/*
 * Frees a call: removes its transfer from the multi handle, frees its async
 * state, releases its client entry (and its claim on the session's
 * initialization) and its JSON.  NULL is accepted.
 */
static void
McpCallFree(McpCall *mc)
{
	if (mc == NULL)
		return;
	if (mc->req)
	{
		HttpFree(mc->req);		/* removed from the multi handle */
		transfers--;
	}
	mcp_async_free(mc->async);
	if (mc->entry)
	{
		mc->entry->refs--;
		if (mc->entry->initializing == mc)
			mc->entry->initializing = NULL;
	}
	free(mc->session);
	free(mc->exposed);
	free(mc->server);
	free(mc->tool);
	free(mc->url);
	free(mc->protocol);
	free(mc->key);
	free(mc->request_state);
	if (mc->headers)
		json_decref(mc->headers);
	if (mc->input)
		json_decref(mc->input);
	if (mc->arguments)
		json_decref(mc->arguments);
	if (mc->tool_def)
		json_decref(mc->tool_def);
	if (mc->responses)
		json_decref(mc->responses);
	if (mc->answer)
		json_decref(mc->answer);
	if (mc->elicit)
		json_decref(mc->elicit);
	free(mc);
}

/*
 * The call that the last McpToolExecute() left prepared (TOOL_ASYNC), now
 * owned by the caller, or NULL; clears it.
 */
static McpCall *
McpTakePrepared(void)
{
	McpCall    *mc = prepared;

	prepared = NULL;
	return mc;
}

/* another call is initializing the session this one is to use */
static bool
WaitsForSession(McpCall *mc)
{
	return mc->entry && mc->entry->initializing && mc->entry->initializing != mc;
}

/*
 * Not in flight, no answer yet, and due (a resumed stream waits its retry
 * delay, a call waits for the session another one is initializing).
 */
static bool
McpCallDue(McpCall *mc, TimestampTz now)
{
	return mc->req == NULL && mc->answer == NULL && mc->next_at <= now && !WaitsForSession(mc);
}

/* Whether the call has a transfer in the multi handle. */
static bool
McpCallInFlight(McpCall *mc)
{
	return mc->req != NULL;
}

/*
 * Whether the call has its answer (success or failure), ready for
 * McpCallRecord().
 */
static bool
McpCallAnswered(McpCall *mc)
{
	return mc->answer != NULL;
}

/*
 * When the call is next due: its own retry time, or one second from now while
 * it waits for another call to initialize the session.
 */
static TimestampTz
McpCallNextAt(McpCall *mc)
{
	/* (the initializing call's answer wakes the loop) */
	if (WaitsForSession(mc))
		return TimestampTzPlusMilliseconds(GetCurrentTimestamp(), 1000);
	return mc->next_at;
}

/* The number of MCP transfers in the worker's multi handle. */
int
McpTransfersInFlight(void)
{
	return transfers;
}

/*
 * Starts (or resumes) the request, with no transaction open.  A session
 * server's client without a session is initialized first, through the
 * multi handle too (initialize, then notifications/initialized), by one
 * call while the others wait for it; the tools/call follows.  Only a server
 * whose protocol is not known yet (never refreshed) is discovered
 * synchronously.  When the call cannot start, the answer is a failure at
 * once (McpCallAnswered).
 */
static void
McpCallStart(McpCall *mc)
{
	McpClient  *c;
	int			rc;

	if (mc->async == NULL)
	{
		const char *problem = mcp_url_problem(mc->url);

		if (problem)
		{
			SetAnswer(mc, Failure(problem));
			return;
		}
		if (mc->entry == NULL)
			mc->entry = EntryFor(mc);
		c = mc->entry->client;
		mcp_client_set_timeout(c, pg_agents_request_timeout);
		if (!mcp_client_is_ready(c) && mc->entry->init_error)
		{
			/* the initialization this call waited for failed: so does the call */
			SetAnswer(mc, Failure(mc->entry->init_error));
			return;
		}
		if (!mcp_client_is_ready(c) && mcp_client_wants_session(c))
		{
			mc->async = mcp_async_initialize(c);
			if (mc->async == NULL)
			{
				SetAnswer(mc, Failure(mcp_client_error(c)));
				return;
			}
			mc->initializing = true;
			mc->entry->initializing = mc;
			mc->req = HttpAttach(mcp_async_handle(mc->async), HTTP_MCP, mc);
			transfers++;
			return;
		}
		pgstat_report_activity(STATE_IDLE, NULL);
		rc = mcp_client_ready(c);	/* stateless: at once; unknown protocol: discover */
		if (rc != MCP_OK)
		{
			SetAnswer(mc, Failure(mcp_client_error(c)));
			mc->entry->stale = mc->entry->broken = true;	/* start afresh next time */
			return;
		}
		free(mc->session);
		mc->session = mcp_client_session_id(c) ? xdup(mcp_client_session_id(c)) : NULL;
		mc->async = mcp_async_call(c, mc->tool, mc->arguments, mc->tool_def, mc->responses,
								   mc->request_state);
		if (mc->async == NULL)
		{
			SetAnswer(mc, Failure(mcp_client_error(c)));
			return;
		}
	}
	mc->req = HttpAttach(mcp_async_handle(mc->async), HTTP_MCP, mc);
	transfers++;
	PgAgentsWorkerNoteMcp(true);	/* operations: agent.worker_status (mcp_since) */
}

/* answers to the server's requests in the stream (ping): POSTs of their own */
static void
SendReplies(McpCall *mc)
{
	struct curl_slist *h;
	char	   *body;

	while (mc->async && mcp_async_next_reply(mc->async, &h, &body))
	{
		HttpRequest *r = HttpStart(mc->url, h, body, Min(pg_agents_request_timeout, 5000), NULL);

		r->kind = HTTP_MCP_REPLY;
		transfers++;
	}
}

/*
 * Between passes: answers the server's requests of the streams in flight,
 * takes a question the server asked in the stream for people
 * (McpCallWantsUnit), and ends a call past pg_agents.request_timeout
 * outside a person's wait (its transfer may last longer by
 * pg_agents.mcp_elicitation_wait): then McpCallAnswered.
 */
static void
McpCallPump(McpCall *mc)
{
	if (mc->req == NULL)
		return;
	SendReplies(mc);
	if (mc->elicit == NULL && mc->async && !mc->initializing)
	{
		mc->elicit = mcp_async_take_elicitation(mc->async);
		if (mc->elicit)
		{
			mc->elicit_state = ELICIT_NEW;
			mc->elicit_since = mcp_now_ms();
			return;
		}
		if (mcp_now_ms() > mcp_async_soft_deadline(mc->async))
		{
			char		why[128];

			HttpFree(mc->req);	/* removed from the multi handle */
			mc->req = NULL;
			transfers--;
			snprintf(why, sizeof(why), "tools/call timed out after %d ms", pg_agents_request_timeout);
			SetAnswer(mc, Failure(why));
		}
	}
}

/* a question of the server waits to be stored, or its answer to be looked for */
static bool
McpCallWantsUnit(McpCall *mc, TimestampTz now)
{
	return mc->elicit != NULL &&
		(mc->elicit_state == ELICIT_NEW || (mc->elicit_state == ELICIT_WAITING && mc->poll_at <= now));
}

/* a transfer of ours ended: an answer to a server's request is just freed */
static void
McpReplyDone(HttpRequest *req)
{
	HttpFree(req);
	transfers--;
}

/*
 * The transfer ended (req is mc->req).  Returns true when the call has its
 * answer; false when it goes on (a stream resumed after its retry delay, a
 * lost session initialized again and the call sent once more).
 */
static bool
McpCallCollect(McpCall *mc, HttpRequest *req)
{
	json_t	   *result = NULL;
	McpClient  *c = mc->entry->client;
	int			rc;

	Assert(req == mc->req);
	rc = mcp_async_done(mc->async, (int) req->result, &result);
	HttpFree(req);
	mc->req = NULL;
	transfers--;
	SendReplies(mc);
	if (mcp_async_list_changed(mc->async))
		mc->list_changed = true;
	if (mc->initializing && rc != MCP_AGAIN)
	{
		/* the session's initialization ended: the call (and those waiting) go on */
		mc->initializing = false;
		mc->entry->initializing = NULL;
		mcp_async_free(mc->async);
		mc->async = NULL;
		if (result)
			json_decref(result);
		if (rc == MCP_OK)
		{
			free(mc->entry->init_error);
			mc->entry->init_error = NULL;
			mc->next_at = 0;	/* the call itself, in this pass */
			return false;
		}
		free(mc->entry->init_error);
		mc->entry->init_error = xdup(mcp_client_error(c));
		mc->entry->stale = mc->entry->broken = true;	/* start afresh next time */
		SetAnswer(mc, Failure(mc->entry->init_error));
		return true;
	}
	switch (rc)
	{
		case MCP_OK:
			SetAnswer(mc, json_pack("{s:b, s:O}", "ok", 1, "result", result));
			break;
		case MCP_INPUT_REQUIRED:
			SetAnswer(mc, json_pack("{s:b, s:b, s:O?, s:O?, s:s}", "ok", 0, "input_required", 1,
									"input_requests", json_object_get(result, "inputRequests"),
									"request_state", json_object_get(result, "requestState"),
									"error", mcp_client_error(c)));
			break;
		case MCP_RPC_ERROR:
			SetAnswer(mc, json_pack("{s:b, s:s, s:O}", "ok", 0, "error", mcp_client_error(c),
									"rpc_error", result ? result : json_null()));
			break;
		case MCP_AGAIN:
			mc->next_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), mcp_async_delay_ms(mc->async));
			break;
		case MCP_SESSION_GONE:
			/* the server forgot the session (a restart): a new one, once */
			if (mc->session && mcp_client_session_id(c) &&
				strcmp(mc->session, mcp_client_session_id(c)) == 0)
				mcp_client_forget_session(c);	/* (unless a new one is already there) */
			mcp_async_free(mc->async);
			mc->async = NULL;
			if (mc->session_retries++ == 0)
			{
				mc->next_at = 0;
				break;
			}
			SetAnswer(mc, Failure("tools/call: the server lost the session again right after a new initialization"));
			break;
		default:
			/*
			 * The session stays: one call's failure (a time-out of a slow
			 * tool) says nothing of the others on their own handles; a
			 * server that restarted answers the next call 404, and the
			 * session is initialized again then.
			 */
			SetAnswer(mc, Failure(mcp_client_error(c)));
			break;
	}
	if (result)
		json_decref(result);
	return mc->answer != NULL;
}

/* a call's outcome (agent.mcp_agent_call's shape) to the model's result and the step */
static ToolOutcome
RecordCall(const ToolRun *tr, const char *name, json_t *input, json_t *call, json_t **result,
		   TimestampTz started)
{
	json_t	   *res;
	json_t	   *step;
	char	   *text;
	bool		ok;

	if (json_is_true(json_object_get(call, "paused")))
	{
		/* the server asked a person something: the run waits like on an approval */
		step = json_pack("{s:s, s:O?, s:O?}", "elicitation", "pending",
						 "approval_key", json_object_get(call, "approval_key"),
						 "questions", json_object_get(call, "questions"));
		ToolGateRecordStep(tr->run_id, tr->workspace, "approval", name, input, step, "pending", 0, started);
		json_decref(step);
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
	ToolGateRecordStep(tr->run_id, tr->workspace, "tool", name, input, step, ok ? "ok" : "error", 0, started);
	json_decref(step);
	return TOOL_DONE;
}

/*
 * A jsonb Datum of a JSON value (JSON null for NULL), for an SPI argument;
 * palloc'd in the current memory context.
 */
static Datum
JsonbArg(json_t *j)
{
	char	   *text = json_dumps(j ? j : json_null(), JSON_COMPACT | JSON_ENCODE_ANY);
	char	   *p = pstrdup(text ? text : "null");

	free(text);
	return DirectFunctionCall1(jsonb_in, CStringGetDatum(p));
}

/*
 * Inside the transaction that records it: the answer of a finished call
 * (agent._mcp_worker_finish: the same outcome as agent.mcp_agent_call_input,
 * a pause for people included), its step, and the model's result.
 */
static ToolOutcome
McpCallRecord(const ToolRun *tr, McpCall *mc, json_t **result)
{
	Oid			types[8] = {INT8OID, TEXTOID, JSONBOID, INT8OID, TEXTOID, TEXTOID, JSONBOID, BOOLOID};
	Datum		vals[8];
	static SPIPlanPtr plan = NULL;
	json_t	   *call;
	ToolOutcome oc;

	*result = NULL;
	vals[0] = Int64GetDatum(tr->run_id);
	vals[1] = CStringGetTextDatum(mc->exposed);
	vals[2] = JsonbArg(mc->arguments);
	vals[3] = Int64GetDatum(mc->server_id);
	vals[4] = CStringGetTextDatum(mc->server);
	vals[5] = CStringGetTextDatum(mc->tool);
	vals[6] = JsonbArg(mc->answer);
	vals[7] = BoolGetDatum(mc->list_changed);
	if (SpiUtilExecPlan(&plan, "SELECT agent._mcp_worker_finish($1, $2, $3, $4, $5, $6, $7, $8)::pg_catalog.text",
						 8, types, vals, NULL, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "agent._mcp_worker_finish returned no row");
	call = JsonFromText(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
	if (call == NULL)
		elog(ERROR, "agent._mcp_worker_finish returned invalid JSON");
	oc = RecordCall(tr, mc->exposed, mc->input, call, result, mc->started);
	json_decref(call);
	return oc;
}

/*
 * Inside a short transaction of the slot (its lease renewed): a question the
 * server asked in the stream of the call is stored for people
 * (agent._mcp_worker_elicit: the form in agent.mcp_elicitations, a pending
 * approval, an "approval" step), or its answer looked for
 * (agent._mcp_worker_elicit_poll: a person's answer, a decline when the
 * approval was denied, a cancel once pg_agents.mcp_elicitation_wait or the
 * approval's own expiry passed); an answer goes out on the session at the
 * next pass (McpCallPump), the call's time-out starts again, and the stream
 * goes on to the tool's result.
 */
static void
McpCallElicitStep(const ToolRun *tr, McpCall *mc)
{
	TimestampTz now = GetCurrentTimestamp();
	static SPIPlanPtr new_plan = NULL;
	static SPIPlanPtr poll_plan = NULL;

	if (mc->elicit_state == ELICIT_NEW)
	{
		Oid			types[6] = {INT8OID, TEXTOID, JSONBOID, INT8OID, JSONBOID, INT4OID};
		Datum		vals[6];
		json_t	   *got;
		json_t	   *step;

		vals[0] = Int64GetDatum(tr->run_id);
		vals[1] = CStringGetTextDatum(mc->exposed);
		vals[2] = JsonbArg(mc->arguments);
		vals[3] = Int64GetDatum(mc->server_id);
		vals[4] = JsonbArg(mc->elicit);
		vals[5] = Int32GetDatum(pg_agents_mcp_elicitation_wait);
		if (SpiUtilExecPlan(&new_plan, "SELECT agent._mcp_worker_elicit($1, $2, $3, $4, $5, $6)::pg_catalog.text",
							 6, types, vals, NULL, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "agent._mcp_worker_elicit returned no row");
		got = JsonFromText(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
		if (!json_is_object(got))
			elog(ERROR, "agent._mcp_worker_elicit returned invalid JSON");
		mc->elicit_id = (int64) json_integer_value(json_object_get(got, "id"));
		step = json_pack("{s:s, s:O?, s:O?, s:b}", "elicitation", "pending",
						 "approval_key", json_object_get(got, "approval_key"),
						 "questions", json_object_get(got, "questions"), "stream", 1);
		ToolGateRecordStep(tr->run_id, tr->workspace, "approval", mc->exposed, mc->input, step, "pending", 0, now);
		json_decref(step);
		json_decref(got);
		mc->elicit_state = ELICIT_WAITING;
		mc->elicit_until = TimestampTzPlusMilliseconds(now, pg_agents_mcp_elicitation_wait * 1000L);
		mc->poll_at = TimestampTzPlusMilliseconds(now, ELICIT_POLL_MS);
		return;
	}
	if (mc->elicit_state == ELICIT_WAITING)
	{
		Oid			types[2] = {INT8OID, BOOLOID};
		Datum		vals[2];
		char	   *text;
		json_t	   *answer;

		vals[0] = Int64GetDatum(mc->elicit_id);
		vals[1] = BoolGetDatum(now >= mc->elicit_until);
		if (SpiUtilExecPlan(&poll_plan, "SELECT agent._mcp_worker_elicit_poll($1, $2)::pg_catalog.text",
							 2, types, vals, NULL, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "agent._mcp_worker_elicit_poll returned no row");
		text = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		mc->poll_at = TimestampTzPlusMilliseconds(now, ELICIT_POLL_MS);
		if (text == NULL)
			return;				/* not yet */
		answer = JsonFromText(text);
		if (mc->async)
		{
			mcp_async_answer_elicitation(mc->async, mc->elicit, answer);
			/* request_timeout again from now: the wait for a person is not the server's */
			mcp_async_extend(mc->async, mcp_now_ms() - mc->elicit_since);
		}
		if (answer)
			json_decref(answer);
		json_decref(mc->elicit);
		mc->elicit = NULL;
		mc->elicit_state = ELICIT_NONE;
	}
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
	Oid			types[4] = {INT8OID, TEXTOID, JSONBOID, INT8OID};
	Datum		vals[4];
	int			rc;
	bool		isnull;
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
	vals[0] = Int64GetDatum(tr->agent_id);
	vals[1] = CStringGetTextDatum(name);
	vals[2] = (Datum) 0;
	vals[3] = Int64GetDatum(tr->run_id);
	cached = CacheGet(tr->run_id, name);
	if (cached)
	{
		/* as offered at the claim (the server's row is read again by the preparation) */
		needs = json_is_true(json_object_get(cached, "needs"));
		read_only = json_is_true(json_object_get(cached, "read_only"));
		server_id = (int64) json_integer_value(json_object_get(cached, "server_id"));
		tool = pstrdup(json_string_value(json_object_get(cached, "tool")));
		schema = pstrdup(json_string_value(json_object_get(cached, "schema")));
	}
	else
	{
		rc = SPI_execute_with_args("SELECT m.needs_approval, m.read_only, m.server_id, m.tool, "
								   "m.input_schema::pg_catalog.text "
								   "FROM agent.mcp_agent_tools($1, agent._mcp_run_user($4)) m "
								   "WHERE m.exposed_name = $2", 4, types, vals, "  n ", true, 1);
		if (rc != SPI_OK_SELECT)
			elog(ERROR, "could not look up MCP tool \"%s\"", name);
		if (SPI_processed != 1)
		{
			*result = json_pack("{s:s}", "error", psprintf("unknown tool \"%s\"", name));
			ToolGateRecordStep(tr->run_id, tr->workspace, "error", name, input, *result, "error", 0, started);
			return TOOL_DONE;
		}
		needs = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		read_only = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
		server_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull));
		tool = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 4);
		schema = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 5);
	}
	if (needs || ToolGateNeedsApproval(tr, name, !read_only))
	{
		ToolOutcome gate = ToolGateApproval(tr, name, input, result, started);

		if (gate != TOOL_DONE || *result != NULL)
			return gate;
	}

	vals[2] = JsonbArg(input);
	{
		Oid			ptypes[6] = {INT8OID, TEXTOID, JSONBOID, INT8OID, TEXTOID, JSONBOID};
		Datum		pvals[6];

		pvals[0] = Int64GetDatum(tr->run_id);
		pvals[1] = CStringGetTextDatum(name);
		pvals[2] = vals[2];
		pvals[3] = Int64GetDatum(server_id);
		pvals[4] = CStringGetTextDatum(tool ? tool : "");
		pvals[5] = DirectFunctionCall1(jsonb_in, CStringGetDatum(schema ? schema : "{}"));
		if (SpiUtilExecPlan(&prep_plan, "SELECT agent._mcp_worker_prepare($1, $2, $3, $4, $5, $6)::pg_catalog.text",
							 6, ptypes, pvals, NULL, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "agent._mcp_worker_prepare returned no row");
	}
	prep = JsonFromText(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
	if (prep == NULL)
		elog(ERROR, "agent._mcp_worker_prepare returned invalid JSON");
	if (!json_is_true(json_object_get(prep, "prepared")))
	{
		/* refused (the tool left the agent's reach meanwhile) */
		oc = RecordCall(tr, name, input, prep, result, started);
		json_decref(prep);
		return oc;
	}
	if (prepared)
	{
		McpCallFree(prepared);
		prepared = NULL;
	}
	mc = calloc(1, sizeof(McpCall));
	if (mc == NULL)
		elog(ERROR, "out of memory");
	mc->server_id = (int64) json_integer_value(json_object_get(prep, "server_id"));
	mc->exposed = xdup(name);
	mc->server = xdup(json_string_value(json_object_get(prep, "server")));
	mc->tool = xdup(json_string_value(json_object_get(prep, "tool")));
	mc->url = xdup(json_string_value(json_object_get(prep, "url")));
	if (json_is_string(json_object_get(prep, "protocol_version")))
		mc->protocol = xdup(json_string_value(json_object_get(prep, "protocol_version")));
	mc->headers = json_deep_copy(json_object_get(prep, "headers"));
	mc->arguments = json_incref(json_object_get(prep, "arguments"));
	mc->tool_def = json_incref(json_object_get(prep, "tool_def"));
	if (json_is_object(json_object_get(prep, "input_responses")))
		mc->responses = json_incref(json_object_get(prep, "input_responses"));
	if (json_is_string(json_object_get(prep, "request_state")))
		mc->request_state = xdup(json_string_value(json_object_get(prep, "request_state")));
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
				 (unsigned long long) PgAgentsConfigGeneration());
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
			oc = RecordCall(tr, name, input, call, result, started);
			json_decref(call);
			return oc;
		}
	}
	json_decref(prep);
	prepared = mc;
	return TOOL_ASYNC;
}

/* ---------------------------------------------------------------------
 * The periodic refresh, in a process of its own
 * ---------------------------------------------------------------------
 */

/*
 * OAuth tokens due for renewal (agent.mcp_oauth_refresh_due) and tool lists
 * due for a new listing (agent.mcp_refresh_due) talk to remote servers
 * synchronously, each request bounded by pg_agents.request_timeout, a few
 * servers a pass: done in the worker's loop, a silent server would stall
 * every run for minutes, with a transaction open.  The worker starts a
 * short-lived background process for it instead (at most one at a time),
 * and goes on; only when none can be started (max_worker_processes
 * exhausted) does the caller do it itself (returns false).
 */
static BackgroundWorkerHandle *refresh_handle = NULL;

/*
 * Starts the background process of the OAuth and tool list refresh
 * (pg_agents_mcp_refresh_main) for this database, unless the last one is
 * still running.  Returns true when one is running or started, false when
 * none could be registered.
 */
bool
McpRefreshLaunch(void)
{
	BackgroundWorker w;
	pid_t		pid;

	if (refresh_handle)
	{
		BgwHandleStatus st = GetBackgroundWorkerPid(refresh_handle, &pid);

		if (st == BGWH_STARTED || st == BGWH_NOT_YET_STARTED)
			return true;		/* the last pass is still at it */
		pfree(refresh_handle);
		refresh_handle = NULL;
	}
	memset(&w, 0, sizeof(w));
	w.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	w.bgw_start_time = BgWorkerStart_RecoveryFinished;
	w.bgw_restart_time = BGW_NEVER_RESTART;
	strlcpy(w.bgw_library_name, "pg_agents", BGW_MAXLEN);
	strlcpy(w.bgw_function_name, "pg_agents_mcp_refresh_main", BGW_MAXLEN);
	strlcpy(w.bgw_name, "pg_agents mcp refresh", BGW_MAXLEN);
	strlcpy(w.bgw_type, "pg_agents mcp refresh", BGW_MAXLEN);
	w.bgw_main_arg = ObjectIdGetDatum(MyDatabaseId);
	w.bgw_notify_pid = 0;
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
		bool		ok = RegisterDynamicBackgroundWorker(&w, &refresh_handle);

		MemoryContextSwitchTo(old);
		if (!ok)
		{
			refresh_handle = NULL;
			return false;
		}
	}
	return true;
}

PGDLLEXPORT void pg_agents_mcp_refresh_main(Datum arg);

/*
 * Background worker entry point of McpRefreshLaunch(): connects to the
 * database given in arg and, in one transaction, runs
 * agent.mcp_oauth_refresh_due() and agent.mcp_refresh_due() when they exist,
 * then exits.
 */
void
pg_agents_mcp_refresh_main(Datum arg)
{
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(DatumGetObjectId(arg), InvalidOid, 0);
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	PushActiveSnapshot(GetTransactionSnapshot());
	if (SpiUtilFunctionExists("agent.mcp_oauth_refresh_due(interval)"))
	{
		pgstat_report_activity(STATE_RUNNING, "pg_agents: MCP OAuth refresh");
		if (SPI_execute("SELECT agent.mcp_oauth_refresh_due()", false, 0) != SPI_OK_SELECT)
			elog(ERROR, "agent.mcp_oauth_refresh_due() failed");
	}
	if (SpiUtilFunctionExists("agent.mcp_refresh_due(interval,integer)"))
	{
		pgstat_report_activity(STATE_RUNNING, "pg_agents: MCP tool lists refresh");
		if (SPI_execute("SELECT agent.mcp_refresh_due()", false, 0) != SPI_OK_SELECT)
			elog(ERROR, "agent.mcp_refresh_due() failed");
	}
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_stat(true);
	pgstat_report_activity(STATE_IDLE, NULL);
	proc_exit(0);
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

/* the asynchronous call (ToolAsyncRoutine): a ToolCall is the head of an McpCall */
static ToolCall *
McpAsyncTake(void)
{
	McpCall    *mc = McpTakePrepared();

	return mc ? &mc->call : NULL;
}

static void
McpAsyncStart(ToolCall *call)
{
	McpCallStart((McpCall *) call);
}

static bool
McpAsyncDue(ToolCall *call, TimestampTz now)
{
	return McpCallDue((McpCall *) call, now);
}

static bool
McpAsyncInFlight(ToolCall *call)
{
	return McpCallInFlight((McpCall *) call);
}

static bool
McpAsyncAnswered(ToolCall *call)
{
	return McpCallAnswered((McpCall *) call);
}

static TimestampTz
McpAsyncNextAt(ToolCall *call)
{
	return McpCallNextAt((McpCall *) call);
}

static void
McpAsyncPump(ToolCall *call)
{
	McpCallPump((McpCall *) call);
}

static bool
McpAsyncWantsUnit(ToolCall *call, TimestampTz now)
{
	return McpCallWantsUnit((McpCall *) call, now);
}

static void
McpAsyncUnitStep(const ToolRun *tr, ToolCall *call)
{
	McpCallElicitStep(tr, (McpCall *) call);
}

static ToolOutcome
McpAsyncRecord(const ToolRun *tr, ToolCall *call, json_t **result)
{
	return McpCallRecord(tr, (McpCall *) call, result);
}

static void
McpAsyncFree(ToolCall *call)
{
	McpCallFree((McpCall *) call);
}

/*
 * A transfer of MCP ended: an answer to a server's request is freed, a
 * call's transfer collected (*answered: the call, when it has its answer).
 */
static bool
McpAsyncTransferDone(HttpRequest *req, ToolCall **answered)
{
	McpCall    *mc;

	*answered = NULL;
	if (req->kind == HTTP_MCP_REPLY)
	{
		McpReplyDone(req);
		return true;
	}
	if (req->kind != HTTP_MCP)
		return false;
	mc = (McpCall *) req->owner;
	CHECK_FOR_INTERRUPTS();
	if (McpCallCollect(mc, req))
		*answered = &mc->call;
	return true;
}

static const ToolAsyncRoutine McpAsyncRoutine = {
	.take = McpAsyncTake,
	.start = McpAsyncStart,
	.due = McpAsyncDue,
	.in_flight = McpAsyncInFlight,
	.answered = McpAsyncAnswered,
	.next_at = McpAsyncNextAt,
	.pump = McpAsyncPump,
	.wants_unit = McpAsyncWantsUnit,
	.unit_step = McpAsyncUnitStep,
	.record = McpAsyncRecord,
	.free = McpAsyncFree,
	.transfer_done = McpAsyncTransferDone,
	.housekeeping = McpWorkerHousekeeping,
};

const ToolFamily McpToolFamily = {
	.family = "mcp",
	.prefix = "mcp__",
	.handles = NULL,
	.base_definitions = NULL,
	.run_definitions = McpFamilyDefinitions,
	.execute = McpFamilyExecute,
	.async = &McpAsyncRoutine,
};
