/*-------------------------------------------------------------------------
 *
 * audit_trigger.c
 *		The audit triggers and named events: the C row trigger on audited
 *		tables, the identity of a row, agent._audit_event and the C entry
 *		point and agent._caller() (the append-only guard is audit_maint.c's,
 *		beside the maintenance it lets through).
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
#include "utils/guc.h"
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
#include "util/citus_shard.h"
#include "util/compat.h"
#include "util/guc.h"
#include "util/jsonb_build.h"
#include "util/redact.h"
#include "util/relcheck.h"

PG_FUNCTION_INFO_V1(pg_agents_audit_trigger);
PG_FUNCTION_INFO_V1(pg_agents_caller);
PG_FUNCTION_INFO_V1(pg_agents_audit_event);
PG_FUNCTION_INFO_V1(pg_agents_audit_table_event);

#define SUMMARY_MAX		500

/* per-trigger description of an audited table */
typedef struct AuditCol
{
	char	   *name;
	Oid			typid;
	Oid			basetypid;
	int16		typlen;
	bool		typbyval;
	char		kind;			/* b i f n s N j J d o, or 0 for dropped */
	bool		sensitive;
	FmgrInfo	out;
} AuditCol;

typedef struct AuditTrigInfo
{
	Oid			tgoid;			/* hash key */
	Oid			relid;
	bool		valid;
	MemoryContext cxt;
	int			natts;
	AuditCol   *cols;
	char	   *qualname;
	char	   *target_type;
	AttrNumber	owner_att;
	AttrNumber	workspace_att;
	bool		is_shard;		/* a Citus shard of a distributed table */
	int			npk;
	AttrNumber	pk[INDEX_MAX_KEYS];
	int			nkeyorder;
	int		   *keyorder;		/* live columns in jsonb key order */
} AuditTrigInfo;

static HTAB *trig_cache = NULL;
static MemoryContext audit_cxt = NULL;
static bool callback_registered = false;

/* an audited table changed: describe it again at its next row */
static void
audit_relcache_callback(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	AuditTrigInfo *e;

	if (trig_cache == NULL)
		return;
	hash_seq_init(&status, trig_cache);
	while ((e = hash_seq_search(&status)) != NULL)
		if (relid == InvalidOid || e->relid == relid)
			e->valid = false;
}

/*
 * Creates the audited tables' cache and registers its invalidation, once.
 */
static void
audit_init_cache(void)
{
	HASHCTL		ctl;

	if (audit_cxt == NULL)
		audit_cxt = AllocSetContextCreate(CacheMemoryContext, "pg_agents audit",
										  ALLOCSET_DEFAULT_SIZES);
	if (trig_cache == NULL)
	{
		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(AuditTrigInfo);
		ctl.hcxt = audit_cxt;
		trig_cache = hash_create("pg_agents audited tables", 64, &ctl,
								 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	if (!callback_registered)
	{
		RelcheckRegisterCallback(audit_relcache_callback, (Datum) 0);
		callback_registered = true;
	}
}

/* an identity GUC's value, NULL when unset or empty */
static inline const char *
guc_or_null(const char *v)
{
	return (v == NULL || v[0] == '\0') ? NULL : v;
}

bool		AuditAsWorker = false;

/*
 * Fills the identity columns from the session identity GUCs.
 */

static void
AuditIdentity(AuditRow *row)
{
	const char *a = guc_or_null(pg_agents_actor);
	const char *r = guc_or_null(pg_agents_run_id);
	const char *u = guc_or_null(pg_agents_acting_user);
	bool		agent_acts = (a != NULL && strncmp(a, "agent:", 6) == 0);

	/*
	 * The user an API function acts for (pg_agents.acting_user, set by the
	 * function from its by_user argument and bounded to its call) is the
	 * actor, whatever pg_agents.actor says, except in an agent's session:
	 * an agent stays the actor and the user becomes on_behalf_of, so that
	 * an agent can never be recorded as a human by naming one.
	 */
	if (u != NULL && !agent_acts)
	{
		row->actor_kind = "human";
		row->actor_id = u;
	}
	else if (a == NULL && AuditAsWorker)
	{
		/* the worker's own bookkeeping: no human acts */
		row->actor_kind = "system";
		row->actor_id = "worker";
	}
	else if (a == NULL)
	{
		row->actor_kind = "human";
		row->actor_id = NULL;
	}
	else if (strncmp(a, "agent:", 6) == 0)
	{
		row->actor_kind = "agent";
		row->actor_id = a + 6;
	}
	else if (strcmp(a, "system") == 0)
	{
		row->actor_kind = "system";
		row->actor_id = NULL;
	}
	else if (strncmp(a, "user:", 5) == 0)
	{
		row->actor_kind = "human";
		row->actor_id = a + 5;
	}
	else
	{
		row->actor_kind = "human";
		row->actor_id = a;
	}
	row->on_behalf_of = guc_or_null(pg_agents_on_behalf_of);
	if (row->on_behalf_of == NULL && u != NULL && agent_acts)
		row->on_behalf_of = u;
	row->surface = guc_or_null(pg_agents_surface);
	row->has_run_id = false;
	if (r != NULL)
	{
		char	   *end;

		errno = 0;
		row->run_id = strtoi64(r, &end, 10);
		if (errno != 0 || end == r || *end != '\0')
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid value for parameter \"pg_agents.run_id\": \"%s\"", r),
					 errdetail("A run id is a bigint."),
					 errhint("Set pg_agents.run_id to the id of the agent run, or reset it.")));
		row->has_run_id = true;
	}
	if (row->workspace_id == NULL)
		row->workspace_id = guc_or_null(pg_agents_workspace);
	/* '' is no workspace: the distribution column is never NULL (Citus) */
	if (row->workspace_id == NULL)
		row->workspace_id = "";
}

