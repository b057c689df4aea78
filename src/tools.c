/*-------------------------------------------------------------------------
 *
 * tools.c
 *		Built-in tools of the worker: read_resource, search_resources,
 *		write_resource and delegate_to_agent.
 *
 * Every tool runs inside the executor's transaction, with the run's
 * identity GUCs set (ToolsSetIdentity).  The gate (agent.explain_access
 * under the run's regime, the approval policy) runs as the worker; the
 * data SQL itself runs in a subtransaction as the NOLOGIN role
 * agents_tool (neither superuser nor BYPASSRLS), so that row-level
 * security and audit triggers see the agent.  A failing tool rolls back
 * its subtransaction only and becomes an error result for the model.
 *
 * Application tables are found through the resource registry filled by
 * agent.register_resource_table (RESOURCE_REGISTRY below).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "worker_int.h"
#include "spi_util.h"
#include "pg_agents.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"


#define RESOURCE_REGISTRY	"agent.resource_tables"
#define TOOL_ROLE			"agents_tool"
#define SEARCH_DEFAULT_LIMIT 5
#define SEARCH_MAX_LIMIT	50
#define SNIPPET_CHARS		200

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
} ResourceTable;

/* ---------------------------------------------------------------------
 * Small SPI and JSON helpers
 * ---------------------------------------------------------------------
 */

static SPIPlanPtr plain_plan = NULL;
static SPIPlanPtr redacted_plan = NULL;

/* whether agent.redact(jsonb) is installed; looked up again at every tick */
static int	redact_available = -1;

void
ToolsRefreshCatalog(void)
{
	redact_available = SpiUtilFunctionExists("agent.redact(jsonb)") ? 1 : 0;
}

static Datum
JsonbDatum(json_t *v)
{
	char	   *s = json_dumps(v ? v : json_null(), JSON_COMPACT | JSON_ENCODE_ANY);
	char	   *p = pstrdup(s);

	free(s);
	return DirectFunctionCall1(jsonb_in, CStringGetDatum(p));
}

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

static char *
SpiText(int row, int col)
{
	return SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col);
}

static json_t *
ErrorResult(const char *fmt,...) pg_attribute_printf(1, 2);

static json_t *
ErrorResult(const char *fmt,...)
{
	char		buf[1024];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return json_pack("{s:s}", "error", buf);
}

static pg_noinline const char *
InputString(json_t *input, const char *key)
{
	json_t	   *v = json_object_get(input, key);

	if (json_is_string(v))
		return json_string_value(v);
	return NULL;
}

/* ---------------------------------------------------------------------
 * Identity and steps
 * ---------------------------------------------------------------------
 */

static void
SetLocal(const char *name, const char *value)
{
	(void) set_config_option(name, value ? value : "", PGC_SUSET, PGC_S_SESSION,
							 GUC_ACTION_LOCAL, true, 0, false);
}

/*
 * The run's identity for the rest of the transaction: agent:<id> for an
 * autonomous run, user:<id> acting through the agent for a manual one.
 */
void
ToolsSetIdentity(const ToolRun *tr)
{
	char		buf[64];

	if (strcmp(tr->regime, "manual") == 0 && tr->user_id)
	{
		char	   *actor = psprintf("user:%s", tr->user_id);

		SetLocal("pg_agents.actor", actor);
		SetLocal("pg_agents.on_behalf_of", tr->user_id);
	}
	else
	{
		snprintf(buf, sizeof(buf), "agent:" INT64_FORMAT, tr->agent_id);
		SetLocal("pg_agents.actor", buf);
		SetLocal("pg_agents.on_behalf_of", "");
	}
	snprintf(buf, sizeof(buf), INT64_FORMAT, tr->run_id);
	SetLocal("pg_agents.run_id", buf);
	SetLocal("pg_agents.surface", "tool");
	SetLocal("pg_agents.workspace", tr->workspace);
}

