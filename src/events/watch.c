/*-------------------------------------------------------------------------
 *
 * watch.c
 *		Table watchers: the C row trigger agent.watch_table installs.
 *
 * AFTER INSERT / UPDATE / DELETE FOR EACH ROW, it emits
 *	collection.row_added, collection.property_updated (only when a column
 *	changed; "changed" lists them) and collection.row_removed
 * with resource_id = the schema-qualified table name (on a Citus shard, the
 * distributed table's name: src/util/citus_shard.c) or, for a table registered as
 * the rows of a collection (agent.register_resource_table's parent_type),
 * resource_type = the parent type and resource_id = the row's collection id
 * (so that a trigger can watch one collection), and payload
 *	{"table", "row_id", "row", "old", "changed"}
 * and agent.mentioned for every [[agent:ID]] / [[fdagent:ID]] token that the
 * write added to a mention column (the column now holds more tokens naming
 * that agent than before: editing text around an existing mention does not
 * re-fire it, writing the mention again does).  The writing session's actor is the
 * event's actor.  When no trigger could match, it returns before building
 * any payload (a hash lookup), so watching a table costs little.
 *
 * Every event belongs to a workspace: the row's workspace column when the
 * table was watched with one (NULL there: unknown), else the writing
 * session's pg_agents.workspace.  An event whose workspace is unknown wakes
 * nobody and is counted (src/events/eventstats.c); the write goes on.
 *
 * Trigger arguments: resource_type, id_column, "workspace_column=<name>"
 * (empty name: none; absent in watchers installed before 0.3.0), mention
 * columns...
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/rel.h"

#include "access/access.h"
#include "events.h"
#include "util/citus_shard.h"
#include "util/jsonb_build.h"
#include "util/relcheck.h"

PG_FUNCTION_INFO_V1(pg_agents_watch_row);

typedef struct WatchState
{
	Oid			relid;
	char	   *table;			/* schema.table */
	char	   *resource_type;
	AttrNumber	id_attno;
	Oid			id_outfunc;
	AttrNumber	ws_attno;		/* 0: the session's workspace */
	Oid			ws_outfunc;
	int			nmention;
	AttrNumber *mention_attnos;
	Oid		   *mention_outfuncs;
	FmgrInfo	to_jsonb;
	/* rows of a collection (agent.register_resource_table's parent) */
	char	   *parent_type;	/* NULL: the events are on the table */
	AttrNumber	parent_attno;	/* the row's collection column, or 0 */
	Oid			parent_outfunc;
	char	   *parent_id;		/* the one collection of the table, or NULL */
} WatchState;

static uint64 watch_seq = 0;

#define WS_ARG_PREFIX "workspace_column="

/*
 * Watch states outlive a statement: they are kept per trigger OID in a
 * backend-wide hash, dropped when the table's relcache entry is invalidated
 * (ALTER TABLE, DROP, CREATE OR REPLACE TRIGGER).
 */
typedef struct WatchCacheEntry
{
	Oid			tgoid;
	WatchState *st;
} WatchCacheEntry;

static HTAB *watch_cache = NULL;
static MemoryContext watch_cxt = NULL;

/*
 * relcache invalidation: forgets the watch state of the relation (every
 * state for InvalidOid)
 */
static void
WatchInvalCallback(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS seq;
	WatchCacheEntry *e;

	if (watch_cache == NULL)
		return;
	hash_seq_init(&seq, watch_cache);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		if (relid == InvalidOid || e->st == NULL || e->st->relid == relid)
		{
			/* the state's memory is freed with watch_cxt resets only */
			(void) hash_search(watch_cache, &e->tgoid, HASH_REMOVE, NULL);
		}
	}
}

/*
 * The collection the table's rows belong to, from its registration
 * (agent.resource_tables.parent_type): read as the owner of schema "agent",
 * into st (allocated in the current memory context).  A registration
 * re-grants the table to agents_tool, which invalidates its relcache entry
 * and with it this state.
 */
