/*-------------------------------------------------------------------------
 *
 * web_lists.c
 *		The lists of the web_fetch settings (docs/worker.md, "web_fetch"):
 *		pg_agents.web_fetch_allowed_hosts and _denied_hosts (a host, an
 *		address or *.domain per entry) and pg_agents.web_fetch_allowed_networks
 *		(CIDR): their syntax, checked when a setting is set (the check hooks
 *		guc.c names), and their matching, for the web_fetch family
 *		(tools_web.c).  Calls no other module: guc.c stays below every
 *		module it configures.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "web_lists.h"

/* the next comma-separated entry of *p, trimmed, or false at the end */
static bool
NextEntry(const char **p, char *buf, size_t size)
{
	const char *s = *p;
	const char *e;
	size_t		n;

	while (*s == ',' || *s == ' ' || *s == '\t')
		s++;
	if (*s == '\0')
		return false;
	e = s;
	while (*e && *e != ',')
		e++;
	*p = e;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	n = Min((size_t) (e - s), size - 1);
	memcpy(buf, s, n);
	buf[n] = '\0';
	return true;
}

/* a host as compared: lower case, without the brackets of an IPv6 literal */
void
WebHostNormal(const char *in, char *out, size_t size)
{
	size_t		n = 0;

	if (*in == '[')
		in++;
	for (; *in && n < size - 1; in++)
		out[n++] = pg_ascii_tolower((unsigned char) *in);
	if (n > 0 && out[n - 1] == ']')
		n--;
	/* a trailing dot names the same host */
	if (n > 0 && out[n - 1] == '.')
		n--;
	out[n] = '\0';
}

/* whether host matches one entry: exact, or *.domain for it and below */
static bool
HostMatches(const char *host, const char *entry)
{
	char		e[256];
	size_t		hl,
				el;

	WebHostNormal(entry, e, sizeof(e));
	if (strncmp(e, "*.", 2) == 0)
	{
		const char *d = e + 2;

		hl = strlen(host);
		el = strlen(d);
		if (strcmp(host, d) == 0)
			return true;
		return hl > el && host[hl - el - 1] == '.' && strcmp(host + hl - el, d) == 0;
	}
	return strcmp(host, e) == 0;
}

/* whether host is in a list of pg_agents.web_fetch_*_hosts */
bool
WebHostListed(const char *list, const char *host)
{
	const char *p = list ? list : "";
	char		entry[256];

	while (NextEntry(&p, entry, sizeof(entry)))
		if (HostMatches(host, entry))
			return true;
	return false;
}

/* check hook of the host lists: each entry a host, an address or *.domain */
bool
WebFetchCheckHosts(char **newval, void **extra, GucSource source)
{
	const char *p = *newval ? *newval : "";
	char		entry[256];

	while (NextEntry(&p, entry, sizeof(entry)))
	{
		const char *c = entry;

		if (strncmp(c, "*.", 2) == 0)
			c += 2;
		if (*c == '\0')
		{
			GUC_check_errdetail("An entry is empty.");
			return false;
		}
		for (; *c; c++)
			if (!(isalnum((unsigned char) *c) || *c == '.' || *c == '-' || *c == ':' ||
				  *c == '[' || *c == ']' || *c == '_'))
			{
				GUC_check_errdetail("Entry \"%s\" is not a host name, an address or *.domain.", entry);
				return false;
			}
	}
	return true;
}

/* one CIDR entry (an address alone is the one address) */
static bool
ParseNet(const char *entry, WebNet *net)
{
	char		buf[128];
	char	   *slash;
	int			max;

	strlcpy(buf, entry, sizeof(buf));
	slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	memset(net, 0, sizeof(WebNet));
	if (inet_pton(AF_INET, buf, net->addr) == 1)
	{
		net->family = AF_INET;
		max = 32;
	}
	else if (inet_pton(AF_INET6, buf, net->addr) == 1)
	{
		net->family = AF_INET6;
		max = 128;
	}
	else
		return false;
	net->prefix = max;
	if (slash)
	{
		char	   *end;
		long		n = strtol(slash + 1, &end, 10);

		if (slash[1] == '\0' || *end != '\0' || n < 0 || n > max)
			return false;
		net->prefix = (int) n;
	}
	return true;
}

/* the networks of a list, at most WEB_MAX_NETS; false on a bad entry */
bool
WebNetsParse(const char *list, WebNet *nets, int *n, char *bad, size_t badsize)
{
	const char *p = list ? list : "";
	char		entry[128];

	*n = 0;
	while (NextEntry(&p, entry, sizeof(entry)))
	{
		if (*n >= WEB_MAX_NETS || !ParseNet(entry, &nets[*n]))
		{
			strlcpy(bad, entry, badsize);
			return false;
		}
		(*n)++;
	}
	return true;
}

/* check hook of pg_agents.web_fetch_allowed_networks */
bool
WebFetchCheckNetworks(char **newval, void **extra, GucSource source)
{
	WebNet		nets[WEB_MAX_NETS];
	int			n;
	char		bad[128];

	if (!WebNetsParse(*newval, nets, &n, bad, sizeof(bad)))
	{
		GUC_check_errdetail("Entry \"%s\" is not an address or a network in CIDR notation (at most %d entries).",
							bad, WEB_MAX_NETS);
		return false;
	}
	return true;
}

