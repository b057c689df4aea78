/*-------------------------------------------------------------------------
 *
 * mcp_oauth.c
 *		OAuth 2.1 for remote MCP servers (see mcp_oauth.h).
 *
 *-------------------------------------------------------------------------
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>

#include "http_easy.h"
#include "mcp.h"
#include "mcp_oauth.h"

#define OAUTH_MAX_BODY	(1024 * 1024)
/* longest token lifetime believed (10 years): a larger expires_in is cut to it */
#define OAUTH_MAX_EXPIRES_IN	(10L * 365 * 24 * 3600)

struct McpOAuthConfig
{
	/* settings */
	char	   *client_id;
	char	   *client_secret;
	char	   *client_metadata_url;
	char	   *redirect_uri;
	char	   *scope;
	char	   *grant;
	char	   *private_key_pem;
	char	   *signing_alg;
	char	   *auth_method;
	int			authorize_auto;
	long		timeout_ms;
	/* discovered */
	char	   *server_url;
	char	   *resource;
	char	   *issuer;			/* NULL: 2025-03-26 fallback without metadata */
	json_t	   *as_meta;
	char	   *authorization_endpoint;
	char	   *token_endpoint;
	char	   *registration_endpoint;
	/* the authorization server configured credentials were first used with */
	char	   *client_issuer;
	/* registration, for reg_issuer */
	char	   *reg_issuer;
	char	   *reg_client_id;
	char	   *reg_client_secret;
	char	   *reg_auth_method;
	/* tokens */
	char	   *access_token;
	char	   *refresh_token;
	long		expires_at;
	char	   *requested_scope;
	/* pending authorization */
	char	   *state;
	char	   *verifier;
	char		error[768];
};

/* ---------------------------------------------------------------------- */
/* helpers																  */
/* ---------------------------------------------------------------------- */

/* strdup() that passes NULL through; aborts when out of memory. */
static char *
dup_or_null(const char *s)
{
	char	   *r;

	if (s == NULL)
		return NULL;
	r = strdup(s);
	if (r == NULL)
		abort();
	return r;
}

/* Frees a string that may hold a secret. */
static void
wipe(char **p)
{
	if (*p)
	{
		memset(*p, 0, strlen(*p));
		free(*p);
		*p = NULL;
	}
}

/* Replaces *field by a copy of value (NULL clears it), wiping the old one. */
static void
set_str(char **field, const char *value)
{
	wipe(field);
	*field = dup_or_null(value);
}

static void oauth_error(McpOAuthConfig *o, const char *fmt,...) __attribute__((format(printf, 2, 3)));

/* Sets the error message that McpOauthError() returns (truncated to fit). */
static void
oauth_error(McpOAuthConfig *o, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(o->error, sizeof(o->error), fmt, ap);
	va_end(ap);
}

typedef struct Buf
{
	char	   *data;
	size_t		len;
	int			too_big;
} Buf;

/*
 * libcurl write callback: appends the body to a Buf.  A body past
 * OAUTH_MAX_BODY sets too_big and returns 0, which makes libcurl abort the
 * transfer.
 */
static size_t
buf_write(char *ptr, size_t size, size_t nmemb, void *arg)
{
	Buf		   *b = arg;
	size_t		n = size * nmemb;

	if (b->len + n > OAUTH_MAX_BODY)
	{
		b->too_big = 1;
		return 0;
	}
	b->data = realloc(b->data, b->len + n + 1);
	if (b->data == NULL)
		abort();
	memcpy(b->data + b->len, ptr, n);
	b->len += n;
	b->data[b->len] = '\0';
	return n;
}

typedef struct Hdrs
{
	char	   *location;
} Hdrs;

/*
 * libcurl header callback: keeps the Location header's value in a Hdrs (the
 * last one wins).
 */
static size_t
hdr_write(char *buf, size_t size, size_t nitems, void *arg)
{
	Hdrs	   *h = arg;
	size_t		n = size * nitems;

	if (n > 9 && strncasecmp(buf, "location:", 9) == 0)
	{
		free(h->location);
		h->location = McpHeaderValue(buf, n, 9);
	}
	return n;
}

/*
 * One HTTP exchange: GET (form == NULL, json_body == NULL) or POST of a form
 * or a JSON body.  Returns the status (0 for a transport failure, with the
 * error set) and the body parsed as JSON in *out when it is JSON.
 */
static long
http_call(McpOAuthConfig *o, const char *url, const char *form, const char *json_body,
		  const char *basic_auth, json_t **out, char **location)
{
	CURL	   *h;
	Buf			b = {0};
	Hdrs		hd = {0};
	struct curl_slist *hl = NULL;
	CURLcode	rc;
	long		status = 0;
	const char *problem = McpUrlProblem(url);
	char		errbuf[CURL_ERROR_SIZE] = "";

	if (out)
		*out = NULL;
	if (location)
		*location = NULL;
	if (problem == NULL && o->server_url && strncasecmp(o->server_url, "https:", 6) == 0 &&
		strncasecmp(url, "https:", 6) != 0)
		problem = "An https:// server's authorization is spoken over https:// only (no loopback http:// from a remote server's metadata).";
	if (problem)
	{
		oauth_error(o, "authorization URL %.200s refused: %s", url, problem);
		return 0;
	}
	h = curl_easy_init();
	if (h == NULL)
	{
		oauth_error(o, "could not initialize libcurl");
		return 0;
	}
	http_easy_defaults(h, url);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, o->timeout_ms);
	curl_easy_setopt(h, CURLOPT_USERAGENT, MCP_CLIENT_NAME "/" MCP_CLIENT_VERSION);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, buf_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, hdr_write);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &hd);
	hl = curl_slist_append(hl, "Accept: application/json");
	if (basic_auth)
		hl = curl_slist_append(hl, basic_auth);
	if (form)
	{
		hl = curl_slist_append(hl, "Content-Type: application/x-www-form-urlencoded");
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, form);
	}
	else if (json_body)
	{
		hl = curl_slist_append(hl, "Content-Type: application/json");
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, json_body);
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	rc = curl_easy_perform(h);
	curl_slist_free_all(hl);
	if (rc != CURLE_OK)
	{
		oauth_error(o, "request to %.200s failed: %s", url, errbuf[0] ? errbuf : curl_easy_strerror(rc));
		status = 0;
	}
	else
	{
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
		if (out && b.len > 0)
			*out = json_loadb(b.data, b.len, 0, NULL);
		if (location)
		{
			*location = hd.location;
			hd.location = NULL;
		}
	}
	curl_easy_cleanup(h);
	if (b.data)
	{
		memset(b.data, 0, b.len);
		free(b.data);
	}
	free(hd.location);
	return status;
}

