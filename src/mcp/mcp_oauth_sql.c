/*-------------------------------------------------------------------------
 *
 * mcp_oauth_sql.c
 *		SQL-callable parts of the MCP OAuth client (agent._mcp_oauth_*).
 *
 * The flow itself is src/mcp/mcp_oauth.c, the very code the probe runs; here it
 * is driven one step per call, its whole state (metadata, registration,
 * tokens, the pending state and PKCE verifier) going in and out as jsonb,
 * kept by sql/src/705_mcp_oauth.sql in the superuser-only agent.mcp_oauth.
 * Remote failures are returned as {"ok": false, "error"}, never raised; an
 * error text never holds a token, a secret or a verifier.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "util/jansson_prelude.h"

#include <string.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "mcp.h"
#include "mcp_oauth.h"
#include "mcp_sql.h"
#include "util/guc.h"

PG_FUNCTION_INFO_V1(pg_agents_mcp_oauth_begin);
PG_FUNCTION_INFO_V1(pg_agents_mcp_oauth_complete);
PG_FUNCTION_INFO_V1(pg_agents_mcp_oauth_refresh);

/* jsonb to jansson, the text wiped (it may hold tokens). */
#define OAuthJsonb(jb) McpJsonbToJansson((jb), true)

/* Takes ownership of j; the dumped text is wiped. */
#define OAuthToJsonb(j) McpJanssonToJsonb((j), "an OAuth state", true)

/* A configuration from its jsonb settings (strings only; unknown keys ignored). */
static McpOAuthConfig *
OAuthConfig(json_t *config, json_t *state)
{
	McpOAuthConfig *o = McpOauthConfigNew();
	const char *k;
	json_t	   *v;
	char		t[32];

	snprintf(t, sizeof(t), "%d", pg_agents_request_timeout > 0 ? pg_agents_request_timeout : 30000);
	McpOauthConfigSet(o, "timeout_ms", t);
	json_object_foreach(config, k, v)
	{
		if (json_is_string(v) && strcmp(k, "private_key_file") != 0 && strcmp(k, "authorize") != 0)
			(void) McpOauthConfigSet(o, k, json_string_value(v));
	}
	McpOauthImport(o, state);
	return o;
}

/*
 * The answer of an OAuth step that ended with rc: {"ok": false, "error"},
 * or {"ok": true, "state"} with "authorization_url", "oauth_state",
 * "authorized" and "expires_at" when there are such.  A new reference.
 */
static json_t *
OAuthResult(McpOAuthConfig *o, int rc, const char *url)
{
	json_t	   *out;

	if (rc != 0)
		return json_pack("{s:b, s:s}", "ok", 0, "error", McpOauthError(o));
	out = json_pack("{s:b, s:o}", "ok", 1, "state", McpOauthExport(o));
	if (url)
		json_object_set_new(out, "authorization_url", json_string(url));
	if (McpOauthState(o))
		json_object_set_new(out, "oauth_state", json_string(McpOauthState(o)));
	if (McpOauthAccessToken(o))
		json_object_set_new(out, "authorized", json_true());
	if (McpOauthExpiresAt(o))
		json_object_set_new(out, "expires_at", json_integer(McpOauthExpiresAt(o)));
	return out;
}

/* Records the 401 (or 403) a server answers an unauthenticated request with. */
typedef struct Challenge
{
	long		status;
	char	   *www;
} Challenge;

/*
 * Auth callback of the probing tools/list: records the status and
 * WWW-Authenticate header (a malloc'd copy in the Challenge) and returns
 * non-zero, so that the client gives up instead of retrying.
 */
static int
OAuthCapture(void *arg, McpClient *c, long status, const char *www)
{
	Challenge  *ch = arg;

	ch->status = status;
	free(ch->www);
	ch->www = www ? strdup(www) : NULL;
	return -1;
}

/*
 * Abort callback of the client: non-zero when a query cancel or backend
 * termination is pending.
 */
static int
OAuthInterrupted(void *arg)
{
	return (QueryCancelPending || ProcDiePending) ? 1 : 0;
}

