/*-------------------------------------------------------------------------
 *
 * teams.c
 *		Agent teams in the worker: durable messages to runs (delivered at
 *		the next safe point, exactly once), the ask_parent tool of child
 *		runs and the agent_teams tool of delegating agents.  Everything here
 *		runs inside an executor unit (a transaction with SPI connected).
 *		The SQL side is sql/src/900_teams.sql; see docs/teams.md.
 *
 *		Workspaces: the worker sets pg_agents.workspace to the run's
 *		workspace before any tool; the SQL functions refuse a run of
 *		another workspace as unknown, and a run sees as its children only
 *		runs of its own workspace.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "util/jansson_prelude.h"
#include "tool_family.h"
#include "tool_gate.h"
#include "util/spi_util.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "llm/llm.h"
#include "runs/context.h"
#include "tools.h"

static bool TeamsPending(int64 run_id, const char *workspace);

/* a string argument of a call, or NULL */
static const char *
InputStr(json_t *input, const char *key)
{
	json_t	   *v = json_object_get(input, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

/*
 * Runs one parameterised statement in a subtransaction and returns its
 * first column of the first row parsed as JSON (json_null() when there is
 * no row or the value is NULL).  An error becomes {"error": message}.
 */
typedef struct TeamsQueryArgs
{
	const char *sql;
	int			nargs;
	Oid		   *types;
	Datum	   *vals;
	json_t	   *result;
} TeamsQueryArgs;

/* the body of TeamsQuery, in a subtransaction */
static void
TeamsQueryBody(void *p)
{
	TeamsQueryArgs *a = (TeamsQueryArgs *) p;
	int			rc = SPI_execute_with_args(a->sql, a->nargs, a->types, a->vals, NULL, false, 0);
	char	   *v;

	if (rc < 0)
		elog(ERROR, "unexpected SPI result %s", SPI_result_code_string(rc));
	v = (SPI_tuptable && SPI_processed > 0)
		? SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1) : NULL;
	a->result = v ? json_loads(v, JSON_DECODE_ANY, NULL) : json_null();
	if (a->result == NULL)
		a->result = json_string(v);
}

/*
 * runs one teams statement in a subtransaction: its first value as JSON, or
 * {"error": ...} with *failed
 */
static json_t *
TeamsQuery(const char *sql, int nargs, Oid *types, Datum *vals, bool *failed)
{
	TeamsQueryArgs a = {sql, nargs, types, vals, NULL};
	char	   *message = ToolGateInSubxact(TeamsQueryBody, &a);

	*failed = (message != NULL);
	if (message == NULL)
		return a.result;
	if (a.result)
		json_decref(a.result);
	return ToolGateError("%s", message);
}

/* ---------------------------------------------------------------------
 * Tool definitions
 * ---------------------------------------------------------------------
 */

/* adds ask_parent (child runs) and agent_teams (delegating agents) */
static void
TeamsAddTools(json_t *tools, int64 agent_id, int64 run_id, bool can_delegate)
{
	Oid			types[1] = {INT8OID};
	Datum		vals[1];
	static SPIPlanPtr plan = NULL;	/* kept: once per claimed run */
	bool		has_parent = false;
	bool		jobs = false;

	vals[0] = Int64GetDatum(run_id);
	if (SpiUtilExecPlan(&plan, "SELECT r.parent_run_id IS NOT NULL, coalesce(a.scope->'manage_jobs' = 'true', false) "
						 "FROM agent.runs r JOIN agent.agents a ON a.workspace_id = r.workspace_id AND a.id = r.agent_id "
						 "WHERE r.id = $1",	/* a co-located join (Citus) */
						 1, types, vals, NULL, true, 1) == SPI_OK_SELECT && SPI_processed == 1)
	{
		char	   *v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		char	   *j = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);

		has_parent = v && v[0] == 't';
		jobs = j && j[0] == 't';
	}
	if (jobs)
		json_array_append_new(tools, json_pack(
			"{s:s,s:s,s:{s:s,s:{s:{s:s,s:[s,s,s,s],s:s},s:{s:s,s:s},s:{s:s,s:s},s:{s:s,s:s},s:{s:s,s:s},"
			"s:{s:s,s:[s,s],s:s},s:{s:s,s:s}},s:[s]}}",
			"name", "manage_jobs",
			"description", "Manage your own recurring jobs (schedules): create, list, update or delete. "
			"Deleting needs a human's approval. A job you create or change in a chat stays disabled "
			"until a person with the edit level on you enables it.",
			"parameters", "type", "object", "properties",
			"action", "type", "string", "enum", "create", "list", "update", "delete", "description", "What to do.",
			"job_id", "type", "integer", "description", "update, delete: the job.",
			"schedule", "type", "string", "description", "create, update: 5-field cron expression, e.g. 0 9 * * 1-5.",
			"timezone", "type", "string", "description", "create, update: IANA time zone (default UTC).",
			"prompt", "type", "string", "description", "create, update: what to do at each run.",
			"scope", "type", "string", "enum", "personal", "shared",
			"description", "create, update: personal (yours) or shared (visible to the workspace).",
			"enabled", "type", "boolean", "description", "update: pause (false) or resume (true).",
			"required", "action"));
	if (has_parent)
		json_array_append_new(tools, json_pack(
			"{s:s,s:s,s:{s:s,s:{s:{s:s,s:s}},s:[s]}}",
			"name", "ask_parent",
			"description", "Ask the agent that delegated this task a question when the task is ambiguous; "
			"you wait until it answers, and get the answer as the result.",
			"parameters", "type", "object", "properties",
			"question", "type", "string", "description", "The question, self-contained.",
			"required", "question"));
	if (can_delegate)
		json_array_append_new(tools, json_pack(
			"{s:s,s:s,s:{s:s,s:{s:{s:s,s:[s,s,s,s,s,s],s:s},s:{s:s,s:s},s:{s:s,s:s},s:{s:s,s:s},s:{s:s,s:s}},s:[s]}}",
			"name", "agent_teams",
			"description", "Work with a team of agents without waiting: spawn a child run, look at its status, "
			"send it a message (e.g. an answer to its question), read its result, list your children, "
			"or wait for one of them.",
			"parameters", "type", "object", "properties",
			"action", "type", "string", "enum", "spawn", "status", "read_result", "send", "list", "wait",
			"description", "What to do.",
			"agent_id", "type", "integer", "description", "spawn: the agent to delegate to.",
			"task", "type", "string", "description", "spawn: what the agent must do, with the context it needs.",
			"run_id", "type", "integer", "description", "status, read_result, send, wait: the child run.",
			"message", "type", "string", "description", "send: the text to send.",
			"required", "action"));
}