/* A string member, or NULL. */
static const char *
jstr(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* Whether a JSON array holds the string value (0 for a non-array). */
static int
array_has(json_t *arr, const char *value)
{
	size_t		i;
	json_t	   *v;

	json_array_foreach(arr, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), value) == 0)
		return 1;
	return 0;
}

/* scheme://host[:port] of a URL (malloc'd), and its path ("" for "/"). */
static int
split_url(const char *url, char **origin, char **path)
{
	CURLU	   *u = curl_url();
	char	   *scheme = NULL,
			   *host = NULL,
			   *port = NULL,
			   *p = NULL;
	int			ok = 0;

	*origin = NULL;
	*path = NULL;
	if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
		curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
		curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
		curl_url_get(u, CURLUPART_PATH, &p, 0) == CURLUE_OK)
	{
		size_t		l;

		curl_url_get(u, CURLUPART_PORT, &port, 0);
		l = strlen(scheme) + strlen(host) + (port ? strlen(port) : 0) + 8;
		*origin = malloc(l);
		if (*origin == NULL)
			abort();
		snprintf(*origin, l, "%s://%s%s%s", scheme, host, port ? ":" : "", port ? port : "");
		l = strlen(p);
		while (l > 0 && p[l - 1] == '/')
			l--;
		*path = strndup(p, l);
		ok = 1;
	}
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(p);
	if (u)
		curl_url_cleanup(u);
	return ok;
}

/* Value of one auth-param of a WWW-Authenticate header (malloc'd), or NULL. */
static char *
www_param(const char *h, const char *name)
{
	size_t		nl = strlen(name);
	const char *p = h;

	if (h == NULL)
		return NULL;
	while ((p = strcasestr(p, name)) != NULL)
	{
		const char *q = p + nl;
		int			boundary = (p == h || p[-1] == ' ' || p[-1] == ',' || p[-1] == '\t');

		while (*q == ' ')
			q++;
		if (boundary && *q == '=')
		{
			q++;
			while (*q == ' ')
				q++;
			if (*q == '"')
			{
				const char *e = ++q;
				char	   *out = malloc(strlen(q) + 1);
				size_t		o = 0;

				if (out == NULL)
					abort();
				while (*e && *e != '"')
				{
					if (*e == '\\' && e[1])
						e++;
					out[o++] = *e++;
				}
				out[o] = '\0';
				return out;
			}
			else
			{
				const char *e = q;

				while (*e && *e != ',' && *e != ' ')
					e++;
				return strndup(q, e - q);
			}
		}
		p += nl;
	}
	return NULL;
}

/* Appends k=v (escaped) to a form. */
static void
form_add(char **form, const char *k, const char *v)
{
	char	   *ev;
	size_t		l;
	size_t		old = *form ? strlen(*form) : 0;

	if (v == NULL)
		return;
	ev = curl_easy_escape(NULL, v, 0);
	l = old + strlen(k) + strlen(ev) + 3;
	*form = realloc(*form, l);
	if (*form == NULL)
		abort();
	snprintf(*form + old, l - old, "%s%s=%s", old ? "&" : "", k, ev);
	memset(ev, 0, strlen(ev));
	curl_free(ev);
}

/* Frees a form built by form_add(), wiping it since it may hold secrets. */
static void
form_free(char **form)
{
	wipe(form);
}

/*
 * A base64url string of bytes (at most 64) random bytes, malloc'd; for the
 * state and the PKCE verifier.  Aborts when OpenSSL has no randomness.
 */
static char *
random_token(int bytes)
{
	unsigned char buf[64];

	if (bytes > 64)
		bytes = 64;
	if (RAND_bytes(buf, bytes) != 1)
		abort();
	return McpBase64(buf, bytes, 1);
}

/* The PKCE S256 code challenge of a verifier: base64url(SHA-256), malloc'd. */
static char *
s256(const char *verifier)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdl = 0;

	EVP_Digest(verifier, strlen(verifier), md, &mdl, EVP_sha256(), NULL);
	return McpBase64(md, mdl, 1);
}

/* ---------------------------------------------------------------------- */
/* configuration														  */
/* ---------------------------------------------------------------------- */

/*
 * A new, empty configuration (malloc'd; aborts when out of memory), with the
 * default redirect URI http://localhost:3000/callback and a 30 s timeout.
 */
McpOAuthConfig *
McpOauthConfigNew(void)
{
	McpOAuthConfig *o = calloc(1, sizeof(McpOAuthConfig));

	if (o == NULL)
		abort();
	o->redirect_uri = dup_or_null("http://localhost:3000/callback");
	o->timeout_ms = 30000;
	return o;
}

/*
 * Forgets what discovery learnt: the resource, issuer, endpoints and
 * authorization server metadata.
 */
static void
clear_discovery(McpOAuthConfig *o)
{
	set_str(&o->resource, NULL);
	set_str(&o->issuer, NULL);
	set_str(&o->authorization_endpoint, NULL);
	set_str(&o->token_endpoint, NULL);
	set_str(&o->registration_endpoint, NULL);
	if (o->as_meta)
		json_decref(o->as_meta);
	o->as_meta = NULL;
}

/*
 * Frees a configuration, wiping every string (settings, registration, tokens,
 * pending state).  NULL is accepted.
 */
void
McpOauthConfigFree(McpOAuthConfig *o)
{
	if (o == NULL)
		return;
	clear_discovery(o);
	wipe(&o->client_id);
	wipe(&o->client_secret);
	wipe(&o->client_metadata_url);
	wipe(&o->redirect_uri);
	wipe(&o->scope);
	wipe(&o->grant);
	wipe(&o->private_key_pem);
	wipe(&o->signing_alg);
	wipe(&o->auth_method);
	wipe(&o->server_url);
	wipe(&o->reg_issuer);
	wipe(&o->client_issuer);
	wipe(&o->reg_client_id);
	wipe(&o->reg_client_secret);
	wipe(&o->reg_auth_method);
	wipe(&o->access_token);
	wipe(&o->refresh_token);
	wipe(&o->requested_scope);
	wipe(&o->state);
	wipe(&o->verifier);
	free(o);
}

