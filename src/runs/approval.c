/*-------------------------------------------------------------------------
 *
 * approval.c
 *		Deterministic approval keys: SHA-256 of a tool name and its input in
 *		canonical JSON.
 *
 * Canonical JSON (agent.canonical_json) is the text the key is computed
 * over:
 *   - object keys sorted by their UTF-8 bytes, at every depth (jsonb has
 *     already removed duplicate keys, the last one winning);
 *   - arrays keep their order;
 *   - numbers normalised: no insignificant trailing zeroes, no trailing
 *     decimal point, no exponent (1.0, 1.00 and 1e0 are all 1);
 *   - strings escaped as JSON, no insignificant white space.
 *
 * agent.approval_key(tool, input) is the lowercase hex SHA-256 of the
 * canonical JSON of the two-element array [tool, input], so that the tool
 * name and the input cannot run into each other.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/cryptohash.h"
#include "common/sha2.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "util/redact.h"

PG_FUNCTION_INFO_V1(pg_agents_canonical_json);
PG_FUNCTION_INFO_V1(pg_agents_approval_key);

typedef struct CanonicalPair
{
	char	   *key;
	int			keylen;
	JsonbValue	value;
} CanonicalPair;

static void CanonicalContainer(StringInfo out, JsonbContainer *jc);

/* Appends the len bytes at s to out as a JSON string literal. */
static void
CanonicalString(StringInfo out, const char *s, int len)
{
	char	   *z = pnstrdup(s, len);

	escape_json(out, z);
	pfree(z);
}

/*
 * Appends one value in canonical form: null, booleans and strings as JSON,
 * numbers normalized (numeric_normalize, so 1.0 and 1 agree), and a binary
 * value (a nested container) written recursively by CanonicalContainer.
 */
static void
CanonicalScalar(StringInfo out, JsonbValue *v)
{
	switch (v->type)
	{
		case jbvNull:
			appendStringInfoString(out, "null");
			break;
		case jbvBool:
			appendStringInfoString(out, v->val.boolean ? "true" : "false");
			break;
		case jbvString:
			CanonicalString(out, v->val.string.val, v->val.string.len);
			break;
		case jbvNumeric:
			{
				char	   *n = numeric_normalize(v->val.numeric);

				appendStringInfoString(out, n);
				pfree(n);
				break;
			}
		case jbvBinary:
			CanonicalContainer(out, v->val.binary.data);
			break;
		default:
			elog(ERROR, "unexpected jsonb value type %d", (int) v->type);
	}
}

/*
 * qsort comparator of object pairs: by key bytes, a shorter key that is a
 * prefix of a longer one first.
 */
static int
ComparePairs(const void *a, const void *b)
{
	const CanonicalPair *pa = (const CanonicalPair *) a;
	const CanonicalPair *pb = (const CanonicalPair *) b;
	int			minlen = Min(pa->keylen, pb->keylen);
	int			c = memcmp(pa->key, pb->key, minlen);

	if (c != 0)
		return c;
	return (pa->keylen > pb->keylen) - (pa->keylen < pb->keylen);
}

/*
 * Writes one container (object, array or raw scalar) in canonical form.
 * Nested containers come back from the iterator as jbvBinary values
 * (skipNested), and are written recursively.
 */
static void
CanonicalContainer(StringInfo out, JsonbContainer *jc)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	check_stack_depth();
	CHECK_FOR_INTERRUPTS();

	if (JsonContainerIsScalar(jc))
	{
		if (!JsonbExtractScalar(jc, &v))
			elog(ERROR, "could not extract jsonb scalar");
		CanonicalScalar(out, &v);
		return;
	}

	it = JsonbIteratorInit(jc);
	tok = JsonbIteratorNext(&it, &v, true);

	if (tok == WJB_BEGIN_ARRAY)
	{
		bool		first = true;

		appendStringInfoChar(out, '[');
		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		{
			if (tok != WJB_ELEM)
				continue;
			if (!first)
				appendStringInfoChar(out, ',');
			first = false;
			CanonicalScalar(out, &v);
		}
		appendStringInfoChar(out, ']');
	}
	else if (tok == WJB_BEGIN_OBJECT)
	{
		int			n = JsonContainerSize(jc);
		int			count = 0;
		CanonicalPair *pairs = palloc(sizeof(CanonicalPair) * Max(n, 1));
		int			i;

		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		{
			if (tok == WJB_KEY)
			{
				if (count >= n)
					elog(ERROR, "jsonb object has more keys than its header says");
				pairs[count].key = v.val.string.val;
				pairs[count].keylen = v.val.string.len;
			}
			else if (tok == WJB_VALUE)
				pairs[count++].value = v;
		}
		qsort(pairs, count, sizeof(CanonicalPair), ComparePairs);
		appendStringInfoChar(out, '{');
		for (i = 0; i < count; i++)
		{
			if (i > 0)
				appendStringInfoChar(out, ',');
			CanonicalString(out, pairs[i].key, pairs[i].keylen);
			appendStringInfoChar(out, ':');
			CanonicalScalar(out, &pairs[i].value);
		}
		appendStringInfoChar(out, '}');
		pfree(pairs);
	}
	else
		elog(ERROR, "unexpected jsonb iterator token %d", (int) tok);
}

