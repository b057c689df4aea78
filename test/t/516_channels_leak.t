#!/usr/bin/env bash
# Attack (issue 30, finding 3): a role with no grants LISTENs on every
# channel the extension notifies (enumerated from the source: every
# pg_notify of sql/src/*.sql and src/*.c) while a run of another workspace
# streams its answer, and must receive ids and status codes only: no text of
# the answer, no step names.  The application bound to another workspace
# reads none of the run's text through agent.run_deltas.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
llm_start

OUT=$(mktemp /tmp/pg_agents_516.XXXXXX)
STOP=$OUT.stop
LPID=
cleanup() { touch "$STOP"; [ -n "$LPID" ] && wait "$LPID" 2>/dev/null; llm_stop; rm -f "$OUT" "$STOP"; }
trap cleanup EXIT

q "DROP ROLE IF EXISTS s516_nobody; DROP ROLE IF EXISTS s516_app;
   CREATE ROLE s516_nobody LOGIN; CREATE ROLE s516_app LOGIN IN ROLE agents_app" >/dev/null

# the sources: every C file under src/, and the SQL the install script is made
# of (sql/src and the files it includes: sql/functions, views, tables, types)
mapfile -t srcs < <(find "$root/src" -name '*.c'; find "$root/sql" -name '*.sql' -not -path '*/released/*' -not -path '*/upgrade/*' -not -name 'pg_agents--*')
[ ${#srcs[@]} -gt 50 ] || { echo "Bail out! the sources were not found under $root (${#srcs[@]} files)"; exit 1; }
channels=$(grep -ohE "pg_notify\('[a-z_]+'|Async_Notify\(\"[a-z_]+\"" "${srcs[@]}" | sed -E "s/pg_notify\('//; s/Async_Notify\(\"//; s/['\"]$//" | sort -u)
is "$(echo "$channels" | tr '\n' ' ')" "agent_run_deltas agent_run_steps agent_runs " "the channels the extension notifies, from its source"
is "$(grep -lE "Async_Notify *\( *[^\" ]|^[[:space:]]*NOTIFY[[:space:]]|EXECUTE .NOTIFY " "${srcs[@]}" | wc -l)" "0" \
   "no other way of notifying (Async_Notify of a channel not written out, NOTIFY statements) in the source"

( for c in $channels; do echo "LISTEN $c;"; done
  while [ ! -e "$STOP" ]; do echo "SELECT 1;"; sleep 0.1; done ) |
    psql -XAtq -U s516_nobody >"$OUT" 2>&1 &
LPID=$!
sleep 0.3
is "$(psql -XAtq -U s516_nobody -c "LISTEN agent_run_deltas" -c "SELECT count(*) FROM pg_listening_channels()" 2>&1)" "1" \
   "a role with no grants may LISTEN (channels have no privileges)"

q "ALTER SYSTEM SET pg_agents.llm_stream = on" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null
sleep 0.5

SECRET="the-merger-of-wb-closes-friday"
b=$(mk_agent "wb516" '{"model": "secretmodel516"}' none '[]' 10 wb516 ownerb)
llm_script "[[t516]]" "[{\"text\": \"Confidential: $SECRET and more words to stream\", \"stream_chunk\": 4, \"stream_delay\": 0.01}]"
r=$(start_run "$b" '{"prompt": "tell me [[t516]]"}' autonomous ownerb)
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "a streamed run of workspace wb516"
is "$(q "SELECT position('$SECRET' IN output->>'text') > 0 FROM agent.runs WHERE id = $r")" "t" "its answer holds the secret"
sleep 0.5
touch "$STOP"; wait "$LPID" 2>/dev/null; LPID=

got=$(grep -c "^Asynchronous notification" "$OUT")
ok "$([ "$got" -ge 3 ] && echo 0 || echo 1)" "the role with no grants received the run's notifications ($got)"
is "$(python3 - "$OUT" "$r" "$SECRET" <<'PY'
import json, re, sys
path, run, secret = sys.argv[1], int(sys.argv[2]), sys.argv[3]
codes = {"agent_runs": {"status"}, "agent_run_steps": {"status"}}
bad = []
seen = set()
for line in open(path, encoding="utf-8"):
    m = re.match(r'Asynchronous notification "([a-z_]+)" with payload "(.*)" received from server process', line)
    if not m:
        continue
    ch, raw = m.group(1), m.group(2)
    d = json.loads(raw)
    if d.get("run_id") != run:
        continue
    seen.add(ch)
    if any(w in raw for w in ("Confidential", "merger", "secretmodel516", "llm:", "wb516")):
        bad.append("%s carries content: %s" % (ch, raw[:80]))
    for k, v in d.items():
        if isinstance(v, int) or v is None:
            continue
        if k in codes.get(ch, set()) and isinstance(v, str) and re.fullmatch(r"[a-z_]+", v):
            continue
        bad.append("%s.%s = %r" % (ch, k, v))
print("; ".join(sorted(set(bad))[:5]) or "ids and codes only: " + ",".join(sorted(seen)))
PY
)" "ids and codes only: agent_run_deltas,agent_run_steps,agent_runs" \
   "every payload on every channel holds ids and status codes only, no text of the answer or step names"

# the application bound to another workspace reads none of it
is "$(psql -XAtq -U s516_app -c "SET pg_agents.workspace = 'wa516'" -c "SELECT count(*) FROM agent.run_deltas($r, 'ownerb')" 2>&1)" "0" \
   "agents_app bound to wa516 reads no delta of wb516's run"
is "$(psql -XAtq -U s516_app -c "SET pg_agents.workspace = 'wb516'" -c "SELECT position('$SECRET' IN string_agg(text, '' ORDER BY step, attempt, \"offset\")) > 0 FROM agent.run_deltas($r, 'ownerb')" 2>&1)" "t" \
   "bound to wb516, the run's user reads the streamed text through agent.run_deltas"
is "$(psql -XAtq -U s516_nobody -c "SELECT * FROM agent.run_deltas($r, 'ownerb')" 2>&1 | grep -c 'permission denied')" "1" \
   "a role with no grants cannot call agent.run_deltas"
is "$(psql -XAtq -U s516_nobody -c "SELECT count(*) FROM agent.run_stream_text" 2>&1 | grep -c 'permission denied')" "1" \
   "nor read the table of streamed text"

q "ALTER SYSTEM RESET pg_agents.llm_stream" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null
q "DROP ROLE s516_nobody; DROP ROLE s516_app" >/dev/null
done_testing
