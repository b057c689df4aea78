/*-------------------------------------------------------------------------
 *
 * teams.h
 *		Teams (teams.c, docs/teams.md): messages to runs, ask_parent,
 *		agent_teams.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_TEAMS_H
#define PG_AGENTS_TEAMS_H

#include "jansson_prelude.h"

#include "datatype/timestamp.h"
#include "llm.h"
#include "tools.h"

extern int	TeamsDeliver(int64 run_id, const char *workspace, LlmProvider provider, json_t *messages);
extern bool TeamsPending(int64 run_id, const char *workspace);
extern json_t *TeamsChildQuestion(int64 parent_run_id, const char *workspace, int64 child_run_id);

#endif							/* PG_AGENTS_TEAMS_H */
