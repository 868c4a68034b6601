#!/usr/bin/env bash
# Benchmark: the queue's throughput with session-affine claiming off
# (adk.worker_affinity_delay = 0) and on (DELAY ms), in the same cluster,
# the two alternating within each round (the first of the pair alternates
# too), so that the shared machine's load falls on both alike.  Each run is
# one model call (bench_queue_apps).  Per round and setting, RUNS runs
# queued in one transaction for WORKERS job workers:
#   many  0 ms model latency, over 500 sessions (2 runs each);
#   few   0 ms, over FEW sessions (RUNS / FEW runs each: the case where a
#         session's next run is held for its last worker);
#   q500  500 ms model latency, over 500 sessions (adk.worker_concurrency
#         as configured, 64 by default).
# Printed per measurement: runs/s (runs / (last finish - submit commit)),
# how many workers ran jobs and the largest share one of them ran, and the
# cluster's commits per run (pg_stat_database, after its stats are flushed,
# less the script's own: the workers', the launcher's and autovacuum's).
# Then the medians per setting and the ratios on / off.
#
#   bash test/bench/affinity.sh [runs (1000)] [rounds (3)] [workers (4)] [few sessions (16)] [delay ms (150)]
#
# Run as a non-root user with the extension installed (as root the script
# re-runs itself as user adkci).  Starts its own cluster and model server.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
RUNS=${1:-1000}
ROUNDS=${2:-3}
WORKERS=${3:-4}
FEW=${4:-16}
DELAY=${5:-150}
MANY=500
bench_queue_cluster "adk.worker_idle_timeout = '10min'"
bench_model_server
bench_queue_apps 500
bench_set_workers "$WORKERS"
concurrency=$($PSQL -Atc "SELECT current_setting('adk.worker_concurrency')")

set_delay() {  # ms
    $PSQL -c "ALTER SYSTEM SET adk.worker_affinity_delay = $1" -c "SELECT pg_reload_conf()" >/dev/null
    sleep 0.5
    [ "$($PSQL -Atc "SHOW adk.worker_affinity_delay")" = "${1}ms" ] || [ "$1" = 0 ] ||
        { echo "adk.worker_affinity_delay is not $1 ms" >&2; exit 1; }
}
commits() {
    $PSQL -Atc "SELECT pg_stat_force_next_flush()" >/dev/null
    sleep 1.1  # the workers' and the launcher's stats are flushed at most once a second
    $PSQL -Atc "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
}
# app tag sessions: RUNS runs queued in one transaction; prints
# "runs/s workers-that-ran-jobs largest-share commits-per-run"
queued() {
    local app=$1 tag=$2 sessions=$3 t0 left c0 c1 done bad t1 nw top polls=0
    $PSQL -c "TRUNCATE adk.jobs" >/dev/null
    c0=$(commits)
    t0=$($PSQL -At <<SQL
BEGIN;
SELECT count(adk_submit('$app', 'u', '$tag-s' || (i % $sessions), 'run ' || i)) FROM generate_series(1, $RUNS) i \\g /dev/null
SELECT extract(epoch FROM clock_timestamp());
COMMIT;
SQL
)
    for _ in $(seq 6000); do
        left=$($PSQL -Atc "SELECT count(*) FROM adk.jobs WHERE status IN ('queued', 'running')")
        polls=$((polls + 1))
        [ "$left" = 0 ] && break
        sleep 0.05
    done
    c1=$(commits)
    read -r done bad t1 nw top < <($PSQL -At -F ' ' -c "
        SELECT count(*) FILTER (WHERE status = 'completed'), count(*) FILTER (WHERE status <> 'completed'),
               extract(epoch FROM max(finished_at)), count(DISTINCT worker_pid),
               (SELECT max(c) FROM (SELECT count(*) c FROM adk.jobs GROUP BY worker_pid) w)
          FROM adk.jobs")
    [ "$bad" = 0 ] || { echo "$bad jobs did not complete:" >&2; $PSQL -c "SELECT status, error, count(*) FROM adk.jobs WHERE status <> 'completed' GROUP BY 1, 2" >&2; }
    awk -v n="$done" -v t0="$t0" -v t1="$t1" -v nw="$nw" -v top="$top" -v c0="$c0" -v c1="$c1" -v p="$polls" 'BEGIN {
        printf "%.1f %d %.2f %.2f\n", n / (t1 - t0), nw, top / n, (c1 - c0 - p - 3) / n }'
}

echo "(machine load before: $(cut -d' ' -f1-3 /proc/loadavg))"
echo "$RUNS single-call runs per figure; $WORKERS job workers, adk.worker_concurrency = $concurrency;" \
     "many: $MANY sessions, few: $FEW sessions; off: adk.worker_affinity_delay = 0, on: $DELAY ms"
printf '%5s %4s | %-28s | %-28s | %-28s\n' round set "many 0 ms: runs/s wk top c/r" "few 0 ms: runs/s wk top c/r" "many 500 ms: runs/s wk top c/r"
declare -A fig
for r in $(seq "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then order="off on"; else order="on off"; fi
    for s in $order; do
        if [ "$s" = on ]; then set_delay "$DELAY"; else set_delay 0; fi
        read -r m mw mt mc < <(queued bench_fast "r$r$s-many" "$MANY")
        read -r f fw ft fc < <(queued bench_fast "r$r$s-few" "$FEW")
        read -r l lw lt lc < <(queued bench "r$r$s-slow" "$MANY")
        printf '%5d %4s | %8s %3s %5s %6s     | %8s %3s %5s %6s     | %8s %3s %5s %6s\n' \
            "$r" "$s" "$m" "$mw" "$mt" "$mc" "$f" "$fw" "$ft" "$fc" "$l" "$lw" "$lt" "$lc"
        fig[$s-many]+="$m "; fig[$s-few]+="$f "; fig[$s-slow]+="$l "
        fig[$s-manyc]+="$mc "; fig[$s-fewc]+="$fc "; fig[$s-slowc]+="$lc "
    done
done
echo "medians of $ROUNDS rounds (runs/s; commits per run), and on / off:"
for k in many few slow; do
    # shellcheck disable=SC2086
    off=$(bench_median ${fig[off-$k]}); on=$(bench_median ${fig[on-$k]})
    # shellcheck disable=SC2086
    offc=$(bench_median ${fig[off-${k}c]}); onc=$(bench_median ${fig[on-${k}c]})
    awk -v k="$k" -v off="$off" -v on="$on" -v offc="$offc" -v onc="$onc" 'BEGIN {
        printf "%-5s off %8.1f  on %8.1f  on/off %5.2f | commits/run off %5.2f on %5.2f\n", k, off, on, on / off, offc, onc }'
done
echo "(machine load after: $(cut -d' ' -f1-3 /proc/loadavg))"
