/*-------------------------------------------------------------------------
 *
 * mcp_sql.h
 *		jsonb <-> jansson conversions shared by the SQL-callable MCP files
 *		(mcp_sql.c, mcp_elicit_sql.c, mcp_oauth_sql.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_MCP_SQL_H
#define PG_AGENTS_MCP_SQL_H

#include "util/jansson_prelude.h"

#include "utils/jsonb.h"

/*
 * A jsonb value as a new jansson value (NULL when it cannot be read).  With
 * wipe, the intermediate text is zeroed before it is freed (secrets).
 */
extern json_t *McpJsonbToJansson(Jsonb *jb, bool wipe);

/*
 * Takes ownership of j: dumped, released, then turned into a jsonb Datum.
 * what names the value in the error raised when it cannot be encoded; with
 * wipe, the dumped text is zeroed before it is freed.
 */
extern Datum McpJanssonToJsonb(json_t *j, const char *what, bool wipe);

#endif							/* PG_AGENTS_MCP_SQL_H */