static void
LoadParent(WatchState *st, TupleDesc desc)
{
	PgaElevation elev;
	Oid			types[1] = {OIDOID};
	Datum		vals[1];
	MemoryContext cxt = CurrentMemoryContext;
	int			rc;

	vals[0] = ObjectIdGetDatum(st->relid);
	RelcheckElevate(&elev);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_agents: SPI_connect failed");
	rc = SPI_execute_with_args("SELECT r.parent_type, r.parent_column::pg_catalog.text, r.parent_id "
							   "FROM agent.resource_tables r "
							   "WHERE r.tbl OPERATOR(pg_catalog.=) $1 AND r.parent_type IS NOT NULL",
							   1, types, vals, NULL, true, 1);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "pg_agents: watch registration lookup failed: %s", SPI_result_code_string(rc));
	if (SPI_processed > 0)
	{
		char	   *ptype = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		char	   *pcol = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
		char	   *pid = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3);
		MemoryContext old = MemoryContextSwitchTo(cxt);

		if (ptype != NULL && pcol != NULL)
		{
			AttrNumber	a = get_attnum(st->relid, pcol);
			bool		varlena;

			if (a > 0)
			{
				st->parent_type = pstrdup(ptype);
				st->parent_attno = a;
				getTypeOutputInfo(TupleDescAttr(desc, a - 1)->atttypid,
								  &st->parent_outfunc, &varlena);
			}
		}
		else if (ptype != NULL && pid != NULL)
		{
			st->parent_type = pstrdup(ptype);
			st->parent_id = pstrdup(pid);
		}
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	RelcheckRestore(&elev);
}

/*
 * the watch state of the trigger's table (its columns, functions and
 * settings), kept per trigger until a relcache invalidation of its table
 */
static WatchState *
GetState(FunctionCallInfo fcinfo, TriggerData *td)
{
	WatchState *st = (WatchState *) fcinfo->flinfo->fn_extra;
	Relation	rel = td->tg_relation;
	TupleDesc	desc = RelationGetDescr(rel);
	Trigger    *tg = td->tg_trigger;
	MemoryContext old;
	FuncExpr   *fexpr;
	int			i;
	bool		varlena;
	WatchCacheEntry *entry;
	bool		found;
	int			first_mention;
	char	   *shard_of;

	if (st != NULL && st->relid == RelationGetRelid(rel))
		return st;
	if (watch_cache == NULL)
	{
		HASHCTL		ctl;

		watch_cxt = AllocSetContextCreate(CacheMemoryContext, "pg_agents watch states",
										  ALLOCSET_SMALL_SIZES);
		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(WatchCacheEntry);
		ctl.hcxt = watch_cxt;
		watch_cache = hash_create("pg_agents watch states", 16, &ctl,
								  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		RelcheckRegisterCallback(WatchInvalCallback, (Datum) 0);
	}
	entry = hash_search(watch_cache, &tg->tgoid, HASH_FIND, NULL);
	if (entry != NULL && entry->st != NULL && entry->st->relid == RelationGetRelid(rel))
	{
		fcinfo->flinfo->fn_extra = entry->st;
		return entry->st;
	}
	if (tg->tgnargs < 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("agent._watch_row() needs the arguments resource_type and id_column"),
				 errhint("Install watchers with agent.watch_table().")));

	old = MemoryContextSwitchTo(watch_cxt);
	st = palloc0(sizeof(WatchState));
	st->relid = RelationGetRelid(rel);
	shard_of = CitusShardTableName(rel);
	st->table = psprintf("%s.%s", get_namespace_name(RelationGetNamespace(rel)),
						 shard_of ? shard_of : RelationGetRelationName(rel));
	st->resource_type = pstrdup(tg->tgargs[0]);
	st->id_attno = get_attnum(st->relid, tg->tgargs[1]);
	if (st->id_attno <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of watched table \"%s\" does not exist", tg->tgargs[1], st->table),
				 errhint("Watch the table again with agent.watch_table() and an existing id_column.")));
	getTypeOutputInfo(TupleDescAttr(desc, st->id_attno - 1)->atttypid, &st->id_outfunc, &varlena);
	first_mention = 2;
	if (tg->tgnargs > 2 && strncmp(tg->tgargs[2], WS_ARG_PREFIX, strlen(WS_ARG_PREFIX)) == 0)
	{
		const char *wscol = tg->tgargs[2] + strlen(WS_ARG_PREFIX);

		first_mention = 3;
		if (wscol[0] != '\0')
		{
			st->ws_attno = get_attnum(st->relid, wscol);
			if (st->ws_attno <= 0)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_COLUMN),
						 errmsg("workspace column \"%s\" of watched table \"%s\" does not exist", wscol, st->table),
						 errhint("Watch the table again with agent.watch_table() and an existing workspace_column.")));
			getTypeOutputInfo(TupleDescAttr(desc, st->ws_attno - 1)->atttypid, &st->ws_outfunc, &varlena);
		}
	}
	st->nmention = tg->tgnargs - first_mention;
	st->mention_attnos = palloc0(sizeof(AttrNumber) * Max(st->nmention, 1));
	st->mention_outfuncs = palloc0(sizeof(Oid) * Max(st->nmention, 1));
	for (i = 0; i < st->nmention; i++)
	{
		AttrNumber	a = get_attnum(st->relid, tg->tgargs[i + first_mention]);

		if (a <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("mention column \"%s\" of watched table \"%s\" does not exist",
							tg->tgargs[i + first_mention], st->table),
					 errhint("Watch the table again with agent.watch_table() and existing mention columns.")));
		st->mention_attnos[i] = a;
		getTypeOutputInfo(TupleDescAttr(desc, a - 1)->atttypid, &st->mention_outfuncs[i], &varlena);
	}

	LoadParent(st, desc);

	/* to_jsonb(record) of the table's row type */
	fmgr_info_cxt(F_TO_JSONB, &st->to_jsonb, watch_cxt);
	fexpr = makeFuncExpr(F_TO_JSONB, JSONBOID,
						 list_make1(makeNullConst(desc->tdtypeid, -1, InvalidOid)),
						 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
	fmgr_info_set_expr((Node *) fexpr, &st->to_jsonb);
	MemoryContextSwitchTo(old);

	/* a state replaced after an invalidation stays allocated until the backend ends: rare */
	entry = hash_search(watch_cache, &tg->tgoid, HASH_ENTER, &found);
	entry->st = st;
	fcinfo->flinfo->fn_extra = st;
	return st;
}

