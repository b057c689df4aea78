#!/usr/bin/env bash
# Worker: conditional approval gates (scope.approval_rules).  A rule's SQL
# predicate decides per call whether it needs approval; it runs as the tool
# role with the run's identity, changes nothing, and fails closed: an error,
# a NULL, a time-out or a function that may not be used all mean "needs
# approval".  A denied call then reaches the model as a refusal.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start
src=${PG_AGENTS_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d)
python3 "$src/test/fixtures/mcp_server.py" --port-file "$tmp/py.port" >/dev/null 2>&1 & pypid=$!
for _ in $(seq 1 100); do [ -s "$tmp/py.port" ] && break; sleep 0.05; done
q "DROP SCHEMA IF EXISTS w624 CASCADE; DROP ROLE IF EXISTS w624_owner;
   CREATE ROLE w624_owner NOLOGIN;
   CREATE SCHEMA w624; GRANT USAGE ON SCHEMA w624 TO agents_tool, w624_owner;
   CREATE TABLE w624.pages (id text PRIMARY KEY, title text, body text);
   INSERT INTO w624.pages VALUES ('p624a', 'One', 'one'), ('p624b', 'Two', 'two');
   SELECT agent.register_resource_table('page', 'w624.pages', 'id', 'title', 'body');
   GRANT SELECT, UPDATE ON w624.pages TO agents_tool;
   INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access)
     VALUES ('page', 'p624a', 'user:owner624', 'edit'), ('page', 'p624b', 'user:owner624', 'edit') ON CONFLICT DO NOTHING;
   CREATE TABLE w624.log (at timestamptz DEFAULT now(), who text);
   GRANT INSERT ON w624.log TO agents_tool;
   -- true for a body that mentions deleting
   CREATE FUNCTION w624.needs_review(tool text, input jsonb, run_id bigint) RETURNS boolean
     LANGUAGE sql AS \$\$ SELECT coalesce(input->>'body', '') ILIKE '%delete%' \$\$;
   CREATE FUNCTION w624.raises(tool text, input jsonb, run_id bigint) RETURNS boolean
     LANGUAGE plpgsql AS \$\$ BEGIN RAISE EXCEPTION 'review service unreachable'; END \$\$;
   CREATE FUNCTION w624.nulls(tool text, input jsonb, run_id bigint) RETURNS boolean
     LANGUAGE sql AS \$\$ SELECT NULL::boolean \$\$;
   -- false only when called as the tool role, for this run's agent
   CREATE FUNCTION w624.whoami(tool text, input jsonb, run_id bigint) RETURNS boolean
     LANGUAGE sql AS \$\$ SELECT NOT (current_user = 'agents_tool'
                                    AND current_setting('pg_agents.run_id') = run_id::text
                                    AND current_setting('pg_agents.actor') LIKE 'agent:%') \$\$;
   -- writes, then says no approval: the write must not stay
   CREATE FUNCTION w624.writes(tool text, input jsonb, run_id bigint) RETURNS boolean
     LANGUAGE plpgsql AS \$\$ BEGIN INSERT INTO w624.log (who) VALUES (current_user); RETURN false; END \$\$;
   -- tries to become someone else
   CREATE FUNCTION w624.setrole(tool text, input jsonb, run_id bigint) RETURNS boolean
     LANGUAGE plpgsql AS \$\$ BEGIN SET ROLE postgres; RETURN false; END \$\$;
   CREATE FUNCTION w624.slow(tool text, input jsonb, run_id bigint) RETURNS boolean
     LANGUAGE plpgsql AS \$\$ BEGIN PERFORM pg_sleep(3); RETURN false; END \$\$;
   CREATE FUNCTION w624.definer(tool text, input jsonb, run_id bigint) RETURNS boolean
     LANGUAGE sql SECURITY DEFINER AS \$\$ SELECT false \$\$;
   ALTER FUNCTION w624.definer(text, jsonb, bigint) OWNER TO w624_owner;
   CREATE FUNCTION w624.secret(tool text, input jsonb, run_id bigint) RETURNS boolean
     LANGUAGE sql AS \$\$ SELECT tool LIKE 'mcp__%' AND input->>'message' ILIKE '%secret%' \$\$;
   CREATE FUNCTION w624.hidden(tool text, input jsonb, run_id bigint) RETURNS boolean
     LANGUAGE sql AS \$\$ SELECT false \$\$;
   REVOKE EXECUTE ON FUNCTION w624.hidden(text, jsonb, bigint) FROM PUBLIC;" >/dev/null
trap 'llm_stop; kill $pypid 2>/dev/null; wait $pypid 2>/dev/null; rm -rf "$tmp";
      q "DELETE FROM agent.mcp_servers WHERE workspace_id = '"'"'w624'"'"'; DROP SCHEMA IF EXISTS w624 CASCADE; DROP ROLE IF EXISTS w624_owner" >/dev/null 2>&1' EXIT

