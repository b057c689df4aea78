#!/usr/bin/env bash
# kind: libfuzzer
# Fuzz the cron parser, describer and next-match search (src/events/cron_parse.c)
# with libFuzzer + AddressSanitizer + UBSan.
#   test/fuzz/cron.sh short     about 20 seconds (what make test runs)
#   test/fuzz/cron.sh long      10 minutes
#   test/fuzz/cron.sh SECONDS   that long
# Fails on a crash, a sanitizer report, a failed check (abort) or a hang
# (one input taking more than 10 s).  Crash inputs are kept in
# $CRON_FUZZ_ARTIFACTS (default: a temp directory, printed).
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
case "${1:-short}" in
    short) secs=20 ;;
    long)  secs=600 ;;
    *[!0-9]*|'') echo "usage: $0 short|long|SECONDS" >&2; exit 2 ;;
    *)     secs=$1 ;;
esac
cc=${CLANG:-}
if [ -z "$cc" ]; then
    # clang (Debian's default version), else the newest clang-NN on PATH
    for c in clang $(compgen -c clang- | grep -E '^clang-[0-9]+$' | sort -t- -k2 -rn | uniq); do
        command -v "$c" >/dev/null 2>&1 && { cc=$c; break; }
    done
fi
if [ -z "$cc" ]; then
    echo "cron fuzz: clang not found (make deps installs clang and libclang-rt-dev)" >&2
    exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/pg_agents_cron_fuzz.XXXXXX")
artifacts=${CRON_FUZZ_ARTIFACTS:-$work/artifacts}
mkdir -p "$work/corpus" "$artifacts"
trap 'rm -rf "$work/corpus" "$work/cron_fuzz"' EXIT

if ! "$cc" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
        -I"$here/src" "$here/src/events/cron_parse.c" "$here/test/fuzz/cron_fuzz.c" \
        -o "$work/cron_fuzz" 2>"$work/build.log"; then
    cat "$work/build.log" >&2
    echo "cron fuzz: could not build the harness (is libclang-rt-dev installed?)" >&2
    exit 1
fi

# seeds: 16 configuration bytes (after, zone, horizon) then an expression
i=0
for e in '0 9 * * 1-5' '*/15 * * * *' '30 2 * * *' '30 1 * * *' '0 0 13 * 5' '0 0 */2 * 1' \
         '@daily' '1-10/2 9-17 * JAN-MAR MON,FRI' '0 0 31 2 *' '0 0 29 2 *' '30 * * * *' \
         '0 2,3 * * *' '5/15 * * * 7' '* * * * *' '0 12 * feb,Aug sun-sat'; do
    for z in 0 1 2; do
        i=$((i + 1))
        { printf '\x11\x22\x33\x44\x55\x0%d\x0%d\x12\x34\x05\x00\x01\x02\x03\x04\x05' $((i % 4)) $z
          printf '%s' "$e"; } > "$work/corpus/seed$i"
    done
done

echo "cron fuzz: ${secs}s of $work/cron_fuzz"
"$work/cron_fuzz" -max_total_time="$secs" -timeout=10 -rss_limit_mb=1024 -max_len=256 \
    -dict="$here/test/fuzz/cron.dict" -artifact_prefix="$artifacts/" -print_final_stats=1 \
    "$work/corpus" >"$work/fuzz.log" 2>&1
rc=$?
grep -E '^stat::number_of_executed_units|^Done' "$work/fuzz.log" | sed 's/^/  /'
if [ $rc -ne 0 ]; then
    tail -n 40 "$work/fuzz.log" >&2
    echo "cron fuzz: FAILED (exit $rc); inputs kept in $artifacts" >&2
    exit 1
fi
rm -rf "$work"
echo "cron fuzz: ok"
