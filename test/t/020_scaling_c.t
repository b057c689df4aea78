#!/usr/bin/env bash
# Distribution readiness of the C code's SPI strings (issue 24, the C half of
# test/pgtap/scaling_schema.sql): every INSERT INTO agent.<table> ... ON
# CONFLICT (target) in src/**/*.c names a target that PostgreSQL infers to
# exactly one unique index of that table (EXPLAIN on the test database), and
# none on a distributed table (agent.distribution_plan()) has now(), a like
# function or interval arithmetic (timestamptz - interval is STABLE) in a
# WHERE of its conflict clause (Citus refuses it; the value is passed as a
# parameter).  Shown to catch both on a file written as the old
# code was.
. "$PG_AGENTS_ENV"
set -u
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/../fixtures/tap.sh"
plan 9

# file:line <TAB> table <TAB> target <TAB> stable function called in a
# conflict WHERE (or -), for each SPI string holding ON CONFLICT
sites() {
    python3 - "$@" <<'PY'
import re, sys, os
FN = r'\b(now|clock_timestamp|statement_timestamp|transaction_timestamp|timeofday|random|current_timestamp|localtimestamp|current_date|current_time)\b'
# in a conflict WHERE, interval arithmetic too (timestamptz - interval is STABLE)
FN_WHERE = r'\b(now|clock_timestamp|statement_timestamp|transaction_timestamp|timeofday|random|current_timestamp|localtimestamp|current_date|current_time|make_interval|interval)\b'
for path in sys.argv[1:]:
    src = open(path).read()
    # comments out, lines kept
    src = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), src, flags=re.S)
    for m in re.finditer(r'"(?:[^"\\\n]|\\.)*"(?:\s*"(?:[^"\\\n]|\\.)*")*', src):
        s = ''.join(re.findall(r'"((?:[^"\\\n]|\\.)*)"', m.group(0)))
        s = s.replace('\\"', '"').replace('\\\\', '\\').replace('\\n', ' ')
        mm = re.search(r'INSERT\s+INTO\s+agent\.(\w+).*?\bON\s+CONFLICT\b(.*)$', s, re.I | re.S)
        if not mm:
            continue
        line = src.count('\n', 0, m.start()) + 1
        table, rest = mm.group(1), mm.group(2)
        target = ''
        on = re.match(r'\s*(ON\s+CONSTRAINT\s+\w+)', rest, re.I)
        if on:
            target, rest = on.group(1), rest[on.end():]
        elif re.match(r'\s*\(', rest):
            i, depth = rest.index('('), 0
            while i < len(rest):
                depth += {'(': 1, ')': -1}.get(rest[i], 0)
                i += 1
                if depth == 0:
                    break
            target, rest = rest[:i], rest[i:]
            pred = re.match(r'(\s+WHERE\s.*?)\s+DO\s', rest, re.I | re.S)
            if pred:
                target, rest = target + pred.group(1), rest[pred.end() - 3:]
        clause = target + ' ' + rest
        parts = re.split(r'\b(WHERE|DO|SET|RETURNING)\b', clause, flags=re.I)
        called, in_set = '-', '-'
        for k in range(1, len(parts) - 1, 2):
            f = re.search(FN, parts[k + 1], re.I)
            w = re.search(FN_WHERE, parts[k + 1], re.I)
            if w and parts[k].upper() == 'WHERE':
                called = w.group(1).lower()
            elif f and parts[k].upper() == 'SET':
                in_set = f.group(1).lower()
        target = ' '.join(target.split())
        print('%s:%d\t%s\t%s\t%s\t%s' % (os.path.basename(path), line, table, target or '-', called, in_set))
PY
}

# file:line <TAB> table <TAB> column list (or -) of every INSERT INTO agent.<table>
inserts() {
    python3 - "$@" <<'PY'
import re, sys, os
for path in sys.argv[1:]:
    src = open(path).read()
    src = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), src, flags=re.S)
    for m in re.finditer(r'"(?:[^"\\\n]|\\.)*"(?:\s*"(?:[^"\\\n]|\\.)*")*', src):
        s = ''.join(re.findall(r'"((?:[^"\\\n]|\\.)*)"', m.group(0)))
        for i in re.finditer(r'INSERT\s+INTO\s+agent\.(\w+)(?:\s+AS\s+\w+)?\s*(\([^)]*\))?', s, re.I):
            line = src.count('\n', 0, m.start()) + 1
            print('%s:%d\t%s\t%s' % (os.path.basename(path), line, i.group(1), ' '.join((i.group(2) or '-').split())))
PY
}

# the INSERTs into a distributed table that leave workspace_id out
inserts_without_workspace() {
    local where tbl cols kind
    while IFS=$'\t' read -r where tbl cols; do
        kind=$(psql -XAtq -c "SELECT kind FROM agent.distribution_plan() WHERE table_name = to_regclass('agent.$tbl')")
        if [ "$kind" = distributed ] && [[ "$cols" != *workspace_id* ]]; then
            echo "$where: INSERT without workspace_id into agent.$tbl"
        fi
    done
}

