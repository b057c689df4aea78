/*
 * enqueue.h
 *		agent._enqueue_run in C (enqueue.c): the one way a run is queued.
 */
#ifndef PG_AGENTS_ENQUEUE_H
#define PG_AGENTS_ENQUEUE_H

#include "utils/jsonb.h"

/* the arguments of agent._enqueue_run; NULL strings and has_* false are SQL NULLs */
typedef struct EnqueueArgs
{
	bool		has_agent;
	int64		agent_id;
	const char *regime;
	const char *origin;
	Jsonb	   *input;			/* NULL: '{}' */
	bool		has_trigger;
	int64		trigger_id;
	const char *requested_by;
	bool		has_parent;
	int64		parent_run_id;
	bool		has_token_budget;
	int64		token_budget;
	/*
	 * Set by a caller that has just read the agent's row (active, not
	 * deleted): its workspace and hourly_run_cap (has_cap false: NULL), so
	 * that it is not read again.  NULL: read here.
	 */
	const char *agent_workspace;
	bool		has_cap;
	int64		cap;
} EnqueueArgs;

/*
 * Queues one run; the caller acts as the owner of schema "agent" with
 * search_path pg_catalog (agent._enqueue_run is SECURITY DEFINER; fire_event
 * elevates).  Returns the run's id.
 */
extern int64 EventsEnqueueRun(const EnqueueArgs *args);

#endif							/* PG_AGENTS_ENQUEUE_H */
