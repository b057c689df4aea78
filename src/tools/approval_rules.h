/*-------------------------------------------------------------------------
 *
 * approval_rules.h
 *		Conditional approval gates (approval_rules.c, scope.approval_rules).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_APPROVAL_RULES_H
#define PG_AGENTS_APPROVAL_RULES_H

#include "util/jansson_prelude.h"

extern bool ApprovalRulesCover(json_t *scope, const char *tool);
extern bool ApprovalRulesNeed(json_t *scope, const char *tool, json_t *input, int64 run_id,
							  const char **rule, char **why);

#endif							/* PG_AGENTS_APPROVAL_RULES_H */
