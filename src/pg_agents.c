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

#include "access/access_gen.h"
#include "access/allowlist.h"
#include "events/events.h"
#include "llm/ratelimit.h"
#include "llm/secrets.h"
#include "runs/worker.h"
#include "util/config_gen.h"
#include "util/guc.h"
#include "util/shmem.h"
#include "util/wake.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/*
 * Module load: defines the settings, then sets up the shared memory (general
 * state and the parts it holds, provider rate limits, event counters) and
 * registers the worker.
 * Does nothing under pg_upgrade (binary upgrade mode).
 */
void
_PG_init(void)
{
	if (IsBinaryUpgrade)
		return;

	GucDefineAll();
	ShmemInitAll();
	WakeShmemRegister();		/* the parts of shmem.c's segment, in order */
	AccessGenShmemRegister();
	ConfigGenShmemRegister();
	RateInitShmem();	/* providers */
	EventsInitStats();
	RunsRegisterWorker();	/* the launcher, which starts the workers */
	RunsInitLauncherHooks();	/* DROP DATABASE stops its worker first */
	AllowlistInitHooks();		/* the query's @@ and LIKE under the allowlist */
	SecretKeyFileCheckAtStartup();	/* a WARNING when it lies in PGDATA */
}
