/*-------------------------------------------------------------------------
 *
 * config_gen.c
 *		The configuration generation: where the configuration of providers
 *		and secrets (agent.providers, agent.secrets) says it changed.
 *
 * A transaction that changed agent.providers or agent.secrets (their
 * statement trigger agent._providers_changed, agent.set_secret,
 * agent.drop_secret) bumps the shared generation when it commits, so that
 * the worker reloads providers and secrets before its next request (a
 * rotated key takes effect without a restart) and an MCP client whose
 * headers may name a secret is set up again.  Without preloading (no shared
 * memory) the generation is 0: then every check reloads.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "port/atomics.h"
#include "storage/shmem.h"

#include "config_gen.h"
#include "shmem.h"

PG_FUNCTION_INFO_V1(pg_agents_providers_changed);

typedef struct ConfigGenShared
{
	pg_atomic_uint64 gen;
} ConfigGenShared;

static ConfigGenShared *config_shared = NULL;
static bool config_cb_registered = false;
static bool config_changed = false;

/* Shared memory wanted (shmem.c's request hook). */
static Size
ConfigGenShmemSize(void)
{
	return MAXALIGN(sizeof(ConfigGenShared));
}

/*
 * Attaches to (or creates) the shared generation, starting at 1, under
 * AddinShmemInitLock.
 */
static void
ConfigGenShmemInit(void)
{
	bool		found;

	config_shared = ShmemInitStruct("pg_agents configuration generation", sizeof(ConfigGenShared), &found);
	if (!found)
		pg_atomic_init_u64(&config_shared->gen, 1);
}

/* from _PG_init: the part registered with shmem.c */
void
ConfigGenShmemRegister(void)
{
	ShmemAddPart(ConfigGenShmemSize, ConfigGenShmemInit);
}

/*
 * Transaction callback: a transaction that changed providers or secrets bumps
 * the shared configuration generation when it commits, so that every process
 * checking it reloads them; aborted or prepared, the change is forgotten.
 */
static void
ConfigXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			if (config_changed && config_shared != NULL)
				pg_atomic_fetch_add_u64(&config_shared->gen, 1);
			config_changed = false;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			/* a prepared transaction is picked up by the next change */
			config_changed = false;
			break;
		default:
			break;
	}
}

/* the current transaction changed providers or secrets: bumped at commit */
void
ConfigChanged(void)
{
	if (!config_cb_registered)
	{
		RegisterXactCallback(ConfigXactCallback, NULL);
		config_cb_registered = true;
	}
	config_changed = true;
}

/* 0 without shared memory (then every check reloads) */
uint64
ConfigGeneration(void)
{
	return config_shared ? pg_atomic_read_u64(&config_shared->gen) : 0;
}

/* agent._providers_changed(): statement trigger of agent.providers and agent.secrets */
Datum
pg_agents_providers_changed(PG_FUNCTION_ARGS)
{
	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("agent._providers_changed() must be called as a trigger")));
	ConfigChanged();
	return PointerGetDatum(NULL);
}
