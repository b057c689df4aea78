/*-------------------------------------------------------------------------
 *
 * guc.h
 *		The settings of pg_agents (guc.c): every pg_agents.* variable, defined
 *		in one place and read by the modules.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_GUC_H
#define PG_AGENTS_GUC_H

extern char *pg_agents_actor;

/*
 * Set by the worker for its session (src/runs/worker.c): its own audit rows
 * (run.claim, run.finish, ...) without an identity name it, actor_kind
 * 'system' and actor_id 'worker' (src/audit/audit_trigger.c).
 */
extern bool AuditAsWorker;
extern char *pg_agents_workspace;
extern char *pg_agents_run_id;
extern char *pg_agents_surface;
extern char *pg_agents_on_behalf_of;
extern char *pg_agents_acting_user;
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
extern int	pg_agents_max_cluster_runs;
extern int	pg_agents_launcher_naptime;
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
extern char *pg_agents_secret_key_file;
extern int	pg_agents_max_tool_calls_per_turn;
extern int	pg_agents_max_reply_bytes;
extern int	pg_agents_max_tool_result_bytes;
extern int	pg_agents_max_request_bytes;
extern int	pg_agents_approval_max_input;
extern char *pg_agents_web_fetch_allowed_hosts;
extern char *pg_agents_web_fetch_denied_hosts;
extern char *pg_agents_web_fetch_allowed_networks;
extern int	pg_agents_web_fetch_max_bytes;
extern int	pg_agents_web_fetch_timeout;
extern int	pg_agents_web_fetch_max_redirects;
extern int	pg_agents_self_retrigger_cap;
extern int	pg_agents_filter_view_timeout;
extern int	pg_agents_approval_rule_timeout;
extern int	pg_agents_access_cache_grants;

/* pg_agents.access_backend: how access facts read their tables (access_rows.h) */
#define PGA_ACCESS_BACKEND_AUTO	0
#define PGA_ACCESS_BACKEND_SPI	1
extern int	pg_agents_access_backend;
/* operations (docs/operations.md) */
extern int	pg_agents_log_runs;
extern int	pg_agents_drain_timeout;

extern void GucDefineAll(void);
extern int	GucEffectiveDelegationDepth(void);

/* pg_agents.actor: whether it names an agent (guc.c) */
extern bool GucActorIsAgent(const char *actor);

/*
 * Set by the allowlist module (allowlist_support.c): false when it knows that
 * no cached plan can hold a folded allowlist policy, so that a switch of
 * pg_agents.actor between an agent and not need not invalidate every cached
 * plan of the backend.  NULL, or true: it must (the safe answer).  Called
 * from the assign hook: must not fail, must not read catalogs.
 */
extern bool (*guc_actor_plans_may_fold) (void);

#endif							/* PG_AGENTS_GUC_H */
