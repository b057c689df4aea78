/*
 * capmemo.h
 *		The hourly cap's memo of agent._enqueue_run (capmemo.c).
 */
#ifndef PG_AGENTS_CAPMEMO_H
#define PG_AGENTS_CAPMEMO_H

/* the agent's count carried in this transaction; false when not counted yet */
extern bool EventsCapMemoGet(int64 agent_id, int64 *count);
/* records the agent's count for the rest of this transaction */
extern void EventsCapMemoSet(int64 agent_id, int64 count);

#endif							/* PG_AGENTS_CAPMEMO_H */
