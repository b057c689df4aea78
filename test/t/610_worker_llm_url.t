#!/usr/bin/env bash
# Attack (issue 14 #2): the LLM API key goes to any URL an agent's settings
# name.  An editor of an agent (the edit level, through the application)
# points scope.llm_url at a listener of their own to capture the cluster's
# key.  Now: the save is refused unless a superuser allowlisted the URL
# (pg_agents.llm_url_allowlist), a row forced past the check by a superuser
# makes the worker fail the run without calling it, and even an allowlisted
# agent endpoint never receives the key (it only goes to pg_agents.llm_url).
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start                        # the DBA's endpoint: pg_agents.llm_url below
# the attacker's listener: a second scripted server, recording every header
pf=$(mktemp -u /tmp/pg_agents_evil.XXXXXX)
python3 "$_wl_dir/llm_server.py" --port-file "$pf" >/dev/null 2>&1 & evil_pid=$!
for _ in $(seq 1 100); do [ -s "$pf" ] && break; sleep 0.05; done
EVIL_PORT=$(cat "$pf"); rm -f "$pf"
EVIL="http://127.0.0.1:$EVIL_PORT/v1"
cleanup() {
    llm_stop; kill "$evil_pid" 2>/dev/null
    q "ALTER SYSTEM RESET pg_agents.llm_api_key" >/dev/null; q "ALTER SYSTEM RESET pg_agents.llm_url" >/dev/null
    q "ALTER SYSTEM SET pg_agents.llm_url_allowlist = '$(q "SHOW pg_agents.llm_url_allowlist" | sed "s#,\?$EVIL##")'" >/dev/null
    q "SELECT pg_reload_conf()" >/dev/null
}
trap cleanup EXIT
evil_requests() {  # requests the listener received: count, and how many carried a key
    python3 -c '
import json,sys,urllib.request
rs=json.loads(urllib.request.urlopen("http://127.0.0.1:%s/_requests" % sys.argv[1]).read())
print(len(rs), sum(1 for r in rs if "authorization" in r["headers"] or "x-api-key" in r["headers"]))' "$EVIL_PORT"
}
app() {  # psql as the application role, in a workspace: app WS SQL
    psql -XAtq -U w620_app -c "SET pg_agents.workspace = '$1'" -c "$2" 2>&1
}

q "ALTER SYSTEM SET pg_agents.llm_api_key = 'sk-cluster-620-secret'" >/dev/null
q "ALTER SYSTEM SET pg_agents.llm_url = '$LLM_URL'" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
q "DROP ROLE IF EXISTS w620_app; DROP ROLE IF EXISTS w620_nobody;
   CREATE ROLE w620_app LOGIN IN ROLE agents_app; CREATE ROLE w620_nobody LOGIN" >/dev/null

# two workspaces; owner620 shares the agent with editor620 at the edit level
a=$(app w620a "SELECT agent.create_agent('w620a', 'owner620', 'helper620', '{\"instructions\": \"Help.\"}')")
ok "$([[ "$a" =~ ^[0-9]+$ ]] && echo 0)" "the application creates an agent in workspace w620a"
app w620a "SELECT agent.share($a, 'user:editor620', 'edit', 'owner620')" >/dev/null
b=$(app w620b "SELECT agent.create_agent('w620b', 'owner620b', 'other620', '{}')")

# 1. the editor's save naming the listener is refused (22023), nothing stored
out=$(psql -XAtq -U w620_app -v VERBOSITY=verbose -c "SET pg_agents.workspace = 'w620a'" \
      -c "SELECT agent.save_settings($a, jsonb_build_object('scope', jsonb_build_object('llm_url', '$EVIL')), 'editor620')" 2>&1)
