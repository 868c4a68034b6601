#!/usr/bin/env bash
# Profile: where a job worker's time goes at 0 ms model latency.  RUNS
# single-call runs (lib.sh's bench_queue_apps, app "bench_fast") over 500
# sessions, queued for one job worker; prints the statements the worker ran
# (pg_stat_statements, nested ones too) by total time, its transactions
# and WAL per run, and -- when perf is installed -- the worker's hottest
# functions (perf record of the job worker process while it runs).
#
#   bash test/bench/worker_profile.sh [runs (3000)] [workers (1)]
#
# With more than one worker, perf records the first one.
#
# Run as a non-root user with the extension installed (as root the script
# re-runs itself as user adkci).  Starts its own cluster and model server.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
RUNS=${1:-3000}
WORKERS=${2:-1}
bench_queue_cluster "shared_preload_libraries = 'adk_runner,pg_stat_statements'" \
    "pg_stat_statements.track = all" "pg_stat_statements.max = 2000"
bench_model_server
bench_queue_apps 0
$PSQL -c "CREATE EXTENSION pg_stat_statements" >/dev/null
bench_set_workers "$WORKERS"
# the workers started, and idle
$PSQL -c "SELECT adk_submit('bench_fast', 'u', 'warm' || i, 'hello') FROM generate_series(1, 64 * $WORKERS) i" >/dev/null
sleep 2
$PSQL -c "TRUNCATE adk.jobs" -c "SELECT pg_stat_statements_reset()" >/dev/null
read -r xact0 wal0 < <($PSQL -At -F ' ' -c "SELECT xact_commit, pg_current_wal_lsn() FROM pg_stat_database WHERE datname = current_database()")
$PSQL >/dev/null <<SQL
BEGIN;
SELECT count(adk_submit('bench_fast', 'u', 's' || (i % 500), 'run ' || i)) FROM generate_series(1, $RUNS) i;
COMMIT;
SQL
pid=$($PSQL -Atc "SELECT pid FROM pg_stat_activity WHERE backend_type = 'adk_runner job worker' LIMIT 1")
WAITS=$(mktemp "${TMPDIR:-/tmp}/adk-waits.XXXXXX")
bench_on_exit 'rm -f "$WAITS"'
PERF=
if command -v perf >/dev/null; then
    PERF=$(mktemp "${TMPDIR:-/tmp}/adk-perf.XXXXXX")
    bench_on_exit 'rm -f "$PERF"'
    perf record -q -g -p "$pid" -o "$PERF" >/dev/null 2>&1 &
    perfpid=$!
fi
# CPU ticks of the job workers (and the launcher) so far
worker_ticks() {
    local p t=0
    for p in $($PSQL -Atc "SELECT pid FROM pg_stat_activity WHERE backend_type IN ('adk_runner job worker', 'adk_runner launcher')"); do
        t=$((t + $(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$p/stat")))
    done
    echo "$t"
}
ticks0=$(worker_ticks)
t0=$(date +%s.%N)
for _ in $(seq 6000); do
    $PSQL -Atc "SELECT wait_event_type || ':' || wait_event FROM pg_stat_activity WHERE backend_type = 'adk_runner job worker' AND wait_event IS NOT NULL" >>"$WAITS"
    [ "$($PSQL -Atc "SELECT count(*) FROM adk.jobs WHERE status IN ('queued', 'running')")" = 0 ] && break
    sleep 0.1
done
t1=$(date +%s.%N)
ticks1=$(worker_ticks)
[ -z "$PERF" ] || { kill -INT "$perfpid"; wait "$perfpid" || true; }
$PSQL -c "SELECT pg_stat_force_next_flush()" >/dev/null 2>&1 || true
sleep 1
read -r xact1 walbytes < <($PSQL -At -F ' ' -c "SELECT xact_commit, pg_wal_lsn_diff(pg_current_wal_lsn(), '$wal0') FROM pg_stat_database WHERE datname = current_database()")
echo "$RUNS runs in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}') s ($WORKERS job workers, 0 ms);" \
    "commits per run (whole database): $(awk -v a="$xact0" -v b="$xact1" -v n="$RUNS" 'BEGIN {printf "%.2f", (b - a) / n}');" \
    "WAL per run: $(awk -v w="$walbytes" -v n="$RUNS" 'BEGIN {printf "%.0f", w / n}') bytes"
echo "CPU of the job workers and the launcher: $(awk -v a="$ticks0" -v b="$ticks1" -v hz="$(getconf CLK_TCK)" -v n="$RUNS" 'BEGIN {printf "%.0f", (b - a) * 1e6 / hz / n}') us per run"
echo "job workers' wait events seen every 0.1 s: $(sort "$WAITS" | uniq -c | sort -rn | awk '{printf "%s %s, ", $2, $1}')"
echo
echo "statements by total time (per run: calls and ms)"
$PSQL -P pager=off <<SQL
SELECT round((calls::numeric / $RUNS), 2) AS calls_per_run,
       round((total_exec_time / $RUNS)::numeric, 4) AS ms_per_run,
       round((100 * total_exec_time / sum(total_exec_time) OVER ())::numeric, 1) AS pct,
       left(regexp_replace(query, '\s+', ' ', 'g'), 110) AS query
  FROM pg_stat_statements WHERE toplevel
 ORDER BY total_exec_time DESC LIMIT 25;
SQL
if [ -n "$PERF" ]; then
    [ -z "${PERF_KEEP:-}" ] || cp "$PERF" "$PERF_KEEP"
    echo "job worker: hottest functions (self, then with callees)"
    perf report -i "$PERF" --no-children --sort dso,symbol -g none --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -30 || true
    echo
    perf report -i "$PERF" --children --sort symbol -g caller --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -70 || true
fi
