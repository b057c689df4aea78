/*-------------------------------------------------------------------------
 *
 * pg_agents.h
 *		Shared declarations of the pg_agents modules.
 *
 * Each src/<area>.c keeps its externs in its own section below.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_H
#define PG_AGENTS_H

#include "postgres.h"

#include "nodes/pg_list.h"
#include "storage/latch.h"
#include "utils/jsonb.h"

/* guc.c */
extern char *pg_agents_actor;
extern char *pg_agents_workspace;
extern char *pg_agents_run_id;
extern char *pg_agents_surface;
extern char *pg_agents_on_behalf_of;
extern char *pg_agents_database;
extern bool pg_agents_audit_enabled;
extern int	pg_agents_audit_retention_days;
extern int	pg_agents_run_retention_days;
extern int	pg_agents_dedup_window;
extern int	pg_agents_hourly_run_cap;
extern int	pg_agents_max_delegation_depth;
extern int	pg_agents_approval_ttl;
extern int	pg_agents_run_lease;
extern int	pg_agents_max_attempts;
extern int	pg_agents_conversation_window;
extern int	pg_agents_max_runs_per_workspace;
extern int	pg_agents_max_concurrent_runs;
extern bool pg_agents_worker_tick;
extern char *pg_agents_llm_provider;
extern char *pg_agents_llm_url;
extern char *pg_agents_llm_model;
extern char *pg_agents_embedding_model;
extern char *pg_agents_llm_api_key;
extern int	pg_agents_request_timeout;
extern int	pg_agents_mcp_elicitation_wait;
extern bool pg_agents_llm_stream;
extern bool pg_agents_llm_prompt_cache;
extern char *pg_agents_llm_url_allowlist;
extern int	pg_agents_max_tool_calls_per_turn;
extern int	pg_agents_max_reply_bytes;
extern int	pg_agents_approval_max_input;
extern int	pg_agents_self_retrigger_cap;
extern int	pg_agents_filter_view_timeout;
extern int	pg_agents_approval_rule_timeout;
extern int	pg_agents_access_cache_grants;

extern void PgAgentsDefineGucs(void);
extern int	PgAgentsEffectiveDelegationDepth(void);

/* redact.c: credentials and oversized data never reach storage */
#include "utils/jsonb.h"

#define PG_AGENTS_REDACTED		"[REDACTED]"
#define PG_AGENTS_TRUNCATED		"[TRUNCATED]"
#define REDACT_MAX_STRING		2048	/* bytes kept of one string */
#define REDACT_SCAN_MARGIN		512 /* bytes scanned past the cut */
#define REDACT_MAX_DEPTH		8	/* nesting levels kept */
#define REDACT_MAX_ITEMS		500 /* members kept per array or object */
#define REDACT_MAX_PAYLOAD		(64 * 1024) /* bytes of text kept per document */

typedef struct PgAgentsRedactor
{
	int64		budget;			/* bytes of text still allowed */
} PgAgentsRedactor;

extern bool PgAgentsSensitiveName(const char *name, int len);
extern char *PgAgentsRedactText(const char *s, int len, int *outlen);
extern Jsonb *PgAgentsRedactJsonb(Jsonb *in);
extern void PgAgentsRedactorInit(PgAgentsRedactor *r);
extern void PgAgentsRedactPushMarker(JsonbParseState **ps, JsonbIteratorToken tok,
									 const char *marker);
extern void PgAgentsRedactPushString(PgAgentsRedactor *r, JsonbParseState **ps,
									 JsonbIteratorToken tok, const char *s, int len,
									 bool sensitive);
extern JsonbValue *PgAgentsRedactPushValue(PgAgentsRedactor *r, JsonbParseState **ps,
										   JsonbIteratorToken tok, JsonbValue *v,
										   int depth, bool sensitive);
extern JsonbValue *PgAgentsRedactPushJsonb(PgAgentsRedactor *r, JsonbParseState **ps,
										   JsonbIteratorToken tok, Jsonb *jb,
										   int depth, bool sensitive);

/* audit.c */
extern void PgAgentsAuditEvent(const char *action, const char *status,
							   const char *target_type, const char *target_id,
							   const char *workspace_id, const char *owner_id,
							   Jsonb *inputs, const char *summary,
							   const char *error_code);

/* shmem.c (events): the worker's wake-up latch */
/* access.c: the ids an agent may read (or edit) among resources of a type */
extern char **PgAgentsReadableIds(int64 agent_id, const char *rtype, bool edit, int *n,
								  bool *custom_acl);
extern Oid	PgAgentsAccessRelid(void);
extern int	PgAgentsReadableOne(int64 agent_id, const char *rtype, const char *rid, bool edit);

/* allowlist.c */
extern bool PgAgentsActorIsAgent(const char *actor);
extern void PgAgentsActorAssign(const char *newval, void *extra);