/* a row as jsonb (to_jsonb of the row type) */
static Jsonb *
RowToJsonb(WatchState *st, HeapTuple tup, TupleDesc desc)
{
	return DatumGetJsonbP(FunctionCall1(&st->to_jsonb, heap_copy_tuple_as_datum(tup, desc)));
}

typedef struct MentionCount
{
	int64		id;
	int			count;
} MentionCount;

/* Counts the [[agent:ID]] / [[fdagent:ID]] tokens of a text, per agent. */
static List *
MentionIds(const char *s, List *ids)
{
	const char *p = s;

	while ((p = strstr(p, "[[")) != NULL)
	{
		const char *q = p + 2;
		int64		id = 0;
		int			digits = 0;

		if (strncmp(q, "agent:", 6) == 0)
			q += 6;
		else if (strncmp(q, "fdagent:", 8) == 0)
			q += 8;
		else
		{
			p += 2;
			continue;
		}
		while (isdigit((unsigned char) *q) && digits <= 18)
		{
			id = id * 10 + (*q - '0');
			q++, digits++;
		}
		if (digits > 0 && digits <= 18 && q[0] == ']' && q[1] == ']' && id > 0)
		{
			ListCell   *lc;
			MentionCount *m = NULL;

			foreach(lc, ids)
				if (((MentionCount *) lfirst(lc))->id == id)
					m = (MentionCount *) lfirst(lc);
			if (m == NULL)
			{
				m = palloc0(sizeof(MentionCount));
				m->id = id;
				ids = lappend(ids, m);
			}
			m->count++;
		}
		p = q;
	}
	return ids;
}

