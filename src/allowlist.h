/*-------------------------------------------------------------------------
 *
 * allowlist.h
 *		The agent allowlist (allowlist.c): whether the session's actor is an
 *		agent, kept in step with the pg_agents.actor setting.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_ALLOWLIST_H
#define PG_AGENTS_ALLOWLIST_H

extern bool PgAgentsActorIsAgent(const char *actor);
extern void PgAgentsActorAssign(const char *newval, void *extra);

#endif							/* PG_AGENTS_ALLOWLIST_H */