/* ask_parent, agent_teams and manage_jobs are the family's */
static bool
TeamsHandles(const ToolRun *tr, const char *name)
{
	return strcmp(name, "ask_parent") == 0 || strcmp(name, "agent_teams") == 0 ||
		strcmp(name, "manage_jobs") == 0;
}

/* ---------------------------------------------------------------------
 * Messages
 * ---------------------------------------------------------------------
 */

/* the text a run's model reads for a delivered message, by sender and kind */
static char *
FormatMessage(const char *sender, const char *kind, const char *body)
{
	if (strcmp(kind, "question") == 0 && strncmp(sender, "run:", 4) == 0)
		return psprintf("Question from your child run %s (answer it with agent_teams action send, run_id %s):\n%s",
						sender + 4, sender + 4, body);
	if (strncmp(sender, "run:", 4) == 0)
		return psprintf("Message from the run that delegated to you (run %s):\n%s", sender + 4, body);
	return psprintf("Follow-up message from %s:\n%s", sender, body);
}

/*
 * Appends the run's undelivered messages, in order, to the conversation as
 * user messages and marks them delivered (in the caller's transaction,
 * which also saves the conversation).  Returns how many.
 */
static int
TeamsDeliver(int64 run_id, const char *workspace, LlmProvider provider, json_t *messages)
{
	Oid			types[1] = {INT8OID};
	Datum		vals[1];
	static SPIPlanPtr plan = NULL;	/* kept: once per claimed run */
	uint64		n;
	SPITupleTable *tt;
	json_t	   *seqs;

	/* most runs have none: a read-only look first (kept plan) */
	if (!TeamsPending(run_id, workspace))
		return 0;
	vals[0] = Int64GetDatum(run_id);
	if (SpiUtilExecPlan(&plan, "SELECT m.seq, m.sender, m.kind, m.body "
						 "FROM agent._teams_take_messages($1) m ORDER BY m.seq",
						 1, types, vals, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not take the messages of run " INT64_FORMAT, run_id);
	n = SPI_processed;
	if (n == 0)
		return 0;
	tt = SPI_tuptable;
	seqs = json_array();
	for (uint64 i = 0; i < n; i++)
	{
		HeapTuple	tup = tt->vals[i];
		char	   *seq = SPI_getvalue(tup, tt->tupdesc, 1);

		LlmAppendUser(provider, messages,
					  FormatMessage(SPI_getvalue(tup, tt->tupdesc, 2), SPI_getvalue(tup, tt->tupdesc, 3),
									SPI_getvalue(tup, tt->tupdesc, 4)));
		json_array_append_new(seqs, json_integer(strtoll(seq, NULL, 10)));
	}
	{
		json_t	   *out = json_pack("{s:o}", "delivered", seqs);

		ToolGateRecordStep(run_id, workspace, "message", "delivered", NULL, out, "ok", 0, 0);
		json_decref(out);
	}
	return (int) n;
}

/* whether the run has undelivered messages */
static bool
TeamsPending(int64 run_id, const char *workspace)
{
	Oid			types[2] = {INT8OID, TEXTOID};
	Datum		vals[2];
	static SPIPlanPtr plan = NULL;	/* kept: once per final answer */

	vals[0] = Int64GetDatum(run_id);
	vals[1] = CStringGetTextDatum(workspace);
	if (SpiUtilExecPlan(&plan, "SELECT 1 FROM agent.run_messages m "
						 "WHERE m.workspace_id = $2 AND m.run_id = $1 AND m.delivered_at IS NULL",
						 2, types, vals, NULL, true, 1) != SPI_OK_SELECT)
		return false;
	return SPI_processed > 0;
}

/*
 * A parent blocked on a child (delegate_to_agent, agent_teams wait): when
 * the child asked a question, the wait ends with the question as the result
 * (the message is delivered that way).  NULL when there is none.
 */
static json_t *
TeamsChildQuestion(int64 parent_run_id, const char *workspace, int64 child_run_id)
{
	Oid			types[4] = {INT8OID, TEXTOID, TEXTOID, TIMESTAMPTZOID};
	Datum		vals[4];

	vals[0] = Int64GetDatum(parent_run_id);
	vals[1] = CStringGetTextDatum(psprintf("run:" INT64_FORMAT, child_run_id));
	vals[2] = CStringGetTextDatum(workspace);
	vals[3] = TimestampTzGetDatum(GetCurrentTimestamp());	/* a value: Citus takes no volatile call in an UPDATE */
	if (SPI_execute_with_args("UPDATE agent.run_messages m SET delivered_at = $4 "
							  "WHERE m.workspace_id = $3 AND m.run_id = $1 AND m.sender = $2 AND m.kind = 'question' "
							  "AND m.delivered_at IS NULL RETURNING m.body",
							  4, types, vals, NULL, false, 0) != SPI_OK_UPDATE_RETURNING || SPI_processed == 0)
		return NULL;
	return json_pack("{s:I,s:s,s:s,s:s}", "child_run_id", (json_int_t) child_run_id,
					 "status", "waiting_input",
					 "question", SPI_getvalue(SPI_tuptable->vals[SPI_processed - 1], SPI_tuptable->tupdesc, 1),
					 "hint", "the child waits for your answer: use agent_teams action send with this run_id, "
					 "then agent_teams action wait or read_result");
}

/* ---------------------------------------------------------------------
 * ask_parent
 * ---------------------------------------------------------------------
 */

/*
 * ask_parent: a child run's question to its parent run; the child waits for
 * the answer
 */
static ToolOutcome
AskParent(const ToolRun *tr, json_t *input, json_t **result, TimestampTz started)
{
	const char *q = InputStr(input, "question");
	Oid			types[2] = {INT8OID, TEXTOID};
	Datum		vals[2];
	bool		failed;
	json_t	   *r;

	if (q == NULL || q[0] == '\0')
		return ToolGateFail(tr, "ask_parent", input, result, started,
								"ask_parent needs a non-empty string question");
	/* resumed after an answer: take it (once) */
	vals[0] = Int64GetDatum(tr->run_id);
	if (SPI_execute_with_args("SELECT m.sender, m.body FROM agent._teams_take_messages($1, 'answer', 1) m",
							  1, types, vals, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the answers of run " INT64_FORMAT, tr->run_id);
	if (SPI_processed == 1)
	{
		*result = json_pack("{s:s,s:s}",
							"answer", SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2),
							"from", SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
		ToolGateRecordStep(tr->run_id, tr->workspace, "message", "ask_parent", input, *result, "answered", 0, started);
		return TOOL_DONE;
	}
	vals[1] = CStringGetTextDatum(q);
	r = TeamsQuery("SELECT pg_catalog.to_jsonb(agent._teams_ask_parent($1, $2))", 2, types, vals, &failed);
	if (failed)
	{
		*result = r;
		ToolGateRecordStep(tr->run_id, tr->workspace, "error", "ask_parent", input, *result, "error", 0, started);
		return TOOL_DONE;
	}
	{
		json_t	   *out = json_pack("{s:o}", "message_id", r);

		ToolGateRecordStep(tr->run_id, tr->workspace, "message", "ask_parent", input, out, "waiting_input", 0, started);
		json_decref(out);
	}
	return TOOL_PAUSE;
}

/* ---------------------------------------------------------------------
 * agent_teams
 * ---------------------------------------------------------------------
 */

/*
 * agent_teams: spawn, status, read_result, send and wait on the run's child
 * runs
 */
static ToolOutcome
AgentTeams(const ToolRun *tr, json_t *input, json_t **result, int64 *child, TimestampTz started)
{
	ToolOutcome gate;
	const char *action = InputStr(input, "action");
	int64		run;
	int64		agent;
	ToolIdArg	run_arg = ToolGateInputId(input, "run_id", &run);
	ToolIdArg	agent_arg = ToolGateInputId(input, "agent_id", &agent);
	Oid			types[3] = {INT8OID, INT8OID, TEXTOID};
	Datum		vals[3];
	bool		failed = false;
	json_t	   *r = NULL;

	vals[0] = Int64GetDatum(tr->run_id);
	vals[1] = Int64GetDatum(run);
	if (run_arg == TOOL_ID_BAD || agent_arg == TOOL_ID_BAD)
		r = ToolGateError("agent_teams: %s must be a positive integer",
						  run_arg == TOOL_ID_BAD ? "run_id" : "agent_id"), failed = true;
	else if (action == NULL)
		r = ToolGateError("agent_teams needs an action: spawn, status, read_result, send, list or wait"), failed = true;
	else if (strcmp(action, "spawn") == 0)
	{
		const char *task = InputStr(input, "task");

		if (agent_arg != TOOL_ID_OK || task == NULL)
			r = ToolGateError("spawn needs an integer agent_id and a string task"), failed = true;
		/* as delegate_to_agent: only to an agent the run's identity may see */
		else if (!ContextMayDelegateTo(tr, agent))
			r = ToolGateError("delegation refused: agent " INT64_FORMAT " is not one you may delegate to", agent), failed = true;
		else
		{
			if (ToolGateHolds(tr, "agent_teams", false, input, result, started, &gate))
				return gate;
			vals[1] = Int64GetDatum(agent);
			vals[2] = CStringGetTextDatum(task);
			r = TeamsQuery("SELECT pg_catalog.jsonb_build_object('child_run_id', agent.delegate($1, $2, $3), 'status', 'queued')",
						   3, types, vals, &failed);
			if (failed)
			{
				json_t	   *e = ToolGateError("delegation refused: %s", json_string_value(json_object_get(r, "error")));

				json_decref(r);
				r = e;
			}
		}
	}
	else if (strcmp(action, "list") == 0)
		r = TeamsQuery("SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('run_id', c.id, 'agent_id', c.agent_id, "
					   "'agent', a.name, 'status', c.status, 'current_step', c.current_step, 'preview', c.preview, "
					   "'tokens_total', c.tokens_total) ORDER BY c.id), '[]') "
					   "FROM agent.runs c JOIN agent.agents a ON a.workspace_id = c.workspace_id AND a.id = c.agent_id "
					   "WHERE c.parent_run_id = $1 "
					   "AND c.workspace_id = (SELECT p.workspace_id FROM agent.runs p WHERE p.id = $1)",
					   1, types, vals, &failed);
	else if (run <= 0 && (strcmp(action, "status") == 0 || strcmp(action, "read_result") == 0 ||
						  strcmp(action, "send") == 0 || strcmp(action, "wait") == 0))
		r = ToolGateError("%s needs the integer run_id of one of your child runs", action), failed = true;
	else if (strcmp(action, "status") == 0)
		r = TeamsQuery("SELECT pg_catalog.jsonb_build_object('run_id', c.id, 'status', c.status, 'current_step', c.current_step, "
					   "'preview', c.preview, 'tokens_total', c.tokens_total) "
					   "FROM agent.runs c WHERE c.id = $2 AND c.parent_run_id = $1 "
					   "AND c.workspace_id = (SELECT p.workspace_id FROM agent.runs p WHERE p.id = $1)",
					   2, types, vals, &failed);
	else if (strcmp(action, "read_result") == 0)
		r = TeamsQuery("SELECT pg_catalog.jsonb_build_object('run_id', c.id, 'status', c.status, "
					   "'finished', NOT agent._run_is_active(c.status), 'output', c.output, 'error', c.error) "
					   "FROM agent.runs c WHERE c.id = $2 AND c.parent_run_id = $1 "
					   "AND c.workspace_id = (SELECT p.workspace_id FROM agent.runs p WHERE p.id = $1)",
					   2, types, vals, &failed);
	else if (strcmp(action, "send") == 0)
	{
		const char *msg = InputStr(input, "message");

		if (msg == NULL)
			r = ToolGateError("send needs a string message"), failed = true;
		else
		{
			vals[2] = CStringGetTextDatum(msg);
			r = TeamsQuery("SELECT pg_catalog.jsonb_build_object('message_id', agent._teams_send($1, $2, $3), 'sent', true)",
						   3, types, vals, &failed);
		}
	}
	else if (strcmp(action, "wait") == 0)
	{
		r = TeamsQuery("SELECT c.id FROM agent.runs c WHERE c.id = $2 AND c.parent_run_id = $1 "
					   "AND c.workspace_id = (SELECT p.workspace_id FROM agent.runs p WHERE p.id = $1)",
					   2, types, vals, &failed);
		if (!failed && json_is_integer(r))
		{
			json_t	   *out = json_pack("{s:I}", "child_run_id", (json_int_t) run);

			json_decref(r);
			ToolGateRecordStep(tr->run_id, tr->workspace, "tool", "agent_teams", input, out, "waiting", 0, started);
			json_decref(out);
			*child = run;
			return TOOL_WAIT_CHILD;
		}
	}
	else
		r = ToolGateError("unknown agent_teams action \"%s\"", action), failed = true;

	if (!failed && json_is_null(r))
	{
		json_decref(r);
		r = ToolGateError("run " INT64_FORMAT " is not one of your child runs", run);
		failed = true;
	}
	if (!json_is_object(r))
		r = json_pack("{s:o}", "children", r);
	*result = r;
	/* (agent.delegate records the delegate step of a spawn itself) */
	ToolGateRecordStep(tr->run_id, tr->workspace, failed ? "error" : "tool", "agent_teams", input, r, failed ? "error" : "ok", 0, started);
	return TOOL_DONE;
}

/* ---------------------------------------------------------------------
 * manage_jobs
 * ---------------------------------------------------------------------
 */

/*
 * manage_jobs: list, create, update and delete the agent's scheduled jobs
 * (scope.manage_jobs); a deletion always goes through the approval gate
 */
static ToolOutcome
ManageJobs(const ToolRun *tr, json_t *input, json_t **result, TimestampTz started)
{
	const char *action = InputStr(input, "action");
	Oid			types[3] = {INT8OID, TEXTOID, JSONBOID};
	Datum		vals[3];
	bool		failed;
	json_t	   *r;
	char	   *in;
	int64		job;

	if (action == NULL)
		return ToolGateFail(tr, "manage_jobs", input, result, started,
								"manage_jobs needs an action: create, list, update or delete");
	if (ToolGateInputId(input, "job_id", &job) == TOOL_ID_BAD)
		return ToolGateFail(tr, "manage_jobs", input, result, started,
								"manage_jobs: job_id must be a positive integer");
	/* a deletion always goes through the approval gate; otherwise the policy */
	if (strcmp(action, "delete") == 0 ||
		(strcmp(action, "list") != 0 && ToolGateNeedsApproval(tr, "manage_jobs", true)))
	{
		ToolOutcome gate = ToolGateApproval(tr, "manage_jobs", input, result, started);

		if (gate != TOOL_DONE || *result != NULL)
			return gate;
	}
	in = json_dumps(input, JSON_COMPACT);
	vals[0] = Int64GetDatum(tr->run_id);
	vals[1] = CStringGetTextDatum(action);
	vals[2] = DirectFunctionCall1(jsonb_in, CStringGetDatum(pstrdup(in)));
	free(in);
	r = TeamsQuery("SELECT agent._teams_manage_jobs($1, $2, $3)", 3, types, vals, &failed);
	*result = r;
	ToolGateRecordStep(tr->run_id, tr->workspace, failed ? "error" : "tool", "manage_jobs", input, r, failed ? "error" : "ok", 0, started);
	return TOOL_DONE;
}

/* one call of a teams tool (ToolFamilyExecute) */
static ToolOutcome
TeamsExecute(const ToolRun *tr, const char *name, json_t *input, json_t **result,
			 int64 *child_run_id, TimestampTz started)
{
	if (strcmp(name, "ask_parent") == 0)
		return AskParent(tr, input, result, started);
	if (strcmp(name, "agent_teams") == 0 && tr->can_delegate)
		return AgentTeams(tr, input, result, child_run_id, started);
	if (strcmp(name, "manage_jobs") == 0 && json_is_true(json_object_get(tr->scope, "manage_jobs")))
		return ManageJobs(tr, input, result, started);
	return ToolGateFail(tr, name, input, result, started,
							"unknown tool \"%s\"", name);
}

const ToolFamily TeamsToolFamily = {
	.family = "teams",
	.prefix = NULL,
	.handles = TeamsHandles,
	.base_definitions = NULL,
	.run_definitions = TeamsAddTools,
	.execute = TeamsExecute,
	.between_turns = TeamsDeliver,
	.between_turns_pending = TeamsPending,
	.child_poll = TeamsChildQuestion,
};