/*
 * Sets one setting (the keys are listed in mcp_oauth.h).  private_key_file is
 * read at once, up to 16 kB, into private_key_pem.  Returns 0, or -1 for an
 * unknown key or an unreadable key file.
 */
int
McpOauthConfigSet(McpOAuthConfig *o, const char *key, const char *value)
{
	if (strcmp(key, "client_id") == 0)
		set_str(&o->client_id, value);
	else if (strcmp(key, "client_secret") == 0)
		set_str(&o->client_secret, value);
	else if (strcmp(key, "client_metadata_url") == 0)
		set_str(&o->client_metadata_url, value);
	else if (strcmp(key, "redirect_uri") == 0)
		set_str(&o->redirect_uri, value);
	else if (strcmp(key, "scope") == 0)
		set_str(&o->scope, value);
	else if (strcmp(key, "grant") == 0)
		set_str(&o->grant, value);
	else if (strcmp(key, "private_key_pem") == 0)
		set_str(&o->private_key_pem, value);
	else if (strcmp(key, "private_key_file") == 0)
	{
		FILE	   *f = fopen(value, "r");
		char		buf[16384];
		size_t		n;

		if (f == NULL)
			return -1;
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = '\0';
		set_str(&o->private_key_pem, buf);
		memset(buf, 0, sizeof(buf));
	}
	else if (strcmp(key, "signing_alg") == 0)
		set_str(&o->signing_alg, value);
	else if (strcmp(key, "auth_method") == 0)
		set_str(&o->auth_method, value);
	else if (strcmp(key, "authorize") == 0)
		o->authorize_auto = (value && strcmp(value, "auto") == 0);
	else if (strcmp(key, "timeout_ms") == 0)
		o->timeout_ms = atol(value) > 0 ? atol(value) : 30000;
	else
		return -1;
	return 0;
}

/* The message of the last failure ("" when none since the last prepare). */
const char *
McpOauthError(McpOAuthConfig *o)
{
	return o->error;
}

/* The current access token, or NULL; owned by the configuration. */
const char *
McpOauthAccessToken(McpOAuthConfig *o)
{
	return o->access_token;
}

long
McpOauthExpiresAt(McpOAuthConfig *o)
{
	return o->expires_at;
}

/* The state of the pending authorization request, or NULL when none. */
const char *
McpOauthState(McpOAuthConfig *o)
{
	return o->state;
}

/* ---------------------------------------------------------------------- */
/* discovery															  */
/* ---------------------------------------------------------------------- */

/* The protected resource's metadata (RFC 9728), or NULL when it has none. */
static json_t *
fetch_prm(McpOAuthConfig *o, const char *server_url, const char *www)
{
	char	   *rm = www_param(www, "resource_metadata");
	char	   *origin,
			   *path;
	json_t	   *j = NULL;
	char		url[2048];
	long		st;

	if (rm)
	{
		st = http_call(o, rm, NULL, NULL, NULL, &j, NULL);
		free(rm);
		if (st == 200 && json_is_object(j))
			return j;
		if (j)
			json_decref(j);
		j = NULL;
	}
	if (!split_url(server_url, &origin, &path))
		return NULL;
	if (path[0])
	{
		snprintf(url, sizeof(url), "%s/.well-known/oauth-protected-resource%s", origin, path);
		st = http_call(o, url, NULL, NULL, NULL, &j, NULL);
		if (st == 200 && json_is_object(j))
			goto found;
		if (j)
			json_decref(j);
		j = NULL;
	}
	snprintf(url, sizeof(url), "%s/.well-known/oauth-protected-resource", origin);
	st = http_call(o, url, NULL, NULL, NULL, &j, NULL);
	if (st == 200 && json_is_object(j))
		goto found;
	if (j)
		json_decref(j);
	j = NULL;
found:
	free(origin);
	free(path);
	return j;
}

/*
 * The resource of the metadata must be this server: same origin, and the
 * server's path within the resource's path.
 */
static int
resource_matches(const char *resource, const char *server_url)
{
	char	   *ro,
			   *rp,
			   *so,
			   *sp;
	int			ok = 0;

	if (!split_url(resource, &ro, &rp))
		return 0;
	if (split_url(server_url, &so, &sp))
	{
		size_t		l = strlen(rp);

		ok = strcasecmp(ro, so) == 0 && strncmp(sp, rp, l) == 0 && (sp[l] == '\0' || sp[l] == '/');
		free(so);
		free(sp);
	}
	free(ro);
	free(rp);
	return ok;
}

/* The authorization server's metadata at the well-known locations, or NULL. */
static json_t *
fetch_as_meta(McpOAuthConfig *o, const char *issuer, int *mismatch, int strict)
{
	char	   *origin,
			   *path;
	char		urls[3][2048];
	int			n = 0,
				i;
	json_t	   *j = NULL;

	*mismatch = 0;
	if (!split_url(issuer, &origin, &path))
		return NULL;
	if (path[0])
	{
		snprintf(urls[n++], sizeof(urls[0]), "%s/.well-known/oauth-authorization-server%s", origin, path);
		snprintf(urls[n++], sizeof(urls[0]), "%s/.well-known/openid-configuration%s", origin, path);
		snprintf(urls[n++], sizeof(urls[0]), "%s%s/.well-known/openid-configuration", origin, path);
	}
	else
	{
		snprintf(urls[n++], sizeof(urls[0]), "%s/.well-known/oauth-authorization-server", origin);
		snprintf(urls[n++], sizeof(urls[0]), "%s/.well-known/openid-configuration", origin);
	}
	free(origin);
	free(path);
	for (i = 0; i < n; i++)
	{
		long		st = http_call(o, urls[i], NULL, NULL, NULL, &j, NULL);

		if (st == 200 && json_is_object(j))
		{
			/* RFC 8414 section 3.3: the issuer is the one asked for, exactly */
			if (strict && (jstr(j, "issuer") == NULL || strcmp(jstr(j, "issuer"), issuer) != 0))
			{
				*mismatch = 1;
				json_decref(j);
				return NULL;
			}
			return j;
		}
		if (j)
			json_decref(j);
		j = NULL;
	}
	return NULL;
}

