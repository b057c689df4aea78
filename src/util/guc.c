/*-------------------------------------------------------------------------
 *
 * guc.c
 *		Every pg_agents.* setting, defined once from _PG_init.
 *
 * Session identity settings are PGC_USERSET (an application sets them with
 * SET LOCAL or agent.set_identity); policy settings are PGC_SUSET so that a
 * session cannot loosen them for itself; worker settings are PGC_SIGHUP or
 * PGC_POSTMASTER; secrets are GUC_SUPERUSER_ONLY.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "utils/guc.h"
#include "utils/plancache.h"

#include "guc.h"
#include "tools/web_lists.h"

#define DEFAULT_DELEGATION_DEPTH	3
#define MAX_DELEGATION_DEPTH		5

/* session identity */
char	   *pg_agents_actor = NULL;
char	   *pg_agents_workspace = NULL;
char	   *pg_agents_run_id = NULL;
char	   *pg_agents_surface = NULL;
char	   *pg_agents_on_behalf_of = NULL;
char	   *pg_agents_acting_user = NULL;

/* worker */
char	   *pg_agents_database = NULL;
int			pg_agents_max_concurrent_runs = 8;
int			pg_agents_max_cluster_runs = 0;
int			pg_agents_launcher_naptime = 10000;
bool		pg_agents_worker_tick = true;
char	   *pg_agents_llm_provider = NULL;
char	   *pg_agents_llm_url = NULL;
char	   *pg_agents_llm_model = NULL;
char	   *pg_agents_embedding_model = NULL;
char	   *pg_agents_llm_api_key = NULL;
char	   *pg_agents_llm_url_allowlist = NULL;
char	   *pg_agents_secret_key_file = NULL;
int			pg_agents_request_timeout = 60000;
int			pg_agents_mcp_elicitation_wait = 120;
bool		pg_agents_llm_stream = false;
bool		pg_agents_llm_prompt_cache = true;
int			pg_agents_max_tool_calls_per_turn = 64;
int			pg_agents_max_reply_bytes = 4 * 1024 * 1024;
int			pg_agents_max_tool_result_bytes = 100 * 1024;
int			pg_agents_max_request_bytes = 4 * 1024 * 1024;
int			pg_agents_approval_max_input = 64 * 1024;

/* the web switch: web_fetch (tools_web.c, docs/worker.md) */
char	   *pg_agents_web_fetch_allowed_hosts = NULL;
char	   *pg_agents_web_fetch_denied_hosts = NULL;
char	   *pg_agents_web_fetch_allowed_networks = NULL;
int			pg_agents_web_fetch_max_bytes = 1024 * 1024;
int			pg_agents_web_fetch_timeout = 10000;
int			pg_agents_web_fetch_max_redirects = 5;

/* policy */
bool		pg_agents_audit_enabled = true;
int			pg_agents_audit_retention_days = 365;
int			pg_agents_run_retention_days = 365;
int			pg_agents_dedup_window = 600;
int			pg_agents_hourly_run_cap = 60;
int			pg_agents_max_delegation_depth = DEFAULT_DELEGATION_DEPTH;
int			pg_agents_approval_ttl = 72 * 60;
int			pg_agents_run_lease = 300;
int			pg_agents_max_attempts = 3;
int			pg_agents_conversation_window = 8000;	/* context: history tokens */
int			pg_agents_max_runs_per_workspace = 0;
int			pg_agents_self_retrigger_cap = 3;
int			pg_agents_filter_view_timeout = 100;
int			pg_agents_approval_rule_timeout = 200;

/* access */
int			pg_agents_access_cache_grants = 1048576;
int			pg_agents_access_backend = PGA_ACCESS_BACKEND_AUTO;

static const struct config_enum_entry access_backend_options[] = {
	{"auto", PGA_ACCESS_BACKEND_AUTO, false},
	{"spi", PGA_ACCESS_BACKEND_SPI, false},
	{NULL, 0, false}
};