/* one row of agent.run_steps; input/output redacted by agent.redact when present */
bool
ToolsRecordStepText(int64 run_id, const char *kind, const char *name,
					const char *input_json, const char *output_json,
					const char *status, int64 tokens, TimestampTz started)
{
	static const char *plain =
		"INSERT INTO agent.run_steps (run_id, seq, kind, name, input, output, status, tokens, started_at, finished_at) "
		"SELECT $1, coalesce(pg_catalog.max(s.seq), 0) + 1, $2, $3, $4, $5, $6, $7, $8, pg_catalog.clock_timestamp() "
		"FROM agent.run_steps s WHERE s.run_id = $1";
	static const char *redacted =
		"INSERT INTO agent.run_steps (run_id, seq, kind, name, input, output, status, tokens, started_at, finished_at) "
		"SELECT $1, coalesce(pg_catalog.max(s.seq), 0) + 1, $2, $3, agent.redact($4), agent.redact($5), $6, $7, $8, pg_catalog.clock_timestamp() "
		"FROM agent.run_steps s WHERE s.run_id = $1";
	Oid			types[8] = {INT8OID, TEXTOID, TEXTOID, JSONBOID, JSONBOID, TEXTOID, INT4OID, TIMESTAMPTZOID};
	Datum		vals[8];
	char		nulls[8] = "        ";
	int			rc;

	vals[0] = Int64GetDatum(run_id);
	vals[1] = CStringGetTextDatum(kind);
	vals[2] = name ? CStringGetTextDatum(name) : (Datum) 0;
	nulls[2] = name ? ' ' : 'n';
	vals[3] = input_json ? DirectFunctionCall1(jsonb_in, CStringGetDatum(input_json)) : (Datum) 0;
	nulls[3] = input_json ? ' ' : 'n';
	vals[4] = output_json ? DirectFunctionCall1(jsonb_in, CStringGetDatum(output_json)) : (Datum) 0;
	nulls[4] = output_json ? ' ' : 'n';
	vals[5] = status ? CStringGetTextDatum(status) : (Datum) 0;
	nulls[5] = status ? ' ' : 'n';
	vals[6] = Int32GetDatum((int32) Min(tokens, PG_INT32_MAX));
	vals[7] = TimestampTzGetDatum(started ? started : GetCurrentTimestamp());

	if (redact_available < 0)
		ToolsRefreshCatalog();
	if (redact_available)
		rc = SpiUtilExecPlan(&redacted_plan, redacted, 8, types, vals, nulls, false, 0);
	else
		rc = SpiUtilExecPlan(&plain_plan, plain, 8, types, vals, nulls, false, 0);
	if (rc != SPI_OK_INSERT)
		elog(ERROR, "could not record a run step: %s", SPI_result_code_string(rc));
	return true;
}