/* ------------------------------------------------------------------------
 * Named events: agent._audit_event and the C entry point
 * ------------------------------------------------------------------------
 */

/* a summary is redacted and kept short */
static const char *
AuditCleanSummary(const char *s)
{
	int			len;
	char	   *red;
	int			red_len;

	if (s == NULL)
		return NULL;
	len = strlen(s);
	red = RedactText(s, len, &red_len);
	if (red == NULL)
	{
		red = pstrdup(s);
		red_len = len;
	}
	if (red_len > SUMMARY_MAX)
	{
		int			keep = pg_mbcliplen(red, red_len, SUMMARY_MAX);

		red[keep] = '\0';
	}
	return red;
}

/*
 * Writes one audit row for an action of the extension (or of the worker):
 * the identity comes from the session GUCs, inputs are redacted.  Does
 * nothing when pg_agents.audit_enabled is off.
 */
void
AuditEvent(const char *action, const char *status,
				   const char *target_type, const char *target_id,
				   const char *workspace_id, const char *owner_id,
				   Jsonb *inputs, const char *summary, const char *error_code)
{
	AuditRow	row;

	if (!pg_agents_audit_enabled)
		return;
	if (action == NULL || action[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("audit action must not be empty")));
	if (status == NULL)
		status = "success";
	if (strcmp(status, "success") != 0 && strcmp(status, "error") != 0 &&
		strcmp(status, "denied") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid audit status \"%s\"", status),
				 errdetail("An audit status is success, error or denied.")));

	memset(&row, 0, sizeof(row));
	row.workspace_id = workspace_id;
	AuditIdentity(&row);
	row.action = action;
	row.status = status;
	row.error_code = error_code;
	row.target_type = target_type;
	row.target_id = target_id;
	row.owner_id = owner_id;
	row.inputs = inputs ? RedactJsonb(inputs) : NULL;
	row.summary = AuditCleanSummary(summary);
	AuditInsert(&row);
	AuditFlush();
}

/* argument n as a C string, NULL when absent or NULL */
static inline char *
text_arg(FunctionCallInfo fcinfo, int n)
{
	if (PG_NARGS() <= n || PG_ARGISNULL(n))
		return NULL;
	return text_to_cstring(PG_GETARG_TEXT_PP(n));
}

/*
 * agent._audit_event(p_action, p_status, p_target_type, p_target_id,
 *                    p_workspace_id, p_owner_id, p_inputs, p_summary,
 *                    p_error_code)
 */
Datum
pg_agents_audit_event(PG_FUNCTION_ARGS)
{
	AuditEvent(text_arg(fcinfo, 0), text_arg(fcinfo, 1),
					   text_arg(fcinfo, 2), text_arg(fcinfo, 3),
					   text_arg(fcinfo, 4), text_arg(fcinfo, 5),
					   PG_ARGISNULL(6) ? NULL : PG_GETARG_JSONB_P(6),
					   text_arg(fcinfo, 7), text_arg(fcinfo, 8));
	PG_RETURN_VOID();
}

