#!/usr/bin/env bash
# OAuth 2.1 of MCP servers through SQL, against a local authorization server
# and the MCP server it protects (test/fixtures/oauth_server.py):
# agent.mcp_set_oauth (admin), agent.mcp_authorize -> the URL a person opens
# (the test plays the browser), agent.mcp_authorization_callback from the
# application's redirect handler, then calls with the token; refresh before
# expiry (agent.mcp_oauth_refresh_due), a lapsed authorization next to a
# working server; client credentials for a machine-to-machine server.
# Attacks: another workspace, a role with no grants, the application reading
# the secrets, a replayed or forged state, a wrong iss, a personal server
# authorized by someone else; no token, secret or verifier in any error,
# status, step, audit row or the server log.
. "$(dirname "$0")/../fixtures/mcp_tap.sh"
start_py_server 0
rm -f "$MCP_TMP/oa.port"
python3 "$MCP_SRC/test/fixtures/oauth_server.py" --port-file "$MCP_TMP/oa.port" >"$MCP_TMP/oa.log" 2>&1 &
_mcp_pids+=("$!")
for _ in $(seq 1 100); do [ -s "$MCP_TMP/oa.port" ] && break; sleep 0.05; done
OA="http://127.0.0.1:$(cat "$MCP_TMP/oa.port")"
WA=mcp_ws_705a
WB=mcp_ws_705b
CB="https://app.example.com/oauth/callback"
# follows the authorization URL like a browser whose user consents: prints the redirect's query
consent() { curl -s -o /dev/null -w '%{redirect_url}' "$1" | sed 's/^[^?]*?//'; }
qp() { python3 -c 'import sys,urllib.parse; print(dict(urllib.parse.parse_qsl(sys.argv[1])).get(sys.argv[2], ""))' "$1" "$2"; }
as_app() { q -c "SET ROLE mcp705_app" -c "SET pg_agents.workspace = '$1'" "${@:2}"; }

q -c "DELETE FROM agent.mcp_servers WHERE workspace_id IN ('$WA', '$WB')" >/dev/null
q -c "DROP ROLE IF EXISTS mcp705_nobody" -c "DROP ROLE IF EXISTS mcp705_app" >/dev/null
q -c "CREATE ROLE mcp705_nobody LOGIN" -c "CREATE ROLE mcp705_app LOGIN IN ROLE agents_app" >/dev/null

# a protected server: refreshing it without a token fails clearly
SID=$(q -c "SELECT agent.mcp_add_server('secure', '$OA/mcp', workspace_id => '$WA')")
q -c "SELECT agent.mcp_add_server('plain', '$PY/mcp', workspace_id => '$WA')" >/dev/null
like "$(q -c "SELECT last_error FROM agent.mcp_servers WHERE id = $SID")" "refused the credentials \(HTTP 401\)" \
     "without authorization the server's 401 is its last_error"

# configuration is the admin's
out=$(as_app "$WA" -c "SELECT agent.mcp_set_oauth($SID, '{}')")
like "$out" "permission denied" "the application cannot configure OAuth (client secrets)"
q -c "SELECT agent.mcp_set_oauth($SID, '{}')" >/dev/null
out=$(q -c "SELECT agent.mcp_set_oauth($SID, '{\"clientid\": \"x\"}')")
like "$out" 'unknown OAuth setting "clientid"' "an unknown setting is refused"
out=$(as_app "$WA" -c "SELECT agent.mcp_authorize($SID, 'alice', 'javascript:alert(1)')")
like "$out" "redirect URI is not allowed" "a redirect URI that is neither https nor loopback is refused"

# attacks before the flow
out=$(q -c "SET ROLE mcp705_nobody" -c "SET pg_agents.workspace = '$WA'" -c "SELECT agent.mcp_authorize($SID, 'alice', '$CB')")
like "$out" "permission denied" "a role with no grants cannot start an authorization"
out=$(as_app "$WB" -c "SELECT agent.mcp_authorize($SID, 'mallory', '$CB')")
like "$out" "MCP server $SID does not exist" "another workspace's application session cannot name the server"

# a workspace server's token serves every agent: only a user with full on all of them consents (issue 36)
AG=$(q -c "INSERT INTO agent.agents (workspace_id, owner_id, name) VALUES ('$WA', 'alice', 'oauth705') RETURNING id")
out=$(as_app "$WA" -c "SELECT agent.mcp_authorize($SID, 'mallory', '$CB')")
like "$out" 'user "mallory" may not authorize the workspace MCP server "secure"' "a user without full on the workspace's agents cannot authorize its server"
q -c "SELECT agent.share($AG, 'user:mallory', 'edit', 'alice')" >/dev/null
out=$(as_app "$WA" -c "SELECT agent.mcp_authorize($SID, 'mallory', '$CB')")
like "$out" 'may not authorize the workspace MCP server' "nor can one with edit"

