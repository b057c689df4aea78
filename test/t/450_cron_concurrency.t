#!/usr/bin/env bash
# Two ticks at once: FOR UPDATE SKIP LOCKED means the second one skips the
# schedule the first is handling (without waiting for it), and once the first
# commits the slot is gone: one slot, one run.  The periodic work of the other
# modules (dedup cleanup, lease reclaim) is done by one tick at a time, so the
# second tick does not wait for the rows the first one is cleaning up either.
. "$PG_AGENTS_ENV"
. "$(dirname "$0")/../fixtures/tap.sh"
plan 7
q() { psql -XAtq -v ON_ERROR_STOP=1 "$@"; }
q -c "DELETE FROM agent.agents WHERE id = 450851; DELETE FROM agent.event_dedup WHERE fingerprint = 'e:cron-concurrency'" >/dev/null
q <<'SQL' >/dev/null
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (450851, 'ws-cron-conc', 'u1', 'concurrent ticks');
INSERT INTO agent.triggers (id, agent_id, kind, schedule, prompt) VALUES (450851, 450851, 'schedule', '0 9 * * *', 'once');
UPDATE agent.triggers SET next_run_at = '2031-01-01 09:00Z' WHERE id = 450851;
-- work for the cleanup: a dedup fingerprint far older than the window
INSERT INTO agent.event_dedup (workspace_id, trigger_id, fingerprint, seen_at)
VALUES ('ws-cron-conc', 450851, 'e:cron-concurrency', now() - interval '1 day');
SQL
out_a=$(mktemp)
# session A: ticks, then holds its transaction open for a while
PGAPPNAME=cron_tick_a q >"$out_a" 2>&1 <<'SQL' &
BEGIN;
SELECT agent.tick('2031-01-01 09:00Z');
SELECT pg_sleep(5);
COMMIT;
SQL
pid_a=$!
# wait until A sleeps inside its transaction
for _ in $(seq 1 100); do
    s=$(q -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'cron_tick_a' AND query LIKE '%pg_sleep%'")
    [ "$s" = "1" ] && break
    sleep 0.1
done
b=$(q -c "SELECT agent.tick('2031-01-01 09:00Z')")
a_open=$(q -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'cron_tick_a' AND state <> 'idle' AND xact_start IS NOT NULL")
is "$b" 0 "a concurrent tick skips the locked schedule"
is "$a_open" 1 "and returned while the first tick's transaction was still open"
wait $pid_a
a=$(head -1 "$out_a")
is "$a" 1 "the first tick queued the run"
[ "$a" = 1 ] || diag "first tick said: $(cat "$out_a")"
n=$(q -c "SELECT count(*) FROM agent.runs WHERE agent_id = 450851")
is "$n" 1 "one slot, one run"
b2=$(q -c "SELECT agent.tick('2031-01-01 09:00Z')")
is "$b2" 0 "a tick after the commit finds nothing due"
nx=$(q -c "SELECT next_run_at = '2031-01-02 09:00Z' FROM agent.triggers WHERE id = 450851")
is "$nx" t "next_run_at advanced once"
d=$(q -c "SELECT count(*) FROM agent.event_dedup WHERE fingerprint = 'e:cron-concurrency'")
is "$d" 0 "the first tick did the cleanup (no old fingerprint left)"
rm -f "$out_a"
q -c "DELETE FROM agent.agents WHERE id = 450851" >/dev/null
done_testing