void
ToolsRecordStep(int64 run_id, const char *kind, const char *name,
				json_t *input, json_t *output, const char *status,
				int64 tokens, TimestampTz started)
{
	char	   *in = input ? json_dumps(input, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	char	   *out = output ? json_dumps(output, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	char	   *pin = in ? pstrdup(in) : NULL;
	char	   *pout = out ? pstrdup(out) : NULL;

	free(in);
	free(out);
	ToolsRecordStepText(run_id, kind, name, pin, pout, status, tokens, started);
}

/* ---------------------------------------------------------------------
 * Tool definitions offered to the model
 * ---------------------------------------------------------------------
 */

static json_t *
BuildToolsDefinitions(bool can_delegate)
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
	if (can_delegate)
		json_array_append_new(t, json_pack(
			"{s:s,s:s,s:{s:s,s:{s:{s:s,s:s},s:{s:s,s:s}},s:[s,s]}}",
			"name", "delegate_to_agent",
			"description", "Hand a task to one of the agents you may delegate to, and get its result.",
			"parameters", "type", "object", "properties",
			"agent_id", "type", "integer", "description", "Id of the agent to delegate to.",
			"task", "type", "string", "description", "What the agent must do, with the context it needs.",
			"required", "agent_id", "task"));
	return t;
}

/*
 * The definitions never change: built once per worker, then each claimed
 * run gets a shallow copy (its own array, sharing the read-only definitions)
 * to which it appends its MCP and teams tools.
 */
json_t *
ToolsDefinitions(bool can_delegate)
{
	static json_t *built[2] = {NULL, NULL};
	int			i = can_delegate ? 1 : 0;

	if (built[i] == NULL)
		built[i] = BuildToolsDefinitions(can_delegate);
	return json_copy(built[i]);
}

/* ---------------------------------------------------------------------
 * Gates
 * ---------------------------------------------------------------------
 */

/* agent.explain_access under the run's regime; *reason is palloc'd */
static bool
Allowed(const ToolRun *tr, const char *rtype, const char *rid, const char *mode, char **reason)
{
	Oid			types[6] = {INT8OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		vals[6];
	char		nulls[6] = "      ";
	int			rc;
	bool		isnull;
	bool		ok;

	vals[0] = Int64GetDatum(tr->agent_id);
	vals[1] = CStringGetTextDatum(rtype);
	vals[2] = CStringGetTextDatum(rid);
	vals[3] = CStringGetTextDatum(mode);
	vals[4] = CStringGetTextDatum(tr->regime);
	vals[5] = tr->user_id ? CStringGetTextDatum(tr->user_id) : (Datum) 0;
	nulls[5] = tr->user_id ? ' ' : 'n';
	rc = SPI_execute_with_args("SELECT e.allowed, e.reason FROM agent.explain_access($1, $2, $3, $4, $5, $6) e",
							   6, types, vals, nulls, false, 1);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
	{
		*reason = pstrdup("not_granted");
		return false;
	}
	ok = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	*reason = SpiText(0, 2);
	if (*reason == NULL)
		*reason = pstrdup(ok ? "granted" : "not_granted");
	return !isnull && ok;
}

/* a refusal: a denied step, an audit row; the model learns nothing more */
static json_t *
Deny(const ToolRun *tr, const char *tool, json_t *input, const char *rtype,
	 const char *rid, const char *reason, TimestampTz started)
{
	Oid			types[9] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID, TEXTOID, TEXTOID};
	Datum		vals[9];
	char		nulls[9] = "     n   ";
	json_t	   *out = json_pack("{s:s}", "reason", reason);
	char	   *summary = psprintf("%s refused: %s %s (%s)", tool, rtype, rid, reason);

	ToolsRecordStep(tr->run_id, "denied", tool, input, out, "denied", 0, started);
	json_decref(out);

	vals[0] = CStringGetTextDatum(psprintf("tool.%s", tool));
	vals[1] = CStringGetTextDatum("denied");
	vals[2] = CStringGetTextDatum(rtype);
	vals[3] = CStringGetTextDatum(rid);
	vals[4] = CStringGetTextDatum(tr->workspace);
	vals[5] = (Datum) 0;
	vals[6] = JsonbDatum(input);
	vals[7] = CStringGetTextDatum(summary);
	vals[8] = CStringGetTextDatum(reason);
	if (SPI_execute_with_args("SELECT agent._audit_event($1, $2, $3, $4, $5, $6, $7, $8, $9)",
							  9, types, vals, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not audit a refused tool call");
	return json_pack("{s:s}", "error", "access denied");
}

/*
 * What NeedsApproval decided for the call that goes through the gate next:
 * when only approval rules cover it (scope.approval_rules, approval_rules.c)
 * the gate asks their functions; in every other case (the static policy,
 * or a gate reached without NeedsApproval, as for a job deletion) the call
 * needs approval.  Reset at every tool call and by the gate itself.
 */
static bool gate_conditional = false;
static char gate_tool[256];

static bool
NeedsApproval(const ToolRun *tr, const char *tool, bool is_write)
{
	json_t	   *list = json_object_get(tr->scope, "needs_approval");
	size_t		i;
	json_t	   *v;

	gate_conditional = false;
	if (strcmp(tr->approval_mode, "all") == 0)
		return true;
	if (is_write && strcmp(tr->approval_mode, "writes") == 0)
		return true;
	json_array_foreach(list, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), tool) == 0)
			return true;
	if (ApprovalRulesCover(tr->scope, tool))
	{
		/* a name too long to remember is gated unconditionally: fail closed */
		if (strlen(tool) < sizeof(gate_tool))
		{
			strlcpy(gate_tool, tool, sizeof(gate_tool));
			gate_conditional = true;
		}
		return true;
	}
	return false;
}

/*
 * The approval gate.  TOOL_DONE with *result NULL: go ahead (an approval
 * was consumed, once, or the approval rules let the call through);
 * TOOL_DONE with *result: denied by a human (the refusal the model reads,
 * once), or the approval could not be asked; TOOL_PAUSE: an approval was
 * requested and the run now waits.
 */
typedef struct RequestApprovalArgs
{
	Oid		   *types;
	Datum	   *vals;
	char	   *key;			/* out */
} RequestApprovalArgs;

static void
RequestApprovalBody(void *p)
{
	RequestApprovalArgs *a = (RequestApprovalArgs *) p;

	if (SPI_execute_with_args("SELECT agent.request_approval($1, $2, $3)", 3, a->types, a->vals, NULL, false, 1)
		!= SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "agent.request_approval returned no row");
	a->key = SpiText(0, 1);
}

static ToolOutcome
ApprovalGate(const ToolRun *tr, const char *tool, json_t *input, json_t **result,
			 TimestampTz started)
{
	Oid			types[3] = {INT8OID, TEXTOID, JSONBOID};
	Datum		vals[3];
	bool		isnull;
	int			rc;
	char	   *key;
	json_t	   *out;
	bool		conditional = gate_conditional && strcmp(gate_tool, tool) == 0;
	const char *rule = NULL;
	char	   *why = NULL;

	gate_conditional = false;
	*result = NULL;
	vals[0] = Int64GetDatum(tr->run_id);
	vals[1] = CStringGetTextDatum(tool);
	vals[2] = JsonbDatum(input);

	rc = SPI_execute_with_args("SELECT agent.consume_approval($1, $2, $3)", 3, types, vals, NULL, false, 1);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "agent.consume_approval returned no row");
	if (DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)) && !isnull)
	{
		out = json_pack("{s:s}", "approval", "approved");
		ToolsRecordStep(tr->run_id, "approval", tool, input, out, "approved", 0, started);
		json_decref(out);
		return TOOL_DONE;
	}

	/* a denial is told to the model once; the run goes on from there */
	rc = SPI_execute_with_args("SELECT d ->> 'status', d ->> 'reason' FROM agent.consume_refusal($1, $2, $3) d "
							   "WHERE d IS NOT NULL", 3, types, vals, NULL, false, 1);
	if (rc == SPI_OK_SELECT && SPI_processed == 1)
	{
		char	   *status = SpiText(0, 1);
		char	   *reason = SpiText(0, 2);
		bool		denied = status && strcmp(status, "denied") == 0;

		out = json_pack("{s:s,s:s?}", "approval", status ? status : "denied", "reason", reason);
		ToolsRecordStep(tr->run_id, "approval", tool, input, out, denied ? "denied" : "expired", 0, started);
		json_decref(out);
		if (denied)
		{
			*result = json_pack("{s:s}", "error", "the person declined this call");
			if (reason)
				json_object_set_new(*result, "reason", json_string(reason));
		}
		else
			*result = ErrorResult("this call was not approved in time");
		return TOOL_DONE;
	}

	/* only approval rules cover the call: their functions decide */
	if (conditional &&
		!ApprovalRulesNeed(tr->scope, tool, input, tr->run_id, &rule, &why))
		return TOOL_DONE;

	/*
	 * A call that cannot be shown whole to the approver (too large, or
	 * holding a credential) is refused: a failed tool result the model
	 * reads, and the run goes on.
	 */
	{
		RequestApprovalArgs ra = {types, vals, NULL};
		char	   *refusal = ToolsInSubxact(RequestApprovalBody, &ra);

		if (refusal)
		{
			*result = ErrorResult("approval refused: %s", refusal);
			ToolsRecordStep(tr->run_id, "approval", tool, input, *result, "refused", 0, started);
			return TOOL_DONE;
		}
		key = ra.key;
	}
	out = json_pack("{s:s,s:s}", "approval", "pending", "approval_key", key ? key : "");
	if (rule)
		json_object_set_new(out, "rule", json_string(rule));
	if (why)
		json_object_set_new(out, "rule_error", json_string(why));
	ToolsRecordStep(tr->run_id, "approval", tool, input, out, "pending", 0, started);
	json_decref(out);
	return TOOL_PAUSE;
}

