/*-------------------------------------------------------------------------
 *
 * redact.c
 *		Redaction of credentials and oversized data before anything is
 *		stored: audit rows, run steps, approvals.
 *
 * The rules (docs/audit.md gives them in full):
 *
 *	- a name (column name, jsonb key) shaped like a credential hides its
 *	  value when the value is a string, an array or an object; numbers,
 *	  booleans and nulls are kept (token_budget is a count, not a secret);
 *	- a string is scanned for credential-shaped values, each replaced by
 *	  "[REDACTED]": PEM private keys, "Bearer <token>" and "Basic <b64>",
 *	  well-known key prefixes (sk-, ghp_/gho_/ghu_/ghs_/ghr_, github_pat_,
 *	  glpat-, xox[abprs]-, AKIA/ASIA, AIza), JWTs, "name=value" pairs whose
 *	  name is credential-shaped, the password of a URL, and long opaque
 *	  high-entropy tokens;
 *	- a string longer than REDACT_MAX_STRING bytes is cut; a container
 *	  nested deeper than REDACT_MAX_DEPTH, or past REDACT_MAX_ITEMS
 *	  members, is cut; once REDACT_MAX_PAYLOAD bytes of text have been
 *	  kept, the remaining strings and containers are cut.
 *
 * Everything is a single pass over the input, without regular expressions.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "redact.h"

PG_FUNCTION_INFO_V1(pg_agents_redact);

#define ENTROPY_MIN_LENGTH	32
#define ENTROPY_MIN_BITS	4.2

static const char *const sensitive_words[] = {
	"password", "passwd", "passphrase", "pass", "pwd", "secret", "secrets",
	"token", "apikey", "auth", "authorization", "cookie", "cookies",
	"credential", "credentials", "jwt", "bearer", "otp", "privatekey",
	"accesskey", "secretkey", NULL
};

/* "<word> key" pairs (api_key, privateKey, ACCESS_KEY, ...) */
static const char *const key_qualifiers[] = {
	"api", "private", "access", "secret", "session", "encryption",
	"signing", "master", "client", NULL
};

/* substrings of the name with separators removed (accessToken, apiKey...) */
static const char *const sensitive_fragments[] = {
	"password", "passwd", "apikey", "privatekey", "accesskey", "secretkey",
	"clientsecret", "accesstoken", "refreshtoken", "authtoken",
	"sessiontoken", "bearertoken", "idtoken", "credential", "authorization",
	NULL
};

/* whether w is one of the NULL-terminated list */
static bool
in_list(const char *w, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(w, *list) == 0)
			return true;
	return false;
}

