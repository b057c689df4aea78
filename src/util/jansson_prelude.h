/*-------------------------------------------------------------------------
 *
 * jansson_prelude.h
 *		jansson for code loaded into the server: the one place that works
 *		around its json_object(), a name PostgreSQL uses as well.
 *
 *		Include it right after postgres.h (or first, in a file that does not
 *		use PostgreSQL, such as src/mcp/mcp_transport.c), before any header that includes
 *		utils/builtins.h; module headers that use json_t include it too.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_JANSSON_PRELUDE_H
#define PG_AGENTS_JANSSON_PRELUDE_H

/*
 * PostgreSQL's fmgrprotos.h (included by utils/builtins.h) declares the SQL
 * function json_object(PG_FUNCTION_ARGS), whose type conflicts with
 * jansson's json_object(void): include it first, under another name.
 */
#ifdef POSTGRES_H
#define json_object pg_agents_sql_json_object
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#undef json_object
#endif

#include <jansson.h>

/*
 * The postgres executable exports its own json_object (the SQL function),
 * which the dynamic linker would bind our calls to: make empty objects
 * through json_pack, whose internal call stays inside libjansson.
 */
#define json_object() json_pack("{}")

#endif							/* PG_AGENTS_JANSSON_PRELUDE_H */
