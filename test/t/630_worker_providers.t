#!/usr/bin/env bash
# Providers and secrets (issue 17, parts 1 and 2): one workspace whose
# triage agent runs on an Anthropic-format provider and whose writer runs on
# an OpenAI-format one, each with its own key; keys kept in the secrets store
# (encrypted, key file outside the database), rotated without a restart,
# never in a step, an audit row, an error, a dump, pg_stat_activity or the
# server log; the key of one provider never sent to the other; MCP header
# values and pg_agents.llm_api_key as ${secret:NAME}; bad input refused;
# who may read what.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start                                   # provider p630_oai (openai kind)
pf=$(mktemp -u /tmp/pg_agents_llm2.XXXXXX)  # provider p630_ant (anthropic kind)
python3 "$_wl_dir/llm_server.py" --port-file "$pf" >/dev/null 2>&1 & llm2_pid=$!
for _ in $(seq 1 100); do [ -s "$pf" ] && break; sleep 0.05; done
LLM2_PORT=$(cat "$pf"); rm -f "$pf"
LLM2_URL="http://127.0.0.1:$LLM2_PORT/v1"
tmp=$(mktemp -d /tmp/pg_agents_630.XXXXXX); chmod 755 "$tmp"
mcp_pid=
cleanup() {
    llm_stop; kill "$llm2_pid" 2>/dev/null; [ -n "$mcp_pid" ] && kill "$mcp_pid" 2>/dev/null
    wait 2>/dev/null
    local g
    for g in log_statement pg_agents.llm_api_key pg_agents.llm_url pg_agents.run_lease; do
        q "ALTER SYSTEM RESET $g" >/dev/null 2>&1
    done
    q "SELECT pg_reload_conf()" >/dev/null 2>&1
    rm -rf "$tmp"
}
trap cleanup EXIT
err() { psql -XAtq -v VERBOSITY=verbose -c "$1" 2>&1; }
app() { psql -XAtq -U w630_app -c "SET pg_agents.workspace = '$1'" -c "$2" 2>&1; }
# set_secret NAME VALUE: through a file the server reads, so that the value is
# in no statement text (docs/worker.md, "Secrets")
set_secret() {
    printf '%s' "$2" > "$tmp/$1"; chmod 644 "$tmp/$1"
    q "SELECT agent.set_secret('$1', pg_catalog.pg_read_file('$tmp/$1'))" >/dev/null
    rm -f "$tmp/$1"
}
reqs() {  # reqs PORT SCRIPTKEY FIELD: FIELD of the requests of a script key on a server
    python3 - "$1" "$2" "$3" <<'PY'
import json, sys, urllib.request
port, key, field = sys.argv[1:]
rs = json.loads(urllib.request.urlopen("http://127.0.0.1:%s/_requests" % port).read())
for r in rs:
    if r["key"] != key:
        continue
    h = r["headers"]
    print({"auth": h.get("authorization") or h.get("x-api-key") or "none",
           "model": (r["body"] or {}).get("model"), "path": r["path"],
           "beta": h.get("anthropic-beta", "none")}[field])
PY
}
all_headers() {  # every header value any request to the server carried
    python3 -c 'import json,sys,urllib.request; print(json.dumps([r["headers"] for r in json.loads(urllib.request.urlopen("http://127.0.0.1:%s/_requests" % sys.argv[1]).read())]))' "$1"
}

rnd=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
K_OAI="sk-oai-630-$rnd-first"
K_OAI2="sk-oai-630-$rnd-rotated"
K_ANT="sk-ant-630-$rnd"
K_DEF="sk-default-630-$rnd"
K_MCP="mcp-token-630-$rnd"

# the server logs every statement during this test: the log is then grepped
q "ALTER SYSTEM SET log_statement = 'all'" >/dev/null; q "SELECT pg_reload_conf()" >/dev/null
q "DROP ROLE IF EXISTS w630_app; DROP ROLE IF EXISTS w630_nobody; DROP ROLE IF EXISTS w630_reader;
   CREATE ROLE w630_app LOGIN IN ROLE agents_app; CREATE ROLE w630_nobody LOGIN;
   CREATE ROLE w630_reader LOGIN IN ROLE agents_reader" >/dev/null

