#!/usr/bin/env bash
# Attack (issue 30, finding 7): a role with no grants reads from pg_locks the
# advisory locks the extension takes while fire_event (the hourly cap),
# claim_runs (under pg_agents.max_runs_per_workspace), tick and the
# assistant (generate_draft of a new workspace) run, and then holds every
# such key, together with the keys the 0.3 source computes
# (hashtext('pg_agents.cap'), hashtext(agent id)) and so on: the same calls
# must still complete (each under a statement_timeout, so that a stalled one
# fails the test instead of hanging it).  The extension takes no advisory
# lock at all, and its own locks (rows of agent.locks) are out of reach of
# the role with no grants and of the application.
. "$PG_AGENTS_ENV"
. "$(dirname "$0")/../fixtures/tap.sh"
export PGOPTIONS="-c client_min_messages=warning"
q() { psql -XAtq -v ON_ERROR_STOP=1 "$@"; }
plan 16

tmp=$(mktemp -d /tmp/pg_agents_517.XXXXXX)
STOP=$tmp/stop
HPID=
cleanup() {
    touch "$STOP"; [ -n "$HPID" ] && wait "$HPID" 2>/dev/null
    q -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'l517_%'" >/dev/null 2>&1
    rm -rf "$tmp"
}
trap cleanup EXIT

q >/dev/null <<'SQL'
DELETE FROM agent.agents WHERE id IN (517001, 517002) OR workspace_id IN ('wc517', 'wd517');
DELETE FROM agent.assistants WHERE workspace_id IN ('wc517', 'wd517');
DROP ROLE IF EXISTS l517_nobody; DROP ROLE IF EXISTS l517_app;
CREATE ROLE l517_nobody LOGIN;
CREATE ROLE l517_app LOGIN IN ROLE agents_app;
INSERT INTO agent.agents (id, workspace_id, owner_id, name, hourly_run_cap) VALUES
  (517001, 'wa517', 'ua', 'locks a', 100000), (517002, 'wb517', 'ub', 'locks b', 100000);
INSERT INTO agent.triggers (agent_id, kind, event_name, resource_type) VALUES
  (517001, 'event', 'locks517.fired', 'collection'), (517002, 'event', 'locks517.fired', 'collection');
INSERT INTO agent.triggers (id, agent_id, kind, schedule, prompt) VALUES
  (517001, 517001, 'schedule', '0 9 * * *', 'daily a'), (517002, 517002, 'schedule', '0 9 * * *', 'daily b');
UPDATE agent.triggers SET next_run_at = '2032-01-01 09:00Z' WHERE id IN (517001, 517002);
SQL

# the calls, as their callers make them: the application fires events and
# asks for drafts (bound to its workspace), the worker (a superuser) claims
# and ticks; $1 is a number making each call new
call() {
    case $1 in
        fire_event) echo "SET pg_agents.workspace = 'wa517';
                          SELECT count(*) FROM agent.fire_event('locks517.fired', 'collection', 'c517', '{}', 'user:ua', 'e517-$2');" ;;
        claim_runs) echo "SET pg_agents.max_runs_per_workspace = 100; SET pg_agents.workspace = 'wa517';
                          SELECT count(*) >= 0 FROM agent.claim_runs(5);" ;;
        tick)       echo "SELECT agent.tick('2032-01-0$2 09:00Z');" ;;
        assistant)  echo "SET pg_agents.workspace = '$3';
                          SELECT agent.generate_draft('triage the tickets', 'ua', '$3') IS NOT NULL;" ;;
    esac
}
role() { case $1 in fire_event|assistant) echo l517_app ;; *) echo postgres ;; esac; }