# the flow: URL, consent, callback
url=$(as_app "$WA" -c "SELECT agent.mcp_authorize($SID, 'alice', '$CB')")
like "$url" "^$OA/as/authorize\?response_type=code&client_id=client-" "mcp_authorize returns the authorization endpoint's URL (client registered dynamically)"
like "$url" "code_challenge=[A-Za-z0-9_-]{43}&code_challenge_method=S256" "PKCE S256 challenge in the URL"
like "$url" "resource=http%3A%2F%2F127.0.0.1%3A[0-9]+%2Fmcp" "resource parameter (RFC 8707) in the URL"
like "$url" "scope=tools" "scope from the WWW-Authenticate challenge"
is "$(as_app "$WA" -c "SELECT status FROM agent.mcp_oauth_status WHERE server_id = $SID")" pending "status pending"
redirect=$(consent "$url")
state=$(qp "$redirect" state); code=$(qp "$redirect" code); iss=$(qp "$redirect" iss)
out=$(as_app "$WA" -c "SELECT agent.mcp_authorization_callback('$state', '$code', '$iss' || '/', 'alice')" 2>&1)
like "$out" "WARNING:.*failed" "a wrong iss (RFC 9207, compared exactly) fails the callback"
like "$out" "another issuer" "with the reason"
out=$(as_app "$WA" -c "SELECT agent.mcp_authorization_callback('$state', '$code', '$iss', 'alice')")
like "$out" "unknown or expired authorization state" "the state is single use: spent by the failed attempt"

url=$(as_app "$WA" -c "SELECT agent.mcp_authorize($SID, 'alice', '$CB')")
redirect=$(consent "$url")
state=$(qp "$redirect" state); code=$(qp "$redirect" code); iss=$(qp "$redirect" iss)
out=$(as_app "$WB" -c "SELECT agent.mcp_authorization_callback('$state', '$code', '$iss', 'alice')")
like "$out" "unknown or expired authorization state" "another workspace cannot complete the authorization"
out=$(as_app "$WA" -c "SELECT agent.mcp_authorization_callback('$state', '$code', '$iss', 'mallory')")
like "$out" 'user "mallory" did not start this authorization' "another user cannot complete alice's authorization (login CSRF, issue 36)"
out=$(as_app "$WA" -c "SELECT agent.mcp_authorization_callback('$state', '$code', '$iss')")
like "$out" "function agent.mcp_authorization_callback\(unknown, unknown, unknown\) does not exist" "the old form without by_user is gone"
out=$(as_app "$WA" -c "SELECT agent.mcp_authorization_callback('forged-$state', '$code', '$iss', 'alice')")
like "$out" "unknown or expired authorization state" "a forged state is refused"
out=$(as_app "$WA" -c "SELECT agent.mcp_authorization_callback('$state', '$code', '$iss', 'alice')")
is "$out" t "the callback with the right state, code and iss authorizes"
is "$(as_app "$WA" -c "SELECT status || ':' || authorized_by || ':' || (expires_at > now()) FROM agent.mcp_oauth_status WHERE server_id = $SID")" \
   "authorized:alice:true" "status authorized by alice, with an expiry"
is "$(q -c "SELECT connected || ':' || tool_count FROM agent.mcp_status WHERE server_id = $SID")" "true:1" \
   "the server's tools were refreshed with the token"
out=$(q -c "SELECT agent.mcp_call($SID, 'whoami', '{}')->'content'->0->>'text'")
is "$out" "sub:user-consented" "calls carry the user's token"
out=$(as_app "$WA" -c "SELECT agent.mcp_authorization_callback('$state', '$code', '$iss', 'alice')")
like "$out" "unknown or expired authorization state" "a replayed callback is refused"

# secrets stay with superusers
out=$(as_app "$WA" -c "SELECT count(*) FROM agent.mcp_oauth")
like "$out" "permission denied" "the application cannot read agent.mcp_oauth"
out=$(as_app "$WA" -c "SELECT * FROM agent.mcp_oauth_status")
unlike "$out" "at-|rt-|secret-" "agent.mcp_oauth_status holds no token or secret"

