/*-------------------------------------------------------------------------
 *
 * tools_builtin.c
 *		The built-in tool family of the worker: read_resource,
 *		search_resources, write_resource and delegate_to_agent (whose
 *		definition context.c offers, with the agents it may reach).
 *
 * Every tool runs inside the executor's transaction, with the run's
 * identity GUCs set (ToolGateSetIdentity).  The gate (tool_gate.c: access,
 * approval, steps) runs as the worker; the data SQL itself runs in a
 * subtransaction as the NOLOGIN role agents_tool (ToolGateRunAsTool), so
 * that row-level security and audit triggers see the agent.  A failing
 * tool rolls back its subtransaction only and becomes an error result for
 * the model.
 *
 * Application tables are found through the resource registry filled by
 * agent.register_resource_table (RESOURCE_REGISTRY below).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "embed.h"
#include "llm/llm.h"
#include "runs/context.h"
#include "tool_family.h"
#include "tool_gate.h"
#include "util/guc.h"
#include "util/spi_util.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"


#define RESOURCE_REGISTRY	"agent.resource_tables"
#define SEARCH_DEFAULT_LIMIT 5
#define SEARCH_MAX_LIMIT	50
#define SNIPPET_CHARS		200

/* one registered table of a resource type (agent.resource_tables) */
typedef struct ResourceTable
{
	char	   *resource_type;
	char	   *tbl;			/* already quoted, schema-qualified */
	char	   *id_col;			/* quoted */
	char	   *title_col;		/* quoted */
	char	   *body_col;		/* quoted */
	char	   *tsv_col;		/* quoted, or NULL */
	char	   *config;			/* search configuration, as a literal */
	char	   *emb_col;		/* quoted embedding column, or NULL */
	char	   *vec_ns;			/* quoted schema of pgvector, or NULL without it */
	Oid			id_type;		/* the id column's type */
} ResourceTable;

/* json_t from a jsonb/text column of the current SPI row (new ref, or NULL) */
static json_t *
SpiJson(int row, int col)
{
	bool		isnull;
	char	   *s;

	SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, &isnull);
	if (isnull)
		return NULL;
	s = SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col);
	return json_loads(s, JSON_DECODE_ANY, NULL);
}

/* column col of row row of the last SPI result, as text (NULL for NULL) */
static char *
SpiText(int row, int col)
{
	return SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col);
}

/* a string argument of a call, or NULL when absent or not a string */
static pg_noinline const char *
InputString(json_t *input, const char *key)
{
	json_t	   *v = json_object_get(input, key);

	if (json_is_string(v))
		return json_string_value(v);
	return NULL;
}

/* ---------------------------------------------------------------------
 * Tool definitions offered to the model
 * ---------------------------------------------------------------------
 */

/* read_resource, search_resources and write_resource, as the model sees them */
static json_t *
BuildDefinitions(void)
{
	json_t	   *t = json_array();

	json_array_append_new(t, json_pack(
		"{s:s,s:s,s:{s:s,s:{s:{s:s,s:s},s:{s:s,s:s}},s:[s,s]}}",
		"name", "read_resource",
		"description", "Read one resource (its title and body) by type and id.",
		"parameters", "type", "object", "properties",
		"resource_type", "type", "string", "description", "Resource type, e.g. page.",
		"resource_id", "type", "string", "description", "Resource id.",
		"required", "resource_type", "resource_id"));
	json_array_append_new(t, json_pack(
		"{s:s,s:s,s:{s:s,s:{s:{s:s,s:s},s:{s:s,s:s},s:{s:s,s:s}},s:[s]}}",
		"name", "search_resources",
		"description", "Search the resources you may read (full text, or by meaning where embeddings are set up); returns ids, titles and snippets, best first.",
		"parameters", "type", "object", "properties",
		"query", "type", "string", "description", "Words to look for.",
		"resource_type", "type", "string", "description", "Optional: only this resource type.",
		"limit", "type", "integer", "description", "Maximum results (default 5, at most 50).",
		"required", "query"));
	json_array_append_new(t, json_pack(
		"{s:s,s:s,s:{s:s,s:{s:{s:s,s:s},s:{s:s,s:s},s:{s:s,s:s},s:{s:s,s:s}},s:[s,s,s]}}",
		"name", "write_resource",
		"description", "Replace the body (and optionally the title) of one resource.",
		"parameters", "type", "object", "properties",
		"resource_type", "type", "string", "description", "Resource type, e.g. page.",
		"resource_id", "type", "string", "description", "Resource id.",
		"body", "type", "string", "description", "New body.",
		"title", "type", "string", "description", "Optional new title.",
		"required", "resource_type", "resource_id", "body"));
	json_array_append_new(t, json_pack(
		"{s:s,s:s,s:{s:s,s:{s:{s:s,s:s},s:{s:s,s:s},s:{s:s,s:s}},s:[s,s,s]}}",
		"name", "update_row",
		"description", "Set properties (columns) of one row of a collection; only the columns the application declared writable.",
		"parameters", "type", "object", "properties",
		"resource_type", "type", "string", "description", "Resource type of the row, e.g. page.",
		"resource_id", "type", "string", "description", "Row id.",
		"properties", "type", "object", "description", "Column names and their new values, e.g. {\"status\": \"triaged\"}.",
		"required", "resource_type", "resource_id", "properties"));
	return t;
}

/*
 * The definitions never change: built once per worker, then appended to
 * each claimed run's own list (sharing the read-only definitions).
 */