/*
 * agent._audit_table_event(tbl regclass, action text, target_type text):
 * records audit.table / audit.untable; only the table's owner may.
 */
Datum
pg_agents_audit_table_event(PG_FUNCTION_ARGS)
{
	Oid			relid;
	char	   *action;
	char	   *target_type = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
	char	   *relname;
	char	   *nspname;
	char	   *qual;
	StringInfoData buf;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("table and action must not be null")));
	relid = PG_GETARG_OID(0);
	action = text_to_cstring(PG_GETARG_TEXT_PP(1));
	if (get_rel_name(relid) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	if (strcmp(action, "audit.table") != 0 && strcmp(action, "audit.untable") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid audit table action \"%s\"", action)));
	if (!pg_class_ownercheck(relid, GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of table %s", get_rel_name(relid))));
	relname = get_rel_name(relid);
	nspname = get_namespace_name(get_rel_namespace(relid));
	qual = quote_qualified_identifier(nspname, relname);
	initStringInfo(&buf);
	if (strcmp(action, "audit.table") == 0)
		appendStringInfo(&buf, "audit on %s (target type %s)", qual,
						 target_type ? target_type : relname);
	else
		appendStringInfo(&buf, "audit off %s", qual);
	AuditEvent(action, "success", "table", qual, NULL, NULL, NULL,
					   buf.data, NULL);
	PG_RETURN_VOID();
}

/* ------------------------------------------------------------------------
 * The row trigger
 * ------------------------------------------------------------------------
 */

/*
 * How a column is converted to JSON (like to_jsonb): a one-letter kind of its
 * base type.
 */
static char
column_kind(Oid typid)
{
	Oid			base = getBaseType(typid);

	switch (base)
	{
		case BOOLOID:
			return 'b';
		case INT2OID:
		case INT4OID:
		case INT8OID:
			return 'i';
		case FLOAT4OID:
		case FLOAT8OID:
			return 'f';
		case NUMERICOID:
			return 'n';
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
			return 's';
		case NAMEOID:
			return 'N';
		case JSONBOID:
			return 'j';
		case JSONOID:
			return 'J';
		case DATEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			return 'd';
		default:
			return 'o';
	}
}

/*
 * The attribute number of a live column by name, InvalidAttrNumber if none.
 */
static AttrNumber
find_column(TupleDesc desc, const char *name)
{
	int			i;

	if (name == NULL || name[0] == '\0')
		return InvalidAttrNumber;
	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), name) == 0)
			return att->attnum;
	}
	return InvalidAttrNumber;
}

/* whether column a's name comes before column b's among jsonb keys */
static bool
key_before(AuditCol *a, AuditCol *b)
{
	size_t		la = strlen(a->name);
	size_t		lb = strlen(b->name);

	if (la != lb)
		return la < lb;
	return memcmp(a->name, b->name, la) < 0;
}

/*
 * The description of the trigger's table (columns, kinds, sensitive names,
 * owner/workspace columns, primary key), built once and kept until the table
 * changes.
 */