/*
 * The end of every agent._mcp_oauth_* call: the result of rc (with the
 * authorization URL when there is one) as jsonb; o, config and state are
 * released.
 */
static Datum
OAuthFinish(McpOAuthConfig *o, int rc, const char *auth_url, json_t *config, json_t *state)
{
	json_t	   *out = OAuthResult(o, rc, auth_url);

	McpOauthConfigFree(o);
	json_decref(config);
	json_decref(state);
	return OAuthToJsonb(out);
}

/*
 * agent._mcp_oauth_begin(url, config, state): asks the server once without
 * credentials for its WWW-Authenticate, discovers and registers, then
 * returns the authorization URL (authorization code) or the tokens (client
 * credentials).
 */
Datum
pg_agents_mcp_oauth_begin(PG_FUNCTION_ARGS)
{
	char	   *url = text_to_cstring(PG_GETARG_TEXT_PP(0));
	json_t	   *config = OAuthJsonb(PG_GETARG_JSONB_P(1));
	json_t	   *state = OAuthJsonb(PG_GETARG_JSONB_P(2));
	McpOAuthConfig *o;
	McpClient  *c;
	Challenge	ch = {0};
	json_t	   *tools = NULL;
	Datum		d;
	const char *grant;
	int			rc;
	char	   *auth_url = NULL;

	if (!json_is_object(config) || !json_is_object(state))
	{
		if (config)
			json_decref(config);
		if (state)
			json_decref(state);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("OAuth configuration and state must be JSON objects")));
	}
	grant = json_string_value(json_object_get(config, "grant"));
	o = OAuthConfig(config, state);
	c = McpClientNew(url, NULL, pg_agents_request_timeout);
	McpClientSetAbort(c, OAuthInterrupted, NULL);
	McpClientSetAuth(c, OAuthCapture, &ch);
	if (McpListTools(c, &tools) == MCP_OK && tools)
		json_decref(tools);
	McpClientClose(c);
	rc = McpOauthPrepare(o, url, ch.status ? ch.status : 401, ch.www);
	free(ch.www);
	if (rc == 0 && grant && strcmp(grant, "client_credentials") == 0)
		rc = McpOauthClientCredentials(o);
	else if (rc == 0)
	{
		auth_url = McpOauthAuthorizationUrl(o);
		if (auth_url == NULL)
			rc = -1;
	}
	d = OAuthFinish(o, rc, auth_url, config, state);
	free(auth_url);
	PG_RETURN_DATUM(d);
}

/* agent._mcp_oauth_complete(config, state, code, oauth_state, iss) */
Datum
pg_agents_mcp_oauth_complete(PG_FUNCTION_ARGS)
{
	json_t	   *config = OAuthJsonb(PG_GETARG_JSONB_P(0));
	json_t	   *state = OAuthJsonb(PG_GETARG_JSONB_P(1));
	char	   *code = text_to_cstring(PG_GETARG_TEXT_PP(2));
	char	   *oauth_state = text_to_cstring(PG_GETARG_TEXT_PP(3));
	char	   *iss = PG_ARGISNULL(4) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(4));
	McpOAuthConfig *o = OAuthConfig(config, state);
	int			rc = McpOauthComplete(o, code, oauth_state, iss);

	memset(code, 0, strlen(code));
	PG_RETURN_DATUM(OAuthFinish(o, rc, NULL, config, state));
}

/* agent._mcp_oauth_refresh(config, state): refresh token, else client credentials again. */
Datum
pg_agents_mcp_oauth_refresh(PG_FUNCTION_ARGS)
{
	json_t	   *config = OAuthJsonb(PG_GETARG_JSONB_P(0));
	json_t	   *state = OAuthJsonb(PG_GETARG_JSONB_P(1));
	const char *grant = json_string_value(json_object_get(config, "grant"));
	McpOAuthConfig *o = OAuthConfig(config, state);
	int			rc;

	if (grant && strcmp(grant, "client_credentials") == 0)
		rc = McpOauthClientCredentials(o);
	else
		rc = McpOauthRefresh(o);
	PG_RETURN_DATUM(OAuthFinish(o, rc, NULL, config, state));
}
