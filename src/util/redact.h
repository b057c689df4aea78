/*-------------------------------------------------------------------------
 *
 * redact.h
 *		Credentials and oversized data never reach storage (redact.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_REDACT_H
#define PG_AGENTS_REDACT_H

#include "utils/jsonb.h"

#define PG_AGENTS_REDACTED		"[REDACTED]"
#define PG_AGENTS_TRUNCATED		"[TRUNCATED]"
#define REDACT_MAX_STRING		2048	/* bytes kept of one string */
#define REDACT_SCAN_MARGIN		512 /* bytes scanned past the cut */
#define REDACT_MAX_DEPTH		8	/* nesting levels kept */
#define REDACT_MAX_ITEMS		500 /* members kept per array or object */
#define REDACT_MAX_PAYLOAD		(64 * 1024) /* bytes of text kept per document */

typedef struct PgAgentsRedactor
{
	int64		budget;			/* bytes of text still allowed */
} PgAgentsRedactor;

extern bool RedactSensitiveName(const char *name, int len);
extern char *RedactText(const char *s, int len, int *outlen);
extern Jsonb *RedactJsonb(Jsonb *in);
extern void RedactInit(PgAgentsRedactor *r);
extern void RedactPushString(PgAgentsRedactor *r, JsonbParseState **ps,
									 JsonbIteratorToken tok, const char *s, int len,
									 bool sensitive);
extern JsonbValue *RedactPushJsonb(PgAgentsRedactor *r, JsonbParseState **ps,
										   JsonbIteratorToken tok, Jsonb *jb,
										   int depth, bool sensitive);

#endif							/* PG_AGENTS_REDACT_H */
