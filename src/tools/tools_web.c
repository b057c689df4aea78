/*-------------------------------------------------------------------------
 *
 * tools_web.c
 *		The web switch: the web_fetch(url) tool, offered to an agent whose
 *		settings have web_access on (issue 31).  One GET through libcurl,
 *		the answer's HTML reduced to text by libxml2's HTML parser.
 *
 * What a fetch may reach (docs/worker.md, "web_fetch"):
 *  - http and https URLs only, without credentials in them; plain http only
 *    to an address of pg_agents.web_fetch_allowed_networks;
 *  - a host of pg_agents.web_fetch_allowed_hosts (empty: any) and none of
 *    pg_agents.web_fetch_denied_hosts;
 *  - after DNS resolution, a public address only: loopback, private,
 *    link-local (169.254.0.0/16, the cloud metadata address), shared,
 *    multicast, documentation and reserved ranges are refused unless
 *    pg_agents.web_fetch_allowed_networks lists them.  The address is
 *    checked in libcurl's open-socket callback, on the very address libcurl
 *    is about to connect to, so a DNS answer that changes between a check
 *    and the connection cannot slip through;
 *  - redirects followed by hand, at most pg_agents.web_fetch_max_redirects,
 *    each new URL checked as the first one was; no proxy from the
 *    environment.
 * The body is read up to pg_agents.web_fetch_max_bytes (a longer one is cut
 * and the result says so), the whole call bounded by
 * pg_agents.web_fetch_timeout.  The call is synchronous: the worker waits
 * for it, as it does for a tool's SQL.
 *
 * Each call is a step of the run (tool, denied or error) and an audit row
 * (tool.web_fetch), and goes through the approval policy like other tools.
 *
 * libcurl's callbacks never palloc or ereport: the body is malloc'd, the
 * networks they read are parsed before the transfer.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "util/jansson_prelude.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <curl/curl.h>
#include <libxml/HTMLparser.h>
#include <libxml/tree.h>

#include "mcp/http_easy.h"
#include "tool_family.h"
#include "tool_gate.h"
#include "util/guc.h"
#include "util/spi_util.h"
#include "web_lists.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#define WEB_TOOL			"web_fetch"
#define WEB_MAX_URL			2048
#define WEB_HTML_DEPTH		200
/* room kept for the other fields of the result under max_tool_result_bytes */
#define WEB_RESULT_SLACK	2048

/* one transfer: what the callbacks read and fill */
typedef struct WebTransfer
{
	const WebNet *nets;
	int			nnets;
	bool		https;			/* the scheme of the URL of this hop */
	char	   *body;			/* malloc'd */
	size_t		len;
	size_t		alloc;
	size_t		cap;
	bool		truncated;
	bool		oom;
	bool		connected;		/* a socket was opened */
	const char *refused_code;	/* set when an address was refused */
	char		refused[200];
} WebTransfer;

/* ---------------------------------------------------------------------
 * Addresses
 * ---------------------------------------------------------------------
 */

/* whether addr (family's bytes) is inside net */
static bool
InNet(int family, const unsigned char *addr, const WebNet *net)
{
	int			bits = net->prefix;
	int			i;

	if (family != net->family)
		return false;
	for (i = 0; bits >= 8; i++, bits -= 8)
		if (addr[i] != net->addr[i])
			return false;
	if (bits > 0)
	{
		unsigned char mask = (unsigned char) (0xFF << (8 - bits));

		if ((addr[i] & mask) != (net->addr[i] & mask))
			return false;
	}
	return true;
}