# refresh before expiry, then a lapse that leaves the other server alone
old=$(q -c "SELECT state->>'access_token' FROM agent.mcp_oauth WHERE server_id = $SID")
q -c "UPDATE agent.mcp_oauth SET expires_at = now() + interval '1 minute' WHERE server_id = $SID" >/dev/null
is "$(q -c "SELECT agent.mcp_oauth_refresh_due()")" 1 "a token expiring within 5 minutes is refreshed"
new=$(q -c "SELECT state->>'access_token' FROM agent.mcp_oauth WHERE server_id = $SID")
[ -n "$new" ] && [ "$new" != "$old" ]; ok $? "a new access token"
out=$(q -c "SELECT agent.mcp_call($SID, 'whoami', '{}')->'content'->0->>'text'")
is "$out" "sub:user-consented" "calls go on with the refreshed token"
curl -s -X POST "$OA/_control/revoke-refresh" >/dev/null
curl -s -X POST "$OA/_control/expire" >/dev/null
q -c "UPDATE agent.mcp_oauth SET expires_at = now() - interval '1 second' WHERE server_id = $SID" >/dev/null
is "$(q -c "SELECT agent.mcp_oauth_refresh_due()")" 0 "an expired token whose refresh token was revoked is not renewed"
is "$(as_app "$WA" -c "SELECT status FROM agent.mcp_oauth_status WHERE server_id = $SID")" lapsed "the authorization lapsed"
like "$(q -c "SELECT last_error FROM agent.mcp_status WHERE server_id = $SID")" "^authorization lapsed: .*refresh token unknown or revoked.*mcp_authorize" \
     "agent.mcp_status shows the lapse and what to do"
out=$(q -c "SELECT agent.mcp_call($SID, 'whoami', '{}')")
like "$out" "refused the credentials \(HTTP 401\)" "the lapsed server's tool is a clear error"
out=$(q -c "SELECT agent.mcp_call('plain', 'echo', '{\"message\": \"still\"}', '$WA')->'content'->0->>'text'")
is "$out" "echo: still" "the other server of the workspace still works"

# machine to machine: client credentials
MID=$(q -c "SELECT agent.mcp_add_server('machine', '$OA/mcp', workspace_id => '$WA')")
q -c "SELECT agent.mcp_set_oauth($MID, '{\"grant\": \"client_credentials\", \"client_id\": \"m2m\", \"client_secret\": \"m2m-secret-0123456789\"}')" >/dev/null
out=$(as_app "$WA" -c "SELECT coalesce(agent.mcp_authorize($MID, 'ops', NULL), 'no url')")
is "$out" "no url" "client credentials: authorized at once, no URL"
out=$(q -c "SELECT agent.mcp_call($MID, 'whoami', '{}')->'content'->0->>'text'")
is "$out" "sub:machine-m2m" "calls carry the machine's token"

# the resource now names another authorization server: the machine's secret is not sent there
curl -s -X POST "$OA/_control/as?to=as2" >/dev/null
out=$(as_app "$WA" -c "SELECT agent.mcp_authorize($MID, 'ops', NULL)")
like "$out" "names another authorization server" "configured client credentials are not offered to a new authorization server"
is "$(curl -s "$OA/_control/log" | pj 'sum(1 for e in d if e["path"].startswith("/as2/"))')" 0 "nothing was sent to it"
curl -s -X POST "$OA/_control/as?to=as" >/dev/null

# a personal server is authorized by its owner only
UID_BOB=$(q -c "SELECT agent.mcp_add_server('mine', '$OA/mcp', scope => 'user', workspace_id => '$WA', owner_id => 'bob')")
q -c "SELECT agent.mcp_set_oauth($UID_BOB)" >/dev/null
out=$(as_app "$WA" -c "SELECT agent.mcp_authorize($UID_BOB, 'alice', '$CB')")
like "$out" "may not authorize the personal MCP server" "alice cannot authorize bob's personal server"
like "$(as_app "$WA" -c "SELECT agent.mcp_authorize($UID_BOB, 'bob', '$CB')")" "^$OA/as/authorize" "bob can"

# no secret anywhere it could be read
secrets=$(curl -s "$OA/_control/tokens" | pj '"|".join(d["access"] + d["refresh"] + d["secrets"])')
[ -n "$secrets" ]; ok $? "the authorization server issued tokens and secrets to look for"
leak=$(q -c "SELECT string_agg(x, ' ') FROM (
             SELECT m.last_error AS x FROM agent.mcp_servers m WHERE m.workspace_id = '$WA'
             UNION ALL SELECT o.last_error FROM agent.mcp_oauth o WHERE o.workspace_id = '$WA'
             UNION ALL SELECT s::text FROM agent.run_steps s
             UNION ALL SELECT a::text FROM agent.audit_log a) t" | grep -oE "$secrets" | head -1)
is "$leak" "" "no token or secret in errors, steps or audit rows"
leak=$(grep -oE "$secrets" "$PG_AGENTS_DIR/server.log" | head -1)
is "$leak" "" "no token or secret in the server log"

q -c "DELETE FROM agent.mcp_servers WHERE workspace_id IN ('$WA', '$WB')" -c "DROP ROLE mcp705_nobody" -c "DROP ROLE mcp705_app" >/dev/null
done_testing