# 1. the keys: each call in a transaction left open, and the role with no
#    grants reading pg_locks meanwhile
: >"$tmp/keys"
for c in fire_event claim_runs tick assistant; do
    ( echo "BEGIN;"; call $c 1 wc517; echo "SELECT 'ready517';"
      while [ ! -e "$tmp/stop_$c" ]; do sleep 0.05; done; echo "COMMIT;" ) |
        PGAPPNAME=l517_rec_$c psql -XAtq -U "$(role $c)" >"$tmp/rec_$c" 2>&1 &
    rpid=$!
    pid=
    for _ in $(seq 1 400); do
        pid=$(q -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'l517_rec_$c'
                     AND state = 'idle in transaction' AND query LIKE '%ready517%'")
        [ -n "$pid" ] && break
        sleep 0.05
    done
    [ -n "$pid" ] || diag "$c never got ready: $(cat "$tmp/rec_$c")"
    psql -XAtq -U l517_nobody -c "SELECT '$c ' || classid || ' ' || objid || ' ' || objsubid FROM pg_locks
                                  WHERE locktype = 'advisory' AND pid = ${pid:-0}" >>"$tmp/keys" 2>&1
    touch "$tmp/stop_$c"; wait "$rpid"
done
is "$(cat "$tmp"/rec_* | grep -c ready517)" "4" \
   "fire_event, claim_runs, tick and the assistant ran in an open transaction each"
is "$(sort "$tmp/keys" | tr '\n' ';')" "" \
   "while they ran, pg_locks showed the role with no grants no advisory lock of theirs"
[ -s "$tmp/keys" ] && diag "keys seen: $(sort "$tmp/keys" | tr '\n' ';')"

# 2. the role with no grants holds every key seen, and those the 0.3 source
#    takes (the cap of both agents, claim, tick, the next workspace's assistant)
# (pg_locks shows a key pair as classid, objid and objsubid 2, a bigint key
# as its two halves and objsubid 1)
keys=$(awk '{ k1 = $2; k2 = $3; if (k1 >= 2147483648) k1 -= 4294967296; if (k2 >= 2147483648) k2 -= 4294967296;
              if ($4 == 2) printf "(%d, %d, false),", k1, k2; else printf "(%d, %d, true),", $2, $3 }' "$tmp/keys")
keys="$keys(hashtext('pg_agents.cap'), hashtext('517001'), false), (hashtext('pg_agents.cap'), hashtext('517002'), false),
      (hashtext('pg_agents.claim'), 0, false), (hashtext('pg_agents.tick'), 0, false),
      (hashtext('pg_agents.assistant'), hashtext('wd517'), false)"
distinct="SELECT DISTINCT k1::bigint AS k1, k2::bigint AS k2, one FROM (VALUES $keys) v(k1, k2, one)"
( echo "SELECT CASE WHEN one THEN pg_advisory_lock((k1 << 32) | k2) ELSE pg_advisory_lock(k1::int, k2::int) END FROM ($distinct) d;"
  while [ ! -e "$STOP" ]; do echo "SELECT 1;"; sleep 0.2; done ) |
    PGAPPNAME=l517_holder psql -XAtq -U l517_nobody >"$tmp/holder" 2>&1 &
HPID=$!
want=$(q -c "SELECT count(*) FROM ($distinct) d")
held=
for _ in $(seq 1 200); do
    held=$(q -c "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                  WHERE a.application_name = 'l517_holder' AND l.locktype = 'advisory' AND l.granted")
    [ "$held" = "$want" ] && break
    sleep 0.05
done
is "$held" "$want" "the role with no grants holds all $want advisory keys (pg_advisory_lock is PUBLIC)"

# a fingerprint far older than the dedup window: work for the tick's cleanup
q -c "INSERT INTO agent.event_dedup (workspace_id, trigger_id, fingerprint, seen_at)
      SELECT workspace_id, id, 'e:l517-old', now() - interval '2 days' FROM agent.triggers WHERE id = 517001" >/dev/null

victim() {  # call, n, workspace -> its output (an error: the statement timed out)
    call "$1" "$2" "$3" | PGAPPNAME=l517_victim PGOPTIONS="$PGOPTIONS -c statement_timeout=5s" \
        psql -XAtq -U "$(role "$1")" 2>&1 | tr '\n' ' ' | sed 's/ $//'
}
is "$(victim fire_event 2)" "1" "fire_event queues its run (the hourly cap is counted) while the keys are held"
is "$(victim claim_runs 2)" "t" "claim_runs with max_runs_per_workspace claims while the keys are held"
is "$(victim tick 2)" "2" "tick queues the two due schedules (both agents' caps) while the keys are held"
is "$(q -c "SELECT count(*) FROM agent.event_dedup WHERE fingerprint = 'e:l517-old'")" "0" \
   "and did its periodic work (the old fingerprint was cleaned up), not skipped it"
is "$(victim assistant 2 wd517)" "t" "generate_draft creates a new workspace's assistant while the keys are held"
is "$(q -c "SELECT count(*) FROM agent.assistants WHERE workspace_id = 'wd517'")" "1" "one assistant for that workspace"
touch "$STOP"; wait "$HPID"; HPID=

# 3. the locks the extension takes instead: rows of agent.locks, which no
#    role but its owner may lock
is "$(q -c "SELECT string_agg(purpose || ':' || key, ' ' ORDER BY purpose, key) FROM agent.locks
             WHERE purpose IN ('claim', 'tick') OR key IN ('517001', '517002', 'wc517', 'wd517')")" \
   "assistant:wc517 assistant:wd517 cap:517001 cap:517002 claim: tick: tick:run_rollup" \
   "the calls locked rows of agent.locks: the cap of each agent, claim, tick, the tick's run_stats rollup fold, each workspace's assistant"
for r in l517_nobody l517_app; do
    is "$(psql -XAtq -U $r -c "SET pg_agents.workspace = 'wa517'" -c "BEGIN" \
              -c "SELECT 1 FROM agent.locks WHERE purpose = 'cap' AND key = '517001' FOR UPDATE" 2>&1 | grep -c 'permission denied')" "1" \
       "$r cannot lock a row of agent.locks (SELECT ... FOR UPDATE)"
    is "$(psql -XAtq -U $r -c "BEGIN" -c "LOCK TABLE agent.locks IN ACCESS SHARE MODE" 2>&1 | grep -c 'permission denied')" "1" \
       "$r cannot lock the table"
done
is "$(q -c "SELECT count(*) FROM pg_proc p WHERE p.pronamespace = 'agent'::regnamespace
             AND p.prosrc ~* 'pg_(try_)?advisory_'")" "0" "no function of schema agent takes an advisory lock (calls pg_advisory_* or pg_try_advisory_*)"
# every C file, in every folder of src/ (none found: the check fails)
mapfile -t c_files < <(find "$(dirname "$0")/../../src" -name '*.c' | sort)
if [ ${#c_files[@]} -gt 0 ]; then
    locks=$(grep -hcE '[Aa]dvisory|(^|[^A-Za-z])LockAcquire|LOCKTAG' "${c_files[@]}" | awk '{ s += $1 } END { print s + 0 }')
else
    locks="no C file found under src/"
fi
is "$locks" "0" \
   "nor does the C code (no advisory locks, no lock tags of its own)"

q >/dev/null <<'SQL'
DELETE FROM agent.agents WHERE id IN (517001, 517002) OR workspace_id IN ('wc517', 'wd517');
DELETE FROM agent.assistants WHERE workspace_id IN ('wc517', 'wd517');
DROP ROLE l517_nobody; DROP ROLE l517_app;
SQL
q -c "DELETE FROM agent.locks WHERE key IN ('517001', '517002', 'wc517', 'wd517')" >/dev/null 2>&1
done_testing
