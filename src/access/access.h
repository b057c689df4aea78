/*-------------------------------------------------------------------------
 *
 * access.h
 *		Resource access: the ids an agent may read (or edit) among the
 *		resources of a type (access_readable.c), for the allowlist and the
 *		tools.  agent.can_access and agent.explain_access are SQL only
 *		(access.c); access_int.h is the module's private header.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_ACCESS_H
#define PG_AGENTS_ACCESS_H

extern char **PgAgentsReadableIds(int64 agent_id, const char *rtype, bool edit, int *n,
								  bool *custom_acl);
extern Oid	PgAgentsAccessRelid(void);
extern bool PgAgentsAccessOnCitus(void);
extern int	PgAgentsReadableOne(int64 agent_id, const char *rtype, const char *rid, bool edit);
extern bool PgAgentsAgentVisible(int64 agent_id);
extern bool PgAgentsAgentState(int64 agent_id, char **owner, char **workspace, bool *live);
extern int	PgAgentsAclResourcesOf(const char *principal, const char *rtype, int max, char **ids);
extern bool PgAgentsTypeHasParent(const char *rtype, const char *ptype);
extern const char *PgAgentsSessionWorkspace(void);

#endif							/* PG_AGENTS_ACCESS_H */
