/*-------------------------------------------------------------------------
 *
 * context.c
 *		Context assembly: what the model receives at the start of a run, in
 *		one place (docs/worker.md, "Context assembly").  In order:
 *
 *		system prompt
 *		  1. who it is: the agent's name and the run's regime;
 *		  2. the agent's instructions, link tokens rendered;
 *		  3. the instruction page's body (agents.instruction_page_id), read
 *		     through the registered table of type page with the run's
 *		     identity and access, link tokens rendered;
 *		  4. the usable skills: id, name and a one-line description (first
 *		     line of the body), from the registered table of type skill,
 *		     only those the run may read (autonomous: granted and within the
 *		     owner's ACL; manual: the user's);
 *		  5. for a delegated run: its depth, the limit, and whether it may
 *		     delegate further;
 *		messages
 *		  6. the conversation's earlier turns (runs of agent.send_message),
 *		     within pg_agents.conversation_window;
 *		  7. the run's input: prompt, task and attachments of a delegation,
 *		     message, event (its payload only when the run may read it);
 *		tools
 *		  8. the built-in tools, delegate_to_agent (listing the agents the
 *		     run's identity may delegate to, offered only below the depth
 *		     limit and when one is listed) and use_skill (when a skill is
 *		     usable), then MCP and teams tools (agent_teams below the depth
 *		     limit of an agent with a delegation list).
 *
 *		Nothing else reaches the model unless a tool fetches it.  Link
 *		tokens [[page:ID]] and [[fdpage:ID]] become the page's title when
 *		the run may read the page, and CONTEXT_NO_ACCESS otherwise: the
 *		title of a page the run may not read is never looked up.
 *
 *		Reads of application tables run as the tool role (agents_tool) with
 *		the run's identity set, after agent.can_access under the run's
 *		regime, as the built-in tools do (tools_builtin.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "util/jansson_prelude.h"
#include "context.h"
#include "llm/llm.h"
#include "tools/tool_gate.h"
#include "tools/tools.h"
#include "util/guc.h"
#include "util/spi_util.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#define MAX_SKILLS			50
#define MAX_LINKS			100
#define MAX_ID_LEN			200

/* ---------------------------------------------------------------------
 * Reads as the run
 * ---------------------------------------------------------------------
 */

typedef struct RegTable
{
	char	   *tbl;
	char	   *id_col;
	char	   *title_col;
	char	   *body_col;
} RegTable;

/*
 * The tables registered in agent.resource_tables for resource type rtype, as a
 * list of RegTable (qualified table name and quoted id, title and body
 * columns), ordered by table name.  NIL when there are none or the query
 * fails.  Uses SPI: the caller is connected.
 */
static List *
RegisteredTables(const char *rtype)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[1] = {TEXTOID};
	Datum		vals[1];
	List	   *out = NIL;

	vals[0] = CStringGetTextDatum(rtype);
	if (SpiUtilExecPlan(&plan,
						 "SELECT pg_catalog.format('%I.%I', n.nspname, c.relname), "
						 "pg_catalog.quote_ident(r.id_column::pg_catalog.text), "
						 "pg_catalog.quote_ident(r.title_column::pg_catalog.text), "
						 "pg_catalog.quote_ident(r.body_column::pg_catalog.text) "
						 "FROM agent.resource_tables r "
						 "JOIN pg_catalog.pg_class c ON c.oid = r.tbl::pg_catalog.oid "
						 "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
						 "WHERE r.resource_type = $1 ORDER BY 1",
						 1, types, vals, NULL, true, 0) != SPI_OK_SELECT)
		return NIL;
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		RegTable   *t = palloc(sizeof(RegTable));

		t->tbl = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		t->id_col = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
		t->title_col = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 3);
		t->body_col = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 4);
		out = lappend(out, t);
	}
	return out;
}