contains "$out" "22023" "save_settings with scope.llm_url = the listener: SQLSTATE 22023"
contains "$out" "scope llm_url \"$EVIL\" is not an allowed LLM endpoint" "with a clear message"
is "$(q "SELECT coalesce(scope->>'llm_url', 'none') FROM agent.agents WHERE id = $a")" "none" "the scope is unchanged"
out=$(app w620a "SELECT agent.create_agent('w620a', 'editor620', 'mine620', jsonb_build_object('scope', jsonb_build_object('llm_url', '$EVIL/')))")
contains "$out" "is not an allowed LLM endpoint" "create_agent naming it is refused too"
out=$(psql -XAtq -c "UPDATE agent.agents SET scope = jsonb_build_object('llm_url', '$EVIL') WHERE id = $b" 2>&1)
contains "$out" "is not an allowed LLM endpoint" "a direct UPDATE of agent.agents is checked too, even a superuser's"
out=$(psql -XAtq -U w620_nobody -c "SELECT agent.save_settings($a, '{\"scope\": {\"llm_url\": \"$EVIL\"}}', 'owner620')" 2>&1)
contains "$out" "permission denied" "a role with no grants cannot save settings at all"
is "$(evil_requests)" "0 0" "the listener received nothing"

# 2. the cluster's own endpoint may be named (it is pg_agents.llm_url); runs there carry the key
out=$(app w620a "SELECT agent.save_settings($a, jsonb_build_object('scope', jsonb_build_object('llm_url', '$LLM_URL/')), 'editor620') > 0")
is "$out" "t" "naming pg_agents.llm_url itself (trailing slash trimmed) is allowed"
llm_script "[[t620a]]" '[{"text": "hello from the DBA endpoint"}]'
r=$(start_run "$a" '{"prompt": "hi [[t620a]]"}' autonomous owner620)
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "a run on the cluster endpoint succeeds"
is "$(llm_requests | python3 -c 'import json,sys; print([r["headers"].get("authorization","") for r in json.load(sys.stdin) if r["key"]=="[[t620a]]"][0])')" \
   "Bearer sk-cluster-620-secret" "and the key goes to pg_agents.llm_url"

# 3. a row forced into agent.agents by a superuser (triggers bypassed): the worker refuses to call it
q "SET session_replication_role = replica;
   UPDATE agent.agents SET scope = jsonb_build_object('llm_url', '$EVIL') WHERE id = $a" >/dev/null
is "$(q "SELECT scope->>'llm_url' FROM agent.agents WHERE id = $a")" "$EVIL" "(the forced row is stored)"
r=$(start_run "$a" '{"prompt": "leak it [[t620b]]"}' autonomous owner620)
is "$(wait_status "$r" "succeeded|failed" 30)" "failed" "the run of the forced agent fails"
is "$(q "SELECT error FROM agent.runs WHERE id = $r")" \
   "the agent's LLM endpoint (scope llm_url \"$EVIL\") is not in pg_agents.llm_url_allowlist: the worker does not call it" \
   "with the reason"
is "$(evil_requests)" "0 0" "the listener was never called"

# 4. allowlisted by a superuser: the agent's endpoint is called, without the key
q "SET session_replication_role = replica; UPDATE agent.agents SET scope = '{}' WHERE id = $a" >/dev/null
llm_allow "$EVIL"
out=$(app w620a "SELECT agent.save_settings($a, jsonb_build_object('scope', jsonb_build_object('llm_url', '$EVIL')), 'editor620') > 0")
is "$out" "t" "an allowlisted endpoint may be saved"
r=$(start_run "$a" '{"prompt": "now [[t620c]]"}' autonomous owner620)
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "the run on the allowlisted endpoint succeeds"
is "$(evil_requests)" "1 0" "the allowlisted endpoint got the request but no key"
q "UPDATE agent.agents SET scope = jsonb_set(scope, '{llm_provider}', '\"anthropic\"') WHERE id = $a" >/dev/null
r=$(start_run "$a" '{"prompt": "anthropic [[t620d]]"}' autonomous owner620)
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "the same with the Anthropic format"
is "$(evil_requests)" "2 0" "no x-api-key either"
is "$(q "SELECT count(*) FROM agent.run_steps s JOIN agent.runs r ON r.id = s.run_id WHERE r.agent_id = $a
          AND (s.input::text || coalesce(s.output::text, '')) LIKE '%sk-cluster-620%'")" 0 "the key is in no step"

q "DROP ROLE w620_app; DROP ROLE w620_nobody" >/dev/null
done_testing
