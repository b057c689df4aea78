/*-------------------------------------------------------------------------
 *
 * approval_rules.c
 *		Conditional approval gates of the worker: the agent's scope may name
 *		SQL predicates that decide, per call, whether a tool call needs a
 *		human's approval (docs/runs.md, "Conditional gates").
 *
 *   {"approval_rules": [{"tools": ["write_resource", "mcp__*"],
 *                        "function": "app.needs_review(text,jsonb,bigint)"}]}
 *
 * A rule covers the tools whose name matches one of its patterns (`*`
 * matches any run of characters).  For a covered call each covering rule's
 * function is called with (tool, input, run_id), in order: true means the
 * call needs approval; false lets the next rule decide (all false: no
 * approval from the rules).  Rules only add gates: approval_mode and
 * needs_approval still gate what they gate.  Fail closed: an error, a
 * NULL, a time-out, a missing function or one that may not be used all
 * count as "needs approval", and the reason is shown with the request.
 *
 * The predicate is user SQL.  It never runs with the extension's or the
 * worker's rights: it runs as the tool role agents_tool, with the run's
 * identity settings, under SECURITY_RESTRICTED_OPERATION (no SET ROLE, no
 * temporary objects), search_path = pg_catalog, pg_temp, bounded by
 * pg_agents.approval_rule_timeout, in an internal subtransaction that is
 * always rolled back (a predicate changes nothing).  A SECURITY DEFINER
 * function is used only when a superuser owns it (a DBA placed it there);
 * functions of the schemas agent, pg_catalog and information_schema never.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "util/compat.h"
#include "util/jansson_prelude.h"
#include "approval_rules.h"
#include "util/guc.h"
#include "util/spi_util.h"
#include "util/user_sql.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/syscache.h"
#include "utils/timeout.h"

#define TOOL_ROLE	"agents_tool"

/* `*` matches any run of characters; everything else itself */
static bool
GlobMatch(const char *pat, const char *s)
{
	if (*pat == '\0')
		return *s == '\0';
	if (*pat == '*')
	{
		while (*pat == '*')
			pat++;
		if (*pat == '\0')
			return true;
		for (; *s; s++)
			if (GlobMatch(pat, s))
				return true;
		return false;
	}
	return *s != '\0' && *pat == *s && GlobMatch(pat + 1, s + 1);
}

/*
 * whether an approval rule's tools (a pattern or a list of patterns) cover
 * the tool
 */
static bool
RuleCovers(json_t *rule, const char *tool)
{
	json_t	   *tools = json_object_get(rule, "tools");
	size_t		i;
	json_t	   *v;

	if (json_is_string(tools))
		return GlobMatch(json_string_value(tools), tool);
	json_array_foreach(tools, i, v)
		if (json_is_string(v) && GlobMatch(json_string_value(v), tool))
			return true;
	return false;
}

/* whether any rule of scope.approval_rules covers the tool */
bool
ApprovalRulesCover(json_t *scope, const char *tool)
{
	json_t	   *rules = json_object_get(scope, "approval_rules");
	size_t		i;
	json_t	   *rule;

	json_array_foreach(rules, i, rule)
		if (RuleCovers(rule, tool))
			return true;
	return false;
}

/*
 * Whether the function may serve as a predicate; NULL when it may, else
 * why not.  The same rules as agent._check_approval_rules at save time,
 * checked again at every call (the function may have changed since).
 */
static char *
UsablePredicate(Oid fn, Oid role)
{
	HeapTuple	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn));
	Form_pg_proc p;
	char	   *why = NULL;
	char	   *nsp;

	if (!HeapTupleIsValid(tup))
		return pstrdup("the function does not exist");
	p = (Form_pg_proc) GETSTRUCT(tup);
	nsp = get_namespace_name(p->pronamespace);
	if (p->prorettype != BOOLOID || p->proretset || p->prokind != PROKIND_FUNCTION)
		why = pstrdup("the function does not return boolean");
	else if (nsp == NULL || strcmp(nsp, "agent") == 0 || strcmp(nsp, "pg_catalog") == 0 ||
			 strcmp(nsp, "information_schema") == 0)
		why = psprintf("functions of schema %s are not predicates", nsp ? nsp : "?");
	else if (p->prosecdef && !superuser_arg(p->proowner))
		why = pstrdup("the function is SECURITY DEFINER and not owned by a superuser");
	else if (pg_proc_aclcheck(fn, role, ACL_EXECUTE) != ACLCHECK_OK)
		why = psprintf("role %s may not execute the function", TOOL_ROLE);
	ReleaseSysCache(tup);
	return why;
}

