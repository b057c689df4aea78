/*-------------------------------------------------------------------------
 *
 * worker.h
 *		The background worker (worker.c): its registration at load and
 *		whether it is ready to run units (the units themselves run through
 *		spi_util.h's SpiUtilUnit).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_WORKER_H
#define PG_AGENTS_WORKER_H

#include "access/tupdesc.h"

extern void RunsRegisterWorker(void);	/* the launcher (launcher.c) */
extern void RunsInitLauncherHooks(void);

#endif							/* PG_AGENTS_WORKER_H */