/* operations (docs/operations.md) */
int			pg_agents_log_runs = 0;
int			pg_agents_drain_timeout = 10000;

static const struct config_enum_entry log_runs_options[] = {
	{"off", 0, false},
	{"errors", 1, false},
	{"all", 2, false},
	{NULL, 0, false}
};

/*
 * The API key is never displayed, to anyone (members of
 * pg_read_all_settings included); the worker reads the variable itself.
 */
static const char *
ShowApiKey(void)
{
	if (pg_agents_llm_api_key == NULL || pg_agents_llm_api_key[0] == '\0')
		return "";
	return "********";
}

/*
 * A secret is set in postgresql.conf or with ALTER SYSTEM (files only the
 * server's owner reads), never with ALTER ROLE/DATABASE ... SET nor a
 * function's SET clause, which store it in pg_db_role_setting or
 * pg_proc.proconfig: catalogs every role may read.  Those commands
 * validate the value with source PGC_S_TEST (validate_option_array_item),
 * so refusing that source makes the command itself fail; a value stored
 * before this check is refused (a WARNING) when a session applies it.
 */
static bool
CheckSecretSource(char **newval, void **extra, GucSource source)
{
	if (source == PGC_S_TEST || source == PGC_S_DATABASE ||
		source == PGC_S_USER || source == PGC_S_DATABASE_USER ||
		source == PGC_S_GLOBAL)
	{
		GUC_check_errcode(ERRCODE_INSUFFICIENT_PRIVILEGE);
		GUC_check_errmsg("pg_agents.llm_api_key cannot be set per role, per database or per function");
		GUC_check_errdetail("Such settings are stored in catalogs that every role can read.");
		GUC_check_errhint("Put it in postgresql.conf or use ALTER SYSTEM SET pg_agents.llm_api_key.");
		return false;
	}
	return true;
}

/* Defines one of the session identity settings (any user may set them). */
static void
DefineIdentityGuc(const char *name, const char *desc, char **var)
{
	DefineCustomStringVariable(name, desc, NULL, var, "",
							   PGC_USERSET, GUC_NOT_IN_SAMPLE,
							   NULL, NULL, NULL);
}

/* whether the last value assigned to pg_agents.actor named an agent */
static bool actor_is_agent = false;

bool		(*guc_actor_plans_may_fold) (void) = NULL;

/*
 * True when an actor string is "agent:<1 to 18 digits>", the same rule as
 * agent.current_agent_id().
 */
bool
GucActorIsAgent(const char *actor)
{
	const char *p;
	int			n = 0;

	if (actor == NULL || strncmp(actor, "agent:", 6) != 0)
		return false;
	for (p = actor + 6; *p; p++)
	{
		if (!isdigit((unsigned char) *p))
			return false;
		n++;
	}
	return n >= 1 && n <= 18;
}

/*
 * Assign hook of pg_agents.actor: a change between "acts as an agent" and
 * "does not" invalidates the backend's cached plans, which may hold a folded
 * allowlist policy, unless the allowlist module knows that none can
 * (guc_actor_plans_may_fold: no object uses agent._allowlist_active()).
 * Assign hooks must not fail; ResetPlanCache only marks plans invalid.
 */
static void
PgAgentsActorAssign(const char *newval, void *extra)
{
	bool		is_agent = GucActorIsAgent(newval);

	if (is_agent != actor_is_agent)
	{
		actor_is_agent = is_agent;
		if (guc_actor_plans_may_fold == NULL || guc_actor_plans_may_fold())
			ResetPlanCache();
	}
}

/*
 * Defines every pg_agents.* setting and reserves the prefix (from _PG_init).
 */