# ---- 1. secrets: encrypted at rest, key file 0600 in the data directory ----
set_secret k630_oai "$K_OAI"
set_secret k630_ant "$K_ANT"
is "$(stat -c %a "$PGDATA/pg_agents.key" 2>&1)" "600" "the key file was created in the data directory with mode 0600"
is "$(q "SELECT count(*) FROM agent.secrets WHERE name LIKE 'k630_%'")" "2" "two secrets stored"
is "$(q "SELECT count(*) FROM agent.secrets WHERE position(convert_to('$rnd', 'UTF8') IN ciphertext) > 0
          OR encode(ciphertext, 'escape') LIKE '%$rnd%'")" "0" "the table holds ciphertext only"
key_hex=$(tr -d '\n' < "$PGDATA/pg_agents.key")
is "$(q "SELECT count(*) FROM agent.secrets WHERE encode(ciphertext, 'hex') LIKE '%$key_hex%'")" "0" "and not the key"
is "${#key_hex}" "64" "the key file holds 64 hex digits (256 bits)"

# ---- 2. bad input, each with a clear error ----
contains "$(err "SELECT agent.set_secret('bad name!', 'x')")" "22023" "set_secret: an invalid name is refused (22023)"
contains "$(err "SELECT agent.set_secret('k630_x', NULL)")" "cannot be null" "set_secret: a NULL value is refused"
contains "$(err "SELECT agent.set_secret('k630_x', E'abc\n')")" "contains a line break" "set_secret: a value with a line break is refused"
contains "$(err "SELECT agent.drop_secret('k630_none')")" "42704" "drop_secret of an unknown secret: 42704"
contains "$(err "SELECT agent.add_provider('p630_bad', 'openai_responses', '$LLM_URL')")" "unknown provider kind \"openai_responses\"" "add_provider: an unsupported kind"
contains "$(err "SELECT agent.add_provider('p630_bad', 'openai', 'ftp://example.com')")" "invalid base_url for provider \"p630_bad\"" "add_provider: a URL that is not http(s)"
contains "$(err "SELECT agent.add_provider('p630_bad', 'openai', 'https://user:pw@example.com/v1')")" "must not hold credentials" "add_provider: credentials in the URL"
out=$(err "SELECT agent.add_provider('p630_bad', 'openai', '$LLM_URL', 'sk-literal-$rnd')")
contains "$out" "must be a secret reference" "add_provider: a literal key is refused"
lacks "$out" "sk-literal-$rnd" "and the error does not echo it"
contains "$(err "SELECT agent.add_provider('p630_bad', 'openai', '$LLM_URL', '\${secret:k630_none}')")" "secret \"k630_none\" does not exist" "add_provider: a reference to a missing secret"
contains "$(err "SELECT agent.add_provider('p630_bad', 'openai', '$LLM_URL', NULL, '{\"max_conc\": 3}')")" "unknown settings key \"max_conc\"" "add_provider: an unknown settings key"
contains "$(err "SELECT agent.add_provider('p630_bad', 'openai', '$LLM_URL', NULL, '{\"max_concurrent\": 0}')")" "must be an integer between 1 and 10000" "add_provider: a limit out of range"
contains "$(err "SELECT agent.add_provider('p630_bad', 'openai', '$LLM_URL', NULL, '{\"stream\": \"yes\"}')")" "\"stream\" of provider \"p630_bad\" must be a boolean" "add_provider: stream not a boolean"
contains "$(err "SELECT agent.add_provider('p630_bad', 'openai', '$LLM_URL', NULL, '{\"headers\": {\"Authorization\": \"Bearer x\"}}')")" "is set by the worker" "add_provider: an Authorization header is refused"
contains "$(err "SELECT agent.add_provider('bad name', 'openai', '$LLM_URL')")" "invalid provider name" "add_provider: an invalid name"
is "$(q "SELECT count(*) FROM agent.providers WHERE name = 'p630_bad'")" "0" "nothing was stored"

# ---- 3. two providers, two keys ----
p1=$(q "SELECT agent.add_provider('p630_oai', 'openai', '$LLM_URL', '\${secret:k630_oai}', '{\"default_model\": \"gpt-630\"}')")
p2=$(q "SELECT agent.add_provider('p630_ant', 'anthropic', '$LLM2_URL/', '\${secret:k630_ant}',
        '{\"default_model\": \"claude-630\", \"headers\": {\"anthropic-beta\": \"beta-630\"}, \"max_concurrent\": 4, \"requests_per_minute\": 600}')")