/* ---------------------------------------------------------------------
 * Data SQL as agents_tool, in a subtransaction
 * ---------------------------------------------------------------------
 */

typedef json_t *(*RowsToJson) (void *arg);

/*
 * Runs body(arg) in an internal subtransaction.  Returns NULL when it
 * succeeded; when it raised, rolls the subtransaction back and returns the
 * error message, allocated in the caller's memory context.  The tool and
 * teams code use it so that a failing statement becomes a failed tool
 * result, never a failed run.
 */
char *
ToolsInSubxact(void (*body) (void *arg), void *arg)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	char	   *volatile message = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);
	PG_TRY();
	{
		body(arg);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
		message = pstrdup(edata->message);
		FreeErrorData(edata);
	}
	PG_END_TRY();
	return message;
}

typedef struct RunAsToolArgs
{
	const char *sql;
	int			nargs;
	Oid		   *types;
	Datum	   *vals;
	const char *nulls;
	int			expect;
	RowsToJson	convert;
	void	   *arg;
	Oid			role;
	Oid			save_user;
	int			save_sec;
	json_t	   *result;
} RunAsToolArgs;

static void
RunAsToolBody(void *p)
{
	RunAsToolArgs *a = (RunAsToolArgs *) p;
	int			rc;

	SetUserIdAndSecContext(a->role, a->save_sec | SECURITY_LOCAL_USERID_CHANGE);
	rc = SPI_execute_with_args(a->sql, a->nargs, a->types, a->vals, a->nulls, false, 0);
	SetUserIdAndSecContext(a->save_user, a->save_sec);
	if (rc != a->expect)
		elog(ERROR, "unexpected SPI result %s", SPI_result_code_string(rc));
	a->result = a->convert ? a->convert(a->arg) : NULL;
}