static inline bool
is_alpha(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static inline bool
is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static inline bool
is_alnum(unsigned char c)
{
	return is_alpha(c) || is_digit(c);
}

static inline bool
is_upper(unsigned char c)
{
	return c >= 'A' && c <= 'Z';
}

/* c lowered when it is an ASCII capital, unchanged otherwise (no locale). */
static inline char
ascii_lower(unsigned char c)
{
	return is_upper(c) ? (char) (c + ('a' - 'A')) : (char) c;
}

/*
 * Whether a name (column name, jsonb key, "name" of a name=value pair) is
 * shaped like a credential.  The name is split into words at
 * non-letters and at camelCase boundaries (digits are dropped); it is
 * sensitive when a word is in sensitive_words, when "key" follows a word of
 * key_qualifiers, or when the name with separators removed contains a
 * sensitive_fragment.
 */
bool
RedactSensitiveName(const char *name, int len)
{
	char		joined[129];
	int			nj = 0;
	char		word[64];
	int			nw = 0;
	char		prev[64];
	int			i;

	if (len <= 0)
		return false;
	if (len > 128)
		len = 128;
	prev[0] = '\0';

	for (i = 0; i <= len; i++)
	{
		unsigned char c = (i < len) ? (unsigned char) name[i] : '\0';
		bool		boundary;

		if (i < len && is_alpha(c))
			joined[nj++] = ascii_lower(c);

		boundary = (i == len) || !is_alpha(c);
		/* camelCase: aB, or ABc (the last capital starts a new word) */
		if (!boundary && nw > 0 && is_upper(c))
		{
			unsigned char p = (unsigned char) name[i - 1];

			if (!is_upper(p))
				boundary = true;
			else if (i + 1 < len && is_alpha((unsigned char) name[i + 1]) &&
					 !is_upper((unsigned char) name[i + 1]))
				boundary = true;
		}
		if (boundary && nw > 0)
		{
			word[nw] = '\0';
			if (in_list(word, sensitive_words))
				return true;
			if (strcmp(word, "key") == 0 && in_list(prev, key_qualifiers))
				return true;
			memcpy(prev, word, nw + 1);
			nw = 0;
		}
		if (i < len && is_alpha(c) && nw < (int) sizeof(word) - 1)
			word[nw++] = ascii_lower(c);
	}
	joined[nj] = '\0';
	for (i = 0; sensitive_fragments[i]; i++)
		if (strstr(joined, sensitive_fragments[i]) != NULL)
			return true;
	return false;
}

/* ------------------------------------------------------------------------
 * Value scanning
 * ------------------------------------------------------------------------
 */

/* characters of an opaque token (base64, base64url, hex, key alphabets) */
static inline bool
is_token_char(unsigned char c)
{
	return is_alnum(c) || c == '-' || c == '_' || c == '.' || c == '/' ||
		c == '+' || c == '=' || c == '~';
}

static inline bool
is_b64url(unsigned char c)
{
	return is_alnum(c) || c == '-' || c == '_';
}

/* how many bytes from s[from] satisfy ok */
static int
span(const char *s, int from, int len, bool (*ok) (unsigned char))
{
	int			i = from;

	while (i < len && ok((unsigned char) s[i]))
		i++;
	return i - from;
}

/* Character predicates given to span(), one per character class below. */
static bool
ok_alnum(unsigned char c)
{
	return is_alnum(c);
}

static bool
ok_alnum_us(unsigned char c)
{
	return is_alnum(c) || c == '_';
}

static bool
ok_alnum_dash(unsigned char c)
{
	return is_alnum(c) || c == '-';
}

static bool
ok_b64url(unsigned char c)
{
	return is_b64url(c);
}

static bool
ok_token(unsigned char c)
{
	return is_token_char(c);
}

static bool
ok_upper_digit(unsigned char c)
{
	return is_upper(c) || is_digit(c);
}

/* Whether s[i..len) begins with the bytes of p. */
static bool
starts_with(const char *s, int i, int len, const char *p)
{
	int			n = strlen(p);

	return len - i >= n && memcmp(s + i, p, n) == 0;
}

/* Whether s[i..len) begins with p, ignoring ASCII case. */
static bool
starts_with_ci(const char *s, int i, int len, const char *p)
{
	int			n = strlen(p);

	return len - i >= n && pg_strncasecmp(s + i, p, n) == 0;
}

/*
 * Shannon entropy, in bits per character, of s[0..n).
 */
static double
entropy(const char *s, int n)
{
	int			counts[256] = {0};
	double		h = 0.0;
	int			i;

	for (i = 0; i < n; i++)
		counts[(unsigned char) s[i]]++;
	for (i = 0; i < 256; i++)
	{
		if (counts[i])
		{
			double		p = (double) counts[i] / n;

			h -= p * log2(p);
		}
	}
	return h;
}

/*
 * A long opaque token: ENTROPY_MIN_LENGTH characters or more, letters and
 * digits both present, not only hexadecimal digits and dashes (hashes and
 * UUIDs are identifiers, not secrets), and at least ENTROPY_MIN_BITS bits of
 * Shannon entropy per character.
 */
static bool
opaque_token(const char *s, int n)
{
	bool		letter = false,
				digit = false,
				nonhex = false;
	int			i;

	if (n < ENTROPY_MIN_LENGTH)
		return false;
	for (i = 0; i < n; i++)
	{
		unsigned char c = (unsigned char) s[i];

		if (is_digit(c))
			digit = true;
		else if (is_alpha(c))
		{
			letter = true;
			if (!((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
				nonhex = true;
		}
		else if (c != '-')
			nonhex = true;
	}
	if (!letter || !digit || !nonhex)
		return false;
	return entropy(s, n) >= ENTROPY_MIN_BITS;
}

/*
 * Length of a well-known credential starting at s[i] (at a word boundary),
 * or 0.
 */
static int
known_secret(const char *s, int i, int len)
{
	int			n;

	/* every rule below starts with one of these letters */
	if (!strchr("sgxAe", s[i]))
		return 0;

	if (starts_with(s, i, len, "sk-"))
	{
		n = span(s, i + 3, len, ok_b64url);
		if (n >= 20)
			return 3 + n;
	}
	if (starts_with(s, i, len, "ghp_") || starts_with(s, i, len, "gho_") ||
		starts_with(s, i, len, "ghu_") || starts_with(s, i, len, "ghs_") ||
		starts_with(s, i, len, "ghr_"))
	{
		n = span(s, i + 4, len, ok_alnum);
		if (n >= 20)
			return 4 + n;
	}
	if (starts_with(s, i, len, "github_pat_"))
	{
		n = span(s, i + 11, len, ok_alnum_us);
		if (n >= 20)
			return 11 + n;
	}
	if (starts_with(s, i, len, "glpat-"))
	{
		n = span(s, i + 6, len, ok_b64url);
		if (n >= 20)
			return 6 + n;
	}
	if (len - i >= 5 && s[i] == 'x' && s[i + 1] == 'o' && s[i + 2] == 'x' &&
		strchr("abprs", s[i + 3]) != NULL && s[i + 4] == '-')
	{
		n = span(s, i + 5, len, ok_alnum_dash);
		if (n >= 10)
			return 5 + n;
	}
	if (starts_with(s, i, len, "AKIA") || starts_with(s, i, len, "ASIA"))
	{
		n = span(s, i + 4, len, ok_upper_digit);
		if (n == 16 && (i + 20 >= len || !is_alnum((unsigned char) s[i + 20])))
			return 20;
	}
	if (starts_with(s, i, len, "AIza"))
	{
		n = span(s, i + 4, len, ok_b64url);
		if (n >= 30)
			return 4 + n;
	}
	if (starts_with(s, i, len, "eyJ"))
	{
		/* JWT: header.payload.signature, base64url */
		int			a = span(s, i, len, ok_b64url);

		if (a >= 10 && i + a < len && s[i + a] == '.')
		{
			int			b = span(s, i + a + 1, len, ok_b64url);

			if (b >= 2 && i + a + 1 + b < len && s[i + a + 1 + b] == '.')
			{
				int			c = span(s, i + a + b + 2, len, ok_b64url);

				return a + b + c + 2;
			}
		}
	}
	return 0;
}

/*
 * A PEM private key block starting at s[i]: returns its length (up to the
 * end of its END line, or the end of the string), or 0.
 */
static int
pem_block(const char *s, int i, int len)
{
	const char *start = s + i;
	const char *hdr_end;
	const char *end;
	int			rest = len - i;

	if (!starts_with(s, i, len, "-----BEGIN "))
		return 0;
	hdr_end = memchr(start + 11, '-', Min(rest - 11, 80));
	if (hdr_end == NULL)
		return 0;
	/* the label must say PRIVATE KEY */
	{
		int			hl = hdr_end - (start + 11);
		char		label[81];

		memcpy(label, start + 11, hl);
		label[hl] = '\0';
		if (strstr(label, "PRIVATE KEY") == NULL)
			return 0;
	}
	end = start + 11;
	while ((end = memchr(end, '-', len - (end - s))) != NULL)
	{
		if (len - (end - s) >= 8 && memcmp(end, "-----END", 8) == 0)
		{
			const char *close = end + 8;

			/* the closing "-----" of the END line */
			while (close < s + len && *close != '\n')
			{
				if (s + len - close >= 5 && memcmp(close, "-----", 5) == 0)
					return (close + 5) - start;
				close++;
			}
			return close - start;
		}
		end++;
	}
	return rest;
}

typedef struct Scan
{
	const char *s;
	int			len;
	int			copied;			/* s[0..copied) is in out */
	StringInfoData out;
	bool		changed;
} Scan;

/* replace s[from..to) by the marker */
static void
scan_replace(Scan *sc, int from, int to)
{
	if (!sc->changed)
	{
		initStringInfo(&sc->out);
		sc->changed = true;
	}
	appendBinaryStringInfo(&sc->out, sc->s + sc->copied, from - sc->copied);
	appendStringInfoString(&sc->out, PG_AGENTS_REDACTED);
	sc->copied = to;
}

/*
 * After a name=value separator at s[i]: the length of the value to hide.
 * A quoted value runs to its closing quote; "Bearer x", "Basic x", "Token x"
 * keep the scheme word; otherwise the value runs to the next space, quote
 * or separator.
 */
static int
pair_value(const char *s, int i, int len, int *skip)
{
	int			j = i;

	*skip = 0;
	if (j < len && (s[j] == '"' || s[j] == '\''))
	{
		char		q = s[j];
		int			k = j + 1;

		while (k < len && s[k] != q && s[k] != '\n')
			k++;
		*skip = 1;
		return k - (j + 1);
	}
	if (starts_with_ci(s, j, len, "bearer ") || starts_with_ci(s, j, len, "basic ") ||
		starts_with_ci(s, j, len, "token ") || starts_with_ci(s, j, len, "digest "))
	{
		while (j < len && s[j] != ' ')
			j++;
		while (j < len && s[j] == ' ')
			j++;
		*skip = j - i;
	}
	{
		int			k = j;

		while (k < len && !strchr(" \t\r\n\"'&,;}]),<>", s[k]))
			k++;
		return k - j;
	}
}

/*
 * The rules of RedactText.  Each looks at the token that starts at
 * s[i] and, when it applies, redacts what it matched and returns where the
 * scan goes on; -1 when it does not apply.
 */

/* after "://": scheme://user:password@host hides the password */
static int
rule_url_password(Scan *sc, int i)
{
	const char *s = sc->s;
	int			len = sc->len;
	int			j = i + 3;
	int			colon = -1;

	while (j < len && !strchr("/@ \t\r\n\"'?#", s[j]))
	{
		if (s[j] == ':' && colon < 0)
			colon = j;
		j++;
	}
	if (j < len && s[j] == '@' && colon >= 0 && j > colon + 1)
	{
		scan_replace(sc, colon + 1, j);
		return j;
	}
	return i + 3;
}

/* a PEM block (-----BEGIN ... PRIVATE KEY----- ...) */
static int
rule_pem(Scan *sc, int i)
{
	int			n = pem_block(sc->s, i, sc->len);

	if (n <= 0)
		return -1;
	scan_replace(sc, i, i + n);
	return i + n;
}

/* Bearer <token>, Basic <base64>; a plain lowercase word is prose */
static int
rule_auth_scheme(Scan *sc, int i)
{
	const char *s = sc->s;
	int			len = sc->len;
	unsigned char c = (unsigned char) s[i];
	bool		basic;
	int			j;
	int			t;

	if (!((c == 'b' || c == 'B') &&
		  (starts_with_ci(s, i, len, "bearer ") || starts_with_ci(s, i, len, "basic "))))
		return -1;
	basic = (ascii_lower(c) == 'b' && ascii_lower(s[i + 1]) == 'a');
	j = i + (basic ? 6 : 7);
	while (j < len && s[j] == ' ')
		j++;
	t = span(s, j, len, ok_token);
	if (t < 8)
		return -1;
	for (int k = j; k < j + t; k++)
		if (!(s[k] >= 'a' && s[k] <= 'z'))
		{
			scan_replace(sc, j, j + t);
			return j + t;
		}
	return -1;
}

/* a credential of a known shape (known_secret) */
static int
rule_known_secret(Scan *sc, int i)
{
	int			n = known_secret(sc->s, i, sc->len);

	if (n <= 0)
		return -1;
	scan_replace(sc, i, i + n);
	return i + n;
}

/* name=value, name: value, "name": "value" with a sensitive name */
static int
rule_name_value(Scan *sc, int i)
{
	const char *s = sc->s;
	int			len = sc->len;
	int			w;
	int			j;
	int			skip;
	int			v;

	if (!is_alpha((unsigned char) s[i]))
		return -1;
	w = span(s, i, len, ok_b64url);
	j = i + w;
	if (j < len && (s[j] == '"' || s[j] == '\''))
		j++;
	while (j < len && s[j] == ' ')
		j++;
	/* the separator first: the name test is the costly part */
	if (!(j < len && (s[j] == '=' || s[j] == ':') &&
		  !(s[j] == ':' && starts_with(s, j, len, "://")) &&
		  RedactSensitiveName(s + i, w)))
		return -1;
	j++;
	while (j < len && s[j] == ' ')
		j++;
	v = pair_value(s, j, len, &skip);
	if (v <= 0)
		return -1;
	scan_replace(sc, j + skip, j + skip + v);
	return j + skip + v;
}

/*
 * A long opaque high-entropy token at the start of a token; any other
 * token is skipped whole, since no rule starts inside it.
 */
static int
rule_opaque_token(Scan *sc, int i)
{
	const char *s = sc->s;
	int			n;

	if (i > 0 && is_token_char((unsigned char) s[i - 1]))
		return -1;
	n = span(s, i, sc->len, ok_token);
	if (opaque_token(s + i, n))
	{
		scan_replace(sc, i, i + n);
		return i + n;
	}
	return n > 0 ? i + n : -1;
}

/*
 * Redacts credential-shaped values inside s[0..len).  Returns NULL when
 * nothing was found, else a palloc'd string (its length in *outlen).  The
 * rules are tried in order at the start of each token.
 */
char *
RedactText(const char *s, int len, int *outlen)
{
	Scan		sc;
	int			i = 0;

	sc.s = s;
	sc.len = len;
	sc.copied = 0;
	sc.changed = false;

	while (i < len)
	{
		unsigned char c = (unsigned char) s[i];
		int			next;

		if (!is_token_char(c) && c != ':')
			next = i + 1;
		else if (c == ':')
			next = starts_with(s, i, len, "://") ? rule_url_password(&sc, i) : i + 1;
		else if (c == '-' && (next = rule_pem(&sc, i)) >= 0)
			;
		else if (i > 0 && is_alnum((unsigned char) s[i - 1]))
			next = i + 1;		/* not at the start of a word */
		else if ((next = rule_auth_scheme(&sc, i)) < 0 &&
				 (next = rule_known_secret(&sc, i)) < 0 &&
				 (next = rule_name_value(&sc, i)) < 0 &&
				 (next = rule_opaque_token(&sc, i)) < 0)
			next = i + 1;
		i = next;
	}

	if (!sc.changed)
		return NULL;
	appendBinaryStringInfo(&sc.out, s + sc.copied, len - sc.copied);
	*outlen = sc.out.len;
	return sc.out.data;
}

/* ------------------------------------------------------------------------
 * jsonb
 * ------------------------------------------------------------------------
 */

/* a redactor with the payload budget of one document */
void
RedactInit(PgAgentsRedactor *r)
{
	r->budget = REDACT_MAX_PAYLOAD;
}

/* pushes s[0..len) as a jsonb string with token tok */
static void
push_cstring(JsonbParseState **ps, JsonbIteratorToken tok, const char *s, int len)
{
	JsonbValue	v;

	v.type = jbvString;
	v.val.string.val = (char *) s;
	v.val.string.len = len;
	(void) pushJsonbValue(ps, tok, &v);
}

/* pushes the marker string (a redaction marker) with token tok */
static void
PgAgentsRedactPushMarker(JsonbParseState **ps, JsonbIteratorToken tok, const char *marker)
{
	push_cstring(ps, tok, marker, strlen(marker));
}

/*
 * Pushes a string value: redacted, then cut to REDACT_MAX_STRING bytes.
 * Only the first REDACT_MAX_STRING + REDACT_SCAN_MARGIN bytes are scanned:
 * the rest is cut anyway, and a credential straddling the cut is inside
 * the scanned window.
 */
void
RedactPushString(PgAgentsRedactor *r, JsonbParseState **ps,
						 JsonbIteratorToken tok, const char *s, int len,
						 bool sensitive)
{
	int			scan_len;
	char	   *red;
	int			red_len;

	if (sensitive)
	{
		PgAgentsRedactPushMarker(ps, tok, PG_AGENTS_REDACTED);
		return;
	}
	if (r->budget <= 0)
	{
		PgAgentsRedactPushMarker(ps, tok, PG_AGENTS_TRUNCATED);
		return;
	}
	scan_len = Min(len, REDACT_MAX_STRING + REDACT_SCAN_MARGIN);
	red = RedactText(s, scan_len, &red_len);
	if (red == NULL)
	{
		red = (char *) s;
		red_len = scan_len;
	}
	if (len > REDACT_MAX_STRING || red_len > REDACT_MAX_STRING)
	{
		StringInfoData buf;
		int			keep = Min(red_len, REDACT_MAX_STRING);

		keep = pg_mbcliplen(red, red_len, keep);
		initStringInfo(&buf);
		appendBinaryStringInfo(&buf, red, keep);
		appendStringInfo(&buf, "...[TRUNCATED %d bytes]", len);
		r->budget -= buf.len;
		push_cstring(ps, tok, buf.data, buf.len);
		return;
	}
	r->budget -= red_len;
	push_cstring(ps, tok, red, red_len);
}

/*
 * Pushes a jsonb value (scalar or container, as found by an iterator with
 * skipNested) with the redaction rules.  depth is the nesting level the
 * value would have in the stored document (the root is 1).
 */
static JsonbValue *
PgAgentsRedactPushValue(PgAgentsRedactor *r, JsonbParseState **ps,
						JsonbIteratorToken tok, JsonbValue *v, int depth,
						bool sensitive)
{
	JsonbValue *res = NULL;
	JsonbIterator *it;
	JsonbValue	item;
	JsonbIteratorToken t;
	int			count = 0;
	int			skipped = 0;
	bool		is_object;

	switch (v->type)
	{
		case jbvString:
			RedactPushString(r, ps, tok, v->val.string.val,
									 v->val.string.len, sensitive);
			return NULL;
		case jbvNull:
		case jbvBool:
		case jbvNumeric:
			(void) pushJsonbValue(ps, tok, v);
			return NULL;
		case jbvBinary:
			break;
		default:
			elog(ERROR, "unexpected jsonb value type %d", (int) v->type);
	}

	if (sensitive)
	{
		PgAgentsRedactPushMarker(ps, tok, PG_AGENTS_REDACTED);
		return NULL;
	}
	if (depth > REDACT_MAX_DEPTH)
	{
		PgAgentsRedactPushMarker(ps, tok, "[TRUNCATED: nested too deep]");
		return NULL;
	}
	if (r->budget <= 0)
	{
		PgAgentsRedactPushMarker(ps, tok, PG_AGENTS_TRUNCATED);
		return NULL;
	}

	it = JsonbIteratorInit(v->val.binary.data);
	t = JsonbIteratorNext(&it, &item, true);
	is_object = (t == WJB_BEGIN_OBJECT);
	if (t == WJB_BEGIN_ARRAY && item.val.array.rawScalar)
	{
		/* a scalar wrapped as a container: push the scalar itself */
		t = JsonbIteratorNext(&it, &item, true);
		Assert(t == WJB_ELEM);
		PgAgentsRedactPushValue(r, ps, tok, &item, depth, sensitive);
		while (JsonbIteratorNext(&it, &item, true) != WJB_DONE)
			;
		return NULL;
	}
	(void) pushJsonbValue(ps, t, NULL);

	while ((t = JsonbIteratorNext(&it, &item, true)) != WJB_DONE)
	{
		if (t == WJB_KEY)
		{
			JsonbValue	key = item;
			JsonbValue	val;

			t = JsonbIteratorNext(&it, &val, true);
			Assert(t == WJB_VALUE);
			if (count >= REDACT_MAX_ITEMS)
			{
				skipped++;
				continue;
			}
			count++;
			r->budget -= key.val.string.len;
			(void) pushJsonbValue(ps, WJB_KEY, &key);
			PgAgentsRedactPushValue(r, ps, WJB_VALUE, &val, depth + 1,
									RedactSensitiveName(key.val.string.val,
														  key.val.string.len));
		}
		else if (t == WJB_ELEM)
		{
			if (count >= REDACT_MAX_ITEMS)
			{
				skipped++;
				continue;
			}
			count++;
			PgAgentsRedactPushValue(r, ps, WJB_ELEM, &item, depth + 1, false);
		}
		else if (t == WJB_END_OBJECT || t == WJB_END_ARRAY)
		{
			if (skipped > 0)
			{
				char		msg[64];

				snprintf(msg, sizeof(msg), "[TRUNCATED: %d more %s]", skipped,
						 is_object ? "keys" : "elements");
				if (is_object)
					PgAgentsRedactPushMarker(ps, WJB_KEY, "[TRUNCATED]");
				PgAgentsRedactPushMarker(ps, is_object ? WJB_VALUE : WJB_ELEM, pstrdup(msg));
			}
			res = pushJsonbValue(ps, t, NULL);
		}
	}
	return res;
}

/*
 * Pushes a whole jsonb document as a value (tok WJB_VALUE or WJB_ELEM).
 * Returns the finished root when the document is the root of *ps.
 */
JsonbValue *
RedactPushJsonb(PgAgentsRedactor *r, JsonbParseState **ps,
						JsonbIteratorToken tok, Jsonb *jb, int depth,
						bool sensitive)
{
	JsonbValue	v;

	v.type = jbvBinary;
	v.val.binary.data = &jb->root;
	v.val.binary.len = VARSIZE(jb) - VARHDRSZ;
	return PgAgentsRedactPushValue(r, ps, tok, &v, depth, sensitive);
}

/*
 * The redacted copy of a jsonb document.
 */
Jsonb *
RedactJsonb(Jsonb *in)
{
	PgAgentsRedactor r;
	JsonbParseState *ps = NULL;
	JsonbValue *res;

	if (in == NULL)
		return NULL;
	RedactInit(&r);
	if (JB_ROOT_IS_SCALAR(in))
	{
		JsonbValue	arr;

		arr.type = jbvArray;
		arr.val.array.rawScalar = true;
		arr.val.array.nElems = 1;
		arr.val.array.elems = NULL;
		(void) pushJsonbValue(&ps, WJB_BEGIN_ARRAY, &arr);
		(void) RedactPushJsonb(&r, &ps, WJB_ELEM, in, 1, false);
		res = pushJsonbValue(&ps, WJB_END_ARRAY, NULL);
	}
	else
		res = RedactPushJsonb(&r, &ps, WJB_VALUE, in, 1, false);
	if (res == NULL)
		elog(ERROR, "could not redact jsonb value");
	return JsonbValueToJsonb(res);
}

/* agent.redact(jsonb): the document with its credential-shaped values redacted */
Datum
pg_agents_redact(PG_FUNCTION_ARGS)
{
	PG_RETURN_JSONB_P(RedactJsonb(PG_GETARG_JSONB_P(0)));
}
