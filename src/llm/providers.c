/*-------------------------------------------------------------------------
 *
 * providers.c
 *		LLM providers as configuration (docs/worker.md, "Providers"): which
 *		endpoint, key, model, headers, time-out, streaming flag and limits a
 *		run's requests use.
 *
 * The worker keeps the rows of agent.providers in memory with their
 * ${secret:NAME} references resolved (the API key, header values: among the
 * provider's workspace's secrets and the cluster's, the cluster's only for a
 * cluster provider), plus the
 * default provider made of the GUCs (pg_agents.llm_url, llm_provider,
 * llm_model, llm_api_key, which may itself be a reference).  The copy is
 * reloaded, in a short transaction, when the configuration generation
 * moved (a committed change of agent.providers or agent.secrets: see
 * ratelimit.c) or the GUCs changed, before the next request is started:
 * rotation takes effect at the next request without a restart.
 *
 * ProviderResolve is the one place that decides, for a run, where its
 * requests go and with which key:
 *   - the agent's settings name a provider (scope.provider) of the run's
 *     workspace or of the cluster: that provider's base URL, key, headers,
 *     limits; its key goes to its base URL only.  Another workspace's
 *     provider is refused (the run fails), whatever the settings say.
 *     A run that acts for a user (its key user: the requester of a manual
 *     run, the creator of a run_as creator schedule job) who has own
 *     secrets of the names the provider references (agent.secrets.user_id,
 *     in the run's workspace) uses those values: a variant of the entry
 *     made at load time; every other run the workspace's (or cluster's);
 *   - else the agent's own endpoint (scope.llm_url, allowlisted) without a
 *     key, or the default provider of the GUCs, whose key goes only to
 *     pg_agents.llm_url.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "util/jansson_prelude.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "llm.h"
#include "providers.h"
#include "ratelimit.h"
#include "secrets.h"
#include "util/config_gen.h"
#include "util/guc.h"
#include "util/spi_util.h"

typedef struct ProviderEntry
{
	int64		id;
	char	   *name;
	char	   *workspace;		/* NULL: a cluster provider */
	LlmProvider kind;
	char	   *base_url;
	char	   *api_key;		/* resolved */
	char	   *default_model;
	char	  **headers;		/* "Name: value", resolved */
	int			nheaders;
	const char **secrets;		/* values that came from the store (masked in errors) */
	int			nsecrets;
	int			request_timeout;	/* ms, 0: pg_agents.request_timeout */
	bool		stream;
	int			max_concurrent;
	int			rpm;
	int			tpm;
	int			rl;
	char	   *error;			/* why it cannot be used (a secret is missing ...) */
	/* a user variant (the user's own secrets resolved): whose, and of which entry */
	char	   *user_workspace;
	char	   *user;
	int64		base_id;
	/* the references as stored (for the user variants) */
	char	   *api_key_ref;
	char	   *headers_json;
} ProviderEntry;

static MemoryContext prov_cxt = NULL;
static ProviderEntry *entries = NULL;
static int	nentries = 0;
static ProviderEntry *uentries = NULL;	/* user variants */
static int	nuentries = 0;
static bool loaded = false;
static uint64 loaded_gen = 0;
static char *loaded_guc_key = NULL;	/* pg_agents.llm_api_key as loaded */

/* the default provider's key, resolved */
static char *default_key = NULL;
static char *default_key_error = NULL;
static int	default_rl = -1;

/*
 * Moves whenever what ProviderResolve reads may have changed (the copy
 * reloaded, the configuration file re-read): a resolution kept by a run
 * (run_slot.c) is done again then, and its pointers are not used after.
 */
static uint64 epoch = 1;

