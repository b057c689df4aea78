/*
 * The functions behind the headers of test/fuzz/shim: palloc as malloc with every
 * block on a list released by fuzz_pg_reset() after each input, StringInfo,
 * the settings src/llm/llm.c reads (their defaults of src/util/guc.c), and no
 * secrets.  ereport(ERROR) lands in fuzz_pg_error, which jumps to the
 * harness's fuzz_pg_jmp when it is set and aborts otherwise.
 */
#include "postgres.h"

#include <setjmp.h>

#include "access/xact.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"

#include "llm/secrets.h"
#include "util/guc.h"

#include "pg_shim.h"

typedef struct Chunk
{
	struct Chunk *prev;
	struct Chunk *next;
	size_t		size;
	union
	{
		long double d;
		long long	l;
		void	   *p;
	}			align[];
} Chunk;

static Chunk *chunks;
jmp_buf    *fuzz_pg_jmp;

void *
palloc(Size size)
{
	Chunk	   *c = malloc(sizeof(Chunk) + (size ? size : 1));

	if (c == NULL)
		abort();
	c->prev = NULL;
	c->next = chunks;
	c->size = size;
	if (chunks)
		chunks->prev = c;
	chunks = c;
	return c->align;
}

void *
palloc0(Size size)
{
	void	   *p = palloc(size);

	memset(p, 0, size);
	return p;
}

static Chunk *
ChunkOf(void *p)
{
	return (Chunk *) ((char *) p - offsetof(Chunk, align));
}

void
pfree(void *p)
{
	Chunk	   *c = ChunkOf(p);

	if (c->prev)
		c->prev->next = c->next;
	else
		chunks = c->next;
	if (c->next)
		c->next->prev = c->prev;
	free(c);
}

void *
repalloc(void *p, Size size)
{
	Chunk	   *c = ChunkOf(p);
	void	   *q = palloc(size);

	memcpy(q, p, Min(c->size, size));
	pfree(p);
	return q;
}

void
fuzz_pg_reset(void)
{
	while (chunks)
	{
		Chunk	   *n = chunks->next;

		free(chunks);
		chunks = n;
	}
}

char *
pstrdup(const char *s)
{
	return pnstrdup(s, strlen(s));
}

char *
pnstrdup(const char *s, Size len)
{
	char	   *p;

	len = strnlen(s, len);
	p = palloc(len + 1);
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

char *
psprintf(const char *fmt,...)
{
	va_list		ap;
	int			n;
	char	   *p;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	p = palloc(n + 1);
	va_start(ap, fmt);
	vsnprintf(p, n + 1, fmt, ap);
	va_end(ap);
	return p;
}

int
pg_strcasecmp(const char *a, const char *b)
{
	return strcasecmp(a, b);
}

int
pg_strncasecmp(const char *a, const char *b, size_t n)
{
	return strncasecmp(a, b, n);
}

void
fuzz_pg_error(const char *file, int line)
{
	if (fuzz_pg_jmp)
		longjmp(*fuzz_pg_jmp, 1);
	fprintf(stderr, "ereport(ERROR) at %s:%d outside the harness\n", file, line);
	abort();
}

bool
IsTransactionState(void)
{
	return false;
}

char *
text_to_cstring(const text *t)
{
	(void) t;
	abort();
}

text *
cstring_to_text(const char *s)
{
	(void) s;
	abort();
}

/* StringInfo */
StringInfo
makeStringInfo(void)
{
	StringInfo	s = palloc(sizeof(StringInfoData));

	initStringInfo(s);
	return s;
}

void
initStringInfo(StringInfo s)
{
	s->maxlen = 1024;
	s->data = palloc(s->maxlen);
	resetStringInfo(s);
}

void
resetStringInfo(StringInfo s)
{
	s->data[0] = '\0';
	s->len = 0;
	s->cursor = 0;
}

void
enlargeStringInfo(StringInfo s, int needed)
{
	int			want;

	if (needed < 0 || (size_t) needed >= 0x3fffffff - (size_t) s->len)
		fuzz_pg_error(__FILE__, __LINE__);	/* the server's "out of memory" */
	want = s->len + needed + 1;
	if (want <= s->maxlen)
		return;
	while (s->maxlen < want)
		s->maxlen = s->maxlen > 0x1fffffff ? 0x3fffffff : 2 * s->maxlen;
	s->data = repalloc(s->data, s->maxlen);
}

void
appendBinaryStringInfo(StringInfo s, const void *data, int len)
{
	enlargeStringInfo(s, len);
	memcpy(s->data + s->len, data, len);
	s->len += len;
	s->data[s->len] = '\0';
}

void
appendStringInfoString(StringInfo s, const char *str)
{
	appendBinaryStringInfo(s, str, strlen(str));
}

void
appendStringInfoChar(StringInfo s, char c)
{
	appendBinaryStringInfo(s, &c, 1);
}

void
appendStringInfo(StringInfo s, const char *fmt,...)
{
	va_list		ap;
	int			n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	enlargeStringInfo(s, n);
	va_start(ap, fmt);
	vsnprintf(s->data + s->len, n + 1, fmt, ap);
	va_end(ap);
	s->len += n;
}

/* no secrets outside the server */
char *
SecretsExpand(const char *value, char **error)
{
	(void) value;
	*error = "no secrets in the fuzz harness";
	return NULL;
}

bool
SecretsHasReference(const char *value)
{
	return value != NULL && strstr(value, "${secret:") != NULL;
}
