/*-------------------------------------------------------------------------
 *
 * worker_int.h
 *		Internal declarations of the worker: HTTP (http.c), LLM wire formats
 *		(llm.c), tools (tools.c and its families) and the per-run executor
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

/* ---- ratelimit.c: what a reply says of the provider's limits ---- */

typedef struct RateHeaders
{
	long		remaining_requests; /* -1: absent */
	long		remaining_tokens;
	char		reset_requests[40]; /* "1s", "6m0s" or an RFC 3339 time */
	char		reset_tokens[40];
} RateHeaders;

extern void RateHeadersInit(RateHeaders *rh);
extern void RateHeaderParse(RateHeaders *rh, const char *line, size_t n);

/* ---- http.c: libcurl multi, waited on together with the latch ---- */

struct LlmStream;

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
	RateHeaders rl;				/* rate-limit headers of the reply (ratelimit.c) */
	CURLcode	result;
	bool		done;
	char		errbuf[CURL_ERROR_SIZE];
	void	   *owner;
	int			kind;			/* HTTP_LLM, or MCP transfers (mcp_tools.c) */
	bool		external;		/* easy handle owned by someone else (HttpAttach) */
	struct LlmStream *stream;	/* a streamed reply: parsed as it arrives (borrowed) */
	int			stream_mode;	/* 0 undecided, 1 parsed as a stream, 2 buffered (an error) */
	char		request_id[128];	/* x-request-id / request-id response header */
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
extern void HttpSetStream(HttpRequest *req, struct LlmStream *st);

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
	int64		tokens_in;		/* every input token, cached ones included */
	int64		tokens_out;
	int64		tokens_cached;	/* input tokens read from the prompt cache */
	int64		tokens_cache_write; /* Anthropic cache_creation_input_tokens */
	int64		tokens_reasoning;	/* OpenAI completion_tokens_details.reasoning_tokens */
	char	   *refusal;		/* palloc'd: OpenAI message.refusal */
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
						  json_t *messages, json_t *tools, bool stream, int max_tokens);
extern bool LlmParseReply(LlmProvider provider, const char *body, size_t len, LlmReply *out);
extern bool LlmParseReplyJson(LlmProvider provider, json_t *root, LlmReply *out);
extern void LlmFreeReply(LlmReply *r);
extern void LlmAppendUser(LlmProvider provider, json_t *messages, const char *text);
extern void LlmAppendToolResults(LlmProvider provider, json_t *messages, json_t *results);
extern json_t *LlmToolsFor(LlmProvider provider, json_t *neutral_tools);
extern char *LlmErrorMessage(const char *body, size_t len);
extern bool LlmQuotaError(const char *body, size_t len);

/* how a reply's stop reason ends the turn (docs/worker.md, "Stop reasons") */
typedef enum LlmStopKind
{
	LLM_STOP_NORMAL,			/* end_turn, stop_sequence, stop, tool_use, tool_calls */
	LLM_STOP_PAUSE,				/* pause_turn: send the content back, ask again */
	LLM_STOP_REFUSAL,			/* refusal, content_filter, a message refusal */
	LLM_STOP_MAX_TOKENS,		/* max_tokens, length: the reply was cut */
	LLM_STOP_CONTEXT			/* model_context_window_exceeded */
} LlmStopKind;

extern LlmStopKind LlmStopKindOf(const LlmReply *r);
extern bool LlmStreamEnabled(const char *url);

/*
 * A streamed reply (server-sent events), parsed in the curl write callback
 * as it arrives: malloc and jansson only, never palloc or ereport.  The
 * events are folded into the body the provider would have sent without
 * streaming, so that the reply is parsed and recorded exactly as a
 * non-streamed one (LlmStreamFinish).
 */
typedef struct LlmStream
{
	LlmProvider provider;
	char	   *line;			/* the line being received */
	size_t		line_len;
	size_t		line_cap;
	char	   *data;			/* data: lines of the event being received */
	size_t		data_len;
	size_t		data_cap;
	char		event[64];		/* event: name of the event being received */
	char	   *text;			/* every text delta so far */
	size_t		text_len;
	size_t		text_cap;
	size_t		published;		/* bytes of text already sent on NOTIFY */
	TimestampTz last_publish;
	json_t	   *acc;			/* the reply body being assembled */
	bool		done;			/* [DONE] or message_stop seen */
	bool		has_content;	/* OpenAI: the content is st->text */
	bool		oom;
	char	   *error;			/* malloc'd: an error event's message */
	char	   *error_type;		/* malloc'd: its type */
} LlmStream;

extern LlmStream *LlmStreamNew(LlmProvider provider);
extern bool LlmStreamFeed(LlmStream *st, const char *p, size_t n);
extern json_t *LlmStreamFinish(LlmStream *st);
extern void LlmStreamFree(LlmStream *st);