/* how many tokens the list counts for agent id (0 when absent) */
static int
MentionCountOf(List *ids, int64 id)
{
	ListCell   *lc;

	foreach(lc, ids)
		if (((MentionCount *) lfirst(lc))->id == id)
			return ((MentionCount *) lfirst(lc))->count;
	return 0;
}

/*
 * the agents [[...]] mention column i of the row names, with their counts
 * (NIL for no row)
 */
static List *
ColumnMentions(WatchState *st, int i, HeapTuple tup, TupleDesc desc)
{
	bool		isnull;
	Datum		d;
	char	   *s;

	if (tup == NULL)
		return NIL;
	d = heap_getattr(tup, st->mention_attnos[i], desc, &isnull);
	if (isnull)
		return NIL;
	s = OidOutputFunctionCall(st->mention_outfuncs[i], d);
	if (strstr(s, "[[") == NULL)
		return NIL;
	return MentionIds(s, NIL);
}

/* one write of a watched row, and what the trigger makes of it */
typedef struct WatchedChange
{
	HeapTuple	newtup;			/* NULL for a delete */
	HeapTuple	oldtup;			/* NULL for an insert */
	const char *event;			/* collection.*, or NULL: nothing changed */
	bool		is_update;
	List	   *changed;		/* names of the changed columns (update) */
	List	   *mentioned;		/* int64 * of the agents mentioned anew */
	List	   *mention_cols;	/* the mention columns that name them */
	/* the payload's parts (BuildPayloadParts) */
	char	   *row_id;
	Jsonb	   *row;
	Jsonb	   *oldrow;
	char	   *event_id;
} WatchedChange;

/* whether a List of int64 * holds id */
static bool
MentionListed(List *ids, int64 id)
{
	ListCell   *lc;

	foreach(lc, ids)
		if (*(int64 *) lfirst(lc) == id)
			return true;
	return false;
}

/* Starts a payload object with table, row_id, row, old and changed. */
static void
PushBase(JsonbParseState **ps, WatchState *st, const WatchedChange *wc)
{
	pushJsonbValue(ps, WJB_BEGIN_OBJECT, NULL);
	JsonbBuildTextField(ps, "table", st->table);
	JsonbBuildTextField(ps, "row_id", wc->row_id);
	JsonbBuildKey(ps, "row");
	JsonbBuildJsonb(ps, wc->row);
	if (wc->oldrow)
	{
		JsonbBuildKey(ps, "old");
		JsonbBuildJsonb(ps, wc->oldrow);
	}
	if (wc->is_update)
	{
		JsonbBuildKey(ps, "changed");
		JsonbBuildStringArray(ps, wc->changed);
	}
}

/* the names of the columns whose value an update changed */
static List *
ChangedColumns(TupleDesc desc, HeapTuple oldtup, HeapTuple newtup)
{
	List	   *changed = NIL;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		bool		n1,
					n2;
		Datum		v1,
					v2;

		if (att->attisdropped)
			continue;
		v1 = heap_getattr(oldtup, i + 1, desc, &n1);
		v2 = heap_getattr(newtup, i + 1, desc, &n2);
		if (n1 != n2 || (!n1 && !datum_image_eq(v1, v2, att->attbyval, att->attlen)))
			changed = lappend(changed, pstrdup(NameStr(att->attname)));
	}
	return changed;
}

/*
 * The rows of the write and the event it is (NULL for an update that
 * changed nothing); false for a write that is none of insert, update and
 * delete.
 */
static bool
ClassifyChange(TriggerData *td, TupleDesc desc, WatchedChange *wc)
{
	memset(wc, 0, sizeof(*wc));
	if (TRIGGER_FIRED_BY_INSERT(td->tg_event))
	{
		wc->newtup = td->tg_trigtuple;
		wc->event = "collection.row_added";
	}
	else if (TRIGGER_FIRED_BY_UPDATE(td->tg_event))
	{
		wc->oldtup = td->tg_trigtuple;
		wc->newtup = td->tg_newtuple;
		wc->is_update = true;
		wc->changed = ChangedColumns(desc, wc->oldtup, wc->newtup);
		if (wc->changed != NIL)
			wc->event = "collection.property_updated";
	}
	else if (TRIGGER_FIRED_BY_DELETE(td->tg_event))
	{
		wc->oldtup = td->tg_trigtuple;
		wc->event = "collection.row_removed";
	}
	else
		return false;
	return true;
}