/* agent.can_access under the run's regime (errors count as no) */
static bool
MayRead(const ToolRun *tr, const char *rtype, const char *rid)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[5] = {INT8OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		vals[5];
	char		nulls[5] = "     ";
	char	   *v;

	vals[0] = Int64GetDatum(tr->agent_id);
	vals[1] = CStringGetTextDatum(rtype);
	vals[2] = CStringGetTextDatum(rid);
	vals[3] = CStringGetTextDatum(tr->regime);
	vals[4] = tr->user_id ? CStringGetTextDatum(tr->user_id) : (Datum) 0;
	nulls[4] = tr->user_id ? ' ' : 'n';
	if (SpiUtilExecPlan(&plan, "SELECT coalesce(agent.can_access($1, $2, $3, 'read', $4, $5), false)",
						 5, types, vals, nulls, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		return false;
	v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	return v && v[0] == 't';
}

/*
 * SPI result callback of ReadAsRun: {title, body} of the first row, or NULL
 * when the query found no row.
 */
static json_t *
RowTitleBody(void *arg)
{
	if (SPI_processed == 0)
		return NULL;
	return json_pack("{s:s?,s:s?}", "title", SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1),
					 "body", SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2));
}

/*
 * {title, body} of a resource the run may read, read as the tool role (RLS
 * applies); NULL when refused, absent or failing.  *allowed says whether
 * can_access let it through.
 */
static json_t *
ReadAsRun(const ToolRun *tr, const char *rtype, const char *rid, bool *allowed)
{
	List	   *tables;
	ListCell   *lc;
	Oid			types[1] = {TEXTOID};
	Datum		vals[1];

	*allowed = MayRead(tr, rtype, rid);
	if (!*allowed)
		return NULL;
	tables = RegisteredTables(rtype);
	vals[0] = CStringGetTextDatum(rid);
	foreach(lc, tables)
	{
		RegTable   *t = (RegTable *) lfirst(lc);
		bool		failed;
		json_t	   *r;

		r = ToolGateRunAsTool(psprintf("SELECT t.%s::pg_catalog.text, t.%s::pg_catalog.text FROM %s t "
									"WHERE t.%s::pg_catalog.text OPERATOR(pg_catalog.=) $1 LIMIT 1",
									t->title_col, t->body_col, t->tbl, t->id_col),
						   1, types, vals, NULL, SPI_OK_SELECT, RowTitleBody, NULL, &failed);
		if (failed)
		{
			if (r)
				json_decref(r);
			continue;
		}
		if (r)
			return r;
	}
	return NULL;
}

/* ---------------------------------------------------------------------
 * Link tokens
 * ---------------------------------------------------------------------
 */

/*
 * Replaces [[page:ID]] and [[fdpage:ID]] by the page's title when the run
 * may read it, by CONTEXT_NO_ACCESS otherwise (also when it does not exist,
 * has no title, or past MAX_LINKS tokens).  Other text is kept as is.
 */
static char *
RenderLinks(const ToolRun *tr, const char *text, json_t *cache)
{
	StringInfoData b;
	const char *p = text;
	int			links = 0;

	if (text == NULL)
		return pstrdup("");
	if (strstr(text, "[[") == NULL)
		return pstrdup(text);
	initStringInfo(&b);
	while (*p)
	{
		int			prefix = 0;
		const char *end;

		if (strncmp(p, "[[page:", 7) == 0)
			prefix = 7;
		else if (strncmp(p, "[[fdpage:", 9) == 0)
			prefix = 9;
		end = prefix ? strstr(p + prefix, "]]") : NULL;
		if (end && end > p + prefix && end - (p + prefix) <= MAX_ID_LEN &&
			strcspn(p + prefix, " \t\r\n[]") >= (size_t) (end - (p + prefix)))
		{
			char	   *id = pnstrdup(p + prefix, end - (p + prefix));
			json_t	   *known = json_object_get(cache, id);
			const char *title = NULL;

			if (known == NULL)
			{
				bool		allowed = false;
				json_t	   *row = (++links <= MAX_LINKS) ? ReadAsRun(tr, "page", id, &allowed) : NULL;
				const char *t = row ? json_string_value(json_object_get(row, "title")) : NULL;

				known = (t && t[0]) ? json_string(t) : json_null();
				json_object_set_new(cache, id, known);
				if (row)
					json_decref(row);
			}
			title = json_string_value(known);
			appendStringInfoString(&b, title ? title : CONTEXT_NO_ACCESS);
			p = end + 2;
			continue;
		}
		appendStringInfoChar(&b, *p);
		p++;
	}
	return b.data;
}