/* Space-separated union of two scope lists (malloc'd, NULL when empty). */
static char *
scope_union(const char *a, const char *b)
{
	size_t		l = (a ? strlen(a) : 0) + (b ? strlen(b) : 0) + 2;
	char	   *out = calloc(1, l);
	const char *lists[2] = {a, b};
	int			k;

	if (out == NULL)
		abort();
	for (k = 0; k < 2; k++)
	{
		const char *p = lists[k];

		while (p && *p)
		{
			const char *e;
			size_t		wl;
			int			dup = 0;
			const char *q;

			while (*p == ' ')
				p++;
			e = p;
			while (*e && *e != ' ')
				e++;
			wl = e - p;
			if (wl == 0)
				break;
			for (q = out; *q;)
			{
				const char *qe = strchr(q, ' ');
				size_t		ql = qe ? (size_t) (qe - q) : strlen(q);

				if (ql == wl && strncmp(q, p, wl) == 0)
					dup = 1;
				q += ql;
				while (*q == ' ')
					q++;
			}
			if (!dup)
			{
				if (out[0])
					strcat(out, " ");
				strncat(out, p, wl);
			}
			p = e;
		}
	}
	if (out[0] == '\0')
	{
		free(out);
		return NULL;
	}
	return out;
}

/*
 * Whether the space-separated scope list already holds scope (false for a
 * NULL list).
 */
static int
has_scope(const char *list, const char *scope)
{
	char	   *u = scope_union(list, NULL);
	char	   *v = scope_union(list, scope);
	int			r = (u == NULL && v == NULL) || (u && v && strcmp(u, v) == 0);

	free(u);
	free(v);
	return r && list != NULL;
}

/*
 * Discovery after a 401 or 403 from server_url: the protected resource
 * metadata (else the 2025-03-26 fallback of the server's origin as the
 * authorization server, with default endpoints when it has no metadata), the
 * authorization server metadata, and the scope to request (configured, else
 * the challenge's or everything the resource supports, widened on a 403
 * step-up, plus offline_access when offered).  Refuses a resource mismatch,
 * an issuer mismatch and configured credentials that belong to another
 * authorization server; drops a registration made with another one.  Returns
 * 0, or -1 with the error set.
 */