/* the keys and header values of the copy overwritten before its memory goes */
static void
WipeEntries(void)
{
	for (int i = 0; i < nentries; i++)
	{
		if (entries[i].api_key)
			explicit_bzero(entries[i].api_key, strlen(entries[i].api_key));
		for (int j = 0; j < entries[i].nheaders; j++)
			explicit_bzero(entries[i].headers[j], strlen(entries[i].headers[j]));
	}
	for (int i = 0; i < nuentries; i++)
	{
		if (uentries[i].api_key)
			explicit_bzero(uentries[i].api_key, strlen(uentries[i].api_key));
		for (int j = 0; j < uentries[i].nheaders; j++)
			explicit_bzero(uentries[i].headers[j], strlen(uentries[i].headers[j]));
	}
	if (default_key)
		explicit_bzero(default_key, strlen(default_key));
	entries = NULL;
	nentries = 0;
	uentries = NULL;
	nuentries = 0;
	default_key = NULL;
	default_key_error = NULL;
	loaded_guc_key = NULL;
}

/* pg_agents.llm_api_key changed since the copy was loaded */
static bool
GucKeyChanged(void)
{
	const char *now = pg_agents_llm_api_key ? pg_agents_llm_api_key : "";

	return loaded_guc_key == NULL || strcmp(loaded_guc_key, now) != 0;
}

/* whether the copy must be reloaded before the next request */
bool
ProvidersStale(void)
{
	uint64		gen = ConfigGeneration();

	return !loaded || gen == 0 || gen != loaded_gen || GucKeyChanged();
}

/* the columns of agent.providers the copy reads, by name */
enum
{
	PC_ID, PC_NAME, PC_KIND, PC_BASE_URL, PC_API_KEY, PC_DEFAULT_MODEL, PC_HEADERS,
	PC_REQUEST_TIMEOUT, PC_STREAM, PC_MAX_CONCURRENT, PC_RPM, PC_TPM, PC_WORKSPACE, PC_COUNT
};

static const char *const provider_columns[PC_COUNT] = {
	"id", "name", "kind", "base_url", "api_key", "default_model", "headers",
	"request_timeout", "stream", "max_concurrent", "requests_per_minute", "tokens_per_minute",
	"workspace_id"
};

/* the epoch of the resolutions (see above) */
uint64
ProvidersEpoch(void)
{
	return epoch;
}

/* the configuration file was re-read (SIGHUP): the GUCs a resolution points into may be gone */
void
ProvidersConfigReloaded(void)
{
	epoch++;
}

/*
 * The headers of a provider (a json object of "Name": "value"), their
 * ${secret:NAME} references resolved; the values that came from the store
 * are kept aside to be masked in errors.  A header that cannot be resolved
 * makes the provider unusable (e->error).
 */
static void
EntryHeaders(ProviderEntry *e, const char *headers_json, bool *used_user)
{
	json_t	   *h = headers_json ? json_loads(headers_json, 0, NULL) : NULL;
	char	   *err = NULL;

	if (json_is_object(h) && json_object_size(h) > 0)
	{
		const char *k;
		json_t	   *hv;

		e->headers = palloc0(sizeof(char *) * json_object_size(h));
		e->secrets = palloc0(sizeof(char *) * (json_object_size(h) + 1));
		json_object_foreach(h, k, hv)
		{
			char	   *x;

			if (!json_is_string(hv) || e->error)
				continue;
			{
				bool		used = false;

				x = SecretsExpandFor(json_string_value(hv), e->workspace, e->user_workspace, e->user, &used, &err);
				if (used && used_user)
					*used_user = true;
			}
			if (x == NULL)
			{
				e->error = psprintf("header \"%s\" of provider \"%s\" cannot be used: %s", k, e->name, err);
				continue;
			}
			e->headers[e->nheaders++] = psprintf("%s: %s", k, x);
			if (SecretsHasReference(json_string_value(hv)))
				e->secrets[e->nsecrets++] = e->headers[e->nheaders - 1] + strlen(k) + 2;
			explicit_bzero(x, strlen(x));
		}
	}
	if (h)
		json_decref(h);
}

/*
 * One row of agent.providers in the copy (in prov_cxt): its key and headers
 * resolved, its limiter's bucket.  A provider that cannot be used keeps
 * why in e->error, which its runs then fail with.
 */
