#!/usr/bin/env bash
# Upgrade path: every released version installs, and ALTER EXTENSION pg_agents
# UPDATE brings it to exactly what a fresh CREATE EXTENSION of the current
# version creates (functions with their bodies, settings and privileges,
# tables with their columns, defaults, constraints, indexes, triggers,
# policies, comments, views, event triggers and pg_dump configuration), with
# the data kept and the allowlist policies of application tables re-expressed.
. "$PG_AGENTS_ENV"
set -u
work=$(mktemp -d)
dbs=()
trap 'for d in "${dbs[@]}"; do psql -XAtq -d postgres -c "DROP DATABASE IF EXISTS $d" >/dev/null 2>&1; done; rm -rf "$work"' EXIT
. "$(dirname "$0")/../fixtures/tap.sh"

ext_dir="$(pg_config --sharedir)/extension"
current=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$ext_dir/pg_agents.control")
mapfile -t released < <(ls "$ext_dir" | sed -n 's/^pg_agents--\([0-9.]*\)\.sql$/\1/p' | grep -vx "$current" | sort -V)
plan $(( 2 + 7 * ${#released[@]} ))

# A canonical text description of everything the extension owns.
describe() {
    psql -XAtq -d "$1" -v ON_ERROR_STOP=1 <<'SQL'
WITH m AS (
  SELECT d.classid, d.objid FROM pg_depend d
   WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
     AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_agents')),
-- the partitions of agent.audit_log depend on the months of its rows: each
-- is described by its shape below, the same for all of them
rels AS (SELECT c.* FROM pg_class c JOIN m ON m.classid = 'pg_class'::regclass AND m.objid = c.oid
          WHERE NOT c.relispartition),
-- their row types and array types too (members of the extension from
-- PostgreSQL 17 on)
parttypes AS (SELECT t.oid FROM pg_type t JOIN pg_class c ON c.oid = t.typrelid WHERE c.relispartition
              UNION ALL
              SELECT a.oid FROM pg_type a JOIN pg_type t ON t.oid = a.typelem JOIN pg_class c ON c.oid = t.typrelid
               WHERE c.relispartition)
SELECT line FROM (
  SELECT 'function ' || p.oid::regprocedure || E'\n' || pg_get_functiondef(p.oid)
         || E'\nacl ' || coalesce(p.proacl::text, '-') || E'\ncomment ' || coalesce(obj_description(p.oid, 'pg_proc'), '-') AS line
    FROM pg_proc p JOIN m ON m.classid = 'pg_proc'::regclass AND m.objid = p.oid
   WHERE p.prokind <> 'a'
  UNION ALL
  SELECT 'aggregate ' || p.oid::regprocedure FROM pg_proc p JOIN m ON m.classid = 'pg_proc'::regclass AND m.objid = p.oid
   WHERE p.prokind = 'a'
  UNION ALL
  SELECT 'relation ' || c.oid::regclass || ' kind ' || c.relkind::text || ' rls ' || c.relrowsecurity || '/' || c.relforcerowsecurity
         || ' acl ' || coalesce(c.relacl::text, '-') || ' comment ' || coalesce(obj_description(c.oid, 'pg_class'), '-')
    FROM rels c
  UNION ALL
  SELECT 'column ' || c.oid::regclass || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
         || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
         || coalesce(' default ' || pg_get_expr(ad.adbin, ad.adrelid), '')
         || CASE WHEN a.attgenerated <> '' THEN ' generated ' || a.attgenerated::text ELSE '' END
         || CASE WHEN a.attidentity <> '' THEN ' identity ' || a.attidentity::text ELSE '' END
         || ' comment ' || coalesce(col_description(c.oid, a.attnum), '-')
    FROM rels c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
    LEFT JOIN pg_attrdef ad ON ad.adrelid = c.oid AND ad.adnum = a.attnum
  UNION ALL
  SELECT 'view ' || c.oid::regclass || E'\n' || pg_get_viewdef(c.oid) FROM rels c WHERE c.relkind IN ('v', 'm')
  UNION ALL
  SELECT 'index ' || regexp_replace(pg_get_indexdef(i.indexrelid), 'INDEX \S+ ON', 'INDEX ON')
         || ' name ' || i.indexrelid::regclass
    FROM rels c JOIN pg_index i ON i.indrelid = c.oid
  UNION ALL
  SELECT 'constraint ' || co.conrelid::regclass || ' ' || co.conname || ' ' || pg_get_constraintdef(co.oid)
    FROM rels c JOIN pg_constraint co ON co.conrelid = c.oid
  UNION ALL
  SELECT 'trigger ' || pg_get_triggerdef(t.oid) || ' enabled ' || t.tgenabled::text
    FROM rels c JOIN pg_trigger t ON t.tgrelid = c.oid AND NOT t.tgisinternal
  UNION ALL
  SELECT 'policy ' || po.polrelid::regclass || ' ' || po.polname || ' ' || po.polcmd::text || ' ' || po.polpermissive::text
         || ' roles ' || po.polroles::text || ' using ' || coalesce(pg_get_expr(po.polqual, po.polrelid), '-')
         || ' check ' || coalesce(pg_get_expr(po.polwithcheck, po.polrelid), '-')
    FROM rels c JOIN pg_policy po ON po.polrelid = c.oid
  UNION ALL
  SELECT 'type ' || t.oid::regtype FROM pg_type t JOIN m ON m.classid = 'pg_type'::regclass AND m.objid = t.oid
   WHERE t.oid NOT IN (SELECT oid FROM parttypes)
  UNION ALL
  SELECT 'event trigger ' || e.evtname || ' ' || e.evtevent || ' ' || e.evtfoid::regproc || ' ' || e.evtenabled::text
    FROM pg_event_trigger e JOIN m ON m.classid = 'pg_event_trigger'::regclass AND m.objid = e.oid
  UNION ALL
  SELECT 'schema ' || n.nspname || ' acl ' || coalesce(n.nspacl::text, '-')
    FROM pg_namespace n WHERE n.nspname = 'agent'
  UNION ALL
  SELECT 'dumped ' || c::regclass || ' ' || coalesce(cond, '')
    FROM pg_extension x, unnest(x.extconfig, x.extcondition) AS u(c, cond) WHERE x.extname = 'pg_agents'
     AND NOT EXISTS (SELECT 1 FROM pg_class p WHERE p.oid = u.c AND p.relispartition)
  UNION ALL
  -- the partitions of the log (as many as its months): each marked, unfiltered
  SELECT 'dumped every audit partition ' || bool_and(coalesce(x.extcondition[array_position(x.extconfig, i.inhrelid)] = '', false))
    FROM pg_inherits i, pg_extension x
   WHERE i.inhparent = 'agent.audit_log'::regclass AND x.extname = 'pg_agents'
  UNION ALL
  SELECT 'member ' || pg_describe_object(m.classid, m.objid, 0) FROM m
   WHERE NOT EXISTS (SELECT 1 FROM pg_class c WHERE m.classid = 'pg_class'::regclass AND c.oid = m.objid AND c.relispartition)
     AND NOT (m.classid = 'pg_type'::regclass AND m.objid IN (SELECT oid FROM parttypes))
  UNION ALL
  SELECT DISTINCT 'audit partition ' || p.shape FROM (
    SELECT c.oid, (CASE WHEN c.relname = 'audit_log_default' THEN 'default ' ELSE 'monthly ' END)
           || 'member ' || EXISTS (SELECT 1 FROM m WHERE m.objid = c.oid)
           || ' rls ' || c.relrowsecurity || ' acl ' || coalesce(c.relacl::text, '-')
           || ' triggers ' || (SELECT string_agg(t.tgname || '/' || t.tgenabled::text, ',' ORDER BY t.tgname)
                                 FROM pg_trigger t WHERE t.tgrelid = c.oid AND NOT t.tgisinternal)
           || ' indexes ' || (SELECT string_agg(regexp_replace(pg_get_indexdef(i.indexrelid), '^.* USING ', ''), ','
                                                ORDER BY regexp_replace(pg_get_indexdef(i.indexrelid), '^.* USING ', '') COLLATE "C")
                                FROM pg_index i WHERE i.indrelid = c.oid) AS shape
      FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
     WHERE h.inhparent = 'agent.audit_log'::regclass) p
) s ORDER BY line COLLATE "C";
SQL
}

new_db() { local d="upg_$1_$$"; psql -XAtq -d postgres -c "CREATE DATABASE $d" >/dev/null && dbs+=("$d") && echo "$d"; }

fresh=$(new_db fresh)
psql -XAtq -d "$fresh" -v ON_ERROR_STOP=1 -c "CREATE EXTENSION pg_agents" >/dev/null
ok $? "CREATE EXTENSION pg_agents installs $current"
describe "$fresh" > "$work/fresh.txt"
[ -s "$work/fresh.txt" ]; ok $? "the fresh install describes itself ($(grep -c '^function ' "$work/fresh.txt") functions, $(grep -c '^relation ' "$work/fresh.txt") relations)"

for v in "${released[@]}"; do
    db=$(new_db "${v//./_}")
    psql -XAtq -d "$db" -v ON_ERROR_STOP=1 >/dev/null 2>"$work/err" <<SQL
CREATE EXTENSION pg_agents VERSION '$v';
CREATE TABLE public.pages (id bigint PRIMARY KEY, title text NOT NULL, body text NOT NULL);
INSERT INTO public.pages SELECT g, 'page ' || g, 'body ' || g FROM generate_series(1, 20) g;
GRANT SELECT ON public.pages TO agents_tool;
CREATE TABLE public.notes (id text PRIMARY KEY, body text NOT NULL);
INSERT INTO public.notes VALUES ('n1', 'one'), ('n2', 'two');
GRANT SELECT ON public.notes TO agents_tool;
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (1, 'ws1', 'u1', 'upgrade agent');
INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access)
  SELECT 'page', g::text, 'user:u1', 'read' FROM generate_series(1, 20) g;
INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access) VALUES ('collection', 'n2', 'user:u1', 'read');
INSERT INTO agent.access (agent_id, resource_type, resource_id, access)
  SELECT 1, 'page', g::text, 'read' FROM generate_series(1, 20, 5) g;
INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES (1, 'collection', 'n2', 'read');
SELECT agent.enable_allowlist('public.pages', 'page', 'id');
SELECT agent.enable_allowlist('public.notes', 'collection', 'id');
-- audit rows of this month and of an earlier one (written by hand: the
-- upgrade moves them into the partitioned log)
INSERT INTO agent.audit_log (at, actor_kind, action, workspace_id, summary, changes)
VALUES (now() - interval '70 days', 'system', 'upgrade.old', 'ws1', 'an old row', '{"k": 1}'),
       (now() - interval '400 days', 'human', 'upgrade.older', 'ws2', 'an older row', NULL);
SQL
    rc=$?; ok $rc "$v installs, with two allowlisted tables"; [ $rc = 0 ] || sed "s/^/# /" "$work/err"
    before=$(psql -XAtq -d "$db" -c "SELECT count(*) FROM agent.access" -c "SELECT count(*) FROM agent.resource_acl" | paste -sd/)
    audit_q="SELECT count(*) || ' ' || md5(string_agg(l::text, '|' ORDER BY id)) FROM agent.audit_log l WHERE id <= \$max"
    audit_max=$(psql -XAtq -d "$db" -c "SELECT max(id) FROM agent.audit_log")
    audit_before=$(psql -XAtq -d "$db" -c "${audit_q//\$max/$audit_max}")
    psql -XAtq -d "$db" -v ON_ERROR_STOP=1 -c "ALTER EXTENSION pg_agents UPDATE" >/dev/null 2>"$work/err"
    rc=$?; ok $rc "ALTER EXTENSION pg_agents UPDATE from $v"; [ $rc = 0 ] || sed 's/^/# /' "$work/err"
    got=$(psql -XAtq -d "$db" -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_agents'")
    [ "$got" = "$current" ]; ok $? "$v is now $current (got $got)"
    describe "$db" > "$work/upgraded.txt"
    diff -u "$work/fresh.txt" "$work/upgraded.txt" > "$work/diff" 2>&1
    rc=$?; ok $rc "$v upgraded is identical to a fresh $current"; [ $rc = 0 ] || head -60 "$work/diff" | sed 's/^/# /'
    after=$(psql -XAtq -d "$db" -c "SELECT count(*) FROM agent.access" -c "SELECT count(*) FROM agent.resource_acl" | paste -sd/)
    [ "$after" = "$before" ]; ok $? "the data is kept ($after)"
    audit_after=$(psql -XAtq -d "$db" -c "${audit_q//\$max/$audit_max}")
    next_id=$(psql -XAtq -d "$db" -c "SELECT agent.set_identity('system')" -c "SELECT agent._audit_event('upgrade.check')" \
        -c "SELECT max(id) > $audit_max FROM agent.audit_log WHERE action = 'upgrade.check'" | tail -1)
    [ "$audit_after" = "$audit_before" ] && [ "${audit_before%% *}" -ge 2 ] && [ "$next_id" = t ]
    ok $? "the audit rows are kept in the partitioned log, identical, and ids go on after them (${audit_before%% *} rows: $audit_after)"
    seen=$(psql -XAtq -d "$db" -c "SET ROLE agents_tool" -c "SET pg_agents.actor = 'agent:1'" \
        -c "SELECT (SELECT string_agg(id::text, ',' ORDER BY id) FROM public.pages) || ' ' || (SELECT string_agg(id, ',') FROM public.notes)" 2>&1)
    pol=$(psql -XAtq -d "$db" -c "SELECT count(*) FROM pg_policy WHERE polname LIKE 'pg_agents_allowlist_%' AND pg_get_expr(coalesce(polqual, polwithcheck), polrelid) LIKE '%agent._allowlist_has(%'")
    [ "$seen" = "1,6,11,16 n2" ] && [ "$pol" = 8 ]
    ok $? "the allowlist policies take the new shape and still filter (saw '$seen', $pol policies re-expressed)"
done
done_testing