/* ---------------------------------------------------------------------
 * What the run may use: skills, agents to delegate to
 * ---------------------------------------------------------------------
 */

/*
 * SPI result callback of UsableSkills: the rows (id, name, description) as
 * a JSON array of objects, NULL columns left out.
 */
static json_t *
SkillRows(void *arg)
{
	json_t	   *list = json_array();

	for (uint64 i = 0; i < SPI_processed; i++)
		json_array_append_new(list, json_pack("{s:s?,s:s?,s:s?}",
											  "id", SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1),
											  "name", SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2),
											  "description", SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 3)));
	return list;
}

/* the skills the run may read: [{id, name, description}], by name */
static json_t *
UsableSkills(const ToolRun *tr)
{
	List	   *tables;
	ListCell   *lc;
	json_t	   *all = json_array();
	Oid			types[3] = {INT8OID, TEXTOID, TEXTOID};
	Datum		vals[3];
	char		nulls[3] = "   ";

	/* (autonomous: only granted skills are usable; the claim looked for one) */
	tables = RegisteredTables("skill");
	vals[0] = Int64GetDatum(tr->agent_id);
	vals[1] = CStringGetTextDatum(tr->regime);
	vals[2] = tr->user_id ? CStringGetTextDatum(tr->user_id) : (Datum) 0;
	nulls[2] = tr->user_id ? ' ' : 'n';
	foreach(lc, tables)
	{
		RegTable   *t = (RegTable *) lfirst(lc);
		bool		failed;
		json_t	   *rows;
		size_t		i;
		json_t	   *v;

		rows = ToolGateRunAsTool(psprintf("SELECT t.%s::pg_catalog.text, t.%s::pg_catalog.text, "
									   "pg_catalog.left(pg_catalog.split_part(pg_catalog.btrim(coalesce(t.%s::pg_catalog.text, ''), "
									   "E' \\n\\r\\t'), E'\\n', 1), 160) "
									   "FROM %s t WHERE agent.can_access($1, 'skill', t.%s::pg_catalog.text, 'read', $2, $3) "
									   "ORDER BY 2, 1 LIMIT %d",
									   t->id_col, t->title_col, t->body_col, t->tbl, t->id_col, MAX_SKILLS),
							  3, types, vals, nulls, SPI_OK_SELECT, SkillRows, NULL, &failed);
		if (failed)
		{
			if (rows)
				json_decref(rows);
			continue;
		}
		json_array_foreach(rows, i, v)
			if (json_array_size(all) < MAX_SKILLS)
				json_array_append(all, v);
		json_decref(rows);
	}
	return all;
}

/*
 * The identity whose visibility decides delegation (manual: the user who
 * asked; autonomous: the owner), palloc'd, or NULL when the run is gone.
 * The levels are decided in a statement of their own (RunIdentityMay): on
 * Citus, a function called in a query of a distributed table goes with the
 * query to the worker of the shard, where agent._user_level may not read
 * the other distributed tables.
 */