ok "$([[ "$p1" =~ ^[0-9]+$ && "$p2" =~ ^[0-9]+$ ]] && echo 0)" "add_provider returns the ids"
contains "$(err "SELECT agent.add_provider('p630_oai', 'openai', '$LLM_URL')")" "42710" "a duplicate name: 42710"
contains "$(err "SELECT agent.alter_provider('p630_none', '{}')")" "42704" "alter_provider of an unknown provider: 42704"
contains "$(err "SELECT agent.alter_provider('p630_oai', '{\"kind\": \"anthropic\"}')")" "unknown settings key \"kind\"" "the kind cannot change"
contains "$(err "SELECT agent.alter_provider('p630_oai', '{\"api_key\": \"sk-literal-$rnd\"}')")" "must be a secret reference" "alter_provider: a literal key is refused too"
p3=$(q "SELECT agent.add_provider('p630_tmp', 'openai', '$LLM_URL', '\${secret:k630_oai}', '{\"stream\": true, \"max_concurrent\": 3, \"request_timeout\": 5000}')")
q "SELECT agent.alter_provider('p630_tmp', '{\"max_concurrent\": null, \"api_key\": null, \"requests_per_minute\": 60}')" >/dev/null
is "$(q "SELECT format('%s %s %s %s %s', stream, max_concurrent IS NULL, key_configured, requests_per_minute, request_timeout) FROM agent.provider_status WHERE name = 'p630_tmp'")" \
   "t t f 60 5000" "alter_provider: null removes a limit and the key, the other settings stay"
q "SELECT agent.drop_provider('p630_tmp')" >/dev/null
is "$(q "SELECT count(*) FROM agent.providers WHERE id = $p3")" "0" "an unused provider is dropped"

# ---- 4. who may read what ----
contains "$(psql -XAtq -U w630_app -c "SELECT name, kind, model, key_configured FROM agent.provider_status WHERE name LIKE 'p630_%' ORDER BY 1" 2>&1 | tr '\n' ' ')" \
     "p630_ant|anthropic|claude-630|t p630_oai|openai|gpt-630|t" "the application reads agent.provider_status (no key)"
contains "$(psql -XAtq -U w630_reader -c "SELECT count(*) FROM agent.provider_status WHERE name LIKE 'p630_%'" 2>&1)" "2" "analytics reads it too"
for rel in agent.providers agent.secrets; do
    contains "$(psql -XAtq -U w630_app -c "SELECT * FROM $rel" 2>&1)" "permission denied" "the application may not read $rel"
done
contains "$(psql -XAtq -U w630_app -c "SELECT agent.set_secret('k630_oai', 'stolen')" 2>&1)" "permission denied" "nor set a secret"
contains "$(psql -XAtq -U w630_app -c "SELECT agent.drop_secret('k630_oai')" 2>&1)" "permission denied" "nor drop one"
contains "$(psql -XAtq -U w630_app -c "SELECT agent.add_provider('p630_evil', 'openai', 'http://127.0.0.1:1/v1')" 2>&1)" "permission denied" "nor add a provider"
contains "$(psql -XAtq -U w630_app -c "SELECT agent.alter_provider('p630_oai', '{\"base_url\": \"http://127.0.0.1:1/v1\"}')" 2>&1)" "permission denied" "nor point one elsewhere"
for rel in agent.provider_status agent.providers agent.secrets; do
    contains "$(psql -XAtq -U w630_nobody -c "SELECT * FROM $rel" 2>&1)" "permission denied" "a role with no grants reads nothing of $rel"
done
contains "$(psql -XAtq -U w630_nobody -c "SELECT agent.set_secret('k630_oai', 'x')" 2>&1)" "permission denied" "nor sets a secret"
for rel in agent.provider_status agent.providers agent.secrets; do   # an agent session (tool SQL)
    contains "$(psql -XAtq -c "SET ROLE agents_tool" -c "SET pg_agents.actor = 'agent:1'" -c "SELECT * FROM $rel" 2>&1)" "permission denied" "an agent session (agents_tool) reads nothing of $rel"