int
McpOauthPrepare(McpOAuthConfig *o, const char *server_url, long status, const char *www)
{
	json_t	   *prm;
	char	   *challenged = www_param(www, "scope");
	char	   *scope = NULL;
	int			mismatch = 0;

	o->error[0] = '\0';
	set_str(&o->server_url, server_url);
	clear_discovery(o);
	prm = fetch_prm(o, server_url, www);
	if (prm)
	{
		json_t	   *as = json_object_get(prm, "authorization_servers");
		const char *res = jstr(prm, "resource");

		if (res && !resource_matches(res, server_url))
		{
			oauth_error(o, "the protected resource metadata names the resource %.200s, not this server", res);
			json_decref(prm);
			free(challenged);
			return -1;
		}
		set_str(&o->resource, res ? res : server_url);
		if (!json_is_array(as) || !json_is_string(json_array_get(as, 0)))
		{
			oauth_error(o, "the protected resource metadata names no authorization server");
			json_decref(prm);
			free(challenged);
			return -1;
		}
		set_str(&o->issuer, json_string_value(json_array_get(as, 0)));
		/* scope: the challenge's, else everything the resource supports */
		if (challenged)
			scope = dup_or_null(challenged);
		else if (json_is_array(json_object_get(prm, "scopes_supported")))
		{
			size_t		i;
			json_t	   *s;

			json_array_foreach(json_object_get(prm, "scopes_supported"), i, s)
			{
				char	   *u = scope_union(scope, json_string_value(s));

				free(scope);
				scope = u;
			}
		}
		json_decref(prm);
		o->as_meta = fetch_as_meta(o, o->issuer, &mismatch, 1);
		if (mismatch)
		{
			oauth_error(o, "the authorization server metadata of %.200s names another issuer", o->issuer);
			free(challenged);
			free(scope);
			return -1;
		}
		if (o->as_meta == NULL)
		{
			oauth_error(o, "no authorization server metadata found for %.200s", o->issuer);
			free(challenged);
			free(scope);
			return -1;
		}
	}
	else
	{
		/* 2025-03-26: the server's origin is the authorization server */
		char	   *origin,
				   *path;
		int			mm = 0;

		if (!split_url(server_url, &origin, &path))
		{
			oauth_error(o, "the server URL could not be parsed");
			free(challenged);
			return -1;
		}
		free(path);
		/*
		 * No issuer identifier to hold the metadata to (it was derived from
		 * the server's own URL): its issuer is taken as it says, for the iss
		 * check of the authorization response.
		 */
		o->as_meta = fetch_as_meta(o, origin, &mm, 0);
		if (o->as_meta)
			set_str(&o->issuer, jstr(o->as_meta, "issuer") ? jstr(o->as_meta, "issuer") : origin);
		else
		{
			char		url[2048];

			snprintf(url, sizeof(url), "%s/authorize", origin);
			set_str(&o->authorization_endpoint, url);
			snprintf(url, sizeof(url), "%s/token", origin);
			set_str(&o->token_endpoint, url);
			snprintf(url, sizeof(url), "%s/register", origin);
			set_str(&o->registration_endpoint, url);
		}
		free(origin);
		scope = dup_or_null(challenged);
	}
	free(challenged);
	if (o->as_meta)
	{
		set_str(&o->authorization_endpoint, jstr(o->as_meta, "authorization_endpoint"));
		set_str(&o->token_endpoint, jstr(o->as_meta, "token_endpoint"));
		set_str(&o->registration_endpoint, jstr(o->as_meta, "registration_endpoint"));
		if (o->token_endpoint == NULL)
		{
			oauth_error(o, "the authorization server metadata has no token_endpoint");
			free(scope);
			return -1;
		}
	}
	/*
	 * Configured credentials (a client secret, a private key) belong to the
	 * authorization server they were first used with: a server that now
	 * names another one does not get them.
	 */
	if (o->client_id && o->issuer)
	{
		if (o->client_issuer && strcmp(o->client_issuer, o->issuer) != 0)
		{
			oauth_error(o, "the server now names another authorization server (%.200s) than the one its configured client credentials are for (%.200s); configure it again",
						o->issuer, o->client_issuer);
			free(scope);
			return -1;
		}
		set_str(&o->client_issuer, o->issuer);
	}
	/* a new authorization server: its own registration */
	if (o->reg_issuer && (o->issuer == NULL || strcmp(o->reg_issuer, o->issuer) != 0))
	{
		wipe(&o->reg_client_id);
		wipe(&o->reg_client_secret);
		wipe(&o->reg_auth_method);
		wipe(&o->reg_issuer);
	}
	/* scope: configured, else chosen; step-up keeps what was asked before */
	if (o->scope)
	{
		free(scope);
		scope = dup_or_null(o->scope);
	}
	else if (status == 403 && o->requested_scope)
	{
		char	   *u = scope_union(o->requested_scope, scope);

		free(scope);
		scope = u;
	}
	if (o->as_meta && (o->grant == NULL || strcmp(o->grant, "authorization_code") == 0) &&
		array_has(json_object_get(o->as_meta, "scopes_supported"), "offline_access") &&
		!has_scope(scope, "offline_access"))
	{
		char	   *u = scope_union(scope, "offline_access");

		free(scope);
		scope = u;
	}
	set_str(&o->requested_scope, scope);
	free(scope);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* client registration and authentication								  */
/* ---------------------------------------------------------------------- */

/* The configured client_id, else the one obtained by registration. */
static const char *
current_client_id(McpOAuthConfig *o)
{
	return o->client_id ? o->client_id : o->reg_client_id;
}

/* The secret that goes with current_client_id(). */
static const char *
current_client_secret(McpOAuthConfig *o)
{
	return o->client_id ? o->client_secret : o->reg_client_secret;
}

/*
 * Makes sure there is a client ID: nothing to do when one is configured or
 * registered; else a client ID metadata document URL when the server takes
 * them, else dynamic client registration (RFC 7591) with the best token
 * endpoint auth method offered.  Records the registration with its issuer.
 * Returns 0, or -1 with the error set.
 */
static int
register_client(McpOAuthConfig *o)
{
	json_t	   *meta;
	json_t	   *resp = NULL;
	char	   *body;
	long		st;
	json_t	   *methods;
	const char *method = NULL;

	if (o->client_id || o->reg_client_id)
		return 0;
	/* a client ID metadata document, when the server takes them */
	if (o->client_metadata_url && o->as_meta &&
		json_is_true(json_object_get(o->as_meta, "client_id_metadata_document_supported")))
	{
		set_str(&o->reg_client_id, o->client_metadata_url);
		set_str(&o->reg_client_secret, NULL);
		set_str(&o->reg_auth_method, "none");
		set_str(&o->reg_issuer, o->issuer);
		return 0;
	}
	if (o->registration_endpoint == NULL)
	{
		oauth_error(o, "the authorization server offers no dynamic client registration: configure a client_id");
		return -1;
	}
	methods = o->as_meta ? json_object_get(o->as_meta, "token_endpoint_auth_methods_supported") : NULL;
	if (json_is_array(methods))
	{
		if (array_has(methods, "client_secret_basic"))
			method = "client_secret_basic";
		else if (array_has(methods, "client_secret_post"))
			method = "client_secret_post";
		else if (array_has(methods, "none"))
			method = "none";
	}
	meta = json_pack("{s:s, s:[s], s:[s, s], s:[s]}",
					 "client_name", MCP_CLIENT_NAME,
					 "redirect_uris", o->redirect_uri,
					 "grant_types", "authorization_code", "refresh_token",
					 "response_types", "code");
	if (method)
		json_object_set_new(meta, "token_endpoint_auth_method", json_string(method));
	/* SEP-837: a loopback redirect is a native client's, anything else a web one's */
	json_object_set_new(meta, "application_type",
						json_string(strncmp(o->redirect_uri, "http://localhost", 16) == 0 ||
									strncmp(o->redirect_uri, "http://127.", 11) == 0 ||
									strncmp(o->redirect_uri, "http://[::1]", 12) == 0 ? "native" : "web"));
	body = json_dumps(meta, JSON_COMPACT);
	json_decref(meta);
	st = http_call(o, o->registration_endpoint, NULL, body, NULL, &resp, NULL);
	free(body);
	if (st == 0)
		return -1;
	if (st < 200 || st >= 300 || !json_is_object(resp) || jstr(resp, "client_id") == NULL)
	{
		oauth_error(o, "dynamic client registration failed (HTTP %ld%s%.200s)", st,
					jstr(resp, "error") ? ": " : "", jstr(resp, "error") ? jstr(resp, "error") : "");
		if (resp)
			json_decref(resp);
		return -1;
	}
	set_str(&o->reg_client_id, jstr(resp, "client_id"));
	set_str(&o->reg_client_secret, jstr(resp, "client_secret"));
	set_str(&o->reg_auth_method, jstr(resp, "token_endpoint_auth_method") ? jstr(resp, "token_endpoint_auth_method") : method);
	set_str(&o->reg_issuer, o->issuer);
	json_decref(resp);
	return 0;
}

/* A JWT client assertion (RFC 7523) signed with the configured key. */
static char *
client_assertion(McpOAuthConfig *o)
{
	const char *alg = o->signing_alg ? o->signing_alg : "ES256";
	BIO		   *bio;
	EVP_PKEY   *key;
	EVP_MD_CTX *md;
	json_t	   *hdr,
			   *claims;
	char	   *h,
			   *c,
			   *hb,
			   *cb,
			   *input,
			   *jti,
			   *sigb,
			   *out = NULL;
	unsigned char *sig = NULL;
	size_t		siglen = 0;
	long		now = (long) time(NULL);
	int			ec = strncmp(alg, "ES", 2) == 0;

	if (o->private_key_pem == NULL)
	{
		oauth_error(o, "private_key_jwt needs a private key (private_key_file)");
		return NULL;
	}
	bio = BIO_new_mem_buf(o->private_key_pem, -1);
	key = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
	if (bio)
		BIO_free(bio);
	if (key == NULL)
	{
		oauth_error(o, "the private key could not be read (PEM expected)");
		return NULL;
	}
	jti = random_token(16);
	hdr = json_pack("{s:s, s:s}", "alg", alg, "typ", "JWT");
	claims = json_pack("{s:s, s:s, s:s, s:I, s:I, s:s}",
					   "iss", current_client_id(o), "sub", current_client_id(o),
					   "aud", o->issuer ? o->issuer : o->token_endpoint,
					   "iat", (json_int_t) now, "exp", (json_int_t) (now + 300), "jti", jti);
	free(jti);
	h = json_dumps(hdr, JSON_COMPACT);
	c = json_dumps(claims, JSON_COMPACT);
	json_decref(hdr);
	json_decref(claims);
	hb = McpBase64(h, strlen(h), 1);
	cb = McpBase64(c, strlen(c), 1);
	free(h);
	free(c);
	input = malloc(strlen(hb) + strlen(cb) + 2);
	if (input == NULL)
		abort();
	sprintf(input, "%s.%s", hb, cb);
	free(hb);
	free(cb);
	md = EVP_MD_CTX_new();
	if (md && EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) == 1 &&
		EVP_DigestSignUpdate(md, input, strlen(input)) == 1 &&
		EVP_DigestSignFinal(md, NULL, &siglen) == 1 &&
		(sig = malloc(siglen)) != NULL &&
		EVP_DigestSignFinal(md, sig, &siglen) == 1)
	{
		if (ec)
		{
			/* DER ECDSA-Sig-Value to the JWS r || s form */
			const unsigned char *p = sig;
			ECDSA_SIG  *es = d2i_ECDSA_SIG(NULL, &p, (long) siglen);
			unsigned char raw[64];

			if (es)
			{
				const BIGNUM *r,
						   *s;

				ECDSA_SIG_get0(es, &r, &s);
				BN_bn2binpad(r, raw, 32);
				BN_bn2binpad(s, raw + 32, 32);
				ECDSA_SIG_free(es);
				sigb = McpBase64(raw, 64, 1);
			}
			else
				sigb = NULL;
		}
		else
			sigb = McpBase64(sig, siglen, 1);
		if (sigb)
		{
			out = malloc(strlen(input) + strlen(sigb) + 2);
			if (out == NULL)
				abort();
			sprintf(out, "%s.%s", input, sigb);
			free(sigb);
		}
	}
	if (out == NULL)
		oauth_error(o, "the client assertion could not be signed with %s", alg);
	free(sig);
	free(input);
	if (md)
		EVP_MD_CTX_free(md);
	EVP_PKEY_free(key);
	return out;
}

