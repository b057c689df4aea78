/*
 * postgres.h for the fuzz harnesses (test/fuzz/shim): the little of the
 * server's API that src/llm/llm.c uses, without the server, so that its
 * parsers can be linked into a libFuzzer harness unchanged.  palloc and
 * friends are malloc'd and released between inputs (fuzz_pg_reset);
 * ereport/elog at ERROR or above jump back to the harness (fuzz_pg_error).
 */
#ifndef POSTGRES_H
#define POSTGRES_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* memmem, as the server's build on Linux */
#endif

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef int8_t int8;
typedef int16_t int16;
typedef int32_t int32;
typedef int64_t int64;
typedef uint8_t uint8;
typedef uint16_t uint16;
typedef uint32_t uint32;
typedef uint64_t uint64;
typedef size_t Size;
typedef uintptr_t Datum;
typedef char *Pointer;

#define PG_INT32_MAX	INT32_MAX
#define PG_INT32_MIN	INT32_MIN
#define PG_INT64_MAX	INT64_MAX
#define PG_INT64_MIN	INT64_MIN
#define INT64CONST(x)	INT64_C(x)
#define UINT64CONST(x)	UINT64_C(x)
#define INT64_FORMAT	"%" PRId64

#ifndef Min
#define Min(x, y)		((x) < (y) ? (x) : (y))
#define Max(x, y)		((x) > (y) ? (x) : (y))
#endif
#define lengthof(a)		(sizeof(a) / sizeof((a)[0]))
#define Assert(c)		do { if (!(c)) abort(); } while (0)
#define AssertArg(c)	Assert(c)
#define StaticAssertStmt(c, m)
#define pg_unreachable() abort()
#define unlikely(x)		__builtin_expect((x) != 0, 0)
#define likely(x)		__builtin_expect((x) != 0, 1)
#define pg_attribute_unused() __attribute__((unused))
#define pg_attribute_printf(f, a) __attribute__((format(printf, f, a)))
#define pg_attribute_noreturn() __attribute__((noreturn))

#define DEBUG5	10
#define DEBUG1	14
#define LOG		15
#define INFO	17
#define NOTICE	18
#define WARNING 19
#define ERROR	21
#define FATAL	22
#define PANIC	23

extern void *palloc(Size size);
extern void *palloc0(Size size);
extern void *repalloc(void *p, Size size);
extern void pfree(void *p);
extern char *pstrdup(const char *s);
extern char *pnstrdup(const char *s, Size len);
extern char *psprintf(const char *fmt,...) __attribute__((format(printf, 1, 2)));
extern int	pg_strcasecmp(const char *a, const char *b);
extern int	pg_strncasecmp(const char *a, const char *b, size_t n);

/* ereport/elog: below ERROR nothing, at ERROR and above back to the harness */
extern void fuzz_pg_error(const char *file, int line) __attribute__((noreturn));
#define ereport(elevel, ...) \
	do { if ((elevel) >= ERROR) fuzz_pg_error(__FILE__, __LINE__); } while (0)
#define elog(elevel, ...) ereport(elevel)

/* the harness: everything palloc'd since the last call released */
extern void fuzz_pg_reset(void);

#endif							/* POSTGRES_H */