/* why an IPv4 address is not public, or NULL when it is */
static const char *
Ipv4NotPublic(const unsigned char *a)
{
	if (a[0] == 127)
		return "loopback";
	if (a[0] == 169 && a[1] == 254)
		return "link-local";
	if (a[0] == 10 || (a[0] == 172 && (a[1] & 0xF0) == 16) || (a[0] == 192 && a[1] == 168))
		return "private";
	if (a[0] == 100 && (a[1] & 0xC0) == 64)
		return "shared (carrier-grade NAT)";
	if (a[0] == 0)
		return "unspecified";
	if (a[0] >= 224)
		return "multicast or reserved";
	if ((a[0] == 192 && a[1] == 0 && (a[2] == 0 || a[2] == 2)) ||
		(a[0] == 198 && (a[1] & 0xFE) == 18) ||
		(a[0] == 198 && a[1] == 51 && a[2] == 100) ||
		(a[0] == 203 && a[1] == 0 && a[2] == 113))
		return "reserved";
	return NULL;
}

/* why an IPv6 address (not v4-mapped) is not public, or NULL */
static const char *
Ipv6NotPublic(const unsigned char *a)
{
	/* global unicast is 2000::/3; the rest is loopback, local or special */
	if ((a[0] & 0xE0) != 0x20)
	{
		if (a[0] == 0xFE && (a[1] & 0xC0) == 0x80)
			return "link-local";
		if ((a[0] & 0xFE) == 0xFC)
			return "private";
		return "loopback, multicast or reserved";
	}
	/* Teredo and 6to4 carry IPv4 addresses; documentation */
	if ((a[0] == 0x20 && a[1] == 0x01 && a[2] == 0 && a[3] == 0) ||
		(a[0] == 0x20 && a[1] == 0x02) ||
		(a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x0D && a[3] == 0xB8))
		return "reserved";
	return NULL;
}

/*
 * Whether a transfer may connect to a resolved address: one of the allowed
 * networks (any scheme), else a public address over https.  The reason goes
 * to t->refused.  Called from libcurl's callback: no palloc, no ereport.
 */
static bool
AddressAllowed(WebTransfer *t, const struct sockaddr *sa)
{
	unsigned char bytes[16];
	int			family;
	const char *why;
	char		text[INET6_ADDRSTRLEN] = "?";

	if (sa->sa_family == AF_INET)
	{
		family = AF_INET;
		memcpy(bytes, &((const struct sockaddr_in *) sa)->sin_addr, 4);
	}
	else if (sa->sa_family == AF_INET6)
	{
		static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};

		family = AF_INET6;
		memcpy(bytes, &((const struct sockaddr_in6 *) sa)->sin6_addr, 16);
		/* a v4-mapped address is the IPv4 address it carries */
		if (memcmp(bytes, mapped, 12) == 0)
		{
			memmove(bytes, bytes + 12, 4);
			family = AF_INET;
		}
	}
	else
	{
		t->refused_code = "address_not_allowed";
		snprintf(t->refused, sizeof(t->refused), "not an internet address");
		return false;
	}
	why = family == AF_INET ? Ipv4NotPublic(bytes) : Ipv6NotPublic(bytes);
	inet_ntop(family, bytes, text, sizeof(text));
	for (int i = 0; i < t->nnets; i++)
		if (InNet(family, bytes, &t->nets[i]))
			return true;
	if (why)
	{
		t->refused_code = "address_not_allowed";
		snprintf(t->refused, sizeof(t->refused),
				 "the host resolves to %s, a %s address (not in pg_agents.web_fetch_allowed_networks)", text, why);
		return false;
	}
	if (!t->https)
	{
		t->refused_code = "https_required";
		snprintf(t->refused, sizeof(t->refused),
				 "plain http to %s: only https is fetched from public addresses", text);
		return false;
	}
	return true;
}

/* libcurl's open-socket callback: the address check, then the socket */
static curl_socket_t
WebOpenSocket(void *clientp, curlsocktype purpose, struct curl_sockaddr *address)
{
	WebTransfer *t = (WebTransfer *) clientp;

	if (purpose != CURLSOCKTYPE_IPCXN)
	{
		t->refused_code = "address_not_allowed";
		snprintf(t->refused, sizeof(t->refused), "not a plain connection");
		return CURL_SOCKET_BAD;
	}
	if (!AddressAllowed(t, &address->addr))
		return CURL_SOCKET_BAD;
	t->connected = true;
	return socket(address->family, address->socktype, address->protocol);
}

