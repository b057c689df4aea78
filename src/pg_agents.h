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

/* guc.c */
extern char *pg_agents_actor;
extern char *pg_agents_workspace;
extern char *pg_agents_run_id;
extern char *pg_agents_surface;
extern char *pg_agents_on_behalf_of;
extern char *pg_agents_database;
extern bool pg_agents_audit_enabled;
extern int	pg_agents_audit_retention_days;
extern int	pg_agents_dedup_window;
extern int	pg_agents_hourly_run_cap;
extern int	pg_agents_max_delegation_depth;
extern int	pg_agents_approval_ttl;
extern int	pg_agents_run_lease;
extern int	pg_agents_max_attempts;
extern int	pg_agents_max_concurrent_runs;
extern char *pg_agents_llm_provider;
extern char *pg_agents_llm_url;
extern char *pg_agents_llm_model;
extern char *pg_agents_llm_api_key;
extern int	pg_agents_request_timeout;
extern int	pg_agents_access_cache_grants;

extern void PgAgentsDefineGucs(void);
extern int	PgAgentsEffectiveDelegationDepth(void);

/* shmem.c */
extern void PgAgentsInitShmem(void);

/* worker.c */
extern void PgAgentsRegisterWorker(void);

#endif							/* PG_AGENTS_H */
