/*-------------------------------------------------------------------------
 *
 * deltas.h
 *		Streamed text of a run (deltas.c): NOTIFY agent_run_deltas, inside a
 *		transaction.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_DELTAS_H
#define PG_AGENTS_DELTAS_H

#include <stddef.h>

/* deltas are gathered by DeltasAdd, then published together (DeltasPublish) */

extern size_t DeltasAdd(int64 run_id, const char *workspace, int64 conversation_id, int step,
						int attempt, const char *text, size_t from, size_t upto);
extern void DeltasPublish(void);
extern void DeltasReset(void);

#endif							/* PG_AGENTS_DELTAS_H */