/*
 * The canonical JSON text of a jsonb value (exported for the executor and
 * for tests).
 */
static char *
PgAgentsCanonicalJson(Jsonb *j)
{
	StringInfoData out;

	initStringInfo(&out);
	CanonicalContainer(&out, &j->root);
	return out.data;
}

/*
 * Lowercase hex SHA-256 of the canonical JSON of [tool, input].
 */
static char *
PgAgentsApprovalKey(const char *tool, Jsonb *input)
{
	StringInfoData buf;
	pg_cryptohash_ctx *ctx;
	uint8		digest[PG_SHA256_DIGEST_LENGTH];
	char	   *hex = palloc(PG_SHA256_DIGEST_LENGTH * 2 + 1);
	static const char digits[] = "0123456789abcdef";
	int			i;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '[');
	escape_json(&buf, tool);
	appendStringInfoChar(&buf, ',');
	CanonicalContainer(&buf, &input->root);
	appendStringInfoChar(&buf, ']');

	ctx = pg_cryptohash_create(PG_SHA256);
	if (ctx == NULL ||
		pg_cryptohash_init(ctx) < 0 ||
		pg_cryptohash_update(ctx, (const uint8 *) buf.data, buf.len) < 0 ||
		pg_cryptohash_final(ctx, digest, sizeof(digest)) < 0)
	{
		const char *why = ctx ? pg_cryptohash_error(ctx) : "out of memory";

		if (ctx)
			pg_cryptohash_free(ctx);
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not compute SHA-256 digest: %s", why)));
	}
	pg_cryptohash_free(ctx);
	pfree(buf.data);

	for (i = 0; i < PG_SHA256_DIGEST_LENGTH; i++)
	{
		hex[i * 2] = digits[digest[i] >> 4];
		hex[i * 2 + 1] = digits[digest[i] & 0x0f];
	}
	hex[PG_SHA256_DIGEST_LENGTH * 2] = '\0';
	return hex;
}

/* agent.canonical_json(jsonb) RETURNS text */
Datum
pg_agents_canonical_json(PG_FUNCTION_ARGS)
{
	Jsonb	   *j = PG_GETARG_JSONB_P(0);

	PG_RETURN_TEXT_P(cstring_to_text(PgAgentsCanonicalJson(j)));
}

/* agent.approval_key(tool text, input jsonb) RETURNS text */
Datum
pg_agents_approval_key(PG_FUNCTION_ARGS)
{
	char	   *tool = text_to_cstring(PG_GETARG_TEXT_PP(0));
	Jsonb	   *input = PG_GETARG_JSONB_P(1);

	if (tool[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tool name must not be empty"),
				 errdetail("An approval key is computed from a tool name and its input.")));

	PG_RETURN_TEXT_P(cstring_to_text(PgAgentsApprovalKey(tool, input)));
}

/*
 * agent._has_credential(jsonb): whether redaction of credentials would
 * change the value (docs/audit.md's rules without the size cuts): a
 * string, array or object under a credential-shaped name, or a string
 * holding a credential-shaped value.  An approval stores the tool input
 * exactly as it will run, so agent.request_approval refuses an input for
 * which this is true instead of storing it (or storing a redacted copy
 * that would not be what runs).  Every string is scanned whole.
 */
PG_FUNCTION_INFO_V1(pg_agents_has_credential);

Datum
pg_agents_has_credential(PG_FUNCTION_ARGS)
{
	Jsonb	   *jb = PG_GETARG_JSONB_P(0);
	JsonbIterator *it = JsonbIteratorInit(&jb->root);
	JsonbValue	v;
	JsonbIteratorToken tok;
	bool		after_sensitive_key = false;

	while ((tok = JsonbIteratorNext(&it, &v, false)) != WJB_DONE)
	{
		bool		sensitive = after_sensitive_key;

		after_sensitive_key = false;
		switch (tok)
		{
			case WJB_KEY:
				after_sensitive_key = RedactSensitiveName(v.val.string.val, v.val.string.len);
				break;
			case WJB_BEGIN_ARRAY:
			case WJB_BEGIN_OBJECT:
				if (sensitive)
					PG_RETURN_BOOL(true);
				break;
			case WJB_VALUE:
			case WJB_ELEM:
				if (v.type == jbvString)
				{
					int			outlen;

					if (sensitive)
						PG_RETURN_BOOL(true);
					if (RedactText(v.val.string.val, v.val.string.len, &outlen) != NULL)
						PG_RETURN_BOOL(true);
				}
				break;
			default:
				break;
		}
	}
	PG_RETURN_BOOL(false);
}