done
contains "$(psql -XAtq -c "SET ROLE agents_tool" -c "SELECT agent.set_secret('k630_oai', 'x')" 2>&1)" "permission denied" "nor sets a secret"

# ---- 5. agents name their providers (versioned settings) ----
wa=$(app w630a "SELECT agent.create_agent('w630a', 'owner630', 'writer630', '{\"instructions\": \"Write.\"}')")
tr_=$(app w630a "SELECT agent.create_agent('w630a', 'owner630', 'triage630', '{\"instructions\": \"Triage.\"}')")
ob=$(app w630b "SELECT agent.create_agent('w630b', 'owner630b', 'other630', '{}')")
contains "$(app w630a "SELECT agent.save_settings($wa, '{\"provider\": \"p630_none\"}', 'owner630')")" "provider \"p630_none\" does not exist" "naming an unknown provider is refused"
contains "$(app w630a "SELECT agent.save_settings($wa, '{\"provider\": 3}', 'owner630')")" "must be a provider name" "a provider that is not a name is refused"
contains "$(app w630a "SELECT agent.save_settings($wa, jsonb_build_object('provider', 'p630_oai', 'scope', jsonb_build_object('llm_url', '$LLM_URL')), 'owner630')")" \
     "either a provider or scope llm_url" "a provider beside scope llm_url is refused"
v1=$(app w630a "SELECT agent.save_settings($wa, '{\"provider\": \"p630_oai\"}', 'owner630')")
v2=$(app w630a "SELECT agent.save_settings($tr_, '{\"provider\": \"p630_ant\"}', 'owner630')")
ok "$([[ "$v1" =~ ^[0-9]+$ && "$v2" =~ ^[0-9]+$ ]] && echo 0)" "save_settings names the providers"
is "$(q "SELECT scope->>'provider' FROM agent.agents WHERE id = $wa")" "p630_oai" "kept in scope.provider"
is "$(q "SELECT snapshot->'scope'->>'provider' FROM agent.versions WHERE id = $v1")" "p630_oai" "and versioned"
contains "$(app w630b "SELECT agent.save_settings($wa, '{\"provider\": \"p630_ant\"}', 'owner630')")" "does not exist" "another workspace cannot change it"
contains "$(err "SELECT agent.drop_provider('p630_oai')")" "2BP01" "a provider agents use cannot be dropped (2BP01)"

# ---- 6. runs: each agent's requests go to its provider with its key and model ----
llm_script "[[t630w1]]" '[{"text": "written"}]'
r1=$(start_run "$wa" '{"prompt": "write [[t630w1]]"}' autonomous owner630)
r2=$(start_run "$tr_" '{"prompt": "triage [[t630t1]]"}' autonomous owner630)
is "$(wait_status "$r1" "succeeded|failed" 30)" "succeeded" "the writer's run succeeds"
is "$(wait_status "$r2" "succeeded|failed" 30)" "succeeded" "the triage run succeeds"
is "$(reqs "$LLM_PORT" "[[t630w1]]" auth)" "Bearer $K_OAI" "the writer's request carries the openai provider's key"
is "$(reqs "$LLM_PORT" "[[t630w1]]" model)" "gpt-630" "and its default model"
is "$(reqs "$LLM_PORT" "[[t630w1]]" path)" "/v1/chat/completions" "in the openai format"
is "$(reqs "$LLM2_PORT" "" auth | head -1)" "$K_ANT" "the triage request carries the anthropic provider's key (x-api-key)"
is "$(reqs "$LLM2_PORT" "" model | head -1)" "claude-630" "and its model"
is "$(reqs "$LLM2_PORT" "" path | head -1)" "/v1/messages" "in the anthropic format"
is "$(reqs "$LLM2_PORT" "" beta | head -1)" "beta-630" "with the provider's extra header"
h1=$(all_headers "$LLM_PORT"); h2=$(all_headers "$LLM2_PORT")
lacks "$h1" "$K_ANT" "the anthropic key never reached the openai provider"
lacks "$h2" "$K_OAI" "the openai key never reached the anthropic provider"
is "$(psql -XAtq -U w630_app -c "SELECT requests > 0 FROM agent.provider_status WHERE name = 'p630_ant'")" "t" "provider_status counts the requests"
app w630a "SELECT agent.save_settings($wa, '{\"model\": \"gpt-630-big\"}', 'owner630')" >/dev/null
llm_script "[[t630w2]]" '[{"text": "ok"}]'
r=$(start_run "$wa" '{"prompt": "write [[t630w2]]"}' autonomous owner630)
wait_status "$r" "succeeded|failed" 30 >/dev/null
is "$(reqs "$LLM_PORT" "[[t630w2]]" model)" "gpt-630-big" "the agent's own model wins over the provider's default"

