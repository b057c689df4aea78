/*-------------------------------------------------------------------------
 *
 * audit.h
 *		The audit log: C row triggers on audited tables, the extension's own
 *		audit events, the append-only guard, retention purge.  The code is in
 *		audit_writer.c (the writer), audit_trigger.c (row trigger, identity,
 *		named events, guard) and audit_maint.c (purge, partitions, backdate);
 *		this header is the entry point of the other modules.
 *
 * Rows are written straight into agent.audit_log's monthly partitions with
 * heap_multi_insert and index inserts (as COPY FROM writes a partitioned
 * table), not through SPI: no plan, no permission check, no snapshot per
 * row.  That is also what lets an unprivileged role's changes be recorded
 * while that role has no INSERT privilege on the log: only this code writes
 * it.  The rows of a statement are buffered and written when it ends (see
 * "The writer" in audit_writer.c).
 *
 * The guard (BEFORE UPDATE/DELETE/TRUNCATE triggers, enabled ALWAYS, on the
 * log and on each partition) refuses every change to existing rows, except
 * inside agent.purge_audit() (rows past the retention period),
 * agent._audit_default_move() (rows leaving the default partition for their
 * month's) and agent._audit_backdate() (superuser, tests), which raise
 * backend-local flags that SQL cannot set.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_AUDIT_H
#define PG_AGENTS_AUDIT_H

#include "utils/jsonb.h"

extern void AuditEvent(const char *action, const char *status,
							   const char *target_type, const char *target_id,
							   const char *workspace_id, const char *owner_id,
							   Jsonb *inputs, const char *summary,
							   const char *error_code);

#endif							/* PG_AGENTS_AUDIT_H */
