/*-------------------------------------------------------------------------
 *
 * citus_shard.c
 *		The table a Citus shard belongs to.
 *
 * When an application table is distributed with Citus, its row triggers
 * (agent.watch_table's, agent.audit_table's) fire on the shard, a table
 * named <table>_<shard id> on the node that holds it.  What the trigger
 * writes must name the table the application knows (the watcher's event
 * resource, the audit row's default target type), not the shard.
 *
 * A relation is taken for a shard only when Citus's catalog pg_dist_shard
 * exists, the digits after the last underscore of its name are a shard id
 * there, and that shard's table is in the same schema and has exactly the
 * name before the underscore.  Anything else (no Citus, an ordinary table
 * whose name ends in digits, a shard name Citus had to shorten) keeps its
 * own name.  The callers look it up once per relation and keep the answer.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "citus_shard.h"

/*
 * The name of the Citus table whose shard rel is (palloc'd in the caller's
 * memory context), or NULL when rel is not a shard.
 */
char *
CitusShardTableName(Relation rel)
{
	const char *name = RelationGetRelationName(rel);
	const char *us = strrchr(name, '_');
	const char *p;
	char	   *end;
	int64		shardid;
	char	   *result = NULL;
	MemoryContext caller = CurrentMemoryContext;
	Oid			argtypes[2] = {INT8OID, OIDOID};
	Datum		values[2];

	if (!OidIsValid(get_relname_relid("pg_dist_shard", PG_CATALOG_NAMESPACE)))
		return NULL;
	if (us == NULL || us == name || us[1] == '\0')
		return NULL;
	for (p = us + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return NULL;
	errno = 0;
	shardid = strtoi64(us + 1, &end, 10);
	if (errno != 0 || *end != '\0' || shardid <= 0)
		return NULL;
	values[0] = Int64GetDatum(shardid);
	values[1] = ObjectIdGetDatum(RelationGetNamespace(rel));

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_agents: SPI_connect failed");
	if (SPI_execute_with_args("SELECT c.relname::pg_catalog.text"
							  "  FROM pg_catalog.pg_dist_shard s"
							  "  JOIN pg_catalog.pg_class c ON c.oid = s.logicalrelid"
							  " WHERE s.shardid = $1 AND c.relnamespace = $2",
							  2, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "pg_agents: reading pg_dist_shard failed");
	if (SPI_processed == 1)
	{
		char	   *logical = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		if (logical != NULL && strlen(logical) == (size_t) (us - name) &&
			strncmp(logical, name, us - name) == 0)
			result = MemoryContextStrdup(caller, logical);
	}
	SPI_finish();
	return result;
}
