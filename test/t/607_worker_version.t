#!/usr/bin/env bash
# Worker: while the extension installed in its database is not at the
# library's version (the library was upgraded, ALTER EXTENSION ... UPDATE not
# run yet), the worker claims nothing and says why once in the server log;
# once the versions match it picks the queued runs up.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start

current=$(q "SELECT extversion FROM pg_extension WHERE extname = 'pg_agents'")
restore() { psql -XAtq -c "UPDATE pg_extension SET extversion = '$current' WHERE extname = 'pg_agents'" >/dev/null 2>&1; }
trap 'restore; llm_stop' EXIT
log="$PG_AGENTS_DIR/server.log"
lines_before=$(wc -l < "$log")

a=$(mk_agent "version607")
llm_script "[[t607]]" '[{"text": "Versions match again"}]'
# pretend the installed version is an older one
q "UPDATE pg_extension SET extversion = '0.0.1' WHERE extname = 'pg_agents'" >/dev/null
said=1
for _ in $(seq 1 100); do
    if tail -n +"$((lines_before + 1))" "$log" | grep -q "extension pg_agents is at version 0.0.1 in database \"$PGDATABASE\", this library is version $current"; then
        said=0; break
    fi
    sleep 0.1
done
ok "$said" "the worker logs the version mismatch"
ok "$(tail -n +"$((lines_before + 1))" "$log" | grep -q 'HINT:  Run ALTER EXTENSION pg_agents UPDATE' && echo 0 || echo 1)" "with the command to run"
r=$(start_run "$a" '{"prompt": "Hello [[t607]]"}')
sleep 2.5
is "$(q "SELECT status FROM agent.runs WHERE id = $r")" "queued" "a queued run waits while the versions differ"
is "$(tail -n +"$((lines_before + 1))" "$log" | grep -c 'extension pg_agents is at version 0.0.1')" "1" "said once, not at every check"
restore
st=$(wait_status "$r" "succeeded|failed" 30)
is "$st" "succeeded" "once the versions match the run is picked up and succeeds"
done_testing