rule() {  # rule FUNCTION [TOOLS json]
    echo "{\"approval_rules\": [{\"tools\": ${2:-[\"write_resource\"]}, \"function\": \"w624.$1(text, jsonb, bigint)\"}]}"
}
grant() { q "INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES ($1, 'page', 'p624a', 'edit'), ($1, 'page', 'p624b', 'edit')" >/dev/null; }
write_script() {  # write_script KEY BODY
    llm_script "[[$1]]" "[{\"tool\": \"write_resource\", \"input\": {\"resource_type\": \"page\", \"resource_id\": \"p624a\", \"body\": \"$2\"}}, {\"text\": \"finished $1\"}]"
}
pending_step() { q "SELECT output::text FROM agent.run_steps WHERE run_id = $1 AND kind = 'approval' AND status = 'pending'"; }

# a predicate answering false lets the call through, true gates it
a=$(mk_agent "rules624" "$(rule needs_review)" none '[]' 10 w624 owner624); grant "$a"
write_script t624a "a harmless edit"
r=$(start_run "$a" '{"prompt": "Edit [[t624a]]"}' autonomous owner624)
is "$(wait_status "$r" "waiting_approval|succeeded|failed" 30)" "succeeded" "predicate false: the write runs without approval"
is "$(q "SELECT body FROM w624.pages WHERE id = 'p624a'")" "a harmless edit" "and wrote"
is "$(q "SELECT count(*) FROM agent.approvals WHERE run_id = $r")" "0" "no approval asked"
write_script t624b "delete the whole page"
r=$(start_run "$a" '{"prompt": "Edit [[t624b]]"}' autonomous owner624)
is "$(wait_status "$r" "waiting_approval|succeeded|failed" 30)" "waiting_approval" "predicate true: the call waits for approval"
is "$(q "SELECT body FROM w624.pages WHERE id = 'p624a'")" "a harmless edit" "nothing written yet"
is "$(q "SELECT output->>'rule' FROM agent.run_steps WHERE run_id = $r AND kind = 'approval'")" "w624.needs_review(text, jsonb, bigint)" \
   "the request names the rule that asked"
key=$(q "SELECT approval_key FROM agent.approvals WHERE run_id = $r AND status = 'pending'")
q "SELECT agent.approve('$key', 'owner624')" >/dev/null
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "approved, the run resumes"
is "$(q "SELECT body FROM w624.pages WHERE id = 'p624a'")" "delete the whole page" "the approved call wrote once"

# a predicate that raises: needs approval (fail closed); then denied, the run goes on
b=$(mk_agent "raises624" "$(rule raises)" none '[]' 10 w624 owner624); grant "$b"
write_script t624c "tiny"
r=$(start_run "$b" '{"prompt": "Edit [[t624c]]"}' autonomous owner624)
is "$(wait_status "$r" "waiting_approval|succeeded|failed" 30)" "waiting_approval" "a predicate that raises: the call needs approval"
ok "$(q "SELECT output->>'rule_error' LIKE '%review service unreachable%' FROM agent.run_steps WHERE run_id = $r AND kind = 'approval'")" \
   "the request says why: $(pending_step "$r")"
key=$(q "SELECT approval_key FROM agent.approvals WHERE run_id = $r AND status = 'pending'")
q "SELECT agent.deny('$key', 'owner624', NULL, 'no review, no edit')" >/dev/null
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "denied: the run goes on and finishes"
is "$(q "SELECT body FROM w624.pages WHERE id = 'p624a'")" "delete the whole page" "the denied call did not write"
is "$(python3 -c '
import json,sys; rs=[r for r in json.loads(sys.argv[1]) if r["key"]=="[[t624c]]"]
print(len(rs), [json.loads(m["content"]) for m in rs[-1]["body"]["messages"] if m["role"]=="tool"][0])' "$(llm_requests)")" \
   "2 {'error': 'the person declined this call', 'reason': 'no review, no edit'}" "the model heard the refusal and its reason"