static AuditTrigInfo *
trig_info(TriggerData *td)
{
	Trigger    *tg = td->tg_trigger;
	Relation	rel = td->tg_relation;
	TupleDesc	desc = RelationGetDescr(rel);
	AuditTrigInfo *e;
	bool		found;
	MemoryContext old;
	Oid			pkoid;
	int			i;
	char	   *shard_of;

	audit_init_cache();
	e = hash_search(trig_cache, &tg->tgoid, HASH_ENTER, &found);
	if (found && e->valid && e->natts == desc->natts)
		return e;
	if (found && e->cxt)
		MemoryContextDelete(e->cxt);
	e->valid = false;
	e->cxt = AllocSetContextCreate(audit_cxt, "pg_agents audited table",
								   ALLOCSET_SMALL_SIZES);
	e->relid = RelationGetRelid(rel);
	old = MemoryContextSwitchTo(e->cxt);

	/* on a Citus shard, the distributed table's name (src/util/citus_shard.c) */
	shard_of = CitusShardTableName(rel);
	e->is_shard = (shard_of != NULL);
	e->qualname = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
											 shard_of ? shard_of : RelationGetRelationName(rel));
	e->target_type = pstrdup((tg->tgnargs > 0 && tg->tgargs[0][0] != '\0')
							 ? tg->tgargs[0] : (shard_of ? shard_of : RelationGetRelationName(rel)));
	e->owner_att = find_column(desc, tg->tgnargs > 1 ? tg->tgargs[1] : NULL);
	e->workspace_att = find_column(desc, tg->tgnargs > 2 ? tg->tgargs[2] : NULL);
	e->natts = desc->natts;
	e->cols = palloc0(sizeof(AuditCol) * desc->natts);
	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		AuditCol   *c = &e->cols[i];
		Oid			outfn;
		bool		varlena;

		if (att->attisdropped)
			continue;
		c->name = pstrdup(NameStr(att->attname));
		c->typid = att->atttypid;
		c->basetypid = getBaseType(att->atttypid);
		c->typlen = att->attlen;
		c->typbyval = att->attbyval;
		c->kind = column_kind(att->atttypid);
		c->sensitive = RedactSensitiveName(c->name, strlen(c->name));
		getTypeOutputInfo(att->atttypid, &outfn, &varlena);
		fmgr_info_cxt(outfn, &c->out, e->cxt);
	}

	/*
	 * The live columns in the order jsonb keeps an object's keys (shorter
	 * first, then bytewise): a row pushed in that order is already sorted
	 * when the object ends, which saves the sort of its keys.
	 */
	e->keyorder = palloc(sizeof(int) * Max(desc->natts, 1));
	e->nkeyorder = 0;
	for (i = 0; i < desc->natts; i++)
	{
		int			j;

		if (e->cols[i].kind == 0)
			continue;
		for (j = e->nkeyorder; j > 0 && key_before(&e->cols[i], &e->cols[e->keyorder[j - 1]]); j--)
			e->keyorder[j] = e->keyorder[j - 1];
		e->keyorder[j] = i;
		e->nkeyorder++;
	}

	e->npk = 0;
	pkoid = RelationGetPrimaryKeyIndex(rel);
	if (OidIsValid(pkoid))
	{
		HeapTuple	itup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(pkoid));

		if (HeapTupleIsValid(itup))
		{
			Form_pg_index idx = (Form_pg_index) GETSTRUCT(itup);

			for (i = 0; i < idx->indnkeyatts && i < INDEX_MAX_KEYS; i++)
				if (idx->indkey.values[i] > 0)
					e->pk[e->npk++] = idx->indkey.values[i];
			ReleaseSysCache(itup);
		}
	}
	MemoryContextSwitchTo(old);
	e->valid = true;
	return e;
}

/* a column value as text (its output function) */
static char *
column_text(AuditCol *c, Datum d)
{
	if (c->kind == 's')
		return TextDatumGetCString(d);
	return OutputFunctionCall(&c->out, d);
}

