/*-------------------------------------------------------------------------
 *
 * tool_gate.c
 *		The gate of every tool call, whatever its family: the access check
 *		(agent.explain_access under the run's regime) and the refusal of a
 *		denied call, the approval policy and gate (approvals consumed once,
 *		refusals told once, approval rules asked when only they cover the
 *		call), the subtransaction a tool's SQL runs in (as the NOLOGIN role
 *		agents_tool, so that row-level security and audit triggers see the
 *		agent), and the run's steps.
 *
 * The families (tools_builtin.c, teams.c, mcp_tools.c, context.c) call
 * these functions; the gate calls no family, and the dispatcher (tools.c)
 * reaches the families only through its registry, so there is no cycle.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "approval_rules.h"
#include "tool_gate.h"
#include "access/allowlist.h"
#include "util/spi_util.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#define TOOL_ROLE			"agents_tool"

/* ---------------------------------------------------------------------
 * Identity
 * ---------------------------------------------------------------------
 */

/* a GUC for the rest of the transaction */
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
ToolGateSetIdentity(const ToolRun *tr)
{
	char		buf[64];

	/* the switch to the agent and back keeps the cached plans when it may */
	AllowlistNoteFolding();
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


/* the kept plan of ToolGateRecordStepText */
static SPIPlanPtr step_plan = NULL;

/* a jansson value as a jsonb Datum (JSON null for NULL) */
Datum
ToolGateJsonb(json_t *v)
{
	char	   *s = json_dumps(v ? v : json_null(), JSON_COMPACT | JSON_ENCODE_ANY);
	char	   *p = pstrdup(s);

	free(s);
	return DirectFunctionCall1(jsonb_in, CStringGetDatum(p));
}

/* column col of row row of the last SPI result, as text (NULL for NULL) */
static char *
SpiText(int row, int col)
{
	return SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col);
}

/* an error result the model reads: {"error": <formatted message>} */
json_t *
ToolGateError(const char *fmt,...)
{
	char		buf[1024];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return json_pack("{s:s}", "error", buf);
}

/*
 * An id argument of a call, read strictly: a positive JSON integer, or a
 * string of decimal digits alone (no sign, space, fraction, exponent or
 * leading zero) within bigint.  "1abc", "1.0", " 1", "", 1.0, 0, -3 and
 * 99999999999999999999 are TOOL_ID_BAD, for the family to refuse with a tool
 * error the model sees; a missing key or null is TOOL_ID_ABSENT.
 */
ToolIdArg
ToolGateInputId(json_t *input, const char *key, int64 *out)
{
	json_t	   *v = json_object_get(input, key);
	const char *p;
	int64		n = 0;

	*out = 0;
	if (v == NULL || json_is_null(v))
		return TOOL_ID_ABSENT;
	if (json_is_integer(v))
	{
		if (json_integer_value(v) <= 0)
			return TOOL_ID_BAD;
		*out = (int64) json_integer_value(v);
		return TOOL_ID_OK;
	}
	if (!json_is_string(v))
		return TOOL_ID_BAD;
	p = json_string_value(v);
	if (p[0] < '1' || p[0] > '9')
		return TOOL_ID_BAD;
	for (; *p; p++)
	{
		if (*p < '0' || *p > '9' || n > (PG_INT64_MAX - (*p - '0')) / 10)
			return TOOL_ID_BAD;
		n = n * 10 + (*p - '0');
	}
	*out = n;
	return TOOL_ID_OK;
}

/*
 * One row of agent.run_steps, its input and output redacted by
 * agent.redact; the run's workspace supplied and named (Citus routes by it).
 */
static bool
ToolGateRecordStepText(int64 run_id, const char *workspace, const char *kind, const char *name,
					   const char *input_json, const char *output_json,
					   const char *status, int64 tokens, TimestampTz started)
{
	static const char *sql =
		"INSERT INTO agent.run_steps (workspace_id, run_id, seq, kind, name, input, output, status, tokens, started_at, finished_at) "
		"SELECT $9, $1, coalesce(pg_catalog.max(s.seq), 0) + 1, $2, $3, agent.redact($4), agent.redact($5), $6, $7, $8, pg_catalog.clock_timestamp() "
		"FROM agent.run_steps s WHERE s.workspace_id = $9 AND s.run_id = $1";
	Oid			types[9] = {INT8OID, TEXTOID, TEXTOID, JSONBOID, JSONBOID, TEXTOID, INT4OID, TIMESTAMPTZOID, TEXTOID};
	Datum		vals[9];
	char		nulls[9] = "         ";
	int			rc;

	vals[8] = CStringGetTextDatum(workspace);
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

	rc = SpiUtilExecPlan(&step_plan, sql, 9, types, vals, nulls, false, 0);
	if (rc != SPI_OK_INSERT)
		elog(ERROR, "could not record a run step: %s", SPI_result_code_string(rc));
	return true;
}

