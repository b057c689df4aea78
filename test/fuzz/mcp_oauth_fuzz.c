/*
 * libFuzzer harness for OAuth 2.1 of remote MCP servers (src/mcp/mcp_oauth.c)
 * as a hostile resource or authorization server sees it: the
 * WWW-Authenticate challenge, protected-resource and authorization-server
 * metadata (with their fallbacks), dynamic registration, the token
 * responses of the code, refresh and client-credentials grants, the
 * authorization redirect's query (authorize=auto), and the export/import
 * of what was learnt; also through an McpClient that meets a 401.  The
 * network is fake_curl.c (the MCP client, src/mcp_*.c, and src/mcp/mcp_oauth.c are linked whole).
 *
 * Input: one byte of flags (bit 0: client credentials, else the code
 * grant; bit 1: a pre-registered client; bit 2: client_secret_post; bit 3:
 * through an McpClient with authorize=auto; bit 4: a 403 instead of a 401;
 * bit 5: the callback's iss is the learnt issuer), one byte seeding the
 * chunk boundaries, a line with the WWW-Authenticate value (empty: none),
 * then the script of fake_curl.h.
 *
 * Checks: no crash, no leak, no sanitizer report (the expiry arithmetic
 * among them), within the limits; a failed step has an error; export then
 * import then export gives the same object.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_curl.h"
#include "mcp/mcp.h"
#include "mcp/mcp_oauth.h"

static void
check_roundtrip(McpOAuthConfig *o)
{
	json_t	   *a = McpOauthExport(o);
	McpOAuthConfig *p = McpOauthConfigNew();
	json_t	   *b;

	McpOauthImport(p, a);
	b = McpOauthExport(p);
	if (!json_equal(a, b))
		abort();
	json_decref(a);
	json_decref(b);
	McpOauthConfigFree(p);
	(void) McpOauthExpiresAt(o);
}

static void
check_step(McpOAuthConfig *o, int rc)
{
	if (rc != 0 && (McpOauthError(o) == NULL || McpOauthError(o)[0] == '\0'))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	McpOAuthConfig *o;
	const uint8_t *nl;
	char	   *www = NULL;
	int			flags;

	if (size < 2)
		return 0;
	flags = data[0];
	nl = memchr(data + 2, '\n', size - 2);
	if (nl == NULL)
		return 0;
	if (nl > data + 2)
		www = strndup((const char *) data + 2, nl - (data + 2));
	fake_curl_script(nl + 1, size - (nl + 1 - data), data[1]);

	o = McpOauthConfigNew();
	McpOauthConfigSet(o, "redirect_uri", "http://127.0.0.1:5000/callback");
	McpOauthConfigSet(o, "timeout_ms", "5000");
	if (flags & 1)
		McpOauthConfigSet(o, "grant", "client_credentials");
	if ((flags & 2) || (flags & 1))
	{
		McpOauthConfigSet(o, "client_id", "pre-registered");
		McpOauthConfigSet(o, "client_secret", "secret");
	}
	if (flags & 4)
		McpOauthConfigSet(o, "auth_method", "client_secret_post");

	if (flags & 8)
	{
		McpClient  *c = McpClientNew("https://mcp.example/mcp", NULL, 10000);
		json_t	   *tools = NULL;

		McpOauthConfigSet(o, "authorize", "auto");
		McpClientSetProtocol(c, "2025-11-25");
		McpOauthAttach(c, o);
		if (McpListTools(c, &tools) == MCP_OK)
			json_decref(tools);
		(void) strlen(McpClientError(c));
		McpClientClose(c);
	}
	else
	{
		int			rc = McpOauthPrepare(o, "https://mcp.example/mcp", (flags & 16) ? 403 : 401, www);

		check_step(o, rc);
		if (rc == 0 && (flags & 1))
			check_step(o, McpOauthClientCredentials(o));
		else if (rc == 0)
		{
			char	   *url = McpOauthAuthorizationUrl(o);

			check_step(o, url ? 0 : -1);
			if (url)
			{
				json_t	   *e = McpOauthExport(o);
				const char *iss = json_string_value(json_object_get(e, "issuer"));
				char	   *state = McpOauthState(o) ? strdup(McpOauthState(o)) : NULL;

				check_step(o, McpOauthComplete(o, "code-1", state, (flags & 32) ? iss : NULL));
				json_decref(e);
				free(state);
				free(url);
				if (McpOauthAccessToken(o))
					check_step(o, McpOauthRefresh(o));
			}
		}
	}
	check_roundtrip(o);
	McpOauthConfigFree(o);
	free(www);
	return 0;
}
