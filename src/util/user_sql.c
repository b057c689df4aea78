/*-------------------------------------------------------------------------
 *
 * user_sql.c
 *		The one runner of user-written SQL inside pg_agents: an event
 *		filter's view (filter.c) and an approval rule's predicate
 *		(approval_rules.c).
 *
 * The body runs in an internal subtransaction that is always rolled back
 * (it decides, it changes nothing), as the given role with
 * SECURITY_RESTRICTED_OPERATION and search_path = pg_catalog, pg_temp,
 * under a deadline.  A body that runs inside another one (a view whose
 * function fires an event) is bounded by the outer deadline.  A cancel
 * that is not ours (shutdown, a pause, the outer deadline) is re-thrown to
 * its owner; our own deadline and any other error become an outcome.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "spi_util.h"
#include "user_sql.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/guc.h"
#include "utils/timeout.h"

static TimeoutId user_sql_timeout_id = MAX_TIMEOUTS;
static volatile sig_atomic_t user_sql_timed_out = false;

/* the deadline: cancels the statement in progress */
static void
UserSqlTimeoutHandler(void)
{
	user_sql_timed_out = true;
	QueryCancelPending = true;
	InterruptPending = true;
	SetLatch(MyLatch);
}

typedef struct UserSqlCall
{
	Oid			role;
	int			save_sec;
	int			timeout_ms;
	bool		nested;
	bool		armed;
	void		(*body) (void *arg);
	void	   *arg;
} UserSqlCall;

/* inside the subtransaction: the role, the restrictions, the deadline, the body */
static void
UserSqlBody(void *p)
{
	UserSqlCall *c = (UserSqlCall *) p;

	SetUserIdAndSecContext(c->role, c->save_sec | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	(void) NewGUCNestLevel();	/* undone with the subtransaction */
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	if (!c->nested)
	{
		user_sql_timed_out = false;
		enable_timeout_after(user_sql_timeout_id, c->timeout_ms);
		c->armed = true;
	}
	c->body(c->arg);
	if (c->armed)
	{
		disable_timeout(user_sql_timeout_id, false);
		c->armed = false;
		/* the timer may have fired just as the body ended */
		if (user_sql_timed_out)
		{
			QueryCancelPending = false;
			user_sql_timed_out = false;
		}
	}
}

/*
 * Runs body(arg) as role, restricted, in a subtransaction rolled back
 * afterwards (read-only by intent: whatever the body's functions did is
 * undone), under a deadline of timeout_ms unless an enclosing call's
 * deadline already runs.  *message (palloc'd in the caller's context) is
 * set for USER_SQL_FAILED.
 */
UserSqlOutcome
UserSqlRun(Oid role, int timeout_ms, void (*body) (void *arg), void *arg, char **message)
{
	UserSqlCall c;
	Oid			save_userid;
	ErrorData  *edata;
	bool		ours;
	UserSqlOutcome outcome;

	*message = NULL;
	if (user_sql_timeout_id == MAX_TIMEOUTS)
		user_sql_timeout_id = RegisterTimeout(USER_TIMEOUT, UserSqlTimeoutHandler);
	memset(&c, 0, sizeof(c));
	c.role = role;
	c.timeout_ms = timeout_ms;
	c.nested = get_timeout_active(user_sql_timeout_id);
	c.body = body;
	c.arg = arg;
	GetUserIdAndSecContext(&save_userid, &c.save_sec);

	edata = SpiUtilSubxact(UserSqlBody, &c, false);
	SetUserIdAndSecContext(save_userid, c.save_sec);
	if (edata == NULL)
		return USER_SQL_OK;

	if (c.armed)
		disable_timeout(user_sql_timeout_id, false);
	ours = user_sql_timed_out;
	/* a real cancel is the caller's; an outer body's deadline its own */
	if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED && (!ours || c.nested))
		ReThrowError(edata);
	if (ours)
		QueryCancelPending = false;
	user_sql_timed_out = false;
	if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
		outcome = USER_SQL_TIMED_OUT;
	else
	{
		outcome = USER_SQL_FAILED;
		*message = pstrdup(edata->message ? edata->message : "unknown error");
	}
	FreeErrorData(edata);
	return outcome;
}
