#!/usr/bin/env bash
# The kept readable sets under concurrent changes of the agent's own row: one
# session moves the agent through six states, one step per transaction, and
# records the step in a marker table in the same transaction:
#   step % 6 = 0  owner u1, active      pages 1-100 (u1's ACL)
#              1  suspended             nothing
#              2  resumed               pages 1-100 (the kept set restored,
#                                       less those revoked while suspended)
#              3  owner u2              pages 101-200 (u2's ACL: a new set)
#              4  deleted               nothing
#              5  deletion undone       pages 101-200 (restored)
# and, between steps, commits that leave what the set reads of the row as it
# was: the status written as it was, a suspension and resumption in one
# commit, an owner change and its undoing in one commit, an update of one
# grant or an unrelated insert; and while the agent is suspended or deleted,
# one of its pages is revoked (it must stay hidden once the agent is back).  Another session, acting as the agent, reads the
# marker, the table and the marker again in a loop; whenever both markers
# agree the table must show exactly that step's pages (none of the previous
# owner's, none while suspended or deleted).  The writer waits until the
# reader has checked each step, so every step's first statement is checked.
. "$PG_AGENTS_ENV"
set -u
DB=rls_agent_race_$$
wpid=
trap '[ -n "$wpid" ] && kill "$wpid" 2>/dev/null; psql -XAtq -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1' EXIT
. "$(dirname "$0")/../fixtures/tap.sh"
plan 4
STEPS=120
psql -XAtq -d postgres -c "CREATE DATABASE $DB" >/dev/null || { echo "Bail out! cannot create database"; exit 1; }
psql -XAtq -d "$DB" -v ON_ERROR_STOP=1 >/dev/null <<'SQL' || { echo "Bail out! setup failed"; exit 1; }
CREATE EXTENSION pg_agents;
CREATE TABLE public.docs (id bigint PRIMARY KEY, title text NOT NULL);
INSERT INTO public.docs SELECT g, 'doc ' || g FROM generate_series(1, 300) g;
GRANT SELECT ON public.docs TO agents_tool;
CREATE TABLE public.marker (step int NOT NULL);
INSERT INTO public.marker VALUES (0);
GRANT SELECT ON public.marker TO agents_tool;
CREATE TABLE public.ack (step int NOT NULL);
INSERT INTO public.ack VALUES (0);
GRANT SELECT, UPDATE ON public.ack TO agents_tool;
CREATE TABLE public.outcome (checks int, violations int, last_step int);
GRANT SELECT, INSERT ON public.outcome TO agents_tool;
CREATE TABLE public.noise (n int);
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (9, 'ws1', 'u1', 'race agent');
INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access)
  SELECT 'page', g::text, 'user:u1', 'read' FROM generate_series(1, 100) g;
INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access)
  SELECT 'page', g::text, 'user:u2', 'read' FROM generate_series(101, 200) g;
INSERT INTO agent.access (agent_id, resource_type, resource_id, access)
  SELECT 9, 'page', g::text, 'read' FROM generate_series(1, 250) g;
SELECT agent.enable_allowlist('public.docs', 'page', 'id');
CREATE PROCEDURE writer(steps int) LANGUAGE plpgsql AS $$
DECLARE
  a int;
  st text;
  ow text;
  t0 timestamptz;
