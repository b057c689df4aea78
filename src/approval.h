/*-------------------------------------------------------------------------
 *
 * approval.h
 *		Approvals (approval.c): the canonical form of a tool call that an
 *		approval is bound to.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_APPROVAL_H
#define PG_AGENTS_APPROVAL_H

#include "utils/jsonb.h"

extern char *PgAgentsCanonicalJson(Jsonb *j);
extern char *PgAgentsApprovalKey(const char *tool, Jsonb *input);

#endif							/* PG_AGENTS_APPROVAL_H */
