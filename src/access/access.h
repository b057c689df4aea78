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

extern char **AccessReadableIds(int64 agent_id, const char *rtype, bool edit, int *n,
								  bool *custom_acl);
extern Oid	AccessRelid(void);
extern bool AccessOnCitus(void);
extern int	AccessReadableOne(int64 agent_id, const char *rtype, const char *rid, bool edit);
extern bool AccessAgentIdVisible(int64 agent_id);
extern bool AccessAgentState(int64 agent_id, char **owner, char **workspace, bool *live);
extern int	AccessAclResourcesOf(const char *principal, const char *rtype, int max, char **ids);
extern bool AccessTypeHasParent(const char *rtype, const char *ptype);
extern const char *AccessSessionWorkspace(void);

#endif							/* PG_AGENTS_ACCESS_H */
