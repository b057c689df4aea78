/* included by the wrappers of src/mcp/mcp_transport.c and src/mcp/mcp_oauth.c: the fake clock */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* as src/mcp/mcp_oauth.c: strcasestr */
#endif
#include <time.h>
#include "fake_curl.h"
#define clock_gettime fuzz_clock_gettime
#define nanosleep fuzz_nanosleep