/* libcurl's write callback: the body, up to the cap (then the transfer stops) */
static size_t
WebWrite(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	WebTransfer *t = (WebTransfer *) userdata;
	size_t		n = size * nmemb;
	size_t		take = n;

	if (t->len + take > t->cap)
	{
		take = t->cap - t->len;
		t->truncated = true;
	}
	if (t->len + take + 1 > t->alloc)
	{
		size_t		want = Max(t->alloc * 2, (size_t) 16384);
		char	   *nb;

		while (want < t->len + take + 1)
			want *= 2;
		want = Min(want, t->cap + 1);
		nb = realloc(t->body, want);
		if (nb == NULL)
		{
			t->oom = true;
			return 0;
		}
		t->body = nb;
		t->alloc = want;
	}
	memcpy(t->body + t->len, ptr, take);
	t->len += take;
	t->body[t->len] = '\0';
	return t->truncated ? 0 : n;	/* 0 stops the transfer at the cap */
}

/* ---------------------------------------------------------------------
 * HTML to text
 * ---------------------------------------------------------------------
 */

typedef struct TextOut
{
	StringInfo	buf;
	bool		space;			/* a space is pending */
} TextOut;

/* elements whose content is not text a reader sees */
static bool
HtmlSkipped(const char *name)
{
	static const char *const skip[] = {"script", "style", "noscript", "template", "head", "svg",
	"iframe", "object", "embed", "canvas", "math", "select", NULL};

	for (int i = 0; skip[i]; i++)
		if (strcmp(name, skip[i]) == 0)
			return true;
	return false;
}

/* elements that end a line */
static bool
HtmlBlock(const char *name)
{
	static const char *const block[] = {"p", "div", "section", "article", "header", "footer", "nav",
		"main", "aside", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "table", "tr", "blockquote",
		"pre", "hr", "dl", "dt", "dd", "form", "fieldset", "figure", "figcaption", "address", "details",
	"summary", "br", "title", "body", "html", "caption", NULL};

	for (int i = 0; block[i]; i++)
		if (strcmp(name, block[i]) == 0)
			return true;
	return false;
}

/* ends the current line: at most one empty line in a row, no trailing space */
static void
TextBreak(TextOut *o)
{
	StringInfo	b = o->buf;

	o->space = false;
	while (b->len > 0 && b->data[b->len - 1] == ' ')
		b->data[--b->len] = '\0';
	if (b->len == 0)
		return;
	if (b->len >= 2 && b->data[b->len - 1] == '\n' && b->data[b->len - 2] == '\n')
		return;
	appendStringInfoChar(b, '\n');
}

/* text of a node, its runs of white space made one space */
static void
TextAppend(TextOut *o, const char *s)
{
	StringInfo	b = o->buf;

	for (; *s; s++)
	{
		if (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == '\f' || *s == '\v')
		{
			o->space = true;
			continue;
		}
		/* a no-break space (U+00A0, &nbsp;) reads as a space */
		if ((unsigned char) s[0] == 0xC2 && (unsigned char) s[1] == 0xA0)
		{
			o->space = true;
			s++;
			continue;
		}
		if (o->space && b->len > 0 && b->data[b->len - 1] != '\n')
			appendStringInfoChar(b, ' ');
		o->space = false;
		appendStringInfoChar(b, *s);
	}
}

static void
HtmlWalk(xmlNode *n, TextOut *o, int depth)
{
	for (; n; n = n->next)
	{
		if (n->type == XML_TEXT_NODE || n->type == XML_CDATA_SECTION_NODE)
		{
			if (n->content)
				TextAppend(o, (const char *) n->content);
		}
		else if (n->type == XML_ELEMENT_NODE && n->name)
		{
			const char *name = (const char *) n->name;
			bool		block;

			if (HtmlSkipped(name))
				continue;
			block = HtmlBlock(name);
			if (block)
				TextBreak(o);
			if (strcmp(name, "li") == 0)
				appendStringInfoString(o->buf, "- ");
			else if (strcmp(name, "td") == 0 || strcmp(name, "th") == 0)
				o->space = true;
			if (depth < WEB_HTML_DEPTH)
				HtmlWalk(n->children, o, depth + 1);
			if (block)
				TextBreak(o);
		}
	}
}

