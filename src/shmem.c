/*-------------------------------------------------------------------------
 *
 * shmem.c
 *		Shared memory of pg_agents (the worker's wake-up latch lives here).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "pg_agents.h"

void
PgAgentsInitShmem(void)
{
	/* The worker issue adds the shmem_request/startup hooks here. */
}
