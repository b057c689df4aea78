/*-------------------------------------------------------------------------
 *
 * access_gen.h
 *		The access generation (access_gen.c): which transactions change what
 *		agents may access, for the readable sets kept between statements.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_ACCESS_GEN_H
#define PG_AGENTS_ACCESS_GEN_H

#define PG_AGENTS_ACCESS_INFLIGHT 64

extern void PgAgentsNoteAccessChange(void);
extern bool PgAgentsAccessChangedInXact(void);
extern bool PgAgentsAccessSample(uint64 *gen, TransactionId *inflight, int *n);

/* shared memory, for shmem.c */
extern Size AccessGenShmemSize(void);
extern void AccessGenShmemInit(void);

#endif							/* PG_AGENTS_ACCESS_GEN_H */
