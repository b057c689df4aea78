/*-------------------------------------------------------------------------
 *
 * jsonb_build.h
 *		Small helpers that push keys and values onto a JsonbParseState
 *		(jsonb_build.c), for the C code that builds jsonb objects: event
 *		payloads (dispatch.c, watch.c) and the audit trigger's rows.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_JSONB_BUILD_H
#define PG_AGENTS_JSONB_BUILD_H

#include "postgres.h"

#include "nodes/pg_list.h"
#include "utils/jsonb.h"

extern void JsonbBuildKey(JsonbParseState **ps, const char *key);
extern void JsonbBuildJsonb(JsonbParseState **ps, Jsonb *j);
extern void JsonbBuildStringArray(JsonbParseState **ps, List *strings);
extern void JsonbBuildTextField(JsonbParseState **ps, const char *key, const char *val);
extern void JsonbBuildIntField(JsonbParseState **ps, const char *key, int64 val);

#endif							/* PG_AGENTS_JSONB_BUILD_H */
