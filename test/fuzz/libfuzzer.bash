# Sourced by the libFuzzer harness scripts of test/fuzz (llm_reply.sh, ...):
#   fuzz_main NAME ARG FLAGS -- SOURCES...
# builds test/fuzz/NAME (clang -fsanitize=fuzzer,address,undefined) from
# SOURCES (paths relative to the repository) with the PostgreSQL shim
# (test/fuzz/shim) ahead of src/ on the include path, then runs it for
# ARG (short: 20 s, long: 600 s, a number: that many seconds) on a copy of
# test/fuzz/corpus/NAME (the committed seeds stay as they are), with
# test/fuzz/NAME.dict when there is one and the libFuzzer FLAGS (its limits:
# -rss_limit_mb, -timeout, -max_len).  Fails on a crash, a sanitizer report,
# a failed check (abort), an input over the time limit or the memory limit;
# the input is kept in $FUZZ_ARTIFACTS (default: a temp directory, printed).
# FUZZ_KEEP_CORPUS=DIR keeps the corpus grown by the run in DIR.

fuzz_main() {
    local name=$1 arg=$2 secs
    shift 2
    local flags=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do flags+=("$1"); shift; done
    shift
    local root
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    case "$arg" in
        short) secs=20 ;;
        long)  secs=600 ;;
        *[!0-9]*|'') echo "usage: $name.sh short|long|SECONDS" >&2; return 2 ;;
        *)     secs=$arg ;;
    esac
    local cc=${CLANG:-}
    if [ -z "$cc" ]; then
        for c in clang $(compgen -c clang- | grep -E '^clang-[0-9]+$' | sort -t- -k2 -rn | uniq); do
            command -v "$c" >/dev/null 2>&1 && { cc=$c; break; }
        done
    fi
    if [ -z "$cc" ]; then
        echo "$name fuzz: clang not found (make deps installs clang and libclang-rt-dev)" >&2
        return 1
    fi
    local work
    work=$(mktemp -d "${TMPDIR:-/tmp}/pg_agents_${name}_fuzz.XXXXXX")
    local artifacts=${FUZZ_ARTIFACTS:-$work/artifacts}
    mkdir -p "$work/corpus" "$artifacts"
    local srcs=()
    for s in "$@"; do srcs+=("$root/$s"); done
    sh "$root/test/fuzz/shim/guc_vars.sh" "$root/src/util/guc.c" > "$work/guc_vars.c"
    if ! "$cc" -g -O1 -std=gnu99 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Werror=implicit-function-declaration \
            -DCURL_DISABLE_TYPECHECK -DPG_AGENTS_VERSION='"fuzz"' \
            -I"$root/test/fuzz/shim" -I"$root/src" -I"$root/test/fuzz" \
            "${srcs[@]}" "$work/guc_vars.c" -o "$work/$name" -lcurl -ljansson -lcrypto \
            2>"$work/build.log"; then
        cat "$work/build.log" >&2
        echo "$name fuzz: could not build the harness (is libclang-rt-dev installed?)" >&2
        return 1
    fi
    if [ -d "$root/test/fuzz/corpus/$name" ]; then
        cp "$root/test/fuzz/corpus/$name"/* "$work/corpus/" 2>/dev/null
    fi
    local seeds
    seeds=$(ls "$work/corpus" | wc -l)
    local dict=()
    [ -f "$root/test/fuzz/$name.dict" ] && dict=(-dict="$root/test/fuzz/$name.dict")
    echo "$name fuzz: ${secs}s of $work/$name, $seeds seeds, ${flags[*]}"
    # a small quarantine: freed memory must not count towards -rss_limit_mb
    ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=16:malloc_context_size=10} \
    "$work/$name" -max_total_time="$secs" "${flags[@]}" "${dict[@]}" \
        -artifact_prefix="$artifacts/" -print_final_stats=1 "$work/corpus" >"$work/fuzz.log" 2>&1
    local rc=$?
    grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb|^Done' "$work/fuzz.log" | sed 's/^/  /'
    echo "  corpus: $(ls "$work/corpus" | wc -l) inputs, $(du -sk "$work/corpus" | cut -f1) kB"
    if [ -n "${FUZZ_KEEP_CORPUS:-}" ]; then
        mkdir -p "$FUZZ_KEEP_CORPUS" && cp "$work/corpus"/* "$FUZZ_KEEP_CORPUS/"
    fi
    if [ $rc -ne 0 ]; then
        tail -n 40 "$work/fuzz.log" >&2
        echo "$name fuzz: FAILED (exit $rc); the input is kept in $artifacts, the log in $work/fuzz.log" >&2
        return 1
    fi
    rm -rf "$work"
    echo "$name fuzz: ok"
}
