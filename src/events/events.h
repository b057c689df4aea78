/*-------------------------------------------------------------------------
 *
 * events.h
 *		Events: trigger filters (filter.c), dispatch of an event to the
 *		triggers it wakes (dispatch.c, called by watch.c and the SQL API) and
 *		the counters of events nobody could receive (eventstats.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_EVENTS_H
#define PG_AGENTS_EVENTS_H

#include "nodes/pg_list.h"
#include "utils/jsonb.h"

/* filter.c */
typedef struct FilterEval
{
	Oid			role;			/* reads a filter view with this role's rights */
	int64		trigger_id;		/* for messages; 0 when none */
	char	   *error;			/* out: why a filter view failed, or NULL */
} FilterEval;
extern bool EventsFilterMatches(Jsonb *filter, Jsonb *payload, FilterEval *ev);

/* dispatch.c; workspace NULL: unknown (the event wakes nobody) */
extern List *EventsDispatch(const char *workspace, const char *event_name,
							  const char *resource_type,
							  const char *resource_id, Jsonb *payload,
							  const char *actor, const char *event_id);
extern bool EventsHasCandidates(const char *workspace,
									   const char *event_name,
									   const char *resource_type,
									   const char *resource_id);

/* eventstats.c */
extern void EventsInitStats(void);
extern void EventsCountUnknownWorkspace(const char *event_name,
										  const char *resource_type,
										  const char *resource_id,
										  const char *why);

#endif							/* PG_AGENTS_EVENTS_H */
