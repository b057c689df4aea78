/*-------------------------------------------------------------------------
 *
 * embed.h
 *		Query embeddings (embed.c) for the search tools.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_EMBED_H
#define PG_AGENTS_EMBED_H

extern char *EmbedQuery(const char *base_url, const char *model, const char *text, char **error);

#endif							/* PG_AGENTS_EMBED_H */
