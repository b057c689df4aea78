/*-------------------------------------------------------------------------
 *
 * mcp_tools_async.c
 *		The asynchronous MCP call of a run slot (the family's
 *		ToolAsyncRoutine): the worker's clients, the transfers, the
 *		questions servers ask in a stream, and the answer recorded.
 *
 * The call is asynchronous (docs/mcp.md, "How the worker calls MCP
 * servers"): the tool transaction only prepares it
 * (agent._mcp_worker_prepare, mcp_tools.c), the executor sends it through
 * the worker's curl multi handle once that transaction committed, with no
 * transaction open, and records the answer in a short transaction of its own
 * (McpCallRecord: a result as it came, anything else through
 * agent._mcp_worker_finish), with the same step as a
 * synchronous call.  Each request is bounded by pg_agents.request_timeout;
 * a slow or silent server delays only the runs waiting on it.
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
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "llm/http.h"
#include "mcp.h"
#include "mcp_tools.h"
#include "mcp_tools_int.h"
#include "runs/ops.h"
#include "tools/tools.h"
#include "util/guc.h"

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
struct McpEntry
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
};

static McpEntry *entries = NULL;
static int	transfers = 0;		/* MCP transfers in the multi handle */
static bool exit_hook = false;

#define ELICIT_NONE		0
#define ELICIT_NEW		1		/* to be stored for people */
#define ELICIT_WAITING	2		/* stored: the answer is looked for */
#define ELICIT_POLL_MS	500

McpCall    *McpPreparedCall = NULL;

/*
 * strdup() for the malloc'd state of the calls: NULL becomes "", and out of
 * memory is FATAL.
 */
char *
McpXdup(const char *s)
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
		McpClientForgetSession(e->client);
	McpClientClose(e->client);
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
	e->key = McpXdup(mc->key);
	e->client = McpClientNew(mc->url, mc->headers, pg_agents_request_timeout);
	if (mc->protocol && strcmp(mc->protocol, MCP_STATELESS_VERSION) == 0)
	{
		McpClientSetProtocol(e->client, MCP_STATELESS_VERSION);
		/* input_required comes back to be answered by people */
		McpClientDeferElicitation(e->client);
	}
	else
	{
		McpClientSetProtocol(e->client, mc->protocol);	/* NULL: discover */
		/* a 2025-11-25 server's question in the stream waits for people */
		if (pg_agents_mcp_elicitation_wait > 0)
			McpClientHoldElicitation(e->client, pg_agents_mcp_elicitation_wait * 1000L);
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
json_t *
McpJsonFromText(const char *text)
{
	return text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;
}

/*
 * Frees a call: removes its transfer from the multi handle, frees its async
 * state, releases its client entry (and its claim on the session's
 * initialization) and its JSON.  NULL is accepted.
 */
void
McpCallFree(McpCall *mc)
{
	if (mc == NULL)
		return;
	if (mc->req)
	{
		HttpFree(mc->req);		/* removed from the multi handle */
		transfers--;
	}
	McpAsyncRequestFree(mc->async);
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
	McpCall    *mc = McpPreparedCall;

	McpPreparedCall = NULL;
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
		const char *problem = McpUrlProblem(mc->url);

		if (problem)
		{
			SetAnswer(mc, Failure(problem));
			return;
		}
		if (mc->entry == NULL)
			mc->entry = EntryFor(mc);
		c = mc->entry->client;
		McpClientSetTimeout(c, pg_agents_request_timeout);
		if (!McpClientIsReady(c) && mc->entry->init_error)
		{
			/* the initialization this call waited for failed: so does the call */
			SetAnswer(mc, Failure(mc->entry->init_error));
			return;
		}
		if (!McpClientIsReady(c) && McpClientWantsSession(c))
		{
			mc->async = McpAsyncInitialize(c);
			if (mc->async == NULL)
			{
				SetAnswer(mc, Failure(McpClientError(c)));
				return;
			}
			mc->initializing = true;
			mc->entry->initializing = mc;
			mc->req = HttpAttach(McpAsyncHandle(mc->async), HTTP_MCP, mc);
			transfers++;
			return;
		}
		pgstat_report_activity(STATE_IDLE, NULL);
		rc = McpClientReady(c);	/* stateless: at once; unknown protocol: discover */
		if (rc != MCP_OK)
		{
			SetAnswer(mc, Failure(McpClientError(c)));
			mc->entry->stale = mc->entry->broken = true;	/* start afresh next time */
			return;
		}
		free(mc->session);
		mc->session = McpClientSessionId(c) ? McpXdup(McpClientSessionId(c)) : NULL;
		mc->async = McpAsyncCall(c, mc->tool, mc->arguments, mc->tool_def, mc->responses,
								   mc->request_state);
		if (mc->async == NULL)
		{
			SetAnswer(mc, Failure(McpClientError(c)));
			return;
		}
	}
	mc->req = HttpAttach(McpAsyncHandle(mc->async), HTTP_MCP, mc);
	transfers++;
	RunsWorkerNoteMcp(true);	/* operations: agent.worker_status (mcp_since) */
}