/* deltas.c: NOTIFY agent_run_deltas, inside a transaction */
extern size_t DeltasNotify(int64 run_id, int64 conversation_id, int step, int attempt,
						   const char *text, size_t from, size_t upto);

/* ---- providers.c: where a run's requests go (docs/worker.md, "Providers") ---- */

typedef struct ProviderResolved
{
	const char *name;			/* the provider named by the agent; NULL: the
								 * default provider (GUCs) or the agent's own
								 * scope llm_url */
	LlmProvider kind;
	const char *base_url;
	const char *api_key;		/* resolved secret; NULL: no key */
	const char *model;
	const char *const *headers; /* extra "Name: value" lines, resolved */
	int			nheaders;
	const char *const *secrets; /* header values from the secrets store */
	int			nsecrets;
	long		request_timeout;	/* ms */
	bool		stream;			/* the provider's settings "stream" (default false) */
	int			max_concurrent; /* 0: no limit */
	int			requests_per_minute;
	int			tokens_per_minute;
	int			ratelimit;		/* the limiter's bucket, -1: none */
} ProviderResolved;

extern bool ProvidersStale(void);
extern void ProvidersLoad(void);
extern bool ProviderResolve(json_t *scope, const char *agent_model, ProviderResolved *out, char **error);
extern struct curl_slist *ProviderAddHeaders(const ProviderResolved *rp, struct curl_slist *h);
extern char *ProviderScrub(const ProviderResolved *rp, const char *msg);

/* ---- ratelimit.c: the worker's buckets per provider ---- */

extern int	RateLimitFor(int64 provider_id, const char *name, int max_concurrent, int rpm, int tpm);
extern void RateLimitForget(int64 *alive, int n);
extern bool RateLimitAdmit(int h, int64 est_tokens, long *wait_ms);
extern void RateLimitCountWait(int h);
extern void RateLimitDone(int h, int64 est_tokens, int64 used, long status, long retry_after_ms,
						  const RateHeaders *hd, const char *error);

/* embed.c */
extern char *EmbedQuery(const char *base_url, const char *model, const char *text, char **error);

/* ---- tools.c: the tool dispatcher; tools run inside the executor's transaction ---- */

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

extern json_t *ToolsDefinitions(void);
extern void ToolsAddRunDefinitions(json_t *tools, int64 agent_id, int64 run_id, bool can_delegate);
extern ToolOutcome ToolsExecute(const ToolRun *tr, const char *name, json_t *input,
								json_t **result, int64 *child_run_id);
extern json_t *ToolsChildResult(int64 child_run_id, bool *finished);

/* the gate of every tool family (identity, steps, access, approval): tool_gate.h */

/* ---- approval_rules.c: conditional approval gates (scope.approval_rules) ---- */

extern bool ApprovalRulesCover(json_t *scope, const char *tool);
extern bool ApprovalRulesNeed(json_t *scope, const char *tool, json_t *input, int64 run_id,
							  const char **rule, char **why);

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
extern bool McpCallWantsUnit(McpCall *mc, TimestampTz now);
extern void McpCallElicitStep(const ToolRun *tr, McpCall *mc);
extern bool McpRefreshLaunch(void);	/* false: do the refresh in the loop */
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

extern int	TeamsDeliver(int64 run_id, LlmProvider provider, json_t *messages);
extern bool TeamsPending(int64 run_id);
extern json_t *TeamsChildQuestion(int64 parent_run_id, int64 child_run_id);

/* ---- context.c: context assembly, what a run's model receives (docs/worker.md) ---- */

#define CONTEXT_NO_ACCESS	"[no access]"	/* a link to a page the run may not read */

typedef struct ContextRun
{
	/* in */
	const char *agent_name;
	const char *instructions;
	const char *page_id;		/* agents.instruction_page_id, or NULL */
	int			depth;			/* the run's delegation depth */
	bool		delegation_listed;	/* the agent's delegation list is not empty */
	bool		skills_possible;	/* a skill granted (autonomous), a skill table (manual) */
	bool		fresh;			/* a new run: first messages, steps */
	LlmProvider provider;
	json_t	   *input;			/* the run's input (a payload may be withheld) */
	const char *trigger_prompt;
	const char *origin;
	json_t	   *tools;			/* delegate_to_agent, use_skill appended */
	json_t	   *messages;		/* fresh: history and the run's input appended */
	/* out */
	char	   *system;
	bool		can_delegate;	/* listed and below the depth limit (teams tools) */
	bool		offer_delegate; /* and an agent to offer: delegate_to_agent */
	bool		has_skills;
	int			max_depth;
	json_t	   *delegates;		/* internal */
} ContextRun;

extern char *ContextAssemble(const ToolRun *tr, ContextRun *cr);
extern bool ContextMayDelegateTo(const ToolRun *tr, int64 child_agent_id);

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