/*
 * The event's workspace: the row's column, else the session's; NULL (with
 * *why saying why) when there is none.
 */
static const char *
ChangeWorkspace(WatchState *st, TupleDesc desc, const WatchedChange *wc, const char **why)
{
	const char *workspace;
	bool		isnull;
	Datum		d;

	if (st->ws_attno > 0)
	{
		d = heap_getattr(wc->newtup ? wc->newtup : wc->oldtup, st->ws_attno, desc, &isnull);
		workspace = isnull ? NULL : OidOutputFunctionCall(st->ws_outfunc, d);
		if (workspace != NULL && workspace[0] == '\0')
			workspace = NULL;
		*why = "The row's workspace column is NULL.";
	}
	else
	{
		workspace = AccessSessionWorkspace();
		*why = "The table has no workspace column and the session sets no pg_agents.workspace.";
	}
	return workspace;
}

/* appends s to a List of strings unless it is already there */
static List *
AppendUniqueString(List *list, const char *s)
{
	ListCell   *lc;

	foreach(lc, list)
		if (strcmp((char *) lfirst(lc), s) == 0)
			return list;
	return lappend(list, pstrdup(s));
}

/*
 * The agents this write mentions anew (more [[...]] tokens for the agent
 * than the old row had) into wc->mentioned, and the mention columns that
 * hold them into wc->mention_cols.
 */
static void
AddedMentions(WatchState *st, TupleDesc desc, WatchedChange *wc)
{
	if (wc->newtup == NULL || st->nmention == 0 || (wc->is_update && wc->changed == NIL))
		return;
	for (int i = 0; i < st->nmention; i++)
	{
		List	   *now_ids = ColumnMentions(st, i, wc->newtup, desc);
		List	   *before;
		ListCell   *lc;

		if (now_ids == NIL)
			continue;
		before = ColumnMentions(st, i, wc->oldtup, desc);
		foreach(lc, now_ids)
		{
			MentionCount *m = (MentionCount *) lfirst(lc);

			if (m->count <= MentionCountOf(before, m->id))
				continue;
			if (!MentionListed(wc->mentioned, m->id))
			{
				int64	   *v = palloc(sizeof(int64));

				*v = m->id;
				wc->mentioned = lappend(wc->mentioned, v);
			}
			wc->mention_cols = AppendUniqueString(wc->mention_cols,
												  NameStr(TupleDescAttr(desc, st->mention_attnos[i] - 1)->attname));
		}
	}
}

/* the row's id, its jsonb forms and the event id of the write */
static void
BuildPayloadParts(WatchState *st, TupleDesc desc, WatchedChange *wc)
{
	HeapTuple	idtup = wc->newtup ? wc->newtup : wc->oldtup;
	bool		isnull;
	Datum		d;

	d = heap_getattr(idtup, st->id_attno, desc, &isnull);
	if (!isnull)
		wc->row_id = OidOutputFunctionCall(st->id_outfunc, d);
	if (wc->oldtup)
		wc->oldrow = RowToJsonb(st, wc->oldtup, desc);
	/* for a removed row, "row" is the row as it was */
	wc->row = wc->newtup ? RowToJsonb(st, wc->newtup, desc) : wc->oldrow;
	wc->event_id = psprintf(UINT64_FORMAT ":%s:%s:" UINT64_FORMAT,
							U64FromFullTransactionId(GetTopFullTransactionId()),
							st->table, wc->row_id ? wc->row_id : "", ++watch_seq);
}

/*
 * The resource an event is on: the row's collection for rows of a
 * collection (the new row's, the old one's for a removed row), else the
 * table.
 */