static void
BuiltinAddDefinitions(json_t *tools, int64 agent_id, int64 run_id, bool can_delegate)
{
	static json_t *built = NULL;
	size_t		i;
	json_t	   *v;

	if (built == NULL)
		built = BuildDefinitions();
	json_array_foreach(built, i, v)
		json_array_append(tools, v);
}

/*
 * the registered tables of a resource type (every type for NULL), from
 * agent.resource_tables; false when the registry cannot be read
 */
static bool
LookupResourceTables(const char *rtype, List **out)
{
	Oid			types[1] = {TEXTOID};
	Datum		vals[1];
	char		nulls[1] = " ";
	int			rc;

	*out = NIL;
	vals[0] = rtype ? CStringGetTextDatum(rtype) : (Datum) 0;
	nulls[0] = rtype ? ' ' : 'n';
	/*
	 * The table by its schema and name as registered (never through the
	 * search path), the column names quoted; every function qualified.
	 */
	rc = SPI_execute_with_args("SELECT r.resource_type::pg_catalog.text, "
							   "pg_catalog.format('%I.%I', n.nspname, c.relname), "
							   "pg_catalog.quote_ident(r.id_column::pg_catalog.text), "
							   "pg_catalog.quote_ident(r.title_column::pg_catalog.text), "
							   "pg_catalog.quote_ident(r.body_column::pg_catalog.text), "
							   "pg_catalog.quote_ident(r.tsv_column::pg_catalog.text), "
							   "pg_catalog.quote_literal(r.search_config::pg_catalog.text), "
							   "pg_catalog.quote_ident(r.embedding_column::pg_catalog.text), "
							   "(SELECT pg_catalog.quote_ident(vn.nspname::pg_catalog.text) FROM pg_catalog.pg_extension x "
							   " JOIN pg_catalog.pg_namespace vn ON vn.oid OPERATOR(pg_catalog.=) x.extnamespace "
							   " WHERE x.extname OPERATOR(pg_catalog.=) 'vector'), "
							   "(SELECT a.atttypid FROM pg_catalog.pg_attribute a "
							   " WHERE a.attrelid OPERATOR(pg_catalog.=) c.oid AND a.attname OPERATOR(pg_catalog.=) r.id_column) "
							   "FROM " RESOURCE_REGISTRY " r "
							   "JOIN pg_catalog.pg_class c ON c.oid = r.tbl::pg_catalog.oid "
							   "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
							   "WHERE $1 IS NULL OR r.resource_type = $1 "
							   "ORDER BY 1, 2", 1, types, vals, nulls, true, 0);
	if (rc != SPI_OK_SELECT)
		return false;
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		ResourceTable *t = palloc(sizeof(ResourceTable));

		t->resource_type = SpiText(i, 1);
		t->tbl = SpiText(i, 2);
		t->id_col = SpiText(i, 3);
		t->title_col = SpiText(i, 4);
		t->body_col = SpiText(i, 5);
		t->tsv_col = SpiText(i, 6);
		t->config = SpiText(i, 7);
		t->emb_col = SpiText(i, 8);
		t->vec_ns = SpiText(i, 9);
		{
			bool		isnull;
			Datum		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 10, &isnull);

			t->id_type = isnull ? InvalidOid : DatumGetObjectId(d);
		}
		*out = lappend(*out, t);
	}
	return true;
}

/*
 * The condition that finds the row of id $1 (a text parameter) in table t,
 * in the id column's own type so that its index serves: an integer or uuid
 * id is the canonical text form of its value, as grants and the allowlist
 * policies read it (no sign but '-', no leading zero or blank, a lowercase
 * uuid), and a text that is not one names no row; other types compare as
 * text.
 */
static char *
IdCondition(const ResourceTable *t, const char *rid)
{
	const char *p = rid;
	int			n = 0;

	switch (t->id_type)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
			{
				uint64		v = 0;
				uint64		max;

				if (*p == '-')
					p++;
				for (; p[n] >= '0' && p[n] <= '9' && n < 20; n++)
					v = v * 10 + (p[n] - '0');
				if (n == 0 || n > 19 || p[n] != '\0' || (p[0] == '0' && (n > 1 || p != rid)))
					return pstrdup("false");
				max = t->id_type == INT2OID ? PG_INT16_MAX :
					t->id_type == INT4OID ? PG_INT32_MAX : PG_INT64_MAX;
				if (v > max + (p != rid ? 1 : 0))
					return pstrdup("false");
				/* a valid value of the column's type: the cast cannot fail */
				return psprintf("t.%s OPERATOR(pg_catalog.=) $1::pg_catalog.int8", t->id_col);
			}
		case UUIDOID:
			if (strlen(rid) != 36)
				return pstrdup("false");
			for (n = 0; n < 36; n++)
			{
				char		c = rid[n];

				if (n == 8 || n == 13 || n == 18 || n == 23 ? c != '-' :
					!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
					return pstrdup("false");
			}
			return psprintf("t.%s OPERATOR(pg_catalog.=) $1::pg_catalog.uuid", t->id_col);
		default:
			return psprintf("t.%s::pg_catalog.text OPERATOR(pg_catalog.=) $1", t->id_col);
	}
}

/*
 * read_resource's result from its SELECT (NULL when no row); arg is {type,
 * id}
 */