/*
 * Runs sql as the tool role in a subtransaction.  On success returns
 * convert(arg) made from SPI_tuptable (inside the subtransaction); on
 * error, returns an error result carrying the message.
 */
static json_t *
RunAsTool(const char *sql, int nargs, Oid *types, Datum *vals, const char *nulls,
		  int expect, RowsToJson convert, void *arg, bool *failed)
{
	RunAsToolArgs a = {sql, nargs, types, vals, nulls, expect, convert, arg};
	char	   *message;

	*failed = false;
	a.role = get_role_oid(TOOL_ROLE, true);
	if (!OidIsValid(a.role))
	{
		*failed = true;
		return ErrorResult("role \"%s\" does not exist; reinstall pg_agents", TOOL_ROLE);
	}
	GetUserIdAndSecContext(&a.save_user, &a.save_sec);
	message = ToolsInSubxact(RunAsToolBody, &a);
	if (message == NULL)
		return a.result;
	/* the subtransaction's abort restored the user id; say so explicitly */
	SetUserIdAndSecContext(a.save_user, a.save_sec);
	if (a.result)
		json_decref(a.result);
	*failed = true;
	return ErrorResult("%s", message);
}

/* RunAsTool for context assembly (context.c) */
json_t *
ToolsRunAsTool(const char *sql, int nargs, Oid *types, Datum *vals, const char *nulls,
			   int expect, json_t *(*convert) (void *arg), void *arg, bool *failed)
{
	return RunAsTool(sql, nargs, types, vals, nulls, expect, convert, arg, failed);
}

static bool
LookupResourceTables(const char *rtype, List **out)
{
	Oid			types[1] = {TEXTOID};
	Datum		vals[1];
	char		nulls[1] = " ";
	int			rc;

	*out = NIL;
	if (!OidIsValid(SpiUtilLookupRelation(RESOURCE_REGISTRY)))
		return false;
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
							   "pg_catalog.quote_ident(pg_catalog.to_jsonb(r) ->> 'tsv_column'), "
							   "pg_catalog.quote_literal(coalesce(pg_catalog.to_jsonb(r) ->> 'search_config', 'simple')), "
							   "pg_catalog.quote_ident(pg_catalog.to_jsonb(r) ->> 'embedding_column'), "
							   "(SELECT pg_catalog.quote_ident(vn.nspname::pg_catalog.text) FROM pg_catalog.pg_extension x "
							   " JOIN pg_catalog.pg_namespace vn ON vn.oid OPERATOR(pg_catalog.=) x.extnamespace "
							   " WHERE x.extname OPERATOR(pg_catalog.=) 'vector') "
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
		*out = lappend(*out, t);
	}
	return true;
}

static json_t *
ReadRow(void *arg)
{
	const char **id = (const char **) arg;

	if (SPI_processed == 0)
		return NULL;
	return json_pack("{s:s,s:s,s:s?,s:s?}", "resource_type", id[0], "resource_id", id[1],
					 "title", SpiText(0, 1), "body", SpiText(0, 2));
}

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

