/*-------------------------------------------------------------------------
 *
 * config_gen.h
 *		The configuration generation (config_gen.c): bumped when a
 *		transaction that changed providers or secrets commits, so that the
 *		worker reloads them before its next request.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_CONFIG_GEN_H
#define PG_AGENTS_CONFIG_GEN_H

/* its part of the shared memory, registered from _PG_init (shmem.h) */
extern void ConfigGenShmemRegister(void);
extern void ConfigChanged(void);
extern uint64 ConfigGeneration(void);

#endif							/* PG_AGENTS_CONFIG_GEN_H */
