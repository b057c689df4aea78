/*-------------------------------------------------------------------------
 *
 * audit_maint.c
 *		Maintenance of agent.audit_log: the retention purge, the move of rows
 *		out of the default partition into their month's, and the backdating
 *		of rows (tests), and the append-only guard of the log.  Each
 *		maintenance raises a backend-local flag that lets the guard allow
 *		its deletes or updates; SQL cannot set them, and no other file
 *		reads or writes them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/detoast.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "catalog/pg_class.h"
#include "nodes/parsenodes.h"
#include "nodes/primnodes.h"
#include "access/tupconvert.h"
#include "executor/execPartition.h"
#include "nodes/execnodes.h"
#include "commands/sequence.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "audit.h"
#include "audit_int.h"
#include "util/compat.h"
#include "util/guc.h"

PG_FUNCTION_INFO_V1(pg_agents_audit_guard);
PG_FUNCTION_INFO_V1(pg_agents_purge_audit);
PG_FUNCTION_INFO_V1(pg_agents_audit_backdate);
PG_FUNCTION_INFO_V1(pg_agents_audit_default_move);

/* ------------------------------------------------------------------------
 * The append-only guard, and the maintenance it lets through
 * ------------------------------------------------------------------------
 */

/* The error of any change to existing audit rows. */
static void
refuse_change(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("agent.audit_log is append-only"),
			 errdetail("Audit rows cannot be updated, deleted or truncated, not even by their owner or a superuser."),
			 errhint("Rows older than pg_agents.audit_retention_days are removed by agent.purge_audit().")));
}

/*
 * The maintenance in progress that the guard lets through: set only by
 * purge_audit / _audit_backdate / _audit_default_move below, never from
 * SQL, and read only by the guard.
 */
static bool audit_purge_active = false;
static TimestampTz audit_purge_cutoff = 0;
static bool audit_backdate_active = false;
static bool audit_move_active = false;
static TimestampTz audit_move_lo = 0;
static TimestampTz audit_move_hi = 0;

/*
 * agent._audit_guard(): the BEFORE UPDATE/DELETE/TRUNCATE trigger of the log
 * and its partitions; refuses every change but those of the maintenance in
 * progress (below).
 */
Datum
pg_agents_audit_guard(PG_FUNCTION_ARGS)
{
	TriggerData *td;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("agent._audit_guard() must be called as a trigger")));
	td = (TriggerData *) fcinfo->context;

	if (TRIGGER_FIRED_BY_TRUNCATE(td->tg_event))
		refuse_change();

	if (TRIGGER_FIRED_BY_DELETE(td->tg_event) && (audit_purge_active || audit_move_active || audit_backdate_active))
	{
		if (TRIGGER_FIRED_FOR_STATEMENT(td->tg_event))
			return PointerGetDatum(NULL);
		else
		{
			bool		isnull;
			TimestampTz at;

			AuditLogLookup();
			at = DatumGetTimestampTz(heap_getattr(td->tg_trigtuple, AuditLogAttnum[AL_AT],
												  RelationGetDescr(td->tg_relation), &isnull));
			/* the retention purge: only rows past the cut-off */
			if (audit_purge_active && !isnull && at < audit_purge_cutoff)
				return PointerGetDatum(td->tg_trigtuple);
			/* maintenance: rows of the new month out of the default partition */
			if (audit_move_active && !isnull && at >= audit_move_lo && at < audit_move_hi &&
				strcmp(RelationGetRelationName(td->tg_relation), "audit_log_default") == 0)
				return PointerGetDatum(td->tg_trigtuple);
			/* backdating moves a row to an older month's partition: checked as an UPDATE */
			if (audit_backdate_active)
				return PointerGetDatum(td->tg_trigtuple);
		}
	}
	if (TRIGGER_FIRED_BY_UPDATE(td->tg_event) && audit_backdate_active)
	{
		if (TRIGGER_FIRED_FOR_STATEMENT(td->tg_event))
			return PointerGetDatum(NULL);
		else
		{
			TupleDesc	desc = RelationGetDescr(td->tg_relation);
			bool		ok = true;
			int			i;

			AuditLogLookup();
			/* only "at" may move, and only back in time */
			for (i = 0; i < desc->natts && ok; i++)
			{
				Form_pg_attribute att = TupleDescAttr(desc, i);
				bool		on,
							nn;
				Datum		od = heap_getattr(td->tg_trigtuple, i + 1, desc, &on);
				Datum		nd = heap_getattr(td->tg_newtuple, i + 1, desc, &nn);

				if (att->attisdropped)
					continue;
				if (i + 1 == AuditLogAttnum[AL_AT])
					ok = !on && !nn && DatumGetTimestampTz(nd) <= DatumGetTimestampTz(od);
				else if (on || nn)
					ok = (on && nn);
				else
					ok = datumIsEqual(od, nd, att->attbyval, att->attlen);
			}
			if (ok)
				return PointerGetDatum(td->tg_newtuple);
		}
	}
	refuse_change();
	return PointerGetDatum(NULL);	/* not reached */
}

