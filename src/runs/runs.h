/*-------------------------------------------------------------------------
 *
 * runs.h
 *		The runs in flight (run_loop.c; the other run_*.c files share
 *		run_int.h with it): the worker's run slots, claimed,
 *		stepped and drained by the worker loop.  Prefixed Runs, not Executor,
 *		which is PostgreSQL's own executor in the same process.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_RUNS_H
#define PG_AGENTS_RUNS_H

extern void RunsInit(void);
extern void RunsWake(void);
extern void RunsReclaimOnStart(void);
extern void RunsStep(void);
extern long RunsNextTimeout(long dflt);
extern int	RunsActive(void);
/* operations: the drain of SIGTERM (docs/operations.md) */
extern int	RunsHeld(void);
extern bool RunsDrainIdle(void);
extern void RunsDrainStep(void);
extern int	RunsRequeueAll(void);

#endif							/* PG_AGENTS_RUNS_H */