static json_t *
ReadRow(void *arg)
{
	const char **id = (const char **) arg;

	if (SPI_processed == 0)
		return NULL;
	return json_pack("{s:s,s:s,s:s?,s:s?}", "resource_type", id[0], "resource_id", id[1],
					 "title", SpiText(0, 1), "body", SpiText(0, 2));
}

/* search_resources' result: {"results": [...]} from its SELECT */
static json_t *
SearchRows(void *arg)
{
	json_t	   *list = json_array();

	for (uint64 i = 0; i < SPI_processed; i++)
		json_array_append_new(list, json_pack("{s:s?,s:s?,s:s?,s:s?}",
											  "resource_type", SpiText(i, 1),
											  "resource_id", SpiText(i, 2),
											  "title", SpiText(i, 3),
											  "snippet", SpiText(i, 4)));
	return json_pack("{s:o}", "results", list);
}

/* write_resource's result: how many rows its UPDATE changed */
static json_t *
WriteRows(void *arg)
{
	return json_pack("{s:I}", "updated", (json_int_t) SPI_processed);
}

/* ---------------------------------------------------------------------
 * The tools
 * ---------------------------------------------------------------------
 */

/*
 * What read_resource and write_resource check before their SQL: access in
 * mode, the approval gate, and the registered tables of the type.  true: go
 * ahead with *tables; false: the call ends with *outcome (and *result).
 */
static bool
ResourceGate(const ToolRun *tr, const char *tool, const char *mode, bool is_write,
			 const char *rtype, const char *rid, json_t *input, json_t **result,
			 TimestampTz started, List **tables, ToolOutcome *outcome)
{
	char	   *reason;

	*outcome = TOOL_DONE;
	if (!ToolGateAllowed(tr, rtype, rid, mode, &reason))
	{
		*result = ToolGateDeny(tr, tool, input, rtype, rid, reason, started);
		return false;
	}
	if (ToolGateHolds(tr, tool, is_write, input, result, started, outcome))
		return false;
	if (!LookupResourceTables(rtype, tables) || *tables == NIL)
	{
		*outcome = ToolGateFail(tr, tool, input, result, started,
								"no table is registered for resource type \"%s\"", rtype);
		return false;
	}
	return true;
}

/*
 * read_resource: access, approval, then the row as the tool role, in the
 * first registered table that has it
 */
static ToolOutcome
ToolRead(const ToolRun *tr, json_t *input, json_t **result, TimestampTz started)
{
	ToolOutcome gate;
	const char *rtype = InputString(input, "resource_type");
	const char *rid = InputString(input, "resource_id");
	ResourceTable *t;
	Oid			types[1] = {TEXTOID};
	Datum		vals[1];
	const char *ids[2];
	bool		failed;
	json_t	   *r;
	List	   *tables;
	ListCell   *lc;

	if (rtype == NULL || rid == NULL)
		return ToolGateFail(tr, "read_resource", input, result, started,
								"read_resource needs string arguments resource_type and resource_id");
	if (!ResourceGate(tr, "read_resource", "read", false, rtype, rid, input, result, started,
					  &tables, &gate))
		return gate;
	vals[0] = CStringGetTextDatum(rid);
	ids[0] = rtype;
	ids[1] = rid;
	r = NULL;
	failed = false;
	/* a resource type may be spread over several registered tables */
	foreach(lc, tables)
	{
		t = (ResourceTable *) lfirst(lc);
		r = ToolGateRunAsTool(psprintf("SELECT t.%s::pg_catalog.text, t.%s::pg_catalog.text FROM %s t "
							   "WHERE %s LIMIT 1",
							   t->title_col, t->body_col, t->tbl, IdCondition(t, rid)),
					  1, types, vals, NULL, SPI_OK_SELECT, ReadRow, ids, &failed);
		if (r != NULL)
			break;
	}
	if (r == NULL)
	{
		r = ToolGateError("resource %s %s not found", rtype, rid);
		failed = true;
	}
	*result = r;
	ToolGateRecordStep(tr->run_id, tr->workspace, failed ? "error" : "read", "read_resource", input,
					failed ? r : json_pack("{s:s,s:s}", "resource_type", rtype, "resource_id", rid),
					failed ? "error" : "ok", 0, started);
	return TOOL_DONE;
}