/* the text of the first <title> of the tree, or NULL */
static char *
HtmlTitle(xmlNode *n, int depth)
{
	for (; n && depth < WEB_HTML_DEPTH; n = n->next)
	{
		if (n->type != XML_ELEMENT_NODE || n->name == NULL)
			continue;
		if (strcmp((const char *) n->name, "title") == 0)
		{
			TextOut		o;

			o.buf = makeStringInfo();
			o.space = false;
			HtmlWalk(n->children, &o, depth);
			TextBreak(&o);
			if (o.buf->len > 0 && o.buf->data[o.buf->len - 1] == '\n')
				o.buf->data[--o.buf->len] = '\0';
			return o.buf->len > 0 ? o.buf->data : NULL;
		}
		if (strcmp((const char *) n->name, "body") != 0)
		{
			char	   *t = HtmlTitle(n->children, depth + 1);

			if (t)
				return t;
		}
	}
	return NULL;
}

/* the charset parameter of a content type, or NULL */
static char *
Charset(const char *ctype)
{
	const char *p = ctype ? strcasestr(ctype, "charset=") : NULL;
	char		buf[64];
	size_t		n = 0;

	if (p == NULL)
		return NULL;
	p += 8;
	if (*p == '"')
		p++;
	while (*p && *p != '"' && *p != ';' && *p != ' ' && n < sizeof(buf) - 1)
		buf[n++] = *p++;
	buf[n] = '\0';
	return n > 0 ? pstrdup(buf) : NULL;
}

/* HTML reduced to its text (UTF-8) by libxml2's HTML parser; NULL: unparsable */
static char *
HtmlToText(const char *body, size_t len, const char *url, const char *ctype, char **title)
{
	int			opts = HTML_PARSE_RECOVER | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING |
		HTML_PARSE_NONET;
	char	   *enc = Charset(ctype);
	htmlDocPtr	doc;
	TextOut		o;
	xmlNode    *root;

	*title = NULL;
	if (len > INT_MAX)
		return NULL;
	doc = htmlReadMemory(body, (int) len, url, enc, opts);
	if (doc == NULL && enc)
		doc = htmlReadMemory(body, (int) len, url, NULL, opts);
	if (doc == NULL)
		return NULL;
	root = doc->children;
	o.buf = makeStringInfo();
	o.space = false;
	*title = HtmlTitle(root, 0);
	HtmlWalk(root, &o, 0);
	xmlFreeDoc(doc);
	TextBreak(&o);
	while (o.buf->len > 0 && o.buf->data[o.buf->len - 1] == '\n')
		o.buf->data[--o.buf->len] = '\0';
	return o.buf->data;
}

/* ---------------------------------------------------------------------
 * The fetch
 * ---------------------------------------------------------------------
 */

typedef enum WebVerdict
{
	WEB_OK,
	WEB_REFUSED,				/* policy: *code and *detail */
	WEB_ERROR					/* the fetch failed: *detail */
} WebVerdict;

/* what a fetch brought back */
typedef struct WebResult
{
	char	   *url;			/* the last URL fetched */
	long		status;
	char	   *ctype;			/* or NULL */
	char	   *body;			/* palloc'd, NUL-terminated */
	size_t		len;
	bool		truncated;
	int			redirects;
} WebResult;

/*
 * The checks of a URL before any connection: a valid http or https URL
 * without credentials, of an allowed host.  Sets *clean (the URL as libcurl
 * writes it) and *https.
 */
