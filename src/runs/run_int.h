/*-------------------------------------------------------------------------
 *
 * run_int.h
 *		Private declarations of the runs in flight, shared by its files only,
 *		in layers (each calls only the ones below it): run_units.c (the SQL
 *		the slots run inside their units), run_slot.c (the slot itself: its
 *		struct, units, end and failure), run_prompt.c (what the model
 *		receives and what is recorded of it), run_tools.c (a slot's tool
 *		calls), run_calls.c (its LLM calls: start, reply, retry, streaming
 *		deltas) and run_loop.c (the slots' state machine, driven by the
 *		worker loop: runs.h).  Each file includes the headers of the modules
 *		it calls itself; this one only those its declarations need.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_RUN_INT_H
#define PG_AGENTS_RUN_INT_H

#include "util/jansson_prelude.h"

#include "datatype/timestamp.h"

#include "llm/http.h"
#include "llm/llm.h"
#include "llm/providers.h"
#include "llm/ratelimit.h"
#include "tools/tools.h"

#define MAX_SLOTS			1024
#define CHILD_POLL_MS		200

typedef enum SlotState
{
	SLOT_FREE = 0,
	SLOT_READY,
	SLOT_HTTP,
	SLOT_BACKOFF,
	SLOT_TOOLS,
	SLOT_CHILD,
	SLOT_ASYNC
} SlotState;

typedef struct Slot
{
	SlotState	state;
	MemoryContext cxt;
	int64		run_id;
	int64		agent_id;
	char	   *workspace;
	char	   *regime;
	char	   *user_id;
	char	   *key_user;		/* whose own secrets its provider uses (NULL: the workspace's) */
	char	   *approval_mode;
	char	   *model;
	char	   *url;
	char	   *system;
	LlmProvider provider;
	bool		can_delegate;
	json_t	   *scope;
	json_t	   *tools;			/* neutral definitions */
	json_t	   *messages;		/* provider-native conversation */
	json_t	   *pending;		/* tool calls of the last reply */
	json_t	   *results;		/* their results so far */
	int			iterations;
	int			max_iterations;
	int			http_attempts;
	TimestampTz next_at;
	TimestampTz call_started;
	HttpRequest *req;
	RateHeaders rl_headers;		/* what its reply says of the provider's limits */
	LlmStream  *stream;			/* the streamed reply of the call in flight */
	int			stream_step;	/* its model call number in the run (deltas) */
	int64		conversation_id;	/* a chat run's conversation (deltas), 0: none */
	size_t		stream_pub;		/* published by the delta unit, once it commits */
	int64		child_run_id;
	ToolCall   *call;			/* SLOT_ASYNC: the tool call in flight (tools.h) */
	uint32		gen;			/* claim that filled the slot */
	/* providers (providers.c, ratelimit.c) */
	char	   *agent_model;	/* agents.model as claimed */
	int			rl;				/* the limiter's bucket, -1: none */
	bool		rl_held;		/* the request in flight holds a share */
	int64		rl_est;			/* tokens it reserved */
	bool		rl_waiting;		/* READY, but the provider has no headroom */
	TimestampTz rl_until;		/* ... until then (0: until a request ends) */
	TimestampTz rl_lease_at;	/* its lease, last renewed while waiting */
	ProviderResolved rp;		/* its provider as resolved (RunSlotProvider) */
	bool		rp_valid;		/* rp (or rp_error) is the resolution at rp_epoch */
	bool		rp_ok;
	char	   *rp_error;		/* why the provider cannot serve the run */
	uint64		rp_epoch;		/* ProvidersEpoch when resolved */
} Slot;

/* ---- run_slot.c: the slots and their units ---- */

extern Slot RunSlotTable[MAX_SLOTS];
extern char RunSlotUnitError[1024]; /* the message of the last failed unit */
extern bool RunSlotMoreWork;	/* a slot was freed (RunSlotFree), or the last claim was full */

typedef void (*UnitFn) (Slot *s, void *arg);

extern bool RunSlotUnit(const char *activity, UnitFn fn, Slot *s, void *arg);
extern void RunSlotUnitOrFail(Slot *s, const char *activity, UnitFn fn, void *arg);
extern void RunSlotFree(Slot *s);
extern void RunSlotFail(Slot *s, const char *status, const char *error);
extern ToolRun RunSlotToolRun(Slot *s);
extern bool RunSlotProvider(Slot *s, ProviderResolved *rp, char **error);

/* ---- run_tools.c: the tool calls of the slots ---- */

extern void RunToolsExecute(Slot *s);
extern void RunToolsExecuteDue(void);
extern void RunToolsPollChildren(void);
extern void RunToolsTransferDone(HttpRequest *req);
extern void RunToolsFlushAsync(void);
extern void RunToolsStartDueAsync(void);

/* ---- run_calls.c: the LLM calls of the slots ---- */

extern void RunCallStart(Slot *s);
extern void RunCallDone(Slot *s, HttpRequest *req);
extern void RunCallsFlush(void);
extern bool RunCallsBatchFull(void);
extern bool RunCallsBatchEmpty(void);
extern bool RunCallsFlushDue(TimestampTz now, long *wait_ms);
extern void RunCallsPublishDeltas(void);
extern long RunCallsDeltaWait(TimestampTz now);

/* ---- run_units.c: the SQL of the slots, inside their units ---- */

/* a run as claimed (agent.claim_runs, with its agent, trigger and saved state) */
typedef struct ClaimedRun
{
	int64		run_id;
	int64		agent_id;
	char	   *workspace;
	char	   *regime;
	char	   *requested_by;
	char	   *input;			/* jsonb as text */
	char	   *origin;
	char	   *agent_name;
	char	   *instructions;
	char	   *model;			/* agents.model */
	char	   *approval_mode;
	char	   *scope;			/* jsonb as text */
	int			max_iterations;
	bool		delegation_listed;	/* the agent's delegation list is not empty */
	bool		deleted;		/* the agent was deleted */
	bool		suspended;		/* an autonomous run of a suspended agent */
	char	   *trigger_prompt;
	char	   *state;			/* agent.run_state.state as text, or NULL */
	int			depth;
	char	   *page_id;		/* agents.instruction_page_id */
	bool		skills_possible;
} ClaimedRun;

extern bool RunSqlHoldLease(int64 run_id, const char *workspace);
extern void RunSqlFinish(int64 run_id, const char *workspace, const char *status, json_t *output, const char *error);
extern void RunSqlSaveState(Slot *s);
extern bool RunSqlAnyClaimable(void);
extern int	RunSqlClaim(int n, ClaimedRun **runs);
extern bool RunSqlAfterUsage(Slot *s, const LlmReply *r, int64 *budget, int64 *used);
extern bool RunSqlParkForChildren(int64 run_id);
extern void RunSqlFinishReplies(const char *replies, int64 *ids, char *outcomes, int n);
extern void RunSqlRecordFailure(Slot *s, const char *status, const char *error);
extern void RunSqlRecordRetry(Slot *s, json_t *info);
extern void RunSqlReclaim(void);
extern int	RunSqlRequeue(int64 *ids, int n);

/* ---- run_prompt.c: what the model receives, what is recorded of it ---- */

extern char *RunPromptAssemble(Slot *s, const ClaimedRun *cr);
extern char *RunPromptBody(Slot *s, bool stream);
extern char *RunResultCapped(const char *content);
extern void RunPromptStepJson(Slot *s, const LlmReply *r, json_t **in, json_t **out);

#endif							/* PG_AGENTS_RUN_INT_H */
