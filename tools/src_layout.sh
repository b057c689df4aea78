#!/usr/bin/env bash
# tools/src_layout.sh: src/ as a folder per module (issue 34, docs/hacking.md
# "Layout").  Idempotent: run it again after adding files to src/.
#
# 1. Every file of src/'s top level whose name carries a module's prefix
#    (folder_of below) is moved into that module's folder (git mv when
#    tracked, so that history follows); pg_agents.c (_PG_init) stays on top.
# 2. The includes of our own headers are rewritten: within a folder
#    unqualified ("guc.h" in src/util/), across folders with the folder
#    ("util/guc.h"; the build has -I src only), in src/ and in the C files
#    built from outside it (tools/*.c, test/fuzz/*.c, test/fuzz/shim/*.c);
#    each run of them in name order.
# 3. Paths naming a moved file (src/guc.c -> src/util/guc.c) are rewritten in
#    the tree's sources, scripts and docs (not in CHANGELOG.md, sql/,
#    expected/), and in docs/hacking.md's module tables the files of a row
#    with their folder (`util/guc.c` (`guc.h`)).
# Nothing is removed.  Prints what it moves; review with git status / diff.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# the folder of a file of src/ by its name ("" when it stays on top);
# order matters (http_easy before http, approval_rules before approval)
folder_of() {
    case $1 in
        pg_agents.c) ;;
        http_easy*) echo mcp ;;
        approval_rules*) echo tools ;;
        guc.*|guc_*|shmem*|wake.*|wake_*|spi_util*|jsonb_build*|relcheck*|user_sql*|config_gen*|citus_shard*|redact*|compat.h|jansson_prelude.h) echo util ;;
        access*|allowlist*) echo access ;;
        audit*) echo audit ;;
        enqueue*|dispatch*|filter*|watch*|eventstats*|cron*|capmemo*|events*) echo events ;;
        worker*|launcher*|run_*|runs*|context*|deltas*|delegation*|approval.*|approval_*|ops.*|ops_*) echo runs ;;
        tools*|tool_*|teams*|embed*|web_lists*) echo tools ;;
        mcp*) echo mcp ;;
        llm*|http.*|http_*|providers*|ratelimit*|secrets*|secret_*) echo llm ;;
    esac
}