/*
 * Adds client authentication to a token request: the form fields, or the
 * Basic header (*basic, malloc'd).
 */
static int
client_auth(McpOAuthConfig *o, char **form, char **basic)
{
	const char *id = current_client_id(o);
	const char *secret = current_client_secret(o);
	const char *method = o->auth_method;
	json_t	   *supported = o->as_meta ? json_object_get(o->as_meta, "token_endpoint_auth_methods_supported") : NULL;

	*basic = NULL;
	if (id == NULL)
	{
		oauth_error(o, "no client_id");
		return -1;
	}
	if (method == NULL && !o->client_id)
		method = o->reg_auth_method;
	if (method == NULL)
	{
		if (o->private_key_pem && array_has(supported, "private_key_jwt"))
			method = "private_key_jwt";
		else if (o->private_key_pem && !json_is_array(supported))
			method = "private_key_jwt";
		else if (secret == NULL)
			method = "none";
		else if (array_has(supported, "client_secret_basic") || !json_is_array(supported))
			method = "client_secret_basic";
		else if (array_has(supported, "client_secret_post"))
			method = "client_secret_post";
		else
			method = "client_secret_basic";
	}
	if (strcmp(method, "client_secret_basic") == 0 && secret)
	{
		char	   *ei = curl_easy_escape(NULL, id, 0);
		char	   *es = curl_easy_escape(NULL, secret, 0);
		size_t		l = strlen(ei) + strlen(es) + 2;
		char	   *pair = malloc(l);
		char	   *b;

		if (pair == NULL)
			abort();
		snprintf(pair, l, "%s:%s", ei, es);
		b = McpBase64(pair, strlen(pair), 0);
		*basic = malloc(strlen(b) + 32);
		if (*basic == NULL)
			abort();
		sprintf(*basic, "Authorization: Basic %s", b);
		memset(pair, 0, l);
		free(pair);
		memset(b, 0, strlen(b));
		free(b);
		curl_free(ei);
		memset(es, 0, strlen(es));
		curl_free(es);
	}
	else if (strcmp(method, "client_secret_post") == 0 && secret)
	{
		form_add(form, "client_id", id);
		form_add(form, "client_secret", secret);
	}
	else if (strcmp(method, "private_key_jwt") == 0)
	{
		char	   *a = client_assertion(o);

		if (a == NULL)
			return -1;
		form_add(form, "client_id", id);
		form_add(form, "client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer");
		form_add(form, "client_assertion", a);
		free(a);
	}
	else
		form_add(form, "client_id", id);
	return 0;
}

/*
 * POSTs a token request (form, with the resource indicator added last when
 * one is set) and keeps the tokens.
 */
