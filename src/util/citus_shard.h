/*-------------------------------------------------------------------------
 *
 * citus_shard.h
 *		The table a Citus shard belongs to, for row triggers that fire on
 *		the shard and name the table in what they write.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_CITUS_SHARD_H
#define PG_AGENTS_CITUS_SHARD_H

#include "postgres.h"

#include "utils/rel.h"

extern char *CitusShardTableName(Relation rel);

#endif							/* PG_AGENTS_CITUS_SHARD_H */