static json_t *
WriteRows(void *arg)
{
	return json_pack("{s:I}", "updated", (json_int_t) SPI_processed);
}

/* ---------------------------------------------------------------------
 * The tools
 * ---------------------------------------------------------------------
 */

static ToolOutcome
ToolRead(const ToolRun *tr, json_t *input, json_t **result, TimestampTz started)
{
	const char *rtype = InputString(input, "resource_type");
	const char *rid = InputString(input, "resource_id");
	char	   *reason;
	ResourceTable *t;
	Oid			types[1] = {TEXTOID};
	Datum		vals[1];
	const char *ids[2];
	bool		failed;
	json_t	   *r;
	List	   *tables;
	ListCell   *lc;

	if (rtype == NULL || rid == NULL)
	{
		*result = ErrorResult("read_resource needs string arguments resource_type and resource_id");
		ToolsRecordStep(tr->run_id, "error", "read_resource", input, *result, "error", 0, started);
		return TOOL_DONE;
	}
	if (!Allowed(tr, rtype, rid, "read", &reason))
	{
		*result = Deny(tr, "read_resource", input, rtype, rid, reason, started);
		return TOOL_DONE;
	}
	if (NeedsApproval(tr, "read_resource", false))
	{
		ToolOutcome gate = ApprovalGate(tr, "read_resource", input, result, started);

		if (gate != TOOL_DONE || *result != NULL)
			return gate;
	}
	if (!LookupResourceTables(rtype, &tables) || tables == NIL)
	{
		*result = ErrorResult("no table is registered for resource type \"%s\"", rtype);
		ToolsRecordStep(tr->run_id, "error", "read_resource", input, *result, "error", 0, started);
		return TOOL_DONE;
	}
	vals[0] = CStringGetTextDatum(rid);
	ids[0] = rtype;
	ids[1] = rid;
	r = NULL;
	failed = false;
	/* a resource type may be spread over several registered tables */
	foreach(lc, tables)
	{
		t = (ResourceTable *) lfirst(lc);
		r = RunAsTool(psprintf("SELECT t.%s::pg_catalog.text, t.%s::pg_catalog.text FROM %s t "
							   "WHERE t.%s::pg_catalog.text OPERATOR(pg_catalog.=) $1 LIMIT 1",
							   t->title_col, t->body_col, t->tbl, t->id_col),
					  1, types, vals, NULL, SPI_OK_SELECT, ReadRow, ids, &failed);
		if (r != NULL)
			break;
	}
	if (r == NULL)
	{
		r = ErrorResult("resource %s %s not found", rtype, rid);
		failed = true;
	}
	*result = r;
	ToolsRecordStep(tr->run_id, failed ? "error" : "read", "read_resource", input,
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
	message = ToolsInSubxact(SetIterativeScans, (void *) ns);
	if (message)
		elog(LOG, "pg_agents: search_resources without iterative index scans (pgvector 0.8 or later needed): %s",
			 message);
	return vec;
}

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
	{
		*result = ErrorResult("search_resources needs a string argument query");
		ToolsRecordStep(tr->run_id, "error", "search_resources", input, *result, "error", 0, started);
		return TOOL_DONE;
	}
	if (limit < 1)
		limit = 1;
	if (limit > SEARCH_MAX_LIMIT)
		limit = SEARCH_MAX_LIMIT;
	if (!LookupResourceTables(rtype, &tables) || tables == NIL)
	{
		*result = json_pack("{s:[]}", "results");
		ToolsRecordStep(tr->run_id, "tool", "search_resources", input, *result, "ok", 0, started);
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
	r = RunAsTool(sql.data, qvec ? 6 : 5, types, vals, nulls, SPI_OK_SELECT, SearchRows, NULL, &failed);
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
	ToolsRecordStep(tr->run_id, failed ? "error" : "tool", "search_resources", input, summary,
					failed ? "error" : "ok", 0, started);
	json_decref(summary);
	return TOOL_DONE;
}

static ToolOutcome
ToolWrite(const ToolRun *tr, json_t *input, json_t **result, TimestampTz started)
{
	const char *rtype = InputString(input, "resource_type");
	const char *rid = InputString(input, "resource_id");
	const char *body = InputString(input, "body");
	const char *title = InputString(input, "title");
	char	   *reason;
	ResourceTable *t;
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		vals[3];
	bool		failed;
	json_t	   *r;
	ToolOutcome gate;
	List	   *tables;
	ListCell   *lc;

	if (rtype == NULL || rid == NULL || body == NULL)
	{
		*result = ErrorResult("write_resource needs string arguments resource_type, resource_id and body");
		ToolsRecordStep(tr->run_id, "error", "write_resource", input, *result, "error", 0, started);
		return TOOL_DONE;
	}
	if (!Allowed(tr, rtype, rid, "edit", &reason))
	{
		*result = Deny(tr, "write_resource", input, rtype, rid, reason, started);
		return TOOL_DONE;
	}
	if (NeedsApproval(tr, "write_resource", true))
	{
		gate = ApprovalGate(tr, "write_resource", input, result, started);
		if (gate != TOOL_DONE || *result != NULL)
			return gate;
	}
	if (!LookupResourceTables(rtype, &tables) || tables == NIL)
	{
		*result = ErrorResult("no table is registered for resource type \"%s\"", rtype);
		ToolsRecordStep(tr->run_id, "error", "write_resource", input, *result, "error", 0, started);
		return TOOL_DONE;
	}
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
			r = RunAsTool(psprintf("UPDATE %s t SET %s = $2, %s = $3 WHERE t.%s::pg_catalog.text OPERATOR(pg_catalog.=) $1",
								   t->tbl, t->body_col, t->title_col, t->id_col),
						  3, types, vals, NULL, SPI_OK_UPDATE, WriteRows, NULL, &failed);
		else
			r = RunAsTool(psprintf("UPDATE %s t SET %s = $2 WHERE t.%s::pg_catalog.text OPERATOR(pg_catalog.=) $1",
								   t->tbl, t->body_col, t->id_col),
						  2, types, vals, NULL, SPI_OK_UPDATE, WriteRows, NULL, &failed);
		if (failed || json_integer_value(json_object_get(r, "updated")) > 0)
			break;
	}
	if (!failed && json_integer_value(json_object_get(r, "updated")) == 0)
	{
		json_decref(r);
		r = ErrorResult("resource %s %s not found", rtype, rid);
		failed = true;
	}
	*result = r;
	ToolsRecordStep(tr->run_id, failed ? "error" : "write", "write_resource", input, r,
					failed ? "error" : "ok", 0, started);
	return TOOL_DONE;
}

