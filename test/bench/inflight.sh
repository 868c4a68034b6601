#!/usr/bin/env bash
# Benchmark: queued runs per second through multiplexed job workers (issue
# 12).  Each run is one model call (an agent without tools); the local model
# server answers after LATENCY ms (model "gpt-latency-N"); 500 sessions.
# For adk.max_workers = 1, 2, 4: runs/s against the ideal in-flight /
# latency (in-flight = min(workers x adk.worker_concurrency, sessions)), and
# the number of job worker processes seen.  Then the same at 0 ms latency
# (CPU-bound), where the ideal is not defined: runs/s only.
#
#   bash test/bench/inflight.sh [runs-per-round (1000)] [latency ms (1000)]
#
# Run as a non-root user with the extension installed (as root the script
# re-runs itself as user adkci).  Starts its own cluster and model server.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
RUNS=${1:-1000}
LATENCY_MS=${2:-1000}
SESSIONS=500
bench_cluster "shared_preload_libraries = 'adk_runner'" "adk.database = 'postgres'" \
    "max_worker_processes = 24" "max_connections = 50" "adk.max_workers = 1"
bench_model_server

$PSQL -v url="$ADK_TEST_MODEL_URL" -v ms="$LATENCY_MS" >/dev/null <<'SQL'
CREATE EXTENSION adk_runner;
SELECT adk_set_secret('k', 'sk-bench', ARRAY['127.0.0.1']);
SELECT adk_define_model('slow', 'openai', :'url' || '/v1', 'gpt-latency-' || :'ms', api_key_secret => 'k');
SELECT adk_define_model('fast', 'openai', :'url' || '/v1', 'gpt-test', api_key_secret => 'k');
SELECT adk_define_agent('slow_agent', model => 'slow');
SELECT adk_define_app('bench', 'slow_agent');
SELECT adk_define_agent('fast_agent', model => 'fast');
SELECT adk_define_app('bench_fast', 'fast_agent');
SQL
concurrency=$($PSQL -Atc "SELECT coalesce(current_setting('adk.worker_concurrency', true), '1')")

set_workers() {  # n: adk.max_workers = n, and wait until at most n workers run
    $PSQL -c "ALTER SYSTEM SET adk.max_workers = $1" -c "SELECT pg_reload_conf()" >/dev/null
    for _ in $(seq 100); do
        [ "$($PSQL -Atc "SELECT count(*) <= $1 FROM pg_stat_activity WHERE backend_type = 'adk_runner job worker'")" = t ] && break
        sleep 0.1
    done
}

round() {  # app workers latency-ms
    local app=$1 w=$2 ms=$3 t0 maxw=0 nw done failed t1
    set_workers "$w"
    $PSQL -c "TRUNCATE adk.jobs" >/dev/null
    t0=$($PSQL -At <<SQL
BEGIN;
SELECT count(adk_submit('$app', 'u', 'w$w-s' || (i % $SESSIONS), 'run ' || i)) FROM generate_series(1, $RUNS) i \\g /dev/null
SELECT extract(epoch FROM clock_timestamp());
COMMIT;
SQL
)
    for _ in $(seq 12000); do
        read -r left nw < <($PSQL -At -F ' ' -c "SELECT (SELECT count(*) FROM adk.jobs WHERE status IN ('queued', 'running')), (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'adk_runner job worker')")
        [ "$nw" -gt "$maxw" ] && maxw=$nw
        [ "$left" = 0 ] && break
        sleep 0.05
    done
    read -r done failed t1 < <($PSQL -At -F ' ' -c "SELECT count(*) FILTER (WHERE status = 'completed'), count(*) FILTER (WHERE status = 'failed'), extract(epoch FROM max(finished_at)) FROM adk.jobs")
    [ "$failed" = 0 ] || { echo "$failed jobs failed:"; $PSQL -c "SELECT error, count(*) FROM adk.jobs WHERE status = 'failed' GROUP BY 1"; }
    awk -v w="$w" -v n="$done" -v t0="$t0" -v t1="$t1" -v ms="$ms" -v c="$concurrency" \
        -v s="$SESSIONS" -v procs="$maxw" 'BEGIN {
        secs = t1 - t0; r = n / secs;
        if (ms > 0) {
            inflight = w * c; if (inflight > s) inflight = s;
            ideal = inflight * 1000 / ms;
            printf "%8d %8d %6d %9.2f %10.1f %10.1f %7.2f\n", w, procs, n, secs, r, ideal, r / ideal
        } else
            printf "%8d %8d %6d %9.2f %10.1f %10s %7s\n", w, procs, n, secs, r, "-", "-" }'
}

echo "(machine load before: $(cut -d' ' -f1-3 /proc/loadavg))"
if [ "$LATENCY_MS" -gt 0 ]; then  # latency 0: only the CPU-bound rounds
    echo "queued runs, one ${LATENCY_MS} ms model call each, $RUNS runs over $SESSIONS sessions, adk.worker_concurrency = $concurrency"
    printf '%8s %8s %6s %9s %10s %10s %7s\n' workers procs runs seconds "runs/s" "ideal/s" ratio
    for w in 1 2 4; do round bench "$w" "$LATENCY_MS"; done
    echo
fi
echo "the same at 0 ms model latency (CPU-bound)"
printf '%8s %8s %6s %9s %10s %10s %7s\n' workers procs runs seconds "runs/s" "ideal/s" ratio
for w in 1 2 4; do round bench_fast "$w" 0; done
echo "(machine load after: $(cut -d' ' -f1-3 /proc/loadavg))"