/*
 * agent.purge_audit(): runs agent.maintain_audit(), then removes rows older
 * than pg_agents.audit_retention_days (0 keeps everything): the monthly
 * partitions that end before the cut-off are dropped whole (no row is
 * scanned outside them), the older rows left (in the partition the cut-off
 * falls in, and in the default partition) deleted; returns how many rows
 * went.
 */
Datum
pg_agents_purge_audit(PG_FUNCTION_ARGS)
{
	int			days = pg_agents_audit_retention_days;
	TimestampTz cutoff;
	Datum		args[1];
	Oid			types[1] = {TIMESTAMPTZOID};
	int64		dropped = 0;
	int64		deleted = 0;
	int			nparts = 0;
	int			rc;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	rc = SPI_execute("SELECT agent.maintain_audit()", false, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not maintain agent.audit_log: %s", SPI_result_code_string(rc));
	if (days <= 0)
	{
		SPI_finish();
		PG_RETURN_INT64(0);
	}
	cutoff = GetCurrentTransactionStartTimestamp() - (TimestampTz) days * USECS_PER_DAY;
	args[0] = TimestampTzGetDatum(cutoff);

	rc = SPI_execute_with_args("SELECT dropped, pg_catalog.cardinality(partitions) "
							   "FROM agent._audit_drop_partitions($1)",
							   1, types, args, NULL, false, 0);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not drop partitions of agent.audit_log: %s", SPI_result_code_string(rc));
	{
		bool		isnull;

		dropped = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		nparts = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	}

	audit_purge_active = true;
	audit_purge_cutoff = cutoff;
	PG_TRY();
	{
		rc = SPI_execute_with_args("DELETE FROM agent.audit_log WHERE at < $1",
								   1, types, args, NULL, false, 0);
		if (rc != SPI_OK_DELETE)
			elog(ERROR, "could not purge agent.audit_log: %s", SPI_result_code_string(rc));
		deleted = (int64) SPI_processed;
	}
	PG_FINALLY();
	{
		audit_purge_active = false;
	}
	PG_END_TRY();
	SPI_finish();

	{
		char		inputs[192];
		int64		total = dropped + deleted;

		snprintf(inputs, sizeof(inputs),
				 "{\"retention_days\": %d, \"deleted\": " INT64_FORMAT
				 ", \"dropped_partitions\": %d}",
				 days, total, nparts);
		AuditEvent("audit.purge", "success", "audit_log", NULL, NULL, NULL,
						   DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(inputs))),
						   psprintf("purged " INT64_FORMAT " audit rows older than %d days (%d partitions dropped)",
									total, days, nparts),
						   NULL);
		PG_RETURN_INT64(total);
	}
}

/*
 * agent._audit_default_move(name text, lo timestamptz, hi timestamptz):
 * agent.maintain_audit() making the partition of [lo, hi) while the default
 * partition holds rows of that range: takes them out of the default
 * partition, has agent._audit_new_partition() make the partition, and
 * writes them again (same ids, same content), now into it.
 */