/* pushes one column value, converted like to_jsonb and redacted */
static void
push_column(PgAgentsRedactor *r, JsonbParseState **ps, JsonbIteratorToken tok,
			AuditCol *c, Datum d, bool isnull, int depth)
{
	JsonbValue	v;

	if (isnull)
	{
		v.type = jbvNull;
		(void) pushJsonbValue(ps, tok, &v);
		return;
	}
	switch (c->kind)
	{
		case 'b':
			v.type = jbvBool;
			v.val.boolean = DatumGetBool(d);
			(void) pushJsonbValue(ps, tok, &v);
			return;
		case 'i':
			{
				int64		x;

				if (c->typlen == 2)
					x = DatumGetInt16(d);
				else if (c->typlen == 4)
					x = DatumGetInt32(d);
				else
					x = DatumGetInt64(d);
				v.type = jbvNumeric;
				v.val.numeric = int64_to_numeric(x);
				(void) pushJsonbValue(ps, tok, &v);
				return;
			}
		case 'f':
			{
				double		x = (c->typlen == 4) ? DatumGetFloat4(d) : DatumGetFloat8(d);

				if (isinf(x) || isnan(x))
					break;
				v.type = jbvNumeric;
				v.val.numeric = DatumGetNumeric(DirectFunctionCall1(float8_numeric,
																	Float8GetDatum(x)));
				(void) pushJsonbValue(ps, tok, &v);
				return;
			}
		case 'n':
			{
				Numeric		n = DatumGetNumeric(d);

				if (numeric_is_nan(n) || numeric_is_inf(n))
					break;
				v.type = jbvNumeric;
				v.val.numeric = n;
				(void) pushJsonbValue(ps, tok, &v);
				return;
			}
		case 's':
			{
				Size		raw = toast_raw_datum_size(d) - VARHDRSZ;
				text	   *t;

				/* only the scanned window of a long value is detoasted */
				if (raw > REDACT_MAX_STRING + REDACT_SCAN_MARGIN && VARATT_IS_EXTENDED(DatumGetPointer(d)))
					t = DatumGetTextPSlice(d, 0, REDACT_MAX_STRING + REDACT_SCAN_MARGIN);
				else
					t = DatumGetTextPP(d);
				RedactPushString(r, ps, tok, VARDATA_ANY(t), (int) raw,
										 c->sensitive);
				return;
			}
		case 'N':
			{
				char	   *s = NameStr(*DatumGetName(d));

				RedactPushString(r, ps, tok, s, strlen(s), c->sensitive);
				return;
			}
		case 'j':
			(void) RedactPushJsonb(r, ps, tok, DatumGetJsonbP(d), depth,
										   c->sensitive);
			return;
		case 'J':
			{
				Datum		jb = DirectFunctionCall1(jsonb_in,
													 CStringGetDatum(TextDatumGetCString(d)));

				(void) RedactPushJsonb(r, ps, tok, DatumGetJsonbP(jb), depth,
											   c->sensitive);
				return;
			}
		case 'd':
			{
				/* pushed strings are referenced, not copied: no stack buffer */
				char	   *buf = JsonEncodeDateTime(NULL, d, c->basetypid, NULL);

				RedactPushString(r, ps, tok, buf, strlen(buf), c->sensitive);
				return;
			}
		default:
			break;
	}
	/* everything else: the type's text output */
	{
		char	   *s = OutputFunctionCall(&c->out, d);

		RedactPushString(r, ps, tok, s, strlen(s), c->sensitive);
	}
}

/*
 * Whether two values of a column are the same (binary equality, detoasted).
 */
static bool
same_value(AuditCol *c, Datum a, bool an, Datum b, bool bn)
{
	if (an || bn)
		return an && bn;
	if (datumIsEqual(a, b, c->typbyval, c->typlen))
		return true;
	if (c->typlen == -1)
	{
		struct varlena *x = PG_DETOAST_DATUM_PACKED(a);
		struct varlena *y = PG_DETOAST_DATUM_PACKED(b);

		return VARSIZE_ANY_EXHDR(x) == VARSIZE_ANY_EXHDR(y) &&
			memcmp(VARDATA_ANY(x), VARDATA_ANY(y), VARSIZE_ANY_EXHDR(x)) == 0;
	}
	return false;
}

/*
 * The row's primary key as text: one column as is, several as a JSON array
 * (values/nulls: the row's columns, deformed).
 */
static char *
row_key(AuditTrigInfo *e, Datum *values, bool *nulls)
{
	StringInfoData buf;
	int			i;

	if (e->npk == 0)
		return NULL;
	if (e->npk == 1)
		return nulls[e->pk[0] - 1] ? NULL
			: column_text(&e->cols[e->pk[0] - 1], values[e->pk[0] - 1]);
	initStringInfo(&buf);
	appendStringInfoChar(&buf, '[');
	for (i = 0; i < e->npk; i++)
	{
		int			a = e->pk[i] - 1;

		if (i > 0)
			appendStringInfoChar(&buf, ',');
		if (nulls[a])
			appendStringInfoString(&buf, "null");
		else
			escape_json(&buf, column_text(&e->cols[a], values[a]));
	}
	appendStringInfoChar(&buf, ']');
	return buf.data;
}

/* a column of the row as text, NULL when the column is absent or NULL */
static char *
row_column_text(AuditTrigInfo *e, AttrNumber att, Datum *values, bool *nulls)
{
	if (att == InvalidAttrNumber || nulls[att - 1])
		return NULL;
	return column_text(&e->cols[att - 1], values[att - 1]);
}