BEGIN
  FOR k IN 1 .. steps LOOP
    CASE k % 6
    WHEN 0 THEN UPDATE agent.agents SET owner_id = 'u1', updated_at = now() WHERE id = 9;
    WHEN 1 THEN UPDATE agent.agents SET status = 'suspended' WHERE id = 9;
    WHEN 2 THEN UPDATE agent.agents SET status = 'active', name = 'resumed' WHERE id = 9;
    WHEN 3 THEN UPDATE agent.agents SET owner_id = 'u2' WHERE id = 9;
    WHEN 4 THEN UPDATE agent.agents SET deleted_at = now() WHERE id = 9;
    ELSE UPDATE agent.agents SET deleted_at = NULL WHERE id = 9;
    END CASE;
    UPDATE public.marker SET step = k;
    COMMIT;
    -- until the reader has checked step k (at most 20 s)
    t0 := clock_timestamp();
    LOOP
      SELECT step INTO a FROM public.ack;
      EXIT WHEN a >= k OR clock_timestamp() - t0 > interval '20 seconds';
      PERFORM pg_sleep(0.001);
    END LOOP;
    -- commits that leave what the set reads of the agent's row as it was
    SELECT status, owner_id INTO st, ow FROM agent.agents WHERE id = 9;
    UPDATE agent.agents SET status = status, updated_at = now() WHERE id = 9;
    COMMIT;
    PERFORM pg_sleep(0.002);
    UPDATE agent.agents SET status = CASE WHEN st = 'active' THEN 'suspended' ELSE 'active' END WHERE id = 9;
    UPDATE agent.agents SET status = st WHERE id = 9;
    COMMIT;
    PERFORM pg_sleep(0.002);
    UPDATE agent.agents SET owner_id = 'u3' WHERE id = 9;
    UPDATE agent.agents SET owner_id = ow WHERE id = 9;
    COMMIT;
    PERFORM pg_sleep(0.002);
    IF k % 6 = 1 THEN           -- while suspended: one of u1's pages revoked
      DELETE FROM agent.access WHERE agent_id = 9 AND resource_type = 'page' AND resource_id = (k / 6 + 1)::text;
    ELSIF k % 6 = 4 THEN        -- while deleted: one of u2's
      DELETE FROM agent.access WHERE agent_id = 9 AND resource_type = 'page' AND resource_id = (100 + k / 6 + 1)::text;
    ELSIF k % 2 = 0 THEN
      UPDATE agent.access SET access = access WHERE agent_id = 9 AND resource_type = 'page' AND resource_id = '50';
    ELSE
      INSERT INTO public.noise VALUES (k);
    END IF;
    COMMIT;
    PERFORM pg_sleep(0.002);
  END LOOP;
END $$;
-- as the agent: checks each consistent read, acknowledges each new step
CREATE PROCEDURE reader(steps int) LANGUAGE plpgsql AS $$
DECLARE
  m1 int;
  m2 int;
  vis bigint[];
  want bigint[];
  checks int := 0;
  bad int := 0;
  acked int := 0;
  t0 timestamptz := clock_timestamp();
BEGIN
  LOOP
    SELECT step INTO m1 FROM public.marker;
    SELECT array_agg(id ORDER BY id) INTO vis FROM public.docs;
    SELECT step INTO m2 FROM public.marker;
    IF m1 = m2 THEN
      -- less the pages revoked after the steps before (k % 6 = 1: u1's, 4: u2's)
      want := CASE WHEN m1 % 6 IN (0, 2) THEN ARRAY(SELECT generate_series((m1 + 4) / 6 + 1, 100)::bigint)
                   WHEN m1 % 6 IN (3, 5) THEN ARRAY(SELECT generate_series(100 + (m1 + 1) / 6 + 1, 200)::bigint) END;
      checks := checks + 1;
      IF vis IS DISTINCT FROM want THEN
        bad := bad + 1;
        RAISE WARNING 'step %: % pages visible, from % to %', m1, cardinality(vis), vis[1], vis[cardinality(vis)];
      END IF;
      IF m1 > acked THEN
        acked := m1;
        UPDATE public.ack SET step = m1;
        COMMIT;
      END IF;
    END IF;
    EXIT WHEN acked >= steps OR clock_timestamp() - t0 > interval '300 seconds';
  END LOOP;
  INSERT INTO public.outcome VALUES (checks, bad, acked);
  COMMIT;
END $$;
SQL

psql -XAtq -d "$DB" -c "CALL writer($STEPS)" >/dev/null 2>&1 &
wpid=$!
result=$(psql -XAtq -d "$DB" -v ON_ERROR_STOP=1 2>&1 <<SQL
SET ROLE agents_tool;
SET pg_agents.actor = 'agent:9';
CALL reader($STEPS);
SELECT checks || ' ' || violations || ' ' || last_step FROM public.outcome;
SELECT computed || ' ' || reused FROM agent.readable_set_stats();
SQL
)
wait $wpid
wpid=
echo "$result" | grep -i 'warning\|error' | head -5 | sed 's/^/# /'
read -r checks bad last <<<"$(echo "$result" | grep -v -i 'warning\|error' | sed -n 1p)"
read -r computed reused <<<"$(echo "$result" | grep -v -i 'warning\|error' | sed -n 2p)"
echo "# $checks checks, $bad violations, last step $last; sets computed $computed, reused $reused"
[ "${last:-0}" = "$STEPS" ]; ok $? "the reader checked every step of the writer"
[ "${checks:-0}" -gt "$STEPS" ]; ok $? "and read between the steps too ($checks checks)"
[ "${bad:-1}" = 0 ]; ok $? "no statement saw a page the agent's row no longer allowed, or missed one it allowed"
[ "${reused:-0}" -gt 0 ]; ok $? "kept sets were reused across commits that left the agent's row as it was ($reused reused, $computed computed)"
done_testing