static WebVerdict
CheckUrl(const char *url, char **clean, bool *https, const char **code, char **detail)
{
	CURLU	   *u = curl_url();
	char	   *scheme = NULL;
	char	   *host = NULL;
	char	   *user = NULL;
	char	   *full = NULL;
	WebVerdict	v = WEB_OK;
	char		h[256];

	if (u == NULL)
	{
		*detail = pstrdup("out of memory");
		return WEB_ERROR;
	}
	if (strlen(url) > WEB_MAX_URL || curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK ||
		curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK)
	{
		*code = "invalid_url";
		*detail = psprintf("\"%.200s\" is not an absolute http or https URL (of at most %d bytes)", url, WEB_MAX_URL);
		v = WEB_REFUSED;
		goto done;
	}
	if (pg_strcasecmp(scheme, "http") != 0 && pg_strcasecmp(scheme, "https") != 0)
	{
		*code = "scheme_not_allowed";
		*detail = psprintf("scheme \"%.40s\" is not fetched: only http and https", scheme);
		v = WEB_REFUSED;
		goto done;
	}
	if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || host[0] == '\0' ||
		curl_url_get(u, CURLUPART_URL, &full, 0) != CURLUE_OK)
	{
		*code = "invalid_url";
		*detail = psprintf("\"%.200s\" names no host", url);
		v = WEB_REFUSED;
		goto done;
	}
	if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK)
	{
		*code = "credentials_in_url";
		*detail = pstrdup("a URL with a user name or password is not fetched");
		v = WEB_REFUSED;
		goto done;
	}
	WebHostNormal(host, h, sizeof(h));
	if (WebHostListed(pg_agents_web_fetch_denied_hosts, h))
	{
		*code = "host_not_allowed";
		*detail = psprintf("host \"%s\" is in pg_agents.web_fetch_denied_hosts", h);
		v = WEB_REFUSED;
		goto done;
	}
	if (pg_agents_web_fetch_allowed_hosts && pg_agents_web_fetch_allowed_hosts[0] &&
		!WebHostListed(pg_agents_web_fetch_allowed_hosts, h))
	{
		*code = "host_not_allowed";
		*detail = psprintf("host \"%s\" is not in pg_agents.web_fetch_allowed_hosts", h);
		v = WEB_REFUSED;
		goto done;
	}
	*https = pg_strcasecmp(scheme, "https") == 0;
	*clean = pstrdup(full);
done:
	curl_free(scheme);
	curl_free(host);
	curl_free(user);
	curl_free(full);
	curl_url_cleanup(u);
	return v;
}

/*
 * GET url, following redirects by hand; every hop's URL checked by
 * CheckUrl and its address by the open-socket callback.
 */