typedef struct DelegateArgs
{
	bool		use_try;
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
	bool		isnull;

	vals[0] = Int64GetDatum(a->run_id);
	vals[1] = Int64GetDatum(a->child_agent);
	vals[2] = CStringGetTextDatum(a->task);
	vals[3] = json_is_array(a->attachments) ? JsonbDatum(a->attachments)
		: DirectFunctionCall1(jsonb_in, CStringGetDatum("[]"));
	if (a->use_try)
	{
		json_t	   *res;

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
	else
	{
		if (SPI_execute_with_args("SELECT agent.delegate($1, $2, $3, $4)", 4, types, vals, NULL, false, 1) != SPI_OK_SELECT
			|| SPI_processed != 1)
			elog(ERROR, "agent.delegate returned no row");
		a->child_run = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
}

static ToolOutcome
ToolDelegate(const ToolRun *tr, json_t *input, json_t **result, int64 *child,
			 TimestampTz started)
{
	json_t	   *jid = json_object_get(input, "agent_id");
	const char *task = InputString(input, "task");
	int64		child_agent;
	DelegateArgs a = {0};
	char	   *errmsg_copy;

	if (json_is_string(jid))
		child_agent = strtoll(json_string_value(jid), NULL, 10);
	else
		child_agent = json_is_integer(jid) ? (int64) json_integer_value(jid) : 0;
	if (child_agent <= 0 || task == NULL ||
		(json_object_get(input, "attachments") && !json_is_array(json_object_get(input, "attachments"))))
	{
		*result = ErrorResult("delegate_to_agent needs an integer agent_id, a string task and optional attachments (an array)");
		ToolsRecordStep(tr->run_id, "error", "delegate_to_agent", input, *result, "error", 0, started);
		return TOOL_DONE;
	}
	/* context.c: only to an agent the run's identity may see */
	if (!ContextMayDelegateTo(tr, child_agent))
	{
		*result = ErrorResult("delegation refused: agent " INT64_FORMAT " is not one you may delegate to", child_agent);
		ToolsRecordStep(tr->run_id, "denied", "delegate_to_agent", input, *result, "denied", 0, started);
		return TOOL_DONE;
	}
	if (NeedsApproval(tr, "delegate_to_agent", false))
	{
		ToolOutcome gate = ApprovalGate(tr, "delegate_to_agent", input, result, started);

		if (gate != TOOL_DONE || *result != NULL)
			return gate;
	}

	a.use_try = SpiUtilFunctionExists("agent.try_delegate(bigint,bigint,text,jsonb,integer)");
	a.run_id = tr->run_id;
	a.child_agent = child_agent;
	a.task = task;
	a.attachments = json_object_get(input, "attachments");
	errmsg_copy = ToolsInSubxact(DelegateBody, &a);
	if (errmsg_copy == NULL)
		errmsg_copy = a.refusal;

	if (errmsg_copy)
	{
		*result = ErrorResult("delegation refused: %s", errmsg_copy);
		if (!a.use_try)
			ToolsRecordStep(tr->run_id, "delegate", "delegate_to_agent", input, *result, "error", 0, started);
		return TOOL_DONE;
	}
	if (!a.use_try)
	{
		json_t	   *out = json_pack("{s:I}", "child_run_id", (json_int_t) a.child_run);

		ToolsRecordStep(tr->run_id, "delegate", "delegate_to_agent", input, out, "ok", 0, started);
		json_decref(out);
	}
	*child = a.child_run;
	return TOOL_WAIT_CHILD;
}

/*
 * The result of a child run, once terminal (*finished); a failure is a
 * motivated error result.
 */
json_t *
ToolsChildResult(int64 child_run_id, bool *finished)
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
		return ErrorResult("delegated run " INT64_FORMAT " no longer exists", child_run_id);
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
 * Executes one tool call.  TOOL_DONE sets *result (an object; {"error":
 * ...} for a failure the model should see).
 */
ToolOutcome
ToolsExecute(const ToolRun *tr, const char *name, json_t *input, json_t **result,
			 int64 *child_run_id)
{
	TimestampTz started = GetCurrentTimestamp();

	gate_conditional = false;
	*result = NULL;
	*child_run_id = 0;
	if (!json_is_object(input))
	{
		*result = ErrorResult("the arguments of tool \"%s\" must be a JSON object", name);
		ToolsRecordStep(tr->run_id, "error", name, input, *result, "error", 0, started);
		return TOOL_DONE;
	}
	if (strcmp(name, "read_resource") == 0)
		return ToolRead(tr, input, result, started);
	if (strcmp(name, "search_resources") == 0)
	{
		if (NeedsApproval(tr, name, false))
		{
			ToolOutcome gate = ApprovalGate(tr, name, input, result, started);

			if (gate != TOOL_DONE || *result != NULL)
				return gate;
		}
		return ToolSearch(tr, input, result, started);
	}
	if (strcmp(name, "write_resource") == 0)
		return ToolWrite(tr, input, result, started);
	if (strcmp(name, "delegate_to_agent") == 0 && tr->can_delegate)
		return ToolDelegate(tr, input, result, child_run_id, started);
	if (strncmp(name, "mcp__", 5) == 0)
		return McpToolExecute(tr, name, input, result, started);

	/* context (context.c): use_skill */
	if (ContextHandles(name))
		return ContextExecute(tr, name, input, result, child_run_id);

	/* teams (teams.c): ask_parent, agent_teams */
	if (TeamsHandles(name))
		return TeamsExecute(tr, name, input, result, child_run_id, started);

	*result = ErrorResult("unknown tool \"%s\"", name);
	ToolsRecordStep(tr->run_id, "error", name, input, *result, "error", 0, started);
	return TOOL_DONE;
}

/* The approval policy and gate, for the MCP tools (mcp_tools.c). */
bool
ToolsNeedsApproval(const ToolRun *tr, const char *tool, bool is_write)
{
	return NeedsApproval(tr, tool, is_write);
}

ToolOutcome
ToolsApprovalGate(const ToolRun *tr, const char *tool, json_t *input, json_t **result,
				  TimestampTz started)
{
	return ApprovalGate(tr, tool, input, result, started);
}