static int
token_request(McpOAuthConfig *o, char *form, const char *what)
{
	char	   *basic = NULL;
	json_t	   *resp = NULL;
	long		st;

	if (o->resource)
		form_add(&form, "resource", o->resource);
	if (o->token_endpoint == NULL)
	{
		oauth_error(o, "%s: no token endpoint", what);
		form_free(&form);
		return -1;
	}
	if (client_auth(o, &form, &basic) != 0)
	{
		form_free(&form);
		return -1;
	}
	st = http_call(o, o->token_endpoint, form, NULL, basic, &resp, NULL);
	form_free(&form);
	wipe(&basic);
	if (st == 0)
		return -1;
	if (st != 200 || !json_is_object(resp) || jstr(resp, "access_token") == NULL)
	{
		oauth_error(o, "%s: the token endpoint refused (HTTP %ld%s%.100s%s%.200s)", what, st,
					jstr(resp, "error") ? ": " : "", jstr(resp, "error") ? jstr(resp, "error") : "",
					jstr(resp, "error_description") ? ", " : "",
					jstr(resp, "error_description") ? jstr(resp, "error_description") : "");
		if (resp)
			json_decref(resp);
		return -1;
	}
	set_str(&o->access_token, jstr(resp, "access_token"));
	if (jstr(resp, "refresh_token"))
		set_str(&o->refresh_token, jstr(resp, "refresh_token"));
	if (json_is_integer(json_object_get(resp, "expires_in")))
	{
		/* the server's lifetime, within [0, OAUTH_MAX_EXPIRES_IN]: no overflow */
		json_int_t	ttl = json_integer_value(json_object_get(resp, "expires_in"));

		ttl = ttl < 0 ? 0 : ttl > OAUTH_MAX_EXPIRES_IN ? OAUTH_MAX_EXPIRES_IN : ttl;
		o->expires_at = (long) time(NULL) + (long) ttl;
	}
	else
		o->expires_at = 0;
	json_decref(resp);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* grants																  */
/* ---------------------------------------------------------------------- */

/*
 * The URL to send the user to for consent (malloc'd): registers the client if
 * needed, requires PKCE S256 when metadata is known, and stores a new state
 * and verifier in the configuration.  Returns NULL with the error set on
 * failure.
 */
char *
McpOauthAuthorizationUrl(McpOAuthConfig *o)
{
	char	   *challenge;
	char	   *q = NULL;
	char	   *url;
	json_t	   *methods;

	if (register_client(o) != 0)
		return NULL;
	if (o->authorization_endpoint == NULL)
	{
		oauth_error(o, "the authorization server metadata has no authorization_endpoint");
		return NULL;
	}
	methods = o->as_meta ? json_object_get(o->as_meta, "code_challenge_methods_supported") : NULL;
	if (o->as_meta && !array_has(methods, "S256"))
	{
		oauth_error(o, "the authorization server does not support PKCE with S256");
		return NULL;
	}
	set_str(&o->state, NULL);
	set_str(&o->verifier, NULL);
	o->state = random_token(24);
	o->verifier = random_token(48);
	challenge = s256(o->verifier);
	form_add(&q, "response_type", "code");
	form_add(&q, "client_id", current_client_id(o));
	form_add(&q, "redirect_uri", o->redirect_uri);
	form_add(&q, "code_challenge", challenge);
	form_add(&q, "code_challenge_method", "S256");
	form_add(&q, "state", o->state);
	if (o->resource)
		form_add(&q, "resource", o->resource);
	if (o->requested_scope)
		form_add(&q, "scope", o->requested_scope);
	free(challenge);
	url = malloc(strlen(o->authorization_endpoint) + strlen(q) + 2);
	if (url == NULL)
		abort();
	sprintf(url, "%s%c%s", o->authorization_endpoint,
			strchr(o->authorization_endpoint, '?') ? '&' : '?', q);
	free(q);
	return url;
}

/*
 * Completes a pending authorization with the redirect's code, state and iss:
 * checks the state and (RFC 9207) the issuer, then exchanges the code at the
 * token endpoint.  The pending state and verifier are cleared once the
 * exchange has been tried.  Returns 0, or -1 with the error set.
 */
int
McpOauthComplete(McpOAuthConfig *o, const char *code, const char *state, const char *iss)
{
	char	   *form = NULL;
	int			rc;

	if (o->state == NULL || o->verifier == NULL)
	{
		oauth_error(o, "no authorization is pending");
		return -1;
	}
	if (state == NULL || strcmp(state, o->state) != 0)
	{
		oauth_error(o, "the authorization response does not carry the state of the request");
		return -1;
	}
	/* RFC 9207: a present iss is compared exactly; a promised one must be there */
	if (iss)
	{
		if (o->issuer == NULL || strcmp(iss, o->issuer) != 0)
		{
			oauth_error(o, "the authorization response comes from another issuer (iss mismatch)");
			return -1;
		}
	}
	else if (o->as_meta && json_is_true(json_object_get(o->as_meta, "authorization_response_iss_parameter_supported")))
	{
		oauth_error(o, "the authorization response has no iss although the authorization server promised one");
		return -1;
	}
	if (code == NULL || *code == '\0')
	{
		oauth_error(o, "the authorization response has no code");
		return -1;
	}
	form_add(&form, "grant_type", "authorization_code");
	form_add(&form, "code", code);
	form_add(&form, "redirect_uri", o->redirect_uri);
	form_add(&form, "code_verifier", o->verifier);
	rc = token_request(o, form, "authorization code");
	set_str(&o->state, NULL);
	set_str(&o->verifier, NULL);
	return rc;
}

/*
 * The form of a grant that needs a value the configuration may lack: begun
 * with its grant_type, or NULL (missing set as the error) when need is NULL.
 */
static char *
grant_form(McpOAuthConfig *o, const char *grant_type, const char *need, const char *missing)
{
	char	   *form = NULL;

	if (need == NULL)
	{
		oauth_error(o, "%s", missing);
		return NULL;
	}
	form_add(&form, "grant_type", grant_type);
	return form;
}

/*
 * Obtains a new access token with the refresh token.  A refused refresh token
 * is dropped.  Returns 0, or -1 with the error set.
 */
int
McpOauthRefresh(McpOAuthConfig *o)
{
	char	   *form = grant_form(o, "refresh_token", o->refresh_token, "no refresh token");

	if (form == NULL)
		return -1;
	form_add(&form, "refresh_token", o->refresh_token);
	if (token_request(o, form, "refresh") != 0)
	{
		wipe(&o->refresh_token);
		return -1;
	}
	return 0;
}

/*
 * Obtains an access token with the client credentials grant (needs a
 * configured client_id) and the requested scope.  Returns 0, or -1 with the
 * error set.
 */
int
McpOauthClientCredentials(McpOAuthConfig *o)
{
	char	   *form = grant_form(o, "client_credentials", o->client_id,
								  "the client credentials grant needs a client_id");

	if (form == NULL)
		return -1;
	if (o->requested_scope)
		form_add(&form, "scope", o->requested_scope);
	return token_request(o, form, "client credentials");
}

/* A query parameter of a URL (malloc'd, unescaped), or NULL. */
static char *
query_param(const char *url, const char *name)
{
	const char *q = strchr(url, '?');
	size_t		nl = strlen(name);

	if (q == NULL)
		return NULL;
	q++;
	while (*q)
	{
		const char *e = strchr(q, '&');
		size_t		l = e ? (size_t) (e - q) : strlen(q);

		if (l > nl && strncmp(q, name, nl) == 0 && q[nl] == '=')
		{
			int			outl = 0;
			char	   *tmp = strndup(q + nl + 1, l - nl - 1);
			char	   *un;
			char	   *p;

			for (p = tmp; *p; p++)
				if (*p == '+')
					*p = ' ';
			un = curl_easy_unescape(NULL, tmp, 0, &outl);
			free(tmp);
			tmp = strndup(un, outl);
			curl_free(un);
			return tmp;
		}
		q += l;
		if (*q == '&')
			q++;
	}
	return NULL;
}

/* The whole authorization, for tests: follow the redirect without a browser. */
static int
authorize_without_browser(McpOAuthConfig *o)
{
	char	   *url = McpOauthAuthorizationUrl(o);
	char	   *location = NULL;
	char	   *code,
			   *state,
			   *iss,
			   *err;
	long		st;
	int			rc;

	if (url == NULL)
		return -1;
	st = http_call(o, url, NULL, NULL, NULL, NULL, &location);
	free(url);
	if (st == 0)
		return -1;
	if (location == NULL || st < 300 || st >= 400)
	{
		oauth_error(o, "the authorization endpoint did not redirect (HTTP %ld)", st);
		free(location);
		return -1;
	}
	err = query_param(location, "error");
	if (err)
	{
		oauth_error(o, "the authorization was refused: %.100s", err);
		free(err);
		free(location);
		return -1;
	}
	code = query_param(location, "code");
	state = query_param(location, "state");
	iss = query_param(location, "iss");
	free(location);
	rc = McpOauthComplete(o, code, state, iss);
	wipe(&code);
	free(state);
	free(iss);
	return rc;
}

/*
 * McpClient auth callback, called on a 401 or 403: tries the refresh token
 * first on a 401, else prepares and obtains a token by the configured grant
 * (client credentials, or the authorization code without a browser when
 * authorize is auto).  Without a way to get consent it fails.  Sets the
 * bearer on c and returns 0, or sets c's error and returns -1.
 */
static int
oauth_callback(void *arg, McpClient *c, long status, const char *www)
{
	McpOAuthConfig *o = arg;
	int			cc = o->grant && strcmp(o->grant, "client_credentials") == 0;

	/* an expired token: the refresh token first */
	if (status == 401 && o->access_token && o->refresh_token && !cc)
	{
		if (McpOauthRefresh(o) == 0)
		{
			McpClientSetBearer(c, o->access_token);
			return 0;
		}
	}
	if (McpOauthPrepare(o, McpClientUrl(c), status, www) != 0)
		goto fail;
	if (cc)
	{
		if (McpOauthClientCredentials(o) != 0)
			goto fail;
	}
	else if (o->authorize_auto)
	{
		if (authorize_without_browser(o) != 0)
			goto fail;
	}
	else
	{
		oauth_error(o, "the server requires an OAuth authorization (HTTP %ld)%s", status,
					o->issuer ? "; authorize it first" : "");
		goto fail;
	}
	McpClientSetBearer(c, o->access_token);
	return 0;
fail:
	McpClientSetError(c, "authorization failed: %s", o->error);
	return -1;
}

/*
 * Installs oauth_callback as c's 401/403 handler, and the current access
 * token, if any, as its bearer.
 */
void
McpOauthAttach(McpClient *c, McpOAuthConfig *o)
{
	McpClientSetAuth(c, oauth_callback, o);
	if (o->access_token)
		McpClientSetBearer(c, o->access_token);
}

/* ---------------------------------------------------------------------- */
/* persistence															  */
/* ---------------------------------------------------------------------- */

/* Sets j[k] to the string v, unless v is NULL. */
static void
put(json_t *j, const char *k, const char *v)
{
	if (v)
		json_object_set_new(j, k, json_string(v));
}

/*
 * Everything learnt and obtained as a new JSON object (see mcp_oauth.h); it
 * holds secrets.
 */
json_t *
McpOauthExport(McpOAuthConfig *o)
{
	json_t	   *j = mcp_json_object();

	put(j, "resource", o->resource);
	put(j, "issuer", o->issuer);
	put(j, "authorization_endpoint", o->authorization_endpoint);
	put(j, "token_endpoint", o->token_endpoint);
	put(j, "registration_endpoint", o->registration_endpoint);
	if (o->as_meta)
		json_object_set(j, "as_meta", o->as_meta);
	put(j, "reg_issuer", o->reg_issuer);
	put(j, "client_issuer", o->client_issuer);
	put(j, "reg_client_id", o->reg_client_id);
	put(j, "reg_client_secret", o->reg_client_secret);
	put(j, "reg_auth_method", o->reg_auth_method);
	put(j, "access_token", o->access_token);
	put(j, "refresh_token", o->refresh_token);
	if (o->expires_at)
		json_object_set_new(j, "expires_at", json_integer(o->expires_at));
	put(j, "requested_scope", o->requested_scope);
	put(j, "state", o->state);
	put(j, "verifier", o->verifier);
	return j;
}

/*
 * Loads what McpOauthExport() produced, replacing every such field (absent
 * ones become NULL or 0); ignores anything that is not an object.
 */
void
McpOauthImport(McpOAuthConfig *o, json_t *j)
{
	if (!json_is_object(j))
		return;
	set_str(&o->resource, jstr(j, "resource"));
	set_str(&o->issuer, jstr(j, "issuer"));
	set_str(&o->authorization_endpoint, jstr(j, "authorization_endpoint"));
	set_str(&o->token_endpoint, jstr(j, "token_endpoint"));
	set_str(&o->registration_endpoint, jstr(j, "registration_endpoint"));
	if (o->as_meta)
		json_decref(o->as_meta);
	o->as_meta = json_is_object(json_object_get(j, "as_meta")) ? json_incref(json_object_get(j, "as_meta")) : NULL;
	set_str(&o->reg_issuer, jstr(j, "reg_issuer"));
	set_str(&o->client_issuer, jstr(j, "client_issuer"));
	set_str(&o->reg_client_id, jstr(j, "reg_client_id"));
	set_str(&o->reg_client_secret, jstr(j, "reg_client_secret"));
	set_str(&o->reg_auth_method, jstr(j, "reg_auth_method"));
	set_str(&o->access_token, jstr(j, "access_token"));
	set_str(&o->refresh_token, jstr(j, "refresh_token"));
	o->expires_at = json_is_integer(json_object_get(j, "expires_at")) ? (long) json_integer_value(json_object_get(j, "expires_at")) : 0;
	set_str(&o->requested_scope, jstr(j, "requested_scope"));
	set_str(&o->state, jstr(j, "state"));
	set_str(&o->verifier, jstr(j, "verifier"));
}