static void
EntryFromRow(ProviderEntry *e, HeapTuple tup, TupleDesc td, const int *att)
{
	bool		isnull;
	char	   *v;
	char	   *err = NULL;

	e->id = DatumGetInt64(SPI_getbinval(tup, td, att[PC_ID], &isnull));
	e->name = SPI_getvalue(tup, td, att[PC_NAME]);
	e->workspace = SPI_getvalue(tup, td, att[PC_WORKSPACE]);	/* NULL: cluster */
	if (!LlmParseProvider(SPI_getvalue(tup, td, att[PC_KIND]), &e->kind))
		e->error = psprintf("provider \"%s\" has an unknown kind", e->name);
	e->base_url = SPI_getvalue(tup, td, att[PC_BASE_URL]);
	v = SPI_getvalue(tup, td, att[PC_API_KEY]);
	e->api_key_ref = v;
	if (v && !e->error)
	{
		e->api_key = SecretsExpandIn(v, e->workspace, &err);
		if (e->api_key == NULL)
			e->error = psprintf("the API key of provider \"%s\" cannot be used: %s", e->name, err);
	}
	e->default_model = SPI_getvalue(tup, td, att[PC_DEFAULT_MODEL]);
	e->request_timeout = DatumGetInt32(SPI_getbinval(tup, td, att[PC_REQUEST_TIMEOUT], &isnull));
	e->stream = DatumGetBool(SPI_getbinval(tup, td, att[PC_STREAM], &isnull));
	e->max_concurrent = DatumGetInt32(SPI_getbinval(tup, td, att[PC_MAX_CONCURRENT], &isnull));
	e->rpm = DatumGetInt32(SPI_getbinval(tup, td, att[PC_RPM], &isnull));
	e->tpm = DatumGetInt32(SPI_getbinval(tup, td, att[PC_TPM], &isnull));
	e->headers_json = SPI_getvalue(tup, td, att[PC_HEADERS]);
	EntryHeaders(e, e->headers_json, NULL);
	e->rl = RateLimitFor(e->id, e->name, e->max_concurrent, e->rpm, e->tpm);
}

/*
 * The variant of provider entry b for a user's own secrets (user of
 * workspace uws): its key and headers resolved with that user's secrets
 * first.  false when none of its references names a secret the user has
 * (no variant: the user's runs use b as everyone's).
 */
static bool
UserVariant(ProviderEntry *v, const ProviderEntry *b, const char *uws, const char *user)
{
	bool		used = false;
	char	   *err = NULL;

	if (b->error || (b->workspace && strcmp(b->workspace, uws) != 0))
		return false;
	if (!SecretsHasReference(b->api_key_ref) && !SecretsHasReference(b->headers_json))
		return false;
	*v = *b;
	v->base_id = b->id;
	v->user_workspace = pstrdup(uws);
	v->user = pstrdup(user);
	v->api_key = NULL;
	v->headers = NULL;
	v->nheaders = 0;
	v->secrets = NULL;
	v->nsecrets = 0;
	if (b->api_key_ref)
	{
		v->api_key = SecretsExpandFor(b->api_key_ref, b->workspace, uws, user, &used, &err);
		if (v->api_key == NULL)
			v->error = psprintf("the API key of provider \"%s\" cannot be used for user \"%s\": %s", b->name, user, err);
	}
	EntryHeaders(v, b->headers_json, &used);
	if (!used)
	{
		if (v->api_key)
			explicit_bzero(v->api_key, strlen(v->api_key));
		for (int j = 0; j < v->nheaders; j++)
			explicit_bzero(v->headers[j], strlen(v->headers[j]));
	}
	return used;
}

/*
 * Reloads providers and their secrets (inside a transaction).  A provider
 * whose secret cannot be resolved is kept with its error, which its runs
 * then fail with.
 */