# ---- 7. rotation: the next request uses the new key, no restart ----
set_secret k630_oai "$K_OAI2"
llm_script "[[t630w3]]" '[{"text": "ok"}]'
r=$(start_run "$wa" '{"prompt": "write [[t630w3]]"}' autonomous owner630)
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "a run after the rotation succeeds"
is "$(reqs "$LLM_PORT" "[[t630w3]]" auth)" "Bearer $K_OAI2" "with the rotated key"

# ---- 7b. the provider says its requests are used up: later runs wait (keeping their lease) ----
q "ALTER SYSTEM SET pg_agents.run_lease = 3" >/dev/null; q "SELECT pg_reload_conf()" >/dev/null; sleep 0.5
llm_script "[[t630L1]]" '[{"text": "ok", "headers": {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6s"}}]'
llm_script "[[t630L2]]" '[{"text": "ok"}]'
r=$(start_run "$wa" '{"prompt": "write [[t630L1]]"}' autonomous owner630)
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "a reply saying no requests remain (x-ratelimit-remaining-requests: 0, reset 6s)"
w0=$(q "SELECT waits FROM agent.provider_status WHERE name = 'p630_oai'")
r=$(start_run "$wa" '{"prompt": "write [[t630L2]]"}' autonomous owner630)
sleep 1
is "$(q "SELECT status || ' ' || (limited_until IS NOT NULL) || ' ' || (waits > $w0) FROM agent.runs, agent.provider_status WHERE id = $r AND name = 'p630_oai'")" \
   "running true true" "the next run waits for the reset (provider_status: limited_until, waits)"
is "$(reqs "$LLM_PORT" "[[t630L2]]" model | wc -l)" "0" "and sends nothing meanwhile"
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "then it is served"
is "$(q "SELECT attempts FROM agent.runs WHERE id = $r")" "1" "its lease (3 s) was kept while it waited 6 s: never requeued"
is "$(reqs "$LLM_PORT" "[[t630L2]]" model | wc -l)" "1" "one request"
q "ALTER SYSTEM RESET pg_agents.run_lease" >/dev/null; q "SELECT pg_reload_conf()" >/dev/null

# ---- 7c. tokens per minute: a reply that used more than the budget holds the next request ----
q "SELECT agent.alter_provider('p630_oai', '{\"tokens_per_minute\": 60000}')" >/dev/null
llm_script "[[t630T1]]" '[{"text": "big", "usage": {"in": 15000, "out": 5}}]'
llm_script "[[t630T2]]" '[{"text": "ok"}]'
r=$(start_run "$wa" '{"prompt": "write [[t630T1]]"}' autonomous owner630)
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "a reply of 15,005 tokens under tokens_per_minute 60,000 (a bucket of 10,000)"
is "$(q "SELECT tokens_available < 0 FROM agent.provider_status WHERE name = 'p630_oai'")" "t" "leaves the token bucket in debt (provider_status.tokens_available)"
r=$(start_run "$wa" '{"prompt": "write [[t630T2]]"}' autonomous owner630)
sleep 1
is "$(q "SELECT status FROM agent.runs WHERE id = $r")|$(reqs "$LLM_PORT" "[[t630T2]]" model | wc -l)" "running|0" "the next run waits for the bucket to refill (about 5 s), sending nothing"
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "then it is served"
q "SELECT agent.alter_provider('p630_oai', '{\"tokens_per_minute\": null}')" >/dev/null

