/*-------------------------------------------------------------------------
 *
 * context.h
 *		Context assembly (context.c, docs/worker.md): what a run's model
 *		receives, and the delegation and skill tools.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_CONTEXT_H
#define PG_AGENTS_CONTEXT_H

#include "util/jansson_prelude.h"

#include "llm/llm.h"
#include "tools/tools.h"

#define CONTEXT_NO_ACCESS	"[no access]"	/* a link to a page the run may not read */

typedef struct ContextRun
{
	/* in */
	const char *agent_name;
	const char *instructions;
	const char *page_id;		/* agents.instruction_page_id, or NULL */
	int			depth;			/* the run's delegation depth */
	bool		delegation_listed;	/* the agent's delegation list is not empty */
	bool		skills_possible;	/* a skill granted (autonomous), a skill table (manual) */
	bool		fresh;			/* a new run: first messages, steps */
	LlmProvider provider;
	json_t	   *input;			/* the run's input (a payload may be withheld) */
	const char *trigger_prompt;
	const char *origin;
	json_t	   *tools;			/* delegate_to_agent, use_skill appended */
	json_t	   *messages;		/* fresh: history and the run's input appended */
	/* out */
	char	   *system;
	bool		can_delegate;	/* listed and below the depth limit (teams tools) */
	bool		offer_delegate; /* and an agent to offer: delegate_to_agent */
	bool		has_skills;
	int			max_depth;
	json_t	   *delegates;		/* internal */
} ContextRun;

extern char *ContextAssemble(const ToolRun *tr, ContextRun *cr);
extern bool ContextMayDelegateTo(const ToolRun *tr, int64 child_agent_id);

#endif							/* PG_AGENTS_CONTEXT_H */