static WebVerdict
WebGet(const char *url, WebResult *res, const char **code, char **detail)
{
	WebNet		nets[WEB_MAX_NETS];
	int			nnets;
	char		bad[128];
	TimestampTz deadline = GetCurrentTimestamp() + (TimestampTz) pg_agents_web_fetch_timeout * 1000;
	char	   *cur = pstrdup(url);

	memset(res, 0, sizeof(WebResult));
	if (!WebNetsParse(pg_agents_web_fetch_allowed_networks, nets, &nnets, bad, sizeof(bad)))
	{
		*detail = psprintf("pg_agents.web_fetch_allowed_networks has a bad entry \"%s\"", bad);
		return WEB_ERROR;
	}
	for (int hop = 0;; hop++)
	{
		WebTransfer t;
		CURL	   *h;
		CURLcode	rc;
		char	   *clean;
		bool		https = false;
		WebVerdict	v;
		long		left;
		char	   *ct = NULL;
		char	   *loc = NULL;
		struct curl_slist *hdr = NULL;

		v = CheckUrl(cur, &clean, &https, code, detail);
		if (v != WEB_OK)
		{
			if (hop > 0)
				*detail = psprintf("redirect to %.300s refused: %s", cur, *detail);
			return v;
		}
		left = (long) ((deadline - GetCurrentTimestamp()) / 1000);
		if (left <= 0)
		{
			*detail = psprintf("timed out after %d ms (pg_agents.web_fetch_timeout)", pg_agents_web_fetch_timeout);
			return WEB_ERROR;
		}
		memset(&t, 0, sizeof(t));
		t.nets = nets;
		t.nnets = nnets;
		t.https = https;
		t.cap = (size_t) pg_agents_web_fetch_max_bytes;
		h = curl_easy_init();
		if (h == NULL)
		{
			*detail = pstrdup("could not create a libcurl handle");
			return WEB_ERROR;
		}
		http_easy_defaults(h, clean);
		hdr = curl_slist_append(hdr, "Accept: text/html, application/xhtml+xml, text/plain;q=0.9, */*;q=0.5");
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
		curl_easy_setopt(h, CURLOPT_PROXY, "");
		curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L);
		curl_easy_setopt(h, CURLOPT_USERAGENT, "pg_agents/" PG_AGENTS_VERSION " (web_fetch)");
		curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, left);
		curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, left);
		curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, WebOpenSocket);
		curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, &t);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, WebWrite);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
		rc = curl_easy_perform(h);
		curl_slist_free_all(hdr);
		if (t.oom)
		{
			curl_easy_cleanup(h);
			free(t.body);
			*detail = pstrdup("out of memory");
			return WEB_ERROR;
		}
		if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && t.truncated))
		{
			curl_easy_cleanup(h);
			free(t.body);
			if (t.refused_code && !t.connected)
			{
				*code = t.refused_code;
				*detail = hop > 0 ? psprintf("redirect to %.300s refused: %s", clean, t.refused)
					: pstrdup(t.refused);
				return WEB_REFUSED;
			}
			if (rc == CURLE_OPERATION_TIMEDOUT)
				*detail = psprintf("timed out after %d ms (pg_agents.web_fetch_timeout)", pg_agents_web_fetch_timeout);
			else
				*detail = psprintf("could not fetch %.300s: %s", clean, curl_easy_strerror(rc));
			return WEB_ERROR;
		}
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &res->status);
		curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct);
		curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &loc);
		if (res->status >= 300 && res->status < 400 && loc && !t.truncated)
		{
			char	   *next = pstrdup(loc);

			curl_easy_cleanup(h);
			free(t.body);
			if (hop >= pg_agents_web_fetch_max_redirects)
			{
				*detail = psprintf("more than %d redirects (pg_agents.web_fetch_max_redirects)",
								   pg_agents_web_fetch_max_redirects);
				return WEB_ERROR;
			}
			cur = next;
			res->redirects = hop + 1;
			continue;
		}
		res->url = clean;
		res->ctype = ct ? pstrdup(ct) : NULL;
		res->len = t.len;
		res->body = palloc(t.len + 1);
		if (t.len > 0)
			memcpy(res->body, t.body, t.len);
		res->body[t.len] = '\0';
		res->truncated = t.truncated;
		curl_easy_cleanup(h);
		free(t.body);
		return WEB_OK;
	}
}

/* whether a content type is read as HTML, as text, or not at all */
static bool
IsHtml(const char *ct)
{
	return ct && (pg_strncasecmp(ct, "text/html", 9) == 0 ||
				  pg_strncasecmp(ct, "application/xhtml+xml", 21) == 0);
}

static bool
IsText(const char *ct)
{
	const char *semi;
	size_t		n;

	if (ct == NULL)
		return true;			/* no type said: text if it is UTF-8 */
	if (pg_strncasecmp(ct, "text/", 5) == 0)
		return true;
	semi = strchr(ct, ';');
	n = semi ? (size_t) (semi - ct) : strlen(ct);
	while (n > 0 && ct[n - 1] == ' ')
		n--;
	return (n == 16 && pg_strncasecmp(ct, "application/json", 16) == 0) ||
		(n == 15 && pg_strncasecmp(ct, "application/xml", 15) == 0) ||
		(n > 5 && (pg_strncasecmp(ct + n - 5, "+json", 5) == 0 || pg_strncasecmp(ct + n - 4, "+xml", 4) == 0));
}

