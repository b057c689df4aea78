/*-------------------------------------------------------------------------
 *
 * providers.h
 *		LLM providers (providers.c, docs/worker.md, "Providers"): where a run's
 *		requests go, with which key, headers and limits.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_PROVIDERS_H
#define PG_AGENTS_PROVIDERS_H

#include "util/jansson_prelude.h"

#include <curl/curl.h>

#include "llm.h"

typedef struct ProviderResolved
{
	const char *name;			/* the provider named by the agent; NULL: the
								 * default provider (GUCs) or the agent's own
								 * scope llm_url */
	LlmProvider kind;
	const char *base_url;
	const char *api_key;		/* resolved secret; NULL: no key */
	const char *model;
	const char *const *headers; /* extra "Name: value" lines, resolved */
	int			nheaders;
	const char *const *secrets; /* header values from the secrets store */
	int			nsecrets;
	long		request_timeout;	/* ms */
	bool		stream;			/* the provider's settings "stream" (default false) */
	int			max_concurrent; /* 0: no limit */
	int			requests_per_minute;
	int			tokens_per_minute;
	int			ratelimit;		/* the limiter's bucket, -1: none */
} ProviderResolved;

extern bool ProvidersStale(void);
extern void ProvidersLoad(void);
extern uint64 ProvidersEpoch(void);
extern void ProvidersConfigReloaded(void);
extern bool ProviderResolve(json_t *scope, const char *workspace, const char *key_user, const char *agent_model,
							ProviderResolved *out, char **error);
extern struct curl_slist *ProviderAddHeaders(const ProviderResolved *rp, struct curl_slist *h);
extern char *ProviderScrub(const ProviderResolved *rp, const char *msg);
/* the workspace whose secrets an MCP server's headers resolve among */
extern char *McpServerWorkspace(int64 server_id);

#endif							/* PG_AGENTS_PROVIDERS_H */