/*
 * On a Citus worker, a shard's trigger runs in the backend Citus opened for
 * a coordinator session (application_name "citus_internal gpid=…"), whose
 * identity GUCs are only those Citus carried over: the SET LOCAL commands of
 * the transaction (citus.propagate_set_commands = 'local').  A value set on
 * the coordinator with set_config() or a session-level SET stays there, and
 * the row would be written with no actor: refuse it instead (issue 35).
 */
#define CITUS_INTERNAL_APP_PREFIX "citus_internal gpid="

static void
audit_require_shard_identity(AuditTrigInfo *e)
{
	if (!e->is_shard || application_name == NULL ||
		strncmp(application_name, CITUS_INTERNAL_APP_PREFIX,
				strlen(CITUS_INTERNAL_APP_PREFIX)) != 0)
		return;
	if (guc_or_null(pg_agents_actor) != NULL ||
		guc_or_null(pg_agents_acting_user) != NULL || AuditAsWorker)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("pg_agents.actor is not set on the node that holds this row of \"%s\"",
					e->qualname),
			 errdetail("The audit row of this change is written on a Citus worker, which sees only the identity settings Citus carried from the coordinator: a value set with set_config() or a session-level SET stays on the coordinator."),
			 errhint("Set the identity in the transaction with SET LOCAL pg_agents.actor = ... or agent.set_identity(), with citus.propagate_set_commands = 'local' (docs/scaling.md).")));
}

/*
 * agent._audit_trigger(): the triggers agent.audit_table installs.  A row
 * trigger buffers one audit row per changed row (its changes, redacted); the
 * statement triggers record a TRUNCATE and write the statement's buffer.
 */
