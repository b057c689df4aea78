/*-------------------------------------------------------------------------
 *
 * worker_int.h
 *		Internal declarations of the worker: HTTP (http.c), LLM wire formats
 *		(llm.c), built-in tools (tools.c) and the per-run executor
 *		(executor.c).  Only worker files include it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_WORKER_INT_H
#define PG_AGENTS_WORKER_INT_H

#include "postgres.h"

/*
 * PostgreSQL's fmgrprotos.h declares a SQL function json_object() that
 * clashes with jansson's: include it first under another name.  Files
 * include this header right after postgres.h.
 */
#define json_object pg_agents_sql_json_object
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#undef json_object

#include <curl/curl.h>
#include <jansson.h>

/*
 * The postgres executable exports its own json_object (the SQL function),
 * which the dynamic linker would bind our calls to: make empty objects
 * through json_pack, whose internal call stays inside libjansson.
 */
#define json_object() json_pack("{}")

#include "datatype/timestamp.h"
#include "executor/spi.h"

/* ---- http.c: libcurl multi, waited on together with the latch ---- */

typedef struct HttpRequest
{
	CURL	   *easy;
	struct curl_slist *headers;
	char	   *body;			/* malloc'd request body */
	char	   *resp;			/* malloc'd response body */
	size_t		resp_len;
	size_t		resp_cap;
	bool		resp_too_big;	/* stopped reading at max_bytes */
	size_t		max_bytes;		/* pg_agents.max_reply_bytes */
	long		status;			/* HTTP status, 0 when none */
	long		retry_after_ms; /* Retry-After header, -1 when absent */
	CURLcode	result;
	bool		done;
	char		errbuf[CURL_ERROR_SIZE];
	void	   *owner;
	int			kind;			/* HTTP_LLM, or MCP transfers (mcp_tools.c) */
	bool		external;		/* easy handle owned by someone else (HttpAttach) */
} HttpRequest;

#define HTTP_LLM		0
#define HTTP_MCP		1		/* an MCP tools/call of a slot */
#define HTTP_MCP_REPLY	2		/* an answer to a server's request: freed when done */

extern void HttpInit(void);
extern HttpRequest *HttpStart(const char *url, struct curl_slist *headers,
							  char *body, long timeout_ms, void *owner);
extern bool HttpWait(long timeout_ms);	/* true when the latch was set */
extern HttpRequest *HttpAttach(CURL *easy, int kind, void *owner);
extern HttpRequest *HttpNextDone(void);
extern void HttpFree(HttpRequest *req);
extern int	HttpInFlight(void);
extern void HttpPerform(void);	/* non-blocking progress */

/* ---- llm.c: OpenAI chat completions and Anthropic messages ---- */

typedef enum LlmProvider
{
	LLM_OPENAI,
	LLM_ANTHROPIC
} LlmProvider;

typedef struct LlmReply
{
	char	   *text;			/* palloc'd, may be NULL */
	json_t	   *calls;			/* array of {id, name, input}, owned */
	json_t	   *assistant;		/* the provider-native assistant message, owned */
	int64		tokens_in;
	int64		tokens_out;
	char	   *stop;			/* palloc'd finish/stop reason */
	char	   *error;			/* palloc'd, set when the reply is unusable */
} LlmReply;

extern bool LlmParseProvider(const char *name, LlmProvider *out);
extern char *LlmEndpoint(LlmProvider provider, const char *base_url);
extern struct curl_slist *LlmHeaders(LlmProvider provider, const char *api_key);
extern bool LlmUrlEqual(const char *a, const char *b);
extern bool LlmUrlAllowed(const char *url);
extern const char *LlmKeyFor(const char *url);
extern char *LlmBuildBody(LlmProvider provider, const char *model, const char *system,
						  json_t *messages, json_t *tools);
extern bool LlmParseReply(LlmProvider provider, const char *body, size_t len, LlmReply *out);
extern void LlmFreeReply(LlmReply *r);
extern void LlmAppendUser(LlmProvider provider, json_t *messages, const char *text);
extern void LlmAppendToolResults(LlmProvider provider, json_t *messages, json_t *results);
extern json_t *LlmToolsFor(LlmProvider provider, json_t *neutral_tools);
extern char *LlmErrorMessage(const char *body, size_t len);

