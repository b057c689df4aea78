/*-------------------------------------------------------------------------
 *
 * secrets.h
 *		The secrets store (secrets.c, docs/worker.md): ${secret:name}
 *		references in provider and MCP settings.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_SECRETS_H
#define PG_AGENTS_SECRETS_H

extern char *pg_agents_secret_key_file;
extern char *SecretsLookup(const char *name, const char *workspace, char **error);
extern char *SecretsExpand(const char *value, char **error);
extern char *SecretsExpandIn(const char *value, const char *workspace, char **error);
extern bool SecretsHasReference(const char *value);

#endif							/* PG_AGENTS_SECRETS_H */
