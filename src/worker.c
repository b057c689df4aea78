/*-------------------------------------------------------------------------
 *
 * worker.c
 *		The pg_agents background worker.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "pg_agents.h"

void
PgAgentsRegisterWorker(void)
{
	/* The worker issue registers the background worker here. */
}