static void
EventResource(WatchState *st, TupleDesc desc, const WatchedChange *wc,
			  const char **rtype, const char **rid)
{
	*rtype = st->resource_type;
	*rid = st->table;
	if (st->parent_type == NULL)
		return;
	if (st->parent_id != NULL)
	{
		*rtype = st->parent_type;
		*rid = st->parent_id;
		return;
	}
	{
		HeapTuple	tup = wc->newtup ? wc->newtup : wc->oldtup;
		bool		isnull;
		Datum		d = heap_getattr(tup, st->parent_attno, desc, &isnull);

		if (isnull)
			return;				/* a row in no collection: on the table */
		*rtype = st->parent_type;
		*rid = OidOutputFunctionCall(st->parent_outfunc, d);
	}
}

/* the collection.* event of the write */
static void
DispatchChange(WatchState *st, const char *workspace, const WatchedChange *wc,
			   const char *rtype, const char *rid)
{
	JsonbParseState *ps = NULL;
	JsonbValue *res;

	PushBase(&ps, st, wc);
	res = pushJsonbValue(&ps, WJB_END_OBJECT, NULL);
	(void) EventsDispatch(workspace, wc->event, rtype, rid,
							JsonbValueToJsonb(res), NULL, wc->event_id);
}

/* one agent.mentioned event per agent the write mentions anew */
static void
DispatchMentions(WatchState *st, const char *workspace, const WatchedChange *wc,
				 const char *rtype, const char *rid)
{
	ListCell   *lc;

	foreach(lc, wc->mentioned)
	{
		int64		id = *(int64 *) lfirst(lc);
		JsonbParseState *ps = NULL;
		JsonbValue *res;

		PushBase(&ps, st, wc);
		JsonbBuildIntField(&ps, "agent_id", id);
		JsonbBuildKey(&ps, "columns");
		JsonbBuildStringArray(&ps, wc->mention_cols);
		res = pushJsonbValue(&ps, WJB_END_OBJECT, NULL);
		(void) EventsDispatch(workspace, "agent.mentioned", rtype, rid,
								JsonbValueToJsonb(res), NULL,
								psprintf("%s:mention:" INT64_FORMAT, wc->event_id, id));
	}
}

/*
 * agent._watch_row(): the AFTER ... FOR EACH ROW trigger of a watched
 * table.  Classifies the write, finds its workspace and the agents it
 * mentions, and dispatches its collection.* event (when a trigger could
 * match) and its agent.mentioned events.
 */
Datum
pg_agents_watch_row(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	WatchState *st;
	TupleDesc	desc;
	WatchedChange wc;
	bool		has_event;
	const char *workspace;
	const char *why;
	const char *rtype;
	const char *rid;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("agent._watch_row() must be called as a trigger")));
	if (!TRIGGER_FIRED_AFTER(td->tg_event) || !TRIGGER_FIRED_FOR_ROW(td->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("agent._watch_row() must be fired AFTER ... FOR EACH ROW")));

	st = GetState(fcinfo, td);
	desc = RelationGetDescr(td->tg_relation);
	if (!ClassifyChange(td, desc, &wc))
		return PointerGetDatum(NULL);

	workspace = ChangeWorkspace(st, desc, &wc, &why);
	EventResource(st, desc, &wc, &rtype, &rid);
	has_event = wc.event != NULL && workspace != NULL &&
		EventsHasCandidates(workspace, wc.event, rtype, rid);
	AddedMentions(st, desc, &wc);

	if (workspace == NULL)
	{
		/* wakes nobody, but is counted (and warned about) */
		if (wc.event != NULL)
			EventsCountUnknownWorkspace(wc.event, rtype, rid, why);
		if (wc.mentioned != NIL)
			EventsCountUnknownWorkspace("agent.mentioned", rtype, rid, why);
		return PointerGetDatum(NULL);
	}
	if (!has_event && wc.mentioned == NIL)
		return PointerGetDatum(NULL);

	BuildPayloadParts(st, desc, &wc);
	if (has_event)
		DispatchChange(st, workspace, &wc, rtype, rid);
	DispatchMentions(st, workspace, &wc, rtype, rid);
	return PointerGetDatum(NULL);
}
