/*-------------------------------------------------------------------------
 *
 * allowlist.h
 *		What the allowlist module offers the rest of the extension: its
 *		planner hook (allowlist_ops.c).  Everything else of the module is
 *		SQL-callable.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_ALLOWLIST_H
#define PG_AGENTS_ALLOWLIST_H

extern void AllowlistInitHooks(void);

#endif							/* PG_AGENTS_ALLOWLIST_H */
