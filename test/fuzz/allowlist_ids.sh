#!/usr/bin/env bash
# Fuzz harness: the conversion of granted ids to the id column's type in the
# allowlist policies (src/access/allowlist_cache.c, IdIsInt8 / IdIsUuid), through SQL.
# Random id strings (digits, signs, leading zeros, spaces, letters, 19-20
# digit edges, uuids in every case and shape) are granted to an agent; the
# arrays agent._allowlist_ids_int8 / _uuid / _text return must equal a
# reference written in SQL (the canonical text form of a bigint or a
# lowercase uuid; every id as text).  `short` = 4 rounds of 2000 ids (make
# test), a number = that many rounds, anything else (long) = 200 rounds.
# Uses the cluster of $PG_AGENTS_ENV when set, else starts a throwaway one.
# FUZZ_SEED=n (0..1) replays the first round's seed.
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
rounds=200
[ "${1:-}" = short ] && rounds=4
[[ "${1:-}" =~ ^[0-9]+$ ]] && rounds=$1
own=""
if [ -z "${PG_AGENTS_ENV:-}" ]; then
    PG_AGENTS_ENV=$("$here/tools/cluster.sh" start) || exit 1
    own=$(dirname "$PG_AGENTS_ENV")
fi
# shellcheck disable=SC1090
. "$PG_AGENTS_ENV"
DB=fuzz_ids_$$
psql -XAtq -d postgres -c "CREATE DATABASE $DB" >/dev/null || exit 1
seed=${FUZZ_SEED:-$(awk 'BEGIN { srand(); printf "%.6f", rand() }')}
out=$(psql -XAtq -d "$DB" -v ON_ERROR_STOP=1 -v rounds="$rounds" -v seed="$seed" 2>&1 <<'SQL'
CREATE EXTENSION pg_agents;
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (1, 'ws1', 'u1', 'fuzz agent');
CREATE FUNCTION pg_temp.random_id() RETURNS text LANGUAGE sql VOLATILE AS $f$
  SELECT CASE (random() * 9)::int
    WHEN 0 THEN (floor(random() * 2000000) - 1000000)::bigint::text                       -- plain integers
    WHEN 1 THEN (ARRAY['9223372036854775807', '9223372036854775808', '-9223372036854775808',
                       '-9223372036854775809', '99999999999999999999', '0', '-0', '00', '+1',
                       '1 ', ' 1', '', '-', '1e3', '0x10', '１'])[1 + (random() * 15)::int]
    WHEN 2 THEN lpad('', (random() * 3)::int, '0') || (random() * 1e6)::bigint::text       -- leading zeros
    WHEN 3 THEN gen_random_uuid()::text                                                  -- canonical uuid
    WHEN 4 THEN upper(gen_random_uuid()::text)                                           -- upper case
    WHEN 5 THEN replace(gen_random_uuid()::text, '-', '')                                -- no dashes
    WHEN 6 THEN '{' || gen_random_uuid()::text || '}'
    WHEN 7 THEN (SELECT string_agg(substr('0123456789-+ aF', 1 + (random() * 14)::int, 1), '')
                   FROM generate_series(1, (random() * 21)::int))                      -- noise
    ELSE lpad((floor(random() * 9e18))::bigint::text, 19, '9')                         -- 19 digits
  END
$f$;
CREATE TEMP TABLE result (round int, kind text, bad bigint);
SELECT setseed(:seed) \g /dev/null
SELECT set_config('fuzz.rounds', :'rounds', false) \g /dev/null
DO $$
DECLARE
  r int;
  got_int bigint[]; want_int bigint[];
  got_uuid uuid[]; want_uuid uuid[];
  got_text text[]; want_text text[];
BEGIN
  FOR r IN 1 .. current_setting('fuzz.rounds')::int LOOP
    DELETE FROM agent.access; DELETE FROM agent.resource_acl;
    INSERT INTO agent.access (agent_id, resource_type, resource_id, access)
      SELECT DISTINCT 1, 'page', i, 'read' FROM (SELECT pg_temp.random_id() i FROM generate_series(1, 2000)) s WHERE i <> ''
      ON CONFLICT DO NOTHING;
    INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access)
      SELECT 'page', resource_id, 'user:u1', 'read' FROM agent.access WHERE random() < 0.9;
    PERFORM set_config('pg_agents.actor', 'agent:1', true);
    got_int := agent._allowlist_ids_int8('page', 'read');
    got_uuid := agent._allowlist_ids_uuid('page', 'read');
    got_text := agent._allowlist_ids_text('page', 'read');
    PERFORM set_config('pg_agents.actor', '', true);
    SELECT array_agg(x ORDER BY x) INTO want_text FROM (
      SELECT g.resource_id x FROM agent.access g JOIN agent.resource_acl a USING (resource_type, resource_id)) s;
    SELECT array_agg(x::bigint ORDER BY x::bigint) INTO want_int FROM unnest(want_text) x
     WHERE x ~ '^(0|-?[1-9][0-9]{0,18})$' AND x::numeric BETWEEN -9223372036854775808 AND 9223372036854775807;
    SELECT array_agg(x::uuid ORDER BY x::uuid) INTO want_uuid FROM unnest(want_text) x
     WHERE x ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';
    INSERT INTO result VALUES
      (r, 'int8', (SELECT count(*) FROM ((SELECT unnest(got_int) EXCEPT ALL SELECT unnest(want_int))
                                         UNION ALL (SELECT unnest(want_int) EXCEPT ALL SELECT unnest(got_int))) d)),
      (r, 'uuid', (SELECT count(*) FROM ((SELECT unnest(got_uuid) EXCEPT ALL SELECT unnest(want_uuid))
                                         UNION ALL (SELECT unnest(want_uuid) EXCEPT ALL SELECT unnest(got_uuid))) d)),
      (r, 'text', (SELECT count(*) FROM ((SELECT unnest(got_text) EXCEPT ALL SELECT unnest(want_text))
                                         UNION ALL (SELECT unnest(want_text) EXCEPT ALL SELECT unnest(got_text))) d)),
      (r, 'int8 sorted', CASE WHEN got_int IS NOT DISTINCT FROM (SELECT array_agg(x ORDER BY x) FROM unnest(got_int) x) THEN 0 ELSE 1 END),
      (r, 'ids seen', cardinality(want_int) * 1000000 + cardinality(want_uuid));
  END LOOP;
END $$;
SELECT kind || ' ' || sum(bad) FROM result WHERE kind <> 'ids seen' GROUP BY kind ORDER BY kind;
SELECT 'seen ' || sum(bad / 1000000) || ' integers ' || sum(bad % 1000000) || ' uuids' FROM result WHERE kind = 'ids seen';
SQL
)
rc=$?
psql -XAtq -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1
[ -n "$own" ] && "$here/tools/cluster.sh" stop "$own"
echo "$out" | sed 's/^/  /'
if [ $rc -ne 0 ] || echo "$out" | grep -Eq '^(int8|uuid|text|int8 sorted) [1-9]'; then
    echo "allowlist_ids: FAILED (seed $seed)" >&2
    exit 1
fi
echo "allowlist_ids: $rounds rounds, no difference (seed $seed)"