/* embed.c */
extern char *EmbedQuery(const char *base_url, const char *model, const char *text, char **error);

/* ---- tools.c: built-in tools, run inside the executor's transaction ---- */

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
	TOOL_MCP_ASYNC				/* an MCP call is prepared (McpTakePrepared) */
} ToolOutcome;

extern json_t *ToolsDefinitions(bool can_delegate);
extern void ToolsSetIdentity(const ToolRun *tr);
extern ToolOutcome ToolsExecute(const ToolRun *tr, const char *name, json_t *input,
								json_t **result, int64 *child_run_id);
extern char *ToolsInSubxact(void (*body) (void *arg), void *arg);
extern void ToolsRecordStep(int64 run_id, const char *kind, const char *name,
							json_t *input, json_t *output, const char *status,
							int64 tokens, TimestampTz started);
extern bool ToolsRecordStepText(int64 run_id, const char *kind, const char *name,
								const char *input_json, const char *output_json,
								const char *status, int64 tokens, TimestampTz started);
extern json_t *ToolsChildResult(int64 child_run_id, bool *finished);
extern bool PgAgentsFunctionExists(const char *signature);
extern void ToolsRefreshCatalog(void);
extern int	PgAgentsExecPlan(SPIPlanPtr *cache, const char *sql, int nargs, Oid *types,
							 Datum *vals, const char *nulls, bool read_only, long count);

/* approval policy and gate of tools.c, shared with mcp_tools.c */
extern bool ToolsNeedsApproval(const ToolRun *tr, const char *tool, bool is_write);
extern ToolOutcome ToolsApprovalGate(const ToolRun *tr, const char *tool, json_t *input,
									 json_t **result, TimestampTz started);

/* ---- mcp_tools.c: MCP tools (mcp__<server>__<tool>) of the worker ---- */

extern void McpAppendToolDefinitions(json_t *tools, int64 agent_id, int64 run_id);
extern ToolOutcome McpToolExecute(const ToolRun *tr, const char *name, json_t *input,
								  json_t **result, TimestampTz started);

/* an MCP call in flight, asynchronous (the slot state SLOT_MCP of executor.c) */
typedef struct McpCall McpCall;
extern McpCall *McpTakePrepared(void);
extern void McpCallStart(McpCall *mc, void *owner);	/* no transaction open */
extern bool McpCallCollect(McpCall *mc, HttpRequest *req);	/* true: answered */
extern void McpCallPump(McpCall *mc);
extern bool McpCallDue(McpCall *mc, TimestampTz now);
extern bool McpCallInFlight(McpCall *mc);
extern bool McpCallAnswered(McpCall *mc);
extern TimestampTz McpCallNextAt(McpCall *mc);
extern ToolOutcome McpCallRecord(const ToolRun *tr, McpCall *mc, json_t **result);	/* in a unit */
extern void McpCallFree(McpCall *mc);
extern void McpReplyDone(HttpRequest *req);
extern void McpWorkerHousekeeping(void);
extern int	McpTransfersInFlight(void);

/* ---- teams.c: messages to runs, ask_parent, agent_teams (docs/teams.md) ---- */

extern void TeamsAddTools(json_t *tools, int64 run_id, bool can_delegate);
extern bool TeamsHandles(const char *name);
extern ToolOutcome TeamsExecute(const ToolRun *tr, const char *name, json_t *input, json_t **result,
								int64 *child_run_id, TimestampTz started);
extern int	TeamsDeliver(int64 run_id, LlmProvider provider, json_t *messages);
extern bool TeamsPending(int64 run_id);
extern json_t *TeamsChildQuestion(int64 parent_run_id, int64 child_run_id);

/* ---- executor.c: runs in flight ---- */

extern void ExecutorInit(void);
extern void ExecutorWake(void);
extern void ExecutorReclaimOnStart(void);
extern int	ExecutorClaim(void);
extern void ExecutorStep(void);
extern long ExecutorNextTimeout(long dflt);
extern int	ExecutorActive(void);
/* operations: the drain of SIGTERM (docs/operations.md) */
extern int	ExecutorHeld(void);
extern bool ExecutorDrainIdle(void);
extern void ExecutorDrainStep(void);
extern int	ExecutorRequeueAll(void);

/* worker.c */
extern bool PgAgentsWorkerReady(void);

#endif							/* PG_AGENTS_WORKER_INT_H */