Datum
pg_agents_audit_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *td;
	AuditTrigInfo *e;
	TupleDesc	desc;
	HeapTuple	tup;
	HeapTuple	oldtup = NULL;
	Datum	   *values;
	bool	   *nulls;
	AuditRow	row;
	PgAgentsRedactor r;
	JsonbParseState *ps = NULL;
	JsonbValue *res = NULL;
	StringInfoData summary;
	int			i,
				k;
	int			nchanged = 0;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("agent._audit_trigger() must be called as a trigger")));
	td = (TriggerData *) fcinfo->context;
	if (!TRIGGER_FIRED_AFTER(td->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("agent._audit_trigger() must be fired AFTER the change"),
				 errhint("Attach it with agent.audit_table().")));
	/*
	 * History is written only by the triggers agent.audit_table() attached
	 * (the function is not executable by PUBLIC; this also stops a superuser's
	 * stray CREATE TRIGGER, and a temporary table, which no one else sees).
	 */
	if (strncmp(td->tg_trigger->tgname, "pg_agents_audit", strlen("pg_agents_audit")) != 0 ||
		td->tg_relation->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("table \"%s\" is not audited by agent.audit_table()",
						RelationGetRelationName(td->tg_relation)),
				 errdetail("Trigger \"%s\" calls agent._audit_trigger() directly.",
						   td->tg_trigger->tgname),
				 errhint("Attach the audit trigger with agent.audit_table().")));
	if (!pg_agents_audit_enabled)
		return PointerGetDatum(NULL);

	e = trig_info(td);
	desc = RelationGetDescr(td->tg_relation);
	memset(&row, 0, sizeof(row));
	row.target_type = e->target_type;
	row.status = "success";
	initStringInfo(&summary);

	if (TRIGGER_FIRED_BY_TRUNCATE(td->tg_event))
	{
		row.action = "truncate";
		appendStringInfo(&summary, "truncate %s", e->qualname);
		row.summary = summary.data;
		audit_require_shard_identity(e);
		AuditIdentity(&row);
		AuditInsert(&row);
		AuditFlush();
		return PointerGetDatum(NULL);
	}
	if (!TRIGGER_FIRED_FOR_ROW(td->tg_event))
	{
		/* the statement's rows are all buffered: write them */
		AuditFlush();
		return PointerGetDatum(NULL);
	}

	RedactInit(&r);
	(void) pushJsonbValue(&ps, WJB_BEGIN_OBJECT, NULL);

	/* the row's columns, deformed once (natts: the trigger's description) */
	values = palloc(sizeof(Datum) * desc->natts);
	nulls = palloc(sizeof(bool) * desc->natts);
	if (TRIGGER_FIRED_BY_UPDATE(td->tg_event))
	{
		Datum	   *ovalues = palloc(sizeof(Datum) * desc->natts);
		bool	   *onulls = palloc(sizeof(bool) * desc->natts);

		oldtup = td->tg_trigtuple;
		tup = td->tg_newtuple;
		heap_deform_tuple(oldtup, desc, ovalues, onulls);
		heap_deform_tuple(tup, desc, values, nulls);
		row.action = "update";
		for (i = 0; i < e->natts; i++)
		{
			AuditCol   *c = &e->cols[i];

			if (c->kind == 0)
				continue;
			if (same_value(c, ovalues[i], onulls[i], values[i], nulls[i]))
				continue;
			nchanged++;
			JsonbBuildKey(&ps, c->name);
			(void) pushJsonbValue(&ps, WJB_BEGIN_OBJECT, NULL);
			JsonbBuildKey(&ps, "old");
			push_column(&r, &ps, WJB_VALUE, c, ovalues[i], onulls[i], 3);
			JsonbBuildKey(&ps, "new");
			push_column(&r, &ps, WJB_VALUE, c, values[i], nulls[i], 3);
			(void) pushJsonbValue(&ps, WJB_END_OBJECT, NULL);
			if (summary.len < SUMMARY_MAX)
			{
				if (nchanged > 1)
					appendBinaryStringInfo(&summary, ", ", 2);
				appendStringInfoString(&summary, c->name);
			}
		}
		if (nchanged == 0)
			return PointerGetDatum(NULL);	/* nothing changed: nothing written */
	}
	else
	{
		tup = td->tg_trigtuple;
		heap_deform_tuple(tup, desc, values, nulls);
		row.action = TRIGGER_FIRED_BY_INSERT(td->tg_event) ? "insert" : "delete";
		for (k = 0; k < e->nkeyorder; k++)
		{
			AuditCol   *c;

			i = e->keyorder[k];
			c = &e->cols[i];
			JsonbBuildKey(&ps, c->name);
			push_column(&r, &ps, WJB_VALUE, c, values[i], nulls[i], 2);
		}
		/*
		 * Pushed in key order, the row is the one pushed in column order as
		 * long as the payload budget was never used up (what each value
		 * takes does not depend on the order until then); otherwise the
		 * columns past the budget are those after it in column order.
		 */
		if (r.budget <= 0)
		{
			ps = NULL;
			RedactInit(&r);
			(void) pushJsonbValue(&ps, WJB_BEGIN_OBJECT, NULL);
			for (i = 0; i < e->natts; i++)
			{
				AuditCol   *c = &e->cols[i];

				if (c->kind == 0)
					continue;
				JsonbBuildKey(&ps, c->name);
				push_column(&r, &ps, WJB_VALUE, c, values[i], nulls[i], 2);
			}
		}
	}
	res = pushJsonbValue(&ps, WJB_END_OBJECT, NULL);
	row.changes = JsonbValueToJsonb(res);

	row.target_id = row_key(e, values, nulls);
	row.owner_id = row_column_text(e, e->owner_att, values, nulls);
	row.workspace_id = row_column_text(e, e->workspace_att, values, nulls);
	{
		/* "<action> <table>[ <key>][: <changed columns>]" */
		StringInfoData line;

		initStringInfo(&line);
		appendStringInfoString(&line, row.action);
		appendStringInfoChar(&line, ' ');
		appendStringInfoString(&line, e->qualname);
		if (row.target_id)
		{
			appendStringInfoChar(&line, ' ');
			appendStringInfoString(&line, row.target_id);
		}
		if (nchanged > 0)
		{
			appendBinaryStringInfo(&line, ": ", 2);
			appendBinaryStringInfo(&line, summary.data, summary.len);
		}
		row.summary = AuditCleanSummary(line.data);
	}
	audit_require_shard_identity(e);
	AuditIdentity(&row);
	AuditInsert(&row);
	return PointerGetDatum(NULL);
}

/*
 * agent._caller() RETURNS regrole: the role the session acts as (its SET
 * ROLE), whatever SECURITY DEFINER function is running.  The extension's
 * SECURITY DEFINER functions that act on an object of the caller's (such as
 * agent.audit_table on a table) check the caller's rights with it.
 */
Datum
pg_agents_caller(PG_FUNCTION_ARGS)
{
	PG_RETURN_OID(GetOuterUserId());
}
