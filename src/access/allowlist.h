/*-------------------------------------------------------------------------
 *
 * allowlist.h
 *		What the allowlist module offers the rest of the extension: its
 *		planner hook (allowlist_ops.c) and whether a switch of
 *		pg_agents.actor must drop the cached plans (allowlist_support.c).
 *		Everything else of the module is SQL-callable.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_ALLOWLIST_H
#define PG_AGENTS_ALLOWLIST_H

extern void AllowlistInitHooks(void);

/*
 * Called in a transaction before the session switches pg_agents.actor (the
 * worker's tool units): learns, once until the next relcache invalidation,
 * whether any object uses agent._allowlist_active(); while none does, the
 * switch keeps the backend's cached plans (allowlist_support.c).
 */
extern void AllowlistNoteFolding(void);

#endif							/* PG_AGENTS_ALLOWLIST_H */
