/*-------------------------------------------------------------------------
 *
 * audit_int.h
 *		Private declarations of the audit module: the writer (audit_writer.c),
 *		the triggers and named events (audit_trigger.c) and the maintenance
 *		(audit_maint.c).  No other module includes it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_AUDIT_INT_H
#define PG_AGENTS_AUDIT_INT_H

#include "access/htup.h"
#include "datatype/timestamp.h"
#include "utils/jsonb.h"

/* the columns of agent.audit_log */
enum
{
	AL_ID, AL_AT, AL_ACTOR_KIND, AL_ACTOR_ID, AL_ON_BEHALF_OF, AL_DB_USER,
	AL_RUN_ID, AL_SURFACE, AL_ACTION, AL_STATUS, AL_ERROR_CODE,
	AL_TARGET_TYPE, AL_TARGET_ID, AL_OWNER_ID, AL_WORKSPACE_ID, AL_INPUTS,
	AL_CHANGES, AL_SUMMARY, AL_TXID, AL_NCOLS
};

/* agent.audit_log and its columns' numbers (AuditLogLookup) */
extern Oid	AuditLogRelid;
extern AttrNumber AuditLogAttnum[AL_NCOLS];

/* one audit row, before it is formed */
typedef struct AuditRow
{
	const char *actor_kind;
	const char *actor_id;
	const char *on_behalf_of;
	bool		has_run_id;
	int64		run_id;
	const char *surface;
	const char *action;
	const char *status;
	const char *error_code;
	const char *target_type;
	const char *target_id;
	const char *owner_id;
	const char *workspace_id;
	Jsonb	   *inputs;
	Jsonb	   *changes;
	const char *summary;
} AuditRow;

/* the writer (audit_writer.c) */
extern MemoryContext AuditPendingCxt;	/* the buffer's context (AuditPendingBegin) */
extern void AuditLogLookup(void);
extern void AuditPendingBegin(void);
extern void AuditPendingPush(HeapTuple tup_in_pend_cxt);
extern void AuditInsert(AuditRow *row);
extern void AuditFlush(void);

#endif							/* PG_AGENTS_AUDIT_INT_H */
