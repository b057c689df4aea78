/*-------------------------------------------------------------------------
 *
 * user_sql.h
 *		Runs SQL that a user wrote (a filter view, an approval rule's
 *		function) as a given role, restricted, read-only by intent and under
 *		a deadline (user_sql.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_USER_SQL_H
#define PG_AGENTS_USER_SQL_H

#include "postgres.h"

typedef enum UserSqlOutcome
{
	USER_SQL_OK,				/* the body ran; what it wrote is undone */
	USER_SQL_TIMED_OUT,			/* the deadline passed */
	USER_SQL_FAILED				/* the body raised: *message says what */
} UserSqlOutcome;

extern UserSqlOutcome UserSqlRun(Oid role, int timeout_ms, void (*body) (void *arg),
								 void *arg, char **message);

#endif							/* PG_AGENTS_USER_SQL_H */
