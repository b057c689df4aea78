/*
 * A scripted libcurl for the MCP and OAuth harnesses (fake_curl.c): every
 * transfer (curl_easy_perform, or a handle of a multi handle) is answered
 * with the next response of a script, its body handed to the write
 * callback in chunks whose lengths come from a seed; no network.  The
 * clock of src/mcp/mcp_transport.c is a fake one too (fuzz_clock_gettime advances 1 ms
 * a reading, fuzz_nanosleep and curl_multi_poll advance it by their time),
 * so that retry delays and deadlines cost nothing and every wait ends.
 *
 * Script: responses separated by a line "%%"; each is a status line (the
 * HTTP status in decimal, 0 for a connection that fails), header lines
 * ("Content-Type: text/event-stream", "Mcp-Session-Id: s1", ...), an empty
 * line and the body.  A transfer after the last response fails to connect.
 * FAKE_CURL_TRACE=1 in the environment prints each transfer (debugging seeds).
 */
#ifndef FUZZ_FAKE_CURL_H
#define FUZZ_FAKE_CURL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <curl/curl.h>

extern void fake_curl_script(const uint8_t *data, size_t len, unsigned seed);
/* the transfer of h, as curl_easy_perform (for an McpAsync's handle) */
extern CURLcode fake_curl_run(CURL *h);
/* how many transfers ran since fake_curl_script */
extern int	fake_curl_transfers(void);

extern int	fuzz_clock_gettime(clockid_t clk, struct timespec *ts);
extern int	fuzz_nanosleep(const struct timespec *req, struct timespec *rem);

#endif