/* ToolGateRecordStepText for jansson values (NULL: SQL NULL) */
void
ToolGateRecordStep(int64 run_id, const char *workspace, const char *kind, const char *name,
				json_t *input, json_t *output, const char *status,
				int64 tokens, TimestampTz started)
{
	char	   *in = input ? json_dumps(input, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	char	   *out = output ? json_dumps(output, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	char	   *pin = in ? pstrdup(in) : NULL;
	char	   *pout = out ? pstrdup(out) : NULL;

	free(in);
	free(out);
	ToolGateRecordStepText(run_id, workspace, kind, name, pin, pout, status, tokens, started);
}

/* ---------------------------------------------------------------------
 * Gates
 * ---------------------------------------------------------------------
 */

/* agent.explain_access under the run's regime; *reason is palloc'd */
bool
ToolGateAllowed(const ToolRun *tr, const char *rtype, const char *rid, const char *mode, char **reason)
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
json_t *
ToolGateDeny(const ToolRun *tr, const char *tool, json_t *input, const char *rtype,
	 const char *rid, const char *reason, TimestampTz started)
{
	Oid			types[9] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID, TEXTOID, TEXTOID};
	Datum		vals[9];
	char		nulls[9] = "     n   ";
	json_t	   *out = json_pack("{s:s}", "reason", reason);
	char	   *summary = psprintf("%s refused: %s %s (%s)", tool, rtype, rid, reason);

	ToolGateRecordStep(tr->run_id, tr->workspace, "denied", tool, input, out, "denied", 0, started);
	json_decref(out);

	vals[0] = CStringGetTextDatum(psprintf("tool.%s", tool));
	vals[1] = CStringGetTextDatum("denied");
	vals[2] = CStringGetTextDatum(rtype);
	vals[3] = CStringGetTextDatum(rid);
	vals[4] = CStringGetTextDatum(tr->workspace);
	vals[5] = (Datum) 0;
	vals[6] = ToolGateJsonb(input);
	vals[7] = CStringGetTextDatum(summary);
	vals[8] = CStringGetTextDatum(reason);
	if (SPI_execute_with_args("SELECT agent._audit_event($1, $2, $3, $4, $5, $6, $7, $8, $9)",
							  9, types, vals, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not audit a refused tool call");
	return json_pack("{s:s}", "error", "access denied");
}

/*
 * What ToolGateNeedsApproval decided for the call that goes through the gate next:
 * when only approval rules cover it (scope.approval_rules, approval_rules.c)
 * the gate asks their functions; in every other case (the static policy,
 * or a gate reached without ToolGateNeedsApproval, as for a job deletion) the call
 * needs approval.  Reset at every tool call and by the gate itself.
 */
static bool gate_conditional = false;
static char gate_tool[256];

/* a new tool call: forget what the previous call's policy decided */
void
ToolGateBegin(void)
{
	gate_conditional = false;
}

/*
 * Whether a call of tool needs a human's approval: approval_mode "all",
 * "writes" for a write, the scope's needs_approval list, or approval rules
 * that cover the tool (then only conditionally, see gate_conditional).
 */
bool
ToolGateNeedsApproval(const ToolRun *tr, const char *tool, bool is_write)
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

/* agent.request_approval, in ToolGateInSubxact: its refusal is a tool result */
static void
RequestApprovalBody(void *p)
{
	RequestApprovalArgs *a = (RequestApprovalArgs *) p;

	if (SPI_execute_with_args("SELECT agent.request_approval($1, $2, $3)", 3, a->types, a->vals, NULL, false, 1)
		!= SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "agent.request_approval returned no row");
	a->key = SpiText(0, 1);
}

/*
 * the approval gate of a call (the contract is described above
 * RequestApprovalArgs)
 */
ToolOutcome
ToolGateApproval(const ToolRun *tr, const char *tool, json_t *input, json_t **result,
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
	vals[2] = ToolGateJsonb(input);

	rc = SPI_execute_with_args("SELECT agent.consume_approval($1, $2, $3)", 3, types, vals, NULL, false, 1);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "agent.consume_approval returned no row");
	if (DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)) && !isnull)
	{
		out = json_pack("{s:s}", "approval", "approved");
		ToolGateRecordStep(tr->run_id, tr->workspace, "approval", tool, input, out, "approved", 0, started);
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
		ToolGateRecordStep(tr->run_id, tr->workspace, "approval", tool, input, out, denied ? "denied" : "expired", 0, started);
		json_decref(out);
		if (denied)
		{
			*result = json_pack("{s:s}", "error", "the person declined this call");
			if (reason)
				json_object_set_new(*result, "reason", json_string(reason));
		}
		else
			*result = ToolGateError("this call was not approved in time");
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
		char	   *refusal = ToolGateInSubxact(RequestApprovalBody, &ra);

		if (refusal)
		{
			*result = ToolGateError("approval refused: %s", refusal);
			ToolGateRecordStep(tr->run_id, tr->workspace, "approval", tool, input, *result, "refused", 0, started);
			return TOOL_DONE;
		}
		key = ra.key;
	}
	out = json_pack("{s:s,s:s}", "approval", "pending", "approval_key", key ? key : "");
	if (rule)
		json_object_set_new(out, "rule", json_string(rule));
	if (why)
		json_object_set_new(out, "rule_error", json_string(why));
	ToolGateRecordStep(tr->run_id, tr->workspace, "approval", tool, input, out, "pending", 0, started);
	json_decref(out);
	return TOOL_PAUSE;
}

