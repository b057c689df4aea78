/* the harness's side of test/fuzz/shim/pg_shim.c */
#ifndef FUZZ_PG_SHIM_H
#define FUZZ_PG_SHIM_H
#include <setjmp.h>
/* where ereport(ERROR) jumps to (NULL: abort) */
extern jmp_buf *fuzz_pg_jmp;
#endif
