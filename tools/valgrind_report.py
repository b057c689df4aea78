#!/usr/bin/env python3
"""make valgrind's report (tools/run_tests.sh with PG_AGENTS_VALGRIND): reads
the per-process memcheck logs of the test cluster and sorts each error by the
first frame of its stack outside the C library:
  - in pg_agents (pg_agents.so or our sources): ours, printed in full;
  - in PostgreSQL or a library, with pg_agents further down the stack:
    counted by kind and frame (reached from our code, e.g. the worker's
    InitPostgres);
  - elsewhere: counted by kind and frame.
VALGRIND_VERBOSE=1 prints the last two kinds in full too.
Exit 1 when one of ours is found.
    tools/valgrind_report.py LOGDIR SRCDIR
"""
import collections
import glob
import os
import re
import sys

logdir, srcdir = sys.argv[1], sys.argv[2]
verbose = os.environ.get("VALGRIND_VERBOSE") == "1"
FRAME = re.compile(r"^\s*(at|by) 0x[0-9A-Fa-f]+: (.*)$")
LIBC = re.compile(r"sysdeps/|libio/|/libc[.-]|vgpreload|vg_replace|ld-linux|string/|stdio-common/|malloc/")


def ours(frame):
    return "pg_agents.so" in frame or srcdir in frame or re.search(r"[ (]src/(?:\w+/)*\w+\.c:\d+", frame)


def first_stack(block):
    frames = []
    for line in block[1:]:
        m = FRAME.match(line)
        if m:
            frames.append(m.group(2))
        elif frames:
            break   # "Address ... alloc'd" and its own stack follow
    return frames


mine, reached, others, files = [], collections.Counter(), collections.Counter(), 0
reached_blocks, other_blocks = [], []
for path in sorted(glob.glob(os.path.join(logdir, "*.log"))):
    files += 1
    block = []
    for line in list(open(path, errors="replace")) + [""]:
        text = re.sub(r"^==\d+== ?", "", line.rstrip("\n"))
        if text.strip():
            block.append(text)
            continue
        if block and not block[0].startswith(("HEAP SUMMARY", "LEAK SUMMARY", "ERROR SUMMARY")):
            frames = first_stack(block)
            first = next((f for f in frames if not LIBC.search(f)), frames[0] if frames else "")
            key = block[0].strip() + " | " + first
            if ours(first):
                mine.append((os.path.basename(path), block))
            elif any(ours(f) for f in frames):
                reached[key] += 1
                reached_blocks.append((os.path.basename(path), block))
            else:
                others[key] += 1
                other_blocks.append((os.path.basename(path), block))
        block = []

print(f"valgrind: {files} process logs; {len(mine)} errors in pg_agents, "
      f"{sum(reached.values())} in PostgreSQL or a library reached from pg_agents, "
      f"{sum(others.values())} elsewhere")
for what, n in reached.most_common(20):
    print(f"  reached from pg_agents {n}x: {what}")
for what, n in others.most_common(20):
    print(f"  elsewhere {n}x: {what}")
for name, block in mine + (reached_blocks + other_blocks if verbose else []):
    print(f"--- {name}")
    print("\n".join(block))
sys.exit(1 if mine else 0)
