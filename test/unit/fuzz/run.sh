#!/usr/bin/env bash
# Short libFuzzer runs of every harness (test/unit/fuzz), seeded from
# test/unit/data.  Usage: run.sh SECONDS_PER_HARNESS (default 3).
# Prints "ok fuzz <harness>" or "not ok fuzz <harness>" per harness, then
# "fuzz: N passed, M failed"; exits 1 on any failure.  A failing input is
# left in $FUZZ_ARTIFACTS (default: a temp dir, printed).
set -u
cd "$(dirname "$0")/.."
SECS=${1:-3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/adk-fuzz.XXXXXX")
ART=${FUZZ_ARTIFACTS:-$WORK/artifacts}
mkdir -p "$ART"
pass=0
fail=0

# seeds: the fixture files with the harness's leading control byte
seed() {  # corpus-dir control-byte file...
    local dir=$1 byte=$2 f
    shift 2
    mkdir -p "$dir"
    for f in "$@"; do
        { printf "$byte"; cat "data/$f"; } >"$dir/$(basename "$f")"
    done
}
seed "$WORK/sse" '/' openai_stream_tools.sse gemini_stream_tools.sse anthropic_stream_tools.sse
for p in openai gemini anthropic; do
    seed "$WORK/response_$p" 'H' ${p}_response.json error_responses.json
    seed "$WORK/stream_$p" '/' ${p}_stream_tools.sse
    seed "$WORK/stream_$p" '\x47' ${p}_stream_tools.sse
done

for h in sse response_openai response_gemini response_anthropic stream_openai stream_gemini stream_anthropic; do
    bin=fuzz/fuzz_$h
    if [ ! -x "$bin" ]; then
        echo "not ok fuzz $h (not built)"
        fail=$((fail + 1))
        continue
    fi
    if ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "$bin" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -artifact_prefix="$ART/$h-" -print_final_stats=1 "$WORK/$h" >"$WORK/$h.log" 2>&1; then
        echo "ok fuzz $h ($(grep -o 'stat::number_of_executed_units: [0-9]*' "$WORK/$h.log" | grep -o '[0-9]*$') runs)"
        pass=$((pass + 1))
    else
        echo "not ok fuzz $h"
        tail -n 40 "$WORK/$h.log" | sed 's/^/    /'
        ls "$ART" | sed 's/^/    artifact: /'
        fail=$((fail + 1))
    fi
done
echo "fuzz: $pass passed, $fail failed"
[ -z "${FUZZ_ARTIFACTS:-}" ] && [ "$fail" -eq 0 ] && rm -rf "$WORK"
[ "$fail" -eq 0 ]