void
ProvidersLoad(void)
{
	MemoryContext old;
	uint64		gen = ConfigGeneration();
	int64	   *alive;
	char	   *err = NULL;
	int			rc;
	int			att[PC_COUNT];

	if (prov_cxt == NULL)
		prov_cxt = AllocSetContextCreate(TopMemoryContext, "pg_agents providers", ALLOCSET_SMALL_SIZES);
	loaded = false;				/* until this load completes */
	epoch++;					/* the entries resolutions point into go */
	WipeEntries();
	MemoryContextReset(prov_cxt);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	rc = SPI_execute("SELECT p.id, p.name, p.kind, p.base_url, p.api_key, p.default_model, "
					 "p.headers::pg_catalog.text AS headers, "
					 "coalesce(p.request_timeout, 0) AS request_timeout, p.stream, "
					 "coalesce(p.max_concurrent, 0) AS max_concurrent, "
					 "coalesce(p.requests_per_minute, 0) AS requests_per_minute, "
					 "coalesce(p.tokens_per_minute, 0) AS tokens_per_minute, p.workspace_id "
					 "FROM agent.providers p ORDER BY p.id", true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read agent.providers");
	SpiUtilColumnsByName(SPI_tuptable->tupdesc, provider_columns, att, PC_COUNT);
	old = MemoryContextSwitchTo(prov_cxt);
	nentries = (int) SPI_processed;
	entries = palloc0(sizeof(ProviderEntry) * Max(nentries, 1));
	alive = palloc(sizeof(int64) * Max(nentries, 1));
	for (int i = 0; i < nentries; i++)
	{
		EntryFromRow(&entries[i], SPI_tuptable->vals[i], SPI_tuptable->tupdesc, att);
		alive[i] = entries[i].id;
	}
	RateLimitForget(alive, nentries);
	MemoryContextSwitchTo(old);

	/*
	 * Users' own secrets (agent.secrets.user_id): one variant of each
	 * provider that references a secret of that name, for that user's runs
	 * in that workspace.
	 */
	rc = SPI_execute("SELECT DISTINCT s.workspace_id, s.user_id FROM agent.secrets s "
					 "WHERE s.user_id IS NOT NULL ORDER BY 1, 2", true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read agent.secrets");
	old = MemoryContextSwitchTo(prov_cxt);
	{
		int			npairs = (int) SPI_processed;
		SPITupleTable *pairs = SPI_tuptable;
		int			cap = Max(npairs * Max(nentries, 1), 1);

		uentries = palloc0(sizeof(ProviderEntry) * cap);
		for (int u = 0; u < npairs; u++)
		{
			char	   *uws = SPI_getvalue(pairs->vals[u], pairs->tupdesc, 1);
			char	   *user = SPI_getvalue(pairs->vals[u], pairs->tupdesc, 2);

			for (int i = 0; i < nentries && uws && user; i++)
				if (UserVariant(&uentries[nuentries], &entries[i], uws, user))
					nuentries++;
		}
	}

	/* the default provider: the GUCs, its key possibly a reference */
	loaded_guc_key = pstrdup(pg_agents_llm_api_key ? pg_agents_llm_api_key : "");
	if (loaded_guc_key[0] != '\0')
	{
		default_key = SecretsExpand(loaded_guc_key, &err);
		if (default_key == NULL)
			default_key_error = psprintf("pg_agents.llm_api_key cannot be used: %s", err);
	}
	MemoryContextSwitchTo(old);
	SPI_finish();
	default_rl = RateLimitFor(0, "", 0, 0, 0);
	loaded = true;
	loaded_gen = gen;
}

/* the provider of that name, or NULL */
static ProviderEntry *
Lookup(const char *name)
{
	for (int i = 0; i < nentries; i++)
		if (strcmp(entries[i].name, name) == 0)
			return &entries[i];
	return NULL;
}

/* the variant of entry e for that user of that workspace, or e */
static ProviderEntry *
ForUser(ProviderEntry *e, const char *workspace, const char *user)
{
	if (user == NULL || workspace == NULL)
		return e;
	for (int i = 0; i < nuentries; i++)
		if (uentries[i].base_id == e->id && strcmp(uentries[i].user, user) == 0 &&
			strcmp(uentries[i].user_workspace, workspace) == 0)
			return &uentries[i];
	return e;
}

/*
 * A provider the agent's settings name (scope.provider): its row's
 * endpoint, key, limits.  Only a provider of the run's workspace or of the
 * cluster: the settings may have been written around agent.save_settings,
 * or the provider re-created in another workspace since.
 */
static bool
ResolveNamed(json_t *scope, const char *workspace, const char *user, const char *pname,
			 const char *agent_model, ProviderResolved *out, char **error)
{
	ProviderEntry *e = Lookup(pname);

	if (e == NULL)
	{
		*error = psprintf("LLM provider \"%s\" does not exist (named in the agent's settings)", pname);
		return false;
	}
	if (e->workspace && (workspace == NULL || strcmp(e->workspace, workspace) != 0))
	{
		*error = psprintf("LLM provider \"%s\" (named in the agent's settings) is not a provider of the run's workspace \"%s\" nor of the cluster: the worker does not use it",
						  pname, workspace ? workspace : "");
		return false;
	}
	/* a run acting for a user with own secrets: that user's key and headers */
	e = ForUser(e, workspace, user);
	if (e->error)
	{
		*error = pstrdup(e->error);
		return false;
	}
	if (json_object_get(scope, "llm_url") || json_object_get(scope, "llm_provider"))
	{
		*error = pstrdup("the agent's settings name both a provider and scope llm_url/llm_provider");
		return false;
	}
	out->name = e->name;
	out->kind = e->kind;
	out->base_url = e->base_url;
	out->api_key = e->api_key;	/* the provider's key, to its own base URL only */
	out->model = (agent_model && agent_model[0]) ? agent_model :
		(e->default_model && e->default_model[0]) ? e->default_model : "default";
	out->headers = (const char *const *) e->headers;
	out->nheaders = e->nheaders;
	out->secrets = e->secrets;
	out->nsecrets = e->nsecrets;
	out->request_timeout = e->request_timeout > 0 ? e->request_timeout : pg_agents_request_timeout;
	out->stream = e->stream;
	out->max_concurrent = e->max_concurrent;
	out->requests_per_minute = e->rpm;
	out->tokens_per_minute = e->tpm;
	out->ratelimit = e->rl;
	return true;
}

/*
 * No provider named: the agent's own endpoint (scope llm_url, allowlisted,
 * without a key) or the default provider of the GUCs, whose key goes only
 * to pg_agents.llm_url.
 */
static bool
ResolveDefault(json_t *scope, const char *agent_model, ProviderResolved *out, char **error)
{
	const char *prov = json_string_value(json_object_get(scope, "llm_provider"));
	const char *url = json_string_value(json_object_get(scope, "llm_url"));
	bool		own = url != NULL;

	if (prov == NULL)
		prov = pg_agents_llm_provider;
	if (url == NULL)
		url = pg_agents_llm_url;
	if (!LlmParseProvider(prov, &out->kind))
	{
		*error = psprintf("unknown LLM provider \"%s\" (expected openai or anthropic)", prov);
		return false;
	}
	if (url == NULL || url[0] == '\0')
	{
		*error = pstrdup("no LLM endpoint: set pg_agents.llm_url (or the agent's scope llm_url, or name a provider)");
		return false;
	}

	/*
	 * An agent's own endpoint is called only while a superuser allows it
	 * (the allowlist may have changed since the settings were saved, or
	 * the row was written around agent.save_settings).
	 */
	if (own && !LlmUrlAllowed(url))
	{
		*error = psprintf("the agent's LLM endpoint (scope llm_url \"%s\") is not in pg_agents.llm_url_allowlist: the worker does not call it",
						  url);
		return false;
	}
	out->base_url = url;
	/* the default key only ever goes to pg_agents.llm_url */
	if (LlmUrlEqual(url, pg_agents_llm_url) && pg_agents_llm_api_key && pg_agents_llm_api_key[0])
	{
		if (default_key_error)
		{
			*error = pstrdup(default_key_error);
			return false;
		}
		out->api_key = default_key;
	}
	out->model = (agent_model && agent_model[0]) ? agent_model :
		(pg_agents_llm_model && pg_agents_llm_model[0]) ? pg_agents_llm_model : "default";
	out->request_timeout = pg_agents_request_timeout;
	out->stream = false;
	out->ratelimit = LlmUrlEqual(url, pg_agents_llm_url) ? default_rl : -1;
	return true;
}

/*
 * For a run of an agent with this scope and model setting: where its
 * requests go, with which key, headers, limits.  false with *error (a
 * sentence for the run's error) when the run cannot be served.  Pointers
 * stay valid until ProvidersEpoch moves (the next ProvidersLoad, or the
 * configuration re-read: some point into the GUCs).
 */
bool
ProviderResolve(json_t *scope, const char *workspace, const char *key_user, const char *agent_model,
				ProviderResolved *out, char **error)
{
	const char *pname = json_string_value(json_object_get(scope, "provider"));

	memset(out, 0, sizeof(*out));
	out->ratelimit = -1;
	if (pname)
		return ResolveNamed(scope, workspace, key_user, pname, agent_model, out, error);
	return ResolveDefault(scope, agent_model, out, error);
}

/* the provider's extra headers appended to a request's list */
struct curl_slist *
ProviderAddHeaders(const ProviderResolved *rp, struct curl_slist *h)
{
	for (int i = 0; i < rp->nheaders; i++)
		h = curl_slist_append(h, rp->headers[i]);
	return h;
}

/*
 * A copy of msg with the key replaced by "[secret]" wherever it appears
 * (an endpoint that echoes the key in its error must not put it in a step).
 */
static char *
ScrubOne(char *msg, const char *key)
{
	StringInfoData b;
	const char *p = msg;
	size_t		kl;

	if (key == NULL || (kl = strlen(key)) < 4 || strstr(msg, key) == NULL)
		return msg;
	initStringInfo(&b);
	while (*p)
	{
		const char *q = strstr(p, key);

		if (q == NULL)
		{
			appendStringInfoString(&b, p);
			break;
		}
		appendBinaryStringInfo(&b, p, q - p);
		appendStringInfoString(&b, "[secret]");
		p = q + kl;
	}
	return b.data;
}

/*
 * A copy of msg with the key, and header values that came from the secrets
 * store, replaced by "[secret]" wherever they appear (an endpoint that
 * echoes the key in its error must not put it in a step).
 */
char *
ProviderScrub(const ProviderResolved *rp, const char *msg)
{
	char	   *out;

	if (msg == NULL)
		return NULL;
	out = pstrdup(msg);
	if (rp == NULL)
		return out;
	out = ScrubOne(out, rp->api_key);
	for (int i = 0; i < rp->nsecrets; i++)
		out = ScrubOne(out, rp->secrets[i]);
	return out;
}

/*
 * The workspace of an MCP server (palloc'd), whose secrets (and the
 * cluster's) its ${secret:NAME} header values resolve among; NULL when the
 * server is gone (then only the cluster's).  Needs an open transaction.
 */
char *
McpServerWorkspace(int64 server_id)
{
	Oid			types[1] = {INT8OID};
	Datum		vals[1] = {Int64GetDatum(server_id)};
	MemoryContext cxt = CurrentMemoryContext;
	char	   *ws = NULL;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT s.workspace_id FROM agent.mcp_servers s WHERE s.id OPERATOR(pg_catalog.=) $1",
							  1, types, vals, NULL, true, 1) == SPI_OK_SELECT && SPI_processed == 1)
	{
		char	   *v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		if (v)
			ws = MemoryContextStrdup(cxt, v);
	}
	SPI_finish();
	return ws;
}
