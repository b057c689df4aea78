/*-------------------------------------------------------------------------
 *
 * allowlist.c
 *		Plan-time switch of the allowlist row-level security policies.
 *
 * The policies installed by agent.enable_allowlist() read
 *
 *		NOT agent._allowlist_active() OR id = ANY (ARRAY(<granted ids>))
 *
 * agent._allowlist_active() is declared IMMUTABLE so that the planner folds
 * it: in a session that does not act as an agent the whole policy folds to
 * true and disappears (the table is planned exactly as without row-level
 * security: GIN and trigram indexes stay usable); in a session acting as an
 * agent it folds to the indexable "id = ANY(...)" alone.
 *
 * Folding a setting into a plan is only correct if no plan outlives a change
 * of that setting, so the assign hook of pg_agents.actor invalidates every
 * cached plan of the backend (ResetPlanCache) whenever the session switches
 * between acting as an agent and not.  The agent id itself is never folded:
 * the granted ids are computed at execution time from
 * agent.current_agent_id(), so a plan made for one agent and run for another
 * still filters for the second one.
 *
 * The policies also fold agent._allowlist_custom_acl() (whether a custom ACL
 * function is configured), so a change of agent.access_config invalidates
 * every cached plan of every backend at commit (a statement trigger calling
 * pg_agents_allowlist_invalidate).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "commands/trigger.h"
#include "fmgr.h"
#include "utils/inval.h"
#include "utils/plancache.h"

#include "pg_agents.h"

PG_FUNCTION_INFO_V1(pg_agents_allowlist_active);
PG_FUNCTION_INFO_V1(pg_agents_allowlist_invalidate);

/* whether the last value assigned to pg_agents.actor named an agent */
static bool actor_is_agent = false;

/*
 * True when an actor string is "agent:<1 to 18 digits>", the same rule as
 * agent.current_agent_id().
 */
bool
PgAgentsActorIsAgent(const char *actor)
{
	const char *p;
	int			n = 0;

	if (actor == NULL || strncmp(actor, "agent:", 6) != 0)
		return false;
	for (p = actor + 6; *p; p++)
	{
		if (!isdigit((unsigned char) *p))
			return false;
		n++;
	}
	return n >= 1 && n <= 18;
}

/*
 * Assign hook of pg_agents.actor: a change between "acts as an agent" and
 * "does not" invalidates the backend's cached plans, which may hold a folded
 * allowlist policy.  Assign hooks must not fail; ResetPlanCache only marks
 * plans invalid.
 */
void
PgAgentsActorAssign(const char *newval, void *extra)
{
	bool		is_agent = PgAgentsActorIsAgent(newval);

	if (is_agent != actor_is_agent)
	{
		actor_is_agent = is_agent;
		ResetPlanCache();
	}
}

/*
 * agent._allowlist_active() RETURNS boolean IMMUTABLE: whether the session
 * acts as an agent.  Internal to the allowlist policies; see the header.
 */
Datum
pg_agents_allowlist_active(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(PgAgentsActorIsAgent(pg_agents_actor));
}

/*
 * agent._allowlist_invalidate(): statement trigger on agent.access_config.
 * Sends a relcache invalidation of every relation at commit, which makes every
 * backend drop its cached plans (they may hold a folded policy).
 */
Datum
pg_agents_allowlist_invalidate(PG_FUNCTION_ARGS)
{
	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("agent._allowlist_invalidate() must be called as a trigger")));
	CacheInvalidateRelcacheAll();
	return PointerGetDatum(NULL);
}