static char *
RunIdentity(const ToolRun *tr)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[2] = {INT8OID, TEXTOID};
	Datum		vals[2];

	vals[0] = Int64GetDatum(tr->run_id);
	vals[1] = CStringGetTextDatum(tr->workspace ? tr->workspace : "");
	if (SpiUtilExecPlan(&plan,
						 "SELECT CASE WHEN r.regime = 'manual' THEN r.requested_by ELSE a.owner_id END "
						 "FROM agent.runs r JOIN agent.agents a ON a.workspace_id = r.workspace_id AND a.id = r.agent_id "
						 "WHERE r.workspace_id = $2 AND r.id = $1",
						 2, types, vals, NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		return NULL;
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

/*
 * The ids among agent_ids (a JSON array of ids, as text) that identity may
 * see, as the text of a bigint[] (palloc'd); a statement on no table, run
 * where it is called.
 */
static char *
RunIdentityMay(const char *identity, const char *agent_ids)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		vals[2];
	char		nulls[2] = {' ', ' '};
	char	   *v;

	vals[0] = identity ? CStringGetTextDatum(identity) : (Datum) 0;
	nulls[0] = identity ? ' ' : 'n';
	vals[1] = CStringGetTextDatum(agent_ids);
	if (SpiUtilExecPlan(&plan,
						 "SELECT coalesce(pg_catalog.array_agg(x.id ORDER BY x.id), '{}')::pg_catalog.text "
						 "FROM (SELECT DISTINCT pg_catalog.jsonb_array_elements_text($2::pg_catalog.jsonb)::pg_catalog.int8 AS id) x "
						 "WHERE agent._user_level($1, x.id) IS NOT NULL",
						 2, types, vals, nulls, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		return NULL;
	v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	return v ? v : pstrdup("{}");
}

/*
 * Where the run stands for delegation (agent.delegation_context) and the
 * agents of its list its identity may see (manual: the user; autonomous:
 * the owner), with the one-line description of their scope.
 */
static void
Delegation(const ToolRun *tr, ContextRun *cr)
{
	static SPIPlanPtr plan_ctx = NULL;
	static SPIPlanPtr plan_list = NULL;
	Oid			types[2] = {INT8OID, TEXTOID};
	Datum		vals[2];
	char	   *v;
	char	   *ids;
	char	   *identity;

	vals[0] = Int64GetDatum(tr->run_id);
	if (SpiUtilExecPlan(&plan_ctx,
						 "SELECT (c.j ->> 'max_depth')::pg_catalog.int4, "
						 "coalesce((SELECT pg_catalog.jsonb_agg(e ->> 'agent_id') "
						 "          FROM pg_catalog.jsonb_array_elements(c.j -> 'delegates') e), '[]')::pg_catalog.text "
						 "FROM (SELECT agent.delegation_context($1) AS j) c",
						 1, types, vals, NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		return;
	v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	cr->max_depth = v ? atoi(v) : 0;
	ids = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	identity = RunIdentity(tr);
	ids = RunIdentityMay(identity, ids ? ids : "[]");
	cr->delegates = NULL;
	types[0] = TEXTOID;
	vals[0] = CStringGetTextDatum(ids ? ids : "{}");
	vals[1] = CStringGetTextDatum(tr->workspace ? tr->workspace : "");
	if (SpiUtilExecPlan(&plan_list,
						 "SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('agent_id', d.id, 'name', d.name, "
						 "  'description', pg_catalog.left(pg_catalog.split_part(pg_catalog.btrim(coalesce(d.scope ->> 'description', '')), "
						 "  E'\\n', 1), 160)) ORDER BY d.id), '[]')::pg_catalog.text "
						 "FROM agent.agents d WHERE d.workspace_id = $2 "
						 " AND d.id = ANY ($1::pg_catalog.int8[])",
						 2, types, vals, NULL, true, 1) == SPI_OK_SELECT && SPI_processed == 1)
	{
		v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		cr->delegates = v ? json_loads(v, 0, NULL) : NULL;
	}
	if (cr->delegates == NULL)
		cr->delegates = json_array();
	/* below the limit: the teams tools; with an agent to offer: delegate_to_agent */
	cr->can_delegate = cr->depth < cr->max_depth;
	cr->offer_delegate = cr->can_delegate && json_array_size(cr->delegates) > 0;
}

/* the depth line of a delegated run also needs the limit without a list */
static int
DepthLimit(void)
{
	return GucEffectiveDelegationDepth();
}

/* ---------------------------------------------------------------------
 * Tools
 * ---------------------------------------------------------------------
 */

/*
 * The definition of the delegate_to_agent tool offered to a run that may
 * delegate: its description lists the agents of cr->delegates (id, name,
 * description), its parameters are agent_id, task and attachments.
 */
static json_t *
DelegateTool(ContextRun *cr)
{
	StringInfoData d;
	size_t		i;
	json_t	   *a;

	initStringInfo(&d);
	appendStringInfoString(&d, "Hand a task to another agent and get its result. You may delegate to:");
	json_array_foreach(cr->delegates, i, a)
	{
		const char *desc = json_string_value(json_object_get(a, "description"));

		appendStringInfo(&d, "\n- %" JSON_INTEGER_FORMAT " %s%s%s", json_integer_value(json_object_get(a, "agent_id")),
						 json_string_value(json_object_get(a, "name")),
						 desc && desc[0] ? ": " : "", desc && desc[0] ? desc : "");
	}
	return json_pack("{s:s,s:s,s:{s:s,s:{s:{s:s,s:s},s:{s:s,s:s},s:{s:s,s:s,s:{s:s,s:{s:{s:s},s:{s:s}},s:[s,s]}}},s:[s,s]}}",
					 "name", "delegate_to_agent",
					 "description", d.data,
					 "parameters", "type", "object", "properties",
					 "agent_id", "type", "integer", "description", "Id of the agent to delegate to.",
					 "task", "type", "string", "description", "What the agent must do, with the context it needs.",
					 "attachments", "type", "array",
					 "description", "Resources it needs; it reads them with its own access.",
					 "items", "type", "object", "properties",
					 "resource_type", "type", "string",
					 "resource_id", "type", "string",
					 "required", "resource_type", "resource_id",
					 "required", "agent_id", "task");
}

/*
 * The definition (name, description, JSON schema of the parameters) of the
 * use_skill tool offered to a run that has skills.
 */
static json_t *
UseSkillTool(void)
{
	return json_pack("{s:s,s:s,s:{s:s,s:{s:{s:s,s:s}},s:[s]}}",
					 "name", "use_skill",
					 "description", "Load one of your skills (its full instructions) by id.",
					 "parameters", "type", "object", "properties",
					 "skill_id", "type", "string", "description", "Id of the skill.",
					 "required", "skill_id");
}

/*
 * Whether the run's identity may see the agent it delegates to (manual: the
 * user; autonomous: the owner): an agent it may not see is not offered, and
 * a call naming it anyway is refused.
 */
bool
ContextMayDelegateTo(const ToolRun *tr, int64 child_agent_id)
{
	char	   *may = RunIdentityMay(RunIdentity(tr), psprintf("[" INT64_FORMAT "]", child_agent_id));

	return may != NULL && strcmp(may, "{}") != 0;
}

/* ---------------------------------------------------------------------
 * The run's input (7)
 * ---------------------------------------------------------------------
 */

/*
 * The user message of a run from its input (palloc'd): the input's prompt
 * (else the trigger's), a delegated task with its attachments, a message or
 * text, and an event with its resource and payload, each on its own lines.
 * When none of these is there, the whole input as JSON, or a bare "proceed
 * with your instructions" when it is empty.  origin (the run's origin) is
 * quoted in the event and fallback lines.
 */
static char *
BuildPrompt(json_t *input, const char *trigger_prompt, const char *origin)
{
	StringInfoData b;
	json_t	   *task = json_object_get(input, "task");
	json_t	   *att = json_object_get(input, "attachments");
	json_t	   *prompt = json_object_get(input, "prompt");
	json_t	   *event = json_object_get(input, "event");
	const char *keys[] = {"message", "text"};

	initStringInfo(&b);
	if (json_is_string(prompt))
		appendStringInfo(&b, "%s\n", json_string_value(prompt));
	else if (trigger_prompt && trigger_prompt[0])
		appendStringInfo(&b, "%s\n", trigger_prompt);
	if (json_is_string(task))
	{
		appendStringInfo(&b, "Task delegated to you:\n%s\n", json_string_value(task));
		if (json_array_size(att) > 0)
		{
			char	   *a = json_dumps(att, JSON_COMPACT);

			appendStringInfo(&b, "Attachments:\n%s\n", a);
			free(a);
		}
	}
	for (int i = 0; i < lengthof(keys); i++)
	{
		json_t	   *v = json_object_get(input, keys[i]);

		if (json_is_string(v))
			appendStringInfo(&b, "%s\n", json_string_value(v));
	}
	if (json_is_string(event))
	{
		json_t	   *payload = json_object_get(input, "payload");

		appendStringInfo(&b, "Event %s on %s %s (%s).\n", json_string_value(event),
						 json_string_value(json_object_get(input, "resource_type")) ?: "?",
						 json_string_value(json_object_get(input, "resource_id")) ?: "?", origin);
		if (payload && json_object_size(payload) > 0)
		{
			char	   *a = json_dumps(payload, JSON_COMPACT | JSON_SORT_KEYS);

			appendStringInfo(&b, "Payload:\n%s\n", a);
			free(a);
		}
	}
	if (b.len == 0)
	{
		if (json_object_size(input) > 0)
		{
			char	   *a = json_dumps(input, JSON_COMPACT | JSON_SORT_KEYS);

			appendStringInfo(&b, "Run input (%s):\n%s\n", origin, a);
			free(a);
		}
		else
			appendStringInfo(&b, "Run (%s): proceed with your instructions.\n", origin);
	}
	return b.data;
}

/*
 * An event payload carries the row that changed: it reaches the prompt only
 * when the run may read that resource (the resource itself, or the row as a
 * resource of that type).  Otherwise it is replaced by a notice.
 */
static void
WithholdUnreadablePayload(json_t *input, int64 agent_id, const char *regime, const char *user_id)
{
	json_t	   *payload = json_object_get(input, "payload");
	const char *rtype = json_string_value(json_object_get(input, "resource_type"));
	const char *rid = json_string_value(json_object_get(input, "resource_id"));
	json_t	   *jrow = json_object_get(payload, "row_id");
	char	   *row_id = NULL;
	Oid			types[6] = {INT8OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		vals[6];
	char		nulls[6] = "      ";
	bool		manual = strcmp(regime, "manual") == 0;
	static SPIPlanPtr payload_plan = NULL;

	if (!json_is_object(payload) || json_object_size(payload) == 0 || rtype == NULL)
		return;
	if (json_is_string(jrow))
		row_id = pstrdup(json_string_value(jrow));
	else if (json_is_integer(jrow))
		row_id = psprintf("%" JSON_INTEGER_FORMAT, json_integer_value(jrow));
	vals[0] = Int64GetDatum(agent_id);
	vals[1] = CStringGetTextDatum(rtype);
	vals[2] = rid ? CStringGetTextDatum(rid) : (Datum) 0;
	nulls[2] = rid ? ' ' : 'n';
	vals[3] = CStringGetTextDatum(regime);
	vals[4] = (manual && user_id) ? CStringGetTextDatum(user_id) : (Datum) 0;
	nulls[4] = (manual && user_id) ? ' ' : 'n';
	vals[5] = row_id ? CStringGetTextDatum(row_id) : (Datum) 0;
	nulls[5] = row_id ? ' ' : 'n';
	if (SpiUtilExecPlan(&payload_plan,
						 "SELECT coalesce($3 IS NOT NULL AND agent.can_access($1, $2, $3, 'read', $4, $5), false) "
						 "OR coalesce($6 IS NOT NULL AND agent.can_access($1, $2, $6, 'read', $4, $5), false)",
						 6, types, vals, nulls, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not check the event payload's resource");
	if (strcmp(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1), "t") == 0)
		return;
	json_object_set_new(input, "payload",
						json_pack("{s:s}", "withheld",
								  "the changed row is not shown: this run may not read that resource"));
}

/* appends a user turn, joined to a user turn that got no answer */
static void
AppendUser(LlmProvider provider, json_t *messages, const char *text)
{
	json_t	   *last = json_array_get(messages, json_array_size(messages) - 1);

	if (last && strcmp(json_string_value(json_object_get(last, "role")) ?: "", "user") == 0 &&
		json_is_string(json_object_get(last, "content")))
	{
		json_object_set_new(last, "content",
							json_string(psprintf("%s\n\n%s", json_string_value(json_object_get(last, "content")), text)));
		return;
	}
	LlmAppendUser(provider, messages, text);
}

/* the earlier turns of a chat run (6) */
static void
AppendHistory(const ToolRun *tr, LlmProvider provider, json_t *messages)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[2] = {INT8OID, INT4OID};
	Datum		vals[2];
	SPITupleTable *tt;
	uint64		n;

	if (pg_agents_conversation_window <= 0)
		return;
	vals[0] = Int64GetDatum(tr->run_id);
	vals[1] = Int32GetDatum(pg_agents_conversation_window);
	if (SpiUtilExecPlan(&plan, "SELECT h.role, h.content FROM agent._conversation_history($1, $2) h",
						 2, types, vals, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the conversation's history");
	tt = SPI_tuptable;
	n = SPI_processed;
	for (uint64 i = 0; i < n; i++)
	{
		char	   *role = SPI_getvalue(tt->vals[i], tt->tupdesc, 1);
		char	   *content = SPI_getvalue(tt->vals[i], tt->tupdesc, 2);

		if (strcmp(role, "user") == 0)
			AppendUser(provider, messages, content ? content : "");
		else
			json_array_append_new(messages, json_pack("{s:s,s:s}", "role", "assistant",
													  "content", content ? content : ""));
	}
}

/* ---------------------------------------------------------------------
 * Assembly
 * ---------------------------------------------------------------------
 */

static const char *const identity_gucs[] = {"pg_agents.actor", "pg_agents.on_behalf_of", "pg_agents.run_id",
"pg_agents.surface", "pg_agents.workspace"};

/* the identity settings as they were before the assembly set the run's */
static void
SetIdentityBack(char **saved)
{
	for (int i = 0; i < lengthof(identity_gucs); i++)
		(void) set_config_option(identity_gucs[i], saved[i] ? saved[i] : "", PGC_SUSET, PGC_S_SESSION,
								 GUC_ACTION_LOCAL, true, 0, false);
}

typedef struct AssembleArg
{
	const ToolRun *tr;
	ContextRun *cr;
	bool		reads;			/* something to read as the run */
} AssembleArg;

/*
 * The work of ContextAssemble, run inside a subtransaction (or directly when
 * nothing is read as the run): builds cr->system from the agent's
 * instructions, instruction page, skills and delegation, and for a new run
 * appends the history and the prompt to cr->messages.  Reading the page and
 * skills is done under the run's identity settings, which are set back to
 * their previous values at the end.  Errors propagate to the caller.
 */
static void
AssembleBody(void *p)
{
	AssembleArg *a = (AssembleArg *) p;
	const ToolRun *tr = a->tr;
	ContextRun *cr = a->cr;
	StringInfoData sys;
	json_t	   *cache = json_object();
	char	   *instructions;
	json_t	   *skills;
	size_t		i;
	json_t	   *v;
	char	   *saved[lengthof(identity_gucs)];

	if (a->reads)
	{
		for (int k = 0; k < lengthof(identity_gucs); k++)
		{
			const char *cur = GetConfigOption(identity_gucs[k], true, false);

			saved[k] = cur ? pstrdup(cur) : NULL;
		}
		ToolGateSetIdentity(tr);
	}

	/* 1, 2: who it is, its instructions */
	initStringInfo(&sys);
	instructions = RenderLinks(tr, cr->instructions, cache);
	appendStringInfo(&sys, "You are \"%s\", an agent working inside a database application "
					 "(%s run). Use the tools to read, search or change resources; you only "
					 "ever see what this run may access.\n\n%s",
					 cr->agent_name, tr->regime, instructions);

	/* 3: the instruction page */
	if (cr->page_id && cr->page_id[0])
	{
		bool		allowed;
		json_t	   *page = ReadAsRun(tr, "page", cr->page_id, &allowed);
		json_t	   *ref = json_pack("{s:s,s:s}", "resource_type", "page", "resource_id", cr->page_id);

		if (page)
		{
			const char *title = json_string_value(json_object_get(page, "title"));

			appendStringInfo(&sys, "\n\nInstruction page%s%s%s:\n%s",
							 title && title[0] ? " \"" : "", title && title[0] ? title : "",
							 title && title[0] ? "\"" : "",
							 RenderLinks(tr, json_string_value(json_object_get(page, "body")), cache));
			if (cr->fresh)
				ToolGateRecordStep(tr->run_id, tr->workspace, "read", "instruction_page", ref, ref, "ok", 0, 0);
			json_decref(page);
		}
		else
		{
			json_t	   *out = json_pack("{s:s}", "reason", allowed ? "not_found" : "no_access");

			appendStringInfo(&sys, "\n\nInstruction page: %s", CONTEXT_NO_ACCESS);
			if (cr->fresh)
				ToolGateRecordStep(tr->run_id, tr->workspace, allowed ? "error" : "denied", "instruction_page", ref, out,
								allowed ? "error" : "denied", 0, 0);
			json_decref(out);
		}
		json_decref(ref);
	}

	/* 4: skills */
	skills = a->reads ? UsableSkills(tr) : json_array();
	cr->has_skills = json_array_size(skills) > 0;
	if (cr->has_skills)
	{
		appendStringInfoString(&sys, "\n\nSkills you may use (load one with use_skill before following it):");
		json_array_foreach(skills, i, v)
		{
			const char *desc = json_string_value(json_object_get(v, "description"));

			appendStringInfo(&sys, "\n- %s: %s%s%s", json_string_value(json_object_get(v, "id")),
							 json_string_value(json_object_get(v, "name")) ?: "",
							 desc && desc[0] ? " - " : "", desc && desc[0] ? desc : "");
		}
	}
	json_decref(skills);

	/* 5: delegation (and tool 8) */
	cr->max_depth = DepthLimit();
	if (cr->delegation_listed)
		Delegation(tr, cr);
	if (cr->depth > 0)
		appendStringInfo(&sys, "\n\nYou are a delegated run at depth %d (the limit is %d): %s",
						 cr->depth, cr->max_depth,
						 cr->offer_delegate ? "you may delegate further." : "you may not delegate further.");
	cr->system = sys.data;

	/* 6, 7: the messages of a new run */
	if (cr->fresh)
	{
		char	   *prompt;

		if (json_object_get(cr->input, "conversation_id") && strcmp(tr->regime, "manual") == 0)
			AppendHistory(tr, cr->provider, cr->messages);
		WithholdUnreadablePayload(cr->input, tr->agent_id, tr->regime, tr->user_id);
		prompt = BuildPrompt(cr->input, cr->trigger_prompt, cr->origin);
		AppendUser(cr->provider, cr->messages, prompt);
	}
	json_decref(cache);
	if (a->reads)
		SetIdentityBack(saved);
}

/*
 * Assembles the run's context (the list at the top of this file): sets
 * cr->system and cr->can_delegate, appends delegate_to_agent and use_skill
 * to cr->tools and, for a new run (cr->fresh), the first messages to
 * cr->messages.  Runs in a subtransaction: returns NULL, or the error that
 * stopped it (the caller fails the run, nothing of it is kept).
 */
char *
ContextAssemble(const ToolRun *tr, ContextRun *cr)
{
	AssembleArg a = {tr, cr, false};
	size_t		nmsg = json_array_size(cr->messages);
	char	   *err = NULL;

	cr->can_delegate = false;
	cr->offer_delegate = false;
	cr->has_skills = false;
	cr->delegates = NULL;
	cr->system = NULL;
	/*
	 * Reads of application tables (the page, links, skills) run as the run,
	 * in a subtransaction; a run with nothing to read (most autonomous
	 * runs) is assembled directly, as cheaply as before.
	 */
	a.reads = (cr->page_id && cr->page_id[0]) || (cr->instructions && strstr(cr->instructions, "[[")) ||
		cr->skills_possible;
	if (a.reads)
		err = ToolGateInSubxact(AssembleBody, &a);
	else
		AssembleBody(&a);
	if (err)
	{
		while (json_array_size(cr->messages) > nmsg)
			json_array_remove(cr->messages, json_array_size(cr->messages) - 1);
		cr->can_delegate = false;
		cr->offer_delegate = false;
		cr->has_skills = false;
	}
	else
	{
		if (cr->offer_delegate)
			json_array_append_new(cr->tools, DelegateTool(cr));
		if (cr->has_skills)
			json_array_append_new(cr->tools, UseSkillTool());
	}
	if (cr->delegates)
		json_decref(cr->delegates);
	cr->delegates = NULL;
	return err;
}