# ---- 8. an endpoint that echoes the key in its error: no key in the step or the error ----
llm_script "[[t630w4]]" '[{"status": 401, "echo_key": true}]'
r=$(start_run "$wa" '{"prompt": "write [[t630w4]]"}' autonomous owner630)
is "$(wait_status "$r" "succeeded|failed" 30)" "failed" "a 401 fails the run"
e=$(q "SELECT error FROM agent.runs WHERE id = $r")
contains "$e" "Incorrect API key provided: [secret]" "the error keeps the provider's message, the key masked"
is "$(psql -XAtq -U w630_app -c "SELECT last_error FROM agent.provider_status WHERE name = 'p630_oai'")" "HTTP 401" "provider_status shows the last error as a status line, without the provider's body (issue 30)"

# ---- 9. a dropped secret: the provider's runs fail clearly until it is set again ----
q "SELECT agent.drop_secret('k630_ant')" >/dev/null
r=$(start_run "$tr_" '{"prompt": "triage [[t630t3]]"}' autonomous owner630)
is "$(wait_status "$r" "succeeded|failed" 30)" "failed" "with its secret dropped, the provider's run fails"
is "$(q "SELECT error FROM agent.runs WHERE id = $r")" "the API key of provider \"p630_ant\" cannot be used: secret \"k630_ant\" does not exist" "with a clear error"
set_secret k630_ant "$K_ANT"
r=$(start_run "$tr_" '{"prompt": "triage [[t630t4]]"}' autonomous owner630)
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "set again, it works again"

# ---- 10. pg_agents.llm_api_key as ${secret:NAME} (the default provider) ----
set_secret k630_def "$K_DEF"
q "ALTER SYSTEM SET pg_agents.llm_api_key = '\${secret:k630_def}'" >/dev/null
q "ALTER SYSTEM SET pg_agents.llm_url = '$LLM_URL'" >/dev/null; q "SELECT pg_reload_conf()" >/dev/null; sleep 0.5
d=$(mk_agent default630 '{}' none '[]' 10 w630a owner630)
llm_script "[[t630d1]]" '[{"text": "default"}]'
r=$(start_run "$d" '{"prompt": "default [[t630d1]]"}' autonomous owner630)
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "a run on the default provider succeeds"
is "$(reqs "$LLM_PORT" "[[t630d1]]" auth)" "Bearer $K_DEF" "pg_agents.llm_api_key = \${secret:k630_def} sends the secret's value"
is "$(q "SHOW pg_agents.llm_api_key")" "********" "the setting itself is never shown"

# ---- 11. MCP header values from the secrets store ----
mpf="$tmp/mcp.port"
python3 "$_wl_dir/mcp_server.py" --port 0 --port-file "$mpf" --token "$K_MCP" >/dev/null 2>&1 & mcp_pid=$!
for _ in $(seq 1 100); do [ -s "$mpf" ] && break; sleep 0.05; done
MCP="http://127.0.0.1:$(cat "$mpf")"
set_secret k630_mcp "$K_MCP"
q "SELECT agent.mcp_add_server('mcp630', '$MCP/auth/mcp', '{\"Authorization\": \"Bearer \${secret:k630_mcp}\"}', workspace_id => 'w630a')" >/dev/null 2>&1
is "$(q "SELECT count(*) > 0 FROM agent.mcp_tools t JOIN agent.mcp_servers s ON s.id = t.server_id WHERE s.name = 'mcp630'")" "t" \
   "an MCP server whose Authorization header is \${secret:k630_mcp} is reached (its tools listed)"
is "$(q "SELECT headers->>'Authorization' FROM agent.mcp_servers WHERE name = 'mcp630'")" 'Bearer ${secret:k630_mcp}' "the table keeps the reference only"
set_secret k630_mcp "wrong-$rnd"
out=$(q "SELECT connected, error FROM agent.mcp_refresh('mcp630', 'w630a')" 2>&1)
contains "$out" "f|" "rotated to a wrong value, the next request is refused"
contains "$out" "401" "with the 401 of the server (no restart, no stale session)"
lacks "$out" "wrong-$rnd" "and the error masks the value"
set_secret k630_mcp "$K_MCP"
is "$(q "SELECT connected FROM agent.mcp_refresh('mcp630', 'w630a')" 2>&1)" "t" "set back, it works again"
q "SELECT agent.drop_secret('k630_mcp')" >/dev/null
out=$(q "SELECT error FROM agent.mcp_refresh('mcp630', 'w630a')" 2>&1)
is "$out" "header \"Authorization\" cannot be sent: secret \"k630_mcp\" does not exist in workspace \"w630a\" nor in the cluster" "a dropped secret: a clear error"

