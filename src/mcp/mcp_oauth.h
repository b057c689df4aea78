/*-------------------------------------------------------------------------
 *
 * mcp_oauth.h
 *		OAuth 2.1 for remote MCP servers (the MCP authorization spec).
 *
 * Like src/mcp/mcp_transport.c, free of PostgreSQL backend facilities: the probe
 * bin/pg_agents_mcp and the extension link the same code.  Memory is
 * malloc'd.
 *
 * The flow, on a 401 (or a 403 with error="insufficient_scope"):
 *   discovery  protected-resource metadata (RFC 9728) from the
 *              WWW-Authenticate resource_metadata, else the path-based then
 *              the root well-known location; its resource must be this
 *              server; then the authorization server's metadata (RFC 8414
 *              and OpenID discovery, path-inserted then path-appended),
 *              whose issuer must be the one asked for.  Without protected-
 *              resource metadata (2025-03-26 servers) the server's origin is
 *              the authorization server, with /authorize, /token and
 *              /register as the fallback endpoints.
 *   client     pre-registered client_id (and secret), else a client ID
 *              metadata document URL when the server supports them, else
 *              dynamic registration (RFC 7591).  Kept per issuer: a new
 *              authorization server gets a new registration.
 *   scope      WWW-Authenticate scope, else the resource's scopes_supported,
 *              else none; on step-up the union with what was asked before;
 *              offline_access added when the authorization server offers it.
 *   grant      authorization code with PKCE S256, state, the resource
 *              parameter (RFC 8707) and the iss check (RFC 9207); or client
 *              credentials (client_secret_basic, or private_key_jwt with an
 *              ES256/RS256 assertion) for machine-to-machine servers.
 *   tokens     client_secret_basic, client_secret_post or none at the token
 *              endpoint; refresh tokens used before a new authorization.
 *
 * Secrets (tokens, client secret, PKCE verifier, private key) are never
 * written into an error text.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_MCP_OAUTH_H
#define PG_AGENTS_MCP_OAUTH_H

#include <jansson.h>

#include "mcp.h"

typedef struct McpOAuthConfig McpOAuthConfig;

extern McpOAuthConfig *McpOauthConfigNew(void);
extern void McpOauthConfigFree(McpOAuthConfig *o);

/*
 * Settings: client_id, client_secret, client_metadata_url, redirect_uri,
 * scope, grant (authorization_code | client_credentials), private_key_file,
 * private_key_pem, signing_alg (ES256 | RS256), auth_method
 * (client_secret_basic | client_secret_post | none | private_key_jwt),
 * authorize (auto: follow the authorization endpoint's redirect without a
 * browser, for tests), timeout_ms.  Returns -1 for an unknown key.
 */
extern int	McpOauthConfigSet(McpOAuthConfig *o, const char *key, const char *value);

/* Makes c answer 401/403 with this configuration (McpClientSetAuth). */
extern void McpOauthAttach(McpClient *c, McpOAuthConfig *o);

/*
 * The steps, for a caller that drives the consent itself (the SQL path):
 * discover + register after a 401 (www_authenticate may be NULL), build the
 * authorization URL (a new state and PKCE verifier), then complete it with
 * the redirect's code, state and iss (iss NULL when absent).  Each returns
 * 0, or -1 with McpOauthError set.
 */
extern int	McpOauthPrepare(McpOAuthConfig *o, const char *server_url, long status,
							  const char *www_authenticate);
extern char *McpOauthAuthorizationUrl(McpOAuthConfig *o);
extern int	McpOauthComplete(McpOAuthConfig *o, const char *code, const char *state,
							   const char *iss);
extern int	McpOauthRefresh(McpOAuthConfig *o);
extern int	McpOauthClientCredentials(McpOAuthConfig *o);

extern const char *McpOauthError(McpOAuthConfig *o);
extern const char *McpOauthAccessToken(McpOAuthConfig *o);
/* Seconds since the epoch when the access token expires, 0 when unknown. */
extern long McpOauthExpiresAt(McpOAuthConfig *o);
extern const char *McpOauthState(McpOAuthConfig *o);

/*
 * Everything learnt and obtained (metadata, registration, tokens, pending
 * state and verifier) as a JSON object, and back: what the extension keeps
 * in its superuser-only table between the authorization URL and the
 * callback, and between runs.  The export holds secrets.
 */
extern json_t *McpOauthExport(McpOAuthConfig *o);
extern void McpOauthImport(McpOAuthConfig *o, json_t *state);

#endif							/* PG_AGENTS_MCP_OAUTH_H */