Datum
pg_agents_audit_default_move(PG_FUNCTION_ARGS)
{
	Datum		args[3];
	Oid			types[3] = {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	TupleDesc	desc;
	Relation	rel;
	uint64		n;
	uint64		i;
	int			rc;

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for function _audit_default_move")));
	args[0] = PG_GETARG_DATUM(0);
	args[1] = PG_GETARG_DATUM(1);
	args[2] = PG_GETARG_DATUM(2);
	AuditLogLookup();
	AuditPendingBegin();

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	audit_move_active = true;
	audit_move_lo = PG_GETARG_TIMESTAMPTZ(1);
	audit_move_hi = PG_GETARG_TIMESTAMPTZ(2);
	PG_TRY();
	{
		rc = SPI_execute_with_args("DELETE FROM agent.audit_log_default WHERE at >= $1 AND at < $2 "
								   "RETURNING *", 2, types + 1, args + 1, NULL, false, 0);
		if (rc != SPI_OK_DELETE_RETURNING)
			elog(ERROR, "could not move rows out of agent.audit_log_default: %s",
				 SPI_result_code_string(rc));
	}
	PG_FINALLY();
	{
		audit_move_active = false;
	}
	PG_END_TRY();

	/* the rows wait in the buffer of this subtransaction */
	rel = RelationIdGetRelation(AuditLogRelid);
	desc = RelationGetDescr(rel);
	if (SPI_tuptable->tupdesc->natts != desc->natts)
		elog(ERROR, "agent.audit_log_default does not have the columns of agent.audit_log");
	for (i = 0; i < SPI_processed; i++)
	{
		Datum	   *values = palloc(sizeof(Datum) * desc->natts);
		bool	   *nulls = palloc(sizeof(bool) * desc->natts);
		MemoryContext old;
		HeapTuple	tup;

		heap_deform_tuple(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, values, nulls);
		old = MemoryContextSwitchTo(AuditPendingCxt);
		tup = heap_form_tuple(desc, values, nulls);
		MemoryContextSwitchTo(old);
		/* not pending_add: no flush before the partition exists */
		AuditPendingPush(tup);
	}
	n = SPI_processed;
	RelationClose(rel);

	rc = SPI_execute_with_args("SELECT agent._audit_new_partition($1, $2, $3)",
							   3, types, args, NULL, false, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not make partition: %s", SPI_result_code_string(rc));
	SPI_finish();
	AuditFlush();
	PG_RETURN_INT64((int64) n);
}

/*
 * agent._audit_backdate(ids bigint[], age interval): superuser only; moves
 * "at" of the given rows back by age (tests of the retention purge), and
 * records that it did.
 */
Datum
pg_agents_audit_backdate(PG_FUNCTION_ARGS)
{
	Datum		args[2];
	Oid			types[2] = {INT8ARRAYOID, INTERVALOID};
	Interval   *age;
	int64		n = 0;
	int			rc;

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for function _audit_backdate"),
				 errdetail("Only a superuser may backdate audit rows.")));
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ids and age must not be null")));
	age = PG_GETARG_INTERVAL_P(1);
	if (age->time < 0 || age->day < 0 || age->month < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("age must not be negative"),
				 errdetail("Audit rows can only be moved back in time.")));
	args[0] = PG_GETARG_DATUM(0);
	args[1] = PG_GETARG_DATUM(1);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	audit_backdate_active = true;
	PG_TRY();
	{
		rc = SPI_execute_with_args("UPDATE agent.audit_log SET at = at - $2 WHERE id = ANY ($1)",
								   2, types, args, NULL, false, 0);
		if (rc != SPI_OK_UPDATE)
			elog(ERROR, "could not backdate agent.audit_log: %s", SPI_result_code_string(rc));
		n = (int64) SPI_processed;
	}
	PG_FINALLY();
	{
		audit_backdate_active = false;
	}
	PG_END_TRY();
	SPI_finish();

	AuditEvent("audit.backdate", "success", "audit_log", NULL, NULL, NULL, NULL,
					   psprintf("backdated " INT64_FORMAT " audit rows by %s", n,
								DatumGetCString(DirectFunctionCall1(interval_out,
																	PG_GETARG_DATUM(1)))),
					   NULL);
	PG_RETURN_INT64(n);
}
