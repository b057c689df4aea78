/*-------------------------------------------------------------------------
 *
 * http_easy.h
 *		The options every libcurl easy handle of pg_agents starts with
 *		(embed.c, mcp.c, mcp_oauth.c).  Header-only so that the MCP probe
 *		(bin/pg_agents_mcp), built from mcp.c without the server, shares it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_HTTP_EASY_H
#define PG_AGENTS_HTTP_EASY_H

#include <curl/curl.h>

/*
 * Sets url on h with no signals, no redirects followed, and http/https as
 * the only protocols.
 */
static inline void
http_easy_defaults(CURL *h, const char *url)
{
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(h, CURLOPT_PROTOCOLS, (long) (CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
}

#endif							/* PG_AGENTS_HTTP_EASY_H */
