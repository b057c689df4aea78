/*-------------------------------------------------------------------------
 *
 * tools_rows.c
 *		The row tools of the worker that create things: add_row (a row of a
 *		collection, in a table registered with a parent by
 *		agent.register_resource_table) and add_comment (a comment, in the
 *		table registered by agent.register_comment_table).  update_row is
 *		in tools_builtin.c.
 *
 * Both go through the gate like every tool (tool_gate.c): access at edit
 * (add_row on the collection, add_comment on the commented resource), then
 * the approval policy; their SQL runs as the tool role agents_tool, every
 * value bound as a parameter and cast to its column's type, so that
 * row-level security, the audit triggers and the watchers see the agent.  A
 * target the run may not see at all (not granted, or of another workspace)
 * reads as not found, like one that does not exist.  Bad arguments and
 * failed statements are tool errors the model reads.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "tool_family.h"
#include "tool_gate.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

/* the most properties add_row sets, the longest value, the longest comment */
#define ADD_ROW_MAX_PROPS		32
#define ADD_ROW_MAX_VALUE		10000
#define COMMENT_MAX_BYTES		4000
#define ARG_MAX_BYTES			200

/* a string argument of a call, or NULL when absent or not a string */
static const char *
InputString(json_t *input, const char *key)
{
	json_t	   *v = json_object_get(input, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* column col of row row of the last SPI result, as text (NULL for NULL) */
static char *
SpiText(uint64 row, int col)
{
	return SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col);
}

/* ---------------------------------------------------------------------
 * Definitions
 * ---------------------------------------------------------------------
 */

static void
RowsAddDefinitions(json_t *tools, int64 agent_id, int64 run_id, bool can_delegate)
{
	static json_t *built = NULL;
	size_t		i;
	json_t	   *v;

	if (built == NULL)
	{
		built = json_array();
		json_array_append_new(built, json_pack(
			"{s:s,s:s,s:{s:s,s:{s:{s:s,s:s},s:{s:s,s:s},s:{s:s,s:s}},s:[s,s,s]}}",
			"name", "add_row",
			"description", "Add a row to a collection you may edit, setting only the columns the application declared writable; returns the new row's id.",
			"parameters", "type", "object", "properties",
			"resource_type", "type", "string", "description", "Resource type of the collection's rows, e.g. page.",
			"collection_id", "type", "string", "description", "Id of the collection.",
			"properties", "type", "object", "description", "Column names and values of the new row, e.g. {\"title\": \"Printer jam\", \"status\": \"new\"}.",
			"required", "resource_type", "collection_id", "properties"));
		json_array_append_new(built, json_pack(
			"{s:s,s:s,s:{s:s,s:{s:{s:s,s:s},s:{s:s,s:s},s:{s:s,s:s}},s:[s,s,s]}}",
			"name", "add_comment",
			"description", "Add a comment to a page or row you may edit.",
			"parameters", "type", "object", "properties",
			"resource_type", "type", "string", "description", "Resource type, e.g. page.",
			"resource_id", "type", "string", "description", "Resource id.",
			"text", "type", "string", "description", "The comment.",
			"required", "resource_type", "resource_id", "text"));
	}
	json_array_foreach(built, i, v)
		json_array_append(tools, v);
}

/* ---------------------------------------------------------------------
 * The gate, shared by both tools
 * ---------------------------------------------------------------------
 */

/*
 * Access at edit on rtype/rid, then the approval policy.  true: go ahead;
 * false: the call ends with *outcome (and *result).  A refusal is recorded
 * (a denied step, an audit row); when the run holds no grant at all the
 * model reads not_found, the error of a target that does not exist.
 */
static bool
RowsGate(const ToolRun *tr, const char *tool, const char *rtype, const char *rid,
		 const char *not_found, json_t *input, json_t **result, TimestampTz started,
		 ToolOutcome *outcome)
{
	char	   *reason;

	*outcome = TOOL_DONE;
	if (!ToolGateAllowed(tr, rtype, rid, "edit", &reason))
	{
		*result = ToolGateDeny(tr, tool, input, rtype, rid, reason, started);
		if (strcmp(reason, "not_granted") == 0)
		{
			json_decref(*result);
			*result = ToolGateError("%s", not_found);
		}
		return false;
	}
	return !ToolGateHolds(tr, tool, true, input, result, started, outcome);
}

/* the value of a property as a text parameter (SQL NULL for JSON null) */
static void
BindValue(json_t *val, Datum *d, char *null)
{
	*null = json_is_null(val) ? 'n' : ' ';
	if (json_is_string(val))
		*d = CStringGetTextDatum(json_string_value(val));
	else if (json_is_null(val))
		*d = (Datum) 0;
	else
	{
		char	   *txt = json_dumps(val, JSON_ENCODE_ANY);

		*d = CStringGetTextDatum(txt ? txt : "");
		free(txt);
	}
}

/* the first column of the first row of a tool statement's result, as text */
static json_t *
FirstValue(void *arg)
{
	char	   *v;

	if (SPI_processed == 0)
		return json_pack("{s:n}", "value");
	v = SpiText(0, 1);
	return json_pack("{s:s?}", "value", v);
}

/* how many rows an INSERT added */
static json_t *
Inserted(void *arg)
{
	return json_pack("{s:I}", "inserted", (json_int_t) SPI_processed);
}

/* ---------------------------------------------------------------------
 * add_row
 * ---------------------------------------------------------------------
 */

/* the table of rows of collections that add_row inserts into */
typedef struct RowsTable
{
	char	   *relid;			/* the table's oid, as text */
	char	   *tbl;			/* schema.table, quoted */
	char	   *id_col;			/* quoted */
	char	   *id_type;		/* format_type of the id column */
	char	   *parent_type;
	char	   *parent_col;		/* quoted, or NULL for a constant parent_id */
	char	   *parent_coltype; /* format_type of the parent column */
	char	   *ws_col;			/* quoted workspace_column, or NULL */
	char	   *ws_coltype;		/* its format_type */
	char	   *parent_id;		/* the constant, or NULL */
	char	   *id_default;		/* the SQL that makes a new id, or NULL */
	bool		id_always;		/* GENERATED ALWAYS AS IDENTITY */
} RowsTable;

/*
 * The registered table of rows of collections of the type that holds the
 * collection, with what makes a new id: the id column's identity sequence
 * or default.  The table registered with the collection as its constant
 * parent, else the single table with a parent column.  ROWS_NONE when no
 * table can hold it; ROWS_AMBIGUOUS when several can (*tables names them,
 * for the model's hint).
 */
typedef enum RowsLookup
{
	ROWS_FOUND,
	ROWS_NONE,
	ROWS_AMBIGUOUS
} RowsLookup;

static RowsLookup
LookupRowsTable(const char *rtype, const char *coll, RowsTable *t, char **tables)
{
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		vals[2];
	int			rc;
	uint64		n;
	bool		constant;

	*tables = NULL;
	vals[0] = CStringGetTextDatum(rtype);
	vals[1] = CStringGetTextDatum(coll);
	rc = SPI_execute_with_args("SELECT r.tbl::pg_catalog.oid::pg_catalog.text, "
							   "pg_catalog.format('%I.%I', n.nspname, c.relname), "
							   "pg_catalog.quote_ident(r.id_column::pg_catalog.text), "
							   "pg_catalog.format_type(a.atttypid, a.atttypmod), "
							   "r.parent_type, pg_catalog.quote_ident(r.parent_column::pg_catalog.text), "
							   "pg_catalog.format_type(pa.atttypid, pa.atttypmod), r.parent_id, "
							   "CASE WHEN a.attidentity IN ('a', 'd') THEN "
							   " pg_catalog.format('pg_catalog.nextval(%L::pg_catalog.regclass)', "
							   "  pg_catalog.pg_get_serial_sequence(pg_catalog.format('%I.%I', n.nspname, c.relname), r.id_column::pg_catalog.text)) "
							   " WHEN a.attgenerated OPERATOR(pg_catalog.=) '' THEN pg_catalog.pg_get_expr(d.adbin, d.adrelid) END, "
							   "a.attidentity OPERATOR(pg_catalog.=) 'a', "
							   "pg_catalog.quote_ident(r.workspace_column::pg_catalog.text), "
							   "pg_catalog.format_type(wa.atttypid, wa.atttypmod) "
							   "FROM agent.resource_tables r "
							   "JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) r.tbl::pg_catalog.oid "
							   "JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace "
							   "JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) r.tbl "
							   " AND a.attname OPERATOR(pg_catalog.=) r.id_column "
							   "LEFT JOIN pg_catalog.pg_attribute pa ON pa.attrelid OPERATOR(pg_catalog.=) r.tbl "
							   " AND pa.attname OPERATOR(pg_catalog.=) r.parent_column "
							   "LEFT JOIN pg_catalog.pg_attribute wa ON wa.attrelid OPERATOR(pg_catalog.=) r.tbl "
							   " AND wa.attname OPERATOR(pg_catalog.=) r.workspace_column "
							   "LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid OPERATOR(pg_catalog.=) r.tbl "
							   " AND d.adnum OPERATOR(pg_catalog.=) a.attnum "
							   "WHERE r.resource_type OPERATOR(pg_catalog.=) $1 AND r.parent_type IS NOT NULL "
							   "AND (r.parent_column IS NOT NULL OR r.parent_id OPERATOR(pg_catalog.=) $2) "
							   "ORDER BY r.parent_column IS NULL DESC, 2",
							   2, types, vals, NULL, true, 0);
	if (rc != SPI_OK_SELECT || SPI_processed == 0)
		return ROWS_NONE;

	/* the tables of the collection's constant come first, then the others */
	constant = SpiText(0, 6) == NULL;
	for (n = 0; n < SPI_processed && (SpiText(n, 6) == NULL) == constant; n++)
		;
	if (n > 1)
	{
		StringInfoData names;
		uint64		i;

		initStringInfo(&names);
		for (i = 0; i < n; i++)
			appendStringInfo(&names, "%s%s", i ? ", " : "", SpiText(i, 2));
		*tables = names.data;
		return ROWS_AMBIGUOUS;
	}
	t->relid = SpiText(0, 1);
	t->tbl = SpiText(0, 2);
	t->id_col = SpiText(0, 3);
	t->id_type = SpiText(0, 4);
	t->parent_type = SpiText(0, 5);
	t->parent_col = SpiText(0, 6);
	t->parent_coltype = SpiText(0, 7);
	t->parent_id = SpiText(0, 8);
	t->id_default = SpiText(0, 9);
	t->id_always = SpiText(0, 10) != NULL && strcmp(SpiText(0, 10), "t") == 0;
	t->ws_col = SpiText(0, 11);
	t->ws_coltype = SpiText(0, 12);
	return ROWS_FOUND;
}

/*
 * The type (format_type) of the writable column col of the table, or NULL;
 * *names lists the writable columns, for the model's error.
 */
static char *
WritableType(const char *relid, const char *col, char **names)
{
	Oid			types[2] = {OIDOID, TEXTOID};
	Datum		vals[2];
	int			rc;
	char	   *type = NULL;

	vals[0] = ObjectIdGetDatum(DatumGetObjectId(DirectFunctionCall1(oidin, CStringGetDatum(relid))));
	vals[1] = CStringGetTextDatum(col);
	rc = SPI_execute_with_args("SELECT (SELECT pg_catalog.format_type(a.atttypid, a.atttypmod) "
							   "  FROM pg_catalog.unnest(r.writable_columns) w(col) "
							   "  JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) r.tbl "
							   "   AND a.attname OPERATOR(pg_catalog.=) w.col AND a.attnum > 0 AND NOT a.attisdropped "
							   "  WHERE w.col::pg_catalog.text OPERATOR(pg_catalog.=) $2), "
							   "coalesce(pg_catalog.array_to_string(ARRAY(SELECT w.col::pg_catalog.text "
							   "  FROM pg_catalog.unnest(r.writable_columns) w(col) ORDER BY 1), ', '), '') "
							   "FROM agent.resource_tables r WHERE r.tbl::pg_catalog.oid OPERATOR(pg_catalog.=) $1",
							   2, types, vals, NULL, true, 1);
	*names = pstrdup("none");
	if (rc != SPI_OK_SELECT || SPI_processed == 0)
		return NULL;
	type = SpiText(0, 1);
	if (SpiText(0, 2) != NULL && SpiText(0, 2)[0] != '\0')
		*names = SpiText(0, 2);
	return type;
}

/*
 * add_row: access (edit on the collection), approval, then a new id (the id
 * column's identity sequence or default, evaluated as the tool role) and one
 * INSERT as the tool role of the row's id, its collection and exactly the
 * given columns, each declared writable, each value bound and cast to its
 * column's type.  The new row is a row of the collection: it has the
 * collection's access, and the table's watchers and audit see the agent.
 */
static ToolOutcome
ToolAddRow(const ToolRun *tr, json_t *input, json_t **result, TimestampTz started)
{
	const char *rtype = InputString(input, "resource_type");
	const char *coll = InputString(input, "collection_id");
	json_t	   *props = json_object_get(input, "properties");
	RowsTable	t;
	ToolOutcome gate;
	const char *key;
	json_t	   *val;
	int			nprops;
	Oid		   *types;
	Datum	   *vals;
	char	   *nulls;
	StringInfoData cols;
	StringInfoData params;
	int			i;
	bool		failed;
	json_t	   *r;
	char	   *newid;
	char	   *tables;

	if (rtype == NULL || coll == NULL || !json_is_object(props))
		return ToolGateFail(tr, "add_row", input, result, started,
							"add_row needs string arguments resource_type and collection_id and an object properties");
	if (strlen(rtype) > ARG_MAX_BYTES || strlen(coll) > ARG_MAX_BYTES || coll[0] == '\0')
		return ToolGateFail(tr, "add_row", input, result, started,
							"resource_type and collection_id are 1 to %d bytes", ARG_MAX_BYTES);
	nprops = (int) json_object_size(props);
	if (nprops > ADD_ROW_MAX_PROPS)
		return ToolGateFail(tr, "add_row", input, result, started,
							"add_row sets at most %d properties, not %d", ADD_ROW_MAX_PROPS, nprops);
	json_object_foreach(props, key, val)
	{
		if (json_is_object(val) || json_is_array(val))
			return ToolGateFail(tr, "add_row", input, result, started,
								"property \"%s\": a value is a string, a number, true, false or null", key);
		if (json_is_string(val) && json_string_length(val) > ADD_ROW_MAX_VALUE)
			return ToolGateFail(tr, "add_row", input, result, started,
								"property \"%s\": a value is at most %d bytes", key, ADD_ROW_MAX_VALUE);
	}
	switch (LookupRowsTable(rtype, coll, &t, &tables))
	{
		case ROWS_FOUND:
			break;
		case ROWS_NONE:
			return ToolGateFail(tr, "add_row", input, result, started,
								"no table of rows of collections is registered for resource type \"%s\"", rtype);
		case ROWS_AMBIGUOUS:
			*result = ToolGateError("several tables of rows of resource type %s can hold collection %s", rtype, coll);
			json_object_set_new(*result, "hint",
								json_string(psprintf("The tables are %s. Register each collection's table with its constant parent_id, "
													 "or keep a single table with a parent_column for the type.", tables)));
			ToolGateRecordStep(tr->run_id, tr->workspace, "error", "add_row", input, *result, "error", 0, started);
			return TOOL_DONE;
	}
	if (!RowsGate(tr, "add_row", t.parent_type, coll,
				  psprintf("%s %s not found", t.parent_type, coll), input, result, started, &gate))
		return gate;

	/* the columns: each declared writable (never the id or the collection) */
	types = palloc(sizeof(Oid) * (nprops + 3));
	vals = palloc(sizeof(Datum) * (nprops + 3));
	nulls = palloc(nprops + 4);
	initStringInfo(&cols);
	initStringInfo(&params);
	appendStringInfo(&cols, "%s", t.id_col);
	appendStringInfo(&params, "$1::%s", t.id_type);
	i = 1;
	if (t.parent_col)
	{
		appendStringInfo(&cols, ", %s", t.parent_col);
		appendStringInfo(&params, ", $2::%s", t.parent_coltype);
		types[1] = TEXTOID;
		vals[1] = CStringGetTextDatum(coll);
		nulls[1] = ' ';
		i = 2;
	}
	/* a table of several workspaces: the row is the run's workspace's */
	if (t.ws_col)
	{
		appendStringInfo(&cols, ", %s", t.ws_col);
		appendStringInfo(&params, ", $%d::%s", i + 1, t.ws_coltype);
		types[i] = TEXTOID;
		vals[i] = CStringGetTextDatum(tr->workspace);
		nulls[i] = ' ';
		i++;
	}
	json_object_foreach(props, key, val)
	{
		char	   *names;
		char	   *type = WritableType(t.relid, key, &names);

		if (type == NULL)
		{
			*result = ToolGateError("column \"%s\" of resource type %s is not writable (writable: %s)",
									key, rtype, names);
			ToolGateRecordStep(tr->run_id, tr->workspace, "error", "add_row", input, *result, "error", 0, started);
			return TOOL_DONE;
		}
		types[i] = TEXTOID;
		BindValue(val, &vals[i], &nulls[i]);
		appendStringInfo(&cols, ", %s", quote_identifier(key));
		appendStringInfo(&params, ", $%d::%s", i + 1, type);
		i++;
	}
	nulls[i] = '\0';

	/* a new id, made as the tool role (the default is the table owner's SQL) */
	if (t.id_default == NULL)
		return ToolGateFail(tr, "add_row", input, result, started,
							"rows cannot be added to table %s: its id column has no default (an identity column, a serial or a uuid default makes the ids)",
							t.tbl);
	r = ToolGateRunAsTool(psprintf("SELECT (%s)::pg_catalog.text", t.id_default), 0, NULL, NULL, NULL,
						  SPI_OK_SELECT, FirstValue, NULL, &failed);
	if (!failed && !json_is_string(json_object_get(r, "value")))
	{
		json_decref(r);
		r = ToolGateError("the id default of table %s made no id", t.tbl);
		failed = true;
	}
	if (!failed)
	{
		newid = pstrdup(json_string_value(json_object_get(r, "value")));
		json_decref(r);
		types[0] = TEXTOID;
		vals[0] = CStringGetTextDatum(newid);
		nulls[0] = ' ';
		r = ToolGateRunAsTool(psprintf("INSERT INTO %s (%s)%s VALUES (%s)", t.tbl, cols.data,
									   t.id_always ? " OVERRIDING SYSTEM VALUE" : "", params.data),
							  i, types, vals, nulls, SPI_OK_INSERT, Inserted, NULL, &failed);
		if (!failed)
		{
			json_decref(r);
			r = json_pack("{s:s,s:s,s:s}", "resource_type", rtype, "resource_id", newid,
						  "collection_id", coll);
		}
	}
	*result = r;
	ToolGateRecordStep(tr->run_id, tr->workspace, failed ? "error" : "write", "add_row", input, r,
					   failed ? "error" : "ok", 0, started);
	return TOOL_DONE;
}

/* ---------------------------------------------------------------------
 * add_comment
 * ---------------------------------------------------------------------
 */

/* does a registered table of the type hold the resource (as the tool role)? */
static bool
TargetExists(const char *rtype, const char *rid, bool *no_table, json_t **error)
{
	Oid			types[1] = {TEXTOID};
	Datum		vals[1];
	List	   *sqls = NIL;
	ListCell   *lc;
	int			rc;

	*no_table = false;
	*error = NULL;
	vals[0] = CStringGetTextDatum(rtype);
	rc = SPI_execute_with_args("SELECT pg_catalog.format('SELECT 1 FROM %I.%I t WHERE t.%I::pg_catalog.text OPERATOR(pg_catalog.=) $1 LIMIT 1', "
							   " n.nspname, c.relname, r.id_column) "
							   "FROM agent.resource_tables r "
							   "JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) r.tbl::pg_catalog.oid "
							   "JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace "
							   "WHERE r.resource_type OPERATOR(pg_catalog.=) $1 ORDER BY r.tbl::pg_catalog.oid",
							   1, types, vals, NULL, true, 0);
	if (rc != SPI_OK_SELECT)
		return false;
	for (uint64 i = 0; i < SPI_processed; i++)
		sqls = lappend(sqls, SpiText(i, 1));
	if (sqls == NIL)
	{
		*no_table = true;
		return false;
	}
	vals[0] = CStringGetTextDatum(rid);
	foreach(lc, sqls)
	{
		bool		failed;
		json_t	   *r = ToolGateRunAsTool((char *) lfirst(lc), 1, types, vals, NULL, SPI_OK_SELECT,
										  FirstValue, NULL, &failed);

		if (failed)
		{
			*error = r;
			return false;
		}
		if (json_is_string(json_object_get(r, "value")))
		{
			json_decref(r);
			return true;
		}
		json_decref(r);
	}
	return false;
}

typedef struct FireArgs
{
	const char *rtype;
	const char *rid;
	json_t	   *payload;
	const char *event_id;
	int64		runs;			/* out */
} FireArgs;

/* page.comment_added, as the application fires it for a person's comment */
static void
FireCommentAdded(void *p)
{
	FireArgs   *a = (FireArgs *) p;
	Oid			types[4] = {TEXTOID, TEXTOID, JSONBOID, TEXTOID};
	Datum		vals[4];
	bool		isnull;

	vals[0] = CStringGetTextDatum(a->rtype);
	vals[1] = CStringGetTextDatum(a->rid);
	vals[2] = ToolGateJsonb(a->payload);
	vals[3] = CStringGetTextDatum(a->event_id);
	/* the actor is the run's identity (pg_agents.actor): anti-loop applies */
	if (SPI_execute_with_args("SELECT pg_catalog.count(*) FROM agent.fire_event('page.comment_added', $1, $2, $3, "
							  "pg_catalog.current_setting('pg_agents.actor'), $4)",
							  4, types, vals, NULL, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "agent.fire_event returned no row");
	a->runs = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * add_comment: access (edit on the resource), approval, the resource found
 * in a registered table of its type (as the tool role), then one INSERT as
 * the tool role into the registered comment table (the author agent:<id>),
 * and page.comment_added fired as for a person's comment.
 */
static ToolOutcome
ToolAddComment(const ToolRun *tr, json_t *input, json_t **result, TimestampTz started)
{
	const char *rtype = InputString(input, "resource_type");
	const char *rid = InputString(input, "resource_id");
	const char *text = InputString(input, "text");
	ToolOutcome gate;
	bool		no_table;
	json_t	   *err;
	char	   *tbl;
	char	   *sql;
	Oid			types[5] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		vals[5];
	bool		failed;
	json_t	   *r;
	char		author[64];
	FireArgs	fa;
	char	   *fire_error;

	if (rtype == NULL || rid == NULL || text == NULL)
		return ToolGateFail(tr, "add_comment", input, result, started,
							"add_comment needs string arguments resource_type, resource_id and text");
	if (strlen(rtype) > ARG_MAX_BYTES || strlen(rid) > ARG_MAX_BYTES)
		return ToolGateFail(tr, "add_comment", input, result, started,
							"resource_type and resource_id are at most %d bytes", ARG_MAX_BYTES);
	if (text[0] == '\0' || strlen(text) > COMMENT_MAX_BYTES)
		return ToolGateFail(tr, "add_comment", input, result, started,
							"a comment is 1 to %d bytes, not %zu", COMMENT_MAX_BYTES, strlen(text));
	if (!RowsGate(tr, "add_comment", rtype, rid,
				  psprintf("resource %s %s not found", rtype, rid), input, result, started, &gate))
		return gate;

	/* the registered comment table */
	/* (with a workspace_column, the comment is the run's workspace's: $5) */
	if (SPI_execute("SELECT CASE WHEN x.workspace_column IS NULL THEN "
					" pg_catalog.format('INSERT INTO %I.%I (%I, %I, %I, %I) VALUES ($1, $2, $3, $4)', "
					"  n.nspname, c.relname, x.target_type_column, x.target_id_column, x.body_column, x.author_column) "
					" ELSE pg_catalog.format('INSERT INTO %I.%I (%I, %I, %I, %I, %I) VALUES ($1, $2, $3, $4, $5::%s)', "
					"  n.nspname, c.relname, x.target_type_column, x.target_id_column, x.body_column, x.author_column, "
					"  x.workspace_column, pg_catalog.format_type(wa.atttypid, wa.atttypmod)) END, "
					" pg_catalog.format('%I.%I', n.nspname, c.relname) "
					"FROM agent.comment_tables x "
					"JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) x.tbl::pg_catalog.oid "
					"JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace "
					"LEFT JOIN pg_catalog.pg_attribute wa ON wa.attrelid OPERATOR(pg_catalog.=) x.tbl "
					" AND wa.attname OPERATOR(pg_catalog.=) x.workspace_column LIMIT 1",
					true, 1) != SPI_OK_SELECT || SPI_processed == 0)
		return ToolGateFail(tr, "add_comment", input, result, started,
							"no comment table is registered (agent.register_comment_table)");
	sql = SpiText(0, 1);
	tbl = SpiText(0, 2);

	/* the resource itself, as the run may see it */
	if (!TargetExists(rtype, rid, &no_table, &err))
	{
		if (err == NULL)
			err = no_table ? ToolGateError("no table is registered for resource type \"%s\"", rtype)
				: ToolGateError("resource %s %s not found", rtype, rid);
		*result = err;
		ToolGateRecordStep(tr->run_id, tr->workspace, "error", "add_comment", input, err, "error", 0, started);
		return TOOL_DONE;
	}

	snprintf(author, sizeof(author), "agent:" INT64_FORMAT, tr->agent_id);
	vals[0] = CStringGetTextDatum(rtype);
	vals[1] = CStringGetTextDatum(rid);
	vals[2] = CStringGetTextDatum(text);
	vals[3] = CStringGetTextDatum(author);
	vals[4] = CStringGetTextDatum(tr->workspace);
	r = ToolGateRunAsTool(sql, 5, types, vals, NULL, SPI_OK_INSERT, Inserted, NULL, &failed);
	if (!failed)
	{
		json_decref(r);
		fa.rtype = rtype;
		fa.rid = rid;
		fa.payload = json_pack("{s:s,s:s,s:s,s:{s:s,s:s}}", "resource_type", rtype, "resource_id", rid,
							   "comment_table", tbl, "row", "author", author, "body", text);
		fa.event_id = psprintf("comment:run:" INT64_FORMAT ":" INT64_FORMAT, tr->run_id,
							   (int64) GetCurrentTimestamp());
		fa.runs = 0;
		fire_error = ToolGateInSubxact(FireCommentAdded, &fa);
		json_decref(fa.payload);
		r = json_pack("{s:b,s:s,s:s}", "commented", 1, "resource_type", rtype, "resource_id", rid);
		if (fire_error)
			json_object_set_new(r, "event_error",
								json_string(psprintf("page.comment_added could not be fired: %s", fire_error)));
	}
	*result = r;
	ToolGateRecordStep(tr->run_id, tr->workspace, failed ? "error" : "write", "add_comment", input, r,
					   failed ? "error" : "ok", 0, started);
	return TOOL_DONE;
}

/* ---------------------------------------------------------------------
 * The family
 * ---------------------------------------------------------------------
 */

static bool
RowsHandles(const ToolRun *tr, const char *name)
{
	return strcmp(name, "add_row") == 0 || strcmp(name, "add_comment") == 0;
}

static ToolOutcome
RowsExecute(const ToolRun *tr, const char *name, json_t *input, json_t **result,
			int64 *child_run_id, TimestampTz started)
{
	if (strcmp(name, "add_row") == 0)
		return ToolAddRow(tr, input, result, started);
	return ToolAddComment(tr, input, result, started);
}

const ToolFamily ToolsRowsFamily = {
	.family = "rows",
	.prefix = NULL,
	.handles = RowsHandles,
	.base_definitions = RowsAddDefinitions,
	.run_definitions = NULL,
	.execute = RowsExecute,
};
