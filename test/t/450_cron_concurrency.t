#!/usr/bin/env bash
# Two ticks at once: FOR UPDATE SKIP LOCKED means the second one skips the
# schedule the first is handling (without waiting for it), and once the first
# commits the slot is gone: one slot, one run.  The periodic work of the other
# modules (dedup cleanup, lease reclaim) is done by one tick at a time, so the
# second tick does not wait for the rows the first one is cleaning up either.
. "$PG_AGENTS_ENV"
echo "1..7"
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
[ "$b" = "0" ] && echo "ok 1 - a concurrent tick skips the locked schedule" || echo "not ok 1 - concurrent tick made $b runs"
[ "$a_open" = "1" ] && echo "ok 2 - and returned while the first tick's transaction was still open" || echo "not ok 2 - the first tick was no longer open ($a_open)"
wait $pid_a
a=$(head -1 "$out_a")
[ "$a" = "1" ] && echo "ok 3 - the first tick queued the run" || echo "not ok 3 - first tick said: $(cat "$out_a")"
n=$(q -c "SELECT count(*) FROM agent.runs WHERE agent_id = 450851")
[ "$n" = "1" ] && echo "ok 4 - one slot, one run" || echo "not ok 4 - $n runs"
b2=$(q -c "SELECT agent.tick('2031-01-01 09:00Z')")
[ "$b2" = "0" ] && echo "ok 5 - a tick after the commit finds nothing due" || echo "not ok 5 - $b2 runs"
nx=$(q -c "SELECT next_run_at = '2031-01-02 09:00Z' FROM agent.triggers WHERE id = 450851")
[ "$nx" = "t" ] && echo "ok 6 - next_run_at advanced once" || echo "not ok 6 - next_run_at: $nx"
d=$(q -c "SELECT count(*) FROM agent.event_dedup WHERE fingerprint = 'e:cron-concurrency'")
[ "$d" = "0" ] && echo "ok 7 - the first tick did the cleanup" || echo "not ok 7 - old fingerprint still there"
rm -f "$out_a"
q -c "DELETE FROM agent.agents WHERE id = 450851" >/dev/null