typedef struct RuleCall
{
	Oid			fn;
	const char *tool;
	const char *input;			/* jsonb text */
	int64		run_id;
	bool		isnull;
	bool		value;
} RuleCall;

/* the predicate's call, as the tool role (the body of UserSqlRun) */
static void
RuleQueryBody(void *arg)
{
	RuleCall   *rc = (RuleCall *) arg;
	Oid			types[3] = {TEXTOID, JSONBOID, INT8OID};
	Datum		vals[3];
	char	   *sql;
	int			ret;

	sql = psprintf("SELECT %s.%s($1, $2, $3)",
				   quote_identifier(get_namespace_name(get_func_namespace(rc->fn))),
				   quote_identifier(get_func_name(rc->fn)));
	vals[0] = CStringGetTextDatum(rc->tool);
	vals[1] = DirectFunctionCall1(jsonb_in, CStringGetDatum(rc->input));
	vals[2] = Int64GetDatum(rc->run_id);
	ret = SPI_execute_with_args(sql, 3, types, vals, NULL, false, 1);
	if (ret != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "the predicate returned no row");
	rc->value = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &rc->isnull));
}

/*
 * Calls one predicate as the tool role; returns true when the call needs
 * approval, with *why set when that is because the predicate did not
 * answer (error, NULL, time-out, unusable function).
 */
static bool
CallPredicate(const char *signature, const char *tool, const char *input, int64 run_id,
			  char **why)
{
	Oid			role = get_role_oid(TOOL_ROLE, true);
	Oid			fn;
	RuleCall	rc;
	char	   *bad;
	char	   *message;

	*why = NULL;
	if (!OidIsValid(role))
	{
		*why = psprintf("role \"%s\" does not exist", TOOL_ROLE);
		return true;
	}
	fn = SpiUtilLookupProcedure(signature);
	if (!OidIsValid(fn))
	{
		*why = psprintf("function %s does not exist", signature);
		return true;
	}
	if ((bad = UsablePredicate(fn, role)) != NULL)
	{
		*why = psprintf("function %s may not be used: %s", signature, bad);
		return true;
	}
	memset(&rc, 0, sizeof(rc));
	rc.fn = fn;
	rc.tool = tool;
	rc.input = input;
	rc.run_id = run_id;

	switch (UserSqlRun(role, pg_agents_approval_rule_timeout, RuleQueryBody, &rc, &message))
	{
		case USER_SQL_OK:
			if (!rc.isnull)
				return rc.value;
			*why = psprintf("function %s returned NULL", signature);
			return true;
		case USER_SQL_TIMED_OUT:
			*why = psprintf("function %s took longer than pg_agents.approval_rule_timeout (%d ms)",
							signature, pg_agents_approval_rule_timeout);
			return true;
		case USER_SQL_FAILED:
			*why = psprintf("function %s failed: %s", signature, message);
			return true;
	}
	return true;
}

/*
 * Whether the rules covering tool ask for approval of this call.  *rule is
 * the signature of the rule that asked (NULL when none did), *why why it
 * asked when its function did not answer true itself.
 */
bool
ApprovalRulesNeed(json_t *scope, const char *tool, json_t *input, int64 run_id,
				  const char **rule, char **why)
{
	json_t	   *rules = json_object_get(scope, "approval_rules");
	size_t		i;
	json_t	   *r;
	char	   *text = NULL;
	char	   *in;

	*rule = NULL;
	*why = NULL;
	text = json_dumps(input ? input : json_null(), JSON_COMPACT | JSON_ENCODE_ANY);
	in = pstrdup(text ? text : "null");
	free(text);
	json_array_foreach(rules, i, r)
	{
		const char *fn = json_string_value(json_object_get(r, "function"));

		if (!RuleCovers(r, tool))
			continue;
		*rule = fn ? fn : "(no function)";
		if (fn == NULL)
		{
			*why = pstrdup("the rule names no function");
			return true;
		}
		if (CallPredicate(fn, tool, in, run_id, why))
			return true;
	}
	*rule = NULL;
	return false;
}