# the offenders among the sites: a target PostgreSQL infers to no unique
# index (or to more than one), a now() in a conflict WHERE of a distributed table
violations() {
    local where tbl target called in_set arbiter kind
    while IFS=$'\t' read -r where tbl target called in_set; do
        kind=$(psql -XAtq -c "SELECT kind FROM agent.distribution_plan() WHERE table_name = to_regclass('agent.$tbl')")
        if [ "$target" != - ]; then
            arbiter=$(psql -XAtq -v ON_ERROR_STOP=1 2>&1 -c "EXPLAIN (COSTS OFF) INSERT INTO agent.$tbl SELECT * FROM agent.$tbl WHERE false ON CONFLICT $target DO NOTHING" \
                      | sed -n 's/^ *Conflict Arbiter Indexes: *//p; s/^ERROR: *//p')
            case "$arbiter" in
                ''|*,*|*" "*) echo "$where: ON CONFLICT $target on agent.$tbl: ${arbiter:-no arbiter index}" ;;
            esac
        fi
        if [ "$called" != - ] && [ "$kind" = distributed ]; then
            echo "$where: ON CONFLICT ... WHERE calls $called on distributed agent.$tbl"
        fi
    done
}

# every C file, in every folder of src/ (none found: the next check fails)
mapfile -t c_files < <(find "$PG_AGENTS_SRC/src" -name '*.c' | sort)
: > "$work/sites"
[ ${#c_files[@]} -gt 0 ] && sites "${c_files[@]}" > "$work/sites"
n=$(wc -l < "$work/sites")
[ ${#c_files[@]} -gt 0 ] && [ "$n" -ge 5 ]; ok $? "the ON CONFLICT statements of src/**/*.c are found (${#c_files[@]} files; $n: $(cut -f1 "$work/sites" | tr '\n' ' '))"
grep -q $'^run_units.c:[0-9]*\trun_state\t(run_id, workspace_id)\t-\t' "$work/sites"
ok $? "run_units.c's run_state upsert is read with its whole target"
# no now() or a like function in a DO UPDATE SET of a distributed or
# reference table (Citus refuses it there: the value goes in VALUES)
set_now=$(while IFS=$'\t' read -r where tbl target called in_set; do
    [ "$in_set" = - ] || echo "$where: ON CONFLICT ... DO UPDATE SET calls $in_set on agent.$tbl"
done < "$work/sites")
is "$set_now" "" "no ON CONFLICT ... DO UPDATE SET in src/**/*.c calls now() or a like function"
# every INSERT into a distributed table names workspace_id itself
no_ws=$(inserts "${c_files[@]}" | inserts_without_workspace)
is "$no_ws" "" "every INSERT of src/**/*.c into a distributed table names workspace_id"
v=$(violations < "$work/sites")
is "$v" "" "every ON CONFLICT target in src/**/*.c matches exactly one unique index, and none calls now() in a conflict WHERE of a distributed table"

# the checks catch the old statements: run_state's target before the key
# held workspace_id, the dedup cutoff taken with now(), a step INSERT
# without workspace_id
cat > "$work/old.c" <<'C'
static void
Old(void)
{
	/* a comment "ON CONFLICT (nothing)" is not a statement */
	SpiUtilExecPlan(&save_plan, "INSERT INTO agent.run_state AS st (run_id, workspace_id, worker_pid, state) "
						 "SELECT r.id, r.workspace_id, $3, $2 FROM agent.runs r WHERE r.id = $1 "
						 "ON CONFLICT (run_id) DO UPDATE SET state = excluded.state",
						 3, types, vals, NULL, false, 0);
	SpiUtilKeptPlan(&plan_dedup,
				"INSERT INTO agent.event_dedup AS d (workspace_id, trigger_id, fingerprint, seen_at) "
				"VALUES ($1, $2, $3, pg_catalog.now()) "
				"ON CONFLICT (workspace_id, trigger_id, fingerprint) DO UPDATE SET seen_at = excluded.seen_at "
				"WHERE d.seen_at OPERATOR(pg_catalog.<=) (pg_catalog.now() OPERATOR(pg_catalog.-) pg_catalog.make_interval(secs => $4)) "
				"RETURNING 1",
				4, types);
	static const char *sql =
		"INSERT INTO agent.run_steps (run_id, seq, kind) "
		"SELECT $1, coalesce(pg_catalog.max(s.seq), 0) + 1, $2 FROM agent.run_steps s WHERE s.run_id = $1";
	SPI_execute("INSERT INTO agent.secrets AS s (name, ciphertext) VALUES ('k', '') "
				"ON CONFLICT (name) DO UPDATE SET updated_at = pg_catalog.now()", false, 0);
}
C
sites "$work/old.c" > "$work/old_sites"
is "$(cut -f1-3 "$work/old_sites" | tr '\t' ' ')" $'old.c:5 run_state (run_id)\nold.c:10 event_dedup (workspace_id, trigger_id, fingerprint)\nold.c:19 secrets (name)' \
   "the sites of a file are read, comments left out"
v=$(violations < "$work/old_sites")
is "$v" $'old.c:5: ON CONFLICT (run_id) on agent.run_state: there is no unique or exclusion constraint matching the ON CONFLICT specification\nold.c:10: ON CONFLICT ... WHERE calls now on distributed agent.event_dedup\nold.c:19: ON CONFLICT (name) on agent.secrets: there is no unique or exclusion constraint matching the ON CONFLICT specification' \
   "the check names a target without workspace_id, a cutoff taken with now(), and a secret's name without its workspace"
is "$(awk -F'\t' '$5 != "-" {print $1, $5}' "$work/old_sites")" "old.c:19 now" \
   "the DO UPDATE SET check names a now() there"
v=$(inserts "$work/old.c" | inserts_without_workspace)
is "$v" "old.c:17: INSERT without workspace_id into agent.run_steps" "the INSERT check names an INSERT that leaves workspace_id to the trigger"
done_testing