/* lets pgvector's index scans go on past filtered rows (0.8 and later) */
static void
SetIterativeScans(void *arg)
{
	const char *ns = (const char *) arg;

	/* loads pgvector's library, so that its settings are defined */
	if (SPI_execute(psprintf("SELECT '[0]'::%s.vector", ns), true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not load pgvector");
	if (SPI_execute("SELECT pg_catalog.set_config('hnsw.iterative_scan', 'strict_order', true), "
					"pg_catalog.set_config('hnsw.ef_search', '200', true), "
					"pg_catalog.set_config('ivfflat.iterative_scan', 'relaxed_order', true)",
					false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not set pgvector's iterative scans");
}

/*
 * The query's embedding for semantic search, or NULL: when no table of the
 * search has an embedding column (or pgvector is gone), when no embedding
 * model is set, or when embedding failed (*error then says why).
 */
static char *
SearchEmbedding(const ToolRun *tr, List *tables, const char *query, char **error)
{
	const char *model = json_string_value(json_object_get(tr->scope, "embedding_model"));
	const char *url = json_string_value(json_object_get(tr->scope, "llm_url"));
	const char *ns = NULL;
	ListCell   *lc;
	char	   *vec;
	char	   *message;

	*error = NULL;
	foreach(lc, tables)
	{
		ResourceTable *t = (ResourceTable *) lfirst(lc);

		if (t->emb_col && t->vec_ns)
			ns = t->vec_ns;
	}
	if (ns == NULL)
		return NULL;
	if (model == NULL || model[0] == '\0')
		model = pg_agents_embedding_model;
	if (model == NULL || model[0] == '\0')
		return NULL;
	if (url == NULL)
		url = pg_agents_llm_url;
	if (url != pg_agents_llm_url && !LlmUrlAllowed(url))
	{
		*error = pstrdup("the agent's LLM endpoint is not in pg_agents.llm_url_allowlist");
		return NULL;
	}
	vec = EmbedQuery(url, model, query, error);
	if (vec == NULL)
		return NULL;
	message = ToolGateInSubxact(SetIterativeScans, (void *) ns);
	if (message)
		elog(LOG, "pg_agents: search_resources without iterative index scans (pgvector 0.8 or later needed): %s",
			 message);
	return vec;
}

/*
 * search_resources: the readable rows of every registered table of the type,
 * ranked (full text, or semantic with an embedding model); its approval is
 * asked by BuiltinExecute
 */
static ToolOutcome
ToolSearch(const ToolRun *tr, json_t *input, json_t **result, TimestampTz started)
{
	const char *query = InputString(input, "query");
	const char *rtype = InputString(input, "resource_type");
	json_t	   *jl = json_object_get(input, "limit");
	int			limit = json_is_integer(jl) ? (int) json_integer_value(jl) : SEARCH_DEFAULT_LIMIT;
	List	   *tables;
	ListCell   *lc;
	StringInfoData sql;
	Oid			types[6] = {TEXTOID, INT8OID, TEXTOID, TEXTOID, INT4OID, TEXTOID};
	Datum		vals[6];
	char		nulls[6] = "      ";
	bool		failed;
	json_t	   *r;
	json_t	   *summary;
	char	   *qvec;
	char	   *emb_error;

	if (query == NULL)
		return ToolGateFail(tr, "search_resources", input, result, started,
								"search_resources needs a string argument query");
	if (limit < 1)
		limit = 1;
	if (limit > SEARCH_MAX_LIMIT)
		limit = SEARCH_MAX_LIMIT;
	if (!LookupResourceTables(rtype, &tables) || tables == NIL)
	{
		*result = json_pack("{s:[]}", "results");
		ToolGateRecordStep(tr->run_id, tr->workspace, "tool", "search_resources", input, *result, "ok", 0, started);
		return TOOL_DONE;
	}
	qvec = SearchEmbedding(tr, tables, query, &emb_error);

	/*
	 * Filtered before ranking: agent.can_access under the run's regime is
	 * in the WHERE clause of every branch, so ranking and the limit only
	 * ever see rows the run may read (and RLS applies on top, as the tool
	 * role).  The match is the leakproof agent.ts_match, so that under the
	 * allowlist a selective search starts from the text index and filters
	 * its candidates with the policy (docs/allowlist.md).
	 *
	 * Full text only (no query embedding): every matching row of every
	 * table, ranked by ts_rank.  Semantic search (a query embedding): a
	 * table with an embedding column gives its nearest readable rows by
	 * cosine distance (ORDER BY ... LIMIT, which an HNSW or IVFFlat index
	 * serves, with iterative scans so that filtered rows never shorten the
	 * list), a table without one its best full-text matches; the tables'
	 * lists are merged by reciprocal rank (by position in each list).
	 */
	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT s.rt, s.id, s.title, s.snippet FROM (");
	foreach(lc, tables)
	{
		ResourceTable *t = (ResourceTable *) lfirst(lc);
		char	   *tsv;

		if (lc != list_head(tables))
			appendStringInfoString(&sql, " UNION ALL ");
		if (qvec && t->emb_col && t->vec_ns)
		{
			char	   *dist = psprintf("t.%s::%s.vector OPERATOR(%s.<=>) $6::%s.vector",
										t->emb_col, t->vec_ns, t->vec_ns, t->vec_ns);

			appendStringInfo(&sql,
							 "SELECT v.rt, v.id, v.title, v.snippet, "
							 "pg_catalog.row_number() OVER (ORDER BY v.dist, v.id) AS rank FROM ("
							 "SELECT %s::pg_catalog.text AS rt, t.%s::pg_catalog.text AS id, t.%s::pg_catalog.text AS title, "
							 "pg_catalog.left(t.%s::pg_catalog.text, %d) AS snippet, %s AS dist "
							 "FROM %s t WHERE agent.can_access($2, %s, t.%s::pg_catalog.text, 'read', $3, $4) "
							 "AND t.%s IS NOT NULL ORDER BY %s LIMIT $5) v",
							 quote_literal_cstr(t->resource_type), t->id_col, t->title_col,
							 t->body_col, SNIPPET_CHARS, dist,
							 t->tbl, quote_literal_cstr(t->resource_type), t->id_col,
							 t->emb_col, dist);
			continue;
		}
		if (t->tsv_col)
			tsv = psprintf("t.%s", t->tsv_col);
		else
			tsv = psprintf("pg_catalog.to_tsvector(%s::pg_catalog.regconfig, coalesce(t.%s::pg_catalog.text, '') "
						   "OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) coalesce(t.%s::pg_catalog.text, ''))",
						   t->config, t->title_col, t->body_col);
		if (qvec)
			appendStringInfoString(&sql, "SELECT f.rt, f.id, f.title, f.snippet, "
								   "pg_catalog.row_number() OVER (ORDER BY f.rank DESC, f.id) AS rank FROM (");
		appendStringInfo(&sql,
						 "SELECT %s::pg_catalog.text AS rt, t.%s::pg_catalog.text AS id, t.%s::pg_catalog.text AS title, "
						 "pg_catalog.left(t.%s::pg_catalog.text, %d) AS snippet, "
						 "pg_catalog.ts_rank(%s, pg_catalog.plainto_tsquery(%s::pg_catalog.regconfig, $1)) AS rank "
						 "FROM %s t WHERE agent.can_access($2, %s, t.%s::pg_catalog.text, 'read', $3, $4) "
						 "AND agent.ts_match(%s, pg_catalog.plainto_tsquery(%s::pg_catalog.regconfig, $1))",
						 quote_literal_cstr(t->resource_type), t->id_col, t->title_col,
						 t->body_col, SNIPPET_CHARS, tsv, t->config,
						 t->tbl, quote_literal_cstr(t->resource_type), t->id_col,
						 tsv, t->config);
		if (qvec)
			appendStringInfoString(&sql, " ORDER BY 5 DESC, 2 LIMIT $5) f");
	}
	if (qvec)
		appendStringInfoString(&sql, ") s ORDER BY s.rank, s.rt, s.id LIMIT $5");
	else
		appendStringInfoString(&sql, ") s ORDER BY s.rank DESC, s.rt, s.id LIMIT $5");

	vals[0] = CStringGetTextDatum(query);
	vals[1] = Int64GetDatum(tr->agent_id);
	vals[2] = CStringGetTextDatum(tr->regime);
	vals[3] = tr->user_id ? CStringGetTextDatum(tr->user_id) : (Datum) 0;
	nulls[3] = tr->user_id ? ' ' : 'n';
	vals[4] = Int32GetDatum(limit);
	vals[5] = qvec ? CStringGetTextDatum(qvec) : (Datum) 0;
	nulls[5] = qvec ? ' ' : 'n';
	r = ToolGateRunAsTool(sql.data, qvec ? 6 : 5, types, vals, nulls, SPI_OK_SELECT, SearchRows, NULL, &failed);
	if (!failed && qvec)
		json_object_set_new(r, "ranking", json_string("semantic"));
	else if (!failed && emb_error)
		json_object_set_new(r, "semantic_search_unavailable", json_string(emb_error));
	*result = r;
	/* the step keeps ids, not titles or snippets */
	summary = json_object();
	if (!failed)
	{
		json_t	   *ids = json_array();
		size_t		i;
		json_t	   *v;

		json_array_foreach(json_object_get(r, "results"), i, v)
			json_array_append_new(ids, json_pack("{s:O,s:O}", "resource_type", json_object_get(v, "resource_type"),
												 "resource_id", json_object_get(v, "resource_id")));
		json_object_set_new(summary, "results", ids);
		if (qvec)
			json_object_set_new(summary, "ranking", json_string("semantic"));
		else if (emb_error)
			json_object_set_new(summary, "semantic_search_unavailable", json_string(emb_error));
	}
	else
		json_object_set(summary, "error", json_object_get(r, "error"));
	ToolGateRecordStep(tr->run_id, tr->workspace, failed ? "error" : "tool", "search_resources", input, summary,
					failed ? "error" : "ok", 0, started);
	json_decref(summary);
	return TOOL_DONE;
}

/*
 * write_resource: access (edit), approval, then the UPDATE as the tool role
 * in the first registered table that has the row
 */
static ToolOutcome
ToolWrite(const ToolRun *tr, json_t *input, json_t **result, TimestampTz started)
{
	const char *rtype = InputString(input, "resource_type");
	const char *rid = InputString(input, "resource_id");
	const char *body = InputString(input, "body");
	const char *title = InputString(input, "title");
	ResourceTable *t;
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		vals[3];
	bool		failed;
	json_t	   *r;
	ToolOutcome gate;
	List	   *tables;
	ListCell   *lc;

	if (rtype == NULL || rid == NULL || body == NULL)
		return ToolGateFail(tr, "write_resource", input, result, started,
								"write_resource needs string arguments resource_type, resource_id and body");
	if (!ResourceGate(tr, "write_resource", "edit", true, rtype, rid, input, result, started,
					  &tables, &gate))
		return gate;
	vals[0] = CStringGetTextDatum(rid);
	vals[1] = CStringGetTextDatum(body);
	vals[2] = title ? CStringGetTextDatum(title) : (Datum) 0;
	r = NULL;
	failed = false;
	foreach(lc, tables)
	{
		t = (ResourceTable *) lfirst(lc);
		if (r)
			json_decref(r);
		if (title)
			r = ToolGateRunAsTool(psprintf("UPDATE %s t SET %s = $2, %s = $3 WHERE %s",
								   t->tbl, t->body_col, t->title_col, IdCondition(t, rid)),
						  3, types, vals, NULL, SPI_OK_UPDATE, WriteRows, NULL, &failed);
		else
			r = ToolGateRunAsTool(psprintf("UPDATE %s t SET %s = $2 WHERE %s",
								   t->tbl, t->body_col, IdCondition(t, rid)),
						  2, types, vals, NULL, SPI_OK_UPDATE, WriteRows, NULL, &failed);
		if (failed || json_integer_value(json_object_get(r, "updated")) > 0)
			break;
	}
	if (!failed && json_integer_value(json_object_get(r, "updated")) == 0)
	{
		json_decref(r);
		r = ToolGateError("resource %s %s not found", rtype, rid);
		failed = true;
	}
	*result = r;
	ToolGateRecordStep(tr->run_id, tr->workspace, failed ? "error" : "write", "write_resource", input, r,
					failed ? "error" : "ok", 0, started);
	return TOOL_DONE;
}

/* the most properties update_row sets at once, and the longest value */
#define UPDATE_ROW_MAX_PROPS	32
#define UPDATE_ROW_MAX_VALUE	10000

/* a writable column of a registered table (update_row) */
typedef struct WritableCol
{
	char	   *tbl;			/* schema.table, quoted */
	char	   *id_col;			/* quoted */
	char	   *col;			/* as named */
	char	   *type;			/* format_type of the column */
} WritableCol;

/* the writable columns of the registered tables of a type, by table */
static bool
LookupWritable(const char *rtype, List **out)
{
	Oid			types[1] = {TEXTOID};
	Datum		vals[1];
	int			rc;

	*out = NIL;
	vals[0] = CStringGetTextDatum(rtype);
	rc = SPI_execute_with_args("SELECT pg_catalog.format('%I.%I', n.nspname, c.relname), "
							   "pg_catalog.quote_ident(r.id_column::pg_catalog.text), "
							   "w.col::pg_catalog.text, pg_catalog.format_type(a.atttypid, a.atttypmod) "
							   "FROM " RESOURCE_REGISTRY " r "
							   "JOIN pg_catalog.pg_class c ON c.oid = r.tbl::pg_catalog.oid "
							   "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
							   "CROSS JOIN LATERAL pg_catalog.unnest(r.writable_columns) w(col) "
							   "JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) r.tbl "
							   " AND a.attname OPERATOR(pg_catalog.=) w.col AND a.attnum > 0 AND NOT a.attisdropped "
							   "WHERE r.resource_type OPERATOR(pg_catalog.=) $1 "
							   "ORDER BY 1, 3", 1, types, vals, NULL, true, 0);
	if (rc != SPI_OK_SELECT)
		return false;
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		WritableCol *w = palloc(sizeof(WritableCol));

		w->tbl = SpiText(i, 1);
		w->id_col = SpiText(i, 2);
		w->col = SpiText(i, 3);
		w->type = SpiText(i, 4);
		*out = lappend(*out, w);
	}
	return true;
}

/* the writable column of table tbl named col, or NULL */
static WritableCol *
FindWritable(List *cols, const char *tbl, const char *col)
{
	ListCell   *lc;

	foreach(lc, cols)
	{
		WritableCol *w = (WritableCol *) lfirst(lc);

		if (strcmp(w->tbl, tbl) == 0 && strcmp(w->col, col) == 0)
			return w;
	}
	return NULL;
}

/* the writable column names of the type, for the model's error */
static char *
WritableNames(List *cols)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, cols)
	{
		WritableCol *w = (WritableCol *) lfirst(lc);

		if (strstr(buf.data, w->col) == NULL)
			appendStringInfo(&buf, "%s%s", buf.len > 0 ? ", " : "", w->col);
	}
	return buf.len > 0 ? buf.data : "none";
}

/*
 * update_row: access (edit, a row of a collection decided through its
 * collection), approval, then one UPDATE as the tool role of exactly the
 * given columns, each declared writable at registration, each value bound
 * as a parameter and cast to the column's type (a bad value is the model's
 * tool error); the audit trigger of the table records only what changed.
 */
static ToolOutcome
ToolUpdateRow(const ToolRun *tr, json_t *input, json_t **result, TimestampTz started)
{
	const char *rtype = InputString(input, "resource_type");
	const char *rid = InputString(input, "resource_id");
	json_t	   *props = json_object_get(input, "properties");
	List	   *tables;
	List	   *cols;
	ListCell   *lc;
	ToolOutcome gate;
	json_t	   *r = NULL;
	bool		failed = false;
	int			nprops;
	const char *key;
	json_t	   *val;

	if (rtype == NULL || rid == NULL || !json_is_object(props))
		return ToolGateFail(tr, "update_row", input, result, started,
							"update_row needs string arguments resource_type and resource_id and an object properties");
	nprops = (int) json_object_size(props);
	if (nprops == 0 || nprops > UPDATE_ROW_MAX_PROPS)
		return ToolGateFail(tr, "update_row", input, result, started,
							"update_row sets 1 to %d properties, not %d", UPDATE_ROW_MAX_PROPS, nprops);
	json_object_foreach(props, key, val)
	{
		if (json_is_object(val) || json_is_array(val))
			return ToolGateFail(tr, "update_row", input, result, started,
								"property \"%s\": a value is a string, a number, true, false or null", key);
		if (json_is_string(val) && json_string_length(val) > UPDATE_ROW_MAX_VALUE)
			return ToolGateFail(tr, "update_row", input, result, started,
								"property \"%s\": a value is at most %d bytes", key, UPDATE_ROW_MAX_VALUE);
	}
	if (!ResourceGate(tr, "update_row", "edit", true, rtype, rid, input, result, started,
					  &tables, &gate))
		return gate;
	if (!LookupWritable(rtype, &cols))
		return ToolGateFail(tr, "update_row", input, result, started,
							"the writable columns of resource type \"%s\" cannot be read", rtype);
	foreach(lc, tables)
	{
		ResourceTable *t = (ResourceTable *) lfirst(lc);
		StringInfoData sql;
		Oid		   *types = palloc(sizeof(Oid) * (nprops + 1));
		Datum	   *vals = palloc(sizeof(Datum) * (nprops + 1));
		char	   *nulls = palloc(nprops + 2);
		int			i = 1;
		const char *bad = NULL;

		initStringInfo(&sql);
		appendStringInfo(&sql, "UPDATE %s t SET ", t->tbl);
		types[0] = TEXTOID;
		vals[0] = CStringGetTextDatum(rid);
		nulls[0] = ' ';
		json_object_foreach(props, key, val)
		{
			WritableCol *w = FindWritable(cols, t->tbl, key);

			if (w == NULL)
			{
				bad = key;
				break;
			}
			types[i] = TEXTOID;
			nulls[i] = json_is_null(val) ? 'n' : ' ';
			if (json_is_string(val))
				vals[i] = CStringGetTextDatum(json_string_value(val));
			else if (json_is_null(val))
				vals[i] = (Datum) 0;
			else
			{
				char	   *txt = json_dumps(val, JSON_ENCODE_ANY);

				vals[i] = CStringGetTextDatum(txt ? txt : "");
				free(txt);
			}
			appendStringInfo(&sql, "%s%s = $%d::%s", i > 1 ? ", " : "",
							 quote_identifier(key), i + 1, w->type);
			i++;
		}
		nulls[i] = '\0';
		if (bad != NULL)
		{
			if (lnext(tables, lc) != NULL)
				continue;		/* another table of the type may have it */
			if (r)
				json_decref(r);
			r = ToolGateError("column \"%s\" of resource type %s is not writable (writable: %s)",
							  bad, rtype, WritableNames(cols));
			failed = true;
			break;
		}
		appendStringInfo(&sql, " WHERE t.%s::pg_catalog.text OPERATOR(pg_catalog.=) $1", t->id_col);
		if (r)
			json_decref(r);
		r = ToolGateRunAsTool(sql.data, i, types, vals, nulls, SPI_OK_UPDATE, WriteRows, NULL,
							  &failed);
		if (failed || json_integer_value(json_object_get(r, "updated")) > 0)
			break;
	}
	if (!failed && (r == NULL || json_integer_value(json_object_get(r, "updated")) == 0))
	{
		if (r)
			json_decref(r);
		r = ToolGateError("row %s %s not found", rtype, rid);
		failed = true;
	}
	*result = r;
	ToolGateRecordStep(tr->run_id, tr->workspace, failed ? "error" : "write", "update_row", input, r,
					   failed ? "error" : "ok", 0, started);
	return TOOL_DONE;
}

typedef struct DelegateArgs
{
	int64		run_id;
	int64		child_agent;
	const char *task;
	json_t	   *attachments;	/* the call's attachments, or NULL */
	int64		child_run;		/* out */
	char	   *refusal;		/* out: agent.try_delegate's refusal */
} DelegateArgs;

/*
 * agent.try_delegate returns a refusal instead of raising it, and itself
 * records the delegate (or denied) step on the parent and the audit row.
 */
static void
DelegateBody(void *p)
{
	DelegateArgs *a = (DelegateArgs *) p;
	Oid			types[4] = {INT8OID, INT8OID, TEXTOID, JSONBOID};
	Datum		vals[4];
	json_t	   *res;

	vals[0] = Int64GetDatum(a->run_id);
	vals[1] = Int64GetDatum(a->child_agent);
	vals[2] = CStringGetTextDatum(a->task);
	vals[3] = json_is_array(a->attachments) ? ToolGateJsonb(a->attachments)
		: DirectFunctionCall1(jsonb_in, CStringGetDatum("[]"));
	if (SPI_execute_with_args("SELECT agent.try_delegate($1, $2, $3, $4)::pg_catalog.text", 4, types, vals, NULL, false, 1)
		!= SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "agent.try_delegate returned no row");
	res = SpiJson(0, 1);
	if (json_is_true(json_object_get(res, "ok")))
		a->child_run = (int64) json_integer_value(json_object_get(res, "child_run_id"));
	else
	{
		const char *e = json_string_value(json_object_get(res, "error"));

		a->refusal = pstrdup(e ? e : "refused");
	}
	if (res)
		json_decref(res);
}

/*
 * delegate_to_agent: a child run of another agent, through
 * agent.try_delegate; the run then waits for the child (TOOL_WAIT_CHILD).
 */
static ToolOutcome
ToolDelegate(const ToolRun *tr, json_t *input, json_t **result, int64 *child,
			 TimestampTz started)
{
	ToolOutcome gate;
	const char *task = InputString(input, "task");
	int64		child_agent;
	DelegateArgs a = {0};
	char	   *errmsg_copy;

	if (ToolGateInputId(input, "agent_id", &child_agent) != TOOL_ID_OK || task == NULL ||
		(json_object_get(input, "attachments") && !json_is_array(json_object_get(input, "attachments"))))
		return ToolGateFail(tr, "delegate_to_agent", input, result, started,
								"delegate_to_agent needs an integer agent_id, a string task and optional attachments (an array)");
	/* context.c: only to an agent the run's identity may see */
	if (!ContextMayDelegateTo(tr, child_agent))
	{
		*result = ToolGateError("delegation refused: agent " INT64_FORMAT " is not one you may delegate to", child_agent);
		ToolGateRecordStep(tr->run_id, tr->workspace, "denied", "delegate_to_agent", input, *result, "denied", 0, started);
		return TOOL_DONE;
	}
	if (ToolGateHolds(tr, "delegate_to_agent", false, input, result, started, &gate))
		return gate;

	a.run_id = tr->run_id;
	a.child_agent = child_agent;
	a.task = task;
	a.attachments = json_object_get(input, "attachments");
	errmsg_copy = ToolGateInSubxact(DelegateBody, &a);
	if (errmsg_copy == NULL)
		errmsg_copy = a.refusal;

	if (errmsg_copy)
	{
		*result = ToolGateError("delegation refused: %s", errmsg_copy);
		return TOOL_DONE;
	}
	*child = a.child_run;
	return TOOL_WAIT_CHILD;
}

/*
 * The result of a child run, once terminal (*finished); a failure is a
 * motivated error result.
 */
static json_t *
ChildResult(int64 child_run_id, bool *finished)
{
	Oid			types[1] = {INT8OID};
	Datum		vals[1];
	char	   *status;
	json_t	   *output;
	char	   *error;

	*finished = false;
	vals[0] = Int64GetDatum(child_run_id);
	if (SPI_execute_with_args("SELECT r.status, r.output, r.error FROM agent.runs r WHERE r.id = $1",
							  1, types, vals, NULL, true, 1) != SPI_OK_SELECT)
		return NULL;
	if (SPI_processed == 0)
	{
		*finished = true;
		return ToolGateError("delegated run " INT64_FORMAT " no longer exists", child_run_id);
	}
	status = SpiText(0, 1);
	if (strcmp(status, "succeeded") != 0 && strcmp(status, "failed") != 0 &&
		strcmp(status, "budget_exceeded") != 0 && strcmp(status, "cancelled") != 0 &&
		strcmp(status, "expired") != 0)
		return NULL;
	*finished = true;
	output = SpiJson(0, 2);
	error = SpiText(0, 3);
	if (strcmp(status, "succeeded") == 0)
		return json_pack("{s:I,s:s,s:o}", "child_run_id", (json_int_t) child_run_id,
						 "status", status, "output", output ? output : json_null());
	if (output)
		json_decref(output);
	return json_pack("{s:I,s:s,s:s}", "child_run_id", (json_int_t) child_run_id, "status", status,
					 "error", psprintf("the delegated run %s: %s", status,
									   error ? error : "no reason given"));
}

/*
 * use_skill (offered by context assembly, context.c) is read_resource on a
 * skill: the same gate, step and audit.
 */
static ToolOutcome
ToolUseSkill(const ToolRun *tr, json_t *input, json_t **result, TimestampTz started)
{
	json_t	   *id = json_object_get(input, "skill_id");
	json_t	   *read;
	ToolOutcome oc;

	read = json_pack("{s:s,s:O}", "resource_type", "skill", "resource_id",
					 (json_is_string(id) || json_is_integer(id)) ? id : json_null());
	if (json_is_integer(id))
		json_object_set_new(read, "resource_id",
							json_string(psprintf("%" JSON_INTEGER_FORMAT, json_integer_value(id))));
	oc = ToolRead(tr, read, result, started);
	json_decref(read);
	return oc;
}

/* the names of the family; delegate_to_agent only for a run that may delegate */
static bool
BuiltinHandles(const ToolRun *tr, const char *name)
{
	return strcmp(name, "read_resource") == 0 ||
		strcmp(name, "search_resources") == 0 ||
		strcmp(name, "write_resource") == 0 ||
		strcmp(name, "update_row") == 0 ||
		(strcmp(name, "delegate_to_agent") == 0 && tr->can_delegate) ||
		strcmp(name, "use_skill") == 0;
}

/* one call of a built-in tool (ToolFamilyExecute) */
static ToolOutcome
BuiltinExecute(const ToolRun *tr, const char *name, json_t *input, json_t **result,
			   int64 *child_run_id, TimestampTz started)
{
	ToolOutcome gate;

	if (strcmp(name, "read_resource") == 0)
		return ToolRead(tr, input, result, started);
	if (strcmp(name, "search_resources") == 0)
	{
		if (ToolGateHolds(tr, name, false, input, result, started, &gate))
			return gate;
		return ToolSearch(tr, input, result, started);
	}
	if (strcmp(name, "write_resource") == 0)
		return ToolWrite(tr, input, result, started);
	if (strcmp(name, "update_row") == 0)
		return ToolUpdateRow(tr, input, result, started);
	if (strcmp(name, "use_skill") == 0)
		return ToolUseSkill(tr, input, result, started);
	return ToolDelegate(tr, input, result, child_run_id, started);
}

/* a run waiting for its child (delegate_to_agent): the child's result once it ended */
static json_t *
BuiltinChildPoll(int64 run_id, const char *workspace, int64 child_run_id)
{
	bool		finished;
	json_t	   *result = ChildResult(child_run_id, &finished);

	return finished ? result : NULL;
}

const ToolFamily ToolsBuiltinFamily = {
	.family = "built-in",
	.prefix = NULL,
	.handles = BuiltinHandles,
	.base_definitions = BuiltinAddDefinitions,
	.run_definitions = NULL,
	.execute = BuiltinExecute,
	.child_poll = BuiltinChildPoll,
};
