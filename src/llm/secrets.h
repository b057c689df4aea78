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

/* secret_keyfile.c: where the key file lies */
extern char *SecretKeyPath(bool *inside, bool warn);
extern void SecretKeyFileCheckAtStartup(void);

extern char *SecretsExpand(const char *value, char **error);
extern char *SecretsExpandIn(const char *value, const char *workspace, char **error);
extern char *SecretsExpandFor(const char *value, const char *workspace, const char *user_workspace,
							  const char *user, bool *used_user, char **error);
extern bool SecretsHasReference(const char *value);

/* ${secret:NAME} in a JSON object's values (MCP headers), expanded in place */
struct json_t;
extern bool SecretsExpandJsonHeaders(struct json_t *headers, const char *workspace, char **error);

#endif							/* PG_AGENTS_SECRETS_H */
