/*-------------------------------------------------------------------------
 *
 * web_lists.h
 *		The lists of the web_fetch settings (web_lists.c): their syntax,
 *		checked by guc.c's check hooks, and their matching, used by the
 *		web_fetch family (tools_web.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_WEB_LISTS_H
#define PG_AGENTS_WEB_LISTS_H

#include "utils/guc.h"

#define WEB_MAX_NETS		64

/* one network of pg_agents.web_fetch_allowed_networks */
typedef struct WebNet
{
	int			family;			/* AF_INET or AF_INET6 */
	unsigned char addr[16];
	int			prefix;
} WebNet;

/* check hooks of pg_agents.web_fetch_*_hosts and _allowed_networks (guc.c) */
extern bool WebFetchCheckHosts(char **newval, void **extra, GucSource source);
extern bool WebFetchCheckNetworks(char **newval, void **extra, GucSource source);

extern void WebHostNormal(const char *in, char *out, size_t size);
extern bool WebHostListed(const char *list, const char *host);
extern bool WebNetsParse(const char *list, WebNet *nets, int *n, char *bad, size_t badsize);

#endif							/* PG_AGENTS_WEB_LISTS_H */