# NULL, a time-out, a write, SET ROLE, a non-superuser's SECURITY DEFINER function,
# one the tool role may not execute, one that does not exist: all need approval
n=0
for fn in nulls slow setrole definer hidden missing; do
    n=$((n+1))
    c=$(mk_agent "f${fn}624" "$(rule $fn)" none '[]' 10 w624 owner624); grant "$c"
    write_script "t624f$n" "edit $fn"
    r=$(start_run "$c" "{\"prompt\": \"Edit [[t624f$n]]\"}" autonomous owner624)
    is "$(wait_status "$r" "waiting_approval|succeeded|failed" 30)" "waiting_approval" "predicate $fn: needs approval"
    why=$(q "SELECT output->>'rule_error' FROM agent.run_steps WHERE run_id = $r AND kind = 'approval'")
    case $fn in
        nulls) want="*returned NULL*" ;;
        slow) want="*pg_agents.approval_rule_timeout*" ;;
        setrole) want="*cannot set parameter \"role\"*" ;;
        definer) want="*SECURITY DEFINER*" ;;
        hidden) want="*may not execute*" ;;
        missing) want="*does not exist*" ;;
    esac
    ok "$([[ "$why" == $want ]] && echo 0)" "predicate $fn: the request says why ($why)"
    q "SELECT agent.cancel_run($r, 'owner624')" >/dev/null
done
is "$(q "SELECT body FROM w624.pages WHERE id = 'p624a'")" "delete the whole page" "none of them wrote"

# the predicate runs as agents_tool with the run's identity, and changes nothing
d=$(mk_agent "who624" "$(rule whoami '["search_*"]')" none '[]' 10 w624 owner624); grant "$d"
llm_script "[[t624w]]" '[{"tool": "search_resources", "input": {"query": "one"}}, {"tool": "read_resource", "input": {"resource_type": "page", "resource_id": "p624b"}}, {"text": "seen"}]'
r=$(start_run "$d" '{"prompt": "Look [[t624w]]"}' autonomous owner624)
is "$(wait_status "$r" "waiting_approval|succeeded|failed" 30)" "succeeded" \
   "the predicate saw current_user agents_tool and the run's identity (a pattern covers search_resources; read_resource is not covered)"
e=$(mk_agent "writes624" "$(rule writes)" none '[]' 10 w624 owner624); grant "$e"
write_script t624x "written past a writing predicate"
r=$(start_run "$e" '{"prompt": "Edit [[t624x]]"}' autonomous owner624)
is "$(wait_status "$r" "waiting_approval|succeeded|failed" 30)" "succeeded" "a predicate that writes and answers false: no approval"
is "$(q "SELECT count(*) FROM w624.log")" "0" "its write was rolled back"

# rules add gates, never lift one: approval_mode writes still gates a write the rule lets through
f=$(mk_agent "mode624" "$(rule needs_review)" writes '[]' 10 w624 owner624); grant "$f"
write_script t624m "harmless"
r=$(start_run "$f" '{"prompt": "Edit [[t624m]]"}' autonomous owner624)
is "$(wait_status "$r" "waiting_approval|succeeded|failed" 30)" "waiting_approval" "approval_mode writes still gates the call"
ok "$(q "SELECT NOT (output ? 'rule') FROM agent.run_steps WHERE run_id = $r AND kind = 'approval'")" "and no rule was asked"
q "SELECT agent.cancel_run($r, 'owner624')" >/dev/null

# an MCP tool covered by a pattern: the predicate sees the MCP tool's name and input
q "DELETE FROM agent.mcp_servers WHERE workspace_id = 'w624';
   SELECT agent.mcp_add_server('py624', 'http://127.0.0.1:$(cat "$tmp/py.port")/mcp', workspace_id => 'w624')" >/dev/null
g=$(mk_agent "mcp624" '{"mcp_tools": ["mcp__py624__echo"], "approval_rules": [{"tools": ["mcp__*"], "function": "w624.secret(text, jsonb, bigint)"}]}' none '[]' 10 w624 owner624)
llm_script "[[t624p]]" '[{"tool": "mcp__py624__echo", "input": {"message": "hello 624"}}, {"text": "echoed"}]'
r=$(start_run "$g" '{"prompt": "Echo [[t624p]]"}' autonomous owner624)
is "$(wait_status "$r" "waiting_approval|succeeded|failed" 60)" "succeeded" "an MCP call the predicate lets through runs without approval"
is "$(q "SELECT string_agg(kind || ':' || coalesce(name, '') || ':' || coalesce(status, ''), ',' ORDER BY seq) FROM agent.run_steps WHERE run_id = $r")" \
   "llm:default:ok,tool:mcp__py624__echo:ok,llm:default:ok" "the MCP tool ran, no approval step"
llm_script "[[t624q]]" '[{"tool": "mcp__py624__echo", "input": {"message": "the secret plan"}}, {"text": "echoed"}]'
r=$(start_run "$g" '{"prompt": "Echo [[t624q]]"}' autonomous owner624)
is "$(wait_status "$r" "waiting_approval|succeeded|failed" 60)" "waiting_approval" "an MCP call the predicate flags waits for approval"
is "$(q "SELECT tool FROM agent.approvals WHERE run_id = $r")" "mcp__py624__echo" "for that MCP tool"
q "SELECT agent.cancel_run($r, 'owner624')" >/dev/null
done_testing