/*
 * The approval policy and gate in one step: true when the call stops here
 * (*outcome is TOOL_PAUSE, or TOOL_DONE with *result the refusal the model
 * reads); false when it goes ahead (no approval needed, or one consumed).
 */
bool
ToolGateHolds(const ToolRun *tr, const char *tool, bool is_write, json_t *input,
			  json_t **result, TimestampTz started, ToolOutcome *outcome)
{
	if (!ToolGateNeedsApproval(tr, tool, is_write))
		return false;
	*outcome = ToolGateApproval(tr, tool, input, result, started);
	return *outcome != TOOL_DONE || *result != NULL;
}

/*
 * A call that fails before it ran: *result is the error the model reads,
 * recorded as an error step of the tool.
 */
ToolOutcome
ToolGateFail(const ToolRun *tr, const char *tool, json_t *input, json_t **result,
			 TimestampTz started, const char *fmt,...)
{
	char		buf[1024];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	*result = json_pack("{s:s}", "error", buf);
	ToolGateRecordStep(tr->run_id, tr->workspace, "error", tool, input, *result, "error", 0, started);
	return TOOL_DONE;
}

/* ---------------------------------------------------------------------
 * Data SQL as agents_tool, in a subtransaction
 * ---------------------------------------------------------------------
 */

/*
 * Runs body(arg) in an internal subtransaction.  Returns NULL when it
 * succeeded; when it raised, rolls the subtransaction back and returns the
 * error message, allocated in the caller's memory context.  The tool and
 * teams code use it so that a failing statement becomes a failed tool
 * result, never a failed run.
 */
char *
ToolGateInSubxact(void (*body) (void *arg), void *arg)
{
	ErrorData  *edata = SpiUtilSubxact(body, arg, true);
	char	   *message;

	if (edata == NULL)
		return NULL;
	message = pstrdup(edata->message ? edata->message : "unknown error");
	FreeErrorData(edata);
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
	ToolGateRowsToJson convert;
	void	   *arg;
	Oid			role;
	Oid			save_user;
	int			save_sec;
	json_t	   *result;
} RunAsToolArgs;

/* the body of ToolGateRunAsTool: the statement as the tool role */
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
json_t *
ToolGateRunAsTool(const char *sql, int nargs, Oid *types, Datum *vals, const char *nulls,
		  int expect, ToolGateRowsToJson convert, void *arg, bool *failed)
{
	RunAsToolArgs a = {sql, nargs, types, vals, nulls, expect, convert, arg};
	char	   *message;

	*failed = false;
	a.role = get_role_oid(TOOL_ROLE, true);
	if (!OidIsValid(a.role))
	{
		*failed = true;
		return ToolGateError("role \"%s\" does not exist; reinstall pg_agents", TOOL_ROLE);
	}
	GetUserIdAndSecContext(&a.save_user, &a.save_sec);
	message = ToolGateInSubxact(RunAsToolBody, &a);
	if (message == NULL)
		return a.result;
	/* the subtransaction's abort restored the user id; say so explicitly */
	SetUserIdAndSecContext(a.save_user, a.save_sec);
	if (a.result)
		json_decref(a.result);
	*failed = true;
	return ToolGateError("%s", message);
}