/* len cut back to a UTF-8 character boundary */
static size_t
Utf8Boundary(const char *s, size_t len)
{
	size_t		k = len;

	while (k > 0 && (((unsigned char) s[k]) & 0xC0) == 0x80)
		k--;
	return k;
}

/* ---------------------------------------------------------------------
 * The tool
 * ---------------------------------------------------------------------
 */

/* agents.web_access of the agent (false when it cannot be read) */
static bool
WebAccessOn(int64 agent_id)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[1] = {INT8OID};
	Datum		vals[1];
	char	   *v;

	vals[0] = Int64GetDatum(agent_id);
	if (SpiUtilExecPlan(&plan, "SELECT a.web_access FROM agent.agents a WHERE a.id = $1",
						1, types, vals, NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		return false;
	v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	return v && v[0] == 't';
}

/* web_fetch for an agent with web_access on (ToolFamilyDefinitions) */
static void
WebAddDefinitions(json_t *tools, int64 agent_id, int64 run_id, bool can_delegate)
{
	if (!WebAccessOn(agent_id))
		return;
	json_array_append_new(tools, json_pack(
		"{s:s,s:s,s:{s:s,s:{s:{s:s,s:s}},s:[s]}}",
		"name", WEB_TOOL,
		"description", "Fetch one web page (GET) and read it as text: HTML is reduced to its text. "
		"https URLs of public hosts only; a long page is cut, and the result says so.",
		"parameters", "type", "object", "properties",
		"url", "type", "string", "description", "Absolute URL, e.g. https://example.com/page.",
		"required", "url"));
}

static bool
WebHandles(const ToolRun *tr, const char *name)
{
	return strcmp(name, WEB_TOOL) == 0;
}

/* a refusal: a denied step and an audit row (ToolGateDeny), the why for the model */
static ToolOutcome
WebRefuse(const ToolRun *tr, json_t *input, const char *url, const char *code, const char *detail,
		  json_t **result, TimestampTz started)
{
	json_t	   *r = ToolGateDeny(tr, WEB_TOOL, input, "url", url, code, started);

	json_decref(r);
	*result = json_pack("{s:s,s:s}", "error", psprintf("web_fetch refused: %s", detail), "reason", code);
	return TOOL_DONE;
}

/* the audit row of a fetch that ran */
static void
WebAudit(const ToolRun *tr, json_t *input, const WebResult *res)
{
	Oid			types[8] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID, TEXTOID};
	Datum		vals[8];
	char		nulls[8] = "     n  ";
	char	   *summary = psprintf("web_fetch GET %.300s: HTTP %ld, %zu bytes%s%s", res->url, res->status,
								   res->len, res->truncated ? " (cut)" : "",
								   res->redirects ? psprintf(", after %d redirect(s)", res->redirects) : "");

	vals[0] = CStringGetTextDatum("tool." WEB_TOOL);
	vals[1] = CStringGetTextDatum("success");
	vals[2] = CStringGetTextDatum("url");
	vals[3] = CStringGetTextDatum(res->url);
	vals[4] = CStringGetTextDatum(tr->workspace);
	vals[5] = (Datum) 0;
	vals[6] = ToolGateJsonb(input);
	vals[7] = CStringGetTextDatum(summary);
	if (SPI_execute_with_args("SELECT agent._audit_event($1, $2, $3, $4, $5, $6, $7, $8)",
							  8, types, vals, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not audit a web_fetch call");
}

/* one call of web_fetch (ToolFamilyExecute) */
static ToolOutcome
WebExecute(const ToolRun *tr, const char *name, json_t *input, json_t **result,
		   int64 *child_run_id, TimestampTz started)
{
	json_t	   *u = json_object_get(input, "url");
	const char *url;
	char	   *clean;
	bool		https;
	const char *code = NULL;
	char	   *detail = NULL;
	ToolOutcome gate;
	WebResult	res;
	WebVerdict	v;
	char	   *text;
	char	   *title = NULL;
	size_t		keep;
	json_t	   *r;
	StringInfoData note;

	if (!WebAccessOn(tr->agent_id))
		return WebRefuse(tr, input, json_is_string(u) ? json_string_value(u) : "", "web_access_off",
						 "web access is off in this agent's settings (web_access)", result, started);
	if (!json_is_string(u) || json_string_length(u) == 0)
		return ToolGateFail(tr, WEB_TOOL, input, result, started,
							"web_fetch needs a string argument url");
	url = json_string_value(u);
	if (strlen(url) != json_string_length(u))
		return WebRefuse(tr, input, "", "invalid_url", "the URL holds a NUL character", result, started);

	/* what can be refused before asking anyone */
	v = CheckUrl(url, &clean, &https, &code, &detail);
	if (v == WEB_REFUSED)
		return WebRefuse(tr, input, url, code, detail, result, started);
	if (v == WEB_ERROR)
		return ToolGateFail(tr, WEB_TOOL, input, result, started, "%s", detail);
	if (ToolGateHolds(tr, WEB_TOOL, false, input, result, started, &gate))
		return gate;

	v = WebGet(url, &res, &code, &detail);
	if (v == WEB_REFUSED)
		return WebRefuse(tr, input, url, code, detail, result, started);
	if (v == WEB_ERROR)
		return ToolGateFail(tr, WEB_TOOL, input, result, started, "%s", detail);

	initStringInfo(&note);
	if (res.truncated)
	{
		appendStringInfo(&note, "the response was cut at %zu bytes (pg_agents.web_fetch_max_bytes); "
						 "the text is that of its beginning only", res.len);
		res.len = Utf8Boundary(res.body, res.len);
		res.body[res.len] = '\0';
	}
	if (IsHtml(res.ctype))
	{
		text = HtmlToText(res.body, res.len, res.url, res.ctype, &title);
		if (text == NULL)
			return ToolGateFail(tr, WEB_TOOL, input, result, started,
								"the HTML of %.300s could not be parsed", res.url);
	}
	else if (IsText(res.ctype))
	{
		if (!pg_verify_mbstr(PG_UTF8, res.body, (int) res.len, true))
			return ToolGateFail(tr, WEB_TOOL, input, result, started,
								"the response of %.300s is not UTF-8 text (content type %s)",
								res.url, res.ctype ? res.ctype : "not given");
		text = res.body;
	}
	else
		return ToolGateFail(tr, WEB_TOOL, input, result, started,
							"the response of %.300s is %s, not text: web_fetch reads HTML and text only",
							res.url, res.ctype);

	/* the text within what the model is given (pg_agents.max_tool_result_bytes) */
	keep = (size_t) Max(pg_agents_max_tool_result_bytes - WEB_RESULT_SLACK, 512);
	if (strlen(text) > keep)
	{
		size_t		full = strlen(text);

		keep = Utf8Boundary(text, keep);
		text = pnstrdup(text, keep);
		appendStringInfo(&note, "%sthe text was cut at %zu bytes of %zu (pg_agents.max_tool_result_bytes)",
						 note.len ? "; " : "", keep, full);
	}
	r = json_pack("{s:s,s:I,s:s?,s:s?,s:s,s:b}", "url", res.url, "status", (json_int_t) res.status,
				  "content_type", res.ctype, "title", title, "text", text, "truncated",
				  res.truncated || note.len > 0);
	if (r == NULL)
		return ToolGateFail(tr, WEB_TOOL, input, result, started, "the text of %.300s could not be encoded", res.url);
	if (res.redirects)
		json_object_set_new(r, "redirects", json_integer(res.redirects));
	if (note.len)
		json_object_set_new(r, "note", json_string(note.data));
	*result = r;
	ToolGateRecordStep(tr->run_id, tr->workspace, "tool", WEB_TOOL, input, r, "ok", 0, started);
	WebAudit(tr, input, &res);
	return TOOL_DONE;
}

const ToolFamily WebToolFamily = {
	.family = "web",
	.prefix = NULL,
	.handles = WebHandles,
	.base_definitions = NULL,
	.run_definitions = WebAddDefinitions,
	.execute = WebExecute,
};