void
GucDefineAll(void)
{
	/* switching to or from an agent invalidates cached plans (allowlist policies) */
	DefineCustomStringVariable("pg_agents.actor",
							   "Who acts in this session: user:<id>, agent:<id> or system.",
							   NULL, &pg_agents_actor, "",
							   PGC_USERSET, GUC_NOT_IN_SAMPLE,
							   NULL, PgAgentsActorAssign, NULL);
	DefineIdentityGuc("pg_agents.workspace",
					  "The caller's workspace id.",
					  &pg_agents_workspace);
	DefineIdentityGuc("pg_agents.run_id",
					  "The agent run this session works for, if any.",
					  &pg_agents_run_id);
	DefineIdentityGuc("pg_agents.surface",
					  "Where the call comes from: sql, tool, http, frontend, cli, mcp or a2a.",
					  &pg_agents_surface);
	DefineIdentityGuc("pg_agents.on_behalf_of",
					  "The user an agent acts on behalf of, if any.",
					  &pg_agents_on_behalf_of);

	/*
	 * The user an API function acts for (its by_user or user_id argument),
	 * for the audit rows it writes.  Superuser-only: the extension's
	 * SECURITY DEFINER functions set it for their own call (a SET clause
	 * bounds it to the call), a caller cannot set it to name another user.
	 */
	DefineCustomStringVariable("pg_agents.acting_user",
							   "The user the running pg_agents function acts for (set by the function itself).",
							   "The audit rows of the call name this user as actor; an agent session keeps the agent as actor and names the user as on_behalf_of.",
							   &pg_agents_acting_user, "",
							   PGC_SUSET, GUC_NOT_IN_SAMPLE,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("pg_agents.database",
							   "Database in which the pg_agents worker runs; empty: every database that has the extension.",
							   "The launcher starts one worker per served database (docs/worker.md).",
							   &pg_agents_database, "",
							   PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("pg_agents.launcher_naptime",
							"How often the launcher looks for databases to serve.",
							"A database where the extension was created is served within this time.",
							&pg_agents_launcher_naptime, 10000, 100, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("pg_agents.max_cluster_runs",
							"Runs all the workers of the cluster execute at once; 0: no cap but each worker's pg_agents.max_concurrent_runs.",
							"Each worker claims only while the runs held by all of them, as last published, stay under it.",
							&pg_agents_max_cluster_runs, 0, 0, 100000,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("pg_agents.worker_tick",
							 "Whether the worker calls agent.tick() by itself every second.",
							 "Off: schedules, lease reclaim and approval expiry wait for an external agent.tick() (pg_cron, a test clock).",
							 &pg_agents_worker_tick, true,
							 PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("pg_agents.max_concurrent_runs",
							"Runs the worker executes at once.",
							NULL, &pg_agents_max_concurrent_runs, 8, 1, 1024,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("pg_agents.llm_provider",
							   "LLM wire format: openai (chat completions) or anthropic (messages).",
							   NULL, &pg_agents_llm_provider, "openai",
							   PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("pg_agents.llm_url",
							   "Base URL of the LLM endpoint, e.g. https://api.openai.com/v1.",
							   NULL, &pg_agents_llm_url, "",
							   PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("pg_agents.llm_model",
							   "Default model name.",
							   NULL, &pg_agents_llm_model, "",
							   PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("pg_agents.embedding_model",
							   "Embedding model of semantic search (search_resources over tables with an embedding column).",
							   "Empty: semantic search is off and search_resources ranks by full text only. "
							   "The query is embedded through <LLM endpoint>/embeddings (OpenAI-compatible).",
							   &pg_agents_embedding_model, "",
							   PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("pg_agents.llm_api_key",
							   "API key of the LLM endpoint.",
							   "Never shown: SHOW, current_setting and pg_settings print ******** when it is set.",
							   &pg_agents_llm_api_key, "",
							   PGC_SUSET, GUC_SUPERUSER_ONLY | GUC_NOT_IN_SAMPLE | GUC_NO_SHOW_ALL,
							   CheckSecretSource, NULL, ShowApiKey);
	DefineCustomStringVariable("pg_agents.llm_url_allowlist",
							   "Base URLs an agent's settings may name as their LLM endpoint (scope.llm_url), comma-separated.",
							   "Exact match after trimming trailing slashes; pg_agents.llm_url is always allowed. "
							   "The API key is only ever sent to pg_agents.llm_url.",
							   &pg_agents_llm_url_allowlist, "",
							   PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("pg_agents.secret_key_file",
							   "File holding the key of the secrets store (64 hex digits).",
							   "Empty: pg_agents.key beside config_file when that lies outside the data directory, else in the data directory (with a WARNING). "
							   "A relative path is taken from the data directory; created with mode 0600 by the first agent.set_secret.",
							   &pg_agents_secret_key_file, "",
							   PGC_POSTMASTER, GUC_SUPERUSER_ONLY, NULL, NULL, NULL);
	DefineCustomIntVariable("pg_agents.request_timeout",
							"Time-out of one HTTP request of the worker.",
							NULL, &pg_agents_request_timeout, 60000, 100, 3600 * 1000,
							PGC_SUSET, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("pg_agents.mcp_elicitation_wait",
							"How long the worker keeps a 2025-11-25 MCP server's stream open for a person to answer its question.",
							"0: the worker does not declare elicitation to such servers.",
							&pg_agents_mcp_elicitation_wait, 120, 0, 24 * 3600,
							PGC_SUSET, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomIntVariable("pg_agents.max_tool_calls_per_turn",
							"Tool calls one model reply may ask for; a reply asking for more fails the run.",
							NULL, &pg_agents_max_tool_calls_per_turn, 64, 1, 10000,
							PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("pg_agents.max_reply_bytes",
							"Largest LLM reply the worker reads; past it the worker stops reading and the run fails.",
							NULL, &pg_agents_max_reply_bytes, 4 * 1024 * 1024, 1024, 1024 * 1024 * 1024,
							PGC_SUSET, GUC_UNIT_BYTE, NULL, NULL, NULL);
	/* issue 36: what goes back to the model is bounded (docs/worker.md) */
	DefineCustomIntVariable("pg_agents.max_tool_result_bytes",
							"Largest tool result (built-in or MCP) the model is given; a longer one is cut, and the cut is said in the text.",
							NULL, &pg_agents_max_tool_result_bytes, 100 * 1024, 1024, 256 * 1024 * 1024,
							PGC_SUSET, GUC_UNIT_BYTE, NULL, NULL, NULL);
	DefineCustomIntVariable("pg_agents.max_request_bytes",
							"Largest conversation sent to the model in one request; past it the oldest tool results are elided, and the elision is said.",
							NULL, &pg_agents_max_request_bytes, 4 * 1024 * 1024, 16 * 1024, 1024 * 1024 * 1024,
							PGC_SUSET, GUC_UNIT_BYTE, NULL, NULL, NULL);
	/* issue 31: the web switch, web_fetch (tools_web.c, docs/worker.md) */
	DefineCustomStringVariable("pg_agents.web_fetch_allowed_hosts",
							   "Hosts web_fetch may fetch from, comma-separated; empty: any host with a public address.",
							   "An entry is a host name or address literal matched exactly (case-insensitive), or *.example.com "
							   "for example.com and its subdomains. Addresses are still checked after DNS resolution.",
							   &pg_agents_web_fetch_allowed_hosts, "",
							   PGC_SUSET, 0, WebFetchCheckHosts, NULL, NULL);
	DefineCustomStringVariable("pg_agents.web_fetch_denied_hosts",
							   "Hosts web_fetch never fetches from, comma-separated, in the syntax of pg_agents.web_fetch_allowed_hosts; wins over it.",
							   NULL, &pg_agents_web_fetch_denied_hosts, "",
							   PGC_SUSET, 0, WebFetchCheckHosts, NULL, NULL);
	DefineCustomStringVariable("pg_agents.web_fetch_allowed_networks",
							   "Non-public networks web_fetch may connect to (CIDR, comma-separated), where plain http is allowed too; empty: none.",
							   "Loopback, private, link-local (169.254.0.0/16, the cloud metadata address), shared, "
							   "multicast and reserved addresses are refused unless listed here, e.g. 127.0.0.1/32 for tests.",
							   &pg_agents_web_fetch_allowed_networks, "",
							   PGC_SUSET, 0, WebFetchCheckNetworks, NULL, NULL);
	DefineCustomIntVariable("pg_agents.web_fetch_max_bytes",
							"Largest response body web_fetch reads; a longer one is cut, and the cut is said in the result.",
							NULL, &pg_agents_web_fetch_max_bytes, 1024 * 1024, 1024, 64 * 1024 * 1024,
							PGC_SUSET, GUC_UNIT_BYTE, NULL, NULL, NULL);
	DefineCustomIntVariable("pg_agents.web_fetch_timeout",
							"Time-out of one web_fetch call, redirects included (the worker waits for it).",
							NULL, &pg_agents_web_fetch_timeout, 10000, 100, 120 * 1000,
							PGC_SUSET, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("pg_agents.web_fetch_max_redirects",
							"Redirects web_fetch follows at most, each checked as the first URL.",
							NULL, &pg_agents_web_fetch_max_redirects, 5, 0, 20,
							PGC_SUSET, 0, NULL, NULL, NULL);
	/* issue 17 (wire): streaming and Anthropic prompt caching (docs/worker.md) */
	DefineCustomBoolVariable("pg_agents.llm_stream",
							 "Whether the worker streams LLM replies (server-sent events) and publishes text deltas on NOTIFY agent_run_deltas.",
							 NULL, &pg_agents_llm_stream, false,
							 PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("pg_agents.llm_prompt_cache",
							 "Whether the worker marks the system prompt and the tool list as cacheable (Anthropic cache_control) when they are long enough.",
							 "Marked when system prompt and tools are estimated at 1024 tokens or more (characters / 4).",
							 &pg_agents_llm_prompt_cache, true,
							 PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("pg_agents.approval_max_input",
							"Largest tool input (as JSON text) an approval may show; a larger call is refused when it asks for approval.",
							NULL, &pg_agents_approval_max_input, 64 * 1024, 256, 64 * 1024 * 1024,
							PGC_SUSET, GUC_UNIT_BYTE, NULL, NULL, NULL);

	DefineCustomBoolVariable("pg_agents.audit_enabled",
							 "Whether audit triggers record changes (global kill switch).",
							 NULL, &pg_agents_audit_enabled, true,
							 PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("pg_agents.audit_retention_days",
							"Days audit rows are kept by agent.purge_audit(); 0 keeps them forever.",
							NULL, &pg_agents_audit_retention_days, 365, 0, INT_MAX,
							PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("pg_agents.run_retention_days",
							"Days ended runs (with their steps) are kept by agent.purge_runs(); 0 keeps them forever.",
							"A delegation tree is removed whole, once every run in it ended that long ago.",
							&pg_agents_run_retention_days, 365, 0, INT_MAX,
							PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("pg_agents.dedup_window",
							"Window in which the same event makes one run per trigger.",
							NULL, &pg_agents_dedup_window, 600, 0, 7 * 24 * 3600,
							PGC_SUSET, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomIntVariable("pg_agents.hourly_run_cap",
							"Default autonomous runs per agent per hour.",
							NULL, &pg_agents_hourly_run_cap, 60, 0, INT_MAX,
							PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("pg_agents.max_delegation_depth",
							"Maximum delegation depth counted from the root run (0 to 5).",
							"A negative value falls back to the default 3; a value above 5 is clamped to 5.",
							&pg_agents_max_delegation_depth, DEFAULT_DELEGATION_DEPTH,
							INT_MIN, INT_MAX, PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("pg_agents.approval_ttl",
							"How long a pending approval waits before it expires.",
							NULL, &pg_agents_approval_ttl, 72 * 60, 1, INT_MAX,
							PGC_SUSET, GUC_UNIT_MIN, NULL, NULL, NULL);
	DefineCustomIntVariable("pg_agents.run_lease",
							"How long a claimed run stays leased to its executor.",
							NULL, &pg_agents_run_lease, 300, 1, 24 * 3600,
							PGC_SUSET, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomIntVariable("pg_agents.conversation_window",
							"Estimated tokens of earlier turns a chat run receives (characters / 4).",
							"The newest turns that fit are kept, the oldest dropped first; 0 sends no history.",
							&pg_agents_conversation_window, 8000, 0, 10000000,
							PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("pg_agents.max_attempts",
							"Claims of one run before it fails.",
							NULL, &pg_agents_max_attempts, 3, 1, 100,
							PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("pg_agents.max_runs_per_workspace",
							"Runs of one workspace running at once; agent.claim_runs skips a workspace at its cap.",
							"0 (the default) sets no cap. Runs waiting for an approval, input or child runs do not count.",
							&pg_agents_max_runs_per_workspace, 0, 0, INT_MAX,
							PGC_SUSET, 0, NULL, NULL, NULL);

	DefineCustomIntVariable("pg_agents.self_retrigger_cap",
							"Runs in a chain an agent may trigger through its own writes (triggers with allow_self_retrigger).",
							NULL, &pg_agents_self_retrigger_cap, 3, 0, 100,
							PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("pg_agents.filter_view_timeout",
							"Longest time a trigger filter's view may take for one event.",
							"Past it the event does not match that trigger, whose last_error says why; the write that fired the event goes on.",
							&pg_agents_filter_view_timeout, 100, 1, 60000,
							PGC_SUSET, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("pg_agents.approval_rule_timeout",
							"Longest time an approval rule's function may take for one tool call.",
							"Past it the call needs approval (a rule fails closed), and the request says why.",
							&pg_agents_approval_rule_timeout, 200, 1, 60000,
							PGC_SUSET, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("pg_agents.access_cache_grants",
							"Grants agent.can_access keeps in memory per backend while a snapshot lasts.",
							"0 makes every check probe the index.",
							&pg_agents_access_cache_grants, 1048576, 0, 16 * 1024 * 1024,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomEnumVariable("pg_agents.access_backend",
							 "How access decisions read their tables: auto (index scans, queries for a table Citus manages) or spi (queries for every table).",
							 "A developer setting: spi reads a local table as a Citus-managed one is read, so that the tests prove both give the same answers; slower.",
							 &pg_agents_access_backend, PGA_ACCESS_BACKEND_AUTO,
							 access_backend_options, PGC_SUSET, 0, NULL, NULL, NULL);

	/* operations (docs/operations.md) */
	DefineCustomEnumVariable("pg_agents.log_runs",
							 "Writes one LOG line per finished run: off, errors (failed, budget_exceeded, expired) or all.",
							 "The line carries ids, status, times, tokens and an error code, never the run's content.",
							 &pg_agents_log_runs, 0, log_runs_options,
							 PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("pg_agents.drain_timeout",
							"How long the worker lets requests in flight finish on SIGTERM before it requeues the rest.",
							"Keep it well below the shutdown time-out of pg_ctl (60 s) or of the service manager.",
							&pg_agents_drain_timeout, 10000, 0, 600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);

	MarkGUCPrefixReserved("pg_agents");
}

/*
 * The delegation depth in force: a negative setting falls back to the
 * default, a setting above the hard ceiling is clamped to it.
 */
int
GucEffectiveDelegationDepth(void)
{
	if (pg_agents_max_delegation_depth < 0)
		return DEFAULT_DELEGATION_DEPTH;
	if (pg_agents_max_delegation_depth > MAX_DELEGATION_DEPTH)
		return MAX_DELEGATION_DEPTH;
	return pg_agents_max_delegation_depth;
}
