/*-------------------------------------------------------------------------
 *
 * tools_web.h
 *		The web switch (tools_web.c): the web_fetch tool family, offered to
 *		an agent whose settings have web_access on, and the check hooks of
 *		its settings (guc.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_TOOLS_WEB_H
#define PG_AGENTS_TOOLS_WEB_H

#include "utils/guc.h"

/* check hooks of pg_agents.web_fetch_*_hosts and _allowed_networks */
extern bool WebFetchCheckHosts(char **newval, void **extra, GucSource source);
extern bool WebFetchCheckNetworks(char **newval, void **extra, GucSource source);

#endif							/* PG_AGENTS_TOOLS_WEB_H */
