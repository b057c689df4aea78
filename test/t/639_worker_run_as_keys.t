#!/usr/bin/env bash
# run_as and whose provider key a run uses (issue 31, item 5).  A user's own
# secret (agent.set_secret(name, value, workspace_id, user_id)) is what the
# provider's ${secret:NAME} resolves to for the runs that act for that user:
# a run_as creator schedule job they created, a manual run they requested.
# A run_as shared job, an event run and the other users' runs use the
# workspace's secret.  Two workspaces (w635a, w635b) with a provider each,
# both referencing ${secret:k635}; the scripted LLM server records the
# Authorization header of every request.  A role with no grants reads no
# secret and sets none; the application role (agents_app) sets none either.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start
tmp=$(mktemp -d /tmp/pg_agents_635.XXXXXX); chmod 755 "$tmp"
cleanup() { llm_stop; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
err() { psql -XAtq -v VERBOSITY=verbose -c "$1" 2>&1; }
# set_secret NAME VALUE WORKSPACE [USER]: through a file the server reads
set_secret() {
    printf '%s' "$2" > "$tmp/$1"; chmod 644 "$tmp/$1"
    local u=NULL
    [ -n "${4:-}" ] && u="'$4'"
    q "SELECT agent.set_secret('$1', pg_catalog.pg_read_file('$tmp/$1'), '$3', $u)" >/dev/null
    rm -f "$tmp/$1"
}
auth_of() {  # the Authorization headers the scripted server received for script key $1
    python3 - "$LLM_PORT" "$1" <<'PY'
import json, sys, urllib.request
port, key = sys.argv[1:]
rs = json.loads(urllib.request.urlopen("http://127.0.0.1:%s/_requests" % port).read())
print(" ".join(sorted(set(v for r in rs if r["key"] == key
                          for k, v in r["headers"].items() if k.lower() == "authorization"))))
PY
}
run_of_trigger() {  # waits for the run of trigger $1; prints its id
    local r i
    for i in $(seq 1 600); do
        r=$(q "SELECT max(id) FROM agent.runs WHERE trigger_id = $1")
        [ -n "$r" ] && { echo "$r"; return 0; }
        sleep 0.05
    done
}

rnd=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
V_WA="sk-ws-a-635-$rnd"          # w635a's key
V_AL="sk-alice-a-635-$rnd"       # alice's own key in w635a
V_WB="sk-ws-b-635-$rnd"          # w635b's key
V_ALB="sk-alice-b-635-$rnd"      # alice's own key in w635b

q "UPDATE agent.agents SET scope = scope - 'provider' WHERE scope->>'provider' LIKE 'p635_%';
   SELECT agent.drop_provider(name) FROM agent.providers WHERE name LIKE 'p635_%';
   DELETE FROM agent.secrets WHERE name = 'k635';
   DROP ROLE IF EXISTS w635_app; DROP ROLE IF EXISTS w635_nobody;
   CREATE ROLE w635_app LOGIN IN ROLE agents_app; CREATE ROLE w635_nobody LOGIN" >/dev/null

# ---- 1. users' own secrets ----
set_secret k635 "$V_WA" w635a
set_secret k635 "$V_AL" w635a alice635
set_secret k635 "$V_WB" w635b
set_secret k635 "$V_ALB" w635b alice635
is "$(q "SELECT string_agg(workspace_id || '/' || coalesce(user_id, '-'), ',' ORDER BY workspace_id, user_id NULLS FIRST) FROM agent.secrets WHERE name = 'k635'")" \
   "w635a/-,w635a/alice635,w635b/-,w635b/alice635" "one name: each workspace's secret and alice's own in each"
out=$(err "SELECT agent.set_secret('x635', 'v', NULL, 'alice635')")
contains "$out" "22023" "a user's secret without a workspace is refused (22023)"
contains "$out" "a user's secret needs a workspace" "with a clear message"
contains "$(err "SELECT agent.drop_secret('k635', 'w635a', 'bob635')")" "secret \"k635\" of user \"bob635\" does not exist in workspace \"w635a\"" \
     "drop_secret names the user: bob has none"
is "$(q "SELECT action || ' ' || target_id || ' ' || (inputs->>'user_id') || ' ' || (inputs->>'value') FROM agent.audit_log WHERE action = 'secret.set' AND target_id = 'w635a/alice635/k635' ORDER BY id DESC LIMIT 1")" \
   "secret.set w635a/alice635/k635 alice635 [redacted]" "setting a user's secret is audited with the user, never the value"
contains "$(psql -XAtq -U w635_nobody -c "SELECT count(*) FROM agent.secrets" 2>&1)" "permission denied" "a role with no grants reads no secret"
contains "$(psql -XAtq -U w635_app -c "SELECT count(*) FROM agent.secrets" 2>&1)" "permission denied" "nor does the application role"
contains "$(psql -XAtq -U w635_app -c "SET pg_agents.workspace = 'w635a'" -c "SELECT agent.set_secret('k635', 'mine', 'w635a', 'mallory635')" 2>&1)" "permission denied" \
     "the application role cannot give a user a secret"
# a user's secret row copied to another user does not decrypt
q "INSERT INTO agent.secrets (name, ciphertext, workspace_id, user_id) SELECT name, ciphertext, workspace_id, 'mallory635' FROM agent.secrets WHERE name = 'k635' AND user_id = 'alice635' AND workspace_id = 'w635a'" >/dev/null

# ---- 2. providers of each workspace, referencing ${secret:k635} ----
q "SELECT agent.add_provider('p635_a', 'openai', '$LLM_URL', '\${secret:k635}', '{\"workspace_id\": \"w635a\"}')" >/dev/null
q "SELECT agent.add_provider('p635_b', 'openai', '$LLM_URL', '\${secret:k635}', '{\"workspace_id\": \"w635b\"}')" >/dev/null
aa=$(q "INSERT INTO agent.agents (workspace_id, owner_id, name, instructions, scope) VALUES ('w635a', 'alice635', 'agent635a', 'A.', '{\"provider\": \"p635_a\"}') RETURNING id")
ab=$(q "INSERT INTO agent.agents (workspace_id, owner_id, name, instructions, scope) VALUES ('w635b', 'alice635', 'agent635b', 'B.', '{\"provider\": \"p635_b\"}') RETURNING id")
q "SELECT agent.share($aa, 'user:bob635', 'edit', 'alice635')" >/dev/null

# ---- 3. schedule jobs: creator -> the creator's key, shared -> the workspace's ----
for k in ca sa cb sb cbob; do llm_script "[[s635-$k]]" '[{"text": "done"}]'; done
t_ca=$(q "INSERT INTO agent.triggers (agent_id, kind, schedule, prompt, run_as, created_by) VALUES ($aa, 'schedule', '0 9 * * *', 'job [[s635-ca]]', 'creator', 'alice635') RETURNING id")
t_sa=$(q "INSERT INTO agent.triggers (agent_id, kind, schedule, prompt, run_as, created_by) VALUES ($aa, 'schedule', '0 9 * * *', 'job [[s635-sa]]', 'shared', 'alice635') RETURNING id")
t_bob=$(q "INSERT INTO agent.triggers (agent_id, kind, schedule, prompt, run_as, created_by) VALUES ($aa, 'schedule', '0 9 * * *', 'job [[s635-cbob]]', 'creator', 'bob635') RETURNING id")
t_cb=$(q "INSERT INTO agent.triggers (agent_id, kind, schedule, prompt, run_as, created_by) VALUES ($ab, 'schedule', '0 9 * * *', 'job [[s635-cb]]', 'creator', 'alice635') RETURNING id")
t_sb=$(q "INSERT INTO agent.triggers (agent_id, kind, schedule, prompt, run_as, created_by) VALUES ($ab, 'schedule', '0 9 * * *', 'job [[s635-sb]]', 'shared', 'alice635') RETURNING id")
q "UPDATE agent.triggers SET next_run_at = now() - interval '1 minute' WHERE id IN ($t_ca, $t_sa, $t_bob, $t_cb, $t_sb)" >/dev/null
for t in t_ca t_sa t_bob t_cb t_sb; do
    r=$(run_of_trigger "${!t}")
    is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "the run of job $t succeeds"
done
is "$(q "SELECT string_agg(coalesce(requested_by, '-'), ',' ORDER BY trigger_id) FROM agent.runs WHERE trigger_id IN ($t_ca, $t_sa, $t_bob)")" \
   "alice635,-,bob635" "the runs act for the creator (creator jobs) and for nobody (the shared job)"
is "$(auth_of "[[s635-ca]]")" "Bearer $V_AL" "w635a, run_as creator by alice: alice's own key"
is "$(auth_of "[[s635-sa]]")" "Bearer $V_WA" "w635a, run_as shared: the workspace's key"
is "$(auth_of "[[s635-cbob]]")" "Bearer $V_WA" "w635a, run_as creator by bob (no secret of his own): the workspace's key"
is "$(auth_of "[[s635-cb]]")" "Bearer $V_ALB" "w635b, run_as creator by alice: alice's key of w635b, not of w635a"
is "$(auth_of "[[s635-sb]]")" "Bearer $V_WB" "w635b, run_as shared: w635b's key"

# ---- 4. other runs: manual (the requester's), event (the workspace's) ----
llm_script "[[s635-m]]" '[{"text": "chat"}]'
r=$(start_run "$aa" '{"prompt": "hi [[s635-m]]"}' manual alice635)
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "alice's chat run succeeds"
is "$(auth_of "[[s635-m]]")" "Bearer $V_AL" "a manual run uses its requester's own key"
llm_script "[[s635-e]]" '[{"text": "event"}]'
r=$(q "SELECT agent._enqueue_run($aa, 'autonomous', 'event', '{\"prompt\": \"ev [[s635-e]]\"}'::jsonb, NULL, 'alice635')")
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "an event run caused by alice succeeds"
is "$(auth_of "[[s635-e]]")" "Bearer $V_WA" "an event run uses the workspace's key, not the event's user's"
# mallory's copied row: her runs fail, nothing is sent
llm_script "[[s635-x]]" '[{"text": "never"}]'
r=$(start_run "$aa" '{"prompt": "x [[s635-x]]"}' manual mallory635)
is "$(wait_status "$r" "failed|succeeded" 30)" "failed" "attack: alice's secret copied to mallory does not decrypt: her run fails"
contains "$(q "SELECT error FROM agent.runs WHERE id = $r")" "cannot be used for user \"mallory635\"" "with a clear error"
is "$(auth_of "[[s635-x]]")" "" "and nothing was sent"

# ---- 5. rotation: alice's key dropped, her next job uses the workspace's ----
q "SELECT agent.drop_secret('k635', 'w635a', 'alice635')" >/dev/null
llm_script "[[s635-r]]" '[{"text": "again"}]'
q "UPDATE agent.triggers SET prompt = 'job [[s635-r]]', next_run_at = now() - interval '1 minute' WHERE id = $t_ca" >/dev/null
for i in $(seq 1 600); do [ "$(q "SELECT count(*) FROM agent.runs WHERE trigger_id = $t_ca")" -ge 2 ] && break; sleep 0.05; done
r=$(q "SELECT max(id) FROM agent.runs WHERE trigger_id = $t_ca")
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "after alice's secret is dropped her job still runs"
is "$(auth_of "[[s635-r]]")" "Bearer $V_WA" "with the workspace's key"

# no audit row, step or run error holds a key
pat="'$V_WA|$V_AL|$V_WB|$V_ALB'"
is "$(q "SELECT (SELECT count(*) FROM agent.audit_log a WHERE a::text ~ $pat) + (SELECT count(*) FROM agent.run_steps s WHERE s::text ~ $pat) + (SELECT count(*) FROM agent.runs x WHERE x::text ~ $pat)")" "0" \
   "no audit row, step or run holds a key"

q "DELETE FROM agent.triggers WHERE id IN ($t_ca, $t_sa, $t_bob, $t_cb, $t_sb);
   UPDATE agent.agents SET deleted_at = now(), scope = scope - 'provider' WHERE id IN ($aa, $ab)" >/dev/null
q "SELECT agent.drop_provider(name) FROM agent.providers WHERE name LIKE 'p635_%'" >/dev/null 2>&1
done_testing