# 1. moves
shopt -s nullglob
for f in src/*.c src/*.h; do
    b=$(basename "$f")
    d=$(folder_of "$b")
    if [ -z "$d" ]; then
        [ "$b" = pg_agents.c ] || echo "src_layout: $f matches no module; left on top (add its prefix to folder_of)" >&2
        continue
    fi
    if [ -e "src/$d/$b" ]; then
        echo "src_layout: src/$d/$b exists already; $f left as it is" >&2
        continue
    fi
    mkdir -p "src/$d"
    if git ls-files --error-unmatch "$f" >/dev/null 2>&1; then
        git mv "$f" "src/$d/$b"
    else
        mv "$f" "src/$d/$b"
    fi
    echo "src_layout: $f -> src/$d/$b"
done

# a header of ours named as one of PostgreSQL's in the same folder name
# (access/) would shadow it: -I src comes first
pgc=$(tools/pg_version.sh pg_config 2>/dev/null || command -v pg_config || true)
if [ -n "$pgc" ] && inc=$("$pgc" --includedir-server 2>/dev/null); then
    for h in src/*/*.h; do
        rel=${h#src/}
        [ -e "$inc/$rel" ] && echo "src_layout: warning: $h shadows PostgreSQL's $rel; rename it" >&2
    done
fi

# 2. and 3. the rewrites
python3 - <<'PY'
import os, re, subprocess

folders = sorted(d for d in os.listdir('src') if os.path.isdir(os.path.join('src', d)))
where = {}          # basename -> folder, for the files of src/<folder>/
for d in folders:
    for n in os.listdir(os.path.join('src', d)):
        if n.endswith(('.c', '.h')):
            where.setdefault(n, d)

INC = re.compile(r'^(\s*#\s*include\s+")([^"]+)(")', re.M)

def fix_includes(path):
    here = os.path.dirname(path)
    in_src = here == 'src' or here.startswith('src/')
    folder = here[4:] if here.startswith('src/') else None

    def repl(m):
        inc = m.group(2)
        base = os.path.basename(inc)
        d = where.get(base)
        if d is None:
            return m.group(0)
        parts = inc.split('/')
        # only our own spellings: "x.h" or "<one of our folders>/x.h"
        if not (len(parts) == 1 or (len(parts) == 2 and parts[0] in folders)):
            return m.group(0)
        if len(parts) == 1 and not in_src and os.path.exists(os.path.join(here, base)):
            return m.group(0)       # a header beside the file (test/fuzz's own)
        new = base if folder == d else d + '/' + base
        return m.group(1) + new + m.group(3)

    text = INC.sub(repl, open(path).read())
    # each run of consecutive includes of our headers in name order
    # (jansson_prelude.h keeps its place: right after postgres.h)
    lines, out, run = text.split('\n'), [], []
    ours = re.compile(r'\s*#\s*include\s+"([^"]+)"\s*$')
    for line in lines + [None]:
        m = ours.match(line) if line is not None else None
        if m and os.path.basename(m.group(1)) in where and \
                os.path.basename(m.group(1)) != 'jansson_prelude.h' and \
                len(m.group(1).split('/')) <= 2:
            run.append(line)
            continue
        out.extend(sorted(run, key=lambda l: ours.match(l).group(1)))
        run = []
        if line is not None:
            out.append(line)
    return '\n'.join(out)

PATH = re.compile(r'(?<![\w-])src/(\w+\.[ch])(?!\w)')

def fix_paths(text):
    def repl(m):
        n = m.group(1)
        if n in where and not os.path.exists(os.path.join('src', n)):
            return 'src/%s/%s' % (where[n], n)
        return m.group(0)
    return PATH.sub(repl, text)

NAME = re.compile(r'`((?:\w+/)?(\w+\.[ch]))`')

def fix_table(text):
    # the first cell of each table row: its first file named with its folder
    # (relative to src/), the others bare in that folder, else with theirs
    out = []
    for line in text.split('\n'):
        m = re.match(r'(\| )([^|]*)(\|.*)$', line)
        if m and NAME.search(m.group(2)):
            ctx = []

            def repl(n):
                base = n.group(2)
                if base not in where or os.path.exists(os.path.join('src', base)):
                    return n.group(0)
                d = where[base]
                first = not ctx
                ctx.append(d)
                return '`%s`' % (base if (not first and d == ctx[0]) else d + '/' + base)
            line = m.group(1) + NAME.sub(repl, m.group(2)) + m.group(3)
        out.append(line)
    return '\n'.join(out)

files = subprocess.run(['git', 'ls-files', '-co', '--exclude-standard'],
                       capture_output=True, text=True, check=True).stdout.split('\n')
skip = ('sql/', 'expected/', 'test/fixtures/dump_', 'results/')
for path in files:
    if not path or not os.path.isfile(path) or path.startswith(skip):
        continue
    if path in ('CHANGELOG.md', 'tools/src_layout.sh'):
        continue
    try:
        text = open(path).read()
    except (UnicodeDecodeError, IsADirectoryError):
        continue
    new = text
    c_built = path.endswith(('.c', '.h')) and (
        path.startswith('src/') or re.match(r'(tools|test/fuzz|test/fuzz/shim)/[^/]+$', path))
    if c_built:
        new = fix_includes(path)
    new = fix_paths(new)
    if path == 'docs/hacking.md':
        new = fix_table(new)
    if new != text:
        with open(path, 'w') as f:
            f.write(new)
        print('src_layout: rewrote', path)
PY