/* answers to the server's requests in the stream (ping): POSTs of their own */
static void
SendReplies(McpCall *mc)
{
	struct curl_slist *h;
	char	   *body;

	while (mc->async && McpAsyncNextReply(mc->async, &h, &body))
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
		mc->elicit = McpAsyncTakeElicitation(mc->async);
		if (mc->elicit)
		{
			mc->elicit_state = ELICIT_NEW;
			mc->elicit_since = McpNowMs();
			return;
		}
		if (McpNowMs() > McpAsyncSoftDeadline(mc->async))
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
	rc = McpAsyncDone(mc->async, (int) req->result, &result);
	HttpFree(req);
	mc->req = NULL;
	transfers--;
	SendReplies(mc);
	if (McpAsyncListChanged(mc->async))
		mc->list_changed = true;
	if (mc->initializing && rc != MCP_AGAIN)
	{
		/* the session's initialization ended: the call (and those waiting) go on */
		mc->initializing = false;
		mc->entry->initializing = NULL;
		McpAsyncRequestFree(mc->async);
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
		mc->entry->init_error = McpXdup(McpClientError(c));
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
									"error", McpClientError(c)));
			break;
		case MCP_RPC_ERROR:
			SetAnswer(mc, json_pack("{s:b, s:s, s:O}", "ok", 0, "error", McpClientError(c),
									"rpc_error", result ? result : json_null()));
			break;
		case MCP_AGAIN:
			mc->next_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), McpAsyncDelayMs(mc->async));
			break;
		case MCP_SESSION_GONE:
			/* the server forgot the session (a restart): a new one, once */
			if (mc->session && McpClientSessionId(c) &&
				strcmp(mc->session, McpClientSessionId(c)) == 0)
				McpClientForgetSession(c);	/* (unless a new one is already there) */
			McpAsyncRequestFree(mc->async);
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
			SetAnswer(mc, Failure(McpClientError(c)));
			break;
	}
	if (result)
		json_decref(result);
	return mc->answer != NULL;
}

/* a call's outcome (agent.mcp_agent_call's shape) to the model's result and the step */
ToolOutcome
McpRecordCall(const ToolRun *tr, const char *name, json_t *input, json_t *call, json_t **result,
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
	text = McpResultText(res);
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
Datum
McpJsonbArg(json_t *j)
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
/*
 * agent._mcp_worker_finish's answer for a call that came back with its
 * result, built here: {"ok": not isError, "server", "tool", "result"}.
 * NULL when the function must answer (a failure, a question for people, a
 * changed tool list to mark, an isError that is no JSON boolean).
 */
static json_t *
McpFinishFast(McpCall *mc)
{
	json_t	   *res;
	json_t	   *is_error;

	if (mc->list_changed || !json_is_true(json_object_get(mc->answer, "ok")) ||
		json_is_true(json_object_get(mc->answer, "input_required")))
		return NULL;
	res = json_object_get(mc->answer, "result");
	is_error = json_object_get(res, "isError");
	if (is_error && !json_is_boolean(is_error) && !json_is_null(is_error))
		return NULL;
	return json_pack("{s:b, s:s, s:s, s:O?}", "ok", !json_is_true(is_error),
					 "server", mc->server ? mc->server : "", "tool", mc->tool ? mc->tool : "",
					 "result", res);
}

static ToolOutcome
McpCallRecord(const ToolRun *tr, McpCall *mc, json_t **result)
{
	Oid			types[8] = {INT8OID, TEXTOID, JSONBOID, INT8OID, TEXTOID, TEXTOID, JSONBOID, BOOLOID};
	Datum		vals[8];
	static SPIPlanPtr plan = NULL;
	json_t	   *call;
	ToolOutcome oc;

	*result = NULL;
	call = McpFinishFast(mc);
	if (call)
	{
		oc = McpRecordCall(tr, mc->exposed, mc->input, call, result, mc->started);
		json_decref(call);
		return oc;
	}
	vals[0] = Int64GetDatum(tr->run_id);
	vals[1] = CStringGetTextDatum(mc->exposed);
	vals[2] = McpJsonbArg(mc->arguments);
	vals[3] = Int64GetDatum(mc->server_id);
	vals[4] = CStringGetTextDatum(mc->server);
	vals[5] = CStringGetTextDatum(mc->tool);
	vals[6] = McpJsonbArg(mc->answer);
	vals[7] = BoolGetDatum(mc->list_changed);
	if (SpiUtilExecPlan(&plan, "SELECT agent._mcp_worker_finish($1, $2, $3, $4, $5, $6, $7, $8)::pg_catalog.text",
						 8, types, vals, NULL, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "agent._mcp_worker_finish returned no row");
	call = McpJsonFromText(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
	if (call == NULL)
		elog(ERROR, "agent._mcp_worker_finish returned invalid JSON");
	oc = McpRecordCall(tr, mc->exposed, mc->input, call, result, mc->started);
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
		vals[2] = McpJsonbArg(mc->arguments);
		vals[3] = Int64GetDatum(mc->server_id);
		vals[4] = McpJsonbArg(mc->elicit);
		vals[5] = Int32GetDatum(pg_agents_mcp_elicitation_wait);
		if (SpiUtilExecPlan(&new_plan, "SELECT agent._mcp_worker_elicit($1, $2, $3, $4, $5, $6)::pg_catalog.text",
							 6, types, vals, NULL, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "agent._mcp_worker_elicit returned no row");
		got = McpJsonFromText(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
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
		answer = McpJsonFromText(text);
		if (mc->async)
		{
			McpAsyncAnswerElicitation(mc->async, mc->elicit, answer);
			/* request_timeout again from now: the wait for a person is not the server's */
			McpAsyncExtend(mc->async, McpNowMs() - mc->elicit_since);
		}
		if (answer)
			json_decref(answer);
		json_decref(mc->elicit);
		mc->elicit = NULL;
		mc->elicit_state = ELICIT_NONE;
	}
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

const ToolAsyncRoutine McpAsyncRoutine = {
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
