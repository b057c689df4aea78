# Issue 35, item 4: access decisions through the coordinator (docs/scaling.md,
# "The lab"): the figures (many decisions in one statement; one decision per
# statement), and that nothing decided is kept past what a single node would
# see: a revoke committed by another session (its rows on the worker that
# holds the workspace) is seen by the reader's very next statement, inside
# its open transaction too; another workspace's change does not disturb it.
# Sourced by tools/citus_lab.sh (check, step, psqlc, as_app, bindir, ports,
# DB, lab).

d30_acme=$(psqlc -c "SELECT min(id) FROM agent.agents WHERE workspace_id = 'acme'")
d30_initech=$(psqlc -c "SELECT min(id) FROM agent.agents WHERE workspace_id = 'initech'")
d30_psql() { "$bindir/psql" -X -At -q -h 127.0.0.1 -p "${ports[0]}" -U app -d "$DB" -v ON_ERROR_STOP=1 "$@"; }

# 20 pages per workspace the owners may edit; grants on the first 10 (read)
psqlc -v ON_ERROR_STOP=1 -c "INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access)
    SELECT w, 'page', 'd30-' || i, u, 'edit'
      FROM generate_series(1, 20) i, (VALUES ('acme', 'user:alice'), ('initech', 'user:peter')) AS v(w, u)" >/dev/null
as_app -v ON_ERROR_STOP=1 -c "BEGIN" -c "SET LOCAL pg_agents.workspace = 'acme'" \
    -c "SELECT count(agent.grant($d30_acme, 'page', 'd30-' || i, 'read', 'alice')) FROM generate_series(1, 10) i" \
    -c "COMMIT" >/dev/null
as_app -v ON_ERROR_STOP=1 -c "BEGIN" -c "SET LOCAL pg_agents.workspace = 'initech'" \
    -c "SELECT count(agent.grant($d30_initech, 'page', 'd30-' || i, 'read', 'peter')) FROM generate_series(1, 10) i" \
    -c "COMMIT" >/dev/null

# what another session runs between two statements of the reader (psql \!)
d30_other() {  # d30_other NAME WORKSPACE SQL: a file for "\! psql -f FILE"
    printf "BEGIN;\nSET LOCAL pg_agents.workspace = '%s';\nSET LOCAL pg_agents.actor = 'user:%s';\n%s;\nCOMMIT;\n" \
        "$2" "$([ "$2" = acme ] && echo alice || echo peter)" "$3" >"$lab/d30_$1.sql"
    echo "\\! \"$bindir/psql\" -X -At -q -h 127.0.0.1 -p ${ports[0]} -U app -d $DB -v ON_ERROR_STOP=1 -f $lab/d30_$1.sql >/dev/null"
}

check "decisions: one statement over 20 pages (10 granted), 400 checks: the granted ones" "200" \
    d30_psql -c "BEGIN" -c "SET LOCAL pg_agents.workspace = 'acme'" \
        -c "SELECT count(*) FILTER (WHERE agent.can_access($d30_acme, 'page', 'd30-' || (i % 20 + 1))) FROM generate_series(0, 399) i" \
        -c "COMMIT"

check "decisions: a revoke by another session (DELETE as the app) is seen by the next statement of an open transaction, a grant again too" \
    "$(printf 't\nf\nt')" \
    d30_psql -c "BEGIN" -c "SET LOCAL pg_agents.workspace = 'acme'" \
        -c "SELECT agent.can_access($d30_acme, 'page', 'd30-1')" \
        -c "$(d30_other revoke acme "DELETE FROM agent.access WHERE agent_id = $d30_acme AND resource_type = 'page' AND resource_id = 'd30-1'")" \
        -c "SELECT agent.can_access($d30_acme, 'page', 'd30-1')" \
        -c "$(d30_other regrant acme "SELECT agent.grant($d30_acme, 'page', 'd30-1', 'read', 'alice')")" \
        -c "SELECT agent.can_access($d30_acme, 'page', 'd30-1')" \
        -c "COMMIT"

check "decisions: a revoke by another session is seen by the next autocommit statement" "$(printf 't\nf')" \
    d30_psql -c "SET pg_agents.workspace = 'acme'" \
        -c "SELECT agent.can_access($d30_acme, 'page', 'd30-2')" \
        -c "$(d30_other revoke2 acme "DELETE FROM agent.access WHERE agent_id = $d30_acme AND resource_type = 'page' AND resource_id = 'd30-2'")" \
        -c "SELECT agent.can_access($d30_acme, 'page', 'd30-2')"