/* shmem.c */
#define PG_AGENTS_ACCESS_INFLIGHT 64
extern void PgAgentsInitShmem(void);
extern void PgAgentsNoteAccessChange(void);
extern bool PgAgentsAccessChangedInXact(void);
extern bool PgAgentsAccessSample(uint64 *gen, TransactionId *inflight, int *n);
extern bool PgAgentsShmemAvailable(void);
extern void PgAgentsSetWorkerLatch(Latch *latch);
extern void PgAgentsRequestWake(void);

/*
 * shmem.c (operations): what agent.worker_status shows of the worker
 * (docs/operations.md).  Written by the worker under its mutex; paused is
 * read without it by the claim path.
 */
#include "datatype/timestamp.h"
#include "port/atomics.h"
#include "storage/spin.h"

typedef enum PgAgentsWorkerState
{
	PGA_WORKER_STOPPED = 0,
	PGA_WORKER_STARTING,
	PGA_WORKER_WAITING_EXTENSION,
	PGA_WORKER_WAITING_UPDATE,
	PGA_WORKER_RUNNING,
	PGA_WORKER_PAUSED,
	PGA_WORKER_DRAINING
} PgAgentsWorkerState;

#define PGA_WORKER_ERROR_LEN	256

typedef struct PgAgentsWorkerInfo
{
	slock_t		mutex;
	int			pid;			/* 0 when no worker runs */
	TimestampTz started_at;
	PgAgentsWorkerState state;
	int			slots_in_use;
	int			max_slots;
	int			llm_in_flight;
	int			mcp_in_flight;
	TimestampTz mcp_since;		/* start of the MCP call in flight */
	TimestampTz last_tick;
	TimestampTz last_error_at;
	char		last_error[PGA_WORKER_ERROR_LEN];
	uint64		starts;			/* worker starts since the postmaster started */
	uint64		resets;			/* crash resets of shared memory since then */
	uint32		pause_seq;		/* pause changes committed (under mutex) */
	pg_atomic_uint32 paused;	/* agent.worker_control.paused, as last synced */
} PgAgentsWorkerInfo;

extern PgAgentsWorkerInfo *PgAgentsWorkerShmem(void);

/* ops.c (operations): status, pause, the run log (docs/operations.md) */
extern int	pg_agents_log_runs;
extern int	pg_agents_drain_timeout;
extern void PgAgentsWorkerSetState(PgAgentsWorkerState state);
extern void PgAgentsWorkerNoteError(const char *msg);
extern void PgAgentsWorkerNoteMcp(bool starting);
extern bool PgAgentsWorkerPaused(void);
extern void PgAgentsWorkerPauseSyncBegin(void);
extern bool PgAgentsWorkerClaimsStopped(void);
extern void PgAgentsWorkerDraining(bool on);

/* filter.c (events) */
typedef struct FilterEval
{
	Oid			role;			/* reads a filter view with this role's rights */
	int64		trigger_id;		/* for messages; 0 when none */
	char	   *error;			/* out: why a filter view failed, or NULL */
} FilterEval;
extern void PgAgentsValidateFilter(Jsonb *filter);
extern bool PgAgentsFilterMatches(Jsonb *filter, Jsonb *payload, FilterEval *ev);

/* dispatch.c (events); workspace NULL: unknown (the event wakes nobody) */
extern List *PgAgentsDispatch(const char *workspace, const char *event_name,
							  const char *resource_type,
							  const char *resource_id, Jsonb *payload,
							  const char *actor, const char *event_id);
extern bool PgAgentsEventHasCandidates(const char *workspace,
									   const char *event_name,
									   const char *resource_type,
									   const char *resource_id);
extern const char *PgAgentsSessionWorkspace(void);

/* eventstats.c (events) */
extern void PgAgentsInitEventStats(void);
extern void PgAgentsCountUnknownWorkspace(const char *event_name,
										  const char *resource_type,
										  const char *resource_id,
										  const char *why);

/* worker.c */
extern void PgAgentsRegisterWorker(void);

/* approval.c */
extern char *PgAgentsCanonicalJson(Jsonb *j);
extern char *PgAgentsApprovalKey(const char *tool, Jsonb *input);

/* secrets.c and ratelimit.c (providers and secrets, docs/worker.md) */
#define RATELIMIT_MAX 64
extern char *pg_agents_secret_key_file;
extern char *SecretsLookup(const char *name, char **error);
extern char *SecretsExpand(const char *value, char **error);
extern bool SecretsHasReference(const char *value);
extern void PgAgentsInitRateLimitShmem(void);
extern void PgAgentsConfigChanged(void);
extern uint64 PgAgentsConfigGeneration(void);
struct json_t;
extern bool SecretsExpandJsonHeaders(struct json_t *headers, char **error);

#endif							/* PG_AGENTS_H */