# ---- 12. nowhere else: steps, audit, errors, pg_stat_activity, a dump, the server log ----
all="$K_OAI|$K_OAI2|$K_ANT|$K_DEF|$K_MCP"
# the statements below search for the values without holding them (they are
# logged too): the pattern is written reversed
# (in plain bash: forky's util-linux no longer ships rev(1))
rev_all=""
for ((i = ${#all} - 1; i >= 0; i--)); do rev_all+=${all:i:1}; done
[ -n "$rev_all" ] || { echo "Bail out! the secret pattern is empty"; exit 1; }
pat="reverse('$rev_all')"
is "$(q "SELECT count(*) FROM agent.run_steps WHERE (input::text || coalesce(output::text, '')) ~ $pat")" "0" "no secret in any step"
is "$(q "SELECT count(*) FROM agent.runs WHERE (coalesce(error, '') || coalesce(output::text, '') || input::text) ~ $pat")" "0" "nor in a run's error or output"
is "$(q "SELECT count(*) FROM agent.audit_log WHERE row_to_json(audit_log)::text ~ $pat")" "0" "nor in the audit log"
is "$(q "SELECT count(*) FROM agent.mcp_servers WHERE row_to_json(mcp_servers)::text ~ $pat")" "0" "nor in agent.mcp_servers"
llm_script "[[t630s]]" '[{"text": "slow", "latency": 1.0}]'
r=$(start_run "$wa" '{"prompt": "slow [[t630s]]"}' autonomous owner630)
seen=0
for _ in $(seq 1 20); do
    n=$(q "SELECT count(*) FROM pg_stat_activity WHERE query ~ $pat"); [ "$n" != 0 ] && seen=1
    sleep 0.05
done
wait_status "$r" "succeeded|failed" 30 >/dev/null
is "$seen" "0" "no secret in pg_stat_activity while runs are in flight"
pg_dump -d "$PGDATABASE" > "$tmp/dump.sql" 2>"$tmp/dump.err"
ok "$([ -s "$tmp/dump.sql" ] && echo 0)" "pg_dump of the database succeeds"
ok "$(grep -q 'k630_oai' "$tmp/dump.sql" && echo 0)" "the dump holds the secrets' names (and ciphertext)"
is "$(grep -cE "$all" "$tmp/dump.sql")" "0" "the dump holds no secret value"
ok "$(grep -q '\${secret:k630_oai}' "$tmp/dump.sql" && echo 0)" "the dump keeps the providers with their references"
q "SELECT pg_catalog.pg_rotate_logfile()" >/dev/null 2>&1
is "$(grep -cE "$all" "$PG_AGENTS_DIR/server.log")" "0" "the server log (log_statement = all) holds no secret value"
ok "$(grep -q "agent.set_secret('k630_oai', pg_catalog.pg_read_file" "$PG_AGENTS_DIR/server.log" && echo 0)" "while it logged the set_secret statements (which name a file, not the value)"

# ---- 13. cleanup ----
app w630a "SELECT agent.delete_agent($wa, 'owner630')" >/dev/null 2>&1
q "UPDATE agent.agents SET scope = scope - 'provider' WHERE id IN ($wa, $tr_)" >/dev/null
q "SELECT agent.drop_provider('p630_oai')" >/dev/null
is "$(q "SELECT count(*) FROM agent.providers WHERE name = 'p630_oai'")" "0" "drop_provider removes an unused provider"
contains "$(err "SELECT agent.drop_provider('p630_oai')")" "42704" "dropping it again: 42704"
q "SELECT agent.drop_provider('p630_ant')" >/dev/null
q "SELECT agent.mcp_remove_server('mcp630', 'w630a')" >/dev/null
for k in k630_oai k630_ant k630_def; do q "SELECT agent.drop_secret('$k')" >/dev/null; done
is "$(q "SELECT count(*) FROM agent.secrets WHERE name LIKE 'k630_%'")" "0" "drop_secret removes them"
q "DROP ROLE w630_app; DROP ROLE w630_nobody; DROP ROLE w630_reader" >/dev/null
: "$ob"
done_testing