# (in its own transaction: a decision after the application's own write in
# the same transaction is what Citus refuses, issue 35 item 2)
check "decisions: the session's own revoke is seen by its next statement" "$(printf 't\nf')" \
    d30_psql -c "SET pg_agents.workspace = 'acme'" \
        -c "SELECT agent.can_access($d30_acme, 'page', 'd30-3')" \
        -c "BEGIN" -c "SET LOCAL pg_agents.workspace = 'acme'" -c "SET LOCAL pg_agents.actor = 'user:alice'" \
        -c "DELETE FROM agent.access WHERE agent_id = $d30_acme AND resource_type = 'page' AND resource_id = 'd30-3'" \
        -c "COMMIT" \
        -c "SELECT agent.can_access($d30_acme, 'page', 'd30-3')"

check "decisions: a revoke inside a function is seen by its next statement (rolled back)" \
    "$(printf 'NOTICE:  before t\nNOTICE:  after f')" \
    d30_psql -c "BEGIN" -c "SET LOCAL pg_agents.workspace = 'acme'" -c "SET LOCAL pg_agents.actor = 'user:alice'" \
        -c "DO \$\$ BEGIN RAISE NOTICE 'before %', agent.can_access($d30_acme, 'page', 'd30-6');
                   PERFORM agent.revoke($d30_acme, 'page', 'd30-6', 'alice');
                   RAISE NOTICE 'after %', agent.can_access($d30_acme, 'page', 'd30-6'); END \$\$" \
        -c "ROLLBACK"

check "decisions: another workspace's revoke does not disturb them (acme stays granted, initech's is seen)" \
    "$(printf 't\nt\nf')" \
    d30_psql -c "BEGIN" -c "SET LOCAL pg_agents.workspace = 'acme'" \
        -c "SELECT agent.can_access($d30_acme, 'page', 'd30-4')" \
        -c "$(d30_other initech initech "DELETE FROM agent.access WHERE agent_id = $d30_initech AND resource_type = 'page' AND resource_id = 'd30-4'")" \
        -c "SELECT agent.can_access($d30_acme, 'page', 'd30-4')" \
        -c "COMMIT" -c "BEGIN" -c "SET LOCAL pg_agents.workspace = 'initech'" \
        -c "SELECT agent.can_access($d30_initech, 'page', 'd30-4')" -c "COMMIT"

# the figures: N decisions in one statement (one resource; 20 resources in
# turn), and one decision per statement (M autocommit statements, against M
# statements SELECT true through the same session)
d30_n=2000
d30_fig() {  # d30_fig SQL...: milliseconds of one psql session running them
    local t0; t0=$(now_ms)
    d30_psql "$@" >/dev/null 2>"$lab/d30_fig.err" || echo "FAIL    decisions figure: $(tail -1 "$lab/d30_fig.err")" >&2
    echo $(( $(now_ms) - t0 ))
}
d30_empty=$(d30_fig -c "BEGIN" -c "SET LOCAL pg_agents.workspace = 'initech'" -c "SELECT count(*) FROM generate_series(1, $d30_n)" -c "COMMIT")
d30_one=$(d30_fig -c "BEGIN" -c "SET LOCAL pg_agents.workspace = 'initech'" \
    -c "SELECT count(*) FILTER (WHERE agent.can_access($d30_initech, 'page', 'tps-report', 'edit')) FROM generate_series(1, $d30_n)" -c "COMMIT")
d30_many=$(d30_fig -c "BEGIN" -c "SET LOCAL pg_agents.workspace = 'initech'" \
    -c "SELECT count(*) FILTER (WHERE agent.can_access($d30_initech, 'page', 'd30-' || (i % 20 + 1))) FROM generate_series(1, $d30_n) i" -c "COMMIT")
step ok "figure: $d30_n decisions in one statement: one resource $d30_one ms, 20 resources in turn $d30_many ms, the same statement without decisions $d30_empty ms: $(( (d30_one - d30_empty) * 1000 / d30_n )) and $(( (d30_many - d30_empty) * 1000 / d30_n )) us a decision"
d30_m=300
{ echo "SET pg_agents.workspace = 'initech';"
  for i in $(seq 1 $d30_m); do echo "SELECT agent.can_access($d30_initech, 'page', 'tps-report', 'edit');"; done
} >"$lab/d30_stmts.sql"
{ echo "SET pg_agents.workspace = 'initech';"; for i in $(seq 1 $d30_m); do echo "SELECT true;"; done; } >"$lab/d30_empty.sql"
d30_s=$(d30_fig -f "$lab/d30_stmts.sql")
d30_e=$(d30_fig -f "$lab/d30_empty.sql")
step ok "figure: $d30_m autocommit statements of one decision each in $d30_s ms, $d30_m of SELECT true in $d30_e ms: $(( (d30_s - d30_e) * 1000 / d30_m )) us a decision of its own statement"
