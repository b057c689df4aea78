/*-------------------------------------------------------------------------
 *
 * pg_agents.c
 *		Module magic and _PG_init, which only hands off to each area.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"

#include "pg_agents.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	if (IsBinaryUpgrade)
		return;

	PgAgentsDefineGucs();
	PgAgentsInitShmem();
	PgAgentsInitRateLimitShmem();	/* providers */
	PgAgentsInitEventStats();
	PgAgentsRegisterWorker();
}
