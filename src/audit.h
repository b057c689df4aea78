/*-------------------------------------------------------------------------
 *
 * audit.h
 *		The audit log (audit.c): events written by C code of the extension.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_AUDIT_H
#define PG_AGENTS_AUDIT_H

#include "utils/jsonb.h"

extern void PgAgentsAuditEvent(const char *action, const char *status,
							   const char *target_type, const char *target_id,
							   const char *workspace_id, const char *owner_id,
							   Jsonb *inputs, const char *summary,
							   const char *error_code);

#endif							/* PG_AGENTS_AUDIT_H */
